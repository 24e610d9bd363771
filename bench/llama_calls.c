/* llama_calls.c — llama.cpp's whole NLU call, for bench/arm-insns --llama-calls.
 *
 * The same work fgemma's `call` does per utterance, through llama.h: the catalog prefix is prefilled
 * once (or its sequence state is read from a file another machine wrote), its state is kept in memory
 * with llama_state_seq_get_data, and every utterance restores that state, decodes the utterance's
 * chunk ids in one batch and then greedy ids one at a time until a stop id, the context or
 * --max-tokens ends it. The ids come from fgemma's tokenizer (bench/arm-insns writes them), so both
 * engines see the same tokens.
 *
 *   llama_calls -m BASE.gguf [--lora ADAPTER.gguf] --ids IDS.txt [--state FILE] [--calls N]
 *               [--stop ID]... [--max-tokens N] [-t THREADS] [--n-ctx N] [--ubatch N]
 *
 * IDS.txt: the first line holds the prefix ids (with <bos>), each further line one utterance's chunk
 * ids, space separated. --state FILE: load the prefix state from FILE when it exists (no prefill),
 * else prefill and write it. Prints one JSON line per call ({"call":i,"chunk":n,"ids":[...],
 * "stop":"id"|"max_tokens"|"context_full"}) and errors to stderr (exit 1).
 */
#include "llama.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STOPS 8

typedef struct {
  llama_token *ids;
  size_t n, cap;
} id_list;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("llama_calls: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void push(id_list *l, llama_token t) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->ids = realloc(l->ids, l->cap * sizeof *l->ids);
    if (!l->ids) die("out of memory");
  }
  l->ids[l->n++] = t;
}

/* Reads IDS.txt: lines of space-separated ids. */
static id_list *read_ids(const char *path, size_t *n_lines) {
  FILE *f = fopen(path, "r");
  if (!f) die("cannot open %s", path);
  id_list *lines = NULL;
  size_t n = 0;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    lines = realloc(lines, (n + 1) * sizeof *lines);
    if (!lines) die("out of memory");
    memset(&lines[n], 0, sizeof lines[n]);
    for (char *p = line, *end; *p; p = end) {
      long v = strtol(p, &end, 10);
      if (end == p) {
        if (*p == '\n' || *p == ' ' || *p == '\r') { end = p + 1; continue; }
        die("%s line %zu: not an id at \"%.10s\"", path, n + 1, p);
      }
      push(&lines[n], (llama_token)v);
    }
    if (lines[n].n) n++;
  }
  free(line);
  fclose(f);
  if (n < 2) die("%s needs the prefix line and at least one utterance line", path);
  *n_lines = n;
  return lines;
}

/* Decodes ids [0, n) in batches of at most max_batch; logits of the last one only. */
static void decode_all(struct llama_context *ctx, llama_token *ids, size_t n, size_t max_batch) {
  for (size_t i = 0; i < n; i += max_batch) {
    const size_t k = n - i < max_batch ? n - i : max_batch;
    if (llama_decode(ctx, llama_batch_get_one(ids + i, (int32_t)k)) != 0)
      die("llama_decode failed at position %zu", i);
  }
}

static llama_token argmax(const float *row, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (row[i] > row[best]) best = i;
  return best;
}

static bool file_exists(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

int main(int argc, char **argv) {
  const char *model_path = NULL, *lora_path = NULL, *ids_path = NULL, *state_path = NULL;
  int threads = 1, max_tokens = 64, n_ctx = 2048, ubatch = 64;
  long calls = -1;
  llama_token stops[MAX_STOPS];
  int n_stops = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      puts("usage: llama_calls -m BASE.gguf [--lora ADAPTER.gguf] --ids IDS.txt [--state FILE] [--calls N]\n"
           "                   [--stop ID]... [--max-tokens N] [-t THREADS] [--n-ctx N] [--ubatch N]");
      return 0;
    }
    if (!v) die("%s needs a value", a);
    if (!strcmp(a, "-m")) model_path = v;
    else if (!strcmp(a, "--lora")) lora_path = v;
    else if (!strcmp(a, "--ids")) ids_path = v;
    else if (!strcmp(a, "--state")) state_path = v;
    else if (!strcmp(a, "--calls")) calls = atol(v);
    else if (!strcmp(a, "--max-tokens")) max_tokens = atoi(v);
    else if (!strcmp(a, "-t")) threads = atoi(v);
    else if (!strcmp(a, "--n-ctx")) n_ctx = atoi(v);
    else if (!strcmp(a, "--ubatch")) ubatch = atoi(v);
    else if (!strcmp(a, "--stop")) {
      if (n_stops == MAX_STOPS) die("at most %d --stop ids", MAX_STOPS);
      stops[n_stops++] = (llama_token)atoi(v);
    } else die("unknown option %s (see --help)", a);
    i++;
  }
  if (!model_path || !ids_path) die("-m and --ids are required (see --help)");
  if (threads < 1 || max_tokens < 1 || n_ctx < 64 || ubatch < 1) die("bad -t, --max-tokens, --n-ctx or --ubatch");

  size_t n_lines;
  id_list *lines = read_ids(ids_path, &n_lines);
  const size_t n_calls = calls < 0 || (size_t)calls > n_lines - 1 ? n_lines - 1 : (size_t)calls;

  llama_backend_init();
  ggml_backend_load_all();
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model *model = llama_model_load_from_file(model_path, mp);
  if (!model) die("cannot load %s", model_path);
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)n_ctx;
  cp.n_batch = (uint32_t)n_ctx;
  cp.n_ubatch = (uint32_t)ubatch;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.no_perf = true;
  struct llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) die("cannot create a context");
  if (lora_path) {
    struct llama_adapter_lora *ad = llama_adapter_lora_init(model, lora_path);
    if (!ad) die("cannot load the adapter %s", lora_path);
    float scale = 1.0f;
    if (llama_set_adapters_lora(ctx, &ad, 1, &scale) != 0) die("cannot set the adapter");
  }
  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_memory_t mem = llama_get_memory(ctx);

  /* the prefix state: from the file, or prefilled (and written when --state names a new file) */
  id_list *prefix = &lines[0];
  if (state_path && file_exists(state_path)) {
    llama_token *got = malloc(prefix->n * sizeof *got);
    size_t n_got = 0;
    if (!got || !llama_state_seq_load_file(ctx, state_path, 0, got, prefix->n, &n_got))
      die("cannot load the state %s", state_path);
    if (n_got != prefix->n || memcmp(got, prefix->ids, n_got * sizeof *got))
      die("the state %s holds another prefix (%zu ids, %zu expected)", state_path, n_got, prefix->n);
    free(got);
  } else {
    decode_all(ctx, prefix->ids, prefix->n, (size_t)n_ctx);
    if (state_path && !llama_state_seq_save_file(ctx, state_path, 0, prefix->ids, prefix->n))
      die("cannot write the state %s", state_path);
  }
  const size_t state_size = llama_state_seq_get_size(ctx, 0);
  uint8_t *state = malloc(state_size);
  if (!state || llama_state_seq_get_data(ctx, state, state_size, 0) != state_size)
    die("cannot copy the prefix state (%zu bytes)", state_size);

  for (size_t c = 0; c < n_calls; c++) {
    id_list *chunk = &lines[1 + c];
    llama_memory_seq_rm(mem, 0, -1, -1);
    if (!llama_state_seq_set_data(ctx, state, state_size, 0)) die("call %zu: cannot restore the prefix state", c);
    size_t pos = prefix->n;
    if (pos + chunk->n > (size_t)n_ctx) die("call %zu: the utterance does not fit the context", c);
    decode_all(ctx, chunk->ids, chunk->n, (size_t)n_ctx);
    pos += chunk->n;
    printf("{\"call\":%zu,\"chunk\":%zu,\"ids\":[", c, chunk->n);
    const char *why = "max_tokens";
    for (int t = 0; t < max_tokens; t++) {
      llama_token tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
      printf("%s%d", t ? "," : "", tok);
      bool stop = false;
      for (int s = 0; s < n_stops; s++) stop |= tok == stops[s];
      if (stop) { why = "id"; break; }
      if (pos >= (size_t)n_ctx) { why = "context_full"; break; }
      if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) die("call %zu: llama_decode failed", c);
      pos++;
    }
    printf("],\"stop\":\"%s\"}\n", why);
    fflush(stdout);
  }
  free(state);
  for (size_t i = 0; i < n_lines; i++) free(lines[i].ids);
  free(lines);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
