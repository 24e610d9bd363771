#!/usr/bin/env node
// ----------------------------------------------------------------------------
// real_perplexity.mjs: perplexity over a text, llama.cpp (node-llama-cpp 3.21.1) against
// `fgemma perplexity`, on the same windows.
//
//   node real_perplexity.mjs --fgemma BIN --model M.gguf --text FILE [--ctx 512] [--stride 256]
//        [--tokens N] [--max-rel 0.001] [--threads T] [--exact-model F32.gguf [--exact-max-rel 0.001]]
//
// Windows (the definition of `fgemma perplexity --help`): the text is tokenized without <bos>
// (both tokenizers must agree on the first N ids), each window is <bos> plus up to ctx - 1 text
// ids, windows start stride ids apart, and every id is scored once, in the first window that holds
// it: -log p(id) from the next-token distribution after <bos> and the window's ids before it.
// perplexity = exp(mean -log p). fgemma runs in the background while llama.cpp works.
//
// llama.cpp's log p(id) without its full distribution (262,144 probabilities through JS cost
// ~0.25 s a position): the window is evaluated twice. (1) greedy with `confidence`: llama.cpp's
// probability of its top-1 id, p_max = 1 / sum_i exp(l_i - l_max) over the whole vocabulary;
// (2) `probabilities` with top-k K (temperature 1, no top-p/min-p: the logits are not changed,
// only cut to the K largest): p_k(id) / p_k(top-1) = exp(l_id - l_max). So
// log p(id) = log(p_k(id) / p_k(top-1)) + log p_max. An id outside the top K gets llama.cpp's full
// distribution at that position (a third evaluation of the window, only when needed).
// F32 KV cache, flash attention off. Passes when |ppl_fgemma / ppl_llama - 1| <= --max-rel.
//
// --exact-model: the same weights in F32 (`fgemma convert M.gguf --type f32`), where neither engine
// rounds the activations of the matrix products: both engines also run it, and the run passes only
// when fgemma and llama.cpp agree on it within --exact-max-rel (the same math) and fgemma's perplexity
// on M is within --exact-max-rel of the exact one (fgemma's 8-bit activation rounding costs no more).
// llama.cpp's own distance from the exact value is printed: it depends on the CPU (its kernel variant
// and activation rounding), which is why --max-rel between the two engines on M is looser.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { UsageError, die, parseArgsWithFiles, parsePositiveInt, nowMs } from "./common.mjs";
import { openLlama, openModel } from "./llama_core.mjs";

const TOP_K = 1000;
const SPEC = { fgemma: "str", model: "str", text: "str", ctx: "str", stride: "str", tokens: "str",
  "max-rel": "str", threads: "str", "exact-model": "str", "exact-max-rel": "str", help: "bool" };
const USAGE = "usage: real_perplexity.mjs --fgemma BIN --model M.gguf --text FILE [--ctx 512] [--stride 256] " +
  "[--tokens N] [--max-rel 0.001] [--threads T] [--exact-model F32.gguf [--exact-max-rel 0.001]]";

function readOptions(argv) {
  const a = parseArgsWithFiles(argv, SPEC, USAGE, ["fgemma", "model", "text"]);
  const o = {
    fgemma: path.resolve(a.fgemma), model: path.resolve(a.model), text: path.resolve(a.text),
    ctx: parsePositiveInt(a.ctx, "--ctx", 512),
    tokens: parsePositiveInt(a.tokens, "--tokens", 0),
    threads: parsePositiveInt(a.threads, "--threads", 1),
    maxRel: a["max-rel"] == null ? 1e-3 : Number(a["max-rel"]),
    exact: a["exact-model"] == null ? null : path.resolve(a["exact-model"]),
    exactMaxRel: a["exact-max-rel"] == null ? 1e-3 : Number(a["exact-max-rel"]),
  };
  if (o.exact && !fs.existsSync(o.exact)) throw new UsageError(`--exact-model: ${o.exact} does not exist`);
  if (!(o.exactMaxRel >= 0)) throw new UsageError("--exact-max-rel must be a non-negative number");
  o.stride = parsePositiveInt(a.stride, "--stride", o.ctx - 1);
  if (o.ctx < 2) throw new UsageError("--ctx must be >= 2");
  if (o.stride < 1 || o.stride > o.ctx - 1) throw new UsageError(`--stride must be within 1..${o.ctx - 1}`);
  if (!(o.maxRel >= 0)) throw new UsageError("--max-rel must be a non-negative number");
  if (o.threads < 1) throw new UsageError("--threads must be >= 1");
  return o;
}

// the windows: [{ start, end, from }] with ids[from..end) scored, ids[start..from) context
function windows(n, ctx, stride) {
  const out = [];
  let scoredTo = 0;
  for (let start = 0; scoredTo < n; start += stride) {
    const end = Math.min(start + ctx - 1, n);
    out.push({ start, end, from: scoredTo });
    scoredTo = end;
  }
  return out;
}

function runFgemmaPerplexity(o, modelPath) {
  const args = ["perplexity", "-m", modelPath, "--text", o.text, "--n-ctx", String(o.ctx), "--stride", String(o.stride),
    "-t", String(o.threads), "--json"];
  if (o.tokens) args.push("--tokens", String(o.tokens));
  const t0 = nowMs();
  return new Promise((resolve, reject) => {
    const child = spawn(o.fgemma, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { err += d; });
    child.on("error", (e) => reject(new Error(`cannot run ${o.fgemma}: ${e.message}`)));
    child.on("close", (code, sig) => {
      if (code !== 0) return reject(new Error(`fgemma perplexity exited with ${code ?? sig}: ${err.trim()}`));
      try {
        resolve({ ...JSON.parse(out), ms: nowMs() - t0 });
      } catch (e) {
        reject(new Error(`fgemma perplexity printed no JSON: ${out.slice(0, 200)}`));
      }
    });
  });
}

// -log p of ids[w.from..w.end) in llama.cpp (see the header)
async function llamaWindow(seq, ids, w, bos) {
  const win = [bos, ...ids.slice(w.start, w.end - 1)]; // index i predicts ids[w.start + i]
  const scored = (i) => w.start + i >= w.from;
  const ask = (gen) => win.map((id, i) => (scored(i) ? [id, { generateNext: gen }] : id));
  await seq.clearHistory();
  const r1 = await seq.controlledEvaluate(ask({ token: true, confidence: true, options: { temperature: 0 } }));
  await seq.clearHistory();
  const r2 = await seq.controlledEvaluate(ask({ probabilities: true,
    options: { temperature: 1, topK: TOP_K, topP: 1, minP: 0 } }));
  const nll = [];
  const missing = [];
  for (let i = 0; i < win.length; i++) {
    if (!scored(i)) continue;
    const target = ids[w.start + i];
    const conf = r1[i]?.next?.confidence;
    const probs = r2[i]?.next?.probabilities;
    if (!(conf > 0) || probs == null) throw new Error(`llama.cpp returned no confidence/probabilities at ${w.start + i}`);
    let pTop = 0;
    for (const v of probs.values()) if (v > pTop) pTop = v;
    const p = probs.get(target);
    if (p == null || !(p > 0)) {
      missing.push(i);
      nll.push(null);
      continue;
    }
    nll.push(-(Math.log(p / pTop) + Math.log(conf)));
  }
  if (missing.length > 0) {
    const set = new Set(missing);
    await seq.clearHistory();
    const r3 = await seq.controlledEvaluate(win.map((id, i) => (set.has(i)
      ? [id, { generateNext: { probabilities: true, options: { temperature: 0 } } }] : id)));
    const first = win.findIndex((_, i) => scored(i));
    for (const i of missing) {
      const p = r3[i]?.next?.probabilities?.get(ids[w.start + i]);
      if (!(p > 0)) throw new Error(`llama.cpp gives id ${ids[w.start + i]} probability ${p} at ${w.start + i}`);
      nll[i - first] = -Math.log(p);
    }
  }
  return { nll, missing: missing.length };
}

// llama.cpp's perplexity of ids over the windows ws, on modelPath
async function llamaPerplexity(handle, modelPath, ids, ws, bos, o) {
  const model = await openModel(handle.llama, modelPath);
  const ctx = await model.createContext({
    contextSize: o.ctx, batchSize: o.ctx, sequences: 1, flashAttention: false, threads: o.threads,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32", swaFullCache: false,
    ignoreMemorySafetyChecks: true, failedCreationRemedy: false,
  });
  const seq = ctx.getSequence();
  const tl = nowMs();
  let sum = 0, count = 0, missing = 0;
  for (const w of ws) {
    const r = await llamaWindow(seq, ids, w, bos);
    for (const v of r.nll) sum += v;
    count += r.nll.length;
    missing += r.missing;
  }
  const ms = nowMs() - tl;
  await ctx.dispose();
  await model.dispose();
  return { ppl: Math.exp(sum / count), mean: sum / count, count, missing, ms };
}

async function run(o) {
  const t0 = nowMs();
  const handle = await openLlama({ threads: o.threads });
  const model = await openModel(handle.llama, o.model);
  const text = fs.readFileSync(o.text, "utf8");
  const llAll = Array.from(model.tokenize(text, true));
  const nText = llAll.length;
  const ids = o.tokens && o.tokens < nText ? llAll.slice(0, o.tokens) : llAll;
  // the same ids from fgemma's tokenizer
  const tk = spawnSync(o.fgemma, ["tokenize", "-m", o.model, "-"], { input: text, encoding: "utf8", maxBuffer: 64 << 20 });
  if (tk.error || tk.status !== 0) throw new Error(`fgemma tokenize failed: ${(tk.stderr ?? tk.error?.message ?? "").trim()}`);
  const mine = tk.stdout.trim().split(/\s+/).map(Number);
  let k = 0;
  while (k < mine.length && k < nText && mine[k] === llAll[k]) k++;
  const tokSame = mine.length === llAll.length && mine.every((v, i) => v === llAll[i]);
  process.stdout.write(`${path.basename(o.text)}: ${nText} ids (llama.cpp), ${mine.length} (fgemma): ` +
    `${tokSame ? "identical" : `first difference at ${k}`}; scoring ${ids.length}, windows of ${o.ctx}, stride ${o.stride}\n`);
  if (!tokSame && k < ids.length) {
    await model.dispose();
    await handle.llama.dispose();
    process.stdout.write("FAIL: the tokenizations differ within the scored ids\n");
    return false;
  }
  const bosIds = Array.from(model.tokenize("<bos>", true));
  if (bosIds.length !== 1) throw new Error("cannot find <bos>");
  const bos = bosIds[0];

  await model.dispose();
  const fgQ = runFgemmaPerplexity(o, o.model);
  fgQ.catch(() => {});
  const fgF = o.exact ? runFgemmaPerplexity(o, o.exact) : null;
  if (fgF) fgF.catch(() => {});
  const ws = windows(ids.length, o.ctx, o.stride);
  let pass = true;
  const one = async (label, modelPath, fgPromise, maxRel) => {
    const ll = await llamaPerplexity(handle, modelPath, ids, ws, bos, o);
    process.stdout.write(`${label}: llama.cpp perplexity ${ll.ppl.toFixed(6)} over ${ll.count} ids in ${ws.length} windows ` +
      `(${ll.missing} outside the top ${TOP_K}, taken from the full distribution); ${(ll.ms / 1000).toFixed(1)} s\n`);
    const fg = await fgPromise;
    process.stdout.write(`${label}: fgemma    perplexity ${Number(fg.perplexity).toFixed(6)} over ${fg.tokens} ids in ${fg.windows} ` +
      `windows (${fg.positions} positions run); ${(fg.ms / 1000).toFixed(1)} s (in parallel with llama.cpp)\n`);
    if (fg.tokens !== ll.count || fg.windows !== ws.length) {
      process.stdout.write(`FAIL: fgemma scored ${fg.tokens} ids in ${fg.windows} windows, llama.cpp ${ll.count} in ${ws.length}\n`);
      pass = false;
    }
    const rel = fg.perplexity / ll.ppl - 1;
    const ok = Math.abs(rel) <= maxRel;
    pass &&= ok;
    process.stdout.write(`${label}: ppl_fgemma / ppl_llama - 1 = ${rel.toExponential(3)} (mean -log p: fgemma ` +
      `${(fg.nll / fg.tokens).toFixed(6)}, llama.cpp ${ll.mean.toFixed(6)}); allowed ${maxRel}${ok ? "  ok" : "  FAIL"}\n`);
    return { ll, fg };
  };
  const q = await one(path.basename(o.model), o.model, fgQ, o.maxRel);
  if (o.exact) {
    const f = await one(path.basename(o.exact), o.exact, fgF, o.exactMaxRel);
    const relFg = q.fg.perplexity / f.fg.perplexity - 1;
    const relLl = q.ll.ppl / f.fg.perplexity - 1;
    const ok = Math.abs(relFg) <= o.exactMaxRel;
    pass &&= ok;
    process.stdout.write(`exact (F32 weights, fgemma ${f.fg.perplexity.toFixed(6)}): fgemma on ${path.basename(o.model)} ` +
      `${relFg.toExponential(3)}, allowed ${o.exactMaxRel}${ok ? "  ok" : "  FAIL"}; llama.cpp on it ${relLl.toExponential(3)} ` +
      "(not checked: its activation rounding depends on the CPU)\n");
  }
  await handle.llama.dispose();
  process.stdout.write(`total ${((nowMs() - t0) / 1000).toFixed(1)} s\n`);
  return pass;
}

let opt;
try {
  opt = readOptions(process.argv.slice(2));
} catch (e) {
  if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
  throw e;
}
try {
  const pass = await run(opt);
  process.stdout.write(pass ? "PASS\n" : "FAIL\n");
  process.exitCode = pass ? 0 : 1;
} catch (e) {
  die(e instanceof UsageError ? e.message : `${e.stack ?? e}`, e instanceof UsageError ? 2 : 1);
}
