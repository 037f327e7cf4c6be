/* test_shape_values.c: shape values (docs/DYNAMIC_SHAPES.md, part 2).
 * The graph tells what a shape computation over symbolic dims gives before
 * the package runs (ops_values: Shape -> Gather -> Concat -> Reshape), so
 * a reshape to [n, s, 2, 4] built from Shape(x) has that type, with no
 * binder, and meets a broadcast to the same computed shape; a binder's
 * `names` give its values as sizes the run checks. Each graph is compiled
 * under the default and the naive schedules and run at several sizes
 * against references computed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

static int int_const(kiln_graph *g, const char *name, int n, const int64_t *v) {
    int64_t len = n;
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, n < 0 ? 0 : 1, n < 0 ? NULL : &len);
    memcpy(kiln_ndarray_data(a), v, (size_t)(n < 0 ? 1 : n) * sizeof(int64_t));
    int id = kiln_graph_const(g, name, a);
    kiln_ndarray_free(a);
    return id;
}

/* Element k of shape_of(x) as a 1-element vector (ONNX's Gather then
 * Unsqueeze). */
static int dim_of(kiln_graph *g, int shape, int k, const char *name) {
    int64_t kv = k;
    int idx[2] = {shape, int_const(g, "", -1, &kv)};
    int t = kiln_graph_call(g, "take", 2, idx, "axis=0", NULL);
    return kiln_graph_call(g, "reshape", 1, &t, "newshape=[1]", name);
}

/* x: float32[n, s, 8]; dims = concat(dim 0 of x, dim 1 of x (through
 * arith that leaves it: * 1, + 0, max with 0), [2, 4]); y = reshape(x,
 * dims) + broadcast_to(bias[4], dims): both [n, s, 2, 4]. */
static kiln_graph *make_graph(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[3] = {-1, -1, 8}, two_four[2] = {2, 4}, one = 1, zero = 0;
    const char *syms[3] = {"n", "s", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, syms);
    int sh = kiln_graph_call(g, "shape_of", 1, &x, NULL, "shape");
    int d0 = dim_of(g, sh, 0, "d0"), d1 = dim_of(g, sh, 1, "d1");
    int a[2] = {d1, int_const(g, "one", -1, &one)};
    a[0] = kiln_graph_call(g, "multiply", 2, a, NULL, "times1");
    a[1] = int_const(g, "zero", -1, &zero);
    a[0] = kiln_graph_call(g, "add", 2, a, NULL, "plus0");
    a[0] = kiln_graph_call(g, "maximum", 2, a, NULL, "max0");
    int parts[3] = {d0, a[0], int_const(g, "tail", 2, two_four)};
    int dims = kiln_graph_call(g, "concatenate", 3, parts, "axis=0", "dims");
    int xr[2] = {x, dims};
    int r = kiln_graph_call(g, "reshape", 2, xr, NULL, "reshaped");
    kiln_ndarray *bias = kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){4});
    for (int k = 0; k < 4; k++)
        ((float *)kiln_ndarray_data(bias))[k] = (float)k * 0.5f;
    int bd[2] = {kiln_graph_const(g, "bias", bias), dims};
    kiln_ndarray_free(bias);
    int e = kiln_graph_call(g, "broadcast_to", 2, bd, NULL, "expanded");
    int re[2] = {r, e};
    int y = kiln_graph_call(g, "add", 2, re, NULL, "y");
    CHECK(y >= 0);
    if (y < 0)
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    return g;
}

static void test_exact_values(void) {
    kiln_graph *g = make_graph();
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char *text = kiln_graph_print(g);
    /* the computed dims are the input's own sizes: no binder, no new name */
    CHECK_CONTAINS(text, "Tensor[(n, s, 2, 4), float32]");
    CHECK(!strstr(text, "bind_dims"));
    free(text);
    kiln_graph_free(g);
    for (int naive = 0; naive < 2; naive++) {
        kiln_model *m =
            gu_compile_load(make_graph(), naive, naive ? "exact_naive.tar" : "exact.tar");
        if (!m)
            continue;
        CHECK_CONTAINS(kiln_model_input_dim_expr(m, 0, 1), "s");
        static const int64_t sizes[3][2] = {{1, 3}, {2, 5}, {3, 1}};
        for (int t = 0; t < 3; t++) {
            int64_t xd[3] = {sizes[t][0], sizes[t][1], 8}, count = xd[0] * xd[1] * 8;
            kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 3, xd);
            float *xv = kiln_ndarray_data(x);
            for (int64_t i = 0; i < count; i++)
                xv[i] = (float)(i % 11) - 4.0f;
            const kiln_ndarray *ins[1] = {x};
            kiln_ndarray *outs[1] = {NULL};
            CHECK_EQ_INT(kiln_model_run_alloc(m, ins, outs, 0), KILN_OK);
            if (outs[0]) {
                CHECK_EQ_INT(kiln_ndarray_ndim(outs[0]), 4);
                const kiln_ndarray *o = outs[0];
                CHECK(kiln_ndarray_dim(o, 0) == xd[0] && kiln_ndarray_dim(o, 1) == xd[1] &&
                      kiln_ndarray_dim(o, 2) == 2 && kiln_ndarray_dim(o, 3) == 4);
                const float *yv = kiln_ndarray_data(outs[0]);
                int bad = 0;
                for (int64_t i = 0; i < count; i++)
                    bad += yv[i] != xv[i] + (float)(i % 4) * 0.5f;
                CHECK_EQ_INT(bad, 0);
            }
            kiln_ndarray_free(outs[0]);
            kiln_ndarray_free(x);
        }
        kiln_model_free(m);
    }
}

/* dims = [dim 0 of x, 2 * dim 1 of x, 4]: the middle value is not a size
 * the graph has a name for (dims are names or constants), so reshape
 * cannot take the vector as it is; bind_dims(reshape_dims(x, dims),
 * names="n,,4") can: n and 4 are checked when the package runs, the middle
 * one is bound. With names="n,,3" every run fails at the binder's check. */
static kiln_graph *make_bound(const char *names, int direct) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[3] = {-1, -1, 8}, two = 2, four = 4;
    const char *syms[3] = {"n", "s", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, syms);
    int sh = kiln_graph_call(g, "shape_of", 1, &x, NULL, "shape");
    int m[2] = {dim_of(g, sh, 1, "d1"), int_const(g, "two", -1, &two)};
    int parts[3] = {dim_of(g, sh, 0, "d0"), kiln_graph_call(g, "multiply", 2, m, NULL, "twice"),
                    int_const(g, "four", 1, &four)};
    int dims = kiln_graph_call(g, "concatenate", 3, parts, "axis=0", "dims");
    int xr[2] = {x, dims};
    if (!direct) {
        xr[1] = kiln_graph_call(g, "reshape_dims", 2, xr, NULL, "rdims");
        char attrs[128];
        snprintf(attrs, sizeof attrs, "prefix=\"b\", names=\"%s\"", names);
        xr[1] = kiln_graph_call(g, "bind_dims", 1, &xr[1], attrs, "bind");
    }
    int r = kiln_graph_call(g, "reshape", 2, xr, NULL, "reshaped");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &r, NULL), KILN_OK);
    return g;
}

static void test_checked_names(void) {
    /* not exact: refused without a binder */
    static const struct {
        const char *names;
        int direct;
        const char *want;
    } bad_graphs[] = {
        {"", 1, "must be a constant or a bind_dims vector"},
        /* names that do not fit the vector */
        {"n,4", 0, "names must list one entry per value (3)"},
        {"n,-2,4", 0, "names must list one entry per value"},
        {"n,2x,4", 0, "names must list one entry per value"},
    };
    for (size_t k = 0; k < sizeof bad_graphs / sizeof bad_graphs[0]; k++) {
        kiln_graph *g = make_bound(bad_graphs[k].names, bad_graphs[k].direct);
        CHECK(kiln_graph_infer_types(g) != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), bad_graphs[k].want);
        kiln_graph_free(g);
    }
    for (int bad = 0; bad < 2; bad++)
        for (int naive = 0; naive < 2; naive++) {
            kiln_graph *gb = make_bound(bad ? "n,,3" : "n,,4", 0);
            CHECK_EQ_INT(kiln_graph_infer_types(gb), KILN_OK);
            char *text = kiln_graph_print(gb);
            CHECK_CONTAINS(text,
                           bad ? "Tensor[(n, b_1, 3), float32]" : "Tensor[(n, b_1, 4), float32]");
            free(text);
            kiln_model *mm = gu_compile_load(gb, naive,
                                             bad ? (naive ? "bound_bad_naive.tar" : "bound_bad.tar")
                                                 : (naive ? "bound_naive.tar" : "bound.tar"));
            if (!mm)
                continue;
            for (int64_t s = 1; s <= 3; s++) {
                int64_t xd[3] = {2, s, 8}, count = 16 * s;
                kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 3, xd);
                for (int64_t i = 0; i < count; i++)
                    ((float *)kiln_ndarray_data(x))[i] = (float)i;
                const kiln_ndarray *ins[1] = {x};
                kiln_ndarray *outs[1] = {NULL};
                kiln_status st = kiln_model_run_alloc(mm, ins, outs, 0);
                if (bad) {
                    CHECK_EQ_INT(st, KILN_ERR_INVALID);
                    CHECK_CONTAINS(kiln_last_error(), "'bind'");
                    CHECK_CONTAINS(kiln_last_error(), "computed in this run is 4, but the "
                                                      "compiled graph needs it to be 3");
                } else {
                    CHECK_EQ_INT(st, KILN_OK);
                    const kiln_ndarray *o = outs[0];
                    int ok = o && kiln_ndarray_dim(o, 0) == 2 && kiln_ndarray_dim(o, 1) == 2 * s &&
                             kiln_ndarray_dim(o, 2) == 4;
                    CHECK(ok);
                    int diff = 0;
                    for (int64_t i = 0; ok && i < count; i++)
                        diff += ((float *)kiln_ndarray_data(outs[0]))[i] != (float)i;
                    CHECK_EQ_INT(diff, 0);
                }
                kiln_ndarray_free(outs[0]);
                kiln_ndarray_free(x);
            }
            kiln_model_free(mm);
        }
}

/* The shape functions' values: reshape_dims resolves 0 and -1 over
 * symbolic dims where the element counts leave a constant or one variable
 * (x [n, s, 8] to [0, -1, 2, 4] is [n, s, 2, 4]; to [-1, 8] is not a dim:
 * n*s); squeeze_dims of a symbolic dim is only assumed. Checked through the
 * type reshape(x, v) gets with no binder, or the error when v is not exact. */
static void expect_reshape(const int64_t *shape, int n, const char *op, const char *want) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[3] = {-1, -1, 8};
    const char *syms[3] = {"n", "s", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, syms);
    int xs[2] = {x, int_const(g, "shape", n, shape)};
    int xr[2] = {x, kiln_graph_call(g, op, 2, xs, NULL, "dims")};
    int r = kiln_graph_call(g, "reshape", 2, xr, NULL, "r");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &r, NULL), KILN_OK);
    kiln_status st = kiln_graph_infer_types(g);
    if (!strncmp(want, "error:", 6)) {
        CHECK(st != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), want + 6);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        char *text = st ? NULL : kiln_graph_print(g);
        if (text)
            CHECK_CONTAINS(text, want);
        free(text);
    }
    kiln_graph_free(g);
}

static void test_shape_function_values(void) {
    const char *not_exact = "error:must be a constant or a bind_dims vector";
    expect_reshape((const int64_t[]){0, -1, 2, 4}, 4, "reshape_dims",
                   "Tensor[(n, s, 2, 4), float32]");
    expect_reshape((const int64_t[]){0, 0, 2, -1}, 4, "reshape_dims",
                   "Tensor[(n, s, 2, 4), float32]");
    expect_reshape((const int64_t[]){0, 0, -1}, 3, "reshape_dims", "Tensor[(n, s, 8), float32]");
    expect_reshape((const int64_t[]){-1, 8}, 2, "reshape_dims", not_exact);
    expect_reshape((const int64_t[]){0, 0, 4}, 3, "reshape_dims", not_exact); /* 8 != 4 */
    expect_reshape((const int64_t[]){0, 0, -1, -1}, 4, "reshape_dims", not_exact);
    /* unsqueeze_dims at a constant axis moves the symbolic dims */
    expect_reshape((const int64_t[]){0}, 1, "unsqueeze_dims", "Tensor[(1, n, s, 8), float32]");
    expect_reshape((const int64_t[]){-2}, 1, "unsqueeze_dims", "Tensor[(n, s, 1, 8), float32]");
    /* squeezing n, which must be 1 when it runs: assumed, so a binder is needed */
    expect_reshape((const int64_t[]){0}, 1, "squeeze_dims", not_exact);
}

TEST_MAIN(TEST(test_exact_values), TEST(test_checked_names), TEST(test_shape_function_values))
