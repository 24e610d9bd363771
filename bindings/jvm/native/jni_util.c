/* jni_util.c — JNI_OnLoad, exceptions and UTF-8 byte arrays for the glue (see jni_util.h). */
#include "jni_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FgException and its (int, byte[]) constructor: looked up once, when the library is loaded (the
 * consumer R8/ProGuard rules keep both; bindings/jvm/src/main/resources/META-INF/proguard). */
static jclass g_exc;
static jmethodID g_exc_init;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  (void)reserved;
  JNIEnv *env = NULL;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  jclass c = (*env)->FindClass(env, "dev/fgemma/FgException");
  if (!c) return JNI_ERR; /* NoClassDefFoundError is pending: loadLibrary reports it */
  g_exc = (jclass)(*env)->NewGlobalRef(env, c);
  (*env)->DeleteLocalRef(env, c);
  if (!g_exc) return JNI_ERR;
  g_exc_init = (*env)->GetMethodID(env, g_exc, "<init>", "(I[B)V");
  if (!g_exc_init) return JNI_ERR;
  return JNI_VERSION_1_6;
}

bool jfg_abort_cb(void *user_data) {
  return atomic_load_explicit(&((jfg_cancel *)user_data)->cancel, memory_order_relaxed) != 0;
}

static void throw_named(JNIEnv *env, const char *cls, const char *msg) {
  jclass c = (*env)->FindClass(env, cls);
  if (c) (*env)->ThrowNew(env, c, msg);
}

void jfg_throw_state(JNIEnv *env, const char *msg) { throw_named(env, "java/lang/IllegalStateException", msg); }
void jfg_throw_arg(JNIEnv *env, const char *msg) { throw_named(env, "java/lang/IllegalArgumentException", msg); }
void jfg_throw_oom(JNIEnv *env, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "fgemma: out of memory for %s", what);
  throw_named(env, "java/lang/OutOfMemoryError", msg);
}

void jfg_throw(JNIEnv *env, fg_status st, const char *msg) {
  if ((*env)->ExceptionCheck(env)) return; /* keep the first */
  if (!msg || !*msg) msg = fg_status_str(st);
  jbyteArray m = jfg_bytes_out(env, msg, strlen(msg));
  if (!m) return;
  jthrowable t = (jthrowable)(*env)->NewObject(env, g_exc, g_exc_init, (jint)st, m);
  if (t) (*env)->Throw(env, t);
}

char *jfg_bytes_in(JNIEnv *env, jbyteArray a, size_t *len, int allow_null) {
  if (!a) {
    if (!allow_null) jfg_throw_arg(env, "fgemma: null argument");
    return NULL;
  }
  const jsize n = (*env)->GetArrayLength(env, a);
  char *s = malloc((size_t)n + 1);
  if (!s) {
    jfg_throw_oom(env, "a byte array");
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, a, 0, n, (jbyte *)s);
  s[n] = '\0';
  if (len) *len = (size_t)n;
  return s;
}

char *jfg_path_in(JNIEnv *env, jbyteArray a) {
  size_t n = 0;
  char *s = jfg_bytes_in(env, a, &n, 0);
  if (s && memchr(s, '\0', n)) {
    free(s);
    jfg_throw(env, FG_ERR_INVALID_ARG, "the path contains a NUL character");
    return NULL;
  }
  return s;
}

jbyteArray jfg_bytes_out(JNIEnv *env, const char *s, size_t n) {
  if (n > (size_t)INT32_MAX) {
    jfg_throw_oom(env, "a byte array over 2 GiB");
    return NULL;
  }
  jbyteArray a = (*env)->NewByteArray(env, (jsize)n);
  if (!a) return NULL; /* OutOfMemoryError pending */
  if (n) (*env)->SetByteArrayRegion(env, a, 0, (jsize)n, (const jbyte *)s);
  return a;
}

int jfg_set_str(JNIEnv *env, jobjectArray arr, jsize i, const char *s) {
  jbyteArray b = jfg_bytes_out(env, s ? s : "", s ? strlen(s) : 0);
  if (!b) return -1;
  (*env)->SetObjectArrayElement(env, arr, i, b);
  (*env)->DeleteLocalRef(env, b);
  return (*env)->ExceptionCheck(env) ? -1 : 0;
}

void *jfg_live(JNIEnv *env, jlong h, const char *what) {
  void *p = jfg_ptr(h);
  if (!p) {
    char msg[128];
    snprintf(msg, sizeof msg, "fgemma: the %s is closed", what);
    jfg_throw_state(env, msg);
  }
  return p;
}
