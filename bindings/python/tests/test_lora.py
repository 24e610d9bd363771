"""LoRA adapters: Model(path, lora=..., lora_merge=...) on the tiny model PEFT adapted (tests/data/peft).

The adapters are PEFT's own (tools/hf/make_peft_fixtures.py), converted by the CLI of the same tree
(`fgemma convert DIR --base tiny-f32.gguf`); tests/data/peft/peft_goldens.json holds PEFT's logits with
them on tiny-f32.gguf's weights, which the model with the adapter applied must reproduce.
"""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import fgemma
from conftest import REPO, model_path, run_cli

PEFT = REPO / "tests" / "data" / "peft"
MERGES = ["off", "f32", "bf16", "q8_0"]


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    """{"r4": path, "rslora": path}: tiny-r4-f32 (F32, a rank_pattern) and tiny-rslora-bf16 (BF16, rsLoRA)"""
    d = tmp_path_factory.mktemp("lora")
    out = {}
    for key, name in (("r4", "tiny-r4-f32"), ("rslora", "tiny-rslora-bf16")):
        path = d / f"{name}.gguf"
        run_cli("convert", str(PEFT / name), "-o", str(path), "--base", model_path("tiny-f32.gguf"))
        out[key] = str(path)
    return out


@pytest.fixture(scope="module")
def goldens():
    g = json.loads((PEFT / "peft_goldens.json").read_text(encoding="utf-8"))
    assert g["format"] == "fgemma-peft-goldens" and g["version"] == 1
    return g


def rows_at(model, ids, positions):
    """the logits after ids[:p + 1] for each p, as float32 arrays (session path)"""
    s = model.session()
    out, done = [], 0
    for p in positions:
        s.prefill(ids[done:p + 1])
        done = p + 1
        out.append(np.frombuffer(s.logits(), dtype=np.float32).copy())
    return out


def greedy(model, ids, n):
    s = model.session()
    nxt = s.prefill(ids)
    got = []
    for _ in range(n):
        got.append(nxt)
        nxt = s.step(nxt)
    return got


def worst(rows, recorded, columns):
    """max over positions of max |fgemma - PEFT| / max |PEFT logit| over the recorded columns and top ids"""
    w = 0.0
    for lg, r in zip(rows, recorded):
        d = [abs(float(lg[c]) - v) for c, v in zip(columns, r["values"])]
        d += [abs(float(lg[i]) - v) for i, v in zip(r["top_ids"], r["top_values"])]
        w = max(w, max(d) / r["row_max_abs"])
    return w


def case(goldens, name):
    return next(c for c in goldens["cases"] if c["name"] == name)


# ---- the adapters' effect ------------------------------------------------------------------------


@pytest.mark.parametrize("key, name", [("r4", "tiny-r4-f32"), ("rslora", "tiny-rslora-bf16")])
def test_adapter_matches_peft(adapters, goldens, key, name):
    ids, cols = goldens["ids"], goldens["columns"]
    positions = [r["position"] for r in goldens["base_positions"]]
    c = case(goldens, name)
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=adapters[key]) as m:
        assert worst(rows_at(m, ids, positions), c["positions"], cols) <= 1e-4
        assert greedy(m, ids, len(c["greedy"])) == c["greedy"]
    # the base alone is PEFT's base (and far from the adapted logits)
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as m:
        base = rows_at(m, ids, positions)
        assert worst(base, goldens["base_positions"], cols) <= 1e-4
        assert worst(base, c["positions"], cols) > 0.05


# A merge rounds the whole adapted matrix (base and adapter) to the type: bf16 and q8_0 move the tiny
# random model's logits by up to 0.015 and 0.061 of the row's largest (measured with the lora branch's
# core); the base alone is more than 1.0 away from the adapted logits. On top of that comes the error of
# the kernel table's own spec for the merged type (src/kernels/kernels.h): a bf16 matrix runs under the
# avx512 table's bf16dp spec, which rounds the activations to bf16 too (0.08, as tests/testutil.h
# fg_test_logit_tol); every other table computes it with f32 activations (fma spec: nothing to add).
def bf16_table_tol(model):
    return 0.08 if model.info["kernels"] == "avx512" else 0.0


@pytest.mark.parametrize("merge, tol", [("f32", 1e-4), ("bf16", 0.04), ("q8_0", 0.15)])
def test_merged_adapter_matches_peft(adapters, goldens, merge, tol):
    ids, cols = goldens["ids"], goldens["columns"]
    positions = [r["position"] for r in goldens["base_positions"]]
    for key, name in (("r4", "tiny-r4-f32"), ("rslora", "tiny-rslora-bf16")):
        with fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=adapters[key], lora_merge=merge) as m:
            limit = tol + (bf16_table_tol(m) if merge == "bf16" else 0.0)
            info = m.info
            assert info["lora_merge"] == merge and info["n_loras"] == 1 and info["lora_bytes"] > 0
            assert worst(rows_at(m, ids, positions), case(goldens, name)["positions"], cols) <= limit, (name, merge)


def test_scale_zero_is_the_base(adapters):
    ids = [2, 10, 20, 30, 40, 50]
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as base, \
            fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=(adapters["r4"], 0.0)) as zero:
        assert zero.info["n_loras"] == 1
        a, b = base.session(), zero.session()
        assert a.prefill(ids) == b.prefill(ids)
        assert bytes(a.logits()) == bytes(b.logits())
        assert base.info["fingerprint"] != zero.info["fingerprint"]  # adapters are part of the fingerprint


def test_scales_add_up(adapters):
    ids = [2, 10, 20, 30, 40, 50]
    a = adapters["r4"]
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=a) as one, \
            fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=[(a, 0.5), (a, 0.5)]) as halves, \
            fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=(a, 2.0)) as double:
        x, y, z = (np.frombuffer(rows_at(m, ids, [len(ids) - 1])[0], dtype=np.float32) for m in (one, halves, double))
        scale = float(np.abs(x).max())
        assert float(np.abs(x - y).max()) <= 1e-5 * scale
        assert float(np.abs(x - z).max()) > 1e-2 * scale  # the scale is applied


# ---- arguments, info ------------------------------------------------------------------------------


def test_argument_forms_and_info(adapters):
    a, b = adapters["r4"], adapters["rslora"]
    base = model_path("tiny-f32.gguf")
    forms = [
        (a, ((a, 1.0),)),
        (Path(a), ((a, 1.0),)),
        (a.encode(), ((a, 1.0),)),
        ((a, 0.5), ((a, 0.5),)),
        ((Path(a), 2), ((a, 2.0),)),
        ([a, (b, -0.25)], ((a, 1.0), (b, -0.25))),
        ([], ()),
        (None, ()),
    ]
    for lora, want in forms:
        with fgemma.Model(base, lora=lora) as m:
            assert m.loras == want, lora
            info = m.info
            assert info["loras"] == want and info["n_loras"] == len(want)
            assert info["lora_merge"] == "off"
            assert (info["lora_bytes"] > 0) == bool(want) and info["lora_ms"] >= 0
            assert all(isinstance(p, str) and isinstance(s, float) for p, s in m.loras)
    with fgemma.Model(base, lora=(a, 0.1)) as m:
        assert m.loras[0][1] == float(np.float32(0.1))  # applied as a float32


def test_fingerprint_follows_adapters_scales_order_and_merge(adapters):
    a, b = adapters["r4"], adapters["rslora"]
    base = model_path("tiny-f32.gguf")
    prints = []
    for kw in ({}, {"lora": a}, {"lora": (a, 0.5)}, {"lora": [a, b]}, {"lora": [b, a]},
               {"lora": a, "lora_merge": "f32"}, {"lora": a, "lora_merge": "bf16"}):
        with fgemma.Model(base, **kw) as m:
            prints.append(m.info["fingerprint"])
    assert len(set(prints)) == len(prints), prints
    with fgemma.Model(base, lora=a) as m1, fgemma.Model(base, lora=(a, 1.0), lora_merge="off") as m2:
        assert m1.info["fingerprint"] == m2.info["fingerprint"]


@pytest.mark.parametrize(
    "lora, merge, exc, words",
    [
        (42, None, TypeError, "lora must be a path"),
        ({"a": 1}, None, TypeError, "lora must be a path"),
        ([42], None, TypeError, "lora[0] must be a path"),
        ([["x.gguf"]], None, TypeError, "lora[0] must be a path or a (path, scale) tuple"),
        (("x.gguf",), None, TypeError, "tuple of 1 items"),
        (("x.gguf", 1.0, 2), None, TypeError, "tuple of 3 items"),
        (("x.gguf", "1"), None, TypeError, "scale) must be a float"),
        (("x.gguf", True), None, TypeError, "scale) must be a float"),
        (("x.gguf", None), None, TypeError, "scale) must be a float"),
        ((42, 1.0), None, TypeError, "lora[0] must be a path"),
        (("x.gguf", math.nan), None, ValueError, "finite"),
        (("x.gguf", math.inf), None, ValueError, "finite"),
        (("x.gguf", -math.inf), None, ValueError, "finite"),
        (("x.gguf", 1e300), None, ValueError, "finite float32"),
        (("x.gguf", 10 ** 400), None, ValueError, "finite"),
        (["ok.gguf", ("x.gguf", math.nan)], None, ValueError, "lora[1][1]"),
        ("a\0b.gguf", None, ValueError, ""),
        (None, "f16", ValueError, "lora_merge must be one of off, f32, bf16, q8_0"),
        (None, 2, TypeError, "lora_merge must be a str"),
    ],
)
def test_bad_arguments(lora, merge, exc, words):
    with pytest.raises(exc) as e:
        fgemma.Model(model_path("tiny-f32.gguf"), lora=lora, lora_merge=merge)
    assert words in str(e.value)
    if exc is ValueError and words:
        assert isinstance(e.value, fgemma.ArgumentError) and e.value.status == "FG_ERR_INVALID_ARG"


def test_bad_adapter_files(adapters, tmp_path):
    base = model_path("tiny-f32.gguf")
    missing = str(tmp_path / "missing-adapter.gguf")
    with pytest.raises(fgemma.FileError) as e:
        fgemma.Model(base, lora=missing)
    assert "missing-adapter.gguf" in str(e.value) and e.value.status == "FG_ERR_IO"
    # a model file is not an adapter
    with pytest.raises(fgemma.Error) as e:
        fgemma.Model(base, lora=model_path("tiny-f32.gguf"))
    assert e.value.status in ("FG_ERR_FORMAT", "FG_ERR_UNSUPPORTED") and str(e.value)
    # garbage and a truncated adapter
    data = Path(adapters["r4"]).read_bytes()
    for name, blob in (("garbage.gguf", b"no gguf" * 64), ("cut.gguf", data[: len(data) // 2])):
        p = tmp_path / name
        p.write_bytes(blob)
        with pytest.raises(fgemma.Error) as e:
            fgemma.Model(base, lora=str(p))
        assert e.value.status in ("FG_ERR_FORMAT", "FG_ERR_IO") and name in str(e.value), str(e.value)
    # an adapter of the tiny shape on the 270m shape: refused, not applied
    with pytest.raises(fgemma.Error) as e:
        fgemma.Model(model_path("270m-vocab-q8_0.gguf"), lora=adapters["r4"])
    assert e.value.status in ("FG_ERR_FORMAT", "FG_ERR_UNSUPPORTED", "FG_ERR_MISMATCH") and str(e.value)


def test_adapter_file_may_go_after_load(adapters, tmp_path):
    # paths are read during the load only: the adapter file may be removed afterwards
    p = tmp_path / "temporary.gguf"
    p.write_bytes(Path(adapters["r4"]).read_bytes())
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=str(p)) as m:
        os.remove(p)
        s = m.session()
        s.prefill([2, 10, 20])
        assert np.isfinite(np.frombuffer(s.logits(), dtype=np.float32)).all()
