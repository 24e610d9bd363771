/* convert_internal.h — what the files of fg_convert share: the conversion context (input files, planned
 * tensors, the writer) and the planning helpers. Not installed.
 *   convert.c       fg_convert: checks the parameters, picks the input's plan, streams the planned tensors
 *   convert_plan.c  shared planning: reading input files, adding tensors, output types and row sizes,
 *                   safetensors headers
 *   convert_hf.c    a Hugging Face checkpoint: config.json, the safetensors weights, the tokenizer, its plan
 *   convert_gguf.c  a gemma3 GGUF, re-typed
 *   convert_peft.c  a PEFT LoRA adapter directory, as a GGUF LoRA adapter */
#ifndef FG_CONVERT_INTERNAL_H
#define FG_CONVERT_INTERNAL_H

#include "convert/gemma3.h"
#include "convert/hf_vocab.h"
#include "convert/peft.h"
#include "convert/safetensors.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "tensor/quant_search.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CV_CHUNK_BYTES (4u << 20)     /* rows are read, converted and written in chunks of about this size */
#define CV_MAX_CONFIG (16u << 20)     /* config.json, tokenizer_config.json, the index, a chat template */
#define CV_MAX_TOKENIZER (512u << 20) /* tokenizer.json (Gemma 3's is 33 MB) */

typedef struct fg_cv_file {
  char *path;
  FILE *f;
  uint64_t size;
  fg_st_header st; /* safetensors header (checkpoint input) */
} fg_cv_file;

typedef struct fg_cv_tensor {
  char name[64];       /* GGUF name */
  char src_name[128];  /* the name in the input */
  uint32_t n_dims;
  uint64_t ne[FG_GGUF_MAX_DIMS];
  uint32_t src_type;   /* GGML type id of the source bytes */
  uint32_t out_type;
  size_t file;         /* index into fg_cv_ctx.files */
  uint64_t offset;     /* absolute offset of the source bytes in that file */
  bool add_one;        /* a checkpoint's norm weight: + 1 (Gemma's RMSNorm computes x * (1 + w)) */
  bool check;          /* every value must be finite (and within F16's range when written F16) */
  uint64_t rows, src_row_bytes, out_row_bytes, out_bytes;
} fg_cv_tensor;

typedef struct fg_cv_ctx {
  const fg_convert_params *p;
  fg_error *err;
  fg_cv_file *files;
  size_t n_files;
  fg_cv_tensor *t;
  size_t n_t, cap_t;
  fg_gguf_writer *w;
  uint64_t done, total;
  fg_g3_mix_model mix;   /* the model as the mix rules see it (p->type a FG_CONVERT_MIX) */
  size_t n_requant;      /* tensors re-quantized from quantized values */
  char requant[128];     /* the first of them, "name (q5_0 -> q4_k)" */
} fg_cv_ctx;

// ----------------------------------------------------------------------------------------------------
// Shared planning (convert_plan.c)

const char *fg_cv_base_name(const char *path);
char *fg_cv_join(const char *dir, const char *name); /* dir/name, fg_malloc'd; NULL on NOMEM */
bool fg_cv_file_exists(const char *path);
/* The whole file (at most limit bytes), fg_malloc'd. */
fg_status fg_cv_read_all(const char *path, size_t limit, char **out, size_t *size, fg_error *err);
fg_status fg_cv_add_file(fg_cv_ctx *c, const char *path, size_t *idx);
fg_cv_tensor *fg_cv_add_tensor(fg_cv_ctx *c); /* zeroed; NULL on NOMEM */
bool fg_cv_is_mix(const fg_cv_ctx *c);
uint32_t fg_cv_matrix_type(const fg_cv_ctx *c, const char *name, uint64_t ne0, uint32_t plain);
uint32_t fg_cv_file_type(const fg_cv_ctx *c, uint32_t plain);
fg_status fg_cv_plan_sizes(fg_cv_ctx *c, fg_cv_tensor *t, const char *where);
fg_status fg_cv_read_header(fg_cv_ctx *c, fg_cv_file *fl);
uint32_t fg_cv_ggml_of_st(fg_st_dtype d); /* UINT32_MAX for a dtype fgemma does not convert */

// ----------------------------------------------------------------------------------------------------
// The plans of the three inputs: fill c->t and the writer's metadata

fg_status fg_cv_plan_checkpoint(fg_cv_ctx *c, const char *dir);                            /* convert_hf.c */
fg_status fg_cv_plan_gguf(fg_cv_ctx *c, const char *path, fg_mapfile *map, fg_gguf *g);   /* convert_gguf.c */
fg_status fg_cv_plan_peft(fg_cv_ctx *c, const char *dir, const char *config_path);         /* convert_peft.c */

#endif /* FG_CONVERT_INTERNAL_H */
