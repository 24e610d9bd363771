/* spec.c — the tune spec (docs/TUNE.md): read, parsed and checked against its catalog. Every problem
 * is printed, naming the spec file, the function, the language and the phrasing; nothing is written. */
#include "tune.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ERRORS 40

typedef struct ctx {
  tn_spec *s;
  int n_err;
  /* (list, function, argument) triples whose entries were checked already */
  struct { const tn_list *l; int f, a; } *checked;
  size_t n_checked, cap_checked;
} ctx;

static void fail(ctx *c, const char *fmt, ...) {
  if (c->n_err++ >= MAX_ERRORS) return;
  fprintf(stderr, "fgemma: error: %s: ", c->s->path);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

#define FAIL_RET(c, ...) \
  do {                      \
    fail(c, __VA_ARGS__);   \
    return;                 \
  } while (0)

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t k = fread(buf + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0) break;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

static int lang_index(const tn_spec *s, const char *l) {
  for (size_t i = 0; i < s->n_langs; i++)
    if (strcmp(s->langs[i], l) == 0) return (int)i;
  return -1;
}

static int func_index(const tn_spec *s, const char *name) {
  for (size_t i = 0; i < s->n_funcs; i++)
    if (strcmp(s->funcs[i].name, name) == 0) return (int)i;
  return -1;
}

static int arg_index(const tn_func *f, const char *name, size_t len) {
  for (size_t i = 0; i < f->n_args; i++)
    if (strlen(f->args[i].name) == len && strncmp(f->args[i].name, name, len) == 0) return (int)i;
  return -1;
}

static const char *type_name(int t) {
  static const char *const k[] = {"a string", "an integer", "a number", "a boolean", "an array or object"};
  return k[t];
}

// ----------------------------------------------------------------------------------------------
// The catalog: cartridge ({"functions":[{"name","parameters":{P:{...}},"required"}]}) or OpenAI tools

static int cmp_arg(const void *a, const void *b) {
  const tn_arg *x = a, *y = b;
  int r = strcasecmp(x->name, y->name);
  return r ? r : strcmp(x->name, y->name);
}

static bool read_catalog(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *root = s->catalog_json, *list = root;
  if (cJSON_IsObject(root)) {
    list = cJSON_GetObjectItemCaseSensitive(root, "functions");
    if (!list) list = cJSON_GetObjectItemCaseSensitive(root, "tools");
  }
  if (!cJSON_IsArray(list)) return fail(c, "catalog %s: no list of functions", s->catalog_path), false;
  s->n_funcs = (size_t)cJSON_GetArraySize(list);
  s->funcs = calloc(s->n_funcs ? s->n_funcs : 1, sizeof *s->funcs);
  if (!s->funcs) return fail(c, "out of memory"), false;
  size_t i = 0;
  for (const cJSON *item = list->child; item; item = item->next, i++) {
    const cJSON *fn = item;
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(fn, "function");
    if (cJSON_IsObject(inner)) fn = inner; /* {"type":"function","function":{...}} */
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(fn, "required");
    const cJSON *props = params;
    if (cJSON_IsObject(params) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(params, "properties"))) {
      props = cJSON_GetObjectItemCaseSensitive(params, "properties");
      if (!req) req = cJSON_GetObjectItemCaseSensitive(params, "required");
    }
    tn_func *f = &s->funcs[i];
    f->name = cJSON_IsString(nm) ? nm->valuestring : "?";
    f->n_args = cJSON_IsObject(props) ? (size_t)cJSON_GetArraySize(props) : 0;
    f->args = calloc(f->n_args ? f->n_args : 1, sizeof *f->args);
    if (!f->args) return fail(c, "out of memory"), false;
    size_t k = 0;
    for (const cJSON *p = f->n_args ? props->child : NULL; p; p = p->next, k++) {
      tn_arg *a = &f->args[k];
      a->name = p->string;
      const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
      const char *tn = cJSON_IsString(t) ? t->valuestring : "string";
      a->type = strcmp(tn, "string") == 0 ? TN_T_STRING : strcmp(tn, "integer") == 0 ? TN_T_INTEGER
                : strcmp(tn, "number") == 0 ? TN_T_NUMBER : strcmp(tn, "boolean") == 0 ? TN_T_BOOLEAN : TN_T_OTHER;
      const cJSON *e = cJSON_GetObjectItemCaseSensitive(p, "enum");
      a->enums = cJSON_IsArray(e) ? e : NULL;
      for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && strcmp(r->valuestring, a->name) == 0) a->required = true;
    }
    qsort(f->args, f->n_args, sizeof *f->args, cmp_arg);
  }
  return true;
}

// ----------------------------------------------------------------------------------------------
// Values of arguments

/* NULL when v may be argument a's value, else what is wrong (static text or in buf). */
static const char *value_problem(const tn_arg *a, const cJSON *v, char *buf, size_t cap) {
  switch (a->type) {
    case TN_T_STRING:
      if (!cJSON_IsString(v)) return "is not a string";
      break;
    case TN_T_INTEGER:
      if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9.0e15)
        return "is not an integer";
      break;
    case TN_T_NUMBER:
      if (!cJSON_IsNumber(v)) return "is not a number";
      break;
    case TN_T_BOOLEAN:
      if (!cJSON_IsBool(v)) return "is not a boolean";
      break;
    default: return "has a type (array or object) that tune cannot fill";
  }
  if (a->enums) {
    for (const cJSON *e = a->enums->child; e; e = e->next) {
      if (cJSON_IsString(e) && cJSON_IsString(v) && strcmp(e->valuestring, v->valuestring) == 0) return NULL;
      if (cJSON_IsNumber(e) && cJSON_IsNumber(v) && e->valuedouble == v->valuedouble) return NULL;
    }
    size_t n = (size_t)snprintf(buf, cap, "is not in the enum (");
    for (const cJSON *e = a->enums->child; e && n < cap; e = e->next) {
      char *t = cJSON_PrintUnformatted(e);
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", e == a->enums->child ? "" : ", ", t ? t : "?");
      free(t);
    }
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
  }
  return NULL;
}

static char *json_text(const cJSON *v) {
  char *t = cJSON_PrintUnformatted(v);
  return t ? t : strdup("?");
}

/* A call {"name","args"} against the catalog; where names the place for messages. Returns the function
 * index or -1. */
static int check_call(ctx *c, const char *where, const cJSON *call) {
  const tn_spec *s = c->s;
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(call, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "args");
  if (!cJSON_IsObject(call) || !cJSON_IsString(nm)) return fail(c, "%s: a call needs a \"name\" string", where), -1;
  const int fi = func_index(s, nm->valuestring);
  if (fi < 0) return fail(c, "%s: the catalog has no function '%s'", where, nm->valuestring), -1;
  if (args && !cJSON_IsObject(args)) return fail(c, "%s: \"args\" is not an object", where), -1;
  const tn_func *f = &s->funcs[fi];
  int bad = 0;
  for (const cJSON *v = args ? args->child : NULL; v; v = v->next) {
    const int ai = arg_index(f, v->string, strlen(v->string));
    char buf[512];
    const char *why;
    if (ai < 0) fail(c, "%s: function %s has no argument '%s'", where, f->name, v->string), bad++;
    else if ((why = value_problem(&f->args[ai], v, buf, sizeof buf))) {
      char *t = json_text(v);
      fail(c, "%s: %s.%s = %s %s (the catalog says %s)", where, f->name, v->string, t, why, type_name(f->args[ai].type));
      free(t);
      bad++;
    }
  }
  for (size_t i = 0; i < f->n_args; i++)
    if (f->args[i].required && !(args && cJSON_GetObjectItemCaseSensitive(args, f->args[i].name)))
      fail(c, "%s: the required argument %s.%s is missing", where, f->name, f->args[i].name), bad++;
  return bad ? -1 : fi;
}

// ----------------------------------------------------------------------------------------------
// Value lists

static bool strings_array(const cJSON *a) {
  if (!cJSON_IsArray(a) || !a->child) return false;
  for (const cJSON *x = a->child; x; x = x->next)
    if (!cJSON_IsString(x) || !*x->valuestring) return false;
  return true;
}

/* Is argument name (of function f, or of any function when f < 0) free text: a string without enum? */
static bool free_text(const tn_spec *s, int f, const char *name) {
  for (size_t i = 0; i < s->n_funcs; i++) {
    if (f >= 0 && (int)i != f) continue;
    const int ai = arg_index(&s->funcs[i], name, strlen(name));
    if (ai >= 0 && s->funcs[i].args[ai].type == TN_T_STRING && !s->funcs[i].args[ai].enums) return true;
  }
  return false;
}

/* Is every way of saying the entry (say, forms) a text that contains its string value: copied from the
 * utterance rather than normalised? */
static bool copied_entry(const tn_entry *e) {
  if (!cJSON_IsString(e->value)) return false;
  const char *v = e->value->valuestring;
  for (const cJSON *x = e->say ? e->say->child : NULL; x; x = x->next)
    if (!strstr(x->valuestring, v)) return false;
  for (const cJSON *f = e->forms ? e->forms->child : NULL; f; f = f->next)
    for (const cJSON *x = f->child; x; x = x->next)
      if (!cJSON_IsString(x) || !strstr(x->valuestring, v)) return false;
  return true;
}

static int cmp_hash(const void *a, const void *b) {
  const uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
  return (x > y) - (x < y);
}

/* How many of n go to dev: round(n * fraction), at least one when n >= min_dev, never all. */
static size_t n_held(size_t n, double fraction, size_t min_dev) {
  size_t k = (size_t)floor((double)n * fraction + 0.5);
  if (k == 0 && n >= min_dev) k = 1;
  if (k >= n) k = n ? n - 1 : 0;
  return k;
}

static void read_values(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *values = cJSON_GetObjectItemCaseSensitive(s->json, "values");
  if (!values) return;
  if (!cJSON_IsObject(values)) FAIL_RET(c, "\"values\" is not an object");
  size_t cap = 0;
  for (const cJSON *k = values->child; k; k = k->next) cap += cJSON_IsObject(k) ? (size_t)cJSON_GetArraySize(k) : 0;
  s->lists = calloc(cap ? cap : 1, sizeof *s->lists);
  if (!s->lists) FAIL_RET(c, "out of memory");
  for (const cJSON *k = values->child; k; k = k->next) {
    const char *key = k->string, *dot = strchr(key, '.');
    int fi = -1;
    if (dot) {
      char fname[256];
      snprintf(fname, sizeof fname, "%.*s", (int)(dot - key), key);
      fi = func_index(s, fname);
      if (fi < 0) {
        fail(c, "values.%s: the catalog has no function '%s'", key, fname);
        continue;
      }
      if (arg_index(&s->funcs[fi], dot + 1, strlen(dot + 1)) < 0) {
        fail(c, "values.%s: function %s has no argument '%s'", key, fname, dot + 1);
        continue;
      }
    } else if (key[0] != '_') {
      bool any = false;
      for (size_t i = 0; i < s->n_funcs && !any; i++) any = arg_index(&s->funcs[i], key, strlen(key)) >= 0;
      if (!any) {
        fail(c, "values.%s: no function of the catalog has an argument '%s' (a text-only list starts with '_')", key, key);
        continue;
      }
    }
    if (!cJSON_IsObject(k)) {
      fail(c, "values.%s: not an object of languages ({\"de\": [...], \"en\": [...]})", key);
      continue;
    }
    for (const cJSON *lv = k->child; lv; lv = lv->next) {
      const int li = lang_index(s, lv->string);
      if (li < 0) {
        fail(c, "values.%s.%s: '%s' is not one of the spec's languages", key, lv->string, lv->string);
        continue;
      }
      tn_list *l = &s->lists[s->n_lists];
      l->key = key;
      l->lang = li;
      if (cJSON_IsObject(lv)) {
        const cJSON *nr = cJSON_GetObjectItemCaseSensitive(lv, "numbers");
        const cJSON *lo = cJSON_GetArrayItem(nr, 0), *hi = cJSON_GetArrayItem(nr, 1);
        if (cJSON_GetArraySize(lv) != 1 || !cJSON_IsArray(nr) || cJSON_GetArraySize(nr) != 2 || !cJSON_IsNumber(lo) ||
            !cJSON_IsNumber(hi) || lo->valuedouble != floor(lo->valuedouble) || hi->valuedouble != floor(hi->valuedouble) ||
            lo->valuedouble > hi->valuedouble || fabs(lo->valuedouble) > 1e15 || fabs(hi->valuedouble) > 1e15) {
          fail(c, "values.%s.%s: an object must be {\"numbers\": [LO, HI]} with integers LO <= HI", key, lv->string);
          continue;
        }
        if (key[0] == '_') {
          fail(c, "values.%s.%s: a text-only list cannot be {\"numbers\"}", key, lv->string);
          continue;
        }
        l->numbers = true;
        l->lo = (long long)lo->valuedouble, l->hi = (long long)hi->valuedouble;
        s->n_lists++;
        continue;
      }
      if (!cJSON_IsArray(lv) || !lv->child) {
        fail(c, "values.%s.%s: not a non-empty list of entries or {\"numbers\": [LO, HI]}", key, lv->string);
        continue;
      }
      l->n = (size_t)cJSON_GetArraySize(lv);
      l->e = calloc(l->n, sizeof *l->e);
      if (!l->e) FAIL_RET(c, "out of memory");
      size_t i = 0;
      int bad = 0;
      for (const cJSON *e = lv->child; e; e = e->next, i++) {
        tn_entry *en = &l->e[i];
        if (cJSON_IsString(e) && *e->valuestring) {
          en->value = e;
          continue;
        }
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "value");
        const cJSON *say = cJSON_GetObjectItemCaseSensitive(e, "say");
        const cJSON *forms = cJSON_GetObjectItemCaseSensitive(e, "forms");
        const char *why = NULL;
        if (!cJSON_IsObject(e)) why = "an entry is a non-empty string or an object {\"value\", \"say\", \"forms\"}";
        else if (!v || !(cJSON_IsString(v) || cJSON_IsNumber(v) || cJSON_IsBool(v)))
          why = "\"value\" must be a string, a number or a boolean";
        else if (say && !strings_array(say)) why = "\"say\" must be a non-empty list of non-empty strings";
        else if (!say && !cJSON_IsString(v)) why = "a value that is not a string needs \"say\"";
        else if (forms && !cJSON_IsObject(forms)) why = "\"forms\" must be an object of lists of strings";
        for (const cJSON *fm = forms && !why ? forms->child : NULL; fm && !why; fm = fm->next)
          if (!strings_array(fm)) why = "every form must be a non-empty list of non-empty strings";
        for (const cJSON *x = cJSON_IsObject(e) && !why ? e->child : NULL; x && !why; x = x->next)
          if (strcmp(x->string, "value") && strcmp(x->string, "say") && strcmp(x->string, "forms"))
            why = "an entry has only \"value\", \"say\" and \"forms\"";
        if (why) { /* reported; the list keeps its good entries, so that no other message follows from it */
          char *t = json_text(e);
          fail(c, "values.%s.%s, entry %zu %.80s: %s", key, lv->string, i + 1, t, why);
          free(t);
          bad++;
          continue;
        }
        en->value = v, en->say = say, en->forms = forms;
      }
      if (bad) {
        size_t kept = 0;
        for (size_t j = 0; j < l->n; j++)
          if (l->e[j].value) l->e[kept++] = l->e[j];
        l->n = kept;
        s->n_lists++;
        continue;
      }
      /* free text: some values held out for dev (by the seeded hash of the value) */
      l->split = key[0] != '_' && l->n >= 3 && free_text(s, fi, dot ? dot + 1 : key);
      if (l->split) {
        /* only values the user's words carry (copied): a normalised one ("halb sieben" -> 06:30) is
         * a convention the model must see in training */
        uint64_t(*h)[2] = malloc(l->n * sizeof *h);
        if (!h) FAIL_RET(c, "out of memory");
        size_t n_copy = 0;
        for (size_t j = 0; j < l->n; j++) {
          if (!copied_entry(&l->e[j])) continue;
          char *t = json_text(l->e[j].value);
          h[n_copy][0] = tn_hash(s->seed, "value", s->langs[li], t);
          h[n_copy++][1] = j;
          free(t);
        }
        qsort(h, n_copy, sizeof *h, cmp_hash);
        const size_t k_dev = n_copy >= 3 ? n_held(n_copy, s->dev_fraction, 3) : 0;
        for (size_t j = 0; j < k_dev; j++) l->e[h[j][1]].held_out = true;
        free(h);
      }
      s->n_lists++;
    }
  }
}

const tn_list *tn_spec_list(const tn_spec *s, int func, const char *name, int lang) {
  char key[512];
  if (func >= 0 && name[0] != '_') {
    snprintf(key, sizeof key, "%s.%s", s->funcs[func].name, name);
    for (size_t i = 0; i < s->n_lists; i++)
      if (s->lists[i].lang == lang && strcmp(s->lists[i].key, key) == 0) return &s->lists[i];
  }
  for (size_t i = 0; i < s->n_lists; i++)
    if (s->lists[i].lang == lang && strcmp(s->lists[i].key, name) == 0) return &s->lists[i];
  return NULL;
}

/* The entries of list l against argument a of function f (once per triple). */
static void check_list_for(ctx *c, const tn_list *l, int f, int a) {
  for (size_t i = 0; i < c->n_checked; i++)
    if (c->checked[i].l == l && c->checked[i].f == f && c->checked[i].a == a) return;
  if (c->n_checked == c->cap_checked) {
    size_t cap = c->cap_checked ? c->cap_checked * 2 : 32;
    void *n = realloc(c->checked, cap * sizeof *c->checked);
    if (!n) FAIL_RET(c, "out of memory");
    c->checked = n, c->cap_checked = cap;
  }
  c->checked[c->n_checked].l = l, c->checked[c->n_checked].f = f, c->checked[c->n_checked].a = a;
  c->n_checked++;
  const tn_spec *s = c->s;
  const tn_arg *arg = &s->funcs[f].args[a];
  const char *lang = s->langs[l->lang];
  if (l->numbers) {
    if (arg->type != TN_T_INTEGER && arg->type != TN_T_NUMBER)
      fail(c, "values.%s.%s: {\"numbers\"} fills %s.%s, which is %s, not an integer", l->key, lang, s->funcs[f].name,
           arg->name, type_name(arg->type));
    else if (arg->enums)
      fail(c, "values.%s.%s: {\"numbers\"} cannot fill %s.%s, an enum", l->key, lang, s->funcs[f].name, arg->name);
    return;
  }
  for (size_t i = 0; i < l->n; i++) {
    char buf[512];
    const char *why = value_problem(arg, l->e[i].value, buf, sizeof buf);
    if (why) {
      char *t = json_text(l->e[i].value);
      fail(c, "values.%s.%s, entry %zu: the value %s %s, for %s.%s (%s)", l->key, lang, i + 1, t, why,
           s->funcs[f].name, arg->name, type_name(arg->type));
      free(t);
    }
  }
}

// ----------------------------------------------------------------------------------------------
// Phrasings: "(a|b)", "[x]", "{slot}", "{slot.form}", "{_name}"

static void node_free(tn_node *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n_kids; i++) node_free(n->kids[i]);
  free(n->kids), free(n->text), free(n->form), free(n);
}

static tn_node *node_new(int kind) {
  tn_node *n = calloc(1, sizeof *n);
  if (n) n->kind = kind, n->arg = -1;
  return n;
}

static bool node_add(tn_node *p, tn_node *k) {
  if (!k) return false;
  tn_node **nk = realloc(p->kids, (p->n_kids + 1) * sizeof *nk);
  if (!nk) return node_free(k), false;
  p->kids = nk;
  p->kids[p->n_kids++] = k;
  return true;
}

/* Parses a sequence up to (not including) one of the stop characters or the end. *why gets a message
 * on error (NULL return). */
static tn_node *parse_seq(const char **pp, const char *stop, const char **why) {
  tn_node *seq = node_new(TN_SEQ);
  if (!seq) return *why = "out of memory", NULL;
  const char *p = *pp;
  while (*p && !strchr(stop, *p)) {
    if (*p == '(') {
      p++;
      tn_node *alt = node_new(TN_ALT);
      if (!alt || !node_add(seq, alt)) return node_free(seq), *why = "out of memory", NULL;
      for (;;) {
        tn_node *br = parse_seq(&p, "|)]}", why);
        if (!br) return node_free(seq), NULL;
        node_add(alt, br);
        if (*p == '|') {
          p++;
          continue;
        }
        if (*p != ')') return node_free(seq), *why = *p ? "unbalanced '(': a ']' or '}' closes it" : "unbalanced '(': no ')'", NULL;
        p++;
        break;
      }
    } else if (*p == '[') {
      p++;
      tn_node *opt = node_new(TN_OPT);
      if (!opt || !node_add(seq, opt)) return node_free(seq), *why = "out of memory", NULL;
      tn_node *in = parse_seq(&p, "|)]}", why);
      if (!in) return node_free(seq), NULL;
      if (*p == '|') { /* [a|b]: one of them or nothing, as [(a|b)] */
        tn_node *alt = node_new(TN_ALT), *wrap = node_new(TN_SEQ);
        if (!alt || !wrap || !node_add(wrap, alt) || !node_add(alt, in))
          return node_free(alt), node_free(wrap), node_free(in), node_free(seq), *why = "out of memory", NULL;
        in = wrap;
        while (*p == '|') {
          p++;
          tn_node *br = parse_seq(&p, "|)]}", why);
          if (!br) return node_free(wrap), node_free(seq), NULL;
          node_add(alt, br);
        }
      }
      node_add(opt, in);
      if (*p != ']') return node_free(seq), *why = *p ? "unbalanced '[': a ')' or '}' closes it" : "unbalanced '[': no ']'", NULL;
      p++;
    } else if (*p == '{') {
      const char *q = ++p;
      while (*q && *q != '}' && *q != '{' && !strchr("()[]|", *q)) q++;
      if (*q != '}') return node_free(seq), *why = "unbalanced '{': no '}' after the slot's name", NULL;
      const char *dot = memchr(p, '.', (size_t)(q - p));
      const size_t nl = dot ? (size_t)(dot - p) : (size_t)(q - p);
      bool ok = nl > 0 && (!dot || q - dot > 1);
      for (const char *x = p; x < q && ok; x++)
        ok = (*x >= 'a' && *x <= 'z') || (*x >= 'A' && *x <= 'Z') || (*x >= '0' && *x <= '9') || *x == '_' || *x == '-' ||
             (x == dot);
      if (!ok) return node_free(seq), *why = "a slot is {name} or {name.form}: letters, digits, '_' and '-'", NULL;
      tn_node *sl = node_new(TN_SLOT);
      if (!sl || !node_add(seq, sl)) return node_free(seq), *why = "out of memory", NULL;
      sl->text = strndup(p, nl);
      sl->form = dot ? strndup(dot + 1, (size_t)(q - dot - 1)) : NULL;
      if (!sl->text || (dot && !sl->form)) return node_free(seq), *why = "out of memory", NULL;
      p = q + 1;
    } else if (*p == ')' || *p == ']' || *p == '}') {
      return node_free(seq), *why = *p == ')' ? "unbalanced ')'" : *p == ']' ? "unbalanced ']'" : "unbalanced '}'", NULL;
    } else if (*p == '|') {
      return node_free(seq), *why = "'|' outside (...)", NULL;
    } else {
      const char *q = p;
      while (*q && !strchr("()[]{}|", *q)) q++;
      tn_node *t = node_new(TN_TEXT);
      if (!t || !node_add(seq, t) || !(t->text = strndup(p, (size_t)(q - p)))) return node_free(seq), *why = "out of memory", NULL;
      p = q;
    }
  }
  *pp = p;
  return seq;
}

static tn_node *parse_pattern(const char *text, const char **why) {
  const char *p = text;
  tn_node *n = parse_seq(&p, ")]}|", why);
  if (n && *p) {
    *why = *p == ')' ? "unbalanced ')'" : *p == ']' ? "unbalanced ']'" : *p == '}' ? "unbalanced '}'" : "'|' outside (...)";
    node_free(n);
    return NULL;
  }
  return n;
}

/* The arguments every expansion sets (bit i: argument i). */
static uint64_t always_set(const tn_node *n) {
  uint64_t m = 0;
  switch (n->kind) {
    case TN_SLOT: return n->arg >= 0 && n->arg < 64 ? 1ull << n->arg : 0;
    case TN_SEQ:
      for (size_t i = 0; i < n->n_kids; i++) m |= always_set(n->kids[i]);
      return m;
    case TN_ALT:
      m = ~0ull;
      for (size_t i = 0; i < n->n_kids; i++) m &= always_set(n->kids[i]);
      return n->n_kids ? m : 0;
    default: return 0;
  }
}

/* Resolves the slots of phrasing ph (function f or -1, language li); where names it for messages. */
static void resolve(ctx *c, tn_node *n, int f, int li, const char *where) {
  tn_spec *s = c->s;
  for (size_t i = 0; i < n->n_kids; i++) resolve(c, n->kids[i], f, li, where);
  if (n->kind != TN_SLOT) return;
  const char *lang = s->langs[li];
  if (n->text[0] == '_') {
    n->list = tn_spec_list(s, -1, n->text, li);
    if (!n->list) fail(c, "%s: unknown {%s}: there is no text-only list values.%s.%s", where, n->text, n->text, lang);
  } else if (f < 0) {
    n->list = tn_spec_list(s, -1, n->text, li);
    if (!n->list) fail(c, "%s: no value list values.%s.%s fills {%s}", where, n->text, lang, n->text);
  } else {
    n->arg = arg_index(&s->funcs[f], n->text, strlen(n->text));
    if (n->arg < 0) {
      fail(c, "%s: {%s} names no argument of %s", where, n->text, s->funcs[f].name);
      return;
    }
    n->list = tn_spec_list(s, f, n->text, li);
    const tn_arg *a = &s->funcs[f].args[n->arg];
    if (!n->list) {
      fail(c, "%s: no value list fills {%s} in language %s (values.%s.%s.%s or values.%s.%s)%s", where, n->text, lang,
           s->funcs[f].name, n->text, lang, n->text, lang, a->enums ? "; an enum argument needs a list too" : "");
      return;
    }
    check_list_for(c, n->list, f, n->arg);
  }
  if (n->list && n->form) {
    bool any = false;
    for (size_t i = 0; i < n->list->n && !any; i++)
      any = n->list->e[i].forms && cJSON_GetObjectItemCaseSensitive(n->list->e[i].forms, n->form);
    if (!any) fail(c, "%s: {%s.%s}: no entry of values.%s.%s has the form '%s'", where, n->text, n->form, n->list->key, lang, n->form);
  }
}

static void add_phrasing(ctx *c, const cJSON *p, int f, int li, size_t idx) {
  tn_spec *s = c->s;
  const char *fname = f >= 0 ? s->funcs[f].name : "no_fit";
  char where[512];
  const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : p;
  const cJSON *fixed = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "args") : NULL;
  if (!cJSON_IsString(text) || !*text->valuestring) {
    snprintf(where, sizeof where, "%s, language %s, phrasing %zu", fname, s->langs[li], idx + 1);
    FAIL_RET(c, "%s: a phrasing is a string or {\"text\": \"...\", \"args\": {...}}", where);
  }
  snprintf(where, sizeof where, "function %s, language %s, phrasing \"%.160s\"", fname, s->langs[li], text->valuestring);
  if (f < 0) snprintf(where, sizeof where, "no_fit, language %s, phrasing \"%.160s\"", s->langs[li], text->valuestring);
  if (cJSON_IsObject(p)) {
    for (const cJSON *k = p->child; k; k = k->next)
      if (strcmp(k->string, "text") && strcmp(k->string, "args")) FAIL_RET(c, "%s: unknown key \"%s\" (text, args)", where, k->string);
    if (fixed && (!cJSON_IsObject(fixed) || f < 0)) FAIL_RET(c, "%s: \"args\" must be an object (and only for a function)", where);
  }
  const char *why = NULL;
  tn_node *root = parse_pattern(text->valuestring, &why);
  if (!root) FAIL_RET(c, "%s: %s", where, why);
  tn_phrasing *ph = &s->phr[s->n_phr++];
  ph->text = text->valuestring, ph->root = root, ph->fixed = fixed, ph->func = f, ph->lang = li;
  const int before = c->n_err;
  resolve(c, root, f, li, where);
  if (f < 0 || c->n_err != before) return;
  const tn_func *fn = &s->funcs[f];
  uint64_t have = always_set(root);
  for (const cJSON *v = fixed ? fixed->child : NULL; v; v = v->next) {
    const int ai = arg_index(fn, v->string, strlen(v->string));
    char buf[512];
    const char *w;
    if (ai < 0) {
      fail(c, "%s: fixed argument '%s': %s has no such argument", where, v->string, fn->name);
    } else if ((w = value_problem(&fn->args[ai], v, buf, sizeof buf))) {
      char *t = json_text(v);
      fail(c, "%s: fixed argument %s = %s %s (the catalog says %s)", where, v->string, t, w, type_name(fn->args[ai].type));
      free(t);
    }
    if (ai >= 0 && ai < 64) have |= 1ull << ai; /* set, even when its value is wrong (reported above) */
  }
  for (size_t i = 0; i < fn->n_args && i < 64; i++)
    if (fn->args[i].required && !(have & (1ull << i)))
      fail(c, "%s: the required argument '%s' is missing in some expansion (a slot {%s} inside [...] or in one branch of "
              "(...) sets it only when said)", where, fn->args[i].name, fn->args[i].name);
}

static void read_phrasings(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(s->json, "phrasings");
  const cJSON *nf = cJSON_GetObjectItemCaseSensitive(s->json, "no_fit");
  if (!cJSON_IsObject(ph)) FAIL_RET(c, "\"phrasings\" is missing or not an object (function -> language -> list)");
  if (nf && !cJSON_IsObject(nf)) FAIL_RET(c, "\"no_fit\" is not an object (language -> list)");
  size_t cap = 0;
  for (const cJSON *f = ph->child; f; f = f->next)
    for (const cJSON *l = cJSON_IsObject(f) ? f->child : NULL; l; l = l->next) cap += (size_t)cJSON_GetArraySize(l);
  for (const cJSON *l = nf ? nf->child : NULL; l; l = l->next) cap += (size_t)cJSON_GetArraySize(l);
  s->phr = calloc(cap ? cap : 1, sizeof *s->phr);
  if (!s->phr) FAIL_RET(c, "out of memory");
  for (const cJSON *f = ph->child; f; f = f->next) {
    const int fi = func_index(s, f->string);
    if (fi < 0) {
      fail(c, "phrasings.%s: the catalog has no function '%s'", f->string, f->string);
      continue;
    }
    if (!cJSON_IsObject(f)) {
      fail(c, "phrasings.%s: not an object (language -> list of phrasings)", f->string);
      continue;
    }
    for (const cJSON *l = f->child; l; l = l->next) {
      const int li = lang_index(s, l->string);
      if (li < 0) {
        fail(c, "phrasings.%s.%s: '%s' is not one of the spec's languages", f->string, l->string, l->string);
        continue;
      }
      if (!cJSON_IsArray(l)) {
        fail(c, "phrasings.%s.%s: not a list of phrasings", f->string, l->string);
        continue;
      }
      size_t i = 0;
      for (const cJSON *p = l->child; p; p = p->next, i++) add_phrasing(c, p, fi, li, i);
    }
  }
  for (size_t fi = 0; fi < s->n_funcs; fi++) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(ph, s->funcs[fi].name);
    for (size_t li = 0; li < s->n_langs; li++) {
      const cJSON *l = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, s->langs[li]) : NULL;
      if (!cJSON_IsArray(l) || !l->child)
        fail(c, "function %s has no phrasings in language %s (phrasings.%s.%s)", s->funcs[fi].name, s->langs[li],
             s->funcs[fi].name, s->langs[li]);
    }
  }
  for (const cJSON *l = nf ? nf->child : NULL; l; l = l->next) {
    const int li = lang_index(s, l->string);
    if (li < 0) {
      fail(c, "no_fit.%s: '%s' is not one of the spec's languages", l->string, l->string);
      continue;
    }
    if (!cJSON_IsArray(l)) {
      fail(c, "no_fit.%s: not a list of phrasings", l->string);
      continue;
    }
    size_t i = 0;
    for (const cJSON *p = l->child; p; p = p->next, i++) {
      if (cJSON_IsObject(p)) {
        fail(c, "no_fit.%s, phrasing %zu: a no_fit phrasing is a string", l->string, i + 1);
        continue;
      }
      add_phrasing(c, p, -1, li, i);
    }
  }
}

/* "no_new_names": value lists whose values are a closed class (colours): never replaced by new names. */
static void read_no_new_names(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(s->json, "no_new_names");
  if (!a) return;
  if (!cJSON_IsArray(a)) FAIL_RET(c, "\"no_new_names\" must be a list of value list names");
  for (const cJSON *k = a->child; k; k = k->next) {
    bool found = false;
    for (size_t i = 0; cJSON_IsString(k) && i < s->n_lists; i++)
      if (!strcmp(s->lists[i].key, k->valuestring)) s->lists[i].no_new_names = found = true;
    if (!found) fail(c, "no_new_names: no value list is named %s", cJSON_IsString(k) ? k->valuestring : "(not a string)");
  }
}

/* The train/dev split of phrasings: per (function, language), by the seeded hash of the text. */
static void split_phrasings(ctx *c) {
  tn_spec *s = c->s;
  uint64_t(*h)[2] = malloc((s->n_phr ? s->n_phr : 1) * sizeof *h);
  if (!h) FAIL_RET(c, "out of memory");
  for (int f = -1; f < (int)s->n_funcs; f++) {
    for (size_t li = 0; li < s->n_langs; li++) {
      size_t n = 0;
      for (size_t i = 0; i < s->n_phr; i++) {
        if (s->phr[i].func != f || s->phr[i].lang != (int)li) continue;
        h[n][0] = tn_hash(s->seed, f >= 0 ? s->funcs[f].name : "\x01no_fit", s->langs[li], s->phr[i].text);
        h[n][1] = i;
        n++;
      }
      qsort(h, n, sizeof *h, cmp_hash);
      const size_t k = n_held(n, s->dev_fraction, 3);
      for (size_t j = 0; j < k; j++) s->phr[h[j][1]].dev = true;
    }
  }
  free(h);
}

// ----------------------------------------------------------------------------------------------
// The rest of the spec

static void read_examples(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *ex = cJSON_GetObjectItemCaseSensitive(s->json, "examples");
  if (!ex) return;
  if (!cJSON_IsArray(ex)) FAIL_RET(c, "\"examples\" is not a list");
  s->ex = calloc((size_t)cJSON_GetArraySize(ex) + 1, sizeof *s->ex);
  if (!s->ex) FAIL_RET(c, "out of memory");
  size_t i = 0;
  for (const cJSON *e = ex->child; e; e = e->next, i++) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "utterance");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "lang");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "expected");
    const cJSON *use = cJSON_GetObjectItemCaseSensitive(e, "use");
    char where[300];
    snprintf(where, sizeof where, "examples[%zu] \"%.120s\"", i, cJSON_IsString(u) ? u->valuestring : "?");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(x, "calls"), *text = cJSON_GetObjectItemCaseSensitive(x, "text");
    if (!cJSON_IsObject(e) || !cJSON_IsString(u) || !*u->valuestring) {
      fail(c, "%s: needs an \"utterance\" string", where);
      continue;
    }
    if (!cJSON_IsString(l) || lang_index(s, l->valuestring) < 0) {
      fail(c, "%s: \"lang\" must be one of the spec's languages", where);
      continue;
    }
    if (use && !(cJSON_IsString(use) && (!strcmp(use->valuestring, "dev") || !strcmp(use->valuestring, "train")))) {
      fail(c, "%s: \"use\" is \"dev\" or \"train\"", where);
      continue;
    }
    for (const cJSON *k = e->child; k; k = k->next)
      if (strcmp(k->string, "utterance") && strcmp(k->string, "lang") && strcmp(k->string, "expected") && strcmp(k->string, "use"))
        fail(c, "%s: unknown key \"%s\" (utterance, lang, expected, use)", where, k->string);
    if (!cJSON_IsObject(x) || (calls != NULL) == (text != NULL) || (calls && (!cJSON_IsArray(calls) || !calls->child)) ||
        (text && !cJSON_IsString(text))) {
      fail(c, "%s: \"expected\" is {\"calls\": [{\"name\", \"args\"}]} or {\"text\": \"...\"}", where);
      continue;
    }
    int bad = 0;
    for (const cJSON *call = calls ? calls->child : NULL; call; call = call->next) bad += check_call(c, where, call) < 0;
    if (calls && cJSON_GetArraySize(calls) > 1) fail(c, "%s: tune trains one call per utterance", where), bad++;
    if (bad) continue;
    tn_example *t = &s->ex[s->n_ex++];
    t->utterance = u->valuestring, t->lang = lang_index(s, l->valuestring), t->expected = x;
    t->train = use && !strcmp(use->valuestring, "train");
  }
}

/* lang -> value object of the spec (no_fit_answers, fillers): checks the languages. */
static void per_lang(ctx *c, const char *key, const cJSON **out_obj) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(c->s->json, key);
  *out_obj = o;
  if (!o) return;
  if (!cJSON_IsObject(o)) FAIL_RET(c, "\"%s\" is not an object (language -> ...)", key);
  for (const cJSON *l = o->child; l; l = l->next)
    if (lang_index(c->s, l->string) < 0) fail(c, "%s.%s: '%s' is not one of the spec's languages", key, l->string, l->string);
}

static void read_top(ctx *c) {
  tn_spec *s = c->s;
  static const char *const keys[] = {"catalog", "languages", "phrasings", "values", "no_fit", "no_fit_answers",
                                     "examples", "fillers", "seed", "train_examples", "dev_fraction", "p_no_fit",
                                     "p_new_names", "no_new_names"};
  for (const cJSON *k = s->json->child; k; k = k->next) {
    bool ok = false;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !ok; i++) ok = strcmp(k->string, keys[i]) == 0;
    if (!ok)
      fail(c, "unknown key \"%s\" (catalog, languages, phrasings, values, no_fit, no_fit_answers, examples, fillers, seed, "
              "train_examples, dev_fraction, p_no_fit, p_new_names, no_new_names)", k->string);
  }
  const cJSON *v;
  s->seed = 1, s->train_examples = 40000, s->dev_fraction = 0.2, s->p_no_fit = 0.08, s->p_new_names = 0.3;
  if ((v = cJSON_GetObjectItemCaseSensitive(s->json, "seed"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9e15)
      fail(c, "\"seed\" must be a non-negative integer");
    else s->seed = (uint64_t)v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(s->json, "train_examples"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 10000000 || v->valuedouble != floor(v->valuedouble))
      fail(c, "\"train_examples\" must be an integer from 1 to 10,000,000");
    else s->train_examples = (uint32_t)v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(s->json, "dev_fraction"))) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < 1)) fail(c, "\"dev_fraction\" must be in [0, 1)");
    else s->dev_fraction = v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(s->json, "p_new_names"))) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1)) fail(c, "\"p_new_names\" must be in [0, 1]");
    else s->p_new_names = v->valuedouble;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(s->json, "p_no_fit"))) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1)) fail(c, "\"p_no_fit\" must be in [0, 1]");
    else s->p_no_fit = v->valuedouble;
  }
}

static void read_langs(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(s->json, "languages");
  if (!cJSON_IsArray(l) || !l->child) FAIL_RET(c, "\"languages\" is missing or not a non-empty list, e.g. [\"de\", \"en\"]");
  const cJSON *cl = cJSON_IsObject(s->catalog_json) ? cJSON_GetObjectItemCaseSensitive(s->catalog_json, "languages") : NULL;
  for (const cJSON *x = l->child; x; x = x->next) {
    if (!cJSON_IsString(x) || !*x->valuestring) {
      fail(c, "\"languages\": every entry is a language code string");
      continue;
    }
    if (lang_index(s, x->valuestring) >= 0) {
      fail(c, "\"languages\": '%s' is listed twice", x->valuestring);
      continue;
    }
    if (cJSON_IsArray(cl)) {
      bool found = false;
      char list[256] = "";
      size_t n = 0;
      for (const cJSON *y = cl->child; y; y = y->next) {
        if (cJSON_IsString(y)) {
          found = found || strcmp(y->valuestring, x->valuestring) == 0;
          if (n < sizeof list) n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", y->valuestring);
        }
      }
      if (!found) {
        fail(c, "language '%s' is not one the catalog lists (its \"languages\": %s)", x->valuestring, list);
        continue;
      }
    }
    if (s->n_langs == TN_MAX_LANGS) FAIL_RET(c, "\"languages\": at most %d", TN_MAX_LANGS);
    s->langs[s->n_langs++] = x->valuestring;
  }
}

static void read_answers_and_fillers(ctx *c) {
  tn_spec *s = c->s;
  const cJSON *ans, *fill;
  per_lang(c, "no_fit_answers", &ans);
  per_lang(c, "fillers", &fill);
  for (size_t li = 0; li < s->n_langs; li++) {
    const cJSON *a = cJSON_IsObject(ans) ? cJSON_GetObjectItemCaseSensitive(ans, s->langs[li]) : NULL;
    if (a && (!cJSON_IsString(a) || !*a->valuestring)) fail(c, "no_fit_answers.%s is not a non-empty string", s->langs[li]);
    s->no_fit_answer[li] = cJSON_IsString(a) && *a->valuestring ? a->valuestring
                           : strcmp(s->langs[li], "de") == 0    ? "Das kann ich leider nicht."
                                                                : "I can't do that.";
    const cJSON *f = cJSON_IsObject(fill) ? cJSON_GetObjectItemCaseSensitive(fill, s->langs[li]) : NULL;
    if (!f) continue;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(f, "before"), *e = cJSON_GetObjectItemCaseSensitive(f, "after");
    bool ok = cJSON_IsObject(f) && (!b || strings_array(b)) && (!e || strings_array(e));
    for (const cJSON *k = cJSON_IsObject(f) ? f->child : NULL; k && ok; k = k->next) ok = !strcmp(k->string, "before") || !strcmp(k->string, "after");
    if (!ok) {
      fail(c, "fillers.%s: must be {\"before\": [\"Hey, \"], \"after\": [\" bitte\"]} (lists of non-empty strings)", s->langs[li]);
      continue;
    }
    s->fill_before[li] = b, s->fill_after[li] = e;
  }
}

tn_spec *tn_spec_load(const char *path) {
  tn_spec *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  ctx c = {.s = s};
  s->path = strdup(path);
  const char *slash = strrchr(path, '/');
  s->dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup("");
  size_t len;
  char *text = read_all(path, &len);
  if (!text) {
    fprintf(stderr, "fgemma: error: cannot read the spec %s\n", path);
    tn_spec_free(s);
    return NULL;
  }
  s->json = cJSON_ParseWithLength(text, len);
  if (!s->json || !cJSON_IsObject(s->json)) {
    const char *at = cJSON_GetErrorPtr();
    size_t line = 1;
    for (const char *p = text; at && p < at && *p; p++) line += *p == '\n';
    fprintf(stderr, "fgemma: error: %s: not a JSON object (the JSON breaks near line %zu)\n", path, line);
    free(text);
    tn_spec_free(s);
    return NULL;
  }
  free(text);
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(s->json, "catalog");
  if (!cJSON_IsString(cat) || !*cat->valuestring) {
    fail(&c, "\"catalog\" is missing: the tool catalog's path, relative to the spec");
  } else {
    const size_t n = strlen(s->dir) + strlen(cat->valuestring) + 1;
    s->catalog_path = malloc(n);
    if (s->catalog_path)
      snprintf(s->catalog_path, n, "%s%s", cat->valuestring[0] == '/' ? "" : s->dir, cat->valuestring);
    s->catalog_text = s->catalog_path ? read_all(s->catalog_path, &s->catalog_len) : NULL;
    fg_error err = {0};
    if (!s->catalog_text) fail(&c, "cannot read the catalog %s", s->catalog_path ? s->catalog_path : cat->valuestring);
    else if (fg_catalog_parse(s->catalog_text, s->catalog_len, &s->catalog, &err) != FG_OK)
      fail(&c, "catalog %s: %s", s->catalog_path, err.msg);
    else if (!(s->catalog_json = cJSON_ParseWithLength(s->catalog_text, s->catalog_len)))
      fail(&c, "catalog %s: not JSON", s->catalog_path);
    else read_catalog(&c);
  }
  read_top(&c);
  if (!c.n_err) read_langs(&c);
  if (!c.n_err) {
    read_values(&c);
    read_phrasings(&c);
    read_examples(&c);
    read_answers_and_fillers(&c);
  }
  if (!c.n_err) read_no_new_names(&c);
  if (!c.n_err) split_phrasings(&c);
  free(c.checked);
  if (c.n_err) {
    if (c.n_err > MAX_ERRORS) fprintf(stderr, "fgemma: error: %s: ... %d problems in all\n", path, c.n_err);
    tn_spec_free(s);
    return NULL;
  }
  return s;
}

void tn_spec_free(tn_spec *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_phr; i++) node_free(s->phr[i].root);
  for (size_t i = 0; i < s->n_lists; i++) free(s->lists[i].e);
  for (size_t i = 0; i < s->n_funcs; i++) free(s->funcs[i].args);
  free(s->phr), free(s->lists), free(s->funcs), free(s->ex);
  fg_catalog_free(s->catalog);
  cJSON_Delete(s->catalog_json);
  cJSON_Delete(s->json);
  free(s->catalog_text), free(s->catalog_path), free(s->dir), free(s->path);
  free(s);
}

// ----------------------------------------------------------------------------------------------
// The model's answer

static bool value_text(const cJSON *v, tn_buf *o) {
  char num[64];
  if (cJSON_IsBool(v)) return tn_buf_str(o, cJSON_IsTrue(v) ? "true" : "false");
  if (cJSON_IsNumber(v)) {
    const double d = v->valuedouble;
    if (d == floor(d) && fabs(d) < 1e15) snprintf(num, sizeof num, "%lld", (long long)d);
    else {
      snprintf(num, sizeof num, "%.15g", d);
      if (strtod(num, NULL) != d) snprintf(num, sizeof num, "%.17g", d);
    }
    return tn_buf_str(o, num);
  }
  if (cJSON_IsString(v)) return tn_buf_str(o, "<escape>") && tn_buf_str(o, v->valuestring) && tn_buf_str(o, "<escape>");
  return false;
}

bool tn_answer_text(const tn_spec *s, const cJSON *expected, tn_buf *out) {
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(expected, "text");
  if (cJSON_IsString(text)) return tn_buf_str(out, text->valuestring) && tn_buf_str(out, "<end_of_turn>");
  const cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(expected, "calls"), 0);
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(call, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "args");
  const int fi = cJSON_IsString(nm) ? func_index(s, nm->valuestring) : -1;
  if (fi < 0) return false;
  bool ok = tn_buf_str(out, "<start_function_call>call:") && tn_buf_str(out, nm->valuestring) && tn_buf_str(out, "{");
  bool first = true;
  for (size_t i = 0; i < s->funcs[fi].n_args && ok; i++) {
    const cJSON *v = args ? cJSON_GetObjectItemCaseSensitive(args, s->funcs[fi].args[i].name) : NULL;
    if (!v) continue;
    ok = (first || tn_buf_str(out, ",")) && tn_buf_str(out, s->funcs[fi].args[i].name) && tn_buf_str(out, ":") &&
         value_text(v, out);
    first = false;
  }
  return ok && tn_buf_str(out, "}<end_function_call>");
}
