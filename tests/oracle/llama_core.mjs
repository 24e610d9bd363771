// ----------------------------------------------------------------------------
// llama_core.mjs: the llama.cpp side of the oracles as functions (used by llama_eval.mjs,
// llama_tokenize.mjs and parity.mjs).
//
// Route to the logits (the most exact one node-llama-cpp 3.21.1 offers; see docs/ORACLES.md):
// LlamaContextSequence.controlledEvaluate with generateNext.probabilities and temperature 0.
// With temperature 0 the addon's sampler chain is only llama.cpp's greedy sampler, which does not
// touch the logits; the addon then takes llama_get_logits_ith() for the whole vocabulary and
// computes p_i = expf(l_i - l_max) / sum(expf(l_j - l_max)) in float32 (llama/addon/
// AddonContext.cpp, AddonContextSampleTokenWorker::SampleToken). Hence
// log(p_i) - log(p_max) = l_i - l_max to within a few float32 ulps of the probabilities, as long
// as expf() does not underflow: below about -87 the values are denormal (less exact), below about
// -103 they are 0 and come out here as -Infinity. node-llama-cpp has no call that returns raw logits.

import path from "node:path";
import { nowMs } from "./common.mjs";

// ----------------------------------------------------------------------------
// Loading

export async function openLlama({ threads = 2, logLevel = "error" } = {}) {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 20) {
    throw new Error(`Node.js ${process.versions.node}: node-llama-cpp 3.21.1 needs >= 20 (see scripts/setup.sh)`);
  }
  let mod;
  try {
    mod = await import("node-llama-cpp");
  } catch (e) {
    throw new Error(`cannot import node-llama-cpp (${e.message}); run scripts/setup.sh ` +
      "(or `npm ci --omit=optional` in tests/oracle)");
  }
  // gpu:false + build:"never" + skipDownload: only the prebuilt CPU binary shipped in
  // @node-llama-cpp/linux-x64 is considered; nothing is compiled or fetched.
  const llama = await mod.getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel,
    maxThreads: threads,
  });
  return { mod, llama };
}

export async function openModel(llama, modelPath, { vocabOnly = false } = {}) {
  return llama.loadModel({
    modelPath: path.resolve(modelPath),
    gpuLayers: 0,
    useMmap: true,
    vocabOnly,
    defaultContextFlashAttention: false,
  });
}

// n_vocab = rows of token_embd.weight (llama.cpp's own n_vocab comes from the token list; the
// two agree for every model llama.cpp accepts).
export function modelVocabSize(model) {
  const t = model.fileInfo?.fullTensorInfo?.find((x) => x.name === "token_embd.weight") ??
    model.fileInfo?.tensorInfo?.find((x) => x.name === "token_embd.weight");
  if (t == null || t.dimensions?.length !== 2) return null;
  return Number(t.dimensions[1]);
}

// ----------------------------------------------------------------------------
// Distributions

export function centredLogProbs(probs, nVocab) {
  if (probs == null || probs.size !== nVocab) {
    throw new Error(`expected ${nVocab} probabilities, got ${probs == null ? "none" : probs.size}`);
  }
  const p = new Float64Array(nVocab).fill(-1);
  let pMax = 0;
  for (const [tok, v] of probs) {
    if (!(tok >= 0 && tok < nVocab) || p[tok] !== -1) throw new Error(`bad token ${tok} in distribution`);
    p[tok] = v;
    if (v > pMax) pMax = v;
  }
  if (!(pMax > 0)) throw new Error("distribution has no positive probability");
  const lMax = Math.log(pMax);
  const row = new Float32Array(nVocab);
  for (let i = 0; i < nVocab; i++) row[i] = p[i] > 0 ? Math.log(p[i]) - lMax : -Infinity;
  return row;
}

// ----------------------------------------------------------------------------
// Evaluation of one prompt

// opts: ids (array), at (array of positions), greedy (count), threads, kv ("f32"|"f16"), flash (bool),
// lora (array of { filePath, scale }: LoRA adapters loaded onto the context, applied in order)
// returns { nVocab, rows: Float32Array[] (one per `at`, centred log-probs), greedy: ids, info }
export async function evaluateIds(llamaHandle, model, opts) {
  const { mod } = llamaHandle;
  const { ids, at = [], greedy = 0, threads = 2, kv = "f32", flash = false, lora = [] } = opts;
  const nVocab = modelVocabSize(model);
  const kvType = kv === "f16" ? "F16" : "F32";
  const t0 = nowMs();
  const context = await model.createContext({
    contextSize: Math.max(ids.length + greedy + 1, 16),
    batchSize: Math.max(ids.length, 1),
    sequences: 1,
    flashAttention: flash,
    threads,
    experimentalKvCacheKeyType: kvType,
    experimentalKvCacheValueType: kvType,
    swaFullCache: false,
    ignoreMemorySafetyChecks: true,
    failedCreationRemedy: false,
    ...(lora.length > 0 ? { lora: { adapters: lora.map((l) => ({ filePath: path.resolve(l.filePath), scale: l.scale })) } } : {}),
  });
  try {
    const seq = context.getSequence();
    const t1 = nowMs();
    const atSet = new Set(at);
    const last = ids.length - 1;
    const input = ids.map((id, i) => {
      const wantProbs = atSet.has(i);
      const wantToken = greedy > 0 && i === last;
      if (!wantProbs && !wantToken) return id;
      return [id, { generateNext: { probabilities: wantProbs, token: wantToken, options: { temperature: 0 } } }];
    });
    const res = await seq.controlledEvaluate(input);
    const t2 = nowMs();

    const rows = at.map((p) => {
      const probs = res[p]?.next?.probabilities;
      if (probs == null) throw new Error(`no distribution returned for position ${p}`);
      return centredLogProbs(probs, nVocab ?? probs.size);
    });

    const out = [];
    if (greedy > 0) {
      let tok = res[last]?.next?.token;
      if (tok == null) throw new Error("no greedy token after the prompt");
      out.push(tok);
      while (out.length < greedy) {
        const r = await seq.controlledEvaluate([[tok, { generateNext: { token: true, options: { temperature: 0 } } }]]);
        tok = r[0]?.next?.token;
        if (tok == null) throw new Error(`no greedy token at step ${out.length}`);
        out.push(tok);
      }
    }
    const t3 = nowMs();
    const info = {
      context_size: context.contextSize,
      batch_size: context.batchSize,
      threads,
      flash_attention: context.flashAttention,
      kv_cache_key_type: mod.GgmlType[context.kvCacheKeyType] ?? context.kvCacheKeyType,
      kv_cache_value_type: mod.GgmlType[context.kvCacheValueType] ?? context.kvCacheValueType,
      timings_ms: { context: +(t1 - t0).toFixed(1), prompt: +(t2 - t1).toFixed(1), greedy: +(t3 - t2).toFixed(1) },
      prompt_tok_per_s: +(ids.length / ((t2 - t1) / 1000)).toFixed(1),
      decode_tok_per_s: greedy > 1 ? +((greedy - 1) / ((t3 - t2) / 1000)).toFixed(1) : null,
    };
    return { nVocab: nVocab ?? (rows[0]?.length ?? null), rows, greedy: out, info };
  } finally {
    await context.dispose();
  }
}

// ----------------------------------------------------------------------------
// Tokenization: common_tokenize(vocab, text, add_special = false, parse_special = true)

export function tokenizeTexts(model, texts) {
  return texts.map((t) => Array.from(model.tokenize(t, true)));
}
