#!/usr/bin/env python3
"""Teaches google/gemma-3-270m a catalog with a LoRA adapter (tv-270m, and `fgemma tune`'s adapters), on a torch machine.

    python3 training/train_lora.py --base BASE.gguf --data tv270m-data.bin --golden golden.npz --out OUT

The frozen base is exactly the weights fgemma runs: the real Q4_K_M file (its SHA-256 is checked),
every tensor dequantized with the `gguf` package's numpy code (bit for bit fgemma's dequantization,
tests/real.cmake) into a transformers Gemma3ForCausalLM in float32. Before training, the model's
logits on a 600-token prompt are compared with what fgemma's plain-C reference forward computed on
the same file (--golden, made by training/make_golden.sh): a wrong tensor mapping, norm offset or
attention window stops the run there.

Training: PEFT LoRA (the `peft` package) on the seven matrices of every layer; the data is
make_data.py's binary format (<bos> + the catalog prefix, then per example the utterance part and the
answer; the loss is on the answer tokens only). The catalog prefix runs once per step and its KV cache
is repeated over the batch (train.py's answer_hidden; test_train.py shows it gives the loss and the
gradients of the full sequences). The loss uses the full 262,144-row tied head (frozen).

Writes into OUT (small files only):
  adapter/adapter_config.json, adapter/adapter_model.safetensors   the adapter as peft saves it
  adapter/fgemma_vocab_override.json                               FunctionGemma's control tokens at 46-52
  train-log.jsonl, eval.json, loss.png                             the log, dev exact match, the curve
"""
import time

T0 = time.time()  # the time budget counts from here, imports included

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import train as T  # noqa: E402  (data format, batching, prefix-once forward, plots)

# FunctionGemma's names of ids 46-52 (base Gemma 3: <unused40> ... <unused46>)
CONTROL_IDS = list(range(46, 53))
CONTROL_TOKENS = ["<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
                  "<end_function_call>", "<start_function_response>", "<end_function_response>", "<escape>"]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# GGUF tensor name (after "blk.N.") -> HF module path in Gemma3DecoderLayer, and whether it is a norm
# (GGUF norm weights hold Gemma's 1 + w; transformers' Gemma3RMSNorm stores w)
LAYER_MAP = {
    "attn_q.weight": ("self_attn.q_proj.weight", False), "attn_k.weight": ("self_attn.k_proj.weight", False),
    "attn_v.weight": ("self_attn.v_proj.weight", False), "attn_output.weight": ("self_attn.o_proj.weight", False),
    "attn_q_norm.weight": ("self_attn.q_norm.weight", True), "attn_k_norm.weight": ("self_attn.k_norm.weight", True),
    "attn_norm.weight": ("input_layernorm.weight", True),
    "post_attention_norm.weight": ("post_attention_layernorm.weight", True),
    "ffn_norm.weight": ("pre_feedforward_layernorm.weight", True),
    "post_ffw_norm.weight": ("post_feedforward_layernorm.weight", True),
    "ffn_gate.weight": ("mlp.gate_proj.weight", False), "ffn_up.weight": ("mlp.up_proj.weight", False),
    "ffn_down.weight": ("mlp.down_proj.weight", False),
}


# ----------------------------------------------------------------------------------------------
# The base: GGUF metadata and dequantized tensors


def logged_args(args):
    """the arguments as the log records them: paths in the repo relative to it, others as
    <outside>/NAME, so that logs committed to the repo name no machine's directories"""
    out = {}
    for k, v in vars(args).items():
        if isinstance(v, str) and os.path.isabs(v):
            inside = os.path.abspath(v).startswith(ROOT + os.sep)
            v = os.path.relpath(v, ROOT) if inside else "<outside>/" + os.path.basename(v.rstrip("/"))
        out[k] = v
    return out


def gguf_metadata(path):
    """Scalar and string metadata of a GGUF file (arrays skipped)."""
    scal = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    with open(path, "rb") as f:
        b = f.read(16 << 20)  # the header of a 270M file is ~6.5 MB (the vocabulary)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        v = b[pos:pos + n].decode("utf-8")
        pos += n
        return v

    if b[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    pos = 4
    _, _, n_kv = take("<I"), take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key, t = string(), take("<I")
        if t == 8:
            meta[key] = string()
        elif t == 9:
            et, n = take("<I"), take("<Q")
            if et == 8:
                for _ in range(n):
                    k = take("<Q")  # (not pos += take(...): that adds to the position before take moved it)
                    pos += k
            else:
                pos += n * struct.calcsize(scal[et])
        else:
            meta[key] = take(scal[t])
    return meta


def make_config(meta):
    from transformers import Gemma3TextConfig
    a = "gemma3."
    n_layer = meta[a + "block_count"]
    pattern = meta.get(a + "attention.sliding_window_pattern", 6)
    head_dim = meta[a + "attention.key_length"]
    layer_types = ["full_attention" if (i % pattern) == pattern - 1 else "sliding_attention" for i in range(n_layer)]
    return Gemma3TextConfig(
        vocab_size=262144, hidden_size=meta[a + "embedding_length"], intermediate_size=meta[a + "feed_forward_length"],
        num_hidden_layers=n_layer, num_attention_heads=meta[a + "attention.head_count"],
        num_key_value_heads=meta[a + "attention.head_count_kv"], head_dim=head_dim,
        query_pre_attn_scalar=head_dim,  # fgemma (and llama.cpp) scale scores by 1/sqrt(head_dim)
        sliding_window=meta[a + "attention.sliding_window"], layer_types=layer_types,
        max_position_embeddings=meta[a + "context_length"], rms_norm_eps=meta[a + "attention.layer_norm_rms_epsilon"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": meta[a + "rope.freq_base"]},
                         "sliding_attention": {"rope_type": "default",
                                               "rope_theta": meta.get(a + "rope.freq_base_swa", 10000.0)}},
        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, final_logit_softcapping=None,
        attn_logit_softcapping=None, bos_token_id=2, eos_token_id=1, pad_token_id=0, use_cache=False)


def load_base(path, sha256, log):
    """Gemma3ForCausalLM (float32, CPU) holding the dequantized tensors of the GGUF file."""
    import gguf_dequant as GD  # tests/oracle: the header reader and gguf.quants.dequantize
    import gguf.quants
    from transformers import Gemma3ForCausalLM
    if sha256:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
        if h.hexdigest() != sha256:
            raise SystemExit(f"{path}: SHA-256 {h.hexdigest()}, expected {sha256}")
    meta = gguf_metadata(path)
    if meta.get("general.architecture") != "gemma3":
        raise SystemExit(f"{path}: architecture {meta.get('general.architecture')}, expected gemma3")
    cfg = make_config(meta)
    cfg._attn_implementation = "sdpa"
    model = Gemma3ForCausalLM(cfg)
    sd = {}
    types = {}
    for name, type_id, ne, raw, qtype in GD.ref_tensors(path):
        w = np.ascontiguousarray(gguf.quants.dequantize(np.asarray(raw), qtype), dtype=np.float32)
        rows = ne[1] * ne[2] * ne[3]
        w = w.reshape(rows, ne[0]) if rows > 1 else w.reshape(ne[0])
        types[qtype.name] = types.get(qtype.name, 0) + 1
        if name == "token_embd.weight":
            sd["model.embed_tokens.weight"] = w
        elif name == "output_norm.weight":
            sd["model.norm.weight"] = w - 1.0
        elif name.startswith("blk."):
            _, layer, rest = name.split(".", 2)
            key, is_norm = LAYER_MAP[rest]
            sd[f"model.layers.{int(layer)}.{key}"] = w - 1.0 if is_norm else w
        else:
            raise SystemExit(f"{path}: unexpected tensor {name}")
    state = {k: torch.from_numpy(v) for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"base does not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    log({"event": "base", "file": os.path.basename(path), "tensors": len(sd), "types": types,
         "config": {k: v for k, v in cfg.to_diff_dict().items() if k in ("hidden_size", "num_hidden_layers",
                    "intermediate_size", "head_dim", "sliding_window", "layer_types")}})
    return model


def load_golden(golden):
    """make_golden.sh's .npz, or `fgemma tune`'s golden.json (ids, at) with the float32 logits beside it
    (golden.f32: len(at) rows of n_vocab, little-endian)."""
    if not golden.endswith(".json"):
        return np.load(golden)
    with open(golden, encoding="utf-8") as f:
        meta = json.load(f)
    raw = np.fromfile(os.path.splitext(golden)[0] + ".f32", dtype="<f4")
    if raw.size % len(meta["at"]):
        raise SystemExit(f"{golden}: the logits file holds {raw.size} floats, not a multiple of {len(meta['at'])} rows")
    return {"ids": np.asarray(meta["ids"], np.int32), "at": np.asarray(meta["at"], np.int32),
            "logits": raw.reshape(len(meta["at"]), -1)}


@torch.no_grad()
def check_golden(model, golden, device, log, tol):
    """The base's logits against fgemma's plain-C reference forward on the same file (make_golden.sh)."""
    g = load_golden(golden)
    ids = torch.as_tensor(g["ids"].astype(np.int64), device=device)[None, :]
    at = [int(x) for x in g["at"]]
    want = torch.as_tensor(g["logits"], device=device)  # (len(at), n_vocab)
    model.eval()
    h = model.model(input_ids=ids, use_cache=False).last_hidden_state[0, at]
    got = h.double() @ model.model.embed_tokens.weight.double().t()
    model.train()
    rel = float(((got - want.double()).abs().max(1).values / want.double().abs().max(1).values).max())
    top_ok = bool((got.argmax(1) == want.argmax(1)).all())
    log({"event": "golden", "positions": at, "max_rel_linf": rel, "top1_equal": top_ok, "tolerance": tol})
    if not (rel <= tol and top_ok):
        raise SystemExit(f"the base's logits differ from fgemma's reference forward: relative L-inf {rel:.3g} "
                         f"(tolerance {tol}), top-1 equal {top_ok}; the weights are mapped wrongly")


# ----------------------------------------------------------------------------------------------
# Loss and evaluation over the full tied head

def full_head_loss(hidden, E, targets):
    """Cross-entropy over all n_vocab rows of the frozen tied head E (n_vocab, d); hidden (M, d)."""
    logits = hidden.float() @ E.t()
    return F.cross_entropy(logits, targets), logits


@torch.no_grad()
def evaluate(inner, batcher, E, bs, device):
    """Greedy exact match by teacher forcing, F32, full head: an answer is right iff at every answer
    position its token is the argmax of all 262,144 logits (first index on ties, as fgemma)."""
    inner.eval()
    n = batcher.n
    ok = torch.zeros(n, dtype=torch.bool)
    first_bad = torch.full((n,), -1, dtype=torch.long)
    bad_pred = torch.full((n,), -1, dtype=torch.long)
    tot_loss, tot_tok = 0.0, 0
    for lo in range(0, n, bs):
        idx = torch.arange(lo, min(n, lo + bs))
        tails, rows, cols, targets = batcher.batch(idx)
        hs = T.answer_hidden(inner, batcher.prefix, tails, rows, cols, True)
        loss, logits = full_head_loss(hs, E, targets)
        tot_loss += float(loss) * len(targets)
        tot_tok += len(targets)
        pred = logits.argmax(1)
        correct = pred == targets
        for r in range(len(idx)):
            m = rows == r
            c = correct[m]
            ok[lo + r] = bool(c.all())
            if not c.all():
                j = int((~c).nonzero()[0])
                first_bad[lo + r] = j
                bad_pred[lo + r] = int(pred[m][j])
    inner.train()
    return ok, first_bad, bad_pred, tot_loss / max(1, tot_tok)


# ----------------------------------------------------------------------------------------------
# Main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the real gemma-3-270m Q4_K_M GGUF")
    ap.add_argument("--base-sha256", default="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                    help="refuse any other file ('' skips the check: local tests on other files)")
    ap.add_argument("--data", required=True, help="make_data.py's binary data (FGTVDATA)")
    ap.add_argument("--golden", default=None, help="fgemma's reference logits of the base: make_golden.sh's .npz, "
                    "or `fgemma tune`'s golden.json (with golden.f32 beside it)")
    ap.add_argument("--golden-tol", type=float, default=2e-3, help="relative L-inf tolerance of --golden")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="tv-270m", help="what the adapter is called in the loss plot's title")
    ap.add_argument("--time-budget", type=float, default=360.0,
                    help="seconds from start to the end of training (evaluation and saving come after)")
    ap.add_argument("--steps", type=int, default=100000, help="upper bound on optimizer steps")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=float, default=32.0)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--min-lr-frac", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=0, help="dev exact match every N steps (0: only at the end)")
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--dev-jsonl", default=None, help="the dev set's JSONL (same order as the data's dev split)")
    ap.add_argument("--prefix-len", type=int, default=None, help="debug: keep <bos> + the last N-1 prefix tokens")
    ap.add_argument("--train-limit", type=int, default=None, help="debug: the first N training examples only")
    ap.add_argument("--dev-limit", type=int, default=None, help="debug: the first N dev examples only")
    ap.add_argument("--init-adapter", default=None, help="continue from an earlier run's adapter directory "
                    "(adapter_config.json + adapter_model.safetensors); --rank/--alpha are then its own")
    ap.add_argument("--amp", choices=["auto", "on", "off"], default="auto", help="bf16 autocast (auto: on a GPU)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    amp = device.type == "cuda" if args.amp == "auto" else args.amp == "on"
    log_f = open(os.path.join(args.out, "train-log.jsonl"), "w")

    def log(obj):
        obj = {"t": round(time.time() - T0, 2), **obj}
        log_f.write(json.dumps(obj) + "\n")
        log_f.flush()
        print(json.dumps(obj), flush=True)

    import peft
    import transformers
    prefix, _, train, dev = T.load_data(args.data)
    if args.train_limit:
        train = T.Split(train.utt_len[:args.train_limit], train.ans_len[:args.train_limit], train.ids,
                        train.offsets[:args.train_limit])
    if args.dev_limit:
        dev = T.Split(dev.utt_len[:args.dev_limit], dev.ans_len[:args.dev_limit], dev.ids, dev.offsets[:args.dev_limit])
    log({"event": "start", "torch": torch.__version__, "transformers": transformers.__version__,
         "peft": peft.__version__, "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
         "n_train": len(train), "n_dev": len(dev), "n_prefix": len(prefix), "args": logged_args(args)})

    model = load_base(args.base, args.base_sha256, log).to(device)
    if device.type == "cuda":  # exact F32 for the golden check and the final evaluation
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if args.golden:
        check_golden(model, args.golden, device, log, args.golden_tol)
    for p in model.parameters():
        p.requires_grad_(False)
    E = model.model.embed_tokens.weight.detach()  # (n_vocab, d) the frozen tied head

    if args.init_adapter:  # continue an earlier run: its adapter (as save_pretrained wrote it), trainable
        pm = peft.PeftModel.from_pretrained(model, args.init_adapter, is_trainable=True)
        c = pm.peft_config["default"]
        args.rank, args.alpha = c.r, c.lora_alpha
        log({"event": "init_adapter", "from": args.init_adapter, "rank": c.r, "alpha": c.lora_alpha,
             "targets": sorted(c.target_modules)})
    else:
        cfg = peft.LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0, bias="none",
                              target_modules=TARGETS, task_type="CAUSAL_LM")
        pm = peft.get_peft_model(model, cfg)
    inner = pm.base_model.model  # Gemma3ForCausalLM with the LoRA layers inside
    trainable = [p for p in pm.parameters() if p.requires_grad]
    log({"event": "lora", "rank": args.rank, "alpha": args.alpha, "targets": TARGETS,
         "trainable_params": sum(p.numel() for p in trainable)})

    tb = T.Batcher(train, prefix, device, args.prefix_len)
    db = T.Batcher(dev, prefix, device, args.prefix_len)
    opt = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=args.wd)
    order_rng = np.random.default_rng(args.seed)
    perm, perm_pos = order_rng.permutation(len(train)), 0
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    total_steps = args.steps
    t_10 = None
    step, t_train0 = 0, time.time()
    log_rows = []
    stop_reason = "steps"
    inner.train()
    while step < total_steps:
        if time.time() - T0 > args.time_budget:
            stop_reason = "time_budget"
            break
        if perm_pos + args.batch > len(perm):
            perm, perm_pos = order_rng.permutation(len(train)), 0
        idx = perm[perm_pos:perm_pos + args.batch]
        perm_pos += args.batch
        tails, rows, cols, targets = tb.batch(idx)
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            frac = min(1.0, (step - args.warmup) / max(1, total_steps - args.warmup))
            lr = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            hs = T.answer_hidden(inner, tb.prefix, tails, rows, cols, True)
        loss, _ = full_head_loss(hs, E, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(trainable, args.clip)
        opt.step()
        step += 1
        if step % args.log_every == 0 or step == 1:
            row = {"step": step, "loss": round(float(loss.detach()), 5), "lr": round(lr, 7),
                   "gnorm": round(float(gnorm), 4), "tail_tokens": int(tails.numel())}
            log_rows.append(row)
            log(row)
        if step == 10:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t_10 = time.time()
        if step in (40, 200) and t_10 is not None:  # plan the cosine schedule from the measured step time
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.time() - t_10) / (step - 10)
            left = args.time_budget - (time.time() - T0)
            total_steps = min(args.steps, step + max(1, int(left / per_step)))
            log({"event": "plan", "sec_per_step": round(per_step, 4), "total_steps": total_steps,
                 "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2 ** 30, 2) if device.type == "cuda" else None})
        if args.eval_every and step % args.eval_every == 0:
            ok, _, _, dl = evaluate(inner, db, E, args.eval_batch, device)
            if log_rows and log_rows[-1]["step"] == step:
                log_rows[-1]["dev_loss"] = round(dl, 5)
                log_rows[-1]["dev_exact"] = round(float(ok.float().mean()), 4)
            log({"event": "dev", "step": step, "dev_loss": round(dl, 5), "dev_exact": round(float(ok.float().mean()), 4)})
    t_train = time.time() - t_train0
    log({"event": "trained", "steps": step, "stop": stop_reason, "train_s": round(t_train, 1),
         "examples_seen": step * args.batch})

    # the adapter, as peft writes it, and the control-token names fgemma convert puts into the GGUF
    ad = os.path.join(args.out, "adapter")
    pm.save_pretrained(ad)
    with open(os.path.join(ad, "fgemma_vocab_override.json"), "w") as f:
        json.dump({"ids": CONTROL_IDS, "tokens": CONTROL_TOKENS}, f, indent=1)
    log({"event": "saved", "files": sorted(os.listdir(ad)),
         "bytes": {n: os.path.getsize(os.path.join(ad, n)) for n in os.listdir(ad)}})

    # evaluation in F32 without TF32, as fgemma computes
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    report = {"steps": step, "stop": stop_reason, "train_s": round(t_train, 1)}
    dev_lines = None
    if args.dev_jsonl and os.path.exists(args.dev_jsonl):
        with open(args.dev_jsonl, encoding="utf-8") as f:
            dev_lines = [json.loads(line) for line in f if line.strip()][:len(dev)]
        if len(dev_lines) != len(dev):
            dev_lines = None
    ok, fb, bp, dl = evaluate(inner, db, E, args.eval_batch, device)
    n_sub = min(len(dev), len(train))
    sub = T.Split(train.utt_len[:n_sub], train.ans_len[:n_sub], train.ids, train.offsets[:n_sub])
    ok_tr, _, _, tl = evaluate(inner, T.Batcher(sub, prefix, device, args.prefix_len), E, args.eval_batch, device)
    r = {"dev_exact": round(float(ok.float().mean()), 4), "dev_loss": round(dl, 5),
         "train_exact": round(float(ok_tr.float().mean()), 4), "train_loss": round(tl, 5)}
    if dev_lines:
        per = {}
        for i, d in enumerate(dev_lines):
            calls = d["expected"].get("calls") or [{"name": "text"}]
            k = d.get("lang", "?") + "/" + d.get("intent", calls[0]["name"])
            a, b = per.get(k, (0, 0))
            per[k] = (a + int(ok[i]), b + 1)
        r["dev_per_group"] = {k: f"{a}/{b}" for k, (a, b) in sorted(per.items())}
        r["dev_failures"] = [{"utterance": dev_lines[i]["utterance"], "expected": dev_lines[i]["expected"],
                              "first_wrong_answer_token": int(fb[i]), "predicted_id": int(bp[i])}
                             for i in range(len(dev_lines)) if not ok[i]][:200]
    report["f32"] = r
    log({"event": "eval", **{k: v for k, v in r.items() if k not in ("dev_failures", "dev_per_group")}})
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    try:
        T.plot_loss(log_rows, os.path.join(args.out, "loss.png"),
                    f"{args.name}: LoRA r={args.rank} on gemma-3-270m Q4_K_M, {step} steps x {args.batch}, "
                    f"dev exact {r['dev_exact']:.3f}")
    except ImportError:
        log({"event": "plot", "skipped": "no matplotlib"})
    log({"event": "done", "wall_s": round(time.time() - T0, 1)})
    log_f.close()


if __name__ == "__main__":
    main()
