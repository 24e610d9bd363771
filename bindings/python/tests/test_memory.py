"""Memory stays flat over many calls (prints its figures)."""

import gc
import os

import numpy as np

from conftest import MINI_CATALOG, report


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_2000_asks_rss_flat(tiny):
    utterances = ["Schalte auf ZDF um", "Mach bitte etwas lauter", "Ton aus", "Stell die Lautstärke auf 20"]
    with tiny.nlu(MINI_CATALOG, constrained="call-only") as nlu:
        for i in range(200):  # warm-up: allocator pools, buffers reach their size
            nlu.ask(utterances[i % 4])
        gc.collect()
        before = rss_bytes()
        calls = 0
        for i in range(2000):
            r = nlu.ask(utterances[i % 4], full=(i % 2 == 0))
            calls += len(r["result"]["calls"] if "result" in r else r["calls"])
        gc.collect()
        after = rss_bytes()
    assert calls == 2000  # call-only: one call per answer
    growth = after - before
    report(f"RSS over 2,000 asks (tiny model, call-only): {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB "
           f"({growth / 1024:+.0f} KiB, {growth / 2000:+.1f} bytes per ask)")
    assert growth < 1 << 20, f"RSS grew by {growth} bytes over 2,000 asks"


def test_logits_views_released(tiny_vocab):
    """Views of 1 MiB logits taken on every step: a leaked view would keep each buffer alive."""
    s = tiny_vocab.session()
    s.prefill([2, 105, 2364])
    for _ in range(20):
        np.frombuffer(s.logits(), np.float32).argmax()
        s.step(5)
    gc.collect()
    before = rss_bytes()
    nxt = 5
    for _ in range(300):
        view = np.frombuffer(s.logits(), np.float32)  # held across the step: a fresh buffer is taken
        nxt = s.step(int(view.argmax()) if nxt % 2 else 5)
        del view
    gc.collect()
    after = rss_bytes()
    growth = after - before
    report(f"RSS over 300 steps with a 1 MiB logits view held across each: {growth / 1024:+.0f} KiB")
    assert growth < 16 << 20, f"RSS grew by {growth} bytes: logits views are not released"
