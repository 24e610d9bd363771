/* fuzz_lora.c — libFuzzer target: arbitrary bytes as a LoRA adapter file (fg_model_params.loras) over a
 * tiny generated model.
 *
 * Each input is offered as the adapter of a fg_model_load of the base, at a scale and in a merge mode
 * taken from its last byte. A refused adapter must give FG_ERR_FORMAT, FG_ERR_UNSUPPORTED,
 * FG_ERR_INVALID_ARG or FG_ERR_NOMEM, a NULL model and a message that starts with "adapter " (so it
 * names the file); LeakSanitizer checks that nothing stays allocated. An accepted one must give a model
 * whose info counts one adapter, whose fingerprint differs from the base's, and that runs: a session
 * prefills three tokens and takes a step, and the reference forward runs over the same ids.
 *
 * The model: FG_FUZZ_MODEL=path.gguf, or the tiny f32 preset with seed 1 generated at start-up into
 * $TMPDIR, unlinked once loaded (its synthetic vocabulary has FunctionGemma's tokens at 46..52 and
 * <unusedN> pieces elsewhere, so vocabulary overrides reach both their accepted and refused paths).
 * Seeds: FG_FUZZ_WRITE_SEEDS=dir writes small valid adapters of that model (gen-lora: each tensor type,
 * a few targets and ranks, alpha 0, a vocabulary override) into dir (tests/fuzz/corpus/lora/ holds
 * them), then exits.
 *
 * Build: scripts/fuzz.sh (clang -fsanitize=fuzzer,address,undefined over the library sources); the
 * corpus is replayed as the ctest test fuzz_replay_lora by tests/fuzz/regression_driver.c. */
#define FG_EXPERIMENTAL
#include "fgemma.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_CHECK(x)                                                                \
  do {                                                                               \
    if (!(x)) {                                                                      \
      fprintf(stderr, "fuzz_lora: invariant failed: %s (line %d)\n", #x, __LINE__);  \
      abort();                                                                       \
    }                                                                                \
  } while (0)

static char g_model_path[600];
static int g_own_model;           /* g_model_path was generated here: removed at exit */
static uint8_t g_fp[16];          /* the base's fingerprint */
static uint32_t g_vocab;
static char g_in_path[600];       /* where the input is offered (a memfd or a scratch file) */
static int g_in_fd = -1;

static const char *tmp_dir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

static void offer(const uint8_t *data, size_t size) {
  FUZZ_CHECK(ftruncate(g_in_fd, 0) == 0);
  size_t done = 0;
  while (done < size) {
    ssize_t w = pwrite(g_in_fd, data + done, size - done, (off_t)done);
    FUZZ_CHECK(w > 0);
    done += (size_t)w;
  }
}

static void remove_files(void) {
  if (g_in_path[0] && strncmp(g_in_path, "/proc/", 6) != 0) remove(g_in_path);
  if (g_own_model) remove(g_model_path);
}

static void seed(const char *dir, const char *name, uint32_t type, uint32_t rank, float alpha, const char *targets,
                 uint32_t flags) {
  fg_gen_lora_params p;
  fg_gen_lora_params_init(&p);
  p.type = type;
  p.rank = rank;
  p.alpha = alpha;
  p.targets = targets;
  p.flags = flags;
  p.seed = 5;
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  fg_error err;
  if (fg_gen_lora(g_model_path, &p, path, &err) != FG_OK) {
    fprintf(stderr, "fuzz_lora: %s: %s\n", path, err.msg);
    abort();
  }
  struct stat st;
  FUZZ_CHECK(stat(path, &st) == 0);
  printf("  %s (%lld bytes)\n", path, (long long)st.st_size);
}

static void write_seeds(const char *dir) {
  printf("fuzz_lora: writing seeds into %s\n", dir);
  seed(dir, "f32-q-rank1.gguf", 0, 1, 16.0f, "attn_q", 0);
  seed(dir, "f16-kv-rank2.gguf", 1, 2, 4.0f, "attn_k,attn_v", 0);
  seed(dir, "bf16-down-rank1-noalpha.gguf", 30, 1, 0.0f, "ffn_down", 0);
  seed(dir, "q8_0-v-rank32.gguf", 8, 32, 32.0f, "attn_v", 0);
  seed(dir, "f32-o-gate-up-override.gguf", 0, 1, 2.0f, "attn_output,ffn_gate,ffn_up", FG_GEN_LORA_VOCAB_OVERRIDE);
  /* two broken ones: the first seed cut in half, and with adapter.type "lorb" */
  char path[1200];
  snprintf(path, sizeof path, "%s/f32-q-rank1.gguf", dir);
  FILE *f = fopen(path, "rb");
  FUZZ_CHECK(f);
  uint8_t buf[1 << 15];
  const size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  FUZZ_CHECK(n > 64 && n < sizeof buf);
  snprintf(path, sizeof path, "%s/cut-half.gguf", dir);
  FUZZ_CHECK((f = fopen(path, "wb")) && fwrite(buf, 1, n / 2, f) == n / 2);
  fclose(f);
  for (size_t i = 0; i + 4 <= n; i++)
    if (memcmp(buf + i, "lora", 4) == 0 && i >= 8 && buf[i - 8] == 4) { /* the string value "lora" (length 4) */
      buf[i + 3] = 'b';
      break;
    }
  snprintf(path, sizeof path, "%s/adapter-type-lorb.gguf", dir);
  FUZZ_CHECK((f = fopen(path, "wb")) && fwrite(buf, 1, n, f) == n);
  fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fg_error err = {0};
  const char *model = getenv("FG_FUZZ_MODEL");
  if (model && *model) {
    snprintf(g_model_path, sizeof g_model_path, "%s", model);
  } else {
    snprintf(g_model_path, sizeof g_model_path, "%s/fgemma-fuzz-lora-%d.gguf", tmp_dir(), (int)getpid());
    g_own_model = 1;
    fg_gen_params gp;
    fg_gen_params_init(&gp);
    gp.preset = "tiny";
    gp.type = 0; /* f32 */
    gp.seed = 1;
    if (fg_gen_model(&gp, g_model_path, &err) != FG_OK) {
      fprintf(stderr, "fuzz_lora: cannot generate the tiny model: %s\n", err.msg);
      abort();
    }
  }
  fg_model *m = NULL;
  if (fg_model_load(g_model_path, NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "fuzz_lora: %s: %s\n", g_model_path, err.msg);
    abort();
  }
  fg_model_info info;
  fg_model_get_info(m, &info);
  memcpy(g_fp, info.fingerprint, 16);
  g_vocab = info.n_vocab;
  fg_model_free(m);

  g_in_fd = memfd_create("fuzz_lora", 0);
  if (g_in_fd >= 0) {
    snprintf(g_in_path, sizeof g_in_path, "/proc/self/fd/%d", g_in_fd);
  } else { /* no memfd: a scratch file */
    snprintf(g_in_path, sizeof g_in_path, "%s/fgemma-fuzz-lora-%d.in", tmp_dir(), (int)getpid());
    g_in_fd = open(g_in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(g_in_fd >= 0);
  }
  atexit(remove_files);
  const char *seeds = getenv("FG_FUZZ_WRITE_SEEDS");
  if (seeds && *seeds) {
    write_seeds(seeds);
    exit(0);
  }
  return 0;
}

static void run(const fg_model *m) {
  fg_model_info info;
  fg_model_get_info(m, &info);
  FUZZ_CHECK(info.n_loras == 1);
  FUZZ_CHECK(memcmp(info.fingerprint, g_fp, 16) != 0);
  const int32_t ids[3] = {2, 100 % (int32_t)g_vocab, 47};
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 1;
  p.n_ctx = 16;
  fg_session *s = NULL;
  fg_status st = fg_session_create(m, &p, &s, NULL);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
  if (st == FG_OK) {
    int32_t next = -1;
    st = fg_session_prefill(s, ids, 3, &next);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
    if (st == FG_OK) {
      FUZZ_CHECK(next >= 0 && (uint32_t)next < g_vocab);
      st = fg_session_step(s, next, &next);
      FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
    }
    fg_session_free(s);
  }
  float *logits = malloc(sizeof(float) * g_vocab);
  const size_t at = 2;
  fg_error err;
  st = fg_reference_logits(m, ids, 3, &at, 1, logits, &err);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
  free(logits);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  offer(data, size);
  const uint8_t knob = size ? data[size - 1] : 0; /* merge mode and scale */
  static const float scales[4] = {1.0f, 0.0f, -0.5f, 3.0f};
  fg_model_params mp;
  fg_model_params_init(&mp);
  const fg_lora l = {g_in_path, scales[(knob >> 2) & 3]};
  mp.loras = &l;
  mp.n_loras = 1;
  mp.lora_merge = knob & 3;
  fg_model *m = (fg_model *)&mp;
  fg_error err = {0};
  const fg_status st = fg_model_load(g_model_path, &mp, &m, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_INVALID_ARG || st == FG_ERR_NOMEM);
    FUZZ_CHECK(m == NULL);
    FUZZ_CHECK(strncmp(err.msg, "adapter ", 8) == 0 || st == FG_ERR_NOMEM);
    return 0;
  }
  FUZZ_CHECK(m != NULL);
  run(m);
  fg_model_free(m);
  return 0;
}
