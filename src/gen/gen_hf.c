/* gen_hf.c — the synthetic model as a Hugging Face Gemma3ForCausalLM checkpoint (fg_gen_model with
 * FG_GEN_FORMAT_HF): the input of `fgemma convert` in tests and of the HF oracle
 * (tools/hf/record_goldens.py), which loads it with transformers.
 *
 * A directory with config.json (as transformers 4.x or 5.x writes it), model.safetensors (or shards
 * and model.safetensors.index.json), tokenizer.json, tokenizer_config.json and, in the 5.x layout,
 * chat_template.jinja. Every tensor holds the numbers of the GGUF gen-model writes with the same seed,
 * in the checkpoint's dtype, in PyTorch's layout (a GGUF row is a row of the [out, in] matrix), with
 * norm weights stored as w - 1 (Gemma's RMSNorm computes x * (1 + w)). The directory is written as
 * DIR.tmp.<pid> and renamed, so no half-written checkpoint is ever left at DIR. Deterministic: the same
 * parameters give byte-identical files. */
#include "gen/gen_internal.h"

#include "convert/json_scan.h"
#include "convert/safetensors.h"
#include "tensor/dtype.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define HF_CHUNK_BYTES (4u << 20)

/* The files this writer may create, for clean-up on failure. */
typedef struct hf_out {
  char *dir;          /* the temporary directory */
  char names[72][48]; /* files created in it */
  size_t n_names;
  const fg_gen_params *params;
  uint64_t done, total; /* safetensors data bytes, for progress */
  fg_error *err;
} hf_out;

static fg_status hf_open(hf_out *o, const char *name, FILE **f) {
  FG_ASSERT(o->n_names < sizeof o->names / sizeof o->names[0] && strlen(name) < sizeof o->names[0]);
  const size_t n = strlen(o->dir) + strlen(name) + 2;
  char *path = fg_malloc(n);
  if (!path) return fg_err(o->err, FG_ERR_NOMEM, "gen: out of memory");
  snprintf(path, n, "%s/%s", o->dir, name);
  *f = fopen(path, "wb");
  const int e = errno;
  fg_free(path);
  if (!*f) return fg_err(o->err, FG_ERR_IO, "gen: cannot create %s/%s: %s", o->dir, name, strerror(e));
  memcpy(o->names[o->n_names++], name, strlen(name) + 1);
  setvbuf(*f, NULL, _IOFBF, 1 << 20);
  return FG_OK;
}

static fg_status hf_close(hf_out *o, FILE *f, const char *name, fg_status st) {
  const bool bad = ferror(f) != 0;
  const int rc = fclose(f);
  if (st == FG_OK && (bad || rc != 0)) st = fg_err(o->err, FG_ERR_IO, "gen: cannot write %s/%s", o->dir, name);
  return st;
}

/* The whole of a small text file. */
static fg_status hf_write_text(hf_out *o, const char *name, const char *text, size_t n) {
  FILE *f;
  fg_status st = hf_open(o, name, &f);
  if (st != FG_OK) return st;
  if (n && fwrite(text, 1, n, f) != n) st = fg_err(o->err, FG_ERR_IO, "gen: cannot write %s/%s", o->dir, name);
  return hf_close(o, f, name, st);
}

// ----------------------------------------------------------------------------------------------------
// A growing text buffer (config and header JSON)

typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool nomem;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->nomem) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + n + 1) cap *= 2;
    char *np = fg_realloc(b->p, cap);
    if (!np) {
      b->nomem = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) FG_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  FG_ASSERT(n >= 0);
  if ((size_t)n < sizeof tmp) {
    sb_put(b, tmp, (size_t)n);
    return;
  }
  char *big = fg_malloc((size_t)n + 1);
  if (!big) {
    b->nomem = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_put(b, big, (size_t)n);
  fg_free(big);
}

/* A JSON string literal of n bytes of UTF-8. */
static void sb_json_str(sbuf *b, const char *s, size_t n) {
  sb_put(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    const unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    sb_put(b, s + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': sb_put(b, "\\\"", 2); break;
      case '\\': sb_put(b, "\\\\", 2); break;
      case '\n': sb_put(b, "\\n", 2); break;
      case '\t': sb_put(b, "\\t", 2); break;
      case '\r': sb_put(b, "\\r", 2); break;
      default: sb_printf(b, "\\u%04x", c); break;
    }
  }
  sb_put(b, s + run, n - run);
  sb_put(b, "\"", 1);
}

static void sb_json_cstr(sbuf *b, const char *s) { sb_json_str(b, s, strlen(s)); }

/* A float as Python's json writes it for the presets' values: integers as "1000000.0", others with the
 * fewest significant digits that read back as the same float ("1e-06"). The decimal point is forced
 * to '.' whatever the C locale. */
static void sb_json_float(sbuf *b, float v) {
  char tmp[48];
  if (v > -1e15f && v < 1e15f && v == (float)(int64_t)v) {
    snprintf(tmp, sizeof tmp, "%lld.0", (long long)v);
  } else {
    for (int prec = 1; prec <= 9; prec++) {
      snprintf(tmp, sizeof tmp, "%.*g", prec, (double)v);
      for (char *q = tmp; *q; q++)
        if (*q == ',') *q = '.';
      if (strtof(tmp, NULL) == v) break;
    }
  }
  sb_put(b, tmp, strlen(tmp));
}

// ----------------------------------------------------------------------------------------------------
// config.json

static const char *hf_dtype_name(uint32_t type) {
  return type == FG_TYPE_BF16 ? "bfloat16" : type == FG_TYPE_F16 ? "float16" : "float32";
}

static void hf_config_json(sbuf *b, const fg_gen_params *p, const fg_g3_hparams *hp, uint32_t n_vocab, bool tied) {
  const bool v4 = p->hf_config == 4;
  const uint32_t P = hp->swa_pattern;
  sb_printf(b, "{\n");
  if (!v4) sb_printf(b, "  \"_sliding_window_pattern\": %u,\n", P);
  sb_printf(b, "  \"architectures\": [\n    \"Gemma3ForCausalLM\"\n  ],\n");
  sb_printf(b, "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n  \"attn_logit_softcapping\": null,\n");
  sb_printf(b, "  \"bos_token_id\": 2,\n");
  if (v4) sb_printf(b, "  \"cache_implementation\": \"hybrid\",\n");
  if (!v4) sb_printf(b, "  \"dtype\": \"%s\",\n", hf_dtype_name(p->type));
  sb_printf(b, "  \"eos_token_id\": 1,\n  \"final_logit_softcapping\": null,\n");
  sb_printf(b, "  \"head_dim\": %u,\n  \"hidden_activation\": \"gelu_pytorch_tanh\",\n  \"hidden_size\": %u,\n",
            hp->head_dim, hp->n_embd);
  sb_printf(b, "  \"initializer_range\": 0.02,\n  \"intermediate_size\": %u,\n", hp->n_ff);
  if (!v4) {
    sb_printf(b, "  \"layer_types\": [\n");
    for (uint32_t l = 0; l < hp->n_layer; l++)
      sb_printf(b, "    \"%s\"%s\n", l % P == P - 1 ? "full_attention" : "sliding_attention", l + 1 < hp->n_layer ? "," : "");
    sb_printf(b, "  ],\n");
  }
  sb_printf(b, "  \"max_position_embeddings\": %u,\n  \"model_type\": \"gemma3_text\",\n", hp->n_ctx);
  sb_printf(b, "  \"num_attention_heads\": %u,\n  \"num_hidden_layers\": %u,\n  \"num_key_value_heads\": %u,\n",
            hp->n_head, hp->n_layer, hp->n_head_kv);
  sb_printf(b, "  \"pad_token_id\": 0,\n  \"query_pre_attn_scalar\": %u,\n", hp->head_dim);
  sb_printf(b, "  \"rms_norm_eps\": ");
  sb_json_float(b, hp->rms_eps);
  sb_printf(b, ",\n");
  if (v4) {
    sb_printf(b, "  \"rope_local_base_freq\": ");
    sb_json_float(b, hp->rope_base_swa);
    sb_printf(b, ",\n  \"rope_scaling\": null,\n  \"rope_theta\": ");
    sb_json_float(b, hp->rope_base);
    sb_printf(b, ",\n  \"sliding_window\": %u,\n  \"sliding_window_pattern\": %u,\n", hp->sliding_window, P);
    sb_printf(b, "  \"tie_word_embeddings\": %s,\n", tied ? "true" : "false");
    sb_printf(b, "  \"torch_dtype\": \"%s\",\n  \"transformers_version\": \"4.50.0\",\n", hf_dtype_name(p->type));
  } else {
    sb_printf(b, "  \"rope_parameters\": {\n    \"full_attention\": {\n      \"rope_theta\": ");
    sb_json_float(b, hp->rope_base);
    sb_printf(b, ",\n      \"rope_type\": \"default\"\n    },\n    \"sliding_attention\": {\n      \"rope_theta\": ");
    sb_json_float(b, hp->rope_base_swa);
    sb_printf(b, ",\n      \"rope_type\": \"default\"\n    }\n  },\n");
    sb_printf(b, "  \"sliding_window\": %u,\n  \"tie_word_embeddings\": %s,\n", hp->sliding_window, tied ? "true" : "false");
    sb_printf(b, "  \"transformers_version\": \"5.17.0\",\n  \"use_bidirectional_attention\": false,\n");
  }
  sb_printf(b, "  \"use_cache\": true,\n  \"vocab_size\": %u\n}\n", n_vocab);
}

// ----------------------------------------------------------------------------------------------------
// tokenizer.json, tokenizer_config.json, chat template

/* The chat template written with the checkpoint: Gemma's turn format (a test value for the
 * converter's tokenizer.chat_template; not FunctionGemma's full template). */
static const char k_chat_template[] =
    "{{ bos_token }}{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + "
    "'<end_of_turn>\\n' }}{%- endfor -%}{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}";

static void hf_tokenizer_config(sbuf *b, const fg_gen_params *p, uint32_t n_ctx) {
  sb_printf(b, "{\n  \"add_bos_token\": true,\n  \"add_eos_token\": false,\n  \"bos_token\": \"<bos>\",\n");
  if (p->hf_config == 4) {
    sb_printf(b, "  \"chat_template\": ");
    sb_json_cstr(b, k_chat_template);
    sb_printf(b, ",\n");
  }
  sb_printf(b, "  \"clean_up_tokenization_spaces\": false,\n  \"eos_token\": \"<eos>\",\n");
  sb_printf(b, "  \"model_max_length\": %u,\n  \"pad_token\": \"<pad>\",\n  \"padding_side\": \"left\",\n", n_ctx);
  sb_printf(b, "  \"tokenizer_class\": \"GemmaTokenizer\",\n  \"unk_token\": \"<unk>\"\n}\n");
}

/* Bytes of the last character of a piece: "▁" (3) or one byte. */
static size_t last_char_len(const char *s, size_t n) {
  return n >= 3 && memcmp(s + n - 3, "\xE2\x96\x81", 3) == 0 ? 3 : 1;
}

/* tokenizer.json of the synthetic vocabulary: BPE with byte fallback like Gemma 3's, a merge
 * (prefix, last character) per multi-character piece in id order (the synthetic scores' order). */
static fg_status hf_tokenizer_synthetic(hf_out *o, fg_hf_vocab *v) {
  fg_status st = fg_hf_vocab_index(v, o->err);
  if (st != FG_OK) return st;
  sbuf b = {0};
  sb_printf(&b, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
  bool first = true;
  for (uint32_t id = 0; id < v->n; id++) {
    const int32_t t = v->type[id];
    if (t != FG_TOK_CONTROL && t != FG_TOK_UNKNOWN && t != FG_TOK_USER && t != FG_TOK_UNUSED) continue;
    sb_printf(&b, "%s{\"id\":%u,\"content\":", first ? "" : ",", id);
    sb_json_str(&b, v->text[id], v->len[id]);
    sb_printf(&b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":%s}",
              t == FG_TOK_CONTROL || t == FG_TOK_UNKNOWN ? "true" : "false");
    first = false;
  }
  sb_printf(&b, "],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"},"
                "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"MergedWithPrevious\","
                "\"invert\":false},\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
                "{\"id\":\"<bos>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":[{\"SpecialToken\":"
                "{\"id\":\"<bos>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":"
                "\"<bos>\",\"type_id\":1}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],\"special_tokens\":{\"<bos>\":"
                "{\"id\":\"<bos>\",\"ids\":[2],\"tokens\":[\"<bos>\"]}}},\"decoder\":{\"type\":\"Sequence\",\"decoders\":"
                "[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xE2\x96\x81\"},\"content\":\" \"},{\"type\":"
                "\"ByteFallback\"},{\"type\":\"Fuse\"}]},\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":"
                "\"<unk>\",\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":true,"
                "\"byte_fallback\":true,\"ignore_merges\":false,\"vocab\":{");
  for (uint32_t id = 0; id < v->n; id++) {
    if (id) sb_put(&b, ",", 1);
    sb_json_str(&b, v->text[id], v->len[id]);
    sb_printf(&b, ":%u", id);
  }
  sb_printf(&b, "},\"merges\":[");
  first = true;
  for (uint32_t id = 0; id < v->n; id++) {
    if (v->type[id] != FG_TOK_NORMAL) continue;
    const size_t lc = last_char_len(v->text[id], v->len[id]);
    if (lc >= v->len[id]) continue; /* a single character */
    const size_t lp = v->len[id] - lc;
    if (fg_hf_vocab_find(v, v->text[id], lp) < 0 || fg_hf_vocab_find(v, v->text[id] + lp, lc) < 0) continue;
    sb_put(&b, first ? "[" : ",[", first ? 1 : 2);
    sb_json_str(&b, v->text[id], lp);
    sb_put(&b, ",", 1);
    sb_json_str(&b, v->text[id] + lp, lc);
    sb_put(&b, "]", 1);
    first = false;
  }
  sb_printf(&b, "]}}\n");
  if (b.nomem) st = fg_err(o->err, FG_ERR_NOMEM, "gen: out of memory (tokenizer.json)");
  else st = hf_write_text(o, "tokenizer.json", b.p, b.n);
  fg_free(b.p);
  return st;
}

/* Gemma 3's own tokenizer.json with FunctionGemma's seven control tokens at ids 46..52 (as the
 * vocabulary gen_model.c made): the keys of model.vocab and the added_tokens entries of those ids are
 * renamed and flagged special; every other byte of the file is kept. */
typedef struct hf_patch {
  size_t at, len;  /* bytes replaced */
  const char *with;
} hf_patch;

static fg_status hf_tokenizer_patched(hf_out *o, const char *json, size_t size) {
  hf_patch patch[32];
  size_t n_patch = 0;
  fg_js js;
  fg_js_str key;
  bool done;
  fg_js_init(&js, json, size);
#define HF_PATCH(ptr_, len_, with_)                                                   \
  do {                                                                                \
    if (n_patch == sizeof patch / sizeof patch[0]) goto bad;                          \
    patch[n_patch].at = (size_t)((ptr_) - json);                                      \
    patch[n_patch].len = (len_);                                                      \
    patch[n_patch].with = (with_);                                                    \
    n_patch++;                                                                        \
  } while (0)
  if (!fg_js_obj_begin(&js)) goto bad;
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done)) goto bad;
    if (done) break;
    if (fg_js_str_eq(key, "model") && fg_js_peek(&js) == FG_JS_OBJECT) {
      fg_js_obj_begin(&js);
      for (;;) {
        if (!fg_js_obj_next(&js, &key, &done)) goto bad;
        if (done) break;
        if (!fg_js_str_eq(key, "vocab") || fg_js_peek(&js) != FG_JS_OBJECT) {
          if (!fg_js_skip(&js)) goto bad;
          continue;
        }
        fg_js_obj_begin(&js);
        for (;;) {
          fg_js_str piece;
          uint64_t id;
          if (!fg_js_obj_next(&js, &piece, &done)) goto bad;
          if (done) break;
          if (!fg_js_uint(&js, &id)) goto bad;
          if (id >= FG_FN_TOKEN_FIRST_ID && id < FG_FN_TOKEN_FIRST_ID + 7 &&
              !fg_js_str_eq(piece, fg_fn_tokens[id - FG_FN_TOKEN_FIRST_ID]))
            HF_PATCH(piece.ptr, piece.len, fg_fn_tokens[id - FG_FN_TOKEN_FIRST_ID]);
        }
      }
    } else if (fg_js_str_eq(key, "added_tokens") && fg_js_peek(&js) == FG_JS_ARRAY) {
      fg_js_arr_begin(&js);
      for (;;) {
        if (!fg_js_arr_next(&js, &done)) goto bad;
        if (done) break;
        if (!fg_js_obj_begin(&js)) goto bad;
        uint64_t id = UINT64_MAX;
        fg_js_str content = {0};
        const char *special_at = NULL;
        size_t special_len = 0;
        bool special = false;
        for (;;) {
          if (!fg_js_obj_next(&js, &key, &done)) goto bad;
          if (done) break;
          if (fg_js_str_eq(key, "id")) {
            if (!fg_js_uint(&js, &id)) goto bad;
          } else if (fg_js_str_eq(key, "content")) {
            if (!fg_js_string(&js, &content)) goto bad;
          } else if (fg_js_str_eq(key, "special")) {
            fg_js_peek(&js);
            special_at = js.p;
            if (!fg_js_bool(&js, &special)) goto bad;
            special_len = (size_t)(js.p - special_at);
          } else if (!fg_js_skip(&js)) {
            goto bad;
          }
        }
        if (id >= FG_FN_TOKEN_FIRST_ID && id < FG_FN_TOKEN_FIRST_ID + 7) {
          if (!content.ptr || !special_at) goto bad;
          if (!fg_js_str_eq(content, fg_fn_tokens[id - FG_FN_TOKEN_FIRST_ID]))
            HF_PATCH(content.ptr, content.len, fg_fn_tokens[id - FG_FN_TOKEN_FIRST_ID]);
          if (!special) HF_PATCH(special_at, special_len, "true");
        }
      }
    } else if (!fg_js_skip(&js)) {
      goto bad;
    }
  }
#undef HF_PATCH
  /* patches come in file order when model precedes added_tokens or the other way round: sort */
  for (size_t i = 1; i < n_patch; i++)
    for (size_t j = i; j > 0 && patch[j - 1].at > patch[j].at; j--) {
      const hf_patch t = patch[j];
      patch[j] = patch[j - 1];
      patch[j - 1] = t;
    }
  FILE *f;
  fg_status st = hf_open(o, "tokenizer.json", &f);
  if (st != FG_OK) return st;
  size_t at = 0;
  bool ok = true;
  for (size_t i = 0; i < n_patch && ok; i++) {
    const size_t wl = strlen(patch[i].with);
    ok = fwrite(json + at, 1, patch[i].at - at, f) == patch[i].at - at && fwrite(patch[i].with, 1, wl, f) == wl;
    at = patch[i].at + patch[i].len;
  }
  if (ok) ok = fwrite(json + at, 1, size - at, f) == size - at;
  if (!ok) st = fg_err(o->err, FG_ERR_IO, "gen: cannot write %s/tokenizer.json", o->dir);
  return hf_close(o, f, "tokenizer.json", st);
bad:
  return fg_err(o->err, FG_ERR_FORMAT, "gen: cannot find FunctionGemma's ids 46..52 in the tokenizer.json%s%s",
                js.failed ? ": " : "", js.err);
}

// ----------------------------------------------------------------------------------------------------
// Safetensors

static int cmp_hf_name(const void *a, const void *b) {
  return strcmp((*(const fg_gen_tensor *const *)a)->hf, (*(const fg_gen_tensor *const *)b)->hf);
}

static uint32_t st_dtype_of(uint32_t type) {
  return type == FG_TYPE_BF16 ? FG_ST_BF16 : type == FG_TYPE_F16 ? FG_ST_F16 : FG_ST_F32;
}

/* One shard: header, then each tensor's rows converted to the checkpoint's dtype. */
static fg_status hf_write_shard(hf_out *o, const char *name, fg_gen_tensor *const *ts, size_t n, uint64_t seed,
                                uint8_t *buf, float *row) {
  sbuf h = {0};
  sb_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const fg_gen_tensor *t = ts[i];
    sb_put(&h, ",", 1);
    sb_json_cstr(&h, t->hf);
    sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":", fg_st_dtype_name((fg_st_dtype)st_dtype_of(t->type)));
    if (t->n_dims == 1) sb_printf(&h, "[%llu]", (unsigned long long)t->ne[0]);
    else sb_printf(&h, "[%llu,%llu]", (unsigned long long)t->ne[1], (unsigned long long)t->ne[0]);
    sb_printf(&h, ",\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->nbytes));
    off += t->nbytes;
  }
  sb_put(&h, "}", 1);
  while (!h.nomem && h.n % 8 != 0) sb_put(&h, " ", 1); /* the data starts 8-aligned, as safetensors pads */
  if (h.nomem) {
    fg_free(h.p);
    return fg_err(o->err, FG_ERR_NOMEM, "gen: out of memory (safetensors header)");
  }
  FILE *f;
  fg_status st = hf_open(o, name, &f);
  if (st != FG_OK) {
    fg_free(h.p);
    return st;
  }
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
  if (fwrite(len, 1, 8, f) != 8 || fwrite(h.p, 1, h.n, f) != h.n) st = fg_err(o->err, FG_ERR_IO, "gen: cannot write %s", name);
  fg_free(h.p);
  for (size_t i = 0; i < n && st == FG_OK; i++) {
    const fg_gen_tensor *t = ts[i];
    fg_gen_rng rng;
    fg_gen_rng_seed(&rng, seed, t->name);
    const size_t cols = (size_t)t->ne[0], rb = (size_t)t->row_bytes;
    const uint64_t chunk = FG_MAX(1, HF_CHUNK_BYTES / rb);
    for (uint64_t r0 = 0; r0 < t->ne[1] && st == FG_OK; r0 += chunk) {
      const uint64_t r1 = FG_MIN(t->ne[1], r0 + chunk);
      for (uint64_t r = r0; r < r1; r++) {
        fg_gen_fill_row(&rng, t, row, cols);
        if (fg_gen_is_norm(t))
          for (size_t k = 0; k < cols; k++) row[k] -= 1.0f; /* the checkpoint stores w - 1 */
        fg_quantize_row(t->type, row, buf + (size_t)(r - r0) * rb, cols);
      }
      const size_t nb = (size_t)(r1 - r0) * rb;
      if (fwrite(buf, 1, nb, f) != nb) st = fg_err(o->err, FG_ERR_IO, "gen: cannot write %s", name);
      o->done += nb;
      if (st == FG_OK && o->params->progress && !o->params->progress(o->done, o->total, o->params->progress_user_data))
        st = fg_err(o->err, FG_ERR_ABORTED, "gen: cancelled by the progress callback");
    }
  }
  return hf_close(o, f, name, st);
}

static fg_status hf_write_weights(hf_out *o, const fg_gen_plan *plan, uint64_t seed) {
  const uint32_t n_shards = o->params->hf_shards > 1 ? o->params->hf_shards : 1;
  if (n_shards > plan->n) return fg_err(o->err, FG_ERR_INVALID_ARG, "gen: %u shards for %zu tensors", n_shards, plan->n);
  fg_gen_tensor **ts = fg_malloc_array(plan->n, sizeof *ts);
  uint32_t *shard_of = fg_malloc_array(plan->n, sizeof *shard_of);
  uint64_t max_rb = 0, max_cols = 0;
  for (size_t i = 0; i < plan->n; i++) {
    max_rb = FG_MAX(max_rb, plan->t[i].row_bytes);
    max_cols = FG_MAX(max_cols, plan->t[i].ne[0]);
  }
  const size_t buf_bytes = (size_t)FG_MAX(max_rb, HF_CHUNK_BYTES);
  uint8_t *buf = fg_malloc(buf_bytes);
  float *row = fg_malloc_array((size_t)max_cols, sizeof *row);
  sbuf idx = {0};
  fg_status st = FG_OK;
  if (!ts || !shard_of || !buf || !row) {
    st = fg_err(o->err, FG_ERR_NOMEM, "gen: out of memory");
    goto done;
  }
  for (size_t i = 0; i < plan->n; i++) {
    ts[i] = &plan->t[i];
    o->total += plan->t[i].nbytes;
  }
  qsort(ts, plan->n, sizeof *ts, cmp_hf_name); /* safetensors files list tensors by name */
  /* shard k holds the tensors whose first byte falls in the k-th of n_shards equal parts (in name
   * order), and at least one tensor */
  uint64_t before = 0;
  for (size_t i = 0; i < plan->n; i++) {
    const uint32_t prev = i == 0 ? 0 : shard_of[i - 1];
    uint64_t target = before * n_shards / (o->total ? o->total : 1);
    if (target > (uint64_t)prev + (i > 0)) target = (uint64_t)prev + (i > 0); /* never skip a shard */
    if (target < prev) target = prev;
    const uint64_t room = plan->n - i; /* tensors left, this one included */
    if (n_shards - target > room) target = n_shards - room; /* one tensor for each shard still to come */
    shard_of[i] = (uint32_t)target;
    before += ts[i]->nbytes;
  }
  if (n_shards == 1) {
    st = hf_write_shard(o, "model.safetensors", ts, plan->n, seed, buf, row);
    goto done;
  }
  sb_printf(&idx, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n",
            (unsigned long long)o->total);
  size_t i0 = 0;
  for (uint32_t s = 0; s < n_shards && st == FG_OK; s++) {
    size_t i1 = i0;
    while (i1 < plan->n && shard_of[i1] == s) i1++;
    char name[48];
    snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", s + 1, n_shards);
    st = hf_write_shard(o, name, ts + i0, i1 - i0, seed, buf, row);
    for (size_t i = i0; i < i1; i++) {
      sb_printf(&idx, "    ");
      sb_json_cstr(&idx, ts[i]->hf);
      sb_printf(&idx, ": \"%s\"%s\n", name, i + 1 < plan->n ? "," : "");
    }
    i0 = i1;
  }
  sb_printf(&idx, "  }\n}\n");
  if (st == FG_OK) {
    st = idx.nomem ? fg_err(o->err, FG_ERR_NOMEM, "gen: out of memory")
                   : hf_write_text(o, "model.safetensors.index.json", idx.p, idx.n);
  }
done:
  fg_free(idx.p);
  fg_free(ts);
  fg_free(shard_of);
  fg_free(buf);
  fg_free(row);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// The directory

fg_status fg_gen_write_hf(const fg_gen_params *p, const fg_gen_preset *pr, const fg_gen_plan *plan,
                          uint64_t seed, const fg_hf_vocab *vc, const char *json, size_t json_size, const char *dir,
                          fg_error *err) {
  hf_out o;
  memset(&o, 0, sizeof o);
  o.params = p;
  o.err = err;
  struct stat sb;
  if (stat(dir, &sb) == 0) return fg_err(err, FG_ERR_IO, "gen: %s already exists (the checkpoint goes into a new directory)", dir);
  const size_t dl = strlen(dir) + 32;
  if (!(o.dir = fg_malloc(dl))) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory");
  snprintf(o.dir, dl, "%s.tmp.%ld", dir, (long)getpid());
  if (mkdir(o.dir, 0777) != 0) {
    const fg_status st = fg_err(err, FG_ERR_IO, "gen: cannot create the directory %s: %s", o.dir, strerror(errno));
    fg_free(o.dir);
    return st;
  }
  fg_hf_vocab *v = (fg_hf_vocab *)vc; /* the synthetic writer indexes it */
  bool tied = true;
  for (size_t i = 0; i < plan->n; i++) tied &= strcmp(plan->t[i].name, "output.weight") != 0;
  sbuf cfg = {0}, tc = {0};
  hf_config_json(&cfg, p, &pr->hp, v->n, tied);
  hf_tokenizer_config(&tc, p, pr->hp.n_ctx);
  fg_status st = cfg.nomem || tc.nomem ? fg_err(err, FG_ERR_NOMEM, "gen: out of memory") : FG_OK;
  if (st == FG_OK) st = hf_write_text(&o, "config.json", cfg.p, cfg.n);
  if (st == FG_OK) st = hf_write_weights(&o, plan, seed);
  if (st == FG_OK) st = json ? hf_tokenizer_patched(&o, json, json_size) : hf_tokenizer_synthetic(&o, v);
  if (st == FG_OK) st = hf_write_text(&o, "tokenizer_config.json", tc.p, tc.n);
  if (st == FG_OK && p->hf_config != 4) st = hf_write_text(&o, "chat_template.jinja", k_chat_template, strlen(k_chat_template));
  fg_free(cfg.p);
  fg_free(tc.p);
  if (st == FG_OK && rename(o.dir, dir) != 0)
    st = fg_err(err, FG_ERR_IO, "gen: cannot rename %s to %s: %s", o.dir, dir, strerror(errno));
  if (st != FG_OK) {
    char path[4096];
    for (size_t i = 0; i < o.n_names; i++) {
      snprintf(path, sizeof path, "%s/%s", o.dir, o.names[i]);
      remove(path);
    }
    rmdir(o.dir);
  }
  fg_free(o.dir);
  return st;
}
