"""The GIL is released during long calls; cancel() from another thread; one call at a time per object: a call
from another thread waits for the running one (as in Kotlin and C's contract), close() from another thread
closes at once, cancels the running call and frees the object when it returns (docs/OPTIONS.md)."""

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


def wait_busy(t, obj):
    """Until obj runs a call (its _busy flag, set while the GIL is released) or thread t ended; True when
    it was seen running. The main thread running Python here while the call runs proves the GIL free."""
    while t.is_alive():
        if obj._busy:
            return True
        time.sleep(0.0005)
    return False


def test_busy_session_waits(m270):
    """A call on a session that another thread's prefill holds waits for it (GIL released), then runs: never
    an error, never at the same time (the order is checked through the resulting state)."""
    ids = long_ids(m270, 256)
    ref = m270.session(threads=1)
    ref.prefill(ids)
    after = ref.step(3)  # prefill, then step(3): the only order a waiting step can give
    ref.close()
    seen = False
    for _ in attempts():
        s = m270.session(threads=1)
        t, box = run_in_thread(lambda: s.prefill(ids))
        seen = wait_busy(t, s)
        if seen:
            assert s.position == 256  # a quick call waits too: the prefill's whole result, never a part
            nxt = s.step(3)  # waits for the prefill, then runs after it
        t.join()
        assert "error" not in box, box.get("error")
        if seen:
            assert nxt == after and s.position == 257
            s.close()
            break
        s.close()
    assert seen, "the main thread never ran while prefill was running: the GIL was held"


def test_close_during_call(m270):
    """close() from another thread: closed at once, the running call cancelled (or finished), a waiting call
    raises "closed", and the KV cache is freed when the running call returns."""
    ids = long_ids(m270, 400)
    seen = False
    for _ in attempts():
        s = m270.session(threads=1)
        t, box = run_in_thread(lambda: s.prefill(ids))
        seen = wait_busy(t, s)
        if seen:
            waiter, wbox = run_in_thread(lambda: s.step(3))
            assert s.close() is None and s.closed  # does not wait for the call
            with pytest.raises(fgemma.ArgumentError, match="closed"):
                s.position
            waiter.join()
            assert isinstance(wbox.get("error"), fgemma.ArgumentError), wbox
        t.join()
        if seen:
            err = box.get("error")
            assert err is None or (isinstance(err, fgemma.Error) and err.status == "FG_ERR_ABORTED"), box
            assert s.closed and not s._busy
            s.close()  # idempotent
            break
        s.close()
    assert seen, "prefill finished before close() could reach it"


def test_nested_call_during_argument_conversion(tiny):
    """Python code that runs while a call converts its arguments (here __index__) may use the same session:
    it runs before the call claims the session, so nothing waits for itself."""
    s = tiny.session()

    class Tok:
        def __index__(self):
            s.step(3)  # a whole call of its own, before the prefill below starts
            return 4

    s.prefill([2, Tok(), 5])
    assert s.position == 4
    ref = tiny.session()
    ref.step(3)
    ref.prefill([2, 4, 5])
    assert bytes(s.logits()) == bytes(ref.logits())


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


def test_nlu_busy_waits(tiny):
    """Two threads asking one engine: both get their answers, the same as asked one after the other."""
    utts = ["Schalte auf ZDF um", "Mach lauter", "Ton aus", "Hallo"]
    with tiny.nlu(MINI_CATALOG, max_tokens=64) as nlu:
        serial = []
        for u in utts:
            r = nlu.ask(u)
            r.pop("ms")
            serial.append(r)

        def run():
            out = []
            for _ in range(5):
                for u in utts:
                    r = nlu.ask(u)
                    r.pop("ms")
                    out.append(r)
            return out

        seen = False
        for _ in attempts():
            a, box_a = run_in_thread(run)
            b, box_b = run_in_thread(run)
            while a.is_alive() or b.is_alive():
                if nlu._busy:
                    seen = True
                    assert nlu.info["functions"] == 2  # waits for the running ask, then reads
                    break
                time.sleep(0.0005)
            a.join()
            b.join()
            assert "error" not in box_a and "error" not in box_b, (box_a.get("error"), box_b.get("error"))
            assert box_a["value"] == serial * 5 and box_b["value"] == serial * 5
            if seen:
                break
        assert seen


def test_nlu_close_during_ask(tiny_vocab, tv_catalog_path):
    seen = False
    for _ in attempts():
        nlu = tiny_vocab.nlu(tv_catalog_path, max_tokens=200)
        t, box = run_in_thread(lambda: nlu.ask("Schalte auf ZDF um"))
        seen = wait_busy(t, nlu)
        if seen:
            nlu.close()
            assert nlu.closed
            with pytest.raises(fgemma.ArgumentError, match="closed"):
                nlu.ask("Ton aus")
        t.join()
        if seen:
            err = box.get("error")
            assert err is None or (isinstance(err, fgemma.Error) and err.status == "FG_ERR_ABORTED"), box
            break
        nlu.close()
    assert seen
