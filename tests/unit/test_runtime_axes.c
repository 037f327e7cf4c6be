/* test_runtime_axes.c: ONNX ReduceSum's axes and CumSum's axis as inputs
 * whose values are known only when the package runs (docs/DYNAMIC_SHAPES.md,
 * part 3). A one-node model is imported, compiled once (default and naive
 * schedules) and run at several axis values, each against a reference
 * computed here: ReduceSum through reduce_dims and its binders (keepdims 1
 * and 0, every dim reduced down to a scalar), CumSum picking a cumsum per
 * axis. Axes out of range or repeated fail the run, naming the binder; a
 * CumSum axis out of range is KILN_ERR_RANGE, at rank 1 too. The
 * reductions also take a symbolic batch (their rows' sym_dims). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "onnx_util.h"

/* ---- the models ---------------------------------------------------------------- */

static void set_dims(Onnx__TensorShapeProto__Dimension *dim, Onnx__TensorShapeProto__Dimension **dp,
                     int nd, const int64_t *v) {
    for (int d = 0; d < nd; d++) {
        Onnx__TensorShapeProto__Dimension z = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        dim[d] = z;
        dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dim[d].dim_value = v[d];
        dp[d] = &dim[d];
    }
}

/* y = op(x, a) at opset ver: x float[xd] (nx dims), a int64[na] (na < 0: a
 * scalar), with int attributes names[k] = vals[k]; written to file. */
static const char *one_node(const char *op, int ver, int nx, const int64_t *xd, int na, int nattr,
                            const char *const *names, const int64_t *vals, const char *file) {
    Onnx__AttributeProto at[4], *ats[4];
    for (int k = 0; k < nattr && k < 4; k++) {
        Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
        at[k] = a;
        at[k].name = (char *)names[k];
        at[k].has_type = 1;
        at[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at[k].has_i = 1;
        at[k].i = vals[k];
        ats[k] = &at[k];
    }
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    char *in[2] = {"x", "a"}, *out[1] = {"y"};
    node.name = "node";
    node.op_type = (char *)op;
    node.n_input = 2;
    node.input = in;
    node.n_output = 1;
    node.output = out;
    node.n_attribute = (size_t)nattr;
    node.attribute = ats;
    Onnx__TensorShapeProto__Dimension dim[2][KILN_MAX_NDIM], *dp[2][KILN_MAX_NDIM];
    Onnx__TensorShapeProto shape[2] = {ONNX__TENSOR_SHAPE_PROTO__INIT,
                                       ONNX__TENSOR_SHAPE_PROTO__INIT};
    Onnx__TypeProto__Tensor tt[2] = {ONNX__TYPE_PROTO__TENSOR__INIT,
                                     ONNX__TYPE_PROTO__TENSOR__INIT};
    Onnx__TypeProto type[2] = {ONNX__TYPE_PROTO__INIT, ONNX__TYPE_PROTO__INIT};
    Onnx__ValueInfoProto vi[2] = {ONNX__VALUE_INFO_PROTO__INIT, ONNX__VALUE_INFO_PROTO__INIT};
    Onnx__ValueInfoProto *inputs[2] = {&vi[0], &vi[1]};
    int64_t ad[1] = {na};
    for (int i = 0; i < 2; i++) {
        int nd = i == 0 ? nx : na < 0 ? 0 : 1;
        set_dims(dim[i], dp[i], nd, i == 0 ? xd : ad);
        shape[i].n_dim = (size_t)nd;
        shape[i].dim = dp[i];
        tt[i].has_elem_type = 1;
        tt[i].elem_type =
            i == 0 ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        tt[i].shape = &shape[i];
        type[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        type[i].tensor_type = &tt[i];
        vi[i].name = in[i];
        vi[i].type = &type[i];
    }
    Onnx__ValueInfoProto yv = ONNX__VALUE_INFO_PROTO__INIT, *outs[1] = {&yv};
    yv.name = "y";
    return ou_write_model(ver, &node, 0, NULL, 2, inputs, 1, outs, file);
}

/* The model at path imported and compiled (naive or the default schedule)
 * and loaded; NULL with the error printed. */
static kiln_model *build(const char *path, int naive, const char *pkg) {
    kiln_graph *g = kiln_onnx_import(path, NULL);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "import: %s\n", kiln_last_error());
        return NULL;
    }
    return gu_compile_load(g, naive, pkg);
}

/* x[i] = a small value that differs at every position and is exact in
 * float (sums stay exact too). */
static kiln_ndarray *make_x(int nd, const int64_t *xd) {
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, nd, xd);
    float *v = kiln_ndarray_data(x);
    for (int64_t i = 0; i < kiln_ndarray_numel(x); i++)
        v[i] = (float)((i * 5) % 11) - 4.0f;
    return x;
}

/* Run m on x and the axis values av (na of them; na < 0: a scalar); the
 * status. */
static kiln_status run(kiln_model *m, const kiln_ndarray *x, int na, const int64_t *av,
                       kiln_ndarray **y) {
    int64_t ad[1] = {na};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, na < 0 ? 0 : 1, ad);
    memcpy(kiln_ndarray_data(a), av, sizeof(int64_t) * (size_t)(na < 0 ? 1 : na));
    const kiln_ndarray *ins[2] = {x, a};
    *y = NULL;
    kiln_status st = kiln_model_run_alloc(m, ins, y, 0);
    kiln_ndarray_free(a);
    return st;
}

/* ---- ReduceSum ------------------------------------------------------------------- */

#define R 3
static const int64_t g_xd[R] = {2, 3, 4};

/* The reference: x summed over the axes (valid ones) with keepdims; its
 * dims into od (ond of them). */
static void reduce_ref(const float *x, int na, const int64_t *axes, int keep, float *out, int *ond,
                       int64_t *od) {
    int red[R] = {0};
    for (int k = 0; k < na; k++)
        red[axes[k] < 0 ? axes[k] + R : axes[k]] = 1;
    int64_t on = 1;
    *ond = 0;
    for (int d = 0; d < R; d++) {
        if (!red[d] || keep)
            od[(*ond)++] = red[d] ? 1 : g_xd[d];
        on *= red[d] ? 1 : g_xd[d];
    }
    for (int64_t o = 0; o < on; o++)
        out[o] = 0;
    for (int64_t i = 0; i < 24; i++) {
        int64_t ix[R] = {i / 12, i / 4 % 3, i % 4}, o = 0;
        for (int d = 0; d < R; d++)
            o = o * (red[d] ? 1 : g_xd[d]) + (red[d] ? 0 : ix[d]);
        out[o] += x[i];
    }
}

/* One run of ReduceSum over axes av (na values): equal to the reference, or
 * (bad) the run fails naming the binder. */
static void check_reduce(kiln_model *m, const kiln_ndarray *x, int keep, int na, const int64_t *av,
                         int bad) {
    kiln_ndarray *y;
    kiln_status st = run(m, x, na, av, &y);
    if (bad) {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "'node'");
        CHECK_CONTAINS(kiln_last_error(), "invalid");
        CHECK(y == NULL);
        return;
    }
    CHECK_EQ_INT(st, KILN_OK);
    if (st) {
        fprintf(stderr, "run: %s\n", kiln_last_error());
        return;
    }
    float want[24];
    int64_t od[R];
    int ond;
    reduce_ref(kiln_ndarray_data(x), na, av, keep, want, &ond, od);
    CHECK_EQ_INT(kiln_ndarray_ndim(y), ond);
    int64_t n = 1;
    for (int d = 0; d < ond && d < kiln_ndarray_ndim(y); d++) {
        CHECK_EQ_INT(kiln_ndarray_dim(y, d), od[d]);
        n *= od[d];
    }
    const float *v = kiln_ndarray_data(y);
    int wrong = 0;
    for (int64_t i = 0; i < n && kiln_ndarray_numel(y) == n; i++)
        wrong += v[i] != want[i];
    CHECK_EQ_INT(wrong, 0);
    kiln_ndarray_free(y);
}

static void test_reduce_sum_axes(void) {
    kiln_ndarray *x = make_x(R, g_xd);
    static const char *const names[1] = {"keepdims"};
    for (int naive = 0; naive < 2; naive++) {
        for (int keep = 0; keep < 2; keep++) {
            /* two axes */
            const int64_t kv[1] = {keep};
            kiln_model *m = build(one_node("ReduceSum", 13, R, g_xd, 2, 1, names, kv, "rs2.onnx"),
                                  naive, "rs2.tar");
            if (m) {
                check_reduce(m, x, keep, 2, (const int64_t[]){0, 2}, 0);
                check_reduce(m, x, keep, 2, (const int64_t[]){-1, 1}, 0);
                check_reduce(m, x, keep, 2, (const int64_t[]){1, 0}, 0);
                check_reduce(m, x, keep, 2, (const int64_t[]){1, -2}, 1); /* twice */
                check_reduce(m, x, keep, 2, (const int64_t[]){3, 0}, 1);  /* out of range */
                check_reduce(m, x, keep, 2, (const int64_t[]){0, -4}, 1);
                check_reduce(m, x, keep, 2, (const int64_t[]){2, -3}, 0); /* good again */
                kiln_model_free(m);
            }
            /* one axis, then every axis (without keepdims: a scalar) */
            m = build(one_node("ReduceSum", 13, R, g_xd, 1, 1, names, kv, "rs1.onnx"), naive,
                      "rs1.tar");
            if (m) {
                for (int64_t a = -3; a < 3; a++)
                    check_reduce(m, x, keep, 1, &a, 0);
                check_reduce(m, x, keep, 1, (const int64_t[]){INT64_MIN}, 1);
                kiln_model_free(m);
            }
            m = build(one_node("ReduceSum", 13, R, g_xd, 3, 1, names, kv, "rs3.onnx"), naive,
                      "rs3.tar");
            if (m) {
                check_reduce(m, x, keep, 3, (const int64_t[]){2, 0, 1}, 0);
                check_reduce(m, x, keep, 3, (const int64_t[]){-1, -2, -3}, 0);
                check_reduce(m, x, keep, 3, (const int64_t[]){0, 0, 1}, 1);
                kiln_model_free(m);
            }
        }
    }
    kiln_ndarray_free(x);
}

/* ---- CumSum ---------------------------------------------------------------------- */

/* The reference cumsum of x[xd] (nd dims) along axis (normalized). */
static void cumsum_ref(const float *x, int nd, const int64_t *xd, int axis, int excl, int rev,
                       float *out) {
    int64_t n = 1, stride = 1;
    for (int d = 0; d < nd; d++)
        n *= xd[d];
    for (int d = axis + 1; d < nd; d++)
        stride *= xd[d];
    int64_t len = xd[axis];
    for (int64_t i = 0; i < n; i++) {
        int64_t pos = i / stride % len, base = i - pos * stride;
        float s = 0;
        for (int64_t k = 0; k < len; k++) {
            int take = rev ? (excl ? k > pos : k >= pos) : (excl ? k < pos : k <= pos);
            if (take)
                s += x[base + k * stride];
        }
        out[i] = s;
    }
}

static void check_cumsum(kiln_model *m, const kiln_ndarray *x, int64_t axis, int excl, int rev) {
    int nd = kiln_ndarray_ndim(x);
    int64_t xd[KILN_MAX_NDIM];
    for (int d = 0; d < nd; d++)
        xd[d] = kiln_ndarray_dim(x, d);
    kiln_ndarray *y;
    kiln_status st = run(m, x, -1, &axis, &y);
    if (axis < -nd || axis >= nd) {
        if (st != KILN_ERR_RANGE)
            fprintf(stderr, "cumsum axis %lld of rank %d: status %d\n", (long long)axis, nd,
                    (int)st);
        CHECK_EQ_INT(st, KILN_ERR_RANGE);
        kiln_ndarray_free(y);
        return;
    }
    CHECK_EQ_INT(st, KILN_OK);
    if (st) {
        fprintf(stderr, "run: %s\n", kiln_last_error());
        return;
    }
    float want[64];
    cumsum_ref(kiln_ndarray_data(x), nd, xd, (int)(axis < 0 ? axis + nd : axis), excl, rev, want);
    const float *v = kiln_ndarray_data(y);
    int wrong = 0;
    for (int64_t i = 0; i < kiln_ndarray_numel(x); i++)
        wrong += v[i] != want[i];
    CHECK_EQ_INT(wrong, 0);
    kiln_ndarray_free(y);
}

static void test_cumsum_axis(void) {
    static const char *const names[2] = {"exclusive", "reverse"};
    static const int64_t dims2[2] = {3, 4}, dims1[1] = {5};
    for (int naive = 0; naive < 2; naive++) {
        for (int mode = 0; mode < 4; mode++) {
            int excl = mode & 1, rev = mode >> 1;
            const int64_t vals[2] = {excl, rev};
            for (int nd = 1; nd <= 2; nd++) {
                const int64_t *xd = nd == 2 ? dims2 : dims1;
                kiln_model *m = build(one_node("CumSum", 14, nd, xd, -1, 2, names, vals, "cs.onnx"),
                                      naive, "cs.tar");
                if (!m)
                    continue;
                kiln_ndarray *x = make_x(nd, xd);
                for (int64_t a = -nd - 1; a <= nd; a++) /* the ends are out of range */
                    check_cumsum(m, x, a, excl, rev);
                check_cumsum(m, x, nd - 1, excl, rev); /* fine after an error */
                kiln_ndarray_free(x);
                kiln_model_free(m);
            }
        }
    }
}

/* ---- a symbolic batch ------------------------------------------------------------ */

/* sum over dim 1 and mean over dim 0 (the batch) of x[n, 5], one package
 * at batch 1, 4 and 7. */
static void test_reduce_any_batch(void) {
    for (int naive = 0; naive < 2; naive++) {
        kiln_graph *g = kiln_graph_new();
        int64_t xd[2] = {-1, 5};
        const char *syms[2] = {"n", NULL};
        int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
        int outs[2] = {kiln_graph_call(g, "sum", 1, &x, "axis=[1]", "rows"),
                       kiln_graph_call(g, "mean", 1, &x, "axis=[0], keepdims=1", "cols")};
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
        kiln_build_options *o = kiln_build_options_new();
        if (naive)
            CHECK_EQ_INT(kiln_build_options_set(o, "schedule", "naive"), KILN_OK);
        kiln_status st = kiln_graph_compile(g, test_tmp_path("red_batch.tar"), o);
        kiln_build_options_free(o);
        kiln_graph_free(g);
        CHECK_EQ_INT(st, KILN_OK);
        kiln_model *m = st ? NULL : kiln_model_load(test_tmp_path("red_batch.tar"));
        if (!m) {
            fprintf(stderr, "%s\n", kiln_last_error());
            continue;
        }
        for (int64_t n = 1; n <= 7; n += 3) {
            int64_t dims[2] = {n, 5};
            kiln_ndarray *xv = make_x(2, dims), *y[2] = {NULL, NULL};
            const kiln_ndarray *ins[1] = {xv};
            CHECK_EQ_INT(kiln_model_run_alloc(m, ins, y, 0), KILN_OK);
            const float *v = kiln_ndarray_data(xv);
            int wrong = 0;
            for (int64_t i = 0; y[0] && i < n; i++) {
                float s = 0;
                for (int j = 0; j < 5; j++)
                    s += v[i * 5 + j];
                wrong += ((const float *)kiln_ndarray_data(y[0]))[i] != s;
            }
            for (int j = 0; y[1] && j < 5; j++) {
                float s = 0;
                for (int64_t i = 0; i < n; i++)
                    s += v[i * 5 + j];
                wrong += fabsf(((const float *)kiln_ndarray_data(y[1]))[j] - s / (float)n) > 1e-6f;
            }
            CHECK(y[0] && y[1] && kiln_ndarray_dim(y[0], 0) == n && kiln_ndarray_dim(y[1], 0) == 1);
            CHECK_EQ_INT(wrong, 0);
            kiln_ndarray_free(y[0]);
            kiln_ndarray_free(y[1]);
            kiln_ndarray_free(xv);
        }
        kiln_model_free(m);
    }
}

TEST_MAIN(TEST(test_reduce_sum_axes), TEST(test_cumsum_axis), TEST(test_reduce_any_batch))
