#!/usr/bin/env python3
"""Speculation on against off on a trained model (issue 17): every answer byte-identical.

    spec_identity.py --fgemma BIN --model M.gguf --tools CATALOG.json --data A.jsonl [--data B.jsonl ...]
                     [--modes off,call-only,call-or-text] [--threads 1,2] [--every N]

For every data file (one {"utterance": ...} per line, as `fgemma eval --calls` reads), every
constraint mode and every thread count, `fgemma call` answers all utterances with --speculate off and
with --speculate on (the answer cache on, as by default, so repeated phrasings exercise it). The
parsed call ("result"), the raw text, the stop reason and the token counts (chunk, decode) must be
equal line for line; the answers must also be the same on every thread count. Prints the weight
passes per answer after the chunk (median, p95) off and on, and the accepted drafts per source.
Exit status: 0 identical, 1 a difference or a failure, 2 usage.
"""
import argparse
import json
import subprocess
import sys


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if s else 0


def p95(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, (len(s) * 95 + 99) // 100 - 1)] if s else 0


def answer(args, utts, mode, threads, spec):
    cmd = [args.fgemma, "call", "-m", args.model, "--tools", args.tools, "--constrained", mode,
           "--speculate", spec, "-t", str(threads), "--max-tokens", "48"]
    r = subprocess.run(cmd, input="\n".join(utts) + "\n", capture_output=True, text=True, encoding="utf-8")
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if len(rows) != len(utts):
        raise RuntimeError(f"{len(rows)} answers for {len(utts)} utterances ({mode}, {threads} threads, {spec})")
    return rows


def key(row):
    # what must not change: the answer and how many tokens it took
    return json.dumps({"utterance": row.get("utterance"), "result": row.get("result"), "raw": row.get("raw"),
                       "stop": row.get("stop"), "tokens": row.get("tokens")}, sort_keys=True, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fgemma", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--data", required=True, action="append")
    ap.add_argument("--modes", default="off,call-only,call-or-text")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--every", type=int, default=1, help="every N-th utterance of each file (1: all)")
    args = ap.parse_args()
    if args.every < 1:
        ap.error("--every must be >= 1")
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error("--threads takes a comma list of integers")
    failures = 0
    for data in args.data:
        with open(data, encoding="utf-8") as f:
            utts = [json.loads(line)["utterance"] for line in f if line.strip()][::args.every]
        if not utts or any("\n" in u for u in utts):
            print(f"FAIL {data}: no utterances, or one with a line break")
            return 1
        for mode in args.modes.split(","):
            first = None  # the answers on the first thread count, spec off
            for t in threads:
                off = answer(args, utts, mode, t, "off")
                on = answer(args, utts, mode, t, "on")
                diff = [i for i in range(len(utts)) if key(off[i]) != key(on[i])]
                if first is None:
                    first = off
                across = [i for i in range(len(utts)) if key(off[i]) != key(first[i])]
                p_off = [r["passes"]["weight"] - 1 for r in off]  # after the utterance chunk
                p_on = [r["passes"]["weight"] - 1 for r in on]
                acc = {}
                for r in on:
                    for src, (drafted, accepted) in r.get("drafts", {}).items():
                        a = acc.setdefault(src, [0, 0])
                        a[0] += drafted
                        a[1] += accepted
                srcs = ", ".join(f"{s} {a[1]}/{a[0]}" for s, a in acc.items())
                status = "ok  " if not diff and not across else "FAIL"
                print(f"{status} {data} {mode:<12} {t} thread(s): {len(utts)} answers, {len(diff)} differ on/off, "
                      f"{len(across)} differ from {threads[0]} thread(s); passes after the chunk off median "
                      f"{median(p_off)} p95 {p95(p_off)}, on median {median(p_on)} p95 {p95(p_on)}; accepted/drafted: {srcs}")
                for i in (diff + across)[:5]:
                    print(f"     {json.dumps(utts[i], ensure_ascii=False)}: off {key(off[i])}\n"
                          f"     on {key(on[i])}")
                failures += len(diff) + len(across)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        print(f"spec_identity.py: {e}", file=sys.stderr)
        sys.exit(1)
