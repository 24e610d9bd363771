/* vocab_internal.h — the fg_vocab layout, shared by vocab.c (load, queries, decode) and spm.c
 * (encode). Not part of any API. */
#ifndef FG_VOCAB_INTERNAL_H
#define FG_VOCAB_INTERNAL_H

#include "tokenizer/tokenizer.h"

#include <string.h>

/* Token attributes as llama.cpp derives them from the GGUF token type (bit flags, so that a token
 * can be promoted, e.g. a user-defined "<end_of_turn>" becomes user-defined | control). */
enum {
  FG_TOK_ATTR_NORMAL = 1u << 0,
  FG_TOK_ATTR_UNKNOWN = 1u << 1,
  FG_TOK_ATTR_CONTROL = 1u << 2,
  FG_TOK_ATTR_USER_DEFINED = 1u << 3,
  FG_TOK_ATTR_UNUSED = 1u << 4,
  FG_TOK_ATTR_BYTE = 1u << 5
};
#define FG_TOK_ATTR_SPECIAL (FG_TOK_ATTR_CONTROL | FG_TOK_ATTR_USER_DEFINED | FG_TOK_ATTR_UNKNOWN)

/* Slot of the piece hash table (open addressing, linear probing). */
typedef struct fg_hslot {
  uint32_t hash; /* hash of the piece */
  int32_t id;    /* token id, -1 = empty */
} fg_hslot;

/* Node of the byte trie over the special pieces (control, user-defined, unknown). Children form a
 * sibling list; index 0 is "none". */
typedef struct fg_trie_node {
  int32_t token;    /* id of the piece ending here, -1 if none */
  uint32_t child;   /* first child */
  uint32_t sibling; /* next sibling */
  uint8_t byte;     /* byte on the edge into this node */
} fg_trie_node;

struct fg_vocab {
  uint32_t n;            /* number of tokens */
  char *pool;            /* every piece, each followed by a NUL */
  uint32_t *off;         /* (n + 1) piece i = pool + off[i], length off[i+1] - off[i] - 1 */
  float *scores;         /* (n) */
  uint8_t *type;         /* (n) GGUF token type as stored in the file */
  uint8_t *attr;         /* (n) FG_TOK_ATTR_* */
  size_t max_len;        /* longest piece in bytes */

  uint32_t hmask;        /* hash capacity - 1 (capacity a power of two, >= 2n) */
  fg_hslot *slots;       /* (capacity) */

  int32_t bos, eos, unk, pad; /* -1 = none */
  bool add_space_prefix;
  int32_t byte_tok[256];       /* token for a raw byte in byte fallback, -1 = none */

  fg_trie_node *trie;          /* (n_trie) node 0 unused */
  uint32_t n_trie;
  uint32_t trie_root[256];     /* node for the first byte, 0 = no special piece starts with it */
  size_t max_special_len;      /* longest special piece in bytes, 0 = none */
};

/* FNV-1a, 32 bits. */
static inline uint32_t fg_vocab_hash(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

static inline const char *fg_vocab_piece_ptr(const fg_vocab *v, int32_t id, size_t *len) {
  *len = (size_t)(v->off[id + 1] - v->off[id] - 1);
  return v->pool + v->off[id];
}

/* Id of the piece s[0..len), -1 if absent. */
static inline int32_t fg_vocab_find(const fg_vocab *v, const char *s, size_t len) {
  if (len > v->max_len) return -1;
  uint32_t h = fg_vocab_hash(s, len);
  for (uint32_t i = h & v->hmask;; i = (i + 1) & v->hmask) {
    int32_t id = v->slots[i].id;
    if (id < 0) return -1;
    if (v->slots[i].hash == h) {
      size_t plen;
      const char *p = fg_vocab_piece_ptr(v, id, &plen);
      if (plen == len && memcmp(p, s, len) == 0) return id;
    }
  }
}

#endif /* FG_VOCAB_INTERNAL_H */
