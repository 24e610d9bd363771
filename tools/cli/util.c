/* util.c — command-line parsing and error printing for the fgemma tool. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fgemma: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

int cli_status_error(fg_status st, const char *what, const char *msg) {
  if (msg && *msg)
    return cli_error("%s: %s (%s)", what, msg, fg_status_str(st));
  return cli_error("%s: %s", what, fg_status_str(st));
}

bool cli_stderr_is_tty(void) { return isatty(2) != 0; }

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int find_opt(const cli_opt *opts, const char *name, size_t len, char short_name) {
  for (int i = 0; opts[i].name; i++) {
    if (short_name && opts[i].short_name == short_name) return i;
    if (!short_name && strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return i;
  }
  return -1;
}

// ----------------------------------------------------------------------------------------------
// Options every command of a kind takes without listing them: --head-type, --head-rows, --repack, --check-tensors (commands that load a
// model: their table has "model") and --kv-type (commands that run sessions: their table has
// "threads"). cli_parse takes them, cli_usage documents them, cli_load_model and
// cli_session_params_init apply them.

static fg_model_params g_model_params = {.flags = 0, .head_type = FG_MODEL_HEAD_AS_FILE};
static uint32_t g_kv_type = 0; /* FG_TYPE_F32 */
#define CLI_MAX_LORAS 64
static fg_lora g_loras[CLI_MAX_LORAS]; /* --lora, in the order given; paths point into argv */

const fg_model_params *cli_model_params(void) { return &g_model_params; }

const fg_model_params *cli_reference_params(void) {
  static fg_model_params p;
  fg_model_params_init(&p);
  p.loras = g_model_params.loras;
  p.n_loras = g_model_params.n_loras;
  return &p;
}

void cli_session_params_init(fg_session_params *p) {
  fg_session_params_init(p);
  p->kv_type = g_kv_type;
}

static bool parse_head_type(const char *s) {
  if (strcmp(s, "q8_0") == 0) return g_model_params.head_type = 8, true;
  if (strcmp(s, "q4_0") == 0) return g_model_params.head_type = 2, true;
  if (strcmp(s, "file") == 0) return g_model_params.head_type = FG_MODEL_HEAD_AS_FILE, true;
  cli_error("--head-type: unknown head type '%s' (q8_0, q4_0, or file = as in the file)", s);
  return false;
}

static bool parse_head_rows(const char *s) {
  if (strcmp(s, "used") == 0) return g_model_params.flags &= ~FG_MODEL_DENSE_HEAD, true;
  if (strcmp(s, "all") == 0) return g_model_params.flags |= FG_MODEL_DENSE_HEAD, true;
  cli_error("--head-rows: unknown value '%s' (used or all)", s);
  return false;
}

static bool parse_repack(const char *s) {
  if (strcmp(s, "on") == 0) return g_model_params.flags &= ~FG_MODEL_NO_REPACK, true;
  if (strcmp(s, "off") == 0) return g_model_params.flags |= FG_MODEL_NO_REPACK, true;
  cli_error("--repack: unknown value '%s' (on or off)", s);
  return false;
}

static bool parse_check_tensors(const char *s) {
  if (strcmp(s, "on") == 0) return g_model_params.flags |= FG_MODEL_CHECK_TENSORS, true;
  if (strcmp(s, "off") == 0) return g_model_params.flags &= ~FG_MODEL_CHECK_TENSORS, true;
  cli_error("--check-tensors: unknown value '%s' (on or off)", s);
  return false;
}

static cli_named_lora g_named[CLI_MAX_LORAS]; /* --lora NAME=FILE[:SCALE] (fgemma serve) */
static size_t g_n_named;
static cli_named_lora g_lora_cats[CLI_MAX_LORAS]; /* --lora-catalog NAME=CATALOG.json; lora.path = the catalog */
static size_t g_n_lora_cats;
static bool g_named_ok; /* the command takes named adapters (cli_named_loras was asked) */

size_t cli_named_loras(const cli_named_lora **out) {
  g_named_ok = true;
  *out = g_named;
  return g_n_named;
}

size_t cli_lora_catalogs(const cli_named_lora **out) {
  *out = g_lora_cats;
  return g_n_lora_cats;
}

/* "NAME=REST" with NAME of letters, digits, '.', '_', '-' (at most 63): *rest = REST; false otherwise. */
static bool split_name(const char *s, char *name, const char **rest) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s || eq - s > 63 || !eq[1]) return false;
  for (const char *p = s; p < eq; p++)
    if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') return false;
  memcpy(name, s, (size_t)(eq - s));
  name[eq - s] = '\0';
  *rest = eq + 1;
  return true;
}

static bool parse_lora_spec(const char *s, fg_lora *l);

/* --lora NAME=FILE[:SCALE] (a name as split_name takes it, and s is not an existing file) */
static bool parse_named_lora(const char *s, bool *named) {
  char name[64];
  const char *rest;
  *named = split_name(s, name, &rest) && access(s, F_OK) != 0;
  if (!*named) return true;
  if (g_n_named == CLI_MAX_LORAS) return cli_error("--lora: at most %d named adapters", CLI_MAX_LORAS), false;
  for (size_t i = 0; i < g_n_named; i++)
    if (strcmp(g_named[i].name, name) == 0) return cli_error("--lora: the name '%s' is given twice", name), false;
  cli_named_lora *n = &g_named[g_n_named];
  snprintf(n->name, sizeof n->name, "%s", name);
  if (!parse_lora_spec(rest, &n->lora)) return false;
  g_n_named++;
  return true;
}

/* --lora-catalog NAME=CATALOG.json */
static bool parse_lora_catalog(const char *s) {
  if (g_n_lora_cats == CLI_MAX_LORAS) return cli_error("--lora-catalog: at most %d", CLI_MAX_LORAS), false;
  cli_named_lora *n = &g_lora_cats[g_n_lora_cats];
  const char *rest;
  if (!split_name(s, n->name, &rest))
    return cli_error("--lora-catalog: '%s' is not NAME=CATALOG.json (NAME: letters, digits, '.', '_', '-')", s), false;
  n->lora.path = rest;
  g_n_lora_cats++;
  return true;
}

/* --lora FILE[:SCALE], or NAME=FILE[:SCALE] (parse_named_lora) */
static bool parse_lora(const char *s) {
  bool named = false;
  if (!parse_named_lora(s, &named)) return false;
  if (named) return true;
  if (g_model_params.n_loras == CLI_MAX_LORAS) {
    cli_error("--lora: at most %d adapters", CLI_MAX_LORAS);
    return false;
  }
  if (!parse_lora_spec(s, &g_loras[g_model_params.n_loras])) return false;
  g_model_params.loras = g_loras;
  g_model_params.n_loras++;
  return true;
}

/* FILE[:SCALE]: the text after the last ':' is the scale when it parses as a float */
static bool parse_lora_spec(const char *s, fg_lora *l) {
  l->path = s;
  l->scale = 1.0f;
  const char *colon = strrchr(s, ':');
  if (colon && colon[1]) {
    char *end;
    errno = 0;
    const float v = strtof(colon + 1, &end);
    if (*end == '\0' && end != colon + 1 && errno == 0) {
      const size_t n = (size_t)(colon - s);
      char *path = malloc(n + 1); /* kept for the process's lifetime, like argv */
      if (!path) return cli_error("out of memory"), false;
      memcpy(path, s, n);
      path[n] = '\0';
      l->path = path;
      l->scale = v;
    }
  }
  if (!*l->path) return cli_error("--lora: no file in '%s'", s), false;
  return true;
}

static bool parse_lora_merge(const char *s) {
  if (strcmp(s, "off") == 0) return g_model_params.lora_merge = FG_LORA_RUNTIME, true;
  if (strcmp(s, "f32") == 0) return g_model_params.lora_merge = FG_LORA_MERGE_F32, true;
  if (strcmp(s, "bf16") == 0) return g_model_params.lora_merge = FG_LORA_MERGE_BF16, true;
  if (strcmp(s, "q8_0") == 0) return g_model_params.lora_merge = FG_LORA_MERGE_Q8_0, true;
  cli_error("--lora-merge: unknown value '%s' (off, f32, bf16 or q8_0)", s);
  return false;
}

static bool parse_kv_type(const char *s) {
  if (strcmp(s, "f32") == 0) return g_kv_type = 0, true;
  if (strcmp(s, "f16") == 0) return g_kv_type = 1, true;
  cli_error("--kv-type: unknown KV cache type '%s' (f32 or f16)", s);
  return false;
}

static const struct cli_global {
  const char *name;
  const char *needs; /* the option a command's table must have */
  bool (*parse)(const char *value);
  const char *help;
} g_globals[] = {
    {"head-type", "model", parse_head_type, "replacement LM head made at load: q8_0 | q4_0 | file (default: the file's head)"},
    {"head-rows", "model", parse_head_rows,
     "LM head rows computed: used (default: rows that are all zero, a trimmed vocabulary, are skipped) | all"},
    {"repack", "model", parse_repack,
     "copy matrices into the kernels' own layout at load where they have one (x86 AVX2: Q8_0, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K, IQ4_XS; "
     "aarch64 dot product: Q8_0, Q5_0, Q4_K, Q6_K; armv7: Q5_0, Q4_K, Q6_K): on (default) | off"},
    {"check-tensors", "model", parse_check_tensors,
     "dequantize every weight at load and refuse NaN/Inf values or scales: on | off (default; costs a read of "
     "the whole file)"},
    {"lora", "model", parse_lora,
     "LoRA adapter (llama.cpp's GGUF format) FILE[:SCALE], scale 1 by default; repeat for several, applied in "
     "order (docs/LORA.md); serve also takes NAME=FILE[:SCALE]: an adapter that requests choose by model name"},
    {"lora-catalog", "max-catalogs", parse_lora_catalog,
     "NAME=CATALOG.json: requests without a model name whose tools are this catalog run on adapter NAME "
     "(repeatable; docs/SERVER.md)"},
    {"lora-merge", "model", parse_lora_merge,
     "off (default: adapters applied at run time, exactly) | f32 | bf16 | q8_0: merged at load into copies of the "
     "adapted matrices of that type"},
    {"kv-type", "threads", parse_kv_type, "KV cache element type: f32 (default) | f16 (half the KV memory)"},
};

/* Deprecated spellings (docs/OPTIONS.md): a command whose table has the new name also takes the old
 * one, with a warning on stderr; --help lists them. */
static const struct cli_alias {
  const char *old_name, *name;
} g_aliases[] = {
    {"snapshot", "snapshot-path"},
    {"ctx", "n-ctx"},
    {"multi", "multi-call"},
};

/* The option index that the deprecated spelling at name (n bytes) stands for in this command, or -1. */
static int find_alias(const cli_opt *opts, const char *name, size_t n, const char **old_name) {
  for (size_t k = 0; k < sizeof g_aliases / sizeof g_aliases[0]; k++)
    if (strlen(g_aliases[k].old_name) == n && memcmp(g_aliases[k].old_name, name, n) == 0) {
      *old_name = g_aliases[k].old_name;
      return find_opt(opts, g_aliases[k].name, strlen(g_aliases[k].name), 0);
    }
  return -1;
}

/* The global option named by the n bytes at name that this command takes, or NULL. */
static const struct cli_global *find_global(const cli_opt *opts, const char *name, size_t n) {
  for (size_t g = 0; g < sizeof g_globals / sizeof g_globals[0]; g++)
    if (strlen(g_globals[g].name) == n && memcmp(g_globals[g].name, name, n) == 0 &&
        find_opt(opts, g_globals[g].needs, strlen(g_globals[g].needs), 0) >= 0)
      return &g_globals[g];
  return NULL;
}

int cli_parse(const char *cmd, const cli_opt *opts, int argc, char **argv, cli_args *out) {
  memset(out, 0, sizeof *out);
  bool only_pos = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (only_pos || a[0] != '-' || a[1] == '\0' || (a[1] >= '0' && a[1] <= '9')) {
      if (out->n_pos >= (int)(sizeof out->pos / sizeof out->pos[0])) {
        cli_error("%s: too many arguments", cmd);
        return 2;
      }
      out->pos[out->n_pos++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_pos = true;
      continue;
    }
    int idx;
    const char *inline_val = NULL;
    if (a[1] == '-') {
      const char *eq = strchr(a + 2, '=');
      size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
      idx = find_opt(opts, a + 2, len, 0);
      const char *old_name = NULL;
      if (idx < 0 && (idx = find_alias(opts, a + 2, len, &old_name)) >= 0)
        fprintf(stderr, "fgemma: warning: %s: --%s is deprecated, use --%s\n", cmd, old_name, opts[idx].name);
      if (eq) inline_val = eq + 1;
    } else {
      idx = a[2] == '\0' ? find_opt(opts, NULL, 0, a[1]) : -1;
    }
    const struct cli_global *glob =
        idx < 0 && a[1] == '-' ? find_global(opts, a + 2, inline_val ? (size_t)(inline_val - 1 - (a + 2)) : strlen(a + 2))
                               : NULL;
    if (glob) {
      const char *v = inline_val ? inline_val : (i + 1 < argc ? argv[++i] : NULL);
      if (!v) {
        cli_error("%s: option '%s' needs a value", cmd, a);
        return 2;
      }
      if (!glob->parse(v)) return 2;
      continue;
    }
    if (idx < 0) {
      cli_error("%s: unknown option '%s' (see 'fgemma %s --help')", cmd, a, cmd);
      return 2;
    }
    if (opts[idx].takes_value) {
      if (inline_val) {
        out->values[idx] = inline_val;
      } else if (i + 1 < argc) {
        out->values[idx] = argv[++i];
      } else {
        cli_error("%s: option '%s' needs a value", cmd, a);
        return 2;
      }
    } else {
      if (inline_val) {
        cli_error("%s: option '--%s' takes no value", cmd, opts[idx].name);
        return 2;
      }
      out->values[idx] = "";
    }
  }
  return 0;
}

const char *cli_get(const cli_opt *opts, const cli_args *a, const char *name) {
  int i = find_opt(opts, name, strlen(name), 0);
  return i >= 0 ? a->values[i] : NULL;
}

bool cli_has(const cli_opt *opts, const cli_args *a, const char *name) { return cli_get(opts, a, name) != NULL; }

void cli_usage(FILE *f, const char *cmd, const char *synopsis, const char *what, const cli_opt *opts) {
  fprintf(f, "usage: fgemma %s %s\n\n%s\n\noptions:\n", cmd, synopsis, what);
  for (int i = 0; opts[i].name; i++) {
    if (!opts[i].help) continue;
    char left[64];
    if (opts[i].short_name)
      snprintf(left, sizeof left, "-%c, --%s%s", opts[i].short_name, opts[i].name, opts[i].takes_value ? " V" : "");
    else
      snprintf(left, sizeof left, "    --%s%s", opts[i].name, opts[i].takes_value ? " V" : "");
    fprintf(f, "  %-24s %s\n", left, opts[i].help);
  }
  for (size_t g = 0; g < sizeof g_globals / sizeof g_globals[0]; g++) {
    if (find_opt(opts, g_globals[g].needs, strlen(g_globals[g].needs), 0) < 0) continue;
    char left[64];
    snprintf(left, sizeof left, "    --%s V", g_globals[g].name);
    fprintf(f, "  %-24s %s\n", left, g_globals[g].help);
  }
  for (size_t k = 0; k < sizeof g_aliases / sizeof g_aliases[0]; k++) {
    const int i = find_opt(opts, g_aliases[k].name, strlen(g_aliases[k].name), 0);
    if (i < 0 || !opts[i].help) continue;
    char left[64];
    snprintf(left, sizeof left, "    --%s%s", g_aliases[k].old_name, opts[i].takes_value ? " V" : "");
    fprintf(f, "  %-24s deprecated: the old name of --%s\n", left, g_aliases[k].name);
  }
}

bool cli_u64(const char *opt, const char *s, uint64_t *out) {
  if (!s || !*s) return cli_error("%s: missing number", opt), false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') return cli_error("%s: '%s' is not a non-negative integer", opt, s), false;
  *out = v;
  return true;
}

bool cli_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out) {
  uint64_t v;
  if (!cli_u64(opt, s, &v)) return false;
  if (v < min || v > max) return cli_error("%s: %s is out of range (%u..%u)", opt, s, min, max), false;
  *out = (uint32_t)v;
  return true;
}

bool cli_duration_ms(const char *opt, const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out) {
  errno = 0;
  char *end;
  const double v = strtod(s, &end);
  double scale = 1000.0;
  if (end != s && strcmp(end, "ms") == 0)
    scale = 1.0;
  else if (end != s && strcmp(end, "s") != 0 && *end != '\0')
    end = (char *)s; /* not a duration */
  if (end == s || errno || !(v >= 0) || s[0] == '-' || s[0] == '+')
    return cli_error("%s: '%s' is not a duration (seconds such as 30 or 0.5, or milliseconds such as 250ms)", opt, s),
           false;
  const double ms = v * scale;
  if (ms != ms || ms < (double)min_ms || ms > (double)max_ms || ms != (double)(uint64_t)ms)
    return cli_error("%s: %s is out of range (%" PRIu64 " ms .. %" PRIu64 " s, whole milliseconds)", opt, s, min_ms,
                     max_ms / 1000),
           false;
  *out = (uint64_t)ms;
  return true;
}

bool cli_snapshot_dir(const char *opt, const char *dir) {
  struct stat sb;
  if (!*dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return cli_error("%s %s: not a directory (create it first)", opt, dir), false;
  if (access(dir, R_OK | W_OK | X_OK) != 0) return cli_error("%s %s: %s", opt, dir, strerror(errno)), false;
  return true;
}

bool cli_ids(const char *opt, const char *s, int32_t **ids, size_t *n) {
  size_t cap = 64, cnt = 0;
  int32_t *v = malloc(cap * sizeof *v);
  if (!v) return cli_error("out of memory"), false;
  const char *p = s;
  while (*p) {
    while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    errno = 0;
    char *end;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno || x < INT32_MIN || x > INT32_MAX) {
      free(v);
      return cli_error("%s: '%.20s' is not a token id", opt, p), false;
    }
    if (cnt == cap) {
      cap *= 2;
      int32_t *nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        free(v);
        return cli_error("out of memory"), false;
      }
      v = nv;
    }
    v[cnt++] = (int32_t)x;
    p = end;
  }
  if (cnt == 0) {
    free(v);
    return cli_error("%s: no token ids given", opt), false;
  }
  *ids = v;
  *n = cnt;
  return true;
}

/* Splits a comma list in place into at most cap items; returns the count. */
size_t cli_split_list(char *s, char **items, size_t cap) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ","))
    if (*tok) items[n++] = tok;
  return n;
}

fg_model *cli_load_model(const char *path) {
  if (!path) path = getenv("FGEMMA_MODEL");
  if (!path || !*path) {
    cli_error("no model given: use -m MODEL.gguf (or set FGEMMA_MODEL)");
    return NULL;
  }
  if (g_n_named && !g_named_ok) {
    cli_error("--lora %s=...: named adapters are for fgemma serve; give --lora FILE[:SCALE]", g_named[0].name);
    return NULL;
  }
  fg_model *m = NULL;
  fg_error err = {0};
  fg_status st = fg_model_load(path, &g_model_params, &m, &err);
  if (st != FG_OK) {
    cli_status_error(st, "cannot load model", err.msg);
    return NULL;
  }
  return m;
}

char *cli_read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    cli_error("cannot open %s", path);
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, (cap *= 2) + 1);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  const bool bad = ferror(f);
  if (f != stdin) fclose(f);
  if (!buf || bad) {
    free(buf);
    cli_error(bad ? "cannot read %s" : "out of memory reading %s", path);
    return NULL;
  }
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

void cli_json_str(FILE *f, const char *s, size_t n) {
  char small[256];
  size_t need = 0;
  if (fg_json_quote(s, n, small, sizeof small, &need) == FG_OK) {
    fwrite(small, 1, need, f);
    return;
  }
  char *big = malloc(need + 1);
  if (big && fg_json_quote(s, n, big, need + 1, &need) == FG_OK) fwrite(big, 1, need, f);
  else fputs("\"\"", f); /* out of memory: an empty string keeps the line valid JSON */
  free(big);
}

// ----------------------------------------------------------------------------------------------
// JSON strings

static int hex4(const char *p, const char *end, uint32_t *out) {
  if (end - p < 4) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    const char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

const char *cli_json_string(const char *s, size_t n, char *out, size_t *out_len) {
  const char *p = s, *end = s + n;
  size_t k = 0;
  if (p == end || *p != '"') return "not a JSON string (no opening quote)";
  p++;
  for (;;) {
    if (p == end) return "unterminated JSON string";
    unsigned char c = (unsigned char)*p++;
    if (c == '"') break;
    if (c < 0x20) return "control character in a JSON string";
    if (c != '\\') {
      out[k++] = (char)c;
      continue;
    }
    if (p == end) return "unterminated escape";
    c = (unsigned char)*p++;
    switch (c) {
      case '"': out[k++] = '"'; break;
      case '\\': out[k++] = '\\'; break;
      case '/': out[k++] = '/'; break;
      case 'b': out[k++] = '\b'; break;
      case 'f': out[k++] = '\f'; break;
      case 'n': out[k++] = '\n'; break;
      case 'r': out[k++] = '\r'; break;
      case 't': out[k++] = '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (!hex4(p, end, &cp)) return "bad \\u escape";
        p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return "lone low surrogate";
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return "high surrogate without its low surrogate";
          p += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp < 0x80) {
          out[k++] = (char)cp;
        } else if (cp < 0x800) {
          out[k++] = (char)(0xC0 | (cp >> 6));
          out[k++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          out[k++] = (char)(0xE0 | (cp >> 12));
          out[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
          out[k++] = (char)(0x80 | (cp & 0x3F));
        } else {
          out[k++] = (char)(0xF0 | (cp >> 18));
          out[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
          out[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
          out[k++] = (char)(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: return "unknown escape";
    }
  }
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
  if (p != end) return "text after the JSON string";
  *out_len = k;
  return NULL;
}

// ----------------------------------------------------------------------------------------------
// Speculation switches and statistics

const char *const cli_draft_names[FG_NLU_DRAFT_SOURCES] = {"forced", "copy", "catalog", "cache", "context"};

bool cli_speculate(const char *s, uint32_t *out) {
  if (strcmp(s, "on") == 0) *out = FG_NLU_SPECULATE_ON;
  else if (strcmp(s, "off") == 0) *out = FG_NLU_SPECULATE_OFF;
  else return cli_error("--speculate: expected on or off, not '%s'", s), false;
  return true;
}

bool cli_constrained(const char *s, uint32_t *out) {
  if (strcmp(s, "off") == 0) *out = FG_NLU_CONSTRAIN_OFF;
  else if (strcmp(s, "call-only") == 0) *out = FG_NLU_CONSTRAIN_CALL_ONLY;
  else if (strcmp(s, "call-or-text") == 0) *out = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
  else return cli_error("--constrained: expected off, call-only or call-or-text, not '%s'", s), false;
  return true;
}

const char *cli_constrained_name(uint32_t mode) {
  switch (mode) {
  case FG_NLU_CONSTRAIN_OFF: return "off";
  case FG_NLU_CONSTRAIN_CALL_ONLY: return "call-only";
  case FG_NLU_CONSTRAIN_CALL_OR_TEXT:
  case FG_NLU_CONSTRAIN_DEFAULT: return "call-or-text";
  default: return "?";
  }
}

void cli_spec_add(cli_spec_stats *st, const fg_nlu_result *r) {
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 64;
    uint32_t *a = realloc(st->after, cap * sizeof *a);
    if (!a) return;
    st->after = a;
    st->cap = cap;
  }
  st->after[st->n++] = r->weight_passes ? r->weight_passes - 1 : 0;
  st->passes += r->weight_passes;
  st->head_passes += r->head_passes;
  st->tokens += r->decode_tokens;
  for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++) {
    st->drafted[i] += r->drafted[i];
    st->accepted[i] += r->accepted[i];
  }
}

static int cmp_u32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* median, p95 (nearest rank) and mean of the passes after the chunk */
static void spec_quantiles(cli_spec_stats *st, double *med, double *p95, double *mean) {
  *med = *p95 = *mean = 0;
  if (!st->n) return;
  qsort(st->after, st->n, sizeof *st->after, cmp_u32);
  *med = st->n % 2 ? st->after[st->n / 2] : 0.5 * (st->after[st->n / 2 - 1] + st->after[st->n / 2]);
  *p95 = st->after[(size_t)((double)(st->n - 1) * 0.95 + 0.5)];
  double sum = 0;
  for (size_t i = 0; i < st->n; i++) sum += st->after[i];
  *mean = sum / (double)st->n;
}

void cli_spec_print(FILE *f, const char *prefix, cli_spec_stats *st) {
  double med, p95, mean;
  spec_quantiles(st, &med, &p95, &mean);
  uint64_t acc = 0, dr = 0;
  for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++) acc += st->accepted[i], dr += st->drafted[i];
  fprintf(f, "%sweight passes per call after the chunk: median %.1f, p95 %.0f, mean %.2f (%zu calls, %.1f tokens "
          "per call, %.2f full-head passes per call)\n", prefix, med, p95, mean, st->n,
          st->n ? (double)st->tokens / (double)st->n : 0.0, st->n ? (double)st->head_passes / (double)st->n : 0.0);
  fprintf(f, "%sdrafts: %llu of %llu accepted, %.2f accepted per weight pass;", prefix, (unsigned long long)acc,
          (unsigned long long)dr, st->passes ? (double)acc / (double)st->passes : 0.0);
  for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++)
    fprintf(f, " %s %llu/%llu", cli_draft_names[i], (unsigned long long)st->accepted[i],
            (unsigned long long)st->drafted[i]);
  fputc('\n', f);
}

void cli_spec_json(FILE *f, cli_spec_stats *st) {
  double med, p95, mean;
  spec_quantiles(st, &med, &p95, &mean);
  uint64_t acc = 0;
  for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++) acc += st->accepted[i];
  fprintf(f, "\"passes_after_chunk\":{\"median\":%.1f,\"p95\":%.0f,\"mean\":%.3f},\"head_passes_avg\":%.3f,"
          "\"accepted_per_pass\":%.3f,\"drafts\":{", med, p95, mean,
          st->n ? (double)st->head_passes / (double)st->n : 0.0, st->passes ? (double)acc / (double)st->passes : 0.0);
  for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++)
    fprintf(f, "%s\"%s\":{\"drafted\":%llu,\"accepted\":%llu}", i ? "," : "", cli_draft_names[i],
            (unsigned long long)st->drafted[i], (unsigned long long)st->accepted[i]);
  fputc('}', f);
}

void cli_spec_free(cli_spec_stats *st) {
  free(st->after);
  memset(st, 0, sizeof *st);
}
