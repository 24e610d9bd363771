package dev.fgemma

/** Element type of a session's KV cache. */
enum class KvType(internal val id: Int) { F32(0), F16(1) }

/** Session parameters; 0 (or null) means the default, as in C. */
class SessionOptions {
    /** maximum positions; 0 = the model's context length (for a fork: the snapshot's) */
    var nCtx: Int = 0

    /** the old name of [nCtx] */
    @Deprecated("renamed to nCtx (docs/OPTIONS.md)", ReplaceWith("nCtx"))
    var contextSize: Int
        get() = nCtx
        set(value) {
            nCtx = value
        }
    /** worker threads; 0 = available cores */
    var threads: Int = 0
    /** positions per internal chunk of a prefill; 0 = 256 */
    var batch: Int = 0
    /** KV cache type; null = F32 for a new session, the snapshot's for a fork */
    var kvType: KvType? = null

    internal fun kvTypeId(default: Int): Int = kvType?.id ?: default
}

/**
 * A KV cache, a position and the logits of the last appended token. One call at a time: calls
 * from several threads are serialised. cancel() may be called from any thread and stops the call in
 * progress within one layer of the forward pass (also in the middle of a long prefill); the
 * cancelled call throws FgException(ABORTED) and leaves the session exactly as it was.
 */
class FgSession internal constructor(ptr: Long) : AutoCloseable {
    internal val handle = NativeHandle(this, ptr, "session", SessionNative::free, exclusive = true, cancellable = true)

    /** Appends the ids (at least one); returns the greedy next id. */
    fun prefill(ids: IntArray): Int = handle.call(null, null) { SessionNative.prefill(it, ids) }

    /** Appends one id; returns the greedy next id. */
    fun step(id: Int): Int = handle.call(null, null) { SessionNative.step(it, id) }

    /** Tokens held. */
    val position: Int get() = handle.use { SessionNative.position(it) }

    /** A copy of the logits (vocabulary size) after the last appended token. */
    fun logits(): FloatArray = handle.use { SessionNative.logits(it) }
        ?: throw IllegalStateException("fgemma: the session has no logits yet (nothing was appended)")

    /** An immutable copy of the state (no KV bytes are copied); fork or restore it any number of times. */
    fun snapshot(): FgSnapshot = handle.use { FgSnapshot(SessionNative.snapshot(it)) }

    /** Continues from the snapshot (of the same model). */
    fun restore(snapshot: FgSnapshot) = handle.use { sp -> snapshot.handle.use { np -> SessionNative.restore(sp, np) } }

    /**
     * Stops the call in progress, from any thread; no effect when none is running. Returns true when one
     * was running and is asked to stop: it then ends with FgException(ABORTED), unless it had already
     * passed its last check (the call then completes normally).
     */
    fun cancel(): Boolean = handle.cancel()

    val isClosed: Boolean get() = handle.isClosed

    /** Frees the session (after the call in progress, which close() cancels); idempotent. */
    override fun close() = handle.close()
}

/**
 * An immutable session state. Forks of one snapshot may run on different threads at once. Keeps its
 * model alive.
 */
class FgSnapshot internal constructor(ptr: Long) : AutoCloseable {
    internal val handle = NativeHandle(this, ptr, "snapshot", SnapshotNative::free, exclusive = false, cancellable = false)

    companion object {
        /**
         * Loads a snapshot file written by save(); FgException(MISMATCH) for another model's,
         * FORMAT for a damaged one.
         */
        @JvmStatic
        fun load(model: FgModel, path: String): FgSnapshot =
            model.handle.use { FgSnapshot(SnapshotNative.load(it, encodeUtf8(path))) }
    }

    /** A new session continuing from this state. */
    fun fork(): FgSession = fork(SessionOptions())

    fun fork(options: SessionOptions): FgSession = handle.use {
        FgSession(SnapshotNative.fork(it, options.nCtx, options.threads, options.batch, options.kvTypeId(-1)))
    }

    /** Writes the snapshot (magic, version, model fingerprint, tokens, KV) to a file. */
    fun save(path: String) = handle.use { SnapshotNative.save(it, encodeUtf8(path)) }

    val position: Int get() = handle.use { SnapshotNative.position(it) }

    val isClosed: Boolean get() = handle.isClosed

    override fun close() = handle.close()
}
