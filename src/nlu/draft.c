/* draft.c — draft sources of speculative decoding (draft.h): the automaton's forced tokens, copies of
 * utterance spans, catalog completions, a small cache of earlier answers and copies from the context,
 * with per-source acceptance estimates that size the drafts. */
#include "nlu/draft.h"

#include <string.h>

#define ACC_DECAY 0.9f /* acceptance estimates: a = decay * a + (1 - decay) * agreed */

typedef struct centry {
  char key[FG_DRAFT_CACHE_KEY];
  uint32_t key_len;
  uint32_t n;                            /* tokens; 0 = empty slot */
  int32_t ids[FG_DRAFT_CACHE_TOKENS];
  uint64_t stamp;                        /* last use */
} centry;

/* What this engine's answers chose (learned at fg_drafter_end), per function of the catalog */
typedef struct fstats {
  uint32_t calls;     /* answers that called it */
  uint32_t n_keys;    /* its parameters */
  uint32_t *next;     /* (n_keys + 1, n_keys + 1): [prev + 1][key + 1], prev -1 = none yet, key -1 = the close */
  uint32_t **values;  /* (n_keys) per key (n_values) counts of the enum member / boolean; NULL for other keys */
  struct vctx *ctx;   /* (n_keys, FG_DRAFT_CTX_N) free strings: the utterance words their values followed */
} fstats;

/* A word of the utterance that came right before a copied value ("^": the value opened the utterance) */
#define FG_DRAFT_CTX_N 8
typedef struct vctx {
  char word[16];
  uint32_t count;
} vctx;

struct fg_drafter {
  const fg_constrain *k;       /* NULL: no automaton */
  const fg_vocab *v;
  int32_t id_esc, id_sfc;      /* -1 when absent */
  fg_cmatch *cm;               /* scratch state the draft advances (NULL without an automaton) */
  fg_cpiece *pieces;           /* (pieces_cap) key pieces after a number */
  uint32_t pieces_cap;
  fstats *fs;                  /* (n_funcs) what the answers chose */
  uint32_t n_funcs;
  /* the utterance */
  char *utt;                   /* (utt_cap) */
  size_t utt_len, utt_cap;
  char key[FG_DRAFT_CACHE_KEY];/* normalized utterance */
  uint32_t key_len;
  bool key_ok;                 /* it fits the cache */
  centry *cache;               /* (FG_DRAFT_CACHE_N) */
  uint64_t clock;
  const centry *hit;           /* the cached answer of this utterance, or NULL */
  int32_t *hist;               /* (hist_cap) the context before the answer: prefix, then utterance */
  size_t hist_n, hist_cap;
  /* adaptation */
  float acc[FG_NLU_DRAFT_SOURCES]; /* estimated chance that a drafted token of the source is right */
  float words;                 /* utterance words a copied string value spans past its first (average) */
  /* scratch */
  char *text;                  /* (text_cap) */
  size_t text_cap;
  int32_t *tok;                /* (tok_cap) tokenizer output */
  size_t tok_cap;
  int32_t *plan;               /* (plan_cap) tokens a source committed to (a copied span, digits) */
  size_t plan_cap, plan_n, plan_at;
  bool planned;                /* the copy source already ran for the current value */
  bool plan_found;             /* ... and found the value in the utterance */
  fg_draft_hook hook;
  void *hook_ud;
};

void fg_drafter_free(fg_drafter *d) {
  if (!d) return;
  for (uint32_t f = 0; d->fs && f < d->n_funcs; f++) {
    for (uint32_t j = 0; d->fs[f].values && j < d->fs[f].n_keys; j++) fg_free(d->fs[f].values[j]);
    fg_free(d->fs[f].values);
    fg_free(d->fs[f].next);
    fg_free(d->fs[f].ctx);
  }
  fg_free(d->fs);
  fg_cmatch_free(d->cm);
  fg_free(d->pieces);
  fg_free(d->utt);
  fg_free(d->hist);
  fg_free(d->cache);
  fg_free(d->text);
  fg_free(d->tok);
  fg_free(d->plan);
  fg_free(d);
}

fg_status fg_drafter_create(const fg_constrain *k, const fg_vocab *v, bool cache, fg_drafter **out) {
  *out = NULL;
  fg_drafter *d = fg_calloc(1, sizeof *d);
  if (!d) return FG_ERR_NOMEM;
  d->k = k;
  d->v = v;
  d->id_esc = fg_vocab_lookup(v, "<escape>", 8);
  d->id_sfc = fg_vocab_lookup(v, "<start_function_call>", 21);
  d->acc[FG_NLU_DRAFT_FORCED] = 0.95f;
  d->acc[FG_NLU_DRAFT_COPY] = 0.8f;
  d->acc[FG_NLU_DRAFT_CATALOG] = 0.6f;
  d->acc[FG_NLU_DRAFT_CACHE] = 0.95f;
  d->acc[FG_NLU_DRAFT_CONTEXT] = 0.7f;
  d->words = 0.0f;
  if (cache) d->cache = fg_calloc(FG_DRAFT_CACHE_N, sizeof *d->cache);
  fg_status st = d->cache || !cache ? FG_OK : FG_ERR_NOMEM;
  if (st == FG_OK && k) st = fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_OR_TEXT, 0, &d->cm);
  if (st == FG_OK && k) { /* the choice statistics */
    while (fg_cmatch_function(d->cm, d->n_funcs)) d->n_funcs++;
    if (!(d->fs = fg_calloc(d->n_funcs ? d->n_funcs : 1, sizeof *d->fs))) st = FG_ERR_NOMEM;
    for (uint32_t f = 0; st == FG_OK && f < d->n_funcs; f++) {
      const fg_param *root = &fg_cmatch_function(d->cm, f)->params;
      fstats *fs = &d->fs[f];
      fs->n_keys = root->n_props;
      fs->next = fg_calloc(((size_t)fs->n_keys + 1) * (fs->n_keys + 1), sizeof *fs->next);
      fs->values = fg_calloc(fs->n_keys ? fs->n_keys : 1, sizeof *fs->values);
      fs->ctx = fg_calloc(((size_t)fs->n_keys ? fs->n_keys : 1) * FG_DRAFT_CTX_N, sizeof *fs->ctx);
      if (!fs->next || !fs->values || !fs->ctx) st = FG_ERR_NOMEM;
      for (uint32_t j = 0; st == FG_OK && j < fs->n_keys; j++) {
        const fg_param *p = &root->props[j];
        const uint32_t nv = p->type == FG_PARAM_BOOLEAN ? 2 : p->type == FG_PARAM_STRING ? p->n_enum : 0;
        if (nv && !(fs->values[j] = fg_calloc(nv, sizeof **fs->values))) st = FG_ERR_NOMEM;
      }
    }
  }
  if (st != FG_OK) {
    fg_drafter_free(d);
    return st;
  }
  *out = d;
  return FG_OK;
}

void fg_drafter_set_hook(fg_drafter *d, fg_draft_hook fn, void *user_data) {
  d->hook = fn;
  d->hook_ud = user_data;
}

static fg_status grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return FG_OK;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *nb = fg_realloc(*buf, n * elem);
  if (!nb) return FG_ERR_NOMEM;
  *buf = nb;
  *cap = n;
  return FG_OK;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

// ----------------------------------------------------------------------------------------------
// Per utterance: text, cache key

fg_status fg_drafter_begin(fg_drafter *d, const char *utt, size_t len) {
  while (len && is_space(*utt)) utt++, len--;
  while (len && is_space(utt[len - 1])) len--;
  if (grow((void **)&d->utt, &d->utt_cap, len + 1, 1) != FG_OK) return FG_ERR_NOMEM;
  if (len) memcpy(d->utt, utt, len);
  d->utt[len] = '\0';
  d->utt_len = len;
  /* key: whitespace runs as one space, ASCII letters lower-cased */
  uint32_t n = 0;
  d->key_ok = true;
  for (size_t i = 0; i < len && d->key_ok; i++) {
    if (is_space(utt[i]) && n && d->key[n - 1] == ' ') continue;
    if (n == FG_DRAFT_CACHE_KEY) d->key_ok = false;
    else d->key[n++] = is_space(utt[i]) ? ' ' : lower(utt[i]);
  }
  d->key_len = n;
  d->hit = NULL;
  for (uint32_t i = 0; d->cache && i < FG_DRAFT_CACHE_N && d->key_ok; i++) {
    centry *c = &d->cache[i];
    if (c->n && c->key_len == n && memcmp(c->key, d->key, n) == 0) {
      c->stamp = ++d->clock;
      d->hit = c;
    }
  }
  return FG_OK;
}

fg_status fg_drafter_context(fg_drafter *d, const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  d->hist_n = 0;
  if (na + nb == 0) return FG_OK;
  if (na > SIZE_MAX / 2 - nb || grow((void **)&d->hist, &d->hist_cap, na + nb, sizeof *d->hist) != FG_OK)
    return FG_ERR_NOMEM;
  if (na) memcpy(d->hist, a, na * sizeof *a);
  if (nb) memcpy(d->hist + na, b, nb * sizeof *b);
  d->hist_n = na + nb;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Reading the answer drafted so far (gen, then the draft's own tokens)

typedef struct seq {
  const int32_t *gen, *draft;
  size_t n_gen, n_draft;
} seq;

static size_t seq_len(const seq *q) { return q->n_gen + q->n_draft; }
static int32_t seq_at(const seq *q, size_t i) { return i < q->n_gen ? q->gen[i] : q->draft[i - q->n_gen]; }

/* Token i of the context followed by the answer so far */
static int32_t hist_at(const fg_drafter *d, const seq *q, size_t i) {
  return i < d->hist_n ? d->hist[i] : seq_at(q, i - d->hist_n);
}

/* The context source: the latest earlier occurrence of the longest suffix of (context, answer so far) of
 * FG_DRAFT_LOOK_MIN..MAX tokens that ends inside the answer (a suffix of the prompt alone is the model's
 * job); returns the index of the token that followed it, or SIZE_MAX. */
static size_t hist_find(const fg_drafter *d, const seq *q) {
  const size_t L = d->hist_n + seq_len(q);
  if (seq_len(q) == 0) return SIZE_MAX;
  for (size_t n = FG_DRAFT_LOOK_MAX; n >= FG_DRAFT_LOOK_MIN; n--) {
    if (L < n + 1) continue;
    for (size_t e = L - 1; e-- > n - 1;) { /* e: the last token of an earlier occurrence */
      size_t k = 0;
      while (k < n && hist_at(d, q, e - k) == hist_at(d, q, L - 1 - k)) k++;
      if (k == n) return e + 1;
    }
  }
  return SIZE_MAX;
}

/* Text of tokens [from, seq_len) into d->text (NUL-terminated); *len its length. */
static fg_status seq_text(fg_drafter *d, const seq *q, size_t from, size_t *len) {
  size_t n = 0;
  for (size_t i = from; i < seq_len(q); i++) {
    char piece[256];
    size_t pl = fg_vocab_token_to_text(d->v, seq_at(q, i), piece, sizeof piece);
    if (pl > sizeof piece) pl = sizeof piece;
    if (grow((void **)&d->text, &d->text_cap, n + pl + 1, 1) != FG_OK) return FG_ERR_NOMEM;
    memcpy(d->text + n, piece, pl);
    n += pl;
  }
  if (grow((void **)&d->text, &d->text_cap, n + 1, 1) != FG_OK) return FG_ERR_NOMEM;
  d->text[n] = '\0';
  *len = n;
  return FG_OK;
}

/* Tokens of text (no special-token parsing) into d->tok. */
static fg_status encode(fg_drafter *d, const char *text, size_t len, size_t *n) {
  fg_status st = fg_vocab_encode(d->v, text, len, FG_TOKENIZE_NO_SPECIAL, d->tok, d->tok_cap, n, NULL);
  if (st == FG_ERR_BUFFER_TOO_SMALL) {
    if (grow((void **)&d->tok, &d->tok_cap, *n, sizeof *d->tok) != FG_OK) return FG_ERR_NOMEM;
    st = fg_vocab_encode(d->v, text, len, FG_TOKENIZE_NO_SPECIAL, d->tok, d->tok_cap, n, NULL);
  }
  return st;
}

static fg_status plan_push(fg_drafter *d, int32_t id) {
  if (grow((void **)&d->plan, &d->plan_cap, d->plan_n + 1, sizeof *d->plan) != FG_OK) return FG_ERR_NOMEM;
  d->plan[d->plan_n++] = id;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// COPY: string values and numbers continue an utterance span

/* Where s (n bytes) occurs in the utterance: exact at a word start, exact anywhere, then the same with
 * ASCII case folded. -1 when nowhere. */
static long find_span(const fg_drafter *d, const char *s, size_t n) {
  if (n == 0 || n > d->utt_len) return -1;
  for (int fold = 0; fold < 2; fold++)
    for (int anywhere = 0; anywhere < 2; anywhere++)
      for (size_t i = 0; i + n <= d->utt_len; i++) {
        if (!anywhere && i > 0 && !is_space(d->utt[i - 1])) continue;
        size_t j = 0;
        if (fold)
          while (j < n && lower(d->utt[i + j]) == lower(s[j])) j++;
        else
          while (j < n && d->utt[i + j] == s[j]) j++;
        if (j == n) return (long)i;
      }
  return -1;
}

static bool is_trailing_punct(char c) { return c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':'; }

/* End of the copy span that starts at p: the rest of the word at p plus about d->words more words
 * (learned per engine), without trailing punctuation; p when there is nothing to copy. */
static size_t span_end(const fg_drafter *d, size_t p) {
  size_t e = p;
  while (e < d->utt_len && !is_space(d->utt[e])) e++;
  const int extra = (int)(d->words + 0.5f);
  for (int w = 0; w < extra; w++) {
    size_t b = e;
    while (b < d->utt_len && is_space(d->utt[b])) b++;
    if (b == d->utt_len) break;
    while (b < d->utt_len && !is_space(d->utt[b])) b++;
    e = b;
  }
  while (e > p && is_trailing_punct(d->utt[e - 1])) e--;
  return e;
}
/* The free string so far is tokens [v0, seq_len) of q. Plan: the rest of its utterance span (to the
 * end of the current word plus the learned number of further words), tokenized together with the
 * value's text so that the split matches the model's own, then <escape>. */
static fg_status plan_string(fg_drafter *d, const seq *q, size_t v0) {
  size_t vlen;
  fg_status st = seq_text(d, q, v0, &vlen);
  if (st != FG_OK || vlen == 0 || d->id_esc < 0) return st;
  const long at = find_span(d, d->text, vlen);
  if (at < 0) return FG_OK;
  const size_t p = (size_t)at + vlen;
  const size_t e = span_end(d, p);
  if (e > p) {
    /* the value's text + the span, tokenized as one string; its first tokens should be the value's */
    const size_t total = vlen + (e - p);
    if (grow((void **)&d->text, &d->text_cap, total + 1, 1) != FG_OK) return FG_ERR_NOMEM;
    memcpy(d->text + vlen, d->utt + p, e - p);
    size_t nt;
    if ((st = encode(d, d->text, total, &nt)) != FG_OK) return st;
    const size_t ng = seq_len(q) - v0;
    bool prefix = nt > ng;
    for (size_t i = 0; i < ng && prefix; i++) prefix = d->tok[i] == seq_at(q, v0 + i);
    size_t from = ng;
    if (!prefix) { /* the model split the value its own way: the span alone */
      if ((st = encode(d, d->utt + p, e - p, &nt)) != FG_OK) return st;
      from = 0;
    }
    for (size_t i = from; i < nt; i++)
      if ((st = plan_push(d, d->tok[i])) != FG_OK) return st;
  }
  return plan_push(d, d->id_esc);
}

/* Number words (German, English) a spoken command uses for what a call writes in digits. */
static const struct { const char *w; int v; } k_numbers[] = {
    {"null", 0}, {"eins", 1}, {"zwei", 2}, {"drei", 3}, {"vier", 4}, {"f\xc3\xbcnf", 5}, {"sechs", 6},
    {"sieben", 7}, {"acht", 8}, {"neun", 9}, {"zehn", 10}, {"elf", 11}, {"zw\xc3\xb6lf", 12}, {"dreizehn", 13},
    {"vierzehn", 14}, {"f\xc3\xbcnfzehn", 15}, {"sechzehn", 16}, {"siebzehn", 17}, {"achtzehn", 18},
    {"neunzehn", 19}, {"zwanzig", 20}, {"drei\xc3\x9fig", 30}, {"vierzig", 40}, {"f\xc3\xbcnfzig", 50},
    {"sechzig", 60}, {"siebzig", 70}, {"achtzig", 80}, {"neunzig", 90}, {"hundert", 100},
    {"zero", 0}, {"one", 1}, {"two", 2}, {"three", 3}, {"four", 4}, {"five", 5}, {"six", 6}, {"seven", 7},
    {"eight", 8}, {"nine", 9}, {"ten", 10}, {"eleven", 11}, {"twelve", 12}, {"thirteen", 13}, {"fourteen", 14},
    {"fifteen", 15}, {"sixteen", 16}, {"seventeen", 17}, {"eighteen", 18}, {"nineteen", 19}, {"twenty", 20},
    {"thirty", 30}, {"forty", 40}, {"fifty", 50}, {"sixty", 60}, {"seventy", 70}, {"eighty", 80}, {"ninety", 90},
    {"hundred", 100}};

/* the value of a lower-cased number word: a table entry, German "<unit>und<tens>" or English
 * "<tens>-<unit>"; -1 when it is none */
static int word_number(const char *w, size_t n) {
  for (size_t i = 0; i < sizeof k_numbers / sizeof k_numbers[0]; i++)
    if (strlen(k_numbers[i].w) == n && memcmp(k_numbers[i].w, w, n) == 0) return k_numbers[i].v;
  for (size_t i = 0; i < n; i++) {
    const bool und = i + 3 <= n && memcmp(w + i, "und", 3) == 0, dash = w[i] == '-';
    if (!und && !dash) continue;
    const size_t skip = und ? 3 : 1;
    const int a = i == 0 ? -1 : word_number(w, i), b = word_number(w + i + skip, n - i - skip);
    if (und && a >= 1 && a <= 9 && b >= 20 && b <= 90 && b % 10 == 0) return a + b;
    if (dash && a >= 20 && a <= 90 && a % 10 == 0 && b >= 1 && b <= 9) return a + b;
  }
  return -1;
}

/* The numbers of the utterance, in order, as decimal text: digit runs and number words. */
static uint32_t utt_numbers(const fg_drafter *d, char (*out)[12], uint32_t cap) {
  uint32_t n = 0;
  for (size_t i = 0; i < d->utt_len && n < cap;) {
    if (is_space(d->utt[i])) {
      i++;
      continue;
    }
    size_t e = i;
    while (e < d->utt_len && !is_space(d->utt[e])) e++;
    size_t we = e;
    while (we > i && is_trailing_punct(d->utt[we - 1])) we--;
    char w[32];
    const size_t wn = FG_MIN(we - i, sizeof w);
    for (size_t k = 0; k < wn; k++) w[k] = lower(d->utt[i + k]);
    const int v = wn < sizeof w ? word_number(w, wn) : -1;
    if (v >= 0) snprintf(out[n++], sizeof out[0], "%d", v);
    for (size_t k = i; k < we && n < cap;) { /* digit runs inside the word ("20:15" has two) */
      if (!is_digit(d->utt[k])) {
        k++;
        continue;
      }
      size_t r = k;
      while (r < we && is_digit(d->utt[r])) r++;
      if (r - k < sizeof out[0]) {
        memcpy(out[n], d->utt + k, r - k);
        out[n++][r - k] = '\0';
      }
      k = r;
    }
    i = e;
  }
  return n;
}

/* The number so far is the text of tokens [v0, seq_len) (digits). Plan: the rest of the first number of
 * the utterance (digits or a number word) that it begins; with no digit yet, the first number.
 * *matched: such a number was found. */
static fg_status plan_number(fg_drafter *d, const seq *q, size_t v0, bool *matched) {
  *matched = false;
  size_t vlen;
  fg_status st = seq_text(d, q, v0, &vlen);
  if (st != FG_OK) return st;
  char nums[16][12];
  const uint32_t nn = utt_numbers(d, nums, 16);
  for (uint32_t i = 0; i < nn; i++) {
    const size_t len = strlen(nums[i]);
    if (vlen > len || memcmp(nums[i], d->text, vlen) != 0) continue;
    *matched = true;
    if (len > vlen) {
      size_t nt;
      if ((st = encode(d, nums[i] + vlen, len - vlen, &nt)) != FG_OK) return st;
      for (size_t t = 0; t < nt; t++)
        if ((st = plan_push(d, d->tok[t])) != FG_OK) return st;
    }
    return FG_OK;
  }
  return FG_OK;
}

/* The word before position i of the utterance, lower-cased ("^" at its start) */
static void word_before(const fg_drafter *d, size_t i, char out[16]) {
  size_t e = i;
  while (e > 0 && is_space(d->utt[e - 1])) e--;
  if (e == 0) {
    memcpy(out, "^", 2);
    return;
  }
  size_t b = e;
  while (b > 0 && !is_space(d->utt[b - 1])) b--;
  while (e > b && is_trailing_punct(d->utt[e - 1])) e--;
  const size_t n = FG_MIN(e - b, (size_t)15);
  for (size_t k = 0; k < n; k++) out[k] = lower(d->utt[b + k]);
  out[n] = '\0';
}

/* A free string value is still empty: bet on the utterance word that follows the word its values
 * followed most often (learned per function and key). Plan: that word (plus the learned number of
 * further words), then <escape>. *prob: the learned share. */
static fg_status plan_value_start(fg_drafter *d, uint32_t fn, int32_t key, float *prob) {
  if (!d->fs || fn >= d->n_funcs || key < 0 || (uint32_t)key >= d->fs[fn].n_keys || d->id_esc < 0) return FG_OK;
  const vctx *ctx = d->fs[fn].ctx + (size_t)key * FG_DRAFT_CTX_N;
  uint32_t total = 0;
  for (int c = 0; c < FG_DRAFT_CTX_N; c++) total += ctx[c].count;
  if (total < 2) return FG_OK;
  size_t best = SIZE_MAX;
  uint32_t best_c = 0;
  for (size_t i = 0; i < d->utt_len; i++) {
    if (is_space(d->utt[i]) || (i > 0 && !is_space(d->utt[i - 1]))) continue; /* word starts */
    char w[16];
    word_before(d, i, w);
    for (int c = 0; c < FG_DRAFT_CTX_N; c++)
      if (ctx[c].count > best_c && strcmp(ctx[c].word, w) == 0) best_c = ctx[c].count, best = i;
  }
  if (best == SIZE_MAX) return FG_OK;
  const size_t e = span_end(d, best);
  if (e == best) return FG_OK;
  size_t nt;
  fg_status st = encode(d, d->utt + best, e - best, &nt);
  for (size_t t = 0; st == FG_OK && t < nt; t++) st = plan_push(d, d->tok[t]);
  if (st == FG_OK) st = plan_push(d, d->id_esc);
  *prob = (float)best_c / (float)total;
  return st;
}

// ----------------------------------------------------------------------------------------------
// CATALOG: which literal piece to bet on

/* Index of the preferred piece among n: a required key first, then (close_first) the close, then any
 * other key; numbers' minus variants never. -1 when none qualifies. */
static int pick_key(const fg_cpiece *p, uint32_t n, bool close_first) {
  int best = -1, rank_best = 99;
  for (uint32_t i = 0; i < n; i++) {
    int rank;
    if (p[i].key == FG_CPIECE_CLOSE) rank = close_first ? 1 : 3;
    else if (p[i].neg) continue;
    else rank = p[i].required ? 0 : close_first ? 2 : 1;
    if (rank < rank_best) best = (int)i, rank_best = rank;
  }
  return best;
}

/* The learned choice among pieces p[0..n) of function fn after key prev (-1: the first key): the key
 * (or close) that followed prev most often in this engine's answers. *prob: its share of those
 * answers among the pieces offered; -1 (and *prob untouched) when fewer than 2 answers tell. */
static int learned_key(const fg_drafter *d, uint32_t fn, int32_t prev, const fg_cpiece *p, uint32_t n, float *prob) {
  if (!d->fs || fn >= d->n_funcs || prev + 1 > (int32_t)d->fs[fn].n_keys) return -1;
  const fstats *fs = &d->fs[fn];
  const uint32_t *row = fs->next + (size_t)(prev + 1) * (fs->n_keys + 1);
  uint32_t total = 0, best_c = 0;
  int best = -1;
  bool seen[64 + 1] = {false}; /* keys counted once (a number key has two pieces) */
  for (uint32_t i = 0; i < n; i++) {
    if (p[i].neg || p[i].key + 1 > (int32_t)fs->n_keys || p[i].key + 1 > 64) continue;
    const uint32_t c = row[p[i].key + 1];
    if (!seen[p[i].key + 1]) total += c;
    seen[p[i].key + 1] = true;
    if (c > best_c) best_c = c, best = (int)i;
  }
  if (total < 2 || best < 0) return -1;
  *prob = FG_MIN(0.95f, (float)best_c / (float)total);
  return best;
}

/* ASCII-case-insensitive substring test in the utterance */
static bool utt_contains(const fg_drafter *d, const char *s) {
  const size_t n = strlen(s);
  for (size_t i = 0; n && i + n <= d->utt_len; i++) {
    size_t j = 0;
    while (j < n && lower(d->utt[i + j]) == lower(s[j])) j++;
    if (j == n) return true;
  }
  return false;
}

/* Where the current value starts in q: after the last <escape> (free strings), or after the last
 * token whose text is not made of digits (numbers). */
static size_t value_start(fg_drafter *d, const seq *q, bool number) {
  size_t i = seq_len(q);
  while (i > 0) {
    const int32_t t = seq_at(q, i - 1);
    if (!number) {
      if (t == d->id_esc) break;
    } else {
      char piece[32];
      const size_t pl = fg_vocab_token_to_text(d->v, t, piece, sizeof piece);
      bool digits = pl > 0 && pl <= sizeof piece;
      for (size_t j = 0; j < pl && digits; j++) digits = is_digit(piece[j]) || piece[j] == '.';
      if (!digits) break;
    }
    i--;
  }
  return i;
}

/* One guess at the automaton's current state (not forced). *t = -1: no guess. *prob: the chance that it
 * is right when the statistics say so, else left at -1 (the source's acceptance estimate counts). */
static fg_status guess(fg_drafter *d, const seq *q, int32_t *t, uint32_t *src, float *prob) {
  fg_cmatch *cm = d->cm;
  *t = -1;
  fg_status st = FG_OK;
  if (d->plan_at < d->plan_n) { /* a committed copy continues */
    *t = d->plan[d->plan_at++];
    *src = FG_NLU_DRAFT_COPY;
    return FG_OK;
  }
  const fg_cphase ph = fg_cmatch_phase(cm);
  const uint32_t n = fg_cmatch_n_alive(cm);
  fg_cpiece pc[64];
  const uint32_t np = FG_MIN(n, 64u);
  for (uint32_t i = 0; i < np; i++) fg_cmatch_piece(cm, i, &pc[i]);
  *src = FG_NLU_DRAFT_CATALOG;
  switch (ph) {
    case FG_CPH_START: *t = d->id_sfc; break;
    case FG_CPH_NAME: {
      if (np != n) break;
      /* the function: decided by the tokens so far, or the one this engine's answers called most */
      uint32_t fn = pc[0].fn, calls = 0, total = 0;
      bool one = true;
      for (uint32_t i = 1; i < np; i++) one = one && pc[i].fn == pc[0].fn;
      float pf = 1.0f;
      if (!one) {
        for (uint32_t i = 0; d->fs && i < np; i++) {
          bool dup = false;
          for (uint32_t j = 0; j < i && !dup; j++) dup = pc[j].fn == pc[i].fn;
          if (dup || pc[i].fn >= d->n_funcs) continue;
          total += d->fs[pc[i].fn].calls;
          if (d->fs[pc[i].fn].calls > calls) calls = d->fs[pc[i].fn].calls, fn = pc[i].fn;
        }
        if (calls == 0 || total < 2) break;
        pf = (float)calls / (float)total;
      }
      /* its first key: the learned one, else a required key, else the first */
      uint32_t m = 0;
      for (uint32_t i = 0; i < np; i++)
        if (pc[i].fn == fn) pc[m++] = pc[i];
      float pk = -1.0f;
      int b = learned_key(d, fn, -1, pc, m, &pk);
      if (b < 0) b = pick_key(pc, m, false);
      if (b < 0) break;
      *t = pc[b].rest[0];
      if (!one || pk >= 0.0f) *prob = pf * (pk >= 0.0f ? pk : d->acc[FG_NLU_DRAFT_CATALOG]);
    } break;
    case FG_CPH_KEY: {
      if (np != n || np == 0) break;
      int b = learned_key(d, pc[0].fn, fg_cmatch_last_key(cm), pc, np, prob);
      if (b < 0) b = pick_key(pc, np, true);
      if (b >= 0) *t = pc[b].rest[0];
    } break;
    case FG_CPH_VALUE: { /* the enum member the utterance spells (the longest) */
      const fg_function *fn = np ? fg_cmatch_function(cm, pc[0].fn) : NULL;
      const fg_param *p = fn && pc[0].key >= 0 ? &fn->params.props[pc[0].key] : NULL;
      size_t best_len = 0;
      for (uint32_t i = 0; p && i < np; i++) {
        if (p->type != FG_PARAM_STRING || pc[i].member >= p->n_enum) continue;
        const char *m = p->enum_values[pc[i].member];
        if (strlen(m) > best_len && utt_contains(d, m)) best_len = strlen(m), *t = pc[i].rest[0];
      }
      /* none spelled: the member this key got most often */
      const uint32_t *cnt = p && d->fs && pc[0].fn < d->n_funcs ? d->fs[pc[0].fn].values[pc[0].key] : NULL;
      uint32_t total = 0, best_c = 0;
      for (uint32_t i = 0; *t < 0 && cnt && i < np; i++) {
        const uint32_t c = cnt[pc[i].member];
        total += c;
        if (c > best_c) best_c = c, *t = pc[i].rest[0];
      }
      if (*t >= 0 && best_len == 0) {
        if (total < 2) *t = -1;
        else *prob = FG_MIN(0.95f, (float)best_c / (float)total);
      }
    } break;
    case FG_CPH_FREE:
      if (!d->planned) {
        d->planned = true;
        const size_t v0 = value_start(d, q, false);
        if (v0 == seq_len(q)) { /* nothing of the value yet: where the learned context points */
          const uint32_t nk = fg_cmatch_key_pieces(cm, d->pieces, d->pieces_cap);
          if (nk) st = plan_value_start(d, d->pieces[0].fn, fg_cmatch_last_key(cm), prob);
        } else {
          st = plan_string(d, q, v0);
        }
        if (st == FG_OK && d->plan_at < d->plan_n) {
          *t = d->plan[d->plan_at++];
          *src = FG_NLU_DRAFT_COPY;
        }
      }
      break;
    case FG_CPH_NUM: {
      if (!d->planned) {
        d->planned = true;
        st = plan_number(d, q, value_start(d, q, true), &d->plan_found);
        if (st == FG_OK && d->plan_at < d->plan_n) {
          *t = d->plan[d->plan_at++];
          *src = FG_NLU_DRAFT_COPY;
          break;
        }
      }
      if (st != FG_OK || !d->plan_found) break;
      /* the number is complete: the key piece or the close that follows */
      const uint32_t nk = fg_cmatch_key_pieces(cm, d->pieces, d->pieces_cap);
      int b = nk ? learned_key(d, d->pieces[0].fn, fg_cmatch_last_key(cm), d->pieces, nk, prob) : -1;
      if (b < 0) b = pick_key(d->pieces, nk, true);
      if (b >= 0) *t = d->pieces[b].rest[0];
    } break;
    default: break; /* prose, after a call, done: no guess */
  }
  return st;
}

static uint8_t kind_now(fg_cmatch *cm) {
  fg_callowed al;
  fg_cmatch_allowed(cm, &al);
  if (al.mask) return FG_DRAFT_KIND_MASK;
  return al.n <= 1 ? FG_DRAFT_KIND_FORCED : FG_DRAFT_KIND_LIST;
}

fg_status fg_drafter_propose(fg_drafter *d, const fg_cmatch *state, const int32_t *gen, size_t n_gen,
                             bool verify_forced, size_t cap, int32_t *out, uint8_t *src, uint8_t *kind, size_t *n_out) {
  *n_out = 0;
  fg_cmatch *cm = state && d->cm ? d->cm : NULL;
  if (cm) {
    fg_cmatch_copy(cm, state);
    if (d->pieces_cap == 0) { /* key pieces after a number: at most every key twice plus the close */
      uint32_t most = 1;
      for (uint32_t f = 0; fg_cmatch_function(cm, f); f++)
        most = FG_MAX(most, 2 * fg_cmatch_function(cm, f)->params.n_props + 1);
      if (!(d->pieces = fg_malloc_array(most, sizeof *d->pieces))) return FG_ERR_NOMEM;
      d->pieces_cap = most;
    }
  }
  d->plan_n = d->plan_at = 0;
  d->planned = false;
  size_t hook_n = 0;
  if (d->hook) {
    if (grow((void **)&d->plan, &d->plan_cap, cap + 1, sizeof *d->plan) != FG_OK) return FG_ERR_NOMEM;
    hook_n = FG_MIN(d->hook(d->hook_ud, gen, n_gen, d->plan, cap), cap);
  }
  const centry *hit = d->hit && !d->hook ? d->hit : NULL;
  for (size_t i = 0; hit && i < n_gen; i++)
    if (i >= hit->n || hit->ids[i] != gen[i]) hit = NULL; /* the answer left the cached one */
  seq q = {gen, out, n_gen, 0};
  float reach = 1.0f;
  size_t n = 0, look = SIZE_MAX; /* look: the context source's next token (hist_at), SIZE_MAX: none */
  fg_status st = FG_OK;
  for (;;) {
    /* without a constraint the answer may go on where the grammar ends (<start_of_turn> ends prose only
     * for the automaton): the draft goes on without it */
    if (cm && verify_forced && fg_cmatch_phase(cm) == FG_CPH_DONE) cm = NULL;
    kind[n] = cm ? kind_now(cm) : FG_DRAFT_KIND_FREE;
    if (n >= cap || (cm && fg_cmatch_phase(cm) == FG_CPH_DONE)) break;
    int32_t t = -1;
    uint32_t s = FG_NLU_DRAFT_CACHE;
    const bool forced = kind[n] == FG_DRAFT_KIND_FORCED;
    float pg = -1.0f;
    if (d->hook) {
      if (n < hook_n) t = d->plan[n];
    } else if (hit && n_gen + n < hit->n) {
      t = hit->ids[n_gen + n];
    } else if (cm && forced) {
      fg_callowed al;
      fg_cmatch_allowed(cm, &al);
      if (al.n == 1) t = al.ids[0], s = FG_NLU_DRAFT_FORCED;
    } else if (cm) {
      hit = NULL;
      if ((st = guess(d, &q, &t, &s, &pg)) != FG_OK) break;
    }
    if (t < 0 && !d->hook && d->hist_n) { /* nothing else: copy on from the context */
      if (look == SIZE_MAX) look = hist_find(d, &q);
      if (look != SIZE_MAX) t = hist_at(d, &q, look++), s = FG_NLU_DRAFT_CONTEXT, pg = -1.0f;
    } else {
      look = SIZE_MAX; /* another source's token: a later copy looks up again */
    }
    if (t < 0) break;
    const float p = d->hook || (forced && cm && !verify_forced) ? 1.0f : pg >= 0.0f ? pg : d->acc[s];
    if (cm && fg_cmatch_accept(cm, t) != FG_OK) {
      if (!verify_forced) break; /* with a constraint, a token the grammar refuses is never the answer */
      cm = NULL;                 /* without one, the answer may leave the grammar: the draft goes on without it */
    }
    /* the token adds a row to the pass: worth it while the chance that the pass gets there pays for the
     * row (its share of the body, and of the head when the row needs the full one) */
    const bool full_row = verify_forced || !cm || kind_now(cm) == FG_DRAFT_KIND_MASK;
    if (!d->hook && reach * p < (full_row ? FG_DRAFT_MIN_REACH_FULL : FG_DRAFT_MIN_REACH)) break;
    if (cm && fg_cmatch_phase(cm) != FG_CPH_FREE && fg_cmatch_phase(cm) != FG_CPH_NUM && !d->hook) {
      d->planned = false; /* the value is over: the next one gets its own copy */
      d->plan_n = d->plan_at = 0;
    }
    reach *= p;
    out[n] = t;
    src[n] = (uint8_t)s;
    q.n_draft = ++n;
  }
  /* with a constraint a row where the next token is forced needs no head: at the end of a draft it is
   * of no use (forced tokens cost nothing later, and the answer's last ones are never appended) */
  while (!verify_forced && !d->hook && n > 0 && kind[n] == FG_DRAFT_KIND_FORCED) n--;
  *n_out = n;
  return st;
}

void fg_drafter_feedback(fg_drafter *d, uint32_t src, bool accepted) {
  if (src >= FG_NLU_DRAFT_SOURCES) return;
  d->acc[src] = ACC_DECAY * d->acc[src] + (accepted ? 1.0f - ACC_DECAY : 0.0f);
}

// ----------------------------------------------------------------------------------------------
// After an answer

/* Words of every <escape>-delimited value that the utterance spells: how far copies should reach. */
static void learn_words(fg_drafter *d, const int32_t *gen, size_t n_gen) {
  size_t open = SIZE_MAX;
  for (size_t i = 0; i < n_gen; i++) {
    if (gen[i] != d->id_esc) continue;
    if (open == SIZE_MAX) {
      open = i + 1;
      continue;
    }
    char val[256];
    size_t n = 0;
    for (size_t j = open; j < i && n < sizeof val; j++) {
      const size_t pl = fg_vocab_token_to_text(d->v, gen[j], val + n, sizeof val - n);
      n = pl > sizeof val - n ? sizeof val : n + pl;
    }
    open = SIZE_MAX;
    if (n == 0 || n >= sizeof val || find_span(d, val, n) < 0) continue;
    int words = 1;
    for (size_t j = 1; j < n; j++) words += is_space(val[j]) && !is_space(val[j - 1]);
    d->words = 0.8f * d->words + 0.2f * (float)(words - 1);
  }
}

/* Replays the answer through the automaton and counts the choices: function, key order, members. */
/* The value gen[v0..v1) of key `key` of function fn was copied from the utterance: count the word
 * before it. */
static void learn_context(fg_drafter *d, uint32_t fn, int32_t key, const int32_t *gen, size_t v0, size_t v1) {
  char val[128];
  size_t n = 0;
  for (size_t j = v0; j < v1 && n < sizeof val; j++) {
    const size_t pl = fg_vocab_token_to_text(d->v, gen[j], val + n, sizeof val - n);
    n = pl > sizeof val - n ? sizeof val : n + pl;
  }
  if (n == 0 || n >= sizeof val || fn >= d->n_funcs || key < 0 || (uint32_t)key >= d->fs[fn].n_keys) return;
  long at = -1;
  for (size_t i = 0; i + n <= d->utt_len && at < 0; i++) { /* at a word start, case folded */
    if (i > 0 && !is_space(d->utt[i - 1])) continue;
    size_t j = 0;
    while (j < n && lower(d->utt[i + j]) == lower(val[j])) j++;
    if (j == n) at = (long)i;
  }
  if (at < 0) return;
  char w[16];
  word_before(d, (size_t)at, w);
  vctx *ctx = d->fs[fn].ctx + (size_t)key * FG_DRAFT_CTX_N, *slot = &ctx[0];
  for (int c = 0; c < FG_DRAFT_CTX_N; c++) {
    if (strcmp(ctx[c].word, w) == 0 && ctx[c].count) {
      slot = &ctx[c];
      break;
    }
    if (ctx[c].count < slot->count) slot = &ctx[c]; /* else the least counted makes room */
  }
  if (strcmp(slot->word, w) != 0) {
    memcpy(slot->word, w, sizeof slot->word);
    slot->count = 0;
  }
  slot->count++;
}

static void learn_choices(fg_drafter *d, const int32_t *gen, size_t n_gen) {
  fg_cmatch *cm = d->cm;
  fg_cmatch_reset(cm);
  int32_t prev = -1;
  uint32_t fn = 0;
  size_t v0 = SIZE_MAX; /* start of the free string being replayed */
  for (size_t i = 0; i < n_gen; i++) {
    const fg_cphase ph = fg_cmatch_phase(cm);
    if (ph == FG_CPH_FREE && v0 == SIZE_MAX) v0 = i;
    if (ph == FG_CPH_FREE && gen[i] == d->id_esc) {
      learn_context(d, fn, fg_cmatch_last_key(cm), gen, v0, i);
      v0 = SIZE_MAX;
    }
    fg_cpiece done = {0};
    bool completes = false;
    const uint32_t n = fg_cmatch_n_alive(cm);
    for (uint32_t a = 0; a < n && !completes; a++) { /* the piece this token completes, if any */
      fg_cmatch_piece(cm, a, &done);
      completes = done.n_rest == 1 && done.rest[0] == gen[i];
    }
    if (fg_cmatch_accept(cm, gen[i]) != FG_OK) return;
    if (!completes) continue;
    if (ph == FG_CPH_NAME && done.fn < d->n_funcs) {
      fn = done.fn;
      d->fs[fn].calls++;
      prev = -1;
    }
    if ((ph == FG_CPH_NAME || ph == FG_CPH_KEY) && fn < d->n_funcs) {
      fstats *fs = &d->fs[fn];
      if (prev + 1 <= (int32_t)fs->n_keys && done.key + 1 <= (int32_t)fs->n_keys)
        fs->next[(size_t)(prev + 1) * (fs->n_keys + 1) + (size_t)(done.key + 1)]++;
      prev = done.key;
    }
    if (ph == FG_CPH_VALUE && fn < d->n_funcs && done.key >= 0 && (uint32_t)done.key < d->fs[fn].n_keys &&
        d->fs[fn].values[done.key])
      d->fs[fn].values[done.key][done.member]++;
  }
}

void fg_drafter_end(fg_drafter *d, const int32_t *gen, size_t n_gen) {
  if (d->id_esc >= 0) learn_words(d, gen, n_gen);
  if (d->cm && d->fs) learn_choices(d, gen, n_gen);
  if (!d->cache || !d->key_ok || n_gen == 0 || n_gen > FG_DRAFT_CACHE_TOKENS) return;
  centry *slot = NULL;
  for (uint32_t i = 0; i < FG_DRAFT_CACHE_N; i++) {
    centry *c = &d->cache[i];
    if (c->n && c->key_len == d->key_len && memcmp(c->key, d->key, d->key_len) == 0) {
      slot = c;
      break;
    }
    if (!slot || c->stamp < slot->stamp) slot = c; /* empty slots have stamp 0 */
  }
  memcpy(slot->key, d->key, d->key_len);
  slot->key_len = d->key_len;
  memcpy(slot->ids, gen, n_gen * sizeof *gen);
  slot->n = (uint32_t)n_gen;
  slot->stamp = ++d->clock;
  d->hit = NULL;
}
