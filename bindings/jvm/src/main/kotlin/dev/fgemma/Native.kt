package dev.fgemma

import java.io.File
import java.io.FileOutputStream

/*
 * The JNI surface: one object per C file of the glue (native/jni_*.c). Every function takes and
 * returns primitives, primitive arrays and byte arrays (UTF-8 text) only; failures are thrown by the
 * glue as FgException (or IllegalStateException / OutOfMemoryError). Handles are C pointers in a
 * long, always passed while their NativeHandle holds them (see Handle.kt).
 */

internal object ModelNative {
    init { NativeLoader.load() }
    @JvmStatic external fun version(): Int
    @JvmStatic external fun load(
        path: ByteArray, flags: Int, headType: Int, loraPaths: Array<ByteArray>?, loraScales: FloatArray?, loraMerge: Int,
    ): Long
    @JvmStatic external fun loadFd(
        fd: Int, offset: Long, length: Long, flags: Int, headType: Int, loraPaths: Array<ByteArray>?,
        loraScales: FloatArray?, loraMerge: Int,
    ): Long
    @JvmStatic external fun free(h: Long)
    @JvmStatic external fun withLoras(h: Long, loraPaths: Array<ByteArray>, loraScales: FloatArray): Long
    @JvmStatic external fun info(h: Long, nums: LongArray, strs: Array<ByteArray?>)
    @JvmStatic external fun tokenize(h: Long, text: ByteArray, flags: Int): IntArray
    @JvmStatic external fun detokenize(h: Long, ids: IntArray): ByteArray
}

internal object CatalogNative {
    init { NativeLoader.load() }
    @JvmStatic external fun parse(json: ByteArray): Long
    @JvmStatic external fun free(h: Long)
    @JvmStatic external fun functions(h: Long): Int
    @JvmStatic external fun prefix(h: Long): ByteArray
}

internal object SessionNative {
    init { NativeLoader.load() }
    @JvmStatic external fun create(model: Long, nCtx: Int, threads: Int, batch: Int, kvType: Int): Long
    @JvmStatic external fun free(h: Long)
    /** Sets or clears the cancel flag of a session or an NLU engine (both wrappers start with it). */
    @JvmStatic external fun setCancel(h: Long, on: Boolean)
    @JvmStatic external fun prefill(h: Long, ids: IntArray): Int
    @JvmStatic external fun step(h: Long, id: Int): Int
    @JvmStatic external fun position(h: Long): Int
    @JvmStatic external fun logits(h: Long): FloatArray?
    @JvmStatic external fun snapshot(h: Long): Long
    @JvmStatic external fun restore(h: Long, snapshot: Long)
}

internal object SnapshotNative {
    init { NativeLoader.load() }
    @JvmStatic external fun fork(h: Long, nCtx: Int, threads: Int, batch: Int, kvType: Int): Long
    @JvmStatic external fun free(h: Long)
    @JvmStatic external fun position(h: Long): Int
    @JvmStatic external fun save(h: Long, path: ByteArray)
    @JvmStatic external fun load(model: Long, path: ByteArray): Long
}

internal object NluNative {
    init { NativeLoader.load() }
    @JvmStatic external fun create(model: Long, catalog: Long, opts: IntArray, snapshotPath: ByteArray?, snapshotDir: ByteArray?): Long
    @JvmStatic external fun free(h: Long)
    @JvmStatic external fun ask(h: Long, utterance: ByteArray, nums: DoubleArray, strs: Array<ByteArray?>)
    @JvmStatic external fun info(h: Long, nums: DoubleArray, strs: Array<ByteArray?>)
    @JvmStatic external fun forkPrefix(h: Long, nCtx: Int, threads: Int, batch: Int): Long
}

/**
 * Finds libfgemma_jni once per class loader. On Android the library comes from the APK
 * (`lib/<abi>/libfgemma_jni.so`, put there from the AAR): System.loadLibrary. On a desktop JVM the
 * JAR carries it as the resource `dev/fgemma/native/<os>-<arch>/libfgemma_jni.so`; it is copied to a
 * temporary file, loaded and the file removed at once (the mapping stays). The system property
 * `fgemma.native.lib` names a library file to load instead (e.g. a debug or ASan build).
 */
internal object NativeLoader {
    private var loaded = false

    @Synchronized
    fun load() {
        if (loaded) return
        val explicit = System.getProperty("fgemma.native.lib")
        when {
            !explicit.isNullOrEmpty() -> System.load(File(explicit).absolutePath)
            isAndroid() -> System.loadLibrary("fgemma_jni")
            else -> loadFromJar()
        }
        loaded = true
    }

    private fun isAndroid(): Boolean =
        (System.getProperty("java.vm.vendor") ?: "").contains("Android", ignoreCase = true) ||
            (System.getProperty("java.runtime.name") ?: "").contains("Android", ignoreCase = true)

    /** `linux-x86_64`, `linux-aarch64`, `linux-armv7`, or null for a platform without a bundled library. */
    internal fun platform(): String? {
        val os = (System.getProperty("os.name") ?: "").lowercase()
        if (!os.startsWith("linux")) return null
        val arch = when ((System.getProperty("os.arch") ?: "").lowercase()) {
            "amd64", "x86_64" -> "x86_64"
            "aarch64", "arm64" -> "aarch64"
            "arm", "armv7l", "armv7" -> "armv7"
            else -> return null
        }
        return "linux-$arch"
    }

    private fun loadFromJar() {
        val platform = platform()
        val resource = platform?.let { "/dev/fgemma/native/$it/libfgemma_jni.so" }
        val stream = resource?.let { NativeLoader::class.java.getResourceAsStream(it) }
        if (stream == null) {
            // no bundled library for this platform: one on java.library.path, or a clear error
            try {
                System.loadLibrary("fgemma_jni")
                return
            } catch (e: UnsatisfiedLinkError) {
                throw UnsatisfiedLinkError(
                    "fgemma: this JAR has no native library for ${System.getProperty("os.name")}/" +
                        "${System.getProperty("os.arch")} and libfgemma_jni is not on java.library.path " +
                        "(${e.message}); set -Dfgemma.native.lib=/path/to/libfgemma_jni.so"
                )
            }
        }
        val tmp = File.createTempFile("libfgemma_jni", ".so")
        try {
            stream.use { input -> FileOutputStream(tmp).use { input.copyTo(it) } }
            System.load(tmp.absolutePath)
        } finally {
            tmp.delete()
        }
    }
}
