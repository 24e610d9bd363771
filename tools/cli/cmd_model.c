/* cmd_model.c — model-level commands: info, gen-model, requant-head, generate, logits, tokenize,
 * detokenize. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define HELP_OPT {"help", 'h', false, "show this help"}
#define THREADS_OPT {"threads", 't', true, "worker threads (default: available cores)"}

static int want_help(const cli_opt *opts, const cli_args *a) { return cli_has(opts, a, "help"); }

static bool parse_type(const char *opt, const char *s, uint32_t *out) {
  static const struct { const char *name; uint32_t id; } k[] = {
      {"f32", 0},   {"f16", 1},   {"bf16", 30}, {"q8_0", 8},  {"q4_0", 2},    {"q4_1", 3},     {"q5_0", 6},
      {"q5_1", 7},  {"q2_k", 10}, {"q3_k", 11}, {"q4_k", 12}, {"q5_k", 13},   {"q6_k", 14},    {"iq4_nl", 20},
      {"iq4_xs", 23}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(s, k[i].name) == 0) return *out = k[i].id, true;
  cli_error("%s: unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, "
            "iq4_nl, iq4_xs)", opt, s);
  return false;
}

static bool session_params_from(const cli_opt *opts, const cli_args *a, fg_session_params *p) {
  cli_session_params_init(p);
  const char *t = cli_get(opts, a, "threads");
  if (t && !cli_u32("--threads", t, 1, 256, &p->n_threads)) return false;
  const char *c = cli_get(opts, a, "chunk");
  if (c && !cli_u32("--chunk", c, 1, 4096, &p->n_batch)) return false;
  const char *ctx = cli_get(opts, a, "n-ctx");
  if (ctx && !cli_u32("--n-ctx", ctx, 1, UINT32_MAX, &p->n_ctx)) return false;
  return true;
}

// ----------------------------------------------------------------------------------------------
// info

int cmd_info(int argc, char **argv) {
  static const cli_opt opts[] = {{"model", 'm', true, "GGUF file"}, HELP_OPT, {0}};
  cli_args a;
  if (cli_parse("info", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "info", "-m MODEL.gguf", "Prints the architecture, dimensions, tensor types and sizes.", opts);
    return 0;
  }
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return 1;
  fg_model_info in;
  fg_model_get_info(m, &in);
  printf("architecture    %s\n", in.arch);
  printf("name            %s\n", in.name[0] ? in.name : "-");
  printf("vocabulary      %u%s\n", in.n_vocab, in.has_vocab ? "" : " (no tokenizer metadata)");
  printf("embedding       %u\n", in.n_embd);
  printf("layers          %u (%u global, %u sliding)\n", in.n_layer, in.n_global_layers, in.n_layer - in.n_global_layers);
  printf("heads           %u query, %u key/value, head size %u\n", in.n_head, in.n_head_kv, in.head_dim);
  printf("feed-forward    %u\n", in.n_ff);
  printf("context         %u\n", in.n_ctx_train);
  printf("sliding window  %u (pattern %u)\n", in.sliding_window, in.swa_pattern);
  printf("weights         %s, head %s%s\n", fg_type_name(in.weight_type), fg_type_name(in.head_type),
         in.tied_head ? " (tied to token_embd)" : in.head_copy_bytes ? " (replacement made at load)" : " (output.weight)");
  if (in.head_copy_bytes)
    printf("head copy       %.1f MiB, quantized in %.0f ms\n", (double)in.head_copy_bytes / (1024.0 * 1024.0),
           in.head_copy_ms);
  if (in.head_rows < in.n_vocab)
    printf("head rows       %u of %u (the others are all zero: a trimmed vocabulary; only these are computed)\n",
           in.head_rows, in.n_vocab);
  if (in.repack_bytes)
    printf("repacked        %.1f MiB copied into the kernels' layout in %.0f ms (--repack off keeps the file's)\n",
           (double)in.repack_bytes / (1024.0 * 1024.0), in.repack_ms);
  if (in.n_loras) {
    static const char *const merge[] = {"applied at run time", "merged into f32 copies", "merged into bf16 copies",
                                        "merged into q8_0 copies"};
    printf("lora adapters   %u, %s, %.2f MiB, loaded in %.0f ms\n", in.n_loras,
           in.lora_merge < 4 ? merge[in.lora_merge] : "?", (double)in.lora_bytes / (1024.0 * 1024.0), in.lora_ms);
  }
  printf("decode bytes    %.1f MB per token\n", (double)in.decode_bytes / 1e6);
  printf("parameters      %.1f M\n", (double)in.n_params / 1e6);
  printf("tensor bytes    %.1f MiB\n", (double)in.weight_bytes / (1024.0 * 1024.0));
  printf("file bytes      %.1f MiB\n", (double)in.file_bytes / (1024.0 * 1024.0));
  printf("fingerprint     ");
  for (int i = 0; i < 16; i++) printf("%02x", in.fingerprint[i]);
  printf("\n");
  printf("kernels         %s\n", fg_kernels_name());
  fg_model_free(m);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// gen-model

static bool gen_progress(uint64_t done, uint64_t total, void *ud) {
  (void)ud;
  fprintf(stderr, "\rgen-model: %5.1f%% (%llu / %llu MiB)", total ? 100.0 * (double)done / (double)total : 100.0,
          (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
  if (done >= total) fputc('\n', stderr);
  return true;
}

int cmd_gen_model(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"preset", 0, true, "tiny | small | 270m (required)"},
      {"type", 0, true, "f32 | f16 | bf16 | q8_0 | q4_0 (default f32; --format hf: f32 | f16 | bf16)"},
      {"head-type", 0, true, "also write output.weight of this type (default: tied head; hf: an untied lm_head)"},
      {"vocab", 0, true, "Gemma 3 tokenizer.json: write the real vocabulary"},
      {"seed", 0, true, "random seed (default 1)"},
      {"format", 0, true, "gguf (default) | hf: a Hugging Face checkpoint directory"},
      {"hf-config", 0, true, "hf: config.json as transformers 4 or 5 writes it (default 5)"},
      {"shards", 0, true, "hf: number of safetensors shards (default 1: model.safetensors)"},
      {"output", 'o', true, "output .gguf path, or the directory for --format hf (required)"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("gen-model", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "gen-model",
              "--preset tiny|small|270m [--type T] [--vocab tokenizer.json] [--seed N] [--format gguf|hf "
              "[--hf-config 4|5] [--shards N]] -o OUT",
              "Writes a valid gemma3 GGUF with random weights from a seed. 'tiny' has 6 layers, width 64 and a\n"
              "sliding window of 8 (layer 5 global); 'small' has 6 layers, width 128, 4 heads of 256, a window of\n"
              "512 and every third layer global; '270m' has FunctionGemma-270M's exact shape. Weights are drawn\n"
              "so that next-token distributions are peaked, which makes greedy ids a meaningful check.\n"
              "--format hf writes the same model as a Hugging Face Gemma3ForCausalLM checkpoint into the new\n"
              "directory OUT (config.json, safetensors, tokenizer.json, tokenizer_config.json): the input of\n"
              "'fgemma convert' and of the HF oracle (tools/hf/record_goldens.py).",
              opts);
    return 0;
  }
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = cli_get(opts, &a, "preset");
  const char *out = cli_get(opts, &a, "output");
  if (!p.preset) return cli_error("gen-model: --preset is required (tiny, small or 270m)"), 2;
  if (!out) return cli_error("gen-model: -o OUT is required"), 2;
  const char *t = cli_get(opts, &a, "type");
  if (t && !parse_type("--type", t, &p.type)) return 2;
  const char *ht = cli_get(opts, &a, "head-type");
  if (ht && !parse_type("--head-type", ht, &p.head_type)) return 2;
  const char *seed = cli_get(opts, &a, "seed");
  if (seed && !cli_u64("--seed", seed, &p.seed)) return 2;
  p.vocab_json = cli_get(opts, &a, "vocab");
  const char *fmt = cli_get(opts, &a, "format");
  if (fmt && strcmp(fmt, "hf") == 0) p.format = FG_GEN_FORMAT_HF;
  else if (fmt && strcmp(fmt, "gguf") != 0) return cli_error("--format: '%s' is not gguf or hf", fmt), 2;
  const char *hc = cli_get(opts, &a, "hf-config");
  if (hc && !cli_u32("--hf-config", hc, 4, 5, &p.hf_config)) return 2;
  const char *sh = cli_get(opts, &a, "shards");
  if (sh && !cli_u32("--shards", sh, 1, 64, &p.hf_shards)) return 2;
  if ((hc || sh) && p.format != FG_GEN_FORMAT_HF) return cli_error("gen-model: --hf-config and --shards need --format hf"), 2;
  if (cli_stderr_is_tty()) p.progress = gen_progress;
  fg_error err = {0};
  double t0 = cli_now();
  fg_status st = fg_gen_model(&p, out, &err);
  if (st != FG_OK) return cli_status_error(st, "gen-model", err.msg);
  fprintf(stderr, "gen-model: wrote %s in %.1f s\n", out, cli_now() - t0);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// gen-lora

int cmd_gen_lora(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"base", 'm', true, "the base GGUF the adapter is for (required)"},
      {"output", 'o', true, "output adapter .gguf (required; written as OUT.tmp.PID, then renamed)"},
      {"rank", 0, true, "rank of every pair (default 8)"},
      {"alpha", 0, true, "adapter.lora.alpha (default 16; 0 = the scale alone, no alpha / rank)"},
      {"targets", 0, true, "comma list of attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, or all "
                           "(default all)"},
      {"type", 0, true, "f32 | f16 | bf16 | q8_0 (rank a multiple of 32) (default f32)"},
      {"seed", 0, true, "random seed (default 1)"},
      {"magnitude", 0, true, "RMS of the change s*B*A at scale 1 relative to the base matrix's (default 0.1)"},
      {"vocab-override", 0, false, "also rename ids 46..52 to FunctionGemma's control tokens (for a Gemma 3 base)"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("gen-lora", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "gen-lora",
              "-m BASE.gguf -o OUT.gguf [--rank R] [--alpha A] [--targets attn_q,...|all] [--type T] [--seed N] "
              "[--magnitude X] [--vocab-override]",
              "Writes a synthetic LoRA adapter for BASE in llama.cpp's GGUF format (general.type adapter,\n"
              "blk.N.<target>.weight.lora_a / .lora_b for every layer), random from a seed: lora_a ~ N(0, 1/n_in),\n"
              "lora_b sized so that the change of each adapted matrix has --magnitude times its RMS. fgemma and\n"
              "llama.cpp load it with --lora OUT.gguf[:SCALE]; the default magnitude changes greedy outputs\n"
              "visibly. docs/LORA.md.",
              opts);
    return 0;
  }
  const char *base = cli_get(opts, &a, "base"), *out = cli_get(opts, &a, "output"), *v;
  if (!base) return cli_error("gen-lora: -m BASE.gguf is required"), 2;
  if (!out) return cli_error("gen-lora: -o OUT.gguf is required"), 2;
  if (a.n_pos) return cli_error("gen-lora: unexpected argument '%s'", a.pos[0]), 2;
  fg_gen_lora_params p;
  fg_gen_lora_params_init(&p);
  if ((v = cli_get(opts, &a, "rank")) && !cli_u32("--rank", v, 1, 65536, &p.rank)) return 2;
  char *end;
  if ((v = cli_get(opts, &a, "alpha"))) {
    p.alpha = strtof(v, &end);
    if (*end || end == v) return cli_error("--alpha: '%s' is not a number", v), 2;
  }
  if ((v = cli_get(opts, &a, "magnitude"))) {
    p.magnitude = strtof(v, &end);
    if (*end || end == v) return cli_error("--magnitude: '%s' is not a number", v), 2;
  }
  if ((v = cli_get(opts, &a, "type")) && !parse_type("--type", v, &p.type)) return 2;
  if ((v = cli_get(opts, &a, "seed")) && !cli_u64("--seed", v, &p.seed)) return 2;
  p.targets = cli_get(opts, &a, "targets");
  if (cli_has(opts, &a, "vocab-override")) p.flags |= FG_GEN_LORA_VOCAB_OVERRIDE;
  fg_error err = {0};
  const double t0 = cli_now();
  fg_status st = fg_gen_lora(base, &p, out, &err);
  if (st != FG_OK) return cli_status_error(st, "gen-lora", err.msg);
  fprintf(stderr, "gen-lora: wrote %s in %.2f s\n", out, cli_now() - t0);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// requant-head


static bool requant_progress(uint64_t done, uint64_t total, void *ud) {
  (void)ud;
  fprintf(stderr, "\rrequant-head: %5.1f%% (%llu / %llu rows)", total ? 100.0 * (double)done / (double)total : 100.0,
          (unsigned long long)done, (unsigned long long)total);
  if (done >= total) fputc('\n', stderr);
  return true;
}

int cmd_requant_head(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"input", 'm', true, "input GGUF (required)"},
      {"output", 'o', true, "output GGUF (required; written as OUT.tmp, then renamed)"},
      {"type", 0, true, "type of the new output.weight: q8_0 | q4_0 (required)"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("requant-head", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "requant-head", "-m IN.gguf -o OUT.gguf --type q8_0|q4_0",
              "Writes a copy of IN with an output.weight (the LM head) of the given type, quantized from\n"
              "token_embd when the head is tied, or re-quantized from IN's output.weight. Metadata, the other\n"
              "tensors and the alignment are kept byte for byte. llama.cpp reads output.weight when present,\n"
              "so it runs the same replacement head. The load-time option --head-type gives the same logits\n"
              "without a new file.",
              opts);
    return 0;
  }
  const char *in = cli_get(opts, &a, "input"), *out = cli_get(opts, &a, "output"), *t = cli_get(opts, &a, "type");
  if (!in) return cli_error("requant-head: -m IN.gguf is required"), 2;
  if (!out) return cli_error("requant-head: -o OUT.gguf is required"), 2;
  if (!t) return cli_error("requant-head: --type q8_0|q4_0 is required"), 2;
  if (a.n_pos) return cli_error("requant-head: unexpected argument '%s'", a.pos[0]), 2;
  uint32_t type;
  if (!parse_type("--type", t, &type)) return 2;
  if (type != 8 && type != 2) return cli_error("requant-head: --type must be q8_0 or q4_0, not %s", t), 2;
  fg_error err = {0};
  const double t0 = cli_now();
  fg_status st = fg_model_requant_head(in, out, type, cli_stderr_is_tty() ? requant_progress : NULL, NULL, &err);
  if (st != FG_OK) return cli_status_error(st, "requant-head", err.msg);
  fprintf(stderr, "requant-head: wrote %s (output.weight %s) in %.1f s\n", out, t, cli_now() - t0);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// convert

static bool convert_progress(uint64_t done, uint64_t total, void *ud) {
  (void)ud;
  fprintf(stderr, "\rconvert: %5.1f%% (%llu / %llu MiB)", total ? 100.0 * (double)done / (double)total : 100.0,
          (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
  if (done >= total) fputc('\n', stderr);
  return true;
}

/* the library's warnings (a re-quantized tensor, vision tower tensors left out, ...) on stderr */
static void convert_log(fg_log_level level, const char *msg, void *ud) {
  (void)ud;
  if (level <= FG_LOG_WARN) fprintf(stderr, "%s%s\n", level == FG_LOG_WARN ? "warning: " : "", msg);
}

int cmd_convert(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"output", 'o', true, "output GGUF (required; written as OUT.tmp.<pid>, then renamed)"},
      {"type", 0, true, "the weight matrices: a llama-quantize mix (see above; default: the input's own types)"},
      {"pure", 0, false, "every matrix of the --type's main type (as llama-quantize --pure; rows must fit its block)"},
      {"head-type", 0, true, "q8_0 | q4_0: also write output.weight (the LM head) of this type"},
      {"fit", 0, true, "auto (default) | searched: the quantizer of Q4_0 with --pure or --head-type (see above)"},
      {"name", 0, true, "general.name (default: the checkpoint's name or directory)"},
      {"base", 0, true, "PEFT adapter input: the base model's GGUF, to check the adapter's shapes against"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("convert", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "convert", "HF_DIR|IN.gguf|ADAPTER_DIR -o OUT.gguf [--type T [--pure]] [--head-type q8_0|q4_0] "
              "[--fit auto|searched] [--name NAME] [--base BASE.gguf]",
              "Converts a Hugging Face Gemma3ForCausalLM checkpoint (a directory with config.json, model.safetensors\n"
              "or its shards and model.safetensors.index.json, tokenizer.json, tokenizer_config.json) to a gemma3\n"
              "GGUF that fgemma and llama.cpp load: tensors renamed as llama.cpp names them, norm weights + 1,\n"
              "every gemma3.* key, the tokenizer and chat template. A GGUF input of any type fgemma reads is\n"
              "re-typed (a quantized tensor given another quantized type is re-quantized, with a warning).\n"
              "--type T: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s\n"
              "q5_k_m q6_k iq4_nl iq4_xs, each with the per-tensor types llama-quantize gives a Gemma 3 in that\n"
              "mix (e.g. q4_k_m: attn_v and ffn_down Q6_K in the first and last eighth of the layers and every\n"
              "third between, the tied embedding Q6_K; q4_0: the tied embedding Q6_K, or Q8_0 when its rows are\n"
              "not a multiple of 256, as the 640 of Gemma 3 270M; such rows fall back to Q5_0/Q5_1/Q8_0/Q4_0/\n"
              "IQ4_NL as llama-quantize does).\n"
              "Tensors that become F32, F16, BF16 or Q8_0 get the reference quantizers (llama.cpp's bytes), and\n"
              "so does Q4_0 with --pure or --head-type; the other types, and Q4_0 in a mix, searched\n"
              "least-squares fits (bench/quant-quality measures them against llama-quantize). --fit searched\n"
              "gives Q4_0 the searched fit everywhere: the better file for --type q4_0 --pure (mean KL from F32\n"
              "0.46 against 0.74 on Gemma 3 270M), several times slower to write. Norm vectors stay F32.\n"
              "Streams one chunk of rows at a time; nothing is left at OUT when it fails.\n"
              "A PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors) becomes a GGUF LoRA\n"
              "adapter as llama.cpp writes it (--type f32|f16|bf16|q8_0, default the adapter's dtype; rsLoRA's\n"
              "scale folded into adapter.lora.alpha); --base BASE.gguf checks its shapes against the base model and\n"
              "takes its architecture. DoRA, modules_to_save, embedding/lm_head targets and biases are refused\n"
              "(docs/LORA.md).",
              opts);
    return 0;
  }
  const char *out = cli_get(opts, &a, "output");
  if (a.n_pos != 1)
    return cli_error("convert: give exactly one input (a checkpoint directory, a .gguf or a PEFT adapter directory)"), 2;
  if (!out) return cli_error("convert: -o OUT.gguf is required"), 2;
  fg_convert_params p;
  fg_convert_params_init(&p);
  const char *t = cli_get(opts, &a, "type"), *ht = cli_get(opts, &a, "head-type");
  if (t && fg_convert_type_parse(t, cli_has(opts, &a, "pure"), &p.type) != FG_OK)
    return cli_error("--type: unknown type '%s' (%s)", t, fg_convert_type_names()), 2;
  if (!t && cli_has(opts, &a, "pure")) return cli_error("convert: --pure needs --type"), 2;
  if (ht) {
    if (!parse_type("--head-type", ht, &p.head_type)) return 2;
    if (p.head_type != 8 && p.head_type != 2) return cli_error("convert: --head-type must be q8_0 or q4_0, not %s", ht), 2;
  }
  const char *fit = cli_get(opts, &a, "fit");
  if (fit && strcmp(fit, "auto") != 0 && strcmp(fit, "searched") != 0)
    return cli_error("convert: --fit must be auto or searched, not '%s'", fit), 2;
  p.fit = fit && strcmp(fit, "searched") == 0 ? FG_CONVERT_FIT_SEARCHED : FG_CONVERT_FIT_AUTO;
  p.name = cli_get(opts, &a, "name");
  p.base = cli_get(opts, &a, "base");
  if (cli_stderr_is_tty()) p.progress = convert_progress;
  fg_error err = {0};
  const double t0 = cli_now();
  fg_set_log_callback(convert_log, NULL);
  const fg_status st = fg_convert(a.pos[0], out, &p, &err);
  fg_set_log_callback(NULL, NULL);
  if (st != FG_OK) return cli_status_error(st, "convert", err.msg);
  fprintf(stderr, "convert: wrote %s in %.1f s\n", out, cli_now() - t0);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// generate

int cmd_generate(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file"},
      {"ids", 0, true, "prompt token ids, space or comma separated (required unless --batch)"},
      {"n", 'n', true, "tokens to generate (default 16)"},
      {"batch", 0, true, "many prompts in one run: FILE has one per line, 'IDS [| POSITIONS]' (see below)"},
      {"logits-out", 0, true, "with --batch: raw f32 logits rows at the lines' POSITIONS, in order"},
      {"reference", 0, false, "use the no-cache reference path (slow; the oracle)"},
      {"chunk", 0, true, "feed the prompt in chunks of N positions (default 64)"},
      {"snapshot-at", 0, true, "snapshot after K prompt tokens, fork, continue in the fork"},
      {"n-ctx", 0, true, "context positions (default: the model's)"},
      THREADS_OPT,
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("generate", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "generate", "-m MODEL.gguf --ids \"2 105 ...\" [-n N] [--reference] [--chunk N] [--snapshot-at K]",
              "Greedy-decodes N tokens after the prompt ids and prints them, space separated, on one line.\n"
              "With --batch FILE, every line of FILE is a prompt ('2 105 ...'), optionally followed by '|' and\n"
              "increasing positions p: the logits after ids[0..p], or for p = n_prompt - 1 + k (k >= 1) after\n"
              "the k-th generated id, go to --logits-out. One line of greedy ids per prompt; a prefix shared\n"
              "with the next line is prefilled once (snapshot and restore, the same results).", opts);
    return 0;
  }
  const char *ids_s = cli_get(opts, &a, "ids"), *batch = cli_get(opts, &a, "batch");
  if (!ids_s && !batch) return cli_error("generate: --ids or --batch is required"), 2;
  if (ids_s && batch) return cli_error("generate: give --ids or --batch, not both"), 2;
  if (cli_get(opts, &a, "logits-out") && !batch) return cli_error("generate: --logits-out needs --batch"), 2;
  uint32_t n_gen = 16;
  if (cli_get(opts, &a, "n") && !cli_u32("-n", cli_get(opts, &a, "n"), 0, 1u << 20, &n_gen)) return 2;
  fg_session_params sp;
  if (!session_params_from(opts, &a, &sp)) return 2;
  if (batch) {
    if (cli_has(opts, &a, "reference") || cli_get(opts, &a, "snapshot-at"))
      return cli_error("generate: --batch runs the session path (no --reference, --snapshot-at)"), 2;
    fg_model *bm = cli_load_model(cli_get(opts, &a, "model"));
    if (!bm) return 1;
    int brc = cli_generate_batch(bm, &sp, batch, n_gen, cli_get(opts, &a, "logits-out"));
    fg_model_free(bm);
    return brc;
  }
  int32_t *ids;
  size_t n;
  if (!cli_ids("--ids", ids_s, &ids, &n)) return 2;
  uint32_t snap_at = 0;
  const char *sa = cli_get(opts, &a, "snapshot-at");
  if (sa && !cli_u32("--snapshot-at", sa, 1, (uint32_t)n, &snap_at)) return free(ids), 2;
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return free(ids), 1;
  int32_t *out = malloc(((size_t)n_gen + 1) * sizeof *out);
  int rc = 0;
  if (!out) {
    rc = cli_error("out of memory");
  } else if (cli_has(opts, &a, "reference")) {
    fg_error err = {0};
    fg_status st = fg_reference_generate(m, ids, n, n_gen, out, &err);
    if (st != FG_OK) rc = cli_status_error(st, "generate --reference", err.msg);
  } else {
    fg_session *s = NULL, *fork = NULL;
    fg_snapshot *snap = NULL;
    fg_status st = fg_session_create(m, &sp, &s, NULL);
    if (st != FG_OK) rc = cli_status_error(st, "cannot create a session", "");
    int32_t next = -1;
    if (!rc && snap_at) {
      st = fg_session_prefill(s, ids, snap_at, &next);
      if (st == FG_OK) st = fg_session_snapshot(s, &snap);
      if (st == FG_OK) st = fg_session_fork(snap, &sp, &fork, NULL);
      if (st != FG_OK) {
        rc = cli_status_error(st, "snapshot/fork", fg_session_errmsg(s));
      } else {
        fg_session_free(s); /* continue in the fork; the snapshot outlives the session it came from */
        s = fork;
      }
    }
    if (!rc && snap_at < n) {
      st = fg_session_prefill(s, ids + snap_at, n - snap_at, &next);
      if (st != FG_OK) rc = cli_status_error(st, "prefill", fg_session_errmsg(s));
    }
    for (uint32_t i = 0; !rc && i < n_gen; i++) {
      out[i] = next;
      if (i + 1 < n_gen) {
        st = fg_session_step(s, next, &next);
        if (st != FG_OK) rc = cli_status_error(st, "step", fg_session_errmsg(s));
      }
    }
    fg_snapshot_free(snap);
    fg_session_free(s);
  }
  if (!rc) {
    for (uint32_t i = 0; i < n_gen; i++) printf(i ? " %d" : "%d", out[i]);
    printf("\n");
  }
  free(out);
  free(ids);
  fg_model_free(m);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// logits

int cmd_logits(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file"},
      {"ids", 0, true, "token ids (required)"},
      {"at", 0, true, "positions p: logits after ids[0..p] (default: the last)"},
      {"reference", 0, false, "use the no-cache reference path"},
      {"chunk", 0, true, "prefill chunk size on the session path"},
      {"output", 'o', true, "output file: raw little-endian f32, positions × n_vocab (required)"},
      THREADS_OPT,
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("logits", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "logits", "-m MODEL.gguf --ids \"...\" [--at \"p1 p2\"] [--reference] -o OUT.f32",
              "Writes the raw next-token logits after each listed position, for comparisons with oracles.", opts);
    return 0;
  }
  const char *ids_s = cli_get(opts, &a, "ids"), *out_path = cli_get(opts, &a, "output");
  if (!ids_s || !out_path) return cli_error("logits: --ids and -o are required"), 2;
  fg_session_params sp;
  if (!session_params_from(opts, &a, &sp)) return 2;
  int32_t *ids = NULL, *at32 = NULL;
  size_t n = 0, n_at = 1;
  if (!cli_ids("--ids", ids_s, &ids, &n)) return 2;
  size_t *at = malloc(sizeof *at * (n + 1));
  if (!at) return free(ids), cli_error("out of memory");
  at[0] = n - 1;
  if (cli_get(opts, &a, "at")) {
    if (!cli_ids("--at", cli_get(opts, &a, "at"), &at32, &n_at)) return free(ids), free(at), 2;
    for (size_t i = 0; i < n_at; i++) {
      if (at32[i] < 0 || (size_t)at32[i] >= n || (i && at32[i] <= at32[i - 1])) {
        cli_error("--at: positions must be increasing and within 0..%zu", n - 1);
        free(ids), free(at), free(at32);
        return 2;
      }
      at[i] = (size_t)at32[i];
    }
    free(at32);
  }
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return free(ids), free(at), 1;
  fg_model_info in;
  fg_model_get_info(m, &in);
  float *logits = malloc(n_at * (size_t)in.n_vocab * sizeof(float));
  int rc = 0;
  if (!logits) {
    rc = cli_error("out of memory");
  } else if (cli_has(opts, &a, "reference")) {
    fg_error err = {0};
    fg_status st = fg_reference_logits(m, ids, n, at, n_at, logits, &err);
    if (st != FG_OK) rc = cli_status_error(st, "logits --reference", err.msg);
  } else {
    fg_session *s = NULL;
    fg_status st = fg_session_create(m, &sp, &s, NULL);
    if (st != FG_OK) rc = cli_status_error(st, "cannot create a session", "");
    size_t done = 0;
    for (size_t i = 0; !rc && i < n_at; i++) {
      st = fg_session_prefill(s, ids + done, at[i] + 1 - done, NULL);
      if (st != FG_OK) {
        rc = cli_status_error(st, "prefill", fg_session_errmsg(s));
        break;
      }
      done = at[i] + 1;
      memcpy(logits + i * in.n_vocab, fg_session_logits(s), in.n_vocab * sizeof(float));
    }
    fg_session_free(s);
  }
  if (!rc) {
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(logits, sizeof(float), n_at * in.n_vocab, f) != n_at * in.n_vocab) rc = cli_error("cannot write %s", out_path);
    if (f && fclose(f) != 0 && !rc) rc = cli_error("cannot write %s", out_path);
  }
  free(logits);
  free(ids);
  free(at);
  fg_model_free(m);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// tokenize / detokenize

/* Tokenizes text into a malloc'd array (*ids; *n ids). */
static fg_status tokenize_alloc(const fg_model *m, const char *text, size_t len, uint32_t flags, int32_t **ids,
                                size_t *n) {
  size_t need = 0;
  fg_status st = fg_tokenize(m, text, len, flags, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) return st;
  *ids = malloc((need ? need : 1) * sizeof **ids);
  if (!*ids) return FG_ERR_NOMEM;
  st = fg_tokenize(m, text, len, flags, *ids, need, n);
  if (st != FG_OK) free(*ids), *ids = NULL;
  return st;
}

/* --jsonl: one JSON string per input line -> one JSON array of ids per output line. Blank lines are
 * skipped; any other line that is not a JSON string stops the run with its line number. */
static int tokenize_jsonl(const fg_model *m, const char *path, uint32_t flags) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return cli_error("tokenize: cannot open %s", path);
  char *line = NULL, *text = NULL;
  size_t line_cap = 0, text_cap = 0;
  unsigned long long lineno = 0;
  int rc = 0;
  for (ssize_t got; !rc && (got = getline(&line, &line_cap, f)) >= 0;) {
    lineno++;
    size_t n = (size_t)got;
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
    size_t b = 0;
    while (b < n && (line[b] == ' ' || line[b] == '\t')) b++;
    if (b == n) continue;
    if (text_cap < n + 1) {
      char *t = realloc(text, n + 1);
      if (!t) {
        rc = cli_error("out of memory");
        break;
      }
      text = t;
      text_cap = n + 1;
    }
    size_t len = 0;
    const char *why = cli_json_string(line + b, n - b, text, &len);
    if (why) {
      rc = cli_error("tokenize: %s:%llu: %s (each line must be one JSON string)", path, lineno, why);
      break;
    }
    int32_t *ids = NULL;
    size_t k = 0;
    fg_status st = tokenize_alloc(m, text, len, flags, &ids, &k);
    if (st != FG_OK) {
      rc = cli_status_error(st, "tokenize", st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata" : "");
      break;
    }
    putchar('[');
    for (size_t i = 0; i < k; i++) printf(i ? ",%d" : "%d", ids[i]);
    fputs("]\n", stdout);
    free(ids);
  }
  if (!rc && ferror(f)) rc = cli_error("tokenize: cannot read %s", path);
  if (!rc && (fflush(stdout) != 0 || ferror(stdout))) rc = cli_error("tokenize: cannot write the output");
  if (f != stdin) fclose(f);
  free(line);
  free(text);
  return rc;
}

int cmd_tokenize(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file with tokenizer metadata"},
      {"bos", 0, false, "prepend <bos>"},
      {"no-special", 0, false, "treat control-token text like <start_of_turn> as plain text"},
      {"jsonl", 0, false, "batch mode: TEXT names a file ('-' = stdin) of JSON strings, one a line"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("tokenize", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "tokenize", "-m MODEL.gguf [--bos] TEXT | -m MODEL.gguf [--bos] --jsonl FILE",
              "Prints the token ids of TEXT (or of standard input when TEXT is '-'), space separated, one line.\n"
              "With --jsonl, FILE ('-' = standard input) holds one JSON string per line (e.g. \"Ton aus\\n\");\n"
              "each is tokenized on its own and printed as a JSON array of ids on its own line, in order, so\n"
              "many texts need one process and one model load. Blank lines are skipped.",
              opts);
    return 0;
  }
  if (a.n_pos != 1)
    return cli_error(cli_has(opts, &a, "jsonl") ? "tokenize: --jsonl needs exactly one FILE argument ('-' = stdin)"
                                                : "tokenize: give exactly one TEXT argument (quote it)"),
           2;
  uint32_t flags = (cli_has(opts, &a, "bos") ? FG_TOKENIZE_ADD_BOS : 0) |
                   (cli_has(opts, &a, "no-special") ? FG_TOKENIZE_NO_SPECIAL : 0);
  if (cli_has(opts, &a, "jsonl")) {
    fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
    if (!m) return 1;
    int rc = tokenize_jsonl(m, a.pos[0], flags);
    fg_model_free(m);
    return rc;
  }
  const char *text = a.pos[0];
  char *stdin_buf = NULL;
  size_t len = strlen(text);
  if (strcmp(text, "-") == 0) {
    if (!(stdin_buf = cli_read_file("-", &len))) return 1;
    text = stdin_buf;
  }
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return free(stdin_buf), 1;
  int rc = 0;
  int32_t *ids = NULL;
  size_t need = 0;
  fg_status st = tokenize_alloc(m, text, len, flags, &ids, &need);
  if (st != FG_OK) {
    rc = cli_status_error(st, "tokenize", st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata" : "");
  } else {
    for (size_t i = 0; i < need; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
  }
  free(ids);
  free(stdin_buf);
  fg_model_free(m);
  return rc;
}

int cmd_detokenize(int argc, char **argv) {
  static const cli_opt opts[] = {{"model", 'm', true, "GGUF file with tokenizer metadata"}, HELP_OPT, {0}};
  cli_args a;
  if (cli_parse("detokenize", opts, argc - 1, argv + 1, &a)) return 2;
  if (want_help(opts, &a)) {
    cli_usage(stdout, "detokenize", "-m MODEL.gguf IDS...", "Prints the text of the token ids (control tokens by name).",
              opts);
    return 0;
  }
  if (a.n_pos == 0) return cli_error("detokenize: no ids given"), 2;
  size_t total = 0;
  for (int i = 0; i < a.n_pos; i++) total += strlen(a.pos[i]) + 1;
  char *joined = malloc(total + 1);
  if (!joined) return cli_error("out of memory");
  joined[0] = '\0';
  for (int i = 0; i < a.n_pos; i++) {
    strcat(joined, a.pos[i]);
    strcat(joined, " ");
  }
  int32_t *ids;
  size_t n;
  if (!cli_ids("IDS", joined, &ids, &n)) return free(joined), 2;
  free(joined);
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return free(ids), 1;
  size_t need = 0;
  int rc = 0;
  char *buf = NULL;
  fg_status st = fg_detokenize(m, ids, n, NULL, 0, &need);
  if (st == FG_ERR_BUFFER_TOO_SMALL || st == FG_OK) {
    buf = malloc(need + 1);
    st = buf ? fg_detokenize(m, ids, n, buf, need, &need) : FG_ERR_NOMEM;
  }
  if (st != FG_OK) {
    rc = cli_status_error(st, "detokenize", st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata" : "");
  } else {
    fwrite(buf, 1, need, stdout);
    printf("\n");
  }
  free(buf);
  free(ids);
  fg_model_free(m);
  return rc;
}
