/* hf_vocab.h — a GGUF vocabulary (tokenizer.ggml.tokens / scores / token_type) in memory: read from a
 * Hugging Face tokenizer.json (BPE with byte fallback, as Gemma 3 ships it) or built by the synthetic
 * generator, and written as llama.cpp's `llama` (SentencePiece-style) tokenizer metadata.
 *
 * How tokenizer.json becomes GGUF metadata (what llama.cpp's converter writes for Gemma 3, checked
 * against its tokenizer in docs/ORACLES.md): pieces as in model.vocab ("▁" kept); score of a piece =
 * −(rank of the first merge that produces it), 0 when no merge does; added tokens: CONTROL when
 * flagged special or when they only look special (<pad>, <mask>, <unusedN>, <|...|>, FunctionGemma's
 * seven names, ...), else USER_DEFINED with "▁" written as a space, score −1000; <unk> UNKNOWN and
 * <0xXX> BYTE with score 0. Added tokens with ids beyond model.vocab (Gemma 3's <image_soft_token>)
 * are left out, as llama.cpp's converter does.
 *
 * The reader is a pure function over the file's bytes and uses about 20 bytes per token plus the
 * piece text, never a JSON tree (Gemma 3's 33 MB file as a cJSON tree took 230 MB). */
#ifndef FG_HF_VOCAB_H
#define FG_HF_VOCAB_H

#include "fg_internal.h"
#include "gguf/gguf.h"

#include <stdbool.h>

/* llama.cpp token types */
enum { FG_TOK_NORMAL = 1, FG_TOK_UNKNOWN = 2, FG_TOK_CONTROL = 3, FG_TOK_USER = 4, FG_TOK_UNUSED = 5, FG_TOK_BYTE = 6 };

typedef struct fg_hf_vocab {
  uint32_t n;
  const char **text; /* [n] piece bytes, NUL-terminated (in pool or static) */
  size_t *len;       /* [n] */
  float *score;      /* [n] */
  int32_t *type;     /* [n] llama token types */
  char *pool;        /* piece storage */
  size_t pool_cap, pool_used;
  int32_t *slot;     /* [slot_cap] hash table piece -> id (-1 = empty), built by fg_hf_vocab_index */
  size_t slot_cap;
} fg_hf_vocab;

/* What the reader found besides the pieces. */
typedef struct fg_hf_vocab_info {
  int add_bos;          /* post_processor prepends a special token: 1; does not: 0; no post_processor: -1 */
  uint32_t n_added;     /* added tokens applied */
  uint32_t n_added_out; /* added tokens with ids beyond model.vocab, left out */
} fg_hf_vocab_info;

void fg_hf_vocab_free(fg_hf_vocab *v);
/* n empty entries and a pool of pool_cap bytes. */
fg_status fg_hf_vocab_alloc(fg_hf_vocab *v, uint32_t n, size_t pool_cap);
/* Copies n bytes into the pool (NUL added) as piece id; the pool must have room. */
void fg_hf_vocab_put(fg_hf_vocab *v, uint32_t id, const char *s, size_t n, int32_t type, float score);

/* Builds the piece -> id table; FG_ERR_FORMAT naming the piece when one appears twice. */
fg_status fg_hf_vocab_index(fg_hf_vocab *v, fg_error *err);
/* Id of a piece, -1 when absent (needs fg_hf_vocab_index). */
int32_t fg_hf_vocab_find(const fg_hf_vocab *v, const char *s, size_t n);

/* Reads tokenizer.json bytes. Messages start with `name` (the file's name). */
fg_status fg_hf_vocab_read_json(const char *json, size_t size, const char *name, fg_hf_vocab *v,
                                fg_hf_vocab_info *info, fg_error *err);

/* Added tokens that llama.cpp treats as control although tokenizer.json does not flag them special. */
bool fg_hf_looks_special(const char *s, size_t n);

/* FunctionGemma's seven control tokens, in id order (46..52 in FunctionGemma's vocabulary). */
#define FG_FN_TOKEN_FIRST_ID 46
extern const char *const fg_fn_tokens[7];

/* The tokenizer.ggml.* keys of a Gemma 3 vocabulary. */
typedef struct fg_hf_special {
  uint32_t bos, eos, unk, pad;
  bool add_bos, add_eos;
} fg_hf_special;
fg_status fg_hf_vocab_write_gguf(fg_gguf_writer *w, const fg_hf_vocab *v, const fg_hf_special *sp, fg_error *err);

#endif /* FG_HF_VOCAB_H */
