/* qemu_insns.c — a TCG plugin for qemu-user that counts the guest instructions a program executes.
 * Built and used by bench/arm-insns (docs/ARM.md); nothing in the library or its tests links it.
 *
 *   qemu-arm -plugin ./qemu_insns.so,out=COUNT.txt PROGRAM ARGS...
 *   qemu-arm -plugin ./qemu_insns.so,out=COUNT.txt,profile=TBS.txt PROGRAM ARGS...
 *   qemu-arm -plugin ./qemu_insns.so,out=COUNT.txt,threads=PER_THREAD.txt PROGRAM ARGS...
 *
 * Each translated block gets one inline "add n to a 64-bit counter" at its entry, n being the block's
 * instruction count: no helper call per instruction, so the emulation stays fast. At exit the total is
 * written to `out` (a file, one decimal number and a newline), or to stderr without it.
 * A block left early (a fault in its middle) still counts whole; the programs measured do not fault.
 * The counter is one plain global: exact for single-threaded guests (the benchmark runs 1 thread).
 * With `threads`, every block execution also calls back into the plugin, which adds the block's count
 * to its thread's counter (qemu-user runs each guest thread as a vCPU of its own; the counters are
 * atomic): slower, exact per thread, and the exit writes "vcpu instructions" lines (vCPU 0 is the main
 * thread, the others in the order the threads started). The total stays the inline counter's: with
 * several threads it may miss increments that raced (the per-thread sums are the exact figure).
 * With `profile`, every block also counts its own executions, and the exit writes one line per block,
 * "guest-address instructions executions" (hex, decimal, decimal), for bench/arm-insns --profile to
 * attribute to functions. With `profile` and `threads` together, each line goes on with the block's
 * executions per vCPU (the first PROF_VCPUS vCPUs, one column each), then, per vCPU, the instructions
 * executed outside the program's own code (shared libraries: libc) since this block ran: a block of the
 * program is the last one a thread ran there before it called into a library, so its column names the
 * call site (bench/arm-insns --calls --threads N with FG_PROFILE=1 attributes both).
 *
 * Debian 12 packages qemu 7.2 with plugin support but not its qemu-plugin.h; the declarations below
 * follow the documented plugin API, version 1 (QEMU 7.2 accepts versions 0 and 1). Only the entry
 * points used here are declared. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// the plugin API (qemu 7.2, include/qemu/qemu-plugin.h), as far as used

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb; /* opaque */
typedef struct qemu_info_t qemu_info_t; /* only passed through */

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_start_code(void);
struct qemu_plugin_insn; /* opaque */
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_end_code(void);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

#define QI_EXPORT __attribute__((visibility("default")))

QI_EXPORT extern int qemu_plugin_version;
QI_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv);

// ----------------------------------------------------------------------------------------------

QI_EXPORT int qemu_plugin_version = 1;

static uint64_t g_insns;       /* guest instructions executed */
static char g_out[4096];       /* output file; empty: stderr */
static char g_profile[4096];   /* per-block profile file; empty: none */
static char g_threads[4096];   /* per-thread counts file; empty: none */
enum { MAX_VCPUS = 256 };
static uint64_t g_per_vcpu[MAX_VCPUS]; /* instructions per vCPU (guest thread), added atomically */

static void on_exec(unsigned int vcpu, void *n) {
  if (vcpu < MAX_VCPUS) __atomic_fetch_add(&g_per_vcpu[vcpu], (uint64_t)(uintptr_t)n, __ATOMIC_RELAXED);
}

enum { PROF_VCPUS = 8 };
typedef struct tb_rec {
  uint64_t vaddr, n_insns, execs;
  bool own;                          /* in the program's own code (not a shared library) */
  uint64_t execs_v[PROF_VCPUS];      /* executions per vCPU (profile and threads) */
  uint64_t lib_v[PROF_VCPUS];        /* library instructions run after this block, per vCPU */
  struct tb_rec *next;
} tb_rec;
static tb_rec *g_last_own[PROF_VCPUS]; /* per vCPU: the last block of the program's own code it ran */

/* profile and threads: per-vCPU counts of the block, and the library instructions charged to the
 * program's block that called into the library (each vCPU touches only its own columns) */
static void on_exec_prof(unsigned int vcpu, void *ud) {
  tb_rec *r = ud;
  if (vcpu < MAX_VCPUS) __atomic_fetch_add(&g_per_vcpu[vcpu], r->n_insns, __ATOMIC_RELAXED);
  if (vcpu >= PROF_VCPUS) return;
  r->execs_v[vcpu]++;
  if (r->own) {
    g_last_own[vcpu] = r;
  } else if (g_last_own[vcpu]) {
    g_last_own[vcpu]->lib_v[vcpu] += r->n_insns;
  }
}
static tb_rec *g_tbs; /* every translation (translation is serialized for one vCPU) */

/* A PLT stub (the program's jump into a shared library) is no call site: its last instruction is
 * aarch64's `br x17` or armv7's `ldr pc, [ip, #imm]!` (the stubs binutils writes). */
static bool is_plt_stub(const struct qemu_plugin_tb *tb, uint64_t n) {
  if (n == 0 || n > 4) return false;
  const struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, n - 1);
  if (!in || qemu_plugin_insn_size(in) != 4) return false;
  uint32_t w;
  memcpy(&w, qemu_plugin_insn_data(in), 4);
  return w == 0xd61f0220u || (w & 0xfffff000u) == 0xe5bcf000u;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  const uint64_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, n);
  if (g_threads[0] && !g_profile[0])
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
  if (g_profile[0]) {
    tb_rec *r = calloc(1, sizeof *r);
    if (!r) return;
    r->vaddr = qemu_plugin_tb_vaddr(tb);
    r->n_insns = n;
    r->own = r->vaddr >= qemu_plugin_start_code() && r->vaddr < qemu_plugin_end_code() && !is_plt_stub(tb, n);
    r->next = g_tbs;
    g_tbs = r;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &r->execs, 1);
    if (g_threads[0]) qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec_prof, QEMU_PLUGIN_CB_NO_REGS, r);
  }
}

static void write_profile(void) {
  FILE *f = fopen(g_profile, "w");
  if (!f) {
    fprintf(stderr, "qemu_insns: cannot write %s\n", g_profile);
    return;
  }
  for (const tb_rec *r = g_tbs; r; r = r->next)
    if (r->execs) {
      fprintf(f, "%llx %llu %llu", (unsigned long long)r->vaddr, (unsigned long long)r->n_insns,
              (unsigned long long)r->execs);
      if (g_threads[0]) {
        for (unsigned v = 0; v < PROF_VCPUS; v++) fprintf(f, " %llu", (unsigned long long)r->execs_v[v]);
        for (unsigned v = 0; v < PROF_VCPUS; v++) fprintf(f, " %llu", (unsigned long long)r->lib_v[v]);
      }
      fputc('\n', f);
    }
  if (fclose(f) != 0) fprintf(stderr, "qemu_insns: cannot write %s\n", g_profile);
}

static void write_threads(void) {
  FILE *f = fopen(g_threads, "w");
  if (!f) {
    fprintf(stderr, "qemu_insns: cannot write %s\n", g_threads);
    return;
  }
  for (unsigned v = 0; v < MAX_VCPUS; v++) {
    const uint64_t n = __atomic_load_n(&g_per_vcpu[v], __ATOMIC_RELAXED);
    if (n) fprintf(f, "%u %llu\n", v, (unsigned long long)n);
  }
  if (fclose(f) != 0) fprintf(stderr, "qemu_insns: cannot write %s\n", g_threads);
}

static void on_atexit(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  if (g_profile[0]) write_profile();
  if (g_threads[0]) write_threads();
  char line[64];
  snprintf(line, sizeof line, "%llu\n", (unsigned long long)g_insns);
  if (g_out[0]) {
    FILE *f = fopen(g_out, "w");
    if (f) {
      const bool ok = fputs(line, f) >= 0;
      if (fclose(f) == 0 && ok) return;
    }
    fprintf(stderr, "qemu_insns: cannot write %s; the count follows\n", g_out);
  }
  fprintf(stderr, "qemu_insns: %s", line);
}

QI_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof g_out) {
      strcpy(g_out, argv[i] + 4);
    } else if (strncmp(argv[i], "profile=", 8) == 0 && strlen(argv[i] + 8) < sizeof g_profile) {
      strcpy(g_profile, argv[i] + 8);
    } else if (strncmp(argv[i], "threads=", 8) == 0 && strlen(argv[i] + 8) < sizeof g_threads) {
      strcpy(g_threads, argv[i] + 8);
    } else {
      fprintf(stderr, "qemu_insns: unknown or too long argument '%s' (expected out=FILE, profile=FILE, threads=FILE)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
