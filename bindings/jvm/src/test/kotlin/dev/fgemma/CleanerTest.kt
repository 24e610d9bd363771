package dev.fgemma

import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The PhantomReference safety net: objects dropped without close() are freed by the cleaner thread. */
class CleanerTest {
    private fun leak(n: Int) {
        val m = FgModel.load(TestEnv.tiny)
        for (i in 0 until n) {
            val s = m.newSession(SessionOptions().apply { threads = 1; nCtx = 64 })
            s.prefill(intArrayOf(2, 100 + i))
            s.snapshot() // dropped
        }
        ToolCatalog.fromJson(LAMP_CATALOG) // dropped
    }

    @Test
    fun `unclosed objects are freed after they become unreachable`() {
        val before = Cleaner.collected.get()
        leak(20)
        val want = before + 20 + 20 + 2 // sessions, snapshots, the model, the catalog
        val deadline = System.nanoTime() + 30_000_000_000L
        while (Cleaner.collected.get() < want && System.nanoTime() < deadline) {
            System.gc()
            Thread.sleep(20)
        }
        val got = Cleaner.collected.get() - before
        println("cleaner: $got handles freed without close()")
        assertTrue(got >= 42, "only $got of 42 handles were freed by the cleaner")
    }
}
