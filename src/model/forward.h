/* forward.h — the fast forward pass over a KV cache: a batch of positions [pos0, pos0+nb) appended
 * to the cache, logits computed only for the last position when asked. Used by session/. */
#ifndef FG_FORWARD_H
#define FG_FORWARD_H

#include "kernels/attn.h"
#include "kv/kv_cache.h"
#include "model/model.h"

/* Working memory for batches of up to max_nb positions and contexts up to n_ctx; reused across calls. */
typedef struct fg_fwd_scratch {
  size_t max_nb;
  uint32_t n_ctx;
  uint32_t n_threads;
  float *x;      /* (max_nb, d) residual stream */
  float *xn;     /* (max_nb, d) normed */
  float *q;      /* (max_nb, n_head*hk) */
  float *k;      /* (max_nb, n_kv*hk) */
  float *v;      /* (max_nb, n_kv*hv) */
  float *o;      /* (max_nb, n_head*hv) */
  float *t;      /* (max_nb, max(d, n_kv*hk)) */
  float *gate;   /* (max_nb, ff) */
  float *up;     /* (max_nb, ff) */
  float *attn;   /* (n_threads, attn_stride) per-thread attention tile: Q rows, scores, O rows, m, l, c, masks,
                    the running M, L, O */
  float *attn_part; /* (n_kv, n_ctx / 64 + 2, (group, attn_ld + 2) rounded to 16) decode: per-segment o, m, l */
  float *rope_cs;/* (max_nb, 2 bases, hk) cos then sin per pair */
  double *rope_freq; /* (2 bases, hk / 2) base^(-2i/hk): global layers, then sliding layers */
  float *lora_t; /* (n_threads, max rank of an input group) run-time adapters: A · x of one row per thread;
                    NULL without them */
  size_t attn_rows;   /* query rows per attention tile (a multiple of n_head / n_head_kv) */
  size_t attn_stride; /* floats per thread in attn */
  const fg_attn_kernels *ak; /* attention/GELU kernels of the process-wide ISA */
} fg_fwd_scratch;

/* Sizes come from m's hyper-parameters and run-time adapters. */
fg_status fg_fwd_scratch_init(fg_fwd_scratch *sc, const fg_model *m, size_t max_nb, uint32_t n_ctx,
                              uint32_t n_threads, fg_error *err);
void fg_fwd_scratch_free(fg_fwd_scratch *sc);

typedef struct fg_fwd_args {
  const int32_t *ids;     /* (nb) token ids, or NULL when embd is given */
  const float *embd;      /* (nb, d) embedding rows, already scaled */
  size_t nb;
  uint32_t pos0;          /* position of the first row */
  float *logits;          /* (n_vocab) logits after the last row, or NULL for none */
  float *hidden;          /* (nb - hidden_from, d) rows hidden_from.. of the batch after the output norm (the LM
                             head's input), or NULL */
  size_t hidden_from;     /* first row written to hidden; 0 or nb - 1 (the default 0 with nb == 1) are typical */
  fg_abort_fn abort_cb;
  void *abort_ud;
} fg_fwd_args;

/* Computes the batch; the cache blocks for [pos0, pos0+nb) must have been prepared (fg_kv_prepare).
 * Writes K/V rows of the batch into the cache (converted to the cache's type); reads earlier positions
 * from it. Returns FG_ERR_ABORTED when abort_cb asks (the rows written are then garbage; the caller
 * rolls back). `logits` and `hidden` are written only at the very end, after the last point that can
 * fail or abort, so a caller may pass its current logits buffer: on failure it is left untouched. Each
 * hidden row is the output norm of that row alone, so a row's hidden state does not depend on the rows
 * written beside it (speculative verification reads several rows of one batch).
 *
 * Attention: work items are (tile of query positions, KV head); a tile's query rows (positions × the
 * group's query heads) meet each 32-position KV block once, in place (f32 or f16): scores, the
 * online-softmax update and P·V of attn.h. A row's keys are taken in segments of 64 aligned positions,
 * each with a fresh softmax, folded in key order; a decode step (one position) computes its segments
 * as separate work items on all threads and folds them afterwards. A row's arithmetic depends neither
 * on the tile it falls in (see attn.h) nor on the thread count, so chunking does not change results.
 *
 * The last layer runs in full only for the rows whose output is read (hidden_from.., else the logits row):
 * for the others it writes K and V to the cache and stops (no attention, output product or FFN), which
 * saves about 5 % of a long prefill of Gemma 3 270M (18 layers); the results are the same bit for bit. */
fg_status fg_forward_batch(const fg_model *m, fg_ops *ops, fg_kv *kv, fg_fwd_scratch *sc, const fg_fwd_args *a,
                           fg_error *err);

#endif /* FG_FORWARD_H */
