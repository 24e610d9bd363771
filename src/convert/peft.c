/* peft.c — a PEFT LoRA adapter's config, tensor names and fgemma's vocabulary override (see peft.h).
 *
 * What the conversion must reproduce is PEFT's LoRA forward (peft/tuners/lora/layer.py, Linear):
 * y = W x + scaling * B (A x) with scaling = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora.
 * llama.cpp applies a GGUF adapter as y = W x + (alpha / rank) * B (A x) (rank read from lora_b), so
 * rsLoRA's scale is kept by writing alpha = lora_alpha * sqrt(r). llama.cpp's own
 * convert_lora_to_gguf.py writes lora_alpha as it is (also for rsLoRA) and takes the rank from the
 * tensors; it refuses tensors that are not lora_A/lora_B (embeddings, whole tensors). Everything PEFT
 * can express beyond W x + s B A x (DoRA's magnitude, biases, whole replaced modules, token deltas) has
 * no place in the format and is refused here, by key or by tensor name. Per-module ranks and alphas
 * (rank_pattern, alpha_pattern) are fine as long as one alpha gives every pair its scale: convert_peft.c
 * checks that. */
#include "convert/peft.h"

#include "convert/json_scan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------------
// adapter_config.json

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* a key that is absent, null, false, "", [] or {} */
static bool is_unset(const cJSON *j) {
  if (!j || cJSON_IsNull(j) || cJSON_IsFalse(j)) return true;
  if (cJSON_IsString(j)) return j->valuestring[0] == '\0';
  if (cJSON_IsArray(j) || cJSON_IsObject(j)) return j->child == NULL;
  return false;
}

/* target_modules entry or modules_to_save entry naming the embedding or the head */
static const char *names_embedding_or_head(const char *s) {
  static const char *const bad[] = {"embed_tokens", "lm_head"};
  const size_t n = strlen(s);
  for (size_t i = 0; i < 2; i++) {
    const size_t m = strlen(bad[i]);
    /* PEFT matches a list entry against the end of a module name ("model.embed_tokens" or "embed_tokens") */
    if (n >= m && strcmp(s + n - m, bad[i]) == 0 && (n == m || s[n - m - 1] == '.')) return bad[i];
  }
  return NULL;
}

/* rank_pattern (positive integers) or alpha_pattern (finite non-zero numbers): absent, null or an object */
static fg_status parse_pattern(const cJSON *root, const char *name, bool ranks, const char *path, fg_peft_pattern **out,
                               size_t *n, fg_error *err) {
  const cJSON *o = get(root, name);
  if (!o || cJSON_IsNull(o)) return FG_OK;
  if (!cJSON_IsObject(o)) return fg_err(err, FG_ERR_FORMAT, "%.160s: %s must be an object", path, name);
  const size_t count = (size_t)cJSON_GetArraySize(o);
  if (!count) return FG_OK;
  if (!(*out = fg_calloc(count, sizeof **out))) return fg_err(err, FG_ERR_NOMEM, "%.160s: out of memory", path);
  for (const cJSON *e = o->child; e; e = e->next) {
    const double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    const bool ok = ranks ? (v >= 1.0 && v <= 16777216.0 && v == floor(v)) : (isfinite(v) && isfinite((float)v) && v != 0.0);
    if (!ok)
      return fg_err(err, FG_ERR_FORMAT, "%.120s: %s[\"%.40s\"] must be %s", path, name, e->string,
                    ranks ? "a positive integer" : "a finite non-zero number");
    fg_peft_pattern *p = &(*out)[(*n)++];
    if (!(p->key = fg_strndup(e->string, strlen(e->string)))) return fg_err(err, FG_ERR_NOMEM, "%.160s: out of memory", path);
    p->value = v;
  }
  return FG_OK;
}

fg_status fg_peft_config_parse(const char *json, size_t len, const char *full_path, fg_peft_config *out, fg_error *err) {
  memset(out, 0, sizeof *out);
  char path[80];
  fg_path_shown(path, sizeof path, full_path);
  cJSON *root = cJSON_ParseWithLength(json, len);
  fg_status st = FG_OK;
  if (!cJSON_IsObject(root)) {
    st = fg_err(err, FG_ERR_FORMAT, "%.160s: not a JSON object", path);
    goto done;
  }
  const cJSON *pt = get(root, "peft_type");
  if (pt && !cJSON_IsNull(pt) && !(cJSON_IsString(pt) && strcmp(pt->valuestring, "LORA") == 0)) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.140s: peft_type '%.32s' is not supported; fgemma converts LoRA adapters "
                "(peft_type LORA)", path, cJSON_IsString(pt) ? pt->valuestring : "?");
    goto done;
  }
  const cJSON *r = get(root, "r");
  if (!cJSON_IsNumber(r) || !(r->valuedouble >= 1.0 && r->valuedouble <= 16777216.0) ||
      r->valuedouble != floor(r->valuedouble)) {
    st = fg_err(err, FG_ERR_FORMAT, "%.160s: r %s", path, r ? "must be a positive integer (at most 2^24)" : "is missing");
    goto done;
  }
  out->r = (uint32_t)r->valuedouble;
  const cJSON *a = get(root, "lora_alpha");
  if (!cJSON_IsNumber(a) || !isfinite(a->valuedouble) || !isfinite((float)a->valuedouble)) {
    st = fg_err(err, FG_ERR_FORMAT, "%.160s: lora_alpha %s", path, a ? "must be a finite number" : "is missing");
    goto done;
  }
  if (a->valuedouble == 0.0) {
    /* PEFT's scale is then 0, but a GGUF alpha of 0 means "no alpha: the user scale alone" */
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.140s: lora_alpha is 0 (the adapter has no effect); a GGUF adapter's alpha "
                "0 would mean scale 1 instead", path);
    goto done;
  }
  out->alpha = a->valuedouble;

  /* what a GGUF LoRA adapter cannot carry */
  static const struct {
    const char *key, *why;
  } refused[] = {
      {"use_dora", "DoRA: a learned magnitude per output"},
      {"lora_bias", "lora_B has a bias"},
      {"fan_in_fan_out", "stored for a transposed (Conv1D) weight"},
      {"trainable_token_indices", "trained embedding rows"},
      {"layer_replication", "replicated layers"},
      {"use_qalora", "QA-LoRA pools lora_A's input"},
      {"target_parameters", "LoRA of parameters, not of modules"},
      {"modules_to_save", "whole modules saved beside the adapter"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    const cJSON *j = get(root, refused[i].key);
    if (is_unset(j)) continue;
    char first[64] = "";
    if (cJSON_IsArray(j) && cJSON_IsString(j->child)) snprintf(first, sizeof first, " [\"%.32s\", ...]", j->child->valuestring);
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.80s: %s is set%s (%s): a GGUF LoRA adapter cannot carry it; merge the "
                "adapter into the base model and convert that", path, refused[i].key, first, refused[i].why);
    goto done;
  }
  const cJSON *bias = get(root, "bias");
  if (bias && !cJSON_IsNull(bias) && !(cJSON_IsString(bias) && strcmp(bias->valuestring, "none") == 0)) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: bias is '%.20s': trained biases cannot be carried by a GGUF LoRA "
                "adapter (train with bias=\"none\", or merge and convert the merged checkpoint)", path,
                cJSON_IsString(bias) ? bias->valuestring : "?");
    goto done;
  }
  const cJSON *tm = get(root, "target_modules");
  if (cJSON_IsArray(tm)) {
    for (const cJSON *e = tm->child; e; e = e->next) {
      const char *b = cJSON_IsString(e) ? names_embedding_or_head(e->valuestring) : NULL;
      if (b) {
        st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: target_modules lists \"%.40s\": a LoRA of %s (%s) is not "
                    "supported; fgemma adapts the layers' q/k/v/o and gate/up/down projections", path, e->valuestring,
                    b, strcmp(b, "lm_head") == 0 ? "the output projection" : "the token embedding");
        goto done;
      }
    }
  } else if (cJSON_IsString(tm) && names_embedding_or_head(tm->valuestring) && !strpbrk(tm->valuestring, "|()[]*+?\\^$")) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "%.120s: target_modules is \"%.40s\": a LoRA of the embedding or the output "
                "projection is not supported", path, tm->valuestring);
    goto done;
  }
  const cJSON *rs = get(root, "use_rslora");
  if (rs && !cJSON_IsNull(rs) && !cJSON_IsBool(rs)) {
    st = fg_err(err, FG_ERR_FORMAT, "%.160s: use_rslora must be true or false", path);
    goto done;
  }
  out->rslora = cJSON_IsTrue(rs);
  if ((st = parse_pattern(root, "rank_pattern", true, path, &out->rank_pattern, &out->n_rank_pattern, err)) != FG_OK ||
      (st = parse_pattern(root, "alpha_pattern", false, path, &out->alpha_pattern, &out->n_alpha_pattern, err)) != FG_OK)
    goto done;
  const cJSON *bm = get(root, "base_model_name_or_path");
  if (cJSON_IsString(bm)) snprintf(out->base_model, sizeof out->base_model, "%.255s", bm->valuestring);
  const cJSON *v = get(root, "peft_version");
  if (!cJSON_IsString(v)) v = get(root, "revision");
  if (cJSON_IsString(v)) snprintf(out->peft_version, sizeof out->peft_version, "%.31s", v->valuestring);
done:
  cJSON_Delete(root);
  if (st != FG_OK) fg_peft_config_clear(out);
  return st;
}

void fg_peft_config_clear(fg_peft_config *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_rank_pattern; i++) fg_free(c->rank_pattern[i].key);
  for (size_t i = 0; i < c->n_alpha_pattern; i++) fg_free(c->alpha_pattern[i].key);
  fg_free(c->rank_pattern);
  fg_free(c->alpha_pattern);
  memset(c, 0, sizeof *c);
}

static bool literal_key(const char *k) {
  for (; *k; k++)
    if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_' || *k == '-' ||
          *k == '.'))
      return false;
  return true;
}

bool fg_peft_pattern_get(const fg_peft_pattern *p, size_t n, const char *module, double def, double *out) {
  *out = def;
  const size_t ml = strlen(module);
  for (size_t i = 0; i < n; i++) {
    if (!literal_key(p[i].key)) return false;
    const size_t kl = strlen(p[i].key);
    if (kl <= ml && memcmp(module + ml - kl, p[i].key, kl) == 0 && (kl == ml || module[ml - kl - 1] == '.')) {
      *out = p[i].value;
      return true;
    }
  }
  return true;
}

void fg_peft_module_key(const char *tensor, char *out, size_t cap) {
  if (!cap) return;
  const char *s = tensor;
  if (strncmp(s, "base_model.model.", 17) == 0) s += 17;
  size_t n = strlen(s);
  static const char *const tails[] = {".lora_A.weight", ".lora_B.weight"};
  for (size_t i = 0; i < 2; i++) {
    const size_t t = strlen(tails[i]);
    if (n >= t && strcmp(s + n - t, tails[i]) == 0) n -= t;
  }
  snprintf(out, cap, "%.*s", (int)FG_MIN(n, (size_t)INT32_MAX), s);
}

// ----------------------------------------------------------------------------------------------------
// Tensor names

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool ends(const char *s, size_t n, const char *suffix) {
  const size_t m = strlen(suffix);
  return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* "N." at s: a layer number without leading zeros, below 10^6; *after = the byte after the dot */
static bool layer_number(const char *s, uint32_t *layer, const char **after) {
  uint32_t v = 0;
  size_t k = 0;
  while (s[k] >= '0' && s[k] <= '9' && k < 7) v = v * 10 + (uint32_t)(s[k++] - '0');
  if (k == 0 || k > 6 || s[k] != '.' || (s[0] == '0' && k > 1)) return false;
  *layer = v;
  *after = s + k + 1;
  return true;
}

fg_peft_name fg_peft_name_parse(const char *name) {
  fg_peft_name r = {FG_PEFT_UNKNOWN, 0, 0};
  const size_t n = strlen(name);
  const char *s = name;
  if (starts(s, "base_model.model.")) s += strlen("base_model.model.");

  static const char *const vision[] = {"model.vision_tower.", "vision_tower.", "model.multi_modal_projector.",
                                       "multi_modal_projector.", "model.vision_model.", "vision_model."};
  for (size_t i = 0; i < sizeof vision / sizeof vision[0]; i++)
    if (starts(s, vision[i])) return r.kind = FG_PEFT_VISION, r;

  /* the kind, from the end of the name */
  size_t tail = 0; /* bytes of the suffix after the module path */
  fg_peft_kind kind;
  if (ends(name, n, ".lora_A.weight")) kind = FG_PEFT_LORA_A, tail = strlen(".lora_A.weight");
  else if (ends(name, n, ".lora_B.weight")) kind = FG_PEFT_LORA_B, tail = strlen(".lora_B.weight");
  else if (strstr(name, ".lora_embedding_A") || strstr(name, ".lora_embedding_B")) return r.kind = FG_PEFT_EMBEDDING, r;
  else if (strstr(name, ".lora_magnitude_vector")) return r.kind = FG_PEFT_DORA, r;
  else if (ends(name, n, ".bias")) return r.kind = FG_PEFT_BIAS, r;
  else if (ends(name, n, ".weight") || strstr(name, "trainable_tokens")) return r.kind = FG_PEFT_FULL, r;
  else return r;

  /* the module path between the text model's prefix and the suffix */
  if (starts(s, "lm_head.") || starts(s, "language_model.lm_head.")) return r.kind = FG_PEFT_LM_HEAD, r;
  static const char *const body[] = {"model.language_model.", "language_model.model.", "model."};
  const char *m = NULL;
  for (size_t i = 0; i < sizeof body / sizeof body[0] && !m; i++)
    if (starts(s, body[i])) m = s + strlen(body[i]);
  if (!m || (size_t)(m - name) + tail > n) return r;
  const size_t mlen = n - tail - (size_t)(m - name);
  if (mlen == strlen("embed_tokens") && memcmp(m, "embed_tokens", mlen) == 0) return r.kind = FG_PEFT_EMBEDDING, r;
  const char *path;
  if (!starts(m, "layers.") || !layer_number(m + strlen("layers."), &r.layer, &path)) return r;
  const size_t plen = mlen - (size_t)(path - m);
  if ((size_t)(path - m) > mlen) return r;
  for (uint32_t i = 0; i < FG_LORA_N_TARGETS; i++) {
    if (strlen(fg_lora_targets[i].path) == plen && memcmp(path, fg_lora_targets[i].path, plen) == 0) {
      r.kind = kind;
      r.module = i;
      return r;
    }
  }
  r.kind = FG_PEFT_OTHER_MODULE;
  return r;
}

// ----------------------------------------------------------------------------------------------------
// fgemma_vocab_override.json

void fg_peft_vocab_override_clear(fg_peft_vocab_override *v) {
  if (!v) return;
  for (size_t i = 0; v->tokens && i < v->n; i++) fg_free(v->tokens[i]);
  fg_free(v->tokens);
  fg_free(v->ids);
  fg_free(v->lens);
  memset(v, 0, sizeof *v);
}

/* grows the arrays to hold k + 1 entries */
static bool ov_grow(fg_peft_vocab_override *v, size_t *cap, size_t k, bool tokens) {
  if (k < *cap) return true;
  const size_t nc = *cap ? *cap * 2 : 16;
  if (tokens) {
    char **t = fg_realloc(v->tokens, nc * sizeof *t);
    if (!t) return false;
    v->tokens = t;
    size_t *l = fg_realloc(v->lens, nc * sizeof *l);
    if (!l) return false;
    v->lens = l;
  } else {
    int32_t *ids = fg_realloc(v->ids, nc * sizeof *ids);
    if (!ids) return false;
    v->ids = ids;
  }
  *cap = nc;
  return true;
}

fg_status fg_peft_vocab_override_parse(const char *json, size_t len, const char *full_path,
                                       fg_peft_vocab_override *out, fg_error *err) {
  memset(out, 0, sizeof *out);
  char path[100];
  fg_path_shown(path, sizeof path, full_path);
  fg_js js;
  fg_js_init(&js, json, len);
  size_t n_ids = 0, n_tok = 0, cap_ids = 0, cap_tok = 0;
  bool seen_ids = false, seen_tok = false, done = false;
  fg_status st = FG_OK;
  if (!fg_js_obj_begin(&js)) goto syntax;
  for (;;) {
    fg_js_str key;
    if (!fg_js_obj_next(&js, &key, &done)) goto syntax;
    if (done) break;
    const bool is_ids = fg_js_str_eq(key, "ids"), is_tok = fg_js_str_eq(key, "tokens");
    if (!is_ids && !is_tok) {
      st = fg_err(err, FG_ERR_FORMAT, "%.140s: unknown key \"%.*s\" (the file has \"ids\" and \"tokens\")", path,
                  (int)FG_MIN(key.len, 40), key.ptr);
      goto fail;
    }
    if ((is_ids && seen_ids) || (is_tok && seen_tok)) {
      st = fg_err(err, FG_ERR_FORMAT, "%.140s: \"%s\" appears twice", path, is_ids ? "ids" : "tokens");
      goto fail;
    }
    seen_ids |= is_ids;
    seen_tok |= is_tok;
    if (fg_js_peek(&js) != FG_JS_ARRAY) {
      if (js.failed) goto syntax;
      st = fg_err(err, FG_ERR_FORMAT, "%.140s: \"%s\" must be an array", path, is_ids ? "ids" : "tokens");
      goto fail;
    }
    if (!fg_js_arr_begin(&js)) goto syntax;
    for (size_t k = 0;; k++) {
      if (!fg_js_arr_next(&js, &done)) goto syntax;
      if (done) break;
      if (k >= FG_PEFT_OVERRIDE_MAX) {
        st = fg_err(err, FG_ERR_FORMAT, "%.140s: \"%s\" has more than %u entries", path, is_ids ? "ids" : "tokens",
                    FG_PEFT_OVERRIDE_MAX);
        goto fail;
      }
      if (is_ids) {
        uint64_t id;
        if (fg_js_peek(&js) != FG_JS_NUMBER && js.failed) goto syntax;
        if (js.failed || fg_js_peek(&js) != FG_JS_NUMBER || !fg_js_uint(&js, &id) || id > INT32_MAX) {
          st = fg_err(err, FG_ERR_FORMAT, "%.140s: ids[%zu] must be a token id (an integer from 0 to 2^31 - 1)", path, k);
          goto fail;
        }
        if (!ov_grow(out, &cap_ids, k, false)) goto nomem;
        out->ids[k] = (int32_t)id;
        n_ids = k + 1;
      } else {
        fg_js_str s;
        if (fg_js_peek(&js) != FG_JS_STRING) {
          if (js.failed) goto syntax;
          st = fg_err(err, FG_ERR_FORMAT, "%.140s: tokens[%zu] must be a string", path, k);
          goto fail;
        }
        if (!fg_js_string(&js, &s)) goto syntax;
        const size_t dl = fg_js_str_decoded_len(s);
        if (!ov_grow(out, &cap_tok, k, true)) goto nomem;
        char *t = fg_malloc(dl + 1);
        if (!t) goto nomem;
        fg_js_str_decode(s, t);
        t[dl] = '\0';
        out->tokens[k] = t;
        out->lens[k] = dl;
        n_tok = k + 1;
        if (dl == 0 || memchr(t, '\0', dl) || !fg_utf8_valid(t, dl, NULL)) {
          st = fg_err(err, FG_ERR_FORMAT, "%.140s: tokens[%zu] must be a non-empty piece of valid UTF-8 without NUL",
                      path, k);
          goto fail;
        }
      }
    }
  }
  if (!fg_js_finish(&js)) goto syntax;
  if (!seen_ids || !seen_tok) {
    st = fg_err(err, FG_ERR_FORMAT, "%.140s: \"%s\" is missing", path, seen_ids ? "tokens" : "ids");
    goto fail;
  }
  if (n_ids != n_tok || n_ids == 0) {
    st = fg_err(err, FG_ERR_FORMAT, "%.140s: \"ids\" has %zu entries and \"tokens\" %zu; they must pair up (at least one)",
                path, n_ids, n_tok);
    goto fail;
  }
  out->n = n_ids;
  for (size_t i = 0; i < out->n; i++) {
    for (size_t j = 0; j < i; j++) {
      if (out->ids[i] == out->ids[j]) {
        st = fg_err(err, FG_ERR_FORMAT, "%.140s: ids[%zu] and ids[%zu] are both %d", path, j, i, (int)out->ids[i]);
        goto fail;
      }
      if (out->lens[i] == out->lens[j] && memcmp(out->tokens[i], out->tokens[j], out->lens[i]) == 0) {
        st = fg_err(err, FG_ERR_FORMAT, "%.120s: tokens[%zu] and tokens[%zu] are both \"%.40s\"", path, j, i, out->tokens[i]);
        goto fail;
      }
    }
  }
  return FG_OK;
syntax:
  st = fg_err(err, FG_ERR_FORMAT, "%.140s: %s", path, js.err[0] ? js.err : "malformed JSON");
  goto fail;
nomem:
  st = fg_err(err, FG_ERR_NOMEM, "%.160s: out of memory", path);
fail:
  out->n = n_tok; /* the pieces allocated so far */
  fg_peft_vocab_override_clear(out);
  return st;
}
