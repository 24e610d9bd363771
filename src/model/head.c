/* head.c — the LM head (head.h): the full head over hidden rows, a subset of rows by id, the softcap. */
#include "model/head.h"

// ----------------------------------------------------------------------------------------------
// The full head (over the rows that are not all zero, when the model lists them)

fg_status fg_model_head(fg_ops *ops, const fg_model *m, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy) {
  const uint32_t nv = m->output.rows;
  if (!m->head_rows) return fg_ops_matmul(ops, &m->output, X, ldx, nb, Y, ldy);
  if (ldy < nv) return FG_ERR_INVALID_ARG;
  const uint32_t k = m->n_head_rows;
  /* each column's k values go to the end of its own logits row, then move down to their ids: ids are
   * ascending and id[i] <= nv - k + i, so a value never lands on one not yet moved */
  fg_status st = fg_ops_matmul_rows(ops, &m->output, m->head_rows, k, X, ldx, nb, Y + (nv - k), ldy);
  if (st != FG_OK) return st;
  for (size_t b = 0; b < nb; b++) {
    float *y = Y + b * ldy;
    const float *packed = y + (nv - k);
    uint32_t next = 0; /* first id not yet zero-filled */
    for (uint32_t i = 0; i < k; i++) {
      const uint32_t id = (uint32_t)m->head_rows[i];
      const float v = packed[i];
      for (; next < id; next++) y[next] = 0.0f;
      y[id] = v;
      next = id + 1;
    }
    for (; next < nv; next++) y[next] = 0.0f;
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// A subset of rows (constrained decoding's sparse head) and the softcap

fg_status fg_head_rows(fg_ops *ops, const fg_model *m, const int32_t *ids, uint32_t n, const float *x, float *y) {
  fg_status st = fg_ops_matmul_rows(ops, &m->output, ids, n, x, m->hp.n_embd, 1, y, n);
  if (st != FG_OK) return st;
  for (uint32_t i = 0; i < n; i++) y[i] = fg_head_softcap(m, y[i]);
  return FG_OK;
}

void fg_head_softcap_rows(const fg_model *m, float *y, size_t n) {
  if (!(m->hp.final_softcap > 0.0f)) return;
  for (size_t i = 0; i < n; i++) y[i] = fg_head_softcap(m, y[i]);
}
