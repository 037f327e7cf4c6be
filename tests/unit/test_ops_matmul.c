/* test_ops_matmul.c: the row-wise schedules of transformers. The
 * register-tiled GEMM schedule of nn.dense (weights
 * packed by AlterOpLayout into NC[x]n panels, of whole, half or quarter
 * registers, or transposed to KN when the units have no such divisor) and
 * nn.batch_matmul, and the lane-parallel softmax and layer norm. Each case runs
 * with the default pipeline, the naive schedule and AlterOpLayout disabled,
 * at the host's vector width and at 256 bits; all must agree with each
 * other and with the reference interpreter (src/te/interp.h) run on the
 * graph as built, the oracle. */
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph_util.h"
#include "te_util.h"

static kiln_ndarray *filled(int nd, const int64_t *shape, uint64_t *seed) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    tu_fill(a, seed);
    return a;
}

static kiln_ndarray *run(kiln_graph *g, int nin, kiln_ndarray *const *xs, const char *k1,
                         const char *v1, char *funcs, size_t cap) {
    kiln_build_options *o = kiln_build_options_new();
    if (k1)
        kiln_build_options_set(o, k1, v1);
    kiln_ndarray *r = gu_compile_run(g, o, nin, (const kiln_ndarray *const *)xs, NULL, funcs, cap);
    kiln_build_options_free(o);
    return r;
}

/* The oracle: output 0 of g evaluated by the reference interpreter on xs,
 * no compiler involved; NULL (printed) on an error. */
static kiln_ndarray *interpret(kiln_graph *g, int nin, kiln_ndarray *const *xs) {
    kiln_ndarray *outs[8] = {NULL};
    if (kiln_graph_infer_types(g) != KILN_OK ||
        graph_eval(g, nin, (const kiln_ndarray *const *)xs, 0, outs) != KILN_OK) {
        fprintf(stderr, "interpreter: %s\n", kiln_last_error());
        return NULL;
    }
    for (int k = 1; k < g->nout && k < 8; k++)
        kiln_ndarray_free(outs[k]);
    return outs[0];
}

/* Four compilations of g on inputs xs and the interpreter; all must agree. */
static void check_all(const char *what, kiln_graph *g, int nin, kiln_ndarray *const *xs) {
    char f[4][4096];
    kiln_ndarray *def = run(g, nin, xs, NULL, NULL, f[0], sizeof f[0]);
    kiln_ndarray *naive = run(g, nin, xs, "schedule", "naive", f[1], sizeof f[1]);
    kiln_ndarray *plain = run(g, nin, xs, "disabled-pass", "AlterOpLayout", f[2], sizeof f[2]);
    kiln_ndarray *v256 = run(g, nin, xs, "vector-bits", "256", f[3], sizeof f[3]);
    kiln_ndarray *ref = interpret(g, nin, xs);
    CHECK(def && naive && plain && v256 && ref);
    if (def && naive && plain && v256 && ref) {
        double e1 = tu_max_rel_err(def, naive), e2 = tu_max_rel_err(def, plain),
               e3 = tu_max_rel_err(v256, naive), e4 = 0;
        const kiln_ndarray *all[4] = {def, naive, plain, v256};
        for (int k = 0; k < 4; k++)
            e4 = fmax(e4, tu_max_rel_err(all[k], ref));
        if (e1 > 1e-4 || e2 > 1e-4 || e3 > 1e-4 || e4 > 1e-4)
            fprintf(stderr,
                    "%s: default/naive %.2g, default/plain %.2g, 256-bit/naive %.2g, "
                    "worst/interpreter %.2g\n",
                    what, e1, e2, e3, e4);
        CHECK(e1 < 1e-4);
        CHECK(e2 < 1e-4);
        CHECK(e3 < 1e-4);
        CHECK(e4 < 1e-4);
    }
    kiln_ndarray_free(ref);
    kiln_ndarray_free(def);
    kiln_ndarray_free(naive);
    kiln_ndarray_free(plain);
    kiln_ndarray_free(v256);
}

typedef struct {
    const char *what;
    int64_t b, m, k, n;
    int gelu;
    int64_t lead; /* a leading dim before b (4-D data), or 0 */
} dense_case;

static void test_dense(void) {
    static const dense_case cases[] = {
        {"dense 128x768 -> 96 with bias", 1, 128, 768, 96, 0},
        {"dense 3-D batch, 2x24x64 -> 48, GELU epilogue", 2, 24, 64, 48, 1},
        {"dense GEMV 1x300 -> 1000 (half-register panels)", 0, 1, 300, 1000, 0},
        {"dense 5x33 -> 30 (no vector-wide divisor: KN)", 0, 5, 33, 30, 0},
        {"dense odd rows 7x40 -> 32", 0, 7, 40, 32, 1},
        {"dense long k 12x3072 -> 64 (panel limited by L2)", 0, 12, 3072, 64, 0},
        /* the rows of all leading dims tiled as one row space, in tiles that
           never straddle a row of the inner dims */
        {"dense 4-D 1x7x6x40 -> 64 (rows folded)", 7, 6, 40, 64, 0, 1},
        {"dense 4-D 2x3x5x24 -> 32, GELU (rows folded)", 3, 5, 24, 32, 1, 2},
        {"dense sequence-first 9x1x32 -> 48 (rows folded over the batch)", 9, 1, 32, 48, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const dense_case *d = &cases[c];
        uint64_t seed = 7 + c;
        int64_t xs4[4] = {d->lead, d->b, d->m, d->k}, *xs = d->lead ? xs4
                                                            : d->b  ? xs4 + 1
                                                                    : xs4 + 2;
        int xnd = d->lead ? 4 : d->b ? 3 : 2;
        int64_t ws[2] = {d->n, d->k}, bs[1] = {d->n}, one[1] = {1};
        kiln_ndarray *x = filled(xnd, xs, &seed), *w = filled(2, ws, &seed),
                     *bv = filled(1, bs, &seed);
        kiln_ndarray *half = kiln_ndarray_empty(KILN_FLOAT32, 1, one);
        ((float *)kiln_ndarray_data(half))[0] = 0.5f;
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, xnd, xs, NULL);
        int in[2] = {xi, kiln_graph_const(g, "w", w)};
        int y = kiln_graph_call(g, "nn.dense", 2, in, NULL, "dense");
        int ab[2] = {y, kiln_graph_const(g, "b", bv)};
        y = kiln_graph_call(g, "add", 2, ab, NULL, "bias");
        if (d->gelu) { /* y * (0.5 * (1 + erf(y * 0.5))): a diamond */
            int h = kiln_graph_const(g, "half", half);
            int a1[2] = {y, h};
            int t = kiln_graph_call(g, "multiply", 2, a1, NULL, "scale");
            t = kiln_graph_call(g, "erf", 1, &t, NULL, "erf");
            int a2[2] = {t, h};
            t = kiln_graph_call(g, "add", 2, a2, NULL, "shift");
            int a3[2] = {y, t};
            y = kiln_graph_call(g, "multiply", 2, a3, NULL, "gelu");
        }
        CHECK(y >= 0);
        kiln_graph_set_outputs(g, 1, &y, NULL);
        check_all(d->what, g, 1, &x);
        kiln_graph_free(g);
        kiln_ndarray_free(x);
        kiln_ndarray_free(w);
        kiln_ndarray_free(bv);
        kiln_ndarray_free(half);
    }
}

static void test_batch_matmul(void) {
    /* attention: (q x k^T) / 8, softmax, x v; plus a broadcast batch and a
       transposed B, which keeps the default schedule. The second shape has
       a prime sequence (ViT's 197 tokens, here 37): row tiles and column
       panels that do not divide it, the last of each cut short. */
    for (int shape = 0; shape < 3; shape++) {
        int64_t sq = shape == 1 ? 37 : 32;
        uint64_t seed = 3 + (uint64_t)shape;
        int64_t qs[4] = {1, 4, sq, 16}, ks[4] = {1, 4, 16, sq}, vs[4] = {1, 4, sq, 16},
                one[1] = {1}, ms[4] = {1, 1, 1, sq};
        kiln_ndarray *q = filled(4, qs, &seed), *k = filled(4, ks, &seed),
                     *v = filled(4, vs, &seed), *mask = filled(4, ms, &seed);
        kiln_ndarray *eight = kiln_ndarray_empty(KILN_FLOAT32, 1, one);
        ((float *)kiln_ndarray_data(eight))[0] = shape == 2 ? 7.0f : 8.0f;
        kiln_graph *g = kiln_graph_new();
        int qi = kiln_graph_var(g, "q", KILN_FLOAT32, 4, qs, NULL);
        int ki = kiln_graph_var(g, "k", KILN_FLOAT32, 4, ks, NULL);
        int vi = kiln_graph_var(g, "v", KILN_FLOAT32, 4, vs, NULL);
        int a1[2] = {qi, ki};
        int s = kiln_graph_call(g, "nn.batch_matmul", 2, a1, NULL, "scores");
        int a2[2] = {s, kiln_graph_const(g, "eight", eight)};
        s = kiln_graph_call(g, "divide", 2, a2, NULL, "scaled");
        if (shape == 2) { /* an additive mask over the keys, and a scale that
                             stays a division */
            int am[2] = {s, kiln_graph_const(g, "mask", mask)};
            s = kiln_graph_call(g, "add", 2, am, NULL, "masked");
        }
        s = kiln_graph_call(g, "nn.softmax", 1, &s, "axis=3", "probs");
        int a3[2] = {s, vi};
        int o = kiln_graph_call(g, "nn.batch_matmul", 2, a3, NULL, "context");
        int a4[2] = {o, vi}; /* [.., 32, 16] x [.., 32, 16]^T */
        int t = kiln_graph_call(g, "nn.batch_matmul", 2, a4, "transpose_b=1", "gram");
        CHECK(t >= 0);
        kiln_graph_set_outputs(g, 1, &t, NULL);
        kiln_ndarray *xs[3] = {q, k, v};
        static const char *const what[3] = {"attention batch_matmuls",
                                            "attention batch_matmuls, 37 tokens",
                                            "attention batch_matmuls, masked"};
        check_all(what[shape], g, 3, xs);
        /* row fusion: the scores, their scale (and mask) and the softmax are
           one kernel */
        char funcs[4096];
        kiln_ndarray *r = run(g, 3, xs, NULL, NULL, funcs, sizeof funcs);
        CHECK(strstr(funcs, "fused_batch_matmul_") != NULL && strstr(funcs, "_softmax_") != NULL &&
              strstr(funcs, "fused_softmax") == NULL);
        kiln_ndarray_free(r);
        kiln_ndarray_free(mask);
        kiln_graph_free(g);
        kiln_ndarray_free(q);
        kiln_ndarray_free(k);
        kiln_ndarray_free(v);
        kiln_ndarray_free(eight);
    }
}

/* Softmax over a last axis of 32 or more elements takes the lane-parallel
 * form (partial max and sum over 16 lanes) with its own schedule; where 16
 * does not divide the axis (ViT's 197 tokens) the last chunk overlaps the
 * one before. Against a double-precision reference, and the default
 * against the naive schedule. */
static void test_softmax_lanes(void) {
    static const int64_t lens[3] = {64, 197, 33};
    for (int c = 0; c < 3; c++) {
        int64_t n = lens[c];
        uint64_t seed = 21 + (uint64_t)c;
        int64_t xs[3] = {3, 5, n};
        kiln_ndarray *x = filled(3, xs, &seed);
        float *p = kiln_ndarray_data(x);
        for (int64_t i = 0; i < 3 * 5 * n; i++)
            p[i] *= 30.0f; /* exp would overflow without the max */
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xs, NULL);
        int y = kiln_graph_call(g, "nn.softmax", 1, &xi, "axis=-1", "softmax");
        kiln_graph_set_outputs(g, 1, &y, NULL);
        char what[64];
        snprintf(what, sizeof what, "softmax over %lld", (long long)n);
        check_all(what, g, 1, &x);
        char f[4096];
        kiln_ndarray *r = run(g, 1, &x, NULL, NULL, f, sizeof f);
        CHECK(r != NULL);
        if (r) {
            const float *o = kiln_ndarray_data(r);
            double worst = 0;
            for (int row = 0; row < 15; row++) {
                const float *pr = p + row * n, *orow = o + row * n;
                double mx = -1e300, sum = 0;
                for (int64_t k = 0; k < n; k++)
                    mx = fmax(mx, pr[k]);
                for (int64_t k = 0; k < n; k++)
                    sum += exp(pr[k] - mx);
                for (int64_t k = 0; k < n; k++) {
                    double ref = exp(pr[k] - mx) / sum;
                    worst = fmax(worst, fabs(orow[k] - ref) / (ref + 1e-30) * (ref > 1e-30));
                }
            }
            CHECK(worst < 1e-5);
            kiln_ndarray_free(r);
        }
        kiln_graph_free(g);
        kiln_ndarray_free(x);
    }
}

/* Layer norm over a last axis of 16k elements (gamma, beta) takes the
 * lane-parallel form with its row schedule: against a double-precision
 * reference, and the default against the naive schedule. */
static void test_layer_norm_lanes(void) {
    uint64_t seed = 33;
    int64_t xs[3] = {2, 7, 96}, gs[1] = {96};
    kiln_ndarray *x = filled(3, xs, &seed), *ga = filled(1, gs, &seed), *be = filled(1, gs, &seed);
    float *p = kiln_ndarray_data(x);
    for (int i = 0; i < 2 * 7 * 96; i++)
        p[i] = p[i] * 3.0f + 50.0f; /* a large mean */
    kiln_graph *g = kiln_graph_new();
    int in[3] = {kiln_graph_var(g, "x", KILN_FLOAT32, 3, xs, NULL),
                 kiln_graph_const(g, "gamma", ga), kiln_graph_const(g, "beta", be)};
    int y = kiln_graph_call(g, "nn.layer_norm", 3, in, "axis=-1, epsilon=1e-05", "ln");
    kiln_graph_set_outputs(g, 1, &y, NULL);
    check_all("layer norm over 96", g, 1, &x);
    char f[4096];
    kiln_ndarray *r = run(g, 1, &x, NULL, NULL, f, sizeof f);
    CHECK(r != NULL);
    if (r) {
        const float *o = kiln_ndarray_data(r), *gm = kiln_ndarray_data(ga),
                    *bt = kiln_ndarray_data(be);
        double worst = 0;
        for (int row = 0; row < 14; row++) {
            double mean = 0, var = 0;
            for (int k = 0; k < 96; k++)
                mean += p[row * 96 + k];
            mean /= 96;
            for (int k = 0; k < 96; k++)
                var += (p[row * 96 + k] - mean) * (p[row * 96 + k] - mean);
            var /= 96;
            for (int k = 0; k < 96; k++) {
                double ref = (p[row * 96 + k] - mean) / sqrt(var + 1e-5) * gm[k] + bt[k];
                worst = fmax(worst, fabs(o[row * 96 + k] - ref) / (1 + fabs(ref)));
            }
        }
        CHECK(worst < 1e-5);
        kiln_ndarray_free(r);
    }
    kiln_graph_free(g);
    kiln_ndarray_free(x);
    kiln_ndarray_free(ga);
    kiln_ndarray_free(be);
}

TEST_MAIN(TEST(test_dense), TEST(test_batch_matmul), TEST(test_softmax_lanes),
          TEST(test_layer_norm_lanes))
