/* test_driver_compile.c: a graph built by hand is compiled into a package
 * (FuseOps groups, one kernel per group, the memory plan) and run by the
 * graph executor; the outputs match a plain C reference of the same net. */
#include <math.h>

#include "check.h"
#include "kiln/graph.h"
#include "te_util.h"

enum { B = 2, CI = 2, H = 6, W = 6, CO = 4, HP = 3, WP = 3, F = CO * HP * WP, U = 5 };

static kiln_ndarray *filled(int nd, const int64_t *shape, uint64_t *seed) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    tu_fill(a, seed);
    return a;
}

/* conv3x3(pad 1) -> bias -> relu -> maxpool 2x2 -> flatten -> dense -> +b -> softmax */
static void reference(const float *x, const float *w, const float *b, const float *dw,
                      const float *db, float *out) {
    static float conv[B][CO][H][W], pool[B][F];
    for (int n = 0; n < B; n++)
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++) {
                    float acc = 0;
                    for (int c = 0; c < CI; c++)
                        for (int a = 0; a < 3; a++)
                            for (int e = 0; e < 3; e++) {
                                int y = i + a - 1, z = j + e - 1;
                                if (y < 0 || y >= H || z < 0 || z >= W) continue;
                                acc += x[((n * CI + c) * H + y) * W + z] * w[((o * CI + c) * 3 + a) * 3 + e];
                            }
                    acc += b[o];
                    conv[n][o][i][j] = acc > 0 ? acc : 0;
                }
    for (int n = 0; n < B; n++)
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < HP; i++)
                for (int j = 0; j < WP; j++) {
                    float m = -INFINITY;
                    for (int a = 0; a < 2; a++)
                        for (int e = 0; e < 2; e++) m = fmaxf(m, conv[n][o][2 * i + a][2 * j + e]);
                    pool[n][(o * HP + i) * WP + j] = m;
                }
    for (int n = 0; n < B; n++) {
        float logits[U], mx = -INFINITY, sum = 0;
        for (int u = 0; u < U; u++) {
            float acc = 0;
            for (int k = 0; k < F; k++) acc += pool[n][k] * dw[u * F + k];
            logits[u] = acc + db[u];
            mx = fmaxf(mx, logits[u]);
        }
        for (int u = 0; u < U; u++) sum += expf(logits[u] - mx);
        for (int u = 0; u < U; u++) out[n * U + u] = expf(logits[u] - mx) / sum;
    }
}

static void test_compile_cnn(void) {
    uint64_t seed = 77;
    int64_t xs[4] = {B, CI, H, W}, ws[4] = {CO, CI, 3, 3}, bs[1] = {CO}, dws[2] = {U, F},
            dbs[1] = {U};
    kiln_ndarray *x = filled(4, xs, &seed), *w = filled(4, ws, &seed), *b = filled(1, bs, &seed);
    kiln_ndarray *dw = filled(2, dws, &seed), *db = filled(1, dbs, &seed);
    kiln_graph *g = kiln_graph_new();
    int in = kiln_graph_var(g, "input", KILN_FLOAT32, 4, xs, NULL);
    int cw = kiln_graph_const(g, "w", w), cb = kiln_graph_const(g, "b", b);
    int a2[2] = {in, cw};
    int c = kiln_graph_call(g, "nn.conv2d", 2, a2, "padding=[1, 1, 1, 1]", "conv");
    int a3[2] = {c, cb};
    int ba = kiln_graph_call(g, "nn.bias_add", 2, a3, NULL, "bias");
    int r = kiln_graph_call(g, "nn.relu", 1, &ba, NULL, "relu");
    int p = kiln_graph_call(g, "nn.max_pool2d", 1, &r, "pool_size=[2, 2], strides=[2, 2]", "pool");
    int f = kiln_graph_call(g, "nn.batch_flatten", 1, &p, NULL, "flatten");
    int dwid = kiln_graph_const(g, "dw", dw), dbid = kiln_graph_const(g, "db", db);
    int a4[2] = {f, dwid};
    int d = kiln_graph_call(g, "nn.dense", 2, a4, NULL, "dense");
    int a5[2] = {d, dbid};
    int ad = kiln_graph_call(g, "add", 2, a5, NULL, "dense_bias");
    int sm = kiln_graph_call(g, "nn.softmax", 1, &ad, "axis=1", "softmax");
    CHECK(sm >= 0);
    const char *names[1] = {"probs"};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &sm, names), KILN_OK);
    const char *pkg = test_tmp_path("cnn.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    CHECK_EQ_INT(st, KILN_OK);
    if (st != KILN_OK) fprintf(stderr, "compile: %s\n", kiln_last_error());
    kiln_executor *ex = st == KILN_OK ? kiln_executor_load(pkg) : NULL;
    CHECK(ex != NULL);
    if (!ex) {
        fprintf(stderr, "load: %s\n", kiln_last_error());
    } else {
        /* AlterOpLayout + FuseOps: input to NCHW[x]c, conv+bias+relu, pool (blocked),
           NCHW again+flatten, dense+add, softmax */
        CHECK_EQ_INT(kiln_executor_num_kernels(ex), 6);
        CHECK_EQ_INT(kiln_executor_num_inputs(ex), 1);
        CHECK_EQ_STR(kiln_executor_input_name(ex, 0), "input");
        CHECK_EQ_STR(kiln_executor_output_name(ex, 0), "probs");
        CHECK_EQ_INT(kiln_executor_set_input(ex, "input", x), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
        const kiln_ndarray *out = kiln_executor_output(ex, 0);
        float ref[B * U];
        reference(kiln_ndarray_data(x), kiln_ndarray_data(w), kiln_ndarray_data(b),
                  kiln_ndarray_data(dw), kiln_ndarray_data(db), ref);
        CHECK_EQ_INT(kiln_ndarray_dim(out, 0), B);
        CHECK_EQ_INT(kiln_ndarray_dim(out, 1), U);
        const float *o = kiln_ndarray_data(out);
        for (int i = 0; i < B * U; i++) CHECK_NEAR(o[i], ref[i], 1e-5);
        kiln_executor_free(ex);
    }
    kiln_graph_free(g);
    kiln_ndarray_free(x);
    kiln_ndarray_free(w);
    kiln_ndarray_free(b);
    kiln_ndarray_free(dw);
    kiln_ndarray_free(db);
}

static void test_compile_errors(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t dims[2] = {-1, 4};
    const char *syms[2] = {"batch", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, syms);
    int r = kiln_graph_call(g, "nn.relu", 1, &x, NULL, "relu");
    CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("never.tar"), NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no outputs");
    kiln_graph_set_outputs(g, 1, &r, NULL);
    CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("never.tar"), NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "symbolic dim 'batch'");
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_compile_cnn), TEST(test_compile_errors))
