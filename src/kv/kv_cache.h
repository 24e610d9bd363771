/* kv_cache.h — the KV cache as reference-counted blocks.
 *
 * Each layer has a block table: entry b covers positions [b*FG_KV_BLOCK, (b+1)*FG_KV_BLOCK) and points
 * to a block holding the K rows (k_dim elements per position) and the V rows (v_dim elements), of the
 * cache's element type: f32 (FG_TYPE_F32) or IEEE half (FG_TYPE_F16). K is stored transposed inside a
 * block, (k_dim, FG_KV_BLOCK): component i of the position with in-block index j is at [i][j], so the
 * attention scores of a block are a plain broadcast-and-multiply-add over the block's 32 keys. V is
 * stored by rows, (FG_KV_BLOCK, v_dim), v_row bytes apart: v_dim elements, plus one 64-byte line of
 * zeros when that is a multiple of 1 KiB. (Rows 1 KiB apart, Gemma 3 270M's f32 V, fall into 4 of the
 * 64 sets of a 32 KiB 8-way L1: the 32 rows of a block fill them, and the P·V tiles that read a column
 * slice of all 32 rows for each tile of query rows lost them to the output rows: 71 against 87
 * GFLOP/s, AVX2, Zen 3.) New blocks are zero-filled. Blocks are
 * shared between sessions and snapshots by reference count: sharing a state copies the tables, never
 * KV bytes; the first write into a shared block copies that one block (copy-on-write). Sliding-window
 * layers drop the blocks that fell out of the window, so their memory stays bounded.
 * Model-agnostic: it only knows layers, row sizes and positions. */
#ifndef FG_KV_CACHE_H
#define FG_KV_CACHE_H

#include "fg_internal.h"
#include "tensor/dtype.h"

#include <stdatomic.h>
#include <stdbool.h>

#define FG_KV_BLOCK 32u /* positions per block */

typedef struct fg_kv_block {
  atomic_uint refs;
  uint32_t reserved;
  _Alignas(64) unsigned char data[]; /* K (k_dim, FG_KV_BLOCK) then V (FG_KV_BLOCK rows of v_row bytes), elements of kv->type */
} fg_kv_block;

typedef struct fg_kv_layer {
  fg_kv_block **blocks; /* (cap) entries; NULL = not allocated or dropped */
  uint32_t n_blocks;    /* entries in use */
  uint32_t cap;
} fg_kv_layer;

typedef struct fg_kv {
  uint32_t n_layer;
  uint32_t k_dim;       /* elements per position of K (n_head_kv * head_dim_k) */
  uint32_t v_dim;       /* elements per position of V */
  uint32_t v_row;       /* bytes between the V rows of a block: v_dim * elt, padded (see above) */
  uint32_t type;        /* FG_TYPE_F32 or FG_TYPE_F16 */
  uint32_t elt;         /* bytes per element: 4 or 2 */
  fg_kv_layer *layers;  /* (n_layer) */
} fg_kv;

/* type: FG_TYPE_F32 or FG_TYPE_F16 (anything else is FG_ERR_UNSUPPORTED). */
fg_status fg_kv_init(fg_kv *kv, uint32_t n_layer, uint32_t k_dim, uint32_t v_dim, uint32_t type, fg_error *err);
void fg_kv_release(fg_kv *kv); /* drops every reference and frees the tables; idempotent */

/* Makes the blocks covering [p0, p1) of every layer present and exclusively owned (allocating or
 * copying shared blocks). On failure the cache still holds the same data at every position < p0. */
fg_status fg_kv_prepare(fg_kv *kv, uint32_t p0, uint32_t p1, fg_error *err);

/* The transposed K of the block holding pos (which must exist): (k_dim, FG_KV_BLOCK) elements of kv->type. */
static inline void *fg_kv_kt(const fg_kv *kv, uint32_t layer, uint32_t pos) {
  return kv->layers[layer].blocks[pos / FG_KV_BLOCK]->data;
}
/* The V row of a position (its block must exist): v_dim elements; rows of a block v_row bytes apart. */
static inline void *fg_kv_v(const fg_kv *kv, uint32_t layer, uint32_t pos) {
  fg_kv_block *b = kv->layers[layer].blocks[pos / FG_KV_BLOCK];
  return b->data + (size_t)FG_KV_BLOCK * kv->k_dim * kv->elt + (size_t)(pos % FG_KV_BLOCK) * kv->v_row;
}

/* Copies the K row of a position (k_dim elements of kv->type, in component order) into / out of its block. */
void fg_kv_write_k(const fg_kv *kv, uint32_t layer, uint32_t pos, const void *row);
void fg_kv_read_k(const fg_kv *kv, uint32_t layer, uint32_t pos, void *row);

/* Drops the blocks of `layer` whose positions are all < first_needed. */
void fg_kv_drop_before(fg_kv *kv, uint32_t layer, uint32_t first_needed);
/* Drops the blocks of every layer whose positions are all >= pos, and zeroes the rows [pos, end) of the
 * block that holds pos when this cache owns it alone (a shared block was never written: copy-on-write).
 * Undo of a failed append, or of rejected speculative tokens: with `end` the first position never
 * written, the cache then holds exactly what a cache that never saw [pos, end) holds. */
void fg_kv_truncate(fg_kv *kv, uint32_t pos, uint32_t end);

/* dst (uninitialised) becomes a sharing copy of src: tables copied, references taken. */
fg_status fg_kv_share(fg_kv *dst, const fg_kv *src, fg_error *err);

/* Bytes of blocks referenced in one layer, and how many blocks are shared with another holder. */
void fg_kv_layer_usage(const fg_kv *kv, uint32_t layer, uint64_t *bytes, uint32_t *blocks, uint32_t *shared);
size_t fg_kv_block_bytes(const fg_kv *kv);

#endif /* FG_KV_CACHE_H */
