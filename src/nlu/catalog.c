/* catalog.c — tool catalog JSON (cartridge schema or OpenAI/HF tools) -> immutable fg_catalog.
 *
 * cJSON builds a temporary tree with its own (default) allocator; everything kept is copied into an
 * arena of fg_malloc'd chunks, so one fg_catalog_free releases it all and an error half-way leaks
 * nothing. See catalog.h for the accepted formats and the refusals. */
#include "nlu/catalog.h"

#include <cjson/cJSON.h>

#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------
// Arena: bump allocation in fg_malloc'd chunks

typedef struct fg_arena_chunk {
  struct fg_arena_chunk *next;
  size_t cap;   /* bytes in mem */
  size_t used;
  max_align_t mem[]; /* (cap bytes) */
} fg_arena_chunk;

typedef struct fg_arena {
  fg_arena_chunk *head;
} fg_arena;

#define FG_ARENA_CHUNK 16384u

static void *arena_alloc(fg_arena *a, size_t n) {
  const size_t al = alignof(max_align_t);
  if (n > SIZE_MAX - al) return NULL;
  n = (n + al - 1) / al * al;
  if (n == 0) n = al;
  fg_arena_chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > FG_ARENA_CHUNK ? n : FG_ARENA_CHUNK;
    if (cap > SIZE_MAX - sizeof(fg_arena_chunk)) return NULL;
    c = fg_malloc(sizeof(fg_arena_chunk) + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = (char *)c->mem + c->used;
  c->used += n;
  return p;
}

static void arena_free(fg_arena *a) {
  fg_arena_chunk *c = a->head;
  while (c) {
    fg_arena_chunk *next = c->next;
    fg_free(c);
    c = next;
  }
  a->head = NULL;
}

static char *arena_strdup(fg_arena *a, const char *s) {
  size_t n = strlen(s);
  char *d = arena_alloc(a, n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

// ----------------------------------------------------------------------------
// The catalog

struct fg_catalog {
  atomic_uint refs;        /* the caller's reference plus one per NLU engine (fg_catalog_retain) */
  fg_arena arena;
  const char *id;          /* "" when absent */
  fg_function *funcs;      /* (n_funcs) in catalog order */
  size_t n_funcs;
};

size_t fg_catalog_n_functions(const fg_catalog *c) { return c ? c->n_funcs : 0; }

const fg_function *fg_catalog_function(const fg_catalog *c, size_t i) {
  return (c && i < c->n_funcs) ? &c->funcs[i] : NULL;
}

const char *fg_catalog_id(const fg_catalog *c) { return c ? c->id : ""; }

static int name_eq(const char *z, const char *s, size_t len) {
  return strlen(z) == len && memcmp(z, s, len) == 0;
}

const fg_function *fg_catalog_find(const fg_catalog *c, const char *name, size_t len, size_t *index) {
  if (!c || !name) return NULL;
  for (size_t i = 0; i < c->n_funcs; i++) {
    if (name_eq(c->funcs[i].name, name, len)) {
      if (index) *index = i;
      return &c->funcs[i];
    }
  }
  return NULL;
}

const fg_param *fg_param_find(const fg_param *p, const char *name, size_t len) {
  if (!p || !name) return NULL;
  for (uint32_t i = 0; i < p->n_props; i++)
    if (name_eq(p->props[i].name, name, len)) return &p->props[i];
  return NULL;
}

int32_t fg_param_enum_index(const fg_param *p, const char *value, size_t len) {
  if (!p || !value) return -1;
  for (uint32_t i = 0; i < p->n_enum; i++)
    if (name_eq(p->enum_values[i], value, len)) return (int32_t)i;
  return -1;
}

const char *fg_param_type_upper(fg_param_type t) {
  switch (t) {
    case FG_PARAM_STRING: return "STRING";
    case FG_PARAM_INTEGER: return "INTEGER";
    case FG_PARAM_NUMBER: return "NUMBER";
    case FG_PARAM_BOOLEAN: return "BOOLEAN";
    case FG_PARAM_ARRAY: return "ARRAY";
    case FG_PARAM_OBJECT: return "OBJECT";
  }
  return "STRING";
}

const fg_catalog *fg_catalog_retain(const fg_catalog *c) {
  /* the count is the one mutable part of an otherwise immutable catalog */
  if (c) atomic_fetch_add_explicit(&((fg_catalog *)c)->refs, 1, memory_order_relaxed);
  return c;
}

void fg_catalog_release(const fg_catalog *c) {
  if (!c || atomic_fetch_sub_explicit(&((fg_catalog *)c)->refs, 1, memory_order_acq_rel) != 1) return;
  fg_arena a = c->arena; /* the catalog itself lives in its arena */
  arena_free(&a);
}

void fg_catalog_free(fg_catalog *c) { fg_catalog_release(c); }

uint32_t fg_catalog_refs(const fg_catalog *c) { return c ? atomic_load(&((fg_catalog *)c)->refs) : 0; }

// ----------------------------------------------------------------------------
// Parser context: where we are (for messages) and the first error

typedef struct build_ctx {
  fg_arena *arena;
  fg_error *err;
  fg_status status;         /* first failure */
  char fn[FG_CATALOG_MAX_NAME + 16]; /* "'name'" or "#3" */
  char path[256];           /* parameter path inside the function, "" at the root */
} build_ctx;

static fg_status fail(build_ctx *b, const char *fmt, ...) FG_PRINTF(2, 3);
static fg_status fail(build_ctx *b, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (b->path[0])
    fg_err(b->err, FG_ERR_FORMAT, "catalog: function %s, parameter '%s': %s", b->fn, b->path, what);
  else if (b->fn[0])
    fg_err(b->err, FG_ERR_FORMAT, "catalog: function %s: %s", b->fn, what);
  else
    fg_err(b->err, FG_ERR_FORMAT, "catalog: %s", what);
  b->status = FG_ERR_FORMAT;
  return FG_ERR_FORMAT;
}

static fg_status oom(build_ctx *b) {
  fg_err(b->err, FG_ERR_NOMEM, "catalog: out of memory");
  b->status = FG_ERR_NOMEM;
  return FG_ERR_NOMEM;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > FG_CATALOG_MAX_NAME) return 0;
  unsigned char c0 = (unsigned char)s[0];
  if (!((c0 >= 'A' && c0 <= 'Z') || (c0 >= 'a' && c0 <= 'z') || c0 == '_')) return 0;
  for (size_t i = 1; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
             c == '.' || c == '-';
    if (!ok) return 0;
  }
  return 1;
}

/* A printable, bounded rendition of a user string for messages. */
static const char *shorten(const char *s, char *buf, size_t cap) {
  size_t i = 0;
  for (; s[i] && i + 4 < cap; i++) buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  if (s[i]) {
    buf[i++] = '.';
    buf[i++] = '.';
    buf[i++] = '.';
  }
  buf[i] = '\0';
  return buf;
}

static int ascii_casecmp(const char *a, const char *b) {
  for (;; a++, b++) {
    int ca = (unsigned char)*a, cb = (unsigned char)*b;
    if (ca >= 'A' && ca <= 'Z') ca += 'a' - 'A';
    if (cb >= 'A' && cb <= 'Z') cb += 'a' - 'A';
    if (ca != cb || ca == 0) return ca - cb;
  }
}

/* Text that ends up between <escape> markers must not spell a control token. */
static fg_status check_text(build_ctx *b, const char *field, const char *s) {
  size_t tl = 0;
  ptrdiff_t at = fg_nlu_find_control_token(s, strlen(s), &tl);
  if (at >= 0) {
    char tok[40];
    size_t n = tl < sizeof tok - 1 ? tl : sizeof tok - 1;
    memcpy(tok, s + at, n);
    tok[n] = '\0';
    return fail(b, "%s contains the control token \"%s\" (refused: it would break the prompt syntax)",
                field, tok);
  }
  return FG_OK;
}

static char *copy_text(build_ctx *b, const char *field, const char *s) {
  if (check_text(b, field, s) != FG_OK) return NULL;
  char *d = arena_strdup(b->arena, s);
  if (!d) oom(b);
  return d;
}

static int parse_type(const char *s, fg_param_type *t) {
  static const char *const names[] = {"string", "integer", "number", "boolean", "array", "object"};
  for (int i = 0; i < 6; i++) {
    if (ascii_casecmp(s, names[i]) == 0) {
      *t = (fg_param_type)i;
      return 1;
    }
  }
  return 0;
}

// ----------------------------------------------------------------------------
// Parameters (the same definition in both formats)

static fg_status parse_props(build_ctx *b, const cJSON *props, const cJSON *required, fg_param *obj,
                             unsigned depth);

/* path bookkeeping: append ".name" / "[]" and restore afterwards */
static size_t path_push(build_ctx *b, const char *seg) {
  size_t old = strlen(b->path);
  snprintf(b->path + old, sizeof b->path - old, "%s%s", (old && seg[0] != '[') ? "." : "", seg);
  return old;
}

static fg_status parse_param(build_ctx *b, const cJSON *def, fg_param *out, unsigned depth) {
  if (depth > FG_CATALOG_MAX_DEPTH) return fail(b, "nested deeper than %u levels", FG_CATALOG_MAX_DEPTH);
  if (!cJSON_IsObject(def)) return fail(b, "definition is not an object");

  const cJSON *jt = cJSON_GetObjectItemCaseSensitive(def, "type");
  if (!jt) return fail(b, "missing \"type\"");
  if (!cJSON_IsString(jt)) return fail(b, "\"type\" is not a string");
  if (!parse_type(jt->valuestring, &out->type)) {
    char sb[40];
    return fail(b, "unknown type '%s' (expected string, integer, number, boolean, array or object)",
                shorten(jt->valuestring, sb, sizeof sb));
  }

  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(def, "description");
  if (jd && !cJSON_IsNull(jd)) {
    if (!cJSON_IsString(jd)) return fail(b, "\"description\" is not a string");
    if (jd->valuestring[0]) {
      out->description = copy_text(b, "description", jd->valuestring);
      if (!out->description) return b->status;
    }
  }

  const cJSON *jn = cJSON_GetObjectItemCaseSensitive(def, "nullable");
  if (jn && !cJSON_IsNull(jn)) {
    if (!cJSON_IsBool(jn)) return fail(b, "\"nullable\" is not a boolean");
    out->nullable = cJSON_IsTrue(jn);
  }

  const cJSON *je = cJSON_GetObjectItemCaseSensitive(def, "enum");
  if (je && !cJSON_IsNull(je)) {
    if (!cJSON_IsArray(je)) return fail(b, "\"enum\" is not an array");
    int n = cJSON_GetArraySize(je);
    if (n <= 0) return fail(b, "\"enum\" is empty");
    if (out->type != FG_PARAM_STRING)
      return fail(b, "\"enum\" on a parameter of type %s (only string parameters take an enum)",
                  fg_param_type_upper(out->type));
    const char **vals = arena_alloc(b->arena, (size_t)n * sizeof *vals);
    if (!vals) return oom(b);
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, je) {
      if (!cJSON_IsString(m)) return fail(b, "enum member #%d is not a string", i + 1);
      vals[i] = copy_text(b, "enum value", m->valuestring);
      if (!vals[i]) return b->status;
      i++;
    }
    out->enum_values = vals;
    out->n_enum = (uint32_t)n;
  }

  if (out->type == FG_PARAM_ARRAY) {
    const cJSON *ji = cJSON_GetObjectItemCaseSensitive(def, "items");
    if (ji && !cJSON_IsNull(ji)) {
      if (!cJSON_IsObject(ji)) return fail(b, "\"items\" is not an object");
      fg_param *it = arena_alloc(b->arena, sizeof *it);
      if (!it) return oom(b);
      memset(it, 0, sizeof *it);
      size_t old = path_push(b, "[]");
      fg_status st = parse_param(b, ji, it, depth + 1);
      if (st != FG_OK) return st;
      b->path[old] = '\0';
      out->items = it;
    }
  } else if (out->type == FG_PARAM_OBJECT) {
    const cJSON *jp = cJSON_GetObjectItemCaseSensitive(def, "properties");
    const cJSON *jr = cJSON_GetObjectItemCaseSensitive(def, "required");
    if (jp && !cJSON_IsNull(jp) && !cJSON_IsObject(jp)) return fail(b, "\"properties\" is not an object");
    fg_status st = parse_props(b, jp, jr, out, depth + 1);
    if (st != FG_OK) return st;
  }
  return FG_OK;
}

typedef struct prop_ref {
  const char *name;
  const cJSON *def;
  uint32_t idx; /* position in the input */
} prop_ref;

/* Jinja's dictsort: case-insensitive; ties keep input order (Python's sort is stable). */
static int prop_ref_cmp(const void *pa, const void *pb) {
  const prop_ref *a = pa, *b = pb;
  int c = ascii_casecmp(a->name, b->name);
  if (c) return c;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* props: object NAME -> definition (or NULL); required: array of names (or NULL). Fills obj. */
static fg_status parse_props(build_ctx *b, const cJSON *props, const cJSON *required, fg_param *obj,
                             unsigned depth) {
  if (depth > FG_CATALOG_MAX_DEPTH) return fail(b, "nested deeper than %u levels", FG_CATALOG_MAX_DEPTH);
  int n = (props && cJSON_IsObject(props)) ? cJSON_GetArraySize(props) : 0;
  if (n > 0) {
    prop_ref *refs = fg_malloc_array((size_t)n, sizeof *refs);
    if (!refs) return oom(b);
    uint32_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, props) {
      refs[i].name = m->string ? m->string : "";
      refs[i].def = m;
      refs[i].idx = i;
      i++;
    }
    qsort(refs, (size_t)n, sizeof *refs, prop_ref_cmp);
    fg_param *ps = arena_alloc(b->arena, (size_t)n * sizeof *ps);
    if (!ps) {
      fg_free(refs);
      return oom(b);
    }
    memset(ps, 0, (size_t)n * sizeof *ps);
    fg_status st = FG_OK;
    for (i = 0; i < (uint32_t)n && st == FG_OK; i++) {
      char sb[40];
      if (!valid_name(refs[i].name)) {
        st = fail(b, "parameter name '%s' is not allowed (use [A-Za-z_][A-Za-z0-9_.-]*, at most %u bytes)",
                  shorten(refs[i].name, sb, sizeof sb), FG_CATALOG_MAX_NAME);
        break;
      }
      /* exact duplicates sit in the same case-insensitive run */
      for (uint32_t j = i; j-- > 0 && ascii_casecmp(refs[j].name, refs[i].name) == 0;) {
        if (strcmp(refs[j].name, refs[i].name) == 0) {
          st = fail(b, "duplicate parameter '%s'", refs[i].name);
          break;
        }
      }
      if (st != FG_OK) break;
      ps[i].name = arena_strdup(b->arena, refs[i].name);
      if (!ps[i].name) {
        st = oom(b);
        break;
      }
      size_t old = path_push(b, refs[i].name);
      st = parse_param(b, refs[i].def, &ps[i], depth);
      if (st == FG_OK) b->path[old] = '\0';
    }
    fg_free(refs);
    if (st != FG_OK) return st;
    obj->props = ps;
    obj->n_props = (uint32_t)n;
  }

  if (required && !cJSON_IsNull(required)) {
    if (!cJSON_IsArray(required)) return fail(b, "\"required\" is not an array");
    int nr = cJSON_GetArraySize(required);
    if (nr > 0) {
      uint32_t *order = arena_alloc(b->arena, (size_t)nr * sizeof *order);
      if (!order) return oom(b);
      fg_param *ps = (fg_param *)obj->props; /* ours: allocated just above */
      int k = 0;
      const cJSON *m;
      cJSON_ArrayForEach(m, required) {
        char sb[40];
        if (!cJSON_IsString(m)) return fail(b, "\"required\" member #%d is not a string", k + 1);
        uint32_t j = 0;
        while (j < obj->n_props && strcmp(ps[j].name, m->valuestring) != 0) j++;
        if (j == obj->n_props)
          return fail(b, "\"required\" names unknown parameter '%s'", shorten(m->valuestring, sb, sizeof sb));
        if (ps[j].required) return fail(b, "\"required\" lists '%s' twice", ps[j].name);
        ps[j].required = true;
        order[k++] = j;
      }
      obj->required_order = order;
      obj->n_required = (uint32_t)nr;
    }
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------
// Functions and the two catalog layouts

typedef enum layout { LAYOUT_CARTRIDGE, LAYOUT_TOOLS } layout;

static fg_status parse_function(build_ctx *b, const cJSON *f, layout lay, size_t index, fg_function *out) {
  snprintf(b->fn, sizeof b->fn, "#%zu", index + 1);
  b->path[0] = '\0';
  if (!cJSON_IsObject(f)) return fail(b, "not an object");

  const cJSON *jname = cJSON_GetObjectItemCaseSensitive(f, "name");
  if (!jname) return fail(b, "missing \"name\"");
  if (!cJSON_IsString(jname)) return fail(b, "\"name\" is not a string");
  if (!valid_name(jname->valuestring)) {
    char sb[40];
    return fail(b, "name '%s' is not allowed (use [A-Za-z_][A-Za-z0-9_.-]*, at most %u bytes)",
                shorten(jname->valuestring, sb, sizeof sb), FG_CATALOG_MAX_NAME);
  }
  snprintf(b->fn, sizeof b->fn, "'%s'", jname->valuestring);
  out->name = arena_strdup(b->arena, jname->valuestring);
  if (!out->name) return oom(b);

  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(f, "description");
  out->description = "";
  if (jd && !cJSON_IsNull(jd)) {
    if (!cJSON_IsString(jd)) return fail(b, "\"description\" is not a string");
    out->description = copy_text(b, "description", jd->valuestring);
    if (!out->description) return b->status;
  }

  out->params.type = FG_PARAM_OBJECT;
  const cJSON *jp = cJSON_GetObjectItemCaseSensitive(f, "parameters");
  const cJSON *jreq = cJSON_GetObjectItemCaseSensitive(f, "required");
  if (jp && cJSON_IsNull(jp)) jp = NULL;
  if (jp && !cJSON_IsObject(jp)) return fail(b, "\"parameters\" is not an object");

  /* JSON-schema style when "type" is a string there; for tools also when "properties" is there or
   * parameters is empty. Otherwise parameters maps names to definitions (the cartridge layout). */
  const cJSON *jt = jp ? cJSON_GetObjectItemCaseSensitive(jp, "type") : NULL;
  int schema = jp && (cJSON_IsString(jt) ||
                      (lay == LAYOUT_TOOLS && (cJSON_GetObjectItemCaseSensitive(jp, "properties") || !jp->child)));
  if (!schema) return parse_props(b, jp, jreq, &out->params, 1);

  if (jt && !cJSON_IsNull(jt)) {
    fg_param_type t;
    if (!cJSON_IsString(jt) || !parse_type(jt->valuestring, &t) || t != FG_PARAM_OBJECT)
      return fail(b, "\"parameters\".\"type\" must be \"object\"");
  }
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(jp, "properties");
  if (props && cJSON_IsNull(props)) props = NULL;
  if (props && !cJSON_IsObject(props)) return fail(b, "\"parameters\".\"properties\" is not an object");
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(jp, "required");
  if (!req || cJSON_IsNull(req)) req = jreq;
  return parse_props(b, props, req, &out->params, 1);
}

/* An element of a tools list: {"type":"function","function":{...}} or the bare function. */
static fg_status unwrap_tool(build_ctx *b, const cJSON *t, size_t index, const cJSON **fn) {
  *fn = t;
  const cJSON *inner = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
  if (!inner) return FG_OK;
  snprintf(b->fn, sizeof b->fn, "#%zu", index + 1);
  b->path[0] = '\0';
  if (!cJSON_IsObject(inner)) return fail(b, "\"function\" is not an object");
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type");
  if (ty && !(cJSON_IsString(ty) && strcmp(ty->valuestring, "function") == 0))
    return fail(b, "tool \"type\" is not \"function\"");
  *fn = inner;
  return FG_OK;
}

static void line_col(const char *json, size_t off, size_t *line, size_t *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (json[i] == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

static fg_status build(build_ctx *b, fg_catalog *cat, const cJSON *root) {
  layout lay;
  const cJSON *list = NULL;
  const cJSON *single = NULL;
  if (cJSON_IsArray(root)) {
    lay = LAYOUT_TOOLS;
    list = root;
  } else if (cJSON_IsObject(root)) {
    const cJSON *jf = cJSON_GetObjectItemCaseSensitive(root, "functions");
    const cJSON *jt = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (jf) {
      lay = LAYOUT_CARTRIDGE;
      if (!cJSON_IsArray(jf)) return fail(b, "\"functions\" is not an array");
      list = jf;
      const cJSON *jid = cJSON_GetObjectItemCaseSensitive(root, "id");
      if (jid && !cJSON_IsNull(jid)) {
        if (!cJSON_IsString(jid)) return fail(b, "\"id\" is not a string");
        cat->id = arena_strdup(b->arena, jid->valuestring);
        if (!cat->id) return oom(b);
      }
    } else if (jt) {
      lay = LAYOUT_TOOLS;
      if (!cJSON_IsArray(jt)) return fail(b, "\"tools\" is not an array");
      list = jt;
    } else if (cJSON_GetObjectItemCaseSensitive(root, "function") ||
               cJSON_GetObjectItemCaseSensitive(root, "name")) {
      lay = LAYOUT_TOOLS;
      single = root;
    } else {
      return fail(b, "expected a list of tools, {\"tools\":[...]} or {\"functions\":[...]}");
    }
  } else {
    return fail(b, "expected a list of tools, {\"tools\":[...]} or {\"functions\":[...]}");
  }

  size_t n = single ? 1 : (size_t)cJSON_GetArraySize(list);
  if (n == 0) return fail(b, "no functions");
  fg_function *fs = arena_alloc(b->arena, n * sizeof *fs);
  if (!fs) return oom(b);
  memset(fs, 0, n * sizeof *fs);

  size_t i = 0;
  const cJSON *item = single ? single : list->child;
  for (; item && i < n; item = single ? NULL : item->next, i++) {
    const cJSON *fn = item;
    if (lay == LAYOUT_TOOLS && unwrap_tool(b, item, i, &fn) != FG_OK) return b->status;
    if (parse_function(b, fn, lay, i, &fs[i]) != FG_OK) return b->status;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(fs[j].name, fs[i].name) == 0) {
        b->path[0] = '\0';
        return fail(b, "duplicate function (also #%zu)", j + 1);
      }
    }
  }
  cat->funcs = fs;
  cat->n_funcs = n;
  return FG_OK;
}

fg_status fg_catalog_parse(const char *json, size_t len, fg_catalog **out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "catalog: out is NULL");
  *out = NULL;
  if (!json && len) return fg_err(err, FG_ERR_INVALID_ARG, "catalog: json is NULL");
  if (!json) json = "";
  size_t bad = 0;
  if (!fg_utf8_valid(json, len, &bad)) { /* JSON is UTF-8 (RFC 8259); names and values reach the prompt */
    size_t line, col;
    line_col(json, bad, &line, &col);
    return fg_err(err, FG_ERR_FORMAT, "catalog: not valid UTF-8 at line %zu, column %zu (byte 0x%02x)", line, col,
                  (unsigned)(unsigned char)json[bad]);
  }

  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  size_t off = (end && end >= json) ? (size_t)(end - json) : 0;
  if (off > len) off = len;
  if (root) { /* only white space may follow the value */
    while (off < len && (json[off] == ' ' || json[off] == '\t' || json[off] == '\n' || json[off] == '\r')) off++;
    if (off < len && json[off] != '\0') {
      cJSON_Delete(root);
      root = NULL;
    }
  }
  if (!root) {
    size_t line, col;
    line_col(json, off, &line, &col);
    return fg_err(err, FG_ERR_FORMAT, "catalog: not valid JSON at line %zu, column %zu (byte %zu)", line, col,
                  off);
  }

  fg_arena arena = {NULL};
  fg_catalog *cat = arena_alloc(&arena, sizeof *cat);
  if (!cat) {
    cJSON_Delete(root);
    return fg_err(err, FG_ERR_NOMEM, "catalog: out of memory");
  }
  memset(cat, 0, sizeof *cat);
  cat->id = "";
  build_ctx b = {.arena = &arena, .err = err, .status = FG_OK};
  fg_status st = build(&b, cat, root);
  cJSON_Delete(root);
  if (st != FG_OK) {
    arena_free(&arena);
    return st;
  }
  cat->arena = arena;
  atomic_init(&cat->refs, 1);
  *out = cat;
  return FG_OK;
}
