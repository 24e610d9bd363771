"""Model views: model.with_lora(...) (fg_model_with_loras, docs/LORA.md "Many adapters, one base") on the tiny
model with two adapters from the CLI's gen-lora: the view's logits equal Model(path, lora=...)'s bit for bit,
the base is unchanged, views answer on threads at once, a snapshot of one view is refused by another, and
misuse raises clear exceptions.
"""

import threading

import numpy as np
import pytest

import fgemma
from conftest import MINI_CATALOG, model_path, run_cli

IDS = [2, 17, 5, 99, 31, 8, 64, 12]


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    d = tmp_path_factory.mktemp("views")
    out = []
    for seed in (21, 22):
        path = d / f"gen-{seed}.gguf"
        run_cli("gen-lora", "-m", model_path("tiny-f32.gguf"), "-o", str(path), "--seed", str(seed))
        out.append(str(path))
    return out


def logits(model):
    s = model.session()
    s.prefill(IDS)
    return np.frombuffer(s.logits(), dtype=np.float32).copy()


def test_view_equals_loaded(adapters):
    a, b = adapters
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as base, \
            fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=(a, 0.5)) as loaded, \
            fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=[(a, 0.5), b]) as both:
        before = logits(base)
        with base.with_lora(a, scale=0.5) as va, base.with_lora([b]) as vb:
            assert va.loras == ((a, 0.5),) and va.path == base.path
            assert va.info["n_loras"] == 1 and va.info["lora_bytes"] > 0
            assert va.info["fingerprint"] == loaded.info["fingerprint"] != base.info["fingerprint"]
            assert np.array_equal(logits(va), logits(loaded))
            assert not np.array_equal(logits(vb), logits(va))
            with va.with_lora(b) as vab:  # stacks over the same base
                assert vab.loras == ((a, 0.5), (b, 1.0))
                assert vab.info["fingerprint"] == both.info["fingerprint"]
                assert np.array_equal(logits(vab), logits(both))
        assert np.array_equal(logits(base), before)


def test_views_on_threads(adapters):
    a, b = adapters
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as base:
        views = [base.with_lora(a), base.with_lora(b)]
        want = [logits(v) for v in views]
        bad = []

        def run(i):
            for _ in range(3):
                if not np.array_equal(logits(views[i]), want[i]):
                    bad.append(i)

        ts = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not bad
        for v in views:
            v.close()


def test_close_order_and_engines(adapters):
    a, _ = adapters
    base = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    view = base.with_lora(a)
    base.close()  # the view keeps the weights
    with view.nlu(MINI_CATALOG, max_tokens=4) as engine:
        view.close()
        engine.ask("hallo")
    with pytest.raises(fgemma.ArgumentError, match="closed"):
        view.session()


def test_snapshot_refused_by_other_view(adapters, tmp_path):
    a, b = adapters
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as base:
        va, va2, vb = base.with_lora(a), base.with_lora(a), base.with_lora(b)
        s = va.session()
        s.prefill(IDS)
        snap = s.snapshot()
        path = tmp_path / "a.fgsnap"
        snap.save(path)
        for other in (vb, base):
            with pytest.raises(fgemma.Error) as e:
                fgemma.Snapshot.load(other, path)
            assert e.value.status == "FG_ERR_MISMATCH"
        fgemma.Snapshot.load(va2, path).close()
        with pytest.raises(fgemma.Error):
            vb.session().restore(snap)
        for v in (va, va2, vb):
            v.close()


def test_misuse(adapters, tmp_path):
    a, _ = adapters
    base = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    with pytest.raises(fgemma.FileError, match="missing.gguf"):
        base.with_lora(str(tmp_path / "missing.gguf"))
    with pytest.raises(fgemma.Error, match="not an adapter"):
        base.with_lora(model_path("tiny-f32.gguf"))
    with pytest.raises(TypeError):
        base.with_lora(42)
    with pytest.raises(TypeError):
        base.with_lora([a], scale=0.5)  # scale goes with a single path
    with pytest.raises(TypeError):
        base.with_lora(a, scale="half")
    with pytest.raises(ValueError):
        base.with_lora(a, scale=float("nan"))
    with pytest.raises(fgemma.ArgumentError, match="no adapter"):
        base.with_lora([])
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1, lora=a, lora_merge="f32") as merged:
        with pytest.raises(fgemma.Error, match="merged") as e:
            merged.with_lora(a)
        assert e.value.status == "FG_ERR_UNSUPPORTED"
    base.close()
    with pytest.raises(fgemma.ArgumentError, match="closed"):
        base.with_lora(a)
