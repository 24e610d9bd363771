/* qemu_insns_check.c — the guest program bench/arm-insns --check counts: a loop of exactly two
 * instructions (subtract and branch) run N times, N from argv[1]. Counted at two N, the difference
 * must be exactly 2 x the difference of N, or the plugin does not count what it should. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: qemu_insns_check N\n");
    return 2;
  }
  unsigned long n = strtoul(argv[1], NULL, 10);
  if (n == 0) return 2;
#if defined(__aarch64__)
  __asm__ volatile("1: subs %x0, %x0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#elif defined(__arm__)
  __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
#else
#  error "an ARM guest program"
#endif
  printf("%lu\n", n);
  return 0;
}
