/* test_ops_nchwc.c: AlterOpLayout's blocked convolutions (NCHW[x]c) and
 * their register-blocked schedule. Every case is compiled three ways and
 * the results must agree: the default pipeline (blocked layout, the conv
 * schedule), the same graph under the naive schedule (invariant 1: a
 * schedule never changes results), and with AlterOpLayout disabled (the
 * plain NCHW convolution); and all of them with the reference interpreter
 * (src/te/interp.h) run on the graph as built, the oracle. Cases cover
 * groups 1 and depthwise, strides, dilation, asymmetric padding, channel
 * counts that are not a multiple of the vector width, grouped convolutions
 * (blocks within a group), an epilogue (bias, relu, residual add with a
 * second blocked tensor), pooling in the blocked layout, and AVX2-sized
 * blocks (vector-bits 256) next to the host's. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph_internal.h"
#include "graph_util.h"
#include "te_util.h"

typedef struct {
    const char *what;
    int64_t n, c, h, w, oc, k;
    int stride, dil, groups;
    int64_t pad[4];
    int epilogue; /* 0 none, 1 bias+relu, 2 bias + residual add + relu, 3 relu + padded max
                     pool, 4 padded max pool then relu (the pool's own epilogue), 5 relu +
                     3x3 stride-1 max pool (Inception's branch), 6 relu + 3x3 stride-2
                     ceil-mode max pool (GoogLeNet's stem) */
} conv_case;

static kiln_ndarray *filled(int nd, const int64_t *shape, uint64_t *seed) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    tu_fill(a, seed);
    return a;
}

/* x -> conv -> epilogue; the residual case adds a second conv of x. */
static kiln_graph *make_graph(const conv_case *c, kiln_ndarray **keep, int *nkeep) {
    uint64_t seed = 1234 + (uint64_t)c->c * 7 + (uint64_t)c->oc;
    int64_t xs[4] = {c->n, c->c, c->h, c->w};
    int64_t ws[4] = {c->oc, c->c / c->groups, c->k, c->k}, bs[1] = {c->oc};
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    keep[(*nkeep)++] = filled(4, ws, &seed);
    int w = kiln_graph_const(g, "w", keep[*nkeep - 1]);
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             "strides=[%d, %d], dilation=[%d, %d], groups=%d, padding=[%lld, %lld, %lld, %lld]",
             c->stride, c->stride, c->dil, c->dil, c->groups, (long long)c->pad[0],
             (long long)c->pad[1], (long long)c->pad[2], (long long)c->pad[3]);
    int in[2] = {x, w};
    int y = kiln_graph_call(g, "nn.conv2d", 2, in, attrs, "conv");
    if (c->epilogue == 1 || c->epilogue == 2) {
        keep[(*nkeep)++] = filled(1, bs, &seed);
        int b = kiln_graph_const(g, "b", keep[*nkeep - 1]);
        int ba[2] = {y, b};
        y = kiln_graph_call(g, "nn.bias_add", 2, ba, NULL, "bias");
    }
    if (c->epilogue == 2) {
        keep[(*nkeep)++] = filled(4, ws, &seed);
        int w2 = kiln_graph_const(g, "w2", keep[*nkeep - 1]);
        int in2[2] = {x, w2};
        int y2 = kiln_graph_call(g, "nn.conv2d", 2, in2, attrs, "conv2");
        int a[2] = {y, y2};
        y = kiln_graph_call(g, "add", 2, a, NULL, "residual");
    }
    if (c->epilogue && c->epilogue != 4)
        y = kiln_graph_call(g, "nn.relu", 1, &y, NULL, "relu");
    if (c->epilogue == 3 || c->epilogue == 4)
        y = kiln_graph_call(g, "nn.max_pool2d", 1, &y,
                            "pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]", "pool");
    if (c->epilogue == 4)
        y = kiln_graph_call(g, "nn.relu", 1, &y, NULL, "pool_relu");
    if (c->epilogue == 5)
        y = kiln_graph_call(g, "nn.max_pool2d", 1, &y,
                            "pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1]", "pool");
    if (c->epilogue == 6)
        y = kiln_graph_call(g, "nn.max_pool2d", 1, &y,
                            "pool_size=[3, 3], strides=[2, 2], ceil_mode=1", "pool");
    kiln_graph_set_outputs(g, 1, &y, NULL);
    return g;
}

/* Compiled with up to three options (key, value pairs; NULL ends) and
 * run; *nconv counts the kernels named after `kernel`. */
static kiln_ndarray *run_opts(kiln_graph *g, const kiln_ndarray *x, const char *const *kv,
                              const char *kernel, int *nconv) {
    kiln_build_options *o = kiln_build_options_new();
    for (int i = 0; kv[i]; i += 2)
        CHECK_EQ_INT(kiln_build_options_set(o, kv[i], kv[i + 1]), KILN_OK);
    char funcs[8192];
    kiln_ndarray *r = gu_compile_run(g, o, 1, &x, NULL, funcs, sizeof funcs);
    kiln_build_options_free(o);
    *nconv = 0;
    for (const char *p = funcs; (p = strstr(p, kernel)); p++)
        ++*nconv;
    return r;
}

/* The direct convolutions (Winograd off, which the next test covers). */
static kiln_ndarray *run(kiln_graph *g, const kiln_ndarray *x, const char *k1, const char *v1,
                         const char *k2, const char *v2, int *nconv) {
    const char *kv[7] = {"winograd", "off", k1, v1, k2, v2, NULL};
    if (!k1)
        kv[2] = NULL;
    else if (!k2)
        kv[4] = NULL;
    return run_opts(g, x, kv, "conv2d_NCHWc", nconv);
}

/* The oracle: g (NCHW, as built) evaluated by the reference interpreter
 * (src/te/interp.h) on x, no compiler involved; NULL (printed) on an error. */
static kiln_ndarray *interpret(kiln_graph *g, const kiln_ndarray *x) {
    kiln_ndarray *out = NULL;
    if (kiln_graph_infer_types(g) != KILN_OK || graph_eval(g, 1, &x, 0, &out) != KILN_OK)
        fprintf(stderr, "interpreter: %s\n", kiln_last_error());
    return out;
}

/* The default schedule agrees with the naive one within tol_naive; it, the
 * naive one and the 256-bit build agree with the NCHW convolution and with
 * the interpreter within tol_plain; the NCHW convolution with the
 * interpreter within 1e-4. */
static void check_agree(const char *what, const kiln_ndarray *def, const kiln_ndarray *naive,
                        const kiln_ndarray *plain, const kiln_ndarray *v256,
                        const kiln_ndarray *ref, double tol_naive, double tol_plain) {
    CHECK(def && naive && plain && v256 && ref);
    if (!def || !naive || !plain || !v256 || !ref)
        return;
    double e1 = tu_max_rel_err(def, naive), e2 = tu_max_rel_err(def, plain),
           e3 = tu_max_rel_err(v256, plain), e4 = tu_max_rel_err(plain, ref),
           e5 = fmax(tu_max_rel_err(def, ref), tu_max_rel_err(naive, ref)),
           e6 = tu_max_rel_err(v256, ref);
    if (e1 > tol_naive || e2 > tol_plain || e3 > tol_plain || e4 > 1e-4 || e5 > tol_plain ||
        e6 > tol_plain)
        fprintf(stderr,
                "case '%s': default/naive %.2g, default/NCHW %.2g, 256-bit/NCHW %.2g, "
                "NCHW/interpreter %.2g, default or naive/interpreter %.2g, "
                "256-bit/interpreter %.2g\n",
                what, e1, e2, e3, e4, e5, e6);
    CHECK(e1 < tol_naive);
    CHECK(e2 < tol_plain);
    CHECK(e3 < tol_plain);
    CHECK(e4 < 1e-4);
    CHECK(e5 < tol_plain);
    CHECK(e6 < tol_plain);
}

static const conv_case g_cases[] = {
    {"3x3 s1 p1, 16->32, then max pool with its own epilogue",
     1,
     16,
     12,
     12,
     32,
     3,
     1,
     1,
     1,
     {1, 1, 1, 1},
     4},
    {"3x3 s1 p1, 32->64 (one 16-block)", 1, 32, 9, 9, 64, 3, 1, 1, 1, {1, 1, 1, 1}, 1},
    {"1x1, 64->32, 14x14 (reg_n 14)", 1, 64, 14, 14, 32, 1, 1, 1, 1, {0, 0, 0, 0}, 0},
    {"3x3 s2, 24->40 (padded 16-blocks; 8 at 256 bits)",
     1,
     24,
     11,
     13,
     40,
     3,
     2,
     1,
     1,
     {1, 1, 1, 1},
     2},
    {"7x7 s2 p3, 3->16 (stem: input block 3)", 1, 3, 20, 20, 16, 7, 2, 1, 1, {3, 3, 3, 3}, 3},
    {"3x3 dilation 2, asymmetric padding, 6->10", 2, 6, 10, 9, 10, 3, 1, 2, 1, {2, 1, 0, 2}, 1},
    {"depthwise 3x3 s1, 32 channels", 1, 32, 10, 10, 32, 3, 1, 1, 32, {1, 1, 1, 1}, 1},
    /* groups narrower than a vector are merged into whole-vector groups with
       block-diagonal weights (4 groups of 4 per 16 lanes; 2 of 8) */
    {"grouped 3x3, 32 groups of 4 (ResNeXt)", 1, 128, 8, 8, 128, 3, 1, 1, 32, {1, 1, 1, 1}, 1},
    {"grouped 3x3 s2, 8 groups of 8 (ResNeXt layer 2)",
     1,
     64,
     9,
     9,
     64,
     3,
     2,
     1,
     8,
     {1, 1, 1, 1},
     1},
    {"grouped 3x3, 6 groups of 4 (not a whole number of vectors)",
     1,
     24,
     6,
     6,
     24,
     3,
     1,
     1,
     6,
     {1, 1, 1, 1},
     0},
    {"grouped 3x3 s2, 2 groups, 12 in -> 24 out each",
     1,
     24,
     9,
     9,
     48,
     3,
     2,
     1,
     2,
     {1, 1, 1, 1},
     2},
    {"grouped 1x1, 4 groups of 16", 1, 64, 7, 7, 64, 1, 1, 1, 4, {0, 0, 0, 0}, 0},
    {"depthwise 3x3 s2, 24 channels", 1, 24, 9, 9, 24, 3, 2, 1, 24, {1, 1, 1, 1}, 1},
    /* depthwise with a channel multiplier: one input channel per group, more
       output ones (PyTorch's Conv2d(8, 24, groups=8)); packed as a grouped
       convolution, not as depthwise */
    {"depthwise 3x3, 8 channels x 3 (channel multiplier)",
     1,
     8,
     9,
     9,
     24,
     3,
     1,
     1,
     8,
     {1, 1, 1, 1},
     1},
    {"depthwise 3x3 s2, 16 channels x 2", 1, 16, 9, 9, 32, 3, 2, 1, 16, {1, 1, 1, 1}, 0},
    {"depthwise 5x5 s1, 40 channels, residual", 1, 40, 8, 8, 40, 5, 1, 1, 40, {2, 2, 2, 2}, 2},
    {"1x1, 116->232 (padded last blocks, ShuffleNetV2)",
     1,
     116,
     7,
     7,
     232,
     1,
     1,
     1,
     1,
     {0, 0, 0, 0},
     2},
    {"depthwise 3x3 s2, 116 channels (padded)", 1, 116, 9, 9, 116, 3, 2, 1, 116, {1, 1, 1, 1}, 1},
    /* 25 output blocks of 16: a register block of 2 channel blocks, the
       last cut short (RegNet's 7x7 stage has 49) */
    {"1x1, 32->400, 7x7 (last channel-block group cut short)",
     1,
     32,
     7,
     7,
     400,
     1,
     1,
     1,
     1,
     {0, 0, 0, 0},
     0},
    {"3x3 s1, 116->116, max pool (padded)", 1, 116, 8, 8, 116, 3, 1, 1, 1, {1, 1, 1, 1}, 3},
    /* max pools whose maxima stay in registers over blocks of pixels: 14
       wide (7 a block), 9 wide (3), and stride 2 with ceil_mode (13 -> 6) */
    {"1x1, 16->32, 3x3 s1 max pool, 14 wide", 1, 16, 6, 14, 32, 1, 1, 1, 1, {0, 0, 0, 0}, 5},
    {"1x1, 16->32, 3x3 s1 max pool, 9 wide", 1, 16, 5, 9, 32, 1, 1, 1, 1, {0, 0, 0, 0}, 5},
    {"1x1, 16->32, 3x3 s2 ceil-mode max pool", 1, 16, 13, 13, 32, 1, 1, 1, 1, {0, 0, 0, 0}, 6},
};

static void test_nchwc_convolutions(void) {
    for (size_t i = 0; i < sizeof g_cases / sizeof g_cases[0]; i++) {
        const conv_case *c = &g_cases[i];
        kiln_ndarray *keep[8];
        int nkeep = 0;
        kiln_graph *g = make_graph(c, keep, &nkeep);
        uint64_t seed = 99 + i;
        int64_t xs[4] = {c->n, c->c, c->h, c->w};
        kiln_ndarray *x = filled(4, xs, &seed);
        int k_def = 0, k_naive = 0, k_plain = 0, k_256 = 0;
        kiln_ndarray *def = run(g, x, NULL, NULL, NULL, NULL, &k_def);
        kiln_ndarray *naive = run(g, x, "schedule", "naive", NULL, NULL, &k_naive);
        kiln_ndarray *plain = run(g, x, "disabled-pass", "AlterOpLayout", NULL, NULL, &k_plain);
        kiln_ndarray *v256 = run(g, x, "vector-bits", "256", NULL, NULL, &k_256);
        kiln_ndarray *ref = interpret(g, x);
        check_agree(c->what, def, naive, plain, v256, ref, 1e-4, 1e-4);
        /* the blocked path was taken, and not with AlterOpLayout disabled */
        CHECK(k_def >= 1);
        CHECK(k_256 >= 1);
        CHECK_EQ_INT(k_plain, 0);
        kiln_ndarray_free(def);
        kiln_ndarray_free(naive);
        kiln_ndarray_free(plain);
        kiln_ndarray_free(v256);
        kiln_ndarray_free(ref);
        kiln_ndarray_free(x);
        for (int k = 0; k < nkeep; k++)
            kiln_ndarray_free(keep[k]);
        kiln_graph_free(g);
    }
}

/* Winograd F(2x2) and F(4x4) (forced, and as AlterOpLayout picks them)
 * against the direct NCHW convolution, and the Winograd op's own schedule
 * against its naive schedule. Cases: output sizes that are not a multiple
 * of the tile (partial tiles), padding 0 and asymmetric, batch 2, output
 * blocks that pair up in the weight layout (64 channels) and that do not
 * (48 = 3 blocks), an epilogue with a residual add, 256-bit vectors. The
 * transforms round differently from the direct sum: F(4x4) multiplies by
 * up to 8 and divides by 24, so the tolerance against NCHW is 1e-3 (the
 * end-to-end ResNet-50 stays within 6e-5 of ONNX Runtime at scale 2.7). */
static const conv_case w_cases[] = {
    {"3x3 p1, 32->64, 12x12", 1, 32, 12, 12, 64, 3, 1, 1, 1, {1, 1, 1, 1}, 1},
    {"3x3 p1, 16->48, 13x11 (partial tiles, 3 output blocks)",
     1,
     16,
     13,
     11,
     48,
     3,
     1,
     1,
     1,
     {1, 1, 1, 1},
     2},
    {"3x3 p0, batch 2, 16->32, 10x9", 2, 16, 10, 9, 32, 3, 1, 1, 1, {0, 0, 0, 0}, 0},
    {"3x3 asymmetric padding, 24->16", 1, 24, 9, 10, 16, 3, 1, 1, 1, {2, 0, 1, 1}, 1},
    {"3x3 p1, 116->116 (padded blocks)", 1, 116, 9, 8, 116, 3, 1, 1, 1, {1, 1, 1, 1}, 2},
};

static void test_winograd(void) {
    for (size_t i = 0; i < sizeof w_cases / sizeof w_cases[0]; i++) {
        const conv_case *c = &w_cases[i];
        kiln_ndarray *keep[8];
        int nkeep = 0;
        kiln_graph *g = make_graph(c, keep, &nkeep);
        uint64_t seed = 7 + i;
        int64_t xs[4] = {c->n, c->c, c->h, c->w};
        kiln_ndarray *x = filled(4, xs, &seed);
        int k;
        const char *plain_kv[] = {"disabled-pass", "AlterOpLayout", NULL};
        kiln_ndarray *plain = run_opts(g, x, plain_kv, "winograd", &k);
        kiln_ndarray *ref = interpret(g, x);
        CHECK_EQ_INT(k, 0);
        static const char *const tiles[] = {"2", "4"};
        for (int t = 0; t < 2; t++) {
            /* without contracting a * b + c into one rounding, the two
               schedules round alike: F(4x4)'s transforms magnify a
               contraction's difference to 1e-4 */
            const char *def_kv[] = {"winograd", tiles[t], "cflags",
                                    "-O2 -march=native -ffp-contract=off", NULL};
            const char *naive_kv[] = {"winograd", tiles[t], "schedule",
                                      "naive",    "cflags", "-O2 -march=native -ffp-contract=off",
                                      NULL};
            const char *v256_kv[] = {"winograd", tiles[t], "vector-bits", "256", NULL};
            int k1 = 0, k2 = 0, k3 = 0;
            kiln_ndarray *def = run_opts(g, x, def_kv, "winograd", &k1);
            kiln_ndarray *naive = run_opts(g, x, naive_kv, "winograd", &k2);
            kiln_ndarray *v256 = run_opts(g, x, v256_kv, "winograd", &k3);
            char what[300];
            snprintf(what, sizeof what, "%s F(%s)", c->what, tiles[t]);
            check_agree(what, def, naive, plain, v256, ref, 1e-5, 1e-3);
            /* every convolution (two with the residual) went through Winograd */
            CHECK_EQ_INT(k1, c->epilogue == 2 ? 2 : 1);
            CHECK_EQ_INT(k3, k1);
            kiln_ndarray_free(def);
            kiln_ndarray_free(naive);
            kiln_ndarray_free(v256);
        }
        kiln_ndarray_free(plain);
        kiln_ndarray_free(ref);
        kiln_ndarray_free(x);
        for (int j = 0; j < nkeep; j++)
            kiln_ndarray_free(keep[j]);
        kiln_graph_free(g);
    }
}

/* g compiled for `bits`-bit vectors with its IR dumped: the graph after
 * AlterOpLayout (a static buffer), or NULL if the dump is missing. With
 * build 0 the kernels are not compiled (cc is `false`: the pass is what is
 * read); else *st is the compile's status. */
static const char *after_alter_layout(kiln_graph *g, const char *bits, int build, kiln_status *st,
                                      const char *target) {
    static char text[1 << 16];
    char dir[1100], cmd[2400], path[1200];
    snprintf(dir, sizeof dir, "%s", test_tmp_path("alter_dump"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "dump-ir", dir);
    kiln_build_options_set(o, "vector-bits", bits);
    if (target)
        kiln_build_options_set(o, "target", target);
    if (!build)
        kiln_build_options_set(o, "cc", "false");
    kiln_status s = kiln_graph_compile(g, test_tmp_path("alter_dump.tar"), o);
    if (st)
        *st = s;
    kiln_build_options_free(o);
    snprintf(path, sizeof path, "%s/07_after_AlterOpLayout.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    return text;
}

/* AlterOpLayout's choice on ResNet-50's 3x3 stride-1 shapes (the cost
 * model, ops_conv3x3_cost): F(4x4) at 56x56x64 and 28x28x128, F(2x2) at
 * 14x14x256, the direct convolution at 7x7x512; and never for a stride-2
 * or grouped 3x3 convolution. Read from the IR dump. */
static void test_winograd_choice(void) {
    static const struct {
        int64_t c, hw;
        int stride, groups;
        const char *want;
    } cases[] = {
        {64, 56, 1, 1, "tile_size=4"},
        {128, 28, 1, 1, "tile_size=4"},
        {256, 14, 1, 1, "tile_size=2"},
        {512, 7, 1, 1, "nn.contrib_conv2d_NCHWc("},
        {64, 56, 2, 1, "nn.contrib_conv2d_NCHWc("},
        {64, 56, 1, 2, "nn.contrib_conv2d_NCHWc("},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conv_case c = {"",           1, cases[i].c,      cases[i].hw, cases[i].hw,
                       cases[i].c,   3, cases[i].stride, 1,           cases[i].groups,
                       {1, 1, 1, 1}, 0};
        kiln_ndarray *keep[8];
        int nkeep = 0;
        kiln_graph *g = make_graph(&c, keep, &nkeep);
        /* the layout pass is what is read; the kernels need not be built */
        const char *text = after_alter_layout(g, "512", 0, NULL, NULL);
        CHECK(text != NULL);
        if (text)
            CHECK_CONTAINS(text, cases[i].want);
        for (int k = 0; k < nkeep; k++)
            kiln_ndarray_free(keep[k]);
        kiln_graph_free(g);
    }
    /* at batch 8 the transformed tiles of 56x56x64 (29 MB) pass half a 32 MB
       L3: the direct convolution; 28x28x128's 14 MB keep F(4x4). The target
       names its caches (znver3: 32 MB L3), so the choice is the same on any
       machine. */
    static const struct {
        int64_t c, hw;
        const char *want;
    } batch8[] = {{64, 56, "nn.contrib_conv2d_NCHWc("}, {128, 28, "tile_size=4"}};
    for (size_t i = 0; i < sizeof batch8 / sizeof batch8[0]; i++) {
        conv_case c = {
            "",           8, batch8[i].c, batch8[i].hw, batch8[i].hw, batch8[i].c, 3, 1, 1, 1,
            {1, 1, 1, 1}, 0};
        kiln_ndarray *keep[8];
        int nkeep = 0;
        kiln_graph *g = make_graph(&c, keep, &nkeep);
        const char *text = after_alter_layout(g, "256", 0, NULL, "llvm -mcpu=znver3");
        CHECK(text != NULL);
        if (text)
            CHECK_CONTAINS(text, batch8[i].want);
        for (int k = 0; k < nkeep; k++)
            kiln_ndarray_free(keep[k]);
        kiln_graph_free(g);
    }
}

/* The channel block spans a depthwise convolution's channels (a block of 1,
 * one channel per group, would be correct and scalar), a grouped
 * convolution's blocks stay within a group, and 116 channels (ShuffleNetV2)
 * take whole 16-wide blocks, the last padded, not 29 blocks of 4; the
 * transform back to NCHW names the logical channels. Read from the IR
 * dump. */
static void test_nchwc_blocks(void) {
    static const struct {
        int64_t c, groups;
        const char *bits, *want, *want2;
    } v[] = {
        {32, 32, "256", "data_layout=\"NCHW8c\"", "NCHW8c"},
        {32, 4, "256", "data_layout=\"NCHW8c\"", "NCHW8c"},
        {116, 1, "512", "data_layout=\"NCHW16c\"", "channels=116"},
        {116, 116, "512", "groups=128, data_layout=\"NCHW16c\"", "channels=116"},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        conv_case c = {"", 1, v[k].c, 8, 8, v[k].c, 3, 1, 1, v[k].groups, {1, 1, 1, 1}, 0};
        kiln_ndarray *keep[8];
        int nkeep = 0;
        kiln_graph *g = make_graph(&c, keep, &nkeep);
        kiln_status st = KILN_ERR_INVALID;
        const char *text = after_alter_layout(g, v[k].bits, 1, &st, NULL);
        CHECK_EQ_INT(st, KILN_OK);
        CHECK(text != NULL);
        if (text) {
            CHECK_CONTAINS(text, v[k].want);
            CHECK_CONTAINS(text, v[k].want2);
            CHECK(strstr(text, "NCHW1c") == NULL);
            CHECK(strstr(text, "NCHW4c") == NULL);
        }
        for (int j = 0; j < nkeep; j++)
            kiln_ndarray_free(keep[j]);
        kiln_graph_free(g);
    }
}

/* The int8 blocked convolution refuses a weight of 3-element dot products,
 * float data and mismatched blocks with errors naming the call. */
static void test_nchwc_int8_errors(void) {
    static const struct {
        kiln_dtype xdt, wdt;
        int64_t k, ib;
        const char *msg;
    } cases[] = {{KILN_UINT8, KILN_INT8, 3, 8, "k must be 2 or 4"},
                 {KILN_FLOAT32, KILN_INT8, 4, 8, "data must be uint8"},
                 {KILN_UINT8, KILN_FLOAT32, 4, 8, "weight int8 or int16"},
                 {KILN_UINT8, KILN_INT8, 4, 4, "does not match data in blocks of 8"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t xs[5] = {1, 1, 4, 4, 8},
                ws[7] = {1, 1, 3, 3, cases[i].ib / cases[i].k, 16, cases[i].k};
        kiln_graph *g = kiln_graph_new();
        int x = kiln_graph_var(g, "x", cases[i].xdt, 5, xs, NULL);
        kiln_ndarray *w = kiln_ndarray_empty(cases[i].wdt, 7, ws);
        int in[2] = {x, kiln_graph_const(g, "w", w)};
        kiln_ndarray_free(w);
        int c = kiln_graph_call(g, "nn.contrib_conv2d_NCHWc_int8", 2, in,
                                "data_layout=\"NCHW8c\", kernel_layout=\"OIHW2i16o4i\", "
                                "out_layout=\"NCHW16c\"",
                                "bad_int8_conv");
        CHECK(c >= 0);
        kiln_graph_set_outputs(g, 1, &c, NULL);
        CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "bad_int8_conv");
        CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        kiln_graph_free(g);
    }
}

/* Bad layout attributes get errors, not crashes. */
static void test_nchwc_errors(void) {
    int64_t xs[5] = {1, 2, 4, 4, 8}, ws[6] = {1, 2, 3, 3, 8, 16};
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 5, xs, NULL);
    kiln_ndarray *w = kiln_ndarray_empty(KILN_FLOAT32, 6, ws);
    int wc = kiln_graph_const(g, "w", w);
    int in[2] = {x, wc};
    int c = kiln_graph_call(g, "nn.contrib_conv2d_NCHWc", 2, in,
                            "data_layout=\"NCHW4c\", out_layout=\"NCHW16c\"", "bad_conv");
    CHECK(c >= 0);
    kiln_graph_set_outputs(g, 1, &c, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "bad_conv");
    CHECK_CONTAINS(kiln_last_error(), "block");
    kiln_graph_free(g);
    g = kiln_graph_new();
    int64_t ps[4] = {1, 12, 4, 4};
    x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, ps, NULL);
    /* 12 channels pad to 2 blocks of 8; back to NCHW, `channels` must lie
       within the last block */
    int t = kiln_graph_call(g, "layout_transform", 1, &x,
                            "src_layout=\"NCHW\", dst_layout=\"NCHW8c\"", "lt");
    int t2 = kiln_graph_call(g, "layout_transform", 1, &t,
                             "src_layout=\"NCHW8c\", dst_layout=\"NCHW\", channels=17", "lt_back");
    kiln_graph_set_outputs(g, 1, &t2, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "lt_back");
    CHECK_CONTAINS(kiln_last_error(), "channels=17 does not fit 2 blocks of 8");
    kiln_graph_free(g);
    /* from NCHW, `channels` is the tensor's own count or absent */
    g = kiln_graph_new();
    x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, ps, NULL);
    t = kiln_graph_call(g, "layout_transform", 1, &x,
                        "src_layout=\"NCHW\", dst_layout=\"NCHW8c\", channels=20", "lt_wide");
    kiln_graph_set_outputs(g, 1, &t, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "channels=20 is not the NCHW input's 12 channels");
    kiln_graph_free(g);
    g = kiln_graph_new();
    x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, ps, NULL);
    t = kiln_graph_call(g, "layout_transform", 1, &x, "src_layout=\"NHWC\", dst_layout=\"NCHW4c\"",
                        "lt2");
    kiln_graph_set_outputs(g, 1, &t, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "NHWC");
    kiln_graph_free(g);
    kiln_ndarray_free(w);
    /* a dense weight layout that is neither NK, KN nor NC[x]n, and packed
       panels whose block does not match the attribute */
    int64_t xs2[2] = {2, 8}, ws2[3] = {2, 8, 8};
    kiln_ndarray *w3 = kiln_ndarray_empty(KILN_FLOAT32, 3, ws2);
    const char *bad[2] = {"weight_layout=\"NCxn\"", "weight_layout=\"NC4n\""};
    const char *msg[2] = {"is not NK, KN, NC[x]n or NC[x]n[k]k", "must be [units/4, in, 4]"};
    for (int k = 0; k < 2; k++) {
        g = kiln_graph_new();
        int in2[2] = {kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs2, NULL),
                      kiln_graph_const(g, "w", w3)};
        int d = kiln_graph_call(g, "nn.dense", 2, in2, bad[k], "bad_dense");
        kiln_graph_set_outputs(g, 1, &d, NULL);
        CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "bad_dense");
        CHECK_CONTAINS(kiln_last_error(), msg[k]);
        kiln_graph_free(g);
    }
    kiln_ndarray_free(w3);
    /* Winograd: a tile size other than 2 or 4, a weight that does not
       match the tile size, a stride, and the build option's values */
    static const struct {
        const char *attrs;
        int64_t e;
        const char *msg;
    } wb[] = {
        {"tile_size=3, data_layout=\"NCHW4c\", out_layout=\"NCHW4c\"", 16,
         "tile_size must be 2 or 4"},
        {"tile_size=4, data_layout=\"NCHW4c\", out_layout=\"NCHW4c\"", 16,
         "does not match tile size 4"},
        {"tile_size=2, strides=[2, 2], data_layout=\"NCHW4c\", out_layout=\"NCHW4c\"", 16,
         "strides and dilation 1"},
    };
    for (size_t k = 0; k < sizeof wb / sizeof wb[0]; k++) {
        int64_t wxs[5] = {1, 2, 6, 6, 4}, wws[5] = {wb[k].e, 1, 2, 4, 8};
        kiln_ndarray *ww = kiln_ndarray_empty(KILN_FLOAT32, 5, wws);
        g = kiln_graph_new();
        int in2[2] = {kiln_graph_var(g, "x", KILN_FLOAT32, 5, wxs, NULL),
                      kiln_graph_const(g, "w", ww)};
        int d =
            kiln_graph_call(g, "nn.contrib_conv2d_winograd_NCHWc", 2, in2, wb[k].attrs, "bad_wino");
        kiln_graph_set_outputs(g, 1, &d, NULL);
        CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "bad_wino");
        CHECK_CONTAINS(kiln_last_error(), wb[k].msg);
        kiln_graph_free(g);
        kiln_ndarray_free(ww);
    }
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "winograd", "3"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "is not auto, off, 2 or 4");
    CHECK_EQ_INT(kiln_build_options_set(o, "winograd", "auto"), KILN_OK);
    kiln_build_options_free(o);
}

/* A DenseNet layer: concatenate(x, relu(conv1x1(x))) along the channels,
 * then a per-channel scale and shift, relu, and a 1x1 convolution. With
 * channel counts that are multiples of the block the concatenation runs
 * in NCHW[x]c (no layout transform but the input's and the output's), and
 * its kernel is vectorized (whole blocks copied); with 30 channels, whose
 * blocks are padded at every vector width (16, 8 or 4 lanes), it goes
 * through NCHW. Results agree with the
 * naive schedule, NCHW and the interpreter either way. */
static void test_nchwc_concat(void) {
    for (int variant = 0; variant < 2; variant++) {
        int64_t c = variant ? 30 : 32;
        uint64_t seed = 77 + (uint64_t)variant;
        int64_t xs[4] = {1, c, 6, 7}, w1s[4] = {c, c, 1, 1}, w2s[4] = {16, 2 * c, 1, 1},
                cs[3] = {2 * c, 1, 1};
        kiln_ndarray *w1 = filled(4, w1s, &seed), *w2 = filled(4, w2s, &seed),
                     *sc = filled(3, cs, &seed), *sh = filled(3, cs, &seed),
                     *x = filled(4, xs, &seed);
        kiln_graph *g = kiln_graph_new();
        int xi = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
        int a[2] = {xi, kiln_graph_const(g, "w1", w1)};
        int y = kiln_graph_call(g, "nn.conv2d", 2, a, NULL, "conv1");
        y = kiln_graph_call(g, "nn.relu", 1, &y, NULL, "relu1");
        int cat[2] = {xi, y};
        y = kiln_graph_call(g, "concatenate", 2, cat, "axis=1", "cat");
        int m[2] = {y, kiln_graph_const(g, "scale", sc)};
        y = kiln_graph_call(g, "multiply", 2, m, NULL, "bn_scale");
        int ad[2] = {y, kiln_graph_const(g, "shift", sh)};
        y = kiln_graph_call(g, "add", 2, ad, NULL, "bn_shift");
        y = kiln_graph_call(g, "nn.relu", 1, &y, NULL, "relu2");
        int b[2] = {y, kiln_graph_const(g, "w2", w2)};
        y = kiln_graph_call(g, "nn.conv2d", 2, b, NULL, "conv2");
        CHECK(y >= 0);
        kiln_graph_set_outputs(g, 1, &y, NULL);
        int nt = 0, k = 0;
        const char *def_kv[] = {"winograd", "off", NULL};
        kiln_ndarray *def = run_opts(g, x, def_kv, "layout_transform", &nt);
        kiln_ndarray *naive = run(g, x, "schedule", "naive", NULL, NULL, &k);
        kiln_ndarray *plain = run(g, x, "disabled-pass", "AlterOpLayout", NULL, NULL, &k);
        kiln_ndarray *v256 = run(g, x, "vector-bits", "256", NULL, NULL, &k);
        kiln_ndarray *ref = interpret(g, x);
        check_agree(variant ? "concat of 30 + 30 channels" : "concat of 32 + 32 channels", def,
                    naive, plain, v256, ref, 1e-4, 1e-4);
        if (variant == 0)
            CHECK_EQ_INT(nt, 2); /* x in, the result out */
        else
            CHECK(nt > 2);
        if (variant == 0) { /* the blocked concatenation's kernel copies whole vectors (a
                               view by default, test_driver_views.c: its copy here) */
            kiln_build_options *o = kiln_build_options_new();
            const char *dir = test_tmp_path("nchwc_concat_ir");
            mkdir(dir, 0755);
            CHECK_EQ_INT(kiln_build_options_set(o, "dump-ir", dir), KILN_OK);
            CHECK_EQ_INT(kiln_build_options_set(o, "disabled-pass", "ConcatViews"), KILN_OK);
            kiln_ndarray *r =
                gu_compile_run(g, o, 1, (const kiln_ndarray *const *)&x, NULL, NULL, 0);
            char path[1200];
            snprintf(path, sizeof path, "%s/kernels.tir.txt", dir);
            size_t len = 0;
            char *tir = kiln_read_file(path, &len);
            const char *kcat = tir ? strstr(tir, "fused_concatenate") : NULL;
            const char *next = kcat ? strstr(kcat + 1, "primfn") : NULL;
            const char *ramp = kcat ? strstr(kcat, "ramp(") : NULL;
            CHECK(kcat && ramp && (!next || ramp < next));
            free(tir);
            kiln_ndarray_free(r);
            kiln_build_options_free(o);
        }
        kiln_ndarray_free(def);
        kiln_ndarray_free(naive);
        kiln_ndarray_free(plain);
        kiln_ndarray_free(v256);
        kiln_ndarray_free(ref);
        kiln_ndarray_free(x);
        kiln_ndarray_free(w1);
        kiln_ndarray_free(w2);
        kiln_ndarray_free(sc);
        kiln_ndarray_free(sh);
        kiln_graph_free(g);
    }
}

TEST_MAIN(TEST(test_nchwc_convolutions), TEST(test_winograd), TEST(test_winograd_choice),
          TEST(test_nchwc_blocks), TEST(test_nchwc_errors), TEST(test_nchwc_int8_errors),
          TEST(test_nchwc_concat))
