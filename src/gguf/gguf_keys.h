/* gguf_keys.h — the GGUF metadata keys fgemma reads and writes, spelled once: the readers (model/model.c,
 * model/lora.c, tokenizer/vocab.c, gguf.c) and the writers (convert/, gen/, gguf_writer.c) use these
 * names. Included by gguf.h. Error messages that name a key keep their own text. */
#ifndef FG_GGUF_KEYS_H
#define FG_GGUF_KEYS_H

/* ---- general.* ---- */
#define FG_KEY_ARCHITECTURE "general.architecture"
#define FG_KEY_TYPE "general.type" /* "model" or "adapter" */
#define FG_KEY_NAME "general.name"
#define FG_KEY_DESCRIPTION "general.description"
#define FG_KEY_FILE_TYPE "general.file_type" /* llama_ftype */
#define FG_KEY_QUANTIZATION_VERSION "general.quantization_version"
#define FG_KEY_ALIGNMENT "general.alignment"
#define FG_KEY_BASE_MODEL_COUNT "general.base_model.count"
#define FG_KEY_BASE_MODEL_0_NAME "general.base_model.0.name"

/* ---- the architecture and its hyper-parameters (convert/gemma3.h maps them to a checkpoint's config) ---- */
#define FG_ARCH_GEMMA3 "gemma3"
#define FG_KEY_G3_CONTEXT_LENGTH "gemma3.context_length"
#define FG_KEY_G3_EMBEDDING_LENGTH "gemma3.embedding_length"
#define FG_KEY_G3_BLOCK_COUNT "gemma3.block_count"
#define FG_KEY_G3_FEED_FORWARD_LENGTH "gemma3.feed_forward_length"
#define FG_KEY_G3_HEAD_COUNT "gemma3.attention.head_count"
#define FG_KEY_G3_HEAD_COUNT_KV "gemma3.attention.head_count_kv"
#define FG_KEY_G3_KEY_LENGTH "gemma3.attention.key_length"
#define FG_KEY_G3_VALUE_LENGTH "gemma3.attention.value_length"
#define FG_KEY_G3_SLIDING_WINDOW "gemma3.attention.sliding_window"
#define FG_KEY_G3_SLIDING_WINDOW_PATTERN "gemma3.attention.sliding_window_pattern"
#define FG_KEY_G3_RMS_EPS "gemma3.attention.layer_norm_rms_epsilon"
#define FG_KEY_G3_ROPE_FREQ_BASE "gemma3.rope.freq_base"
#define FG_KEY_G3_ROPE_FREQ_BASE_SWA "gemma3.rope.freq_base_swa"
#define FG_KEY_G3_FINAL_SOFTCAP "gemma3.final_logit_softcapping"

/* ---- LoRA adapters (llama.cpp's), and fgemma's vocabulary override (docs/LORA.md) ---- */
#define FG_KEY_ADAPTER_TYPE "adapter.type" /* "lora" */
#define FG_KEY_ADAPTER_LORA_ALPHA "adapter.lora.alpha"
#define FG_KEY_VOCAB_OVERRIDE_IDS "fgemma.vocab_override.ids"
#define FG_KEY_VOCAB_OVERRIDE_TOKENS "fgemma.vocab_override.tokens"

/* ---- the tokenizer ---- */
#define FG_KEY_TOK_MODEL "tokenizer.ggml.model"
#define FG_KEY_TOK_PRE "tokenizer.ggml.pre"
#define FG_KEY_TOK_TOKENS "tokenizer.ggml.tokens"
#define FG_KEY_TOK_SCORES "tokenizer.ggml.scores"
#define FG_KEY_TOK_TOKEN_TYPE "tokenizer.ggml.token_type"
#define FG_KEY_TOK_BOS_ID "tokenizer.ggml.bos_token_id"
#define FG_KEY_TOK_EOS_ID "tokenizer.ggml.eos_token_id"
#define FG_KEY_TOK_UNK_ID "tokenizer.ggml.unknown_token_id"
#define FG_KEY_TOK_PAD_ID "tokenizer.ggml.padding_token_id"
#define FG_KEY_TOK_ADD_BOS "tokenizer.ggml.add_bos_token"
#define FG_KEY_TOK_ADD_EOS "tokenizer.ggml.add_eos_token"
#define FG_KEY_TOK_ADD_SPACE_PREFIX "tokenizer.ggml.add_space_prefix"
#define FG_KEY_CHAT_TEMPLATE "tokenizer.chat_template"

#endif /* FG_GGUF_KEYS_H */
