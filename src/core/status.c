/* status.c — status names, error reports, logging, version. */
#include "fg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t fg_version_number(void) { return FG_VERSION_NUMBER; }

const char *fg_version_string(void) {
#define FG_STR2(x) #x
#define FG_STR(x) FG_STR2(x)
  return FG_STR(FG_VERSION_MAJOR) "." FG_STR(FG_VERSION_MINOR) "." FG_STR(FG_VERSION_PATCH);
}

const char *fg_status_str(fg_status s) {
  switch (s) {
    case FG_OK: return "ok";
    case FG_ERR_INVALID_ARG: return "invalid argument";
    case FG_ERR_NOMEM: return "out of memory";
    case FG_ERR_IO: return "I/O error";
    case FG_ERR_FORMAT: return "bad format";
    case FG_ERR_UNSUPPORTED: return "unsupported";
    case FG_ERR_CONTEXT_FULL: return "context full";
    case FG_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case FG_ERR_ABORTED: return "aborted";
    case FG_ERR_INTERNAL: return "internal error";
    case FG_ERR_MISMATCH: return "model mismatch";
  }
  return "unknown status";
}

fg_status fg_verr(fg_error *err, fg_status code, const char *fmt, va_list ap) {
  if (err) {
    err->code = code;
    /* a message may quote the caller's bytes and vsnprintf may cut a character: keep it UTF-8 */
    const int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    const size_t len = n < 0 ? 0 : FG_MIN((size_t)n, sizeof err->msg - 1);
    err->msg[len] = '\0';
    fg_utf8_repair_in_place(err->msg, len, sizeof err->msg);
  }
  return code;
}

fg_status fg_err(fg_error *err, fg_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fg_verr(err, code, fmt, ap);
  va_end(ap);
  return code;
}

const char *fg_path_shown(char *buf, size_t cap, const char *path) {
  if (!cap) return buf;
  const size_t n = path ? strlen(path) : 0;
  if (n < cap) {
    memcpy(buf, path ? path : "", n + 1);
  } else if (cap > 4) {
    memcpy(buf, "...", 3);
    memcpy(buf + 3, path + n - (cap - 4), cap - 4 + 1);
  } else {
    buf[0] = '\0';
  }
  return buf;
}

const char *fg_path_short(const char *path) {
  static _Thread_local char ring[4][72];
  static _Thread_local unsigned k;
  k = (k + 1) % 4;
  return fg_path_shown(ring[k], sizeof ring[k], path);
}

void fg_err_clear(fg_error *err) {
  if (err) {
    err->code = FG_OK;
    err->msg[0] = '\0';
  }
}

void fg_assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "fgemma: internal assertion failed: %s (%s:%d)\n", expr, file, line);
  abort();
}

/* ---- logging ---- */
static fg_log_fn g_log_fn;   /* written by the application, read by any thread */
static void *g_log_ud;

void fg_set_log_callback(fg_log_fn fn, void *user_data) {
  g_log_fn = fn;
  g_log_ud = user_data;
}

bool fg_log_active(void) { return g_log_fn != NULL; }

void fg_log(fg_log_level level, const char *fmt, ...) {
  fg_log_fn fn = g_log_fn;
  if (!fn) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fg_utf8_repair_in_place(buf, n < 0 ? 0 : FG_MIN((size_t)n, sizeof buf - 1), sizeof buf);
  fn(level, buf, g_log_ud);
}
