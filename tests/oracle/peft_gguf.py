#!/usr/bin/env python3
# ----------------------------------------------------------------------------------------------
# peft_gguf.py: `fgemma convert ADAPTER_DIR` read back by the gguf Python package (gguf 0.19.0 in
# .cache/venv-oracle, made by scripts/setup.sh), an implementation of GGUF and of GGML's F16, BF16 and
# Q8_0 encodings independent of fgemma's.
#
#   .cache/venv-oracle/bin/python tests/oracle/peft_gguf.py --fgemma build/fgemma --work DIR \
#        --fixtures tests/data/peft
#
# 1. Adapters written here with numpy (this script's own safetensors writer; F32, F16 and BF16 sources,
#    the plain and both multimodal name prefixes, a vision tower tensor, rsLoRA, a vocabulary override),
#    converted by the CLI with the default type and --type f32 / f16 / bf16 / q8_0;
# 2. PEFT's own adapters of tests/data/peft (tools/hf/make_peft_fixtures.py), converted as they are.
# Each output is read with gguf.GGUFReader: general.architecture, general.type, adapter.type,
# adapter.lora.alpha (lora_alpha, times sqrt(r) with use_rslora, as an f32), the override's key types
# (INT32 array, STRING array) and values, and every tensor: its name (from this script's own mapping of
# PEFT names), type, shape ne = [in, rank] / [rank, out], and its bytes, bit for bit, against the source
# encoded by numpy (float16, the same bytes when the type is kept) or by gguf.quants.quantize (BF16,
# Q8_0; Q8_0 rows that are not a multiple of 32 must be F16, as llama.cpp's converter writes them).
# Exit status: 0 all equal, 1 a difference, 2 usage.

import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
    import gguf
    import gguf.quants
except ImportError as e:
    sys.exit(f"peft_gguf.py: cannot import gguf/numpy ({e}); run scripts/setup.sh, which creates "
             ".cache/venv-oracle with gguf==0.19.0, and run this script with .cache/venv-oracle/bin/python")

QT = gguf.GGMLQuantizationType
MODULES = {"q_proj": ("self_attn", "attn_q", "E", "Q"), "k_proj": ("self_attn", "attn_k", "E", "K"),
           "v_proj": ("self_attn", "attn_v", "E", "K"), "o_proj": ("self_attn", "attn_output", "Q", "E"),
           "gate_proj": ("mlp", "ffn_gate", "E", "F"), "up_proj": ("mlp", "ffn_up", "E", "F"),
           "down_proj": ("mlp", "ffn_down", "F", "E")}
DIMS = {"E": 64, "Q": 128, "K": 32, "F": 128}  # gen-model's tiny preset
NAME = re.compile(r"^(?:base_model\.model\.)?(?:model\.language_model\.|language_model\.model\.|model\.)layers\.(\d+)\."
                  r"(self_attn|mlp)\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.lora_([AB])\.weight$")
VISION = re.compile(r"^(?:base_model\.model\.)?(?:model\.)?(?:vision_tower|multi_modal_projector)\.")
ST_DTYPES = {"F32": (np.float32, QT.F32), "F16": (np.float16, QT.F16), "BF16": (np.uint16, QT.BF16)}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def gguf_name(peft_name):
    m = NAME.match(peft_name)
    if not m:
        return None
    return f"blk.{m.group(1)}.{MODULES[m.group(3)][1]}.weight.lora_{m.group(4).lower()}"


# ---- safetensors, written and read here --------------------------------------------------------

def st_write(path, tensors):
    """tensors: [(name, dtype name, 2-D numpy array of that dtype's storage)]"""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dt, arr in tensors:
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_read(path):
    """{name: (dtype name, shape, raw bytes)}"""
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), data[8 + n + b:8 + n + e])
    return out


def to_f32(dt, shape, raw):
    if dt == "F32":
        return np.frombuffer(raw, dtype=np.float32).reshape(shape)
    if dt == "F16":
        return np.frombuffer(raw, dtype=np.float16).astype(np.float32).reshape(shape)
    bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(shape)


def expected_bytes(dt, shape, raw, want_type):
    """the bytes a tensor of PEFT dtype dt must have in the GGUF as want_type"""
    if ST_DTYPES[dt][1] == want_type:
        return raw
    x = to_f32(dt, shape, raw)
    if want_type == QT.F32:
        return x.astype(np.float32).tobytes()
    if want_type == QT.F16:
        return x.astype(np.float16).tobytes()
    return gguf.quants.quantize(x, want_type).tobytes()


# ---- the checks ---------------------------------------------------------------------------------

def convert(fgemma, src, out, type_name=None, base=None):
    cmd = [fgemma, "convert", src, "-o", out]
    if type_name:
        cmd += ["--type", type_name]
    if base:
        cmd += ["--base", base]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)}: exit status {r.returncode}: {r.stderr.strip()}")
        return False
    return True


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None, None
    return f.types, f.contents()


def check_file(what, path, source, lora_alpha, r, rslora, want_type=None, override=None):
    """source: {peft name: (dtype, shape, raw)}; want_type None = each tensor's own dtype"""
    reader = gguf.GGUFReader(path)
    for key, want in (("general.architecture", "gemma3"), ("general.type", "adapter"), ("adapter.type", "lora")):
        types, v = field(reader, key)
        if types != [gguf.GGUFValueType.STRING] or v != want:
            fail(f"{what}: {key} = {v!r} ({types}), want {want!r}")
    types, alpha = field(reader, "adapter.lora.alpha")
    want_alpha = float(np.float32(lora_alpha * math.sqrt(r) if rslora else lora_alpha))
    if types != [gguf.GGUFValueType.FLOAT32] or alpha != want_alpha:
        fail(f"{what}: adapter.lora.alpha = {alpha!r} ({types}), want f32 {want_alpha!r}")
    ids_t, ids = field(reader, "fgemma.vocab_override.ids")
    tok_t, toks = field(reader, "fgemma.vocab_override.tokens")
    if override is None:
        if ids is not None or toks is not None:
            fail(f"{what}: a vocabulary override that the adapter does not have")
    else:
        if ids_t != [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32] or list(ids) != override["ids"]:
            fail(f"{what}: fgemma.vocab_override.ids = {ids!r} ({ids_t})")
        if tok_t != [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING] or list(toks) != override["tokens"]:
            fail(f"{what}: fgemma.vocab_override.tokens = {toks!r} ({tok_t})")

    got = {t.name: t for t in reader.tensors}
    expected = {}
    for name, (dt, shape, raw) in source.items():
        if VISION.match(name):
            continue
        g = gguf_name(name)
        if g is None:
            fail(f"{what}: the source tensor {name} has no GGUF name in this script's mapping")
            continue
        expected[g] = (name, dt, shape, raw)
    if sorted(got) != sorted(expected):
        fail(f"{what}: tensors {sorted(got)}, want {sorted(expected)}")
    n_same = 0
    for g, (name, dt, shape, raw) in sorted(expected.items()):
        t = got.get(g)
        if t is None:
            continue
        rows, cols = shape
        want = ST_DTYPES[dt][1] if want_type is None else want_type
        if want == QT.Q8_0 and cols % 32:
            want = QT.F16
        if t.tensor_type != want or list(t.shape) != [cols, rows]:
            fail(f"{what}: {g} is {t.tensor_type.name} ne {list(t.shape)}, want {want.name} ne {[cols, rows]}")
            continue
        b = np.ascontiguousarray(t.data).tobytes()
        e = expected_bytes(dt, shape, raw, want)
        if b != e:
            k = next(i for i in range(min(len(b), len(e))) if b[i] != e[i]) if len(b) == len(e) else -1
            fail(f"{what}: {g} ({name}, {dt} -> {want.name}): bytes differ (first at byte {k}, sizes {len(b)}/{len(e)})")
            continue
        n_same += 1
    print(f"{what}: {n_same}/{len(expected)} tensors identical, adapter.lora.alpha {alpha}", flush=True)


def write_adapter(d, tensors, config, override=None):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    st_write(os.path.join(d, "adapter_model.safetensors"), tensors)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    if override:
        with open(os.path.join(d, "fgemma_vocab_override.json"), "w") as f:
            json.dump(override, f)


def synthetic(rng, prefix, dtype, rank, layers):
    out = []
    for layer in layers:
        for mod, (part, _, din, dout) in MODULES.items():
            for ab, shape in (("A", (rank, DIMS[din])), ("B", (DIMS[dout], rank))):
                x = rng.standard_normal(shape).astype(np.float32) * 0.3
                if dtype == "F16":
                    arr = x.astype(np.float16)
                elif dtype == "BF16":
                    arr = (x.view(np.uint32) >> 16).astype(np.uint16)  # bf16 values (truncated), stored as is
                else:
                    arr = x
                out.append((f"{prefix}layers.{layer}.{part}.{mod}.lora_{ab}.weight", dtype, arr))
    return out


def main():
    ap = argparse.ArgumentParser(description="fgemma convert of PEFT adapters vs the gguf package")
    ap.add_argument("--fgemma", required=True)
    ap.add_argument("--work", required=True, help="scratch directory (emptied)")
    ap.add_argument("--fixtures", required=True, help="tests/data/peft")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = np.random.default_rng(7)
    out = os.path.join(args.work, "out.gguf")

    cases = [
        ("f32 plain", "base_model.model.model.", "F32", 4, 8.0, False, None),
        ("f16 mm new", "base_model.model.model.language_model.", "F16", 8, 16.0, False, None),
        ("bf16 mm old, rslora", "base_model.model.language_model.model.", "BF16", 16, 8.0, True,
         {"ids": [46, 47, 48], "tokens": ["<start_function_declaration>", "<end_function_declaration>", "<escape>"]}),
        ("f32 rank 32, rslora", "base_model.model.model.", "F32", 32, 12.0, True, None),
    ]
    for what, prefix, dtype, rank, alpha, rslora, override in cases:
        d = os.path.join(args.work, "adapter")
        tensors = synthetic(rng, prefix, dtype, rank, [0, 2])
        if "mm" in what:  # a vision tower pair, left out
            tensors.append(("base_model.model.model.vision_tower.encoder.layers.0.self_attn.q_proj.lora_A.weight",
                            "F32", rng.standard_normal((rank, 32)).astype(np.float32)))
        config = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "use_rslora": rslora, "bias": "none",
                  "target_modules": list(MODULES), "modules_to_save": None, "use_dora": False}
        write_adapter(d, tensors, config, override)
        source = {n: (dt, a.shape, np.ascontiguousarray(a).tobytes()) for n, dt, a in tensors}
        for type_name in (None, "f32", "f16", "bf16", "q8_0"):
            if os.path.exists(out):
                os.remove(out)
            if convert(args.fgemma, d, out, type_name):
                want = None if type_name is None else {"f32": QT.F32, "f16": QT.F16, "bf16": QT.BF16, "q8_0": QT.Q8_0}[type_name]
                check_file(f"{what} -> {type_name or 'auto'}", out, source, alpha, rank, rslora, want, override)

    for name in sorted(os.listdir(args.fixtures)):
        d = os.path.join(args.fixtures, name)
        if not os.path.isfile(os.path.join(d, "adapter_config.json")):
            continue
        cfg = json.load(open(os.path.join(d, "adapter_config.json")))
        source = st_read(os.path.join(d, "adapter_model.safetensors"))
        if os.path.exists(out):
            os.remove(out)
        if convert(args.fgemma, d, out):
            check_file(f"tests/data/peft/{name}", out, source, cfg["lora_alpha"], cfg["r"], cfg.get("use_rslora", False))
    shutil.rmtree(args.work, ignore_errors=True)
    if failures:
        print(f"peft_gguf.py: {len(failures)} failure(s)")
        return 1
    print("peft_gguf.py: every converted adapter equals the gguf package's reading of its source")
    return 0


if __name__ == "__main__":
    sys.exit(main())
