/* cpu_features.h — what the CPU (and the OS, for register state) supports, detected once at run time
 * with cpuid/xgetbv. Only the kernel dispatcher should need this. */
#ifndef FG_CPU_FEATURES_H
#define FG_CPU_FEATURES_H

#include <stdbool.h>

typedef struct fg_cpu_features {
  bool x86;        /* compiled for x86 / x86-64 */
  bool fma;        /* FMA3 (with OS support for YMM state) */
  bool f16c;
  bool avx;        /* AVX with OS-enabled YMM state */
  bool avx2;
  bool avx_vnni;   /* VEX-encoded vpdpbusd */
  bool avx512f;    /* AVX-512 with OS-enabled opmask/ZMM state */
  bool avx512bw;
  bool avx512vl;
  bool avx512dq;
  bool avx512vnni;
  bool avx512bf16;
  bool amx_tile;   /* hardware support only: Linux also needs ARCH_REQ_XCOMP_PERM before use */
  bool amx_int8;
  bool amx_bf16;
} fg_cpu_features;

/* Detected once (thread-safe); never NULL. */
const fg_cpu_features *fg_cpu_features_get(void);

#endif /* FG_CPU_FEATURES_H */
