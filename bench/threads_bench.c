/* threads_bench.c: throughput of one loaded model run by several threads.
 *
 *   threads_bench MODEL.tar [--seconds S] [--threads 1,2,8] [--pool N]
 *
 * Loads the package once (kiln_model_load) and, for each thread count T,
 * starts T threads that call kiln_model_run on it back to back for S
 * seconds (default 3), each with inputs and outputs of its own (inputs
 * filled from a fixed seed), after one warm-up run per thread. Prints the
 * CPU, the pool size each run's kernels may use (--pool, else
 * KILN_NUM_THREADS or the cores), then one line per T: runs, runs/s, and
 * the ratio of runs/s to the first thread count's. Runtime only: links
 * libkiln_runtime. Exit 0, 1 if a run failed, 2 on bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/runtime.h"

#define MAX_COUNTS 32
#define MAX_THREADS 1024

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void cpu_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, n, "%s", colon);
        break;
    }
    if (f)
        fclose(f);
}

typedef struct {
    kiln_model *m;
    double seconds;
    atomic_int *ready, *go; /* warmed-up runners; the start signal */
    long long runs;
    int failed;
    char error[512];
} runner;

static kiln_ndarray *port_array(const kiln_model *m, int out, int i) {
    int64_t shape[KILN_MAX_NDIM];
    int nd = out ? kiln_model_output_ndim(m, i) : kiln_model_input_ndim(m, i);
    for (int d = 0; d < nd; d++)
        shape[d] = out ? kiln_model_output_dim(m, i, d) : kiln_model_input_dim(m, i, d);
    return kiln_ndarray_empty(out ? kiln_model_output_dtype(m, i) : kiln_model_input_dtype(m, i),
                              nd, shape);
}

/* Fill a with small values from a fixed seed, whatever its dtype (bytes). */
static void fill(kiln_ndarray *a, uint64_t seed) {
    unsigned char *p = kiln_ndarray_data(a);
    size_t n = (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a));
    if (kiln_ndarray_dtype(a) == KILN_FLOAT32) {
        float *x = (float *)p;
        for (size_t i = 0; i < n / 4; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)(seed >> 40) / 16777216.0f;
        }
        return;
    }
    memset(p, 0, n); /* integer inputs (indices, masks): zeros are always valid */
}

static void *run_loop(void *p) {
    runner *r = p;
    int nin = kiln_model_num_inputs(r->m), nout = kiln_model_num_outputs(r->m);
    kiln_ndarray **in = calloc((size_t)nin + 1, sizeof *in);
    kiln_ndarray **out = calloc((size_t)nout + 1, sizeof *out);
    for (int i = 0; i < nin; i++)
        if ((in[i] = port_array(r->m, 0, i)))
            fill(in[i], 0x9E3779B97F4A7C15ull + (uint64_t)i);
    for (int i = 0; i < nout; i++)
        out[i] = port_array(r->m, 1, i);
    if (kiln_model_run(r->m, (const kiln_ndarray *const *)in, out, 0) != KILN_OK) { /* warm-up */
        r->failed = 1;
        snprintf(r->error, sizeof r->error, "%s", kiln_last_error());
    }
    atomic_fetch_add(r->ready, 1);
    while (!atomic_load(r->go))
        sched_yield();
    double end = now_s() + r->seconds;
    while (!r->failed && now_s() < end) {
        if (kiln_model_run(r->m, (const kiln_ndarray *const *)in, out, 0) != KILN_OK) {
            r->failed = 1;
            snprintf(r->error, sizeof r->error, "%s", kiln_last_error());
        }
        r->runs++;
    }
    for (int i = 0; i < nin; i++)
        kiln_ndarray_free(in[i]);
    for (int i = 0; i < nout; i++)
        kiln_ndarray_free(out[i]);
    free(in);
    free(out);
    return NULL;
}

static int usage(void) {
    fprintf(stderr, "usage: threads_bench MODEL.tar [--seconds S] [--threads 1,2,8] [--pool N]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *model = NULL;
    double seconds = 3;
    int counts[MAX_COUNTS] = {1, 2, 8}, ncounts = 3, pool = 0;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            errno = 0;
            seconds = strtod(argv[++i], &end);
            if (*end || errno || !(seconds > 0 && seconds <= 3600))
                return usage();
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            ncounts = 0;
            for (char *s = argv[++i]; *s; s = *end ? end + 1 : end) {
                errno = 0;
                long v = strtol(s, &end, 10);
                if (end == s || (*end && *end != ',') || errno || v < 1 || v > MAX_THREADS ||
                    ncounts == MAX_COUNTS)
                    return usage();
                counts[ncounts++] = (int)v;
            }
            if (!ncounts)
                return usage();
        } else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc) {
            if (kiln_num_threads_parse(argv[++i], &pool)) {
                fprintf(stderr, "threads_bench: --pool: %s\n", kiln_last_error());
                return 2;
            }
        } else if (argv[i][0] != '-' && !model) {
            model = argv[i];
        } else {
            return usage();
        }
    }
    if (!model)
        return usage();
    if (pool)
        kiln_set_num_threads(pool);
    kiln_model *m = kiln_model_load(model);
    if (!m) {
        fprintf(stderr, "threads_bench: %s\n", kiln_last_error());
        return 1;
    }
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    printf("model %s\ncpu %s\npool %d threads per run (kiln_num_threads); %.1f s per thread "
           "count\n",
           model, cpu, kiln_num_threads(), seconds);
    printf("%8s %10s %12s %8s\n", "threads", "runs", "runs/s", "ratio");
    double base = 0;
    int rc = 0;
    for (int c = 0; c < ncounts && !rc; c++) {
        int T = counts[c];
        runner *r = calloc((size_t)T, sizeof *r);
        pthread_t *th = calloc((size_t)T, sizeof *th);
        atomic_int ready, go;
        atomic_init(&ready, 0);
        atomic_init(&go, 0);
        int started = 0;
        for (; r && th && started < T; started++) {
            r[started] = (runner){m, seconds, &ready, &go, 0, 0, ""};
            if (pthread_create(&th[started], NULL, run_loop, &r[started]) != 0)
                break;
        }
        while (atomic_load(&ready) < started)
            sched_yield();
        double t0 = now_s();
        atomic_store(&go, 1);
        long long runs = 0;
        for (int t = 0; t < started; t++) {
            pthread_join(th[t], NULL);
            runs += r[t].runs;
            if (r[t].failed && !rc) {
                fprintf(stderr, "threads_bench: %s\n", r[t].error);
                rc = 1;
            }
        }
        double rate = (double)runs / (now_s() - t0);
        if (c == 0)
            base = rate;
        if (started < T) {
            fprintf(stderr, "threads_bench: could start only %d of %d threads\n", started, T);
            rc = 1;
        }
        if (!rc)
            printf("%8d %10lld %12.1f %8.2f\n", T, runs, rate, base > 0 ? rate / base : 0);
        free(r);
        free(th);
    }
    kiln_model_free(m);
    return rc;
}
