package dev.fgemma

import java.lang.ref.PhantomReference
import java.lang.ref.ReferenceQueue
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock
import kotlin.concurrent.withLock

/**
 * The native pointer of one binding object, and the rules around it:
 *
 * - every call holds the handle (a use count) for its whole duration; `close()` marks the handle
 *   closed at once (later calls throw IllegalStateException) and frees the C object when the last
 *   call in progress ends, so closing from any thread, or the cleaner, never frees memory a call uses;
 * - an *exclusive* handle (session, NLU engine) runs one call at a time: C wants a session used by one
 *   thread at a time, and the binding serialises instead of crashing;
 * - a *cancellable* handle has a flag in its C wrapper that the abort callback reads between layers
 *   (also in the middle of a prefill); `cancel()` sets it while a call runs; each call clears it when
 *   it starts;
 * - a PhantomReference to the owner: an object that was never closed is freed after the garbage
 *   collector found it unreachable (the safety net; `close()` is the way). Android's
 *   java.lang.ref.Cleaner needs API 33, so this uses its own queue and daemon thread.
 */
internal class NativeHandle(
    owner: Any,
    ptr: Long,
    private val what: String,
    private val free: (Long) -> Unit,
    exclusive: Boolean,
    private val cancellable: Boolean,
) : PhantomReference<Any>(owner, Cleaner.queue) {
    private var ptr: Long = ptr
    private var users = 0
    private var closed = false
    private var running: Any? = null // token of the call in progress (cancellable handles)
    private val lock: ReentrantLock? = if (exclusive) ReentrantLock() else null

    init {
        Cleaner.register(this)
    }

    val isClosed: Boolean
        @Synchronized get() = closed

    /** Whether a call of a cancellable handle is in progress (tests wait for it before cancelling). */
    internal val isRunning: Boolean
        @Synchronized get() = running != null

    @Synchronized
    private fun acquire(): Long {
        if (closed) throw IllegalStateException("fgemma: this $what is closed")
        users++
        return ptr
    }

    private fun release() {
        var toFree = 0L
        synchronized(this) {
            users--
            if (closed && users == 0 && ptr != 0L) {
                toFree = ptr
                ptr = 0L
            }
        }
        if (toFree != 0L) free(toFree)
    }

    /** Runs block with the pointer held (and, for an exclusive handle, with the call lock). */
    fun <T> use(block: (Long) -> T): T = call(null, null, block)

    /**
     * As use; for a cancellable handle the cancel flag is cleared first and token marks the call, so
     * that `cancel(token)` stops exactly this call. cancelled is asked before and after that: true stops
     * before native code runs (a coroutine cancelled before its call started); the second check covers a
     * cancel that came between the first and the mark.
     */
    fun <T> call(token: Any?, cancelled: (() -> Boolean)?, block: (Long) -> T): T {
        val p = acquire()
        try {
            val l = lock
            return if (l == null) block(p) else l.withLock {
                // closed while this call waited for the lock
                if (isClosed) throw IllegalStateException("fgemma: this $what is closed")
                if (!cancellable) return@withLock block(p)
                // cancelled before it got here (an ask whose coroutine timed out while queued): never
                // marked running, so a cancel() meant for a later call cannot see it
                if (cancelled != null && cancelled()) throw java.util.concurrent.CancellationException("cancelled")
                begin(p, token ?: this)
                try {
                    if (cancelled != null && cancelled()) throw java.util.concurrent.CancellationException("cancelled")
                    block(p)
                } finally {
                    end()
                }
            }
        } finally {
            release()
        }
    }

    @Synchronized
    private fun begin(p: Long, token: Any) {
        SessionNative.setCancel(p, false)
        running = token
    }

    @Synchronized
    private fun end() {
        running = null
    }

    /**
     * Stops the call in progress (token: only if it is that call); no effect when none runs. True when
     * a call was running and is now asked to stop (it still succeeds if it had passed its last check).
     */
    @Synchronized
    fun cancel(token: Any? = null): Boolean {
        if (!cancellable) return false
        if (token == null && closed) throw IllegalStateException("fgemma: this $what is closed")
        val r = running ?: return false
        if (token != null && r !== token) return false
        SessionNative.setCancel(ptr, true)
        return true
    }

    fun close() {
        var toFree = 0L
        synchronized(this) {
            if (closed) return
            closed = true
            if (users > 0) {
                if (cancellable && running != null) SessionNative.setCancel(ptr, true) // stop it, then free
            } else {
                toFree = ptr
                ptr = 0L
            }
        }
        Cleaner.unregister(this)
        clear()
        if (toFree != 0L) free(toFree)
    }

    /** Called by the cleaner thread for an owner that became unreachable without close(). */
    internal fun cleanup() {
        if (!isClosed) {
            Cleaner.collected.incrementAndGet()
            close()
        }
    }
}

/** The queue and the daemon thread of the PhantomReference safety net. */
internal object Cleaner {
    val queue = ReferenceQueue<Any>()
    private val live: MutableSet<NativeHandle> = ConcurrentHashMap.newKeySet()
    /** Handles freed because their owner was collected without close() (a leak in the app). */
    val collected = AtomicLong()
    private var thread: Thread? = null

    fun register(h: NativeHandle) {
        live.add(h)
        start()
    }

    fun unregister(h: NativeHandle) {
        live.remove(h)
    }

    @Synchronized
    private fun start() {
        if (thread != null) return
        thread = Thread({
            while (true) {
                try {
                    (queue.remove() as NativeHandle).cleanup()
                } catch (e: InterruptedException) {
                    // keep serving: the queue is process-wide
                } catch (t: Throwable) {
                    // a failing free must not end the thread
                }
            }
        }, "fgemma-cleaner").apply {
            isDaemon = true
            start()
        }
    }
}
