/* gen_model.c — the synthetic model generator: a valid GGUF v3 file of architecture `gemma3` with
 * random weights drawn from a seed, streamed tensor by tensor (generate rows, quantize, write).
 *
 * Determinism: the same parameters give a byte-identical file on every platform. Random numbers come
 * from xoshiro256** (seeded per tensor through splitmix64, so a tensor's values depend only on the
 * seed and its name, not on the order or on the other tensors); normal variates use Marsaglia's polar
 * form of Box-Muller with a logarithm written here from +, -, *, / only, and sqrt (IEEE 754 requires it
 * to be correctly rounded). No libm transcendental function is used, because those differ between
 * C libraries. The library is compiled as ISO C11, where GCC does not contract a*b+c into an FMA;
 * clang is told the same below. x87 (FLT_EVAL_METHOD 2) is not a target.
 *
 * With FG_GEN_FORMAT_HF the same tensors go into a Hugging Face checkpoint instead (gen_hf.c). */
#include "gen/gen_internal.h"

#include "gguf/gguf.h"
#include "tensor/dtype.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define GEN_DEFAULT_SEED 1u

/* ------------------------------------------------------------------------------------------------
 * Weight statistics
 *
 * Matrices ~ N(0, 1/fan_in): with RMS-normed inputs (norm weights ~1) every projection output has
 * entries of order 1; Gemma's post-norms (post_attention_norm, post_ffw_norm) re-normalise each
 * block's contribution before it is added to the residual, so the residual grows only like the square
 * root of the number of blocks and every activation stays O(1).
 *
 * Peaked next-token distributions: the final RMSNorm output y has RMS equal to the output_norm
 * weight w (near-constant, W * (1 ± 0.05)). A logit is y . e_j, a sum of n_embd products of
 * independent terms, so its standard deviation over the vocabulary is W * sqrt(n_embd) * s when the
 * head rows have RMS s. We want GEN_LOGIT_STD = 8: the expected gap between the two largest of N normal
 * samples is about sigma / sqrt(2 ln N), so with 262,144 tokens the top-1 token leads the runner-up by
 * ~1.5 logits on average (far above kernel rounding noise) and greedy decoding is a meaningful check.
 * Every embedding/head row is rescaled to RMS exactly s = GEN_EMBD_STD_FACTOR / sqrt(n_embd) (no token
 * becomes a "hub" that wins for most inputs merely because its random row came out long), hence
 * W = GEN_LOGIT_STD / GEN_EMBD_STD_FACTOR = 32. An untied output.weight uses the same s and W.
 *
 * Greedy runs that do not collapse: a random model tends to repeat one token, for two reasons
 * measured on this generator (reference forward, greedy from random prompts):
 *  - with a tied head the raw input row x0 = e_t * sqrt(n_embd) stays in the residual and raises the
 *    logit of t itself by about W * GEN_EMBD_STD_FACTOR^2 * sqrt(n_embd) / RMS(residual) (2 sigma on
 *    270m at factor 0.5). Factor 0.25 keeps that below 1 sigma; the input still carries its full signal
 *    because layer 0's attn_norm rescales it;
 *  - near-uniform random attention adds nearly the same context average at every position, so the
 *    hidden state barely changes from one position to the next. Damping that contribution with
 *    post_attention_norm weights of GEN_POST_ATTN_NORM = 0.3 keeps the hidden state token-specific.
 * With weights 1 and factor 0.5, 37 of 45 greedy steps on 270m repeated the previous id; with these
 * settings 0 of 45 (3 seeds). Sharpening attention instead (q/k norm weights 3) also stops the
 * repetition, but made the model chaotic: a 1e-6 relative change of the input moved the logits by 1e-2
 * instead of 3e-4, too fragile for comparisons with other implementations.
 *
 * The other norm weights (Gemma's +1 already included) are uniform in 1 ± FG_GEN_NORM_SPREAD (gen_internal.h). */
#define GEN_LOGIT_STD 8.0
#define GEN_EMBD_STD_FACTOR 0.25
#define GEN_POST_ATTN_NORM 0.3

/* ------------------------------------------------------------------------------------------------
 * Presets
 */
static const fg_gen_preset gen_presets[] = {
    /* name    ctx    embd layer ff   head kv hdim  swa pat  eps    rope  rope_swa softcap  vocab */
    {"270m", {32768, 640, 18, 2048, 4, 1, 256, 512, 6, 1e-6f, 1e6f, 1e4f, 0.0f}, 262144},
    {"tiny", {2048, 64, 6, 128, 4, 1, 32, 8, 6, 1e-6f, 1e6f, 1e4f, 0.0f}, 512},
    /* the HF oracle's window case: 270m's attention (4 heads of 256, 1 KV head, window 512) at a small
     * width, with a pattern and a sliding RoPE base other than the defaults, so a converter that ignored
     * the checkpoint's values would be caught */
    {"small", {4096, 128, 6, 512, 4, 1, 256, 512, 3, 1e-6f, 1e6f, 2e4f, 0.0f}, 262144},
};

static const fg_gen_preset *gen_find_preset(const char *name) {
  for (size_t i = 0; i < sizeof gen_presets / sizeof gen_presets[0]; i++)
    if (strcmp(gen_presets[i].name, name) == 0) return &gen_presets[i];
  return NULL;
}

static bool gen_type_ok(uint32_t type) { return fg_type_traits_get(type) != NULL; }

/* ------------------------------------------------------------------------------------------------
 * Vocabulary: synthetic, or Gemma 3's tokenizer.json with FunctionGemma's control tokens
 */
#define GEN_FN_FIRST_ID FG_FN_TOKEN_FIRST_ID

static void gen_vocab_putz(fg_hf_vocab *v, uint32_t id, const char *s, int32_t type) {
  fg_hf_vocab_put(v, id, s, strlen(s), type, 0.0f);
}

/* ---- synthetic ---- */

/* Printable ASCII ordered roughly by frequency in text; ' ' is written as U+2581 in pieces. Multi-char
 * pieces enumerate strings over a prefix of it, so pieces made of frequent characters come first. */
static const char gen_alphabet[] =
    " etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ0123456789.,-'\"():;!?/_=+*&%$#@<>[]{}|\\^`~";

static size_t gen_char_piece(char c, char *out) {
  if (c == ' ') {
    memcpy(out, "\xE2\x96\x81", 3); /* U+2581 LOWER ONE EIGHTH BLOCK */
    return 3;
  }
  out[0] = c;
  return 1;
}

/* Multi-char pieces of each length use the first k characters of gen_alphabet. Every piece of length
 * L > 2 is a piece of length L-1 plus a single character, so SentencePiece-style merging reaches it. */
static const struct { uint32_t len, k; } gen_multi_plan[] = {{2, 95}, {3, 40}, {4, 20}, {5, 12}, {6, 8}};

/* Appends up to `want` multi-char pieces at ids first.., with scores -1, -2, ... (earlier = merged
 * first). Within one length, strings are enumerated in shells of growing largest character index. */
static uint32_t gen_vocab_multi(fg_hf_vocab *v, uint32_t first, uint32_t want) {
  uint32_t made = 0;
  for (size_t p = 0; p < sizeof gen_multi_plan / sizeof gen_multi_plan[0] && made < want; p++) {
    const uint32_t L = gen_multi_plan[p].len, k = gen_multi_plan[p].k;
    for (uint32_t m = 0; m < k && made < want; m++) {
      uint32_t idx[8] = {0}; /* odometer over [0, m]^L */
      for (;;) {
        uint32_t mx = 0;
        for (uint32_t i = 0; i < L; i++) mx = FG_MAX(mx, idx[i]);
        if (mx == m) {
          char buf[8 * 3];
          size_t n = 0;
          for (uint32_t i = 0; i < L; i++) n += gen_char_piece(gen_alphabet[idx[i]], buf + n);
          fg_hf_vocab_put(v, first + made, buf, n, FG_TOK_NORMAL, -(float)(made + 1));
          if (++made == want) break;
        }
        uint32_t i = L;
        while (i > 0 && idx[i - 1] == m) idx[--i] = 0;
        if (i == 0) break;
        idx[i - 1]++;
      }
    }
  }
  return made;
}

/* ids 0..4 pad/eos/bos/unk/mask, 5..45 unused, 46..52 FunctionGemma, 53..104 unused, 105/106 turns,
 * 107..362 bytes <0x00>..<0xFF>, then the 95 printable ASCII characters, then multi-char pieces in
 * three quarters of the remaining ids and <unusedN> in the rest. */
static fg_status gen_vocab_synthetic(fg_hf_vocab *v, uint32_t n, fg_error *err) {
  const uint32_t n_fixed = 107 + 256 + 95;
  if (n < n_fixed) return fg_err(err, FG_ERR_INTERNAL, "gen: synthetic vocabulary needs %u ids", n_fixed);
  /* every piece is < 32 bytes with its NUL */
  if (fg_hf_vocab_alloc(v, n, (size_t)n * 32 + 4096) != FG_OK)
    return fg_err(err, FG_ERR_NOMEM, "gen: out of memory (vocabulary)");

  static const char *const first[5] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
  static const int32_t first_type[5] = {FG_TOK_CONTROL, FG_TOK_CONTROL, FG_TOK_CONTROL, FG_TOK_UNKNOWN,
                                        FG_TOK_USER};
  uint32_t n_unused = 0;
  char buf[32];
  for (uint32_t id = 0; id < 107; id++) {
    if (id < 5) {
      gen_vocab_putz(v, id, first[id], first_type[id]);
    } else if (id >= GEN_FN_FIRST_ID && id < GEN_FN_FIRST_ID + 7) {
      gen_vocab_putz(v, id, fg_fn_tokens[id - GEN_FN_FIRST_ID], FG_TOK_CONTROL);
    } else if (id == 105) {
      gen_vocab_putz(v, id, "<start_of_turn>", FG_TOK_CONTROL);
    } else if (id == 106) {
      gen_vocab_putz(v, id, "<end_of_turn>", FG_TOK_CONTROL);
    } else {
      snprintf(buf, sizeof buf, "<unused%u>", n_unused++);
      gen_vocab_putz(v, id, buf, FG_TOK_UNUSED);
    }
  }
  for (uint32_t b = 0; b < 256; b++) {
    snprintf(buf, sizeof buf, "<0x%02X>", b);
    gen_vocab_putz(v, 107 + b, buf, FG_TOK_BYTE);
  }
  uint32_t id = 107 + 256;
  for (int c = 0x20; c < 0x7F; c++) {
    size_t len = gen_char_piece((char)c, buf);
    fg_hf_vocab_put(v, id++, buf, len, FG_TOK_NORMAL, 0.0f);
  }
  const uint32_t room = n - id;
  id += gen_vocab_multi(v, id, (uint32_t)((uint64_t)room * 3 / 4));
  for (; id < n; id++) {
    snprintf(buf, sizeof buf, "<unused%u>", n_unused++);
    gen_vocab_putz(v, id, buf, FG_TOK_UNUSED);
  }
  return FG_OK;
}

/* ---- from a Hugging Face tokenizer.json ---- */

static fg_status gen_read_file(const char *path, char **out, size_t *size, fg_error *err) {
  *out = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return fg_err(err, FG_ERR_IO, "gen: cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 20, n = 0;
  char *buf = fg_malloc(cap);
  if (!buf) {
    fclose(f);
    return fg_err(err, FG_ERR_NOMEM, "gen: out of memory reading %s", path);
  }
  for (;;) {
    if (n == cap) {
      char *nb = cap <= SIZE_MAX / 2 ? fg_realloc(buf, cap * 2) : NULL;
      if (!nb) {
        fg_free(buf);
        fclose(f);
        return fg_err(err, FG_ERR_NOMEM, "gen: out of memory reading %s", path);
      }
      buf = nb;
      cap *= 2;
    }
    const size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  const int bad = ferror(f);
  fclose(f);
  if (bad) {
    fg_free(buf);
    return fg_err(err, FG_ERR_IO, "gen: cannot read %s", path);
  }
  *out = buf;
  *size = n;
  return FG_OK;
}

/* The file's vocabulary (hf_vocab.c), then FunctionGemma's control tokens in place of
 * <unused40>..<unused46> at ids 46..52. The file's bytes are kept in *text (the HF writer copies them). */
static fg_status gen_vocab_from_json(fg_hf_vocab *v, const char *path, char **text, size_t *size, fg_error *err) {
  fg_status st = gen_read_file(path, text, size, err);
  if (st != FG_OK) return st;
  fg_error e;
  st = fg_hf_vocab_read_json(*text, *size, path, v, NULL, &e);
  if (st != FG_OK) return fg_err(err, st, "gen: %s", e.msg);
  if (v->n <= GEN_FN_FIRST_ID + 7)
    return fg_err(err, FG_ERR_FORMAT, "gen: %s: model.vocab has %u pieces, too few for Gemma 3", path, v->n);
  for (uint32_t i = 0; i < 7; i++) {
    const uint32_t id = GEN_FN_FIRST_ID + i;
    const int32_t other = fg_hf_vocab_find(v, fg_fn_tokens[i], strlen(fg_fn_tokens[i]));
    if (other >= 0 && (uint32_t)other != id)
      return fg_err(err, FG_ERR_FORMAT, "gen: %s: %s already exists as id %d", path, fg_fn_tokens[i], other);
    v->text[id] = fg_fn_tokens[i];
    v->len[id] = strlen(fg_fn_tokens[i]);
    v->type[id] = FG_TOK_CONTROL;
    v->score[id] = 0.0f;
  }
  return FG_OK;
}


/* ------------------------------------------------------------------------------------------------
 * Tensor plan
 */
static fg_status gen_plan_add(fg_gen_plan *p, const char *name, const char *hf, uint32_t type, uint32_t n_dims,
                              uint64_t ne0, uint64_t ne1, fg_gen_init init, double scale, fg_error *err) {
  FG_ASSERT(p->n < p->cap && strlen(name) < sizeof p->t[0].name && strlen(hf) < sizeof p->t[0].hf);
  fg_gen_tensor *t = &p->t[p->n++];
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, strlen(name) + 1);
  memcpy(t->hf, hf, strlen(hf) + 1);
  if (n_dims == 2) type = fg_type_fallback(type, ne0); /* e.g. Q4_K rows of 640 are written as Q5_0 */
  t->type = type;
  t->n_dims = n_dims;
  t->ne[0] = ne0;
  t->ne[1] = ne1;
  t->init = init;
  t->scale = scale;
  if (!fg_type_row_bytes(type, ne0, &t->row_bytes) || !fg_mul_u64(t->row_bytes, ne1, &t->nbytes))
    return fg_err(err, FG_ERR_INVALID_ARG, "gen: %s: %llu columns do not fit type %s", name,
                  (unsigned long long)ne0, fg_type_name(type));
  return FG_OK;
}

/* The tensors in GGUF file order (fg_g3_layer_tensors per block). Norm vectors are f32 in a GGUF; in a
 * checkpoint every tensor has the checkpoint's dtype (norm_type). */
static fg_status gen_plan_build(fg_gen_plan *p, const fg_gen_preset *pr, uint32_t n_vocab, uint32_t type,
                                uint32_t head_type, uint32_t norm_type, fg_error *err) {
  const fg_g3_hparams *hp = &pr->hp;
  const uint64_t E = hp->n_embd;
  const double emb_std = GEN_EMBD_STD_FACTOR / sqrt((double)E);
  const double out_norm = GEN_LOGIT_STD / GEN_EMBD_STD_FACTOR;
  p->cap = 3 + (size_t)FG_G3_LAYER_TENSORS * hp->n_layer;
  p->n = 0;
  p->t = fg_calloc(p->cap, sizeof *p->t);
  if (!p->t) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory");

  fg_status st =
      gen_plan_add(p, "token_embd.weight", FG_G3_HF_EMBED, type, 2, E, n_vocab, FG_GEN_INIT_ROWS, emb_std, err);
  for (uint32_t l = 0; l < hp->n_layer && st == FG_OK; l++) {
    for (size_t i = 0; i < FG_G3_LAYER_TENSORS && st == FG_OK; i++) {
      const fg_g3_layer_tensor *lt = &fg_g3_layer_tensors[i];
      const uint64_t in = fg_g3_dim(hp, lt->in), out = fg_g3_dim(hp, lt->out);
      char name[48], hf[64];
      snprintf(name, sizeof name, "blk.%u.%s.weight", l, lt->gguf);
      snprintf(hf, sizeof hf, "model.layers.%u.%s.weight", l, lt->hf);
      if (lt->out == 0)
        st = gen_plan_add(p, name, hf, norm_type, 1, in, 1, FG_GEN_INIT_NORM,
                          strcmp(lt->gguf, "post_attention_norm") == 0 ? GEN_POST_ATTN_NORM : 1.0, err);
      else
        st = gen_plan_add(p, name, hf, type, 2, in, out, FG_GEN_INIT_NORMAL, 1.0 / sqrt((double)in), err);
    }
  }
  if (st == FG_OK)
    st = gen_plan_add(p, "output_norm.weight", FG_G3_HF_NORM, norm_type, 1, E, 1, FG_GEN_INIT_OUT_NORM, out_norm, err);
  if (st == FG_OK && head_type != FG_GEN_HEAD_TIED)
    st = gen_plan_add(p, "output.weight", FG_G3_HF_HEAD, head_type, 2, E, n_vocab, FG_GEN_INIT_ROWS, emb_std, err);
  return st;
}

/* ------------------------------------------------------------------------------------------------
 * Writing
 */
#define GEN_CHUNK_BYTES (4u << 20) /* rows are quantized and written in chunks of about this size */

typedef struct gen_ctx {
  const fg_gen_params *params;
  uint64_t seed;
  uint64_t done, total; /* tensor bytes */
  FILE *f;
  fg_gguf_writer *w;
  fg_error *err;
} gen_ctx;

static fg_status gen_progress(gen_ctx *c, uint64_t done) {
  if (c->params->progress && !c->params->progress(done, c->total, c->params->progress_user_data))
    return fg_err(c->err, FG_ERR_ABORTED, "gen: cancelled by the progress callback");
  return FG_OK;
}

/* Generates one tensor chunk by chunk (buf holds chunk_rows rows), reporting progress after each. */
static fg_status gen_emit(gen_ctx *c, const fg_gen_tensor *t, uint8_t *buf, size_t buf_bytes, float *row) {
  fg_gen_rng rng;
  fg_gen_rng_seed(&rng, c->seed, t->name);
  const size_t n = (size_t)t->ne[0], rb = (size_t)t->row_bytes;
  const uint64_t chunk_rows = FG_MAX(1, buf_bytes / rb);
  for (uint64_t r0 = 0; r0 < t->ne[1]; r0 += chunk_rows) {
    const uint64_t r1 = FG_MIN(t->ne[1], r0 + chunk_rows);
    for (uint64_t r = r0; r < r1; r++) {
      fg_gen_fill_row(&rng, t, row, n);
      fg_quantize_row(t->type, row, buf + (size_t)(r - r0) * rb, n);
    }
    fg_status st = fg_gguf_writer_tensor_part(c->w, c->f, buf, (size_t)(r1 - r0) * rb, c->err);
    if (st != FG_OK) return st;
    c->done += (r1 - r0) * rb;
    if ((st = gen_progress(c, c->done)) != FG_OK) return st;
  }
  return FG_OK;
}

static fg_status gen_write_metadata(fg_gguf_writer *w, const fg_gen_preset *pr, const fg_hf_vocab *v, uint32_t type,
                                    const char *name, fg_error *err) {
  fg_status st = FG_OK;
  FG_GGUF_SET(st, err, "gen: ", set_str, w, FG_KEY_ARCHITECTURE, FG_ARCH_GEMMA3);
  FG_GGUF_SET(st, err, "gen: ", set_str, w, FG_KEY_NAME, name);
  FG_GGUF_SET(st, err, "gen: ", set_u32, w, FG_KEY_FILE_TYPE, fg_g3_file_type(type));
  FG_GGUF_SET(st, err, "gen: ", set_u32, w, FG_KEY_ALIGNMENT, FG_GGUF_DEFAULT_ALIGNMENT);
  const fg_hf_special sp = {.bos = 2, .eos = 1, .unk = 3, .pad = 0, .add_bos = true, .add_eos = false};
  fg_error e;
  if (st == FG_OK && (st = fg_g3_write_hparams(w, &pr->hp, &e)) != FG_OK) return fg_err(err, st, "gen: %s", e.msg);
  if (st == FG_OK && (st = fg_hf_vocab_write_gguf(w, v, &sp, &e)) != FG_OK) return fg_err(err, st, "gen: %s", e.msg);
  return st;
}

/* ------------------------------------------------------------------------------------------------
 * Public entry points
 */
void fg_gen_params_init(fg_gen_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->preset = "tiny";
  p->type = FG_TYPE_F32;
  p->head_type = FG_GEN_HEAD_TIED;
  p->seed = 0;
  p->format = FG_GEN_FORMAT_GGUF;
  p->hf_config = 5;
  p->hf_shards = 1;
}

static fg_status gen_write_gguf(const fg_gen_params *params, const fg_gen_preset *pr, const fg_gen_plan *plan,
                                uint64_t seed, fg_hf_vocab *v, const char *path, fg_error *err) {
  gen_ctx c = {0};
  c.params = params;
  c.seed = seed;
  c.err = err;
  uint8_t *buf = NULL; /* [GEN_CHUNK_BYTES or one row] a chunk of quantized rows */
  float *row = NULL;   /* [max ne0] one row in f32 */
  char *tmp = NULL;
  bool tmp_created = false;
  fg_status st = FG_OK;

  uint64_t max_row = 0, max_rb = 0;
  for (size_t i = 0; i < plan->n; i++) {
    max_row = FG_MAX(max_row, plan->t[i].ne[0]);
    max_rb = FG_MAX(max_rb, plan->t[i].row_bytes);
    if (!fg_add_u64(c.total, plan->t[i].nbytes, &c.total)) return fg_err(err, FG_ERR_INVALID_ARG, "gen: model too large");
  }
  const size_t buf_bytes = (size_t)FG_MAX(max_rb, GEN_CHUNK_BYTES);
  buf = fg_malloc(buf_bytes);
  row = fg_malloc_array((size_t)max_row, sizeof *row);
  c.w = fg_gguf_writer_create();
  if (!buf || !row || !c.w) {
    st = fg_err(err, FG_ERR_NOMEM, "gen: out of memory");
    goto done;
  }

  char name[128];
  snprintf(name, sizeof name, "fgemma synthetic %s %s seed %llu", pr->name, fg_type_name(params->type),
           (unsigned long long)seed);
  st = gen_write_metadata(c.w, pr, v, params->type, name, err);
  if (st != FG_OK) goto done;
  fg_hf_vocab_free(v); /* the writer holds copies */
  for (size_t i = 0; i < plan->n && st == FG_OK; i++) {
    const fg_gen_tensor *t = &plan->t[i];
    const uint64_t ne[2] = {t->ne[0], t->ne[1]};
    st = fg_gguf_writer_add_tensor(c.w, t->name, t->type, t->n_dims, ne);
    if (st != FG_OK) st = fg_err(err, st, "gen: cannot add tensor %s", t->name);
  }
  if (st != FG_OK) goto done;

  const size_t tmp_len = strlen(path) + 32;
  tmp = fg_malloc(tmp_len);
  if (!tmp) {
    st = fg_err(err, FG_ERR_NOMEM, "gen: out of memory");
    goto done;
  }
  snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
  c.f = fopen(tmp, "wb");
  if (!c.f) {
    st = fg_err(err, FG_ERR_IO, "gen: cannot create %s: %s", tmp, strerror(errno));
    goto done;
  }
  tmp_created = true;
  setvbuf(c.f, NULL, _IOFBF, 1 << 20);

  st = gen_progress(&c, 0);
  if (st == FG_OK) st = fg_gguf_writer_begin(c.w, c.f, err);
  for (size_t i = 0; i < plan->n && st == FG_OK; i++) st = gen_emit(&c, &plan->t[i], buf, buf_bytes, row);
  if (st == FG_OK) st = fg_gguf_writer_end(c.w, c.f, err);
  if (st == FG_OK && (fflush(c.f) != 0 || ferror(c.f)))
    st = fg_err(err, FG_ERR_IO, "gen: cannot write %s: %s", tmp, strerror(errno));
  {
    const int rc = fclose(c.f);
    c.f = NULL;
    if (st == FG_OK && rc != 0) st = fg_err(err, FG_ERR_IO, "gen: cannot write %s: %s", tmp, strerror(errno));
  }
  if (st == FG_OK && rename(tmp, path) != 0)
    st = fg_err(err, FG_ERR_IO, "gen: cannot rename %s to %s: %s", tmp, path, strerror(errno));
  if (st == FG_OK) tmp_created = false;

done:
  if (c.f) fclose(c.f);
  if (tmp_created) remove(tmp);
  fg_free(tmp);
  fg_gguf_writer_free(c.w);
  fg_free(buf);
  fg_free(row);
  return st;
}

fg_status fg_gen_model(const fg_gen_params *params, const char *path, fg_error *err) {
  fg_err_clear(err);
  fg_gen_params defaults;
  if (!params) {
    fg_gen_params_init(&defaults);
    params = &defaults;
  }
  if (!path || !*path) return fg_err(err, FG_ERR_INVALID_ARG, "gen: no output path");
  const char *preset_name = params->preset ? params->preset : "tiny";
  const fg_gen_preset *pr = gen_find_preset(preset_name);
  if (!pr) return fg_err(err, FG_ERR_INVALID_ARG, "gen: unknown preset \"%s\" (tiny, small, 270m)", preset_name);
  const bool hf = params->format == FG_GEN_FORMAT_HF;
  if (params->format != FG_GEN_FORMAT_GGUF && !hf)
    return fg_err(err, FG_ERR_INVALID_ARG, "gen: unknown format %u (0 GGUF, 1 Hugging Face)", params->format);
  const bool float_type = params->type == FG_TYPE_F32 || params->type == FG_TYPE_F16 || params->type == FG_TYPE_BF16;
  if (!gen_type_ok(params->type) || (hf && !float_type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "gen: weight type %u is not one of %s", params->type,
                  hf ? "f32 f16 bf16 (a checkpoint's dtype)" : "the supported types (fg_type_name)");
  if (params->head_type != FG_GEN_HEAD_TIED && !gen_type_ok(params->head_type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "gen: head type %u is not a supported type", params->head_type);
  if (hf && params->hf_config != 0 && params->hf_config != 4 && params->hf_config != 5)
    return fg_err(err, FG_ERR_INVALID_ARG, "gen: hf_config %u is not 4 or 5", params->hf_config);
  if (hf && params->hf_shards > 64) return fg_err(err, FG_ERR_INVALID_ARG, "gen: %u shards is too many", params->hf_shards);

  const uint64_t seed = params->seed ? params->seed : GEN_DEFAULT_SEED;
  fg_hf_vocab v = {0};
  fg_gen_plan plan = {0};
  char *json = NULL;
  size_t json_size = 0;
  fg_status st = params->vocab_json ? gen_vocab_from_json(&v, params->vocab_json, &json, &json_size, err)
                                    : gen_vocab_synthetic(&v, pr->n_vocab, err);
  if (st == FG_OK && !hf) {
    fg_free(json); /* the GGUF needs only the pieces */
    json = NULL;
  }
  /* a checkpoint has one dtype; its lm_head too */
  const uint32_t head = hf && params->head_type != FG_GEN_HEAD_TIED ? params->type : params->head_type;
  if (st == FG_OK) st = gen_plan_build(&plan, pr, v.n, params->type, head, hf ? params->type : FG_TYPE_F32, err);
  if (st == FG_OK)
    st = hf ? fg_gen_write_hf(params, pr, &plan, seed, &v, json, json_size, path, err)
            : gen_write_gguf(params, pr, &plan, seed, &v, path, err);
  fg_free(json);
  fg_free(plan.t);
  fg_hf_vocab_free(&v);
  return st;
}
