/* test_session_270m.c — the session path against the reference path on the full-size 270m preset
 * (f32, real vocabulary), past the 512-position sliding window. The reference recomputes all 600
 * positions without a cache (about a minute on one core), so it runs once and is read at a few
 * positions; the session reaches them with different chunkings, a snapshot and a fork. */
#include "model/model.h"
#include "testutil.h"

#include <stdlib.h>

#define N 600

/* f32 weights, f32 accumulation, rows of up to 2048 products summed in different orders by the
 * SIMD kernels: observed differences are ~1e-6 of the logit scale; 1e-4 leaves room for
 * other ISAs while still catching any real error (a wrong window or RoPE base moves logits by O(1)). */
#define TOL 1e-4

int main(void) {
  if (fg_test_ensure_model("270m-vocab-f32.gguf", "270m", "f32", 1) != 0) return 1;
  fg_model *m = NULL;
  fg_error err;
  if (fg_model_load(fg_test_model_path("270m-vocab-f32.gguf"), NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "load: %s\n", err.msg);
    return 1;
  }
  const uint32_t V = m->hp.n_vocab;
  CHECK_EQ_INT(m->hp.sliding_window, 512);
  int32_t *ids = malloc(sizeof(int32_t) * N);
  uint64_t x = 12345;
  ids[0] = 2;
  for (int i = 1; i < N; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = 300 + (int32_t)((x >> 33) % (V - 300));
  }
  /* positions: inside the first window, its last position, the first beyond it, the end */
  const size_t at[4] = {100, 511, 512, N - 1};
  float *ref = malloc(sizeof(float) * 4 * V);
  double t0 = fg_time_s();
  CHECK_OK(fg_ref_forward(m, ids, NULL, N, at, 4, ref, &err));
  printf("reference forward over %d positions: %.1f s\n", N, fg_time_s() - t0);

  /* session: chunks of 64 up to 101, then one call to 512, then steps to 513, then a fork with
   * 7-position chunks to the end */
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_ctx = 1024;
  p.n_batch = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  t0 = fg_time_s();
  CHECK_OK(fg_session_prefill(s, ids, 101, NULL));
  double d0 = fg_test_rel_diff(fg_session_logits(s), ref, V);
  CHECK_OK(fg_session_prefill(s, ids + 101, 411, NULL));
  double d1 = fg_test_rel_diff(fg_session_logits(s), ref + V, V);
  int32_t next;
  CHECK_OK(fg_session_step(s, ids[512], &next));
  double d2 = fg_test_rel_diff(fg_session_logits(s), ref + 2 * (size_t)V, V);
  CHECK_EQ_INT(next, fg_argmax(ref + 2 * (size_t)V, V));
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session_free(s);
  p.n_batch = 7;
  fg_session *f = NULL;
  CHECK_OK(fg_session_fork(snap, &p, &f, NULL));
  CHECK_OK(fg_session_prefill(f, ids + 513, N - 513, &next));
  double d3 = fg_test_rel_diff(fg_session_logits(f), ref + 3 * (size_t)V, V);
  CHECK_EQ_INT(next, fg_argmax(ref + 3 * (size_t)V, V));
  printf("session: %.1f s; relative logit differences at 100/511/512/599: %.2e %.2e %.2e %.2e (tol %.0e)\n",
         fg_time_s() - t0, d0, d1, d2, d3, TOL);
  CHECK(d0 <= TOL && d1 <= TOL && d2 <= TOL && d3 <= TOL);

  fg_session_stats st;
  CHECK_OK(fg_session_get_stats(f, &st));
  printf("KV at %d positions: global %.1f MiB, sliding %.1f MiB (%u blocks, %u shared with the snapshot)\n", N,
         st.kv_bytes_global / 1048576.0, st.kv_bytes_sliding / 1048576.0, st.kv_blocks, st.kv_blocks_shared);
  /* sliding layers hold at most window + 2 blocks' worth of positions */
  const uint64_t per_pos = (uint64_t)2 * m->hp.n_head_kv * m->hp.head_dim_k * sizeof(float);
  uint64_t n_swa = 0;
  for (uint32_t il = 0; il < m->hp.n_layer; il++) n_swa += m->layers[il].is_swa;
  CHECK(st.kv_bytes_sliding <= n_swa * ((512 + 64) * per_pos + 4096));
  fg_session_free(f);
  fg_snapshot_free(snap);
  free(ref);
  free(ids);
  fg_model_free(m);
  return fg_test_finish("test_session_270m");
}
