/* hf_vocab.c — tokenizer.json -> GGUF vocabulary, and the tokenizer.ggml.* metadata (see hf_vocab.h). */
#include "convert/hf_vocab.h"

#include "convert/json_scan.h"

#include <stdio.h>
#include <string.h>

const char *const fg_fn_tokens[7] = {
    "<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
    "<end_function_call>",          "<start_function_response>",  "<end_function_response>",
    "<escape>",
};

void fg_hf_vocab_free(fg_hf_vocab *v) {
  if (!v) return;
  fg_free((void *)v->text);
  fg_free(v->len);
  fg_free(v->score);
  fg_free(v->type);
  fg_free(v->pool);
  fg_free(v->slot);
  memset(v, 0, sizeof *v);
}

fg_status fg_hf_vocab_alloc(fg_hf_vocab *v, uint32_t n, size_t pool_cap) {
  memset(v, 0, sizeof *v);
  v->n = n;
  v->text = fg_calloc(n, sizeof *v->text);
  v->len = fg_calloc(n, sizeof *v->len);
  v->score = fg_calloc(n, sizeof *v->score);
  v->type = fg_calloc(n, sizeof *v->type);
  v->pool = fg_malloc(pool_cap ? pool_cap : 1);
  v->pool_cap = pool_cap;
  if (!v->text || !v->len || !v->score || !v->type || !v->pool) {
    fg_hf_vocab_free(v);
    return FG_ERR_NOMEM;
  }
  return FG_OK;
}

void fg_hf_vocab_put(fg_hf_vocab *v, uint32_t id, const char *s, size_t n, int32_t type, float score) {
  FG_ASSERT(id < v->n && n + 1 <= v->pool_cap - v->pool_used);
  char *d = v->pool + v->pool_used;
  if (n) memcpy(d, s, n);
  d[n] = '\0';
  v->pool_used += n + 1;
  v->text[id] = d;
  v->len[id] = n;
  v->type[id] = type;
  v->score[id] = score;
}

static uint64_t fnv1a(const void *data, size_t n) { return fg_fnv1a(FG_FNV1A_INIT, data, n); }

fg_status fg_hf_vocab_index(fg_hf_vocab *v, fg_error *err) {
  fg_free(v->slot);
  v->slot_cap = 1;
  while (v->slot_cap < (size_t)v->n * 2) v->slot_cap <<= 1;
  v->slot = fg_malloc_array(v->slot_cap, sizeof *v->slot);
  if (!v->slot) return fg_err(err, FG_ERR_NOMEM, "out of memory (vocabulary index)");
  memset(v->slot, 0xFF, v->slot_cap * sizeof *v->slot);
  for (uint32_t id = 0; id < v->n; id++) {
    size_t i = (size_t)fnv1a(v->text[id], v->len[id]) & (v->slot_cap - 1);
    while (v->slot[i] >= 0) {
      const int32_t o = v->slot[i];
      if (v->len[o] == v->len[id] && memcmp(v->text[o], v->text[id], v->len[id]) == 0)
        return fg_err(err, FG_ERR_FORMAT, "piece \"%.64s\" appears twice (ids %d and %u)", v->text[id], o, id);
      i = (i + 1) & (v->slot_cap - 1);
    }
    v->slot[i] = (int32_t)id;
  }
  return FG_OK;
}

int32_t fg_hf_vocab_find(const fg_hf_vocab *v, const char *s, size_t n) {
  if (!v->slot) return -1;
  size_t i = (size_t)fnv1a(s, n) & (v->slot_cap - 1);
  for (;;) {
    const int32_t id = v->slot[i];
    if (id < 0) return -1;
    if (v->len[id] == n && memcmp(v->text[id], s, n) == 0) return id;
    i = (i + 1) & (v->slot_cap - 1);
  }
}

bool fg_hf_looks_special(const char *s, size_t n) {
  static const char *const exact[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
    if (n == strlen(exact[i]) && memcmp(s, exact[i], n) == 0) return true;
  for (size_t i = 0; i < 7; i++)
    if (n == strlen(fg_fn_tokens[i]) && memcmp(s, fg_fn_tokens[i], n) == 0) return true;
  if (n >= 4 && memcmp(s, "<|", 2) == 0 && memcmp(s + n - 2, "|>", 2) == 0) return true;
  /* fullwidth vertical line U+FF5C is EF BD 9C */
  if (n >= 8 && memcmp(s, "<\xef\xbd\x9c", 4) == 0 && memcmp(s + n - 4, "\xef\xbd\x9c>", 4) == 0) return true;
  return n > 8 && memcmp(s, "<unused", 7) == 0 && s[n - 1] == '>';
}

/* Rewrites "▁" (E2 96 81) as ' ' in place; returns the new length. */
static size_t unescape_spaces(char *s, size_t n) {
  size_t r = 0, w = 0;
  while (r < n) {
    if (r + 2 < n && (unsigned char)s[r] == 0xE2 && (unsigned char)s[r + 1] == 0x96 && (unsigned char)s[r + 2] == 0x81) {
      s[w++] = ' ';
      r += 3;
    } else {
      s[w++] = s[r++];
    }
  }
  s[w] = '\0';
  return w;
}

static bool is_byte_piece(const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  return n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] && strchr(hex, s[3]) && s[4] && strchr(hex, s[4]);
}

// ----------------------------------------------------------------------------------------------------
// Reading tokenizer.json

typedef struct span {
  const char *p;
  size_t n;
} span;

/* Reads one value's extent: its first byte and its length. */
static bool value_span(fg_js *js, span *out) {
  if (fg_js_peek(js) == FG_JS_NONE) return false;
  const char *s = js->p;
  if (!fg_js_skip(js)) return false;
  out->p = s;
  out->n = (size_t)(js->p - s);
  return true;
}

#define JFAIL(js) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, (js)->err)

/* post_processor: does the single-sequence template start with a special token? */
static int template_add_bos(const span *pp) {
  if (!pp->p) return -1;
  fg_js js;
  fg_js_init(&js, pp->p, pp->n);
  if (fg_js_peek(&js) != FG_JS_OBJECT) return -1;
  fg_js_str key;
  bool done, is_template = false;
  int first = -1;
  if (!fg_js_obj_begin(&js)) return -1;
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done) || done) break;
    if (fg_js_str_eq(key, "type") && fg_js_peek(&js) == FG_JS_STRING) {
      fg_js_str t;
      if (!fg_js_string(&js, &t)) return -1;
      is_template = fg_js_str_eq(t, "TemplateProcessing");
    } else if (fg_js_str_eq(key, "single") && fg_js_peek(&js) == FG_JS_ARRAY) {
      if (!fg_js_arr_begin(&js) || !fg_js_arr_next(&js, &done)) return -1;
      if (!done) {
        if (fg_js_peek(&js) == FG_JS_OBJECT) {
          fg_js_str k2;
          bool d2;
          if (!fg_js_obj_begin(&js) || !fg_js_obj_next(&js, &k2, &d2)) return -1;
          if (!d2) first = fg_js_str_eq(k2, "SpecialToken") ? 1 : 0;
          /* the rest of this element and of the array */
          if (!d2 && !fg_js_skip(&js)) return -1;
          while (!d2) {
            if (!fg_js_obj_next(&js, &k2, &d2)) return -1;
            if (!d2 && !fg_js_skip(&js)) return -1;
          }
        } else if (!fg_js_skip(&js)) {
          return -1;
        }
        for (;;) {
          if (!fg_js_arr_next(&js, &done)) return -1;
          if (done) break;
          if (!fg_js_skip(&js)) return -1;
        }
      } else {
        first = 0;
      }
    } else if (!fg_js_skip(&js)) {
      return -1;
    }
  }
  return is_template ? first : -1;
}

/* The parts of tokenizer.json (members may come in any order): model.vocab, model.merges, added_tokens,
 * post_processor; model.type must be BPE. */
typedef struct vocab_parts {
  span vocab, merges, added, post; /* .p NULL: absent */
} vocab_parts;

/* pass 1: where the parts are */
static fg_status vocab_locate(const char *json, size_t size, const char *name, vocab_parts *sp, fg_error *err) {
  fg_js js;
  fg_js_str key;
  bool done;
  fg_js_init(&js, json, size);
  if (!fg_js_obj_begin(&js)) JFAIL(&js);
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done)) JFAIL(&js);
    if (done) break;
    if (fg_js_str_eq(key, "model")) {
      if (fg_js_peek(&js) != FG_JS_OBJECT) {
        if (js.failed) JFAIL(&js);
        return fg_err(err, FG_ERR_FORMAT, "%s: model is not an object", name);
      }
      fg_js_obj_begin(&js);
      for (;;) {
        if (!fg_js_obj_next(&js, &key, &done)) JFAIL(&js);
        if (done) break;
        if (fg_js_str_eq(key, "type") && fg_js_peek(&js) == FG_JS_STRING) {
          fg_js_str t;
          if (!fg_js_string(&js, &t)) JFAIL(&js);
          if (!fg_js_str_eq(t, "BPE"))
            return fg_err(err, FG_ERR_UNSUPPORTED, "%s: model.type \"%.*s\" is not supported (Gemma 3 uses BPE)", name,
                          (int)FG_MIN(t.len, 32), t.ptr);
        } else if (fg_js_str_eq(key, "vocab")) {
          if (!value_span(&js, &sp->vocab)) JFAIL(&js);
        } else if (fg_js_str_eq(key, "merges")) {
          if (!value_span(&js, &sp->merges)) JFAIL(&js);
        } else if (!fg_js_skip(&js)) {
          JFAIL(&js);
        }
      }
    } else if (fg_js_str_eq(key, "added_tokens")) {
      if (!value_span(&js, &sp->added)) JFAIL(&js);
    } else if (fg_js_str_eq(key, "post_processor")) {
      if (!value_span(&js, &sp->post)) JFAIL(&js);
    } else if (!fg_js_skip(&js)) {
      JFAIL(&js);
    }
  }
  if (!fg_js_finish(&js)) JFAIL(&js);
  if (!sp->vocab.p || sp->vocab.p[0] != '{')
    return fg_err(err, FG_ERR_FORMAT, "%s: no object model.vocab (not a BPE tokenizer.json)", name);
  if (!sp->merges.p || sp->merges.p[0] != '[') return fg_err(err, FG_ERR_FORMAT, "%s: no array model.merges", name);
  if (sp->added.p && sp->added.p[0] != '[' && sp->added.p[0] != 'n')
    return fg_err(err, FG_ERR_FORMAT, "%s: added_tokens is not an array", name);
  return FG_OK;
}

/* pass 3: id -> piece; the ids must be a permutation of 0..n-1 (v holds room for n pieces) */
static fg_status vocab_ids(fg_hf_vocab *v, span sp_vocab, uint32_t n, const char *name, fg_error *err) {
  fg_js js;
  fg_js_str key;
  bool done;
  fg_js_init(&js, sp_vocab.p, sp_vocab.n);
  fg_js_obj_begin(&js);
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
    if (done) break;
    uint64_t id;
    if (fg_js_peek(&js) != FG_JS_NUMBER || !fg_js_uint(&js, &id) || id >= n) {
      char piece[72];
      const size_t kl = fg_js_str_decoded_len(key);
      if (kl < sizeof piece) {
        fg_js_str_decode(key, piece);
        piece[kl] = '\0';
      } else {
        snprintf(piece, sizeof piece, "%.64s...", key.ptr);
      }
      return fg_err(err, FG_ERR_FORMAT, "%s: model.vocab[\"%s\"] has a bad id (ids must be 0..%u)", name, piece, n - 1);
    }
    if (v->text[id])
      return fg_err(err, FG_ERR_FORMAT, "%s: model.vocab id %llu appears twice", name, (unsigned long long)id);
    char *d = v->pool + v->pool_used;
    const size_t kl = fg_js_str_decoded_len(key);
    fg_js_str_decode(key, d);
    d[kl] = '\0';
    v->pool_used += kl + 1;
    v->text[id] = d;
    v->len[id] = kl;
    v->type[id] = FG_TOK_NORMAL;
  }
  /* n distinct ids below n: every id is there */
  fg_status st;
  if ((st = fg_hf_vocab_index(v, err)) != FG_OK) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    return fg_err(err, st, "%s: model.vocab: %s", name, msg);
  }
  return FG_OK;
}

/* pass 4: SentencePiece-style scores: the piece made by merge rank r first gets -r */
static fg_status vocab_scores(fg_hf_vocab *v, span sp_merges, uint32_t n, const char *name, fg_error *err) {
  fg_js js;
  bool done;
  uint8_t *has_score = fg_calloc(n, 1); /* [n] a merge produced this piece */
  if (!has_score) return fg_err(err, FG_ERR_NOMEM, "%s: out of memory", name);
  char *cat = NULL; /* one merge's two halves, decoded and joined */
  size_t cat_cap = 0;
  fg_status st = FG_OK;
  fg_js_init(&js, sp_merges.p, sp_merges.n);
  fg_js_arr_begin(&js);
  for (uint32_t rank = 0;; rank++) {
    if (!fg_js_arr_next(&js, &done)) goto json_fail;
    if (done) break;
    fg_js_str a, b;
    size_t la, lb;
    const fg_js_type t = fg_js_peek(&js);
    bool pair_ok = false;
    if (t == FG_JS_ARRAY) {
      bool d1, d2, d3;
      pair_ok = fg_js_arr_begin(&js) && fg_js_arr_next(&js, &d1) && !d1 && fg_js_peek(&js) == FG_JS_STRING &&
                fg_js_string(&js, &a) && fg_js_arr_next(&js, &d2) && !d2 && fg_js_peek(&js) == FG_JS_STRING &&
                fg_js_string(&js, &b) && fg_js_arr_next(&js, &d3) && d3;
      if (pair_ok) {
        la = fg_js_str_decoded_len(a);
        lb = fg_js_str_decoded_len(b);
      }
    } else if (t == FG_JS_STRING) {
      /* the older form "a b" */
      fg_js_str s;
      if (fg_js_string(&js, &s)) {
        const size_t ls = fg_js_str_decoded_len(s);
        if (ls + 1 > cat_cap) {
          char *nc = fg_realloc(cat, (ls + 1) * 2);
          if (!nc) {
            st = fg_err(err, FG_ERR_NOMEM, "%s: out of memory", name);
            goto done;
          }
          cat = nc;
          cat_cap = (ls + 1) * 2;
        }
        fg_js_str_decode(s, cat);
        char *sp = memchr(cat, ' ', ls);
        if (sp) {
          memmove(sp, sp + 1, ls - (size_t)(sp - cat) - 1);
          const int32_t id = fg_hf_vocab_find(v, cat, ls - 1);
          if (id >= 0 && !has_score[id]) {
            has_score[id] = 1;
            v->score[id] = -(float)rank;
          }
          continue;
        }
      }
    }
    if (js.failed) goto json_fail;
    if (!pair_ok) {
      st = fg_err(err, FG_ERR_FORMAT, "%s: model.merges[%u] is not a pair of strings", name, rank);
      goto done;
    }
    if (la + lb + 1 > cat_cap) {
      char *nc = fg_realloc(cat, (la + lb + 1) * 2);
      if (!nc) {
        st = fg_err(err, FG_ERR_NOMEM, "%s: out of memory", name);
        goto done;
      }
      cat = nc;
      cat_cap = (la + lb + 1) * 2;
    }
    fg_js_str_decode(a, cat);
    fg_js_str_decode(b, cat + la);
    const int32_t id = fg_hf_vocab_find(v, cat, la + lb);
    if (id >= 0 && !has_score[id]) {
      has_score[id] = 1;
      v->score[id] = -(float)rank;
    }
  }
  goto done;

json_fail:
  st = fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
done:
  fg_free(has_score);
  fg_free(cat);
  return st;
}

/* pass 5: added tokens (sp_added: an array, or absent / null) */
static fg_status vocab_added(fg_hf_vocab *v, span sp_added, uint32_t n, const char *name, fg_hf_vocab_info *inf,
                             fg_error *err) {
  fg_js js;
  fg_js_str key;
  bool done;
  if (sp_added.p && sp_added.p[0] == '[') {
    fg_js_init(&js, sp_added.p, sp_added.n);
    fg_js_arr_begin(&js);
    for (uint32_t k = 0;; k++) {
      if (!fg_js_arr_next(&js, &done)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
      if (done) break;
      if (fg_js_peek(&js) != FG_JS_OBJECT) {
        if (js.failed) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
        return fg_err(err, FG_ERR_FORMAT, "%s: added_tokens[%u] is not an object", name, k);
      }
      fg_js_obj_begin(&js);
      uint64_t id = 0;
      bool have_id = false, have_content = false, special = false;
      fg_js_str content = {0};
      for (;;) {
        if (!fg_js_obj_next(&js, &key, &done)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
        if (done) break;
        if (fg_js_str_eq(key, "id") && fg_js_peek(&js) == FG_JS_NUMBER) {
          if (!fg_js_uint(&js, &id)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
          have_id = true;
        } else if (fg_js_str_eq(key, "content") && fg_js_peek(&js) == FG_JS_STRING) {
          if (!fg_js_string(&js, &content)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
          have_content = true;
        } else if (fg_js_str_eq(key, "special") &&
                   (fg_js_peek(&js) == FG_JS_TRUE || fg_js_peek(&js) == FG_JS_FALSE)) {
          if (!fg_js_bool(&js, &special)) return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
        } else if (!fg_js_skip(&js)) {
          return fg_err(err, FG_ERR_FORMAT, "%s: %s", name, js.err);
        }
      }
      if (!have_id || !have_content)
        return fg_err(err, FG_ERR_FORMAT, "%s: added_tokens[%u] has no id or no content", name, k);
      if (id >= n) {
        inf->n_added_out++;
        continue;
      }
      const size_t cl = fg_js_str_decoded_len(content);
      bool same = cl == v->len[id];
      if (same && cl) {
        char buf[256];
        if (cl <= sizeof buf) {
          fg_js_str_decode(content, buf);
          same = memcmp(buf, v->text[id], cl) == 0;
        } else {
          same = !content.escaped && memcmp(content.ptr, v->text[id], cl) == 0;
        }
      }
      if (!same) {
        return fg_err(err, FG_ERR_FORMAT, "%s: added token %llu \"%.*s\" differs from model.vocab's \"%.64s\"",
                      name, (unsigned long long)id, (int)FG_MIN(content.len, 64), content.ptr, v->text[id]);
      }
      /* As llama.cpp's converter writes Gemma 3 (see the header) */
      const bool ctl = special || fg_hf_looks_special(v->text[id], v->len[id]);
      v->type[id] = ctl ? FG_TOK_CONTROL : FG_TOK_USER;
      if (!ctl) v->len[id] = unescape_spaces((char *)v->text[id], v->len[id]);
      v->score[id] = -1000.0f;
      inf->n_added++;
    }
  }
  return FG_OK;
}

fg_status fg_hf_vocab_read_json(const char *json, size_t size, const char *name, fg_hf_vocab *v,
                                fg_hf_vocab_info *info, fg_error *err) {
  memset(v, 0, sizeof *v);
  fg_hf_vocab_info inf = {-1, 0, 0};
  if (!name) name = "tokenizer.json";
  fg_js js;
  fg_js_str key;
  bool done;

  vocab_parts sp = {{0}, {0}, {0}, {0}};
  fg_status st = vocab_locate(json, size, name, &sp, err);
  if (st != FG_OK) return st;

  /* pass 2: count the pieces and their bytes */
  uint64_t n64 = 0, bytes = 0;
  fg_js_init(&js, sp.vocab.p, sp.vocab.n);
  fg_js_obj_begin(&js);
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done)) JFAIL(&js);
    if (done) break;
    n64++;
    bytes += fg_js_str_decoded_len(key) + 1;
    if (!fg_js_skip(&js)) JFAIL(&js);
  }
  if (n64 == 0) return fg_err(err, FG_ERR_FORMAT, "%s: model.vocab is empty", name);
  if (n64 > (1u << 24)) return fg_err(err, FG_ERR_FORMAT, "%s: model.vocab has %llu pieces", name, (unsigned long long)n64);
  size_t pool;
  if (!fg_u64_to_size(bytes, &pool)) return fg_err(err, FG_ERR_NOMEM, "%s: vocabulary too large", name);
  const uint32_t n = (uint32_t)n64;
  if (fg_hf_vocab_alloc(v, n, pool) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "%s: out of memory (vocabulary)", name);

  if ((st = vocab_ids(v, sp.vocab, n, name, err)) != FG_OK || (st = vocab_scores(v, sp.merges, n, name, err)) != FG_OK ||
      (st = vocab_added(v, sp.added, n, name, &inf, err)) != FG_OK)
    goto done;
  for (uint32_t id = 0; id < n; id++) {
    if (v->len[id] == 5 && memcmp(v->text[id], "<unk>", 5) == 0) v->type[id] = FG_TOK_UNKNOWN;
    else if (is_byte_piece(v->text[id], v->len[id])) v->type[id] = FG_TOK_BYTE;
    if (v->type[id] == FG_TOK_UNKNOWN || v->type[id] == FG_TOK_BYTE) v->score[id] = 0.0f;
  }
  /* (user-defined pieces changed their text: the index no longer finds them by either text, which
   * only lookups of control tokens rely on) */
  inf.add_bos = template_add_bos(&sp.post);
  if (info) *info = inf;
done:
  if (st != FG_OK) fg_hf_vocab_free(v);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// GGUF metadata

fg_status fg_hf_vocab_write_gguf(fg_gguf_writer *w, const fg_hf_vocab *v, const fg_hf_special *sp, fg_error *err) {
  fg_status st = FG_OK;
  FG_GGUF_SET(st, err, "", set_str, w, FG_KEY_TOK_MODEL, "llama");
  FG_GGUF_SET(st, err, "", set_str, w, FG_KEY_TOK_PRE, "default");
  FG_GGUF_SET(st, err, "", set_arr_str, w, FG_KEY_TOK_TOKENS, v->text, v->len, v->n);
  FG_GGUF_SET(st, err, "", set_arr, w, FG_KEY_TOK_SCORES, FG_GGUF_FLOAT32, v->score, v->n);
  FG_GGUF_SET(st, err, "", set_arr, w, FG_KEY_TOK_TOKEN_TYPE, FG_GGUF_INT32, v->type, v->n);
  FG_GGUF_SET(st, err, "", set_u32, w, FG_KEY_TOK_BOS_ID, sp->bos);
  FG_GGUF_SET(st, err, "", set_u32, w, FG_KEY_TOK_EOS_ID, sp->eos);
  FG_GGUF_SET(st, err, "", set_u32, w, FG_KEY_TOK_UNK_ID, sp->unk);
  FG_GGUF_SET(st, err, "", set_u32, w, FG_KEY_TOK_PAD_ID, sp->pad);
  FG_GGUF_SET(st, err, "", set_bool, w, FG_KEY_TOK_ADD_BOS, sp->add_bos);
  FG_GGUF_SET(st, err, "", set_bool, w, FG_KEY_TOK_ADD_EOS, sp->add_eos);
  FG_GGUF_SET(st, err, "", set_bool, w, FG_KEY_TOK_ADD_SPACE_PREFIX, false);
  return st;
}
