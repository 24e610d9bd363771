package dev.fgemma

/** The status of a failed fgemma call: mirrors `fg_status` in fgemma.h (same codes). */
enum class FgStatus(val code: Int) {
    OK(0),
    /** NULL or out-of-range argument, token id outside the vocabulary, utterance refused, ... */
    INVALID_ARG(1),
    /** an allocation failed; nothing was changed */
    NOMEM(2),
    /** open/read/write/mmap failed */
    IO(3),
    /** malformed GGUF, snapshot or catalog; the message names the culprit */
    FORMAT(4),
    /** valid but not supported: architecture, tensor type, missing vocabulary */
    UNSUPPORTED(5),
    /** the tokens would not fit into the session's context */
    CONTEXT_FULL(6),
    BUFFER_TOO_SMALL(7),
    /** cancelled (cancel(), a cancelled coroutine, close() during the call); nothing was changed */
    ABORTED(8),
    /** a bug in fgemma */
    INTERNAL(9),
    /** a snapshot of another model or of an incompatible session */
    MISMATCH(10),
    /** a code this binding does not know (a newer library) */
    UNKNOWN(-1);

    companion object {
        @JvmStatic
        fun of(code: Int): FgStatus = values().firstOrNull { it.code == code } ?: UNKNOWN
    }
}

/**
 * A failed fgemma call. The message is the C library's (it names the file, the field or the
 * parameter); getStatus() says what kind of failure it was. A failed call changed nothing.
 */
class FgException(val status: FgStatus, message: String) : RuntimeException(message) {
    /** Thrown by the JNI glue: the status code and the UTF-8 bytes of the message. */
    internal constructor(code: Int, message: ByteArray) : this(FgStatus.of(code), decodeUtf8(message))
}

/** UTF-8 to String; malformed or split sequences become U+FFFD (never an exception). */
internal fun decodeUtf8(b: ByteArray): String = String(b, Charsets.UTF_8)

internal fun encodeUtf8(s: String): ByteArray = s.toByteArray(Charsets.UTF_8)
