/* peak.h: the machine's measured FP32 FMA peak, for benchmarks that report
 * a ratio against it. Independent vector FMA chains, enough of them to hide
 * the FMA latency; compiled with -march=native so it uses the widest FMA
 * the host has. Runs on n threads through the kiln thread pool. */
#ifndef KILN_BENCH_PEAK_H
#define KILN_BENCH_PEAK_H

#include <stdint.h>
#include <time.h>

#include "kiln/runtime.h"

/* The widest vector register the compiler targets, and enough independent
 * chains to cover FMA latency x FMA ports without spilling. */
#if defined(__AVX512F__)
#define PEAK_LANES 16
#define PEAK_CHAINS 16
#else
#define PEAK_LANES 8
#define PEAK_CHAINS 10
#endif
typedef float peak_vec __attribute__((vector_size(PEAK_LANES * 4)));

static inline double peak_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define PEAK_ITERS 4000000L

/* Each chain is its own variable so the compiler keeps all in registers. */
#if PEAK_CHAINS == 16
#define PEAK_EACH(X)                                                                               \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#else
#define PEAK_EACH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#endif

static int peak_chunk(int64_t begin, int64_t end, void *closure) {
    float *sink = closure;
    for (int64_t t = begin; t < end; t++) {
        peak_vec x = {0}, y = {0};
        for (int l = 0; l < PEAK_LANES; l++) {
            x[l] = 0.999999f;
            y[l] = 1e-7f * (float)(l + 1);
        }
#define PEAK_DECL(c) peak_vec a##c = y * (float)(c);
#define PEAK_FMA(c) a##c = a##c * x + y;
#define PEAK_SUM(c) s += a##c;
        PEAK_EACH(PEAK_DECL)
        for (long i = 0; i < PEAK_ITERS; i++) {
            PEAK_EACH(PEAK_FMA)
        }
        peak_vec s = {0};
        PEAK_EACH(PEAK_SUM)
        float r = 0;
        for (int l = 0; l < PEAK_LANES; l++)
            r += s[l];
        sink[t] = r;
    }
    return 0;
}

/* GFLOP/s of `threads` threads running FMAs back to back (best of 3). */
static inline double peak_gflops(int threads) {
    float sink[64];
    double best = 0;
    kiln_set_num_threads(threads);
    for (int rep = 0; rep < 3; rep++) {
        double t0 = peak_now();
        kiln_parallel_for(threads, peak_chunk, sink);
        double sec = peak_now() - t0;
        double flops = 2.0 * PEAK_LANES * PEAK_CHAINS * (double)PEAK_ITERS * threads;
        if (flops / sec / 1e9 > best)
            best = flops / sec / 1e9;
    }
    return best;
}

#endif
