// ----------------------------------------------------------------------------
// Tokenizer corpus files: one text per line, UTF-8.
//
// - the line break ends a text and is not part of it (a trailing "\r" is kept: it is content);
// - lines that are empty, that are exactly "#", or that start with "# " are skipped (the same rule
//   as tests/data/tokenizer_corpus.txt, so "#hashtag" is a text);
// - inside a line, "\n", "\t", "\r" and "\\" are escapes for a newline, a tab, a carriage
//   return and a backslash, and "\u{HHHH}" stands for that code point; any other backslash is kept
//   as it is. This lets a one-line case hold multi-line or whitespace-only text.
// Every text must be non-empty after decoding and must not contain NUL (it travels through argv).

import fs from "node:fs";

export function decodeCorpusLine(line) {
  let out = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c !== "\\" || i + 1 >= line.length) {
      out += c;
      continue;
    }
    const n = line[i + 1];
    if (n === "n") { out += "\n"; i++; }
    else if (n === "t") { out += "\t"; i++; }
    else if (n === "r") { out += "\r"; i++; }
    else if (n === "\\") { out += "\\"; i++; }
    else if (n === "u" && line[i + 2] === "{") {
      const end = line.indexOf("}", i + 3);
      const hex = end < 0 ? "" : line.slice(i + 3, end);
      if (!/^[0-9A-Fa-f]{1,6}$/.test(hex) || parseInt(hex, 16) > 0x10ffff) {
        throw new Error(`bad \\u{...} escape in corpus line: ${JSON.stringify(line)}`);
      }
      out += String.fromCodePoint(parseInt(hex, 16));
      i = end;
    } else {
      out += c;
    }
  }
  return out;
}

export function readCorpus(file) {
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n");
  const cases = [];
  lines.forEach((line, idx) => {
    if (line.length === 0 || line === "#" || line.startsWith("# ")) return;
    const decoded = decodeCorpusLine(line);
    if (decoded.length === 0) return;
    if (decoded.includes("\0")) throw new Error(`${file}:${idx + 1}: NUL is not allowed`);
    cases.push({ line: idx + 1, text: decoded });
  });
  if (cases.length === 0) throw new Error(`${file}: no texts`);
  return cases;
}
