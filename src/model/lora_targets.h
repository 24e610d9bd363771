/* lora_targets.h — the seven matrices of a Gemma 3 layer that a LoRA adapter may adapt, with their names
 * in a GGUF (blk.N.<gguf>.weight) and in a Hugging Face / PEFT checkpoint: the one table the adapter
 * reader (lora.c), the PEFT converter (convert/peft.c, convert/convert_peft.c) and the adapter generator
 * (gen/gen_lora.c) share. Plain data: includes nothing of the model, so convert/ may include it. */
#ifndef FG_LORA_TARGETS_H
#define FG_LORA_TARGETS_H

/* The adapted matrices of a layer, in GGUF file order (convert/gemma3.h's fg_g3_layer_tensors order). */
enum { FG_LORA_Q, FG_LORA_K, FG_LORA_V, FG_LORA_O, FG_LORA_GATE, FG_LORA_UP, FG_LORA_DOWN, FG_LORA_N_TARGETS };

typedef struct fg_lora_target {
  const char *hf;   /* "q_proj": the module's last name part */
  const char *path; /* "self_attn.q_proj": its path inside a layer */
  const char *gguf; /* "attn_q": blk.N.<gguf>.weight */
  char in, out;     /* dimension letters of convert/gemma3.h (E n_embd, Q n_head*head_dim, K kv, F n_ff) */
} fg_lora_target;
extern const fg_lora_target fg_lora_targets[FG_LORA_N_TARGETS]; /* indexed by FG_LORA_Q .. FG_LORA_DOWN */

#endif /* FG_LORA_TARGETS_H */
