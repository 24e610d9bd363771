#!/usr/bin/env python3
"""gguf_types.py [--same-data] A.gguf [B.gguf]

Prints every tensor of A.gguf with its GGML type id and shape. With B.gguf: compares the two files
tensor by tensor (same names, shapes and types, same general.file_type) and exits 1 on a difference;
with --same-data also the tensors' bytes. Reads the GGUF header (versions 2 and 3), and with
--same-data the tensor data."""
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
        t, off = struct.unpack_from("<IQ", d, o)
        o += 12
        tensors.append((name, t, tuple(ne), off))
    align = kv.get("general.alignment", 32)
    data_start = (o + align - 1) // align * align
    return kv, [(n, t, ne) for n, t, ne, _ in tensors], {n: data_start + off for n, _, _, off in tensors}


def tensor_bytes(path, offsets):
    """the bytes of every tensor: from its offset to the next one (or the end of the file)"""
    import os
    size = os.path.getsize(path)
    order = sorted(offsets.items(), key=lambda kv: kv[1])
    out = {}
    with open(path, "rb") as f:
        for i, (name, start) in enumerate(order):
            end = order[i + 1][1] if i + 1 < len(order) else size
            f.seek(start)
            out[name] = f.read(end - start)
    return out


def main(argv):
    same_data = "--same-data" in argv
    argv = [a for a in argv if a != "--same-data"]
    if len(argv) not in (1, 2) or (same_data and len(argv) != 2):
        sys.exit(__doc__)
    kv, ta, offa = read(argv[0])
    if len(argv) == 1:
        print("general.file_type", kv.get("general.file_type"))
        for name, t, ne in ta:
            print(name, t, ne)
        return
    kvb, tb, offb = read(argv[1])
    a, b = {n: (t, ne) for n, t, ne in ta}, {n: (t, ne) for n, t, ne in tb}
    bad = [n for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
    for n in bad[:20]:
        print(f"{n}: {argv[0]} {a.get(n)}, {argv[1]} {b.get(n)}")
    if kv.get("general.file_type") != kvb.get("general.file_type"):
        print(f"general.file_type: {kv.get('general.file_type')} vs {kvb.get('general.file_type')}")
        bad.append("general.file_type")
    if same_data and not bad:
        da, db = tensor_bytes(argv[0], offa), tensor_bytes(argv[1], offb)
        for n, t, ne in ta:  # padding after the last tensor may differ in length: compare the tensor itself
            from_a, from_b = da[n], db[n]
            k = min(len(from_a), len(from_b))
            if from_a[:k] != from_b[:k]:
                print(f"{n}: the bytes differ")
                bad.append(n)
    if bad:
        sys.exit(f"gguf_types.py: {len(bad)} differences")
    print(f"gguf_types.py: {len(ta)} tensors of the same names, shapes and types; file type {kv.get('general.file_type')}")


if __name__ == "__main__":
    main(sys.argv[1:])
