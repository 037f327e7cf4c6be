/* kiln_time.c: times a compiled kiln package for bench/bench_models.py.
 *
 *   kiln_time PACKAGE.tar [INPUTS.npz]
 *
 * Loads the package once (kiln_executor_load), sets every input found in
 * INPUTS.npz under its name (other members, e.g. expected outputs, are
 * ignored; inputs not in the file stay 0), prints one JSON line
 * {"ready": true, "threads": T, "load_s": S, "vector_bits": B} (B: the
 * vector width the package was compiled for), then serves commands from stdin,
 * one per line:
 *   N      run the model N times; print {"times": [s, s, ...]} (seconds per run)
 *   q/EOF  exit
 * Keeping the package loaded lets the caller alternate kiln with other engines
 * in rounds without reloading. KILN_NUM_THREADS sets the thread count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/runtime.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "kiln_time: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: kiln_time PACKAGE.tar [INPUTS.npz]  (then N per line on stdin)\n");
        return 2;
    }
    double t0 = now();
    kiln_executor *e = kiln_executor_load(argv[1]);
    if (!e)
        return fail(argv[1]);
    if (argc == 3) {
        kiln_npz *z = kiln_npz_load(argv[2]);
        if (!z)
            return fail(argv[2]);
        for (int i = 0; i < kiln_executor_num_inputs(e); i++) {
            const char *name = kiln_executor_input_name(e, i);
            const kiln_ndarray *a = kiln_npz_get(z, name);
            if (!a) {
                fprintf(stderr, "kiln_time: %s has no input '%s'; it stays 0\n", argv[2], name);
                continue;
            }
            if (kiln_executor_set_input(e, name, a))
                return fail(name);
        }
        kiln_npz_free(z);
    }
    printf("{\"ready\": true, \"threads\": %d, \"load_s\": %.6f, \"vector_bits\": %d}\n",
           kiln_num_threads(), now() - t0, kiln_executor_vector_bits(e));
    fflush(stdout);

    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'q')
            break;
        long n = strtol(line, NULL, 10);
        if (n < 1 || n > 100000) {
            fprintf(stderr, "kiln_time: bad run count '%s'\n", line);
            return 2;
        }
        printf("{\"times\": [");
        for (long r = 0; r < n; r++) {
            double s = now();
            if (kiln_executor_run(e))
                return fail("run");
            printf("%s%.9f", r ? ", " : "", now() - s);
        }
        printf("]}\n");
        fflush(stdout);
    }
    kiln_executor_free(e);
    return 0;
}
