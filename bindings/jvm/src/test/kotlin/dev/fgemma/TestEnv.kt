package dev.fgemma

import org.junit.jupiter.api.Assumptions
import java.io.File

/**
 * Where the tests find their files. Maven sets the system properties (pom.xml): fgemma.models, the
 * models folder (native/models.sh generates tiny-vocab-f32.gguf and 270m-vocab-q8_0.gguf there when
 * missing; FG_TEST_MODELS or ../../build/models), fgemma.cli (the CLI built beside the JNI library)
 * and fgemma.root (the repository).
 */
object TestEnv {
    private fun prop(name: String): String =
        System.getProperty(name) ?: throw IllegalStateException("system property $name is not set (run the tests through mvn)")

    val root: File get() = File(prop("fgemma.root")).canonicalFile
    val models: File get() = File(prop("fgemma.models"))
    val cli: File get() = File(prop("fgemma.cli"))

    /** tiny preset (6 layers, width 64) with Gemma 3's real vocabulary, f32 */
    val tiny: String get() = model("tiny-vocab-f32.gguf")
    /** FunctionGemma-270M's shape with the real vocabulary, q8_0 */
    val m270: String get() = model("270m-vocab-q8_0.gguf")

    private fun model(name: String): String {
        val f = File(models, name)
        check(f.isFile) { "$f is missing: native/models.sh generates it (mvn does this before the tests)" }
        return f.path
    }

    val tvCatalog: String get() = File(root, "examples/tv-catalog.json").readText()
    val utterances: List<String>
        get() = File(root, "examples/utterances-de.txt").readLines().map { it.trim() }.filter { it.isNotEmpty() }

    private val scratchDir: File by lazy {
        java.nio.file.Files.createTempDirectory("fgemma-jvm-tests").toFile().also { d ->
            Runtime.getRuntime().addShutdownHook(Thread { d.deleteRecursively() })
        }
    }

    /** A file name in this JVM's scratch folder (removed at exit). */
    fun scratch(name: String): File = File(scratchDir, name)

    /** Resident set size of this process in bytes (Linux /proc). */
    fun rss(): Long {
        val line = File("/proc/self/status").readLines().firstOrNull { it.startsWith("VmRSS:") }
        Assumptions.assumeTrue(line != null, "no /proc/self/status")
        return line!!.split(Regex("\\s+"))[1].toLong() * 1024
    }
}

/** A small catalog (cartridge format) for tests that need one quickly. */
const val LAMP_CATALOG = """{"id":"test.v1","functions":[
 {"name":"toggle_lamp","description":"Switch the lamp.","parameters":{"state":{"type":"string","enum":["on","off"]}},"required":["state"]},
 {"name":"set_timer","description":"Start a timer.","parameters":{"minutes":{"type":"integer","description":"How long."}},"required":["minutes"]}]}"""
