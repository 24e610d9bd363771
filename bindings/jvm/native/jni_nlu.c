/* jni_nlu.c — dev.fgemma.NluNative: the NLU engine (catalog prefix once, then one call per utterance).
 * An engine sits in a jfg_nlu whose cancel flag its abort callback reads (prefix prefill and asks). */
#include "jni_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JFG(name) Java_dev_fgemma_NluNative_##name

/* opts: max_tokens flags constrained n_ctx threads batch kv_type speculate max_draft (9 ints, 0 = default; C's
 * values); snapshot_path or snapshot_dir (at most one; a directory that does not exist is FG_ERR_IO) */
JNIEXPORT jlong JNICALL JFG(create)(JNIEnv *env, jclass cls, jlong model, jlong catalog, jintArray opts,
                                    jbyteArray snapshot_path, jbyteArray snapshot_dir) {
  (void)cls;
  const fg_model *m = jfg_live(env, model, "model");
  const fg_catalog *c = m ? jfg_live(env, catalog, "catalog") : NULL;
  if (!c) return 0;
  jint o[9];
  if (!opts || (*env)->GetArrayLength(env, opts) != 9) {
    jfg_throw_arg(env, "fgemma: NLU options array must hold 9 values");
    return 0;
  }
  (*env)->GetIntArrayRegion(env, opts, 0, 9, o);
  for (int i = 0; i < 9; i++)
    if (o[i] < 0) {
      jfg_throw(env, FG_ERR_INVALID_ARG, "NLU options must not be negative");
      return 0;
    }
  if (snapshot_path && snapshot_dir) {
    jfg_throw_arg(env, "fgemma: give snapshotPath or snapshotDir, not both");
    return 0;
  }
  char *path = NULL;
  if (snapshot_path && !(path = jfg_path_in(env, snapshot_path))) return 0;
  if (snapshot_dir) {
    if (!(path = jfg_path_in(env, snapshot_dir))) return 0;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      char msg[600];
      snprintf(msg, sizeof msg, "snapshotDir %.500s is not a directory (create it first)", path);
      free(path);
      jfg_throw(env, FG_ERR_IO, msg);
      return 0;
    }
  }
  jfg_nlu *w = calloc(1, sizeof *w);
  if (!w) {
    free(path);
    jfg_throw_oom(env, "an NLU engine");
    return 0;
  }
  atomic_init(&w->c.cancel, 0);
  fg_nlu_params p;
  fg_nlu_params_init(&p);
  p.max_tokens = (uint32_t)o[0];
  p.flags = (uint32_t)o[1];
  p.constrained = (uint32_t)o[2];
  p.session.n_ctx = (uint32_t)o[3];
  p.session.n_threads = (uint32_t)o[4];
  p.session.n_batch = (uint32_t)o[5];
  p.session.kv_type = (uint32_t)o[6];
  p.speculate = (uint32_t)o[7];
  p.max_draft = (uint32_t)o[8];
  p.session.abort_cb = jfg_abort_cb;
  p.session.abort_user_data = &w->c;
  if (snapshot_dir)
    p.snapshot_dir = path;
  else
    p.snapshot_path = path;
  fg_error err = {0};
  fg_status st = fg_nlu_create(m, c, &p, &w->e, &err);
  free(path); /* the engine reads the path only while it is created */
  if (st != FG_OK) {
    free(w);
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(w);
}

JNIEXPORT void JNICALL JFG(free)(JNIEnv *env, jclass cls, jlong h) {
  (void)env, (void)cls;
  jfg_nlu *w = jfg_ptr(h);
  if (!w) return;
  fg_nlu_free(w->e);
  free(w);
}

/* nums: chunk_tokens decode_tokens restore_ms chunk_ms decode_ms full_head_steps sparse_head_steps
 * forced_tokens (8); strs: json, raw, stop. */
JNIEXPORT void JNICALL JFG(ask)(JNIEnv *env, jclass cls, jlong h, jbyteArray utterance, jdoubleArray nums,
                                jobjectArray strs) {
  (void)cls;
  jfg_nlu *w = jfg_live(env, h, "NLU engine");
  if (!w) return;
  if ((*env)->GetArrayLength(env, nums) < 8 || (*env)->GetArrayLength(env, strs) < 3) {
    jfg_throw_arg(env, "fgemma: result arrays too short");
    return;
  }
  size_t len = 0;
  char *u = jfg_bytes_in(env, utterance, &len, 0);
  if (!u) return;
  fg_nlu_result r;
  fg_status st = fg_nlu_ask(w->e, u, len, &r);
  free(u);
  if (st != FG_OK) {
    jfg_throw(env, st, fg_nlu_errmsg(w->e));
    return;
  }
  const jdouble v[8] = {r.chunk_tokens, r.decode_tokens,   r.restore_ms,        r.chunk_ms,
                        r.decode_ms,    r.full_head_steps, r.sparse_head_steps, r.forced_tokens};
  (*env)->SetDoubleArrayRegion(env, nums, 0, 8, v);
  if (jfg_set_str(env, strs, 0, r.json) || jfg_set_str(env, strs, 1, r.raw)) return;
  jfg_set_str(env, strs, 2, fg_nlu_stop_name(r.stop));
}

/* nums: prefix_tokens prefix_ms prefix_from_file snapshot_written snapshot_refused constrained speculate;
 * strs: snapshot_name */
JNIEXPORT void JNICALL JFG(info)(JNIEnv *env, jclass cls, jlong h, jdoubleArray nums, jobjectArray strs) {
  (void)cls;
  jfg_nlu *w = jfg_live(env, h, "NLU engine");
  if (!w) return;
  fg_nlu_info i;
  fg_status st = fg_nlu_get_info(w->e, &i);
  if (st != FG_OK) {
    jfg_throw(env, st, "fg_nlu_get_info failed");
    return;
  }
  if ((*env)->GetArrayLength(env, nums) < 7 || (*env)->GetArrayLength(env, strs) < 1) {
    jfg_throw_arg(env, "fgemma: info arrays too short");
    return;
  }
  const jdouble v[7] = {i.prefix_tokens,    i.prefix_ms,   i.prefix_from_file, i.snapshot_written,
                        i.snapshot_refused, i.constrained, i.speculate};
  (*env)->SetDoubleArrayRegion(env, nums, 0, 7, v);
  jfg_set_str(env, strs, 0, i.snapshot_name);
}

/* A session forked from the engine's prefix state (the engine keeps the state; the session holds
 * its own references). kv_type follows the prefix. */
JNIEXPORT jlong JNICALL JFG(forkPrefix)(JNIEnv *env, jclass cls, jlong h, jint n_ctx, jint threads, jint batch) {
  (void)cls;
  jfg_nlu *w = jfg_live(env, h, "NLU engine");
  if (!w) return 0;
  if (n_ctx < 0 || threads < 0 || batch < 0) {
    jfg_throw(env, FG_ERR_INVALID_ARG, "session options must not be negative");
    return 0;
  }
  const fg_snapshot *snap = fg_nlu_snapshot(w->e);
  jfg_session *s = calloc(1, sizeof *s);
  if (!s) {
    jfg_throw_oom(env, "a session");
    return 0;
  }
  atomic_init(&s->c.cancel, 0);
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_ctx = (uint32_t)n_ctx;
  p.n_threads = (uint32_t)threads;
  p.n_batch = (uint32_t)batch;
  p.kv_type = fg_snapshot_kv_type(snap);
  p.abort_cb = jfg_abort_cb;
  p.abort_user_data = &s->c;
  fg_error err = {0};
  fg_status st = fg_session_fork(snap, &p, &s->s, &err);
  if (st != FG_OK) {
    free(s);
    jfg_throw(env, st, err.msg);
    return 0;
  }
  return jfg_handle(s);
}
