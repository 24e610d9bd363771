#!/usr/bin/env node
// ----------------------------------------------------------------------------
// calls_parity.mjs: fgemma's NLU answers equal llama.cpp's greedy answers on a labelled set.
//
//   node calls_parity.mjs --fgemma BIN --model M.gguf --tools CATALOG.json --data DATA.jsonl
//                         [--max-tokens 48] [--threads 1] [--limit N] [--every N] [--tie-tol X] [--min-calls N]
//                         [--lora F[:S],...] [--json FILE]
//
// fgemma: `fgemma call` (the NLU engine, unconstrained greedy decoding, catalog prefix prefilled once)
// answers every "utterance" of DATA.jsonl; its raw text (control tokens by name) is compared with
// llama.cpp's (node-llama-cpp 3.21.1): the same ids (the prefix and utterance parts tokenized by
// `fgemma tokenize --jsonl` exactly as the engine does) evaluated once for the prefix, then per utterance
// the utterance part and greedy tokens until <end_function_call>, <end_of_turn>, <eos> or
// <start_function_response> (or --max-tokens), detokenized with special tokens; the sequence is then
// rolled back to the prefix (full KV cache for the sliding layers, so the rollback is exact).
// A difference fails unless it is a near-tie of llama.cpp: with --tie-tol X, llama.cpp's own
// log-probability of fgemma's token at the first differing step (fgemma's text tokenized by llama.cpp)
// is within X of its choice. --min-calls N fails when fewer than N answers contain a call (a model that
// answers nothing useful would agree trivially).
// --lora F[:S],...: LoRA adapters on both sides (fgemma --lora, llama.cpp's context option lora.adapters).
// An adapter that renames control tokens for fgemma (fgemma.vocab_override, e.g. FunctionGemma's tokens
// over a base Gemma 3 file whose ids 46-52 are <unused40>..<unused46>) leaves llama.cpp with the base's
// names for those ids: the comparison maps llama.cpp's names of FunctionGemma's control-token ids to
// fgemma's, so both sides are compared on the same ids.
// --json FILE: the counts as JSON too (`fgemma tune --llama-agreement FILE` puts them into its report).
// Exit status: 0 pass, 1 mismatch or failure, 2 usage error.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { UsageError, die, fgemmaLoraArgs, parseArgs, parseLoraList, parsePositiveInt } from "./common.mjs";
import { openLlama, openModel } from "./llama_core.mjs";

const SPEC = { fgemma: "str", model: "str", tools: "str", data: "str", "max-tokens": "str", threads: "str",
  limit: "str", every: "str", "tie-tol": "str", "min-calls": "str", lora: "str", json: "str", help: "bool" };
const USAGE = "usage: calls_parity.mjs --fgemma BIN --model M.gguf --tools CATALOG.json --data DATA.jsonl " +
  "[--max-tokens 48] [--threads 1] [--limit N] [--every N] [--tie-tol X] [--min-calls N] [--lora F[:S],...] [--json FILE]";
const SUFFIX = "<end_of_turn>\n<start_of_turn>model\n";
const STOPS = ["<end_function_call>", "<end_of_turn>", "<eos>", "<start_function_response>"];
const CONTROL = ["<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
  "<end_function_call>", "<start_function_response>", "<end_function_response>", "<escape>"];

function run(bin, args, input) {
  const r = spawnSync(bin, args, { input, maxBuffer: 1 << 28, encoding: "utf8" });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${bin} ${args.join(" ")} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

function tokenizeJsonl(bin, model, texts, bos, loraArgs = []) {
  const out = run(bin, ["tokenize", "-m", model, ...loraArgs, ...(bos ? ["--bos"] : []), "--jsonl", "-"],
    texts.map((t) => JSON.stringify(t)).join("\n") + "\n");
  const rows = out.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
  if (rows.length !== texts.length) throw new Error(`tokenize gave ${rows.length} rows for ${texts.length} texts`);
  return rows;
}

const asciiTrim = (s) => s.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, "");

async function main() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2), SPEC);
    if (a.help) {
      process.stdout.write(USAGE + "\n");
      return 0;
    }
    for (const k of ["fgemma", "model", "tools", "data"]) if (!a[k]) throw new UsageError(`--${k} is required`);
  } catch (e) {
    if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
    throw e;
  }
  const maxTokens = parsePositiveInt(a["max-tokens"], "--max-tokens", 48);
  const threads = parsePositiveInt(a.threads, "--threads", 1);
  const limit = parsePositiveInt(a.limit, "--limit", 0);
  const minCalls = parsePositiveInt(a["min-calls"], "--min-calls", 0);
  const tieTol = a["tie-tol"] == null ? 0 : Number(a["tie-tol"]);
  let loras;
  try {
    loras = parseLoraList(a.lora);
  } catch (e) {
    if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
    throw e;
  }
  const loraArgs = fgemmaLoraArgs(loras);

  let items = fs.readFileSync(a.data, "utf8").split("\n").filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l).utterance);
  const every = parsePositiveInt(a.every, "--every", 1);
  if (every < 1) throw new UsageError("--every must be at least 1");
  if (every > 1) items = items.filter((_, i) => i % every === 0);
  if (limit > 0) items = items.slice(0, limit);
  if (items.length === 0) die(`${a.data} holds no utterances`, 1);
  if (items.some((u) => u.includes("\n"))) die("an utterance contains a line break (fgemma call reads lines)", 1);

  // fgemma: ids of the prefix and the utterance parts, and the engine's answers
  const prefixText = run(a.fgemma, ["prompt", "--tools", a.tools]);
  const [prefix] = tokenizeJsonl(a.fgemma, a.model, [prefixText], true, loraArgs);
  const utts = tokenizeJsonl(a.fgemma, a.model, items.map((u) => asciiTrim(u) + SUFFIX), false, loraArgs);
  const callOut = run(a.fgemma, ["call", "-m", a.model, ...loraArgs, "--tools", a.tools, "--max-tokens", String(maxTokens),
    "--constrained", "off", "-t", String(threads)], items.join("\n") + "\n");
  const answers = callOut.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
  if (answers.length !== items.length) throw new Error(`fgemma call gave ${answers.length} answers for ${items.length}`);

  // llama.cpp
  const handle = await openLlama({ threads });
  const model = await openModel(handle.llama, a.model);
  // fgemma's ids of the control tokens, and llama.cpp's names for those ids where they differ
  const ctlIds = tokenizeJsonl(a.fgemma, a.model, CONTROL, false, loraArgs);
  const toFg = new Map(), toLl = new Map();
  CONTROL.forEach((name, i) => {
    if (ctlIds[i].length !== 1) return; // not a token of this vocabulary: plain text on both sides
    const llName = model.detokenize([ctlIds[i][0]], true);
    if (llName !== name) {
      toFg.set(llName, name);
      toLl.set(name, llName);
    }
  });
  const rename = (text, map) => [...map].reduce((t, [from, to]) => t.split(from).join(to), text);
  if (toFg.size > 0) process.stdout.write(`control tokens renamed for llama.cpp: ${[...toLl].map(([f, l]) => `${f}=${l}`).join(" ")}\n`);
  const stopIds = new Set(STOPS.map((s) => {
    const t = Array.from(model.tokenize(rename(s, toLl), true));
    if (t.length !== 1) throw new Error(`${s} is not one token in llama.cpp's vocabulary`);
    return t[0];
  }));
  const maxUtt = Math.max(...utts.map((u) => u.length));
  const context = await model.createContext({
    contextSize: prefix.length + maxUtt + maxTokens + 8,
    batchSize: prefix.length,
    sequences: 1,
    flashAttention: false,
    threads,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
    swaFullCache: true,
    ignoreMemorySafetyChecks: true,
    failedCreationRemedy: false,
    ...(loras.length > 0 ? { lora: { adapters: loras.map((l) => ({ filePath: l.filePath, scale: l.scale })) } } : {}),
  });
  const seq = context.getSequence();
  await seq.controlledEvaluate(prefix);
  const P = seq.nextTokenIndex;
  if (P !== prefix.length) throw new Error(`prefix: ${P} tokens in the context, expected ${prefix.length}`);
  const greedy = { generateNext: { token: true, options: { temperature: 0 } } };

  // Evaluates ids after the prefix and decodes greedily; probsAt: step whose distribution is wanted.
  async function answer(ids, probsAt = -1) {
    const input = ids.map((id, i) => (i === ids.length - 1
      ? [id, { generateNext: { token: true, probabilities: probsAt === 0, options: { temperature: 0 } } }] : id));
    let res = await seq.controlledEvaluate(input);
    let next = res[res.length - 1].next;
    const out = [];
    let probs = probsAt === 0 ? next.probabilities : null;
    while (true) {
      const tok = next.token;
      out.push(tok);
      if (stopIds.has(tok) || out.length >= maxTokens) break;
      const want = probsAt === out.length;
      res = await seq.controlledEvaluate([[tok, want ? { generateNext: { ...greedy.generateNext, probabilities: true } } : greedy]]);
      next = res[0].next;
      if (want) probs = next.probabilities;
    }
    await seq.eraseContextTokenRanges([{ start: P, end: seq.nextTokenIndex }]);
    if (seq.nextTokenIndex !== P) throw new Error(`rollback left ${seq.nextTokenIndex} tokens, expected ${P}`);
    return { out, probs };
  }

  let equal = 0, ties = 0, calls = 0;
  const fails = [];
  for (let i = 0; i < items.length; i++) {
    const { out } = await answer(utts[i]);
    const text = rename(model.detokenize(out, true), toFg);
    const mine = answers[i].raw ?? "";
    if ((answers[i].result?.calls ?? []).length > 0) calls++;
    if (text === mine) {
      equal++;
      continue;
    }
    // near-tie? fgemma's answer as llama.cpp ids, first differing step, llama.cpp's gap there
    let verdict = `differs: llama.cpp ${JSON.stringify(text)} / fgemma ${JSON.stringify(mine)}`;
    if (tieTol > 0) {
      const theirs = Array.from(model.tokenize(rename(mine, toLl), true));
      let k = 0;
      while (k < out.length && k < theirs.length && out[k] === theirs[k]) k++;
      if (k < out.length && k < theirs.length) {
        const { probs } = await answer(utts[i], k); // llama.cpp's own path: identical up to step k
        const pl = probs.get(out[k]) ?? 0, pf = probs.get(theirs[k]) ?? 0;
        const gap = pl > 0 && pf > 0 ? Math.log(pl) - Math.log(pf) : Infinity;
        if (gap <= tieTol) {
          ties++;
          process.stdout.write(`near-tie ${i + 1}: step ${k}, gap ${gap.toFixed(4)}: ${JSON.stringify(items[i])}\n`);
          continue;
        }
        verdict += ` (step ${k}, llama.cpp's log-prob gap ${gap.toFixed(4)})`;
      }
    }
    fails.push(`${i + 1} ${JSON.stringify(items[i])}: ${verdict}`);
  }
  await context.dispose();
  process.stdout.write(`${a.model}: ${equal} of ${items.length} answers equal, ${ties} near-ties, ` +
    `${fails.length} different; ${calls} answers with a call\n`);
  for (const f of fails.slice(0, 20)) process.stdout.write(`  ${f}\n`);
  if (a.json) {
    fs.writeFileSync(a.json, JSON.stringify({ engine: "llama.cpp (node-llama-cpp 3.21.1)", data: a.data, every,
      answers: items.length, equal, near_ties: ties, different: fails.length, with_call: calls }) + "\n");
  }
  if (calls < minCalls) {
    process.stdout.write(`FAIL: ${calls} answers with a call, at least ${minCalls} required\n`);
    return 1;
  }
  return fails.length === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`calls_parity.mjs: ${e.stack ?? e}\n`);
  process.exit(1);
});
