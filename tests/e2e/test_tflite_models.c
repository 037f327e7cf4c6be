/* test_tflite_models.c: TFLite models end to end against the TFLite
 * interpreter (models/tflite/make_tflite_models.py writes them).
 *
 *   test_tflite_models MODEL_DIR [NAME ...]
 *
 * For every MODEL_DIR/NAME.tflite with a NAME_io.npz beside it (or only the
 * NAMEs given) it imports the model (kiln_tflite_import), compiles it,
 * runs it once on the inputs of NAME_io.npz and compares each output with
 * the interpreter's, by the kind the npz gives ("__kind"):
 *
 *   0 float:   max |got - exp| <= 1e-4 * max |exp|  (relative to the
 *              output's largest magnitude)
 *   1 int8:    |got - exp| <= 1 (one quantization step) on at least 99 %
 *              of the elements; the largest step difference is printed
 *   2 dynamic-range: max |got - exp| <= 5e-2 * max |exp| (kiln
 *              quantizes the activations on the fly as TFLite's hybrid
 *              kernels do, but a difference of float rounding upstream can
 *              move a value across a rounding boundary: docs/TFLITE.md)
 *
 * An int8 model runs twice: as imported (QDQ: float arithmetic between
 * qnn.dequantize and qnn.quantize), and with the build option
 * pass=FakeQuantizationToInteger, which makes its convolutions and dense
 * layers qnn.conv2d and qnn.dense with int32 sums (NAME+qnn); and, where the
 * npz has them (the "__reference__NAME" arrays: the interpreter with
 * OpResolverType.BUILTIN_REF, TFLite's reference kernels), imported with
 * KILN_TFLITE_REFERENCE_KERNELS against those (NAME+reference). The share of
 * outputs that are exact is printed for every int8 run; where the npz says
 * "__reference_exact" (a model of convolutions, depthwise convolutions and
 * fully-connected layers only, which kiln computes as those kernels do)
 * the reference run must be exact on every element.
 * One line per model: PASS or FAIL, the error, the import and compile
 * times. Each model runs in a forked child so that a crash is that model's
 * FAIL. Exit status 0 if every model passed (and at least one ran), else 1;
 * 2 on bad arguments. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "kiln/tflite.h"

#define FLOAT_RTOL 1e-4
#define DYNAMIC_RTOL 5e-2
#define INT8_MIN_FRACTION 0.99

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The elements of a as doubles (malloc'd), or NULL for a dtype not compared. */
static double *as_doubles(const kiln_ndarray *a) {
    int64_t n = kiln_ndarray_numel(a);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    const void *p = kiln_ndarray_data(a);
    for (int64_t i = 0; v && i < n; i++) {
        switch (kiln_ndarray_dtype(a)) {
        case KILN_FLOAT32: v[i] = ((const float *)p)[i]; break;
        case KILN_INT8: v[i] = ((const int8_t *)p)[i]; break;
        case KILN_UINT8: v[i] = ((const uint8_t *)p)[i]; break;
        case KILN_INT32: v[i] = ((const int32_t *)p)[i]; break;
        case KILN_INT64: v[i] = (double)((const int64_t *)p)[i]; break;
        default: free(v); return NULL;
        }
    }
    return v;
}

enum { RUN_PLAIN, RUN_QNN, RUN_REFERENCE };
static const char *const run_suffix[] = {"", "+qnn", "+reference"};

/* Compare one output by kind; prints its line; 1 if it passes. */
static int compare(const char *name, const char *out, int kind, int exact_only,
                   const kiln_ndarray *got, const kiln_ndarray *exp, double *worst) {
    int same = kiln_ndarray_ndim(got) == kiln_ndarray_ndim(exp) &&
               kiln_ndarray_dtype(got) == kiln_ndarray_dtype(exp);
    for (int d = 0; same && d < kiln_ndarray_ndim(got); d++)
        same = kiln_ndarray_dim(got, d) == kiln_ndarray_dim(exp, d);
    if (!same) {
        printf("    %s %s: got %d-D %s, expected %d-D %s (or other dims)\n", name, out,
               kiln_ndarray_ndim(got), kiln_dtype_name(kiln_ndarray_dtype(got)),
               kiln_ndarray_ndim(exp), kiln_dtype_name(kiln_ndarray_dtype(exp)));
        return 0;
    }
    double *g = as_doubles(got), *e = as_doubles(exp);
    int64_t n = kiln_ndarray_numel(exp), off = 0;
    double scale = 0, err = 0;
    int64_t exact = 0;
    for (int64_t i = 0; g && e && i < n; i++) {
        double d = fabs(g[i] - e[i]);
        if (isnan(d))
            d = INFINITY;
        scale = fmax(scale, fabs(e[i]));
        err = fmax(err, d);
        off += d > 1;
        exact += d == 0;
    }
    int ok = g && e;
    if (!ok)
        printf("    %s %s: dtype not compared\n", name, out);
    else if (kind == 1) {
        double frac = n ? 1.0 - (double)off / (double)n : 1;
        ok = exact_only ? exact == n : frac >= INT8_MIN_FRACTION;
        printf("    %s %s: %.4f %% within one step, %.4f %% exact, largest difference %.0f steps "
               "(%lld elements)\n",
               name, out, 100 * frac, n ? 100.0 * (double)exact / (double)n : 100.0, err,
               (long long)n);
        *worst = fmax(*worst, err);
    } else {
        double tol = kind == 2 ? DYNAMIC_RTOL : FLOAT_RTOL, rel = scale > 0 ? err / scale : err;
        ok = rel <= tol;
        printf("    %s %s: max |err| %.3g, max |exp| %.4g, relative %.3g (tolerance %g)\n", name,
               out, err, scale, rel, tol);
        *worst = fmax(*worst, rel);
    }
    free(g);
    free(e);
    return ok;
}

/* Whether the npz holds the reference kernels' outputs. */
static int has_reference(const kiln_npz *z) {
    for (int i = 0; i < kiln_npz_count(z); i++)
        if (!strncmp(kiln_npz_name(z, i), "__reference__", 13))
            return 1;
    return 0;
}

static int run_model(const char *dir, const char *name, int mode) {
    char path[4096], io[4096], pkg[4096];
    snprintf(path, sizeof path, "%s/%s.tflite", dir, name);
    snprintf(io, sizeof io, "%s/%s_io.npz", dir, name);
    const char *tmp = getenv("KILN_TEST_TMP");
    snprintf(pkg, sizeof pkg, "%s/tflite_%s_%d.tar", tmp && *tmp ? tmp : "/tmp", name,
             (int)getpid());
    kiln_npz *z = kiln_npz_load(io);
    const kiln_ndarray *k = z ? kiln_npz_get(z, "__kind") : NULL;
    int kind =
        k && kiln_ndarray_dtype(k) == KILN_INT32 ? *(const int32_t *)kiln_ndarray_data(k) : 0;
    const kiln_ndarray *ex_flag = z ? kiln_npz_get(z, "__reference_exact") : NULL;
    int exact_only = mode == RUN_REFERENCE && ex_flag != NULL;
    if ((mode != RUN_PLAIN && kind != 1) || (mode == RUN_REFERENCE && z && !has_reference(z))) {
        kiln_npz_free(z);
        return 0;
    }
    char label[512];
    snprintf(label, sizeof label, "%s%s", name, run_suffix[mode]);
    double t0 = seconds();
    kiln_graph *g = z ? kiln_tflite_import_flags(
                            path, NULL, mode == RUN_REFERENCE ? KILN_TFLITE_REFERENCE_KERNELS : 0)
                      : NULL;
    double t_import = seconds() - t0;
    t0 = seconds();
    kiln_build_options *o = kiln_build_options_new();
    if (mode == RUN_QNN &&
        kiln_build_options_set(o, "pass", "FakeQuantizationToInteger") != KILN_OK)
        fprintf(stderr, "%s: %s\n", label, kiln_last_error());
    int ok = g && kiln_graph_compile(g, pkg, o) == KILN_OK;
    kiln_build_options_free(o);
    double t_compile = seconds() - t0;
    kiln_executor *ex = ok ? kiln_executor_load(pkg) : NULL;
    ok = ex != NULL;
    for (int i = 0; ok && i < kiln_executor_num_inputs(ex); i++) {
        const char *in = kiln_executor_input_name(ex, i);
        const kiln_ndarray *v = kiln_npz_get(z, in);
        ok = v && kiln_executor_set_input(ex, in, v) == KILN_OK;
        if (!v)
            fprintf(stderr, "%s: no input '%s' in %s\n", name, in, io);
    }
    const char *why = ok ? NULL : kiln_last_error();
    double worst = 0;
    if (ok && kiln_executor_run(ex) != KILN_OK)
        ok = 0, why = kiln_last_error();
    for (int i = 0; ok && i < kiln_executor_num_outputs(ex); i++) {
        const char *on = kiln_executor_output_name(ex, i);
        char key[1024];
        snprintf(key, sizeof key, "%s%s", mode == RUN_REFERENCE ? "__reference__" : "", on);
        const kiln_ndarray *exp = kiln_npz_get(z, key);
        if (!exp) {
            ok = 0, why = "an output is missing from the npz";
            break;
        }
        ok = compare(label, on, kind, exact_only, kiln_executor_output(ex, i), exp, &worst) && ok;
        if (!ok)
            why = "outputs differ";
    }
    if (ok)
        printf("PASS %-26s worst %s %.3g  import %.2f s  compile %.2f s\n", label,
               kind == 1 ? "steps" : "relative", worst, t_import, t_compile);
    else
        printf("FAIL %-26s %s\n", label, why && *why ? why : "(no message)");
    fflush(stdout);
    kiln_executor_free(ex);
    kiln_graph_free(g);
    kiln_npz_free(z);
    remove(pkg);
    return ok ? 0 : 1;
}

/* Run one model in a child: a crash fails that model only. */
static int run_forked(const char *dir, const char *name, int mode) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(run_model(dir, name, mode));
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return run_model(dir, name, mode);
    if (WIFEXITED(st))
        return WEXITSTATUS(st) ? 1 : 0;
    printf("FAIL %-26s%s crashed (signal %d)\n", name, run_suffix[mode],
           WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_tflite_models MODEL_DIR [NAME ...]\n");
        return 2;
    }
    char *names[256];
    int n = 0;
    if (argc > 2) {
        for (int i = 2; i < argc && n < 256; i++)
            names[n++] = strdup(argv[i]);
    } else {
        DIR *d = opendir(argv[1]);
        if (!d) {
            fprintf(stderr, "test_tflite_models: cannot open %s\n", argv[1]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) && n < 256) {
            size_t len = strlen(e->d_name);
            if (len > 7 && !strcmp(e->d_name + len - 7, ".tflite")) {
                names[n] = strdup(e->d_name);
                names[n++][len - 7] = 0;
            }
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof names[0], by_name);
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int bad = 0;
        for (int mode = RUN_PLAIN; mode <= RUN_REFERENCE; mode++)
            bad |= run_forked(argv[1], names[i], mode);
        failed += bad;
        free(names[i]);
    }
    printf("%d of %d TFLite models passed\n", n - failed, n);
    return failed || !n ? 1 : 0;
}
