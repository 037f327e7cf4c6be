/* kiln/target.h: what code is generated for. A target names the CPU (its
 * ISA features, vector width and registers, caches) and the C compiler and
 * flags that build for it, a cross compiler included. Every schedule
 * decision reads the target; nothing below the driver probes the host.
 *
 * kiln_target_parse accepts tvmc's forms:
 *   "llvm", "cpu", "c"                 the host's ISA ("llvm" = "llvm -mcpu=native")
 *   "host"                             the probe of this machine
 *   "llvm -mcpu=skylake-avx512"        a named CPU (-march=NAME)
 *   "llvm -mattr=+avx2,+fma"           features on top of the baseline
 *   "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"   another architecture
 *   "dnnl, llvm"                       composite: external backends first, the
 *                                      host target last
 * A bad string gets one clear error naming the bad word. */
#ifndef KILN_TARGET_H
#define KILN_TARGET_H

#include "kiln/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_target kiln_target;

/* Parse a target string; NULL with kiln_last_error() on a bad string. */
KILN_API kiln_target *kiln_target_parse(const char *text);
/* The probe of this machine (as "host"). */
KILN_API kiln_target *kiln_target_host(void);
KILN_API kiln_target *kiln_target_copy(const kiln_target *t);
KILN_API void kiln_target_free(kiln_target *t);

/* The canonical string ("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 ..."). */
KILN_API const char *kiln_target_str(const kiln_target *t);
/* "x86_64" or "aarch64". */
KILN_API const char *kiln_target_arch(const kiln_target *t);
KILN_API int kiln_target_vector_bits(const kiln_target *t);
KILN_API int kiln_target_vector_registers(const kiln_target *t);
/* 1 if the target has ISA feature `name` ("fma", "avx2", "avx512f",
 * "avx512vnni", "avxvnni", "avx512bf16", "neon", "dotprod"), else 0. */
KILN_API int kiln_target_has(const kiln_target *t, const char *name);
/* Cache sizes in bytes (level 1 data, 2, 3); 0 when unknown. */
KILN_API int64_t kiln_target_cache_bytes(const kiln_target *t, int level);

/* The C compiler and flags that build for the target: a cross compiler for
 * another architecture. NULL keeps the current value. */
KILN_API kiln_status kiln_target_set_compiler(kiln_target *t, const char *cc, const char *cflags);
KILN_API const char *kiln_target_cc(const kiln_target *t);
KILN_API const char *kiln_target_cflags(const kiln_target *t);

#ifdef __cplusplus
}
#endif
#endif
