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
typedef struct fg_gen_rng {
  uint64_t s[4];  /* xoshiro256** state, never all zero */
  double spare;   /* second variate of the last polar pair */
  int has_spare;
} fg_gen_rng;

typedef struct fg_gen_preset {
  const char *name;
  fg_g3_hparams hp;
  uint32_t n_vocab; /* of the synthetic vocabulary; a tokenizer.json overrides it */
} fg_gen_preset;

/* Norm weights: uniform in scale * (1 ± spread) (gen_model.c, "Weight statistics"). */
#define FG_GEN_NORM_SPREAD 0.1
#define FG_GEN_OUT_NORM_SPREAD 0.05

typedef enum fg_gen_init {
  FG_GEN_INIT_NORMAL,   /* N(0, scale^2) */
  FG_GEN_INIT_ROWS,     /* N(0, scale^2), each row then rescaled to RMS exactly scale */
  FG_GEN_INIT_NORM,     /* uniform scale * (1 ± FG_GEN_NORM_SPREAD) */
  FG_GEN_INIT_OUT_NORM, /* uniform scale * (1 ± FG_GEN_OUT_NORM_SPREAD) */
} fg_gen_init;

typedef struct fg_gen_tensor {
  char name[48];      /* GGUF name; also names the random stream */
  char hf[64];        /* Hugging Face name */
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[2];     /* ne[0] = row length (input dim), ne[1] = rows */
  fg_gen_init init;
  double scale;
  uint64_t row_bytes;
  uint64_t nbytes;
} fg_gen_tensor;

typedef struct fg_gen_plan {
  fg_gen_tensor *t; /* [n] in GGUF file order */
  size_t n, cap;
} fg_gen_plan;

static inline bool fg_gen_is_norm(const fg_gen_tensor *t) {
  return t->init == FG_GEN_INIT_NORM || t->init == FG_GEN_INIT_OUT_NORM;
}

/* One stream per (seed, tensor name) (gen_random.c). */
void fg_gen_rng_seed(fg_gen_rng *r, uint64_t seed, const char *name);
/* Standard normal variate (Marsaglia's polar method, basic operations only: the same on every platform). */
double fg_gen_normal(fg_gen_rng *r);
/* Fills row [n] with the tensor's next n values (GGUF convention: norm weights include the +1). */
void fg_gen_fill_row(fg_gen_rng *r, const fg_gen_tensor *t, float *FG_RESTRICT row, size_t n);

/* Writes the checkpoint (gen_hf.c). json: the tokenizer.json bytes the vocabulary came from, or NULL
 * for the synthetic vocabulary (its tokenizer.json is then written from v). */
fg_status fg_gen_write_hf(const fg_gen_params *p, const fg_gen_preset *pr, const fg_gen_plan *plan,
                          uint64_t seed, const fg_hf_vocab *v, const char *json, size_t json_size, const char *dir,
                          fg_error *err);

#endif /* FG_GEN_INTERNAL_H */
