/* cmd_serve.c — `fgemma serve`: the OpenAI-compatible HTTP server (tools/serve/, docs/SERVER.md). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FG_SERVE
#include "serve.h"
#endif

#ifdef FG_SERVE
/* --lora NAME=FILE[:SCALE]: a view of m per name; --lora-catalog NAME=CATALOG.json: the bindings. 0, or 1
 * after printing the error (what was made so far stays in *views for the caller to free). */
static int serve_adapters(const fg_model *m, serve_config *cfg, serve_adapter *ads, fg_model **views,
                          serve_binding *binds) {
  const cli_named_lora *named = NULL, *cats = NULL;
  const size_t n = cli_named_loras(&named), n_cats = cli_lora_catalogs(&cats);
  for (size_t i = 0; i < n; i++) {
    fg_error err = {0};
    const fg_status st = fg_model_with_loras(m, &named[i].lora, 1, &views[i], &err);
    if (st != FG_OK) return cli_status_error(st, "--lora", err.msg);
    ads[i] = (serve_adapter){named[i].name, views[i]};
    cfg->n_adapters = i + 1;
  }
  cfg->adapters = ads;
  for (size_t i = 0; i < n_cats; i++) {
    size_t k = 0;
    while (k < n && strcmp(named[k].name, cats[i].name) != 0) k++;
    if (k == n) return cli_error("--lora-catalog %s=...: no adapter is named '%s' (--lora %s=FILE)", cats[i].name, cats[i].name, cats[i].name);
    size_t len = 0;
    char *json = cli_read_file(cats[i].lora.path, &len);
    if (!json) return 1;
    const uint64_t h = serve_catalog_prefix_hash(json, len);
    free(json);
    if (!h) return cli_error("--lora-catalog %s=%s: not a catalog fgemma can parse (fgemma call checks it)", cats[i].name, cats[i].lora.path);
    for (size_t j = 0; j < i; j++)
      if (binds[j].prefix_hash == h && binds[j].adapter != k)
        return cli_error("--lora-catalog: %s is bound to two adapters", cats[i].lora.path);
    binds[i] = (serve_binding){k, h};
  }
  cfg->bindings = binds;
  cfg->n_bindings = n_cats;
  return 0;
}
#endif

int cmd_serve(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file"},
      {"host", 0, true, "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)"},
      {"port", 0, true, "TCP port (default 8080; 0 = any free port, printed at start)"},
      {"threads", 't', true, "threads per worker (default: available cores / --parallel)"},
      {"parallel", 0, true, "requests decoded at once, each on its own session (default 1)"},
      {"queue", 0, true, "requests waiting for a worker before 429 (default 64)"},
      {"api-key", 0, true, "require 'Authorization: Bearer KEY' on /v1/* (or FGEMMA_API_KEY)"},
      {"max-catalogs", 0, true, "catalog prefix states kept, least recently used evicted (default 16)"},
      {"max-body", 0, true, "request body bytes before 413 (default 1048576)"},
      {"max-tokens", 0, true, "largest max_tokens a request may ask for (default 256)"},
      {"timeout", 0, true, "seconds per request (or 250ms), queue + prefill + decode, before 503 (default 30)"},
      {"header-timeout", 0, true, "seconds a connection may take to send a request head (default 10)"},
      {"conn-timeout", 0, true, "seconds of inactivity before a connection is closed (default 30)"},
      {"max-connections", 0, true, "open connections at most (default 4096)"},
      {"speculate", 0, true, "on | off: speculative verification (default on; same answers)"},
      {"n-ctx", 0, true, "context positions per session (default: the model's)"},
      {"snapshot-dir", 0, true, "directory of catalog snapshots shared by replicas: loaded when present, else prefilled and written"},
      {"help", 'h', false, "show this help"},
      {0}};
  cli_args a;
  if (cli_parse("serve", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "serve", "-m MODEL.gguf [--host 127.0.0.1] [--port 8080] [--parallel N] [--api-key KEY]",
              "Serves the model over HTTP, OpenAI-compatible: POST /v1/chat/completions (tools, tool_choice,\n"
              "stream), POST /v1/nlu (the JSON line of `fgemma call`), GET /v1/models, /health, /metrics\n"
              "(Prometheus). Each distinct tool list is prefilled once and kept (--max-catalogs, LRU); every\n"
              "request runs on a fork of it. SIGTERM finishes the requests in flight and stops; new ones get\n"
              "503 meanwhile. Decoding is constrained call-or-text by default: /v1/nlu takes \"constrained\":\n"
              "\"call-or-text\" (default) | \"call-only\" | \"off\" and \"multi_call\" (default false); chat\n"
              "completions map tool_choice auto (default) / required / none to them. docs/SERVER.md describes the\n"
              "API and its differences from OpenAI's; docs/OPTIONS.md the options of every surface.", opts);
    return 0;
  }
  if (a.n_pos) return cli_error("serve: unexpected argument '%s'", a.pos[0]), 2;
#ifndef FG_SERVE
  return cli_error("serve: this fgemma was built without the server (FG_BUILD_SERVER=OFF, e.g. a cross build, or "
                   "libmicrohttpd missing: install libmicrohttpd-dev, scripts/setup.sh does)");
#else
  serve_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.host = "127.0.0.1";
  cfg.port = 8080;
  cfg.parallel = 1;
  cfg.queue = 64;
  cfg.max_catalogs = 16;
  cfg.max_body = 1u << 20;
  cfg.max_tokens = 256;
  cfg.timeout_ms = 30000;
  cfg.header_timeout_s = 10;
  cfg.conn_timeout_s = 30;
  cfg.max_connections = 4096;
  fg_nlu_params_init(&cfg.nlu);
  cli_session_params_init(&cfg.nlu.session);
  const char *v;
  uint32_t u = 0;
  if ((v = cli_get(opts, &a, "host"))) cfg.host = v;
  if ((v = cli_get(opts, &a, "port"))) {
    if (!cli_u32("--port", v, 0, 65535, &u)) return 2;
    cfg.port = (uint16_t)u;
  }
  if ((v = cli_get(opts, &a, "parallel")) && !cli_u32("--parallel", v, 1, 256, &cfg.parallel)) return 2;
  if ((v = cli_get(opts, &a, "queue")) && !cli_u32("--queue", v, 1, 1u << 20, &cfg.queue)) return 2;
  if ((v = cli_get(opts, &a, "max-catalogs")) && !cli_u32("--max-catalogs", v, 1, 1u << 16, &cfg.max_catalogs)) return 2;
  if ((v = cli_get(opts, &a, "max-body")) && !cli_u32("--max-body", v, 64, 1u << 30, &cfg.max_body)) return 2;
  if ((v = cli_get(opts, &a, "max-tokens")) && !cli_u32("--max-tokens", v, 1, 1u << 16, &cfg.max_tokens)) return 2;
  uint64_t timeout_ms;
  if ((v = cli_get(opts, &a, "timeout"))) {
    if (!cli_duration_ms("--timeout", v, 1, 86400000, &timeout_ms)) return 2;
    cfg.timeout_ms = (uint32_t)timeout_ms;
  }
  if ((v = cli_get(opts, &a, "header-timeout")) && !cli_u32("--header-timeout", v, 1, 86400, &cfg.header_timeout_s)) return 2;
  if ((v = cli_get(opts, &a, "conn-timeout")) && !cli_u32("--conn-timeout", v, 1, 86400, &cfg.conn_timeout_s)) return 2;
  if ((v = cli_get(opts, &a, "max-connections")) && !cli_u32("--max-connections", v, 1, 1u << 20, &cfg.max_connections)) return 2;
  if ((v = cli_get(opts, &a, "speculate")) && !cli_speculate(v, &cfg.nlu.speculate)) return 2;
  if ((v = cli_get(opts, &a, "n-ctx")) && !cli_u32("--n-ctx", v, 1, UINT32_MAX, &cfg.nlu.session.n_ctx)) return 2;
  if ((v = cli_get(opts, &a, "threads"))) {
    if (!cli_u32("--threads", v, 1, 256, &cfg.nlu.session.n_threads)) return 2;
  } else {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.nlu.session.n_threads = cores > (long)cfg.parallel ? (uint32_t)(cores / (long)cfg.parallel) : 1;
  }
  if ((v = cli_get(opts, &a, "snapshot-dir"))) {
    if (!cli_snapshot_dir("--snapshot-dir", v)) return 2;
    cfg.nlu.snapshot_dir = v;
  }
  cfg.api_key = cli_get(opts, &a, "api-key");
  if (!cfg.api_key && getenv("FGEMMA_API_KEY") && *getenv("FGEMMA_API_KEY")) cfg.api_key = getenv("FGEMMA_API_KEY");
  if (cfg.api_key && !*cfg.api_key) return cli_error("--api-key: the key is empty"), 2;

  const char *path = cli_get(opts, &a, "model");
  if (!path) path = getenv("FGEMMA_MODEL");
  const cli_named_lora *named_list = NULL;
  (void)cli_named_loras(&named_list); /* serve takes NAME=FILE adapters */
  fg_model *m = cli_load_model(path);
  if (!m) return 1;
  serve_adapter ads[64];
  serve_binding binds[64];
  fg_model *views[64] = {0};
  if (serve_adapters(m, &cfg, ads, views, binds) != 0) {
    for (size_t i = 0; i < 64; i++) fg_model_free(views[i]);
    fg_model_free(m);
    return 1;
  }
  /* the model's name: the file name without directories and ".gguf" */
  char id[128];
  const char *base = strrchr(path, '/');
  snprintf(id, sizeof id, "%s", base ? base + 1 : path);
  size_t n = strlen(id);
  if (n > 5 && strcmp(id + n - 5, ".gguf") == 0) id[n - 5] = 0;
  cfg.model_id = id;
  int rc = fg_serve_run(&cfg, m);
  for (size_t i = 0; i < 64; i++) fg_model_free(views[i]);
  fg_model_free(m);
  return rc;
#endif
}
