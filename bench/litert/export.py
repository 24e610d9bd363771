#!/usr/bin/env python3
"""Run litert-torch's export_hf (HF directory -> .litertlm) without TensorFlow.

    export.py HF_DIR OUT_DIR --recipe dynamic_wi8_afp32 [--prefill 32,128,512,1024] [--cache 2048]
              [--model-type function_gemma] [--extra key=value ...]

litert-torch 0.10.0 imports `tensorflow.lite.python.schema_py_generated` at import time (its
model_ext/bonsai_flux2, which Gemma 3 never uses) although TensorFlow is not among its requirements.
The same flatbuffer schema ships with ai-edge-litert (`ai_edge_litert.schema_py_generated`), so this
wrapper registers that one module under TensorFlow's name, and nothing else of TensorFlow, before
importing litert-torch. Everything else is litert-torch's own export_hf.
"""

import argparse
import importlib
import importlib.machinery
import os
import sys
import time
import types


def shim_tf_schema():
    try:
        importlib.import_module("tensorflow.lite.python.schema_py_generated")
        return
    except ImportError:
        pass
    schema = importlib.import_module("ai_edge_litert.schema_py_generated")
    parent = None
    for name in ("tensorflow", "tensorflow.lite", "tensorflow.lite.python"):
        mod = types.ModuleType(name)
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        mod.__path__ = []
        sys.modules[name] = mod
        if parent is not None:
            setattr(parent, name.rsplit(".", 1)[1], mod)
        parent = mod
    sys.modules["tensorflow.lite.python.schema_py_generated"] = schema
    parent.schema_py_generated = schema


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hf_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--recipe", default="dynamic_wi8_afp32",
                    help="a recipe name (dynamic_wi8_afp32, dynamic_wi4_afp32, ...) or a JSON recipe file")
    ap.add_argument("--prefill", default="32,128,512,1024", help="prefill signature lengths")
    ap.add_argument("--cache", type=int, default=2048, help="KV cache length")
    ap.add_argument("--model-type", default=None, help="litert_lm_model_type_override")
    ap.add_argument("--extra", action="append", default=[], help="key=value passed to export_hf")
    args = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    shim_tf_schema()
    from litert_torch.generative.export_hf import export as hf_export

    kw = dict(prefill_lengths=[int(x) for x in args.prefill.split(",") if x],
              cache_length=args.cache, quantization_recipe=args.recipe)
    if args.model_type:
        kw["litert_lm_model_type_override"] = args.model_type
    for e in args.extra:
        k, v = e.split("=", 1)
        kw[k] = {"true": True, "false": False}.get(v.lower(), v)
    t0 = time.time()
    hf_export.export(model=args.hf_dir, output_dir=args.out_dir, **kw)
    print(f"export: {args.hf_dir} -> {args.out_dir} in {time.time() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
