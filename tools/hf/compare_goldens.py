#!/usr/bin/env python3
"""compare_goldens.py A.json B.json: how far two recordings of the HF goldens are apart (e.g. the local
CPU recording and the accelerator machine's). Per case: the checkpoint hashes and prompts must be the
same; reported are the largest difference of a recorded logit relative to the row's largest |logit|,
top-16 id agreement and greedy id agreement. Exit status 1 when hashes or prompts differ or a relative
difference exceeds --tol (default 1e-4, the CI tolerance). Plain Python, no dependencies."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()
    A, B = (json.load(open(p)) for p in (args.a, args.b))
    for k in ("transformers", "torch", "device", "date"):
        print(f"{k:13s} {A['recorded'].get(k)!s:32s} {B['recorded'].get(k)!s}")
    cb = {c["name"]: c for c in B["cases"]}
    bad = False
    for ca in A["cases"]:
        c2 = cb.get(ca["name"])
        if c2 is None:
            print(f"{ca['name']}: only in {args.a}")
            bad = True
            continue
        if ca["files_sha256"] != c2["files_sha256"] or ca["ids"] != c2["ids"] or ca["columns"] != c2["columns"]:
            print(f"{ca['name']}: different checkpoints or prompts")
            bad = True
            continue
        worst, top_same, n_top = 0.0, 0, 0
        for pa, pb in zip(ca["positions"], c2["positions"]):
            scale = max(pa["row_max_abs"], 1e-30)
            for x, y in zip(pa["values"], pb["values"]):
                worst = max(worst, abs(x - y) / scale)
            vb = dict(zip(pb["top_ids"], pb["top_values"]))
            for i, x in zip(pa["top_ids"], pa["top_values"]):
                n_top += 1
                if i in vb:
                    top_same += 1
                    worst = max(worst, abs(x - vb[i]) / scale)
        g = sum(1 for x, y in zip(ca["greedy"], c2["greedy"]) if x == y)
        flag = "" if worst <= args.tol else f"  > {args.tol}"
        bad |= worst > args.tol
        print(f"{ca['name']:32s} relative L-inf {worst:.2e}{flag}; top-16 ids shared {top_same}/{n_top}; "
              f"greedy {g}/{len(ca['greedy'])}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
