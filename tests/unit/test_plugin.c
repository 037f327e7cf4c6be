/* test_plugin.c: a user op from a plugin .so (examples/plugin_cumsum.c)
 * is used in a hand-built graph, type-checks, compiles and runs, with its
 * own schedule (the vectorized and the plain form); a user op is a full
 * citizen: its schedule is the one its kernel gets (and not under the
 * naive schedule), its schedule's errors name the node, and its declared
 * layout behaviour lets AlterOpLayout's blocked layout flow through it;
 * and the registration and loading errors are clear. Linked with the
 * shared libkiln, as a user program is, so the plugin and the program
 * share one op registry. */
#include <dirent.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/plugin.h"
#include "kiln/schedule.h"

static void test_cumsum_plugin(void) {
    const char *so = getenv("KILN_PLUGIN_CUMSUM");
    CHECK(so != NULL);
    if (!so)
        return;
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
        for (int i = 0; i < 15; i++)
            p[i] = (float)(i + 1);
        CHECK_EQ_INT(kiln_executor_set_input(ex, "x", in), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
        const float *a = kiln_ndarray_data(kiln_executor_output(ex, 0));
        const float *b = kiln_ndarray_data(kiln_executor_output(ex, 1));
        int wrong = 0;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 5; c++) {
                float inc = 0, exc = 0;
                for (int k = 0; k <= c; k++)
                    inc += p[r * 5 + k];
                for (int k = 0; k < r; k++)
                    exc += p[k * 5 + c];
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

/* cumsum along `axis` of an input of dims[nd] (1..3 dims), compiled with
 * the plugin's schedule, against a loop written here. */
static void check_cumsum(int nd, const int64_t *dims, int axis, int exclusive) {
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, nd, dims, NULL);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=%d, exclusive=%d", axis, exclusive);
    int y = kiln_graph_call(g, "contrib.cumsum", 1, &x, attrs, "cs");
    CHECK(y >= 0);
    kiln_graph_set_outputs(g, 1, &y, NULL);
    char pkg[1024];
    snprintf(pkg, sizeof pkg, "%s/cumsum_case.tar", getenv("KILN_TEST_TMP"));
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex != NULL);
    kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, nd, dims);
    float *p = kiln_ndarray_data(in);
    int64_t n = kiln_ndarray_numel(in), stride = 1;
    for (int d = axis + 1; d < nd; d++)
        stride *= dims[d];
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 7) % 11) - 5.0f;
    if (ex && kiln_executor_set_input(ex, "x", in) == KILN_OK && kiln_executor_run(ex) == KILN_OK) {
        const float *o = kiln_ndarray_data(kiln_executor_output(ex, 0));
        int wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t pos = i / stride % dims[axis]; /* the index along the axis */
            float sum = 0;
            for (int64_t k = 0; k < pos + !exclusive; k++)
                sum += p[i - (pos - k) * stride];
            wrong += o[i] != sum;
        }
        CHECK_EQ_INT(wrong, 0);
    } else {
        CHECK(0);
        fprintf(stderr, "cumsum case: %s\n", kiln_last_error());
    }
    kiln_ndarray_free(in);
    kiln_executor_free(ex);
    kiln_graph_free(g);
}

/* The plugin's schedule on its two paths: lanes along the last axis with
 * the scan outside them, and the scan along the last axis. */
static void test_cumsum_schedule(void) {
    int64_t a[2] = {4, 32}, b[3] = {2, 3, 48}, c[2] = {5, 7};
    check_cumsum(2, a, 0, 0);
    check_cumsum(3, b, 1, 1);
    check_cumsum(2, c, 1, 0);
    check_cumsum(3, b, 2, 0);
}

/* ---- a user op is a full citizen ------------------------------------------------- */

static int g_schedule_calls, g_schedule_on_anchor;

/* y = 2x: the type of x */
static kiln_status twice_relation(kiln_op_call *c) {
    int64_t dims[8];
    int nd = kiln_op_call_input_ndim(c, 0);
    if (nd < 0 || nd > 8)
        return kiln_op_call_error(c, "twice: bad rank");
    for (int d = 0; d < nd; d++)
        dims[d] = kiln_op_call_input_dim(c, 0, d);
    return kiln_op_call_set_output(c, kiln_op_call_input_dtype(c, 0), nd, dims);
}

static kiln_expr twice_body(kiln_ctx *ctx, const kiln_expr *idx, void *user) {
    kiln_tensor *x = user;
    return kiln_mul(kiln_tensor_at(x, kiln_tensor_ndim(x), idx), kiln_float(ctx, 2));
}

static kiln_tensor *twice_compute(kiln_ctx *ctx, const kiln_op_call *c, kiln_tensor *const *in) {
    kiln_expr shape[8];
    for (int d = 0; d < kiln_tensor_ndim(in[0]); d++)
        shape[d] = kiln_tensor_dim(in[0], d);
    return kiln_compute(ctx, kiln_tensor_ndim(in[0]), shape, twice_body, in[0], "twice");
}

/* counts its calls; the last axis in vectors of the target's width, the
   first in parallel */
static kiln_status twice_schedule(kiln_schedule *s, const kiln_op_call *c, kiln_tensor *anchor,
                                  kiln_tensor *out, const kiln_target *target) {
    g_schedule_calls++;
    g_schedule_on_anchor += anchor == out && kiln_target_vector_bits(target) >= 128;
    kiln_stage *st = kiln_schedule_stage(s, out);
    int nd = kiln_tensor_ndim(out);
    int64_t lanes = kiln_target_vector_bits(target) / 32;
    kiln_expr o, i;
    kiln_status r = kiln_split(st, kiln_tensor_axis(out, nd - 1), lanes, &o, &i);
    if (r == KILN_OK)
        r = kiln_vectorize(st, i);
    if (r == KILN_OK && nd > 1)
        r = kiln_parallel(st, kiln_tensor_axis(out, 0));
    return r;
}

static kiln_status bad_schedule(kiln_schedule *s, const kiln_op_call *c, kiln_tensor *anchor,
                                kiln_tensor *out, const kiln_target *target) {
    kiln_expr o, i;
    return kiln_split(kiln_schedule_stage(s, out), kiln_tensor_axis(out, 0), 0, &o, &i);
}

/* x -> op (named "t") -> output, compiled with `schedule` ("naive" or
   NULL); 1 if it ran and gave 2x. */
static int run_twice(const char *op, const char *schedule) {
    kiln_graph *g = kiln_graph_new();
    int64_t dims[2] = {4, 64};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, NULL);
    int y = kiln_graph_call(g, op, 1, &x, NULL, "t");
    kiln_graph_set_outputs(g, 1, &y, NULL);
    kiln_build_options *o = kiln_build_options_new();
    if (schedule)
        kiln_build_options_set(o, "schedule", schedule);
    char pkg[1024];
    snprintf(pkg, sizeof pkg, "%s/twice.tar", getenv("KILN_TEST_TMP"));
    kiln_status st = kiln_graph_compile(g, pkg, o);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    if (st != KILN_OK)
        return 0;
    kiln_executor *ex = kiln_executor_load(pkg);
    kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 2, dims);
    float *p = kiln_ndarray_data(in);
    for (int i = 0; i < 256; i++)
        p[i] = (float)i - 100.0f;
    int ok =
        ex && kiln_executor_set_input(ex, "x", in) == KILN_OK && kiln_executor_run(ex) == KILN_OK;
    const float *r = ok ? kiln_ndarray_data(kiln_executor_output(ex, 0)) : NULL;
    for (int i = 0; ok && i < 256; i++)
        ok = r[i] == 2 * p[i];
    kiln_ndarray_free(in);
    kiln_executor_free(ex);
    return ok;
}

/* The graph after AlterOpLayout in dump folder dir (a static buffer), or "". */
static const char *after_alter_layout(const char *dir) {
    static char text[1 << 16];
    text[0] = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, "after_AlterOpLayout"))
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        size_t len = fread(text, 1, sizeof text - 1, f);
        text[len] = 0;
        fclose(f);
    }
    if (d)
        closedir(d);
    return text;
}

static void test_user_op_citizen(void) {
    kiln_op_spec twice = {.name = "test.twice",
                          .min_inputs = 1,
                          .max_inputs = 1,
                          .relation = twice_relation,
                          .compute = twice_compute,
                          .pattern = KILN_OP_ELEMWISE,
                          .summary = "2x, in any layout",
                          .schedule = twice_schedule,
                          .layout = KILN_OP_LAYOUT_ANY};
    CHECK_EQ_INT(kiln_op_register(&twice), KILN_OK);
    kiln_op_spec plain = twice;
    plain.name = "test.twice_plain";
    plain.schedule = NULL;
    plain.layout = KILN_OP_LAYOUT_PLAIN;
    CHECK_EQ_INT(kiln_op_register(&plain), KILN_OK);
    kiln_op_spec bad = plain;
    bad.name = "test.bad_schedule";
    bad.schedule = bad_schedule;
    CHECK_EQ_INT(kiln_op_register(&bad), KILN_OK);
    bad.name = "test.bad_layout";
    bad.layout = (kiln_op_layout)7;
    CHECK(kiln_op_register(&bad) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "layout 7");

    /* the op's schedule makes its kernel; the naive schedule does not ask it */
    CHECK(run_twice("test.twice", NULL));
    CHECK_EQ_INT(g_schedule_calls, 1);
    CHECK_EQ_INT(g_schedule_on_anchor, 1);
    CHECK(run_twice("test.twice", "naive"));
    CHECK_EQ_INT(g_schedule_calls, 1);
    CHECK(run_twice("test.twice_plain", NULL)); /* no schedule: the default one */
    CHECK_EQ_INT(g_schedule_calls, 1);
    /* a failing schedule is an error that names the node and op */
    CHECK(!run_twice("test.bad_schedule", NULL));
    CHECK_CONTAINS(kiln_last_error(), "node 't' (test.bad_schedule)");

    /* layout: after a blocked convolution, test.twice (any layout) runs
       blocked and the transform back to NCHW comes after it, before
       test.twice_plain */
    kiln_graph *g = kiln_graph_new();
    int64_t xd[4] = {1, 16, 8, 8}, wd[4] = {16, 16, 3, 3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    kiln_ndarray *w = kiln_ndarray_empty(KILN_FLOAT32, 4, wd);
    float *wp = kiln_ndarray_data(w);
    for (int i = 0; i < 16 * 16 * 9; i++)
        wp[i] = (float)(i % 5) * 0.25f - 0.5f;
    int in[2] = {x, kiln_graph_const(g, "w", w)};
    int a = kiln_graph_call(g, "nn.conv2d", 2, in, "padding=[1, 1, 1, 1]", "a");
    int b = kiln_graph_call(g, "test.twice", 1, &a, NULL, "b");
    int c = kiln_graph_call(g, "test.twice_plain", 1, &b, NULL, "c");
    kiln_graph_set_outputs(g, 1, &c, NULL);
    char dir[1024], cmd[2200], pkg[1100];
    snprintf(dir, sizeof dir, "%s/plugin_layout_dump", getenv("KILN_TEST_TMP"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(pkg, sizeof pkg, "%s.tar", dir);
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "dump-ir", dir);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_OK);
    kiln_build_options_free(o);
    const char *text = after_alter_layout(dir);
    CHECK_CONTAINS(text, "nn.contrib_conv2d_"); /* NCHWc or Winograd */
    CHECK_CONTAINS(text, "\"b.NCHW\"");         /* b converted back, after running blocked */
    CHECK(strstr(text, "\"a.NCHW\"") == NULL);
    /* and the result is the convolution, doubled twice */
    kiln_executor *ex = kiln_executor_load(pkg);
    kiln_ndarray *xv = kiln_ndarray_empty(KILN_FLOAT32, 4, xd);
    float *xp = kiln_ndarray_data(xv);
    for (int i = 0; i < 16 * 64; i++)
        xp[i] = (float)(i % 7) - 3.0f;
    CHECK(ex && kiln_executor_set_input(ex, "x", xv) == KILN_OK &&
          kiln_executor_run(ex) == KILN_OK);
    if (ex) {
        const float *r = kiln_ndarray_data(kiln_executor_output(ex, 0));
        int wrong = 0;
        for (int oc = 0; oc < 16; oc++)
            for (int h = 0; h < 8; h++)
                for (int v = 0; v < 8; v++) {
                    double sum = 0;
                    for (int ic = 0; ic < 16; ic++)
                        for (int kh = 0; kh < 3; kh++)
                            for (int kw = 0; kw < 3; kw++) {
                                int ih = h + kh - 1, iw = v + kw - 1;
                                if (ih < 0 || ih >= 8 || iw < 0 || iw >= 8)
                                    continue;
                                sum += (double)xp[(ic * 8 + ih) * 8 + iw] *
                                       wp[((oc * 16 + ic) * 3 + kh) * 3 + kw];
                            }
                    wrong += fabs(r[(oc * 8 + h) * 8 + v] - 4 * sum) > 1e-3 * (1 + fabs(4 * sum));
                }
        CHECK_EQ_INT(wrong, 0);
    }
    kiln_executor_free(ex);
    kiln_ndarray_free(xv);
    kiln_ndarray_free(w);
    kiln_graph_free(g);
}

static kiln_status rel_none(kiln_op_call *c) {
    return KILN_OK;
}
static kiln_tensor *compute_none(kiln_ctx *ctx, const kiln_op_call *c, kiln_tensor *const *in) {
    return NULL;
}

static void test_register_errors(void) {
    kiln_op_spec s = {"user.noop",
                      1,
                      1,
                      "alpha:float=0.5, mode:str=\"a\"",
                      rel_none,
                      compute_none,
                      KILN_OP_ELEMWISE,
                      "does nothing"};
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

/* A plugin built against the header before `schedule` and `layout` calls
 * the function kiln_op_register with a shorter struct: what lies past its
 * end (here: garbage in the fields it did not have) is never read. */
static void test_register_old_abi(void) {
    kiln_op_spec s = {"user.old_abi",
                      1,
                      1,
                      NULL,
                      rel_none,
                      compute_none,
                      KILN_OP_ELEMWISE,
                      "a plugin of the older header"};
    memset((char *)&s + offsetof(kiln_op_spec, schedule), 0x5a,
           sizeof s - offsetof(kiln_op_spec, schedule));
    CHECK_EQ_INT((kiln_op_register)(&s), KILN_OK); /* the function, as an old binary calls it */
    /* the same garbage through the sized entry point is rejected (bad layout) */
    s.name = "user.new_abi";
    CHECK(kiln_op_register(&s) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "layout");
    CHECK(kiln_op_register_sized(&s, 8) != KILN_OK);
    CHECK(kiln_op_register_sized(NULL, sizeof s) != KILN_OK);
}

TEST_MAIN(TEST(test_cumsum_plugin), TEST(test_cumsum_schedule), TEST(test_user_op_citizen),
          TEST(test_register_errors), TEST(test_register_old_abi))
