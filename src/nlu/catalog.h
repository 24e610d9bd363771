/* catalog.h — tool catalogs, FunctionGemma prompt rendering, parsing of generated calls, stop rule.
 *
 * Pure text processing; no model involved. Internal to libfgemma (not installed).
 *
 * Pipeline: the app's catalog JSON -> fg_catalog_parse() -> an immutable fg_catalog (functions in
 * catalog order, parameters sorted by name) -> fg_catalog_render_prefix() gives the cached prompt
 * prefix; every utterance goes through fg_render_utterance(); the generated text (special tokens
 * as their names) goes through fg_call_parse() to `{"calls":[...],"text":"..."}`; while decoding,
 * fg_nlu_stopper_feed() says when to stop.
 *
 * Catalog formats accepted (both render to the same prompt):
 *   a) the cartridge schema: {"id":..., "functions":[{"name","description",
 *      "parameters":{NAME:{"type","description","enum"}}, "required":[...]}]}
 *   b) OpenAI/HF tools: [{"type":"function","function":{"name","description","parameters":
 *      {"type":"object","properties":{...},"required":[...]}}}], the same list without the
 *      type/function wrapper, a single such tool, or {"tools":[...]}.
 * A property definition is {"type","description","enum","items","properties","required","nullable"}
 * in both formats; other keys are ignored. Types: string, integer, number, boolean, array, object
 * (case-insensitive in the input, rendered upper-case).
 *
 * Refused (FG_ERR_FORMAT, the message names the function and the field): text that is not JSON
 * (with line/column), no functions, a missing or malformed name (allowed: [A-Za-z_][A-Za-z0-9_.-]*,
 * at most FG_CATALOG_MAX_NAME bytes), a duplicate function or parameter, a missing or unknown type,
 * an enum that is not a non-empty array of strings or sits on a non-string parameter, a `required`
 * that is not an array of strings or names an unknown parameter (or one twice), nesting deeper than
 * FG_CATALOG_MAX_DEPTH, and any description or enum value containing a control-token spelling
 * (see fg_nlu_find_control_token): the prefix is tokenized with special-token parsing on, so such
 * text would turn into structure. Refusing is safer than any rewriting the model was not trained on.
 *
 * cJSON and memory: cJSON parses the catalog with its default allocator into a temporary tree that
 * is deleted before fg_catalog_parse returns; everything the catalog keeps is copied into an arena
 * allocated with fg_malloc. We deliberately do not call cJSON_InitHooks: it is process-global state
 * shared with any other cJSON user in the application, and racy to set from a library.
 *
 * Thread safety: a parsed fg_catalog is immutable and may be used from any number of threads.
 */
#ifndef FG_NLU_CATALOG_H
#define FG_NLU_CATALOG_H

#include "fg_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_CATALOG_MAX_NAME 128u  /* bytes in a function or parameter name */
#define FG_CATALOG_MAX_DEPTH 8u   /* nesting of object/array parameters below a function */

/* ----------------------------------------------------------------------------------------------
 * Catalog: an immutable tree. Every pointer stays valid until fg_catalog_free.
 */
typedef enum fg_param_type {
  FG_PARAM_STRING = 0,
  FG_PARAM_INTEGER = 1,
  FG_PARAM_NUMBER = 2,
  FG_PARAM_BOOLEAN = 3,
  FG_PARAM_ARRAY = 4,
  FG_PARAM_OBJECT = 5
} fg_param_type;

typedef struct fg_param fg_param;
struct fg_param {
  const char *name;                 /* NULL for a function's root object and for array items */
  const char *description;          /* NULL when absent or empty (then not rendered) */
  fg_param_type type;
  bool required;                    /* listed in the parent object's "required" */
  bool nullable;                    /* "nullable": true */
  uint32_t n_enum;
  const char *const *enum_values;   /* (n_enum) in catalog order; only on STRING */
  const fg_param *items;            /* ARRAY: element schema, or NULL when not given */
  uint32_t n_props;
  const fg_param *props;            /* OBJECT: (n_props) sorted like Jinja's dictsort */
  uint32_t n_required;
  const uint32_t *required_order;   /* (n_required) indices into props, in the catalog's order */
};

typedef struct fg_function {
  const char *name;
  const char *description;          /* "" when absent (rendered as an empty string) */
  fg_param params;                  /* type OBJECT, name NULL; n_props may be 0 */
} fg_function;

typedef struct fg_catalog fg_catalog;

/* Parses a catalog (json need not be NUL-terminated). err may be NULL. On failure *out = NULL. */
fg_status fg_catalog_parse(const char *json, size_t len, fg_catalog **out, fg_error *err);
void fg_catalog_free(fg_catalog *c); /* NULL is a no-op; drops the caller's reference */
/* Reference counting (atomic): an NLU engine holds its catalog, so the caller may free the catalog
 * first. retain returns c (NULL-safe); release drops one reference and frees on the last. */
const fg_catalog *fg_catalog_retain(const fg_catalog *c);
void fg_catalog_release(const fg_catalog *c);
uint32_t fg_catalog_refs(const fg_catalog *c); /* the current count (for tests) */

size_t fg_catalog_n_functions(const fg_catalog *c);
const fg_function *fg_catalog_function(const fg_catalog *c, size_t i); /* NULL when i is out of range */
/* The function with exactly this name, or NULL; *index (may be NULL) receives its position. */
const fg_function *fg_catalog_find(const fg_catalog *c, const char *name, size_t len, size_t *index);
/* The catalog's "id" (cartridge format) or "" */
const char *fg_catalog_id(const fg_catalog *c);

/* The parameter of object p with exactly this name, or NULL. */
const fg_param *fg_param_find(const fg_param *p, const char *name, size_t len);
/* Index of value among p's enum values, or -1. */
int32_t fg_param_enum_index(const fg_param *p, const char *value, size_t len);
/* "STRING", "INTEGER", ... */
const char *fg_param_type_upper(fg_param_type t);

/* ----------------------------------------------------------------------------------------------
 * Rendering. Every renderer writes the text plus a terminating NUL and sets *n_out to the text's
 * length (without the NUL). If cap < *n_out + 1 it returns FG_ERR_BUFFER_TOO_SMALL, *n_out is
 * still the text's length (so allocate *n_out + 1) and buf's contents are unspecified; buf may be
 * NULL when cap == 0.
 */
#define FG_NLU_PREAMBLE "You are a model that can do function calling with the following functions"

/* "<start_of_turn>developer\n" FG_NLU_PREAMBLE, one <start_function_declaration>...
 * <end_function_declaration> per function in catalog order, "<end_of_turn>\n<start_of_turn>user\n".
 * BOS is not rendered (the runtime adds it). */
fg_status fg_catalog_render_prefix(const fg_catalog *c, char *buf, size_t cap, size_t *n_out);
/* "declaration:NAME{...}" of function i, without the surrounding control tokens. */
fg_status fg_catalog_render_function(const fg_catalog *c, size_t i, char *buf, size_t cap, size_t *n_out);
/* TEXT "<end_of_turn>\n<start_of_turn>model\n". TEXT is trimmed of ASCII white space at both ends
 * (as the chat templates `| trim` user content). FG_ERR_INVALID_ARG when TEXT contains a
 * control-token spelling (that would be prompt injection) or is empty after trimming. */
fg_status fg_render_utterance(const char *text, size_t len, char *buf, size_t cap, size_t *n_out);

/* Offset of the first control-token spelling in s (e.g. "<escape>", "<end_of_turn>", "<eos>",
 * "<unused12>"), or -1. *tok_len (may be NULL) receives its length. */
ptrdiff_t fg_nlu_find_control_token(const char *s, size_t len, size_t *tok_len);

/* ----------------------------------------------------------------------------------------------
 * Parsing generated text into JSON, size-needed semantics as for the renderers:
 *
 *   {"calls":[{"name":"set_volume","args":{"level":20}}],"text":""}
 *
 * - calls: every <start_function_call>call:NAME{...} in order; args are typed: <escape>s<escape> is a
 *   string, bare numbers are numbers (integers stay integers, the digits are kept verbatim, so huge
 *   numbers are not rounded), true/false/null, nested {..} objects and [..] arrays; other bare words
 *   are strings. With a catalog, top-level values are coerced to the declared type when lossless
 *   (bare 5 for a STRING -> "5"; <escape>5<escape> for an INTEGER -> 5; <escape>true<escape> for a
 *   BOOLEAN -> true).
 * - text: the prose outside calls, trimmed; "" when none.
 * - Per-call flags, present only when they apply:
 *     "snapped_from":"Set-Volume"  the generated name was not in the catalog; "name" is the one unique
 *                               function whose lower-cased letters and digits equal it or are within
 *                               edit distance 2 (and under half its length) of it: the cases file's
 *                               name-snapping rule; flags refer to the snapped function
 *     "unknown_function":true   the name is not in the catalog and nothing snapped
 *     "unknown_args":[k,...]    keys the function does not declare (the values are kept)
 *     "bad_type":[k,...]        values that do not match the declared type (kept as parsed)
 *     "bad_enum":[k,...]        string values not among the declared enum values (kept)
 *     "missing_required":[k,..] required parameters without a value
 *     "duplicate_args":[k,...]  keys given twice (the first value is kept)
 *     "malformed":true          a syntax error inside the call; the args parsed before it are kept
 *     "truncated":true          the text ended (or a stop token came) before the call was closed
 *                               by <end_function_call>; whatever parsed completely is kept, a
 *                               partial value is dropped
 * - "truncated":true at the top level when any call is truncated.
 * Parsing stops at <end_of_turn>, <eos>, <start_function_response> and <start_of_turn>; several
 * calls in a row are all returned. c may be NULL (no checks, no coercion). Invalid UTF-8 in the
 * generation is replaced by U+FFFD, so the output is always valid JSON.
 * Errors: FG_ERR_INVALID_ARG (gen NULL with len > 0, n_out NULL), FG_ERR_NOMEM,
 * FG_ERR_BUFFER_TOO_SMALL. A malformed generation is not an error: it is reported in the JSON. */
fg_status fg_call_parse(const fg_catalog *c, const char *gen, size_t len, char *json_out, size_t cap,
                        size_t *n_out, fg_error *err);

/* ----------------------------------------------------------------------------------------------
 * Stop rule while decoding. Feed the text of every generated token (control tokens by their names,
 * e.g. "<end_function_call>"); the piece that triggers a stop belongs to the generation (the parser
 * copes with it).
 */
/* The reasons are fg_nlu_stop (fgemma.h); fg_nlu_stop_name is public too. */
/* The stop reason if piece is exactly one of the stop tokens, else FG_NLU_CONTINUE. */
fg_nlu_stop fg_nlu_stop_piece(const char *piece, size_t len);

#ifndef FG_NLU_MULTI_CALL /* also in fgemma.h */
#define FG_NLU_MULTI_CALL 0x1u /* after <end_function_call>, go on if the next piece is <start_function_call> */
#endif

typedef struct fg_nlu_stopper {
  uint32_t max_tokens;        /* 0 = unlimited */
  uint32_t max_prose_tokens;  /* stop after this many pieces when the first piece was not
                                 <start_function_call>; 0 = off */
  uint32_t flags;             /* FG_NLU_* */
  uint32_t n_fed;             /* pieces fed so far */
  uint32_t state;             /* internal */
} fg_nlu_stopper;

void fg_nlu_stopper_init(fg_nlu_stopper *s, uint32_t max_tokens, uint32_t max_prose_tokens, uint32_t flags);
/* Returns FG_NLU_CONTINUE or why to stop now; once stopped it keeps returning the same reason. */
fg_nlu_stop fg_nlu_stopper_feed(fg_nlu_stopper *s, const char *piece, size_t len);

#endif /* FG_NLU_CATALOG_H */
