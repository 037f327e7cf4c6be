/* simplify.c: the arithmetic simplifier of the loop IR. A table of rewrite
 * rules, each a small function with its algebra in a comment, is applied
 * bottom-up by one fixed-point driver (tir_simplify). Integer bounds come
 * from an analyzer that maps loop variables to constant ranges.
 *
 * Integer semantics: int32 and int64 index arithmetic is assumed not to
 * overflow (as in TVM), so rules that are only valid over the integers
 * (division splitting, comparisons by the bounds of a difference) apply to
 * them. int8/uint8 wrap: they get only ring identities (the linear form) and
 * rules decided by sound bounds of the operands. Floats get constant folding
 * and the identities that hold exactly under IEEE (never x*0 or x-x). */
#include <math.h>
#include <stdlib.h>

#include "simplify_internal.h"

/* ---- constants ----------------------------------------------------------------- */

/* integer types where the ring rules (linear form, ramps) apply */
static int is_ring(tir_node n) {
    return is_int(n) && n->dtype != KILN_BOOL;
}

static int is_cint(tir_node n, int64_t v) {
    int64_t x;
    return cint(n, &x) && x == v;
}

/* 1 and *v if n is a float constant, scalar or broadcast */
static int cfloat(tir_node n, double *v) {
    if (n->op == TIR_BROADCAST)
        n = n->src[0];
    if (n->op != TIR_FLOAT || n->lanes != 1)
        return 0;
    *v = n->fval;
    return 1;
}

static tir_node mk_int(kiln_ctx *ctx, kiln_dtype dt, int lanes, int64_t v) {
    return tir_broadcast(tir_int(ctx, dt, wrap_dt(v, dt)), lanes);
}

static tir_node mk_bool(kiln_ctx *ctx, int lanes, int b) {
    return mk_int(ctx, KILN_BOOL, lanes, b);
}

static int is_cmp(tir_op op) {
    return op >= TIR_EQ && op <= TIR_GE;
}

/* ---- the rules ------------------------------------------------------------------
 * Each returns the replacement of n, or NULL (or n) when it does not apply.
 * Sources of n are already simplified when a rule sees it. */

typedef struct {
    tir_analyzer *an;
} simp;

typedef tir_node (*rule_fn)(const simp *s, tir_node n);

/* ---- constant folding ---- */

/* A comparison or logic op on integer constants whose order is cmp (<0, 0,
 * >0) and which are nonzero (an, bn); NULL for another op. */
static tir_node fold_logic(tir_node n, int cmp, int an, int bn) {
    int r;
    switch ((tir_op)n->op) {
    case TIR_EQ: r = cmp == 0; break;
    case TIR_NE: r = cmp != 0; break;
    case TIR_LT: r = cmp < 0; break;
    case TIR_LE: r = cmp <= 0; break;
    case TIR_GT: r = cmp > 0; break;
    case TIR_GE: r = cmp >= 0; break;
    case TIR_AND: r = an && bn; break;
    case TIR_OR: r = an || bn; break;
    default: return NULL;
    }
    return mk_bool(n->ctx, 1, r);
}

/* fold_int of uint64 operands (held as int64 bit patterns): unsigned
 * division, min, max and comparisons */
static tir_node fold_u64(tir_node n, uint64_t a, uint64_t b) {
    kiln_ctx *ctx = n->ctx;
    uint64_t r;
    switch ((tir_op)n->op) {
    case TIR_ADD: r = a + b; break;
    case TIR_SUB: r = a - b; break;
    case TIR_MUL: r = a * b; break;
    case TIR_DIV:
    case TIR_MOD:
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
        if (b == 0)
            return NULL; /* left for the runtime */
        r = n->op == TIR_DIV || n->op == TIR_FLOORDIV ? a / b : a % b;
        break;
    case TIR_MIN: r = a < b ? a : b; break;
    case TIR_MAX: r = a > b ? a : b; break;
    default: return fold_logic(n, (a > b) - (a < b), a != 0, b != 0);
    }
    return tir_int(ctx, KILN_UINT64, (int64_t)r);
}

static tir_node fold_int(tir_node n, int64_t a, int64_t b) {
    kiln_ctx *ctx = n->ctx;
    kiln_dtype dt = (kiln_dtype)n->src[0]->dtype;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t r;
    if (dt == KILN_UINT64)
        return fold_u64(n, ua, ub);
    switch ((tir_op)n->op) {
    case TIR_ADD: r = (int64_t)(ua + ub); break;
    case TIR_SUB: r = (int64_t)(ua - ub); break;
    case TIR_MUL: r = (int64_t)(ua * ub); break;
    case TIR_DIV:
    case TIR_MOD:
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
        if (b == 0 || (a == INT64_MIN && b == -1))
            return NULL; /* left for the runtime */
        r = n->op == TIR_DIV        ? a / b
            : n->op == TIR_MOD      ? a % b
            : n->op == TIR_FLOORDIV ? kiln_floordiv_i64(a, b)
                                    : kiln_floormod_i64(a, b);
        break;
    case TIR_MIN: r = a < b ? a : b; break;
    case TIR_MAX: r = a > b ? a : b; break;
    default: return fold_logic(n, (a > b) - (a < b), a != 0, b != 0);
    }
    return tir_int(ctx, dt, wrap_dt(r, dt));
}

/* a float result in dtype dt, or 0 if it is not folded (float16, bfloat16) */
static int round_float(kiln_dtype dt, double *v) {
    if (dt == KILN_FLOAT32)
        *v = (double)(float)*v;
    return dt == KILN_FLOAT32 || dt == KILN_FLOAT64;
}

static tir_node fold_float(tir_node n, double a, double b) {
    kiln_ctx *ctx = n->ctx;
    kiln_dtype dt = (kiln_dtype)n->src[0]->dtype;
    double r;
    switch ((tir_op)n->op) {
    case TIR_ADD: r = a + b; break;
    case TIR_SUB: r = a - b; break;
    case TIR_MUL: r = a * b; break;
    case TIR_DIV: r = a / b; break;
    case TIR_MIN:
    case TIR_MAX: /* NaN and signed zeros depend on how min is rendered: leave them */
        if (isnan(a) || isnan(b) || (a == b && signbit(a) != signbit(b)))
            return NULL;
        r = (n->op == TIR_MIN) == (a < b) ? a : b;
        break;
    case TIR_EQ: return mk_bool(ctx, 1, a == b);
    case TIR_NE: return mk_bool(ctx, 1, a != b);
    case TIR_LT: return mk_bool(ctx, 1, a < b);
    case TIR_LE: return mk_bool(ctx, 1, a <= b);
    case TIR_GT: return mk_bool(ctx, 1, a > b);
    case TIR_GE: return mk_bool(ctx, 1, a >= b);
    default: return NULL;
    }
    return round_float(dt, &r) ? tir_floatc(ctx, dt, r) : NULL;
}

static tir_node fold_cast(tir_node n) {
    kiln_ctx *ctx = n->ctx;
    kiln_dtype to = (kiln_dtype)n->dtype;
    tir_node x = n->src[0];
    if (x->op == TIR_INT) {
        if (tir_is_int_dtype(to))
            return tir_int(ctx, to, wrap_dt(x->ival, to));
        double v = x->dtype == KILN_UINT64 ? (double)(uint64_t)x->ival : (double)x->ival;
        return tir_is_float_dtype(to) && round_float(to, &v) ? tir_floatc(ctx, to, v) : NULL;
    }
    double v = x->fval;
    if (to == KILN_BOOL)
        return mk_bool(ctx, 1, v != 0);
    if (tir_is_int_dtype(to)) { /* only in range: out of range is undefined in C */
        itv d = dtype_range(to);
        double t = trunc(v);
        if (to == KILN_UINT64)
            d = itv_make(0, INT64_MAX);
        if (isnan(v) || t < -9.2e18 || t > 9.2e18 || (int64_t)t < d.lo || (int64_t)t > d.hi)
            return NULL;
        return tir_int(ctx, to, (int64_t)t);
    }
    return tir_is_float_dtype(to) && round_float(to, &v) ? tir_floatc(ctx, to, v) : NULL;
}

/* c1 op c2 -> c ; !c ; select(c, a, b) ; cast(c): every op on scalar constants */
static tir_node r_fold(const simp *s, tir_node n) {
    const tir_node *a = n->src;
    if (n->op == TIR_NOT)
        return a[0]->op == TIR_INT ? mk_bool(n->ctx, 1, !a[0]->ival) : NULL;
    if (n->op == TIR_CAST)
        return tir_is_const(a[0]) && n->lanes == 1 ? fold_cast(n) : NULL;
    if (n->op == TIR_SELECT) {
        int64_t c;
        if (!cint(a[0], &c))
            return NULL;
        tir_node r = c ? a[1] : a[2];
        return r->lanes == n->lanes ? r : NULL;
    }
    if (!tir_is_const(a[0]) || !tir_is_const(a[1]) || a[0]->op != a[1]->op)
        return NULL;
    if (a[0]->op == TIR_INT)
        return fold_int(n, a[0]->ival, a[1]->ival);
    return fold_float(n, a[0]->fval, a[1]->fval);
}

/* ---- identities ---- */

static tir_node zero_of(tir_node n) {
    return tir_const(n->ctx, (kiln_dtype)n->dtype, n->lanes, 0);
}

/* float zero of the given sign (x + -0.0 == x exactly; x + 0.0 is not, for x = -0.0) */
static int is_fzero(tir_node n, int negative) {
    double v;
    return cfloat(n, &v) && v == 0 && (signbit(v) != 0) == negative;
}

static int is_one(tir_node n) {
    double v;
    return is_cint(n, 1) || (cfloat(n, &v) && v == 1);
}

/* x + 0 -> x, 0 + x -> x (floats: only -0.0) */
static tir_node r_add_zero(const simp *s, tir_node n) {
    int f = tir_is_float_dtype((kiln_dtype)n->dtype);
    if (f ? is_fzero(n->src[1], 1) : is_cint(n->src[1], 0))
        return n->src[0];
    if (f ? is_fzero(n->src[0], 1) : is_cint(n->src[0], 0))
        return n->src[1];
    return NULL;
}

/* x - 0 -> x (floats: +0.0) ; x - x -> 0 (ints) */
static tir_node r_sub_zero(const simp *s, tir_node n) {
    int f = tir_is_float_dtype((kiln_dtype)n->dtype);
    if (f ? is_fzero(n->src[1], 0) : is_cint(n->src[1], 0))
        return n->src[0];
    if (!f && n->src[0] == n->src[1])
        return zero_of(n);
    return NULL;
}

/* x*1 -> x, 1*x -> x ; x*0 -> 0, 0*x -> 0 (ints only: NaN*0 is NaN) */
static tir_node r_mul_identity(const simp *s, tir_node n) {
    if (is_one(n->src[1]))
        return n->src[0];
    if (is_one(n->src[0]))
        return n->src[1];
    if (is_int(n) && (is_cint(n->src[0], 0) || is_cint(n->src[1], 0)))
        return zero_of(n);
    return NULL;
}

/* x/1 -> x ; floordiv(x, 1) -> x ; x%1 -> 0 ; floormod(x, 1) -> 0 */
static tir_node r_div_one(const simp *s, tir_node n) {
    if (!is_one(n->src[1]))
        return NULL;
    if (n->op == TIR_DIV || n->op == TIR_FLOORDIV)
        return n->src[0];
    return is_int(n) ? zero_of(n) : NULL;
}

/* min(x, x) -> x ; max(x, x) -> x */
static tir_node r_minmax_same(const simp *s, tir_node n) {
    return n->src[0] == n->src[1] ? n->src[0] : NULL;
}

/* x == x, x <= x, x >= x -> true ; x != x, x < x, x > x -> false (ints; floats may be NaN) */
static tir_node r_cmp_same(const simp *s, tir_node n) {
    if (n->src[0] != n->src[1] || !is_int(n->src[0]))
        return NULL;
    return mk_bool(n->ctx, n->lanes, n->op == TIR_EQ || n->op == TIR_LE || n->op == TIR_GE);
}

/* x && true -> x, x && false -> false, x || true -> true, x || false -> x, x && x -> x, x || x -> x
 */
static tir_node r_logic_const(const simp *s, tir_node n) {
    int64_t c;
    int and_ = n->op == TIR_AND;
    if (n->src[0] == n->src[1])
        return n->src[0];
    for (int i = 0; i < 2; i++) {
        tir_node x = n->src[1 - i];
        if (!cint(n->src[i], &c) || x->lanes != n->lanes)
            continue;
        if (and_)
            return c ? x : mk_bool(n->ctx, n->lanes, 0);
        return c ? mk_bool(n->ctx, n->lanes, 1) : x;
    }
    return NULL;
}

/* !!x -> x ; !(a < b) -> a >= b, and so on (int operands) */
static tir_node r_not(const simp *s, tir_node n) {
    tir_node x = n->src[0];
    static const tir_op inv[] = {[TIR_EQ] = TIR_NE, [TIR_NE] = TIR_EQ, [TIR_LT] = TIR_GE,
                                 [TIR_LE] = TIR_GT, [TIR_GT] = TIR_LE, [TIR_GE] = TIR_LT};
    if (x->op == TIR_NOT)
        return x->src[0];
    if (is_cmp((tir_op)x->op) && is_int(x->src[0]))
        return tir_bin(inv[x->op], x->src[0], x->src[1]);
    return NULL;
}

/* select(c, x, x) -> x */
static tir_node r_select_same(const simp *s, tir_node n) {
    return n->src[1] == n->src[2] && n->src[1]->lanes == n->lanes ? n->src[1] : NULL;
}

/* cast(t, x) -> x when x already has dtype t */
static tir_node r_cast_same(const simp *s, tir_node n) {
    return n->src[0]->dtype == n->dtype ? n->src[0] : NULL;
}

/* ---- vectors ---- */

/* broadcast(a) op broadcast(b) -> broadcast(a op b) ; op(broadcast(a)) -> broadcast(op(a)) */
static tir_node r_broadcast(const simp *s, tir_node n) {
    tir_node sc[3];
    for (uint32_t i = 0; i < n->nsrc; i++) {
        if (n->src[i]->op != TIR_BROADCAST || n->src[i]->lanes != n->lanes)
            return NULL;
        sc[i] = n->src[i]->src[0];
    }
    return tir_broadcast(tir_make(n->ctx, (tir_op)n->op, (kiln_dtype)n->dtype, 1, n->aux, 0, 0,
                                  NULL, NULL, (int)n->nsrc, sc),
                         n->lanes);
}

/* ramp(b, 0, n) -> broadcast(b, n) */
static tir_node r_ramp_zero(const simp *s, tir_node n) {
    return is_cint(n->src[1], 0) ? tir_broadcast(n->src[0], n->lanes) : NULL;
}

/* ramp(b1, s1) ± ramp(b2, s2) -> ramp(b1 ± b2, s1 ± s2) ; ramp(b, s) ± x_n -> ramp(b ± x, s) ;
 * x_n + ramp(b, s) -> ramp(x + b, s) ; x_n - ramp(b, s) -> ramp(x - b, 0 - s)  (ints) */
static tir_node r_ramp_addsub(const simp *s, tir_node n) {
    tir_node a = n->src[0], b = n->src[1];
    tir_op op = (tir_op)n->op;
    int lanes = n->lanes;
    if (!is_ring(n) || (a->op != TIR_RAMP && b->op != TIR_RAMP))
        return NULL;
    if (a->op == TIR_RAMP && b->op == TIR_RAMP)
        return tir_ramp(tir_bin(op, a->src[0], b->src[0]), tir_bin(op, a->src[1], b->src[1]),
                        lanes);
    if (a->op == TIR_RAMP && b->op == TIR_BROADCAST)
        return tir_ramp(tir_bin(op, a->src[0], b->src[0]), a->src[1], lanes);
    if (b->op == TIR_RAMP && a->op == TIR_BROADCAST) {
        tir_node st = b->src[1];
        if (op == TIR_SUB)
            st = tir_sub(tir_int(n->ctx, (kiln_dtype)st->dtype, 0), st);
        return tir_ramp(tir_bin(op, a->src[0], b->src[0]), st, lanes);
    }
    return NULL;
}

/* ramp(b, s) * x_n -> ramp(b*x, s*x) ; x_n * ramp(b, s) -> ramp(x*b, x*s)  (ints) */
static tir_node r_ramp_mul(const simp *s, tir_node n) {
    tir_node a = n->src[0], b = n->src[1];
    if (!is_ring(n))
        return NULL;
    if (a->op == TIR_RAMP && b->op == TIR_BROADCAST)
        return tir_ramp(tir_mul(a->src[0], b->src[0]), tir_mul(a->src[1], b->src[0]), n->lanes);
    if (b->op == TIR_RAMP && a->op == TIR_BROADCAST)
        return tir_ramp(tir_mul(a->src[0], b->src[0]), tir_mul(a->src[0], b->src[1]), n->lanes);
    return NULL;
}

/* floordiv(ramp(b, s, n), c_n) -> ramp(floordiv(b, c), s/c, n) when c | s ;
 *   -> broadcast(floordiv(b, c)) when b = c*q + r with 0 <= r and r + s*(n-1) < c ;
 * floormod(ramp(b, s, n), c_n) -> broadcast(floormod(b, c)) when c | s ;
 *   -> ramp(floormod(b, c), s, n) under the second condition  (exact ints, c > 0, s >= 0) */
static tir_node r_ramp_divmod(const simp *s, tir_node n) {
    tir_node a = n->src[0], cn = n->src[1];
    int64_t c, st, span;
    if (!is_exact(n) || a->op != TIR_RAMP || cn->op != TIR_BROADCAST || !cint(cn, &c) || c <= 0 ||
        !tir_const_int(a->src[1], &st) || st < 0)
        return NULL;
    tir_node b = a->src[0], cs = cn->src[0];
    int div = n->op == TIR_FLOORDIV;
    if (st % c == 0)
        return div ? tir_ramp(tir_bin(TIR_FLOORDIV, b, cs),
                              tir_int(n->ctx, (kiln_dtype)n->dtype, st / c), n->lanes)
                   : tir_broadcast(tir_bin(TIR_FLOORMOD, b, cs), n->lanes);
    lform f, q, r;
    itv rb = ITV_ALL;
    if (tir_lf_of(&f, b)) {
        tir_lf_split(&f, c, &q, &r);
        if (r.ok)
            rb = tir_lf_bound(s->an, &r);
        tir_lf_free(&q);
        tir_lf_free(&r);
    }
    tir_lf_free(&f);
    if (!itv_finite(rb) || rb.lo < 0 || !kiln_mul_ok(st, n->lanes - 1, &span) ||
        !kiln_add_ok(rb.hi, span, &span) || span >= c)
        return NULL;
    return div ? tir_broadcast(tir_bin(TIR_FLOORDIV, b, cs), n->lanes)
               : tir_ramp(tir_bin(TIR_FLOORMOD, b, cs), a->src[1], n->lanes);
}

/* ---- the linear form ---- */

/* k + sum(c_i * t_i): (io*64 + ii) - io*64 -> ii ; (x + 1) + 2 -> x + 3 ; x*2 + x -> x*3 ;
 * (x + 1)*2 -> x*2 + 2 ; floordiv(x, 4)*4 + floormod(x, 4) -> x  (ring ints, scalar) */
static tir_node r_linear(const simp *s, tir_node n) {
    if (!is_ring(n) || n->lanes != 1)
        return NULL;
    lform f;
    tir_node r = tir_lf_of(&f, n) ? tir_lf_rebuild(n->ctx, &f) : NULL;
    tir_lf_free(&f);
    return r;
}

/* ---- division ---- */

/* floordiv(a*c + b, c) -> a + floordiv(b, c) ; floordiv(a*c1, c2) -> a*(c1/c2) when c2 | c1 ;
 * floormod(a*c + b, c) -> floormod(b, c) ; floormod(x + k, c) -> floormod(x + k mod c, c)
 * (exact ints, c > 0) */
static tir_node r_divmod_split(const simp *s, tir_node n) {
    int64_t c;
    if (!is_exact(n) || n->lanes != 1 || !tir_const_int(n->src[1], &c) || c <= 0)
        return NULL;
    lform f, q, r;
    tir_node res = NULL;
    if (!tir_lf_of(&f, n->src[0])) {
        tir_lf_free(&f);
        return NULL;
    }
    int moved = tir_lf_split(&f, c, &q, &r);
    if (q.ok && r.ok) {
        if (n->op == TIR_FLOORDIV && moved)
            res = tir_add(tir_lf_rebuild(n->ctx, &q),
                          tir_bin(TIR_FLOORDIV, tir_lf_rebuild(n->ctx, &r), n->src[1]));
        else if (n->op == TIR_FLOORMOD && (moved || r.k != f.k))
            res = tir_bin(TIR_FLOORMOD, tir_lf_rebuild(n->ctx, &r), n->src[1]);
    }
    tir_lf_free(&f);
    tir_lf_free(&q);
    tir_lf_free(&r);
    return res;
}

/* floordiv(b, c) -> q and floormod(b, c) -> b - q*c when q*c <= b < (q+1)*c provably
 * (e.g. 0 <= b < c: floordiv(b, c) -> 0, floormod(b, c) -> b)  (ints, c constant) */
static tir_node r_divmod_bound(const simp *s, tir_node n) {
    int64_t c, qc;
    if (!is_int(n) || !cint(n->src[1], &c) || c == 0)
        return NULL;
    itv b = tir_bound_exact(s->an, n->src[0]);
    if (!itv_finite(b))
        return NULL;
    int64_t q = kiln_floordiv_i64(b.lo, c);
    if (q != kiln_floordiv_i64(b.hi, c))
        return NULL;
    if (n->op == TIR_FLOORDIV)
        return mk_int(n->ctx, (kiln_dtype)n->dtype, n->lanes, q);
    if (c < 0 || !kiln_mul_ok(q, c, &qc))
        return NULL;
    if (qc == 0)
        return n->src[0];
    return tir_sub(n->src[0], mk_int(n->ctx, (kiln_dtype)n->dtype, n->lanes, qc));
}

/* C division of a provably non-negative b by c > 0: b / c -> q, b % c -> b when 0 <= b < c */
static tir_node r_tdivmod_bound(const simp *s, tir_node n) {
    int64_t c;
    if (!is_int(n) || !cint(n->src[1], &c) || c <= 0)
        return NULL;
    itv b = tir_bound_exact(s->an, n->src[0]);
    if (!itv_finite(b) || b.lo < 0 || b.lo / c != b.hi / c)
        return NULL;
    if (n->op == TIR_DIV)
        return mk_int(n->ctx, (kiln_dtype)n->dtype, n->lanes, b.lo / c);
    return b.hi < c ? n->src[0] : NULL;
}

/* floordiv(floordiv(x, a), b) -> floordiv(x, a*b) ; floormod(floormod(x, c1), c2) ->
 * floormod(x, c2) when c2 | c1  (ints, a, b, c1, c2 > 0) */
static tir_node r_divmod_nested(const simp *s, tir_node n) {
    tir_node in = n->src[0];
    int64_t a, b, ab;
    if (!is_int(n) || n->lanes != 1 || in->op != n->op || !tir_const_int(in->src[1], &a) ||
        !tir_const_int(n->src[1], &b) || a <= 0 || b <= 0)
        return NULL;
    if (n->op == TIR_FLOORMOD)
        return a % b == 0 ? tir_bin(TIR_FLOORMOD, in->src[0], n->src[1]) : NULL;
    if (!kiln_mul_ok(a, b, &ab) || wrap_dt(ab, (kiln_dtype)n->dtype) != ab)
        return NULL;
    return tir_bin(TIR_FLOORDIV, in->src[0], tir_int(n->ctx, (kiln_dtype)n->dtype, ab));
}

/* ---- min, max, comparisons ---- */

/* min(a, b) -> a when a <= b provably, -> b when b <= a ; max mirrored ;
 * so min(x + c1, x + c2) -> x + min(c1, c2)  (ints) */
static tir_node r_minmax_bound(const simp *s, tir_node n) {
    if (!is_int(n))
        return NULL;
    itv d = tir_bound_diff(s->an, n->src[0], n->src[1]);
    int min = n->op == TIR_MIN;
    if (d.hi <= 0)
        return min ? n->src[0] : n->src[1];
    if (d.lo >= 0)
        return min ? n->src[1] : n->src[0];
    return NULL;
}

/* min(c, x) -> min(x, c) ; min(min(x, c1), c2) -> min(x, min(c1, c2)) ; max alike (ints) */
static tir_node r_minmax_const(const simp *s, tir_node n) {
    tir_node a = n->src[0], b = n->src[1];
    int64_t c1, c2;
    if (!is_int(n) || n->lanes != 1)
        return NULL;
    if (tir_const_int(a, NULL) && !tir_const_int(b, NULL))
        return tir_bin((tir_op)n->op, b, a);
    if (a->op == n->op && tir_const_int(a->src[1], &c1) && tir_const_int(b, &c2)) {
        int64_t c = (n->op == TIR_MIN) == (c1 < c2) ? c1 : c2;
        return tir_bin((tir_op)n->op, a->src[0], tir_int(n->ctx, (kiln_dtype)n->dtype, c));
    }
    return NULL;
}

/* a < b -> true when a - b < 0 provably, -> false when a - b >= 0 ; ==, !=, <=, >, >= alike (ints)
 */
static tir_node r_cmp_bound(const simp *s, tir_node n) {
    int d = tir_decide_cmp(s->an, (tir_op)n->op, n->src[0], n->src[1]);
    return d < 0 ? NULL : mk_bool(n->ctx, n->lanes, d);
}

/* checked_index(j, n) -> j when 0 <= j < n provably; checked_index_from_end(j, n) -> j + n
 * when -n <= j < 0 provably (an index that may be out of range keeps its check) */
static tir_node r_check(const simp *s, tir_node n) {
    tir_node j = n->src[0], e = n->src[1], zero = tir_i64(n->ctx, 0);
    if (tir_decide_cmp(s->an, TIR_LT, j, e) == 1 && tir_decide_cmp(s->an, TIR_GE, j, zero) == 1)
        return j;
    if (n->ival && tir_decide_cmp(s->an, TIR_LT, j, zero) == 1 &&
        tir_decide_cmp(s->an, TIR_GE, tir_add(j, e), zero) == 1)
        return tir_add(j, e);
    return NULL;
}

/* ---- the table and the driver ---------------------------------------------------- */

#define OP(o) (1ull << (o))
#define OPS_CMP (OP(TIR_EQ) | OP(TIR_NE) | OP(TIR_LT) | OP(TIR_LE) | OP(TIR_GT) | OP(TIR_GE))
#define OPS_ARITH                                                                                  \
    (OP(TIR_ADD) | OP(TIR_SUB) | OP(TIR_MUL) | OP(TIR_DIV) | OP(TIR_MOD) | OP(TIR_FLOORDIV) |      \
     OP(TIR_FLOORMOD) | OP(TIR_MIN) | OP(TIR_MAX))
#define OPS_BIN (OPS_ARITH | OPS_CMP | OP(TIR_AND) | OP(TIR_OR))
#define OPS_DIVMOD (OP(TIR_FLOORDIV) | OP(TIR_FLOORMOD))

static const struct {
    uint64_t ops; /* the ops the rule looks at */
    rule_fn fn;
} RULES[] = {
    {OPS_BIN | OP(TIR_NOT) | OP(TIR_SELECT) | OP(TIR_CAST), r_fold},
    {OPS_BIN | OP(TIR_NOT) | OP(TIR_SELECT) | OP(TIR_CAST), r_broadcast},
    {OP(TIR_ADD), r_add_zero},
    {OP(TIR_SUB), r_sub_zero},
    {OP(TIR_MUL), r_mul_identity},
    {OP(TIR_DIV) | OP(TIR_MOD) | OPS_DIVMOD, r_div_one},
    {OP(TIR_MIN) | OP(TIR_MAX), r_minmax_same},
    {OPS_CMP, r_cmp_same},
    {OP(TIR_AND) | OP(TIR_OR), r_logic_const},
    {OP(TIR_NOT), r_not},
    {OP(TIR_SELECT), r_select_same},
    {OP(TIR_CAST), r_cast_same},
    {OP(TIR_RAMP), r_ramp_zero},
    {OP(TIR_ADD) | OP(TIR_SUB), r_ramp_addsub},
    {OP(TIR_MUL), r_ramp_mul},
    {OPS_DIVMOD, r_ramp_divmod},
    {OP(TIR_ADD) | OP(TIR_SUB) | OP(TIR_MUL), r_linear},
    {OPS_DIVMOD, r_divmod_nested},
    {OPS_DIVMOD, r_divmod_bound},
    {OPS_DIVMOD, r_divmod_split},
    {OP(TIR_DIV) | OP(TIR_MOD), r_tdivmod_bound},
    {OP(TIR_MIN) | OP(TIR_MAX), r_minmax_bound},
    {OP(TIR_MIN) | OP(TIR_MAX), r_minmax_const},
    {OPS_CMP, r_cmp_bound},
    {OP(TIR_CHECK), r_check},
};

/* Apply the first matching rule until none applies (sources are simplified). */
static tir_node apply_rules(tir_node n, void *user) {
    const simp *s = user;
    for (int round = 0; round < 64 && n->op < TIR_FOR; round++) {
        tir_node r = NULL;
        for (size_t i = 0; i < sizeof RULES / sizeof RULES[0] && !r; i++) {
            if (!(RULES[i].ops & OP(n->op)))
                continue;
            r = RULES[i].fn(s, n);
            if (r == n)
                r = NULL;
        }
        if (!r)
            break;
        n = r;
    }
    return n;
}

tir_node tir_simplify(tir_analyzer *an, tir_node e) {
    simp s = {an};
    for (int it = 0; it < 32; it++) {
        tir_node r = tir_rewrite(e, apply_rules, &s);
        if (r == e)
            break;
        e = r;
    }
    return e;
}

/* 1 if a - b simplifies to a constant >= 0 */
static int diff_nonneg(tir_analyzer *an, tir_node a, tir_node b) {
    int64_t v;
    return cint(tir_simplify(an, tir_sub(a, b)), &v) && v >= 0;
}

/* a < b from a loop variable's symbolic extent (tir_analyzer_bind_extent):
 * v < b when ext <= b; floordiv(v, c) < b (c > 0) when ext <= c * b; and
 * either plus a term whose constant bound is [lo, hi] when the same holds
 * for b - hi (a stage computed at a loop adds its own index, often [0, 0]). */
static int prove_by_extent(tir_analyzer *an, tir_node a, tir_node b) {
    if (a->op == TIR_ADD)
        for (int k = 0; k < 2; k++) {
            itv rest = tir_bound(an, a->src[1 - k]);
            if (rest.hi != POS_INF && rest.lo != NEG_INF &&
                prove_by_extent(an, a->src[k], tir_sub(b, tir_i64(b->ctx, rest.hi))))
                return 1;
        }
    int64_t c = 1;
    if (a->op == TIR_FLOORDIV && cint(a->src[1], &c) && c > 0)
        a = a->src[0];
    else if (a->op == TIR_FLOORDIV)
        return 0;
    var_range *r = a->op == TIR_VAR ? tir_analyzer_find(an, a) : NULL;
    if (!r || !r->ext)
        return 0;
    return diff_nonneg(an, c == 1 ? b : tir_mul(b, tir_i64(b->ctx, c)), r->ext);
}

int tir_prove(tir_analyzer *an, tir_node cond) {
    int64_t v;
    tir_node r = tir_simplify(an, cond);
    if (cint(r, &v))
        return v != 0;
    if (r->op == TIR_LT && prove_by_extent(an, r->src[0], r->src[1]))
        return 1;
    return tir_bound(an, r).lo > 0;
}

/* ---- statements ------------------------------------------------------------------- */

static int is_nop(tir_node s) {
    return s->op == TIR_SEQ && s->nsrc == 0;
}

static tir_node simp_stmt(tir_analyzer *an, tir_node st);

static tir_node simp_for(tir_analyzer *an, tir_node st) {
    kiln_ctx *ctx = st->ctx;
    tir_node v = st->src[0];
    tir_node mn = tir_simplify(an, st->src[1]), ext = tir_simplify(an, st->src[2]);
    itv ie = tir_bound(an, ext), im = tir_bound(an, mn);
    int64_t e, hi;
    if (ie.hi <= 0)
        return tir_nop(ctx); /* runs no iteration */
    if (tir_const_int(ext, &e) && e == 1 && st->aux != TIR_FOR_THREAD)
        return simp_stmt(an, tir_substitute(st->src[3], 1, &v, &mn));
    /* v in [min.lo, min.hi + extent.hi - 1]; an outer binding of v is saved */
    var_range *old = tir_analyzer_find(an, v);
    var_range saved = old ? *old : (var_range){0};
    if (itv_finite(im) && ie.hi != POS_INF && kiln_add_ok(im.hi, ie.hi - 1, &hi))
        tir_analyzer_bind(an, v, im.lo, hi);
    else if (old)
        tir_analyzer_unbind(an, v);
    tir_node body = simp_stmt(an, st->src[3]);
    if (old)
        tir_analyzer_bind(an, v, saved.lo, saved.hi);
    else
        tir_analyzer_unbind(an, v);
    if (is_nop(body))
        return body;
    tir_node src[4] = {v, mn, ext, body};
    return tir_with_src(st, 4, src);
}

static tir_node simp_stmt(tir_analyzer *an, tir_node st) {
    kiln_ctx *ctx = st->ctx;
    int64_t c;
    switch ((tir_op)st->op) {
    case TIR_FOR: return simp_for(an, st);
    case TIR_IF: {
        tir_node cond = tir_simplify(an, st->src[0]);
        if (cint(cond, &c)) {
            if (c)
                return simp_stmt(an, st->src[1]);
            return st->nsrc > 2 ? simp_stmt(an, st->src[2]) : tir_nop(ctx);
        }
        tir_node th = simp_stmt(an, st->src[1]);
        tir_node el = st->nsrc > 2 ? simp_stmt(an, st->src[2]) : NULL;
        if (el && is_nop(el))
            el = NULL;
        if (is_nop(th)) {
            if (!el)
                return th;
            /* if (c) {} else {B} -> if (!c) {B} */
            return tir_if(tir_simplify(an, tir_not(cond)), el, NULL);
        }
        return tir_if(cond, th, el);
    }
    case TIR_SEQ: {
        tir_node small[16] = {0};
        tir_node *v = st->nsrc <= 16 ? small : malloc(st->nsrc * sizeof(tir_node));
        KILN_ASSERT(v);
        int k = 0;
        for (uint32_t i = 0; i < st->nsrc; i++) {
            tir_node r = simp_stmt(an, st->src[i]);
            if (!is_nop(r))
                v[k++] = r;
        }
        tir_node r = k ? tir_seq(ctx, k, v) : tir_nop(ctx);
        if (v != small)
            free(v);
        return r;
    }
    case TIR_STORE: {
        tir_node src[4] = {st->src[0], tir_simplify(an, st->src[1]), tir_simplify(an, st->src[2]),
                           st->nsrc > 3 ? tir_simplify(an, st->src[3]) : NULL};
        return tir_with_src(st, (int)st->nsrc, src);
    }
    case TIR_PROVIDE: {
        tir_node small[16] = {0};
        tir_node *v = st->nsrc <= 16 ? small : malloc(st->nsrc * sizeof(tir_node));
        KILN_ASSERT(v);
        for (uint32_t i = 0; i < st->nsrc; i++)
            v[i] = tir_simplify(an, st->src[i]);
        tir_node r = tir_with_src(st, (int)st->nsrc, v);
        if (v != small)
            free(v);
        return r;
    }
    case TIR_ALLOCATE: {
        tir_node body = simp_stmt(an, st->src[2]);
        if (is_nop(body))
            return body;
        tir_node src[3] = {st->src[0], tir_simplify(an, st->src[1]), body};
        return tir_with_src(st, 3, src);
    }
    default: return tir_is_stmt(st) ? st : tir_simplify(an, st);
    }
}

tir_node tir_simplify_stmt(tir_analyzer *an, tir_node s) {
    if (an)
        return simp_stmt(an, s);
    tir_analyzer *tmp = tir_analyzer_new(s->ctx);
    KILN_ASSERT(tmp);
    tir_node r = simp_stmt(tmp, s);
    tir_analyzer_free(tmp);
    return r;
}
