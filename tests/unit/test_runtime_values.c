/* test_runtime_values.c: shapes decided by values when the package runs
 * (docs/DYNAMIC_SHAPES.md, part 3). A shape function computes the dims, a
 * binder (bind_dims) names them, and the op and everything after it take
 * them as size variables: the one package runs at every value, under the
 * default and the naive schedules, equal to a reference computed here.
 * Values the op cannot take fail that run with an error naming the node;
 * the next run with good values works. (test_runtime_dynamic.c checks
 * that malformed binders in a plan are refused at load.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
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

/* ONNX Slice over starts, ends, axes and steps given as inputs, on x[4, 5]
 * (x[i][j] = 10 i + j), then a Pad of the result by pads given as an input
 * (constant 7): one package at several values, negative and clamped ones
 * too, against a reference computed here. */
static kiln_graph *make_slice_pad(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {4, 5}, two[1] = {2}, four[1] = {4};
    int in[5] = {kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL)};
    static const char *const names[4] = {"starts", "ends", "axes", "steps"};
    for (int i = 1; i < 5; i++)
        in[i] = kiln_graph_var(g, names[i - 1], KILN_INT64, 1, two, NULL);
    int pads = kiln_graph_var(g, "pads", KILN_INT64, 1, four, NULL);
    int p = kiln_graph_call(g, "slice_params", 5, in, NULL, "params");
    int lens = kiln_graph_call(g, "strided_slice", 1, &p, "begin=[0], end=[2]", "lens");
    int b = kiln_graph_call(g, "bind_dims", 1, &lens, "prefix=\"s\"", "sbind");
    int y = kiln_graph_call(g, "strided_slice", 3, (int[]){in[0], p, b}, NULL, "sliced");
    int pd = kiln_graph_call(g, "pad_dims", 2, (int[]){y, pads}, NULL, "pdims");
    int pb = kiln_graph_call(g, "bind_dims", 1, &pd, "prefix=\"q\"", "pbind");
    int z = kiln_graph_call(g, "nn.pad", 3, (int[]){y, pads, pb}, "pad_value=7", "padded");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &z, NULL), KILN_OK);
    return g;
}

/* numpy's slice of one dim of n: the indices it takes into idx; the count. */
static int ref_slice(int64_t n, int64_t st, int64_t en, int64_t sp, int64_t *idx) {
    st = st < 0 ? st + n : st;
    en = en < 0 ? en + n : en;
    int64_t lo = sp > 0 ? 0 : -1, hi = sp > 0 ? n : n - 1;
    st = st < lo ? lo : st > hi ? hi : st;
    en = en < lo ? lo : en > hi ? hi : en;
    int c = 0;
    for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp)
        idx[c++] = i;
    return c;
}

static void run_slice_pad(kiln_model *m, const int64_t *v, const int64_t *pads, int ok) {
    int64_t xd[2] = {4, 5}, two[1] = {2}, four[1] = {4};
    kiln_ndarray *in[6] = {kiln_ndarray_empty(KILN_FLOAT32, 2, xd)};
    for (int i = 0; i < 20; i++)
        ((float *)kiln_ndarray_data(in[0]))[i] = (float)(10 * (i / 5) + i % 5);
    for (int i = 1; i < 5; i++) {
        in[i] = kiln_ndarray_empty(KILN_INT64, 1, two);
        memcpy(kiln_ndarray_data(in[i]), v + 2 * (i - 1), 2 * sizeof(int64_t));
    }
    in[5] = kiln_ndarray_empty(KILN_INT64, 1, four);
    memcpy(kiln_ndarray_data(in[5]), pads, 4 * sizeof(int64_t));
    kiln_ndarray *out = NULL;
    kiln_status st = kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, &out, 0);
    CHECK_EQ_INT(st, ok ? KILN_OK : KILN_ERR_INVALID);
    if (st && ok)
        fprintf(stderr, "run: %s\n", kiln_last_error());
    if (!st) {
        /* the reference: per dim, the indices taken (axes v[4], v[5]) */
        int64_t idx[2][8], cnt[2] = {4, 5};
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < cnt[d]; i++)
                idx[d][i] = i;
        for (int k = 0; k < 2; k++) {
            int a = (int)(v[4 + k] < 0 ? v[4 + k] + 2 : v[4 + k]);
            cnt[a] = ref_slice(a ? 5 : 4, v[k], v[2 + k], v[6 + k], idx[a]);
        }
        int64_t od[2] = {cnt[0] + pads[0] + pads[2], cnt[1] + pads[1] + pads[3]};
        CHECK_EQ_INT(kiln_ndarray_dim(out, 0), od[0]);
        CHECK_EQ_INT(kiln_ndarray_dim(out, 1), od[1]);
        const float *z = kiln_ndarray_data(out);
        int wrong = 0;
        for (int64_t i = 0; i < od[0] && kiln_ndarray_dim(out, 1) == od[1]; i++)
            for (int64_t j = 0; j < od[1]; j++) {
                int64_t si = i - pads[0], sj = j - pads[1];
                float want = si >= 0 && si < cnt[0] && sj >= 0 && sj < cnt[1]
                                 ? (float)(10 * idx[0][si] + idx[1][sj])
                                 : 7;
                wrong += z[i * od[1] + j] != want;
            }
        CHECK_EQ_INT(wrong, 0);
    }
    kiln_ndarray_free(out);
    for (int i = 0; i < 6; i++)
        kiln_ndarray_free(in[i]);
}

static void test_slice_pad_values(void) {
    kiln_graph *g = make_slice_pad();
    const char *pkg = test_tmp_path("values_slice.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    /* starts[2], ends[2], axes[2], steps[2] */
    run_slice_pad(m, (const int64_t[]){0, 1, 4, 5, 0, 1, 1, 2}, (const int64_t[]){0, 0, 0, 0}, 1);
    run_slice_pad(m, (const int64_t[]){-1, 3, -100, 0, 0, -1, -1, -1},
                  (const int64_t[]){1, 0, 2, 3}, 1);
    run_slice_pad(m, (const int64_t[]){1, INT64_MIN, INT64_MAX, INT64_MAX, 1, 0, 2, 1},
                  (const int64_t[]){-1, 1, 0, -1}, 1);
    run_slice_pad(m, (const int64_t[]){2, 2, 1, 1, 0, 1, 1, 1}, (const int64_t[]){0, 0, 0, 0},
                  1); /* empty */
    run_slice_pad(m, (const int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}, (const int64_t[]){0, 0, 0, 0},
                  0); /* an axis twice */
    run_slice_pad(m, (const int64_t[]){0, 0, 1, 1, 0, 1, 0, 1}, (const int64_t[]){0, 0, 0, 0},
                  0); /* a step of 0 */
    run_slice_pad(m, (const int64_t[]){0, 0, 4, 5, 0, 1, 1, 1}, (const int64_t[]){-5, 0, 0, 0},
                  0); /* pads remove more than the dim */
    run_slice_pad(m, (const int64_t[]){0, 0, 4, 5, 0, 1, 1, 1}, (const int64_t[]){2, 2, 2, 2}, 1);
    kiln_model_free(m);
}

/* NonZero and Compress, whose output sizes the data decides: one package
 * run on data with 0, some and all elements selected. */
static void test_selected_by_data(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {2, 3}, cd[1] = {2};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
    int c = kiln_graph_var(g, "c", KILN_BOOL, 1, cd, NULL);
    int cnt = kiln_graph_call(g, "nonzero_dims", 1, &x, NULL, "nzdims");
    cnt = kiln_graph_call(g, "bind_dims", 1, &cnt, "prefix=\"nz\"", "nzbind");
    int nz = kiln_graph_call(g, "nonzero", 2, (int[]){x, cnt}, NULL, "nonzero");
    int k = kiln_graph_call(g, "compress_dims", 2, (int[]){x, c}, "axis=0", "cdims");
    k = kiln_graph_call(g, "bind_dims", 1, &k, "prefix=\"k\"", "cbind");
    int cp = kiln_graph_call(g, "compress", 3, (int[]){x, c, k}, "axis=0", "compressed");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, (int[]){nz, cp}, NULL), KILN_OK);
    const char *pkg = test_tmp_path("values_nonzero.tar");
    kiln_status st = kiln_graph_compile(g, pkg, NULL);
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_model *m = st ? NULL : kiln_model_load(pkg);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        CHECK(0);
        return;
    }
    static const float data[3][6] = {{0, 0, 0, 0, 0, 0}, {0, 5, 0, -1, 0, 2}, {1, 2, 3, 4, 5, 6}};
    static const uint8_t conds[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    for (int r = 0; r < 3; r++) {
        kiln_ndarray *in[2] = {kiln_ndarray_empty(KILN_FLOAT32, 2, xd),
                               kiln_ndarray_empty(KILN_BOOL, 1, cd)};
        memcpy(kiln_ndarray_data(in[0]), data[r], sizeof data[r]);
        memcpy(kiln_ndarray_data(in[1]), conds[r], 2);
        kiln_ndarray *out[2] = {NULL, NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        int64_t want[2][6], nw = 0, rows = 0;
        for (int i = 0; i < 6; i++)
            if (data[r][i] != 0) {
                want[0][nw] = i / 3;
                want[1][nw++] = i % 3;
            }
        for (int i = 0; i < 2; i++)
            rows += conds[r][i];
        if (out[0] && out[1]) {
            CHECK_EQ_INT(kiln_ndarray_dim(out[0], 1), nw);
            const int64_t *v = kiln_ndarray_data(out[0]);
            for (int d = 0; d < 2; d++)
                for (int64_t j = 0; j < nw; j++)
                    CHECK_EQ_INT(v[d * nw + j], want[d][j]);
            CHECK_EQ_INT(kiln_ndarray_dim(out[1], 0), rows);
            const float *y = kiln_ndarray_data(out[1]);
            for (int64_t j = 0, q = 0; j < 2; j++)
                if (conds[r][j])
                    for (int i = 0; i < 3; i++, q++)
                        CHECK(y[q] == data[r][j * 3 + i]);
        }
        for (int i = 0; i < 2; i++) {
            kiln_ndarray_free(out[i]);
            kiln_ndarray_free(in[i]);
        }
    }
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
    gu_expect_infer(g, kiln_graph_call(g, op, n, in, attrs, "call"), op, want);
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
    relation("count_dims", "x", NULL, "the count must be a scalar");
    relation("split_params", "xs", "axis=1, index=2", "index 2 is not one of the 2 parts");
    relation("broadcast_dims", "xm", NULL, "1 to 16 dims");
    relation("unpool_dims", "s", "min=[1, 2, 3]", "the output shape has 2 values, min 3");
    relation("unpool_dims", "s", "min=[1, -2]", "min[1] = -2 must be 0 to 2^48");
    relation("unpool_dims", "f", "min=[1, 2]", "the output shape must be a 1-D integer tensor");
    relation("unpool_dims", "s", "min=[1, 2]", NULL);
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

/* g (freed) compiled under the default schedule or the naive one, to a
 * package named after tag, and loaded; NULL (checked) if that failed. */
static kiln_model *compile_load(kiln_graph *g, int naive, const char *tag) {
    char name[64];
    snprintf(name, sizeof name, "%s_%s.tar", tag, naive ? "naive" : "default");
    return gu_compile_load(g, naive, name);
}

/* ---- MaxUnpool at a run-time output_shape ------------------------------------------- */

/* The unpooled [1, 1, 4, 4] of ONNX's test_maxunpool_export_with_output_shape
 * (kernel 2, stride 2 over x [1, 1, 2, 2]) in zeros of shape sv, at the
 * origin: the ONNX reference implementation. */
static void ref_unpool(const float *x, const int64_t *ix, const int64_t *sv, float *out) {
    int64_t n = sv[0] * sv[1] * sv[2] * sv[3];
    for (int64_t i = 0; i < n; i++)
        out[i] = 0;
    for (int k = 0; k < 4; k++) /* N = C = 1: the flat index is h * 4 + w */
        out[(ix[k] / 4) * sv[3] + ix[k] % 4] = x[k];
}

/* Run m at output_shape sv (len values); ok: it runs, else the run fails
 * (naming the binder when the input is of the right length). */
static void run_unpool(kiln_model *m, int len, const int64_t *sv, int ok) {
    int64_t xd[4] = {1, 1, 2, 2}, sd[1] = {len};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 4, xd);
    kiln_ndarray *ix = kiln_ndarray_empty(KILN_INT64, 4, xd);
    kiln_ndarray *s = kiln_ndarray_empty(KILN_INT64, 1, sd);
    static const float xv[4] = {5, -6, 7, 8};
    static const int64_t iv[4] = {5, 7, 13, 15};
    memcpy(kiln_ndarray_data(x), xv, sizeof xv);
    memcpy(kiln_ndarray_data(ix), iv, sizeof iv);
    memcpy(kiln_ndarray_data(s), sv, (size_t)len * sizeof(int64_t));
    const kiln_ndarray *ins[3] = {x, ix, s};
    kiln_ndarray *out = NULL;
    kiln_status st = kiln_model_run_alloc(m, ins, &out, 0);
    if (!ok) {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        /* the unnamed ONNX node's binder, by its kiln name */
        CHECK_CONTAINS(kiln_last_error(), len == 4 ? "bind_dims" : "output_shape");
        CHECK_CONTAINS(kiln_last_error(), len == 4 ? "are invalid for it" : "");
        CHECK(out == NULL);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "run: %s\n", kiln_last_error());
        for (int d = 0; d < 4 && !st; d++)
            CHECK_EQ_INT(kiln_ndarray_dim(out, d), sv[d]);
        if (!st) {
            int64_t n = kiln_ndarray_numel(out);
            float *ref = malloc((size_t)n * sizeof(float));
            ref_unpool(xv, iv, sv, ref);
            const float *v = kiln_ndarray_data(out);
            int bad = 0;
            for (int64_t i = 0; i < n; i++)
                bad += v[i] != ref[i];
            CHECK_EQ_INT(bad, 0);
            free(ref);
        }
    }
    kiln_ndarray_free(out);
    kiln_ndarray_free(x);
    kiln_ndarray_free(ix);
    kiln_ndarray_free(s);
}

/* ONNX MaxUnpool whose output_shape is a graph input: one package, the
 * unpooled values padded with zeros to each run's output_shape (in N and
 * C too); one below the unpooled size, negative, too large or of the
 * wrong length fails that run, and the next good one works. */
static void test_unpool_output_shape(void) {
    const char *dir = getenv("KILN_ONNX_TESTDATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/test_maxunpool_export_with_output_shape/model.onnx",
             dir ? dir : "/usr/share/libonnx-testdata/data/node");
    for (int naive = 0; naive < 2; naive++) {
        kiln_graph *g = kiln_onnx_import(path, NULL);
        CHECK(g != NULL);
        if (!g) {
            fprintf(stderr, "import: %s\n", kiln_last_error());
            return;
        }
        kiln_model *m = compile_load(g, naive, "unpool");
        if (!m)
            continue;
        run_unpool(m, 4, (const int64_t[]){1, 1, 5, 5}, 1); /* the node test's */
        run_unpool(m, 4, (const int64_t[]){1, 1, 4, 4}, 1); /* the unpooled size */
        run_unpool(m, 4, (const int64_t[]){2, 3, 4, 9}, 1); /* grows, N and C too */
        run_unpool(m, 4, (const int64_t[]){1, 1, 3, 5}, 0); /* below the unpooled 4 */
        run_unpool(m, 4, (const int64_t[]){0, 1, 4, 4}, 0);
        run_unpool(m, 4, (const int64_t[]){1, 1, -4, 4}, 0);
        run_unpool(m, 4, (const int64_t[]){1, 1, INT64_MAX, 4}, 0);
        run_unpool(m, 4, (const int64_t[]){1, 1, 1 << 25, 1 << 25}, 0); /* past 2^48 */
        run_unpool(m, 3, (const int64_t[]){1, 5, 5}, 0);                /* not 4 values */
        run_unpool(m, 4, (const int64_t[]){1, 2, 6, 4}, 1);             /* fine again */
        kiln_model_free(m);
    }
}

/* ---- image.resize at run-time scales or sizes ------------------------------------ */

enum { RH = 3, RW = 4 }; /* x is [1, 2, RH, RW] */

/* y = image.resize(x, bind_dims(resize_dims(x, v)), [v]) + 1, linear
 * (half_pixel) or nearest (asymmetric, floor), for v the scales (float32)
 * or the sizes (int64), a graph input of 4 values. */
static kiln_graph *make_resize_graph(int sizes, int linear) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[4] = {1, 2, RH, RW}, vd[1] = {4};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    int v = kiln_graph_var(g, "v", sizes ? KILN_INT64 : KILN_FLOAT32, 1, vd, NULL);
    int xv[3] = {x, v, v};
    int d = kiln_graph_call(g, "resize_dims", 2, xv, sizes ? "sizes=1" : NULL, "dims");
    xv[1] = kiln_graph_call(g, "bind_dims", 1, &d, "prefix=\"s\"", "bind");
    char attrs[200];
    snprintf(attrs, sizeof attrs, "scales_input=%d, method=\"%s\", %s", !sizes,
             linear ? "linear" : "nearest",
             linear ? "coordinate_transformation_mode=\"half_pixel\""
                    : "coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\"");
    int r = kiln_graph_call(g, "image.resize", sizes ? 2 : 3, xv, attrs, "resized");
    kiln_ndarray *one = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
    *(float *)kiln_ndarray_data(one) = 1;
    int rc[2] = {r, kiln_graph_const(g, "one", one)};
    kiln_ndarray_free(one);
    int y = kiln_graph_call(g, "add", 2, rc, NULL, "y");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    return g;
}

/* ONNX's 1-D sampling of output index o on an axis of n inputs at scale s:
 * taps i[0..1] (clamped to the edge) with weights w. */
static void ref_taps(int linear, int o, int n, double s, int *i, double *w) {
    double c = linear ? (o + 0.5) / s - 0.5 : o / s, f = floor(c);
    i[0] = (int)fmin(fmax(f, 0), n - 1);
    i[1] = (int)fmin(fmax(f + 1, 0), n - 1);
    w[0] = linear ? 1 - (c - f) : 1;
    w[1] = linear ? c - f : 0;
}

/* Run m at values val (the scales, or the sizes); want: the output's H and
 * W, or NULL: the run fails with an error containing err. */
static void run_resize(kiln_model *m, int sizes, int linear, const double *val, const int64_t *want,
                       const char *err) {
    int64_t xd[4] = {1, 2, RH, RW}, vd[1] = {4};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 4, xd);
    kiln_ndarray *v = kiln_ndarray_empty(sizes ? KILN_INT64 : KILN_FLOAT32, 1, vd);
    float *xv = kiln_ndarray_data(x);
    for (int i = 0; i < 2 * RH * RW; i++)
        xv[i] = (float)((i * 5) % 11) - 3.5f;
    for (int k = 0; k < 4; k++)
        if (sizes)
            ((int64_t *)kiln_ndarray_data(v))[k] = (int64_t)val[k];
        else
            ((float *)kiln_ndarray_data(v))[k] = (float)val[k];
    const kiln_ndarray *ins[2] = {x, v};
    kiln_ndarray *out = NULL;
    kiln_status st = kiln_model_run_alloc(m, ins, &out, 0);
    if (!want) {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), err);
        CHECK(out == NULL);
    } else {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "run: %s\n", kiln_last_error());
        int64_t oh = want[0], ow = want[1];
        CHECK(!st && kiln_ndarray_ndim(out) == 4 && kiln_ndarray_dim(out, 1) == 2 &&
              kiln_ndarray_dim(out, 2) == oh && kiln_ndarray_dim(out, 3) == ow);
        /* the scales of H and W: given, or out / in */
        double sh = sizes ? (double)oh / RH : (double)(float)val[2];
        double sw = sizes ? (double)ow / RW : (double)(float)val[3];
        const float *y = st ? NULL : kiln_ndarray_data(out);
        int bad = 0;
        for (int c = 0; y && c < 2; c++)
            for (int h = 0; h < oh; h++)
                for (int w = 0; w < ow; w++) {
                    int ih[2], iw[2];
                    double wh[2], ww[2], e = 1;
                    ref_taps(linear, h, RH, sh, ih, wh);
                    ref_taps(linear, w, RW, sw, iw, ww);
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            e += wh[a] * ww[b] * xv[(c * RH + ih[a]) * RW + iw[b]];
                    bad += fabs(y[(c * oh + h) * ow + w] - e) > 1e-5;
                }
        CHECK_EQ_INT(bad, 0);
    }
    kiln_ndarray_free(out);
    kiln_ndarray_free(x);
    kiln_ndarray_free(v);
}

/* The binder's error for values resize_dims finds invalid. */
#define BAD "'bind': the size 's_0' computed in this run is -1"

/* One package per form, run at several scales or sizes: up, down, bad
 * values (the run fails naming the binder), then good ones again. */
static void test_resize_values(void) {
    for (int naive = 0; naive < 2; naive++)
        for (int sizes = 0; sizes < 2; sizes++) {
            int linear = !sizes;
            kiln_model *m = compile_load(make_resize_graph(sizes, linear), naive,
                                         sizes ? "resize_sizes" : "resize_scales");
            if (!m)
                continue;
            CHECK(kiln_model_output_dim_expr(m, 0, 2) &&
                  !strcmp(kiln_model_output_dim_expr(m, 0, 2), "s_2"));
            if (!sizes) {
                run_resize(m, 0, linear, (const double[]){1, 1, 2, 1.5}, (const int64_t[]){6, 6},
                           NULL);
                run_resize(m, 0, linear, (const double[]){1, 1, 0.5, 0.6}, (const int64_t[]){1, 2},
                           NULL);
                run_resize(m, 0, linear, (const double[]){1, 1, 1.7, 0.3}, (const int64_t[]){5, 1},
                           NULL);
                run_resize(m, 0, linear, (const double[]){1, 1, -1, 2}, NULL, BAD);
                run_resize(m, 0, linear, (const double[]){1, 1, NAN, 2}, NULL, BAD);
                run_resize(m, 0, linear, (const double[]){1, 1, 2, INFINITY}, NULL, BAD);
                run_resize(m, 0, linear, (const double[]){1, 1, 1e30, 1}, NULL,
                           BAD); /* past 2^48 */
                run_resize(m, 0, linear, (const double[]){1, 1, 3, 0.5}, (const int64_t[]){9, 2},
                           NULL);
            } else {
                run_resize(m, 1, linear, (const double[]){1, 2, 7, 9}, (const int64_t[]){7, 9},
                           NULL);
                run_resize(m, 1, linear, (const double[]){1, 2, 2, 1}, (const int64_t[]){2, 1},
                           NULL);
                run_resize(m, 1, linear, (const double[]){1, 2, -3, 4}, NULL, BAD);
                run_resize(m, 1, linear, (const double[]){1, 2, 0, 3}, (const int64_t[]){0, 3},
                           NULL);
                run_resize(m, 1, linear, (const double[]){1, 2, 1 << 24, 1 << 24}, NULL,
                           "more than 1 TiB");
                run_resize(m, 1, linear, (const double[]){1, 2, 5, 8}, (const int64_t[]){5, 8},
                           NULL);
            }
            kiln_model_free(m);
        }
}

TEST_MAIN(TEST(test_reshape_values), TEST(test_expand_range_values), TEST(test_slice_pad_values),
          TEST(test_resize_values), TEST(test_selected_by_data), TEST(test_relation_errors),
          TEST(test_unpool_output_shape))
