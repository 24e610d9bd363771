/* reliability.h — what the files of test_reliability share (tests/test_reliability.c holds main and
 * the helpers, tests/test_reliability/ one file per section): the loaded model, the fixtures, the
 * helpers and each section's entry point. */
#ifndef FG_TEST_RELIABILITY_H
#define FG_TEST_RELIABILITY_H

#define FG_EXPERIMENTAL
#include "fgemma.h"

#include "fg_internal.h" /* fg_alloc_fail_after */
#include "testutil.h"

#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern bool g_table;       /* FG_REL_TABLE=1: print the table rows */
extern bool g_emulated;    /* FG_TEST_EMULATED: the sweep visits a subset of k (alloc_failures.c) */
extern fg_model *g_model;  /* the tiny model, loaded once */
extern uint32_t g_vocab;
extern uint32_t g_n_layer;

/* A tool catalog in the cartridge format (three functions, an enum, a parameterless one). */
static const char k_catalog[] =
    "{\"id\":\"rel.v1\",\"functions\":["
    "{\"name\":\"set_timer\",\"description\":\"Start a countdown timer.\","
    "\"parameters\":{\"minutes\":{\"type\":\"integer\",\"description\":\"How long.\"}},\"required\":[\"minutes\"]},"
    "{\"name\":\"toggle_lamp\",\"description\":\"Switch the lamp.\","
    "\"parameters\":{\"state\":{\"type\":\"string\",\"enum\":[\"on\",\"off\"]}},\"required\":[\"state\"]},"
    "{\"name\":\"roll_dice\",\"description\":\"Roll a die.\"}]}";

static const char k_text[] = "<start_of_turn>user\nSet a timer for 12 minutes, bitte \xc3\xa4\xc3\xb6\xc3\xbc \xe2\x82\xac "
                             "\xf0\x9f\x98\x80 and\tmore   spaces<end_of_turn>\n\xff\xfe invalid UTF-8 \xc3";

static const char k_generated[] = "<start_function_call>call:toggle_lamp{state:<escape>on<escape>}<end_function_call>"
                                  "<start_function_call>call:set_timer{minutes:12,extra:<escape>x<escape>}"
                                  "<end_function_call> trailing prose";

/* State shared by the cases (one case runs at a time) */
typedef struct rel_fixture {
  fg_model *m;
  fg_error err;
  fg_session *s;
  fg_snapshot *snap;
  fg_catalog *cat;
  fg_nlu *nlu;
  fg_session_params params;
  uint32_t pos_before;
  float *logits_before;       /* (n_vocab) copy, or NULL when the session had none */
  fg_session_stats stats_before;
  int32_t ids[64];            /* (64) tokens appended by the case */
  size_t n_ids;
  const float *want;          /* (n_vocab) logits the case must end with */
  int32_t tok[512];           /* (512) tokenizer output */
  size_t n_tok;
  char text[4096];            /* (4096) text output */
  size_t n_text;
  fg_nlu_result res;
  const char *snap_path;
  fg_model_params mp;
} rel_fixture;
extern rel_fixture fx;

/* Fixtures made once: snapshots of one session at 20 and 250 tokens, and the logits every case must
 * reproduce (computed by sessions that never saw a failure). */
typedef struct rel_references {
  int32_t prefix[250]; /* (250) */
  int32_t more[64];    /* (64) */
  fg_snapshot *at20, *at250;
  float *fresh45;      /* (n_vocab) after more[0..45) from position 0 */
  float *at20_45;      /* after prefix[0..20) + more[0..45) */
  float *at20_1;       /* after prefix[0..20) + more[0] */
  float *at250_20;     /* after prefix[0..250) + more[0..20) */
  char snap20_path[600];
  int32_t tok_ref[512];
  size_t n_tok_ref;
  char detok_ref[4096];
  size_t n_detok_ref;
  char parse_ref[4096];
  size_t n_parse_ref;
  char ask_ref[4096];
} rel_references;
extern rel_references ref;

/* test_reliability.c */
void table_row(const char *area, const char *input, fg_status st, const char *msg);
void random_ids(int32_t *ids, size_t n);
const char *scratch_path(const char *suffix);
bool same_logits(const float *a, const float *b);
fg_session_params small_params(uint32_t n_batch, uint32_t n_threads, uint32_t n_ctx);

/* alloc_failures.c */
void record_session(void);
void check_unchanged(const char *what);
fg_nlu_params nlu_params(const char *snapshot_path);
void make_references(void);
void test_alloc_failures(void);

/* bad_arguments.c */
void test_bad_arguments(void);

/* abort.c */
void test_abort(void);

/* snapshot_files.c */
void write_all(const char *path, const uint8_t *b, size_t n);
void put_u32(uint8_t *p, uint32_t v);
void test_snapshot_files(void);
void test_errmsg_threads(void);

/* free_after_model.c */
void test_free_after_model(void);

/* model_files.c */
void test_model_files(void);

/* hostile_table.c */
void test_table(void);

#endif
