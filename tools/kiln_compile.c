/* kiln_compile.c: `kiln compile` (tvmc compile: an ONNX model to a package)
 * and `kiln inspect` (the graph IR, inputs, outputs and op counts of a
 * model, or the inputs, outputs and kernels of a package). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/plugin.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "kiln_compile.h"

static void compile_usage(FILE *f) {
    fprintf(f,
            "usage: kiln compile MODEL.onnx [-o model.tar] [--target cpu] [--input-shapes "
            "\"name:[1,3,224,224]\"]\n"
            "                    [--opt-level 0-3] [--dump-ir DIR] [--disabled-pass PASS] "
            "[--cross-compiler CC]\n"
            "                    [--plugin LIB.so] [--winograd auto|off|2|4]\n\n"
            "Compile an ONNX model into a package: a tar of mod.so (kernels), mod.json (the\n"
            "execution plan) and mod.params (the weights, an .npz).\n\n"
            "  -o, --output PATH      the package to write (default: model.tar)\n"
            "  --target T             cpu; llvm is accepted as a synonym so tvmc command lines\n"
            "                         work. -mcpu=NAME compiles for that CPU (-march=NAME)\n"
            "                         with its vector width (e.g. \"llvm -mcpu=skylake-avx512\",\n"
            "                         \"llvm -mcpu=haswell\"); -mattr=+avx512f or +avx2 set the\n"
            "                         width too; other options are ignored\n"
            "  --input-shapes S       concrete input shapes, e.g. \"data:[1,3,224,224],mask:[1,128]\"\n"
            "  --opt-level N          0-3 (default 3): 0 runs SimplifyInference only and builds\n"
            "                         one kernel per op; 1 adds DeadCodeElimination and FuseOps;\n"
            "                         2 FoldConstant; 3 EliminateCommonSubexpr, SimplifyExpr (layer\n"
            "                         norms written out become nn.layer_norm) and AlterOpLayout\n"
            "                         (blocked NCHW[x]c convolutions, packed dense weights)\n"
            "  --dump-ir DIR          write the graph IR after import and before/after each pass\n"
            "  --disabled-pass P      disable a graph pass by name (or a comma-separated list);\n"
            "                         may repeat\n"
            "  --cross-compiler CC    compile the kernels with CC (the package then runs on\n"
            "                         CC's target)\n"
            "  --winograd W           3x3 stride-1 convolutions by Winograd F(m x m, 3 x 3): auto\n"
            "                         (default) where the cost model says it pays, off, or 2 / 4\n"
            "                         (that tile for every one that qualifies)\n"
            "  --plugin LIB.so        load user ops from a plugin (kiln/plugin.h); may repeat\n"
            "  --help                 print this message\n");
}

static int bad_arg(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "kiln %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see 'kiln %s --help')\n", cmd);
    return 2;
}

/* The widest vector of an x86 CPU name as gcc and LLVM spell it: 512 for
 * AVX-512 parts, 256 for AVX2 ones, 0 if unknown. */
static int cpu_vector_bits(const char *cpu) {
    static const char *const avx512[] = {"skylake-avx512", "cascadelake", "cooperlake",
                                         "cannonlake", "icelake-client", "icelake-server",
                                         "tigerlake", "rocketlake", "sapphirerapids",
                                         "graniterapids", "emeraldrapids", "znver4", "znver5",
                                         "x86-64-v4", NULL};
    static const char *const avx2[] = {"haswell", "broadwell", "skylake", "alderlake",
                                       "raptorlake", "meteorlake", "znver1", "znver2",
                                       "znver3", "x86-64-v3", NULL};
    for (int i = 0; avx512[i]; i++)
        if (!strcmp(cpu, avx512[i])) return 512;
    for (int i = 0; avx2[i]; i++)
        if (!strcmp(cpu, avx2[i])) return 256;
    if (!strcmp(cpu, "x86-64") || !strcmp(cpu, "x86-64-v2") || !strcmp(cpu, "nehalem") ||
        !strcmp(cpu, "westmere") || !strcmp(cpu, "sandybridge") || !strcmp(cpu, "ivybridge"))
        return 128;
    return 0;
}

/* A tvmc target string, "llvm -mcpu=skylake-avx512 -mattr=+avx2,...": the
 * CPU becomes -march for the C compiler and sets the vector width (as does
 * an -mattr with +avx512f or +avx2); other options are ignored. Returns 0,
 * or 2 after a message for a bad string. */
static int apply_target(kiln_build_options *o, const char *t) {
    char cpu[128] = "", buf[512];
    int bits = 0;
    snprintf(buf, sizeof buf, "%s", t);
    char *save = NULL;
    char *kind = strtok_r(buf, " ", &save);
    if (!kind || (strcmp(kind, "cpu") && strcmp(kind, "llvm")))
        return bad_arg("compile", "target '%s' is not supported (cpu, or llvm as a synonym)", t);
    for (char *w = strtok_r(NULL, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (!strncmp(w, "-mcpu=", 6)) {
            snprintf(cpu, sizeof cpu, "%s", w + 6);
            for (const char *c = cpu; *c; c++)
                if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') ||
                      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
                    return bad_arg("compile", "bad -mcpu in target '%s'", t);
        } else if (!strncmp(w, "-mattr=", 7)) {
            if (strstr(w, "+avx512f")) bits = 512;
            else if (strstr(w, "+avx2") && bits < 256) bits = 256;
        }
    }
    if (*cpu) {
        char flags[256];
        snprintf(flags, sizeof flags, "-O3 -march=%s", cpu);
        if (kiln_build_options_set(o, "cflags", flags) != KILN_OK)
            return bad_arg("compile", "%s", kiln_last_error());
        if (!bits) bits = cpu_vector_bits(cpu);
    }
    if (bits) {
        char v[16];
        snprintf(v, sizeof v, "%d", bits);
        if (kiln_build_options_set(o, "vector-bits", v) != KILN_OK)
            return bad_arg("compile", "%s", kiln_last_error());
    }
    return 0;
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
    int rc = 2;
    kiln_graph *g = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            compile_usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!has_val) goto missing;
            out = argv[++i];
        } else if (!strcmp(a, "--target")) {
            if (!has_val) goto missing;
            if ((rc = apply_target(o, argv[++i])) != 0) goto done;
            rc = 2;
        } else if (!strcmp(a, "--input-shapes")) {
            if (!has_val) goto missing;
            shapes = argv[++i];
        } else if (!strcmp(a, "--opt-level") || !strcmp(a, "-O") || !strcmp(a, "--disabled-pass") ||
                   !strcmp(a, "--cross-compiler") || !strcmp(a, "--winograd")) {
            if (!has_val) goto missing;
            const char *key = !strcmp(a, "--disabled-pass")    ? "disabled-pass"
                              : !strcmp(a, "--cross-compiler") ? "cc"
                              : !strcmp(a, "--winograd")       ? "winograd"
                                                               : "opt-level";
            if (kiln_build_options_set(o, key, argv[++i]) != KILN_OK) {
                rc = bad_arg("compile", "%s", kiln_last_error());
                goto done;
            }
        } else if (!strcmp(a, "--dump-ir")) {
            if (!has_val) goto missing;
            dump = argv[++i];
        } else if (!strcmp(a, "--plugin")) {
            if (!has_val) goto missing;
            if (kiln_plugin_load(argv[++i]) != KILN_OK) {
                fprintf(stderr, "kiln compile: %s\n", kiln_last_error());
                rc = 1;
                goto done;
            }
        } else if (a[0] == '-') {
            rc = bad_arg("compile", "unknown option '%s'", a);
            goto done;
        } else if (model) {
            rc = bad_arg("compile", "more than one model given ('%s')", a);
            goto done;
        } else {
            model = a;
        }
        continue;
    missing:
        rc = bad_arg("compile", "%s needs a value", a);
        goto done;
    }
    if (!model) {
        rc = bad_arg("compile", "%s", "no model given");
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
    g = kiln_onnx_import(model, shapes);
    if (!g) goto fail;
    if (dump && !write_ir(dump, "import.txt", g)) goto done;
    if (kiln_graph_compile(g, out, o) != KILN_OK) goto fail;
    printf("kiln compile: wrote %s\n", out);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "kiln compile: %s\n", kiln_last_error());
done:
    kiln_build_options_free(o);
    kiln_graph_free(g);
    return rc;
}

/* ---- inspect -------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int inspect_package(const char *path) {
    kiln_executor *ex = kiln_executor_load(path);
    if (!ex) {
        fprintf(stderr, "kiln inspect: %s\n", kiln_last_error());
        return 1;
    }
    printf("package %s\ninputs:\n", path);
    for (int i = 0; i < kiln_executor_num_inputs(ex); i++) {
        printf("  %s: %s[", kiln_executor_input_name(ex, i),
               kiln_dtype_name(kiln_executor_input_dtype(ex, i)));
        for (int d = 0; d < kiln_executor_input_ndim(ex, i); d++)
            printf("%s%lld", d ? ", " : "", (long long)kiln_executor_input_dim(ex, i, d));
        printf("]\n");
    }
    printf("outputs:\n");
    for (int i = 0; i < kiln_executor_num_outputs(ex); i++) {
        const kiln_ndarray *o = kiln_executor_output(ex, i);
        printf("  %s: %s[", kiln_executor_output_name(ex, i), kiln_dtype_name(kiln_ndarray_dtype(o)));
        for (int d = 0; d < kiln_ndarray_ndim(o); d++)
            printf("%s%lld", d ? ", " : "", (long long)kiln_ndarray_dim(o, d));
        printf("]\n");
    }
    printf("kernels (%d calls per run):\n", kiln_executor_num_kernels(ex));
    for (int k = 0; k < kiln_executor_num_kernels(ex); k++)
        printf("  %-40s %s\n", kiln_executor_kernel_name(ex, k), kiln_executor_kernel_func(ex, k));
    kiln_executor_free(ex);
    return 0;
}

int kiln_cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *shapes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kiln inspect MODEL.onnx|model.tar [--input-shapes S]\n\n"
                   "For a model: its graph IR (typed where the shapes allow), inputs, outputs\n"
                   "and op counts. For a package: its inputs, outputs and kernels.\n");
            return 0;
        } else if (!strcmp(argv[i], "--input-shapes")) {
            if (i + 1 >= argc) return bad_arg("inspect", "%s needs a value", argv[i]);
            shapes = argv[++i];
        } else if (argv[i][0] == '-') {
            return bad_arg("inspect", "unknown option '%s'", argv[i]);
        } else if (path) {
            return bad_arg("inspect", "more than one file given ('%s')", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) return bad_arg("inspect", "%s", "no model or package given");
    if (ends_with(path, ".tar")) return inspect_package(path);
    kiln_graph *g = kiln_onnx_import(path, shapes);
    if (!g) {
        fprintf(stderr, "kiln inspect: %s\n", kiln_last_error());
        return 1;
    }
    int typed = kiln_graph_infer_types(g) == KILN_OK;
    char *text = kiln_graph_print(g);
    printf("%s\n", text ? text : "");
    free(text);
    if (!typed) printf("(types could not all be inferred: %s)\n", kiln_last_error());
    char *counts = kiln_graph_op_counts(g);
    printf("%s", counts ? counts : "");
    free(counts);
    kiln_graph_free(g);
    return 0;
}
