/* tokenizer.h — the Gemma 3 tokenizer: a SentencePiece-style ("llama" in GGUF) vocabulary with
 * score-ordered pair merges and byte fallback, as llama.cpp's SPM tokenizer implements it.
 *
 * Encoding, step by step (each step as in llama.cpp's llama_vocab::impl::tokenize for SPM):
 *  1. The text is split at special-token text: control, unknown and user-defined pieces (with
 *     FG_TOKENIZE_NO_SPECIAL only user-defined ones that are neither control nor unknown). Longer
 *     pieces are matched first over the whole text, then shorter ones in what is left; among pieces of
 *     equal length the leftmost occurrence wins.
 *  2. Every remaining fragment gets ' ' -> "▁" (U+2581); when tokenizer.ggml.add_space_prefix is true,
 *     a fragment at the start or right after a special token gets a leading "▁" first.
 *  3. The fragment is cut into UTF-8 characters; a byte that does not start a complete sequence is
 *     a symbol of its own (llama.cpp instead takes as many following bytes as the lead byte announces,
 *     whatever they are: the only difference, and only on invalid UTF-8). Adjacent symbols whose
 *     concatenation is a piece of the vocabulary (of any type) are merged, highest score first, ties
 *     to the leftmost.
 *  4. Every final symbol that is a piece gives its id; any other gives one byte token <0xXX> per byte
 *     (if the vocabulary has no such token: the single-byte piece, else <unk>).
 * Decoding: normal pieces with "▁" -> ' ', byte tokens -> their byte, control / unknown /
 * user-defined pieces by their text, unused or undefined-type tokens -> nothing (as llama.cpp).
 *
 * An fg_vocab is immutable after creation and may be used from any number of threads at once. */
#ifndef FG_TOKENIZER_H
#define FG_TOKENIZER_H

#include "fg_internal.h"
#include "gguf/gguf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fg_vocab fg_vocab;

/* GGUF token types (tokenizer.ggml.token_type). */
enum {
  FG_TOKEN_TYPE_UNDEFINED = 0,
  FG_TOKEN_TYPE_NORMAL = 1,
  FG_TOKEN_TYPE_UNKNOWN = 2,
  FG_TOKEN_TYPE_CONTROL = 3,
  FG_TOKEN_TYPE_USER_DEFINED = 4,
  FG_TOKEN_TYPE_UNUSED = 5,
  FG_TOKEN_TYPE_BYTE = 6
};

/* ------------------------------------------------------------------------------------------------
 * Construction
 */

/* Reads tokenizer.ggml.*: FG_ERR_UNSUPPORTED when tokenizer.ggml.tokens is absent or
 * tokenizer.ggml.model is absent or not "llama"; FG_ERR_FORMAT naming the key when arrays have the
 * wrong type, disagree in length, a special-token id is out of range, a piece is duplicated, a score
 * is NaN, a token type is outside 0..6 or a byte token is not spelled <0xXX>. The vocabulary copies
 * what it needs: g and its buffer may go away afterwards. */
fg_status fg_vocab_load(const fg_gguf *g, fg_vocab **out, fg_error *err);
/* The same with n tokens renamed: the piece at ids[i] becomes texts[i] and a control token (a LoRA
 * adapter's fgemma.vocab_override, model/lora.c, which checks what may be renamed). An id outside the
 * vocabulary or a text that another token has is FG_ERR_FORMAT. */
fg_status fg_vocab_load_override(const fg_gguf *g, const int32_t *ids, const fg_gguf_str *texts, size_t n,
                                 fg_vocab **out, fg_error *err);

/* The same from plain arrays (tests, fuzzing, converters), with the same checks. Scores and types
 * may be NULL (all 0.0 / all normal). Special ids of -1 mean "none". Nothing is referenced after the
 * call. */
typedef struct fg_vocab_desc {
  uint32_t n_tokens;
  const fg_gguf_str *pieces; /* (n_tokens) text, not NUL-terminated */
  const float *scores;       /* (n_tokens) or NULL */
  const int32_t *types;      /* (n_tokens) GGUF token types or NULL */
  int32_t bos_id, eos_id, unk_id, pad_id;
  bool add_space_prefix;
} fg_vocab_desc;
fg_status fg_vocab_create(const fg_vocab_desc *desc, fg_vocab **out, fg_error *err);

void fg_vocab_free(fg_vocab *v); /* NULL-safe */

/* ------------------------------------------------------------------------------------------------
 * Queries (all O(1) except lookup, which is one hash probe sequence)
 */
uint32_t fg_vocab_size(const fg_vocab *v);
int32_t fg_vocab_bos(const fg_vocab *v); /* -1 when none */
int32_t fg_vocab_eos(const fg_vocab *v);
int32_t fg_vocab_unk(const fg_vocab *v);
int32_t fg_vocab_pad(const fg_vocab *v);
bool fg_vocab_add_space_prefix(const fg_vocab *v);
/* Id of the piece with exactly this text, -1 if absent. */
int32_t fg_vocab_lookup(const fg_vocab *v, const char *piece, size_t len);
/* Raw piece text (NUL-terminated, owned by v), NULL for an invalid id. */
const char *fg_vocab_piece(const fg_vocab *v, int32_t id, size_t *len);
float fg_vocab_score(const fg_vocab *v, int32_t id); /* 0 for an invalid id */
uint32_t fg_vocab_token_type(const fg_vocab *v, int32_t id); /* FG_TOKEN_TYPE_*; 0 for an invalid id */
/* Control-type (also a text llama.cpp promotes to control, such as "<end_of_turn>"). */
bool fg_vocab_is_control(const fg_vocab *v, int32_t id);
/* Longest raw piece in bytes; no decoded token text is longer. */
size_t fg_vocab_max_piece_len(const fg_vocab *v);

/* ------------------------------------------------------------------------------------------------
 * Encode / decode
 */
#define FG_VOCAB_ADD_BOS 0x1u    /* = FG_TOKENIZE_ADD_BOS */
#define FG_VOCAB_NO_SPECIAL 0x2u /* = FG_TOKENIZE_NO_SPECIAL */

/* Tokenizes len bytes of text (any bytes; text may be NULL when len == 0). Writes the first
 * min(cap, needed) ids to out and *n_out = needed; FG_ERR_BUFFER_TOO_SMALL when needed > cap (out may
 * be NULL when cap == 0). FG_ERR_UNSUPPORTED for ADD_BOS without a BOS token, FG_ERR_NOMEM. */
fg_status fg_vocab_encode(const fg_vocab *v, const char *text, size_t len, uint32_t flags, int32_t *out,
                          size_t cap, size_t *n_out, fg_error *err);

/* Text of n ids, concatenated (no NUL added): the bytes of fg_vocab_token_to_text for each id, except
 * that with add_space_prefix one leading ' ' of the first token is dropped (llama_detokenize with
 * remove_special = false, unparse_special = true). Writes min(cap, needed) bytes and *n_out = needed;
 * FG_ERR_BUFFER_TOO_SMALL when needed > cap; FG_ERR_INVALID_ARG (naming the index) for an id outside
 * the vocabulary, with nothing written to *n_out. */
fg_status fg_vocab_decode(const fg_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap,
                          size_t *n_out, fg_error *err);

/* Decoded text of one token, for streaming: writes min(cap, needed) bytes to buf and returns needed
 * (<= fg_vocab_max_piece_len); 0 for an invalid id or a token that renders as nothing. */
size_t fg_vocab_token_to_text(const fg_vocab *v, int32_t id, char *buf, size_t cap);

#endif /* FG_TOKENIZER_H */
