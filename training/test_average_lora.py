#!/usr/bin/env python3
"""Checks of average_lora.py on random adapters (numpy only; run before using it on real runs):

    python3 training/test_average_lora.py

- exact mode: the result's change B A equals sum_i w_i (alpha_i / r_i) B_i A_i for every matrix, with
  runs of different rank and alpha, and the result's config says rank = the sum, alpha = rank (scale 1);
- SVD mode: rank R, and the error of each matrix equals the Eckart-Young bound (the singular values
  left out), so no better rank-R change exists; R at least the sum's rank is exact;
- bad input stops with a message: weights that do not sum to 1, a weight count that does not match,
  runs that adapt different matrices, a negative rank, a directory without an adapter.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import average_lora as al  # noqa: E402

MODS = {"q_proj": (64, 48), "down_proj": (48, 96)}  # out, in
FAILS = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILS.append(what)


def make_run(d, rng, r, alpha, mods=MODS):
    os.makedirs(d, exist_ok=True)
    t = {}
    for layer in (0, 1):
        for m, (o, i) in mods.items():
            k = f"base_model.model.model.layers.{layer}.self_attn.{m}"
            t[k + ".lora_A.weight"] = rng.standard_normal((r, i)).astype(np.float32)
            t[k + ".lora_B.weight"] = rng.standard_normal((o, r)).astype(np.float32)
    al.write_safetensors(os.path.join(d, "adapter_model.safetensors"), t)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump({"r": r, "lora_alpha": alpha, "peft_type": "LORA", "target_modules": list(mods)}, f)
    return {k: v.astype(np.float64) for k, v in t.items()}, alpha / r


def deltas(t, scale=1.0):
    names = sorted(k[: -len(".lora_A.weight")] for k in t if k.endswith(".lora_A.weight"))
    return {n: scale * t[n + ".lora_B.weight"] @ t[n + ".lora_A.weight"] for n in names}


def run(args):
    return subprocess.run([sys.executable, os.path.join(HERE, "average_lora.py"), *args], capture_output=True, text=True)


def main():
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        r1, s1 = make_run(os.path.join(tmp, "r1"), rng, 4, 8.0)
        r2, s2 = make_run(os.path.join(tmp, "r2"), rng, 6, 6.0)
        d1, d2 = deltas(r1, s1), deltas(r2, s2)
        want = {n: 0.7 * d1[n] + 0.3 * d2[n] for n in d1}

        p = run([os.path.join(tmp, "r1"), os.path.join(tmp, "r2"), "--weights", "0.7", "0.3", "-o", os.path.join(tmp, "x")])
        check(p.returncode == 0, f"exact mode runs ({p.stderr.strip()[:200]})")
        got = deltas(al.read_safetensors(os.path.join(tmp, "x", "adapter_model.safetensors")))
        err = max(np.abs(got[n] - want[n]).max() / np.abs(want[n]).max() for n in want)
        check(err < 1e-6, f"exact mode: B A equals the weighted sum (relative {err:.2e}, F32 storage)")
        with open(os.path.join(tmp, "x", "adapter_config.json")) as f:
            cfg = json.load(f)
        check(cfg["r"] == 10 and cfg["lora_alpha"] == 10.0, f"exact mode: rank 4 + 6 = {cfg['r']}, alpha = rank ({cfg['lora_alpha']})")

        for rank in (3, 10):
            out = os.path.join(tmp, f"s{rank}")
            p = run([os.path.join(tmp, "r1"), os.path.join(tmp, "r2"), "--weights", "0.7", "0.3", "--rank", str(rank), "-o", out])
            check(p.returncode == 0, f"SVD mode rank {rank} runs")
            t = al.read_safetensors(os.path.join(out, "adapter_model.safetensors"))
            got = deltas(t)
            worst = 0.0
            for n in want:
                s = np.linalg.svd(want[n], compute_uv=False)
                bound = np.sqrt(np.sum(s[rank:] ** 2))
                e = np.linalg.norm(got[n] - want[n])
                worst = max(worst, abs(e - bound) / max(np.linalg.norm(want[n]), 1e-30))
                if t[n + ".lora_A.weight"].shape[0] != rank:
                    worst = float("inf")
            check(worst < 1e-6, f"SVD mode rank {rank}: error equals the Eckart-Young bound (off by {worst:.2e})")

        bad = [
            (["--weights", "0.6", "0.6"], "sum to 1"),
            (["--weights", "1.0"], "weights"),
            (["--rank", "-1"], "--rank"),
        ]
        for extra, says in bad:
            p = run([os.path.join(tmp, "r1"), os.path.join(tmp, "r2"), *extra, "-o", os.path.join(tmp, "bad")])
            check(p.returncode != 0 and says in p.stderr, f"refused: {' '.join(extra)} ({p.stderr.strip()[:80]})")
        make_run(os.path.join(tmp, "r3"), rng, 4, 8.0, mods={"q_proj": (64, 48)})
        p = run([os.path.join(tmp, "r1"), os.path.join(tmp, "r3"), "-o", os.path.join(tmp, "bad")])
        check(p.returncode != 0 and "other matrices" in p.stderr, f"refused: runs of other matrices ({p.stderr.strip()[:80]})")
        p = run([tmp, os.path.join(tmp, "r1"), "-o", os.path.join(tmp, "bad")])
        check(p.returncode != 0 and "no adapter_config.json" in p.stderr, f"refused: a directory without an adapter ({p.stderr.strip()[:80]})")
        check(not os.path.exists(os.path.join(tmp, "bad")), "nothing written on bad input")
    print(f"test_average_lora: {len(FAILS)} failed")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
