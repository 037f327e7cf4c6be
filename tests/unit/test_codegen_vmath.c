/* test_codegen_vmath.c: the vector float32 math helpers of the C renderer
 * (exp, log, tanh, sigmoid, erf of f32xN vectors as straight vector code
 * instead of per-lane libm calls). Each function is built as a tensor
 * expression C[i] = f(A[i]), split by 16, 8 and 4 and vectorized, run on
 * ~100k inputs over the whole float range plus special values, and compared
 * with libm in double precision. Prints the largest error of each. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "te_util.h"

#define N 100000

typedef struct {
    const char *name;
    kiln_expr (*fn)(kiln_expr);
    double (*ref)(double);
} vfunc;

/* The largest relative error allowed (err() below): about 2.5 to 5 ulp; the
 * helpers measure 0.8 to 2.4 ulp over all floats. */
#define TOL 3e-7

static double ref_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

static const vfunc g_funcs[] = {
    {"exp", kiln_exp, exp},    {"log", kiln_log, log},
    {"tanh", kiln_tanh, tanh}, {"sigmoid", kiln_sigmoid, ref_sigmoid},
    {"erf", kiln_erf, erf},
};

/* The inputs: special values, values around the edges of each function,
 * uniform values in [-100, 100], dense values in [-6, 6], and magnitudes
 * spread log-uniformly over the whole float range with both signs. */
static void fill_inputs(float *x) {
    static const float special[] = {
        0.0f,      -0.0f,   INFINITY,  -INFINITY, NAN,        -NAN,     1e-30f,  -1e-30f,
        1e-45f,    -1e-45f, FLT_MIN,   -FLT_MIN,  FLT_MAX,    -FLT_MAX, 1.0f,    -1.0f,
        88.7f,     88.72f,  88.7228f,  88.72283f, 88.72284f,  88.8f,    89.0f,   89.5f,
        100.0f,    -87.33f, -87.34f,   -87.5f,    -88.0f,     -100.0f,  -103.0f, -103.27f,
        -103.28f,  -103.9f, -104.0f,   -104.5f,   -105.0f,    0.625f,   -0.625f, 0.84375f,
        -0.84375f, 1.25f,   -1.25f,    2.857143f, -2.857143f, 3.92f,    4.0f,    6.0f,
        -6.0f,     9.0f,    9.1f,      10.0f,     44.0f,      45.0f,    0.5f,    2.0f,
        1e-8f,     3e-4f,   0.693147f, 0.34657f,  -0.34657f,
    };
    int ns = (int)(sizeof special / sizeof special[0]), i = 0;
    for (; i < ns; i++)
        x[i] = special[i];
    uint64_t seed = 12345;
    for (; i < N / 3; i++)
        x[i] = (float)(tu_uniform(&seed) * 200 - 100);
    for (; i < 2 * N / 3; i++)
        x[i] = (float)(tu_uniform(&seed) * 12 - 6);
    for (; i < N; i++) {
        double m = ldexp(1.0 + tu_uniform(&seed), (int)(tu_uniform(&seed) * 276) - 149);
        x[i] = (float)(tu_rand(&seed) & 1 ? -m : m);
    }
}

/* Map an infinity to the first power of two past FLT_MAX, so a result on
 * either side of the overflow threshold has a finite, small error. */
static double finite2(double v) {
    return isinf(v) ? copysign(0x1p128, v) : v;
}

/* The error of got = f(x) against the double reference want: relative,
 * with |want| below FLT_MIN counted as FLT_MIN so subnormal
 * results are measured in units of the subnormal spacing, and a want past
 * FLT_MAX rounded to float infinity first. Infinite for a NaN mismatch, or
 * where x is infinite or zero and got is not exactly (float)want, zero
 * signs included. */
static double err(float x, double got, double want) {
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0 : INFINITY;
    if (isinf((float)want))
        want = (float)want;
    if (isinf(x) || x == 0)
        return got == (float)want && signbit(got) == signbit(want) ? 0 : INFINITY;
    if (want == 0 && got == 0)
        return signbit(want) == signbit(got) ? 0 : INFINITY;
    double d = fabs(finite2(got) - finite2(want)), m = fabs(finite2(want));
    return d / (m < FLT_MIN ? FLT_MIN : m);
}

typedef struct {
    kiln_tensor *A;
    kiln_expr (*fn)(kiln_expr);
} body_ctx;

static kiln_expr body(kiln_ctx *ctx, const kiln_expr *idx, void *user) {
    (void)ctx;
    body_ctx *b = user;
    return b->fn(kiln_tensor_at(b->A, 1, idx));
}

/* Build C = f(A) split by `lanes` and vectorized; run on x into y. */
static int run_vec(const vfunc *f, int lanes, const float *x, float *y) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, N);
    body_ctx b = {kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A"), f->fn};
    kiln_tensor *C = kiln_compute(ctx, 1, &n, body, &b, "C");
    CHECK(C != NULL);
    if (!C) {
        kiln_ctx_free(ctx);
        return 1;
    }
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_stage *st = kiln_schedule_stage(s, C);
    kiln_expr xo, xi;
    CHECK_EQ_INT(kiln_split(st, kiln_tensor_axis(C, 0), lanes, &xo, &xi), KILN_OK);
    CHECK_EQ_INT(kiln_vectorize(st, xi), KILN_OK);
    kiln_tensor *args[2] = {b.A, C};
    char fname[64], helper[64];
    snprintf(fname, sizeof fname, "v%s%d", f->name, lanes);
    /* the vector helper is used, not a per-lane loop of libm calls */
    char *src = kiln_build_source(s, 2, args, fname, NULL);
    CHECK(src != NULL);
    /* (at `lanes`, or narrower where the target's registers are: AVX2) */
    snprintf(helper, sizeof helper, "kiln_%s_f32x", f->name);
    CHECK_CONTAINS(src, helper);
    snprintf(helper, sizeof helper, "%sf(a[i])", strcmp(f->name, "sigmoid") ? f->name : "exp");
    CHECK(src && !strstr(src, helper));
    free(src);
    kiln_ndarray *arr[2] = {kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){N}),
                            kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){N})};
    memcpy(kiln_ndarray_data(arr[0]), x, N * sizeof(float));
    int bad = tu_build_run(s, 2, args, fname, arr, NULL);
    CHECK(!bad);
    memcpy(y, kiln_ndarray_data(arr[1]), N * sizeof(float));
    kiln_ndarray_free(arr[0]);
    kiln_ndarray_free(arr[1]);
    kiln_ctx_free(ctx);
    return bad;
}

static void test_vmath(void) {
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    CHECK(x && y);
    if (!x || !y)
        return;
    fill_inputs(x);
    static const int lanes[] = {16, 8, 4};
    for (size_t fi = 0; fi < sizeof g_funcs / sizeof g_funcs[0]; fi++) {
        const vfunc *f = &g_funcs[fi];
        for (int li = 0; li < 3; li++) {
            if (run_vec(f, lanes[li], x, y))
                continue;
            double worst = 0, worst_abs = 0;
            int at = 0, nbad = 0;
            for (int i = 0; i < N; i++) {
                double want = f->ref((double)x[i]), e = err(x[i], y[i], want);
                if (isfinite(want) && isfinite(y[i]) && fabs(y[i] - want) > worst_abs)
                    worst_abs = fabs(y[i] - want);
                if (e > worst) {
                    worst = e;
                    at = i;
                }
                if (!(e <= TOL) && nbad++ < 5)
                    fprintf(stderr, "%s f32x%d: x=%.9g got %.9g want %.17g (err %.3g)\n", f->name,
                            lanes[li], (double)x[i], (double)y[i], want, e);
            }
            CHECK_EQ_INT(nbad, 0);
            printf("%-8s f32x%-2d max relative error %.3g (at x=%.9g), max absolute %.3g\n",
                   f->name, lanes[li], worst, (double)x[at], worst_abs);
        }
    }
    free(x);
    free(y);
}

TEST_MAIN(TEST(test_vmath))
