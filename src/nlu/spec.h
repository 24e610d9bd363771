/* spec.h — speculative decoding in the NLU engine (docs/SPECULATION.md): internal limits and the hooks
 * the tests use. Internal to libfgemma. */
#ifndef FG_NLU_SPEC_H
#define FG_NLU_SPEC_H

#include "nlu/draft.h"
#include "session/session_api.h"

#define FG_NLU_DEFAULT_DRAFT 8u /* fg_nlu_params.max_draft = 0 */
#define FG_NLU_MAX_DRAFT 32u

/* Tests: the engine's session, as the last fg_nlu_ask left it. */
fg_session *fg_nlu_session(fg_nlu *e);
/* Tests: the tokens of the last answer given with speculation on (*n = 0 otherwise). */
const int32_t *fg_nlu_answer_ids(const fg_nlu *e, size_t *n);
/* Tests: every draft comes from fn (NULL: the built-in sources again). No effect with speculation off. */
void fg_nlu_set_draft_hook(fg_nlu *e, fg_draft_hook fn, void *user_data);

/* Simulation (bench/spec_sim.c, tests): with speculation on, every token a head would choose is the
 * teacher's instead (no head is computed); the passes, drafts and acceptance are those the engine would
 * have with a model that answers like the teacher. The teacher must keep to the constraint, if any
 * (else FG_ERR_INTERNAL). NULL: the model again. */
typedef int32_t (*fg_nlu_teacher)(void *user_data, const int32_t *gen, size_t n_gen);
void fg_nlu_set_teacher(fg_nlu *e, fg_nlu_teacher fn, void *user_data);

#endif /* FG_NLU_SPEC_H */
