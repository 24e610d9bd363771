package dev.fgemma

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File

/**
 * Model views (FgModel.withLora, fg_model_with_loras) on the tiny model with two adapters from the CLI's
 * gen-lora: the same logits as the model loaded with the adapter, the base unchanged, views on two
 * threads, close orders, snapshots refused across views, misuse.
 */
class ViewTest {
    companion object {
        private fun genLora(seed: Int): String {
            val out = TestEnv.scratch("view-$seed.gguf")
            val p = ProcessBuilder(TestEnv.cli.path, "gen-lora", "-m", TestEnv.tiny, "-o", out.path, "--seed", "$seed")
                .redirectErrorStream(true).start()
            val log = p.inputStream.bufferedReader().readText()
            check(p.waitFor() == 0) { "fgemma gen-lora failed: $log" }
            return out.path
        }

        val a: String by lazy { genLora(31) }
        val b: String by lazy { genLora(32) }
        private val IDS = intArrayOf(2, 1000, 2000, 3000, 4000)

        fun logits(m: FgModel): FloatArray = m.newSession(SessionOptions().apply { threads = 1 }).use { s ->
            s.prefill(IDS)
            s.logits()
        }
    }

    @Test
    fun `a view answers as the model loaded with its adapter, and the base is unchanged`() {
        FgModel.load(TestEnv.tiny).use { base ->
            val before = logits(base)
            val loaded = FgModel.load(TestEnv.tiny, ModelOptions().apply { lora = listOf(LoraAdapter(a, 0.5f)) })
            base.withLora(a, 0.5f).use { va ->
                base.withLora(LoraAdapter(b)).use { vb ->
                    assertEquals(loaded.info.fingerprint, va.info.fingerprint)
                    assertNotEquals(base.info.fingerprint, va.info.fingerprint)
                    assertEquals(1, va.info.loraCount)
                    assertTrue(va.info.loraBytes > 0)
                    assertArrayEquals(logits(loaded), logits(va))
                    assertFalse(logits(va).contentEquals(logits(vb)))
                    va.withLora(b).use { vab -> assertEquals(2, vab.info.loraCount) }
                    // two views on two threads at once
                    val want = listOf(logits(va), logits(vb))
                    val bad = java.util.concurrent.atomic.AtomicInteger()
                    val ts = listOf(va, vb).mapIndexed { i, v ->
                        Thread { repeat(3) { if (!logits(v).contentEquals(want[i])) bad.incrementAndGet() } }
                    }
                    ts.forEach { it.start() }
                    ts.forEach { it.join() }
                    assertEquals(0, bad.get())
                }
            }
            loaded.close()
            assertArrayEquals(before, logits(base))
        }
    }

    @Test
    fun `close in any order, snapshots refused across views`() {
        val base = FgModel.load(TestEnv.tiny)
        val va = base.withLora(a)
        val vb = base.withLora(b)
        base.close() // the views keep the weights
        val s = va.newSession()
        s.prefill(IDS)
        val snap = s.snapshot()
        va.close()
        val path = TestEnv.scratch("view-a.fgsnap").path
        snap.save(path)
        val e = assertThrows(FgException::class.java) { FgSnapshot.load(vb, path) }
        assertEquals(FgStatus.MISMATCH, e.status)
        vb.newSession().use { other -> assertThrows(FgException::class.java) { other.restore(snap) } }
        s.prefill(intArrayOf(7))
        snap.close()
        s.close()
        vb.close()
    }

    @Test
    fun `misuse throws clear exceptions`() {
        val base = FgModel.load(TestEnv.tiny)
        assertThrows(IllegalArgumentException::class.java) { base.withLora(emptyList()) }
        val missing = File(TestEnv.scratch("none"), "missing.gguf").path
        val io = assertThrows(FgException::class.java) { base.withLora(missing) }
        assertEquals(FgStatus.IO, io.status)
        assertTrue(io.message!!.contains("missing.gguf"), io.message)
        val notAdapter = assertThrows(FgException::class.java) { base.withLora(TestEnv.tiny) }
        assertEquals(FgStatus.FORMAT, notAdapter.status)
        assertThrows(IllegalArgumentException::class.java) { base.withLora(a, Float.NaN) }
        FgModel.load(TestEnv.tiny, ModelOptions().apply { lora = listOf(LoraAdapter(a)); loraMerge = LoraMerge.F32 }).use { merged ->
            val u = assertThrows(FgException::class.java) { merged.withLora(b) }
            assertEquals(FgStatus.UNSUPPORTED, u.status)
        }
        base.close()
        assertThrows(IllegalStateException::class.java) { base.withLora(a) }
        base.close() // idempotent
    }
}
