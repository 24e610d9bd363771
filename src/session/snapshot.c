/* snapshot.c — persisting snapshots: a file an app can load at start-up instead of prefilling its
 * catalog again.
 *
 * Layout (little-endian), version 2:
 *   header  : magic "FGSNAP\r\n" (8) | u32 version | u32 header bytes | fingerprint (16) |
 *             u32 n_layer, k_dim, v_dim, n_vocab, sliding_window, pos, n_ctx, has_logits, kv_type
 *   tokens  : pos × i32
 *   per layer: first kept position (u32), then for each kept position K row (k_dim elements), V row
 *             (v_dim elements); elements are f32 (kv_type 0) or IEEE half (kv_type 1)
 *   logits  : n_vocab × f32 when has_logits
 *   trailer : u64 FNV-1a of everything before it
 * A sliding layer keeps positions >= pos - window + 1, a global layer all of them.
 * Version 1 (written before f16 KV caches) has no kv_type field and f32 rows; it still loads. A file's
 * KV type must match the session it is restored into or forked with (FG_ERR_MISMATCH otherwise). */
#include "session/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAP_MAGIC "FGSNAP\r\n"
#define SNAP_VERSION 2u
#define SNAP_HEADER_FIELDS_V1 8
#define SNAP_HEADER_FIELDS 9
#define SNAP_HEADER_BYTES_V1 (8u + 4u + 4u + 16u + SNAP_HEADER_FIELDS_V1 * 4u)
#define SNAP_HEADER_BYTES (8u + 4u + 4u + 16u + SNAP_HEADER_FIELDS * 4u)

typedef struct snap_writer {
  FILE *f;
  uint64_t hash;
  int failed;
} snap_writer;

static void hash_bytes(uint64_t *h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 0x100000001b3ull;
  }
}

static void w_bytes(snap_writer *w, const void *p, size_t n) {
  if (w->failed) return;
  hash_bytes(&w->hash, p, n);
  if (fwrite(p, 1, n, w->f) != n) w->failed = 1;
}

static void w_u32(snap_writer *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  w_bytes(w, b, 4);
}

static uint32_t first_kept(const fg_model *m, uint32_t layer, uint32_t pos) {
  const uint32_t win = m->hp.sliding_window;
  if (!m->layers[layer].is_swa || pos + 1 <= win) return 0;
  return pos + 1 - win;
}

fg_status fg_snapshot_save(const fg_snapshot *snap, const char *path, fg_error *err) {
  fg_err_clear(err);
  if (!snap || !path) return fg_err(err, FG_ERR_INVALID_ARG, "snapshot and path must not be NULL");
  const fg_model *m = snap->model;
  /* a temporary file of this writer's own beside path, renamed over it when complete: writers in other
   * threads or processes (replicas sharing a directory) never write into the same file, and a reader
   * sees either the old file or a whole new one */
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= sizeof tmp)
    return fg_err(err, FG_ERR_INVALID_ARG, "path too long");
  const size_t kbytes = (size_t)snap->kv.k_dim * snap->kv.elt;
  void *krow = fg_malloc(kbytes ? kbytes : 1); /* (k_dim) one K row gathered from a block */
  if (!krow) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  const int fd = mkstemp(tmp);
  if (fd < 0) {
    fg_free(krow);
    return fg_err(err, FG_ERR_IO, "%s: %s", tmp, strerror(errno));
  }
  (void)fchmod(fd, 0644); /* mkstemp's 0600 would keep other users' replicas from reading it */
  snap_writer w = {fdopen(fd, "wb"), 0xcbf29ce484222325ull, 0};
  if (!w.f) {
    const int e = errno;
    close(fd);
    remove(tmp);
    fg_free(krow);
    return fg_err(err, FG_ERR_IO, "%s: %s", tmp, strerror(e));
  }
  w_bytes(&w, SNAP_MAGIC, 8);
  w_u32(&w, SNAP_VERSION);
  w_u32(&w, SNAP_HEADER_BYTES);
  w_bytes(&w, m->info.fingerprint, 16);
  const uint32_t hdr[SNAP_HEADER_FIELDS] = {m->hp.n_layer, snap->kv.k_dim,      snap->kv.v_dim,
                                           m->hp.n_vocab,  m->hp.sliding_window, snap->pos,
                                           snap->n_ctx,    snap->logits != NULL, snap->kv.type};
  for (int i = 0; i < SNAP_HEADER_FIELDS; i++) w_u32(&w, hdr[i]);
  for (uint32_t i = 0; i < snap->pos; i++) w_u32(&w, (uint32_t)snap->tokens[i]);
  for (uint32_t il = 0; il < m->hp.n_layer; il++) {
    const uint32_t first = first_kept(m, il, snap->pos);
    w_u32(&w, first);
    for (uint32_t p = first; p < snap->pos; p++) {
      fg_kv_read_k(&snap->kv, il, p, krow);
      w_bytes(&w, krow, kbytes);
      w_bytes(&w, fg_kv_v(&snap->kv, il, p), (size_t)snap->kv.v_dim * snap->kv.elt);
    }
  }
  fg_free(krow);
  if (snap->logits) w_bytes(&w, snap->logits->data, (size_t)m->hp.n_vocab * sizeof(float));
  uint64_t h = w.hash;
  uint8_t hb[8];
  for (int i = 0; i < 8; i++) hb[i] = (uint8_t)(h >> (8 * i));
  if (!w.failed && fwrite(hb, 1, 8, w.f) != 8) w.failed = 1;
  if (fclose(w.f) != 0) w.failed = 1;
  if (w.failed) {
    remove(tmp);
    return fg_err(err, FG_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
  }
  if (rename(tmp, path) != 0) {
    remove(tmp);
    return fg_err(err, FG_ERR_IO, "rename to %s: %s", path, strerror(errno));
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Loading: every field validated before use; the file is read whole (it is small next to a model).

typedef struct snap_reader {
  const uint8_t *p;
  size_t left;
} snap_reader;

static int r_bytes(snap_reader *r, void *dst, size_t n) {
  if (n > r->left) return 0;
  if (dst) memcpy(dst, r->p, n);
  r->p += n;
  r->left -= n;
  return 1;
}

static int r_u32(snap_reader *r, uint32_t *v) {
  uint8_t b[4];
  if (!r_bytes(r, b, 4)) return 0;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return 1;
}

static fg_status read_file(const char *path, uint8_t **data, size_t *size, fg_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return fg_err(err, FG_ERR_IO, "%s: %s", path, strerror(errno));
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 1 << 20;
      if (ncap < cap) break;
      uint8_t *nb = fg_realloc(buf, ncap);
      if (!nb) {
        fg_free(buf);
        fclose(f);
        return fg_err(err, FG_ERR_NOMEM, "%s: out of memory reading the snapshot", path);
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    fg_free(buf);
    return fg_err(err, FG_ERR_IO, "%s: read error", path);
  }
  *data = buf;
  *size = n;
  return FG_OK;
}

fg_status fg_snapshot_load(const fg_model *m, const char *path, fg_snapshot **out, fg_error *err) {
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!m || !path || !out) return fg_err(err, FG_ERR_INVALID_ARG, "model, path and out must not be NULL");
  uint8_t *data = NULL;
  size_t size = 0;
  fg_status st = read_file(path, &data, &size, err);
  if (st != FG_OK) return st;
  fg_snapshot *snap = NULL;
  snap_reader r = {data, size};
  char magic[8];
  uint32_t version = 0, hdr_bytes = 0, hdr[SNAP_HEADER_FIELDS];
  uint8_t fp[16];
#define BAD(...) do { st = fg_err(err, FG_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)
  if (size < 8 + 8 || !r_bytes(&r, magic, 8) || memcmp(magic, SNAP_MAGIC, 8) != 0)
    BAD("%s: not an fgemma snapshot (bad magic)", path);
  if (!r_u32(&r, &version) || (version != SNAP_VERSION && version != 1))
    BAD("%s: snapshot version %u is not supported (this build reads versions 1 and %u)", path, version, SNAP_VERSION);
  const int n_fields = version == 1 ? SNAP_HEADER_FIELDS_V1 : SNAP_HEADER_FIELDS;
  if (!r_u32(&r, &hdr_bytes) || hdr_bytes != (version == 1 ? SNAP_HEADER_BYTES_V1 : SNAP_HEADER_BYTES) ||
      !r_bytes(&r, fp, 16))
    BAD("%s: truncated or damaged snapshot header", path);
  for (int i = 0; i < n_fields; i++)
    if (!r_u32(&r, &hdr[i])) BAD("%s: truncated snapshot header", path);
  if (version == 1) hdr[8] = FG_TYPE_F32; /* version 1: f32 rows */
  /* checksum before anything else is trusted */
  {
    uint64_t h = 0xcbf29ce484222325ull, want = 0;
    hash_bytes(&h, data, size - 8);
    for (int i = 0; i < 8; i++) want |= (uint64_t)data[size - 8 + i] << (8 * i);
    if (h != want) BAD("%s: snapshot checksum mismatch (file damaged or truncated)", path);
  }
  if (memcmp(fp, m->info.fingerprint, 16) != 0) {
    st = fg_err(err, FG_ERR_MISMATCH, "%s: snapshot was made with another model", path);
    goto done;
  }
  const uint32_t kdim = m->hp.n_head_kv * m->hp.head_dim_k, vdim = m->hp.n_head_kv * m->hp.head_dim_v;
  if (hdr[0] != m->hp.n_layer || hdr[1] != kdim || hdr[2] != vdim || hdr[3] != m->hp.n_vocab ||
      hdr[4] != m->hp.sliding_window)
    BAD("%s: snapshot shape does not match the model", path);
  const uint32_t pos = hdr[5], n_ctx = hdr[6], has_logits = hdr[7], kv_type = hdr[8];
  if (kv_type != FG_TYPE_F32 && kv_type != FG_TYPE_F16) BAD("%s: snapshot KV type %u is not f32 (0) or f16 (1)", path, kv_type);
  const uint64_t elt = kv_type == FG_TYPE_F16 ? 2 : 4;
  if (pos > n_ctx || n_ctx == 0 || n_ctx > m->hp.n_ctx_train || has_logits > 1 || (pos == 0) != (has_logits == 0))
    BAD("%s: snapshot position %u / context %u out of range", path, pos, n_ctx);
  if ((uint64_t)pos * 4 > r.left) BAD("%s: truncated token list", path);
  {
    /* the exact size the header implies, before anything is allocated from it */
    uint64_t want = (uint64_t)(r.p - data) + (uint64_t)pos * 4 + 8 + (has_logits ? (uint64_t)m->hp.n_vocab * 4 : 0);
    for (uint32_t il = 0; il < m->hp.n_layer; il++)
      want += 4 + (uint64_t)(pos - first_kept(m, il, pos)) * ((uint64_t)kdim + vdim) * elt;
    if (want != size) BAD("%s: snapshot is %zu bytes, its header implies %llu", path, size, (unsigned long long)want);
  }

  snap = fg_calloc(1, sizeof *snap);
  if (!snap) {
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  snap->model = fg_model_retain(m); /* released by fg_snapshot_free, also on the failure paths below */
  snap->pos = pos;
  snap->n_ctx = n_ctx;
  snap->tokens = fg_malloc_array(pos ? pos : 1, sizeof(int32_t));
  if (!snap->tokens || fg_kv_init(&snap->kv, m->hp.n_layer, kdim, vdim, kv_type, err) != FG_OK) {
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < pos; i++) {
    uint32_t v;
    r_u32(&r, &v);
    snap->tokens[i] = (int32_t)v;
    if (snap->tokens[i] < -1 || snap->tokens[i] >= (int32_t)m->hp.n_vocab) BAD("%s: token %u out of range", path, i);
  }
  if ((st = fg_kv_prepare(&snap->kv, 0, pos, err)) != FG_OK) goto done;
  for (uint32_t il = 0; il < m->hp.n_layer; il++) {
    uint32_t first;
    if (!r_u32(&r, &first) || first != first_kept(m, il, pos)) BAD("%s: bad window start in layer %u", path, il);
    for (uint32_t p = first; p < pos; p++) {
      if (r.left < (size_t)kdim * elt) BAD("%s: truncated KV data in layer %u", path, il);
      fg_kv_write_k(&snap->kv, il, p, r.p);
      if (!r_bytes(&r, NULL, (size_t)kdim * elt) || !r_bytes(&r, fg_kv_v(&snap->kv, il, p), (size_t)vdim * elt))
        BAD("%s: truncated KV data in layer %u", path, il);
    }
    if (m->layers[il].is_swa) fg_kv_drop_before(&snap->kv, il, first);
  }
  if (has_logits) {
    snap->logits = fg_logits_new(m->hp.n_vocab);
    if (!snap->logits) {
      st = fg_err(err, FG_ERR_NOMEM, "out of memory");
      goto done;
    }
    if (!r_bytes(&r, snap->logits->data, (size_t)m->hp.n_vocab * sizeof(float))) BAD("%s: truncated logits", path);
  }
  if (r.left != 8) BAD("%s: %zu unexpected bytes at the end", path, r.left - 8);
  st = FG_OK;
#undef BAD
done:
  fg_free(data);
  if (st != FG_OK) {
    fg_snapshot_free(snap);
    return st;
  }
  *out = snap;
  return FG_OK;
}
