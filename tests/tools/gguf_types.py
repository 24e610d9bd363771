#!/usr/bin/env python3
"""gguf_types.py A.gguf [B.gguf]

Prints every tensor of A.gguf with its GGML type id and shape. With B.gguf: compares the two files
tensor by tensor (same names, shapes and types) and exits 1 on the first difference. Reads the GGUF
header only (versions 2 and 3)."""
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        d = f.read(64 << 20)  # the header of a 270M model is ~6 MB (the vocabulary)
    if d[:4] != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    o = 4
    _ver, nt, nkv = struct.unpack_from("<IQQ", d, o)
    o += 20
    size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def string():
        nonlocal o
        (n,) = struct.unpack_from("<Q", d, o)
        o += 8
        s = d[o:o + n].decode("utf-8", "replace")
        o += n
        return s

    def value(t):
        nonlocal o
        if t == 8:
            return string()
        if t == 9:
            at, n = struct.unpack_from("<IQ", d, o)
            o += 12
            return [value(at) for _ in range(n)]
        (v,) = struct.unpack_from("<" + fmt[t], d, o)
        o += size[t]
        return v

    kv = {}
    for _ in range(nkv):
        k = string()
        (t,) = struct.unpack_from("<I", d, o)
        o += 4
        kv[k] = value(t)
    tensors = []
    for _ in range(nt):
        name = string()
        (nd,) = struct.unpack_from("<I", d, o)
        o += 4
        ne = struct.unpack_from("<" + "Q" * nd, d, o)
        o += 8 * nd
        t, _off = struct.unpack_from("<IQ", d, o)
        o += 12
        tensors.append((name, t, tuple(ne)))
    return kv, tensors


def main(argv):
    if len(argv) not in (1, 2):
        sys.exit(__doc__)
    kv, ta = read(argv[0])
    if len(argv) == 1:
        print("general.file_type", kv.get("general.file_type"))
        for name, t, ne in ta:
            print(name, t, ne)
        return
    kvb, tb = read(argv[1])
    a, b = {n: (t, ne) for n, t, ne in ta}, {n: (t, ne) for n, t, ne in tb}
    bad = [n for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
    for n in bad[:20]:
        print(f"{n}: {argv[0]} {a.get(n)}, {argv[1]} {b.get(n)}")
    if kv.get("general.file_type") != kvb.get("general.file_type"):
        print(f"general.file_type: {kv.get('general.file_type')} vs {kvb.get('general.file_type')}")
        bad.append("general.file_type")
    if bad:
        sys.exit(f"gguf_types.py: {len(bad)} differences")
    print(f"gguf_types.py: {len(ta)} tensors of the same names, shapes and types; file type {kv.get('general.file_type')}")


if __name__ == "__main__":
    main(sys.argv[1:])
