/* fuzz_peft.c — libFuzzer entry point for what `fgemma convert` reads from a PEFT adapter directory before
 * any tensor (src/convert/peft.c): adapter_config.json, fgemma_vocab_override.json and the tensor names.
 *
 * The first byte picks the parser (0 the config, 1 the override, 2 a tensor name); the rest is its input.
 * On success every promise is checked: r and lora_alpha usable, pattern keys present and the lookup safe;
 * the override's ids distinct and non-negative, its pieces non-empty, NUL-free, valid UTF-8 and of the
 * lengths given; a name's layer and module within range. On failure: a message and nothing allocated.
 *
 * Build: scripts/fuzz.sh --build-only peft. Run: scripts/fuzz.sh peft */
#include "convert/peft.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                   \
  do {                                                                                  \
    if (!(x)) {                                                                         \
      fprintf(stderr, "fuzz_peft: invariant failed: %s (line %d)\n", #x, __LINE__);     \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

static void fuzz_config(const char *text, size_t n) {
  fg_peft_config c;
  fg_error err;
  fg_err_clear(&err);
  const fg_status st = fg_peft_config_parse(text, n, "adapter_config.json", &c, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_NOMEM);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    FUZZ_CHECK(!c.rank_pattern && !c.alpha_pattern && c.n_rank_pattern == 0 && c.n_alpha_pattern == 0);
    return;
  }
  FUZZ_CHECK(c.r >= 1 && isfinite(c.alpha) && c.alpha != 0.0);
  for (size_t i = 0; i < c.n_rank_pattern; i++) FUZZ_CHECK(c.rank_pattern[i].key && c.rank_pattern[i].value >= 1.0);
  for (size_t i = 0; i < c.n_alpha_pattern; i++) FUZZ_CHECK(c.alpha_pattern[i].key && isfinite(c.alpha_pattern[i].value));
  double v;
  if (fg_peft_pattern_get(c.rank_pattern, c.n_rank_pattern, "model.layers.0.self_attn.q_proj", c.r, &v))
    FUZZ_CHECK(v >= 1.0);
  (void)fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "o_proj", c.alpha, &v);
  fg_peft_config_clear(&c);
}

static void fuzz_override(const char *text, size_t n) {
  fg_peft_vocab_override v;
  fg_error err;
  fg_err_clear(&err);
  const fg_status st = fg_peft_vocab_override_parse(text, n, "fgemma_vocab_override.json", &v, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_NOMEM);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    FUZZ_CHECK(v.n == 0 && !v.ids && !v.tokens && !v.lens);
    return;
  }
  FUZZ_CHECK(v.n >= 1 && v.n <= FG_PEFT_OVERRIDE_MAX);
  for (size_t i = 0; i < v.n; i++) {
    FUZZ_CHECK(v.ids[i] >= 0 && v.lens[i] > 0 && strlen(v.tokens[i]) == v.lens[i]);
    FUZZ_CHECK(fg_utf8_valid(v.tokens[i], v.lens[i], NULL));
    for (size_t j = 0; j < i; j++) FUZZ_CHECK(v.ids[i] != v.ids[j]);
  }
  fg_peft_vocab_override_clear(&v);
  FUZZ_CHECK(v.n == 0 && !v.ids);
}

static void fuzz_name(const char *name) {
  const fg_peft_name nm = fg_peft_name_parse(name);
  FUZZ_CHECK(nm.kind <= FG_PEFT_UNKNOWN);
  if (nm.kind == FG_PEFT_LORA_A || nm.kind == FG_PEFT_LORA_B) {
    FUZZ_CHECK(nm.module < FG_LORA_N_TARGETS && nm.layer < 1000000);
    FUZZ_CHECK(strstr(name, fg_lora_targets[nm.module].path) != NULL);
  }
  char key[64];
  fg_peft_module_key(name, key, sizeof key);
  FUZZ_CHECK(strlen(key) < sizeof key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *text = (const char *)data + 1;
  const size_t n = size - 1;
  switch (data[0] % 3) {
    case 0: fuzz_config(text, n); break;
    case 1: fuzz_override(text, n); break;
    default: {
      char *s = malloc(n + 1); /* a name is NUL-terminated: stop at the first NUL */
      if (!s) return 0;
      memcpy(s, text, n);
      s[n] = '\0';
      fuzz_name(s);
      free(s);
    }
  }
  return 0;
}
