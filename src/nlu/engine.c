/* engine.c — the NLU engine: catalog prefix prefilled once (or loaded from a snapshot file), then
 * per utterance: restore the snapshot, prefill the utterance as one chunk, decode greedily until a
 * stop token, parse the call. Sits on top of session/, tokenizer/ and the catalog code. */
#include "nlu/catalog.h"
#include "nlu/constrain.h"
#include "nlu/draft.h"
#include "nlu/spec.h"
#include "session/session_api.h"
#include "tokenizer/tokenizer.h"

#include <string.h>
#include <unistd.h>

struct fg_nlu {
  const fg_model *model;
  const fg_catalog *catalog;
  fg_nlu_params params;
  fg_session *session;
  fg_snapshot *prefix;        /* state after the catalog prefix */
  int32_t *prefix_ids;        /* (n_prefix) with BOS */
  size_t n_prefix;
  fg_nlu_info info;
  char *snap_path;            /* params.snapshot_dir + "/" + info.snapshot_name, or NULL */
  /* per-utterance buffers, reused */
  char *text;                 /* rendered utterance */
  size_t text_cap;
  int32_t *ids;               /* utterance ids */
  size_t ids_cap;
  char *raw;                  /* generated text */
  size_t raw_len, raw_cap;
  char *json;
  size_t json_cap;
  fg_error err;
  /* constrained decoding (params.constrained != FG_NLU_CONSTRAIN_OFF) */
  fg_constrain *cons;         /* compiled catalog */
  fg_cmatch *match;           /* per-utterance automaton state */
  int32_t *pending;           /* (pending_cap) chosen tokens not yet appended to the session */
  size_t pending_cap;
  float *hidden;              /* (n_embd) LM head input after the last appended token */
  float *logits;              /* (n_vocab) full head / sparse head outputs */
  double constrain_ms;        /* fg_constrain_create time */
  /* speculation (docs/SPECULATION.md) */
  bool spec;
  uint32_t max_draft;
  fg_constrain *shadow_k;     /* unconstrained: the catalog automaton that follows a free answer ... */
  fg_cmatch *shadow;          /* ... while it stays a call (a draft source, never a constraint) */
  fg_drafter *drafter;
  int32_t *gen;               /* (gen_cap) tokens of the answer so far */
  size_t gen_cap, n_gen;
  int32_t *draft;             /* (max_draft) drafted tokens of a pass */
  uint8_t *dsrc;              /* (max_draft) their sources */
  uint8_t *dkind;             /* (max_draft + 1) what each row of the pass needs (FG_DRAFT_KIND_*) */
  float *hrows;               /* (max_draft + 1, n_embd) hidden rows of a pass: after the pending tokens, after
                                 each drafted token */
  float *hfull;               /* (max_draft + 1, n_embd) the rows that need the full head, gathered */
  float *lrows;               /* (max_draft + 1, n_vocab) their full-head logits */
  int32_t *full_at;           /* (max_draft + 1) row -> its row in lrows, or -1 */
  fg_nlu_teacher teacher;     /* simulation: chooses instead of the head (spec.h) */
  void *teacher_ud;
};

void fg_nlu_params_init(fg_nlu_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  fg_session_params_init(&p->session);
  p->speculate = FG_NLU_SPECULATE_DEFAULT;
  p->max_draft = FG_NLU_DEFAULT_DRAFT;
}

static fg_status grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return FG_OK;
  size_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  void *nb = fg_realloc(*buf, n * elem);
  if (!nb) return FG_ERR_NOMEM;
  *buf = nb;
  *cap = n;
  return FG_OK;
}

/* Tokenizes text (special tokens parsed) into *ids; bos prepends BOS. */
static fg_status tokenize(fg_nlu *e, const char *text, size_t len, bool bos, int32_t **ids, size_t *cap, size_t *n) {
  const fg_vocab *v = fg_model_vocab(e->model);
  uint32_t flags = bos ? FG_TOKENIZE_ADD_BOS : 0;
  fg_status st = fg_vocab_encode(v, text, len, flags, *ids, *cap, n, &e->err);
  if (st == FG_ERR_BUFFER_TOO_SMALL) {
    if (grow((void **)ids, cap, *n, sizeof(int32_t)) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    st = fg_vocab_encode(v, text, len, flags, *ids, *cap, n, &e->err);
  }
  return st;
}

/* The file holds exactly this prefix, in the KV type the engine's session uses. */
static bool snapshot_matches(const fg_snapshot *snap, const fg_session *s, const int32_t *ids, size_t n) {
  return fg_snapshot_position(snap) == n && fg_snapshot_kv_type(snap) == fg_session_kv_type(s) &&
         memcmp(fg_snapshot_tokens(snap), ids, n * sizeof(int32_t)) == 0;
}

/* The file of this prefix in params.snapshot_dir: "<fingerprint>-<kv type>-<hash of the prefix ids>.fgsnap"
 * (FNV-1a over the ids' little-endian bytes). Same model, adapters, KV type and prefix tokens: same name,
 * on every machine and ISA (the snapshot format is portable). */
static fg_status snapshot_dir_path(fg_nlu *e) {
  const char *dir = e->params.snapshot_dir;
  if (!dir || !dir[0]) return fg_err(&e->err, FG_ERR_INVALID_ARG, "snapshot_dir is empty");
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < e->n_prefix; i++)
    for (int b = 0; b < 4; b++) h = (h ^ (uint8_t)((uint32_t)e->prefix_ids[i] >> (8 * b))) * 0x100000001b3ull;
  char fp[33];
  fg_model_info mi;
  fg_model_get_info(e->model, &mi);
  for (int k = 0; k < 16; k++) snprintf(fp + 2 * k, 3, "%02x", mi.fingerprint[k]);
  const uint32_t kv = e->params.session.kv_type;
  snprintf(e->info.snapshot_name, sizeof e->info.snapshot_name, "%s-%s-%016llx.fgsnap", fp,
           kv == FG_SESSION_KV_F16 ? "f16" : "f32", (unsigned long long)h);
  const size_t n = strlen(dir) + 1 + strlen(e->info.snapshot_name) + 1;
  e->snap_path = fg_malloc(n);
  if (!e->snap_path) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  snprintf(e->snap_path, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->info.snapshot_name);
  e->params.snapshot_path = e->snap_path;
  return FG_OK;
}

static fg_status prefill_prefix(fg_nlu *e) {
  const size_t step = fg_session_n_batch(e->session); /* one internal batch per progress report */
  for (size_t done = 0; done < e->n_prefix;) {
    size_t k = FG_MIN(step, e->n_prefix - done);
    fg_status st = fg_session_prefill(e->session, e->prefix_ids + done, k, NULL);
    if (st != FG_OK) return fg_err(&e->err, st, "catalog prefill: %s", fg_session_errmsg(e->session));
    done += k;
    if (e->params.progress && !e->params.progress(done, e->n_prefix, e->params.progress_user_data))
      return fg_err(&e->err, FG_ERR_ABORTED, "catalog prefill cancelled");
  }
  return FG_OK;
}

void fg_nlu_free(fg_nlu *e) {
  if (!e) return;
  fg_session_free(e->session);
  fg_snapshot_free(e->prefix);
  fg_free(e->prefix_ids);
  fg_free(e->snap_path);
  fg_free(e->text);
  fg_free(e->ids);
  fg_free(e->raw);
  fg_free(e->json);
  fg_cmatch_free(e->match);
  fg_constrain_free(e->cons);
  fg_free(e->pending);
  fg_free(e->hidden);
  fg_free(e->logits);
  fg_drafter_free(e->drafter);
  fg_cmatch_free(e->shadow);
  fg_constrain_free(e->shadow_k);
  fg_free(e->gen);
  fg_free(e->draft);
  fg_free(e->dsrc);
  fg_free(e->dkind);
  fg_free(e->hrows);
  fg_free(e->hfull);
  fg_free(e->lrows);
  fg_free(e->full_at);
  fg_catalog_release(e->catalog);
  fg_model_release(e->model);
  fg_free(e);
}

/* Speculation's state: the drafter (with the constraint's automaton, or without a constraint a shadow
 * automaton that only feeds the drafts) and the buffers of one verification pass. */
static fg_status spec_create(fg_nlu *e, const fg_constrain *shared) {
  const fg_model *m = e->model;
  fg_status st = FG_OK;
  const fg_constrain *k = e->cons;
  if (!k) { /* the grammar as a draft source; a vocabulary it cannot handle leaves the cache alone */
    fg_error ignored;
    if (shared)
      e->shadow_k = fg_constrain_retain(shared);
    else
      st = fg_constrain_create(e->catalog, fg_model_vocab(m), &e->shadow_k, &ignored);
    if (st == FG_OK) st = fg_cmatch_create(e->shadow_k, FG_NLU_CONSTRAIN_CALL_OR_TEXT, e->params.flags, &e->shadow);
    else if (st != FG_ERR_NOMEM) st = FG_OK;
    k = e->shadow_k;
  }
  if (st == FG_OK) st = fg_drafter_create(k, fg_model_vocab(m), !(e->params.flags & FG_NLU_NO_ANSWER_CACHE), &e->drafter);
  if (st != FG_OK) return st;
  const size_t rows = (size_t)e->max_draft + 1, d = fg_model_n_embd(m);
  e->draft = fg_malloc_array(e->max_draft, sizeof *e->draft);
  e->dsrc = fg_malloc_array(e->max_draft, 1);
  e->dkind = fg_malloc_array(rows, 1);
  e->full_at = fg_malloc_array(rows, sizeof *e->full_at);
  e->hrows = fg_malloc_array(rows * d, sizeof(float));
  e->hfull = fg_malloc_array(rows * d, sizeof(float));
  uint64_t nl = 0;
  size_t nls = 0;
  if (fg_mul_u64((uint64_t)rows, fg_model_n_vocab(m), &nl) && fg_u64_to_size(nl, &nls)) e->lrows = fg_malloc_array(nls, sizeof(float));
  if (!e->draft || !e->dsrc || !e->dkind || !e->full_at || !e->hrows || !e->hfull || !e->lrows) return FG_ERR_NOMEM;
  return FG_OK;
}

/* fg_nlu_create, or with `src` (fg_nlu_fork) an engine whose prefix state is a new snapshot over the
 * blocks of src's instead of a prefill or a snapshot file, and whose catalog automaton is src's (the
 * same catalog and vocabulary compile to the same immutable automaton, so it is shared, not rebuilt). */
static fg_status create(const fg_model *m, const fg_catalog *c, const fg_nlu_params *params, const fg_nlu *src,
                        fg_nlu **out, fg_error *err) {
  const fg_snapshot *from = src ? src->prefix : NULL;
  const fg_constrain *shared = src ? (src->cons ? src->cons : src->shadow_k) : NULL;
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!m || !c || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_nlu_create: model, catalog and out are required");
  if (!fg_model_vocab(m)) return fg_err(err, FG_ERR_UNSUPPORTED, "the model has no tokenizer metadata");
  if (params && params->constrained > FG_NLU_CONSTRAIN_OFF)
    return fg_err(err, FG_ERR_INVALID_ARG,
                  "constrained = %u: use FG_NLU_CONSTRAIN_DEFAULT (0), _CALL_ONLY (1), _CALL_OR_TEXT (2) or _OFF (3)",
                  params->constrained);
  if (params && params->speculate > FG_NLU_SPECULATE_ON)
    return fg_err(err, FG_ERR_INVALID_ARG, "speculate = %u: use FG_NLU_SPECULATE_DEFAULT (0), _OFF (1) or _ON (2)",
                  params->speculate);
  if (params && params->max_draft > FG_NLU_MAX_DRAFT)
    return fg_err(err, FG_ERR_INVALID_ARG, "max_draft = %u is out of range (0 = %u, 1..%u)", params->max_draft,
                  FG_NLU_DEFAULT_DRAFT, FG_NLU_MAX_DRAFT);
  fg_nlu *e = fg_calloc(1, sizeof *e);
  if (!e) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  e->model = fg_model_retain(m);     /* both released by fg_nlu_free */
  e->catalog = fg_catalog_retain(c);
  fg_nlu_params_init(&e->params);
  if (params) e->params = *params;
  if (from) { /* the prefix comes from `from`: no file, no prefill, its KV type */
    e->params.snapshot_path = NULL;
    e->params.progress = NULL;
    e->params.session.kv_type = fg_snapshot_kv_type(from);
  }
  if (e->params.max_tokens == 0) e->params.max_tokens = 64;
  /* the library's choices, resolved once: params (and a fork with NULL params) hold the mode in effect */
  if (e->params.constrained == FG_NLU_CONSTRAIN_DEFAULT) e->params.constrained = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
  if (e->params.speculate == FG_NLU_SPECULATE_DEFAULT) e->params.speculate = FG_NLU_SPECULATE_ON;
  e->info.constrained = e->params.constrained;
  e->info.speculate = e->params.speculate;
  e->spec = e->params.speculate != FG_NLU_SPECULATE_OFF;
  e->max_draft = e->params.max_draft ? e->params.max_draft : FG_NLU_DEFAULT_DRAFT;
  double t0 = fg_time_s();

  /* render and tokenize the prefix */
  size_t n = 0, cap = 0;
  fg_status st = fg_catalog_render_prefix(c, NULL, 0, &n);
  if (st == FG_ERR_BUFFER_TOO_SMALL || st == FG_OK) {
    st = grow((void **)&e->text, &e->text_cap, n + 1, 1);
    if (st == FG_OK) st = fg_catalog_render_prefix(c, e->text, e->text_cap, &n);
  }
  if (st == FG_OK) st = tokenize(e, e->text, n, true, &e->prefix_ids, &cap, &e->n_prefix);
  if (st == FG_OK) st = fg_session_create(m, &e->params.session, &e->session, &e->err);
  if (st == FG_OK && e->n_prefix >= fg_session_position(e->session) + fg_session_n_ctx(e->session))
    st = fg_err(&e->err, FG_ERR_CONTEXT_FULL, "the catalog prefix (%zu tokens) does not fit the context (%u)",
                e->n_prefix, fg_session_n_ctx(e->session));
  e->info.prefix_tokens = (uint32_t)e->n_prefix;
  if (st == FG_OK && e->params.constrained != FG_NLU_CONSTRAIN_OFF) {
    double tc = fg_time_s();
    if (shared)
      e->cons = fg_constrain_retain(shared);
    else
      st = fg_constrain_create(c, fg_model_vocab(m), &e->cons, &e->err);
    if (st == FG_OK) st = fg_cmatch_create(e->cons, e->params.constrained, e->params.flags, &e->match);
    if (st == FG_OK) {
      e->hidden = fg_malloc_array(fg_model_n_embd(m), sizeof(float));
      e->logits = fg_malloc_array(fg_model_n_vocab(m), sizeof(float));
      if (!e->hidden || !e->logits) st = FG_ERR_NOMEM;
    }
    if (st != FG_OK && e->err.code != st) fg_err(&e->err, st, "constrained decoding: %s", fg_status_str(st));
    e->constrain_ms = (fg_time_s() - tc) * 1e3;
    fg_log(FG_LOG_DEBUG, "constraint compiled in %.1f ms", e->constrain_ms);
  }

  if (st == FG_OK && e->spec && (st = spec_create(e, shared)) != FG_OK && e->err.code != st)
    fg_err(&e->err, st, "speculation: %s", fg_status_str(st));

  if (st == FG_OK && !from && !e->params.snapshot_path && e->params.snapshot_dir) st = snapshot_dir_path(e);
  /* reuse a snapshot file when it holds exactly this prefix for this model */
  if (st == FG_OK && e->params.snapshot_path) {
    fg_snapshot *snap = NULL;
    fg_error lerr;
    const fg_status ls = fg_snapshot_load(m, e->params.snapshot_path, &snap, &lerr);
    if (ls == FG_OK && snapshot_matches(snap, e->session, e->prefix_ids, e->n_prefix)) {
      e->prefix = snap;
      e->info.prefix_from_file = true;
    } else { /* missing, damaged, other model or stale: prefill and rewrite */
      if (ls != FG_OK && access(e->params.snapshot_path, F_OK) == 0) {
        e->info.snapshot_refused = true;
        fg_log(FG_LOG_WARN, "snapshot %s refused: %s", e->params.snapshot_path, lerr.msg);
      } else if (ls == FG_OK) {
        e->info.snapshot_refused = true;
        fg_log(FG_LOG_WARN, "snapshot %s refused: it holds another prefix or KV type", e->params.snapshot_path);
      }
      fg_snapshot_free(snap);
    }
  }
  if (st == FG_OK && from) {
    if (fg_snapshot_position(from) != e->n_prefix ||
        memcmp(fg_snapshot_tokens(from), e->prefix_ids, e->n_prefix * sizeof(int32_t)) != 0)
      st = fg_err(&e->err, FG_ERR_INTERNAL, "fg_nlu_fork: the source's prefix state is not this catalog's prefix");
    if (st == FG_OK) st = fg_session_restore(e->session, from);
    if (st == FG_OK) st = fg_session_snapshot(e->session, &e->prefix);
  } else if (st == FG_OK && !e->prefix) {
    st = prefill_prefix(e);
    if (st == FG_OK) st = fg_session_snapshot(e->session, &e->prefix);
    if (st == FG_OK && e->params.snapshot_path) {
      fg_error serr;
      if (fg_snapshot_save(e->prefix, e->params.snapshot_path, &serr) == FG_OK)
        e->info.snapshot_written = true;
      else
        fg_log(FG_LOG_WARN, "cannot write the snapshot: %s", serr.msg);
    }
  }
  if (st == FG_OK) st = fg_session_restore(e->session, e->prefix);
  e->info.prefix_ms = (fg_time_s() - t0) * 1e3;
  if (st != FG_OK) {
    /* the message of the step that failed: e->err when it carries this status, else the session's */
    if (e->err.code == st && e->err.msg[0])
      fg_err(err, st, "%s", e->err.msg);
    else if (e->session && fg_session_errmsg(e->session)[0])
      fg_err(err, st, "%s", fg_session_errmsg(e->session));
    else
      fg_err(err, st, "fg_nlu_create: %s", fg_status_str(st));
    fg_nlu_free(e);
    return st;
  }
  *out = e;
  return FG_OK;
}

fg_status fg_nlu_create(const fg_model *m, const fg_catalog *c, const fg_nlu_params *params, fg_nlu **out,
                        fg_error *err) {
  return create(m, c, params, NULL, out, err);
}

fg_status fg_nlu_fork(const fg_nlu *src, const fg_nlu_params *params, fg_nlu **out, fg_error *err) {
  if (out) *out = NULL;
  fg_err_clear(err);
  if (!src || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_nlu_fork: %s is NULL", src ? "out" : "the source engine");
  fg_nlu_params p = src->params;
  if (params) p = *params;
  return create(src->model, src->catalog, &p, src, out, err);
}

static fg_status append_raw(fg_nlu *e, const char *s, size_t n) {
  if (grow((void **)&e->raw, &e->raw_cap, e->raw_len + n + 1, 1) != FG_OK) return FG_ERR_NOMEM;
  memcpy(e->raw + e->raw_len, s, n);
  e->raw_len += n;
  e->raw[e->raw_len] = '\0';
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Decoding: one loop (decode, below) over three token sources: plain greedy (the session's own head),
// constrained (sparse head and jump-forward) and speculation (drafted tokens verified in batches)

/* One answer being decoded: what the loop and its token source share. */
typedef struct decoder {
  fg_nlu_result *out;
  size_t n_ids;           /* utterance ids (e->ids): the first chunk */
  fg_cmatch *cm;          /* the constraint's automaton (cons), or speculation's shadow automaton, or NULL */
  bool cons;              /* cm constrains the answer */
  bool track;             /* without a constraint: the answer still follows cm (grammar drafts) */
  bool keep_gen;          /* the answer's tokens go to e->gen (speculation) */
  bool first;             /* nothing has been appended to the session since the restore */
  bool forced;            /* this step's token is the only one the constraint allows (no head) */
  fg_callowed al;         /* with a constraint: this step's allowed set */
  fg_nlu_stopper stop;    /* without a constraint: the stop rule */
  fg_nlu_stop why;
  uint32_t last_pos;      /* the position whose state chose the last token with a head; UINT32_MAX: none */
  double *t_chunk;        /* set when the first chunk (utterance + pending tokens) is in */
  int32_t next;           /* plain greedy: the session's choice after its last position */
  size_t n_pend;          /* e->pending: chosen tokens not yet appended to the session */
  size_t n_gen;           /* e->gen: the answer's tokens (keep_gen) */
  /* speculation: the verification pass being read */
  size_t row, n_draft, last_row;
  uint32_t base;          /* the position whose state row 0 holds */
  bool ahead;             /* the pass's draft so far agrees with the answer */
} decoder;

/* A token source. pick: the next token from a head (a step the constraint does not force), or *full
 * when the context has no room for the pass it needs; taken: after the loop took tok (end: the answer
 * ends with it), what to append next; finish: after the loop (NULL: nothing). */
typedef struct decode_source {
  fg_status (*pick)(fg_nlu *e, decoder *d, int32_t *tok, bool *full);
  fg_status (*taken)(fg_nlu *e, decoder *d, int32_t tok, bool end);
  fg_status (*finish)(fg_nlu *e, decoder *d);
} decode_source;

static fg_status push_pending(fg_nlu *e, decoder *d, int32_t tok) {
  if (grow((void **)&e->pending, &e->pending_cap, d->n_pend + 1, sizeof(int32_t)) != FG_OK)
    return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  e->pending[d->n_pend++] = tok;
  return FG_OK;
}

/* Plain greedy: the utterance as one chunk, then one step per token; the session's head chooses. */
static fg_status greedy_pick(fg_nlu *e, decoder *d, int32_t *tok, bool *full) {
  fg_status st;
  if (d->first) {
    st = fg_session_prefill(e->session, e->ids, d->n_ids, &d->next);
    if (st != FG_OK) return fg_err(&e->err, st, "utterance of %zu tokens: %s", d->n_ids, fg_session_errmsg(e->session));
    *d->t_chunk = fg_time_s();
    d->first = false;
  } else if ((st = fg_session_step(e->session, d->next, &d->next)) != FG_OK) {
    return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(e->session));
  }
  *tok = d->next;
  d->last_pos = fg_session_position(e->session);
  d->out->full_head_steps++;
  d->out->weight_passes++, d->out->head_passes++; /* the chunk gave the first token, each step one more */
  return FG_OK;
}

static fg_status greedy_taken(fg_nlu *e, decoder *d, int32_t tok, bool end) { return FG_OK; }

// ----------------------------------------------------------------------------------------------
// Constrained decoding (docs/CONSTRAINED.md)

/* Argmax of the LM head over the allowed tokens, ties to the lowest id (as fg_argmax over logits
 * masked to -inf). A list is computed row by row (sparse head); a mask uses the full head. */
static fg_status head_pick(fg_nlu *e, const fg_callowed *al, const float *hidden, const float *full, int32_t *pick,
                           bool *sparse) {
  fg_session *s = e->session;
  float *lg = e->logits; /* (n_vocab) */
  int32_t best = -1;
  float bv = 0.0f;
  fg_status st;
  if (!al->mask) {
    *sparse = true;
    if ((st = fg_session_head_rows(s, al->ids, al->n, hidden, lg)) != FG_OK) return st; /* softcapped */
    for (uint32_t i = 0; i < al->n; i++) {
      const float v = lg[i];
      if (best < 0 || v > bv) best = al->ids[i], bv = v;
    }
  } else {
    *sparse = false;
    const uint32_t nv = fg_model_n_vocab(e->model);
    if (full) lg = (float *)full; /* computed with other rows of a verification pass (only read) */
    else if ((st = fg_session_head_full(s, hidden, 1, lg, false)) != FG_OK) return st;
    const size_t id = fg_session_argmax_allowed(s, lg, al->mask, nv); /* the plain scan's pick, on the threads */
    if (id != SIZE_MAX) best = (int32_t)id;
  }
  if (best < 0) return FG_ERR_INTERNAL;
  *pick = best;
  return FG_OK;
}

/* Chosen tokens wait in e->pending (the utterance ids first) until a head is needed: a forced run is
 * appended together with the next evaluation as one chunk. */
static fg_status constrained_pick(fg_nlu *e, decoder *d, int32_t *tok, bool *full) {
  fg_session *s = e->session;
  if (fg_session_position(s) + d->n_pend > fg_session_n_ctx(s)) {
    *full = true;
    return FG_OK;
  }
  fg_status st = fg_session_append_hidden(s, e->pending, d->n_pend, e->hidden);
  if (st == FG_ERR_CONTEXT_FULL) {
    *full = true;
    return FG_OK;
  }
  if (st != FG_OK) return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(s));
  d->out->weight_passes++;
  if (d->first) *d->t_chunk = fg_time_s();
  d->first = false;
  d->n_pend = 0;
  bool sparse;
  if ((st = head_pick(e, &d->al, e->hidden, NULL, tok, &sparse)) != FG_OK)
    return fg_err(&e->err, st, "LM head: %s", fg_status_str(st));
  if (sparse)
    d->out->sparse_head_steps++;
  else
    d->out->full_head_steps++, d->out->head_passes++;
  return FG_OK;
}

static fg_status constrained_taken(fg_nlu *e, decoder *d, int32_t tok, bool end) {
  return end ? FG_OK : push_pending(e, d, tok);
}

// ----------------------------------------------------------------------------------------------
// Speculation (docs/SPECULATION.md)

fg_session *fg_nlu_session(fg_nlu *e) { return e ? e->session : NULL; }

const int32_t *fg_nlu_answer_ids(const fg_nlu *e, size_t *n) {
  *n = e && e->spec ? e->n_gen : 0;
  return e ? e->gen : NULL;
}

void fg_nlu_set_teacher(fg_nlu *e, fg_nlu_teacher fn, void *user_data) {
  if (!e) return;
  e->teacher = fn;
  e->teacher_ud = user_data;
}

void fg_nlu_set_draft_hook(fg_nlu *e, fg_draft_hook fn, void *user_data) {
  if (e && e->drafter) fg_drafter_set_hook(e->drafter, fn, user_data);
}

/* One verification pass: the pending tokens, then the draft, in one forward; hidden rows after the
 * pending tokens and after each drafted token; the full LM head over the rows that need it (one read
 * of the head for all of them). Row r's hidden state is the model's state after base + r positions. */
static fg_status spec_pass(fg_nlu *e, bool cons, size_t n_pend, size_t n_draft, fg_nlu_result *out) {
  fg_session *s = e->session;
  const size_t d = fg_model_n_embd(e->model);
  if (grow((void **)&e->pending, &e->pending_cap, n_pend + n_draft, sizeof(int32_t)) != FG_OK) return FG_ERR_NOMEM;
  memcpy(e->pending + n_pend, e->draft, n_draft * sizeof(int32_t));
  fg_status st = fg_session_append_rows(s, e->pending, n_pend + n_draft, n_draft + 1, e->hrows);
  if (st != FG_OK) return st;
  out->weight_passes++;
  size_t n_full = 0;
  for (size_t r = 0; r <= n_draft; r++) {
    const bool full = !cons || e->dkind[r] == FG_DRAFT_KIND_MASK;
    e->full_at[r] = full ? (int32_t)n_full : -1;
    if (full && cons) memcpy(e->hfull + n_full * d, e->hrows + r * d, d * sizeof(float));
    n_full += full;
  }
  if (n_full == 0) return FG_OK;
  out->head_passes++;
  if (e->teacher) return FG_OK; /* a simulation: the teacher chooses */
  /* rows of one product (batch invariance); unconstrained, softcapped as the session's logits are */
  return fg_session_head_full(s, cons ? e->hfull : e->hrows, n_full, e->lrows, !cons);
}

/* Debug log of a pass that ends: its draft, how much of it the model took, the model's own token. */
static void spec_trace(fg_nlu *e, size_t n_draft, size_t row, int32_t tok) {
  char txt[512];
  size_t n = 0;
  for (size_t i = 0; i <= n_draft && n + 64 < sizeof txt; i++) {
    if (i == row) n += (size_t)snprintf(txt + n, sizeof txt - n, i < n_draft ? " | " : " |");
    if (i == n_draft) break;
    char piece[48];
    size_t pl = fg_vocab_token_to_text(fg_model_vocab(e->model), e->draft[i], piece, sizeof piece);
    if (pl > sizeof piece) pl = sizeof piece;
    n += (size_t)snprintf(txt + n, sizeof txt - n, "%s[%.*s]", i ? "" : "", (int)pl, piece);
    n += (size_t)snprintf(txt + n, sizeof txt - n, "%c", "fxcC"[e->dsrc[i] % 4]);
  }
  char own[48];
  size_t ol = fg_vocab_token_to_text(fg_model_vocab(e->model), tok, own, sizeof own);
  if (ol > sizeof own) ol = sizeof own;
  fg_log(FG_LOG_DEBUG, "speculation: %zu of %zu drafted tokens taken:%s then [%.*s]", row, n_draft, txt, (int)ol, own);
}

/* Speculation: each token is taken exactly as the plain sources take it (same allowed sets, same head
 * rows, same stop rules); only where its hidden state comes from differs. A token that needs a head
 * reads the row of the current pass when the pass's draft so far agrees with the answer ("ahead"),
 * else a new pass appends the pending tokens with a fresh draft. A disagreement ends the pass: the
 * model's own token is taken and the KV of the rest of the draft is dropped (spec_taken). At the end
 * the session is rewound to where the plain sources leave it: the position whose state chose the last
 * token with a head (spec_finish). */
static fg_status spec_pick(fg_nlu *e, decoder *d, int32_t *tok, bool *full) {
  fg_session *s = e->session;
  fg_nlu_result *out = d->out;
  const size_t dim = fg_model_n_embd(e->model), nv = fg_model_n_vocab(e->model), n_ctx = fg_session_n_ctx(s);
  const bool cons = d->cons;
  fg_status st;
  if (!d->ahead) { /* a new pass */
    const uint32_t pos = fg_session_position(s);
    if (cons && pos + d->n_pend > n_ctx) {
      *full = true;
      return FG_OK;
    }
    const size_t room = pos + d->n_pend < n_ctx ? n_ctx - pos - d->n_pend : 0;
    if ((st = fg_drafter_propose(e->drafter, d->track ? d->cm : NULL, e->gen, d->n_gen, !cons, FG_MIN(room, e->max_draft),
                                 e->draft, e->dsrc, e->dkind, &d->n_draft)) != FG_OK)
      return fg_err(&e->err, st, "draft: %s", fg_status_str(st));
    st = spec_pass(e, cons, d->n_pend, d->n_draft, out);
    if (st == FG_ERR_CONTEXT_FULL && cons) {
      *full = true;
      return FG_OK;
    }
    if (st != FG_OK) {
      if (d->first && !cons)
        return fg_err(&e->err, st, "utterance of %zu tokens: %s", d->n_ids, fg_session_errmsg(s));
      return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(s)[0] ? fg_session_errmsg(s) : fg_status_str(st));
    }
    if (d->first) *d->t_chunk = fg_time_s();
    d->first = false;
    for (size_t i = 0; i < d->n_draft; i++)
      if (!cons || e->dkind[i] != FG_DRAFT_KIND_FORCED) out->drafted[e->dsrc[i]]++;
    d->base = pos + (uint32_t)d->n_pend;
    d->n_pend = 0;
    d->row = 0;
    d->ahead = true;
  }
  /* the model's token after base + row positions */
  const float *h = e->hrows + d->row * dim;
  if (e->teacher) {
    *tok = e->teacher(e->teacher_ud, e->gen, d->n_gen);
    if (*tok < 0 || (uint32_t)*tok >= nv) return fg_err(&e->err, FG_ERR_INVALID_ARG, "the teacher chose no token");
    if (d->al.mask || !cons) out->full_head_steps++;
    else out->sparse_head_steps++;
  } else if (cons) {
    bool sparse;
    if (d->al.mask && e->full_at[d->row] < 0) return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: no head row");
    const float *full_row = d->al.mask ? e->lrows + (size_t)e->full_at[d->row] * nv : NULL;
    if ((st = head_pick(e, &d->al, h, full_row, tok, &sparse)) != FG_OK)
      return fg_err(&e->err, st, "LM head: %s", fg_status_str(st));
    if (sparse)
      out->sparse_head_steps++;
    else
      out->full_head_steps++;
  } else {
    *tok = (int32_t)fg_session_argmax(s, e->lrows + d->row * nv, nv);
    out->full_head_steps++;
  }
  d->last_pos = d->base + (uint32_t)d->row;
  d->last_row = d->row;
  return FG_OK;
}

/* The draft agreed (the token is in the KV already), or the pass ends here. */
static fg_status spec_taken(fg_nlu *e, decoder *d, int32_t tok, bool end) {
  fg_status st;
  const bool decided = !(d->cons && d->forced); /* a head chose it, not the constraint */
  const size_t row = d->row, n_draft = d->n_draft;
  if (d->ahead && fg_log_active() && (end || row >= n_draft || e->draft[row] != tok))
    spec_trace(e, n_draft, row + (row < n_draft && e->draft[row] == tok), tok);
  if (d->ahead && row < n_draft && e->draft[row] == tok) {
    if (decided) {
      d->out->accepted[e->dsrc[row]]++;
      fg_drafter_feedback(e->drafter, e->dsrc[row], true);
    }
    d->row++;
  } else if (d->ahead) {
    if (row < n_draft && decided) fg_drafter_feedback(e->drafter, e->dsrc[row], false);
    d->ahead = false;
    if (!end) { /* drop the draft's KV from this row on; the sliding window only up to the last head row */
      if ((st = fg_session_rewind(e->session, d->base + (uint32_t)row, d->last_pos)) != FG_OK)
        return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: %s", fg_session_errmsg(e->session));
      e->pending[0] = tok;
      d->n_pend = 1;
    }
  } else if (!end) {
    return push_pending(e, d, tok);
  }
  return FG_OK;
}

static fg_status spec_finish(fg_nlu *e, decoder *d) {
  fg_session *s = e->session;
  fg_status st;
  if (d->last_pos != UINT32_MAX) {
    if ((st = fg_session_rewind(s, d->last_pos, d->last_pos)) != FG_OK)
      return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: %s", fg_session_errmsg(s));
    if (!d->cons && !e->teacher &&
        (st = fg_session_set_logits(s, e->lrows + d->last_row * fg_model_n_vocab(e->model))) != FG_OK)
      return fg_err(&e->err, st, "out of memory");
  }
  fg_drafter_end(e->drafter, e->gen, d->n_gen);
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// The decode loop: the constraint's checks and forced tokens, a token from the source, then the same
// bookkeeping and stop checks for every source

/* Whether the answer ends with tok (whose text is piece), and why (d->why). With a constraint: when the
 * automaton is done; without: the stop rule (stop tokens, max_tokens), <eos>, or no room for tok. */
static bool stop_check(fg_nlu *e, decoder *d, int32_t tok, const char *piece, size_t pl) {
  const fg_vocab *v = fg_model_vocab(e->model);
  if (d->cons) {
    if (!fg_cmatch_done(d->cm)) return false;
    fg_nlu_stop r = fg_nlu_stop_piece(piece, pl);
    if (tok == fg_vocab_eos(v)) r = FG_NLU_STOP_EOS;
    d->why = r != FG_NLU_CONTINUE ? r : FG_NLU_STOP_START_OF_TURN; /* the stop token the rule does not name */
    return true;
  }
  fg_nlu_stop r = fg_nlu_stopper_feed(&d->stop, piece, pl);
  if (tok == fg_vocab_eos(v) && r == FG_NLU_CONTINUE) r = FG_NLU_STOP_EOS;
  if (r != FG_NLU_CONTINUE) {
    d->why = r;
    return true;
  }
  if (d->last_pos >= fg_session_n_ctx(e->session)) {
    d->why = FG_NLU_STOP_CONTEXT_FULL;
    return true;
  }
  return false;
}

/* Takes tok into the answer: the automaton, the answer's ids, the raw text, the count; *end from the
 * stop checks. */
static fg_status take(fg_nlu *e, decoder *d, int32_t tok, bool *end) {
  if (d->cons) {
    if (fg_cmatch_accept(d->cm, tok) != FG_OK) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint refused its own pick");
  } else if (d->track && fg_cmatch_accept(d->cm, tok) != FG_OK) {
    d->track = false; /* the free answer left the call grammar: no more grammar drafts */
  }
  if (d->keep_gen) {
    if (grow((void **)&e->gen, &e->gen_cap, d->n_gen + 1, sizeof(int32_t)) != FG_OK)
      return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    e->gen[d->n_gen++] = tok;
    e->n_gen = d->n_gen;
  }
  char piece[1024];
  size_t pl = fg_vocab_token_to_text(fg_model_vocab(e->model), tok, piece, sizeof piece);
  if (pl > sizeof piece) pl = sizeof piece;
  if (append_raw(e, piece, pl) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  d->out->decode_tokens++;
  *end = stop_check(e, d, tok, piece, pl);
  return FG_OK;
}

static fg_status decode(fg_nlu *e, const decode_source *src, decoder *d) {
  fg_nlu_result *out = d->out;
  fg_status st;
  d->why = FG_NLU_STOP_MAX_TOKENS;
  for (;;) {
    int32_t tok = -1;
    d->forced = false;
    d->al = (fg_callowed){0};
    if (d->cons) { /* max_tokens only between calls; a token the constraint forces needs no head */
      if (fg_cmatch_done(d->cm)) break;
      if (out->decode_tokens >= e->params.max_tokens && fg_cmatch_between_calls(d->cm)) break;
      fg_cmatch_allowed(d->cm, &d->al);
      if (d->al.n == 0) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint allows no token");
      if (d->al.n == 1 && !d->al.mask) {
        tok = d->al.ids[0];
        d->forced = true;
        out->forced_tokens++;
      }
    }
    if (!d->forced) {
      bool full = false;
      if ((st = src->pick(e, d, &tok, &full)) != FG_OK) return st;
      if (full) {
        d->why = FG_NLU_STOP_CONTEXT_FULL;
        break;
      }
    }
    bool end = false;
    if ((st = take(e, d, tok, &end)) != FG_OK || (st = src->taken(e, d, tok, end)) != FG_OK) return st;
    if (end) break;
  }
  if (d->first) *d->t_chunk = fg_time_s(); /* every token was forced: nothing was appended */
  return src->finish ? src->finish(e, d) : FG_OK;
}

/* Decodes the answer to the utterance ids in e->ids (n_ids) with the engine's source; *t_chunk: when
 * the first chunk was in. */
static fg_status decode_answer(fg_nlu *e, size_t n_ids, fg_nlu_result *out, fg_nlu_stop *why, double *t_chunk) {
  static const decode_source greedy = {greedy_pick, greedy_taken, NULL};
  static const decode_source constrained = {constrained_pick, constrained_taken, NULL};
  static const decode_source spec = {spec_pick, spec_taken, spec_finish};
  decoder d = {.out = out, .n_ids = n_ids, .first = true, .last_pos = UINT32_MAX, .t_chunk = t_chunk};
  d.cons = e->match != NULL;
  d.cm = d.cons ? e->match : e->spec ? e->shadow : NULL;
  d.track = d.cm != NULL;
  d.keep_gen = e->spec;
  fg_nlu_stopper_init(&d.stop, e->params.max_tokens, 0, e->params.flags);
  const decode_source *src = e->spec ? &spec : d.cons ? &constrained : &greedy;
  if (src != &greedy) { /* the utterance is the first pending chunk */
    if (d.cm) fg_cmatch_reset(d.cm);
    if (grow((void **)&e->pending, &e->pending_cap, n_ids + (e->spec ? 1 : 64), sizeof(int32_t)) != FG_OK)
      return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    memcpy(e->pending, e->ids, n_ids * sizeof(int32_t));
    d.n_pend = n_ids;
  }
  if (e->spec) e->n_gen = 0;
  fg_status st = decode(e, src, &d);
  *why = d.why;
  return st;
}

// ----------------------------------------------------------------------------------------------
// Answering

fg_status fg_nlu_ask(fg_nlu *e, const char *utt, size_t len, fg_nlu_result *out) {
  if (!e) return FG_ERR_INVALID_ARG;
  fg_err_clear(&e->err);
  if (!out || (!utt && len)) return fg_err(&e->err, FG_ERR_INVALID_ARG, "NULL argument");
  memset(out, 0, sizeof *out);

  /* render + tokenize the utterance part */
  size_t n = 0;
  fg_status st = fg_render_utterance(utt ? utt : "", len, NULL, 0, &n);
  if (st == FG_ERR_BUFFER_TOO_SMALL || st == FG_OK) {
    if (grow((void **)&e->text, &e->text_cap, n + 1, 1) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    st = fg_render_utterance(utt, len, e->text, e->text_cap, &n);
  }
  if (st != FG_OK) return fg_err(&e->err, st, "utterance refused: empty, or it contains control-token text");
  size_t n_ids = 0;
  if ((st = tokenize(e, e->text, n, false, &e->ids, &e->ids_cap, &n_ids)) != FG_OK) return st;

  double t0 = fg_time_s();
  if ((st = fg_session_restore(e->session, e->prefix)) != FG_OK)
    return fg_err(&e->err, st, "restore: %s", fg_session_errmsg(e->session));
  /* an utterance that does not fit is an error in every mode, never a truncated prompt (the constrained
   * sources would otherwise stop with "context_full" before appending it) */
  if ((uint64_t)fg_session_position(e->session) + n_ids > fg_session_n_ctx(e->session))
    return fg_err(&e->err, FG_ERR_CONTEXT_FULL,
                  "utterance of %zu tokens: the tokens do not fit the context (%u positions, %u taken by the catalog prefix)",
                  n_ids, fg_session_n_ctx(e->session), fg_session_position(e->session));
  double t1 = fg_time_s();
  double t2 = t1, t3;
  fg_nlu_stop why = FG_NLU_STOP_MAX_TOKENS;
  e->raw_len = 0;
  if (append_raw(e, "", 0) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  if (e->spec && ((st = fg_drafter_begin(e->drafter, utt ? utt : "", len)) != FG_OK ||
                  (st = fg_drafter_context(e->drafter, fg_session_tokens(e->session), fg_session_position(e->session),
                                           e->ids, n_ids)) != FG_OK))
    return fg_err(&e->err, st, "out of memory");
  if ((st = decode_answer(e, n_ids, out, &why, &t2)) != FG_OK) return st;
  t3 = fg_time_s();

  /* byte-fallback tokens can leave half a character or a lone byte: the text handed out is UTF-8 */
  if (!fg_utf8_valid(e->raw, e->raw_len, NULL)) {
    const size_t need = fg_utf8_repair(e->raw, e->raw_len, NULL, 0);
    if (grow((void **)&e->text, &e->text_cap, need + 1, 1) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    fg_utf8_repair(e->raw, e->raw_len, e->text, e->text_cap);
    char *t = e->raw;
    const size_t tc = e->raw_cap;
    e->raw = e->text, e->raw_cap = e->text_cap, e->raw_len = need;
    e->text = t, e->text_cap = tc;
  }
  /* parse */
  size_t jn = 0;
  st = fg_call_parse(e->catalog, e->raw, e->raw_len, e->json, e->json_cap, &jn, &e->err);
  if (st == FG_ERR_BUFFER_TOO_SMALL) {
    if (grow((void **)&e->json, &e->json_cap, jn + 1, 1) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    st = fg_call_parse(e->catalog, e->raw, e->raw_len, e->json, e->json_cap, &jn, &e->err);
  }
  if (st != FG_OK) return st;
  out->json = e->json;
  out->raw = e->raw;
  out->stop = why;
  out->chunk_tokens = (uint32_t)n_ids;
  out->restore_ms = (t1 - t0) * 1e3;
  out->chunk_ms = (t2 - t1) * 1e3;
  out->decode_ms = (t3 - t2) * 1e3;
  return FG_OK;
}

const char *fg_nlu_errmsg(const fg_nlu *e) { return e ? e->err.msg : "engine is NULL"; }

fg_status fg_nlu_get_info(const fg_nlu *e, fg_nlu_info *out) {
  if (!e || !out) return FG_ERR_INVALID_ARG;
  *out = e->info;
  return FG_OK;
}

const fg_snapshot *fg_nlu_snapshot(const fg_nlu *e) { return e ? e->prefix : NULL; }
