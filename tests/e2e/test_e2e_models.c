/* test_e2e_models.c: real architectures end to end (models/e2e).
 *
 *   test_e2e_models MODEL_DIR [MODEL ...]
 *
 * For every MODEL_DIR/NAME.onnx that has a NAME_io.npz beside it (sorted by
 * name; or only the NAMEs given) it imports the model (kiln_onnx_import,
 * static shapes), compiles it (kiln_graph_compile, default build options:
 * $KILN_CC / $KILN_CFLAGS or cc -O3 -march=native), loads the package with
 * the graph executor, sets every input from NAME_io.npz (keyed by the ONNX
 * input names), runs it once and compares every output with the member of
 * NAME_io.npz named like it (ONNX Runtime's outputs):
 *
 *     |got - exp| <= 1e-3 * |exp| + 1e-4 * max|exp|
 *
 * (rtol 1e-3, atol 1e-4 relative to the output's scale). It prints one line
 * per model: PASS or FAIL, the max error (absolute, and as a fraction of the
 * scale), the import and compile times in seconds and the run time (a
 * second, warm run; the first is in parentheses); a FAIL
 * says why, with kiln's error (an op kiln lacks fails at import, naming it).
 * Then the models of g_dynamic are compiled once with their batch (and a
 * BERT encoder's sequence) left symbolic and that one package runs at two
 * sizes against ONNX Runtime's outputs (NAME_dyn_io.npz).
 * Each model runs in a forked child so a crash is that model's FAIL
 * (KILN_E2E_NO_FORK=1 runs them in the process, for a debugger).
 * Exit status: 0 if every model passed, 1 otherwise, 2 on bad arguments. */
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
#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

#define RTOL 1e-3
#define ATOL_OF_SCALE 1e-4
#define MAX_MODELS 256

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *tmp_dir(void) {
    const char *d = getenv("KILN_TEST_TMP");
    return d && *d ? d : "/tmp";
}

/* Element i of a (compact) array as a double; 0 with *ok = 0 for a dtype
 * this test does not compare. */
static double elem(const kiln_ndarray *a, int64_t i, int *ok) {
    const void *p = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)p)[i];
    case KILN_FLOAT64: return ((const double *)p)[i];
    case KILN_INT32: return ((const int32_t *)p)[i];
    case KILN_INT64: return (double)((const int64_t *)p)[i];
    case KILN_INT8: return ((const int8_t *)p)[i];
    case KILN_UINT8: return ((const uint8_t *)p)[i];
    case KILN_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: *ok = 0; return 0;
    }
}

static void shape_str(const kiln_ndarray *a, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < kiln_ndarray_ndim(a) && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "",
                              (long long)kiln_ndarray_dim(a, d));
    if (k < n)
        snprintf(buf + k, n - k, "] %s", kiln_dtype_name(kiln_ndarray_dtype(a)));
}

/* Compare one output; fills *max_err and *scale; returns 1 if within
 * tolerance, else 0 with a reason in why. */
static int compare(const kiln_ndarray *got, const kiln_ndarray *exp, double *max_err, double *scale,
                   char *why, size_t why_n) {
    char gs[160], es[160];
    shape_str(got, gs, sizeof gs);
    shape_str(exp, es, sizeof es);
    int same = kiln_ndarray_ndim(got) == kiln_ndarray_ndim(exp);
    for (int d = 0; same && d < kiln_ndarray_ndim(got); d++)
        same = kiln_ndarray_dim(got, d) == kiln_ndarray_dim(exp, d);
    if (!same || kiln_ndarray_dtype(got) != kiln_ndarray_dtype(exp)) {
        snprintf(why, why_n, "got %s, expected %s", gs, es);
        return 0;
    }
    if (!kiln_ndarray_is_contiguous(got) || !kiln_ndarray_is_contiguous(exp)) {
        snprintf(why, why_n, "non-contiguous output");
        return 0;
    }
    int64_t n = kiln_ndarray_numel(exp), worst = -1, bad = 0;
    int ok = 1;
    double s = 0, worst_excess = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        s = fmax(s, fabs(elem(exp, i, &ok)));
    *scale = s;
    *max_err = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = elem(got, i, &ok), e = elem(exp, i, &ok);
        double err = fabs(g - e), tol = RTOL * fabs(e) + ATOL_OF_SCALE * s;
        if (isnan(err))
            err = INFINITY;
        *max_err = fmax(*max_err, err);
        if (!(err <= tol)) {
            bad++;
            if (err - tol > worst_excess)
                worst_excess = err - tol, worst = i;
        }
    }
    if (!ok) {
        snprintf(why, why_n, "dtype %s not compared", kiln_dtype_name(kiln_ndarray_dtype(exp)));
        return 0;
    }
    if (bad) {
        snprintf(why, why_n,
                 "%lld of %lld elements out of tolerance; worst at %lld: got %.9g, expected %.9g",
                 (long long)bad, (long long)n, (long long)worst, elem(got, worst, &ok),
                 elem(exp, worst, &ok));
        return 0;
    }
    return 1;
}

/* Import, compile, run and compare one model; prints its result line.
 * Returns 0 on PASS, 1 on FAIL. */
/* --target T: compile for T; a composite target ("dnnl, llvm") must also
 * offload: some kernel is an external function (kiln/byoc.h) */
static const char *g_target;

static int run_model(const char *dir, const char *name) {
    char onnx[4096], io[4096], pkg[4096], why[16384] = "";
    snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, name);
    snprintf(io, sizeof io, "%s/%s_io.npz", dir, name);
    snprintf(pkg, sizeof pkg, "%s/e2e_%s.tar", tmp_dir(), name);
    const char *stage = "import";
    double t_import = 0, t_compile = 0, t_first = 0, t_run = 0, worst_rel = 0, worst_abs = 0;
    int pass = 0;
    kiln_graph *g = NULL;
    kiln_executor *ex = NULL;
    kiln_npz *z = kiln_npz_load(io);
    if (!z) {
        stage = "load io";
        snprintf(why, sizeof why, "%s", kiln_last_error());
        goto done;
    }

    double t0 = now_s();
    g = kiln_onnx_import(onnx, NULL);
    t_import = now_s() - t0;
    if (!g) {
        snprintf(why, sizeof why, "%s", kiln_last_error());
        goto done;
    }
    stage = "compile";
    t0 = now_s();
    kiln_build_options *o = kiln_build_options_new();
    kiln_status st = g_target ? kiln_build_options_set(o, "target", g_target) : KILN_OK;
    if (st == KILN_OK)
        st = kiln_graph_compile(g, pkg, o);
    kiln_build_options_free(o);
    t_compile = now_s() - t0;
    if (st != KILN_OK) {
        snprintf(why, sizeof why, "%s", kiln_last_error());
        goto done;
    }
    stage = "load package";
    if (!(ex = kiln_executor_load(pkg))) {
        snprintf(why, sizeof why, "%s", kiln_last_error());
        goto done;
    }
    if (g_target && strchr(g_target, ',')) {
        int external = 0;
        for (int k = 0; k < kiln_executor_num_kernels(ex); k++)
            external += !strncmp(kiln_executor_kernel_func(ex, k), "tvmgen_default_", 15);
        if (!external) {
            snprintf(why, sizeof why, "target \"%s\": no sub-graph went to the backend", g_target);
            goto done;
        }
    }
    stage = "set inputs";
    for (int i = 0; i < kiln_executor_num_inputs(ex); i++) {
        const char *in = kiln_executor_input_name(ex, i);
        const kiln_ndarray *v = kiln_npz_get(z, in);
        if (!v) {
            snprintf(why, sizeof why, "%s has no input '%s'", io, in);
            goto done;
        }
        if (kiln_executor_set_input(ex, in, v) != KILN_OK) {
            snprintf(why, sizeof why, "input '%s': %s", in, kiln_last_error());
            goto done;
        }
    }
    stage = "run";
    t0 = now_s();
    if (kiln_executor_run(ex) != KILN_OK) {
        snprintf(why, sizeof why, "%s", kiln_last_error());
        goto done;
    }
    t_first = now_s() - t0;
    t0 = now_s(); /* a second run, warm, for the time printed */
    if (kiln_executor_run(ex) != KILN_OK) {
        snprintf(why, sizeof why, "second run: %s", kiln_last_error());
        goto done;
    }
    t_run = now_s() - t0;
    stage = "compare";
    if (kiln_executor_num_outputs(ex) < 1) {
        snprintf(why, sizeof why, "the package has no outputs");
        goto done;
    }
    pass = 1;
    for (int i = 0; i < kiln_executor_num_outputs(ex); i++) {
        const char *on = kiln_executor_output_name(ex, i);
        const kiln_ndarray *exp = kiln_npz_get(z, on), *got = kiln_executor_output(ex, i);
        double err = 0, scale = 0;
        char w[1024];
        if (!exp) {
            snprintf(why, sizeof why, "%s has no output '%s'", io, on);
            pass = 0;
            break;
        }
        int ok = got && compare(got, exp, &err, &scale, w, sizeof w);
        printf("    %s %s: max |err| %.3g, scale %.4g (%.2g of scale)%s%s\n", name, on, err, scale,
               scale > 0 ? err / scale : err, ok ? "" : " -- ", ok ? "" : (got ? w : "no output"));
        worst_abs = fmax(worst_abs, err);
        worst_rel = fmax(worst_rel, scale > 0 ? err / scale : err);
        if (!ok && pass)
            snprintf(why, sizeof why, "output '%s': %s", on, got ? w : "missing");
        pass &= ok;
    }

done:
    if (pass)
        printf("PASS %-22s max |err| %.3g (%.2g of scale)  import %.2f s  compile %.2f s  "
               "run %.2f ms (first %.2f ms)\n",
               name, worst_abs, worst_rel, t_import, t_compile, 1e3 * t_run, 1e3 * t_first);
    else
        printf("FAIL %-22s at %s (import %.2f s, compile %.2f s): %s\n", name, stage, t_import,
               t_compile, why);
    fflush(stdout);
    kiln_executor_free(ex);
    kiln_graph_free(g);
    kiln_npz_free(z);
    remove(pkg);
    return pass ? 0 : 1;
}

/* ---- one package at several batch sizes ------------------------------------------ */

/* The models run with symbolic dims: the --input-shapes that leaves the
 * batch so (NULL: the model's own dim_params, a batch and a sequence), the
 * inputs (IMAGE: one float input from image_input's formula, its dim 0
 * the size; TOKENS: input_ids and attention_mask [b, s] from
 * token_inputs'), and the sizes NAME_dyn_io.npz has ONNX Runtime's outputs
 * for: member OUTPUT_B (IMAGE) or OUTPUT_B_S (TOKENS), written by
 * models/e2e/make_dynamic_refs.py and export_dynamic_bert.py. */
enum { IMAGE, TOKENS };
static const struct {
    const char *name, *shapes;
    int kind, nsizes;
    int sizes[3][2];
} g_dynamic[] = {
    {"resnet50_narrow", "input:[N,3,64,64]", IMAGE, 2, {{2, 0}, {3, 0}}},
    /* (3, 37): 111 rows, no multiple of a dense register tile */
    {"bert_tiny_seq", NULL, TOKENS, 3, {{2, 64}, {1, 128}, {3, 37}}},
};

/* make_dynamic_refs.py's input: x[i] = ((i * 7919) % 2003) / 1001.5 - 1 */
static kiln_ndarray *image_input(int ndim, const int64_t *shape) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, ndim, shape);
    float *v = a ? kiln_ndarray_data(a) : NULL;
    for (int64_t i = 0; v && i < kiln_ndarray_numel(a); i++)
        v[i] = (float)((double)((i * 7919) % 2003) / 1001.5 - 1);
    return a;
}

/* export_dynamic_bert.py's inputs [b, s]: input_ids[i] = (i * 7919) % 1000;
 * attention_mask 0 where the row is odd and t >= s - 5, else 1. */
static void token_inputs(int64_t b, int64_t s, kiln_ndarray **ins) {
    int64_t shape[2] = {b, s};
    ins[0] = kiln_ndarray_empty(KILN_INT64, 2, shape);
    ins[1] = kiln_ndarray_empty(KILN_INT64, 2, shape);
    int64_t *ids = ins[0] ? kiln_ndarray_data(ins[0]) : NULL;
    int64_t *mask = ins[1] ? kiln_ndarray_data(ins[1]) : NULL;
    for (int64_t i = 0; ids && mask && i < b * s; i++) {
        ids[i] = (i * 7919) % 1000;
        mask[i] = (i / s) % 2 == 1 && i % s >= s - 5 ? 0 : 1;
    }
}

/* Compile model k once with its dims symbolic, then run that one package
 * at each size against ONNX Runtime. Returns 0 on PASS, 1 on FAIL. */
static int run_dynamic(const char *dir, int k) {
    const char *name = g_dynamic[k].name, *shapes = g_dynamic[k].shapes;
    char onnx[4096], io[4096], pkg[4096], why[16384] = "", sizes[3][64], all[256] = "";
    snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, name);
    snprintf(io, sizeof io, "%s/%s_dyn_io.npz", dir, name);
    snprintf(pkg, sizeof pkg, "%s/e2e_%s_dyn.tar", tmp_dir(), name);
    kiln_npz *z = kiln_npz_load(io);
    kiln_graph *g = z ? kiln_onnx_import(onnx, shapes) : NULL;
    kiln_model *m = NULL;
    int pass = g && kiln_graph_compile(g, pkg, NULL) == KILN_OK && (m = kiln_model_load(pkg));
    if (!pass)
        snprintf(why, sizeof why, "%s", kiln_last_error());
    for (int b = 0; pass && b < g_dynamic[k].nsizes; b++) {
        const int *sz = g_dynamic[k].sizes[b];
        kiln_ndarray *ins[2] = {NULL, NULL};
        if (g_dynamic[k].kind == IMAGE) {
            int64_t shape[KILN_MAX_NDIM];
            int nd = kiln_model_input_ndim(m, 0);
            for (int d = 0; d < nd; d++)
                shape[d] = d ? kiln_model_input_dim(m, 0, d) : sz[0];
            ins[0] = image_input(nd, shape);
            snprintf(sizes[b], sizeof sizes[b], "%d", sz[0]);
        } else {
            token_inputs(sz[0], sz[1], ins);
            snprintf(sizes[b], sizeof sizes[b], "%d_%d", sz[0], sz[1]);
        }
        int nout = kiln_model_num_outputs(m);
        kiln_ndarray *y[8] = {NULL};
        if (nout > 8) {
            snprintf(why, sizeof why, "%d outputs (at most 8 here)", nout);
            pass = 0;
        } else if (kiln_model_run_alloc(m, (const kiln_ndarray *const *)ins, y, 0) != KILN_OK) {
            snprintf(why, sizeof why, "sizes %s: %s", sizes[b], kiln_last_error());
            pass = 0;
        }
        for (int o = 0; pass && o < nout; o++) {
            char member[256], w[1024];
            snprintf(member, sizeof member, "%s_%s", kiln_model_output_name(m, o), sizes[b]);
            const kiln_ndarray *exp = kiln_npz_get(z, member);
            double err = 0, scale = 0;
            if (!exp) {
                snprintf(why, sizeof why, "%s has no '%s'", io, member);
                pass = 0;
                break;
            }
            pass = compare(y[o], exp, &err, &scale, w, sizeof w);
            if (!pass)
                snprintf(why, sizeof why, "sizes %s: %s: %s", sizes[b], member, w);
            printf("    %s %s at %s: max |err| %.3g, scale %.4g\n", name,
                   kiln_model_output_name(m, o), sizes[b], err, scale);
        }
        for (int o = 0; o < 8; o++)
            kiln_ndarray_free(y[o]);
        kiln_ndarray_free(ins[0]);
        kiln_ndarray_free(ins[1]);
    }
    for (int b = 0; pass && b < g_dynamic[k].nsizes; b++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", b ? ", " : "", sizes[b]);
    if (pass)
        printf("PASS %-22s one package (%s) at sizes %s\n", name,
               shapes ? shapes : "the model's dim_params", all);
    else
        printf("FAIL %-22s symbolic dims (%s): %s\n", name,
               shapes ? shapes : "the model's dim_params", why);
    fflush(stdout);
    kiln_model_free(m);
    kiln_graph_free(g);
    kiln_npz_free(z);
    remove(pkg);
    return pass ? 0 : 1;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NAMEs of DIR/NAME.onnx with a DIR/NAME_io.npz, sorted. */
static int list_models(const char *dir, char **names, int cap) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".onnx") != 0)
            continue;
        char io[4096];
        snprintf(io, sizeof io, "%s/%.*s_io.npz", dir, (int)(len - 5), e->d_name);
        if (access(io, R_OK) != 0)
            continue;
        names[n] = malloc(len - 4);
        memcpy(names[n], e->d_name, len - 5);
        names[n][len - 5] = '\0';
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: %s [--target T] MODEL_DIR [MODEL ...]\n", argv[0]);
        return 2;
    }
    if (argc > 3 && !strcmp(argv[1], "--target")) {
        g_target = argv[2];
        argv += 2;
        argc -= 2;
    }
    const char *dir = argv[1];
    char *names[MAX_MODELS];
    int n;
    if (argc > 2) {
        n = 0;
        for (int i = 2; i < argc && n < MAX_MODELS; i++)
            names[n++] = strdup(argv[i]);
    } else if ((n = list_models(dir, names, MAX_MODELS)) < 0) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], dir);
        return 2;
    }
    if (n == 0) {
        fprintf(stderr, "%s: no NAME.onnx with a NAME_io.npz in %s\n", argv[0], dir);
        return 2;
    }
    printf("e2e: %d models in %s; tolerance |got - exp| <= %g |exp| + %g max|exp|; %d threads\n", n,
           dir, RTOL, ATOL_OF_SCALE, kiln_num_threads());
    fflush(stdout);
    int passed = 0, no_fork = getenv("KILN_E2E_NO_FORK") && atoi(getenv("KILN_E2E_NO_FORK"));
    for (int i = 0; i < n; i++) {
        fflush(stdout);
        pid_t pid = no_fork ? -1 : fork();
        if (pid == 0)
            exit(run_model(dir, names[i])); /* exit, not _exit: LeakSanitizer runs */
        int status = 0;
        if (pid < 0) {
            status = run_model(dir, names[i]) ? 1 << 8 : 0; /* no fork: run here */
        } else if (waitpid(pid, &status, 0) < 0) {
            status = 1 << 8;
        }
        if (WIFSIGNALED(status))
            printf("FAIL %-22s crashed: signal %d\n", names[i], WTERMSIG(status));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            passed++;
        fflush(stdout);
        free(names[i]);
    }
    /* the dynamic-batch runs, of the models chosen */
    int ndyn = 0;
    for (int k = 0; k < (int)(sizeof g_dynamic / sizeof g_dynamic[0]); k++) {
        int chosen = argc <= 2 && !g_target; /* (a backend takes static shapes only) */
        for (int i = 2; i < argc; i++)
            chosen |= !strcmp(argv[i], g_dynamic[k].name);
        if (!chosen)
            continue;
        ndyn++;
        fflush(stdout);
        pid_t pid = no_fork ? -1 : fork();
        if (pid == 0)
            exit(run_dynamic(dir, k));
        int status = 0;
        if (pid < 0)
            status = run_dynamic(dir, k) ? 1 << 8 : 0;
        else if (waitpid(pid, &status, 0) < 0)
            status = 1 << 8;
        if (WIFSIGNALED(status))
            printf("FAIL %-22s symbolic dims: crashed: signal %d\n", g_dynamic[k].name,
                   WTERMSIG(status));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            passed++;
    }
    printf("e2e: %d passed, %d failed\n", passed, n + ndyn - passed);
    return passed == n + ndyn ? 0 : 1;
}
