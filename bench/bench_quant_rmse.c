/* bench_quant_rmse — the weight error of quantized GGUFs against their F32 source, per GGML type.
 *
 *   bench_quant_rmse SOURCE.gguf QUANT.gguf [QUANT.gguf ...]
 *
 * For every tensor of QUANT that SOURCE has with the same shape: its rows dequantized exactly
 * (fg_dequantize_row) against SOURCE's values (dequantized too, so SOURCE may be any type). Prints one
 * line per (file, type): the elements, the RMSE and the relative error sqrt(sum e^2 / sum x^2).
 * Tensors whose bytes equal the source's type (norms, an unchanged F32) are left out. Used by
 * bench/quant-quality/run.sh. */
#include "gguf/gguf.h"
#include "tensor/dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fg_gguf_tensor *find(const fg_gguf *g, fg_gguf_str name) {
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].name.len == name.len && memcmp(g->tensors[i].name.ptr, name.ptr, name.len) == 0)
      return &g->tensors[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_quant_rmse SOURCE.gguf QUANT.gguf [QUANT.gguf ...]\n");
    return 2;
  }
  fg_error err = {0};
  fg_mapfile ms;
  fg_gguf gs;
  if (fg_mapfile_open(argv[1], true, &ms, &err) != FG_OK || fg_gguf_parse(ms.data, ms.size, &gs, &err) != FG_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], err.msg);
    return 1;
  }
  printf("file\ttype\telements\trmse\trel\n");
  for (int f = 2; f < argc; f++) {
    fg_mapfile mq;
    fg_gguf gq;
    if (fg_mapfile_open(argv[f], true, &mq, &err) != FG_OK || fg_gguf_parse(mq.data, mq.size, &gq, &err) != FG_OK) {
      fprintf(stderr, "%s: %s\n", argv[f], err.msg);
      return 1;
    }
    double se[FG_TYPE_COUNT] = {0}, sx[FG_TYPE_COUNT] = {0};
    uint64_t ne[FG_TYPE_COUNT] = {0};
    for (size_t i = 0; i < gq.n_tensors; i++) {
      const fg_gguf_tensor *q = &gq.tensors[i], *s = find(&gs, q->name);
      if (!s || q->type == s->type || q->type >= FG_TYPE_COUNT || memcmp(q->ne, s->ne, sizeof q->ne) != 0) continue;
      const size_t n = (size_t)q->ne[0], rows = (size_t)(q->ne[1] * q->ne[2] * q->ne[3]);
      uint64_t qrb, srb;
      if (!fg_type_row_bytes(q->type, n, &qrb) || !fg_type_row_bytes(s->type, n, &srb)) continue;
      float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
      for (size_t r = 0; r < rows; r++) {
        fg_dequantize_row(s->type, s->data + r * srb, a, n);
        fg_dequantize_row(q->type, q->data + r * qrb, b, n);
        for (size_t j = 0; j < n; j++) {
          const double e = (double)b[j] - (double)a[j];
          se[q->type] += e * e;
          sx[q->type] += (double)a[j] * (double)a[j];
        }
      }
      ne[q->type] += (uint64_t)n * rows;
      free(a);
      free(b);
    }
    for (uint32_t t = 0; t < FG_TYPE_COUNT; t++)
      if (ne[t])
        printf("%s\t%s\t%llu\t%.6e\t%.6e\n", argv[f], fg_type_name(t), (unsigned long long)ne[t], sqrt(se[t] / (double)ne[t]),
               sx[t] > 0 ? sqrt(se[t] / sx[t]) : 0.0);
    fg_gguf_clear(&gq);
    fg_mapfile_close(&mq);
  }
  fg_gguf_clear(&gs);
  fg_mapfile_close(&ms);
  return 0;
}
