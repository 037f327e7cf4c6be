/* test_runtime_roofline.c: the roofline profile's counts and limits
 * (docs/PROFILING.md). The compiler's FLOP and byte counts of a direct
 * conv, a dense and an elementwise kernel equal their formulas, with
 * split tails that do not divide; a symbolic batch's count follows the
 * run's size; a plan without the counts loads and reports them unknown;
 * bad counts are refused naming the node; the machine limits are measured,
 * cached and read back; the roofline point's arithmetic. Writes
 * KILN_TEST_TMP/roofline_model.tar for the CLI test. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "te_util.h"

static kiln_ndarray *filled(int ndim, const int64_t *dims, float scale) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, ndim, dims);
    float *d = kiln_ndarray_data(a);
    int64_t n = kiln_ndarray_numel(a);
    for (int64_t i = 0; i < n; i++)
        d[i] = scale * (float)((i * 7) % 13 - 6);
    return a;
}

/* Compile g into KILN_TEST_TMP/name without Winograd (so a 3x3 conv is the
 * direct one the formula counts) and load it. */
static kiln_executor *compile_load(kiln_graph *g, const char *name) {
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "winograd", "off"), KILN_OK);
    const char *pkg = test_tmp_path(name);
    kiln_status st = kiln_graph_compile(g, pkg, o);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    if (st) {
        fprintf(stderr, "compile: %s\n", kiln_last_error());
        return NULL;
    }
    kiln_executor *e = kiln_executor_load(pkg);
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "load: %s\n", kiln_last_error());
    return e;
}

/* The cost of the one kernel whose function name contains `part`. */
static void cost_of(kiln_executor *e, const char *part, double *flops, double *bytes) {
    int found = 0;
    *flops = *bytes = -2;
    for (int k = 0; k < kiln_executor_num_kernels(e); k++)
        if (strstr(kiln_executor_kernel_func(e, k), part)) {
            found++;
            CHECK_EQ_INT(kiln_executor_kernel_cost(e, k, flops, bytes), KILN_OK);
        }
    CHECK_EQ_INT(found, 1);
    if (found != 1)
        fprintf(stderr, "kernels named like '%s': %d\n", part, found);
}

/* conv2d 16 -> 32 channels, 3x3, stride 2, pad 1, over 15x15 (an 8x8
 * output): 2 N K C R S OH OW. The layout transforms around it count 0. */
static void test_conv(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[4] = {1, 16, 15, 15}, wd[4] = {32, 16, 3, 3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    kiln_ndarray *w = filled(4, wd, 0.01f);
    int cw = kiln_graph_const(g, "w", w);
    kiln_ndarray_free(w);
    int in[2] = {x, cw};
    int y = kiln_graph_call(g, "nn.conv2d", 2, in, "strides=[2, 2], padding=[1, 1, 1, 1]", "conv");
    CHECK(y >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    kiln_executor *e = compile_load(g, "roofline_conv.tar");
    if (!e)
        return;
    double f, b;
    cost_of(e, "conv2d", &f, &b);
    CHECK_EQ_INT((int64_t)f, 2LL * 1 * 32 * 16 * 3 * 3 * 8 * 8);
    CHECK(b > 0);
    for (int k = 0; k < kiln_executor_num_kernels(e); k++)
        if (strstr(kiln_executor_kernel_func(e, k), "layout_transform")) {
            CHECK_EQ_INT(kiln_executor_kernel_cost(e, k, &f, &b), KILN_OK);
            CHECK_EQ_INT((int64_t)f, 0);
        }
    kiln_executor_free(e);
}

/* dense x[3, 40] . w[24, 40]^T, no bias: 2 M N K, neither 3 nor 24 a
 * multiple of a tile; its bytes are the input, the weights (as packed,
 * 24 x 40 floats) and the output. */
static void test_dense(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {3, 40}, wd[2] = {24, 40};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
    kiln_ndarray *w = filled(2, wd, 0.02f);
    int cw = kiln_graph_const(g, "w", w);
    kiln_ndarray_free(w);
    int in[2] = {x, cw};
    int y = kiln_graph_call(g, "nn.dense", 2, in, NULL, "fc");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    kiln_executor *e = compile_load(g, "roofline_dense.tar");
    if (!e)
        return;
    double f, b;
    cost_of(e, "dense", &f, &b);
    CHECK_EQ_INT((int64_t)f, 2LL * 3 * 24 * 40);
    CHECK_EQ_INT((int64_t)b, 4LL * (3 * 40 + 24 * 40 + 3 * 24));
    kiln_executor_free(e);
}

/* exp(x) + y over [5, 37]: one add and one transcendental per element;
 * bytes: two inputs and the output. */
static kiln_graph *elementwise(int64_t rows, const char *sym) {
    kiln_graph *g = kiln_graph_new();
    int64_t d[2] = {rows, 37};
    const char *syms[2] = {sym, NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, d, sym ? syms : NULL);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 2, d, sym ? syms : NULL);
    int ex = kiln_graph_call(g, "exp", 1, &x, NULL, "ex");
    int in[2] = {ex, y};
    int z = kiln_graph_call(g, "add", 2, in, NULL, "z");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &z, NULL), KILN_OK);
    return g;
}

static void test_elementwise(void) {
    kiln_executor *e = compile_load(elementwise(5, NULL), "roofline_elem.tar");
    if (!e)
        return;
    CHECK_EQ_INT(kiln_executor_num_kernels(e), 1);
    double f, b;
    cost_of(e, "exp_add", &f, &b);
    CHECK_EQ_INT((int64_t)f, 2LL * 5 * 37);
    CHECK_EQ_INT((int64_t)b, 3LL * 4 * 5 * 37);
    kiln_executor_free(e);
}

/* The same over a symbolic row count: unknown before the first run, then
 * the run's. */
static void test_symbolic(void) {
    kiln_executor *e = compile_load(elementwise(-1, "rows"), "roofline_dyn.tar");
    if (!e)
        return;
    double f, b;
    cost_of(e, "exp_add", &f, &b);
    CHECK(f == -1 && b == -1);
    static const int64_t rows[] = {5, 64, 1};
    for (int r = 0; r < 3; r++) {
        int64_t d[2] = {rows[r], 37};
        kiln_ndarray *x = filled(2, d, 0.1f);
        CHECK_EQ_INT(kiln_executor_set_input(e, "x", x), KILN_OK);
        CHECK_EQ_INT(kiln_executor_set_input(e, "y", x), KILN_OK);
        kiln_ndarray_free(x);
        CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
        cost_of(e, "exp_add", &f, &b);
        CHECK_EQ_INT((int64_t)f, 2LL * rows[r] * 37);
        CHECK_EQ_INT((int64_t)b, 3LL * 4 * rows[r] * 37);
    }
    kiln_executor_free(e);
}

/* A conv and a dense after it, for the CLI's profile (tests/cli/test_run.sh). */
static void test_cli_model(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[4] = {1, 16, 16, 16}, wd[4] = {16, 16, 3, 3}, fd[2] = {10, 16 * 16 * 16};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    kiln_ndarray *w = filled(4, wd, 0.01f), *fw = filled(2, fd, 0.001f);
    int cw = kiln_graph_const(g, "w", w), cf = kiln_graph_const(g, "fw", fw);
    kiln_ndarray_free(w);
    kiln_ndarray_free(fw);
    int in[2] = {x, cw};
    int c = kiln_graph_call(g, "nn.conv2d", 2, in, "padding=[1, 1, 1, 1]", "conv");
    int r = kiln_graph_call(g, "nn.relu", 1, &c, NULL, "relu");
    int fl = kiln_graph_call(g, "nn.batch_flatten", 1, &r, NULL, "flat");
    int din[2] = {fl, cf};
    int y = kiln_graph_call(g, "nn.dense", 2, din, NULL, "fc");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    kiln_executor *e = compile_load(g, "roofline_model.tar");
    kiln_executor_free(e);
}

/* ---- plans by hand: a package without counts, and bad counts ---------------- */

typedef struct {
    kiln_tensor *a, *b;
} pair;

static kiln_expr add_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pair *p = u;
    (void)ctx;
    return kiln_add(kiln_tensor_at(p->a, 2, i), kiln_tensor_at(p->b, 2, i));
}

static kiln_module *vadd_module(void) {
    const char *path = test_tmp_path("roofline_vadd.so");
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr shape[2] = {kiln_int(ctx, 2), kiln_int(ctx, 8)};
    pair p = {kiln_placeholder(ctx, 2, shape, KILN_FLOAT32, "A"),
              kiln_placeholder(ctx, 2, shape, KILN_FLOAT32, "B")};
    kiln_tensor *C = kiln_compute(ctx, 2, shape, add_body, &p, "C");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_tensor *args[3] = {p.a, p.b, C};
    kiln_status st = kiln_build_save(s, 3, args, "vadd", NULL, path);
    kiln_ctx_free(ctx);
    CHECK_EQ_INT(st, KILN_OK);
    return st ? NULL : kiln_module_load(path);
}

#define PLAN_HEAD                                                                                  \
    "{\"nodes\": [\n"                                                                              \
    "  {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"                                     \
    "  {\"op\": \"null\", \"name\": \"b\", \"inputs\": []},\n"                                     \
    "  {\"op\": \"tvm_op\", \"name\": \"y1\", \"attrs\": {\"func_name\": \"vadd\", "               \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\""
#define PLAN_TAIL                                                                                  \
    "}, \"inputs\": [[0, 0, 0], [1, 0, 0]]}],\n"                                                   \
    " \"arg_nodes\": [0, 1], \"heads\": [[2, 0, 0]], \"node_row_ptr\": [0, 1, 2, 3],\n"            \
    " \"attrs\": {\"shape\": [\"list_shape\", [[2, 8], [2, 8], [2, 8]]],\n"                        \
    "   \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],\n"                    \
    "   \"storage_id\": [\"list_int\", [0, 1, 2]]}}\n"

static kiln_executor *plan_with(kiln_module *m, const char *attrs) {
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", PLAN_HEAD, attrs, PLAN_TAIL);
    return kiln_executor_create(text, strlen(text), m, NULL);
}

static void test_hand_plans(void) {
    kiln_module *m = vadd_module();
    if (!m)
        return;
    /* no counts: loads, runs, reports them unknown */
    kiln_executor *e = plan_with(m, "");
    CHECK(e != NULL);
    double f = 0, b = 0;
    CHECK_EQ_INT(kiln_executor_kernel_cost(e, 0, &f, &b), KILN_OK);
    CHECK(f == -1 && b == -1);
    double t[1];
    CHECK_EQ_INT(kiln_executor_run_profiled(e, t), KILN_OK);
    CHECK(kiln_executor_kernel_cost(e, 1, &f, &b) != KILN_OK);
    CHECK(kiln_executor_kernel_cost(e, 0, NULL, &b) != KILN_OK);
    CHECK_EQ_INT(kiln_executor_vector_bits(e), 0);
    kiln_executor_free(e);
    /* an integer and a constant expression */
    e = plan_with(m, ", \"flops\": 16, \"bytes\": \"3*4*16\"");
    CHECK(e != NULL);
    CHECK_EQ_INT(kiln_executor_kernel_cost(e, 0, &f, &b), KILN_OK);
    CHECK(f == 16 && b == 192);
    kiln_executor_free(e);
    static const struct {
        const char *attrs, *msg;
    } bad[] = {
        {", \"flops\": -1", "node 2 'y1': attrs.flops must be a non-negative integer or a dim "
                            "expression string, got -1"},
        {", \"flops\": 1.5", "node 2 'y1': attrs.flops must be a non-negative integer"},
        {", \"bytes\": 1e300", "node 2 'y1': attrs.bytes must be a non-negative integer or a dim "
                               "expression string, got 1e+300"},
        {", \"bytes\": true", "node 2 'y1': attrs.bytes must be a non-negative integer"},
        {", \"flops\": \"n*2\"", "node 2 'y1': attrs.flops 'n*2' names 'n', which is no size "
                                 "variable of function 'vadd'"},
        {", \"flops\": \"2*(3\"", "node 2 'y1': attrs.flops"},
        {", \"flops\": \"0-5\"", "node 2 'y1': attrs.flops"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e = plan_with(m, bad[i].attrs);
        CHECK(e == NULL);
        if (!e)
            CHECK_CONTAINS(kiln_last_error(), bad[i].msg);
        kiln_executor_free(e);
    }
    kiln_module_free(m);
}

/* ---- the machine's limits and the roofline point -------------------------------- */

static void test_limits(void) {
    kiln_machine_limits a, b;
    CHECK_EQ_INT(kiln_machine_limits_get(16, 1, 1, &a), KILN_OK);
    CHECK(a.peak_gflops > 0 && a.bandwidth_gbs > 0 && a.threads == 1);
    CHECK(a.lanes == 16 || a.lanes == 8 || a.lanes == 4);
    CHECK(a.cpu[0] != 0);
    CHECK_CONTAINS(a.source, "kiln/machine-limits.txt");
    /* the second time, the same figures come from the cache */
    CHECK_EQ_INT(kiln_machine_limits_get(16, 1, 1, &b), KILN_OK);
    CHECK(b.cached == 1 && b.peak_gflops == a.peak_gflops && b.bandwidth_gbs == a.bandwidth_gbs);
    CHECK_EQ_STR(b.source, a.source);
    CHECK(kiln_machine_limits_get(0, 1, 1, &b) != KILN_OK);
    CHECK(kiln_machine_limits_get(8, 1, 1, NULL) != KILN_OK);
    int lanes = 1 << 20;
    CHECK(kiln_measure_fma_gflops(&lanes, 1, 1000) > 0);
    CHECK(lanes == 16 || lanes == 8 || lanes == 4);
}

static void test_point(void) {
    kiln_machine_limits lim = {.peak_gflops = 100, .bandwidth_gbs = 10};
    kiln_roofline r;
    /* 1 GFLOP over 10 MB (AI 100) in 20 ms: compute-bound, roof 100 */
    kiln_roofline_point(0.02, 1e9, 1e7, &lim, &r);
    CHECK_NEAR(r.gflops, 50, 1e-9);
    CHECK_NEAR(r.gbs, 0.5, 1e-9);
    CHECK_NEAR(r.intensity, 100, 1e-9);
    CHECK_NEAR(r.limit_gflops, 100, 1e-9);
    CHECK_NEAR(r.share, 0.5, 1e-9);
    CHECK_EQ_INT(r.bound, KILN_BOUND_COMPUTE);
    /* 1 MFLOP over 100 MB (AI 0.01) in 20 ms: memory-bound, roof 0.1 */
    kiln_roofline_point(0.02, 1e6, 1e8, &lim, &r);
    CHECK_NEAR(r.limit_gflops, 0.1, 1e-12);
    CHECK_NEAR(r.share, 0.5, 1e-9);
    CHECK_EQ_INT(r.bound, KILN_BOUND_MEMORY);
    /* a copy: no flops, its share of the bandwidth */
    kiln_roofline_point(0.01, 0, 5e7, &lim, &r);
    CHECK_NEAR(r.share, 0.5, 1e-9);
    CHECK_EQ_INT(r.bound, KILN_BOUND_MEMORY);
    /* unknown counts */
    kiln_roofline_point(0.01, -1, 5e7, &lim, &r);
    CHECK(r.gflops == -1 && r.share == -1 && r.intensity == -1);
    CHECK_EQ_INT(r.bound, KILN_BOUND_UNKNOWN);
}

TEST_MAIN(TEST(test_conv), TEST(test_dense), TEST(test_elementwise), TEST(test_symbolic),
          TEST(test_cli_model), TEST(test_hand_plans), TEST(test_limits), TEST(test_point))
