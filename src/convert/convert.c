/* convert.c — fg_convert: a Hugging Face Gemma3ForCausalLM checkpoint (or a gemma3 GGUF) to a gemma3
 * GGUF with llama.cpp's conventions, streamed one chunk of rows at a time (see fgemma.h).
 *
 *   checkpoint                              GGUF
 *   config.json                    ->       gemma3.* keys (gemma3.c)
 *   *.safetensors (+ index.json)   ->       tensors: names (fg_g3_layer_tensors), PyTorch's [out, in]
 *                                           rows = GGUF rows, norm weights + 1 in f32, matrices
 *                                           quantized with the reference quantizers
 *   tokenizer.json                 ->       tokenizer.ggml.* (hf_vocab.c)
 *   tokenizer_config.json          ->       bos/eos/pad/unk ids, add_bos/add_eos, chat template
 *   chat_template.jinja            ->       tokenizer.chat_template (preferred over the config's)
 *
 * A PEFT LoRA adapter directory (adapter_config.json) becomes a GGUF LoRA adapter (plan_peft; the
 * names, the config and what is refused: peft.c):
 *   adapter_config.json            ->       adapter.lora.alpha (rsLoRA folded in), general.*
 *   adapter_model.safetensors      ->       blk.N.<matrix>.weight.lora_a / .lora_b, PEFT's bytes
 *   fgemma_vocab_override.json     ->       fgemma.vocab_override.ids / .tokens
 * Its values are checked while they stream (finite; within F16's range when written F16): a bad value
 * fails the conversion and removes the temporary file.
 *
 * Everything is checked before the output file is created: architecture and the config values fgemma
 * can express, every expected tensor present once with the shape the config implies and a float
 * dtype, no unexpected tensor, a tokenizer of exactly vocab_size pieces. Tensor bytes are then read
 * with stdio (never mapped: mapped pages would count towards the process's resident memory). */
#include "convert/gemma3.h"
#include "convert/hf_vocab.h"
#include "convert/peft.h"
#include "convert/safetensors.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "tensor/quant_search.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CV_CHUNK_BYTES (4u << 20)     /* rows are read, converted and written in chunks of about this size */
#define CV_MAX_CONFIG (16u << 20)     /* config.json, tokenizer_config.json, the index, a chat template */
#define CV_MAX_TOKENIZER (512u << 20) /* tokenizer.json (Gemma 3's is 33 MB) */

typedef struct cv_file {
  char *path;
  FILE *f;
  uint64_t size;
  fg_st_header st; /* safetensors header (checkpoint input) */
} cv_file;

typedef struct cv_tensor {
  char name[64];       /* GGUF name */
  char src_name[128];  /* the name in the input */
  uint32_t n_dims;
  uint64_t ne[FG_GGUF_MAX_DIMS];
  uint32_t src_type;   /* GGML type id of the source bytes */
  uint32_t out_type;
  size_t file;         /* index into cv_ctx.files */
  uint64_t offset;     /* absolute offset of the source bytes in that file */
  bool add_one;        /* a checkpoint's norm weight: + 1 (Gemma's RMSNorm computes x * (1 + w)) */
  bool check;          /* every value must be finite (and within F16's range when written F16) */
  uint64_t rows, src_row_bytes, out_row_bytes, out_bytes;
} cv_tensor;

typedef struct cv_ctx {
  const fg_convert_params *p;
  fg_error *err;
  cv_file *files;
  size_t n_files;
  cv_tensor *t;
  size_t n_t, cap_t;
  fg_gguf_writer *w;
  uint64_t done, total;
  fg_g3_mix_model mix;   /* the model as the mix rules see it (p->type a FG_CONVERT_MIX) */
  size_t n_requant;      /* tensors re-quantized from quantized values */
  char requant[128];     /* the first of them, "name (q5_0 -> q4_k)" */
} cv_ctx;

// ----------------------------------------------------------------------------------------------------
// Small helpers

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static char *join(const char *dir, const char *name) {
  const size_t n = strlen(dir) + strlen(name) + 2;
  char *p = fg_malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The whole file, NUL-terminated; FG_ERR_IO naming it when it cannot be read. */
static fg_status read_all(const char *path, size_t limit, char **out, size_t *size, fg_error *err) {
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

static fg_status read_at(cv_ctx *c, cv_file *fl, uint64_t off, void *buf, size_t n, const char *what) {
  if (!fl->f) {
    errno = 0;
    if (!(fl->f = fopen(fl->path, "rb")))
      return fg_err(c->err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(fl->path), strerror(errno));
  }
  if (fseeko(fl->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, fl->f) != n)
    return fg_err(c->err, FG_ERR_IO, "%.160s: cannot read %zu bytes of %.60s at byte %llu (file changed or damaged?)",
                  fg_path_short(fl->path), n, what, (unsigned long long)off);
  return FG_OK;
}

static fg_status add_file(cv_ctx *c, const char *path, size_t *idx) {
  cv_file *nf = fg_realloc(c->files, (c->n_files + 1) * sizeof *nf);
  if (!nf) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  c->files = nf;
  cv_file *fl = &c->files[c->n_files];
  memset(fl, 0, sizeof *fl);
  if (!(fl->path = fg_strndup(path, strlen(path)))) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  *idx = c->n_files++;
  struct stat sb;
  if (stat(path, &sb) != 0) return fg_err(c->err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(path), strerror(errno));
  fl->size = (uint64_t)sb.st_size;
  return FG_OK;
}

static cv_tensor *add_tensor(cv_ctx *c) {
  if (c->n_t == c->cap_t) {
    const size_t cap = c->cap_t ? c->cap_t * 2 : 256;
    cv_tensor *nt = fg_realloc(c->t, cap * sizeof *nt);
    if (!nt) return NULL;
    c->t = nt;
    c->cap_t = cap;
  }
  cv_tensor *t = &c->t[c->n_t++];
  memset(t, 0, sizeof *t);
  return t;
}

static bool is_float(uint32_t type) { return type == FG_TYPE_F32 || type == FG_TYPE_F16 || type == FG_TYPE_BF16; }

/* a type (or mix) fg_convert writes */
static bool type_ok(uint32_t type) {
  if (type >= FG_CONVERT_MIX_BASE) return type - FG_CONVERT_MIX_BASE < 64 && fg_g3_mix_of(type - FG_CONVERT_MIX_BASE);
  for (size_t i = 0; i < fg_g3_n_mixes; i++)
    if (fg_g3_mixes[i].type == type) return true;
  return false;
}

/* p->type is one of llama-quantize's mixes (FG_CONVERT_MIX) */
static bool is_mix(const cv_ctx *c) { return c->p->type != FG_CONVERT_TYPE_AUTO && c->p->type >= FG_CONVERT_MIX_BASE; }

/* the type of the weight matrix `name` (rows of ne0 values): the mix's choice, or `plain` */
static uint32_t matrix_type(const cv_ctx *c, const char *name, uint64_t ne0, uint32_t plain) {
  if (!is_mix(c)) return plain;
  return fg_g3_mix_type(c->p->type - FG_CONVERT_MIX_BASE, &c->mix, name, ne0);
}

/* Whether t's rows get llama.cpp's reference quantizer rather than the searched fit (which hands
 * F32/F16/BF16/Q8_0 to it anyway): Q4_0 is searched inside llama-quantize's mixes, as every other
 * searched type is; one type for every matrix and a --head-type head keep the reference bytes
 * (gen-model's files; the head equals fg_model_requant_head's). */
static bool reference_fit(const cv_ctx *c, const cv_tensor *t) {
  const bool head = c->p->head_type && strcmp(t->name, "output.weight") == 0;
  return t->out_type == FG_TYPE_Q4_0 && (!is_mix(c) || head);
}

/* general.file_type of the output */
static uint32_t file_type(const cv_ctx *c, uint32_t plain) {
  return is_mix(c) ? c->p->type - FG_CONVERT_MIX_BASE : fg_g3_file_type(plain);
}

/* Row sizes of a planned tensor; FG_ERR_UNSUPPORTED when its rows do not fit the output type. */
static fg_status plan_sizes(cv_ctx *c, cv_tensor *t, const char *where) {
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

static fg_status parse_config(const char *path, const char *dir, cv_config *cf, fg_error *err) {
  memset(cf, 0, sizeof *cf);
  char *text;
  size_t size;
  fg_status st = read_all(path, CV_MAX_CONFIG, &text, &size, err);
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
  fg_g3_hparams *hp = &cf->hp;
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
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: multimodal Gemma 3 (model_type gemma3, %s) is not supported; fgemma "
                "converts text-only Gemma3ForCausalLM checkpoints (model_type gemma3_text)", fg_path_short(path),
                archs[0] ? archs : "Gemma3ForConditionalGeneration");
    goto done;
  }
  if (strcmp(model_type, "gemma3_text") != 0 || (archs[0] && !causal)) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: unknown architecture '%.40s' (model_type '%.40s'); fgemma converts "
                "Gemma3ForCausalLM (model_type gemma3_text)", fg_path_short(path), archs[0] ? archs : "?", model_type[0] ? model_type : "?");
    goto done;
  }
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
    goto done;
  if (hp->n_head % hp->n_head_kv != 0) {
    st = fg_err(err, FG_ERR_FORMAT, "%.160s: num_attention_heads %u is not a multiple of num_key_value_heads %u", fg_path_short(path),
                hp->n_head, hp->n_head_kv);
    goto done;
  }
  /* what fgemma's forward (and llama.cpp's gemma3 graph) computes: anything else would be run wrongly */
  uint32_t qpas;
  if ((st = cfg_u32(path, root, "query_pre_attn_scalar", 256, &qpas, err)) != FG_OK) goto done;
  if (qpas != hp->head_dim) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: query_pre_attn_scalar %u differs from head_dim %u; fgemma scales "
                "attention by 1/sqrt(head_dim)", fg_path_short(path), qpas, hp->head_dim);
    goto done;
  }
  const cJSON *act = cfg_get(root, "hidden_activation");
  if (!act || cJSON_IsNull(act)) act = cfg_get(root, "hidden_act");
  if (act && !cJSON_IsNull(act) &&
      !(cJSON_IsString(act) && (strcmp(act->valuestring, "gelu_pytorch_tanh") == 0 || strcmp(act->valuestring, "gelu_new") == 0))) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: hidden_activation '%.32s' is not supported (gelu_pytorch_tanh)", fg_path_short(path),
                cJSON_IsString(act) ? act->valuestring : "?");
    goto done;
  }
  static const char *const must_be_off[] = {"attention_bias", "use_bidirectional_attention"};
  for (size_t i = 0; i < 2; i++) {
    const cJSON *j = cfg_get(root, must_be_off[i]);
    if (j && !cJSON_IsFalse(j) && !cJSON_IsNull(j)) {
      st = fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: %s is set; fgemma runs causal attention without biases", fg_path_short(path), must_be_off[i]);
      goto done;
    }
  }
  const cJSON *alc = cfg_get(root, "attn_logit_softcapping");
  if (alc && !cJSON_IsNull(alc)) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: attn_logit_softcapping is set (Gemma 2 style); not supported", fg_path_short(path));
    goto done;
  }
  const cJSON *fsc = cfg_get(root, "final_logit_softcapping");
  hp->final_softcap = 0.0f;
  if (fsc && !cJSON_IsNull(fsc) && (st = cfg_f32(path, root, "final_logit_softcapping", 0.0f, &hp->final_softcap, err)) != FG_OK)
    goto done;

  /* sliding window and the layer pattern: layer_types (5.x, and 4.5x), else sliding_window_pattern */
  const cJSON *sw = cfg_get(root, "sliding_window");
  if (sw && !cJSON_IsNull(sw)) {
    if ((st = cfg_u32(path, root, "sliding_window", 0, &hp->sliding_window, err)) != FG_OK) goto done;
  } else {
    hp->sliding_window = sw ? 0 : 4096;
  }
  const cJSON *lt = cfg_get(root, "layer_types");
  if (lt && !cJSON_IsNull(lt)) {
    if (!cJSON_IsArray(lt) || (uint32_t)cJSON_GetArraySize(lt) != hp->n_layer) {
      st = fg_err(err, FG_ERR_FORMAT, "%.160s: layer_types must list num_hidden_layers (%u) entries", fg_path_short(path), hp->n_layer);
      goto done;
    }
    /* fgemma (and llama.cpp) express the pattern as: layer l is global iff l % P == P - 1 */
    uint32_t P = 0, l = 0;
    for (const cJSON *e = lt->child; e; e = e->next, l++) {
      const bool full = cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0;
      if (!full && !(cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0)) {
        st = fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: layer_types[%u] is not full_attention or sliding_attention", fg_path_short(path), l);
        goto done;
      }
      if (full && P == 0) P = l + 1;
    }
    if (P == 0) P = hp->n_layer + 1; /* no global layer */
    l = 0;
    for (const cJSON *e = lt->child; e; e = e->next, l++) {
      const bool full = strcmp(e->valuestring, "full_attention") == 0;
      if (full != (l % P == P - 1)) {
        st = fg_err(err, FG_ERR_UNSUPPORTED, "%.140s: layer_types is not periodic (layer %u is %s); fgemma needs every "
                    "P-th layer global", fg_path_short(path), l, e->valuestring);
        goto done;
      }
    }
    hp->swa_pattern = P;
    if (P > 1 && hp->sliding_window == 0) {
      st = fg_err(err, FG_ERR_FORMAT, "%.160s: layer_types has sliding layers but sliding_window is null", fg_path_short(path));
      goto done;
    }
  } else {
    const char *k = cfg_get(root, "sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    if ((st = cfg_u32(path, root, k, 6, &hp->swa_pattern, err)) != FG_OK) goto done;
  }

  /* RoPE bases: rope_parameters per layer type (5.x), else rope_theta / rope_local_base_freq (4.x) */
  const cJSON *rp = cfg_get(root, "rope_parameters");
  if (rp && !cJSON_IsNull(rp)) {
    const cJSON *full = cfg_get(rp, "full_attention"), *slide = cfg_get(rp, "sliding_attention");
    if (!full && !slide) { /* one set for every layer */
      if ((st = cfg_rope(path, rp, "rope_parameters", 1e6f, &hp->rope_base, err)) != FG_OK) goto done;
      hp->rope_base_swa = hp->rope_base;
    } else if ((st = cfg_rope(path, full, "rope_parameters.full_attention", 1e6f, &hp->rope_base, err)) != FG_OK ||
               (st = cfg_rope(path, slide, "rope_parameters.sliding_attention", 1e4f, &hp->rope_base_swa, err)) != FG_OK) {
      goto done;
    }
  } else {
    float unused;
    if ((st = cfg_f32(path, root, "rope_theta", 1e6f, &hp->rope_base, err)) != FG_OK ||
        (st = cfg_f32(path, root, "rope_local_base_freq", 1e4f, &hp->rope_base_swa, err)) != FG_OK ||
        (st = cfg_rope(path, cfg_get(root, "rope_scaling"), "rope_scaling", 1.0f, &unused, err)) != FG_OK)
      goto done;
  }
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
done:
  cJSON_Delete(root);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Safetensors files

static fg_status read_header(cv_ctx *c, cv_file *fl) {
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

/* The checkpoint's safetensors files: model.safetensors, or the shards its index lists (every tensor
 * of a shard listed for that shard, every listed tensor present). */
static fg_status open_weights(cv_ctx *c, const char *dir) {
  fg_status st = FG_OK;
  char *index = join(dir, "model.safetensors.index.json"), *single = join(dir, "model.safetensors");
  char *text = NULL;
  cJSON *root = NULL;
  if (!index || !single) {
    st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t idx;
  if (!file_exists(index)) {
    if (!file_exists(single)) {
      char *bin = join(dir, "pytorch_model.bin");
      const bool has_bin = bin && file_exists(bin);
      fg_free(bin);
      st = fg_err(c->err, FG_ERR_IO, "%.120s: no model.safetensors or model.safetensors.index.json%s", fg_path_short(dir),
                  has_bin ? " (only safetensors are read: re-save with save_pretrained(safe_serialization=True))" : "");
      goto done;
    }
    if ((st = add_file(c, single, &idx)) == FG_OK) st = read_header(c, &c->files[idx]);
    goto done;
  }
  size_t size;
  if ((st = read_all(index, CV_MAX_CONFIG, &text, &size, c->err)) != FG_OK) goto done;
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
    for (size_t i = 0; i < c->n_files && !seen; i++) seen = strcmp(base_name(c->files[i].path), e->valuestring) == 0;
    if (seen) continue;
    char *path = join(dir, e->valuestring);
    if (!path) {
      st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
      break;
    }
    if (!file_exists(path)) st = fg_err(c->err, FG_ERR_IO, "%.120s lists %.60s, which does not exist", fg_path_short(index), e->valuestring);
    if (st == FG_OK && (st = add_file(c, path, &idx)) == FG_OK) st = read_header(c, &c->files[idx]);
    fg_free(path);
  }
  if (st != FG_OK) goto done;
  for (size_t i = 0; i < c->n_files && st == FG_OK; i++) {
    const cv_file *fl = &c->files[i];
    for (size_t k = 0; k < fl->st.n; k++) {
      const cJSON *e = cfg_get(wm, fl->st.t[k].name);
      if (!e || strcmp(e->valuestring, base_name(fl->path)) != 0) {
        st = fg_err(c->err, FG_ERR_FORMAT, "%.100s holds tensor '%.60s', which the index lists %s%.40s", fg_path_short(fl->path),
                    fl->st.t[k].name, e ? "in " : "nowhere", e ? e->valuestring : "");
        break;
      }
    }
  }
  for (const cJSON *e = wm->child; e && st == FG_OK; e = e->next) {
    bool found = false;
    for (size_t i = 0; i < c->n_files && !found; i++)
      found = strcmp(base_name(c->files[i].path), e->valuestring) == 0 && fg_st_find(&c->files[i].st, e->string);
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

static const fg_st_tensor *find_st(const cv_ctx *c, const char *name, size_t *file) {
  for (size_t i = 0; i < c->n_files; i++) {
    const fg_st_tensor *t = fg_st_find(&c->files[i].st, name);
    if (t) {
      *file = i;
      return t;
    }
  }
  return NULL;
}

static uint32_t ggml_of_st(fg_st_dtype d) {
  switch (d) {
    case FG_ST_F32: return FG_TYPE_F32;
    case FG_ST_F16: return FG_TYPE_F16;
    case FG_ST_BF16: return FG_TYPE_BF16;
    default: return UINT32_MAX;
  }
}

/* One expected checkpoint tensor: present, float, of the shape the config implies ([rows, cols] or
 * [cols] for a vector). */
static fg_status plan_hf_tensor(cv_ctx *c, const char *hf, const char *gguf, uint64_t cols, uint64_t rows, bool norm,
                                uint32_t out_type, const char *config_path) {
  size_t fi;
  const fg_st_tensor *s = find_st(c, hf, &fi);
  if (!s) {
    if (c->n_files == 1)
      return fg_err(c->err, FG_ERR_FORMAT, "%.120s: missing tensor '%s' (%.40s expects it)", fg_path_short(c->files[0].path), hf,
                    base_name(config_path));
    return fg_err(c->err, FG_ERR_FORMAT, "missing tensor '%s': in none of the %zu shards model.safetensors.index.json "
                  "lists (%.120s expects it)", hf, c->n_files, fg_path_short(config_path));
  }
  const char *file = c->files[fi].path;
  const uint32_t type = ggml_of_st(s->dtype);
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
                    base_name(config_path), (unsigned long long)cols);
    return fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%s' has shape %s; %.60s implies [%llu, %llu]", fg_path_short(file), hf, got,
                  base_name(config_path), (unsigned long long)rows, (unsigned long long)cols);
  }
  cv_tensor *t = add_tensor(c);
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
  return plan_sizes(c, t, file);
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
  char *tj = join(dir, "tokenizer.json"), *tcp = join(dir, "tokenizer_config.json"), *jinja = join(dir, "chat_template.jinja");
  char *text = NULL;
  cJSON *tc = NULL;
  size_t size;
  fg_status st = FG_OK;
  fg_error e;
  if (!tj || !tcp || !jinja) {
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  if (!file_exists(tj)) {
    char *spm = join(dir, "tokenizer.model");
    const bool has_spm = spm && file_exists(spm);
    fg_free(spm);
    st = fg_err(err, FG_ERR_IO, "%.120s: no tokenizer.json%s", fg_path_short(dir),
                has_spm ? " (only tokenizer.model: fgemma reads the tokenizer from tokenizer.json; save it with a fast "
                          "tokenizer)" : "");
    goto done;
  }
  if ((st = read_all(tj, CV_MAX_TOKENIZER, &text, &size, err)) != FG_OK) goto done;
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
  if (file_exists(tcp)) {
    if ((st = read_all(tcp, CV_MAX_CONFIG, &text, &size, err)) != FG_OK) goto done;
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
  if (file_exists(jinja)) { /* transformers >= 4.5x saves the template here; it wins */
    fg_free(tk->chat_template);
    tk->chat_template = NULL;
    if ((st = read_all(jinja, CV_MAX_CONFIG, &tk->chat_template, &size, err)) != FG_OK) goto done;
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
// Plans

static fg_status plan_checkpoint(cv_ctx *c, const char *dir) {
  char *config_path = join(dir, "config.json");
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
    type = e ? ggml_of_st(e->dtype) : FG_TYPE_F32;
    for (size_t i = 0; i < c->n_files; i++)
      for (size_t k = 0; k < c->files[i].st.n; k++)
        if (c->files[i].st.t[k].n_dims == 2 && ggml_of_st(c->files[i].st.t[k].dtype) != type) type = FG_TYPE_F32;
    if (type == UINT32_MAX) type = FG_TYPE_F32;
  }
  const uint64_t E = hp->n_embd, V = cf.n_vocab;
  c->mix.n_layer = hp->n_layer;
  c->mix.n_gqa = hp->n_head_kv ? hp->n_head / hp->n_head_kv : 1;
  c->mix.tied = cf.tied;
  if (is_mix(c))
    type = fg_g3_mix_of(c->p->type - FG_CONVERT_MIX_BASE)->type;
  st = plan_hf_tensor(c, FG_G3_HF_EMBED, "token_embd.weight", E, V, false, matrix_type(c, "token_embd.weight", E, type),
                      config_path);
  for (uint32_t l = 0; l < hp->n_layer && st == FG_OK; l++) {
    for (size_t i = 0; i < FG_G3_LAYER_TENSORS && st == FG_OK; i++) {
      const fg_g3_layer_tensor *lt = &fg_g3_layer_tensors[i];
      char hf[96], gguf[64];
      snprintf(hf, sizeof hf, "model.layers.%u.%s.weight", l, lt->hf);
      snprintf(gguf, sizeof gguf, "blk.%u.%s.weight", l, lt->gguf);
      st = plan_hf_tensor(c, hf, gguf, fg_g3_dim(hp, lt->in), fg_g3_dim(hp, lt->out), lt->out == 0,
                          matrix_type(c, gguf, fg_g3_dim(hp, lt->in), type), config_path);
    }
  }
  if (st == FG_OK) st = plan_hf_tensor(c, FG_G3_HF_NORM, "output_norm.weight", E, 1, true, type, config_path);
  size_t fi;
  const bool has_head = find_st(c, FG_G3_HF_HEAD, &fi) != NULL;
  if (st == FG_OK && !cf.tied && !has_head)
    st = fg_err(c->err, FG_ERR_FORMAT, "missing tensor '%s' (%.100s says tie_word_embeddings false)", FG_G3_HF_HEAD,
                fg_path_short(config_path));
  const uint32_t head_type = c->p->head_type ? c->p->head_type : matrix_type(c, "output.weight", E, type);
  if (st == FG_OK && !cf.tied) st = plan_hf_tensor(c, FG_G3_HF_HEAD, "output.weight", E, V, false, head_type, config_path);
  if (st == FG_OK && cf.tied && has_head)
    fg_log(FG_LOG_INFO, "convert: %s ignored: the model ties it to the embedding (tie_word_embeddings)", FG_G3_HF_HEAD);
  if (st == FG_OK && cf.tied && c->p->head_type) {
    /* a head of its own, quantized from the embedding's rows */
    cv_tensor *t = add_tensor(c);
    if (!t) {
      st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    } else {
      *t = c->t[0];
      snprintf(t->name, sizeof t->name, "output.weight");
      t->out_type = c->p->head_type;
      st = plan_sizes(c, t, c->files[t->file].path);
    }
  }
  /* every tensor of the checkpoint must have been used (a lm_head of a tied model is let go) */
  for (size_t i = 0; i < c->n_files && st == FG_OK; i++) {
    const cv_file *fl = &c->files[i];
    for (size_t k = 0; k < fl->st.n && st == FG_OK; k++) {
      const char *n = fl->st.t[k].name;
      bool used = cf.tied && strcmp(n, FG_G3_HF_HEAD) == 0;
      for (size_t j = 0; j < c->n_t && !used; j++) used = strcmp(c->t[j].src_name, n) == 0;
      if (!used)
        st = fg_err(c->err, FG_ERR_FORMAT, "%.100s: unexpected tensor '%.60s' (not part of a Gemma3ForCausalLM with %u "
                    "layers as %.40s describes)", fg_path_short(fl->path), n, hp->n_layer, base_name(config_path));
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
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_FILE_TYPE, file_type(c, type));
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

/* A GGUF input: its metadata is copied (file type updated), matrices get the asked type. */
static fg_status plan_gguf(cv_ctx *c, const char *path, fg_mapfile *map, fg_gguf *g) {
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
  if ((st = add_file(c, path, &fi)) != FG_OK) return st;
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
    cv_tensor *t = add_tensor(c);
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
                                                 : matrix_type(c, t->name, s->ne[0], plain);
    t->file = fi;
    t->offset = g->data_offset + s->offset;
    st = plan_sizes(c, t, path);
    if (strcmp(t->name, "token_embd.weight") == 0) embd = c->n_t - 1;
  }
  if (st != FG_OK) return st;
  if (c->p->head_type && !has_output) {
    if (embd == SIZE_MAX) return fg_err(c->err, FG_ERR_FORMAT, "%.120s: no token_embd.weight to make a head from", fg_path_short(path));
    cv_tensor *t = add_tensor(c);
    if (!t) return fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    *t = c->t[embd];
    snprintf(t->name, sizeof t->name, "output.weight");
    t->out_type = c->p->head_type;
    if ((st = plan_sizes(c, t, path)) != FG_OK) return st;
  }
  /* metadata: every key as it is, then the file type (kept in place) and the quantization version */
  for (size_t i = 0; i < g->n_kv && st == FG_OK; i++) st = fg_gguf_writer_copy_kv(c->w, &g->kv[i]);
  if (st != FG_OK) return fg_err(c->err, st, "%.120s: cannot copy its metadata", fg_path_short(path));
  if (!auto_type) FG_GGUF_SET(st, c->err, "", set_u32, c->w, FG_KEY_FILE_TYPE, file_type(c, plain));
  FG_GGUF_SET(st, c->err, "", set_u32, c->w, FG_KEY_QUANTIZATION_VERSION, 2);
  if (c->p->name) FG_GGUF_SET(st, c->err, "", set_str, c->w, FG_KEY_NAME, c->p->name);
  return st;
}

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
static fg_status peft_refuse(cv_ctx *c, const char *path, const char *name, fg_peft_name nm) {
  static const char merge[] = "merge the adapter into the base model and convert that";
  const char *file = base_name(path); /* adapter_model.safetensors: the tensor's name says the rest */
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

static fg_status plan_peft(cv_ctx *c, const char *dir, const char *config_path) {
  fg_peft_config pc;
  memset(&pc, 0, sizeof pc);
  fg_peft_vocab_override ov;
  memset(&ov, 0, sizeof ov);
  fg_mapfile bmap;
  fg_gguf bg;
  memset(&bmap, 0, sizeof bmap);
  memset(&bg, 0, sizeof bg);
  cv_pair *pairs = NULL;
  size_t n_pairs = 0, n_vision = 0, n_f16 = 0;
  char *text = NULL, *st_path = join(dir, "adapter_model.safetensors"), *ov_path = join(dir, FG_PEFT_OVERRIDE_FILE);
  char arch[64] = FG_ARCH_GEMMA3;
  size_t size;
  fg_error e;
  fg_status st = st_path && ov_path ? FG_OK : fg_err(c->err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK && (st = read_all(config_path, CV_MAX_CONFIG, &text, &size, c->err)) == FG_OK)
    st = fg_peft_config_parse(text, size, config_path, &pc, c->err);
  fg_free(text);
  text = NULL;
  if (st != FG_OK) goto done;

  /* the output type: F32, F16, BF16 or Q8_0 (their mixes are the type everywhere) */
  uint32_t type = c->p->type;
  if (type != FG_CONVERT_TYPE_AUTO && type >= FG_CONVERT_MIX_BASE) type = fg_g3_mix_of(type - FG_CONVERT_MIX_BASE)->type;
  if (type != FG_CONVERT_TYPE_AUTO && type != FG_TYPE_F32 && type != FG_TYPE_F16 && type != FG_TYPE_BF16 &&
      type != FG_TYPE_Q8_0) {
    st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: a LoRA adapter is written as f32, f16, bf16 or q8_0, not %s", fg_path_short(dir),
                fg_type_name(type));
    goto done;
  }
  if (c->p->head_type) {
    st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: a head type applies to a model, not to a LoRA adapter", fg_path_short(dir));
    goto done;
  }

  /* the base model, when given */
  if (c->p->base) {
    if ((st = fg_mapfile_open(c->p->base, true, &bmap, &e)) != FG_OK) {
      st = fg_err(c->err, st, "base model: %s", e.msg);
      goto done;
    }
    if ((st = fg_gguf_parse(bmap.data, bmap.size, &bg, &e)) != FG_OK) {
      st = fg_err(c->err, st, "base model %.100s: %s", fg_path_short(c->p->base), e.msg);
      goto done;
    }
    fg_gguf_str a;
    if (fg_gguf_get_str(&bg, FG_KEY_ARCHITECTURE, &a, NULL) != FG_OK || a.len == 0 || a.len >= sizeof arch ||
        memchr(a.ptr, '\0', a.len)) {
      st = fg_err(c->err, FG_ERR_FORMAT, "base model %.120s: no usable general.architecture", fg_path_short(c->p->base));
      goto done;
    }
    memcpy(arch, a.ptr, a.len);
    arch[a.len] = '\0';
    if (strcmp(arch, FG_ARCH_GEMMA3) != 0)
      fg_log(FG_LOG_WARN, "convert: the base model's architecture is '%s'; fgemma loads adapters of gemma3 models only",
             arch);
  }

  /* the tensors */
  if (!file_exists(st_path)) {
    char *bin = join(dir, "adapter_model.bin");
    const bool has_bin = bin && file_exists(bin);
    fg_free(bin);
    st = fg_err(c->err, FG_ERR_IO, "%.120s: no adapter_model.safetensors%s", fg_path_short(dir),
                has_bin ? " (only adapter_model.bin: save the adapter with save_pretrained(safe_serialization=True))" : "");
    goto done;
  }
  size_t fi;
  if ((st = add_file(c, st_path, &fi)) != FG_OK || (st = read_header(c, &c->files[fi])) != FG_OK) goto done;
  const fg_st_header *h = &c->files[fi].st;
  const char *file = c->files[fi].path;
  if (h->n && !(pairs = fg_malloc_array(h->n, sizeof *pairs))) {
    st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
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
      st = fg_err(c->err, FG_ERR_FORMAT, "%.60s: tensors '%.80s' and '%.80s' are both lora_%c of layer %u's %s", fg_path_short(file),
                  h->t[*slot].name, h->t[k].name, nm.kind == FG_PEFT_LORA_A ? 'A' : 'B', nm.layer,
                  fg_lora_targets[nm.module].hf);
    *slot = k;
  }
  if (st != FG_OK) goto done;
  if (n_pairs == 0) {
    st = fg_err(c->err, FG_ERR_FORMAT, "%.120s: no lora_A/lora_B tensors of the text model's layers", fg_path_short(file));
    goto done;
  }
  if (n_vision)
    fg_log(FG_LOG_WARN, "convert: %zu tensor%s of the vision tower or its projector left out (the text model has no "
           "place for them)", n_vision, n_vision == 1 ? "" : "s");
  qsort(pairs, n_pairs, sizeof *pairs, pair_order);

  /* each pair: complete, float, 2-D, one rank; the dimensions agree across layers (and with the base) */
  uint64_t dims[4] = {0, 0, 0, 0}; /* E Q K F, as first seen */
  const char *dim_from[4] = {NULL, NULL, NULL, NULL};
  static const char letters[] = "EQKF";
  uint32_t rank0 = 0, auto_type = UINT32_MAX, n_layer = 0;
  double alpha = 0.0;          /* the one adapter.lora.alpha every pair's scale needs */
  const char *alpha_from = ""; /* the tensor that set it */
  if (c->p->base && fg_gguf_get_u32_or(&bg, FG_KEY_G3_BLOCK_COUNT, 0, &n_layer, NULL) != FG_OK) n_layer = 0;
  for (size_t i = 0; i < n_pairs && st == FG_OK; i++) {
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
      const uint32_t tt = ggml_of_st(t->dtype);
      if (tt == UINT32_MAX)
        st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.80s: tensor '%.100s' has dtype %s; fgemma converts F32, F16 and BF16",
                    fg_path_short(file), t->name, fg_st_dtype_name(t->dtype));
      else if (t->n_dims != 2 || t->shape[0] == 0 || t->shape[1] == 0)
        st = fg_err(c->err, FG_ERR_FORMAT, "%.80s: tensor '%.100s' is not a matrix (%u dimensions)", fg_path_short(file), t->name,
                    t->n_dims);
      else if (auto_type == UINT32_MAX)
        auto_type = tt;
      else if (auto_type != tt)
        auto_type = FG_TYPE_F32;
    }
    if (st != FG_OK) break;
    const uint64_t rank = ta->shape[0], n_in = ta->shape[1], n_out = tb->shape[0];
    if (tb->shape[1] != rank) {
      st = fg_err(c->err, FG_ERR_FORMAT, "%.60s: mismatched ranks: '%.90s' has %llu rows (rank) but '%.90s' has %llu "
                  "columns", fg_path_short(file), ta->name, (unsigned long long)rank, tb->name, (unsigned long long)tb->shape[1]);
      break;
    }
    /* PEFT's r and lora_alpha of this module (rank_pattern / alpha_pattern), and the alpha that makes
     * llama.cpp's alpha / rank equal PEFT's alpha / r (alpha / sqrt(r) with rsLoRA) */
    char module[128];
    fg_peft_module_key(ta->name, module, sizeof module);
    double want_r, a_i;
    if (fg_peft_pattern_get(pc.rank_pattern, pc.n_rank_pattern, module, pc.r, &want_r) && (double)rank != want_r) {
      st = fg_err(c->err, FG_ERR_FORMAT, "mismatched ranks: '%.90s' has rank %llu, but adapter_config.json gives %.70s "
                  "r = %g (r / rank_pattern)", ta->name, (unsigned long long)rank, module, want_r);
      break;
    }
    if (!fg_peft_pattern_get(pc.alpha_pattern, pc.n_alpha_pattern, module, pc.alpha, &a_i)) {
      st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.100s: alpha_pattern has a regular expression, which fgemma does not "
                  "evaluate (it needs %.60s's alpha)", fg_path_short(config_path), module);
      break;
    }
    const double alpha_i = pc.rslora ? a_i * sqrt((double)rank) : a_i;
    if (!rank0) {
      rank0 = (uint32_t)rank;
      alpha = alpha_i;
      alpha_from = ta->name;
    } else if (fabs(alpha_i - alpha) > 1e-6 * fabs(alpha)) {
      st = fg_err(c->err, FG_ERR_UNSUPPORTED, "one adapter.lora.alpha cannot give every pair PEFT's scale: '%.70s' needs "
                  "%g, '%.70s' %g (rank_pattern / alpha_pattern%s)", ta->name, alpha_i, alpha_from, alpha,
                  pc.rslora ? " with use_rslora" : "");
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
    const fg_gguf_tensor *bt = fg_gguf_find_tensor(&bg, bname);
    if (!bt) {
      st = fg_err(c->err, FG_ERR_FORMAT, "'%.90s' adapts %s, which base model %.100s does not have%s", ta->name, bname,
                  fg_path_short(c->p->base), n_layer && p->layer >= n_layer ? " (its layers end before)" : "");
    } else if (bt->ne[0] != n_in || bt->ne[1] != n_out) {
      st = fg_err(c->err, FG_ERR_FORMAT, "'%.80s' / lora_B adapt a %llu -> %llu matrix, but %s of base model %.80s is "
                  "%llu -> %llu", ta->name, (unsigned long long)n_in, (unsigned long long)n_out, bname, fg_path_short(c->p->base),
                  (unsigned long long)bt->ne[0], (unsigned long long)bt->ne[1]);
    }
  }
  if (st != FG_OK) goto done;
  if (type == FG_CONVERT_TYPE_AUTO) type = auto_type;

  if (!isfinite((float)alpha)) {
    st = fg_err(c->err, FG_ERR_UNSUPPORTED, "%.120s: lora_alpha %g * sqrt(r) does not fit an f32", fg_path_short(config_path), pc.alpha);
    goto done;
  }

  /* the GGUF tensors: per layer in file order, lora_a then lora_b */
  for (size_t i = 0; i < n_pairs && st == FG_OK; i++) {
    for (int ab = 0; ab < 2 && st == FG_OK; ab++) {
      const fg_st_tensor *s = &h->t[ab ? pairs[i].b : pairs[i].a];
      cv_tensor *t = add_tensor(c);
      if (!t) {
        st = fg_err(c->err, FG_ERR_NOMEM, "out of memory");
        break;
      }
      snprintf(t->name, sizeof t->name, "blk.%u.%s.weight.lora_%c", pairs[i].layer, fg_lora_targets[pairs[i].module].gguf,
               ab ? 'b' : 'a');
      snprintf(t->src_name, sizeof t->src_name, "%s", s->name);
      t->n_dims = 2;
      t->ne[0] = s->shape[1];
      t->ne[1] = s->shape[0];
      t->ne[2] = t->ne[3] = 1;
      t->src_type = ggml_of_st(s->dtype);
      t->out_type = fg_type_fallback(type, t->ne[0]); /* Q8_0 rows of fewer than 32: F16, as llama.cpp */
      n_f16 += t->out_type != type;
      t->file = fi;
      t->offset = s->begin;
      t->check = true;
      st = plan_sizes(c, t, file);
    }
  }
  if (st != FG_OK) goto done;
  if (n_f16)
    fg_log(FG_LOG_INFO, "convert: %zu tensor%s written F16: rows of %llu values (the rank) are not a multiple of Q8_0's "
           "32", n_f16, n_f16 == 1 ? "" : "s", (unsigned long long)rank0);

  /* fgemma's vocabulary override */
  if (file_exists(ov_path)) {
    if ((st = read_all(ov_path, CV_MAX_CONFIG, &text, &size, c->err)) != FG_OK ||
        (st = fg_peft_vocab_override_parse(text, size, ov_path, &ov, c->err)) != FG_OK)
      goto done;
    const fg_gguf_kv *toks = NULL;
    if (c->p->base && fg_gguf_get_arr(&bg, FG_KEY_TOK_TOKENS, FG_GGUF_STRING, &toks, NULL) == FG_OK) {
      fg_gguf_str *pieces = NULL;
      if ((st = fg_gguf_str_array(toks, &pieces, &e)) != FG_OK) {
        st = fg_err(c->err, st, "base model %.100s: %s", fg_path_short(c->p->base), e.msg);
        goto done;
      }
      for (size_t i = 0; i < ov.n && st == FG_OK; i++) {
        if ((uint64_t)ov.ids[i] >= toks->arr_n) {
          st = fg_err(c->err, FG_ERR_FORMAT, "%.100s: ids[%zu] = %d is outside base model %.80s's vocabulary (%llu "
                      "tokens)", fg_path_short(ov_path), i, (int)ov.ids[i], fg_path_short(c->p->base), (unsigned long long)toks->arr_n);
          break;
        }
        const fg_gguf_str bp = pieces[ov.ids[i]];
        const bool same = bp.len == ov.lens[i] && memcmp(bp.ptr, ov.tokens[i], bp.len) == 0;
        if (!same && !(bp.len >= 7 && memcmp(bp.ptr, "<unused", 7) == 0))
          fg_log(FG_LOG_WARN, "convert: %s renames id %d, which base model %s holds as '%.*s' (not an <unusedN> piece)",
                 FG_PEFT_OVERRIDE_FILE, (int)ov.ids[i], c->p->base, (int)FG_MIN(bp.len, 40), bp.ptr);
      }
      fg_free(pieces);
      if (st != FG_OK) goto done;
    }
  }

  /* metadata */
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
                    fg_version_string(), pc.peft_version[0] ? " of peft " : "", pc.peft_version, pc.r, pc.alpha);
  if (dl > 0 && (size_t)dl < sizeof desc)
    snprintf(desc + dl, sizeof desc - (size_t)dl, "%s)", pc.rslora ? ", use_rslora: adapter.lora.alpha = lora_alpha * sqrt(r)" : "");
  fg_gguf_writer *w = c->w;
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_ARCHITECTURE, arch);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_TYPE, "adapter");
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_NAME, name);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_DESCRIPTION, desc);
  if (pc.base_model[0]) {
    FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_BASE_MODEL_COUNT, 1);
    FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_BASE_MODEL_0_NAME, pc.base_model);
  }
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_FILE_TYPE, fg_g3_file_type(type));
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_QUANTIZATION_VERSION, 2);
  FG_GGUF_SET(st, c->err, "", set_u32, w, FG_KEY_ALIGNMENT, FG_GGUF_DEFAULT_ALIGNMENT);
  FG_GGUF_SET(st, c->err, "", set_str, w, FG_KEY_ADAPTER_TYPE, "lora");
  FG_GGUF_SET(st, c->err, "", set_f32, w, FG_KEY_ADAPTER_LORA_ALPHA, (float)alpha);
  if (ov.n) {
    FG_GGUF_SET(st, c->err, "", set_arr, w, FG_KEY_VOCAB_OVERRIDE_IDS, FG_GGUF_INT32, ov.ids, ov.n);
    FG_GGUF_SET(st, c->err, "", set_arr_str, w, FG_KEY_VOCAB_OVERRIDE_TOKENS, (const char *const *)ov.tokens, ov.lens,
                ov.n);
  }
  if (st == FG_OK)
    fg_log(FG_LOG_INFO, "convert: LoRA adapter, %zu matrices of %u layer(s), rank %u, adapter.lora.alpha %g%s", n_pairs,
           pairs[n_pairs - 1].layer + 1, rank0, alpha, ov.n ? ", with a vocabulary override" : "");
done:
  fg_free(text);
  fg_free(st_path);
  fg_free(ov_path);
  fg_free(pairs);
  fg_peft_config_clear(&pc);
  fg_peft_vocab_override_clear(&ov);
  fg_gguf_clear(&bg);
  fg_mapfile_close(&bmap);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Streaming

static fg_status progress(cv_ctx *c) {
  if (c->p->progress && !c->p->progress(c->done, c->total, c->p->progress_user_data))
    return fg_err(c->err, FG_ERR_ABORTED, "convert: cancelled by the progress callback");
  return FG_OK;
}

/* A row of tensor t (row index r) that must hold finite values, within F16's range when written F16
 * (|v| >= 65520 rounds to infinity). */
static fg_status check_row(cv_ctx *c, const cv_tensor *t, const float *row, size_t n, uint64_t r) {
  for (size_t j = 0; j < n; j++) {
    if (!isfinite(row[j]))
      return fg_err(c->err, FG_ERR_FORMAT, "%.100s: tensor '%s' holds %s at row %llu, column %zu; an adapter must be "
                    "finite", fg_path_short(c->files[t->file].path), t->src_name, isnan(row[j]) ? "NaN" : "an infinity",
                    (unsigned long long)r, j);
    if (t->out_type == FG_TYPE_F16 && fabsf(row[j]) >= 65520.0f)
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.100s: tensor '%s' holds %g at row %llu, column %zu, beyond F16's "
                    "range (65504): write it as bf16 or f32", fg_path_short(c->files[t->file].path), t->src_name, (double)row[j],
                    (unsigned long long)r, j);
  }
  return FG_OK;
}

static fg_status stream(cv_ctx *c, FILE *out) {
  uint64_t max_cols = 1, max_rb = 1;
  for (size_t i = 0; i < c->n_t; i++) {
    max_cols = FG_MAX(max_cols, c->t[i].ne[0]);
    max_rb = FG_MAX(max_rb, FG_MAX(c->t[i].src_row_bytes, c->t[i].out_row_bytes));
  }
  size_t cols, chunk;
  if (!fg_u64_to_size(max_cols, &cols) || !fg_u64_to_size(FG_MAX(max_rb, CV_CHUNK_BYTES), &chunk))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "rows too long for this process");
  uint8_t *in = fg_malloc(chunk), *outb = fg_malloc(chunk);
  float *row = fg_malloc_array(cols, sizeof *row);
  fg_status st = in && outb && row ? progress(c) : fg_err(c->err, FG_ERR_NOMEM, "out of memory for the row buffers");
  for (size_t i = 0; i < c->n_t && st == FG_OK; i++) {
    const cv_tensor *t = &c->t[i];
    const size_t n = (size_t)t->ne[0], srb = (size_t)t->src_row_bytes, orb = (size_t)t->out_row_bytes;
    const uint64_t per = FG_MAX(1, chunk / FG_MAX(srb, orb));
    const bool copy = t->src_type == t->out_type && !t->add_one, ref = reference_fit(c, t);
    for (uint64_t r0 = 0; r0 < t->rows && st == FG_OK; r0 += per) {
      const size_t k = (size_t)FG_MIN(per, t->rows - r0);
      if ((st = read_at(c, &c->files[t->file], t->offset + r0 * srb, in, k * srb, t->src_name)) != FG_OK) break;
      if (!copy || t->check) {
        for (size_t r = 0; r < k && st == FG_OK; r++) {
          fg_dequantize_row(t->src_type, in + r * srb, row, n);
          if (t->check && (st = check_row(c, t, row, n, r0 + r)) != FG_OK) break;
          if (copy) continue;
          if (t->add_one)
            for (size_t j = 0; j < n; j++) row[j] += 1.0f;
          if (ref)
            fg_quantize_row(t->out_type, row, outb + r * orb, n);
          else
            fg_quantize_row_searched(t->out_type, row, outb + r * orb, n);
        }
        if (st != FG_OK) break;
      }
      if ((st = fg_gguf_writer_tensor_part(c->w, out, copy ? in : outb, k * orb, c->err)) != FG_OK) break;
      c->done += k * orb;
      st = progress(c);
    }
  }
  fg_free(in);
  fg_free(outb);
  fg_free(row);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Public

fg_status fg_convert_type_parse(const char *name, bool pure, uint32_t *type) {
  for (size_t i = 0; name && i < fg_g3_n_mixes; i++)
    if (strcmp(name, fg_g3_mixes[i].name) == 0) {
      if (type) *type = pure ? fg_g3_mixes[i].type : FG_CONVERT_MIX(fg_g3_mixes[i].ftype);
      return FG_OK;
    }
  return FG_ERR_INVALID_ARG;
}

const char *fg_convert_type_names(void) {
  /* fg_g3_mixes in order (test_convert checks that they agree) */
  return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, "
         "q6_k, iq4_nl, iq4_xs";
}

void fg_convert_params_init(fg_convert_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->type = FG_CONVERT_TYPE_AUTO;
  p->head_type = 0;
}

fg_status fg_convert(const char *in_path, const char *out_path, const fg_convert_params *params, fg_error *err) {
  fg_err_clear(err);
  fg_convert_params defaults;
  if (!params) {
    fg_convert_params_init(&defaults);
    params = &defaults;
  }
  if (!in_path || !*in_path || !out_path || !*out_path)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_convert: in_path and out_path must be given");
  if (params->type != FG_CONVERT_TYPE_AUTO && !type_ok(params->type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "convert: type %u is neither a GGML type fgemma writes nor FG_CONVERT_MIX of "
                  "one of %s", params->type, fg_convert_type_names());
  if (params->head_type && params->head_type != FG_TYPE_Q8_0 && params->head_type != FG_TYPE_Q4_0)
    return fg_err(err, FG_ERR_UNSUPPORTED, "convert: head type %u (%s) is not supported: use q8_0 (8) or q4_0 (2)",
                  params->head_type, fg_type_name(params->head_type));
  struct stat sb;
  if (stat(in_path, &sb) != 0) return fg_err(err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(in_path), strerror(errno));

  cv_ctx c;
  memset(&c, 0, sizeof c);
  c.p = params;
  c.err = err;
  fg_mapfile map;
  fg_gguf g;
  memset(&map, 0, sizeof map);
  memset(&g, 0, sizeof g);
  char *tmp = NULL;
  FILE *out = NULL;
  bool tmp_made = false;
  fg_status st = (c.w = fg_gguf_writer_create()) ? FG_OK : fg_err(err, FG_ERR_NOMEM, "out of memory");
  char *adapter_config = S_ISDIR(sb.st_mode) ? join(in_path, "adapter_config.json") : NULL;
  const bool adapter = adapter_config && file_exists(adapter_config);
  if (st == FG_OK && S_ISDIR(sb.st_mode) && !adapter_config) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK && params->base && !adapter)
    st = fg_err(err, FG_ERR_INVALID_ARG, "%.160s: a base model is given, but the input is not a PEFT adapter directory "
                "(no adapter_config.json)", fg_path_short(in_path));
  if (st == FG_OK) {
    if (adapter) {
      st = plan_peft(&c, in_path, adapter_config);
    } else if (S_ISDIR(sb.st_mode)) {
      st = plan_checkpoint(&c, in_path);
    } else {
      uint8_t magic[4] = {0};
      FILE *f = fopen(in_path, "rb");
      const size_t got = f ? fread(magic, 1, 4, f) : 0;
      if (f) fclose(f);
      if (got == 4 && memcmp(magic, "GGUF", 4) == 0)
        st = plan_gguf(&c, in_path, &map, &g);
      else
        st = fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: neither a checkpoint directory nor a GGUF file (give the directory "
                    "that holds config.json)", fg_path_short(in_path));
    }
  }
  if (st == FG_OK && c.n_requant)
    fg_log(FG_LOG_WARN, "convert: %zu tensor%s re-quantized from quantized values, e.g. %s: the new rounding adds to the "
           "old; convert from the F32/BF16 original where there is one", c.n_requant, c.n_requant == 1 ? " is" : "s are",
           c.requant);
  for (size_t i = 0; i < c.n_t && st == FG_OK; i++) {
    const uint64_t ne[FG_GGUF_MAX_DIMS] = {c.t[i].ne[0], c.t[i].ne[1], c.t[i].ne[2], c.t[i].ne[3]};
    if ((st = fg_gguf_writer_add_tensor(c.w, c.t[i].name, c.t[i].out_type, c.t[i].n_dims, ne)) != FG_OK)
      st = fg_err(err, st, "cannot add tensor %s", c.t[i].name);
  }
  if (st == FG_OK) {
    const size_t n = strlen(out_path) + 32;
    if (!(tmp = fg_malloc(n))) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    else snprintf(tmp, n, "%s.tmp.%ld", out_path, (long)getpid());
  }
  if (st == FG_OK) {
    errno = 0;
    if (!(out = fopen(tmp, "wb"))) st = fg_err(err, FG_ERR_IO, "%.200s: cannot create: %s", tmp, strerror(errno));
    else tmp_made = true;
  }
  if (st == FG_OK) {
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    st = fg_gguf_writer_begin(c.w, out, err);
  }
  if (st == FG_OK) st = stream(&c, out);
  if (st == FG_OK) st = fg_gguf_writer_end(c.w, out, err);
  if (out) {
    errno = 0;
    const bool bad = ferror(out) != 0;
    const int rc = fclose(out);
    if (st == FG_OK && (bad || rc != 0)) st = fg_err(err, FG_ERR_IO, "%.200s: cannot write: %s", tmp, strerror(errno));
  }
  if (st == FG_OK && rename(tmp, out_path) != 0)
    st = fg_err(err, FG_ERR_IO, "cannot rename %.100s to %.100s: %s", tmp, out_path, strerror(errno));
  if (st != FG_OK && tmp_made) remove(tmp);
  fg_free(tmp);
  fg_free(adapter_config);
  for (size_t i = 0; i < c.n_files; i++) {
    if (c.files[i].f) fclose(c.files[i].f);
    fg_st_clear(&c.files[i].st);
    fg_free(c.files[i].path);
  }
  fg_free(c.files);
  fg_free(c.t);
  fg_gguf_writer_free(c.w);
  fg_gguf_clear(&g);
  fg_mapfile_close(&map);
  return st;
}
