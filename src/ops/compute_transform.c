/* compute_transform.c: computes of the indexing ops: strided_slice (any
 * steps, negative too), take (gather along an axis with negative indices
 * counted from the end), broadcast_to, and nn.pad (constant, edge and
 * reflect). Every read stays in bounds: indices are clamped where the
 * value read is not selected or the index comes from data. */
#include <string.h>

#include "compute.h"

/* ---- strided_slice -------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x;
    int nd;
    int64_t start[KILN_MAX_NDIM], step[KILN_MAX_NDIM], len[KILN_MAX_NDIM];
} slice_args;

static kiln_expr slice_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    slice_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++)
        ix[d] = kiln_add(ops_int(ctx, a->start[d]), kiln_mul(i[d], ops_int(ctx, a->step[d])));
    return kiln_tensor_at(a->x, a->nd, ix);
}

kiln_status compute_strided_slice(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    slice_args a;
    int64_t xd[KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    if (ops_slice_params(call, a.nd, xd, a.start, a.step, a.len) < 0) return KILN_ERR_INVALID;
    out[0] = ops_compute(ctx, call, "", a.nd, a.len, slice_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- take ---------------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *idx;
    int nd, ni, axis;
    int64_t n;
} take_args;

static kiln_expr take_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    take_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    kiln_expr j = kiln_tensor_at(a->idx, a->ni, i + a->axis);
    if (kiln_tensor_dtype(a->idx) != KILN_INT64) j = kiln_cast(KILN_INT64, j);
    kiln_expr zero = ops_int(ctx, 0), n = ops_int(ctx, a->n);
    j = kiln_select(kiln_lt(j, zero), kiln_add(j, n), j); /* negative: from the end */
    j = kiln_min(kiln_max(j, zero), ops_int(ctx, a->n - 1)); /* out of range: clamped */
    for (int d = 0; d < a->axis; d++) ix[d] = i[d];
    ix[a->axis] = j;
    for (int d = a->axis + 1; d < a->nd; d++) ix[d] = i[d - 1 + a->ni];
    return kiln_tensor_at(a->x, a->nd, ix);
}

kiln_status compute_take(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                         kiln_tensor **out) {
    take_args a;
    int64_t xd[KILN_MAX_NDIM], id[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.idx = in[1];
    a.nd = ops_shape(in[0], xd);
    a.ni = ops_shape(in[1], id);
    int64_t axis = graph_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.n = xd[a.axis];
    int ond = ops_out_shape(call, od);
    out[0] = ops_compute(ctx, call, "", ond, od, take_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- broadcast_to ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x;
    int nd;
} bcast_args;

static kiln_expr bcast_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    bcast_args *a = u;
    return ops_bcast_read(ctx, a->x, a->nd, i);
}

kiln_status compute_broadcast_to(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM];
    bcast_args a = {in[0], ops_out_shape(call, od)};
    out[0] = ops_compute(ctx, call, "", a.nd, od, bcast_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.pad ----------------------------------------------------------------------------- */

typedef enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT } pad_mode;

typedef struct {
    kiln_tensor *x;
    int nd;
    pad_mode mode;
    double value;
    int64_t xd[KILN_MAX_NDIM], before[KILN_MAX_NDIM], after[KILN_MAX_NDIM];
} npad_args;

static kiln_expr npad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    npad_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM], inside = NULL;
    kiln_expr zero = ops_int(ctx, 0);
    for (int d = 0; d < a->nd; d++) {
        if (!a->before[d] && !a->after[d]) {
            ix[d] = i[d];
            continue;
        }
        int64_t n = a->xd[d];
        kiln_expr s = kiln_sub(i[d], ops_int(ctx, a->before[d]));
        kiln_expr last = ops_int(ctx, n > 0 ? n - 1 : 0);
        kiln_expr clamped = kiln_min(kiln_max(s, zero), last);
        if (a->mode == PAD_REFLECT && n > 1) {
            /* mirror without repeating the edge: period 2(n-1) */
            kiln_expr m = kiln_floormod(s, ops_int(ctx, 2 * (n - 1)));
            ix[d] = kiln_select(kiln_lt(m, ops_int(ctx, n)), m,
                                kiln_sub(ops_int(ctx, 2 * (n - 1)), m));
        } else {
            ix[d] = clamped;
        }
        if (a->mode == PAD_CONSTANT) {
            kiln_expr in_d = kiln_and(kiln_ge(s, zero), kiln_lt(s, ops_int(ctx, n)));
            inside = inside ? kiln_and(inside, in_d) : in_d;
        }
    }
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    if (!inside) return v;
    return kiln_select(inside, v, ops_const(ctx, kiln_tensor_dtype(a->x), a->value));
}

kiln_status compute_pad(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                        kiln_tensor **out) {
    npad_args a;
    int64_t od[KILN_MAX_NDIM], pw[2 * KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], a.xd);
    ops_out_shape(call, od);
    graph_attr_ints(call, "pad_width", pw, 2 * KILN_MAX_NDIM);
    for (int d = 0; d < a.nd; d++) {
        a.before[d] = pw[2 * d];
        a.after[d] = pw[2 * d + 1];
    }
    const char *mode = graph_attr_str(call, "pad_mode", "constant");
    a.mode = !strcmp(mode, "edge") ? PAD_EDGE : !strcmp(mode, "reflect") ? PAD_REFLECT : PAD_CONSTANT;
    a.value = graph_attr_float(call, "pad_value", 0);
    out[0] = ops_compute(ctx, call, "", a.nd, od, npad_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}
