/* bench_attn.c — the attention of one decode step, alone: per layer of Gemma 3 270M (18 layers, 1 KV head
 * of 256 dimensions, 4 query heads; every 6th layer global, the others a 512-key window) the table's qk,
 * softmax and pv over the KV cache's blocks at one depth, as fg_forward_batch's decode runs them (4 rows,
 * block by block). Between layers a buffer larger than the last-level cache is read, as a step's weights
 * are, so every layer's K and V come from memory. Reports the step's attention time (median and best of
 * the rounds) and the KV bytes it read per second.
 *
 *   bench_attn [--isa ref|avx2|avx512] [--depth N] [--kv f32|f16] [--rounds R]
 *
 * The result is only timed, never checked: the tables' results are tests/test_attn.c's. */
#include "kernels/attn.h"
#include "kv/kv_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LAYER 18u
#define HEAD_DIM 256u
#define GROUP 4u      /* query heads per KV head: the rows of a decode step */
#define WINDOW 512u   /* keys a sliding layer sees */
#define FLUSH_BYTES (96u << 20)

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *isa = NULL, *kv_name = "f32";
  uint32_t depth = 1387, rounds = 200;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) isa = argv[++i];
    else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc) depth = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--kv") == 0 && i + 1 < argc) kv_name = argv[++i];
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = (uint32_t)strtoul(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s [--isa ref|avx2|avx512] [--depth N] [--kv f32|f16] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  const uint32_t type = strcmp(kv_name, "f16") == 0 ? FG_TYPE_F16 : FG_TYPE_F32;
  if (type == FG_TYPE_F32 && strcmp(kv_name, "f32") != 0) {
    fprintf(stderr, "--kv: f32 or f16, not %s\n", kv_name);
    return 2;
  }
  if (depth < 1 || depth > 32768 || rounds < 1 || rounds > 100000) {
    fprintf(stderr, "--depth 1..32768, --rounds 1..100000\n");
    return 2;
  }
  const fg_attn_kernels *ak = isa ? fg_attn_by_name(isa) : fg_attn_get();
  if (!ak) {
    fprintf(stderr, "attention table %s not available here\n", isa ? isa : "(default)");
    return 1;
  }

  fg_kv kv;
  fg_error err;
  if (fg_kv_init(&kv, N_LAYER, HEAD_DIM, HEAD_DIM, type, &err) != FG_OK || fg_kv_prepare(&kv, 0, depth, &err) != FG_OK) {
    fprintf(stderr, "KV cache: %s\n", err.msg);
    return 1;
  }
  float row[HEAD_DIM];
  uint16_t row16[HEAD_DIM];
  for (uint32_t l = 0; l < N_LAYER; l++)
    for (uint32_t p = 0; p < depth; p++) {
      for (uint32_t i = 0; i < HEAD_DIM; i++) row[i] = (float)(((p + 1) * 2654435761u + i * 40503u + l) % 2001u) * 1e-3f - 1.0f;
      ak->to_f16(row, row16, HEAD_DIM);
      fg_kv_write_k(&kv, l, p, type == FG_TYPE_F16 ? (const void *)row16 : (const void *)row);
      memcpy(fg_kv_v(&kv, l, p), type == FG_TYPE_F16 ? (const void *)row16 : (const void *)row, (size_t)HEAD_DIM * kv.elt);
    }

  unsigned char *flush = malloc(FLUSH_BYTES);
  double *times = malloc(rounds * sizeof *times);
  float *q = fg_aligned_alloc(64, GROUP * HEAD_DIM * sizeof(float)), *s = fg_aligned_alloc(64, GROUP * FG_ATTN_BLK * sizeof(float));
  float *o = fg_aligned_alloc(64, GROUP * (HEAD_DIM + 16) * sizeof(float));
  if (!flush || !times || !q || !s || !o) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  memset(flush, 1, FLUSH_BYTES);
  for (uint32_t i = 0; i < GROUP * HEAD_DIM; i++) q[i] = (float)(i % 17) * 0.01f - 0.08f;
  float m[GROUP], l[GROUP], c[GROUP];
  uint32_t j0[GROUP], j1[GROUP];
  const uint32_t p = depth - 1; /* the step's position: keys 0..p */
  double bytes = 0.0;
  volatile uint64_t sink = 0;
  for (uint32_t r = 0; r < rounds; r++) {
    double t = 0.0;
    for (uint32_t layer = 0; layer < N_LAYER; layer++) {
      uint64_t acc = 0;
      for (size_t i = 0; i < FLUSH_BYTES; i += 64) acc += flush[i];
      sink += acc;
      const uint32_t first = layer % 6 == 5 || p + 1 <= WINDOW ? 0 : p + 1 - WINDOW;
      const double t0 = fg_time_s();
      for (uint32_t g = 0; g < GROUP; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
      }
      memset(o, 0, GROUP * (HEAD_DIM + 16) * sizeof(float));
      for (uint32_t bs = first / FG_KV_BLOCK * FG_KV_BLOCK; bs <= p; bs += FG_KV_BLOCK) {
        const uint32_t ja = FG_MAX(bs, first) - bs, jb = FG_MIN(bs + FG_KV_BLOCK, p + 1) - bs;
        for (uint32_t g = 0; g < GROUP; g++) {
          j0[g] = ja;
          j1[g] = jb;
        }
        ak->qk(q, HEAD_DIM, GROUP, HEAD_DIM, fg_kv_kt(&kv, layer, bs), type, s);
        ak->softmax(s, GROUP, j0, j1, m, l, c);
        ak->pv(o, HEAD_DIM + 16, GROUP, HEAD_DIM, c, s, ja, jb, fg_kv_v(&kv, layer, bs + ja), kv.v_row, type);
        if (r == 0) bytes += (double)(jb - ja) * ((double)HEAD_DIM * kv.elt + (double)HEAD_DIM * kv.elt);
      }
      t += fg_time_s() - t0;
    }
    times[r] = t;
  }
  qsort(times, rounds, sizeof *times, cmp_double);
  const double med = times[rounds / 2], best = times[0];
  printf("attention of a decode step, table %s, %s KV, depth %u: %.3f ms median, %.3f ms best (%u rounds); %.1f MB of K and V: "
         "%.1f GB/s (median), %.1f (best)\n",
         ak->name, kv_name, depth, med * 1e3, best * 1e3, rounds, bytes * 1e-6, bytes / med * 1e-9, bytes / best * 1e-9);
  fg_aligned_free(q);
  fg_aligned_free(s);
  fg_aligned_free(o);
  free(times);
  free(flush);
  fg_kv_release(&kv);
  return 0;
}
