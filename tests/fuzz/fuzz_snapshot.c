/* fuzz_snapshot.c — libFuzzer target: arbitrary bytes as a persisted snapshot file (fg_snapshot_load).
 *
 * Every input is loaded twice against a tiny generated model:
 *   1. as is: magic, version, header size and checksum refusals;
 *   2. "repaired": the fingerprint replaced by the model's and the trailing FNV-1a checksum recomputed,
 *      so that mutations reach the field checks behind the checksum (a file can always be forged that
 *      far: the checksum guards against damage, not against an attacker).
 * A refused file must give FG_ERR_FORMAT or FG_ERR_MISMATCH (FG_ERR_NOMEM under memory pressure), a
 * NULL out-pointer and a message. A loaded one must save back to the very same bytes, fork into a
 * session that takes a step (or reports FG_ERR_CONTEXT_FULL at the end of its context), and restore
 * into a second session.
 *
 * The model: FG_FUZZ_MODEL=path.gguf, or the tiny f32 preset with seed 1 (as tests/test_session.c and
 * test_reliability.c use) generated at start-up into $TMPDIR, mapped and unlinked at once.
 * Seeds: FG_FUZZ_WRITE_SEEDS=dir writes valid snapshots of that model (0 to 40 positions, < 30 KB) and
 * a few cut or altered ones into dir (tests/fuzz/corpus/snapshot/ holds them), then exits.
 *
 * Build: scripts/fuzz.sh (clang -fsanitize=fuzzer,address,undefined over the library sources); the
 * corpus is replayed as the ctest test fuzz_replay_snapshot by tests/fuzz/regression_driver.c. */
#define FG_EXPERIMENTAL
#include "fgemma.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_CHECK(x)                                                                    \
  do {                                                                                   \
    if (!(x)) {                                                                          \
      fprintf(stderr, "fuzz_snapshot: invariant failed: %s (line %d)\n", #x, __LINE__);  \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

/* File layout (src/session/snapshot.c): magic(8) version(4) header bytes(4) fingerprint(16) 9 x u32 (8 in version 1),
 * tokens, per-layer KV, logits, then a u64 FNV-1a of everything before it. */
enum { OFF_FP = 16, MIN_FILE = 64 + 8 };

static fg_model *g_model;
static uint8_t g_fp[16];                 /* the model's fingerprint */
static char g_in_path[600];              /* where the input is offered (a memfd or a scratch file) */
static int g_in_fd = -1;
static char g_out_path[600];             /* where a loaded snapshot is saved back */
static uint8_t *g_buf;                   /* (g_buf_cap) the repaired input / the saved file */
static size_t g_buf_cap;

// ----------------------------------------------------------------------------------------------
// Files

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

static uint8_t *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
  *size = b ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  return b;
}

static void fnv_trailer(uint8_t *b, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; i++) b[n - 8 + i] = (uint8_t)(h >> (8 * i));
}

// ----------------------------------------------------------------------------------------------
// Set-up: the model, the input file, the seeds

static void write_file(const char *dir, const char *name, const uint8_t *b, size_t n) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  FUZZ_CHECK(f && fwrite(b, 1, n, f) == n);
  fclose(f);
  printf("  %s (%zu bytes)\n", path, n);
}

/* Valid snapshots after n positions (ids or, for `embd`, embedding rows), saved into dir. */
static void seed_snapshot(const char *dir, uint32_t n, int embd, int cut) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 1;
  p.n_batch = 8;
  p.n_ctx = 64;
  fg_session *s = NULL;
  FUZZ_CHECK(fg_session_create(g_model, &p, &s, NULL) == FG_OK);
  fg_model_info info;
  fg_model_get_info(g_model, &info);
  if (n) {
    int32_t ids[64];
    for (uint32_t i = 0; i < n; i++) ids[i] = (int32_t)(400 + 7 * i) % (int32_t)info.n_vocab;
    if (embd) {
      float *rows = calloc((size_t)n * info.n_embd, sizeof(float));
      for (size_t i = 0; i < (size_t)n * info.n_embd; i++) rows[i] = (float)((int)(i % 13) - 6) * 0.25f;
      FUZZ_CHECK(fg_session_prefill_embeddings(s, rows, n, NULL) == FG_OK);
      free(rows);
    } else {
      FUZZ_CHECK(fg_session_prefill(s, ids, n, NULL) == FG_OK);
    }
  }
  fg_snapshot *snap = NULL;
  FUZZ_CHECK(fg_session_snapshot(s, &snap) == FG_OK);
  FUZZ_CHECK(fg_snapshot_save(snap, g_out_path, NULL) == FG_OK);
  size_t size = 0;
  uint8_t *b = slurp(g_out_path, &size);
  FUZZ_CHECK(b && size >= MIN_FILE);
  char name[64];
  snprintf(name, sizeof name, "valid-pos%u%s.fgsnap", n, embd ? "-embd" : "");
  write_file(dir, name, b, size);
  if (cut) {
    snprintf(name, sizeof name, "cut-header-pos%u.fgsnap", n);
    write_file(dir, name, b, 40);
    snprintf(name, sizeof name, "cut-tokens-pos%u.fgsnap", n);
    write_file(dir, name, b, 64 + 4 * (n / 2));
    snprintf(name, sizeof name, "cut-kv-pos%u.fgsnap", n);
    write_file(dir, name, b, size / 2);
    snprintf(name, sizeof name, "cut-last-byte-pos%u.fgsnap", n);
    write_file(dir, name, b, size - 1);
    b[8] = 3; /* a future version 3, checksum fixed: only the version check refuses it */
    fnv_trailer(b, size);
    snprintf(name, sizeof name, "version3-pos%u.fgsnap", n);
    write_file(dir, name, b, size);
  }
  free(b);
  remove(g_out_path);
  fg_snapshot_free(snap);
  fg_session_free(s);
}

static void write_seeds(const char *dir) {
  printf("fuzz_snapshot: writing seeds into %s\n", dir);
  seed_snapshot(dir, 0, 0, 0);
  seed_snapshot(dir, 1, 0, 0);
  seed_snapshot(dir, 9, 0, 1);
  seed_snapshot(dir, 33, 0, 0);
  seed_snapshot(dir, 40, 0, 0);
  seed_snapshot(dir, 5, 1, 0);
}

static void remove_input(void) { remove(g_in_path); }

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fg_error err = {0};
  const char *model = getenv("FG_FUZZ_MODEL");
  char gen_path[600];
  if (!model || !*model) {
    snprintf(gen_path, sizeof gen_path, "%s/fgemma-fuzz-snapshot-%d.gguf", tmp_dir(), (int)getpid());
    fg_gen_params gp;
    fg_gen_params_init(&gp);
    gp.preset = "tiny";
    gp.type = 0; /* f32 */
    gp.seed = 1;
    if (fg_gen_model(&gp, gen_path, &err) != FG_OK) {
      fprintf(stderr, "fuzz_snapshot: cannot generate the tiny model: %s\n", err.msg);
      abort();
    }
    model = gen_path;
  }
  if (fg_model_load(model, NULL, &g_model, &err) != FG_OK) {
    fprintf(stderr, "fuzz_snapshot: %s: %s\n", model, err.msg);
    abort();
  }
  if (model == gen_path) remove(gen_path); /* mapped: the mapping outlives the name */
  fg_model_info info;
  fg_model_get_info(g_model, &info);
  memcpy(g_fp, info.fingerprint, 16);

  g_in_fd = memfd_create("fuzz_snapshot", 0);
  if (g_in_fd >= 0) {
    snprintf(g_in_path, sizeof g_in_path, "/proc/self/fd/%d", g_in_fd);
  } else { /* no memfd: a scratch file, removed at exit */
    snprintf(g_in_path, sizeof g_in_path, "%s/fgemma-fuzz-snapshot-%d.in", tmp_dir(), (int)getpid());
    g_in_fd = open(g_in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(g_in_fd >= 0);
    atexit(remove_input);
  }
  snprintf(g_out_path, sizeof g_out_path, "%s/fgemma-fuzz-snapshot-%d.out", tmp_dir(), (int)getpid());

  const char *seeds = getenv("FG_FUZZ_WRITE_SEEDS");
  if (seeds && *seeds) {
    write_seeds(seeds);
    exit(0);
  }
  return 0;
}

// ----------------------------------------------------------------------------------------------
// One input

static void exercise(const fg_snapshot *snap, const uint8_t *file, size_t size, int32_t token) {
  /* save(load(file)) == file for a file of the current version; an older version (1: f32 KV, no
   * KV-type field) is saved in the current one, which must load and save back to itself */
  FUZZ_CHECK(fg_snapshot_save(snap, g_out_path, NULL) == FG_OK);
  size_t n = 0;
  uint8_t *back = slurp(g_out_path, &n);
  FUZZ_CHECK(back && n >= 12);
  const uint32_t version = (uint32_t)file[8] | (uint32_t)file[9] << 8 | (uint32_t)file[10] << 16 |
                           (uint32_t)file[11] << 24;
  const uint32_t current = (uint32_t)back[8] | (uint32_t)back[9] << 8 | (uint32_t)back[10] << 16 |
                           (uint32_t)back[11] << 24;
  if (version == current) {
    FUZZ_CHECK(n == size && memcmp(back, file, size) == 0);
  } else {
    FUZZ_CHECK(version < current);
    fg_snapshot *again = NULL;
    FUZZ_CHECK(fg_snapshot_load(g_model, g_out_path, &again, NULL) == FG_OK);
    FUZZ_CHECK(fg_snapshot_position(again) == fg_snapshot_position(snap));
    remove(g_out_path);
    FUZZ_CHECK(fg_snapshot_save(again, g_out_path, NULL) == FG_OK);
    size_t n2 = 0;
    uint8_t *back2 = slurp(g_out_path, &n2);
    FUZZ_CHECK(back2 && n2 == n && memcmp(back2, back, n) == 0);
    free(back2);
    fg_snapshot_free(again);
  }
  free(back);
  remove(g_out_path);

  const uint32_t pos = fg_snapshot_position(snap);
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 1;
  p.n_batch = 8;
  fg_session *s = NULL;
  fg_status st = fg_session_fork(snap, &p, &s, NULL);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
  if (st == FG_OK) {
    FUZZ_CHECK(fg_session_position(s) == pos);
    FUZZ_CHECK((fg_session_logits(s) != NULL) == (pos > 0));
    int32_t next = -1;
    st = fg_session_step(s, token, &next);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_CONTEXT_FULL || st == FG_ERR_NOMEM);
    if (st == FG_OK) FUZZ_CHECK(fg_session_position(s) == pos + 1 && next >= 0);
    else FUZZ_CHECK(fg_session_position(s) == pos);
    fg_session_free(s);
  }
  /* restore into a session with a small context: fits or CONTEXT_FULL, unchanged then */
  p.n_ctx = 16;
  s = NULL;
  if (fg_session_create(g_model, &p, &s, NULL) == FG_OK) {
    st = fg_session_restore(s, snap);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_CONTEXT_FULL || st == FG_ERR_NOMEM);
    FUZZ_CHECK(fg_session_position(s) == (st == FG_OK ? pos : 0));
    fg_session_free(s);
  }
}

static void load_one(const uint8_t *file, size_t size, int32_t token) {
  offer(file, size);
  fg_snapshot *snap = (fg_snapshot *)&snap;
  fg_error err;
  fg_status st = fg_snapshot_load(g_model, g_in_path, &snap, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_MISMATCH || st == FG_ERR_NOMEM);
    FUZZ_CHECK(snap == NULL);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    return;
  }
  FUZZ_CHECK(snap != NULL && err.code == FG_OK && err.msg[0] == '\0');
  exercise(snap, file, size, token);
  fg_snapshot_free(snap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_model_info info;
  fg_model_get_info(g_model, &info);
  const int32_t token = (int32_t)((size ? data[size / 2] * 131u + size : 7u) % info.n_vocab);
  load_one(data, size, token);
  if (size < MIN_FILE) return 0;
  if (size > g_buf_cap) {
    free(g_buf);
    g_buf = malloc(size);
    g_buf_cap = size;
  }
  memcpy(g_buf, data, size);
  memcpy(g_buf + OFF_FP, g_fp, 16);
  fnv_trailer(g_buf, size);
  load_one(g_buf, size, token);
  return 0;
}
