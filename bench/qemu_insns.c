/* qemu_insns.c — a TCG plugin for qemu-user that counts the guest instructions a program executes.
 * Built and used by bench/arm-insns (docs/ARM.md); nothing in the library or its tests links it.
 *
 *   qemu-arm -plugin ./qemu_insns.so,out=COUNT.txt PROGRAM ARGS...
 *
 * Each translated block gets one inline "add n to a 64-bit counter" at its entry, n being the block's
 * instruction count: no helper call per instruction, so the emulation stays fast. At exit the total is
 * written to `out` (a file, one decimal number and a newline), or to stderr without it.
 * A block left early (a fault in its middle) still counts whole; the programs measured do not fault.
 * The counter is one plain global: exact for single-threaded guests (the benchmark runs 1 thread).
 *
 * Debian 12 packages qemu 7.2 with plugin support but not its qemu-plugin.h; the declarations below
 * follow the documented plugin API, version 1 (QEMU 7.2 accepts versions 0 and 1). Only the entry
 * points used here are declared. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// the plugin API (qemu 7.2, include/qemu/qemu-plugin.h), as far as used

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb; /* opaque */
typedef struct qemu_info_t qemu_info_t; /* only passed through */

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

#define QI_EXPORT __attribute__((visibility("default")))

QI_EXPORT extern int qemu_plugin_version;
QI_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv);

// ----------------------------------------------------------------------------------------------

QI_EXPORT int qemu_plugin_version = 1;

static uint64_t g_insns;       /* guest instructions executed */
static char g_out[4096];       /* output file; empty: qemu's log */

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, qemu_plugin_tb_n_insns(tb));
}

static void on_atexit(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
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
    } else {
      fprintf(stderr, "qemu_insns: unknown or too long argument '%s' (expected out=FILE)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
