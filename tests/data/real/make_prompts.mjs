#!/usr/bin/env node
// ----------------------------------------------------------------------------
// make_prompts.mjs: writes prompts.jsonl, the prompt set of the llama.cpp parity test on the real
// Gemma 3 270M (tests/oracle/real_parity.mjs). Run from the repository root after a build:
//
//   node tests/data/real/make_prompts.mjs build/fgemma > tests/data/real/prompts.jsonl
//
// English and German texts are written here; the FunctionGemma tool prompts are rendered by
// `fgemma prompt --tools CATALOG UTTERANCE` over the catalogs in tests/data/nlu (copies of
// shared/data), so they are as long as the catalog (819-1,387 tokens: past the 512-position sliding
// window). One JSON object per line: id, kind (en | de | tool), text (the runtime adds <bos>); tool
// prompts also name their catalog and utterance.

import { execFileSync } from "node:child_process";

const fgemma = process.argv[2];
if (!fgemma) {
  process.stderr.write("usage: make_prompts.mjs FGEMMA_BIN > prompts.jsonl\n");
  process.exit(2);
}

const en = [
  "The capital of France is",
  "Here is a short story about a lighthouse keeper who finds a message in a bottle:",
  "Explain in simple words why the sky is blue.",
  "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
  "Q: What is the boiling point of water at sea level in degrees Celsius?\nA:",
  "List three advantages of running a language model on the device instead of in the cloud:\n1.",
  "The quick brown fox jumps over the lazy dog. This sentence is famous because",
  "Dear customer,\n\nthank you for your order. Unfortunately,",
];
const de = [
  "Die Hauptstadt von Deutschland ist",
  "Es war einmal ein kleines Dorf am Rande eines großen Waldes. Dort lebte",
  "Erkläre mir bitte, wie ein Kühlschrank funktioniert.",
  "Frage: Wie viele Bundesländer hat Deutschland?\nAntwort:",
  "Sehr geehrte Damen und Herren,\n\nhiermit kündige ich meinen Vertrag zum nächstmöglichen Zeitpunkt, weil",
  "Das Wetter morgen in Hamburg: vormittags bewölkt, nachmittags",
  "Übersetze ins Englische: „Ich würde gerne einen Tisch für zwei Personen reservieren.“",
];
const tools = [
  ["tests/data/nlu/tv-catalog-small.json", "Schalte auf ZDF um"],
  ["tests/data/nlu/tv-catalog-small.json", "Mach bitte etwas lauter"],
  ["tests/data/nlu/tv-catalog-small.json", "Nimm heute Abend den Tatort um 20:15 im Ersten auf"],
  ["tests/data/nlu/tv-catalog-small.json", "Turn on the subtitles in English, please"],
  ["tests/data/nlu/tv-catalog.json", "Erinnere mich fünf Minuten vor der Tagesschau"],
];

const out = [];
en.forEach((text, i) => out.push({ id: `en-${String(i + 1).padStart(2, "0")}`, kind: "en", text }));
de.forEach((text, i) => out.push({ id: `de-${String(i + 1).padStart(2, "0")}`, kind: "de", text }));
tools.forEach(([catalog, utterance], i) => {
  const text = execFileSync(fgemma, ["prompt", "--tools", catalog, utterance], { encoding: "utf8" });
  out.push({ id: `tool-${String(i + 1).padStart(2, "0")}`, kind: "tool", catalog, utterance, text });
});
for (const o of out) process.stdout.write(JSON.stringify(o) + "\n");
