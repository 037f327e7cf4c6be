/* peak.h: the machine's measured FP32 FMA peak, for benchmarks that report
 * a ratio against it. The FMA loop is the runtime's
 * (kiln_measure_fma_gflops, src/runtime/machine.c: independent vector FMA
 * chains, enough of them to hide the FMA latency), the same one
 * `kiln run --profile` measures its roofline with; this header asks it for
 * the widest vector the compiler targets with -march=native. Runs on n
 * threads through the kiln thread pool. */
#ifndef KILN_BENCH_PEAK_H
#define KILN_BENCH_PEAK_H

#include <stdint.h>
#include <time.h>

#include "kiln/runtime.h"

/* The widest vector register the compiler targets. */
#if defined(__AVX512F__)
#define PEAK_LANES 16
#elif defined(__AVX2__) || defined(__AVX__)
#define PEAK_LANES 8
#else
#define PEAK_LANES 4
#endif

static inline double peak_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define PEAK_ITERS 4000000L

/* GFLOP/s of `threads` threads running FMAs back to back on vectors of
 * `width` float lanes (at most what the CPU runs; best of 3). */
static inline double peak_gflops_at(int threads, int width) {
    double best = 0;
    kiln_set_num_threads(threads);
    for (int rep = 0; rep < 3; rep++) {
        int lanes = width;
        double g = kiln_measure_fma_gflops(&lanes, threads, PEAK_ITERS);
        if (g > best)
            best = g;
    }
    return best;
}

/* The same at the widest vector the compiler targets. */
static inline double peak_gflops(int threads) {
    return peak_gflops_at(threads, PEAK_LANES);
}

#endif
