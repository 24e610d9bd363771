/* test_repack.c — load-time repacking (kernels.h; avx2, aarch64 neon_dotprod and neon_i8mm, armv7 neon_dotprod
 * and neon): a model loaded with it and one loaded with FG_MODEL_NO_REPACK give bit-identical logits and ids
 * (prefill in a chunk, then single steps), from a mapped and from a read file; fg_model_info says whether it
 * happened, which it must exactly when the process kernel table has a packed layout for the model's
 * matrices; a failed allocation of the copy is a clean FG_ERR_NOMEM. The tiny preset in Q8_0 and in Q5_0
 * (armv7 packs Q5_0, Q4_K and Q6_K, not Q8_0; no Q6_K model here: the tiny preset's widths, 64 and 128, are
 * not multiples of 256). On tables without one (avx512, ref, aarch64 FG_ISA=neon) the same checks show the
 * flag is harmless. The tied head's embeddings come from the copy where the table can unpack it (avx2), from
 * the file otherwise. After a mapped load that packed, no page of the file's metadata, packed matrices or norm
 * vectors is still mapped (/proc/self/pagemap, where it shows this process's pages: not under qemu-user, whose
 * page table is the emulator's). */
#define FG_EXPERIMENTAL
#include "fg_internal.h" /* fg_alloc_fail_after */
#include "kernels/kernels.h"
#include "model/model.h"
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_PROMPT 40
#define N_STEPS 8

static fg_model *load(const char *path, uint32_t flags, fg_status *st_out) {
  fg_model_params p;
  fg_model_params_init(&p);
  p.flags = flags;
  fg_model *m = NULL;
  fg_error err = {0};
  const fg_status st = fg_model_load(path, &p, &m, &err);
  if (st_out) *st_out = st;
  else CHECK_MSG(st == FG_OK, "load %s: %s", path, err.msg);
  return m;
}

/* logits after a prefill of N_PROMPT ids and after each of N_STEPS greedy steps: out (N_STEPS + 1, nv) */
static void run(const fg_model *m, float *out, uint32_t nv) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 2;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  if (!s) return;
  int32_t ids[N_PROMPT];
  ids[0] = 2;
  for (int i = 1; i < N_PROMPT; i++) ids[i] = (int32_t)((i * 7919u) % (nv - 10)) + 5;
  int32_t next = 0;
  CHECK_OK(fg_session_prefill(s, ids, N_PROMPT, &next));
  for (int t = 0; t <= N_STEPS; t++) {
    const float *lg = fg_session_logits(s);
    if (lg) memcpy(out + (size_t)t * nv, lg, nv * sizeof *out);
    if (t < N_STEPS) CHECK_OK(fg_session_step(s, next, &next));
  }
  fg_session_free(s);
}

static void compare(const char *path, const char *label, uint32_t load_flags, bool expect_pack) {
  fg_model *p = load(path, load_flags, NULL), *f = load(path, load_flags | FG_MODEL_NO_REPACK, NULL);
  if (p && f) {
    fg_model_info ip, iff;
    CHECK_OK(fg_model_get_info(p, &ip));
    CHECK_OK(fg_model_get_info(f, &iff));
    CHECK_MSG(expect_pack ? ip.repack_bytes > 0 : ip.repack_bytes == 0, "%s: repack_bytes %llu, expected %s", label,
              (unsigned long long)ip.repack_bytes, expect_pack ? "> 0" : "0");
    CHECK_EQ_INT(iff.repack_bytes, 0);
    CHECK(memcmp(ip.fingerprint, iff.fingerprint, sizeof ip.fingerprint) == 0);
    const uint32_t nv = ip.n_vocab;
    float *a = malloc((size_t)(N_STEPS + 1) * nv * sizeof *a), *b = malloc((size_t)(N_STEPS + 1) * nv * sizeof *b);
    if (a && b) {
      memset(a, 0, (size_t)(N_STEPS + 1) * nv * sizeof *a);
      memset(b, 0xff, (size_t)(N_STEPS + 1) * nv * sizeof *b);
      run(p, a, nv);
      run(f, b, nv);
      CHECK_MSG(memcmp(a, b, (size_t)(N_STEPS + 1) * nv * sizeof *a) == 0,
                "%s: logits with the packed copy differ from the file's layout", label);
    }
    free(a);
    free(b);
    printf("%-28s repacked %7.1f KiB%s; logits of %d positions bit for bit equal to --repack off\n", label,
           (double)ip.repack_bytes / 1024.0, expect_pack ? "" : " (the table has no packed layout for it)", N_STEPS + 1);
  }
  fg_model_free(p);
  fg_model_free(f);
}

/* pages of [p, p + n) mapped in this process (the present bit of /proc/self/pagemap), or -1 if unreadable */
static long mapped_pages(const void *p, size_t n) {
  FILE *f = fopen("/proc/self/pagemap", "rb");
  if (!f) return -1;
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p / pg, b = ((uintptr_t)p + n + pg - 1) / pg;
  long present = 0;
  if (fseeko(f, (off_t)(a * 8), SEEK_SET) != 0) present = -1;
  for (uintptr_t i = a; present >= 0 && i < b; i++) {
    uint64_t e;
    if (fread(&e, 8, 1, f) != 1) present = -1;
    else present += (long)(e >> 63);
  }
  fclose(f);
  return present;
}

/* a mapped load that packed hands the file's pages back: the metadata, the packed matrices, the norms
 * (copied to the heap): none may be mapped after the load */
static void check_pages_handed_back(const char *path) {
  /* pagemap must see this process's pages: 16 pages just written all mapped (under qemu-user it is the
   * emulator's page table, at other addresses) */
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  uint8_t *probe = malloc(17 * pg);
  long seen = -1;
  if (probe) {
    uint8_t *a = (uint8_t *)(((uintptr_t)probe + pg - 1) / pg * pg);
    memset(a, 1, 16 * pg);
    seen = mapped_pages(a, 16 * pg);
    free(probe);
  }
  if (seen != 16) {
    printf("pages handed back: not checked here (/proc/self/pagemap shows %ld of 16 pages just written: not "
           "this process's page table, e.g. under qemu-user)\n", seen);
    return;
  }
  fg_model *m = load(path, 0, NULL);
  if (!m) return;
  const long before = mapped_pages(m->file.data, m->file.size);
  CHECK_MSG(before >= 0, "/proc/self/pagemap is not readable");
  CHECK_MSG(before == 0, "%ld pages of the mapped file are still mapped after a load that packed", before);
  /* the norms are the heap copies now: a forward pass maps no page of the file again, where the table reads
   * the tied head's embedding rows back from its copy (unpack); without unpack (the NEON tables) they come
   * from the file */
  const fg_kernels *k = m->output.packed_for;
  fg_session_params sp;
  fg_session_params_init(&sp);
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  const int32_t ids[4] = {2, 10, 11, 12};
  if (s) CHECK_OK(fg_session_prefill(s, ids, 4, NULL));
  fg_session_free(s);
  const long after = mapped_pages(m->file.data, m->file.size);
  const bool unpacks = k && k->unpack;
  CHECK_MSG(!unpacks || after == 0, "%ld pages of the mapped file mapped again by a forward pass", after);
  printf("mapped load that packed: %ld / %ld pages of the file mapped after the load / after a prefill%s\n", before,
         after, unpacks ? "" : " (embedding rows from the file: this table has no unpack)");
  fg_model_free(m);
}

/* a failed allocation anywhere in the load is a clean error, never a half-loaded model */
static void check_alloc_failures(const char *path) {
  int failed = 0;
  bool loaded = false;
  for (uint64_t i = 1; i < 400 && !loaded; i++) {
    fg_alloc_fail_after(i);
    fg_status st = FG_OK;
    fg_model *m = load(path, 0, &st);
    fg_alloc_fail_after(0);
    if (st == FG_OK) {
      CHECK(m != NULL);
      fg_model_free(m);
      loaded = true;
      continue;
    }
    CHECK(m == NULL);
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu failing gave status %d", (unsigned long long)i, (int)st);
    failed++;
  }
  CHECK(failed > 0 && loaded);
  printf("load with each of its %d allocations failing: FG_ERR_NOMEM each time (the packed copy's included)\n",
         failed);
}

static bool packs(const fg_kernels *k, uint32_t t) { return k->pack_size && k->pack_size(t, 64, 64) > 0; }

/* The tiny preset in TYPE (generated when missing), mapped and read, against --repack off; where the table
 * packs TYPE, the file's pages handed back. Returns the model's path, NULL when it could not be made. */
static const char *check_tiny(const fg_kernels *k, const char *type, uint32_t t) {
  char file[64], what[64];
  snprintf(file, sizeof file, "tiny-%s.gguf", type);
  if (fg_test_ensure_model(file, "tiny", type, 1) != 0) return NULL;
  const char *path = fg_test_model_path(file);
  const bool pack = packs(k, t);
  snprintf(what, sizeof what, "tiny %s, mapped", type);
  compare(path, what, 0, pack);
  snprintf(what, sizeof what, "tiny %s, read", type);
  compare(path, what, FG_MODEL_NO_MMAP, pack);
  if (pack) check_pages_handed_back(path);
  return path;
}

int main(void) {
  const fg_kernels *k = NULL;
  CHECK_OK(fg_kernels_get(&k, NULL));
  if (!k) return fg_test_finish("test_repack");
  printf("kernel table %s (%s packed layout)\n", k->name, k->pack_size ? "with a" : "without a");
  /* tiny preset: every matrix has a multiple of 16 rows; Q4_0 is never packed */
  const char *path = check_tiny(k, "q8_0", FG_TYPE_Q8_0);
  if (path) check_alloc_failures(path);
  /* tiny Q5_0 (avx2, aarch64 and both armv7 tables pack it); its load's allocations are failed in turn
   * where Q8_0 is not packed (armv7) */
  path = check_tiny(k, "q5_0", FG_TYPE_Q5_0);
  if (path && packs(k, FG_TYPE_Q5_0) && !packs(k, FG_TYPE_Q8_0)) check_alloc_failures(path);
  if (fg_test_ensure_model("tiny-q4_0.gguf", "tiny", "q4_0", 1) == 0) {
    compare(fg_test_model_path("tiny-q4_0.gguf"), "tiny q4_0 (never packed)", 0, false);
    /* a replacement Q8_0 head is a copy already: never packed (a second copy would only double it) */
    fg_model_params p;
    fg_model_params_init(&p);
    p.head_type = FG_TYPE_Q8_0;
    fg_model *m = NULL;
    CHECK_OK(fg_model_load(fg_test_model_path("tiny-q4_0.gguf"), &p, &m, NULL));
    fg_model_info info;
    if (m && fg_model_get_info(m, &info) == FG_OK) {
      CHECK(info.head_copy_bytes > 0);
      CHECK_EQ_INT(info.repack_bytes, 0);
    }
    fg_model_free(m);
  }
  return fg_test_finish("test_repack");
}
