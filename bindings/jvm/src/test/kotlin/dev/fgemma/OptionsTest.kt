package dev.fgemma

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** One set of names and defaults on every surface (docs/OPTIONS.md). */
class OptionsTest {
    @Test
    fun `constrained decoding defaults to call-or-text, as in C, the CLI, the server and Python`() {
        assertEquals(Constrain.CALL_OR_TEXT, NluOptions().constrained)
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(LAMP_CATALOG).use { c ->
                val utts = listOf("turn the lamp on", "Stelle einen Timer auf 5 Minuten", "hallo")
                m.newNlu(c, NluOptions().apply { threads = 1; maxTokens = 12 }).use { d ->
                    m.newNlu(c, NluOptions().apply { threads = 1; maxTokens = 12; constrained = Constrain.CALL_OR_TEXT }).use { e ->
                        assertEquals(Constrain.CALL_OR_TEXT, d.info.constrained) // the mode in effect
                        assertTrue(d.info.speculate)
                        for (u in utts) {
                            val a = d.askBlocking(u)
                            val b = e.askBlocking(u)
                            assertEquals(b.json, a.json, u)
                            assertEquals(b.raw, a.raw, u)
                            assertEquals(b.forcedTokens, a.forcedTokens, u)
                        }
                    }
                }
                m.newNlu(c, NluOptions().apply { threads = 1; maxTokens = 12; constrained = Constrain.OFF }).use { o ->
                    assertEquals(Constrain.OFF, o.info.constrained)
                    val r = o.askBlocking("turn the lamp on")
                    assertEquals(r.decodeTokens, r.fullHeadSteps) // plain greedy: every token from the full head
                    assertEquals(0, r.sparseHeadSteps + r.forcedTokens)
                }
            }
        }
    }

    @Test
    @Suppress("DEPRECATION")
    fun `the deprecated names set the same options`() {
        val o = NluOptions()
        o.constrain = Constrain.CALL_ONLY
        assertEquals(Constrain.CALL_ONLY, o.constrained)
        o.contextSize = 1024
        assertEquals(1024, o.nCtx)
        assertEquals(1024, o.contextSize)
        val s = SessionOptions()
        s.contextSize = 64
        assertEquals(64, s.nCtx)
        FgModel.load(TestEnv.tiny).use { m ->
            m.newSession(SessionOptions().apply { contextSize = 8; threads = 1 }).use { t ->
                t.prefill(IntArray(8) { 2 + it })
                assertEquals(FgStatus.CONTEXT_FULL, assertThrows(FgException::class.java) { t.step(3) }.status)
            }
        }
    }

    @Test
    fun `every engine option can be set and none changes the answer`() {
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(LAMP_CATALOG).use { c ->
                val variants = listOf<NluOptions.() -> Unit>(
                    {},
                    { nCtx = 1024; batch = 7; kvType = KvType.F32 },
                    { speculate = false },
                    { maxDraft = 1 },
                    { answerCache = false },
                    { multiCall = false; threads = 2 },
                )
                var first: String? = null
                for (v in variants) {
                    val opts = NluOptions().apply { threads = 1; maxTokens = 16; constrained = Constrain.CALL_ONLY }.apply(v)
                    m.newNlu(c, opts).use { nlu ->
                        assertEquals(opts.speculate, nlu.info.speculate)
                        val r = nlu.askBlocking("turn the lamp on")
                        if (first == null) first = r.json
                        assertEquals(first, r.json)
                    }
                }
                val dir = TestEnv.scratch("options-f16").apply { deleteRecursively(); mkdirs() }
                m.newNlu(c, NluOptions().apply { threads = 1; kvType = KvType.F16; snapshotDir = dir.path }).use { h ->
                    assertTrue(h.info.snapshotName.contains("-f16-"), h.info.snapshotName) // the engine runs an F16 cache
                }
                for (bad in listOf<NluOptions.() -> Unit>({ maxDraft = 33 }, { nCtx = 64 }, { batch = 5000 }, { maxTokens = -1 })) {
                    val e = assertThrows(FgException::class.java) { m.newNlu(c, NluOptions().apply(bad)).close() }
                    assertFalse(e.message.isNullOrEmpty())
                    assertTrue(e.status == FgStatus.INVALID_ARG || e.status == FgStatus.CONTEXT_FULL, e.toString())
                }
            }
        }
    }
}
