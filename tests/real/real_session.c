/* real_session.c — the session contract and the F16 KV cache on real weights: google/gemma-3-270m
 * Q4_K_M (its mix of Q5_0, Q4_K, Q6_K, Q8_0 and F32 tensors), fetched and checked by scripts/setup.sh.
 * Usage: real_session MODEL.gguf TEXT.txt (tests/real_session.cmake passes both).
 *
 * On a prompt of real text past the 512-position sliding window, with one thread:
 *   - prefill in one call, in chunks of 37, and token by token give bit-identical logits;
 *   - snapshot -> decode -> restore -> decode gives bit-identical logits; a fork of the snapshot
 *     equals the session it came from;
 *   - the session path agrees with the no-cache reference forward (f32 dequantized weights, no
 *     activation quantization) on the first 48 positions within a measured tolerance;
 *   - F16 KV: the largest |K| and |V| of every layer, over the whole prompt, stays far below the
 *     f16 maximum (65504), and the F16 cache's logits stay close to the F32 cache's with the same
 *     greedy continuation. */
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "session/session.h"
#include "testutil.h"

#include <stdlib.h>

#define N_PROMPT 560 /* past the 512 window of the sliding layers */
#define N_GREEDY 32

static char *read_text(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  *n = fread(s, 1, (size_t)len, f);
  s[*n] = 0;
  fclose(f);
  return s;
}

static fg_session *new_session(const fg_model *m, uint32_t kv_type) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  sp.kv_type = kv_type;
  fg_session *s = NULL;
  fg_error err;
  if (fg_session_create(m, &sp, &s, &err) != FG_OK) fprintf(stderr, "session: %s\n", err.msg);
  return s;
}

static bool same_floats(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static double max_abs_diff(const float *a, const float *b, size_t n, double *scale) {
  double d = 0.0, s = 0.0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    s = fmax(s, fabs((double)b[i]));
  }
  if (scale) *scale = s;
  return d;
}

/* largest |K| and |V| held by a session's F32 cache, over every layer and position still held */
static void kv_extremes(const fg_session *s, double *kmax, double *vmax) {
  const fg_kv *kv = &s->kv;
  *kmax = *vmax = 0.0;
  for (uint32_t l = 0; l < kv->n_layer; l++)
    for (uint32_t b = 0; b < kv->layers[l].n_blocks; b++) {
      const fg_kv_block *blk = kv->layers[l].blocks[b];
      if (!blk) continue; /* dropped: out of the window */
      const float *p = (const float *)(const void *)blk->data;
      const size_t nk = (size_t)FG_KV_BLOCK * kv->k_dim;
      for (size_t i = 0; i < nk; i++) *kmax = fmax(*kmax, fabs(p[i]));
      for (size_t j = 0; j < FG_KV_BLOCK; j++) { /* V rows kv->v_row bytes apart */
        const float *v = (const float *)(const void *)(blk->data + nk * sizeof(float) + j * kv->v_row);
        for (size_t i = 0; i < kv->v_dim; i++) *vmax = fmax(*vmax, fabs(v[i]));
      }
    }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: real_session MODEL.gguf TEXT.txt\n");
    return 2;
  }
  fg_model *m = NULL;
  fg_error err;
  if (fg_model_load(argv[1], NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "cannot load the real model %s: %s\n(run scripts/setup.sh: it fetches and checks it)\n", argv[1],
            err.msg);
    return 1;
  }
  size_t text_len = 0;
  char *text = read_text(argv[2], &text_len);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  const uint32_t V = m->hp.n_vocab;
  int32_t *ids = malloc(sizeof(int32_t) * (text_len + 2));
  size_t n_ids = 0;
  CHECK_OK(fg_tokenize(m, text, text_len, FG_TOKENIZE_ADD_BOS, ids, text_len + 2, &n_ids));
  CHECK(n_ids >= N_PROMPT);
  if (n_ids < N_PROMPT) return fg_test_finish("real_session");
  free(text);

  /* --- one prefill, chunks of 37, one token at a time: bit for bit --- */
  fg_session *a = new_session(m, 0), *b = new_session(m, 0), *c = new_session(m, 0);
  int32_t next_a, next_b, next_c = -1;
  double t0 = fg_time_s();
  CHECK_OK(fg_session_prefill(a, ids, N_PROMPT, &next_a));
  printf("prefill of %d real tokens: %.2f s\n", N_PROMPT, fg_time_s() - t0);
  for (size_t p = 0; p < N_PROMPT; p += 37) CHECK_OK(fg_session_prefill(b, ids + p, FG_MIN((size_t)37, N_PROMPT - p), &next_b));
  for (size_t p = 0; p < N_PROMPT; p++) CHECK_OK(fg_session_step(c, ids[p], &next_c));
  CHECK_MSG(same_floats(fg_session_logits(a), fg_session_logits(b), V), "chunks of 37 differ from one prefill");
  CHECK_MSG(same_floats(fg_session_logits(a), fg_session_logits(c), V), "token by token differs from one prefill");
  CHECK(next_a == next_b && next_a == next_c);

  /* --- F16 KV: magnitudes of real K and V, and what the F16 cache does to the logits --- */
  double kmax, vmax;
  kv_extremes(a, &kmax, &vmax);
  printf("largest |K| %.3g, |V| %.3g over %d positions of real text (f16 max 65504)\n", kmax, vmax, N_PROMPT);
  /* K is RMS-normed per head (times attn_k_norm), V a projection of a normed row: both are O(1..100)
   * on this model; 1/16 of the f16 range leaves room for inputs far from the training data */
  CHECK_MSG(kmax < 65504.0 / 16 && vmax < 65504.0 / 16, "K or V too large for an f16 cache: %g %g", kmax, vmax);
  fg_session *h = new_session(m, 1);
  int32_t next_h;
  CHECK_OK(fg_session_prefill(h, ids, N_PROMPT, &next_h));
  double scale;
  const double d16 = max_abs_diff(fg_session_logits(h), fg_session_logits(a), V, &scale);
  printf("f16 KV vs f32 KV after %d positions: max |logit diff| %.4g (logit scale %.3g)\n", N_PROMPT, d16, scale);
  for (uint32_t i = 0; i < V; i++) CHECK(isfinite(fg_session_logits(h)[i]));
  CHECK_MSG(d16 < 0.05 * scale, "f16 KV logits differ by %g", d16);
  {
    int32_t x32 = next_a, x16 = next_h;
    int same = 0;
    for (int i = 0; i < N_GREEDY; i++) {
      same += x32 == x16;
      if (x32 != x16) break;
      CHECK_OK(fg_session_step(a, x32, &x32));
      CHECK_OK(fg_session_step(h, x16, &x16));
    }
    printf("greedy tokens equal with f16 and f32 KV: %d of %d\n", same, N_GREEDY);
    CHECK_EQ_INT(same, N_GREEDY);
  }
  fg_session_free(h);

  /* --- snapshot / restore / fork on b (at N_PROMPT) --- */
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(b, &snap));
  float *first = malloc(sizeof(float) * V * 8);
  int32_t x = next_b;
  for (int i = 0; i < 8; i++) {
    CHECK_OK(fg_session_step(b, x, &x));
    memcpy(first + (size_t)i * V, fg_session_logits(b), sizeof(float) * V);
  }
  CHECK_OK(fg_session_restore(b, snap));
  CHECK_EQ_INT(fg_session_position(b), N_PROMPT);
  fg_session *f = NULL;
  CHECK_OK(fg_session_fork(snap, NULL, &f, &err));
  x = next_b;
  int32_t y = next_b;
  int bad_restore = 0, bad_fork = 0;
  for (int i = 0; i < 8; i++) {
    CHECK_OK(fg_session_step(b, x, &x));
    CHECK_OK(fg_session_step(f, y, &y));
    bad_restore += !same_floats(first + (size_t)i * V, fg_session_logits(b), V);
    bad_fork += !same_floats(fg_session_logits(b), fg_session_logits(f), V);
  }
  CHECK_EQ_INT(bad_restore, 0);
  CHECK_EQ_INT(bad_fork, 0);
  fg_session_free(f);
  fg_snapshot_free(snap);

  /* --- the reference forward (no cache, f32 weights) on the first 48 positions --- */
  {
    enum { NR = 48 };
    const size_t at[3] = {0, 20, NR - 1};
    float *ref = malloc(sizeof(float) * 3 * V);
    t0 = fg_time_s();
    CHECK_OK(fg_ref_forward(m, ids, NULL, NR, at, 3, ref, &err));
    printf("reference forward over %d positions: %.1f s\n", NR, fg_time_s() - t0);
    fg_session *r = new_session(m, 0);
    for (size_t k = 0, p = 0; k < 3; k++) {
      CHECK_OK(fg_session_prefill(r, ids + p, at[k] + 1 - p, NULL));
      p = at[k] + 1;
      const double d = max_abs_diff(fg_session_logits(r), ref + k * V, V, &scale);
      const int32_t top_s = fg_argmax(fg_session_logits(r), V), top_r = fg_argmax(ref + k * V, V);
      printf("session vs reference at position %zu: max |diff| %.4g of %.3g, top-1 %d / %d\n", at[k], d, scale, top_s,
             top_r);
      /* the session quantizes activations to 8 bits per 32-block (q8 spec); measured up to ~2.5 % of
       * the logit scale on this file; 8 % catches a wrong block decoding (tens of %) */
      CHECK_MSG(d < 0.08 * scale, "session vs reference at %zu: %g", at[k], d);
      CHECK_EQ_INT(top_s, top_r);
    }
    fg_session_free(r);
    free(ref);
  }

  /* --- load-time repacking (kernels.h): the same file in the file's layout gives the same bits, through
   * chunks of 64 (the gemm kernels) and single steps (vec); where the process table packs the file's
   * types (avx2, aarch64 with the dot product), the copy exists --- */
  {
    fg_model_info info;
    CHECK_OK(fg_model_get_info(m, &info));
    const fg_kernels *k = NULL;
    CHECK_OK(fg_kernels_get(&k, NULL));
    const bool packs = k && k->pack_size && k->pack_size(FG_TYPE_Q5_0, 64, 640) > 0;
    CHECK_MSG(packs ? info.repack_bytes > 0 : info.repack_bytes == 0, "repack_bytes %llu with table %s",
              (unsigned long long)info.repack_bytes, k ? k->name : "?");
    fg_model_params mp;
    fg_model_params_init(&mp);
    mp.flags = FG_MODEL_NO_REPACK;
    fg_model *fm = NULL;
    CHECK_OK(fg_model_load(argv[1], &mp, &fm, &err));
    if (fm) {
      fg_session *sp = new_session(m, 0), *sf = new_session(fm, 0);
      int32_t np = -1, nf = -1;
      for (size_t p = 0; p < 128; p += 64) {
        CHECK_OK(fg_session_prefill(sp, ids + p, 64, &np));
        CHECK_OK(fg_session_prefill(sf, ids + p, 64, &nf));
      }
      bool same = same_floats(fg_session_logits(sp), fg_session_logits(sf), V) && np == nf;
      for (int t = 0; t < 8 && same; t++) {
        CHECK_OK(fg_session_step(sp, np, &np));
        CHECK_OK(fg_session_step(sf, nf, &nf));
        same = same_floats(fg_session_logits(sp), fg_session_logits(sf), V) && np == nf;
      }
      CHECK_MSG(same, "the repacked copy (%s) and the file's layout give different logits", k ? k->name : "?");
      printf("repacked %.1f MiB (%s table) in %.0f ms: 128 prefilled + 8 decoded positions bit for bit equal to the "
             "file's layout\n", (double)info.repack_bytes / (1024.0 * 1024.0), k ? k->name : "?", info.repack_ms);
      fg_session_free(sp);
      fg_session_free(sf);
      fg_model_free(fm);
    }
  }

  free(first);
  fg_session_free(a);
  fg_session_free(b);
  fg_session_free(c);
  free(ids);
  fg_model_free(m);
  return fg_test_finish("real_session");
}
