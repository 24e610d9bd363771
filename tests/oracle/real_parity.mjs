#!/usr/bin/env node
// ----------------------------------------------------------------------------
// real_parity.mjs: fgemma against llama.cpp (node-llama-cpp 3.21.1) on the real Gemma 3 270M
// (google/gemma-3-270m Q4_K_M) over a prompt set (tests/data/real/prompts.jsonl).
//
//   node real_parity.mjs --fgemma BIN --model M.gguf --prompts FILE.jsonl [--steps 64]
//        [--tol X] [--tol-top X] [--top K] [--tie-tol X] [--threads T] [--limit N] [--lora F[:S],...]
//
// --limit N: only the first N prompts. --lora: LoRA adapters (llama.cpp's GGUF format) with their scales,
// applied on both sides (fgemma --lora F:S; llama.cpp's context option lora.adapters), docs/LORA.md.
//
// Per prompt (one JSON object per line with a "text"; the runtime adds <bos>):
//   tokenize  `fgemma tokenize --bos --jsonl` (all prompts, one process) must equal <bos> +
//             llama.cpp's tokenization (parse_special, no BOS) id for id;
//   greedy    --steps greedy ids from llama.cpp and from `fgemma generate --batch` (all prompts, one
//             process, run while llama.cpp works); equal, or the first difference is a near-tie:
//             llama.cpp's own log-prob of fgemma's id at that step within --tie-tol of its choice;
//   logits    centred next-token logits (x - max x) after the last prompt id, in the middle of the
//             prompt, at the window edge 511/512 for prompts longer than that, and after generated
//             ids 16 and steps-1 (compared while fgemma's greedy ids equal llama.cpp's, so both sides
//             hold the same sequence): max |diff| over the whole vocabulary (entries where llama.cpp
//             is above FLOOR = -80; below it fgemma must be below FLOOR + 10) and over llama.cpp's
//             top-K; top-1 equal unless llama.cpp's own gap between the two ids is within --tie-tol.
// llama.cpp: F32 KV cache, flash attention off, one sequence, one context sized for the longest
// prompt (cleared between prompts). Exit status: 0 pass, 1 mismatch or failure, 2 usage error.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  UsageError, die, fgemmaLoraArgs, parseArgsWithFiles, parseIdList, parseLoraList, parsePositiveInt, readF32, nowMs,
} from "./common.mjs";
import { openLlama, openModel, modelVocabSize, centredLogProbs } from "./llama_core.mjs";

const FLOOR = -80;
const SPEC = { fgemma: "str", model: "str", prompts: "str", steps: "str", tol: "str", "tol-top": "str",
  top: "str", "tie-tol": "str", threads: "str", limit: "str", lora: "str", help: "bool" };
const USAGE = "usage: real_parity.mjs --fgemma BIN --model M.gguf --prompts FILE.jsonl [--steps 64] " +
  "[--tol X] [--tol-top X] [--top K] [--tie-tol X] [--threads T] [--limit N] [--lora F[:S],...]";

function parseNumber(text, what, def) {
  if (text == null) return def;
  const v = Number(text);
  if (!Number.isFinite(v) || v < 0) throw new UsageError(`${what}: '${text}' is not a non-negative number`);
  return v;
}

function readOptions(argv) {
  const a = parseArgsWithFiles(argv, SPEC, USAGE, ["fgemma", "model", "prompts"]);
  const o = {
    fgemma: path.resolve(a.fgemma), model: path.resolve(a.model), prompts: a.prompts,
    steps: parsePositiveInt(a.steps, "--steps", 64),
    tol: parseNumber(a.tol, "--tol", 0.1),
    top: parsePositiveInt(a.top, "--top", 50),
    tieTol: parseNumber(a["tie-tol"], "--tie-tol", 0.1),
    threads: parsePositiveInt(a.threads, "--threads", 1),
    limit: parsePositiveInt(a.limit, "--limit", 0),
    lora: parseLoraList(a.lora),
  };
  o.loraArgs = fgemmaLoraArgs(o.lora);
  o.tolTop = parseNumber(a["tol-top"], "--tol-top", o.tol);
  if (o.steps < 17) throw new UsageError("--steps must be >= 17");
  if (o.threads < 1) throw new UsageError("--threads must be >= 1");
  return o;
}

function readPrompts(file) {
  const out = [];
  fs.readFileSync(file, "utf8").split("\n").forEach((line, i) => {
    if (line.trim().length === 0) return;
    let o;
    try {
      o = JSON.parse(line);
    } catch (e) {
      throw new UsageError(`${file}:${i + 1}: not JSON (${e.message})`);
    }
    if (typeof o.text !== "string" || o.text.length === 0) throw new UsageError(`${file}:${i + 1}: no "text"`);
    out.push({ id: o.id ?? `line-${i + 1}`, kind: o.kind ?? "", text: o.text });
  });
  if (out.length === 0) throw new UsageError(`${file} holds no prompts`);
  return out;
}

function fmt(x) {
  return Number(x).toExponential(3);
}

// ----------------------------------------------------------------------------
// fgemma

function fgemmaTokenize(o, prompts) {
  const input = prompts.map((p) => JSON.stringify(p.text)).join("\n") + "\n";
  const r = spawnSync(o.fgemma, ["tokenize", "-m", o.model, "--bos", "--jsonl", ...o.loraArgs, "-"],
    { input, encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) {
    throw new Error(`fgemma tokenize --jsonl failed (${r.error?.message ?? r.status}): ${(r.stderr ?? "").trim()}`);
  }
  const lines = r.stdout.split("\n").filter((s) => s.length > 0);
  if (lines.length !== prompts.length) throw new Error(`fgemma tokenize printed ${lines.length} lines for ${prompts.length} texts`);
  return lines.map((l) => JSON.parse(l));
}

// Starts `fgemma generate --batch` in the background; resolves to { greedy: ids[][], rows: Float32Array, ms }.
function fgemmaGenerate(o, jobs, tmp) {
  const batch = path.join(tmp, "batch.txt");
  const logits = path.join(tmp, "logits.f32");
  fs.writeFileSync(batch, jobs.map((j) => `${j.ids.join(" ")} | ${j.at.join(" ")}`).join("\n") + "\n");
  const t0 = nowMs();
  return new Promise((resolve, reject) => {
    const child = spawn(o.fgemma, ["generate", "-m", o.model, "--batch", batch, "-n", String(o.steps),
      "--logits-out", logits, "-t", String(o.threads), ...o.loraArgs], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout.on("data", (d) => { out += d; });
    child.stderr.on("data", (d) => { err += d; });
    child.on("error", (e) => reject(new Error(`cannot run ${o.fgemma}: ${e.message}`)));
    child.on("close", (code, sig) => {
      const ms = nowMs() - t0;
      if (code !== 0) return reject(new Error(`fgemma generate --batch exited with ${code ?? sig}: ${err.trim()}`));
      const lines = out.split("\n").filter((s) => s.trim().length > 0);
      if (lines.length !== jobs.length) return reject(new Error(`fgemma generate --batch printed ${lines.length} lines for ${jobs.length} prompts`));
      resolve({ greedy: lines.map((l) => parseIdList(l, "fgemma generate")), rows: readF32(logits), ms });
    });
  });
}

// ----------------------------------------------------------------------------
// llama.cpp: one context, the prompt with distributions at the prompt positions of `at`, then
// greedy steps with distributions at the continuation positions.

async function llamaRun(seq, nVocab, ids, at, steps) {
  await seq.clearHistory();
  {
    const n = ids.length;
    const atSet = new Set(at);
    const input = ids.map((id, i) => {
      const probs = atSet.has(i);
      const tok = i === n - 1;
      if (!probs && !tok) return id;
      return [id, { generateNext: { probabilities: probs, token: tok, options: { temperature: 0 } } }];
    });
    const res = await seq.controlledEvaluate(input);
    const rows = new Map();
    for (const p of at) if (p < n) rows.set(p, centredLogProbs(res[p]?.next?.probabilities, nVocab));
    const greedy = [];
    let tok = res[n - 1]?.next?.token;
    if (tok == null) throw new Error("no greedy token after the prompt");
    greedy.push(tok);
    while (greedy.length < steps) {
      const p = n - 1 + greedy.length; // the distribution after feeding `tok`
      const probs = atSet.has(p);
      const r = await seq.controlledEvaluate([[tok, { generateNext: { token: true, probabilities: probs, options: { temperature: 0 } } }]]);
      if (probs) rows.set(p, centredLogProbs(r[0]?.next?.probabilities, nVocab));
      tok = r[0]?.next?.token;
      if (tok == null) throw new Error(`no greedy token at step ${greedy.length}`);
      greedy.push(tok);
    }
    return { rows, greedy };
  }
}

// llama.cpp's distribution after ids (for the near-tie check at a greedy difference).
async function llamaRow(seq, nVocab, ids) {
  await seq.clearHistory();
  {
    const input = ids.map((id, i) => (i === ids.length - 1
      ? [id, { generateNext: { probabilities: true, options: { temperature: 0 } } }] : id));
    const res = await seq.controlledEvaluate(input);
    return centredLogProbs(res[ids.length - 1]?.next?.probabilities, nVocab);
  }
}

// ----------------------------------------------------------------------------
// Comparison of one row (as parity.mjs)

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

function topK(row, k) {
  const idx = Array.from(row.keys());
  idx.sort((x, y) => (row[y] - row[x]) || (x - y));
  return idx.slice(0, k);
}

function compareRow(oracle, mine, o) {
  let mx = -Infinity;
  for (let i = 0; i < mine.length; i++) {
    if (!Number.isFinite(mine[i])) return { ok: false, why: `fgemma logit ${i} is ${mine[i]}` };
    if (mine[i] > mx) mx = mine[i];
  }
  const m = Float64Array.from(mine, (v) => v - mx);
  let maxAll = 0, argAll = -1, floorViolations = 0;
  for (let i = 0; i < oracle.length; i++) {
    if (oracle[i] < FLOOR) {
      if (m[i] > FLOOR + 10) floorViolations++;
      continue;
    }
    const d = Math.abs(m[i] - oracle[i]);
    if (d > maxAll || Number.isNaN(d)) { maxAll = d; argAll = i; }
  }
  let maxTop = 0;
  for (const i of topK(oracle, o.top)) maxTop = Math.max(maxTop, Math.abs(m[i] - oracle[i]));
  const oTop1 = argmax(oracle), mTop1 = argmax(m);
  const gap = oracle[oTop1] - oracle[mTop1];
  const ok = maxAll <= o.tol && maxTop <= o.tolTop && floorViolations === 0 && (oTop1 === mTop1 || gap <= o.tieTol);
  return { ok, maxAll, argAll, maxTop, oTop1, mTop1, gap, floorViolations };
}

// ----------------------------------------------------------------------------
// Main

async function run(o) {
  const all = readPrompts(o.prompts);
  const prompts = o.limit > 0 ? all.slice(0, o.limit) : all;
  const t0 = nowMs();
  const handle = await openLlama({ threads: o.threads });
  const model = await openModel(handle.llama, o.model);
  const nVocab = modelVocabSize(model);
  if (nVocab == null) throw new Error("cannot read n_vocab (token_embd.weight) from the model");
  process.stdout.write(`model ${path.basename(o.model)}: n_vocab ${nVocab}; ${prompts.length} prompts, ` +
    `${o.steps} greedy steps, ${o.threads} thread(s) per side` +
    o.lora.map((l) => `, lora ${path.basename(l.filePath)}:${l.scale}`).join("") + "\n");
  let pass = true;

  // tokenization
  const mine = fgemmaTokenize(o, prompts);
  let tokOk = 0;
  prompts.forEach((p, i) => {
    const want = [2, ...Array.from(model.tokenize(p.text, true))];
    const got = mine[i];
    if (got.length === want.length && got.every((v, k) => v === want[k])) {
      tokOk++;
      return;
    }
    let k = 0;
    while (k < got.length && k < want.length && got[k] === want[k]) k++;
    process.stdout.write(`tokenize ${p.id}: first difference at ${k}: llama.cpp ${want.slice(k, k + 8).join(" ")}, ` +
      `fgemma ${got.slice(k, k + 8).join(" ")}  FAIL\n`);
    pass = false;
  });
  process.stdout.write(`tokenize: ${tokOk}/${prompts.length} prompts identical (<bos> + llama.cpp's ids)\n`);
  // Positions before the prefix shared with the previous prompt (a tool catalog) were compared
  // there: the logits depend on the prefix only. Dropping them lets fgemma prefill the prefix once.
  const jobs = prompts.map((p, i) => {
    const ids = mine[i];
    const n = ids.length;
    const prev = i > 0 ? mine[i - 1] : [];
    let lcp = 0;
    while (lcp < prev.length && lcp < n && prev[lcp] === ids[lcp]) lcp++;
    const at = new Set([Math.floor(n / 2), n - 1, n - 1 + 16, n - 1 + o.steps - 1]);
    if (n > 513) { at.add(511); at.add(512); }
    return { ...p, ids, n, at: [...at].filter((q) => q >= lcp || q >= n - 1).sort((x, y) => x - y) };
  });

  // fgemma in the background, llama.cpp here
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "fg-real-parity-"));
  try {
    const fgPromise = fgemmaGenerate(o, jobs, tmp);
    fgPromise.catch(() => {}); // reported below
    const maxN = Math.max(...jobs.map((j) => j.n));
    const tc = nowMs();
    const ctx = await model.createContext({
      contextSize: maxN + o.steps + 1, batchSize: maxN, sequences: 1, flashAttention: false, threads: o.threads,
      experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32", swaFullCache: false,
      ignoreMemorySafetyChecks: true, failedCreationRemedy: false,
      ...(o.lora.length > 0 ? { lora: { adapters: o.lora.map((l) => ({ filePath: path.resolve(l.filePath), scale: l.scale })) } } : {}),
    });
    const kvInfo = `KV ${handle.mod.GgmlType[ctx.kvCacheKeyType] ?? ctx.kvCacheKeyType}/` +
      `${handle.mod.GgmlType[ctx.kvCacheValueType] ?? ctx.kvCacheValueType}, flash ${ctx.flashAttention}`;
    const seq = ctx.getSequence();
    const ll = [];
    const tl = nowMs();
    for (const j of jobs) ll.push(await llamaRun(seq, nVocab, j.ids, j.at, o.steps));
    const llMs = nowMs() - tl;
    process.stdout.write(`llama.cpp: ${(llMs / 1000).toFixed(1)} s for all prompts (context ${((tl - tc) / 1000).toFixed(1)} s, ` +
      `${kvInfo}, ${ctx.contextSize} positions)\n`);
    const fg = await fgPromise;
    process.stdout.write(`fgemma generate --batch: ${(fg.ms / 1000).toFixed(1)} s for all prompts (in parallel with llama.cpp)\n`);
    const nRows = jobs.reduce((s, j) => s + j.at.length, 0);
    if (fg.rows.length !== nRows * nVocab) throw new Error(`fgemma wrote ${fg.rows.length} floats, expected ${nRows} x ${nVocab}`);

    // comparisons
    let rowOff = 0, greedySame = 0, stepsSame = 0, nCompared = 0, nSkipped = 0;
    const worst = { prompt: { all: 0, top: 0 }, window: { all: 0, top: 0 }, gen: { all: 0, top: 0 } };
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i];
      const lg = ll[i].greedy, fgG = fg.greedy[i];
      let agree = 0;
      while (agree < o.steps && agree < fgG.length && fgG[agree] === lg[agree]) agree++;
      stepsSame += agree;
      let line = `${j.id.padEnd(8)} ${String(j.n).padStart(5)} ids: greedy ${agree}/${o.steps}`;
      let ok = fgG.length === o.steps;
      if (agree === o.steps) {
        greedySame++;
      } else if (agree < fgG.length) {
        const row = await llamaRow(seq, nVocab, [...j.ids, ...lg.slice(0, agree)]);
        const gap = row[lg[agree]] - row[fgG[agree]];
        const tie = gap <= o.tieTol;
        line += ` (step ${agree}: llama.cpp ${lg[agree]}, fgemma ${fgG[agree]}, llama.cpp's gap ${fmt(gap)} ` +
          `${tie ? "<=" : ">"} ${fmt(o.tieTol)}${tie ? ": near-tie" : ""})`;
        ok = ok && tie;
      }
      const parts = [];
      for (const p of j.at) {
        const mineRow = fg.rows.subarray((rowOff) * nVocab, (rowOff + 1) * nVocab);
        rowOff++;
        // positions in the continuation compare only while both sides hold the same ids
        if (p >= j.n && p - j.n + 1 > agree) {
          parts.push(`${p}: -`);
          nSkipped++;
          continue;
        }
        const c = compareRow(ll[i].rows.get(p), mineRow, o);
        if (c.why) {
          parts.push(`${p}: ${c.why}`);
          ok = false;
          continue;
        }
        nCompared++;
        const kind = p >= j.n ? "gen" : (p === 511 || p === 512) ? "window" : "prompt";
        worst[kind].all = Math.max(worst[kind].all, c.maxAll);
        worst[kind].top = Math.max(worst[kind].top, c.maxTop);
        parts.push(`${p}: ${c.maxAll.toFixed(4)}/${c.maxTop.toFixed(4)}` +
          (c.oTop1 === c.mTop1 ? "" : ` top-1 ${c.oTop1} vs ${c.mTop1} (gap ${fmt(c.gap)})`) +
          (c.floorViolations ? ` ${c.floorViolations} below-floor violations` : "") + (c.ok ? "" : " FAIL"));
        if (!c.ok) ok = false;
      }
      process.stdout.write(`${line}; max|diff| all/top-${o.top} at ${parts.join(", ")}${ok ? "  ok" : "  FAIL"}\n`);
      if (agree < o.steps) process.stdout.write(`  llama.cpp: ${lg.join(" ")}\n  fgemma:    ${fgG.join(" ")}\n`);
      if (!ok) pass = false;
    }
    await ctx.dispose();
    const w = (k) => `${worst[k].all.toFixed(4)} / ${worst[k].top.toFixed(4)}`;
    process.stdout.write(`greedy: ${greedySame}/${jobs.length} prompts identical over ${o.steps} steps ` +
      `(${stepsSame}/${jobs.length * o.steps} steps before the first difference)\n`);
    process.stdout.write(`logits: ${nCompared} rows compared, ${nSkipped} skipped (after a greedy difference); ` +
      `max|diff| all / top-${o.top}: prompt ${w("prompt")}, window edge 511/512 ${w("window")}, ` +
      `continuation ${w("gen")}; tolerance ${o.tol} / ${o.tolTop}\n`);
    process.stdout.write(`total ${((nowMs() - t0) / 1000).toFixed(1)} s\n`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    await model.dispose();
    await handle.llama.dispose();
  }
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
