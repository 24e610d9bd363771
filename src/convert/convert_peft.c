/* convert_peft.c — the plan of a PEFT LoRA adapter directory: a GGUF LoRA adapter as llama.cpp writes it
 * (peft.h: the names, the config and what is refused). */
#include "convert/convert_internal.h"

/* A PEFT LoRA adapter directory: a GGUF LoRA adapter (peft.h). */
typedef struct cv_pair {
  uint32_t layer, module; /* fg_lora_targets index */
  size_t a, b;            /* indices into the safetensors header; SIZE_MAX = not seen */
} cv_pair;

static int pair_order(const void *x, const void *y) {
  const cv_pair *p = x, *q = y;
  if (p->layer != q->layer) return p->layer < q->layer ? -1 : 1;
  return p->module < q->module ? -1 : p->module > q->module;
}

static const char *dim_name(char letter) {
  switch (letter) {
    case 'E': return "the embedding width";
    case 'Q': return "n_head * head_dim";
    case 'K': return "n_head_kv * head_dim";
    default: return "the feed-forward width";
  }
}

/* the refusal of a tensor that is not part of a LoRA pair of the layers' matrices */
static fg_status peft_refuse(fg_cv_ctx *c, const char *path, const char *name, fg_peft_name nm) {
  static const char merge[] = "merge the adapter into the base model and convert that";
  const char *file = fg_cv_base_name(path); /* adapter_model.safetensors: the tensor's name says the rest */
  switch (nm.kind) {
    case FG_PEFT_EMBEDDING:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s': a LoRA of the token embedding (embed_tokens) is not "
                    "supported; train without it in target_modules", fg_path_short(file), name);
    case FG_PEFT_LM_HEAD:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s': a LoRA of the output projection (lm_head) is not "
                    "supported", fg_path_short(file), name);
    case FG_PEFT_DORA:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s' is DoRA's magnitude, which a GGUF LoRA adapter cannot "
                    "carry; %s", fg_path_short(file), name, merge);
    case FG_PEFT_BIAS:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s' is a bias, which a GGUF LoRA adapter cannot carry "
                    "(train with bias=\"none\", lora_bias=False)", fg_path_short(file), name);
    case FG_PEFT_FULL:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s' is a whole tensor (modules_to_save, trainable tokens, a "
                    "norm), which a GGUF LoRA adapter cannot carry; %s", fg_path_short(file), name, merge);
    case FG_PEFT_OTHER_MODULE:
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: '%.100s' adapts a module of layer %u that fgemma does not adapt "
                    "(only q/k/v/o_proj, gate/up/down_proj)", fg_path_short(file), name, nm.layer);
    default:
      return fg_err(c->err, FG_ERR_FORMAT, "%.80s: unexpected tensor '%.100s' (not a lora_A/lora_B of a Gemma 3 layer "
                    "as PEFT names them)", fg_path_short(file), name);
  }
}

/* The state of one adapter's plan, handed from step to step. */
typedef struct peft_plan {
  const char *dir, *config_path;
  fg_peft_config pc;         /* adapter_config.json */
  fg_peft_vocab_override ov; /* fgemma_vocab_override.json (n = 0 without one) */
  fg_mapfile bmap;           /* the base model (--base), mapped */
  fg_gguf bg;                /* ... and parsed */
  char arch[64];             /* general.architecture: the base model's, or gemma3 */
  uint32_t type;             /* the matrices' output type (FG_CONVERT_TYPE_AUTO until the pairs give it) */
  size_t fi;                 /* adapter_model.safetensors in c->files */
  cv_pair *pairs;            /* [n_pairs] by layer, then module */
  size_t n_pairs;
  uint32_t rank0;            /* the first pair's rank */
  double alpha;              /* the one adapter.lora.alpha every pair's scale needs */
} peft_plan;

/* The output type: F32, F16, BF16 or Q8_0 (their mixes are the type everywhere). */
static fg_status peft_output_type(fg_cv_ctx *c, peft_plan *pp) {
  const char *dir = pp->dir;
  uint32_t type = c->p->type;
  if (type != FG_CONVERT_TYPE_AUTO && type >= FG_CONVERT_MIX_BASE) type = fg_g3_mix_of(type - FG_CONVERT_MIX_BASE)->type;
  if (type != FG_CONVERT_TYPE_AUTO && type != FG_TYPE_F32 && type != FG_TYPE_F16 && type != FG_TYPE_BF16 &&
      type != FG_TYPE_Q8_0) {
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: a LoRA adapter is written as f32, f16, bf16 or q8_0, not %s",
                  fg_path_short(dir), fg_type_name(type));
  }
  if (c->p->head_type)
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: a head type applies to a model, not to a LoRA adapter",
                  fg_path_short(dir));
  pp->type = type;
  return FG_OK;
}

/* The base model, when given: mapped and parsed; its architecture. */
static fg_status peft_open_base(fg_cv_ctx *c, peft_plan *pp) {
  if (!c->p->base) return FG_OK;
  fg_error e;
  fg_status st;
  if ((st = fg_mapfile_open(c->p->base, true, &pp->bmap, &e)) != FG_OK) return fg_err(c->err, st, "base model: %s", e.msg);
  if ((st = fg_gguf_parse(pp->bmap.data, pp->bmap.size, &pp->bg, &e)) != FG_OK)
    return fg_err(c->err, st, "base model %.100s: %s", fg_path_short(c->p->base), e.msg);
  fg_gguf_str a;
  if (fg_gguf_get_str(&pp->bg, FG_KEY_ARCHITECTURE, &a, NULL) != FG_OK || a.len == 0 || a.len >= sizeof pp->arch ||
      memchr(a.ptr, '\0', a.len))
    return fg_err(c->err, FG_ERR_FORMAT, "base model %.120s: no usable general.architecture", fg_path_short(c->p->base));
  memcpy(pp->arch, a.ptr, a.len);
  pp->arch[a.len] = '\0';
  if (strcmp(pp->arch, FG_ARCH_GEMMA3) != 0)
    fg_log(FG_LOG_WARN, "convert: the base model's architecture is '%s'; fgemma loads adapters of gemma3 models only",
           pp->arch);
  return FG_OK;
}

/* The tensors of adapter_model.safetensors, grouped into (lora_A, lora_B) pairs by layer and module;
 * the vision tower's are left out, anything else is refused. */
static fg_status peft_collect_pairs(fg_cv_ctx *c, peft_plan *pp, const char *st_path) {
  const char *dir = pp->dir;
  if (!fg_cv_file_exists(st_path)) {
    char *bin = fg_cv_join(dir, "adapter_model.bin");
    const bool has_bin = bin && fg_cv_file_exists(bin);
    fg_free(bin);
    return fg_err(c->err, FG_ERR_IO, "%.120s: no adapter_model.safetensors%s", fg_path_short(dir),
                  has_bin ? " (only adapter_model.bin: save the adapter with save_pretrained(safe_serialization=True))"
                          : "");
  }
  fg_status st;
  if ((st = fg_cv_add_file(c, st_path, &pp->fi)) != FG_OK || (st = fg_cv_read_header(c, &c->files[pp->fi])) != FG_OK)
    return st;
  const fg_st_header *h = &c->files[pp->fi].st;
  const char *file = c->files[pp->fi].path;
  if (h->n && !(pp->pairs = fg_malloc_array(h->n, sizeof *pp->pairs)))
    return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  cv_pair *pairs = pp->pairs;
  size_t n_pairs = 0, n_vision = 0;
  for (size_t k = 0; k < h->n && st == FG_OK; k++) {
    const fg_peft_name nm = fg_peft_name_parse(h->t[k].name);
    if (nm.kind == FG_PEFT_VISION) {
      n_vision++;
      continue;
    }
    if (nm.kind != FG_PEFT_LORA_A && nm.kind != FG_PEFT_LORA_B) {
      st = peft_refuse(c, file, h->t[k].name, nm);
      break;
    }
    cv_pair *p = NULL;
    for (size_t i = 0; i < n_pairs && !p; i++)
      if (pairs[i].layer == nm.layer && pairs[i].module == nm.module) p = &pairs[i];
    if (!p) {
      p = &pairs[n_pairs++];
      *p = (cv_pair){nm.layer, nm.module, SIZE_MAX, SIZE_MAX};
    }
    size_t *slot = nm.kind == FG_PEFT_LORA_A ? &p->a : &p->b;
    if (*slot != SIZE_MAX)
      st = fg_err(c->err, FG_ERR_FORMAT, "%.60s: tensors '%.80s' and '%.80s' are both lora_%c of layer %u's %s",
                  fg_path_short(file), h->t[*slot].name, h->t[k].name, nm.kind == FG_PEFT_LORA_A ? 'A' : 'B', nm.layer,
                  fg_lora_targets[nm.module].hf);
    *slot = k;
  }
  pp->n_pairs = n_pairs;
  if (st != FG_OK) return st;
  if (n_pairs == 0)
    return fg_err(c->err, FG_ERR_FORMAT, "%.120s: no lora_A/lora_B tensors of the text model's layers",
                  fg_path_short(file));
  if (n_vision)
    fg_log(FG_LOG_WARN, "convert: %zu tensor%s of the vision tower or its projector left out (the text model has no "
           "place for them)", n_vision, n_vision == 1 ? "" : "s");
  qsort(pairs, n_pairs, sizeof *pairs, pair_order);
  return FG_OK;
}

/* Each pair: complete, float, 2-D, one rank; the dimensions agree across layers (and with the base);
 * PEFT's scales fit one adapter.lora.alpha. Sets the output type when it was left to the input. */
static fg_status peft_check_pairs(fg_cv_ctx *c, peft_plan *pp) {
  const fg_st_header *h = &c->files[pp->fi].st;
  const char *file = c->files[pp->fi].path;
  const fg_peft_config *pc = &pp->pc;
  const cv_pair *pairs = pp->pairs;
  fg_status st = FG_OK;
  uint64_t dims[4] = {0, 0, 0, 0}; /* E Q K F, as first seen */
  const char *dim_from[4] = {NULL, NULL, NULL, NULL};
  static const char letters[] = "EQKF";
  uint32_t rank0 = 0, auto_type = UINT32_MAX, n_layer = 0;
  double alpha = 0.0;          /* the one adapter.lora.alpha every pair's scale needs */
  const char *alpha_from = ""; /* the tensor that set it */
  if (c->p->base && fg_gguf_get_u32_or(&pp->bg, FG_KEY_G3_BLOCK_COUNT, 0, &n_layer, NULL) != FG_OK) n_layer = 0;
  for (size_t i = 0; i < pp->n_pairs && st == FG_OK; i++) {
    const cv_pair *p = &pairs[i];
    const fg_lora_target *m = &fg_lora_targets[p->module];
    if (p->a == SIZE_MAX || p->b == SIZE_MAX) {
      const fg_st_tensor *have = &h->t[p->a == SIZE_MAX ? p->b : p->a];
      st = fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%.100s' has no matching lora_%c (every adapted matrix needs "
                  "both lora_A and lora_B)", fg_path_short(file), have->name, p->a == SIZE_MAX ? 'A' : 'B');
      break;
    }
    const fg_st_tensor *ta = &h->t[p->a], *tb = &h->t[p->b];
    for (int ab = 0; ab < 2 && st == FG_OK; ab++) {
      const fg_st_tensor *t = ab ? tb : ta;
      const uint32_t tt = fg_cv_ggml_of_st(t->dtype);
      if (tt == UINT32_MAX)
        st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: tensor '%.100s' has dtype %s; fgemma converts F32, F16 and BF16",
                    fg_path_short(file), t->name, fg_st_dtype_name(t->dtype));
      else if (t->n_dims != 2 || t->shape[0] == 0 || t->shape[1] == 0)
        st = fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%.100s' is not a matrix (%u dimensions)", fg_path_short(file),
                    t->name, t->n_dims);
      else if (auto_type == UINT32_MAX)
        auto_type = tt;
      else if (auto_type != tt)
        auto_type = FG_TYPE_F32;
    }
    if (st != FG_OK) break;
    const uint64_t rank = ta->shape[0], n_in = ta->shape[1], n_out = tb->shape[0];
    if (tb->shape[1] != rank) {
      st = fg_err(c->err, FG_ERR_FORMAT, "%.60s: mismatched ranks: '%.90s' has %llu rows (rank) but '%.90s' has %llu "
                  "columns", fg_path_short(file), ta->name, (unsigned long long)rank, tb->name,
                  (unsigned long long)tb->shape[1]);
      break;
    }
    /* PEFT's r and lora_alpha of this module (rank_pattern / alpha_pattern), and the alpha that makes
     * llama.cpp's alpha / rank equal PEFT's alpha / r (alpha / sqrt(r) with rsLoRA) */
    char module[128];
    fg_peft_module_key(ta->name, module, sizeof module);
    double want_r, a_i;
    if (fg_peft_pattern_get(pc->rank_pattern, pc->n_rank_pattern, module, pc->r, &want_r) && (double)rank != want_r) {
      st = fg_err(c->err, FG_ERR_FORMAT, "mismatched ranks: '%.90s' has rank %llu, but adapter_config.json gives %.70s "
                  "r = %g (r / rank_pattern)", ta->name, (unsigned long long)rank, module, want_r);
      break;
    }
    if (!fg_peft_pattern_get(pc->alpha_pattern, pc->n_alpha_pattern, module, pc->alpha, &a_i)) {
      st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.100s: alpha_pattern has a regular expression, which fgemma does not "
                  "evaluate (it needs %.60s's alpha)", fg_path_short(pp->config_path), module);
      break;
    }
    const double alpha_i = pc->rslora ? a_i * sqrt((double)rank) : a_i;
    if (!rank0) {
      rank0 = (uint32_t)rank;
      alpha = alpha_i;
      alpha_from = ta->name;
    } else if (fabs(alpha_i - alpha) > 1e-6 * fabs(alpha)) {
      st = fg_err(c->err, FG_ERR_UNSUPPORTED, "one adapter.lora.alpha cannot give every pair PEFT's scale: '%.70s' needs "
                  "%g, '%.70s' %g (rank_pattern / alpha_pattern%s)", ta->name, alpha_i, alpha_from, alpha,
                  pc->rslora ? " with use_rslora" : "");
      break;
    }
    const char ls[2] = {m->in, m->out};
    const uint64_t vs[2] = {n_in, n_out};
    for (int d = 0; d < 2 && st == FG_OK; d++) {
      const size_t li = (size_t)(strchr(letters, ls[d]) - letters);
      if (!dims[li]) {
        dims[li] = vs[d];
        dim_from[li] = d ? tb->name : ta->name;
      } else if (dims[li] != vs[d]) {
        st = fg_err(c->err, FG_ERR_FORMAT, "%.40s: '%.80s' has %s %llu where '%.80s' has %llu (%s)", fg_path_short(file),
                    d ? tb->name : ta->name, d ? "n_out" : "n_in", (unsigned long long)vs[d], dim_from[li],
                    (unsigned long long)dims[li], dim_name(ls[d]));
      }
    }
    if (st != FG_OK || !c->p->base) continue;
    char bname[64];
    snprintf(bname, sizeof bname, "blk.%u.%s.weight", p->layer, m->gguf);
    const fg_gguf_tensor *bt = fg_gguf_find_tensor(&pp->bg, bname);
    if (!bt) {
      st = fg_err(c->err, FG_ERR_FORMAT, "'%.90s' adapts %s, which base model %.100s does not have%s", ta->name, bname,
                  fg_path_short(c->p->base), n_layer && p->layer >= n_layer ? " (its layers end before)" : "");
    } else if (bt->ne[0] != n_in || bt->ne[1] != n_out) {
      st = fg_err(c->err, FG_ERR_FORMAT, "'%.80s' / lora_B adapt a %llu -> %llu matrix, but %s of base model %.80s is "
                  "%llu -> %llu", ta->name, (unsigned long long)n_in, (unsigned long long)n_out, bname,
                  fg_path_short(c->p->base), (unsigned long long)bt->ne[0], (unsigned long long)bt->ne[1]);
    }
  }
  if (st != FG_OK) return st;
  if (pp->type == FG_CONVERT_TYPE_AUTO) pp->type = auto_type;
  pp->rank0 = rank0;
  pp->alpha = alpha;

  if (!isfinite((float)alpha))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: lora_alpha %g * sqrt(r) does not fit an f32",
                  fg_path_short(pp->config_path), pc->alpha);
  return FG_OK;
}

/* The GGUF tensors: per layer in file order, lora_a then lora_b. */
static fg_status peft_add_tensors(fg_cv_ctx *c, peft_plan *pp) {
  const fg_st_header *h = &c->files[pp->fi].st;
  const char *file = c->files[pp->fi].path;
  const cv_pair *pairs = pp->pairs;
  const uint32_t type = pp->type;
  size_t n_f16 = 0;
  fg_status st = FG_OK;
  for (size_t i = 0; i < pp->n_pairs && st == FG_OK; i++) {
    for (int ab = 0; ab < 2 && st == FG_OK; ab++) {
      const fg_st_tensor *s = &h->t[ab ? pairs[i].b : pairs[i].a];
      fg_cv_tensor *t = fg_cv_add_tensor(c);
      if (!t) {
        st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
        break;
      }
      snprintf(t->name, sizeof t->name, "blk.%u.%s.weight.lora_%c", pairs[i].layer,
               fg_lora_targets[pairs[i].module].gguf, ab ? 'b' : 'a');
      snprintf(t->src_name, sizeof t->src_name, "%s", s->name);
      t->n_dims = 2;
      t->ne[0] = s->shape[1];
      t->ne[1] = s->shape[0];
      t->ne[2] = t->ne[3] = 1;
      t->src_type = fg_cv_ggml_of_st(s->dtype);
      t->out_type = fg_type_fallback(type, t->ne[0]); /* Q8_0 rows of fewer than 32: F16, as llama.cpp */
      n_f16 += t->out_type != type;
      t->file = pp->fi;
      t->offset = s->begin;
      t->check = true;
      st = fg_cv_plan_sizes(c, t, file);
    }
  }
  if (st != FG_OK) return st;
  if (n_f16)
    fg_log(FG_LOG_INFO, "convert: %zu tensor%s written F16: rows of %llu values (the rank) are not a multiple of Q8_0's "
           "32", n_f16, n_f16 == 1 ? "" : "s", (unsigned long long)pp->rank0);
  return FG_OK;
}

/* fgemma's vocabulary override (ov_path exists): read, and checked against the base model's pieces. */
static fg_status peft_read_override(fg_cv_ctx *c, peft_plan *pp, const char *ov_path) {
  const fg_peft_vocab_override *ov = &pp->ov;
  char *text = NULL;
  size_t size;
  fg_error e;
  fg_status st;
  if ((st = fg_cv_read_all(ov_path, CV_MAX_CONFIG, &text, &size, c->err)) != FG_OK ||
      (st = fg_peft_vocab_override_parse(text, size, ov_path, &pp->ov, c->err)) != FG_OK) {
    fg_free(text);
    return st;
  }
  fg_free(text);
  const fg_gguf_kv *toks = NULL;
  if (c->p->base && fg_gguf_get_arr(&pp->bg, FG_KEY_TOK_TOKENS, FG_GGUF_STRING, &toks, NULL) == FG_OK) {
    fg_gguf_str *pieces = NULL;
    if ((st = fg_gguf_str_array(toks, &pieces, &e)) != FG_OK)
      return fg_err(c->err, st, "base model %.100s: %s", fg_path_short(c->p->base), e.msg);
    for (size_t i = 0; i < ov->n && st == FG_OK; i++) {
      if ((uint64_t)ov->ids[i] >= toks->arr_n) {
        st = fg_err(c->err, FG_ERR_FORMAT, "%.100s: ids[%zu] = %d is outside base model %.80s's vocabulary (%llu "
                    "tokens)", fg_path_short(ov_path), i, (int)ov->ids[i], fg_path_short(c->p->base),
                    (unsigned long long)toks->arr_n);
        break;
      }
      const fg_gguf_str bp = pieces[ov->ids[i]];
      const bool same = bp.len == ov->lens[i] && memcmp(bp.ptr, ov->tokens[i], bp.len) == 0;
      if (!same && !(bp.len >= 7 && memcmp(bp.ptr, "<unused", 7) == 0))
        fg_log(FG_LOG_WARN, "convert: %s renames id %d, which base model %s holds as '%.*s' (not an <unusedN> piece)",
               FG_PEFT_OVERRIDE_FILE, (int)ov->ids[i], c->p->base, (int)FG_MIN(bp.len, 40), bp.ptr);
    }
    fg_free(pieces);
  }
  return st;
}

/* The adapter's metadata: general.*, adapter.*, the vocabulary override. */
static fg_status peft_write_metadata(fg_cv_ctx *c, const peft_plan *pp) {
  const char *dir = pp->dir;
  const fg_peft_config *pc = &pp->pc;
  const fg_peft_vocab_override *ov = &pp->ov;
  fg_status st = FG_OK;
  char name[160], desc[384];
  if (c->p->name) {
    snprintf(name, sizeof name, "%s", c->p->name);
  } else {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    snprintf(name, sizeof name, "%.*s", (int)FG_MIN(n - b, sizeof name - 1), dir + b);
  }
  int dl = snprintf(desc, sizeof desc, "LoRA adapter converted by fgemma %s from a PEFT adapter%s%s (r %u, lora_alpha %g",
                    fg_version_string(), pc->peft_version[0] ? " of peft " : "", pc->peft_version, pc->r, pc->alpha);
  if (dl > 0 && (size_t)dl < sizeof desc)
    snprintf(desc + dl, sizeof desc - (size_t)dl, "%s)",
             pc->rslora ? ", use_rslora: adapter.lora.alpha = lora_alpha * sqrt(r)" : "");
  fg_gguf_writer *w = c->w;
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_ARCHITECTURE, pp->arch);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_TYPE, "adapter");
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_NAME, name);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_DESCRIPTION, desc);
  if (pc->base_model[0]) {
    FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_BASE_MODEL_COUNT, 1);
    FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_BASE_MODEL_0_NAME, pc->base_model);
  }
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_FILE_TYPE, fg_g3_file_type(pp->type));
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_QUANTIZATION_VERSION, 2);
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_ALIGNMENT, FG_GGUF_DEFAULT_ALIGNMENT);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_ADAPTER_TYPE, "lora");
  FG_GGUF_SET(st, c->err, "", set_f32, w, FG_KEY_ADAPTER_LORA_ALPHA, (float)pp->alpha);
  if (ov->n) {
    FG_GGUF_SET(st, c->err, "", set_arr, w, FG_KEY_VOCAB_OVERRIDE_IDS, FG_GGUF_INT32, ov->ids, ov->n);
    FG_GGUF_SET(st, c->err, "", set_arr_str, w, FG_KEY_VOCAB_OVERRIDE_TOKENS, (const char *const *)ov->tokens, ov->lens,
                ov->n);
  }
  if (st == FG_OK)
    fg_log(FG_LOG_INFO, "convert: LoRA adapter, %zu matrices of %u layer(s), rank %u, adapter.lora.alpha %g%s",
           pp->n_pairs, pp->pairs[pp->n_pairs - 1].layer + 1, pp->rank0, pp->alpha,
           ov->n ? ", with a vocabulary override" : "");
  return st;
}

/* A PEFT LoRA adapter directory: config, output type, base model, pairs, tensors, override, metadata. */
fg_status fg_cv_plan_peft(fg_cv_ctx *c, const char *dir, const char *config_path) {
  peft_plan pp;
  memset(&pp, 0, sizeof pp);
  pp.dir = dir;
  pp.config_path = config_path;
  snprintf(pp.arch, sizeof pp.arch, "%s", FG_ARCH_GEMMA3);
  char *text = NULL, *st_path = fg_cv_join(dir, "adapter_model.safetensors");
  char *ov_path = fg_cv_join(dir, FG_PEFT_OVERRIDE_FILE);
  size_t size;
  fg_status st = st_path && ov_path ? FG_OK : fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK && (st = fg_cv_read_all(config_path, CV_MAX_CONFIG, &text, &size, c->err)) == FG_OK)
    st = fg_peft_config_parse(text, size, config_path, &pp.pc, c->err);
  fg_free(text);
  if (st == FG_OK) st = peft_output_type(c, &pp);
  if (st == FG_OK) st = peft_open_base(c, &pp);
  if (st == FG_OK) st = peft_collect_pairs(c, &pp, st_path);
  if (st == FG_OK) st = peft_check_pairs(c, &pp);
  if (st == FG_OK) st = peft_add_tensors(c, &pp);
  if (st == FG_OK && fg_cv_file_exists(ov_path)) st = peft_read_override(c, &pp, ov_path);
  if (st == FG_OK) st = peft_write_metadata(c, &pp);
  fg_free(st_path);
  fg_free(ov_path);
  fg_free(pp.pairs);
  fg_peft_config_clear(&pp.pc);
  fg_peft_vocab_override_clear(&pp.ov);
  fg_gguf_clear(&pp.bg);
  fg_mapfile_close(&pp.bmap);
  return st;
}
