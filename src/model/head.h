/* head.h — the LM head, in one place: the full head over hidden rows (fg_model_head), a subset of its
 * rows by id (constrained decoding's sparse head) and the final logit softcap (fg_head_softcap: the one
 * expression every path applies). The forward (forward.c) and the session's head entry points
 * (session/session.c, for the NLU engine) use these; reference.c keeps its own plain copy on purpose. */
#ifndef FG_MODEL_HEAD_H
#define FG_MODEL_HEAD_H

#include "model/model.h"

/* The LM head over nb normalized hidden rows: Y[b*ldy + v] = output[v] · X[b*ldx] for every v < n_vocab
 * (ldy >= n_vocab). With head_rows, only those rows are computed (bit for bit what fg_ops_matmul gives
 * them) and the all-zero rows get +0. No softcap. */
fg_status fg_model_head(fg_ops *ops, const fg_model *m, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy);

/* Rows ids[0..n) of the head for one normalized hidden row x (n_embd): y[i] = output[ids[i]] · x, then
 * softcapped (fg_head_softcap). y: (n). */
fg_status fg_head_rows(fg_ops *ops, const fg_model *m, const int32_t *ids, uint32_t n, const float *x, float *y);

/* The final logit softcap (hparams final_softcap; 0 = none): cap * tanh(logit / cap). */
static inline float fg_head_softcap(const fg_model *m, float logit) { return fg_softcap(m->hp.final_softcap, logit); }

/* fg_head_softcap over y[0..n), in place (nothing to do without a softcap). */
void fg_head_softcap_rows(const fg_model *m, float *y, size_t n);

#endif /* FG_MODEL_HEAD_H */
