/* vocab.c — the token table of a SentencePiece-style GGUF vocabulary: loading and checking
 * tokenizer.ggml.*, the piece hash table, the special-token trie, token attributes as llama.cpp
 * derives them, queries and decoding. Encoding lives in spm.c. */
#include "tokenizer/vocab_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Texts llama.cpp recognises by name (llama_vocab::impl::load, "auto-detect special tokens")

/* Groups of alternative names for one special role: when the file does not name the role's id
 * (its key), the first name present becomes that role's token and is promoted to control. */
typedef struct fg_name_group {
  const char *key;   /* tokenizer.ggml.* key naming the id; NULL = none */
  const char *key2;  /* deprecated alias of key, or NULL */
  const char *const *names;
} fg_name_group;

static const char *const k_eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                          "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                          "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
                                          "<end_of_utterance>", NULL};
static const char *const k_eom_names[] = {"<|eom_id|>", NULL};
static const char *const k_fim_pre_names[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                              "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
                                              "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const k_fim_suf_names[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                              "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>",
                                              "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const k_fim_mid_names[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                              "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
                                              "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const k_fim_pad_names[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const k_fim_rep_names[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                              "<reponame>", NULL};
static const char *const k_fim_sep_names[] = {"<|file_sep|>", NULL};

enum { FG_GROUP_EOT, FG_GROUP_EOM, FG_GROUP_FIM_PRE, FG_GROUP_FIM_SUF, FG_GROUP_FIM_MID, FG_GROUP_FIM_PAD,
       FG_GROUP_FIM_REP, FG_GROUP_FIM_SEP, FG_GROUP_COUNT };

static const fg_name_group k_groups[FG_GROUP_COUNT] = {
    {"tokenizer.ggml.eot_token_id", NULL, k_eot_names},
    {"tokenizer.ggml.eom_token_id", NULL, k_eom_names},
    {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id", k_fim_pre_names},
    {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id", k_fim_suf_names},
    {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id", k_fim_mid_names},
    {"tokenizer.ggml.fim_pad_token_id", NULL, k_fim_pad_names},
    {"tokenizer.ggml.fim_rep_token_id", NULL, k_fim_rep_names},
    {"tokenizer.ggml.fim_sep_token_id", NULL, k_fim_sep_names},
};

/* Every one of these texts present in the vocabulary ends generation and is promoted to control. */
static const char *const k_eog_names[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL};

/* Set to user-defined only (llama.cpp's gpt-oss rule). */
static const char *const k_force_user_names[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

// ----------------------------------------------------------------------------------------------
// Construction helpers

static uint8_t fg_attr_from_type(int32_t type) {
  switch (type) {
    case FG_TOKEN_TYPE_NORMAL: return FG_TOK_ATTR_NORMAL;
    case FG_TOKEN_TYPE_UNKNOWN: return FG_TOK_ATTR_UNKNOWN;
    case FG_TOKEN_TYPE_CONTROL: return FG_TOK_ATTR_CONTROL;
    case FG_TOKEN_TYPE_USER_DEFINED: return FG_TOK_ATTR_USER_DEFINED;
    case FG_TOKEN_TYPE_UNUSED: return FG_TOK_ATTR_UNUSED;
    case FG_TOKEN_TYPE_BYTE: return FG_TOK_ATTR_BYTE;
    default: return 0; /* undefined */
  }
}

static int fg_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Byte value of a "<0xXX>" piece, -1 if it is not spelled so. */
static int fg_byte_piece_value(const char *p, size_t len) {
  if (len != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
  int hi = fg_hex_digit(p[3]), lo = fg_hex_digit(p[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

static int32_t fg_vocab_find_cstr(const fg_vocab *v, const char *s) { return fg_vocab_find(v, s, strlen(s)); }

/* Inserts every piece into the hash table; FG_ERR_FORMAT on a duplicate. */
static fg_status fg_vocab_build_hash(fg_vocab *v, fg_error *err) {
  uint32_t cap = 16;
  while (cap < 2u * v->n) {
    if (cap > (UINT32_MAX >> 2)) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: too many tokens");
    cap <<= 1;
  }
  v->hmask = cap - 1;
  v->slots = fg_malloc_array(cap, sizeof *v->slots);
  uint32_t *hashes = fg_malloc_array(v->n, sizeof *hashes); /* (n) */
  if (!v->slots || !hashes) {
    fg_free(hashes);
    return fg_err(err, FG_ERR_NOMEM, "vocabulary hash table (%u slots)", cap);
  }
  for (uint32_t i = 0; i < cap; i++) v->slots[i].id = -1;
  for (uint32_t id = 0; id < v->n; id++) {
    size_t len;
    const char *p = fg_vocab_piece_ptr(v, (int32_t)id, &len);
    hashes[id] = fg_vocab_hash(p, len);
  }
  /* the slots are random accesses: prefetch a few tokens ahead (loading is dominated by misses) */
  enum { AHEAD = 16 };
  fg_status st = FG_OK;
  for (uint32_t id = 0; id < v->n; id++) {
#if defined(__GNUC__)
    if (id + AHEAD < v->n) __builtin_prefetch(&v->slots[hashes[id + AHEAD] & v->hmask], 1);
#endif
    size_t len;
    const char *p = fg_vocab_piece_ptr(v, (int32_t)id, &len);
    const uint32_t h = hashes[id];
    uint32_t i = h & v->hmask;
    for (;; i = (i + 1) & v->hmask) {
      int32_t other = v->slots[i].id;
      if (other < 0) break;
      if (v->slots[i].hash == h) {
        size_t olen;
        const char *o = fg_vocab_piece_ptr(v, other, &olen);
        if (olen == len && memcmp(o, p, len) == 0) {
          st = fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: token %u duplicates token %d (\"%.*s\")", id,
                      other, (int)FG_MIN(len, (size_t)40), p);
          goto done;
        }
      }
    }
    v->slots[i].id = (int32_t)id;
    v->slots[i].hash = h;
  }
done:
  fg_free(hashes);
  return st;
}

/* Byte trie over the special pieces (those llama.cpp splits out before SPM). */
static fg_status fg_vocab_build_trie(fg_vocab *v, fg_error *err) {
  uint64_t total = 1;
  for (uint32_t id = 0; id < v->n; id++) {
    if (v->attr[id] & FG_TOK_ATTR_SPECIAL) total += v->off[id + 1] - v->off[id] - 1;
  }
  if (total > UINT32_MAX / 2) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: special pieces too long");
  v->trie = fg_malloc_array((size_t)total, sizeof *v->trie);
  if (!v->trie) return fg_err(err, FG_ERR_NOMEM, "special-token trie (%llu nodes)", (unsigned long long)total);
  memset(v->trie, 0, sizeof *v->trie); /* node 0: the "none" sentinel */
  v->trie[0].token = -1;
  v->n_trie = 1;
  memset(v->trie_root, 0, sizeof v->trie_root);
  v->max_special_len = 0;
  for (uint32_t id = 0; id < v->n; id++) {
    if (!(v->attr[id] & FG_TOK_ATTR_SPECIAL)) continue;
    size_t len;
    const uint8_t *p = (const uint8_t *)fg_vocab_piece_ptr(v, (int32_t)id, &len);
    if (len == 0) continue; /* cannot happen: empty pieces were renamed */
    if (len > v->max_special_len) v->max_special_len = len;
    uint32_t *link = &v->trie_root[p[0]];
    uint32_t node = 0;
    for (size_t k = 0; k < len; k++) {
      if (k > 0) { /* find the child of node with byte p[k] */
        link = &v->trie[node].child;
        while (*link && v->trie[*link].byte != p[k]) link = &v->trie[*link].sibling;
      }
      if (!*link) {
        uint32_t nn = v->n_trie++;
        v->trie[nn].token = -1;
        v->trie[nn].child = 0;
        v->trie[nn].sibling = 0;
        v->trie[nn].byte = p[k];
        *link = nn;
      }
      node = *link;
    }
    v->trie[node].token = (int32_t)id; /* pieces are unique, so no earlier id ends here */
  }
  return FG_OK;
}

/* Attribute promotions llama.cpp applies by token text (see the tables above). */
static void fg_vocab_name_rules(fg_vocab *v, const int32_t group_ids[FG_GROUP_COUNT]) {
  for (int gi = 0; gi < FG_GROUP_COUNT; gi++) {
    if (group_ids[gi] >= 0) continue; /* named by the file: no promotion */
    for (const char *const *nm = k_groups[gi].names; *nm; nm++) {
      int32_t id = fg_vocab_find_cstr(v, *nm);
      if (id >= 0) {
        v->attr[id] |= FG_TOK_ATTR_CONTROL;
        break;
      }
    }
  }
  /* control pieces containing "unused" are marked unused (no effect on encoding or decoding) */
  for (uint32_t id = 0; id < v->n; id++) {
    if ((v->attr[id] & FG_TOK_ATTR_CONTROL) && strstr(v->pool + v->off[id], "unused")) v->attr[id] |= FG_TOK_ATTR_UNUSED;
  }
  for (const char *const *nm = k_eog_names; *nm; nm++) {
    int32_t id = fg_vocab_find_cstr(v, *nm);
    if (id >= 0) v->attr[id] |= FG_TOK_ATTR_CONTROL;
  }
  for (const char *const *nm = k_force_user_names; *nm; nm++) {
    int32_t id = fg_vocab_find_cstr(v, *nm);
    if (id >= 0) v->attr[id] = FG_TOK_ATTR_USER_DEFINED;
  }
  /* o200k_harmony / solar-open: "<|end|>" is demoted to user-defined */
  int32_t end_id = fg_vocab_find_cstr(v, "<|end|>");
  bool has_return = fg_vocab_find_cstr(v, "<|return|>") >= 0, has_flush = fg_vocab_find_cstr(v, "<|flush|>") >= 0;
  bool has_call = fg_vocab_find_cstr(v, "<|call|>") >= 0 || fg_vocab_find_cstr(v, "<|calls|>") >= 0;
  if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) v->attr[end_id] = FG_TOK_ATTR_USER_DEFINED;
  /* gemma4 / paddleocr: "</s>" is a normal piece when "<|tool_response>" exists */
  int32_t s_id = fg_vocab_find_cstr(v, "</s>");
  if (s_id >= 0 && fg_vocab_find_cstr(v, "<|tool_response>") >= 0) v->attr[s_id] = FG_TOK_ATTR_NORMAL;
}

/* Everything after the arrays are known. group_ids: ids the file names for the roles in k_groups
 * (-1 = not named). */
static fg_status fg_vocab_build(const fg_vocab_desc *d, const int32_t group_ids[FG_GROUP_COUNT], fg_vocab **out,
                                fg_error *err) {
  *out = NULL;
  if (d->n_tokens == 0) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: empty vocabulary");
  if (d->n_tokens > (uint32_t)INT32_MAX - 1) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: too many tokens");
  if (!d->pieces) return fg_err(err, FG_ERR_INVALID_ARG, "vocabulary without pieces");
  const uint32_t n = d->n_tokens;
  const int32_t specials[4] = {d->bos_id, d->eos_id, d->unk_id, d->pad_id};
  for (int k = 0; k < 4; k++) {
    if (specials[k] < -1 || specials[k] >= (int32_t)n)
      return fg_err(err, FG_ERR_FORMAT, "special token id %d out of range (vocabulary of %u)", specials[k], n);
  }

  /* pool size: every piece plus its NUL; empty pieces become "[EMPTY_<id>]" as in llama.cpp */
  uint64_t pool = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t len = d->pieces[i].len ? (uint64_t)d->pieces[i].len : 20u;
    if (d->pieces[i].len && !d->pieces[i].ptr) return fg_err(err, FG_ERR_INVALID_ARG, "piece %u has no text", i);
    pool += len + 1;
  }
  if (pool > UINT32_MAX) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: %llu bytes of text is too much",
                                       (unsigned long long)pool);

  fg_vocab *v = fg_calloc(1, sizeof *v);
  if (!v) return fg_err(err, FG_ERR_NOMEM, "vocabulary");
  fg_status st = FG_OK;
  v->n = n;
  v->pool = fg_malloc((size_t)pool);
  v->off = fg_malloc_array((size_t)n + 1, sizeof *v->off);
  v->scores = fg_malloc_array(n, sizeof *v->scores);
  v->type = fg_malloc(n);
  v->attr = fg_malloc(n);
  if (!v->pool || !v->off || !v->scores || !v->type || !v->attr) {
    st = fg_err(err, FG_ERR_NOMEM, "vocabulary of %u tokens", n);
    goto fail;
  }

  uint32_t pos = 0;
  for (uint32_t i = 0; i < n; i++) {
    v->off[i] = pos;
    size_t len = d->pieces[i].len;
    if (len) {
      memcpy(v->pool + pos, d->pieces[i].ptr, len);
    } else {
      len = (size_t)snprintf(v->pool + pos, 20, "[EMPTY_%u]", i);
    }
    v->pool[pos + len] = '\0';
    pos += (uint32_t)len + 1;
    if (len > v->max_len) v->max_len = len;

    float s = d->scores ? d->scores[i] : 0.0f;
    if (isnan(s)) {
      st = fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.scores: NaN score of token %u", i);
      goto fail;
    }
    v->scores[i] = s;
    int32_t t = d->types ? d->types[i] : FG_TOKEN_TYPE_NORMAL;
    if (t < 0 || t > FG_TOKEN_TYPE_BYTE) {
      st = fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.token_type: token %u has type %d (valid: 0..6)", i, (int)t);
      goto fail;
    }
    v->type[i] = (uint8_t)t;
    v->attr[i] = fg_attr_from_type(t);
    if (t == FG_TOKEN_TYPE_BYTE && fg_byte_piece_value(v->pool + v->off[i], len) < 0) {
      st = fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: byte token %u is \"%.*s\", not <0xXX>", i,
                  (int)FG_MIN(len, (size_t)40), v->pool + v->off[i]);
      goto fail;
    }
  }
  v->off[n] = pos;

  if ((st = fg_vocab_build_hash(v, err)) != FG_OK) goto fail;

  v->bos = d->bos_id;
  v->eos = d->eos_id;
  v->unk = d->unk_id;
  v->pad = d->pad_id;
  v->add_space_prefix = d->add_space_prefix;

  fg_vocab_name_rules(v, group_ids);

  /* byte fallback: "<0xXX>", else the one-byte piece, else <unk> (llama.cpp byte_to_token) */
  for (int b = 0; b < 256; b++) {
    static const char hex[] = "0123456789ABCDEF";
    char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    char one = (char)b;
    int32_t id = fg_vocab_find(v, buf, 6);
    if (id < 0) id = fg_vocab_find(v, &one, 1);
    if (id < 0) id = v->unk;
    v->byte_tok[b] = id;
  }

  if ((st = fg_vocab_build_trie(v, err)) != FG_OK) goto fail;
  *out = v;
  return FG_OK;

fail:
  fg_vocab_free(v);
  return st;
}

// ----------------------------------------------------------------------------------------------
// Public construction

fg_status fg_vocab_create(const fg_vocab_desc *desc, fg_vocab **out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_create: out is NULL");
  *out = NULL;
  if (!desc) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_create: desc is NULL");
  int32_t groups[FG_GROUP_COUNT];
  for (int i = 0; i < FG_GROUP_COUNT; i++) groups[i] = -1;
  return fg_vocab_build(desc, groups, out, err);
}

/* Optional special-token id: absent leaves *id; present must be an integer < n. */
static fg_status fg_vocab_get_id(const fg_gguf *g, const char *key, uint32_t n, int32_t *id, fg_error *err) {
  if (!fg_gguf_find_kv(g, key)) return FG_OK;
  uint32_t u;
  fg_status st = fg_gguf_get_u32(g, key, &u, err);
  if (st != FG_OK) return st;
  if (u >= n) return fg_err(err, FG_ERR_FORMAT, "%s = %u is outside the vocabulary of %u tokens", key, u, n);
  *id = (int32_t)u;
  return FG_OK;
}

/* Copies a numeric array of n elements (validated by the parser, maybe unaligned) into dst. */
static void fg_copy_arr32(void *dst, const fg_gguf_kv *kv, uint32_t n) { memcpy(dst, kv->arr_data, (size_t)n * 4); }

fg_status fg_vocab_load(const fg_gguf *g, fg_vocab **out, fg_error *err) {
  return fg_vocab_load_override(g, NULL, NULL, 0, out, err);
}

fg_status fg_vocab_load_override(const fg_gguf *g, const int32_t *ov_ids, const fg_gguf_str *ov_texts, size_t n_ov,
                                 fg_vocab **out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_load: out is NULL");
  if (n_ov && (!ov_ids || !ov_texts)) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_load_override: NULL override");
  *out = NULL;
  if (!g) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_load: g is NULL");

  const fg_gguf_kv *kv_model = fg_gguf_find_kv(g, FG_KEY_TOK_MODEL);
  const fg_gguf_kv *kv_tokens = fg_gguf_find_kv(g, FG_KEY_TOK_TOKENS);
  if (!kv_tokens) return fg_err(err, FG_ERR_UNSUPPORTED, "the model has no vocabulary (tokenizer.ggml.tokens)");
  if (!kv_model) return fg_err(err, FG_ERR_UNSUPPORTED, "the model has no tokenizer.ggml.model");
  if (kv_model->type != FG_GGUF_STRING) return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.model is not a string");
  if (!fg_gguf_str_eq(kv_model->str, "llama"))
    return fg_err(err, FG_ERR_UNSUPPORTED, "tokenizer.ggml.model \"%.*s\" is not supported (only \"llama\")",
                  (int)FG_MIN(kv_model->str.len, (size_t)32), kv_model->str.ptr);
  if (kv_tokens->type != FG_GGUF_ARRAY || kv_tokens->arr_type != FG_GGUF_STRING)
    return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens is not an array of strings");
  if (kv_tokens->arr_n == 0 || kv_tokens->arr_n > (uint64_t)INT32_MAX - 1)
    return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.tokens: %llu tokens", (unsigned long long)kv_tokens->arr_n);
  const uint32_t n = (uint32_t)kv_tokens->arr_n;

  const fg_gguf_kv *kv_scores = fg_gguf_find_kv(g, FG_KEY_TOK_SCORES);
  if (kv_scores) {
    if (kv_scores->type != FG_GGUF_ARRAY || (kv_scores->arr_type != FG_GGUF_FLOAT32 && kv_scores->arr_type != FG_GGUF_INT32))
      return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.scores is not an array of f32 or i32");
    if (kv_scores->arr_n != n)
      return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.scores has %llu entries for %u tokens",
                    (unsigned long long)kv_scores->arr_n, n);
  }
  const fg_gguf_kv *kv_types = fg_gguf_find_kv(g, FG_KEY_TOK_TOKEN_TYPE);
  if (kv_types) {
    if (kv_types->type != FG_GGUF_ARRAY || kv_types->arr_type != FG_GGUF_INT32)
      return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.token_type is not an array of i32");
    if (kv_types->arr_n != n)
      return fg_err(err, FG_ERR_FORMAT, "tokenizer.ggml.token_type has %llu entries for %u tokens",
                    (unsigned long long)kv_types->arr_n, n);
  }

  /* llama.cpp's defaults for "llama" vocabularies, then the file's keys */
  fg_vocab_desc d;
  memset(&d, 0, sizeof d);
  d.n_tokens = n;
  d.bos_id = n > 1 ? 1 : -1;
  d.eos_id = n > 2 ? 2 : -1;
  d.unk_id = 0;
  d.pad_id = -1;
  d.add_space_prefix = true;
  fg_status st;
  if ((st = fg_vocab_get_id(g, FG_KEY_TOK_BOS_ID, n, &d.bos_id, err)) != FG_OK) return st;
  if ((st = fg_vocab_get_id(g, FG_KEY_TOK_EOS_ID, n, &d.eos_id, err)) != FG_OK) return st;
  if ((st = fg_vocab_get_id(g, FG_KEY_TOK_UNK_ID, n, &d.unk_id, err)) != FG_OK) return st;
  if ((st = fg_vocab_get_id(g, FG_KEY_TOK_PAD_ID, n, &d.pad_id, err)) != FG_OK) return st;
  if (fg_gguf_find_kv(g, FG_KEY_TOK_ADD_SPACE_PREFIX) &&
      (st = fg_gguf_get_bool(g, FG_KEY_TOK_ADD_SPACE_PREFIX, &d.add_space_prefix, err)) != FG_OK)
    return st;
  int32_t groups[FG_GROUP_COUNT];
  for (int i = 0; i < FG_GROUP_COUNT; i++) {
    groups[i] = -1;
    if (k_groups[i].key2 && (st = fg_vocab_get_id(g, k_groups[i].key2, n, &groups[i], err)) != FG_OK) return st;
    if ((st = fg_vocab_get_id(g, k_groups[i].key, n, &groups[i], err)) != FG_OK) return st;
  }

  fg_gguf_str *pieces = NULL;
  float *scores = NULL;
  int32_t *types = NULL;
  if ((st = fg_gguf_str_array(kv_tokens, &pieces, err)) != FG_OK) return st;
  if (kv_scores) {
    scores = fg_malloc_array(n, sizeof *scores);
    if (!scores) {
      st = fg_err(err, FG_ERR_NOMEM, "vocabulary scores");
      goto done;
    }
    if (kv_scores->arr_type == FG_GGUF_FLOAT32) {
      fg_copy_arr32(scores, kv_scores, n);
    } else {
      int32_t *iv = (int32_t *)(void *)scores; /* same size: convert in place */
      fg_copy_arr32(iv, kv_scores, n);
      for (uint32_t i = 0; i < n; i++) {
        int32_t x;
        memcpy(&x, &iv[i], 4);
        float f = (float)x;
        memcpy(&scores[i], &f, 4);
      }
    }
  }
  if (kv_types) {
    types = fg_malloc_array(n, sizeof *types);
    if (!types) {
      st = fg_err(err, FG_ERR_NOMEM, "vocabulary token types");
      goto done;
    }
    fg_copy_arr32(types, kv_types, n);
  }
  if (n_ov && !types) {
    if (!(types = fg_malloc_array(n, sizeof *types))) {
      st = fg_err(err, FG_ERR_NOMEM, "vocabulary token types");
      goto done;
    }
    for (uint32_t i = 0; i < n; i++) types[i] = FG_TOKEN_TYPE_NORMAL;
  }
  for (size_t i = 0; i < n_ov; i++) { /* renamed pieces become control tokens */
    if (ov_ids[i] < 0 || (uint32_t)ov_ids[i] >= n) {
      st = fg_err(err, FG_ERR_FORMAT, "vocabulary override: id %d is outside the vocabulary of %u", (int)ov_ids[i], n);
      goto done;
    }
    pieces[ov_ids[i]] = ov_texts[i];
    types[ov_ids[i]] = FG_TOKEN_TYPE_CONTROL;
  }
  d.pieces = pieces;
  d.scores = scores;
  d.types = types;
  st = fg_vocab_build(&d, groups, out, err);

done:
  fg_free(pieces);
  fg_free(scores);
  fg_free(types);
  return st;
}

void fg_vocab_free(fg_vocab *v) {
  if (!v) return;
  fg_free(v->pool);
  fg_free(v->off);
  fg_free(v->scores);
  fg_free(v->type);
  fg_free(v->attr);
  fg_free(v->slots);
  fg_free(v->trie);
  fg_free(v);
}

// ----------------------------------------------------------------------------------------------
// Queries

static bool fg_vocab_valid(const fg_vocab *v, int32_t id) { return v && id >= 0 && (uint32_t)id < v->n; }

uint32_t fg_vocab_size(const fg_vocab *v) { return v ? v->n : 0; }
int32_t fg_vocab_bos(const fg_vocab *v) { return v ? v->bos : -1; }
int32_t fg_vocab_eos(const fg_vocab *v) { return v ? v->eos : -1; }
int32_t fg_vocab_unk(const fg_vocab *v) { return v ? v->unk : -1; }
int32_t fg_vocab_pad(const fg_vocab *v) { return v ? v->pad : -1; }
bool fg_vocab_add_space_prefix(const fg_vocab *v) { return v && v->add_space_prefix; }
size_t fg_vocab_max_piece_len(const fg_vocab *v) { return v ? v->max_len : 0; }

int32_t fg_vocab_lookup(const fg_vocab *v, const char *piece, size_t len) {
  if (!v || (!piece && len)) return -1;
  return fg_vocab_find(v, piece ? piece : "", len);
}

const char *fg_vocab_piece(const fg_vocab *v, int32_t id, size_t *len) {
  if (!fg_vocab_valid(v, id)) {
    if (len) *len = 0;
    return NULL;
  }
  size_t l;
  const char *p = fg_vocab_piece_ptr(v, id, &l);
  if (len) *len = l;
  return p;
}

float fg_vocab_score(const fg_vocab *v, int32_t id) { return fg_vocab_valid(v, id) ? v->scores[id] : 0.0f; }

uint32_t fg_vocab_token_type(const fg_vocab *v, int32_t id) { return fg_vocab_valid(v, id) ? v->type[id] : 0; }

bool fg_vocab_is_control(const fg_vocab *v, int32_t id) {
  return fg_vocab_valid(v, id) && (v->attr[id] & FG_TOK_ATTR_CONTROL) != 0;
}

// ----------------------------------------------------------------------------------------------
// Decoding (llama.cpp token_to_piece with special = true)

/* Renders token id into buf (up to cap bytes) and returns the full length; with lstrip, a leading
 * ' ' of the rendered text is dropped. */
static size_t fg_vocab_render(const fg_vocab *v, int32_t id, char *buf, size_t cap, bool lstrip) {
  size_t len;
  const char *p = fg_vocab_piece_ptr(v, id, &len);
  const uint8_t a = v->attr[id];
  size_t o = 0;
  if (a & FG_TOK_ATTR_SPECIAL) {
    if (lstrip && len > 0 && p[0] == ' ') {
      p++;
      len--;
    }
    if (buf) memcpy(buf, p, FG_MIN(len, cap));
    return len;
  }
  if (a & FG_TOK_ATTR_NORMAL) { /* "▁" (E2 96 81) -> ' ' */
    for (size_t i = 0; i < len; i++) {
      char c = p[i];
      if ((uint8_t)c == 0xE2 && i + 2 < len && (uint8_t)p[i + 1] == 0x96 && (uint8_t)p[i + 2] == 0x81) {
        c = ' ';
        i += 2;
      }
      if (lstrip && o == 0 && c == ' ') {
        lstrip = false;
        continue;
      }
      lstrip = false;
      if (buf && o < cap) buf[o] = c;
      o++;
    }
    return o;
  }
  if (a & FG_TOK_ATTR_BYTE) {
    char c = (char)fg_byte_piece_value(p, len); /* validated at load */
    if (lstrip && c == ' ') return 0;
    if (buf && cap) buf[0] = c;
    return 1;
  }
  return 0; /* unused / undefined: rendered as nothing */
}

size_t fg_vocab_token_to_text(const fg_vocab *v, int32_t id, char *buf, size_t cap) {
  if (!fg_vocab_valid(v, id)) return 0;
  return fg_vocab_render(v, id, buf, cap, false);
}

fg_status fg_vocab_decode(const fg_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap, size_t *n_out,
                          fg_error *err) {
  if (!v || !n_out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_decode: NULL argument");
  if (n && !ids) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_decode: ids is NULL");
  if (cap && !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_vocab_decode: out is NULL with cap %zu", cap);
  for (size_t i = 0; i < n; i++) {
    if (!fg_vocab_valid(v, ids[i]))
      return fg_err(err, FG_ERR_INVALID_ARG, "token %d at index %zu is outside the vocabulary of %u", (int)ids[i], i,
                    v->n);
  }
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t room = total < cap ? cap - total : 0;
    /* llama_detokenize drops one leading space of the first token when add_space_prefix is set */
    total += fg_vocab_render(v, ids[i], room ? out + total : NULL, room, i == 0 && v->add_space_prefix);
  }
  *n_out = total;
  if (total > cap)
    return fg_err(err, FG_ERR_BUFFER_TOO_SMALL, "decoded text needs %zu bytes, the buffer has %zu", total, cap);
  return FG_OK;
}
