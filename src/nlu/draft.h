/* draft.h — the draft sources of speculative decoding (docs/SPECULATION.md): cheap guesses of the next
 * tokens of an answer, which the NLU engine (nlu/engine.c) verifies with one batched forward. A guess
 * never changes the answer, only how many weight passes it takes. Internal to libfgemma.
 *
 * Sources, in order of trust (FG_NLU_DRAFT_* in fgemma.h):
 *   FORCED   the automaton allows one token (free with a constraint; without one the model may leave
 *            the grammar, so the token is verified like any other)
 *   COPY     inside a string value: the rest of the utterance span the value started to copy, chosen
 *            on the text and tokenized in context (the value's text plus the span), then <escape>;
 *            inside a number: the rest of the utterance's digit run
 *   CATALOG  the function when one is left, a required key or the close, the enum member that the
 *            utterance spells, <start_function_call> at the start
 *   CACHE    the answer this engine gave to the same normalized utterance before
 *   CONTEXT  where no other source has a token: what followed the answer's last FG_DRAFT_LOOK_MIN or
 *            more tokens at their latest earlier occurrence in the context (the prompt: catalog prefix
 *            and utterance, then the answer itself), copied on from there
 * A drafter is one engine's: used by one thread at a time. */
#ifndef FG_NLU_DRAFT_H
#define FG_NLU_DRAFT_H

#include "nlu/constrain.h"

/* What the model must compute at a position (the allowed set before a drafted token). */
enum {
  FG_DRAFT_KIND_FORCED = 0, /* one token (or none): no head */
  FG_DRAFT_KIND_LIST = 1,   /* a short list: the sparse head */
  FG_DRAFT_KIND_MASK = 2,   /* a mask (free text, prose): the full head */
  FG_DRAFT_KIND_FREE = 3    /* no automaton: the full head */
};

#define FG_DRAFT_CACHE_N 16           /* answers remembered per engine */
#define FG_DRAFT_CACHE_KEY 256        /* longest normalized utterance cached, bytes */
#define FG_DRAFT_CACHE_TOKENS 128     /* longest answer cached, tokens */
#define FG_DRAFT_LOOK_MIN 2           /* context source: the shortest suffix of the answer looked up */
#define FG_DRAFT_LOOK_MAX 4           /* ... and the longest (the longest that occurs wins) */

/* Test hook: proposes up to cap tokens after gen[0..n_gen); they replace every other source (counted
 * as FG_NLU_DRAFT_CACHE) and are drafted as given up to the first the constraint refuses (no length
 * rule, no trimming). */
typedef size_t (*fg_draft_hook)(void *user_data, const int32_t *gen, size_t n_gen, int32_t *out, size_t cap);

typedef struct fg_drafter fg_drafter;

/* k: the compiled catalog (NULL: no automaton; only the cache and the hook propose). cache: keep
 * earlier answers (FG_NLU_DRAFT_CACHE). */
fg_status fg_drafter_create(const fg_constrain *k, const fg_vocab *v, bool cache, fg_drafter **out);
void fg_drafter_free(fg_drafter *d); /* NULL-safe */

/* A new utterance (the text the user gave): the copy source's text, the cache's key. FG_ERR_NOMEM. */
fg_status fg_drafter_begin(fg_drafter *d, const char *utt, size_t len);

/* The context of this utterance's answer for the CONTEXT source: the tokens before the answer, in two
 * parts (the prefix's, the utterance's), copied. FG_ERR_NOMEM. */
fg_status fg_drafter_context(fg_drafter *d, const int32_t *a, size_t na, const int32_t *b, size_t nb);

/* Proposes *n_out <= cap tokens that continue gen[0..n_gen). state: the automaton after gen (NULL when
 * there is none or it lost track of the answer). verify_forced: forced tokens must be verified (no
 * constraint). out (cap) the tokens, src (cap) their FG_NLU_DRAFT_* sources, kind (cap + 1) the
 * FG_DRAFT_KIND_* before each token and, at kind[*n_out], after the last. The length adapts: a token
 * is drafted while the estimated chance that the model agrees with the draft up to it is at least
 * the cost of the row it adds, relative to a decode step (measured with bench_spec, 270m Q8_0: an extra
 * row ≈ 10 % of a step for the body, ≈ 25 % with the full head). With a constraint the draft does not
 * end on rows whose next token is forced. FG_ERR_NOMEM (tokenizer scratch). */
#define FG_DRAFT_MIN_REACH 0.1f       /* a row that needs no head or a sparse one */
#define FG_DRAFT_MIN_REACH_FULL 0.25f /* a row that needs the full head */
fg_status fg_drafter_propose(fg_drafter *d, const fg_cmatch *state, const int32_t *gen, size_t n_gen,
                             bool verify_forced, size_t cap, int32_t *out, uint8_t *src, uint8_t *kind, size_t *n_out);

/* A drafted token the model decided on: agreed or not (the per-source acceptance estimates). */
void fg_drafter_feedback(fg_drafter *d, uint32_t src, bool accepted);

/* The answer is complete: remembered for the cache (when it fits), value lengths learned. No allocation. */
void fg_drafter_end(fg_drafter *d, const int32_t *gen, size_t n_gen);

void fg_drafter_set_hook(fg_drafter *d, fg_draft_hook fn, void *user_data);

#endif /* FG_NLU_DRAFT_H */
