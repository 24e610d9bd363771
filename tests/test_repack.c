/* test_repack.c — load-time repacking (kernels.h; avx2, aarch64 neon_dotprod and neon_i8mm):
 * a model loaded with it and one loaded with FG_MODEL_NO_REPACK give bit-identical logits and ids (prefill in a
 * chunk, then single steps), from a mapped and from a read file; fg_model_info says whether it
 * happened, which it must exactly when the process kernel table has a packed layout for the model's
 * matrices; a failed allocation of the copy is a clean FG_ERR_NOMEM. On tables without one (avx512, ref,
 * armv7, FG_ISA=neon) the same checks show the flag is harmless. The tied head's embeddings come from the
 * copy where the table can unpack it (avx2), from the file otherwise. */
#define FG_EXPERIMENTAL
#include "fg_internal.h" /* fg_alloc_fail_after */
#include "kernels/kernels.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

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
           (double)ip.repack_bytes / 1024.0, expect_pack ? "" : " (this table has no packed layout)", N_STEPS + 1);
  }
  fg_model_free(p);
  fg_model_free(f);
}

int main(void) {
  const fg_kernels *k = NULL;
  CHECK_OK(fg_kernels_get(&k, NULL));
  if (!k) return fg_test_finish("test_repack");
  printf("kernel table %s (%s packed layout)\n", k->name, k->pack_size ? "with a" : "without a");
  /* tiny preset: every matrix has a multiple of 16 rows; Q4_0 is never packed */
  if (fg_test_ensure_model("tiny-q8_0.gguf", "tiny", "q8_0", 1) == 0) {
    const char *path = fg_test_model_path("tiny-q8_0.gguf");
    const bool pack = k->pack_size && k->pack_size(FG_TYPE_Q8_0, 64, 64) > 0;
    compare(path, "tiny q8_0, mapped", 0, pack);
    compare(path, "tiny q8_0, read", FG_MODEL_NO_MMAP, pack);
    /* a failed allocation anywhere in the load is a clean error, never a half-loaded model */
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
