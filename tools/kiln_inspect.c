/* kiln_inspect.c: `kiln inspect`. A package (model.tar) needs only the
 * runtime: its inputs, outputs and kernels. A model (.onnx) needs the
 * compiler's importer, which the runtime-only kiln (KILN_RUNTIME_ONLY, the
 * cross build for a board) does not have; it says so. */
#include <stdio.h>
#include <string.h>

#include "kiln/runtime.h"
#include "kiln_run.h"
#ifndef KILN_RUNTIME_ONLY
#include "kiln_compile.h"
#endif

static int bad_arg(const char *fmt, const char *arg) {
    fprintf(stderr, "kiln inspect: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see 'kiln inspect --help')\n");
    return 2;
}

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
        printf("  %s: %s[", kiln_executor_output_name(ex, i),
               kiln_dtype_name(kiln_ndarray_dtype(o)));
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
            if (i + 1 >= argc)
                return bad_arg("%s needs a value", argv[i]);
            shapes = argv[++i];
        } else if (argv[i][0] == '-') {
            return bad_arg("unknown option '%s'", argv[i]);
        } else if (path) {
            return bad_arg("more than one file given ('%s')", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return bad_arg("%s", "no model or package given");
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
