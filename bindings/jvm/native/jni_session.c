/* jni_session.c — dev.fgemma.SessionNative and SnapshotNative: sessions (prefill, step, logits,
 * snapshot, restore, cancel) and snapshots (fork, save, load). A session sits in a jfg_session whose
 * cancel flag its abort callback reads. */
#include "jni_util.h"

#include <stdlib.h>
#include <string.h>

#define JFG(name) Java_dev_fgemma_SessionNative_##name
#define JFG_SNAP(name) Java_dev_fgemma_SnapshotNative_##name

/* Session parameters from the Java options (0 = default); abort through the wrapper's flag. */
static void session_params(fg_session_params *p, jint n_ctx, jint threads, jint batch, jint kv_type, jfg_session *w) {
  fg_session_params_init(p);
  p->n_ctx = (uint32_t)n_ctx;
  p->n_threads = (uint32_t)threads;
  p->n_batch = (uint32_t)batch;
  p->kv_type = (uint32_t)kv_type;
  p->abort_cb = jfg_abort_cb;
  p->abort_user_data = &w->c;
}

static int params_ok(JNIEnv *env, jint n_ctx, jint threads, jint batch, jint kv_type) {
  if (n_ctx < 0 || threads < 0 || batch < 0 || kv_type < 0) {
    jfg_throw(env, FG_ERR_INVALID_ARG, "session options must not be negative");
    return 0;
  }
  return 1;
}

static jfg_session *wrapper_new(JNIEnv *env) {
  jfg_session *w = calloc(1, sizeof *w);
  if (!w) jfg_throw_oom(env, "a session");
  else atomic_init(&w->c.cancel, 0);
  return w;
}

JNIEXPORT jlong JNICALL JFG(create)(JNIEnv *env, jclass cls, jlong model, jint n_ctx, jint threads, jint batch,
                                    jint kv_type) {
  (void)cls;
  const fg_model *m = jfg_live(env, model, "model");
  if (!m || !params_ok(env, n_ctx, threads, batch, kv_type)) return 0;
  jfg_session *w = wrapper_new(env);
  if (!w) return 0;
  fg_session_params p;
  session_params(&p, n_ctx, threads, batch, kv_type, w);
  fg_error err = {0};
  fg_status st = fg_session_create(m, &p, &w->s, &err);
  if (st != FG_OK) {
    free(w);
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(w);
}

JNIEXPORT void JNICALL JFG(free)(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  jfg_session *w = jfg_ptr(h);
  if (!w) return;
  fg_session_free(w->s);
  free(w);
}

/* Also serves NLU engines: both wrappers start with the flag. */
JNIEXPORT void JNICALL JFG(setCancel)(JNIEnv *env, jclass cls, jlong h, jboolean on) {
  (void)env, (void)cls;
  jfg_cancel *c = jfg_ptr(h);
  if (c) atomic_store_explicit(&c->cancel, on ? 1 : 0, memory_order_relaxed);
}

static void throw_session(JNIEnv *env, jfg_session *w, fg_status st) {
  jfg_throw(env, st, fg_session_errmsg(w->s));
}

JNIEXPORT jint JNICALL JFG(prefill)(JNIEnv *env, jclass cls, jlong h, jintArray ids) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  if (!w) return -1;
  if (!ids) {
    jfg_throw_arg(env, "fgemma: ids is null");
    return -1;
  }
  const jsize n = (*env)->GetArrayLength(env, ids);
  if (n == 0) {
    jfg_throw(env, FG_ERR_INVALID_ARG, "prefill: no tokens (an empty array)");
    return -1;
  }
  int32_t *v = malloc((size_t)n * sizeof *v);
  if (!v) {
    jfg_throw_oom(env, "token ids");
    return -1;
  }
  (*env)->GetIntArrayRegion(env, ids, 0, n, (jint *)v);
  int32_t next = -1;
  fg_status st = fg_session_prefill(w->s, v, (size_t)n, &next);
  free(v);
  if (st != FG_OK) throw_session(env, w, st);
  return next;
}

JNIEXPORT jint JNICALL JFG(step)(JNIEnv *env, jclass cls, jlong h, jint id) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  if (!w) return -1;
  int32_t next = -1;
  fg_status st = fg_session_step(w->s, (int32_t)id, &next);
  if (st != FG_OK) throw_session(env, w, st);
  return next;
}

JNIEXPORT jint JNICALL JFG(position)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  return w ? (jint)fg_session_position(w->s) : 0;
}

JNIEXPORT jfloatArray JNICALL JFG(logits)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  if (!w) return NULL;
  const float *l = fg_session_logits(w->s);
  if (!l) return NULL; /* nothing appended yet: Kotlin says so */
  fg_model_info info;
  fg_model_get_info(fg_session_model(w->s), &info);
  jfloatArray out = (*env)->NewFloatArray(env, (jsize)info.n_vocab);
  if (out) (*env)->SetFloatArrayRegion(env, out, 0, (jsize)info.n_vocab, l);
  return out;
}

JNIEXPORT jlong JNICALL JFG(snapshot)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  if (!w) return 0;
  fg_snapshot *snap = NULL;
  fg_status st = fg_session_snapshot(w->s, &snap);
  if (st != FG_OK) {
    throw_session(env, w, st);
    return 0;
  }
  return jfg_handle(snap);
}

JNIEXPORT void JNICALL JFG(restore)(JNIEnv *env, jclass cls, jlong h, jlong snap) {
  (void)cls;
  jfg_session *w = jfg_live(env, h, "session");
  const fg_snapshot *s = w ? jfg_live(env, snap, "snapshot") : NULL;
  if (!s) return;
  fg_status st = fg_session_restore(w->s, s);
  if (st != FG_OK) throw_session(env, w, st);
}

// ----------------------------------------------------------------------------------------------
// Snapshots

/* kv_type < 0: the snapshot's own */
JNIEXPORT jlong JNICALL JFG_SNAP(fork)(JNIEnv *env, jclass cls, jlong h, jint n_ctx, jint threads, jint batch,
                                       jint kv_type) {
  (void)cls;
  const fg_snapshot *snap = jfg_live(env, h, "snapshot");
  if (!snap) return 0;
  if (kv_type < 0) kv_type = (jint)fg_snapshot_kv_type(snap);
  if (!params_ok(env, n_ctx, threads, batch, kv_type)) return 0;
  jfg_session *w = wrapper_new(env);
  if (!w) return 0;
  fg_session_params p;
  session_params(&p, n_ctx, threads, batch, kv_type, w);
  fg_error err = {0};
  fg_status st = fg_session_fork(snap, &p, &w->s, &err);
  if (st != FG_OK) {
    free(w);
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(w);
}

JNIEXPORT void JNICALL JFG_SNAP(free)(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  fg_snapshot_free(jfg_ptr(h));
}

JNIEXPORT jint JNICALL JFG_SNAP(position)(JNIEnv *env, jclass cls, jlong h) {
  (void)cls;
  const fg_snapshot *snap = jfg_live(env, h, "snapshot");
  return snap ? (jint)fg_snapshot_position(snap) : 0;
}

JNIEXPORT void JNICALL JFG_SNAP(save)(JNIEnv *env, jclass cls, jlong h, jbyteArray path) {
  (void)cls;
  const fg_snapshot *snap = jfg_live(env, h, "snapshot");
  if (!snap) return;
  char *p = jfg_path_in(env, path);
  if (!p) return;
  fg_error err = {0};
  fg_status st = fg_snapshot_save(snap, p, &err);
  free(p);
  if (st != FG_OK) jfg_throw(env, st, err.msg);
}

JNIEXPORT jlong JNICALL JFG_SNAP(load)(JNIEnv *env, jclass cls, jlong model, jbyteArray path) {
  (void)cls;
  const fg_model *m = jfg_live(env, model, "model");
  if (!m) return 0;
  char *p = jfg_path_in(env, path);
  if (!p) return 0;
  fg_snapshot *snap = NULL;
  fg_error err = {0};
  fg_status st = fg_snapshot_load(m, p, &snap, &err);
  free(p);
  if (st != FG_OK) {
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(snap);
}
