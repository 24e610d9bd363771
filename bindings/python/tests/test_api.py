"""Every call of the API, its errors and its lifetimes, on the tiny generated models."""

import ast
import gc
import importlib.resources
import inspect
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import fgemma
from conftest import MINI_CATALOG, REPO, model_path


def ids_for(model, n, seed=1):
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(3, model.info["n_vocab"], n)]


# ---- module, errors, docs -------------------------------------------------------------------------


def test_version_matches_cmake():
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert fgemma.__version__ == re.search(r"project\(fgemma VERSION ([0-9.]+)", cmake).group(1)


def test_error_classes():
    assert issubclass(fgemma.Error, Exception)
    assert issubclass(fgemma.ArgumentError, fgemma.Error) and issubclass(fgemma.ArgumentError, ValueError)
    assert issubclass(fgemma.FileError, fgemma.Error) and issubclass(fgemma.FileError, OSError)


def test_not_instantiable():
    for cls in (fgemma.Session, fgemma.Snapshot, fgemma.Nlu):
        with pytest.raises(TypeError):
            cls()


def test_docstrings_and_signatures():
    assert "head_type" in fgemma.Model.__doc__
    for cls in (fgemma.Model, fgemma.Session, fgemma.Snapshot, fgemma.Nlu):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                assert member.__doc__, f"{cls.__name__}.{name} has no docstring"
    assert list(inspect.signature(fgemma.Model.session).parameters) == ["self", "kv_type", "threads", "n_ctx", "batch"]
    nlu = inspect.signature(fgemma.Model.nlu).parameters
    assert list(nlu) == ["self", "catalog", "constrained", "max_tokens", "snapshot_path", "multi_call", "threads",
                         "snapshot_dir", "kv_type", "n_ctx", "batch", "speculate", "max_draft", "answer_cache"]
    assert nlu["constrained"].default == "call-or-text"  # the default of every surface (docs/OPTIONS.md)
    assert list(inspect.signature(fgemma.Session.prefill).parameters) == ["self", "ids"]


def test_stubs_match_runtime():
    pkg = importlib.resources.files("fgemma")
    assert pkg.joinpath("py.typed").is_file()
    tree = ast.parse(pkg.joinpath("_fgemma.pyi").read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert set(classes) == {"Error", "ArgumentError", "FileError", "Model", "Session", "Snapshot", "Nlu"}
    for name, node in classes.items():
        runtime = getattr(fgemma, name)
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name != "__init__":
                assert hasattr(runtime, item.name), f"stub {name}.{item.name} is not in the module"
        public = {k for k in vars(runtime) if not k.startswith("_")}
        stubbed = {i.name for i in node.body if isinstance(i, ast.FunctionDef)}
        stubbed |= {i.target.id for i in node.body if isinstance(i, ast.AnnAssign)}
        if name not in ("Error", "ArgumentError", "FileError"):
            assert public <= stubbed, f"{name}: {public - stubbed} missing from the stubs"
    # the stub of nlu() names the runtime's keywords, plus the deprecated multi
    nlu_stub = next(i for i in classes["Model"].body if isinstance(i, ast.FunctionDef) and i.name == "nlu")
    stub_kw = [a.arg for a in nlu_stub.args.kwonlyargs]
    runtime_kw = [p for p in inspect.signature(fgemma.Model.nlu).parameters if p not in ("self", "catalog")]
    assert stub_kw == runtime_kw + ["multi"]


# ---- Model ------------------------------------------------------------------------------------------


def test_model_info(tiny):
    info = tiny.info
    assert info["arch"] == "gemma3"
    assert info["n_vocab"] == 512 and info["n_layer"] == 6 and info["weight_type"] == "f32"
    assert info["tied_head"] is True and info["has_vocab"] is True
    assert re.fullmatch(r"[0-9a-f]{32}", info["fingerprint"])
    assert info["kernels"] in ("ref", "avx2", "avx512", "neon", "neon_dotprod", "neon_i8mm")
    if os.environ.get("FG_ISA", "auto") != "auto":
        assert info["kernels"] == os.environ["FG_ISA"]
    assert info["path"] == tiny.path == model_path("tiny-f32.gguf")
    assert info["file_bytes"] == os.path.getsize(tiny.path)
    assert "tiny-f32.gguf" in repr(tiny) and not tiny.closed


def test_model_head_type():
    with fgemma.Model(model_path("tiny-f32.gguf"), head_type="q8_0") as m:
        assert m.info["head_type"] == "q8_0" and m.info["head_copy_bytes"] > 0
    with fgemma.Model(model_path("tiny-f32.gguf"), head_type="file") as m:
        assert m.info["head_type"] == "f32"


def test_model_repack():
    # on this machine's kernels (x86) nothing is packed; on aarch64 with the dot product a Q8_0 model is:
    # either way the flag loads, says what it did, and the logits do not change
    path = model_path("tiny-f32.gguf")
    with fgemma.Model(path) as a, fgemma.Model(path, repack=False) as b:
        assert b.info["repack_bytes"] == 0 and a.info["repack_bytes"] >= 0
        assert a.info["fingerprint"] == b.info["fingerprint"]
        sa, sb = a.session(), b.session()
        ids = [2, 10, 20, 30, 40]
        assert sa.prefill(ids) == sb.prefill(ids)
        assert bytes(sa.logits()) == bytes(sb.logits())


def test_model_path_like():
    with fgemma.Model(Path(model_path("tiny-f32.gguf"))) as m:
        assert m.info["n_vocab"] == 512


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"head_type": "q5_0"}, ValueError),
        ({"head_type": 8}, TypeError),
        ({"threads": 0}, ValueError),
        ({"threads": 1000}, ValueError),
        ({"threads": "2"}, TypeError),
        ({"threads": True}, TypeError),
        ({"threads": 1.5}, TypeError),
    ],
)
def test_model_bad_arguments(kwargs, exc):
    with pytest.raises(exc):
        fgemma.Model(model_path("tiny-f32.gguf"), **kwargs)


def test_model_bad_paths(tmp_path):
    with pytest.raises(fgemma.FileError) as e:
        fgemma.Model(str(tmp_path / "missing.gguf"))
    assert e.value.status == "FG_ERR_IO" and e.value.code == 3 and isinstance(e.value, OSError)
    assert "missing.gguf" in str(e.value)
    with pytest.raises(TypeError):
        fgemma.Model(42)
    with pytest.raises(ValueError):
        fgemma.Model("a\0b")
    with pytest.raises(fgemma.Error):
        fgemma.Model(str(tmp_path))  # a directory


def test_model_truncated_and_garbage(tmp_path):
    data = Path(model_path("tiny-f32.gguf")).read_bytes()
    for name, blob in [("truncated.gguf", data[: len(data) // 2]), ("header.gguf", data[:100]),
                       ("garbage.gguf", b"not a gguf file" * 100), ("empty.gguf", b"")]:
        p = tmp_path / name
        p.write_bytes(blob)
        with pytest.raises(fgemma.Error) as e:
            fgemma.Model(str(p))
        assert e.value.status in ("FG_ERR_FORMAT", "FG_ERR_IO"), (name, e.value.status, str(e.value))
        assert str(e.value)


def test_tokenize_roundtrip(tiny_vocab):
    text = "Schalte auf ZDF um, bitte – jetzt! 🙂"
    ids = tiny_vocab.tokenize(text)
    assert all(isinstance(i, int) for i in ids) and ids[0] != 2
    assert tiny_vocab.tokenize(text, bos=True) == [2] + ids
    assert tiny_vocab.tokenize(text.encode()) == ids
    assert tiny_vocab.detokenize(ids) == text
    assert tiny_vocab.detokenize(np.array(ids, dtype=np.int32)) == text
    assert tiny_vocab.detokenize([]) == ""
    special = tiny_vocab.tokenize("<start_of_turn>user")
    plain = tiny_vocab.tokenize("<start_of_turn>user", special=False)
    assert len(special) < len(plain) and tiny_vocab.detokenize(special) == "<start_of_turn>user"


def test_detokenize_partial_utf8_replaced(tiny_vocab):
    # byte-fallback tokens of one multi-byte character, cut in the middle: replaced, not an error
    ids = tiny_vocab.tokenize("🙂")
    byte_ids = [i for i in range(tiny_vocab.info["n_vocab"])
                if tiny_vocab.detokenize([i]) == "\ufffd"][:1]
    assert tiny_vocab.detokenize(ids) == "🙂"
    assert byte_ids, "the vocabulary has byte-fallback tokens"


def test_tokenize_bad_input(tiny_vocab):
    with pytest.raises(TypeError):
        tiny_vocab.tokenize(123)
    with pytest.raises(TypeError):
        tiny_vocab.tokenize(None)
    with pytest.raises(UnicodeEncodeError):  # a ValueError
        tiny_vocab.tokenize("\ud800")
    with pytest.raises(fgemma.ArgumentError) as e:
        tiny_vocab.detokenize([1, 999999])
    assert e.value.status == "FG_ERR_INVALID_ARG"
    with pytest.raises(fgemma.ArgumentError):
        tiny_vocab.detokenize([-1])
    with pytest.raises(ValueError):
        tiny_vocab.detokenize([2**40])
    with pytest.raises(TypeError):
        tiny_vocab.detokenize("abc")
    with pytest.raises(TypeError):
        tiny_vocab.detokenize([1, "2"])
    with pytest.raises(TypeError):
        tiny_vocab.detokenize(5)


# ---- Session ----------------------------------------------------------------------------------------


def test_session_prefill_step_logits(tiny):
    s = tiny.session()
    assert s.position == 0 and s.kv_type == "f32" and s.model is tiny
    with pytest.raises(fgemma.ArgumentError):
        s.logits()  # nothing appended yet
    ids = ids_for(tiny, 10)
    nxt = s.prefill(ids)
    assert s.position == 10
    view = s.logits()
    assert isinstance(view, memoryview)
    assert view.readonly and view.format == "f" and view.itemsize == 4 and view.shape == (512,)
    arr = np.frombuffer(view, dtype=np.float32)
    assert nxt == int(np.argmax(arr))
    nxt2 = s.step(nxt)
    assert s.position == 11
    assert nxt2 == int(np.argmax(np.frombuffer(s.logits(), np.float32)))
    assert isinstance(s.prefill(np.array(ids[:3], dtype=np.int64)), int)
    assert s.position == 14
    st = s.stats
    assert st["kv_blocks"] > 0 and st["kv_bytes_global"] > 0
    s.close()


def test_logits_zero_copy_and_stable(tiny):
    s = tiny.session()
    s.prefill(ids_for(tiny, 8))
    view = s.logits()
    a = np.frombuffer(view, dtype=np.float32)
    b = np.frombuffer(view, dtype=np.float32)
    assert np.shares_memory(a, b)  # numpy reads the library's buffer, no copy
    assert np.shares_memory(a, np.frombuffer(s.logits(), np.float32))  # the same floats again
    with pytest.raises(ValueError):
        a[0] = 1.0  # read-only
    with pytest.raises(TypeError):
        view[0] = 1.0
    keep = a.copy()
    s.step(5)  # writes its logits elsewhere: the view does not change
    assert np.array_equal(a, keep)
    assert not np.array_equal(np.frombuffer(s.logits(), np.float32), keep)
    s.close()
    tiny_view_after_close = a.sum()  # still readable after the session is gone
    assert tiny_view_after_close == keep.sum()


def test_logits_outlive_model():
    m = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    s = m.session()
    s.prefill([2, 10, 11])
    a = np.frombuffer(s.logits(), np.float32)
    keep = a.copy()
    m.close()
    s.close()
    del s, m
    gc.collect()
    assert np.array_equal(a, keep)


def test_snapshot_restore_fork(tiny):
    ids = ids_for(tiny, 40, seed=3)
    s = tiny.session()
    s.prefill(ids[:20])
    snap = s.snapshot()
    assert snap.position == 20 and snap.kv_type == "f32" and snap.model is tiny
    want = [s.step(i) for i in ids[20:30]]
    want_logits = bytes(s.logits())
    s.restore(snap)
    assert s.position == 20
    assert [s.step(i) for i in ids[20:30]] == want
    assert bytes(s.logits()) == want_logits  # bit for bit after restore
    f = snap.fork()
    assert f.position == 20 and f.kv_type == "f32"
    assert [f.step(i) for i in ids[20:30]] == want
    assert bytes(f.logits()) == want_logits
    s.close()
    g = snap.fork(threads=1, n_ctx=64)  # a snapshot outlives its session
    assert g.position == 20
    with pytest.raises(fgemma.Error) as e:
        g.prefill([1] * 45)  # 20 + 45 > 64
    assert e.value.status == "FG_ERR_CONTEXT_FULL" and g.position == 20
    for o in (f, g, snap):
        o.close()


def test_snapshot_save_load(tiny, tmp_path):
    s = tiny.session()
    ids = ids_for(tiny, 12, seed=4)
    s.prefill(ids)
    snap = s.snapshot()
    path = tmp_path / "s.fgsnap"
    snap.save(str(path))
    snap.save(path)  # os.PathLike too
    loaded = fgemma.Snapshot.load(tiny, path)
    assert loaded.position == 12
    a, b = snap.fork(), loaded.fork()
    assert a.step(7) == b.step(7) and bytes(a.logits()) == bytes(b.logits())
    # another model's file
    with fgemma.Model(model_path("tiny-f32-seed2.gguf")) as other:
        with pytest.raises(fgemma.Error) as e:
            fgemma.Snapshot.load(other, path)
        assert e.value.status == "FG_ERR_MISMATCH"
    # truncated, missing, bad types
    data = path.read_bytes()
    (tmp_path / "t.fgsnap").write_bytes(data[: len(data) // 2])
    with pytest.raises(fgemma.Error) as e:
        fgemma.Snapshot.load(tiny, tmp_path / "t.fgsnap")
    assert e.value.status == "FG_ERR_FORMAT" and "t.fgsnap" in str(e.value)  # the C library's message
    with pytest.raises(fgemma.Error) as e:
        fgemma.Snapshot.load(tiny, tmp_path / "missing.fgsnap")
    assert e.value.status in ("FG_ERR_IO", "FG_ERR_FORMAT")
    with pytest.raises(fgemma.Error) as e:
        snap.save(tmp_path / "no" / "such" / "dir.fgsnap")
    assert e.value.status == "FG_ERR_IO" and "dir.fgsnap" in str(e.value)
    with pytest.raises(TypeError):
        fgemma.Snapshot.load("model", path)
    with pytest.raises(TypeError):
        snap.save(12)


def test_f16_kv(tiny):
    s = tiny.session("f16")
    assert s.kv_type == "f16"
    s.prefill([2, 3, 4, 5])
    snap = s.snapshot()
    assert snap.kv_type == "f16" and snap.fork().kv_type == "f16"
    f32 = tiny.session()
    with pytest.raises(fgemma.Error) as e:
        f32.restore(snap)
    assert e.value.status == "FG_ERR_MISMATCH" and f32.position == 0


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda s: s.prefill("abc"), TypeError),
        (lambda s: s.prefill(b"abc"), TypeError),
        (lambda s: s.prefill(5), TypeError),
        (lambda s: s.prefill([1.5]), TypeError),
        (lambda s: s.prefill([True]), TypeError),
        (lambda s: s.prefill([]), ValueError),
        (lambda s: s.prefill([1, 2, 999]), ValueError),
        (lambda s: s.prefill([-1]), ValueError),
        (lambda s: s.prefill([2**33]), ValueError),
        (lambda s: s.step("1"), TypeError),
        (lambda s: s.step(None), TypeError),
        (lambda s: s.step(512), ValueError),
        (lambda s: s.restore(123), TypeError),
        (lambda s: s.restore(None), TypeError),
    ],
)
def test_session_bad_input(tiny, call, exc):
    s = tiny.session()
    s.prefill([2, 3])
    before = bytes(s.logits())
    with pytest.raises(exc):
        call(s)
    assert s.position == 2 and bytes(s.logits()) == before  # nothing changed


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"kv_type": "f64"}, ValueError), ({"kv_type": 1}, TypeError), ({"threads": 0}, ValueError),
     ({"n_ctx": 0}, ValueError), ({"n_ctx": 10**6}, fgemma.ArgumentError)],
)
def test_session_bad_params(tiny, kwargs, exc):
    with pytest.raises(exc):
        tiny.session(**kwargs)


# ---- closing and lifetimes --------------------------------------------------------------------------


def test_closed_objects_raise(tiny):
    m = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    s = m.session()
    s.prefill([2, 3])
    snap = s.snapshot()
    nlu = m.nlu(MINI_CATALOG, max_tokens=2)
    for o in (s, snap, nlu, m):
        o.close()
        o.close()  # idempotent
        assert o.closed
    calls = [
        lambda: s.prefill([1]), lambda: s.step(1), lambda: s.position, lambda: s.logits(), lambda: s.snapshot(),
        lambda: s.restore(snap), lambda: s.stats, lambda: snap.fork(), lambda: snap.save("x"),
        lambda: snap.position, lambda: nlu.ask("hallo"), lambda: nlu.info, lambda: m.session(),
        lambda: m.nlu(MINI_CATALOG), lambda: m.tokenize("a"), lambda: m.detokenize([1]), lambda: m.info,
        lambda: fgemma.Snapshot.load(m, "x"), lambda: s.__enter__(), lambda: m.__enter__(),
    ]
    for call in calls:
        with pytest.raises(fgemma.ArgumentError, match="closed"):
            call()
    assert s.cancel() is False and nlu.cancel() is False
    live = tiny.session()
    with pytest.raises(fgemma.ArgumentError, match="closed"):
        live.restore(snap)  # a closed snapshot as the argument
    assert "closed" in repr(s) and "closed" in repr(m)


def test_model_closed_first_children_keep_working():
    m = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    s = m.session()
    s.prefill([2, 3, 4])
    snap = s.snapshot()
    nlu = m.nlu(MINI_CATALOG, max_tokens=4)
    m.close()  # unmapped only after the last child
    assert m.closed
    s.step(5)
    f = snap.fork()
    f.step(6)
    assert "calls" in nlu.ask("Mach lauter")
    with pytest.raises(fgemma.ArgumentError):
        m.session()
    for o in (s, f, snap, nlu):
        o.close()


@pytest.mark.parametrize("order", ["model-first", "children-first", "mixed"])
def test_garbage_collection_any_order(order):
    m = fgemma.Model(model_path("tiny-f32.gguf"), threads=1)
    s = m.session()
    s.prefill([2, 3, 4])
    snap = s.snapshot()
    f = snap.fork()
    nlu = m.nlu(MINI_CATALOG, max_tokens=2)
    view = s.logits()
    objs = {"m": m, "s": s, "snap": snap, "f": f, "nlu": nlu, "view": view}
    del m, s, snap, f, nlu, view
    names = {"model-first": ["m", "s", "snap", "f", "nlu", "view"],
             "children-first": ["view", "f", "snap", "s", "nlu", "m"],
             "mixed": ["snap", "m", "view", "s", "nlu", "f"]}[order]
    for name in names:
        if name == "f" and "m" not in objs:
            objs["f"].step(7)  # still works after its model and snapshot went away
        del objs[name]
        gc.collect()


def test_context_managers(tiny):
    with tiny.session() as s:
        s.prefill([2, 3])
        with s.snapshot() as snap:
            with snap.fork() as f:
                assert f.position == 2
            assert f.closed
        assert snap.closed
    assert s.closed
    with tiny.nlu(MINI_CATALOG, max_tokens=2) as nlu:
        nlu.ask("hallo")
    assert nlu.closed


# ---- Nlu --------------------------------------------------------------------------------------------


def test_nlu_catalog_forms(tiny, tmp_path):
    text = json.dumps(MINI_CATALOG)
    p = tmp_path / "mini.json"
    p.write_text(text, encoding="utf-8")
    forms = [MINI_CATALOG, text, "  \n" + text, text.encode(), str(p), p,
             [{"type": "function", "function": {"name": "set_volume", "description": "Lautstärke setzen",
                                                "parameters": {"type": "object", "properties": {
                                                    "level": {"type": "integer", "description": "0 bis 100"}},
                                                    "required": ["level"]}}},
              {"type": "function", "function": {"name": "switch_channel", "description": "Sender wechseln",
                                                "parameters": {"type": "object", "properties": {
                                                    "channel": {"type": "string", "description": "Name",
                                                                "enum": ["ARD", "ZDF"]}},
                                                    "required": ["channel"]}}}]]
    answers = []
    for form in forms:
        with tiny.nlu(form, max_tokens=8) as nlu:
            assert nlu.info["functions"] == 2 and nlu.info["prefix_tokens"] > 100
            r = nlu.ask("Schalte auf ZDF um")
            ms = r.pop("ms")
            assert set(ms) == {"restore", "chunk", "decode", "total"} and ms["total"] >= ms["decode"] >= 0
            answers.append(r)
    assert all(a == answers[0] for a in answers), answers  # one prompt whatever the form
    assert set(answers[0]) == {"calls", "text"}


def test_nlu_constrained(tiny):
    names = {f["name"] for f in MINI_CATALOG["functions"]}
    with tiny.nlu(MINI_CATALOG, constrained="call-only") as nlu:
        for u in ["Schalte auf ZDF um", "Mach lauter", "Ton aus"]:
            r = nlu.ask(u, full=True)
            assert len(r["result"]["calls"]) == 1 and r["result"]["calls"][0]["name"] in names
            assert r["stop"] == "end_function_call"
            assert r["heads"]["full"] + r["heads"]["sparse"] + r["heads"]["forced"] == r["tokens"]["decode"]
    with tiny.nlu(MINI_CATALOG, constrained="call-or-text", max_tokens=8) as nlu:
        assert set(nlu.ask("Hallo")) == {"calls", "text", "ms"}


def test_nlu_snapshot_file(tiny, tmp_path):
    path = tmp_path / "prefix.fgsnap"
    with tiny.nlu(MINI_CATALOG, max_tokens=6, snapshot_path=path) as a:
        assert a.info["snapshot_written"] and not a.info["prefix_from_file"]
        ra = a.ask("Ton aus")
    with tiny.nlu(MINI_CATALOG, max_tokens=6, snapshot_path=str(path)) as b:
        assert b.info["prefix_from_file"] and not b.info["snapshot_written"]
        rb = b.ask("Ton aus")
    ra.pop("ms"), rb.pop("ms")
    assert ra == rb


def test_nlu_snapshot_dir(tiny, tmp_path):
    """a directory shared with `fgemma call --snapshot-dir` and `fgemma serve --snapshot-dir`"""
    with tiny.nlu(MINI_CATALOG, max_tokens=6, snapshot_dir=tmp_path) as a:
        info = a.info
        assert info["snapshot_written"] and not info["prefix_from_file"] and not info["snapshot_refused"]
        assert re.fullmatch(r"[0-9a-f]{32}-f32-[0-9a-f]{16}\.fgsnap", info["snapshot_name"])
        ra = a.ask("Ton aus")
    assert [p.name for p in tmp_path.iterdir()] == [info["snapshot_name"]]
    with tiny.nlu(MINI_CATALOG, max_tokens=6, snapshot_dir=str(tmp_path)) as b:
        assert b.info["prefix_from_file"] and b.info["snapshot_name"] == info["snapshot_name"]
        rb = b.ask("Ton aus")
    ra.pop("ms"), rb.pop("ms")
    assert ra == rb
    # a damaged file is refused, recomputed and replaced
    f = tmp_path / info["snapshot_name"]
    f.write_bytes(f.read_bytes()[:1000])
    with tiny.nlu(MINI_CATALOG, max_tokens=6, snapshot_dir=tmp_path) as c:
        assert c.info["snapshot_refused"] and c.info["snapshot_written"] and not c.info["prefix_from_file"]
    with pytest.raises(ValueError):
        tiny.nlu(MINI_CATALOG, snapshot_path=f, snapshot_dir=tmp_path)
    with pytest.raises(fgemma.FileError) as e:
        tiny.nlu(MINI_CATALOG, snapshot_dir=tmp_path / "missing")
    assert "not a directory" in str(e.value)
    with pytest.raises(TypeError):
        tiny.nlu(MINI_CATALOG, snapshot_dir=3)


@pytest.mark.parametrize(
    "catalog, kwargs, exc, status",
    [
        ("{not json", {}, fgemma.Error, "FG_ERR_FORMAT"),
        ({"functions": [{"description": "no name"}]}, {}, fgemma.Error, "FG_ERR_FORMAT"),
        ("/no/such/catalog.json", {}, fgemma.FileError, "FG_ERR_IO"),
        ("", {}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (42, {}, TypeError, None),
        (None, {}, TypeError, None),
        (MINI_CATALOG, {"constrained": "always"}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"constrained": 1}, TypeError, None),
        (MINI_CATALOG, {"max_tokens": 0}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"max_tokens": "5"}, TypeError, None),
        (MINI_CATALOG, {"snapshot_path": 3}, TypeError, None),
        (MINI_CATALOG, {"threads": -1}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"kv_type": "f8"}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"kv_type": 1}, TypeError, None),
        (MINI_CATALOG, {"n_ctx": 0}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"n_ctx": 1.5}, TypeError, None),
        (MINI_CATALOG, {"n_ctx": 64}, fgemma.Error, "FG_ERR_CONTEXT_FULL"),  # the catalog does not fit
        (MINI_CATALOG, {"batch": 0}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"batch": 5000}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"max_draft": 33}, fgemma.ArgumentError, "FG_ERR_INVALID_ARG"),
        (MINI_CATALOG, {"speculate": "on"}, TypeError, None),
        (MINI_CATALOG, {"speculate": 1}, TypeError, None),
        (MINI_CATALOG, {"answer_cache": None, "multi_call": 1}, TypeError, None),
        (MINI_CATALOG, {"multi_call": True, "multi": True}, TypeError, None),
        (MINI_CATALOG, {"constrain": "off"}, TypeError, None),  # C's deprecated field name is no keyword here
    ],
)
def test_nlu_bad_input(tiny, catalog, kwargs, exc, status):
    with pytest.raises(exc) as e:
        tiny.nlu(catalog, **kwargs)
    if status:
        assert e.value.status == status and str(e.value)


def test_nlu_defaults_and_options(tiny, tmp_path):
    """constrained defaults to call-or-text (as in C, the CLI, the server and Kotlin); info reports the mode in
    effect; every option of the engine can be set (docs/OPTIONS.md)."""
    utts = ["Schalte auf ZDF um", "Mach lauter", "Hallo"]
    with tiny.nlu(MINI_CATALOG, max_tokens=8) as d, tiny.nlu(MINI_CATALOG, max_tokens=8, constrained="call-or-text") as c:
        assert d.info["constrained"] == "call-or-text" and d.info["speculate"] is True
        for u in utts:
            a, b = d.ask(u, full=True), c.ask(u, full=True)
            a.pop("ms"), b.pop("ms")
            assert a == b
    with tiny.nlu(MINI_CATALOG, max_tokens=8, constrained="off") as o:
        assert o.info["constrained"] == "off"
        r = o.ask("Schalte auf ZDF um", full=True)
        assert r["heads"]["full"] == r["tokens"]["decode"] and r["heads"]["sparse"] == r["heads"]["forced"] == 0
    # the same answer whatever the engine's kv_type, context, chunk, speculation and draft settings
    base = None
    for kw in [{}, {"kv_type": "f32", "n_ctx": 1024, "batch": 7}, {"speculate": False}, {"max_draft": 1},
               {"answer_cache": False, "threads": 1}, {"multi_call": False}]:
        with tiny.nlu(MINI_CATALOG, max_tokens=8, constrained="call-only", **kw) as e:
            assert e.info["speculate"] is (kw.get("speculate", True))
            r = e.ask("Schalte auf ZDF um", full=True)
            r.pop("ms")
            base = base or r
            assert r == base, kw
    with tiny.nlu(MINI_CATALOG, max_tokens=8, kv_type="f16", snapshot_dir=tmp_path) as h:
        assert "-f16-" in h.info["snapshot_name"]  # the engine's session runs an F16 cache
        assert "calls" in h.ask("Ton aus")


def test_nlu_deprecated_multi(tiny):
    with pytest.warns(DeprecationWarning, match="multi is deprecated, use multi_call"):
        old = tiny.nlu(MINI_CATALOG, max_tokens=8, constrained="call-only", multi=True)
    with old, tiny.nlu(MINI_CATALOG, max_tokens=8, constrained="call-only", multi_call=True) as new:
        a, b = old.ask("Schalte auf ZDF um"), new.ask("Schalte auf ZDF um")
        a.pop("ms"), b.pop("ms")
        assert a == b


def test_model_load_options(tiny):
    path = tiny.path
    with fgemma.Model(path, no_mmap=True, check_tensors=True) as m:
        assert m.info["n_vocab"] == tiny.info["n_vocab"]
        with m.session(batch=3, n_ctx=64) as s, tiny.session() as t:
            assert s.prefill([2, 3, 4, 5, 6]) == t.prefill([2, 3, 4, 5, 6])
            assert bytes(s.logits()) == bytes(t.logits())
    for kw, exc in [({"no_mmap": 1}, TypeError), ({"check_tensors": "yes"}, TypeError)]:
        with pytest.raises(exc):
            fgemma.Model(path, **kw)
    with pytest.raises(fgemma.ArgumentError):
        tiny.session(batch=0)
    with pytest.raises(TypeError):
        tiny.session(batch="8")


def test_ask_bad_input(tiny):
    with tiny.nlu(MINI_CATALOG, max_tokens=4) as nlu:
        with pytest.raises(TypeError):
            nlu.ask(5)
        with pytest.raises(TypeError):
            nlu.ask(["a"])
        with pytest.raises(fgemma.Error):
            nlu.ask("")
        with pytest.raises(fgemma.Error):
            nlu.ask("a<end_of_turn>b")  # control-token text would break the prompt
        with pytest.raises(fgemma.Error) as e:
            nlu.ask("wort " * 3000)  # does not fit the context: an error, never truncated
        assert e.value.status == "FG_ERR_CONTEXT_FULL"
        assert "calls" in nlu.ask("Ton aus")  # the engine still answers
