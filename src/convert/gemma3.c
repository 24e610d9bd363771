/* gemma3.c — Gemma 3's GGUF metadata and tensor names (see gemma3.h). */
#include "convert/gemma3.h"

#include "tensor/dtype.h"

#include <stdio.h>
#include <string.h>

const fg_g3_layer_tensor fg_g3_layer_tensors[FG_G3_LAYER_TENSORS] = {
    {"attn_norm", "input_layernorm", 'E', 0},
    {"attn_q", "self_attn.q_proj", 'E', 'Q'},
    {"attn_k", "self_attn.k_proj", 'E', 'K'},
    {"attn_v", "self_attn.v_proj", 'E', 'K'},
    {"attn_q_norm", "self_attn.q_norm", 'H', 0},
    {"attn_k_norm", "self_attn.k_norm", 'H', 0},
    {"attn_output", "self_attn.o_proj", 'Q', 'E'},
    {"post_attention_norm", "post_attention_layernorm", 'E', 0},
    {"ffn_norm", "pre_feedforward_layernorm", 'E', 0},
    {"ffn_gate", "mlp.gate_proj", 'E', 'F'},
    {"ffn_up", "mlp.up_proj", 'E', 'F'},
    {"ffn_down", "mlp.down_proj", 'F', 'E'},
    {"post_ffw_norm", "post_feedforward_layernorm", 'E', 0},
};

uint64_t fg_g3_dim(const fg_g3_hparams *hp, char letter) {
  switch (letter) {
    case 'E': return hp->n_embd;
    case 'Q': return (uint64_t)hp->n_head * hp->head_dim;
    case 'K': return (uint64_t)hp->n_head_kv * hp->head_dim;
    case 'F': return hp->n_ff;
    case 'H': return hp->head_dim;
    case 0: return 1;
    default: return 0;
  }
}

uint32_t fg_g3_file_type(uint32_t type) {
  switch (type) {
    case FG_TYPE_F32: return 0;
    case FG_TYPE_F16: return 1;
    case FG_TYPE_Q4_0: return 2;
    case FG_TYPE_Q4_1: return 3;
    case FG_TYPE_Q8_0: return 7;
    case FG_TYPE_Q5_0: return 8;
    case FG_TYPE_Q5_1: return 9;
    case FG_TYPE_Q2_K: return 10;
    case FG_TYPE_Q3_K: return 11; /* the _S mixes: every matrix of the type */
    case FG_TYPE_Q4_K: return 14;
    case FG_TYPE_Q5_K: return 16;
    case FG_TYPE_Q6_K: return 18;
    case FG_TYPE_IQ4_NL: return 25;
    case FG_TYPE_IQ4_XS: return 30;
    case FG_TYPE_BF16: return 32;
    default: return 0;
  }
}

fg_status fg_g3_write_hparams(fg_gguf_writer *w, const fg_g3_hparams *hp, fg_error *err) {
  const struct { const char *key; uint32_t v; } u32[] = {
      {FG_KEY_G3_CONTEXT_LENGTH, hp->n_ctx},
      {FG_KEY_G3_EMBEDDING_LENGTH, hp->n_embd},
      {FG_KEY_G3_BLOCK_COUNT, hp->n_layer},
      {FG_KEY_G3_FEED_FORWARD_LENGTH, hp->n_ff},
      {FG_KEY_G3_HEAD_COUNT, hp->n_head},
      {FG_KEY_G3_HEAD_COUNT_KV, hp->n_head_kv},
      {FG_KEY_G3_KEY_LENGTH, hp->head_dim},
      {FG_KEY_G3_VALUE_LENGTH, hp->head_dim},
      {FG_KEY_G3_SLIDING_WINDOW, hp->sliding_window},
      {FG_KEY_G3_SLIDING_WINDOW_PATTERN, hp->swa_pattern},
  };
  fg_status st = FG_OK;
  for (size_t i = 0; i < sizeof u32 / sizeof u32[0]; i++) FG_GGUF_SET(st, err, "", set_u32, w, u32[i].key, u32[i].v);
  FG_GGUF_SET(st, err, "", set_f32, w, FG_KEY_G3_RMS_EPS, hp->rms_eps);
  FG_GGUF_SET(st, err, "", set_f32, w, FG_KEY_G3_ROPE_FREQ_BASE, hp->rope_base);
  FG_GGUF_SET(st, err, "", set_f32, w, FG_KEY_G3_ROPE_FREQ_BASE_SWA, hp->rope_base_swa);
  if (hp->final_softcap > 0.0f)
    FG_GGUF_SET(st, err, "", set_f32, w, FG_KEY_G3_FINAL_SOFTCAP, hp->final_softcap);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// llama-quantize's mixes

const fg_g3_mix fg_g3_mixes[] = {
    {"f32", FG_G3_FTYPE_F32, FG_TYPE_F32},         {"f16", FG_G3_FTYPE_F16, FG_TYPE_F16},
    {"bf16", FG_G3_FTYPE_BF16, FG_TYPE_BF16},      {"q8_0", FG_G3_FTYPE_Q8_0, FG_TYPE_Q8_0},
    {"q4_0", FG_G3_FTYPE_Q4_0, FG_TYPE_Q4_0},      {"q4_1", FG_G3_FTYPE_Q4_1, FG_TYPE_Q4_1},
    {"q5_0", FG_G3_FTYPE_Q5_0, FG_TYPE_Q5_0},      {"q5_1", FG_G3_FTYPE_Q5_1, FG_TYPE_Q5_1},
    {"q2_k", FG_G3_FTYPE_Q2_K, FG_TYPE_Q2_K},      {"q3_k_s", FG_G3_FTYPE_Q3_K_S, FG_TYPE_Q3_K},
    {"q3_k_m", FG_G3_FTYPE_Q3_K_M, FG_TYPE_Q3_K},  {"q3_k_l", FG_G3_FTYPE_Q3_K_L, FG_TYPE_Q3_K},
    {"q4_k_s", FG_G3_FTYPE_Q4_K_S, FG_TYPE_Q4_K},  {"q4_k_m", FG_G3_FTYPE_Q4_K_M, FG_TYPE_Q4_K},
    {"q5_k_s", FG_G3_FTYPE_Q5_K_S, FG_TYPE_Q5_K},  {"q5_k_m", FG_G3_FTYPE_Q5_K_M, FG_TYPE_Q5_K},
    {"q6_k", FG_G3_FTYPE_Q6_K, FG_TYPE_Q6_K},      {"iq4_nl", FG_G3_FTYPE_IQ4_NL, FG_TYPE_IQ4_NL},
    {"iq4_xs", FG_G3_FTYPE_IQ4_XS, FG_TYPE_IQ4_XS},
};
const size_t fg_g3_n_mixes = sizeof fg_g3_mixes / sizeof fg_g3_mixes[0];

const fg_g3_mix *fg_g3_mix_of(uint32_t ftype) {
  for (size_t i = 0; i < fg_g3_n_mixes; i++)
    if (fg_g3_mixes[i].ftype == ftype) return &fg_g3_mixes[i];
  return NULL;
}

static bool fits(uint32_t type, uint64_t ne0) { return ne0 % fg_type_traits_get(type)->block_size == 0; }

/* llama.cpp's use_more_bits: the first and last eighth of the layers and every third in between */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The rules of llama_tensor_get_type_impl and tensor_type_fallback (src/llama-quant.cpp of the
 * llama.cpp release node-llama-cpp 3.21.1 ships) that apply to a dense Gemma 3 (one expert, not
 * Falcon, no imatrix, no per-tensor overrides). llama.cpp counts attn_v and ffn_down tensors in file
 * order; in a gemma3 file that count is the layer number, which is what is used here. */
uint32_t fg_g3_mix_type(uint32_t ftype, const fg_g3_mix_model *m, const char *name, uint64_t ne0) {
  const fg_g3_mix *mx = fg_g3_mix_of(ftype);
  if (!mx) return FG_TYPE_F32;
  uint32_t t = mx->type;
  if (t == FG_TYPE_F32 || t == FG_TYPE_F16 || t == FG_TYPE_BF16) return t; /* not quantized: no rules */
  int layer = -1, used = 0;
  char what[48] = "";
  if (sscanf(name, "blk.%d.%47[a-z_].weight%n", &layer, what, &used) != 2 || name[used]) layer = -1;
  const int n = (int)m->n_layer;
  const bool is_out = strcmp(name, "output.weight") == 0, is_embd = strcmp(name, "token_embd.weight") == 0;
  if (is_out || (m->tied && is_embd)) {
    /* the head: Q6_K (Q8_0 stays), Q8_0 when rows do not fit the mix's own block */
    if (!fits(t, ne0)) t = FG_TYPE_Q8_0;
    else if (t != FG_TYPE_Q8_0) t = FG_TYPE_Q6_K;
  } else if (is_embd) {
    /* the mix's type */
  } else if (layer >= 0 && strcmp(what, "attn_v") == 0) {
    if (ftype == FG_G3_FTYPE_Q2_K) t = m->n_gqa >= 4 ? FG_TYPE_Q4_K : FG_TYPE_Q3_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_M) t = layer < 2 ? FG_TYPE_Q5_K : FG_TYPE_Q4_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_L) t = FG_TYPE_Q5_K;
    else if ((ftype == FG_G3_FTYPE_IQ4_NL || ftype == FG_G3_FTYPE_IQ4_XS) && m->n_gqa >= 4) t = FG_TYPE_Q5_K;
    else if ((ftype == FG_G3_FTYPE_Q4_K_M || ftype == FG_G3_FTYPE_Q5_K_M) && more_bits(layer, n)) t = FG_TYPE_Q6_K;
    else if (ftype == FG_G3_FTYPE_Q4_K_S && layer < 4) t = FG_TYPE_Q5_K;
  } else if (layer >= 0 && strcmp(what, "ffn_down") == 0) {
    if (ftype == FG_G3_FTYPE_Q2_K) t = FG_TYPE_Q3_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_M) t = layer < n / 16 ? FG_TYPE_Q5_K : FG_TYPE_Q4_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_L) t = FG_TYPE_Q5_K;
    else if (ftype == FG_G3_FTYPE_Q4_K_M) t = more_bits(layer, n) ? FG_TYPE_Q6_K : t;
    else if (layer < n / 8 && (ftype == FG_G3_FTYPE_IQ4_NL || ftype == FG_G3_FTYPE_IQ4_XS)) t = FG_TYPE_Q5_K;
    else if (ftype == FG_G3_FTYPE_Q5_K_M && more_bits(layer, n)) t = FG_TYPE_Q6_K;
    else if (ftype == FG_G3_FTYPE_Q4_K_S && layer < n / 8) t = FG_TYPE_Q5_K;
  } else if (layer >= 0 && strcmp(what, "attn_output") == 0) {
    if (ftype == FG_G3_FTYPE_Q2_K) t = FG_TYPE_Q3_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_M) t = FG_TYPE_Q4_K;
    else if (ftype == FG_G3_FTYPE_Q3_K_L) t = FG_TYPE_Q5_K;
  }
  /* rows that are not a multiple of the block (Gemma 3 270M: 640 values): the 32-block sibling */
  if (!fits(t, ne0)) {
    switch (t) {
      case FG_TYPE_IQ4_XS: t = FG_TYPE_IQ4_NL; break;
      case FG_TYPE_Q2_K:
      case FG_TYPE_Q3_K: t = FG_TYPE_Q4_0; break;
      case FG_TYPE_Q4_K: t = FG_TYPE_Q5_0; break;
      case FG_TYPE_Q5_K: t = FG_TYPE_Q5_1; break;
      case FG_TYPE_Q6_K: t = FG_TYPE_Q8_0; break;
      default: break;
    }
    if (!fits(t, ne0)) t = FG_TYPE_F16;
  }
  return t;
}
