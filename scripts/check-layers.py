#!/usr/bin/env python3
"""Checks the one-way rule of docs/ARCHITECTURE.md: every `#include "..."` in src/ names a header
of its own folder or of a folder its layer may use (the table below), and tools/, bindings/ and
examples/ include only the public header (and their own headers). Run from anywhere; exit 1 and
one line per break, or 0 and a summary."""
import pathlib
import re
import subprocess
import sys

# Layer -> the layers it may include. fg_internal.h and src/core/ are "core", below everything.
ALLOWED = {
    "core": set(),
    "tensor": {"core"},
    "gguf": {"core", "tensor"},
    "kv": {"core", "tensor"},
    "kernels": {"core", "tensor"},
    "tokenizer": {"core", "gguf"},
    "model": {"core", "tensor", "gguf", "kernels", "kv", "tokenizer"},
    "session": {"core", "tensor", "kv", "kernels", "tokenizer", "model"},
    "nlu": {"core", "session", "tokenizer"},
    "convert": {"core", "tensor", "gguf", "model"},
    "gen": {"core", "tensor", "gguf", "convert", "model"},
}
PUBLIC_ONLY = ("tools/", "bindings/", "examples/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """src/<layer>/... or src/fg_internal.h -> layer name."""
    parts = pathlib.PurePosixPath(path).parts
    if parts[0] != "src":
        return None
    return "core" if len(parts) == 2 or parts[1] == "core" else parts[1]


def table_cycle():
    """A layer that reaches itself through ALLOWED, or None: the table must be one-way too."""
    def reach(start, layer, seen):
        for dep in ALLOWED.get(layer, ()):
            if dep == start:
                return True
            if dep not in seen:
                seen.add(dep)
                if reach(start, dep, seen):
                    return True
        return False
    return next((layer for layer in ALLOWED if reach(layer, layer, set())), None)


def doc_table(root):
    """The 'layer | may use' table of docs/ARCHITECTURE.md as {layer: set of layers}."""
    rows, on = {}, False
    for line in (root / "docs" / "ARCHITECTURE.md").read_text().splitlines():
        if line.startswith("| layer | may use |"):
            on = True
            continue
        if on and not line.startswith("|"):
            break
        if on and not line.startswith("|---"):
            cells = [re.sub(r"\(.*?\)", "", c).strip() for c in line.strip("|").split("|")]
            uses = {u.strip() for u in cells[1].split(",")} - {"nothing", ""}
            for layer in cells[0].split(","):
                rows[layer.strip()] = uses
    return rows


def main():
    cycle = table_cycle()
    if cycle:
        print(f"check-layers: the table ALLOWED has a circle through {cycle}")
        return 1
    root = pathlib.Path(__file__).resolve().parent.parent
    doc = doc_table(root)
    if doc != ALLOWED:
        print("check-layers: docs/ARCHITECTURE.md's table and ALLOWED in scripts/check-layers.py differ: "
              + "; ".join(f"{k}: doc {sorted(doc.get(k, ()))} script {sorted(ALLOWED.get(k, ()))}"
                          for k in sorted(set(doc) | set(ALLOWED)) if doc.get(k) != ALLOWED.get(k)))
        return 1
    files = subprocess.run(["git", "ls-files", "*.c", "*.h"], cwd=root, capture_output=True, text=True,
                           check=True).stdout.split()
    problems, edges = [], set()
    for f in files:
        text = (root / f).read_text(errors="replace")
        for inc in INCLUDE.findall(text):
            if f.startswith("src/"):
                me = layer_of(f)
                if me not in ALLOWED:
                    problems.append(f"{f}: folder src/{me}/ has no layer in scripts/check-layers.py")
                    break
                them = "core" if inc in ("fg_internal.h", "fgemma.h") or "/" not in inc else inc.split("/")[0]
                if them != me and them not in ALLOWED[me]:
                    problems.append(f"{f}: includes \"{inc}\": layer {me} may use only "
                                    f"{', '.join(sorted(ALLOWED[me])) or 'nothing'}")
                elif them != me:
                    edges.add((me, them))
            elif f.startswith(PUBLIC_ONLY):
                top = root / pathlib.PurePosixPath(f).parts[0]
                name = pathlib.PurePosixPath(inc).name
                own = inc == "fgemma.h" or (root / f).parent.joinpath(inc).exists() or any(top.rglob(name))
                if not own or inc.split("/")[0] in ALLOWED:
                    problems.append(f"{f}: includes \"{inc}\": tools, bindings and examples use only "
                                    "fgemma.h and their own headers")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"check-layers: {len(files)} files, {len(edges)} layer edges, all one-way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
