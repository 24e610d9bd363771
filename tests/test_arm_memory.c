/* test_arm_memory.c — address space of the 270m Q8_0 model in use: the mapped file plus everything
 * the library allocates (KV blocks, scratch, logits, vocabulary, thread stacks), read from
 * /proc/self/maps after loading, prefilling, snapshotting, forking and decoding. In a 32-bit process
 * (armv7: a 3-4 GB address space, ~1.5 GB of RAM to spare on the target) the total must stay under
 * 1 GiB; 64-bit hosts only report it (glibc reserves 64 MiB of address space per thread arena there).
 * qemu-user shows the guest's own mappings in /proc/self/maps, so the numbers under emulation are the
 * guest's. Numbers: docs/ARM.md. */
#include "fg_internal.h"
#include "testutil.h"

#include <stdlib.h>

#define PREFIX 64 /* positions prefilled (kept small: the suite runs this under qemu) */
#define STEPS 4

typedef struct maps_sum {
  uint64_t total;   /* bytes of all mappings */
  uint64_t model;   /* bytes mapped from the model file */
  uint64_t largest_gap; /* largest unmapped range below 3 GiB (room for the app) */
  int ok;
} maps_sum;

static maps_sum read_maps(const char *model_name) {
  maps_sum s = {0, 0, 0, 0};
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return s;
  char line[1024];
  unsigned long long prev_end = 0x10000; /* the lowest page usually left unmapped */
  const unsigned long long limit = 3ull << 30;
  while (fgets(line, sizeof line, f)) {
    unsigned long long a, b;
    if (sscanf(line, "%llx-%llx", &a, &b) != 2 || b < a) continue;
    s.total += b - a;
    if (strstr(line, model_name)) s.model += b - a;
    const unsigned long long gap_end = a < limit ? a : limit;
    if (gap_end > prev_end && gap_end - prev_end > s.largest_gap) s.largest_gap = gap_end - prev_end;
    if (b > prev_end) prev_end = b;
  }
  if (prev_end < limit && limit - prev_end > s.largest_gap) s.largest_gap = limit - prev_end;
  fclose(f);
  s.ok = s.total > 0;
  return s;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

int main(void) {
  const char *file = "270m-q8_0.gguf";
  if (fg_test_ensure_model(file, "270m", "q8_0", 1) != 0) return 1;
  const maps_sum before = read_maps(file);

  fg_model *m = NULL;
  fg_error err;
  if (fg_model_load(fg_test_model_path(file), NULL, &m, &err) != FG_OK) {
    fprintf(stderr, "load: %s\n", err.msg);
    return 1;
  }
  const maps_sum loaded = read_maps(file);

  fg_session_params p;
  fg_session_params_init(&p);
  p.n_ctx = 2048;
  p.n_threads = 2;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  int32_t ids[PREFIX];
  uint64_t x = 99;
  ids[0] = 2;
  for (int i = 1; i < PREFIX; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = 300 + (int32_t)((x >> 33) % 200000);
  }
  double t0 = fg_time_s();
  int32_t next = 0;
  CHECK_OK(fg_session_prefill(s, ids, PREFIX, &next));
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session *f = NULL;
  CHECK_OK(fg_session_fork(snap, &p, &f, NULL));
  for (int i = 0; i < STEPS; i++) CHECK_OK(fg_session_step(f, next, &next));
  const double dt = fg_time_s() - t0;
  const maps_sum used = read_maps(file);
  fg_session_stats st;
  CHECK_OK(fg_session_get_stats(f, &st));

  CHECK(loaded.ok && used.ok);
  printf("prefill %d + fork + %d steps: %.1f s\n", PREFIX, STEPS, dt);
  printf("address space: %.1f MiB before load, %.1f MiB loaded (model file mapped: %.1f MiB), %.1f MiB in use\n",
         mib(before.total), mib(loaded.total), mib(loaded.model), mib(used.total));
  printf("library growth from load to use: %.1f MiB (KV of the fork: %.2f MiB global, %.2f MiB sliding)\n",
         mib(used.total - loaded.total), mib(st.kv_bytes_global), mib(st.kv_bytes_sliding));
  if (sizeof(void *) == 4) printf("largest unmapped range below 3 GiB: %.1f MiB\n", mib(used.largest_gap));
  /* the model is mapped once, not copied */
  CHECK(loaded.model > 250ull << 20 && loaded.model < 320ull << 20);
  if (sizeof(void *) == 4) {
    CHECK_MSG(used.total < (1ull << 30), "address space %.1f MiB >= 1 GiB", mib(used.total));
    CHECK_MSG(used.largest_gap > (1ull << 30), "no contiguous GiB left for the app: %.1f MiB", mib(used.largest_gap));
  }

  fg_session_free(f);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_model_free(m);
  return fg_test_finish("test_arm_memory");
}
