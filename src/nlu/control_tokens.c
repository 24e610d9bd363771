/* control_tokens.c — the control-token spellings (Gemma 3's special tokens) that must never appear
 * inside rendered text (fg_nlu_find_control_token, nlu/catalog.h): catalog.c refuses catalogs whose
 * text holds one, render.c utterances. */
#include "nlu/catalog.h"

#include <string.h>

// ----------------------------------------------------------------------------
// Control tokens: spellings that must never appear inside rendered text

static const char *const k_control_tokens[] = {
    "<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
    "<end_of_image>", "<image_soft_token>", "<start_function_declaration>", "<end_function_declaration>",
    "<start_function_call>", "<end_function_call>", "<start_function_response>", "<end_function_response>",
    "<escape>",
};

ptrdiff_t fg_nlu_find_control_token(const char *s, size_t len, size_t *tok_len) {
  if (!s) return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '<') continue;
    size_t rest = len - i;
    for (size_t k = 0; k < sizeof k_control_tokens / sizeof k_control_tokens[0]; k++) {
      size_t n = strlen(k_control_tokens[k]);
      if (n <= rest && memcmp(s + i, k_control_tokens[k], n) == 0) {
        if (tok_len) *tok_len = n;
        return (ptrdiff_t)i;
      }
    }
    /* <unusedN>: Gemma 3 reserves thousands of these as control tokens */
    static const char unused[] = "<unused";
    size_t un = sizeof unused - 1;
    if (un < rest && memcmp(s + i, unused, un) == 0) {
      size_t j = i + un;
      while (j < len && s[j] >= '0' && s[j] <= '9') j++;
      if (j > i + un && j < len && s[j] == '>') {
        if (tok_len) *tok_len = j + 1 - i;
        return (ptrdiff_t)i;
      }
    }
  }
  return -1;
}
