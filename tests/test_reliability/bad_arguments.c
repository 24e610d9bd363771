/* bad_arguments.c — test_reliability, section 2: NULL and out-of-range arguments at every entry point. */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 2. NULL and out-of-range arguments at every public entry point

static void log_sink(fg_log_level level, const char *msg, void *ud) {
  (void)level;
  (void)msg;
  (*(int *)ud)++;
}

void test_bad_arguments(void) {
  printf("2. NULL / out-of-range arguments\n");
  /* version, status, types */
  CHECK_EQ_INT(fg_version_number(), FG_VERSION_NUMBER);
  CHECK(fg_version_string() != NULL);
  CHECK(fg_status_str((fg_status)999) != NULL && fg_status_str((fg_status)-1) != NULL);
  for (int s = 0; s <= 10; s++) CHECK(strcmp(fg_status_str((fg_status)s), "unknown status") != 0);
  CHECK(strcmp(fg_type_name(12345), "?") == 0);
  CHECK(strcmp(fg_type_name(0xffffffffu), "?") == 0);
  int logs = 0;
  fg_set_log_callback(log_sink, &logs);
  fg_model_params_init(NULL);
  fg_session_params_init(NULL);
  fg_nlu_params_init(NULL);
  fg_gen_params_init(NULL);

  /* model */
  fg_error err;
  fg_model *m = (fg_model *)&err;
  CHECK_EQ_INT(fg_model_load(NULL, NULL, &m, &err), FG_ERR_INVALID_ARG);
  CHECK(m == NULL && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  m = (fg_model *)&err;
  CHECK_EQ_INT(fg_model_load("/nonexistent/x.gguf", NULL, &m, NULL), FG_ERR_IO);
  CHECK(m == NULL);
  CHECK_EQ_INT(fg_model_load("/", NULL, &m, &err), FG_ERR_IO);
  CHECK_EQ_INT(fg_model_load("/dev/null", NULL, &m, &err), FG_ERR_IO); /* not a regular file */
  {
    const char *p = scratch_path("empty.gguf");
    FILE *f = fopen(p, "wb");
    fclose(f);
    CHECK_EQ_INT(fg_model_load(p, NULL, &m, &err), FG_ERR_FORMAT);
    f = fopen(p, "wb");
    fputs("this is not a GGUF file", f);
    fclose(f);
    CHECK_EQ_INT(fg_model_load(p, NULL, &m, &err), FG_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, p) != NULL, "the message names the file: %s", err.msg);
    remove(p);
  }
  CHECK(m == NULL);
  fg_model_free(NULL);
  fg_model_info info;
  CHECK_EQ_INT(fg_model_get_info(NULL, &info), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_model_get_info(g_model, NULL), FG_ERR_INVALID_ARG);

  /* tokenizer */
  int32_t ids[16];
  size_t n = 99;
  char buf[64];
  CHECK_EQ_INT(fg_tokenize(NULL, "a", 1, 0, ids, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, NULL, 5, 0, ids, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, "abc", 3, 0, ids, 16, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, "abc", 3, 0, NULL, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_OK(fg_tokenize(g_model, NULL, 0, 0, NULL, 0, &n));
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(fg_tokenize(g_model, k_text, sizeof k_text - 1, 0, ids, 2, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 2);
  CHECK_EQ_INT(fg_tokenize(g_model, k_text, sizeof k_text - 1, 0xffffffffu, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  const int32_t bad_ids[3] = {5, -1, (int32_t)g_vocab};
  CHECK_EQ_INT(fg_detokenize(NULL, bad_ids, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, NULL, 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids, 1, NULL, 5, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids, 1, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids + 1, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids + 2, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  const int32_t bos = 2;
  CHECK_EQ_INT(fg_detokenize(g_model, &bos, 1, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(n, 5); /* "<bos>" */
  int32_t id = -3;
  CHECK_EQ_INT(fg_token_lookup(NULL, "<bos>", &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, NULL, &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, "<bos>", NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, "no such piece at all", &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(id, -3);
  CHECK_OK(fg_token_lookup(g_model, "<bos>", &id));
  CHECK_EQ_INT(id, 2);

  /* session create: bad models, outs and params */
  fg_session *s = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_create(NULL, NULL, &s, NULL), FG_ERR_INVALID_ARG);
  CHECK(s == NULL);
  CHECK_EQ_INT(fg_session_create(g_model, NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  const struct { uint32_t n_ctx, n_threads, n_batch, kv_type; fg_status want; } bad_params[] = {
      {2049, 1, 8, 0, FG_ERR_INVALID_ARG},      {0xffffffffu, 1, 8, 0, FG_ERR_INVALID_ARG},
      {64, 257, 8, 0, FG_ERR_INVALID_ARG},      {64, 0xffffffffu, 8, 0, FG_ERR_INVALID_ARG},
      {64, 1, 4097, 0, FG_ERR_INVALID_ARG},     {64, 1, 0xffffffffu, 0, FG_ERR_INVALID_ARG},
      {64, 1, 8, 2, FG_ERR_UNSUPPORTED},        {64, 1, 8, 77, FG_ERR_UNSUPPORTED},
  };
  for (size_t i = 0; i < sizeof bad_params / sizeof bad_params[0]; i++) {
    fg_session_params p = small_params(bad_params[i].n_batch, bad_params[i].n_threads, bad_params[i].n_ctx);
    p.kv_type = bad_params[i].kv_type;
    s = (fg_session *)&err;
    fg_status st = fg_session_create(g_model, &p, &s, NULL);
    CHECK_MSG(st == bad_params[i].want && s == NULL, "params #%zu: %s", i, fg_status_str(st));
    char what[128];
    snprintf(what, sizeof what, "create with n_ctx %u, n_threads %u, n_batch %u, kv_type %u", bad_params[i].n_ctx,
             bad_params[i].n_threads, bad_params[i].n_batch, bad_params[i].kv_type);
    table_row("session API", what, st, "out = NULL; message only through the log callback");
  }
  CHECK(logs > 0); /* failed creates explain themselves through the log callback */
  fg_set_log_callback(NULL, NULL);

  /* a session: appends */
  fg_session_params p = small_params(4, 1, 16);
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK(fg_session_logits(s) == NULL);
  CHECK(fg_session_model(s) == g_model);
  int32_t next = -9;
  random_ids(ids, 16);
  CHECK_EQ_INT(fg_session_prefill(NULL, ids, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, NULL, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, ids, 0, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "prefill of 0 tokens", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_prefill(s, ids, 17, &next), FG_ERR_CONTEXT_FULL);
  CHECK_EQ_INT(fg_session_prefill(s, ids, SIZE_MAX, &next), FG_ERR_CONTEXT_FULL);
  table_row("session API", "prefill of SIZE_MAX tokens (n_ctx 16)", FG_ERR_CONTEXT_FULL, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_step(NULL, 5, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_step(s, -1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_step(s, (int32_t)g_vocab, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "token id = n_vocab", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_step(s, INT32_MIN, &next), FG_ERR_INVALID_ARG);
  CHECK(strstr(fg_session_errmsg(s), "vocabulary") != NULL);
  CHECK_EQ_INT(fg_session_prefill_embeddings(NULL, NULL, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, NULL, 1, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "embeddings NULL", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  float rows[2 * 64];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) rows[i] = (float)(i % 7) - 3.0f;
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, rows, 0, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, rows, SIZE_MAX / 2, &next), FG_ERR_CONTEXT_FULL);
  CHECK_EQ_INT(next, -9);
  CHECK_EQ_INT(fg_session_position(s), 0);
  CHECK(fg_session_logits(s) == NULL);
  /* non-finite embeddings are the caller's data: computed, never a crash */
  rows[3] = NAN;
  rows[70] = INFINITY;
  CHECK_OK(fg_session_prefill_embeddings(s, rows, 2, &next));
  table_row("session API", "NaN/Inf in embedding rows", FG_OK, "computed (the caller's data); no crash");
  CHECK(next >= 0 && (uint32_t)next < g_vocab);
  CHECK_OK(fg_session_prefill(s, ids, 14, &next));
  CHECK_EQ_INT(fg_session_step(s, 5, &next), FG_ERR_CONTEXT_FULL); /* 16 of 16 used */
  CHECK(strstr(fg_session_errmsg(s), "fit") != NULL);

  /* snapshots, forks, restore */
  fg_snapshot *snap = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_session_snapshot(NULL, &snap), FG_ERR_INVALID_ARG);
  CHECK(snap == NULL);
  CHECK_EQ_INT(fg_session_snapshot(s, NULL), FG_ERR_INVALID_ARG);
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_EQ_INT(fg_snapshot_position(snap), 16);
  CHECK_EQ_INT(fg_snapshot_position(NULL), 0);
  fg_session *f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(NULL, NULL, &f, NULL), FG_ERR_INVALID_ARG);
  CHECK(f == NULL);
  CHECK_EQ_INT(fg_session_fork(snap, NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  fg_session_params small = small_params(4, 1, 8); /* smaller than the snapshot */
  f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(snap, &small, &f, NULL), FG_ERR_CONTEXT_FULL);
  table_row("session API", "fork of a 16-token snapshot with n_ctx 8", FG_ERR_CONTEXT_FULL, "out = NULL");
  CHECK(f == NULL);
  fg_session_params huge = small_params(4, 1, 100000);
  f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(snap, &huge, &f, NULL), FG_ERR_INVALID_ARG);
  CHECK(f == NULL);
  CHECK_EQ_INT(fg_session_restore(NULL, snap), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_restore(s, NULL), FG_ERR_INVALID_ARG);
  fg_session *s8 = NULL;
  CHECK_OK(fg_session_create(g_model, &small, &s8, NULL));
  CHECK_EQ_INT(fg_session_restore(s8, snap), FG_ERR_CONTEXT_FULL);
  table_row("session API", "restore a 16-token snapshot into n_ctx 8", FG_ERR_CONTEXT_FULL, fg_session_errmsg(s8));
  CHECK_EQ_INT(fg_session_position(s8), 0);
  fg_session_free(s8);
  fg_session_stats stats;
  CHECK_EQ_INT(fg_session_get_stats(NULL, &stats), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_get_stats(s, NULL), FG_ERR_INVALID_ARG);
  CHECK(fg_session_logits(NULL) == NULL);
  CHECK_EQ_INT(fg_session_position(NULL), 0);
  CHECK(fg_session_model(NULL) == NULL);
  CHECK(fg_session_errmsg(NULL) != NULL);

  /* snapshot files */
  CHECK_EQ_INT(fg_snapshot_save(NULL, scratch_path("x.fgsnap"), &err), FG_ERR_INVALID_ARG);
  CHECK(err.code == FG_ERR_INVALID_ARG && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_snapshot_save(snap, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_save(snap, "/nonexistent/dir/x.fgsnap", &err), FG_ERR_IO);
  CHECK(err.code == FG_ERR_IO && strstr(err.msg, "/nonexistent/dir") != NULL);
  CHECK_EQ_INT(fg_snapshot_save(snap, "/nonexistent/dir/x.fgsnap", NULL), FG_ERR_IO);
  char longpath[5000];
  memset(longpath, 'a', sizeof longpath - 1);
  longpath[sizeof longpath - 1] = '\0';
  CHECK_EQ_INT(fg_snapshot_save(snap, longpath, NULL), FG_ERR_INVALID_ARG);
  { /* a save failing at its last step (the path is a directory) names it and leaves no temporary file */
    const char *dir = scratch_path("dir.fgsnap");
    CHECK(mkdir(dir, 0755) == 0);
    CHECK_EQ_INT(fg_snapshot_save(snap, dir, &err), FG_ERR_IO);
    CHECK(err.code == FG_ERR_IO && strstr(err.msg, "rename to") != NULL && strstr(err.msg, dir) != NULL);
    char pattern[700];
    snprintf(pattern, sizeof pattern, "%s.tmp.*", dir);
    glob_t g;
    CHECK_EQ_INT(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
    globfree(&g);
    rmdir(dir);
  }
  fg_snapshot *ls = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_snapshot_load(NULL, ref.snap20_path, &ls, NULL), FG_ERR_INVALID_ARG);
  CHECK(ls == NULL);
  CHECK_EQ_INT(fg_snapshot_load(g_model, NULL, &ls, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_load(g_model, ref.snap20_path, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/nonexistent/x.fgsnap", &ls, NULL), FG_ERR_IO);
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/", &ls, NULL), FG_ERR_IO); /* a directory */
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/dev/null", &ls, NULL), FG_ERR_FORMAT);
  CHECK(ls == NULL);
  ls = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/dev/null", &ls, &err), FG_ERR_FORMAT);
  CHECK(ls == NULL && err.code == FG_ERR_FORMAT && strstr(err.msg, "/dev/null") != NULL);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_session_free(NULL);
  fg_snapshot_free(NULL);

  /* catalogs, rendering, call text */
  fg_catalog *c = (fg_catalog *)&err;
  CHECK_EQ_INT(fg_catalog_parse(NULL, 5, &c, &err), FG_ERR_INVALID_ARG);
  CHECK(c == NULL);
  CHECK_EQ_INT(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_parse(NULL, 0, &c, &err), FG_ERR_FORMAT);
  CHECK_EQ_INT(fg_catalog_parse(k_catalog, sizeof k_catalog - 2, &c, NULL), FG_ERR_FORMAT); /* cut short */
  CHECK_EQ_INT(fg_catalog_parse("[]", 2, &c, &err), FG_ERR_FORMAT);
  CHECK(c == NULL && err.msg[0] != '\0');
  fg_catalog_free(NULL);
  CHECK_EQ_INT(fg_catalog_n_functions(NULL), 0);
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  CHECK_EQ_INT(fg_catalog_render_prefix(NULL, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK(n > sizeof buf);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, buf, sizeof buf, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(fg_render_utterance(NULL, 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("hi", 2, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance(" \t\n", 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("a<end_of_turn>b", 15, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("hi", 2, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(fg_call_parse(c, NULL, 4, buf, sizeof buf, &n, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_call_parse(c, "x", 1, buf, sizeof buf, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_call_parse(NULL, NULL, 0, buf, sizeof buf, &n, NULL), FG_OK);
  CHECK_EQ_INT(fg_call_parse(c, k_generated, sizeof k_generated - 1, NULL, 0, &n, NULL), FG_ERR_BUFFER_TOO_SMALL);

  /* NLU engine */
  fg_nlu *e = (fg_nlu *)&err;
  fg_nlu_params np = nlu_params(NULL);
  CHECK_EQ_INT(fg_nlu_create(NULL, c, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK(e == NULL && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_nlu_create(g_model, NULL, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, NULL, &err), FG_ERR_INVALID_ARG);
  np.session.n_ctx = 16; /* the catalog prefix does not fit */
  e = (fg_nlu *)&err;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_CONTEXT_FULL);
  CHECK(e == NULL && err.msg[0] != '\0');
  table_row("NLU", "catalog prefix longer than n_ctx 16", FG_ERR_CONTEXT_FULL, err.msg);
  np.session.n_threads = 100000;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK(e == NULL && err.msg[0] != '\0');
  np = nlu_params(NULL);
  CHECK_OK(fg_nlu_create(g_model, c, &np, &e, &err));
  fg_nlu_info ni;
  CHECK_OK(fg_nlu_get_info(e, &ni));
  fg_nlu_result r;
  CHECK_EQ_INT(fg_nlu_ask(NULL, "hi", 2, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, NULL, 2, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "hi", 2, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "", 0, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "<start_function_call>call:x{}", 29, &r), FG_ERR_INVALID_ARG);
  CHECK(fg_nlu_errmsg(e)[0] != '\0');
  table_row("NLU", "utterance with control-token text", FG_ERR_INVALID_ARG, fg_nlu_errmsg(e));
  {
    /* an utterance longer than the context is refused, not truncated */
    const size_t big = 4000;
    char *u = malloc(big);
    for (size_t i = 0; i < big; i++) u[i] = (char)('a' + (i * 7) % 26);
    CHECK_EQ_INT(fg_nlu_ask(e, u, big, &r), FG_ERR_CONTEXT_FULL);
    table_row("NLU", "4000-byte utterance, n_ctx 1024", FG_ERR_CONTEXT_FULL, fg_nlu_errmsg(e));
    free(u);
  }
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r)); /* and it still answers */
  CHECK(strcmp(r.json, ref.ask_ref) == 0);
  CHECK_EQ_INT(fg_nlu_get_info(NULL, &ni), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_get_info(e, NULL), FG_ERR_INVALID_ARG);
  CHECK(fg_nlu_errmsg(NULL) != NULL);
  CHECK(fg_nlu_snapshot(NULL) == NULL);
  CHECK(fg_nlu_snapshot(e) != NULL);
  fg_nlu_free(e);
  fg_nlu_free(NULL);
  fg_catalog_free(c);

  /* experimental entry points */
  CHECK_EQ_INT(fg_gen_model(NULL, NULL, &err), FG_ERR_INVALID_ARG);
  fg_gen_params gp;
  fg_gen_params_init(&gp);
  CHECK_EQ_INT(fg_gen_model(&gp, NULL, &err), FG_ERR_INVALID_ARG);
  gp.preset = "no-such-preset";
  CHECK_EQ_INT(fg_gen_model(&gp, scratch_path("gen.gguf"), &err), FG_ERR_INVALID_ARG);
  gp.preset = "tiny";
  gp.type = 77;
  CHECK(fg_gen_model(&gp, scratch_path("gen.gguf"), &err) != FG_OK);
  remove(scratch_path("gen.gguf"));
  float lg[512];
  const size_t at0 = 0, at9 = 9;
  CHECK_EQ_INT(fg_reference_logits(NULL, ids, 1, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, NULL, 1, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, ids, 1, &at0, 1, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, ids, 2, &at9, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, bad_ids, 3, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  int32_t gen_out[4];
  CHECK_EQ_INT(fg_reference_generate(NULL, ids, 1, 4, gen_out, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_generate(g_model, ids, 1, 4, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_generate(g_model, bad_ids, 2, 4, gen_out, &err), FG_ERR_INVALID_ARG);
}
