/* test_convert_peft.c — `fgemma convert ADAPTER_DIR`: a PEFT LoRA adapter to a GGUF LoRA adapter.
 *   1. the parts, as pure functions: tensor names (plain, both multimodal prefixes, vision tower, every
 *      kind PEFT writes), adapter_config.json (what is accepted, each refusal with its key), the
 *      vocabulary override file;
 *   2. adapters written here in C (safetensors and config): keys, names, shapes and bytes of the GGUF,
 *      bit for bit, from F32, F16 and BF16 sources, with --type f32/f16/bf16/q8_0 (Q8_0 rows of fewer
 *      than 32 values become F16), mixed dtypes, the rsLoRA alpha, rank_pattern, the multimodal names,
 *      the vocabulary override, --base (shapes, architecture, vocabulary);
 *   3. every refusal (status, a message naming the file / key / tensor, no output and no temporary file
 *      left): DoRA, modules_to_save, embedding and lm_head targets, biases, mismatched ranks, missing
 *      pairs, non-finite values, F16 overflow, other PEFT methods, bad types, --base mismatches;
 *      cancelling; every allocation failing once;
 *   4. the adapters of tests/data/peft, saved by PEFT itself (tools/hf/make_peft_fixtures.py): the GGUF
 *      holds their bytes; and with each adapter merged into the base GGUF (W + alpha / rank * B A, from
 *      the converted file), fgemma's reference forward matches PEFT's logits
 *      (tests/data/peft/peft_goldens.json) within 1e-4 relative L-inf, with the same greedy ids. */
#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "convert/peft.h"
#include "convert/safetensors.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GOLDEN_TOL 1e-4
#define PEFT_DATA FG_SOURCE_DIR "/tests/data/peft"

static char g_dir[1024];

/* the tiny preset's dimensions (gen-model "tiny"): E n_embd, Q n_head * head_dim, K n_head_kv * head_dim,
 * F n_ff */
static uint64_t dim(char letter) {
  switch (letter) {
    case 'E': return 64;
    case 'Q': return 128;
    case 'K': return 32;
    default: return 128;
  }
}

// ----------------------------------------------------------------------------------------------------
// Files


/* Nothing named out_path or out_path.tmp* is left in its directory. */
static bool no_output_left(const char *out_path) {
  if (fg_test_exists(out_path)) return false;
  char dir[2048];
  snprintf(dir, sizeof dir, "%s", out_path);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : out_path;
  if (slash) *slash = '\0';
  DIR *d = opendir(slash ? dir : ".");
  bool clean = true;
  const size_t bl = strlen(base);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strncmp(e->d_name, base, bl) == 0) clean = false;
  if (d) closedir(d);
  return clean;
}

static const char *scratch(const char *name) {
  static char buf[16][2048];
  static int k;
  k = (k + 1) % 16;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
  return buf[k];
}

/* the refusals' adapter: a long directory name, so that messages naming the path are tested for
 * fitting in fg_error wherever the checkout lies */
#define BAD_ADAPTER "bad-adapter-in-a-directory-with-a-long-name-as-checkouts-in-ci-and-home-folders-have"

// ----------------------------------------------------------------------------------------------------
// PEFT directories written by the test

typedef struct st_t {
  char name[160];
  const char *dtype; /* "F32", "F16", "BF16", "I32", ... */
  uint32_t n_dims;
  uint64_t shape[2];
  uint8_t *data;
  size_t nbytes;
} st_t;

typedef struct adapter {
  st_t t[96];
  size_t n;
} adapter;

static uint64_t g_rng;
static float rnd(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static size_t esize(const char *dtype) { return strcmp(dtype, "F32") == 0 || strcmp(dtype, "I32") == 0 ? 4 : 2; }

/* a rows x cols tensor of random values (stored as dtype) */
static st_t *add_tensor(adapter *a, const char *name, const char *dtype, uint64_t rows, uint64_t cols) {
  st_t *t = &a->t[a->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->dtype = dtype;
  t->n_dims = 2;
  t->shape[0] = rows;
  t->shape[1] = cols;
  const size_t n = (size_t)(rows * cols), es = esize(dtype);
  t->nbytes = n * es;
  t->data = malloc(t->nbytes ? t->nbytes : 1);
  for (size_t i = 0; i < n; i++) {
    const float v = rnd() * 0.5f;
    if (es == 4) {
      memcpy(t->data + 4 * i, &v, 4);
    } else {
      const uint16_t h = strcmp(dtype, "F16") == 0 ? fg_f32_to_fp16(v) : fg_f32_to_bf16(v);
      memcpy(t->data + 2 * i, &h, 2);
    }
  }
  return t;
}

/* one LoRA pair: <prefix>layers.L.<module path>.lora_A.weight [rank, in] and .lora_B.weight [out, rank] */
static void add_pair(adapter *a, const char *prefix, uint32_t layer, uint32_t module, uint64_t rank, const char *da,
                     const char *db) {
  const fg_lora_target *m = &fg_lora_targets[module];
  char name[160];
  snprintf(name, sizeof name, "%slayers.%u.%s.lora_A.weight", prefix, layer, m->path);
  add_tensor(a, name, da, rank, dim(m->in));
  snprintf(name, sizeof name, "%slayers.%u.%s.lora_B.weight", prefix, layer, m->path);
  add_tensor(a, name, db, dim(m->out), rank);
}

#define PLAIN "base_model.model.model."

/* every module of layers 0 and 3 */
static void add_all(adapter *a, const char *prefix, uint64_t rank, const char *dtype) {
  for (uint32_t l = 0; l < 6; l += 3)
    for (uint32_t m = 0; m < FG_LORA_N_TARGETS; m++) add_pair(a, prefix, l, m, rank, dtype, dtype);
}

static void free_adapter(adapter *a) {
  for (size_t i = 0; i < a->n; i++) free(a->t[i].data);
  a->n = 0;
}

static st_t *find(adapter *a, const char *name) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->t[i].name, name) == 0) return &a->t[i];
  return NULL;
}

/* adapter_config.json with r, lora_alpha and `extra` ("\"key\": value, " pairs, first: cJSON finds the
 * first of two equal keys, so they win over the defaults) */
static void config_text(char *buf, size_t cap, uint32_t r, double alpha, const char *extra) {
  snprintf(buf, cap,
           "{%s\"peft_type\": \"LORA\", \"task_type\": \"CAUSAL_LM\", \"r\": %u, \"lora_alpha\": %g, \"lora_dropout\": 0.05,"
           " \"target_modules\": [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"],"
           " \"base_model_name_or_path\": \"google/functiongemma-270m-it\", \"peft_version\": \"0.17.1\", \"bias\": \"none\","
           " \"modules_to_save\": null, \"use_dora\": false, \"fan_in_fan_out\": false, \"rank_pattern\": {},"
           " \"alpha_pattern\": {}}",
           extra ? extra : "", r, alpha);
}

static void write_adapter(const char *dir, const adapter *a, uint32_t r, double alpha, const char *extra) {
  fg_test_rm_rf(dir);
  CHECK_MSG(mkdir(dir, 0777) == 0, "mkdir %s: %s", dir, strerror(errno));
  char cfg[4096], path[2400];
  config_text(cfg, sizeof cfg, r, alpha, extra);
  snprintf(path, sizeof path, "%s/adapter_config.json", dir);
  CHECK(fg_test_write_file(path, cfg, strlen(cfg)));
  /* safetensors: u64 header length, the header (spaces to a multiple of 8), the data in order */
  size_t cap = 256 + a->n * 256, hl = 0, off = 0;
  char *h = malloc(cap);
  hl += (size_t)snprintf(h + hl, cap - hl, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (size_t i = 0; i < a->n; i++) {
    const st_t *t = &a->t[i];
    char shape[64];
    if (t->n_dims == 1) snprintf(shape, sizeof shape, "%llu", (unsigned long long)(t->shape[0] * t->shape[1]));
    else snprintf(shape, sizeof shape, "%llu,%llu", (unsigned long long)t->shape[0], (unsigned long long)t->shape[1]);
    hl += (size_t)snprintf(h + hl, cap - hl, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}",
                           t->name, t->dtype, shape, off, off + t->nbytes);
    off += t->nbytes;
  }
  hl += (size_t)snprintf(h + hl, cap - hl, "}");
  while (hl % 8) h[hl++] = ' ';
  const size_t total = 8 + hl + off;
  uint8_t *b = malloc(total);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  memcpy(b + 8, h, hl);
  size_t p = 8 + hl;
  for (size_t i = 0; i < a->n; i++) {
    memcpy(b + p, a->t[i].data, a->t[i].nbytes);
    p += a->t[i].nbytes;
  }
  snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
  CHECK(fg_test_write_file(path, b, total));
  free(b);
  free(h);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char path[2400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CHECK(fg_test_write_file(path, text, strlen(text)));
}

static fg_status convert(const char *in, const char *out, uint32_t type, const char *base, fg_error *err) {
  fg_convert_params p;
  fg_convert_params_init(&p);
  p.type = type;
  p.base = base;
  memset(err, 0, sizeof *err);
  return fg_convert(in, out, &p, err);
}

// ----------------------------------------------------------------------------------------------------
// A parsed GGUF kept with its bytes

typedef struct gfile {
  char *data;
  size_t size;
  fg_gguf g;
  bool ok;
} gfile;

static void gload(const char *path, gfile *f) {
  memset(f, 0, sizeof *f);
  f->data = fg_test_read_file(path, &f->size);
  CHECK_MSG(f->data != NULL, "cannot read %s", path);
  if (!f->data) return;
  fg_error err;
  f->ok = fg_gguf_parse((const uint8_t *)f->data, f->size, &f->g, &err) == FG_OK;
  CHECK_MSG(f->ok, "%s: %s", path, err.msg);
}

static void gfree(gfile *f) {
  if (f->ok) fg_gguf_clear(&f->g);
  free(f->data);
  memset(f, 0, sizeof *f);
}

static bool kv_str_is(const gfile *f, const char *key, const char *want) {
  fg_gguf_str s;
  return f->ok && fg_gguf_get_str(&f->g, key, &s, NULL) == FG_OK && fg_gguf_str_eq(s, want);
}

static float kv_f32(const gfile *f, const char *key) {
  const fg_gguf_kv *kv = f->ok ? fg_gguf_find_kv(&f->g, key) : NULL;
  CHECK_MSG(kv && kv->type == FG_GGUF_FLOAT32, "%s: not an f32 key", key);
  return kv && kv->type == FG_GGUF_FLOAT32 ? (float)kv->v.f64 : NAN;
}

static uint32_t st_type(const char *dtype) {
  return strcmp(dtype, "F32") == 0 ? FG_TYPE_F32 : strcmp(dtype, "F16") == 0 ? FG_TYPE_F16 : FG_TYPE_BF16;
}

/* The GGUF tensor `name` holds PEFT tensor src (rows x cols of src_type at data) as out_type: ne
 * {cols, rows}; the same bytes when the type is kept, else each row dequantized exactly and quantized
 * with the reference quantizer. */
static void check_tensor(const char *what, const gfile *f, const char *name, const uint8_t *data, uint32_t src_type,
                         uint64_t rows, uint64_t cols, uint32_t out_type) {
  const fg_gguf_tensor *t = f->ok ? fg_gguf_find_tensor(&f->g, name) : NULL;
  CHECK_MSG(t != NULL, "%s: no tensor %s", what, name);
  if (!t) return;
  CHECK_MSG(t->n_dims == 2 && t->ne[0] == cols && t->ne[1] == rows && t->type == out_type,
            "%s: %s is %s {%llu, %llu} (%u dims), want %s {%llu, %llu}", what, name, fg_type_name(t->type),
            (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], t->n_dims, fg_type_name(out_type),
            (unsigned long long)cols, (unsigned long long)rows);
  if (t->type != out_type || t->ne[0] != cols || t->ne[1] != rows) return;
  uint64_t srb = 0, orb = 0;
  fg_type_row_bytes(src_type, cols, &srb);
  fg_type_row_bytes(out_type, cols, &orb);
  CHECK_EQ_INT(t->nbytes, orb * rows);
  if (src_type == out_type) {
    CHECK_MSG(memcmp(t->data, data, (size_t)t->nbytes) == 0, "%s: %s: bytes differ from the source", what, name);
    return;
  }
  float *row = malloc((size_t)cols * sizeof *row);
  uint8_t *q = malloc((size_t)orb);
  bool same = true;
  for (uint64_t r = 0; r < rows && same; r++) {
    fg_dequantize_row(src_type, data + r * srb, row, (size_t)cols);
    fg_quantize_row(out_type, row, q, (size_t)cols);
    same = memcmp(q, t->data + r * orb, (size_t)orb) == 0;
    CHECK_MSG(same, "%s: %s: row %llu differs from %s of the source row", what, name, (unsigned long long)r,
              fg_type_name(out_type));
  }
  free(row);
  free(q);
}

/* every pair of adapter a (names with module paths) in GGUF f, as out_type (Q8_0 falls back to F16 for
 * rows that are not a multiple of 32); the tensor count matches */
static void check_adapter(const char *what, const gfile *f, adapter *a, uint32_t out_type) {
  size_t n = 0;
  for (size_t i = 0; i < a->n; i++) {
    const st_t *t = &a->t[i];
    const fg_peft_name nm = fg_peft_name_parse(t->name);
    if (nm.kind != FG_PEFT_LORA_A && nm.kind != FG_PEFT_LORA_B) continue;
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s.weight.lora_%c", nm.layer, fg_lora_targets[nm.module].gguf,
             nm.kind == FG_PEFT_LORA_A ? 'a' : 'b');
    const uint32_t want = out_type == UINT32_MAX ? st_type(t->dtype) : fg_type_fallback(out_type, t->shape[1]);
    check_tensor(what, f, name, t->data, st_type(t->dtype), t->shape[0], t->shape[1], want);
    n++;
  }
  CHECK_MSG(f->ok && f->g.n_tensors == n, "%s: %zu tensors, want %zu", what, f->ok ? f->g.n_tensors : 0, n);
}

// ----------------------------------------------------------------------------------------------------
// 1. The parts

static void test_names(void) {
  static const struct {
    const char *name;
    fg_peft_kind kind;
    uint32_t layer;
    const char *module; /* fg_lora_targets[].hf for LORA_A/B */
  } cases[] = {
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", FG_PEFT_LORA_A, 0, "q_proj"},
      {"base_model.model.model.layers.17.mlp.down_proj.lora_B.weight", FG_PEFT_LORA_B, 17, "down_proj"},
      {"base_model.model.model.layers.3.self_attn.o_proj.lora_A.weight", FG_PEFT_LORA_A, 3, "o_proj"},
      {"base_model.model.model.layers.3.mlp.gate_proj.lora_B.weight", FG_PEFT_LORA_B, 3, "gate_proj"},
      {"base_model.model.model.language_model.layers.5.self_attn.k_proj.lora_A.weight", FG_PEFT_LORA_A, 5, "k_proj"},
      {"base_model.model.language_model.model.layers.2.mlp.up_proj.lora_B.weight", FG_PEFT_LORA_B, 2, "up_proj"},
      {"model.layers.1.self_attn.v_proj.lora_A.weight", FG_PEFT_LORA_A, 1, "v_proj"}, /* without the PEFT wrapper */
      {"base_model.model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight", FG_PEFT_VISION, 0, NULL},
      {"base_model.model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.lora_B.weight", FG_PEFT_VISION, 0, NULL},
      {"base_model.model.model.multi_modal_projector.mm_input_projection.lora_A.weight", FG_PEFT_VISION, 0, NULL},
      {"base_model.model.model.embed_tokens.lora_embedding_A", FG_PEFT_EMBEDDING, 0, NULL},
      {"base_model.model.model.embed_tokens.lora_A.weight", FG_PEFT_EMBEDDING, 0, NULL},
      {"base_model.model.lm_head.lora_A.weight", FG_PEFT_LM_HEAD, 0, NULL},
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector", FG_PEFT_DORA, 0, NULL},
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias", FG_PEFT_BIAS, 0, NULL},
      {"base_model.model.model.layers.0.self_attn.q_proj.bias", FG_PEFT_BIAS, 0, NULL},
      {"base_model.model.lm_head.weight", FG_PEFT_FULL, 0, NULL},
      {"base_model.model.model.embed_tokens.weight", FG_PEFT_FULL, 0, NULL},
      {"base_model.model.model.layers.0.input_layernorm.weight", FG_PEFT_FULL, 0, NULL},
      {"base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta", FG_PEFT_FULL, 0, NULL},
      {"base_model.model.model.layers.4.self_attn.q_norm.lora_A.weight", FG_PEFT_OTHER_MODULE, 4, NULL},
      {"base_model.model.model.layers.4.q_proj.lora_A.weight", FG_PEFT_OTHER_MODULE, 4, NULL},
      {"base_model.model.model.layers.01.self_attn.q_proj.lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"base_model.model.model.layers.x.self_attn.q_proj.lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"base_model.model.model.layers.1234567.self_attn.q_proj.lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"base_model.model.transformer.h.0.attn.c_attn.lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", FG_PEFT_FULL, 0, NULL},
      {"", FG_PEFT_UNKNOWN, 0, NULL},
      {".lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"model..lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
      {"model.layers.2.lora_A.weight", FG_PEFT_UNKNOWN, 0, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const fg_peft_name nm = fg_peft_name_parse(cases[i].name);
    CHECK_MSG(nm.kind == cases[i].kind, "'%s': kind %d, want %d", cases[i].name, (int)nm.kind, (int)cases[i].kind);
    if (nm.kind != cases[i].kind) continue;
    if (nm.kind == FG_PEFT_LORA_A || nm.kind == FG_PEFT_LORA_B || nm.kind == FG_PEFT_OTHER_MODULE)
      CHECK_MSG(nm.layer == cases[i].layer, "'%s': layer %u, want %u", cases[i].name, nm.layer, cases[i].layer);
    if (cases[i].module)
      CHECK_MSG(nm.module < FG_LORA_N_TARGETS && strcmp(fg_lora_targets[nm.module].hf, cases[i].module) == 0,
                "'%s': module %u", cases[i].name, nm.module);
  }
}

static void config_expect(const char *json, fg_status want, const char *words) {
  fg_peft_config c;
  fg_error err = {0};
  const fg_status st = fg_peft_config_parse(json, strlen(json), "adapter_config.json", &c, &err);
  CHECK_MSG(st == want, "%s: %s, want %s (%s)", json, fg_status_str(st), fg_status_str(want), err.msg);
  if (want != FG_OK && words)
    CHECK_MSG(strstr(err.msg, words) && strstr(err.msg, "adapter_config.json"), "%s: message \"%s\" lacks \"%s\"", json,
              err.msg, words);
}

static void test_config(void) {
  char buf[4096];
  fg_peft_config c;
  fg_error err;
  config_text(buf, sizeof buf, 16, 32, "\"use_rslora\": true, \"rank_pattern\": {\"o_proj\": 8}, ");
  CHECK_OK(fg_peft_config_parse(buf, strlen(buf), "x", &c, &err));
  CHECK(c.r == 16 && c.alpha == 32.0 && c.rslora && c.n_rank_pattern == 1 && c.n_alpha_pattern == 0 &&
        strcmp(c.base_model, "google/functiongemma-270m-it") == 0 && strcmp(c.peft_version, "0.17.1") == 0);
  CHECK(c.n_rank_pattern == 1 && strcmp(c.rank_pattern[0].key, "o_proj") == 0 && c.rank_pattern[0].value == 8.0);
  fg_peft_config_clear(&c);
  fg_peft_config_clear(&c);
  fg_peft_config_clear(NULL);
  config_text(buf, sizeof buf, 8, 0.5, "\"alpha_pattern\": {\"layers.0.self_attn.q_proj\": 2, \"q_proj\": 1.5}, ");
  CHECK_OK(fg_peft_config_parse(buf, strlen(buf), "x", &c, &err));
  CHECK(c.r == 8 && c.alpha == 0.5 && !c.rslora && c.n_rank_pattern == 0 && c.n_alpha_pattern == 2);
  /* PEFT's pattern lookup: the first key matching the module's end at a '.' */
  double v;
  CHECK(fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "model.layers.0.self_attn.q_proj", 0.5, &v) && v == 2.0);
  CHECK(fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "model.layers.10.self_attn.q_proj", 0.5, &v) && v == 1.5);
  CHECK(fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "q_proj", 0.5, &v) && v == 1.5);
  CHECK(fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "model.layers.0.self_attn.xq_proj", 0.5, &v) && v == 0.5);
  CHECK(fg_peft_pattern_get(c.alpha_pattern, c.n_alpha_pattern, "model.layers.0.self_attn.k_proj", 0.5, &v) && v == 0.5);
  CHECK(fg_peft_pattern_get(NULL, 0, "model.layers.0.self_attn.k_proj", 4, &v) && v == 4.0);
  fg_peft_config_clear(&c);
  const fg_peft_pattern rx[] = {{(char *)"o_proj", 2}, {(char *)"layers\\.[0-3]\\..*q_proj", 8}, {(char *)"k_proj", 1}};
  CHECK(fg_peft_pattern_get(rx, 3, "model.layers.1.self_attn.o_proj", 4, &v) && v == 2.0);
  CHECK(!fg_peft_pattern_get(rx, 3, "model.layers.1.self_attn.k_proj", 4, &v)); /* the regex comes first */
  char key[64];
  fg_peft_module_key("base_model.model.model.language_model.layers.3.mlp.up_proj.lora_B.weight", key, sizeof key);
  CHECK(strcmp(key, "model.language_model.layers.3.mlp.up_proj") == 0);
  fg_peft_module_key("model.layers.3.mlp.up_proj.lora_A.weight", key, 12);
  CHECK(strcmp(key, "model.layer") == 0);
  /* the minimum; PEFT's usual null/false/empty values of the refused keys are fine */
  config_expect("{\"r\": 4, \"lora_alpha\": 8}", FG_OK, NULL);
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"use_dora\": false, \"lora_bias\": false, \"modules_to_save\": null, "
                "\"trainable_token_indices\": null, \"layer_replication\": null, \"use_qalora\": false, "
                "\"target_parameters\": null, \"alpha_pattern\": {}, \"target_modules\": \"all-linear\", \"bias\": null}",
                FG_OK, NULL);
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": \".*\\\\.(q_proj|v_proj)\"}", FG_OK, NULL);
  /* malformed */
  config_expect("[1]", FG_ERR_FORMAT, "not a JSON object");
  config_expect("{\"r\": 4, \"lora_alpha\": 8", FG_ERR_FORMAT, "not a JSON object");
  config_expect("{\"lora_alpha\": 8}", FG_ERR_FORMAT, "r is missing");
  config_expect("{\"r\": 0, \"lora_alpha\": 8}", FG_ERR_FORMAT, "positive integer");
  config_expect("{\"r\": 4.5, \"lora_alpha\": 8}", FG_ERR_FORMAT, "positive integer");
  config_expect("{\"r\": \"4\", \"lora_alpha\": 8}", FG_ERR_FORMAT, "positive integer");
  config_expect("{\"r\": 4}", FG_ERR_FORMAT, "lora_alpha is missing");
  config_expect("{\"r\": 4, \"lora_alpha\": \"8\"}", FG_ERR_FORMAT, "lora_alpha must be");
  config_expect("{\"r\": 4, \"lora_alpha\": 1e300}", FG_ERR_FORMAT, "lora_alpha must be");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"use_rslora\": 1}", FG_ERR_FORMAT, "use_rslora");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": [1]}", FG_ERR_FORMAT, "rank_pattern");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": {\"q_proj\": 2.5}}", FG_ERR_FORMAT, "rank_pattern[\"q_proj\"]");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": {\"q_proj\": 0}}", FG_ERR_FORMAT, "positive integer");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"alpha_pattern\": {\"q_proj\": 0}}", FG_ERR_FORMAT, "alpha_pattern[\"q_proj\"]");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"alpha_pattern\": {\"q_proj\": \"2\"}}", FG_ERR_FORMAT, "non-zero number");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"alpha_pattern\": 3}", FG_ERR_FORMAT, "alpha_pattern must be an object");
  /* what the format cannot carry */
  config_expect("{\"r\": 4, \"lora_alpha\": 0}", FG_ERR_UNSUPPORTED, "lora_alpha is 0");
  config_expect("{\"peft_type\": \"LOHA\", \"r\": 4, \"lora_alpha\": 8}", FG_ERR_UNSUPPORTED, "LOHA");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"use_dora\": true}", FG_ERR_UNSUPPORTED, "use_dora");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"modules_to_save\": [\"lm_head\"]}", FG_ERR_UNSUPPORTED, "modules_to_save");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"fan_in_fan_out\": true}", FG_ERR_UNSUPPORTED, "fan_in_fan_out");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"lora_bias\": true}", FG_ERR_UNSUPPORTED, "lora_bias");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"bias\": \"lora_only\"}", FG_ERR_UNSUPPORTED, "lora_only");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"bias\": \"all\"}", FG_ERR_UNSUPPORTED, "bias");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"trainable_token_indices\": [46, 47]}", FG_ERR_UNSUPPORTED,
                "trainable_token_indices");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"layer_replication\": [[0, 4]]}", FG_ERR_UNSUPPORTED, "layer_replication");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"use_qalora\": true}", FG_ERR_UNSUPPORTED, "use_qalora");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"target_parameters\": [\"experts.gate_up_proj\"]}", FG_ERR_UNSUPPORTED,
                "target_parameters");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\", \"embed_tokens\"]}", FG_ERR_UNSUPPORTED,
                "embed_tokens");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"model.lm_head\"]}", FG_ERR_UNSUPPORTED, "lm_head");
  config_expect("{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": \"lm_head\"}", FG_ERR_UNSUPPORTED, "lm_head");
}

static void override_expect(const char *json, fg_status want, const char *words) {
  fg_peft_vocab_override v;
  fg_error err = {0};
  const fg_status st = fg_peft_vocab_override_parse(json, strlen(json), "ov.json", &v, &err);
  CHECK_MSG(st == want, "%s: %s, want %s (%s)", json, fg_status_str(st), fg_status_str(want), err.msg);
  if (want != FG_OK)
    CHECK_MSG(strstr(err.msg, words) && strstr(err.msg, "ov.json") && v.n == 0 && !v.ids && !v.tokens,
              "%s: message \"%s\" lacks \"%s\" (or the result is not cleared)", json, err.msg, words);
  fg_peft_vocab_override_clear(&v);
}

static void test_override(void) {
  const char *good = "{\"tokens\": [\"<start_function_declaration>\", \"<escape>\", \"caf\\u00e9\"], \"ids\": [46, 52, 7]}";
  fg_peft_vocab_override v;
  fg_error err;
  CHECK_OK(fg_peft_vocab_override_parse(good, strlen(good), "ov.json", &v, &err));
  CHECK(v.n == 3 && v.ids[0] == 46 && v.ids[1] == 52 && v.ids[2] == 7);
  CHECK(v.n == 3 && strcmp(v.tokens[0], "<start_function_declaration>") == 0 && v.lens[1] == 8 &&
        strcmp(v.tokens[2], "caf\xc3\xa9") == 0 && v.lens[2] == 5);
  fg_peft_vocab_override_clear(&v);
  fg_peft_vocab_override_clear(&v); /* twice, and NULL */
  fg_peft_vocab_override_clear(NULL);
  override_expect("{\"ids\": [1], \"tokens\": [\"a\"]}", FG_OK, NULL);
  override_expect("[]", FG_ERR_FORMAT, "expected");
  override_expect("{\"ids\": [1], \"tokens\": [\"a\"]", FG_ERR_FORMAT, "end of JSON");
  override_expect("{\"ids\": [1], \"tokens\": [\"a\"]} x", FG_ERR_FORMAT, "ov.json");
  override_expect("{\"ids\": [1]}", FG_ERR_FORMAT, "\"tokens\" is missing");
  override_expect("{\"tokens\": [\"a\"]}", FG_ERR_FORMAT, "\"ids\" is missing");
  override_expect("{\"ids\": [1, 2], \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "pair up");
  override_expect("{\"ids\": [], \"tokens\": []}", FG_ERR_FORMAT, "pair up");
  override_expect("{\"ids\": [-1], \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "ids[0]");
  override_expect("{\"ids\": [1.5], \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "ids[0]");
  override_expect("{\"ids\": [2147483648], \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "ids[0]");
  override_expect("{\"ids\": [1, \"2\"], \"tokens\": [\"a\", \"b\"]}", FG_ERR_FORMAT, "ids[1]");
  override_expect("{\"ids\": [1, 2], \"tokens\": [\"a\", 2]}", FG_ERR_FORMAT, "tokens[1]");
  override_expect("{\"ids\": [1], \"tokens\": [\"\"]}", FG_ERR_FORMAT, "tokens[0]");
  override_expect("{\"ids\": [1], \"tokens\": [\"a\\u0000b\"]}", FG_ERR_FORMAT, "without NUL");
  override_expect("{\"ids\": [1], \"tokens\": [\"\xff\"]}", FG_ERR_FORMAT, "ov.json");
  override_expect("{\"ids\": [1, 1], \"tokens\": [\"a\", \"b\"]}", FG_ERR_FORMAT, "both 1");
  override_expect("{\"ids\": [1, 2], \"tokens\": [\"a\", \"a\"]}", FG_ERR_FORMAT, "both \"a\"");
  override_expect("{\"ids\": [1], \"ids\": [2], \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "twice");
  override_expect("{\"ids\": [1], \"tokens\": [\"a\"], \"names\": []}", FG_ERR_FORMAT, "unknown key \"names\"");
  override_expect("{\"ids\": 1, \"tokens\": [\"a\"]}", FG_ERR_FORMAT, "must be an array");
  /* more entries than allowed */
  const size_t n = FG_PEFT_OVERRIDE_MAX + 1;
  char *big = malloc(n * 8 + 64);
  size_t k = (size_t)sprintf(big, "{\"ids\": [");
  for (size_t i = 0; i < n; i++) k += (size_t)sprintf(big + k, "%s%zu", i ? "," : "", i);
  sprintf(big + k, "], \"tokens\": []}");
  override_expect(big, FG_ERR_FORMAT, "more than");
  free(big);
}

// ----------------------------------------------------------------------------------------------------
// 2. Conversion of adapters written here

static void test_convert_types(void) {
  const char *dir = scratch("f32-adapter"), *out = scratch("f32.gguf");
  fg_error err;
  adapter a = {0};
  g_rng = 1;
  add_all(&a, PLAIN, 4, "F32");
  write_adapter(dir, &a, 4, 8, NULL);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gfile f;
  gload(out, &f);
  CHECK(kv_str_is(&f, "general.architecture", "gemma3"));
  CHECK(kv_str_is(&f, "general.type", "adapter"));
  CHECK(kv_str_is(&f, "adapter.type", "lora"));
  CHECK(kv_str_is(&f, "general.name", "f32-adapter"));
  CHECK(kv_str_is(&f, "general.base_model.0.name", "google/functiongemma-270m-it"));
  CHECK(kv_f32(&f, "adapter.lora.alpha") == 8.0f);
  uint32_t ft = 99, align = 0;
  CHECK(f.ok && fg_gguf_get_u32(&f.g, "general.file_type", &ft, NULL) == FG_OK && ft == 0);
  CHECK(f.ok && fg_gguf_get_u32(&f.g, "general.alignment", &align, NULL) == FG_OK && align == 32);
  CHECK(f.ok && !fg_gguf_find_kv(&f.g, "fgemma.vocab_override.ids"));
  check_adapter("f32 auto", &f, &a, UINT32_MAX);
  /* the order: by layer, then q k v o gate up down, lora_a before lora_b */
  static const char *const order[] = {"blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b",
                                      "blk.0.attn_k.weight.lora_a", "blk.0.ffn_down.weight.lora_b",
                                      "blk.3.attn_q.weight.lora_a", "blk.3.ffn_down.weight.lora_b"};
  static const size_t at[] = {0, 1, 2, 13, 14, 27};
  for (size_t i = 0; i < 6 && f.ok && f.g.n_tensors == 28; i++)
    CHECK_MSG(fg_gguf_str_eq(f.g.tensors[at[i]].name, order[i]), "tensor %zu is %.*s, want %s", at[i],
              (int)f.g.tensors[at[i]].name.len, f.g.tensors[at[i]].name.ptr, order[i]);
  gfree(&f);

  /* --type f16, bf16, q8_0 (also as the mixes fg_convert_type_parse gives), f32 */
  static const struct {
    const char *name;
    uint32_t type;
  } types[] = {{"f16", FG_TYPE_F16}, {"bf16", FG_TYPE_BF16}, {"q8_0", FG_TYPE_Q8_0}, {"f32", FG_TYPE_F32}};
  for (size_t i = 0; i < 4; i++) {
    uint32_t parsed = 0;
    CHECK_OK(fg_convert_type_parse(types[i].name, false, &parsed));
    for (int mix = 0; mix < 2; mix++) {
      remove(out);
      CHECK_OK(convert(dir, out, mix ? parsed : types[i].type, NULL, &err));
      gload(out, &f);
      char what[64];
      snprintf(what, sizeof what, "f32 -> %s%s", types[i].name, mix ? " (mix)" : "");
      check_adapter(what, &f, &a, types[i].type);
      CHECK(f.ok && fg_gguf_get_u32(&f.g, "general.file_type", &ft, NULL) == FG_OK && ft == (types[i].type == FG_TYPE_F16 ? 1u : types[i].type == FG_TYPE_BF16 ? 32u : types[i].type == FG_TYPE_Q8_0 ? 7u : 0u));
      if (types[i].type == FG_TYPE_Q8_0) { /* lora_a rows of 64/128: Q8_0; lora_b rows of rank 4: F16 */
        const fg_gguf_tensor *ta = fg_gguf_find_tensor(&f.g, "blk.0.attn_q.weight.lora_a");
        const fg_gguf_tensor *tb = fg_gguf_find_tensor(&f.g, "blk.0.attn_q.weight.lora_b");
        CHECK(ta && tb && ta->type == FG_TYPE_Q8_0 && tb->type == FG_TYPE_F16);
      }
      gfree(&f);
    }
  }
  free_adapter(&a);

  /* F16 and BF16 sources: kept as they are (auto), or written as another type */
  static const char *const dts[] = {"F16", "BF16"};
  for (size_t i = 0; i < 2; i++) {
    g_rng = 2 + i;
    add_all(&a, PLAIN, 8, dts[i]);
    write_adapter(dir, &a, 8, 16, NULL);
    remove(out);
    CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
    gload(out, &f);
    check_adapter(dts[i], &f, &a, UINT32_MAX);
    CHECK(f.ok && fg_gguf_get_u32(&f.g, "general.file_type", &ft, NULL) == FG_OK && ft == (i ? 32u : 1u));
    gfree(&f);
    for (size_t k = 0; k < 4; k++) {
      remove(out);
      CHECK_OK(convert(dir, out, types[k].type, NULL, &err));
      gload(out, &f);
      char what[64];
      snprintf(what, sizeof what, "%s -> %s", dts[i], types[k].name);
      check_adapter(what, &f, &a, types[k].type);
      gfree(&f);
    }
    free_adapter(&a);
  }

  /* mixed dtypes: auto writes F32 (exact for both) */
  g_rng = 5;
  add_pair(&a, PLAIN, 0, 0, 4, "F16", "BF16");
  add_pair(&a, PLAIN, 0, 6, 4, "F32", "F16");
  write_adapter(dir, &a, 4, 8, NULL);
  remove(out);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gload(out, &f);
  check_adapter("mixed -> auto", &f, &a, FG_TYPE_F32);
  gfree(&f);
  free_adapter(&a);
  remove(out);
}

static void test_alpha_and_names(void) {
  const char *dir = scratch("alpha-adapter"), *out = scratch("alpha.gguf");
  fg_error err;
  gfile f;
  adapter a = {0};
  /* rsLoRA: PEFT's alpha / sqrt(r) is kept as alpha' / r with alpha' = alpha * sqrt(r) */
  static const struct {
    uint32_t r;
    double alpha;
    float want;
  } rs[] = {{16, 8, 32.0f}, {4, 8, 16.0f}, {8, 16, (float)(16.0 * 2.8284271247461903)}, {2, -3, (float)(-3.0 * 1.4142135623730951)}};
  for (size_t i = 0; i < 4; i++) {
    g_rng = 10 + i;
    add_pair(&a, PLAIN, 0, 0, rs[i].r, "F32", "F32");
    write_adapter(dir, &a, rs[i].r, rs[i].alpha, "\"use_rslora\": true, ");
    remove(out);
    CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
    gload(out, &f);
    const float got = kv_f32(&f, "adapter.lora.alpha");
    CHECK_MSG(got == rs[i].want, "rslora r %u alpha %g: adapter.lora.alpha %.9g, want %.9g", rs[i].r, rs[i].alpha,
              (double)got, (double)rs[i].want);
    CHECK_NEAR((double)got / rs[i].r, rs[i].alpha / sqrt((double)rs[i].r), 1e-6);
    gfree(&f);
    free_adapter(&a);
  }
  /* without rsLoRA alpha is written as it is, also a fractional one */
  g_rng = 20;
  add_pair(&a, PLAIN, 0, 0, 4, "F32", "F32");
  write_adapter(dir, &a, 4, 0.1, NULL);
  remove(out);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gload(out, &f);
  CHECK(kv_f32(&f, "adapter.lora.alpha") == 0.1f);
  gfree(&f);
  free_adapter(&a);

  /* rank_pattern: pairs of other ranks (llama.cpp takes each pair's rank from lora_b) */
  g_rng = 21;
  add_pair(&a, PLAIN, 0, 0, 8, "F32", "F32");
  add_pair(&a, PLAIN, 0, 3, 2, "F32", "F32");
  write_adapter(dir, &a, 8, 16, "\"rank_pattern\": {\"o_proj\": 2}, ");
  remove(out);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gload(out, &f);
  check_adapter("rank_pattern", &f, &a, UINT32_MAX);
  CHECK(kv_f32(&f, "adapter.lora.alpha") == 16.0f);
  gfree(&f);
  /* an alpha_pattern that keeps alpha / r: fine; a rank_pattern with a regular expression: the ranks are the
   * tensors' (PEFT made them so), only unchecked against the config */
  static const char *const fine[] = {"\"rank_pattern\": {\"o_proj\": 2}, \"alpha_pattern\": {\"self_attn.o_proj\": 16}, ",
                                     "\"rank_pattern\": {\".*o_proj\": 2}, "};
  for (size_t i = 0; i < 2; i++) {
    write_adapter(dir, &a, 8, 16, fine[i]);
    remove(out);
    CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
    gload(out, &f);
    CHECK(kv_f32(&f, "adapter.lora.alpha") == 16.0f);
    gfree(&f);
  }
  /* rsLoRA with two ranks and an alpha_pattern that makes up for it: PEFT's 16 / sqrt(8) and 32 / sqrt(2) are
   * alpha / 8 and alpha / 2 for alpha = 16 sqrt(8) = 32 sqrt(2) */
  write_adapter(dir, &a, 8, 16, "\"use_rslora\": true, \"rank_pattern\": {\"o_proj\": 2}, \"alpha_pattern\": {\"o_proj\": 32}, ");
  remove(out);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gload(out, &f);
  CHECK(fabsf(kv_f32(&f, "adapter.lora.alpha") - (float)(16.0 * sqrt(8.0))) <= 1e-5f);
  gfree(&f);
  free_adapter(&a);

  /* the multimodal class's two prefixes give the plain file; the vision tower is left out */
  g_rng = 30;
  add_all(&a, PLAIN, 4, "F32");
  write_adapter(dir, &a, 4, 8, NULL);
  const char *plain = scratch("plain.gguf");
  remove(plain);
  CHECK_OK(convert(dir, plain, FG_CONVERT_TYPE_AUTO, NULL, &err));
  static const char *const prefixes[] = {"base_model.model.model.language_model.", "base_model.model.language_model.model."};
  for (size_t i = 0; i < 2; i++) {
    for (size_t k = 0; k < a.n; k++) {
      char nm[160];
      snprintf(nm, sizeof nm, "%s%s", prefixes[i], a.t[k].name + strlen(PLAIN));
      snprintf(a.t[k].name, sizeof a.t[k].name, "%s", nm);
    }
    const size_t n0 = a.n;
    add_tensor(&a, "base_model.model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight", "F32", 4, 32);
    add_tensor(&a, "base_model.model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_B.weight", "F32", 32, 4);
    add_tensor(&a, "base_model.model.model.multi_modal_projector.mm_input_projection.lora_A.weight", "F32", 4, 32);
    write_adapter(dir, &a, 4, 8, NULL);
    remove(out);
    CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
    size_t n1, n2;
    char *x = fg_test_read_file(out, &n1), *y = fg_test_read_file(plain, &n2);
    CHECK_MSG(x && y && n1 == n2 && memcmp(x, y, n1) == 0, "prefix %s: the file differs from the plain names' one",
              prefixes[i]);
    free(x);
    free(y);
    for (size_t k = n0; k < a.n; k++) free(a.t[k].data);
    a.n = n0;
    for (size_t k = 0; k < a.n; k++) {
      char nm[160];
      snprintf(nm, sizeof nm, "%s%s", PLAIN, a.t[k].name + strlen(prefixes[i]));
      snprintf(a.t[k].name, sizeof a.t[k].name, "%s", nm);
    }
  }
  free_adapter(&a);
  remove(out);
  remove(plain);
}

static void test_override_and_base(void) {
  const char *dir = scratch("ov-adapter"), *out = scratch("ov.gguf");
  fg_error err;
  gfile f;
  adapter a = {0};
  g_rng = 40;
  add_all(&a, PLAIN, 4, "BF16");
  write_adapter(dir, &a, 4, 8, NULL);
  write_file(dir, FG_PEFT_OVERRIDE_FILE,
             "{\"ids\": [46, 47, 511], \"tokens\": [\"<start_function_declaration>\", \"<end_function_declaration>\", "
             "\"<escape>\"]}");
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, NULL, &err));
  gload(out, &f);
  const fg_gguf_kv *ids = NULL, *toks = NULL;
  CHECK(f.ok && fg_gguf_get_arr(&f.g, "fgemma.vocab_override.ids", FG_GGUF_INT32, &ids, NULL) == FG_OK);
  CHECK(f.ok && fg_gguf_get_arr(&f.g, "fgemma.vocab_override.tokens", FG_GGUF_STRING, &toks, NULL) == FG_OK);
  if (ids && toks) {
    CHECK(ids->arr_type == FG_GGUF_INT32 && ids->arr_n == 3 && toks->arr_n == 3);
    int32_t v[3];
    memcpy(v, ids->arr_data, sizeof v);
    CHECK(v[0] == 46 && v[1] == 47 && v[2] == 511);
    fg_gguf_str *s = NULL;
    CHECK_OK(fg_gguf_str_array(toks, &s, NULL));
    CHECK(s && fg_gguf_str_eq(s[0], "<start_function_declaration>") && fg_gguf_str_eq(s[1], "<end_function_declaration>") &&
          fg_gguf_str_eq(s[2], "<escape>"));
    fg_free(s);
  }
  check_adapter("with an override", &f, &a, UINT32_MAX);
  gfree(&f);

  /* --base: the tiny model (6 layers, width 64, vocabulary 512); its architecture is copied */
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1), 0);
  char base[4096];
  snprintf(base, sizeof base, "%s", fg_test_model_path("tiny-f32.gguf"));
  remove(out);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, base, &err));
  gload(out, &f);
  CHECK(kv_str_is(&f, "general.architecture", "gemma3"));
  check_adapter("with --base", &f, &a, UINT32_MAX);
  gfree(&f);
  remove(out);
  /* a base with another architecture: copied (with a warning) */
  gfile b;
  gload(base, &b);
  fg_gguf_writer *w = fg_gguf_writer_create();
  for (size_t i = 0; b.ok && i < b.g.n_kv; i++) {
    if (fg_gguf_str_eq(b.g.kv[i].key, "general.architecture")) CHECK_OK(fg_gguf_writer_set_str(w, "general.architecture", "gemma3x"));
    else CHECK_OK(fg_gguf_writer_copy_kv(w, &b.g.kv[i]));
  }
  for (size_t i = 0; b.ok && i < b.g.n_tensors; i++) {
    char nm[128];
    snprintf(nm, sizeof nm, "%.*s", (int)b.g.tensors[i].name.len, b.g.tensors[i].name.ptr);
    CHECK_OK(fg_gguf_writer_add_tensor(w, nm, b.g.tensors[i].type, b.g.tensors[i].n_dims, b.g.tensors[i].ne));
  }
  const char *other = scratch("other-arch.gguf");
  FILE *of = fopen(other, "wb");
  CHECK_OK(fg_gguf_writer_begin(w, of, &err));
  for (size_t i = 0; b.ok && i < b.g.n_tensors; i++)
    CHECK_OK(fg_gguf_writer_tensor_data(w, of, b.g.tensors[i].data, (size_t)b.g.tensors[i].nbytes, &err));
  CHECK_OK(fg_gguf_writer_end(w, of, &err));
  fclose(of);
  fg_gguf_writer_free(w);
  gfree(&b);
  CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, other, &err));
  gload(out, &f);
  CHECK(kv_str_is(&f, "general.architecture", "gemma3x"));
  gfree(&f);
  remove(out);
  remove(other);
  free_adapter(&a);
}

// ----------------------------------------------------------------------------------------------------
// 3. Refusals

static void expect_fail(const char *what, const char *dir, uint32_t type, const char *base, fg_status want,
                        const char *w1, const char *w2) {
  const char *out = scratch("fail.gguf");
  fg_error err;
  const fg_status st = convert(dir, out, type, base, &err);
  CHECK_MSG(st == want, "%s: %s, want %s (%s)", what, fg_status_str(st), fg_status_str(want), err.msg);
  CHECK_MSG(w1 == NULL || strstr(err.msg, w1), "%s: message \"%s\" lacks \"%s\"", what, err.msg, w1);
  CHECK_MSG(w2 == NULL || strstr(err.msg, w2), "%s: message \"%s\" lacks \"%s\"", what, err.msg, w2);
  CHECK_MSG(no_output_left(out), "%s: output left behind", what);
  CHECK_MSG(strlen(err.msg) < sizeof err.msg - 1, "%s: the message fills fg_error (cut short?): %s", what, err.msg);
}

/* an adapter of every module of layers 0 and 3 plus one edit, and its expected refusal */
static void refuse(const char *what, void (*edit)(adapter *), uint32_t r, const char *extra, fg_status want,
                   const char *w1, const char *w2) {
  const char *dir = scratch(BAD_ADAPTER);
  adapter a = {0};
  g_rng = 50;
  add_all(&a, PLAIN, 4, "F32");
  if (edit) edit(&a);
  write_adapter(dir, &a, r, 8, extra);
  expect_fail(what, dir, FG_CONVERT_TYPE_AUTO, NULL, want, w1, w2);
  free_adapter(&a);
}

static void set_f32(st_t *t, size_t i, float v) { memcpy(t->data + 4 * i, &v, 4); }
static void ed_dora(adapter *a) {
  add_tensor(a, PLAIN "layers.0.self_attn.q_proj.lora_magnitude_vector", "F32", 1, 128);
}
static void ed_embed(adapter *a) { add_tensor(a, PLAIN "embed_tokens.lora_embedding_A", "F32", 4, 512); }
static void ed_embed_lin(adapter *a) { add_tensor(a, PLAIN "embed_tokens.lora_A.weight", "F32", 4, 512); }
static void ed_head(adapter *a) { add_tensor(a, "base_model.model.lm_head.lora_B.weight", "F32", 512, 4); }
static void ed_saved(adapter *a) { add_tensor(a, "base_model.model.lm_head.weight", "F32", 512, 64); }
static void ed_bias(adapter *a) { add_tensor(a, PLAIN "layers.0.self_attn.q_proj.lora_B.bias", "F32", 1, 128); }
static void ed_norm(adapter *a) { add_tensor(a, PLAIN "layers.0.input_layernorm.weight", "F32", 1, 64); }
static void ed_other(adapter *a) { add_tensor(a, PLAIN "layers.0.self_attn.q_norm.lora_A.weight", "F32", 4, 32); }
static void ed_unknown(adapter *a) { add_tensor(a, "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight", "F32", 4, 64); }
static void ed_no_b(adapter *a) {
  free(a->t[1].data);
  memmove(&a->t[1], &a->t[2], (a->n - 2) * sizeof a->t[0]);
  a->n--;
}
static void ed_dup(adapter *a) {
  add_tensor(a, "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight", "F32", 4, 64);
}
static void ed_rank(adapter *a) { /* q_proj's lora_B of rank 5 */
  st_t *b = find(a, PLAIN "layers.0.self_attn.q_proj.lora_B.weight");
  free(b->data);
  const size_t k = (size_t)(b - a->t);
  a->n--;
  memmove(&a->t[k], &a->t[k + 1], (a->n - k) * sizeof a->t[0]);
  add_tensor(a, PLAIN "layers.0.self_attn.q_proj.lora_B.weight", "F32", 128, 5);
}
static void ed_pair_rank(adapter *a) { add_pair(a, PLAIN, 1, 0, 8, "F32", "F32"); }
static void ed_width(adapter *a) { /* layer 1's q_proj reads 32 values, layer 0's 64 */
  add_pair(a, PLAIN, 1, 0, 4, "F32", "F32");
  a->t[a->n - 2].shape[1] = 32;
  a->t[a->n - 2].nbytes = 4 * 32 * 4;
}
static void ed_i32(adapter *a) { add_tensor(a, PLAIN "layers.1.self_attn.q_proj.lora_A.weight", "I32", 4, 64);
                                 add_tensor(a, PLAIN "layers.1.self_attn.q_proj.lora_B.weight", "F32", 128, 4); }
static void ed_nan(adapter *a) { set_f32(find(a, PLAIN "layers.3.mlp.up_proj.lora_B.weight"), 77, NAN); }
static void ed_inf(adapter *a) { set_f32(find(a, PLAIN "layers.0.self_attn.v_proj.lora_A.weight"), 3, -INFINITY); }
static void ed_none(adapter *a) { free_adapter(a); }
static void ed_vision_only(adapter *a) {
  free_adapter(a);
  add_tensor(a, "base_model.model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight", "F32", 4, 32);
}
static void ed_1d(adapter *a) { find(a, PLAIN "layers.0.self_attn.q_proj.lora_A.weight")->n_dims = 1; }

static void test_refusals(void) {
  refuse("DoRA (config)", NULL, 4, "\"use_dora\": true, ", FG_ERR_UNSUPPORTED, "use_dora", "adapter_config.json");
  refuse("DoRA (tensor)", ed_dora, 4, NULL, FG_ERR_UNSUPPORTED, "DoRA", "q_proj.lora_magnitude_vector");
  refuse("modules_to_save (config)", NULL, 4, "\"modules_to_save\": [\"lm_head\", \"embed_tokens\"], ", FG_ERR_UNSUPPORTED,
         "modules_to_save", "lm_head");
  refuse("modules_to_save (tensor)", ed_saved, 4, NULL, FG_ERR_UNSUPPORTED, "lm_head.weight", "modules_to_save");
  refuse("embedding target (config)", NULL, 4, "\"target_modules\": [\"q_proj\", \"embed_tokens\"], ", FG_ERR_UNSUPPORTED,
         "embed_tokens", "target_modules");
  refuse("embedding target (tensor)", ed_embed, 4, NULL, FG_ERR_UNSUPPORTED, "embed_tokens.lora_embedding_A", "embedding");
  refuse("embedding target (linear tensor)", ed_embed_lin, 4, NULL, FG_ERR_UNSUPPORTED, "embed_tokens.lora_A", "embedding");
  refuse("lm_head target", ed_head, 4, NULL, FG_ERR_UNSUPPORTED, "lm_head.lora_B.weight", "output projection");
  refuse("bias (config)", NULL, 4, "\"bias\": \"all\", ", FG_ERR_UNSUPPORTED, "bias", "adapter_config.json");
  refuse("bias (tensor)", ed_bias, 4, NULL, FG_ERR_UNSUPPORTED, "lora_B.bias", "bias");
  refuse("norm weight", ed_norm, 4, NULL, FG_ERR_UNSUPPORTED, "input_layernorm.weight", "whole tensor");
  refuse("other module", ed_other, 4, NULL, FG_ERR_UNSUPPORTED, "q_norm", "layer 0");
  refuse("unknown tensor", ed_unknown, 4, NULL, FG_ERR_FORMAT, "c_attn", "unexpected tensor");
  refuse("fan_in_fan_out", NULL, 4, "\"fan_in_fan_out\": true, ", FG_ERR_UNSUPPORTED, "fan_in_fan_out", NULL);
  refuse("alpha_pattern", NULL, 4, "\"alpha_pattern\": {\"q_proj\": 2}, ", FG_ERR_UNSUPPORTED, "one adapter.lora.alpha",
         "q_proj.lora_A.weight' 2");
  refuse("alpha_pattern regex", NULL, 4, "\"alpha_pattern\": {\"^.*\\\\.q_proj$\": 2}, ", FG_ERR_UNSUPPORTED,
         "regular expression", "adapter_config.json");
  refuse("missing lora_B", ed_no_b, 4, NULL, FG_ERR_FORMAT, "q_proj.lora_A.weight", "no matching lora_B");
  refuse("duplicate", ed_dup, 4, NULL, FG_ERR_FORMAT, "both lora_A", "q_proj");
  refuse("mismatched ranks in a pair", ed_rank, 4, NULL, FG_ERR_FORMAT, "mismatched ranks", "q_proj.lora_B.weight");
  refuse("rank other than r", NULL, 8, NULL, FG_ERR_FORMAT, "rank 4", "model.layers.0.self_attn.q_proj r = 8");
  refuse("a pair of another rank", ed_pair_rank, 4, NULL, FG_ERR_FORMAT, "layers.1.self_attn.q_proj", "rank 8");
  refuse("rank_pattern that does not name it", ed_pair_rank, 4, "\"rank_pattern\": {\"x\": 8}, ", FG_ERR_FORMAT,
         "mismatched ranks", "has rank 8");
  refuse("rslora with two ranks", ed_pair_rank, 4, "\"use_rslora\": true, \"rank_pattern\": {\"layers.1.self_attn.q_proj\": 8}, ",
         FG_ERR_UNSUPPORTED, "use_rslora", "layers.1.self_attn.q_proj.lora_A.weight' needs 22.6");
  refuse("widths that disagree", ed_width, 4, NULL, FG_ERR_FORMAT, "n_in 32", "embedding width");
  refuse("an integer tensor", ed_i32, 4, NULL, FG_ERR_UNSUPPORTED, "I32", "layers.1.self_attn.q_proj.lora_A");
  refuse("a vector", ed_1d, 4, NULL, FG_ERR_FORMAT, "not a matrix", "q_proj.lora_A");
  refuse("NaN", ed_nan, 4, NULL, FG_ERR_FORMAT, "NaN", "layers.3.mlp.up_proj.lora_B.weight");
  refuse("infinity", ed_inf, 4, NULL, FG_ERR_FORMAT, "infinity", "v_proj.lora_A.weight' holds an infinity at row 0, column 3");
  refuse("no tensors", ed_none, 4, NULL, FG_ERR_FORMAT, "no lora_A/lora_B", "adapter_model.safetensors");
  refuse("only the vision tower", ed_vision_only, 4, NULL, FG_ERR_FORMAT, "no lora_A/lora_B", NULL);
  refuse("another PEFT method", NULL, 4, "\"peft_type\": \"IA3\", ", FG_ERR_UNSUPPORTED, "IA3", NULL);

  char dir[2048], out[2048]; /* scratch's buffers are reused by the calls below */
  snprintf(dir, sizeof dir, "%s", scratch(BAD_ADAPTER));
  snprintf(out, sizeof out, "%s", scratch("fail.gguf"));
  fg_error err;
  adapter a = {0};
  g_rng = 60;
  add_all(&a, PLAIN, 4, "F32");
  write_adapter(dir, &a, 4, 8, NULL);
  expect_fail("q4_0", dir, FG_TYPE_Q4_0, NULL, FG_ERR_UNSUPPORTED, "f32, f16, bf16 or q8_0", "q4_0");
  uint32_t mix = 0;
  CHECK_OK(fg_convert_type_parse("q4_k_m", false, &mix));
  expect_fail("q4_k_m", dir, mix, NULL, FG_ERR_UNSUPPORTED, "f32, f16, bf16 or q8_0", NULL);
  fg_convert_params p;
  fg_convert_params_init(&p);
  p.head_type = FG_TYPE_Q8_0;
  CHECK(fg_convert(dir, out, &p, &err) == FG_ERR_UNSUPPORTED && strstr(err.msg, "head type"));
  CHECK(no_output_left(out));
  /* F16 overflow */
  set_f32(find(&a, PLAIN "layers.3.self_attn.o_proj.lora_A.weight"), 5, 70000.0f);
  write_adapter(dir, &a, 4, 8, NULL);
  expect_fail("f16 overflow", dir, FG_TYPE_F16, NULL, FG_ERR_UNSUPPORTED, "70000", "F16's range");
  CHECK_OK(convert(dir, out, FG_TYPE_BF16, NULL, &err)); /* fits bf16 */
  remove(out);
  set_f32(find(&a, PLAIN "layers.3.self_attn.o_proj.lora_A.weight"), 5, 65519.0f); /* rounds to 65504 */
  write_adapter(dir, &a, 4, 8, NULL);
  CHECK_OK(convert(dir, out, FG_TYPE_F16, NULL, &err));
  remove(out);

  /* the override file */
  write_file(dir, FG_PEFT_OVERRIDE_FILE, "{\"ids\": [1, 2], \"tokens\": [\"a\"]}");
  expect_fail("override", dir, FG_CONVERT_TYPE_AUTO, NULL, FG_ERR_FORMAT, FG_PEFT_OVERRIDE_FILE, "pair up");

  /* --base: the layers, the shapes, the vocabulary; and --base for another input */
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1), 0);
  char base[4096];
  snprintf(base, sizeof base, "%s", fg_test_model_path("tiny-f32.gguf"));
  write_file(dir, FG_PEFT_OVERRIDE_FILE, "{\"ids\": [46, 512], \"tokens\": [\"a\", \"b\"]}");
  expect_fail("override id past the base's vocabulary", dir, FG_CONVERT_TYPE_AUTO, base, FG_ERR_FORMAT, "ids[1] = 512",
              "512 tokens");
  char ov[2400];
  snprintf(ov, sizeof ov, "%s/%s", dir, FG_PEFT_OVERRIDE_FILE);
  remove(ov);
  add_pair(&a, PLAIN, 6, 1, 4, "F32", "F32");
  write_adapter(dir, &a, 4, 8, NULL);
  expect_fail("layer past the base's", dir, FG_CONVERT_TYPE_AUTO, base, FG_ERR_FORMAT, "blk.6.attn_k.weight",
              "layers end before");
  free_adapter(&a);
  g_rng = 61;
  add_pair(&a, PLAIN, 0, 4, 4, "F32", "F32");
  a.t[1].shape[0] = 96; /* ffn_gate of 96 rows: the base's is 128 */
  a.t[1].nbytes = 96 * 4 * 4;
  write_adapter(dir, &a, 4, 8, NULL);
  expect_fail("shape other than the base's", dir, FG_CONVERT_TYPE_AUTO, base, FG_ERR_FORMAT, "64 -> 96",
              "blk.0.ffn_gate.weight");
  expect_fail("base that does not exist", dir, FG_CONVERT_TYPE_AUTO, scratch("nothing.gguf"), FG_ERR_IO, "base model",
              "nothing.gguf");
  char cfg[2400];
  snprintf(cfg, sizeof cfg, "%s/adapter_config.json", dir);
  expect_fail("base that is not a GGUF", dir, FG_CONVERT_TYPE_AUTO, cfg, FG_ERR_FORMAT, "base model", "adapter_config.json");
  free_adapter(&a);
  memset(&err, 0, sizeof err);
  const char *ck = scratch("hf-ckpt");
  fg_test_rm_rf(ck);
  mkdir(ck, 0777);
  write_file(ck, "config.json", "{}");
  expect_fail("--base for a checkpoint", ck, FG_CONVERT_TYPE_AUTO, base, FG_ERR_INVALID_ARG, "not a PEFT adapter", NULL);
  /* adapter_model.bin only */
  char st[2400];
  snprintf(st, sizeof st, "%s/adapter_model.safetensors", dir);
  remove(st);
  write_file(dir, "adapter_model.bin", "PK");
  expect_fail("adapter_model.bin", dir, FG_CONVERT_TYPE_AUTO, NULL, FG_ERR_IO, "adapter_model.bin", "safe_serialization");
  /* a damaged safetensors header and config */
  CHECK(fg_test_write_file(st, "\x10\0\0\0\0\0\0\0{\"a\":1}", 15));
  expect_fail("damaged safetensors", dir, FG_CONVERT_TYPE_AUTO, NULL, FG_ERR_FORMAT, "adapter_model.safetensors", NULL);
  write_file(dir, "adapter_config.json", "{\"r\": 4");
  expect_fail("damaged config", dir, FG_CONVERT_TYPE_AUTO, NULL, FG_ERR_FORMAT, "adapter_config.json", NULL);
}

// ----------------------------------------------------------------------------------------------------
// Cancelling and allocation failures

typedef struct prog {
  uint64_t last, total, calls, stop_after;
  bool monotone;
} prog;

static bool on_progress(uint64_t done, uint64_t total, void *ud) {
  prog *p = ud;
  p->monotone &= done >= p->last && done <= total && (p->total == 0 || p->total == total);
  p->last = done;
  p->total = total;
  p->calls++;
  return p->stop_after == 0 || p->calls < p->stop_after;
}

static void test_progress_and_alloc(void) {
  const char *dir = scratch("prog-adapter"), *out = scratch("prog.gguf");
  adapter a = {0};
  g_rng = 70;
  add_all(&a, PLAIN, 4, "BF16");
  write_adapter(dir, &a, 4, 8, NULL);
  write_file(dir, FG_PEFT_OVERRIDE_FILE, "{\"ids\": [46, 47], \"tokens\": [\"<a>\", \"<b>\"]}");
  free_adapter(&a);
  char base[4096];
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1), 0);
  snprintf(base, sizeof base, "%s", fg_test_model_path("tiny-f32.gguf"));
  fg_convert_params p;
  fg_convert_params_init(&p);
  p.type = FG_TYPE_Q8_0;
  p.base = base;
  p.progress = on_progress;
  prog pr = {0, 0, 0, 0, true};
  p.progress_user_data = &pr;
  fg_error err;
  CHECK_OK(fg_convert(dir, out, &p, &err));
  CHECK(pr.monotone && pr.calls >= 3 && pr.last == pr.total && pr.total > 0);
  prog stop = {0, 0, 0, 3, true};
  p.progress_user_data = &stop;
  remove(out);
  CHECK(fg_convert(dir, out, &p, &err) == FG_ERR_ABORTED && strstr(err.msg, "cancelled"));
  CHECK(no_output_left(out));

  p.progress = NULL;
  fg_alloc_fail_after(0);
  CHECK_OK(fg_convert(dir, out, &p, &err));
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  remove(out);
  int nomem = 0;
  for (uint64_t k = 1; k <= n_alloc + 1; k++) {
    fg_alloc_fail_after(k);
    memset(&err, 0, sizeof err);
    const fg_status st = fg_convert(dir, out, &p, &err);
    fg_alloc_fail_after(0);
    if (k <= n_alloc) {
      CHECK_MSG(st == FG_ERR_NOMEM && err.msg[0], "allocation %llu failing: %s (%s)", (unsigned long long)k,
                fg_status_str(st), err.msg);
      CHECK_MSG(no_output_left(out), "allocation %llu failing: output left behind", (unsigned long long)k);
      nomem += st == FG_ERR_NOMEM;
    } else {
      CHECK_MSG(st == FG_OK, "with every allocation granted: %s", err.msg);
    }
    remove(out);
  }
  printf("alloc: %llu allocation sites of fg_convert (adapter -> q8_0 with --base and an override), each failed "
         "once: %d x FG_ERR_NOMEM\n", (unsigned long long)n_alloc, nomem);
}

// ----------------------------------------------------------------------------------------------------
// 4. PEFT's own adapters (tests/data/peft)

/* the adapter's safetensors, parsed, with its bytes */
typedef struct stfile {
  char *data;
  size_t size;
  fg_st_header h;
  bool ok;
} stfile;

static void stload(const char *path, stfile *s) {
  memset(s, 0, sizeof *s);
  s->data = fg_test_read_file(path, &s->size);
  CHECK_MSG(s->data != NULL, "cannot read %s", path);
  fg_error err;
  s->ok = s->data && fg_st_parse((const uint8_t *)s->data, s->size, s->size, &s->h, &err) == FG_OK;
  CHECK_MSG(s->ok, "%s: cannot parse", path);
}

static void stfree(stfile *s) {
  if (s->ok) fg_st_clear(&s->h);
  free(s->data);
}

/* The GGUF holds every text-model LoRA tensor of the fixture with its bytes; n_vision are left out. */
static void check_fixture_bytes(const char *name, const char *gguf, size_t want_tensors, size_t want_vision) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s/adapter_model.safetensors", PEFT_DATA, name);
  stfile s;
  stload(path, &s);
  gfile f;
  gload(gguf, &f);
  size_t n = 0, vision = 0;
  for (size_t i = 0; s.ok && f.ok && i < s.h.n; i++) {
    const fg_st_tensor *t = &s.h.t[i];
    const fg_peft_name nm = fg_peft_name_parse(t->name);
    if (nm.kind == FG_PEFT_VISION) {
      vision++;
      continue;
    }
    CHECK_MSG(nm.kind == FG_PEFT_LORA_A || nm.kind == FG_PEFT_LORA_B, "%s: tensor %s", name, t->name);
    char gn[96];
    snprintf(gn, sizeof gn, "blk.%u.%s.weight.lora_%c", nm.layer, fg_lora_targets[nm.module].gguf,
             nm.kind == FG_PEFT_LORA_A ? 'a' : 'b');
    const uint32_t type = t->dtype == FG_ST_F32 ? FG_TYPE_F32 : t->dtype == FG_ST_BF16 ? FG_TYPE_BF16 : FG_TYPE_F16;
    check_tensor(name, &f, gn, (const uint8_t *)s.data + t->begin, type, t->shape[0], t->shape[1], type);
    n++;
  }
  CHECK_MSG(n == want_tensors && vision == want_vision && f.ok && f.g.n_tensors == n,
            "%s: %zu LoRA tensors (want %zu), %zu of the vision tower (want %zu), %zu in the GGUF", name, n, want_tensors,
            vision, want_vision, f.ok ? f.g.n_tensors : 0);
  gfree(&f);
  stfree(&s);
}

/* base + alpha / rank * B A for every adapted matrix (F32 base), written to out */
static bool write_merged(const char *base_path, const char *adapter_path, const char *out_path) {
  gfile b, a;
  gload(base_path, &b);
  gload(adapter_path, &a);
  bool ok = b.ok && a.ok;
  const float alpha = ok ? kv_f32(&a, "adapter.lora.alpha") : 0.0f;
  fg_gguf_writer *w = fg_gguf_writer_create();
  fg_error err;
  for (size_t i = 0; ok && i < b.g.n_kv; i++) ok = fg_gguf_writer_copy_kv(w, &b.g.kv[i]) == FG_OK;
  for (size_t i = 0; ok && i < b.g.n_tensors; i++) {
    char nm[128];
    snprintf(nm, sizeof nm, "%.*s", (int)b.g.tensors[i].name.len, b.g.tensors[i].name.ptr);
    ok = fg_gguf_writer_add_tensor(w, nm, b.g.tensors[i].type, b.g.tensors[i].n_dims, b.g.tensors[i].ne) == FG_OK;
  }
  FILE *f = ok ? fopen(out_path, "wb") : NULL;
  ok = f && fg_gguf_writer_begin(w, f, &err) == FG_OK;
  size_t merged = 0;
  for (size_t i = 0; ok && i < b.g.n_tensors; i++) {
    const fg_gguf_tensor *t = &b.g.tensors[i];
    char nm[160];
    snprintf(nm, sizeof nm, "%.*s.lora_a", (int)t->name.len, t->name.ptr);
    const fg_gguf_tensor *la = fg_gguf_find_tensor(&a.g, nm);
    nm[strlen(nm) - 1] = 'b';
    const fg_gguf_tensor *lb = fg_gguf_find_tensor(&a.g, nm);
    if (!la || !lb) {
      ok = fg_gguf_writer_tensor_data(w, f, t->data, (size_t)t->nbytes, &err) == FG_OK;
      continue;
    }
    CHECK_MSG(t->type == FG_TYPE_F32 && la->ne[0] == t->ne[0] && lb->ne[1] == t->ne[1] && la->ne[1] == lb->ne[0],
              "%s: shapes", nm);
    const size_t n_in = (size_t)t->ne[0], n_out = (size_t)t->ne[1], rank = (size_t)la->ne[1];
    uint64_t rba = 0, rbb = 0;
    fg_type_row_bytes(la->type, n_in, &rba);
    fg_type_row_bytes(lb->type, rank, &rbb);
    float *W = malloc(n_in * n_out * sizeof *W), *A = malloc(rank * n_in * sizeof *A), *B = malloc(n_out * rank * sizeof *B);
    memcpy(W, t->data, n_in * n_out * sizeof *W);
    for (size_t r = 0; r < rank; r++) fg_dequantize_row(la->type, la->data + r * rba, A + r * n_in, n_in);
    for (size_t o = 0; o < n_out; o++) fg_dequantize_row(lb->type, lb->data + o * rbb, B + o * rank, rank);
    const float s = alpha / (float)rank;
    for (size_t o = 0; o < n_out; o++)
      for (size_t j = 0; j < n_in; j++) {
        float d = 0.0f;
        for (size_t r = 0; r < rank; r++) d += B[o * rank + r] * A[r * n_in + j];
        W[o * n_in + j] += s * d;
      }
    ok = fg_gguf_writer_tensor_data(w, f, W, n_in * n_out * sizeof *W, &err) == FG_OK;
    merged++;
    free(W);
    free(A);
    free(B);
  }
  ok = ok && fg_gguf_writer_end(w, f, &err) == FG_OK;
  if (f) ok = fclose(f) == 0 && ok;
  CHECK_MSG(ok && merged == (a.ok ? a.g.n_tensors / 2 : 0), "merging %s into %s: %zu matrices merged", adapter_path,
            base_path, merged);
  fg_gguf_writer_free(w);
  gfree(&a);
  gfree(&b);
  return ok;
}

static double golden_row(const float *lg, const cJSON *columns, const cJSON *pos) {
  const double scale = cJSON_GetObjectItem(pos, "row_max_abs")->valuedouble;
  double worst = 0;
  const cJSON *c = columns->child, *v = cJSON_GetObjectItem(pos, "values")->child;
  for (; c && v; c = c->next, v = v->next) worst = fmax(worst, fabs(lg[c->valueint] - v->valuedouble) / scale);
  const cJSON *ti = cJSON_GetObjectItem(pos, "top_ids")->child, *tv = cJSON_GetObjectItem(pos, "top_values")->child;
  for (; ti && tv; ti = ti->next, tv = tv->next) worst = fmax(worst, fabs(lg[ti->valueint] - tv->valuedouble) / scale);
  return worst;
}

/* fgemma's reference forward on model_path against recorded positions and greedy ids */
static void check_logits(const char *what, const char *model_path, const cJSON *root, const cJSON *positions,
                         const cJSON *greedy) {
  fg_model *m = NULL;
  fg_error err;
  CHECK_OK(fg_model_load(model_path, NULL, &m, &err));
  if (!m) return;
  fg_model_info info;
  fg_model_get_info(m, &info);
  const cJSON *jids = cJSON_GetObjectItem(root, "ids"), *cols = cJSON_GetObjectItem(root, "columns");
  const size_t n_ids = (size_t)cJSON_GetArraySize(jids), n_pos = (size_t)cJSON_GetArraySize(positions);
  int32_t *ids = malloc(n_ids * sizeof *ids);
  size_t *at = malloc(n_pos * sizeof *at), k = 0;
  for (const cJSON *x = jids->child; x; x = x->next) ids[k++] = x->valueint;
  k = 0;
  for (const cJSON *x = positions->child; x; x = x->next) at[k++] = (size_t)cJSON_GetObjectItem(x, "position")->valueint;
  float *lg = malloc(n_pos * (size_t)info.n_vocab * sizeof *lg);
  CHECK_OK(fg_reference_logits(m, ids, n_ids, at, n_pos, lg, &err));
  double worst = 0;
  k = 0;
  for (const cJSON *x = positions->child; x; x = x->next, k++) {
    const double d = golden_row(lg + k * info.n_vocab, cols, x);
    CHECK_MSG(d <= GOLDEN_TOL, "%s: position %zu: relative L-inf %.3g > %g", what, at[k], d, GOLDEN_TOL);
    worst = fmax(worst, d);
  }
  const int n_greedy = cJSON_GetArraySize(greedy);
  int32_t *gen = malloc((size_t)n_greedy * sizeof *gen);
  CHECK_OK(fg_reference_generate(m, ids, n_ids, (size_t)n_greedy, gen, &err));
  int agree = 0;
  for (const cJSON *g = greedy->child; g && agree < n_greedy && gen[agree] == g->valueint; g = g->next) agree++;
  CHECK_MSG(agree == n_greedy, "%s: greedy ids agree with PEFT for %d of %d steps", what, agree, n_greedy);
  printf("%-34s %zu positions: relative L-inf %.2e; greedy %d/%d\n", what, n_pos, worst, agree, n_greedy);
  free(gen);
  free(ids);
  free(at);
  free(lg);
  fg_model_free(m);
}

static void test_fixtures(void) {
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1), 0);
  char base[4096];
  snprintf(base, sizeof base, "%s", fg_test_model_path("tiny-f32.gguf"));
  size_t n;
  char *text = fg_test_read_file(PEFT_DATA "/peft_goldens.json", &n);
  CHECK_MSG(text != NULL, "tests/data/peft/peft_goldens.json is missing");
  cJSON *root = text ? cJSON_ParseWithLength(text, n) : NULL;
  free(text);
  const cJSON *fmt = cJSON_GetObjectItem(root, "format"), *ver = cJSON_GetObjectItem(root, "version");
  CHECK_MSG(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "fgemma-peft-goldens") == 0 && cJSON_IsNumber(ver) &&
                ver->valueint == 1, "peft_goldens.json: not format fgemma-peft-goldens version 1");
  if (!root) return;
  const cJSON *rec = cJSON_GetObjectItem(root, "recorded");
  printf("PEFT goldens: peft %s, transformers %s, torch %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(rec, "peft")),
         cJSON_GetStringValue(cJSON_GetObjectItem(rec, "transformers")),
         cJSON_GetStringValue(cJSON_GetObjectItem(rec, "torch")));
  /* the base GGUF is the model PEFT adapted */
  check_logits("base (no adapter)", base, root, cJSON_GetObjectItem(root, "base_positions"),
               cJSON_GetObjectItem(root, "base_greedy"));

  static const struct {
    const char *name;
    size_t tensors, vision;
    float alpha;
  } fx[] = {
      {"tiny-r4-f32", 28, 0, 8.0f},
      {"tiny-rslora-bf16", 12, 0, (float)(16.0 * 2.8284271247461903)},
      {"tiny-mm-names", 24, 4, 4.0f},
  };
  for (size_t i = 0; i < 3; i++) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", PEFT_DATA, fx[i].name);
    const char *out = scratch("fixture.gguf"), *merged = scratch("merged.gguf");
    fg_error err;
    remove(out);
    CHECK_OK(convert(dir, out, FG_CONVERT_TYPE_AUTO, base, &err));
    check_fixture_bytes(fx[i].name, out, fx[i].tensors, fx[i].vision);
    gfile f;
    gload(out, &f);
    CHECK_MSG(kv_f32(&f, "adapter.lora.alpha") == fx[i].alpha, "%s: adapter.lora.alpha", fx[i].name);
    gfree(&f);
    const cJSON *c = NULL;
    for (const cJSON *x = cJSON_GetObjectItem(root, "cases")->child; x && !c; x = x->next)
      if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(x, "name")), fx[i].name) == 0) c = x;
    if (c && write_merged(base, out, merged)) {
      char what[96];
      snprintf(what, sizeof what, "%s (merged)", fx[i].name);
      check_logits(what, merged, root, cJSON_GetObjectItem(c, "positions"), cJSON_GetObjectItem(c, "greedy"));
    }
    CHECK_MSG(c || i == 2, "%s: no golden", fx[i].name);
    remove(out);
    remove(merged);
  }
  cJSON_Delete(root);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "%s/convert-peft-test-%ld", FG_TEST_MODELS, (long)getpid());
  fg_test_rm_rf(g_dir);
  if (mkdir(g_dir, 0777) != 0) {
    fprintf(stderr, "cannot create %s: %s\n", g_dir, strerror(errno));
    return 1;
  }
  test_names();
  test_config();
  test_override();
  test_convert_types();
  test_alpha_and_names();
  test_override_and_base();
  test_refusals();
  test_progress_and_alloc();
  test_fixtures();
  fg_test_rm_rf(g_dir);
  return fg_test_finish("test_convert_peft");
}
