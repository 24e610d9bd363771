/* view.c — model views: one loaded base, several sets of LoRA adapters (fg_model_with_loras,
 * docs/LORA.md "Many adapters, one base").
 *
 * A view is an fg_model whose fields after refs are a copy of its base's (the same pointers: mapping,
 * parsed GGUF, layers, packed copies, head copy, norm copies, head row list, vocabulary), with a run-time
 * adapter set of its own (model/lora.c, read exactly as fg_model_params.loras would be) and, when its
 * adapters rename tokens, a vocabulary of its own. Nothing of the base is written: the base is immutable
 * after load, so the copies stay valid while the view holds its reference on it. */
#include "model/lora.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include <stddef.h>
#include <string.h>

_Static_assert(offsetof(fg_model, refs) == 0, "a view copies every field after refs");

/* The model whose weights a view of m borrows: m itself, or m's base when m is a view. */
static const fg_model *root_of(const fg_model *m) { return m->base ? m->base : m; }

/* The adapters a view of m applies: m's own (as given, run time), then loras. */
static fg_status stack_list(const fg_model *m, const fg_lora *loras, size_t n, fg_lora **out, size_t *n_out,
                            fg_error *err) {
  const size_t n_prev = m->lora ? m->lora->n_given : 0;
  fg_lora *all = fg_malloc_array(n_prev + n, sizeof *all);
  if (!all) return fg_err(err, FG_ERR_NOMEM, "out of memory for the list of adapters");
  if (n_prev) memcpy(all, m->lora->given, n_prev * sizeof *all);
  memcpy(all + n_prev, loras, n * sizeof *all);
  *out = all;
  *n_out = n_prev + n;
  return FG_OK;
}

static fg_status check_args(const fg_model *base, const fg_lora *loras, size_t n, fg_model **out, fg_error *err) {
  if (!base || !out)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_model_with_loras: %s is NULL", base ? "out" : "base");
  if (n == 0 || !loras)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_model_with_loras: %s (a view needs at least one adapter)",
                  n ? "loras is NULL" : "no adapter given");
  if (base->lora && base->info.lora_merge != FG_LORA_RUNTIME)
    return fg_err(err, FG_ERR_UNSUPPORTED, "fg_model_with_loras: the base has its %u adapters merged into its weights "
                  "(lora_merge %u): a view needs the base's own weights; load the base without lora_merge",
                  base->info.n_loras, base->info.lora_merge);
  return FG_OK;
}

/* The view's vocabulary: the base's, or its own when the adapters rename tokens. */
static fg_status view_vocab(fg_model *v, const fg_model *root, fg_error *err) {
  const fg_lora_set *ls = v->lora;
  if (!ls->n_override) {
    v->vocab = root->vocab;
    return FG_OK;
  }
  fg_error verr;
  fg_status st = fg_vocab_load_override(&v->gguf, ls->ov_ids, ls->ov_text, ls->n_override, &v->vocab, &verr);
  if (st != FG_OK) return fg_err(err, st, "%s", verr.msg);
  if (fg_vocab_size(v->vocab) != v->hp.n_vocab)
    return fg_err(err, FG_ERR_FORMAT, "tokenizer has %u tokens but token_embd.weight has %u rows", fg_vocab_size(v->vocab),
                  v->hp.n_vocab);
  /* the metadata was read again for the override: its pages go back, as at the base's load */
  const size_t meta = v->gguf.data_offset <= v->file.size ? (size_t)v->gguf.data_offset : 0;
  if (v->file.mapped) fg_mapfile_drop(&v->file, v->file.data, meta);
  return FG_OK;
}

static void view_free_parts(fg_model *v, const fg_model *root) {
  if (v->vocab != root->vocab) fg_vocab_free(v->vocab);
  fg_lora_free(v->lora);
  fg_free(v);
}

fg_status fg_model_with_loras(const fg_model *base, const fg_lora *loras, size_t n_loras, fg_model **out,
                              fg_error *err) {
  fg_err_clear(err);
  if (out) *out = NULL;
  fg_status st = check_args(base, loras, n_loras, out, err);
  if (st != FG_OK) return st;
  const fg_model *root = root_of(base);
  fg_lora *all = NULL;
  size_t n_all = 0;
  if ((st = stack_list(base, loras, n_loras, &all, &n_all, err)) != FG_OK) return st;
  fg_model *v = fg_calloc(1, sizeof *v);
  if (!v) {
    fg_free(all);
    return fg_err(err, FG_ERR_NOMEM, "out of memory");
  }
  memcpy((char *)v + sizeof v->refs, (const char *)root + sizeof v->refs, sizeof *v - sizeof v->refs);
  v->lora = NULL;
  v->vocab = root->vocab;
  v->info.decode_bytes -= root->lora ? root->lora->data_bytes : 0; /* the root's own adapters, if any */
  v->info.n_loras = 0;
  v->info.lora_bytes = 0;
  v->info.lora_ms = 0;
  fg_model_params p;
  fg_model_params_init(&p);
  p.loras = all;
  p.n_loras = n_all;
  st = fg_lora_load(v, &p, err); /* run time: reads the layers' shapes, writes only v->lora and v->info */
  fg_free(all);
  v->vocab = NULL;
  if (st == FG_OK) st = view_vocab(v, root, err);
  if (st != FG_OK) {
    if (!v->vocab) v->vocab = root->vocab;
    view_free_parts(v, root);
    return st;
  }
  v->info.decode_bytes += v->lora->data_bytes;
  fg_model_fingerprint_finish(v);
  atomic_init(&v->refs, 1);
  v->base = fg_model_retain(root); /* released by fg_model_view_destroy */
  *out = v;
  return FG_OK;
}

void fg_model_view_destroy(fg_model *v) {
  const fg_model *root = v->base;
  view_free_parts(v, root);
  fg_model_release(root);
}
