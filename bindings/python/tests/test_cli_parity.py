"""The binding against the CLI of the same tree: the same JSON from `fgemma call`, the same logits
from `fgemma logits` (bit for bit), the same ids from `fgemma tokenize`."""

import json

import numpy as np
import pytest

import fgemma
from conftest import model_path, run_cli

THREADS = "2"  # the same worker count on both sides


@pytest.mark.parametrize(
    "model_name, constrained, max_tokens",
    [
        ("270m-vocab-q8_0.gguf", "call-only", None),  # the demo's configuration
        ("270m-vocab-q8_0.gguf", "off", 16),
        ("tiny-vocab-f32.gguf", "call-or-text", None),
    ],
)
def test_ask_equals_cli(model_name, constrained, max_tokens, utterances, tv_catalog_path, tv_catalog):
    path = model_path(model_name)
    args = ["call", "-m", path, "--tools", tv_catalog_path, "--threads", THREADS, "--constrained", constrained]
    if max_tokens:
        args += ["--max-tokens", str(max_tokens)]
    out = run_cli(*args, stdin="\n".join(utterances).encode() + b"\n")
    cli = [json.loads(line) for line in out.decode("utf-8", errors="replace").splitlines()]
    assert [c["utterance"] for c in cli] == utterances
    with fgemma.Model(path, threads=int(THREADS)) as model:
        with model.nlu(tv_catalog_path, constrained=constrained, max_tokens=max_tokens) as nlu:
            for u, c in zip(utterances, cli):
                full = nlu.ask(u, full=True)
                for key in ("utterance", "result", "raw", "stop", "tokens", "heads"):
                    assert full[key] == c[key], (u, key, full[key], c[key])
        if model_name.startswith("tiny"):
            # the plain ask() of an engine made from the catalog as a dict (cheap on the tiny model)
            with model.nlu(tv_catalog, constrained=constrained, max_tokens=max_tokens) as nlu2:
                for u, c in zip(utterances, cli):
                    r = nlu2.ask(u)
                    assert set(r.pop("ms")) == {"restore", "chunk", "decode", "total"}
                    assert r == c["result"], (u, r, c["result"])
    if constrained == "call-only":
        names = {f["name"] for f in tv_catalog["functions"]}
        assert all(len(c["result"]["calls"]) == 1 and c["result"]["calls"][0]["name"] in names for c in cli)


@pytest.mark.parametrize("model_name", ["tiny-f32.gguf", "270m-vocab-q8_0.gguf"])
def test_logits_equal_cli_bit_for_bit(model_name, tmp_path):
    path = model_path(model_name)
    with fgemma.Model(path, threads=int(THREADS)) as model:
        n_vocab = model.info["n_vocab"]
        rng = np.random.default_rng(7)
        ids = [2] + [int(x) for x in rng.integers(3, min(n_vocab, 200000), 39)]
        at = [5, 17, 39]
        out = tmp_path / "cli.f32"
        run_cli("logits", "-m", path, "--ids", " ".join(map(str, ids)), "--at", " ".join(map(str, at)),
                "--threads", THREADS, "-o", str(out))
        cli = np.fromfile(out, dtype="<f4").reshape(len(at), n_vocab)
        s = model.session()
        done = 0
        for row, p in enumerate(at):
            s.prefill(ids[done:p + 1])
            done = p + 1
            mine = np.frombuffer(s.logits(), dtype=np.float32)
            assert mine.tobytes() == cli[row].tobytes(), f"logits differ after position {p}"
        # and step by step gives the ids the greedy CLI prints
        gen = run_cli("generate", "-m", path, "--ids", " ".join(map(str, ids[:10])), "-n", "6",
                      "--threads", THREADS).split()
        s2 = model.session()
        nxt = s2.prefill(ids[:10])
        mine_ids = [nxt]
        for _ in range(5):
            nxt = s2.step(nxt)
            mine_ids.append(nxt)
        assert mine_ids == [int(x) for x in gen]


def test_tokenize_equals_cli(tiny_vocab, utterances):
    for u in utterances[:6]:
        cli = [int(x) for x in run_cli("tokenize", "-m", tiny_vocab.path, "--bos", u).split()]
        assert tiny_vocab.tokenize(u, bos=True) == cli
        text = run_cli("detokenize", "-m", tiny_vocab.path, *map(str, cli)).decode("utf-8", errors="replace")
        assert tiny_vocab.detokenize(cli) == text.rstrip("\n")
