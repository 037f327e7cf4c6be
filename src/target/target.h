/* target.h: the target object inside kiln (the layer above base, below
 * tir). Schedules, lowering, codegen and the driver read these fields;
 * nothing else probes the host. */
#ifndef KILN_TARGET_INTERNAL_H
#define KILN_TARGET_INTERNAL_H

#include "../base/base_internal.h"
#include "kiln/target.h"

/* ISA features (bit flags of kiln_target.features). */
enum {
    TGT_SSE42 = 1u << 0,
    TGT_AVX = 1u << 1,
    TGT_AVX2 = 1u << 2,
    TGT_FMA = 1u << 3,
    TGT_AVX512F = 1u << 4,
    TGT_AVX512VNNI = 1u << 5,
    TGT_AVXVNNI = 1u << 6,
    TGT_AVX512BF16 = 1u << 7,
    TGT_NEON = 1u << 8,
    TGT_DOTPROD = 1u << 9,
    TGT_F16C = 1u << 10,
};

typedef enum { TGT_X86_64 = 0, TGT_AARCH64 = 1 } tgt_arch;

#define TGT_MAX_EXTERNAL 4

struct kiln_target {
    char *text;          /* the canonical string */
    char kind[8];        /* "llvm" or "c" */
    tgt_arch arch;
    char triple[64];     /* "x86_64-linux-gnu", "aarch64-linux-gnu" */
    char mcpu[64];       /* "native", "haswell", "cortex-a72", ... */
    unsigned features;   /* TGT_* */
    int vector_bytes;    /* 16, 32 or 64 */
    int vector_regs;     /* 16 (AVX2 and below), 32 (AVX-512, NEON) */
    int64_t cache[3];    /* L1d, L2, L3 bytes (per core for L1/L2) */
    int is_host;         /* the code runs on this machine (tests may run it) */
    char *cc;            /* the C compiler ("cc", "aarch64-linux-gnu-gcc") */
    char *cflags;        /* "-O3 -march=native", "-O3 -mcpu=cortex-a72" */
    int n_external;
    char *external[TGT_MAX_EXTERNAL]; /* composite "dnnl, llvm": the backends before the host part */
};

/* The float32 lanes of one vector register, and the register count. */
static inline int target_lanes(const kiln_target *t) { return t->vector_bytes / 4; }
static inline int target_has(const kiln_target *t, unsigned f) { return (t->features & f) == f; }

#endif
