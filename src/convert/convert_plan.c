/* convert_plan.c — fg_convert's shared planning: reading input files, adding planned tensors, the output
 * type of each matrix and its row sizes, safetensors headers (convert_internal.h). */
#include "convert/convert_internal.h"

// ----------------------------------------------------------------------------------------------------
// Small helpers

const char *fg_cv_base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

char *fg_cv_join(const char *dir, const char *name) {
  const size_t n = strlen(dir) + strlen(name) + 2;
  char *p = fg_malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

bool fg_cv_file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The whole file, NUL-terminated; FG_ERR_IO naming it when it cannot be read. */
fg_status fg_cv_read_all(const char *path, size_t limit, char **out, size_t *size, fg_error *err) {
  *out = NULL;
  *size = 0;
  errno = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return fg_err(err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(path), strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return fg_err(err, FG_ERR_IO, "%.200s: not a regular file", fg_path_short(path));
  }
  if ((uint64_t)sb.st_size > limit) {
    fclose(f);
    return fg_err(err, FG_ERR_FORMAT, "%.200s: %llu bytes is more than this file may have (%zu)", fg_path_short(path),
                  (unsigned long long)sb.st_size, limit);
  }
  const size_t n = (size_t)sb.st_size;
  char *buf = fg_malloc(n + 1);
  if (!buf) {
    fclose(f);
    return fg_err(err, FG_ERR_NOMEM, "%.200s: out of memory for %zu bytes", fg_path_short(path), n);
  }
  const size_t got = n ? fread(buf, 1, n, f) : 0;
  fclose(f);
  if (got != n) {
    fg_free(buf);
    return fg_err(err, FG_ERR_IO, "%.200s: read %zu of %zu bytes", fg_path_short(path), got, n);
  }
  buf[n] = '\0';
  *out = buf;
  *size = n;
  return FG_OK;
}

fg_status fg_cv_add_file(fg_cv_ctx *c, const char *path, size_t *idx) {
  fg_cv_file *nf = fg_realloc(c->files, (c->n_files + 1) * sizeof *nf);
  if (!nf) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  c->files = nf;
  fg_cv_file *fl = &c->files[c->n_files];
  memset(fl, 0, sizeof *fl);
  if (!(fl->path = fg_strndup(path, strlen(path)))) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  *idx = c->n_files++;
  struct stat sb;
  if (stat(path, &sb) != 0) return fg_err(c->err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(path), strerror(errno));
  fl->size = (uint64_t)sb.st_size;
  return FG_OK;
}

fg_cv_tensor *fg_cv_add_tensor(fg_cv_ctx *c) {
  if (c->n_t == c->cap_t) {
    const size_t cap = c->cap_t ? c->cap_t * 2 : 256;
    fg_cv_tensor *nt = fg_realloc(c->t, cap * sizeof *nt);
    if (!nt) return NULL;
    c->t = nt;
    c->cap_t = cap;
  }
  fg_cv_tensor *t = &c->t[c->n_t++];
  memset(t, 0, sizeof *t);
  return t;
}

static bool is_float(uint32_t type) { return type == FG_TYPE_F32 || type == FG_TYPE_F16 || type == FG_TYPE_BF16; }

/* p->type is one of llama-quantize's mixes (FG_CONVERT_MIX) */
bool fg_cv_is_mix(const fg_cv_ctx *c) {
  return c->p->type != FG_CONVERT_TYPE_AUTO && c->p->type >= FG_CONVERT_MIX_BASE;
}

/* the type of the weight matrix `name` (rows of ne0 values): the mix's choice, or `plain` */
uint32_t fg_cv_matrix_type(const fg_cv_ctx *c, const char *name, uint64_t ne0, uint32_t plain) {
  if (!fg_cv_is_mix(c)) return plain;
  return fg_g3_mix_type(c->p->type - FG_CONVERT_MIX_BASE, &c->mix, name, ne0);
}

/* general.file_type of the output */
uint32_t fg_cv_file_type(const fg_cv_ctx *c, uint32_t plain) {
  return fg_cv_is_mix(c) ? c->p->type - FG_CONVERT_MIX_BASE : fg_g3_file_type(plain);
}

/* Row sizes of a planned tensor; FG_ERR_UNSUPPORTED when its rows do not fit the output type. */
fg_status fg_cv_plan_sizes(fg_cv_ctx *c, fg_cv_tensor *t, const char *where) {
  uint64_t rows = 1;
  for (uint32_t d = 1; d < FG_GGUF_MAX_DIMS; d++) rows *= t->ne[d] ? t->ne[d] : 1;
  t->rows = rows;
  if (!fg_type_row_bytes(t->src_type, t->ne[0], &t->src_row_bytes))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: tensor '%s' of type %s cannot be read", fg_path_short(where), t->src_name,
                  fg_type_name(t->src_type));
  if (!fg_type_row_bytes(t->out_type, t->ne[0], &t->out_row_bytes))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: tensor '%s' has rows of %llu values; %s needs a multiple of %u",
                  fg_path_short(where), t->src_name, (unsigned long long)t->ne[0], fg_type_name(t->out_type),
                  fg_type_traits_get(t->out_type)->block_size);
  if (!fg_mul_u64(t->out_row_bytes, rows, &t->out_bytes) || !fg_add_u64(c->total, t->out_bytes, &c->total))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: tensor '%s' is too large", fg_path_short(where), t->src_name);
  if (!is_float(t->src_type) && t->src_type != t->out_type && !is_float(t->out_type) && !c->n_requant++)
    snprintf(c->requant, sizeof c->requant, "%.60s (%s -> %s)", t->src_name, fg_type_name(t->src_type),
             fg_type_name(t->out_type));
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------------
// Safetensors headers

fg_status fg_cv_read_header(fg_cv_ctx *c, fg_cv_file *fl) {
  uint8_t first[8];
  errno = 0;
  if (!(fl->f = fopen(fl->path, "rb"))) return fg_err(c->err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(fl->path), strerror(errno));
  const size_t got = fread(first, 1, 8, fl->f);
  uint64_t n;
  fg_error e;
  fg_status st = fg_st_header_len(first, got, fl->size, &n, &e);
  if (st != FG_OK) return fg_err(c->err, st, "%.120s: %s", fg_path_short(fl->path), e.msg);
  uint8_t *buf = fg_malloc((size_t)n + 8);
  if (!buf) return fg_err(c->err, FG_ERR_NOMEM, "%.160s: out of memory for a header of %llu bytes", fg_path_short(fl->path), (unsigned long long)n);
  memcpy(buf, first, 8);
  if (fread(buf + 8, 1, (size_t)n, fl->f) != (size_t)n) {
    fg_free(buf);
    return fg_err(c->err, FG_ERR_IO, "%.200s: cannot read the header", fg_path_short(fl->path));
  }
  st = fg_st_parse(buf, (size_t)n + 8, fl->size, &fl->st, &e);
  fg_free(buf);
  if (st != FG_OK) return fg_err(c->err, st, "%.100s: %s", fg_path_short(fl->path), e.msg);
  return FG_OK;
}

uint32_t fg_cv_ggml_of_st(fg_st_dtype d) {
  switch (d) {
    case FG_ST_F32: return FG_TYPE_F32;
    case FG_ST_F16: return FG_TYPE_F16;
    case FG_ST_BF16: return FG_TYPE_BF16;
    default: return UINT32_MAX;
  }
}
