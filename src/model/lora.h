/* lora.h — LoRA adapters in llama.cpp's GGUF format over the layers' seven matrices (docs/LORA.md).
 *
 * fg_lora_load (called by model.c while loading) reads every adapter of fg_model_params.loras, checks it
 * against the base (architecture, tensor names, shapes, ranks, types, finite values) and then either
 *   - keeps the pairs in f32 for run time: every adapted product becomes W·x + s·B·(A·x), computed by
 *     both forward passes (forward.c through fg_lora_apply, reference.c in plain loops), or
 *   - merges them (FG_LORA_MERGE_*): heap copies of the adapted matrices, W + Σ s·B·A in the chosen type,
 *     replace the mapped tensors in the layers, and the pairs are dropped.
 * The effective scale of a pair is s = user scale · alpha / rank (the user scale alone when alpha is 0),
 * as llama.cpp computes it. A pair whose s is 0 is checked but not applied, so an adapter at scale 0 gives
 * the base model's results bit for bit. Adapters may also rename base tokens (fgemma.vocab_override.*);
 * the renaming is collected here and applied by the vocabulary load (fg_vocab_load_override). */
#ifndef FG_LORA_H
#define FG_LORA_H

#include "kernels/attn.h"
#include "model/lora_targets.h"
#include "model/model.h"

/* The input each adapted matrix (FG_LORA_Q .. FG_LORA_DOWN, lora_targets.h) reads (products of one input group
 * share x). */
enum { FG_LORA_IN_QKV, FG_LORA_IN_O, FG_LORA_IN_GATE_UP, FG_LORA_IN_DOWN, FG_LORA_N_INPUTS };

/* First target of input group g and how many follow it: QKV = Q, K, V; O; GATE_UP = GATE, UP; DOWN. */
extern const uint8_t fg_lora_group_first[FG_LORA_N_INPUTS];
extern const uint8_t fg_lora_group_count[FG_LORA_N_INPUTS];

/* One layer's adapters at run time, all f32. The pairs of every adapter (in the order given) for a target
 * are laid one after the other: with r_k the sum of their ranks, target k's t = A_k · x has r_k entries
 * and its part of the output is B_k · t, B_k holding s_p · lora_b of each pair p. B_k is kept transposed
 * (r_k rows of n_out), so that the product, whose sums are only r_k long, runs along the outputs. The A
 * parts of the targets that share an input are stacked, so one product gives all their t. */
typedef struct fg_lora_layer {
  fg_mat a[FG_LORA_N_INPUTS];      /* (r_g, n_in) f32: lora_a rows of the group's targets, stacked; rows 0 = none */
  fg_mat bt[FG_LORA_N_TARGETS];    /* (r_k, n_out) f32: (s · lora_b) transposed, pairs one after the other;
                                      rows 0 = not adapted */
  uint32_t off[FG_LORA_N_TARGETS]; /* first row of target k's part of a[its group] (its first entry of t) */
} fg_lora_layer;

typedef struct fg_lora_set {
  fg_lora_layer *layers;  /* (n_layer) for run time; NULL once merged or when no pair applies */
  float *data;            /* (data_bytes) every a and b above, 64-byte aligned (fg_aligned_alloc) */
  size_t data_bytes;
  uint32_t max_rank;      /* largest a[g].rows of any layer: columns of the t scratch */
  uint8_t *merged;        /* merge modes: the adapted matrices' heap copies, each 64-byte aligned */
  size_t merged_bytes;
  size_t n_override;      /* tokens renamed by the adapters (fgemma.vocab_override.*) */
  int32_t *ov_ids;        /* (n_override) ascending */
  fg_gguf_str *ov_text;   /* (n_override) views into ov_pool */
  char *ov_pool;          /* the texts, each NUL-terminated */
  uint64_t hash;          /* adapters' bytes, scales, order and the merge mode (fingerprint) */
  fg_lora *given;         /* (n_given) the adapters as given (paths into given_pool), so that a view of this
                             model (fg_model_with_loras) can apply them again before its own */
  size_t n_given;
  char *given_pool;       /* the paths, each NUL-terminated */
} fg_lora_set;

/* Reads p->loras and applies them to m (layers bound, vocabulary not yet loaded): on success m->lora is the
 * set (NULL when p has no adapter) and m->info's lora fields are filled; adapted matrices are replaced in
 * merge modes. On failure m is as it was and nothing stays allocated; the message names the file and the
 * tensor or key at fault. */
fg_status fg_lora_load(fg_model *m, const fg_model_params *p, fg_error *err);
void fg_lora_free(fg_lora_set *set); /* NULL-safe */

/* Floats of fg_lora_apply_row's t scratch for n_threads threads, max_rank each (0 when the model has no
 * run-time adapter). */
uint64_t fg_lora_scratch_floats(const fg_model *m, uint32_t n_threads);

/* Adds the adapters' part of input group g of layer L to the products of one row, on the calling thread:
 * y[i][r] += (B_k · (A_k · x))[r] for the i-th target k of the group, every adapted one. x: (n_in);
 * t: scratch (max_rank). A · x is the kernel table's f32 product (fg_ops_matmul_here); each entry of B · t
 * is then the plain f32 sum over the rank in order, Σ_j t_j · B[r][j] from 0, as fg_vec_dot_ref sums (so
 * the reference's B part is the same for the same t), added to y once: ak->lora_bt, the same bits in every
 * table. A row's result depends neither on
 * the batch nor on the thread that computes it. The fast forward calls this inside the per-row phases it
 * runs anyway (before the q/k norms, the post-attention norm, GELU, the post-FFN norm), so adapters add
 * no dispatch to the thread pool: the work is small (rank × (n_in + n_out) per matrix and row). */
void fg_lora_apply_row(fg_ops *ops, const fg_attn_kernels *ak, const fg_lora_layer *L, uint32_t g, const float *x,
                       float *const *y, float *t);
/* fg_lora_apply_row's B part, with t = A · x already computed (by fg_ops_matmul_n_side beside the base
 * product of a one-row pass: the same bits as fg_lora_apply_row's own A product). */
void fg_lora_apply_bt(const fg_attn_kernels *ak, const fg_lora_layer *L, uint32_t g, const float *t, float *const *y);

#endif /* FG_LORA_H */
