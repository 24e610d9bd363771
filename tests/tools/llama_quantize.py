#!/usr/bin/env python3
"""llama_quantize.py IN.gguf OUT.gguf FTYPE [--threads N] [--pure] [--lib DIR]

Quantizes IN to OUT as `llama-quantize IN OUT FTYPE` does, by calling llama_model_quantize in the
prebuilt libllama that node-llama-cpp ships (tests/oracle/node_modules/@node-llama-cpp/linux-x64/
bins/linux-x64/libllama.v0.4.0.so): the same library code as the llama-quantize tool of that
llama.cpp release, without building llama.cpp (which would cost CI about ten minutes).

FTYPE is a name (q4_k_m, q6_k, iq4_xs, ...) or a llama_ftype number. The parameter struct below
mirrors llama_model_quantize_params of that release's include/llama.h field by field; the defaults
come from llama_model_quantize_default_params() itself, so only the fields set here are assumed."""
import ctypes
import os
import sys

FTYPES = {
    "f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10,
    "q3_k_s": 11, "q3_k_m": 12, "q3_k_l": 13, "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16,
    "q5_k_m": 17, "q6_k": 18, "iq4_nl": 25, "iq4_xs": 30, "bf16": 32,
}


class QuantizeParams(ctypes.Structure):
    # llama_model_quantize_params (include/llama.h, node-llama-cpp 3.21.1's llama.cpp)
    _fields_ = [
        ("nthread", ctypes.c_int32),
        ("ftype", ctypes.c_int),                 # enum llama_ftype
        ("output_tensor_type", ctypes.c_int),    # enum ggml_type
        ("token_embedding_type", ctypes.c_int),  # enum ggml_type
        ("allow_requantize", ctypes.c_bool),
        ("quantize_output_tensor", ctypes.c_bool),
        ("only_copy", ctypes.c_bool),
        ("pure", ctypes.c_bool),
        ("keep_split", ctypes.c_bool),
        ("dry_run", ctypes.c_bool),
        ("imatrix", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("tt_overrides", ctypes.c_void_p),
        ("prune_layers", ctypes.c_void_p),
        ("max_buf_size", ctypes.c_size_t),
    ]


def default_lib_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "oracle", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")


def main(argv):
    args, opts = [], {"threads": "1", "lib": default_lib_dir(), "pure": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--pure":
            opts["pure"] = True
        elif a in ("--threads", "--lib") and i + 1 < len(argv):
            opts[a[2:]] = argv[i + 1]
            i += 1
        elif a.startswith("-"):
            sys.exit(f"llama_quantize.py: unknown option {a}\n{__doc__}")
        else:
            args.append(a)
        i += 1
    if len(args) != 3:
        sys.exit(__doc__)
    src, dst, ft = args
    ftype = FTYPES.get(ft.lower()) if not ft.isdigit() else int(ft)
    if ftype is None:
        sys.exit(f"llama_quantize.py: unknown type {ft} ({', '.join(FTYPES)})")
    lib_dir = opts["lib"]
    # libllama needs libggml / libggml-base next to it; load them first by absolute path
    for dep in ("libggml-base.so", "libggml.v0.4.0.so"):
        p = os.path.join(lib_dir, dep)
        if os.path.exists(p):
            ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(os.path.join(lib_dir, "libllama.v0.4.0.so"), mode=ctypes.RTLD_GLOBAL)
    lib.llama_model_quantize_default_params.restype = QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    if hasattr(lib, "ggml_backend_load_all_from_path"):
        lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        lib.ggml_backend_load_all_from_path(lib_dir.encode())
    lib.llama_backend_init()
    p = lib.llama_model_quantize_default_params()
    p.nthread = int(opts["threads"])
    p.ftype = ftype
    p.pure = opts["pure"]
    p.allow_requantize = True
    rc = lib.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    lib.llama_backend_free()
    if rc != 0:
        sys.exit(f"llama_quantize.py: llama_model_quantize failed ({rc})")


if __name__ == "__main__":
    main(sys.argv[1:])
