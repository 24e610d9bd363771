package dev.fgemma

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test

/**
 * Memory over many asks: RSS after 2,000 asks (system property fgemma.soak.asks) stays within 20 MB of
 * RSS after a warm-up. Prints its figures; asserts no timing.
 */
private const val SOAK_CATALOG = """{"id":"soak.v1","functions":[
 {"name":"switch_channel","description":"Switch the TV channel.","parameters":{"channel":{"type":"string","enum":["ARD","ZDF","RTL","arte"]}},"required":["channel"]},
 {"name":"set_volume","description":"Change the volume.","parameters":{"direction":{"type":"string","enum":["up","down","mute"]}},"required":["direction"]},
 {"name":"power_off","description":"Switch the TV off."}]}"""

class SoakTest {
    @Test
    @Tag("slow")
    fun `2000 asks keep RSS flat within 20 MB`() {
        val n = (System.getProperty("fgemma.soak.asks") ?: "2000").toInt()
        val utts = TestEnv.utterances
        FgModel.load(TestEnv.tiny).use { m ->
            // enum-only parameters: every answer is a short call, so the loop measures the engine, not
            // long random strings (the model is random)
            ToolCatalog.fromJson(SOAK_CATALOG).use { c ->
                m.newNlu(c, NluOptions().apply { constrained = Constrain.CALL_ONLY; threads = 2 }).use { nlu ->
                    val want = utts.map { nlu.askBlocking(it).json }
                    repeat(100) { nlu.askBlocking(utts[it % utts.size]) }
                    System.gc()
                    val before = TestEnv.rss()
                    val t0 = System.nanoTime()
                    for (i in 0 until n) {
                        val r = nlu.askBlocking(utts[i % utts.size])
                        if (i < utts.size) assertEquals(want[i], r.json) // the same answers all along
                        r.calls // parse them too
                    }
                    val s = (System.nanoTime() - t0) / 1e9
                    System.gc()
                    val after = TestEnv.rss()
                    val growth = (after - before) / 1e6
                    println("soak: $n asks (tiny, call-only) in %.1f s: RSS %.1f MB -> %.1f MB (%+.1f MB)"
                        .format(s, before / 1e6, after / 1e6, growth))
                    assertTrue(growth < 20.0, "RSS grew by $growth MB over $n asks")
                }
            }
        }
    }
}
