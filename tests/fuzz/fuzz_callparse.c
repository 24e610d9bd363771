// fuzz_callparse.c — libFuzzer target: arbitrary generated text -> fg_call_parse (with and without a
// catalog) and the stop rule.
//
// Build (one command each, from the repository root; the library sources are compiled in directly):
//   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc
//     tests/fuzz/fuzz_callparse.c src/nlu/catalog.c src/nlu/control_tokens.c src/nlu/render.c src/nlu/parse.c src/core/*.c -lcjson -lm -lpthread -o fuzz_callparse
//   ./fuzz_callparse -max_total_time=300 -max_len=4096 -dict=tests/fuzz/callparse.dict
//     tests/fuzz/corpus/callparse
// Invariants checked beyond memory safety: the output is always valid JSON (cJSON parses all of it)
// with a "calls" array and a "text" string, and valid UTF-8 (tests/utf8_check.h, whatever bytes the
// model generated); the size query agrees with the output. The input bytes also go through
// fg_json_quote (the one JSON string writer every emitter uses): a UTF-8 string literal that cJSON
// parses back, equal to the input when the input is UTF-8 without NUL.
#include "nlu/catalog.h"
#include "utf8_check.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char k_catalog[] =
    "{\"id\":\"fuzz.v1\",\"functions\":["
    "{\"name\":\"set_timer\",\"description\":\"t\",\"parameters\":{\"minutes\":{\"type\":\"integer\"}},\"required\":[\"minutes\"]},"
    "{\"name\":\"toggle_lamp\",\"description\":\"l\",\"parameters\":{\"state\":{\"type\":\"string\",\"enum\":[\"on\",\"off\"]}}},"
    "{\"name\":\"f\",\"description\":\"x\",\"parameters\":{\"b\":{\"type\":\"boolean\"},\"n\":{\"type\":\"number\",\"nullable\":true},"
    "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"o\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}}}}}]}";

static void check(const fg_catalog *c, const char *gen, size_t size) {
  size_t need = 0, n = 0;
  if (fg_call_parse(c, gen, size, NULL, 0, &need, NULL) != FG_ERR_BUFFER_TOO_SMALL) abort();
  char *out = malloc(need + 1);
  if (fg_call_parse(c, gen, size, out, need + 1, &n, NULL) != FG_OK || n != need || out[n] != '\0') abort();
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(out, n + 1, &end, 1); /* the whole output, NUL included */
  if (!j || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "calls")) ||
      !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "text")))
    abort();
  if (!utf8_check_valid(out, n)) abort();
  cJSON_Delete(j);
  free(out);
}

static void check_quote(const char *s, size_t size) {
  size_t need = 0, n = 0;
  if (fg_json_quote(s, size, NULL, 0, &need) != FG_ERR_BUFFER_TOO_SMALL) abort();
  char *q = malloc(need + 1);
  if (fg_json_quote(s, size, q, need + 1, &n) != FG_OK || n != need || q[n] != '\0') abort();
  if (!utf8_check_valid(q, n)) abort();
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)q[i] < 0x20) abort();
  cJSON *j = cJSON_ParseWithLength(q, n);
  if (!j || !cJSON_IsString(j)) abort();
  if (utf8_check_valid(s, size) && !memchr(s, 0, size) &&
      (strlen(j->valuestring) != size || memcmp(j->valuestring, s, size) != 0))
    abort();
  cJSON_Delete(j);
  free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fg_catalog *cat;
  if (!cat && fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &cat, NULL) != FG_OK) abort();
  const char *gen = (const char *)data;
  check(NULL, gen, size);
  check(cat, gen, size);
  check_quote(gen, size);

  /* the stop rule over the text cut into pieces at every '<' and after every '>' */
  fg_nlu_stopper s;
  fg_nlu_stopper_init(&s, size % 7 == 0 ? 0 : 64, (uint32_t)(size % 11), (uint32_t)(size & 1));
  size_t i = 0;
  fg_nlu_stop last = FG_NLU_CONTINUE;
  while (i < size) {
    size_t j = i + 1;
    while (j < size && gen[j] != '<' && gen[j - 1] != '>') j++;
    fg_nlu_stop r = fg_nlu_stopper_feed(&s, gen + i, j - i);
    if (last != FG_NLU_CONTINUE && r != last) abort(); /* sticky */
    last = r;
    i = j;
  }
  return 0;
}
