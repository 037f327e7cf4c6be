/* graph_util.h: compiling and running a graph in tests. */
#ifndef KILN_GRAPH_UTIL_H
#define KILN_GRAPH_UTIL_H

#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

/* Compile g with o (may be NULL) into a package in the test folder, run it
 * on xs (the graph's inputs in order) and return a copy of output 0, or
 * NULL (printing the error). If non-NULL, *nkernels gets the kernel count
 * and funcs the kernels' function names, space-separated. */
static inline kiln_ndarray *gu_compile_run(kiln_graph *g, const kiln_build_options *o, int nin,
                                           const kiln_ndarray *const *xs, int *nkernels,
                                           char *funcs, size_t cap) {
    char name[64]; /* one per process: tests run in parallel */
    snprintf(name, sizeof name, "graph_util_%d.tar", (int)getpid());
    const char *pkg = test_tmp_path(name);
    if (kiln_graph_compile(g, pkg, o) != KILN_OK) {
        fprintf(stderr, "compile: %s\n", kiln_last_error());
        return NULL;
    }
    kiln_executor *ex = kiln_executor_load(pkg);
    if (!ex) {
        fprintf(stderr, "load: %s\n", kiln_last_error());
        return NULL;
    }
    if (nkernels)
        *nkernels = kiln_executor_num_kernels(ex);
    if (funcs && cap) {
        funcs[0] = 0;
        for (int k = 0; k < kiln_executor_num_kernels(ex); k++) {
            strncat(funcs, kiln_executor_kernel_func(ex, k), cap - strlen(funcs) - 1);
            if (strlen(funcs) + 1 < cap)
                strcat(funcs, " ");
        }
    }
    kiln_ndarray *r = NULL;
    int ok = 1;
    for (int i = 0; i < nin && ok; i++)
        ok = kiln_executor_set_input(ex, kiln_executor_input_name(ex, i), xs[i]) == KILN_OK;
    if (ok && kiln_executor_run(ex) == KILN_OK) {
        const kiln_ndarray *o0 = kiln_executor_output(ex, 0);
        int64_t sh[KILN_MAX_NDIM];
        for (int d = 0; d < kiln_ndarray_ndim(o0); d++)
            sh[d] = kiln_ndarray_dim(o0, d);
        r = kiln_ndarray_empty(kiln_ndarray_dtype(o0), kiln_ndarray_ndim(o0), sh);
        if (r)
            kiln_ndarray_copy(r, o0);
    } else {
        fprintf(stderr, "run: %s\n", kiln_last_error());
    }
    kiln_executor_free(ex);
    return r;
}

/* g (freed) compiled under the default schedule or (naive) the naive one
 * into the package pkg in the test folder, and loaded; NULL (checked, the
 * error printed) if that failed. */
static inline kiln_model *gu_compile_load(kiln_graph *g, int naive, const char *pkg) {
    kiln_build_options *o = kiln_build_options_new();
    if (naive)
        CHECK_EQ_INT(kiln_build_options_set(o, "schedule", "naive"), KILN_OK);
    kiln_status st = kiln_graph_compile(g, test_tmp_path(pkg), o);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    if (st) {
        fprintf(stderr, "compile: %s\n", kiln_last_error());
        return NULL;
    }
    kiln_model *m = kiln_model_load(test_tmp_path(pkg));
    CHECK(m != NULL);
    return m;
}

/* CHECK that node id of g (freed; -1: the call was refused) type-checks
 * as g's output, or (want non-NULL) fails with an error containing want. */
static inline void gu_expect_infer(kiln_graph *g, int id, const char *what, const char *want) {
    kiln_status st = id < 0 ? KILN_ERR_INVALID : kiln_graph_set_outputs(g, 1, &id, NULL);
    if (!st)
        st = kiln_graph_infer_types(g);
    if (want) {
        CHECK(st != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), want);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "%s: %s\n", what, kiln_last_error());
    }
    kiln_graph_free(g);
}

#endif
