/* compute_reduce.c: computes of the reductions (sum, mean, max, min, prod
 * over a set of axes, with keepdims), argmax/argmin (a max reduction, then
 * the first or last index that reaches it), and layer normalization (two
 * passes: the mean, then the variance of the centred data). */
#include <stdio.h>
#include <string.h>

#include "compute.h"

/* ---- sum, mean, max, min, prod ---------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *acc;
    const char *op;
    int nd, keep, nr;
    int mask[KILN_MAX_NDIM];
    kiln_expr r[KILN_MAX_NDIM];
    int64_t count;
} red_args;

/* The input index for output index i: the reduce axes r[] on the masked
 * dims (which the output keeps as size 1 with keepdims, or drops). */
static void red_index(int nd, const int *mask, int keep, const kiln_expr *r, const kiln_expr *i,
                      kiln_expr *ix) {
    int j = 0, k = 0;
    for (int d = 0; d < nd; d++) {
        if (mask[d]) {
            ix[d] = r[k++];
            j += keep;
        } else {
            ix[d] = i[j++];
        }
    }
}

static kiln_expr red_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    red_index(a->nd, a->mask, a->keep, a->r, i, ix);
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    if (a->nr == 0) return v; /* nothing to reduce: a copy */
    if (!strcmp(a->op, "max")) return kiln_max_reduce(v, a->nr, a->r);
    if (!strcmp(a->op, "min")) return kiln_min_reduce(v, a->nr, a->r);
    if (!strcmp(a->op, "prod")) return kiln_prod(v, a->nr, a->r);
    return kiln_sum(v, a->nr, a->r); /* sum, mean */
}

static kiln_expr mean_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    int nd = kiln_tensor_ndim(a->acc);
    return kiln_div(kiln_tensor_at(a->acc, nd, i), ops_const(ctx, dt, (double)a->count));
}

kiln_status compute_reduce(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                           kiln_tensor **out) {
    red_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    a.x = in[0];
    a.op = call->op->name;
    a.nd = ops_shape(in[0], xd);
    int ond = ops_out_shape(call, od);
    a.keep = graph_attr_int(call, "keepdims", 0) != 0;
    if (ops_reduce_mask(call, a.nd, a.mask) < 0) return KILN_ERR_INVALID;
    a.count = 1;
    for (int d = 0; d < a.nd; d++) {
        if (!a.mask[d]) continue;
        a.r[a.nr++] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
        a.count *= xd[d];
    }
    if (strcmp(a.op, "mean") || a.nr == 0) {
        out[0] = ops_compute(ctx, call, "", ond, od, red_body, &a);
    } else {
        a.acc = ops_compute(ctx, call, ".sum", ond, od, red_body, &a);
        out[0] = a.acc ? ops_compute(ctx, call, "", ond, od, mean_body, &a) : NULL;
    }
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- argmax, argmin ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *best;
    int nd, axis, keep, is_max, last;
    int64_t n;
    kiln_expr k1, k2;
} arg_args;

/* The input index for output index i with `at` on the reduced axis. */
static void arg_index(const arg_args *a, const kiln_expr *i, kiln_expr at, kiln_expr *ix) {
    int mask[KILN_MAX_NDIM] = {0};
    mask[a->axis] = 1;
    red_index(a->nd, mask, a->keep, &at, i, ix);
}

static kiln_expr arg_best(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    arg_index(a, i, a->k1, ix);
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    return a->is_max ? kiln_max_reduce(v, 1, &a->k1) : kiln_min_reduce(v, 1, &a->k1);
}

/* first index: min over k of (x[k] == best ? k : n); last: max of (... ? k : -1) */
static kiln_expr arg_pick(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    arg_index(a, i, a->k2, ix);
    int ond = kiln_tensor_ndim(a->best);
    kiln_expr hit = kiln_eq(kiln_tensor_at(a->x, a->nd, ix), kiln_tensor_at(a->best, ond, i));
    if (a->last) return kiln_max_reduce(kiln_select(hit, a->k2, ops_int(ctx, -1)), 1, &a->k2);
    return kiln_min_reduce(kiln_select(hit, a->k2, ops_int(ctx, a->n)), 1, &a->k2);
}

kiln_status compute_arg_reduce(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    arg_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    int ond = ops_out_shape(call, od);
    int64_t axis = graph_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.keep = graph_attr_int(call, "keepdims", 1) != 0;
    a.last = graph_attr_int(call, "select_last_index", 0) != 0;
    a.is_max = strcmp(call->op->name, "argmax") == 0;
    a.n = xd[a.axis];
    a.k1 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "k");
    a.k2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "k");
    a.best = ops_compute(ctx, call, ".best", ond, od, arg_best, &a);
    out[0] = a.best ? ops_compute(ctx, call, "", ond, od, arg_pick, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- layer_norm ---------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *gamma, *beta, *sum, *sqsum;
    int nd, axis;
    int64_t count;
    double eps;
    kiln_expr r1[KILN_MAX_NDIM], r2[KILN_MAX_NDIM];
} ln_args;

/* The statistics have the data's rank with the normalized dims of size 1. */
static kiln_expr ln_stat(kiln_ctx *ctx, const ln_args *a, kiln_tensor *t, const kiln_expr *i) {
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++) ix[d] = d < a->axis ? i[d] : ops_int(ctx, 0);
    return kiln_tensor_at(t, a->nd, ix);
}

static kiln_expr ln_mean(kiln_ctx *ctx, const ln_args *a, const kiln_expr *i) {
    return kiln_div(ln_stat(ctx, a, a->sum, i),
                    ops_const(ctx, kiln_tensor_dtype(a->x), (double)a->count));
}

static kiln_expr ln_sum_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++) ix[d] = d < a->axis ? i[d] : a->r1[d - a->axis];
    return kiln_sum(kiln_tensor_at(a->x, a->nd, ix), a->nd - a->axis, a->r1);
}

static kiln_expr ln_sq_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++) ix[d] = d < a->axis ? i[d] : a->r2[d - a->axis];
    kiln_expr c = kiln_sub(kiln_tensor_at(a->x, a->nd, ix), ln_mean(ctx, a, i));
    return kiln_sum(kiln_mul(c, c), a->nd - a->axis, a->r2);
}

static kiln_expr ln_out_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    kiln_expr var = kiln_div(ln_stat(ctx, a, a->sqsum, i), ops_const(ctx, dt, (double)a->count));
    kiln_expr c = kiln_sub(kiln_tensor_at(a->x, a->nd, i), ln_mean(ctx, a, i));
    kiln_expr y = kiln_div(c, kiln_sqrt(kiln_add(var, ops_const(ctx, dt, a->eps))));
    if (a->gamma) y = kiln_mul(y, ops_bcast_read(ctx, a->gamma, a->nd, i));
    if (a->beta) y = kiln_add(y, ops_bcast_read(ctx, a->beta, a->nd, i));
    return y;
}

/* Layer norm over a last axis of K = ko * LN_LANES elements, lane-parallel:
 * the sum and the sum of squared deviations first reduce over ko into
 * LN_LANES partial sums per row (contiguous reads, vector adds), then over
 * those; only the order of the additions differs from the plain form. */
#define LN_LANES 16

typedef struct {
    ln_args *a;
    kiln_tensor *part; /* the partial sums being reduced */
    kiln_expr ko, ki;
} lnv_args;

static kiln_expr lnv_sump(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lnv_args *v = u;
    ln_args *a = v->a;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d + 1 < a->nd; d++) ix[d] = i[d];
    ix[a->nd - 1] = kiln_add(kiln_mul(v->ko, ops_int(ctx, LN_LANES)), i[a->nd - 1]);
    kiln_expr x = kiln_tensor_at(a->x, a->nd, ix);
    if (a->sum) { /* squared deviations from the mean */
        x = kiln_sub(x, ln_mean(ctx, a, i));
        x = kiln_mul(x, x);
    }
    return kiln_sum(x, 1, &v->ko);
}

static kiln_expr lnv_total(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lnv_args *v = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d + 1 < v->a->nd; d++) ix[d] = i[d];
    ix[v->a->nd - 1] = v->ki;
    return kiln_sum(kiln_tensor_at(v->part, v->a->nd, ix), 1, &v->ki);
}

static int ln_lanes_form(const gnode *call, int nd, const int64_t *xd, int axis) {
    return axis == nd - 1 && nd >= 2 && xd[nd - 1] % LN_LANES == 0 &&
           xd[nd - 1] >= 2 * LN_LANES && !strcmp(call->op->name, "nn.layer_norm");
}

kiln_status compute_layer_norm(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    ln_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], sd[KILN_MAX_NDIM];
    a.x = in[0];
    a.gamma = call->nin > 1 ? in[1] : NULL;
    a.beta = call->nin > 2 ? in[2] : NULL;
    a.nd = ops_shape(in[0], xd);
    int64_t axis = graph_attr_int(call, "axis", -1);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.eps = graph_attr_float(call, "epsilon", 1e-5);
    a.count = 1;
    for (int d = 0; d < a.nd; d++) {
        sd[d] = d < a.axis ? xd[d] : 1;
        if (d < a.axis) continue;
        a.count *= xd[d];
        a.r1[d - a.axis] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
        a.r2[d - a.axis] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
    }
    if (ln_lanes_form(call, a.nd, xd, a.axis)) {
        int64_t pd[KILN_MAX_NDIM];
        memcpy(pd, sd, sizeof pd);
        pd[a.nd - 1] = LN_LANES;
        kiln_expr ko_ext = ops_int(ctx, xd[a.nd - 1] / LN_LANES), l = ops_int(ctx, LN_LANES);
        lnv_args v1 = {&a, NULL, kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko"),
                       kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki")};
        lnv_args v2 = {&a, NULL, kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko"),
                       kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki")};
        v1.part = ops_compute(ctx, call, ".sump", a.nd, pd, lnv_sump, &v1); /* a.sum NULL: plain */
        a.sum = v1.part ? ops_compute(ctx, call, ".sum", a.nd, sd, lnv_total, &v1) : NULL;
        v2.part = a.sum ? ops_compute(ctx, call, ".sqsump", a.nd, pd, lnv_sump, &v2) : NULL;
        a.sqsum = v2.part ? ops_compute(ctx, call, ".sqsum", a.nd, sd, lnv_total, &v2) : NULL;
    } else {
        a.sum = ops_compute(ctx, call, ".sum", a.nd, sd, ln_sum_body, &a);
        a.sqsum = a.sum ? ops_compute(ctx, call, ".sqsum", a.nd, sd, ln_sq_body, &a) : NULL;
    }
    out[0] = a.sqsum ? ops_compute(ctx, call, "", a.nd, xd, ln_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The schedule of the lane-parallel layer norm: rows (the leading axes,
 * fused) in parallel; per row the partial sums and the output are vectors of
 * LN_LANES, every statistic computed at the row in local buffers. */
kiln_status schedule_layer_norm(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                kiln_tensor *out, const kiln_target *target) {
    (void)target;
    int64_t xd[KILN_MAX_NDIM];
    int nd = ops_shape(out, xd);
    int64_t axis = graph_attr_int(call, "axis", -1);
    if (axis < 0) axis += nd;
    if (anchor != out || !ln_lanes_form(call, nd, xd, (int)axis)) return KILN_OK;
    /* out reads x, sum, sqsum (and gamma, beta); sqsum reads sqsump, which
       reads x and sum; sum reads sump */
    kiln_tensor *t[8], *sum = NULL, *sq = NULL, *sump, *sqp;
    int n = kiln_tensor_inputs(out, t, 8);
    for (int k = 0; k < n && k < 8; k++) {
        const char *nm = kiln_tensor_name(t[k]);
        size_t len = strlen(nm);
        if (len > 4 && !strcmp(nm + len - 4, ".sum")) sum = t[k];
        if (len > 6 && !strcmp(nm + len - 6, ".sqsum")) sq = t[k];
    }
    if (!sum || !sq || kiln_tensor_inputs(sum, t, 8) != 1) return KILN_OK;
    sump = t[0];
    if (kiln_tensor_inputs(sq, t, 8) != 1) return KILN_OK;
    sqp = t[0];
    /* consumers first: sqsum, its partials, sum, its partials */
    kiln_tensor *stages[4] = {sq, sqp, sum, sump};
    static const ops_row_kind kinds[4] = {OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_SCALAR,
                                          OPS_ROW_PARTIAL};
    return ops_schedule_rows(s, out, LN_LANES, 4, stages, kinds);
}

kiln_status ops_schedule_rows(kiln_schedule *s, kiln_tensor *out, int64_t lanes, int n,
                              kiln_tensor *const *stages, const ops_row_kind *kinds) {
    int nd = kiln_tensor_ndim(out);
    kiln_stage *so = kiln_schedule_stage(s, out);
    if (!so || nd < 2) return KILN_ERR_INVALID;
    kiln_expr row = kiln_tensor_axis(out, 0), ko, ki;
    kiln_status st;
    for (int d = 1; d < nd - 1; d++)
        if ((st = kiln_fuse(so, row, kiln_tensor_axis(out, d), &row)) != KILN_OK) return st;
    if ((st = kiln_parallel(so, row)) != KILN_OK ||
        (st = kiln_split(so, kiln_tensor_axis(out, nd - 1), lanes, &ko, &ki)) != KILN_OK ||
        (st = kiln_vectorize(so, ki)) != KILN_OK)
        return st;
    for (int k = 0; k < n; k++) {
        kiln_stage *x = kiln_schedule_stage(s, stages[k]);
        if (!x) return KILN_ERR_INVALID;
        if ((st = kiln_compute_at(x, so, row)) != KILN_OK ||
            (st = kiln_set_scope(x, "local")) != KILN_OK)
            return st;
        if (kinds[k] == OPS_ROW_SCALAR) continue;
        kiln_expr last = kiln_tensor_axis(stages[k], nd - 1), eo, ei;
        if (kinds[k] == OPS_ROW_VECTOR) {
            if ((st = kiln_split(x, last, lanes, &eo, &ei)) != KILN_OK ||
                (st = kiln_vectorize(x, ei)) != KILN_OK)
                return st;
        } else { /* partial results: reduce outside, lanes inside */
            kiln_expr order[2] = {kiln_tensor_reduce_axis(stages[k], 0), last};
            if ((st = kiln_reorder(x, 2, order)) != KILN_OK ||
                (st = kiln_vectorize(x, last)) != KILN_OK)
                return st;
        }
    }
    return KILN_OK;
}
