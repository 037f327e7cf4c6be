/* te.c: the tensor-expression builders of include/kiln/te.h. Builders check
 * dtypes and propagate NULL, so a C callback can chain them and the first
 * error surfaces when the expression is consumed (kiln_compute). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "te_internal.h"

/* ---- axes ------------------------------------------------------------------- */

const te_dom *te_axis_dom(tir_node var) {
    return (var && var->op == TIR_VAR && var->aux && var->dtype != KILN_HANDLE) ? var->ptr : NULL;
}

tir_node te_make_axis(kiln_ctx *ctx, const char *name, int kind, tir_node min, tir_node extent) {
    te_dom *d = arena_alloc(tir_arena(ctx), sizeof *d);
    d->min = min;
    d->extent = extent;
    return tir_make(ctx, TIR_VAR, KILN_INT64, 1, (uint32_t)kind, ++ctx->next_id, 0, name, d, 0,
                    NULL);
}

/* ---- leaves -------------------------------------------------------------------- */

kiln_expr kiln_var(kiln_ctx *ctx, const char *name) {
    if (!ctx)
        return NULL;
    return tir_var(ctx, name && *name ? name : "v", KILN_INT64);
}

kiln_expr kiln_size_var(kiln_ctx *ctx, const char *name) {
    if (!ctx)
        return NULL;
    return tir_size_var(ctx, name && *name ? name : "n");
}

kiln_expr kiln_int(kiln_ctx *ctx, int64_t v) {
    return ctx ? tir_i64(ctx, v) : NULL;
}

kiln_expr kiln_const(kiln_ctx *ctx, kiln_dtype dt, double v) {
    if (!ctx)
        return NULL;
    if (!kiln_dtype_is_data(dt)) {
        kiln_set_error(KILN_ERR_INVALID, "const: invalid dtype %d", (int)dt);
        return NULL;
    }
    if (dt == KILN_BOOL)
        return tir_int(ctx, dt, v != 0);
    return tir_const(ctx, dt, 1, v);
}

kiln_expr kiln_float(kiln_ctx *ctx, double v) {
    return ctx ? tir_floatc(ctx, KILN_FLOAT32, (double)(float)v) : NULL;
}

static int check_index(const char *what, tir_node e) {
    if (!e)
        return 0;
    if (!tir_is_int_dtype((kiln_dtype)e->dtype) || e->dtype == KILN_BOOL) {
        char buf[128];
        kiln_expr_print(e, buf, sizeof buf);
        kiln_set_error(KILN_ERR_INVALID, "%s: '%s' must be an integer, not %s", what, buf,
                       kiln_dtype_name((kiln_dtype)e->dtype));
        return 0;
    }
    return 1;
}

kiln_expr kiln_reduce_axis(kiln_ctx *ctx, kiln_expr min, kiln_expr extent, const char *name) {
    if (!ctx || !check_index("reduce_axis min", min) || !check_index("reduce_axis extent", extent))
        return NULL;
    int64_t e;
    if (tir_const_int(extent, &e) && e <= 0) {
        kiln_set_error(KILN_ERR_INVALID, "reduce_axis '%s': extent %lld must be positive",
                       name ? name : "k", (long long)e);
        return NULL;
    }
    return te_make_axis(ctx, name && *name ? name : "k", TE_AXIS_REDUCE, tir_cast(KILN_INT64, min),
                        tir_cast(KILN_INT64, extent));
}

/* ---- binary operators ------------------------------------------------------------- */

static const char *op_symbol(tir_op op) {
    switch (op) {
    case TIR_ADD: return "+";
    case TIR_SUB: return "-";
    case TIR_MUL: return "*";
    case TIR_DIV: return "/";
    case TIR_MOD: return "%";
    case TIR_EQ: return "==";
    case TIR_NE: return "!=";
    case TIR_LT: return "<";
    case TIR_LE: return "<=";
    case TIR_GT: return ">";
    case TIR_GE: return ">=";
    case TIR_AND: return "&&";
    case TIR_OR: return "||";
    default: return tir_op_name(op);
    }
}

/* A constant operand takes the other operand's dtype. */
static tir_node convert_const(tir_node c, kiln_dtype dt) {
    if (c->op == TIR_INT && tir_is_int_dtype(dt))
        return tir_int(c->ctx, dt, c->ival); /* exact past 2^53 */
    if (c->op == TIR_INT) /* a uint64 constant is held as its int64 bit pattern */
        return tir_const(c->ctx, dt, 1,
                         c->dtype == KILN_UINT64 ? (double)(uint64_t)c->ival : (double)c->ival);
    return tir_const(c->ctx, dt, 1, c->fval);
}

static tir_node binary(tir_op op, tir_node a, tir_node b) {
    if (!a || !b)
        return NULL;
    if (a->ctx != b->ctx) {
        kiln_set_error(KILN_ERR_INVALID, "%s: operands come from different contexts",
                       tir_op_name(op));
        return NULL;
    }
    if (a->dtype != b->dtype) {
        if (tir_is_const(b) && !tir_is_const(a))
            b = convert_const(b, (kiln_dtype)a->dtype);
        else if (tir_is_const(a) && !tir_is_const(b))
            a = convert_const(a, (kiln_dtype)b->dtype);
        else if (tir_is_const(a) && tir_is_const(b) && tir_is_float_dtype((kiln_dtype)b->dtype))
            a = convert_const(a, (kiln_dtype)b->dtype);
        else if (tir_is_const(a) && tir_is_const(b))
            b = convert_const(b, (kiln_dtype)a->dtype);
        else {
            char sa[96], sb[96];
            kiln_expr_print(a, sa, sizeof sa);
            kiln_expr_print(b, sb, sizeof sb);
            kiln_set_error(KILN_ERR_INVALID,
                           "dtype mismatch in '%s %s %s': %s vs %s (use kiln_cast)", sa,
                           op_symbol(op), sb, kiln_dtype_name((kiln_dtype)a->dtype),
                           kiln_dtype_name((kiln_dtype)b->dtype));
            return NULL;
        }
    }
    if ((op == TIR_AND || op == TIR_OR) && a->dtype != KILN_BOOL) {
        kiln_set_error(KILN_ERR_INVALID, "%s needs bool operands, not %s", op_symbol(op),
                       kiln_dtype_name((kiln_dtype)a->dtype));
        return NULL;
    }
    if (a->dtype == KILN_HANDLE) {
        kiln_set_error(KILN_ERR_INVALID, "%s: operands cannot be handles", tir_op_name(op));
        return NULL;
    }
    return tir_bin(op, a, b);
}

kiln_expr kiln_add(kiln_expr a, kiln_expr b) {
    return binary(TIR_ADD, a, b);
}
kiln_expr kiln_sub(kiln_expr a, kiln_expr b) {
    return binary(TIR_SUB, a, b);
}
kiln_expr kiln_mul(kiln_expr a, kiln_expr b) {
    return binary(TIR_MUL, a, b);
}
kiln_expr kiln_div(kiln_expr a, kiln_expr b) {
    return binary(TIR_DIV, a, b);
}
kiln_expr kiln_mod(kiln_expr a, kiln_expr b) {
    return binary(TIR_MOD, a, b);
}
kiln_expr kiln_floordiv(kiln_expr a, kiln_expr b) {
    return binary(TIR_FLOORDIV, a, b);
}
kiln_expr kiln_floormod(kiln_expr a, kiln_expr b) {
    return binary(TIR_FLOORMOD, a, b);
}
kiln_expr kiln_min(kiln_expr a, kiln_expr b) {
    return binary(TIR_MIN, a, b);
}
kiln_expr kiln_max(kiln_expr a, kiln_expr b) {
    return binary(TIR_MAX, a, b);
}
kiln_expr kiln_eq(kiln_expr a, kiln_expr b) {
    return binary(TIR_EQ, a, b);
}
kiln_expr kiln_ne(kiln_expr a, kiln_expr b) {
    return binary(TIR_NE, a, b);
}
kiln_expr kiln_lt(kiln_expr a, kiln_expr b) {
    return binary(TIR_LT, a, b);
}
kiln_expr kiln_le(kiln_expr a, kiln_expr b) {
    return binary(TIR_LE, a, b);
}
kiln_expr kiln_gt(kiln_expr a, kiln_expr b) {
    return binary(TIR_GT, a, b);
}
kiln_expr kiln_ge(kiln_expr a, kiln_expr b) {
    return binary(TIR_GE, a, b);
}
kiln_expr kiln_and(kiln_expr a, kiln_expr b) {
    return binary(TIR_AND, a, b);
}
kiln_expr kiln_or(kiln_expr a, kiln_expr b) {
    return binary(TIR_OR, a, b);
}

kiln_expr kiln_neg(kiln_expr a) {
    if (!a)
        return NULL;
    return binary(TIR_SUB, tir_const(a->ctx, (kiln_dtype)a->dtype, 1, 0), a);
}

kiln_expr kiln_not(kiln_expr a) {
    if (!a)
        return NULL;
    if (a->dtype != KILN_BOOL) {
        kiln_set_error(KILN_ERR_INVALID, "! needs a bool operand, not %s",
                       kiln_dtype_name((kiln_dtype)a->dtype));
        return NULL;
    }
    return tir_not(a);
}

kiln_expr kiln_select(kiln_expr cond, kiln_expr a, kiln_expr b) {
    if (!cond || !a || !b)
        return NULL;
    if (cond->dtype != KILN_BOOL) {
        kiln_set_error(KILN_ERR_INVALID, "select: condition must be bool, not %s",
                       kiln_dtype_name((kiln_dtype)cond->dtype));
        return NULL;
    }
    /* reuse binary()'s dtype reconciliation on the two values */
    tir_node chk = binary(TIR_ADD, a, b);
    if (!chk)
        return NULL;
    return tir_select(cond, chk->src[0], chk->src[1]);
}

kiln_expr kiln_cast(kiln_dtype dt, kiln_expr a) {
    if (!a)
        return NULL;
    if (!kiln_dtype_is_data(dt)) {
        kiln_set_error(KILN_ERR_INVALID, "cast: invalid dtype %d", (int)dt);
        return NULL;
    }
    return tir_cast(dt, a);
}

kiln_expr kiln_checked_index(kiln_expr index, kiln_expr n, int from_end) {
    if (!index || !n)
        return NULL;
    if (index->ctx != n->ctx) {
        kiln_set_error(KILN_ERR_INVALID, "checked_index: operands come from different contexts");
        return NULL;
    }
    if (!check_index("checked_index index", index) || !check_index("checked_index extent", n))
        return NULL;
    int64_t v;
    if (tir_const_int(n, &v) && v <= 0) {
        kiln_set_error(KILN_ERR_INVALID, "checked_index: extent %lld must be positive",
                       (long long)v);
        return NULL;
    }
    return tir_check(tir_cast(KILN_INT64, index), tir_cast(KILN_INT64, n), from_end);
}

/* ---- intrinsics ---------------------------------------------------------------- */

static tir_node intrin(tir_intrin f, int n, tir_node a, tir_node b) {
    if (!a || (n == 2 && !b))
        return NULL;
    if (n == 2 && a->dtype != b->dtype) {
        tir_node chk = binary(TIR_ADD, a, b);
        if (!chk)
            return NULL;
        a = chk->src[0];
        b = chk->src[1];
    }
    int shift = f == TIR_SHL || f == TIR_SHR;
    if (shift && (!tir_is_int_dtype((kiln_dtype)a->dtype) || a->dtype == KILN_BOOL)) {
        kiln_set_error(KILN_ERR_INVALID, "%s needs integer operands, not %s", tir_intrin_name(f),
                       kiln_dtype_name((kiln_dtype)a->dtype));
        return NULL;
    }
    if (!shift && f != TIR_ABS && !tir_is_float_dtype((kiln_dtype)a->dtype)) {
        kiln_set_error(KILN_ERR_INVALID, "%s needs a float operand, not %s (use kiln_cast)",
                       tir_intrin_name(f), kiln_dtype_name((kiln_dtype)a->dtype));
        return NULL;
    }
    tir_node args[2] = {a, b};
    return tir_call(a->ctx, f, (kiln_dtype)a->dtype, 1, n, args);
}

kiln_expr kiln_exp(kiln_expr a) {
    return intrin(TIR_EXP, 1, a, NULL);
}
kiln_expr kiln_log(kiln_expr a) {
    return intrin(TIR_LOG, 1, a, NULL);
}
kiln_expr kiln_sqrt(kiln_expr a) {
    return intrin(TIR_SQRT, 1, a, NULL);
}
kiln_expr kiln_rsqrt(kiln_expr a) {
    return intrin(TIR_RSQRT, 1, a, NULL);
}
kiln_expr kiln_tanh(kiln_expr a) {
    return intrin(TIR_TANH, 1, a, NULL);
}
kiln_expr kiln_sigmoid(kiln_expr a) {
    return intrin(TIR_SIGMOID, 1, a, NULL);
}
kiln_expr kiln_erf(kiln_expr a) {
    return intrin(TIR_ERF, 1, a, NULL);
}
kiln_expr kiln_pow(kiln_expr a, kiln_expr b) {
    return intrin(TIR_POW, 2, a, b);
}
kiln_expr kiln_floor(kiln_expr a) {
    return intrin(TIR_FLOOR, 1, a, NULL);
}
kiln_expr kiln_ceil(kiln_expr a) {
    return intrin(TIR_CEIL, 1, a, NULL);
}
kiln_expr kiln_abs(kiln_expr a) {
    return intrin(TIR_ABS, 1, a, NULL);
}
kiln_expr kiln_round(kiln_expr a) {
    return intrin(TIR_ROUND, 1, a, NULL);
}
kiln_expr kiln_sin(kiln_expr a) {
    return intrin(TIR_SIN, 1, a, NULL);
}
kiln_expr kiln_cos(kiln_expr a) {
    return intrin(TIR_COS, 1, a, NULL);
}
kiln_expr kiln_tan(kiln_expr a) {
    return intrin(TIR_TAN, 1, a, NULL);
}
kiln_expr kiln_asin(kiln_expr a) {
    return intrin(TIR_ASIN, 1, a, NULL);
}
kiln_expr kiln_acos(kiln_expr a) {
    return intrin(TIR_ACOS, 1, a, NULL);
}
kiln_expr kiln_atan(kiln_expr a) {
    return intrin(TIR_ATAN, 1, a, NULL);
}
kiln_expr kiln_sinh(kiln_expr a) {
    return intrin(TIR_SINH, 1, a, NULL);
}
kiln_expr kiln_cosh(kiln_expr a) {
    return intrin(TIR_COSH, 1, a, NULL);
}
kiln_expr kiln_asinh(kiln_expr a) {
    return intrin(TIR_ASINH, 1, a, NULL);
}
kiln_expr kiln_acosh(kiln_expr a) {
    return intrin(TIR_ACOSH, 1, a, NULL);
}
kiln_expr kiln_atanh(kiln_expr a) {
    return intrin(TIR_ATANH, 1, a, NULL);
}
kiln_expr kiln_shl(kiln_expr a, kiln_expr b) {
    return intrin(TIR_SHL, 2, a, b);
}
kiln_expr kiln_shr(kiln_expr a, kiln_expr b) {
    return intrin(TIR_SHR, 2, a, b);
}

kiln_expr kiln_dot(int k, const kiln_expr *a, const kiln_expr *b) {
    if (k != 2 && k != 4) {
        kiln_set_error(KILN_ERR_INVALID, "dot: %d pairs (2 or 4 are supported)", k);
        return NULL;
    }
    if (!a || !b)
        return NULL;
    tir_node args[8];
    for (int j = 0; j < 2 * k; j++) {
        tir_node x = j < k ? a[j] : b[j - k];
        if (!x)
            return NULL;
        kiln_dtype dt = (kiln_dtype)x->dtype;
        if (x->ctx != a[0]->ctx || x->lanes != 1) {
            kiln_set_error(KILN_ERR_INVALID, "dot: operands from different contexts or vectors");
            return NULL;
        }
        if (!tir_is_int_dtype(dt) || dt == KILN_BOOL || kiln_dtype_size(dt) > 2) {
            kiln_set_error(KILN_ERR_INVALID,
                           "dot: operand %d is %s, not an integer of 8 or 16 bits", j,
                           kiln_dtype_name(dt));
            return NULL;
        }
        args[j] = x;
    }
    return tir_call(a[0]->ctx, k == 2 ? TIR_DOT2 : TIR_DOT4, KILN_INT32, 1, 2 * k, args);
}

/* ---- reductions -------------------------------------------------------------------- */

static tir_node reduce(tir_combiner c, tir_node a, int naxes, const kiln_expr *axes) {
    static const char *names[] = {"sum", "max", "min", "prod"};
    if (!a)
        return NULL;
    if (naxes < 1 || naxes > 32 || !axes) {
        kiln_set_error(KILN_ERR_INVALID, "%s: needs 1 to 32 reduce axes, got %d", names[c], naxes);
        return NULL;
    }
    tir_node src[33];
    src[0] = a;
    for (int i = 0; i < naxes; i++) {
        tir_node v = axes[i];
        if (!v)
            return NULL;
        if (v->op != TIR_VAR || v->aux != TE_AXIS_REDUCE) {
            char buf[96];
            kiln_expr_print(v, buf, sizeof buf);
            kiln_set_error(KILN_ERR_INVALID,
                           "%s: axis '%s' is not a reduce axis "
                           "(make it with kiln_reduce_axis)",
                           names[c], buf);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (src[1 + j] == v) {
                kiln_set_error(KILN_ERR_INVALID, "%s: axis '%s' is given twice", names[c], v->name);
                return NULL;
            }
        src[1 + i] = v;
    }
    if (a->dtype == KILN_BOOL || a->dtype == KILN_HANDLE) {
        kiln_set_error(KILN_ERR_INVALID, "%s: cannot reduce %s values", names[c],
                       kiln_dtype_name((kiln_dtype)a->dtype));
        return NULL;
    }
    return tir_make(a->ctx, TIR_REDUCE, (kiln_dtype)a->dtype, 1, (uint32_t)c, 0, 0, NULL, NULL,
                    naxes + 1, src);
}

kiln_expr kiln_sum(kiln_expr a, int n, const kiln_expr *axes) {
    return reduce(TIR_RSUM, a, n, axes);
}
kiln_expr kiln_max_reduce(kiln_expr a, int n, const kiln_expr *axes) {
    return reduce(TIR_RMAX, a, n, axes);
}
kiln_expr kiln_min_reduce(kiln_expr a, int n, const kiln_expr *axes) {
    return reduce(TIR_RMIN, a, n, axes);
}
kiln_expr kiln_prod(kiln_expr a, int n, const kiln_expr *axes) {
    return reduce(TIR_RPROD, a, n, axes);
}

/* ---- tensors ----------------------------------------------------------------------- */

kiln_tensor *te_tensor_new(kiln_ctx *ctx, te_kind kind, const char *name, kiln_dtype dt, int ndim,
                           const tir_node *shape) {
    arena *a = tir_arena(ctx);
    kiln_tensor *t = arena_alloc(a, sizeof *t);
    t->ctx = ctx;
    t->kind = kind;
    t->name = tir_intern(ctx, name);
    t->dtype = dt;
    t->ndim = ndim;
    t->shape = arena_alloc(a, sizeof(tir_node) * (size_t)(ndim ? ndim : 1));
    t->axis = arena_alloc(a, sizeof(tir_node) * (size_t)(ndim ? ndim : 1));
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->scan_axis = -1;
    return t;
}

static int check_shape(const char *what, const char *name, int ndim, const kiln_expr *shape,
                       tir_node *out) {
    if (ndim < 0 || ndim > 16 || (ndim > 0 && !shape)) {
        kiln_set_error(KILN_ERR_INVALID, "%s '%s': rank %d is not in 0..16", what, name, ndim);
        return 0;
    }
    for (int i = 0; i < ndim; i++) {
        if (!check_index(what, shape[i])) {
            kiln_error_prefix("%s '%s': dim %d", what, name, i);
            return 0;
        }
        int64_t v;
        if (tir_const_int(shape[i], &v) && v < 0) {
            kiln_set_error(KILN_ERR_INVALID, "%s '%s': dim %d is negative (%lld)", what, name, i,
                           (long long)v);
            return 0;
        }
        out[i] = tir_cast(KILN_INT64, shape[i]);
    }
    return 1;
}

/* A tensor whose shape and dtype are given (a placeholder, a scan): what
 * (also its default name) in errors. */
static kiln_tensor *declared(kiln_ctx *ctx, te_kind kind, const char *what, int ndim,
                             const kiln_expr *shape, kiln_dtype dt, const char *name) {
    if (!ctx)
        return NULL;
    name = name && *name ? name : what;
    tir_node sh[16];
    if (!check_shape(what, name, ndim, shape, sh))
        return NULL;
    if (!kiln_dtype_is_data(dt)) {
        kiln_set_error(KILN_ERR_INVALID, "%s '%s': invalid dtype %d", what, name, (int)dt);
        return NULL;
    }
    return te_tensor_new(ctx, kind, name, dt, ndim, sh);
}

kiln_tensor *kiln_placeholder(kiln_ctx *ctx, int ndim, const kiln_expr *shape, kiln_dtype dt,
                              const char *name) {
    return declared(ctx, TE_PLACEHOLDER, "placeholder", ndim, shape, dt, name);
}

/* Find a REDUCE anywhere but at the root of the body. */
static int nested_reduce_rec(tir_set *seen, tir_node e, int at_root) {
    if (!at_root && tir_set_add(seen, e))
        return 0; /* shared: walked already */
    if (e->op == TIR_REDUCE && !at_root)
        return 1;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (nested_reduce_rec(seen, e->src[i], 0))
            return 1;
    return 0;
}

static int nested_reduce(tir_node e, int at_root) {
    tir_set seen = {0};
    int r = nested_reduce_rec(&seen, e, at_root);
    tir_set_free(&seen);
    return r;
}

/* A tensor read in e that is declared as a scan and not defined yet (other
 * than `self`), or NULL. */
static kiln_tensor *undefined_read_rec(tir_set *seen, tir_node e, const kiln_tensor *self) {
    if (tir_set_add(seen, e))
        return NULL;
    if (e->op == TIR_TENSOR_READ) {
        kiln_tensor *t = e->ptr;
        if (t != self && t->kind == TE_COMPUTE && !t->body)
            return t;
    }
    for (uint32_t i = 0; i < e->nsrc; i++) {
        kiln_tensor *t = undefined_read_rec(seen, e->src[i], self);
        if (t)
            return t;
    }
    return NULL;
}

/* 1 if e reads tensor t. */
static int reads_rec(tir_set *seen, tir_node e, const kiln_tensor *t) {
    if (tir_set_add(seen, e))
        return 0;
    if (e->op == TIR_TENSOR_READ && e->ptr == t)
        return 1;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (reads_rec(seen, e->src[i], t))
            return 1;
    return 0;
}

static int reads(tir_node e, const kiln_tensor *t) {
    tir_set seen = {0};
    int r = reads_rec(&seen, e, t);
    tir_set_free(&seen);
    return r;
}

/* Make the axes of a compute over sh and call fn for its body; checks the
 * body. NULL with an error naming the compute. */
static tir_node make_body(kiln_ctx *ctx, const char *name, int ndim, const tir_node *sh,
                          kiln_compute_fn fn, void *user, tir_node *axis, const kiln_tensor *self) {
    if (!fn) {
        kiln_set_error(KILN_ERR_INVALID, "compute '%s': no body function", name);
        return NULL;
    }
    static const char *axis_names[] = {"i", "j", "k", "l"};
    for (int i = 0; i < ndim; i++) {
        char nm[16];
        if (ndim <= 4)
            snprintf(nm, sizeof nm, "%s", axis_names[i]);
        else
            snprintf(nm, sizeof nm, "ax%d", i);
        axis[i] = te_make_axis(ctx, nm, TE_AXIS_DATA, tir_i64(ctx, 0), sh[i]);
    }
    kiln_clear_error();
    tir_node body = fn(ctx, axis, user);
    if (!body) {
        const char *e = kiln_last_error();
        kiln_set_error(KILN_ERR_INVALID, "compute '%s': %s", name,
                       *e ? e : "the body function returned NULL");
        return NULL;
    }
    if (tir_is_stmt(body) || body->lanes != 1 || body->dtype == KILN_HANDLE) {
        kiln_set_error(KILN_ERR_INVALID, "compute '%s': the body is not a scalar expression", name);
        return NULL;
    }
    if (nested_reduce(body, 1)) {
        kiln_set_error(KILN_ERR_INVALID,
                       "compute '%s': a reduction must be the whole body, not part of it", name);
        return NULL;
    }
    tir_set seen = {0};
    kiln_tensor *u = undefined_read_rec(&seen, body, self);
    tir_set_free(&seen);
    if (u) {
        kiln_set_error(KILN_ERR_INVALID,
                       "compute '%s': reads scan '%s', which is declared but not defined yet "
                       "(only its own body may read it before kiln_scan_define)",
                       name, u->name);
        return NULL;
    }
    return body;
}

kiln_tensor *kiln_compute(kiln_ctx *ctx, int ndim, const kiln_expr *shape, kiln_compute_fn fn,
                          void *user, const char *name) {
    if (!ctx)
        return NULL;
    name = name && *name ? name : "compute";
    tir_node sh[16], axis[16];
    if (!check_shape("compute", name, ndim, shape, sh))
        return NULL;
    tir_node body = make_body(ctx, name, ndim, sh, fn, user, axis, NULL);
    if (!body)
        return NULL;
    kiln_tensor *t = te_tensor_new(ctx, TE_COMPUTE, name, (kiln_dtype)body->dtype, ndim, sh);
    for (int i = 0; i < ndim; i++)
        t->axis[i] = axis[i];
    t->body = body;
    return t;
}

/* ---- recurrent computes (scans) --------------------------------------------------- */

kiln_tensor *kiln_scan_declare(kiln_ctx *ctx, int ndim, const kiln_expr *shape, kiln_dtype dt,
                               int scan_axis, const char *name) {
    kiln_tensor *t = declared(ctx, TE_COMPUTE, "scan", ndim, shape, dt, name);
    if (t && (scan_axis < 0 || scan_axis >= ndim)) {
        kiln_set_error(KILN_ERR_INVALID, "scan '%s': scan axis %d is not a dim of its %d", t->name,
                       scan_axis, ndim);
        return NULL;
    }
    if (t)
        t->scan_axis = scan_axis;
    return t;
}

typedef struct {
    kiln_tensor *t;
    int nred;
    tir_node rvar[32];
    te_ival riv[32];
    tir_analyzer *an;
    tir_node bad; /* the first read that breaks the rule */
    const char *why;
} self_check;

/* Every read of c->t in e: at the element's own index on every axis but
 * the scan axis, and provably below it on the scan axis (reduce axes
 * ranging over their domains). */
static void check_self_reads_rec(tir_set *seen, tir_node e, self_check *c) {
    if (c->bad || tir_set_add(seen, e))
        return;
    if (e->op == TIR_TENSOR_READ && e->ptr == c->t) {
        kiln_tensor *t = c->t;
        for (int d = 0; d < t->ndim && !c->bad; d++) {
            if (d != t->scan_axis) {
                if (e->src[d] != t->axis[d]) {
                    c->bad = e;
                    c->why = "reads another index than its own on an axis that is not the scan "
                             "axis";
                }
                continue;
            }
            te_ival iv;
            if (!te_eval_interval(e->src[d], c->nred, c->rvar, c->riv, &iv) ||
                !tir_prove(c->an, tir_bin(TIR_LT, iv.hi, t->axis[d]))) {
                c->bad = e;
                c->why = "reads an index of the scan axis not provably before its own";
            }
        }
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        check_self_reads_rec(seen, e->src[i], c);
}

kiln_status kiln_scan_define(kiln_tensor *t, kiln_compute_fn fn, void *user) {
    if (!t)
        return kiln_set_error(KILN_ERR_INVALID, "scan_define: tensor is NULL");
    if (!te_is_scan(t) || t->body)
        return kiln_set_error(KILN_ERR_INVALID, "scan_define: '%s' is %s", t->name,
                              te_is_scan(t) ? "defined already"
                                            : "not a scan (declare it with kiln_scan_declare)");
    kiln_ctx *ctx = t->ctx;
    tir_node axis[16];
    tir_node body = make_body(ctx, t->name, t->ndim, t->shape, fn, user, axis, t);
    if (!body)
        return KILN_ERR_INVALID;
    if (body->dtype != t->dtype)
        return kiln_set_error(KILN_ERR_INVALID,
                              "scan '%s': the body is %s but the scan was declared %s", t->name,
                              kiln_dtype_name((kiln_dtype)body->dtype), kiln_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim; i++)
        t->axis[i] = axis[i];
    self_check c = {t, 0, {0}, {{0}}, NULL, NULL, NULL};
    if (body->op == TIR_REDUCE) {
        c.nred = (int)body->nsrc - 1;
        for (int k = 0; k < c.nred; k++) {
            tir_node v = body->src[1 + k];
            const te_dom *dom = te_axis_dom(v);
            if (reads(dom->min, t) || reads(dom->extent, t)) {
                for (int i = 0; i < t->ndim; i++)
                    t->axis[i] = NULL;
                return kiln_set_error(KILN_ERR_INVALID,
                                      "scan '%s': the domain of reduce axis '%s' reads the scan "
                                      "itself",
                                      t->name, v->name);
            }
            c.rvar[k] = v;
            c.riv[k] =
                (te_ival){dom->min, tir_sub(tir_add(dom->min, dom->extent), tir_i64(ctx, 1))};
        }
    }
    c.an = tir_analyzer_new(ctx);
    for (int i = 0; i < t->ndim; i++)
        tir_analyzer_bind_extent(c.an, axis[i], t->shape[i]);
    tir_set seen = {0};
    check_self_reads_rec(&seen, body, &c);
    tir_set_free(&seen);
    tir_analyzer_free(c.an);
    if (c.bad) {
        char buf[160];
        kiln_expr_print(c.bad, buf, sizeof buf);
        for (int i = 0; i < t->ndim; i++)
            t->axis[i] = NULL;
        return kiln_set_error(KILN_ERR_INVALID,
                              "scan '%s' (scan axis %d, '%s'): '%s' %s; a scan reads itself only "
                              "at earlier indices of its scan axis and its own on the others",
                              t->name, t->scan_axis, axis[t->scan_axis]->name, buf, c.why);
    }
    t->body = body;
    return KILN_OK;
}

int kiln_tensor_scan_axis(const kiln_tensor *t) {
    return t && t->kind == TE_COMPUTE ? t->scan_axis : -1;
}

tir_node te_read(kiln_tensor *t, int n, const tir_node *idx) {
    return tir_make(t->ctx, TIR_TENSOR_READ, t->dtype, 1, 0, 0, 0, t->name, t, n, idx);
}

kiln_expr kiln_tensor_at(kiln_tensor *t, int n, const kiln_expr *idx) {
    if (!t)
        return NULL;
    if (n != t->ndim) {
        kiln_set_error(KILN_ERR_INVALID, "tensor '%s' has %d dims but was indexed with %d", t->name,
                       t->ndim, n);
        return NULL;
    }
    tir_node ix[16];
    for (int i = 0; i < n; i++) {
        if (!idx[i])
            return NULL;
        if (!check_index("index", idx[i])) {
            kiln_error_prefix("tensor '%s' index %d", t->name, i);
            return NULL;
        }
        ix[i] = tir_cast(KILN_INT64, idx[i]);
    }
    return te_read(t, n, ix);
}

int kiln_tensor_ndim(const kiln_tensor *t) {
    return t ? t->ndim : -1;
}
kiln_expr kiln_tensor_dim(const kiln_tensor *t, int i) {
    return (t && i >= 0 && i < t->ndim) ? t->shape[i] : NULL;
}
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) {
    return t ? t->dtype : KILN_FLOAT32;
}
const char *kiln_tensor_name(const kiln_tensor *t) {
    return t ? t->name : NULL;
}

kiln_expr kiln_tensor_axis(const kiln_tensor *t, int i) {
    return (t && t->kind == TE_COMPUTE && i >= 0 && i < t->ndim) ? t->axis[i] : NULL;
}

int kiln_tensor_num_reduce_axes(const kiln_tensor *t) {
    return (t && t->kind == TE_COMPUTE && t->body && t->body->op == TIR_REDUCE)
               ? (int)t->body->nsrc - 1
               : 0;
}

kiln_expr kiln_tensor_reduce_axis(const kiln_tensor *t, int i) {
    return (i >= 0 && i < kiln_tensor_num_reduce_axes(t)) ? t->body->src[1 + i] : NULL;
}

static void collect_inputs(tir_node e, const kiln_tensor *self, kiln_tensor **out, int cap,
                           int *n) {
    if (e->op == TIR_TENSOR_READ && e->ptr != self) {
        kiln_tensor *t = (kiln_tensor *)e->ptr;
        int seen = 0;
        for (int i = 0; i < *n && i < cap; i++)
            seen |= out[i] == t;
        if (!seen) {
            if (*n < cap)
                out[*n] = t;
            ++*n;
        }
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        collect_inputs(e->src[i], self, out, cap, n);
}

int kiln_tensor_inputs(const kiln_tensor *t, kiln_tensor **out, int cap) {
    int n = 0;
    if (t && t->kind == TE_COMPUTE && t->body)
        collect_inputs(t->body, t, out, cap, &n);
    return n;
}
