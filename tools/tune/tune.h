/* tune.h — `fgemma tune` (docs/TUNE.md): the spec (*.tune.json) parsed and checked against its
 * catalog, its phrasings expanded into training and dev data, the files of the data stage. Uses only
 * the public header (and cJSON, as the other tools). */
#ifndef FG_TUNE_H
#define FG_TUNE_H

#ifndef FG_EXPERIMENTAL
#define FG_EXPERIMENTAL
#endif
#include "fgemma.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ----------------------------------------------------------------------------------------------
// A growable byte buffer (always NUL-terminated)

typedef struct tn_buf {
  char *s;
  size_t n, cap;
} tn_buf;
bool tn_buf_add(tn_buf *b, const char *s, size_t n);
bool tn_buf_str(tn_buf *b, const char *s);
void tn_buf_free(tn_buf *b);

// ----------------------------------------------------------------------------------------------
// Deterministic randomness: splitmix64 steps and a seeded FNV-1a hash

typedef struct tn_rng {
  uint64_t s;
} tn_rng;
uint64_t tn_rng_next(tn_rng *r);
uint32_t tn_rng_below(tn_rng *r, uint32_t n); /* uniform in [0, n), n > 0 */
double tn_rng_unit(tn_rng *r);                /* uniform in [0, 1) */
uint64_t tn_hash(uint64_t seed, const char *a, const char *b, const char *c);

// ----------------------------------------------------------------------------------------------
// Number words (de, en built in); false for another language or a number out of range

bool tn_number_words(const char *lang, long long v, tn_buf *out);

// ----------------------------------------------------------------------------------------------
// The catalog as the spec needs it: functions, their arguments in rendered order (sorted by name,
// case-insensitively), types, enums, required

enum { TN_T_STRING, TN_T_INTEGER, TN_T_NUMBER, TN_T_BOOLEAN, TN_T_OTHER };

typedef struct tn_arg {
  const char *name;
  int type;            /* TN_T_* */
  const cJSON *enums;  /* the enum array, or NULL */
  bool required;
} tn_arg;

typedef struct tn_func {
  const char *name;
  tn_arg *args;        /* (n_args) in the catalog's rendered order */
  size_t n_args;
} tn_func;

// ----------------------------------------------------------------------------------------------
// Value lists and phrasings

typedef struct tn_entry {
  const cJSON *value;  /* the argument's value (string, number or boolean) */
  const cJSON *say;    /* array of strings, or NULL: the value as written */
  const cJSON *forms;  /* object form -> array of strings, or NULL */
  bool held_out;       /* a free-text value kept for dev */
} tn_entry;

typedef struct tn_list {
  const char *key;     /* "room", "set_blinds.action" or "_please" */
  int lang;            /* index into the spec's languages */
  bool numbers;        /* {"numbers": [lo, hi]} */
  long long lo, hi;
  tn_entry *e;         /* (n) */
  size_t n;
  bool split;          /* free text (a string argument without enum, >= 3 entries): some held out */
  bool no_new_names;   /* listed in "no_new_names": never replaced by a new name */
} tn_list;

enum { TN_TEXT, TN_SEQ, TN_ALT, TN_OPT, TN_SLOT };

typedef struct tn_node {
  int kind;
  char *text;           /* TEXT: the literal; SLOT: the name */
  char *form;           /* SLOT: the form after '.', or NULL */
  int arg;              /* SLOT: the argument's index in the function, or -1 (text only) */
  const tn_list *list;  /* SLOT: the list that fills it (resolved per language) */
  struct tn_node **kids; /* (n_kids) SEQ: parts; ALT: branches (each a SEQ); OPT: one SEQ */
  size_t n_kids;
} tn_node;

typedef struct tn_phrasing {
  const char *text;     /* as written in the spec */
  tn_node *root;        /* SEQ */
  const cJSON *fixed;   /* the phrasing's fixed "args", or NULL */
  int func;             /* index into funcs, or -1: a no_fit request */
  int lang;
  bool dev;             /* held out for dev */
} tn_phrasing;

typedef struct tn_example {
  const char *utterance;
  int lang;
  const cJSON *expected; /* {"calls": [...]} or {"text": ...} */
  bool train;
} tn_example;

#define TN_MAX_LANGS 16

typedef struct tn_spec {
  char *path;            /* the spec file */
  char *dir;             /* its directory ("." when none) */
  char *catalog_path;    /* resolved */
  cJSON *json;           /* the spec (owned) */
  cJSON *catalog_json;   /* the catalog (owned) */
  char *catalog_text;    /* the catalog file (owned), for fg_catalog_parse */
  size_t catalog_len;
  fg_catalog *catalog;
  tn_func *funcs;        /* (n_funcs) */
  size_t n_funcs;
  const char *langs[TN_MAX_LANGS];
  size_t n_langs;
  tn_list *lists;        /* (n_lists) */
  size_t n_lists;
  tn_phrasing *phr;      /* (n_phr) function phrasings, then no_fit ones */
  size_t n_phr;
  tn_example *ex;        /* (n_ex) */
  size_t n_ex;
  const char *no_fit_answer[TN_MAX_LANGS];
  const cJSON *fill_before[TN_MAX_LANGS], *fill_after[TN_MAX_LANGS]; /* arrays of strings, or NULL */
  uint64_t seed;
  uint32_t train_examples;
  double dev_fraction, p_no_fit;
  double p_new_names; /* share of training draws of copied free-text values replaced by a new name made of two of the list's */
} tn_spec;

/* Reads, parses and checks the spec: every problem is printed on stderr ("fgemma: error: SPEC: ...",
 * naming function, language and phrasing); returns NULL when there was any. */
tn_spec *tn_spec_load(const char *path);
void tn_spec_free(tn_spec *s);
/* The list that fills {name} (an argument of func, or a "_" list when func < 0 or name starts with '_')
 * in language lang, or NULL. */
const tn_list *tn_spec_list(const tn_spec *s, int func, const char *name, int lang);
/* "NAME{key:<escape>text<escape>,n:3}" body: the model's answer for expected ({"calls"} or {"text"}),
 * appended to out (with the control tokens by name). */
bool tn_answer_text(const tn_spec *s, const cJSON *expected, tn_buf *out);

// ----------------------------------------------------------------------------------------------
// Expansion

typedef struct tn_item {
  char *utterance;
  cJSON *expected;   /* {"calls":[{"name","args"}]} or {"text": ...} (owned) */
  int lang;
  int func;          /* -1: no call */
  int phrasing;      /* index into spec->phr, or -1 (an example) */
  bool held_values;  /* dev: drew held-out values */
  bool new_name;     /* train: a copied value replaced by a new name (p_new_names) */
} tn_item;

typedef struct tn_data {
  tn_item *train, *dev; /* (n_train), (n_dev) */
  size_t n_train, n_dev, cap_train, cap_dev;
  size_t dropped_dev;   /* dev lines equal to a training utterance (or to an earlier dev line) */
} tn_data;

/* Expands the spec into training and dev items (deterministic for the spec's seed). 0 or -1 after an
 * error message. */
int tn_expand(const tn_spec *s, tn_data *d);
void tn_data_free(tn_data *d);

/* The data stage: train.jsonl, dev.jsonl, summary.json, data.bin, golden.f32, golden.json (and, for a
 * base without FunctionGemma's control tokens, control-tokens.gguf) in dir, each through a temporary
 * file. base: the base GGUF. 0 or an exit status after an error message. */
int tn_write_data(const tn_spec *s, const tn_data *d, const char *dir, const char *base, uint32_t threads, bool quiet);
/* Loads base for tokenizing: as is when it has the control tokens, else with dir/control-tokens.gguf
 * (written when missing) at scale 0. NULL after an error message. */
fg_model *tn_load_base(const char *base, const char *dir, bool quiet, bool *override_out);

#endif
