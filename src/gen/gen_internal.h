/* gen_internal.h — pieces of the synthetic model generator shared by its GGUF writer (gen_model.c), its
 * Hugging Face checkpoint writer (gen_hf.c) and the adapter generator (gen_lora.c); the random numbers and
 * rows of values are in gen_random.c. Not installed. */
#ifndef FG_GEN_INTERNAL_H
#define FG_GEN_INTERNAL_H

#define FG_EXPERIMENTAL
#include "fg_internal.h"
#include "convert/gemma3.h"
#include "convert/hf_vocab.h"

#include <stdbool.h>

/* Deterministic random numbers: one xoshiro256** stream per (seed, tensor name). */
typedef struct gen_rng {
  uint64_t s[4];  /* xoshiro256** state, never all zero */
  double spare;   /* second variate of the last polar pair */
  int has_spare;
} gen_rng;

typedef struct gen_preset {
  const char *name;
  fg_g3_hparams hp;
  uint32_t n_vocab; /* of the synthetic vocabulary; a tokenizer.json overrides it */
} gen_preset;

/* Norm weights: uniform in scale * (1 ± spread) (gen_model.c, "Weight statistics"). */
#define GEN_NORM_SPREAD 0.1
#define GEN_OUT_NORM_SPREAD 0.05

typedef enum gen_init {
  GEN_INIT_NORMAL,   /* N(0, scale^2) */
  GEN_INIT_ROWS,     /* N(0, scale^2), each row then rescaled to RMS exactly scale */
  GEN_INIT_NORM,     /* uniform scale * (1 ± GEN_NORM_SPREAD) */
  GEN_INIT_OUT_NORM, /* uniform scale * (1 ± GEN_OUT_NORM_SPREAD) */
} gen_init;

typedef struct gen_tensor {
  char name[48];      /* GGUF name; also names the random stream */
  char hf[64];        /* Hugging Face name */
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[2];     /* ne[0] = row length (input dim), ne[1] = rows */
  gen_init init;
  double scale;
  uint64_t row_bytes;
  uint64_t nbytes;
} gen_tensor;

typedef struct gen_plan {
  gen_tensor *t; /* [n] in GGUF file order */
  size_t n, cap;
} gen_plan;

static inline bool gen_is_norm(const gen_tensor *t) { return t->init == GEN_INIT_NORM || t->init == GEN_INIT_OUT_NORM; }

/* One stream per (seed, tensor name) (gen_random.c). */
void gen_rng_seed(gen_rng *r, uint64_t seed, const char *name);
/* Standard normal variate (Marsaglia's polar method, basic operations only: the same on every platform). */
double gen_normal(gen_rng *r);
/* Fills row [n] with the tensor's next n values (GGUF convention: norm weights include the +1). */
void gen_fill_row(gen_rng *r, const gen_tensor *t, float *FG_RESTRICT row, size_t n);

/* Writes the checkpoint (gen_hf.c). json: the tokenizer.json bytes the vocabulary came from, or NULL
 * for the synthetic vocabulary (its tokenizer.json is then written from v). */
fg_status gen_write_hf(const fg_gen_params *p, const gen_preset *pr, const gen_plan *plan, uint64_t seed,
                       const fg_hf_vocab *v, const char *json, size_t json_size, const char *dir, fg_error *err);

#endif /* FG_GEN_INTERNAL_H */
