package dev.fgemma

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withContext
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import java.io.File
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit

class NluTest {
    /** Runs `fgemma call` on the utterances; its output lines, one per utterance. */
    private fun cli(model: String, catalog: File, mode: String, snapshot: File, utterances: List<String>): List<String> {
        val p = ProcessBuilder(TestEnv.cli.path, "call", "-m", model, "--tools", catalog.path, "--constrained", mode,
            "-t", "2", "--snapshot-path", snapshot.path, "--max-tokens", maxTokens(mode).toString())
            .redirectError(ProcessBuilder.Redirect.to(File("/dev/null"))).start()
        p.outputStream.bufferedWriter(Charsets.UTF_8).use { w -> utterances.forEach { w.write(it); w.write("\n") } }
        val lines = p.inputStream.bufferedReader(Charsets.UTF_8).readLines()
        assertTrue(p.waitFor(20, TimeUnit.MINUTES))
        assertEquals(0, p.exitValue(), "fgemma call failed")
        return lines
    }

    /** Unconstrained answers of a random model run to max_tokens: 16 keeps the test short. */
    private fun maxTokens(mode: String) = if (mode == "off") 16 else 64

    /** The exact text of the CLI's "result" object in a line (printed verbatim from fg_nlu_result.json). */
    private fun resultText(line: String): String = line.substringAfter(",\"result\":").substringBeforeLast(",\"raw\":")

    @Test
    @Tag("slow")
    fun `getJson equals the CLI's result for every utterance (call-only and off, tiny and 270m)`() {
        val catalogFile = File(TestEnv.root, "examples/tv-catalog.json")
        val utts = TestEnv.utterances
        assertTrue(utts.size >= 10)
        for (model in listOf(TestEnv.tiny, TestEnv.m270)) {
            val snap = TestEnv.scratch("cli-${File(model).name}.fgsnap")
            for (mode in listOf("call-only", "off")) {
                val t0 = System.nanoTime()
                val lines = cli(model, catalogFile, mode, snap, utts)
                assertEquals(utts.size, lines.size)
                val cliMs = (System.nanoTime() - t0) / 1e6
                val opts = NluOptions().apply {
                    constrained = if (mode == "off") Constrain.OFF else Constrain.CALL_ONLY
                    threads = 2
                    maxTokens = maxTokens(mode)
                    snapshotPath = snap.path // written by the CLI: the binding loads the same prefix state
                }
                val t1 = System.nanoTime()
                FgModel.load(model).use { m ->
                    ToolCatalog.fromJson(TestEnv.tvCatalog).use { c ->
                        m.newNlu(c, opts).use { nlu ->
                            assertTrue(nlu.info.prefixFromFile)
                            assertEquals(819, nlu.info.prefixTokens)
                            for ((k, u) in utts.withIndex()) {
                                val r = nlu.askBlocking(u)
                                @Suppress("UNCHECKED_CAST")
                                val want = Json.parse(lines[k]) as Map<String, Any?>
                                assertEquals(u, want["utterance"])
                                assertEquals(resultText(lines[k]), r.json, "$model $mode '$u'")
                                assertEquals(want["result"], Json.parse(r.json))
                                assertEquals(want["raw"], r.raw, "$model $mode '$u'")
                                assertEquals(want["stop"], r.stop)
                                @Suppress("UNCHECKED_CAST")
                                val tokens = want["tokens"] as Map<String, Any?>
                                assertEquals(tokens["chunk"], r.chunkTokens.toLong())
                                assertEquals(tokens["decode"], r.decodeTokens.toLong())
                                if (mode == "call-only") assertEquals(1, r.calls.size, r.json)
                            }
                        }
                    }
                }
                println("getJson == CLI result: ${File(model).name} $mode, ${utts.size} utterances " +
                    "(CLI %.0f ms, binding %.0f ms)".format(cliMs, (System.nanoTime() - t1) / 1e6))
            }
        }
    }

    @Test
    fun `catalogs in both formats, bad catalogs name the culprit`() {
        val openai = """[{"type":"function","function":{"name":"toggle_lamp","description":"Switch the lamp.",
            "parameters":{"type":"object","properties":{"state":{"type":"string","enum":["on","off"]}},"required":["state"]}}},
            {"type":"function","function":{"name":"set_timer","description":"Start a timer.",
            "parameters":{"type":"object","properties":{"minutes":{"type":"integer","description":"How long."}},"required":["minutes"]}}}]"""
        ToolCatalog.fromJson(LAMP_CATALOG).use { a ->
            ToolCatalog.fromJson(openai).use { b ->
                assertEquals(2, a.functionCount)
                assertEquals(a.renderPrefix(), b.renderPrefix()) // both render the same prompt
            }
        }
        ToolCatalog.fromJson(TestEnv.tvCatalog).use { c ->
            val p = ProcessBuilder(TestEnv.cli.path, "prompt", "--tools", File(TestEnv.root, "examples/tv-catalog.json").path).start()
            val text = String(p.inputStream.readBytes(), Charsets.UTF_8)
            p.waitFor()
            assertEquals(text, c.renderPrefix())
        }
        val e = assertThrows(FgException::class.java) { ToolCatalog.fromJson("{\"functions\": [") }
        assertEquals(FgStatus.FORMAT, e.status)
        assertTrue(e.message!!.contains("line"), e.message)
        val e2 = assertThrows(FgException::class.java) {
            ToolCatalog.fromJson("""{"functions":[{"name":"f","parameters":{"p":{"type":"int"}}}]}""")
        }
        assertTrue(e2.message!!.contains("p"), e2.message)
    }

    @Test
    fun `results - calls with typed args, text, timings, bad utterances`() {
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(LAMP_CATALOG).use { c ->
                m.newNlu(c, NluOptions().apply { constrained = Constrain.CALL_ONLY; threads = 1 }).use { nlu ->
                    for (u in listOf("turn the lamp on", "Stelle einen Timer auf 5 Minuten", "😀 emoji ✓")) {
                        val r = nlu.askBlocking(u)
                        assertEquals(1, r.calls.size, r.json)
                        val call = r.calls[0]
                        assertTrue(call.isValid, r.json) // constrained: a valid call
                        when (call.name) {
                            "toggle_lamp" -> assertTrue(call.args["state"] in setOf("on", "off"), r.json)
                            "set_timer" -> assertTrue(call.args["minutes"] is Long, r.json)
                            else -> throw AssertionError("unknown function in ${r.json}")
                        }
                        assertEquals("", r.text)
                        assertTrue(r.chunkTokens > 0 && r.decodeTokens > 0 && r.totalMs > 0)
                        assertEquals("end_function_call", r.stop)
                    }
                    val pos = nlu.info.prefixTokens
                    for (bad in listOf("", "   ", "hi <end_of_turn> there")) {
                        assertEquals(FgStatus.INVALID_ARG, assertThrows(FgException::class.java) { nlu.askBlocking(bad) }.status)
                    }
                    assertEquals(pos, nlu.info.prefixTokens)
                    nlu.forkPrefix(SessionOptions().apply { threads = 1 }).use { s -> assertEquals(pos, s.position) }
                }
            }
        }
        // JSON values of every kind, as the parser returns them
        @Suppress("UNCHECKED_CAST")
        val v = Json.parse("""{"a":1,"b":-2.5e1,"c":true,"d":null,"e":"x\"\u00e4\ud83d\ude00","f":[1,"s",{"g":false}],"h":123456789012345678901}""") as Map<String, Any?>
        assertEquals(1L, v["a"])
        assertEquals(-25.0, v["b"])
        assertEquals(true, v["c"])
        assertTrue(v.containsKey("d") && v["d"] == null)
        assertEquals("x\"ä😀", v["e"])
        assertEquals(listOf(1L, "s", mapOf("g" to false)), v["f"])
        assertEquals(1.2345678901234568E20, v["h"])
    }

    @Test
    fun `snapshot directory - named by model and catalog, shared, damaged files replaced`() {
        val dir = TestEnv.scratch("nlu-snapshots").apply { deleteRecursively(); mkdirs() }
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(TestEnv.tvCatalog).use { c ->
                val opts = NluOptions().apply { snapshotDir = dir.path; threads = 2 }
                val (first, name) = m.newNlu(c, opts).use { nlu ->
                    val i = nlu.info
                    assertTrue(i.snapshotWritten && !i.prefixFromFile && !i.snapshotRefused)
                    assertTrue(i.snapshotName.matches(Regex("[0-9a-f]{32}-f32-[0-9a-f]{16}\\.fgsnap")), i.snapshotName)
                    nlu.askBlocking("Schalte auf ZDF um").json to i.snapshotName
                }
                assertEquals(listOf(name), dir.list()!!.toList())
                m.newNlu(c, opts).use { nlu ->
                    assertTrue(nlu.info.prefixFromFile)
                    assertEquals(first, nlu.askBlocking("Schalte auf ZDF um").json)
                }
                File(dir, name).writeBytes(ByteArray(100)) // damaged: refused, recomputed, replaced
                m.newNlu(c, opts).use { nlu ->
                    assertTrue(nlu.info.snapshotRefused && nlu.info.snapshotWritten && !nlu.info.prefixFromFile)
                    assertEquals(first, nlu.askBlocking("Schalte auf ZDF um").json)
                }
                val missing = NluOptions().apply { snapshotDir = File(dir, "missing").path }
                val e = assertThrows(FgException::class.java) { m.newNlu(c, missing) }
                assertEquals(FgStatus.IO, e.status)
                val both = NluOptions().apply { snapshotDir = dir.path; snapshotPath = File(dir, "x").path }
                assertThrows(IllegalArgumentException::class.java) { m.newNlu(c, both) }
            }
        }
    }

    @Test
    fun `snapshot file of the prefix - written once, then loaded`() {
        val file = TestEnv.scratch("nlu-prefix.fgsnap")
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(TestEnv.tvCatalog).use { c ->
                val opts = NluOptions().apply { snapshotPath = file.path; threads = 2 }
                val first = m.newNlu(c, opts).use { nlu ->
                    assertFalse(nlu.info.prefixFromFile)
                    assertTrue(nlu.info.snapshotWritten)
                    nlu.askBlocking("Schalte auf ZDF um").json
                }
                m.newNlu(c, opts).use { nlu ->
                    assertTrue(nlu.info.prefixFromFile)
                    assertFalse(nlu.info.snapshotWritten)
                    assertEquals(first, nlu.askBlocking("Schalte auf ZDF um").json)
                }
            }
        }
    }

    @Test
    fun `ask suspends on the engine's thread, the caller's thread keeps running`(): Unit = runBlocking {
        val single = Executors.newSingleThreadExecutor().asCoroutineDispatcher()
        FgModel.load(TestEnv.tiny).use { m ->
            ToolCatalog.fromJson(TestEnv.tvCatalog).use { c ->
                m.newNlu(c, NluOptions().apply { constrained = Constrain.CALL_ONLY; threads = 2 }).use { nlu ->
                    val want = nlu.askBlocking("Mach lauter")
                    withContext(single) {
                        var ticks = 0
                        val ticker = launch { while (true) { ticks++; delay(1) } }
                        val r = nlu.ask("Mach lauter")
                        ticker.cancel()
                        assertEquals(want.json, r.json)
                        assertTrue(ticks > 0, "the caller's (single) thread was blocked")
                    }
                    // concurrent asks are serialised, each gets its own answer
                    val utts = TestEnv.utterances.take(4)
                    val rs = utts.map { u -> async(Dispatchers.Default) { nlu.ask(u) } }.map { it.await() }
                    for ((u, r) in utts.zip(rs)) assertEquals(nlu.askBlocking(u).json, r.json)
                }
            }
        }
        single.close()
    }

    @Test
    @Tag("slow")
    fun `cancelling an ask reaches native code and leaves the engine as it was`(): Unit = runBlocking {
        FgModel.load(TestEnv.m270).use { m ->
            ToolCatalog.fromJson(LAMP_CATALOG).use { c ->
                // off, 200 tokens: seconds of decoding to interrupt
                m.newNlu(c, NluOptions().apply { maxTokens = 200; threads = 2 }).use { nlu ->
                    val u = "Bitte erzähl mir eine lange Geschichte über Lampen"
                    // the whole ask, uncancelled: the yardstick of the cancels below (any CPU speed)
                    val tf = System.nanoTime()
                    val full = nlu.askBlocking(u)
                    val fullMs = (System.nanoTime() - tf) / 1e6
                    assertTrue(full.decodeTokens >= 50, "only ${full.decodeTokens} tokens to interrupt")
                    // Each cancel is sent once the native call is running (the handle says so). An ask that
                    // had already passed its last check still completes: then try again (bounded), so no
                    // outcome depends on how fast this CPU is.
                    var cancelledMs = -1.0
                    for (attempt in 1..5) {
                        val job = async(Dispatchers.Default) { nlu.ask(u) }
                        while (!nlu.handle.isRunning && !job.isCompleted) Thread.yield()
                        val t0 = System.nanoTime()
                        job.cancel()
                        val r = runCatching { runBlocking { job.await() } }
                        val info = nlu.info // waits for the native call to let go of the engine
                        val ms = (System.nanoTime() - t0) / 1e6
                        assertTrue(info.prefixTokens > 0)
                        if (r.isSuccess) { // finished before the cancel landed
                            assertEquals(full.json, r.getOrThrow().json)
                            continue
                        }
                        assertTrue(r.exceptionOrNull() is CancellationException, "ask failed otherwise: ${r.exceptionOrNull()}")
                        cancelledMs = ms
                        break
                    }
                    assertTrue(cancelledMs >= 0, "no cancel reached the ask in 5 attempts")
                    println("ask cancelled during decoding (270m q8_0; %.0f ms uncancelled): the engine was free after %.1f ms".format(fullMs, cancelledMs))
                    assertTrue(cancelledMs < fullMs / 4, "the engine was busy for $cancelledMs ms of a $fullMs ms ask after the cancel")
                    // a timeout is a cancellation too (1 ms: less than any decoding of 200 tokens takes)
                    assertThrows(CancellationException::class.java) { runBlocking { withTimeout(1) { nlu.ask(u) } } }
                    // the engine answers as before
                    val r1 = nlu.askBlocking("Schalte die Lampe ein")
                    val r2 = nlu.askBlocking("Schalte die Lampe ein")
                    assertEquals(r1.json, r2.json)
                    // cancel() with nothing running changes nothing; askBlocking can be cancelled from another thread
                    assertEquals(false, nlu.cancel())
                    var aborted = false
                    for (attempt in 1..5) {
                        var failure: Throwable? = null
                        val t = Thread { try { nlu.askBlocking(u) } catch (e: Throwable) { failure = e } }
                        t.start()
                        while (t.isAlive && !nlu.cancel()) Thread.yield()
                        t.join(60_000)
                        assertTrue(!t.isAlive, "the ask thread did not end")
                        if (failure == null) continue // finished before the cancel landed
                        assertEquals(FgStatus.ABORTED, (failure as FgException).status)
                        aborted = true
                        break
                    }
                    assertTrue(aborted, "no cancel reached the blocking ask in 5 attempts")
                    assertEquals(r1.json, nlu.askBlocking("Schalte die Lampe ein").json)
                }
            }
        }
    }

    @Test
    fun `engines outlive their model and catalog, use after close`(): Unit = runBlocking {
        val m = FgModel.load(TestEnv.tiny)
        val c = ToolCatalog.fromJson(LAMP_CATALOG)
        val nlu = m.newNlu(c, NluOptions().apply { constrained = Constrain.CALL_ONLY; threads = 1 })
        val want = nlu.askBlocking("turn the lamp off").json
        m.close()
        c.close()
        assertEquals(want, nlu.askBlocking("turn the lamp off").json)
        assertEquals(want, nlu.ask("turn the lamp off").json)
        nlu.close()
        nlu.close()
        assertThrows(IllegalStateException::class.java) { nlu.askBlocking("x") }
        assertThrows(IllegalStateException::class.java) { runBlocking { nlu.ask("x") } }
        assertThrows(IllegalStateException::class.java) { nlu.info }
        assertThrows(IllegalStateException::class.java) { nlu.cancel() }
        assertThrows(IllegalStateException::class.java) { nlu.forkPrefix() }
        assertNotEquals("", want)
    }
}
