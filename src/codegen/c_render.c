/* c_render.c: the C back end. Renders flat loop IR into one C11 (GNU)
 * translation unit that follows runtime/module_abi.h without including any
 * kiln header. Scalars are plain C; vectors are GCC vector_size types with
 * small static inline helpers (emitted only when used, in first-use order)
 * for loads, stores, splats and per-lane operations. Parallel loops are
 * outlined into closures run by the runtime's parallel_for; constant-index
 * "local" buffers are promoted to separate variables so gcc keeps them in
 * registers.
 *
 * Representations: bool is uint8_t holding 0/1, and a bool vector is a
 * uint8_t vector (kiln_b8xN) holding 0/1 per lane, so it loads and stores
 * as bool memory directly. bfloat16 is uint16_t bits; only loads, stores,
 * casts and selects of it are allowed. Float min/max propagate NaN as
 * numpy's minimum/maximum do. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

/* ---- dtype table ------------------------------------------------------------ */

static const struct {
    const char *c, *tag, *fsuffix; /* C type, short tag, libm suffix (floats) */
} g_types[KILN_HANDLE] = {
    [KILN_FLOAT32] = {"float", "f32", "f"},     [KILN_FLOAT16] = {"_Float16", "f16", "f"},
    [KILN_BFLOAT16] = {"uint16_t", "bf16", ""}, [KILN_INT8] = {"int8_t", "i8", NULL},
    [KILN_UINT8] = {"uint8_t", "u8", NULL},     [KILN_INT32] = {"int32_t", "i32", NULL},
    [KILN_INT64] = {"int64_t", "i64", NULL},    [KILN_BOOL] = {"uint8_t", "b8", NULL},
    [KILN_FLOAT64] = {"double", "f64", ""},
};

static const char *g_intrin_c[TIR_INTRIN_COUNT] = {
    [TIR_EXP] = "exp",  [TIR_LOG] = "log",         [TIR_SQRT] = "sqrt",   [TIR_TANH] = "tanh",
    [TIR_ERF] = "erf",  [TIR_POW] = "pow",         [TIR_FLOOR] = "floor", [TIR_CEIL] = "ceil",
    [TIR_ABS] = "fabs", [TIR_ROUND] = "nearbyint",
};

static const char *g_binop_c[TIR_OP_COUNT] = {
    [TIR_ADD] = "+", [TIR_SUB] = "-", [TIR_MUL] = "*", [TIR_DIV] = "/",
    [TIR_MOD] = "%", [TIR_EQ] = "==", [TIR_NE] = "!=", [TIR_LT] = "<",
    [TIR_LE] = "<=", [TIR_GT] = ">",  [TIR_GE] = ">=",
};

#define BF16_MSG "bfloat16 arithmetic is not supported: cast to float32 first"

int codegen_vector_ok(kiln_dtype dt, int lanes) {
    if ((unsigned)dt >= KILN_HANDLE)
        return 0;
    if (lanes == 1)
        return 1;
    if (lanes < 2 || lanes > 64 || (lanes & (lanes - 1)))
        return 0;
    return kiln_dtype_size(dt) * (size_t)lanes <= 256;
}

/* Internal vectors (index vectors included) may be larger than what
 * codegen_vector_ok promises for data. */
static int lanes_ok(int lanes) {
    return lanes >= 1 && lanes <= 64 && !(lanes & (lanes - 1));
}

static int is_float(kiln_dtype dt) {
    return tir_is_float_dtype(dt);
}
static int is_narrow(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_BOOL || dt == KILN_FLOAT16;
}

/* ---- the renderer state ---------------------------------------------------------- */

typedef struct {
    char *key, *text;
} helper;

typedef struct {
    tir_node buf;
    int promoted; /* rendered as variables NAME_r<k> of `lanes` lanes each */
    int lanes;
    int heap; /* must be freed on every exit */
} alloc_info;

typedef struct {
    kiln_status st;
    helper *helpers;
    int nh, caph;
    kstr pre;          /* closure structs and outlined functions of the current function */
    const char *fname; /* the current tir_func's name */
    int npar;          /* outlined functions so far in this function */
    int in_par;        /* rendering inside an outlined parallel body */
    alloc_info *allocs;
    int na, capa;
    int exit_base; /* allocs below this index belong to an enclosing C function */
} render;

static void fail(render *r, kiln_status st, const char *fmt, ...) KILN_PRINTF(3, 4);
static void fail(render *r, kiln_status st, const char *fmt, ...) {
    if (r->st)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->st = kiln_set_error(st, "%s", buf);
}

/* A malloc'd formatted string (aborts on out-of-memory: the renderer's
 * strings are small). */
static char *sfmt(const char *fmt, ...) KILN_PRINTF(1, 2);
static char *sfmt(const char *fmt, ...) {
    kstr s;
    kstr_init(&s);
    va_list ap;
    va_start(ap, fmt);
    kstr_vprintf(&s, fmt, ap);
    va_end(ap);
    char *t = kstr_take(&s);
    KILN_ASSERT(t);
    return t;
}

static char *sdup(const char *s) {
    return sfmt("%s", s);
}

static int have_helper(render *r, const char *key) {
    for (int i = 0; i < r->nh; i++)
        if (strcmp(r->helpers[i].key, key) == 0)
            return 1;
    return 0;
}

/* Add a helper (takes ownership of text). Dependencies must be added first. */
static void add_helper(render *r, const char *key, char *text) {
    if (have_helper(r, key)) {
        free(text);
        return;
    }
    if (r->nh == r->caph) {
        r->caph = r->caph ? r->caph * 2 : 32;
        r->helpers = realloc(r->helpers, (size_t)r->caph * sizeof(helper));
        KILN_ASSERT(r->helpers);
    }
    r->helpers[r->nh].key = sdup(key);
    r->helpers[r->nh].text = text;
    r->nh++;
}

static alloc_info *find_alloc(render *r, tir_node buf) {
    for (int i = r->na - 1; i >= 0; i--)
        if (r->allocs[i].buf == buf)
            return &r->allocs[i];
    return NULL;
}

/* ---- names and constants ------------------------------------------------------------ */

/* "<sanitized name>_<id>": unique per variable and never a C keyword. */
static char *var_name(tir_node v) {
    kstr s;
    kstr_init(&s);
    const char *n = v->name && *v->name ? v->name : "v";
    if (isdigit((unsigned char)n[0]))
        kstr_putc(&s, 'v');
    for (; *n; n++)
        kstr_putc(&s, isalnum((unsigned char)*n) || *n == '_' ? *n : '_');
    kstr_printf(&s, "_%lld", (long long)v->ival);
    char *t = kstr_take(&s);
    KILN_ASSERT(t);
    return t;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static char *const_int(kiln_dtype dt, int64_t v);

/* Exact C text of a float constant of dtype dt. */
static char *const_float(kiln_dtype dt, double v) {
    if (!is_float(dt))
        return const_int(dt, (int64_t)v);
    if (dt == KILN_BFLOAT16)
        return sfmt("((uint16_t)0x%04x)", f32_to_bf16((float)v));
    int dbl = dt == KILN_FLOAT64;
    const char *cast = dt == KILN_FLOAT16 ? "(_Float16)" : dbl ? "(double)" : "";
    if (isnan(v))
        return sfmt("(%sNAN)", cast);
    if (isinf(v))
        return sfmt("(%s%sINFINITY)", cast, v < 0 ? "-" : "");
    char num[64];
    if (dbl)
        snprintf(num, sizeof num, "%.17g", v);
    else
        snprintf(num, sizeof num, "%.9g", (double)(float)v);
    if (!strpbrk(num, ".e"))
        strcat(num, ".0");
    const char *suf = dbl ? "" : "f";
    if (dt == KILN_FLOAT16)
        return sfmt("((_Float16)%s%s)", num, suf);
    return num[0] == '-' ? sfmt("(%s%s)", num, suf) : sfmt("%s%s", num, suf);
}

static char *const_int(kiln_dtype dt, int64_t v) {
    if (is_float(dt))
        return const_float(dt, (double)v);
    switch (dt) {
    case KILN_BOOL: return sdup(v ? "1" : "0");
    case KILN_INT8:
    case KILN_UINT8: return sfmt("((%s)%lld)", g_types[dt].c, (long long)v);
    case KILN_INT32:
        if (v == INT32_MIN)
            return sdup("(-2147483647 - 1)");
        return v < 0 ? sfmt("(%lld)", (long long)v) : sfmt("%lld", (long long)v);
    default:
        if (v == INT64_MIN)
            return sdup("((int64_t)(-9223372036854775807LL - 1))");
        if (v > INT32_MAX || v < -INT32_MAX)
            return sfmt("((int64_t)%lldLL)", (long long)v);
        return v < 0 ? sfmt("(%lld)", (long long)v) : sfmt("%lld", (long long)v);
    }
}

/* ---- helpers ------------------------------------------------------------------------- */

/* The C type of dt at `lanes` into out (declaring the vector typedef). */
static void vtype(render *r, char out[48], kiln_dtype dt, int lanes) {
    if (lanes == 1) {
        snprintf(out, 48, "%s", g_types[dt].c);
        return;
    }
    snprintf(out, 48, "kiln_%sx%d", g_types[dt].tag, lanes);
    if (!have_helper(r, out))
        add_helper(r, out,
                   sfmt("typedef %s %s __attribute__((vector_size(%zu)));\n", g_types[dt].c, out,
                        kiln_dtype_size(dt) * (size_t)lanes));
}

static void need_bf16(render *r) {
    add_helper(
        r, "kiln_bf16",
        sdup("static inline float kiln_bf16_to_f32(uint16_t h) {\n"
             "    uint32_t u = (uint32_t)h << 16;\n"
             "    float f;\n"
             "    memcpy(&f, &u, 4);\n"
             "    return f;\n"
             "}\n"
             "static inline uint16_t kiln_f32_to_bf16(float f) {\n"
             "    uint32_t u;\n"
             "    memcpy(&u, &f, 4);\n"
             "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);\n"
             "    u += 0x7fffu + ((u >> 16) & 1u);\n"
             "    return (uint16_t)(u >> 16);\n"
             "}\n"));
}

/* A scalar helper kiln_<op>_<tag>(a, b) for floordiv/floormod/min/max/abs. */
static char *scalar_helper_call(render *r, const char *op, kiln_dtype dt, int nargs, char **a) {
    char name[64];
    snprintf(name, sizeof name, "kiln_%s_%s", op, g_types[dt].tag);
    if (!have_helper(r, name)) {
        const char *T = g_types[dt].c;
        int fl = is_float(dt), dbl = dt == KILN_FLOAT64;
        const char *F = dbl ? "double" : "float", *s = dbl ? "" : "f";
        const char *body;
        char buf[512];
        if (!strcmp(op, "floordiv") && !fl)
            body = "    T q = (T)(a / b);\n"
                   "    return (T)((q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q);\n";
        else if (!strcmp(op, "floormod") && !fl)
            body = "    T m = (T)(a % b);\n"
                   "    return (T)((m != 0 && ((m < 0) != (b < 0))) ? m + b : m);\n";
        else if (!strcmp(op, "floordiv")) {
            snprintf(buf, sizeof buf, "    return (T)floor%s((%s)a / (%s)b);\n", s, F, F);
            body = buf;
        } else if (!strcmp(op, "floormod")) {
            snprintf(buf, sizeof buf,
                     "    %s m = fmod%s((%s)a, (%s)b);\n"
                     "    if (m != 0) {\n"
                     "        if ((b < 0) != (m < 0)) m += (%s)b;\n"
                     "    } else {\n"
                     "        m = copysign%s((%s)0, (%s)b);\n"
                     "    }\n"
                     "    return (T)m;\n",
                     F, s, F, F, F, s, F, F);
            body = buf;
        } else if (!strcmp(op, "min"))
            body = fl ? "    return (a < b || a != a) ? a : b;\n" : "    return a < b ? a : b;\n";
        else if (!strcmp(op, "max"))
            body = fl ? "    return (a > b || a != a) ? a : b;\n" : "    return a > b ? a : b;\n";
        else
            body = "    return a < 0 ? (T)-a : a;\n"; /* abs */
        kstr t;
        kstr_init(&t);
        kstr_printf(&t, "static inline %s %s(%s a", T, name, T);
        if (nargs > 1)
            kstr_printf(&t, ", %s b", T);
        kstr_puts(&t, ") {\n");
        /* the body, with the type placeholder T replaced */
        for (const char *p = body; *p; p++) {
            if (*p == 'T' && (p == body || !isalnum((unsigned char)p[-1])) &&
                !isalnum((unsigned char)p[1]))
                kstr_puts(&t, T);
            else
                kstr_putc(&t, *p);
        }
        kstr_puts(&t, "}\n");
        char *text = kstr_take(&t);
        KILN_ASSERT(text);
        add_helper(r, name, text);
    }
    return nargs > 1 ? sfmt("%s(%s, %s)", name, a[0], a[1]) : sfmt("%s(%s)", name, a[0]);
}

/* Text of scalar cast of text a from `from` to `to`. */
static char *cast_text(render *r, kiln_dtype to, kiln_dtype from, const char *a) {
    if (to == from)
        return sdup(a);
    if (from == KILN_BFLOAT16) {
        need_bf16(r);
        if (to == KILN_BOOL)
            return sfmt("(kiln_bf16_to_f32(%s) != 0)", a);
        if (to == KILN_FLOAT32)
            return sfmt("kiln_bf16_to_f32(%s)", a);
        return sfmt("((%s)kiln_bf16_to_f32(%s))", g_types[to].c, a);
    }
    if (to == KILN_BFLOAT16) {
        need_bf16(r);
        if (from == KILN_FLOAT32)
            return sfmt("kiln_f32_to_bf16(%s)", a);
        return sfmt("kiln_f32_to_bf16((float)(%s))", a);
    }
    if (to == KILN_BOOL)
        return sfmt("((%s) != 0)", a);
    return sfmt("((%s)(%s))", g_types[to].c, a);
}

/* Text of a scalar op (the kind of TIR op/aux) with result dtype dt on
 * operand texts a[] whose dtype is odt. */
static char *scalar_text(render *r, int op, uint32_t aux, kiln_dtype dt, kiln_dtype odt, char **a) {
    switch (op) {
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_DIV:
    case TIR_MOD:
        if (op == TIR_MOD && is_float(dt)) {
            if (dt == KILN_FLOAT16)
                return sfmt("((_Float16)fmodf((float)(%s), (float)(%s)))", a[0], a[1]);
            return sfmt("fmod%s(%s, %s)", g_types[dt].fsuffix, a[0], a[1]);
        }
        if (is_narrow(dt))
            return sfmt("((%s)(%s %s %s))", g_types[dt].c, a[0], g_binop_c[op], a[1]);
        return sfmt("(%s %s %s)", a[0], g_binop_c[op], a[1]);
    case TIR_FLOORDIV: return scalar_helper_call(r, "floordiv", dt, 2, a);
    case TIR_FLOORMOD: return scalar_helper_call(r, "floormod", dt, 2, a);
    case TIR_MIN: return scalar_helper_call(r, "min", dt, 2, a);
    case TIR_MAX: return scalar_helper_call(r, "max", dt, 2, a);
    case TIR_EQ:
    case TIR_NE:
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE: return sfmt("(%s %s %s)", a[0], g_binop_c[op], a[1]);
    case TIR_AND: return sfmt("(%s && %s)", a[0], a[1]);
    case TIR_OR: return sfmt("(%s || %s)", a[0], a[1]);
    case TIR_NOT: return sfmt("(!%s)", a[0]);
    case TIR_SELECT: return sfmt("(%s ? %s : %s)", a[0], a[1], a[2]);
    case TIR_CAST: return cast_text(r, dt, odt, a[0]);
    case TIR_CALL: {
        tir_intrin f = (tir_intrin)aux;
        if (!is_float(dt)) {
            if (f == TIR_ABS)
                return scalar_helper_call(r, "abs", dt, 1, a);
            if (f == TIR_FLOOR || f == TIR_CEIL || f == TIR_ROUND)
                return sfmt("(%s)", a[0]);
            fail(r, KILN_ERR_UNSUPPORTED,
                 "intrinsic %s on %s is not supported: cast to float first", tir_intrin_name(f),
                 kiln_dtype_name(dt));
            return sdup("0");
        }
        int h = dt == KILN_FLOAT16, dbl = dt == KILN_FLOAT64;
        const char *s = g_types[dt].fsuffix, *one = dbl ? "1.0" : "1.0f";
        char *x = h ? sfmt("(float)(%s)", a[0]) : sdup(a[0]), *res;
        if (f == TIR_RSQRT)
            res = sfmt("(%s / sqrt%s(%s))", one, s, x);
        else if (f == TIR_SIGMOID)
            res = sfmt("(%s / (%s + exp%s(-(%s))))", one, one, s, x);
        else if (f == TIR_POW) {
            char *y = h ? sfmt("(float)(%s)", a[1]) : sdup(a[1]);
            res = sfmt("pow%s(%s, %s)", s, x, y);
            free(y);
        } else
            res = sfmt("%s%s(%s)", g_intrin_c[f], s, x);
        free(x);
        if (h) {
            char *t = sfmt("((_Float16)%s)", res);
            free(res);
            res = t;
        }
        return res;
    }
    default:
        fail(r, KILN_ERR_INVALID, "cannot render %s", tir_op_name((tir_op)op));
        return sdup("0");
    }
}

/* ---- float32 vector math ----------------------------------------------------------------
 * exp, log, tanh, sigmoid and erf of float32 vectors as straight vector code (libm's scalar
 * calls are not vectorized without -ffast-math). Written with GCC vector-extension
 * arithmetic, compare masks and bitwise blends only, so it compiles for any target. Errors
 * against libm are a few ulp at most; NaN, infinities, signed zeros, overflow and subnormal
 * results follow libm. In the templates @F is the float vector type, @I the int32 vector
 * type of the same lanes, and @S their suffix (f32x16). */

static const char g_vsel_tmpl[] =
    "static inline @F kiln_vsel_@S(@I m, @F a, @F b) {\n"
    "    @I ai, bi, ri;\n"
    "    @F r;\n"
    "    memcpy(&ai, &a, sizeof a);\n"
    "    memcpy(&bi, &b, sizeof b);\n"
    "    ri = (ai & m) | (bi & ~m);\n"
    "    memcpy(&r, &ri, sizeof r);\n"
    "    return r;\n}\n";

/* e^x = 2^n e^r with x = n ln2 + r (Cody-Waite two-part ln2), |r| <= ln2/2, e^r by Cephes'
   expf polynomial; 2^n is applied as two factors so that results near overflow and in the
   subnormal range round once. */
static const char g_vexp_tmpl[] =
    "static inline @F kiln_exp_@S(@F x) {\n"
    "    @F c = kiln_vsel_@S(x < 89.0f, x, (@F){0} + 89.0f), n, r, z, p, s1, s2, t;\n"
    "    @I k, b1, b2;\n"
    "    c = kiln_vsel_@S(c > -104.0f, c, (@F){0} - 104.0f);\n"
    "    t = c * 1.44269504f + 12582912.0f;\n"
    "    n = t - 12582912.0f;\n"
    "    memcpy(&k, &t, sizeof k);\n"
    "    k -= 0x4b400000;\n"
    "    r = c - n * 0.693359375f;\n"
    "    r = r - n * -2.12194440e-4f;\n"
    "    z = r * r;\n"
    "    p = r * 1.9875691500e-4f + 1.3981999507e-3f;\n"
    "    p = p * r + 8.3334519073e-3f;\n"
    "    p = p * r + 4.1665795894e-2f;\n"
    "    p = p * r + 1.6666665459e-1f;\n"
    "    p = p * r + 5.0000001201e-1f;\n"
    "    p = p * z + r + 1.0f;\n"
    "    b1 = ((k >> 1) + 127) << 23;\n"
    "    b2 = ((k - (k >> 1)) + 127) << 23;\n"
    "    memcpy(&s1, &b1, sizeof s1);\n"
    "    memcpy(&s2, &b2, sizeof s2);\n"
    "    return kiln_vsel_@S(x == x, p * s1 * s2, x + x);\n}\n";

/* log x = e ln2 + log(1 + f), sqrt(1/2) <= 1 + f < sqrt(2), by Cephes' logf polynomial;
   subnormal x are scaled by 2^23 first. */
static const char g_vlog_tmpl[] =
    "static inline @F kiln_log_@S(@F x) {\n"
    "    @I sub = x < 1.17549435e-38f, xi, e, low;\n"
    "    @F xs = kiln_vsel_@S(sub, x * 8388608.0f, x), m, f, fe, z, y, r;\n"
    "    memcpy(&xi, &xs, sizeof xi);\n"
    "    e = ((xi >> 23) & 0xff) - 126 - (sub & 23);\n"
    "    xi = (xi & 0x007fffff) | 0x3f000000;\n"
    "    memcpy(&m, &xi, sizeof m);\n"
    "    low = m < 0.707106781f;\n"
    "    e += low;\n"
    "    f = kiln_vsel_@S(low, m + m, m) - 1.0f;\n"
    "    fe = __builtin_convertvector(e, @F);\n"
    "    z = f * f;\n"
    "    y = f * 7.0376836292e-2f - 1.1514610310e-1f;\n"
    "    y = y * f + 1.1676998740e-1f;\n"
    "    y = y * f - 1.2420140846e-1f;\n"
    "    y = y * f + 1.4249322787e-1f;\n"
    "    y = y * f - 1.6668057665e-1f;\n"
    "    y = y * f + 2.0000714765e-1f;\n"
    "    y = y * f - 2.4999993993e-1f;\n"
    "    y = y * f + 3.3333331174e-1f;\n"
    "    y = y * f * z;\n"
    "    y = y + fe * -2.12194440e-4f;\n"
    "    y = y - 0.5f * z;\n"
    "    r = f + y;\n"
    "    r = r + fe * 0.693359375f;\n"
    "    r = kiln_vsel_@S(x < __builtin_inff(), r, x + x);\n"
    "    r = kiln_vsel_@S(x == 0.0f, (@F){0} - __builtin_inff(), r);\n"
    "    return kiln_vsel_@S(x < 0.0f, (@F){0} + __builtin_nanf(\"\"), r);\n}\n";

/* tanh: x + x^3 P(x^2) (Cephes' tanhf) for |x| < 0.625, else 1 - 2 / (e^2|x| + 1), with
   the sign of x. */
static const char g_vtanh_tmpl[] =
    "static inline @F kiln_tanh_@S(@F x) {\n"
    "    @I xi, si, ri, small;\n"
    "    @F a, s, z, p, e, r;\n"
    "    memcpy(&xi, &x, sizeof xi);\n"
    "    si = xi & (-2147483647 - 1);\n"
    "    xi &= 0x7fffffff;\n"
    "    memcpy(&a, &xi, sizeof a);\n"
    "    small = a < 0.625f;\n"
    "    s = kiln_vsel_@S(small, a, (@F){0} + 0.625f);\n"
    "    z = s * s;\n"
    "    p = z * -5.70498872745e-3f + 2.06390887954e-2f;\n"
    "    p = p * z - 5.37397155531e-2f;\n"
    "    p = p * z + 1.33314422036e-1f;\n"
    "    p = p * z - 3.33332819422e-1f;\n"
    "    e = kiln_exp_@S(a + a);\n"
    "    r = kiln_vsel_@S(small, s + p * z * s, 1.0f - 2.0f / (e + 1.0f));\n"
    "    memcpy(&ri, &r, sizeof ri);\n"
    "    ri |= si;\n"
    "    memcpy(&r, &ri, sizeof r);\n"
    "    return kiln_vsel_@S(x == x, r, x + x);\n}\n";

/* sigmoid: 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) for x < 0, so e^-|x| never
   overflows and tiny results keep their precision. */
static const char g_vsigmoid_tmpl[] =
    "static inline @F kiln_sigmoid_@S(@F x) {\n"
    "    @I xi;\n"
    "    @F na, e;\n"
    "    memcpy(&xi, &x, sizeof xi);\n"
    "    xi |= (-2147483647 - 1);\n"
    "    memcpy(&na, &xi, sizeof na);\n"
    "    e = kiln_exp_@S(na);\n"
    "    return kiln_vsel_@S(x < 0.0f, e, (@F){0} + 1.0f) / (e + 1.0f);\n}\n";

/* erf without division: for |x| < 1, x + x q(x^2); for 1 <= |x| < 3.92,
   1 - e^(-x^2 + p(|x|)) with x^2 split exactly (h has 12 significant bits, so
   h*h is exact) and p a fit of log(erfc(x)) + x^2; past 3.92 erf rounds to 1;
   the sign of x. q (degree 6 in x^2, relative error 1.2e-9) and p (degree 8
   in |x|, absolute error 8e-9) are least-squares fits refined towards
   minimax on Chebyshev nodes, made for kiln. fdlibm's erff, which this
   replaced, evaluates three rational functions and divides: GELU's erf cost a
   fifth of BERT's FFN1. */
static const char g_verf_tmpl[] =
    "static inline @F kiln_erf_@S(@F x) {\n"
    "    @I xi, si, ri;\n"
    "    @F a, z, q, lo, b, p, h, e, hi, res;\n"
    "    memcpy(&xi, &x, sizeof xi);\n"
    "    si = xi & (-2147483647 - 1);\n"
    "    xi &= 0x7fffffff;\n"
    "    memcpy(&a, &xi, sizeof a);\n"
    "    z = a * a;\n"
    "    q = z * 7.8531047620e-05f - 8.0099643674e-04f;\n"
    "    q = q * z + 5.1883016713e-03f;\n"
    "    q = q * z - 2.6853797957e-02f;\n"
    "    q = q * z + 1.1283584684e-01f;\n"
    "    q = q * z - 3.7612625957e-01f;\n"
    "    q = q * z + 1.2837916613e-01f;\n"
    "    lo = a + a * q;\n"
    "    b = kiln_vsel_@S(a < 3.92f, a, (@F){0} + 3.92f);\n"
    "    b = kiln_vsel_@S(b > 1.0f, b, (@F){0} + 1.0f);\n"
    "    p = b * 1.6332014638e-06f - 4.5942775614e-05f;\n"
    "    p = p * b + 5.9551594313e-04f;\n"
    "    p = p * b - 4.7520464286e-03f;\n"
    "    p = p * b + 2.6395361871e-02f;\n"
    "    p = p * b - 1.1002705246e-01f;\n"
    "    p = p * b + 3.6810940504e-01f;\n"
    "    p = p * b - 1.1301908493e+00f;\n"
    "    p = p * b + 3.0845674337e-04f;\n"
    "    memcpy(&ri, &b, sizeof ri);\n"
    "    ri &= -4096;\n"
    "    memcpy(&h, &ri, sizeof h);\n"
    "    e = kiln_exp_@S((p - h * h) - (b - h) * (b + h));\n"
    "    hi = kiln_vsel_@S(a < 3.92f, 1.0f - e, (@F){0} + 1.0f);\n"
    "    res = kiln_vsel_@S(a < 1.0f, lo, hi);\n"
    "    memcpy(&ri, &res, sizeof ri);\n"
    "    ri |= si;\n"
    "    memcpy(&res, &ri, sizeof res);\n"
    "    return kiln_vsel_@S(x == x, res, x + x);\n}\n";

/* A template with @F, @I and @S replaced. */
static char *vmath_text(const char *tmpl, const char *vf, const char *vi) {
    kstr t;
    kstr_init(&t);
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '@' && p[1] == 'F')
            kstr_puts(&t, vf);
        else if (p[0] == '@' && p[1] == 'I')
            kstr_puts(&t, vi);
        else if (p[0] == '@' && p[1] == 'S')
            kstr_puts(&t, vf + 5); /* "kiln_f32x16" -> "f32x16" */
        else {
            kstr_putc(&t, *p);
            continue;
        }
        p++;
    }
    char *text = kstr_take(&t);
    KILN_ASSERT(text);
    return text;
}

/* Adds kiln_vsel_<tag>x<lanes>(mask, a, b), the bitwise blend by a full-width
   mask, for vectors of 4- or 8-byte elements; writes its vector type to vt and
   the mask's to it. */
static void vsel_helper(render *r, kiln_dtype dt, int lanes, char vt[48], char it[48]) {
    char key[96];
    vtype(r, vt, dt, lanes);
    vtype(r, it, kiln_dtype_size(dt) == 4 ? KILN_INT32 : KILN_INT64, lanes);
    snprintf(key, sizeof key, "kiln_vsel_%s", vt + 5);
    add_helper(r, key, vmath_text(g_vsel_tmpl, vt, it));
}

/* Adds the vector helper kiln_<f>_f32x<lanes> (and what it uses) when f has one; returns
   whether it did. */
static int vmath_helper(render *r, tir_intrin f, int lanes, const char *name) {
    const char *tmpl = f == TIR_EXP       ? g_vexp_tmpl
                       : f == TIR_LOG     ? g_vlog_tmpl
                       : f == TIR_TANH    ? g_vtanh_tmpl
                       : f == TIR_SIGMOID ? g_vsigmoid_tmpl
                       : f == TIR_ERF     ? g_verf_tmpl
                                          : NULL;
    if (!tmpl)
        return 0;
    char vf[48], vi[48], key[96];
    vsel_helper(r, KILN_FLOAT32, lanes, vf, vi);
    if (f != TIR_EXP && f != TIR_LOG) {
        snprintf(key, sizeof key, "kiln_exp_%s", vf + 5);
        add_helper(r, key, vmath_text(g_vexp_tmpl, vf, vi));
    }
    add_helper(r, name, vmath_text(tmpl, vf, vi));
    return 1;
}

/* A per-lane helper applying the scalar op to `nargs` vectors; returns the call. */
static char *lane_call(render *r, const char *opname, int op, uint32_t aux, kiln_dtype dt,
                       int lanes, kiln_dtype odt, int nargs, const kiln_dtype *adt, char **args) {
    char name[96];
    if (odt == dt)
        snprintf(name, sizeof name, "kiln_%s_%sx%d", opname, g_types[dt].tag, lanes);
    else
        snprintf(name, sizeof name, "kiln_%s_%s_%sx%d", opname, g_types[odt].tag, g_types[dt].tag,
                 lanes);
    if (!have_helper(r, name) && op == TIR_CALL && odt == dt && dt == KILN_FLOAT32 && lanes > 1)
        vmath_helper(r, (tir_intrin)aux, lanes, name);
    if (!have_helper(r, name) && (op == TIR_MIN || op == TIR_MAX) && odt == dt &&
        (dt == KILN_FLOAT32 || dt == KILN_FLOAT64)) {
        /* NaN-propagating min/max as compare masks and a bitwise blend: the
           per-lane form with || is not always turned into vector code */
        char vt[48], it[48];
        vsel_helper(r, dt, lanes, vt, it);
        add_helper(r, name,
                   sfmt("static inline %s %s(%s a, %s b) {\n"
                        "    return kiln_vsel_%s((a %s b) | (a != a), a, b);\n}\n",
                        vt, name, vt, vt, vt + 5, op == TIR_MAX ? ">" : "<"));
    }
    if (!have_helper(r, name) && op == TIR_SELECT && odt == dt && nargs == 3 &&
        adt[0] == KILN_BOOL && (kiln_dtype_size(dt) == 4 || kiln_dtype_size(dt) == 8)) {
        /* the 0/1 lanes widened to a full-width mask and a bitwise blend: the
           per-lane form compiled to one masked broadcast per lane */
        char vt[48], it[48], bt[48];
        vsel_helper(r, dt, lanes, vt, it);
        vtype(r, bt, KILN_BOOL, lanes);
        add_helper(r, name,
                   sfmt("static inline %s %s(%s c, %s a, %s b) {\n"
                        "    return kiln_vsel_%s(__builtin_convertvector(c, %s) != 0, a, b);\n}\n",
                        vt, name, bt, vt, vt, vt + 5, it));
    }
    if (!have_helper(r, name)) {
        static char *elems[3] = {"a[i]", "b[i]", "c[i]"};
        char *body = scalar_text(r, op, aux, dt, odt, elems);
        char rt[48], at[48];
        vtype(r, rt, dt, lanes);
        kstr t;
        kstr_init(&t);
        kstr_printf(&t, "static inline %s %s(", rt, name);
        for (int k = 0; k < nargs; k++) {
            vtype(r, at, adt[k], lanes);
            kstr_printf(&t, "%s%s %c", k ? ", " : "", at, "abc"[k]);
        }
        kstr_printf(
            &t, ") {\n    %s r;\n    for (int i = 0; i < %d; i++) r[i] = %s;\n    return r;\n}\n",
            rt, lanes, body);
        free(body);
        char *text = kstr_take(&t);
        KILN_ASSERT(text);
        add_helper(r, name, text);
    }
    kstr c;
    kstr_init(&c);
    kstr_printf(&c, "%s(", name);
    for (int k = 0; k < nargs; k++)
        kstr_printf(&c, "%s%s", k ? ", " : "", args[k]);
    kstr_putc(&c, ')');
    char *t = kstr_take(&c);
    KILN_ASSERT(t);
    return t;
}

static char *splat(render *r, kiln_dtype dt, int lanes, char *a) {
    char vt[48], name[64];
    vtype(r, vt, dt, lanes);
    snprintf(name, sizeof name, "kiln_splat_%s", vt + 5);
    if (!have_helper(r, name)) {
        /* an initializer of `lanes` copies is what gcc turns into one broadcast */
        kstr t;
        kstr_init(&t);
        kstr_printf(&t, "static inline %s %s(%s v) {\n    %s r = {", vt, name, g_types[dt].c, vt);
        for (int i = 0; i < lanes; i++)
            kstr_puts(&t, i ? ", v" : "v");
        kstr_puts(&t, "};\n    return r;\n}\n");
        char *text = kstr_take(&t);
        KILN_ASSERT(text);
        add_helper(r, name, text);
    }
    char *t = sfmt("%s(%s)", name, a);
    free(a);
    return t;
}

/* Memory helpers: kind "vload", "vstore", "gather", "scatter". */
static const char *mem_helper(render *r, const char *kind, kiln_dtype dt, int lanes,
                              kiln_dtype idt) {
    static char name[96];
    char vt[48], it[48];
    vtype(r, vt, dt, lanes);
    const char *T = g_types[dt].c;
    int gs = kind[0] == 'g' || kind[0] == 's';
    if (gs) {
        vtype(r, it, idt, lanes);
        snprintf(name, sizeof name, "kiln_%s_%s_%s", kind, vt + 5, g_types[idt].tag);
    } else {
        snprintf(name, sizeof name, "kiln_%s_%s", kind, vt + 5);
    }
    if (have_helper(r, name))
        return name;
    char *text;
    if (!strcmp(kind, "vload"))
        /* The empty asm keeps the loaded vector in a register: otherwise
           gcc folds a vector reused by several multiply-adds into each of
           them as a memory operand, and a register-blocked kernel reloads
           every weight once per pixel and becomes load-bound. A non-volatile
           asm with equal inputs is still merged (CSE) and hoisted. */
        text = kiln_dtype_size(dt) * (size_t)lanes < 16
                   ? sfmt("static inline %s %s(const %s *p) {\n    %s v;\n"
                          "    memcpy(&v, p, sizeof v);\n    return v;\n}\n",
                          vt, name, T, vt)
                   : sfmt("static inline %s %s(const %s *p) {\n    %s v;\n"
                          "    memcpy(&v, p, sizeof v);\n"
                          "#if defined(__GNUC__) && defined(__x86_64__) && defined(__AVX512F__)\n"
                          "    __asm__(\"\" : \"+v\"(v));\n"
                          "#elif defined(__GNUC__) && defined(__x86_64__) && defined(__AVX__) && %d <= 32\n"
                          "    __asm__(\"\" : \"+x\"(v));\n"
                          "#endif\n"
                          "    return v;\n}\n",
                          vt, name, T, vt, (int)(kiln_dtype_size(dt) * (size_t)lanes));
    else if (!strcmp(kind, "vstore"))
        text = sfmt("static inline void %s(%s *p, %s v) {\n    memcpy(p, &v, sizeof v);\n}\n", name,
                    T, vt);
    else if (!strcmp(kind, "gather"))
        text = sfmt("static inline %s %s(const %s *p, %s idx) {\n    %s v;\n"
                    "    for (int i = 0; i < %d; i++) v[i] = p[idx[i]];\n    return v;\n}\n",
                    vt, name, T, it, vt, lanes);
    else
        text = sfmt("static inline void %s(%s *p, %s idx, %s v) {\n"
                    "    for (int i = 0; i < %d; i++) p[idx[i]] = v[i];\n}\n",
                    name, T, it, vt, lanes);
    add_helper(r, name, text);
    return name;
}

/* ---- expressions ------------------------------------------------------------------------ */

static char *ex(render *r, tir_node e);

/* e rendered at `lanes` lanes (scalars are splatted). */
static char *ex_at(render *r, tir_node e, int lanes) {
    char *a = ex(r, e);
    if (e->lanes == 1 && lanes > 1)
        return splat(r, (kiln_dtype)e->dtype, lanes, a);
    return a;
}

static int is_contig_ramp(tir_node idx) {
    int64_t s;
    return idx->op == TIR_RAMP && tir_const_int(idx->src[1], &s) && s == 1;
}

/* v converted to dtype `to` (scalar or vector). */
static char *cast_expr(render *r, kiln_dtype to, tir_node v) {
    kiln_dtype from = (kiln_dtype)v->dtype;
    int L = v->lanes;
    char *a = ex(r, v), *t;
    if (from == to)
        return a;
    if (L == 1) {
        t = cast_text(r, to, from, a);
    } else if (from != KILN_BFLOAT16 && to != KILN_BFLOAT16) {
        char vt[48], bt[48];
        vtype(r, vt, to, L);
        if (to == KILN_BOOL) {
            vtype(r, bt, KILN_BOOL, L);
            t = sfmt("(__builtin_convertvector((%s) != 0, %s) & 1)", a, bt);
        } else {
            t = sfmt("__builtin_convertvector(%s, %s)", a, vt);
        }
    } else {
        t = lane_call(r, "cast", TIR_CAST, 0, to, L, from, 1, &from, &a);
    }
    free(a);
    return t;
}

static char *promoted_ref(render *r, alloc_info *ai, tir_node idx) {
    int64_t base = 0;
    if (idx->op == TIR_RAMP)
        tir_const_int(idx->src[0], &base);
    else
        tir_const_int(idx, &base);
    char *n = var_name(ai->buf), *t = sfmt("%s_r%lld", n, (long long)(base / ai->lanes));
    free(n);
    return t;
}

static char *ex_load(render *r, tir_node e) {
    tir_node buf = e->src[0], idx = e->src[1];
    kiln_dtype dt = (kiln_dtype)e->dtype;
    int L = e->lanes;
    alloc_info *ai = find_alloc(r, buf);
    if (ai && ai->promoted)
        return promoted_ref(r, ai, idx);
    char *bn = var_name(buf), *t;
    if (L == 1) {
        char *i = ex(r, idx);
        t = sfmt("%s[%s]", bn, i);
        free(i);
    } else if (is_contig_ramp(idx)) {
        char *b = ex(r, idx->src[0]);
        t = sfmt("%s(%s + %s)", mem_helper(r, "vload", dt, L, dt), bn, b);
        free(b);
    } else if (idx->op == TIR_BROADCAST) {
        char *b = ex(r, idx->src[0]);
        t = splat(r, dt, L, sfmt("%s[%s]", bn, b));
        free(b);
    } else {
        char *i = ex(r, idx);
        t = sfmt("%s(%s, %s)", mem_helper(r, "gather", dt, L, (kiln_dtype)idx->dtype), bn, i);
        free(i);
    }
    free(bn);
    return t;
}

static char *ex(render *r, tir_node e) {
    if (r->st)
        return sdup("0");
    int op = e->op, L = e->lanes;
    kiln_dtype dt = (kiln_dtype)e->dtype;
    if (op < TIR_FOR && (unsigned)dt >= KILN_HANDLE && !(op == TIR_VAR)) {
        fail(r, KILN_ERR_INVALID, "cannot render a %s of dtype %s", tir_op_name((tir_op)op),
             kiln_dtype_name(dt));
        return sdup("0");
    }
    if (!lanes_ok(L)) {
        fail(r, KILN_ERR_UNSUPPORTED, "vectors of %d x %s are not supported by the C back end", L,
             kiln_dtype_name(dt));
        return sdup("0");
    }
    kiln_dtype odt = e->nsrc ? (kiln_dtype)e->src[0]->dtype : dt;
    switch (op) {
    case TIR_INT: return const_int(dt, e->ival);
    case TIR_FLOAT: return const_float(dt, e->fval);
    case TIR_VAR:
        if (dt == KILN_HANDLE) {
            fail(r, KILN_ERR_INVALID, "buffer '%s' used as a value", e->name ? e->name : "?");
            return sdup("0");
        }
        return var_name(e);
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_DIV:
    case TIR_MOD:
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
    case TIR_MIN:
    case TIR_MAX:
    case TIR_EQ:
    case TIR_NE:
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE:
    case TIR_AND:
    case TIR_OR:
    case TIR_NOT:
    case TIR_CALL: {
        if (odt == KILN_BFLOAT16 || dt == KILN_BFLOAT16) {
            fail(r, KILN_ERR_UNSUPPORTED, BF16_MSG);
            return sdup("0");
        }
        int n = (int)e->nsrc;
        if (n > 3 || (op != TIR_CALL && op != TIR_NOT && n != 2) || (op == TIR_NOT && n != 1) ||
            (op == TIR_CALL && n != (e->aux == TIR_POW ? 2 : 1))) {
            fail(r, KILN_ERR_INVALID, "malformed %s node", tir_op_name((tir_op)op));
            return sdup("0");
        }
        char *a[3] = {0};
        kiln_dtype adt[3];
        for (int k = 0; k < n; k++) {
            a[k] = ex_at(r, e->src[k], L);
            adt[k] = (kiln_dtype)e->src[k]->dtype;
        }
        char *t;
        int vec_op = L > 1 && (op <= TIR_DIV || (op == TIR_MOD && !is_float(dt)));
        int cmp = op >= TIR_EQ && op <= TIR_GE;
        if (L == 1) {
            t = scalar_text(r, op, e->aux, dt, odt, a);
        } else if (vec_op) {
            t = sfmt("(%s %s %s)", a[0], g_binop_c[op], a[1]);
        } else if (cmp) {
            char bt[48];
            vtype(r, bt, KILN_BOOL, L);
            t = sfmt("(__builtin_convertvector(%s %s %s, %s) & 1)", a[0], g_binop_c[op], a[1], bt);
        } else if (op == TIR_AND || op == TIR_OR) {
            t = sfmt("(%s %s %s)", a[0], op == TIR_AND ? "&" : "|", a[1]);
        } else if (op == TIR_NOT) {
            t = sfmt("(%s ^ 1)", a[0]);
        } else {
            const char *nm =
                op == TIR_CALL ? tir_intrin_name((tir_intrin)e->aux) : tir_op_name((tir_op)op);
            t = lane_call(r, nm, op, e->aux, dt, L, odt, n, adt, a);
        }
        for (int k = 0; k < n; k++)
            free(a[k]);
        return t;
    }
    case TIR_SELECT: {
        tir_node c = e->src[0];
        char *a[3];
        a[1] = ex_at(r, e->src[1], L);
        a[2] = ex_at(r, e->src[2], L);
        char *t;
        if (c->lanes == 1 || c->op == TIR_BROADCAST) {
            /* a condition the same in every lane picks whole vectors */
            a[0] = ex(r, c->lanes == 1 ? c : c->src[0]);
            t = scalar_text(r, TIR_SELECT, 0, dt, dt, a);
        } else {
            a[0] = ex(r, c);
            kiln_dtype adt[3] = {KILN_BOOL, dt, dt};
            t = lane_call(r, "select", TIR_SELECT, 0, dt, L, dt, 3, adt, a);
        }
        for (int k = 0; k < 3; k++)
            free(a[k]);
        return t;
    }
    case TIR_CAST: return cast_expr(r, dt, e->src[0]);
    case TIR_LOAD: return ex_load(r, e);
    case TIR_RAMP: {
        char *b = ex(r, e->src[0]), *s = ex(r, e->src[1]);
        if (L == 1) {
            free(s);
            return b;
        }
        char vt[48], name[64];
        vtype(r, vt, dt, L);
        snprintf(name, sizeof name, "kiln_ramp_%s", vt + 5);
        if (!have_helper(r, name))
            add_helper(r, name,
                       sfmt("static inline %s %s(%s b, %s s) {\n    %s r;\n    for (int i = 0; i < "
                            "%d; i++) r[i] = (%s)(b + (%s)i * s);\n    return r;\n}\n",
                            vt, name, g_types[dt].c, g_types[dt].c, vt, L, g_types[dt].c,
                            g_types[dt].c));
        char *t = sfmt("%s(%s, %s)", name, b, s);
        free(b);
        free(s);
        return t;
    }
    case TIR_BROADCAST: return ex_at(r, e->src[0], L);
    default:
        fail(r, KILN_ERR_INVALID, "cannot render %s in the C back end (lower it first)",
             tir_op_name((tir_op)op));
        return sdup("0");
    }
}

/* ---- analysis: pointer sets, free variables, register promotion ------------------------ */

typedef struct {
    const void **keys;
    size_t cap, count;
} pset;

/* 1 if p was already in the set; else adds it. */
static int pset_add(pset *s, const void *p) {
    if ((s->count + 1) * 2 > s->cap) {
        pset o = *s;
        s->cap = o.cap ? o.cap * 2 : 64;
        s->keys = calloc(s->cap, sizeof(void *));
        KILN_ASSERT(s->keys);
        s->count = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.keys[i])
                pset_add(s, o.keys[i]);
        free(o.keys);
    }
    size_t j = ((uintptr_t)p >> 4) * 2654435761u & (s->cap - 1);
    while (s->keys[j]) {
        if (s->keys[j] == p)
            return 1;
        j = (j + 1) & (s->cap - 1);
    }
    s->keys[j] = p;
    s->count++;
    return 0;
}

static int pset_has(const pset *s, const void *p) {
    if (!s->cap)
        return 0;
    size_t j = ((uintptr_t)p >> 4) * 2654435761u & (s->cap - 1);
    while (s->keys[j]) {
        if (s->keys[j] == p)
            return 1;
        j = (j + 1) & (s->cap - 1);
    }
    return 0;
}

typedef struct {
    pset seen, defined;
    tir_node *used;
    int nused, capused;
} freevars;

static void fv_walk(freevars *fv, tir_node n) {
    if (pset_add(&fv->seen, n))
        return;
    if (n->op == TIR_VAR) {
        if (fv->nused == fv->capused) {
            fv->capused = fv->capused ? fv->capused * 2 : 16;
            fv->used = realloc(fv->used, (size_t)fv->capused * sizeof(tir_node));
            KILN_ASSERT(fv->used);
        }
        fv->used[fv->nused++] = n;
        return;
    }
    if (n->op == TIR_FOR || n->op == TIR_ALLOCATE)
        pset_add(&fv->defined, n->src[0]);
    for (uint32_t i = 0; i < n->nsrc; i++)
        fv_walk(fv, n->src[i]);
}

typedef struct {
    tir_node buf;
    int64_t count;
    int lanes, ok;
    pset seen;
} promo;

static void promo_walk(promo *p, tir_node n) {
    if (!p->ok || pset_add(&p->seen, n))
        return;
    if (n == p->buf) {
        p->ok = 0; /* used other than as a load/store target */
        return;
    }
    if ((n->op == TIR_LOAD || n->op == TIR_STORE) && n->src[0] == p->buf) {
        tir_node idx = n->src[1];
        int64_t base = -1, s = 0;
        int l = idx->lanes;
        if (l == 1)
            tir_const_int(idx, &base);
        else if (!(idx->op == TIR_RAMP && tir_const_int(idx->src[0], &base) &&
                   tir_const_int(idx->src[1], &s) && s == 1))
            base = -1;
        if (base < 0 || base + l > p->count || base % l || (p->lanes && p->lanes != l)) {
            p->ok = 0;
            return;
        }
        p->lanes = l;
        for (uint32_t i = 2; i < n->nsrc; i++)
            promo_walk(p, n->src[i]);
        return;
    }
    if (n->op == TIR_FOR && n->aux == TIR_FOR_PARALLEL && tir_uses_var(n, p->buf)) {
        p->ok = 0;
        return;
    }
    for (uint32_t i = 0; i < n->nsrc; i++)
        promo_walk(p, n->src[i]);
}

/* ---- statements ------------------------------------------------------------------------- */

static void line(kstr *o, int ind, const char *fmt, ...) KILN_PRINTF(3, 4);
static void line(kstr *o, int ind, const char *fmt, ...) {
    for (int i = 0; i < ind; i++)
        kstr_puts(o, "    ");
    va_list ap;
    va_start(ap, fmt);
    kstr_vprintf(o, fmt, ap);
    va_end(ap);
    kstr_putc(o, '\n');
}

/* Free the heap buffers of the current C function, then return `value`. */
static void emit_return(render *r, kstr *o, int ind, const char *value) {
    for (int i = r->na - 1; i >= r->exit_base; i--) {
        if (!r->allocs[i].heap)
            continue;
        char *n = var_name(r->allocs[i].buf);
        line(o, ind, "kiln__api->workspace_free(%s);", n);
        free(n);
    }
    line(o, ind, "return %s;", value);
}

static void stmt(render *r, kstr *o, tir_node s, int ind);
static int alloc_begin(render *r, kstr *o, tir_node s, int ind);
static void alloc_end(render *r, kstr *o, int ind);

static void push_alloc(render *r, alloc_info ai) {
    if (r->na == r->capa) {
        r->capa = r->capa ? r->capa * 2 : 8;
        r->allocs = realloc(r->allocs, (size_t)r->capa * sizeof(alloc_info));
        KILN_ASSERT(r->allocs);
    }
    r->allocs[r->na++] = ai;
}

static void stmt_parallel(render *r, kstr *o, tir_node s, int ind) {
    tir_node v = s->src[0], body = s->src[3];
    int k = r->npar++;
    char fn[160];
    snprintf(fn, sizeof fn, "%s__par%d", r->fname, k);
    freevars fv = {0};
    fv_walk(&fv, body);
    kstr *pre = &r->pre, inner;
    kstr_init(&inner);
    kstr_printf(pre, "struct %s_cl {\n", fn);
    char *vn = var_name(v), *mn = ex(r, s->src[1]), *en = ex(r, s->src[2]);
    kstr init;
    kstr_init(&init);
    kstr decl;
    kstr_init(&decl);
    for (int i = 0; i < fv.nused; i++) {
        tir_node u = fv.used[i];
        if (u == v || pset_has(&fv.defined, u))
            continue;
        char *un = var_name(u), t[48];
        if (u->dtype == KILN_HANDLE) {
            kiln_dtype el = (kiln_dtype)u->aux;
            if ((unsigned)el >= KILN_HANDLE)
                el = KILN_UINT8;
            kstr_printf(pre, "    %s *%s;\n", g_types[el].c, un);
            line(&decl, 1, "%s *restrict %s = kiln__cl->%s;", g_types[el].c, un, un);
        } else {
            vtype(r, t, (kiln_dtype)u->dtype, 1);
            kstr_printf(pre, "    %s %s;\n", t, un);
            line(&decl, 1, "const %s %s = kiln__cl->%s;", t, un, un);
        }
        kstr_printf(&init, "%s, ", un);
        free(un);
    }
    kstr_printf(pre, "    int64_t kiln__min;\n};\n");
    kstr_printf(&init, "%s", mn);
    /* the outlined body: allocations that do not depend on the loop variable
       are made once per chunk rather than once per iteration */
    int saved_base = r->exit_base, nh = 0;
    r->exit_base = r->na;
    r->in_par = 1;
    line(&inner, 1, "const int64_t %s_lo = kiln__cl->kiln__min + kiln__begin;", vn);
    line(&inner, 1, "const int64_t %s_hi = kiln__cl->kiln__min + kiln__end;", vn);
    while (body->op == TIR_ALLOCATE && !tir_uses_var(body->src[1], v) &&
           alloc_begin(r, &inner, body, 1 + nh)) {
        body = body->src[2];
        nh++;
    }
    line(&inner, 1 + nh, "for (%s %s = %s_lo; %s < %s_hi; ++%s) {", g_types[v->dtype].c, vn, vn, vn,
         vn, vn);
    stmt(r, &inner, body, 2 + nh);
    line(&inner, 1 + nh, "}");
    while (nh > 0)
        alloc_end(r, &inner, nh--);
    r->in_par = 0;
    r->exit_base = saved_base;
    kstr_printf(
        pre, "static int %s(int64_t kiln__begin, int64_t kiln__end, void *kiln__closure) {\n", fn);
    kstr_printf(pre, "    const struct %s_cl *kiln__cl = (const struct %s_cl *)kiln__closure;\n",
                fn, fn);
    if (decl.buf)
        kstr_puts(pre, decl.buf);
    if (inner.buf)
        kstr_puts(pre, inner.buf);
    line(pre, 1, "return 0;");
    kstr_puts(pre, "}\n\n");
    /* the call */
    line(o, ind, "{");
    line(o, ind + 1, "struct %s_cl kiln__cl%d = {%s};", fn, k, init.buf);
    line(o, ind + 1, "int kiln__r%d = kiln__api->parallel_for(%s, %s, &kiln__cl%d);", k, en, fn, k);
    line(o, ind + 1, "if (kiln__r%d) {", k);
    char rv[32];
    snprintf(rv, sizeof rv, "kiln__r%d", k);
    emit_return(r, o, ind + 2, rv);
    line(o, ind + 1, "}");
    line(o, ind, "}");
    free(vn);
    free(mn);
    free(en);
    kstr_free(&init);
    kstr_free(&decl);
    kstr_free(&inner);
    free(fv.used);
    free(fv.seen.keys);
    free(fv.defined.keys);
}

static void stmt_for(render *r, kstr *o, tir_node s, int ind) {
    tir_node v = s->src[0], mn = s->src[1], ext = s->src[2];
    tir_for_kind kind = (tir_for_kind)s->aux;
    if (kind == TIR_FOR_THREAD) {
        fail(r, KILN_ERR_UNSUPPORTED,
             "loop '%s' is bound to %s, which the CPU back end cannot run; remove the bind or use "
             "a GPU target",
             v->name ? v->name : "?", s->name ? s->name : "a thread axis");
        return;
    }
    if (v->op != TIR_VAR || (unsigned)v->dtype >= KILN_HANDLE || !tir_is_int_dtype(v->dtype)) {
        fail(r, KILN_ERR_INVALID, "loop variable must be an integer variable");
        return;
    }
    if (kind == TIR_FOR_PARALLEL && !r->in_par) {
        stmt_parallel(r, o, s, ind);
        return;
    }
    char *vn = var_name(v), *m = ex(r, mn), *e = ex(r, ext);
    const char *T = g_types[v->dtype].c;
    int64_t m0, e0;
    if (kind == TIR_FOR_UNROLLED)
        line(o, ind, "#pragma GCC unroll 8");
    if (tir_const_int(mn, &m0) && tir_const_int(ext, &e0)) {
        char *end = const_int((kiln_dtype)v->dtype, m0 + e0);
        line(o, ind, "for (%s %s = %s; %s < %s; ++%s) {", T, vn, m, vn, end, vn);
        free(end);
        stmt(r, o, s->src[3], ind + 1);
        line(o, ind, "}");
    } else {
        line(o, ind, "{");
        line(o, ind + 1, "const %s %s_end = %s + %s;", T, vn, m, e);
        if (kind == TIR_FOR_UNROLLED)
            line(o, ind + 1, "#pragma GCC unroll 8");
        line(o, ind + 1, "for (%s %s = %s; %s < %s_end; ++%s) {", T, vn, m, vn, vn, vn);
        stmt(r, o, s->src[3], ind + 2);
        line(o, ind + 1, "}");
        line(o, ind, "}");
    }
    free(vn);
    free(m);
    free(e);
}

/* Open an ALLOCATE's scope: "{" and the declaration (stack array, promoted
 * registers, or checked heap buffer); 0 on error. */
static int alloc_begin(render *r, kstr *o, tir_node s, int ind) {
    tir_node buf = s->src[0], cnt = s->src[1], body = s->src[2];
    kiln_dtype el = (kiln_dtype)buf->aux;
    if (buf->op != TIR_VAR || buf->dtype != KILN_HANDLE || (unsigned)el >= KILN_HANDLE) {
        fail(r, KILN_ERR_INVALID, "allocate needs a buffer variable");
        return 0;
    }
    size_t esz = kiln_dtype_size(el);
    const char *T = g_types[el].c;
    int64_t c;
    int local = s->name && strcmp(s->name, "local") == 0;
    int stack = local && tir_const_int(cnt, &c) && c >= 0 && (uint64_t)c * esz <= 65536;
    char *bn = var_name(buf);
    alloc_info ai = {buf, 0, 1, !stack};
    line(o, ind, "{");
    if (stack) {
        promo p = {buf, c, 0, 1, {0}};
        promo_walk(&p, body);
        free(p.seen.keys);
        if (p.ok && p.lanes && c / p.lanes <= 128) {
            char vt[48];
            vtype(r, vt, el, p.lanes);
            ai.promoted = 1;
            ai.lanes = p.lanes;
            for (int64_t k = 0; k < (c + p.lanes - 1) / p.lanes; k++)
                line(o, ind + 1, "%s %s_r%lld = {0};", vt, bn, (long long)k);
        } else {
            line(o, ind + 1, "%s %s[%lld] __attribute__((aligned(64)));", T, bn,
                 (long long)(c ? c : 1));
        }
    } else {
        add_helper(r, "kiln_alloc",
                   sdup("static inline void *kiln_alloc(int64_t n, size_t esz) {\n"
                        "    if (n > 0 && (uint64_t)n > SIZE_MAX / esz - 64) return NULL;\n"
                        "    return kiln__api->workspace_alloc(n > 0 ? (size_t)n * esz : 1);\n"
                        "}\n"));
        char *ce = ex(r, cnt);
        line(o, ind + 1, "%s *restrict %s = (%s *)kiln_alloc(%s, %zu);", T, bn, T, ce, esz);
        free(ce);
        line(o, ind + 1, "if (!%s) {", bn);
        emit_return(r, o, ind + 2, "1");
        line(o, ind + 1, "}");
    }
    free(bn);
    push_alloc(r, ai);
    return 1;
}

/* Close the scope alloc_begin opened (freeing a heap buffer). */
static void alloc_end(render *r, kstr *o, int ind) {
    alloc_info *ai = &r->allocs[--r->na];
    if (ai->heap) {
        char *bn = var_name(ai->buf);
        line(o, ind + 1, "kiln__api->workspace_free(%s);", bn);
        free(bn);
    }
    line(o, ind, "}");
}

static void stmt_allocate(render *r, kstr *o, tir_node s, int ind) {
    if (!alloc_begin(r, o, s, ind))
        return;
    stmt(r, o, s->src[2], ind + 1);
    alloc_end(r, o, ind);
}

static void stmt_store(render *r, kstr *o, tir_node s, int ind) {
    tir_node buf = s->src[0], idx = s->src[1], val = s->src[2];
    if (buf->op != TIR_VAR || buf->dtype != KILN_HANDLE || (unsigned)buf->aux >= KILN_HANDLE) {
        fail(r, KILN_ERR_INVALID, "store needs a buffer variable");
        return;
    }
    kiln_dtype el = (kiln_dtype)buf->aux;
    int L = idx->lanes;
    if (!lanes_ok(L) || (val->lanes != L && val->lanes != 1)) {
        fail(r, KILN_ERR_INVALID, "store of %d lanes at an index of %d lanes", val->lanes, L);
        return;
    }
    char *v = cast_expr(r, el, val);
    if (val->lanes == 1 && L > 1)
        v = splat(r, el, L, v);
    alloc_info *ai = find_alloc(r, buf);
    char *bn = var_name(buf);
    if (ai && ai->promoted) {
        char *ref = promoted_ref(r, ai, idx);
        line(o, ind, "%s = %s;", ref, v);
        free(ref);
    } else if (L == 1) {
        char *i = ex(r, idx);
        line(o, ind, "%s[%s] = %s;", bn, i, v);
        free(i);
    } else if (is_contig_ramp(idx)) {
        char *b = ex(r, idx->src[0]);
        line(o, ind, "%s(%s + %s, %s);", mem_helper(r, "vstore", el, L, el), bn, b, v);
        free(b);
    } else {
        char *i = ex(r, idx);
        line(o, ind, "%s(%s, %s, %s);", mem_helper(r, "scatter", el, L, (kiln_dtype)idx->dtype), bn,
             i, v);
        free(i);
    }
    free(bn);
    free(v);
}

static void stmt(render *r, kstr *o, tir_node s, int ind) {
    if (r->st)
        return;
    switch (s->op) {
    case TIR_FOR: stmt_for(r, o, s, ind); return;
    case TIR_ALLOCATE: stmt_allocate(r, o, s, ind); return;
    case TIR_STORE: stmt_store(r, o, s, ind); return;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            stmt(r, o, s->src[i], ind);
        return;
    case TIR_IF: {
        if (s->src[0]->lanes != 1) {
            fail(r, KILN_ERR_INVALID, "if condition must be a scalar");
            return;
        }
        char *c = ex(r, s->src[0]);
        line(o, ind, "if (%s) {", c);
        free(c);
        stmt(r, o, s->src[1], ind + 1);
        if (s->nsrc > 2) {
            line(o, ind, "} else {");
            stmt(r, o, s->src[2], ind + 1);
        }
        line(o, ind, "}");
        return;
    }
    default:
        fail(r, KILN_ERR_INVALID, "cannot render %s as a statement in the C back end",
             tir_op_name((tir_op)s->op));
    }
}

/* ---- functions and the module -------------------------------------------------------- */

static int valid_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

static void render_func(render *r, kstr *out, const tir_func *f) {
    r->fname = f->name;
    r->npar = 0;
    r->na = r->exit_base = r->in_par = 0;
    kstr_init(&r->pre);
    kstr body;
    kstr_init(&body);
    stmt(r, &body, f->body, 1);
    if (r->pre.buf)
        kstr_puts(out, r->pre.buf);
    kstr_free(&r->pre);
    kstr_printf(out,
                "__attribute__((visibility(\"default\")))\n"
                "int32_t %s(void *const *args, const int64_t *vars) {\n"
                "    (void)args;\n    (void)vars;\n",
                f->name);
    for (int i = 0; i < f->nparams; i++) {
        tir_node b = f->params[i].buf;
        kiln_dtype el = (kiln_dtype)b->aux;
        if (b->op != TIR_VAR || b->dtype != KILN_HANDLE || (unsigned)el >= KILN_HANDLE) {
            fail(r, KILN_ERR_INVALID, "parameter %d of '%s' has no buffer variable", i, f->name);
            break;
        }
        char *n = var_name(b);
        line(out, 1, "%s *restrict %s = (%s *)args[%d];", g_types[el].c, n, g_types[el].c, i);
        free(n);
    }
    for (int k = 0; k < f->nvars; k++) {
        char *n = var_name(f->vars[k]);
        line(out, 1, "const int64_t %s = vars[%d];", n, k);
        line(out, 1, "(void)%s;", n);
        free(n);
    }
    if (body.buf)
        kstr_puts(out, body.buf);
    kstr_puts(out, "    return 0;\n}\n\n");
    kstr_free(&body);
}

/* Append s to a C string literal body, escaping quotes, backslashes and spaces-in-names. */
static void meta_name(kstr *m, const char *s) {
    if (!s || !*s)
        s = "_";
    for (; *s; s++) {
        if (isspace((unsigned char)*s))
            kstr_putc(m, '_');
        else if (*s == '"' || *s == '\\')
            kstr_printf(m, "\\%c", *s);
        else if (!isprint((unsigned char)*s))
            kstr_printf(m, "\\%03o", (unsigned char)*s);
        else
            kstr_putc(m, *s);
    }
}

static void render_meta(render *r, kstr *m, int nfuncs, const tir_func *funcs) {
    kstr_puts(m, "__attribute__((visibility(\"default\")))\nconst char kiln_module_meta[] =\n"
                 "    \"kiln-module 1\\n\"\n");
    for (int i = 0; i < nfuncs; i++) {
        const tir_func *f = &funcs[i];
        kstr_printf(m, "    \"func %s %d %d\\n\"\n", f->name, f->nparams, f->nvars);
        for (int k = 0; k < f->nvars; k++) {
            kstr_puts(m, "    \"var ");
            meta_name(m, f->vars[k]->name);
            kstr_puts(m, "\\n\"\n");
        }
        for (int a = 0; a < f->nparams; a++) {
            const tir_param *p = &f->params[a];
            kstr_puts(m, "    \"arg ");
            meta_name(m, p->name);
            kstr_printf(m, " %s %d", kiln_dtype_name(p->dtype), p->ndim);
            for (int d = 0; d < p->ndim; d++) {
                tir_node dim = p->shape[d];
                int64_t v;
                int found = -1;
                if (tir_const_int(dim, &v)) {
                    kstr_printf(m, " %lld", (long long)v);
                    continue;
                }
                for (int k = 0; k < f->nvars; k++)
                    if (f->vars[k] == dim)
                        found = k;
                if (found < 0) {
                    fail(
                        r, KILN_ERR_INVALID,
                        "dim %d of argument '%s' of '%s' is neither a constant nor a size variable",
                        d, p->name ? p->name : "?", f->name);
                    return;
                }
                kstr_printf(m, " $%d", found);
            }
            kstr_puts(m, "\\n\"\n");
        }
    }
    kstr_puts(m, "    \"end\\n\";\n");
}

/* The text every part starts with. Part 0 of several (or the only part)
 * defines the module's entry kiln_module_init and the API pointer, the
 * others refer to it (hidden: it stays inside mod.so). */
static void render_prelude(kstr *all, int part, int nparts) {
    kstr_puts(all,
              "/* Generated by kiln. Do not edit. */\n"
              "#include <stdint.h>\n#include <string.h>\n#include <stdlib.h>\n#include <math.h>\n"
              "\n"
              "#if defined(__GNUC__) && !defined(__clang__)\n"
              "#pragma GCC diagnostic ignored \"-Wpsabi\" /* wide vectors in static helpers */\n"
              "#endif\n"
              "#define KILN_MODULE_ABI_VERSION 2\n"
              "typedef struct {\n"
              "    int version;\n"
              "    int (*parallel_for)(int64_t n, int (*fn)(int64_t begin, int64_t end, void "
              "*closure),\n"
              "                        void *closure);\n"
              "    void *(*workspace_alloc)(size_t bytes);\n"
              "    void (*workspace_free)(void *p);\n"
              "} kiln_module_api;\n\n");
    if (nparts == 1)
        kstr_puts(all, "static const kiln_module_api *kiln__api;\n\n");
    else
        kstr_printf(all, "%s__attribute__((visibility(\"hidden\"))) const kiln_module_api *kiln__api;\n\n",
                    part ? "extern " : "");
    if (part == 0)
        kstr_puts(all, "__attribute__((visibility(\"default\")))\n"
                       "int kiln_module_init(const kiln_module_api *api) {\n"
                       "    if (!api || api->version != KILN_MODULE_ABI_VERSION) return 1;\n"
                       "    kiln__api = api;\n"
                       "    return 0;\n"
                       "}\n\n");
}

int codegen_render_c_parts(int nfuncs, const tir_func *funcs, int nparts, char **parts) {
    render r = {0};
    for (int i = 0; i < nfuncs; i++) {
        const char *n = funcs[i].name;
        if (!valid_ident(n) || !strncmp(n, "kiln_", 5)) {
            kiln_set_error(KILN_ERR_INVALID,
                           "function name '%s' is not a valid C identifier (or uses the reserved "
                           "prefix 'kiln_')",
                           n ? n : "(null)");
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(funcs[j].name, n)) {
                kiln_set_error(KILN_ERR_INVALID, "two functions are named '%s'", n);
                return -1;
            }
    }
    if (nparts > nfuncs)
        nparts = nfuncs;
    if (nparts < 1)
        nparts = 1;
    kstr fns, meta;
    kstr_init(&fns);
    kstr_init(&meta);
    size_t *ends = calloc((size_t)nfuncs + 1, sizeof(size_t)); /* fns.len after function i */
    KILN_ASSERT(ends);
    for (int i = 0; i < nfuncs && !r.st; i++) {
        render_func(&r, &fns, &funcs[i]);
        ends[i] = fns.len;
        if (r.st)
            kiln_error_prefix("function '%s'", funcs[i].name);
    }
    if (!r.st)
        render_meta(&r, &meta, nfuncs, funcs);
    int made = r.st ? -1 : nparts;
    /* part k takes the functions whose text ends within its share of the
       whole, so the parts compile in about the same time */
    for (int k = 0, f = 0; k < made; k++) {
        kstr all;
        kstr_init(&all);
        render_prelude(&all, k, nparts);
        for (int i = 0; i < r.nh; i++)
            kstr_puts(&all, r.helpers[i].text);
        if (r.nh)
            kstr_putc(&all, '\n');
        size_t from = f ? ends[f - 1] : 0, upto = fns.len * (size_t)(k + 1) / (size_t)nparts;
        for (int first = f; f < nfuncs; f++) {
            int last = k == nparts - 1;
            if (!last && nfuncs - (f + 1) < nparts - 1 - k)
                break; /* leave one function to each later part */
            if (!last && f > first && ends[f] > upto)
                break;
        }
        size_t to = f ? ends[f - 1] : 0;
        if (to > from)
            kstr_printf(&all, "%.*s", (int)(to - from), fns.buf + from);
        if (k == 0 && meta.buf)
            kstr_puts(&all, meta.buf);
        parts[k] = kstr_take(&all);
    }
    for (int i = 0; i < r.nh; i++) {
        free(r.helpers[i].key);
        free(r.helpers[i].text);
    }
    free(r.helpers);
    free(r.allocs);
    free(ends);
    kstr_free(&fns);
    kstr_free(&meta);
    return made;
}

char *codegen_render_c(int nfuncs, const tir_func *funcs) {
    char *src = NULL;
    return codegen_render_c_parts(nfuncs, funcs, 1, &src) == 1 ? src : NULL;
}
