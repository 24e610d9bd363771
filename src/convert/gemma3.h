/* gemma3.h — Gemma 3 in its two file layouts: GGUF as llama.cpp writes it (`gemma3` metadata keys,
 * tensor names, norm weights with Gemma's +1 folded in) and a Hugging Face Gemma3ForCausalLM
 * checkpoint (module names, norm weights stored as w with the model computing x * (1 + w)).
 * Shared by the converter (convert.c) and the synthetic generator (model/gen_model.c). */
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
