#!/usr/bin/env python3
"""Average the weight changes of PEFT LoRA adapters trained on one base (a "soup" of runs).

    python3 training/average_lora.py RUN_DIR [RUN_DIR ...] -o OUT_DIR [--weights W ...] [--rank R]

Each RUN_DIR is a PEFT adapter directory (adapter_config.json, adapter_model.safetensors; an
fgemma_vocab_override.json is copied from the first). For every adapted matrix the result's change is
sum_i w_i * s_i * B_i A_i (s_i = lora_alpha / r of run i; weights default to equal and must sum to 1).

--rank 0 (the default) keeps the sum exactly: A is the runs' A matrices stacked, B theirs side by side,
each scaled, so the rank is the sum of the runs' ranks. --rank R keeps the R largest singular values of
each matrix's change (a truncated SVD, in float64), so the adapter costs what one run's costs at run
time; the relative Frobenius error of each truncation is printed (largest and mean).

Needs numpy only (no torch). The output converts with `fgemma convert OUT_DIR -o OUT.gguf --base BASE`.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

DT = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        if v["dtype"] not in DT:
            sys.exit(f"average_lora: {path}: tensor {k} has dtype {v['dtype']} (F32 or F16 expected)")
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=DT[v["dtype"]]).reshape(v["shape"]).astype(np.float64)
    return out


def write_safetensors(path, tensors):
    head, blobs, off = {}, [], 0
    for k in sorted(tensors):
        b = np.ascontiguousarray(tensors[k], dtype=np.float32).tobytes()
        head[k] = {"dtype": "F32", "shape": list(tensors[k].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="PEFT adapter directories of the same base and modules")
    ap.add_argument("-o", "--out", required=True, help="the averaged adapter's directory (created)")
    ap.add_argument("--weights", type=float, nargs="+", help="one weight per run, summing to 1 (default: equal)")
    ap.add_argument("--rank", type=int, default=0, help="truncate each change to this rank by SVD (0: exact)")
    args = ap.parse_args()
    runs = args.runs
    w = args.weights or [1.0 / len(runs)] * len(runs)
    if len(w) != len(runs):
        sys.exit(f"average_lora: {len(runs)} runs but {len(w)} weights")
    if abs(sum(w) - 1.0) > 1e-6 or min(w) < 0:
        sys.exit(f"average_lora: the weights must be >= 0 and sum to 1 (they sum to {sum(w):g})")
    if args.rank < 0:
        sys.exit("average_lora: --rank must be >= 0")
    cfgs, mats = [], []
    for d in runs:
        for f in ("adapter_config.json", "adapter_model.safetensors"):
            if not os.path.isfile(os.path.join(d, f)):
                sys.exit(f"average_lora: {d} has no {f} (a PEFT adapter directory expected)")
        with open(os.path.join(d, "adapter_config.json")) as f:
            cfgs.append(json.load(f))
        mats.append(read_safetensors(os.path.join(d, "adapter_model.safetensors")))
    names = sorted(k[: -len(".lora_A.weight")] for k in mats[0] if k.endswith(".lora_A.weight"))
    for d, m in zip(runs[1:], mats[1:]):
        if sorted(k for k in m) != sorted(mats[0]):
            sys.exit(f"average_lora: {d} adapts other matrices than {runs[0]}")
    scales = [c["lora_alpha"] / c["r"] for c in cfgs]
    out, errs = {}, []
    for name in names:
        As = [m[name + ".lora_A.weight"] for m in mats]
        Bs = [m[name + ".lora_B.weight"] * (wi * si) for m, wi, si in zip(mats, w, scales)]
        if args.rank == 0:
            A, B = np.concatenate(As, axis=0), np.concatenate(Bs, axis=1)
        else:
            delta = sum(b @ a for a, b in zip(As, Bs))
            u, s, vt = np.linalg.svd(delta, full_matrices=False)
            r = min(args.rank, len(s))
            root = np.sqrt(s[:r])
            B, A = u[:, :r] * root, root[:, None] * vt[:r]
            errs.append(float(np.sqrt(np.sum(s[r:] ** 2) / max(np.sum(s ** 2), 1e-300))))
        out[name + ".lora_A.weight"], out[name + ".lora_B.weight"] = A, B
    rank = out[names[0] + ".lora_A.weight"].shape[0]
    cfg = dict(cfgs[0])
    cfg["r"], cfg["lora_alpha"] = rank, float(rank)  # the scale is folded into B: alpha / r = 1
    cfg.pop("rank_pattern", None)
    cfg.pop("alpha_pattern", None)
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "adapter_model.safetensors"), out)
    with open(os.path.join(args.out, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    extra = os.path.join(runs[0], "fgemma_vocab_override.json")
    if os.path.isfile(extra):
        shutil.copy(extra, args.out)
    msg = f"average_lora: {len(runs)} runs, weights {', '.join(f'{x:g}' for x in w)}: {len(names)} matrices, rank {rank}"
    if errs:
        msg += f"; truncation error (relative Frobenius) max {max(errs):.4f}, mean {sum(errs) / len(errs):.4f}"
    print(f"{msg} -> {args.out}")


if __name__ == "__main__":
    main()
