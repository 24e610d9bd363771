/* bench_kernels.c — throughput of fg_ops_matmul per kernel table, weight type and thread count.
 *
 *   bench_kernels [--isa ref|avx2|avx512] [--quick] [--cpu-time] [--hot] [--only TYPE] [--nb N]
 *
 * Types: Q8_0, Q4_0, BF16, F16, F32, then the other quantized types (Q5_0, Q4_K, Q6_K first: the mix
 * of a Q4_K_M file); --only q5_0 picks one.
 *
 * --hot keeps matvec weights cache-resident (the kernels' compute ceiling, not DRAM).
 * --cpu-time times 1-thread runs with the thread's CPU clock (a busy machine steals wall time);
 * 2-thread columns are then meaningless and skipped.
 *
 * matvec (nb = 1, decode): GB/s of weights streamed. Small matrices are replicated until the set
 * is larger than the last-level cache, so every call reads its weights from DRAM as decode does.
 * matmul (nb = 64 or --nb N, prefill): GFLOP/s (2 * rows * cols * nb per call).
 * memread: a plain parallel read of 512 MiB, the machine's bandwidth ceiling. */
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MIN_SET (256u << 20) /* bytes of distinct weights cycled through for matvec */

static int g_cpu_time; /* time with CLOCK_THREAD_CPUTIME_ID */
static int g_hot;      /* matvec weights stay cache-resident (no replication): compute ceiling */

static double now_s(void) {
  if (!g_cpu_time) return fg_time_s();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ----------------------------------------------------------------------------
// plain memory read

typedef struct read_job {
  const uint64_t *p;
  uint64_t sums[64];
} read_job;

static void read_range(void *ud, size_t i0, size_t i1, uint32_t ith) {
  read_job *j = ud;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = i0 * 8; i < i1 * 8; i += 4) {
    a += j->p[i];
    b += j->p[i + 1];
    c += j->p[i + 2];
    d += j->p[i + 3];
  }
  j->sums[ith & 63] += a + b + c + d;
}

static double bench_memread(fg_ops *ops) {
  const size_t bytes = 512u << 20;
  uint64_t *buf = malloc(bytes);
  if (!buf) return 0.0;
  memset(buf, 1, bytes);
  read_job job;
  memset(&job, 0, sizeof job);
  job.p = buf;
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = fg_time_s();
    fg_ops_parallel_for(ops, bytes / 64, read_range, &job);
    double t = fg_time_s() - t0;
    if (t < best) best = t;
  }
  free(buf);
  return (double)bytes / best * 1e-9;
}

// ----------------------------------------------------------------------------
// dispatch latency: an empty parallel_for, back to back (workers spinning)

static void empty_range(void *ud, size_t i0, size_t i1, uint32_t ith) {
  (void)i0;
  (void)i1;
  ((volatile uint32_t *)ud)[ith & 7]++;
}

static double bench_dispatch(fg_ops *ops) {
  uint32_t counters[8] = {0};
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    const int n = 20000;
    double t0 = fg_time_s();
    for (int i = 0; i < n; i++) fg_ops_parallel_for(ops, 64, empty_range, counters);
    double t = (fg_time_s() - t0) / n;
    if (t < best) best = t;
  }
  return best;
}

// ----------------------------------------------------------------------------
// weights

typedef struct wset {
  uint32_t type;
  size_t rows, cols, row_bytes, n_copies;
  uint8_t *data; /* (n_copies, rows, row_bytes) */
} wset;

static int wset_make(wset *w, uint32_t type, size_t rows, size_t cols, size_t min_bytes) {
  uint64_t rb;
  if (!fg_type_row_bytes(type, cols, &rb)) return 0;
  w->type = type;
  w->rows = rows;
  w->cols = cols;
  w->row_bytes = (size_t)rb;
  const size_t one = w->row_bytes * rows;
  w->n_copies = one >= min_bytes ? 1 : (min_bytes + one - 1) / one;
  w->data = aligned_alloc(64, (one * w->n_copies + 63) & ~(size_t)63);
  if (!w->data) return 0;
  /* 64 distinct quantized rows of N(0,1)-ish values, repeated */
  float *tmp = malloc(cols * sizeof *tmp);
  uint8_t *pool = malloc(64 * w->row_bytes);
  uint64_t s = 88172645463325252ull;
  for (size_t r = 0; r < 64; r++) {
    for (size_t j = 0; j < cols; j++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      tmp[j] = ((float)(s >> 40) / 16777216.0f - 0.5f) * 0.2f;
    }
    fg_quantize_row(type, tmp, pool + r * w->row_bytes, cols);
  }
  for (size_t r = 0; r < rows * w->n_copies; r++) memcpy(w->data + r * w->row_bytes, pool + (r % 64) * w->row_bytes, w->row_bytes);
  free(pool);
  free(tmp);
  return 1;
}

// ----------------------------------------------------------------------------
// timing

/* Seconds per call: calls cycle through the copies; best of 3 runs of >= min_s each. */
static double time_matmul(fg_ops *ops, const wset *w, const float *x, size_t nb, float *y, double min_s) {
  double best = 1e30;
  size_t copy = 0;
  for (int rep = 0; rep < 3; rep++) {
    size_t n = 0;
    double t0 = now_s(), t;
    do {
      fg_mat W = {w->type, (uint32_t)w->rows, (uint32_t)w->cols, w->row_bytes,
                  w->data + copy * w->rows * w->row_bytes, NULL, NULL};
      if (fg_ops_matmul(ops, &W, x, w->cols, nb, y, w->rows) != FG_OK) return -1.0;
      copy = (copy + 1) % w->n_copies;
      n++;
      t = now_s() - t0;
    } while (t < min_s);
    if (t / (double)n < best) best = t / (double)n;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *isa = NULL;
  int quick = 0;
  const char *only = NULL;
  size_t mm_nb = 64;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) isa = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--cpu-time") == 0) g_cpu_time = 1;
    else if (strcmp(argv[i], "--hot") == 0) g_hot = 1;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--nb") == 0 && i + 1 < argc) mm_nb = (size_t)strtoul(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s [--isa ref|avx2|avx512] [--quick] [--cpu-time] [--hot] [--only TYPE] [--nb N]\n", argv[0]);
      return 2;
    }
  }
  fg_ops *ops[2];
  for (int t = 0; t < 2; t++) {
    fg_error err;
    if (fg_ops_create((uint32_t)t + 1, &ops[t], &err) != FG_OK) {
      fprintf(stderr, "fg_ops_create: %s\n", err.msg);
      return 1;
    }
  }
  const fg_kernels *k = NULL;
  if (isa) {
    k = fg_kernels_by_name(isa);
    if (!k) {
      fprintf(stderr, "isa %s not available here\n", isa);
      return 1;
    }
    for (int t = 0; t < 2; t++) fg_ops_set_kernels(ops[t], k);
  }
  printf("kernels: %s   (process default %s)\n", isa ? isa : fg_ops_isa(), fg_ops_isa());
  if (!g_cpu_time) {
    printf("memread: 1 thread %.1f GB/s, 2 threads %.1f GB/s\n", bench_memread(ops[0]), bench_memread(ops[1]));
    printf("dispatch: empty parallel_for with 2 threads %.2f us\n", bench_dispatch(ops[1]) * 1e6);
  }

  static const uint32_t types[] = {FG_TYPE_Q8_0, FG_TYPE_Q4_0, FG_TYPE_BF16, FG_TYPE_F16, FG_TYPE_F32,
                                   FG_TYPE_Q5_0, FG_TYPE_Q4_K, FG_TYPE_Q6_K, FG_TYPE_Q4_1, FG_TYPE_Q5_1,
                                   FG_TYPE_Q2_K, FG_TYPE_Q3_K, FG_TYPE_Q5_K, FG_TYPE_IQ4_NL, FG_TYPE_IQ4_XS};
  static const size_t shapes[][2] = {{640, 2048}, {2048, 640}, {262144, 640}};
  const double min_s = quick ? 0.05 : 0.25;
  if (mm_nb < 1 || mm_nb > 8192) mm_nb = 64;
  const size_t x_rows = FG_MAX(mm_nb, (size_t)64);
  float *x = malloc(x_rows * 2048 * sizeof *x);                          /* (x_rows, 2048) */
  float *y = malloc(FG_MAX(64 * (size_t)262144, mm_nb * 2048) * sizeof *y); /* (nb, rows) */
  if (!x || !y) return 1;
  for (size_t i = 0; i < x_rows * 2048; i++) x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;

  printf("\n%-6s %-14s %10s %10s %10s %10s\n", "type", "rows x cols", "1T GB/s", "2T GB/s", "1T us", "2T us");
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    if (only && strcmp(only, fg_type_name(types[ti])) != 0) continue;
    for (size_t si = 0; si < 3; si++) {
      wset w;
      uint64_t rb;
      if (!fg_type_row_bytes(types[ti], shapes[si][1], &rb)) continue; /* 640 columns: no 256-element blocks */
      if (!wset_make(&w, types[ti], shapes[si][0], shapes[si][1], g_hot ? 0 : BENCH_MIN_SET)) {
        fprintf(stderr, "out of memory\n");
        return 1;
      }
      const double bytes = (double)w.rows * (double)w.row_bytes;
      double t1 = time_matmul(ops[0], &w, x, 1, y, min_s), t2 = g_cpu_time ? 1e30 : time_matmul(ops[1], &w, x, 1, y, min_s);
      char shape[32];
      snprintf(shape, sizeof shape, "%zux%zu", w.rows, w.cols);
      printf("%-6s %-14s %10.1f %10.1f %10.1f %10.1f\n", fg_type_name(types[ti]), shape, bytes / t1 * 1e-9,
             g_cpu_time ? 0.0 : bytes / t2 * 1e-9, t1 * 1e6, g_cpu_time ? 0.0 : t2 * 1e6);
      fflush(stdout);
      free(w.data);
    }
  }

  printf("\n%-6s %-14s %4s %10s %10s\n", "type", "rows x cols", "nb", "1T GF/s", "2T GF/s");
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    if (only && strcmp(only, fg_type_name(types[ti])) != 0) continue;
    for (size_t si = 0; si < 2; si++) {
      wset w;
      uint64_t rb;
      if (!fg_type_row_bytes(types[ti], shapes[si][1], &rb)) continue;
      if (!wset_make(&w, types[ti], shapes[si][0], shapes[si][1], 0)) return 1;
      const size_t nb = mm_nb;
      const double flops = 2.0 * (double)w.rows * (double)w.cols * (double)nb;
      double t1 = time_matmul(ops[0], &w, x, nb, y, min_s), t2 = g_cpu_time ? 1e30 : time_matmul(ops[1], &w, x, nb, y, min_s);
      char shape[32];
      snprintf(shape, sizeof shape, "%zux%zu", w.rows, w.cols);
      printf("%-6s %-14s %4zu %10.1f %10.1f\n", fg_type_name(types[ti]), shape, nb, flops / t1 * 1e-9, flops / t2 * 1e-9);
      fflush(stdout);
      free(w.data);
    }
  }
  free(y);
  free(x);
  for (int t = 0; t < 2; t++) fg_ops_free(ops[t]);
  return 0;
}
