/* kv_cache.c — reference-counted KV blocks with per-layer block tables (see kv_cache.h). */
#include "kv/kv_cache.h"

#include <string.h>

size_t fg_kv_block_bytes(const fg_kv *kv) {
  return sizeof(fg_kv_block) + (size_t)FG_KV_BLOCK * ((size_t)kv->k_dim * kv->elt + kv->v_row);
}

/* zero: fill the data (a fresh block; a copy-on-write copy is overwritten at once) */
static fg_kv_block *block_new(const fg_kv *kv, bool zero) {
  fg_kv_block *b = fg_aligned_alloc(64, fg_kv_block_bytes(kv));
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  b->reserved = 0;
  if (zero) memset(b->data, 0, fg_kv_block_bytes(kv) - sizeof(fg_kv_block));
  return b;
}

void fg_kv_write_k(const fg_kv *kv, uint32_t layer, uint32_t pos, const void *row) {
  const size_t j = pos % FG_KV_BLOCK;
  if (kv->elt == 4) {
    float *kt = fg_kv_kt(kv, layer, pos); /* (k_dim, FG_KV_BLOCK) */
    const float *src = row;
    for (size_t i = 0; i < kv->k_dim; i++) kt[i * FG_KV_BLOCK + j] = src[i];
  } else {
    uint16_t *kt = fg_kv_kt(kv, layer, pos); /* (k_dim, FG_KV_BLOCK) */
    const uint16_t *src = row;
    for (size_t i = 0; i < kv->k_dim; i++) kt[i * FG_KV_BLOCK + j] = src[i];
  }
}

void fg_kv_read_k(const fg_kv *kv, uint32_t layer, uint32_t pos, void *row) {
  const unsigned char *kt = fg_kv_kt(kv, layer, pos); /* (k_dim, FG_KV_BLOCK) */
  unsigned char *dst = row;
  const size_t j = pos % FG_KV_BLOCK, elt = kv->elt;
  for (size_t i = 0; i < kv->k_dim; i++) memcpy(dst + i * elt, kt + (i * FG_KV_BLOCK + j) * elt, elt);
}

static void block_unref(fg_kv_block *b) {
  if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) fg_aligned_free(b);
}

fg_status fg_kv_init(fg_kv *kv, uint32_t n_layer, uint32_t k_dim, uint32_t v_dim, uint32_t type, fg_error *err) {
  memset(kv, 0, sizeof *kv);
  if (type != FG_TYPE_F32 && type != FG_TYPE_F16)
    return fg_err(err, FG_ERR_UNSUPPORTED, "KV cache type %u: only f32 (0) and f16 (1) are implemented", type);
  kv->layers = fg_calloc(n_layer, sizeof *kv->layers);
  if (!kv->layers) return fg_err(err, FG_ERR_NOMEM, "out of memory for the KV tables");
  kv->n_layer = n_layer;
  kv->k_dim = k_dim;
  kv->v_dim = v_dim;
  kv->type = type;
  kv->elt = type == FG_TYPE_F16 ? 2u : 4u;
  kv->v_row = v_dim * kv->elt;
  if (kv->v_row > 0 && kv->v_row % 1024 == 0) kv->v_row += 64;
  return FG_OK;
}

void fg_kv_release(fg_kv *kv) {
  if (!kv || !kv->layers) return;
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    fg_kv_layer *L = &kv->layers[l];
    for (uint32_t b = 0; b < L->n_blocks; b++) block_unref(L->blocks[b]);
    fg_free(L->blocks);
  }
  fg_free(kv->layers);
  kv->layers = NULL;
  kv->n_layer = 0;
}

static fg_status layer_reserve(fg_kv_layer *L, uint32_t n_blocks) {
  if (n_blocks <= L->cap) return FG_OK;
  uint32_t cap = L->cap ? L->cap : 8;
  while (cap < n_blocks) cap *= 2;
  fg_kv_block **nb = fg_realloc(L->blocks, (size_t)cap * sizeof *nb);
  if (!nb) return FG_ERR_NOMEM;
  memset(nb + L->cap, 0, (size_t)(cap - L->cap) * sizeof *nb);
  L->blocks = nb;
  L->cap = cap;
  return FG_OK;
}

fg_status fg_kv_prepare(fg_kv *kv, uint32_t p0, uint32_t p1, fg_error *err) {
  if (p1 <= p0) return FG_OK;
  const uint32_t b0 = p0 / FG_KV_BLOCK, b1 = (p1 - 1) / FG_KV_BLOCK + 1;
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    fg_kv_layer *L = &kv->layers[l];
    if (layer_reserve(L, b1) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "out of memory for the KV table");
    /* entries past the old end are NULL (layer_reserve zeroes them): count them now, so that a
     * failure below still releases every block this call stored */
    if (b1 > L->n_blocks) L->n_blocks = b1;
    for (uint32_t b = b0; b < b1; b++) {
      fg_kv_block *cur = L->blocks[b];
      if (cur && atomic_load_explicit(&cur->refs, memory_order_acquire) == 1) continue;
      fg_kv_block *nb = block_new(kv, cur == NULL);
      if (!nb) return fg_err(err, FG_ERR_NOMEM, "out of memory for a KV block");
      if (cur) { /* shared: copy on write (only the block holding p0 can carry earlier positions) */
        memcpy(nb->data, cur->data, fg_kv_block_bytes(kv) - sizeof(fg_kv_block));
        block_unref(cur);
      }
      L->blocks[b] = nb;
    }
  }
  return FG_OK;
}

void fg_kv_drop_before(fg_kv *kv, uint32_t layer, uint32_t first_needed) {
  fg_kv_layer *L = &kv->layers[layer];
  const uint32_t nb = FG_MIN(first_needed / FG_KV_BLOCK, L->n_blocks);
  for (uint32_t b = 0; b < nb; b++) {
    block_unref(L->blocks[b]);
    L->blocks[b] = NULL;
  }
}

/* zeroes the rows [j0, j1) (in-block indices) of a block: K components are FG_KV_BLOCK apart, V rows v_row bytes */
static void block_clear_rows(const fg_kv *kv, fg_kv_block *b, uint32_t j0, uint32_t j1) {
  const size_t elt = kv->elt;
  for (size_t i = 0; i < kv->k_dim; i++) memset(b->data + (i * FG_KV_BLOCK + j0) * elt, 0, (j1 - j0) * elt);
  unsigned char *v = b->data + (size_t)FG_KV_BLOCK * kv->k_dim * elt; /* (FG_KV_BLOCK, v_dim) */
  memset(v + (size_t)j0 * kv->v_row, 0, (size_t)(j1 - j0) * kv->v_row);
}

void fg_kv_truncate(fg_kv *kv, uint32_t pos, uint32_t end) {
  const uint32_t keep = (pos + FG_KV_BLOCK - 1) / FG_KV_BLOCK; /* blocks holding positions < pos */
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    fg_kv_layer *L = &kv->layers[l];
    for (uint32_t b = keep; b < L->n_blocks; b++) {
      block_unref(L->blocks[b]);
      L->blocks[b] = NULL;
    }
    if (L->n_blocks > keep) L->n_blocks = keep;
    /* the partial block that stays: clear what was written past pos, unless others hold it */
    fg_kv_block *pb = pos % FG_KV_BLOCK && keep > 0 && keep <= L->n_blocks ? L->blocks[keep - 1] : NULL;
    if (pb && end > pos && atomic_load_explicit(&pb->refs, memory_order_acquire) == 1)
      block_clear_rows(kv, pb, pos % FG_KV_BLOCK, FG_MIN(end - (keep - 1) * FG_KV_BLOCK, FG_KV_BLOCK));
  }
}

fg_status fg_kv_share(fg_kv *dst, const fg_kv *src, fg_error *err) {
  fg_status st = fg_kv_init(dst, src->n_layer, src->k_dim, src->v_dim, src->type, err);
  if (st != FG_OK) return st;
  for (uint32_t l = 0; l < src->n_layer; l++) {
    const fg_kv_layer *S = &src->layers[l];
    fg_kv_layer *D = &dst->layers[l];
    if (S->n_blocks == 0) continue;
    if (layer_reserve(D, S->n_blocks) != FG_OK) {
      fg_kv_release(dst);
      return fg_err(err, FG_ERR_NOMEM, "out of memory for the KV table");
    }
    for (uint32_t b = 0; b < S->n_blocks; b++) {
      D->blocks[b] = S->blocks[b];
      if (D->blocks[b]) atomic_fetch_add_explicit(&D->blocks[b]->refs, 1, memory_order_relaxed);
    }
    D->n_blocks = S->n_blocks;
  }
  return FG_OK;
}

void fg_kv_layer_usage(const fg_kv *kv, uint32_t layer, uint64_t *bytes, uint32_t *blocks, uint32_t *shared) {
  const fg_kv_layer *L = &kv->layers[layer];
  uint32_t n = 0, s = 0;
  for (uint32_t b = 0; b < L->n_blocks; b++) {
    if (!L->blocks[b]) continue;
    n++;
    if (atomic_load_explicit(&L->blocks[b]->refs, memory_order_relaxed) > 1) s++;
  }
  *bytes = (uint64_t)n * fg_kv_block_bytes(kv);
  *blocks = n;
  *shared = s;
}
