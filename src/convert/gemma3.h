/* gemma3.h — Gemma 3 in its two file layouts: GGUF as llama.cpp writes it (`gemma3` metadata keys,
 * tensor names, norm weights with Gemma's +1 folded in) and a Hugging Face Gemma3ForCausalLM
 * checkpoint (module names, norm weights stored as w with the model computing x * (1 + w)).
 * Shared by the converter (convert.c) and the synthetic generator (gen/gen_model.c). */
#ifndef FG_CONVERT_GEMMA3_H
#define FG_CONVERT_GEMMA3_H

#include "fg_internal.h"
#include "gguf/gguf.h"

#include <stdbool.h>

typedef struct fg_g3_hparams {
  uint32_t n_ctx;          /* gemma3.context_length            <- max_position_embeddings */
  uint32_t n_embd;         /* gemma3.embedding_length          <- hidden_size */
  uint32_t n_layer;        /* gemma3.block_count               <- num_hidden_layers */
  uint32_t n_ff;           /* gemma3.feed_forward_length       <- intermediate_size */
  uint32_t n_head;         /* gemma3.attention.head_count      <- num_attention_heads */
  uint32_t n_head_kv;      /* gemma3.attention.head_count_kv   <- num_key_value_heads */
  uint32_t head_dim;       /* gemma3.attention.key_length and value_length <- head_dim */
  uint32_t sliding_window; /* gemma3.attention.sliding_window  <- sliding_window (0 = none) */
  uint32_t swa_pattern;    /* gemma3.attention.sliding_window_pattern <- layer_types / sliding_window_pattern */
  float rms_eps;           /* gemma3.attention.layer_norm_rms_epsilon <- rms_norm_eps */
  float rope_base;         /* gemma3.rope.freq_base (global layers) <- rope_theta / rope_parameters.full_attention */
  float rope_base_swa;     /* gemma3.rope.freq_base_swa (sliding layers) <- rope_local_base_freq / ...sliding_attention */
  float final_softcap;     /* gemma3.final_logit_softcapping, written only when > 0 */
} fg_g3_hparams;

/* Writes the gemma3.* keys above, in this order. */
fg_status fg_g3_write_hparams(fg_gguf_writer *w, const fg_g3_hparams *hp, fg_error *err);

/* llama.cpp's general.file_type (llama_ftype) for files whose matrices have GGML type `type`. */
uint32_t fg_g3_file_type(uint32_t type);

/* llama-quantize's mixes (llama_ftype ids, include/llama.h of llama.cpp) */
enum {
  FG_G3_FTYPE_F32 = 0, FG_G3_FTYPE_F16 = 1, FG_G3_FTYPE_Q4_0 = 2, FG_G3_FTYPE_Q4_1 = 3, FG_G3_FTYPE_Q8_0 = 7,
  FG_G3_FTYPE_Q5_0 = 8, FG_G3_FTYPE_Q5_1 = 9, FG_G3_FTYPE_Q2_K = 10, FG_G3_FTYPE_Q3_K_S = 11, FG_G3_FTYPE_Q3_K_M = 12,
  FG_G3_FTYPE_Q3_K_L = 13, FG_G3_FTYPE_Q4_K_S = 14, FG_G3_FTYPE_Q4_K_M = 15, FG_G3_FTYPE_Q5_K_S = 16,
  FG_G3_FTYPE_Q5_K_M = 17, FG_G3_FTYPE_Q6_K = 18, FG_G3_FTYPE_IQ4_NL = 25, FG_G3_FTYPE_IQ4_XS = 30, FG_G3_FTYPE_BF16 = 32
};

/* The mixes fgemma writes: name ("q4_k_m"), llama_ftype, the GGML type of most matrices. */
typedef struct fg_g3_mix {
  const char *name;
  uint32_t ftype, type;
} fg_g3_mix;
extern const fg_g3_mix fg_g3_mixes[];
extern const size_t fg_g3_n_mixes;
const fg_g3_mix *fg_g3_mix_of(uint32_t ftype); /* NULL when fgemma does not write it */

/* What the model looks like to the mix rules. */
typedef struct fg_g3_mix_model {
  uint32_t n_layer; /* gemma3.block_count */
  uint32_t n_gqa;   /* head_count / head_count_kv */
  bool tied;        /* no output.weight: token_embd is the head too */
} fg_g3_mix_model;

/* The type llama-quantize gives the 2-D tensor `name` (rows of ne0 values) in mix `ftype` (see
 * gemma3.c for the rules and where they come from). */
uint32_t fg_g3_mix_type(uint32_t ftype, const fg_g3_mix_model *m, const char *name, uint64_t ne0);

/* Per-layer tensors in GGUF file order. Dimensions by letter: E n_embd, Q n_head*head_dim,
 * K n_head_kv*head_dim, F n_ff, H head_dim; out == 0 marks a norm vector of length `in`.
 * A matrix is stored with ne = {in, out} in GGUF and as [out, in] (row-major) in PyTorch. */
typedef struct fg_g3_layer_tensor {
  const char *gguf; /* blk.N.<gguf>.weight */
  const char *hf;   /* model.layers.N.<hf>.weight */
  char in, out;
} fg_g3_layer_tensor;
#define FG_G3_LAYER_TENSORS 13
extern const fg_g3_layer_tensor fg_g3_layer_tensors[FG_G3_LAYER_TENSORS];

/* The size a dimension letter stands for (0 for an unknown letter; 1 for 0). */
uint64_t fg_g3_dim(const fg_g3_hparams *hp, char letter);

/* Whole-model tensors */
#define FG_G3_HF_EMBED "model.embed_tokens.weight" /* token_embd.weight  [n_vocab, n_embd] */
#define FG_G3_HF_NORM "model.norm.weight"          /* output_norm.weight [n_embd] */
#define FG_G3_HF_HEAD "lm_head.weight"             /* output.weight      [n_vocab, n_embd] */

#endif /* FG_CONVERT_GEMMA3_H */
