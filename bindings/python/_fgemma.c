/* _fgemma.c — the CPython extension module fgemma._fgemma over the public C API (fgemma.h only).
 *
 * Objects: Model (owns an fg_model), Session (fg_session), Snapshot (fg_snapshot), Nlu (fg_nlu plus its
 * fg_catalog) and a private _Logits buffer (an fg_logits reference exposed through the buffer
 * protocol). Heap types from PyType_FromSpec; no cycles are possible, so none is GC-tracked.
 *
 * Lifetime: every child object holds a strong reference to its Model, so the fg_model is freed after
 * its last child whatever the order of garbage collection. An explicit Model.close() marks the model
 * closed at once and frees the fg_model when the last C handle made from it is freed (model_use /
 * model_unuse count them).
 *
 * Threads: the GIL is released around every long call (model load, prefill, step, ask, engine
 * creation, snapshot save/load). While it is released the object is busy (its gate): a call on the same
 * Session, Snapshot or Nlu from another thread waits for it, with the GIL released, so that calls are
 * serialised as the C library's one-thread-at-a-time rule wants (as the Kotlin binding does); a call
 * from the busy call's own thread (re-entry) raises RuntimeError instead of deadlocking. close() during
 * another thread's call marks the object closed at once, cancels that call and frees the C object when
 * it returns; calls waiting for it then raise "closed". cancel() only sets an atomic flag that the C
 * abort callback polls, so it is safe from any thread. The gates and model counters are touched only
 * with the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fgemma.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#if PY_VERSION_HEX < 0x030A0000 /* 3.9 */
static inline PyObject *Py_NewRef(PyObject *o) {
  Py_INCREF(o);
  return o;
}
#define Py_NewRef(o) Py_NewRef((PyObject *)(o))
#endif

// ----------------------------------------------------------------------------------------------
// Module state (single-phase init: one interpreter)

static PyObject *Error;         /* fgemma.Error(Exception) */
static PyObject *ArgumentError; /* fgemma.ArgumentError(Error, ValueError): FG_ERR_INVALID_ARG, closed objects */
static PyObject *FileError;     /* fgemma.FileError(Error, OSError): FG_ERR_IO */
static PyObject *json_loads;    /* json.loads */
static PyTypeObject *ModelType, *SessionType, *SnapshotType, *NluType, *LogitsType;

static const char *status_name(fg_status st) {
  switch (st) {
    case FG_OK: return "FG_OK";
    case FG_ERR_INVALID_ARG: return "FG_ERR_INVALID_ARG";
    case FG_ERR_NOMEM: return "FG_ERR_NOMEM";
    case FG_ERR_IO: return "FG_ERR_IO";
    case FG_ERR_FORMAT: return "FG_ERR_FORMAT";
    case FG_ERR_UNSUPPORTED: return "FG_ERR_UNSUPPORTED";
    case FG_ERR_CONTEXT_FULL: return "FG_ERR_CONTEXT_FULL";
    case FG_ERR_BUFFER_TOO_SMALL: return "FG_ERR_BUFFER_TOO_SMALL";
    case FG_ERR_ABORTED: return "FG_ERR_ABORTED";
    case FG_ERR_INTERNAL: return "FG_ERR_INTERNAL";
    case FG_ERR_MISMATCH: return "FG_ERR_MISMATCH";
  }
  return "FG_ERR_UNKNOWN";
}

/* Raises the exception class for st with message text (UTF-8, invalid bytes replaced) and the
 * attributes status ("FG_ERR_...") and code (the number). Returns NULL. */
static PyObject *raise_text(fg_status st, PyObject *text) {
  if (!text) return NULL;
  PyObject *cls = st == FG_ERR_INVALID_ARG ? ArgumentError : st == FG_ERR_IO ? FileError : Error;
  PyObject *exc = PyObject_CallOneArg(cls, text);
  Py_DECREF(text);
  if (!exc) return NULL;
  PyObject *status = PyUnicode_FromString(status_name(st)), *code = PyLong_FromLong((long)st);
  if (status && code && PyObject_SetAttrString(exc, "status", status) == 0 &&
      PyObject_SetAttrString(exc, "code", code) == 0)
    PyErr_SetObject(cls, exc);
  Py_XDECREF(status);
  Py_XDECREF(code);
  Py_DECREF(exc);
  return NULL;
}

static PyObject *raise_status(fg_status st, const char *msg) {
  if (!msg || !*msg) msg = fg_status_str(st);
  return raise_text(st, PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace"));
}

/* "what: message" */
static PyObject *raise_status_ctx(fg_status st, const char *what, const char *msg) {
  if (!msg || !*msg) msg = fg_status_str(st);
  PyObject *m = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  if (!m) return NULL;
  PyObject *text = PyUnicode_FromFormat("%s: %U", what, m);
  Py_DECREF(m);
  return raise_text(st, text);
}

/* ArgumentError (a ValueError) with a formatted message, status FG_ERR_INVALID_ARG. */
static PyObject *raise_arg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *text = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  return raise_text(FG_ERR_INVALID_ARG, text);
}

/* One call at a time per object (docs/OPTIONS.md, "Busy objects"). busy and owner change only with the
 * GIL held; lock is held by the busy call while it runs without the GIL, and waiters block on it with
 * the GIL released. */
typedef struct {
  int busy;                /* a call runs with the GIL released */
  unsigned long owner;     /* PyThread_get_thread_ident() of that call's thread */
  PyThread_type_lock lock; /* held while busy */
} gate;

static int gate_init(gate *g) {
  g->busy = 0;
  g->owner = 0;
  g->lock = PyThread_allocate_lock();
  if (!g->lock) return PyErr_NoMemory(), -1;
  return 0;
}

static void gate_free(gate *g) {
  if (g->lock) PyThread_free_lock(g->lock);
  g->lock = NULL;
}

/* Waits (GIL released) until no other thread's call runs on the object. A call from the busy call's own
 * thread (a callback re-entering the object) raises RuntimeError: waiting would never end. */
static int gate_wait(gate *g, const char *what) {
  while (g->busy) {
    if (g->owner == PyThread_get_thread_ident()) {
      PyErr_Format(PyExc_RuntimeError,
                   "re-entrant call: this thread is already running a call on the %s (one call at a time per "
                   "%s; call it again after that call returns)", what, what);
      return -1;
    }
    if (!g->lock) break;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(g->lock, WAIT_LOCK);
    PyThread_release_lock(g->lock);
    Py_END_ALLOW_THREADS
  }
  return 0;
}

/* Marks the object busy for a call that is about to release the GIL; right after a successful ready
 * check (no Python code in between, so no other thread can claim it meanwhile). */
static void gate_claim(gate *g) {
  g->busy = 1;
  g->owner = PyThread_get_thread_ident();
  if (g->lock && !PyThread_acquire_lock(g->lock, NOWAIT_LOCK)) {
    /* a waiter holds it for an instant (acquire, release): wait for that */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(g->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
  }
}

static void gate_release(gate *g) {
  g->busy = 0;
  g->owner = 0;
  if (g->lock) PyThread_release_lock(g->lock);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

// ----------------------------------------------------------------------------------------------
// Argument helpers

/* None keeps *out; an int in lo..hi sets it. TypeError for other types, ArgumentError out of range. */
static int opt_u32(PyObject *o, const char *name, uint32_t lo, uint32_t hi, uint32_t *out) {
  if (!o || o == Py_None) return 0;
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int or None, not %.100s", name, Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *idx = PyNumber_Index(o);
  if (!idx) return -1;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
  Py_DECREF(idx);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow || v < (long long)lo || v > (long long)hi) {
    raise_arg("%s must be in %u..%u", name, (unsigned)lo, (unsigned)hi);
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

/* One of names[] (NULL-terminated) -> *index; None keeps *index. */
static int opt_choice(PyObject *o, const char *name, const char *const *names, int *index) {
  if (!o || o == Py_None) return 0;
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", name, Py_TYPE(o)->tp_name);
    return -1;
  }
  const char *s = PyUnicode_AsUTF8(o);
  if (!s) return -1;
  for (int i = 0; names[i]; i++)
    if (strcmp(s, names[i]) == 0) return *index = i, 0;
  char list[160] = "";
  for (int i = 0; names[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, names[i], sizeof list - strlen(list) - 1);
  }
  raise_arg("%s must be one of %s, not %R", name, list, o);
  return -1;
}

/* A bool (True/False, not any truthy object); None keeps *out. */
static int opt_bool(PyObject *o, const char *name, int *out) {
  if (!o || o == Py_None) return 0;
  if (!PyBool_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be True or False, not %.100s", name, Py_TYPE(o)->tp_name);
    return -1;
  }
  *out = o == Py_True;
  return 0;
}

/* A keyword's deprecated old name (docs/OPTIONS.md): DeprecationWarning, and an error when both are given. */
static int deprecated_kw(PyObject **new_o, PyObject *old_o, const char *new_name, const char *old_name) {
  if (!old_o) return 0;
  if (*new_o) {
    PyErr_Format(PyExc_TypeError, "give %s only (%s is its deprecated old name)", new_name, old_name);
    return -1;
  }
  if (PyErr_WarnFormat(PyExc_DeprecationWarning, 2, "%s is deprecated, use %s", old_name, new_name) != 0) return -1;
  *new_o = old_o;
  return 0;
}

static int token_id(PyObject *o, const char *what, Py_ssize_t i, int32_t *out) {
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    if (i >= 0)
      PyErr_Format(PyExc_TypeError, "%s[%zd] must be an int, not %.100s", what, i, Py_TYPE(o)->tp_name);
    else
      PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *idx = PyNumber_Index(o);
  if (!idx) return -1;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
  Py_DECREF(idx);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow || v < INT32_MIN || v > INT32_MAX) {
    if (i >= 0)
      raise_arg("%s[%zd] is not a token id (out of the int32 range)", what, i);
    else
      raise_arg("%s is not a token id (out of the int32 range)", what);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

/* A sequence (list, tuple, range, array, numpy array, ...) of ints -> PyMem_Malloc'd int32 array. */
static int32_t *token_ids(PyObject *seq, Py_ssize_t *n_out, int allow_empty) {
  if (PyUnicode_Check(seq) || PyBytes_Check(seq) || PyByteArray_Check(seq) || PyDict_Check(seq)) {
    PyErr_Format(PyExc_TypeError, "ids must be a sequence of ints, not %.100s", Py_TYPE(seq)->tp_name);
    return NULL;
  }
  PyObject *fast = PySequence_Fast(seq, "ids must be a sequence of ints");
  if (!fast) return NULL;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n == 0 && !allow_empty) {
    Py_DECREF(fast);
    raise_arg("ids is empty");
    return NULL;
  }
  int32_t *ids = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *ids);
  if (!ids) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return NULL;
  }
  PyObject **items = PySequence_Fast_ITEMS(fast);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (token_id(items[i], "ids", i, &ids[i]) != 0) {
      PyMem_Free(ids);
      Py_DECREF(fast);
      return NULL;
    }
  }
  Py_DECREF(fast);
  *n_out = n;
  return ids;
}

/* Text argument as UTF-8: str (encoded; lone surrogates are a UnicodeEncodeError, a ValueError) or
 * bytes-like. *keep holds the owner until the caller drops it. */
static const char *text_arg(PyObject *o, const char *name, Py_ssize_t *len, PyObject **keep) {
  *keep = NULL;
  if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8AndSize(o, len);
    return s;
  }
  if (PyBytes_Check(o)) {
    *len = PyBytes_GET_SIZE(o);
    return PyBytes_AS_STRING(o);
  }
  PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", name, Py_TYPE(o)->tp_name);
  return NULL;
}

// ----------------------------------------------------------------------------------------------
// Model

typedef struct {
  PyObject_HEAD
  fg_model *m;
  PyObject *path;       /* str */
  PyObject *loras;      /* tuple of (str path, float scale): the adapters as applied, in order */
  uint32_t n_vocab;
  uint32_t threads;     /* default worker threads of sessions and engines; 0 = available cores */
  int closed;
  Py_ssize_t users;     /* C handles made from m that are still alive (or being made) */
} ModelObject;

static void model_use(ModelObject *mo) { mo->users++; }

static void model_unuse(ModelObject *mo) {
  if (--mo->users == 0 && mo->closed && mo->m) {
    fg_model_free(mo->m);
    mo->m = NULL;
  }
}

static int model_ready(ModelObject *mo) {
  if (mo->closed || !mo->m) {
    raise_arg("the Model is closed");
    return -1;
  }
  return 0;
}

static const char *const head_names[] = {"file", "q8_0", "q4_0", NULL};
static const uint32_t head_ids[] = {FG_MODEL_HEAD_AS_FILE, 8, 2};
static const char *const merge_names[] = {"off", "f32", "bf16", "q8_0", NULL};
static const uint32_t merge_ids[] = {FG_LORA_RUNTIME, FG_LORA_MERGE_F32, FG_LORA_MERGE_BF16, FG_LORA_MERGE_Q8_0};

/* The adapters of Model(lora=...), as given: a path, a (path, scale) tuple, or a list of either. */
typedef struct {
  Py_ssize_t n;
  fg_lora *l;         /* n entries; paths point into the bytes of `paths` */
  PyObject *paths;    /* list of bytes (file system encoding), kept alive for the load */
  PyObject *normal;   /* tuple of (str path, float scale) for Model.loras */
} lora_list;

static void lora_list_clear(lora_list *ll) {
  PyMem_Free(ll->l);
  Py_XDECREF(ll->paths);
  Py_XDECREF(ll->normal);
  memset(ll, 0, sizeof *ll);
}

static int is_path(PyObject *o) { return PyUnicode_Check(o) || PyBytes_Check(o) || PyObject_HasAttrString(o, "__fspath__"); }

/* One adapter: a path (scale 1) or a (path, scale) tuple. where: "lora" or "lora[3]". */
static int lora_item(PyObject *o, const char *where, lora_list *ll) {
  PyObject *path_o = o, *scale_o = NULL;
  if (PyTuple_Check(o)) {
    if (PyTuple_GET_SIZE(o) != 2) {
      PyErr_Format(PyExc_TypeError, "%s must be a path or a (path, scale) tuple, not a tuple of %zd items", where,
                   PyTuple_GET_SIZE(o));
      return -1;
    }
    path_o = PyTuple_GET_ITEM(o, 0);
    scale_o = PyTuple_GET_ITEM(o, 1);
  }
  if (!is_path(path_o)) {
    PyErr_Format(PyExc_TypeError, "%s%s must be a path (str, bytes or os.PathLike), not %.100s", where,
                 scale_o ? "[0]" : "", Py_TYPE(path_o)->tp_name);
    return -1;
  }
  double scale = 1.0;
  if (scale_o) {
    if (PyBool_Check(scale_o) || !(PyFloat_Check(scale_o) || PyLong_Check(scale_o))) {
      PyErr_Format(PyExc_TypeError, "%s[1] (the scale) must be a float or an int, not %.100s", where,
                   Py_TYPE(scale_o)->tp_name);
      return -1;
    }
    scale = PyFloat_AsDouble(scale_o);
    if (scale == -1.0 && PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
      PyErr_Clear();
      scale = HUGE_VAL;
    }
    if (!isfinite(scale) || !isfinite((float)scale)) {
      raise_arg("%s[1] (the scale) must be a finite float32, not %R", where, scale_o);
      return -1;
    }
  }
  PyObject *b = NULL;
  if (!PyUnicode_FSConverter(path_o, &b)) return -1;
  PyObject *str = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(b));
  PyObject *pair = str ? Py_BuildValue("(Nd)", str, (double)(float)scale) : NULL;
  const int ok = pair && PyList_Append(ll->paths, b) == 0;
  Py_DECREF(b);
  if (!ok) {
    Py_XDECREF(pair);
    return -1;
  }
  PyTuple_SET_ITEM(ll->normal, ll->n, pair);
  ll->l[ll->n].scale = (float)scale;
  ll->n++;
  return 0;
}

static int lora_parse(PyObject *o, lora_list *ll) {
  memset(ll, 0, sizeof *ll);
  Py_ssize_t n = 0;
  if (!o || o == Py_None) n = 0;
  else if (PyList_Check(o)) n = PyList_GET_SIZE(o);
  else if (PyTuple_Check(o) || is_path(o)) n = 1;
  else {
    PyErr_Format(PyExc_TypeError, "lora must be a path, a (path, scale) tuple or a list of either, not %.100s",
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  if (n > 4096) {
    raise_arg("lora: %zd adapters is more than 4096", n);
    return -1;
  }
  ll->paths = PyList_New(0);
  ll->normal = PyTuple_New(n);
  ll->l = PyMem_Calloc((size_t)(n ? n : 1), sizeof *ll->l);
  if (!ll->paths || !ll->normal || !ll->l) {
    if (!PyErr_Occurred()) PyErr_NoMemory();
    lora_list_clear(ll);
    return -1;
  }
  int rc = 0;
  if (n == 1 && !PyList_Check(o)) {
    rc = lora_item(o, "lora", ll);
  } else {
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
      char where[32];
      snprintf(where, sizeof where, "lora[%zd]", i);
      PyObject *item = PyList_GET_ITEM(o, i);
      Py_INCREF(item); /* the list may change under a path's __fspath__ */
      if (PyList_Check(item)) {
        PyErr_Format(PyExc_TypeError, "%s must be a path or a (path, scale) tuple, not a list", where);
        rc = -1;
      } else {
        rc = lora_item(item, where, ll);
      }
      Py_DECREF(item);
      if (rc == 0 && PyList_GET_SIZE(o) != n) {
        PyErr_SetString(PyExc_RuntimeError, "lora: the list changed while it was read");
        rc = -1;
      }
    }
  }
  if (rc != 0) {
    lora_list_clear(ll);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) ll->l[i].path = PyBytes_AS_STRING(PyList_GET_ITEM(ll->paths, i));
  return 0;
}
static const char *const kv_names[] = {"f32", "f16", NULL};

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "head_type", "threads", "repack", "lora", "lora_merge", "no_mmap", "check_tensors", NULL};
  PyObject *path_o, *head_o = Py_None, *threads_o = Py_None, *lora_o = Py_None, *merge_o = Py_None;
  PyObject *nommap_o = Py_None, *check_o = Py_None;
  int repack = 1, no_mmap = 0, check = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOpOOOO:Model", kwlist, &path_o, &head_o, &threads_o, &repack, &lora_o,
                                   &merge_o, &nommap_o, &check_o))
    return NULL;
  int head = 0, merge = 0;
  uint32_t threads = 0;
  if (opt_bool(nommap_o, "no_mmap", &no_mmap) != 0 || opt_bool(check_o, "check_tensors", &check) != 0) return NULL;
  if (opt_choice(head_o, "head_type", head_names, &head) != 0) return NULL;
  if (opt_u32(threads_o, "threads", 1, 256, &threads) != 0) return NULL;
  if (opt_choice(merge_o, "lora_merge", merge_names, &merge) != 0) return NULL;
  lora_list ll;
  if (lora_parse(lora_o, &ll) != 0) return NULL;
  PyObject *path_b = NULL;
  if (!PyUnicode_FSConverter(path_o, &path_b)) {
    lora_list_clear(&ll);
    return NULL;
  }
  ModelObject *self = (ModelObject *)type->tp_alloc(type, 0);
  if (!self) {
    Py_DECREF(path_b);
    lora_list_clear(&ll);
    return NULL;
  }
  self->threads = threads;
  self->loras = Py_NewRef(ll.normal);
  self->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path_b));
  if (!self->path) {
    Py_DECREF(path_b);
    lora_list_clear(&ll);
    Py_DECREF(self);
    return NULL;
  }
  fg_model_params p;
  fg_model_params_init(&p);
  p.head_type = head_ids[head];
  if (!repack) p.flags |= FG_MODEL_NO_REPACK;
  if (no_mmap) p.flags |= FG_MODEL_NO_MMAP;
  if (check) p.flags |= FG_MODEL_CHECK_TENSORS;
  p.loras = ll.n ? ll.l : NULL;
  p.n_loras = (uint32_t)ll.n;
  p.lora_merge = merge_ids[merge];
  fg_error err = {0};
  fg_status st;
  fg_model *m = NULL;
  Py_BEGIN_ALLOW_THREADS
  st = fg_model_load(PyBytes_AS_STRING(path_b), &p, &m, &err);
  Py_END_ALLOW_THREADS
  Py_DECREF(path_b);
  lora_list_clear(&ll);
  if (st != FG_OK) {
    Py_DECREF(self);
    return raise_status(st, err.msg);
  }
  self->m = m;
  fg_model_info info;
  fg_model_get_info(m, &info);
  self->n_vocab = info.n_vocab;
  return (PyObject *)self;
}

PyDoc_STRVAR(model_with_lora_doc, "with_lora($self, /, lora, scale=None)\n--\n\n"
             "A view of this model with adapters of its own: a new Model that shares this one's weights (no\n"
             "second load, no copy) and applies, at run time, this model's adapters and then lora (a path,\n"
             "a (path, scale) tuple or a list of either, as Model(lora=...); scale, for a single path,\n"
             "is its scale). Its logits equal those of Model(path, lora=...) with both lists, bit for bit;\n"
             "sessions, engines and snapshots are made from it as from any Model, and a snapshot of one\n"
             "view is refused by another with other adapters. Either model may be closed first. A model\n"
             "with merged adapters (lora_merge) cannot have views (FgemmaError, UNSUPPORTED).");
static PyObject *model_with_lora(ModelObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"lora", "scale", NULL};
  PyObject *lora_o, *scale_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:with_lora", kwlist, &lora_o, &scale_o)) return NULL;
  if (model_ready(self) != 0) return NULL;
  PyObject *item = NULL;
  if (scale_o != Py_None) {
    if (!is_path(lora_o)) {
      PyErr_Format(PyExc_TypeError, "with_lora: scale= goes with a single path, not with %.100s", Py_TYPE(lora_o)->tp_name);
      return NULL;
    }
    if (!(item = PyTuple_Pack(2, lora_o, scale_o))) return NULL;
  }
  if (lora_o == Py_None || (PyList_Check(lora_o) && PyList_GET_SIZE(lora_o) == 0)) {
    Py_XDECREF(item);
    return raise_arg("with_lora: no adapter given");
  }
  lora_list ll;
  const int rc = lora_parse(item ? item : lora_o, &ll);
  Py_XDECREF(item);
  if (rc != 0) return NULL;
  PyObject *loras = PySequence_Concat(self->loras, ll.normal);
  ModelObject *v = loras ? (ModelObject *)Py_TYPE(self)->tp_alloc(Py_TYPE(self), 0) : NULL;
  if (!v) {
    Py_XDECREF(loras);
    lora_list_clear(&ll);
    return NULL;
  }
  v->loras = loras;
  v->path = Py_NewRef(self->path);
  v->threads = self->threads;
  v->n_vocab = self->n_vocab;
  fg_error err = {0};
  fg_status st;
  fg_model *m = NULL;
  model_use(self); /* a close() on another thread while the GIL is released must not free the base */
  Py_BEGIN_ALLOW_THREADS
  st = fg_model_with_loras(self->m, ll.l, (size_t)ll.n, &m, &err);
  Py_END_ALLOW_THREADS
  model_unuse(self);
  lora_list_clear(&ll);
  if (st != FG_OK) {
    Py_DECREF(v);
    return raise_status(st, err.msg);
  }
  v->m = m;
  return (PyObject *)v;
}

static void model_dealloc(ModelObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  fg_model_free(self->m); /* every child held a reference: none is left */
  Py_XDECREF(self->path);
  Py_XDECREF(self->loras);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyDoc_STRVAR(model_close_doc, "close($self, /)\n--\n\n"
             "Close the model. Idempotent. Sessions, snapshots and engines made from it keep working until\n"
             "they are closed; the file is unmapped after the last of them.");
static PyObject *model_close(ModelObject *self, PyObject *unused) {
  if (!self->closed) {
    self->closed = 1;
    if (self->users == 0 && self->m) {
      fg_model_free(self->m);
      self->m = NULL;
    }
  }
  Py_RETURN_NONE;
}

static PyObject *model_enter(ModelObject *self, PyObject *unused) {
  if (model_ready(self) != 0) return NULL;
  return Py_NewRef(self);
}

static PyObject *any_exit(PyObject *self, PyObject *args) {
  PyObject *r = PyObject_CallMethod(self, "close", NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

static PyObject *hex16(const uint8_t *b) {
  char s[33];
  for (int i = 0; i < 16; i++) snprintf(s + 2 * i, 3, "%02x", b[i]);
  return PyUnicode_FromStringAndSize(s, 32);
}

static PyObject *model_get_info(ModelObject *self, void *closure) {
  if (model_ready(self) != 0) return NULL;
  fg_model_info in;
  fg_status st = fg_model_get_info(self->m, &in);
  if (st != FG_OK) return raise_status(st, "cannot read the model's info");
  PyObject *fp = hex16(in.fingerprint);
  if (!fp) return NULL;
  const char *merge = in.lora_merge < 4 ? merge_names[in.lora_merge] : "?";
  return Py_BuildValue(
      "{s:O,s:s,s:N,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:O,s:O,s:K,s:K,s:K,s:K,s:N,s:K,s:d,s:K,s:d,"
      "s:O,s:I,s:s,s:K,s:d,s:s}",
      "path", self->path, "arch", in.arch, "name", PyUnicode_DecodeUTF8(in.name, (Py_ssize_t)strlen(in.name), "replace"),
      "n_vocab", in.n_vocab, "n_embd", in.n_embd, "n_layer", in.n_layer, "n_head", in.n_head, "n_head_kv",
      in.n_head_kv, "head_dim", in.head_dim, "n_ff", in.n_ff, "n_ctx_train", in.n_ctx_train, "sliding_window",
      in.sliding_window, "swa_pattern", in.swa_pattern, "n_global_layers", in.n_global_layers, "weight_type",
      fg_type_name(in.weight_type), "head_type", fg_type_name(in.head_type), "tied_head",
      in.tied_head ? Py_True : Py_False, "has_vocab", in.has_vocab ? Py_True : Py_False, "file_bytes",
      (unsigned long long)in.file_bytes, "weight_bytes", (unsigned long long)in.weight_bytes, "n_params",
      (unsigned long long)in.n_params, "decode_bytes", (unsigned long long)in.decode_bytes, "fingerprint", fp,
      "head_copy_bytes", (unsigned long long)in.head_copy_bytes, "head_copy_ms", in.head_copy_ms, "repack_bytes",
      (unsigned long long)in.repack_bytes, "repack_ms", in.repack_ms, "loras", self->loras, "n_loras", in.n_loras,
      "lora_merge", merge, "lora_bytes", (unsigned long long)in.lora_bytes, "lora_ms", in.lora_ms,
      "kernels", fg_kernels_name());
}

static PyObject *model_get_closed(ModelObject *self, void *closure) { return PyBool_FromLong(self->closed); }
static PyObject *model_get_path(ModelObject *self, void *closure) { return Py_NewRef(self->path); }
static PyObject *model_get_loras(ModelObject *self, void *closure) { return Py_NewRef(self->loras); }

PyDoc_STRVAR(model_tokenize_doc, "tokenize($self, /, text, bos=False, *, special=True)\n--\n\n"
             "Token ids of text (str, or UTF-8 bytes). bos=True prepends <bos> (id 2). special=False treats\n"
             "control-token text such as '<start_of_turn>' as plain text.");
static PyObject *model_tokenize(ModelObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"text", "bos", "special", NULL};
  PyObject *text_o;
  int bos = 0, special = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p$p:tokenize", kwlist, &text_o, &bos, &special)) return NULL;
  if (model_ready(self) != 0) return NULL;
  PyObject *keep;
  Py_ssize_t len;
  const char *text = text_arg(text_o, "text", &len, &keep);
  if (!text) return NULL;
  const uint32_t flags = (bos ? FG_TOKENIZE_ADD_BOS : 0) | (special ? 0 : FG_TOKENIZE_NO_SPECIAL);
  size_t need = 0;
  fg_status st = fg_tokenize(self->m, text, (size_t)len, flags, NULL, 0, &need);
  int32_t *ids = NULL;
  if (st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL) {
    ids = PyMem_Malloc((need ? need : 1) * sizeof *ids);
    if (!ids) return PyErr_NoMemory();
    st = fg_tokenize(self->m, text, (size_t)len, flags, ids, need, &need);
  }
  if (st != FG_OK) {
    PyMem_Free(ids);
    return raise_status_ctx(st, "tokenize",
                            st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata" : fg_status_str(st));
  }
  PyObject *list = PyList_New((Py_ssize_t)need);
  for (size_t i = 0; list && i < need; i++) {
    PyObject *v = PyLong_FromLong(ids[i]);
    if (!v) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, v);
  }
  PyMem_Free(ids);
  return list;
}

PyDoc_STRVAR(model_detokenize_doc, "detokenize($self, ids, /)\n--\n\n"
             "Text of the token ids (control tokens by name). The bytes are decoded as UTF-8 with\n"
             "invalid sequences replaced by U+FFFD (a token may end in the middle of a character).");
static PyObject *model_detokenize(ModelObject *self, PyObject *ids_o) {
  if (model_ready(self) != 0) return NULL;
  Py_ssize_t n;
  int32_t *ids = token_ids(ids_o, &n, 1);
  if (!ids) return NULL;
  if (n == 0) {
    PyMem_Free(ids);
    return PyUnicode_FromStringAndSize("", 0);
  }
  size_t need = 0;
  char *buf = NULL;
  fg_status st = fg_detokenize(self->m, ids, (size_t)n, NULL, 0, &need);
  if (st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL) {
    buf = PyMem_Malloc(need + 1);
    if (!buf) {
      PyMem_Free(ids);
      return PyErr_NoMemory();
    }
    st = fg_detokenize(self->m, ids, (size_t)n, buf, need, &need);
  }
  PyMem_Free(ids);
  if (st != FG_OK) {
    PyMem_Free(buf);
    return raise_status_ctx(st, "detokenize",
                            st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata"
                            : st == FG_ERR_INVALID_ARG ? "a token id is outside the vocabulary"
                                                       : fg_status_str(st));
  }
  PyObject *r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)need, "replace");
  PyMem_Free(buf);
  return r;
}

// ----------------------------------------------------------------------------------------------
// Session

typedef struct {
  PyObject_HEAD
  ModelObject *model;
  fg_session *s;
  uint32_t kv_type;
  int closed;
  gate g;              /* one call at a time */
  atomic_int cancel;   /* set by cancel(), read by the abort callback */
} SessionObject;

static bool session_abort_cb(void *ud) { return atomic_load_explicit((atomic_int *)ud, memory_order_relaxed) != 0; }

static int session_ready(SessionObject *self) {
  if (gate_wait(&self->g, "Session") != 0) return -1;
  if (self->closed || !self->s) {
    raise_arg("the Session is closed");
    return -1;
  }
  return 0;
}

static void session_release(SessionObject *self) {
  if (self->s) {
    fg_session_free(self->s);
    self->s = NULL;
    model_unuse(self->model);
  }
  self->closed = 1;
}

/* A Session object for model with params (abort callback pointed at the object's flag), made by
 * fg_session_create (snap == NULL) or fg_session_fork. */
static PyObject *session_make(ModelObject *model, const fg_snapshot *snap, uint32_t kv_type, uint32_t threads,
                              uint32_t n_ctx, uint32_t n_batch) {
  SessionObject *self = (SessionObject *)SessionType->tp_alloc(SessionType, 0);
  if (!self) return NULL;
  self->model = (ModelObject *)Py_NewRef(model);
  self->kv_type = kv_type;
  atomic_init(&self->cancel, 0);
  if (gate_init(&self->g) != 0) {
    self->closed = 1;
    Py_DECREF(self);
    return NULL;
  }
  fg_session_params p;
  fg_session_params_init(&p);
  p.kv_type = kv_type;
  p.n_threads = threads ? threads : model->threads;
  p.n_ctx = n_ctx;
  p.n_batch = n_batch;
  p.abort_cb = session_abort_cb;
  p.abort_user_data = &self->cancel;
  fg_error err = {0};
  fg_status st = snap ? fg_session_fork(snap, &p, &self->s, &err) : fg_session_create(model->m, &p, &self->s, &err);
  if (st != FG_OK) {
    self->closed = 1;
    Py_DECREF(self);
    return raise_status_ctx(st, snap ? "fork" : "session", err.msg);
  }
  model_use(model);
  return (PyObject *)self;
}

static void session_dealloc(SessionObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->model) session_release(self);
  gate_free(&self->g);
  Py_XDECREF(self->model);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyDoc_STRVAR(model_session_doc, "session($self, /, kv_type=None, *, threads=None, n_ctx=None, batch=None)\n--\n\n"
             "A new Session (empty KV cache). kv_type: 'f32' (default) or 'f16' (half the KV memory).\n"
             "threads: worker threads (default: the Model's, else the available cores). n_ctx: maximum\n"
             "positions (default: the model's context length). batch: positions per internal prefill chunk\n"
             "(default 256).");
static PyObject *model_session(ModelObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"kv_type", "threads", "n_ctx", "batch", NULL};
  PyObject *kv_o = Py_None, *threads_o = Py_None, *ctx_o = Py_None, *batch_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOO:session", kwlist, &kv_o, &threads_o, &ctx_o, &batch_o)) return NULL;
  int kv = 0;
  uint32_t threads = 0, n_ctx = 0, n_batch = 0;
  if (opt_choice(kv_o, "kv_type", kv_names, &kv) != 0 || opt_u32(threads_o, "threads", 1, 256, &threads) != 0 ||
      opt_u32(ctx_o, "n_ctx", 1, UINT32_MAX, &n_ctx) != 0 || opt_u32(batch_o, "batch", 1, 4096, &n_batch) != 0)
    return NULL;
  if (model_ready(self) != 0) return NULL;
  return session_make(self, NULL, (uint32_t)kv, threads, n_ctx, n_batch);
}

/* Runs prefill of n ids with the GIL released; returns the next id or NULL with an exception. */
static PyObject *session_append(SessionObject *self, const int32_t *ids, size_t n) {
  int32_t next = -1;
  fg_status st;
  gate_claim(&self->g);
  Py_BEGIN_ALLOW_THREADS
  st = n == 1 ? fg_session_step(self->s, ids[0], &next) : fg_session_prefill(self->s, ids, n, &next);
  Py_END_ALLOW_THREADS
  atomic_store(&self->cancel, 0);
  PyObject *r = st != FG_OK ? raise_status(st, fg_session_errmsg(self->s)) : PyLong_FromLong(next);
  gate_release(&self->g);
  if (self->closed) session_release(self); /* closed by another thread meanwhile: freed now */
  return r;
}

PyDoc_STRVAR(session_prefill_doc, "prefill($self, ids, /)\n--\n\n"
             "Append the token ids (a non-empty sequence of ints) and return the greedy next id. Releases\n"
             "the GIL. A failed or cancelled call leaves the session as it was.");
static PyObject *session_prefill(SessionObject *self, PyObject *ids_o) {
  Py_ssize_t n;
  int32_t *ids = token_ids(ids_o, &n, 0); /* may run Python code (__index__): before the ready check */
  if (!ids) return NULL;
  if (session_ready(self) != 0) return PyMem_Free(ids), NULL;
  PyObject *r = session_append(self, ids, (size_t)n);
  PyMem_Free(ids);
  return r;
}

PyDoc_STRVAR(session_step_doc, "step($self, id, /)\n--\n\n"
             "Append one token id and return the greedy next id. Releases the GIL.");
static PyObject *session_step(SessionObject *self, PyObject *id_o) {
  int32_t id;
  if (token_id(id_o, "id", -1, &id) != 0) return NULL; /* may run Python code: before the ready check */
  if (session_ready(self) != 0) return NULL;
  return session_append(self, &id, 1);
}

static PyObject *session_get_position(SessionObject *self, void *closure) {
  if (session_ready(self) != 0) return NULL;
  return PyLong_FromUnsignedLong(fg_session_position(self->s));
}

static PyObject *session_get_closed(SessionObject *self, void *closure) { return PyBool_FromLong(self->closed); }
static PyObject *session_get_model(SessionObject *self, void *closure) { return Py_NewRef(self->model); }
static PyObject *session_get_kv_type(SessionObject *self, void *closure) {
  return PyUnicode_FromString(kv_names[self->kv_type]);
}

static PyObject *session_get_stats(SessionObject *self, void *closure) {
  if (session_ready(self) != 0) return NULL;
  fg_session_stats ss;
  fg_status st = fg_session_get_stats(self->s, &ss);
  if (st != FG_OK) return raise_status(st, fg_session_errmsg(self->s));
  return Py_BuildValue("{s:K,s:K,s:I,s:I}", "kv_bytes_global", (unsigned long long)ss.kv_bytes_global,
                       "kv_bytes_sliding", (unsigned long long)ss.kv_bytes_sliding, "kv_blocks", ss.kv_blocks,
                       "kv_blocks_shared", ss.kv_blocks_shared);
}

// ---- _Logits: a held fg_logits exposed as a read-only 1-D float32 buffer --------------------------

typedef struct {
  PyObject_HEAD
  fg_logits *held;
  const float *data;
  Py_ssize_t shape[1];
  Py_ssize_t strides[1];
} LogitsObject;

static int logits_getbuffer(LogitsObject *self, Py_buffer *view, int flags) {
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "fgemma logits are read-only");
    view->obj = NULL;
    return -1;
  }
  view->obj = Py_NewRef(self);
  view->buf = (void *)self->data;
  view->len = self->shape[0] * (Py_ssize_t)sizeof(float);
  view->itemsize = sizeof(float);
  view->readonly = 1;
  view->ndim = 1;
  view->format = (flags & PyBUF_FORMAT) ? "f" : NULL;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static void logits_dealloc(LogitsObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  fg_logits_release(self->held);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyDoc_STRVAR(session_logits_doc, "logits($self, /)\n--\n\n"
             "The logits after the last appended token: a read-only memoryview of n_vocab float32 values\n"
             "(format 'f'), without a copy; numpy.frombuffer(view, numpy.float32) shares it too. The values\n"
             "never change: later calls write their logits elsewhere, and the view stays valid after the\n"
             "session is closed. Raises ArgumentError before the first prefill.");
static PyObject *session_logits(SessionObject *self, PyObject *unused) {
  if (session_ready(self) != 0) return NULL;
  fg_logits *h = fg_session_logits_hold(self->s);
  if (!h) return raise_arg("the Session has no logits yet (prefill or step first)");
  LogitsObject *lo = (LogitsObject *)LogitsType->tp_alloc(LogitsType, 0);
  if (!lo) {
    fg_logits_release(h);
    return NULL;
  }
  uint32_t n = 0;
  lo->held = h;
  lo->data = fg_logits_data(h, &n);
  lo->shape[0] = (Py_ssize_t)n;
  lo->strides[0] = sizeof(float);
  PyObject *mv = PyMemoryView_FromObject((PyObject *)lo);
  Py_DECREF(lo);
  return mv;
}

// ---- Snapshot -----------------------------------------------------------------------------------

typedef struct {
  PyObject_HEAD
  ModelObject *model;
  fg_snapshot *snap;
  int closed;
  gate g; /* one call at a time (save runs without the GIL) */
} SnapshotObject;

static int snapshot_ready(SnapshotObject *self) {
  if (gate_wait(&self->g, "Snapshot") != 0) return -1;
  if (self->closed || !self->snap) {
    raise_arg("the Snapshot is closed");
    return -1;
  }
  return 0;
}

static PyObject *snapshot_wrap(ModelObject *model, fg_snapshot *snap) {
  SnapshotObject *self = (SnapshotObject *)SnapshotType->tp_alloc(SnapshotType, 0);
  if (!self) {
    fg_snapshot_free(snap);
    return NULL;
  }
  self->model = (ModelObject *)Py_NewRef(model);
  self->snap = snap;
  model_use(model);
  if (gate_init(&self->g) != 0) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void snapshot_release(SnapshotObject *self) {
  if (self->snap) {
    fg_snapshot_free(self->snap);
    self->snap = NULL;
    model_unuse(self->model);
  }
  self->closed = 1;
}

static void snapshot_dealloc(SnapshotObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->model) snapshot_release(self);
  gate_free(&self->g);
  Py_XDECREF(self->model);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyDoc_STRVAR(session_snapshot_doc, "snapshot($self, /)\n--\n\n"
             "An immutable Snapshot of the current state (no KV bytes are copied). It outlives the session.");
static PyObject *session_snapshot(SessionObject *self, PyObject *unused) {
  if (session_ready(self) != 0) return NULL;
  fg_snapshot *snap = NULL;
  fg_status st = fg_session_snapshot(self->s, &snap);
  if (st != FG_OK) return raise_status(st, fg_session_errmsg(self->s));
  return snapshot_wrap(self->model, snap);
}

PyDoc_STRVAR(session_restore_doc, "restore($self, snapshot, /)\n--\n\n"
             "Continue from snapshot (of the same model and KV type); the current state is dropped.");
static PyObject *session_restore(SessionObject *self, PyObject *snap_o) {
  if (!PyObject_TypeCheck(snap_o, SnapshotType)) {
    PyErr_Format(PyExc_TypeError, "restore() needs a Snapshot, not %.100s", Py_TYPE(snap_o)->tp_name);
    return NULL;
  }
  SnapshotObject *snap = (SnapshotObject *)snap_o;
  for (;;) { /* both free at once: a wait for one lets other threads in on the other */
    if (session_ready(self) != 0 || snapshot_ready(snap) != 0) return NULL;
    if (!self->g.busy && !snap->g.busy) break;
  }
  fg_status st = fg_session_restore(self->s, snap->snap);
  if (st != FG_OK) return raise_status(st, fg_session_errmsg(self->s));
  Py_RETURN_NONE;
}

PyDoc_STRVAR(session_cancel_doc, "cancel($self, /)\n--\n\n"
             "Stop the call running on this session in another thread: it raises Error with status\n"
             "'FG_ERR_ABORTED' and leaves the session as it was. Safe from any thread. Returns True when a\n"
             "call was running (and will stop), False when there was none (nothing happens).");
static PyObject *session_cancel(SessionObject *self, PyObject *unused) {
  if (!self->g.busy) Py_RETURN_FALSE;
  atomic_store(&self->cancel, 1);
  Py_RETURN_TRUE;
}

PyDoc_STRVAR(session_close_doc, "close($self, /)\n--\n\n"
             "Free the session's KV cache. Idempotent. Logits views and snapshots stay valid. While another\n"
             "thread runs a call on the session, the session is closed at once (later calls raise), that call\n"
             "is cancelled and the KV cache is freed when it returns; from inside that call: RuntimeError.");
static PyObject *session_close(SessionObject *self, PyObject *unused) {
  if (self->g.busy) {
    if (self->g.owner == PyThread_get_thread_ident()) return gate_wait(&self->g, "Session"), NULL;
    self->closed = 1; /* the running call frees it (session_append) */
    atomic_store(&self->cancel, 1);
    Py_RETURN_NONE;
  }
  session_release(self);
  Py_RETURN_NONE;
}

static PyObject *session_enter(SessionObject *self, PyObject *unused) {
  if (session_ready(self) != 0) return NULL;
  return Py_NewRef(self);
}

static PyObject *session_repr(SessionObject *self) {
  if (self->closed) return PyUnicode_FromString("<fgemma.Session closed>");
  return PyUnicode_FromFormat("<fgemma.Session position=%u kv_type=%s>", (unsigned)fg_session_position(self->s),
                              kv_names[self->kv_type]);
}

// ---- Snapshot methods ---------------------------------------------------------------------------

static PyObject *snapshot_get_position(SnapshotObject *self, void *closure) {
  if (snapshot_ready(self) != 0) return NULL;
  return PyLong_FromUnsignedLong(fg_snapshot_position(self->snap));
}
static PyObject *snapshot_get_closed(SnapshotObject *self, void *closure) { return PyBool_FromLong(self->closed); }
static PyObject *snapshot_get_model(SnapshotObject *self, void *closure) { return Py_NewRef(self->model); }
static PyObject *snapshot_get_kv_type(SnapshotObject *self, void *closure) {
  if (snapshot_ready(self) != 0) return NULL;
  return PyUnicode_FromString(fg_snapshot_kv_type(self->snap) == 1 ? "f16" : "f32");
}

PyDoc_STRVAR(snapshot_fork_doc, "fork($self, /, *, threads=None, n_ctx=None, batch=None)\n--\n\n"
             "A new Session that continues from this snapshot (its KV type; blocks are shared until\n"
             "written). Any number of forks may run on different threads at once.");
static PyObject *snapshot_fork(SnapshotObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"threads", "n_ctx", "batch", NULL};
  PyObject *threads_o = Py_None, *ctx_o = Py_None, *batch_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOO:fork", kwlist, &threads_o, &ctx_o, &batch_o)) return NULL;
  uint32_t threads = 0, n_ctx = 0, n_batch = 0;
  if (opt_u32(threads_o, "threads", 1, 256, &threads) != 0 || opt_u32(ctx_o, "n_ctx", 1, UINT32_MAX, &n_ctx) != 0 ||
      opt_u32(batch_o, "batch", 1, 4096, &n_batch) != 0)
    return NULL;
  if (snapshot_ready(self) != 0) return NULL;
  return session_make(self->model, self->snap, fg_snapshot_kv_type(self->snap), threads, n_ctx, n_batch);
}

PyDoc_STRVAR(snapshot_save_doc, "save($self, path, /)\n--\n\n"
             "Write the snapshot to a file (magic, version, model fingerprint, tokens, KV). Releases the GIL.");
static PyObject *snapshot_save(SnapshotObject *self, PyObject *path_o) {
  PyObject *path_b = NULL;
  if (!PyUnicode_FSConverter(path_o, &path_b)) return NULL; /* may run Python code (__fspath__) */
  if (snapshot_ready(self) != 0) return Py_DECREF(path_b), NULL;
  fg_status st;
  fg_error err = {0};
  gate_claim(&self->g);
  Py_BEGIN_ALLOW_THREADS
  st = fg_snapshot_save(self->snap, PyBytes_AS_STRING(path_b), &err);
  Py_END_ALLOW_THREADS
  gate_release(&self->g);
  if (self->closed) snapshot_release(self); /* closed by another thread meanwhile */
  Py_DECREF(path_b);
  if (st != FG_OK) return raise_status(st, err.msg);
  Py_RETURN_NONE;
}

PyDoc_STRVAR(snapshot_load_doc, "load(model, path, /)\n--\n\n"
             "Read a snapshot file written by save() for this model. A file of another model raises Error\n"
             "with status 'FG_ERR_MISMATCH', a damaged one 'FG_ERR_FORMAT'. Releases the GIL.");
static PyObject *snapshot_load(PyObject *unused, PyObject *args) {
  PyObject *model_o, *path_o;
  if (!PyArg_ParseTuple(args, "OO:load", &model_o, &path_o)) return NULL;
  if (!PyObject_TypeCheck(model_o, ModelType)) {
    PyErr_Format(PyExc_TypeError, "load() needs a Model, not %.100s", Py_TYPE(model_o)->tp_name);
    return NULL;
  }
  ModelObject *model = (ModelObject *)model_o;
  if (model_ready(model) != 0) return NULL;
  PyObject *path_b = NULL;
  if (!PyUnicode_FSConverter(path_o, &path_b)) return NULL;
  fg_status st;
  fg_snapshot *snap = NULL;
  fg_error err = {0};
  model_use(model); /* no close() may free the model meanwhile */
  Py_BEGIN_ALLOW_THREADS
  st = fg_snapshot_load(model->m, PyBytes_AS_STRING(path_b), &snap, &err);
  Py_END_ALLOW_THREADS
  Py_DECREF(path_b);
  PyObject *r = st == FG_OK ? snapshot_wrap(model, snap) : raise_status(st, err.msg);
  model_unuse(model);
  return r;
}

PyDoc_STRVAR(snapshot_close_doc, "close($self, /)\n--\n\nFree the snapshot. Idempotent. Its forks keep working.\n"
             "During another thread's save() it is closed at once and freed when save() returns.");
static PyObject *snapshot_close(SnapshotObject *self, PyObject *unused) {
  if (self->g.busy) {
    if (self->g.owner == PyThread_get_thread_ident()) return gate_wait(&self->g, "Snapshot"), NULL;
    self->closed = 1; /* snapshot_save frees it */
    Py_RETURN_NONE;
  }
  snapshot_release(self);
  Py_RETURN_NONE;
}

static PyObject *snapshot_enter(SnapshotObject *self, PyObject *unused) {
  if (snapshot_ready(self) != 0) return NULL;
  return Py_NewRef(self);
}

static PyObject *snapshot_repr(SnapshotObject *self) {
  if (self->closed) return PyUnicode_FromString("<fgemma.Snapshot closed>");
  return PyUnicode_FromFormat("<fgemma.Snapshot position=%u>", (unsigned)fg_snapshot_position(self->snap));
}

// ----------------------------------------------------------------------------------------------
// Nlu

typedef struct {
  PyObject_HEAD
  ModelObject *model;
  fg_catalog *catalog;
  fg_nlu *nlu;
  int closed;
  gate g; /* one call at a time */
  atomic_int cancel;
} NluObject;

static int nlu_ready(NluObject *self) {
  if (gate_wait(&self->g, "Nlu") != 0) return -1;
  if (self->closed || !self->nlu) {
    raise_arg("the Nlu is closed");
    return -1;
  }
  return 0;
}

static void nlu_release(NluObject *self) {
  if (self->nlu) {
    fg_nlu_free(self->nlu);
    self->nlu = NULL;
    model_unuse(self->model);
  }
  fg_catalog_free(self->catalog);
  self->catalog = NULL;
  self->closed = 1;
}

static void nlu_dealloc(NluObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->model) nlu_release(self);
  gate_free(&self->g);
  Py_XDECREF(self->model);
  tp->tp_free(self);
  Py_DECREF(tp);
}

/* Reads a whole file into a PyBytes (FileError when it cannot be read). */
static PyObject *read_file(PyObject *path_o) {
  PyObject *path_b = NULL;
  if (!PyUnicode_FSConverter(path_o, &path_b)) return NULL;
  const char *path = PyBytes_AS_STRING(path_b);
  FILE *f = fopen(path, "rb");
  if (!f) {
    PyObject *r = raise_text(FG_ERR_IO, PyUnicode_FromFormat("cannot open the catalog %s: %s", path, strerror(errno)));
    Py_DECREF(path_b);
    return r;
  }
  PyObject *out = NULL;
  char *buf = NULL;
  size_t n = 0, cap = 1 << 16;
  int bad = 0;
  for (;;) {
    char *nb = PyMem_Realloc(buf, cap);
    if (!nb) {
      bad = 2;
      break;
    }
    buf = nb;
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) bad = 1;
      break;
    }
    cap *= 2;
  }
  fclose(f);
  if (bad == 1)
    raise_text(FG_ERR_IO, PyUnicode_FromFormat("cannot read the catalog %s", path));
  else if (bad == 2)
    PyErr_NoMemory();
  else
    out = PyBytes_FromStringAndSize(buf, (Py_ssize_t)n);
  PyMem_Free(buf);
  Py_DECREF(path_b);
  return out;
}

/* The catalog argument as JSON bytes: a dict or list (serialized), JSON text (a str or bytes whose first
 * non-blank character is '{' or '['), or else a path (str or os.PathLike) of a JSON file. */
static PyObject *catalog_json(PyObject *o) {
  if (PyDict_Check(o) || PyList_Check(o)) {
    PyObject *json = PyImport_ImportModule("json");
    if (!json) return NULL;
    PyObject *s = PyObject_CallMethod(json, "dumps", "O", o);
    Py_DECREF(json);
    if (!s) return NULL;
    PyObject *b = PyUnicode_AsUTF8String(s);
    Py_DECREF(s);
    return b;
  }
  if (PyUnicode_Check(o) || PyBytes_Check(o)) {
    PyObject *b = PyUnicode_Check(o) ? PyUnicode_AsUTF8String(o) : Py_NewRef(o);
    if (!b) return NULL;
    const char *p = PyBytes_AS_STRING(b);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '{' || *p == '[') return b;
    const int blank = *p == '\0';
    Py_DECREF(b);
    if (blank) return raise_arg("the catalog is empty");
    return read_file(o);
  }
  if (PyObject_HasAttrString(o, "__fspath__")) return read_file(o);
  PyErr_Format(PyExc_TypeError, "catalog must be a dict, a list, JSON text or a path, not %.100s",
               Py_TYPE(o)->tp_name);
  return NULL;
}

static const char *const constrain_names[] = {"off", "call-only", "call-or-text", NULL};
static const uint32_t constrain_ids[] = {FG_NLU_CONSTRAIN_OFF, FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_CONSTRAIN_CALL_OR_TEXT};

PyDoc_STRVAR(model_nlu_doc,
             "nlu($self, /, catalog, *, constrained='call-or-text', max_tokens=None, snapshot_path=None,\n"
             "    multi_call=False, threads=None, snapshot_dir=None, kv_type=None, n_ctx=None, batch=None,\n"
             "    speculate=True, max_draft=None, answer_cache=True)\n--\n\n"
             "An NLU engine for a tool catalog: renders the catalog into FunctionGemma's prompt, prefills it\n"
             "once (or loads it from snapshot_path, writing the file when it is missing or stale) and answers\n"
             "each utterance from that state (Nlu.ask). The options and their defaults are those of every\n"
             "fgemma surface (docs/OPTIONS.md). catalog: a dict or list, JSON text, or the path of a JSON file,\n"
             "in the cartridge or the OpenAI tools format. constrained: 'call-or-text' (default: calls valid for\n"
             "the catalog, or prose when the model starts none), 'call-only' or 'off' (plain greedy decoding).\n"
             "max_tokens: generated tokens per utterance (default 64). snapshot_dir: a directory of snapshots\n"
             "shared with `fgemma call --snapshot-dir` and `fgemma serve --snapshot-dir` (the file's name comes\n"
             "from the model, the KV type and the catalog; info['snapshot_name']); give snapshot_path or\n"
             "snapshot_dir. multi_call: allow several calls per answer. threads: worker threads (default: the\n"
             "Model's, else the available cores). kv_type: 'f32' (default) or 'f16'. n_ctx: context positions\n"
             "(default: the model's). batch: positions per prefill chunk (default 256). speculate: verify\n"
             "drafted tokens in batches (same answers; default True). max_draft: drafted tokens per pass, 1..32\n"
             "(default 8). answer_cache: speculation keeps earlier answers as drafts (default True).\n"
             "Deprecated: multi (use multi_call). Releases the GIL.");
static PyObject *model_nlu(ModelObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"catalog", "constrained", "max_tokens", "snapshot_path", "multi_call", "threads",
                           "snapshot_dir", "kv_type", "n_ctx", "batch", "speculate", "max_draft", "answer_cache",
                           "multi", NULL};
  PyObject *cat_o, *cons_o = Py_None, *max_o = Py_None, *snap_o = Py_None, *threads_o = Py_None, *dir_o = Py_None;
  PyObject *multi_o = NULL, *old_multi_o = NULL, *kv_o = Py_None, *ctx_o = Py_None, *batch_o = Py_None;
  PyObject *spec_o = Py_None, *draft_o = Py_None, *cache_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOOOOOOOOOOOO:nlu", kwlist, &cat_o, &cons_o, &max_o, &snap_o,
                                   &multi_o, &threads_o, &dir_o, &kv_o, &ctx_o, &batch_o, &spec_o, &draft_o, &cache_o,
                                   &old_multi_o))
    return NULL;
  if (deprecated_kw(&multi_o, old_multi_o, "multi_call", "multi") != 0) return NULL;
  if (snap_o != Py_None && dir_o != Py_None) {
    PyErr_SetString(PyExc_ValueError, "nlu: give snapshot_path or snapshot_dir, not both");
    return NULL;
  }
  int cons = 2, multi = 0, kv = 0, spec = 1, cache = 1;
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  uint32_t threads = 0;
  if (opt_choice(cons_o, "constrained", constrain_names, &cons) != 0 ||
      opt_u32(max_o, "max_tokens", 1, 1u << 16, &np.max_tokens) != 0 ||
      opt_bool(multi_o, "multi_call", &multi) != 0 || opt_u32(threads_o, "threads", 1, 256, &threads) != 0 ||
      opt_choice(kv_o, "kv_type", kv_names, &kv) != 0 ||
      opt_u32(ctx_o, "n_ctx", 1, UINT32_MAX, &np.session.n_ctx) != 0 ||
      opt_u32(batch_o, "batch", 1, 4096, &np.session.n_batch) != 0 || opt_bool(spec_o, "speculate", &spec) != 0 ||
      opt_u32(draft_o, "max_draft", 1, 32, &np.max_draft) != 0 || opt_bool(cache_o, "answer_cache", &cache) != 0)
    return NULL;
  np.constrained = constrain_ids[cons];
  np.session.kv_type = (uint32_t)kv;
  np.speculate = spec ? FG_NLU_SPECULATE_ON : FG_NLU_SPECULATE_OFF;
  np.flags = (multi ? FG_NLU_MULTI_CALL : 0) | (cache ? 0 : FG_NLU_NO_ANSWER_CACHE);
  PyObject *snap_b = NULL;
  if (snap_o != Py_None && !PyUnicode_FSConverter(snap_o, &snap_b)) return NULL;
  if (dir_o != Py_None) {
    if (!PyUnicode_FSConverter(dir_o, &snap_b)) return NULL;
    struct stat sb;
    if (stat(PyBytes_AS_STRING(snap_b), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      char msg[600];
      snprintf(msg, sizeof msg, "snapshot_dir %.500s is not a directory (create it first)", PyBytes_AS_STRING(snap_b));
      Py_DECREF(snap_b);
      return raise_status_ctx(FG_ERR_IO, "nlu", msg);
    }
  }
  if (model_ready(self) != 0) {
    Py_XDECREF(snap_b);
    return NULL;
  }
  PyObject *json = catalog_json(cat_o);
  if (!json) {
    Py_XDECREF(snap_b);
    return NULL;
  }
  fg_error err = {0};
  fg_catalog *cat = NULL;
  fg_status st = fg_catalog_parse(PyBytes_AS_STRING(json), (size_t)PyBytes_GET_SIZE(json), &cat, &err);
  Py_DECREF(json);
  if (st != FG_OK) {
    Py_XDECREF(snap_b);
    return raise_status_ctx(st, "catalog", err.msg);
  }
  NluObject *nlu = (NluObject *)NluType->tp_alloc(NluType, 0);
  if (!nlu) {
    fg_catalog_free(cat);
    Py_XDECREF(snap_b);
    return NULL;
  }
  nlu->model = (ModelObject *)Py_NewRef(self);
  nlu->catalog = cat;
  atomic_init(&nlu->cancel, 0);
  if (gate_init(&nlu->g) != 0) {
    Py_DECREF(nlu); /* frees the catalog */
    Py_XDECREF(snap_b);
    return NULL;
  }
  if (dir_o != Py_None)
    np.snapshot_dir = PyBytes_AS_STRING(snap_b);
  else
    np.snapshot_path = snap_b ? PyBytes_AS_STRING(snap_b) : NULL;
  np.session.n_threads = threads ? threads : self->threads;
  np.session.abort_cb = session_abort_cb;
  np.session.abort_user_data = &nlu->cancel;
  fg_nlu *e = NULL;
  model_use(self);
  nlu->g.busy = 1; /* not visible to other threads yet: no lock to take */
  Py_BEGIN_ALLOW_THREADS
  st = fg_nlu_create(self->m, cat, &np, &e, &err);
  Py_END_ALLOW_THREADS
  nlu->g.busy = 0;
  Py_XDECREF(snap_b);
  if (st != FG_OK) {
    model_unuse(self);
    Py_DECREF(nlu); /* frees the catalog */
    return raise_status_ctx(st, "nlu", err.msg);
  }
  nlu->nlu = e;
  return (PyObject *)nlu;
}

static PyObject *decode(const char *s) { return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"); }

PyDoc_STRVAR(nlu_ask_doc, "ask($self, /, text, *, full=False)\n--\n\n"
             "Answer one utterance from the catalog's state. Returns the dict that `fgemma call` prints\n"
             "under \"result\" ({'calls': [{'name': ..., 'args': {...}}, ...], 'text': ...}) plus timings in\n"
             "milliseconds under 'ms' (restore, chunk, decode, total). full=True returns the whole line of\n"
             "`fgemma call` instead: utterance, result, raw, stop, tokens, heads, ms. Releases the GIL.");
static PyObject *nlu_ask(NluObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"text", "full", NULL};
  PyObject *text_o;
  int full = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p:ask", kwlist, &text_o, &full)) return NULL;
  PyObject *keep;
  Py_ssize_t len;
  const char *text = text_arg(text_o, "text", &len, &keep);
  if (!text) return NULL;
  if (!PyUnicode_Check(text_o)) {
    text_o = PyUnicode_DecodeUTF8(text, len, "replace");
    if (!text_o) return NULL;
  } else {
    Py_INCREF(text_o);
  }
  if (nlu_ready(self) != 0) {
    Py_DECREF(text_o);
    return NULL;
  }
  fg_nlu_result r;
  fg_status st;
  double t0 = now_ms(), total;
  gate_claim(&self->g);
  Py_BEGIN_ALLOW_THREADS
  st = fg_nlu_ask(self->nlu, text, (size_t)len, &r);
  Py_END_ALLOW_THREADS
  total = now_ms() - t0;
  atomic_store(&self->cancel, 0);
  if (st != FG_OK) {
    Py_DECREF(text_o);
    PyObject *e = raise_status(st, fg_nlu_errmsg(self->nlu));
    gate_release(&self->g);
    if (self->closed) nlu_release(self); /* closed by another thread meanwhile: freed now */
    return e;
  }
  PyObject *json = decode(r.json);
  PyObject *result = json ? PyObject_CallOneArg(json_loads, json) : NULL;
  Py_XDECREF(json);
  PyObject *ms = Py_BuildValue("{s:d,s:d,s:d,s:d}", "restore", r.restore_ms, "chunk", r.chunk_ms, "decode",
                               r.decode_ms, "total", total);
  PyObject *out = NULL;
  if (result && ms && !full) {
    if (!PyDict_Check(result))
      PyErr_SetString(Error, "the engine's result is not a JSON object");
    else if (PyDict_SetItemString(result, "ms", ms) == 0)
      out = Py_NewRef(result);
  } else if (result && ms) {
    out = Py_BuildValue("{s:O,s:O,s:N,s:s,s:{s:I,s:I},s:{s:I,s:I,s:I},s:O}", "utterance", text_o, "result", result,
                        "raw", decode(r.raw), "stop", fg_nlu_stop_name(r.stop), "tokens", "chunk", r.chunk_tokens, "decode",
                        r.decode_tokens, "heads", "full", r.full_head_steps, "sparse", r.sparse_head_steps, "forced",
                        r.forced_tokens, "ms", ms);
  }
  Py_XDECREF(result);
  Py_XDECREF(ms);
  Py_DECREF(text_o);
  gate_release(&self->g); /* r's strings are the engine's: read until here */
  if (self->closed) nlu_release(self);
  return out;
}

static PyObject *nlu_get_info(NluObject *self, void *closure) {
  if (nlu_ready(self) != 0) return NULL;
  fg_nlu_info in;
  fg_status st = fg_nlu_get_info(self->nlu, &in);
  if (st != FG_OK) return raise_status(st, fg_nlu_errmsg(self->nlu));
  const char *mode = in.constrained == FG_NLU_CONSTRAIN_CALL_ONLY      ? "call-only"
                     : in.constrained == FG_NLU_CONSTRAIN_CALL_OR_TEXT ? "call-or-text"
                                                                       : "off";
  return Py_BuildValue("{s:I,s:d,s:O,s:O,s:n,s:O,s:s,s:s,s:O}", "prefix_tokens", in.prefix_tokens, "prefix_ms",
                       in.prefix_ms, "prefix_from_file", in.prefix_from_file ? Py_True : Py_False, "snapshot_written",
                       in.snapshot_written ? Py_True : Py_False, "functions",
                       (Py_ssize_t)fg_catalog_n_functions(self->catalog), "snapshot_refused",
                       in.snapshot_refused ? Py_True : Py_False, "snapshot_name", in.snapshot_name, "constrained", mode,
                       "speculate", in.speculate == FG_NLU_SPECULATE_OFF ? Py_False : Py_True);
}

static PyObject *nlu_get_closed(NluObject *self, void *closure) { return PyBool_FromLong(self->closed); }
static PyObject *nlu_get_model(NluObject *self, void *closure) { return Py_NewRef(self->model); }

PyDoc_STRVAR(nlu_cancel_doc, "cancel($self, /)\n--\n\n"
             "Stop the ask() running in another thread (it raises Error with status 'FG_ERR_ABORTED').\n"
             "Safe from any thread. Returns True when a call was running, False otherwise.");
static PyObject *nlu_cancel(NluObject *self, PyObject *unused) {
  if (!self->g.busy) Py_RETURN_FALSE;
  atomic_store(&self->cancel, 1);
  Py_RETURN_TRUE;
}

PyDoc_STRVAR(nlu_close_doc, "close($self, /)\n--\n\nFree the engine and its catalog. Idempotent. During another\n"
             "thread's ask() the engine is closed at once (later calls raise), that ask() is cancelled and the\n"
             "engine is freed when it returns; from inside that call: RuntimeError.");
static PyObject *nlu_close(NluObject *self, PyObject *unused) {
  if (self->g.busy) {
    if (self->g.owner == PyThread_get_thread_ident()) return gate_wait(&self->g, "Nlu"), NULL;
    self->closed = 1; /* the running ask() frees it */
    atomic_store(&self->cancel, 1);
    Py_RETURN_NONE;
  }
  nlu_release(self);
  Py_RETURN_NONE;
}

static PyObject *nlu_enter(NluObject *self, PyObject *unused) {
  if (nlu_ready(self) != 0) return NULL;
  return Py_NewRef(self);
}

// ----------------------------------------------------------------------------------------------
// Type specs

static PyObject *model_repr(ModelObject *self) {
  return PyUnicode_FromFormat("<fgemma.Model %R%s>", self->path, self->closed ? " closed" : "");
}

#define CTX_METHODS(prefix)                                                                         \
  {"__enter__", (PyCFunction)prefix##_enter, METH_NOARGS, NULL},                                    \
  {"__exit__", (PyCFunction)any_exit, METH_VARARGS, NULL}

static PyMethodDef model_methods[] = {
    {"tokenize", (PyCFunction)(void (*)(void))model_tokenize, METH_VARARGS | METH_KEYWORDS, model_tokenize_doc},
    {"detokenize", (PyCFunction)model_detokenize, METH_O, model_detokenize_doc},
    {"session", (PyCFunction)(void (*)(void))model_session, METH_VARARGS | METH_KEYWORDS, model_session_doc},
    {"nlu", (PyCFunction)(void (*)(void))model_nlu, METH_VARARGS | METH_KEYWORDS, model_nlu_doc},
    {"with_lora", (PyCFunction)(void (*)(void))model_with_lora, METH_VARARGS | METH_KEYWORDS, model_with_lora_doc},
    {"close", (PyCFunction)model_close, METH_NOARGS, model_close_doc},
    CTX_METHODS(model),
    {NULL, NULL, 0, NULL}};

static PyGetSetDef model_getset[] = {
    {"info", (getter)model_get_info, NULL, "dict: architecture, dimensions, types and sizes (fg_model_info)", NULL},
    {"path", (getter)model_get_path, NULL, "str: the file the model was loaded from", NULL},
    {"loras", (getter)model_get_loras, NULL, "tuple of (path, scale): the LoRA adapters applied, in order", NULL},
    {"closed", (getter)model_get_closed, NULL, "bool: close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyDoc_STRVAR(model_doc, "Model(path, *, head_type=None, threads=None, repack=True, lora=None, lora_merge=None,\n"
             "      no_mmap=False, check_tensors=False)\n--\n\n"
             "A FunctionGemma / Gemma 3 GGUF file, mapped and immutable; share it between threads.\n"
             "head_type: None or 'file' (the file's LM head), 'q8_0' or 'q4_0' (a quantized copy of the head\n"
             "made at load). threads: default worker threads of its sessions and engines (default: the\n"
             "available cores). repack: where the kernels have a layout of their own (aarch64 with the dot\n"
             "product, Q8_0), copy the matrices into it at load (same results; info['repack_bytes']); False\n"
             "keeps the file's layout. lora: LoRA adapters in llama.cpp's GGUF format (`fgemma convert` makes them\n"
             "from PEFT): a path, a (path, scale) tuple or a list of either; scale 1 applies an adapter as\n"
             "trained, 0 loads it without effect. lora_merge: None or 'off' (applied exactly at run time), 'f32',\n"
             "'bf16' or 'q8_0' (merged at load into copies of the adapted matrices of that type). no_mmap: read\n"
             "the file into memory instead of mapping it. check_tensors: scan every weight for NaN/Inf at load\n"
             "(slow). A context manager; loading releases the GIL.");

static PyType_Slot model_slots[] = {
    {Py_tp_new, model_new},          {Py_tp_dealloc, model_dealloc}, {Py_tp_methods, model_methods},
    {Py_tp_getset, model_getset},    {Py_tp_doc, (void *)model_doc}, {Py_tp_repr, model_repr},
    {0, NULL}};
static PyType_Spec model_spec = {"fgemma.Model", sizeof(ModelObject), 0, Py_TPFLAGS_DEFAULT, model_slots};

static PyMethodDef session_methods[] = {
    {"prefill", (PyCFunction)session_prefill, METH_O, session_prefill_doc},
    {"step", (PyCFunction)session_step, METH_O, session_step_doc},
    {"logits", (PyCFunction)session_logits, METH_NOARGS, session_logits_doc},
    {"snapshot", (PyCFunction)session_snapshot, METH_NOARGS, session_snapshot_doc},
    {"restore", (PyCFunction)session_restore, METH_O, session_restore_doc},
    {"cancel", (PyCFunction)session_cancel, METH_NOARGS, session_cancel_doc},
    {"close", (PyCFunction)session_close, METH_NOARGS, session_close_doc},
    CTX_METHODS(session),
    {NULL, NULL, 0, NULL}};

/* _busy (tests): a call runs on the object with the GIL released, as cancel() sees it */
static PyObject *session_get_busy(SessionObject *self, void *closure) { return PyBool_FromLong(self->g.busy); }
static PyObject *snapshot_get_busy(SnapshotObject *self, void *closure) { return PyBool_FromLong(self->g.busy); }
static PyObject *nlu_get_busy(NluObject *self, void *closure) { return PyBool_FromLong(self->g.busy); }

static PyGetSetDef session_getset[] = {
    {"position", (getter)session_get_position, NULL, "int: tokens held", NULL},
    {"stats", (getter)session_get_stats, NULL, "dict: KV cache memory (fg_session_stats)", NULL},
    {"kv_type", (getter)session_get_kv_type, NULL, "str: 'f32' or 'f16'", NULL},
    {"model", (getter)session_get_model, NULL, "Model: the model the session runs", NULL},
    {"closed", (getter)session_get_closed, NULL, "bool: close() was called", NULL},
    {"_busy", (getter)session_get_busy, NULL, "bool: a call runs (tests)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyDoc_STRVAR(session_doc, "A KV cache, a position and the logits of the last appended token (Model.session(),\n"
             "Snapshot.fork()). One call at a time; different sessions run in parallel on different threads.");
static PyType_Slot session_slots[] = {
    {Py_tp_dealloc, session_dealloc}, {Py_tp_methods, session_methods}, {Py_tp_getset, session_getset},
    {Py_tp_doc, (void *)session_doc}, {Py_tp_repr, session_repr},       {0, NULL}};
static PyType_Spec session_spec = {"fgemma.Session", sizeof(SessionObject), 0, Py_TPFLAGS_DEFAULT, session_slots};

static PyMethodDef snapshot_methods[] = {
    {"fork", (PyCFunction)(void (*)(void))snapshot_fork, METH_VARARGS | METH_KEYWORDS, snapshot_fork_doc},
    {"save", (PyCFunction)snapshot_save, METH_O, snapshot_save_doc},
    {"load", (PyCFunction)snapshot_load, METH_VARARGS | METH_STATIC, snapshot_load_doc},
    {"close", (PyCFunction)snapshot_close, METH_NOARGS, snapshot_close_doc},
    CTX_METHODS(snapshot),
    {NULL, NULL, 0, NULL}};

static PyGetSetDef snapshot_getset[] = {
    {"position", (getter)snapshot_get_position, NULL, "int: tokens held", NULL},
    {"kv_type", (getter)snapshot_get_kv_type, NULL, "str: 'f32' or 'f16'", NULL},
    {"model", (getter)snapshot_get_model, NULL, "Model: the model of the snapshot", NULL},
    {"closed", (getter)snapshot_get_closed, NULL, "bool: close() was called", NULL},
    {"_busy", (getter)snapshot_get_busy, NULL, "bool: save() runs (tests)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyDoc_STRVAR(snapshot_doc, "An immutable session state (Session.snapshot(), Snapshot.load()); fork() continues it.");
static PyType_Slot snapshot_slots[] = {
    {Py_tp_dealloc, snapshot_dealloc}, {Py_tp_methods, snapshot_methods}, {Py_tp_getset, snapshot_getset},
    {Py_tp_doc, (void *)snapshot_doc}, {Py_tp_repr, snapshot_repr},       {0, NULL}};
static PyType_Spec snapshot_spec = {"fgemma.Snapshot", sizeof(SnapshotObject), 0, Py_TPFLAGS_DEFAULT,
                                    snapshot_slots};

static PyMethodDef nlu_methods[] = {
    {"ask", (PyCFunction)(void (*)(void))nlu_ask, METH_VARARGS | METH_KEYWORDS, nlu_ask_doc},
    {"cancel", (PyCFunction)nlu_cancel, METH_NOARGS, nlu_cancel_doc},
    {"close", (PyCFunction)nlu_close, METH_NOARGS, nlu_close_doc},
    CTX_METHODS(nlu),
    {NULL, NULL, 0, NULL}};

static PyGetSetDef nlu_getset[] = {
    {"info", (getter)nlu_get_info, NULL,
     "dict: prefix_tokens, prefix_ms, prefix_from_file, snapshot_written, snapshot_refused, snapshot_name, functions, "
     "constrained (the mode in effect), speculate",
     NULL},
    {"model", (getter)nlu_get_model, NULL, "Model: the model of the engine", NULL},
    {"closed", (getter)nlu_get_closed, NULL, "bool: close() was called", NULL},
    {"_busy", (getter)nlu_get_busy, NULL, "bool: an ask() runs (tests)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyDoc_STRVAR(nlu_doc, "The NLU engine of one tool catalog (Model.nlu()). One call at a time: an ask() from another\n"
             "thread waits for the running one (GIL released); from the same thread it raises RuntimeError.");
static PyType_Slot nlu_slots[] = {{Py_tp_dealloc, nlu_dealloc},
                                  {Py_tp_methods, nlu_methods},
                                  {Py_tp_getset, nlu_getset},
                                  {Py_tp_doc, (void *)nlu_doc},
                                  {0, NULL}};
static PyType_Spec nlu_spec = {"fgemma.Nlu", sizeof(NluObject), 0, Py_TPFLAGS_DEFAULT, nlu_slots};

static PyType_Slot logits_slots[] = {{Py_tp_dealloc, logits_dealloc},
                                     {Py_bf_getbuffer, logits_getbuffer},
                                     {Py_tp_doc, (void *)"A held logits buffer (the object behind Session.logits())."},
                                     {0, NULL}};
static PyType_Spec logits_spec = {"fgemma._Logits", sizeof(LogitsObject), 0, Py_TPFLAGS_DEFAULT, logits_slots};

// ----------------------------------------------------------------------------------------------
// Module

PyDoc_STRVAR(module_doc, "fgemma: FunctionGemma on the CPU (the C library libfgemma, through its public API).");

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "fgemma._fgemma", module_doc, -1, NULL,
                                        NULL, NULL, NULL, NULL};

static PyTypeObject *add_type(PyObject *mod, PyType_Spec *spec, const char *name, int instantiable) {
  PyTypeObject *t = (PyTypeObject *)PyType_FromSpec(spec);
  if (!t) return NULL;
  if (!instantiable) t->tp_new = NULL; /* made by factory methods only */
  if (PyModule_AddObject(mod, name, Py_NewRef(t)) != 0) {
    Py_DECREF(t);
    Py_DECREF(t);
    return NULL;
  }
  return t;
}

PyMODINIT_FUNC PyInit__fgemma(void) {
  if (fg_version_number() != FG_VERSION_NUMBER) {
    PyErr_Format(PyExc_ImportError, "libfgemma %s does not match the header %d.%d.%d it was built with",
                 fg_version_string(), FG_VERSION_MAJOR, FG_VERSION_MINOR, FG_VERSION_PATCH);
    return NULL;
  }
  PyObject *mod = PyModule_Create(&module_def);
  if (!mod) return NULL;
  PyObject *json = PyImport_ImportModule("json");
  if (!json) goto fail;
  json_loads = PyObject_GetAttrString(json, "loads");
  Py_DECREF(json);
  if (!json_loads) goto fail;

  Error = PyErr_NewExceptionWithDoc("fgemma.Error",
                                    "An error of the fgemma library. .status is the fg_status name (e.g.\n"
                                    "'FG_ERR_FORMAT'), .code its number.",
                                    PyExc_Exception, NULL);
  if (!Error || PyModule_AddObject(mod, "Error", Py_NewRef(Error)) != 0) goto fail;
  PyObject *bases = PyTuple_Pack(2, Error, PyExc_ValueError);
  ArgumentError = bases ? PyErr_NewExceptionWithDoc("fgemma.ArgumentError",
                                                    "A bad argument value or a closed object (status\n"
                                                    "'FG_ERR_INVALID_ARG'); also a ValueError.",
                                                    bases, NULL)
                        : NULL;
  Py_XDECREF(bases);
  if (!ArgumentError || PyModule_AddObject(mod, "ArgumentError", Py_NewRef(ArgumentError)) != 0) goto fail;
  bases = PyTuple_Pack(2, Error, PyExc_OSError);
  FileError = bases ? PyErr_NewExceptionWithDoc("fgemma.FileError",
                                                "A file could not be opened, read, written or mapped (status\n"
                                                "'FG_ERR_IO'); also an OSError.",
                                                bases, NULL)
                    : NULL;
  Py_XDECREF(bases);
  if (!FileError || PyModule_AddObject(mod, "FileError", Py_NewRef(FileError)) != 0) goto fail;

  if (!(ModelType = add_type(mod, &model_spec, "Model", 1))) goto fail;
  if (!(SessionType = add_type(mod, &session_spec, "Session", 0))) goto fail;
  if (!(SnapshotType = add_type(mod, &snapshot_spec, "Snapshot", 0))) goto fail;
  if (!(NluType = add_type(mod, &nlu_spec, "Nlu", 0))) goto fail;
  if (!(LogitsType = add_type(mod, &logits_spec, "_Logits", 0))) goto fail;
  if (PyModule_AddStringConstant(mod, "__version__", fg_version_string()) != 0) goto fail;
  return mod;
fail:
  Py_DECREF(mod);
  return NULL;
}
