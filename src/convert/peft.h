/* peft.h — a Hugging Face PEFT LoRA adapter directory as `fgemma convert` reads it, as pure functions
 * over bytes: adapter_config.json, the names of adapter_model.safetensors's tensors, and fgemma's
 * vocabulary override file. convert_peft.c plans the GGUF adapter from these, convert.c streams it.
 *
 *   PEFT (save_pretrained)                                   GGUF adapter (llama.cpp's layout)
 *   base_model.model.model.layers.N.self_attn.q_proj         blk.N.attn_q.weight
 *     .lora_A.weight  [rank, in]  (rank rows of in)    ->      .lora_a  ne {in, rank}   same bytes
 *     .lora_B.weight  [out, rank] (out rows of rank)   ->      .lora_b  ne {rank, out}  same bytes
 *   lora_alpha (use_rslora: lora_alpha * sqrt(r))      ->    adapter.lora.alpha
 *
 * The multimodal Gemma 3 class names the text model's layers model.language_model.layers.N
 * (transformers >= 4.52) or language_model.model.layers.N (before); its vision tower and projector
 * are not part of a text model and are left out. */
#ifndef FG_CONVERT_PEFT_H
#define FG_CONVERT_PEFT_H

#include "fg_internal.h"
#include "model/lora_targets.h"

#include <stdbool.h>

/* The seven adapted matrices of a layer: fg_lora_targets (model/lora_targets.h). */

/* rank_pattern / alpha_pattern: per-module r or lora_alpha, keyed by (regular expressions of) module names */
typedef struct fg_peft_pattern {
  char *key;    /* NUL-terminated */
  double value;
} fg_peft_pattern;

/* adapter_config.json, as far as the conversion depends on it. */
typedef struct fg_peft_config {
  uint32_t r;             /* r: the rank of every module rank_pattern does not name */
  double alpha;           /* lora_alpha: the same for alpha_pattern */
  bool rslora;            /* use_rslora: PEFT scales by alpha / sqrt(r) instead of alpha / r */
  fg_peft_pattern *rank_pattern, *alpha_pattern; /* in the file's order */
  size_t n_rank_pattern, n_alpha_pattern;
  char base_model[256];   /* base_model_name_or_path (may be empty) */
  char peft_version[32];  /* revision / peft_version when given (may be empty) */
} fg_peft_config;

/* Parses and checks adapter_config.json (path labels messages). FG_ERR_FORMAT for malformed JSON and
 * missing or ill-typed r / lora_alpha / patterns; FG_ERR_UNSUPPORTED, naming the key, for what a GGUF
 * LoRA adapter cannot carry: peft_type other than LORA, use_dora, modules_to_save, embed_tokens / lm_head
 * in target_modules, bias other than "none", lora_bias, fan_in_fan_out, trainable_token_indices,
 * layer_replication, use_qalora, target_parameters, lora_alpha 0. On success free with
 * fg_peft_config_clear; on failure nothing stays allocated. */
fg_status fg_peft_config_parse(const char *json, size_t len, const char *path, fg_peft_config *out, fg_error *err);
void fg_peft_config_clear(fg_peft_config *c); /* NULL-safe */

/* PEFT's lookup of a pattern (peft.utils.other.get_pattern_key): the value of the first key K for which
 * re.match(r"(.*\.)?(K)$", module) matches, else def. module is PEFT's module name, e.g.
 * "model.layers.0.self_attn.o_proj". Keys of letters, digits, '_', '-' and '.' are matched literally
 * (the module, or its end after a '.'); a key with other characters is a regular expression this does
 * not evaluate: reaching one returns false (*out is then def). */
bool fg_peft_pattern_get(const fg_peft_pattern *p, size_t n, const char *module, double def, double *out);

/* PEFT's module name of a lora_A / lora_B tensor name: without "base_model.model." and
 * ".lora_A.weight" / ".lora_B.weight". Writes at most cap bytes with the NUL (truncated if longer). */
void fg_peft_module_key(const char *tensor, char *out, size_t cap);

/* What a tensor of adapter_model.safetensors is, from its name. */
typedef enum fg_peft_kind {
  FG_PEFT_LORA_A = 0,      /* lora_A of layer `layer`, module `module` */
  FG_PEFT_LORA_B,          /* lora_B of the same */
  FG_PEFT_VISION,          /* part of the vision tower or its projector (multimodal class): left out */
  FG_PEFT_EMBEDDING,       /* a LoRA of the token embedding (lora_embedding_A/B, or embed_tokens) */
  FG_PEFT_LM_HEAD,         /* a LoRA of the output projection (lm_head) */
  FG_PEFT_DORA,            /* DoRA's lora_magnitude_vector */
  FG_PEFT_BIAS,            /* a bias (lora_bias, bias="all" / "lora_only") */
  FG_PEFT_FULL,            /* a whole tensor (modules_to_save, trainable tokens, a norm weight) */
  FG_PEFT_OTHER_MODULE,    /* a LoRA pair part on a layer module that is not one of fg_lora_targets */
  FG_PEFT_UNKNOWN          /* nothing PEFT writes for a Gemma 3 */
} fg_peft_kind;

typedef struct fg_peft_name {
  fg_peft_kind kind;
  uint32_t layer;  /* LORA_A / LORA_B / OTHER_MODULE */
  uint32_t module; /* LORA_A / LORA_B: index into fg_lora_targets */
} fg_peft_name;

/* Classifies a tensor name (NUL-terminated). Never fails: anything unknown is FG_PEFT_UNKNOWN. */
fg_peft_name fg_peft_name_parse(const char *name);

/* fgemma_vocab_override.json: {"ids": [46, ...], "tokens": ["<start_function_declaration>", ...]}. */
#define FG_PEFT_OVERRIDE_FILE "fgemma_vocab_override.json"
#define FG_PEFT_OVERRIDE_MAX 4096u
typedef struct fg_peft_vocab_override {
  size_t n;
  int32_t *ids;      /* n ids, each >= 0, no two equal */
  char **tokens;     /* n NUL-terminated pieces: non-empty, valid UTF-8, no NUL, no two equal */
  size_t *lens;      /* their lengths */
} fg_peft_vocab_override;

/* Parses and checks the override (path labels messages): an object with exactly the keys "ids" and
 * "tokens", arrays of the same length 1..FG_PEFT_OVERRIDE_MAX. FG_ERR_FORMAT naming the key and index. */
fg_status fg_peft_vocab_override_parse(const char *json, size_t len, const char *path, fg_peft_vocab_override *out,
                                       fg_error *err);
void fg_peft_vocab_override_clear(fg_peft_vocab_override *v); /* NULL-safe */

#endif /* FG_CONVERT_PEFT_H */
