/* c_base.c: the C renderer's vocabulary, shared by every C-like back end:
 * the dtype table, the renderer state (the first error, the registry of
 * static inline helpers), names and exact constants, scalar operators and
 * casts, vector types, splats, vector loads/stores/gathers/scatters and
 * per-lane helpers. c_render_internal.h says how the renderer's files fit.
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

#include "c_render_internal.h"

/* ---- dtype table ------------------------------------------------------------ */

const cg_type cg_types[KILN_DTYPE_COUNT] = {
    [KILN_FLOAT32] = {"float", "f32", "f"},     [KILN_FLOAT16] = {"_Float16", "f16", "f"},
    [KILN_BFLOAT16] = {"uint16_t", "bf16", ""}, [KILN_INT8] = {"int8_t", "i8", NULL},
    [KILN_UINT8] = {"uint8_t", "u8", NULL},     [KILN_INT32] = {"int32_t", "i32", NULL},
    [KILN_INT64] = {"int64_t", "i64", NULL},    [KILN_BOOL] = {"uint8_t", "b8", NULL},
    [KILN_FLOAT64] = {"double", "f64", ""},     [KILN_INT16] = {"int16_t", "i16", NULL},
    [KILN_UINT16] = {"uint16_t", "u16", NULL},  [KILN_UINT32] = {"uint32_t", "u32", NULL},
    [KILN_UINT64] = {"uint64_t", "u64", NULL},
};

static const char *g_intrin_c[TIR_INTRIN_COUNT] = {
    [TIR_EXP] = "exp",     [TIR_LOG] = "log",         [TIR_SQRT] = "sqrt",   [TIR_TANH] = "tanh",
    [TIR_ERF] = "erf",     [TIR_POW] = "pow",         [TIR_FLOOR] = "floor", [TIR_CEIL] = "ceil",
    [TIR_ABS] = "fabs",    [TIR_ROUND] = "nearbyint", [TIR_SIN] = "sin",     [TIR_COS] = "cos",
    [TIR_TAN] = "tan",     [TIR_ASIN] = "asin",       [TIR_ACOS] = "acos",   [TIR_ATAN] = "atan",
    [TIR_SINH] = "sinh",   [TIR_COSH] = "cosh",       [TIR_ASINH] = "asinh", [TIR_ACOSH] = "acosh",
    [TIR_ATANH] = "atanh",
};

const char *const cg_binop_c[TIR_OP_COUNT] = {
    [TIR_ADD] = "+", [TIR_SUB] = "-", [TIR_MUL] = "*", [TIR_DIV] = "/",
    [TIR_MOD] = "%", [TIR_EQ] = "==", [TIR_NE] = "!=", [TIR_LT] = "<",
    [TIR_LE] = "<=", [TIR_GT] = ">",  [TIR_GE] = ">=",
};

int codegen_vector_ok(kiln_dtype dt, int lanes) {
    if (!kiln_dtype_is_data(dt))
        return 0;
    if (lanes == 1)
        return 1;
    if (lanes < 2 || lanes > 64 || (lanes & (lanes - 1)))
        return 0;
    return kiln_dtype_size(dt) * (size_t)lanes <= 256;
}

int cg_lanes_ok(int lanes) {
    return lanes >= 1 && lanes <= 64 && !(lanes & (lanes - 1));
}

/* ---- the renderer state ---------------------------------------------------------- */

void cg_fail(cg_render *r, kiln_status st, const char *fmt, ...) {
    if (r->st)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->st = kiln_set_error(st, "%s", buf);
}

char *cg_sfmt(const char *fmt, ...) {
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

char *cg_sdup(const char *s) {
    return cg_sfmt("%s", s);
}

int cg_have_helper(cg_render *r, const char *key) {
    for (int i = 0; i < r->nh; i++)
        if (strcmp(r->helpers[i].key, key) == 0)
            return 1;
    return 0;
}

void cg_add_helper(cg_render *r, const char *key, char *text) {
    if (cg_have_helper(r, key)) {
        free(text);
        return;
    }
    if (r->nh == r->caph) {
        r->caph = r->caph ? r->caph * 2 : 32;
        r->helpers = realloc(r->helpers, (size_t)r->caph * sizeof(cg_helper));
        KILN_ASSERT(r->helpers);
    }
    r->helpers[r->nh].key = cg_sdup(key);
    r->helpers[r->nh].text = text;
    r->nh++;
}

cg_alloc *cg_find_alloc(cg_render *r, tir_node buf) {
    for (int i = r->na - 1; i >= 0; i--)
        if (r->allocs[i].buf == buf)
            return &r->allocs[i];
    return NULL;
}

/* ---- names and constants ------------------------------------------------------------ */

/* canon: variables by their order of first use, an open-addressing table
   keyed by node */
struct cg_names {
    tir_node *key;
    int64_t *index;
    size_t cap, count;
};

void cg_names_reset(cg_render *r) {
    if (r->names) {
        free(r->names->key);
        free(r->names->index);
        free(r->names);
        r->names = NULL;
    }
}

static int64_t canon_index(cg_render *r, tir_node v) {
    struct cg_names *m = r->names;
    if (!m) {
        m = r->names = calloc(1, sizeof *m);
        KILN_ASSERT(m);
    }
    if ((m->count + 1) * 2 > m->cap) {
        struct cg_names o = *m;
        m->cap = o.cap ? o.cap * 2 : 64;
        m->key = calloc(m->cap, sizeof(tir_node));
        m->index = malloc(m->cap * sizeof(int64_t));
        KILN_ASSERT(m->key && m->index);
        for (size_t i = 0; i < o.cap; i++)
            if (o.key[i]) {
                size_t h = ((uintptr_t)o.key[i] >> 4) & (m->cap - 1);
                while (m->key[h])
                    h = (h + 1) & (m->cap - 1);
                m->key[h] = o.key[i];
                m->index[h] = o.index[i];
            }
        free(o.key);
        free(o.index);
    }
    size_t h = ((uintptr_t)v >> 4) & (m->cap - 1);
    while (m->key[h] && m->key[h] != v)
        h = (h + 1) & (m->cap - 1);
    if (!m->key[h]) {
        m->key[h] = v;
        m->index[h] = (int64_t)m->count++;
    }
    return m->index[h];
}

char *cg_var_name(cg_render *r, tir_node v) {
    if (r->canon)
        return cg_sfmt("v%lld", (long long)canon_index(r, v));
    kstr s;
    kstr_init(&s);
    const char *n = v->name && *v->name ? v->name : "v";
    if (isdigit((unsigned char)n[0]))
        kstr_putc(&s, 'v');
    for (; *n; n++)
        kstr_putc(&s, isalnum((unsigned char)*n) || *n == '_' ? *n : '_');
    kstr_printf(&s, "_%lld", (long long)canon_index(r, v));
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

char *cg_const_float(kiln_dtype dt, double v) {
    if (!cg_is_float(dt))
        return cg_const_int(dt, (int64_t)v);
    if (dt == KILN_BFLOAT16)
        return cg_sfmt("((uint16_t)0x%04x)", f32_to_bf16((float)v));
    int dbl = dt == KILN_FLOAT64;
    const char *cast = dt == KILN_FLOAT16 ? "(_Float16)" : dbl ? "(double)" : "";
    if (isnan(v))
        return cg_sfmt("(%sNAN)", cast);
    if (isinf(v))
        return cg_sfmt("(%s%sINFINITY)", cast, v < 0 ? "-" : "");
    char num[64];
    if (dbl)
        snprintf(num, sizeof num, "%.17g", v);
    else
        snprintf(num, sizeof num, "%.9g", (double)(float)v);
    if (!strpbrk(num, ".e"))
        strcat(num, ".0");
    const char *suf = dbl ? "" : "f";
    if (dt == KILN_FLOAT16)
        return cg_sfmt("((_Float16)%s%s)", num, suf);
    return num[0] == '-' ? cg_sfmt("(%s%s)", num, suf) : cg_sfmt("%s%s", num, suf);
}

char *cg_const_int(kiln_dtype dt, int64_t v) {
    if (cg_is_float(dt))
        return cg_const_float(dt, (double)v);
    switch (dt) {
    case KILN_BOOL: return cg_sdup(v ? "1" : "0");
    case KILN_INT8:
    case KILN_UINT8:
    case KILN_INT16:
    case KILN_UINT16: return cg_sfmt("((%s)%lld)", cg_types[dt].c, (long long)v);
    case KILN_UINT32:
    case KILN_UINT64: /* uint64 constants are held as int64 bit patterns */
        return cg_sfmt("((%s)%lluULL)", cg_types[dt].c, (unsigned long long)v);
    case KILN_INT32:
        if (v == INT32_MIN)
            return cg_sdup("(-2147483647 - 1)");
        return v < 0 ? cg_sfmt("(%lld)", (long long)v) : cg_sfmt("%lld", (long long)v);
    default:
        if (v == INT64_MIN)
            return cg_sdup("((int64_t)(-9223372036854775807LL - 1))");
        if (v > INT32_MAX || v < -INT32_MAX)
            return cg_sfmt("((int64_t)%lldLL)", (long long)v);
        return v < 0 ? cg_sfmt("(%lld)", (long long)v) : cg_sfmt("%lld", (long long)v);
    }
}

/* ---- helpers ------------------------------------------------------------------------- */

void cg_vtype(cg_render *r, char out[48], kiln_dtype dt, int lanes) {
    if (lanes == 1) {
        snprintf(out, 48, "%s", cg_types[dt].c);
        return;
    }
    snprintf(out, 48, "kiln_%sx%d", cg_types[dt].tag, lanes);
    if (!cg_have_helper(r, out))
        cg_add_helper(r, out,
                      cg_sfmt("typedef %s %s __attribute__((vector_size(%zu)));\n", cg_types[dt].c,
                              out, kiln_dtype_size(dt) * (size_t)lanes));
}

static void need_bf16(cg_render *r) {
    cg_add_helper(
        r, "kiln_bf16",
        cg_sdup("static inline float kiln_bf16_to_f32(uint16_t h) {\n"
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

/* A scalar helper kiln_<op>_<tag>(a, b) for floordiv/floormod/min/max/abs
 * and the shifts shl/shr (numpy's: a shift by b outside [0, bits) gives 0,
 * or -1 for a right shift of a negative a). */
static char *scalar_helper_call(cg_render *r, const char *op, kiln_dtype dt, int nargs, char **a) {
    char name[64];
    snprintf(name, sizeof name, "kiln_%s_%s", op, cg_types[dt].tag);
    if (!cg_have_helper(r, name)) {
        const char *T = cg_types[dt].c;
        int fl = cg_is_float(dt), dbl = dt == KILN_FLOAT64;
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
            /* NaN propagates. `|`, not `||`: both sides are pure, and a
               short-circuit is a branch per call, which makes gcc's value
               numbering superlinear in the nesting (a fused chain of 256
               maxima took 13 s to compile, 0.06 s without the branch). */
            body =
                fl ? "    return ((a < b) | (a != a)) ? a : b;\n" : "    return a < b ? a : b;\n";
        else if (!strcmp(op, "shl") || !strcmp(op, "shr")) {
            int bits = (int)kiln_dtype_size(dt) * 8, is_signed = !kiln_dtype_is_unsigned(dt);
            if (op[2] == 'l')
                snprintf(buf, sizeof buf,
                         "    return (uint64_t)b < %d ? (T)((uint64_t)a << b) : (T)0;\n", bits);
            else
                snprintf(buf, sizeof buf, "    return (uint64_t)b < %d ? (T)(a >> b) : (T)%s;\n",
                         bits, is_signed ? "(a < 0 ? -1 : 0)" : "0");
            body = buf;
        } else if (!strcmp(op, "max"))
            body =
                fl ? "    return ((a > b) | (a != a)) ? a : b;\n" : "    return a > b ? a : b;\n";
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
        cg_add_helper(r, name, text);
    }
    return nargs > 1 ? cg_sfmt("%s(%s, %s)", name, a[0], a[1]) : cg_sfmt("%s(%s)", name, a[0]);
}

const char *cg_intdiv_name(int op) {
    switch (op) {
    case TIR_DIV: return "idiv_trunc";
    case TIR_MOD: return "imod_trunc";
    case TIR_FLOORDIV: return "idiv_floor";
    case TIR_FLOORMOD: return "imod_floor";
    default: return NULL;
    }
}

/* An integer division or remainder under base/intdiv.h's rule, by that
 * header's helpers (the module carries its text); narrower types divide in
 * the 32-bit helpers and wrap back to their width. */
static char *intdiv_call(cg_render *r, int op, kiln_dtype dt, char **a) {
    cg_add_helper(r, "kiln_intdiv", cg_sdup(codegen_intdiv_text));
    const char *f = cg_intdiv_name(op);
    if (dt == KILN_UINT32 || dt == KILN_UINT64)
        return cg_sfmt("((%s)kiln_%s_u64(%s, %s))", cg_types[dt].c,
                       op == TIR_DIV || op == TIR_FLOORDIV ? "udiv" : "umod", a[0], a[1]);
    if (dt == KILN_INT64 || dt == KILN_INT32)
        return cg_sfmt("kiln_%s_%s(%s, %s)", f, cg_types[dt].tag, a[0], a[1]);
    return cg_sfmt("((%s)kiln_%s_i32(%s, %s))", cg_types[dt].c, f, a[0], a[1]);
}

char *cg_divisor(cg_render *r, kiln_dtype dt, int lanes, char *b) {
    char vt[48], name[64];
    cg_vtype(r, vt, dt, lanes);
    snprintf(name, sizeof name, "kiln_divisor_%s", lanes > 1 ? vt + 5 : cg_types[dt].tag);
    if (!cg_have_helper(r, name)) {
        if (lanes == 1)
            cg_add_helper(
                r, name,
                cg_sfmt("static inline %s %s(%s b, int32_t *st) {\n"
                        "    if (__builtin_expect(b == 0, 0)) *st |= KILN_KERNEL_EDIVZERO;\n"
                        "    return b;\n}\n",
                        vt, name, vt));
        else
            cg_add_helper(r, name,
                          cg_sfmt("static inline %s %s(%s b, int32_t *st) {\n"
                                  "    int z = 0;\n"
                                  "    for (int i = 0; i < %d; i++) z |= b[i] == 0;\n"
                                  "    if (__builtin_expect(z, 0)) *st |= KILN_KERNEL_EDIVZERO;\n"
                                  "    return b;\n}\n",
                                  vt, name, vt, lanes));
    }
    char *t = cg_sfmt("%s(%s, &kiln__st)", name, b);
    free(b);
    return t;
}

char *cg_check_index(cg_render *r, const char *j, const char *n, int from_end) {
    cg_add_helper(
        r, "kiln_check_index",
        cg_sdup("static inline int64_t kiln_check_index(int64_t j, int64_t n, int "
                "from_end, int32_t *st) {\n"
                "    if (__builtin_expect(j < n && (j >= 0 || (from_end && j >= -n)), 1))\n"
                "        return j < 0 ? j + n : j;\n"
                "    *st |= KILN_KERNEL_EINDEX;\n"
                "    return 0;\n}\n"));
    return cg_sfmt("kiln_check_index(%s, %s, %d, &kiln__st)", j, n, from_end ? 1 : 0);
}

char *cg_cast_text(cg_render *r, kiln_dtype to, kiln_dtype from, const char *a) {
    if (to == from)
        return cg_sdup(a);
    if (from == KILN_BFLOAT16) {
        need_bf16(r);
        if (to == KILN_BOOL)
            return cg_sfmt("(kiln_bf16_to_f32(%s) != 0)", a);
        if (to == KILN_FLOAT32)
            return cg_sfmt("kiln_bf16_to_f32(%s)", a);
        return cg_sfmt("((%s)kiln_bf16_to_f32(%s))", cg_types[to].c, a);
    }
    if (to == KILN_BFLOAT16) {
        need_bf16(r);
        if (from == KILN_FLOAT32)
            return cg_sfmt("kiln_f32_to_bf16(%s)", a);
        return cg_sfmt("kiln_f32_to_bf16((float)(%s))", a);
    }
    if (to == KILN_BOOL)
        return cg_sfmt("((%s) != 0)", a);
    return cg_sfmt("((%s)(%s))", cg_types[to].c, a);
}

/* int32 lanes truncated to 8-bit ones: gcc's __builtin_convertvector does
 * it in one vpmovdb with AVX-512 and lane by lane (about 40 instructions
 * for 16 lanes) with AVX2, where masking to the low byte and two saturating
 * packs give the same bits. */
static char *narrow_call(cg_render *r, kiln_dtype to, int L, char *a) {
    char vt[48], it[48], name[64];
    cg_vtype(r, vt, to, L);
    cg_vtype(r, it, KILN_INT32, L);
    snprintf(name, sizeof name, "kiln_narrow_%s", vt + 5);
    if (!cg_have_helper(r, name)) {
        kstr t;
        kstr_init(&t);
        kstr_puts(&t, "#if defined(__AVX2__)\n#include <immintrin.h>\n#endif\n");
        kstr_printf(&t, "static inline %s %s(%s v) {\n", vt, name, it);
        kstr_printf(&t, "#if defined(__AVX512F__) && (%d == 16 || defined(__AVX512VL__))\n", L);
        kstr_printf(&t, "    return __builtin_convertvector(v, %s);\n#elif defined(__AVX2__)\n",
                    vt);
        kstr_puts(&t, "    __m256i m = _mm256_set1_epi32(0xff), h[2];\n");
        kstr_printf(&t, "    memcpy(h, &v, %d);\n", L * 4);
        if (L == 16)
            kstr_puts(&t, "    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32("
                          "_mm256_and_si256(h[0], m), _mm256_and_si256(h[1], m)), 0xd8);\n"
                          "    __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w), "
                          "_mm256_extracti128_si256(w, 1));\n");
        else
            kstr_puts(&t, "    __m256i x = _mm256_and_si256(h[0], m);\n"
                          "    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(x), "
                          "_mm256_extracti128_si256(x, 1));\n"
                          "    __m128i b = _mm_packus_epi16(w, w);\n");
        kstr_printf(&t, "    %s r;\n    memcpy(&r, &b, %d);\n    return r;\n", vt, L);
        kstr_printf(&t, "#else\n    return __builtin_convertvector(v, %s);\n#endif\n}\n", vt);
        cg_add_helper(r, name, kstr_take(&t));
    }
    char *c = cg_sfmt("%s(%s)", name, a);
    free(a);
    return c;
}

char *cg_vector_cast(cg_render *r, kiln_dtype to, kiln_dtype from, int L, const char *a) {
    char vt[48];
    cg_vtype(r, vt, to, L);
    int narrow = (to == KILN_UINT8 || to == KILN_INT8) && (L == 8 || L == 16);
    if (narrow && (from == KILN_FLOAT32 || from == KILN_INT32)) {
        /* floats through int32 (vcvttps2dq): gcc converts float lanes to
           8-bit ones one at a time */
        char it[48];
        cg_vtype(r, it, KILN_INT32, L);
        char *w =
            from == KILN_INT32 ? cg_sdup(a) : cg_sfmt("__builtin_convertvector(%s, %s)", a, it);
        return narrow_call(r, to, L, w);
    }
    if ((to == KILN_FLOAT32 || to == KILN_FLOAT64) &&
        (from == KILN_UINT8 || from == KILN_INT8 || from == KILN_UINT16 || from == KILN_INT16)) {
        /* small integers to floats through int32 (vpmovzxbd, vcvtdq2ps):
           gcc converts 8-bit lanes to float ones at a time (16 extracts and
           scalar conversions a vector), which made a dequantize of int8
           data the slowest part of an int8 kernel's epilogue */
        char it[48];
        cg_vtype(r, it, KILN_INT32, L);
        return cg_sfmt("__builtin_convertvector(__builtin_convertvector(%s, %s), %s)", a, it, vt);
    }
    return cg_sfmt("__builtin_convertvector(%s, %s)", a, vt);
}

char *cg_scalar_text(cg_render *r, int op, uint32_t aux, kiln_dtype dt, kiln_dtype odt, char **a) {
    switch (op) {
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_DIV:
    case TIR_MOD:
        if ((aux & CG_DIV_GUARDED) && (op == TIR_DIV || op == TIR_MOD) && !cg_is_float(dt))
            return intdiv_call(r, op, dt, a);
        if (op == TIR_MOD && cg_is_float(dt)) {
            if (dt == KILN_FLOAT16)
                return cg_sfmt("((_Float16)fmodf((float)(%s), (float)(%s)))", a[0], a[1]);
            return cg_sfmt("fmod%s(%s, %s)", cg_types[dt].fsuffix, a[0], a[1]);
        }
        if (cg_is_narrow(dt))
            return cg_sfmt("((%s)(%s %s %s))", cg_types[dt].c, a[0], cg_binop_c[op], a[1]);
        return cg_sfmt("(%s %s %s)", a[0], cg_binop_c[op], a[1]);
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
        if ((aux & CG_DIV_GUARDED) && !cg_is_float(dt))
            return intdiv_call(r, op, dt, a);
        return scalar_helper_call(r, op == TIR_FLOORDIV ? "floordiv" : "floormod", dt, 2, a);
    case TIR_MIN: return scalar_helper_call(r, "min", dt, 2, a);
    case TIR_MAX: return scalar_helper_call(r, "max", dt, 2, a);
    case TIR_EQ:
    case TIR_NE:
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE: return cg_sfmt("(%s %s %s)", a[0], cg_binop_c[op], a[1]);
    case TIR_AND: return cg_sfmt("(%s && %s)", a[0], a[1]);
    case TIR_OR: return cg_sfmt("(%s || %s)", a[0], a[1]);
    case TIR_NOT: return cg_sfmt("(!%s)", a[0]);
    case TIR_SELECT: return cg_sfmt("(%s ? %s : %s)", a[0], a[1], a[2]);
    case TIR_CAST: return cg_cast_text(r, dt, odt, a[0]);
    case TIR_CALL: {
        tir_intrin f = (tir_intrin)aux;
        if (!cg_is_float(dt)) {
            if (f == TIR_ABS)
                return scalar_helper_call(r, "abs", dt, 1, a);
            if (f == TIR_FLOOR || f == TIR_CEIL || f == TIR_ROUND)
                return cg_sfmt("(%s)", a[0]);
            if (f == TIR_SHL || f == TIR_SHR)
                return scalar_helper_call(r, tir_intrin_name(f), dt, 2, a);
            cg_fail(r, KILN_ERR_UNSUPPORTED,
                    "intrinsic %s on %s is not supported: cast to float first", tir_intrin_name(f),
                    kiln_dtype_name(dt));
            return cg_sdup("0");
        }
        if ((unsigned)f >= TIR_INTRIN_COUNT ||
            (!g_intrin_c[f] && f != TIR_RSQRT && f != TIR_SIGMOID)) {
            cg_fail(r, KILN_ERR_UNSUPPORTED, "intrinsic %s on %s is not supported",
                    tir_intrin_name(f), kiln_dtype_name(dt));
            return cg_sdup("0");
        }
        int h = dt == KILN_FLOAT16, dbl = dt == KILN_FLOAT64;
        const char *s = cg_types[dt].fsuffix, *one = dbl ? "1.0" : "1.0f";
        char *x = h ? cg_sfmt("(float)(%s)", a[0]) : cg_sdup(a[0]), *res;
        if (f == TIR_RSQRT)
            res = cg_sfmt("(%s / sqrt%s(%s))", one, s, x);
        else if (f == TIR_SIGMOID)
            res = cg_sfmt("(%s / (%s + exp%s(-(%s))))", one, one, s, x);
        else if (f == TIR_POW) {
            char *y = h ? cg_sfmt("(float)(%s)", a[1]) : cg_sdup(a[1]);
            res = cg_sfmt("pow%s(%s, %s)", s, x, y);
            free(y);
        } else
            res = cg_sfmt("%s%s(%s)", g_intrin_c[f], s, x);
        free(x);
        if (h) {
            char *t = cg_sfmt("((_Float16)%s)", res);
            free(res);
            res = t;
        }
        return res;
    }
    default:
        cg_fail(r, KILN_ERR_INVALID, "cannot render %s", tir_op_name((tir_op)op));
        return cg_sdup("0");
    }
}

/* ---- vectors ---------------------------------------------------------------------------- */

char *cg_splat(cg_render *r, kiln_dtype dt, int lanes, char *a) {
    char vt[48], name[64];
    cg_vtype(r, vt, dt, lanes);
    snprintf(name, sizeof name, "kiln_splat_%s", vt + 5);
    if (!cg_have_helper(r, name)) {
        /* an initializer of `lanes` copies is what gcc turns into one broadcast */
        kstr t;
        kstr_init(&t);
        kstr_printf(&t, "static inline %s %s(%s v) {\n    %s r = {", vt, name, cg_types[dt].c, vt);
        for (int i = 0; i < lanes; i++)
            kstr_puts(&t, i ? ", v" : "v");
        kstr_puts(&t, "};\n    return r;\n}\n");
        char *text = kstr_take(&t);
        KILN_ASSERT(text);
        cg_add_helper(r, name, text);
    }
    char *t = cg_sfmt("%s(%s)", name, a);
    free(a);
    return t;
}

/* The masked memory helpers: lanes whose mask byte is 0 are neither read
 * (their value is 0) nor written. Vectors of 16 or 8 four-byte lanes use
 * the x86 masked moves where the target has them (AVX-512 BW+VL: a k mask;
 * AVX2: vmaskmov), since gcc turns the portable loop into a branch per
 * lane; other vectors and targets take the loop. */
static const char *const mask_isa =
    "#if defined(__x86_64__) && (defined(__AVX2__) || defined(__AVX512F__))\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && "
    "defined(__AVX512VL__)\n"
    "#define KILN_MASK16(m) _mm_test_epi8_mask((__m128i)(m), (__m128i)(m))\n"
    "#endif\n"
    "#if defined(__x86_64__) && defined(__AVX2__)\n"
    "static inline __m256i kiln_mask8(const void *m) {\n"
    "    long long b;\n"
    "    memcpy(&b, m, 8);\n"
    "    return _mm256_cmpgt_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(b)), "
    "_mm256_setzero_si256());\n"
    "}\n"
    "#endif\n";

static char *masked_helper_text(const char *kind, const char *name, const char *vt, const char *T,
                                const char *it, const char *mt, int lanes, int fast) {
    /* the x86 form, under its #if, before the loop's #else (%s: the vector type) */
    const char *x86 = NULL;
    if (fast && lanes == 16 && !strcmp(kind, "mload"))
        x86 = "#ifdef KILN_MASK16\n"
              "    return (%s)_mm512_maskz_loadu_ps(KILN_MASK16(m), p);\n"
              "#else\n";
    else if (fast && lanes == 16 && !strcmp(kind, "mstore"))
        x86 = "#ifdef KILN_MASK16\n"
              "    _mm512_mask_storeu_ps((void *)p, KILN_MASK16(m), (__m512)v);\n"
              "#else\n";
    else if (fast && lanes == 8 && !strcmp(kind, "mload"))
        x86 = "#if defined(__x86_64__) && defined(__AVX2__)\n"
              "    return (%s)_mm256_maskload_ps((const float *)p, kiln_mask8(&m));\n"
              "#else\n";
    else if (fast && lanes == 8 && !strcmp(kind, "mstore"))
        x86 = "#if defined(__x86_64__) && defined(__AVX2__)\n"
              "    _mm256_maskstore_ps((float *)p, kiln_mask8(&m), (__m256)v);\n"
              "#else\n";
    char *pre = x86 ? cg_sfmt(x86, vt) : cg_sdup("");
    const char *post = pre[0] ? "#endif\n" : "";
    char *t;
    if (!strcmp(kind, "mload"))
        t = cg_sfmt("static inline %s %s(const %s *p, %s m) {\n%s    %s v = {0};\n"
                    "    for (int i = 0; i < %d; i++)\n        if (m[i]) v[i] = p[i];\n"
                    "    return v;\n%s}\n",
                    vt, name, T, mt, pre, vt, lanes, post);
    else if (!strcmp(kind, "mstore"))
        t = cg_sfmt("static inline void %s(%s *p, %s m, %s v) {\n%s"
                    "    for (int i = 0; i < %d; i++)\n        if (m[i]) p[i] = v[i];\n%s}\n",
                    name, T, mt, vt, pre, lanes, post);
    else if (!strcmp(kind, "mgather"))
        t = cg_sfmt("static inline %s %s(const %s *p, %s idx, %s m) {\n    %s v = {0};\n"
                    "    for (int i = 0; i < %d; i++)\n        if (m[i]) v[i] = p[idx[i]];\n"
                    "    return v;\n}\n",
                    vt, name, T, it, mt, vt, lanes);
    else
        t = cg_sfmt("static inline void %s(%s *p, %s idx, %s m, %s v) {\n"
                    "    for (int i = 0; i < %d; i++)\n        if (m[i]) p[idx[i]] = v[i];\n}\n",
                    name, T, it, mt, vt, lanes);
    free(pre);
    return t;
}

const char *cg_mem_helper(cg_render *r, const char *kind, kiln_dtype dt, int lanes,
                          kiln_dtype idt) {
    static char name[96];
    char vt[48], it[48], mt[48];
    cg_vtype(r, vt, dt, lanes);
    const char *T = cg_types[dt].c;
    int masked = kind[0] == 'm';
    int gs = strstr(kind, "gather") || strstr(kind, "scatter");
    if (masked)
        cg_vtype(r, mt, KILN_BOOL, lanes);
    if (gs) {
        cg_vtype(r, it, idt, lanes);
        snprintf(name, sizeof name, "kiln_%s_%s_%s", kind, vt + 5, cg_types[idt].tag);
    } else {
        snprintf(name, sizeof name, "kiln_%s_%s", kind, vt + 5);
    }
    if (cg_have_helper(r, name))
        return name;
    char *text;
    if (masked) {
        int fast = kiln_dtype_size(dt) == 4 && (lanes == 16 || lanes == 8) && !gs;
        if (fast)
            cg_add_helper(r, "kiln_mask_isa", cg_sdup(mask_isa));
        text = masked_helper_text(kind, name, vt, T, gs ? it : NULL, mt, lanes, fast);
    } else if (!strcmp(kind, "vload"))
        /* The empty asm keeps the loaded vector in a register: otherwise
           gcc folds a vector reused by several multiply-adds into each of
           them as a memory operand, and a register-blocked kernel reloads
           every weight once per pixel and becomes load-bound. A non-volatile
           asm with equal inputs is still merged (CSE) and hoisted. A vector
           wider than a register (16 doubles read by a float32 kernel of 16
           lanes) has no register to be kept in. */
        text =
            kiln_dtype_size(dt) * (size_t)lanes < 16
                ? cg_sfmt("static inline %s %s(const %s *p) {\n    %s v;\n"
                          "    memcpy(&v, p, sizeof v);\n    return v;\n}\n",
                          vt, name, T, vt)
                : cg_sfmt("static inline %s %s(const %s *p) {\n    %s v;\n"
                          "    memcpy(&v, p, sizeof v);\n"
                          "#if defined(__GNUC__) && defined(__x86_64__) && defined(__AVX512F__) && "
                          "%d <= 64\n"
                          "    __asm__(\"\" : \"+v\"(v));\n"
                          "#elif defined(__GNUC__) && defined(__x86_64__) && defined(__AVX__) && "
                          "%d <= 32\n"
                          "    __asm__(\"\" : \"+x\"(v));\n"
                          "#endif\n"
                          "    return v;\n}\n",
                          vt, name, T, vt, (int)(kiln_dtype_size(dt) * (size_t)lanes),
                          (int)(kiln_dtype_size(dt) * (size_t)lanes));
    else if (!strcmp(kind, "vstore"))
        text = cg_sfmt("static inline void %s(%s *p, %s v) {\n    memcpy(p, &v, sizeof v);\n}\n",
                       name, T, vt);
    else if (!strcmp(kind, "gather"))
        text = cg_sfmt("static inline %s %s(const %s *p, %s idx) {\n    %s v;\n"
                       "    for (int i = 0; i < %d; i++) v[i] = p[idx[i]];\n    return v;\n}\n",
                       vt, name, T, it, vt, lanes);
    else
        text = cg_sfmt("static inline void %s(%s *p, %s idx, %s v) {\n"
                       "    for (int i = 0; i < %d; i++) p[idx[i]] = v[i];\n}\n",
                       name, T, it, vt, lanes);
    cg_add_helper(r, name, text);
    return name;
}

void cg_line(kstr *o, int ind, const char *fmt, ...) {
    for (int i = 0; i < ind; i++)
        kstr_puts(o, "    ");
    va_list ap;
    va_start(ap, fmt);
    kstr_vprintf(o, fmt, ap);
    va_end(ap);
    kstr_putc(o, '\n');
}
