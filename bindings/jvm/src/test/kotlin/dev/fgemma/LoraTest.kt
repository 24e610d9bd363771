package dev.fgemma

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.io.RandomAccessFile
import kotlin.math.abs

/**
 * LoRA adapters through ModelOptions.lora / loraMerge, on the tiny model with PEFT's own adapters of
 * tests/data/peft (tools/hf/make_peft_fixtures.py), converted by the CLI beside the JNI library
 * (`fgemma convert DIR --base`). The adapters were trained for the tiny preset's shape; the
 * real-vocabulary tiny model shares it (its layers, not its embedding).
 */
class LoraTest {
    companion object {
        private fun convert(name: String): String {
            val out = TestEnv.scratch("$name.gguf")
            val p = ProcessBuilder(
                TestEnv.cli.path, "convert", File(TestEnv.root, "tests/data/peft/$name").path, "-o", out.path,
                "--base", TestEnv.tiny,
            ).redirectErrorStream(true).start()
            val log = p.inputStream.bufferedReader().readText()
            check(p.waitFor() == 0) { "fgemma convert $name failed: $log" }
            return out.path
        }

        /** F32, rank 4 (o_proj rank 2) */
        val r4: String by lazy { convert("tiny-r4-f32") }
        /** BF16, rsLoRA, rank 8 */
        val rslora: String by lazy { convert("tiny-rslora-bf16") }

        private val IDS = intArrayOf(2, 1000, 2000, 3000, 4000, 5000, 6000)

        fun logits(options: ModelOptions): FloatArray = FgModel.load(TestEnv.tiny, options).use { m ->
            m.newSession(SessionOptions().apply { threads = 1 }).use { s ->
                s.prefill(IDS)
                s.logits()
            }
        }

        val kernels: String by lazy { FgModel.load(TestEnv.tiny).use { it.info.kernels } }

        fun opts(vararg lora: LoraAdapter, merge: LoraMerge = LoraMerge.RUNTIME) = ModelOptions().apply {
            this.lora = lora.toList()
            loraMerge = merge
        }

        /** max |a - b| relative to max |b| */
        fun rel(a: FloatArray, b: FloatArray): Double {
            var d = 0.0
            var s = 0.0
            for (i in a.indices) {
                d = maxOf(d, abs(a[i].toDouble() - b[i]))
                s = maxOf(s, abs(b[i].toDouble()))
            }
            return d / s
        }
    }

    @Test
    fun `adapters reach the loader and getInfo reports them`() {
        FgModel.load(TestEnv.tiny).use { m ->
            val i = m.info
            assertEquals(0, i.loraCount)
            assertEquals(LoraMerge.RUNTIME, i.loraMerge)
            assertEquals(0L, i.loraBytes)
        }
        FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4), LoraAdapter(rslora, 0.5f))).use { m ->
            val i = m.info
            assertEquals(2, i.loraCount)
            assertEquals(LoraMerge.RUNTIME, i.loraMerge)
            assertTrue(i.loraBytes > 0, "loraBytes ${i.loraBytes}")
            assertTrue(i.loraMs >= 0.0)
        }
        for (merge in listOf(LoraMerge.F32, LoraMerge.BF16, LoraMerge.Q8_0)) {
            FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4), merge = merge)).use { m ->
                assertEquals(merge, m.info.loraMerge)
                assertEquals(1, m.info.loraCount)
                assertTrue(m.info.loraBytes > 0)
            }
        }
    }

    @Test
    fun `scale 0 changes nothing, scale 1 does, and scales add up`() {
        val base = logits(ModelOptions())
        assertArrayEquals(base, logits(opts(LoraAdapter(r4, 0f))))
        val one = logits(opts(LoraAdapter(r4)))
        assertTrue(rel(one, base) > 1e-2, "the adapter changes the logits: ${rel(one, base)}")
        val halves = logits(opts(LoraAdapter(r4, 0.5f), LoraAdapter(r4, 0.5f)))
        assertTrue(rel(halves, one) <= 1e-5, "0.5 + 0.5 vs 1: ${rel(halves, one)}")
    }

    @Test
    fun `merged adapters give the run-time adapters' logits`() {
        for (adapter in listOf(r4, rslora)) {
            val runtime = logits(opts(LoraAdapter(adapter)))
            val f32 = logits(opts(LoraAdapter(adapter), merge = LoraMerge.F32))
            assertTrue(rel(f32, runtime) <= 1e-4, "F32 merge of $adapter: ${rel(f32, runtime)}")
            for (merge in listOf(LoraMerge.BF16, LoraMerge.Q8_0)) {
                val merged = logits(opts(LoraAdapter(adapter), merge = merge))
                // the rounding of the merged weights (5e-2), plus the kernel table's own error for bf16
                // matrices: the avx512 table's bf16dp spec rounds the activations to bf16 too (0.08, as
                // tests/testutil.h fg_test_logit_tol); the other tables keep them f32 (fma spec)
                val tol = 5e-2 + if (merge == LoraMerge.BF16 && kernels == "avx512") 0.08 else 0.0
                assertTrue(rel(merged, runtime) <= tol, "$merge merge of $adapter: ${rel(merged, runtime)} > $tol ($kernels)")
            }
        }
    }

    @Test
    fun `the fingerprint follows adapters, scales, order and merge mode`() {
        val prints = listOf(
            ModelOptions(), opts(LoraAdapter(r4)), opts(LoraAdapter(r4, 0.5f)), opts(LoraAdapter(r4), LoraAdapter(rslora)),
            opts(LoraAdapter(rslora), LoraAdapter(r4)), opts(LoraAdapter(r4), merge = LoraMerge.F32),
        ).map { o -> FgModel.load(TestEnv.tiny, o).use { it.info.fingerprint } }
        assertEquals(prints.size, prints.toSet().size, prints.toString())
        assertEquals(prints[1], FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4, 1f))).use { it.info.fingerprint })
    }

    @Test
    fun `loadFd applies adapters too`() {
        val want = FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4))).use { it.info.fingerprint }
        RandomAccessFile(File(TestEnv.tiny), "r").use { raf ->
            FgModel.loadFd(ModelTest.fdOf(raf), 0, 0, opts(LoraAdapter(r4))).use { m ->
                assertEquals(1, m.info.loraCount)
                assertEquals(want, m.info.fingerprint)
            }
        }
    }

    @Test
    fun `misuse is refused by the binding`() {
        for (bad in listOf(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY)) {
            val e = assertThrows(IllegalArgumentException::class.java) { LoraAdapter(r4, bad) }
            assertTrue(e.message!!.contains("finite"), e.message)
            assertThrows(IllegalArgumentException::class.java) { LoraAdapter(r4).copy(scale = bad) }
        }
        assertEquals(1f, LoraAdapter("x.gguf").scale)
        assertEquals(LoraAdapter("x.gguf", 1f), LoraAdapter("x.gguf"))
        // a NUL inside a path is refused before the library sees it, as for the model's path
        val nul = assertThrows(FgException::class.java) {
            FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4), LoraAdapter("a\u0000b.gguf")))
        }
        assertEquals(FgStatus.INVALID_ARG, nul.status)
        assertTrue(nul.message!!.contains("NUL"), nul.message)
    }

    @Test
    fun `bad adapter files are refused by the library`() {
        val missing = File(TestEnv.models, "no such adapter.gguf").path
        val io = assertThrows(FgException::class.java) { FgModel.load(TestEnv.tiny, opts(LoraAdapter(missing))) }
        assertEquals(FgStatus.IO, io.status)
        assertTrue(io.message!!.contains(missing), io.message)
        // a model is not an adapter
        val notAdapter = assertThrows(FgException::class.java) { FgModel.load(TestEnv.tiny, opts(LoraAdapter(TestEnv.tiny))) }
        assertTrue(notAdapter.status == FgStatus.FORMAT || notAdapter.status == FgStatus.UNSUPPORTED, notAdapter.toString())
        // an adapter of the tiny shape on the 270m shape
        val shape = assertThrows(FgException::class.java) { FgModel.load(TestEnv.m270, opts(LoraAdapter(r4))) }
        assertTrue(shape.status in listOf(FgStatus.FORMAT, FgStatus.UNSUPPORTED, FgStatus.MISMATCH), shape.toString())
        // a failed load leaves nothing behind and the next one works
        FgModel.load(TestEnv.tiny, opts(LoraAdapter(r4))).use { assertEquals(1, it.info.loraCount) }
        assertNotEquals(FgStatus.OK, shape.status)
    }
}
