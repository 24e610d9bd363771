/* constrain.h — catalog-constrained decoding: a token-level automaton over the tokenizer's vocabulary
 * that only admits FunctionGemma calls the catalog allows. Internal to libfgemma; design, equivalence
 * argument and limits in docs/CONSTRAINED.md.
 *
 * Language (call-only; call-or-text adds prose, see below), control tokens by name:
 *   answer := call (after <end_function_call>: call again with FG_NLU_MULTI_CALL, or a stop token)
 *   call   := <start_function_call> "call:" NAME "{" [arg ("," arg)*] "}" <end_function_call>
 *   arg    := KEY ":" value       each declared key at most once; "}" only when every required key
 *                                 has been given; ARRAY/OBJECT keys are offered only when required
 *   value  := <escape> ENUM <escape>          STRING with enum
 *           | <escape> TEXT <escape>          STRING: 0..FG_CONSTRAIN_MAX_STRING_TOKENS tokens whose
 *                                             text is non-empty and has no '<' (so no control token
 *                                             and no spelling of one), then <escape> is forced
 *           | -?(0|[1-9][0-9]*)               INTEGER, at most FG_CONSTRAIN_MAX_INT_DIGITS digits
 *           | the same with (.[0-9]+)?        NUMBER, at most FG_CONSTRAIN_MAX_FRAC_DIGITS decimals
 *           | true | false                    BOOLEAN
 *           | [] | {}                         ARRAY | OBJECT (required ones only)
 * Literal pieces are emitted only in their canonical tokenization (the tokenizer's own encoding of
 * the piece): "call:NAME{KEY:" (one per function and first key, plus "call:NAME{}<end_function_call>"
 * when nothing is required), ",KEY:" for later keys, "}<end_function_call>", "<escape>ENUM<escape>",
 * true/false, [] / {}. A key piece of a free string ends with its opening <escape>, one of an
 * INTEGER/NUMBER has a variant ending in ":-" (negative numbers). Pieces are cut where the tokenizer
 * does not merge across the cut (it merges "{}", ":-", "[]}"), so the canonical tokenization of a whole
 * call is the concatenation of its pieces' (except after [] / {}). The allowed set at a literal
 * position is the set of next canonical tokens of the pieces still alive; one token left = forced.
 * Numbers and free text are matched token by token on the decoded text.
 * Call-or-text: the first token may also be any prose token (anything but <start_function_call>,
 * <end_function_call> and <escape>); prose then runs until <end_of_turn>, <eos>,
 * <start_function_response> or <start_of_turn>, with the same token set.
 *
 * Thread safety: an fg_constrain is immutable after creation (shareable); an fg_cmatch is one
 * decode's state, used by one thread. */
#ifndef FG_NLU_CONSTRAIN_H
#define FG_NLU_CONSTRAIN_H

#include "nlu/catalog.h"
#include "tokenizer/tokenizer.h"

#define FG_CONSTRAIN_MAX_STRING_TOKENS 32u /* free-text tokens per string value, then <escape> */
#define FG_CONSTRAIN_MAX_INT_DIGITS 9u     /* digits before the point (fits int32) */
#define FG_CONSTRAIN_MAX_FRAC_DIGITS 6u    /* digits after the point (NUMBER) */

typedef struct fg_constrain fg_constrain;
typedef struct fg_cmatch fg_cmatch;

/* Compiles the catalog against the vocabulary: canonical tokenizations of every literal piece and
 * the per-token tables (one pass over the vocabulary). c and v must outlive the result.
 * FG_ERR_UNSUPPORTED when the vocabulary lacks a control token of the call syntax or adds a space
 * prefix (then a piece's tokenization would depend on its context). */
fg_status fg_constrain_create(const fg_catalog *c, const fg_vocab *v, fg_constrain **out, fg_error *err);
void fg_constrain_free(fg_constrain *k); /* NULL-safe */

/* The allowed next tokens. Either a list (mask == NULL): ids (n) strictly ascending; or a mask
 * (ids == NULL): mask[id] != 0 for the n allowed ids of the vocabulary (n_vocab entries).
 * n == 0: the answer is complete. Borrowed until the next fg_cmatch_* call. */
typedef struct fg_callowed {
  const int32_t *ids;  /* (n) or NULL */
  const uint8_t *mask; /* (n_vocab) or NULL */
  uint32_t n;
} fg_callowed;

/* mode: FG_NLU_CONSTRAIN_CALL_ONLY or _CALL_OR_TEXT; flags: FG_NLU_MULTI_CALL. */
fg_status fg_cmatch_create(const fg_constrain *k, uint32_t mode, uint32_t flags, fg_cmatch **out);
void fg_cmatch_free(fg_cmatch *m); /* NULL-safe */
void fg_cmatch_reset(fg_cmatch *m); /* back to the start state */
void fg_cmatch_allowed(fg_cmatch *m, fg_callowed *out);
/* Advances by one token; FG_ERR_INVALID_ARG (state unchanged) when id is not allowed. */
fg_status fg_cmatch_accept(fg_cmatch *m, int32_t id);
/* True outside a call (start, prose, between calls): where a token budget may end the answer. */
bool fg_cmatch_between_calls(const fg_cmatch *m);
bool fg_cmatch_done(const fg_cmatch *m);
/* True once the answer is prose (call-or-text). */
bool fg_cmatch_in_prose(const fg_cmatch *m);

#endif /* FG_NLU_CONSTRAIN_H */
