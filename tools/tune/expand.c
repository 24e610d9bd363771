/* expand.c — the spec's phrasings expanded into training and dev items (docs/TUNE.md "Data"): the
 * train/dev split is the spec's (spec.c); here the sampling, the noise and the dev set. Deterministic
 * for the spec's seed. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 64

// ----------------------------------------------------------------------------------------------
// A set of 64-bit keys (open addressing)

typedef struct keyset {
  uint64_t *k;
  size_t cap, n;
} keyset;

static bool keyset_add(keyset *ks, uint64_t key) { /* true when newly added */
  if (key == 0) key = 1;
  if (2 * (ks->n + 1) > ks->cap) {
    size_t cap = ks->cap ? ks->cap * 2 : 1024;
    uint64_t *nk = calloc(cap, sizeof *nk);
    if (!nk) return false;
    for (size_t i = 0; i < ks->cap; i++) {
      if (!ks->k[i]) continue;
      size_t j = ks->k[i] & (cap - 1);
      while (nk[j]) j = (j + 1) & (cap - 1);
      nk[j] = ks->k[i];
    }
    free(ks->k);
    ks->k = nk, ks->cap = cap;
  }
  size_t j = key & (ks->cap - 1);
  while (ks->k[j]) {
    if (ks->k[j] == key) return false;
    j = (j + 1) & (ks->cap - 1);
  }
  ks->k[j] = key;
  ks->n++;
  return true;
}

static bool keyset_has(const keyset *ks, uint64_t key) {
  if (key == 0) key = 1;
  if (!ks->cap) return false;
  size_t j = key & (ks->cap - 1);
  while (ks->k[j]) {
    if (ks->k[j] == key) return true;
    j = (j + 1) & (ks->cap - 1);
  }
  return false;
}


/* One expansion in progress. */
typedef struct expansion {
  const tn_spec *s;
  tn_rng *rng;
  const struct keyset *held; /* (lang, value) of every held-out free-text value */
  int lang;
  int values;        /* VALUES_TRAIN: free-text values not held out; VALUES_HELD: held out ones; VALUES_ANY */
  bool training;     /* a training example: fillers and new names (p_new_names) */
  bool used_held;    /* a held-out value was drawn */
  bool new_name;     /* a copied value was replaced by a new name */
  tn_buf text;
  cJSON *val[MAX_ARGS]; /* per argument of the function: the value (owned), or NULL */
  bool copied[MAX_ARGS];
  bool oom;
} expansion;

enum { VALUES_TRAIN, VALUES_HELD, VALUES_ANY };

// ----------------------------------------------------------------------------------------------
// Text helpers

/* Lower case for ASCII and Latin-1 letters (À..Þ as UTF-8 C3 80..9E, not ×), in place. */
static void lower_utf8(char *s) {
  for (unsigned char *p = (unsigned char *)s; *p; p++) {
    if (*p >= 'A' && *p <= 'Z') *p = (unsigned char)(*p + 32);
    else if (*p == 0xc3 && p[1] >= 0x80 && p[1] <= 0x9e && p[1] != 0x97) p[1] = (unsigned char)(p[1] + 32), p++;
  }
}

static bool is_punct(char c) { return c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':'; }

/* Removes sentence punctuation (a mark followed by a space or the end), in place: "19,5" and "Sat.1"
 * keep theirs. */
static void strip_punct(char *s) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (is_punct(*r)) {
      char *q = r;
      while (is_punct(*q)) q++;
      if (*q == ' ' || *q == '\0') {
        r = q - 1;
        continue;
      }
    }
    *w++ = *r;
  }
  *w = '\0';
}

/* Collapses runs of spaces, trims, and drops a space before punctuation (left by an empty [x]). */
static void tidy(char *s) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (*r == ' ' && (w == s || w[-1] == ' ')) continue;
    if (is_punct(*r) && w > s && w[-1] == ' ' && (r[1] == ' ' || r[1] == '\0')) w--;
    *w++ = *r;
  }
  while (w > s && w[-1] == ' ') w--;
  *w = '\0';
}

/* The key under which dev lines equal training utterances: lower case, no punctuation at all. */
static uint64_t norm_key(const char *u) {
  char *t = strdup(u);
  if (!t) return 0;
  lower_utf8(t);
  char *w = t;
  for (char *r = t; *r; r++)
    if (!is_punct(*r) && *r != '"' && *r != '\'') *w++ = *r;
  *w = '\0';
  tidy(t);
  const uint64_t h = tn_hash(0, t, NULL, NULL);
  free(t);
  return h;
}

// ----------------------------------------------------------------------------------------------
// Expansion of one phrasing

static const char *pick_string(tn_rng *r, const cJSON *arr) {
  const int n = cJSON_GetArraySize(arr);
  return cJSON_GetArrayItem(arr, (int)tn_rng_below(r, (uint32_t)n))->valuestring;
}

static void set_arg(expansion *x, int arg, cJSON *v, bool copied) {
  if (arg < 0 || arg >= MAX_ARGS) {
    cJSON_Delete(v);
    return;
  }
  if (!v) {
    x->oom = true;
    return;
  }
  cJSON_Delete(x->val[arg]);
  x->val[arg] = v, x->copied[arg] = copied;
}

/* Byte offsets of the UTF-8 character starts in s (at most cap), returning how many. */
static size_t char_starts(const char *s, size_t *at, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; s[i] && k < cap; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80) at[k++] = i;
  return k;
}

/* A new name made of two training values of list l, into out: the head of one and the tail of another,
 * by words when either has several ("Emma's" + "dinner"), else by letters ("Party" + "liothek"), so
 * that the model learns to copy names it never saw. False when none came out (too short, or a held-out
 * or existing value). */
static bool new_name(expansion *x, const tn_list *l, tn_buf *out) {
  const tn_entry *a = &l->e[tn_rng_below(x->rng, (uint32_t)l->n)], *b = &l->e[tn_rng_below(x->rng, (uint32_t)l->n)];
  if (a == b || a->held_out || b->held_out || !cJSON_IsString(a->value) || !cJSON_IsString(b->value)) return false;
  const char *sa = a->value->valuestring, *sb = b->value->valuestring;
  const char *la = strrchr(sa, ' '), *fb = strchr(sb, ' ');
  out->n = 0;
  if (la || fb) {
    /* words: a without its last word (or all of a) + b's last word (or all of b) */
    const size_t ka = la ? (size_t)(la - sa) : strlen(sa);
    const char *tb = fb ? strrchr(sb, ' ') + 1 : sb;
    if (!tn_buf_add(out, sa, ka) || !tn_buf_str(out, " ") || !tn_buf_str(out, tb)) return x->oom = true, false;
  } else {
    size_t ca[64], cb[64];
    const size_t na = char_starts(sa, ca, 64), nb = char_starts(sb, cb, 64);
    if (na < 4 || nb < 4) return false;
    const size_t i = 2 + tn_rng_below(x->rng, (uint32_t)(na - 3)), j = 1 + tn_rng_below(x->rng, (uint32_t)(nb - 3));
    if (!tn_buf_add(out, sa, ca[i]) || !tn_buf_str(out, sb + cb[j])) return x->oom = true, false;
  }
  if (out->n < 3 || keyset_has(x->held, tn_hash(0, "held", out->s, NULL))) return false;
  for (size_t i = 0; i < l->n; i++)
    if (cJSON_IsString(l->e[i].value) && !strcmp(l->e[i].value->valuestring, out->s)) return false;
  return true;
}

/* say with its first copy of value replaced by name, into out. */
static bool replace_value(const char *say, const char *value, const char *name, tn_buf *out) {
  const char *p = strstr(say, value);
  out->n = 0;
  return tn_buf_add(out, say, (size_t)(p - say)) && tn_buf_str(out, name) && tn_buf_str(out, p + strlen(value));
}

static void expand_slot(expansion *x, const tn_node *n, int func) {
  const tn_list *l = n->list;
  const tn_spec *s = x->s;
  if (l->numbers) {
    const long long v = l->lo + (long long)(tn_rng_next(x->rng) % (uint64_t)(l->hi - l->lo + 1));
    tn_buf w = {0};
    if (tn_rng_unit(x->rng) < 0.5 && tn_number_words(s->langs[x->lang], v, &w)) {
      x->oom |= !tn_buf_str(&x->text, w.s);
    } else {
      char d[32];
      snprintf(d, sizeof d, "%lld", v);
      x->oom |= !tn_buf_str(&x->text, d);
    }
    tn_buf_free(&w);
    set_arg(x, n->arg, cJSON_CreateNumber((double)v), false);
    return;
  }
  /* the candidates: entries with the form, and for free text the values of this split (a training
   * draw also skips a value that another list holds out); failing that, any entry with the form */
  for (int pass = 0; pass < 2; pass++) {
    const int want = pass == 0 ? x->values : VALUES_ANY;
    size_t k = 0, pick = 0;
    for (int round = 0; round < 2; round++) {
      k = 0;
      for (size_t i = 0; i < l->n; i++) {
        const tn_entry *e = &l->e[i];
        if (n->form && !(e->forms && cJSON_GetObjectItemCaseSensitive(e->forms, n->form))) continue;
        const bool held = e->held_out ||
                          (cJSON_IsString(e->value) && keyset_has(x->held, tn_hash(0, "held", e->value->valuestring, NULL)));
        if (want == VALUES_TRAIN && held) continue;
        if (want == VALUES_HELD && l->split && !held) continue;
        if (round == 1 && k == pick) {
          const char *say = n->form ? pick_string(x->rng, cJSON_GetObjectItemCaseSensitive(e->forms, n->form))
                            : e->say ? pick_string(x->rng, e->say)
                                     : e->value->valuestring;
          const tn_arg *a = n->arg >= 0 ? &s->funcs[func].args[n->arg] : NULL;
          /* copied: the words said contain the value as written ("in der Küche" -> Küche) */
          const bool copied = a && a->type == TN_T_STRING && !a->enums && cJSON_IsString(e->value) &&
                              strstr(say, e->value->valuestring) != NULL;
          tn_buf name = {0}, said = {0};
          if (copied && l->split && !l->no_new_names && x->training && want == VALUES_TRAIN && s->p_new_names > 0 &&
              tn_rng_unit(x->rng) < s->p_new_names && new_name(x, l, &name) &&
              replace_value(say, e->value->valuestring, name.s, &said)) {
            x->oom |= !tn_buf_str(&x->text, said.s);
            set_arg(x, n->arg, cJSON_CreateString(name.s), true);
            x->new_name = true;
          } else {
            x->oom |= !tn_buf_str(&x->text, say);
            if (a) set_arg(x, n->arg, cJSON_Duplicate(e->value, true), copied);
          }
          tn_buf_free(&name), tn_buf_free(&said);
          if (held) x->used_held = true;
          return;
        }
        k++;
      }
      if (!k) break;
      if (round == 0) pick = tn_rng_below(x->rng, (uint32_t)k);
    }
  }
}

static void expand_node(expansion *x, const tn_node *n, int func) {
  switch (n->kind) {
    case TN_TEXT: x->oom |= !tn_buf_str(&x->text, n->text); break;
    case TN_SEQ:
      for (size_t i = 0; i < n->n_kids; i++) expand_node(x, n->kids[i], func);
      break;
    case TN_ALT: expand_node(x, n->kids[tn_rng_below(x->rng, (uint32_t)n->n_kids)], func); break;
    case TN_OPT:
      if (tn_rng_unit(x->rng) < 0.5) expand_node(x, n->kids[0], func);
      break;
    case TN_SLOT: expand_slot(x, n, func); break;
  }
}

enum { NOISE_NONE, NOISE_LOWER, NOISE_ASR, NOISE_NO_FINAL };

static void apply_noise(char *u, int noise) {
  if (noise == NOISE_LOWER || noise == NOISE_ASR) lower_utf8(u);
  if (noise == NOISE_ASR) strip_punct(u);
  if (noise == NOISE_NO_FINAL) {
    size_t k = strlen(u);
    while (k && (u[k - 1] == '.' || u[k - 1] == '!' || u[k - 1] == '?')) u[--k] = '\0';
  }
}

/* Adds a filler from list arr before (at the start) or after (before the final punctuation) the text. */
static bool add_filler(tn_buf *t, tn_rng *r, const cJSON *arr, bool before) {
  const char *f = pick_string(r, arr);
  tn_buf o = {0};
  bool ok;
  if (before) {
    ok = tn_buf_str(&o, f) && tn_buf_str(&o, t->s);
  } else {
    size_t k = t->n;
    while (k && (t->s[k - 1] == '.' || t->s[k - 1] == '!' || t->s[k - 1] == '?')) k--;
    ok = tn_buf_add(&o, t->s, k) && tn_buf_str(&o, f) && tn_buf_str(&o, t->s + k);
  }
  if (ok) tn_buf_free(t), *t = o;
  else tn_buf_free(&o);
  return ok;
}

/* Expands phrasing pi into item it (noise as given, fillers when asked); false when out of memory. */
/* A sentence starts with a capital letter (ASCII or Latin-1), unless it starts with a value copied as
 * written ("iPhone-Ladekabel auf die Liste"). */
static void capitalize_start(expansion *x, const tn_func *f) {
  unsigned char *p = (unsigned char *)x->text.s;
  for (size_t i = 0; f && i < f->n_args && i < MAX_ARGS; i++)
    if (x->val[i] && x->copied[i] && strncmp(x->text.s, x->val[i]->valuestring, strlen(x->val[i]->valuestring)) == 0)
      return;
  if (p[0] >= 'a' && p[0] <= 'z') p[0] = (unsigned char)(p[0] - 32);
  else if (p[0] == 0xc3 && p[1] >= 0xa0 && p[1] <= 0xbe && p[1] != 0xb7) p[1] = (unsigned char)(p[1] - 32);
}

/* A copied value after the utterance's noise: it follows the utterance's case (and its punctuation);
 * false when out of memory. */
static bool copy_case(cJSON *v, const char *utterance, int noise) {
  char *t = strdup(v->valuestring);
  if (!t) return false;
  lower_utf8(t);
  if (!strstr(utterance, t) && noise == NOISE_ASR) strip_punct(t);
  const bool ok = cJSON_SetValuestring(v, t) != NULL;
  free(t);
  return ok;
}

static bool make_item(const tn_spec *s, const keyset *held, size_t pi, tn_rng *rng, int values, int noise, bool training,
                      tn_item *it) {
  const tn_phrasing *ph = &s->phr[pi];
  expansion x = {.s = s, .rng = rng, .held = held, .lang = ph->lang, .values = values, .training = training};
  x.oom = !tn_buf_str(&x.text, "");
  expand_node(&x, ph->root, ph->func);
  tidy(x.text.s);
  x.text.n = strlen(x.text.s);
  capitalize_start(&x, ph->func >= 0 ? &s->funcs[ph->func] : NULL);
  if (training && s->fill_before[ph->lang] && tn_rng_unit(rng) < 0.15) x.oom |= !add_filler(&x.text, rng, s->fill_before[ph->lang], true);
  if (training && s->fill_after[ph->lang] && tn_rng_unit(rng) < 0.15) x.oom |= !add_filler(&x.text, rng, s->fill_after[ph->lang], false);
  /* a fixed free-text value that the words contain as written ("einen Flat White" -> Flat White) is
   * copied too: it follows the noise's case below, as a slot's copied value does */
  bool fixed_copied[MAX_ARGS] = {false};
  if (ph->func >= 0 && ph->fixed) {
    const tn_func *f = &s->funcs[ph->func];
    for (size_t i = 0; i < f->n_args && i < MAX_ARGS; i++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph->fixed, f->args[i].name);
      fixed_copied[i] = cJSON_IsString(v) && f->args[i].type == TN_T_STRING && !f->args[i].enums &&
                        strstr(x.text.s, v->valuestring) != NULL;
    }
  }
  if (!x.oom) apply_noise(x.text.s, noise);
  memset(it, 0, sizeof *it);
  it->lang = ph->lang, it->func = ph->func, it->phrasing = (int)pi, it->held_values = x.used_held, it->new_name = x.new_name;
  cJSON *exp = cJSON_CreateObject();
  if (ph->func < 0) {
    x.oom |= !cJSON_AddStringToObject(exp, "text", s->no_fit_answer[ph->lang]);
  } else {
    const tn_func *f = &s->funcs[ph->func];
    cJSON *calls = cJSON_AddArrayToObject(exp, "calls"), *call = cJSON_CreateObject();
    cJSON_AddItemToArray(calls, call);
    cJSON_AddStringToObject(call, "name", f->name);
    cJSON *args = cJSON_AddObjectToObject(call, "args");
    for (size_t i = 0; i < f->n_args && !x.oom; i++) {
      cJSON *v = i < MAX_ARGS ? x.val[i] : NULL;
      if (v && x.copied[i] && noise != NOISE_NONE && noise != NOISE_NO_FINAL) x.oom |= !copy_case(v, x.text.s, noise);
      const cJSON *fixed = ph->fixed ? cJSON_GetObjectItemCaseSensitive(ph->fixed, f->args[i].name) : NULL;
      if (!v && fixed) {
        v = cJSON_Duplicate(fixed, true);
        x.oom |= !v;
        if (v && i < MAX_ARGS && fixed_copied[i] && noise != NOISE_NONE && noise != NOISE_NO_FINAL)
          x.oom |= !copy_case(v, x.text.s, noise);
      }
      if (v) cJSON_AddItemToObject(args, f->args[i].name, v);
      if (i < MAX_ARGS) x.val[i] = NULL;
    }
  }
  for (size_t i = 0; i < MAX_ARGS; i++) cJSON_Delete(x.val[i]);
  it->utterance = x.text.s;
  it->expected = exp;
  if (x.oom || !exp) {
    free(it->utterance), cJSON_Delete(exp);
    it->utterance = NULL, it->expected = NULL;
    return false;
  }
  return true;
}

static bool push(tn_item **arr, size_t *n, size_t *cap, const tn_item *it) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 1024;
    tn_item *na = realloc(*arr, c * sizeof *na);
    if (!na) return false;
    *arr = na, *cap = c;
  }
  (*arr)[(*n)++] = *it;
  return true;
}

static int noise_draw(tn_rng *r) {
  const double u = tn_rng_unit(r);
  return u < 0.10 ? NOISE_LOWER : u < 0.20 ? NOISE_ASR : u < 0.30 ? NOISE_NO_FINAL : NOISE_NONE;
}

int tn_expand(const tn_spec *s, tn_data *d) {
  memset(d, 0, sizeof *d);
  const size_t nf = s->n_funcs + 1, nl = s->n_langs; /* group (func + 1, lang) */
  size_t *cnt = calloc(nf * nl, sizeof *cnt), *start = calloc(nf * nl + 1, sizeof *start);
  size_t *idx = calloc(s->n_phr + 1, sizeof *idx);
  tn_rng rng = {tn_hash(s->seed, "train", NULL, NULL)};
  keyset seen = {0}, held = {0};
  bool ok = cnt && start && idx;
  for (size_t i = 0; ok && i < s->n_lists; i++)
    for (size_t j = 0; s->lists[i].split && j < s->lists[i].n; j++)
      if (s->lists[i].e[j].held_out)
        keyset_add(&held, tn_hash(0, "held", s->lists[i].e[j].value->valuestring, NULL));
  /* training phrasings per group */
  for (size_t i = 0; ok && i < s->n_phr; i++)
    if (!s->phr[i].dev) cnt[(size_t)(s->phr[i].func + 1) * nl + (size_t)s->phr[i].lang]++;
  for (size_t g = 0; ok && g < nf * nl; g++) start[g + 1] = start[g] + cnt[g], cnt[g] = 0;
  for (size_t i = 0; ok && i < s->n_phr; i++) {
    if (s->phr[i].dev) continue;
    const size_t g = (size_t)(s->phr[i].func + 1) * nl + (size_t)s->phr[i].lang;
    idx[start[g] + cnt[g]++] = i;
  }
  for (uint32_t k = 0; ok && k < s->train_examples; k++) {
    const size_t lang = tn_rng_below(&rng, (uint32_t)nl);
    size_t g;
    if (cnt[lang] && tn_rng_unit(&rng) < s->p_no_fit) g = lang; /* no_fit, func -1 */
    else g = (1 + tn_rng_below(&rng, (uint32_t)s->n_funcs)) * nl + lang;
    const size_t pi = idx[start[g] + tn_rng_below(&rng, (uint32_t)cnt[g])];
    tn_item it;
    ok = make_item(s, &held, pi, &rng, VALUES_TRAIN, noise_draw(&rng), true, &it) && push(&d->train, &d->n_train, &d->cap_train, &it);
  }
  for (size_t i = 0; ok && i < s->n_ex; i++) {
    if (!s->ex[i].train) continue;
    tn_item it = {.utterance = strdup(s->ex[i].utterance), .expected = cJSON_Duplicate(s->ex[i].expected, true),
                  .lang = s->ex[i].lang, .func = -1, .phrasing = -1};
    ok = it.utterance && it.expected && push(&d->train, &d->n_train, &d->cap_train, &it);
  }
  /* shuffle (the examples among the sampled) and remember every training utterance */
  for (size_t i = d->n_train; ok && i > 1; i--) {
    const size_t j = tn_rng_below(&rng, (uint32_t)i);
    tn_item t = d->train[i - 1];
    d->train[i - 1] = d->train[j], d->train[j] = t;
  }
  for (size_t i = 0; ok && i < d->n_train; i++) keyset_add(&seen, norm_key(d->train[i].utterance));
  /* dev: 2-3 lines per dev phrasing (every other with held-out values; the third with noise), 2 per
   * no_fit dev phrasing, then the dev examples; lines equal to a training utterance are dropped */
  tn_rng drng = {tn_hash(s->seed, "dev", NULL, NULL)};
  for (size_t i = 0; ok && i < s->n_phr; i++) {
    if (!s->phr[i].dev) continue;
    const int k = s->phr[i].func < 0 ? 2 : 2 + (int)(tn_hash(s->seed, "lines", s->phr[i].text, NULL) & 1);
    for (int j = 0; ok && j < k; j++) {
      tn_item it;
      const int noise = j == 2 ? (tn_rng_unit(&drng) < 0.5 ? NOISE_LOWER : NOISE_ASR) : NOISE_NONE;
      ok = make_item(s, &held, i, &drng, j % 2 ? VALUES_HELD : VALUES_TRAIN, noise, false, &it);
      if (!ok) break;
      if (!keyset_add(&seen, norm_key(it.utterance))) {
        free(it.utterance), cJSON_Delete(it.expected);
        d->dropped_dev++;
        continue;
      }
      ok = push(&d->dev, &d->n_dev, &d->cap_dev, &it);
    }
  }
  for (size_t i = 0; ok && i < s->n_ex; i++) {
    if (s->ex[i].train) continue;
    if (!keyset_add(&seen, norm_key(s->ex[i].utterance))) {
      d->dropped_dev++;
      continue;
    }
    tn_item it = {.utterance = strdup(s->ex[i].utterance), .expected = cJSON_Duplicate(s->ex[i].expected, true),
                  .lang = s->ex[i].lang, .func = -1, .phrasing = -1};
    ok = it.utterance && it.expected && push(&d->dev, &d->n_dev, &d->cap_dev, &it);
  }
  free(cnt), free(start), free(idx), free(seen.k), free(held.k);
  if (!ok) {
    fprintf(stderr, "fgemma: error: tune: out of memory expanding the spec\n");
    tn_data_free(d);
    return -1;
  }
  return 0;
}

void tn_data_free(tn_data *d) {
  for (size_t i = 0; i < d->n_train; i++) free(d->train[i].utterance), cJSON_Delete(d->train[i].expected);
  for (size_t i = 0; i < d->n_dev; i++) free(d->dev[i].utterance), cJSON_Delete(d->dev[i].expected);
  free(d->train), free(d->dev);
  memset(d, 0, sizeof *d);
}
