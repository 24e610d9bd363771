/* spm.c — text to token ids: special-token partition, then SentencePiece-style merging of UTF-8
 * characters by piece score with a binary heap, then byte fallback (llama.cpp's SPM tokenizer). */
#include "tokenizer/vocab_internal.h"

#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Work buffers of one encode call

/* A span of the text that is one special token. */
typedef struct fg_span {
  uint32_t pos;
  int32_t id;
} fg_span;

/* A possible merge of symbol `left` with the symbol after it, producing a piece of `size` bytes. */
typedef struct fg_bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;
} fg_bigram;

typedef struct fg_enc {
  const fg_vocab *v;
  int32_t *out;
  size_t cap;
  size_t n; /* ids produced so far (also past cap) */

  char *esc;       /* (esc_cap) the current fragment with ' ' -> "▁" */
  size_t esc_cap;
  int32_t *prev;   /* (sym_cap) symbol chain */
  int32_t *next;   /* (sym_cap) */
  uint32_t *start; /* (sym_cap) byte offset of the symbol in esc */
  uint32_t *len;   /* (sym_cap) bytes; 0 = merged into its left neighbour */
  size_t sym_cap;
  fg_bigram *heap; /* (heap_cap) max-heap by (score, -left) */
  size_t heap_n, heap_cap;
  bool nomem;      /* an allocation failed */
  bool no_byte;    /* a byte had no fallback token */
} fg_enc;

static void fg_enc_emit(fg_enc *e, int32_t id) {
  if (id < 0) e->no_byte = true;
  if (e->n < e->cap) e->out[e->n] = id;
  e->n++;
}

static void fg_enc_release(fg_enc *e) {
  fg_free(e->esc);
  fg_free(e->prev);
  fg_free(e->next);
  fg_free(e->start);
  fg_free(e->len);
  fg_free(e->heap);
}

/* Makes room for n_sym symbols. */
static fg_status fg_enc_reserve_symbols(fg_enc *e, size_t n_sym) {
  if (n_sym > e->sym_cap) {
    if (n_sym > SIZE_MAX / sizeof(uint32_t)) return FG_ERR_NOMEM;
    int32_t *a = fg_realloc(e->prev, n_sym * sizeof *a);
    if (!a) return FG_ERR_NOMEM;
    e->prev = a;
    a = fg_realloc(e->next, n_sym * sizeof *a);
    if (!a) return FG_ERR_NOMEM;
    e->next = a;
    uint32_t *b = fg_realloc(e->start, n_sym * sizeof *b);
    if (!b) return FG_ERR_NOMEM;
    e->start = b;
    b = fg_realloc(e->len, n_sym * sizeof *b);
    if (!b) return FG_ERR_NOMEM;
    e->len = b;
    e->sym_cap = n_sym;
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Bigram heap: the top is the highest score, ties to the smallest left index (llama.cpp's order)

static int fg_bigram_before(const fg_bigram *a, const fg_bigram *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void fg_heap_push(fg_enc *e, fg_bigram bg) {
  if (e->heap_n == e->heap_cap) {
    /* never more than n - 1 initial bigrams plus two per merge */
    size_t nc = e->heap_cap ? e->heap_cap * 2 : 256;
    fg_bigram *h = nc <= SIZE_MAX / sizeof *h ? fg_realloc(e->heap, nc * sizeof *h) : NULL;
    if (!h) {
      e->nomem = true;
      return;
    }
    e->heap = h;
    e->heap_cap = nc;
  }
  size_t i = e->heap_n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!fg_bigram_before(&bg, &e->heap[parent])) break;
    e->heap[i] = e->heap[parent];
    i = parent;
  }
  e->heap[i] = bg;
}

static fg_bigram fg_heap_pop(fg_enc *e) {
  fg_bigram top = e->heap[0];
  fg_bigram last = e->heap[--e->heap_n];
  size_t n = e->heap_n, i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && fg_bigram_before(&e->heap[c + 1], &e->heap[c])) c++;
    if (!fg_bigram_before(&e->heap[c], &last)) break;
    e->heap[i] = e->heap[c];
    i = c;
  }
  if (n > 0) e->heap[i] = last;
  return top;
}

// ----------------------------------------------------------------------------------------------
// SentencePiece merging of one fragment

/* Length of the UTF-8 character at s[0..n): the length its lead byte announces (llama.cpp's
 * unicode_len_utf8) if that many bytes follow and all are continuation bytes, else 1. On valid UTF-8
 * this is llama.cpp's split; on invalid input llama.cpp would take the following bytes into the
 * symbol whatever they are (an escaped space included, which breaks the round trip), we take the bad
 * byte alone. */
static size_t fg_utf8_len(const uint8_t *s, size_t n) {
  static const uint8_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  size_t l = lens[s[0] >> 4];
  if (l > n) return 1;
  for (size_t k = 1; k < l; k++) {
    if ((s[k] & 0xC0) != 0x80) return 1;
  }
  return l;
}

static void fg_try_bigram(fg_enc *e, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  size_t size = (size_t)e->len[left] + e->len[right];
  int32_t id = fg_vocab_find(e->v, e->esc + e->start[left], size);
  if (id < 0) return;
  fg_bigram bg = {e->v->scores[id], left, right, (uint32_t)size};
  fg_heap_push(e, bg);
}

/* Tokenizes e->esc[0..n_bytes). */
static fg_status fg_spm_fragment(fg_enc *e, size_t n_bytes) {
  const fg_vocab *v = e->v;
  size_t count = 0;
  const uint8_t *u = (const uint8_t *)e->esc;
  for (size_t off = 0; off < n_bytes; count++) off += fg_utf8_len(u + off, n_bytes - off);
  fg_status st = fg_enc_reserve_symbols(e, count);
  if (st != FG_OK) return st;
  int32_t n_sym = 0;
  for (size_t off = 0; off < n_bytes;) {
    size_t l = fg_utf8_len(u + off, n_bytes - off);
    e->start[n_sym] = (uint32_t)off;
    e->len[n_sym] = (uint32_t)l;
    e->prev[n_sym] = n_sym - 1;
    off += l;
    e->next[n_sym] = off == n_bytes ? -1 : n_sym + 1;
    n_sym++;
  }
  if (n_sym == 0) return FG_OK;

  e->heap_n = 0;
  for (int32_t i = 1; i < n_sym; i++) fg_try_bigram(e, i - 1, i);

  while (e->heap_n > 0 && !e->nomem) {
    fg_bigram bg = fg_heap_pop(e);
    uint32_t *len = e->len;
    /* stale: one side was merged away or grew since the bigram was queued */
    if (len[bg.left] == 0 || len[bg.right] == 0 || len[bg.left] + len[bg.right] != bg.size) continue;
    len[bg.left] += len[bg.right];
    len[bg.right] = 0;
    int32_t nx = e->next[bg.right];
    e->next[bg.left] = nx;
    if (nx >= 0) e->prev[nx] = bg.left;
    fg_try_bigram(e, e->prev[bg.left], bg.left);
    fg_try_bigram(e, bg.left, nx);
  }

  for (int32_t i = 0; i != -1; i = e->next[i]) {
    const char *s = e->esc + e->start[i];
    int32_t id = fg_vocab_find(v, s, e->len[i]);
    if (id >= 0) {
      fg_enc_emit(e, id);
      continue;
    }
    /* not a piece: one byte token per byte (a merged symbol is always a piece, so this is a single
     * character, and llama.cpp's resegment finds no recorded merge for it) */
    for (uint32_t k = 0; k < e->len[i]; k++) fg_enc_emit(e, v->byte_tok[(uint8_t)s[k]]);
  }
  return e->nomem ? FG_ERR_NOMEM : FG_OK;
}

/* Escapes text[0..len) into e->esc (with an optional leading "▁") and tokenizes it. */
static fg_status fg_spm_text(fg_enc *e, const char *text, size_t len, bool space_prefix) {
  size_t spaces = 0;
  for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
  /* each ' ' becomes 3 bytes; len <= UINT32_MAX / 4 (checked by the caller) keeps this in range */
  size_t n_bytes = len + 2 * spaces + (space_prefix ? 3 : 0);
  if (n_bytes > e->esc_cap) {
    char *p = fg_realloc(e->esc, n_bytes);
    if (!p) return FG_ERR_NOMEM;
    e->esc = p;
    e->esc_cap = n_bytes;
  }
  char *d = e->esc;
  if (space_prefix) {
    *d++ = (char)0xE2;
    *d++ = (char)0x96;
    *d++ = (char)0x81;
  }
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') {
      *d++ = (char)0xE2;
      *d++ = (char)0x96;
      *d++ = (char)0x81;
    } else {
      *d++ = text[i];
    }
  }
  return fg_spm_fragment(e, (size_t)(d - e->esc));
}

// ----------------------------------------------------------------------------------------------
// Special-token partition
//
// llama.cpp (tokenizer_st_partition) takes the special pieces longest first and, for each, splits
// every remaining raw fragment at all its non-overlapping occurrences, left to right. The same
// result, without a pass per piece: find every position where some allowed special piece starts
// (a trie walk), then for each occurring length L, longest first, claim the occurrences of length L
// left to right unless they overlap a claimed span. Claimed spans are never shorter than L, so a
// span [p, p+L) overlaps one iff p or p+L-1 is claimed.

typedef struct fg_cand {
  uint32_t pos;
  uint32_t max_len; /* longest allowed special piece starting at pos */
} fg_cand;

static bool fg_special_allowed(const fg_vocab *v, int32_t id, bool parse_special) {
  if (parse_special) return true;
  /* without special parsing only user-defined pieces split (not control or unknown ones) */
  return !(v->attr[id] & (FG_TOK_ATTR_CONTROL | FG_TOK_ATTR_UNKNOWN));
}

/* Longest allowed special piece at text[pos..len), 0 if none. */
static uint32_t fg_special_longest(const fg_vocab *v, const uint8_t *t, size_t pos, size_t len, bool parse_special) {
  uint32_t node = v->trie_root[t[pos]];
  uint32_t best = 0;
  size_t k = pos;
  while (node) {
    const fg_trie_node *nd = &v->trie[node];
    if (nd->token >= 0 && fg_special_allowed(v, nd->token, parse_special)) best = (uint32_t)(k - pos + 1);
    if (++k >= len) break;
    uint32_t c = nd->child;
    while (c && v->trie[c].byte != t[k]) c = v->trie[c].sibling;
    node = c;
  }
  return best;
}

/* Id of the allowed special piece of exactly L bytes at text[pos..], -1 if none. */
static int32_t fg_special_exact(const fg_vocab *v, const uint8_t *t, size_t pos, uint32_t L, bool parse_special) {
  uint32_t node = v->trie_root[t[pos]];
  for (uint32_t k = 1; node && k < L; k++) {
    uint32_t c = v->trie[node].child;
    while (c && v->trie[c].byte != t[pos + k]) c = v->trie[c].sibling;
    node = c;
  }
  if (!node) return -1;
  int32_t id = v->trie[node].token;
  return id >= 0 && fg_special_allowed(v, id, parse_special) ? id : -1;
}

static int fg_span_cmp(const void *a, const void *b) {
  uint32_t x = ((const fg_span *)a)->pos, y = ((const fg_span *)b)->pos;
  return x < y ? -1 : x > y;
}

/* Finds the special tokens of text in position order: *spans (allocated, caller frees), *n_spans. */
static fg_status fg_partition(const fg_vocab *v, const uint8_t *t, size_t len, bool parse_special, fg_span **spans,
                              size_t *n_spans) {
  *spans = NULL;
  *n_spans = 0;
  if (v->max_special_len == 0 || len == 0) return FG_OK;

  fg_cand *cand = NULL;
  size_t n_cand = 0, cand_cap = 0;
  uint8_t *claimed = NULL;
  fg_span *sp = NULL;
  size_t n_sp = 0, sp_cap = 0;
  fg_status st = FG_OK;
  uint32_t top_len = 0;

  for (size_t p = 0; p < len; p++) {
    if (!v->trie_root[t[p]]) continue;
    uint32_t m = fg_special_longest(v, t, p, len, parse_special);
    if (!m) continue;
    if (n_cand == cand_cap) {
      size_t nc = cand_cap ? cand_cap * 2 : 64;
      fg_cand *c = fg_realloc(cand, nc * sizeof *c);
      if (!c) {
        st = FG_ERR_NOMEM;
        goto done;
      }
      cand = c;
      cand_cap = nc;
    }
    cand[n_cand].pos = (uint32_t)p;
    cand[n_cand].max_len = m;
    n_cand++;
    if (m > top_len) top_len = m;
  }
  if (n_cand == 0) goto done;

  claimed = fg_calloc(len, 1);
  if (!claimed) {
    st = FG_ERR_NOMEM;
    goto done;
  }
  for (uint32_t L = top_len; L >= 1 && n_cand > 0; L--) {
    size_t keep = 0;
    for (size_t i = 0; i < n_cand; i++) {
      fg_cand c = cand[i];
      if (claimed[c.pos]) continue; /* inside a claimed span: never again a start */
      if (c.max_len >= L && !claimed[c.pos + L - 1]) {
        int32_t id = fg_special_exact(v, t, c.pos, L, parse_special);
        if (id >= 0) {
          memset(claimed + c.pos, 1, L);
          if (n_sp == sp_cap) {
            size_t nc = sp_cap ? sp_cap * 2 : 64;
            fg_span *s = fg_realloc(sp, nc * sizeof *s);
            if (!s) {
              st = FG_ERR_NOMEM;
              goto done;
            }
            sp = s;
            sp_cap = nc;
          }
          sp[n_sp].pos = c.pos;
          sp[n_sp].id = id;
          n_sp++;
          continue;
        }
      }
      if (L > 1) cand[keep++] = c; /* may still start a shorter piece */
    }
    n_cand = keep;
  }
  qsort(sp, n_sp, sizeof *sp, fg_span_cmp);

done:
  fg_free(cand);
  fg_free(claimed);
  if (st != FG_OK) {
    fg_free(sp);
    return st;
  }
  *spans = sp;
  *n_spans = n_sp;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Entry point

_Static_assert(FG_VOCAB_ADD_BOS == FG_TOKENIZE_ADD_BOS, "flag values are shared with fgemma.h");
_Static_assert(FG_VOCAB_NO_SPECIAL == FG_TOKENIZE_NO_SPECIAL, "flag values are shared with fgemma.h");

fg_status fg_vocab_encode(const fg_vocab *v, const char *text, size_t len, uint32_t flags, int32_t *out, size_t cap,
                          size_t *n_out, fg_error *err) {
  if (!v || !n_out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_encode: NULL argument");
  if (len && !text) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_encode: text is NULL with length %zu", len);
  if (cap && !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_encode: out is NULL with cap %zu", cap);
  if (len > UINT32_MAX / 4)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_encode: text of %zu bytes is too long", len);
  if ((flags & FG_VOCAB_ADD_BOS) && v->bos < 0)
    return fg_err(err, FG_ERR_UNSUPPORTED, "the vocabulary has no BOS token");

  const bool parse_special = !(flags & FG_VOCAB_NO_SPECIAL);
  fg_enc e;
  memset(&e, 0, sizeof e);
  e.v = v;
  e.out = out;
  e.cap = cap;

  fg_span *spans = NULL;
  size_t n_spans = 0;
  fg_status st = fg_partition(v, (const uint8_t *)text, len, parse_special, &spans, &n_spans);
  if (st != FG_OK) return fg_err(err, st, "tokenizer: out of memory partitioning %zu bytes", len);

  if (flags & FG_VOCAB_ADD_BOS) fg_enc_emit(&e, v->bos);
  bool prev_special = true; /* a space prefix goes before the first fragment */
  size_t pos = 0;
  for (size_t s = 0; s <= n_spans && st == FG_OK; s++) {
    size_t end = s < n_spans ? spans[s].pos : len;
    if (end > pos) {
      st = fg_spm_text(&e, text + pos, end - pos, v->add_space_prefix && prev_special);
      prev_special = false;
    }
    if (s < n_spans) {
      int32_t id = spans[s].id;
      fg_enc_emit(&e, id);
      prev_special = true;
      size_t plen;
      fg_vocab_piece_ptr(v, id, &plen);
      pos = end + plen;
    }
  }
  fg_free(spans);
  fg_enc_release(&e);
  if (st != FG_OK) return fg_err(err, st, "tokenizer: out of memory on %zu bytes of text", len);

  if (e.no_byte) /* no <0xXX>, no one-byte piece and no <unk> for some byte */
    return fg_err(err, FG_ERR_UNSUPPORTED, "the vocabulary cannot encode a byte of the text");
  *n_out = e.n;
  if (e.n > cap) return fg_err(err, FG_ERR_BUFFER_TOO_SMALL, "%zu tokens do not fit into %zu", e.n, cap);
  return FG_OK;
}
