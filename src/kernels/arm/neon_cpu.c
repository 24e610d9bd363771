/* neon_cpu.c — run-time CPU checks for the ARM kernel tables (Linux and Android). Built without ISA
 * flags, like core/cpu_features.c.
 *
 * aarch64: HWCAP_ASIMDDP in AT_HWCAP, which every arm64 kernel reports; for neon_i8mm also HWCAP2_I8MM
 * in AT_HWCAP2 (kernels before 5.10 do not report it: those devices get neon_dotprod).
 * armv7 (a 32-bit process, usually on an arm64 kernel): the AArch32 bit HWCAP_ASIMDDP (bit 24 of
 * AT_HWCAP) where the kernel reports it; most kernels on 32-bit Android devices do not (docs/ARM.md
 * lists which do), so without the bit the answer comes from a probe: one dot product from the
 * neon_dotprod table's own file (compiled for armv8.2-a+dotprod) run under a temporary SIGILL handler.
 * A CPU without the instruction raises SIGILL, the handler jumps back, the answer is no. The probe runs
 * once per process (pthread_once); a SIGILL that another thread raises meanwhile is passed on to the
 * disposition that was there before, which is restored right after. */
#include "kernels/arm/neon.h"

#include <pthread.h>

#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#  include <sys/auxv.h>
#endif
#if defined(__arm__) && defined(__linux__)
#  include <setjmp.h>
#  include <signal.h>
#  include <string.h>
#  define FG_ARM32_LINUX 1
#else
#  define FG_ARM32_LINUX 0
#endif

#define FG_HWCAP64_ASIMDDP (1UL << 20) /* arch/arm64/include/uapi/asm/hwcap.h */
#define FG_HWCAP32_ASIMDDP (1UL << 24) /* arch/arm/include/uapi/asm/hwcap.h, and arm64's compat hwcaps */
#define FG_HWCAP2_I8MM (1UL << 13)     /* arch/arm64/include/uapi/asm/hwcap.h (Linux 5.10 and later) */

// ----------------------------------------------------------------------------------------------
// the SIGILL-guarded probe (armv7)

#if FG_ARM32_LINUX
static sigjmp_buf g_probe_jmp;
static pthread_t g_probe_thread;
static volatile sig_atomic_t g_probe_active;
static struct sigaction g_probe_prev;

static void fg_probe_sigill(int sig, siginfo_t *si, void *uc) {
  if (g_probe_active && pthread_equal(pthread_self(), g_probe_thread)) siglongjmp(g_probe_jmp, 1);
  /* another thread's SIGILL: what the previous disposition would have done */
  if (g_probe_prev.sa_flags & SA_SIGINFO) {
    if (g_probe_prev.sa_sigaction) g_probe_prev.sa_sigaction(sig, si, uc);
    return;
  }
  if (g_probe_prev.sa_handler == SIG_IGN) return;
  if (g_probe_prev.sa_handler != SIG_DFL) {
    g_probe_prev.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

int fg_arm_probe_sigill(int (*fn)(void)) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* one probe at a time (one jump buffer) */
  pthread_mutex_lock(&lock);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fg_probe_sigill;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigset_t unblock, old_mask;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGILL);
  int ok = 0;
  if (sigaction(SIGILL, &sa, &g_probe_prev) == 0) {
    pthread_sigmask(SIG_UNBLOCK, &unblock, &old_mask);
    g_probe_thread = pthread_self();
    if (sigsetjmp(g_probe_jmp, 1) == 0) {
      g_probe_active = 1;
      ok = fn() == 1;
    }
    g_probe_active = 0;
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGILL, &g_probe_prev, NULL);
  }
  pthread_mutex_unlock(&lock);
  return ok;
}
#else
int fg_arm_probe_sigill(int (*fn)(void)) {
  (void)fn;
  return 0;
}
#endif

// ----------------------------------------------------------------------------------------------
// the answer, once per process

int fg_arm_dotprod_decide(unsigned long hwcap, int is_aarch64, int (*probe)(void)) {
  if (is_aarch64) return (hwcap & FG_HWCAP64_ASIMDDP) ? FG_ARM_DP_HWCAP : FG_ARM_DP_NONE;
  if (hwcap & FG_HWCAP32_ASIMDDP) return FG_ARM_DP_HWCAP;
  if (probe && fg_arm_probe_sigill(probe)) return FG_ARM_DP_PROBE;
  return FG_ARM_DP_NONE;
}

bool fg_arm_i8mm_decide(unsigned long hwcap, unsigned long hwcap2) {
  return (hwcap & FG_HWCAP64_ASIMDDP) && (hwcap2 & FG_HWCAP2_I8MM);
}

static int g_dp;   /* FG_ARM_DP_* */
static bool g_mm;  /* the int8 matrix multiply (aarch64) */
static pthread_once_t g_detect_once = PTHREAD_ONCE_INIT;

static void fg_arm_detect(void) {
#if defined(__linux__) && defined(__aarch64__)
  g_dp = fg_arm_dotprod_decide(getauxval(AT_HWCAP), 1, NULL);
#  if defined(AT_HWCAP2)
  g_mm = fg_arm_i8mm_decide(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
#  endif
#elif FG_ARM32_LINUX
  /* no table, nothing to probe with */
  g_dp = fg_kernels_neon_dotprod() ? fg_arm_dotprod_decide(getauxval(AT_HWCAP), 0, fg_neon_dotprod_probe) : FG_ARM_DP_NONE;
#else
  g_dp = FG_ARM_DP_NONE;
#endif
}

int fg_arm_dotprod_source(void) {
  pthread_once(&g_detect_once, fg_arm_detect);
  return g_dp;
}

bool fg_arm_cpu_has_dotprod(void) { return fg_arm_dotprod_source() != FG_ARM_DP_NONE; }

bool fg_arm_cpu_has_i8mm(void) {
  pthread_once(&g_detect_once, fg_arm_detect);
  return g_mm;
}
