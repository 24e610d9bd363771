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
    for (uint32_t id = 0; id < nv; id++) {
      if (!al->mask[id]) continue;
      const float v = fg_session_softcap(s, lg[id]);
      if (best < 0 || v > bv) best = (int32_t)id, bv = v;
    }
  }
  if (best < 0) return FG_ERR_INTERNAL;
  *pick = best;
  return FG_OK;
}

/* The utterance ids are in e->ids (n_ids). Chosen tokens wait in e->pending until a head is needed:
 * a forced run is appended together with the next evaluation as one chunk. */
static fg_status decode_constrained(fg_nlu *e, size_t n_ids, fg_nlu_result *out, fg_nlu_stop *why, double *t_chunk) {
  const fg_vocab *v = fg_model_vocab(e->model);
  if (grow((void **)&e->pending, &e->pending_cap, n_ids + 64, sizeof(int32_t)) != FG_OK)
    return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  memcpy(e->pending, e->ids, n_ids * sizeof(int32_t));
  size_t n_pending = n_ids;
  bool first_append = true;
  fg_cmatch_reset(e->match);
  *why = FG_NLU_STOP_MAX_TOKENS;
  fg_status st;
  for (;;) {
    if (fg_cmatch_done(e->match)) break;
    if (out->decode_tokens >= e->params.max_tokens && fg_cmatch_between_calls(e->match)) break;
    fg_callowed al;
    fg_cmatch_allowed(e->match, &al);
    if (al.n == 0) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint allows no token");
    int32_t tok;
    if (al.n == 1 && !al.mask) {
      tok = al.ids[0];
      out->forced_tokens++;
    } else {
      if (fg_session_position(e->session) + n_pending > fg_session_n_ctx(e->session)) {
        *why = FG_NLU_STOP_CONTEXT_FULL;
        break;
      }
      st = fg_session_append_hidden(e->session, e->pending, n_pending, e->hidden);
      if (st == FG_ERR_CONTEXT_FULL) {
        *why = FG_NLU_STOP_CONTEXT_FULL;
        break;
      }
      if (st != FG_OK) return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(e->session));
      out->weight_passes++;
      if (first_append) *t_chunk = fg_time_s();
      first_append = false;
      n_pending = 0;
      bool sparse;
      if ((st = head_pick(e, &al, e->hidden, NULL, &tok, &sparse)) != FG_OK)
        return fg_err(&e->err, st, "LM head: %s", fg_status_str(st));
      if (sparse)
        out->sparse_head_steps++;
      else
        out->full_head_steps++, out->head_passes++;
    }
    if (fg_cmatch_accept(e->match, tok) != FG_OK) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint refused its own pick");
    char piece[1024];
    size_t pl = fg_vocab_token_to_text(v, tok, piece, sizeof piece);
    if (pl > sizeof piece) pl = sizeof piece;
    if (append_raw(e, piece, pl) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    out->decode_tokens++;
    if (fg_cmatch_done(e->match)) {
      fg_nlu_stop r = fg_nlu_stop_piece(piece, pl);
      if (tok == fg_vocab_eos(v)) r = FG_NLU_STOP_EOS;
      *why = r != FG_NLU_CONTINUE ? r : FG_NLU_STOP_START_OF_TURN; /* the stop token the rule does not name */
      break;
    }
    if (grow((void **)&e->pending, &e->pending_cap, n_pending + 1, sizeof(int32_t)) != FG_OK)
      return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    e->pending[n_pending++] = tok;
  }
  if (first_append) *t_chunk = fg_time_s(); /* every token was forced: nothing was appended */
  return FG_OK;
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

/* Greedy decoding with drafted tokens verified in batches. Each token is taken exactly as the plain
 * loops take it (decode_constrained, or the unconstrained loop of fg_nlu_ask): same allowed sets, same
 * head rows, same stop rules; only where its hidden state comes from differs. A token that needs a head
 * reads the row of the current pass when the pass's draft so far agrees with the answer ("ahead"),
 * else a new pass appends the pending tokens with a fresh draft. A disagreement ends the pass: the
 * model's own token is taken and the KV of the rest of the draft is dropped. At the end the session is
 * rewound to where the plain loop leaves it: the position whose state chose the last token with a head. */
static fg_status decode_spec(fg_nlu *e, size_t n_ids, fg_nlu_result *out, fg_nlu_stop *why, double *t_chunk) {
  fg_session *s = e->session;
  const fg_vocab *v = fg_model_vocab(e->model);
  const size_t d = fg_model_n_embd(e->model), nv = fg_model_n_vocab(e->model), n_ctx = fg_session_n_ctx(s);
  const bool cons = e->match != NULL;
  fg_cmatch *cm = cons ? e->match : e->shadow;
  bool track = cm != NULL; /* without a constraint: the answer is still a call in the making */
  if (cm) fg_cmatch_reset(cm);
  fg_nlu_stopper stop;
  fg_nlu_stopper_init(&stop, e->params.max_tokens, 0, e->params.flags);
  if (grow((void **)&e->pending, &e->pending_cap, n_ids + 1, sizeof(int32_t)) != FG_OK)
    return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  memcpy(e->pending, e->ids, n_ids * sizeof(int32_t));
  size_t n_pend = n_ids, n_gen = 0, row = 0, n_draft = 0, last_row = 0;
  e->n_gen = 0;
  bool ahead = false, first = true;
  uint32_t base = 0, last_pos = UINT32_MAX;
  fg_status st;
  *why = FG_NLU_STOP_MAX_TOKENS;
  for (;;) {
    int32_t tok = -1;
    bool forced = false;
    fg_callowed al = {0};
    if (cons) {
      if (fg_cmatch_done(cm)) break;
      if (out->decode_tokens >= e->params.max_tokens && fg_cmatch_between_calls(cm)) break;
      fg_cmatch_allowed(cm, &al);
      if (al.n == 0) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint allows no token");
      if (al.n == 1 && !al.mask) {
        tok = al.ids[0];
        forced = true;
        out->forced_tokens++;
      }
    }
    if (!forced) {
      if (!ahead) { /* a new pass */
        const uint32_t pos = fg_session_position(s);
        if (cons && pos + n_pend > n_ctx) {
          *why = FG_NLU_STOP_CONTEXT_FULL;
          break;
        }
        const size_t room = pos + n_pend < n_ctx ? n_ctx - pos - n_pend : 0;
        if ((st = fg_drafter_propose(e->drafter, track ? cm : NULL, e->gen, n_gen, !cons, FG_MIN(room, e->max_draft),
                                     e->draft, e->dsrc, e->dkind, &n_draft)) != FG_OK)
          return fg_err(&e->err, st, "draft: %s", fg_status_str(st));
        st = spec_pass(e, cons, n_pend, n_draft, out);
        if (st == FG_ERR_CONTEXT_FULL && cons) {
          *why = FG_NLU_STOP_CONTEXT_FULL;
          break;
        }
        if (st != FG_OK) {
          if (first && !cons)
            return fg_err(&e->err, st, "utterance of %zu tokens: %s", n_ids, fg_session_errmsg(s));
          return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(s)[0] ? fg_session_errmsg(s) : fg_status_str(st));
        }
        if (first) *t_chunk = fg_time_s();
        first = false;
        for (size_t i = 0; i < n_draft; i++)
          if (!cons || e->dkind[i] != FG_DRAFT_KIND_FORCED) out->drafted[e->dsrc[i]]++;
        base = pos + (uint32_t)n_pend;
        n_pend = 0;
        row = 0;
        ahead = true;
      }
      /* the model's token after base + row positions */
      const float *h = e->hrows + row * d;
      if (e->teacher) {
        tok = e->teacher(e->teacher_ud, e->gen, n_gen);
        if (tok < 0 || (uint32_t)tok >= nv) return fg_err(&e->err, FG_ERR_INVALID_ARG, "the teacher chose no token");
        if (al.mask || !cons) out->full_head_steps++;
        else out->sparse_head_steps++;
      } else if (cons) {
        bool sparse;
        if (al.mask && e->full_at[row] < 0) return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: no head row");
        const float *full = al.mask ? e->lrows + (size_t)e->full_at[row] * nv : NULL;
        if ((st = head_pick(e, &al, h, full, &tok, &sparse)) != FG_OK)
          return fg_err(&e->err, st, "LM head: %s", fg_status_str(st));
        if (sparse)
          out->sparse_head_steps++;
        else
          out->full_head_steps++;
      } else {
        tok = (int32_t)fg_session_argmax(s, e->lrows + row * nv, nv);
        out->full_head_steps++;
      }
      last_pos = base + (uint32_t)row;
      last_row = row;
    }
    /* take the token */
    if (cons) {
      if (fg_cmatch_accept(cm, tok) != FG_OK) return fg_err(&e->err, FG_ERR_INTERNAL, "the constraint refused its own pick");
    } else if (track && fg_cmatch_accept(cm, tok) != FG_OK) {
      track = false; /* the free answer left the call grammar: no more grammar drafts */
    }
    if (grow((void **)&e->gen, &e->gen_cap, n_gen + 1, sizeof(int32_t)) != FG_OK)
      return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    e->gen[n_gen++] = tok;
    e->n_gen = n_gen;
    char piece[1024];
    size_t pl = fg_vocab_token_to_text(v, tok, piece, sizeof piece);
    if (pl > sizeof piece) pl = sizeof piece;
    if (append_raw(e, piece, pl) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    out->decode_tokens++;
    bool end = false;
    if (cons) {
      if (fg_cmatch_done(cm)) {
        fg_nlu_stop r = fg_nlu_stop_piece(piece, pl);
        if (tok == fg_vocab_eos(v)) r = FG_NLU_STOP_EOS;
        *why = r != FG_NLU_CONTINUE ? r : FG_NLU_STOP_START_OF_TURN;
        end = true;
      }
    } else {
      fg_nlu_stop r = fg_nlu_stopper_feed(&stop, piece, pl);
      if (tok == fg_vocab_eos(v) && r == FG_NLU_CONTINUE) r = FG_NLU_STOP_EOS;
      if (r != FG_NLU_CONTINUE) {
        *why = r;
        end = true;
      } else if (last_pos >= n_ctx) {
        *why = FG_NLU_STOP_CONTEXT_FULL;
        end = true;
      }
    }
    /* the draft agreed (the token is in the KV already), or the pass ends here */
    const bool decided = !(cons && forced); /* a head chose it, not the constraint */
    if (ahead && fg_log_active() && (end || row >= n_draft || e->draft[row] != tok))
      spec_trace(e, n_draft, row + (row < n_draft && e->draft[row] == tok), tok);
    if (ahead && row < n_draft && e->draft[row] == tok) {
      if (decided) {
        out->accepted[e->dsrc[row]]++;
        fg_drafter_feedback(e->drafter, e->dsrc[row], true);
      }
      row++;
    } else if (ahead) {
      if (row < n_draft && decided) fg_drafter_feedback(e->drafter, e->dsrc[row], false);
      ahead = false;
      if (!end) { /* drop the draft's KV from this row on; the sliding window only up to the last head row */
        if ((st = fg_session_rewind(s, base + (uint32_t)row, last_pos)) != FG_OK)
          return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: %s", fg_session_errmsg(s));
        e->pending[0] = tok;
        n_pend = 1;
      }
    } else if (!end) {
      if (grow((void **)&e->pending, &e->pending_cap, n_pend + 1, sizeof(int32_t)) != FG_OK)
        return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
      e->pending[n_pend++] = tok;
    }
    if (end) break;
  }
  if (first) *t_chunk = fg_time_s(); /* every token was forced: nothing was appended */
  if (last_pos != UINT32_MAX) {
    if ((st = fg_session_rewind(s, last_pos, last_pos)) != FG_OK)
      return fg_err(&e->err, FG_ERR_INTERNAL, "speculation: %s", fg_session_errmsg(s));
    if (!cons && !e->teacher && (st = fg_session_set_logits(s, e->lrows + last_row * nv)) != FG_OK)
      return fg_err(&e->err, st, "out of memory");
  }
  fg_drafter_end(e->drafter, e->gen, n_gen);
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Answering

fg_status fg_nlu_ask(fg_nlu *e, const char *utt, size_t len, fg_nlu_result *out) {
  if (!e) return FG_ERR_INVALID_ARG;
  fg_err_clear(&e->err);
  if (!out || (!utt && len)) return fg_err(&e->err, FG_ERR_INVALID_ARG, "NULL argument");
  memset(out, 0, sizeof *out);
  const fg_vocab *v = fg_model_vocab(e->model);

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
   * loops would otherwise stop with "context_full" before appending it) */
  if ((uint64_t)fg_session_position(e->session) + n_ids > fg_session_n_ctx(e->session))
    return fg_err(&e->err, FG_ERR_CONTEXT_FULL,
                  "utterance of %zu tokens: the tokens do not fit the context (%u positions, %u taken by the catalog prefix)",
                  n_ids, fg_session_n_ctx(e->session), fg_session_position(e->session));
  double t1 = fg_time_s();
  double t2 = t1, t3;
  fg_nlu_stop why = FG_NLU_STOP_MAX_TOKENS;
  e->raw_len = 0;
  if (append_raw(e, "", 0) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
  if (e->spec) {
    if ((st = fg_drafter_begin(e->drafter, utt ? utt : "", len)) != FG_OK ||
        (st = fg_drafter_context(e->drafter, fg_session_tokens(e->session), fg_session_position(e->session), e->ids, n_ids)) != FG_OK)
      return fg_err(&e->err, st, "out of memory");
    if ((st = decode_spec(e, n_ids, out, &why, &t2)) != FG_OK) return st;
    t3 = fg_time_s();
    goto parse;
  }
  if (e->match) {
    if ((st = decode_constrained(e, n_ids, out, &why, &t2)) != FG_OK) return st;
    t3 = fg_time_s();
    goto parse;
  }
  int32_t next = -1;
  st = fg_session_prefill(e->session, e->ids, n_ids, &next);
  if (st != FG_OK) return fg_err(&e->err, st, "utterance of %zu tokens: %s", n_ids, fg_session_errmsg(e->session));
  t2 = fg_time_s();

  /* decode until a stop */
  fg_nlu_stopper stop;
  fg_nlu_stopper_init(&stop, e->params.max_tokens, 0, e->params.flags);
  uint32_t decoded = 0;
  for (;;) {
    char piece[1024];
    size_t pl = fg_vocab_token_to_text(v, next, piece, sizeof piece);
    if (pl > sizeof piece) pl = sizeof piece;
    decoded++;
    if (append_raw(e, piece, pl) != FG_OK) return fg_err(&e->err, FG_ERR_NOMEM, "out of memory");
    fg_nlu_stop r = fg_nlu_stopper_feed(&stop, piece, pl);
    if (next == fg_vocab_eos(v) && r == FG_NLU_CONTINUE) r = FG_NLU_STOP_EOS;
    if (r != FG_NLU_CONTINUE) {
      why = r;
      break;
    }
    if (fg_session_position(e->session) >= fg_session_n_ctx(e->session)) {
      why = FG_NLU_STOP_CONTEXT_FULL;
      break;
    }
    if ((st = fg_session_step(e->session, next, &next)) != FG_OK)
      return fg_err(&e->err, st, "decode: %s", fg_session_errmsg(e->session));
  }
  t3 = fg_time_s();
  out->decode_tokens = decoded;
  out->full_head_steps = decoded;
  out->weight_passes = out->head_passes = decoded; /* the chunk gave the first token, each step one more */

parse:;
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
