/* test_passes.c: the graph passes and the pass manager: what each pass
 * rewrites (checked on the printed IR and the kernel count of the compiled
 * package), that results stay the same, --opt-level, --disabled-pass and
 * the IR dumps. FoldConstant evaluates with the reference interpreter: it
 * runs with no C compiler, and integer division follows kiln's rule. */
#include <math.h>
#include <sys/stat.h>

#include "graph/graph_internal.h"
#include "graph_util.h"
#include "passes/passes.h"
#include "te_util.h"

static kiln_ndarray *filled(int nd, const int64_t *shape, uint64_t *seed, double lo) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    tu_fill(a, seed);
    float *p = kiln_ndarray_data(a);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
        if (p[i] < lo)
            p[i] = (float)(lo + fabs(p[i]));
    return a;
}

/* conv -> batch_norm -> relu, plus a dead branch, a duplicated relu and a
 * constant subexpression (w2 * 2) feeding an add. */
static kiln_graph *make_graph(kiln_ndarray **arrays) {
    uint64_t seed = 5;
    int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, cs[1] = {3}, bs[3] = {3, 1, 1};
    arrays[0] = filled(4, xs, &seed, -2);
    arrays[1] = filled(4, ws, &seed, -2);
    for (int i = 2; i < 6; i++)
        arrays[i] = filled(1, cs, &seed, i == 5 ? 0.1 : -2);
    arrays[6] = filled(3, bs, &seed, -2);
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int w = kiln_graph_const(g, "w", arrays[1]);
    int p[4];
    for (int i = 0; i < 4; i++)
        p[i] = kiln_graph_const(g,
                                i == 0   ? "gamma"
                                : i == 1 ? "beta"
                                : i == 2 ? "mean"
                                         : "var",
                                arrays[2 + i]);
    int c2 = kiln_graph_const(g, "c", arrays[6]);
    int two[2] = {c2, c2};
    int cc = kiln_graph_call(g, "add", 2, two, NULL, "const_add"); /* folds */
    int in[2] = {x, w};
    int conv = kiln_graph_call(g, "nn.conv2d", 2, in, "padding=[1, 1, 1, 1]", "conv");
    int bn_in[5] = {conv, p[0], p[1], p[2], p[3]};
    int bn = kiln_graph_call(g, "nn.batch_norm", 5, bn_in, "epsilon=0.001", "bn");
    int r1 = kiln_graph_call(g, "nn.relu", 1, &bn, NULL, "relu_a");
    int r2 = kiln_graph_call(g, "nn.relu", 1, &bn, NULL, "relu_b"); /* same as r1 */
    int dead = kiln_graph_call(g, "exp", 1, &conv, NULL, "dead");
    (void)dead;
    int s[2] = {r1, r2};
    int sum = kiln_graph_call(g, "add", 2, s, NULL, "sum");
    int s2[2] = {sum, cc};
    int out = kiln_graph_call(g, "add", 2, s2, NULL, "out");
    kiln_graph_set_outputs(g, 1, &out, NULL);
    return g;
}

/* Compile with options, run on x, return the output (caller frees). */
static kiln_ndarray *compile_run(kiln_graph *g, kiln_build_options *o, const kiln_ndarray *x,
                                 int *nkernels) {
    return gu_compile_run(g, o, 1, &x, nkernels, NULL, 0);
}

/* The graph dumps (NN_when_pass.txt) in dir. */
static int count_files(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s/[0-9][0-9]_*.txt | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

static void test_pipeline(void) {
    kiln_ndarray *a[7];
    kiln_graph *g = make_graph(a);
    /* opt level 0: SimplifyInference only, one kernel per op */
    kiln_build_options *o0 = kiln_build_options_new();
    kiln_build_options_set(o0, "opt-level", "0");
    int k0 = 0, k3 = 0;
    kiln_ndarray *r0 = compile_run(g, o0, a[0], &k0);
    /* opt level 3 with an IR dump */
    kiln_build_options *o3 = kiln_build_options_new();
    const char *dir = test_tmp_path("passes_ir");
    char rm[1200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(rm), 0);
    mkdir(dir, 0755);
    CHECK_EQ_INT(kiln_build_options_set(o3, "dump-ir", dir), KILN_OK);
    kiln_ndarray *r3 = compile_run(g, o3, a[0], &k3);
    CHECK(r0 && r3);
    /* level 0: const_add, conv, multiply+add (from bn), 2 relus, exp (dead), sum, out */
    CHECK_EQ_INT(k0, 9);
    /* level 3: conv+multiply+add+relu+add+add fused (CSE merged the relus, DCE
       dropped exp, FoldConstant folded const_add), between AlterOpLayout's two
       layout transforms (NCHW -> NCHW[x]c -> NCHW) */
    CHECK_EQ_INT(k3, 3);
    CHECK_EQ_INT(count_files(dir), 9); /* input + 8 passes */
    char path[1200];
    snprintf(path, sizeof path, "%s/01_after_SimplifyInference.txt", dir);
    size_t len;
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        static char text[1 << 16];
        len = fread(text, 1, sizeof text - 1, f);
        text[len] = 0;
        fclose(f);
        CHECK(strstr(text, "nn.batch_norm") == NULL);
        CHECK_CONTAINS(text, "multiply(");
        CHECK_CONTAINS(text, "span=\"bn\""); /* the source name survives */
    }
    if (r0 && r3)
        CHECK(tu_max_rel_err(r3, r0) < 1e-5);
    /* a reference in plain C: relu(bn(conv)) * 2 + c + c */
    if (r3) {
        const float *x = kiln_ndarray_data(a[0]), *w = kiln_ndarray_data(a[1]);
        const float *gm = kiln_ndarray_data(a[2]), *bt = kiln_ndarray_data(a[3]);
        const float *mn = kiln_ndarray_data(a[4]), *vr = kiln_ndarray_data(a[5]);
        const float *c = kiln_ndarray_data(a[6]), *got = kiln_ndarray_data(r3);
        int bad = 0;
        for (int o = 0; o < 3; o++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 5; j++) {
                    double acc = 0;
                    for (int ci = 0; ci < 2; ci++)
                        for (int kh = 0; kh < 3; kh++)
                            for (int kw = 0; kw < 3; kw++) {
                                int y = i + kh - 1, z = j + kw - 1;
                                if (y < 0 || y > 4 || z < 0 || z > 4)
                                    continue;
                                acc +=
                                    x[(ci * 5 + y) * 5 + z] * w[((o * 2 + ci) * 3 + kh) * 3 + kw];
                            }
                    double bn = (acc - mn[o]) / sqrt(vr[o] + 0.001) * gm[o] + bt[o];
                    double ref = 2 * (bn > 0 ? bn : 0) + 2 * c[o];
                    bad += fabs(got[(o * 5 + i) * 5 + j] - ref) > 1e-4 * (1 + fabs(ref));
                }
        CHECK_EQ_INT(bad, 0);
    }
    /* disabling FuseOps gives one kernel per remaining op */
    kiln_build_options *od = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(od, "disabled-pass", "FuseOps,DeadCodeElimination"),
                 KILN_OK);
    int kd = 0;
    kiln_ndarray *rd = compile_run(g, od, a[0], &kd);
    /* 2 layout transforms, conv with the batch norm's scale in its weights
       (SimplifyExpr's FoldScaleAxis), the unscaled conv that the dead exp
       (kept) reads, add, relu, exp, sum, out */
    CHECK_EQ_INT(kd, 9);
    if (rd && r0)
        CHECK(tu_max_rel_err(rd, r0) < 1e-5);
    CHECK_EQ_INT(kiln_build_options_set(od, "disabled-pass", "NoSuchPass"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "unknown pass 'NoSuchPass'");
    CHECK_EQ_INT(kiln_build_options_set(od, "opt-level", "4"), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_build_options_set(od, "schedule", "fastest"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not default or naive");
    kiln_ndarray_free(rd);
    kiln_ndarray_free(r0);
    kiln_ndarray_free(r3);
    kiln_build_options_free(o0);
    kiln_build_options_free(o3);
    kiln_build_options_free(od);
    for (int i = 0; i < 7; i++)
        kiln_ndarray_free(a[i]);
    kiln_graph_free(g);
}

/* FuseOps' diamonds: GELU reads the dense output twice and still fuses into
 * it; a value that is also a graph output, or that feeds two groups, does
 * not merge. An injective op after the GELU (a transpose) does not keep it
 * out of the dense: the transpose is peeled off into a kernel of its own.
 * Results equal the unfused graph's. */
static void test_fuse_diamonds(void) {
    uint64_t seed = 11;
    int64_t xs[2] = {4, 32}, ws[2] = {48, 32}, bs[1] = {48};
    kiln_ndarray *xa = filled(2, xs, &seed, -2), *wa = filled(2, ws, &seed, -2);
    kiln_ndarray *ba = filled(1, bs, &seed, -2);
    for (int variant = 0; variant < 3; variant++) {
        kiln_graph *g = kiln_graph_new();
        int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs, NULL);
        int w = kiln_graph_const(g, "w", wa), b = kiln_graph_const(g, "b", ba);
        int in[2] = {x, w};
        int d = kiln_graph_call(g, "nn.dense", 2, in, NULL, "dense");
        int ab[2] = {d, b};
        int y = kiln_graph_call(g, "add", 2, ab, NULL, "bias");
        /* gelu(y) = y * (0.5 * (1 + erf(y / sqrt 2))), constants as scalars */
        int64_t one_dim[1] = {1};
        kiln_ndarray *c[3];
        const float cv[3] = {1.41421356f, 1.0f, 0.5f};
        int cid[3];
        for (int i = 0; i < 3; i++) {
            c[i] = kiln_ndarray_empty(KILN_FLOAT32, 1, one_dim);
            ((float *)kiln_ndarray_data(c[i]))[0] = cv[i];
            cid[i] = kiln_graph_const(g, i == 0 ? "sqrt2" : i == 1 ? "one" : "half", c[i]);
            kiln_ndarray_free(c[i]);
        }
        int a1[2] = {y, cid[0]};
        int dv = kiln_graph_call(g, "divide", 2, a1, NULL, "div");
        int e = kiln_graph_call(g, "erf", 1, &dv, NULL, "erf");
        int a2[2] = {e, cid[1]};
        int p1 = kiln_graph_call(g, "add", 2, a2, NULL, "plus1");
        int a3[2] = {p1, cid[2]};
        int h = kiln_graph_call(g, "multiply", 2, a3, NULL, "half");
        int a4[2] = {y, h};
        int out = kiln_graph_call(g, "multiply", 2, a4, NULL, "gelu");
        if (variant == 2)
            out = kiln_graph_call(g, "transpose", 1, &out, NULL, "t");
        int outs[2] = {out, y};
        /* variant 1 also returns the pre-GELU value: it escapes, no merge */
        CHECK_EQ_INT(kiln_graph_set_outputs(g, variant == 1 ? 2 : 1, outs, NULL), KILN_OK);
        kiln_build_options *o3 = kiln_build_options_new(), *o0 = kiln_build_options_new();
        kiln_build_options_set(o0, "disabled-pass", "FuseOps");
        int k3 = 0, k0 = 0;
        char funcs[2048] = "";
        kiln_ndarray *r3 = gu_compile_run(g, o3, 1, (const kiln_ndarray *const *)&xa, &k3, funcs,
                                          sizeof funcs),
                     *r0 = compile_run(g, o0, xa, &k0);
        CHECK(r3 && r0);
        CHECK_EQ_INT(k3, variant ? 2 : 1);
        if (variant != 1)
            CHECK_CONTAINS(funcs, "dense_add_divide_erf_add_multiply_multiply");
        if (variant == 2)
            CHECK_CONTAINS(funcs, "fused_transpose");
        CHECK(k0 >= 7);
        if (r3 && r0)
            CHECK(tu_max_rel_err(r3, r0) < 1e-5);
        kiln_ndarray_free(r3);
        kiln_ndarray_free(r0);
        kiln_build_options_free(o3);
        kiln_build_options_free(o0);
        kiln_graph_free(g);
    }
    kiln_ndarray_free(xa);
    kiln_ndarray_free(wa);
    kiln_ndarray_free(ba);
}

/* A squeeze-and-excitation tail: a 1x1 convolution on the pooled
 * [1, C, 1, 1] vector, its sigmoid, and the channel scale of the
 * [1, C, H, W] features. The scale broadcasts the convolution's group over
 * H x W, so it is not fused into it (the convolution would run per pixel
 * block): the convolution with its sigmoid is one kernel and the scale
 * another. The result equals the unfused graph's. */
static void test_fuse_not_widened(void) {
    uint64_t seed = 29;
    int64_t xs[4] = {1, 32, 9, 9}, ws[4] = {32, 32, 1, 1};
    kiln_ndarray *xa = filled(4, xs, &seed, -2), *w1 = filled(4, ws, &seed, -2),
                 *w2 = filled(4, ws, &seed, -2), *w3 = filled(4, ws, &seed, -2);
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int i1[2] = {x, kiln_graph_const(g, "w1", w1)};
    int f = kiln_graph_call(g, "nn.conv2d", 2, i1, NULL, "features");
    int p = kiln_graph_call(g, "nn.global_avg_pool2d", 1, &f, NULL, "pool");
    int i2[2] = {p, kiln_graph_const(g, "w2", w2)};
    int c = kiln_graph_call(g, "nn.conv2d", 2, i2, NULL, "fc");
    int s = kiln_graph_call(g, "sigmoid", 1, &c, NULL, "gate");
    int m[2] = {f, s};
    int sc = kiln_graph_call(g, "multiply", 2, m, NULL, "scale");
    int i3[2] = {sc, kiln_graph_const(g, "w3", w3)};
    int y = kiln_graph_call(g, "nn.conv2d", 2, i3, NULL, "project");
    CHECK(y >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    kiln_build_options *o = kiln_build_options_new(), *o0 = kiln_build_options_new();
    kiln_build_options_set(o0, "disabled-pass", "FuseOps");
    int k = 0, k0 = 0;
    char funcs[2048] = "";
    kiln_ndarray *r = gu_compile_run(g, o, 1, (const kiln_ndarray *const *)&xa, &k, funcs,
                                     sizeof funcs),
                 *r0 = compile_run(g, o0, xa, &k0);
    CHECK(r && r0);
    CHECK_CONTAINS(funcs, "conv2d_NCHWc_sigmoid");
    CHECK(strstr(funcs, "sigmoid_multiply") == NULL); /* the scale is its own kernel */
    CHECK_CONTAINS(funcs, "fused_multiply");
    if (r && r0)
        CHECK(tu_max_rel_err(r, r0) < 1e-5);
    kiln_ndarray_free(r);
    kiln_ndarray_free(r0);
    kiln_build_options_free(o);
    kiln_build_options_free(o0);
    kiln_graph_free(g);
    kiln_ndarray_free(xa);
    kiln_ndarray_free(w1);
    kiln_ndarray_free(w2);
    kiln_ndarray_free(w3);
}

/* FoldScaleAxis in AlterOpLayout: a per-channel multiply that is a
 * convolution's only consumer goes into the packed weights (no multiply
 * left in any kernel); with a second consumer, or a scale that is not per
 * channel, it stays. Results equal opt-level 0 in every case. */
static void test_fold_scale(void) {
    uint64_t seed = 17;
    int64_t xs[4] = {1, 16, 6, 6}, ws[4] = {16, 16, 3, 3}, cs[3] = {16, 1, 1}, ss[1] = {6};
    kiln_ndarray *x = filled(4, xs, &seed, -2), *w = filled(4, ws, &seed, -2);
    kiln_ndarray *chan = filled(3, cs, &seed, -2), *row = filled(1, ss, &seed, -2);
    for (int variant = 0; variant < 3; variant++) {
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
        int in[2] = {xi, kiln_graph_const(g, "w", w)};
        int c = kiln_graph_call(g, "nn.conv2d", 2, in, "padding=[1, 1, 1, 1]", "conv");
        /* variant 1: a second consumer of the convolution, ahead of the multiply */
        int r = variant == 1 ? kiln_graph_call(g, "nn.relu", 1, &c, NULL, "relu") : -1;
        /* variant 2 scales along W ([6] broadcasts on the last axis): not per channel */
        int m[2] = {c, kiln_graph_const(g, "s", variant == 2 ? row : chan)};
        int y = kiln_graph_call(g, "multiply", 2, m, NULL, "scale");
        if (variant == 1) {
            int a[2] = {y, r};
            y = kiln_graph_call(g, "add", 2, a, NULL, "sum");
        }
        kiln_graph_set_outputs(g, 1, &y, NULL);
        kiln_build_options *o0 = kiln_build_options_new();
        kiln_build_options_set(o0, "opt-level", "0");
        char funcs[4096];
        kiln_ndarray *r3 =
            gu_compile_run(g, NULL, 1, (const kiln_ndarray *const *)&x, NULL, funcs, sizeof funcs);
        kiln_ndarray *r0 = gu_compile_run(g, o0, 1, (const kiln_ndarray *const *)&x, NULL, NULL, 0);
        CHECK(r3 && r0);
        /* 144-term sums summed in another order (blocked layout, other vector
           widths): float rounding reaches ~1e-5 of the values here */
        if (r3 && r0 && tu_max_rel_err(r3, r0) >= 1e-4)
            fprintf(stderr, "fold-scale variant %d: rel err %.3g\n", variant,
                    tu_max_rel_err(r3, r0));
        if (r3 && r0)
            CHECK(tu_max_rel_err(r3, r0) < 1e-4);
        if (variant == 0)
            CHECK(strstr(funcs, "multiply") == NULL);
        else
            CHECK(strstr(funcs, "multiply") != NULL);
        kiln_ndarray_free(r3);
        kiln_ndarray_free(r0);
        kiln_build_options_free(o0);
        kiln_graph_free(g);
    }
    kiln_ndarray_free(x);
    kiln_ndarray_free(w);
    kiln_ndarray_free(chan);
    kiln_ndarray_free(row);
}

/* g on x compiled with the default passes (its kernels' names in funcs,
 * their count in *kernels) and at opt-level 0; the largest relative
 * difference of the two results (bit-exact: 0), or 1 with a failure. */
static double against_level0(kiln_graph *g, kiln_ndarray *x, char *funcs, size_t cap,
                             int *kernels) {
    kiln_build_options *o0 = kiln_build_options_new();
    kiln_build_options_set(o0, "opt-level", "0");
    kiln_ndarray *r3 =
        gu_compile_run(g, NULL, 1, (const kiln_ndarray *const *)&x, kernels, funcs, cap);
    kiln_ndarray *r0 = gu_compile_run(g, o0, 1, (const kiln_ndarray *const *)&x, NULL, NULL, 0);
    CHECK(r3 && r0);
    double e = 1;
    if (r3 && r0)
        e = memcmp(kiln_ndarray_data(r3), kiln_ndarray_data(r0),
                   (size_t)kiln_ndarray_numel(r0) * sizeof(float)) == 0
                ? 0
                : tu_max_rel_err(r3, r0);
    kiln_ndarray_free(r3);
    kiln_ndarray_free(r0);
    kiln_build_options_free(o0);
    return e;
}

/* SimplifyExpr: layer normalization written out (as exporters before opset
 * 17 do) becomes one nn.layer_norm with gamma and beta; the same pattern
 * over another axis stays as it is. Results equal opt-level 0. */
static void test_layer_norm_pattern(void) {
    uint64_t seed = 41;
    int64_t xs[3] = {2, 5, 32}, ks[1] = {32}, one[1] = {1};
    kiln_ndarray *x = filled(3, xs, &seed, -2), *ga = filled(1, ks, &seed, -2);
    kiln_ndarray *be = filled(1, ks, &seed, -2);
    kiln_ndarray *two = kiln_ndarray_empty(KILN_FLOAT32, 1, one),
                 *eps = kiln_ndarray_empty(KILN_FLOAT32, 1, one);
    ((float *)kiln_ndarray_data(two))[0] = 2.0f;
    ((float *)kiln_ndarray_data(eps))[0] = 1e-5f;
    for (int variant = 0; variant < 2; variant++) {
        const char *ax = variant ? "axis=[1], keepdims=1" : "axis=[-1], keepdims=1";
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xs, NULL);
        int m = kiln_graph_call(g, "mean", 1, &xi, ax, "mean");
        int a1[2] = {xi, m};
        int d = kiln_graph_call(g, "subtract", 2, a1, NULL, "sub");
        int a2[2] = {d, kiln_graph_const(g, "two", two)};
        int p = kiln_graph_call(g, "power", 2, a2, NULL, "pow");
        int v = kiln_graph_call(g, "mean", 1, &p, ax, "var");
        int a3[2] = {v, kiln_graph_const(g, "eps", eps)};
        int e = kiln_graph_call(g, "add", 2, a3, NULL, "add_eps");
        int sq = kiln_graph_call(g, "sqrt", 1, &e, NULL, "sqrt");
        int a4[2] = {d, sq};
        int nrm = kiln_graph_call(g, "divide", 2, a4, NULL, "div");
        int a5[2] = {nrm, kiln_graph_const(g, "gamma", ga)};
        int gm = kiln_graph_call(g, "multiply", 2, a5, NULL, "scale");
        int a6[2] = {gm, kiln_graph_const(g, "beta", be)};
        int y = kiln_graph_call(g, "add", 2, a6, NULL, "shift");
        CHECK(y >= 0);
        kiln_graph_set_outputs(g, 1, &y, NULL);
        char funcs[4096];
        int k3 = 0;
        CHECK(against_level0(g, x, funcs, sizeof funcs, &k3) < 1e-5);
        if (variant == 0) {
            CHECK_EQ_INT(k3, 1);
            CHECK(strstr(funcs, "layer_norm") != NULL);
        } else {
            CHECK(strstr(funcs, "layer_norm") == NULL);
        }
        kiln_graph_free(g);
    }
    kiln_ndarray_free(x);
    kiln_ndarray_free(ga);
    kiln_ndarray_free(be);
    kiln_ndarray_free(two);
    kiln_ndarray_free(eps);
}

/* SimplifyExpr: a division by a constant of powers of two (attention's
 * / 8, a per-channel [0.5, 4, 0.25]) becomes a multiplication by the
 * reciprocals, bit for bit the same result; a division by 3 stays one. */
static void test_divide_power_of_two(void) {
    uint64_t seed = 43;
    int64_t xs[2] = {4, 3}, three[1] = {3};
    kiln_ndarray *x = filled(2, xs, &seed, -2);
    static const float divisors[2][3] = {{0.5f, 4.0f, 0.25f}, {0.5f, 3.0f, 0.25f}};
    for (int variant = 0; variant < 2; variant++) {
        kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, three);
        memcpy(kiln_ndarray_data(c), divisors[variant], sizeof divisors[variant]);
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs, NULL);
        int a[2] = {xi, kiln_graph_const(g, "c", c)};
        int y = kiln_graph_call(g, "divide", 2, a, NULL, "div");
        kiln_graph_set_outputs(g, 1, &y, NULL);
        char funcs[4096];
        CHECK(against_level0(g, x, funcs, sizeof funcs, NULL) == 0); /* bit for bit */
        CHECK((strstr(funcs, "multiply") != NULL) == (variant == 0));
        CHECK((strstr(funcs, "divide") != NULL) == (variant == 1));
        kiln_graph_free(g);
        kiln_ndarray_free(c);
    }
    kiln_ndarray_free(x);
}

/* SimplifyExpr: a zero nn.pad of the spatial dims read by an average pool
 * (not counting padding of its own) or a convolution becomes their padding,
 * and no pad kernel runs; a pool that has padding it does not count keeps
 * the pad. Results equal opt-level 0 (where the pad runs). */
static void test_fold_pad(void) {
    uint64_t seed = 47;
    int64_t xs[4] = {1, 16, 9, 11}, ws[4] = {8, 16, 3, 3};
    kiln_ndarray *x = filled(4, xs, &seed, -2), *w = filled(4, ws, &seed, -2);
    for (int variant = 0; variant < 4; variant++) {
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
        int p = kiln_graph_call(g, "nn.pad", 1, &xi,
                                "pad_width=[0, 0, 0, 0, 1, 2, 1, 0], pad_value=0", "pad");
        int y;
        if (variant == 0)
            y = kiln_graph_call(g, "nn.avg_pool2d", 1, &p, "pool_size=[3, 3], ceil_mode=1", "pool");
        else if (variant == 1)
            y = kiln_graph_call(g, "nn.avg_pool2d", 1, &p,
                                "pool_size=[3, 3], padding=[1, 1, 0, 0], count_include_pad=1",
                                "pool");
        else if (variant == 2)
            y = kiln_graph_call(g, "nn.avg_pool2d", 1, &p,
                                "pool_size=[3, 3], padding=[1, 1, 1, 1], count_include_pad=0",
                                "pool");
        else {
            int a[2] = {p, kiln_graph_const(g, "w", w)};
            y = kiln_graph_call(g, "nn.conv2d", 2, a, "padding=[0, 1, 1, 0]", "conv");
        }
        CHECK(y >= 0);
        kiln_graph_set_outputs(g, 1, &y, NULL);
        char funcs[4096];
        CHECK(against_level0(g, x, funcs, sizeof funcs, NULL) < 1e-5);
        CHECK((strstr(funcs, "pad") != NULL) == (variant == 2));
        kiln_graph_free(g);
    }
    kiln_ndarray_free(x);
    kiln_ndarray_free(w);
}

/* The text of dump file `name` in dir (a static buffer), or NULL. */
static const char *read_dump(const char *dir, const char *name) {
    static char text[1 << 16];
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    return text;
}

/* FoldConstant folds int64 division on constants by kiln's rule
 * (INT64_MIN / -1 wraps, x / 0 is 0), a dense, a batch_norm and an
 * opaque softmax of constants (no op is singled out); with cc set to `false` the
 * pipeline still runs (nothing is compiled to fold), and the folded values
 * reach the compiled graph. */
static void test_fold_constant(void) {
    int64_t three = 3, mat[2] = {2, 3}, chan[3] = {1, 3, 1};
    const int64_t av[3] = {INT64_MIN, 7, -7}, bv[3] = {-1, 0, 2};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, 1, &three);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_INT64, 1, &three);
    memcpy(kiln_ndarray_data(a), av, sizeof av);
    memcpy(kiln_ndarray_data(b), bv, sizeof bv);
    uint64_t seed = 77;
    kiln_ndarray *w = filled(2, mat, &seed, -2), *m = filled(2, mat, &seed, -2);
    kiln_ndarray *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = filled(1, &three, &seed, i == 3 ? 0.1 : -2);
    kiln_ndarray *xin = filled(3, chan, &seed, -2);
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_INT64, 1, &three, NULL);
    int ab[2] = {kiln_graph_const(g, "a", a), kiln_graph_const(g, "b", b)};
    int q = kiln_graph_call(g, "divide", 2, ab, NULL, "int_div");
    int xq[2] = {x, q};
    int y = kiln_graph_call(g, "add", 2, xq, NULL, "y");
    int wm[2] = {kiln_graph_const(g, "m", m), kiln_graph_const(g, "w", w)};
    int d = kiln_graph_call(g, "nn.dense", 2, wm, NULL, "const_dense"); /* [2, 2] */
    int sm = kiln_graph_call(g, "nn.softmax", 1, &d, NULL, "const_softmax");
    int bn_in[5] = {kiln_graph_const(g, "bx", xin), 0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        bn_in[1 + i] = kiln_graph_const(g, "bn_param", p[i]);
    int bn = kiln_graph_call(g, "nn.batch_norm", 5, bn_in, NULL, "const_bn");
    int outs[3] = {y, sm, bn};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 3, outs, NULL), KILN_OK);
    /* the passes without a C compiler */
    const char *dir = test_tmp_path("fold_ir");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "dump-ir", dir);
    kiln_build_options_set(o, "cc", "false");
    CHECK(kiln_graph_compile(g, test_tmp_path("fold_never.tar"), o) != KILN_OK);
    CHECK(strstr(kiln_last_error(), "FoldConstant") == NULL);
    kiln_build_options_free(o);
    const char *text = read_dump(dir, "05_after_FoldConstant.txt");
    CHECK(text != NULL);
    if (text) {
        CHECK(strstr(text, "divide(") == NULL);
        CHECK(strstr(text, "nn.dense(") == NULL);
        CHECK(strstr(text, "nn.softmax(") == NULL);
        CHECK(strstr(text, "nn.batch_norm(") == NULL);
        CHECK_CONTAINS(text, "add(%x");
    }
    /* the folded values, compiled and run */
    kiln_ndarray *xv = kiln_ndarray_empty(KILN_INT64, 1, &three);
    const int64_t xs[3] = {1, 2, 3};
    memcpy(kiln_ndarray_data(xv), xs, sizeof xs);
    kiln_ndarray *r = gu_compile_run(g, NULL, 1, (const kiln_ndarray *const *)&xv, NULL, NULL, 0);
    CHECK(r != NULL);
    if (r) {
        const int64_t *rv = kiln_ndarray_data(r);
        CHECK(rv[0] == INT64_MIN + 1);
        CHECK_EQ_INT(rv[1], 2);
        CHECK_EQ_INT(rv[2], 0);
    }
    kiln_ndarray_free(r);
    /* the folded softmax and batch_norm equal the same ops compiled */
    const kiln_ndarray *got[2][2] = {{NULL, NULL}, {NULL, NULL}};
    kiln_executor *ex[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        kiln_build_options *ok = kiln_build_options_new();
        if (k)
            kiln_build_options_set(ok, "disabled-pass", "FoldConstant");
        const char *pkg = test_tmp_path(k ? "fold_off.tar" : "fold_on.tar");
        CHECK_EQ_INT(kiln_graph_compile(g, pkg, ok), KILN_OK);
        kiln_build_options_free(ok);
        ex[k] = kiln_executor_load(pkg);
        CHECK(ex[k] != NULL);
        if (ex[k] && kiln_executor_set_input(ex[k], "x", xv) == KILN_OK &&
            kiln_executor_run(ex[k]) == KILN_OK)
            for (int j = 0; j < 2; j++)
                got[k][j] = kiln_executor_output(ex[k], 1 + j);
    }
    for (int j = 0; j < 2; j++) {
        CHECK(got[0][j] && got[1][j]);
        if (!got[0][j] || !got[1][j])
            continue;
        int64_t n = kiln_ndarray_numel(got[0][j]);
        CHECK_EQ_INT(n, kiln_ndarray_numel(got[1][j]));
        const float *f0 = kiln_ndarray_data(got[0][j]), *f1 = kiln_ndarray_data(got[1][j]);
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += fabsf(f0[i] - f1[i]) > 1e-5f * (1.0f + fabsf(f1[i]));
        CHECK_EQ_INT(bad, 0);
    }
    kiln_executor_free(ex[0]);
    kiln_executor_free(ex[1]);
    kiln_ndarray_free(xv);
    kiln_graph_free(g);
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(w);
    kiln_ndarray_free(m);
    kiln_ndarray_free(xin);
    for (int i = 0; i < 4; i++)
        kiln_ndarray_free(p[i]);
}

/* A constant call the interpreter will not evaluate (a broadcast_to of
 * 2^28 elements, past its default cap of 2^27; the cap is checked before
 * any allocation) stays a call, and so does the sum that reads it, while the
 * folded add feeding it is kept as a constant and an unrelated constant
 * call still folds: FoldConstant does not fail the compile. */
static void test_fold_constant_too_big(void) {
    int64_t one = 1, two = 2;
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, &one);
    ((float *)kiln_ndarray_data(c))[0] = 0.5f;
    kiln_ndarray *d = kiln_ndarray_empty(KILN_FLOAT32, 1, &two);
    ((float *)kiln_ndarray_data(d))[0] = 1;
    ((float *)kiln_ndarray_data(d))[1] = 2;
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, &one, NULL);
    int cc[2] = {kiln_graph_const(g, "c", c), 0};
    cc[1] = cc[0];
    int twice = kiln_graph_call(g, "add", 2, cc, NULL, "twice");
    int big = kiln_graph_call(g, "broadcast_to", 1, &twice, "shape=[16384, 16384]", "big");
    int total = kiln_graph_call(g, "sum", 1, &big, NULL, "total");
    int dd = kiln_graph_const(g, "d", d);
    int dv = kiln_graph_call(g, "exp", 1, &dd, NULL, "small");
    int xt[2] = {x, total};
    int y = kiln_graph_call(g, "add", 2, xt, NULL, "y");
    int outs[2] = {y, dv};
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 2, outs, NULL), KILN_OK);
    const char *dir = test_tmp_path("fold_big_ir");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "dump-ir", dir);
    kiln_build_options_set(o, "cc", "false"); /* the passes only */
    CHECK(kiln_graph_compile(g, test_tmp_path("fold_big.tar"), o) != KILN_OK);
    if (strstr(kiln_last_error(), "FoldConstant") || strstr(kiln_last_error(), "te_eval"))
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK(strstr(kiln_last_error(), "FoldConstant") == NULL);
    CHECK(strstr(kiln_last_error(), "te_eval") == NULL);
    kiln_build_options_free(o);
    const char *text = read_dump(dir, "05_after_FoldConstant.txt");
    CHECK(text != NULL);
    if (text) {
        /* twice folded, kept as a constant for the broadcast_to */
        CHECK_CONTAINS(text, "broadcast_to(meta[relay.Constant]");
        CHECK(strstr(text, "add(meta") == NULL);
        CHECK_CONTAINS(text, "sum(");
        CHECK(strstr(text, "exp(") == NULL);
    }
    kiln_graph_free(g);
    kiln_ndarray_free(c);
    kiln_ndarray_free(d);
}

/* pass_env.fold_max bounds what FoldConstant evaluates: a call of more
 * elements stays a call (the fuzzer folds as little as the importer, since
 * a 2^24-element fold under the sanitizers is a timeout, not a bug). */
static void test_fold_max(void) {
    int64_t n = 64;
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    kiln_graph *g = kiln_graph_new();
    int k = kiln_graph_const(g, "c", c);
    int big = kiln_graph_call(g, "exp", 1, &k, NULL, "big");
    int e = kiln_graph_call(g, "negative", 1, &big, NULL, "e");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &e, NULL), KILN_OK);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    kiln_target *host = kiln_target_host();
    for (int cap = 0; cap < 2; cap++) {
        pass_env env = {host, -1, cap ? 16 : 0};
        struct kiln_graph *r = pass_fold_constant((struct kiln_graph *)g, &env);
        CHECK(r != NULL);
        int calls = 0;
        for (int id = 0; r && id < r->n; id++)
            calls += r->nodes[id]->kind == GN_CALL;
        CHECK_EQ_INT(calls, (cap ? 2 : 0)); /* 64 elements: folded only without the cap */
        if (r != (struct kiln_graph *)g)
            kiln_graph_free(r);
    }
    kiln_target_free(host);
    kiln_graph_free(g);
    kiln_ndarray_free(c);
}

/* Replace the C compiler by `false` (the compile ends with its clear error
 * instead of minutes in cc); returns the old $KILN_CC for cc_restore. */
static char *cc_false(void) {
    const char *old = getenv("KILN_CC");
    char *saved = old ? strdup(old) : NULL;
    setenv("KILN_CC", "false", 1);
    return saved;
}

static void cc_restore(char *saved) {
    if (saved)
        setenv("KILN_CC", saved, 1);
    else
        unsetenv("KILN_CC");
    free(saved);
}

/* A chain of 20,000 elementwise calls (add, relu, ...) compiles, fused
 * and not, with no stack overflow: the schedule's walk recursed with a ~2
 * KiB frame per op and overflowed near 4,000 (issue 11). FuseOps caps a
 * group at 256 ops, so the fused chain is ~80 kernels and compiles in time
 * linear in its length. The C compiler is replaced by `false`, so the
 * compile ends with its clear error instead of minutes in cc. */
static void test_deep_chain(void) {
    enum { N = 20000 };
    int64_t xs[2] = {2, 3};
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs, NULL), cur = x;
    for (int k = 0; k < N && cur >= 0; k++) {
        int a[2] = {cur, x};
        cur = k % 2 ? kiln_graph_call(g, "nn.relu", 1, &cur, NULL, NULL)
                    : kiln_graph_call(g, "add", 2, a, NULL, NULL);
    }
    CHECK(cur >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &cur, NULL), KILN_OK);
    char *saved = cc_false();
    for (int fuse = 0; fuse < 2; fuse++) {
        kiln_build_options *o = kiln_build_options_new();
        CHECK_EQ_INT(kiln_build_options_set(o, "fuse", fuse ? "1" : "0"), KILN_OK);
        CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("deep_chain.tar"), o), KILN_ERR_TOOLCHAIN);
        CHECK_CONTAINS(kiln_last_error(), "with 'false");
        kiln_build_options_free(o);
    }
    cc_restore(saved);
    kiln_graph_free(g);
}

/* x[k] = x[k-1] + x[k-2] (and other binary ops): each value is read twice,
 * so a fused kernel's expression is a DAG whose tree form doubles with
 * every op. Walks that did not remember what they had visited (placeholder
 * and size-variable checks in lowering) and the C renderer, which wrote the
 * tree (25 ops: gigabytes of C), took exponential time. Now 60 ops fuse,
 * compile and run, shared values bound to constants; 3,000 compile to the
 * C compiler (replaced by `false`) in linear time. */
static kiln_graph *fib_graph(int n, int64_t len) {
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, &len, NULL);
    int a = kiln_graph_call(g, "nn.relu", 1, &x, NULL, NULL);
    int b = kiln_graph_call(g, "negative", 1, &x, NULL, NULL);
    static const char *const ops[3] = {"add", "subtract", "maximum"};
    for (int k = 2; k < n && a >= 0 && b >= 0; k++) {
        int in[2] = {b, a};
        int c = kiln_graph_call(g, ops[k % 3], 2, in, NULL, NULL);
        a = b;
        b = c;
    }
    CHECK(b >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &b, NULL), KILN_OK);
    return g;
}

static void test_dag_chain(void) {
    enum { N = 60, LEN = 37 };
    kiln_graph *g = fib_graph(N, LEN);
    kiln_ndarray *xv = kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){LEN});
    float *xd = kiln_ndarray_data(xv);
    for (int i = 0; i < LEN; i++)
        xd[i] = (float)(i - 18) * 0.25f;
    int nk = 0;
    kiln_ndarray *r = gu_compile_run(g, NULL, 1, (const kiln_ndarray *const *)&xv, &nk, NULL, 0);
    CHECK(r != NULL);
    CHECK_EQ_INT(nk, 1);
    if (r) {
        int bad = 0;
        for (int i = 0; i < LEN; i++) {
            float a = xd[i] > 0 ? xd[i] : 0, b = -xd[i];
            for (int k = 2; k < N; k++) {
                float c = k % 3 == 0 ? b + a : k % 3 == 1 ? b - a : (b > a ? b : a);
                a = b;
                b = c;
            }
            bad += fabsf(((float *)kiln_ndarray_data(r))[i] - b) > 1e-5f * (1.0f + fabsf(b));
        }
        CHECK_EQ_INT(bad, 0);
    }
    kiln_ndarray_free(r);
    kiln_ndarray_free(xv);
    kiln_graph_free(g);

    g = fib_graph(3000, LEN);
    char *saved = cc_false();
    CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("dag_chain.tar"), NULL), KILN_ERR_TOOLCHAIN);
    cc_restore(saved);
    kiln_graph_free(g);
}

/* A transpose of a constant folds without the interpreter (the op's direct
 * fold: a weight's transpose at import): bit for bit what the interpreter
 * makes of its compute, for odd shapes, every element size and bool, the
 * axes given, negative or left out (reversed); and a result over the
 * element cap is still the interpreter's error. */
static void test_fold_transpose_direct(void) {
    static const struct {
        kiln_dtype dt;
        int nd;
        int64_t shape[4];
        const char *attrs;
    } cases[] = {
        {KILN_FLOAT32, 2, {37, 70}, "axes=[1, 0]"},
        {KILN_INT8, 3, {5, 33, 7}, "axes=[2, 0, 1]"},
        {KILN_UINT16, 3, {3, 1, 65}, "axes=[-1, 1, 0]"},
        {KILN_INT64, 4, {2, 3, 35, 4}, "axes=[0, 3, 1, 2]"},
        {KILN_BOOL, 2, {9, 40}, NULL},
        {KILN_FLOAT64, 1, {11}, NULL},
        {KILN_FLOAT32, 4, {1, 34, 1, 33}, NULL},
    };
    uint64_t seed = 77;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_ndarray *a = kiln_ndarray_empty(cases[c].dt, cases[c].nd, cases[c].shape);
        tu_fill(a, &seed);
        kiln_graph *g = kiln_graph_new();
        int k = kiln_graph_const(g, "w", a);
        int t = kiln_graph_call(g, "transpose", 1, &k, cases[c].attrs, "t");
        CHECK(t >= 0 && graph_infer_node(g, t) == KILN_OK);
        gnode *n = graph_node(g, t);
        kiln_ndarray *direct = NULL, *interp = NULL;
        CHECK(n && n->op->fold);
        CHECK_EQ_INT(graph_eval_node(g, t, 0, &direct), KILN_OK);
        const kiln_op_def *op = n->op;
        kiln_op_def plain = *op; /* the same op without its direct fold */
        plain.fold = NULL;
        n->op = &plain;
        CHECK_EQ_INT(graph_eval_node(g, t, 0, &interp), KILN_OK);
        kiln_ndarray *capped = NULL;
        CHECK(graph_eval_node(g, t, 3, &capped) != KILN_OK && capped == NULL);
        char why[512];
        snprintf(why, sizeof why, "%s", kiln_last_error());
        n->op = op;
        CHECK(graph_eval_node(g, t, 3, &capped) != KILN_OK && capped == NULL);
        CHECK_EQ_STR(kiln_last_error(), why);
        CHECK(direct && interp);
        if (direct && interp) {
            CHECK_EQ_INT(kiln_ndarray_ndim(direct), kiln_ndarray_ndim(interp));
            for (int d = 0; d < kiln_ndarray_ndim(direct); d++)
                CHECK_EQ_INT(kiln_ndarray_dim(direct, d), kiln_ndarray_dim(interp, d));
            size_t bytes =
                (size_t)kiln_ndarray_numel(direct) * kiln_dtype_size(kiln_ndarray_dtype(direct));
            CHECK(kiln_ndarray_is_contiguous(direct) &&
                  !memcmp(kiln_ndarray_data(direct), kiln_ndarray_data(interp), bytes));
        }
        kiln_ndarray_free(direct);
        kiln_ndarray_free(interp);
        kiln_graph_free(g);
        kiln_ndarray_free(a);
    }
}

/* A residual connection in int8: conv A's output quantized and dequantized,
 * added to conv B's output. FuseOps gives conv A's kernel the int8 value
 * and moves the dequantize into conv B's kernel as a side input (no
 * kernel of its own writes the float copy), and the result equals opt
 * level 0's. */
static void test_fuse_side_input(void) {
    uint64_t seed = 7;
    int64_t xs[4] = {1, 16, 10, 10}, ws[4] = {16, 16, 3, 3};
    kiln_ndarray *x = filled(4, xs, &seed, -2), *wa = filled(4, ws, &seed, -2),
                 *wb = filled(4, ws, &seed, -2);
    /* small integers: every sum is exact in any order, so the quantize
       rounds the same at every opt level */
    kiln_ndarray *arrs[3] = {x, wa, wb};
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < kiln_ndarray_numel(arrs[k]); i++) {
            float *p = (float *)kiln_ndarray_data(arrs[k]) + i;
            *p = rintf(*p * 2);
        }
    kiln_graph *g = kiln_graph_new();
    int in = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    const char *cattrs = "padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]";
    int ca[2] = {in, kiln_graph_const(g, "wa", wa)}, cb[2] = {in, kiln_graph_const(g, "wb", wb)};
    int a = kiln_graph_call(g, "nn.conv2d", 2, ca, cattrs, "conv_a");
    int b = kiln_graph_call(g, "nn.conv2d", 2, cb, cattrs, "conv_b");
    float sc = 0.5f;
    kiln_ndarray *s = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL),
                 *z = kiln_ndarray_empty(KILN_UINT8, 0, NULL);
    *(float *)kiln_ndarray_data(s) = sc;
    *(uint8_t *)kiln_ndarray_data(z) = 100;
    int q[3] = {a, kiln_graph_const(g, "s", s), kiln_graph_const(g, "z", z)};
    q[0] = kiln_graph_call(g, "qnn.quantize", 3, q, "out_dtype=\"uint8\"", "q");
    int dq = kiln_graph_call(g, "qnn.dequantize", 3, q, NULL, "dq");
    int sum[2] = {b, dq};
    int y = kiln_graph_call(g, "add", 2, sum, NULL, "y");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    char funcs[4096];
    int nk = 0;
    CHECK(against_level0(g, x, funcs, sizeof funcs, &nk) < 1e-6);
    /* conv B's kernel dequantizes and adds (fused_..._conv2d_..._cast_
       subtract_cast_multiply_add), conv A's ends at the quantize */
    CHECK(strstr(funcs, "cast_multiply_add") != NULL);
    for (char *f = strtok(funcs, " "); f; f = strtok(NULL, " "))
        if (strstr(f, "multiply") && !strstr(f, "add"))
            CHECK(!"conv A's kernel writes the dequantized float value");
    kiln_graph_free(g);
    kiln_ndarray *all[5] = {x, wa, wb, s, z};
    for (int i = 0; i < 5; i++)
        kiln_ndarray_free(all[i]);
}

/* QnnCanonicalize drops a requantize-dequantize round trip only where it
 * is exact: round(x) clipped to whole 8-bit bounds. A fractional bound
 * (0.5) makes the clip's value fractional, which the uint8 cast truncates:
 * that chain stays, and the results equal opt level 0's. */
static void test_roundtrip_kept(void) {
    uint64_t seed = 9;
    int64_t xs[1] = {256};
    kiln_ndarray *x = filled(1, xs, &seed, -300);
    for (int64_t i = 0; i < 256; i++)
        ((float *)kiln_ndarray_data(x))[i] = (float)(i - 30) * 0.75f;
    const char *bounds[2] = {"a_min=0.5, a_max=200.5", "a_min=0, a_max=200"};
    for (int k = 0; k < 2; k++) {
        kiln_graph *g = kiln_graph_new();
        int v = kiln_graph_var(g, "x", KILN_FLOAT32, 1, xs, NULL);
        v = kiln_graph_call(g, "round", 1, &v, NULL, "r");
        v = kiln_graph_call(g, "clip", 1, &v, bounds[k], "c");
        v = kiln_graph_call(g, "cast", 1, &v, "dtype=\"uint8\"", "q");
        v = kiln_graph_call(g, "cast", 1, &v, "dtype=\"float32\"", "y");
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &v, NULL), KILN_OK);
        kiln_graph *l = kiln_graph_run_pass(g, "QnnCanonicalize", NULL);
        char *counts = l ? kiln_graph_op_counts(l) : NULL;
        /* the whole bounds lose both casts, the fractional keep them */
        CHECK(counts && (strstr(counts, "cast") != NULL) == (k == 0));
        free(counts);
        kiln_graph_free(l);
        char funcs[1024];
        int nk = 0;
        CHECK(against_level0(g, x, funcs, sizeof funcs, &nk) == 0);
        kiln_graph_free(g);
    }
    kiln_ndarray_free(x);
}

TEST_MAIN(TEST(test_pipeline), TEST(test_fuse_side_input), TEST(test_roundtrip_kept),
          TEST(test_fuse_diamonds), TEST(test_fuse_not_widened), TEST(test_fold_scale),
          TEST(test_layer_norm_pattern), TEST(test_divide_power_of_two), TEST(test_fold_pad),
          TEST(test_fold_constant), TEST(test_fold_constant_too_big), TEST(test_deep_chain),
          TEST(test_dag_chain), TEST(test_fold_max), TEST(test_fold_transpose_direct))
