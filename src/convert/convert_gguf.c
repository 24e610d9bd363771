/* convert_gguf.c — the plan of a gemma3 GGUF input: every tensor re-typed, the metadata copied. */
#include "convert/convert_internal.h"

/* A GGUF input: its metadata is copied (file type updated), matrices get the asked type. */
fg_status fg_cv_plan_gguf(fg_cv_ctx *c, const char *path, fg_mapfile *map, fg_gguf *g) {
  fg_error e;
  fg_status st = fg_mapfile_open(path, true, map, &e);
  if (st != FG_OK) return fg_err(c->err, st, "%s", e.msg);
  if ((st = fg_gguf_parse(map->data, map->size, g, &e)) != FG_OK) return fg_err(c->err, st, "%.100s: %s", fg_path_short(path), e.msg);
  fg_gguf_str arch = {"?", 1};
  const bool has_arch = fg_gguf_get_str(g, FG_KEY_ARCHITECTURE, &arch, NULL) == FG_OK;
  if (!has_arch || !fg_gguf_str_eq(arch, FG_ARCH_GEMMA3))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: architecture '%.*s' (general.architecture) is not gemma3", fg_path_short(path),
                  (int)FG_MIN(arch.len, 40), arch.ptr);
  size_t fi;
  if ((st = fg_cv_add_file(c, path, &fi)) != FG_OK) return st;
  const uint32_t type = c->p->type;
  const bool auto_type = type == FG_CONVERT_TYPE_AUTO;
  uint32_t n_head = 1, n_head_kv = 1;
  if ((st = fg_gguf_get_u32_or(g, FG_KEY_G3_BLOCK_COUNT, 0, &c->mix.n_layer, &e)) != FG_OK ||
      (st = fg_gguf_get_u32_or(g, FG_KEY_G3_HEAD_COUNT, 1, &n_head, &e)) != FG_OK ||
      (st = fg_gguf_get_u32_or(g, FG_KEY_G3_HEAD_COUNT_KV, 1, &n_head_kv, &e)) != FG_OK)
    return fg_err(c->err, st, "%.100s: %s", fg_path_short(path), e.msg);
  c->mix.n_gqa = n_head_kv ? n_head / n_head_kv : 1;
  c->mix.tied = !fg_gguf_find_tensor(g, "output.weight");
  const uint32_t plain = !auto_type && type >= FG_CONVERT_MIX_BASE ? fg_g3_mix_of(type - FG_CONVERT_MIX_BASE)->type : type;
  bool has_output = false;
  size_t embd = SIZE_MAX;
  for (size_t i = 0; i < g->n_tensors && st == FG_OK; i++) {
    const fg_gguf_tensor *s = &g->tensors[i];
    fg_cv_tensor *t = fg_cv_add_tensor(c);
    if (!t) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    if (s->name.len >= sizeof t->name)
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: a tensor name of %zu bytes is too long", fg_path_short(path), s->name.len);
    memcpy(t->name, s->name.ptr, s->name.len);
    t->name[s->name.len] = '\0';
    snprintf(t->src_name, sizeof t->src_name, "%s", t->name);
    t->n_dims = s->n_dims;
    memcpy(t->ne, s->ne, sizeof t->ne);
    t->src_type = s->type;
    if (!fg_type_traits_get(s->type))
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: tensor '%s' has type id %u, which fgemma cannot read", fg_path_short(path), t->name,
                    s->type);
    const bool is_out = strcmp(t->name, "output.weight") == 0;
    const bool matrix = s->n_dims >= 2 && s->ne[1] > 1;
    has_output |= is_out;
    t->out_type = !matrix                        ? s->type
                  : is_out && c->p->head_type    ? c->p->head_type
                  : auto_type                    ? s->type
                                                 : fg_cv_matrix_type(c, t->name, s->ne[0], plain);
    t->file = fi;
    t->offset = g->data_offset + s->offset;
    st = fg_cv_plan_sizes(c, t, path);
    if (strcmp(t->name, "token_embd.weight") == 0) embd = c->n_t - 1;
  }
  if (st != FG_OK) return st;
  if (c->p->head_type && !has_output) {
    if (embd == SIZE_MAX) return fg_err(c->err, FG_ERR_FORMAT, "%.120s: no token_embd.weight to make a head from", fg_path_short(path));
    fg_cv_tensor *t = fg_cv_add_tensor(c);
    if (!t) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    *t = c->t[embd];
    snprintf(t->name, sizeof t->name, "output.weight");
    t->out_type = c->p->head_type;
    if ((st = fg_cv_plan_sizes(c, t, path)) != FG_OK) return st;
  }
  /* metadata: every key as it is, then the file type (kept in place) and the quantization version */
  for (size_t i = 0; i < g->n_kv && st == FG_OK; i++) st = fg_gguf_writer_copy_kv(c->w, &g->kv[i]);
  if (st != FG_OK) return fg_err(c->err, st, "%.120s: cannot copy its metadata", fg_path_short(path));
  if (!auto_type) FG_GGUF_SET(st, c->err, "", set_u32, c->w, FG_KEY_FILE_TYPE, fg_cv_file_type(c, plain));
  FG_GGUF_SET(st, c->err, "", set_u32, c->w, FG_KEY_QUANTIZATION_VERSION, 2);
  if (c->p->name) FG_GGUF_SET(st, c->err, "", set_str, c->w, FG_KEY_NAME, c->p->name);
  return st;
}
