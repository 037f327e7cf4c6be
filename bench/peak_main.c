/* peak_main.c: prints the machine's measured FP32 FMA peak (bench/peak.h)
 * for 1 and 2 threads as one JSON line, e.g. {"1": 97.1, "2": 185.0, "lanes": 8}
 * (GFLOP/s), for bench/bench_models.py. Usage: peak_main [MAX_THREADS [LANES]]:
 * LANES measures at a narrower vector than the widest this build targets (8:
 * the AVX2 peak of an AVX-512 CPU, for packages compiled for AVX2); "lanes"
 * is the width measured.
 *
 * peak_gflops' repetitions are short (milliseconds), and a freshly woken pool
 * worker can start on the caller's CPU and stay there for a few of them, which
 * halves the 2-thread figure at random. So each thread count first spins the
 * pool for ~0.2 s to let the scheduler spread the threads, then takes the best
 * of 5 peak_gflops calls. */
#include <stdio.h>
#include <stdlib.h>

#include "peak.h"

static int spin_chunk(int64_t begin, int64_t end, void *closure) {
    double until = *(const double *)closure;
    volatile double x = 1.0;
    while (peak_now() < until)
        x = x * 1.0000001 + 1e-9;
    return 0;
}

int main(int argc, char **argv) {
    int max = argc > 1 ? atoi(argv[1]) : 2, width = argc > 2 ? atoi(argv[2]) : PEAK_LANES;
    if (max < 1 || max > 64)
        max = 2;
    if (width < 4 || width > PEAK_LANES)
        width = PEAK_LANES;
    printf("{");
    for (int t = 1; t <= max; t++) {
        kiln_set_num_threads(t);
        double until = peak_now() + 0.2;
        kiln_parallel_for(t, spin_chunk, &until);
        double best = 0;
        for (int r = 0; r < 5; r++) {
            double g = peak_gflops_at(t, width);
            if (g > best)
                best = g;
        }
        printf("\"%d\": %.3f, ", t, best);
    }
    printf("\"lanes\": %d}\n", width);
    return 0;
}
