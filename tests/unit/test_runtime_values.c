/* test_runtime_values.c: shapes decided by values when the package runs
 * (docs/DYNAMIC_SHAPES.md, part 3). A shape function computes the dims, a
 * binder (bind_dims) names them, and the op and everything after it take
 * them as size variables: the one package runs at every value, under the
 * default and the naive schedules, equal to a reference computed here.
 * Values the op cannot take fail that run with an error naming the node;
 * the next run with good values works. (test_runtime_dynamic.c checks
 * that malformed binders in a plan are refused at load.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

/* y = relu(reshape(x, shape)) * 2, z = y + 1 (a second op over the bound
 * dims), for x[2, 3, 4] and shape an int64[3] input. */
static kiln_graph *make_graph(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[3] = {2, 3, 4}, sd[1] = {3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, NULL);
    int s = kiln_graph_var(g, "shape", KILN_INT64, 1, sd, NULL);
    int xs[2] = {x, s};
    int d = kiln_graph_call(g, "reshape_dims", 2, xs, NULL, "dims");
    int b = kiln_graph_call(g, "bind_dims", 1, &d, "prefix=\"r\"", "bind");
    int xb[2] = {x, b};
    int r = kiln_graph_call(g, "reshape", 2, xb, NULL, "reshaped");
    int relu = kiln_graph_call(g, "nn.relu", 1, &r, NULL, "relu");
    kiln_ndarray *two = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
    *(float *)kiln_ndarray_data(two) = 2;
    int c = kiln_graph_const(g, "two", two);
    kiln_ndarray_free(two);
    int rc[2] = {relu, c};
    int y = kiln_graph_call(g, "multiply", 2, rc, NULL, "y");
    int yc[2] = {y, c};
    int z = kiln_graph_call(g, "add", 2, yc, NULL, "z");
    int outs[2] = {y, z};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    return g;
}

/* Run m with shape = sv; the dims it should give (NULL: the run fails). */
static void run_one(kiln_model *m, const int64_t *sv, const int64_t *want) {
    int64_t xd[3] = {2, 3, 4}, sd[1] = {3};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 3, xd);
    kiln_ndarray *s = kiln_ndarray_empty(KILN_INT64, 1, sd);
    float *xv = kiln_ndarray_data(x);
    for (int i = 0; i < 24; i++)
        xv[i] = (float)(i % 7) - 2.5f;
    memcpy(kiln_ndarray_data(s), sv, 3 * sizeof(int64_t));
    const kiln_ndarray *ins[2] = {x, s};
    kiln_ndarray *outs[2] = {NULL, NULL};
    kiln_status st = kiln_model_run_alloc(m, ins, outs, 0);
    if (!want) {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "node");
        CHECK_CONTAINS(kiln_last_error(), "'bind'");
        CHECK_CONTAINS(kiln_last_error(), "invalid");
        CHECK(outs[0] == NULL && outs[1] == NULL);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "run: %s\n", kiln_last_error());
        for (int o = 0; o < 2 && !st; o++) {
            CHECK_EQ_INT(kiln_ndarray_ndim(outs[o]), 3);
            for (int d = 0; d < 3; d++)
                CHECK_EQ_INT(kiln_ndarray_dim(outs[o], d), want[d]);
            const float *v = kiln_ndarray_data(outs[o]);
            int bad = 0;
            for (int i = 0; i < 24; i++) {
                float e = (xv[i] > 0 ? xv[i] : 0) * 2 + (o ? 2 : 0);
                bad += fabsf(v[i] - e) > 1e-6f;
            }
            CHECK_EQ_INT(bad, 0);
        }
    }
    kiln_ndarray_free(outs[0]);
    kiln_ndarray_free(outs[1]);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
}

static void test_reshape_values(void) {
    for (int naive = 0; naive < 2; naive++) {
        kiln_graph *g = make_graph();
        kiln_build_options *o = kiln_build_options_new();
        if (naive)
            CHECK_EQ_INT(kiln_build_options_set(o, "schedule", "naive"), KILN_OK);
        const char *pkg = test_tmp_path(naive ? "values_naive.tar" : "values_default.tar");
        kiln_status st = kiln_graph_compile(g, pkg, o);
        CHECK_EQ_INT(st, KILN_OK);
        kiln_build_options_free(o);
        kiln_graph_free(g);
        if (st) {
            fprintf(stderr, "compile: %s\n", kiln_last_error());
            continue;
        }
        kiln_model *m = kiln_model_load(pkg);
        CHECK(m != NULL);
        if (!m)
            continue;
        /* the output's dims are the binder's variables */
        CHECK(kiln_model_output_dim_expr(m, 0, 1) &&
              !strcmp(kiln_model_output_dim_expr(m, 0, 1), "r_1"));
        run_one(m, (const int64_t[]){4, 6, 1}, (const int64_t[]){4, 6, 1});
        run_one(m, (const int64_t[]){-1, 2, 0}, (const int64_t[]){3, 2, 4});  /* 0 copies */
        run_one(m, (const int64_t[]){1, 1, 24}, (const int64_t[]){1, 1, 24}); /* grows */
        run_one(m, (const int64_t[]){5, 5, 5}, NULL);                         /* 125 != 24 */
        run_one(m, (const int64_t[]){-1, -1, 4}, NULL);                       /* two -1 */
        run_one(m, (const int64_t[]){-7, 2, 2}, NULL);
        run_one(m, (const int64_t[]){INT64_MAX, INT64_MAX, 2}, NULL);         /* no overflow */
        run_one(m, (const int64_t[]){2, 12, 1}, (const int64_t[]){2, 12, 1}); /* fine again */
        kiln_model_free(m);
    }
}

/* ONNX Expand and Range over values that change from run to run: the
 * broadcast and the length follow them; an Expand to dims that do not
 * broadcast and a Range with delta 0 fail the run, naming the binder. */
static kiln_graph *make_expand_range(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {3, 1}, sd[1] = {3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
    int s = kiln_graph_var(g, "shape", KILN_INT64, 1, sd, NULL);
    int lim[3];
    static const char *const names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++)
        lim[i] = kiln_graph_var(g, names[i], KILN_FLOAT32, 0, NULL, NULL);
    int xs[2] = {x, s};
    int d = kiln_graph_call(g, "broadcast_dims", 2, xs, NULL, "edims");
    xs[1] = kiln_graph_call(g, "bind_dims", 1, &d, "prefix=\"e\"", "ebind");
    int y = kiln_graph_call(g, "broadcast_to", 2, xs, NULL, "expanded");
    int n = kiln_graph_call(g, "range_dims", 3, lim, NULL, "rdims");
    n = kiln_graph_call(g, "bind_dims", 1, &n, "prefix=\"len\"", "rbind");
    int args[3] = {lim[0], lim[2], n};
    int r = kiln_graph_call(g, "arange", 3, args, NULL, "range");
    int outs[2] = {y, r};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    return g;
}

/* One run: shape sv (3 values) and Range(a, b, c); want the dims of the
 * expanded output (NULL: the run fails naming `bad`) and the range length. */
static void run_expand_range(kiln_model *m, const int64_t *sv, float a, float b, float c,
                             const int64_t *want, int64_t len, const char *bad) {
    int64_t xd[2] = {3, 1}, sd[1] = {3};
    kiln_ndarray *in[5] = {
        kiln_ndarray_empty(KILN_FLOAT32, 2, xd), kiln_ndarray_empty(KILN_INT64, 1, sd),
        kiln_ndarray_empty(KILN_FLOAT32, 0, NULL), kiln_ndarray_empty(KILN_FLOAT32, 0, NULL),
        kiln_ndarray_empty(KILN_FLOAT32, 0, NULL)};
    for (int i = 0; i < 3; i++)
        ((float *)kiln_ndarray_data(in[0]))[i] = (float)i + 0.5f;
    memcpy(kiln_ndarray_data(in[1]), sv, 3 * sizeof(int64_t));
    *(float *)kiln_ndarray_data(in[2]) = a;
    *(float *)kiln_ndarray_data(in[3]) = b;
    *(float *)kiln_ndarray_data(in[4]) = c;
    kiln_ndarray *outs[2] = {NULL, NULL};
    kiln_status st = kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, outs, 0);
    if (bad) {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), bad);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "run: %s\n", kiln_last_error());
    }
    if (!st && !bad) {
        int64_t total = 1;
        for (int d = 0; d < 3; d++) {
            CHECK_EQ_INT(kiln_ndarray_dim(outs[0], d), want[d]);
            total *= want[d];
        }
        const float *y = kiln_ndarray_data(outs[0]);
        int wrong = 0;
        for (int64_t i = 0; i < total; i++) /* row (i / want[2]) % 3 of x */
            wrong += y[i] != (float)((i / want[2]) % 3) + 0.5f;
        CHECK_EQ_INT(wrong, 0);
        CHECK_EQ_INT(kiln_ndarray_dim(outs[1], 0), len);
        const float *r = kiln_ndarray_data(outs[1]);
        for (int64_t i = 0; i < len; i++)
            wrong += fabsf(r[i] - (a + (float)i * c)) > 1e-5f;
        CHECK_EQ_INT(wrong, 0);
    }
    for (int i = 0; i < 2; i++)
        kiln_ndarray_free(outs[i]);
    for (int i = 0; i < 5; i++)
        kiln_ndarray_free(in[i]);
}

static void test_expand_range_values(void) {
    kiln_graph *g = make_expand_range();
    const char *pkg = test_tmp_path("values_expand.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    run_expand_range(m, (const int64_t[]){2, 3, 4}, 0, 5, 1, (const int64_t[]){2, 3, 4}, 5, NULL);
    run_expand_range(m, (const int64_t[]){1, 1, 1}, 1, 0, -0.25f, (const int64_t[]){1, 3, 1}, 4,
                     NULL);
    run_expand_range(m, (const int64_t[]){7, 3, 9}, 3, 3, 1, (const int64_t[]){7, 3, 9}, 0, NULL);
    run_expand_range(m, (const int64_t[]){2, 2, 4}, 0, 5, 1, NULL, 0, "'ebind'");  /* 3 vs 2 */
    run_expand_range(m, (const int64_t[]){1, -3, 1}, 0, 5, 1, NULL, 0, "'ebind'"); /* negative */
    run_expand_range(m, (const int64_t[]){1, 3, 1}, 0, 5, 0, NULL, 0, "'rbind'");  /* delta 0 */
    run_expand_range(m, (const int64_t[]){1, 3, 1}, 0, 1e30f, 1e-30f, NULL, 0, "'rbind'");
    run_expand_range(m, (const int64_t[]){2, 3, 2}, -1, 1, 0.5f, (const int64_t[]){2, 3, 2}, 4,
                     NULL);
    kiln_model_free(m);
}

/* Call op on the inputs named by the letters of `ins` (x: float32[2, 3],
 * s: int64[2], f: float32[2], m: int64[65], b: bind_dims(s)) and infer:
 * the error must contain want (NULL: no error). */
static void relation(const char *op, const char *ins, const char *attrs, const char *want) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {2, 3}, sd[1] = {2}, md[1] = {65};
    int v[5] = {kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL),
                kiln_graph_var(g, "s", KILN_INT64, 1, sd, NULL),
                kiln_graph_var(g, "f", KILN_FLOAT32, 1, sd, NULL),
                kiln_graph_var(g, "m", KILN_INT64, 1, md, NULL), -1};
    v[4] = kiln_graph_call(g, "bind_dims", 1, &v[1], "prefix=\"p\"", NULL);
    int in[4], n = 0;
    for (const char *c = ins; *c; c++)
        in[n++] = v[strchr("xsfmb", *c) - "xsfmb"];
    int id = kiln_graph_call(g, op, n, in, attrs, "call");
    kiln_status st = id < 0 ? KILN_ERR_INVALID : kiln_graph_set_outputs(g, 1, &id, NULL);
    if (!st)
        st = kiln_graph_infer_types(g);
    if (want) {
        CHECK(st != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), want);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "%s: %s\n", op, kiln_last_error());
    }
    kiln_graph_free(g);
}

/* The relations refuse what a binder or a shape function cannot take. */
static void test_relation_errors(void) {
    relation("bind_dims", "s", "prefix=\"1x\"", "prefix must be an identifier");
    relation("bind_dims", "f", "prefix=\"q\"", "int64 vector of 1 to 64 values");
    relation("bind_dims", "m", "prefix=\"q\"", "int64 vector of 1 to 64 values");
    /* dims from a value that is data, not a binder's */
    relation("reshape", "xs", NULL, "must be a constant or a bind_dims vector");
    relation("reshape", "xb", "newshape=[6]", "not both");
    relation("reshape", "xb", NULL, NULL);
    relation("topk", "xb", "axis=1", "bind_dims vector of one value");
    relation("tile", "xb", NULL, NULL);
    relation("broadcast_to", "xb", NULL, NULL);
    relation("broadcast_to", "xs", NULL, "must be a constant or a bind_dims vector");
    /* the shape functions check their inputs */
    relation("reshape_dims", "xf", NULL, "the shape must be int64");
    relation("tile_dims", "xm", NULL, "one value per dim");
    relation("range_dims", "sss", NULL, "scalar numbers of one dtype");
    relation("topk_dims", "xs", "axis=1", "k must be an integer scalar");
    relation("one_hot_dims", "x", NULL, "depth must be a scalar");
    relation("broadcast_dims", "xm", NULL, "1 to 16 dims");
    relation("reduce_dims", "xf", NULL, "the axes must be a 1-D integer tensor");
    relation("reduce_dims", "xm", NULL, "a vector of 1 to 2 values");
    relation("reduce_dims", "xs", "keepdims=0", "leaves no dims");
    relation("reduce_dims", "xs", NULL, NULL);
    /* a reduction to a binder's dims (one per dim of the data), CumSum's
       axis as a value */
    relation("sum", "xb", NULL, NULL);
    relation("mean", "xb", "keepdims=1", "give none of axis, keepdims and exclude");
    relation("max", "xs", NULL, "a constant or a bind_dims vector of one value per dim");
    relation("cumsum", "xs", NULL, "the axis) must be an integer scalar");
    relation("cumsum", "xs", "axis=0", "not both");
}

TEST_MAIN(TEST(test_reshape_values), TEST(test_expand_range_values), TEST(test_relation_errors))
