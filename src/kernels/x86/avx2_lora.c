/* avx2_lora.c — the AVX2 B product of run-time LoRA adapters (attn.h, fg_attn_kernels.lora_bt; the AVX-512
 * table uses it too). Built with -mavx2 and -ffp-contract=off, without -mfma: GCC would otherwise fuse
 * the multiply and the add below, and the result must equal the C table's (a rounded product, then a
 * rounded sum, in q order per output). 64 outputs per tile in 8 registers, then 8, then one at a time. */
#include "kernels/attn.h"

#include <immintrin.h>

void fg_lora_bt_avx2(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                     size_t n) {
  size_t r0 = 0;
  for (; r0 + 64 <= n; r0 += 64) {
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    for (size_t q = 0; q < nq; q++) {
      const __m256 tq = _mm256_set1_ps(t[q]);
      const float *row = bt + q * ld + r0;
      for (int i = 0; i < 8; i++) acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(_mm256_loadu_ps(row + 8 * i), tq));
    }
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(y + r0 + 8 * i, _mm256_add_ps(_mm256_loadu_ps(y + r0 + 8 * i), acc[i]));
  }
  for (; r0 + 8 <= n; r0 += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t q = 0; q < nq; q++)
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(bt + q * ld + r0), _mm256_set1_ps(t[q])));
    _mm256_storeu_ps(y + r0, _mm256_add_ps(_mm256_loadu_ps(y + r0), acc));
  }
  for (; r0 < n; r0++) {
    float acc = 0.0f;
    for (size_t q = 0; q < nq; q++) acc += bt[q * ld + r0] * t[q];
    y[r0] += acc;
  }
}
