#!/usr/bin/env python3
"""make_peft_fixtures.py: the PEFT LoRA adapters of tests/data/peft/ and what PEFT computes with them.

Not run in CI (it needs torch, transformers and peft; CI only replays the files it wrote). For each case
below it
  1. writes the tiny Gemma3ForCausalLM checkpoint of the HF goldens' "tiny-f32-5x" case with
     `fgemma gen-model --format hf` (random weights from a seed: CI regenerates the same model as a GGUF
     with `gen-model --preset tiny --type f32 --seed 1`), and checks its SHA-256 against
     tests/data/hf_goldens.json;
  2. wraps it with peft (LoraConfig of the case, init_lora_weights=False: A and B both random, from a
     seeded torch generator), rounds the adapter to the case's dtype (values then used in float32), and
     saves it with save_pretrained (adapter_config.json and adapter_model.safetensors; the model card is
     dropped) into tests/data/peft/<case>/;
  3. records PEFT's logits (float32, eager attention, TF32 off) on a fixed prompt at fixed positions,
     for the base model and with the adapter, into tests/data/peft/peft_goldens.json (the format of
     tests/data/hf_goldens.json: fixed columns, top 16, greedy ids).
The "tiny-mm-names" case is a multimodal Gemma3ForConditionalGeneration (the tiny text model plus a
one-layer vision tower) adapted on q_proj/v_proj: only its tensor names matter (the
model.language_model.layers prefix, and vision tower tensors the converter leaves out); no logits.

tests/test_convert_peft.c converts these adapters with `fgemma convert` and checks the GGUF bytes against
the safetensors, and runs fgemma's reference forward on the base GGUF with the converted adapter merged
in (W + alpha / rank * B A in float32) against the recorded logits.

Command (repository root; a venv with torch, transformers 5.x and peft; CPU is enough, ~1 minute):
  .cache/venv-train/bin/python tools/hf/make_peft_fixtures.py --fgemma build/fgemma --out tests/data/peft
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

FORMAT = "fgemma-peft-goldens"
VERSION = 1
BASE_CASE = "tiny-f32-5x"  # tests/data/hf_goldens.json's case whose checkpoint is the base model
BASE_GEN = ["--preset", "tiny", "--type", "f32", "--hf-config", "5", "--seed", "1"]
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# name, LoraConfig arguments, dtype of the saved adapter, torch seed of A and B
CASES = [
    ("tiny-r4-f32", dict(r=4, lora_alpha=8, target_modules=ALL, layers_to_transform=[0, 5],
                         rank_pattern={"o_proj": 2}), "float32", 101),
    ("tiny-rslora-bf16", dict(r=8, lora_alpha=16, use_rslora=True, target_modules=["q_proj", "v_proj", "down_proj"],
                              layers_to_transform=[1, 4]), "bfloat16", 102),
]
MM_CASE = ("tiny-mm-names", dict(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]), 103)

N_PROMPT, POSITIONS, PROMPT_SEED = 40, [0, 7, 8, 17, 24, 39], 21
N_FIXED_COLUMNS, TOP_K, GREEDY = 32, 16, 8
# the deterministic prompt ids, logit rounding and file hashes of the HF goldens (record_goldens.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_goldens import draw, f8, sha256  # noqa: E402


def record(torch, model, ids, columns):
    """the golden rows and greedy ids of model on ids (full recompute per step)"""
    with torch.no_grad():
        logits = model(torch.tensor([ids]), use_cache=False).logits[0].float()
        rows = []
        for p in POSITIONS:
            row = logits[p]
            top_v, top_i = torch.topk(row, TOP_K)
            rows.append({"position": p, "values": [f8(row[c]) for c in columns],
                         "top_ids": [int(i) for i in top_i], "top_values": [f8(v) for v in top_v],
                         "row_max_abs": f8(row.abs().max()), "argmax": int(torch.argmax(row))})
        seq, greedy = list(ids), []
        for _ in range(GREEDY):
            nxt = int(torch.argmax(model(torch.tensor([seq]), use_cache=False).logits[0, -1].float()))
            greedy.append(nxt)
            seq.append(nxt)
    return rows, greedy


def seeded_adapter(torch, model, seed, dtype):
    """A and B of every LoRA layer random (N(0, 0.05^2)... scaled to a visible effect), rounded to dtype"""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if ".lora_A." in name or ".lora_B." in name:
                v = torch.randn(p.shape, generator=g, dtype=torch.float32) * (0.3 if ".lora_A." in name else 0.2)
                p.copy_(v.to(dtype).to(p.dtype))


def save_adapter(torch, model, out_dir, dtype):
    shutil.rmtree(out_dir, ignore_errors=True)
    model.save_pretrained(out_dir)
    if dtype != torch.float32:  # the values are dtype's already: store them in it
        from safetensors.torch import load_file, save_file
        path = os.path.join(out_dir, "adapter_model.safetensors")
        tensors = {k: v.to(dtype) for k, v in load_file(path).items()}
        save_file(tensors, path, metadata={"format": "pt"})
    readme = os.path.join(out_dir, "README.md")
    if os.path.exists(readme):
        os.remove(readme)
    cfg_path = os.path.join(out_dir, "adapter_config.json")
    cfg = json.load(open(cfg_path))
    cfg["base_model_name_or_path"] = "fgemma gen-model " + " ".join(BASE_GEN)  # not the scratch directory
    if isinstance(cfg.get("target_modules"), list):  # a set in peft: its order varies from run to run
        cfg["target_modules"] = sorted(cfg["target_modules"])
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fgemma", required=True, help="the fgemma binary (gen-model writes the base checkpoint)")
    ap.add_argument("--out", required=True, help="tests/data/peft")
    ap.add_argument("--goldens", default="tests/data/hf_goldens.json", help="for the base checkpoint's SHA-256")
    args = ap.parse_args()

    import torch
    import transformers
    import peft
    from peft import LoraConfig, get_peft_model
    from transformers import Gemma3ForCausalLM

    torch.set_float32_matmul_precision("highest")
    torch.use_deterministic_algorithms(True)
    work = tempfile.mkdtemp(prefix="fgemma-peft-")
    base = os.path.join(work, "base")
    subprocess.run([args.fgemma, "gen-model", *BASE_GEN, "--format", "hf", "-o", base], check=True)
    want = next(c for c in json.load(open(args.goldens))["cases"] if c["name"] == BASE_CASE)["files_sha256"]
    for n, h in want.items():
        if sha256(os.path.join(base, n)) != h:
            sys.exit(f"{n} of the regenerated base differs from {args.goldens} ({BASE_CASE}): rebuild fgemma")
    n_vocab = json.load(open(os.path.join(base, "config.json")))["vocab_size"]
    ids = [2] + draw(PROMPT_SEED, N_PROMPT - 1, 4, n_vocab)
    columns = sorted(set(list(range(8)) + draw(PROMPT_SEED ^ 0xC0FFEE, N_FIXED_COLUMNS - 8, 8, n_vocab)))

    os.makedirs(args.out, exist_ok=True)
    load = dict(dtype=torch.float32, attn_implementation="eager")
    base_model = Gemma3ForCausalLM.from_pretrained(base, **load).eval()
    base_rows, base_greedy = record(torch, base_model, ids, columns)
    del base_model
    result = {
        "_note": "GOLDEN FILE: PEFT's logits with the adapters of tests/data/peft (tests/test_convert_peft.c). "
                 "Regenerate only with tools/hf/make_peft_fixtures.py; do not edit.",
        "_command": "python tools/hf/make_peft_fixtures.py --fgemma build/fgemma --out tests/data/peft",
        "format": FORMAT, "version": VERSION,
        "recorded": {"transformers": transformers.__version__, "torch": torch.__version__, "peft": peft.__version__,
                     "dtype": "float32", "attn_implementation": "eager", "device": "cpu",
                     "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
        "base": {"hf_goldens_case": BASE_CASE, "gen_model": BASE_GEN, "n_vocab": n_vocab},
        "ids": ids, "columns": columns, "greedy_steps": GREEDY,
        "base_positions": base_rows, "base_greedy": base_greedy,
        "cases": [],
    }
    for name, lcfg, dtype_name, seed in CASES:
        dtype = getattr(torch, dtype_name)
        model = Gemma3ForCausalLM.from_pretrained(base, **load).eval()
        model = get_peft_model(model, LoraConfig(init_lora_weights=False, lora_dropout=0.0, **lcfg)).eval()
        seeded_adapter(torch, model, seed, dtype)
        rows, greedy = record(torch, model, ids, columns)
        save_adapter(torch, model, os.path.join(args.out, name), dtype)
        result["cases"].append({"name": name, "dtype": dtype_name, "positions": rows, "greedy": greedy})
        diff = max(abs(a - b) for r, q in zip(rows, base_rows) for a, b in zip(r["values"], q["values"]))
        print(f"{name}: greedy {greedy}, base {base_greedy}, max |logit - base logit| {diff:.3f}", flush=True)
        del model

    # the multimodal class: names only
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, SiglipVisionConfig
    name, lcfg, seed = MM_CASE
    text = Gemma3ForCausalLM.from_pretrained(base, **load).config
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                image_size=28, patch_size=14)
    mm = Gemma3ForConditionalGeneration(Gemma3Config(text_config=text.to_dict(), vision_config=vision.to_dict(),
                                                     mm_tokens_per_image=1, image_token_index=n_vocab - 1)).eval()
    mm = get_peft_model(mm, LoraConfig(init_lora_weights=False, lora_dropout=0.0, **lcfg))
    seeded_adapter(torch, mm, seed, torch.float32)
    save_adapter(torch, mm, os.path.join(args.out, name), torch.float32)
    print(f"{name}: {sum(1 for n, _ in mm.named_parameters() if '.lora_' in n)} LoRA tensors", flush=True)

    with open(os.path.join(args.out, "peft_goldens.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
