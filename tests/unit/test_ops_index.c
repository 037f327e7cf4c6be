/* test_ops_index.c: the indexing ops (src/ops/index.c, and nn.nll_loss of
 * nn.c, which indexes classes by its targets) past what the ONNX node tests
 * (Debian's, and kiln's own in tests/data/index_nodes) reach: the loss's
 * ignored targets (never read, in range or not);
 * scatter reductions max and min (ONNX opset 18, which the importer does not
 * read); an index out of range when the kernel runs (KILN_ERR_RANGE, for
 * each op that reads indices from data) and when the call is folded (an
 * error naming the node); relation errors; edge shapes (k = 0, a scatter
 * without updates, a one-step scan). (Shape-deciding inputs given as data,
 * and CumSum's axis, are read when the package runs: test_runtime_axes,
 * test_runtime_values and the node tests.) */
#include <stdarg.h>

#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "op_util.h"
#include "te/interp.h"
#include "te_util.h"

/* ---- harness ------------------------------------------------------------------- */

static kiln_ndarray *array_of(ot_type t, const double *v) {
    kiln_ndarray *a = kiln_ndarray_empty(t.dt, t.nd, t.d);
    void *p = kiln_ndarray_data(a);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
        switch (t.dt) {
        case KILN_FLOAT32: ((float *)p)[i] = (float)v[i]; break;
        case KILN_FLOAT64: ((double *)p)[i] = v[i]; break;
        case KILN_FLOAT16: ((uint16_t *)p)[i] = te_float_to_half((float)v[i]); break;
        case KILN_INT32: ((int32_t *)p)[i] = (int32_t)v[i]; break;
        default: ((int64_t *)p)[i] = (int64_t)v[i]; break;
        }
    }
    return a;
}

/* Compile g (output `out`), run it on vals (the inputs in order); the run's
 * status, and output 0 copied into *res when it is KILN_OK. */
static kiln_status run_graph(kiln_graph *g, int out, int nin, kiln_ndarray *const *vals,
                             kiln_ndarray **res, const char *pkg) {
    *res = NULL;
    const char *path = test_tmp_path(pkg);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &out, NULL), KILN_OK);
    if (kiln_graph_compile(g, path, NULL) != KILN_OK) {
        fprintf(stderr, "compile %s: %s\n", pkg, kiln_last_error());
        return KILN_ERR_INVALID;
    }
    kiln_executor *ex = kiln_executor_load(path);
    if (!ex)
        return KILN_ERR_INVALID;
    for (int i = 0; i < nin; i++)
        CHECK_EQ_INT(kiln_executor_set_input(ex, kiln_executor_input_name(ex, i), vals[i]),
                     KILN_OK);
    kiln_status st = kiln_executor_run(ex);
    if (st == KILN_OK) {
        const kiln_ndarray *o = kiln_executor_output(ex, 0);
        int64_t sh[KILN_MAX_NDIM];
        for (int d = 0; d < kiln_ndarray_ndim(o); d++)
            sh[d] = kiln_ndarray_dim(o, d);
        *res = kiln_ndarray_empty(kiln_ndarray_dtype(o), kiln_ndarray_ndim(o), sh);
        kiln_ndarray_copy(*res, o);
    }
    kiln_executor_free(ex);
    return st;
}

/* Run op on inputs of types ts with values vs; *res as run_graph. */
static kiln_status run_op(const char *op, const char *attrs, int nin, const ot_type *ts,
                          const double *const *vs, kiln_ndarray **res) {
    kiln_graph *g = kiln_graph_new();
    kiln_ndarray *vals[4];
    for (int i = 0; i < nin; i++)
        vals[i] = array_of(ts[i], vs[i]);
    int c = ot_call_on_vars(g, op, attrs, nin, ts);
    CHECK(c >= 0);
    kiln_status st = c >= 0 ? run_graph(g, c, nin, vals, res, "index_op.tar") : KILN_ERR_INVALID;
    for (int i = 0; i < nin; i++)
        kiln_ndarray_free(vals[i]);
    kiln_graph_free(g);
    return st;
}

static void check_values(const kiln_ndarray *a, int64_t n, const double *want, const char *what) {
    CHECK(a != NULL);
    if (!a)
        return;
    CHECK_EQ_INT(kiln_ndarray_numel(a), n);
    for (int64_t i = 0; i < n && i < kiln_ndarray_numel(a); i++)
        if (tu_get(a, i) != want[i]) {
            fprintf(stderr, "%s[%lld] = %g, want %g\n", what, (long long)i, tu_get(a, i), want[i]);
            CHECK(tu_get(a, i) == want[i]);
            return;
        }
}

/* ---- scatter max and min ---------------------------------------------------------- */

/* op on inputs of types ts with values vs gives want (n elements). */
static void check_op(const char *op, const char *attrs, int nin, const ot_type *ts,
                     const double *const *vs, int64_t n, const double *want) {
    kiln_ndarray *r = NULL;
    CHECK_EQ_INT(run_op(op, attrs, nin, ts, vs, &r), KILN_OK);
    check_values(r, n, want, op);
    kiln_ndarray_free(r);
}

static void test_scatter_max_min(void) {
    /* duplicates reduce with the data: along axis 1, -4 is column 0 */
    const ot_type t[3] = {
        {KILN_FLOAT32, 2, {2, 4}}, {KILN_INT64, 2, {2, 3}}, {KILN_FLOAT32, 2, {2, 3}}};
    const double data[8] = {0, 5, -1, 2, 3, 3, 3, 3}, idx[6] = {0, 3, 0, 1, 1, -4},
                 upd[6] = {4, 1, -2, 7, 2, 9};
    const double *v[3] = {data, idx, upd};
    const double want_max[8] = {4, 5, -1, 2, 9, 7, 3, 3}, want_min[8] = {-2, 5, -1, 1, 3, 2, 3, 3};
    check_op("scatter_elements", "axis=1, reduction=\"max\"", 3, t, v, 8, want_max);
    check_op("scatter_elements", "axis=-1, reduction=\"min\"", 3, t, v, 8, want_min);
    /* scatter_nd on int32 rows: row 2 is hit twice, row 0 once */
    const ot_type u[3] = {
        {KILN_INT32, 2, {3, 2}}, {KILN_INT64, 2, {3, 1}}, {KILN_INT32, 2, {3, 2}}};
    const double d2[6] = {1, 2, 3, 4, 5, 6}, i2[3] = {2, 0, -1}, u2[6] = {10, -10, 0, 0, -1, 7};
    const double *v2[3] = {d2, i2, u2};
    const double nd_max[6] = {1, 2, 3, 4, 10, 7}, nd_min[6] = {0, 0, 3, 4, -1, -10};
    check_op("scatter_nd", "reduction=\"max\"", 3, u, v2, 6, nd_max);
    check_op("scatter_nd", "reduction=\"min\"", 3, u, v2, 6, nd_min);
}

/* ---- edge shapes ----------------------------------------------------------------------- */

static void test_edges(void) {
    /* no updates at all (an empty dim of the indices): the data */
    const ot_type t[3] = {
        {KILN_FLOAT32, 2, {2, 3}}, {KILN_INT64, 2, {2, 0}}, {KILN_FLOAT32, 2, {2, 0}}};
    const double data[6] = {1, 2, 3, 4, 5, 6}, none[1] = {0};
    const double *v[3] = {data, none, none};
    check_op("scatter_elements", "axis=1", 3, t, v, 6, data);
    /* an axis of 1: the exclusive scan is 0, the inclusive one the input */
    const ot_type c[1] = {{KILN_FLOAT32, 2, {3, 1}}};
    const double x[3] = {1.5, -2, 7}, zero[3] = {0, 0, 0};
    const double *cv[1] = {x};
    check_op("cumsum", "axis=1, exclusive=1, reverse=1", 1, c, cv, 3, zero);
    check_op("cumsum", "axis=-1", 1, c, cv, 3, x);
    /* topk with k = 0: empty outputs of the right shape */
    kiln_graph *g = kiln_graph_new();
    const ot_type k[1] = {{KILN_FLOAT32, 2, {3, 4}}};
    int tk = ot_call_on_vars(g, "topk", "k=0, axis=1", 1, k);
    CHECK(tk >= 0 && graph_infer_node(g, tk) == KILN_OK);
    const gnode *n = graph_node(g, tk);
    CHECK(n && n->type.is_tuple && n->type.n == 2);
    if (n && n->type.n == 2)
        CHECK(n->type.t[0].dims[1].v == 0 && n->type.t[1].dtype == KILN_INT64);
    kiln_graph_free(g);
}

/* ---- nn.nll_loss ---------------------------------------------------------------------------- */

/* Scores [2, 3, 2] (N, C, d1), targets [2, 2]: an ignore_index out of the
 * class range marks targets that are never read; the loss and the weights
 * are 0 there. */
static void test_nll_loss(void) {
    const ot_type t[3] = {
        {KILN_FLOAT32, 3, {2, 3, 2}}, {KILN_INT64, 2, {2, 2}}, {KILN_FLOAT32, 1, {3}}};
    const ot_type t32[2] = {{KILN_FLOAT32, 3, {2, 3, 2}}, {KILN_INT32, 2, {2, 2}}};
    const double x[12] = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6}, w[3] = {0.5, 2, 4};
    const double tg[4] = {2, 0, 7, 1}, plain[4] = {0, 2, 2, 1};
    const double *v[3] = {x, tg, w}, *vp[3] = {x, plain, w};
    /* x[n, t, d]: n = 0: t = 2 at d = 0 is 5, t = 0 at d = 1 is 2; n = 1: 7
       ignored, t = 1 at d = 1 is -4 */
    const double loss[4] = {-5 * 4, -2 * 0.5, 0, 4 * 2}, weight[4] = {4, 0.5, 0, 2};
    check_op("nn.nll_loss", "ignore_index=7", 3, t, v, 4, loss);
    check_op("nn.nll_loss_weight", "ignore_index=7", 3, t, v, 4, weight);
    const double loss2[4] = {-1, -6, 5, 4}, ones[4] = {1, 1, 1, 1};
    check_op("nn.nll_loss", NULL, 2, t32, vp, 4, loss2);
    check_op("nn.nll_loss_weight", NULL, 2, t32, vp, 4, ones);
}

/* ---- random_uniform_like ----------------------------------------------------------------- */

/* n numbers of dtype dt from random_uniform_like(seed), compiled. */
static kiln_ndarray *random_numbers(kiln_dtype dt, int64_t n, int64_t seed) {
    char attrs[32];
    snprintf(attrs, sizeof attrs, "seed=%lld", (long long)seed);
    const ot_type t[1] = {{dt, 1, {n}}};
    double *zero = calloc((size_t)n, sizeof *zero);
    const double *v[1] = {zero};
    kiln_ndarray *r = NULL;
    CHECK_EQ_INT(run_op("random_uniform_like", attrs, 1, t, v, &r), KILN_OK);
    free(zero);
    return r;
}

/* Uniform in [0, 1): the mean, the share below 0.1 and 0.5, the mean of
 * products of neighbours (1/4 when independent) and a chi-square over 64
 * bins, on 2^16 numbers each for a few seeds; seeds differ, a seed repeats
 * its numbers, and float16's are below 1 too. */
static void test_random_uniform(void) {
    enum { N = 1 << 16, BINS = 64 };
    const int64_t seeds[3] = {0, 1, -123456789};
    kiln_ndarray *r[3];
    for (int s = 0; s < 3; s++) {
        r[s] = random_numbers(KILN_FLOAT32, N, seeds[s]);
        if (!r[s])
            return;
        double sum = 0, below1 = 0, below5 = 0, pairs = 0, chi = 0;
        int64_t bins[BINS] = {0};
        for (int64_t i = 0; i < N; i++) {
            double u = tu_get(r[s], i);
            CHECK(u >= 0 && u < 1);
            sum += u;
            below1 += u < 0.1;
            below5 += u < 0.5;
            if (i)
                pairs += u * tu_get(r[s], i - 1);
            bins[(int)(u * BINS)]++;
        }
        for (int b = 0; b < BINS; b++)
            chi += (bins[b] - N / BINS) * (double)(bins[b] - N / BINS) / (N / BINS);
        /* 5 standard deviations (and chi-square of 63 degrees well past 99.99 %) */
        CHECK(fabs(sum / N - 0.5) < 5 * 0.2887 / 256);
        CHECK(fabs(below1 / N - 0.1) < 5 * 0.3 / 256);
        CHECK(fabs(below5 / N - 0.5) < 5 * 0.5 / 256);
        CHECK(fabs(pairs / (N - 1) - 0.25) < 5 * 0.19 / 256);
        CHECK(chi < 120);
    }
    int same01 = 0;
    for (int64_t i = 0; i < N; i++)
        same01 += tu_get(r[0], i) == tu_get(r[1], i);
    CHECK(same01 < 16);
    kiln_ndarray *again = random_numbers(KILN_FLOAT32, N, seeds[2]);
    for (int64_t i = 0; again && i < N; i++)
        if (tu_get(again, i) != tu_get(r[2], i)) {
            CHECK(tu_get(again, i) == tu_get(r[2], i));
            break;
        }
    /* float16 (positive, so ordered as their bits): below 1.0 (0x3c00),
       the largest near 2047/2048 */
    kiln_ndarray *h = random_numbers(KILN_FLOAT16, 4096, 5);
    uint16_t hmax = 0;
    for (int64_t i = 0; h && i < 4096; i++)
        if (((const uint16_t *)kiln_ndarray_data(h))[i] > hmax)
            hmax = ((const uint16_t *)kiln_ndarray_data(h))[i];
    CHECK(hmax < 0x3c00 && hmax > 0x3bf0);
    kiln_ndarray_free(h);
    kiln_ndarray_free(again);
    for (int s = 0; s < 3; s++)
        kiln_ndarray_free(r[s]);
}

/* ---- indices out of range ----------------------------------------------------------------- */

/* op with good indices runs; with each bad set, the run is KILN_ERR_RANGE. */
static void check_range(const char *op, const char *attrs, int nin, const ot_type *ts,
                        const double *const *vs, int which, const double *const *bad, int nbad) {
    kiln_graph *g = kiln_graph_new();
    kiln_ndarray *vals[4], *r = NULL;
    for (int i = 0; i < nin; i++)
        vals[i] = array_of(ts[i], vs[i]);
    int c = ot_call_on_vars(g, op, attrs, nin, ts);
    CHECK(c >= 0);
    char pkg[64];
    snprintf(pkg, sizeof pkg, "index_range_%s.tar", op);
    CHECK_EQ_INT(c >= 0 ? run_graph(g, c, nin, vals, &r, pkg) : KILN_ERR_INVALID, KILN_OK);
    kiln_ndarray_free(r);
    kiln_executor *ex = kiln_executor_load(test_tmp_path(pkg));
    CHECK(ex != NULL);
    for (int b = 0; ex && b < nbad; b++) {
        kiln_ndarray *bv = array_of(ts[which], bad[b]);
        for (int i = 0; i < nin; i++)
            CHECK_EQ_INT(kiln_executor_set_input(ex, kiln_executor_input_name(ex, i),
                                                 i == which ? bv : vals[i]),
                         KILN_OK);
        kiln_status st = kiln_executor_run(ex);
        if (st != KILN_ERR_RANGE)
            fprintf(stderr, "%s: bad index set %d runs with status %d\n", op, b, (int)st);
        CHECK_EQ_INT(st, KILN_ERR_RANGE);
        kiln_ndarray_free(bv);
    }
    kiln_executor_free(ex);
    for (int i = 0; i < nin; i++)
        kiln_ndarray_free(vals[i]);
    kiln_graph_free(g);
}

static void test_runtime_range(void) {
    const double data[12] = {0}, upd[12] = {0};
    /* gather_elements along axis 1 (4 columns): -4 and 3 are in range */
    const ot_type ge[2] = {{KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {2, 2}}};
    const double gi[4] = {-4, 3, 0, 1}, gb0[4] = {0, 4, 0, 0}, gb1[4] = {0, 0, -5, 0};
    const double *gv[2] = {data, gi}, *gbad[2] = {gb0, gb1};
    check_range("gather_elements", "axis=1", 2, ge, gv, 1, gbad, 2);
    /* gather_nd: tuples over dims of 3 and 4 */
    const ot_type gn[2] = {{KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {2, 2}}};
    const double ni[4] = {2, -4, -3, 3}, nb0[4] = {3, 0, 0, 0}, nb1[4] = {0, 0, 0, -5};
    const double *nv[2] = {data, ni}, *nbad[2] = {nb0, nb1};
    check_range("gather_nd", NULL, 2, gn, nv, 1, nbad, 2);
    /* scatter_elements along axis 0 (3 rows) */
    const ot_type se[3] = {
        {KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {1, 3}}, {KILN_FLOAT32, 2, {1, 3}}};
    const double si[3] = {-3, 2, 0}, sb0[3] = {0, 3, 0};
    const double *sv[3] = {data, si, upd}, *sbad[1] = {sb0};
    check_range("scatter_elements", "reduction=\"add\"", 3, se, sv, 1, sbad, 1);
    check_range("scatter_elements", NULL, 3, se, sv, 1, sbad, 1);
    /* scatter_nd: one tuple per update row */
    const ot_type sn[3] = {
        {KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {2, 1}}, {KILN_FLOAT32, 2, {2, 4}}};
    const double ti[2] = {-1, 0}, tb0[2] = {0, -4};
    const double *tv[3] = {data, ti, upd}, *tbad[1] = {tb0};
    check_range("scatter_nd", NULL, 3, sn, tv, 1, tbad, 1);
    /* reverse_sequence: a length past the time axis (4 steps) */
    const ot_type rs[2] = {{KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 1, {3}}};
    const double ri[3] = {4, 0, -2}, rb0[3] = {1, 5, 1};
    const double *rv[2] = {data, ri}, *rbad[1] = {rb0};
    check_range("reverse_sequence", "batch_axis=0, time_axis=1", 2, rs, rv, 1, rbad, 1);
    /* nn.nll_loss over 4 classes: a target of 4 or a negative one that is
       not the ignore_index (no counting from the end) */
    const ot_type nl[3] = {{KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 1, {3}}, {KILN_FLOAT32, 1, {4}}};
    const double lt[3] = {3, -2, 0}, lb0[3] = {4, 0, 0}, lb1[3] = {0, -1, 1};
    const double *lv[3] = {data, lt, data}, *lbad[2] = {lb0, lb1};
    check_range("nn.nll_loss", "ignore_index=-2", 3, nl, lv, 1, lbad, 2);
    check_range("nn.nll_loss_weight", "ignore_index=-2", 3, nl, lv, 1, lbad, 2);
    /* image.roi_align: each region's batch index, into a batch of 2 */
    const ot_type ra[3] = {
        {KILN_FLOAT32, 4, {2, 1, 2, 3}}, {KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 1, {3}}};
    const double rois[12] = {0, 0, 2, 1, 1, 0, 3, 2, -1, -1, 1, 1};
    const double ai[3] = {1, 0, 1}, ab0[3] = {0, 2, 0}, ab1[3] = {-1, 0, 0};
    const double *av[3] = {data, rois, ai}, *abad[2] = {ab0, ab1};
    check_range("image.roi_align", "output_height=2, output_width=2", 3, ra, av, 2, abad, 2);
    /* text.tfidf: the starts pick rows of the n-grams (3 of them) */
    const ot_type tf[3] = {{KILN_INT64, 2, {2, 4}}, {KILN_INT64, 2, {3, 3}}, {KILN_INT64, 1, {3}}};
    const double toks[8] = {1, 2, 1, 2, 2, 2, 1, 1}, grams[9] = {1, 1, 0, 2, 1, 2, 1, 2, 0};
    const double st[3] = {0, 2, 3}, stb0[3] = {0, 4, 5}, stb1[3] = {-2, 0, 1};
    const double *tv2[3] = {toks, grams, st}, *tbad2[2] = {stb0, stb1};
    check_range("text.tfidf", "max_per_index=2", 3, tf, tv2, 2, tbad2, 2);
}

/* Constant inputs with an index out of range: compiling fails in
 * FoldConstant, naming the node. */
static void check_fold_error(const char *op, const char *attrs, int nin, const ot_type *ts,
                             const double *const *vs, const char *msg) {
    kiln_graph *g = kiln_graph_new();
    int ids[4];
    for (int i = 0; i < nin; i++) {
        kiln_ndarray *a = array_of(ts[i], vs[i]);
        char nm[8];
        snprintf(nm, sizeof nm, "c%d", i);
        ids[i] = kiln_graph_const(g, nm, a);
        kiln_ndarray_free(a);
    }
    int c = kiln_graph_call(g, op, nin, ids, attrs, "bad_index");
    CHECK(c >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &c, NULL), KILN_OK);
    CHECK(kiln_graph_compile(g, test_tmp_path("index_fold.tar"), NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "bad_index");
    CHECK_CONTAINS(kiln_last_error(), msg);
    kiln_graph_free(g);
}

static void test_fold_range(void) {
    const double data[12] = {0}, upd[3] = {0};
    const ot_type gn[2] = {{KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {2, 2}}};
    const double ni[4] = {2, 1, 0, 4};
    const double *nv[2] = {data, ni};
    check_fold_error("gather_nd", NULL, 2, gn, nv, "index 4 is out of range for a dim of 4");
    const ot_type se[3] = {
        {KILN_FLOAT32, 2, {3, 4}}, {KILN_INT64, 2, {1, 3}}, {KILN_FLOAT32, 2, {1, 3}}};
    const double si[3] = {0, -7, 1};
    const double *sv[3] = {data, si, upd};
    check_fold_error("scatter_elements", "axis=1", 3, se, sv, "index -7 is out of range");
}

/* ---- relation errors ---------------------------------------------------------------------- */

static void test_relation_errors(void) {
    ot_expect_error("nn.nll_loss", NULL, 2, T(F32(3, 4), I64(3, 4)), "the targets have rank 2");
    ot_expect_error("nn.nll_loss", NULL, 2, T(F32(3, 4, 2), I64(3, 3)),
                    "dim 1 of the targets differs from dim 2 of the scores");
    ot_expect_error("nn.nll_loss", NULL, 2, T(F32(3, 0), I64(3)),
                    "the class dim (1) of the scores must be concrete and non-empty");
    ot_expect_error("nn.nll_loss", NULL, 2, T(F32(3, 4), F32(3)), "the targets must be integers");
    ot_expect_error("nn.nll_loss", NULL, 2, T(I64(3, 4), I64(3)), "needs float scores");
    ot_expect_error("nn.nll_loss", NULL, 2, T(F32(3), I64(3)), "the scores need at least 2 dims");
    ot_expect_error("nn.nll_loss_weight", NULL, 3, T(F32(3, 4), I64(3), F32(3)),
                    "the weights must be 1-D with one per class (4)");
    ot_expect_error("nn.nll_loss", NULL, 3, T(F32(3, 4), I64(3), I64(4)),
                    "the weights are int64, the scores float32");
    ot_expect_error("random_uniform_like", NULL, 1, T(I64(3, 4)), "needs a float input, not int64");
    ot_expect_error("gather_elements", "axis=2", 2, T(F32(3, 4), I64(3, 4)),
                    "axis 2 is out of range for a 2-D input");
    ot_expect_error("gather_elements", NULL, 2, T(F32(3, 4), I64(3, 5)),
                    "dim 1 of the indices is larger than the data's");
    ot_expect_error("gather_elements", NULL, 2, T(F32(3, 4), F32(3, 4)),
                    "indices must be integers");
    ot_expect_error("gather_elements", NULL, 2, T(F32(0, 4), I64(1, 4)),
                    "cannot index the empty dim 0");
    ot_expect_error("gather_nd", NULL, 2, T(F32(3, 4), I64(2, 3)),
                    "the last dim of the indices must be 1 to 2");
    ot_expect_error("gather_nd", "batch_dims=1", 2, T(F32(3, 4), I64(2, 1)),
                    "batch dim 0 differs between data and indices");
    ot_expect_error("gather_nd", "batch_dims=2", 2, T(F32(3, 4), I64(3, 1)),
                    "batch_dims 2 must be below both ranks");
    ot_expect_error("scatter_elements", "reduction=\"sub\"", 3, T(F32(3, 4), I64(1, 2), F32(1, 2)),
                    "reduction 'sub' is not none, add, mul, max or min");
    ot_expect_error("scatter_elements", NULL, 3, T(F32(3, 4), I64(1, 2), F32(1, 3)),
                    "updates and indices differ in dim 1");
    ot_expect_error("scatter_nd", NULL, 3, T(F32(3, 4), I64(2, 1), F32(2, 3)),
                    "dim 1 of the updates does not match");
    ot_expect_error("scatter_nd", NULL, 3, T(F32(3, 4), I64(2, 1), I64(2, 4)),
                    "updates are int64, the data float32");
    ot_expect_error("one_hot", "depth=0", 2, T(I64(3), F32(2)), "depth = 0 must be 1 to 2^48");
    ot_expect_error("one_hot", "depth=4", 2, T(I64(3), F32(3)), "values must be [off, on]");
    ot_expect_error("one_hot", "depth=4, axis=2", 2, T(I64(3), F32(2)), "axis 2 is out of range");
    ot_expect_error("reverse_sequence", "batch_axis=1, time_axis=1", 2, T(F32(3, 4), I64(4)),
                    "batch_axis and time_axis are both 1");
    ot_expect_error("reverse_sequence", NULL, 2, T(F32(3, 4), I64(3)),
                    "the lengths do not have one entry per batch element");
    ot_expect_error("trilu", NULL, 2, T(F32(3, 4), I64(2)), "k must be an integer scalar");
    ot_expect_error("trilu", NULL, 1, T(F32(4)), "needs an input of at least 2 dims");
    ot_expect_error("eye_like", "dtype=\"int4\"", 1, T(F32(3, 4)), "unknown dtype 'int4'");
    ot_expect_error("eye_like", NULL, 1, T(F32(2, 3, 4)), "needs a 2-D input");
    ot_expect_error("arange", "n=3", 2, T(SCALAR(KILN_FLOAT32), SCALAR(KILN_INT32)),
                    "start and delta must be numbers of one dtype");
    ot_expect_error("arange", "n=-1", 2, T(SCALAR(KILN_INT32), SCALAR(KILN_INT32)),
                    "n = -1 must be 0 to 2^48");
    ot_expect_error("cumsum", "axis=-3", 1, T(F32(3, 4)), "axis -3 is out of range");
    ot_expect_error("topk", "k=5, axis=1", 1, T(F32(3, 4)), "k = 5 must be 0 to the axis length 4");
    ot_expect_error("tile", "reps=[2]", 1, T(F32(3, 4)), "reps has 1 values for a 2-D input");
    ot_expect_error("tile", "reps=[2, -1]", 1, T(F32(3, 4)), "reps[1] = -1 is negative");
    ot_expect_error("depth_to_space", "block_size=2", 1, T(F32(1, 6, 2, 2)),
                    "6 channels are not a multiple of block_size^2 = 4");
    ot_expect_error("depth_to_space", "block_size=2, mode=\"RCD\"", 1, T(F32(1, 8, 2, 2)),
                    "mode 'RCD' is not DCR or CRD");
    ot_expect_error("space_to_depth", "block_size=2", 1, T(F32(1, 2, 3, 4)),
                    "H = 3 and W = 4 must be multiples of block_size 2");
}

TEST_MAIN(TEST(test_scatter_max_min), TEST(test_edges), TEST(test_nll_loss),
          TEST(test_random_uniform), TEST(test_runtime_range), TEST(test_fold_range),
          TEST(test_relation_errors))
