/* fuzz_tokenizer.c — libFuzzer entry point for the tokenizer (src/tokenizer/).
 *
 * The first input byte picks the flags (ADD_BOS, NO_SPECIAL), the rest is the text. Each input is
 * encoded (size query with cap 0, then for real, then once more with a too-small buffer) and decoded;
 * the input is also read as token ids for a decode. Checked: the size query and the real call agree, a
 * short buffer gives BUFFER_TOO_SMALL with the same count and the same first ids, every id is valid,
 * and with the built-in vocabulary decode(encode(text)) == text (unless the text holds a literal
 * "▁", which decodes to ' ' by design).
 *
 * Vocabulary: FG_FUZZ_MODEL=path.gguf loads a model's vocabulary (e.g. build/models/tiny-vocab-f32.gguf;
 * the round trip is then checked only with FG_FUZZ_ROUNDTRIP=1); otherwise a small built-in one with
 * byte tokens, ASCII, multi-byte characters, merges with tied scores, control and overlapping
 * user-defined pieces.
 *
 * Build (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Isrc -Iinclude \
 *     tests/fuzz/fuzz_tokenizer.c src/tokenizer/vocab.c src/tokenizer/spm.c src/gguf/gguf.c \
 *     src/gguf/mapfile_posix.c src/core/alloc.c src/core/status.c src/core/sys.c src/tensor/quant_ref.c \
 *     src/tensor/quant_blocks.c src/tensor/half.c -lm -o fuzz_tokenizer
 *   ./fuzz_tokenizer -max_total_time=300 tests/fuzz/corpus/tokenizer */
#include "tokenizer/tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                  \
  do {                                                                                 \
    if (!(x)) {                                                                        \
      fprintf(stderr, "fuzz_tokenizer: invariant failed: %s (line %d)\n", #x, __LINE__); \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

static fg_vocab *g_vocab;
static bool g_roundtrip;

// ----------------------------------------------------------------------------------------------
// Vocabulary

static fg_vocab *builtin_vocab(void) {
  enum { MAX = 600 };
  static char store[MAX][16];
  fg_gguf_str pieces[MAX];
  float scores[MAX];
  int32_t types[MAX];
  uint32_t n = 0;
#define ADD(text, type, score)                                                    \
  do {                                                                            \
    snprintf(store[n], sizeof store[n], "%s", text);                              \
    pieces[n].ptr = store[n];                                                     \
    pieces[n].len = strlen(store[n]);                                             \
    types[n] = (type);                                                            \
    scores[n] = (score);                                                          \
    n++;                                                                          \
  } while (0)
  ADD("<pad>", 3, 0);
  ADD("<eos>", 3, 0);
  ADD("<bos>", 3, 0);
  ADD("<unk>", 2, 0);
  ADD("<start_of_turn>", 3, 0);
  ADD("<end_of_turn>", 3, 0);
  ADD("<unused0>", 5, 0);
  for (int b = 0; b < 256; b++) {
    char t[8];
    snprintf(t, sizeof t, "<0x%02X>", b);
    ADD(t, 6, 0);
  }
  for (int c = 33; c < 127; c++) {
    char t[2] = {(char)c, 0};
    ADD(t, 1, -1000.0f - (float)c);
  }
  ADD("\xe2\x96\x81", 1, -900);
  /* user-defined: newline runs and overlapping pairs (longest-first partition) */
  ADD("\n", 4, 0);
  ADD("\n\n", 4, 0);
  ADD("\n\n\n", 4, 0);
  ADD("  ", 4, 0);
  ADD("<b>", 4, 0);
  ADD("</b>", 4, 0);
  ADD("AB", 4, 0);
  ADD("BCD", 4, 0);
  ADD("xx", 4, 0);
  ADD("xxx", 4, 0);
  ADD("</s>", 4, 0); /* promoted to control by name */
  /* merges, some with equal scores */
  static const char *const merges[] = {"\xe2\x96\x81t", "he", "\xe2\x96\x81the", "in", "er", "an", "\xe2\x96\x81" "a",
                                       "re", "on", "ab", "bc", "abc", "aa", "aaa", "aaaa", "\xe2\x96\x81\xe2\x96\x81",
                                       "th", "the", "ing", "\xc3\xa4", "\xc3\xb6", "\xc3\xa4\xc3\xb6", "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80", "12", "123", "<s", "tart"};
  for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++) ADD(merges[i], 1, -(float)(i / 2));
#undef ADD
  fg_vocab_desc d = {n, pieces, scores, types, 2, 1, 3, 0, false};
  fg_vocab *v = NULL;
  fg_error err = {0};
  if (fg_vocab_create(&d, &v, &err) != FG_OK) {
    fprintf(stderr, "fuzz_tokenizer: built-in vocabulary: %s\n", err.msg);
    abort();
  }
  return v;
}

static fg_vocab *model_vocab(const char *path) {
  fg_mapfile mf;
  fg_error err = {0};
  fg_gguf g;
  fg_vocab *v = NULL;
  if (fg_mapfile_open(path, true, &mf, &err) != FG_OK || fg_gguf_parse(mf.data, mf.size, &g, &err) != FG_OK ||
      fg_vocab_load(&g, &v, &err) != FG_OK) {
    fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.msg);
    abort();
  }
  fg_gguf_clear(&g);
  fg_mapfile_close(&mf);
  return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *path = getenv("FG_FUZZ_MODEL");
  if (path && *path) {
    g_vocab = model_vocab(path);
    const char *rt = getenv("FG_FUZZ_ROUNDTRIP");
    g_roundtrip = rt && *rt == '1';
  } else {
    g_vocab = builtin_vocab();
    g_roundtrip = true;
  }
  return 0;
}

// ----------------------------------------------------------------------------------------------
// One input

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const fg_vocab *v = g_vocab;
  const uint32_t flags = data[0] & (FG_VOCAB_ADD_BOS | FG_VOCAB_NO_SPECIAL);
  const char *text = (const char *)data + 1;
  const size_t len = size - 1;
  fg_error err = {0};

  size_t need = 0;
  fg_status st = fg_vocab_encode(v, text, len, flags, NULL, 0, &need, &err);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL);
  FUZZ_CHECK((st == FG_OK) == (need == 0));
  if (!fg_vocab_add_space_prefix(v)) FUZZ_CHECK(need <= len + 1); /* at most one id per byte, plus BOS */
  int32_t *ids = malloc((need + 1) * sizeof *ids);
  size_t n = 0;
  FUZZ_CHECK(fg_vocab_encode(v, text, len, flags, ids, need, &n, &err) == FG_OK);
  FUZZ_CHECK(n == need);
  for (size_t i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && (uint32_t)ids[i] < fg_vocab_size(v));
  if (n > 1) {
    int32_t *part = malloc((n - 1) * sizeof *part);
    size_t got = 0;
    FUZZ_CHECK(fg_vocab_encode(v, text, len, flags, part, n - 1, &got, &err) == FG_ERR_BUFFER_TOO_SMALL);
    FUZZ_CHECK(got == n && memcmp(part, ids, (n - 1) * sizeof *part) == 0);
    free(part);
  }

  /* decode, with the size query first */
  size_t dneed = 0;
  st = fg_vocab_decode(v, ids, n, NULL, 0, &dneed, &err);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL);
  char *back = malloc(dneed + 1);
  size_t dn = 0;
  FUZZ_CHECK(fg_vocab_decode(v, ids, n, back, dneed, &dn, &err) == FG_OK && dn == dneed);
  if (g_roundtrip && !(flags & FG_VOCAB_ADD_BOS) && !memmem(text, len, "\xe2\x96\x81", 3)) {
    FUZZ_CHECK(dn == len && memcmp(back, text, len) == 0);
  }
  free(back);
  free(ids);

  /* the input as token ids (some invalid) */
  size_t n_raw = len / 4;
  if (n_raw) {
    int32_t *raw = malloc(n_raw * sizeof *raw);
    memcpy(raw, text, n_raw * sizeof *raw);
    bool valid = true;
    for (size_t i = 0; i < n_raw; i++) {
      raw[i] = (int32_t)((uint32_t)raw[i] % (fg_vocab_size(v) + 16u)) - 8;
      valid = valid && raw[i] >= 0 && (uint32_t)raw[i] < fg_vocab_size(v);
    }
    char buf[256];
    size_t got = 0;
    st = fg_vocab_decode(v, raw, n_raw, buf, sizeof buf, &got, &err);
    if (!valid) FUZZ_CHECK(st == FG_ERR_INVALID_ARG);
    else FUZZ_CHECK(st == FG_OK || (st == FG_ERR_BUFFER_TOO_SMALL && got > sizeof buf));
    free(raw);
  }
  return 0;
}
