/* test_driver_compile.c: a graph built by hand is compiled into a package
 * (FuseOps groups, one kernel per group, the memory plan) and run by the
 * graph executor; the outputs match a plain C reference of the same net.
 * Targets through the API: the build options take a target string or
 * object, the package records it, a compiler for another architecture is
 * caught, and the runtime refuses a package this CPU cannot run. */
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "kiln/graph.h"
#include "runtime/runtime_internal.h"
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
                                if (y < 0 || y >= H || z < 0 || z >= W)
                                    continue;
                                acc += x[((n * CI + c) * H + y) * W + z] *
                                       w[((o * CI + c) * 3 + a) * 3 + e];
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
                        for (int e = 0; e < 2; e++)
                            m = fmaxf(m, conv[n][o][2 * i + a][2 * j + e]);
                    pool[n][(o * HP + i) * WP + j] = m;
                }
    for (int n = 0; n < B; n++) {
        float logits[U], mx = -INFINITY, sum = 0;
        for (int u = 0; u < U; u++) {
            float acc = 0;
            for (int k = 0; k < F; k++)
                acc += pool[n][k] * dw[u * F + k];
            logits[u] = acc + db[u];
            mx = fmaxf(mx, logits[u]);
        }
        for (int u = 0; u < U; u++)
            sum += expf(logits[u] - mx);
        for (int u = 0; u < U; u++)
            out[n * U + u] = expf(logits[u] - mx) / sum;
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
    if (st != KILN_OK)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
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
        for (int i = 0; i < B * U; i++)
            CHECK_NEAR(o[i], ref[i], 1e-5);
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
    /* a symbolic batch through relu compiles (test_driver_dynamic runs it) */
    CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("relu_batch.tar"), NULL), KILN_OK);
    kiln_graph_free(g);
}

/* A compile that recovers from a failed schedule step leaves no message:
 * sum over axis 0 of [16, 4, 32] vectorizes its 32 columns (a split), and
 * the default schedule's parallel fuse of the 4 rows with the split
 * columns fails and stops there; kiln_last_error() stays empty, here for
 * the output sum and for one an add follows. */
static void test_compile_clears_recovered_errors(void) {
    for (int fused = 0; fused < 2; fused++) {
        kiln_graph *g = kiln_graph_new();
        int64_t xd[3] = {16, 4, 32};
        int x = kiln_graph_var(g, "x", KILN_FLOAT32, 3, xd, NULL);
        int y = kiln_graph_call(g, "sum", 1, &x, "axis=[0]", "s");
        if (fused) {
            int in[2] = {y, y};
            y = kiln_graph_call(g, "add", 2, in, NULL, "twice");
        }
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
        kiln_clear_error();
        CHECK_EQ_INT(kiln_graph_compile(g, test_tmp_path("sum_rows.tar"), NULL), KILN_OK);
        CHECK_EQ_STR(kiln_last_error(), "");
        kiln_graph_free(g);
    }
}

/* conv3x3 (8 -> 16 channels, 10x10) -> relu */
static kiln_graph *small_graph(kiln_ndarray **w) {
    uint64_t seed = 5;
    int64_t xs[4] = {1, 8, 10, 10}, ws[4] = {16, 8, 3, 3};
    *w = filled(4, ws, &seed);
    kiln_graph *g = kiln_graph_new();
    int in = kiln_graph_var(g, "input", KILN_FLOAT32, 4, xs, NULL);
    int a[2] = {in, kiln_graph_const(g, "w", *w)};
    int c = kiln_graph_call(g, "nn.conv2d", 2, a, "padding=[1, 1, 1, 1]", "conv");
    int r = kiln_graph_call(g, "nn.relu", 1, &c, NULL, "relu");
    kiln_graph_set_outputs(g, 1, &r, NULL);
    return g;
}

static int cpu_has_all(const kiln_target *t) {
    static const char *const names[] = {"sse4.2",   "avx",        "avx2",      "fma",
                                        "avx512f",  "avx512cd",   "avx512bw",  "avx512dq",
                                        "avx512vl", "avx512vnni", "avx512bf16"};
    __builtin_cpu_init();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int has = 0;
#define HAS(s)                                                                                     \
    if (!strcmp(names[i], s))                                                                      \
    has = __builtin_cpu_supports(s)
        HAS("sse4.2");
        HAS("avx");
        HAS("avx2");
        HAS("fma");
        HAS("avx512f");
        HAS("avx512cd");
        HAS("avx512bw");
        HAS("avx512dq");
        HAS("avx512vl");
        HAS("avx512vnni");
        HAS("avx512bf16");
#undef HAS
        if (kiln_target_has(t, names[i]) && !has)
            return 0;
    }
    return 1;
}

static void test_compile_targets(void) {
    kiln_ndarray *w;
    kiln_graph *g = small_graph(&w);
    kiln_build_options *o = kiln_build_options_new();
    const char *pkg = test_tmp_path("target.tar");
    /* a bad target string is one error naming the bad word */
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "llvm -mcpu=bogus"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "unknown CPU 'bogus'");
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "cuda"), KILN_ERR_UNSUPPORTED);
    /* an external backend kiln does not have (kiln/byoc.h) */
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "nosuch, llvm"), KILN_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kiln_last_error(), "unknown external backend 'nosuch' (known:");
    CHECK_EQ_INT(kiln_build_options_set_target(NULL, NULL), KILN_ERR_INVALID);
    /* the package records its target, which the runtime checks */
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "llvm -mcpu=haswell"), KILN_OK);
    kiln_status st = kiln_graph_compile(g, pkg, o);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_target *hw = kiln_target_parse("llvm -mcpu=haswell");
    if (!st && hw && cpu_has_all(hw)) {
        char *text = NULL;
        size_t len = 0;
        kiln_module *m = NULL;
        kiln_npz *params = NULL;
        CHECK_EQ_INT(kiln_package_read(pkg, &text, &len, &m, &params), KILN_OK);
        CHECK_CONTAINS(text,
                       "\"target\": {\"str\": \"llvm -mtriple=x86_64-linux-gnu -mcpu=haswell\", "
                       "\"arch\": \"x86_64\", \"vector_bits\": 256, \"features\": "
                       "[\"sse4.2\", \"avx\", \"f16c\", \"fma\", \"avx2\"]}");
        free(text);
        kiln_module_free(m);
        kiln_npz_free(params);
    }
    /* a target object; cc and cflags apply on top of it */
    kiln_target *arm = kiln_target_parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
    CHECK(arm != NULL);
    CHECK_EQ_INT(kiln_build_options_set_target(o, arm), KILN_OK);
    kiln_target_free(arm); /* the options hold a copy */
    CHECK_EQ_INT(kiln_build_options_set(o, "vector-bits", "256"), KILN_OK);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "aarch64 vectors are 128");
    CHECK_EQ_INT(kiln_build_options_set(o, "vector-bits", "128"), KILN_OK);
    /* this machine's compiler for an aarch64 target: named, not packaged */
    CHECK_EQ_INT(kiln_build_options_set(o, "cc", "cc"), KILN_OK);
    CHECK_EQ_INT(kiln_build_options_set(o, "cflags", "-O1"), KILN_OK);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_ERR_TOOLCHAIN);
    CHECK_CONTAINS(kiln_last_error(), "the C compiler 'cc' built x86_64 code, but the target "
                                      "\"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72\" is "
                                      "aarch64");
    /* back to the default target */
    CHECK_EQ_INT(kiln_build_options_set_target(o, NULL), KILN_OK);
    /* an AVX-512 target: the runtime loads it only where the CPU has the
       features it lists */
    kiln_build_options_free(o);
    o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "llvm -mcpu=sapphirerapids"), KILN_OK);
    st = kiln_graph_compile(g, pkg, o);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_target *spr = kiln_target_parse("llvm -mcpu=sapphirerapids");
    kiln_executor *ex = st ? NULL : kiln_executor_load(pkg);
    if (spr && cpu_has_all(spr)) {
        CHECK(ex != NULL);
    } else {
        CHECK(ex == NULL);
        CHECK_CONTAINS(kiln_last_error(),
                       "which this CPU lacks: compile the model for this machine");
    }
    kiln_executor_free(ex);
    kiln_target_free(spr);
    kiln_target_free(hw);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    kiln_ndarray_free(w);
}

static kiln_expr twice(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_mul(kiln_tensor_at(u, 1, i), kiln_float(ctx, 2));
}

/* kiln_build loads what it builds, so only for this machine's
 * architecture; kiln_build_save writes another's with its compiler. */
static void test_build_targets(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    kiln_tensor *A = kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A");
    kiln_tensor *C = kiln_compute(ctx, 1, &n, twice, A, "C");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_expr xo, xi;
    kiln_split(kiln_schedule_stage(s, C), kiln_tensor_axis(C, 0), 16, &xo, &xi);
    kiln_vectorize(kiln_schedule_stage(s, C), xi);
    kiln_tensor *args[2] = {A, C};
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "llvm -mtriple=aarch64-linux-gnu"), KILN_OK);
    CHECK(kiln_build(s, 2, args, "twice", o) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "is aarch64 code, which this x86_64 machine cannot load");
    /* the source is NEON-sized: 16 lanes split into 4-lane vectors */
    char *src = kiln_build_source(s, 2, args, "twice", o);
    CHECK_CONTAINS(src, "f32x4");
    CHECK(src && !strstr(src, "f32x16"));
    free(src);
    if (system("command -v aarch64-linux-gnu-gcc >/dev/null 2>&1") == 0) {
        const char *path = test_tmp_path("twice_aarch64.so");
        CHECK_EQ_INT(kiln_build_save(s, 2, args, "twice", o, path), KILN_OK);
        unsigned char h[20] = {0};
        FILE *f = fopen(path, "rb");
        CHECK(f && fread(h, 1, sizeof h, f) == sizeof h);
        if (f)
            fclose(f);
        CHECK_EQ_INT(h[18] | h[19] << 8, 183); /* EM_AARCH64 */
        unlink(path);
    }
    kiln_build_options_free(o);
    kiln_ctx_free(ctx);
}

/* The func_name the plan gives node `name` (into out), "" if none. */
static void plan_func(const char *plan, const char *name, char *out, size_t cap) {
    char key[128];
    snprintf(key, sizeof key, "\"name\": \"%s\"", name);
    const char *p = strstr(plan, key), *f = p ? strstr(p, "\"func_name\": \"") : NULL;
    out[0] = 0;
    if (f) {
        f += strlen("\"func_name\": \"");
        size_t n = strcspn(f, "\"");
        snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), f);
    }
}

/* Kernels whose code is the same up to names are one C function, which
 * the plan points every such node at; a different attribute, shape or
 * dtype keeps its own. softmax(axis 1) twice on [4, 16], then softmax
 * over axis 0, then on [16, 4] after a reshape, then a float64 one. */
static void test_kernel_dedup(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[2] = {4, 16};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
    int a = kiln_graph_call(g, "nn.softmax", 1, &x, "axis=1", "sm_a");
    int b = kiln_graph_call(g, "nn.softmax", 1, &a, "axis=1", "sm_b");
    int c = kiln_graph_call(g, "nn.softmax", 1, &b, "axis=0", "sm_c");
    int r = kiln_graph_call(g, "reshape", 1, &c, "newshape=[16, 4]", "flip");
    int d = kiln_graph_call(g, "nn.softmax", 1, &r, "axis=1", "sm_d");
    int e64 = kiln_graph_call(g, "cast", 1, &d, "dtype=\"float64\"", "wide");
    int e = kiln_graph_call(g, "nn.softmax", 1, &e64, "axis=1", "sm_e");
    CHECK(e >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &e, NULL), KILN_OK);
    const char *pkg = test_tmp_path("dedup.tar");
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "fuse", "0"); /* one kernel per op */
    kiln_status st = kiln_graph_compile(g, pkg, o);
    CHECK_EQ_INT(st, KILN_OK);
    char *text = NULL;
    size_t len = 0;
    kiln_module *m = NULL;
    kiln_npz *params = NULL;
    if (!st && kiln_package_read(pkg, &text, &len, &m, &params) == KILN_OK) {
        char fa[160], fb[160], fc[160], fd[160], fe[160];
        plan_func(text, "sm_a", fa, sizeof fa);
        plan_func(text, "sm_b", fb, sizeof fb);
        plan_func(text, "sm_c", fc, sizeof fc);
        plan_func(text, "sm_d", fd, sizeof fd);
        plan_func(text, "sm_e", fe, sizeof fe);
        CHECK(fa[0] && fc[0] && fd[0] && fe[0]);
        CHECK_EQ_STR(fb, fa); /* the same code: one function */
        CHECK(strcmp(fc, fa) && strcmp(fd, fa) && strcmp(fd, fc) && strcmp(fe, fd));
        /* the module holds the distinct functions only */
        CHECK(kiln_module_get_function(m, fa) != NULL);
        CHECK(kiln_module_get_function(m, fc) != NULL);
        char own_b[160];
        snprintf(own_b, sizeof own_b, "%s", fa);
        char *us = strrchr(own_b, '_');
        if (us)
            snprintf(us + 1, sizeof own_b - (size_t)(us + 1 - own_b), "1");
        CHECK(kiln_module_get_function(m, own_b) == NULL); /* sm_b's own name, not emitted */
    }
    free(text);
    kiln_module_free(m);
    kiln_npz_free(params);
    /* and it runs: each softmax row sums to 1 */
    kiln_executor *ex = st ? NULL : kiln_executor_load(pkg);
    CHECK(ex != NULL);
    if (ex) {
        uint64_t seed = 3;
        kiln_ndarray *in = filled(2, xd, &seed);
        CHECK_EQ_INT(kiln_executor_set_input(ex, "x", in), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
        const kiln_ndarray *out = kiln_executor_output(ex, 0);
        const double *v = kiln_ndarray_data(out);
        for (int i = 0; i < 16; i++)
            CHECK_NEAR(v[4 * i] + v[4 * i + 1] + v[4 * i + 2] + v[4 * i + 3], 1.0, 1e-6);
        kiln_ndarray_free(in);
        kiln_executor_free(ex);
    }
    kiln_build_options_free(o);
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_compile_cnn), TEST(test_compile_errors), TEST(test_kernel_dedup),
          TEST(test_compile_clears_recovered_errors), TEST(test_compile_targets),
          TEST(test_build_targets))
