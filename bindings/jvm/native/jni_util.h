/* jni_util.h — what every file of the JNI glue shares: handles, exceptions, UTF-8 bytes.
 *
 * Rules of the glue (bindings/jvm/README.md "How the binding works"):
 *   - it includes only fgemma.h and jni.h, and holds no logic the C library lacks;
 *   - a handle is a pointer in a Java long; the Kotlin side guarantees it is live for the call;
 *   - text crosses as UTF-8 byte arrays both ways (never NewStringUTF/GetStringUTFChars: model
 *     output may hold invalid or split UTF-8, and Java's "modified UTF-8" differs for U+0000 and
 *     characters outside the BMP); Kotlin decodes with replacement;
 *   - a failure throws dev.fgemma.FgException(int status, byte[] message) and the function returns at
 *     once; no JNI call follows a pending exception;
 *   - no JNIEnv, local reference or callback into Java outlives or leaves the calling thread: the
 *     abort callback reads an atomic flag in the handle's wrapper, nothing else. */
#ifndef FG_JNI_UTIL_H
#define FG_JNI_UTIL_H

#include <fgemma.h>
#include <jni.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A cancellable handle: sessions and NLU engines sit behind one of these; `cancel` comes first so
 * that one setCancel serves both. */
typedef struct jfg_cancel {
  atomic_int cancel; /* non-zero: the running call stops at its next abort check (between layers) */
} jfg_cancel;

typedef struct jfg_session {
  jfg_cancel c;
  fg_session *s;
} jfg_session;

typedef struct jfg_nlu {
  jfg_cancel c;
  fg_nlu *e;
} jfg_nlu;

/* fg_abort_fn over a jfg_cancel */
bool jfg_abort_cb(void *user_data);

static inline void *jfg_ptr(jlong h) { return (void *)(intptr_t)h; }
static inline jlong jfg_handle(const void *p) { return (jlong)(intptr_t)p; }

/* Throws FgException(status, msg); msg may be NULL (then the status name). */
void jfg_throw(JNIEnv *env, fg_status st, const char *msg);
/* Throws java.lang.IllegalStateException / OutOfMemoryError / IllegalArgumentException. */
void jfg_throw_state(JNIEnv *env, const char *msg);
void jfg_throw_oom(JNIEnv *env, const char *what);
void jfg_throw_arg(JNIEnv *env, const char *msg);

/* A copy of a byte array with a NUL after it (malloc'd); NULL with an exception pending on failure.
 * *len (may be NULL) receives the byte count. A NULL array gives NULL without an exception when
 * allow_null, else IllegalArgumentException. */
char *jfg_bytes_in(JNIEnv *env, jbyteArray a, size_t *len, int allow_null);
/* The same for a file path: a NUL byte inside is refused (FG_ERR_INVALID_ARG). */
char *jfg_path_in(JNIEnv *env, jbyteArray a);
/* A new byte array holding n bytes of s; NULL with an exception pending on failure. */
jbyteArray jfg_bytes_out(JNIEnv *env, const char *s, size_t n);
/* Sets element i of a byte[][] to the bytes of the NUL-terminated s; 0 on success. */
int jfg_set_str(JNIEnv *env, jobjectArray arr, jsize i, const char *s);

/* The handle or, when it is 0, IllegalStateException and NULL. */
void *jfg_live(JNIEnv *env, jlong h, const char *what);

#endif
