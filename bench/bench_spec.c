/* bench_spec.c — what a speculative verification pass costs against decoding one token (issue 17).
 *
 *   bench_spec -m MODEL.gguf [--threads N] [--depth D] [--rounds R] [--kmax K] [--cpu-time]
 *
 * At depth D (default 832: the small TV catalog's 819-token prefix plus an utterance), for k = 1..K
 * (default 8) tokens appended as one batch:
 *   step      fg_session_step: one token, full LM head, argmax (the plain decode step, k = 1 only)
 *   body      fg_session_append_rows of k tokens: the weights of every layer once, k hidden rows
 *   +full     body + the full LM head over the k rows (one fg_ops_matmul of k activations) + argmax
 *   +sparse   body + 16 head rows per position (a constrained literal choice)
 * Rounds are interleaved (each round measures every k once, in a rotated order) so that the machine's
 * drifting bandwidth hits every k alike; each cell is the median over rounds with the 10th-90th
 * percentile spread. After each pass the session is rewound (fg_session_rewind), so every pass runs
 * at the same depth on blocks it already owns, as the passes after an utterance chunk do.
 * --cpu-time (with --threads 1) times with the thread's CPU clock: on a machine shared with other jobs
 * the wall clock measures the share of the CPU one gets, the CPU clock what the pass costs (stalls on
 * memory included). */
#include "fgemma.h"
#include "kernels/ops.h"
#include "session/session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_cpu_time;

static double now_s(void) {
  if (!g_cpu_time) return fg_time_s();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { C_BODY, C_FULL, C_SPARSE, C_COUNT };

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_d);
  return v[(size_t)((double)(n - 1) * p + 0.5)];
}

int main(int argc, char **argv) {
  const char *path = NULL;
  uint32_t threads = 2, depth = 832, rounds = 15, kmax = 8;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && v) path = argv[++i];
    else if (!strcmp(a, "--threads") && v) threads = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--depth") && v) depth = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--rounds") && v) rounds = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--kmax") && v) kmax = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--cpu-time")) g_cpu_time = 1;
    else {
      fprintf(stderr, "usage: bench_spec -m MODEL.gguf [--threads N] [--depth D] [--rounds R] [--kmax K] [--cpu-time]\n");
      return 2;
    }
  }
  if (!path || threads < 1 || depth < 1 || rounds < 1 || kmax < 1 || kmax > 64 || (g_cpu_time && threads != 1)) {
    fprintf(stderr, "bench_spec: -m MODEL.gguf is required; threads, depth, rounds >= 1, kmax 1..64; --cpu-time needs --threads 1\n");
    return 2;
  }
  fg_model *m = NULL;
  fg_error err = {0};
  if (fg_model_load(path, NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "bench_spec: %s\n", err.msg);
    return 1;
  }
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = threads;
  fg_session *s = NULL;
  if (fg_session_create(m, &sp, &s, &err) != FG_OK) {
    fprintf(stderr, "bench_spec: %s\n", err.msg);
    return 1;
  }
  const uint32_t nv = m->hp.n_vocab, d = m->hp.n_embd;
  int32_t *ids = malloc(sizeof(int32_t) * (depth + kmax + 1));
  uint64_t x = 88172645463325252ull;
  for (uint32_t i = 0; i < depth + kmax + 1; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ids[i] = (int32_t)(300 + x % (nv > 400 ? nv - 300 : 1));
  }
  ids[0] = 2;
  float *hidden = malloc(sizeof(float) * d * kmax);
  float *logits = malloc(sizeof(float) * (size_t)nv * kmax);
  float sparse[16 * 64];
  int32_t rows[16];
  for (int i = 0; i < 16; i++) rows[i] = (int32_t)((uint64_t)(i + 1) * 16411u % nv);
  if (!ids || !hidden || !logits || fg_session_prefill(s, ids, depth, NULL) != FG_OK) {
    fprintf(stderr, "bench_spec: setup failed: %s\n", fg_session_errmsg(s));
    return 1;
  }
  const size_t n_cells = (size_t)kmax * C_COUNT;
  double *t = calloc(n_cells * rounds, sizeof(double)), *tstep = calloc(rounds, sizeof(double));
  const uint32_t pos0 = fg_session_position(s);
  volatile size_t sink = 0;
  for (uint32_t r = 0; r < rounds; r++) {
    for (uint32_t kk = 0; kk <= kmax; kk++) {
      const uint32_t k = (kk + r) % (kmax + 1); /* 0 = the plain step */
      if (k == 0) {
        int32_t next;
        const double t0 = now_s();
        fg_session_step(s, ids[depth], &next);
        tstep[r] = now_s() - t0;
        sink += (size_t)next;
        fg_session_rewind(s, pos0, pos0);
        continue;
      }
      for (int c = 0; c < C_COUNT; c++) {
        const double t0 = now_s();
        if (fg_session_append_rows(s, ids + depth, k, k, hidden) != FG_OK) {
          fprintf(stderr, "bench_spec: %s\n", fg_session_errmsg(s));
          return 1;
        }
        if (c == C_FULL) {
          fg_ops_matmul(s->ops, &m->output, hidden, d, k, logits, nv);
          for (uint32_t i = 0; i < k; i++) sink += fg_ops_argmax(s->ops, logits + (size_t)i * nv, nv);
        } else if (c == C_SPARSE) {
          for (uint32_t i = 0; i < k; i++) fg_ops_matmul_rows(s->ops, &m->output, rows, 16, hidden + (size_t)i * d, d, 1, sparse, 16);
        }
        t[((size_t)(k - 1) * C_COUNT + c) * rounds + r] = now_s() - t0;
        fg_session_rewind(s, pos0, pos0);
      }
    }
  }
  fg_model_info info;
  fg_model_get_info(m, &info);
  printf("model %s (%s, head %s), %u threads, depth %u, %u interleaved rounds, %s; ms: median [p10-p90]\n", path,
         fg_type_name(info.weight_type), fg_type_name(info.head_type), fg_ops_n_threads(s->ops), depth, rounds,
         g_cpu_time ? "thread CPU time" : "wall clock");
  const double step = pct(tstep, rounds, 0.5) * 1e3;
  printf("plain step (1 token + full head + argmax): %.2f ms [%.2f-%.2f]\n", step, pct(tstep, rounds, 0.1) * 1e3,
         pct(tstep, rounds, 0.9) * 1e3);
  printf("%3s %22s %22s %22s %12s\n", "k", "body", "+full head", "+sparse head (16 rows)", "full / step");
  for (uint32_t k = 1; k <= kmax; k++) {
    double med[C_COUNT], lo[C_COUNT], hi[C_COUNT];
    for (int c = 0; c < C_COUNT; c++) {
      double *v = t + ((size_t)(k - 1) * C_COUNT + c) * rounds;
      med[c] = pct(v, rounds, 0.5) * 1e3;
      lo[c] = pct(v, rounds, 0.1) * 1e3;
      hi[c] = pct(v, rounds, 0.9) * 1e3;
    }
    printf("%3u %8.2f [%5.2f-%5.2f] %8.2f [%5.2f-%5.2f] %8.2f [%5.2f-%5.2f] %11.2fx\n", k, med[0], lo[0], hi[0], med[1],
           lo[1], hi[1], med[2], lo[2], hi[2], med[1] / step);
  }
  if (sink == 42) putchar(' ');
  free(t);
  free(tstep);
  free(ids);
  free(hidden);
  free(logits);
  fg_session_free(s);
  fg_model_free(m);
  return 0;
}
