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
/* Another reference to k (immutable, so holders on any threads may share it); NULL-safe. */
fg_constrain *fg_constrain_retain(const fg_constrain *k);
void fg_constrain_free(fg_constrain *k); /* drops one reference; NULL-safe */

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

// ----------------------------------------------------------------------------------------------
// Read access for the draft sources of speculative decoding (nlu/draft.c)

/* dst takes src's state; both must come from the same fg_constrain with the same mode and flags. */
void fg_cmatch_copy(fg_cmatch *dst, const fg_cmatch *src);

typedef enum fg_cphase {
  FG_CPH_START,  /* before the first token */
  FG_CPH_PROSE,  /* a prose answer (call-or-text) */
  FG_CPH_NAME,   /* "call:NAME{KEY:" pieces (the name joined with its first key) */
  FG_CPH_KEY,    /* ",KEY:" pieces and the close */
  FG_CPH_VALUE,  /* the members of an enum, true/false, [] or {} */
  FG_CPH_AFTER,  /* after a call with FG_NLU_MULTI_CALL: another call or a stop token */
  FG_CPH_FREE,   /* inside a free string */
  FG_CPH_NUM,    /* inside a number */
  FG_CPH_DONE
} fg_cphase;
fg_cphase fg_cmatch_phase(const fg_cmatch *m);

#define FG_CPIECE_CLOSE (-1) /* fg_cpiece.key of the close piece */

/* A literal piece still alive (or one that may follow a value, fg_cmatch_key_pieces). */
typedef struct fg_cpiece {
  const int32_t *rest; /* (n_rest) its canonical tokens still to come */
  uint32_t n_rest;
  uint32_t fn;         /* NAME: the function it names; otherwise the function of the current call */
  int32_t key;         /* NAME/KEY: the key it opens (parameter index) or FG_CPIECE_CLOSE; VALUE: the
                          parameter whose value it is; else -1 */
  bool neg;            /* NAME/KEY: the piece ends with the minus sign of a number */
  bool required;       /* NAME/KEY: the key is required */
  uint32_t member;     /* VALUE: index of the enum member (0 = true, 1 = false for booleans) */
  bool call;           /* AFTER: the piece starts another call (else it is a stop token) */
} fg_cpiece;

/* Literal phases (NAME, KEY, VALUE, AFTER): the pieces still alive; 0 in other phases. */
uint32_t fg_cmatch_n_alive(const fg_cmatch *m);
void fg_cmatch_piece(const fg_cmatch *m, uint32_t i, fg_cpiece *out);
/* FREE/NUM phases: the key pieces (and the close) that may follow the current value, whole (rest =
 * every token); at most cap are written, the count is returned. */
uint32_t fg_cmatch_key_pieces(const fg_cmatch *m, fg_cpiece *out, uint32_t cap);
/* The key whose value was generated last in the current call (KEY, FREE, NUM, VALUE phases), else -1. */
int32_t fg_cmatch_last_key(const fg_cmatch *m);
/* The declaration behind a function / parameter index (e.g. for enum member texts). */
const fg_function *fg_cmatch_function(const fg_cmatch *m, uint32_t fn);

#endif /* FG_NLU_CONSTRAIN_H */
