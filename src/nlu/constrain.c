/* constrain.c — the catalog automaton of constrain.h: compiled pieces (canonical token ids), per-token
 * tables built in one pass over the vocabulary, and the per-decode matcher. */
#include "nlu/constrain.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Compiled catalog

/* A literal piece in its canonical tokenization. */
typedef struct cunit {
  const int32_t *ids; /* (n) */
  uint32_t n;
  uint32_t tag;       /* what completing it means; see the phase that offers it */
  uint32_t tag2;      /* the name pieces: the first key piece's tag */
} cunit;

#define TAG_CLOSE 0xffffffffu /* the close piece among the keys */
#define TAG_NEG 0x80000000u   /* a key piece that ends with the minus sign of a number */
enum { AFTER_CALL = 0, AFTER_STOP = 1 };

typedef struct cparam {
  const fg_param *decl;
  bool offered;       /* its key may be generated */
  bool free_string;   /* STRING without enum: the key piece ends with <escape> */
  cunit key_first;    /* "{KEY:" (+ "<escape>" for a free string) as the first argument */
  cunit key_next;     /* ",KEY:" (+ "<escape>") after another argument */
  cunit neg_first;    /* INTEGER/NUMBER: "{KEY:-" and ",KEY:-" (the tokenizer merges ":-") */
  cunit neg_next;
  cunit *values;      /* (n_values) enum values "<escape>V<escape>", true/false, "[]" or "{}" */
  uint32_t n_values;
} cparam;

typedef struct cfunc {
  cunit *entries;     /* (n_entries) "call:NAME" + each piece that may follow "call:NAME": "{KEY:"...,
                         "{KEY:-" and "{}<end_function_call>"; whole pieces so that the tokenizer's
                         merges ("{}") and names that prefix others ("play", "play_music") are exact */
  uint32_t n_entries;
  cparam *params;     /* (n_params) in the catalog's (sorted) order */
  uint32_t n_params;
} cfunc;

struct fg_constrain {
  atomic_uint refs;    /* holders (fg_constrain_retain); the last fg_constrain_free frees */
  const fg_catalog *cat;
  const fg_vocab *voc;
  uint32_t n_vocab;
  int32_t id_sfc, id_efc, id_esc, id_eot, id_eos, id_sresp, id_sot; /* -1 when absent (only sresp, sot) */
  cfunc *funcs;        /* (n_funcs) */
  uint32_t n_funcs;
  cunit close_first;   /* "{}<end_function_call>" (the tokenizer merges "{}") */
  cunit close_next;    /* "}<end_function_call>" */
  cunit after[4];      /* single control tokens after a call: another call or a stop */
  uint32_t n_after;
  uint8_t *free_ok;    /* (n_vocab) allowed inside a free string (includes <escape>) */
  uint8_t *prose_ok;   /* (n_vocab) allowed in prose */
  uint8_t *start_ok;   /* (n_vocab) prose_ok plus <start_function_call> */
  uint32_t n_free_ok, n_prose_ok, n_start_ok;
  int32_t *num_ids;    /* (n_num) tokens whose text is made of [0-9.-] only, ascending */
  char (*num_text)[16];/* (n_num) their text, NUL-terminated */
  uint32_t n_num;
  uint32_t max_alts;   /* most pieces one literal phase can offer */
  uint32_t n_entries;  /* entry pieces of all functions */
  /* storage */
  int32_t *pool;       /* (pool_n) canonical ids of all pieces */
  size_t pool_n, pool_cap;
};

static fg_status pool_add(fg_constrain *k, const int32_t *ids, size_t n, size_t *at) {
  if (k->pool_n + n > k->pool_cap) {
    size_t cap = k->pool_cap ? k->pool_cap : 1024;
    while (cap < k->pool_n + n) cap *= 2;
    int32_t *p = fg_realloc(k->pool, cap * sizeof *p);
    if (!p) return FG_ERR_NOMEM;
    k->pool = p;
    k->pool_cap = cap;
  }
  memcpy(k->pool + k->pool_n, ids, n * sizeof *ids);
  *at = k->pool_n;
  k->pool_n += n;
  return FG_OK;
}

/* Piece text -> canonical ids stored in the pool; u->ids is fixed up after all pieces exist (the
 * pool moves while it grows), so meanwhile u->ids holds the pool offset. */
typedef struct builder {
  fg_constrain *k;
  int32_t *tmp; /* (tmp_cap) */
  size_t tmp_cap;
  char *text;   /* (text_cap) */
  size_t text_cap;
  fg_error *err;
} builder;

static fg_status piece(builder *b, cunit *u, uint32_t tag, const char *fmt1, const char *s, const char *fmt2) {
  const size_t need = strlen(fmt1) + strlen(s) + strlen(fmt2) + 1;
  if (need > b->text_cap) {
    char *t = fg_realloc(b->text, need);
    if (!t) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
    b->text = t;
    b->text_cap = need;
  }
  const size_t n = (size_t)snprintf(b->text, b->text_cap, "%s%s%s", fmt1, s, fmt2);
  size_t n_ids = 0;
  fg_status st = fg_vocab_encode(b->k->voc, b->text, n, 0, b->tmp, b->tmp_cap, &n_ids, b->err);
  if (st == FG_ERR_BUFFER_TOO_SMALL) {
    int32_t *t = fg_realloc(b->tmp, (n_ids + 16) * sizeof *t);
    if (!t) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
    b->tmp = t;
    b->tmp_cap = n_ids + 16;
    st = fg_vocab_encode(b->k->voc, b->text, n, 0, b->tmp, b->tmp_cap, &n_ids, b->err);
  }
  if (st != FG_OK) return st;
  if (n_ids == 0) return fg_err(b->err, FG_ERR_INTERNAL, "the piece \"%s\" tokenizes to nothing", b->text);
  size_t at;
  if (pool_add(b->k, b->tmp, n_ids, &at) != FG_OK) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
  u->ids = (const int32_t *)(uintptr_t)at;
  u->n = (uint32_t)n_ids;
  u->tag = tag;
  return FG_OK;
}

static void fixup(const fg_constrain *k, cunit *u) { u->ids = k->pool + (uintptr_t)u->ids; }

static int32_t control_id(const fg_vocab *v, const char *name) { return fg_vocab_lookup(v, name, strlen(name)); }

/* One pass over the vocabulary: free-text, prose and numeric tables. */
static fg_status scan_vocab(fg_constrain *k, fg_error *err) {
  const uint32_t nv = k->n_vocab;
  k->free_ok = fg_calloc(nv, 1);
  k->prose_ok = fg_calloc(nv, 1);
  k->start_ok = fg_calloc(nv, 1);
  if (!k->free_ok || !k->prose_ok || !k->start_ok) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  const size_t cap = fg_vocab_max_piece_len(k->voc) + 1;
  char *buf = fg_malloc(cap);
  if (!buf) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  uint32_t n_num = 0, cap_num = 0;
  fg_status st = FG_OK;
  for (uint32_t id = 0; id < nv && st == FG_OK; id++) {
    const size_t n = fg_vocab_token_to_text(k->voc, (int32_t)id, buf, cap);
    const bool ctrl = fg_vocab_is_control(k->voc, (int32_t)id);
    bool lt = false, numeric = n > 0 && n < 16;
    for (size_t i = 0; i < n && i < cap; i++) {
      const char c = buf[i];
      if (c == '<') lt = true;
      if (!((c >= '0' && c <= '9') || c == '.' || c == '-')) numeric = false;
    }
    const int32_t sid = (int32_t)id;
    k->prose_ok[id] = sid != k->id_sfc && sid != k->id_efc && sid != k->id_esc;
    k->free_ok[id] = (!ctrl && n > 0 && !lt) || sid == k->id_esc;
    if (numeric && !ctrl) {
      if (n_num == cap_num) {
        cap_num = cap_num ? cap_num * 2 : 64;
        int32_t *ni = fg_realloc(k->num_ids, cap_num * sizeof *ni);
        if (ni) k->num_ids = ni;
        char(*nt)[16] = ni ? fg_realloc(k->num_text, cap_num * sizeof *nt) : NULL;
        if (nt) k->num_text = nt;
        if (!ni || !nt) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
      }
      if (st == FG_OK) {
        k->num_ids[n_num] = sid;
        memcpy(k->num_text[n_num], buf, n);
        k->num_text[n_num][n] = '\0';
        n_num++;
      }
    }
  }
  fg_free(buf);
  k->n_num = n_num;
  memcpy(k->start_ok, k->prose_ok, nv);
  k->start_ok[k->id_sfc] = 1;
  for (uint32_t id = 0; id < nv; id++) {
    k->n_free_ok += k->free_ok[id];
    k->n_prose_ok += k->prose_ok[id];
    k->n_start_ok += k->start_ok[id];
  }
  return st;
}

static fg_status compile_function(builder *b, uint32_t fi) {
  fg_constrain *k = b->k;
  const fg_function *fn = fg_catalog_function(k->cat, fi);
  cfunc *cf = &k->funcs[fi];
  fg_status st = FG_OK;
  cf->n_params = fn->params.n_props;
  cf->params = fg_calloc(cf->n_params ? cf->n_params : 1, sizeof *cf->params);
  if (!cf->params) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
  uint32_t n_offered = 0;
  for (uint32_t j = 0; j < cf->n_params && st == FG_OK; j++) {
    const fg_param *p = &fn->params.props[j];
    cparam *cp = &cf->params[j];
    cp->decl = p;
    cp->offered = p->required || (p->type != FG_PARAM_ARRAY && p->type != FG_PARAM_OBJECT);
    cp->free_string = p->type == FG_PARAM_STRING && p->n_enum == 0;
    const char *tail = cp->free_string ? ":<escape>" : ":";
    st = piece(b, &cp->key_first, j, "{", p->name, tail);
    if (st == FG_OK) st = piece(b, &cp->key_next, j, ",", p->name, tail);
    if (p->type == FG_PARAM_INTEGER || p->type == FG_PARAM_NUMBER) {
      if (st == FG_OK) st = piece(b, &cp->neg_first, j | TAG_NEG, "{", p->name, ":-");
      if (st == FG_OK) st = piece(b, &cp->neg_next, j | TAG_NEG, ",", p->name, ":-");
      n_offered += cp->offered;
    }
    n_offered += cp->offered;
    uint32_t nv = 0;
    if (p->type == FG_PARAM_STRING) nv = p->n_enum;
    else if (p->type == FG_PARAM_BOOLEAN) nv = 2;
    else if (p->type == FG_PARAM_ARRAY || p->type == FG_PARAM_OBJECT) nv = 1;
    if (st != FG_OK || nv == 0) continue;
    cp->values = fg_calloc(nv, sizeof *cp->values);
    if (!cp->values) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
    cp->n_values = nv;
    for (uint32_t e = 0; e < nv && st == FG_OK; e++) {
      if (p->type == FG_PARAM_STRING) st = piece(b, &cp->values[e], e, "<escape>", p->enum_values[e], "<escape>");
      else if (p->type == FG_PARAM_BOOLEAN) st = piece(b, &cp->values[e], e, "", e ? "false" : "true", "");
      else st = piece(b, &cp->values[e], e, "", p->type == FG_PARAM_ARRAY ? "[]" : "{}", "");
    }
    if (nv > k->max_alts) k->max_alts = nv;
  }
  if (n_offered + 1 > k->max_alts) k->max_alts = n_offered + 1;
  if (st != FG_OK) return st;

  /* the entries: "call:NAME" joined with every first key piece, and the close when nothing is required */
  cf->entries = fg_calloc(n_offered + 1, sizeof *cf->entries);
  if (!cf->entries) return fg_err(b->err, FG_ERR_NOMEM, "out of memory");
  bool closable = true;
  char tail[FG_CATALOG_MAX_NAME + 16];
  for (uint32_t j = 0; j < cf->n_params && st == FG_OK; j++) {
    const cparam *cp = &cf->params[j];
    if (cp->decl->required) closable = false;
    if (!cp->offered) continue;
    snprintf(tail, sizeof tail, "{%s:%s", cp->decl->name, cp->free_string ? "<escape>" : "");
    st = piece(b, &cf->entries[cf->n_entries], fi, "call:", fn->name, tail);
    cf->entries[cf->n_entries++].tag2 = j;
    if (st == FG_OK && cp->neg_first.n) {
      snprintf(tail, sizeof tail, "{%s:-", cp->decl->name);
      st = piece(b, &cf->entries[cf->n_entries], fi, "call:", fn->name, tail);
      cf->entries[cf->n_entries++].tag2 = j | TAG_NEG;
    }
  }
  if (st == FG_OK && closable) {
    st = piece(b, &cf->entries[cf->n_entries], fi, "call:", fn->name, "{}<end_function_call>");
    cf->entries[cf->n_entries++].tag2 = TAG_CLOSE;
  }
  k->n_entries += cf->n_entries;
  return st;
}

fg_constrain *fg_constrain_retain(const fg_constrain *k) {
  fg_constrain *w = (fg_constrain *)k; /* only the count changes; the automaton stays immutable */
  if (w) atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
  return w;
}

void fg_constrain_free(fg_constrain *k) {
  if (!k) return;
  /* a partly built automaton (create failed) has refs 1 too */
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1) return;
  for (uint32_t i = 0; k->funcs && i < k->n_funcs; i++) {
    for (uint32_t j = 0; k->funcs[i].params && j < k->funcs[i].n_params; j++) fg_free(k->funcs[i].params[j].values);
    fg_free(k->funcs[i].params);
    fg_free(k->funcs[i].entries);
  }
  fg_free(k->funcs);
  fg_free(k->free_ok);
  fg_free(k->prose_ok);
  fg_free(k->start_ok);
  fg_free(k->num_ids);
  fg_free(k->num_text);
  fg_free(k->pool);
  fg_free(k);
}

fg_status fg_constrain_create(const fg_catalog *c, const fg_vocab *v, fg_constrain **out, fg_error *err) {
  if (out) *out = NULL;
  if (!c || !v || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_constrain_create: NULL argument");
  if (fg_vocab_add_space_prefix(v))
    return fg_err(err, FG_ERR_UNSUPPORTED, "constrained decoding needs a vocabulary without add_space_prefix");
  fg_constrain *k = fg_calloc(1, sizeof *k);
  if (!k) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  atomic_init(&k->refs, 1);
  k->cat = c;
  k->voc = v;
  k->n_vocab = fg_vocab_size(v);
  k->id_sfc = control_id(v, "<start_function_call>");
  k->id_efc = control_id(v, "<end_function_call>");
  k->id_esc = control_id(v, "<escape>");
  k->id_eot = control_id(v, "<end_of_turn>");
  k->id_eos = fg_vocab_eos(v);
  k->id_sresp = control_id(v, "<start_function_response>");
  k->id_sot = control_id(v, "<start_of_turn>");
  fg_status st = FG_OK;
  if (k->id_sfc < 0 || k->id_efc < 0 || k->id_esc < 0 || k->id_eot < 0 || k->id_eos < 0)
    st = fg_err(err, FG_ERR_UNSUPPORTED,
                "constrained decoding needs <start_function_call>, <end_function_call>, <escape>, "
                "<end_of_turn> and <eos> in the vocabulary");
  if (st == FG_OK) st = scan_vocab(k, err);

  builder b = {k, NULL, 0, NULL, 0, err};
  k->n_funcs = (uint32_t)fg_catalog_n_functions(c);
  k->max_alts = 4;
  if (k->n_funcs > k->max_alts) k->max_alts = k->n_funcs;
  if (st == FG_OK && !(k->funcs = fg_calloc(k->n_funcs ? k->n_funcs : 1, sizeof *k->funcs)))
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < k->n_funcs && st == FG_OK; i++) st = compile_function(&b, i);
  if (k->n_entries > k->max_alts) k->max_alts = k->n_entries;
  if (st == FG_OK) st = piece(&b, &k->close_first, TAG_CLOSE, "{}", "", "<end_function_call>");
  if (st == FG_OK) st = piece(&b, &k->close_next, TAG_CLOSE, "}", "", "<end_function_call>");
  fg_free(b.tmp);
  fg_free(b.text);
  if (st == FG_OK) {
    const int32_t after_ids[4] = {k->id_sfc, k->id_eot, k->id_eos, k->id_sresp};
    for (uint32_t i = 0; i < 4; i++) {
      if (after_ids[i] < 0) continue;
      size_t at;
      if (pool_add(k, &after_ids[i], 1, &at) != FG_OK) {
        st = fg_err(err, FG_ERR_NOMEM, "out of memory");
        break;
      }
      k->after[k->n_after].ids = (const int32_t *)(uintptr_t)at;
      k->after[k->n_after].n = 1;
      k->after[k->n_after].tag = i == 0 ? AFTER_CALL : AFTER_STOP;
      k->n_after++;
    }
  }
  if (st != FG_OK) {
    fg_constrain_free(k);
    return st;
  }
  /* the pool no longer moves: offsets -> pointers */
  for (uint32_t i = 0; i < k->n_funcs; i++) {
    cfunc *cf = &k->funcs[i];
    for (uint32_t j = 0; j < cf->n_entries; j++) fixup(k, &cf->entries[j]);
    for (uint32_t j = 0; j < cf->n_params; j++) {
      fixup(k, &cf->params[j].key_first);
      fixup(k, &cf->params[j].key_next);
      if (cf->params[j].neg_first.n) fixup(k, &cf->params[j].neg_first);
      if (cf->params[j].neg_next.n) fixup(k, &cf->params[j].neg_next);
      for (uint32_t e = 0; e < cf->params[j].n_values; e++) fixup(k, &cf->params[j].values[e]);
    }
  }
  fixup(k, &k->close_first);
  fixup(k, &k->close_next);
  for (uint32_t i = 0; i < k->n_after; i++) fixup(k, &k->after[i]);
  *out = k;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Matcher

typedef enum phase { PH_START, PH_PROSE, PH_LIT, PH_FREE, PH_NUM, PH_DONE } phase;
typedef enum lit_kind { LIT_NAME, LIT_KEY, LIT_VALUE, LIT_AFTER } lit_kind;

/* number syntax states */
enum { NUM_START, NUM_MINUS, NUM_ZERO, NUM_INT, NUM_DOT, NUM_FRAC, NUM_BAD };

struct fg_cmatch {
  const fg_constrain *k;
  uint32_t mode, flags;
  phase ph;
  /* literal phase: the pieces still alive, all sharing their first pos tokens */
  lit_kind lk;
  const cunit **alts; /* (max_alts) */
  uint32_t n_alts, pos;
  /* the call being generated */
  uint32_t fn, param;
  bool first_arg;
  uint8_t *used;      /* (max params) keys given */
  uint32_t used_cap;
  uint32_t free_n;    /* tokens of the current free string */
  uint32_t num_state, num_int, num_frac;
  /* allowed-set output */
  int32_t *list;      /* (list_cap) */
  uint32_t list_cap;
  const cunit **tmp;  /* (max_alts) */
};

fg_status fg_cmatch_create(const fg_constrain *k, uint32_t mode, uint32_t flags, fg_cmatch **out) {
  if (out) *out = NULL;
  if (!k || !out || (mode != FG_NLU_CONSTRAIN_CALL_ONLY && mode != FG_NLU_CONSTRAIN_CALL_OR_TEXT))
    return FG_ERR_INVALID_ARG;
  fg_cmatch *m = fg_calloc(1, sizeof *m);
  if (!m) return FG_ERR_NOMEM;
  m->k = k;
  m->mode = mode;
  m->flags = flags;
  uint32_t max_params = 1;
  for (uint32_t i = 0; i < k->n_funcs; i++)
    if (k->funcs[i].n_params > max_params) max_params = k->funcs[i].n_params;
  m->used_cap = max_params;
  m->list_cap = k->max_alts + k->n_num + 1;
  m->alts = fg_calloc(k->max_alts, sizeof *m->alts);
  m->tmp = fg_calloc(k->max_alts, sizeof *m->tmp);
  m->used = fg_calloc(max_params, 1);
  m->list = fg_calloc(m->list_cap, sizeof *m->list);
  if (!m->alts || !m->tmp || !m->used || !m->list) {
    fg_cmatch_free(m);
    return FG_ERR_NOMEM;
  }
  fg_cmatch_reset(m);
  *out = m;
  return FG_OK;
}

void fg_cmatch_free(fg_cmatch *m) {
  if (!m) return;
  fg_free(m->alts);
  fg_free(m->tmp);
  fg_free(m->used);
  fg_free(m->list);
  fg_free(m);
}

void fg_cmatch_reset(fg_cmatch *m) {
  m->ph = PH_START;
  m->n_alts = m->pos = 0;
  m->fn = m->param = 0;
  m->first_arg = true;
  m->free_n = 0;
}

bool fg_cmatch_done(const fg_cmatch *m) { return m->ph == PH_DONE; }
bool fg_cmatch_in_prose(const fg_cmatch *m) { return m->ph == PH_PROSE; }
bool fg_cmatch_between_calls(const fg_cmatch *m) {
  return m->ph == PH_START || m->ph == PH_PROSE || m->ph == PH_DONE || (m->ph == PH_LIT && m->lk == LIT_AFTER);
}

/* The key pieces offered now (into alts): unused offered keys, and the close when every required
 * key has been given. */
static uint32_t key_alts(const fg_cmatch *m, const cunit **alts) {
  const cfunc *cf = &m->k->funcs[m->fn];
  uint32_t n = 0;
  bool closable = true;
  for (uint32_t j = 0; j < cf->n_params; j++) {
    const cparam *cp = &cf->params[j];
    if (m->used[j]) continue;
    if (cp->decl->required) closable = false;
    if (!cp->offered) continue;
    alts[n++] = m->first_arg ? &cp->key_first : &cp->key_next;
    if (cp->neg_first.n) alts[n++] = m->first_arg ? &cp->neg_first : &cp->neg_next;
  }
  if (closable) alts[n++] = m->first_arg ? &m->k->close_first : &m->k->close_next;
  return n;
}

static void enter_lit(fg_cmatch *m, lit_kind lk, const cunit *units, uint32_t n) {
  m->ph = PH_LIT;
  m->lk = lk;
  m->pos = 0;
  m->n_alts = n;
  for (uint32_t i = 0; i < n; i++) m->alts[i] = &units[i];
}

static void enter_names(fg_cmatch *m) {
  m->ph = PH_LIT;
  m->lk = LIT_NAME;
  m->pos = 0;
  m->n_alts = 0;
  for (uint32_t i = 0; i < m->k->n_funcs; i++)
    for (uint32_t j = 0; j < m->k->funcs[i].n_entries; j++) m->alts[m->n_alts++] = &m->k->funcs[i].entries[j];
}

static void enter_keys(fg_cmatch *m) {
  m->ph = PH_LIT;
  m->lk = LIT_KEY;
  m->pos = 0;
  m->n_alts = key_alts(m, m->alts);
}

/* Number syntax on one more text; returns the new state (NUM_BAD when refused). */
static uint32_t num_step(const fg_cmatch *m, const char *s, uint32_t *n_int, uint32_t *n_frac) {
  const bool real = m->k->funcs[m->fn].params[m->param].decl->type == FG_PARAM_NUMBER;
  uint32_t st = m->num_state, ni = *n_int, nf = *n_frac;
  for (; *s && st != NUM_BAD; s++) {
    const char c = *s;
    const bool dig = c >= '0' && c <= '9';
    switch (st) {
      case NUM_START: st = c == '-' ? NUM_MINUS : c == '0' ? NUM_ZERO : dig ? NUM_INT : NUM_BAD; break;
      case NUM_MINUS: st = c == '0' ? NUM_ZERO : dig ? NUM_INT : NUM_BAD; break;
      case NUM_ZERO: st = (c == '.' && real) ? NUM_DOT : NUM_BAD; break;
      case NUM_INT: st = dig ? NUM_INT : (c == '.' && real) ? NUM_DOT : NUM_BAD; break;
      case NUM_DOT:
      case NUM_FRAC: st = dig ? NUM_FRAC : NUM_BAD; break;
      default: st = NUM_BAD;
    }
    if (dig && (st == NUM_INT || st == NUM_ZERO)) ni++;
    if (dig && st == NUM_FRAC) nf++;
  }
  if (ni > FG_CONSTRAIN_MAX_INT_DIGITS || nf > FG_CONSTRAIN_MAX_FRAC_DIGITS) st = NUM_BAD;
  *n_int = ni;
  *n_frac = nf;
  return st;
}

static bool num_complete(uint32_t st) { return st == NUM_ZERO || st == NUM_INT || st == NUM_FRAC; }

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Sorts and deduplicates list[0..n). */
static uint32_t sort_unique(int32_t *list, uint32_t n) {
  if (n < 2) return n;
  qsort(list, n, sizeof *list, cmp_i32);
  uint32_t w = 1;
  for (uint32_t i = 1; i < n; i++)
    if (list[i] != list[w - 1]) list[w++] = list[i];
  return w;
}

static uint32_t lit_next_ids(const cunit *const *alts, uint32_t n_alts, uint32_t pos, int32_t *list) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < n_alts; i++)
    if (alts[i]->n > pos) list[n++] = alts[i]->ids[pos];
  return n;
}

void fg_cmatch_allowed(fg_cmatch *m, fg_callowed *out) {
  const fg_constrain *k = m->k;
  memset(out, 0, sizeof *out);
  uint32_t n = 0;
  switch (m->ph) {
    case PH_START:
      if (m->mode == FG_NLU_CONSTRAIN_CALL_OR_TEXT) {
        out->mask = k->start_ok;
        out->n = k->n_start_ok;
        return;
      }
      m->list[n++] = k->id_sfc;
      break;
    case PH_PROSE:
      out->mask = k->prose_ok;
      out->n = k->n_prose_ok;
      return;
    case PH_LIT: n = lit_next_ids(m->alts, m->n_alts, m->pos, m->list); break;
    case PH_FREE:
      if (m->free_n < FG_CONSTRAIN_MAX_STRING_TOKENS) {
        out->mask = k->free_ok;
        out->n = k->n_free_ok;
        return;
      }
      m->list[n++] = k->id_esc;
      break;
    case PH_NUM:
      for (uint32_t i = 0; i < k->n_num; i++) {
        uint32_t ni = m->num_int, nf = m->num_frac;
        if (num_step(m, k->num_text[i], &ni, &nf) != NUM_BAD) m->list[n++] = k->num_ids[i];
      }
      if (num_complete(m->num_state)) {
        const uint32_t na = key_alts(m, m->tmp);
        n += lit_next_ids(m->tmp, na, 0, m->list + n);
      }
      break;
    case PH_DONE: break;
  }
  out->ids = m->list;
  out->n = sort_unique(m->list, n);
}

static void enter_value(fg_cmatch *m, uint32_t j) {
  const cparam *cp = &m->k->funcs[m->fn].params[j];
  m->param = j;
  m->used[j] = 1;
  m->first_arg = false;
  switch (cp->decl->type) {
    case FG_PARAM_INTEGER:
    case FG_PARAM_NUMBER:
      m->ph = PH_NUM;
      m->num_state = NUM_START;
      m->num_int = m->num_frac = 0;
      break;
    default:
      if (cp->free_string) {
        m->ph = PH_FREE;
        m->free_n = 0;
      } else {
        enter_lit(m, LIT_VALUE, cp->values, cp->n_values); /* enum, true/false, [] or {} */
      }
      break;
  }
}

/* A key piece (or the close) is complete. */
static void after_key(fg_cmatch *m, uint32_t key) {
  if (key == TAG_CLOSE) {
    if (m->flags & FG_NLU_MULTI_CALL)
      enter_lit(m, LIT_AFTER, m->k->after, m->k->n_after);
    else
      m->ph = PH_DONE;
    return;
  }
  enter_value(m, key & ~TAG_NEG);
  if (key & TAG_NEG) m->num_state = NUM_MINUS;
}

/* A literal piece is complete: move on. */
static void complete(fg_cmatch *m, const cunit *u) {
  switch (m->lk) {
    case LIT_NAME: /* the entry piece includes the first key piece */
      m->fn = u->tag;
      m->first_arg = true;
      memset(m->used, 0, m->used_cap);
      after_key(m, u->tag2);
      break;
    case LIT_KEY: after_key(m, u->tag); break;
    case LIT_VALUE: enter_keys(m); break;
    case LIT_AFTER:
      if (u->tag == AFTER_CALL)
        enter_names(m);
      else
        m->ph = PH_DONE;
      break;
  }
}

static bool is_stop(const fg_constrain *k, int32_t id) {
  return id == k->id_eot || id == k->id_eos || (id >= 0 && (id == k->id_sresp || id == k->id_sot));
}

fg_status fg_cmatch_accept(fg_cmatch *m, int32_t id) {
  const fg_constrain *k = m->k;
  if (id < 0 || (uint32_t)id >= k->n_vocab) return FG_ERR_INVALID_ARG;
  switch (m->ph) {
    case PH_START:
      if (id == k->id_sfc) {
        enter_names(m);
        return FG_OK;
      }
      if (m->mode != FG_NLU_CONSTRAIN_CALL_OR_TEXT || !k->prose_ok[id]) return FG_ERR_INVALID_ARG;
      m->ph = is_stop(k, id) ? PH_DONE : PH_PROSE;
      return FG_OK;
    case PH_PROSE:
      if (!k->prose_ok[id]) return FG_ERR_INVALID_ARG;
      if (is_stop(k, id)) m->ph = PH_DONE;
      return FG_OK;
    case PH_LIT: {
      uint32_t w = 0;
      for (uint32_t i = 0; i < m->n_alts; i++)
        if (m->alts[i]->n > m->pos && m->alts[i]->ids[m->pos] == id) m->tmp[w++] = m->alts[i];
      if (w == 0) return FG_ERR_INVALID_ARG;
      memcpy(m->alts, m->tmp, w * sizeof *m->alts);
      m->n_alts = w;
      m->pos++;
      for (uint32_t i = 0; i < w; i++)
        if (m->alts[i]->n == m->pos) {
          complete(m, m->alts[i]);
          break;
        }
      return FG_OK;
    }
    case PH_FREE:
      if (id == k->id_esc) {
        enter_keys(m);
        return FG_OK;
      }
      if (m->free_n >= FG_CONSTRAIN_MAX_STRING_TOKENS || !k->free_ok[id]) return FG_ERR_INVALID_ARG;
      m->free_n++;
      return FG_OK;
    case PH_NUM: {
      for (uint32_t i = 0; i < k->n_num; i++) {
        if (k->num_ids[i] != id) continue;
        uint32_t ni = m->num_int, nf = m->num_frac;
        const uint32_t st = num_step(m, k->num_text[i], &ni, &nf);
        if (st == NUM_BAD) break;
        m->num_state = st;
        m->num_int = ni;
        m->num_frac = nf;
        return FG_OK;
      }
      if (!num_complete(m->num_state)) return FG_ERR_INVALID_ARG;
      /* the number ends: the token must start the next key piece or the close */
      const uint32_t na = key_alts(m, m->tmp);
      bool ok = false;
      for (uint32_t i = 0; i < na && !ok; i++) ok = m->tmp[i]->ids[0] == id;
      if (!ok) return FG_ERR_INVALID_ARG;
      enter_keys(m);
      return fg_cmatch_accept(m, id);
    }
    case PH_DONE: return FG_ERR_INVALID_ARG;
  }
  return FG_ERR_INVALID_ARG;
}

// ----------------------------------------------------------------------------------------------
// Read access for the draft sources

void fg_cmatch_copy(fg_cmatch *dst, const fg_cmatch *src) {
  FG_ASSERT(dst->k == src->k && dst->used_cap == src->used_cap);
  dst->mode = src->mode;
  dst->flags = src->flags;
  dst->ph = src->ph;
  dst->lk = src->lk;
  memcpy(dst->alts, src->alts, src->n_alts * sizeof *dst->alts);
  dst->n_alts = src->n_alts;
  dst->pos = src->pos;
  dst->fn = src->fn;
  dst->param = src->param;
  dst->first_arg = src->first_arg;
  memcpy(dst->used, src->used, src->used_cap);
  dst->free_n = src->free_n;
  dst->num_state = src->num_state;
  dst->num_int = src->num_int;
  dst->num_frac = src->num_frac;
}

fg_cphase fg_cmatch_phase(const fg_cmatch *m) {
  switch (m->ph) {
    case PH_START: return FG_CPH_START;
    case PH_PROSE: return FG_CPH_PROSE;
    case PH_FREE: return FG_CPH_FREE;
    case PH_NUM: return FG_CPH_NUM;
    case PH_DONE: return FG_CPH_DONE;
    case PH_LIT: break;
  }
  switch (m->lk) {
    case LIT_NAME: return FG_CPH_NAME;
    case LIT_KEY: return FG_CPH_KEY;
    case LIT_VALUE: return FG_CPH_VALUE;
    case LIT_AFTER: break;
  }
  return FG_CPH_AFTER;
}

uint32_t fg_cmatch_n_alive(const fg_cmatch *m) { return m->ph == PH_LIT ? m->n_alts : 0; }

/* a key piece's tag (TAG_CLOSE or param | TAG_NEG) into out */
static void key_info(const fg_cmatch *m, uint32_t fn, uint32_t tag, fg_cpiece *out) {
  out->fn = fn;
  if (tag == TAG_CLOSE) {
    out->key = FG_CPIECE_CLOSE;
    return;
  }
  const uint32_t j = tag & ~TAG_NEG;
  out->key = (int32_t)j;
  out->neg = (tag & TAG_NEG) != 0;
  out->required = m->k->funcs[fn].params[j].decl->required;
}

static void piece_info(const fg_cmatch *m, const cunit *u, uint32_t pos, lit_kind lk, fg_cpiece *out) {
  memset(out, 0, sizeof *out);
  out->rest = u->ids + pos;
  out->n_rest = u->n - pos;
  out->key = -1;
  out->fn = m->fn;
  switch (lk) {
    case LIT_NAME: key_info(m, u->tag, u->tag2, out); break;
    case LIT_KEY: key_info(m, m->fn, u->tag, out); break;
    case LIT_VALUE:
      out->key = (int32_t)m->param;
      out->member = u->tag;
      break;
    case LIT_AFTER: out->call = u->tag == AFTER_CALL; break;
  }
}

void fg_cmatch_piece(const fg_cmatch *m, uint32_t i, fg_cpiece *out) {
  FG_ASSERT(m->ph == PH_LIT && i < m->n_alts);
  piece_info(m, m->alts[i], m->pos, m->lk, out);
}

uint32_t fg_cmatch_key_pieces(const fg_cmatch *m, fg_cpiece *out, uint32_t cap) {
  if (m->ph != PH_FREE && m->ph != PH_NUM) return 0;
  const uint32_t n = key_alts(m, m->tmp);
  for (uint32_t i = 0; i < n && i < cap; i++) piece_info(m, m->tmp[i], 0, LIT_KEY, &out[i]);
  return FG_MIN(n, cap);
}

const fg_function *fg_cmatch_function(const fg_cmatch *m, uint32_t fn) {
  return fn < m->k->n_funcs ? fg_catalog_function(m->k->cat, fn) : NULL;
}

int32_t fg_cmatch_last_key(const fg_cmatch *m) {
  const fg_cphase ph = fg_cmatch_phase(m);
  return ph == FG_CPH_KEY || ph == FG_CPH_FREE || ph == FG_CPH_NUM || ph == FG_CPH_VALUE ? (int32_t)m->param : -1;
}
