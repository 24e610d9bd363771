#!/usr/bin/env node
// ----------------------------------------------------------------------------
// parity.mjs: compare the fgemma CLI with llama.cpp (node-llama-cpp 3.21.1) on the same GGUF.
//
//   node parity.mjs --mode logits[,greedy] --fgemma BIN --model M.gguf
//                   (--ids "2 5 9 ..." | --seed S --n N) [--at "p1 p2 ..."] [--steps N]
//                   [--tol X] [--tol-top X] [--top K] [--min-agree K] [--tie-tol X]
//                   [--self-check F] [--reference] [--threads T] [--kv f32|f16] [--lora F[:S],...]
//   node parity.mjs --mode first --fgemma BIN --model M.gguf (--ids "..." | --seed S --n N)
//                   [--tol X] [--tol-top X] [--top K] [--reference] [--threads T] [--kv f32|f16]
//   node parity.mjs --mode tokenize --fgemma BIN --model M.gguf --corpus FILE
//
// logits:   `fgemma logits` and llama.cpp at the --at positions. Both rows are centred
//           (x - max x); reported: max |diff| over the whole vocabulary, over the oracle's top-K
//           (default 50), top-1 equality. Fails when a max |diff| is above --tol / --tol-top, or
//           when the top-1 ids differ and the oracle's own gap between the two is larger than
//           --tol (a genuine near-tie is reported, not failed). Oracle entries below FLOOR (-80,
//           where float32 probabilities lose precision or underflow) are not compared by value;
//           fgemma must then be below FLOOR + 10 as well.
// greedy:   the prompt then --steps (default 32) greedy ids from `fgemma generate` and from
//           llama.cpp; reports the length of the common prefix; fails unless it reaches
//           --min-agree (default: all steps) or, with --tie-tol X, unless the first difference is a
//           near-tie: llama.cpp's own log-prob of fgemma's id at that step is within X of its
//           choice (llama.cpp is re-run on the common prefix to find out).
// --self-check F: measure how sensitive the model is: llama.cpp is run a second time with the other
//           KV cache type (f16 instead of f32), and each tolerance (logits: per position, over the
//           whole vocabulary and over the top-K; greedy: the near-tie tolerance at the first
//           difference) becomes max(tolerance, F × llama.cpp's difference from itself). A model
//           whose logits move by whole units when the cache is rounded to f16 cannot be compared
//           tightly with anything; this keeps the tolerances tight wherever the model is stable.
// first:    every prompt id on its own, as a one-token prompt: the logits after position 0 compared
//           like `logits`. With one key, attention returns V whatever the scores are, so this
//           checks the per-token path (embedding, matmuls, norms, GELU, head, weight formats)
//           without the amplification that sharp attention gives small rounding differences.
// --lora F[:S],...: LoRA adapters (llama.cpp's GGUF format, e.g. from `fgemma gen-lora`) with their scales
//           (default 1), applied in order on both sides: fgemma --lora F:S, llama.cpp's context option
//           lora.adapters (docs/LORA.md).
// tokenize: every corpus text (format: corpus.mjs) through `fgemma tokenize` (no BOS) and
//           llama.cpp's tokenizer (parse_special, no BOS); ids must be identical.
// The prompt from --seed S --n N is <bos>=2 followed by N-1 ids drawn with splitmix64(S)
// uniformly from [4, n_vocab) (never the special ids 0-3).
// Exit status: 0 pass, 1 mismatch or failure, 2 usage error.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  UsageError, die, fgemmaLoraArgs, parseArgs, parseIdList, parseLoraList, parsePositiveInt, promptIds, readF32, nowMs,
} from "./common.mjs";
import { openLlama, openModel, evaluateIds, modelVocabSize, tokenizeTexts } from "./llama_core.mjs";
import { readCorpus } from "./corpus.mjs";

const FLOOR = -80;
const SPEC = { mode: "str", fgemma: "str", model: "str", ids: "str", seed: "str", n: "str", at: "str",
  steps: "str", tol: "str", "tol-top": "str", top: "str", "min-agree": "str", "tie-tol": "str",
  "self-check": "str", reference: "bool", lora: "str",
  threads: "str", kv: "str", corpus: "str", help: "bool" };
const USAGE = `usage:
  parity.mjs --mode logits[,greedy] --fgemma BIN --model M.gguf (--ids "..." | --seed S --n N)
             [--at "p1 p2 ..."] [--steps N] [--tol X] [--tol-top X] [--top K] [--min-agree K]
             [--tie-tol X] [--self-check F] [--reference] [--threads T] [--kv f32|f16] [--lora F[:S],...]
  parity.mjs --mode first --fgemma BIN --model M.gguf (--ids "..." | --seed S --n N) [--tol X] ...
  parity.mjs --mode tokenize --fgemma BIN --model M.gguf --corpus FILE`;

// ----------------------------------------------------------------------------
// Arguments

function parseNumber(text, what, def) {
  if (text == null) return def;
  const v = Number(text);
  if (!Number.isFinite(v) || v < 0) throw new UsageError(`${what}: '${text}' is not a non-negative number`);
  return v;
}

function readOptions(argv) {
  const a = parseArgs(argv, SPEC);
  if (a.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  const modes = new Set((a.mode ?? "").split(",").filter((s) => s.length > 0));
  for (const m of modes) {
    if (!["logits", "greedy", "first", "tokenize"].includes(m)) throw new UsageError(`unknown mode '${m}'`);
  }
  if (modes.size === 0) throw new UsageError("--mode is required");
  for (const m of ["tokenize", "first"]) {
    if (modes.has(m) && modes.size > 1) throw new UsageError(`${m} cannot be combined with other modes`);
  }
  if (!a.fgemma) throw new UsageError("--fgemma BIN is required");
  if (!fs.existsSync(a.fgemma)) throw new UsageError(`fgemma binary '${a.fgemma}' does not exist`);
  if (!a.model) throw new UsageError("--model is required");
  if (!fs.existsSync(a.model)) throw new UsageError(`model '${a.model}' does not exist`);
  const o = {
    modes, fgemma: path.resolve(a.fgemma), model: path.resolve(a.model), reference: !!a.reference,
    threads: parsePositiveInt(a.threads, "--threads", 1),
    kv: (a.kv ?? "f32").toLowerCase(),
  };
  if (o.kv !== "f32" && o.kv !== "f16") throw new UsageError("--kv must be f32 or f16");
  o.lora = parseLoraList(a.lora);
  o.loraArgs = fgemmaLoraArgs(o.lora);
  if (modes.has("tokenize")) {
    if (!a.corpus) throw new UsageError("--mode tokenize needs --corpus FILE");
    o.corpus = a.corpus;
    return o;
  }
  if (a.ids != null && a.seed != null) throw new UsageError("give --ids or --seed/--n, not both");
  if (a.ids != null) o.ids = parseIdList(a.ids, "--ids");
  else if (a.seed != null) {
    o.seed = parsePositiveInt(a.seed, "--seed");
    o.n = parsePositiveInt(a.n, "--n");
    if (!(o.n >= 1)) throw new UsageError("--seed needs --n >= 1");
  } else throw new UsageError("give the prompt with --ids or --seed S --n N");
  o.at = parseIdList(a.at, "--at");
  if (modes.has("logits") && o.at.length === 0) throw new UsageError("--mode logits needs --at");
  if (modes.has("first") && o.at.length > 0) throw new UsageError("--mode first takes no --at");
  if (new Set(o.at).size !== o.at.length) throw new UsageError("--at positions must be distinct");
  o.steps = modes.has("greedy") ? parsePositiveInt(a.steps, "--steps", 32) : 0;
  if (modes.has("greedy") && o.steps < 1) throw new UsageError("--steps must be >= 1");
  o.minAgree = parsePositiveInt(a["min-agree"], "--min-agree", o.steps);
  o.tieTol = a["tie-tol"] == null ? null : parseNumber(a["tie-tol"], "--tie-tol");
  o.selfCheck = a["self-check"] == null ? null : parseNumber(a["self-check"], "--self-check");
  o.tol = parseNumber(a.tol, "--tol", 1e-3);
  o.tolTop = parseNumber(a["tol-top"], "--tol-top", o.tol);
  o.top = parsePositiveInt(a.top, "--top", 50);
  return o;
}

// ----------------------------------------------------------------------------
// Running the fgemma CLI

function runFgemma(bin, args, what, input) {
  const t0 = nowMs();
  const r = spawnSync(bin, args, { encoding: "utf8", maxBuffer: 256 << 20, input });
  const ms = nowMs() - t0;
  if (r.error) throw new Error(`${what}: cannot run ${bin}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${what}: '${path.basename(bin)} ${args.map((s) => JSON.stringify(s)).join(" ")}' ` +
      `exited with ${r.status ?? r.signal}\n${(r.stderr ?? "").trim()}`);
  }
  return { stdout: r.stdout, ms };
}

// The last non-empty line of stdout as a list of integers.
function idsFromStdout(stdout, what) {
  const lines = stdout.split("\n").map((s) => s.trim()).filter((s) => s.length > 0);
  if (lines.length === 0) return [];
  const last = lines[lines.length - 1].replace(/^\[|\]$/g, "");
  if (last.length === 0) return [];
  return parseIdList(last, `${what} output`);
}

function tmpFile(tag) {
  return path.join(os.tmpdir(), `fg-parity-${process.pid}-${Date.now()}-${tag}`);
}

// ----------------------------------------------------------------------------
// Comparisons

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

function centre(row) {
  let m = -Infinity;
  for (const v of row) if (v > m) m = v;
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] - m;
  return out;
}

function topK(row, k) {
  const idx = Array.from(row.keys());
  idx.sort((x, y) => (row[y] - row[x]) || (x - y));
  return idx.slice(0, Math.min(k, idx.length));
}

// Largest |a - b| over the entries where a is above FLOOR, over all and over a's top-K.
function selfDiff(a, b, k) {
  let all = 0;
  for (let i = 0; i < a.length; i++) if (a[i] >= FLOOR) all = Math.max(all, Math.abs(a[i] - b[i]));
  let top = 0;
  for (const i of topK(a, k)) top = Math.max(top, Math.abs(a[i] - b[i]));
  return { all, top };
}

// oracle: centred log-probs (Float32Array); mine: raw logits (Float32Array);
// o: { tol, tolTop, top }
function compareRow(oracle, mine, o) {
  for (let i = 0; i < mine.length; i++) {
    if (!Number.isFinite(mine[i])) return { ok: false, why: `fgemma logit ${i} is ${mine[i]}` };
  }
  const m = centre(mine);
  let maxAll = 0, argAll = -1, floorViolations = 0, compared = 0;
  for (let i = 0; i < oracle.length; i++) {
    if (oracle[i] < FLOOR) {
      if (m[i] > FLOOR + 10) floorViolations++;
      continue;
    }
    compared++;
    const d = Math.abs(m[i] - oracle[i]);
    if (d > maxAll || Number.isNaN(d)) { maxAll = d; argAll = i; }
  }
  const top = topK(oracle, o.top);
  let maxTop = 0;
  for (const i of top) maxTop = Math.max(maxTop, Math.abs(m[i] - oracle[i]));
  const oTop1 = argmax(oracle), mTop1 = argmax(m);
  const gap = oracle[oTop1] - oracle[mTop1];
  const top1Ok = oTop1 === mTop1 || gap <= o.tol;
  const ok = maxAll <= o.tol && maxTop <= o.tolTop && floorViolations === 0 && top1Ok;
  return { ok, maxAll, argAll, maxTop, oTop1, mTop1, gap, floorViolations, compared };
}

function fmt(x) {
  return x === undefined ? "-" : Number(x).toExponential(3);
}

// ----------------------------------------------------------------------------
// Modes

async function runModel(o) {
  const handle = await openLlama({ threads: o.threads });
  const model = await openModel(handle.llama, o.model);
  const nVocab = modelVocabSize(model);
  if (nVocab == null) throw new Error("cannot read n_vocab (token_embd.weight) from the model");
  const ids = o.ids ?? [2, ...promptIds(o.seed, o.n - 1, nVocab)];
  for (const p of o.at) {
    if (p >= ids.length) throw new UsageError(`--at position ${p} is outside the ${ids.length} prompt ids`);
  }
  for (const id of ids) {
    if (id >= nVocab) throw new UsageError(`prompt id ${id} is outside the vocabulary of ${nVocab}`);
  }
  const idText = ids.join(" ");
  const ref = o.reference ? ["--reference"] : [];
  process.stdout.write(`model ${path.basename(o.model)}: n_vocab ${nVocab}, prompt ${ids.length} ids` +
    (o.seed != null ? ` (seed ${o.seed})` : "") + `${o.reference ? ", fgemma --reference" : ""}` +
    o.lora.map((l) => `, lora ${path.basename(l.filePath)}:${l.scale}`).join("") + "\n");

  const t0 = nowMs();
  const ll = await evaluateIds(handle, model, { ids, at: o.at, greedy: o.steps, threads: o.threads, kv: o.kv, lora: o.lora });
  const llMs = nowMs() - t0;
  const otherKv = o.kv === "f32" ? "f16" : "f32";
  let self = null;
  if (o.selfCheck != null && o.at.length > 0) {
    const r2 = await evaluateIds(handle, model, { ids, at: o.at, threads: o.threads, kv: otherKv, lora: o.lora });
    self = o.at.map((p, k) => selfDiff(ll.rows[k], r2.rows[k], o.top));
  }
  process.stdout.write(`llama.cpp: ${llMs.toFixed(0)} ms (prompt ${ll.info.timings_ms.prompt} ms = ` +
    `${ll.info.prompt_tok_per_s} tok/s, greedy ${ll.info.timings_ms.greedy} ms), ` +
    `KV ${ll.info.kv_cache_key_type}/${ll.info.kv_cache_value_type}, flash ${ll.info.flash_attention}, ` +
    `${ll.info.threads} threads\n`);

  let pass = true;
  if (o.modes.has("logits")) {
    const out = tmpFile("logits.f32");
    try {
      const r = runFgemma(o.fgemma, ["logits", "-m", o.model, "--ids", idText, "--at", o.at.join(" "),
        "-t", String(o.threads), ...ref, ...o.loraArgs, "-o", out], "fgemma logits");
      const flat = readF32(out);
      if (flat.length !== o.at.length * nVocab) {
        throw new Error(`fgemma logits wrote ${flat.length} floats, expected ${o.at.length} x ${nVocab}`);
      }
      process.stdout.write(`fgemma logits: ${r.ms.toFixed(0)} ms\n`);
      o.at.forEach((p, k) => {
        const t = { tol: o.tol, tolTop: o.tolTop, top: o.top };
        if (self != null) {
          t.tol = Math.max(t.tol, o.selfCheck * self[k].all);
          t.tolTop = Math.max(t.tolTop, o.selfCheck * self[k].top);
          process.stdout.write(`  pos ${String(p).padStart(4)}: llama.cpp KV ${o.kv} vs ${otherKv}: max|diff| all ` +
            `${fmt(self[k].all)}, top-${o.top} ${fmt(self[k].top)} -> tolerances ${fmt(t.tol)}, ${fmt(t.tolTop)}\n`);
          if (t.tol > 4 * o.tol) {
            process.stdout.write(`  WARNING: pos ${p}: the model is too sensitive for a tight comparison (llama.cpp ` +
              `moves by ${fmt(self[k].all)} under an f16 KV cache); tolerance raised from ${fmt(o.tol)}\n`);
          }
        }
        const c = compareRow(ll.rows[k], flat.subarray(k * nVocab, (k + 1) * nVocab), t);
        if (c.why) {
          process.stdout.write(`  pos ${p}: FAIL ${c.why}\n`);
          pass = false;
          return;
        }
        process.stdout.write(`  pos ${String(p).padStart(4)}: max|diff| all ${fmt(c.maxAll)} (id ${c.argAll}, ` +
          `${c.compared} compared), top-${o.top} ${fmt(c.maxTop)}, top-1 ${c.oTop1}` +
          (c.oTop1 === c.mTop1 ? " ==" : ` vs fgemma ${c.mTop1} (oracle gap ${fmt(c.gap)})`) +
          (c.floorViolations ? `, ${c.floorViolations} floor violations` : "") +
          (c.ok ? "  ok" : `  FAIL (tol ${fmt(t.tol)}, top tol ${fmt(t.tolTop)})`) + "\n");
        if (!c.ok) pass = false;
      });
    } finally {
      fs.rmSync(out, { force: true });
    }
  }
  if (o.modes.has("greedy")) {
    const r = runFgemma(o.fgemma, ["generate", "-m", o.model, "--ids", idText, "-n", String(o.steps),
      "-t", String(o.threads), ...ref, ...o.loraArgs],
      "fgemma generate");
    let mine = idsFromStdout(r.stdout, "fgemma generate");
    // accept an echo of the prompt in front of the generated ids
    if (mine.length === ids.length + o.steps && ids.every((v, i) => v === mine[i])) mine = mine.slice(ids.length);
    let agree = 0;
    while (agree < o.steps && agree < mine.length && mine[agree] === ll.greedy[agree]) agree++;
    let tie = "";
    let tieOk = false;
    if (o.tieTol != null && agree < o.steps && agree < mine.length) {
      // llama.cpp's distribution at the first difference: prompt + the common prefix
      const prefix = [...ids, ...ll.greedy.slice(0, agree)];
      const d = await evaluateIds(handle, model, { ids: prefix, at: [prefix.length - 1], threads: o.threads, kv: o.kv, lora: o.lora });
      const row = d.rows[0];
      const gap = row[ll.greedy[agree]] - row[mine[agree]];
      let tieTol = o.tieTol;
      if (o.selfCheck != null) {
        const d2 = await evaluateIds(handle, model, { ids: prefix, at: [prefix.length - 1], threads: o.threads, kv: otherKv, lora: o.lora });
        tieTol = Math.max(tieTol, o.selfCheck * selfDiff(row, d2.rows[0], o.top).top);
      }
      tieOk = gap <= tieTol;
      tie = `; step ${agree}: llama.cpp ${ll.greedy[agree]} vs fgemma ${mine[agree]}, oracle gap ${fmt(gap)} ` +
        (tieOk ? `<= ${fmt(tieTol)} (near-tie)` : `> ${fmt(tieTol)}`);
    }
    const ok = (agree >= o.minAgree || tieOk) && mine.length === o.steps;
    process.stdout.write(`greedy ${o.steps} steps: fgemma ${r.ms.toFixed(0)} ms; ${agree}/${o.steps} identical` +
      ` before the first difference (required ${o.minAgree}${o.tieTol != null ? " or a near-tie" : ""})${tie}` +
      `${ok ? "  ok" : "  FAIL"}\n`);
    if (agree < o.steps || !ok) {
      process.stdout.write(`  llama.cpp: ${ll.greedy.join(" ")}\n  fgemma:    ${mine.join(" ")}\n`);
    }
    if (mine.length !== o.steps) process.stdout.write(`  fgemma printed ${mine.length} ids, expected ${o.steps}\n`);
    if (!ok) pass = false;
  }
  await model.dispose();
  await handle.llama.dispose();
  return pass;
}

async function runFirst(o) {
  const handle = await openLlama({ threads: o.threads });
  const model = await openModel(handle.llama, o.model);
  const nVocab = modelVocabSize(model);
  if (nVocab == null) throw new Error("cannot read n_vocab (token_embd.weight) from the model");
  const ids = o.ids ?? [2, ...promptIds(o.seed, o.n - 1, nVocab)];
  for (const id of ids) {
    if (id >= nVocab) throw new UsageError(`id ${id} is outside the vocabulary of ${nVocab}`);
  }
  process.stdout.write(`model ${path.basename(o.model)}: n_vocab ${nVocab}, ${ids.length} one-token prompts` +
    `${o.reference ? ", fgemma --reference" : ""}\n`);
  let pass = true;
  const out = tmpFile("first.f32");
  try {
    for (const id of ids) {
      const ll = await evaluateIds(handle, model, { ids: [id], at: [0], threads: o.threads, kv: o.kv, lora: o.lora });
      runFgemma(o.fgemma, ["logits", "-m", o.model, "--ids", String(id), "--at", "0", "-t", String(o.threads),
        ...(o.reference ? ["--reference"] : []), ...o.loraArgs, "-o", out], "fgemma logits");
      const flat = readF32(out);
      if (flat.length !== nVocab) throw new Error(`fgemma logits wrote ${flat.length} floats, expected ${nVocab}`);
      const c = compareRow(ll.rows[0], flat, o);
      if (c.why) {
        process.stdout.write(`  id ${id}: FAIL ${c.why}\n`);
        pass = false;
        continue;
      }
      process.stdout.write(`  id ${String(id).padStart(6)}: max|diff| all ${fmt(c.maxAll)} (id ${c.argAll}), ` +
        `top-${o.top} ${fmt(c.maxTop)}, top-1 ${c.oTop1}` +
        (c.oTop1 === c.mTop1 ? " ==" : ` vs fgemma ${c.mTop1} (oracle gap ${fmt(c.gap)})`) +
        (c.floorViolations ? `, ${c.floorViolations} floor violations` : "") +
        (c.ok ? "  ok" : `  FAIL (tol ${fmt(o.tol)}, top tol ${fmt(o.tolTop)})`) + "\n");
      if (!c.ok) pass = false;
    }
  } finally {
    fs.rmSync(out, { force: true });
    await model.dispose();
    await handle.llama.dispose();
  }
  return pass;
}

async function runTokenize(o) {
  const cases = readCorpus(o.corpus);
  const handle = await openLlama({ threads: 1 });
  const model = await openModel(handle.llama, o.model, { vocabOnly: true });
  const want = tokenizeTexts(model, cases.map((c) => c.text));
  await model.dispose();
  await handle.llama.dispose();
  let same = 0;
  let ms = 0;
  cases.forEach((c, i) => {
    // the text goes through stdin ('-'): byte-exact, and safe for texts that start with '-'
    const r = runFgemma(o.fgemma, ["tokenize", "-m", o.model, "-"], `fgemma tokenize (line ${c.line})`, c.text);
    ms += r.ms;
    const got = idsFromStdout(r.stdout, "fgemma tokenize");
    if (got.length === want[i].length && got.every((v, k) => v === want[i][k])) {
      same++;
      return;
    }
    let k = 0;
    while (k < got.length && k < want[i].length && got[k] === want[i][k]) k++;
    process.stdout.write(`line ${c.line} ${JSON.stringify(c.text).slice(0, 70)}: first difference at ${k}\n` +
      `  llama.cpp: ${want[i].join(" ")}\n  fgemma:    ${got.join(" ")}\n`);
  });
  process.stdout.write(`tokenize: ${same}/${cases.length} texts identical (${path.basename(o.corpus)}, ` +
    `fgemma ${ms.toFixed(0)} ms in total)\n`);
  return same === cases.length;
}

// ----------------------------------------------------------------------------
// Main

let opt;
try {
  opt = readOptions(process.argv.slice(2));
} catch (e) {
  if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
  throw e;
}
try {
  const pass = opt.modes.has("tokenize") ? await runTokenize(opt)
    : opt.modes.has("first") ? await runFirst(opt) : await runModel(opt);
  process.stdout.write(pass ? "PASS\n" : "FAIL\n");
  process.exitCode = pass ? 0 : 1;
} catch (e) {
  die(e instanceof UsageError ? e.message : `${e.stack ?? e}`, e instanceof UsageError ? 2 : 1);
}
