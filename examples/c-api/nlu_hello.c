/* nlu_hello.c — the smallest fgemma application: load a model, parse a tool catalog, answer one
 * utterance with a function call.
 *
 *   nlu_hello MODEL.gguf CATALOG.json "Schalte auf ZDF um"
 *
 * prints the call as JSON ({"calls":[{"name":...,"args":{...}}],"text":"..."}). */
#include <fgemma.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 4096 > cap) {
      char *nb = realloc(buf, cap = cap * 2 + 4096);
      if (!nb) break;
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  *len = n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.gguf CATALOG.json UTTERANCE\n", argv[0]);
    return 2;
  }
  if (fg_version_number() != FG_VERSION_NUMBER) {
    fprintf(stderr, "header %d and library %u differ\n", FG_VERSION_NUMBER, (unsigned)fg_version_number());
    return 1;
  }
  fg_error err = {0};
  fg_model *model = NULL;
  if (fg_model_load(argv[1], NULL, &model, &err) != FG_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  size_t len = 0;
  char *json = read_file(argv[2], &len);
  fg_catalog *catalog = NULL;
  if (!json || fg_catalog_parse(json, len, &catalog, &err) != FG_OK) {
    fprintf(stderr, "%s: %s\n", argv[2], json ? err.msg : "cannot read");
    free(json);
    fg_model_free(model);
    return 1;
  }
  free(json);
  fg_nlu_params params;
  fg_nlu_params_init(&params);
  params.constrained = FG_NLU_CONSTRAIN_CALL_ONLY;
  fg_nlu *nlu = NULL;
  fg_status st = fg_nlu_create(model, catalog, &params, &nlu, &err);
  /* the engine holds the model and the catalog: the caller's references can go now */
  fg_model_free(model);
  fg_catalog_free(catalog);
  if (st != FG_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  fg_nlu_result r;
  st = fg_nlu_ask(nlu, argv[3], strlen(argv[3]), &r);
  if (st == FG_OK)
    printf("%s\n", r.json);
  else
    fprintf(stderr, "%s: %s\n", fg_status_str(st), fg_nlu_errmsg(nlu));
  fg_nlu_free(nlu);
  return st == FG_OK ? 0 : 1;
}
