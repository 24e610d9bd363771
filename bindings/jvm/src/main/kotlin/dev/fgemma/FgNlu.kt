package dev.fgemma

import kotlinx.coroutines.suspendCancellableCoroutine
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.RejectedExecutionException
import java.util.concurrent.ThreadPoolExecutor
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/** Constrained decoding (docs/CONSTRAINED.md): which answers the decoder may produce. Ids are C's FG_NLU_CONSTRAIN_*. */
enum class Constrain(internal val id: Int) {
    /** plain greedy decoding (FG_NLU_CONSTRAIN_OFF) */
    OFF(3),
    /** the answer is a call valid for the catalog (name, keys, enum values, types) */
    CALL_ONLY(1),
    /** such a call, or prose when the model does not start one */
    CALL_OR_TEXT(2),
}

/**
 * NLU engine parameters; 0 (or null) means the default, as in C. Names and defaults are those of every
 * fgemma surface (docs/OPTIONS.md).
 */
class NluOptions {
    /** constrained decoding; CALL_OR_TEXT by default, as in C, the CLI, the server and Python */
    var constrained: Constrain = Constrain.CALL_OR_TEXT

    /** the old name of [constrained] */
    @Deprecated("renamed to constrained (docs/OPTIONS.md)", ReplaceWith("constrained"))
    var constrain: Constrain
        get() = constrained
        set(value) {
            constrained = value
        }
    /** generated tokens per utterance; 0 = 64 */
    var maxTokens: Int = 0
    /** reuse the prefix state from this file when it matches, else prefill and write it (null: always prefill) */
    var snapshotPath: String? = null
    /**
     * a directory of prefix states shared with `fgemma call --snapshot-dir`, `fgemma serve --snapshot-dir`
     * and other apps or processes (an app can ship one made on a build machine): the file's name comes from
     * the model, the KV type and the catalog ([NluInfo.snapshotName]); damaged or foreign files are
     * refused and replaced. Give this or [snapshotPath]; the directory must exist.
     */
    var snapshotDir: String? = null
    /** worker threads; 0 = available cores */
    var threads: Int = 0
    /** continue after a call when the model starts another one */
    var multiCall: Boolean = false
    /** context positions; 0 = the model's */
    var nCtx: Int = 0

    /** the old name of [nCtx] */
    @Deprecated("renamed to nCtx (docs/OPTIONS.md)", ReplaceWith("nCtx"))
    var contextSize: Int
        get() = nCtx
        set(value) {
            nCtx = value
        }
    /** positions per internal prefill chunk; 0 = 256 */
    var batch: Int = 0
    var kvType: KvType = KvType.F32
    /** verify drafted tokens in batches (docs/SPECULATION.md; the same answers); true by default */
    var speculate: Boolean = true
    /** most drafted tokens per verification pass, 1..32; 0 = 8 */
    var maxDraft: Int = 0
    /** speculation keeps the engine's earlier answers as drafts for a repeated utterance; true by default */
    var answerCache: Boolean = true

    internal fun toArray(): IntArray =
        intArrayOf(
            maxTokens,
            (if (multiCall) 1 else 0) or (if (answerCache) 0 else 2), // FG_NLU_MULTI_CALL, FG_NLU_NO_ANSWER_CACHE
            constrained.id, nCtx, threads, batch, kvType.id,
            if (speculate) 2 else 1, // FG_NLU_SPECULATE_ON / _OFF
            maxDraft,
        )
}

/** One function call the model made. */
class ToolCall internal constructor(
    /** the function's name (snapped to the catalog's spelling when the model misspelled it) */
    val name: String,
    /** the arguments: Long, Double, Boolean, String, List and Map values (null for JSON null) */
    val args: Map<String, Any?>,
    /** the parser's flags for this call ("unknown_function", "bad_enum", "truncated", ...); empty when none */
    val flags: Map<String, Any?>,
) {
    /** true when the parser flagged nothing: a call the catalog declares, with valid arguments */
    val isValid: Boolean get() = flags.isEmpty()

    override fun toString(): String = "ToolCall($name, $args${if (flags.isEmpty()) "" else ", $flags"})"
}

/** The answer to one utterance. */
class NluResult internal constructor(
    /** {"calls":[...],"text":"..."}: the same JSON object as the CLI's "result" for this utterance */
    val json: String,
    /** the generated text, control tokens by name */
    val raw: String,
    /** why decoding stopped, the name of the C API's fg_nlu_stop (fg_nlu_stop_name): "end_function_call",
     *  "end_of_turn", "eos", "start_function_response", "max_tokens", "context_full", "start_of_turn", ... */
    val stop: String,
    nums: DoubleArray,
    /** milliseconds of the whole ask in this binding, as measured around the native call */
    val totalMs: Double,
) {
    val chunkTokens: Int = nums[0].toInt()
    val decodeTokens: Int = nums[1].toInt()
    val restoreMs: Double = nums[2]
    val chunkMs: Double = nums[3]
    val decodeMs: Double = nums[4]
    val fullHeadSteps: Int = nums[5].toInt()
    val sparseHeadSteps: Int = nums[6].toInt()
    val forcedTokens: Int = nums[7].toInt()

    private val parsed: Map<String, Any?> by lazy {
        @Suppress("UNCHECKED_CAST")
        Json.parse(json) as Map<String, Any?>
    }

    /** The calls, in order (empty when the model answered in prose). */
    val calls: List<ToolCall> by lazy {
        (parsed["calls"] as? List<*>).orEmpty().map { c ->
            @Suppress("UNCHECKED_CAST")
            val m = c as Map<String, Any?>
            @Suppress("UNCHECKED_CAST")
            ToolCall(
                m["name"] as? String ?: "",
                (m["args"] as? Map<String, Any?>) ?: emptyMap(),
                m.filterKeys { it != "name" && it != "args" },
            )
        }
    }

    /** The prose outside calls, trimmed; "" when none. */
    val text: String get() = parsed["text"] as? String ?: ""

    override fun toString(): String = json
}

/** How an engine started. */
class NluInfo internal constructor(nums: DoubleArray, name: String) {
    val prefixTokens: Int = nums[0].toInt()
    /** prefill (or snapshot load) time of the catalog prefix */
    val prefixMs: Double = nums[1]
    /** the prefix state came from NluOptions.snapshotPath (or the file in snapshotDir) */
    val prefixFromFile: Boolean = nums[2] != 0.0
    /** that file was (re)written */
    val snapshotWritten: Boolean = nums[3] != 0.0
    /** that file existed but was damaged or of another model, KV type or catalog: not used (and replaced) */
    val snapshotRefused: Boolean = nums[4] != 0.0
    /** with NluOptions.snapshotDir: the file's name in it; else "" */
    val snapshotName: String = name
    /** the constraint mode in effect (NluOptions.constrained as resolved by the library) */
    val constrained: Constrain = Constrain.values().first { it.id == nums[5].toInt() }
    /** speculation in effect */
    val speculate: Boolean = nums[6] == 2.0
}

/**
 * The NLU engine: a catalog prefilled once, then one function call per utterance from that state.
 * One ask at a time (concurrent calls wait for each other). `ask` suspends and runs on the engine's
 * own thread, never the caller's; cancelling the coroutine reaches native code within one layer of
 * the forward pass and leaves the engine as it was.
 */
class FgNlu internal constructor(ptr: Long) : AutoCloseable {
    internal val handle = NativeHandle(this, ptr, "NLU engine", NluNative::free, exclusive = true, cancellable = true)
    private val executor = ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, LinkedBlockingQueue()) { r ->
        Thread(r, "fgemma-nlu-${threads.incrementAndGet()}").apply { isDaemon = true }
    }.apply { allowCoreThreadTimeOut(true) }

    private companion object {
        val threads = AtomicInteger()

        fun ask0(h: NativeHandle, token: Any?, cancelled: (() -> Boolean)?, utterance: String): NluResult {
            val bytes = encodeUtf8(utterance)
            return h.call(token, cancelled) { p ->
                val nums = DoubleArray(8)
                val strs = arrayOfNulls<ByteArray>(3)
                val t0 = System.nanoTime()
                NluNative.ask(p, bytes, nums, strs)
                val ms = (System.nanoTime() - t0) / 1e6
                NluResult(decodeUtf8(strs[0]!!), decodeUtf8(strs[1]!!), decodeUtf8(strs[2]!!), nums, ms)
            }
        }
    }

    /** Answers an utterance on the calling thread (blocks; not on Android's main thread). */
    fun askBlocking(utterance: String): NluResult = ask0(handle, null, null, utterance)

    /**
     * Answers an utterance on the engine's thread. Cancelling the coroutine stops the native work
     * within one layer of the forward pass; the engine is then as it was before the call.
     */
    suspend fun ask(utterance: String): NluResult {
        if (handle.isClosed) throw IllegalStateException("fgemma: this NLU engine is closed")
        val h = handle
        return suspendCancellableCoroutine { cont ->
            val token = Any()
            cont.invokeOnCancellation { h.cancel(token) }
            try {
                executor.execute {
                    val r = runCatching { ask0(h, token, { cont.isCancelled }, utterance) }
                    if (cont.isActive) r.fold({ cont.resume(it) }, { cont.resumeWithException(it) })
                }
            } catch (e: RejectedExecutionException) {
                cont.resumeWithException(IllegalStateException("fgemma: this NLU engine is closed"))
            }
        }
    }

    /**
     * Stops the ask in progress, from any thread; no effect when none is running. Returns true when one
     * was running and is asked to stop: it then ends with FgException(ABORTED), unless it had already
     * passed its last check (the ask then completes normally).
     */
    fun cancel(): Boolean = handle.cancel()

    val info: NluInfo
        get() = handle.use { p ->
            val nums = DoubleArray(7)
            val strs = arrayOfNulls<ByteArray>(1)
            NluNative.info(p, nums, strs)
            NluInfo(nums, decodeUtf8(strs[0]!!))
        }

    /** A session forked from the catalog prefix state (with the engine's KV type), e.g. for your own decoding. */
    fun forkPrefix(options: SessionOptions): FgSession =
        handle.use { FgSession(NluNative.forkPrefix(it, options.contextSize, options.threads, options.batch)) }

    fun forkPrefix(): FgSession = forkPrefix(SessionOptions())

    val isClosed: Boolean get() = handle.isClosed

    /** Frees the engine (after an ask in progress, which close() cancels); idempotent. */
    override fun close() {
        handle.close()
        executor.shutdown()
    }
}
