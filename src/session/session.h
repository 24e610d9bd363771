/* session.h — internals of fg_session and fg_snapshot shared by session.c and snapshot.c. */
#ifndef FG_SESSION_H
#define FG_SESSION_H

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"

#include <stdatomic.h>

/* Logits shared between a snapshot and the sessions forked from it until one of them appends. */
typedef struct fg_logits_buf {
  atomic_uint refs;
  uint32_t n;
  float data[]; /* (n_vocab) */
} fg_logits_buf;

fg_logits_buf *fg_logits_new(uint32_t n);
fg_logits_buf *fg_logits_ref(fg_logits_buf *b); /* NULL-safe */
void fg_logits_unref(fg_logits_buf *b);         /* NULL-safe */

struct fg_snapshot {
  const fg_model *model;
  uint32_t pos;
  uint32_t n_ctx;          /* context of the session it came from (a fork may choose another) */
  fg_kv kv;                /* shares the blocks */
  int32_t *tokens;         /* (pos) ids appended so far; -1 for embedding rows */
  fg_logits_buf *logits;   /* after the last position; NULL when pos == 0 */
};

struct fg_session {
  const fg_model *model;
  fg_session_params params;
  uint32_t n_ctx;
  uint32_t pos;
  uint32_t floor;          /* sliding layers were trimmed for this position: fg_session_rewind cannot go below */
  fg_kv kv;
  int32_t *tokens;         /* (tokens_cap) */
  uint32_t tokens_cap;
  fg_logits_buf *logits;   /* NULL before the first append */
  fg_ops *ops;
  fg_fwd_scratch scratch;
  fg_error err;
};

/* Makes s hold exactly the state of snap (used by restore and fork). s->kv must be released. */
fg_status fg_session_adopt(fg_session *s, const fg_snapshot *snap, fg_error *err);

/* Appends n ids like fg_session_prefill but computes no LM head: writes the last row's final-normed
 * hidden state (the head's input, n_embd floats) to hidden. On success s->logits is released
 * (fg_session_logits returns NULL until the next prefill/step); on failure the session is unchanged
 * (hidden may have been written). Used by constrained decoding (nlu/engine.c). */
fg_status fg_session_append_hidden(fg_session *s, const int32_t *ids, size_t n, float *hidden);

/* Speculative verification (nlu/engine.c, docs/SPECULATION.md). fg_session_append_rows appends n ids
 * like fg_session_append_hidden but writes the hidden rows of the last n_out positions ((n_out, n_embd)
 * floats, in order) and trims no sliding-window block, so that fg_session_rewind can take any of the
 * new positions back. All-or-nothing: on failure (FG_ERR_NOMEM, FG_ERR_ABORTED, ...) the session is
 * unchanged. */
fg_status fg_session_append_rows(fg_session *s, const int32_t *ids, size_t n, size_t n_out, float *hidden);
/* Keeps positions < keep and drops the rest (their KV rows are cleared, so the cache equals that of a
 * session that never held them; logits are released when a position is dropped), then trims the
 * sliding layers for position trim_at (s->floor <= trim_at <= keep): rewinding below trim_at is no
 * longer possible. FG_ERR_INVALID_ARG (nothing changed) for positions outside that range. No allocation. */
fg_status fg_session_rewind(fg_session *s, uint32_t keep, uint32_t trim_at);
/* Makes row (n_vocab floats) the session's logits (the logits of its last position, computed by the
 * caller with the model's head). FG_ERR_NOMEM leaves the session unchanged. */
fg_status fg_session_set_logits(fg_session *s, const float *row);

#endif /* FG_SESSION_H */
