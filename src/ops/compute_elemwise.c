/* compute_elemwise.c: computes of elementwise, broadcasting and layout ops
 * (the injective ops): each output element reads input elements at indices
 * derived from its own. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../te/te_internal.h"
#include "compute.h"

kiln_expr ops_int(kiln_ctx *ctx, int64_t v) { return kiln_int(ctx, v); }

kiln_expr ops_const(kiln_ctx *ctx, kiln_dtype dt, double v) { return kiln_const(ctx, dt, v); }

int ops_shape(const kiln_tensor *t, int64_t *dims) {
    for (int d = 0; d < t->ndim; d++) KILN_ASSERT(tir_const_int(t->shape[d], &dims[d]));
    return t->ndim;
}

kiln_tensor *ops_compute(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                         const int64_t *shape, kiln_compute_fn fn, void *user) {
    kiln_expr sh[KILN_MAX_NDIM];
    for (int d = 0; d < ndim; d++) sh[d] = kiln_int(ctx, shape[d]);
    char name[256];
    const char *base = call->name && *call->name ? call->name : call->op->name;
    snprintf(name, sizeof name, "%s%s", base, suffix);
    return kiln_compute(ctx, ndim, sh, fn, user, name);
}

kiln_expr ops_bcast_read(kiln_ctx *ctx, kiln_tensor *t, int out_nd, const kiln_expr *idx) {
    int64_t dims[KILN_MAX_NDIM];
    int nd = ops_shape(t, dims);
    kiln_expr ix[KILN_MAX_NDIM];
    for (int k = 0; k < nd; k++) ix[k] = dims[k] == 1 ? kiln_int(ctx, 0) : idx[k + out_nd - nd];
    return kiln_tensor_at(t, nd, ix);
}

int ops_out_shape(const gnode *call, int64_t *dims) {
    const gtensor_type *t = &call->type.t[0];
    for (int d = 0; d < t->ndim; d++) dims[d] = t->dims[d].v;
    return t->ndim;
}

/* ---- unary -------------------------------------------------------------------- */

typedef struct {
    const gnode *call;
    kiln_tensor *const *in;
    int nd;
} ew;

static kiln_expr unary_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    ew *e = u;
    const char *op = e->call->op->name;
    kiln_expr x = kiln_tensor_at(e->in[0], e->nd, idx);
    kiln_dtype dt = kiln_tensor_dtype(e->in[0]);
    if (!strcmp(op, "nn.relu")) return kiln_max(x, ops_const(ctx, dt, 0));
    if (!strcmp(op, "negative")) return kiln_neg(x);
    if (!strcmp(op, "abs")) return kiln_abs(x);
    if (!strcmp(op, "exp")) return kiln_exp(x);
    if (!strcmp(op, "log")) return kiln_log(x);
    if (!strcmp(op, "sqrt")) return kiln_sqrt(x);
    if (!strcmp(op, "rsqrt")) return kiln_rsqrt(x);
    if (!strcmp(op, "sigmoid")) return kiln_sigmoid(x);
    if (!strcmp(op, "tanh")) return kiln_tanh(x);
    if (!strcmp(op, "erf")) return kiln_erf(x);
    if (!strcmp(op, "floor")) return kiln_floor(x);
    if (!strcmp(op, "ceil")) return kiln_ceil(x);
    if (!strcmp(op, "round")) return kiln_round(x);
    if (!strcmp(op, "logical_not")) return kiln_not(x);
    if (!strcmp(op, "reciprocal")) return kiln_div(ops_const(ctx, dt, 1), x);
    if (!strcmp(op, "sign"))
        return kiln_select(kiln_gt(x, ops_const(ctx, dt, 0)), ops_const(ctx, dt, 1),
                           kiln_select(kiln_lt(x, ops_const(ctx, dt, 0)), ops_const(ctx, dt, -1),
                                       ops_const(ctx, dt, 0)));
    if (!strcmp(op, "nn.softsign"))
        return kiln_div(x, kiln_add(ops_const(ctx, dt, 1), kiln_abs(x)));
    if (!strcmp(op, "nn.softplus")) /* max(x, 0) + log(1 + e^-|x|): no overflow */
        return kiln_add(kiln_max(x, ops_const(ctx, dt, 0)),
                        kiln_log(kiln_add(ops_const(ctx, dt, 1), kiln_exp(kiln_neg(kiln_abs(x))))));
    if (!strcmp(op, "nn.elu") || !strcmp(op, "nn.selu")) {
        int selu = op[3] == 's';
        kiln_expr alpha = ops_const(ctx, dt, graph_attr_float(e->call, "alpha", selu ? 1.67326319217681884765625 : 1.0));
        kiln_expr neg = kiln_mul(alpha, kiln_sub(kiln_exp(x), ops_const(ctx, dt, 1)));
        kiln_expr y = kiln_select(kiln_le(x, ops_const(ctx, dt, 0)), neg, x);
        return selu ? kiln_mul(ops_const(ctx, dt, graph_attr_float(e->call, "gamma", 1.05070102214813232421875)), y) : y;
    }
    if (!strcmp(op, "clip"))
        return kiln_min(kiln_max(x, ops_const(ctx, dt, graph_attr_float(e->call, "a_min", 0))),
                        ops_const(ctx, dt, graph_attr_float(e->call, "a_max", 0)));
    if (!strcmp(op, "nn.leaky_relu"))
        return kiln_select(kiln_lt(x, ops_const(ctx, dt, 0)),
                           kiln_mul(x, ops_const(ctx, dt, graph_attr_float(e->call, "alpha", 0.01))),
                           x);
    if (!strcmp(op, "cast")) {
        kiln_dtype to = KILN_FLOAT32;
        kiln_dtype_parse(graph_attr_str(e->call, "dtype", "float32"), &to);
        if (to == KILN_BOOL) return kiln_ne(x, ops_const(ctx, dt, 0));
        return kiln_cast(to, x);
    }
    kiln_set_error(KILN_ERR_UNSUPPORTED, "no elementwise compute for '%s'", op);
    return NULL;
}

kiln_status compute_unary(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                          kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    ew e = {call, in, ops_out_shape(call, dims)};
    out[0] = ops_compute(ctx, call, "", e.nd, dims, unary_body, &e);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- binary and where ------------------------------------------------------------ */

static kiln_expr binary_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    ew *e = u;
    const char *op = e->call->op->name;
    kiln_expr a = ops_bcast_read(ctx, e->in[0], e->nd, idx), b = ops_bcast_read(ctx, e->in[1], e->nd, idx);
    if (!strcmp(op, "add")) return kiln_add(a, b);
    if (!strcmp(op, "subtract")) return kiln_sub(a, b);
    if (!strcmp(op, "multiply")) return kiln_mul(a, b);
    if (!strcmp(op, "divide")) return kiln_div(a, b);
    if (!strcmp(op, "power")) {
        kiln_dtype dt = kiln_tensor_dtype(e->in[0]);
        if (dt == KILN_FLOAT32 || dt == KILN_FLOAT64) return kiln_pow(a, b);
        /* integer powers through double: exact for results below 2^53 */
        return kiln_cast(dt, kiln_pow(kiln_cast(KILN_FLOAT64, a), kiln_cast(KILN_FLOAT64, b)));
    }
    if (!strcmp(op, "maximum")) return kiln_max(a, b);
    if (!strcmp(op, "minimum")) return kiln_min(a, b);
    if (!strcmp(op, "equal")) return kiln_eq(a, b);
    if (!strcmp(op, "less")) return kiln_lt(a, b);
    if (!strcmp(op, "greater")) return kiln_gt(a, b);
    if (!strcmp(op, "less_equal")) return kiln_le(a, b);
    if (!strcmp(op, "greater_equal")) return kiln_ge(a, b);
    if (!strcmp(op, "not_equal")) return kiln_ne(a, b);
    if (!strcmp(op, "logical_and")) return kiln_and(a, b);
    if (!strcmp(op, "logical_or")) return kiln_or(a, b);
    kiln_set_error(KILN_ERR_UNSUPPORTED, "no broadcasting compute for '%s'", op);
    return NULL;
}

kiln_status compute_binary(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                           kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    ew e = {call, in, ops_out_shape(call, dims)};
    out[0] = ops_compute(ctx, call, "", e.nd, dims, binary_body, &e);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_expr where_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    ew *e = u;
    return kiln_select(ops_bcast_read(ctx, e->in[0], e->nd, idx), ops_bcast_read(ctx, e->in[1], e->nd, idx),
                       ops_bcast_read(ctx, e->in[2], e->nd, idx));
}

kiln_status compute_where(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                          kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    ew e = {call, in, ops_out_shape(call, dims)};
    out[0] = ops_compute(ctx, call, "", e.nd, dims, where_body, &e);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- per-channel ops ---------------------------------------------------------- */

typedef struct {
    ew e;
    int axis;
} chan;

static int norm_axis(const gnode *call, int64_t def, int nd) {
    int64_t a = graph_attr_int(call, "axis", def);
    return (int)(a < 0 ? a + nd : a);
}

static kiln_expr bias_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    chan *c = u;
    return kiln_add(kiln_tensor_at(c->e.in[0], c->e.nd, idx),
                    kiln_tensor_at(c->e.in[1], 1, &idx[c->axis]));
}

kiln_status compute_bias_add(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                             kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    chan c = {{call, in, ops_out_shape(call, dims)}, 0};
    c.axis = norm_axis(call, 1, c.e.nd);
    out[0] = ops_compute(ctx, call, "", c.e.nd, dims, bias_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* (x - mean) * gamma / sqrt(var + eps) + beta, per channel */
static kiln_expr bn_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    chan *c = u;
    kiln_dtype dt = kiln_tensor_dtype(c->e.in[0]);
    const kiln_expr *ch = &idx[c->axis];
    kiln_expr x = kiln_tensor_at(c->e.in[0], c->e.nd, idx);
    kiln_expr gamma = kiln_tensor_at(c->e.in[1], 1, ch), beta = kiln_tensor_at(c->e.in[2], 1, ch);
    kiln_expr mean = kiln_tensor_at(c->e.in[3], 1, ch), var = kiln_tensor_at(c->e.in[4], 1, ch);
    kiln_expr eps = ops_const(ctx, dt, graph_attr_float(c->e.call, "epsilon", 1e-5));
    kiln_expr scale = kiln_div(gamma, kiln_sqrt(kiln_add(var, eps)));
    return kiln_add(kiln_mul(kiln_sub(x, mean), scale), beta);
}

kiln_status compute_batch_norm(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    chan c = {{call, in, ops_out_shape(call, dims)}, 0};
    c.axis = norm_axis(call, 1, c.e.nd);
    out[0] = ops_compute(ctx, call, "", c.e.nd, dims, bn_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- layout -------------------------------------------------------------------- */

typedef struct {
    ew e;
    int64_t odims[KILN_MAX_NDIM];
    int64_t idims[KILN_MAX_NDIM];
    int ind;
    int64_t perm[KILN_MAX_NDIM];
    int axis;
    int64_t offset[4097];
} lay;

/* Row-major reshape: flat index of idx in odims, unflattened in idims. */
static kiln_expr reshape_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    kiln_expr flat = kiln_int(ctx, 0);
    for (int d = 0; d < l->e.nd; d++)
        flat = kiln_add(kiln_mul(flat, kiln_int(ctx, l->odims[d])), idx[d]);
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = l->ind - 1; d >= 0; d--) {
        ix[d] = d ? kiln_floormod(flat, kiln_int(ctx, l->idims[d])) : flat;
        flat = kiln_floordiv(flat, kiln_int(ctx, l->idims[d]));
    }
    return kiln_tensor_at(l->e.in[0], l->ind, ix);
}

kiln_status compute_reshape(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                            kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    l.ind = ops_shape(in[0], l.idims);
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, reshape_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_expr transpose_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < l->e.nd; d++) ix[l->perm[d]] = idx[d];
    return kiln_tensor_at(l->e.in[0], l->e.nd, ix);
}

kiln_status compute_transpose(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                              kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    int n = graph_attr_ints(call, "axes", l.perm, KILN_MAX_NDIM);
    for (int d = 0; d < l.e.nd; d++) {
        if (n <= 0) l.perm[d] = l.e.nd - 1 - d;
        else if (l.perm[d] < 0) l.perm[d] += l.e.nd;
    }
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, transpose_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* out[.., i, ..] = input k at i - offset[k] for the k whose range holds i;
 * indices are clamped so the reads not selected stay in bounds. */
static kiln_expr concat_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    int n = l->e.call->nin;
    kiln_expr r = NULL;
    for (int k = n - 1; k >= 0; k--) {
        kiln_expr ix[KILN_MAX_NDIM];
        memcpy(ix, idx, sizeof(kiln_expr) * (size_t)l->e.nd);
        int64_t len = l->offset[k + 1] - l->offset[k];
        kiln_expr local = kiln_sub(idx[l->axis], kiln_int(ctx, l->offset[k]));
        ix[l->axis] = kiln_min(kiln_max(local, kiln_int(ctx, 0)), kiln_int(ctx, len - 1));
        kiln_expr v = kiln_tensor_at(l->e.in[k], l->e.nd, ix);
        r = r ? kiln_select(kiln_lt(idx[l->axis], kiln_int(ctx, l->offset[k + 1])), v, r) : v;
    }
    return r;
}

kiln_status compute_concatenate(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    l.axis = norm_axis(call, 0, l.e.nd);
    for (int k = 0; k < call->nin; k++) {
        int64_t d[KILN_MAX_NDIM];
        ops_shape(in[k], d);
        l.offset[k + 1] = l.offset[k] + d[l.axis];
    }
    /* skip empty inputs: they contribute no elements */
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, concat_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

typedef struct {
    ew e;
    int axis;
    int64_t off;
} split_part;

static kiln_expr split_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    split_part *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    memcpy(ix, idx, sizeof(kiln_expr) * (size_t)s->e.nd);
    ix[s->axis] = kiln_add(idx[s->axis], kiln_int(ctx, s->off));
    return kiln_tensor_at(s->e.in[0], s->e.nd, ix);
}

kiln_status compute_split(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                          kiln_tensor **out) {
    const gtype *t = &call->type;
    int nd = t->t[0].ndim;
    split_part s = {{call, in, nd}, norm_axis(call, 0, nd), 0};
    for (int k = 0; k < t->n; k++) {
        int64_t dims[KILN_MAX_NDIM];
        for (int d = 0; d < nd; d++) dims[d] = t->t[k].dims[d].v;
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%d", k);
        out[k] = ops_compute(ctx, call, suffix, nd, dims, split_body, &s);
        if (!out[k]) return KILN_ERR_INVALID;
        s.off += dims[s.axis];
    }
    return KILN_OK;
}
