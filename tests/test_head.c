/* test_head.c — the replacement LM head: made at load (fg_model_params.head_type) and written into a
 * copy of the file (fg_model_requant_head). Checks the head's bytes and logits against the reference
 * quantizer applied by hand, that both routes agree exactly, that requant-head keeps everything else
 * byte for byte, and the errors (bad types, I/O, cancel, out of memory) with no partial file left. */
#include "model/model.h"
#include "session/session.h"
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>

// ----------------------------------------------------------------------------------------------
// Helpers

static fg_model *load(const char *path, uint32_t head_type) {
  fg_model_params p;
  fg_model_params_init(&p);
  p.head_type = head_type;
  fg_model *m = NULL;
  fg_error err = {0};
  fg_status st = fg_model_load(path, &p, &m, &err);
  CHECK_MSG(st == FG_OK, "load %s head %u: %s (%s)", path, head_type, err.msg, fg_status_str(st));
  return m;
}

static const int32_t k_ids[] = {2, 17, 5, 33, 9, 41, 12};
#define N_IDS (sizeof k_ids / sizeof k_ids[0])

/* Session logits after k_ids (one thread: deterministic). out: (n_vocab) */
static void session_logits(const fg_model *m, float *out) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  sp.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  if (!s) return;
  CHECK_OK(fg_session_prefill(s, k_ids, N_IDS, NULL));
  const float *l = fg_session_logits(s);
  CHECK(l != NULL);
  if (l) memcpy(out, l, m->hp.n_vocab * sizeof(float));
  fg_session_free(s);
}

/* Final-normed hidden state after k_ids (the head's input). out: (n_embd) */
static void session_hidden(const fg_model *m, float *out) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  sp.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  if (!s) return;
  CHECK_OK(fg_session_append_hidden(s, k_ids, N_IDS, out));
  fg_session_free(s);
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

// ----------------------------------------------------------------------------------------------
// Load-time replacement: bytes, info, logits by hand

/* The replaced head's row r must be the reference quantizer applied to the dequantized source row. */
static void check_head_bytes(const fg_model *plain, const fg_model *rep, uint32_t type) {
  const uint32_t d = plain->hp.n_embd, nv = plain->hp.n_vocab;
  float *row = malloc(d * sizeof(float));
  uint8_t *q = malloc(rep->output.row_bytes);
  size_t bad = 0;
  for (uint32_t r = 0; r < nv && row && q; r++) {
    fg_dequantize_row(plain->output.type, (const uint8_t *)plain->output.data + (size_t)r * plain->output.row_bytes, row, d);
    fg_quantize_row(type, row, q, d);
    if (memcmp(q, (const uint8_t *)rep->output.data + (size_t)r * rep->output.row_bytes, rep->output.row_bytes) != 0)
      bad++;
  }
  CHECK_MSG(bad == 0, "%zu of %u head rows differ from the reference quantizer (%s)", bad, nv, fg_type_name(type));
  free(row);
  free(q);
}

static void test_load_replacement(const char *path, uint32_t src_type, uint32_t type) {
  fg_model *plain = load(path, FG_MODEL_HEAD_AS_FILE);
  fg_model *rep = load(path, type);
  if (!plain || !rep) goto out;
  fg_model_info pi, ri;
  fg_model_get_info(plain, &pi);
  fg_model_get_info(rep, &ri);
  const uint32_t d = pi.n_embd, nv = pi.n_vocab;
  uint64_t src_rb, rb;
  CHECK(fg_type_row_bytes(src_type, d, &src_rb) && fg_type_row_bytes(type, d, &rb));
  CHECK(pi.tied_head);
  CHECK_EQ_INT(pi.head_type, src_type);
  CHECK_EQ_INT(pi.head_copy_bytes, 0);
  CHECK(!ri.tied_head);
  CHECK_EQ_INT(ri.head_type, type);
  CHECK_EQ_INT(ri.head_copy_bytes, (uint64_t)nv * rb);
  CHECK(ri.head_copy_ms >= 0.0);
  CHECK_EQ_INT(pi.decode_bytes - ri.decode_bytes, (uint64_t)nv * (src_rb - rb));
  CHECK(memcmp(pi.fingerprint, ri.fingerprint, 16) != 0);
  /* the embedding lookup still reads token_embd */
  CHECK(rep->tok_embd.type == src_type && rep->tok_embd.data != rep->output.data &&
        memcmp(rep->tok_embd.data, plain->tok_embd.data, (size_t)nv * src_rb) == 0);
  CHECK(rep->output.data == rep->head_copy && rep->output.type == type && rep->output.row_bytes == rb);
  CHECK((uintptr_t)rep->head_copy % 64 == 0);
  check_head_bytes(plain, rep, type);

  /* logits: the session with the replaced head against the hand-made head times the hidden state */
  float *h = calloc(d, sizeof(float)), *lr = calloc(nv, sizeof(float)), *lp = calloc(nv, sizeof(float));
  float *row = calloc(d, sizeof(float));
  uint8_t *qrow = malloc(rb);
  if (!h || !lr || !lp || !row || !qrow) goto out2;
  session_hidden(plain, h);
  session_logits(rep, lr);
  session_logits(plain, lp);
  const uint32_t rows[] = {0, 1, 2, nv / 3, nv / 2, nv - 2, nv - 1, (uint32_t)k_ids[3]};
  size_t n_differ = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const uint32_t r = rows[i];
    fg_dequantize_row(src_type, (const uint8_t *)plain->tok_embd.data + (size_t)r * plain->tok_embd.row_bytes, row, d);
    fg_quantize_row(type, row, qrow, d);
    fg_dequantize_row(type, qrow, row, d);
    double dot = 0.0, mag = 0.0;
    for (uint32_t j = 0; j < d; j++) {
      dot += (double)row[j] * h[j];
      mag += fabs((double)row[j] * h[j]);
    }
    /* the kernel may quantize the activations to 8 bits: allow 1% of the magnitude of the terms */
    CHECK_NEAR(lr[r], dot, 0.01 * mag + 1e-5);
    if (lr[r] != lp[r]) n_differ++;
  }
  CHECK_MSG(n_differ > 0, "the replaced head gives the same logits as the file's head at every checked row");
out2:
  free(h);
  free(lr);
  free(lp);
  free(row);
  free(qrow);
out:
  fg_model_free(plain);
  fg_model_free(rep);
}

/* 0 and FG_MODEL_HEAD_AS_FILE keep the file's head; a head of the asked type is used as it is. */
static void test_as_file(const char *f32_path, const char *q8_path) {
  fg_model *m = load(f32_path, 0);
  if (m) {
    CHECK(m->tied_head && !m->head_copy && m->output.data == m->tok_embd.data);
    fg_model_free(m);
  }
  fg_model_params zero = {0};
  m = NULL;
  CHECK_OK(fg_model_load(f32_path, &zero, &m, NULL));
  if (m) CHECK(m->tied_head && !m->head_copy);
  fg_model_free(m);
  m = load(q8_path, FG_TYPE_Q8_0);
  if (m) {
    fg_model_info in;
    fg_model_get_info(m, &in);
    CHECK(m->tied_head && !m->head_copy && in.head_copy_bytes == 0 && in.head_type == FG_TYPE_Q8_0);
    fg_model_free(m);
  }
}

static void test_load_errors(const char *path) {
  const uint32_t bad[] = {FG_TYPE_F16, FG_TYPE_BF16, 3, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fg_model_params p;
    fg_model_params_init(&p);
    p.head_type = bad[i];
    fg_model *m = (fg_model *)&p; /* must be reset to NULL */
    fg_error err = {0};
    CHECK_EQ_INT(fg_model_load(path, &p, &m, &err), FG_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    CHECK_MSG(strstr(err.msg, "q8_0") != NULL, "message: %s", err.msg);
  }
  /* every allocation failure is reported as NOMEM and frees everything (ASan checks the leaks) */
  int n_nomem = 0;
  for (uint64_t k = 1; k < 400; k++) {
    fg_model_params p;
    fg_model_params_init(&p);
    p.head_type = FG_TYPE_Q4_0;
    fg_model *m = NULL;
    fg_alloc_fail_after(k);
    fg_status st = fg_model_load(path, &p, &m, NULL);
    fg_alloc_fail_after(0);
    if (st == FG_OK) {
      CHECK(m && m->head_copy);
      fg_model_free(m);
      break;
    }
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu failed: %s", (unsigned long long)k, fg_status_str(st));
    CHECK(m == NULL);
    n_nomem++;
  }
  CHECK(n_nomem > 2);
}

// ----------------------------------------------------------------------------------------------
// requant-head

static bool kv_equal(const fg_gguf_kv *a, const fg_gguf_kv *b) {
  if (a->key.len != b->key.len || memcmp(a->key.ptr, b->key.ptr, a->key.len) != 0 || a->type != b->type) return false;
  switch (a->type) {
    case FG_GGUF_STRING: return a->str.len == b->str.len && memcmp(a->str.ptr, b->str.ptr, a->str.len) == 0;
    case FG_GGUF_ARRAY: {
      if (a->arr_type != b->arr_type || a->arr_n != b->arr_n) return false;
      if (a->arr_type != FG_GGUF_STRING) {
        static const size_t es[FG_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        return memcmp(a->arr_data, b->arr_data, (size_t)a->arr_n * es[a->arr_type]) == 0;
      }
      fg_gguf_str *sa = NULL, *sb = NULL;
      bool eq = fg_gguf_str_array(a, &sa, NULL) == FG_OK && fg_gguf_str_array(b, &sb, NULL) == FG_OK;
      for (uint64_t i = 0; eq && i < a->arr_n; i++)
        eq = sa[i].len == sb[i].len && memcmp(sa[i].ptr, sb[i].ptr, sa[i].len) == 0;
      fg_free(sa);
      fg_free(sb);
      return eq;
    }
    case FG_GGUF_FLOAT32: case FG_GGUF_FLOAT64: return memcmp(&a->v.f64, &b->v.f64, sizeof a->v.f64) == 0;
    case FG_GGUF_BOOL: return a->v.b == b->v.b;
    default: return a->v.u64 == b->v.u64;
  }
}

/* out = in with output.weight of type: everything else equal, in order, byte for byte. */
static void check_copy(const fg_model *in, const fg_model *out, uint32_t type) {
  const fg_gguf *a = &in->gguf, *b = &out->gguf;
  CHECK_EQ_INT(b->alignment, a->alignment);
  CHECK_EQ_INT(b->n_kv, a->n_kv);
  for (size_t i = 0; i < a->n_kv && i < b->n_kv; i++)
    CHECK_MSG(kv_equal(&a->kv[i], &b->kv[i]), "metadata #%zu '%.*s' differs", i, (int)a->kv[i].key.len, a->kv[i].key.ptr);
  const bool had_out = fg_gguf_find_tensor(a, "output.weight") != NULL;
  CHECK_EQ_INT(b->n_tensors, a->n_tensors + (had_out ? 0 : 1));
  for (size_t i = 0; i < a->n_tensors && i < b->n_tensors; i++) {
    const fg_gguf_tensor *ta = &a->tensors[i], *tb = &b->tensors[i];
    CHECK(ta->name.len == tb->name.len && memcmp(ta->name.ptr, tb->name.ptr, ta->name.len) == 0);
    CHECK(ta->n_dims == tb->n_dims && memcmp(ta->ne, tb->ne, sizeof ta->ne) == 0);
    CHECK(tb->offset % b->alignment == 0);
    if (fg_gguf_str_eq(ta->name, "output.weight")) continue;
    CHECK_MSG(ta->type == tb->type && ta->nbytes == tb->nbytes && memcmp(ta->data, tb->data, (size_t)ta->nbytes) == 0,
              "tensor '%.*s' differs", (int)ta->name.len, ta->name.ptr);
  }
  const fg_gguf_tensor *o = fg_gguf_find_tensor(b, "output.weight");
  CHECK(o != NULL);
  if (o) {
    CHECK_EQ_INT(o->type, type);
    CHECK(o->n_dims == 2 && o->ne[0] == in->hp.n_embd && o->ne[1] == in->hp.n_vocab);
  }
  CHECK(!out->tied_head && out->output.type == type);
}

typedef struct cancel_ctx { uint64_t calls, stop_after; } cancel_ctx;
static bool cancel_cb(uint64_t done, uint64_t total, void *ud) {
  cancel_ctx *c = ud;
  CHECK(done <= total);
  return ++c->calls < c->stop_after;
}

static void test_requant(const char *path, const char *out1, const char *out2) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", out1);
  remove(out1);
  remove(out2);
  cancel_ctx cc = {0, UINT64_MAX};
  fg_error err = {0};
  CHECK_OK(fg_model_requant_head(path, out1, FG_TYPE_Q8_0, cancel_cb, &cc, &err));
  CHECK(cc.calls >= 1);
  CHECK(file_exists(out1) && !file_exists(tmp));
  fg_model *in = load(path, FG_MODEL_HEAD_AS_FILE), *rep = load(path, FG_TYPE_Q8_0), *out = load(out1, FG_MODEL_HEAD_AS_FILE);
  if (in && rep && out) {
    check_copy(in, out, FG_TYPE_Q8_0);
    /* the file's head is the load-time head, byte for byte, and so are the logits */
    const fg_gguf_tensor *o = fg_gguf_find_tensor(&out->gguf, "output.weight");
    CHECK(o && o->nbytes == rep->info.head_copy_bytes && memcmp(o->data, rep->head_copy, (size_t)o->nbytes) == 0);
    float *la = calloc(in->hp.n_vocab, sizeof(float)), *lb = calloc(in->hp.n_vocab, sizeof(float));
    if (la && lb) {
      session_logits(rep, la);
      session_logits(out, lb);
      CHECK(memcmp(la, lb, in->hp.n_vocab * sizeof(float)) == 0);
    }
    free(la);
    free(lb);
  }
  /* a file that already has output.weight: re-quantized in place, no second tensor */
  CHECK_OK(fg_model_requant_head(out1, out2, FG_TYPE_Q4_0, NULL, NULL, &err));
  fg_model *out_2 = load(out2, FG_MODEL_HEAD_AS_FILE);
  if (out && out_2) check_copy(out, out_2, FG_TYPE_Q4_0);
  /* load-time replacement of an untied head works too and re-quantizes output.weight */
  fg_model *rep2 = load(out1, FG_TYPE_Q4_0);
  if (rep2 && out) check_head_bytes(out, rep2, FG_TYPE_Q4_0);
  fg_model_free(rep2);
  fg_model_free(out_2);
  fg_model_free(in);
  fg_model_free(rep);
  fg_model_free(out);
}

static void test_requant_errors(const char *path, const char *out1) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", out1);
  remove(out1);
  fg_error err = {0};
  CHECK_EQ_INT(fg_model_requant_head(path, out1, FG_TYPE_F16, NULL, NULL, &err), FG_ERR_UNSUPPORTED);
  CHECK(strstr(err.msg, "q4_0") != NULL);
  CHECK_EQ_INT(fg_model_requant_head(path, NULL, FG_TYPE_Q8_0, NULL, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_model_requant_head(NULL, out1, FG_TYPE_Q8_0, NULL, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_model_requant_head("/nonexistent/dir/in.gguf", out1, FG_TYPE_Q8_0, NULL, NULL, &err), FG_ERR_IO);
  CHECK(!file_exists(out1) && !file_exists(tmp));
  err.code = FG_OK;
  CHECK_EQ_INT(fg_model_requant_head(path, "/nonexistent/dir/out.gguf", FG_TYPE_Q8_0, NULL, NULL, &err), FG_ERR_IO);
  CHECK_MSG(strstr(err.msg, "/nonexistent/dir/out.gguf.tmp") != NULL, "message: %s", err.msg);
  /* cancelled by the progress callback: no output, no temporary file */
  cancel_ctx cc = {0, 1};
  CHECK_EQ_INT(fg_model_requant_head(path, out1, FG_TYPE_Q4_0, cancel_cb, &cc, &err), FG_ERR_ABORTED);
  CHECK(!file_exists(out1) && !file_exists(tmp));
  /* a file that is not a model */
  FILE *f = fopen(tmp, "wb");
  if (f) {
    fputs("not a gguf", f);
    fclose(f);
  }
  CHECK(fg_model_requant_head(tmp, out1, FG_TYPE_Q8_0, NULL, NULL, &err) == FG_ERR_FORMAT);
  CHECK(!file_exists(out1));
  remove(tmp);
  /* allocation failures: NOMEM, nothing left behind */
  int n_nomem = 0;
  for (uint64_t k = 1; k < 600; k++) {
    fg_alloc_fail_after(k);
    fg_status st = fg_model_requant_head(path, out1, FG_TYPE_Q4_0, NULL, NULL, NULL);
    fg_alloc_fail_after(0);
    if (st == FG_OK) break;
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu: %s", (unsigned long long)k, fg_status_str(st));
    CHECK(!file_exists(out1) && !file_exists(tmp));
    n_nomem++;
  }
  CHECK(n_nomem > 5 && file_exists(out1));
  remove(out1);
}

// ----------------------------------------------------------------------------------------------

int main(void) {
  if (fg_test_ensure_model("head-tiny-f32.gguf", "tiny", "f32", 7) != 0) return 1;
  if (fg_test_ensure_model("head-tiny-q8_0.gguf", "tiny", "q8_0", 7) != 0) return 1;
  if (fg_test_ensure_model("head-tiny-bf16.gguf", "tiny", "bf16", 7) != 0) return 1;
  char f32[4096], q8[4096], bf16[4096], out1[4096], out2[4096];
  snprintf(f32, sizeof f32, "%s", fg_test_model_path("head-tiny-f32.gguf"));
  snprintf(q8, sizeof q8, "%s", fg_test_model_path("head-tiny-q8_0.gguf"));
  snprintf(bf16, sizeof bf16, "%s", fg_test_model_path("head-tiny-bf16.gguf"));
  snprintf(out1, sizeof out1, "%s.%d.head1.gguf", fg_test_model_path("test-head"), (int)getpid());
  snprintf(out2, sizeof out2, "%s.%d.head2.gguf", fg_test_model_path("test-head"), (int)getpid());

  test_load_replacement(f32, FG_TYPE_F32, FG_TYPE_Q8_0);
  test_load_replacement(f32, FG_TYPE_F32, FG_TYPE_Q4_0);
  test_load_replacement(bf16, FG_TYPE_BF16, FG_TYPE_Q8_0);
  test_load_replacement(q8, FG_TYPE_Q8_0, FG_TYPE_Q4_0);
  test_as_file(f32, q8);
  test_load_errors(f32);
  test_requant(f32, out1, out2);
  test_requant(bf16, out1, out2);
  test_requant_errors(q8, out1);
  remove(out1);
  remove(out2);
  return fg_test_finish("test_head");
}
