/* test_ops_qnn.c: TFLite's integer requantization in kiln against TFLite's
 * own definitions, written out here in C as TFLite's reference kernels
 * state them (QuantizeMultiplier, SaturatingRoundingDoublingHighMul,
 * RoundingDivideByPOT, MultiplyByQuantizedMultiplier, AffineQuantize):
 *   - fixed_point_multiply (rounding TFLITE and UPWARD) on values that land
 *     on rounding ties and on random ones, under the default and the naive
 *     schedule;
 *   - qnn.requantize with rounding="TFLITE", per tensor and per channel,
 *     as its reference compute (QnnCanonicalize disabled) and as
 *     QnnCanonicalize lowers it (constants m0 and shift computed in C);
 *   - qnn.quantize with rounding="TFLITE": half away from zero;
 *   - the relations' errors for a bad rounding. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "op_util.h"

/* ---- TFLite's definitions ------------------------------------------------------- */

static void ref_quantize_multiplier(double m, int32_t *m0, int *shift) {
    if (m == 0.) {
        *m0 = 0;
        *shift = 0;
        return;
    }
    double q = frexp(m, shift);
    int64_t fixed = (int64_t)round(q * (double)(1LL << 31));
    if (fixed == (1LL << 31)) {
        fixed /= 2;
        ++*shift;
    }
    if (*shift < -31) {
        *shift = 0;
        fixed = 0;
    }
    *m0 = (int32_t)fixed;
}

static int32_t ref_srdhm(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN)
        return INT32_MAX;
    int64_t ab = (int64_t)a * b;
    int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / (1LL << 31));
}

static int32_t ref_rdbpot(int32_t x, int e) {
    int32_t mask = (int32_t)((1LL << e) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

static int32_t ref_mbqm(int32_t x, int32_t m0, int shift) {
    int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return ref_rdbpot(ref_srdhm((int32_t)((int64_t)x * (1LL << left)), m0), right);
}

/* TVM's fixed_point_multiply: one rounding, half up */
static int32_t ref_upward(int32_t x, int32_t m0, int shift) {
    int total = 31 - shift;
    int64_t v = ((int64_t)x * m0 + (1LL << (total - 1))) >> total;
    return (int32_t)v;
}

static uint64_t g_seed = 12345;
static uint32_t rnd(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_seed >> 32);
}

/* ---- running a graph -------------------------------------------------------------- */

static kiln_ndarray *run(kiln_graph *g, int naive, const char *disabled, int nin,
                         const kiln_ndarray *const *xs) {
    kiln_build_options *o = kiln_build_options_new();
    if (naive)
        CHECK_EQ_INT(kiln_build_options_set(o, "schedule", "naive"), KILN_OK);
    if (disabled)
        CHECK_EQ_INT(kiln_build_options_set(o, "disabled-pass", disabled), KILN_OK);
    kiln_ndarray *r = gu_compile_run(g, o, nin, xs, NULL, NULL, 0);
    kiln_build_options_free(o);
    CHECK(r != NULL);
    return r;
}

static kiln_ndarray *i32_array(int64_t n, const int32_t *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT32, 1, &n);
    memcpy(kiln_ndarray_data(a), v, (size_t)n * sizeof *v);
    return a;
}

static kiln_ndarray *f32_array(int ndim, const int64_t *dims, const float *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, ndim, dims);
    memcpy(kiln_ndarray_data(a), v, (size_t)kiln_ndarray_numel(a) * sizeof *v);
    return a;
}

/* ---- fixed_point_multiply ------------------------------------------------------------ */

#define N 4096

static void check_fixed_point(const char *rounding) {
    static int32_t x[N], m[N], s[N], want[N];
    int upward = !strcmp(rounding, "UPWARD");
    for (int i = 0; i < N; i++) {
        m[i] = (int32_t)((1u << 30) + (rnd() >> 2)); /* a fraction in [0.5, 1) */
        s[i] = (int)(rnd() % 40) - 31;               /* -31 .. 8 */
        if (upward && s[i] > 0)
            s[i] = 0;
        int32_t lim = s[i] > 0 ? INT32_MAX >> s[i] : INT32_MAX; /* no left-shift overflow */
        x[i] = (int32_t)((int64_t)rnd() % lim) * (rnd() & 1 ? 1 : -1);
        if (i % 4 == 0) { /* exact ties: m0 = 2^30 (one half), x odd, shift -k */
            m[i] = 1 << 30;
            s[i] = -(int)(rnd() % 8);
            x[i] = (int32_t)(((rnd() % 2000) << (-s[i])) | (1u << (-s[i]))) * (rnd() & 1 ? 1 : -1);
        }
        if (i == 1) { /* TFLite's saturating case */
            x[i] = INT32_MIN;
            m[i] = INT32_MIN;
            s[i] = 0;
        }
        want[i] = upward ? ref_upward(x[i], m[i], s[i]) : ref_mbqm(x[i], m[i], s[i]);
    }
    if (upward) { /* INT32_MIN * INT32_MIN overflows TVM's int32 result: not compared */
        m[1] = 1 << 30;
        want[1] = ref_upward(x[1], m[1], s[1]);
    }
    for (int naive = 0; naive < 2; naive++) {
        kiln_graph *g = kiln_graph_new();
        int64_t n = N;
        int in[3] = {kiln_graph_var(g, "x", KILN_INT32, 1, &n, NULL),
                     kiln_graph_var(g, "m", KILN_INT32, 1, &n, NULL),
                     kiln_graph_var(g, "s", KILN_INT32, 1, &n, NULL)};
        char attrs[64];
        snprintf(attrs, sizeof attrs, "rounding=\"%s\"", rounding);
        int y = kiln_graph_call(g, "fixed_point_multiply", 3, in, attrs, "y");
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
        kiln_ndarray *xs[3] = {i32_array(N, x), i32_array(N, m), i32_array(N, s)};
        kiln_ndarray *r = run(g, naive, NULL, 3, (const kiln_ndarray *const *)xs);
        kiln_graph_free(g);
        int bad = 0;
        for (int i = 0; r && i < N; i++)
            if (((int32_t *)kiln_ndarray_data(r))[i] != want[i] && bad++ < 5)
                fprintf(stderr, "%s x=%d m=%d s=%d: %d, TFLite %d\n", rounding, x[i], m[i], s[i],
                        ((int32_t *)kiln_ndarray_data(r))[i], want[i]);
        CHECK_EQ_INT(bad, 0);
        for (int k = 0; k < 3; k++)
            kiln_ndarray_free(xs[k]);
        kiln_ndarray_free(r);
    }
}

static void test_fixed_point_multiply(void) {
    check_fixed_point("TFLITE");
    check_fixed_point("UPWARD");
}

/* ---- qnn.requantize rounding TFLITE --------------------------------------------------- */

#define C 7
#define W 600

/* requantize of q [C, W] (int32) with per-channel (pc) or per-tensor input
 * scales s, zero point zp, output scale s2 and zero point zp2 to out. */
static void check_requantize(int pc, kiln_dtype out) {
    static int32_t q[C * W];
    static float s[C];
    float s2 = 0.0478f;
    int32_t zp = pc ? 0 : 3, zp2 = out == KILN_UINT8 ? 131 : -5;
    /* scales as a converter makes them (products of two float32 scales),
       powers of two (multipliers of exactly 2^k), and ones whose multiplier
       rounds to 2^31 in QuantizeMultiplier */
    const float special[C] = {1e-3f * 0.0478f,   0.0478f, 0.0478f * 0.5f, 0.0478f * 0.99999999f,
                              0.0239f * 0.0173f, 1.7e-5f, 0.0478f * 3.f};
    for (int c = 0; c < C; c++)
        s[c] = special[c];
    for (int i = 0; i < C * W; i++)
        q[i] = (int32_t)(rnd() % 200001) - 100000;
    int64_t qd[2] = {C, W}, sd[1] = {pc ? C : 1};
    for (int canon = 0; canon < 2; canon++) {
        kiln_graph *g = kiln_graph_new();
        int in[5];
        in[0] = kiln_graph_var(g, "q", KILN_INT32, 2, qd, NULL);
        kiln_ndarray *sa = f32_array(1, sd, s), *s2a = f32_array(0, NULL, &s2);
        kiln_ndarray *za = i32_array(1, &zp);
        kiln_ndarray *z2 = kiln_ndarray_empty(out, 0, NULL);
        if (out == KILN_UINT8)
            *(uint8_t *)kiln_ndarray_data(z2) = (uint8_t)zp2;
        else
            *(int8_t *)kiln_ndarray_data(z2) = (int8_t)zp2;
        in[1] = kiln_graph_const(g, "s", sa);
        in[2] = kiln_graph_const(g, "zp", za);
        in[3] = kiln_graph_const(g, "s2", s2a);
        in[4] = kiln_graph_const(g, "zp2", z2);
        char attrs[128];
        snprintf(attrs, sizeof attrs, "axis=0, rounding=\"TFLITE\", out_dtype=\"%s\"",
                 kiln_dtype_name(out));
        int y = kiln_graph_call(g, "qnn.requantize", 5, in, attrs, "y");
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
        if (canon) { /* the lowered graph holds no QNN op */
            kiln_graph *l = kiln_graph_run_pass(g, "QnnCanonicalize", NULL);
            CHECK(l != NULL);
            char *counts = l ? kiln_graph_op_counts(l) : NULL;
            CHECK(counts && !strstr(counts, "qnn.") && strstr(counts, "fixed_point_multiply"));
            free(counts);
            kiln_graph_free(l);
        }
        kiln_ndarray *xa = kiln_ndarray_empty(KILN_INT32, 2, qd);
        memcpy(kiln_ndarray_data(xa), q, sizeof q);
        kiln_ndarray *r =
            run(g, 0, canon ? NULL : "QnnCanonicalize", 1, (const kiln_ndarray *const *)&xa);
        kiln_graph_free(g);
        int bad = 0;
        for (int i = 0; r && i < C * W; i++) {
            int c = i / W;
            int32_t m0;
            int sh;
            ref_quantize_multiplier((double)s[pc ? c : 0] / (double)s2, &m0, &sh);
            int32_t v = ref_mbqm(q[i] - zp, m0, sh) + zp2;
            int32_t lo = out == KILN_UINT8 ? 0 : -128, hi = out == KILN_UINT8 ? 255 : 127;
            v = v < lo ? lo : v > hi ? hi : v;
            int32_t got = out == KILN_UINT8 ? ((uint8_t *)kiln_ndarray_data(r))[i]
                                            : ((int8_t *)kiln_ndarray_data(r))[i];
            if (got != v && bad++ < 5)
                fprintf(stderr, "requantize%s pc=%d q=%d s=%g: %d, TFLite %d\n",
                        canon ? " (canonicalized)" : "", pc, q[i], s[pc ? c : 0], got, v);
        }
        CHECK_EQ_INT(bad, 0);
        kiln_ndarray_free(r);
        kiln_ndarray_free(xa);
        kiln_ndarray_free(sa);
        kiln_ndarray_free(s2a);
        kiln_ndarray_free(za);
        kiln_ndarray_free(z2);
    }
}

static void test_requantize_tflite(void) {
    check_requantize(1, KILN_INT8);
    check_requantize(0, KILN_UINT8);
}

/* ---- qnn.quantize rounding TFLITE: half away from zero ------------------------------- */

static void test_quantize_tflite(void) {
    /* x / 0.25 is k + 0.5 exactly: TFLite rounds away from zero, TONEAREST to even */
    static const float x[8] = {0.125f, -0.125f, 0.375f, -0.375f, 0.625f, -0.625f, 31.875f, 0.1f};
    static const int away[8] = {1, -1, 2, -2, 3, -3, 127, 0};
    static const int even[8] = {0, 0, 2, -2, 2, -2, 127, 0};
    for (int tfl = 0; tfl < 2; tfl++) {
        kiln_graph *g = kiln_graph_new();
        int64_t n = 8;
        float sc = 0.25f;
        kiln_ndarray *sa = f32_array(0, NULL, &sc), *za = kiln_ndarray_empty(KILN_INT8, 0, NULL);
        *(int8_t *)kiln_ndarray_data(za) = 0;
        int in[3] = {kiln_graph_var(g, "x", KILN_FLOAT32, 1, &n, NULL),
                     kiln_graph_const(g, "s", sa), kiln_graph_const(g, "zp", za)};
        int y = kiln_graph_call(g, "qnn.quantize", 3, in,
                                tfl ? "rounding=\"TFLITE\"" : "rounding=\"TONEAREST\"", "y");
        CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
        kiln_ndarray *xa = f32_array(1, &n, x);
        kiln_ndarray *r = run(g, 0, NULL, 1, (const kiln_ndarray *const *)&xa);
        kiln_graph_free(g);
        for (int i = 0; r && i < 8; i++)
            CHECK_EQ_INT(((int8_t *)kiln_ndarray_data(r))[i], tfl ? away[i] : even[i]);
        kiln_ndarray_free(r);
        kiln_ndarray_free(xa);
        kiln_ndarray_free(sa);
        kiln_ndarray_free(za);
    }
}

static void test_relation_errors(void) {
    ot_expect_error("qnn.quantize", "rounding=\"UP\"", 3,
                    T(F32(4), SCALAR(KILN_FLOAT32), SCALAR(KILN_INT8)),
                    "rounding 'UP' is not TONEAREST (half to even) or TFLITE");
    ot_expect_error("qnn.requantize", "rounding=\"x\"", 5,
                    T(I32(4), SCALAR(KILN_FLOAT32), SCALAR(KILN_INT32), SCALAR(KILN_FLOAT32),
                      SCALAR(KILN_INT8)),
                    "rounding 'x' is not TONEAREST");
    ot_expect_error("fixed_point_multiply", NULL, 3, T(I32(4), OT_TYPE(KILN_INT8, 4), I32(4)),
                    "input 1 is int8, not int32");
    ot_expect_error("fixed_point_multiply", "rounding=\"TONEAREST\"", 3,
                    T(I32(4), I32(4), SCALAR(KILN_INT32)),
                    "rounding 'TONEAREST' is not TFLITE (TFLite's double rounding) or UPWARD");
    ot_expect_error("fixed_point_multiply", NULL, 3, T(I32(4), I32(3), SCALAR(KILN_INT32)),
                    "broadcast");
}

TEST_MAIN(TEST(test_fixed_point_multiply), TEST(test_requantize_tflite), TEST(test_quantize_tflite),
          TEST(test_relation_errors))
