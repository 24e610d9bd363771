#!/usr/bin/env python3
# ----------------------------------------------------------------------------------------------
# gguf_dequant.py: fgemma's dequantization of every tensor of a GGUF file against the gguf Python
# package's numpy dequantizers (gguf.quants.dequantize, gguf 0.19.0 in .cache/venv-oracle, made by
# scripts/setup.sh), bit for bit.
#
#   .cache/venv-oracle/bin/python tests/oracle/gguf_dequant.py --tool DEQUANT_DUMP FILE.gguf
#        [--only NAME ...] [--rows N] [--rows-per-chunk N]
#
# DEQUANT_DUMP is tests/tools/dequant_dump.c (fg_dequantize_row per row, raw f32 on stdout). Both
# sides must list the same tensors (names, type ids, shapes, in file order); each tensor's values
# are compared as uint32 bit patterns (so -0.0 != 0.0 and NaN payloads count). A tensor whose type
# fgemma cannot dequantize is a failure, never a skip. Prints per type: tensors, values, identical
# tensors; on a mismatch the first differing element (tensor, row, column, both values and bits).
# --rows N compares only the first N rows of each tensor (every row runs the same decoder; for the
# synthetic files with a 262,144-row embedding). Exit status: 0 every tensor identical, 1 any difference or failure, 2 usage.

import argparse
import collections
import importlib.metadata
import struct
import subprocess
import sys
import time

try:
    import numpy as np
    import gguf
    import gguf.constants
    import gguf.quants
except ImportError as e:  # the venv is made by scripts/setup.sh
    sys.exit(f"gguf_dequant.py: cannot import gguf/numpy ({e}); run scripts/setup.sh, which creates "
             ".cache/venv-oracle with gguf==0.19.0, and run this script with .cache/venv-oracle/bin/python")


def tool_list(tool, path):
    r = subprocess.run([tool, "--list", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{tool} --list {path} exited with {r.returncode}: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        name, type_id, type_name, ne, supported = line.split("\t")
        out.append((name, int(type_id), type_name, tuple(int(x) for x in ne.split(",")), supported == "1"))
    return out


# GGUF value types -> struct format of a scalar (8 string and 9 array are handled apart)
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def ref_tensors(path):
    """(name, type id, ne[4], raw uint8 rows (n_rows, row_bytes), GGMLQuantizationType) in file order.

    The header is read here (gguf.GGUFReader builds a Python object per array element: ~16 s of CPU
    for a 262,144-token vocabulary); the values come from gguf.quants.dequantize, row sizes from
    gguf.constants.GGML_QUANT_SIZES."""
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    mv = memoryview(buf)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, mv, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        v = bytes(mv[pos:pos + n]).decode("utf-8")
        pos += n
        return v

    def skip_value(t):
        nonlocal pos
        if t == 8:
            n = take("<Q")  # (pos += take(...) would add to the position before take moved it)
            pos += n
        elif t == 9:
            et, n = take("<I"), take("<Q")
            if et == 8:
                for _ in range(n):
                    k = take("<Q")
                    pos += k
            else:
                pos += n * struct.calcsize(_SCALAR[et])
        else:
            pos += struct.calcsize(_SCALAR[t])

    if bytes(mv[0:4]) != b"GGUF":
        raise RuntimeError(f"{path}: not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    if version not in (2, 3):
        raise RuntimeError(f"{path}: GGUF version {version}")
    alignment = 32
    for _ in range(n_kv):
        key, t = string(), take("<I")
        if key == "general.alignment" and t == 4:
            alignment = take("<I")
        else:
            skip_value(t)
    infos = []
    for _ in range(n_tensors):
        name, nd = string(), take("<I")
        ne = [take("<Q") for _ in range(nd)] + [1] * (4 - nd)
        infos.append((name, take("<I"), tuple(ne), take("<Q")))
    data = (pos + alignment - 1) // alignment * alignment
    out = []
    for name, type_id, ne, off in infos:
        qtype = gguf.GGMLQuantizationType(type_id)
        block, type_size = gguf.constants.GGML_QUANT_SIZES[qtype]
        row_bytes = ne[0] // block * type_size
        n_rows = ne[1] * ne[2] * ne[3]
        raw = buf[data + off:data + off + n_rows * row_bytes].reshape(n_rows, row_bytes)
        out.append((name, type_id, ne, raw, qtype))
    return out


def first_mismatch(mine, want, row0):
    """Index (row, col) of the first differing uint32 in two (rows, cols) arrays."""
    diff = np.nonzero(mine != want)
    r, c = int(diff[0][0]), int(diff[1][0])
    return row0 + r, c, r


def compare_tensor(tool, path, name, qtype, ne, raw, rows_per_chunk, max_rows):
    """None when identical, else a message. Streams the tool's output chunk by chunk of rows."""
    cols = ne[0]
    n_rows = raw.shape[0]
    cmd = [tool, path, name]
    if max_rows and max_rows < n_rows:
        n_rows = max_rows
        cmd.append(str(max_rows))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    msg = None
    try:
        for r0 in range(0, n_rows, rows_per_chunk):
            r1 = min(n_rows, r0 + rows_per_chunk)
            want_bytes = (r1 - r0) * cols * 4
            buf = p.stdout.read(want_bytes)
            if len(buf) != want_bytes:
                msg = f"fgemma wrote {r0 * cols * 4 + len(buf)} bytes, expected {n_rows * cols * 4}"
                break
            mine = np.frombuffer(buf, dtype="<u4").reshape(r1 - r0, cols)
            ref = np.ascontiguousarray(gguf.quants.dequantize(raw[r0:r1], qtype), dtype=np.float32)
            if ref.shape != (r1 - r0, cols):
                msg = f"gguf dequantized to shape {ref.shape}, expected {(r1 - r0, cols)}"
                break
            want = ref.view("<u4")
            if not np.array_equal(mine, want):
                row, col, k = first_mismatch(mine, want, r0)
                fm = mine[k, col:col + 1].view("<f4")[0]
                fw = want[k, col:col + 1].view("<f4")[0]
                n_bad = int(np.count_nonzero(mine != want))
                msg = (f"first mismatch at row {row}, column {col}: fgemma {float(fm):.9g} (0x{int(mine[k, col]):08x}), "
                       f"gguf {float(fw):.9g} (0x{int(want[k, col]):08x}); {n_bad} of {(r1 - r0) * cols} values differ "
                       f"in rows {r0}..{r1 - 1}")
                break
        if msg is None and p.stdout.read(1):
            msg = "fgemma wrote more bytes than the tensor holds"
    finally:
        p.stdout.close()
        err = p.stderr.read().decode("utf-8", "replace").strip()
        p.stderr.close()
        rc = p.wait()
    if rc != 0:
        return f"dequant_dump exited with {rc}: {err}"
    return msg


def main():
    ap = argparse.ArgumentParser(description="fgemma dequantization vs gguf numpy, bit for bit")
    ap.add_argument("--tool", required=True, help="the dequant_dump binary")
    ap.add_argument("--only", nargs="+", default=None, help="compare only these tensors")
    ap.add_argument("--rows", type=int, default=0, help="compare the first N rows of each tensor (0: all)")
    ap.add_argument("--rows-per-chunk", type=int, default=4096)
    ap.add_argument("file")
    a = ap.parse_args()
    if a.rows_per_chunk < 1 or a.rows < 0:
        ap.error("--rows-per-chunk must be >= 1, --rows >= 0")

    t0 = time.time()
    mine = tool_list(a.tool, a.file)
    ref = ref_tensors(a.file)
    print(f"{a.file}: {len(ref)} tensors (gguf {importlib.metadata.version('gguf')}, numpy {np.__version__})")
    failures = []
    if [(n, t, ne) for n, t, _, ne, _ in mine] != [(n, t, ne) for n, t, ne, _, _ in ref]:
        names_m = [m[0] for m in mine]
        names_r = [r[0] for r in ref]
        failures.append(f"tensor lists differ: fgemma {len(mine)} tensors, gguf {len(ref)}; "
                        f"only in fgemma {sorted(set(names_m) - set(names_r))[:5]}, "
                        f"only in gguf {sorted(set(names_r) - set(names_m))[:5]}")
        for m, r in zip(mine, ref):
            if (m[0], m[1], m[3]) != (r[0], r[1], r[2]):
                failures.append(f"first differing entry: fgemma {m[0]} type {m[1]} ne {m[3]}, "
                                f"gguf {r[0]} type {r[1]} ne {r[2]}")
                break
    supported = {m[0]: m[4] for m in mine}
    only = set(a.only) if a.only else None
    if only is not None and not only <= {r[0] for r in ref}:
        failures.append(f"--only names tensors the file lacks: {sorted(only - {r[0] for r in ref})}")

    per_type = collections.OrderedDict()
    for name, type_id, ne, raw, qtype in ref:
        if only is not None and name not in only:
            continue
        st = per_type.setdefault(qtype.name, {"tensors": 0, "values": 0, "identical": 0, "unsupported": 0})
        st["tensors"] += 1
        rows = ne[1] * ne[2] * ne[3]
        st["values"] += ne[0] * (min(rows, a.rows) if a.rows else rows)
        if not supported.get(name, False):
            st["unsupported"] += 1
            failures.append(f"{name}: type {qtype.name} (id {type_id}) is not supported by fgemma's dequantizer")
            continue
        why = compare_tensor(a.tool, a.file, name, qtype, ne, raw, a.rows_per_chunk, a.rows)
        if why is None:
            st["identical"] += 1
        else:
            failures.append(f"{name} ({qtype.name}, ne {ne[:2]}): {why}")

    for tname, st in per_type.items():
        extra = f", {st['unsupported']} not supported by fgemma" if st["unsupported"] else ""
        print(f"  {tname:8} {st['tensors']:4} tensors {st['values']:11} values compared: "
              f"{st['identical']} identical bit for bit{extra}")
    total = sum(st["tensors"] for st in per_type.values())
    same = sum(st["identical"] for st in per_type.values())
    print(f"{same}/{total} tensors identical ({time.time() - t0:.1f} s)")
    if failures:
        shown = failures[:10]
        for f in shown:
            print(f"FAIL {f}")
        if len(failures) > len(shown):
            print(f"... and {len(failures) - len(shown)} more failures")
        print("FAIL")
        return 1
    if total == 0:
        print("FAIL: no tensor compared")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
