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

static void test_refusals(void) {
    /* an op without symbolic-dim support is named, with the dim */
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {-1, 8};
    const char *syms[2] = {"batch", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, syms);
    int s = kiln_graph_call(g, "nn.softmax", 1, &x, "axis=1", "sm");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &s, NULL), KILN_OK);
    CHECK(kiln_graph_compile(g, test_tmp_path("dyn_refused.tar"), NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "node 'sm' (nn.softmax)");
    CHECK_CONTAINS(kiln_last_error(), "'batch'");
    CHECK_CONTAINS(kiln_last_error(), "--input-shapes");
    /* a size variable's name must be an identifier */
    const char *bad[2] = {"batch size", NULL};
    CHECK_EQ_INT(kiln_graph_var(g, "y", KILN_FLOAT32, 2, xd, bad), -1);
    CHECK_CONTAINS(kiln_last_error(), "not an identifier");
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_elementwise_any_batch), TEST(test_refusals))
