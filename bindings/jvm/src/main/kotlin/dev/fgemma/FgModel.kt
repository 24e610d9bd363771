package dev.fgemma

/**
 * A LoRA adapter in llama.cpp's GGUF format (`fgemma convert` makes one from a PEFT adapter directory).
 * [scale] multiplies its effect: 1 applies it as trained, 0 loads it without effect; it must be finite.
 */
data class LoraAdapter @JvmOverloads constructor(val path: String, val scale: Float = 1f) {
    init {
        require(scale.isFinite()) { "LoraAdapter scale must be finite, not $scale ($path)" }
    }
}

/** How LoRA adapters are applied (`fg_model_params.lora_merge`). */
enum class LoraMerge(internal val id: Int) {
    /** exactly, at run time, over the base weights as they are */
    RUNTIME(0),
    /** merged at load into heap copies of the adapted matrices, in F32 */
    F32(1),
    /** ... in BF16 */
    BF16(2),
    /** ... in Q8_0 */
    Q8_0(3),
}

/** How to load a model. Defaults: the file is mapped, not read; no tensor scan; the file's LM head; no adapters. */
class ModelOptions {
    /** Read the whole file into memory instead of mapping it. */
    var noMmap: Boolean = false
    /** Scan every weight for NaN/Inf at load (slow). */
    var checkTensors: Boolean = false
    /** A replacement LM head made at load: "q8_0" or "q4_0" (null: the file's head). */
    var headType: String? = null
    /**
     * Where the kernels have a layout of their own (arm64-v8a with the dot product: Q8_0, Q5_0 and Q4_K
     * matrices; x86-64 with AVX2: also Q5_1, IQ4_NL, Q6_K and IQ4_XS), copy the matrices into it at load:
     * same results, fewer instructions per token ([ModelInfo.repackBytes]). The file's pages are handed
     * back, so resident memory stays about the same, but the copy is anonymous memory. false keeps the
     * file's layout.
     */
    var repack: Boolean = true
    /** LoRA adapters applied in this order (their files are read during the load only) */
    var lora: List<LoraAdapter> = emptyList()
    /** how the adapters are applied */
    var loraMerge: LoraMerge = LoraMerge.RUNTIME

    internal fun loraPaths(): Array<ByteArray>? = if (lora.isEmpty()) null else Array(lora.size) { encodeUtf8(lora[it].path) }
    internal fun loraScales(): FloatArray? = if (lora.isEmpty()) null else FloatArray(lora.size) { lora[it].scale }

    internal val flags: Int
        get() = (if (noMmap) 1 else 0) or (if (checkTensors) 2 else 0) or (if (repack) 0 else 8)
    internal val headTypeId: Int
        get() = when (headType?.lowercase()) {
            null -> -1
            "q8_0" -> 8
            "q4_0" -> 2
            else -> throw IllegalArgumentException("headType must be null, \"q8_0\" or \"q4_0\", not \"$headType\"")
        }
}

/** What a model is, from its metadata (`fg_model_info`). */
class ModelInfo internal constructor(nums: LongArray, strs: Array<String>) {
    val arch: String = strs[0]
    /** general.name; may be empty */
    val name: String = strs[1]
    /** 32 hex digits identifying hyper-parameters and weights (snapshots carry it) */
    val fingerprint: String = strs[2]
    /** type of the bulk of the weights: "f32", "f16", "bf16", "q8_0", "q4_0" */
    val weightType: String = strs[3]
    /** type of the output projection (LM head) */
    val headType: String = strs[4]
    /**
     * the kernel table this process runs on (`fg_kernels_name`): "ref", "avx2", "avx512", "neon",
     * "neon_dotprod" or "neon_i8mm"; the best the CPU has, or the one the environment variable FG_ISA names
     */
    val kernels: String = strs[5]
    val vocabSize: Int = nums[0].toInt()
    val embeddingLength: Int = nums[1].toInt()
    val layers: Int = nums[2].toInt()
    val heads: Int = nums[3].toInt()
    val kvHeads: Int = nums[4].toInt()
    val headDim: Int = nums[5].toInt()
    val feedForwardLength: Int = nums[6].toInt()
    val contextLength: Int = nums[7].toInt()
    val slidingWindow: Int = nums[8].toInt()
    val globalLayers: Int = nums[10].toInt()
    /** GGML type id of weightType (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16) */
    val weightTypeId: Int = nums[11].toInt()
    val tiedHead: Boolean = nums[13] != 0L
    val hasVocab: Boolean = nums[14] != 0L
    val fileBytes: Long = nums[15]
    val weightBytes: Long = nums[16]
    val parameters: Long = nums[17]
    /** bytes of the matrices copied into the kernels' layout at load ([ModelOptions.repack]); 0 = none */
    val repackBytes: Long = nums[19]
    /** LoRA adapters applied ([ModelOptions.lora]) */
    val loraCount: Int = nums[20].toInt()
    /** how they are applied */
    val loraMerge: LoraMerge = LoraMerge.values().firstOrNull { it.id.toLong() == nums[21] } ?: LoraMerge.RUNTIME
    /** heap bytes of the adapters' tensors (RUNTIME) or of the merged matrices */
    val loraBytes: Long = nums[22]
    /** milliseconds spent loading (and merging) them */
    val loraMs: Double = Double.fromBits(nums[23])

    override fun toString(): String =
        "ModelInfo($arch '$name', $layers layers, vocab $vocabSize, $weightType, fingerprint $fingerprint)"
}

/**
 * A GGUF model (Gemma 3 / FunctionGemma), mapped into memory. Immutable and thread-safe: any number
 * of threads may tokenize, make sessions and NLU engines from one model at once. Sessions, snapshots
 * and NLU engines keep the model's memory alive, so closing the model while they live is safe (they
 * go on working; the memory goes with the last of them).
 */
class FgModel private constructor(ptr: Long) : AutoCloseable {
    internal val handle = NativeHandle(this, ptr, "model", ModelNative::free, exclusive = false, cancellable = false)

    companion object {
        /** Loads a GGUF file; throws FgException (IO, FORMAT, UNSUPPORTED) naming the path. */
        @JvmStatic
        fun load(path: String): FgModel = load(path, ModelOptions())

        @JvmStatic
        fun load(path: String, options: ModelOptions): FgModel = FgModel(
            ModelNative.load(
                encodeUtf8(path), options.flags, options.headTypeId, options.loraPaths(), options.loraScales(),
                options.loraMerge.id,
            ),
        )

        /**
         * Loads the GGUF at bytes [offset, offset + length) of an open file, e.g. an uncompressed
         * APK asset (AssetFileDescriptor: parcelFileDescriptor.fd, startOffset, length); length 0 =
         * up to the end of the file. The descriptor stays the caller's: it may be closed as soon as
         * this returns. Any offset works (the range is mapped from the page below it).
         */
        @JvmStatic
        fun loadFd(fd: Int, offset: Long, length: Long, options: ModelOptions): FgModel = FgModel(
            ModelNative.loadFd(
                fd, offset, length, options.flags, options.headTypeId, options.loraPaths(), options.loraScales(),
                options.loraMerge.id,
            ),
        )

        @JvmStatic
        fun loadFd(fd: Int, offset: Long, length: Long): FgModel = loadFd(fd, offset, length, ModelOptions())

        /** The C library's version, e.g. 400 for 0.4.0 (FG_VERSION_NUMBER). */
        @JvmStatic
        fun libraryVersion(): Int = ModelNative.version()
    }

    val info: ModelInfo
        get() = handle.use { p ->
            val nums = LongArray(24)
            val strs = arrayOfNulls<ByteArray>(6)
            ModelNative.info(p, nums, strs)
            ModelInfo(nums, Array(6) { decodeUtf8(strs[it]!!) })
        }

    /** Token ids of text; bos prepends <bos>. Control-token text such as "<start_of_turn>" becomes its token. */
    fun tokenize(text: String, bos: Boolean): IntArray = tokenize(text, bos, true)

    /** As tokenize(text, bos); parseSpecial = false treats control-token text as plain text. */
    fun tokenize(text: String, bos: Boolean, parseSpecial: Boolean): IntArray = handle.use { p ->
        ModelNative.tokenize(p, encodeUtf8(text), (if (bos) 1 else 0) or (if (parseSpecial) 0 else 2))
    }

    /**
     * Text of ids (control tokens by their names). Bytes that do not form valid UTF-8 — a character
     * split across ids, or a lone byte token — become U+FFFD; this never throws on odd input.
     */
    fun detokenize(ids: IntArray): String = handle.use { p -> decodeUtf8(ModelNative.detokenize(p, ids)) }

    /** A new session (KV cache) on this model. */
    fun newSession(): FgSession = newSession(SessionOptions())

    fun newSession(options: SessionOptions): FgSession = handle.use { p ->
        FgSession(SessionNative.create(p, options.nCtx, options.threads, options.batch, options.kvTypeId(0)))
    }

    /**
     * An NLU engine for a tool catalog: renders the catalog into FunctionGemma's prompt, prefills it
     * once (or loads NluOptions.snapshotPath or the file in NluOptions.snapshotDir), then answers
     * utterances. Takes as long as the catalog prefill (seconds for a large catalog on a phone): call it
     * off the main thread.
     */
    fun newNlu(catalog: ToolCatalog): FgNlu = newNlu(catalog, NluOptions())

    fun newNlu(catalog: ToolCatalog, options: NluOptions): FgNlu = handle.use { mp ->
        catalog.handle.use { cp ->
            require(options.snapshotPath == null || options.snapshotDir == null) {
                "fgemma: give snapshotPath or snapshotDir, not both"
            }
            val path = options.snapshotPath?.let { encodeUtf8(it) }
            val dir = options.snapshotDir?.let { encodeUtf8(it) }
            FgNlu(NluNative.create(mp, cp, options.toArray(), path, dir))
        }
    }

    /**
     * A view of this model with adapters of its own (`fg_model_with_loras`, docs/LORA.md "Many adapters,
     * one base"): a new FgModel that shares this one's weights (nothing is loaded again or copied) and
     * applies this model's adapters and then [adapters], at run time. Its logits equal those of the file
     * loaded with both lists, bit for bit; sessions, snapshots and engines come from it as from any model,
     * and a snapshot of one view is refused (MISMATCH) by a view with other adapters. Close the two in any
     * order. Throws IllegalArgumentException for an empty list, IllegalStateException when this model is
     * closed, FgException (IO, FORMAT, UNSUPPORTED for a model with merged adapters) naming the file.
     */
    fun withLora(adapters: List<LoraAdapter>): FgModel {
        require(adapters.isNotEmpty()) { "withLora: no adapter given" }
        val paths = Array(adapters.size) { encodeUtf8(adapters[it].path) }
        val scales = FloatArray(adapters.size) { adapters[it].scale }
        return handle.use { p -> FgModel(ModelNative.withLoras(p, paths, scales)) }
    }

    /** A view with one or more adapters: see withLora(List). */
    fun withLora(vararg adapters: LoraAdapter): FgModel = withLora(adapters.toList())

    /** A view with the adapter at path and scale: see withLora(List). */
    @JvmOverloads
    fun withLora(path: String, scale: Float = 1f): FgModel = withLora(listOf(LoraAdapter(path, scale)))

    val isClosed: Boolean get() = handle.isClosed

    /** Drops this reference; idempotent. Sessions, snapshots and engines made from it keep working. */
    override fun close() = handle.close()
}

/** A parsed tool catalog (both formats the CLI accepts). Immutable; NLU engines keep it alive. */
class ToolCatalog private constructor(ptr: Long) : AutoCloseable {
    internal val handle = NativeHandle(this, ptr, "catalog", CatalogNative::free, exclusive = false, cancellable = false)

    companion object {
        /**
         * Parses the cartridge schema ({"id","functions":[...]}) or an OpenAI/Hugging Face tools list;
         * throws FgException(FORMAT) naming the function and the field.
         */
        @JvmStatic
        fun fromJson(json: String): ToolCatalog = ToolCatalog(CatalogNative.parse(encodeUtf8(json)))
    }

    val functionCount: Int get() = handle.use { CatalogNative.functions(it) }

    /** The FunctionGemma prompt prefix the catalog renders to (without <bos>). */
    fun renderPrefix(): String = handle.use { decodeUtf8(CatalogNative.prefix(it)) }

    val isClosed: Boolean get() = handle.isClosed

    override fun close() = handle.close()
}
