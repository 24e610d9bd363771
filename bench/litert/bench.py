#!/usr/bin/env python3
"""fgemma beside LiteRT-LM on the same weights: the driver behind bench/litert/run.

    bench.py prompts                 write OUT/prompts (catalog, 843-token text, utterance)
    bench.py check                   token ids of both tokenizers, rewind vs fresh session, first answers
    bench.py micro   [--rounds R] [--threads 1,2] [--reps N]
    bench.py start   [--rounds R] [--threads 1,2]
    bench.py calls   [--rounds R] [--threads 1,2] [--limit N]
    bench.py quality [--positions N]
    bench.py report                  markdown tables from OUT/*.jsonl

Every measurement is its own process (bench/litert/engines.py, or `fgemma call` for fgemma's whole
calls); the engines alternate inside each round (fgemma first in odd rounds, LiteRT-LM first in
even ones), every result line goes to OUT/<what>.jsonl with the 1-minute load average before and
after, and the peak RSS is the child's ru_maxrss (os.wait4). OUT is .cache/litert/results
($LITERT_BENCH_OUT overrides it).
"""

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
D = os.path.join(ROOT, ".cache", "litert")
OUT = os.environ.get("LITERT_BENCH_OUT", os.path.join(D, "results"))
PROMPTS = os.path.join(D, "prompts")
PY = os.path.join(ROOT, ".cache", "litert-venv", "bin", "python")
ENGINES = os.path.join(ROOT, "bench", "litert", "engines.py")
# fgemma's CLI: the one built with the extension (bench/litert/run setup), else the main build
FGEMMA = next((p for p in (os.path.join(ROOT, "build-litert", "fgemma"), os.path.join(ROOT, "build", "fgemma"))
               if os.path.exists(p)), os.path.join(ROOT, "build", "fgemma"))
CATALOG = os.path.join(ROOT, "tests", "data", "nlu", "tv-catalog.json")
DEV = os.path.join(ROOT, "training", "tv270m-dev.jsonl")
GPL = os.path.join(ROOT, "tests", "data", "real", "gpl-3.0.txt")
REAL = os.path.join(ROOT, ".cache", "models", "gemma-3-270m-q4_k_m.gguf")
LORA = os.path.join(ROOT, "models", "tv-270m-lora.gguf")
FN_TOKENS = ["<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
             "<end_function_call>", "<start_function_response>", "<end_function_response>", "<escape>"]

# (label, engine, model path, extra) — the pairs compared
MICRO = [
    ("LiteRT int8", "litert", f"{D}/out-int8/model.litertlm"),
    ("fgemma Q8_0", "fgemma", f"{D}/base-q8_0.gguf"),
    ("fgemma Q8_0 F16 KV", "fgemma", f"{D}/base-q8_0.gguf", "--kv-type", "f16"),
    ("LiteRT int4", "litert", f"{D}/out-int4/model.litertlm"),
    ("fgemma Q4_0", "fgemma", f"{D}/base-q4_0.gguf"),
    ("fgemma Q4_0 pure", "fgemma", f"{D}/base-q4_0-pure.gguf"),
    ("fgemma Q4_0 pure searched", "fgemma", f"{D}/base-q4_0-pure-searched.gguf"),
    ("fgemma Q4_0 + Q4_0 head", "fgemma", f"{D}/base-q4_0.gguf", "--head-type", "q4_0"),
    ("fgemma Q4_K_M", "fgemma", REAL),
    ("fgemma Q4_K_M + Q4_0 head", "fgemma", REAL, "--head-type", "q4_0"),
    ("fgemma Q4_K_M with Q4_0 head file", "fgemma", f"{D}/q4_k_m-q4_0-head.gguf"),
    ("LiteRT int4 blockwise-32", "litert", f"{D}/out-int4b32/model.litertlm"),
]
# LiteRT's weight-only int8 (float activations: the agreement of fgemma's Q8_0) is measured with
# `micro --extra`: it dequantizes the weights at load (9 GB peak RSS here) and prefills 3-5x slower.
MICRO_EXTRA = [("LiteRT int8 weight-only", "litert", f"{D}/out-wo8/model.litertlm")]


def load1():
    return os.getloadavg()[0]


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(D, "pyfgemma")
    e["HF_HUB_OFFLINE"] = "1"
    e.pop("FGEMMA_MODEL", None)
    return e


def run(cmd, stdin=None, first_marker=None):
    """Runs cmd; returns (stdout text, stderr text, peak RSS KiB, wall s, s to first_marker)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), text=True)
    t_first = None
    if stdin is not None:
        p.stdin.write(stdin)
        p.stdin.close()
    lines = []
    for line in p.stdout:
        if first_marker and t_first is None and line.startswith(first_marker):
            t_first = time.perf_counter() - t0
        lines.append(line)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{err[-3000:]}")
    return "".join(lines), err, ru.ru_maxrss, wall, t_first


def result(stdout):
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("no RESULT line:\n" + stdout[-2000:])


def record(what, row):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, what + ".jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")


def engines(what, engine, model, threads, *extra, first_marker=None):
    cmd = [PY, ENGINES, what, "--engine", engine, "--model", model, "--threads", str(threads),
           "--prompts", PROMPTS, *extra]
    la0 = load1()
    out, err, rss, wall, tf = run(cmd, first_marker=first_marker)
    r = result(out)
    r.update({"rss_kib": rss, "proc_wall_s": wall, "first_s": tf, "load_before": la0, "load_after": load1(),
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return r


# ----------------------------------------------------------------------------


def cmd_prompts(a):
    os.makedirs(PROMPTS, exist_ok=True)
    cat = subprocess.run([FGEMMA, "prompt", "--tools", CATALOG], capture_output=True, text=True,
                         check=True).stdout
    with open(os.path.join(PROMPTS, "catalog-fn.txt"), "w") as f:
        f.write(cat)
    base = cat
    for i, t in enumerate(FN_TOKENS):
        base = base.replace(t, f"<unused{40 + i}>")
    with open(os.path.join(PROMPTS, "catalog.txt"), "w") as f:
        f.write(base)
    with open(os.path.join(PROMPTS, "depth0.txt"), "w") as f:
        f.write("The")
    with open(os.path.join(PROMPTS, "utterance.txt"), "w") as f:
        f.write("mach lauter")
    # the first characters of the GPL whose tokens with <bos> are exactly 843
    text = open(GPL, encoding="utf-8").read()

    def ntok(s):
        out = subprocess.run([FGEMMA, "tokenize", "-m", REAL, "--bos", "-"], input=s, capture_output=True,
                             text=True, check=True).stdout
        return len(out.split())

    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if ntok(text[:mid]) < 843:
            lo = mid + 1
        else:
            hi = mid
    if ntok(text[:lo]) != 843:
        raise SystemExit("no prefix of the GPL has exactly 843 tokens")
    with open(os.path.join(PROMPTS, "p843.txt"), "w") as f:
        f.write(text[:lo])
    # the utterance part of fgemma's prompt, to check engines.CALL_TAIL
    u = subprocess.run([FGEMMA, "prompt", "--tools", CATALOG, "mach lauter"], capture_output=True, text=True,
                       check=True).stdout
    assert u == cat + "mach lauter<end_of_turn>\n<start_of_turn>model\n", "utterance part differs"
    print(f"prompts in {PROMPTS}: catalog {len(cat)} chars, p843 {lo} chars of the GPL")


def cmd_check(a):
    """Token ids of LiteRT-LM's tokenizer (from the bundle) against fgemma's; bundle contents."""
    code = r"""
import json, sys
sys.path.insert(0, %r)
from engines import Litert
e = Litert(sys.argv[1], 2)
out = {}
for n in sys.argv[2:]:
    out[n] = e.tokenize(open(n, encoding='utf-8').read())
print("RESULT " + json.dumps(out))
""" % os.path.dirname(ENGINES)
    files = [os.path.join(PROMPTS, n) for n in ("catalog.txt", "p843.txt", "catalog-fn.txt")]
    utt = [json.loads(l)["utterance"] for l in open(DEV, encoding="utf-8")][:40]
    ufile = os.path.join(PROMPTS, "utterances40.txt")
    with open(ufile, "w") as f:
        f.write("\n".join(utt) + "\n")
    ok = True
    for label, model, fgm, names in (("base int8", f"{D}/out-int8/model.litertlm", REAL, files[:2]),
                                     ("tv int8", f"{D}/out-tv-int8/model.litertlm", f"{D}/tv-q8_0.gguf",
                                      files[2:])):
        if not os.path.exists(model):
            print(f"{label}: {model} missing")
            continue
        out, _, _, _, _ = run([PY, "-c", code, model, *names, ufile])
        lt = result(out)
        for n in names:
            fg = [int(x) for x in subprocess.run([FGEMMA, "tokenize", "-m", fgm, "--bos", "-"],
                                                 stdin=open(n), capture_output=True, text=True,
                                                 check=True).stdout.split()]
            same = fg == lt[n]
            ok &= same
            print(f"{label}: {os.path.basename(n)}: fgemma {len(fg)} ids, LiteRT-LM {len(lt[n])}, "
                  f"{'identical' if same else 'DIFFERENT'}")
    for m in sorted(os.listdir(D)):
        p = os.path.join(D, m, "model.litertlm")
        if m.startswith("out-") and os.path.exists(p):
            peek = subprocess.run([os.path.join(os.path.dirname(PY), "litert-lm-peek"), "--litertlm_file", p],
                                  capture_output=True, text=True).stdout
            types = [l.split(":", 1)[1].strip() for l in peek.splitlines() if "Data Type:" in l]
            mt = "function_gemma" if "function_gemma" in peek else "gemma3" if "gemma3 {" in peek else "?"
            stops = peek.count("stop_tokens {")
            print(f"{m}: {os.path.getsize(p) / 2**20:.1f} MiB, sections {types}, model type {mt}, "
                  f"{stops} stop tokens")
    print("tokenizers agree" if ok else "TOKENIZERS DIFFER")


def cmd_micro(a):
    for rnd in range(a.rounds):
        for t in a.threads:
            sel = MICRO + (MICRO_EXTRA if a.extra else [])
            order = sel if rnd % 2 == 0 else list(reversed(sel))
            for label, engine, model, *extra in order:
                if a.only and label not in a.only.split(","):
                    continue
                if not os.path.exists(model):
                    print(f"skip {label}: {model} missing")
                    continue
                r = engines("micro", engine, model, t, "--reps", str(a.reps), *extra)
                r.update({"label": label, "round": rnd})
                record("micro", r)
                print(f"round {rnd} t{t} {label}: catalog first {r['catalog_first_ms']:.0f} ms, "
                      f"843 first {r['p843_first_ms']:.0f} ms, decode d0 {r['depth0_decode_ms_per_tok']:.1f} "
                      f"/ cat {r['catalog_decode_ms_per_tok']:.1f} ms/tok, rss {r['rss_kib'] / 1024:.0f} MiB, "
                      f"load {r['load_before']:.2f}", flush=True)


START = [
    ("LiteRT int8, no cache", "litert", f"{D}/out-int8/model.litertlm", "fresh"),
    ("LiteRT int8, XNNPACK cache", "litert", f"{D}/out-int8/model.litertlm", "warm"),
    ("fgemma Q8_0, no snapshot", "fgemma", f"{D}/base-q8_0.gguf", None),
    ("fgemma Q8_0, snapshot", "fgemma", f"{D}/base-q8_0.gguf", "snap"),
    ("LiteRT int4, no cache", "litert", f"{D}/out-int4/model.litertlm", "fresh"),
    ("LiteRT int4, XNNPACK cache", "litert", f"{D}/out-int4/model.litertlm", "warm"),
    ("fgemma Q4_0, no snapshot", "fgemma", f"{D}/base-q4_0.gguf", None),
    ("fgemma Q4_0, snapshot", "fgemma", f"{D}/base-q4_0.gguf", "snap"),
    ("fgemma Q4_K_M, no snapshot", "fgemma", REAL, None),
    ("fgemma Q4_K_M, snapshot", "fgemma", REAL, "snap"),
]


def cmd_start(a):
    warm = os.path.join(D, "xnn-cache")
    snaps = os.path.join(D, "snapshots")
    os.makedirs(warm, exist_ok=True)
    os.makedirs(snaps, exist_ok=True)
    for rnd in range(a.rounds):
        for t in a.threads:
            order = START if rnd % 2 == 0 else list(reversed(START))
            for label, engine, model, kind in order:
                if not os.path.exists(model):
                    continue
                extra = []
                tmp = None
                if engine == "litert":
                    if kind == "fresh":
                        tmp = tempfile.mkdtemp(dir=D, prefix="xnn-fresh-")
                        extra = ["--cache-dir", tmp]
                    else:
                        wdir = os.path.join(warm, os.path.basename(os.path.dirname(model)))
                        if not os.path.isdir(wdir):  # written once, outside the timing
                            os.makedirs(wdir)
                            engines("start", engine, model, t, "--cache-dir", wdir)
                        extra = ["--cache-dir", wdir]
                elif kind == "snap":
                    sp = os.path.join(snaps, os.path.basename(model) + f".t{t}.fgsnap")
                    if not os.path.exists(sp):
                        engines("start", engine, model, t, "--snapshot", sp)
                    extra = ["--snapshot", sp]
                r = engines("start", engine, model, t, *extra, first_marker="FIRST")
                if tmp:
                    shutil.rmtree(tmp, ignore_errors=True)
                r.update({"label": label, "round": rnd})
                record("start", r)
                print(f"round {rnd} t{t} {label}: first token {r['first_s'] * 1e3:.0f} ms after process start "
                      f"(load {r['load_ms']:.0f} ms), rss {r['rss_kib'] / 1024:.0f} MiB, load {r['load_before']:.2f}",
                      flush=True)


CALLS = [
    ("LiteRT int8 (tv-270m merged)", "litert", f"{D}/out-tv-int8/model.litertlm", None),
    ("fgemma Q8_0 (tv-270m merged), plain", "fgemma", f"{D}/tv-q8_0.gguf", ["--constrained", "off", "--speculate", "off"]),
    ("fgemma Q8_0 (tv-270m merged), NLU default", "fgemma", f"{D}/tv-q8_0.gguf", ["--constrained", "call-or-text"]),
    ("LiteRT int4 blockwise-32 (tv-270m merged)", "litert", f"{D}/out-tv-int4b32/model.litertlm", None),
    ("fgemma Q4_0 (tv-270m merged), plain", "fgemma", f"{D}/tv-q4_0.gguf", ["--constrained", "off", "--speculate", "off"]),
    ("fgemma Q4_0 (tv-270m merged), NLU default", "fgemma", f"{D}/tv-q4_0.gguf", ["--constrained", "call-or-text"]),
    ("fgemma Q4_0 pure searched (tv-270m merged), plain", "fgemma", f"{D}/tv-q4_0-pure-searched.gguf",
     ["--constrained", "off", "--speculate", "off"]),
    ("fgemma Q4_0 pure searched (tv-270m merged), NLU default", "fgemma", f"{D}/tv-q4_0-pure-searched.gguf",
     ["--constrained", "call-or-text"]),
    ("fgemma Q4_K_M + tv-270m LoRA, NLU default", "fgemma", REAL, ["--lora", LORA, "--constrained", "call-or-text"]),
]


def cmd_calls(a):
    data = [json.loads(l) for l in open(DEV, encoding="utf-8") if l.strip()]
    if a.limit:
        data = data[: a.limit]
    sel = [c for c in CALLS if not a.only or any(o in c[0] for o in a.only.split(","))]
    for rnd in range(a.rounds):
        for t in a.threads:
            order = sel if rnd % 2 == 0 else list(reversed(sel))
            for label, engine, model, args in order:
                if not os.path.exists(model):
                    print(f"skip {label}: {model} missing")
                    continue
                if engine == "litert":
                    r = engines("calls", engine, model, t, "--data", DEV, "--limit", str(len(data)),
                                "--catalog", "catalog-fn")
                    ms = [c["ms"] for c in r["calls"]]
                    raws = [c["raw"] for c in r["calls"]]
                    ntok = [c["decode"] for c in r["calls"]]
                    r["rewind_ok"] = [x == y for x, y in zip(r["fresh"], raws)]
                else:
                    la0 = load1()
                    cmd = [FGEMMA, "call", "-m", model, "--tools", CATALOG, "-t", str(t), "--max-tokens", "64",
                           *args]
                    out, err, rss, wall, _ = run(cmd, stdin="".join(d["utterance"] + "\n" for d in data))
                    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
                    ms = [l["ms"]["total"] for l in lines]
                    raws = [l["raw"] for l in lines]
                    ntok = [l["tokens"]["decode"] for l in lines]
                    r = {"rss_kib": rss, "proc_wall_s": wall, "load_before": la0, "load_after": load1(),
                         "stderr": err[-500:], "threads": t, "engine": engine, "model": model,
                         "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                r.update({"label": label, "round": rnd, "ms": ms, "raw": raws, "decode_tokens": ntok,
                          "utterances": [d["utterance"] for d in data]})
                record("calls", r)
                q = statistics.quantiles(ms, n=20)
                print(f"round {rnd} t{t} {label}: p50 {statistics.median(ms):.1f} ms, p95 {q[18]:.1f} ms, "
                      f"{statistics.mean(ntok):.1f} tokens, rss {r['rss_kib'] / 1024:.0f} MiB, "
                      f"load {r['load_before']:.2f}", flush=True)


QUALITY = [
    ("F32 (fgemma)", "fgemma", f"{D}/base-f32.gguf"),
    ("fgemma Q8_0", "fgemma", f"{D}/base-q8_0.gguf"),
    ("fgemma Q8_0 F16 KV", "fgemma", f"{D}/base-q8_0.gguf", "--kv-type", "f16"),
    ("fgemma Q4_0", "fgemma", f"{D}/base-q4_0.gguf"),
    ("fgemma Q4_0 pure", "fgemma", f"{D}/base-q4_0-pure.gguf"),
    ("fgemma Q4_0 pure searched", "fgemma", f"{D}/base-q4_0-pure-searched.gguf"),
    ("fgemma Q4_0 + Q4_0 head", "fgemma", f"{D}/base-q4_0.gguf", "--head-type", "q4_0"),
    ("fgemma Q4_K_M", "fgemma", REAL),
    ("fgemma Q4_K_M + Q4_0 head", "fgemma", REAL, "--head-type", "q4_0"),
    ("fgemma Q4_K_M with Q4_0 head file", "fgemma", f"{D}/q4_k_m-q4_0-head.gguf"),
    ("LiteRT F32", "litert", f"{D}/out-f32/model.litertlm"),
    ("LiteRT int8", "litert", f"{D}/out-int8/model.litertlm"),
    ("LiteRT int4", "litert", f"{D}/out-int4/model.litertlm"),
    ("LiteRT int4 blockwise-32", "litert", f"{D}/out-int4b32/model.litertlm"),
    ("LiteRT int8 weight-only", "litert", f"{D}/out-wo8/model.litertlm"),
]


def cmd_quality(a):
    """fgemma: its own logits. LiteRT: the bundle's .tflite through ai-edge-litert's Interpreter for
    the distributions (engines.py tflite_quality says why not LiteRT-LM's scoring), and LiteRT-LM's
    own greedy decode after every prefix for top-1."""
    os.makedirs(OUT, exist_ok=True)
    for label, engine, model, *hx in QUALITY:
        if a.only and not any(o == label for o in a.only.split(",")):
            continue
        if not os.path.exists(model):
            print(f"skip {label}: {model} missing")
            continue
        runs = ["fgemma"] if engine == "fgemma" else ["tflite", "litert"]
        for eng in runs:
            extra = ["--text", GPL, "--positions", str(a.positions), *hx]
            if eng != "litert":
                extra += ["--dump", npy(label)]
            r = engines("quality", eng, model, 2, *extra)
            r["label"] = label
            record("quality", r)
            print(f"{label} ({eng}): {r['wall_ms'] / 1e3:.0f} s", flush=True)
    print(quality_table())


def npy(label):
    return os.path.join(OUT, "logp-" + label.replace(" ", "_").replace("(", "").replace(")", "") + ".npy")


def quality_table():
    import numpy as np
    rows = {}
    for r in rows_of("quality"):
        rows[(r["label"], r["engine"])] = r  # the last run of each counts
    ref = rows[("F32 (fgemma)", "fgemma")]
    ref_lp = np.load(npy("F32 (fgemma)")).astype(np.float64)
    p = np.exp(ref_lp)
    ids = ref["ids"]
    n = len(ids) - 1
    lines = [f"| weights | file MiB | mean KL(F32 ‖ it), nats | max KL | top-1 = F32 | top-1 = F32, LiteRT-LM's greedy decode |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, engine, model, *hx in QUALITY:
        if label.startswith("F32"):
            continue
        dist = rows.get((label, "fgemma" if engine == "fgemma" else "tflite"))
        if dist is None:
            continue
        if dist["ids"] != ids:
            lines.append(f"| {label} | token ids differ from F32's | | | | |")
            continue
        m = np.load(npy(label)).astype(np.float64)
        kl = (p * (ref_lp - m)).sum(axis=1)
        agree = sum(1 for x, y in zip(dist["top1"], ref["top1"]) if x == y)
        dec = "—"
        lr = rows.get((label, "litert"))
        if lr is not None:
            pairs = [(x, y) for x, y in zip(lr["top1"], ref["top1"]) if x is not None]
            ok = sum(1 for x, y in pairs if x == y)
            dec = f"{100 * ok / max(len(pairs), 1):.1f} % ({ok}/{len(pairs)})"
        size = f"{os.path.getsize(model) / 2**20:.1f}" + (" (head made at load)" if "--head-type" in hx else "")
        lines.append(f"| {label} | {size} | {kl.mean():.4f} | {kl.max():.3f} | "
                     f"{100 * agree / n:.1f} % ({agree}/{n}) | {dec} |")
    return f"{n} positions of tests/data/real/gpl-3.0.txt\n\n" + "\n".join(lines)


# ----------------------------------------------------------------------------
# report


def med(v):
    return statistics.median(v) if v else float("nan")


def spread(v, fmt="{:.0f}"):
    return f"{fmt.format(med(v))} [{fmt.format(min(v))}–{fmt.format(max(v))}]"


def rows_of(what):
    p = os.path.join(OUT, what + ".jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def cmd_report(a):
    out = [f"CPU: {cpu_name()}, {os.cpu_count()} vCPUs. LiteRT-LM {pkg_version('litert-lm-api')}, "
           f"litert-torch {pkg_version('litert-torch')}.\n"]
    micro = rows_of("micro")
    for t in sorted({r["threads"] for r in micro}):
        rs = [r for r in micro if r["threads"] == t]
        labels = [m[0] for m in MICRO + MICRO_EXTRA if any(r["label"] == m[0] for r in rs)]
        la = [x for r in rs for x in (r["load_before"], r["load_after"])]
        out.append(f"\n**{t} thread{'s' if t > 1 else ''}**, {len({r['round'] for r in rs})} interleaved rounds, "
                   f"load average {min(la):.2f}–{max(la):.2f}, {rs[0]['time'][:10]}; median [min–max] over the "
                   f"rounds' medians:\n")
        out.append("| engine, weights | prompt 1,387 (catalog): tok/s | prompt 843: tok/s | decode @ 2: tok/s | "
                   "decode @ 1,387: tok/s | peak RSS MiB |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for lb in labels:
            g = [r for r in rs if r["label"] == lb]
            cat = [1387 / r["catalog_first_ms"] * 1e3 for r in g]
            p843 = [843 / r["p843_first_ms"] * 1e3 for r in g]
            d0 = [1e3 / r["depth0_decode_ms_per_tok"] for r in g]
            dc = [1e3 / r["catalog_decode_ms_per_tok"] for r in g]
            rss = [r["rss_kib"] / 1024 for r in g]
            out.append(f"| {lb} | {spread(cat)} | {spread(p843)} | {spread(d0, '{:.1f}')} | {spread(dc, '{:.1f}')} | "
                       f"{spread(rss)} |")
        # ratios fgemma / LiteRT-LM of the medians
        pairs = [("fgemma Q8_0", "LiteRT int8"), ("fgemma Q8_0 F16 KV", "LiteRT int8"), ("fgemma Q8_0", "LiteRT int8 weight-only"),
                 ("fgemma Q4_0", "LiteRT int4"),
                 ("fgemma Q4_0 pure", "LiteRT int4"), ("fgemma Q4_0 + Q4_0 head", "LiteRT int4"),
                 ("fgemma Q4_0", "LiteRT int4 blockwise-32"), ("fgemma Q4_0 pure", "LiteRT int4 blockwise-32"),
                 ("fgemma Q4_0 pure searched", "LiteRT int4 blockwise-32"),
                 ("fgemma Q4_0 + Q4_0 head", "LiteRT int4 blockwise-32"), ("fgemma Q4_K_M", "LiteRT int4 blockwise-32"),
                 ("fgemma Q4_K_M + Q4_0 head", "LiteRT int4 blockwise-32"),
                 ("fgemma Q4_K_M with Q4_0 head file", "LiteRT int4 blockwise-32")]
        keys = [("catalog_first_ms", True), ("p843_first_ms", True), ("depth0_decode_ms_per_tok", True),
                ("catalog_decode_ms_per_tok", True)]
        out.append("\n| fgemma / LiteRT-LM (speed, > 1: fgemma faster) | prompt 1,387 | prompt 843 | decode @ 2 | "
                   "decode @ 1,387 | peak RSS (< 1: fgemma smaller) |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for f, l in pairs:
            gf = [r for r in rs if r["label"] == f]
            gl = [r for r in rs if r["label"] == l]
            if not gf or not gl:
                continue
            cells = [f"{med([r[k] for r in gl]) / med([r[k] for r in gf]):.2f}×" for k, _ in keys]
            cells.append(f"{med([r['rss_kib'] for r in gf]) / med([r['rss_kib'] for r in gl]):.2f}×")
            out.append(f"| {f} / {l} | " + " | ".join(cells) + " |")
    start = rows_of("start")
    if start:
        for t in sorted({r["threads"] for r in start}):
            rs = [r for r in start if r["threads"] == t]
            la = [x for r in rs for x in (r["load_before"], r["load_after"])]
            out.append(f"\n**Start to first token, {t} thread{'s' if t > 1 else ''}**, load {min(la):.2f}–{max(la):.2f}:\n")
            out.append("| engine, weights, cache | process start → first answer token, ms | engine load ms | peak RSS MiB |")
            out.append("|---|---:|---:|---:|")
            for lb in [s[0] for s in START]:
                g = [r for r in rs if r["label"] == lb]
                if g:
                    out.append(f"| {lb} | {spread([r['first_s'] * 1e3 for r in g])} | "
                               f"{spread([r['load_ms'] for r in g])} | {spread([r['rss_kib'] / 1024 for r in g])} |")
    calls = rows_of("calls")
    if calls:
        for t in sorted({r["threads"] for r in calls}):
            rs = [r for r in calls if r["threads"] == t]
            la = [x for r in rs for x in (r["load_before"], r["load_after"])]
            out.append(f"\n**Whole calls, {t} thread{'s' if t > 1 else ''}**, {len(rs[0]['ms'])} utterances, "
                       f"load {min(la):.2f}–{max(la):.2f}:\n")
            out.append("| engine, weights, decoding | p50 ms | p95 ms | mean ms | tokens per answer | peak RSS MiB |")
            out.append("|---|---:|---:|---:|---:|---:|")
            for lb in [c[0] for c in CALLS]:
                g = [r for r in rs if r["label"] == lb]
                if not g:
                    continue
                p50 = [med(r["ms"]) for r in g]
                p95 = [statistics.quantiles(r["ms"], n=20)[18] for r in g]
                mean = [statistics.mean(r["ms"]) for r in g]
                out.append(f"| {lb} | {spread(p50, '{:.1f}')} | {spread(p95, '{:.1f}')} | {spread(mean, '{:.1f}')} | "
                           f"{statistics.mean(g[0]['decode_tokens']):.1f} | {spread([r['rss_kib'] / 1024 for r in g])} |")
            # ratios of the p50 and p95 against LiteRT-LM of the same bits, and answers compared
            # answers against the labels: the first call's function name, or no call where text is expected
            dev = [json.loads(l) for l in open(DEV, encoding="utf-8") if l.strip()]
            out.append("\n| engine, weights, decoding | right function (or no call) | answers at the 64-token cap |")
            out.append("|---|---:|---:|")
            for lb in [c[0] for c in CALLS]:
                g = [r for r in rs if r["label"] == lb]
                if not g:
                    continue
                ok = sum(1 for raw, d in zip(g[0]["raw"], dev) if first_call(raw) == expected_call(d))
                cap = sum(1 for t in g[0]["decode_tokens"] if t >= 64)
                out.append(f"| {lb} | {ok}/{len(g[0]['raw'])} | {cap} |")
            out.append("\n| fgemma / LiteRT-LM | p50 | p95 | same answer text as LiteRT-LM |")
            out.append("|---|---:|---:|---:|")
            for lb, engine, _, _ in CALLS:
                if engine != "fgemma":
                    continue
                ref = "LiteRT int8 (tv-270m merged)" if "Q8_0" in lb else "LiteRT int4 blockwise-32 (tv-270m merged)"
                g = [r for r in rs if r["label"] == lb]
                gl = [r for r in rs if r["label"] == ref]
                if not g or not gl:
                    continue
                r50 = med([med(r["ms"]) for r in g]) / med([med(r["ms"]) for r in gl])
                r95 = (med([statistics.quantiles(r["ms"], n=20)[18] for r in g])
                       / med([statistics.quantiles(r["ms"], n=20)[18] for r in gl]))
                strip = lambda x: x.replace("<end_function_call>", "").replace("<end_of_turn>", "").strip()
                same = sum(1 for x, y in zip(g[0]["raw"], gl[0]["raw"]) if strip(x) == strip(y))
                out.append(f"| {lb} / {ref.split(' (')[0]} | {r50:.2f}× | {r95:.2f}× | {same}/{len(g[0]['raw'])} |")
            lt = [r for r in rs if r["engine"] == "litert" and "rewind_ok" in r]
            if lt:
                out.append(f"\nLiteRT-LM rewind to the catalog checkpoint gave the fresh session's answer in "
                           f"{sum(sum(r['rewind_ok']) for r in lt)}/{sum(len(r['rewind_ok']) for r in lt)} checks.")
    if rows_of("quality"):
        out.append("\n**Quality**, " + quality_table())
    print("\n".join(out))


def first_call(raw):
    m = re.search(r"call:([A-Za-z0-9_]+)\{", raw)
    return m.group(1) if m else None


def expected_call(d):
    calls = d.get("expected", {}).get("calls")
    return calls[0]["name"] if calls else None


def pkg_version(name):
    try:
        out = subprocess.run([PY, "-m", "pip", "show", name], capture_output=True, text=True).stdout
        return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Version:"))
    except Exception:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["prompts", "check", "micro", "start", "calls", "quality", "report"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--only", default="", help="calls: comma-separated label fragments to run; quality, micro: labels")
    ap.add_argument("--positions", type=int, default=128)
    ap.add_argument("--extra", action="store_true", help="micro: also LiteRT's weight-only int8")
    a = ap.parse_args()
    a.threads = [int(x) for x in a.threads.split(",")]
    globals()["cmd_" + a.what](a)


if __name__ == "__main__":
    main()
