package dev.fgemma

import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.io.RandomAccessFile

class ModelTest {
    @Test
    fun `load and getInfo read the metadata`() {
        FgModel.load(TestEnv.tiny).use { m ->
            val i = m.info
            assertEquals("gemma3", i.arch)
            assertEquals(262144, i.vocabSize)
            assertEquals(6, i.layers)
            assertEquals("f32", i.weightType)
            assertEquals(0, i.weightTypeId)
            assertTrue(i.fingerprint.matches(Regex("[0-9a-f]{32}")), i.fingerprint)
            assertTrue(i.hasVocab)
            assertEquals(File(TestEnv.tiny).length(), i.fileBytes)
            assertTrue(i.kernels in setOf("ref", "avx2", "avx512", "neon", "neon_dotprod", "neon_i8mm"), i.kernels)
            System.getenv("FG_ISA")?.takeIf { it.isNotEmpty() && it != "auto" }?.let { assertEquals(it, i.kernels) }
        }
        FgModel.load(TestEnv.m270).use { m ->
            val i = m.info
            assertEquals(18, i.layers)
            assertEquals(640, i.embeddingLength)
            assertEquals("q8_0", i.weightType)
            assertEquals(3, i.globalLayers)
        }
        assertEquals(400, FgModel.libraryVersion())
    }

    @Test
    fun `model options reach the loader`() {
        val a = FgModel.load(TestEnv.tiny).use { it.info.fingerprint }
        val b = FgModel.load(TestEnv.tiny, ModelOptions().apply { noMmap = true; checkTensors = true }).use { it.info.fingerprint }
        assertEquals(a, b)
        FgModel.load(TestEnv.tiny, ModelOptions().apply { headType = "q8_0" }).use {
            assertEquals("q8_0", it.info.headType)
            assertNotEquals(a, it.info.fingerprint) // a replacement head changes the fingerprint
        }
        assertThrows(IllegalArgumentException::class.java) { FgModel.load(TestEnv.tiny, ModelOptions().apply { headType = "q5_k" }) }
        // (the default copies Q8_0 matrices where the kernels have a layout of their own: x86 with AVX2, arm64 with
        // the dot product; AVX-512 packs nothing)
        FgModel.load(TestEnv.tiny, ModelOptions().apply { repack = false }).use {
            assertEquals(0L, it.info.repackBytes) // never a copy when asked not to
            assertEquals(a, it.info.fingerprint) // the same weights
        }
    }

    @Test
    fun `a bad path names the path`() {
        val path = File(TestEnv.models, "no such model.gguf").path
        val e = assertThrows(FgException::class.java) { FgModel.load(path) }
        assertEquals(FgStatus.IO, e.status)
        assertTrue(e.message!!.contains(path), e.message)
        val dir = assertThrows(FgException::class.java) { FgModel.load(TestEnv.models.path) }
        assertEquals(FgStatus.IO, dir.status)
        val nul = assertThrows(FgException::class.java) { FgModel.load("a\u0000b.gguf") }
        assertEquals(FgStatus.INVALID_ARG, nul.status)
    }

    @Test
    fun `a truncated file is refused with FORMAT`() {
        val full = File(TestEnv.tiny).readBytes()
        val cut = TestEnv.scratch("truncated.gguf")
        for (n in intArrayOf(0, 3, 100, 4096, full.size / 2, full.size - 1)) {
            cut.writeBytes(full.copyOf(n))
            val e = assertThrows(FgException::class.java) { FgModel.load(cut.path) }
            assertEquals(FgStatus.FORMAT, e.status, "$n bytes: ${e.message}")
            assertTrue(e.message!!.isNotEmpty())
        }
        cut.delete()
    }

    @Test
    fun `loadFd maps a model inside a larger file at an odd offset`() {
        val bytes = File(TestEnv.tiny).readBytes()
        val f = TestEnv.scratch("asset.bin")
        val want = FgModel.load(TestEnv.tiny).use { m -> m.info.fingerprint to m.tokenize("Schalte auf ZDF um", true) }
        for (offset in longArrayOf(0, 4, 4096 + 12, 3)) {
            RandomAccessFile(f, "rw").use { raf ->
                raf.setLength(0)
                raf.write(ByteArray(offset.toInt()) { 0x5a })
                raf.write(bytes)
                raf.write(ByteArray(100) { 0x33 })
            }
            RandomAccessFile(f, "r").use { raf ->
                val fd = fdOf(raf)
                FgModel.loadFd(fd, offset, bytes.size.toLong(), ModelOptions()).use { m ->
                    assertEquals(want.first, m.info.fingerprint, "offset $offset")
                    assertEquals(bytes.size.toLong(), m.info.fileBytes)
                    assertArrayEquals(want.second, m.tokenize("Schalte auf ZDF um", true))
                }
                // a range past the end, and junk in front of the model
                assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) {
                    FgModel.loadFd(fd, offset, bytes.size + 101L)
                }.status)
                if (offset > 0) assertEquals(FgStatus.FORMAT, assertThrows(FgException::class.java) { FgModel.loadFd(fd, 0, 0) }.status)
            }
        }
        val bad = assertThrows(FgException::class.java) { FgModel.loadFd(-1, 0, 0) }
        assertEquals(FgStatus.INVALID_ARG, bad.status)
        assertTrue(bad.message!!.contains("fd -1"), bad.message)
        assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { FgModel.loadFd(0, -1, 0) }.status)
        f.delete()
    }

    @Test
    fun `tokenize and detokenize round-trip emoji, umlauts and control tokens`() {
        FgModel.load(TestEnv.tiny).use { m ->
            for (text in listOf("Schalte auf ZDF um", "Grüße, Öl & Soße 😀👍🏽 – ok", "日本語のテキスト", "\uDBFF\uDFFD private use",
                    "a\u0000b", "")) {
                val ids = m.tokenize(text, false)
                assertEquals(text, m.detokenize(ids), "round trip of '$text'")
            }
            val withBos = m.tokenize("hallo", true)
            assertEquals(2, withBos[0]) // <bos>
            assertEquals("<start_of_turn>", m.detokenize(m.tokenize("<start_of_turn>", false)))
            assertEquals(1, m.tokenize("<start_of_turn>", false).size)
            assertTrue(m.tokenize("<start_of_turn>", false, false).size > 1) // plain text
        }
    }

    @Test
    fun `split UTF-8 sequences decode with replacement, never an exception`() {
        FgModel.load(TestEnv.tiny).use { m ->
            // a character outside every vocabulary: byte-fallback tokens, one per UTF-8 byte
            val ids = m.tokenize("\uDBFF\uDFFD", false)
            assertEquals(4, ids.size, ids.joinToString())
            for (k in 1 until ids.size) {
                val part = m.detokenize(ids.copyOfRange(0, k))
                assertTrue(part.all { it == '\uFFFD' }, "prefix of $k byte tokens gave '$part'")
                assertTrue(part.isNotEmpty())
            }
            // piece by piece, as a streaming UI would: only replacement characters, no crash
            val pieces = ids.joinToString("") { m.detokenize(intArrayOf(it)) }
            assertTrue(pieces.all { it == '\uFFFD' })
            // emoji split across tokens, joined again
            val emoji = m.tokenize("😀🦩", false)
            assertEquals("😀🦩", m.detokenize(emoji))
            assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { m.detokenize(intArrayOf(-1)) }.status)
            assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { m.detokenize(intArrayOf(1 shl 30)) }.status)
        }
    }

    @Test
    fun `use after close throws IllegalStateException, close is idempotent`() {
        val m = FgModel.load(TestEnv.tiny)
        val cat = ToolCatalog.fromJson(LAMP_CATALOG)
        m.close()
        m.close()
        assertTrue(m.isClosed)
        assertThrows(IllegalStateException::class.java) { m.info }
        assertThrows(IllegalStateException::class.java) { m.tokenize("x", true) }
        assertThrows(IllegalStateException::class.java) { m.detokenize(intArrayOf(2)) }
        assertThrows(IllegalStateException::class.java) { m.newSession() }
        assertThrows(IllegalStateException::class.java) { m.newNlu(cat) }
        assertThrows(IllegalStateException::class.java) { FgSnapshot.load(m, "x") }
        cat.close()
        cat.close()
        assertThrows(IllegalStateException::class.java) { cat.functionCount }
        FgModel.load(TestEnv.tiny).use { m2 -> assertThrows(IllegalStateException::class.java) { m2.newNlu(cat) } }
        assertFalse(FgModel.load(TestEnv.tiny).use { it.isClosed })
    }

    companion object {
        /** The descriptor number behind a RandomAccessFile (what Android's ParcelFileDescriptor.getFd() gives). */
        fun fdOf(raf: RandomAccessFile): Int {
            val f = java.io.FileDescriptor::class.java.getDeclaredField("fd")
            f.isAccessible = true
            return f.getInt(raf.fd)
        }
    }
}
