/* test_plugin.c: a user op from a plugin .so (examples/plugin_cumsum.c)
 * is used in a hand-built graph, type-checks, compiles and runs; and the
 * registration and loading errors are clear. Linked with the shared
 * libkiln, as a user program is, so the plugin and the program share one
 * op registry. */
#include "check.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/plugin.h"
#include "kiln/schedule.h"

static void test_cumsum_plugin(void) {
    const char *so = getenv("KILN_PLUGIN_CUMSUM");
    CHECK(so != NULL);
    if (!so) return;
    CHECK_EQ_INT(kiln_plugin_load(so), KILN_OK);
    /* loading twice registers the name twice: an error */
    CHECK(kiln_plugin_load(so) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "already registered");
    kiln_graph *g = kiln_graph_new();
    int64_t dims[2] = {3, 5};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, NULL);
    int c1 = kiln_graph_call(g, "contrib.cumsum", 1, &x, "axis=1", "cs");
    int c2 = kiln_graph_call(g, "contrib.cumsum", 1, &x, "axis=0, exclusive=1", "cs_ex");
    CHECK(c1 >= 0 && c2 >= 0);
    int bad = kiln_graph_call(g, "contrib.cumsum", 1, &x, "axis=7", "bad");
    CHECK(bad >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 'bad' (contrib.cumsum)");
    CHECK_CONTAINS(kiln_last_error(), "axis is out of range");
    kiln_graph_free(g);
    g = kiln_graph_new();
    x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, NULL);
    c1 = kiln_graph_call(g, "contrib.cumsum", 1, &x, "axis=1", "cs");
    c2 = kiln_graph_call(g, "contrib.cumsum", 1, &x, "axis=0, exclusive=1", "cs_ex");
    int outs[2] = {c1, c2};
    kiln_graph_set_outputs(g, 2, outs, NULL);
    char *text = kiln_graph_print(g);
    CHECK_CONTAINS(text, "contrib.cumsum(%x, axis=1)");
    free(text);
    char pkg[1024];
    snprintf(pkg, sizeof pkg, "%s/cumsum.tar", getenv("KILN_TEST_TMP"));
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex != NULL);
    if (ex) {
        kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 2, dims);
        float *p = kiln_ndarray_data(in);
        for (int i = 0; i < 15; i++) p[i] = (float)(i + 1);
        CHECK_EQ_INT(kiln_executor_set_input(ex, "x", in), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
        const float *a = kiln_ndarray_data(kiln_executor_output(ex, 0));
        const float *b = kiln_ndarray_data(kiln_executor_output(ex, 1));
        int wrong = 0;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 5; c++) {
                float inc = 0, exc = 0;
                for (int k = 0; k <= c; k++) inc += p[r * 5 + k];
                for (int k = 0; k < r; k++) exc += p[k * 5 + c];
                wrong += a[r * 5 + c] != inc || b[r * 5 + c] != exc;
            }
        CHECK_EQ_INT(wrong, 0);
        kiln_ndarray_free(in);
        kiln_executor_free(ex);
    }
    kiln_graph_free(g);
    /* an ONNX node of that op type imports as the plugin op */
    char onnx[1024];
    snprintf(onnx, sizeof onnx, "%s/custom_cumsum.onnx", getenv("KILN_TEST_DATA"));
    g = kiln_onnx_import(onnx, NULL);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    text = kiln_graph_print(g);
    CHECK_CONTAINS(text, "contrib.cumsum(%x, axis=1, exclusive=0)");
    free(text);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_graph_free(g);
}

static kiln_status rel_none(kiln_op_call *c) { return KILN_OK; }
static kiln_tensor *compute_none(kiln_ctx *ctx, const kiln_op_call *c, kiln_tensor *const *in) {
    return NULL;
}

static void test_register_errors(void) {
    kiln_op_spec s = {"user.noop", 1, 1, "alpha:float=0.5, mode:str=\"a\"", rel_none, compute_none,
                      KILN_OP_ELEMWISE, "does nothing"};
    CHECK_EQ_INT(kiln_op_register(&s), KILN_OK);
    CHECK(kiln_op_register(&s) != KILN_OK);
    kiln_op_spec bad = s;
    bad.name = "user.bad_schema";
    bad.attrs = "alpha:complex";
    CHECK(kiln_op_register(&bad) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "kind int, float, ints, floats or str");
    bad.attrs = "alpha:int=\"text\"";
    CHECK(kiln_op_register(&bad) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "does not parse");
    bad.attrs = NULL;
    bad.relation = NULL;
    CHECK(kiln_op_register(&bad) != KILN_OK);
    /* a relation that sets no type is reported */
    kiln_graph *g = kiln_graph_new();
    int64_t d = 4;
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, &d, NULL);
    CHECK(kiln_graph_call(g, "user.noop", 1, &x, "alpha=2", "n") >= 0);
    CHECK(kiln_graph_call(g, "user.noop", 1, &x, "beta=2", "n") < 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no output type");
    kiln_graph_free(g);
    CHECK(kiln_plugin_load("/nonexistent/libnothing.so") != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent/libnothing.so");
}

TEST_MAIN(TEST(test_cumsum_plugin), TEST(test_register_errors))
