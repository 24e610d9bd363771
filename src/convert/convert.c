/* convert.c — fg_convert: a Hugging Face Gemma3ForCausalLM checkpoint (or a gemma3 GGUF) to a gemma3
 * GGUF with llama.cpp's conventions, streamed one chunk of rows at a time (see fgemma.h).
 *
 *   checkpoint                              GGUF
 *   config.json                    ->       gemma3.* keys (gemma3.c)
 *   *.safetensors (+ index.json)   ->       tensors: names (fg_g3_layer_tensors), PyTorch's [out, in]
 *                                           rows = GGUF rows, norm weights + 1 in f32, matrices
 *                                           quantized (reference or searched fits: reference_fit)
 *   tokenizer.json                 ->       tokenizer.ggml.* (hf_vocab.c)
 *   tokenizer_config.json          ->       bos/eos/pad/unk ids, add_bos/add_eos, chat template
 *   chat_template.jinja            ->       tokenizer.chat_template (preferred over the config's)
 *
 * A PEFT LoRA adapter directory (adapter_config.json) becomes a GGUF LoRA adapter (convert_peft.c; the
 * names, the config and what is refused: peft.c):
 *   adapter_config.json            ->       adapter.lora.alpha (rsLoRA folded in), general.*
 *   adapter_model.safetensors      ->       blk.N.<matrix>.weight.lora_a / .lora_b, PEFT's bytes
 *   fgemma_vocab_override.json     ->       fgemma.vocab_override.ids / .tokens
 * Its values are checked while they stream (finite; within F16's range when written F16): a bad value
 * fails the conversion and removes the temporary file.
 *
 * Everything is checked before the output file is created: architecture and the config values fgemma
 * can express, every expected tensor present once with the shape the config implies and a float
 * dtype, no unexpected tensor, a tokenizer of exactly vocab_size pieces. Tensor bytes are then read
 * with stdio (never mapped: mapped pages would count towards the process's resident memory). */
#include "convert/convert_internal.h"

// ----------------------------------------------------------------------------------------------------
// Streaming

static fg_status read_at(fg_cv_ctx *c, fg_cv_file *fl, uint64_t off, void *buf, size_t n, const char *what) {
  if (!fl->f) {
    errno = 0;
    if (!(fl->f = fopen(fl->path, "rb")))
      return fg_err(c->err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(fl->path), strerror(errno));
  }
  if (fseeko(fl->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, fl->f) != n)
    return fg_err(c->err, FG_ERR_IO, "%.160s: cannot read %zu bytes of %.60s at byte %llu (file changed or damaged?)",
                  fg_path_short(fl->path), n, what, (unsigned long long)off);
  return FG_OK;
}

/* Whether t's rows get llama.cpp's reference quantizer rather than the searched fit (which hands
 * F32/F16/BF16/Q8_0 to it anyway): with FG_CONVERT_FIT_AUTO, Q4_0 is searched inside llama-quantize's
 * mixes, as every other searched type is, while one type for every matrix and a --head-type head keep
 * the reference bytes (gen-model's files; the head equals fg_model_requant_head's); with
 * FG_CONVERT_FIT_SEARCHED every type that has a search gets it. */
static bool reference_fit(const fg_cv_ctx *c, const fg_cv_tensor *t) {
  if (c->p->fit == FG_CONVERT_FIT_SEARCHED) return false;
  const bool head = c->p->head_type && strcmp(t->name, "output.weight") == 0;
  return t->out_type == FG_TYPE_Q4_0 && (!fg_cv_is_mix(c) || head);
}

static fg_status progress(fg_cv_ctx *c) {
  if (c->p->progress && !c->p->progress(c->done, c->total, c->p->progress_user_data))
    return fg_err(c->err, FG_ERR_ABORTED, "convert: cancelled by the progress callback");
  return FG_OK;
}

/* A row of tensor t (row index r) that must hold finite values, within F16's range when written F16
 * (|v| >= 65520 rounds to infinity). */
static fg_status check_row(fg_cv_ctx *c, const fg_cv_tensor *t, const float *row, size_t n, uint64_t r) {
  for (size_t j = 0; j < n; j++) {
    if (!isfinite(row[j]))
      return fg_err(c->err, FG_ERR_FORMAT, "%.100s: tensor '%s' holds %s at row %llu, column %zu; an adapter must be "
                    "finite", fg_path_short(c->files[t->file].path), t->src_name, isnan(row[j]) ? "NaN" : "an infinity",
                    (unsigned long long)r, j);
    if (t->out_type == FG_TYPE_F16 && fabsf(row[j]) >= 65520.0f)
      return fg_err(c->err, FG_ERR_UNSUPPORTED, "%.100s: tensor '%s' holds %g at row %llu, column %zu, beyond F16's "
                    "range (65504): write it as bf16 or f32", fg_path_short(c->files[t->file].path), t->src_name, (double)row[j],
                    (unsigned long long)r, j);
  }
  return FG_OK;
}

static fg_status stream(fg_cv_ctx *c, FILE *out) {
  uint64_t max_cols = 1, max_rb = 1;
  for (size_t i = 0; i < c->n_t; i++) {
    max_cols = FG_MAX(max_cols, c->t[i].ne[0]);
    max_rb = FG_MAX(max_rb, FG_MAX(c->t[i].src_row_bytes, c->t[i].out_row_bytes));
  }
  size_t cols, chunk;
  if (!fg_u64_to_size(max_cols, &cols) || !fg_u64_to_size(FG_MAX(max_rb, CV_CHUNK_BYTES), &chunk))
    return fg_err(c->err, FG_ERR_UNSUPPORTED, "rows too long for this process");
  uint8_t *in = fg_malloc(chunk), *outb = fg_malloc(chunk);
  float *row = fg_malloc_array(cols, sizeof *row);
  fg_status st = in && outb && row ? progress(c) : fg_err(c->err, FG_ERR_NOMEM, "out of memory for the row buffers");
  for (size_t i = 0; i < c->n_t && st == FG_OK; i++) {
    const fg_cv_tensor *t = &c->t[i];
    const size_t n = (size_t)t->ne[0], srb = (size_t)t->src_row_bytes, orb = (size_t)t->out_row_bytes;
    const uint64_t per = FG_MAX(1, chunk / FG_MAX(srb, orb));
    const bool copy = t->src_type == t->out_type && !t->add_one, ref = reference_fit(c, t);
    for (uint64_t r0 = 0; r0 < t->rows && st == FG_OK; r0 += per) {
      const size_t k = (size_t)FG_MIN(per, t->rows - r0);
      if ((st = read_at(c, &c->files[t->file], t->offset + r0 * srb, in, k * srb, t->src_name)) != FG_OK) break;
      if (!copy || t->check) {
        for (size_t r = 0; r < k && st == FG_OK; r++) {
          fg_dequantize_row(t->src_type, in + r * srb, row, n);
          if (t->check && (st = check_row(c, t, row, n, r0 + r)) != FG_OK) break;
          if (copy) continue;
          if (t->add_one)
            for (size_t j = 0; j < n; j++) row[j] += 1.0f;
          if (ref)
            fg_quantize_row(t->out_type, row, outb + r * orb, n);
          else
            fg_quantize_row_searched(t->out_type, row, outb + r * orb, n);
        }
        if (st != FG_OK) break;
      }
      if ((st = fg_gguf_writer_tensor_part(c->w, out, copy ? in : outb, k * orb, c->err)) != FG_OK) break;
      c->done += k * orb;
      st = progress(c);
    }
  }
  fg_free(in);
  fg_free(outb);
  fg_free(row);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Public

/* a type (or mix) fg_convert writes */
static bool type_ok(uint32_t type) {
  if (type >= FG_CONVERT_MIX_BASE) return type - FG_CONVERT_MIX_BASE < 64 && fg_g3_mix_of(type - FG_CONVERT_MIX_BASE);
  for (size_t i = 0; i < fg_g3_n_mixes; i++)
    if (fg_g3_mixes[i].type == type) return true;
  return false;
}

fg_status fg_convert_type_parse(const char *name, bool pure, uint32_t *type) {
  for (size_t i = 0; name && i < fg_g3_n_mixes; i++)
    if (strcmp(name, fg_g3_mixes[i].name) == 0) {
      if (type) *type = pure ? fg_g3_mixes[i].type : FG_CONVERT_MIX(fg_g3_mixes[i].ftype);
      return FG_OK;
    }
  return FG_ERR_INVALID_ARG;
}

const char *fg_convert_type_names(void) {
  /* fg_g3_mixes in order (test_convert checks that they agree) */
  return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, "
         "q6_k, iq4_nl, iq4_xs";
}

void fg_convert_params_init(fg_convert_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->type = FG_CONVERT_TYPE_AUTO;
  p->head_type = 0;
  p->fit = FG_CONVERT_FIT_AUTO;
}

fg_status fg_convert(const char *in_path, const char *out_path, const fg_convert_params *params, fg_error *err) {
  fg_err_clear(err);
  fg_convert_params defaults;
  if (!params) {
    fg_convert_params_init(&defaults);
    params = &defaults;
  }
  if (!in_path || !*in_path || !out_path || !*out_path)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_convert: in_path and out_path must be given");
  if (params->type != FG_CONVERT_TYPE_AUTO && !type_ok(params->type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "convert: type %u is neither a GGML type fgemma writes nor FG_CONVERT_MIX of "
                  "one of %s", params->type, fg_convert_type_names());
  if (params->fit != FG_CONVERT_FIT_AUTO && params->fit != FG_CONVERT_FIT_SEARCHED)
    return fg_err(err, FG_ERR_INVALID_ARG, "convert: fit %u is neither FG_CONVERT_FIT_AUTO (0) nor FG_CONVERT_FIT_SEARCHED "
                  "(1)", params->fit);
  if (params->head_type && params->head_type != FG_TYPE_Q8_0 && params->head_type != FG_TYPE_Q4_0)
    return fg_err(err, FG_ERR_UNSUPPORTED, "convert: head type %u (%s) is not supported: use q8_0 (8) or q4_0 (2)",
                  params->head_type, fg_type_name(params->head_type));
  struct stat sb;
  if (stat(in_path, &sb) != 0) return fg_err(err, FG_ERR_IO, "%.200s: cannot open: %s", fg_path_short(in_path), strerror(errno));

  fg_cv_ctx c;
  memset(&c, 0, sizeof c);
  c.p = params;
  c.err = err;
  fg_mapfile map;
  fg_gguf g;
  memset(&map, 0, sizeof map);
  memset(&g, 0, sizeof g);
  char *tmp = NULL;
  FILE *out = NULL;
  bool tmp_made = false;
  fg_status st = (c.w = fg_gguf_writer_create()) ? FG_OK : fg_err(err, FG_ERR_NOMEM, "out of memory");
  char *adapter_config = S_ISDIR(sb.st_mode) ? fg_cv_join(in_path, "adapter_config.json") : NULL;
  const bool adapter = adapter_config && fg_cv_file_exists(adapter_config);
  if (st == FG_OK && S_ISDIR(sb.st_mode) && !adapter_config) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK && params->base && !adapter)
    st = fg_err(err, FG_ERR_INVALID_ARG, "%.160s: a base model is given, but the input is not a PEFT adapter directory "
                "(no adapter_config.json)", fg_path_short(in_path));
  if (st == FG_OK) {
    if (adapter) {
      st = fg_cv_plan_peft(&c, in_path, adapter_config);
    } else if (S_ISDIR(sb.st_mode)) {
      st = fg_cv_plan_checkpoint(&c, in_path);
    } else {
      uint8_t magic[4] = {0};
      FILE *f = fopen(in_path, "rb");
      const size_t got = f ? fread(magic, 1, 4, f) : 0;
      if (f) fclose(f);
      if (got == 4 && memcmp(magic, "GGUF", 4) == 0)
        st = fg_cv_plan_gguf(&c, in_path, &map, &g);
      else
        st = fg_err(err, FG_ERR_UNSUPPORTED, "%.160s: neither a checkpoint directory nor a GGUF file (give the directory "
                    "that holds config.json)", fg_path_short(in_path));
    }
  }
  if (st == FG_OK && c.n_requant)
    fg_log(FG_LOG_WARN, "convert: %zu tensor%s re-quantized from quantized values, e.g. %s: the new rounding adds to the "
           "old; convert from the F32/BF16 original where there is one", c.n_requant, c.n_requant == 1 ? " is" : "s are",
           c.requant);
  for (size_t i = 0; i < c.n_t && st == FG_OK; i++) {
    const uint64_t ne[FG_GGUF_MAX_DIMS] = {c.t[i].ne[0], c.t[i].ne[1], c.t[i].ne[2], c.t[i].ne[3]};
    if ((st = fg_gguf_writer_add_tensor(c.w, c.t[i].name, c.t[i].out_type, c.t[i].n_dims, ne)) != FG_OK)
      st = fg_err(err, st, "cannot add tensor %s", c.t[i].name);
  }
  if (st == FG_OK) {
    const size_t n = strlen(out_path) + 32;
    if (!(tmp = fg_malloc(n))) st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    else snprintf(tmp, n, "%s.tmp.%ld", out_path, (long)getpid());
  }
  if (st == FG_OK) {
    errno = 0;
    if (!(out = fopen(tmp, "wb"))) st = fg_err(err, FG_ERR_IO, "%.200s: cannot create: %s", tmp, strerror(errno));
    else tmp_made = true;
  }
  if (st == FG_OK) {
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    st = fg_gguf_writer_begin(c.w, out, err);
  }
  if (st == FG_OK) st = stream(&c, out);
  if (st == FG_OK) st = fg_gguf_writer_end(c.w, out, err);
  if (out) {
    errno = 0;
    const bool bad = ferror(out) != 0;
    const int rc = fclose(out);
    if (st == FG_OK && (bad || rc != 0)) st = fg_err(err, FG_ERR_IO, "%.200s: cannot write: %s", tmp, strerror(errno));
  }
  if (st == FG_OK && rename(tmp, out_path) != 0)
    st = fg_err(err, FG_ERR_IO, "cannot rename %.100s to %.100s: %s", tmp, out_path, strerror(errno));
  if (st != FG_OK && tmp_made) remove(tmp);
  fg_free(tmp);
  fg_free(adapter_config);
  for (size_t i = 0; i < c.n_files; i++) {
    if (c.files[i].f) fclose(c.files[i].f);
    fg_st_clear(&c.files[i].st);
    fg_free(c.files[i].path);
  }
  fg_free(c.files);
  fg_free(c.t);
  fg_gguf_writer_free(c.w);
  fg_gguf_clear(&g);
  fg_mapfile_close(&map);
  return st;
}
