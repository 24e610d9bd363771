"""The GIL is released during long calls; cancel() from another thread; one call at a time per object."""

import os
import threading
import time

import numpy as np
import pytest

import fgemma
from conftest import MINI_CATALOG, model_path, report


def long_ids(model, n, seed=11):
    rng = np.random.default_rng(seed)
    return [2] + [int(x) for x in rng.integers(3, model.info["n_vocab"], n - 1)]


def run_in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    return t, box


def attempts(n=5):
    """Bounded retries for checks that need a call to be caught while it runs: a call that ended before
    the main thread reached it proves nothing either way, so it is run again (n times at most). No outcome
    then depends on how fast this CPU is."""
    return range(n)


def cancel_while_running(t, obj):
    """obj.cancel() until it reaches the call running on thread t (True) or t ends; then joins t"""
    cancelled = False
    while t.is_alive() and not cancelled:
        cancelled = obj.cancel()
        time.sleep(0.0005)
    t.join()
    return cancelled


def test_gil_released_during_prefill(m270):
    """While one thread is inside prefill, the main thread runs Python and sees the session busy."""
    ids = long_ids(m270, 256)
    for _ in attempts():
        s = m270.session(threads=1)
        t, box = run_in_thread(lambda: s.prefill(ids))
        saw_busy = False
        while t.is_alive():
            try:
                s.position
            except RuntimeError as e:
                assert "in use by another thread" in str(e)
                saw_busy = True
                with pytest.raises(RuntimeError):
                    s.step(3)  # a second call on a busy session is refused, not run concurrently
                with pytest.raises(RuntimeError):
                    s.close()
                break
            time.sleep(0.001)
        t.join()
        assert "error" not in box, box.get("error")
        assert s.position == 256
        s.close()
        if saw_busy:
            break
    assert saw_busy, "the main thread never ran while prefill was running: the GIL was held"


def test_two_threads_benchmark(m270):
    """Benchmark, not a timing assert: two sessions on two threads vs the same work twice in a row."""
    ids = long_ids(m270, 160)
    a, b = m270.session(threads=1), m270.session(threads=1)

    def work(s):
        snap = s.snapshot()
        s.prefill(ids)
        out = [s.step(5) for _ in range(8)]
        s.restore(snap)
        return out

    work(a)  # warm up
    t0 = time.perf_counter()
    ra = work(a)
    rb = work(b)
    serial = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    ta, box_a = run_in_thread(lambda: work(a))
    tb, box_b = run_in_thread(lambda: work(b))
    ta.join()
    tb.join()
    parallel = time.perf_counter() - t0
    cpu = time.process_time() - c0  # at most 1 x wall if the GIL serialized the threads
    assert box_a.get("value") == ra and box_b.get("value") == rb  # the same results in parallel
    report(f"GIL: two sessions on two threads {parallel:.2f} s vs one after the other {serial:.2f} s: "
           f"ratio {parallel / serial:.2f} (about 0.5 when both run at once, 1.0 if serialized; "
           f"{len(ids)}-token prefill + 8 steps each, 270m Q8_0, 1 worker thread per session); "
           f"process CPU time / wall during the threads: {cpu / parallel:.2f} (up to 2 on 2 idle cores, "
           f"at most 1 if the GIL were held; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")


def test_cancel_prefill(m270):
    s = m270.session(threads=1)
    s.prefill([2, 105])
    before = bytes(s.logits())
    snap = s.snapshot()
    assert s.cancel() is False  # nothing running: no effect on the next call
    ids = long_ids(m270, 400)
    for _ in attempts():
        t, box = run_in_thread(lambda: s.prefill(ids))
        cancelled = cancel_while_running(t, s)
        if "error" in box:
            break
        s.restore(snap)  # it ended before the cancel reached a layer boundary: again
    assert cancelled, "prefill finished before cancel() could reach it"
    err = box.get("error")
    assert isinstance(err, fgemma.Error) and err.status == "FG_ERR_ABORTED", box
    assert s.position == 2 and bytes(s.logits()) == before  # as it was
    assert isinstance(s.step(7), int) and s.position == 3  # and usable


def test_cancel_ask(tiny_vocab, tv_catalog_path):
    with tiny_vocab.nlu(tv_catalog_path, max_tokens=200) as nlu:
        assert nlu.cancel() is False
        for _ in attempts():
            t, box = run_in_thread(lambda: nlu.ask("Schalte auf ZDF um"))
            cancelled = cancel_while_running(t, nlu)
            if "error" in box:
                break
        assert cancelled
        assert isinstance(box.get("error"), fgemma.Error) and box["error"].status == "FG_ERR_ABORTED", box
        assert "calls" in nlu.ask("Ton aus")  # the engine still answers


def test_forks_in_parallel_equal_serial():
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as m:
        s = m.session()
        s.prefill(long_ids(m, 30))
        snap = s.snapshot()
        def run(k):
            f = snap.fork()
            out = [f.prefill([3 + k, 4 + k])] + [f.step(9) for _ in range(20)]
            return out, bytes(f.logits())
        serial = [run(k) for k in range(4)]
        threads = [run_in_thread(lambda k=k: run(k)) for k in range(4)]
        for t, _ in threads:
            t.join()
        assert [box["value"] for _, box in threads] == serial


def test_nlu_busy(tiny):
    with tiny.nlu(MINI_CATALOG, max_tokens=64) as nlu:
        saw_busy = False
        for _ in attempts():
            t, box = run_in_thread(lambda: [nlu.ask("Schalte auf ZDF um") for _ in range(20)])
            while t.is_alive():
                try:
                    nlu.info
                except RuntimeError:
                    saw_busy = True
                    break
                time.sleep(0.0005)
            t.join()
            assert "error" not in box, box.get("error")
            if saw_busy:
                break
        assert saw_busy
