/* kiln_compile.c: `kiln compile` (tvmc compile: an ONNX model to a package;
 * the target string goes to the library as it is) and the model half of
 * `kiln inspect` (the graph IR, inputs, outputs and op counts). */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kiln/ffi.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/plugin.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "kiln/tflite.h"
#include "kiln_cli.h"
#include "kiln_compile.h"
#include "kiln_run.h"

static void compile_usage(FILE *f) {
    fprintf(
        f,
        "usage: kiln compile MODEL.onnx|MODEL.tflite [-o model.tar] [--target T] [--input-shapes "
        "\"name:[1,3,224,224]\"]\n"
        "                    [--opt-level 0-3] [--dump-ir DIR] [--disabled-pass PASS] "
        "[--cross-compiler CC]\n"
        "                    [--plugin LIB.so|PLUGIN.py] [--pass NAME] [--winograd auto|off|2|4] "
        "[--time-passes] "
        "[--no-cache]\n"
        "                    [--tuning-records records.json] [--tflite-kernels "
        "xnnpack|reference]\n\n"
        "Compile an ONNX or TFLite model into a package: a tar of mod.so (kernels), mod.json (the\n"
        "execution plan) and mod.params (the weights, an .npz).\n\n"
        "  -o, --output PATH      the package to write (default: model.tar)\n"
        "  --target T             what to generate code for, as tvmc writes it (default:\n"
        "                         $KILN_TARGET, else this machine): llvm, cpu, c or host;\n"
        "                         -mcpu=NAME a CPU (haswell, skylake-avx512, znver4,\n"
        "                         x86-64-v3, cortex-a72, neoverse-n1, ...), -mattr=+f,-g\n"
        "                         features on or off (avx2, fma, avx512f, dotprod, ...),\n"
        "                         -mtriple=aarch64-linux-gnu another architecture, e.g.\n"
        "                         \"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72\"\n"
        "  --cross-compiler CC    the C compiler for the target (default: cc, or\n"
        "                         TRIPLE-gcc for another architecture)\n"
        "  --input-shapes S       input shapes, e.g. \"data:[1,3,224,224],mask:[1,128]\"; a\n"
        "                         name for a dim leaves it symbolic (\"data:[N,3,224,224]\":\n"
        "                         one package for any N)\n"
        "  --opt-level N          0-3 (default 3): 0 runs SimplifyInference only and builds\n"
        "                         one kernel per op; 1 adds DeadCodeElimination, FuseOps and\n"
        "                         ConcatViews (a concatenation's inputs written into its\n"
        "                         output's buffer: no copy);\n"
        "                         2 FoldConstant; 3 EliminateCommonSubexpr, SimplifyExpr (layer\n"
        "                         norms written out become nn.layer_norm) and AlterOpLayout\n"
        "                         (blocked NCHW[x]c convolutions, packed dense weights)\n"
        "  --tflite-kernels K     whose int8 results a quantized TFLite model gives: xnnpack\n"
        "                         (default; the interpreter's default delegate: float32\n"
        "                         requantization) or reference (TFLite's reference kernels\n"
        "                         and TFLite Micro: fixed-point requantization, docs/TFLITE.md)\n"
        "  --dump-ir DIR          write the graph IR after import and before/after each pass\n"
        "  --disabled-pass P      disable a graph pass by name (or a comma-separated list);\n"
        "                         may repeat\n"
        "  --winograd W           3x3 stride-1 convolutions by Winograd F(m x m, 3 x 3): auto\n"
        "                         (default) where the cost model says it pays, off, or 2 / 4\n"
        "                         (that tile for every one that qualifies)\n"
        "  --plugin LIB.so        load user ops, passes or backends from a plugin "
        "(kiln/plugin.h);\n"
        "                         a .py plugin runs under Python (python -m kiln, started\n"
        "                         for it): its @kiln.register_pass functions; may repeat\n"
        "  --pass NAME            run a user pass (a global function from graph to graph, that\n"
        "                         a plugin registers) before the built-in passes; may repeat\n"
        "  --time-passes          print the time of each phase on stderr: import, each graph\n"
        "                         pass, lowering, C rendering, the C compiler, link, package\n"
        "  --no-cache             neither use nor fill the kernel cache, $XDG_CACHE_HOME/kiln\n"
        "                         (~/.cache/kiln; also KILN_CACHE=0; docs/COMPILE_TIME.md)\n"
        "  --tuning-records F     build each kernel with its best config in F, records\n"
        "                         that `kiln tune` wrote for this target (others: default)\n"
        "  --help                 print this message\n\n"
        "On a terminal, a compile that takes more than a second shows its phase and\n"
        "progress on stderr.\n");
}

/* Check an --input-shapes value before the importer reads it (the
 * importer's own rules: kiln_onnx_check_input_shapes). Prints the error and
 * returns 2, or 0 when the value is well formed. */
static int check_shapes(const char *cmd, const char *spec) {
    if (kiln_onnx_check_input_shapes(spec) == KILN_OK)
        return 0;
    return kiln_bad_arg(cmd, "%s", kiln_last_error());
}

/* A .py plugin needs the Python package in this process: when it is not
 * (the plain kiln binary), run the same command line as `python -m kiln`,
 * which loads libkiln (this one: KILN_LIBRARY_PATH) and the plugin. */
static int run_under_python(const char *cmd, int argc, char **argv) {
    int py = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--plugin")) {
            size_t n = strlen(argv[i + 1]);
            py |= n > 3 && !strcmp(argv[i + 1] + n - 3, ".py");
        }
    kiln_func *loader = py ? kiln_func_get("kiln.plugin.load_python", 1) : NULL;
    if (!py || loader) {
        kiln_func_release(loader);
        return 0;
    }
    Dl_info info;
    if (dladdr((void *)kiln_version, &info) && info.dli_fname) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            setenv("KILN_LIBRARY_PATH", dir, 1);
        }
    }
#ifdef KILN_PYTHON_DIR
    /* the source tree's package, after any the user set */
    struct stat sb;
    if (stat(KILN_PYTHON_DIR "/kiln/__init__.py", &sb) == 0) {
        const char *old = getenv("PYTHONPATH");
        char path[8192];
        snprintf(path, sizeof path, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "",
                 KILN_PYTHON_DIR);
        setenv("PYTHONPATH", path, 1);
    }
#endif
    const char *python = getenv("KILN_PYTHON");
    if (!python || !*python)
        python = "python3";
    char **args = calloc((size_t)kiln_cli_argc + 3, sizeof *args);
    if (!args)
        return 1;
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = "kiln";
    for (int i = 1; i < kiln_cli_argc; i++)
        args[i + 2] = kiln_cli_argv[i];
    fflush(NULL);
    execvp(python, args);
    fprintf(stderr, "kiln %s: a .py plugin runs under Python, and '%s' could not be started: %s\n",
            cmd, python, strerror(errno));
    free(args);
    return 1;
}

int kiln_load_plugins(const char *cmd, int argc, char **argv) {
    if (run_under_python(cmd, argc, argv))
        return 1;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--plugin") && kiln_plugin_load(argv[++i]) != KILN_OK) {
            fprintf(stderr, "kiln %s: %s\n", cmd, kiln_last_error());
            return 1;
        }
    return 0;
}

/* --tflite-kernels (one command per process): the TFLite import flags */
static int g_tflite_flags;

int kiln_set_tflite_kernels(const char *value) {
    if (strcmp(value, "xnnpack") && strcmp(value, "reference"))
        return -1;
    g_tflite_flags = !strcmp(value, "reference") ? KILN_TFLITE_REFERENCE_KERNELS : 0;
    return 0;
}

int kiln_build_arg(const char *cmd, int argc, char **argv, int *i, kiln_build_options *o,
                   const char **shapes, int *rc) {
    const char *a = argv[*i];
    int has_val = *i + 1 < argc;
    int takes = !strcmp(a, "--input-shapes") || !strcmp(a, "--opt-level") || !strcmp(a, "-O") ||
                !strcmp(a, "--disabled-pass") || !strcmp(a, "--cross-compiler") ||
                !strcmp(a, "--pass") || !strcmp(a, "--winograd") || !strcmp(a, "--target") ||
                !strcmp(a, "--plugin") || !strcmp(a, "--tflite-kernels");
    if (!takes && strcmp(a, "--no-cache"))
        return 0;
    if (takes && !has_val) {
        *rc = kiln_bad_arg(cmd, "%s needs a value", a);
        return -1;
    }
    if (!strcmp(a, "--no-cache")) {
        kiln_build_options_set(o, "cache", "0");
    } else if (!strcmp(a, "--input-shapes")) {
        *shapes = argv[++*i];
        if ((*rc = check_shapes(cmd, *shapes)) != 0)
            return -1;
    } else if (!strcmp(a, "--plugin")) {
        ++*i; /* loaded before the other options: kiln_load_plugins */
    } else if (!strcmp(a, "--tflite-kernels")) {
        const char *v = argv[++*i];
        if (kiln_set_tflite_kernels(v)) {
            *rc = kiln_bad_arg(cmd, "--tflite-kernels '%s' is not xnnpack or reference", v);
            return -1;
        }
    } else {
        /* the library parses and checks each value; a bad one is named */
        const char *key = !strcmp(a, "--disabled-pass")    ? "disabled-pass"
                          : !strcmp(a, "--pass")           ? "pass"
                          : !strcmp(a, "--cross-compiler") ? "cc"
                          : !strcmp(a, "--winograd")       ? "winograd"
                          : !strcmp(a, "--target")         ? "target"
                                                           : "opt-level";
        if (kiln_build_options_set(o, key, argv[++*i]) != KILN_OK) {
            *rc = kiln_bad_arg(cmd, "%s", kiln_last_error());
            return -1;
        }
    }
    return 1;
}

/* ---- progress and the time per phase ------------------------------------------ */

typedef struct {
    char name[96];
    double secs;
    char note[128];
} phase_row;

typedef struct {
    double t0, since; /* the compile's and the current phase's start */
    double drawn;     /* when the progress line was last drawn; 0: not shown */
    double after;     /* show it once the compile has run this long */
    int tty, rows_cap;
    char phase[96];
    phase_row *rows;
    int nrows;
} progress;

static void progress_clear(progress *p) {
    if (p->drawn > 0)
        fputs("\r\033[K", stderr);
    p->drawn = 0;
}

/* kiln_build_progress_fn: a phase's end is the next one's start; on a
 * terminal, after the first second, one line that says where it is. */
static void on_progress(void *user, const char *phase, int done, int total, const char *note) {
    progress *p = user;
    double t = kiln_run_now();
    int changed = strcmp(phase, p->phase) != 0;
    if (changed) {
        if (p->phase[0] && p->nrows < p->rows_cap) {
            phase_row *r = &p->rows[p->nrows++];
            snprintf(r->name, sizeof r->name, "%s", p->phase);
            r->secs = t - p->since;
        }
        snprintf(p->phase, sizeof p->phase, "%s", phase);
        p->since = t;
    }
    if (!strcmp(phase, "tuning records") && note) { /* what --tuning-records did: say it */
        progress_clear(p);
        fprintf(stderr, "kiln compile: %s\n", note);
    }
    if (note && p->nrows < p->rows_cap) /* kept for the phase's row */
        snprintf(p->rows[p->nrows].note, sizeof p->rows[p->nrows].note, "%s", note);
    if (!strcmp(phase, "done")) {
        progress_clear(p);
        return;
    }
    if (!p->tty || t - p->t0 < p->after || (!changed && t - p->drawn < 0.1))
        return;
    char count[48] = "";
    if (total > 0)
        snprintf(count, sizeof count, " %d/%d", done, total);
    fprintf(stderr, "\r\033[Kkiln compile: %s%s  (%.1f s)", phase, count, t - p->t0);
    fflush(stderr);
    p->drawn = t;
}

static void print_times(const progress *p) {
    double total = 0;
    fprintf(stderr, "kiln compile: time per phase (wall clock)\n");
    for (int i = 0; i < p->nrows; i++) {
        const phase_row *r = &p->rows[i];
        fprintf(stderr, "  %8.3f s  %-32s %s\n", r->secs, r->name, r->note);
        total += r->secs;
    }
    fprintf(stderr, "  %8.3f s  total\n", total);
}

static int write_ir(const char *dir, const char *name, kiln_graph *g) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = kiln_graph_print(g);
    FILE *f = text ? fopen(path, "w") : NULL;
    if (!f) {
        fprintf(stderr, "kiln compile: cannot write %s: %s\n", path,
                text ? strerror(errno) : kiln_last_error());
        free(text);
        return 0;
    }
    fputs(text, f);
    free(text);
    return fclose(f) == 0;
}

int kiln_cmd_compile(int argc, char **argv) {
    const char *model = NULL, *out = "model.tar", *shapes = NULL, *dump = NULL;
    kiln_build_options *o = kiln_build_options_new();
    int rc = 2, time_passes = 0, used;
    phase_row rows[64];
    memset(rows, 0, sizeof rows);
    /* KILN_PROGRESS_AFTER: seconds before the progress line shows (1) */
    const char *after = getenv("KILN_PROGRESS_AFTER");
    progress prog = {kiln_run_now(), 0, 0, after && *after ? atof(after) : 1.0, isatty(2), 64, "",
                     rows,           0};
    kiln_graph *g = NULL;
    if (kiln_load_plugins("compile", argc, argv)) {
        rc = 1;
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            compile_usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!has_val)
                goto missing;
            out = argv[++i];
        } else if ((used = kiln_build_arg("compile", argc, argv, &i, o, &shapes, &rc)) != 0) {
            if (used < 0)
                goto done;
        } else if (!strcmp(a, "--tuning-records")) {
            if (!has_val)
                goto missing;
            kiln_build_options_set(o, "tuning-records", argv[++i]);
        } else if (!strcmp(a, "--dump-ir")) {
            if (!has_val)
                goto missing;
            dump = argv[++i];
        } else if (!strcmp(a, "--time-passes")) {
            time_passes = 1;
        } else if (a[0] == '-') {
            rc = kiln_bad_arg("compile", "unknown option '%s'", a);
            goto done;
        } else if (model) {
            rc = kiln_bad_arg("compile", "more than one model given ('%s')", a);
            goto done;
        } else {
            model = a;
        }
        continue;
    missing:
        rc = kiln_bad_arg("compile", "%s needs a value", a);
        goto done;
    }
    if (!model) {
        rc = kiln_bad_arg("compile", "%s", "no model given");
        goto done;
    }
    rc = 1;
    if (dump) {
        if (mkdir(dump, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "kiln compile: cannot create %s: %s\n", dump, strerror(errno));
            goto done;
        }
        kiln_build_options_set(o, "dump-ir", dump);
    }
    kiln_build_options_set_progress(o, on_progress, &prog);
    prog.t0 = kiln_run_now();
    on_progress(&prog, "import", 0, 0, NULL);
    g = kiln_import_model(model, shapes);
    if (!g) {
        on_progress(&prog, "done", 0, 0, NULL);
        goto fail;
    }
    if (dump && !write_ir(dump, "import.txt", g))
        goto done;
    if (kiln_graph_compile(g, out, o) != KILN_OK)
        goto fail;
    if (time_passes)
        print_times(&prog);
    printf("kiln compile: wrote %s\n", out);
    rc = 0;
    goto done;
fail:
    progress_clear(&prog);
    fprintf(stderr, "kiln compile: %s\n", kiln_last_error());
done:
    kiln_build_options_free(o);
    kiln_graph_free(g);
    return rc;
}

kiln_graph *kiln_import_model(const char *path, const char *shapes) {
    unsigned char head[8] = {0};
    size_t n = 0, len = strlen(path);
    FILE *f = fopen(path, "rb");
    if (f) {
        n = fread(head, 1, sizeof head, f);
        fclose(f);
    }
    if (kiln_tflite_is_model(head, n) || (len > 7 && !strcmp(path + len - 7, ".tflite")))
        return kiln_tflite_import_flags(path, shapes, g_tflite_flags);
    return kiln_onnx_import(path, shapes);
}

int kiln_inspect_model(const char *path, const char *shapes) {
    if (shapes && check_shapes("inspect", shapes))
        return 2;
    kiln_graph *g = kiln_import_model(path, shapes);
    if (!g) {
        fprintf(stderr, "kiln inspect: %s\n", kiln_last_error());
        return 1;
    }
    int typed = kiln_graph_infer_types(g) == KILN_OK;
    char *text = kiln_graph_print(g);
    printf("%s\n", text ? text : "");
    free(text);
    if (!typed)
        printf("(types could not all be inferred: %s)\n", kiln_last_error());
    char *counts = kiln_graph_op_counts(g);
    printf("%s", counts ? counts : "");
    free(counts);
    kiln_graph_free(g);
    return 0;
}
