#!/usr/bin/env node
// ----------------------------------------------------------------------------
// check_llama.mjs: can node-llama-cpp load its prebuilt CPU binary, offline? (used by setup.sh)
// Prints one line and exits 0, or explains the failure and exits 1.

import { openLlama } from "./llama_core.mjs";

try {
  const { llama } = await openLlama({ threads: 1 });
  process.stdout.write(`llama.cpp prebuilt binary loads (build ${llama.buildType}, gpu ${llama.gpu}, ` +
    `llama.cpp release ${llama.llamaCppRelease?.release ?? "?"})\n`);
  await llama.dispose();
} catch (e) {
  process.stderr.write(`check_llama.mjs: ${e.message}\n`);
  process.exitCode = 1;
}
