/* render.c — FunctionGemma prompt text from a catalog, and the per-utterance suffix.
 *
 * Byte-exact with functiongemma_official_format_cases.json and the 85-id llama.cpp reference:
 *   declaration:NAME{description:<escape>D<escape>,parameters:{properties:{...},required:[...],
 *   type:<escape>OBJECT<escape>}}
 * Inside a property the fields come in dictsort order of the chat template: description, enum,
 * items, nullable, properties, required, type (each only when present; type always). A function
 * without parameters renders ",parameters:{type:<escape>OBJECT<escape>}". Array items and nested
 * objects follow the Gemma template family (items:{...,type:<escape>T<escape>}); FunctionGemma's own
 * template could not be checked for those, the catalogs of this project do not use them. An utterance
 * holding a control-token spelling is refused (fg_nlu_find_control_token, control_tokens.c). */
#include "nlu/catalog.h"
#include "nlu/nlu_text.h"

#include <string.h>

#define ESC "<escape>"

// ----------------------------------------------------------------------------
// Declarations

static void put_escaped(fg_sink *s, const char *text) {
  fg_sink_puts(s, ESC);
  fg_sink_puts(s, text);
  fg_sink_puts(s, ESC);
}

static void render_param_body(fg_sink *s, const fg_param *p);

/* NAME:{...},NAME:{...} */
static void render_props(fg_sink *s, const fg_param *obj) {
  for (uint32_t i = 0; i < obj->n_props; i++) {
    if (i) fg_sink_putc(s, ',');
    fg_sink_puts(s, obj->props[i].name);
    fg_sink_putc(s, ':');
    render_param_body(s, &obj->props[i]);
  }
}

/* required:[<escape>a<escape>,...] in the catalog's order */
static void render_required(fg_sink *s, const fg_param *obj) {
  fg_sink_puts(s, "required:[");
  for (uint32_t i = 0; i < obj->n_required; i++) {
    if (i) fg_sink_putc(s, ',');
    put_escaped(s, obj->props[obj->required_order[i]].name);
  }
  fg_sink_putc(s, ']');
}

/* {description:..,enum:[..],items:{..},nullable:true,properties:{..},required:[..],type:<escape>T<escape>} */
static void render_param_body(fg_sink *s, const fg_param *p) {
  fg_sink_putc(s, '{');
  if (p->description) {
    fg_sink_puts(s, "description:");
    put_escaped(s, p->description);
    fg_sink_putc(s, ',');
  }
  if (p->n_enum) {
    fg_sink_puts(s, "enum:[");
    for (uint32_t i = 0; i < p->n_enum; i++) {
      if (i) fg_sink_putc(s, ',');
      put_escaped(s, p->enum_values[i]);
    }
    fg_sink_puts(s, "],");
  }
  if (p->type == FG_PARAM_ARRAY && p->items) {
    fg_sink_puts(s, "items:");
    render_param_body(s, p->items);
    fg_sink_putc(s, ',');
  }
  if (p->nullable) fg_sink_puts(s, "nullable:true,");
  if (p->type == FG_PARAM_OBJECT) {
    if (p->n_props) {
      fg_sink_puts(s, "properties:{");
      render_props(s, p);
      fg_sink_puts(s, "},");
    }
    if (p->n_required) {
      render_required(s, p);
      fg_sink_putc(s, ',');
    }
  }
  fg_sink_puts(s, "type:");
  put_escaped(s, fg_param_type_upper(p->type));
  fg_sink_putc(s, '}');
}

static void render_function(fg_sink *s, const fg_function *f) {
  fg_sink_puts(s, "declaration:");
  fg_sink_puts(s, f->name);
  fg_sink_puts(s, "{description:");
  put_escaped(s, f->description);
  fg_sink_puts(s, ",parameters:");
  render_param_body(s, &f->params); /* root: OBJECT, never a description */
  fg_sink_putc(s, '}');
}

fg_status fg_catalog_render_function(const fg_catalog *c, size_t i, char *buf, size_t cap, size_t *n_out) {
  const fg_function *f = fg_catalog_function(c, i);
  if (!f || !n_out) return FG_ERR_INVALID_ARG;
  fg_sink s;
  fg_sink_init(&s, buf, cap);
  render_function(&s, f);
  return fg_sink_finish(&s, n_out);
}

fg_status fg_catalog_render_prefix(const fg_catalog *c, char *buf, size_t cap, size_t *n_out) {
  if (!c || !n_out) return FG_ERR_INVALID_ARG;
  fg_sink s;
  fg_sink_init(&s, buf, cap);
  fg_sink_puts(&s, "<start_of_turn>developer\n" FG_NLU_PREAMBLE);
  for (size_t i = 0; i < fg_catalog_n_functions(c); i++) {
    fg_sink_puts(&s, "<start_function_declaration>");
    render_function(&s, fg_catalog_function(c, i));
    fg_sink_puts(&s, "<end_function_declaration>");
  }
  fg_sink_puts(&s, "<end_of_turn>\n<start_of_turn>user\n");
  return fg_sink_finish(&s, n_out);
}

// ----------------------------------------------------------------------------
// Utterances

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

fg_status fg_render_utterance(const char *text, size_t len, char *buf, size_t cap, size_t *n_out) {
  if (!n_out || (!text && len)) return FG_ERR_INVALID_ARG;
  while (len && is_ws(text[0])) {
    text++;
    len--;
  }
  while (len && is_ws(text[len - 1])) len--;
  if (len == 0) return FG_ERR_INVALID_ARG;
  if (fg_nlu_find_control_token(text, len, NULL) >= 0) return FG_ERR_INVALID_ARG;
  fg_sink s;
  fg_sink_init(&s, buf, cap);
  fg_sink_put(&s, text, len);
  fg_sink_puts(&s, "<end_of_turn>\n<start_of_turn>model\n");
  return fg_sink_finish(&s, n_out);
}
