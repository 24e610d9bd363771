/* test_reliability.c — what fgemma does with hostile input and failing resources, through the public API:
 *
 *   1. every allocation of a model load, a session run, snapshots, tokenization, catalogs and the NLU
 *      engine made to fail once (k = 1, 2, ... until the call succeeds): FG_ERR_NOMEM, out-pointers
 *      NULL, no leak (the ASan pass checks leaks), the handle unchanged and fully usable afterwards;
 *   2. every public entry point with NULL and out-of-range arguments: a status, never a crash;
 *   3. a long prefill aborted from another thread: FG_ERR_ABORTED, the session exactly as before;
 *   4. snapshot files truncated, bit-flipped, of another model or version, and crafted with a valid
 *      checksum: refused with a clear message; the snapshot in memory and its forks are unaffected;
 *   5. handles freed after their model (reference counted; every order: test_lifetime);
 *   6. model files truncated and bit-flipped: refused, or loaded and usable;
 *   7. one hostile input of each kind (GGUF, tokenizer, catalog, call text, snapshot, session API):
 *      the table of docs/RELIABILITY.md (FG_REL_TABLE=1 prints it).
 * Sections can be picked by name: test_reliability [alloc args abort snapfile errmsg free model table].
 * Each section is a file of tests/test_reliability/ (reliability.h: what they share); this file holds
 * the helpers and main.
 *
 * Tiny preset (6 layers, window 8, vocabulary 512, context 2048), generated before any hook is armed. */
#include "test_reliability/reliability.h"

/* FG_REL_TABLE=1 prints every refused input as a Markdown row (docs/RELIABILITY.md is made of them). */
bool g_table;
void table_row(const char *area, const char *input, fg_status st, const char *msg) {
  if (!g_table) return;
  printf("| %s | %s | `%s` | %s |\n", area, input, st == FG_OK ? "FG_OK" : fg_status_str(st), msg && *msg ? msg : "");
}

fg_model *g_model;
uint32_t g_vocab;
uint32_t g_n_layer;
static char g_scratch[512]; /* prefix of this process's scratch files: FG_TEST_MODELS/rel_<pid> */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

void random_ids(int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) ids[i] = 4 + (int32_t)rnd(g_vocab - 4);
}

const char *scratch_path(const char *suffix) {
  static char buf[4][600];
  static int next;
  char *p = buf[next++ & 3];
  snprintf(p, sizeof buf[0], "%s_%s", g_scratch, suffix);
  return p;
}

bool same_logits(const float *a, const float *b) {
  return a && b && memcmp(a, b, sizeof(float) * g_vocab) == 0;
}

fg_session_params small_params(uint32_t n_batch, uint32_t n_threads, uint32_t n_ctx) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_batch = n_batch;
  p.n_threads = n_threads;
  p.n_ctx = n_ctx;
  return p;
}

int main(int argc, char **argv) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  const char *emu = getenv("FG_TEST_EMULATED");
  g_emulated = emu && emu[0] && strcmp(emu, "0") != 0;
  const char *tbl = getenv("FG_REL_TABLE");
  g_table = tbl && *tbl == '1';
  snprintf(g_scratch, sizeof g_scratch, "%s/rel_%d", FG_TEST_MODELS, (int)getpid());
  fg_error err;
  if (fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &g_model, &err) != FG_OK) {
    fprintf(stderr, "cannot load the tiny model: %s\n", err.msg);
    return 1;
  }
  fg_model_info info;
  CHECK_OK(fg_model_get_info(g_model, &info));
  g_vocab = info.n_vocab;
  g_n_layer = info.n_layer;
  CHECK(info.has_vocab && info.n_ctx_train >= 2048 && info.sliding_window > 0);

  /* sections by name on the command line (e.g. the TSan pass runs "abort errmsg free"); none = all */
  static const struct { const char *name; void (*fn)(void); } sections[] = {
      {"alloc", test_alloc_failures}, {"args", test_bad_arguments},     {"abort", test_abort},
      {"snapfile", test_snapshot_files}, {"errmsg", test_errmsg_threads}, {"free", test_free_after_model},
      {"model", test_model_files},    {"table", test_table},
  };
  make_references();
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], sections[i].name) == 0;
    if (run) sections[i].fn();
  }

  fg_snapshot_free(ref.at20);
  fg_snapshot_free(ref.at250);
  free(ref.fresh45);
  free(ref.at20_45);
  free(ref.at20_1);
  free(ref.at250_20);
  remove(ref.snap20_path);
  remove(scratch_path("nlu-load.fgsnap"));
  fg_model_free(g_model);
  return fg_test_finish("test_reliability");
}
