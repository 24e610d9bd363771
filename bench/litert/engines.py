#!/usr/bin/env python3
"""One measurement in one process, for fgemma or LiteRT-LM; prints one JSON line. Run by bench.py.

    engines.py micro   --engine E --model M --threads T [--reps R] [--cache-dir D]
    engines.py start   --engine E --model M --threads T [--cache-dir D | --snapshot F]
    engines.py calls   --engine E --model M --threads T --data DATA.jsonl [--limit N]
    engines.py quality --engine E --model M --threads T --text FILE [--positions N]

E is `litert` (the litert_lm Python API over liblitert-lm.so, from .cache/litert-venv) or
`fgemma` (the fgemma Python extension, built in build-litert/). Both get the same texts; the token
ids they make of them are checked against each other by `bench.py check`. Prompts: the catalog
prefix of `fgemma prompt --tools tests/data/nlu/tv-catalog.json` (1,387 tokens with <bos>), written
by bench.py to OUT/prompts/.

Timing is wall time around each API call (time.perf_counter); the LiteRT session API takes text,
so its tokenizer's time is inside its numbers, fgemma's ids are made before the clock starts (a
1,387-token catalog tokenizes in about 1 ms). LiteRT-LM's prefill ends without logits (its first
decode step runs the prompt's last token), fgemma's prefill returns the next token: "first token"
below is prefill + one decode step on LiteRT, prefill alone on fgemma.
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

CALL_TAIL = "<end_of_turn>\n<start_of_turn>model\n"


def vm_hwm_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ----------------------------------------------------------------------------
# LiteRT-LM


class Litert:
    def __init__(self, model, threads, cache_dir=None, max_tokens=2048):
        import litert_lm as L
        from litert_lm._ffi import _get_lib
        L.set_min_log_severity(L.LogSeverity.ERROR)
        self.L = L
        self.lib = _get_lib()
        # Not declared by the 0.18.1 wrapper; in liblitert-lm.so: (session, label) -> 0 on success.
        for fn in ("litert_lm_session_save_checkpoint", "litert_lm_session_rewind_to_checkpoint"):
            f = getattr(self.lib, fn)
            f.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            f.restype = ctypes.c_int
        kw = {}
        if cache_dir:
            kw["cache_dir"] = cache_dir
        t = time.perf_counter()
        self.engine = L.Engine(model, backend=L.Backend.CPU(thread_count=threads),
                               max_num_tokens=max_tokens, enable_benchmark=True, **kw)
        self.load_ms = (time.perf_counter() - t) * 1e3
        self.greedy = L.SamplerConfig(top_k=1, temperature=0.0)

    def session(self, max_out):
        return self.engine.create_session(apply_prompt_template=False, sampler_config=self.greedy,
                                          max_output_tokens=max_out)

    def tokenize(self, text, bos=True):
        ids = self.engine.tokenize(text)
        return ([self.engine.bos_token_id] if bos else []) + ids

    def checkpoint(self, s, label):
        if self.lib.litert_lm_session_save_checkpoint(s._ptr, label.encode()) != 0:
            raise RuntimeError("litert_lm_session_save_checkpoint failed")

    def rewind(self, s, label):
        if self.lib.litert_lm_session_rewind_to_checkpoint(s._ptr, label.encode()) != 0:
            raise RuntimeError("litert_lm_session_rewind_to_checkpoint failed")


def litert_micro(a, prompts):
    e = Litert(a.model, a.threads, a.cache_dir)
    out = {"load_ms": e.load_ms}
    k = a.decode_tokens
    rows = {}
    for r in range(a.reps):
        for name, text in (("catalog", prompts["catalog"]), ("p843", prompts["p843"]),
                           ("depth0", prompts["depth0"])):
            # first token after the prompt
            s = e.session(1)
            t0 = time.perf_counter()
            s.run_prefill([text])
            t1 = time.perf_counter()
            s.run_decode()
            t2 = time.perf_counter()
            bi = s.get_benchmark_info()
            n = bi.last_prefill_token_count
            s.close()
            rows.setdefault(name + "_prefill_ms", []).append((t1 - t0) * 1e3)
            rows.setdefault(name + "_first_ms", []).append((t2 - t0) * 1e3)
            rows.setdefault(name + "_tokens", []).append(n)
            rows.setdefault(name + "_litert_prefill_tps", []).append(bi.last_prefill_tokens_per_second)
            if name == "p843":
                continue
            # decode k + 1 tokens after the prompt. The first decode call of a session costs about
            # 100 ms more than a step (measured: 1, 2, 4, 8 tokens after 843 took 122, 131, 187,
            # 292 ms), and a session decodes only once after a prefill, so a step is
            # (time for k + 1 tokens - time for 1 token) / k, both after the same prompt.
            s = e.session(k + 1)
            s.run_prefill([text])
            t0 = time.perf_counter()
            s.run_decode()
            t1 = time.perf_counter()
            bi = s.get_benchmark_info()
            s.close()
            nd = bi.last_decode_token_count
            first_step = rows[name + "_first_ms"][-1] - rows[name + "_prefill_ms"][-1]
            rows.setdefault(name + "_decode_ms_per_tok", []).append(((t1 - t0) * 1e3 - first_step) / max(nd - 1, 1))
            rows.setdefault(name + "_decode_ms_per_tok_incl_first", []).append((t1 - t0) * 1e3 / max(nd, 1))
            rows.setdefault(name + "_decode_n", []).append(nd)
            rows.setdefault(name + "_litert_decode_tps", []).append(bi.last_decode_tokens_per_second)
    out.update({k2: statistics.median(v) for k2, v in rows.items()})
    out["samples"] = rows
    return out


def litert_start(a, prompts):
    e = Litert(a.model, a.threads, a.cache_dir)
    s = e.session(1)
    s.run_prefill([prompts["catalog"] + prompts["utterance"] + CALL_TAIL])
    r = s.run_decode()
    print("FIRST", flush=True)
    return {"load_ms": e.load_ms, "text": r.texts[0] if r.texts else ""}


def litert_calls(a, prompts, data):
    e = Litert(a.model, a.threads, a.cache_dir)
    s = e.session(a.max_tokens)
    t = time.perf_counter()
    s.run_prefill([prompts[a.catalog]])
    prefix_ms = (time.perf_counter() - t) * 1e3
    e.checkpoint(s, "catalog")
    res = []
    for d in data:
        e.rewind(s, "catalog")
        t0 = time.perf_counter()
        s.run_prefill([d["utterance"] + CALL_TAIL])
        t1 = time.perf_counter()
        r = s.run_decode()
        t2 = time.perf_counter()
        bi = s.get_benchmark_info()
        res.append({"ms": (t2 - t0) * 1e3, "prefill_ms": (t1 - t0) * 1e3,
                    "chunk": bi.last_prefill_token_count, "decode": bi.last_decode_token_count,
                    "raw": r.texts[0] if r.texts else ""})
    # rewind checked against a fresh session on the first utterances
    fresh = []
    for d in data[:a.check]:
        s2 = e.session(a.max_tokens)
        s2.run_prefill([prompts[a.catalog] + d["utterance"] + CALL_TAIL])
        r = s2.run_decode()
        fresh.append(r.texts[0] if r.texts else "")
        s2.close()
    return {"load_ms": e.load_ms, "prefix_ms": prefix_ms, "calls": res, "fresh": fresh}


def litert_quality(a, text):
    e = Litert(a.model, a.threads)
    ids = e.tokenize(text)[: a.positions + 1]
    # log p(token i+1 | tokens 0..i) for every i, by LiteRT-LM's scoring of the text after <bos>
    s = e.session(1)
    s.run_prefill([""])
    target = e.engine.detokenize(ids[1:])
    r = s.run_text_scoring([target], store_token_lengths=True)
    s.close()
    scores = r.token_scores[0] if r.token_scores else []
    # The greedy next token after each prefix (top-1): a 2-token greedy decode, whose text is
    # tokenized again and its first id kept. (One token is not enough: LiteRT-LM holds back text
    # that may begin a stop string, such as "." before ".<end_of_turn>", until the next token.)
    top1, skipped = [], 0
    for i in range(1, len(ids)):
        prefix = e.engine.detokenize(ids[1:i]) if i > 1 else ""
        if i > 1 and e.tokenize(prefix) != ids[:i]:
            top1.append(None)
            skipped += 1
            continue
        s = e.session(2)
        s.run_prefill([prefix])
        r = s.run_decode()
        s.close()
        t = r.texts[0] if r.texts else ""
        got = e.tokenize(t, bos=False) if t else []
        top1.append(got[0] if got else None)
        skipped += 0 if got else 1
    return {"ids": ids, "logp": scores, "top1": top1, "top1_skipped": skipped}


def tflite_quality(a, text):
    """Full next-token distributions from the bundle's .tflite, run by ai-edge-litert's Interpreter.

    LiteRT-LM's scoring gives only the target tokens' scores, and those are not log p(token |
    prefix): on the F32 bundle "The capital of France is" + " Paris" scores -10.7 where F32 (fgemma
    and transformers alike) gives -2.48, while the greedy tokens agree. So the KL comes from the
    model inside the bundle: its `decode` signature fed one token at a time (tokens, input_pos, a
    [1,1,1,cache] additive mask, the KV caches passed back in), on XNNPACK like LiteRT-LM.
    """
    import glob
    import subprocess
    import tempfile
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    tmp = tempfile.mkdtemp(prefix="litert-dump-")
    peek = os.path.join(os.path.dirname(sys.executable), "litert-lm-peek")
    subprocess.run([peek, "--litertlm_file", a.model, "--dump_files_dir", tmp], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    f = [p for p in glob.glob(os.path.join(tmp, "*.tflite")) if "prefill_decode" in p][0]
    it = Interpreter(model_path=f, num_threads=a.threads)
    run = it.get_signature_runner("decode")
    det = run.get_input_details()
    kv = {k: np.zeros(v["shape"], dtype=v["dtype"]) for k, v in det.items() if k.startswith("kv_cache")}
    cache = int(det["mask"]["shape"][-1])
    e = Litert(a.model, a.threads)
    ids = e.tokenize(text)[: a.positions + 1]
    e = None
    logp, top1, lps = [], [], []
    for i in range(len(ids) - 1):
        mask = np.full((1, 1, 1, cache), -1e30, dtype=np.float32)
        mask[..., : i + 1] = 0.0
        out = run(tokens=np.array([[ids[i]]], dtype=np.int32), input_pos=np.array([i], dtype=np.int32),
                  mask=mask, **kv)
        kv = {k: out[k] for k in kv}
        x = out["logits"].reshape(-1).astype(np.float64)
        x = x - x.max()
        lp = x - np.log(np.exp(x).sum())
        logp.append(float(lp[ids[i + 1]]))
        top1.append(int(np.argmax(lp)))
        lps.append(lp.astype(np.float32))
    for p in glob.glob(os.path.join(tmp, "*")):
        os.remove(p)
    os.rmdir(tmp)
    if a.dump:
        np.save(a.dump, np.stack(lps))
    return {"ids": ids, "logp": logp, "top1": top1}


# ----------------------------------------------------------------------------
# fgemma (the Python extension over fgemma.h)


class Fgemma:
    def __init__(self, model, threads, lora=None, head_type=None, kv_type=None):
        import fgemma
        self.fg = fgemma
        self.kv_type = kv_type
        t = time.perf_counter()
        kw = {"threads": threads}
        if head_type:
            kw["head_type"] = head_type
        if lora:
            kw["lora"] = lora
        self.model = fgemma.Model(model, **kw)
        self.load_ms = (time.perf_counter() - t) * 1e3

    def tokenize(self, text, bos=True):
        return self.model.tokenize(text, bos=bos)

    def session(self):
        return self.model.session(self.kv_type)


def fgemma_micro(a, prompts):
    e = Fgemma(a.model, a.threads, head_type=a.head_type, kv_type=a.kv_type)
    out = {"load_ms": e.load_ms}
    k = a.decode_tokens
    rows = {}
    for r in range(a.reps):
        for name in ("catalog", "p843", "depth0"):
            ids = e.tokenize(prompts[name])
            s = e.session()
            t0 = time.perf_counter()
            nid = s.prefill(ids)
            t1 = time.perf_counter()
            rows.setdefault(name + "_first_ms", []).append((t1 - t0) * 1e3)
            rows.setdefault(name + "_prefill_ms", []).append((t1 - t0) * 1e3)
            rows.setdefault(name + "_tokens", []).append(len(ids))
            if name != "p843":
                t0 = time.perf_counter()
                nid_ = nid
                for _ in range(k):
                    nid_ = s.step(nid_)
                t1 = time.perf_counter()
                rows.setdefault(name + "_decode_ms_per_tok", []).append((t1 - t0) * 1e3 / k)
                rows.setdefault(name + "_decode_n", []).append(k)
            s.close()
    out.update({k2: statistics.median(v) for k2, v in rows.items()})
    out["samples"] = rows
    return out


def fgemma_start(a, prompts):
    e = Fgemma(a.model, a.threads, head_type=a.head_type, kv_type=a.kv_type)
    if a.snapshot and os.path.exists(a.snapshot):
        s = e.fg.Snapshot.load(e.model, a.snapshot).fork()
    else:
        s = e.session()
        s.prefill(e.tokenize(prompts["catalog"]))
        if a.snapshot:
            s.snapshot().save(a.snapshot)
    nid = s.prefill(e.tokenize(prompts["utterance"] + CALL_TAIL, bos=False))
    print("FIRST", flush=True)
    return {"load_ms": e.load_ms, "text": e.model.detokenize([nid])}


def fgemma_quality(a, text):
    import numpy as np
    e = Fgemma(a.model, a.threads, head_type=a.head_type, kv_type=a.kv_type)
    ids = e.tokenize(text)[: a.positions + 1]
    s = e.session()
    logp, top1, lps = [], [], []
    nid = s.prefill(ids[:1])
    for i in range(1, len(ids)):
        x = np.frombuffer(s.logits(), dtype=np.float32).astype(np.float64)
        x = x - x.max()
        lp = x - np.log(np.exp(x).sum())
        logp.append(float(lp[ids[i]]))
        top1.append(int(np.argmax(lp)))
        lps.append(lp.astype(np.float32))
        if i < len(ids) - 1:
            s.prefill([ids[i]])
    if a.dump:
        np.save(a.dump, np.stack(lps))
    return {"ids": ids, "logp": logp, "top1": top1,
            "top1_text": [e.model.detokenize([t]) for t in top1]}


# ----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["micro", "start", "calls", "quality"])
    ap.add_argument("--engine", choices=["litert", "fgemma", "tflite"], required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--cache-dir", default=None, help="LiteRT-LM cache_dir (XNNPACK weight cache)")
    ap.add_argument("--snapshot", default=None, help="fgemma: catalog snapshot file (loaded, or written)")
    ap.add_argument("--prompts", required=True, help="directory of catalog.txt, p843.txt, depth0.txt, utterance.txt")
    ap.add_argument("--catalog", default="catalog",
                    help="calls: catalog (the base's names of ids 46..52) or catalog-fn (FunctionGemma's)")
    ap.add_argument("--data", default=None)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--check", type=int, default=3, help="calls: utterances answered again from a fresh session")
    ap.add_argument("--text", default=None)
    ap.add_argument("--positions", type=int, default=128)
    ap.add_argument("--head-type", default=None, help="fgemma: a replacement LM head made at load (q8_0, q4_0)")
    ap.add_argument("--kv-type", default=None, choices=["f32", "f16"], help="fgemma: the KV cache's type (default f32)")
    ap.add_argument("--dump", default=None, help="quality, fgemma: save the log-probabilities (.npy)")
    a = ap.parse_args()

    prompts = {n: read(os.path.join(a.prompts, n + ".txt"))
               for n in ("catalog", "catalog-fn", "p843", "depth0", "utterance") if os.path.exists(os.path.join(a.prompts, n + ".txt"))}
    t0 = time.perf_counter()
    if a.what == "micro":
        out = (litert_micro if a.engine == "litert" else fgemma_micro)(a, prompts)
    elif a.what == "start":
        out = (litert_start if a.engine == "litert" else fgemma_start)(a, prompts)
    elif a.what == "calls":
        data = [json.loads(l) for l in open(a.data, encoding="utf-8") if l.strip()]
        if a.limit:
            data = data[: a.limit]
        if a.engine != "litert":
            raise SystemExit("calls: fgemma runs through `fgemma call` (bench.py)")
        out = litert_calls(a, prompts, data)
    else:
        text = read(a.text)
        out = {"litert": litert_quality, "fgemma": fgemma_quality, "tflite": tflite_quality}[a.engine](a, text)
    out.update({"what": a.what, "engine": a.engine, "model": a.model, "threads": a.threads,
                "wall_ms": (time.perf_counter() - t0) * 1e3, "vm_hwm_kib": vm_hwm_kib()})
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
