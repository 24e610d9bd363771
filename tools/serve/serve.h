/* serve.h — `fgemma serve`: an OpenAI-compatible HTTP server over the NLU engine (docs/SERVER.md).
 * HTTP through libmicrohttpd, JSON through cJSON, inference through fgemma.h only. */
#ifndef FG_SERVE_H
#define FG_SERVE_H

#include "fgemma.h"

#include <stdint.h>

/* A named adapter (--lora NAME=FILE[:SCALE]): a view of the served model (fg_model_with_loras) that
 * requests choose by their OpenAI "model" field. */
typedef struct serve_adapter {
  const char *name;
  const fg_model *model;
} serve_adapter;

/* --lora-catalog NAME=CATALOG.json: a request without a model name (or with the base's) whose tool list
 * renders this prompt prefix runs on adapter `adapter`. */
typedef struct serve_binding {
  size_t adapter;        /* index into serve_config.adapters */
  uint64_t prefix_hash;  /* FNV-1a of the catalog's rendered prefix (fg_catalog_render_prefix) */
} serve_binding;

typedef struct serve_config {
  const char *model_id;       /* name shown by /v1/models and in answers */
  const char *host;           /* address to bind: IPv4 or IPv6 literal */
  uint16_t port;              /* 0 = any free port (printed at start) */
  uint32_t parallel;          /* worker sessions (requests decoded at once) */
  uint32_t queue;             /* requests waiting for a worker; more get 429 */
  uint32_t max_catalogs;      /* catalog prefix states kept (LRU) */
  uint32_t max_body;          /* request body bytes; more get 413 */
  uint32_t max_tokens;        /* largest max_tokens a request may ask for */
  uint32_t timeout_ms;        /* per request, from arrival to answer (queue + prefill + decode) */
  uint32_t header_timeout_s;  /* a request head must be complete this long after the connection opened
                                 or its previous answer was sent, else the connection is shut */
  uint32_t conn_timeout_s;    /* libmicrohttpd's inactivity timeout */
  uint32_t max_connections;
  const char *api_key;        /* NULL = no authentication */
  fg_nlu_params nlu;          /* engine defaults: threads, KV type, speculation */
  const serve_adapter *adapters; /* (n_adapters) named adapters over the one model; none: any model name
                                    is answered by the model, as before */
  size_t n_adapters;
  const serve_binding *bindings; /* (n_bindings) catalogs bound to adapters */
  size_t n_bindings;
} serve_config;

/* FNV-1a of the prompt prefix a catalog (JSON, either format) renders to; 0 when it cannot be parsed.
 * Two tool lists bind alike when they render alike (--lora-catalog). */
uint64_t serve_catalog_prefix_hash(const char *json, size_t len);

/* Serves until SIGTERM or SIGINT, then drains (requests in flight finish, new ones get 503) and
 * returns 0; 1 when the server cannot start (message on stderr). The model stays the caller's. */
int fg_serve_run(const serve_config *cfg, const fg_model *model);

#endif
