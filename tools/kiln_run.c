/* kiln_run.c: `kiln run`, modelled on tvmc run. It loads model.tar with the
 * graph executor, sets inputs from an .npz (an input it lacks is an error,
 * unless --fill asks to fill it with zeros, ones or seeded random values,
 * and says so on stderr), runs once, then optionally times runs (tvmc's table),
 * profiles kernels (a sorted table and a Chrome trace), saves the outputs
 * to an .npz or prints them. Bad arguments exit 2, runtime failures 1. The
 * profile's table and trace are kiln_profile.c's. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kiln/runtime.h"
#include "kiln_run.h"

#define MAX_COUNT 1000000000LL
#define PRINT_VALUES 8
#define FILL_SEED 0x2545F4914F6CDD1Dull

typedef enum { FILL_NONE, FILL_RANDOM, FILL_ZEROS, FILL_ONES } fill_mode;

typedef struct {
    const char *model, *inputs, *outputs, *trace;
    fill_mode fill;
    int print_time, profile, check_div_zero;
    long long repeat, number, top;
} run_opts;

static void usage(FILE *f) {
    fprintf(f, "usage: kiln run MODEL.tar [--inputs IN.npz] [--outputs OUT.npz]\n"
               "                [--fill zeros|ones|random] [--check-div-zero] [--print-time]\n"
               "                [--repeat N] [--number N] [--profile]\n"
               "                [--profile-trace TRACE.json] [--print-top N]\n\n"
               "Run a package written by kiln (mod.so + mod.json + mod.params).\n\n"
               "  --inputs FILE        .npz of inputs by name; an input of the model it\n"
               "                       lacks is an error, unless --fill is given\n"
               "  --outputs FILE       save the outputs to an .npz keyed by output name\n"
               "  --fill MODE          fill the inputs not in --inputs (or all, without it)\n"
               "                       with zeros, ones or random values (floats in [0, 1),\n"
               "                       integers in [0, 100), from a fixed seed); each filled\n"
               "                       input is named on stderr. --fill-mode is the same\n"
               "  --check-div-zero     report an integer division or remainder by zero as an\n"
               "                       error naming the node (by default it gives 0)\n"
               "  --print-time         time the model: REPEAT measurements of NUMBER runs\n"
               "                       each, after one warm-up run; prints mean, median, max,\n"
               "                       min and std in ms\n"
               "  --repeat N           measurements (default 1)\n"
               "  --number N           runs per measurement (default 1)\n"
               "  --profile            time each kernel over REPEAT x NUMBER runs and print\n"
               "                       them sorted by mean time, each with its FLOPs, bytes,\n"
               "                       GFLOP/s, GB/s and share of this machine's roofline\n"
               "                       (its measured FP32 peak and memory bandwidth, cached\n"
               "                       under $XDG_CACHE_HOME/kiln; docs/PROFILING.md)\n"
               "  --profile-trace FILE write one Chrome trace event per kernel per run\n"
               "                       (open it in chrome://tracing or Perfetto)\n"
               "  --print-top N        print the N largest values of the first output with\n"
               "                       their indices; with --profile, show the N slowest\n"
               "                       kernels only\n"
               "  --help               print this message\n\n"
               "Without --outputs and --print-time, each output's name, shape and first\n"
               "values are printed. KILN_NUM_THREADS sets the thread count (1 to 1024).\n"
               "Exit status: 0 ok, 1 the model failed, 2 bad arguments (missing inputs\n"
               "included).\n");
}

int kiln_bad_arg(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kiln %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'kiln %s --help')\n", cmd);
    va_end(ap);
    return 2;
}

/* ---- arguments ---------------------------------------------------------------- */

static int parse_count(const char *flag, const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 1 || v > MAX_COUNT)
        return kiln_bad_arg("run", "%s needs a whole number from 1 to 1000000000, got '%s'", flag,
                            s);
    *out = v;
    return 0;
}

static int readable(const char *flag, const char *path) {
    return access(path, R_OK) == 0
               ? 0
               : kiln_bad_arg("run", "%s: cannot read '%s': %s", flag, path, strerror(errno));
}

static int parse_args(int argc, char **argv, run_opts *o) {
    *o = (run_opts){NULL, NULL, NULL, NULL, FILL_NONE, 0, 0, 0, 1, 1, 0};
    for (int i = 1; i < argc; i++) {
        char *a = argv[i], *val = NULL, *eq = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (a[0] != '-' || !a[1]) {
            if (o->model)
                return kiln_bad_arg("run", "more than one model given ('%s' and '%s')", o->model,
                                    a);
            o->model = a;
            continue;
        }
        if (strcmp(a, "--print-time") == 0)
            o->print_time = 1;
        else if (strcmp(a, "--profile") == 0)
            o->profile = 1;
        else if (strcmp(a, "--check-div-zero") == 0)
            o->check_div_zero = 1;
        else {
            static const char *const valued[] = {"--inputs", "--outputs",      "--fill-mode",
                                                 "--repeat", "--number",       "--print-top",
                                                 "--fill",   "--profile-trace"};
            enum { NVALUED = sizeof valued / sizeof valued[0] };
            int k = 0;
            size_t n = (eq = strchr(a, '=')) ? (size_t)(eq - a) : strlen(a);
            while (k < NVALUED && (strlen(valued[k]) != n || strncmp(a, valued[k], n) != 0))
                k++;
            if (k == NVALUED)
                return kiln_bad_arg("run", "unknown option '%s'", a);
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return kiln_bad_arg("run", "%s needs a value", valued[k]);
            int rc = 0;
            switch (k) {
            case 0: o->inputs = val; break;
            case 1: o->outputs = val; break;
            case 2:
            case 6:
                if (strcmp(val, "zeros") == 0)
                    o->fill = FILL_ZEROS;
                else if (strcmp(val, "ones") == 0)
                    o->fill = FILL_ONES;
                else if (strcmp(val, "random") == 0)
                    o->fill = FILL_RANDOM;
                else
                    rc = kiln_bad_arg("run", "%s must be zeros, ones or random, got '%s'",
                                      valued[k], val);
                break;
            case 3: rc = parse_count("--repeat", val, &o->repeat); break;
            case 4: rc = parse_count("--number", val, &o->number); break;
            case 5: rc = parse_count("--print-top", val, &o->top); break;
            default: o->trace = val; break;
            }
            if (rc)
                return rc;
            if (!*val)
                return kiln_bad_arg("run", "%s needs a non-empty value", valued[k]);
        }
    }
    if (!o->model)
        return kiln_bad_arg("run", "no model given: kiln run MODEL.tar [options]");
    const char *env = getenv("KILN_NUM_THREADS");
    int nthreads;
    if (env && *env && kiln_num_threads_parse(env, &nthreads))
        return kiln_bad_arg("run", "KILN_NUM_THREADS: %s", kiln_last_error());
    if (o->trace)
        o->profile = 1;
    if (readable("model", o->model))
        return 2;
    if (o->inputs && readable("--inputs", o->inputs))
        return 2;
    return 0;
}

/* ---- element access ----------------------------------------------------------- */

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, man = x & 0x7fffff;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0)
        return (uint16_t)sign; /* tiny: flushed to zero */
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00);
    uint32_t h = sign | (uint32_t)exp << 10 | man >> 13, rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++; /* round to nearest even */
    return (uint16_t)h;
}

static double f16_to_double(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0    ? ldexp(man, -24)
               : exp == 31 ? (man ? NAN : INFINITY)
                           : ldexp(man | 0x400, exp - 25);
    return h & 0x8000 ? -v : v;
}

static double get(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)d)[i];
    case KILN_FLOAT64: return ((const double *)d)[i];
    case KILN_FLOAT16: return f16_to_double(((const uint16_t *)d)[i]);
    case KILN_BFLOAT16: {
        uint32_t x = (uint32_t)((const uint16_t *)d)[i] << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_UINT8:
    case KILN_BOOL: return ((const uint8_t *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    case KILN_INT64: return (double)((const int64_t *)d)[i];
    case KILN_INT16: return ((const int16_t *)d)[i];
    case KILN_UINT16: return ((const uint16_t *)d)[i];
    case KILN_UINT32: return ((const uint32_t *)d)[i];
    case KILN_UINT64: return (double)((const uint64_t *)d)[i];
    default: return 0;
    }
}

/* Store v (a float in [0, 1], or an integer in [0, 100)) into element i. */
static void set(kiln_ndarray *a, int64_t i, double v) {
    void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: ((float *)d)[i] = (float)v; break;
    case KILN_FLOAT64: ((double *)d)[i] = v; break;
    case KILN_FLOAT16: ((uint16_t *)d)[i] = f32_to_f16((float)v); break;
    case KILN_BFLOAT16: {
        float f = (float)v;
        uint32_t x;
        memcpy(&x, &f, 4);
        ((uint16_t *)d)[i] = (uint16_t)(x >> 16); /* exact for the values filled */
        break;
    }
    case KILN_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case KILN_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case KILN_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case KILN_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case KILN_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case KILN_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
    case KILN_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case KILN_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case KILN_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    default: break;
    }
}

static uint64_t next_random(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void fill(kiln_ndarray *a, fill_mode mode, uint64_t *seed) {
    kiln_dtype dt = kiln_ndarray_dtype(a);
    int is_float =
        dt == KILN_FLOAT32 || dt == KILN_FLOAT64 || dt == KILN_FLOAT16 || dt == KILN_BFLOAT16;
    int64_t n = kiln_ndarray_numel(a);
    for (int64_t i = 0; i < n; i++) {
        double v = mode == FILL_ONES ? 1 : 0;
        if (mode == FILL_RANDOM) {
            uint64_t r = next_random(seed);
            v = is_float          ? (double)(r >> 40) / 16777216.0 /* 24 bits: exact in float */
                : dt == KILN_BOOL ? (double)(r >> 63)
                                  : (double)(r >> 32) * 100.0 / 4294967296.0;
            if (!is_float)
                v = floor(v);
        }
        set(a, i, v);
    }
}

/* ---- inputs and outputs ------------------------------------------------------- */

static void list_inputs(const kiln_executor *e) {
    fprintf(stderr, "the model's inputs:");
    for (int i = 0; i < kiln_executor_num_inputs(e); i++)
        fprintf(stderr, "%s %s", i ? "," : "", kiln_executor_input_name(e, i));
    fprintf(stderr, "%s\n", kiln_executor_num_inputs(e) ? "" : " none");
}

/* "float32[1, 3, 224, 224]": input i's type. */
static const char *input_type(const kiln_executor *e, int i, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s[", kiln_dtype_name(kiln_executor_input_dtype(e, i)));
    for (int d = 0; d < kiln_executor_input_ndim(e, i) && k > 0 && (size_t)k < n; d++) {
        const char *x = kiln_executor_input_dim_expr(e, i, d); /* a symbolic dim */
        if (x)
            k += snprintf(buf + k, n - (size_t)k, "%s%s", d ? ", " : "", x);
        else
            k += snprintf(buf + k, n - (size_t)k, "%s%lld", d ? ", " : "",
                          (long long)kiln_executor_input_dim(e, i, d));
    }
    if (k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "]");
    return buf;
}

/* Without --fill every input must come from --inputs: list those that do
 * not and return 2 (a bad argument), else 0. */
static int check_all_given(const kiln_executor *e, const kiln_npz *z, const run_opts *o) {
    int missing = 0;
    for (int i = 0; i < kiln_executor_num_inputs(e); i++) {
        const char *name = kiln_executor_input_name(e, i);
        if (kiln_npz_get(z, name))
            continue;
        char type[256];
        if (!missing++)
            fprintf(stderr, "kiln run: %s%sno value for input", o->inputs ? o->inputs : "",
                    o->inputs ? " has " : "");
        fprintf(stderr, "%s '%s' (%s)", missing > 1 ? "," : "", name,
                input_type(e, i, type, sizeof type));
    }
    if (!missing)
        return 0;
    const char *it = missing > 1 ? "them" : "it";
    if (o->inputs)
        fprintf(stderr, "\n(add %s to %s, or fill %s with --fill zeros|ones|random)\n", it,
                o->inputs, it);
    else
        fprintf(stderr,
                "\n(give %s with --inputs IN.npz, or fill %s with --fill "
                "zeros|ones|random)\n",
                it, it);
    return 2;
}

static int set_inputs(kiln_executor *e, const run_opts *o) {
    kiln_npz *z = NULL;
    if (o->inputs && !(z = kiln_npz_load(o->inputs))) {
        fprintf(stderr, "kiln run: %s\n", kiln_last_error());
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < kiln_npz_count(z) && !rc; i++) {
        const char *name = kiln_npz_name(z, i);
        int k = 0;
        while (k < kiln_executor_num_inputs(e) && strcmp(kiln_executor_input_name(e, k), name))
            k++;
        if (k == kiln_executor_num_inputs(e)) {
            fprintf(stderr, "kiln run: %s has '%s', which is not an input of the model; ",
                    o->inputs, name);
            list_inputs(e);
            rc = 1;
        } else if (kiln_executor_set_input(e, name, kiln_npz_array(z, i))) {
            fprintf(stderr, "kiln run: %s: %s\n", o->inputs, kiln_last_error());
            rc = 1;
        }
    }
    if (!rc && o->fill == FILL_NONE)
        rc = check_all_given(e, z, o);
    uint64_t seed = FILL_SEED;
    for (int i = 0; i < kiln_executor_num_inputs(e) && !rc; i++) {
        const char *name = kiln_executor_input_name(e, i);
        if (kiln_npz_get(z, name))
            continue;
        int64_t shape[KILN_MAX_NDIM];
        int nd = kiln_executor_input_ndim(e, i);
        char type[256];
        for (int d = 0; d < nd; d++)
            shape[d] = kiln_executor_input_dim(e, i, d);
        for (int d = 0; d < nd && !rc; d++)
            if (shape[d] < 0) {
                fprintf(stderr,
                        "kiln run: input '%s' (%s) has symbolic dims, so --fill cannot size it: "
                        "give it with --inputs\n",
                        name, input_type(e, i, type, sizeof type));
                rc = 2;
            }
        if (rc)
            break;
        kiln_ndarray *a = kiln_ndarray_empty(kiln_executor_input_dtype(e, i), nd, shape);
        if (a)
            fill(a, o->fill, &seed);
        if (!a || kiln_executor_set_input(e, name, a)) {
            fprintf(stderr, "kiln run: input '%s': %s\n", name, kiln_last_error());
            rc = 1;
        } else {
            fprintf(stderr, "kiln run: filled input '%s' (%s) with %s\n", name,
                    input_type(e, i, type, sizeof type),
                    o->fill == FILL_ZEROS  ? "zeros"
                    : o->fill == FILL_ONES ? "ones"
                                           : "random values (floats in [0, 1), integers in "
                                             "[0, 100), from a fixed seed)");
        }
        kiln_ndarray_free(a);
    }
    kiln_npz_free(z);
    return rc;
}

static void print_shape(const kiln_ndarray *a) {
    printf("%s[", kiln_dtype_name(kiln_ndarray_dtype(a)));
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        printf("%s%lld", d ? ", " : "", (long long)kiln_ndarray_dim(a, d));
    printf("]");
}

static void print_outputs(const kiln_executor *e) {
    for (int i = 0; i < kiln_executor_num_outputs(e); i++) {
        const kiln_ndarray *a = kiln_executor_output(e, i);
        int64_t n = kiln_ndarray_numel(a);
        printf("%s: ", kiln_executor_output_name(e, i));
        print_shape(a);
        printf("\n  [");
        for (int64_t k = 0; k < n && k < PRINT_VALUES; k++)
            printf("%s%.6g", k ? ", " : "", get(a, k));
        printf("%s]\n", n > PRINT_VALUES ? ", ..." : "");
    }
}

/* The `top` largest values of output 0 with their flat indices. */
static int print_top(const kiln_executor *e, long long top) {
    const kiln_ndarray *a = kiln_executor_output(e, 0);
    int64_t n = kiln_ndarray_numel(a), k = top < n ? top : n, have = 0;
    int64_t *idx = malloc((size_t)(k ? k : 1) * sizeof *idx);
    if (!idx) {
        fprintf(stderr, "kiln run: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < n; i++) { /* insertion into a sorted list of at most k */
        double v = get(a, i);
        int64_t p = have < k ? have++ : k;
        while (p > 0 && get(a, idx[p - 1]) < v) {
            if (p < k)
                idx[p] = idx[p - 1];
            p--;
        }
        if (p < k)
            idx[p] = i;
    }
    printf("Top %lld of %s (index: value):\n", (long long)k, kiln_executor_output_name(e, 0));
    for (int64_t i = 0; i < k; i++)
        printf("  %lld: %.6g\n", (long long)idx[i], get(a, idx[i]));
    free(idx);
    return 0;
}

static int save_outputs(const kiln_executor *e, const char *path) {
    kiln_npz *z = kiln_npz_new();
    int rc = !z;
    for (int i = 0; i < kiln_executor_num_outputs(e) && !rc; i++)
        rc = kiln_npz_add(z, kiln_executor_output_name(e, i), kiln_executor_output(e, i)) != 0;
    if (!rc)
        rc = kiln_npz_save(z, path, 0) != 0;
    if (rc)
        fprintf(stderr, "kiln run: --outputs %s: %s\n", path, kiln_last_error());
    kiln_npz_free(z);
    return rc;
}

/* ---- timing ------------------------------------------------------------------- */

double kiln_run_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Print s centred in `width` columns as Python's format(s, '^12') does. */
static void centred(const char *s, int width) {
    int pad = width - (int)strlen(s), left = pad > 0 ? pad / 2 : 0;
    printf("%*s%s%*s", left, "", s, pad > 0 ? pad - left : 0, "");
}

static int time_runs(kiln_executor *e, const run_opts *o) {
    double *ms = malloc((size_t)o->repeat * sizeof *ms);
    if (!ms) {
        fprintf(stderr, "kiln run: out of memory\n");
        return 1;
    }
    for (long long r = 0; r < o->repeat; r++) {
        double t0 = kiln_run_now();
        for (long long k = 0; k < o->number; k++)
            if (kiln_executor_run(e)) {
                fprintf(stderr, "kiln run: %s\n", kiln_last_error());
                free(ms);
                return 1;
            }
        ms[r] = (kiln_run_now() - t0) * 1e3 / (double)o->number;
    }
    double sum = 0, var = 0;
    for (long long r = 0; r < o->repeat; r++)
        sum += ms[r];
    double mean = sum / (double)o->repeat;
    for (long long r = 0; r < o->repeat; r++)
        var += (ms[r] - mean) * (ms[r] - mean);
    qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
    long long h = o->repeat / 2;
    double median = o->repeat % 2 ? ms[h] : (ms[h - 1] + ms[h]) / 2;
    double vals[5] = {mean, median, ms[o->repeat - 1], ms[0], sqrt(var / (double)o->repeat)};
    static const char *const heads[5] = {"mean (ms)", "median (ms)", "max (ms)", "min (ms)",
                                         "std (ms)"};
    printf("Execution time summary:\n");
    for (int c = 0; c < 5; c++) {
        printf("%s", c ? " " : "");
        centred(heads[c], 12);
    }
    printf("\n");
    for (int c = 0; c < 5; c++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.4f", vals[c]);
        printf("%s", c ? " " : "");
        centred(buf, 12);
    }
    printf("\n");
    free(ms);
    return 0;
}

/* ---- the command -------------------------------------------------------------- */

int kiln_cmd_run(int argc, char **argv) {
    run_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    kiln_executor *e = kiln_executor_load(o.model);
    if (!e) {
        fprintf(stderr, "kiln run: %s\n", kiln_last_error());
        return 1;
    }
    rc = set_inputs(e, &o);
    if (!rc && o.check_div_zero)
        rc = kiln_executor_set_check_div_zero(e, 1) != KILN_OK;
    if (!rc && kiln_executor_run(e)) { /* the first run, also the warm-up */
        fprintf(stderr, "kiln run: %s\n", kiln_last_error());
        rc = 1;
    }
    if (!rc && o.print_time)
        rc = time_runs(e, &o);
    if (!rc && o.profile)
        rc = kiln_run_profile(e, o.repeat * o.number, o.top, o.trace);
    if (!rc && o.outputs)
        rc = save_outputs(e, o.outputs);
    if (!rc && !o.outputs && !o.print_time)
        print_outputs(e);
    if (!rc && o.top > 0 && kiln_executor_num_outputs(e) > 0)
        rc = print_top(e, o.top);
    kiln_executor_free(e);
    return rc;
}
