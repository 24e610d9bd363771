/* hostile_table.c — test_reliability, section 7: one hostile input of each kind (the table). */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 7. Hostile text and catalogs, one input of each kind (the table of docs/RELIABILITY.md)

/* The table: one row per kind of hostile input (printed with FG_REL_TABLE=1), each asserted. */
static void model_row(const char *what, const uint8_t *bytes, size_t n, fg_status want) {
  const char *path = scratch_path("row.gguf");
  write_all(path, bytes, n);
  fg_model *m = NULL;
  fg_error err;
  fg_status st = fg_model_load(path, NULL, &m, &err);
  CHECK_MSG(st == want, "%s: %s (%s)", what, fg_status_str(st), err.msg);
  const char *msg = strstr(err.msg, "row.gguf: ");
  table_row("GGUF file", what, st, st == FG_OK ? "" : msg ? msg + 10 : err.msg);
  fg_model_free(m);
  remove(path);
}

static void catalog_row(const char *what, const char *json, fg_status want, const char *needle) {
  fg_catalog *c = NULL;
  fg_error err;
  fg_err_clear(&err);
  fg_status st = fg_catalog_parse(json, strlen(json), &c, &err);
  CHECK_MSG(st == want && (!needle || strstr(err.msg, needle)), "%s: %s '%s'", what, fg_status_str(st), err.msg);
  table_row("catalog", what, st, err.msg);
  fg_catalog_free(c);
}

static void text_row(const char *what, const char *text, size_t len, uint32_t flags) {
  size_t n = 0;
  fg_status st = fg_tokenize(g_model, text, len, flags, NULL, 0, &n);
  CHECK_MSG(st == FG_ERR_BUFFER_TOO_SMALL || (st == FG_OK && n == 0), "%s: %s", what, fg_status_str(st));
  int32_t *ids = malloc((n + 1) * sizeof *ids);
  CHECK_OK(fg_tokenize(g_model, text, len, flags, ids, n, &n));
  size_t dn = 0;
  CHECK_EQ_INT(fg_detokenize(g_model, ids, n, NULL, 0, &dn), n ? FG_ERR_BUFFER_TOO_SMALL : FG_OK);
  char row[96];
  snprintf(row, sizeof row, "FG_OK, %zu ids (decodes to %zu bytes)", n, dn);
  table_row("tokenizer", what, FG_OK, row);
  free(ids);
}

static void call_row(const fg_catalog *c, const char *what, const char *gen) {
  char out[2048];
  size_t n = 0;
  fg_status st = fg_call_parse(c, gen, strlen(gen), out, sizeof out, &n, NULL);
  CHECK_MSG(st == FG_OK && strncmp(out, "{\"calls\":[", 10) == 0, "%s: %s", what, fg_status_str(st));
  table_row("call text", what, st, out);
}

void test_table(void) {
  printf("7. hostile inputs, one of each kind%s\n", g_table ? " (| area | input | status | message |)" : "");
  /* GGUF */
  size_t size = 0;
  uint8_t *good = (uint8_t *)fg_test_read_file(fg_test_model_path("tiny-f32.gguf"), &size);
  if (!good) return;
  uint8_t *b = malloc(size);
  model_row("empty file", good, 0, FG_ERR_FORMAT);
  model_row("8 bytes", good, 8, FG_ERR_FORMAT);
  model_row("cut in the metadata", good, 300, FG_ERR_FORMAT);
  model_row("cut in the tensor data", good, size / 2, FG_ERR_FORMAT);
  memcpy(b, good, size);
  memcpy(b, "GGML", 4);
  model_row("bad magic", b, size, FG_ERR_FORMAT);
  memcpy(b, good, size);
  put_u32(b + 4, 4);
  model_row("GGUF version 4", b, size, FG_ERR_UNSUPPORTED);
  memcpy(b, good, size);
  put_u32(b + 4, 0x03000000u);
  model_row("big-endian GGUF", b, size, FG_ERR_UNSUPPORTED);
  memcpy(b, good, size);
  for (size_t i = 16; i < 24; i++) b[i] = 0xff; /* n_kv = 2^64-1 */
  model_row("n_kv = 2^64-1", b, size, FG_ERR_FORMAT);
  memcpy(b, good, size);
  for (size_t i = 8; i < 16; i++) b[i] = 0xff; /* n_tensors = 2^64-1 */
  model_row("n_tensors = 2^64-1", b, size, FG_ERR_FORMAT);
  {
    memcpy(b, good, size);
    uint8_t *a = memmem(b, size, "gemma3", 6);
    if (a) memcpy(a, "llama3", 6);
    model_row("general.architecture = llama3", b, size, FG_ERR_UNSUPPORTED);
    memcpy(b, good, size);
    a = memmem(b, size, "blk.3.ffn_up.weight", 19);
    if (a) a[4] = 'X';
    model_row("tensor blk.3.ffn_up missing", b, size, FG_ERR_FORMAT);
    memcpy(b, good, size);
    a = memmem(b, size, "gemma3.embedding_length", 23);
    if (a) a[7] = 'E';
    model_row("gemma3.embedding_length missing", b, size, FG_ERR_FORMAT);
  }
  /* tokenizer: everything is text; nothing is refused */
  text_row("invalid UTF-8 (\\xff\\xfe, lone \\xc3)", "\xff\xfe abc \xc3", 8, 0);
  text_row("NUL bytes inside", "a\0b\0\0c", 6, 0);
  text_row("control-token text", "<start_of_turn><bos><end_of_turn>", 33, 0);
  text_row("control-token text, NO_SPECIAL", "<start_of_turn><bos><end_of_turn>", 33, FG_TOKENIZE_NO_SPECIAL);
  text_row("unknown flag bits", "abc", 3, 0xfffffff0u);
  {
    const size_t big = 1u << 20;
    char *t = malloc(big);
    for (size_t i = 0; i < big; i++) t[i] = (char)(i % 3 ? 'a' + (char)(i % 26) : ' ');
    text_row("1 MiB of text", t, big, 0);
    free(t);
  }
  /* catalogs */
  catalog_row("not JSON", "{\"functions\": [", FG_ERR_FORMAT, "line");
  catalog_row("no functions", "{\"functions\":[]}", FG_ERR_FORMAT, NULL);
  catalog_row("name with a space", "[{\"name\":\"a b\",\"description\":\"x\"}]", FG_ERR_FORMAT, "name");
  catalog_row("duplicate function", "[{\"name\":\"a\"},{\"name\":\"a\"}]", FG_ERR_FORMAT, NULL);
  catalog_row("unknown type", "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"int\"}}}]}",
              FG_ERR_FORMAT, "p");
  catalog_row("enum on an integer",
              "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"integer\",\"enum\":[\"1\"]}}}]}",
              FG_ERR_FORMAT, "enum");
  catalog_row("required names an unknown parameter",
              "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":[\"q\"]}]}",
              FG_ERR_FORMAT, "q");
  catalog_row("control token in a description",
              "{\"functions\":[{\"name\":\"f\",\"description\":\"x<end_of_turn>y\"}]}", FG_ERR_FORMAT, NULL);
  {
    char deep[2048] = "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":";
    for (int i = 0; i < 12; i++) strcat(deep, "{\"type\":\"array\",\"items\":");
    strcat(deep, "{\"type\":\"string\"}");
    for (int i = 0; i < 12; i++) strcat(deep, "}");
    strcat(deep, "}}]}");
    catalog_row("parameters nested 12 deep", deep, FG_ERR_FORMAT, NULL);
  }
  {
    char longname[400] = "[{\"name\":\"";
    for (int i = 0; i < 200; i++) strcat(longname, "n");
    strcat(longname, "\"}]");
    catalog_row("200-byte function name", longname, FG_ERR_FORMAT, NULL);
  }
  /* call text */
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  call_row(c, "no call at all", "just some prose");
  call_row(c, "unterminated call", "<start_function_call>call:set_timer{minutes:");
  call_row(c, "unknown function", "<start_function_call>call:launch_rocket{}<end_function_call>");
  call_row(c, "unknown enum value", "<start_function_call>call:toggle_lamp{state:<escape>dim<escape>}<end_function_call>");
  call_row(c, "unbalanced braces and escapes", "<start_function_call>call:f{a:{b:<escape>}}}<escape>,,}<end_function_call>");
  fg_catalog_free(c);
  free(b);
  free(good);
}
