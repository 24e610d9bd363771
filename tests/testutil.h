/* testutil.h — a tiny assertion layer for the ctest executables. A failed CHECK prints the file, the
 * line and the values, counts the failure and goes on; fg_test_finish() gives the exit code. */
#ifndef FG_TESTUTIL_H
#define FG_TESTUTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern int fg_test_checks;
extern int fg_test_failures;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    fg_test_checks++;                                                                     \
    if (!(cond)) {                                                                        \
      fg_test_failures++;                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);            \
    }                                                                                     \
  } while (0)

#define CHECK_MSG(cond, ...)                                                              \
  do {                                                                                    \
    fg_test_checks++;                                                                     \
    if (!(cond)) {                                                                        \
      fg_test_failures++;                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);            \
      fprintf(stderr, __VA_ARGS__);                                                       \
      fputc('\n', stderr);                                                                \
    }                                                                                     \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                \
  do {                                                                                    \
    long long fg_a_ = (long long)(a), fg_b_ = (long long)(b);                             \
    CHECK_MSG(fg_a_ == fg_b_, "%s = %lld, %s = %lld", #a, fg_a_, #b, fg_b_);              \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                             \
  do {                                                                                    \
    double fg_a_ = (double)(a), fg_b_ = (double)(b);                                      \
    CHECK_MSG(fabs(fg_a_ - fg_b_) <= (tol), "%s = %.9g, %s = %.9g, tol %.3g", #a, fg_a_, #b, fg_b_, (double)(tol)); \
  } while (0)

/* Status check that prints the status name. */
#define CHECK_OK(expr)                                                                    \
  do {                                                                                    \
    int fg_s_ = (int)(expr);                                                              \
    CHECK_MSG(fg_s_ == 0, "%s returned %d (%s)", #expr, fg_s_, fg_status_str((fg_status)fg_s_)); \
  } while (0)

/* max |a-b| / (1 + max|b|): logit differences relative to the logit scale. */
double fg_test_rel_diff(const float *a, const float *b, size_t n);

/* Relative logit tolerance (fg_test_rel_diff) of the session path against the reference forward for a
 * model whose matrices are of weight type `type`, by the spec of the kernel table that runs
 * (FG_ISA or the best this CPU has; kernels/kernels.h):
 *   ref, fma   f32 products of f32 activations, other summation orders: 1e-4 of the logit scale
 *   bf16dp     activations rounded to bf16 (<= 2^-9 relative each): 0.08
 *   q8         activations rounded to 8-bit blocks of 32 (<= 2^-8 of the block's largest): 0.15
 * The two rounding specs: 3x the largest difference measured on the tiny and small presets (bf16dp
 * 0.015 .. 0.024, Zen 5; q8 0.041 .. 0.078). Every test that compares logits across tables takes its
 * tolerance from here, never from a figure measured on one CPU. */
double fg_test_logit_tol(uint32_t type);
/* The name of the spec behind fg_test_logit_tol ("ref", "fma", "bf16dp", "q8"), for messages. */
const char *fg_test_spec_name(uint32_t type);

/* The whole file, malloc'd, with a NUL after its bytes (so text can be used as a string); *len (may be
 * NULL) receives the byte count. NULL when it cannot be opened or read (nothing printed). */
char *fg_test_read_file(const char *path, size_t *len);
/* Writes n bytes to path (replacing it); false on any error. */
bool fg_test_write_file(const char *path, const void *p, size_t n);
/* Whether path exists; removes a file or a whole directory tree (errors ignored: scratch space). */
bool fg_test_exists(const char *path);
void fg_test_rm_rf(const char *path);

/* A catalog of tests/data/nlu/ (parsed; a failure counts as a failed check and gives NULL). */
typedef struct fg_catalog fg_catalog; /* as in fgemma.h (C11 allows the repeat) */
fg_catalog *fg_test_catalog_file(const char *file);

/* Prints "<name>: N checks, N failed" and returns the process exit code. */
int fg_test_finish(const char *name);

/* Path of a generated test model under the build tree (FG_TEST_MODELS); a static buffer. */
const char *fg_test_model_path(const char *file);
/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID): what a test's time bound or time
 * ratio reads, so that other work on the machine does not move it */
double fg_test_cpu_s(void);
/* Generates (once per build tree) the named model with the CLI-equivalent generator; see testutil.c */
int fg_test_ensure_model(const char *file, const char *preset, const char *type, unsigned long long seed);
/* Details of fg_test_ensure_model: the file exists under FG_TEST_MODELS -> 0 at once; otherwise it is
 * generated with fg_gen_model (type by name: "f32" "f16" "bf16" "q8_0" "q5_0" "q4_0"; tied head; a file name
 * containing "vocab" gets the real Gemma 3 vocabulary from fg_test_tokenizer_json()); non-zero with a
 * message on stderr on failure (also when that tokenizer.json is missing: run scripts/setup.sh). */
/* A tiny F32 model with the real vocabulary (FILE under FG_TEST_MODELS, made once) whose blocks add
 * nothing and whose untied output.weight makes chain[i+1] the greedy successor of chain[i] (distinct
 * ids), so it generates a chosen token sequence; general.name is overwritten with name's bytes (any
 * bytes, padded with '.'; NULL keeps it). 0 on success. */
int fg_test_ensure_chain_model(const char *file, const int32_t *chain, size_t n_chain, const char *name);
/* Gemma 3's tokenizer.json from the npm oracle install (may not exist). */
const char *fg_test_tokenizer_json(void);
/* GGML type id of "f32"/"f16"/"bf16"/"q8_0"/"q5_0"/"q4_0"; 0 on success, non-zero for an unknown name. */
int fg_test_type_from_name(const char *name, uint32_t *type);

/* SHA-256 of a file as 64 lowercase hex digits; 0 on success. */
int fg_test_sha256_file(const char *path, char hex[65]);

#endif
