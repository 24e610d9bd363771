/*
 * fgemma.h — the public API of libfgemma, a C11 runtime for FunctionGemma / Gemma 3 GGUF models.
 *
 * If a function, type or constant is not in this file, it is not a published API.
 *
 * Thread safety: `fg_model` is immutable after load and may be shared by any number of threads.
 * Use an `fg_session` or `fg_snapshot` from one thread at a time; different sessions (also forks
 * of one snapshot) may run on different threads at once. Kernel dispatch is initialised once and
 * is thread-safe.
 *
 * Ownership: every `_load`/`_create`/`_parse` pairs with a `_free`; `_free(NULL)` is a harmless
 * no-op. Handles may be freed in any order: a session, snapshot, NLU engine or model view
 * (fg_model_with_loras) keeps its model alive (reference counted), and an NLU engine keeps its
 * catalog alive, so `fg_model_free` and `fg_catalog_free` drop only the caller's reference; the model (with its mapped file) goes when
 * the last holder goes. Returned pointers are borrowed until the next call that mutates the handle
 * they came from (a model pointer from `fg_session_model` as long as the session lives).
 *
 * Errors: every fallible call returns an `fg_status`; outputs come last. On failure out-pointers
 * are set to NULL (or left untouched for scalars) and the handle is unchanged: a failed prefill
 * keeps the session's position, KV cache and logits as they were.
 */
#ifndef FGEMMA_H
#define FGEMMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(FG_SHARED)
#  ifdef FG_BUILD
#    define FG_API __declspec(dllexport)
#  else
#    define FG_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define FG_API __attribute__((visibility("default")))
#else
#  define FG_API
#endif

#define FG_VERSION_MAJOR 0
#define FG_VERSION_MINOR 4
#define FG_VERSION_PATCH 0
#define FG_VERSION_NUMBER (FG_VERSION_MAJOR * 10000 + FG_VERSION_MINOR * 100 + FG_VERSION_PATCH)

/* Run-time version, to catch header/library skew: fg_version_number() == FG_VERSION_NUMBER. */
FG_API uint32_t fg_version_number(void);
FG_API const char *fg_version_string(void);

/* The kernel table this process runs its matrix products on: "ref" (plain C), "avx2", "avx512"
 * (AVX-512 with VNNI and BF16), "neon", "neon_dotprod" or "neon_i8mm". Chosen once, the best this CPU
 * has, or the one the environment variable FG_ISA names; "unsupported" when FG_ISA names one this CPU
 * or build lacks (every load then fails with FG_ERR_UNSUPPORTED). Each table follows written numerical
 * specs (src/kernels/kernels.h): results agree across tables within those specs, not bit for bit. */
FG_API const char *fg_kernels_name(void);

/* ------------------------------------------------------------------------------------------------
 * Status codes. Values are explicit and never renumbered.
 */
typedef enum fg_status {
  FG_OK = 0,
  FG_ERR_INVALID_ARG = 1,      /* NULL pointer, n == 0, token id outside the vocabulary, ... */
  FG_ERR_NOMEM = 2,            /* an allocation failed; nothing was changed */
  FG_ERR_IO = 3,               /* open/read/write/mmap failed */
  FG_ERR_FORMAT = 4,           /* malformed GGUF, snapshot or catalog; the message names the culprit */
  FG_ERR_UNSUPPORTED = 5,      /* valid but not supported: architecture, tensor type, missing vocab */
  FG_ERR_CONTEXT_FULL = 6,     /* the tokens would not fit into the session's context */
  FG_ERR_BUFFER_TOO_SMALL = 7, /* the caller's buffer is too small; the needed size was reported */
  FG_ERR_ABORTED = 8,          /* the abort callback asked to stop; nothing was changed */
  FG_ERR_INTERNAL = 9,         /* a bug in fgemma; please report it */
  FG_ERR_MISMATCH = 10         /* a snapshot of another model or of an incompatible session */
} fg_status;

/* Static, human-readable name of a status; never NULL. */
FG_API const char *fg_status_str(fg_status s);

/* Caller-owned error report for constructors. msg is NUL-terminated. */
typedef struct fg_error {
  fg_status code;
  char msg[256];
} fg_error;

/* ------------------------------------------------------------------------------------------------
 * Logging. By default fgemma prints nothing. The callback may be called from any thread.
 */
typedef enum fg_log_level { FG_LOG_ERROR = 0, FG_LOG_WARN = 1, FG_LOG_INFO = 2, FG_LOG_DEBUG = 3 } fg_log_level;
typedef void (*fg_log_fn)(fg_log_level level, const char *msg, void *user_data);
FG_API void fg_set_log_callback(fg_log_fn fn, void *user_data);

/* ------------------------------------------------------------------------------------------------
 * Model: a GGUF file mapped into memory, with hyper-parameters and tensors bound by name.
 */
typedef struct fg_model fg_model;
typedef struct fg_session fg_session;
typedef struct fg_snapshot fg_snapshot;

#define FG_MODEL_NO_MMAP 0x1u        /* read the file into memory instead of mapping it */
#define FG_MODEL_CHECK_TENSORS 0x2u  /* scan every weight for NaN/Inf at load (slow) */
/* A head whose rows are mostly all zero (a model trained on a part of the vocabulary, whose unused
 * embedding rows stay zero: e.g. tv-mini) is computed over its other rows only, the zero rows' logits
 * being 0; load checks a sample of rows and scans the head only when the sample has zero rows. This
 * flag turns that off (every row is computed; logits may then differ in the sign of a zero, or be NaN
 * where the hidden state is not finite). */
#define FG_MODEL_DENSE_HEAD 0x4u
/* Where the kernels have a faster layout of their own (x86 with AVX2: Q8_0, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K and IQ4_XS matrices;
 * aarch64 with the dot product: Q8_0, Q5_0 and Q4_K), load copies the matrices into it (fg_model_info.repack_bytes; a mapped file's pages of them are handed
 * back, so resident memory stays about the same, but it is no longer file-backed). Results are bit for
 * bit the same either way. This flag keeps the file's layout. */
#define FG_MODEL_NO_REPACK 0x8u

/* fg_model_params.head_type: keep the file's output projection (output.weight, else the tied
 * token_embd). 0 means the same, so that {0} stays valid: an f32 replacement head is not offered. */
#define FG_MODEL_HEAD_AS_FILE 0xffffffffu

/* A LoRA adapter in llama.cpp's GGUF format (general.type = "adapter", adapter.type = "lora",
 * adapter.lora.alpha, tensor pairs "<base tensor>.lora_a" (rank × n_in) / ".lora_b" (n_out × rank) in F32,
 * F16, BF16 or Q8_0) for the layers' matrices (attn_q/k/v/output, ffn_gate/up/down). Every adapted
 * product becomes W·x + s·B·(A·x) with s = scale · alpha / rank (scale alone when alpha is 0), as
 * llama.cpp's --lora FILE:SCALE does. An adapter may carry FunctionGemma's control tokens for a base file
 * that lacks them (fgemma.vocab_override.ids / .tokens: the base's <unusedN> pieces at those ids are
 * renamed, and become control tokens). docs/LORA.md. */
typedef struct fg_lora {
  const char *path; /* the adapter's GGUF file */
  float scale;      /* user scale, any finite value (negative too); 1 = the adapter as trained, 0 = loaded and
                       checked but without effect (the base's logits bit for bit) */
} fg_lora;

/* fg_model_params.lora_merge: how adapters are applied. */
#define FG_LORA_RUNTIME 0u    /* exactly, at run time, over the base weights as they are (default) */
#define FG_LORA_MERGE_F32 1u  /* merged at load into heap copies of the adapted matrices, in F32 */
#define FG_LORA_MERGE_BF16 2u /* ... in BF16 */
#define FG_LORA_MERGE_Q8_0 3u /* ... in Q8_0 (reference quantizer) */

typedef struct fg_model_params {
  uint32_t flags;     /* FG_MODEL_* bits; 0 = map the file, no scan */
  uint32_t head_type; /* replacement LM head, made at load: FG_MODEL_HEAD_AS_FILE (set by
                         fg_model_params_init) or 0 = the file's head; 8 (Q8_0) or 2 (Q4_0) = quantize a
                         copy of the file's head (output.weight if present, else token_embd) with the
                         reference quantizer and use it for the output projection only (the embedding
                         lookup still reads token_embd). Works for tied and untied heads; a head that
                         already has the type is used as is (nothing copied). Costs n_vocab rows of
                         heap (e.g. 178 MB for Q8_0, 94 MB for Q4_0 at 262,144 × 640) and some load
                         time (threaded over the available cores). Other types: FG_ERR_UNSUPPORTED. */
  const fg_lora *loras; /* n_loras adapters applied in this order (paths are read during the call only) */
  size_t n_loras;
  uint32_t lora_merge;  /* FG_LORA_RUNTIME or FG_LORA_MERGE_*; with no adapter it has no effect. An adapter
                           for another architecture or shape, a lone lora_a or lora_b, ranks that differ
                           within a pair, a tensor the base lacks or that fgemma cannot adapt, non-finite
                           values or an invalid scale: FG_ERR_FORMAT / FG_ERR_UNSUPPORTED /
                           FG_ERR_INVALID_ARG, the message naming the file and tensor (docs/LORA.md
                           lists which); a failed load leaves nothing allocated */
} fg_model_params;

FG_API void fg_model_params_init(fg_model_params *p);

/* Loads a GGUF v3 file of architecture `gemma3`. params may be NULL; err may be NULL. */
FG_API fg_status fg_model_load(const char *path, const fg_model_params *params, fg_model **out, fg_error *err);
/* The same from bytes [offset, offset + length) of an open file, e.g. an uncompressed asset inside an
 * APK (Android's AssetFileDescriptor: getParcelFileDescriptor().getFd(), getStartOffset(),
 * getLength()). length 0 = up to the end of the file. The caller keeps fd: it is neither closed nor
 * moved (reads use pread), and may be closed as soon as this returns. Any offset works: the range is
 * mapped from the page below it; an offset that is not a multiple of 4 (f32 tensors need 4-byte
 * alignment) is read into memory instead of mapped, with a warning in the log. The same checks as
 * fg_model_load; a range past the end of the file is FG_ERR_INVALID_ARG, and messages name the
 * descriptor and offset. */
FG_API fg_status fg_model_load_fd(int fd, uint64_t offset, uint64_t length, const fg_model_params *params,
                                  fg_model **out, fg_error *err);
/* Drops the caller's reference: the model is freed now, or when its last session, snapshot or NLU
 * engine is freed. */
FG_API void fg_model_free(fg_model *model);

/* A model view: base's weights with adapters of its own, without loading the base again (docs/LORA.md,
 * "Many adapters, one base"). The view shares everything base holds (the mapped file, the tensors, the
 * packed copies, a replacement head, the vocabulary) and owns only its adapters, kept in f32 for run time
 * as with fg_model_params.loras (lora_merge FG_LORA_RUNTIME), and its own vocabulary when an adapter
 * renames tokens (fgemma.vocab_override.*). Its logits are those of a model loaded from base's file with
 * the same params and the adapters (base's own first, then loras), bit for bit, and so is its
 * fingerprint: a snapshot of one view is refused (FG_ERR_MISMATCH) by a view with other adapters or
 * scales and by the base. Sessions, snapshots and NLU engines are created from a view as from any model;
 * fg_model_get_info says its adapters (n_loras counts base's and loras; lora_bytes and lora_ms are the
 * view's own; repack_bytes and head_copy_bytes are base's, shared). The view holds a reference on base:
 * free the two with fg_model_free in any order. Views of one base may be used from any number of threads
 * (each view is immutable like a model).
 *   - base a view: the new view stacks, over the same loaded base, base's adapters and then loras;
 *   - base loaded with adapters at run time: the same (they are read again, for the view);
 *   - base with merged adapters (lora_merge != FG_LORA_RUNTIME): FG_ERR_UNSUPPORTED (its matrices are
 *     copies: load the base without lora_merge). A view never merges;
 *   - base or out NULL, loras NULL or n_loras 0: FG_ERR_INVALID_ARG;
 *   - an adapter that does not fit base (another shape or architecture, a damaged file, a bad scale):
 *     the status and message fg_model_load gives, naming the file.
 * On failure *out is NULL and base is unchanged. loras (and its paths) are read during the call only. */
FG_API fg_status fg_model_with_loras(const fg_model *base, const fg_lora *loras, size_t n_loras, fg_model **out,
                                     fg_error *err);

/* What a model is, read from its metadata. */
typedef struct fg_model_info {
  char arch[32];            /* "gemma3" */
  char name[64];            /* general.name, may be empty */
  uint32_t n_vocab;
  uint32_t n_embd;          /* embedding length, e.g. 640 */
  uint32_t n_layer;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t head_dim;        /* key/value length per head */
  uint32_t n_ff;
  uint32_t n_ctx_train;     /* context length the model was trained for */
  uint32_t sliding_window;  /* positions a sliding layer sees, itself included */
  uint32_t swa_pattern;     /* layer L is global iff L % swa_pattern == swa_pattern - 1 */
  uint32_t n_global_layers;
  uint32_t weight_type;     /* GGML type id of the bulk of the weights (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16) */
  uint32_t head_type;       /* GGML type id of the output projection (after a replacement, if any) */
  bool tied_head;           /* output projection is token_embd (false for a replacement head) */
  bool has_vocab;           /* tokenizer metadata present */
  uint64_t file_bytes;
  uint64_t weight_bytes;    /* bytes of all tensors */
  uint64_t n_params;
  uint64_t decode_bytes;    /* weight bytes read per decoded token (every matrix once, the head once) */
  uint8_t fingerprint[16];  /* identifies the file's hyper-parameters and weights (see fg_snapshot_load);
                               a load-time replacement head changes it (snapshots hold logits), and so do
                               the adapters, their scales and order, and the merge mode */
  uint64_t head_copy_bytes; /* heap bytes of a load-time replacement head; 0 = the head is in the file */
  double head_copy_ms;      /* time spent quantizing it at load */
  uint32_t head_rows;       /* output rows the full head computes: n_vocab, or fewer when the head's other
                               rows are all zero (see FG_MODEL_DENSE_HEAD); decode_bytes counts these */
  uint64_t repack_bytes;    /* heap bytes of the matrices copied into the kernels' layout at load
                               (FG_MODEL_NO_REPACK); 0 = none */
  double repack_ms;         /* time spent copying them */
  uint32_t n_loras;         /* adapters applied (fg_model_params.loras; a view's: its base's and its own) */
  uint32_t lora_merge;      /* FG_LORA_RUNTIME or FG_LORA_MERGE_* as applied */
  uint64_t lora_bytes;      /* heap bytes of the adapters' tensors (run time) or of the merged matrices */
  double lora_ms;           /* time spent loading (and merging) them */
} fg_model_info;

FG_API fg_status fg_model_get_info(const fg_model *model, fg_model_info *out);

/* Writes a copy of the GGUF at in_path to out_path with an `output.weight` of head_type (8 Q8_0 or
 * 2 Q4_0), quantized from token_embd (tied head) or re-quantized from the existing output.weight. All
 * metadata and other tensors are kept byte for byte, in order, with the file's alignment; the file is
 * written to out_path + ".tmp" and renamed, so no partial out_path is ever left behind. in_path must
 * be a gemma3 model fgemma can load. progress (may be NULL) receives rows done / total of the head;
 * returning false cancels (FG_ERR_ABORTED). */
FG_API fg_status fg_model_requant_head(const char *in_path, const char *out_path, uint32_t head_type,
                                       bool (*progress)(uint64_t done, uint64_t total, void *user_data),
                                       void *progress_user_data, fg_error *err);

/* ------------------------------------------------------------------------------------------------
 * Conversion: a Hugging Face Gemma 3 checkpoint, or a GGUF, to a gemma3 GGUF that fgemma and llama.cpp
 * load (docs/ORACLES.md "HF transformers goldens" says how it is checked).
 *
 * in_path is either a checkpoint directory of a Gemma3ForCausalLM (config.json with model_type
 * gemma3_text, as transformers 4.x or 5.x writes it; model.safetensors or shards listed in
 * model.safetensors.index.json, tensors F32, F16 or BF16; tokenizer.json; optionally
 * tokenizer_config.json and chat_template.jinja), or a gemma3 GGUF file (tensors of any type fgemma
 * reads; a quantized tensor given another quantized type is re-quantized from its dequantized values,
 * with a warning, since that adds the new rounding to the old). The output follows llama.cpp's conventions: tensor names, norm
 * weights with Gemma's +1 folded in (F32), every gemma3.* key (both RoPE bases, window, pattern,
 * epsilon, head sizes, context length), the tokenizer as tokenizer.ggml.* (FunctionGemma's control
 * tokens typed CONTROL), the chat template when the checkpoint has one, and general.* provenance;
 * a GGUF input keeps its metadata. Matrices get llama.cpp's reference quantizers (the bytes gen-model and
 * llama.cpp's quantizer give for the same values) or searched least-squares fits, as
 * fg_convert_params.fit says; norm vectors stay F32.
 *
 * Streaming: one chunk of rows at a time (a 270M checkpoint converts in well under 200 MiB of
 * memory). The file is written to out_path + ".tmp.<pid>" and renamed at the end, so a failed or
 * cancelled conversion leaves no partial out_path. Errors name the file and the tensor or key.
 *
 * in_path may also be a Hugging Face PEFT LoRA adapter directory (adapter_config.json and
 * adapter_model.safetensors, tensors F32, F16 or BF16, of a Gemma3ForCausalLM or of the text model of a
 * multimodal Gemma 3): the output is a LoRA adapter in llama.cpp's GGUF format, as fg_lora loads it
 * (general.type "adapter", adapter.type "lora", adapter.lora.alpha = lora_alpha, or lora_alpha * sqrt(r)
 * for use_rslora so that alpha / rank gives PEFT's alpha / sqrt(r); "blk.N.attn_q.weight.lora_a" ne
 * {n_in, rank} and ".lora_b" ne {rank, n_out}, the bytes of PEFT's lora_A and lora_B). type is then
 * F32, F16, BF16 or Q8_0 (or their FG_CONVERT_MIX; AUTO: the adapter's own dtype); a Q8_0 tensor whose
 * rows are not a multiple of 32 (lora_b of a rank below 32) is written F16, as llama.cpp's converter
 * does. An fgemma_vocab_override.json in the directory ({"ids": [...], "tokens": [...]}) becomes
 * fgemma.vocab_override.ids (INT32 array) and .tokens (STRING array). What the format cannot carry is
 * refused (FG_ERR_UNSUPPORTED, naming the key or tensor): DoRA, modules_to_save, LoRA of embed_tokens or
 * lm_head, biases, other PEFT methods, rank_pattern / alpha_pattern that no single alpha reproduces;
 * pairs must be complete, of the configured rank, finite. */
/* Progress of long work: done of total units; return false to cancel (FG_ERR_ABORTED). */
typedef bool (*fg_progress_fn)(uint64_t done, uint64_t total, void *user_data);

#define FG_CONVERT_TYPE_AUTO 0xffffffffu
/* llama-quantize's per-tensor mix for llama.cpp's llama_ftype `ftype` (15 = Q4_K_M, ...): the types
 * llama-quantize gives each tensor of a Gemma 3 (attn_v / ffn_down bumps by layer, the head Q6_K or
 * Q8_0, 32-block fallbacks for rows that are not a multiple of 256). fg_convert_type_parse names them. */
#define FG_CONVERT_MIX_BASE 0x1000u
#define FG_CONVERT_MIX(ftype) (FG_CONVERT_MIX_BASE + (uint32_t)(ftype))

typedef struct fg_convert_params {
  uint32_t type;          /* FG_CONVERT_MIX(ftype): llama-quantize's mix; or one GGML type for every
                             weight matrix (0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0, 3 Q4_1, 6 Q5_0,
                             7 Q5_1, 10 Q2_K .. 14 Q6_K, 20 IQ4_NL, 23 IQ4_XS: rows must be a
                             multiple of its block, as llama-quantize --pure); or
                             FG_CONVERT_TYPE_AUTO (set by fg_convert_params_init): the input's own (a
                             checkpoint's dtype when all matrices share it, else F32; a GGUF's types
                             kept per tensor). Note that {0} asks for F32. */
  uint32_t head_type;     /* 0 = the head as the input has it (tied stays tied; an untied head gets
                             `type`); 8 Q8_0 or 2 Q4_0: write output.weight of that type (quantized
                             from token_embd when the input is tied). Others: FG_ERR_UNSUPPORTED. */
  const char *name;       /* general.name; NULL = the checkpoint's (_name_or_path, else the directory
                             name; a GGUF's own) */
  fg_progress_fn progress; /* tensor bytes written / total; returning false cancels (FG_ERR_ABORTED) */
  void *progress_user_data;
  const char *base;       /* adapter input only: the base model's GGUF, or NULL. Every adapted matrix
                             must exist there with the adapter's n_in and n_out, the layers within its
                             block count, the override's ids within its vocabulary; its
                             general.architecture is written to the adapter (else "gemma3"). Given
                             for any other input: FG_ERR_INVALID_ARG. */
  uint32_t fit;           /* FG_CONVERT_FIT_AUTO (0, the default) or FG_CONVERT_FIT_SEARCHED: which
                             quantizer Q4_0 gets where AUTO gives it the reference one (below);
                             anything else: FG_ERR_INVALID_ARG */
} fg_convert_params;

/* fg_convert_params.fit. AUTO: F32/F16/BF16/Q8_0 get llama.cpp's reference quantizers; Q4_0 too when it
 * is the one type of every matrix (--pure) and for a head_type Q4_0 head (gen-model's bytes, and
 * fg_model_requant_head's); every other quantized tensor a searched least-squares fit
 * (src/tensor/quant_search.c). SEARCHED: those Q4_0 tensors get the searched fit as well (a pure Q4_0
 * of the real Gemma 3 270M: mean KL from F32 0.46 against the reference fit's 0.74, docs/MODELS.md;
 * 35-40 s of one core instead of under a second). F32..Q8_0 have no search and keep the reference quantizers. */
#define FG_CONVERT_FIT_AUTO 0u
#define FG_CONVERT_FIT_SEARCHED 1u

FG_API void fg_convert_params_init(fg_convert_params *p);
/* A --type name ("q4_k_m", "iq4_xs", "f16", ...) as fg_convert_params.type: the mix of that name, or
 * with `pure` the mix's main GGML type for every matrix ("q4_0": llama-quantize's Q4_0 mix, the tied
 * head Q6_K or Q8_0; with `pure` every matrix Q4_0); for f32, f16, bf16 and q8_0 the mix is that type
 * everywhere anyway. FG_ERR_INVALID_ARG for an unknown name.
 * The fits: fg_convert_params.fit (FG_CONVERT_FIT_AUTO above). */
FG_API fg_status fg_convert_type_parse(const char *name, bool pure, uint32_t *type);
/* The names fg_convert_type_parse accepts, comma separated (static text). */
FG_API const char *fg_convert_type_names(void);
/* params may be NULL (defaults); err may be NULL. */
FG_API fg_status fg_convert(const char *in_path, const char *out_path, const fg_convert_params *params, fg_error *err);

/* Name of a GGML type id ("f32", "q8_0", "q4_k", ...; also the GGML types fgemma cannot compute with, e.g.
 * "iq2_xxs"); "?" for ids GGML does not define. */
FG_API const char *fg_type_name(uint32_t type);

/* ------------------------------------------------------------------------------------------------
 * Tokenizer (from the GGUF's tokenizer.ggml.* metadata). FG_ERR_UNSUPPORTED when the file has none.
 */
#define FG_TOKENIZE_ADD_BOS 0x1u       /* prepend the BOS token */
#define FG_TOKENIZE_NO_SPECIAL 0x2u    /* treat control-token text like "<start_of_turn>" as plain text */

/* Writes up to cap ids to out and the count to *n_out. If cap is too small, returns
 * FG_ERR_BUFFER_TOO_SMALL with *n_out = the count needed (out may be NULL when cap == 0). */
FG_API fg_status fg_tokenize(const fg_model *model, const char *text, size_t len, uint32_t flags,
                             int32_t *out, size_t cap, size_t *n_out);
/* Text of ids; writes up to cap bytes (no NUL added) and the byte count to *n_out.
 * Control tokens are rendered by their names. Too small: FG_ERR_BUFFER_TOO_SMALL, *n_out = needed.
 * The bytes are the tokens' own: byte-fallback tokens may split a character across calls, so the
 * result is not always valid UTF-8 (decode it with replacement, or join the ids first). Every other
 * text fgemma hands out (messages, fg_nlu_result, JSON) is valid UTF-8. */
FG_API fg_status fg_detokenize(const fg_model *model, const int32_t *ids, size_t n, char *out, size_t cap,
                               size_t *n_out);
/* Id of a token given its exact text (e.g. "<end_of_turn>"); FG_ERR_INVALID_ARG when absent. */
FG_API fg_status fg_token_lookup(const fg_model *model, const char *piece, int32_t *id);

/* ------------------------------------------------------------------------------------------------
 * Sessions: a KV cache, a position and the logits of the last appended token.
 */
typedef bool (*fg_abort_fn)(void *user_data);

typedef struct fg_session_params {
  uint32_t n_ctx;      /* maximum positions; 0 = the model's context length */
  uint32_t n_threads;  /* 0 = available cores */
  uint32_t n_batch;    /* positions per internal chunk of a prefill; 0 = 256 */
  uint32_t kv_type;    /* GGML type of the KV cache: 0 = F32 (default), 1 = F16 */
  fg_abort_fn abort_cb; /* polled between layers; returning true stops the call with FG_ERR_ABORTED */
  void *abort_user_data;
} fg_session_params;

FG_API void fg_session_params_init(fg_session_params *p);

/* err (may be NULL) receives the reason of a failure, e.g. which parameter is out of range. */
FG_API fg_status fg_session_create(const fg_model *model, const fg_session_params *params, fg_session **out,
                                   fg_error *err);
FG_API void fg_session_free(fg_session *s);

/* Appends n >= 1 tokens (chunked internally); *next_id = greedy next token after the last one.
 * next_id may be NULL. */
FG_API fg_status fg_session_prefill(fg_session *s, const int32_t *ids, size_t n, int32_t *next_id);
/* Appends one token; *next_id = greedy next token. */
FG_API fg_status fg_session_step(fg_session *s, int32_t id, int32_t *next_id);
/* The same from caller-supplied embedding rows: n × n_embd floats, already scaled as the model's own
 * embedding lookup scales them (row of token_embd × sqrt(n_embd)). */
FG_API fg_status fg_session_prefill_embeddings(fg_session *s, const float *rows, size_t n, int32_t *next_id);
/* Logits (n_vocab floats) after the last appended token; NULL before the first append. Borrowed until
 * the next call that mutates s. */
FG_API const float *fg_session_logits(const fg_session *s);
/* Logits that outlive the next call (zero-copy views in bindings): a counted reference to the
 * logits after the last appended token. The floats never change while held (later appends write
 * their logits elsewhere), and they stay valid after the session is freed. NULL before the first
 * append, like fg_session_logits. Costs nothing; a held buffer makes the session's next append
 * allocate a fresh one (n_vocab floats) instead of reusing it. May be released from any thread. */
typedef struct fg_logits fg_logits;
FG_API fg_logits *fg_session_logits_hold(const fg_session *s);
/* The held floats; *n (may be NULL) receives their count (n_vocab). */
FG_API const float *fg_logits_data(const fg_logits *l, uint32_t *n);
FG_API void fg_logits_release(fg_logits *l); /* NULL is a no-op */
/* Tokens held. */
FG_API uint32_t fg_session_position(const fg_session *s);
/* The model a session runs. */
FG_API const fg_model *fg_session_model(const fg_session *s);

/* Immutable handle on the session's current state; no KV bytes are copied. */
FG_API fg_status fg_session_snapshot(fg_session *s, fg_snapshot **out);
/* s continues from snap (snap must come from the same model). */
FG_API fg_status fg_session_restore(fg_session *s, const fg_snapshot *snap);
/* A new session that continues from snap; params as for fg_session_create (NULL = defaults). */
FG_API fg_status fg_session_fork(const fg_snapshot *snap, const fg_session_params *params, fg_session **out,
                                 fg_error *err);
FG_API void fg_snapshot_free(fg_snapshot *snap);
FG_API uint32_t fg_snapshot_position(const fg_snapshot *snap);
/* GGML type of the snapshot's KV cache (0 F32, 1 F16), the kv_type a fork's params must name; 0 for NULL. */
FG_API uint32_t fg_snapshot_kv_type(const fg_snapshot *snap);

/* Persist a snapshot: magic, version, model fingerprint, tokens and KV. Loading refuses a file of
 * another model (FG_ERR_MISMATCH) or a damaged file (FG_ERR_FORMAT). err may be NULL; on failure it
 * receives the message, naming the file and the problem. (Since 0.4: 0.3's thread-local
 * fg_snapshot_errmsg() is removed.) */
FG_API fg_status fg_snapshot_save(const fg_snapshot *snap, const char *path, fg_error *err);
FG_API fg_status fg_snapshot_load(const fg_model *model, const char *path, fg_snapshot **out, fg_error *err);

/* Last error on s; owned by s; "" when the last call succeeded. */
FG_API const char *fg_session_errmsg(const fg_session *s);

/* Memory held by a session's KV cache. Blocks shared with snapshots or other sessions are counted
 * in full by each holder. */
typedef struct fg_session_stats {
  uint64_t kv_bytes_global;   /* KV bytes of global-attention layers */
  uint64_t kv_bytes_sliding;  /* KV bytes of sliding-window layers (bounded by the window) */
  uint32_t kv_blocks;         /* blocks referenced */
  uint32_t kv_blocks_shared;  /* of those, blocks also referenced elsewhere */
} fg_session_stats;
FG_API fg_status fg_session_get_stats(const fg_session *s, fg_session_stats *out);

/* ------------------------------------------------------------------------------------------------
 * Tool calling (FunctionGemma). A catalog is parsed once; the NLU engine renders it into the prompt,
 * prefills it once, keeps the state as a snapshot and answers each utterance from that snapshot.
 *
 * Text outputs follow one rule: the text plus a NUL is written when it fits; *n_out is the text's
 * length without the NUL; when cap < *n_out + 1 the call returns FG_ERR_BUFFER_TOO_SMALL (buf may be
 * NULL when cap is 0).
 */

typedef struct fg_catalog fg_catalog;   /* immutable after parsing; may be shared by threads */

/* Accepts the cartridge schema ({"id","functions":[{"name","description","parameters":{P:{type,
 * description,enum}},"required"}]}) and the OpenAI/Hugging Face tools list (with or without the
 * {"type":"function","function":...} wrapper, or {"tools":[...]}). Errors name function and field. */
FG_API fg_status fg_catalog_parse(const char *json, size_t len, fg_catalog **out, fg_error *err);
/* Drops the caller's reference; NLU engines made from the catalog keep it alive. */
FG_API void fg_catalog_free(fg_catalog *c);
FG_API size_t fg_catalog_n_functions(const fg_catalog *c);
/* The cached prompt prefix: "<start_of_turn>developer\n...<end_of_turn>\n<start_of_turn>user\n" (no BOS). */
FG_API fg_status fg_catalog_render_prefix(const fg_catalog *c, char *buf, size_t cap, size_t *n_out);
/* The utterance part: TEXT "<end_of_turn>\n<start_of_turn>model\n" (TEXT trimmed; control-token text refused). */
FG_API fg_status fg_render_utterance(const char *text, size_t len, char *buf, size_t cap, size_t *n_out);
/* Generated text (control tokens by name) to {"calls":[{"name","args"}],"text":"..."}; with a catalog,
 * unknown names, keys and enum values are flagged. */
FG_API fg_status fg_call_parse(const fg_catalog *c, const char *gen, size_t len, char *json_out, size_t cap,
                               size_t *n_out, fg_error *err);

/* text (len bytes, any bytes) as a JSON string literal, quotes included, that is always valid UTF-8:
 * '"', '\\' and control characters are escaped, and every ill-formed UTF-8 sequence becomes U+FFFD
 * (one per maximal subpart, as Python's errors="replace" and Java's decoders do). Every JSON text
 * fgemma emits goes through this rule. Follows the text output rule above. */
FG_API fg_status fg_json_quote(const char *text, size_t len, char *buf, size_t cap, size_t *n_out);

typedef struct fg_nlu fg_nlu;

#define FG_NLU_MULTI_CALL 0x1u /* after <end_function_call>, continue when the model starts another call */
#define FG_NLU_NO_ANSWER_CACHE 0x2u /* speculation keeps no earlier answers in memory (the answer cache) */

/* Constrained decoding (fg_nlu_params.constrained): every generated call parses and is valid for the
 * catalog (a catalog name, declared keys at most once, required keys present, enum members, values of
 * the declared type). With a constraint, max_tokens never cuts a call: it is checked only between calls
 * and in prose. As with speculation, 0 is the library's choice, so that zero-initialised params get the
 * default; fg_nlu_info.constrained reports the mode in effect. Every surface (CLI, server, bindings)
 * defaults to call-or-text (docs/OPTIONS.md). 0 used to mean off: code that wants plain greedy
 * decoding must name FG_NLU_CONSTRAIN_OFF (its value changed from 0 to 3, so source that names it keeps
 * working; a binary built against the old header must be rebuilt). */
#define FG_NLU_CONSTRAIN_DEFAULT 0u      /* the library's choice: FG_NLU_CONSTRAIN_CALL_OR_TEXT */
#define FG_NLU_CONSTRAIN_CALL_ONLY 1u    /* the answer is one call (several with FG_NLU_MULTI_CALL) */
#define FG_NLU_CONSTRAIN_CALL_OR_TEXT 2u /* a call as above, or prose when the model does not start one */
#define FG_NLU_CONSTRAIN_OFF 3u          /* plain greedy decoding (no constraint) */

typedef struct fg_nlu_params {
  uint32_t max_tokens;          /* generated tokens per utterance; 0 = 64 */
  uint32_t flags;               /* FG_NLU_* */
  const char *snapshot_path;    /* reuse the prefix state from this file when it matches, else prefill
                                   and write it; NULL = always prefill */
  fg_session_params session;    /* zero = defaults */
  fg_progress_fn progress;      /* prefix prefill progress (tokens done / total) */
  void *progress_user_data;
  union {
    uint32_t constrained;       /* FG_NLU_CONSTRAIN_*: decode only what the catalog allows (docs/CONSTRAINED.md);
                                   0 = FG_NLU_CONSTRAIN_DEFAULT (call-or-text); other values: FG_ERR_INVALID_ARG
                                   from fg_nlu_create */
    uint32_t constrain;         /* deprecated: the old name of `constrained` (the same field) */
  };
  uint32_t speculate;           /* FG_NLU_SPECULATE_*: verify drafted tokens in batches (docs/SPECULATION.md);
                                   other values: FG_ERR_INVALID_ARG from fg_nlu_create */
  uint32_t max_draft;           /* most drafted tokens per verification pass; 0 = 8; 1..32, else
                                   FG_ERR_INVALID_ARG. Speculation holds (max_draft + 1) rows of logits:
                                   9.4 MB at 8 and a 262,144-token vocabulary */
  const char *snapshot_dir;     /* a directory of prefix states that processes and machines share (a build
                                   machine can ship one with an app): the file is DIR/fg_nlu_info.snapshot_name,
                                   named by the model's fingerprint (adapters included), the KV type and a hash
                                   of the catalog's prefix tokens. Loaded when it holds exactly this prefix,
                                   else prefilled and written through a temporary file of its own and a rename,
                                   so that concurrent writers never leave a torn file. A damaged or foreign file
                                   is refused (fg_nlu_info.snapshot_refused) and replaced. Ignored when
                                   snapshot_path is set. NULL = none */
} fg_nlu_params;

/* Greedy-identical speculation: the engine guesses the next tokens of an answer (draft sources below)
 * and has the model check them in one forward pass over the weights: it keeps the longest prefix the
 * model agrees with and the model's own token at the first disagreement. The answer (tokens, raw, JSON,
 * stop) is byte-identical with and without it, in every constraint mode; only the number of weight
 * passes changes. While speculating, the engine keeps its last 16 answers (up to 128 tokens) in memory
 * as drafts for a repeated utterance, unless FG_NLU_NO_ANSWER_CACHE is set. */
#define FG_NLU_SPECULATE_DEFAULT 0u /* the library's choice: on */
#define FG_NLU_SPECULATE_OFF 1u     /* one token per weight pass (plus forced tokens with a constraint) */
#define FG_NLU_SPECULATE_ON 2u

/* Draft sources (indices of fg_nlu_result.drafted / .accepted) */
#define FG_NLU_DRAFT_FORCED 0u  /* tokens the call syntax forces: verified only without a constraint (with
                                   one they are chosen without any head and not counted here) */
#define FG_NLU_DRAFT_COPY 1u    /* the rest of an utterance span copied into a string or number value */
#define FG_NLU_DRAFT_CATALOG 2u /* a function name, a required key or the close, an enum member the
                                   utterance spells, the start of a call */
#define FG_NLU_DRAFT_CACHE 3u   /* the engine's earlier answer to the same (normalized) utterance */
#define FG_NLU_DRAFT_CONTEXT 4u /* where no other source guesses: what followed the answer's last tokens
                                   earlier in the prompt (catalog, utterance) or in the answer */
#define FG_NLU_DRAFT_SOURCES 5u

FG_API void fg_nlu_params_init(fg_nlu_params *p);

/* Renders and tokenizes the catalog's prefix, then loads or prefills its state. The engine keeps the
 * model and the catalog alive (either may be freed first). An engine is used by one thread at a time.
 * params->session.abort_cb is polled in the prefix prefill and in every fg_nlu_ask. */
FG_API fg_status fg_nlu_create(const fg_model *model, const fg_catalog *catalog, const fg_nlu_params *params,
                               fg_nlu **out, fg_error *err);
FG_API void fg_nlu_free(fg_nlu *nlu);
/* A new engine for src's model and catalog that starts from src's prefix state: its prefix snapshot
 * shares src's KV blocks (no prefill, no file, nothing copied), so a server keeps one prefilled engine
 * per catalog and forks one per request or per worker, each with its own params (constraint,
 * max_tokens, flags, speculation, session.n_threads, session.abort_cb). params NULL = src's params.
 * From params, session.kv_type is ignored (src's is used), and so are snapshot_path and progress.
 * The fork keeps model and catalog alive and outlives src. Several threads may fork one src at once
 * as long as no thread is in fg_nlu_ask on src. Answers equal those of an engine made with
 * fg_nlu_create and the same params. */
FG_API fg_status fg_nlu_fork(const fg_nlu *src, const fg_nlu_params *params, fg_nlu **out, fg_error *err);

/* Why decoding stopped (fg_nlu_result.stop). Published values never change. */
typedef enum fg_nlu_stop {
  FG_NLU_CONTINUE = 0,            /* not stopped (the stop rule's "go on"; never a result's reason) */
  FG_NLU_STOP_END_CALL = 1,       /* <end_function_call> */
  FG_NLU_STOP_END_TURN = 2,       /* <end_of_turn> */
  FG_NLU_STOP_EOS = 3,            /* <eos> */
  FG_NLU_STOP_RESPONSE = 4,       /* <start_function_response> */
  FG_NLU_STOP_PROSE = 5,          /* max_prose_tokens of prose without a call */
  FG_NLU_STOP_MAX_TOKENS = 6,     /* max_tokens tokens generated */
  FG_NLU_STOP_CONTEXT_FULL = 7,   /* the context (n_ctx) is full */
  FG_NLU_STOP_START_OF_TURN = 8   /* with a constraint: the constrained text ended on another stop token
                                     (<start_of_turn>) */
} fg_nlu_stop;
/* The reason's name, as the JSON outputs carry it: "continue", "end_function_call", "end_of_turn", "eos",
 * "start_function_response", "prose_limit", "max_tokens", "context_full", "start_of_turn"; "unknown" for
 * any other value. A static string, never NULL. */
FG_API const char *fg_nlu_stop_name(fg_nlu_stop stop);

typedef struct fg_nlu_result {
  const char *json;       /* {"calls":[...],"text":"..."}; borrowed until the next fg_nlu_ask */
  const char *raw;        /* the generated text, control tokens by name; valid UTF-8 (an ill-formed
                             sequence from byte-fallback tokens becomes U+FFFD, as in fg_json_quote) */
  fg_nlu_stop stop;       /* why decoding stopped (fg_nlu_stop_name gives its name) */
  uint32_t chunk_tokens;  /* utterance tokens prefilled */
  uint32_t decode_tokens; /* tokens generated */
  double restore_ms, chunk_ms, decode_ms;
  /* How the decode_tokens were chosen (with a constraint; without one all are full_head_steps):
   * full LM head (the allowed set is large or the choice is free), only the allowed rows of the head,
   * or forced by the constraint without any head (appended as one chunk with the next evaluation).
   * With a constraint, chunk_ms covers the utterance plus the forced tokens appended with it. */
  uint32_t full_head_steps, sparse_head_steps, forced_tokens;
  /* Weight passes: forward passes over the model's weights in this call, the utterance chunk included
   * (the passes after the chunk are weight_passes - 1; 0 when every token was forced). Without
   * speculation that is one per token (unconstrained) or per head step (constrained). head_passes:
   * evaluations of the full LM head (each reads the whole head once, for one or several positions). */
  uint32_t weight_passes, head_passes;
  /* Speculation, per source (FG_NLU_DRAFT_*): drafted tokens sent through a verification pass (those
   * after the first disagreement included; with a constraint forced tokens are not counted), and of
   * those the ones the answer kept without a pass of their own. All 0 with speculation off. */
  uint32_t drafted[FG_NLU_DRAFT_SOURCES], accepted[FG_NLU_DRAFT_SOURCES];
} fg_nlu_result;

/* Answers one utterance from the prefix snapshot. An utterance that does not fit the context is an
 * error (FG_ERR_CONTEXT_FULL), never truncated. */
FG_API fg_status fg_nlu_ask(fg_nlu *nlu, const char *utterance, size_t len, fg_nlu_result *out);
FG_API const char *fg_nlu_errmsg(const fg_nlu *nlu);

typedef struct fg_nlu_info {
  uint32_t prefix_tokens;
  double prefix_ms;         /* prefill (or snapshot load) time */
  bool prefix_from_file;    /* the state came from snapshot_path (or snapshot_dir) */
  bool snapshot_written;    /* that file was (re)written */
  bool snapshot_refused;    /* that file existed but was damaged, of another model, KV type or prefix, or
                               unreadable: it was not used (and was replaced when written) */
  char snapshot_name[72];   /* with snapshot_dir: the file's name in it; else "" */
  uint32_t constrained;     /* the constraint mode in effect: FG_NLU_CONSTRAIN_OFF, _CALL_ONLY or
                               _CALL_OR_TEXT (never _DEFAULT) */
  uint32_t speculate;       /* speculation in effect: FG_NLU_SPECULATE_OFF or _ON (never _DEFAULT) */
} fg_nlu_info;
FG_API fg_status fg_nlu_get_info(const fg_nlu *nlu, fg_nlu_info *out);
/* The prefix state (owned by the engine), e.g. to fork sessions of one's own. */
FG_API const fg_snapshot *fg_nlu_snapshot(const fg_nlu *nlu);

/* ------------------------------------------------------------------------------------------------
 * Experimental API: may change in any release. Define FG_EXPERIMENTAL before including this header.
 */
#ifdef FG_EXPERIMENTAL

#define FG_GEN_HEAD_TIED 0xffffffffu

#define FG_GEN_FORMAT_GGUF 0u
#define FG_GEN_FORMAT_HF 1u

/* Synthetic model generator: a valid `gemma3` GGUF with random weights from a seed, or the same
 * model as a Hugging Face Gemma3ForCausalLM checkpoint (the input of fg_convert and of the HF
 * oracle): a weight's values depend only on the seed, its name and the shape, so the GGUF and the
 * checkpoint hold the same numbers (norm weights stored as w - 1 in the checkpoint). */
typedef struct fg_gen_params {
  const char *preset;       /* "tiny" (6 layers, width 64, window 8), "small" (6 layers, width 128, head
                               size 256, window 512, pattern 3, rope_swa 20000) or "270m" (the real shape) */
  uint32_t type;            /* GGML type of the weight matrices: 0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0;
                               FG_GEN_FORMAT_HF: the checkpoint's dtype, F32, F16 or BF16 (all tensors) */
  uint32_t head_type;       /* FG_GEN_HEAD_TIED (default): no output.weight; else its GGML type (HF: an
                               untied lm_head.weight of the checkpoint's dtype) */
  uint64_t seed;            /* 0 = default seed */
  const char *vocab_json;   /* Gemma 3 tokenizer.json for the real vocabulary, or NULL (synthetic) */
  fg_progress_fn progress;
  void *progress_user_data;
  uint32_t format;          /* FG_GEN_FORMAT_GGUF (0): path is the .gguf file; FG_GEN_FORMAT_HF: path is a
                               directory (created; must not exist) receiving config.json, safetensors,
                               tokenizer.json and tokenizer_config.json */
  uint32_t hf_config;       /* HF: config.json as transformers 4.x writes it (4: rope_theta,
                               rope_local_base_freq, sliding_window_pattern, chat template inside
                               tokenizer_config.json) or 5.x (5 or 0: rope_parameters, layer_types,
                               chat_template.jinja) */
  uint32_t hf_shards;       /* HF: 0 or 1 = one model.safetensors; N > 1 = N shards and
                               model.safetensors.index.json */
} fg_gen_params;

FG_API void fg_gen_params_init(fg_gen_params *p);
FG_API fg_status fg_gen_model(const fg_gen_params *params, const char *path, fg_error *err);

/* Synthetic LoRA adapter for a base model (tests, oracles): llama.cpp's GGUF adapter format (general.type
 * "adapter", adapter.type "lora", adapter.lora.alpha, blk.N.<target>.weight.lora_a [n_in, rank] and .lora_b
 * [rank, n_out]) for every layer of the base, with values from a seed: lora_a ~ N(0, 1/n_in) and lora_b
 * drawn so that the change s·B·A at scale 1 has an RMS of `magnitude` times the base matrix's (measured
 * on a sample of its rows). fg_gen_lora_params_init gives rank 8, alpha 16, all seven targets, F32,
 * magnitude FG_GEN_LORA_MAGNITUDE. */
#define FG_GEN_LORA_MAGNITUDE 0.1f
#define FG_GEN_LORA_VOCAB_OVERRIDE 0x1u /* also rename ids 46..52 to FunctionGemma's seven control tokens
                                           (fgemma.vocab_override.ids / .tokens) */
typedef struct fg_gen_lora_params {
  uint32_t rank;        /* 1 .. the smaller side of every adapted matrix */
  float alpha;          /* adapter.lora.alpha (0: the effective scale is the user's scale alone) */
  const char *targets;  /* comma list of attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, or
                           "all" (NULL = all) */
  uint32_t type;        /* GGML type of lora_a / lora_b: 0 F32, 1 F16, 30 BF16, 8 Q8_0 (rank a multiple of 32) */
  uint64_t seed;        /* 0 = 1 */
  float magnitude;      /* RMS of the change relative to the base matrix (> 0, finite) */
  uint32_t flags;       /* FG_GEN_LORA_* */
} fg_gen_lora_params;

FG_API void fg_gen_lora_params_init(fg_gen_lora_params *p);
/* Reads base_path (a gemma3 GGUF fgemma loads) and writes the adapter to out_path (through a temporary
 * file renamed at the end). params NULL = defaults. */
FG_API fg_status fg_gen_lora(const char *base_path, const fg_gen_lora_params *params, const char *out_path,
                             fg_error *err);

/* The reference (oracle) forward: no cache, every position recomputed, plain C with f32 accumulation.
 * Slow by design; it defines what "correct" means for every fast path. ids: n tokens from position 0.
 * Writes n_at × n_vocab logits: row i holds the logits after ids[0..at[i]]. */
FG_API fg_status fg_reference_logits(const fg_model *model, const int32_t *ids, size_t n, const size_t *at, size_t n_at,
                                     float *logits, fg_error *err);
/* Greedy decoding on the reference path: out receives n_gen ids. */
FG_API fg_status fg_reference_generate(const fg_model *model, const int32_t *ids, size_t n, size_t n_gen, int32_t *out,
                                       fg_error *err);

#endif /* FG_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif /* FGEMMA_H */
