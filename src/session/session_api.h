/* session_api.h — the session as the layers above it (the NLU engine, src/nlu/) use it besides
 * fgemma.h: the model's vocabulary and head dimensions, the session's context and tokens, appends that
 * return hidden rows instead of logits, rewinds, and the LM head over those rows (model/head.c: the
 * same kernels and softcap as the forward's logits). No struct internals and no model/ or kernels/
 * header: src/nlu/ includes this header, never session.h. */
#ifndef FG_SESSION_API_H
#define FG_SESSION_API_H

#include "fg_internal.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ----------------------------------------------------------------------------------------------
// The model, as the engine needs it

/* Reference counting (model.c; the same declarations as model/model.h's). The three readers below are
 * defined in session.c, which sees the model's struct. */
const fg_model *fg_model_retain(const fg_model *m);
void fg_model_release(const fg_model *m);
const fg_vocab *fg_model_vocab(const fg_model *m); /* NULL when the file has no tokenizer metadata */
uint32_t fg_model_n_embd(const fg_model *m);       /* length of a hidden row (the head's input) */
uint32_t fg_model_n_vocab(const fg_model *m);      /* rows of the head: logits per hidden row */

// ----------------------------------------------------------------------------------------------
// Session and snapshot state

/* fg_session_params.kv_type values (fgemma.h), tensor/dtype.h's FG_TYPE_F32 and FG_TYPE_F16 */
enum { FG_SESSION_KV_F32 = 0, FG_SESSION_KV_F16 = 1 };

uint32_t fg_session_n_ctx(const fg_session *s);         /* positions the session holds */
uint32_t fg_session_n_batch(const fg_session *s);       /* positions per internal chunk of a prefill */
uint32_t fg_session_kv_type(const fg_session *s);       /* FG_SESSION_KV_F32 or _F16 */
const int32_t *fg_session_tokens(const fg_session *s);  /* (fg_session_position) ids appended so far */
const int32_t *fg_snapshot_tokens(const fg_snapshot *snap); /* (fg_snapshot_position) its ids */

// ----------------------------------------------------------------------------------------------
// Appends without logits, rewinds

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

// ----------------------------------------------------------------------------------------------
// The LM head over hidden rows (model/head.c)

/* The full head over nb hidden rows X ((nb, n_embd)) into Y ((nb, n_vocab)); softcap: each logit
 * softcapped as the session's own logits are (fg_softcap with fg_session_final_softcap), else left raw. */
fg_status fg_session_head_full(fg_session *s, const float *X, size_t nb, float *Y, bool softcap);
/* Rows ids[0..n) of the head for one hidden row x (n_embd): y ((n)) softcapped logits of those ids. */
fg_status fg_session_head_rows(fg_session *s, const int32_t *ids, uint32_t n, const float *x, float *y);
/* The model's final softcap: fg_softcap(cap, logit) turns a raw logit of fg_session_head_full into the
 * session's logit (cap 0: no softcap). */
float fg_session_final_softcap(const fg_session *s);
/* Index of the largest of x[0..n), ties to the lowest index (the session's kernels, threads). */
size_t fg_session_argmax(fg_session *s, const float *x, size_t n);
/* The first largest of the allowed raw logits x[i] (allowed[i] != 0) softcapped as the session's are
 * (fg_ops_argmax_allowed with fg_session_final_softcap), SIZE_MAX when none is allowed (the threads). */
size_t fg_session_argmax_allowed(fg_session *s, const float *x, const uint8_t *allowed, size_t n);

#endif /* FG_SESSION_API_H */
