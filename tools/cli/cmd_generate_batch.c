/* cmd_generate_batch.c — `fgemma generate --batch FILE`: greedy continuations (and logits at chosen
 * positions) of many prompts in one process, for the oracles (tests/oracle/real_parity.mjs).
 *
 * FILE holds one prompt per line: token ids, optionally followed by '|' and positions p, 0-based
 * indices into the prompt followed by its greedy continuation: the logits after feeding ids[0..p]
 * (p < n_prompt) or, for p = n_prompt - 1 + k (1 <= k < N), after feeding the k-th generated id, the
 * distribution that picks the (k+1)-th. Positions must increase. Blank lines are skipped.
 * Output: one line of N greedy ids per prompt on stdout; with --logits-out, every requested row
 * (n_vocab raw little-endian f32) in the order of the file.
 *
 * A prompt that shares a prefix with the next one is prefilled up to that point, snapshotted, and the
 * next prompt restores the snapshot and prefills only the rest (FunctionGemma prompts share the
 * catalog); prefill is chunking-invariant (bit-identical logits, tests/real/real_session.c), so the
 * results equal one prefill per prompt. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct batch_prompt {
  int32_t *ids; /* (n) */
  size_t n;
  int32_t *at;  /* (n_at) increasing positions, see above */
  size_t n_at;
  unsigned long line;
} batch_prompt;

static void free_prompts(batch_prompt *p, size_t n) {
  for (size_t i = 0; i < n; i++) free(p[i].ids), free(p[i].at);
  free(p);
}

/* Parses the whole file; NULL after printing an error. */
static batch_prompt *read_prompts(const char *path, uint32_t n_gen, size_t *count) {
  char *text = cli_read_file(path, NULL);
  if (!text) return NULL;
  batch_prompt *out = NULL;
  size_t n = 0, cap = 0;
  bool ok = true;
  unsigned long line = 0;
  for (char *p = text, *next; ok && p && *p; p = next) {
    line++;
    next = strchr(p, '\n');
    if (next) *next++ = '\0';
    char *bar = strchr(p, '|');
    if (bar) *bar = '\0';
    if (strspn(p, " \t\r,") == strlen(p) && !bar) continue; /* blank */
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      batch_prompt *np = realloc(out, cap * sizeof *np);
      if (!np) {
        cli_error("out of memory");
        ok = false;
        break;
      }
      out = np;
    }
    batch_prompt *b = &out[n];
    memset(b, 0, sizeof *b);
    b->line = line;
    char what[64];
    snprintf(what, sizeof what, "%s:%lu", path, line);
    if (!cli_ids(what, p, &b->ids, &b->n)) {
      ok = false;
      break;
    }
    n++;
    if (bar && strspn(bar + 1, " \t\r,") != strlen(bar + 1)) {
      if (!cli_ids(what, bar + 1, &b->at, &b->n_at)) {
        ok = false;
        break;
      }
      const size_t limit = b->n + (n_gen ? n_gen - 1 : 0); /* positions 0 .. limit - 1 */
      for (size_t i = 0; i < b->n_at && ok; i++) {
        if (b->at[i] < 0 || (size_t)b->at[i] >= limit || (i && b->at[i] <= b->at[i - 1])) {
          cli_error("%s: positions must increase and lie within 0..%zu (prompt of %zu ids + %u generated)", what,
                    limit - 1, b->n, n_gen);
          ok = false;
        }
      }
    }
  }
  free(text);
  if (ok && n == 0) {
    cli_error("generate --batch: %s holds no prompt", path);
    ok = false;
  }
  if (!ok) {
    free_prompts(out, n);
    return NULL;
  }
  *count = n;
  return out;
}

/* Length of the common prefix of a and b. */
static size_t common_prefix(const batch_prompt *a, const batch_prompt *b) {
  size_t k = 0;
  while (k < a->n && k < b->n && a->ids[k] == b->ids[k]) k++;
  return k;
}

static bool write_row(FILE *f, const fg_session *s, uint32_t n_vocab) {
  const float *l = fg_session_logits(s);
  return l && fwrite(l, sizeof(float), n_vocab, f) == n_vocab;
}

int cli_generate_batch(const fg_model *m, const fg_session_params *sp, const char *path, uint32_t n_gen,
                       const char *logits_path) {
  size_t n_prompts = 0;
  batch_prompt *pr = read_prompts(path, n_gen, &n_prompts);
  if (!pr) return 2;
  fg_model_info info;
  fg_model_get_info(m, &info);
  FILE *lf = NULL;
  if (logits_path && !(lf = fopen(logits_path, "wb"))) {
    free_prompts(pr, n_prompts);
    return cli_error("cannot write %s", logits_path);
  }
  int32_t *out = malloc(((size_t)n_gen + 1) * sizeof *out);
  fg_session *s = NULL;
  fg_snapshot *snap = NULL; /* state after snap_len ids of the previous prompt, shared with this one */
  size_t snap_len = 0;
  int rc = out ? 0 : cli_error("out of memory");
  for (size_t i = 0; !rc && i < n_prompts; i++) {
    const batch_prompt *b = &pr[i];
    fg_status st = FG_OK;
    size_t pos = 0;
    if (snap && snap_len <= b->n && snap_len <= common_prefix(&pr[i - 1], b)) {
      st = fg_session_restore(s, snap);
      pos = snap_len;
    } else {
      fg_session_free(s);
      s = NULL;
      st = fg_session_create(m, sp, &s, NULL);
    }
    if (st != FG_OK) {
      rc = cli_status_error(st, "generate --batch: session", s ? fg_session_errmsg(s) : "");
      break;
    }
    /* where to snapshot for the next prompt: the shared prefix, but not past the next prompt's first
     * requested position (its logits must come from a prefill that ends there) */
    size_t share = 0;
    if (i + 1 < n_prompts) {
      share = common_prefix(b, &pr[i + 1]);
      if (pr[i + 1].n_at && (size_t)pr[i + 1].at[0] < share) share = (size_t)pr[i + 1].at[0];
      /* keep at least one id of each prompt to prefill: it gives the next id */
      if (share >= b->n) share = b->n - 1;
      if (share >= pr[i + 1].n) share = pr[i + 1].n - 1;
    }
    fg_snapshot *new_snap = NULL;
    size_t new_len = 0;
    if (share && share == pos && snap) { /* the restored snapshot is the one the next prompt needs */
      new_snap = snap, new_len = snap_len, snap = NULL;
    }
    /* prefill in segments that end at the snapshot point and after each requested prompt position */
    size_t k_at = 0;
    int32_t next = -1;
    while (!rc && pos < b->n) {
      size_t cut = b->n;
      if (share > pos && share < cut && !new_snap) cut = share;
      if (k_at < b->n_at && (size_t)b->at[k_at] + 1 <= pos) { /* inside a restored prefix: never chosen so */
        rc = cli_error("generate --batch: line %lu: position %d lies in the restored prefix", b->line, b->at[k_at]);
        break;
      }
      if (k_at < b->n_at && (size_t)b->at[k_at] + 1 < cut) cut = (size_t)b->at[k_at] + 1;
      st = fg_session_prefill(s, b->ids + pos, cut - pos, &next);
      if (st != FG_OK) {
        rc = cli_status_error(st, "generate --batch: prefill", fg_session_errmsg(s));
        break;
      }
      pos = cut;
      if (k_at < b->n_at && (size_t)b->at[k_at] + 1 == pos) {
        if (lf && !write_row(lf, s, info.n_vocab)) rc = cli_error("cannot write %s", logits_path);
        k_at++;
      }
      if (!rc && pos == share && !new_snap) {
        st = fg_session_snapshot(s, &new_snap);
        if (st != FG_OK) rc = cli_status_error(st, "generate --batch: snapshot", fg_session_errmsg(s));
        new_len = pos;
      }
    }
    for (uint32_t k = 0; !rc && k < n_gen; k++) {
      out[k] = next;
      if (k + 1 == n_gen) break;
      st = fg_session_step(s, next, &next);
      if (st != FG_OK) {
        rc = cli_status_error(st, "generate --batch: step", fg_session_errmsg(s));
        break;
      }
      /* the logits after the (k+1)-th generated id: position n - 1 + (k + 1) */
      if (k_at < b->n_at && (size_t)b->at[k_at] == b->n + k) {
        if (lf && !write_row(lf, s, info.n_vocab)) rc = cli_error("cannot write %s", logits_path);
        k_at++;
      }
    }
    if (!rc) {
      for (uint32_t k = 0; k < n_gen; k++) printf(k ? " %d" : "%d", out[k]);
      printf("\n");
    }
    fg_snapshot_free(snap);
    snap = new_snap;
    snap_len = new_len;
  }
  if (!rc && (fflush(stdout) != 0 || ferror(stdout))) rc = cli_error("generate --batch: cannot write the output");
  if (lf && fclose(lf) != 0 && !rc) rc = cli_error("cannot write %s", logits_path);
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(out);
  free_prompts(pr, n_prompts);
  return rc;
}
