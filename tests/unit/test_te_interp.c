/* test_te_interp.c: the reference interpreter of tensor expressions
 * (src/te/interp.h), which constant folding runs and kernel tests compare
 * against. Hand-computed cases: every dtype's own arithmetic (float32 in
 * float, float16/bfloat16 rounding, integer wrapping), the one rule of
 * integer division (base/intdiv.h), casts, selects and && that skip the
 * lane they do not pick, NaN in min/max, reductions (sum, max, min, prod,
 * several axes, a domain that depends on a data axis or on an outer reduce
 * axis, few and many
 * elements, argmax from two stages), memoized stages, and errors. Then
 * every row of the built-in op table with a compute and a sample workload
 * (a listed one, or a default one for elementwise ops) is compiled under
 * the naive schedule and run, and must agree with the interpreter; so
 * must every cast between two dtypes, naive and vectorized. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/intdiv.h"
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "ops/ops.h"
#include "te/interp.h"
#include "te_util.h"

/* ---- helpers ------------------------------------------------------------------ */

/* Element i of any array as a double (float16/bfloat16 decoded). */
static double at(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT16: return te_half_to_float(((const uint16_t *)d)[i]);
    case KILN_BFLOAT16: return te_bf16_to_float(((const uint16_t *)d)[i]);
    default: return tu_get(a, i);
    }
}

static int64_t at_i64(const kiln_ndarray *a, int64_t i) {
    return ((const int64_t *)kiln_ndarray_data(a))[i];
}

static kiln_ndarray *make(kiln_dtype dt, int nd, const int64_t *shape, const double *v) {
    kiln_ndarray *a = kiln_ndarray_empty(dt, nd, shape);
    void *d = kiln_ndarray_data(a);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
        switch (dt) {
        case KILN_FLOAT32: ((float *)d)[i] = (float)v[i]; break;
        case KILN_FLOAT64: ((double *)d)[i] = v[i]; break;
        case KILN_FLOAT16: ((uint16_t *)d)[i] = te_float_to_half((float)v[i]); break;
        case KILN_BFLOAT16: ((uint16_t *)d)[i] = te_float_to_bf16((float)v[i]); break;
        case KILN_INT8: ((int8_t *)d)[i] = (int8_t)v[i]; break;
        case KILN_UINT8:
        case KILN_BOOL: ((uint8_t *)d)[i] = (uint8_t)v[i]; break;
        case KILN_INT32: ((int32_t *)d)[i] = (int32_t)v[i]; break;
        case KILN_INT64: ((int64_t *)d)[i] = (int64_t)v[i]; break;
        case KILN_INT16: ((int16_t *)d)[i] = (int16_t)v[i]; break;
        case KILN_UINT16: ((uint16_t *)d)[i] = (uint16_t)v[i]; break;
        case KILN_UINT32: ((uint32_t *)d)[i] = (uint32_t)v[i]; break;
        case KILN_UINT64: ((uint64_t *)d)[i] = (uint64_t)v[i]; break;
        default: break;
        }
    }
    return a;
}

/* Element i of a uint64 array. */
static uint64_t at_u64(const kiln_ndarray *a, int64_t i) {
    return ((const uint64_t *)kiln_ndarray_data(a))[i];
}

static kiln_ndarray *make_i64(int64_t n, const int64_t *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, 1, &n);
    memcpy(kiln_ndarray_data(a), v, sizeof(int64_t) * (size_t)n);
    return a;
}

/* te_eval of one output; NULL (printed) on an error. */
static kiln_ndarray *eval1(kiln_tensor *out, int nin, kiln_tensor **ph, kiln_ndarray **vals) {
    kiln_ndarray *r = NULL;
    if (te_eval(1, &out, nin, ph, (const kiln_ndarray *const *)vals, NULL, &r) != KILN_OK)
        fprintf(stderr, "te_eval: %s\n", kiln_last_error());
    return r;
}

static kiln_tensor *ph1(kiln_ctx *ctx, kiln_dtype dt, int64_t n, const char *name) {
    kiln_expr s = kiln_int(ctx, n);
    return kiln_placeholder(ctx, 1, &s, dt, name);
}

/* Bodies over one axis i reading placeholders (user: kiln_tensor *[2]). */
typedef kiln_expr (*bin_fn)(kiln_expr, kiln_expr);
typedef struct {
    kiln_tensor *a, *b;
    bin_fn f;
    kiln_dtype cast;
} body_args;

static kiln_expr body_binary(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    body_args *a = u;
    return a->f(kiln_tensor_at(a->a, 1, i), kiln_tensor_at(a->b, 1, i));
}

static kiln_expr body_cast(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    body_args *a = u;
    return kiln_cast(a->cast, kiln_tensor_at(a->a, 1, i));
}

/* A binary op f elementwise on two 1-D arrays of dtype dt. */
static kiln_ndarray *run_binary(kiln_dtype dt, bin_fn f, int64_t n, const double *x,
                                const double *y) {
    kiln_ctx *ctx = kiln_ctx_new();
    body_args a = {ph1(ctx, dt, n, "A"), ph1(ctx, dt, n, "B"), f, dt};
    kiln_expr s = kiln_int(ctx, n);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_binary, &a, "C");
    kiln_ndarray *v[2] = {make(dt, 1, &n, x), make(dt, 1, &n, y)};
    kiln_tensor *ph[2] = {a.a, a.b};
    kiln_ndarray *r = c ? eval1(c, 2, ph, v) : NULL;
    kiln_ndarray_free(v[0]);
    kiln_ndarray_free(v[1]);
    kiln_ctx_free(ctx);
    return r;
}

static kiln_ndarray *run_cast(kiln_dtype from, kiln_dtype to, int64_t n, const double *x) {
    kiln_ctx *ctx = kiln_ctx_new();
    body_args a = {ph1(ctx, from, n, "A"), NULL, NULL, to};
    kiln_expr s = kiln_int(ctx, n);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_cast, &a, "C");
    kiln_ndarray *v = make(from, 1, &n, x);
    kiln_ndarray *r = c ? eval1(c, 1, &a.a, &v) : NULL;
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
    return r;
}

/* ---- the division rule ----------------------------------------------------------- */

static void test_division_rule(void) {
    /* the helpers themselves */
    CHECK_EQ_INT(kiln_idiv_trunc_i64(7, 0), 0);
    CHECK_EQ_INT(kiln_imod_trunc_i64(7, 0), 0);
    CHECK_EQ_INT(kiln_idiv_floor_i64(-7, 0), 0);
    CHECK_EQ_INT(kiln_imod_floor_i64(-7, 0), 0);
    CHECK(kiln_idiv_trunc_i64(INT64_MIN, -1) == INT64_MIN);
    CHECK_EQ_INT(kiln_imod_trunc_i64(INT64_MIN, -1), 0);
    CHECK(kiln_idiv_floor_i64(INT64_MIN, -1) == INT64_MIN);
    CHECK_EQ_INT(kiln_imod_floor_i64(INT64_MIN, -1), 0);
    CHECK_EQ_INT(kiln_idiv_trunc_i64(-7, 2), -3);
    CHECK_EQ_INT(kiln_imod_trunc_i64(-7, 2), -1);
    CHECK_EQ_INT(kiln_idiv_floor_i64(-7, 2), -4);
    CHECK_EQ_INT(kiln_imod_floor_i64(-7, 2), 1);
    CHECK_EQ_INT(kiln_imod_floor_i64(7, -2), -1);
    CHECK_EQ_INT(kiln_idiv_trunc_i64(5, -1), -5);
    CHECK(kiln_idiv_trunc_i32(INT32_MIN, -1) == INT32_MIN);
    CHECK_EQ_INT(kiln_imod_trunc_i32(INT32_MIN, -1), 0);
    CHECK_EQ_INT(kiln_idiv_floor_i32(-7, 2), -4);
    CHECK_EQ_INT(kiln_imod_floor_i32(-7, 2), 1);
    CHECK_EQ_INT(kiln_idiv_trunc_i32(9, 0), 0);

    /* the same rule in the interpreter, every integer dtype */
    const double x[6] = {7, -7, -7, 7, 5, 0};
    const double y[6] = {0, 2, -2, -2, 3, 0};
    static const struct {
        bin_fn f;
        double want[6];
    } cases[] = {
        {kiln_div, {0, -3, 3, -3, 1, 0}},
        {kiln_mod, {0, -1, -1, 1, 2, 0}},
        {kiln_floordiv, {0, -4, 3, -4, 1, 0}},
        {kiln_floormod, {0, 1, -1, -1, 2, 0}},
    };
    static const kiln_dtype dts[] = {KILN_INT8, KILN_INT32, KILN_INT64};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            kiln_ndarray *r = run_binary(dts[d], cases[k].f, 6, x, y);
            CHECK(r != NULL);
            for (int i = 0; r && i < 6; i++)
                CHECK_NEAR(at(r, i), cases[k].want[i], 0);
            kiln_ndarray_free(r);
        }
    /* INT_MIN / -1 wraps in each width; INT_MIN % -1 is 0 */
    double mn[3] = {-128, -2147483648.0, 0}, m1[3] = {-1, -1, -1};
    kiln_ndarray *r = run_binary(KILN_INT8, kiln_div, 1, mn, m1);
    CHECK(r && at(r, 0) == -128);
    kiln_ndarray_free(r);
    r = run_binary(KILN_INT32, kiln_div, 1, mn + 1, m1);
    CHECK(r && at(r, 0) == -2147483648.0);
    kiln_ndarray_free(r);
    r = run_binary(KILN_INT32, kiln_mod, 1, mn + 1, m1);
    CHECK(r && at(r, 0) == 0);
    kiln_ndarray_free(r);
    /* int64 exactly: INT64_MIN / -1 and / 0 */
    kiln_ctx *ctx = kiln_ctx_new();
    body_args a = {ph1(ctx, KILN_INT64, 3, "A"), ph1(ctx, KILN_INT64, 3, "B"), kiln_div, 0};
    kiln_expr s = kiln_int(ctx, 3);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_binary, &a, "C");
    const int64_t xa[3] = {INT64_MIN, INT64_MIN, INT64_MAX}, ya[3] = {-1, 0, -1};
    kiln_ndarray *v[2] = {make_i64(3, xa), make_i64(3, ya)};
    kiln_tensor *ph[2] = {a.a, a.b};
    r = eval1(c, 2, ph, v);
    CHECK(r && at_i64(r, 0) == INT64_MIN && at_i64(r, 1) == 0 && at_i64(r, 2) == -INT64_MAX);
    kiln_ndarray_free(r);
    a.f = kiln_mod;
    c = kiln_compute(ctx, 1, &s, body_binary, &a, "D");
    r = eval1(c, 2, ph, v);
    CHECK(r && at_i64(r, 0) == 0 && at_i64(r, 1) == 0 && at_i64(r, 2) == 0);
    kiln_ndarray_free(r);
    kiln_ndarray_free(v[0]);
    kiln_ndarray_free(v[1]);
    kiln_ctx_free(ctx);
}

/* ---- dtypes ---------------------------------------------------------------------- */

static void test_dtype_arithmetic(void) {
    /* float32 in float: 1e8 + 1 is 1e8, so (a + b) - a is 0; float64 keeps the 1 */
    double big[1] = {1e8}, one[1] = {1};
    kiln_ndarray *r32 = run_binary(KILN_FLOAT32, kiln_add, 1, big, one);
    kiln_ndarray *r64 = run_binary(KILN_FLOAT64, kiln_add, 1, big, one);
    CHECK(r32 && at(r32, 0) == 1e8);
    CHECK(r64 && at(r64, 0) == 1e8 + 1);
    kiln_ndarray_free(r32);
    kiln_ndarray_free(r64);
    /* float16: 2048 + 1 rounds to even (2048), 2048 + 3 to 2052; overflow to inf */
    double h[3] = {2048, 2048, 60000}, h2[3] = {1, 3, 60000};
    kiln_ndarray *r = run_binary(KILN_FLOAT16, kiln_add, 3, h, h2);
    CHECK(r && at(r, 0) == 2048 && at(r, 1) == 2052 && isinf(at(r, 2)));
    kiln_ndarray_free(r);
    /* bfloat16: 8 bits of mantissa; 1 + 1/256 is a tie that rounds to 1 */
    double b[2] = {1, 3}, b2[2] = {1.0 / 256, 1.0 / 128};
    r = run_binary(KILN_BFLOAT16, kiln_add, 2, b, b2);
    CHECK(r && at(r, 0) == 1.0 && at(r, 1) == 3.0);
    kiln_ndarray_free(r);
    /* integers wrap at their width */
    double i8a[2] = {100, -100}, i8b[2] = {100, -100};
    r = run_binary(KILN_INT8, kiln_add, 2, i8a, i8b);
    CHECK(r && at(r, 0) == -56 && at(r, 1) == 56);
    kiln_ndarray_free(r);
    double u8a[2] = {200, 3}, u8b[2] = {100, 5};
    r = run_binary(KILN_UINT8, kiln_add, 2, u8a, u8b);
    CHECK(r && at(r, 0) == 44 && at(r, 1) == 8);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT8, kiln_sub, 2, u8b, u8a);
    CHECK(r && at(r, 0) == 156 && at(r, 1) == 2);
    kiln_ndarray_free(r);
    double i32a[1] = {2147483647.0}, i32b[1] = {1};
    r = run_binary(KILN_INT32, kiln_add, 1, i32a, i32b);
    CHECK(r && at(r, 0) == -2147483648.0);
    kiln_ndarray_free(r);
    double m[2] = {65536, -3}, m2[2] = {65536, 7};
    r = run_binary(KILN_INT32, kiln_mul, 2, m, m2);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == -21);
    kiln_ndarray_free(r);
    /* comparisons give bool, in every dtype */
    static const kiln_dtype all[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_FLOAT16, KILN_BFLOAT16,
                                     KILN_INT8,    KILN_UINT8,   KILN_INT32,   KILN_INT64,
                                     KILN_INT16,   KILN_UINT16,  KILN_UINT32,  KILN_UINT64};
    double ca[3] = {1, 2, 3}, cb[3] = {2, 2, 2};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        r = run_binary(all[k], kiln_lt, 3, ca, cb);
        CHECK(r && kiln_ndarray_dtype(r) == KILN_BOOL);
        CHECK(r && at(r, 0) == 1 && at(r, 1) == 0 && at(r, 2) == 0);
        kiln_ndarray_free(r);
        r = run_binary(all[k], kiln_max, 3, ca, cb);
        CHECK(r && kiln_ndarray_dtype(r) == all[k] && at(r, 0) == 2 && at(r, 2) == 3);
        kiln_ndarray_free(r);
    }
    /* bool logic */
    double p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
    r = run_binary(KILN_BOOL, kiln_and, 4, p, q);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == 0 && at(r, 2) == 0 && at(r, 3) == 1);
    kiln_ndarray_free(r);
    r = run_binary(KILN_BOOL, kiln_or, 4, p, q);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == 1 && at(r, 2) == 1 && at(r, 3) == 1);
    kiln_ndarray_free(r);
    /* float min/max propagate NaN (numpy's minimum/maximum) */
    double na[2] = {NAN, 1}, nb[2] = {1, NAN};
    r = run_binary(KILN_FLOAT32, kiln_max, 2, na, nb);
    CHECK(r && isnan(at(r, 0)) && isnan(at(r, 1)));
    kiln_ndarray_free(r);
    r = run_binary(KILN_FLOAT64, kiln_min, 2, na, nb);
    CHECK(r && isnan(at(r, 0)) && isnan(at(r, 1)));
    kiln_ndarray_free(r);
    /* float floordiv / floormod as the generated helpers */
    double fa[2] = {-7, 7}, fb[2] = {2, -2};
    r = run_binary(KILN_FLOAT32, kiln_floormod, 2, fa, fb);
    CHECK(r && at(r, 0) == 1 && at(r, 1) == -1);
    kiln_ndarray_free(r);
    r = run_binary(KILN_FLOAT64, kiln_floordiv, 2, fa, fb);
    CHECK(r && at(r, 0) == -4 && at(r, 1) == -4);
    kiln_ndarray_free(r);
}

/* The unsigned dtypes wrap, compare, divide and shift as unsigned C does
 * (uint64 past INT64_MAX included); int16 wraps at 16 bits. */
static void test_unsigned_arithmetic(void) {
    const double two63 = 9223372036854775808.0, big = 18446744073709549568.0; /* 2^64 - 2048 */
    double ua[4] = {two63, big, 7, 0}, ub[4] = {1, two63, 0, 1};
    kiln_ndarray *r = run_binary(KILN_UINT64, kiln_lt, 4, ua, ub);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == 0 && at(r, 2) == 0 && at(r, 3) == 1);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT64, kiln_max, 4, ua, ub);
    CHECK(r && at_u64(r, 0) == 1ull << 63 && at_u64(r, 1) == UINT64_MAX - 2047);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT64, kiln_min, 4, ua, ub);
    CHECK(r && at_u64(r, 0) == 1 && at_u64(r, 1) == 1ull << 63 && at_u64(r, 2) == 0);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT64, kiln_div, 4, ua, ub); /* x / 0 = 0 */
    CHECK(r && at_u64(r, 0) == 1ull << 63 && at_u64(r, 1) == 1 && at_u64(r, 2) == 0 &&
          at_u64(r, 3) == 0);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT64, kiln_floormod, 4, ua, ub);
    CHECK(r && at_u64(r, 0) == 0 && at_u64(r, 1) == (1ull << 63) - 2048 && at_u64(r, 2) == 0);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT64, kiln_add, 4, ua, ub);
    CHECK(r && at_u64(r, 1) == (1ull << 63) - 2048); /* wraps */
    kiln_ndarray_free(r);
    double sa[3] = {two63, 5, 5}, sb[3] = {62, 64, 1};
    r = run_binary(KILN_UINT64, kiln_shr, 3, sa, sb); /* logical */
    CHECK(r && at_u64(r, 0) == 2 && at_u64(r, 1) == 0 && at_u64(r, 2) == 2);
    kiln_ndarray_free(r);
    double u32a[3] = {4294967295.0, 3000000000.0, 1}, u32b[3] = {1, 7, 2};
    r = run_binary(KILN_UINT32, kiln_add, 3, u32a, u32b);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == 3000000007.0 && at(r, 2) == 3);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT32, kiln_sub, 3, u32b, u32a);
    CHECK(r && at(r, 0) == 2 && at(r, 2) == 1);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT32, kiln_div, 3, u32a, u32b);
    CHECK(r && at(r, 1) == 428571428 && at(r, 2) == 0);
    kiln_ndarray_free(r);
    double u16a[2] = {65535, 40000}, u16b[2] = {2, 40000};
    r = run_binary(KILN_UINT16, kiln_add, 2, u16a, u16b);
    CHECK(r && at(r, 0) == 1 && at(r, 1) == 14464);
    kiln_ndarray_free(r);
    r = run_binary(KILN_UINT16, kiln_gt, 2, u16b, u16a);
    CHECK(r && at(r, 0) == 0 && at(r, 1) == 0);
    kiln_ndarray_free(r);
    double i16a[2] = {32767, -32768}, i16b[2] = {1, -1};
    r = run_binary(KILN_INT16, kiln_add, 2, i16a, i16b);
    CHECK(r && at(r, 0) == -32768 && at(r, 1) == 32767);
    kiln_ndarray_free(r);
    r = run_binary(KILN_INT16, kiln_floormod, 2, i16a, (double[]){-10, 7});
    CHECK(r && at(r, 0) == -3 && at(r, 1) == 6);
    kiln_ndarray_free(r);
    /* casts: uint64 past 2^63 to float and back, saturating; wrap between ints */
    double cf[4] = {big, two63, -5, 1e30};
    r = run_cast(KILN_FLOAT64, KILN_UINT64, 4, cf);
    CHECK(r && at_u64(r, 0) == UINT64_MAX - 2047 && at_u64(r, 1) == 1ull << 63 &&
          at_u64(r, 2) == 0 && at_u64(r, 3) == UINT64_MAX);
    kiln_ndarray_free(r);
    r = run_cast(KILN_UINT64, KILN_FLOAT64, 2, cf);
    CHECK(r && at(r, 0) == big && at(r, 1) == two63);
    kiln_ndarray_free(r);
    r = run_cast(KILN_UINT64, KILN_INT64, 1, cf);
    CHECK(r && at(r, 0) == -2048);
    kiln_ndarray_free(r);
    double ci[3] = {-1, 70000, 65535};
    r = run_cast(KILN_INT64, KILN_UINT16, 3, ci);
    CHECK(r && at(r, 0) == 65535 && at(r, 1) == 4464 && at(r, 2) == 65535);
    kiln_ndarray_free(r);
    r = run_cast(KILN_INT32, KILN_INT16, 3, ci);
    CHECK(r && at(r, 0) == -1 && at(r, 1) == 4464 && at(r, 2) == -1);
    kiln_ndarray_free(r);
    r = run_cast(KILN_INT64, KILN_UINT32, 1, ci);
    CHECK(r && at(r, 0) == 4294967295.0);
    kiln_ndarray_free(r);
    r = run_cast(KILN_INT64, KILN_UINT64, 1, ci);
    CHECK(r && at_u64(r, 0) == UINT64_MAX);
    kiln_ndarray_free(r);
}

static void test_casts(void) {
    /* float -> int truncates and saturates; NaN gives 0 */
    double f[6] = {1.9, -1.9, 1000, -1000, NAN, 3e10};
    kiln_ndarray *r = run_cast(KILN_FLOAT32, KILN_INT8, 6, f);
    CHECK(r && at(r, 0) == 1 && at(r, 1) == -1 && at(r, 2) == 127 && at(r, 3) == -128 &&
          at(r, 4) == 0 && at(r, 5) == 127);
    kiln_ndarray_free(r);
    r = run_cast(KILN_FLOAT64, KILN_UINT8, 6, f);
    CHECK(r && at(r, 0) == 1 && at(r, 1) == 0 && at(r, 2) == 255 && at(r, 3) == 0);
    kiln_ndarray_free(r);
    r = run_cast(KILN_FLOAT32, KILN_INT32, 6, f);
    CHECK(r && at(r, 5) == 2147483647.0 && at(r, 3) == -1000);
    kiln_ndarray_free(r);
    r = run_cast(KILN_FLOAT32, KILN_BOOL, 6, f);
    CHECK(r && at(r, 0) == 1 && at(r, 4) == 1); /* NaN != 0 */
    kiln_ndarray_free(r);
    /* int -> int wraps */
    double i[3] = {300, -129, 255};
    r = run_cast(KILN_INT32, KILN_INT8, 3, i);
    CHECK(r && at(r, 0) == 44 && at(r, 1) == 127 && at(r, 2) == -1);
    kiln_ndarray_free(r);
    r = run_cast(KILN_INT64, KILN_UINT8, 3, i);
    CHECK(r && at(r, 0) == 44 && at(r, 1) == 127 && at(r, 2) == 255);
    kiln_ndarray_free(r);
    /* float32 -> float16 -> float32 rounds to half precision */
    double hv[3] = {1.0009765625 /* 1 + 2^-10 */, 1.00048828125 /* a tie */, 70000};
    r = run_cast(KILN_FLOAT32, KILN_FLOAT16, 3, hv);
    CHECK(r && at(r, 0) == 1.0009765625 && at(r, 1) == 1.0 && isinf(at(r, 2)));
    kiln_ndarray_free(r);
    r = run_cast(KILN_FLOAT32, KILN_BFLOAT16, 3, hv);
    CHECK(r && at(r, 0) == 1.0 && fabs(at(r, 2) - 70144) < 1);
    kiln_ndarray_free(r);
    double hs[2] = {5.960464477539063e-08, -0.0}; /* the smallest float16 subnormal */
    r = run_cast(KILN_FLOAT64, KILN_FLOAT16, 2, hs);
    CHECK(r && at(r, 0) == 5.960464477539063e-08 && at(r, 1) == 0 && signbit(at(r, 1)));
    kiln_ndarray_free(r);
    /* int64 beyond 2^53 -> float64 and back to int64 */
    kiln_ctx *ctx = kiln_ctx_new();
    body_args a = {ph1(ctx, KILN_INT64, 2, "A"), NULL, NULL, KILN_INT32};
    kiln_expr s = kiln_int(ctx, 2);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_cast, &a, "C");
    const int64_t big[2] = {((int64_t)1 << 40) + 7, -5};
    kiln_ndarray *v = make_i64(2, big);
    r = eval1(c, 1, &a.a, &v);
    CHECK(r && at(r, 0) == 7 && at(r, 1) == -5);
    kiln_ndarray_free(r);
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
}

/* ---- intrinsics, selects -------------------------------------------------------------- */

typedef struct {
    kiln_tensor *a;
    int which;
} un_args;

static kiln_expr body_math(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    un_args *a = u;
    kiln_expr x = kiln_tensor_at(a->a, 1, i);
    switch (a->which) {
    case 0: return kiln_round(x);
    case 1: return kiln_sigmoid(x);
    case 2: return kiln_rsqrt(kiln_abs(x));
    case 3: return kiln_pow(x, kiln_float(ctx, 2));
    case 4: return kiln_abs(x); /* integers too */
    default: return kiln_erf(x);
    }
}

static void test_intrinsics(void) {
    double x[5] = {2.5, -0.5, 3.5, -2.5, 4};
    static const int which[] = {0, 1, 2, 3, 5};
    for (size_t k = 0; k < sizeof which / sizeof which[0]; k++) {
        kiln_ctx *ctx = kiln_ctx_new();
        un_args a = {ph1(ctx, KILN_FLOAT32, 5, "A"), which[k]};
        kiln_expr s = kiln_int(ctx, 5);
        kiln_tensor *c = kiln_compute(ctx, 1, &s, body_math, &a, "C");
        int64_t n = 5;
        kiln_ndarray *v = make(KILN_FLOAT32, 1, &n, x);
        kiln_ndarray *r = eval1(c, 1, &a.a, &v);
        CHECK(r != NULL);
        for (int i = 0; r && i < 5; i++) {
            float xf = (float)x[i];
            float want = which[k] == 0   ? nearbyintf(xf)
                         : which[k] == 1 ? 1.0f / (1.0f + expf(-xf))
                         : which[k] == 2 ? 1.0f / sqrtf(fabsf(xf))
                         : which[k] == 3 ? powf(xf, 2.0f)
                                         : erff(xf);
            CHECK(at(r, i) == (double)want);
        }
        /* round half to even, as numpy */
        if (r && which[k] == 0)
            CHECK(at(r, 0) == 2 && at(r, 1) == 0 && at(r, 2) == 4);
        kiln_ndarray_free(r);
        kiln_ndarray_free(v);
        kiln_ctx_free(ctx);
    }
    /* abs of integers wraps at INT_MIN */
    kiln_ctx *ctx = kiln_ctx_new();
    un_args a = {ph1(ctx, KILN_INT8, 3, "A"), 4};
    kiln_expr s = kiln_int(ctx, 3);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_math, &a, "C");
    int64_t n = 3;
    double iv[3] = {-128, -5, 7};
    kiln_ndarray *v = make(KILN_INT8, 1, &n, iv);
    kiln_ndarray *r = eval1(c, 1, &a.a, &v);
    CHECK(r && at(r, 0) == -128 && at(r, 1) == 5 && at(r, 2) == 7);
    kiln_ndarray_free(r);
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
}

typedef struct {
    kiln_tensor *a;
    int64_t n;
    int kind;
} pad_args;

/* kind 0: select(i >= 1 && i <= n, A[i-1], -1) over n+2 (a padded read);
 * 1: (i >= 1) && (A[i-1] > 0) (the read only where i >= 1);
 * 2: A[i-1] unguarded (reads A[-1]: an error). */
static kiln_expr body_pad(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pad_args *a = u;
    kiln_expr one = kiln_int(ctx, 1), prev = kiln_sub(i[0], one);
    kiln_expr inside = kiln_and(kiln_ge(i[0], one), kiln_le(i[0], kiln_int(ctx, a->n)));
    switch (a->kind) {
    case 0: return kiln_select(inside, kiln_tensor_at(a->a, 1, &prev), kiln_float(ctx, -1));
    case 1: return kiln_and(inside, kiln_gt(kiln_tensor_at(a->a, 1, &prev), kiln_float(ctx, 0)));
    default: return kiln_tensor_at(a->a, 1, &prev);
    }
}

static void test_select_skips_lanes(void) {
    for (int kind = 0; kind < 3; kind++) {
        kiln_ctx *ctx = kiln_ctx_new();
        pad_args a = {ph1(ctx, KILN_FLOAT32, 4, "A"), 4, kind};
        kiln_expr s = kiln_int(ctx, 6);
        kiln_tensor *c = kiln_compute(ctx, 1, &s, body_pad, &a, "padded");
        int64_t n = 4;
        double x[4] = {1, -2, 3, -4};
        kiln_ndarray *v = make(KILN_FLOAT32, 1, &n, x);
        kiln_ndarray *r = NULL;
        kiln_status st = te_eval(1, &c, 1, &a.a, (const kiln_ndarray *const *)&v, NULL, &r);
        if (kind == 0) {
            CHECK_EQ_INT(st, KILN_OK);
            const double want[6] = {-1, 1, -2, 3, -4, -1};
            for (int i = 0; r && i < 6; i++)
                CHECK_NEAR(at(r, i), want[i], 0);
        } else if (kind == 1) {
            CHECK_EQ_INT(st, KILN_OK);
            const double want[6] = {0, 1, 0, 1, 0, 0};
            for (int i = 0; r && i < 6; i++)
                CHECK_NEAR(at(r, i), want[i], 0);
        } else {
            CHECK_EQ_INT(st, KILN_ERR_INVALID);
            CHECK(r == NULL);
            CHECK_CONTAINS(kiln_last_error(), "compute 'padded' reads 'A' at index -1");
            CHECK_CONTAINS(kiln_last_error(), "outside the tensor");
        }
        kiln_ndarray_free(r);
        kiln_ndarray_free(v);
        kiln_ctx_free(ctx);
    }
}

/* ---- reductions -------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *a; /* [m, n] */
    kiln_expr k[2];
    int kind; /* 0 sum over j, 1 max, 2 min, 3 prod, 4 sum over both (scalar),
                 5 prefix sum over a domain [0, i] of row 0 */
} red_args;

static kiln_expr body_reduce(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *a = u;
    kiln_expr ij[2] = {i[0], a->k[0]};
    switch (a->kind) {
    case 0: return kiln_sum(kiln_tensor_at(a->a, 2, ij), 1, a->k);
    case 1: return kiln_max_reduce(kiln_tensor_at(a->a, 2, ij), 1, a->k);
    case 2: return kiln_min_reduce(kiln_tensor_at(a->a, 2, ij), 1, a->k);
    case 3: return kiln_prod(kiln_tensor_at(a->a, 2, ij), 1, a->k);
    case 4: return kiln_sum(kiln_tensor_at(a->a, 2, a->k), 2, a->k);
    default: {
        kiln_expr r0[2] = {kiln_int(ctx, 0), a->k[0]};
        return kiln_sum(kiln_tensor_at(a->a, 2, r0), 1, a->k);
    }
    }
}

/* One reduction kind over an [m, n] array of dtype dt, against a C loop. */
static void check_reduction(kiln_dtype dt, int64_t m, int64_t n, int kind) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr sh[2] = {kiln_int(ctx, m), kiln_int(ctx, n)};
    red_args a = {kiln_placeholder(ctx, 2, sh, dt, "A"), {NULL, NULL}, kind};
    if (kind == 4) {
        a.k[0] = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[0], "r0");
        a.k[1] = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "r1");
    } else if (kind != 5) {
        a.k[0] = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k");
    }
    kiln_tensor *c;
    if (kind == 4) {
        c = kiln_compute(ctx, 0, NULL, body_reduce, &a, "total");
    } else if (kind == 5) {
        /* a prefix sum: the domain of k is [0, i + 1), which depends on the
           data axis i, so the compute is built by hand around that axis */
        tir_node i = te_make_axis(ctx, "i", TE_AXIS_DATA, tir_i64(ctx, 0), tir_i64(ctx, n));
        a.k[0] =
            te_make_axis(ctx, "k", TE_AXIS_REDUCE, tir_i64(ctx, 0), tir_add(i, tir_i64(ctx, 1)));
        kiln_expr ix = i;
        tir_node shn = tir_i64(ctx, n);
        c = te_tensor_new(ctx, TE_COMPUTE, "prefix", dt, 1, &shn);
        c->axis[0] = i;
        c->body = body_reduce(ctx, &ix, &a);
    } else {
        c = kiln_compute(ctx, 1, sh, body_reduce, &a, "rows");
    }
    kiln_ndarray *v = kiln_ndarray_empty(dt, 2, (int64_t[]){m, n});
    uint64_t seed = 11 + (uint64_t)kind;
    tu_fill(v, &seed);
    if (kind == 3) /* keep products small: values in {-1, 1, 2} */
        for (int64_t e = 0; e < m * n; e++) {
            double x = e % 3 == 0 ? -1 : e % 3 == 1 ? 1 : 2;
            if (dt == KILN_FLOAT32)
                ((float *)kiln_ndarray_data(v))[e] = (float)x;
            else
                ((int64_t *)kiln_ndarray_data(v))[e] = (int64_t)x;
        }
    kiln_ndarray *r = c ? eval1(c, 1, &a.a, &v) : NULL;
    CHECK(r != NULL);
    int64_t nout = kind == 4 ? 1 : kind == 5 ? n : m;
    for (int64_t o = 0; r && o < nout; o++) {
        /* in the dtype's own arithmetic, in axis order */
        double acc = kind == 1 ? -INFINITY : kind == 2 ? INFINITY : kind == 3 ? 1 : 0;
        float accf = (float)acc;
        double accd = acc;
        uint64_t acci = kind == 3; /* wraps like int64 */
        int64_t lo = kind == 4   ? 0
                     : kind == 5 ? 0
                                 : o * n,
                hi = kind == 4   ? m * n
                     : kind == 5 ? o + 1
                                 : o * n + n;
        for (int64_t e = lo; e < hi; e++) {
            double x = tu_get(v, e);
            if (kind == 0 || kind == 4 || kind == 5) {
                accf += (float)x;
                accd += x;
                acci += (uint64_t)(int64_t)x;
            } else if (kind == 3) {
                accf *= (float)x;
                accd *= x;
                acci *= (uint64_t)(int64_t)x;
            }
            if (kind == 1)
                acc = fmax(acc, x);
            if (kind == 2)
                acc = fmin(acc, x);
        }
        double want = kind == 1 || kind == 2 ? acc
                      : dt == KILN_FLOAT32   ? (double)accf
                      : dt == KILN_FLOAT64   ? accd
                                             : (double)(int64_t)acci;
        if (at(r, o) != want) {
            fprintf(stderr, "reduction kind %d %s [%lld x %lld]: out %lld = %.9g, want %.9g\n",
                    kind, kiln_dtype_name(dt), (long long)m, (long long)n, (long long)o, at(r, o),
                    want);
            CHECK(at(r, o) == want);
            break;
        }
    }
    kiln_ndarray_free(r);
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
}

static void test_reductions(void) {
    static const kiln_dtype dts[] = {KILN_FLOAT32, KILN_INT64};
    for (size_t d = 0; d < 2; d++)
        for (int kind = 0; kind < 6; kind++) {
            check_reduction(dts[d], 3, 700, kind);  /* few rows: the reduce axis on the lanes */
            check_reduction(dts[d], 300, 37, kind); /* many rows: the rows on the lanes */
        }
    check_reduction(KILN_INT32, 513, 5, 0);
    check_reduction(KILN_INT8, 2, 9, 1);
    check_reduction(KILN_UINT8, 2, 9, 2);
    check_reduction(KILN_FLOAT64, 64, 9, 0);
}

/* Reduce axes whose extents depend on the outer reduce axes (a triangle):
 * sum over k0 in [0, 4), k1 in [0, k0 + 1) (and k2 in [0, k1 + 1)) of a body
 * that may share the extent expression (hash-consed: the same node), plus
 * the data axis i. The extent must be read for the current outer step, not
 * from a cache left by the previous one. */
typedef struct {
    kiln_expr k[3];
    int naxes, kind;
} tri_args;

static kiln_expr tri_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    tri_args *a = u;
    kiln_expr one = kiln_int(ctx, 1), f;
    switch (a->kind) {
    case 0: f = kiln_add(a->k[0], one); break; /* the extent of k1 itself */
    case 1: f = a->k[1]; break;                /* the extent not in the body */
    case 2: f = kiln_mul(kiln_add(a->k[0], one), kiln_add(a->k[1], one)); break;
    default: f = kiln_add(a->k[1], one); break; /* three axes: the extent of k2 */
    }
    return kiln_sum(kiln_add(f, i[0]), a->naxes, a->k);
}

static void check_triangle(int kind, int64_t m) {
    /* hand values at i = 0, and the number of points of the domain */
    static const int64_t base[4] = {30, 10, 65, 50}, points[4] = {10, 10, 10, 20};
    kiln_ctx *ctx = kiln_ctx_new();
    tri_args a = {{NULL, NULL, NULL}, kind == 3 ? 3 : 2, kind};
    kiln_expr one = kiln_int(ctx, 1), zero = kiln_int(ctx, 0);
    a.k[0] = kiln_reduce_axis(ctx, zero, kiln_int(ctx, 4), "k0");
    a.k[1] = kiln_reduce_axis(ctx, zero, kiln_add(a.k[0], one), "k1");
    if (kind == 3)
        a.k[2] = kiln_reduce_axis(ctx, zero, kiln_add(a.k[1], one), "k2");
    kiln_expr s = kiln_int(ctx, m);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, tri_body, &a, "tri");
    CHECK(c != NULL);
    kiln_ndarray *r = c ? eval1(c, 0, NULL, NULL) : NULL;
    CHECK(r != NULL);
    for (int64_t i = 0; r && i < m; i++)
        if (at_i64(r, i) != base[kind] + i * points[kind]) {
            fprintf(stderr, "triangle %d [%lld]: out %lld = %lld, want %lld\n", kind, (long long)m,
                    (long long)i, (long long)at_i64(r, i),
                    (long long)(base[kind] + i * points[kind]));
            CHECK_EQ_INT(at_i64(r, i), base[kind] + i * points[kind]);
            break;
        }
    /* the compiled kernel agrees */
    kiln_schedule *sch = c ? kiln_schedule_create(ctx, 1, &c) : NULL;
    kiln_ndarray *got = kiln_ndarray_empty(KILN_INT64, 1, &m);
    CHECK(sch && tu_build_run(sch, 1, &c, "tri", &got, NULL) == 0);
    for (int64_t i = 0; sch && i < m; i++)
        if (at_i64(got, i) != base[kind] + i * points[kind]) {
            CHECK_EQ_INT(at_i64(got, i), base[kind] + i * points[kind]);
            break;
        }
    kiln_ndarray_free(got);
    kiln_ndarray_free(r);
    kiln_ctx_free(ctx);
}

static void test_dependent_reduce_domains(void) {
    for (int kind = 0; kind < 4; kind++) {
        check_triangle(kind, 1);   /* the innermost reduce axis on the lanes */
        check_triangle(kind, 300); /* the rows on the lanes */
    }
}

typedef struct {
    kiln_tensor *x, *best;
    kiln_expr k1, k2;
    int64_t n;
} arg_args;

static kiln_expr arg_best(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ij[2] = {i[0], a->k1};
    return kiln_max_reduce(kiln_tensor_at(a->x, 2, ij), 1, &a->k1);
}

/* The first index where the row reaches its max (argmax as two stages). */
static kiln_expr arg_pick(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ij[2] = {i[0], a->k2};
    kiln_expr hit = kiln_eq(kiln_tensor_at(a->x, 2, ij), kiln_tensor_at(a->best, 1, i));
    return kiln_min_reduce(kiln_select(hit, a->k2, kiln_int(ctx, a->n)), 1, &a->k2);
}

static void test_argmax_two_stages(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    int64_t m = 5, n = 6;
    kiln_expr sh[2] = {kiln_int(ctx, m), kiln_int(ctx, n)};
    arg_args a = {kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "x"), NULL, NULL, NULL, n};
    a.k1 = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k1");
    a.k2 = kiln_reduce_axis(ctx, kiln_int(ctx, 0), sh[1], "k2");
    a.best = kiln_compute(ctx, 1, sh, arg_best, &a, "best");
    kiln_tensor *idx = kiln_compute(ctx, 1, sh, arg_pick, &a, "argmax");
    const double x[30] = {1, 5, 3, 5, 0, 2, /**/ -1, -2, -3, -4,     -5, -6, /**/ 0, 0, 0,
                          0, 0, 0, 9, 1, 9, 1,       9,  1,  /**/ 1, 2,  3,  4,      5, 6};
    kiln_ndarray *v = make(KILN_FLOAT32, 2, (int64_t[]){m, n}, x);
    kiln_tensor *outs[2] = {idx, a.best};
    kiln_ndarray *r[2] = {NULL, NULL};
    CHECK_EQ_INT(te_eval(2, outs, 1, &a.x, (const kiln_ndarray *const *)&v, NULL, r), KILN_OK);
    const int64_t want[5] = {1, 0, 0, 0, 5};
    for (int i = 0; r[0] && i < 5; i++)
        CHECK_EQ_INT(at_i64(r[0], i), want[i]);
    CHECK(r[1] && at(r[1], 0) == 5 && at(r[1], 3) == 9 && at(r[1], 1) == -1);
    kiln_ndarray_free(r[0]);
    kiln_ndarray_free(r[1]);
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
}

/* ---- memoized stages, sizes, speed ----------------------------------------------------- */

typedef struct {
    kiln_tensor *a, *b;
} tr_args;

static kiln_expr tr_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    tr_args *a = u;
    kiln_expr ji[2] = {i[1], i[0]};
    return kiln_tensor_at(a->a, 2, ji);
}

static kiln_expr exp_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_exp(kiln_tensor_at(((tr_args *)u)->a, 1, i));
}

/* out[i, j] = e[j] * e[i]: the stage e is read twice per element. */
static kiln_expr outer_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    tr_args *a = u;
    return kiln_mul(kiln_tensor_at(a->b, 1, &i[1]), kiln_tensor_at(a->b, 1, &i[0]));
}

static void test_stages_and_sizes(void) {
    /* a transpose of 2.4M elements (a BERT-base weight) evaluates quickly */
    kiln_ctx *ctx = kiln_ctx_new();
    int64_t R = 768, C = 3072;
    kiln_expr sh[2] = {kiln_int(ctx, R), kiln_int(ctx, C)}, tsh[2] = {sh[1], sh[0]};
    tr_args a = {kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "W"), NULL};
    kiln_tensor *t = kiln_compute(ctx, 2, tsh, tr_body, &a, "WT");
    kiln_ndarray *w = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){R, C});
    for (int64_t e = 0; e < R * C; e++)
        ((float *)kiln_ndarray_data(w))[e] = (float)e;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_ndarray *r = eval1(t, 1, &a.a, &w);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("transpose of %lld x %lld float32: %.3f s\n", (long long)R, (long long)C, secs);
    CHECK(secs < 5); /* about 0.05 s; generous for a loaded machine and sanitizers */
    int ok = r != NULL;
    for (int64_t e = 0; ok && e < R * C; e += 997) {
        int64_t i = e / R, j = e % R; /* out[i, j] = W[j, i] */
        ok = at(r, e) == (double)(j * C + i);
    }
    CHECK(ok);
    kiln_ndarray_free(r);
    kiln_ndarray_free(w);
    /* a stage read twice per element is evaluated once */
    int64_t n = 50;
    tr_args b = {ph1(ctx, KILN_FLOAT32, n, "x"), NULL};
    kiln_expr s = kiln_int(ctx, n), s2[2] = {s, s};
    b.b = kiln_compute(ctx, 1, &s, exp_body, &b, "e");
    kiln_tensor *o = kiln_compute(ctx, 2, s2, outer_body, &b, "outer");
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    for (int64_t i = 0; i < n; i++)
        ((float *)kiln_ndarray_data(x))[i] = (float)i / 10;
    r = eval1(o, 1, &b.a, &x);
    CHECK(r && at(r, 3 * n + 7) == (double)(expf(0.7f) * expf(0.3f)));
    kiln_ndarray_free(r);
    kiln_ndarray_free(x);
    kiln_ctx_free(ctx);
    /* symbolic sizes take their values from the options */
    ctx = kiln_ctx_new();
    kiln_expr nv = kiln_var(ctx, "n");
    body_args ba = {kiln_placeholder(ctx, 1, &nv, KILN_INT32, "A"), NULL, kiln_add, 0};
    ba.b = ba.a;
    kiln_tensor *c = kiln_compute(ctx, 1, &nv, body_binary, &ba, "twice");
    int64_t three = 3;
    double iv[3] = {1, 2, 3};
    kiln_ndarray *v = make(KILN_INT32, 1, &three, iv);
    te_eval_options opt = {1, &nv, &three, 0};
    kiln_ndarray *res = NULL;
    CHECK_EQ_INT(te_eval(1, &c, 1, &ba.a, (const kiln_ndarray *const *)&v, &opt, &res), KILN_OK);
    CHECK(res && at(res, 2) == 6);
    kiln_ndarray_free(res);
    res = NULL;
    /* ... and without them it is an error naming the size */
    CHECK_EQ_INT(te_eval(1, &c, 1, &ba.a, (const kiln_ndarray *const *)&v, NULL, &res),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'n'");
    kiln_ndarray_free(v);
    kiln_ctx_free(ctx);
}

static void test_errors(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    body_args a = {ph1(ctx, KILN_FLOAT32, 4, "A"), ph1(ctx, KILN_FLOAT32, 4, "B"), kiln_add, 0};
    kiln_expr s = kiln_int(ctx, 4);
    kiln_tensor *c = kiln_compute(ctx, 1, &s, body_binary, &a, "C");
    int64_t four = 4, five = 5;
    double z[5] = {0};
    kiln_ndarray *v4 = make(KILN_FLOAT32, 1, &four, z), *v5 = make(KILN_FLOAT32, 1, &five, z);
    kiln_ndarray *i4 = make(KILN_INT32, 1, &four, z), *r = NULL;
    kiln_tensor *ph[2] = {a.a, a.b};
    /* a placeholder without a value */
    CHECK_EQ_INT(te_eval(1, &c, 1, ph, (const kiln_ndarray *const *)&v4, NULL, &r),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no value for placeholder 'B'");
    /* a value of another shape or dtype */
    const kiln_ndarray *bad[2] = {v4, v5};
    CHECK_EQ_INT(te_eval(1, &c, 2, ph, bad, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "placeholder 'B' has dim 0 = 4; its value has 5");
    bad[1] = i4;
    CHECK_EQ_INT(te_eval(1, &c, 2, ph, bad, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "placeholder 'B' is float32");
    /* the cap on elements */
    bad[1] = v4;
    te_eval_options cap = {0, NULL, NULL, 3};
    CHECK_EQ_INT(te_eval(1, &c, 2, ph, bad, &cap, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "compute 'C' has 4 elements");
    CHECK(r == NULL);
    /* a stage whose element count overflows int64 */
    kiln_expr huge[3] = {kiln_int(ctx, (int64_t)1 << 40), kiln_int(ctx, (int64_t)1 << 20),
                         kiln_int(ctx, (int64_t)1 << 40)};
    kiln_tensor *big = te_tensor_new(ctx, TE_COMPUTE, "big", KILN_FLOAT32, 2, huge);
    big->axis[0] = te_make_axis(ctx, "i", TE_AXIS_DATA, tir_i64(ctx, 0), huge[0]);
    big->axis[1] = te_make_axis(ctx, "j", TE_AXIS_DATA, tir_i64(ctx, 0), huge[1]);
    big->body = kiln_float(ctx, 1);
    kiln_tensor *big3 = te_tensor_new(ctx, TE_COMPUTE, "bigger", KILN_FLOAT32, 3, huge);
    big3->axis[0] = big->axis[0];
    big3->axis[1] = big->axis[1];
    big3->axis[2] = te_make_axis(ctx, "k", TE_AXIS_DATA, tir_i64(ctx, 0), huge[2]);
    big3->body = kiln_float(ctx, 1);
    CHECK_EQ_INT(te_eval(1, &big, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "compute 'big' has 1152921504606846976 elements");
    CHECK_EQ_INT(te_eval(1, &big3, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "more elements than int64 can count");
    /* node kinds that are not tensor expressions: a load, an intrinsic on an
       integer the renderer cannot compute */
    kiln_tensor *ld = te_tensor_new(ctx, TE_COMPUTE, "load", KILN_FLOAT32, 1, &s);
    ld->axis[0] = te_make_axis(ctx, "i", TE_AXIS_DATA, tir_i64(ctx, 0), s);
    ld->body = tir_load(ctx, tir_handle(ctx, "buf", KILN_FLOAT32), ld->axis[0]);
    CHECK_EQ_INT(te_eval(1, &ld, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "compute 'load'");
    CHECK_CONTAINS(kiln_last_error(), "not a tensor expression");
    kiln_tensor *ex = te_tensor_new(ctx, TE_COMPUTE, "int_exp", KILN_INT64, 1, &s);
    ex->axis[0] = te_make_axis(ctx, "i", TE_AXIS_DATA, tir_i64(ctx, 0), s);
    ex->body = tir_call(ctx, TIR_EXP, KILN_INT64, 1, 1, &ex->axis[0]);
    CHECK_EQ_INT(te_eval(1, &ex, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "intrinsic exp of int64");
    /* a reduction nested in an expression */
    kiln_tensor *nest = te_tensor_new(ctx, TE_COMPUTE, "nested", KILN_INT64, 1, &s);
    nest->axis[0] = te_make_axis(ctx, "i", TE_AXIS_DATA, tir_i64(ctx, 0), s);
    kiln_expr k = kiln_reduce_axis(ctx, kiln_int(ctx, 0), s, "k");
    nest->body = kiln_add(kiln_sum(k, 1, &k), kiln_int(ctx, 1));
    CHECK_EQ_INT(te_eval(1, &nest, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not the whole body");
    kiln_ndarray_free(v4);
    kiln_ndarray_free(v5);
    kiln_ndarray_free(i4);
    kiln_ctx_free(ctx);
}

/* ---- every op of the table against its compiled naive kernel ---------------------------- */

/* Inputs: "dtype[d0,d1,...]" separated by ';'; a '+' after the dtype makes
 * the values positive (log, sqrt, an integer divisor, a uint8 cast); an
 * 'M' puts the dtype's minimum in every fourth element from 1, a 'Z' 0 in
 * every fourth from 0 and -1 from 1 (so M / Z divides by 0 and MIN by -1:
 * kiln's rule, at run time as in the interpreter); an 'I' makes indices in
 * [-5, 4], negative and not, for a dim of 5 (an index out of range is an
 * error, tested in test_te_checks.c); a 'T' makes class targets in [-1, 4]
 * (for 5 classes, -1 the ignore_index); an 'S' makes i / 2 at position i
 * (0, 0, 1, 1, 2, ...: a rising table of starts, or batch indices); a 'K'
 * makes the input a constant of the graph of integers i + 3 (for the ops
 * that take dims or counts from one). */
typedef struct {
    const char *op, *inputs, *attrs;
} workload;

static const workload g_work[] = {
    {"log", "f32+[3,4,5]", NULL},
    {"sqrt", "f32+[3,4,5]", NULL},
    {"rsqrt", "f32+[3,4,5]", NULL},
    {"reciprocal", "f32+[3,4,5]", NULL},
    {"negative", "i8[3,4,5]", NULL},
    {"abs", "i32[7,5]", NULL},
    {"sign", "i64[7,5]", NULL},
    {"logical_not", "bool[6,5]", NULL},
    {"nn.elu", "f32[3,4,5]", "alpha=0.5"},
    {"nn.selu", "f32[3,4,5]", NULL},
    {"clip", "f32[3,4,5]", "a_min=-0.5, a_max=1.25"},
    {"nn.leaky_relu", "f32[3,4,5]", "alpha=0.1"},
    {"cast", "f32[3,4,5]", "dtype=\"int32\""},
    {"cast", "f32+[3,4,5]", "dtype=\"uint8\""},
    {"cast", "f32[3,4,5]", "dtype=\"float16\""},
    {"cast", "f32[3,4,5]", "dtype=\"bfloat16\""},
    {"cast", "i64[3,4,5]", "dtype=\"float64\""},
    {"cast", "i32[3,4,5]", "dtype=\"bool\""},
    {"add", "i64[3,1,5];i64[4,1]", NULL},
    {"subtract", "u8[3,4];u8[4]", NULL},
    {"multiply", "f64[2,3,4];f64[3,1]", NULL},
    {"divide", "f32[3,4,5];f32+[5]", NULL},
    {"divide", "i32[3,4,5];i32+[5]", NULL},
    {"divide", "i32M[4,5];i32Z[4,5]", NULL},
    {"divide", "i64M[4,5];i64Z[4,5]", NULL},
    {"divide", "i8M[4,5];i8Z[4,5]", NULL},
    {"power", "f32+[3,4,5];f32[4,5]", NULL},
    {"maximum", "i8[3,4];i8[3,4]", NULL},
    {"equal", "i64[3,4];i64[1]", NULL},
    {"logical_and", "bool[3,4];bool[3,4]", NULL},
    {"logical_or", "bool[3,4];bool[4]", NULL},
    {"logical_xor", "bool[3,4];bool[4]", NULL},
    {"mod", "i32M[4,5];i32Z[4,5]", NULL},
    {"mod", "f32[3,4,5];f32[4,5]", NULL},
    {"mod", "f16[3,4];f16[4]", NULL},
    {"floor_mod", "i8M[4,5];i8Z[4,5]", NULL},
    {"floor_mod", "i64[3,4];i64[4]", NULL},
    {"floor_mod", "f64[3,4];f64[4]", NULL},
    {"left_shift", "u8[4,5];u8Z[4,5]", NULL},
    {"left_shift", "i64[3,4];i64[4]", NULL},
    {"right_shift", "u8[4,5];u8Z[4,5]", NULL},
    {"right_shift", "i8[3,4];i8[3,4]", NULL},
    {"right_shift", "i32M[4,5];i32[4,5]", NULL},
    {"where", "bool[3,4];f32[3,4];f32[4]", NULL},
    {"nn.bias_add", "f32[2,3,4,5];f32[3]", NULL},
    {"nn.conv2d", "f32[1,4,7,6];f32[6,2,3,3]", "padding=[1, 0, 2, 1], strides=[2, 1], groups=2"},
    {"nn.contrib_conv2d_NCHWc", "f32[1,2,5,6,4];f32[2,2,3,3,4,4]",
     "padding=[1, 1, 0, 1], data_layout=\"NCHW4c\", kernel_layout=\"OIHW4i4o\", "
     "out_layout=\"NCHW4c\""},
    /* the int8 kernel: dot products of 4 int8 (VNNI) and 2 int16 (AVX2) pairs */
    {"nn.contrib_conv2d_NCHWc_int8", "u8[1,2,5,6,8];i8[2,2,3,3,2,16,4]",
     "padding=[1, 1, 0, 1], pad_value=9, data_layout=\"NCHW8c\", kernel_layout=\"OIHW2i16o4i\", "
     "out_layout=\"NCHW16c\""},
    {"nn.contrib_conv2d_NCHWc_int8", "u8[1,1,6,5,4];i16[3,1,3,3,2,8,2]",
     "strides=[2, 1], padding=[1, 1, 1, 1], pad_value=200, data_layout=\"NCHW4c\", "
     "kernel_layout=\"OIHW2i8o2i\", out_layout=\"NCHW8c\""},
    {"nn.contrib_conv2d_NCHWc", "u8[1,2,5,6,8];i8[2,1,3,3,1,8]",
     "groups=16, padding=[1, 1, 1, 1], pad_value=3, out_dtype=\"int32\", data_layout=\"NCHW8c\", "
     "kernel_layout=\"OIHW1i8o\", out_layout=\"NCHW8c\""},
    {"nn.conv2d", "u8[1,4,7,6];i8[6,4,3,3]",
     "padding=[1, 1, 1, 1], out_dtype=\"int32\", pad_value=17"},
    {"nn.contrib_conv2d_winograd_NCHWc", "f32[1,2,6,5,4];f32[16,1,2,4,8]",
     "tile_size=2, padding=[1, 1, 1, 1], data_layout=\"NCHW4c\", out_layout=\"NCHW8c\""},
    {"nn.dense", "f32[5,12];f32[7,12]", NULL},
    /* int8 panels: dot products of 4 int8 and of 2 int16 features */
    {"nn.dense", "u8[3,12];i8[2,3,16,4]", "weight_layout=\"NC16n4k\", out_dtype=\"int32\""},
    {"nn.dense", "u8[2,5,8];i16[3,4,8,2]", "weight_layout=\"NC8n2k\", out_dtype=\"int32\""},
    {"nn.batch_matmul", "f32[2,5,6];f32[1,6,3]", NULL},
    {"nn.conv3d", "f32[1,4,5,6,4];f32[6,2,3,2,3]",
     "padding=[1, 0, 2, 0, 1, 1], strides=[2, 1, 1], dilation=[1, 2, 1], groups=2"},
    {"nn.conv2d_transpose", "f32[1,4,4,3];f32[4,3,3,2]",
     "strides=[2, 3], padding=[1, -1, 0, 2], output_padding=[1, 0], dilation=[1, 2], groups=2"},
    {"nn.conv3d_transpose", "f32[2,2,3,2,3];f32[2,2,2,3,2]",
     "strides=[2, 1, 2], padding=[0, 1, 1, 1, 0, 0], output_padding=[1, 0, 0]"},
    {"nn.max_pool2d", "f32[1,3,7,7]", "pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]"},
    {"nn.avg_pool2d", "f32[1,3,7,7]", "pool_size=[3, 2], padding=[1, 1, 1, 1]"},
    {"nn.lp_pool2d", "f32[1,2,6,7]", "pool_size=[2, 3], strides=[2, 2], padding=[1, 0, 1, 1], p=3"},
    {"nn.max_pool3d", "i32[1,2,5,6,5]",
     "pool_size=[2, 3, 2], strides=[2, 1, 2], dilation=[1, 2, 1], padding=[1], ceil_mode=1"},
    {"nn.avg_pool3d", "f32[2,2,5,4,6]",
     "pool_size=[3, 2, 3], strides=[2], padding=[1, 0, 1, 0, 1, 2], ceil_mode=1"},
    {"nn.avg_pool3d", "f64[1,2,4,5,4]",
     "pool_size=[2], padding=[1, 1, 0, 0, 1, 1], count_include_pad=1"},
    {"nn.lp_pool3d", "f64[1,2,4,5,4]", "pool_size=[2, 2, 3], padding=[1], p=1"},
    {"nn.max_pool2d_with_argmax", "f32[2,3,6,7]",
     "pool_size=[3, 2], strides=[2, 2], padding=[1, 1, 2, 0], dilation=[1, 2]"},
    {"nn.max_pool2d_with_argmax", "u8[1,2,5,5]", "pool_size=[2], storage_order=1, ceil_mode=1"},
    {"nn.max_pool3d_with_argmax", "f32[1,2,4,5,6]",
     "pool_size=[2, 3, 2], strides=[1, 2, 2], padding=[0, 1, 1, 1, 1, 0], storage_order=1"},
    {"nn.global_avg_pool2d", "f32[2,3,5,4]", NULL},
    {"nn.global_avg_pool2d", "i8[2,3,5,4]", NULL},
    {"nn.avg_pool2d", "u8[1,3,7,7]", "pool_size=[3, 2], padding=[1, 1, 1, 1]"},
    {"nn.global_max_pool2d", "f32[2,3,5,4]", NULL},
    {"nn.global_lp_pool2d", "f32[2,3,5,4]", NULL},
    {"nn.global_lp_pool2d", "f64[2,3,4,2,3]", "p=3"},
    {"nn.softmax", "f32[3,17]", NULL},
    {"nn.log_softmax", "f32[3,4,5]", "axis=1"},
    {"nn.hardmax", "f32[3,4,5]", "axis=1"},
    {"nn.hardmax", "f64[4,6]", NULL},
    {"asin", "f32[3,4,5]", NULL},
    {"acosh", "f32+[3,4,5]", NULL},
    {"isinf", "f32[3,4]", "detect_negative=0"},
    {"nn.celu", "f32[3,4,5]", "alpha=2"},
    {"nn.shrink", "f64[3,4,5]", "bias=0.5, lambd=1"},
    {"nn.layer_norm", "f32[4,24];f32[24];f32[24]", NULL},
    {"annotation.compiler_begin", "f32[3,4]", "compiler=\"dnnl\""},
    {"annotation.compiler_end", "i32[5]", "compiler=\"blas\""},
    {"nn.batch_norm", "f32[2,3,4];f32[3];f32[3];f32[3];f32+[3]", NULL},
    {"nn.lrn", "f32[2,5,3,2]", "size=3, alpha=0.5, beta=0.75, bias=2"},
    {"nn.lrn", "f64[2,3,4]", "size=8"},
    {"reshape", "f32[3,4,5]", "newshape=[5, -1, 2]"},
    {"bind_dims", "i64+[3]", "prefix=\"d\""},
    {"reshape_dims", "f32[2,3,4];i64T[3]", NULL},
    {"reshape_dims", "f32[2,3,4];i64[4]", "allowzero=1"},
    {"broadcast_dims", "f32[3,1];i64T[3]", NULL},
    {"broadcast_dims", "f32[2,1,3,1];i64[2]", NULL},
    {"tile_dims", "f32[2,3];i64T[2]", NULL},
    {"tile_dims", "f32[2,3];i64[2]", NULL},
    {"range_dims", "f32[];f32[];f32[]", NULL},
    {"range_dims", "i32[];i32[];i32Z[]", NULL},
    {"topk_dims", "f32[3,5];i64T[1]", "axis=1"},
    {"count_dims", "f64[]", "min=1"},
    {"unpool_dims", "i64T[4]", "min=[0, 1, 2, 0]"},
    {"unpool_dims", "i32[2]", "min=[3, 0]"},
    {"shape_of", "f32[2,3,4]", "start=1"},
    {"split_params", "f32[3,6];i64T[3]", "axis=1, index=1"},
    {"split_params", "f32[3,6];i32[2]", "axis=-1, index=1"},
    {"window", "i64K[1]", "kind=\"hann\""},
    {"nonzero", "f32+[2,3];i64K[1]", NULL},
    {"nonzero", "i32[7];i64K[1]", NULL},
    {"compress", "f32[3,5];i32+[4];i64K[1]", "axis=1"},
    {"compress", "f32[6,2];u8+[6];i64K[1]", NULL},
    {"nonzero_dims", "f32Z[3,4]", NULL},
    {"unique", "i32Z[8];i64K[1]", "sorted=1"},
    {"unique", "f32[3,4,2];i64K[1]", "axis=1, sorted=0"},
    {"unique_dims", "i32Z[3,4]", "axis=-1"},
    {"compress_dims", "f32[3,5];i32Z[7]", "axis=1"},
    {"vision.non_max_suppression", "f32[2,6,4];f32[2,3,6];i64K[1];f32+[1];f32[1];i64K[1]", NULL},
    {"vision.non_max_suppression", "f64[1,7,4];f64[1,3,7];i64K[1];f64+[1];f64[1];i64K[1]",
     "center_point_box=1"},
    {"nms_dims", "f32[2,5,4];f32[2,2,5];i64K[1];f32+[1];f32[1]", "has_score_threshold=1"},
    {"window", "i64K[1]", "kind=\"hamming\", periodic=0, dtype=\"float64\""},
    {"window", "i32K[1]", "kind=\"blackman\", dtype=\"float16\""},
    {"count_dims", "i32T[1]", NULL},
    {"unsqueeze_dims", "f32[2,3];i64T[2]", NULL},
    {"unsqueeze_dims", "f32[2,3];i32[2]", NULL},
    {"squeeze_dims", "f32[1,3,1];i64T[2]", NULL},
    {"slice_params", "f32[4,5];i64I[2];i64I[2];i64T[2];i64I[2]", NULL},
    {"slice_params", "f32[4,5,3];i32[2];i32[2]", NULL},
    {"pad_dims", "f32[3,4];i64T[4]", NULL},
    {"pad_dims", "f32[3,0];i64T[4]", "pad_mode=\"reflect\""},
    {"resize_dims", "f32[2,3,4,5];f32+[4]", NULL},
    {"resize_dims", "f64[3,4];f64[2]", NULL}, /* scales below 0: invalid */
    {"resize_dims", "f32[3,4,2];f32+[3]", "upsample=1"},
    {"resize_dims", "i32[2,3,4];i64+[3]", "sizes=1"},
    {"resize_dims", "f32[3,4,5];i64[3]", "sizes=1"},
    {"resize_dims", "f32[2,0,4];i64+[3]", "sizes=1"}, /* an empty dim resized: invalid */
    {"reduce_dims", "f32[3,4,5];i64T[2]", NULL},
    {"reduce_dims", "f32[3,4,5];i32T[2]", "keepdims=0"},
    {"reduce_dims", "f32[2,3];i64I[2]", NULL},
    {"layout_transform", "f32[1,6,3,3]", "src_layout=\"NCHW\", dst_layout=\"NCHW4c\""},
    {"transpose", "i64[3,4,5]", "axes=[2, 0, 1]"},
    {"nn.batch_flatten", "f32[3,4,5]", NULL},
    {"concatenate", "f32[3,4];f32[3,2];f32[3,1]", "axis=1"},
    {"split", "f32[6,4]", "indices_or_sections=[1, 4]"},
    {"strided_slice", "f32[7,9]", "begin=[6, 1], end=[0, 8], strides=[-2, 3]"},
    {"take", "f32[5,4];i64I[3,2]", "axis=0"},
    {"broadcast_to", "f32[3,1]", "shape=[2, 3, 4]"},
    {"nn.pad", "f32[2,3]", "pad_width=[1, 2, 0, 1], pad_value=-7"},
    {"sum", "f32[3,4,5]", "axis=[0, 2]"},
    {"sum", "i32[3,4,5]", "axis=[1], keepdims=1"},
    {"mean", "f32[3,4,5]", "axis=[-1]"},
    {"max", "i64[3,4,5]", NULL},
    {"min", "f32[3,4,5]", "axis=[1]"},
    {"prod", "f32[3,4,5]", "axis=[2]"},
    {"argmax", "f32[3,4,5]", "axis=1"},
    {"argmin", "i32[3,4,5]", "axis=2, keepdims=0, select_last_index=1"},
    {"tile", "f32[2,3]", "reps=[2, 3]"},
    {"depth_to_space", "f32[1,8,2,3]", "block_size=2, mode=\"CRD\""},
    {"depth_to_space", "i32[2,9,2,1]", "block_size=3"},
    {"space_to_depth", "f32[1,2,4,6]", "block_size=2"},
    {"gather_elements", "f32[3,5];i64I[2,4]", "axis=1"},
    {"gather_nd", "f32[5,5,3];i64I[2,2,2]", NULL},
    {"gather_nd", "i32[2,5,3];i64I[2,4,1]", "batch_dims=1"},
    {"scatter_elements", "f32[4,5];i64I[3,4];f32[3,4]", "axis=1"},
    {"scatter_elements", "f32[5,4];i64I[3,4];f32[3,4]", "reduction=\"add\""},
    {"scatter_elements", "i32[4,5];i64I[3,4];i32[3,4]", "axis=-1, reduction=\"max\""},
    {"scatter_nd", "f32[5,5,3];i64I[4,2];f32[4,3]", NULL},
    {"scatter_nd", "f32[5,3];i64I[2,3,1];f32[2,3,3]", "reduction=\"mul\""},
    {"scatter_nd", "i64[5,5];i64I[2];i64[]", "reduction=\"min\""},
    {"one_hot", "i64I[3,2];f32[2]", "depth=5, axis=1"},
    {"one_hot", "f32[4];i32[2]", "depth=3"},
    {"reverse_sequence", "f32[5,3,2];i64I[3]", NULL},
    {"trilu", "f32[2,4,5];i64[]", NULL},
    {"trilu", "i8[3,6]", "upper=0"},
    {"eye_like", "f32[4,6]", "k=1, dtype=\"int32\""},
    {"arange", "f32[];f32[]", "n=7"},
    {"arange", "i32[];i32[]", "n=5"},
    {"random_uniform_like", "f32[3,4,5]", "seed=-3"},
    {"random_uniform_like", "f16[7,3]", NULL},
    {"text.tfidf", "i32T[2,6];i64T[5,3];i64S[5]", "max_skip_count=2, max_per_index=2"},
    {"text.tfidf", "i64T[7];i64T[4,3];i64S[4];f32[3]", "max_skip_count=9, mode=\"TFIDF\""},
    {"text.tfidf", "i32T[3,9];i64T[6,2];i64S[6];f32[5]", "max_skip_count=1, mode=\"IDF\""},
    {"text.tfidf", "i64T[1];i64T[2,2];i64S[3]", "max_skip_count=9223372036854775807"},
    {"text.tfidf", "i64T[2,3];i64T[2,3];i64S[3]", "max_skip_count=9223372036854775807"},
    {"det", "f32[3,4,4]", NULL},
    {"det", "f64[5,5]", NULL},
    {"det", "f32[2,2,1,1]", NULL},
    {"det", "f16[2,3,3]", NULL},
    {"random_uniform_like", "f64[6]", "seed=99"},
    {"cumsum", "f32[3,6]", "axis=1, exclusive=1"},
    {"cumsum", "i32[5,4]", "reverse=1"},
    {"cumsum", "f64[3,17]", "axis=-1, reverse=1, exclusive=1"},
    {"cumsum", "f32[3,6];i64T[]", "exclusive=1"},
    {"topk", "f32[3,7]", "k=3, axis=1"},
    {"topk", "i8[6,4]", "k=4, axis=0, largest=0"},
    {"nn.nll_loss", "f32[3,5,4];i64T[3,4];f32[5]", "ignore_index=-1"},
    {"nn.nll_loss", "f64[4,5];i32T[4]", "ignore_index=-1"},
    {"nn.nll_loss_weight", "f32[2,5,3,2];i64T[2,3,2];f32[5]", "ignore_index=-1"},
    {"image.resize", "f32[2,3,4,5]", "size=[2, 3, 7, 3], method=\"cubic\", exclude_outside=1"},
    {"image.resize", "i32[2,5,4]",
     "size=[3, 2, 9], coordinate_transformation_mode=\"asymmetric\", "
     "rounding_method=\"round_prefer_ceil\""},
    {"image.resize", "f64[3,4,5]",
     "size=[3, 6, 2], scales=[1, 1.5, 0.5], method=\"linear\", "
     "coordinate_transformation_mode=\"tf_crop_and_resize\", roi=[0, 0.1, 0.2, 1, 0.9, 1.3], "
     "extrapolation_value=-3"},
    {"image.grid_sample", "f32[2,3,4,5];f32[2,3,6,2]", NULL},
    {"image.grid_sample", "f32[1,2,5,4];f32[1,4,3,2]",
     "method=\"bicubic\", padding_mode=\"reflection\""},
    {"image.grid_sample", "f64[1,2,3,4];f64[1,3,3,2]",
     "method=\"nearest\", padding_mode=\"border\", align_corners=1"},
    {"image.roi_align", "f32[2,3,6,7];f32[4,4];i64S[4]",
     "output_height=3, output_width=2, spatial_scale=3"},
    {"image.roi_align", "f64[2,2,5,5];f64[3,4];i32S[3]",
     "mode=\"max\", sampling_ratio=2, coordinate_transformation_mode=\"output_half_pixel\", "
     "spatial_scale=4"},
    {"image.roi_align", "f32[3,1,4,3];f32[5,4];i64S[5]", "mode=\"max\", spatial_scale=9"},
    {"image.roi_align", "f16[1,2,3,3];f16[2,4];i64S[2]", "output_height=2, spatial_scale=2"}, /* the
    quantized ops (qnn.c): per-tensor and per-channel parameters, mixed int8 and uint8 operands */
    {"qnn.quantize", "f32[3,4,5];f32+[];i8[]", "out_dtype=\"int8\""},
    {"qnn.quantize", "f32[2,3,4];f32+[3];u8[3]", "axis=1, out_dtype=\"uint8\""},
    {"qnn.quantize", "f32[2,3];f32+[1];i32[1]", "out_dtype=\"int32\""},
    {"qnn.dequantize", "i8[3,4,5];f32+[];i8[]", NULL},
    {"qnn.dequantize", "u8[2,3,4];f32+[3];u8[3]", "axis=1"},
    {"qnn.dequantize", "i32[3,5];f32+[5];i32[5]", "axis=1"},
    {"qnn.requantize", "i32[2,3,4];f32+[3];i32T[];f32+[];i8[]", "axis=1"},
    {"qnn.requantize", "i32[2,5];f32+[];i32[];f32+[];u8[]", "out_dtype=\"uint8\""},
    {"qnn.requantize", "i32[2,3,4];f32+[3];i32T[];f32+[];i8[]", "axis=1, rounding=\"TFLITE\""},
    {"qnn.quantize", "f32[2,3,4];f32+[3];u8[3]",
     "axis=1, out_dtype=\"uint8\", rounding=\"TFLITE\""},
    {"fixed_point_multiply", "i32[3,4];i32[4];i32T[4]", NULL},
    {"fixed_point_multiply", "i32[3,4];i32[3,1];i32T[]", "rounding=\"UPWARD\""},
    {"qnn.add", "i8[3,4];i8[4];f32+[];i8[];f32+[];i8[];f32+[];i8[]", NULL},
    {"qnn.mul", "u8[2,3];u8[2,3];f32+[];u8[];f32+[];u8[];f32+[];u8[]", NULL},
    {"qnn.conv2d", "u8[1,4,7,6];i8[6,2,3,3];u8[];i8[];f32+[];f32+[]",
     "padding=[1, 0, 2, 1], strides=[2, 1], groups=2"},
    {"qnn.conv2d", "i8[1,3,5,5];i8[4,3,3,3];i8[];i8[4];f32+[];f32+[4]", "padding=[1, 1, 1, 1]"},
    {"qnn.dense", "i8[5,12];i8[7,12];i8[];i8[7];f32+[];f32+[7]", NULL},
    {"qnn.batch_matmul", "u8[2,3,4];i8[4,5];u8[];i8[];f32+[];f32+[]", NULL},
    {"qnn.batch_matmul", "i8[2,3,4];i8[2,5,4];i8[];i8[5];f32+[];f32+[5]", "transpose_b=1"},
    {"qnn.concatenate", "i8[3,4];i8[3,2];f32+[];f32+[];i8[];i8[];f32+[];i8[]", "axis=1"},
};

static int parse_dtype(const char *s, size_t len, kiln_dtype *dt) {
    static const struct {
        const char *name;
        kiln_dtype dt;
    } names[] = {{"f32", KILN_FLOAT32}, {"f64", KILN_FLOAT64}, {"f16", KILN_FLOAT16},
                 {"i8", KILN_INT8},     {"u8", KILN_UINT8},    {"i32", KILN_INT32},
                 {"i64", KILN_INT64},   {"bool", KILN_BOOL},   {"i16", KILN_INT16}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strlen(names[k].name) == len && !strncmp(names[k].name, s, len)) {
            *dt = names[k].dt;
            return 1;
        }
    return 0;
}

typedef struct {
    int n;
    kiln_dtype dt[8];
    char positive[8]; /* '+', 'M', 'Z', 'I', 'T', 'S', 'K' or 0 */
    int nd[8];
    int64_t dims[8][8];
} input_specs;

static int parse_inputs(const char *s, input_specs *in) {
    in->n = 0;
    while (*s && in->n < 8) {
        const char *b = strchr(s, '[');
        if (!b)
            return 0;
        int k = in->n;
        in->positive[k] = strchr("+MZITSK", b[-1]) ? b[-1] : 0;
        if (!parse_dtype(s, (size_t)(b - s - (in->positive[k] != 0)), &in->dt[k]))
            return 0;
        in->nd[k] = 0;
        const char *p = b + 1;
        while (*p && *p != ']') {
            char *end;
            in->dims[k][in->nd[k]++] = strtoll(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
        in->n++;
        s = *p ? p + 1 : p;
        if (*s == ';')
            s++;
    }
    return 1;
}

static kiln_ndarray *workload_value(const input_specs *in, int k, uint64_t *seed) {
    kiln_ndarray *a = kiln_ndarray_empty(in->dt[k], in->nd[k], in->dims[k]);
    if (in->dt[k] == KILN_FLOAT16) { /* tu_fill does not write float16 */
        for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
            ((uint16_t *)kiln_ndarray_data(a))[i] =
                te_float_to_half((float)(tu_uniform(seed) * 4 - 2));
    } else {
        tu_fill(a, seed);
    }
    if (!in->positive[k])
        return a;
    if (in->positive[k] == 'I' || in->positive[k] == 'T' || in->positive[k] == 'S' ||
        in->positive[k] == 'K') {
        for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
            int64_t v = in->positive[k] == 'I'   ? (i * 7) % 10 - 5
                        : in->positive[k] == 'T' ? (i * 7) % 6 - 1
                        : in->positive[k] == 'K' ? i + 3
                                                 : i / 2;
            if (in->dt[k] == KILN_INT32)
                ((int32_t *)kiln_ndarray_data(a))[i] = (int32_t)v;
            else
                ((int64_t *)kiln_ndarray_data(a))[i] = v;
        }
        return a;
    }
    if (in->positive[k] != '+') {
        for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
            double v = in->positive[k] == 'Z' ? (i % 4 == 0   ? 0
                                                 : i % 4 == 1 ? -1
                                                              : 3)
                                              : (i % 4 == 1 ? -1e300 : tu_uniform(seed) * 80 - 40);
            void *d = kiln_ndarray_data(a);
            switch (in->dt[k]) {
            case KILN_INT8: ((int8_t *)d)[i] = v < -1e299 ? INT8_MIN : (int8_t)v; break;
            case KILN_INT32: ((int32_t *)d)[i] = v < -1e299 ? INT32_MIN : (int32_t)v; break;
            case KILN_INT64: ((int64_t *)d)[i] = v < -1e299 ? INT64_MIN : (int64_t)v; break;
            case KILN_UINT8: ((uint8_t *)d)[i] = v < -1e299 ? 0 : (uint8_t)(int)v; break;
            default: break;
            }
        }
        return a;
    }
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
        void *d = kiln_ndarray_data(a);
        switch (in->dt[k]) {
        case KILN_FLOAT32: ((float *)d)[i] = fabsf(((float *)d)[i]) + 0.125f; break;
        case KILN_FLOAT64: ((double *)d)[i] = fabs(((double *)d)[i]) + 0.125; break;
        case KILN_INT32: ((int32_t *)d)[i] = abs(((int32_t *)d)[i]) + 1; break;
        case KILN_INT64: ((int64_t *)d)[i] = llabs(((int64_t *)d)[i]) + 1; break;
        default: break;
        }
    }
    return a;
}

/* Add workload w (or the op's default) to g: its inputs as variables, the
 * call, and tuple-gets of a tuple; writes the output ids. Returns the
 * output count, or -1 if it does not type-check. */
static int add_workload(kiln_graph *g, int widx, const char *op, const input_specs *in,
                        const char *attrs, int *outs) {
    int ids[8];
    for (int k = 0; k < in->n; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "w%d_in%d", widx, k);
        if (in->positive[k] == 'K') { /* a constant input (positive values) */
            uint64_t seed = 77 + (uint64_t)k;
            kiln_ndarray *a = workload_value(in, k, &seed);
            ids[k] = kiln_graph_const(g, nm, a);
            kiln_ndarray_free(a);
            continue;
        }
        ids[k] = kiln_graph_var(g, nm, in->dt[k], in->nd[k], in->dims[k], NULL);
    }
    char nm[64];
    snprintf(nm, sizeof nm, "w%d_%s", widx, op);
    int c = kiln_graph_call(g, op, in->n, ids, attrs, nm);
    if (c < 0 || graph_infer_node(g, c) != KILN_OK)
        return -1;
    const gnode *n = graph_node(g, c);
    if (!n->type.is_tuple) {
        outs[0] = c;
        return 1;
    }
    for (int k = 0; k < n->type.n && k < 8; k++) {
        outs[k] = kiln_graph_tuple_get(g, c, k, NULL);
        if (outs[k] < 0 || graph_infer_node(g, outs[k]) != KILN_OK)
            return -1;
    }
    return n->type.n;
}

/* |a - b| within tol * (1 + |b|), NaN matching NaN, infinities equal;
 * integers and bools exactly. */
static int agree(const kiln_ndarray *a, const kiln_ndarray *b, double tol, int64_t *where) {
    kiln_dtype dt = kiln_ndarray_dtype(a);
    if (dt != kiln_ndarray_dtype(b) || kiln_ndarray_numel(a) != kiln_ndarray_numel(b)) {
        *where = -1;
        return 0;
    }
    if (tir_is_int_dtype(dt)) {
        size_t es = kiln_dtype_size(dt);
        for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
            if (memcmp((const char *)kiln_ndarray_data(a) + (size_t)i * es,
                       (const char *)kiln_ndarray_data(b) + (size_t)i * es, es)) {
                *where = i;
                return 0;
            }
        return 1;
    }
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
        double x = at(a, i), y = at(b, i);
        if (isnan(x) && isnan(y))
            continue;
        if (x == y)
            continue;
        if (!(fabs(x - y) <= tol * (1 + fabs(y)))) {
            *where = i;
            return 0;
        }
    }
    return 1;
}

/* g with outputs outs[nouts] (output k from op names[k], workload owner[k])
 * evaluated by the interpreter and compiled under `schedule` ("naive": one
 * kernel per op, unfused; NULL: the default schedules, vectorized) on the
 * inputs vals named vnames: every output must agree. */
static void compare_compiled(kiln_graph *g, int nouts, const int *outs, const char *const *names,
                             const int *owner, int nvals, kiln_ndarray *const *vals,
                             char (*vnames)[32], const char *schedule) {
    CHECK_EQ_INT(kiln_graph_set_outputs(g, nouts, outs, NULL), KILN_OK);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    /* the interpreter */
    kiln_ndarray **ref = calloc((size_t)nouts, sizeof *ref);
    kiln_status st = graph_eval(g, nvals, (const kiln_ndarray *const *)vals, 0, ref);
    CHECK_EQ_INT(st, KILN_OK);
    if (st != KILN_OK)
        fprintf(stderr, "graph_eval: %s\n", kiln_last_error());
    /* the kernels, compiled once */
    kiln_build_options *o = kiln_build_options_new();
    if (schedule) {
        kiln_build_options_set(o, "schedule", schedule);
        kiln_build_options_set(o, "fuse", "0");
        kiln_build_options_set(o, "opt-level", "0");
    }
    kiln_build_options_set(o, "cflags", "-O1 -march=native");
    const char *pkg = test_tmp_path("interp_ops.tar");
    st = kiln_graph_compile(g, pkg, o);
    kiln_build_options_free(o);
    CHECK_EQ_INT(st, KILN_OK);
    if (st != KILN_OK)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
    kiln_executor *ex = st == KILN_OK ? kiln_executor_load(pkg) : NULL;
    CHECK(st != KILN_OK || ex != NULL);
    for (int i = 0; ex && i < nvals; i++)
        CHECK_EQ_INT(kiln_executor_set_input(ex, vnames[i], vals[i]), KILN_OK);
    if (ex)
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
    int bad = 0;
    for (int k = 0; ex && ref && st == KILN_OK && k < nouts; k++) {
        const kiln_ndarray *got = kiln_executor_output(ex, k);
        int64_t where = 0;
        if (!ref[k] || !got || !agree(got, ref[k], 2e-6, &where)) {
            bad++;
            fprintf(stderr, "op %s (workload %d, output %d): compiled and interpreted differ",
                    names[k], owner[k], k);
            if (got && ref[k] && where >= 0)
                fprintf(stderr, " at %lld: %.9g vs %.9g", (long long)where, at(got, where),
                        at(ref[k], where));
            fprintf(stderr, "\n");
        }
    }
    CHECK_EQ_INT(bad, 0);
    kiln_executor_free(ex);
    for (int k = 0; ref && k < nouts; k++)
        kiln_ndarray_free(ref[k]);
    free(ref);
}

/* Every cast between kiln's dtypes, on values every dtype holds (0 to 100,
 * fractions for the float-to-integer truncation; bool 0 and 1), unfused
 * under the naive schedule and under the default (vectorized) one. Values
 * out of an integer dtype's range are left out: the interpreter saturates
 * them, the generated C converts them as the C compiler does. */
static void test_cast_matrix(void) {
    static const kiln_dtype dts[] = {KILN_FLOAT32, KILN_FLOAT64, KILN_FLOAT16, KILN_BFLOAT16,
                                     KILN_INT8,    KILN_UINT8,   KILN_INT32,   KILN_INT64,
                                     KILN_BOOL,    KILN_INT16,   KILN_UINT16,  KILN_UINT32,
                                     KILN_UINT64};
    enum { ND = sizeof dts / sizeof dts[0], N = 32 };
    for (int pass = 0; pass < 2; pass++) {
        kiln_graph *g = kiln_graph_new();
        kiln_ndarray *vals[ND];
        char vnames[ND][32];
        int outs[ND * ND], owner[ND * ND], nouts = 0;
        const char *names[ND * ND];
        int64_t n = N;
        for (int f = 0; f < ND; f++) {
            double v[N];
            for (int i = 0; i < N; i++)
                v[i] = dts[f] == KILN_BOOL ? i % 3 == 0 : (double)((i * 37) % 101) + (i % 4) * 0.25;
            vals[f] = make(dts[f], 1, &n, v);
            snprintf(vnames[f], sizeof vnames[f], "from_%s", kiln_dtype_name(dts[f]));
            int x = kiln_graph_var(g, vnames[f], dts[f], 1, &n, NULL);
            for (int t = 0; t < ND; t++) {
                char attrs[48];
                snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(dts[t]));
                names[nouts] = "cast";
                owner[nouts] = f * ND + t;
                outs[nouts++] = kiln_graph_call(g, "cast", 1, &x, attrs, NULL);
            }
        }
        compare_compiled(g, nouts, outs, names, owner, ND, vals, vnames, pass ? NULL : "naive");
        for (int f = 0; f < ND; f++)
            kiln_ndarray_free(vals[f]);
        kiln_graph_free(g);
    }
}

/* The integer binary ops on int16 and the unsigned dtypes, on values across
 * each range (uint64 past 2^63, zero divisors, shifts past the width),
 * interpreted and compiled (naive, then the default vectorized schedule):
 * unsigned compare, division and shifts agree exactly. */
static void test_unsigned_compiled(void) {
    static const kiln_dtype dts[] = {KILN_INT16, KILN_UINT16, KILN_UINT32, KILN_UINT64};
    static const char *const ops[] = {"add",  "subtract",  "multiply",   "divide",
                                      "mod",  "floor_mod", "maximum",    "minimum",
                                      "less", "greater",   "left_shift", "right_shift"};
    /* and reductions of x, whose identities are each dtype's bounds */
    static const char *const reds[] = {"max", "min", "sum", "argmax", "argmin"};
    enum {
        ND = sizeof dts / sizeof dts[0],
        NB = sizeof ops / sizeof ops[0],
        NO = NB + sizeof reds / sizeof reds[0],
        N = 24
    };
    for (int pass = 0; pass < 2; pass++) {
        kiln_graph *g = kiln_graph_new();
        kiln_ndarray *vals[2 * ND];
        char vnames[2 * ND][32];
        int outs[ND * NO], owner[ND * NO], nouts = 0;
        const char *names[ND * NO];
        int64_t n = N;
        for (int d = 0; d < ND; d++) {
            double hi = dts[d] == KILN_INT16    ? 32767.0
                        : dts[d] == KILN_UINT16 ? 65535.0
                        : dts[d] == KILN_UINT32 ? 4294967295.0
                                                : 18446744073709549568.0;
            double lo = dts[d] == KILN_INT16 ? -32768.0 : 0;
            double x[N], y[N];
            for (int i = 0; i < N; i++) {
                x[i] = i % 3 == 0 ? hi - i : i % 3 == 1 ? lo + i * 7 : (double)(i * 1000 + 3);
                y[i] = i % 4 == 0 ? 0 : i % 4 == 1 ? i % 17 : i % 4 == 2 ? hi - 3 * i : lo + i;
            }
            int ids[2];
            for (int k = 0; k < 2; k++) {
                vals[2 * d + k] = make(dts[d], 1, &n, k ? y : x);
                snprintf(vnames[2 * d + k], 32, "%s_%c", kiln_dtype_name(dts[d]), k ? 'y' : 'x');
                ids[k] = kiln_graph_var(g, vnames[2 * d + k], dts[d], 1, &n, NULL);
            }
            for (int o = 0; o < NO; o++) {
                names[nouts] = o < NB ? ops[o] : reds[o - NB];
                owner[nouts] = d;
                outs[nouts] = kiln_graph_call(g, names[nouts], o < NB ? 2 : 1, ids, NULL, NULL);
                nouts++;
            }
        }
        compare_compiled(g, nouts, outs, names, owner, 2 * ND, vals, vnames, pass ? NULL : "naive");
        for (int k = 0; k < 2 * ND; k++)
            kiln_ndarray_free(vals[k]);
        kiln_graph_free(g);
    }
}

static void test_op_table_against_compiled(void) {
    kiln_op_registry *reg = ops_default_registry();
    (void)reg;
    kiln_graph *g = kiln_graph_new();
    int outs[512], nouts = 0, owner[512];
    const char *names[512];
    int nw = 0, covered = 0, with_compute = 0;
    kiln_ndarray *vals[512];
    char vnames[512][32];
    int nvals = 0;
    uint64_t seed = 2024;
    /* listed workloads, then a default one for unlisted elementwise ops */
    for (int r = 0; r < ops_builtin_count(); r++) {
        const kiln_op_def *op = ops_builtin(r);
        if (!op->compute)
            continue;
        /* an op whose compute is its body's (composite) takes a graph
           attribute, which attribute text cannot hold: test_byoc compiles
           composites against the graphs they came from */
        int body = 0;
        for (const attr_schema *a = op->attrs; a && a->name; a++)
            body |= a->kind == GA_GRAPH && a->required;
        if (body)
            continue;
        with_compute++;
        int listed = 0;
        for (size_t w = 0; w < sizeof g_work / sizeof g_work[0] + 1; w++) {
            int is_default = w == sizeof g_work / sizeof g_work[0];
            if (is_default && (listed || op->pattern > OP_BROADCAST))
                break;
            if (!is_default && strcmp(g_work[w].op, op->name))
                continue;
            const char *spec = is_default ? (op->min_in == 2 ? "f32[3,4,5];f32[4,5]" : "f32[3,4,5]")
                                          : g_work[w].inputs;
            input_specs in;
            CHECK(parse_inputs(spec, &in));
            if (is_default && in.n < op->min_in)
                break;
            int o[8];
            int k = add_workload(g, nw, op->name, &in, is_default ? NULL : g_work[w].attrs, o);
            if (k < 0) {
                fprintf(stderr, "workload %s (%s): %s\n", op->name, spec, kiln_last_error());
                CHECK(is_default); /* a listed workload must type-check */
                break;
            }
            for (int j = 0; j < in.n; j++) {
                if (in.positive[j] == 'K') /* a constant of the graph */
                    continue;
                snprintf(vnames[nvals], sizeof vnames[nvals], "w%d_in%d", nw, j);
                vals[nvals++] = workload_value(&in, j, &seed);
            }
            for (int j = 0; j < k; j++) {
                names[nouts] = op->name;
                owner[nouts] = nw;
                outs[nouts++] = o[j];
            }
            nw++;
            listed = 1;
        }
        if (listed)
            covered++;
        else
            printf("  (no sample workload for %s)\n", op->name);
    }
    printf("op table: %d rows with a compute, %d with a workload (%d workloads)\n", with_compute,
           covered, nw);
    CHECK_EQ_INT(covered, with_compute);
    compare_compiled(g, nouts, outs, names, owner, nvals, vals, vnames, "naive");
    for (int i = 0; i < nvals; i++)
        kiln_ndarray_free(vals[i]);
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_division_rule), TEST(test_dtype_arithmetic), TEST(test_unsigned_arithmetic),
          TEST(test_casts), TEST(test_intrinsics), TEST(test_select_skips_lanes),
          TEST(test_reductions), TEST(test_dependent_reduce_domains), TEST(test_argmax_two_stages),
          TEST(test_stages_and_sizes), TEST(test_errors), TEST(test_cast_matrix),
          TEST(test_unsigned_compiled), TEST(test_op_table_against_compiled))
