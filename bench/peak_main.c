/* peak_main.c: prints the machine's measured FP32 FMA peak (bench/peak.h)
 * for 1 and 2 threads as one JSON line, e.g. {"1": 101.2, "2": 201.9, "avx512": 0}
 * (GFLOP/s), for bench/bench_models.py. Usage: peak_main [MAX_THREADS] */
#include <stdio.h>
#include <stdlib.h>

#include "peak.h"

int main(int argc, char **argv) {
    int max = argc > 1 ? atoi(argv[1]) : 2;
    if (max < 1 || max > 64) max = 2;
    printf("{");
    for (int t = 1; t <= max; t++) printf("\"%d\": %.3f, ", t, peak_gflops(t));
    printf("\"lanes\": %d}\n", PEAK_LANES);
    return 0;
}
