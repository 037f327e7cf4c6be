/* kiln/target.h: what code is generated for. A target names the CPU (its
 * ISA features, vector width and registers, caches) and the C compiler and
 * flags that build for it, a cross compiler included. Every schedule
 * decision reads the target; nothing below the driver probes the host.
 *
 * kiln_target_parse accepts tvmc's forms:
 *   "llvm", "cpu", "c"                 this machine's CPU ("llvm -mcpu=native")
 *   "host"                             the same: the probe of this machine
 *   "llvm -mcpu=skylake-avx512"        a named CPU (x86-64, x86-64-v2/v3/v4,
 *                                      haswell, skylake-avx512, znver4, ...;
 *                                      cortex-a72, neoverse-n1, apple-m1, ...)
 *   "llvm -mattr=+avx2,+fma"           features on top of the baseline (x86-64)
 *   "llvm -mcpu=native -mattr=-avx512f"  features off
 *   "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"   another architecture
 *   "dnnl, llvm"                       composite: external backends first
 *                                      (kiln/byoc.h; the build checks that
 *                                      they exist), the CPU target last
 * A bad string gets one clear error naming the bad word. The C compiler is
 * "cc" for this machine's architecture and TRIPLE-gcc for another, with
 * -O3 and the CPU's flags (-march=NAME, or -mcpu=NAME on aarch64);
 * $KILN_CC and $KILN_CFLAGS replace them for this machine's architecture. */
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

/* The canonical string, which parses back to the same target:
 * "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=-fma". */
KILN_API const char *kiln_target_str(const kiln_target *t);
/* "x86_64" or "aarch64". */
KILN_API const char *kiln_target_arch(const kiln_target *t);
/* The CPU's name ("native" for this machine's). */
KILN_API const char *kiln_target_cpu(const kiln_target *t);
KILN_API int kiln_target_vector_bits(const kiln_target *t);
KILN_API int kiln_target_vector_registers(const kiln_target *t);
/* 1 if the target has ISA feature `name` as -mattr spells it ("sse4.2",
 * "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni",
 * "avxvnni", "avx512bf16"; "neon", "fp16", "dotprod", "bf16", "i8mm"). */
KILN_API int kiln_target_has(const kiln_target *t, const char *name);
/* Every feature the target has, comma-separated (malloc'd). */
KILN_API char *kiln_target_features(const kiln_target *t);
/* The external backends of a composite target, in order: count, name i. */
KILN_API int kiln_target_num_external(const kiln_target *t);
KILN_API const char *kiln_target_external(const kiln_target *t, int i);
/* Cache sizes in bytes (level 1 data, 2, 3); 0 when unknown. */
KILN_API int64_t kiln_target_cache_bytes(const kiln_target *t, int level);

/* The C compiler and flags that build for the target: a cross compiler for
 * another architecture. NULL keeps the current value. */
KILN_API kiln_status kiln_target_set_compiler(kiln_target *t, const char *cc, const char *cflags);
KILN_API const char *kiln_target_cc(const kiln_target *t);
KILN_API const char *kiln_target_cflags(const kiln_target *t);
/* Set the vector width schedules use: 128, 256 or 512 bits, at most the
 * architecture's widest (x86-64 512, aarch64 128). x86 below 512 bits has
 * 16 vector registers. The compiler flags stay as they are. */
KILN_API kiln_status kiln_target_set_vector_bits(kiln_target *t, int bits);

#ifdef __cplusplus
}
#endif
#endif
