/* test_schedule_fuzz.c: invariant 1 of ARCHITECTURE.md. Random sequences of
 * schedule primitives are applied to matmul, a padded conv2d, a
 * softmax-like chain of reductions and the Winograd convolution op (its own
 * compute; half the time on top of its own schedule); every build must
 * compute exactly what the naive default schedule computes. Primitives the schedule rejects are
 * fine (they must only fail cleanly); the test counts the accepted ones.
 * KILN_FUZZ_ITERS sets the schedules per workload (default 12). */
#include <math.h>

#include "check.h"
#include "graph/graph_internal.h"
#include "te_util.h"

typedef struct workload_ {
    kiln_ctx *ctx;
    int nargs;
    kiln_tensor *args[6];
    kiln_tensor *out;
    int nstages;
    kiln_tensor *stages[6]; /* tensors whose stages the fuzzer may touch */
    /* an op's own schedule to start from, or NULL */
    kiln_status (*base)(kiln_schedule *s, struct workload_ *w);
    const gnode *call;
    kiln_graph *graph; /* owns call */
} workload;

/* ---- matmul ------------------------------------------------------------------ */
static void make_matmul(workload *w) {
    kiln_tensor *C = tu_matmul(w->ctx, 19, 33, 24, &w->args[0], &w->args[1]);
    w->nargs = 3;
    w->args[2] = C;
    w->out = C;
    w->nstages = 1;
    w->stages[0] = C;
}

/* ---- conv2d with a padding stage --------------------------------------------- */
typedef struct {
    kiln_tensor *D, *P, *W;
    kiln_expr ci, kh, kw;
} cv_a;

static kiln_expr pad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    cv_a *c = u;
    kiln_expr h = kiln_sub(i[2], kiln_int(ctx, 1)), x = kiln_sub(i[3], kiln_int(ctx, 1));
    kiln_expr in = kiln_and(kiln_and(kiln_ge(h, kiln_int(ctx, 0)), kiln_lt(h, kiln_int(ctx, 9))),
                            kiln_and(kiln_ge(x, kiln_int(ctx, 0)), kiln_lt(x, kiln_int(ctx, 9))));
    kiln_expr hc = kiln_min(kiln_max(h, kiln_int(ctx, 0)), kiln_int(ctx, 8));
    kiln_expr xc = kiln_min(kiln_max(x, kiln_int(ctx, 0)), kiln_int(ctx, 8));
    kiln_expr idx[4] = {i[0], i[1], hc, xc};
    return kiln_select(in, kiln_tensor_at(c->D, 4, idx), kiln_float(ctx, 0));
}

static kiln_expr conv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    cv_a *c = u;
    kiln_expr di[4] = {i[0], c->ci, kiln_add(i[2], c->kh), kiln_add(i[3], c->kw)};
    kiln_expr wi[4] = {i[1], c->ci, c->kh, c->kw};
    kiln_expr ax[3] = {c->ci, c->kh, c->kw};
    return kiln_sum(kiln_mul(kiln_tensor_at(c->P, 4, di), kiln_tensor_at(c->W, 4, wi)), 3, ax);
}

static kiln_expr relu_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    kiln_tensor *t = u;
    return kiln_max(kiln_tensor_at(t, 4, i), kiln_float(ctx, 0));
}

static void make_conv(workload *w) {
    kiln_ctx *ctx = w->ctx;
    kiln_expr z = kiln_int(ctx, 0);
    kiln_expr ds[4] = {kiln_int(ctx, 1), kiln_int(ctx, 3), kiln_int(ctx, 9), kiln_int(ctx, 9)};
    kiln_expr ps[4] = {ds[0], ds[1], kiln_int(ctx, 11), kiln_int(ctx, 11)};
    kiln_expr ws[4] = {kiln_int(ctx, 5), ds[1], kiln_int(ctx, 3), kiln_int(ctx, 3)};
    kiln_expr os[4] = {ds[0], ws[0], ds[2], ds[3]};
    static cv_a c;
    c.D = kiln_placeholder(ctx, 4, ds, KILN_FLOAT32, "data");
    c.W = kiln_placeholder(ctx, 4, ws, KILN_FLOAT32, "weight");
    c.P = kiln_compute(ctx, 4, ps, pad_body, &c, "pad");
    c.ci = kiln_reduce_axis(ctx, z, ds[1], "ci");
    c.kh = kiln_reduce_axis(ctx, z, ws[2], "kh");
    c.kw = kiln_reduce_axis(ctx, z, ws[3], "kw");
    kiln_tensor *O = kiln_compute(ctx, 4, os, conv_body, &c, "conv");
    kiln_tensor *R = kiln_compute(ctx, 4, os, relu_body, O, "relu");
    w->nargs = 3;
    w->args[0] = c.D;
    w->args[1] = c.W;
    w->args[2] = R;
    w->out = R;
    w->nstages = 3;
    w->stages[0] = c.P;
    w->stages[1] = O;
    w->stages[2] = R;
}

/* ---- softmax over rows: max, exp(x - max), sum, divide ------------------------- */
typedef struct {
    kiln_tensor *X, *M, *E, *S;
    kiln_expr k1, k2;
} sm_a;

static kiln_expr sm_max(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_a *s = u;
    kiln_expr idx[2] = {i[0], s->k1};
    return kiln_max_reduce(kiln_tensor_at(s->X, 2, idx), 1, &s->k1);
}

static kiln_expr sm_exp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_a *s = u;
    return kiln_exp(kiln_sub(kiln_tensor_at(s->X, 2, i), kiln_tensor_at(s->M, 1, i)));
}

static kiln_expr sm_sum(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_a *s = u;
    kiln_expr idx[2] = {i[0], s->k2};
    return kiln_sum(kiln_tensor_at(s->E, 2, idx), 1, &s->k2);
}

static kiln_expr sm_div(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_a *s = u;
    return kiln_div(kiln_tensor_at(s->E, 2, i), kiln_tensor_at(s->S, 1, i));
}

static void make_softmax(workload *w) {
    kiln_ctx *ctx = w->ctx;
    kiln_expr sh[2] = {kiln_int(ctx, 7), kiln_int(ctx, 37)};
    static sm_a s;
    s.X = kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "X");
    s.k1 = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k");
    s.k2 = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k");
    s.M = kiln_compute(ctx, 1, sh, sm_max, &s, "rowmax");
    s.E = kiln_compute(ctx, 2, sh, sm_exp, &s, "exp");
    s.S = kiln_compute(ctx, 1, sh, sm_sum, &s, "rowsum");
    kiln_tensor *Y = kiln_compute(ctx, 2, sh, sm_div, &s, "softmax");
    w->nargs = 2;
    w->args[0] = s.X;
    w->args[1] = Y;
    w->out = Y;
    w->nstages = 4;
    w->stages[0] = s.M;
    w->stages[1] = s.E;
    w->stages[2] = s.S;
    w->stages[3] = Y;
}

/* ---- the fuzzer ----------------------------------------------------------------- */

static kiln_expr pick_leaf(kiln_stage *st, uint64_t *rng, int *pos) {
    kiln_expr leaves[128];
    int n = kiln_stage_leaf_axes(st, leaves, 128);
    if (n == 0)
        return NULL;
    int p = (int)(tu_rand(rng) % (uint64_t)n);
    if (tu_rand(rng) % 2)
        p = n - 1; /* favour the innermost axis */
    if (pos)
        *pos = p;
    return leaves[p];
}

/* Apply one random primitive; 1 if it was accepted. */
/* ---- the Winograd op (nn.contrib_conv2d_winograd_NCHWc, F(2x2)) ----------------
 * 8 channels in blocks of 4, 7x6 pixels padded by 1 (partial tiles), 8
 * output channels whose weight block pairs two output blocks. */
static kiln_status wino_base(kiln_schedule *s, workload *w) {
    /* SSE-width blocks: 4 lanes, 16 registers */
    static const kiln_target sse = {.vector_bytes = 16, .vector_regs = 16};
    return w->call->op->schedule(s, w->call, w->out, w->out, &sse);
}

static void make_winograd(workload *w) {
    kiln_ctx *ctx = w->ctx;
    int64_t xs[5] = {1, 2, 7, 6, 4}, ws[5] = {16, 1, 2, 4, 8};
    kiln_graph *g = kiln_graph_new();
    kiln_ndarray *wv = kiln_ndarray_empty(KILN_FLOAT32, 5, ws);
    int in[2] = {kiln_graph_var(g, "x", KILN_FLOAT32, 5, xs, NULL), kiln_graph_const(g, "w", wv)};
    kiln_ndarray_free(wv);
    int c = kiln_graph_call(g, "nn.contrib_conv2d_winograd_NCHWc", 2, in,
                            "tile_size=2, padding=[1, 1, 1, 1], data_layout=\"NCHW4c\", "
                            "out_layout=\"NCHW4c\"",
                            "wino");
    kiln_graph_set_outputs(g, 1, &c, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    w->graph = g;
    w->call = g->nodes[c];
    kiln_expr xd[5], wd[5];
    for (int i = 0; i < 5; i++)
        xd[i] = kiln_int(ctx, xs[i]), wd[i] = kiln_int(ctx, ws[i]);
    kiln_tensor *args[2] = {kiln_placeholder(ctx, 5, xd, KILN_FLOAT32, "x"),
                            kiln_placeholder(ctx, 5, wd, KILN_FLOAT32, "w")},
                *out = NULL;
    CHECK_EQ_INT(w->call->op->compute(ctx, w->call, args, &out), KILN_OK);
    kiln_tensor *m[2], *v[2], *p[2];
    CHECK_EQ_INT(kiln_tensor_inputs(out, m, 2), 1);
    CHECK_EQ_INT(kiln_tensor_inputs(m[0], v, 2), 2);
    CHECK_EQ_INT(kiln_tensor_inputs(v[0], p, 2), 1);
    w->nargs = 3;
    w->args[0] = args[0];
    w->args[1] = args[1];
    w->args[2] = out;
    w->out = out;
    w->nstages = 4;
    w->stages[0] = p[0];
    w->stages[1] = v[0];
    w->stages[2] = m[0];
    w->stages[3] = out;
    w->base = wino_base;
}

static int random_primitive(kiln_schedule *s, workload *w, uint64_t *rng) {
    static const int64_t factors[] = {1, 2, 3, 4, 5, 8, 16};
    kiln_tensor *t = w->stages[tu_rand(rng) % (uint64_t)w->nstages];
    kiln_stage *st = kiln_schedule_stage(s, t);
    if (!st)
        return 0;
    int pos;
    kiln_expr ax = pick_leaf(st, rng, &pos), o, i;
    int64_t f = factors[tu_rand(rng) % 7];
    switch (tu_rand(rng) % 10) {
    case 0:
    case 1: return kiln_split(st, ax, f, &o, &i) == KILN_OK;
    case 2: return kiln_split_nparts(st, ax, f, &o, &i) == KILN_OK;
    case 3: {
        kiln_expr leaves[128];
        int n = kiln_stage_leaf_axes(st, leaves, 128);
        if (n < 2)
            return 0;
        int p = (int)(tu_rand(rng) % (uint64_t)(n - 1));
        return kiln_fuse(st, leaves[p], leaves[p + 1], &o) == KILN_OK;
    }
    case 4: {
        kiln_expr leaves[128];
        int n = kiln_stage_leaf_axes(st, leaves, 128);
        for (int k = n - 1; k > 0; k--) { /* shuffle */
            int j = (int)(tu_rand(rng) % (uint64_t)(k + 1));
            kiln_expr tmp = leaves[k];
            leaves[k] = leaves[j];
            leaves[j] = tmp;
        }
        return kiln_reorder(st, n, leaves) == KILN_OK;
    }
    case 5: return kiln_vectorize(st, ax) == KILN_OK;
    case 6: return kiln_unroll(st, ax) == KILN_OK;
    case 7: return kiln_parallel(st, ax) == KILN_OK;
    case 8: return kiln_compute_inline(st) == KILN_OK;
    default: {
        /* compute_at into a consumer (a later stage), or back to root */
        if (tu_rand(rng) % 4 == 0)
            return kiln_compute_root(st) == KILN_OK;
        kiln_tensor *c = w->stages[tu_rand(rng) % (uint64_t)w->nstages];
        kiln_stage *cs = kiln_schedule_stage(s, c);
        return cs && kiln_compute_at(st, cs, pick_leaf(cs, rng, NULL)) == KILN_OK;
    }
    }
}

static void fuzz(const char *name, void (*make)(workload *), int iters, uint64_t seed0) {
    workload w;
    memset(&w, 0, sizeof w);
    w.ctx = kiln_ctx_new();
    make(&w);
    CHECK(w.out != NULL);
    kiln_build_options *opts = kiln_build_options_new();
    kiln_build_options_set(opts, "cflags", "-O1 -march=native");
    /* the reference: the naive schedule */
    kiln_ndarray *ref[6], *got[6];
    uint64_t fill = 1234;
    for (int a = 0; a < w.nargs; a++) {
        ref[a] = tu_array_for(w.args[a], NULL, NULL);
        got[a] = tu_array_for(w.args[a], NULL, NULL);
        tu_fill(ref[a], &fill);
    }
    kiln_schedule *naive = kiln_schedule_create(w.ctx, 1, &w.out);
    CHECK_EQ_INT(tu_build_run(naive, w.nargs, w.args, name, ref, opts), 0);
    int accepted = 0, ran = 0;
    uint64_t rng = seed0;
    for (int it = 0; it < iters; it++) {
        kiln_schedule *s = kiln_schedule_create(w.ctx, 1, &w.out);
        int based = w.base && tu_rand(&rng) % 2;
        if (based)
            CHECK_EQ_INT(w.base(s, &w), KILN_OK);
        /* cache_write/read first, sometimes */
        if (!based && tu_rand(&rng) % 3 == 0) {
            kiln_tensor *t = w.stages[tu_rand(&rng) % (uint64_t)w.nstages];
            kiln_tensor *cw = kiln_cache_write(s, t, tu_rand(&rng) % 2 ? "local" : "global");
            if (cw) {
                accepted++;
                kiln_stage *cs = kiln_schedule_stage(s, cw), *ts = kiln_schedule_stage(s, t);
                if (tu_rand(&rng) % 2 &&
                    kiln_compute_at(cs, ts, pick_leaf(ts, &rng, NULL)) == KILN_OK)
                    accepted++;
            }
        }
        int steps = 2 + (int)(tu_rand(&rng) % 7);
        char log[4096] = "";
        for (int k = 0; k < steps; k++)
            accepted += random_primitive(s, &w, &rng);
        char *ir = kiln_lower_to_string(s, w.nargs, w.args, name);
        CHECK(ir != NULL);
        if (!ir) {
            fprintf(stderr, "%s schedule %d failed to lower: %s\n", name, it, kiln_last_error());
            continue;
        }
        for (int a = 0; a < w.nargs; a++) {
            kiln_ndarray_copy(got[a], ref[a]);
            if (a == w.nargs - 1)
                memset(kiln_ndarray_data(got[a]), 0xff, (size_t)kiln_ndarray_numel(got[a]) * 4);
        }
        int fail = tu_build_run(s, w.nargs, w.args, name, got, opts);
        double err = fail ? 1e30 : tu_max_rel_err(got[w.nargs - 1], ref[w.nargs - 1]);
        CHECK(!fail);
        CHECK(err < 1e-5);
        if (fail || err >= 1e-5) {
            snprintf(log, sizeof log, "%s schedule %d: error %g\n%s\n", name, it, err, ir);
            fputs(log, stderr);
        }
        ran++;
        free(ir);
    }
    printf("%s: %d schedules built and compared, %d primitives accepted\n", name, ran, accepted);
    CHECK(accepted > iters); /* the fuzzer really scheduled something */
    for (int a = 0; a < w.nargs; a++) {
        kiln_ndarray_free(ref[a]);
        kiln_ndarray_free(got[a]);
    }
    kiln_build_options_free(opts);
    kiln_ctx_free(w.ctx);
    kiln_graph_free(w.graph);
}

static int iters(void) {
    const char *e = getenv("KILN_FUZZ_ITERS");
    int n = e ? atoi(e) : 12;
    return n > 0 ? n : 12;
}

static void test_fuzz_matmul(void) {
    fuzz("matmul", make_matmul, iters(), 0x1234567ull);
}
static void test_fuzz_conv2d(void) {
    fuzz("conv2d", make_conv, iters(), 0xabcdefull);
}
static void test_fuzz_softmax(void) {
    fuzz("softmax", make_softmax, iters(), 0x5eed5ull);
}
static void test_fuzz_winograd(void) {
    fuzz("winograd", make_winograd, iters(), 0x3a3a3ull);
}

TEST_MAIN(TEST(test_fuzz_matmul), TEST(test_fuzz_conv2d), TEST(test_fuzz_softmax),
          TEST(test_fuzz_winograd))
