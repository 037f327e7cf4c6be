/* c_vmath.c: the float32 vector math library of the C renderer. exp, log,
 * tanh, sigmoid and erf of float32 vectors as straight vector code (libm's
 * scalar calls are not vectorized without -ffast-math), and the bitwise
 * blends they are built on, which also give NaN-propagating float min/max
 * and selects by a bool vector. Written with GCC vector-extension
 * arithmetic, compare masks and bitwise blends only, so it compiles for any
 * target. Errors against libm are a few ulp at most; NaN, infinities,
 * signed zeros, overflow and subnormal results follow libm
 * (tests/unit/test_codegen_vmath.c). In the templates @F is the float
 * vector type, @I the int32 vector type of the same lanes, and @S their
 * suffix (f32x16). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_render_internal.h"

static const char g_vsel_tmpl[] = "static inline @F kiln_vsel_@S(@I m, @F a, @F b) {\n"
                                  "    @I ai, bi, ri;\n"
                                  "    @F r;\n"
                                  "    memcpy(&ai, &a, sizeof a);\n"
                                  "    memcpy(&bi, &b, sizeof b);\n"
                                  "    ri = (ai & m) | (bi & ~m);\n"
                                  "    memcpy(&r, &ri, sizeof r);\n"
                                  "    return r;\n}\n";

/* e^x = 2^n e^r with x = n ln2 + r (Cody-Waite two-part ln2), |r| <= ln2/2, e^r by Cephes'
   expf polynomial; 2^n is applied as two factors so that results near overflow and in the
   subnormal range round once. The core takes c in [-104, 89], or NaN, which it propagates;
   kiln_exp clamps both ends and passes NaN through; kiln_expneg, for arguments <= 0 (the
   sigmoid's and erf's), clamps the low end only, in a way that keeps NaN, so it needs no NaN
   blend either: six vector ops fewer, a sixth of SiLU's cost. */
static const char g_vexpcore_tmpl[] = "static inline @F kiln_expcore_@S(@F c) {\n"
                                      "    @F n, r, z, p, s1, s2, t;\n"
                                      "    @I k, b1, b2;\n"
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
                                      "    return p * s1 * s2;\n}\n";

static const char g_vexp_tmpl[] =
    "static inline @F kiln_exp_@S(@F x) {\n"
    "    @F c = kiln_vsel_@S(x < 89.0f, x, (@F){0} + 89.0f);\n"
    "    c = kiln_vsel_@S(c > -104.0f, c, (@F){0} - 104.0f);\n"
    "    return kiln_vsel_@S(x == x, kiln_expcore_@S(c), x + x);\n}\n";

static const char g_vexpneg_tmpl[] =
    "static inline @F kiln_expneg_@S(@F x) {\n"
    "    return kiln_expcore_@S(kiln_vsel_@S(x < -104.0f, (@F){0} - 104.0f, x));\n}\n";

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
    "    e = kiln_expneg_@S(na);\n"
    "    return kiln_vsel_@S(x < 0.0f, e, (@F){0} + 1.0f) / (e + 1.0f);\n}\n";

/* erf without division: for |x| < 1, x + x q(x^2); for 1 <= |x| < 3.92,
   1 - e^(-x^2 + p(|x|)) with x^2 split exactly (h has 12 significant bits, so
   h*h is exact) and p a fit of log(erfc(x)) + x^2; past 3.92 erf rounds to 1;
   the sign of x. q (degree 6 in x^2, relative error 1.2e-9) and p (degree 8
   in |x|, absolute error 8e-9) are least-squares fits refined towards
   minimax on Chebyshev nodes, made for kiln. fdlibm's erff, which this
   replaced, evaluates three rational functions and divides: GELU's erf cost a
   fifth of BERT's FFN1. */
static const char g_verf_tmpl[] = "static inline @F kiln_erf_@S(@F x) {\n"
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
                                  "    e = kiln_expneg_@S((p - h * h) - (b - h) * (b + h));\n"
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
static void vsel_helper(cg_render *r, kiln_dtype dt, int lanes, char vt[48], char it[48]) {
    char key[96];
    cg_vtype(r, vt, dt, lanes);
    cg_vtype(r, it, kiln_dtype_size(dt) == 4 ? KILN_INT32 : KILN_INT64, lanes);
    snprintf(key, sizeof key, "kiln_vsel_%s", vt + 5);
    cg_add_helper(r, key, vmath_text(g_vsel_tmpl, vt, it));
}

/* Adds the vector helper kiln_<f>_f32x<lanes> (and what it uses) when f has one; returns
   whether it did. */
static int vmath_helper(cg_render *r, tir_intrin f, int lanes, const char *name) {
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
    if (f != TIR_LOG) { /* the exponentials the others call */
        snprintf(key, sizeof key, "kiln_expcore_%s", vf + 5);
        cg_add_helper(r, key, vmath_text(g_vexpcore_tmpl, vf, vi));
    }
    if (f == TIR_TANH) { /* e^(2|x|): the clamped exp */
        snprintf(key, sizeof key, "kiln_exp_%s", vf + 5);
        cg_add_helper(r, key, vmath_text(g_vexp_tmpl, vf, vi));
    } else if (f == TIR_SIGMOID || f == TIR_ERF) { /* arguments <= 0 */
        snprintf(key, sizeof key, "kiln_expneg_%s", vf + 5);
        cg_add_helper(r, key, vmath_text(g_vexpneg_tmpl, vf, vi));
    }
    cg_add_helper(r, name, vmath_text(tmpl, vf, vi));
    return 1;
}

int cg_vmath_helper(cg_render *r, const char *name, int op, uint32_t aux, kiln_dtype dt, int lanes,
                    kiln_dtype odt, int nargs, const kiln_dtype *adt) {
    if (op == TIR_CALL && odt == dt && dt == KILN_FLOAT32 && lanes > 1)
        return vmath_helper(r, (tir_intrin)aux, lanes, name);
    if ((op == TIR_MIN || op == TIR_MAX) && odt == dt &&
        (dt == KILN_FLOAT32 || dt == KILN_FLOAT64)) {
        /* NaN-propagating min/max as compare masks and a bitwise blend: the
           per-lane form with || is not always turned into vector code */
        char vt[48], it[48];
        vsel_helper(r, dt, lanes, vt, it);
        cg_add_helper(r, name,
                      cg_sfmt("static inline %s %s(%s a, %s b) {\n"
                              "    return kiln_vsel_%s((a %s b) | (a != a), a, b);\n}\n",
                              vt, name, vt, vt, vt + 5, op == TIR_MAX ? ">" : "<"));
        return 1;
    }
    if (op == TIR_CALL && odt == dt && nargs == 2 && adt[1] == dt &&
        ((tir_intrin)aux == TIR_SHL || (tir_intrin)aux == TIR_SHR) && !cg_is_float(dt) &&
        dt != KILN_BOOL && (kiln_dtype_size(dt) == 4 || kiln_dtype_size(dt) == 8)) {
        /* numpy's shifts as one vector shift by the amount's low bits, the
           lanes whose amount is outside [0, bits) then set to 0 (-1 for a
           negative value shifted right): the per-lane form was a scalar
           loop, 16 shifts and compares a vector */
        char vt[48], it[48], ut[48];
        vsel_helper(r, dt, lanes, vt, it);
        int bits = (int)kiln_dtype_size(dt) * 8, uns = kiln_dtype_is_unsigned(dt);
        cg_vtype(r, ut, bits == 32 ? KILN_UINT32 : KILN_UINT64, lanes);
        char range[64];
        snprintf(range, sizeof range, uns ? "b < %d" : "(b >= 0) & (b < %d)", bits);
        char *body;
        if ((tir_intrin)aux == TIR_SHL)
            body = cg_sfmt("    return kiln_vsel_%s(%s, (%s)((%s)a << ((%s)b & %d)), a - a);\n",
                           vt + 5, range, vt, ut, ut, bits - 1);
        else if (uns)
            body = cg_sfmt("    return kiln_vsel_%s(%s, a >> (b & %d), a - a);\n", vt + 5, range,
                           bits - 1);
        else
            body = cg_sfmt("    return kiln_vsel_%s(%s, a >> (b & %d), a >> %d);\n", vt + 5, range,
                           bits - 1, bits - 1);
        cg_add_helper(r, name,
                      cg_sfmt("static inline %s %s(%s a, %s b) {\n%s}\n", vt, name, vt, vt, body));
        free(body);
        return 1;
    }
    if (op == TIR_SELECT && odt == dt && nargs == 3 && adt[0] == KILN_BOOL &&
        (kiln_dtype_size(dt) == 4 || kiln_dtype_size(dt) == 8)) {
        /* the 0/1 lanes widened to a full-width mask and a bitwise blend: the
           per-lane form compiled to one masked broadcast per lane */
        char vt[48], it[48], bt[48];
        vsel_helper(r, dt, lanes, vt, it);
        cg_vtype(r, bt, KILN_BOOL, lanes);
        cg_add_helper(r, name,
                      cg_sfmt("static inline %s %s(%s c, %s a, %s b) {\n"
                              "    return kiln_vsel_%s(__builtin_convertvector(c, %s) != 0, a, "
                              "b);\n}\n",
                              vt, name, bt, vt, vt, vt + 5, it));
        return 1;
    }
    return 0;
}

/* ---- calls of per-lane helpers ------------------------------------------------------------ */

/* A call of the lane-wise helper for op on lanes x dt: a vector-math
 * template when this file has one, else a loop over the scalar text. It
 * lives here, above c_base.c, so the vector math calls the base and never
 * the other way round. */
char *cg_lane_call(cg_render *r, const char *opname, int op, uint32_t aux, kiln_dtype dt, int lanes,
                   kiln_dtype odt, int nargs, const kiln_dtype *adt, char **args) {
    char name[96];
    if (odt == dt)
        snprintf(name, sizeof name, "kiln_%s_%sx%d", opname, cg_types[dt].tag, lanes);
    else
        snprintf(name, sizeof name, "kiln_%s_%s_%sx%d", opname, cg_types[odt].tag, cg_types[dt].tag,
                 lanes);
    if (!cg_have_helper(r, name))
        cg_vmath_helper(r, name, op, aux, dt, lanes, odt, nargs, adt);
    if (!cg_have_helper(r, name)) {
        static char *elems[3] = {"a[i]", "b[i]", "c[i]"};
        char *body = cg_scalar_text(r, op, aux, dt, odt, elems);
        char rt[48], at[48];
        cg_vtype(r, rt, dt, lanes);
        kstr t;
        kstr_init(&t);
        kstr_printf(&t, "static inline %s %s(", rt, name);
        for (int k = 0; k < nargs; k++) {
            cg_vtype(r, at, adt[k], lanes);
            kstr_printf(&t, "%s%s %c", k ? ", " : "", at, "abc"[k]);
        }
        kstr_printf(
            &t, ") {\n    %s r;\n    for (int i = 0; i < %d; i++) r[i] = %s;\n    return r;\n}\n",
            rt, lanes, body);
        free(body);
        char *text = kstr_take(&t);
        KILN_ASSERT(text);
        cg_add_helper(r, name, text);
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
