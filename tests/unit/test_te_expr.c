/* test_te_expr.c: each tensor-expression construct: builders and their
 * errors, then built and run against values computed here in C. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "te_util.h"

/* ---- builders and errors ------------------------------------------------------ */

static void test_hash_consing(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    CHECK(kiln_add(n, kiln_int(ctx, 1)) == kiln_add(n, kiln_int(ctx, 1)));
    CHECK(kiln_var(ctx, "n") != n); /* vars are unique by identity */
    CHECK(kiln_float(ctx, 1.5) == kiln_float(ctx, 1.5));
    char buf[128];
    kiln_expr_print(kiln_mul(kiln_add(n, kiln_int(ctx, 1)), kiln_int(ctx, 3)), buf, sizeof buf);
    CHECK_EQ_STR(buf, "(n + 1)*3");
    kiln_ctx_free(ctx);
}

static void test_dtype_rules(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    kiln_expr x = kiln_cast(KILN_FLOAT32, n);
    /* constants take the other side's dtype */
    kiln_expr y = kiln_add(x, kiln_int(ctx, 1));
    CHECK(y != NULL);
    char buf[128];
    kiln_expr_print(y, buf, sizeof buf);
    CHECK_EQ_STR(buf, "float32(n) + 1.0f");
    /* two non-constants of different dtypes are an error, which propagates */
    kiln_expr bad = kiln_add(x, n);
    CHECK(bad == NULL);
    CHECK_CONTAINS(kiln_last_error(), "dtype mismatch");
    CHECK_CONTAINS(kiln_last_error(), "float32 vs int64");
    CHECK(kiln_mul(bad, x) == NULL);
    CHECK(kiln_exp(n) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "float");
    CHECK(kiln_mod(x, x) != NULL); /* a float remainder is C's fmod */
    CHECK(kiln_and(n, n) == NULL);
    CHECK(kiln_not(n) == NULL);
    CHECK(kiln_select(n, x, x) == NULL);
    CHECK(kiln_lt(n, kiln_int(ctx, 3)) != NULL);
    CHECK(kiln_const(ctx, KILN_HANDLE, 1) == NULL);
    /* integer constants: uint64 past 2^63 exact, saturating past the range
       (C leaves the conversion undefined), NaN 0 */
    kiln_expr_print(kiln_const(ctx, KILN_UINT64, 18446744073709549568.0), buf, sizeof buf);
    CHECK_EQ_STR(buf, "18446744073709549568");
    kiln_expr_print(kiln_const(ctx, KILN_UINT64, 1e30), buf, sizeof buf);
    CHECK_EQ_STR(buf, "18446744073709551615");
    kiln_expr_print(kiln_const(ctx, KILN_INT64, -1e30), buf, sizeof buf);
    CHECK_EQ_STR(buf, "-9223372036854775808");
    kiln_expr_print(kiln_const(ctx, KILN_INT32, NAN), buf, sizeof buf);
    CHECK_EQ_STR(buf, "0");
    /* an int64 constant takes an integer side's dtype exactly (past 2^53) */
    kiln_expr_print(kiln_add(kiln_cast(KILN_UINT64, n), kiln_int(ctx, ((int64_t)1 << 60) + 1)), buf,
                    sizeof buf);
    CHECK_EQ_STR(buf, "uint64(n) + 1152921504606846977");
    /* and a uint64 one a float side's as its unsigned value */
    kiln_expr_print(
        kiln_add(kiln_cast(KILN_FLOAT64, n), kiln_const(ctx, KILN_UINT64, 9223372036854775808.0)),
        buf, sizeof buf);
    CHECK_CONTAINS(buf, "9.22337203685477");
    CHECK(strchr(buf, '-') == NULL);
    kiln_ctx_free(ctx);
}

static kiln_expr null_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_exp(i[0]); /* exp of an integer index: an error */
}

typedef struct {
    kiln_tensor *A;
    kiln_expr k;
    int nested;
} red_args;

static kiln_expr nested_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *r = u;
    kiln_expr idx[1] = {r->k};
    return kiln_add(kiln_sum(kiln_tensor_at(r->A, 1, idx), 1, &r->k), kiln_float(ctx, 1));
}

static void test_compute_errors(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, 4);
    CHECK(kiln_compute(ctx, 1, &n, null_body, NULL, "E") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "compute 'E'");
    kiln_expr neg = kiln_int(ctx, -3);
    CHECK(kiln_placeholder(ctx, 1, &neg, KILN_FLOAT32, "P") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "negative");
    kiln_expr fdim = kiln_float(ctx, 3);
    CHECK(kiln_placeholder(ctx, 1, &fdim, KILN_FLOAT32, "P") == NULL);
    CHECK(kiln_placeholder(ctx, 17, NULL, KILN_FLOAT32, "P") == NULL);
    kiln_tensor *A = kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A");
    kiln_expr two[2] = {n, n};
    CHECK(kiln_tensor_at(A, 2, two) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "has 1 dims but was indexed with 2");
    kiln_expr fi = kiln_float(ctx, 0);
    CHECK(kiln_tensor_at(A, 1, &fi) == NULL);
    red_args r = {A, kiln_reduce_axis(ctx, kiln_int(ctx, 0), n, "k"), 0};
    CHECK(kiln_compute(ctx, 1, &n, nested_body, &r, "R") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "whole body");
    CHECK(kiln_sum(kiln_float(ctx, 1), 1, &n) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not a reduce axis");
    CHECK(kiln_reduce_axis(ctx, kiln_int(ctx, 0), kiln_int(ctx, 0), "z") == NULL);
    kiln_ctx_free(ctx);
}

/* ---- elementwise constructs, built and run ------------------------------------ */

typedef kiln_expr (*unary_fn)(kiln_expr);
typedef struct {
    kiln_tensor *A;
    unary_fn f;
} un_args;

static kiln_expr un_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    un_args *a = u;
    return a->f(kiln_tensor_at(a->A, 1, i));
}

/* Build B[i] = f(A[i]) over float32, run on `in`, return outputs. */
static int run_unary(unary_fn f, const float *in, float *out, int n) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr N = kiln_int(ctx, n);
    un_args a = {kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "A"), f};
    kiln_tensor *B = kiln_compute(ctx, 1, &N, un_body, &a, "B");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &B);
    kiln_tensor *args[2] = {a.A, B};
    int64_t sh = n;
    kiln_ndarray *arr[2] = {kiln_ndarray_empty(KILN_FLOAT32, 1, &sh),
                            kiln_ndarray_empty(KILN_FLOAT32, 1, &sh)};
    memcpy(kiln_ndarray_data(arr[0]), in, sizeof(float) * (size_t)n);
    int r = tu_build_run(s, 2, args, "un", arr, NULL);
    memcpy(out, kiln_ndarray_data(arr[1]), sizeof(float) * (size_t)n);
    kiln_ndarray_free(arr[0]);
    kiln_ndarray_free(arr[1]);
    kiln_ctx_free(ctx);
    return r;
}

static double sigm(double x) {
    return 1 / (1 + exp(-x));
}
static double rsq(double x) {
    return 1 / sqrt(x);
}
static double rne(double x) {
    return nearbyint(x);
}

static void test_intrinsics(void) {
    float in[8] = {0.25f, 0.5f, 1.5f, 2.5f, 3.0f, 0.75f, 1.25f, 4.5f};
    float sin_[8] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, -0.2f, 3.7f};
    float unit[8] = {-0.99f, -0.5f, -0.1f, 0.0f, 0.2f, 0.5f, 0.75f, 0.9f}; /* asin, atanh */
    float ge1[8] = {1.0f, 1.25f, 1.5f, 2.0f, 3.0f, 5.0f, 10.0f, 100.0f};   /* acosh */
    struct {
        const char *name;
        unary_fn f;
        double (*ref)(double);
        const float *x;
    } cases[] = {
        {"exp", kiln_exp, exp, sin_},      {"log", kiln_log, log, in},
        {"sqrt", kiln_sqrt, sqrt, in},     {"rsqrt", kiln_rsqrt, rsq, in},
        {"tanh", kiln_tanh, tanh, sin_},   {"sigmoid", kiln_sigmoid, sigm, sin_},
        {"erf", kiln_erf, erf, sin_},      {"floor", kiln_floor, floor, sin_},
        {"ceil", kiln_ceil, ceil, sin_},   {"abs", kiln_abs, fabs, sin_},
        {"round", kiln_round, rne, sin_},  {"sin", kiln_sin, sin, sin_},
        {"cos", kiln_cos, cos, sin_},      {"tan", kiln_tan, tan, unit},
        {"asin", kiln_asin, asin, unit},   {"acos", kiln_acos, acos, unit},
        {"atan", kiln_atan, atan, sin_},   {"sinh", kiln_sinh, sinh, sin_},
        {"cosh", kiln_cosh, cosh, sin_},   {"asinh", kiln_asinh, asinh, sin_},
        {"acosh", kiln_acosh, acosh, ge1}, {"atanh", kiln_atanh, atanh, unit},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        float out[8];
        CHECK_EQ_INT(run_unary(cases[c].f, cases[c].x, out, 8), 0);
        for (int i = 0; i < 8; i++) {
            double ref = cases[c].ref(cases[c].x[i]);
            if (fabs(out[i] - ref) > 1e-6 * (1 + fabs(ref)))
                fprintf(stderr, "%s(%g) = %g, expected %g\n", cases[c].name, cases[c].x[i], out[i],
                        ref);
            CHECK_NEAR(out[i], ref, 1e-6 * (1 + fabs(ref)));
        }
    }
}

/* pow, min, max, select, comparisons, logic, floordiv/floormod, casts. */
typedef struct {
    kiln_tensor *A, *B, *I;
} mix_args;

static kiln_expr mix_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    mix_args *m = u;
    kiln_expr a = kiln_tensor_at(m->A, 1, i), b = kiln_tensor_at(m->B, 1, i);
    kiln_expr x = kiln_tensor_at(m->I, 1, i);
    kiln_expr p = kiln_pow(kiln_abs(a), kiln_float(ctx, 1.5));
    kiln_expr c = kiln_and(kiln_lt(a, b), kiln_not(kiln_eq(x, kiln_int(ctx, 0))));
    c = kiln_or(c, kiln_gt(a, kiln_float(ctx, 1.9)));
    kiln_expr sel = kiln_select(c, kiln_min(a, b), kiln_max(a, b));
    kiln_expr fd = kiln_cast(KILN_FLOAT32, kiln_floordiv(x, kiln_int(ctx, 7)));
    kiln_expr fm = kiln_cast(KILN_FLOAT32, kiln_floormod(x, kiln_int(ctx, 7)));
    kiln_expr td = kiln_cast(KILN_FLOAT32, kiln_div(x, kiln_int(ctx, 7)));
    kiln_expr tm = kiln_cast(KILN_FLOAT32, kiln_mod(x, kiln_int(ctx, 7)));
    kiln_expr s = kiln_add(kiln_add(p, sel), kiln_mul(fd, kiln_float(ctx, 100)));
    s = kiln_add(s, kiln_mul(fm, kiln_float(ctx, 1000)));
    s = kiln_add(s, kiln_mul(td, kiln_float(ctx, 10000)));
    s = kiln_add(s, kiln_mul(tm, kiln_float(ctx, 100000)));
    return kiln_select(kiln_le(a, kiln_float(ctx, -1.9)), a, s);
}

static int64_t fdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void test_mixed_ops(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr N = kiln_var(ctx, "n");
    mix_args m = {kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "A"),
                  kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "B"),
                  kiln_placeholder(ctx, 1, &N, KILN_INT32, "I")};
    kiln_tensor *C = kiln_compute(ctx, 1, &N, mix_body, &m, "C");
    CHECK(C != NULL);
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_expr o, i;
    kiln_split(kiln_schedule_stage(s, C), kiln_tensor_axis(C, 0), 8, &o, &i);
    kiln_vectorize(kiln_schedule_stage(s, C), i);
    kiln_tensor *args[4] = {m.A, m.B, m.I, C};
    int64_t n = 203;
    kiln_ndarray *arr[4];
    uint64_t seed = 11;
    for (int k = 0; k < 4; k++) {
        arr[k] = kiln_ndarray_empty(kiln_tensor_dtype(args[k]), 1, &n);
        tu_fill(arr[k], &seed);
    }
    CHECK_EQ_INT(tu_build_run(s, 4, args, "mix", arr, NULL), 0);
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
        float a = (float)tu_get(arr[0], k), b = (float)tu_get(arr[1], k);
        int32_t x = (int32_t)tu_get(arr[2], k);
        float p = powf(fabsf(a), 1.5f);
        float sel = ((a < b && x != 0) || a > 1.9f) ? (a < b ? a : b) : (a > b ? a : b);
        float sum = p + sel;
        sum = sum + (float)fdiv(x, 7) * 100.0f;
        sum = sum + (float)(x - fdiv(x, 7) * 7) * 1000.0f;
        sum = sum + (float)(x / 7) * 10000.0f;
        sum = sum + (float)(x % 7) * 100000.0f;
        float ref = a <= -1.9f ? a : sum;
        if (fabs(tu_get(arr[3], k) - ref) > 1e-5 * (1 + fabs(ref)))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    for (int k = 0; k < 4; k++)
        kiln_ndarray_free(arr[k]);
    kiln_ctx_free(ctx);
}

/* Shifts (numpy's left_shift/right_shift) and the remainders, vectorized
 * by 8: C = shl(A, B) + shr(A, B), D = mod(F, G), E = floormod(F, G). */
typedef struct {
    kiln_tensor *A, *B, *F, *G;
    int which;
} bits_args;

static kiln_expr bits_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    bits_args *b = u;
    kiln_expr a = kiln_tensor_at(b->A, 1, i), s = kiln_tensor_at(b->B, 1, i);
    kiln_expr f = kiln_tensor_at(b->F, 1, i), g = kiln_tensor_at(b->G, 1, i);
    if (b->which == 0)
        return kiln_add(kiln_shl(a, s), kiln_shr(a, s));
    return b->which == 1 ? kiln_mod(f, g) : kiln_floormod(f, g);
}

/* Element k of an integer array, exactly. */
static int64_t geti(const kiln_ndarray *a, int64_t k) {
    if (kiln_ndarray_dtype(a) == KILN_INT64)
        return ((const int64_t *)kiln_ndarray_data(a))[k];
    return (int64_t)tu_get(a, k);
}

static int64_t ref_shift(int64_t a, int64_t s, int left, int bits) {
    if (s < 0 || s >= bits)
        return left ? 0 : a < 0 ? -1 : 0;
    return left ? (int64_t)((uint64_t)a << s) : a >> s;
}

static void test_shifts_and_remainders(void) {
    static const kiln_dtype dts[] = {KILN_INT8, KILN_UINT8, KILN_INT32, KILN_INT64};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr N = kiln_int(ctx, 64);
        bits_args b = {kiln_placeholder(ctx, 1, &N, dts[d], "A"),
                       kiln_placeholder(ctx, 1, &N, dts[d], "B"),
                       kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "F"),
                       kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "G"), 0};
        kiln_tensor *out[3];
        for (int w = 0; w < 3; w++) {
            b.which = w;
            out[w] = kiln_compute(ctx, 1, &N, bits_body, &b, w == 0 ? "C" : w == 1 ? "D" : "E");
        }
        kiln_schedule *s = kiln_schedule_create(ctx, 3, out);
        for (int w = 0; w < 3; w++) {
            kiln_expr o, i;
            kiln_split(kiln_schedule_stage(s, out[w]), kiln_tensor_axis(out[w], 0), 8, &o, &i);
            kiln_vectorize(kiln_schedule_stage(s, out[w]), i);
        }
        kiln_tensor *args[7] = {b.A, b.B, b.F, b.G, out[0], out[1], out[2]};
        int64_t n = 64;
        kiln_ndarray *arr[7];
        for (int k = 0; k < 7; k++)
            arr[k] = kiln_ndarray_empty(kiln_tensor_dtype(args[k]), 1, &n);
        int bits = (int)kiln_dtype_size(dts[d]) * 8;
        for (int k = 0; k < 64; k++) {
            /* values of both signs; shifts from -3 to past the width */
            int64_t a = dts[d] == KILN_UINT8 ? (k * 37) % 256 : (k % 2 ? -1 : 1) * (k * 5 + 1);
            int64_t sh = k % (bits + 6) - 3;
            if (dts[d] == KILN_UINT8)
                sh = k % 12;
            switch (dts[d]) {
            case KILN_INT8:
                ((int8_t *)kiln_ndarray_data(arr[0]))[k] = (int8_t)a;
                ((int8_t *)kiln_ndarray_data(arr[1]))[k] = (int8_t)sh;
                break;
            case KILN_UINT8:
                ((uint8_t *)kiln_ndarray_data(arr[0]))[k] = (uint8_t)a;
                ((uint8_t *)kiln_ndarray_data(arr[1]))[k] = (uint8_t)sh;
                break;
            case KILN_INT32:
                ((int32_t *)kiln_ndarray_data(arr[0]))[k] = (int32_t)a;
                ((int32_t *)kiln_ndarray_data(arr[1]))[k] = (int32_t)sh;
                break;
            default:
                ((int64_t *)kiln_ndarray_data(arr[0]))[k] = a;
                ((int64_t *)kiln_ndarray_data(arr[1]))[k] = sh;
            }
            ((float *)kiln_ndarray_data(arr[2]))[k] = (float)(k - 32) * 0.75f;
            ((float *)kiln_ndarray_data(arr[3]))[k] = k % 3 == 0 ? 2.5f : k % 3 == 1 ? -1.75f : 4;
        }
        CHECK_EQ_INT(tu_build_run(s, 7, args, "bits", arr, NULL), 0);
        int bad = 0;
        for (int k = 0; k < 64; k++) {
            int64_t a = geti(arr[0], k), sh = geti(arr[1], k);
            int64_t l = ref_shift(a, sh, 1, bits), r = ref_shift(a, sh, 0, bits);
            /* the sum wraps to the dtype, as the left shift does */
            int64_t want = (int64_t)((uint64_t)l + (uint64_t)r);
            want = dts[d] == KILN_INT8    ? (int8_t)want
                   : dts[d] == KILN_UINT8 ? (uint8_t)want
                   : dts[d] == KILN_INT32 ? (int32_t)want
                                          : want;
            float f = ((float *)kiln_ndarray_data(arr[2]))[k];
            float g = ((float *)kiln_ndarray_data(arr[3]))[k];
            float m = fmodf(f, g), fm = m != 0 && (m < 0) != (g < 0) ? m + g : m;
            if (geti(arr[4], k) != want || tu_get(arr[5], k) != m ||
                (fm != 0 && tu_get(arr[6], k) != fm)) {
                if (bad++ < 3)
                    fprintf(stderr,
                            "%s k=%d: shl+shr(%lld, %lld) = %g (want %lld); "
                            "mod(%g, %g) = %g, %g (want %g, %g)\n",
                            kiln_dtype_name(dts[d]), k, (long long)a, (long long)sh,
                            tu_get(arr[4], k), (long long)want, f, g, tu_get(arr[5], k),
                            tu_get(arr[6], k), m, fm);
            }
        }
        CHECK_EQ_INT(bad, 0);
        for (int k = 0; k < 7; k++)
            kiln_ndarray_free(arr[k]);
        kiln_ctx_free(ctx);
    }
    /* shifts need integers; float and bool are refused */
    kiln_ctx *ctx = kiln_ctx_new();
    CHECK(kiln_shl(kiln_float(ctx, 1), kiln_float(ctx, 2)) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "shl needs integer operands, not float32");
    CHECK(kiln_shr(kiln_const(ctx, KILN_BOOL, 1), kiln_const(ctx, KILN_BOOL, 1)) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "shr needs integer operands, not bool");
    kiln_ctx_free(ctx);
}

/* Casts through every storage dtype. */
typedef struct {
    kiln_tensor *A;
    kiln_dtype via;
} cast_args;

static kiln_expr cast_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    cast_args *c = u;
    return kiln_cast(KILN_FLOAT32, kiln_cast(c->via, kiln_tensor_at(c->A, 1, i)));
}

static kiln_expr store_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    cast_args *c = u;
    return kiln_cast(c->via, kiln_tensor_at(c->A, 1, i));
}

static void test_casts(void) {
    kiln_dtype dts[] = {KILN_FLOAT16, KILN_BFLOAT16, KILN_INT8, KILN_UINT8,
                        KILN_INT32,   KILN_INT64,    KILN_BOOL, KILN_FLOAT64};
    float in[6] = {1.5f, -2.75f, 100.5f, 0.0f, 3.0f, -0.5f};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr N = kiln_int(ctx, 6);
        cast_args c = {kiln_placeholder(ctx, 1, &N, KILN_FLOAT32, "A"), dts[d]};
        kiln_tensor *B = kiln_compute(ctx, 1, &N, cast_body, &c, "B");
        /* also a tensor stored in the dtype itself */
        kiln_tensor *S = kiln_compute(ctx, 1, &N, store_body, &c, "S");
        kiln_tensor *outs[2] = {B, S};
        kiln_schedule *s = kiln_schedule_create(ctx, 2, outs);
        kiln_tensor *args[3] = {c.A, B, S};
        int64_t sh = 6;
        kiln_ndarray *arr[3] = {kiln_ndarray_empty(KILN_FLOAT32, 1, &sh),
                                kiln_ndarray_empty(KILN_FLOAT32, 1, &sh),
                                kiln_ndarray_empty(dts[d], 1, &sh)};
        memcpy(kiln_ndarray_data(arr[0]), in, sizeof in);
        CHECK_EQ_INT(tu_build_run(s, 3, args, "cast", arr, NULL), 0);
        const float *out = kiln_ndarray_data(arr[1]);
        for (int i = 0; i < 6; i++) {
            double ref;
            switch (dts[d]) {
            case KILN_INT8:
            case KILN_INT32:
            case KILN_INT64: ref = trunc(in[i]); break;
            case KILN_UINT8: ref = in[i] < 0 ? (double)(uint8_t)(int)in[i] : trunc(in[i]); break;
            case KILN_BOOL: ref = in[i] != 0; break;
            default: ref = in[i]; /* exactly representable in f16/bf16/f64 */
            }
            if (out[i] != ref)
                fprintf(stderr, "cast via %s of %g gave %g, expected %g\n", kiln_dtype_name(dts[d]),
                        in[i], out[i], ref);
            CHECK(out[i] == ref);
        }
        for (int k = 0; k < 3; k++)
            kiln_ndarray_free(arr[k]);
        kiln_ctx_free(ctx);
    }
}

/* ---- reductions ---------------------------------------------------------------- */

typedef struct {
    kiln_tensor *A;
    kiln_expr k;
    int which;
} rd_args;

static kiln_expr rd_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    rd_args *r = u;
    kiln_expr idx[2] = {i[0], r->k};
    kiln_expr x = kiln_tensor_at(r->A, 2, idx);
    switch (r->which) {
    case 0: return kiln_sum(x, 1, &r->k);
    case 1: return kiln_max_reduce(x, 1, &r->k);
    case 2: return kiln_min_reduce(x, 1, &r->k);
    default: return kiln_prod(x, 1, &r->k);
    }
}

static void test_reductions(void) {
    for (int which = 0; which < 4; which++) {
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr sh[2] = {kiln_int(ctx, 5), kiln_int(ctx, 9)};
        rd_args r = {kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "A"),
                     kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k"), which};
        kiln_tensor *B = kiln_compute(ctx, 1, sh, rd_body, &r, "B");
        CHECK_EQ_INT(kiln_tensor_num_reduce_axes(B), 1);
        kiln_schedule *s = kiln_schedule_create(ctx, 1, &B);
        kiln_tensor *args[2] = {r.A, B};
        int64_t ash[2] = {5, 9}, bsh = 5;
        kiln_ndarray *arr[2] = {kiln_ndarray_empty(KILN_FLOAT32, 2, ash),
                                kiln_ndarray_empty(KILN_FLOAT32, 1, &bsh)};
        uint64_t seed = 5 + (uint64_t)which;
        tu_fill(arr[0], &seed);
        CHECK_EQ_INT(tu_build_run(s, 2, args, "rd", arr, NULL), 0);
        for (int i = 0; i < 5; i++) {
            double acc = which == 0 ? 0 : which == 1 ? -INFINITY : which == 2 ? INFINITY : 1;
            for (int k = 0; k < 9; k++) {
                float x = (float)tu_get(arr[0], i * 9 + k);
                acc = which == 0   ? (float)(acc + x)
                      : which == 1 ? fmax(acc, x)
                      : which == 2 ? fmin(acc, x)
                                   : (float)(acc * x);
            }
            CHECK_NEAR(tu_get(arr[1], i), acc, 1e-5 * (1 + fabs(acc)));
        }
        kiln_ndarray_free(arr[0]);
        kiln_ndarray_free(arr[1]);
        kiln_ctx_free(ctx);
    }
}

/* A conv2d-style reduction over three axes with an offset index (h + kh). */
typedef struct {
    kiln_tensor *D, *W;
    kiln_expr ci, kh, kw;
} conv_args;

static kiln_expr conv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    conv_args *c = u;
    kiln_expr di[4] = {i[0], c->ci, kiln_add(i[2], c->kh), kiln_add(i[3], c->kw)};
    kiln_expr wi[4] = {i[1], c->ci, c->kh, c->kw};
    kiln_expr axes[3] = {c->ci, c->kh, c->kw};
    return kiln_sum(kiln_mul(kiln_tensor_at(c->D, 4, di), kiln_tensor_at(c->W, 4, wi)), 3, axes);
}

static void test_conv_reduction(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr z = kiln_int(ctx, 0);
    kiln_expr ds[4] = {kiln_int(ctx, 1), kiln_int(ctx, 3), kiln_int(ctx, 7), kiln_int(ctx, 7)};
    kiln_expr ws[4] = {kiln_int(ctx, 2), kiln_int(ctx, 3), kiln_int(ctx, 3), kiln_int(ctx, 3)};
    kiln_expr os[4] = {kiln_int(ctx, 1), kiln_int(ctx, 2), kiln_int(ctx, 5), kiln_int(ctx, 5)};
    conv_args c = {kiln_placeholder(ctx, 4, ds, KILN_FLOAT32, "data"),
                   kiln_placeholder(ctx, 4, ws, KILN_FLOAT32, "w"),
                   kiln_reduce_axis(ctx, z, ds[1], "ci"), kiln_reduce_axis(ctx, z, ws[2], "kh"),
                   kiln_reduce_axis(ctx, z, ws[3], "kw")};
    kiln_tensor *O = kiln_compute(ctx, 4, os, conv_body, &c, "conv");
    /* op.input_tensors: data then weight, each once; none for a placeholder */
    kiln_tensor *ins[1];
    CHECK_EQ_INT(kiln_tensor_inputs(O, ins, 1), 2);
    CHECK(ins[0] == c.D);
    kiln_tensor *ins2[4];
    CHECK_EQ_INT(kiln_tensor_inputs(O, ins2, 4), 2);
    CHECK(ins2[0] == c.D && ins2[1] == c.W);
    CHECK_EQ_INT(kiln_tensor_inputs(c.D, ins2, 4), 0);
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &O);
    kiln_tensor *args[3] = {c.D, c.W, O};
    int64_t dsh[4] = {1, 3, 7, 7}, wsh[4] = {2, 3, 3, 3}, osh[4] = {1, 2, 5, 5};
    kiln_ndarray *arr[3] = {kiln_ndarray_empty(KILN_FLOAT32, 4, dsh),
                            kiln_ndarray_empty(KILN_FLOAT32, 4, wsh),
                            kiln_ndarray_empty(KILN_FLOAT32, 4, osh)};
    uint64_t seed = 99;
    tu_fill(arr[0], &seed);
    tu_fill(arr[1], &seed);
    CHECK_EQ_INT(tu_build_run(s, 3, args, "conv", arr, NULL), 0);
    const float *d = kiln_ndarray_data(arr[0]), *w = kiln_ndarray_data(arr[1]);
    const float *o = kiln_ndarray_data(arr[2]);
    int bad = 0;
    for (int co = 0; co < 2; co++)
        for (int h = 0; h < 5; h++)
            for (int x = 0; x < 5; x++) {
                float acc = 0;
                for (int ci = 0; ci < 3; ci++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++)
                            acc += d[(ci * 7 + h + kh) * 7 + x + kw] *
                                   w[((co * 3 + ci) * 3 + kh) * 3 + kw];
                bad += fabsf(o[(co * 5 + h) * 5 + x] - acc) > 1e-5f;
            }
    CHECK_EQ_INT(bad, 0);
    for (int k = 0; k < 3; k++)
        kiln_ndarray_free(arr[k]);
    kiln_ctx_free(ctx);
}

TEST_MAIN(TEST(test_hash_consing), TEST(test_dtype_rules), TEST(test_compute_errors),
          TEST(test_intrinsics), TEST(test_mixed_ops), TEST(test_shifts_and_remainders),
          TEST(test_casts), TEST(test_reductions), TEST(test_conv_reduction))
