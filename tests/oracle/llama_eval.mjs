#!/usr/bin/env node
// ----------------------------------------------------------------------------
// llama_eval.mjs: run llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binary) on raw token ids.
//
//   node llama_eval.mjs --model M.gguf --ids "2 105 ..." [--at "p1 p2 ..."] [--greedy N]
//                       [--threads T] [--out FILE] [--kv f32|f16] [--flash off|on]
//
// For every position p in --at (0-based index into --ids: the distribution after feeding
// ids[0..p]) the full next-token distribution is written to --out as raw little-endian f32,
// len(at) rows × n_vocab, each row holding centred log-probs (logit - max logit, see
// llama_core.mjs for how exact they are; probabilities that underflow float32 give -Infinity).
// With --greedy N the N greedy ids that follow the prompt are computed (llama.cpp's greedy
// sampler: argmax, lowest id on ties). A JSON object goes to stdout: n_vocab, top-1 per --at
// position, greedy ids, context settings and timings.
//
// Defaults: F32 K and V cache, flash attention off, one sequence, a batch (= ubatch) that holds
// the whole prompt, 1 thread (ggml workers spin at barriers: on a busy machine 2 threads can be
// orders of magnitude slower; pass --threads 2 for timings on an idle machine).

import { UsageError, die, parseArgs, parseIdList, parsePositiveInt, writeF32, nowMs } from "./common.mjs";
import { openLlama, openModel, evaluateIds } from "./llama_core.mjs";
import fs from "node:fs";

// ----------------------------------------------------------------------------
// Arguments

const SPEC = { model: "str", ids: "str", at: "str", greedy: "str", threads: "str", out: "str",
  kv: "str", flash: "str", help: "bool" };
const USAGE = "usage: llama_eval.mjs --model M.gguf --ids \"2 105 ...\" [--at \"p1 p2 ...\"] " +
  "[--greedy N] [--threads T] [--out FILE] [--kv f32|f16] [--flash off|on]";

function readOptions(argv) {
  const a = parseArgs(argv, SPEC);
  if (a.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  if (!a.model) throw new UsageError("--model is required");
  if (!fs.existsSync(a.model)) throw new UsageError(`model '${a.model}' does not exist`);
  const ids = parseIdList(a.ids, "--ids");
  if (ids.length === 0) throw new UsageError("--ids needs at least one id");
  const at = parseIdList(a.at, "--at");
  for (const p of at) {
    if (p >= ids.length) throw new UsageError(`--at position ${p} is outside the ${ids.length} ids`);
  }
  if (new Set(at).size !== at.length) throw new UsageError("--at positions must be distinct");
  if (at.length > 0 && !a.out) throw new UsageError("--at needs --out FILE");
  const greedy = parsePositiveInt(a.greedy, "--greedy", 0);
  const threads = parsePositiveInt(a.threads, "--threads", 1);
  if (threads < 1) throw new UsageError("--threads must be >= 1");
  const kv = (a.kv ?? "f32").toLowerCase();
  if (kv !== "f32" && kv !== "f16") throw new UsageError("--kv must be f32 or f16");
  const flash = (a.flash ?? "off").toLowerCase();
  if (flash !== "off" && flash !== "on") throw new UsageError("--flash must be off or on");
  return { model: a.model, ids, at, greedy, threads, out: a.out, kv, flash: flash === "on" };
}

function argmaxLowest(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

// ----------------------------------------------------------------------------
// Main

async function run(opt) {
  const t0 = nowMs();
  const handle = await openLlama({ threads: opt.threads });
  const model = await openModel(handle.llama, opt.model);
  const tLoad = nowMs() - t0;
  const r = await evaluateIds(handle, model, opt);
  for (const ids of [opt.ids, r.greedy]) {
    for (const id of ids) {
      if (r.nVocab != null && id >= r.nVocab) throw new UsageError(`id ${id} is outside the vocabulary of ${r.nVocab}`);
    }
  }
  if (opt.at.length > 0) {
    const flat = new Float32Array(opt.at.length * r.nVocab);
    r.rows.forEach((row, i) => flat.set(row, i * r.nVocab));
    writeF32(opt.out, flat);
  }
  const out = {
    n_vocab: r.nVocab,
    n_ids: opt.ids.length,
    at: opt.at,
    top1: r.rows.map(argmaxLowest),
    greedy: r.greedy,
    build_type: handle.llama.buildType,
    load_ms: +tLoad.toFixed(1),
    ...r.info,
  };
  process.stdout.write(JSON.stringify(out) + "\n");
  await model.dispose();
  await handle.llama.dispose();
}

let opt;
try {
  opt = readOptions(process.argv.slice(2));
} catch (e) {
  if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
  throw e;
}
try {
  await run(opt);
} catch (e) {
  die(e instanceof UsageError ? e.message : `llama.cpp evaluation failed: ${e.stack ?? e}`, 1);
}
