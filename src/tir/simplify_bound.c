/* simplify_bound.c: what the simplifier knows about values. The analyzer
 * maps loop variables to constant ranges; tir_bound gives sound integer
 * bounds of an expression over them (intervals that widen to unbounded on
 * overflow); the linear form k + sum(c_i * t_i) cancels shared terms, so the
 * bounds of a difference and the decision of a comparison are sharper than
 * interval arithmetic alone. The rewrite rules in simplify.c build on these;
 * nothing here calls back into them. */
#include <stdlib.h>
#include <string.h>

#include "simplify_internal.h"

/* ---- the analyzer ---------------------------------------------------------- */

struct tir_analyzer {
    kiln_ctx *ctx;
    var_range *v;
    int n, cap;
};

tir_analyzer *tir_analyzer_new(kiln_ctx *ctx) {
    tir_analyzer *an = kiln_calloc(1, sizeof *an);
    if (an)
        an->ctx = ctx;
    return an;
}

void tir_analyzer_free(tir_analyzer *an) {
    if (!an)
        return;
    free(an->v);
    free(an);
}

var_range *tir_analyzer_find(const tir_analyzer *an, tir_node v) {
    if (!an)
        return NULL;
    for (int i = an->n - 1; i >= 0; i--)
        if (an->v[i].var == v)
            return &an->v[i];
    return NULL;
}

void tir_analyzer_bind(tir_analyzer *an, tir_node v, int64_t lo, int64_t hi) {
    var_range *r = tir_analyzer_find(an, v);
    if (!r) {
        if (an->n == an->cap) {
            int ncap = an->cap ? an->cap * 2 : 16;
            var_range *nv = realloc(an->v, (size_t)ncap * sizeof *nv);
            KILN_ASSERT(nv);
            an->v = nv;
            an->cap = ncap;
        }
        r = &an->v[an->n++];
        r->var = v;
    }
    r->lo = lo;
    r->hi = hi;
    r->ext = NULL;
}

void tir_analyzer_bind_extent(tir_analyzer *an, tir_node v, tir_node ext) {
    tir_analyzer_bind(an, v, 0, POS_INF);
    tir_analyzer_find(an, v)->ext = ext;
}

void tir_analyzer_unbind(tir_analyzer *an, tir_node v) {
    var_range *r = tir_analyzer_find(an, v);
    if (r)
        *r = an->v[--an->n];
}

/* ---- intervals --------------------------------------------------------------
 * [lo, hi] inclusive; NEG_INF / POS_INF mean unbounded. Every operation is
 * sound: on overflow the affected end becomes unbounded. */

static itv itv_add(itv a, itv b) {
    int64_t lo = NEG_INF, hi = POS_INF;
    if (a.lo != NEG_INF && b.lo != NEG_INF && !kiln_add_ok(a.lo, b.lo, &lo))
        lo = NEG_INF;
    if (a.hi != POS_INF && b.hi != POS_INF && !kiln_add_ok(a.hi, b.hi, &hi))
        hi = POS_INF;
    return itv_make(lo, hi);
}

static itv itv_neg(itv a) {
    return itv_make(a.hi == POS_INF ? NEG_INF : -a.hi, a.lo == NEG_INF ? POS_INF : -a.lo);
}

static itv itv_sub(itv a, itv b) {
    return itv_add(a, itv_neg(b));
}

static int64_t ext_mul(int64_t x, int64_t y) {
    int64_t r;
    if (x == 0 || y == 0)
        return 0;
    int neg = (x < 0) != (y < 0);
    if (x == NEG_INF || x == POS_INF || y == NEG_INF || y == POS_INF || !kiln_mul_ok(x, y, &r))
        return neg ? NEG_INF : POS_INF;
    return r;
}

static itv itv_mul(itv a, itv b) {
    int64_t c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo),
                    ext_mul(a.hi, b.hi)};
    int64_t lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < lo)
            lo = c[i];
        if (c[i] > hi)
            hi = c[i];
    }
    return itv_make(lo, hi);
}

/* floordiv(x, d) for d > 0 with unbounded ends */
static int64_t ext_floordiv(int64_t x, int64_t d) {
    if (x == NEG_INF || x == POS_INF)
        return x;
    if (d == POS_INF)
        return x >= 0 ? 0 : -1;
    return kiln_floordiv_i64(x, d);
}

static itv itv_floordiv(itv a, itv d) {
    if (d.lo <= 0 && d.hi >= 0)
        return ITV_ALL;
    if (d.hi < 0) { /* floor(a/d) == floor(-a/-d) */
        a = itv_neg(a);
        d = itv_neg(d);
    }
    int64_t c[4] = {ext_floordiv(a.lo, d.lo), ext_floordiv(a.lo, d.hi), ext_floordiv(a.hi, d.lo),
                    ext_floordiv(a.hi, d.hi)};
    int64_t lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < lo)
            lo = c[i];
        if (c[i] > hi)
            hi = c[i];
    }
    return itv_make(lo, hi);
}

static itv itv_floormod(itv a, itv d) {
    if (d.lo <= 0 && d.hi >= 0)
        return ITV_ALL;
    if (d.lo == d.hi && d.lo > 0 && itv_finite(a) &&
        kiln_floordiv_i64(a.lo, d.lo) == kiln_floordiv_i64(a.hi, d.lo))
        return itv_make(kiln_floormod_i64(a.lo, d.lo), kiln_floormod_i64(a.hi, d.lo));
    if (d.lo > 0) {
        int64_t hi = d.hi == POS_INF ? POS_INF : d.hi - 1;
        if (a.lo >= 0 && a.hi < hi)
            hi = a.hi;
        return itv_make(0, hi);
    }
    return itv_make(d.lo == NEG_INF ? NEG_INF : d.lo + 1, 0);
}

/* C truncating division and remainder by a constant */
static itv itv_tdiv(itv a, int64_t c) {
    if (c == 0 || c == NEG_INF)
        return ITV_ALL;
    if (c > 0)
        return itv_make(a.lo == NEG_INF ? NEG_INF : a.lo / c, a.hi == POS_INF ? POS_INF : a.hi / c);
    return itv_make(a.hi == POS_INF ? NEG_INF : a.hi / c, a.lo == NEG_INF ? POS_INF : a.lo / c);
}

static itv itv_tmod(itv a, int64_t c) {
    if (c == 0 || c == NEG_INF)
        return ITV_ALL;
    int64_t m = (c < 0 ? -c : c) - 1;
    if (a.lo >= 0)
        return itv_make(0, a.hi < m ? a.hi : m);
    if (a.hi <= 0)
        return itv_make(a.lo > -m ? a.lo : -m, 0);
    return itv_make(-m, m);
}

static itv itv_union(itv a, itv b) {
    return itv_make(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

/* A result outside its dtype may have wrapped: then only the dtype range is known. */
static itv itv_clamp(itv r, kiln_dtype dt) {
    itv d = dtype_range(dt);
    return (r.lo < d.lo || r.hi > d.hi) ? d : r;
}

/* ---- dtypes ------------------------------------------------------------------- */

/* wrapped to the signed range of dt's width (a uint8 coefficient 255 is -1) */
static int64_t wrap_signed(int64_t v, kiln_dtype dt) {
    if (dt == KILN_BOOL)
        return v;
    switch (kiln_dtype_size(dt)) {
    case 1: return (int8_t)v;
    case 2: return (int16_t)v;
    case 4: return (int32_t)v;
    default: return v;
    }
}

/* ---- bounds -------------------------------------------------------------------- */

static itv bound_raw(const tir_analyzer *an, tir_node e) {
    kiln_dtype dt = (kiln_dtype)e->dtype;
    if (!tir_is_int_dtype(dt))
        return ITV_ALL;
    const tir_node *s = e->src;
    int64_t c;
    switch ((tir_op)e->op) {
    case TIR_INT: return itv_make(e->ival, e->ival);
    case TIR_VAR: {
        var_range *r = tir_analyzer_find(an, e);
        return r ? itv_make(r->lo, r->hi) : dtype_range(dt);
    }
    case TIR_ADD: return itv_add(tir_bound(an, s[0]), tir_bound(an, s[1]));
    case TIR_SUB: return itv_sub(tir_bound(an, s[0]), tir_bound(an, s[1]));
    case TIR_MUL: return itv_mul(tir_bound(an, s[0]), tir_bound(an, s[1]));
    case TIR_FLOORDIV: return itv_floordiv(tir_bound(an, s[0]), tir_bound(an, s[1]));
    case TIR_FLOORMOD: return itv_floormod(tir_bound(an, s[0]), tir_bound(an, s[1]));
    case TIR_DIV: return cint(s[1], &c) ? itv_tdiv(tir_bound(an, s[0]), c) : dtype_range(dt);
    case TIR_MOD: return cint(s[1], &c) ? itv_tmod(tir_bound(an, s[0]), c) : dtype_range(dt);
    case TIR_MIN:
    case TIR_MAX: {
        itv a = tir_bound(an, s[0]), b = tir_bound(an, s[1]);
        if (e->op == TIR_MIN)
            return itv_make(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
        return itv_make(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
    }
    case TIR_SELECT: {
        itv cb = tir_bound(an, s[0]);
        if (cb.lo > 0 || cb.hi < 0)
            return tir_bound(an, s[1]);
        if (cb.lo == 0 && cb.hi == 0)
            return tir_bound(an, s[2]);
        return itv_union(tir_bound(an, s[1]), tir_bound(an, s[2]));
    }
    case TIR_CAST: {
        if (!is_int(s[0]))
            return dtype_range(dt);
        itv a = tir_bound(an, s[0]);
        if (dt == KILN_BOOL) {
            if (a.lo > 0 || a.hi < 0)
                return itv_make(1, 1);
            if (a.lo == 0 && a.hi == 0)
                return itv_make(0, 0);
            return itv_make(0, 1);
        }
        return a;
    }
    case TIR_EQ:
    case TIR_NE:
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE: {
        int d = tir_decide_cmp(an, (tir_op)e->op, s[0], s[1]);
        return d < 0 ? itv_make(0, 1) : itv_make(d, d);
    }
    case TIR_AND:
    case TIR_OR: {
        itv a = tir_bound(an, s[0]), b = tir_bound(an, s[1]);
        int ta = a.lo > 0, tb = b.lo > 0, fa = a.hi == 0, fb = b.hi == 0;
        if (e->op == TIR_AND)
            return (ta && tb) ? itv_make(1, 1) : (fa || fb) ? itv_make(0, 0) : itv_make(0, 1);
        return (ta || tb) ? itv_make(1, 1) : (fa && fb) ? itv_make(0, 0) : itv_make(0, 1);
    }
    case TIR_NOT: {
        itv a = tir_bound(an, s[0]);
        return a.lo > 0 ? itv_make(0, 0) : a.hi == 0 ? itv_make(1, 1) : itv_make(0, 1);
    }
    case TIR_RAMP: /* base + stride*[0, lanes-1] */
        return itv_add(tir_bound(an, s[0]),
                       itv_mul(tir_bound(an, s[1]), itv_make(0, e->lanes - 1)));
    case TIR_BROADCAST: return tir_bound(an, s[0]);
    case TIR_CHECK: { /* [0, n-1], or 0 where n <= 0 */
        itv b = tir_bound(an, s[1]);
        return itv_make(0, b.hi == POS_INF ? POS_INF : b.hi >= 1 ? b.hi - 1 : 0);
    }
    default: return dtype_range(dt);
    }
}

itv tir_bound(const tir_analyzer *an, tir_node e) {
    return itv_clamp(bound_raw(an, e), (kiln_dtype)e->dtype);
}

void tir_const_bound(tir_analyzer *an, tir_node e, int64_t *lo, int64_t *hi) {
    itv r = tir_bound(an, e);
    *lo = r.lo;
    *hi = r.hi;
}

/* ---- the linear form ----------------------------------------------------------
 * (the types are in simplify_internal.h) */

static void lf_init(lform *f, kiln_dtype dt) {
    f->dt = dt;
    f->ok = 1;
    f->n = 0;
    f->cap = 8;
    f->k = 0;
    f->v = f->small;
}

void tir_lf_free(lform *f) {
    if (f->v != f->small)
        free(f->v);
}

static void lf_term(lform *f, tir_node t, int64_t c) {
    for (int i = 0; i < f->n; i++) {
        if (f->v[i].t != t)
            continue;
        if (!kiln_add_ok(f->v[i].c, c, &f->v[i].c))
            f->ok = 0;
        return;
    }
    if (f->n == f->cap) {
        int ncap = f->cap * 2;
        lterm *nv = malloc((size_t)ncap * sizeof *nv);
        KILN_ASSERT(nv);
        memcpy(nv, f->v, (size_t)f->n * sizeof *nv);
        tir_lf_free(f);
        f->v = nv;
        f->cap = ncap;
    }
    f->v[f->n++] = (lterm){t, c};
}

/* add c*n to f, flattening +, - and multiplication by constants */
static void lf_walk(lform *f, tir_node n, int64_t c) {
    int64_t k, cc;
    if (!f->ok)
        return;
    if (n->lanes == 1 && n->dtype == f->dt) {
        switch ((tir_op)n->op) {
        case TIR_INT:
            if (!kiln_mul_ok(c, n->ival, &k) || !kiln_add_ok(f->k, k, &f->k))
                f->ok = 0;
            return;
        case TIR_ADD:
            lf_walk(f, n->src[0], c);
            lf_walk(f, n->src[1], c);
            return;
        case TIR_SUB:
            if (c == INT64_MIN)
                break;
            lf_walk(f, n->src[0], c);
            lf_walk(f, n->src[1], -c);
            return;
        case TIR_MUL: {
            int right = tir_const_int(n->src[1], &k);
            if (!right && !tir_const_int(n->src[0], &k))
                break;
            if (!kiln_mul_ok(c, k, &cc)) {
                f->ok = 0;
                return;
            }
            lf_walk(f, n->src[right ? 0 : 1], cc);
            return;
        }
        default: break;
        }
    }
    lf_term(f, n, c);
}

static void lf_wrap(lform *f) {
    for (int i = 0; i < f->n; i++)
        f->v[i].c = wrap_signed(f->v[i].c, f->dt);
    f->k = wrap_signed(f->k, f->dt);
}

/* The div node of term t: t itself for a constant divisor, or, for a
 * divisor v that is not a constant, t = div*v or v*div. */
static tir_node lf_div_of(tir_node t, tir_node v, int constant) {
    if (constant || t->op != TIR_MUL)
        return t;
    return t->src[1] == v ? t->src[0] : t->src[0] == v ? t->src[1] : NULL;
}

/* floordiv(x, c)*c*k + floormod(x, c)*k -> x*k (also C's x/c and x%c), for
 * a constant c or any divisor c (a symbolic extent: a fused loop over n
 * splits back as floordiv(f, n)*n + floormod(f, n); by 0 both sides are
 * undefined) */
static void lf_merge_divmod(lform *f) {
    for (int i = 0; i < f->n && f->ok; i++) {
        tir_node m = f->v[i].t;
        int64_t c = 1, want, k = f->v[i].c;
        if (!k || (m->op != TIR_FLOORMOD && m->op != TIR_MOD))
            continue;
        int constant = tir_const_int(m->src[1], &c);
        if (c == 0 || !kiln_mul_ok(k, c, &want))
            continue;
        want = wrap_signed(want, f->dt);
        tir_op dop = m->op == TIR_FLOORMOD ? TIR_FLOORDIV : TIR_DIV;
        for (int j = 0; j < f->n; j++) {
            tir_node d = lf_div_of(f->v[j].t, m->src[1], constant);
            if (d && d->op == dop && d->src[0] == m->src[0] && d->src[1] == m->src[1] &&
                f->v[j].c == want) {
                f->v[i].c = f->v[j].c = 0;
                lf_walk(f, m->src[0], k);
                lf_wrap(f);
                break;
            }
        }
    }
}

/* wrap to the dtype, merge div/mod pairs, drop zero terms */
static void lf_finish(lform *f) {
    if (!f->ok)
        return;
    lf_wrap(f);
    lf_merge_divmod(f);
    int m = 0;
    for (int i = 0; i < f->n; i++)
        if (f->v[i].c)
            f->v[m++] = f->v[i];
    f->n = m;
}

int tir_lf_of(lform *f, tir_node e) {
    lf_init(f, (kiln_dtype)e->dtype);
    lf_walk(f, e, 1);
    lf_finish(f);
    return f->ok;
}

/* b = c*q + r split into its terms with coefficients that are multiples of c
 * (q, with floordiv(k, c)) and the rest (r, with floormod(k, c)); c > 0.
 * Returns the number of terms moved to q. */
int tir_lf_split(const lform *f, int64_t c, lform *q, lform *r) {
    lf_init(q, f->dt);
    lf_init(r, f->dt);
    for (int i = 0; i < f->n; i++) {
        if (f->v[i].c % c == 0)
            lf_term(q, f->v[i].t, f->v[i].c / c);
        else
            lf_term(r, f->v[i].t, f->v[i].c);
    }
    q->k = kiln_floordiv_i64(f->k, c);
    r->k = kiln_floormod_i64(f->k, c);
    return q->n;
}

static tir_node lf_term_node(kiln_ctx *ctx, kiln_dtype dt, tir_node t, int64_t c) {
    return c == 1 ? t : tir_mul(t, tir_int(ctx, dt, wrap_dt(c, dt)));
}

/* t1*c1 + t2*c2 + ... + k: the first positive term leads, -1 coefficients
 * become subtraction, the constant comes last (or first if no term is positive) */
tir_node tir_lf_rebuild(kiln_ctx *ctx, const lform *f) {
    kiln_dtype dt = f->dt;
    /* the most negative coefficient of the width has no negation: it leads as is */
    int64_t cmin = wrap_signed(INT64_MIN >> (64 - 8 * kiln_dtype_size(dt)), dt);
    int p = -1;
    for (int i = 0; i < f->n && p < 0; i++)
        if (f->v[i].c > 0 || f->v[i].c == cmin)
            p = i;
    tir_node acc =
        p >= 0 ? lf_term_node(ctx, dt, f->v[p].t, f->v[p].c) : tir_int(ctx, dt, wrap_dt(f->k, dt));
    for (int i = 0; i < f->n; i++) {
        int64_t c = f->v[i].c;
        if (i == p || !c)
            continue;
        if (c > 0 || c == cmin)
            acc = tir_add(acc, lf_term_node(ctx, dt, f->v[i].t, c));
        else
            acc = tir_sub(acc, lf_term_node(ctx, dt, f->v[i].t, -c));
    }
    if (p >= 0 && f->k > 0)
        acc = tir_add(acc, tir_int(ctx, dt, wrap_dt(f->k, dt)));
    if (p >= 0 && f->k < 0)
        acc = tir_sub(acc, tir_int(ctx, dt, wrap_dt(-f->k, dt)));
    return acc;
}

/* bounds of k + sum(c_i * bound(t_i)) */
itv tir_lf_bound(const tir_analyzer *an, const lform *f) {
    itv r = itv_make(f->k, f->k);
    for (int i = 0; i < f->n; i++)
        r = itv_add(r, itv_mul(tir_bound(an, f->v[i].t), itv_make(f->v[i].c, f->v[i].c)));
    return r;
}

/* Bounds of a - b taken as exact integers. For exact types the linear form of
 * a - b cancels shared terms: (x + 3) - (x + 1) is 2 whatever x is. */
itv tir_bound_diff(const tir_analyzer *an, tir_node a, tir_node b) {
    if (is_exact(a) && a->lanes == 1 && b->lanes == 1) {
        lform f;
        lf_init(&f, (kiln_dtype)a->dtype);
        lf_walk(&f, a, 1);
        lf_walk(&f, b, -1);
        lf_finish(&f);
        itv r = f.ok ? tir_lf_bound(an, &f) : ITV_ALL;
        tir_lf_free(&f);
        if (f.ok)
            return r;
    }
    return itv_sub(tir_bound(an, a), tir_bound(an, b));
}

/* bounds of e, through its linear form for exact types */
itv tir_bound_exact(const tir_analyzer *an, tir_node e) {
    if (!is_exact(e) || e->lanes != 1)
        return tir_bound(an, e);
    return tir_bound_diff(an, e, tir_int(e->ctx, (kiln_dtype)e->dtype, 0));
}

int tir_decide_cmp(const tir_analyzer *an, tir_op op, tir_node a, tir_node b) {
    if (!is_int(a) || !is_int(b))
        return -1;
    itv d = tir_bound_diff(an, a, b);
    switch (op) {
    case TIR_LT: return d.hi < 0 ? 1 : d.lo >= 0 ? 0 : -1;
    case TIR_LE: return d.hi <= 0 ? 1 : d.lo > 0 ? 0 : -1;
    case TIR_GT: return d.lo > 0 ? 1 : d.hi <= 0 ? 0 : -1;
    case TIR_GE: return d.lo >= 0 ? 1 : d.hi < 0 ? 0 : -1;
    case TIR_EQ: return (d.lo == 0 && d.hi == 0) ? 1 : (d.lo > 0 || d.hi < 0) ? 0 : -1;
    case TIR_NE: return (d.lo == 0 && d.hi == 0) ? 0 : (d.lo > 0 || d.hi < 0) ? 1 : -1;
    default: return -1;
    }
}
