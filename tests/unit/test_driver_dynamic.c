/* test_driver_dynamic.c: graphs with a symbolic dim left unbound at compile
 * time (docs/DYNAMIC_SHAPES.md). The driver lowers the ops whose rows take
 * symbolic dims with size variables, writes the dims into mod.json as
 * names, and the one package runs at every size, equal to a reference
 * computed here; the default (vectorized, parallel) schedule agrees with
 * the naive one. An op that does not take symbolic dims is refused by
 * name, and a dim name that is not an identifier by the graph. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

#define COLS 37 /* not a multiple of any vector width: loops get a tail */

/* y = exp(relu(x) + b) - x, z = x > b: elementwise and broadcasting over
 * x[n, COLS] and b[COLS]. */
static kiln_graph *make_graph(const float *bv) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, COLS}, bd[1] = {COLS};
    const char *syms[2] = {"n", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 1, bd);
    memcpy(kiln_ndarray_data(b), bv, sizeof(float) * COLS);
    int bc = kiln_graph_const(g, "b", b);
    kiln_ndarray_free(b);
    int r = kiln_graph_call(g, "nn.relu", 1, &x, NULL, "relu");
    int rb[2] = {r, bc};
    int a = kiln_graph_call(g, "add", 2, rb, NULL, "add");
    int e = kiln_graph_call(g, "exp", 1, &a, NULL, "exp");
    int ex[2] = {e, x};
    int y = kiln_graph_call(g, "subtract", 2, ex, NULL, "y");
    int xb[2] = {x, bc};
    int z = kiln_graph_call(g, "greater", 2, xb, NULL, "z");
    int outs[2] = {y, z};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    return g;
}

static void run_sizes(const char *pkg, const float *bv) {
    kiln_model *m = kiln_model_load(pkg);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    CHECK_EQ_INT(kiln_model_input_dim(m, 0, 0), -1);
    CHECK(kiln_model_input_dim_expr(m, 0, 0) && !strcmp(kiln_model_input_dim_expr(m, 0, 0), "n"));
    CHECK_EQ_INT(kiln_model_input_dim(m, 0, 1), COLS);
    static const int64_t sizes[] = {1, 5, 64, 3, 0, 200};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k], xd[2] = {n, COLS};
        kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 2, xd);
        float *xv = kiln_ndarray_data(x);
        for (int64_t i = 0; i < n * COLS; i++)
            xv[i] = (float)((i * 37 + k * 11) % 23) / 7.0f - 1.5f;
        kiln_ndarray *outs[2] = {NULL, NULL};
        const kiln_ndarray *ins[1] = {x};
        kiln_status st = kiln_model_run_alloc(m, ins, outs, 0);
        CHECK_EQ_INT(st, KILN_OK);
        if (st) {
            fprintf(stderr, "n=%lld: %s\n", (long long)n, kiln_last_error());
        } else {
            CHECK_EQ_INT(kiln_ndarray_dim(outs[0], 0), n);
            CHECK_EQ_INT(kiln_ndarray_dim(outs[1], 0), n);
            const float *y = kiln_ndarray_data(outs[0]);
            const uint8_t *z = kiln_ndarray_data(outs[1]);
            int bad = 0;
            for (int64_t i = 0; i < n * COLS; i++) {
                float b = bv[i % COLS], r = xv[i] > 0 ? xv[i] : 0;
                float want = expf(r + b) - xv[i];
                bad += fabsf(y[i] - want) > 1e-5f * (1 + fabsf(want)) || z[i] != (xv[i] > b);
            }
            CHECK_EQ_INT(bad, 0);
        }
        kiln_ndarray_free(outs[0]);
        kiln_ndarray_free(outs[1]);
        kiln_ndarray_free(x);
    }
    kiln_model_free(m);
}

static void test_elementwise_any_batch(void) {
    float bv[COLS];
    for (int c = 0; c < COLS; c++)
        bv[c] = (float)(c % 5) * 0.25f - 0.5f;
    for (int naive = 0; naive < 2; naive++) {
        kiln_graph *g = make_graph(bv);
        kiln_build_options *o = kiln_build_options_new();
        if (naive)
            CHECK_EQ_INT(kiln_build_options_set(o, "schedule", "naive"), KILN_OK);
        const char *pkg = test_tmp_path(naive ? "dyn_naive.tar" : "dyn_default.tar");
        kiln_status st = kiln_graph_compile(g, pkg, o);
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "compile: %s\n", kiln_last_error());
        else
            run_sizes(pkg, bv);
        kiln_build_options_free(o);
        kiln_graph_free(g);
    }
}

/* A two-layer perceptron over a symbolic batch: dense (packed weights, the
 * GEMM schedule with one-row tiles), add, relu, dense; run at several batch
 * sizes against a loop reference. */
#define MLP_IN 19
#define MLP_HID 24
#define MLP_OUT 10
static void test_mlp_any_batch(void) {
    static float w1[MLP_HID * MLP_IN], b1[MLP_HID], w2[MLP_OUT * MLP_HID];
    for (int i = 0; i < MLP_HID * MLP_IN; i++)
        w1[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < MLP_HID; i++)
        b1[i] = (float)(i % 7) / 7.0f - 0.4f;
    for (int i = 0; i < MLP_OUT * MLP_HID; i++)
        w2[i] = (float)((i * 7) % 11) / 11.0f - 0.45f;
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, MLP_IN}, w1d[2] = {MLP_HID, MLP_IN}, b1d[1] = {MLP_HID},
            w2d[2] = {MLP_OUT, MLP_HID};
    const char *syms[2] = {"batch", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    kiln_ndarray *aw1 = kiln_ndarray_wrap(w1, KILN_FLOAT32, 2, w1d, NULL, 0),
                 *ab1 = kiln_ndarray_wrap(b1, KILN_FLOAT32, 1, b1d, NULL, 0),
                 *aw2 = kiln_ndarray_wrap(w2, KILN_FLOAT32, 2, w2d, NULL, 0);
    int cw1 = kiln_graph_const(g, "w1", aw1), cb1 = kiln_graph_const(g, "b1", ab1),
        cw2 = kiln_graph_const(g, "w2", aw2);
    kiln_ndarray_free(aw1);
    kiln_ndarray_free(ab1);
    kiln_ndarray_free(aw2);
    int d1in[2] = {x, cw1};
    int d1 = kiln_graph_call(g, "nn.dense", 2, d1in, NULL, "fc1");
    int a1in[2] = {d1, cb1};
    int a1 = kiln_graph_call(g, "add", 2, a1in, NULL, "bias1");
    int r1 = kiln_graph_call(g, "nn.relu", 1, &a1, NULL, "relu1");
    int d2in[2] = {r1, cw2};
    int y = kiln_graph_call(g, "nn.dense", 2, d2in, NULL, "fc2");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    const char *pkg = test_tmp_path("dyn_mlp.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
    kiln_graph_free(g);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    CHECK(st || m != NULL);
    static const int64_t sizes[] = {1, 7, 32, 2};
    for (size_t k = 0; m && k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k], shape[2] = {n, MLP_IN};
        kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
        float *xv = kiln_ndarray_data(in);
        for (int64_t i = 0; i < n * MLP_IN; i++)
            xv[i] = (float)((i * 5 + (int64_t)k) % 9) / 4.0f - 1.0f;
        kiln_ndarray *out = NULL;
        const kiln_ndarray *ins[1] = {in};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, &out, 0), KILN_OK);
        int bad = !out;
        for (int64_t r = 0; out && r < n; r++) {
            float h[MLP_HID];
            for (int j = 0; j < MLP_HID; j++) {
                double acc = b1[j];
                for (int i = 0; i < MLP_IN; i++)
                    acc += (double)xv[r * MLP_IN + i] * w1[j * MLP_IN + i];
                h[j] = acc > 0 ? (float)acc : 0;
            }
            for (int o = 0; o < MLP_OUT; o++) {
                double acc = 0;
                for (int j = 0; j < MLP_HID; j++)
                    acc += (double)h[j] * w2[o * MLP_HID + j];
                float got = ((const float *)kiln_ndarray_data(out))[r * MLP_OUT + o];
                bad += fabs(got - acc) > 1e-4 * (1 + fabs(acc));
            }
        }
        CHECK_EQ_INT(bad, 0);
        kiln_ndarray_free(out);
        kiln_ndarray_free(in);
    }
    kiln_model_free(m);
}

/* Layout ops over a symbolic batch: y = relu(batch_flatten(transpose(x,
 * [0, 2, 1]))) and z = reshape(y, [0, 4, 3]) - the reshape keeping the
 * symbolic dim in place. */
static void test_layout_any_batch(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[3] = {-1, 3, 4};
    const char *syms[3] = {"n", NULL, NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, syms);
    int t = kiln_graph_call(g, "transpose", 1, &x, "axes=[0, 2, 1]", "t");
    int f = kiln_graph_call(g, "nn.batch_flatten", 1, &t, NULL, "flat");
    int y = kiln_graph_call(g, "nn.relu", 1, &f, NULL, "y");
    int z = kiln_graph_call(g, "reshape", 1, &y, "newshape=[0, 4, 3]", "z");
    int outs[2] = {y, z};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    const char *pkg = test_tmp_path("dyn_layout.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
    /* a symbolic dim moved by a reshape is refused, by name */
    int bad = kiln_graph_call(g, "reshape", 1, &x, "newshape=[-1, 4]", "bad");
    CHECK(bad >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "symbolic dim 'n'");
    kiln_graph_free(g);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    static const int64_t sizes[] = {2, 1, 9};
    for (size_t k = 0; m && k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k], shape[3] = {n, 3, 4};
        kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 3, shape);
        float *xv = kiln_ndarray_data(in);
        for (int64_t i = 0; i < n * 12; i++)
            xv[i] = (float)((i * 7 + (int64_t)k) % 11) - 5.0f;
        kiln_ndarray *o[2] = {NULL, NULL};
        const kiln_ndarray *ins[1] = {in};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, o, 0), KILN_OK);
        int wrong = !o[0] || !o[1];
        for (int64_t b = 0; !wrong && b < n; b++)
            for (int j = 0; j < 4; j++)
                for (int c = 0; c < 3; c++) {
                    float v = xv[b * 12 + c * 4 + j], want = v > 0 ? v : 0;
                    wrong += ((const float *)kiln_ndarray_data(o[0]))[b * 12 + j * 3 + c] != want;
                    wrong += ((const float *)kiln_ndarray_data(o[1]))[b * 12 + j * 3 + c] != want;
                }
        CHECK_EQ_INT(wrong, 0);
        CHECK(o[1] && kiln_ndarray_ndim(o[1]) == 3 && kiln_ndarray_dim(o[1], 0) == n);
        kiln_ndarray_free(o[0]);
        kiln_ndarray_free(o[1]);
        kiln_ndarray_free(in);
    }
    kiln_model_free(m);
}

/* softmax over a constant last axis of a symbolic batch, in its
 * lane-parallel form (48 = 3 x 16 columns) and log_softmax in the plain
 * one, against a double-precision reference. */
static void test_softmax_any_batch(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, 48};
    const char *syms[2] = {"rows", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    int outs[2] = {kiln_graph_call(g, "nn.softmax", 1, &x, "axis=-1", "sm"),
                   kiln_graph_call(g, "nn.log_softmax", 1, &x, "axis=1", "lsm")};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    const char *pkg = test_tmp_path("dyn_softmax.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
    kiln_graph_free(g);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    static const int64_t sizes[] = {3, 1, 17};
    for (size_t k = 0; m && k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k], shape[2] = {n, 48};
        kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
        float *xv = kiln_ndarray_data(in);
        for (int64_t i = 0; i < n * 48; i++)
            xv[i] = (float)((i * 11 + (int64_t)k) % 13) / 3.0f - 2.0f;
        kiln_ndarray *o[2] = {NULL, NULL};
        const kiln_ndarray *ins[1] = {in};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, o, 0), KILN_OK);
        int wrong = !o[0] || !o[1];
        for (int64_t r = 0; !wrong && r < n; r++) {
            double mx = -1e30, sum = 0;
            for (int c = 0; c < 48; c++)
                mx = xv[r * 48 + c] > mx ? xv[r * 48 + c] : mx;
            for (int c = 0; c < 48; c++)
                sum += exp(xv[r * 48 + c] - mx);
            for (int c = 0; c < 48; c++) {
                double e = exp(xv[r * 48 + c] - mx) / sum, l = xv[r * 48 + c] - mx - log(sum);
                wrong += fabs(((const float *)kiln_ndarray_data(o[0]))[r * 48 + c] - e) > 1e-6;
                wrong += fabs(((const float *)kiln_ndarray_data(o[1]))[r * 48 + c] - l) > 1e-5;
            }
        }
        CHECK_EQ_INT(wrong, 0);
        kiln_ndarray_free(o[0]);
        kiln_ndarray_free(o[1]);
        kiln_ndarray_free(in);
    }
    kiln_model_free(m);
}

static void test_refusals(void) {
    /* an op without symbolic-dim support is named, with the dim */
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, 8};
    const char *syms[2] = {"batch", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    int s = kiln_graph_call(g, "argmax", 1, &x, "axis=1", "total");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &s, NULL), KILN_OK);
    CHECK(kiln_graph_compile(g, test_tmp_path("dyn_refused.tar"), NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "node 'total' (argmax)");
    CHECK_CONTAINS(kiln_last_error(), "'batch'");
    CHECK_CONTAINS(kiln_last_error(), "--input-shapes");
    /* a size variable's name must be an identifier */
    const char *bad[2] = {"batch size", NULL};
    CHECK_EQ_INT(kiln_graph_var(g, "y", KILN_FLOAT32, 2, xd, bad), -1);
    CHECK_CONTAINS(kiln_last_error(), "not an identifier");
    kiln_graph_free(g);
}

/* concatenate over a symbolic batch: the joined axis is static, the batch
 * symbolic (DenseNet, GoogLeNet and ShuffleNetV2 with --input-shapes
 * "input:[N,...]"); joining along the symbolic axis is refused. */
static void test_concat_any_batch(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, 5};
    const char *syms[2] = {"n", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    int e = kiln_graph_call(g, "exp", 1, &x, NULL, "e");
    int in[2] = {x, e};
    int y = kiln_graph_call(g, "concatenate", 2, in, "axis=1", "y");
    CHECK(y >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    const char *pkg = test_tmp_path("dyn_concat.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    CHECK(m != NULL);
    static const int64_t sizes[] = {1, 3, 0, 17};
    for (size_t k = 0; m && k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k], d[2] = {n, 5};
        kiln_ndarray *xa = kiln_ndarray_empty(KILN_FLOAT32, 2, d);
        float *xv = kiln_ndarray_data(xa);
        for (int64_t i = 0; i < n * 5; i++)
            xv[i] = (float)((i * 7 + (int64_t)k) % 11) / 5.0f - 1.0f;
        kiln_ndarray *out = NULL;
        const kiln_ndarray *ins[1] = {xa};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, &out, 0), KILN_OK);
        if (out) {
            CHECK_EQ_INT(kiln_ndarray_dim(out, 0), n);
            CHECK_EQ_INT(kiln_ndarray_dim(out, 1), 10);
            const float *yv = kiln_ndarray_data(out);
            int bad = 0;
            for (int64_t i = 0; i < n; i++)
                for (int c = 0; c < 5; c++)
                    bad += yv[i * 10 + c] != xv[i * 5 + c] ||
                           fabsf(yv[i * 10 + 5 + c] - expf(xv[i * 5 + c])) > 1e-5f;
            CHECK_EQ_INT(bad, 0);
        }
        kiln_ndarray_free(out);
        kiln_ndarray_free(xa);
    }
    kiln_model_free(m);
    kiln_graph_free(g);
    /* along the symbolic axis: refused, naming the reason */
    g = kiln_graph_new();
    x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    int in2[2] = {x, x};
    int rows = kiln_graph_call(g, "concatenate", 2, in2, "axis=0", "rows");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &rows, NULL), KILN_OK);
    CHECK(kiln_graph_compile(g, test_tmp_path("dyn_concat_rows.tar"), NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "must not be symbolic");
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_elementwise_any_batch), TEST(test_mlp_any_batch), TEST(test_layout_any_batch),
          TEST(test_softmax_any_batch), TEST(test_refusals), TEST(test_concat_any_batch))
