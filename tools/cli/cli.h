/* cli.h — shared helpers of the fgemma command-line tool (includes only the public header). */
#ifndef FG_CLI_H
#define FG_CLI_H

#define FG_EXPERIMENTAL
#include "fgemma.h"

#include <stdbool.h>
#include <stdio.h>

/* A parsed command line: options (--name value / --flag) and positional arguments. */
typedef struct cli_opt {
  const char *name;  /* long name without dashes, e.g. "model" */
  char short_name;   /* e.g. 'm', or 0 */
  bool takes_value;
  const char *help;  /* text after the name in --help; NULL hides it */
} cli_opt;

typedef struct cli_args {
  const char *values[32]; /* by option index; "" for a flag that is set */
  const char *pos[256];
  int n_pos;
} cli_args;

/* Returns 0 on success; prints a one-line error and returns 2 on a bad command line. */
int cli_parse(const char *cmd, const cli_opt *opts, int argc, char **argv, cli_args *out);
const char *cli_get(const cli_opt *opts, const cli_args *a, const char *name);
bool cli_has(const cli_opt *opts, const cli_args *a, const char *name);
void cli_usage(FILE *f, const char *cmd, const char *synopsis, const char *what, const cli_opt *opts);

/* Number parsing with range checks; print an error naming the option and return false. */
bool cli_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out);
bool cli_u64(const char *opt, const char *s, uint64_t *out);
/* A duration in whole milliseconds: "30" or "30s" (seconds, fractions allowed: "0.25"), "250ms". */
bool cli_duration_ms(const char *opt, const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out);
/* --snapshot-dir DIR: an existing directory this process can read and write (else an error naming the
 * option; false). */
bool cli_snapshot_dir(const char *opt, const char *dir);
/* "2 105 7" or "2,105,7" -> malloc'd array (caller frees). */
bool cli_ids(const char *opt, const char *s, int32_t **ids, size_t *n);
/* Splits a comma list in place into at most cap items (empty ones skipped); returns the count. */
size_t cli_split_list(char *s, char **items, size_t cap);

/* --speculate on|off -> FG_NLU_SPECULATE_ON / _OFF; prints an error and returns false otherwise. */
bool cli_speculate(const char *s, uint32_t *out);
/* --constrained off|call-only|call-or-text -> FG_NLU_CONSTRAIN_*; prints an error and returns false
 * otherwise. The default everywhere is call-or-text (docs/OPTIONS.md). */
bool cli_constrained(const char *s, uint32_t *out);
/* "off", "call-only" or "call-or-text" (FG_NLU_CONSTRAIN_DEFAULT: the default's name). */
const char *cli_constrained_name(uint32_t mode);

/* Weight passes and drafts over many fg_nlu_ask calls (call --table, bench). */
typedef struct cli_spec_stats {
  uint32_t *after;  /* (cap) weight passes after the utterance chunk, per call */
  size_t n, cap;
  uint64_t passes, head_passes, tokens;
  uint64_t drafted[FG_NLU_DRAFT_SOURCES], accepted[FG_NLU_DRAFT_SOURCES];
} cli_spec_stats;
void cli_spec_add(cli_spec_stats *st, const fg_nlu_result *r);
/* "weight passes per call after the chunk: median M, p95 P ..." and acceptance per source; prefix
 * starts each line. */
void cli_spec_print(FILE *f, const char *prefix, cli_spec_stats *st);
/* "passes_after_chunk":{...},"head_passes_avg":..,"accepted_per_pass":..,"drafts":{...} (no braces around) */
void cli_spec_json(FILE *f, cli_spec_stats *st);
void cli_spec_free(cli_spec_stats *st);
/* The draft sources' names, by FG_NLU_DRAFT_* index. */
extern const char *const cli_draft_names[FG_NLU_DRAFT_SOURCES];

/* A whole file ("-" = stdin), malloc'd and NUL-terminated; *len (may be NULL) gets its size. NULL
 * after printing an error. */
char *cli_read_file(const char *path, size_t *len);
int cli_error(const char *fmt, ...);           /* "fgemma: error: ..." on stderr; returns 1 */
int cli_status_error(fg_status st, const char *what, const char *msg); /* returns 1 */
bool cli_stderr_is_tty(void);
/* Decodes the JSON string literal in s[0..n) (quotes included, trailing white space allowed) into out,
 * which must hold n bytes (decoding never grows); *out_len = bytes written (no NUL added). Returns NULL,
 * or a static message saying what is wrong. */
const char *cli_json_string(const char *s, size_t n, char *out, size_t *out_len);
double cli_now(void);
/* Writes s (n bytes, any bytes) to f as a JSON string literal through fg_json_quote: the one way the
 * CLI prints text into JSON, so every JSON line is valid UTF-8. */
void cli_json_str(FILE *f, const char *s, size_t n);

/* Loads the model named by -m/--model (or FGEMMA_MODEL) with cli_model_params(); prints the error
 * and returns NULL on failure. */
fg_model *cli_load_model(const char *path);
/* Model parameters from the command line (--head-type). */
const fg_model_params *cli_model_params(void);
/* Parameters for a reference model (eval's F32 reference): the defaults plus the command line's --lora
 * adapters, applied at run time (the exact way). */
const fg_model_params *cli_reference_params(void);
/* --lora NAME=FILE[:SCALE] (fgemma serve's named adapters) in the order given; asking for them lets
 * cli_load_model accept them (other commands refuse them). */
typedef struct cli_named_lora {
  char name[64];
  fg_lora lora;
} cli_named_lora;
size_t cli_named_loras(const cli_named_lora **out);
/* --lora-catalog NAME=CATALOG.json, in the order given (lora.path is the catalog's file). */
size_t cli_lora_catalogs(const cli_named_lora **out);
/* fg_session_params_init plus the command line's --kv-type. */
void cli_session_params_init(fg_session_params *p);

int cmd_gen_model(int argc, char **argv);
int cmd_gen_lora(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_prompt(int argc, char **argv);
int cmd_call(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_eval(int argc, char **argv);
/* eval --calls (cmd_eval_calls.c), run by cmd_eval; returns the exit status. */
int cli_eval_calls(const cli_opt *opts, const cli_args *a);
/* eval --calls' answering and scoring for other commands (tune's report): every line of the labelled set
 * data_path answered by m with catalog cat in decoding mode `constrained` (FG_NLU_CONSTRAIN_*), scored as
 * eval --calls scores it; name labels the progress line (on stderr when progress). 0, or 1 after an
 * error message; free out with cli_calls_score_free. */
typedef struct cli_calls_score {
  uint64_t n, exact, n_expect_calls, exact_calls, n_expect_text, exact_text, calls, invalid_calls, errors;
  double p50_ms;
  size_t n_items;
  bool *item_exact;      /* (n_items) */
  char (*item_lang)[16]; /* (n_items) the line's "lang", "" when none */
  char **item_utt;       /* (n_items) the utterance */
  char **item_expected;  /* (n_items) the expected answer, JSON ({"calls": [...]} or {"text": ...}) */
  char **item_answer;    /* (n_items) the answer, JSON as fg_nlu_ask gives it ("" when the engine refused) */
} cli_calls_score;
int cli_calls_score_run(const fg_model *m, const fg_catalog *cat, const char *data_path, const char *name,
                        uint32_t constrained, uint32_t n_threads, bool progress, cli_calls_score *out);
void cli_calls_score_free(cli_calls_score *s);
int cmd_perplexity(int argc, char **argv);
/* generate --batch (cmd_generate_batch.c); returns the exit status. */
int cli_generate_batch(const fg_model *m, const fg_session_params *sp, const char *path, uint32_t n_gen,
                       const char *logits_path);
int cmd_requant_head(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_tune(int argc, char **argv);

#endif
