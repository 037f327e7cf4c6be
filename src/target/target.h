/* target.h: the target object inside kiln (the layer above runtime, below
 * tir). Schedules, lowering, codegen and the driver read these fields;
 * nothing else probes the host. target.c parses and prints target strings;
 * target_cpu.c holds the tables of CPUs and ISA features and the host
 * probe. */
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
    TGT_AVX512CD = 1u << 11,
    TGT_AVX512BW = 1u << 12,
    TGT_AVX512DQ = 1u << 13,
    TGT_AVX512VL = 1u << 14,
    TGT_FP16 = 1u << 15, /* aarch64: half-precision arithmetic */
    TGT_BF16 = 1u << 16, /* aarch64: BFloat16 dot products */
    TGT_I8MM = 1u << 17, /* aarch64: int8 matrix multiply */
};

typedef enum { TGT_X86_64 = 0, TGT_AARCH64 = 1 } tgt_arch;

#define TGT_MAX_EXTERNAL 4

struct kiln_target {
    char *text;   /* the canonical string */
    char kind[8]; /* "llvm" or "c" */
    tgt_arch arch;
    char triple[64];       /* "x86_64-linux-gnu", "aarch64-linux-gnu" */
    char mcpu[64];         /* "native", "haswell", "cortex-a72", ... */
    unsigned features;     /* TGT_* */
    unsigned cpu_features; /* the features of mcpu alone (-mattr is the difference) */
    int vector_bytes;      /* 16, 32 or 64 */
    int vector_regs;       /* 16 (AVX2 and below), 32 (AVX-512, NEON) */
    int64_t cache[3];      /* L1d, L2 (per core) and L3 bytes; 0 unknown */
    int is_host;           /* -mcpu=native: the probe of this machine */
    char *cc;              /* the C compiler ("cc", "aarch64-linux-gnu-gcc") */
    char *cflags;          /* "-O3 -march=native", "-O3 -mcpu=cortex-a72" */
    int n_external;
    char *external[TGT_MAX_EXTERNAL]; /* composite "dnnl, llvm": the backends before the CPU part */
};

/* The float32 lanes of one vector register, and the register count. */
static inline int target_lanes(const kiln_target *t) {
    return t->vector_bytes / 4;
}
static inline int target_has(const kiln_target *t, unsigned f) {
    return (t->features & f) == f;
}

/* kiln_target_parse that also returns the status (KILN_ERR_UNSUPPORTED
 * for a target kind or triple kiln cannot generate code for). */
KILN_HIDDEN kiln_status target_parse(const char *text, kiln_target **out);
/* "x86_64" or "aarch64". */
KILN_HIDDEN const char *target_arch_name(tgt_arch a);

/* ---- the tables and the probe (target_cpu.c) ---------------------------- */

/* A CPU kiln knows by name. */
typedef struct {
    const char *name; /* as -mcpu / gcc spell it */
    tgt_arch arch;
    unsigned features; /* TGT_* */
    const char *flags; /* the C compiler's flags for it; on aarch64 the last
                          word takes -mattr's "+ext" modifiers */
    int64_t cache[3];  /* typical L1d, L2, L3 bytes */
} tgt_cpu;

/* An ISA feature as -mattr spells it. */
typedef struct {
    const char *name;
    unsigned bit;
    tgt_arch arch;
    unsigned implies; /* features it needs: +name adds them, -them removes name */
} tgt_feature;

/* The CPU called `name` for `arch`, or NULL. */
KILN_HIDDEN const tgt_cpu *target_cpu_find(tgt_arch arch, const char *name);
/* The names of arch's CPUs, comma-separated, for messages. */
KILN_HIDDEN const char *target_cpu_names(tgt_arch arch);
/* The feature called `name` for `arch`, or NULL. */
KILN_HIDDEN const tgt_feature *target_feature_find(tgt_arch arch, const char *name);
/* Feature i of the table (NULL past the end), in canonical order. */
KILN_HIDDEN const tgt_feature *target_feature_at(int i);
/* The names of arch's features, comma-separated, for messages. */
KILN_HIDDEN const char *target_feature_names(tgt_arch arch);
/* f with everything it implies, and f with everything that implies it. */
KILN_HIDDEN unsigned target_feature_closure(unsigned f);
KILN_HIDDEN unsigned target_feature_dependents(unsigned f);
/* The architecture this library was built for. */
KILN_HIDDEN tgt_arch target_host_arch(void);
/* This machine's ISA features and cache sizes (0 where unknown). */
KILN_HIDDEN unsigned target_probe_features(void);
KILN_HIDDEN void target_probe_caches(int64_t cache[3]);
/* A text naming this CPU as far as a compiler's -march=native reads it
 * (the signature, features and caches; target_cpu.c), into out. */
KILN_HIDDEN void target_host_cpu_id(char *out, size_t cap);

#endif
