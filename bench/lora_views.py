#!/usr/bin/env python3
"""lora_views.py — what model views (fg_model_with_loras, docs/LORA.md "Many adapters, one base") save and
cost, on the real Gemma 3 270M Q4_K_M with two adapters over the tv catalog:

  memory   resident memory (VmRSS) and proportional set size (Pss, /proc/self/smaps_rollup) of ONE process
           holding the base, two views (adapter A, adapter B) and an NLU engine on each, against TWO
           processes each holding the base loaded with one adapter and one engine (both alive while
           measured, so shared file pages are split between them in Pss). Every engine has answered one
           utterance first.
  switch   per-call time of engine A when calls alternate A, B, A, B, ... against A, A, A, ... (rounds of
           both interleaved; answer cache off, so every call decodes): median, p10..p90 of A's calls.

Adapter A: models/tv-270m-lora.gguf at scale 1; adapter B: the same file at scale 0.5 (another fingerprint,
another run-time copy; the same size), or --adapter-b FILE.
Needs the Python package of this tree (PYTHONPATH) and the real base (scripts/setup.sh).

Usage: bench/lora_views.py [--base .cache/models/gemma-3-270m-q4_k_m.gguf] [--rounds 6] [--threads 1]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def mem():
    rss = pss = 0
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Pss:"):
            pss = int(line.split()[1]) * 1024
    return rss, pss


def child(args):
    """one process: base + one adapter (loaded with it) + an engine; waits for "go", prints RSS and Pss"""
    import fgemma
    catalog = open(args.catalog, encoding="utf-8").read()
    m = fgemma.Model(args.base, lora=(args.child_adapter, args.child_scale), threads=args.threads)
    e = m.nlu(catalog, answer_cache=False)
    e.ask("Mach bitte etwas lauter")
    print("READY", flush=True)
    sys.stdin.readline()
    print("MEM %d %d" % mem(), flush=True)
    sys.stdin.readline()


def two_processes(args, b_path, b_scale):
    procs = []
    for path, scale in ((args.adapter_a, 1.0), (b_path, b_scale)):
        procs.append(subprocess.Popen([sys.executable, __file__, "--child", path, "--child-scale", str(scale),
                                       "--base", args.base, "--catalog", args.catalog, "--threads", str(args.threads)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for p in procs:
        assert p.stdout.readline().startswith("READY")
    out = []
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
        out.append(tuple(int(x) for x in p.stdout.readline().split()[1:]))
    for p in procs:
        p.stdin.write("end\n")
        p.stdin.flush()
        p.wait()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=os.path.join(ROOT, ".cache/models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--adapter-a", default=os.path.join(ROOT, "models/tv-270m-lora.gguf"))
    ap.add_argument("--adapter-b", default=None)
    ap.add_argument("--catalog", default=os.path.join(ROOT, "tests/data/nlu/tv-catalog.json"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--child", default=None)
    ap.add_argument("--child-scale", type=float, default=1.0)
    args = ap.parse_args()
    if args.child:
        args.child_adapter = args.child
        return child(args)
    import fgemma
    b_path, b_scale = (args.adapter_b, 1.0) if args.adapter_b else (args.adapter_a, 0.5)
    utts = [u for u in open(os.path.join(ROOT, "examples/utterances-de.txt"), encoding="utf-8").read().splitlines() if u.strip()]
    catalog = open(args.catalog, encoding="utf-8").read()

    # memory: two processes first (this one holds nothing yet), then one process with two views
    two = two_processes(args, b_path, b_scale)
    base = fgemma.Model(args.base, threads=args.threads)
    va, vb = base.with_lora(args.adapter_a), base.with_lora(b_path, scale=b_scale)
    ea, eb = va.nlu(catalog, answer_cache=False), vb.nlu(catalog, answer_cache=False)
    ea.ask(utts[1])
    eb.ask(utts[1])
    one = mem()
    mib = 1 << 20
    print("memory (MiB): one process, base + 2 views + 2 engines: RSS %.1f, Pss %.1f" % (one[0] / mib, one[1] / mib))
    print("              two processes, base + 1 adapter + 1 engine each: RSS %.1f + %.1f = %.1f, Pss %.1f + %.1f = %.1f"
          % (two[0][0] / mib, two[1][0] / mib, (two[0][0] + two[1][0]) / mib, two[0][1] / mib, two[1][1] / mib,
             (two[0][1] + two[1][1]) / mib))
    print("              view A: lora_bytes %.1f MiB; base repack_bytes %.1f MiB"
          % (va.info["lora_bytes"] / mib, base.info["repack_bytes"] / mib))

    # switching: A's per-call time when alternating with B vs always A, rounds interleaved
    def run(alternate):
        t = []
        for u in utts:
            t0 = time.perf_counter()
            ea.ask(u)
            t.append((time.perf_counter() - t0) * 1e3)
            (eb if alternate else ea).ask(u)
        return t

    alt, same = [], []
    for r in range(args.rounds):
        for mode in ((True, False) if r % 2 == 0 else (False, True)):
            (alt if mode else same).extend(run(mode))

    def q(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))]

    for name, xs in (("A after B (alternating)", alt), ("A after A (always A)   ", same)):
        print("switch: %s: %d calls, median %.2f ms, p10 %.2f, p90 %.2f" % (name, len(xs), statistics.median(xs), q(xs, 0.1), q(xs, 0.9)))
    print("switch: median ratio alternating / always A: %.3f" % (statistics.median(alt) / statistics.median(same)))


if __name__ == "__main__":
    sys.exit(main())
