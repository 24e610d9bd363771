#!/usr/bin/env python3
"""Write a Hugging Face Gemma3ForCausalLM directory (F32 safetensors) from a gemma3 GGUF.

Used by bench/litert to feed litert-torch's export_hf the same weights fgemma runs:

    gguf_to_hf.py BASE.gguf OUT_DIR --tokenizer-dir DIR [--lora ADAPTER.gguf[:SCALE]]

- every tensor is dequantized by the `gguf` package (Q4_K, Q5_0, Q6_K, Q8_0, ... to f32);
- llama.cpp's GGUF writer stores Gemma's RMSNorm weights with the +1 folded in; HF's Gemma3RMSNorm
  multiplies by (1 + w), so 1 is taken back off every norm vector (transformers' own GGUF loader
  does the same);
- --lora merges a llama.cpp LoRA GGUF (blk.N.<t>.weight.lora_a [rank, n_in], .lora_b [n_out, rank],
  adapter.lora.alpha) into the matrices: W + scale * alpha / rank * B @ A (scale alone when alpha
  is 0), the formula of docs/LORA.md. The adapter's vocabulary override (FunctionGemma's control
  tokens at ids 46..52, `fgemma.vocab_override.*`) renames those pieces in the copied tokenizer.json
  and tokenizer_config.json, so the directory tokenizes like FunctionGemma (LiteRT-LM then reads
  `<start_function_call>` etc. as single ids, and `fgemma convert` of the directory writes them);
- --stop-ids sets generation_config's eos_token_id, which export_hf turns into the bundle's stop
  tokens (tv-270m: 1,106,49,50 = <eos>, <end_of_turn>, <end_function_call>, <start_function_response>,
  fgemma's stops);
- the tokenizer is Gemma 3's tokenizer.json + tokenizer_config.json, copied from --tokenizer-dir.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import gguf
from safetensors.numpy import save_file

NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm", "attn_norm": "input_layernorm",
    "post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def tensor_f32(t):
    a = gguf.dequantize(t.data, t.tensor_type)
    # numpy shape of a GGUF tensor is (ne[n-1], ..., ne[0]): rows x columns, as HF stores it.
    return np.ascontiguousarray(a.reshape([int(x) for x in reversed(t.shape)]), dtype=np.float32)


def hf_name(name):
    if name == "token_embd.weight":
        return "model.embed_tokens.weight", False
    if name == "output_norm.weight":
        return "model.norm.weight", True
    if name == "output.weight":
        return "lm_head.weight", False
    parts = name.split(".")
    if parts[0] != "blk" or len(parts) != 4 or parts[3] != "weight" or parts[2] not in NAMES:
        raise SystemExit(f"unexpected tensor {name}")
    hf = NAMES[parts[2]]
    return f"model.layers.{parts[1]}.{hf}.weight", parts[2].endswith("norm")


def load_lora(spec):
    path, scale = spec, 1.0
    if ":" in spec and spec.rsplit(":", 1)[1].replace(".", "", 1).replace("-", "", 1).isdigit():
        path, s = spec.rsplit(":", 1)
        scale = float(s)
    r = gguf.GGUFReader(path)
    if field(r, "general.type") != "adapter" or field(r, "adapter.type") != "lora":
        raise SystemExit(f"{path}: not a LoRA adapter")
    alpha = float(field(r, "adapter.lora.alpha", 0.0))
    pairs = {}
    for t in r.tensors:
        base, _, which = t.name.rpartition(".")
        pairs.setdefault(base, {})[which] = tensor_f32(t)
    out = {}
    for base, p in pairs.items():
        a, b = p["lora_a"], p["lora_b"]  # a: [rank, n_in], b: [n_out, rank]
        rank = a.shape[0]
        s = scale * alpha / rank if alpha != 0 else scale
        out[base] = (a, b, s)
    return out, field(r, "fgemma.vocab_override.tokens"), field(r, "fgemma.vocab_override.ids")


def apply_vocab_override(out_dir, ids, tokens):
    """Renames the pieces at ids to tokens in tokenizer.json and tokenizer_config.json of out_dir."""
    ren = {int(i): t for i, t in zip(ids, tokens)}
    p = os.path.join(out_dir, "tokenizer.json")
    with open(p) as f:
        tj = json.load(f)
    old = {}
    for a in tj.get("added_tokens", []):
        if a["id"] in ren:
            old[a["id"]] = a["content"]
            a["content"] = ren[a["id"]]
            a["special"] = True
    vocab = tj["model"]["vocab"]
    if not isinstance(vocab, dict):
        raise SystemExit("tokenizer.json: expected a BPE vocab dict")
    for i, t in ren.items():
        name = old.get(i) or next(k for k, v in vocab.items() if v == i)
        if not name.startswith("<unused") and name != t:
            raise SystemExit(f"vocab override: id {i} is {name!r}, not an unused piece")
        del vocab[name]
        vocab[t] = i
    with open(p, "w") as f:
        json.dump(tj, f, ensure_ascii=False)
    p = os.path.join(out_dir, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    for k, a in tc.get("added_tokens_decoder", {}).items():
        if int(k) in ren:
            a["content"] = ren[int(k)]
            a["special"] = True
    with open(p, "w") as f:
        json.dump(tc, f, ensure_ascii=False, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--tokenizer-dir", required=True)
    ap.add_argument("--lora", default=None)
    ap.add_argument("--stop-ids", default="1,106",
                    help="generation_config eos_token_id: the ids LiteRT-LM stops at (export_hf copies them)")
    args = ap.parse_args()

    r = gguf.GGUFReader(args.gguf)
    if field(r, "general.architecture") != "gemma3":
        raise SystemExit("not a gemma3 GGUF")
    lora, vo_tokens, vo_ids = load_lora(args.lora) if args.lora else ({}, None, None)
    used = set()

    tensors = {}
    for t in r.tensors:
        name, is_norm = hf_name(t.name)
        w = tensor_f32(t)
        if is_norm:
            w = w - np.float32(1.0)
        if t.name in lora:
            a, b, s = lora[t.name]
            w = (w.astype(np.float64) + s * (b.astype(np.float64) @ a.astype(np.float64))).astype(np.float32)
            used.add(t.name)
        tensors[name] = w
    if set(lora) - used:
        raise SystemExit(f"adapter tensors without a base matrix: {sorted(set(lora) - used)[:4]}")

    n_embd = int(field(r, "gemma3.embedding_length"))
    n_layer = int(field(r, "gemma3.block_count"))
    stops = [int(x) for x in args.stop_ids.split(",") if x]
    pattern = int(field(r, "gemma3.attention.sliding_window_pattern", 6))
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    cfg = {
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "vocab_size": vocab,
        "hidden_size": n_embd,
        "intermediate_size": int(field(r, "gemma3.feed_forward_length")),
        "num_hidden_layers": n_layer,
        "num_attention_heads": int(field(r, "gemma3.attention.head_count")),
        "num_key_value_heads": int(field(r, "gemma3.attention.head_count_kv")),
        "head_dim": int(field(r, "gemma3.attention.key_length")),
        "query_pre_attn_scalar": int(field(r, "gemma3.attention.key_length")),
        "max_position_embeddings": int(field(r, "gemma3.context_length")),
        "rms_norm_eps": float(field(r, "gemma3.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(r, "gemma3.rope.freq_base")),
        "rope_local_base_freq": float(field(r, "gemma3.rope.freq_base_swa", 10000.0)),
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": float(field(r, "gemma3.rope.freq_base"))},
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": float(field(r, "gemma3.rope.freq_base_swa", 10000.0))},
        },
        "sliding_window": int(field(r, "gemma3.attention.sliding_window")),
        "layer_types": ["full_attention" if i % pattern == pattern - 1 else "sliding_attention"
                        for i in range(n_layer)],
        "hidden_activation": "gelu_pytorch_tanh",
        "attn_logit_softcapping": None,
        "final_logit_softcapping": field(r, "gemma3.final_logit_softcapping"),
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_bidirectional_attention": False,
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "bos_token_id": int(field(r, "tokenizer.ggml.bos_token_id", 2)),
        "eos_token_id": stops,
        "pad_token_id": int(field(r, "tokenizer.ggml.padding_token_id", 0)),
        "initializer_range": 0.02,
        "torch_dtype": "float32",
        "dtype": "float32",
        "use_cache": True,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": cfg["bos_token_id"], "eos_token_id": stops,
                   "pad_token_id": cfg["pad_token_id"], "do_sample": False}, f, indent=1)
    save_file(tensors, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer_dir, fn), os.path.join(args.out, fn))
    if vo_ids:
        apply_vocab_override(args.out, vo_ids, vo_tokens)
    print(f"{args.out}: {len(tensors)} tensors, vocab {vocab}, {n_layer} layers"
          + (f", {len(used)} matrices merged from {args.lora}" if used else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
