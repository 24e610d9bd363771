#!/usr/bin/env python3
"""Trains tv-mini: a small Gemma 3 (Gemma3ForCausalLM, transformers 5.x) from scratch, with the real
262,144-token vocabulary and FunctionGemma's prompt format, on the data of make_data.py.

    python3 training/train.py --data training/data/tv-data.bin --out OUT [--time-budget 330]

Every example is <bos> + the 15-function TV catalog prefix (1,387 tokens, crossing the 512-token sliding
window as in production) + the utterance part + the answer; the loss is on the answer tokens only, and
the LM head is computed only at those positions and only over the rows of the tokens the data uses: the
embedding rows of every other token stay exactly zero (tied head: their logit is 0 everywhere), and the
loss adds their share of the softmax exactly (log of their count, see `answer_loss`), so it equals the
full-vocabulary cross-entropy. Zero rows compress to nothing in the shipped file.

Writes into OUT (small files only):
  config.json, generation_config.json     the HF checkpoint's config (tokenizer files are added locally)
  model.safetensors.xz[.NNN]              the weights in BF16, xz-compressed (split above --part-mib)
  train-log.jsonl                         one JSON object per logged step, then the evaluation
  eval.json                               dev/train exact match by greedy decoding, per intent, failures
  loss.png                                the loss curve
The full checkpoint (with tokenizer.json when --tokenizer is given) is written to --work.
"""
import time

T0 = time.time()  # the time budget counts from here, imports included

import argparse
import json
import glob
import lzma
import math
import os
import random
import shutil
import struct
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

UTT_SUFFIX_LEN = 5  # "<end_of_turn>", "\n", "<start_of_turn>", "model", "\n"


# ----------------------------------------------------------------------------------------------
# Data

class Split:
    def __init__(self, utt_len, ans_len, ids, offsets):
        self.utt_len, self.ans_len, self.ids, self.offsets = utt_len, ans_len, ids, offsets

    def __len__(self):
        return len(self.utt_len)

    def tail(self, i):
        o = self.offsets[i]
        return self.ids[o:o + self.utt_len[i] + self.ans_len[i]]


def load_data(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"FGTVDATA":
        raise SystemExit(f"{path}: not a tv-mini data file (bad magic)")
    version, n_prefix, n_train, n_dev, n_used = struct.unpack_from("<5I", b, 8)
    if version != 1:
        raise SystemExit(f"{path}: version {version}, expected 1")
    o = 28
    prefix = np.frombuffer(b, "<i4", n_prefix, o).astype(np.int64)
    o += 4 * n_prefix
    used = np.frombuffer(b, "<i4", n_used, o).astype(np.int64)
    o += 4 * n_used
    splits = []
    for n in (n_train, n_dev):
        ul = np.frombuffer(b, "<u4", n, o).astype(np.int64)
        o += 4 * n
        al = np.frombuffer(b, "<u4", n, o).astype(np.int64)
        o += 4 * n
        tot = int((ul + al).sum())
        ids = np.frombuffer(b, "<i4", tot, o).astype(np.int64)
        o += 4 * tot
        offsets = np.concatenate([[0], np.cumsum(ul + al)[:-1]]).astype(np.int64)
        splits.append(Split(ul, al, ids, offsets))
    if o != len(b):
        raise SystemExit(f"{path}: {len(b) - o} trailing bytes")
    return prefix, used, splits[0], splits[1]


class Batcher:
    """Padded tails (utterance + answer) of a split on the device, for fast batch assembly."""

    def __init__(self, split, prefix, device, prefix_len=None, lut=None):
        n = len(split)
        self.T = int((split.utt_len + split.ans_len).max())
        tails = np.zeros((n, self.T), np.int64)
        for i in range(n):
            t = split.tail(i)
            tails[i, :len(t)] = t
        if lut is not None:
            tails = lut[tails]
        self.tails = torch.from_numpy(tails).to(device)
        self.ul = torch.from_numpy(split.utt_len).to(device)
        self.al = torch.from_numpy(split.ans_len).to(device)
        p = prefix if prefix_len is None else np.concatenate([prefix[:1], prefix[len(prefix) - prefix_len + 1:]])
        if lut is not None:
            p = lut[p]
        self.prefix = torch.from_numpy(p).to(device)
        self.n = n

    def batch(self, idx, unk_id=None, unk_prob=0.0, gen=None):
        """tails (B, Tb): utterance + answer ids, right-padded; rows (M,) and cols (M,): where the answer
        tokens are in the tails; targets (M,): those tokens."""
        idx = torch.as_tensor(idx, device=self.tails.device)
        ul, al = self.ul[idx], self.al[idx]
        Tb = int((ul + al).max())
        tails = self.tails[idx, :Tb].clone()
        pos = torch.arange(Tb, device=tails.device)[None, :]
        is_ans = (pos >= ul[:, None]) & (pos < (ul + al)[:, None])
        if unk_id is not None and unk_prob > 0:
            # words the model never saw have zero embeddings at inference: teach it to read past them
            # (never a token that the answer copies, never the turn markers after the utterance)
            ans_tok = torch.where(is_ans, tails, torch.full_like(tails, -1))
            in_ans = (tails[:, :, None] == ans_tok[:, None, :]).any(-1)
            can = (pos < (ul - UTT_SUFFIX_LEN)[:, None]) & ~in_ans
            r = torch.rand(tails.shape, device=tails.device, generator=gen)
            tails = torch.where(can & (r < unk_prob), torch.full_like(tails, unk_id), tails)
        rows, cols = is_ans.nonzero(as_tuple=True)
        return tails, rows, cols, tails[rows, cols]


# ----------------------------------------------------------------------------------------------
# Model

def make_config(args, n_vocab=262144):
    from transformers import Gemma3TextConfig
    n_layer = args.layers
    layer_types = ["full_attention" if (i % 6) == 5 else "sliding_attention" for i in range(n_layer)]
    return Gemma3TextConfig(
        vocab_size=n_vocab, hidden_size=args.width, intermediate_size=args.ffn, num_hidden_layers=n_layer,
        num_attention_heads=args.heads, num_key_value_heads=1, head_dim=args.head_dim,
        query_pre_attn_scalar=args.head_dim,  # fgemma scales scores by 1/sqrt(head_dim)
        sliding_window=512, layer_types=layer_types, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, final_logit_softcapping=None,
        attn_logit_softcapping=None, bos_token_id=2, eos_token_id=1, pad_token_id=0, use_cache=False,
        initializer_range=0.02)


def build_model(args, used, attn="sdpa", n_vocab=262144):
    from transformers import Gemma3ForCausalLM
    cfg = make_config(args, n_vocab)
    cfg._attn_implementation = attn
    model = Gemma3ForCausalLM(cfg)
    emb = model.model.embed_tokens.weight
    with torch.no_grad():
        keep = torch.zeros(emb.shape[0], dtype=torch.bool)
        keep[torch.as_tensor(used)] = True
        emb[~keep] = 0.0
    assert model.lm_head.weight.data_ptr() == emb.data_ptr(), "the head must be tied to the embedding"
    return model


def load_init(model, run_dir, log, used):
    """Loads the BF16 weights an earlier run wrote (model.safetensors.xz or its parts) into model. The
    earlier run may have used other tokens (its data was generated differently): rows of tokens that this
    data does not use are zeroed again (the loss counts their logit as exactly 0), rows it newly uses
    start at 0 and are trained."""
    from safetensors.torch import load as st_load
    parts = sorted(glob.glob(os.path.join(run_dir, "model.safetensors.xz.[0-9][0-9][0-9]")))
    single = os.path.join(run_dir, "model.safetensors.xz")
    files = parts or ([single] if os.path.exists(single) else [])
    if not files:
        raise SystemExit(f"--init: no model.safetensors.xz (or parts) in {run_dir}")
    blob = b"".join(open(f, "rb").read() for f in files)
    sd = st_load(lzma.decompress(blob))
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embedding
    if missing or unexpected:
        raise SystemExit(f"--init: weights do not fit the model (missing {missing}, unexpected {unexpected})")
    emb = model.model.embed_tokens.weight
    with torch.no_grad():
        keep = torch.zeros(emb.shape[0], dtype=torch.bool, device=emb.device)
        keep[torch.as_tensor(used, device=emb.device)] = True
        zeroed = int((emb[~keep] != 0).any(dim=1).sum())
        emb[~keep] = 0.0
    log({"event": "init", "from": run_dir, "tensors": len(sd), "rows_zeroed": zeroed})


def answer_loss(hidden, W_used, n_unused, targets_used):
    """Cross-entropy over the full vocabulary from the used rows only: every unused token has a zero row,
    so its logit is exactly 0 and the unused tokens add n_unused * exp(0) to the softmax denominator."""
    logits = hidden.float() @ W_used.float().t()  # (M, n_used)
    extra = torch.full((logits.shape[0], 1), math.log(n_unused), device=logits.device, dtype=logits.dtype)
    lse = torch.logsumexp(torch.cat([logits, extra], 1), 1)
    return (lse - logits.gather(1, targets_used[:, None])[:, 0]).mean(), logits


def hidden_states(model, ids):
    return model.model(input_ids=ids, use_cache=False).last_hidden_state


def answer_hidden(model, prefix, tails, rows, cols, prefix_once=True):
    """Final-normed hidden states at the positions that predict the answer tokens (the position before
    each): (M, d). Every sequence is prefix + tail. prefix_once: the prefix is run once (batch 1) and its
    KV cache repeated over the batch, so only the tails are computed B times; forward and gradients are
    those of the full sequences (the prefix's computation is the same in every row, and the cache
    operations are differentiable: test_train.py compares both paths)."""
    B, Tb = tails.shape
    P = prefix.shape[0]
    if not prefix_once:
        h = hidden_states(model, torch.cat([prefix[None, :].expand(B, P), tails], 1))
        return h.reshape(-1, h.shape[-1])[rows * (P + Tb) + P + cols - 1]
    out = model.model(input_ids=prefix[None, :], use_cache=True)
    cache = out.past_key_values
    cache.batch_repeat_interleave(B)
    pos = torch.arange(P, P + Tb, device=tails.device)
    h = model.model(input_ids=tails, past_key_values=cache, position_ids=pos[None, :].expand(B, Tb),
                    cache_position=pos, use_cache=True).last_hidden_state
    return h.reshape(-1, h.shape[-1])[rows * Tb + cols - 1]


# ----------------------------------------------------------------------------------------------
# Evaluation: greedy exact match by teacher forcing (greedy decoding reproduces the target exactly
# iff at every answer position the target is the argmax of the full logits, given the target prefix)

@torch.no_grad()
def evaluate(model, batcher, used_t, n_unused, bs, amp, device, prefix_once=True):
    model.eval()
    W = model.model.embed_tokens.weight[used_t]
    n = batcher.n
    ok = torch.zeros(n, dtype=torch.bool)
    first_bad = torch.full((n,), -1, dtype=torch.long)
    bad_pred = torch.full((n,), -1, dtype=torch.long)
    tot_loss, tot_tok = 0.0, 0
    for lo in range(0, n, bs):
        idx = torch.arange(lo, min(n, lo + bs))
        tails, rows, cols, targets = batcher.batch(idx)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            hs = answer_hidden(model, batcher.prefix, tails, rows, cols, prefix_once)
        tu = torch.searchsorted(used_t, targets)
        loss, logits = answer_loss(hs, W, n_unused, tu)
        tot_loss += float(loss) * len(targets)
        tot_tok += len(targets)
        best = logits.max(1)
        # an unused token (logit 0, the lowest unused id wins ties) beats the used ones when the best
        # used logit is below 0; a used token with a lower id than an unused one wins a tie at 0
        pred = used_t[best.indices]
        correct = (pred == targets) & (best.values > 0)
        for r in range(len(idx)):
            m = rows == r
            c = correct[m]
            ok[lo + r] = bool(c.all())
            if not c.all():
                j = int((~c).nonzero()[0])
                first_bad[lo + r] = j
                bad_pred[lo + r] = int(pred[m][j]) if float(best.values[m][j]) > 0 else -2
    model.train()
    return ok, first_bad, bad_pred, tot_loss / max(1, tot_tok)


# ----------------------------------------------------------------------------------------------
# Output

def write_weights(model, work, out, part_mib):
    """save_pretrained in BF16 into work/hf; copies the config files and the xz-compressed weights to out."""
    hf = os.path.join(work, "hf")
    if os.path.isdir(hf):
        shutil.rmtree(hf)
    model.to(torch.bfloat16).save_pretrained(hf, safe_serialization=True)
    model.float()
    for name in ("config.json", "generation_config.json"):
        if os.path.exists(os.path.join(hf, name)):
            shutil.copy(os.path.join(hf, name), os.path.join(out, name))
    src = os.path.join(hf, "model.safetensors")
    xz = os.path.join(work, "model.safetensors.xz")
    with open(src, "rb") as f, lzma.open(xz, "wb", preset=6) as g:
        shutil.copyfileobj(f, g, 1 << 22)
    size = os.path.getsize(xz)
    part = part_mib << 20
    names = []
    if size <= part:
        shutil.copy(xz, os.path.join(out, "model.safetensors.xz"))
        names.append("model.safetensors.xz")
    else:
        with open(xz, "rb") as f:
            k = 0
            while True:
                chunk = f.read(part)
                if not chunk:
                    break
                name = f"model.safetensors.xz.{k:03d}"
                with open(os.path.join(out, name), "wb") as g:
                    g.write(chunk)
                names.append(name)
                k += 1
    return hf, size, names


def plot_loss(log_steps, out_png, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps = [r["step"] for r in log_steps]
    loss = [r["loss"] for r in log_steps]
    k = max(1, len(loss) // 40)  # trailing mean over 1/40 of the run
    smooth = [sum(loss[max(0, i - k + 1):i + 1]) / (i + 1 - max(0, i - k + 1)) for i in range(len(loss))]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(steps, loss, lw=0.6, alpha=0.35, color="C0")
    ax.plot(steps, smooth, lw=1.2, color="C0", label="train loss (answer tokens, smoothed)")
    ev = [r for r in log_steps if r.get("dev_loss") is not None]
    if ev:
        ax.plot([r["step"] for r in ev], [r["dev_loss"] for r in ev], "o-", ms=3, color="C1", label="dev loss")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    lines, labels = ax.get_legend_handles_labels()
    ex = [r for r in log_steps if r.get("dev_exact") is not None]
    if ex:
        ax2 = ax.twinx()
        ax2.plot([r["step"] for r in ex], [100 * r["dev_exact"] for r in ex], "s--", ms=3, color="C2",
                 label="dev exact match (%)")
        ax2.set_ylabel("dev exact match (%)")
        ax2.set_ylim(0, 100)
        l2, lb2 = ax2.get_legend_handles_labels()
        lines, labels = lines + l2, labels + lb2
    ax.legend(lines, labels, loc="center right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# Main

def main():
    t_start = T0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, help="small outputs (config, compressed weights, log, PNG)")
    ap.add_argument("--work", default=None, help="full checkpoint directory (default: OUT/../tv-mini-work)")
    ap.add_argument("--tokenizer", default=None, help="FunctionGemma tokenizer.json (make_tokenizer.py): "
                    "checked against the data's ids and copied into the full checkpoint")
    ap.add_argument("--time-budget", type=float, default=330.0,
                    help="seconds from start to the end of training (evaluation and saving come after)")
    ap.add_argument("--steps", type=int, default=100000, help="upper bound on optimizer steps")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--wd", type=float, default=0.05)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--unk-prob", type=float, default=0.04, help="utterance tokens replaced by a zero-row token")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=0, help="dev loss every N steps (0 = only at the end)")
    ap.add_argument("--eval-batch", type=int, default=128)
    ap.add_argument("--prefix-len", type=int, default=None, help="debug: keep only <bos> + the last N-1 "
                    "prefix tokens (fast CPU runs; the real model trains on the whole prefix)")
    ap.add_argument("--compact-vocab", action="store_true", help="debug: a model whose vocabulary is only the "
                    "used tokens (+1 zero row); same loss, much faster on a CPU; nothing is saved")
    ap.add_argument("--train-limit", type=int, default=None, help="debug: use only the first N training examples")
    ap.add_argument("--dev-jsonl", default=None, help="dev set JSONL (same order as the data) for the report")
    ap.add_argument("--full-sequences", action="store_true", help="run every prefix + tail as one sequence "
                    "(B copies of the prefix) instead of the prefix once per step with its KV cache repeated")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--amp", choices=["auto", "on", "off"], default="auto",
                    help="bf16 autocast for training: auto = on a GPU only (on: also on a CPU, to test the path)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--part-mib", type=int, default=15, help="split the compressed weights above this size")
    ap.add_argument("--no-save", action="store_true", help="debug: skip writing the weights")
    ap.add_argument("--init", default=None, help="continue from the weights of an earlier run: a directory with "
                    "model.safetensors.xz (or its .000, .001, ... parts), as this script writes into --out")
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    work = args.work or os.path.join(os.path.dirname(os.path.abspath(args.out)), "tv-mini-work")
    os.makedirs(work, exist_ok=True)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    amp = device.type == "cuda" if args.amp == "auto" else args.amp == "on"
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    log_f = open(os.path.join(args.out, "train-log.jsonl"), "w")

    def log(obj):
        obj = {"t": round(time.time() - t_start, 2), **obj}
        log_f.write(json.dumps(obj) + "\n")
        log_f.flush()
        print(json.dumps(obj), flush=True)

    prefix, used, train, dev = load_data(args.data)
    if args.train_limit:
        train = Split(train.utt_len[:args.train_limit], train.ans_len[:args.train_limit], train.ids,
                      train.offsets[:args.train_limit])
    n_vocab = 262144
    n_unused = n_vocab - len(used)
    used_set = set(int(x) for x in used)
    unk_id = next(i for i in range(1000, n_vocab) if i not in used_set)
    lut = None
    if args.compact_vocab:  # ids -> 0..n_used-1, unused ids -> n_used (one zero row)
        lut = np.full(n_vocab, len(used), np.int64)
        lut[used] = np.arange(len(used))
        used, n_vocab, unk_id, args.no_save = np.arange(len(used)), len(used) + 1, len(used), True
    used_t = torch.as_tensor(used, device=device)
    import transformers
    log({"event": "start", "torch": torch.__version__, "transformers": transformers.__version__,
         "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu", "n_train": len(train),
         "n_dev": len(dev), "n_prefix": len(prefix), "n_used": len(used), "unk_id": unk_id, "args": vars(args)})

    if args.tokenizer:
        check_tokenizer(args.tokenizer, prefix, dev, args.dev_jsonl, log)

    model = build_model(args, used, args.attn, n_vocab).to(device)
    if args.init:
        load_init(model, args.init, log, used)
    n_params = sum(p.numel() for p in model.parameters())
    n_embd_used = len(used) * args.width
    log({"event": "model", "params_total": n_params, "params_nonzero_embedding": n_embd_used,
         "params_blocks": n_params - n_vocab * args.width, "config": model.config.to_diff_dict()})

    tb = Batcher(train, prefix, device, args.prefix_len, lut)
    db = Batcher(dev, prefix, device, args.prefix_len, lut)
    emb = model.model.embed_tokens.weight
    keep = torch.zeros(n_vocab, 1, device=device)
    keep[used_t] = 1.0
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or "embed" in name else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-8)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    order_rng = np.random.default_rng(args.seed)
    perm, perm_pos = order_rng.permutation(len(train)), 0

    total_steps = args.steps  # re-planned at step 60 from the measured step time
    t_10 = None
    step, t_train0 = 0, time.time()
    log_rows = []
    stop_reason = "steps"
    model.train()
    while step < total_steps:
        elapsed = time.time() - t_start
        if elapsed > args.time_budget:
            stop_reason = "time_budget"
            break
        if perm_pos + args.batch > len(perm):
            perm, perm_pos = order_rng.permutation(len(train)), 0
        idx = perm[perm_pos:perm_pos + args.batch]
        perm_pos += args.batch
        tails, rows, cols, targets = tb.batch(idx, unk_id, args.unk_prob, gen)
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            frac = min(1.0, (step - args.warmup) / max(1, total_steps - args.warmup))
            lr = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            hs = answer_hidden(model, tb.prefix, tails, rows, cols, not args.full_sequences)
        loss, _ = answer_loss(hs, emb[used_t], n_unused, torch.searchsorted(used_t, targets))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        emb.grad.mul_(keep)  # unused rows (and the zero-row token of the augmentation) stay exactly zero
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        step += 1
        if step % args.log_every == 0 or step == 1:
            row = {"step": step, "loss": round(float(loss.detach()), 5), "lr": round(lr, 7), "gnorm": round(float(gnorm), 4),
                   "tail_tokens": int(tails.numel())}
            log_rows.append(row)
            log(row)
        if step == 10:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t_10 = time.time()
        if step in (60, 300) and t_10 is not None:
            # planned at step 60, and again at 300: the first steps run slower (GPU warm-up), so a plan
            # from them alone stopped run 1 at half its budget
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.time() - t_10) / (step - 10)
            left = args.time_budget - (time.time() - t_start)
            total_steps = min(args.steps, step + max(1, int(left / per_step)))
            log({"event": "plan", "sec_per_step": round(per_step, 4), "total_steps": total_steps,
                 "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2 ** 30, 2) if device.type == "cuda" else None})
        if args.eval_every and step % args.eval_every == 0:
            ok, _, _, dl = evaluate(model, db, used_t, n_unused, args.eval_batch, amp, device, not args.full_sequences)
            if log_rows and log_rows[-1]["step"] == step:
                log_rows[-1]["dev_loss"] = round(dl, 5)
                log_rows[-1]["dev_exact"] = round(float(ok.float().mean()), 4)
            log({"event": "dev", "step": step, "dev_loss": round(dl, 5), "dev_exact": round(float(ok.float().mean()), 4)})
    t_train = time.time() - t_train0
    log({"event": "trained", "steps": step, "stop": stop_reason, "train_s": round(t_train, 1),
         "examples_seen": step * args.batch})
    emb_zero = bool((emb.detach()[keep[:, 0] == 0] == 0).all())

    # evaluation: F32 weights, then the BF16 weights that are shipped
    report = {"steps": step, "stop": stop_reason, "train_s": round(t_train, 1), "unused_rows_zero": emb_zero}
    dev_lines = None
    if args.dev_jsonl and os.path.exists(args.dev_jsonl):
        with open(args.dev_jsonl, encoding="utf-8") as f:
            dev_lines = [json.loads(line) for line in f if line.strip()]
        if len(dev_lines) != len(dev):
            dev_lines = None
    sub = Split(train.utt_len[:len(dev)], train.ans_len[:len(dev)], train.ids, train.offsets[:len(dev)])
    sb = Batcher(sub, prefix, device, args.prefix_len, lut)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    for tag in ("f32", "bf16"):
        if tag == "bf16":
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(torch.bfloat16).float())
        # F32 compute (no autocast, no TF32), as fgemma computes
        ok, fb, bp, dl = evaluate(model, db, used_t, n_unused, args.eval_batch, False, device, not args.full_sequences)
        ok_tr, _, _, tl = evaluate(model, sb, used_t, n_unused, args.eval_batch, False, device, not args.full_sequences)
        r = {"dev_exact": round(float(ok.float().mean()), 4), "dev_loss": round(dl, 5),
             "train_exact": round(float(ok_tr.float().mean()), 4), "train_loss": round(tl, 5)}
        if dev_lines:
            per = {}
            for i, d in enumerate(dev_lines):
                k = d.get("intent", "?")
                a, b = per.get(k, (0, 0))
                per[k] = (a + int(ok[i]), b + 1)
            r["dev_per_intent"] = {k: f"{a}/{b}" for k, (a, b) in sorted(per.items())}
            r["dev_failures"] = [{"utterance": dev_lines[i]["utterance"], "expected": dev_lines[i]["expected"],
                                  "first_wrong_answer_token": int(fb[i]), "predicted_id": int(bp[i])}
                                 for i in range(len(dev_lines)) if not ok[i]][:200]
        report[tag] = r
        log({"event": "eval", "weights": tag, **{k: v for k, v in r.items() if k not in ("dev_failures", "dev_per_intent")}})
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)

    plot_loss(log_rows, os.path.join(args.out, "loss.png"),
              f"tv-mini: {args.layers} layers, width {args.width}, {step} steps x {args.batch}, "
              f"dev exact {report['bf16']['dev_exact']:.3f} (bf16)")
    if not args.no_save:
        hf, size, names = write_weights(model, work, args.out, args.part_mib)
        if args.tokenizer:
            shutil.copy(args.tokenizer, os.path.join(hf, "tokenizer.json"))
            cfg = os.path.join(os.path.dirname(args.tokenizer), "tokenizer_config.json")
            if os.path.exists(cfg):
                shutil.copy(cfg, os.path.join(hf, "tokenizer_config.json"))
        log({"event": "saved", "checkpoint": hf, "weights_xz_bytes": size, "files": names})
    log({"event": "done", "wall_s": round(time.time() - t_start, 1)})
    log_f.close()


def check_tokenizer(path, prefix, dev, dev_jsonl, log):
    """The HF tokenizer (tokenizers library) gives the same ids as fgemma for the dev utterances (an
    independent check of the data; the prefix and the answers contain control tokens, checked too)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        log({"event": "tokenizer_check", "skipped": "no tokenizers module"})
        return
    tok = Tokenizer.from_file(path)
    text = tok.decode([int(x) for x in prefix[1:]], skip_special_tokens=False)
    prefix_ok = tok.encode(text, add_special_tokens=False).ids == [int(x) for x in prefix[1:]]
    n_ok = n = 0
    bad = []
    if dev_jsonl and os.path.exists(dev_jsonl):
        with open(dev_jsonl, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        for i, d in enumerate(lines[:len(dev)]):
            text = d["utterance"].strip() + "<end_of_turn>\n<start_of_turn>model\n"
            ids = tok.encode(text, add_special_tokens=False).ids
            want = list(dev.tail(i)[:dev.utt_len[i]])
            n += 1
            n_ok += ids == want
            if ids != want and len(bad) < 5:
                bad.append({"text": d["utterance"], "hf": ids, "fgemma": want})
    log({"event": "tokenizer_check", "prefix_roundtrip_equal": prefix_ok, "utterances": n, "equal": n_ok,
         "examples": bad})


if __name__ == "__main__":
    main()
