#!/usr/bin/env node
// ----------------------------------------------------------------------------
// llama_tokenize.mjs: llama.cpp's tokenizer (node-llama-cpp 3.21.1) over a corpus file.
//
//   node llama_tokenize.mjs --model M.gguf --corpus FILE [--out FILE]
//
// Prints (or writes to --out) a JSON array with one array of ids per corpus text, in file order.
// The call is common_tokenize(vocab, text, add_special = false, parse_special = true), i.e.
// LlamaModel.tokenize(text, true): special/control tokens written in the text ("<start_of_turn>",
// "<escape>", ...) become their ids, and no BOS/EOS is added. Corpus format: see corpus.mjs.

import fs from "node:fs";
import { UsageError, die, parseArgs } from "./common.mjs";
import { openLlama, openModel, tokenizeTexts } from "./llama_core.mjs";
import { readCorpus } from "./corpus.mjs";

const SPEC = { model: "str", corpus: "str", out: "str", help: "bool" };
const USAGE = "usage: llama_tokenize.mjs --model M.gguf --corpus FILE [--out FILE]";

async function run(a) {
  const cases = readCorpus(a.corpus);
  const { llama } = await openLlama({ threads: 1 });
  // vocabOnly: the tokenizer needs no weights
  const model = await openModel(llama, a.model, { vocabOnly: true });
  const ids = tokenizeTexts(model, cases.map((c) => c.text));
  const json = "[\n" + ids.map((row) => "  " + JSON.stringify(row)).join(",\n") + "\n]\n";
  if (a.out) fs.writeFileSync(a.out, json);
  else process.stdout.write(json);
  await model.dispose();
  await llama.dispose();
}

let args;
try {
  args = parseArgs(process.argv.slice(2), SPEC);
  if (args.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  if (!args.model || !args.corpus) throw new UsageError("--model and --corpus are required");
  if (!fs.existsSync(args.model)) throw new UsageError(`model '${args.model}' does not exist`);
} catch (e) {
  if (e instanceof UsageError) die(`${e.message}\n${USAGE}`);
  throw e;
}
try {
  await run(args);
} catch (e) {
  die(`llama.cpp tokenization failed: ${e.stack ?? e}`, 1);
}
