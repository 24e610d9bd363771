/* lora_targets.c — the table of lora_targets.h. */
#include "model/lora_targets.h"

const fg_lora_target fg_lora_targets[FG_LORA_N_TARGETS] = {
    {"q_proj", "self_attn.q_proj", "attn_q", 'E', 'Q'},
    {"k_proj", "self_attn.k_proj", "attn_k", 'E', 'K'},
    {"v_proj", "self_attn.v_proj", "attn_v", 'E', 'K'},
    {"o_proj", "self_attn.o_proj", "attn_output", 'Q', 'E'},
    {"gate_proj", "mlp.gate_proj", "ffn_gate", 'E', 'F'},
    {"up_proj", "mlp.up_proj", "ffn_up", 'E', 'F'},
    {"down_proj", "mlp.down_proj", "ffn_down", 'F', 'E'},
};
