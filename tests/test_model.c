/* test_model.c — model loading (hyper-parameters, binding, errors that name the culprit) and
 * invariants of the reference forward pass. */
#include "model/model.h"
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>

// ----------------------------------------------------------------------------------------------
// Rewriting a GGUF with one change, to make broken models

typedef struct edit {
  const char *drop_tensor;   /* omit this tensor */
  const char *reshape;       /* give this tensor ne[1] + 32 (data padded) */
  const char *arch;          /* replace general.architecture */
  const char *retype_norm;   /* write this f32 tensor as f16 */
  const char *drop_key;      /* omit this metadata key */
} edit;

static int rewrite(const char *src, const char *dst, const edit *e) {
  fg_mapfile mf;
  fg_gguf g;
  if (fg_mapfile_open(src, true, &mf, NULL) != FG_OK || fg_gguf_parse(mf.data, mf.size, &g, NULL) != FG_OK) return 1;
  fg_gguf_writer *w = fg_gguf_writer_create();
  for (size_t i = 0; i < g.n_kv; i++) {
    const fg_gguf_kv *kv = &g.kv[i];
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
    if (e->drop_key && strcmp(key, e->drop_key) == 0) continue;
    switch (kv->type) {
      case FG_GGUF_UINT32: fg_gguf_writer_set_u32(w, key, (uint32_t)kv->v.u64); break;
      case FG_GGUF_INT32: fg_gguf_writer_set_i32(w, key, (int32_t)kv->v.i64); break;
      case FG_GGUF_FLOAT32: fg_gguf_writer_set_f32(w, key, (float)kv->v.f64); break;
      case FG_GGUF_BOOL: fg_gguf_writer_set_bool(w, key, kv->v.b); break;
      case FG_GGUF_STRING: {
        char *v = strndup(kv->str.ptr, kv->str.len);
        fg_gguf_writer_set_str(w, key, strcmp(key, "general.architecture") == 0 && e->arch ? e->arch : v);
        free(v);
      } break;
      case FG_GGUF_ARRAY:
        if (kv->arr_type == FG_GGUF_STRING) {
          fg_gguf_str *s;
          fg_gguf_str_array(kv, &s, NULL);
          const char **p = malloc(sizeof *p * kv->arr_n);
          size_t *l = malloc(sizeof *l * kv->arr_n);
          for (uint64_t j = 0; j < kv->arr_n; j++) p[j] = s[j].ptr, l[j] = s[j].len;
          fg_gguf_writer_set_arr_str(w, key, p, l, kv->arr_n);
          fg_free(s);
          free(p);
          free(l);
        } else {
          fg_gguf_writer_set_arr(w, key, kv->arr_type, kv->arr_data, kv->arr_n);
        }
        break;
      default: break; /* the generator writes no other types */
    }
  }
  for (size_t i = 0; i < g.n_tensors; i++) {
    const fg_gguf_tensor *t = &g.tensors[i];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
    if (e->drop_tensor && strcmp(name, e->drop_tensor) == 0) continue;
    uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    uint32_t type = t->type;
    if (e->reshape && strcmp(name, e->reshape) == 0) ne[1] += 32;
    if (e->retype_norm && strcmp(name, e->retype_norm) == 0) type = FG_TYPE_F16;
    fg_gguf_writer_add_tensor(w, name, type, t->n_dims, ne);
  }
  FILE *f = fopen(dst, "wb");
  int rc = fg_gguf_writer_begin(w, f, NULL) != FG_OK;
  for (size_t i = 0; i < g.n_tensors && !rc; i++) {
    const fg_gguf_tensor *t = &g.tensors[i];
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
    if (e->drop_tensor && strcmp(name, e->drop_tensor) == 0) continue;
    size_t nbytes = (size_t)t->nbytes;
    if (e->reshape && strcmp(name, e->reshape) == 0) nbytes = nbytes / t->ne[1] * (t->ne[1] + 32);
    if (e->retype_norm && strcmp(name, e->retype_norm) == 0) nbytes /= 2;
    void *buf = calloc(1, nbytes);
    memcpy(buf, t->data, FG_MIN(nbytes, (size_t)t->nbytes));
    rc = fg_gguf_writer_tensor_data(w, f, buf, nbytes, NULL) != FG_OK;
    free(buf);
  }
  if (!rc) rc = fg_gguf_writer_end(w, f, NULL) != FG_OK;
  fclose(f);
  fg_gguf_writer_free(w);
  fg_gguf_clear(&g);
  fg_mapfile_close(&mf);
  return rc;
}

static void expect_load_error(const char *src, const edit *e, fg_status want, const char *needle) {
  char dst[512];
  snprintf(dst, sizeof dst, "%s/test_model_bad_%d.gguf", FG_TEST_MODELS, (int)getpid());
  CHECK_EQ_INT(rewrite(src, dst, e), 0);
  fg_model *m = (fg_model *)1;
  fg_error err = {0};
  fg_status st = fg_model_load(dst, NULL, &m, &err);
  CHECK_MSG(st == want, "status %d (%s), want %d; message: %s", (int)st, fg_status_str(st), (int)want, err.msg);
  CHECK(m == NULL);
  CHECK_MSG(strstr(err.msg, needle) != NULL, "message '%s' does not name '%s'", err.msg, needle);
  remove(dst);
}

static void test_load_errors(const char *good) {
  expect_load_error(good, &(edit){.arch = "llama"}, FG_ERR_UNSUPPORTED, "llama");
  expect_load_error(good, &(edit){.drop_tensor = "blk.3.ffn_up.weight"}, FG_ERR_FORMAT, "blk.3.ffn_up.weight");
  expect_load_error(good, &(edit){.reshape = "blk.2.attn_q.weight"}, FG_ERR_FORMAT, "blk.2.attn_q.weight");
  expect_load_error(good, &(edit){.retype_norm = "blk.1.attn_norm.weight"}, FG_ERR_UNSUPPORTED, "blk.1.attn_norm.weight");
  expect_load_error(good, &(edit){.drop_key = "gemma3.block_count"}, FG_ERR_FORMAT, "gemma3.block_count");
  expect_load_error(good, &(edit){.drop_tensor = "output_norm.weight"}, FG_ERR_FORMAT, "output_norm.weight");
  fg_model *m = (fg_model *)1;
  fg_error err;
  CHECK_EQ_INT(fg_model_load("/nonexistent/model.gguf", NULL, &m, &err), FG_ERR_IO);
  CHECK(m == NULL);
  CHECK(strstr(err.msg, "/nonexistent/model.gguf") != NULL);
  CHECK_EQ_INT(fg_model_load(NULL, NULL, &m, &err), FG_ERR_INVALID_ARG);
  fg_model_free(NULL);
}

// ----------------------------------------------------------------------------------------------
// Hyper-parameters and the reference forward

static void test_hparams(const fg_model *m) {
  const fg_hparams *hp = &m->hp;
  CHECK_EQ_INT(hp->n_layer, 6);
  CHECK_EQ_INT(hp->sliding_window, 8);
  for (uint32_t il = 0; il < hp->n_layer; il++) CHECK_EQ_INT(m->layers[il].is_swa, il != 5);
  CHECK_NEAR(m->layers[0].rope_base, 10000.0, 1e-3);
  CHECK_NEAR(m->layers[5].rope_base, 1e6, 1.0);
  CHECK_NEAR(hp->attn_scale, 1.0 / sqrt((double)hp->head_dim_k), 1e-7);
  fg_model_info in;
  CHECK_OK(fg_model_get_info(m, &in));
  CHECK_EQ_INT(in.n_global_layers, 1);
  CHECK(in.tied_head);
  /* embedding = row * sqrt(n_embd) */
  float *e = malloc(sizeof(float) * hp->n_embd), *row = malloc(sizeof(float) * hp->n_embd);
  fg_model_embed(m, 7, e);
  fg_dequantize_row(m->tok_embd.type, (const uint8_t *)m->tok_embd.data + 7 * m->tok_embd.row_bytes, row, hp->n_embd);
  for (uint32_t i = 0; i < hp->n_embd; i++) CHECK_NEAR(e[i], row[i] * sqrtf((float)hp->n_embd), 1e-5);
  free(e);
  free(row);
}

static void test_reference_invariants(const fg_model *m) {
  const uint32_t V = m->hp.n_vocab;
  enum { N = 30 };
  int32_t a[N], b[N];
  for (int i = 0; i < N; i++) a[i] = b[i] = 4 + (i * 37) % (int)(V - 4);
  for (int i = 20; i < N; i++) b[i] = 4 + (i * 11) % (int)(V - 4);
  size_t at[3] = {5, 19, 29};
  float *la = malloc(sizeof(float) * 3 * V), *lb = malloc(sizeof(float) * 3 * V), *l1 = malloc(sizeof(float) * V);
  fg_error err;
  CHECK_OK(fg_ref_forward(m, a, NULL, N, at, 3, la, &err));
  CHECK_OK(fg_ref_forward(m, b, NULL, N, at, 3, lb, &err));
  /* causality: positions before the first difference agree exactly */
  CHECK(memcmp(la, lb, sizeof(float) * 2 * V) == 0);
  CHECK(memcmp(la + 2 * V, lb + 2 * V, sizeof(float) * V) != 0);
  /* a prefix run gives the same logits as the longer run at that position */
  size_t p19 = 19;
  CHECK_OK(fg_ref_forward(m, a, NULL, 20, &p19, 1, l1, &err));
  CHECK(memcmp(l1, la + V, sizeof(float) * V) == 0);
  /* peaked: the generator promises a clear top-1 margin */
  int margin_ok = 0;
  for (int k = 0; k < 3; k++) {
    const float *l = la + (size_t)k * V;
    int32_t top = fg_argmax(l, V);
    float second = -INFINITY;
    for (uint32_t j = 0; j < V; j++)
      if ((int32_t)j != top && l[j] > second) second = l[j];
    margin_ok += l[top] - second > 0.05f;
  }
  CHECK(margin_ok >= 2);
  /* bad input */
  int32_t bad[2] = {1, (int32_t)V};
  CHECK_EQ_INT(fg_ref_forward(m, bad, NULL, 2, at, 0, la, &err), FG_ERR_INVALID_ARG);
  size_t far = 7;
  CHECK_EQ_INT(fg_ref_forward(m, a, NULL, 3, &far, 1, la, &err), FG_ERR_INVALID_ARG);
  free(la);
  free(lb);
  free(l1);
}

int main(void) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  const char *path = fg_test_model_path("tiny-f32.gguf");
  char good[512];
  snprintf(good, sizeof good, "%s", path);
  fg_model *m = NULL;
  fg_error err;
  if (fg_model_load(good, NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "load: %s\n", err.msg);
    return 1;
  }
  test_hparams(m);
  test_reference_invariants(m);
  fg_model_free(m);
  test_load_errors(good);
  /* every weight type loads and runs */
  const char *types[] = {"f16", "bf16", "q8_0", "q4_0"};
  for (size_t i = 0; i < 4; i++) {
    char file[64];
    snprintf(file, sizeof file, "tiny-%s.gguf", types[i]);
    CHECK_EQ_INT(fg_test_ensure_model(file, "tiny", types[i], 1), 0);
    fg_model *q = NULL;
    CHECK_OK(fg_model_load(fg_test_model_path(file), NULL, &q, &err));
    if (!q) continue;
    int32_t ids[4] = {2, 10, 20, 30}, out[4];
    CHECK_OK(fg_ref_generate(q, ids, 4, 4, out, &err));
    fg_model_free(q);
  }
  return fg_test_finish("test_model");
}
