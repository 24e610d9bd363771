/* lora.c — LoRA adapters: reading and checking llama.cpp's GGUF adapter files, the run-time layout,
 * merging into heap copies, the vocabulary override, and the fast path's product (see lora.h). */
#include "model/lora.h"

#include "kernels/threadpool.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LORA_MAX_ADAPTERS 64u   /* fg_model_params.n_loras at most */
#define LORA_MAX_TOKEN_TEXT 128u /* bytes of a renamed token's text at most */

const uint8_t fg_lora_group_first[FG_LORA_N_INPUTS] = {FG_LORA_Q, FG_LORA_O, FG_LORA_GATE, FG_LORA_DOWN};
const uint8_t fg_lora_group_count[FG_LORA_N_INPUTS] = {3, 1, 2, 1};

static const uint8_t k_group_of[FG_LORA_N_TARGETS] = {FG_LORA_IN_QKV,     FG_LORA_IN_QKV,     FG_LORA_IN_QKV, FG_LORA_IN_O,
                                                      FG_LORA_IN_GATE_UP, FG_LORA_IN_GATE_UP, FG_LORA_IN_DOWN};

static fg_mat *layer_mat(fg_layer *L, uint32_t k) {
  fg_mat *const mats[FG_LORA_N_TARGETS] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
  return mats[k];
}

static void fnv(uint64_t *h, const void *p, size_t n) { *h = fg_fnv1a(*h, p, n); }

// ----------------------------------------------------------------------------------------------
// Reading one adapter file

typedef struct lora_file {
  const char *path;
  float scale;      /* the user's */
  float alpha;      /* adapter.lora.alpha, 0 when absent */
  fg_mapfile file;
  fg_gguf g;
} lora_file;

/* One lora_a / lora_b pair of a file. */
typedef struct lora_pair {
  const fg_gguf_tensor *a; /* ne = [n_in, rank] */
  const fg_gguf_tensor *b; /* ne = [rank, n_out] */
  uint32_t file, layer, target, rank;
  float s;                 /* effective scale */
} lora_pair;

/* A renamed token while the files are open (text views into a file). */
typedef struct lora_ov {
  int32_t id;
  fg_gguf_str text;
  uint32_t file;
} lora_ov;

typedef struct lora_ctx {
  fg_model *m;
  const fg_model_params *p;
  lora_file *files;     /* (n_files) */
  size_t n_files;
  lora_pair *pairs;     /* (n_pairs, cap_pairs) in file order, then tensor order */
  size_t n_pairs, cap_pairs;
  lora_ov *ov;          /* (n_ov, cap_ov) */
  size_t n_ov, cap_ov;
  fg_error *err;
} lora_ctx;

#define LERR(c, code, f, ...) lora_err((c)->err, code, (c)->files[f].path, __VA_ARGS__)

static fg_status lora_err(fg_error *err, fg_status code, const char *path, const char *fmt, ...) FG_PRINTF(4, 5);
static fg_status lora_err(fg_error *err, fg_status code, const char *path, const char *fmt, ...) {
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fg_err(err, code, "adapter %.90s: %s", path, msg);
}

/* s as a NUL-terminated name (cut to cap - 1 bytes; *cut says so) */
static void name_of(fg_gguf_str s, char *buf, size_t cap, bool *cut) {
  const size_t n = FG_MIN(s.len, cap - 1);
  memcpy(buf, s.ptr, n);
  buf[n] = '\0';
  if (cut) *cut = n < s.len || memchr(buf, '\0', n) != NULL;
}

/* "blk.N.<target>.weight" -> layer and target; false for any other name */
static bool parse_base_name(const char *base, uint32_t *layer, uint32_t *target) {
  if (strncmp(base, "blk.", 4) != 0) return false;
  const char *p = base + 4;
  uint64_t il = 0;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    il = il * 10 + (uint64_t)(*p - '0');
    if (il > 1u << 20) return false;
  }
  if (*p++ != '.') return false;
  for (uint32_t k = 0; k < FG_LORA_N_TARGETS; k++) {
    const size_t n = strlen(fg_lora_targets[k].gguf);
    if (strncmp(p, fg_lora_targets[k].gguf, n) == 0 && strcmp(p + n, ".weight") == 0) {
      *layer = (uint32_t)il;
      *target = k;
      return true;
    }
  }
  return false;
}

static bool ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static fg_status read_meta(lora_ctx *c, uint32_t f) {
  const fg_gguf *g = &c->files[f].g;
  fg_gguf_str s;
  const fg_gguf_kv *kv = fg_gguf_find_kv(g, FG_KEY_TYPE);
  if (!kv || kv->type != FG_GGUF_STRING)
    return LERR(c, FG_ERR_FORMAT, f, "not an adapter (no general.type = \"adapter\"%s)",
                kv ? ": the key is not a string" : "; a model file?");
  if (!fg_gguf_str_eq(kv->str, "adapter"))
    return LERR(c, FG_ERR_FORMAT, f, "not an adapter: general.type is \"%.*s\"", (int)FG_MIN(kv->str.len, (size_t)32),
                kv->str.ptr);
  kv = fg_gguf_find_kv(g, FG_KEY_ADAPTER_TYPE);
  if (!kv || kv->type != FG_GGUF_STRING)
    return LERR(c, FG_ERR_FORMAT, f, "adapter.type is %s", kv ? "not a string" : "missing");
  if (!fg_gguf_str_eq(kv->str, "lora"))
    return LERR(c, FG_ERR_UNSUPPORTED, f, "adapter.type \"%.*s\" is not supported (only \"lora\")",
                (int)FG_MIN(kv->str.len, (size_t)32), kv->str.ptr);
  fg_error e;
  if (fg_gguf_get_str(g, FG_KEY_ARCHITECTURE, &s, &e) != FG_OK)
    return LERR(c, FG_ERR_FORMAT, f, "%s", e.msg);
  if (!fg_gguf_str_eq(s, FG_ARCH_GEMMA3))
    return LERR(c, FG_ERR_UNSUPPORTED, f, "made for architecture \"%.*s\", the model is gemma3",
                (int)FG_MIN(s.len, (size_t)32), s.ptr);
  if (fg_gguf_get_f32_or(g, FG_KEY_ADAPTER_LORA_ALPHA, 0.0f, &c->files[f].alpha, &e) != FG_OK)
    return LERR(c, FG_ERR_FORMAT, f, "%s", e.msg);
  if (!isfinite(c->files[f].alpha))
    return LERR(c, FG_ERR_FORMAT, f, "adapter.lora.alpha is %g", (double)c->files[f].alpha);
  return FG_OK;
}

/* Values of tensor t (type F32/F16/BF16/Q8_0, ne0 × ne1) as f32, row by row, checked finite: row r goes to
 * dst + r * ld (dst NULL: only checked, through tmp (ne0 floats)). */
static fg_status read_tensor(lora_ctx *c, uint32_t f, const fg_gguf_tensor *t, const char *name, float *dst, size_t ld,
                             float *tmp) {
  uint64_t rb;
  if (!fg_type_row_bytes(t->type, t->ne[0], &rb))
    return LERR(c, FG_ERR_FORMAT, f, "tensor '%s': rows of %llu values do not fit type %s", name,
                (unsigned long long)t->ne[0], fg_type_name(t->type));
  for (uint64_t r = 0; r < t->ne[1]; r++) {
    float *row = dst ? dst + (size_t)r * ld : tmp;
    fg_dequantize_row(t->type, t->data + r * rb, row, (size_t)t->ne[0]);
    for (uint64_t j = 0; j < t->ne[0]; j++)
      if (!isfinite(row[j]))
        return LERR(c, FG_ERR_FORMAT, f, "tensor '%s' has a non-finite value (%g) in row %llu", name, (double)row[j],
                    (unsigned long long)r);
  }
  return FG_OK;
}

static fg_status add_pair(lora_ctx *c, const lora_pair *p) {
  if (c->n_pairs == c->cap_pairs) {
    const size_t cap = c->cap_pairs ? 2 * c->cap_pairs : 64;
    lora_pair *np = fg_realloc(c->pairs, cap * sizeof *np);
    if (!np) return fg_err(c->err, FG_ERR_NOMEM, "out of memory for the adapters' tensor list");
    c->pairs = np;
    c->cap_pairs = cap;
  }
  c->pairs[c->n_pairs++] = *p;
  return FG_OK;
}

/* The lora_a / lora_b pairs of file f: names, types, shapes against the base, ranks. */
static fg_status read_pairs(lora_ctx *c, uint32_t f) {
  const fg_gguf *g = &c->files[f].g;
  fg_model *m = c->m;
  const uint32_t n_layer = m->hp.n_layer;
  /* (n_layer, targets) index into the file's tensors of lora_a / lora_b, or -1 */
  int64_t *slot = fg_malloc_array((size_t)n_layer * FG_LORA_N_TARGETS * 2, sizeof *slot);
  if (!slot) return fg_err(c->err, FG_ERR_NOMEM, "out of memory for the adapter's tensor table");
  for (size_t i = 0; i < (size_t)n_layer * FG_LORA_N_TARGETS * 2; i++) slot[i] = -1;
  fg_status st = FG_OK;
  char name[160], base[160];
  for (size_t i = 0; i < g->n_tensors && st == FG_OK; i++) {
    const fg_gguf_tensor *t = &g->tensors[i];
    bool cut;
    name_of(t->name, name, sizeof name, &cut);
    if (cut) {
      st = LERR(c, FG_ERR_FORMAT, f, "tensor name '%.60s...' is too long or has a NUL byte", name);
      break;
    }
    const bool is_a = ends_with(name, ".lora_a"), is_b = ends_with(name, ".lora_b");
    if (!is_a && !is_b) {
      st = ends_with(name, "_norm.weight") || fg_gguf_find_tensor(&m->gguf, name)
               ? LERR(c, FG_ERR_UNSUPPORTED, f, "tensor '%s' is not a lora_a / lora_b pair member; fgemma applies "
                      "only LoRA pairs (llama.cpp ignores norm vectors)", name)
               : LERR(c, FG_ERR_FORMAT, f, "unexpected tensor '%s' (expected <base tensor>.lora_a and .lora_b)", name);
      break;
    }
    memcpy(base, name, strlen(name) - 7);
    base[strlen(name) - 7] = '\0';
    uint32_t il = 0, k = 0;
    if (!parse_base_name(base, &il, &k) || il >= n_layer) {
      st = fg_gguf_find_tensor(&m->gguf, base)
               ? LERR(c, FG_ERR_UNSUPPORTED, f, "tensor '%s' adapts '%s', which fgemma cannot adapt (only the layers' "
                      "attn_q/k/v/output and ffn_gate/up/down)", name, base)
               : LERR(c, FG_ERR_FORMAT, f, "tensor '%s' adapts '%s', which the base model lacks", name, base);
      break;
    }
    if (t->n_dims != 2 || t->ne[2] != 1 || t->ne[3] != 1) {
      st = LERR(c, FG_ERR_FORMAT, f, "tensor '%s' has %u dimensions; LoRA matrices have 2", name, t->n_dims);
      break;
    }
    if (t->type != FG_TYPE_F32 && t->type != FG_TYPE_F16 && t->type != FG_TYPE_BF16 && t->type != FG_TYPE_Q8_0) {
      st = LERR(c, FG_ERR_UNSUPPORTED, f, "tensor '%s' has type %s (adapters: f32, f16, bf16 or q8_0)", name,
                fg_type_name(t->type));
      break;
    }
    if ((uintptr_t)t->data % (t->type == FG_TYPE_F32 ? 4 : 2) != 0) {
      st = LERR(c, FG_ERR_FORMAT, f, "tensor '%s' data is not aligned", name);
      break;
    }
    slot[((size_t)il * FG_LORA_N_TARGETS + k) * 2 + (is_b ? 1 : 0)] = (int64_t)i;
  }
  for (uint32_t il = 0; il < n_layer && st == FG_OK; il++) {
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS && st == FG_OK; k++) {
      const int64_t ia = slot[((size_t)il * FG_LORA_N_TARGETS + k) * 2], ib = slot[((size_t)il * FG_LORA_N_TARGETS + k) * 2 + 1];
      if (ia < 0 && ib < 0) continue;
      snprintf(base, sizeof base, "blk.%u.%s.weight", il, fg_lora_targets[k].gguf);
      if (ia < 0 || ib < 0) {
        st = LERR(c, FG_ERR_FORMAT, f, "tensor '%s.%s' has no '%s.%s' (a lone half of a pair)", base,
                  ia < 0 ? "lora_b" : "lora_a", base, ia < 0 ? "lora_a" : "lora_b");
        break;
      }
      const fg_gguf_tensor *a = &g->tensors[ia], *b = &g->tensors[ib];
      const fg_mat *W = layer_mat(&m->layers[il], k);
      if (a->ne[0] != W->cols || b->ne[1] != W->rows) {
        st = LERR(c, FG_ERR_FORMAT, f, "'%s.lora_a' [%llu, %llu] / '.lora_b' [%llu, %llu] do not fit '%s' (%u inputs, "
                  "%u outputs): an adapter for another model?", base, (unsigned long long)a->ne[0],
                  (unsigned long long)a->ne[1], (unsigned long long)b->ne[0], (unsigned long long)b->ne[1], base, W->cols,
                  W->rows);
        break;
      }
      if (a->ne[1] != b->ne[0]) {
        st = LERR(c, FG_ERR_FORMAT, f, "'%s': lora_a has rank %llu, lora_b rank %llu", base, (unsigned long long)a->ne[1],
                  (unsigned long long)b->ne[0]);
        break;
      }
      const uint64_t rank = a->ne[1];
      if (rank == 0 || rank > FG_MIN(W->cols, W->rows)) {
        st = LERR(c, FG_ERR_FORMAT, f, "'%s': rank %llu is out of range (1..%u, the smaller side of the matrix)", base,
                  (unsigned long long)rank, FG_MIN(W->cols, W->rows));
        break;
      }
      const lora_file *lf = &c->files[f];
      const float s = lf->alpha != 0.0f ? lf->scale * lf->alpha / (float)rank : lf->scale;
      if (!isfinite(s)) {
        st = LERR(c, FG_ERR_INVALID_ARG, f, "'%s': the scale %g x alpha %g / rank %llu is not finite", base,
                  (double)lf->scale, (double)lf->alpha, (unsigned long long)rank);
        break;
      }
      const lora_pair p = {a, b, f, il, k, (uint32_t)rank, s};
      st = add_pair(c, &p);
    }
  }
  fg_free(slot);
  return st;
}

/* fgemma.vocab_override.ids / .tokens of file f, collected into c->ov */
static fg_status read_override(lora_ctx *c, uint32_t f) {
  const fg_gguf *g = &c->files[f].g;
  const fg_gguf_kv *ki = fg_gguf_find_kv(g, FG_KEY_VOCAB_OVERRIDE_IDS);
  const fg_gguf_kv *kt = fg_gguf_find_kv(g, FG_KEY_VOCAB_OVERRIDE_TOKENS);
  if (!ki && !kt) return FG_OK;
  if (!ki || !kt)
    return LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override.%s without .%s", ki ? "ids" : "tokens", ki ? "tokens" : "ids");
  if (ki->type != FG_GGUF_ARRAY || (ki->arr_type != FG_GGUF_INT32 && ki->arr_type != FG_GGUF_UINT32))
    return LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override.ids is not an array of int32");
  if (kt->type != FG_GGUF_ARRAY || kt->arr_type != FG_GGUF_STRING)
    return LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override.tokens is not an array of strings");
  if (ki->arr_n != kt->arr_n)
    return LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override: %llu ids but %llu tokens", (unsigned long long)ki->arr_n,
                (unsigned long long)kt->arr_n);
  if (ki->arr_n > c->m->hp.n_vocab)
    return LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override renames %llu tokens of %u", (unsigned long long)ki->arr_n,
                c->m->hp.n_vocab);
  fg_gguf_str *texts = NULL;
  fg_error e;
  if (fg_gguf_str_array(kt, &texts, &e) != FG_OK) return LERR(c, e.code, f, "%s", e.msg);
  fg_status st = FG_OK;
  const size_t n = (size_t)ki->arr_n;
  for (size_t i = 0; i < n && st == FG_OK; i++) {
    int32_t id;
    memcpy(&id, ki->arr_data + 4 * i, 4);
    const fg_gguf_str t = texts[i];
    if (id < 0 || (uint32_t)id >= c->m->hp.n_vocab) {
      st = LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override: id %d is outside the vocabulary (0..%u)", (int)id,
                c->m->hp.n_vocab - 1);
    } else if (t.len == 0 || t.len > LORA_MAX_TOKEN_TEXT || memchr(t.ptr, '\0', t.len) || !fg_utf8_valid(t.ptr, t.len, NULL)) {
      st = LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override: the text for id %d is empty, longer than %u bytes, or not "
                "UTF-8 without NUL", (int)id, LORA_MAX_TOKEN_TEXT);
    }
    for (size_t j = 0; j < c->n_ov && st == FG_OK; j++) {
      const lora_ov *o = &c->ov[j];
      const bool same = o->text.len == t.len && memcmp(o->text.ptr, t.ptr, t.len) == 0;
      if (o->id == id && o->file == f)
        st = LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override: id %d is listed twice", (int)id);
      else if (o->id == id && !same)
        st = LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override renames id %d to \"%.*s\", but %.80s renamed it to \"%.*s\"",
                  (int)id, (int)FG_MIN(t.len, (size_t)40), t.ptr, c->files[o->file].path,
                  (int)FG_MIN(o->text.len, (size_t)40), o->text.ptr);
      else if (o->id != id && same)
        st = LERR(c, FG_ERR_FORMAT, f, "fgemma.vocab_override gives ids %d and %d the same text \"%.*s\"", (int)o->id,
                  (int)id, (int)FG_MIN(t.len, (size_t)40), t.ptr);
    }
    if (st != FG_OK) break;
    bool seen = false;
    for (size_t j = 0; j < c->n_ov; j++) seen |= c->ov[j].id == id;
    if (seen) continue; /* the same renaming from an earlier adapter */
    if (c->n_ov == c->cap_ov) {
      const size_t cap = c->cap_ov ? 2 * c->cap_ov : 16;
      lora_ov *no = fg_realloc(c->ov, cap * sizeof *no);
      if (!no) {
        st = fg_err(c->err, FG_ERR_NOMEM, "out of memory for the vocabulary override");
        break;
      }
      c->ov = no;
      c->cap_ov = cap;
    }
    c->ov[c->n_ov++] = (lora_ov){id, t, f};
  }
  fg_free(texts);
  return st;
}

/* The renamed ids against the base vocabulary: each base piece must be an <unused...> token or already the
 * new text, and no other token may have the new text. */
static fg_status check_override(lora_ctx *c) {
  if (c->n_ov == 0) return FG_OK;
  const fg_gguf_kv *kv = fg_gguf_find_kv(&c->m->gguf, FG_KEY_TOK_TOKENS);
  if (!kv)
    return LERR(c, FG_ERR_UNSUPPORTED, c->ov[0].file, "renames tokens (fgemma.vocab_override), but the base model has "
                "no vocabulary");
  fg_gguf_str *pieces = NULL;
  fg_error e;
  if (fg_gguf_str_array(kv, &pieces, &e) != FG_OK) return fg_err(c->err, e.code, "%s", e.msg);
  fg_status st = FG_OK;
  for (size_t i = 0; i < c->n_ov && st == FG_OK; i++) {
    const lora_ov *o = &c->ov[i];
    if ((uint64_t)o->id >= kv->arr_n) {
      st = LERR(c, FG_ERR_FORMAT, o->file, "fgemma.vocab_override: id %d is outside the base vocabulary of %llu tokens",
                (int)o->id, (unsigned long long)kv->arr_n);
      break;
    }
    const fg_gguf_str p = pieces[o->id];
    const bool same = p.len == o->text.len && memcmp(p.ptr, o->text.ptr, p.len) == 0;
    const bool unused = p.len > 8 && memcmp(p.ptr, "<unused", 7) == 0 && p.ptr[p.len - 1] == '>';
    if (!same && !unused) {
      st = LERR(c, FG_ERR_UNSUPPORTED, o->file, "fgemma.vocab_override: id %d is \"%.*s\" in the base, neither an "
                "<unused...> token nor \"%.*s\": refusing to rename a token in use", (int)o->id, (int)FG_MIN(p.len, (size_t)40),
                p.ptr, (int)FG_MIN(o->text.len, (size_t)40), o->text.ptr);
      break;
    }
    for (uint64_t id = 0; id < kv->arr_n; id++) {
      if ((int64_t)id == o->id || pieces[id].len != o->text.len || memcmp(pieces[id].ptr, o->text.ptr, o->text.len) != 0)
        continue;
      st = LERR(c, FG_ERR_FORMAT, o->file, "fgemma.vocab_override: \"%.*s\" (for id %d) is already token %llu of the base",
                (int)FG_MIN(o->text.len, (size_t)40), o->text.ptr, (int)o->id, (unsigned long long)id);
      break;
    }
  }
  fg_free(pieces);
  return st;
}

static int cmp_ov(const void *x, const void *y) {
  const int32_t a = ((const lora_ov *)x)->id, b = ((const lora_ov *)y)->id;
  return (a > b) - (a < b);
}

/* Copies the override out of the files (sorted by id) into set. */
static fg_status keep_override(lora_ctx *c, fg_lora_set *set) {
  if (c->n_ov == 0) return FG_OK;
  qsort(c->ov, c->n_ov, sizeof *c->ov, cmp_ov);
  size_t pool = 0;
  for (size_t i = 0; i < c->n_ov; i++) pool += c->ov[i].text.len + 1;
  set->ov_ids = fg_malloc_array(c->n_ov, sizeof *set->ov_ids);
  set->ov_text = fg_malloc_array(c->n_ov, sizeof *set->ov_text);
  set->ov_pool = fg_malloc(pool);
  if (!set->ov_ids || !set->ov_text || !set->ov_pool)
    return fg_err(c->err, FG_ERR_NOMEM, "out of memory for the vocabulary override");
  char *p = set->ov_pool;
  for (size_t i = 0; i < c->n_ov; i++) {
    set->ov_ids[i] = c->ov[i].id;
    memcpy(p, c->ov[i].text.ptr, c->ov[i].text.len);
    p[c->ov[i].text.len] = '\0';
    set->ov_text[i] = (fg_gguf_str){p, c->ov[i].text.len};
    p += c->ov[i].text.len + 1;
  }
  set->n_override = c->n_ov;
  return FG_OK;
}

/* FNV-1a over what makes the adapters' effect: per file (in order) the user scale, alpha, every tensor's
 * name, shape, type and bytes, the override; then the merge mode. */
static uint64_t hash_files(const lora_ctx *c, uint32_t merge) {
  uint64_t h = FG_FNV1A_INIT;
  const uint32_t head[2] = {(uint32_t)c->n_files, merge};
  fnv(&h, head, sizeof head);
  for (size_t f = 0; f < c->n_files; f++) {
    const lora_file *lf = &c->files[f];
    fnv(&h, &lf->scale, sizeof lf->scale);
    fnv(&h, &lf->alpha, sizeof lf->alpha);
    for (size_t i = 0; i < lf->g.n_tensors; i++) {
      const fg_gguf_tensor *t = &lf->g.tensors[i];
      fnv(&h, t->name.ptr, t->name.len);
      fnv(&h, t->ne, sizeof t->ne);
      fnv(&h, &t->type, sizeof t->type);
      fnv(&h, t->data, (size_t)t->nbytes);
    }
    for (size_t i = 0; i < c->n_ov; i++) {
      if (c->ov[i].file != f) continue;
      fnv(&h, &c->ov[i].id, sizeof c->ov[i].id);
      fnv(&h, c->ov[i].text.ptr, c->ov[i].text.len);
    }
  }
  return h;
}

// ----------------------------------------------------------------------------------------------
// The run-time layout

/* Pairs of layer il and target k that apply (s != 0), in file order: their total rank */
static uint32_t target_rank(const lora_ctx *c, uint32_t il, uint32_t k) {
  uint32_t r = 0;
  for (size_t i = 0; i < c->n_pairs; i++)
    if (c->pairs[i].layer == il && c->pairs[i].target == k && c->pairs[i].s != 0.0f) r += c->pairs[i].rank;
  return r;
}

/* Lays the applied pairs out (lora.h), dequantized and checked; the pairs that do not apply are checked too. */
static fg_status build_layout(lora_ctx *c, fg_lora_set *set) {
  fg_model *m = c->m;
  const uint32_t n_layer = m->hp.n_layer;
  /* sizes first: every count below is bounded by the files' bytes, so the sums fit in 64 bits */
  uint64_t floats = 0, max_cols = 1;
  uint32_t max_rank = 0;
  for (uint32_t il = 0; il < n_layer; il++) {
    for (uint32_t g = 0; g < FG_LORA_N_INPUTS; g++) {
      uint32_t rg = 0;
      for (uint32_t i = 0; i < fg_lora_group_count[g]; i++) {
        const uint32_t k = fg_lora_group_first[g] + i;
        const uint32_t rk = target_rank(c, il, k);
        const fg_mat *W = layer_mat(&m->layers[il], k);
        rg += rk;
        floats += (uint64_t)rk * W->rows + (rk ? 15 : 0);  /* B, padded to 64 bytes */
        if (rk) floats += (uint64_t)rk * W->cols; /* its A rows */
        max_cols = FG_MAX(max_cols, W->cols);
      }
      if (rg) floats += 15;
      max_rank = FG_MAX(max_rank, rg);
    }
  }
  for (size_t i = 0; i < c->n_pairs; i++) max_cols = FG_MAX(max_cols, FG_MAX(c->pairs[i].a->ne[0], c->pairs[i].b->ne[0]));
  float *tmp = fg_malloc_array((size_t)max_cols, sizeof(float)); /* (max_cols) one row, for checks */
  if (!tmp) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  fg_status st = FG_OK;
  /* the pairs that do not apply: checked, not kept */
  for (size_t i = 0; i < c->n_pairs && st == FG_OK; i++) {
    const lora_pair *p = &c->pairs[i];
    if (p->s != 0.0f) continue;
    char nm[128];
    snprintf(nm, sizeof nm, "blk.%u.%s.weight.lora_a", p->layer, fg_lora_targets[p->target].gguf);
    st = read_tensor(c, p->file, p->a, nm, NULL, 0, tmp);
    nm[strlen(nm) - 1] = 'b';
    if (st == FG_OK) st = read_tensor(c, p->file, p->b, nm, NULL, 0, tmp);
  }
  if (st != FG_OK || max_rank == 0) {
    fg_free(tmp);
    return st; /* nothing applies: no run-time layout */
  }
  uint64_t bytes;
  size_t nbytes;
  if (!fg_mul_u64(floats, sizeof(float), &bytes) || !fg_u64_to_size(bytes, &nbytes)) {
    fg_free(tmp);
    return fg_err(c->err, FG_ERR_NOMEM, "the adapters (%llu floats) do not fit in memory", (unsigned long long)floats);
  }
  set->layers = fg_calloc(n_layer, sizeof *set->layers);
  set->data = fg_aligned_alloc(64, nbytes);
  if (!set->layers || !set->data) {
    fg_free(tmp);
    return fg_err(c->err, FG_ERR_NOMEM, "out of memory for the adapters (%zu bytes)", nbytes);
  }
  set->data_bytes = nbytes;
  set->max_rank = max_rank;
  float *next = set->data;
  for (uint32_t il = 0; il < n_layer && st == FG_OK; il++) {
    fg_lora_layer *LL = &set->layers[il];
    for (uint32_t g = 0; g < FG_LORA_N_INPUTS && st == FG_OK; g++) {
      const uint32_t k0 = fg_lora_group_first[g];
      uint32_t rg = 0;
      for (uint32_t i = 0; i < fg_lora_group_count[g]; i++) rg += target_rank(c, il, k0 + i);
      if (!rg) continue;
      const uint32_t n_in = layer_mat(&m->layers[il], k0)->cols;
      fg_mat *A = &LL->a[g];
      *A = (fg_mat){FG_TYPE_F32, rg, n_in, (size_t)n_in * sizeof(float), next, NULL, NULL};
      float *arow = next;
      next += ((size_t)rg * n_in + 15) / 16 * 16;
      uint32_t row = 0;
      for (uint32_t i = 0; i < fg_lora_group_count[g] && st == FG_OK; i++) {
        const uint32_t k = k0 + i, rk = target_rank(c, il, k);
        LL->off[k] = row;
        if (!rk) continue;
        const uint32_t n_out = layer_mat(&m->layers[il], k)->rows;
        fg_mat *BT = &LL->bt[k];
        *BT = (fg_mat){FG_TYPE_F32, rk, n_out, (size_t)n_out * sizeof(float), next, NULL, NULL};
        float *bdata = next; /* (rk, n_out) */
        next += ((size_t)rk * n_out + 15) / 16 * 16;
        uint32_t col = 0;
        for (size_t pi = 0; pi < c->n_pairs && st == FG_OK; pi++) {
          const lora_pair *p = &c->pairs[pi];
          if (p->layer != il || p->target != k || p->s == 0.0f) continue;
          char nm[128];
          snprintf(nm, sizeof nm, "blk.%u.%s.weight.lora_a", il, fg_lora_targets[k].gguf);
          st = read_tensor(c, p->file, p->a, nm, arow + (size_t)(row + col) * n_in, n_in, NULL);
          nm[strlen(nm) - 1] = 'b';
          /* lora_b: checked, then its n_out rows of rank values, times s, into rows [col, col + rank) of BT */
          if (st == FG_OK) st = read_tensor(c, p->file, p->b, nm, NULL, 0, tmp);
          if (st != FG_OK) break;
          uint64_t rb;
          fg_type_row_bytes(p->b->type, p->b->ne[0], &rb); /* checked by read_tensor */
          for (uint32_t r = 0; r < n_out && st == FG_OK; r++) {
            fg_dequantize_row(p->b->type, p->b->data + r * rb, tmp, p->rank);
            float *dst = bdata + (size_t)col * n_out + r; /* column r of BT, n_out apart */
            for (uint32_t j = 0; j < p->rank; j++) dst[(size_t)j * n_out] = p->s * tmp[j];
            for (uint32_t j = 0; j < p->rank && st == FG_OK; j++)
              if (!isfinite(dst[(size_t)j * n_out]))
                st = LERR(c, FG_ERR_FORMAT, p->file, "tensor '%s' times the scale %g overflows in row %u", nm,
                          (double)p->s, r);
          }
          if (st != FG_OK) break;
          col += p->rank;
        }
        row += rk;
      }
    }
  }
  FG_ASSERT(st != FG_OK || (size_t)(next - set->data) * sizeof(float) <= nbytes);
  fg_free(tmp);
  return st;
}

// ----------------------------------------------------------------------------------------------
// Merging: W + Σ s·B·A into heap copies

typedef struct merge_job {
  const fg_mat *W;   /* the base matrix (any type) */
  const fg_mat *A;   /* the group's A: rows off .. off + BT->rows are this target's */
  uint32_t off;
  const fg_mat *BT;  /* (r, W->rows) (s·B) transposed */
  uint32_t type;     /* of the copy */
  uint8_t *dst;      /* (W->rows, dst_rb) */
  size_t dst_rb;
  float *tmp;        /* (nth, 2 * W->cols) per thread: the row, the delta */
  _Atomic int32_t bad_row; /* a row found with a non-finite merged value, or -1 (rows < 2^18) */
} merge_job;

static void merge_run(void *ud, uint32_t ith, uint32_t nth) {
  const merge_job *j = ud;
  const size_t n = j->W->cols, rows = j->W->rows, r_k = j->BT->rows;
  float *w = j->tmp + (size_t)ith * 2 * n, *d = w + n;
  const float *A = j->A->data;
  const float *BT = j->BT->data;
  for (size_t r = rows * ith / nth; r < rows * (ith + 1) / nth; r++) {
    fg_dequantize_row(j->W->type, (const uint8_t *)j->W->data + r * j->W->row_bytes, w, n);
    memset(d, 0, n * sizeof *d);
    for (size_t q = 0; q < r_k; q++) {
      const float b = BT[q * rows + r];
      const float *a = A + (size_t)(j->off + q) * n;
      for (size_t c = 0; c < n; c++) d[c] += b * a[c];
    }
    bool finite = true;
    for (size_t c = 0; c < n; c++) {
      w[c] += d[c];
      finite &= isfinite(w[c]) != 0;
    }
    if (!finite) { /* finite adapters can still overflow the sum: refused by merge(), never quantized */
      int32_t none = -1;
      atomic_compare_exchange_strong(&((merge_job *)j)->bad_row, &none, (int32_t)r);
      continue;
    }
    fg_quantize_row(j->type, w, j->dst + r * j->dst_rb, n);
  }
}

static uint32_t merge_type(uint32_t mode) {
  return mode == FG_LORA_MERGE_F32 ? FG_TYPE_F32 : mode == FG_LORA_MERGE_BF16 ? FG_TYPE_BF16 : FG_TYPE_Q8_0;
}

/* Makes the copies (one buffer) and points the adapted matrices at them; the run-time layout goes. */
static fg_status merge(lora_ctx *c, fg_lora_set *set, uint32_t mode) {
  fg_model *m = c->m;
  const uint32_t type = merge_type(mode);
  uint64_t total = 0, max_cols = 1;
  for (uint32_t il = 0; set->layers && il < m->hp.n_layer; il++) {
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS; k++) {
      if (!set->layers[il].bt[k].rows) continue;
      const fg_mat *W = layer_mat(&m->layers[il], k);
      uint64_t rb, sz;
      if (!fg_type_row_bytes(type, W->cols, &rb))
        return fg_err(c->err, FG_ERR_UNSUPPORTED, "cannot merge adapters into blk.%u.%s.weight as %s: rows of %u values "
                      "are not a multiple of its block", il, fg_lora_targets[k].gguf, fg_type_name(type), W->cols);
      if (!fg_mul_u64(rb, W->rows, &sz) || !fg_add_u64(total, (sz + 63) / 64 * 64, &total))
        return fg_err(c->err, FG_ERR_NOMEM, "the merged matrices do not fit in memory");
      max_cols = FG_MAX(max_cols, W->cols);
    }
  }
  if (total == 0) return FG_OK; /* nothing applies */
  size_t nbytes;
  if (!fg_u64_to_size(total, &nbytes)) return fg_err(c->err, FG_ERR_NOMEM, "the merged matrices do not fit in memory");
  uint32_t nth = FG_MIN(fg_cpu_count(), 16u);
  fg_threadpool *tp = NULL;
  if (nth > 1 && fg_threadpool_create(nth, &tp) != FG_OK) tp = NULL;
  if (!tp) nth = 1;
  uint8_t *buf = fg_aligned_alloc(64, nbytes);
  float *tmp = fg_malloc_array((size_t)nth * 2 * (size_t)max_cols, sizeof(float));
  if (!buf || !tmp) {
    fg_aligned_free(buf);
    fg_free(tmp);
    fg_threadpool_free(tp);
    return fg_err(c->err, FG_ERR_NOMEM, "out of memory for the merged matrices (%zu bytes)", nbytes);
  }
  /* the copies first; the matrices are switched over only when all are made (nothing can fail then) */
  uint8_t *dst = buf;
  for (uint32_t il = 0; il < m->hp.n_layer; il++) {
    const fg_lora_layer *LL = &set->layers[il];
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS; k++) {
      if (!LL->bt[k].rows) continue;
      const fg_mat *W = layer_mat(&m->layers[il], k);
      uint64_t rb;
      fg_type_row_bytes(type, W->cols, &rb);
      merge_job j = {W, &LL->a[k_group_of[k]], LL->off[k], &LL->bt[k], type, dst, (size_t)rb, tmp, -1};
      atomic_init(&j.bad_row, -1);
      if (tp)
        fg_threadpool_run(tp, merge_run, &j);
      else
        merge_run(&j, 0, 1);
      const int32_t bad = atomic_load(&j.bad_row);
      if (bad >= 0) {
        fg_free(tmp);
        fg_threadpool_free(tp);
        fg_aligned_free(buf);
        return fg_err(c->err, FG_ERR_FORMAT, "adapter %.90s%s: merging into blk.%u.%s.weight gives a non-finite value "
                      "in row %d", c->files[0].path, c->n_files > 1 ? " (and the others)" : "", il,
                      fg_lora_targets[k].gguf, (int)bad);
      }
      dst += ((size_t)rb * W->rows + 63) / 64 * 64;
    }
  }
  fg_free(tmp);
  fg_threadpool_free(tp);
  dst = buf;
  for (uint32_t il = 0; il < m->hp.n_layer; il++) {
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS; k++) {
      if (!set->layers[il].bt[k].rows) continue;
      fg_mat *W = layer_mat(&m->layers[il], k);
      uint64_t rb;
      fg_type_row_bytes(type, W->cols, &rb);
      /* the file's pages of the replaced matrix are handed back (as repack does): resident memory grows
       * by the copies less what they replace */
      fg_mapfile_drop(&m->file, W->data, (size_t)W->rows * W->row_bytes);
      W->type = type;
      W->row_bytes = (size_t)rb;
      W->data = dst;
      W->packed = NULL;
      W->packed_for = NULL;
      dst += ((size_t)rb * W->rows + 63) / 64 * 64;
    }
  }
  set->merged = buf;
  set->merged_bytes = nbytes;
  fg_aligned_free(set->data);
  fg_free(set->layers);
  set->data = NULL;
  set->layers = NULL;
  set->data_bytes = 0;
  set->max_rank = 0;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Load

void fg_lora_free(fg_lora_set *set) {
  if (!set) return;
  fg_free(set->layers);
  fg_aligned_free(set->data);
  fg_aligned_free(set->merged);
  fg_free(set->ov_ids);
  fg_free(set->ov_text);
  fg_free(set->ov_pool);
  fg_free(set->given);
  fg_free(set->given_pool);
  fg_free(set);
}

/* Copies the list of adapters as given (paths and scales) into set. */
static fg_status keep_given(const fg_model_params *p, fg_lora_set *set, fg_error *err) {
  size_t pool = 0;
  for (size_t i = 0; i < p->n_loras; i++) pool += strlen(p->loras[i].path) + 1;
  set->given = fg_malloc_array(p->n_loras, sizeof *set->given);
  set->given_pool = fg_malloc(pool);
  if (!set->given || !set->given_pool) return fg_err(err, FG_ERR_NOMEM, "out of memory for the list of adapters");
  char *q = set->given_pool;
  for (size_t i = 0; i < p->n_loras; i++) {
    const size_t n = strlen(p->loras[i].path) + 1;
    memcpy(q, p->loras[i].path, n);
    set->given[i] = (fg_lora){q, p->loras[i].scale};
    q += n;
  }
  set->n_given = p->n_loras;
  return FG_OK;
}

static fg_status load_files(lora_ctx *c) {
  const fg_model_params *p = c->p;
  fg_status st = FG_OK;
  for (uint32_t f = 0; f < c->n_files && st == FG_OK; f++) {
    lora_file *lf = &c->files[f];
    fg_error e;
    st = fg_mapfile_open(lf->path, (p->flags & FG_MODEL_NO_MMAP) == 0, &lf->file, &e);
    if (st != FG_OK) {
      st = fg_err(c->err, st, "adapter %s", e.msg);
      break;
    }
    st = fg_gguf_parse(lf->file.data, lf->file.size, &lf->g, &e);
    if (st != FG_OK) st = LERR(c, st, f, "%s", e.msg);
    if (st == FG_OK) st = read_meta(c, f);
    if (st == FG_OK) st = read_pairs(c, f);
    if (st == FG_OK) st = read_override(c, f);
  }
  return st;
}

fg_status fg_lora_load(fg_model *m, const fg_model_params *p, fg_error *err) {
  if (p->lora_merge > FG_LORA_MERGE_Q8_0)
    return fg_err(err, FG_ERR_INVALID_ARG, "lora_merge %u is not one of FG_LORA_RUNTIME (0), FG_LORA_MERGE_F32 (1), "
                  "_BF16 (2), _Q8_0 (3)", p->lora_merge);
  if (p->n_loras == 0) return FG_OK;
  if (!p->loras) return fg_err(err, FG_ERR_INVALID_ARG, "n_loras is %zu but loras is NULL", p->n_loras);
  if (p->n_loras > LORA_MAX_ADAPTERS)
    return fg_err(err, FG_ERR_INVALID_ARG, "%zu adapters: at most %u", p->n_loras, LORA_MAX_ADAPTERS);
  for (size_t i = 0; i < p->n_loras; i++) {
    if (!p->loras[i].path || !*p->loras[i].path) return fg_err(err, FG_ERR_INVALID_ARG, "adapter %zu has no path", i);
    if (!isfinite(p->loras[i].scale))
      return fg_err(err, FG_ERR_INVALID_ARG, "adapter %.120s: scale %g is not finite", p->loras[i].path,
                    (double)p->loras[i].scale);
  }
  const double t0 = fg_time_s();
  lora_ctx c = {.m = m, .p = p, .n_files = p->n_loras, .err = err};
  fg_lora_set *set = NULL;
  fg_status st = FG_OK;
  c.files = fg_calloc(p->n_loras, sizeof *c.files);
  if (!c.files) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < c.n_files; i++) {
    c.files[i].path = p->loras[i].path;
    c.files[i].scale = p->loras[i].scale;
  }
  st = load_files(&c);
  if (st == FG_OK) st = check_override(&c);
  if (st == FG_OK && !(set = fg_calloc(1, sizeof *set))) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK) st = keep_override(&c, set);
  if (st == FG_OK) st = build_layout(&c, set);
  if (st == FG_OK) set->hash = hash_files(&c, p->lora_merge);
  if (st == FG_OK) st = keep_given(p, set, err);
  if (st == FG_OK && p->lora_merge != FG_LORA_RUNTIME) st = merge(&c, set, p->lora_merge);
  for (size_t i = 0; i < c.n_files; i++) {
    fg_gguf_clear(&c.files[i].g);
    fg_mapfile_close(&c.files[i].file);
  }
  fg_free(c.files);
  fg_free(c.pairs);
  fg_free(c.ov);
  if (st != FG_OK) {
    fg_lora_free(set);
    return st;
  }
  m->lora = set;
  m->info.n_loras = (uint32_t)p->n_loras;
  m->info.lora_merge = p->lora_merge;
  m->info.lora_bytes = set->merged ? set->merged_bytes : set->data_bytes;
  m->info.lora_ms = (fg_time_s() - t0) * 1e3;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// The fast path's product

uint64_t fg_lora_scratch_floats(const fg_model *m, uint32_t n_threads) {
  return m->lora && m->lora->layers ? (uint64_t)FG_MAX(n_threads, 1u) * m->lora->max_rank : 0;
}

void fg_lora_apply_row(fg_ops *ops, const fg_attn_kernels *ak, const fg_lora_layer *L, uint32_t g, const float *x,
                       float *const *y, float *t) {
  const fg_mat *A = &L->a[g];
  if (!A->rows) return;
  const fg_status st = fg_ops_matmul_here(ops, A, x, A->cols, 1, t, A->rows);
  FG_ASSERT(st == FG_OK); /* f32 weights, checked shapes: nothing can fail */
  (void)st;
  fg_lora_apply_bt(ak, L, g, t, y);
}

void fg_lora_apply_bt(const fg_attn_kernels *ak, const fg_lora_layer *L, uint32_t g, const float *t, float *const *y) {
  if (!L->a[g].rows) return;
  for (uint32_t i = 0; i < fg_lora_group_count[g]; i++) {
    const uint32_t k = fg_lora_group_first[g] + i;
    const fg_mat *BT = &L->bt[k]; /* (rank, n_out): y[i][r] += Σ_q t[off + q] · BT[q][r] */
    if (BT->rows) ak->lora_bt(y[i], t + L->off[k], BT->rows, (const float *)BT->data, BT->cols, BT->cols);
  }
}
