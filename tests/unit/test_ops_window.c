/* test_ops_window.c: the convolutions and pools of 3-D windows, the
 * transposed convolutions, Lp pooling and max pooling with its indices
 * (src/ops/conv.c, pool.c) past what the node tests reach (the ONNX ones,
 * and kiln's own in tests/data/conv_nodes, which check the values): the
 * relations' errors for bad ranks, layouts, attributes and channel counts,
 * with overflowing sizes among them; and MaxUnpool's flat index out of
 * range when the kernel runs (KILN_ERR_RANGE, never a write out of
 * bounds). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frontend/onnx_load.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"

/* A tensor type: dtype, rank, dims. */
typedef struct {
    kiln_dtype dt;
    int nd;
    int64_t d[6];
} ty;

#define F32(...)                                                                                   \
    {                                                                                              \
        KILN_FLOAT32, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {                        \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define I32(...)                                                                                   \
    {                                                                                              \
        KILN_INT32, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

/* op on variables of types ts fails to type, with msg in the error. */
static void expect_error(const char *op, const char *attrs, int nin, const ty *ts,
                         const char *msg) {
    kiln_graph *g = kiln_graph_new();
    int ids[2];
    for (int i = 0; i < nin; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "in%d", i);
        ids[i] = kiln_graph_var(g, nm, ts[i].dt, ts[i].nd, ts[i].d, NULL);
    }
    int c = kiln_graph_call(g, op, nin, ids, attrs, op);
    if (c >= 0) {
        kiln_graph_set_outputs(g, 1, &c, NULL);
        CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    }
    if (!strstr(kiln_last_error(), msg))
        fprintf(stderr, "%s (%s): %s\n", op, attrs ? attrs : "", kiln_last_error());
    CHECK_CONTAINS(kiln_last_error(), msg);
    kiln_clear_error();
    kiln_graph_free(g);
}

static void test_conv_errors(void) {
    const ty x4[2] = {F32(1, 4, 5, 5), F32(2, 4, 3, 3)},
             x5[2] = {F32(1, 4, 5, 5, 5), F32(2, 4, 3, 3, 3)};
    const ty xt[2] = {F32(1, 4, 5, 5), F32(4, 2, 3, 3)};
    expect_error("nn.conv3d", NULL, 2, x4, "data and weight must be 5-D (NCDHW, OIDHW)");
    expect_error("nn.conv3d", "strides=[1, 2]", 2, x5,
                 "attribute strides must have 1 or 3 values, has 2");
    expect_error("nn.conv3d", "padding=[1, 1, 1, 1]", 2, x5,
                 "attribute padding must have 1, 3 or 6 values, has 4");
    expect_error("nn.conv3d", "dilation=[0]", 2, x5, "attribute dilation must be >= 1");
    expect_error("nn.conv3d", "padding=[-1]", 2, x5, "padding must not be negative");
    expect_error("nn.conv3d", "padding=[9223372036854775807]", 2, x5, "padding is too large");
    expect_error("nn.conv3d", "groups=3", 2, x5, "groups=3 must divide input channels 4");
    const ty x5k[2] = {F32(1, 4, 5, 5, 5), F32(2, 4, 6, 3, 3)};
    expect_error("nn.conv3d", NULL, 2, x5k, "the kernel is larger than the padded input");
    /* transposed: weight [in, out / groups, ...] */
    expect_error("nn.conv2d_transpose", NULL, 2, x4, "weight has 2 input channels, data has 4");
    expect_error("nn.conv2d_transpose", "groups=3", 2, xt,
                 "groups=3 must divide the input channels 4");
    expect_error("nn.conv2d_transpose", "output_padding=[-1]", 2, xt,
                 "attribute output_padding must be >= 0");
    expect_error("nn.conv2d_transpose", "padding=[4, 0, 4, 0]", 2, xt,
                 "spatial dim 0: the output of 5 inputs, kernel 3");
    expect_error("nn.conv2d_transpose", "strides=[1, 4611686018427387904]", 2, xt,
                 "is empty or overflows");
    expect_error("nn.conv2d_transpose", "padding=[-9223372036854775807, 0, 2, 0]", 2, xt,
                 "is empty or overflows");
    expect_error("nn.conv3d_transpose", NULL, 2, xt, "data and weight must be 5-D (NCDHW, IODHW)");
    const ty mixed[2] = {F32(1, 4, 5, 5), I32(4, 2, 3, 3)};
    expect_error("nn.conv2d_transpose", NULL, 2, mixed, "data is float32 but weight is int32");
}

static void test_pool_errors(void) {
    const ty x4[1] = {F32(1, 2, 5, 5)}, x5[1] = {F32(1, 2, 5, 5, 5)}, i5[1] = {I32(1, 2, 5, 5, 5)};
    expect_error("nn.max_pool3d", "pool_size=[2]", 1, x4, "data must be 5-D NCDHW, got 4-D");
    expect_error("nn.max_pool3d", "pool_size=[2], layout=\"NCHW\"", 1, x5, "layout must be NCDHW");
    expect_error("nn.avg_pool3d", "pool_size=[2, 2]", 1, x5,
                 "attribute pool_size must have 1 or 3 values, has 2");
    expect_error("nn.avg_pool3d", "pool_size=[6]", 1, x5,
                 "the window is larger than the padded input");
    expect_error("nn.lp_pool3d", "pool_size=[2]", 1, i5,
                 "Lp pooling needs a float input, not int32");
    expect_error("nn.lp_pool2d", "pool_size=[2], p=0", 1, x4, "p = 0 is not at least 1");
    expect_error("nn.global_lp_pool2d", "p=-2", 1, x4, "p = -2 is not at least 1");
    expect_error("nn.max_pool2d_with_argmax", "pool_size=[2], storage_order=2", 1, x4,
                 "storage_order = 2 is not 0 (row major) or 1 (column major)");
    const ty blocked[1] = {F32(1, 1, 5, 5, 4)};
    expect_error("nn.max_pool2d_with_argmax", "pool_size=[2], layout=\"NCHW4c\"", 1, blocked,
                 "layout must be NCHW");
    expect_error("nn.max_pool3d_with_argmax", "pool_size=[2], strides=[0]", 1, x5,
                 "attribute strides must be >= 1");
}

/* MaxUnpool (tests/data/conv_nodes/test_maxunpool_3d) with one flat index
 * past the output: the run is KILN_ERR_RANGE; with the test's indices it
 * runs. */
static void test_unpool_index_range(void) {
    char dir[1024], path[1100], *names[2] = {0};
    snprintf(dir, sizeof dir, "%s/conv_nodes/test_maxunpool_3d", getenv("KILN_TEST_DATA"));
    kiln_ndarray *in[2];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        in[i] = onnx_load_tensor_file(path, &names[i]);
        CHECK(in[i] != NULL);
        if (!in[i])
            return;
    }
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    kiln_graph *g = kiln_onnx_import(path, NULL);
    CHECK(g != NULL);
    const char *pkg = test_tmp_path("unpool.tar");
    kiln_status st = g ? kiln_graph_compile(g, pkg, NULL) : KILN_ERR_INVALID;
    CHECK_EQ_INT(st, KILN_OK);
    kiln_executor *ex = st == KILN_OK ? kiln_executor_load(pkg) : NULL;
    CHECK(ex != NULL);
    int64_t *ix = kiln_ndarray_data(in[1]), n = kiln_ndarray_numel(in[1]);
    for (int bad = 0; ex && bad < 3; bad++) {
        /* the given indices, then one past the end, then a negative one
           beyond the count from the end */
        int64_t keep = ix[n - 1];
        ix[n - 1] = bad == 0 ? keep : bad == 1 ? 1 * 2 * 4 * 4 * 6 : -1000;
        for (int i = 0; i < 2; i++)
            CHECK_EQ_INT(kiln_executor_set_input(ex, names[i], in[i]), KILN_OK);
        st = kiln_executor_run(ex);
        if (st != (bad ? KILN_ERR_RANGE : KILN_OK))
            fprintf(stderr, "case %d: %s\n", bad, kiln_last_error());
        CHECK_EQ_INT(st, bad ? KILN_ERR_RANGE : KILN_OK);
        ix[n - 1] = keep;
    }
    kiln_executor_free(ex);
    kiln_graph_free(g);
    for (int i = 0; i < 2; i++) {
        kiln_ndarray_free(in[i]);
        free(names[i]);
    }
}

/* Integer average pooling sums in int32 (a window of uint8 200s does not
 * wrap) and rounds half away from zero, as TFLite's int8 AveragePool. */
static int64_t avg_of(const char *op, const char *attrs, kiln_dtype dt, const int64_t *d,
                      const int8_t *vals, int n, int k) {
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", dt, 4, d, NULL);
    int y = kiln_graph_call(g, op, 1, &x, attrs, "pool");
    kiln_graph_set_outputs(g, 1, &y, NULL);
    char pkg[4096];
    snprintf(pkg, sizeof pkg, "%s/int_avg_pool.tar",
             getenv("KILN_TEST_TMP") ? getenv("KILN_TEST_TMP") : "/tmp");
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_graph_free(g);
    kiln_executor *e = kiln_executor_load(pkg);
    kiln_ndarray *a = kiln_ndarray_empty(dt, 4, d);
    for (int i = 0; i < n; i++)
        ((int8_t *)kiln_ndarray_data(a))[i] = vals[i];
    int64_t r = -999;
    if (e && kiln_executor_set_input(e, "x", a) == KILN_OK && kiln_executor_run(e) == KILN_OK) {
        const kiln_ndarray *o = kiln_executor_output(e, 0);
        r = dt == KILN_UINT8 ? ((const uint8_t *)kiln_ndarray_data(o))[k]
                             : ((const int8_t *)kiln_ndarray_data(o))[k];
    }
    kiln_ndarray_free(a);
    kiln_executor_free(e);
    return r;
}

static void test_int_average_pool(void) {
    int64_t d[4] = {1, 1, 2, 2};
    int8_t v[16];
    memset(v, (int8_t)200, sizeof v);
    v[0] = (int8_t)201;
    v[1] = (int8_t)202; /* (201 + 202 + 200 + 200) / 4 = 200.75 */
    CHECK_EQ_INT(avg_of("nn.avg_pool2d", "pool_size=[2, 2]", KILN_UINT8, d, v, 4, 0), 201);
    int8_t w[4] = {-1, -2, 0, 1}; /* -2 / 4 = -0.5: away from zero */
    CHECK_EQ_INT(avg_of("nn.global_avg_pool2d", NULL, KILN_INT8, d, w, 4, 0), -1);
    int8_t z[4] = {-100, -100, -100, -100};
    CHECK_EQ_INT(avg_of("nn.avg_pool2d", "pool_size=[2, 2]", KILN_INT8, d, z, 4, 0), -100);
    int8_t h[4] = {1, 0, 0, 1}; /* 0.5 */
    CHECK_EQ_INT(avg_of("nn.global_avg_pool2d", NULL, KILN_INT8, d, h, 4, 0), 1);
}

TEST_MAIN(TEST(test_conv_errors), TEST(test_pool_errors), TEST(test_unpool_index_range),
          TEST(test_int_average_pool))
