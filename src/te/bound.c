/* bound.c: interval arithmetic over index expressions, used by bound
 * inference to find the region of a producer that a consumer's loops read.
 * Bounds are symbolic expressions; anything it cannot bound is reported so
 * the caller falls back to the producer's whole shape. */
#include "te_internal.h"

static int is_point(te_ival v) {
    return v.lo == v.hi;
}

static te_ival point(tir_node e) {
    return (te_ival){e, e};
}

static tir_node imin(tir_node a, tir_node b) {
    return a == b ? a : tir_bin(TIR_MIN, a, b);
}
static tir_node imax(tir_node a, tir_node b) {
    return a == b ? a : tir_bin(TIR_MAX, a, b);
}

static int uses_any(tir_node e, int n, const tir_node *vars) {
    for (int i = 0; i < n; i++)
        if (tir_uses_var(e, vars[i]))
            return 1;
    return 0;
}

int te_eval_interval(tir_node e, int n, const tir_node *vars, const te_ival *ivals, te_ival *out) {
    if (e->lanes != 1)
        return 0;
    if (e->op == TIR_VAR) {
        for (int i = 0; i < n; i++)
            if (vars[i] == e) {
                *out = ivals[i];
                return out->lo != NULL;
            }
        *out = point(e);
        return 1;
    }
    if (!uses_any(e, n, vars)) {
        *out = point(e);
        return 1;
    }
    te_ival a, b;
    int64_t c;
    switch (e->op) {
    case TIR_CAST:
        if (!tir_is_int_dtype((kiln_dtype)e->dtype) ||
            !te_eval_interval(e->src[0], n, vars, ivals, &a))
            return 0;
        *out = is_point(a) ? point(tir_cast((kiln_dtype)e->dtype, a.lo))
                           : (te_ival){tir_cast((kiln_dtype)e->dtype, a.lo),
                                       tir_cast((kiln_dtype)e->dtype, a.hi)};
        return 1;
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_MIN:
    case TIR_MAX:
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
        if (!te_eval_interval(e->src[0], n, vars, ivals, &a) ||
            !te_eval_interval(e->src[1], n, vars, ivals, &b))
            return 0;
        break;
    case TIR_SELECT: {
        te_ival x, y;
        if (!te_eval_interval(e->src[1], n, vars, ivals, &x) ||
            !te_eval_interval(e->src[2], n, vars, ivals, &y))
            return 0;
        *out = (te_ival){imin(x.lo, y.lo), imax(x.hi, y.hi)};
        return 1;
    }
    case TIR_CHECK: /* [0, n-1], whatever the index */
        if (uses_any(e->src[1], n, vars))
            return 0;
        *out = (te_ival){tir_i64(e->ctx, 0), tir_sub(e->src[1], tir_i64(e->ctx, 1))};
        return 1;
    default: return 0;
    }
    if (is_point(a) && is_point(b)) {
        *out = point(tir_bin((tir_op)e->op, a.lo, b.lo));
        return 1;
    }
    switch (e->op) {
    case TIR_ADD: *out = (te_ival){tir_add(a.lo, b.lo), tir_add(a.hi, b.hi)}; return 1;
    case TIR_SUB: *out = (te_ival){tir_sub(a.lo, b.hi), tir_sub(a.hi, b.lo)}; return 1;
    case TIR_MUL:
        if (is_point(a)) {
            te_ival t = a;
            a = b;
            b = t;
        }
        if (!tir_const_int(b.lo, &c) || !is_point(b))
            return 0;
        if (c >= 0)
            *out = (te_ival){tir_mul(a.lo, b.lo), tir_mul(a.hi, b.lo)};
        else
            *out = (te_ival){tir_mul(a.hi, b.lo), tir_mul(a.lo, b.lo)};
        return 1;
    case TIR_MIN: *out = (te_ival){imin(a.lo, b.lo), imin(a.hi, b.hi)}; return 1;
    case TIR_MAX: *out = (te_ival){imax(a.lo, b.lo), imax(a.hi, b.hi)}; return 1;
    case TIR_FLOORDIV:
        if (!is_point(b) || !tir_const_int(b.lo, &c) || c <= 0)
            return 0;
        *out = (te_ival){tir_bin(TIR_FLOORDIV, a.lo, b.lo), tir_bin(TIR_FLOORDIV, a.hi, b.lo)};
        return 1;
    case TIR_FLOORMOD:
        if (!is_point(b) || !tir_const_int(b.lo, &c) || c <= 0)
            return 0;
        *out = (te_ival){tir_int(e->ctx, (kiln_dtype)e->dtype, 0),
                         tir_int(e->ctx, (kiln_dtype)e->dtype, c - 1)};
        return 1;
    default: return 0;
    }
}
