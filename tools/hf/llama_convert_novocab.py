"""llama_convert_novocab.py — runs llama.cpp's own convert_hf_to_gguf.py on a Gemma 3 checkpoint without
its vocabulary step, to cross-check the tensors and gemma3.* keys `fgemma convert` writes (a dev check,
not CI: it needs torch). llama.cpp's converter reads Gemma 3's vocabulary only from tokenizer.model;
from tokenizer.json alone it takes the GPT-2 BPE path and stops ("BPE pre-tokenizer was not
recognized"), so the vocabulary is skipped here, and the embedding keeps all its rows.

  git clone -q tests/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle /tmp/llama-src
  cp tools/hf/llama_convert_novocab.py /tmp/llama-src/ && cd /tmp/llama-src
  PYTHONPATH=gguf-py:. /tmp/tv/bin/python llama_convert_novocab.py CKPT_DIR --outfile OUT.gguf --outtype f32|bf16|q8_0

Result on 2026-12-01 (docs/ORACLES.md "HF transformers goldens"): the tensors are byte-identical to
`fgemma convert --type f32|bf16|q8_0` for F32 and BF16 checkpoints of the small preset.
"""
import sys, runpy
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[1:]
import conversion.gemma as g
g.Gemma3Model.set_vocab = lambda self: None
_orig = g.Gemma3Model.modify_tensors
def mt(self, data_torch, name, bid):
    if "embed_tokens.weight" in name:  # keep every row (it trims to the tokenizer's size otherwise)
        f = g.Gemma3Model.norm_shift
        yield from g.TextModel.modify_tensors(self, data_torch, name, bid)
        return
    yield from _orig(self, data_torch, name, bid)
g.Gemma3Model.modify_tensors = mt
runpy.run_path("convert_hf_to_gguf.py", run_name="__main__")
