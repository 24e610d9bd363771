/* parse.c — FunctionGemma output (decoded text, control tokens by name) -> JSON calls; stop rule.
 *
 * Grammar accepted (lenient where the model may be sloppy, see catalog.h for the JSON produced):
 *   gen   := (prose | call | "<end_function_call>")* [stop]
 *   stop  := "<end_of_turn>" | "<eos>" | "<start_function_response>" | "<start_of_turn>"
 *   call  := "<start_function_call>" ws "call:" NAME ws object ws ["<end_function_call>"]
 *   object:= "{" [member ("," member)* [","]] "}"        member := key ws ":" value
 *   key   := [A-Za-z0-9_.-]+ (bytes >= 0x80 too) | "<escape>" any "<escape>"
 *   value := "<escape>" any "<escape>" | object | "[" [value ("," value)*] "]" | bare
 *   bare  := bytes up to , { } [ ] < (trimmed): a JSON number, true, false, null, else a string
 * White space is allowed around every token. Parsing builds a small tree whose strings point into
 * the generation (no copies), checks it against the catalog, then writes JSON. */
#include "nlu/catalog.h"
#include "nlu/nlu_text.h"

#include <string.h>

#define T_SCALL "<start_function_call>"
#define T_ECALL "<end_function_call>"
#define T_SRESP "<start_function_response>"
#define T_EOT "<end_of_turn>"
#define T_EOS "<eos>"
#define T_SOT "<start_of_turn>"
#define T_ESC "<escape>"
#define LIT(x) (x), (sizeof(x) - 1)

#define MAX_VALUE_DEPTH 64 /* nesting of {..}/[..] inside a call */

// ----------------------------------------------------------------------------
// Parse tree

typedef enum node_kind { N_STRING, N_NUMBER, N_BOOL, N_NULL, N_OBJECT, N_ARRAY } node_kind;

/* validation marks on the top-level members of a call's args */
#define ARG_UNKNOWN 0x1u
#define ARG_BAD_TYPE 0x2u
#define ARG_BAD_ENUM 0x4u
#define ARG_DUPLICATE 0x8u

typedef struct node {
  uint8_t kind;     /* node_kind */
  uint8_t is_int;   /* N_NUMBER: no fraction, no exponent */
  uint8_t marks;    /* ARG_* */
  const char *s;    /* (n) N_STRING: content; N_NUMBER/N_BOOL/N_NULL: the literal text */
  size_t n;
  const char *key;  /* (key_n) when a member of an object */
  size_t key_n;
  int32_t first, last, next; /* children (objects, arrays) and siblings; -1 = none */
} node;

typedef struct call_rec {
  const char *name; /* (name_n) */
  size_t name_n;
  int32_t args;     /* N_OBJECT node, or -1 when the parser never reached the "{" */
  bool truncated;
  bool malformed;
} call_rec;

typedef struct span {
  const char *p;
  size_t n;
} span;

typedef enum res { R_OK = 0, R_TRUNC = 1, R_BAD = 2 } res;

typedef struct parser {
  const char *p, *end; /* cursor over the generation */
  node *nodes;         /* (n_nodes) */
  size_t n_nodes, cap_nodes;
  call_rec *calls;     /* (n_calls) */
  size_t n_calls, cap_calls;
  span *prose;         /* (n_prose) */
  size_t n_prose, cap_prose;
  bool oom;
} parser;

static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) return false;
    nc *= 2;
  }
  if (nc > SIZE_MAX / elem) return false;
  void *q = fg_realloc(*arr, nc * elem);
  if (!q) return false;
  *arr = q;
  *cap = nc;
  return true;
}

static int32_t new_node(parser *ps, node_kind kind, const char *s, size_t n) {
  if (ps->n_nodes >= (size_t)INT32_MAX ||
      !grow((void **)&ps->nodes, &ps->cap_nodes, ps->n_nodes + 1, sizeof(node))) {
    ps->oom = true;
    return -1;
  }
  node *nd = &ps->nodes[ps->n_nodes];
  memset(nd, 0, sizeof *nd);
  nd->kind = (uint8_t)kind;
  nd->s = s;
  nd->n = n;
  nd->first = nd->last = nd->next = -1;
  return (int32_t)ps->n_nodes++;
}

static void add_child(parser *ps, int32_t parent, int32_t child) {
  node *p = &ps->nodes[parent];
  if (p->last < 0)
    p->first = child;
  else
    ps->nodes[p->last].next = child;
  p->last = child;
}

static void add_prose(parser *ps, const char *p, size_t n) {
  if (!grow((void **)&ps->prose, &ps->cap_prose, ps->n_prose + 1, sizeof(span))) {
    ps->oom = true;
    return;
  }
  ps->prose[ps->n_prose].p = p;
  ps->prose[ps->n_prose].n = n;
  ps->n_prose++;
}

// ----------------------------------------------------------------------------
// Lexing helpers

static bool at(const parser *ps, const char *lit, size_t n) {
  return (size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lit, n) == 0;
}

static bool at_stop(const parser *ps) {
  return at(ps, LIT(T_EOT)) || at(ps, LIT(T_EOS)) || at(ps, LIT(T_SRESP)) || at(ps, LIT(T_SOT));
}

/* where a call's inside must end: a stop, another call, or the end of this call */
static bool at_boundary(const parser *ps) {
  return at_stop(ps) || at(ps, LIT(T_SCALL)) || at(ps, LIT(T_ECALL));
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static void skip_ws(parser *ps) {
  while (ps->p < ps->end && is_ws(*ps->p)) ps->p++;
}

static bool is_name_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c >= 0x80;
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number(const char *s, size_t n, bool *is_int) {
  size_t i = 0;
  *is_int = true;
  if (i < n && s[i] == '-') i++;
  if (i >= n) return false;
  if (s[i] == '0') {
    i++;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  } else {
    return false;
  }
  if (i < n && s[i] == '.') {
    i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return false;
    *is_int = false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return false;
    *is_int = false;
  }
  return i == n;
}

static bool is_bare_stop(char c) {
  return c == ',' || c == '{' || c == '}' || c == '[' || c == ']' || c == '<';
}

static bool lit_eq(const char *s, size_t n, const char *z) { return strlen(z) == n && memcmp(s, z, n) == 0; }

// ----------------------------------------------------------------------------
// Values

static res parse_value(parser *ps, unsigned depth, int32_t *out);

/* After "<escape>": the content up to the closing "<escape>". */
static res parse_escaped(parser *ps, const char **s, size_t *n) {
  const char *start = ps->p;
  while (ps->p < ps->end) {
    if (*ps->p == '<') {
      if (at(ps, LIT(T_ESC))) {
        *s = start;
        *n = (size_t)(ps->p - start);
        ps->p += sizeof(T_ESC) - 1;
        return R_OK;
      }
      if (at_boundary(ps)) return R_TRUNC; /* unterminated; the control token is left for the caller */
    }
    ps->p++;
  }
  return R_TRUNC;
}

static res parse_object(parser *ps, unsigned depth, int32_t *out) {
  *out = -1;
  if (depth > MAX_VALUE_DEPTH) return R_BAD;
  int32_t obj = new_node(ps, N_OBJECT, ps->p, 0);
  if (obj < 0) return R_BAD;
  *out = obj;
  ps->p++; /* '{' */
  for (;;) {
    skip_ws(ps);
    if (ps->p >= ps->end) return R_TRUNC;
    if (*ps->p == '}') {
      ps->p++;
      return R_OK;
    }
    if (at_boundary(ps)) return R_TRUNC;
    const char *key;
    size_t key_n;
    if (at(ps, LIT(T_ESC))) {
      ps->p += sizeof(T_ESC) - 1;
      res r = parse_escaped(ps, &key, &key_n);
      if (r != R_OK) return r;
    } else {
      key = ps->p;
      while (ps->p < ps->end && is_name_char((unsigned char)*ps->p)) ps->p++;
      key_n = (size_t)(ps->p - key);
      if (key_n == 0) return R_BAD;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) return R_TRUNC;
    if (*ps->p != ':') return at_boundary(ps) ? R_TRUNC : R_BAD;
    ps->p++;
    int32_t v;
    res r = parse_value(ps, depth + 1, &v);
    if (r != R_OK) return r; /* an unfinished member is dropped */
    ps->nodes[v].key = key;
    ps->nodes[v].key_n = key_n;
    add_child(ps, obj, v);
    skip_ws(ps);
    if (ps->p >= ps->end) return R_TRUNC;
    if (*ps->p == ',') {
      ps->p++;
    } else if (*ps->p != '}') {
      return at_boundary(ps) ? R_TRUNC : R_BAD;
    }
  }
}

static res parse_array(parser *ps, unsigned depth, int32_t *out) {
  *out = -1;
  if (depth > MAX_VALUE_DEPTH) return R_BAD;
  int32_t arr = new_node(ps, N_ARRAY, ps->p, 0);
  if (arr < 0) return R_BAD;
  *out = arr;
  ps->p++; /* '[' */
  for (;;) {
    skip_ws(ps);
    if (ps->p >= ps->end) return R_TRUNC;
    if (*ps->p == ']') {
      ps->p++;
      return R_OK;
    }
    int32_t v;
    res r = parse_value(ps, depth + 1, &v);
    if (r != R_OK) return r;
    add_child(ps, arr, v);
    skip_ws(ps);
    if (ps->p >= ps->end) return R_TRUNC;
    if (*ps->p == ',') {
      ps->p++;
    } else if (*ps->p != ']') {
      return at_boundary(ps) ? R_TRUNC : R_BAD;
    }
  }
}

static res parse_value(parser *ps, unsigned depth, int32_t *out) {
  *out = -1;
  skip_ws(ps);
  if (ps->p >= ps->end) return R_TRUNC;
  if (at(ps, LIT(T_ESC))) {
    ps->p += sizeof(T_ESC) - 1;
    const char *s;
    size_t n;
    res r = parse_escaped(ps, &s, &n);
    if (r != R_OK) return r;
    *out = new_node(ps, N_STRING, s, n);
    return *out < 0 ? R_BAD : R_OK;
  }
  if (*ps->p == '{') return parse_object(ps, depth, out);
  if (*ps->p == '[') return parse_array(ps, depth, out);
  if (at_boundary(ps)) return R_TRUNC;

  const char *s = ps->p;
  while (ps->p < ps->end && !is_bare_stop(*ps->p)) ps->p++;
  if (ps->p >= ps->end) return R_TRUNC; /* the literal may have been cut */
  size_t n = (size_t)(ps->p - s);
  while (n && is_ws(s[n - 1])) n--;
  if (n == 0) return R_BAD;
  bool is_int;
  node_kind k = N_STRING;
  if (json_number(s, n, &is_int))
    k = N_NUMBER;
  else if (lit_eq(s, n, "true") || lit_eq(s, n, "false"))
    k = N_BOOL;
  else if (lit_eq(s, n, "null"))
    k = N_NULL;
  *out = new_node(ps, k, s, n);
  if (*out < 0) return R_BAD;
  ps->nodes[*out].is_int = (uint8_t)(k == N_NUMBER && is_int);
  return R_OK;
}

// ----------------------------------------------------------------------------
// Calls

/* After a syntax error: skip to this call's end (consumed) or to a stop/next call (left). */
static void recover(parser *ps, call_rec *c) {
  while (ps->p < ps->end) {
    if (*ps->p == '<') {
      if (at(ps, LIT(T_ECALL))) {
        ps->p += sizeof(T_ECALL) - 1;
        return;
      }
      if (at_stop(ps) || at(ps, LIT(T_SCALL))) {
        c->truncated = true;
        return;
      }
    }
    ps->p++;
  }
  c->truncated = true;
}

static void parse_call(parser *ps) {
  if (!grow((void **)&ps->calls, &ps->cap_calls, ps->n_calls + 1, sizeof(call_rec))) {
    ps->oom = true;
    ps->p = ps->end;
    return;
  }
  call_rec *c = &ps->calls[ps->n_calls++];
  memset(c, 0, sizeof *c);
  c->name = "";
  c->args = -1;

  skip_ws(ps);
  size_t rest = (size_t)(ps->end - ps->p);
  if (!at(ps, LIT("call:"))) {
    if (rest < 5 && memcmp(ps->p, "call:", rest) == 0) { /* cut inside "call:" */
      c->truncated = true;
      ps->p = ps->end;
      return;
    }
    c->malformed = true;
    recover(ps, c);
    return;
  }
  ps->p += 5;
  skip_ws(ps);
  const char *name = ps->p;
  while (ps->p < ps->end && is_name_char((unsigned char)*ps->p)) ps->p++;
  c->name = name;
  c->name_n = (size_t)(ps->p - name);
  skip_ws(ps);
  if (ps->p >= ps->end) {
    c->truncated = true;
    return;
  }
  if (c->name_n == 0 || *ps->p != '{') {
    if (at_stop(ps) || at(ps, LIT(T_SCALL))) {
      c->truncated = true;
      return;
    }
    c->malformed = true;
    recover(ps, c);
    return;
  }
  res r = parse_object(ps, 0, &c->args);
  if (ps->oom) return;
  if (r == R_TRUNC) {
    c->truncated = true;
    return;
  }
  if (r == R_BAD) {
    c->malformed = true;
    recover(ps, c);
    return;
  }
  skip_ws(ps);
  if (at(ps, LIT(T_ECALL))) {
    ps->p += sizeof(T_ECALL) - 1;
  } else if (ps->p >= ps->end) {
    c->truncated = true; /* no <end_function_call> */
  }
}

static void parse_gen(parser *ps) {
  while (ps->p < ps->end && !ps->oom) {
    if (*ps->p == '<') {
      if (at_stop(ps)) return;
      if (at(ps, LIT(T_SCALL))) {
        ps->p += sizeof(T_SCALL) - 1;
        parse_call(ps);
        continue;
      }
      if (at(ps, LIT(T_ECALL))) { /* stray */
        ps->p += sizeof(T_ECALL) - 1;
        continue;
      }
    }
    const char *s = ps->p++;
    while (ps->p < ps->end && *ps->p != '<') ps->p++;
    add_prose(ps, s, (size_t)(ps->p - s));
  }
}

// ----------------------------------------------------------------------------
// Checking against the catalog

static bool same_key(const node *a, const node *b) { return a->key_n == b->key_n && memcmp(a->key, b->key, a->key_n) == 0; }

/* trimmed content of a string node */
static void trimmed(const node *nd, const char **s, size_t *n) {
  const char *p = nd->s;
  size_t k = nd->n;
  while (k && is_ws(*p)) {
    p++;
    k--;
  }
  while (k && is_ws(p[k - 1])) k--;
  *s = p;
  *n = k;
}

/* Coerces nd to the declared type when that loses nothing; returns ARG_* marks. */
static uint8_t check_value(node *nd, const fg_param *decl) {
  if (nd->kind == N_NULL) return decl->nullable ? 0 : ARG_BAD_TYPE;
  const char *s;
  size_t n;
  bool is_int;
  switch (decl->type) {
    case FG_PARAM_STRING:
      if (nd->kind == N_NUMBER || nd->kind == N_BOOL) nd->kind = N_STRING; /* keep the literal text */
      if (nd->kind != N_STRING) return ARG_BAD_TYPE;
      if (decl->n_enum && fg_param_enum_index(decl, nd->s, nd->n) < 0) return ARG_BAD_ENUM;
      return 0;
    case FG_PARAM_INTEGER:
    case FG_PARAM_NUMBER:
      if (nd->kind == N_STRING) {
        trimmed(nd, &s, &n);
        if (!json_number(s, n, &is_int)) return ARG_BAD_TYPE;
        nd->kind = N_NUMBER;
        nd->s = s;
        nd->n = n;
        nd->is_int = is_int;
      }
      if (nd->kind != N_NUMBER) return ARG_BAD_TYPE;
      return (decl->type == FG_PARAM_INTEGER && !nd->is_int) ? ARG_BAD_TYPE : 0;
    case FG_PARAM_BOOLEAN:
      if (nd->kind == N_STRING) {
        trimmed(nd, &s, &n);
        if (!lit_eq(s, n, "true") && !lit_eq(s, n, "false")) return ARG_BAD_TYPE;
        nd->kind = N_BOOL;
        nd->s = s;
        nd->n = n;
      }
      return nd->kind == N_BOOL ? 0 : ARG_BAD_TYPE;
    case FG_PARAM_ARRAY: return nd->kind == N_ARRAY ? 0 : ARG_BAD_TYPE;
    case FG_PARAM_OBJECT: return nd->kind == N_OBJECT ? 0 : ARG_BAD_TYPE;
  }
  return 0;
}

static void check_call(parser *ps, const fg_function *fn, const call_rec *c) {
  if (c->args < 0) return;
  for (int32_t i = ps->nodes[c->args].first; i >= 0; i = ps->nodes[i].next) {
    node *nd = &ps->nodes[i];
    for (int32_t j = ps->nodes[c->args].first; j != i; j = ps->nodes[j].next) {
      if (same_key(&ps->nodes[j], nd)) {
        nd->marks |= ARG_DUPLICATE;
        break;
      }
    }
    if (nd->marks & ARG_DUPLICATE) continue;
    if (!fn) continue;
    const fg_param *decl = fg_param_find(&fn->params, nd->key, nd->key_n);
    nd->marks |= decl ? check_value(nd, decl) : ARG_UNKNOWN;
  }
}

// ----------------------------------------------------------------------------
// Name snapping (functiongemma_official_format_cases.json, engine_stop_rules.name_snapping):
// exact -> case/punctuation-insensitive -> Levenshtein <= 2 on the normalized names (and less than
// half the generated name's normalized length, so that very short names do not snap); only a unique
// best match snaps.

/* lower-case letters and digits of s, at most cap bytes; returns the length */
static size_t normalize_name(const char *s, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap; i++) {
    char ch = s[i];
    if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) out[k++] = ch;
  }
  return k;
}

/* edit distance, giving up (returning limit + 1) once it must exceed limit */
static size_t levenshtein(const char *a, size_t na, const char *b, size_t nb, size_t limit) {
  size_t row[FG_CATALOG_MAX_NAME + 1];
  if (na > FG_CATALOG_MAX_NAME || nb > FG_CATALOG_MAX_NAME) return limit + 1;
  if ((na > nb ? na - nb : nb - na) > limit) return limit + 1;
  for (size_t j = 0; j <= nb; j++) row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0], best = row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j];
      size_t v = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
      if (v < best) best = v;
    }
    if (best > limit) return limit + 1;
  }
  return row[nb];
}

static const fg_function *snap_name(const fg_catalog *c, const char *name, size_t n) {
  char want[FG_CATALOG_MAX_NAME], have[FG_CATALOG_MAX_NAME];
  if (n == 0 || n > FG_CATALOG_MAX_NAME) return NULL;
  size_t nw = normalize_name(name, n, want, sizeof want);
  if (nw == 0) return NULL;
  const fg_function *best = NULL;
  size_t best_d = 3;
  bool tie = false;
  for (size_t i = 0; i < fg_catalog_n_functions(c); i++) {
    const fg_function *f = fg_catalog_function(c, i);
    size_t nh = normalize_name(f->name, strlen(f->name), have, sizeof have);
    size_t d = levenshtein(want, nw, have, nh, 2);
    if (d > 0 && 2 * d >= nw) continue; /* "x" must not snap to "ab" */
    if (d < best_d) {
      best = f;
      best_d = d;
      tie = false;
    } else if (d == best_d && d <= 2) {
      tie = true;
    }
  }
  return (best && !tie) ? best : NULL;
}

// ----------------------------------------------------------------------------
// JSON output

/* A JSON string literal through fg_json_quote (src/core/utf8.c), written into the sink's free room. */
static void json_str(fg_sink *o, const char *str, size_t n) {
  const size_t room = o->len < o->cap ? o->cap - o->len : 0;
  size_t need = 0;
  fg_json_quote(str, n, room ? o->buf + o->len : NULL, room, &need);
  o->len = need > SIZE_MAX - o->len ? SIZE_MAX : o->len + need;
}

static void json_value(fg_sink *o, const parser *ps, int32_t idx);

static void json_members(fg_sink *o, const parser *ps, int32_t obj, bool skip_marked_dups) {
  fg_sink_putc(o, '{');
  bool first = true;
  for (int32_t i = ps->nodes[obj].first; i >= 0; i = ps->nodes[i].next) {
    const node *nd = &ps->nodes[i];
    bool dup = false;
    if (skip_marked_dups) {
      dup = (nd->marks & ARG_DUPLICATE) != 0;
    } else {
      for (int32_t j = ps->nodes[obj].first; j != i && !dup; j = ps->nodes[j].next) dup = same_key(&ps->nodes[j], nd);
    }
    if (dup) continue;
    if (!first) fg_sink_putc(o, ',');
    first = false;
    json_str(o, nd->key, nd->key_n);
    fg_sink_putc(o, ':');
    json_value(o, ps, i);
  }
  fg_sink_putc(o, '}');
}

static void json_value(fg_sink *o, const parser *ps, int32_t idx) {
  const node *nd = &ps->nodes[idx];
  switch ((node_kind)nd->kind) {
    case N_STRING: json_str(o, nd->s, nd->n); break;
    case N_NUMBER: fg_sink_put(o, nd->s, nd->n); break;     /* validated JSON number text */
    case N_BOOL: fg_sink_puts(o, nd->s[0] == 't' ? "true" : "false"); break;
    case N_NULL: fg_sink_puts(o, "null"); break;
    case N_OBJECT: json_members(o, ps, idx, false); break;
    case N_ARRAY:
      fg_sink_putc(o, '[');
      for (int32_t i = nd->first; i >= 0; i = ps->nodes[i].next) {
        if (i != nd->first) fg_sink_putc(o, ',');
        json_value(o, ps, i);
      }
      fg_sink_putc(o, ']');
      break;
  }
}

/* ,"label":[keys of members with mark] — nothing when none */
static void json_marked(fg_sink *o, const parser *ps, int32_t obj, uint8_t mark, const char *label) {
  bool any = false;
  for (int32_t i = ps->nodes[obj].first; i >= 0; i = ps->nodes[i].next) {
    const node *nd = &ps->nodes[i];
    if (!(nd->marks & mark)) continue;
    if (mark == ARG_DUPLICATE) { /* list each duplicated key once */
      bool seen = false;
      for (int32_t j = ps->nodes[obj].first; j != i && !seen; j = ps->nodes[j].next)
        seen = (ps->nodes[j].marks & ARG_DUPLICATE) && same_key(&ps->nodes[j], nd);
      if (seen) continue;
    }
    fg_sink_puts(o, any ? "," : ",\"");
    if (!any) {
      fg_sink_puts(o, label);
      fg_sink_puts(o, "\":[");
    }
    any = true;
    json_str(o, nd->key, nd->key_n);
  }
  if (any) fg_sink_putc(o, ']');
}

static void json_missing(fg_sink *o, const parser *ps, const fg_function *fn, int32_t args) {
  bool any = false;
  for (uint32_t r = 0; r < fn->params.n_required; r++) {
    const char *name = fn->params.props[fn->params.required_order[r]].name;
    size_t len = strlen(name);
    bool found = false;
    if (args >= 0) {
      for (int32_t i = ps->nodes[args].first; i >= 0 && !found; i = ps->nodes[i].next)
        found = ps->nodes[i].key_n == len && memcmp(ps->nodes[i].key, name, len) == 0;
    }
    if (found) continue;
    fg_sink_puts(o, any ? "," : ",\"missing_required\":[");
    any = true;
    json_str(o, name, len);
  }
  if (any) fg_sink_putc(o, ']');
}

fg_status fg_call_parse(const fg_catalog *c, const char *gen, size_t len, char *json_out, size_t cap,
                        size_t *n_out, fg_error *err) {
  if (!n_out) return fg_err(err, FG_ERR_INVALID_ARG, "call_parse: n_out is NULL");
  if (!gen && len) return fg_err(err, FG_ERR_INVALID_ARG, "call_parse: gen is NULL");
  if (!gen) gen = "";

  parser ps;
  memset(&ps, 0, sizeof ps);
  ps.p = gen;
  ps.end = gen + len;
  parse_gen(&ps);

  char *text = NULL;
  size_t text_n = 0;
  for (size_t i = 0; i < ps.n_prose && !ps.oom; i++) text_n += ps.prose[i].n; /* <= len */
  if (!ps.oom && text_n) {
    text = fg_malloc(text_n);
    if (!text) {
      ps.oom = true;
    } else {
      size_t k = 0;
      for (size_t i = 0; i < ps.n_prose; i++) {
        memcpy(text + k, ps.prose[i].p, ps.prose[i].n);
        k += ps.prose[i].n;
      }
    }
  }
  if (ps.oom) {
    fg_free(ps.nodes);
    fg_free(ps.calls);
    fg_free(ps.prose);
    fg_free(text);
    return fg_err(err, FG_ERR_NOMEM, "call_parse: out of memory");
  }

  fg_sink o;
  fg_sink_init(&o, json_out, cap);
  bool any_trunc = false;
  fg_sink_puts(&o, "{\"calls\":[");
  for (size_t k = 0; k < ps.n_calls; k++) {
    const call_rec *cr = &ps.calls[k];
    const fg_function *fn = c ? fg_catalog_find(c, cr->name, cr->name_n, NULL) : NULL;
    const fg_function *snapped = (c && !fn) ? snap_name(c, cr->name, cr->name_n) : NULL;
    if (snapped) fn = snapped;
    check_call(&ps, fn, cr);
    if (k) fg_sink_putc(&o, ',');
    fg_sink_puts(&o, "{\"name\":");
    if (snapped)
      json_str(&o, fn->name, strlen(fn->name));
    else
      json_str(&o, cr->name, cr->name_n);
    fg_sink_puts(&o, ",\"args\":");
    if (cr->args >= 0)
      json_members(&o, &ps, cr->args, true);
    else
      fg_sink_puts(&o, "{}");
    if (c && !fn) fg_sink_puts(&o, ",\"unknown_function\":true");
    if (snapped) {
      fg_sink_puts(&o, ",\"snapped_from\":");
      json_str(&o, cr->name, cr->name_n);
    }
    if (cr->args >= 0) {
      json_marked(&o, &ps, cr->args, ARG_UNKNOWN, "unknown_args");
      json_marked(&o, &ps, cr->args, ARG_BAD_TYPE, "bad_type");
      json_marked(&o, &ps, cr->args, ARG_BAD_ENUM, "bad_enum");
    }
    if (fn) json_missing(&o, &ps, fn, cr->args);
    if (cr->args >= 0) json_marked(&o, &ps, cr->args, ARG_DUPLICATE, "duplicate_args");
    if (cr->malformed) fg_sink_puts(&o, ",\"malformed\":true");
    if (cr->truncated) fg_sink_puts(&o, ",\"truncated\":true");
    any_trunc |= cr->truncated;
    fg_sink_putc(&o, '}');
  }
  fg_sink_puts(&o, "],\"text\":");
  size_t a = 0, b = text_n;
  while (a < b && is_ws(text[a])) a++;
  while (b > a && is_ws(text[b - 1])) b--;
  json_str(&o, text ? text + a : "", b - a);
  if (any_trunc) fg_sink_puts(&o, ",\"truncated\":true");
  fg_sink_putc(&o, '}');

  fg_free(ps.nodes);
  fg_free(ps.calls);
  fg_free(ps.prose);
  fg_free(text);
  fg_status st = fg_sink_finish(&o, n_out);
  if (st != FG_OK) return fg_err(err, st, "call_parse: output needs %zu bytes plus NUL, buffer has %zu", *n_out, cap);
  return FG_OK;
}

// ----------------------------------------------------------------------------
// Stop rule

fg_nlu_stop fg_nlu_stop_piece(const char *piece, size_t len) {
  if (!piece) return FG_NLU_CONTINUE;
  if (lit_eq(piece, len, T_ECALL)) return FG_NLU_STOP_END_CALL;
  if (lit_eq(piece, len, T_EOT)) return FG_NLU_STOP_END_TURN;
  if (lit_eq(piece, len, T_EOS)) return FG_NLU_STOP_EOS;
  if (lit_eq(piece, len, T_SRESP)) return FG_NLU_STOP_RESPONSE;
  return FG_NLU_CONTINUE;
}

const char *fg_nlu_stop_name(fg_nlu_stop s) {
  switch (s) {
    case FG_NLU_CONTINUE: return "continue";
    case FG_NLU_STOP_END_CALL: return "end_function_call";
    case FG_NLU_STOP_END_TURN: return "end_of_turn";
    case FG_NLU_STOP_EOS: return "eos";
    case FG_NLU_STOP_RESPONSE: return "start_function_response";
    case FG_NLU_STOP_PROSE: return "prose_limit";
    case FG_NLU_STOP_MAX_TOKENS: return "max_tokens";
    case FG_NLU_STOP_CONTEXT_FULL: return "context_full";
    case FG_NLU_STOP_START_OF_TURN: return "start_of_turn";
  }
  return "unknown";
}

/* state: low byte = phase, next byte = stop reason once stopped */
enum { PH_START = 0, PH_CALL = 1, PH_PROSE = 2, PH_AFTER_CALL = 3 };

void fg_nlu_stopper_init(fg_nlu_stopper *s, uint32_t max_tokens, uint32_t max_prose_tokens, uint32_t flags) {
  if (!s) return;
  s->max_tokens = max_tokens;
  s->max_prose_tokens = max_prose_tokens;
  s->flags = flags;
  s->n_fed = 0;
  s->state = PH_START;
}

static fg_nlu_stop stopped(fg_nlu_stopper *s, fg_nlu_stop why) {
  s->state = (s->state & 0xffu) | ((uint32_t)why << 8);
  return why;
}

fg_nlu_stop fg_nlu_stopper_feed(fg_nlu_stopper *s, const char *piece, size_t len) {
  if (!s) return FG_NLU_STOP_MAX_TOKENS;
  if (s->state >> 8) return (fg_nlu_stop)(s->state >> 8);
  if (s->n_fed < UINT32_MAX) s->n_fed++;
  uint32_t phase = s->state & 0xffu;
  bool is_scall = piece && lit_eq(piece, len, T_SCALL);
  fg_nlu_stop why = fg_nlu_stop_piece(piece, len);

  if (phase == PH_AFTER_CALL) {
    if (!is_scall) return stopped(s, FG_NLU_STOP_END_CALL);
    phase = PH_CALL;
  }
  if (why == FG_NLU_STOP_END_CALL && (s->flags & FG_NLU_MULTI_CALL)) {
    phase = PH_AFTER_CALL;
    why = FG_NLU_CONTINUE;
  }
  if (why != FG_NLU_CONTINUE) return stopped(s, why);
  if (phase == PH_START || (phase == PH_PROSE && is_scall)) phase = is_scall ? PH_CALL : PH_PROSE;
  s->state = phase;
  if (phase == PH_PROSE && s->max_prose_tokens && s->n_fed >= s->max_prose_tokens)
    return stopped(s, FG_NLU_STOP_PROSE);
  if (s->max_tokens && s->n_fed >= s->max_tokens) return stopped(s, FG_NLU_STOP_MAX_TOKENS);
  return FG_NLU_CONTINUE;
}
