/* digits.c: the main job's runner. Loads a compiled package of the bundled
 * digits CNN with the runtime alone, classifies the held-out images one at
 * a time (batch 1), and prints the accuracy and the median latency.
 * Usage: example_digits model.tar heldout.npz [min_accuracy] */
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

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: example_digits model.tar heldout.npz [min_accuracy]\n");
        return 2;
    }
    kiln_executor *ex = kiln_executor_load(argv[1]);
    kiln_npz *z = ex ? kiln_npz_load(argv[2]) : NULL;
    if (!ex || !z) {
        fprintf(stderr, "digits: %s\n", kiln_last_error());
        return 1;
    }
    const kiln_ndarray *images = kiln_npz_get(z, "input"), *labels = kiln_npz_get(z, "label");
    if (!images || !labels || kiln_ndarray_ndim(images) != 4 ||
        kiln_ndarray_dtype(labels) != KILN_INT64) {
        fprintf(stderr, "digits: %s needs 'input' [N,1,8,8] float32 and 'label' [N] int64\n",
                argv[2]);
        return 1;
    }
    int64_t n = kiln_ndarray_dim(images, 0);
    int64_t one[4] = {1, kiln_ndarray_dim(images, 1), kiln_ndarray_dim(images, 2),
                      kiln_ndarray_dim(images, 3)};
    int64_t per = one[1] * one[2] * one[3];
    double *times = malloc(sizeof(double) * (size_t)n);
    const float *px = kiln_ndarray_data(images);
    const int64_t *lab = kiln_ndarray_data(labels);
    int correct = 0;
    for (int rep = 0; rep < 2; rep++) { /* the first pass warms up */
        correct = 0;
        for (int64_t i = 0; i < n; i++) {
            kiln_ndarray *x =
                kiln_ndarray_wrap((void *)(px + i * per), KILN_FLOAT32, 4, one, NULL, 0);
            if (!x || kiln_executor_set_input(ex, kiln_executor_input_name(ex, 0), x) != KILN_OK) {
                fprintf(stderr, "digits: %s\n", kiln_last_error());
                return 1;
            }
            kiln_ndarray_free(x);
            double t0 = now();
            if (kiln_executor_run(ex) != KILN_OK) {
                fprintf(stderr, "digits: %s\n", kiln_last_error());
                return 1;
            }
            times[i] = now() - t0;
            const float *logits = kiln_ndarray_data(kiln_executor_output(ex, 0));
            int best = 0;
            for (int k = 1; k < 10; k++)
                if (logits[k] > logits[best])
                    best = k;
            correct += best == lab[i];
        }
    }
    qsort(times, (size_t)n, sizeof(double), cmp);
    double acc = (double)correct / (double)n;
    printf("digits CNN: held-out accuracy %.2f%% (%d/%lld), median latency %.1f us per image "
           "(batch 1, %d threads)\n",
           100 * acc, correct, (long long)n, times[n / 2] * 1e6, kiln_num_threads());
    double min_acc = argc > 3 ? atof(argv[3]) : 0;
    free(times);
    kiln_npz_free(z);
    kiln_executor_free(ex);
    return acc >= min_acc ? 0 : 1;
}
