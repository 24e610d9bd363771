/* session.h — internals of fg_session and fg_snapshot shared by session.c and snapshot.c (and tests);
 * the layers above the session use session_api.h instead. */
#ifndef FG_SESSION_H
#define FG_SESSION_H

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "session/session_api.h"

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

#endif /* FG_SESSION_H */
