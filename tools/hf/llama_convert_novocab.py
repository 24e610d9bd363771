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
