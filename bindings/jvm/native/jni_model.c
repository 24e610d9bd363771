/* jni_model.c — dev.fgemma.ModelNative and CatalogNative: models (load from a path or a descriptor
 * range, info, tokenizer) and tool catalogs. */
#include "jni_util.h"

#include <stdlib.h>
#include <string.h>

#define JFG(name) Java_dev_fgemma_ModelNative_##name

_Static_assert(sizeof(double) == sizeof(jlong), "info passes lora_ms as the bits of a double in a jlong");
#define JFG_CAT(name) Java_dev_fgemma_CatalogNative_##name

/* ModelOptions.lora as C adapters: paths (byte[][], null = none) and scales of the same length. */
typedef struct jfg_loras {
  fg_lora *l;
  char **paths;
  uint32_t n;
} jfg_loras;

static void loras_free(jfg_loras *ll) {
  for (uint32_t i = 0; ll->paths && i < ll->n; i++) free(ll->paths[i]);
  free(ll->paths);
  free(ll->l);
  memset(ll, 0, sizeof *ll);
}

/* 0, or -1 with an exception pending (the paths are checked as every path is: no NUL inside) */
static int loras_in(JNIEnv *env, jobjectArray paths, jfloatArray scales, jfg_loras *ll) {
  memset(ll, 0, sizeof *ll);
  if (!paths) return 0;
  const jsize n = (*env)->GetArrayLength(env, paths);
  if (!scales || (*env)->GetArrayLength(env, scales) != n) {
    jfg_throw_arg(env, "fgemma: LoRA paths and scales differ in length");
    return -1;
  }
  if (n == 0) return 0;
  ll->l = calloc((size_t)n, sizeof *ll->l);
  ll->paths = calloc((size_t)n, sizeof *ll->paths);
  float *sc = malloc((size_t)n * sizeof *sc);
  if (!ll->l || !ll->paths || !sc) {
    free(sc);
    loras_free(ll);
    jfg_throw_oom(env, "LoRA adapters");
    return -1;
  }
  (*env)->GetFloatArrayRegion(env, scales, 0, n, sc);
  for (jsize i = 0; i < n; i++) {
    jbyteArray b = (jbyteArray)(*env)->GetObjectArrayElement(env, paths, i);
    char *path = b ? jfg_path_in(env, b) : NULL;
    if (b) (*env)->DeleteLocalRef(env, b);
    if (!path) {
      if (!(*env)->ExceptionCheck(env)) jfg_throw_arg(env, "fgemma: a LoRA path is null");
      free(sc);
      loras_free(ll);
      return -1;
    }
    ll->paths[i] = path;
    ll->l[i].path = path;
    ll->l[i].scale = sc[i];
    ll->n = (uint32_t)i + 1;
  }
  free(sc);
  return 0;
}

static void model_params(fg_model_params *p, jint flags, jint head_type, const jfg_loras *ll, jint lora_merge) {
  fg_model_params_init(p);
  p->flags = (uint32_t)flags;
  if (head_type >= 0) p->head_type = (uint32_t)head_type;
  p->loras = ll->n ? ll->l : NULL;
  p->n_loras = ll->n;
  p->lora_merge = (uint32_t)lora_merge;
}

JNIEXPORT jint JNICALL JFG(version)(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return (jint)fg_version_number();
}

JNIEXPORT jlong JNICALL JFG(load)(JNIEnv *env, jclass cls, jbyteArray path, jint flags, jint head_type,
                                   jobjectArray lora_paths, jfloatArray lora_scales, jint lora_merge) {
  (void)cls;
  char *p = jfg_path_in(env, path);
  if (!p) return 0;
  jfg_loras ll;
  if (loras_in(env, lora_paths, lora_scales, &ll) != 0) {
    free(p);
    return 0;
  }
  fg_model_params mp;
  model_params(&mp, flags, head_type, &ll, lora_merge);
  fg_model *m = NULL;
  fg_error err = {0};
  fg_status st = fg_model_load(p, &mp, &m, &err);
  free(p);
  loras_free(&ll);
  if (st != FG_OK) {
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(m);
}

JNIEXPORT jlong JNICALL JFG(loadFd)(JNIEnv *env, jclass cls, jint fd, jlong offset, jlong length, jint flags,
                                    jint head_type, jobjectArray lora_paths, jfloatArray lora_scales, jint lora_merge) {
  (void)cls;
  if (offset < 0 || length < 0) {
    jfg_throw(env, FG_ERR_INVALID_ARG, "loadFd: offset and length must not be negative");
    return 0;
  }
  jfg_loras ll;
  if (loras_in(env, lora_paths, lora_scales, &ll) != 0) return 0;
  fg_model_params mp;
  model_params(&mp, flags, head_type, &ll, lora_merge);
  fg_model *m = NULL;
  fg_error err = {0};
  fg_status st = fg_model_load_fd((int)fd, (uint64_t)offset, (uint64_t)length, &mp, &m, &err);
  loras_free(&ll);
  if (st != FG_OK) {
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(m);
}

/* FgModel.withLora: a view of the model with these adapters (fg_model_with_loras) */
JNIEXPORT jlong JNICALL JFG(withLoras)(JNIEnv *env, jclass cls, jlong h, jobjectArray lora_paths,
                                       jfloatArray lora_scales) {
  (void)cls;
  const fg_model *base = jfg_live(env, h, "model");
  if (!base) return 0;
  jfg_loras ll;
  if (loras_in(env, lora_paths, lora_scales, &ll) != 0) return 0;
  fg_model *m = NULL;
  fg_error err = {0};
  fg_status st = fg_model_with_loras(base, ll.l, ll.n, &m, &err);
  loras_free(&ll);
  if (st != FG_OK) {
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(m);
}

JNIEXPORT void JNICALL JFG(free)(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  fg_model_free(jfg_ptr(h));
}

/* nums: n_vocab n_embd n_layer n_head n_head_kv head_dim n_ff n_ctx_train sliding_window swa_pattern
 * n_global_layers weight_type head_type tied_head has_vocab file_bytes weight_bytes n_params
 * decode_bytes repack_bytes n_loras lora_merge lora_bytes lora_ms (the double's bits) (24); strs: arch,
 * name, fingerprint (32 hex digits), weight type name, head type name, kernel table name. */
JNIEXPORT void JNICALL JFG(info)(JNIEnv *env, jclass cls, jlong h, jlongArray nums, jobjectArray strs) {
  (void)cls;
  const fg_model *m = jfg_live(env, h, "model");
  if (!m) return;
  fg_model_info i;
  fg_status st = fg_model_get_info(m, &i);
  if (st != FG_OK) {
    jfg_throw(env, st, "fg_model_get_info failed");
    return;
  }
  const jlong v[24] = {i.n_vocab,     i.n_embd,      i.n_layer,      i.n_head,          i.n_head_kv,
                       i.head_dim,    i.n_ff,        i.n_ctx_train,  i.sliding_window,  i.swa_pattern,
                       i.n_global_layers, i.weight_type, i.head_type, i.tied_head,       i.has_vocab,
                       (jlong)i.file_bytes, (jlong)i.weight_bytes, (jlong)i.n_params, (jlong)i.decode_bytes,
                       (jlong)i.repack_bytes, i.n_loras, i.lora_merge, (jlong)i.lora_bytes, 0};
  jlong vv[24];
  memcpy(vv, v, sizeof v);
  memcpy(&vv[23], &i.lora_ms, sizeof vv[23]); /* Kotlin: Double.fromBits */
  if ((*env)->GetArrayLength(env, nums) < 24 || (*env)->GetArrayLength(env, strs) < 6) {
    jfg_throw_arg(env, "fgemma: info arrays too short");
    return;
  }
  (*env)->SetLongArrayRegion(env, nums, 0, 24, vv);
  char hex[33];
  for (int k = 0; k < 16; k++) {
    static const char digits[] = "0123456789abcdef";
    hex[2 * k] = digits[i.fingerprint[k] >> 4];
    hex[2 * k + 1] = digits[i.fingerprint[k] & 15];
  }
  hex[32] = '\0';
  if (jfg_set_str(env, strs, 0, i.arch) || jfg_set_str(env, strs, 1, i.name) || jfg_set_str(env, strs, 2, hex) ||
      jfg_set_str(env, strs, 3, fg_type_name(i.weight_type)) || jfg_set_str(env, strs, 4, fg_type_name(i.head_type)) ||
      jfg_set_str(env, strs, 5, fg_kernels_name()))
    return;
}

JNIEXPORT jintArray JNICALL JFG(tokenize)(JNIEnv *env, jclass cls, jlong h, jbyteArray text, jint flags) {
  (void)cls;
  const fg_model *m = jfg_live(env, h, "model");
  if (!m) return NULL;
  size_t len = 0;
  char *t = jfg_bytes_in(env, text, &len, 0);
  if (!t) return NULL;
  size_t cap = len + 2, n = 0; /* at most one id per byte, plus BOS */
  int32_t *ids = malloc(cap * sizeof *ids);
  fg_status st = ids ? fg_tokenize(m, t, len, (uint32_t)flags, ids, cap, &n) : FG_ERR_NOMEM;
  if (st == FG_ERR_BUFFER_TOO_SMALL) { /* not expected, but the contract allows it */
    free(ids);
    cap = n;
    ids = malloc((cap ? cap : 1) * sizeof *ids);
    st = ids ? fg_tokenize(m, t, len, (uint32_t)flags, ids, cap, &n) : FG_ERR_NOMEM;
  }
  free(t);
  jintArray out = NULL;
  if (st != FG_OK) {
    jfg_throw(env, st, st == FG_ERR_UNSUPPORTED ? "tokenize: the model has no tokenizer metadata" : NULL);
  } else if (n > (size_t)INT32_MAX) {
    jfg_throw_oom(env, "token ids");
  } else if ((out = (*env)->NewIntArray(env, (jsize)n)) != NULL && n) {
    (*env)->SetIntArrayRegion(env, out, 0, (jsize)n, (const jint *)ids);
  }
  free(ids);
  return out;
}

JNIEXPORT jbyteArray JNICALL JFG(detokenize)(JNIEnv *env, jclass cls, jlong h, jintArray ids) {
  (void)cls;
  const fg_model *m = jfg_live(env, h, "model");
  if (!m) return NULL;
  if (!ids) {
    jfg_throw_arg(env, "fgemma: ids is null");
    return NULL;
  }
  const jsize n = (*env)->GetArrayLength(env, ids);
  int32_t *v = malloc(((size_t)n ? (size_t)n : 1) * sizeof *v);
  if (!v) {
    jfg_throw_oom(env, "token ids");
    return NULL;
  }
  (*env)->GetIntArrayRegion(env, ids, 0, n, (jint *)v);
  size_t need = 0, cap = (size_t)n * 8 + 16;
  char *buf = malloc(cap);
  fg_status st = buf ? fg_detokenize(m, v, (size_t)n, buf, cap, &need) : FG_ERR_NOMEM;
  if (st == FG_ERR_BUFFER_TOO_SMALL) {
    free(buf);
    cap = need;
    buf = malloc(cap ? cap : 1);
    st = buf ? fg_detokenize(m, v, (size_t)n, buf, cap, &need) : FG_ERR_NOMEM;
  }
  free(v);
  jbyteArray out = NULL;
  if (st == FG_OK)
    out = jfg_bytes_out(env, buf, need);
  else
    jfg_throw(env, st,
              st == FG_ERR_INVALID_ARG ? "detokenize: a token id is outside the vocabulary"
              : st == FG_ERR_UNSUPPORTED ? "detokenize: the model has no tokenizer metadata"
                                         : NULL);
  free(buf);
  return out;
}

JNIEXPORT jlong JNICALL JFG_CAT(parse)(JNIEnv *env, jclass cls, jbyteArray json) {
  (void)cls;
  size_t len = 0;
  char *j = jfg_bytes_in(env, json, &len, 0);
  if (!j) return 0;
  fg_catalog *c = NULL;
  fg_error err = {0};
  fg_status st = fg_catalog_parse(j, len, &c, &err);
  free(j);
  if (st != FG_OK) {
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(c);
}

JNIEXPORT void JNICALL JFG_CAT(free)(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  fg_catalog_free(jfg_ptr(h));
}

JNIEXPORT jint JNICALL JFG_CAT(functions)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  const fg_catalog *c = jfg_live(env, h, "catalog");
  return c ? (jint)fg_catalog_n_functions(c) : 0;
}

JNIEXPORT jbyteArray JNICALL JFG_CAT(prefix)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  const fg_catalog *c = jfg_live(env, h, "catalog");
  if (!c) return NULL;
  size_t n = 0;
  fg_status st = fg_catalog_render_prefix(c, NULL, 0, &n);
  char *buf = (st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL) ? malloc(n + 1) : NULL;
  st = buf ? fg_catalog_render_prefix(c, buf, n + 1, &n) : (st == FG_OK ? FG_ERR_NOMEM : st);
  jbyteArray out = st == FG_OK ? jfg_bytes_out(env, buf, n) : NULL;
  if (st != FG_OK) jfg_throw(env, st, "the catalog prefix cannot be rendered");
  free(buf);
  return out;
}
