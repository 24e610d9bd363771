/* gemma3.c — Gemma 3's GGUF metadata and tensor names (see gemma3.h). */
#include "convert/gemma3.h"

#include "tensor/dtype.h"

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
    case FG_TYPE_Q8_0: return 7;
    case FG_TYPE_BF16: return 32;
    default: return 0;
  }
}

#define G3_KV(call, key)                                                   \
  do {                                                                     \
    if (st == FG_OK) {                                                     \
      st = (call);                                                         \
      if (st != FG_OK) st = fg_err(err, st, "cannot set %s", key);         \
    }                                                                      \
  } while (0)

fg_status fg_g3_write_hparams(fg_gguf_writer *w, const fg_g3_hparams *hp, fg_error *err) {
  const struct { const char *key; uint32_t v; } u32[] = {
      {"gemma3.context_length", hp->n_ctx},
      {"gemma3.embedding_length", hp->n_embd},
      {"gemma3.block_count", hp->n_layer},
      {"gemma3.feed_forward_length", hp->n_ff},
      {"gemma3.attention.head_count", hp->n_head},
      {"gemma3.attention.head_count_kv", hp->n_head_kv},
      {"gemma3.attention.key_length", hp->head_dim},
      {"gemma3.attention.value_length", hp->head_dim},
      {"gemma3.attention.sliding_window", hp->sliding_window},
      {"gemma3.attention.sliding_window_pattern", hp->swa_pattern},
  };
  fg_status st = FG_OK;
  for (size_t i = 0; i < sizeof u32 / sizeof u32[0]; i++) G3_KV(fg_gguf_writer_set_u32(w, u32[i].key, u32[i].v), u32[i].key);
  G3_KV(fg_gguf_writer_set_f32(w, "gemma3.attention.layer_norm_rms_epsilon", hp->rms_eps),
        "gemma3.attention.layer_norm_rms_epsilon");
  G3_KV(fg_gguf_writer_set_f32(w, "gemma3.rope.freq_base", hp->rope_base), "gemma3.rope.freq_base");
  G3_KV(fg_gguf_writer_set_f32(w, "gemma3.rope.freq_base_swa", hp->rope_base_swa), "gemma3.rope.freq_base_swa");
  if (hp->final_softcap > 0.0f)
    G3_KV(fg_gguf_writer_set_f32(w, "gemma3.final_logit_softcapping", hp->final_softcap), "gemma3.final_logit_softcapping");
  return st;
}
