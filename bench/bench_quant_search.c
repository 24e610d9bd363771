/* bench_quant_search — fgemma's quantizers against ggml's on the matrices of a GGUF, row by row.
 *
 *   bench_quant_search SOURCE.gguf LIBGGML_BASE.so [TYPE ...] [--every K]
 *
 * For each type (default: q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs) and every K-th row
 * (default 8) of every matrix whose rows fit the type's block: the row quantized by fgemma's searched
 * fit (quant_search.c), by its reference fit (fg_quantize_row) and by ggml_quantize_chunk without an
 * importance matrix (what llama-quantize does without --imatrix), each dequantized by
 * fg_dequantize_row; prints the RMSE of each. LIBGGML_BASE.so: the libggml-base.so of llama.cpp (the
 * one node-llama-cpp ships in tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64). */
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "tensor/quant_search.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef size_t (*quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                    int64_t n_per_row, const float *imatrix);

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_quant_search SOURCE.gguf LIBGGML_BASE.so [TYPE ...] [--every K]\n");
    return 2;
  }
  void *lib = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
  quantize_chunk_fn qc = lib ? (quantize_chunk_fn)(uintptr_t)dlsym(lib, "ggml_quantize_chunk") : NULL;
  if (!qc) {
    fprintf(stderr, "%s: %s\n", argv[2], dlerror());
    return 1;
  }
  uint32_t types[16];
  int nt = 0, every = 8;
  static const uint32_t all[] = {FG_TYPE_Q4_1, FG_TYPE_Q5_0, FG_TYPE_Q5_1, FG_TYPE_Q2_K,   FG_TYPE_Q3_K,
                                 FG_TYPE_Q4_K, FG_TYPE_Q5_K, FG_TYPE_Q6_K, FG_TYPE_IQ4_NL, FG_TYPE_IQ4_XS};
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--every") == 0 && i + 1 < argc) {
      every = atoi(argv[++i]);
      continue;
    }
    for (uint32_t t = 0; t < FG_TYPE_COUNT; t++)
      if (fg_type_traits_get(t) && strcmp(fg_type_name(t), argv[i]) == 0 && nt < 16) types[nt++] = t;
  }
  if (!nt)
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) types[nt++] = all[i];
  fg_error err = {0};
  fg_mapfile ms;
  fg_gguf g;
  if (fg_mapfile_open(argv[1], true, &ms, &err) != FG_OK || fg_gguf_parse(ms.data, ms.size, &g, &err) != FG_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], err.msg);
    return 1;
  }
  printf("type\tvalues\trmse_fgemma\trmse_ggml\trmse_reference\tfgemma/ggml\n");
  for (int k = 0; k < nt; k++) {
    const uint32_t t = types[k];
    const size_t bs = fg_type_traits_get(t)->block_size;
    double e[3] = {0};
    uint64_t count = 0;
    for (size_t i = 0; i < g.n_tensors; i++) {
      const fg_gguf_tensor *s = &g.tensors[i];
      if (s->n_dims < 2 || s->ne[1] < 2 || s->ne[0] % bs) continue;
      const size_t n = (size_t)s->ne[0], rows = (size_t)(s->ne[1] * s->ne[2] * s->ne[3]);
      uint64_t srb, qrb;
      if (!fg_type_row_bytes(s->type, n, &srb) || !fg_type_row_bytes(t, n, &qrb)) continue;
      float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
      uint8_t *q = malloc(qrb);
      for (size_t r = 0; r < rows; r += (size_t)every) {
        fg_dequantize_row(s->type, s->data + r * srb, x, n);
        for (int m = 0; m < 3; m++) {
          if (m == 0) fg_quantize_row_searched(t, x, q, n);
          else if (m == 1) qc((int)t, x, q, 0, 1, (int64_t)n, NULL);
          else fg_quantize_row(t, x, q, n);
          fg_dequantize_row(t, q, y, n);
          for (size_t j = 0; j < n; j++) e[m] += ((double)y[j] - x[j]) * ((double)y[j] - x[j]);
        }
        count += n;
      }
      free(x);
      free(y);
      free(q);
    }
    if (!count) continue;
    const double r0 = sqrt(e[0] / (double)count), r1 = sqrt(e[1] / (double)count), r2 = sqrt(e[2] / (double)count);
    printf("%s\t%llu\t%.5e\t%.5e\t%.5e\t%.4f\n", fg_type_name(t), (unsigned long long)count, r0, r1, r2, r0 / r1);
    fflush(stdout);
  }
  fg_gguf_clear(&g);
  fg_mapfile_close(&ms);
  return 0;
}
