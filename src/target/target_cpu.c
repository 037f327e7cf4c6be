/* target_cpu.c: what kiln knows about CPUs. Two tables (the ISA features
 * as -mattr spells them, with what each implies; the CPUs -mcpu may name,
 * with their features, the C compiler's flags and typical cache sizes) and
 * the probe of this machine (cpuid and xgetbv on x86-64, the auxiliary
 * vector on aarch64; cache sizes from sysconf or sysfs). A target's vector
 * width and register count follow from its features (target.c), so a row
 * cannot contradict itself. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "target.h"

#define KB ((int64_t)1024)
#define MB (KB * 1024)

/* x86-64 feature sets of the CPU rows */
#define X_V2 TGT_SSE42
#define X_V3 (TGT_SSE42 | TGT_AVX | TGT_AVX2 | TGT_FMA | TGT_F16C)
#define X_512 (X_V3 | TGT_AVX512F | TGT_AVX512CD | TGT_AVX512BW | TGT_AVX512DQ | TGT_AVX512VL)
#define A_DOT (TGT_NEON | TGT_FP16 | TGT_DOTPROD)

/* In canonical order: a feature comes after those it implies. */
static const tgt_feature k_features[] = {
    {"sse4.2", TGT_SSE42, TGT_X86_64, 0},
    {"avx", TGT_AVX, TGT_X86_64, TGT_SSE42},
    {"f16c", TGT_F16C, TGT_X86_64, TGT_AVX},
    {"fma", TGT_FMA, TGT_X86_64, TGT_AVX},
    {"avx2", TGT_AVX2, TGT_X86_64, TGT_AVX},
    {"avx512f", TGT_AVX512F, TGT_X86_64, TGT_AVX2 | TGT_FMA | TGT_F16C},
    {"avx512cd", TGT_AVX512CD, TGT_X86_64, TGT_AVX512F},
    {"avx512bw", TGT_AVX512BW, TGT_X86_64, TGT_AVX512F},
    {"avx512dq", TGT_AVX512DQ, TGT_X86_64, TGT_AVX512F},
    {"avx512vl", TGT_AVX512VL, TGT_X86_64, TGT_AVX512F},
    {"avx512vnni", TGT_AVX512VNNI, TGT_X86_64, TGT_AVX512F},
    {"avx512bf16", TGT_AVX512BF16, TGT_X86_64, TGT_AVX512BW},
    {"avxvnni", TGT_AVXVNNI, TGT_X86_64, TGT_AVX2},
    {"neon", TGT_NEON, TGT_AARCH64, 0},
    {"fp16", TGT_FP16, TGT_AARCH64, TGT_NEON},
    {"dotprod", TGT_DOTPROD, TGT_AARCH64, TGT_NEON},
    {"bf16", TGT_BF16, TGT_AARCH64, TGT_NEON},
    {"i8mm", TGT_I8MM, TGT_AARCH64, TGT_NEON},
};
#define NFEATURES (int)(sizeof k_features / sizeof k_features[0])

/* gcc 12 does not know znver4, znver5 or apple-m1 (clang and newer gcc
   do): their flags spell the ISA out, which every version accepts. */
static const tgt_cpu k_cpus[] = {
    {"x86-64", TGT_X86_64, 0, "-march=x86-64", {32 * KB, 256 * KB, 8 * MB}},
    {"x86-64-v2", TGT_X86_64, X_V2, "-march=x86-64-v2", {32 * KB, 256 * KB, 8 * MB}},
    {"x86-64-v3", TGT_X86_64, X_V3, "-march=x86-64-v3", {32 * KB, 256 * KB, 8 * MB}},
    {"x86-64-v4", TGT_X86_64, X_512, "-march=x86-64-v4", {32 * KB, 1 * MB, 32 * MB}},
    {"nehalem", TGT_X86_64, X_V2, "-march=nehalem", {32 * KB, 256 * KB, 8 * MB}},
    {"westmere", TGT_X86_64, X_V2, "-march=westmere", {32 * KB, 256 * KB, 12 * MB}},
    {"sandybridge",
     TGT_X86_64,
     TGT_SSE42 | TGT_AVX,
     "-march=sandybridge",
     {32 * KB, 256 * KB, 8 * MB}},
    {"ivybridge",
     TGT_X86_64,
     TGT_SSE42 | TGT_AVX | TGT_F16C,
     "-march=ivybridge",
     {32 * KB, 256 * KB, 8 * MB}},
    {"haswell", TGT_X86_64, X_V3, "-march=haswell", {32 * KB, 256 * KB, 8 * MB}},
    {"broadwell", TGT_X86_64, X_V3, "-march=broadwell", {32 * KB, 256 * KB, 8 * MB}},
    {"skylake", TGT_X86_64, X_V3, "-march=skylake", {32 * KB, 256 * KB, 8 * MB}},
    {"alderlake",
     TGT_X86_64,
     X_V3 | TGT_AVXVNNI,
     "-march=alderlake",
     {48 * KB, 1280 * KB, 30 * MB}},
    /* gcc 12 and clang 14 do not know raptorlake or meteorlake: alderlake's ISA */
    {"raptorlake", TGT_X86_64, X_V3 | TGT_AVXVNNI, "-march=alderlake", {48 * KB, 2 * MB, 36 * MB}},
    {"meteorlake", TGT_X86_64, X_V3 | TGT_AVXVNNI, "-march=alderlake", {48 * KB, 2 * MB, 24 * MB}},
    {"skylake-avx512", TGT_X86_64, X_512, "-march=skylake-avx512", {32 * KB, 1 * MB, 32 * MB}},
    {"cascadelake",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI,
     "-march=cascadelake",
     {32 * KB, 1 * MB, 32 * MB}},
    {"cooperlake",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVX512BF16,
     "-march=cooperlake",
     {32 * KB, 1 * MB, 32 * MB}},
    {"cannonlake", TGT_X86_64, X_512, "-march=cannonlake", {32 * KB, 256 * KB, 8 * MB}},
    {"icelake-client",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI,
     "-march=icelake-client",
     {48 * KB, 512 * KB, 8 * MB}},
    {"icelake-server",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI,
     "-march=icelake-server",
     {48 * KB, 1280 * KB, 48 * MB}},
    {"rocketlake",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI,
     "-march=rocketlake",
     {48 * KB, 512 * KB, 16 * MB}},
    {"tigerlake",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI,
     "-march=tigerlake",
     {48 * KB, 1280 * KB, 12 * MB}},
    {"sapphirerapids",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVXVNNI | TGT_AVX512BF16,
     "-march=sapphirerapids",
     {48 * KB, 2 * MB, 105 * MB}},
    /* gcc 12 and clang 14 do not know emeraldrapids or graniterapids:
       sapphirerapids' ISA (graniterapids' AMX-FP16 kiln does not use) */
    {"emeraldrapids",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVXVNNI | TGT_AVX512BF16,
     "-march=sapphirerapids",
     {48 * KB, 2 * MB, 320 * MB}},
    {"graniterapids",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVXVNNI | TGT_AVX512BF16,
     "-march=sapphirerapids",
     {48 * KB, 2 * MB, 480 * MB}},
    {"znver1", TGT_X86_64, X_V3, "-march=znver1", {32 * KB, 512 * KB, 8 * MB}},
    {"znver2", TGT_X86_64, X_V3, "-march=znver2", {32 * KB, 512 * KB, 16 * MB}},
    {"znver3", TGT_X86_64, X_V3, "-march=znver3", {32 * KB, 512 * KB, 32 * MB}},
    {"znver4",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVX512BF16,
     "-march=x86-64-v4 -mavx512vnni -mavx512bf16 -mtune=znver3",
     {32 * KB, 1 * MB, 32 * MB}},
    {"znver5",
     TGT_X86_64,
     X_512 | TGT_AVX512VNNI | TGT_AVX512BF16 | TGT_AVXVNNI,
     "-march=x86-64-v4 -mavx512vnni -mavx512bf16 -mavxvnni -mtune=znver3",
     {48 * KB, 1 * MB, 32 * MB}},
    {"generic", TGT_AARCH64, TGT_NEON, "-march=armv8-a", {32 * KB, 512 * KB, 0}},
    {"cortex-a53", TGT_AARCH64, TGT_NEON, "-mcpu=cortex-a53", {32 * KB, 512 * KB, 0}},
    {"cortex-a55", TGT_AARCH64, A_DOT, "-mcpu=cortex-a55", {32 * KB, 256 * KB, 1 * MB}},
    {"cortex-a72", TGT_AARCH64, TGT_NEON, "-mcpu=cortex-a72", {32 * KB, 1 * MB, 0}},
    {"cortex-a76", TGT_AARCH64, A_DOT, "-mcpu=cortex-a76", {64 * KB, 512 * KB, 2 * MB}},
    {"neoverse-n1", TGT_AARCH64, A_DOT, "-mcpu=neoverse-n1", {64 * KB, 1 * MB, 32 * MB}},
    {"neoverse-n2",
     TGT_AARCH64,
     A_DOT | TGT_BF16 | TGT_I8MM,
     "-mcpu=neoverse-n2",
     {64 * KB, 1 * MB, 32 * MB}},
    {"neoverse-v1",
     TGT_AARCH64,
     A_DOT | TGT_BF16 | TGT_I8MM,
     "-mcpu=neoverse-v1",
     {64 * KB, 1 * MB, 32 * MB}},
    {"apple-m1", TGT_AARCH64, A_DOT, "-march=armv8.4-a+fp16", {128 * KB, 12 * MB, 8 * MB}},
};
#define NCPUS (int)(sizeof k_cpus / sizeof k_cpus[0])

const tgt_cpu *target_cpu_find(tgt_arch arch, const char *name) {
    for (int i = 0; i < NCPUS; i++)
        if (k_cpus[i].arch == arch && !strcmp(k_cpus[i].name, name))
            return &k_cpus[i];
    return NULL;
}

/* "a, b, c" of the names of arch's rows; built once per arch. */
static const char *names_of(tgt_arch arch, int cpus) {
    static char buf[2][2][512];
    char *b = buf[cpus][arch];
    if (b[0])
        return b;
    size_t k = 0;
    int n = cpus ? NCPUS : NFEATURES;
    for (int i = 0; i < n; i++) {
        tgt_arch a = cpus ? k_cpus[i].arch : k_features[i].arch;
        const char *nm = cpus ? k_cpus[i].name : k_features[i].name;
        if (a != arch)
            continue;
        int w = snprintf(b + k, sizeof buf[0][0] - k, "%s%s", k ? ", " : "", nm);
        if (w < 0 || (size_t)w >= sizeof buf[0][0] - k)
            break;
        k += (size_t)w;
    }
    return b;
}

const char *target_cpu_names(tgt_arch arch) {
    return names_of(arch, 1);
}
const char *target_feature_names(tgt_arch arch) {
    return names_of(arch, 0);
}

const tgt_feature *target_feature_find(tgt_arch arch, const char *name) {
    for (int i = 0; i < NFEATURES; i++)
        if (k_features[i].arch == arch && !strcmp(k_features[i].name, name))
            return &k_features[i];
    return NULL;
}

const tgt_feature *target_feature_at(int i) {
    return i >= 0 && i < NFEATURES ? &k_features[i] : NULL;
}

unsigned target_feature_closure(unsigned f) {
    for (unsigned prev = 0; prev != f;) {
        prev = f;
        for (int i = 0; i < NFEATURES; i++)
            if (f & k_features[i].bit)
                f |= k_features[i].implies;
    }
    return f;
}

unsigned target_feature_dependents(unsigned f) {
    for (unsigned prev = 0; prev != f;) {
        prev = f;
        for (int i = 0; i < NFEATURES; i++)
            if (k_features[i].implies & f)
                f |= k_features[i].bit;
    }
    return f;
}

tgt_arch target_host_arch(void) {
#if defined(__aarch64__)
    return TGT_AARCH64;
#else
    return TGT_X86_64;
#endif
}

/* ---- the probe ------------------------------------------------------------ */

#if defined(__x86_64__)
/* The register state the OS saves (XCR0); 0 without OSXSAVE. */
static uint64_t xcr0(unsigned ecx1) {
    if (!(ecx1 & (1u << 27)))
        return 0;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

unsigned target_probe_features(void) {
    unsigned f = 0;
#if defined(__x86_64__)
    unsigned a, b, c, d, max = __get_cpuid_max(0, NULL);
    if (max < 1 || !__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    uint64_t xs = xcr0(c);
    int os_avx = (xs & 6) == 6, os_512 = os_avx && (xs & 0xe0) == 0xe0;
    if (c & (1u << 20))
        f |= TGT_SSE42;
    if (os_avx && (c & (1u << 28)))
        f |= TGT_AVX;
    if ((f & TGT_AVX) && (c & (1u << 12)))
        f |= TGT_FMA;
    if ((f & TGT_AVX) && (c & (1u << 29)))
        f |= TGT_F16C;
    if (max >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if ((f & TGT_AVX) && (b & (1u << 5)))
            f |= TGT_AVX2;
        if (os_512 && (b & (1u << 16))) {
            f |= TGT_AVX512F;
            if (b & (1u << 28))
                f |= TGT_AVX512CD;
            if (b & (1u << 30))
                f |= TGT_AVX512BW;
            if (b & (1u << 17))
                f |= TGT_AVX512DQ;
            if (b & (1u << 31))
                f |= TGT_AVX512VL;
            if (c & (1u << 11))
                f |= TGT_AVX512VNNI;
        }
        unsigned sub = a;
        if (sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            if ((f & TGT_AVX2) && (a & (1u << 4)))
                f |= TGT_AVXVNNI;
            if ((f & TGT_AVX512BW) && (a & (1u << 5)))
                f |= TGT_AVX512BF16;
        }
    }
#elif defined(__aarch64__)
    f |= TGT_NEON;
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (hw & (1ul << 9))
        f |= TGT_FP16; /* HWCAP_FPHP */
    if (hw & (1ul << 20))
        f |= TGT_DOTPROD; /* HWCAP_ASIMDDP */
    if (hw2 & (1ul << 14))
        f |= TGT_BF16; /* HWCAP2_BF16 */
    if (hw2 & (1ul << 13))
        f |= TGT_I8MM; /* HWCAP2_I8MM */
#endif
#endif
    return f;
}

/* "32K", "1024K", "8M" or a plain number of bytes; 0 if unreadable. */
static int64_t read_size(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long v = 0;
    char unit = 0;
    int n = fscanf(f, "%lld%c", &v, &unit);
    fclose(f);
    if (n < 1 || v <= 0)
        return 0;
    return unit == 'K' ? v * KB : unit == 'M' ? v * MB : unit == 'G' ? v * MB * 1024 : v;
}

void target_probe_caches(int64_t cache[3]) {
    cache[0] = cache[1] = cache[2] = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
         l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    cache[0] = l1 > 0 ? l1 : 0;
    cache[1] = l2 > 0 ? l2 : 0;
    cache[2] = l3 > 0 ? l3 : 0;
#endif
    /* sysfs: index0..: level, type (Data, Instruction, Unified) and size */
    for (int i = 0; i < 8; i++) {
        char p[128], type[32] = "";
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int64_t level = read_size(p);
        if (level < 1 || level > 3)
            continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(p, "r");
        if (f) {
            if (fscanf(f, "%31s", type) != 1)
                type[0] = 0;
            fclose(f);
        }
        if (!strcmp(type, "Instruction"))
            continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!cache[level - 1])
            cache[level - 1] = read_size(p);
    }
}

/* What -march=native / -mcpu=native would read of this CPU: on x86-64 the
 * vendor, the signature (family, model, stepping), the brand string and
 * the raw feature words of cpuid leaves 1, 7 and 0x80000001 with XCR0; on
 * aarch64 MIDR_EL1 and the hardware capabilities; then the cache sizes.
 * Two machines with the same text get the same code from the same
 * compiler and flags, so the kernel cache keys "native" builds by it. */
void target_host_cpu_id(char *out, size_t cap) {
    int64_t c[3];
    target_probe_caches(c);
    size_t k = 0;
#if defined(__x86_64__)
    unsigned a = 0, b = 0, cx = 0, d = 0, max = __get_cpuid_max(0, NULL);
    char vendor[13] = "";
    if (__get_cpuid(0, &a, &b, &cx, &d)) {
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &cx, 4);
    }
    unsigned w[10] = {0};
    if (max >= 1 && __get_cpuid(1, &w[0], &a, &w[1], &w[2]))
        w[3] = (unsigned)xcr0(w[1]);
    if (max >= 7) {
        __cpuid_count(7, 0, a, w[4], w[5], w[6]);
        __cpuid_count(7, 1, w[7], b, cx, d);
    }
    char brand[49] = "";
    unsigned ext = __get_cpuid_max(0x80000000u, NULL);
    if (ext >= 0x80000001u)
        __get_cpuid(0x80000001u, &a, &b, &w[8], &w[9]);
    if (ext >= 0x80000004u)
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, (unsigned *)(brand + 16 * i),
                        (unsigned *)(brand + 16 * i + 4), (unsigned *)(brand + 16 * i + 8),
                        (unsigned *)(brand + 16 * i + 12));
    k = (size_t)snprintf(out, cap, "x86_64 %s %s", vendor, brand);
    for (int i = 0; i < 10 && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, " %08x", w[i]);
#elif defined(__aarch64__)
    char midr[64] = "";
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "r");
    if (f) {
        if (fscanf(f, "%63s", midr) != 1)
            midr[0] = 0;
        fclose(f);
    }
    unsigned long hw = 0, hw2 = 0;
#if defined(__linux__)
    hw = getauxval(AT_HWCAP);
    hw2 = getauxval(AT_HWCAP2);
#endif
    k = (size_t)snprintf(out, cap, "aarch64 %s %lx %lx", midr, hw, hw2);
#endif
    if (k < cap)
        snprintf(out + k, cap - k, " caches %lld %lld %lld", (long long)c[0], (long long)c[1],
                 (long long)c[2]);
}
