/* attn.h — the non-matmul kernels of the forward pass: the online-softmax update and the P·V product
 * of attention over one KV block, the fold of two partial outputs, the fused GELU(tanh)·up of the
 * feed-forward, a vector exp, and f16 conversion of KV rows. Per-ISA tables (plain C, AVX2, AVX-512,
 * NEON) chosen to match the process-wide matmul table (FG_ISA=ref|avx2|avx512|auto; on ARM the NEON
 * table where it is compiled in, its other entries the plain-C ones, which GCC vectorizes).
 *
 * Numerical contract (what makes a prefilled token equal the same token decoded alone, bit for bit,
 * within one table): every output row of softmax/pv depends only on that row's inputs and on the
 * aligned key block; never on how many rows are processed together or on the thread. In a block the
 * keys j = 0..FG_ATTN_BLK-1 are the in-block positions; masked keys get weight exactly 0.
 *
 * exp: x clamped to [-87, 88], x = n ln2 + r with |r| <= ln2/2, degree-6 polynomial (Cephes expf
 * coefficients), times 2^n. Measured max relative error against double exp: 8.1e-8 (tests/test_attn.c).
 * gelu: gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * with the exp above; measured max abs difference to the tanhf formula 4.8e-7 for |x| <= 10, at most
 * 1.7e-7 of |x| beyond (tests/test_attn.c). */
#ifndef FG_ATTN_H
#define FG_ATTN_H

#include "fg_internal.h"
#include "tensor/dtype.h"

#define FG_ATTN_BLK 32u /* keys per block: equal to FG_KV_BLOCK (kv/ does not depend on kernels/) */

/* Software prefetch in the SIMD tables' first pass over a block. A decode step reads every K and V block
 * once, from memory; with the hardware prefetchers alone its qk and pv read about 20 GB/s where one core
 * streams 35 (AVX-512, Zen 5). qk prefetches the transposed K FG_ATTN_PF_K_BYTES ahead of the dimension
 * it reads (past the end of a head's K: the next head's K, or the block's V, which pv reads next), pv's
 * first column pass the V row FG_ATTN_PF_V_ROWS keys ahead. Prefetching changes no arithmetic. */
#define FG_ATTN_PF_K_BYTES 4096u
#define FG_ATTN_PF_V_ROWS 4u

/* a prefetch of the line `off` bytes past p, which may lie past the block's allocation (a prefetch never
 * faults; the address is formed as an integer, not as a pointer out of its object) */
static inline void fg_attn_prefetch(const void *p, size_t off) {
  __builtin_prefetch((const void *)(uintptr_t)((uintptr_t)p + off));
}

typedef struct fg_attn_kernels {
  const char *name; /* "ref", "avx2", "avx512" */

  /* Scores of R query rows against one block of keys: s[r][j] = sum_i q[r][i] kt[i][j] for every
   * j < FG_ATTN_BLK (a fused multiply-add chain over i = 0 .. hk-1 from 0 in the SIMD tables; keys not
   * written yet hold zeros or stale rows and are masked later). q: (R, ldq) f32; kt: (hk,
   * FG_ATTN_BLK) elements of k_type (FG_TYPE_F32 or FG_TYPE_F16), the transposed K of one KV head;
   * s: (R, FG_ATTN_BLK). */
  void (*qk)(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
             uint32_t k_type, float *FG_RESTRICT s);

  /* Online-softmax update of R rows for one key block. s: (R, FG_ATTN_BLK) scores, row r valid at
   * j0[r] <= j < j1[r] (entries outside may be uninitialised and are not read). Per row with any valid
   * key: mn = max(m, max_j s_j); c = exp(m - mn) (0 when m = -inf); p_j = exp(s_j - mn) (0 where masked),
   * written over s (all FG_ATTN_BLK entries); l = l c + sum_j p_j; m = mn. A row without valid keys
   * gets c = 1, p = 0 and keeps m, l. */
  void (*softmax)(float *FG_RESTRICT s, size_t R, const uint32_t *FG_RESTRICT j0, const uint32_t *FG_RESTRICT j1,
                  float *FG_RESTRICT m, float *FG_RESTRICT l, float *FG_RESTRICT c);

  /* o[r][i] = o[r][i] * c[r], then o[r][i] = fma(p[r][j], v_j[i], o[r][i]) for j = ja .. jb-1 in order.
   * o: (R, ldo) f32; p: (R, FG_ATTN_BLK); v: the value row of key ja, rows v_stride bytes apart, hv
   * elements of v_type (FG_TYPE_F32 or FG_TYPE_F16). */
  void (*pv)(float *FG_RESTRICT o, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c,
             const float *FG_RESTRICT p, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v, size_t v_stride,
             uint32_t v_type);

  /* Two partial outputs of the same rows folded: o[i] = fma(c2, x[i], o[i] * c1) for i < n, the same two
   * rounded operations as pv of one key (scale by c, one fused multiply-add), in every table. The prefill
   * and decode fold of softmax segments (model/forward.c). */
  void (*fold)(float *FG_RESTRICT o, float c1, const float *FG_RESTRICT x, float c2, size_t n);

  /* g[i] = gelu_tanh(g[i]) * up[i] */
  void (*gelu_mul)(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n);

  /* y[i] = exp(x[i]) as described above (exposed for the tests) */
  void (*exp)(const float *FG_RESTRICT x, float *FG_RESTRICT y, size_t n);

  /* f32 -> IEEE half, round to nearest even (as fg_f32_to_fp16) */
  void (*to_f16)(const float *FG_RESTRICT x, uint16_t *FG_RESTRICT y, size_t n);

  /* The first index of the largest entry of x[0..n) that is not NaN (+0 and -0 tie); SIZE_MAX when
   * every entry is NaN or n is 0. Used by fg_ops_argmax on each range. */
  size_t (*argmax)(const float *x, size_t n);

  /* The B product of run-time LoRA adapters (model/lora.c): y[r] += (t[0] bt[r] + t[1] bt[ld + r] + ... +
   * t[nq-1] bt[(nq-1) ld + r]) for r < n. Per output the products are summed in q order from 0 in an
   * accumulator of its own, each product and each sum rounded (no fused multiply-add), and the sum is
   * then added to y[r]: every table gives the same bits, whatever the tiling. */
  void (*lora_bt)(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                  size_t n);

  /* y[i] = fg_attn_exp1(x[i]) bit for bit in every table (NaN stays NaN); y may be x: the rescales of
   * the segment folds (model/forward.c), all rows in one call. */
  void (*exp1)(const float *x, float *y, size_t n);
} fg_attn_kernels;

/* The C table's lora_bt (kernels/ref/lora_bt.c; ARM's tables use it) and the AVX2 one (the AVX-512 table
 * uses it too: kernels/x86/avx2_lora.c). */
void fg_lora_bt_c(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                  size_t n);
void fg_lora_bt_avx2(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                     size_t n);

/* The AVX2 table's fold and argmax (the AVX-512 table uses them too: kernels/x86/avx2_attn.c). */
void fg_attn_fold_avx2(float *FG_RESTRICT o, float c1, const float *FG_RESTRICT x, float c2, size_t n);
size_t fg_attn_argmax_avx2(const float *x, size_t n);

/* The C table's argmax (armv7's table uses it). */
size_t fg_attn_argmax_c(const float *x, size_t n);

/* The table for the process-wide matmul table's ISA (never NULL; "ref" when that fails); attn_dispatch.c. */
const fg_attn_kernels *fg_attn_get(void);
/* A table by name if compiled in and supported by this CPU, else NULL (tests). */
const fg_attn_kernels *fg_attn_by_name(const char *isa);

/* Per-ISA tables; NULL when not compiled in. They do not check the CPU. */
const fg_attn_kernels *fg_attn_ref(void);
const fg_attn_kernels *fg_attn_avx2(void);
const fg_attn_kernels *fg_attn_avx512(void);

// ----------------------------------------------------------------------------------------------
// the exp polynomial, shared by every table (scalar form)

#define FG_EXP_LO (-87.0f)
#define FG_EXP_HI 88.0f
#define FG_EXP_LOG2E 1.44269504088896341f
#define FG_EXP_C1 0.693359375f      /* ln2 split: C1 + C2 = ln2, C1 exact in few bits */
#define FG_EXP_C2 (-2.12194440e-4f)
#define FG_EXP_P0 1.9875691500e-4f
#define FG_EXP_P1 1.3981999507e-3f
#define FG_EXP_P2 8.3334519073e-3f
#define FG_EXP_P3 4.1665795894e-2f
#define FG_EXP_P4 1.6666665459e-1f
#define FG_EXP_P5 5.0000001201e-1f
#define FG_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define FG_GELU_A 0.044715f

float fg_attn_exp1(float x); /* scalar exp by the polynomial (NaN -> NaN) */

#endif /* FG_ATTN_H */
