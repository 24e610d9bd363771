#!/usr/bin/env python3
"""Turns the files a device run brings back into an HF checkpoint directory for `fgemma convert`:
config.json, generation_config.json, model.safetensors (from model.safetensors.xz or its .NNN parts)
and FunctionGemma's tokenizer files (make_tokenizer.py). Standard library only.

    python3 training/unpack.py RUN_DIR HF_DIR
"""
import argparse
import glob
import hashlib
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("hf_dir")
    args = ap.parse_args()
    os.makedirs(args.hf_dir, exist_ok=True)
    for name in ("config.json", "generation_config.json"):
        src = os.path.join(args.run_dir, name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(args.hf_dir, name))
        elif name == "config.json":
            sys.exit(f"{src} is missing")
    parts = sorted(glob.glob(os.path.join(args.run_dir, "model.safetensors.xz.[0-9][0-9][0-9]")))
    single = os.path.join(args.run_dir, "model.safetensors.xz")
    if not parts and not os.path.exists(single):
        sys.exit(f"no model.safetensors.xz (or .000, .001, ...) in {args.run_dir}")
    joined = os.path.join(args.hf_dir, "model.safetensors.xz")
    with open(joined, "wb") as g:
        for p in parts or [single]:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, g)
    out = os.path.join(args.hf_dir, "model.safetensors")
    with lzma.open(joined) as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g, 1 << 22)
    os.remove(joined)
    with open(out, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    dtypes = sorted({v["dtype"] for v in tensors.values()})
    subprocess.run([sys.executable, os.path.join(HERE, "make_tokenizer.py"), "--out-dir", args.hf_dir], check=True)
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    print(f"{out}: {len(tensors)} tensors, {', '.join(dtypes)}, {os.path.getsize(out) / 1e6:.1f} MB, "
          f"sha256 {h.hexdigest()[:16]}")
    print(f"next: fgemma convert {args.hf_dir} -o tv-mini-bf16.gguf --type bf16   (docs/TV-MINI.md)")


if __name__ == "__main__":
    main()
