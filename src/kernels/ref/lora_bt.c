/* lora_bt.c — the C table's B product of run-time LoRA adapters (attn.h, fg_attn_kernels.lora_bt). Built
 * with -ffp-contract=off like the rest of kernels/ref: a product and its sum stay two roundings on every
 * target, so ARM (which uses this table) and the AVX2 table agree bit for bit. */
#include "kernels/attn.h"

#define LORA_TILE 64u /* outputs summed at once (accumulators on the stack) */

void fg_lora_bt_c(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                  size_t n) {
  float acc[LORA_TILE];
  for (size_t r0 = 0; r0 < n; r0 += LORA_TILE) {
    const size_t nr = FG_MIN((size_t)LORA_TILE, n - r0);
    for (size_t r = 0; r < LORA_TILE; r++) acc[r] = 0.0f;
    if (nr == LORA_TILE) { /* a whole tile: fixed bounds, so the accumulators stay in registers */
      for (size_t q = 0; q < nq; q++) {
        const float tq = t[q], *row = bt + q * ld + r0;
        for (size_t r = 0; r < LORA_TILE; r++) acc[r] += row[r] * tq;
      }
    } else {
      for (size_t q = 0; q < nq; q++) {
        const float tq = t[q], *row = bt + q * ld + r0;
        for (size_t r = 0; r < nr; r++) acc[r] += row[r] * tq;
      }
    }
    for (size_t r = 0; r < nr; r++) y[r0 + r] += acc[r];
  }
}
