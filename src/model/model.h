/* model.h — the Gemma 3 model: hyper-parameters read from GGUF metadata, weights bound by name
 * (views into the mapped file, never copied), and the two forward passes:
 *   - fg_ref_forward: the plain-C reference that recomputes every position without a cache (the oracle);
 *   - fg_forward_batch: the fast path over a session's KV cache (see session/).
 * Nothing here knows 270M numbers: every size comes from the file. */
#ifndef FG_MODEL_H
#define FG_MODEL_H

#include "fg_internal.h"
#include "gguf/gguf.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"

#include <stdatomic.h>
#include <stdbool.h>

struct fg_vocab;
struct fg_lora_set;

typedef struct fg_hparams {
  uint32_t n_vocab;
  uint32_t n_embd;         /* d */
  uint32_t n_layer;
  uint32_t n_head;         /* query heads */
  uint32_t n_head_kv;      /* key/value heads (grouped-query attention) */
  uint32_t head_dim_k;     /* per-head key (and query) length */
  uint32_t head_dim_v;     /* per-head value length */
  uint32_t n_ff;
  uint32_t n_ctx_train;
  uint32_t sliding_window; /* 0 = no sliding layers */
  uint32_t swa_pattern;    /* layer L is global iff L % swa_pattern == swa_pattern - 1 */
  float rope_base;         /* global layers */
  float rope_base_swa;     /* sliding layers */
  float rms_eps;
  float final_softcap;     /* 0 = none */
  float attn_scale;        /* 1/sqrt(head_dim_k) */
  float embd_scale;        /* sqrt(n_embd) */
} fg_hparams;

typedef struct fg_layer {
  bool is_swa;             /* sliding-window layer */
  float rope_base;
  const float *attn_norm;  /* (n_embd) */
  fg_mat wq;               /* (n_head*head_dim_k, n_embd) */
  fg_mat wk;               /* (n_head_kv*head_dim_k, n_embd) */
  fg_mat wv;               /* (n_head_kv*head_dim_v, n_embd) */
  fg_mat wo;               /* (n_embd, n_head*head_dim_v) */
  const float *q_norm;     /* (head_dim_k) */
  const float *k_norm;     /* (head_dim_k) */
  const float *post_attn_norm; /* (n_embd) */
  const float *ffn_norm;   /* (n_embd) */
  fg_mat w_gate;           /* (n_ff, n_embd) */
  fg_mat w_up;             /* (n_ff, n_embd) */
  fg_mat w_down;           /* (n_embd, n_ff) */
  const float *post_ffw_norm; /* (n_embd) */
} fg_layer;

struct fg_model {
  atomic_uint refs;         /* the caller's reference plus one per session, snapshot, NLU engine and view;
                               first: a view copies every field after it (model/view.c) */
  fg_mapfile file;
  fg_gguf gguf;
  fg_hparams hp;
  fg_mat tok_embd;          /* (n_vocab, n_embd) */
  fg_mat output;            /* (n_vocab, n_embd); == tok_embd when tied, or head_copy when replaced */
  bool tied_head;
  uint8_t *head_copy;       /* (n_vocab, output.row_bytes) load-time replacement head (fg_aligned_alloc), or NULL */
  uint8_t *packed;          /* the matrices' copies in the kernel table's layout (fg_mat.packed), or NULL */
  float *norms;             /* the norm vectors' copies where the file is mapped and matrices are packed (settle_pages), or NULL */
  int32_t *head_rows;       /* (n_head_rows) ascending ids of the output rows that are not all zero, when
                               most rows are (a trimmed vocabulary); NULL = every row (fg_model_head, head.h) */
  uint32_t n_head_rows;
  const float *output_norm; /* (n_embd) */
  fg_layer *layers;         /* (n_layer) */
  struct fg_vocab *vocab;   /* NULL when the file has no tokenizer metadata */
  struct fg_lora_set *lora; /* LoRA adapters (model/lora.h): run-time pairs or merged copies; NULL = none */
  fg_model_info info;
  char name[64];
  uint8_t fp_file[16];      /* fingerprint of the file alone (hyper-parameters, tensors): info.fingerprint
                               before the adapters and the replacement head are mixed in */
  const fg_model *base;     /* a view (fg_model_with_loras): the model whose weights, mapping, packed copies,
                               head copy, norms and (without an override) vocabulary this one borrows, holding
                               a reference on it; it owns only lora and, when vocab != base->vocab, vocab.
                               NULL for a loaded model, which owns everything above */
};

/* Reference counting: fg_model_load returns a model with one reference (the caller's, dropped by
 * fg_model_free); every session, snapshot and NLU engine takes one for its lifetime, so the model is
 * destroyed when the last of them goes, whatever the order of the frees. The count is atomic: holders
 * may be released on different threads. fg_model_retain returns m (NULL-safe); fg_model_release is
 * fg_model_free for internal holders. */
const fg_model *fg_model_retain(const fg_model *m);
void fg_model_release(const fg_model *m);

/* info.fingerprint from fp_file, the adapters (lora->hash) and the replacement head (model.c). */
void fg_model_fingerprint_finish(fg_model *m);

/* ---- model views (model/view.c) ----
 * Frees what a view owns (its adapters, its own vocabulary) and drops its reference on the base. */
void fg_model_view_destroy(fg_model *v);

/* Loads hyper-parameters from metadata (exposed for tests). */
fg_status fg_hparams_load(const fg_gguf *g, fg_hparams *hp, fg_error *err);

/* Row `id` of token_embd as f32, multiplied by embd_scale. out: (n_embd). */
void fg_model_embed(const fg_model *m, int32_t id, float *out);

/* ---- reference forward (model/reference.c) ----
 * Runs the whole sequence (n tokens: ids, or embedding rows n × n_embd when ids is NULL) from position
 * 0 without a cache, f32 everywhere, with fg_vec_dot_ref for every weight product. Writes the logits
 * after each position listed in at[0..n_at) to logits (n_at × n_vocab). Memory O(n × (n_embd + n_ff)). */
fg_status fg_ref_forward(const fg_model *m, const int32_t *ids, const float *embd, size_t n, const size_t *at,
                         size_t n_at, float *logits, fg_error *err);
/* Greedy decoding on the reference path: appends n_gen ids to out (recomputing everything per token). */
fg_status fg_ref_generate(const fg_model *m, const int32_t *ids, size_t n, size_t n_gen, int32_t *out, fg_error *err);

/* ---- replacement LM head (model.c) ----
 * Quantizes the n_vocab rows of src (any supported type) to type (Q8_0 or Q4_0) with the reference
 * quantizer into dst (rows × row bytes of type), threaded over the available cores. progress (may be
 * NULL) sees rows done; returning false stops with FG_ERR_ABORTED. */
fg_status fg_head_quantize(const fg_mat *src, uint32_t type, uint8_t *dst,
                           bool (*progress)(uint64_t done, uint64_t total, void *ud), void *ud, fg_error *err);

/* Index of the largest value (first on ties). */
int32_t fg_argmax(const float *x, size_t n);

#endif /* FG_MODEL_H */
