/* kiln_inspect.c: `kiln inspect`. A package (model.tar) needs only the
 * runtime: its inputs, outputs, kernels, target and verified members, read
 * without loading mod.so (kiln_package_inspect), so inspecting runs none of
 * the package's code and works for a package built for another machine. A model (.onnx) needs the
 * compiler's importer, which the runtime-only kiln (KILN_RUNTIME_ONLY, the
 * cross build for a board) does not have; it says so. */
#include <stdio.h>
#include <string.h>

#include "kiln/runtime.h"
#include "kiln_run.h"
#ifndef KILN_RUNTIME_ONLY
#include "kiln_compile.h"
#endif

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void print_tensor(const kiln_tensor_desc *t) {
    printf("  %s: %s[", t->name, kiln_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) {
        if (t->dim_expr[d])
            printf("%s%s", d ? ", " : "", t->dim_expr[d]);
        else
            printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    }
    printf("]\n");
}

/* The functions listed in mod.so's metadata text ("func NAME NARGS NVARS"). */
static void print_functions(const char *meta) {
    if (!meta) {
        printf("functions: not found in mod.so's symbol table\n");
        return;
    }
    int n = 0;
    for (const char *l = meta; (l = strstr(l, "func ")) != NULL; l += 5)
        n += l == meta || l[-1] == '\n';
    printf("functions (%d, from mod.so's kiln_module_meta):\n", n);
    for (const char *l = meta; (l = strstr(l, "func ")) != NULL; l += 5)
        if (l == meta || l[-1] == '\n') {
            int len = (int)strcspn(l + 5, " \n");
            printf("  %.*s\n", len, l + 5);
        }
}

/* A package is read without loading mod.so: none of its code runs. */
static int inspect_package(const char *path) {
    kiln_package_info *p = kiln_package_inspect(path);
    if (!p) {
        fprintf(stderr, "kiln inspect: %s\n", kiln_last_error());
        return 1;
    }
    printf("package %s\ninputs:\n", path);
    for (int i = 0; i < kiln_package_info_num_inputs(p); i++)
        print_tensor(kiln_package_info_input(p, i));
    printf("outputs:\n");
    for (int i = 0; i < kiln_package_info_num_outputs(p); i++)
        print_tensor(kiln_package_info_output(p, i));
    int nk = kiln_package_info_num_kernels(p);
    printf("kernels (%d calls per run):\n", nk);
    for (int k = 0; k < nk; k++) {
        const char *b = kiln_package_info_kernel_backend(p, k);
        printf("  %-40s %s%s%s%s\n", kiln_package_info_kernel_name(p, k),
               kiln_package_info_kernel_func(p, k), strcmp(b, "kiln") ? "  [" : "",
               strcmp(b, "kiln") ? b : "", strcmp(b, "kiln") ? "]" : "");
    }
    /* what went where: calls and graph ops per compiler (kiln/byoc.h) */
    printf("placement:\n");
    for (int k = 0; k < nk; k++) {
        const char *b = kiln_package_info_kernel_backend(p, k);
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = !strcmp(kiln_package_info_kernel_backend(p, j), b);
        if (seen)
            continue;
        int calls = 0, ops = 0, known = 1;
        for (int j = k; j < nk; j++)
            if (!strcmp(kiln_package_info_kernel_backend(p, j), b)) {
                calls++;
                int o = kiln_package_info_kernel_ops(p, j);
                known &= o >= 0;
                ops += o > 0 ? o : 0;
            }
        if (known)
            printf("  %-6s %d call%s, %d op%s\n", b, calls, calls == 1 ? "" : "s", ops,
                   ops == 1 ? "" : "s");
        else
            printf("  %-6s %d call%s\n", b, calls, calls == 1 ? "" : "s");
    }
    print_functions(kiln_package_info_functions(p));
    const char *target = kiln_package_info_target(p);
    printf("target: %s\n", target ? target : "(not recorded)");
    printf("package format %d, module ABI %d; members (manifest verified):\n",
           KILN_PACKAGE_FORMAT_VERSION, kiln_package_info_abi(p));
    for (int i = 0; i < kiln_package_info_num_members(p); i++) {
        const char *name, *sha;
        int64_t size;
        if (kiln_package_info_member(p, i, &name, &size, &sha))
            printf("  %-10s %12lld bytes  sha256 %s\n", name, (long long)size, sha);
    }
    kiln_package_info_free(p);
    return 0;
}

int kiln_cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *shapes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kiln inspect MODEL.onnx|MODEL.tflite|model.tar [--input-shapes S]\n"
                   "                    [--tflite-kernels xnnpack|reference]\n\n"
                   "For a model: its graph IR (typed where the shapes allow), inputs, outputs\n"
                   "and op counts (a TFLite model as kiln compile imports it with the same\n"
                   "--tflite-kernels). For a package: its inputs, outputs, kernels, target and\n"
                   "members, read without loading (running) any of its code.\n");
            return 0;
        } else if (!strcmp(argv[i], "--input-shapes")) {
            if (i + 1 >= argc)
                return kiln_bad_arg("inspect", "%s needs a value", argv[i]);
            shapes = argv[++i];
        } else if (!strcmp(argv[i], "--tflite-kernels")) {
            if (i + 1 >= argc)
                return kiln_bad_arg("inspect", "%s needs a value", argv[i]);
#ifndef KILN_RUNTIME_ONLY
            if (kiln_set_tflite_kernels(argv[i + 1]))
                return kiln_bad_arg("inspect", "--tflite-kernels '%s' is not xnnpack or reference",
                                    argv[i + 1]);
#endif
            i++;
        } else if (argv[i][0] == '-') {
            return kiln_bad_arg("inspect", "unknown option '%s'", argv[i]);
        } else if (path) {
            return kiln_bad_arg("inspect", "more than one file given ('%s')", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return kiln_bad_arg("inspect", "%s", "no model or package given");
    if (ends_with(path, ".tar"))
        return inspect_package(path);
#ifdef KILN_RUNTIME_ONLY
    (void)shapes;
    fprintf(stderr,
            "kiln inspect: %s: this kiln is the runtime-only build, which inspects packages\n"
            "(.tar) but not models; inspect the model with a full kiln\n",
            path);
    return 1;
#else
    return kiln_inspect_model(path, shapes);
#endif
}
