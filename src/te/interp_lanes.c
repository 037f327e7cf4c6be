/* interp_lanes.c: lane arithmetic of the reference interpreter
 * (interp_lanes.h): each tensor-expression operation on arrays of lanes, in
 * the dtype's own arithmetic, as the generated C computes it. */
#include <math.h>
#include <string.h>

#include "../base/intdiv.h"
#include "interp_lanes.h"

/* ---- float16 and bfloat16 --------------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float te_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
    if (e == 0) {                                        /* zero, subnormal: m * 2^-24 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t te_float_to_half(float f) {
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);   /* rounds past 65504: inf */
    if (a < 0x38800000u) {                   /* below 2^-14: subnormal */
        float v = bits_f32(a) * 16777216.0f; /* in units of 2^-24, exact */
        uint32_t q = (uint32_t)nearbyintf(v);
        return (uint16_t)(sign | q); /* q == 1024 is the smallest normal */
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round to nearest even at bit 13 */
    return (uint16_t)(sign | ((r - (112u << 23)) >> 13));
}

float te_bf16_to_float(uint16_t h) {
    return bits_f32((uint32_t)h << 16);
}

uint16_t te_float_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Round float lanes to the precision of dt (float16, bfloat16). */
void te_round_lanes(kiln_dtype dt, float *r, int n) {
    if (dt == KILN_FLOAT16)
        for (int i = 0; i < n; i++)
            r[i] = te_half_to_float(te_float_to_half(r[i]));
    else if (dt == KILN_BFLOAT16)
        for (int i = 0; i < n; i++)
            r[i] = te_bf16_to_float(te_float_to_bf16(r[i]));
}

/* ---- integer conversions ---------------------------------------------------- */

int64_t te_wrap_int(kiln_dtype dt, int64_t v) {
    switch (dt) {
    case KILN_INT8: return (int8_t)(uint8_t)(uint64_t)v;
    case KILN_UINT8: return (uint8_t)(uint64_t)v;
    case KILN_INT16: return (int16_t)(uint16_t)(uint64_t)v;
    case KILN_UINT16: return (uint16_t)(uint64_t)v;
    case KILN_INT32: return (int32_t)(uint32_t)(uint64_t)v;
    case KILN_UINT32: return (uint32_t)(uint64_t)v;
    case KILN_BOOL: return v != 0;
    default: return v;
    }
}

/* A float converted to integer dtype dt: truncated, saturating, NaN 0
 * (a uint64 past INT64_MAX as its int64 bit pattern). */
int64_t te_float_to_int(double x, kiln_dtype dt) {
    if (dt == KILN_BOOL)
        return x != 0; /* NaN too, as C converts */
    if (x != x)
        return 0;
    int64_t lo = kiln_dtype_int_min(dt), hi = kiln_dtype_int_max(dt);
    if (x <= (double)lo)
        return lo;
    if (dt == KILN_UINT64 && x >= 9223372036854775808.0)
        return x >= 18446744073709551616.0 ? -1 : (int64_t)(uint64_t)x;
    if (dt != KILN_UINT64 && (x >= 9223372036854775808.0 || x >= (double)hi))
        return hi;
    return (int64_t)x;
}

/* x as a double: uint64 lanes hold bit patterns */
static double int_to_double(kiln_dtype dt, int64_t x) {
    return dt == KILN_UINT64 ? (double)(uint64_t)x : (double)x;
}

/* ---- lane arithmetic ------------------------------------------------------------------- */

/* The ops of int_binary whose uint64 form differs from int64's (division,
 * remainder, min, max); 0 for the others. Floor and truncating division
 * agree on unsigned values; x / 0 = x % 0 = 0 (base/intdiv.h). */
static int u64_binary(tir_op op, const int64_t *a, int sa, const int64_t *b, int sb, int64_t *r,
                      int n) {
    if (op != TIR_DIV && op != TIR_MOD && op != TIR_FLOORDIV && op != TIR_FLOORMOD &&
        op != TIR_MIN && op != TIR_MAX)
        return 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = (uint64_t)a[i * sa], y = (uint64_t)b[i * sb];
        r[i] = (int64_t)(op == TIR_DIV || op == TIR_FLOORDIV   ? kiln_udiv_u64(x, y)
                         : op == TIR_MOD || op == TIR_FLOORMOD ? kiln_umod_u64(x, y)
                         : op == TIR_MIN                       ? (x < y ? x : y)
                                                               : (x > y ? x : y));
    }
    return 1;
}

static void int_binary(tir_op op, kiln_dtype dt, const int64_t *a, int sa, const int64_t *b, int sb,
                       int64_t *r, int n) {
    if (dt == KILN_UINT64 && u64_binary(op, a, sa, b, sb, r, n))
        return;
    switch (op) {
    case TIR_ADD:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, (int64_t)((uint64_t)a[i * sa] + (uint64_t)b[i * sb]));
        break;
    case TIR_SUB:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, (int64_t)((uint64_t)a[i * sa] - (uint64_t)b[i * sb]));
        break;
    case TIR_MUL:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, (int64_t)((uint64_t)a[i * sa] * (uint64_t)b[i * sb]));
        break;
    case TIR_DIV:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, kiln_idiv_trunc_i64(a[i * sa], b[i * sb]));
        break;
    case TIR_MOD:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, kiln_imod_trunc_i64(a[i * sa], b[i * sb]));
        break;
    case TIR_FLOORDIV:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, kiln_idiv_floor_i64(a[i * sa], b[i * sb]));
        break;
    case TIR_FLOORMOD:
        for (int i = 0; i < n; i++)
            r[i] = te_wrap_int(dt, kiln_imod_floor_i64(a[i * sa], b[i * sb]));
        break;
    case TIR_MIN:
        for (int i = 0; i < n; i++)
            r[i] = a[i * sa] < b[i * sb] ? a[i * sa] : b[i * sb];
        break;
    case TIR_MAX:
        for (int i = 0; i < n; i++)
            r[i] = a[i * sa] > b[i * sb] ? a[i * sa] : b[i * sb];
        break;
    default: KILN_ASSERT(0);
    }
}

/* One loop over the lanes per case, the switch outside it. */
#define LANE_LOOP(T, EXPR)                                                                         \
    if (sa && sb) {                                                                                \
        LANE_LOOP1(T, a[i], b[i], EXPR)                                                            \
    } else if (sa) {                                                                               \
        LANE_LOOP1(T, a[i], b[0], EXPR)                                                            \
    } else {                                                                                       \
        LANE_LOOP1(T, a[0], b[i * sb], EXPR)                                                       \
    }                                                                                              \
    break
#define LANE_LOOP1(T, A, B, EXPR)                                                                  \
    for (int i = 0; i < n; i++) {                                                                  \
        T x = A, y = B;                                                                            \
        (void)y;                                                                                   \
        r[i] = (EXPR);                                                                             \
    }

/* x floormod y as the generated helper: the remainder has y's sign, and a
 * zero remainder y's sign too. */
static float floormod_f32(float x, float y) {
    float m = fmodf(x, y);
    return m != 0 ? ((y < 0) != (m < 0) ? m + y : m) : copysignf(0.0f, y);
}

static double floormod_f64(double x, double y) {
    double m = fmod(x, y);
    return m != 0 ? ((y < 0) != (m < 0) ? m + y : m) : copysign(0.0, y);
}

/* Float arithmetic in type T (float or double) with libm suffix SUF; min
 * and max propagate NaN as the generated code's helpers do. */
#define FLOAT_BINARY(NAME, T, SUF, FLOORMOD)                                                       \
    static void NAME(tir_op op, const T *a, int sa, const T *b, int sb, T *r, int n) {             \
        switch (op) {                                                                              \
        case TIR_ADD: LANE_LOOP(T, x + y);                                                         \
        case TIR_SUB: LANE_LOOP(T, x - y);                                                         \
        case TIR_MUL: LANE_LOOP(T, x *y);                                                          \
        case TIR_DIV: LANE_LOOP(T, x / y);                                                         \
        case TIR_MOD: LANE_LOOP(T, fmod##SUF(x, y));                                               \
        case TIR_FLOORDIV: LANE_LOOP(T, floor##SUF(x / y));                                        \
        case TIR_FLOORMOD: LANE_LOOP(T, FLOORMOD(x, y));                                           \
        case TIR_MIN: LANE_LOOP(T, (x < y || x != x) ? x : y);                                     \
        case TIR_MAX: LANE_LOOP(T, (x > y || x != x) ? x : y);                                     \
        default: KILN_ASSERT(0);                                                                   \
        }                                                                                          \
    }
FLOAT_BINARY(f32_binary, float, f, floormod_f32)
FLOAT_BINARY(f64_binary, double, , floormod_f64)

#define COMPARE_AS(T)                                                                              \
    do {                                                                                           \
        const T *x_ = (const T *)av, *y_ = (const T *)bv;                                          \
        switch (op) {                                                                              \
        case TIR_EQ: CMP_LOOP(==);                                                                 \
        case TIR_NE: CMP_LOOP(!=);                                                                 \
        case TIR_LT: CMP_LOOP(<);                                                                  \
        case TIR_LE: CMP_LOOP(<=);                                                                 \
        case TIR_GT: CMP_LOOP(>);                                                                  \
        case TIR_GE: CMP_LOOP(>=);                                                                 \
        default: KILN_ASSERT(0);                                                                   \
        }                                                                                          \
    } while (0)
#define CMP_LOOP(OP)                                                                               \
    for (int i = 0; i < n; i++)                                                                    \
        r[i] = x_[i * sa] OP y_[i * sb];                                                           \
    break

/* Intrinsic f of float type T; returns 0 for an unknown f. */
#define FLOAT_CALL(NAME, T, SUF)                                                                   \
    static int NAME(tir_intrin f, const T *a, int sa, const T *b, int sb, T *r, int n) {           \
        switch (f) {                                                                               \
        case TIR_EXP: LANE_LOOP(T, exp##SUF(x));                                                   \
        case TIR_LOG: LANE_LOOP(T, log##SUF(x));                                                   \
        case TIR_SQRT: LANE_LOOP(T, sqrt##SUF(x));                                                 \
        case TIR_RSQRT: LANE_LOOP(T, (T)1 / sqrt##SUF(x));                                         \
        case TIR_TANH: LANE_LOOP(T, tanh##SUF(x));                                                 \
        case TIR_SIGMOID: LANE_LOOP(T, (T)1 / ((T)1 + exp##SUF(-x)));                              \
        case TIR_ERF: LANE_LOOP(T, erf##SUF(x));                                                   \
        case TIR_POW: LANE_LOOP(T, pow##SUF(x, y));                                                \
        case TIR_FLOOR: LANE_LOOP(T, floor##SUF(x));                                               \
        case TIR_CEIL: LANE_LOOP(T, ceil##SUF(x));                                                 \
        case TIR_ABS: LANE_LOOP(T, fabs##SUF(x));                                                  \
        case TIR_ROUND: LANE_LOOP(T, nearbyint##SUF(x));                                           \
        case TIR_SIN: LANE_LOOP(T, sin##SUF(x));                                                   \
        case TIR_COS: LANE_LOOP(T, cos##SUF(x));                                                   \
        case TIR_TAN: LANE_LOOP(T, tan##SUF(x));                                                   \
        case TIR_ASIN: LANE_LOOP(T, asin##SUF(x));                                                 \
        case TIR_ACOS: LANE_LOOP(T, acos##SUF(x));                                                 \
        case TIR_ATAN: LANE_LOOP(T, atan##SUF(x));                                                 \
        case TIR_SINH: LANE_LOOP(T, sinh##SUF(x));                                                 \
        case TIR_COSH: LANE_LOOP(T, cosh##SUF(x));                                                 \
        case TIR_ASINH: LANE_LOOP(T, asinh##SUF(x));                                               \
        case TIR_ACOSH: LANE_LOOP(T, acosh##SUF(x));                                               \
        case TIR_ATANH: LANE_LOOP(T, atanh##SUF(x));                                               \
        default: return 0;                                                                         \
        }                                                                                          \
        return 1;                                                                                  \
    }
FLOAT_CALL(f32_call, float, f)
FLOAT_CALL(f64_call, double, )

void te_lanes_arith(tir_op op, kiln_dtype dt, const void *a, int sa, const void *b, int sb, void *r,
                    int n) {
    switch (te_vkind_of(dt)) {
    case TE_K_I64: int_binary(op, dt, a, sa, b, sb, r, n); break;
    case TE_K_F32:
        f32_binary(op, a, sa, b, sb, r, n);
        te_round_lanes(dt, r, n);
        break;
    case TE_K_F64: f64_binary(op, a, sa, b, sb, r, n); break;
    }
}

void te_lanes_compare(tir_op op, kiln_dtype dt, const void *av, int sa, const void *bv, int sb,
                      int64_t *r, int n) {
    switch (te_vkind_of(dt)) {
    case TE_K_I64:
        if (dt == KILN_UINT64)
            COMPARE_AS(uint64_t);
        else
            COMPARE_AS(int64_t);
        break;
    case TE_K_F32: COMPARE_AS(float); break;
    case TE_K_F64: COMPARE_AS(double); break;
    }
}

int te_lanes_call(tir_intrin f, kiln_dtype dt, const void *a, int sa, const void *b, int sb,
                  void *r, int n) {
    if (!b)
        b = a;
    switch (te_vkind_of(dt)) {
    case TE_K_F32:
        if (!f32_call(f, a, sa, b, sb, r, n))
            return 0;
        te_round_lanes(dt, r, n);
        return 1;
    case TE_K_F64: return f64_call(f, a, sa, b, sb, r, n);
    case TE_K_I64: break;
    }
    const int64_t *x = a;
    int64_t *y = r;
    if (f == TIR_ABS && kiln_dtype_is_unsigned(dt)) {
        for (int i = 0; i < n; i++)
            y[i] = x[i * sa];
        return 1;
    }
    if (f == TIR_ABS) {
        for (int i = 0; i < n; i++) {
            int64_t v = x[i * sa];
            y[i] = te_wrap_int(dt, v < 0 ? (int64_t)(0u - (uint64_t)v) : v);
        }
        return 1;
    }
    if (f == TIR_FLOOR || f == TIR_CEIL || f == TIR_ROUND) {
        for (int i = 0; i < n; i++)
            y[i] = x[i * sa];
        return 1;
    }
    if (f == TIR_SHL || f == TIR_SHR) {
        const int64_t *s = b;
        uint64_t bits = 8 * (uint64_t)kiln_dtype_size(dt);
        for (int i = 0; i < n; i++) {
            int64_t v = x[i * sa];
            uint64_t k = (uint64_t)s[i * sb];
            if (f == TIR_SHL)
                y[i] = k < bits ? te_wrap_int(dt, (int64_t)((uint64_t)v << k)) : 0;
            else if (kiln_dtype_is_unsigned(dt)) /* logical: uint64 lanes are bit patterns */
                y[i] = k < bits ? (int64_t)((uint64_t)v >> k) : 0;
            else
                y[i] = k < bits ? v >> k : v < 0 ? -1 : 0;
        }
        return 1;
    }
    return 0;
}

/* Convert n lanes of `from` (kind of its dtype) to dtype `to`. */
void te_lanes_convert(kiln_dtype to, kiln_dtype from, const void *src, void *dst, int n) {
    te_vkind kf = te_vkind_of(from), kt = te_vkind_of(to);
    for (int i = 0; i < n; i++) {
        if (kt == TE_K_I64) {
            int64_t *r = dst;
            r[i] = kf == TE_K_I64   ? te_wrap_int(to, ((const int64_t *)src)[i])
                   : kf == TE_K_F32 ? te_float_to_int(((const float *)src)[i], to)
                                    : te_float_to_int(((const double *)src)[i], to);
        } else if (kt == TE_K_F32) {
            float *r = dst;
            r[i] = kf == TE_K_I64   ? (float)int_to_double(from, ((const int64_t *)src)[i])
                   : kf == TE_K_F32 ? ((const float *)src)[i]
                                    : (float)((const double *)src)[i];
        } else {
            double *r = dst;
            r[i] = kf == TE_K_I64   ? int_to_double(from, ((const int64_t *)src)[i])
                   : kf == TE_K_F32 ? (double)((const float *)src)[i]
                                    : ((const double *)src)[i];
        }
    }
    if (kt == TE_K_F32)
        te_round_lanes(to, dst, n);
}

/* ---- loads and stores ------------------------------------------------------------------ */

/* Element off of storage dtype dt at data, as the kind's C type into r[i]. */
#define GATHER(T, R, CONV)                                                                         \
    do {                                                                                           \
        const T *d_ = (const T *)data;                                                             \
        R *r_ = r;                                                                                 \
        if (masked)                                                                                \
            for (int i = 0; i < n; i++)                                                            \
                r_[i] = off[i] < 0 ? (R)0 : (R)CONV(d_[off[i]]);                                   \
        else                                                                                       \
            for (int i = 0; i < n; i++)                                                            \
                r_[i] = (R)CONV(d_[off[i]]);                                                       \
    } while (0)
#define AS_IS(x) (x)
#define NONZERO(x) ((x) != 0)

void te_lanes_gather(kiln_dtype dt, const char *data, const int64_t *off, int masked, void *r,
                     int n) {
    switch (dt) {
    case KILN_FLOAT32: GATHER(float, float, AS_IS); break;
    case KILN_FLOAT16: GATHER(uint16_t, float, te_half_to_float); break;
    case KILN_BFLOAT16: GATHER(uint16_t, float, te_bf16_to_float); break;
    case KILN_FLOAT64: GATHER(double, double, AS_IS); break;
    case KILN_INT8: GATHER(int8_t, int64_t, AS_IS); break;
    case KILN_UINT8: GATHER(uint8_t, int64_t, AS_IS); break;
    case KILN_BOOL: GATHER(uint8_t, int64_t, NONZERO); break;
    case KILN_INT32: GATHER(int32_t, int64_t, AS_IS); break;
    case KILN_INT64: GATHER(int64_t, int64_t, AS_IS); break;
    case KILN_INT16: GATHER(int16_t, int64_t, AS_IS); break;
    case KILN_UINT16: GATHER(uint16_t, int64_t, AS_IS); break;
    case KILN_UINT32: GATHER(uint32_t, int64_t, AS_IS); break;
    case KILN_UINT64: GATHER(uint64_t, int64_t, AS_IS); break;
    default: KILN_ASSERT(0);
    }
}

#define STORE(T, R, CONV)                                                                          \
    do {                                                                                           \
        T *d_ = (T *)data + start;                                                                 \
        const R *v_ = v;                                                                           \
        for (int i = 0; i < n; i++)                                                                \
            d_[i] = (T)CONV(v_[i * sv]);                                                           \
    } while (0)

void te_lanes_store(kiln_dtype dt, char *data, int64_t start, const void *v, int sv, int n) {
    switch (dt) {
    case KILN_FLOAT32: STORE(float, float, AS_IS); break;
    case KILN_FLOAT16: STORE(uint16_t, float, te_float_to_half); break;
    case KILN_BFLOAT16: STORE(uint16_t, float, te_float_to_bf16); break;
    case KILN_FLOAT64: STORE(double, double, AS_IS); break;
    case KILN_INT8: STORE(int8_t, int64_t, AS_IS); break;
    case KILN_UINT8: STORE(uint8_t, int64_t, AS_IS); break;
    case KILN_BOOL: STORE(uint8_t, int64_t, NONZERO); break;
    case KILN_INT32: STORE(int32_t, int64_t, AS_IS); break;
    case KILN_INT64: STORE(int64_t, int64_t, AS_IS); break;
    case KILN_INT16: STORE(int16_t, int64_t, AS_IS); break;
    case KILN_UINT16: STORE(uint16_t, int64_t, AS_IS); break;
    case KILN_UINT32: STORE(uint32_t, int64_t, AS_IS); break;
    case KILN_UINT64: STORE(uint64_t, int64_t, AS_IS); break;
    default: KILN_ASSERT(0);
    }
}

void te_reduce_identity(tir_combiner c, kiln_dtype dt, void *acc, int i) {
    te_vkind k = te_vkind_of(dt);
    if (k == TE_K_I64) {
        int64_t v = c == TIR_RSUM    ? 0
                    : c == TIR_RPROD ? 1
                    : c == TIR_RMAX  ? kiln_dtype_int_min(dt)
                                     : kiln_dtype_int_max(dt);
        ((int64_t *)acc)[i] = v;
        return;
    }
    double v = c == TIR_RSUM ? 0 : c == TIR_RPROD ? 1 : c == TIR_RMAX ? -INFINITY : INFINITY;
    if (k == TE_K_F32)
        ((float *)acc)[i] = (float)v;
    else
        ((double *)acc)[i] = v;
}

tir_op te_combine_op(tir_combiner c) {
    return c == TIR_RSUM ? TIR_ADD : c == TIR_RPROD ? TIR_MUL : c == TIR_RMAX ? TIR_MAX : TIR_MIN;
}
