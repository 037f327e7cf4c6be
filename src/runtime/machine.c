/* machine.c: this machine's limits for the roofline profile
 * (docs/PROFILING.md): the FP32 FMA peak at a vector width, measured with
 * independent FMA chains (enough to hide the FMA latency on two ports
 * without spilling), and the memory bandwidth, measured with a streaming
 * read and write over buffers well past the last-level cache. Both run on
 * the thread pool. kiln_machine_limits_get measures once per CPU model,
 * thread count and vector width and keeps the result in
 * $XDG_CACHE_HOME/kiln/machine-limits.txt (else ~/.cache/kiln), one line a
 * key. bench/peak.h measures the bench's peak with the same FMA loop.
 *
 * The FMA loop is compiled per width with the matching target attribute
 * (x86: AVX-512F for 16 lanes, AVX2 and FMA for 8), and runs only at a
 * width this CPU has, so the runtime library needs no -march. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

/* ---- the FMA peak ------------------------------------------------------------ */

/* One chain a variable, so the compiler keeps every chain in a register. */
#define CH10(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define CH16(X) CH10(X) X(10) X(11) X(12) X(13) X(14) X(15)

#define FMA_LOOP(NAME, LANES, EACH, ATTR)                                                          \
    ATTR static float NAME(int64_t iters) {                                                        \
        typedef float vec __attribute__((vector_size(LANES * 4)));                                 \
        vec x, y;                                                                                  \
        for (int l = 0; l < LANES; l++) {                                                          \
            x[l] = 0.999999f;                                                                      \
            y[l] = 1e-7f * (float)(l + 1);                                                         \
        }                                                                                          \
        EACH(FMA_DECL)                                                                             \
        for (int64_t i = 0; i < iters; i++) {                                                      \
            EACH(FMA_STEP)                                                                         \
        }                                                                                          \
        vec s = y - y;                                                                             \
        EACH(FMA_SUM)                                                                              \
        float r = 0;                                                                               \
        for (int l = 0; l < LANES; l++)                                                            \
            r += s[l];                                                                             \
        return r;                                                                                  \
    }
#define FMA_DECL(c) vec a##c = y * (float)(c);
#define FMA_STEP(c) a##c = a##c * x + y;
#define FMA_SUM(c) s += a##c;

#if defined(__x86_64__) || defined(__i386__)
FMA_LOOP(fma16, 16, CH16, __attribute__((target("avx512f"))))
FMA_LOOP(fma8, 8, CH10, __attribute__((target("avx2,fma"))))
#endif
FMA_LOOP(fma4, 4, CH10, )

typedef struct {
    int lanes;
    int64_t iters;
    float sink[1024];
} fma_job;

static int fma_chunk(int64_t begin, int64_t end, void *closure) {
    fma_job *j = closure;
    for (int64_t t = begin; t < end; t++) {
        float r;
#if defined(__x86_64__) || defined(__i386__)
        if (j->lanes == 16)
            r = fma16(j->iters);
        else if (j->lanes == 8)
            r = fma8(j->iters);
        else
#endif
            r = fma4(j->iters);
        j->sink[t % 1024] = r;
    }
    return 0;
}

/* The widest width this CPU runs, at most `lanes`. */
static int usable_lanes(int lanes) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (lanes >= 16 && __builtin_cpu_supports("avx512f"))
        return 16;
    if (lanes >= 8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 8;
#else
    (void)lanes;
#endif
    return 4;
}

double kiln_measure_fma_gflops(int *lanes, int threads, int64_t iters) {
    if (!lanes || threads < 1 || threads > 1024 || iters < 1)
        return 0;
    fma_job *j = calloc(1, sizeof *j);
    if (!j)
        return 0;
    j->lanes = *lanes = usable_lanes(*lanes);
    j->iters = iters;
    int chains = j->lanes == 16 ? 16 : 10;
    double t0 = kiln_now_s();
    kiln_parallel_for(threads, fma_chunk, j);
    double sec = kiln_now_s() - t0;
    free(j);
    return sec > 0 ? 2.0 * *lanes * chains * (double)iters * threads / sec / 1e9 : 0;
}

/* ---- the bandwidth ------------------------------------------------------------- */

typedef struct {
    const float *src;
    float *dst;
    int64_t n, chunks;
} stream_job;

static int stream_chunk(int64_t begin, int64_t end, void *closure) {
    const stream_job *j = closure;
    for (int64_t c = begin; c < end; c++) {
        int64_t lo = j->n * c / j->chunks, hi = j->n * (c + 1) / j->chunks;
        for (int64_t i = lo; i < hi; i++)
            j->dst[i] = j->src[i] + 1.0f;
    }
    return 0;
}

/* The last-level cache's bytes (32 MiB if this system does not say). */
static int64_t llc_bytes(void) {
    int64_t best = 0;
    for (int idx = 0; idx < 8; idx++) {
        char path[96], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char *end = NULL;
        long long v = fgets(buf, sizeof buf, f) ? strtoll(buf, &end, 10) : 0;
        fclose(f);
        if (end && (*end == 'K' || *end == 'k'))
            v <<= 10;
        else if (end && *end == 'M')
            v <<= 20;
        if (v > best)
            best = v;
    }
    return best > 0 ? best : (int64_t)32 << 20;
}

double kiln_measure_bandwidth_gbs(int threads, int64_t bytes) {
    if (threads < 1 || threads > 1024)
        return 0;
    if (bytes <= 0) {
        bytes = 4 * llc_bytes();
        if (bytes < ((int64_t)64 << 20))
            bytes = (int64_t)64 << 20;
        if (bytes > ((int64_t)1 << 30))
            bytes = (int64_t)1 << 30;
    }
    stream_job j = {0};
    j.n = bytes / 2 / (int64_t)sizeof(float);
    j.chunks = threads;
    float *src = malloc((size_t)j.n * sizeof(float)), *dst = malloc((size_t)j.n * sizeof(float));
    double best = 0;
    if (src && dst) {
        j.src = src;
        j.dst = dst;
        memset(src, 0, (size_t)j.n * sizeof(float));
        kiln_parallel_for(threads, stream_chunk, &j); /* touches dst's pages */
        for (int rep = 0; rep < 3; rep++) {
            double t0 = kiln_now_s();
            kiln_parallel_for(threads, stream_chunk, &j);
            double sec = kiln_now_s() - t0, gbs = sec > 0 ? 2.0 * (double)j.n * 4 / sec / 1e9 : 0;
            best = gbs > best ? gbs : best;
        }
    }
    free(src);
    free(dst);
    return best;
}
