#!/usr/bin/env python3
"""Local checks of train.py with the accelerator machine's versions (torch 2.11, transformers 5.17) on a
CPU, at toy scale. Run before a device run:

    python training/test_train.py [--data training/data/tv-data.bin] [--quick]

1. Sliding window in transformers' SDPA path: eager and SDPA attention give the same logits at positions
   before and past 512 (float32), and the window is really applied (a model with the window widened to
   4096 agrees before position 512 and differs after it).
2. The loss from the used rows equals the cross-entropy of the full 262,144-row tied head, and running
   the prefix once per batch (its KV cache repeated) gives the full sequences' loss and gradients.
3. --init: loading an earlier run's weights zeroes the rows of tokens the new data does not use.
4. End to end: train.py runs a few steps with the real vocabulary (bf16 autocast, as on the GPU), keeps every unused embedding row
   exactly zero, and writes the outputs the device command brings back (the compressed weights load
   into Gemma3ForCausalLM and are BF16 with the unused rows zero).
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train as T  # noqa: E402

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


class Args:
    width, ffn, layers, heads, head_dim = 64, 128, 6, 4, 16


def toy_model(attn, window=512, vocab=512):
    from transformers import Gemma3ForCausalLM
    cfg = T.make_config(Args, vocab)
    cfg.sliding_window = window
    cfg._attn_implementation = attn
    torch.manual_seed(7)
    m = Gemma3ForCausalLM(cfg).float().eval()
    with torch.no_grad():  # sharper attention than the default init, so that the mask matters
        for layer in m.model.layers:
            layer.self_attn.q_proj.weight.mul_(8.0)
            layer.self_attn.k_proj.weight.mul_(8.0)
    return m


def test_sliding_window():
    torch.manual_seed(3)
    ids = torch.randint(4, 512, (1, 700))
    at = [0, 300, 511, 512, 600, 699]
    with torch.no_grad():
        le = toy_model("eager")(ids).logits[0, at]
        ls = toy_model("sdpa")(ids).logits[0, at]
        lw = toy_model("sdpa", window=4096)(ids).logits[0, at]
    d = (le - ls).abs().max(-1).values
    check(bool((d < 1e-4).all()), f"eager vs sdpa, positions {at}: max |diff| {[f'{x:.2e}' for x in d.tolist()]}")
    dw = (ls - lw).abs().max(-1).values
    check(bool((dw[:3] < 1e-4).all()) and bool((dw[3:] > 1e-3).all()),
          f"window 512 vs 4096: equal before 512, different after: {[f'{x:.2e}' for x in dw.tolist()]}")


def test_loss_exact():
    from transformers import Gemma3ForCausalLM
    cfg = T.make_config(Args, 262144)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(5)
    m = Gemma3ForCausalLM(cfg).float().eval()
    rng = np.random.default_rng(1)
    used = np.sort(rng.choice(262144, 300, replace=False))
    with torch.no_grad():
        keep = torch.zeros(262144, dtype=torch.bool)
        keep[torch.as_tensor(used)] = True
        m.model.embed_tokens.weight[~keep] = 0.0
        m.model.embed_tokens.weight.mul_(20.0)  # logits of a few units, not all near 0
        ids = torch.as_tensor(rng.choice(used, (2, 40)))
        h = T.hidden_states(m, ids)
        pos = torch.tensor([5, 17, 39, 45, 60, 79])
        hs = h.reshape(-1, h.shape[-1])[pos]
        targets = ids.reshape(-1)[pos]
        # float64: in float32 the 262k terms exp(0 - max) of the zero rows are lost one by one in the sum
        full = torch.nn.functional.cross_entropy(m.lm_head(hs).double(), targets)
        used_t = torch.as_tensor(used)
        mine, _ = T.answer_loss(hs, m.model.embed_tokens.weight[used_t], 262144 - len(used),
                                torch.searchsorted(used_t, targets))
    check(abs(float(full) - float(mine)) < 1e-5 * max(1.0, abs(float(full))),
          f"loss over used rows {float(mine):.6f} == full-vocabulary cross-entropy {float(full):.6f}")


def test_prefix_once(data):
    """The prefix run once with its KV cache repeated over the batch gives the loss and the gradients of
    the full sequences (real 1,387-token prefix, so the sliding layers' cache is cropped to the window)."""
    prefix, used, train, _ = T.load_data(data)
    dev = torch.device("cpu")
    b = T.Batcher(T.Split(train.utt_len[:4], train.ans_len[:4], train.ids, train.offsets[:4]), prefix, dev)
    tails, rows, cols, targets = b.batch(np.arange(4), unk_id=None)
    m = T.build_model(Args, used).float()
    with torch.no_grad():
        for layer in m.model.layers:
            layer.self_attn.q_proj.weight.mul_(4.0)
            layer.self_attn.k_proj.weight.mul_(4.0)
    used_t = torch.as_tensor(used)
    res = []
    for once in (False, True):
        m.zero_grad(set_to_none=True)
        hs = T.answer_hidden(m, b.prefix, tails, rows, cols, once)
        loss, _ = T.answer_loss(hs, m.model.embed_tokens.weight[used_t], 262144 - len(used),
                                torch.searchsorted(used_t, targets))
        loss.backward()
        res.append((float(loss), {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}))
    (l0, g0), (l1, g1) = res
    rel = max(float((g1[n] - g0[n]).abs().max() / (g0[n].abs().max() + 1e-30)) for n in g0)
    check(abs(l0 - l1) < 1e-5 * abs(l0) and set(g0) == set(g1) and rel < 1e-3,
          f"prefix once + repeated cache == full sequences: loss {l1:.6f} vs {l0:.6f}, worst gradient rel diff {rel:.1e}")


def test_init_rezero():
    """--init from a run whose data used other tokens: rows this data does not use are zero again (the
    loss counts their logit as 0), rows used by both keep the loaded weights, newly used rows start at 0."""
    from safetensors.torch import save
    used_a, used_b = [0, 1, 2, 10, 11], [0, 1, 2, 20, 21]
    a = T.build_model(Args, used_a, "eager", n_vocab=512)
    sd = {k: v.to(torch.bfloat16).contiguous() for k, v in a.state_dict().items() if k != "lm_head.weight"}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "model.safetensors.xz"), "wb") as f:
            f.write(lzma.compress(save(sd)))
        b = T.build_model(Args, used_b, "eager", n_vocab=512)
        logs = []
        T.load_init(b, tmp, logs.append, used_b)
    emb, old = b.model.embed_tokens.weight, sd["model.embed_tokens.weight"].float()
    check(bool((emb[10:12] == 0).all()) and bool((emb[20:22] == 0).all()) and torch.equal(emb[:3], old[:3]) and
          bool((emb[:3] != 0).any()) and logs[-1]["rows_zeroed"] == 2,
          "--init: rows the data does not use are zeroed, shared rows loaded, new rows start at 0")


def test_end_to_end(data, quick):
    from safetensors.torch import load_file
    from transformers import Gemma3ForCausalLM
    with tempfile.TemporaryDirectory() as tmp:
        out, work = os.path.join(tmp, "out"), os.path.join(tmp, "work")
        cmd = [sys.executable, os.path.join(HERE, "train.py"), "--data", data, "--out", out, "--work", work,
               "--width", "32", "--ffn", "64", "--head-dim", "16", "--prefix-len", "24", "--batch", "4",
               "--steps", "4", "--warmup", "1", "--train-limit", "64", "--log-every", "1", "--threads", "1",
               "--eval-every", "2", "--amp", "on",
               "--dev-jsonl", os.path.join(HERE, "tv-dev.jsonl")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, "train.py runs (exit 0)" + ("" if r.returncode == 0 else ": " + r.stderr[-2000:]))
        if r.returncode != 0:
            return
        names = sorted(os.listdir(out))
        check(names == ["config.json", "eval.json", "generation_config.json", "loss.png", "model.safetensors.xz",
                        "train-log.jsonl"], f"outputs: {names}")
        ev = json.load(open(os.path.join(out, "eval.json")))
        check(ev["unused_rows_zero"] is True and ev["steps"] == 4, "unused embedding rows exactly zero after training")
        check(set(ev["bf16"]) >= {"dev_exact", "dev_loss", "train_exact", "dev_per_intent", "dev_failures"},
              "eval.json has the dev report")
        log = [json.loads(line) for line in open(os.path.join(out, "train-log.jsonl"))]
        check([r_["step"] for r_ in log if "step" in r_ and "loss" in r_] == [1, 2, 3, 4], "one log row per step")
        check([r_["step"] for r_ in log if r_.get("event") == "dev"] == [2, 4], "a dev evaluation every 2 steps")
        cfg = json.load(open(os.path.join(out, "config.json")))
        check(cfg["sliding_window"] == 512 and cfg["layer_types"][5] == "full_attention" and
              cfg["layer_types"][:5] == ["sliding_attention"] * 5 and cfg["vocab_size"] == 262144 and
              cfg["tie_word_embeddings"] is True and cfg["query_pre_attn_scalar"] == cfg["head_dim"],
              "config: window 512, layers 0-4 sliding, 5 global, real vocabulary, tied, scale 1/sqrt(head_dim)")
        st = os.path.join(tmp, "model.safetensors")
        with lzma.open(os.path.join(out, "model.safetensors.xz")) as f, open(st, "wb") as g:
            g.write(f.read())
        w = load_file(st)
        emb = w["model.embed_tokens.weight"]
        used = T.load_data(data)[1]
        keep = torch.zeros(emb.shape[0], dtype=torch.bool)
        keep[torch.as_tensor(used)] = True
        check(emb.dtype == torch.bfloat16 and bool((emb[~keep] == 0).all()) and bool((emb[keep] != 0).any()),
              "weights: BF16, unused rows zero, used rows not")
        hf = os.path.join(tmp, "hf")
        os.makedirs(hf)
        for n in ("config.json", "generation_config.json"):
            os.replace(os.path.join(out, n), os.path.join(hf, n))
        os.replace(st, os.path.join(hf, "model.safetensors"))
        m = Gemma3ForCausalLM.from_pretrained(hf)
        check(m.config.num_hidden_layers == 6 and m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr(),
              "the checkpoint loads with Gemma3ForCausalLM.from_pretrained (tied head)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "data", "tv-data.bin"))
    ap.add_argument("--quick", action="store_true", help="skip the end-to-end run")
    args = ap.parse_args()
    torch.set_num_threads(1)
    test_sliding_window()
    test_loss_exact()
    test_prefix_once(args.data)
    test_init_rezero()
    if not args.quick:
        test_end_to_end(args.data, args.quick)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
