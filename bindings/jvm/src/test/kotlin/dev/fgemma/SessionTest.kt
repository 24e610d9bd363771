package dev.fgemma

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import java.io.File
import java.util.concurrent.Callable
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit

class SessionTest {
    private val prompt = intArrayOf(2, 105, 2364, 107, 9259, 1217, 4009, 531, 2201, 2027, 496, 236761)

    private fun oneThread() = SessionOptions().apply { threads = 1 }

    /** Greedy ids after a start id, n steps. */
    private fun FgSession.greedy(first: Int, n: Int): IntArray {
        var next = first
        return IntArray(n) { next = step(next); next }
    }

    @Test
    fun `prefill, step, logits, position, snapshot, restore`() {
        FgModel.load(TestEnv.tiny).use { m ->
            m.newSession(oneThread()).use { s ->
                assertEquals(0, s.position)
                assertThrows(IllegalStateException::class.java) { s.logits() }
                val next = s.prefill(prompt)
                assertEquals(prompt.size, s.position)
                val logits = s.logits()
                assertEquals(m.info.vocabSize, logits.size)
                assertEquals(logits.indices.maxByOrNull { logits[it] }, next) // greedy = argmax
                val snap = s.snapshot()
                assertEquals(prompt.size, snap.position)
                val a = s.greedy(next, 8)
                assertEquals(prompt.size + 8, s.position)
                s.restore(snap)
                assertEquals(prompt.size, s.position)
                assertArrayEquals(logits, s.logits())
                assertArrayEquals(a, s.greedy(next, 8)) // restore gives the same continuation
                snap.fork(oneThread()).use { f ->
                    assertEquals(prompt.size, f.position)
                    assertArrayEquals(a, f.greedy(next, 8))
                }
                snap.close()
                // bad input leaves the session as it was
                val pos = s.position
                val before = s.logits()
                assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { s.step(-5) }.status)
                assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { s.step(m.info.vocabSize) }.status)
                assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { s.prefill(IntArray(0)) }.status)
                assertEquals(pos, s.position)
                assertArrayEquals(before, s.logits())
            }
            // context full
            m.newSession(SessionOptions().apply { nCtx = 8; threads = 1 }).use { s ->
                val e = assertThrows(FgException::class.java) { s.prefill(prompt) }
                assertEquals(FgStatus.CONTEXT_FULL, e.status)
                assertEquals(0, s.position)
            }
            assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) {
                m.newSession(SessionOptions().apply { nCtx = 1 shl 30 })
            }.status)
            assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) {
                m.newSession(SessionOptions().apply { threads = -1 })
            }.status)
        }
    }

    @Test
    fun `f16 KV sessions fork and restore with their own type`() {
        FgModel.load(TestEnv.tiny).use { m ->
            m.newSession(SessionOptions().apply { kvType = KvType.F16; threads = 1 }).use { s ->
                val next = s.prefill(prompt)
                s.snapshot().use { snap ->
                    snap.fork().use { f -> assertEquals(s.greedy(next, 4).toList(), f.greedy(next, 4).toList()) }
                    val e = assertThrows(FgException::class.java) { snap.fork(SessionOptions().apply { kvType = KvType.F32 }) }
                    assertEquals(FgStatus.MISMATCH, e.status)
                    m.newSession().use { f32 -> assertEquals(FgStatus.MISMATCH, assertThrows(FgException::class.java) { f32.restore(snap) }.status) }
                }
            }
        }
    }

    @Test
    @Tag("slow")
    fun `forks of one snapshot on 4 threads give the ids of one thread`() {
        for ((path, steps) in listOf(TestEnv.tiny to 32, TestEnv.m270 to 6)) {
            FgModel.load(path).use { m ->
                val base = m.newSession(oneThread())
                val next = base.prefill(prompt)
                val snap = base.snapshot()
                base.close()
                val starts = IntArray(4) { if (it == 0) next else 1000 + 37 * it }
                val alone = starts.map { st -> snap.fork(oneThread()).use { it.greedy(st, steps) } }
                val pool = Executors.newFixedThreadPool(4)
                try {
                    val go = CountDownLatch(1)
                    val futures = starts.map { st ->
                        pool.submit(Callable { go.await(); snap.fork(oneThread()).use { it.greedy(st, steps) } })
                    }
                    go.countDown()
                    val together = futures.map { it.get(10, TimeUnit.MINUTES) }
                    for (k in 0 until 4) assertArrayEquals(alone[k], together[k], "$path: thread $k")
                } finally {
                    pool.shutdown()
                }
                snap.close()
            }
        }
    }

    @Test
    @Tag("slow")
    fun `cancel from another thread stops a 2000-token prefill, position unchanged`() {
        FgModel.load(TestEnv.m270).use { m ->
            m.newSession(SessionOptions().apply { threads = 2 }).use { s ->
                s.prefill(prompt)
                val logits = s.logits()
                val snap = s.snapshot()
                val long = IntArray(2000) { 1000 + (it * 7919) % 200000 }
                // the whole prefill, uncancelled: the yardstick of the cancel below (any CPU speed)
                val t0 = System.nanoTime()
                s.prefill(long)
                val fullMs = (System.nanoTime() - t0) / 1e6
                s.restore(snap)
                // The cancel is sent as soon as the call is running (cancel() says whether it was). A
                // call that had already passed its last layer check still completes: then try again
                // (bounded), so no outcome depends on how fast this CPU is.
                var cancelled = false
                for (attempt in 1..5) {
                    var failure: Throwable? = null
                    var ended = 0L
                    val t = Thread {
                        try {
                            s.prefill(long)
                        } catch (e: Throwable) {
                            failure = e
                        } finally {
                            ended = System.nanoTime()
                        }
                    }
                    t.start()
                    var sent = 0L
                    while (t.isAlive) {
                        if (s.cancel()) {
                            sent = System.nanoTime()
                            break
                        }
                        Thread.yield()
                    }
                    t.join(60_000)
                    assertTrue(!t.isAlive, "the prefill thread did not end")
                    if (failure == null) { // finished before the cancel landed: as if none was sent
                        assertEquals(prompt.size + long.size, s.position)
                        s.restore(snap)
                        continue
                    }
                    val e = failure as? FgException ?: throw AssertionError("prefill failed otherwise: $failure")
                    assertEquals(FgStatus.ABORTED, e.status)
                    val ms = (ended - sent) / 1e6
                    println("cancel of a 2000-token prefill (270m q8_0, 2 threads; %.0f ms uncancelled): returned after %.1f ms".format(fullMs, ms))
                    // within one layer of one chunk: a small part of the whole prefill
                    assertTrue(ms < fullMs / 4, "cancel took $ms ms of a $fullMs ms prefill")
                    assertEquals(prompt.size, s.position)
                    assertArrayEquals(logits, s.logits())
                    cancelled = true
                    break
                }
                assertTrue(cancelled, "no cancel reached the prefill in 5 attempts")
                snap.close()
                // the session still works, and a cancel with nothing running changes nothing
                assertEquals(false, s.cancel())
                s.step(5)
                assertEquals(prompt.size + 1, s.position)
            }
        }
    }

    @Test
    fun `closing the model while sessions live, then using the sessions`() {
        val m = FgModel.load(TestEnv.tiny)
        val s = m.newSession(oneThread())
        val next = s.prefill(prompt)
        val snap = s.snapshot()
        val ref = m.newSession(oneThread()).use { r -> r.prefill(prompt); r.greedy(next, 6) }
        m.close()
        assertThrows(IllegalStateException::class.java) { m.newSession() }
        assertArrayEquals(ref, s.greedy(next, 6))
        snap.fork(oneThread()).use { f -> assertArrayEquals(ref, f.greedy(next, 6)) }
        s.restore(snap)
        assertArrayEquals(ref, s.greedy(next, 6))
        s.close()
        snap.fork(oneThread()).use { f ->
            snap.close()
            assertArrayEquals(ref, f.greedy(next, 6)) // the last holder
        }
    }

    @Test
    fun `use after close throws IllegalStateException`() {
        FgModel.load(TestEnv.tiny).use { m ->
            val s = m.newSession(oneThread())
            s.prefill(prompt)
            val snap = s.snapshot()
            s.close()
            s.close()
            for (call in listOf({ s.prefill(prompt) }, { s.step(1) }, { s.position }, { s.logits() }, { s.snapshot() },
                    { s.restore(snap) }, { s.cancel() })) {
                assertThrows(IllegalStateException::class.java) { call() }
            }
            m.newSession().use { live ->
                snap.close()
                assertThrows(IllegalStateException::class.java) { live.restore(snap) }
            }
            for (call in listOf({ snap.fork() }, { snap.position }, { snap.save(TestEnv.scratch("x").path) })) {
                assertThrows(IllegalStateException::class.java) { call() }
            }
        }
    }

    @Test
    fun `close from another thread during a prefill cancels it and frees afterwards`() {
        FgModel.load(TestEnv.m270).use { m ->
            // closed as soon as the prefill runs; one that had passed its last layer check completes
            // instead: then again on a new session (bounded), so no outcome depends on the CPU's speed
            var aborted = false
            for (attempt in 1..5) {
                val s = m.newSession(SessionOptions().apply { threads = 2 })
                var failure: Throwable? = null
                val t = Thread {
                    try {
                        s.prefill(IntArray(1500) { 100 + it })
                    } catch (e: Throwable) {
                        failure = e
                    }
                }
                t.start()
                while (t.isAlive && !s.handle.isRunning) Thread.yield()
                s.close()
                assertThrows(IllegalStateException::class.java) { s.position }
                t.join(60_000)
                assertTrue(!t.isAlive, "the prefill thread did not end")
                if (failure == null) continue
                assertEquals(FgStatus.ABORTED, (failure as FgException).status)
                aborted = true
                break
            }
            assertTrue(aborted, "no close reached the prefill in 5 attempts")
        }
    }

    @Test
    fun `snapshot files - save in one JVM, load in another`() {
        val file = TestEnv.scratch("prefix.fgsnap")
        val (next, want) = FgModel.load(TestEnv.tiny).use { m ->
            m.newSession(oneThread()).use { s ->
                val next = s.prefill(prompt)
                s.snapshot().use { it.save(file.path) }
                next to s.greedy(next, 12)
            }
        }
        val java = File(System.getProperty("java.home"), "bin/java").path
        val p = ProcessBuilder(java, "-Xcheck:jni", "-cp", System.getProperty("java.class.path"),
            "dev.fgemma.SnapshotChild", TestEnv.tiny, file.path, next.toString(), "12")
            .redirectErrorStream(true).start()
        val out = p.inputStream.bufferedReader().readText()
        assertTrue(p.waitFor(5, TimeUnit.MINUTES))
        assertEquals(0, p.exitValue(), out)
        val ids = out.lines().first { it.startsWith("ids ") }.removePrefix("ids ").split(",").map { it.trim().toInt() }
        assertEquals(want.toList(), ids)
        // and refused files: another model, a damaged copy
        FgModel.load(TestEnv.m270).use { other ->
            assertEquals(FgStatus.MISMATCH, assertThrows(FgException::class.java) { FgSnapshot.load(other, file.path) }.status)
        }
        val bytes = file.readBytes()
        val bad = TestEnv.scratch("damaged.fgsnap")
        bad.writeBytes(bytes.copyOf(bytes.size - 9))
        FgModel.load(TestEnv.tiny).use { m ->
            val e = assertThrows(FgException::class.java) { FgSnapshot.load(m, bad.path) }
            assertEquals(FgStatus.FORMAT, e.status)
            assertTrue(e.message!!.contains(bad.path), e.message)
            val io = assertThrows(FgException::class.java) { FgSnapshot.load(m, TestEnv.scratch("missing.fgsnap").path) }
            assertEquals(FgStatus.IO, io.status)
        }
    }
}

/** The second JVM of the snapshot test: loads model + snapshot file, prints the greedy ids. */
object SnapshotChild {
    @JvmStatic
    fun main(args: Array<String>) {
        FgModel.load(args[0]).use { m ->
            FgSnapshot.load(m, args[1]).use { snap ->
                snap.fork(SessionOptions().apply { threads = 1 }).use { s ->
                    var next = args[2].toInt()
                    val ids = IntArray(args[3].toInt()) { next = s.step(next); next }
                    println("ids " + ids.joinToString(","))
                }
            }
        }
    }
}
