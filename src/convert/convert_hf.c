/* convert_hf.c — the plan of a Hugging Face Gemma3ForCausalLM checkpoint: config.json, the safetensors
 * weights (one file or shards), the tokenizer files, then every tensor and key of the GGUF (convert.c
 * says what maps to what). */
#include "convert/convert_internal.h"

// ----------------------------------------------------------------------------------------------------
// config.json

typedef struct cv_config {
  fg_g3_hparams hp;
  uint32_t n_vocab;
  bool tied;
  int64_t bos_id, eos_id, pad_id; /* -1 = not given */
  char name[128];                 /* _name_or_path's last part */
  char transformers[32];
  char dtype[32];
} cv_config;

static const cJSON *cfg_get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* A positive integer key; absent: def (0 = required). */
static fg_status cfg_u32(const char *path, const cJSON *o, const char *k, uint32_t def, uint32_t *out, fg_error *err) {
  const cJSON *j = cfg_get(o, k);
  if (!j || cJSON_IsNull(j)) {
    if (!def) return fg_err(err, FG_ERR_FORMAT, "%.160s: %s is missing", fg_path_short(path), k);
    *out = def;
    return FG_OK;
  }
  if (!cJSON_IsNumber(j) || !(j->valuedouble >= 1.0 && j->valuedouble <= 16777216.0) ||
      j->valuedouble != floor(j->valuedouble))
    return fg_err(err, FG_ERR_FORMAT, "%.160s: %s must be a positive integer (at most 2^24)", fg_path_short(path), k);
  *out = (uint32_t)j->valuedouble;
  return FG_OK;
}

static fg_status cfg_f32(const char *path, const cJSON *o, const char *k, float def, float *out, fg_error *err) {
  const cJSON *j = cfg_get(o, k);
  if (!j || cJSON_IsNull(j)) {
    *out = def;
    return FG_OK;
  }
  if (!cJSON_IsNumber(j) || !(j->valuedouble > 0.0) || !isfinite(j->valuedouble) || (float)j->valuedouble == 0.0f ||
      !isfinite((float)j->valuedouble))
    return fg_err(err, FG_ERR_FORMAT, "%.160s: %s must be a positive number", fg_path_short(path), k);
  *out = (float)j->valuedouble;
  return FG_OK;
}

static int64_t cfg_id(const cJSON *o, const char *k) {
  const cJSON *j = cfg_get(o, k);
  if (cJSON_IsArray(j)) j = j->child; /* eos_token_id: [1, 106] */
  if (cJSON_IsNumber(j) && j->valuedouble >= 0.0 && j->valuedouble < 16777216.0 && j->valuedouble == floor(j->valuedouble))
    return (int64_t)j->valuedouble;
  return -1;
}

/* One RoPE parameter set (5.x rope_parameters entry or 4.x rope_scaling): only the default type. */
static fg_status cfg_rope(const char *path, const cJSON *r, const char *what, float def, float *theta, fg_error *err) {
  *theta = def;
  if (!r || cJSON_IsNull(r)) return FG_OK;
  if (!cJSON_IsObject(r)) return fg_err(err, FG_ERR_FORMAT, "%.160s: %s is not an object", fg_path_short(path), what);
  const cJSON *type = cfg_get(r, "rope_type");
  if (!type) type = cfg_get(r, "type");
  if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "default") == 0)) {
    const cJSON *factor = cfg_get(r, "factor");
    if (!(cJSON_IsNumber(factor) && factor->valuedouble == 1.0))
      return fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: %s: rope_type \"%.32s\" is not supported (fgemma runs plain RoPE)",
                    fg_path_short(path), what, cJSON_IsString(type) ? type->valuestring : "?");
  }
  return cfg_f32(path, r, "rope_theta", def, theta, err);
}

/* model_type and architectures: a text-only Gemma3ForCausalLM. */
static fg_status cfg_architecture(const char *path, const cJSON *root, fg_error *err) {
  const cJSON *mt = cfg_get(root, "model_type"), *arch = cfg_get(root, "architectures");
  const char *model_type = cJSON_IsString(mt) ? mt->valuestring : "";
  char archs[96] = "";
  bool causal = false;
  if (cJSON_IsArray(arch)) {
    for (const cJSON *a = arch->child; a; a = a->next) {
      if (!cJSON_IsString(a)) continue;
      if (strcmp(a->valuestring, "Gemma3ForCausalLM") == 0) causal = true;
      if (!archs[0]) snprintf(archs, sizeof archs, "%.80s", a->valuestring);
    }
  }
  if (strcmp(model_type, "gemma3") == 0 || cfg_get(root, "text_config")) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: multimodal Gemma 3 (model_type gemma3, %s) is not supported; fgemma "
                  "converts text-only Gemma3ForCausalLM checkpoints (model_type gemma3_text)", fg_path_short(path),
                  archs[0] ? archs : "Gemma3ForConditionalGeneration");
  }
  if (strcmp(model_type, "gemma3_text") != 0 || (archs[0] && !causal)) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: unknown architecture '%.40s' (model_type '%.40s'); fgemma converts "
                  "Gemma3ForCausalLM (model_type gemma3_text)", fg_path_short(path), archs[0] ? archs : "?", model_type[0] ? model_type : "?");
  }
  return FG_OK;
}

/* The sizes, and what fgemma's forward (and llama.cpp's gemma3 graph) computes: attention scale,
 * activation, no biases, no attention softcapping. */
static fg_status cfg_sizes(const char *path, const cJSON *root, cv_config *cf, fg_error *err) {
  fg_g3_hparams *hp = &cf->hp;
  fg_status st;
  if ((st = cfg_u32(path, root, "vocab_size", 0, &cf->n_vocab, err)) != FG_OK ||
      (st = cfg_u32(path, root, "hidden_size", 0, &hp->n_embd, err)) != FG_OK ||
      (st = cfg_u32(path, root, "intermediate_size", 0, &hp->n_ff, err)) != FG_OK ||
      (st = cfg_u32(path, root, "num_hidden_layers", 0, &hp->n_layer, err)) != FG_OK ||
      (st = cfg_u32(path, root, "num_attention_heads", 0, &hp->n_head, err)) != FG_OK ||
      /* the other keys default to Gemma3TextConfig's defaults, as transformers reads them */
      (st = cfg_u32(path, root, "num_key_value_heads", 4, &hp->n_head_kv, err)) != FG_OK ||
      (st = cfg_u32(path, root, "head_dim", 256, &hp->head_dim, err)) != FG_OK ||
      (st = cfg_u32(path, root, "max_position_embeddings", 131072, &hp->n_ctx, err)) != FG_OK ||
      (st = cfg_f32(path, root, "rms_norm_eps", 1e-6f, &hp->rms_eps, err)) != FG_OK)
    return st;
  if (hp->n_head % hp->n_head_kv != 0) {
    return fg_err(err, FG_ERR_FORMAT, "%.160s: num_attention_heads %u is not a multiple of num_key_value_heads %u", fg_path_short(path),
                  hp->n_head, hp->n_head_kv);
  }
  /* what fgemma's forward (and llama.cpp's gemma3 graph) computes: anything else would be run wrongly */
  uint32_t qpas;
  if ((st = cfg_u32(path, root, "query_pre_attn_scalar", 256, &qpas, err)) != FG_OK) return st;
  if (qpas != hp->head_dim) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: query_pre_attn_scalar %u differs from head_dim %u; fgemma scales "
                  "attention by 1/sqrt(head_dim)", fg_path_short(path), qpas, hp->head_dim);
  }
  const cJSON *act = cfg_get(root, "hidden_activation");
  if (!act || cJSON_IsNull(act)) act = cfg_get(root, "hidden_act");
  if (act && !cJSON_IsNull(act) &&
      !(cJSON_IsString(act) && (strcmp(act->valuestring, "gelu_pytorch_tanh") == 0 || strcmp(act->valuestring, "gelu_new") == 0))) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: hidden_activation '%.32s' is not supported (gelu_pytorch_tanh)", fg_path_short(path),
                  cJSON_IsString(act) ? act->valuestring : "?");
  }
  static const char *const must_be_off[] = {"attention_bias", "use_bidirectional_attention"};
  for (size_t i = 0; i < 2; i++) {
    const cJSON *j = cfg_get(root, must_be_off[i]);
    if (j && !cJSON_IsFalse(j) && !cJSON_IsNull(j)) {
      return fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: %s is set; fgemma runs causal attention without biases", fg_path_short(path), must_be_off[i]);
    }
  }
  const cJSON *alc = cfg_get(root, "attn_logit_softcapping");
  if (alc && !cJSON_IsNull(alc)) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: attn_logit_softcapping is set (Gemma 2 style); not supported", fg_path_short(path));
  }
  const cJSON *fsc = cfg_get(root, "final_logit_softcapping");
  hp->final_softcap = 0.0f;
  if (fsc && !cJSON_IsNull(fsc) && (st = cfg_f32(path, root, "final_logit_softcapping", 0.0f, &hp->final_softcap, err)) != FG_OK)
    return st;
  return FG_OK;
}

/* The sliding window and the layer pattern: layer_types (5.x, and 4.5x), else sliding_window_pattern. */
static fg_status cfg_layer_pattern(const char *path, const cJSON *root, fg_g3_hparams *hp, fg_error *err) {
  fg_status st;
  const cJSON *sw = cfg_get(root, "sliding_window");
  if (sw && !cJSON_IsNull(sw)) {
    if ((st = cfg_u32(path, root, "sliding_window", 0, &hp->sliding_window, err)) != FG_OK) return st;
  } else {
    hp->sliding_window = sw ? 0 : 4096;
  }
  const cJSON *lt = cfg_get(root, "layer_types");
  if (lt && !cJSON_IsNull(lt)) {
    if (!cJSON_IsArray(lt) || (uint32_t)cJSON_GetArraySize(lt) != hp->n_layer) {
      return fg_err(err, FG_ERR_FORMAT, "%.160s: layer_types must list num_hidden_layers (%u) entries", fg_path_short(path), hp->n_layer);
    }
    /* fgemma (and llama.cpp) express the pattern as: layer l is global iff l % P == P - 1 */
    uint32_t P = 0, l = 0;
    for (const cJSON *e = lt->child; e; e = e->next, l++) {
      const bool full = cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0;
      if (!full && !(cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0)) {
        return fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: layer_types[%u] is not full_attention or sliding_attention", fg_path_short(path), l);
      }
      if (full && P == 0) P = l + 1;
    }
    if (P == 0) P = hp->n_layer + 1; /* no global layer */
    l = 0;
    for (const cJSON *e = lt->child; e; e = e->next, l++) {
      const bool full = strcmp(e->valuestring, "full_attention") == 0;
      if (full != (l % P == P - 1)) {
        return fg_err(err, FG_ERR_UNSUPPORTED, "%.140s: layer_types is not periodic (layer %u is %s); fgemma needs every "
                      "P-th layer global", fg_path_short(path), l, e->valuestring);
      }
    }
    hp->swa_pattern = P;
    if (P > 1 && hp->sliding_window == 0) {
      return fg_err(err, FG_ERR_FORMAT, "%.160s: layer_types has sliding layers but sliding_window is null", fg_path_short(path));
    }
  } else {
    const char *k = cfg_get(root, "sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    if ((st = cfg_u32(path, root, k, 6, &hp->swa_pattern, err)) != FG_OK) return st;
  }
  return FG_OK;
}

/* RoPE bases: rope_parameters per layer type (5.x), else rope_theta / rope_local_base_freq (4.x). */
static fg_status cfg_rope_bases(const char *path, const cJSON *root, fg_g3_hparams *hp, fg_error *err) {
  fg_status st;
  const cJSON *rp = cfg_get(root, "rope_parameters");
  if (rp && !cJSON_IsNull(rp)) {
    const cJSON *full = cfg_get(rp, "full_attention"), *slide = cfg_get(rp, "sliding_attention");
    if (!full && !slide) { /* one set for every layer */
      if ((st = cfg_rope(path, rp, "rope_parameters", 1e6f, &hp->rope_base, err)) != FG_OK) return st;
      hp->rope_base_swa = hp->rope_base;
    } else if ((st = cfg_rope(path, full, "rope_parameters.full_attention", 1e6f, &hp->rope_base, err)) != FG_OK ||
               (st = cfg_rope(path, slide, "rope_parameters.sliding_attention", 1e4f, &hp->rope_base_swa, err)) != FG_OK) {
      return st;
    }
  } else {
    float unused;
    if ((st = cfg_f32(path, root, "rope_theta", 1e6f, &hp->rope_base, err)) != FG_OK ||
        (st = cfg_f32(path, root, "rope_local_base_freq", 1e4f, &hp->rope_base_swa, err)) != FG_OK ||
        (st = cfg_rope(path, cfg_get(root, "rope_scaling"), "rope_scaling", 1.0f, &unused, err)) != FG_OK)
      return st;
  }
  return FG_OK;
}

/* The tied head, the special ids, the name, the transformers version and the dtype (never fails). */
static void cfg_names(const cJSON *root, cv_config *cf) {
  const cJSON *tie = cfg_get(root, "tie_word_embeddings");
  cf->tied = !tie || cJSON_IsNull(tie) || cJSON_IsTrue(tie);
  cf->bos_id = cfg_id(root, "bos_token_id");
  cf->eos_id = cfg_id(root, "eos_token_id");
  cf->pad_id = cfg_id(root, "pad_token_id");
  const cJSON *nm = cfg_get(root, "_name_or_path");
  if (cJSON_IsString(nm) && nm->valuestring[0]) {
    const char *s = nm->valuestring;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && s[b - 1] != '/') b--;
    snprintf(cf->name, sizeof cf->name, "%.*s", (int)FG_MIN(n - b, sizeof cf->name - 1), s + b);
  }
  const cJSON *tv = cfg_get(root, "transformers_version");
  if (cJSON_IsString(tv)) snprintf(cf->transformers, sizeof cf->transformers, "%.30s", tv->valuestring);
  const cJSON *dt = cfg_get(root, "dtype");
  if (!cJSON_IsString(dt)) dt = cfg_get(root, "torch_dtype");
  if (cJSON_IsString(dt)) snprintf(cf->dtype, sizeof cf->dtype, "%.30s", dt->valuestring);
}

static fg_status parse_config(const char *path, const char *dir, cv_config *cf, fg_error *err) {
  memset(cf, 0, sizeof *cf);
  char *text;
  size_t size;
  fg_status st = fg_cv_read_all(path, CV_MAX_CONFIG, &text, &size, err);
  if (st != FG_OK) {
    if (st == FG_ERR_IO)
      return fg_err(err, FG_ERR_IO, "%.160s: no config.json (is %.60s a Hugging Face checkpoint directory? a PEFT adapter "
                    "directory has adapter_config.json)", fg_path_short(path), fg_path_short(dir));
    return st;
  }
  cJSON *root = cJSON_ParseWithLength(text, size);
  fg_free(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return fg_err(err, FG_ERR_FORMAT, "%.160s: not a JSON object", fg_path_short(path));
  }
  if ((st = cfg_architecture(path, root, err)) == FG_OK && (st = cfg_sizes(path, root, cf, err)) == FG_OK &&
      (st = cfg_layer_pattern(path, root, &cf->hp, err)) == FG_OK && (st = cfg_rope_bases(path, root, &cf->hp, err)) == FG_OK)
    cfg_names(root, cf);
  cJSON_Delete(root);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Safetensors files

/* The checkpoint's safetensors files: model.safetensors, or the shards its index lists (every tensor
 * of a shard listed for that shard, every listed tensor present). */
static fg_status open_weights(fg_cv_ctx *c, const char *dir) {
  fg_status st = FG_OK;
  char *index = fg_cv_join(dir, "model.safetensors.index.json"), *single = fg_cv_join(dir, "model.safetensors");
  char *text = NULL;
  cJSON *root = NULL;
  if (!index || !single) {
    st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t idx;
  if (!fg_cv_file_exists(index)) {
    if (!fg_cv_file_exists(single)) {
      char *bin = fg_cv_join(dir, "pytorch_model.bin");
      const bool has_bin = bin && fg_cv_file_exists(bin);
      fg_free(bin);
      st = fg_err(c->err, FG_ERR_IO, "%.120s: no model.safetensors or model.safetensors.index.json%s", fg_path_short(dir),
                  has_bin ? " (only safetensors are read: re-save with save_pretrained(safe_serialization=True))" : "");
      goto done;
    }
    if ((st = fg_cv_add_file(c, single, &idx)) == FG_OK) st = fg_cv_read_header(c, &c->files[idx]);
    goto done;
  }
  size_t size;
  if ((st = fg_cv_read_all(index, CV_MAX_CONFIG, &text, &size, c->err)) != FG_OK) goto done;
  root = cJSON_ParseWithLength(text, size);
  const cJSON *wm = cfg_get(root, "weight_map");
  if (!cJSON_IsObject(wm)) {
    st = fg_err(c->err, FG_ERR_FORMAT, "%.160s: no object weight_map", fg_path_short(index));
    goto done;
  }
  /* the shard files, in order of first mention */
  for (const cJSON *e = wm->child; e && st == FG_OK; e = e->next) {
    if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/') || strcmp(e->valuestring, "..") == 0) {
      st = fg_err(c->err, FG_ERR_FORMAT, "%.120s: weight_map[\"%.60s\"] is not a file name in the directory", fg_path_short(index), e->string);
      break;
    }
    bool seen = false;
    for (size_t i = 0; i < c->n_files && !seen; i++)
      seen = strcmp(fg_cv_base_name(c->files[i].path), e->valuestring) == 0;
    if (seen) continue;
    char *path = fg_cv_join(dir, e->valuestring);
    if (!path) {
      st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
      break;
    }
    if (!fg_cv_file_exists(path)) st = fg_err(c->err, FG_ERR_IO, "%.120s lists %.60s, which does not exist", fg_path_short(index), e->valuestring);
    if (st == FG_OK && (st = fg_cv_add_file(c, path, &idx)) == FG_OK) st = fg_cv_read_header(c, &c->files[idx]);
    fg_free(path);
  }
  if (st != FG_OK) goto done;
  for (size_t i = 0; i < c->n_files && st == FG_OK; i++) {
    const fg_cv_file *fl = &c->files[i];
    for (size_t k = 0; k < fl->st.n; k++) {
      const cJSON *e = cfg_get(wm, fl->st.t[k].name);
      if (!e || strcmp(e->valuestring, fg_cv_base_name(fl->path)) != 0) {
        st = fg_err(c->err, FG_ERR_FORMAT, "%.100s holds tensor '%.60s', which the index lists %s%.40s", fg_path_short(fl->path),
                    fl->st.t[k].name, e ? "in " : "nowhere", e ? e->valuestring : "");
        break;
      }
    }
  }
  for (const cJSON *e = wm->child; e && st == FG_OK; e = e->next) {
    bool found = false;
    for (size_t i = 0; i < c->n_files && !found; i++)
      found = strcmp(fg_cv_base_name(c->files[i].path), e->valuestring) == 0 && fg_st_find(&c->files[i].st, e->string);
    if (!found)
      st = fg_err(c->err, FG_ERR_FORMAT, "%.100s lists tensor '%.60s' in %.40s, which does not hold it", fg_path_short(index), e->string,
                  e->valuestring);
  }
done:
  cJSON_Delete(root);
  fg_free(text);
  fg_free(index);
  fg_free(single);
  return st;
}

static const fg_st_tensor *find_st(const fg_cv_ctx *c, const char *name, size_t *file) {
  for (size_t i = 0; i < c->n_files; i++) {
    const fg_st_tensor *t = fg_st_find(&c->files[i].st, name);
    if (t) {
      *file = i;
      return t;
    }
  }
  return NULL;
}

/* One expected checkpoint tensor: present, float, of the shape the config implies ([rows, cols] or
 * [cols] for a vector). */
static fg_status plan_hf_tensor(fg_cv_ctx *c, const char *hf, const char *gguf, uint64_t cols, uint64_t rows, bool norm,
                                uint32_t out_type, const char *config_path) {
  size_t fi;
  const fg_st_tensor *s = find_st(c, hf, &fi);
  if (!s) {
    if (c->n_files == 1)
      return fg_err(c->err, FG_ERR_FORMAT, "%.120s: missing tensor '%s' (%.40s expects it)", fg_path_short(c->files[0].path), hf,
                    fg_cv_base_name(config_path));
    return fg_err(c->err, FG_ERR_FORMAT, "missing tensor '%s': in none of the %zu shards model.safetensors.index.json "
                  "lists (%.120s expects it)", hf, c->n_files, fg_path_short(config_path));
  }
  const char *file = c->files[fi].path;
  const uint32_t type = fg_cv_ggml_of_st(s->dtype);
  if (type == UINT32_MAX)
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: tensor '%s' has dtype %s; fgemma converts F32, F16 and BF16",
                  fg_path_short(file), hf, fg_st_dtype_name(s->dtype));
  const bool shape_ok = norm ? (s->n_dims == 1 && s->shape[0] == cols)
                             : (s->n_dims == 2 && s->shape[0] == rows && s->shape[1] == cols);
  if (!shape_ok) {
    char got[96] = "[";
    for (uint32_t d = 0; d < s->n_dims && d < 4; d++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "", (unsigned long long)s->shape[d]);
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s]", s->n_dims > 4 ? ", ..." : "");
    if (norm)
      return fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%s' has shape %s; %.60s implies [%llu]", fg_path_short(file), hf, got,
                    fg_cv_base_name(config_path), (unsigned long long)cols);
    return fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%s' has shape %s; %.60s implies [%llu, %llu]", fg_path_short(file), hf, got,
                  fg_cv_base_name(config_path), (unsigned long long)rows, (unsigned long long)cols);
  }
  fg_cv_tensor *t = fg_cv_add_tensor(c);
  if (!t) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  snprintf(t->name, sizeof t->name, "%s", gguf);
  snprintf(t->src_name, sizeof t->src_name, "%s", hf);
  t->n_dims = norm ? 1 : 2;
  t->ne[0] = cols;
  t->ne[1] = norm ? 1 : rows;
  t->ne[2] = t->ne[3] = 1;
  t->src_type = type;
  t->out_type = norm ? FG_TYPE_F32 : out_type;
  t->file = fi;
  t->offset = s->begin;
  t->add_one = norm;
  return fg_cv_plan_sizes(c, t, file);
}

// ----------------------------------------------------------------------------------------------------
// Tokenizer

typedef struct cv_tok {
  fg_hf_vocab v;
  fg_hf_special sp;
  char *chat_template; /* or NULL */
} cv_tok;

/* A special token of tokenizer_config.json: "<bos>" or {"content": "<bos>", ...}; -1 when absent. */
static fg_status tc_token(const cJSON *tc, const char *key, const fg_hf_vocab *v, const char *path, int64_t *id,
                          fg_error *err) {
  *id = -1;
  const cJSON *j = cfg_get(tc, key);
  if (cJSON_IsObject(j)) j = cfg_get(j, "content");
  if (!cJSON_IsString(j)) return FG_OK;
  const int32_t k = fg_hf_vocab_find(v, j->valuestring, strlen(j->valuestring));
  if (k < 0) return fg_err(err, FG_ERR_FORMAT, "%.120s: %s \"%.40s\" is not in tokenizer.json's vocabulary", fg_path_short(path), key, j->valuestring);
  *id = k;
  return FG_OK;
}

static fg_status choose_id(int64_t from_tc, int64_t from_cfg, const fg_hf_vocab *v, const char *fallback, bool required,
                           const char *what, const char *dir, uint32_t *out, fg_error *err) {
  if (from_tc >= 0) return *out = (uint32_t)from_tc, FG_OK;
  if (from_cfg >= 0) {
    if ((uint64_t)from_cfg >= v->n)
      return fg_err(err, FG_ERR_FORMAT, "%.120s: config.json's %s_token_id %lld is outside the vocabulary (%u)", fg_path_short(dir), what,
                    (long long)from_cfg, v->n);
    return *out = (uint32_t)from_cfg, FG_OK;
  }
  const int32_t k = fg_hf_vocab_find(v, fallback, strlen(fallback));
  if (k >= 0) return *out = (uint32_t)k, FG_OK;
  if (!required) return *out = 0, FG_OK;
  return fg_err(err, FG_ERR_FORMAT, "%.120s: no %s token (tokenizer_config.json, config.json and %s all missing)", fg_path_short(dir), what,
                fallback);
}

static fg_status load_tokenizer(const char *dir, const cv_config *cf, cv_tok *tk, fg_error *err) {
  memset(tk, 0, sizeof *tk);
  char *tj = fg_cv_join(dir, "tokenizer.json"), *tcp = fg_cv_join(dir, "tokenizer_config.json"), *jinja = fg_cv_join(dir, "chat_template.jinja");
  char *text = NULL;
  cJSON *tc = NULL;
  size_t size;
  fg_status st = FG_OK;
  fg_error e;
  if (!tj || !tcp || !jinja) {
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  if (!fg_cv_file_exists(tj)) {
    char *spm = fg_cv_join(dir, "tokenizer.model");
    const bool has_spm = spm && fg_cv_file_exists(spm);
    fg_free(spm);
    st = fg_err(err, FG_ERR_IO, "%.120s: no tokenizer.json%s", fg_path_short(dir),
                has_spm ? " (only tokenizer.model: fgemma reads the tokenizer from tokenizer.json; save it with a fast "
                          "tokenizer)" : "");
    goto done;
  }
  if ((st = fg_cv_read_all(tj, CV_MAX_TOKENIZER, &text, &size, err)) != FG_OK) goto done;
  fg_hf_vocab_info info;
  st = fg_hf_vocab_read_json(text, size, tj, &tk->v, &info, &e);
  fg_free(text);
  text = NULL;
  if (st != FG_OK) {
    st = fg_err(err, st, "%s", e.msg);
    goto done;
  }
  if (tk->v.n != cf->n_vocab) {
    st = fg_err(err, FG_ERR_FORMAT, "%.120s has %u tokens, but config.json's vocab_size (and the embedding) is %u", tj,
                tk->v.n, cf->n_vocab);
    goto done;
  }
  if (info.n_added_out)
    fg_log(FG_LOG_INFO, "convert: %u added token(s) of %s beyond the vocabulary left out (as llama.cpp does)",
           info.n_added_out, tj);
  if ((st = fg_hf_vocab_index(&tk->v, err)) != FG_OK) goto done;

  int64_t bos = -1, eos = -1, pad = -1, unk = -1;
  tk->sp.add_bos = info.add_bos != 0; /* the post-processor's template; true when there is none */
  tk->sp.add_eos = false;
  if (fg_cv_file_exists(tcp)) {
    if ((st = fg_cv_read_all(tcp, CV_MAX_CONFIG, &text, &size, err)) != FG_OK) goto done;
    tc = cJSON_ParseWithLength(text, size);
    fg_free(text);
    text = NULL;
    if (!cJSON_IsObject(tc)) {
      st = fg_err(err, FG_ERR_FORMAT, "%.160s: not a JSON object", fg_path_short(tcp));
      goto done;
    }
    if ((st = tc_token(tc, "bos_token", &tk->v, tcp, &bos, err)) != FG_OK ||
        (st = tc_token(tc, "eos_token", &tk->v, tcp, &eos, err)) != FG_OK ||
        (st = tc_token(tc, "pad_token", &tk->v, tcp, &pad, err)) != FG_OK ||
        (st = tc_token(tc, "unk_token", &tk->v, tcp, &unk, err)) != FG_OK)
      goto done;
    const cJSON *ab = cfg_get(tc, "add_bos_token"), *ae = cfg_get(tc, "add_eos_token");
    if (cJSON_IsBool(ab)) tk->sp.add_bos = cJSON_IsTrue(ab);
    if (cJSON_IsBool(ae)) tk->sp.add_eos = cJSON_IsTrue(ae);
    /* chat_template: a string, or a list of {name, template} (the one named "default", else the first) */
    const cJSON *ct = cfg_get(tc, "chat_template");
    const char *tmpl = NULL;
    if (cJSON_IsString(ct)) {
      tmpl = ct->valuestring;
    } else if (cJSON_IsArray(ct)) {
      for (const cJSON *x = ct->child; x; x = x->next) {
        const cJSON *nm = cfg_get(x, "name"), *tt = cfg_get(x, "template");
        if (!cJSON_IsString(tt)) continue;
        if (!tmpl || (cJSON_IsString(nm) && strcmp(nm->valuestring, "default") == 0)) tmpl = tt->valuestring;
      }
    }
    if (tmpl && !(tk->chat_template = fg_strndup(tmpl, strlen(tmpl)))) {
      st = fg_err(err, FG_ERR_NOMEM, "out of memory");
      goto done;
    }
  }
  if (fg_cv_file_exists(jinja)) { /* transformers >= 4.5x saves the template here; it wins */
    fg_free(tk->chat_template);
    tk->chat_template = NULL;
    if ((st = fg_cv_read_all(jinja, CV_MAX_CONFIG, &tk->chat_template, &size, err)) != FG_OK) goto done;
    if (memchr(tk->chat_template, '\0', size)) {
      st = fg_err(err, FG_ERR_FORMAT, "%.160s: holds a NUL byte", fg_path_short(jinja));
      goto done;
    }
  }
  if ((st = choose_id(bos, cf->bos_id, &tk->v, "<bos>", true, "bos", dir, &tk->sp.bos, err)) != FG_OK ||
      (st = choose_id(eos, cf->eos_id, &tk->v, "<eos>", true, "eos", dir, &tk->sp.eos, err)) != FG_OK ||
      (st = choose_id(pad, cf->pad_id, &tk->v, "<pad>", false, "pad", dir, &tk->sp.pad, err)) != FG_OK ||
      (st = choose_id(unk, -1, &tk->v, "<unk>", false, "unk", dir, &tk->sp.unk, err)) != FG_OK)
    goto done;
done:
  cJSON_Delete(tc);
  fg_free(text);
  fg_free(tj);
  fg_free(tcp);
  fg_free(jinja);
  if (st != FG_OK) {
    fg_hf_vocab_free(&tk->v);
    fg_free(tk->chat_template);
    tk->chat_template = NULL;
  }
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Plan

fg_status fg_cv_plan_checkpoint(fg_cv_ctx *c, const char *dir) {
  char *config_path = fg_cv_join(dir, "config.json");
  if (!config_path) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  cv_config cf;
  cv_tok tk;
  memset(&tk, 0, sizeof tk);
  fg_status st = parse_config(config_path, dir, &cf, c->err);
  if (st == FG_OK) st = open_weights(c, dir);
  if (st != FG_OK) goto done;
  const fg_g3_hparams *hp = &cf.hp;

  /* the output type: asked for, or the checkpoint's dtype when every matrix shares it */
  uint32_t type = c->p->type;
  if (type == FG_CONVERT_TYPE_AUTO) {
    size_t fi;
    const fg_st_tensor *e = find_st(c, FG_G3_HF_EMBED, &fi);
    type = e ? fg_cv_ggml_of_st(e->dtype) : FG_TYPE_F32;
    for (size_t i = 0; i < c->n_files; i++)
      for (size_t k = 0; k < c->files[i].st.n; k++)
        if (c->files[i].st.t[k].n_dims == 2 && fg_cv_ggml_of_st(c->files[i].st.t[k].dtype) != type) type = FG_TYPE_F32;
    if (type == UINT32_MAX) type = FG_TYPE_F32;
  }
  const uint64_t E = hp->n_embd, V = cf.n_vocab;
  c->mix.n_layer = hp->n_layer;
  c->mix.n_gqa = hp->n_head_kv ? hp->n_head / hp->n_head_kv : 1;
  c->mix.tied = cf.tied;
  if (fg_cv_is_mix(c))
    type = fg_g3_mix_of(c->p->type - FG_CONVERT_MIX_BASE)->type;
  st = plan_hf_tensor(c, FG_G3_HF_EMBED, "token_embd.weight", E, V, false,
                      fg_cv_matrix_type(c, "token_embd.weight", E, type), config_path);
  for (uint32_t l = 0; l < hp->n_layer && st == FG_OK; l++) {
    for (size_t i = 0; i < FG_G3_LAYER_TENSORS && st == FG_OK; i++) {
      const fg_g3_layer_tensor *lt = &fg_g3_layer_tensors[i];
      char hf[96], gguf[64];
      snprintf(hf, sizeof hf, "model.layers.%u.%s.weight", l, lt->hf);
      snprintf(gguf, sizeof gguf, "blk.%u.%s.weight", l, lt->gguf);
      st = plan_hf_tensor(c, hf, gguf, fg_g3_dim(hp, lt->in), fg_g3_dim(hp, lt->out), lt->out == 0,
                          fg_cv_matrix_type(c, gguf, fg_g3_dim(hp, lt->in), type), config_path);
    }
  }
  if (st == FG_OK) st = plan_hf_tensor(c, FG_G3_HF_NORM, "output_norm.weight", E, 1, true, type, config_path);
  size_t fi;
  const bool has_head = find_st(c, FG_G3_HF_HEAD, &fi) != NULL;
  if (st == FG_OK && !cf.tied && !has_head)
    st = fg_err(c->err, FG_ERR_FORMAT, "missing tensor '%s' (%.100s says tie_word_embeddings false)", FG_G3_HF_HEAD,
                fg_path_short(config_path));
  const uint32_t head_type = c->p->head_type ? c->p->head_type : fg_cv_matrix_type(c, "output.weight", E, type);
  if (st == FG_OK && !cf.tied) st = plan_hf_tensor(c, FG_G3_HF_HEAD, "output.weight", E, V, false, head_type, config_path);
  if (st == FG_OK && cf.tied && has_head)
    fg_log(FG_LOG_INFO, "convert: %s ignored: the model ties it to the embedding (tie_word_embeddings)", FG_G3_HF_HEAD);
  if (st == FG_OK && cf.tied && c->p->head_type) {
    /* a head of its own, quantized from the embedding's rows */
    fg_cv_tensor *t = fg_cv_add_tensor(c);
    if (!t) {
      st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    } else {
      *t = c->t[0];
      snprintf(t->name, sizeof t->name, "output.weight");
      t->out_type = c->p->head_type;
      st = fg_cv_plan_sizes(c, t, c->files[t->file].path);
    }
  }
  /* every tensor of the checkpoint must have been used (a lm_head of a tied model is let go) */
  for (size_t i = 0; i < c->n_files && st == FG_OK; i++) {
    const fg_cv_file *fl = &c->files[i];
    for (size_t k = 0; k < fl->st.n && st == FG_OK; k++) {
      const char *n = fl->st.t[k].name;
      bool used = cf.tied && strcmp(n, FG_G3_HF_HEAD) == 0;
      for (size_t j = 0; j < c->n_t && !used; j++) used = strcmp(c->t[j].src_name, n) == 0;
      if (!used)
        st = fg_err(c->err, FG_ERR_FORMAT, "%.100s: unexpected tensor '%.60s' (not part of a Gemma3ForCausalLM with %u "
                    "layers as %.40s describes)", fg_path_short(fl->path), n, hp->n_layer,
                    fg_cv_base_name(config_path));
    }
  }
  if (st == FG_OK) st = load_tokenizer(dir, &cf, &tk, c->err);
  if (st != FG_OK) goto done;

  /* metadata */
  char name[160], desc[256];
  if (c->p->name) snprintf(name, sizeof name, "%s", c->p->name);
  else if (cf.name[0]) snprintf(name, sizeof name, "%s", cf.name);
  else {
    const char *d = dir;
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && d[b - 1] != '/') b--;
    snprintf(name, sizeof name, "%.*s", (int)(n - b), d + b);
  }
  snprintf(desc, sizeof desc, "converted by fgemma %s from a Hugging Face Gemma3ForCausalLM checkpoint (transformers %s, %s)",
           fg_version_string(), cf.transformers[0] ? cf.transformers : "?", cf.dtype[0] ? cf.dtype : "?");
  fg_gguf_writer *w = c->w;
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_ARCHITECTURE, FG_ARCH_GEMMA3);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_TYPE, "model");
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_NAME, name);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_DESCRIPTION, desc);
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_FILE_TYPE, fg_cv_file_type(c, type));
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_QUANTIZATION_VERSION, 2);
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_ALIGNMENT, FG_GGUF_DEFAULT_ALIGNMENT);
  fg_error e;
  if (st == FG_OK && (st = fg_g3_write_hparams(w, hp, &e)) != FG_OK) st = fg_err(c->err, st, "%s", e.msg);
  if (st == FG_OK && (st = fg_hf_vocab_write_gguf(w, &tk.v, &tk.sp, &e)) != FG_OK) st = fg_err(c->err, st, "%s", e.msg);
  if (tk.chat_template) FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_CHAT_TEMPLATE, tk.chat_template);
done:
  fg_hf_vocab_free(&tk.v);
  fg_free(tk.chat_template);
  fg_free(config_path);
  return st;
}
