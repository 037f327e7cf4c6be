/* norm.c: the normalizations: nn.layer_norm (over dims axis.., two
 * passes: the mean, then the variance of the centred data; over a long
 * last axis in a lane-parallel form with a per-row schedule),
 * nn.batch_norm at inference (a per-channel scale and shift) and nn.lrn
 * (local response normalization across channels). */
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema layer_norm_attrs[] = {
    {"axis", GA_INT, 0, "-1"}, {"epsilon", GA_FLOAT, 0, "1e-05"}, {NULL, 0, 0, NULL}};
static const attr_schema batch_norm_attrs[] = {{"axis", GA_INT, 0, "1"},
                                               {"epsilon", GA_FLOAT, 0, "1e-05"},
                                               {"center", GA_INT, 0, "1"},
                                               {"scale", GA_INT, 0, "1"},
                                               {NULL, 0, 0, NULL}};

static const attr_schema lrn_attrs[] = {{"size", GA_INT, 1, NULL},
                                        {"alpha", GA_FLOAT, 0, "0.0001"},
                                        {"beta", GA_FLOAT, 0, "0.75"},
                                        {"bias", GA_FLOAT, 0, "1"},
                                        {NULL, 0, 0, NULL}};

/* ---- nn.layer_norm ------------------------------------------------------------------ */

/* A parameter that broadcasts onto x, right-aligned, within dims [from, nd). */
static rel_result check_param(const gtensor_type *x, const gtensor_type *p, int from,
                              const char *what) {
    if (p->dtype != x->dtype)
        return ops_fail("%s is %s but the data is %s", what, kiln_dtype_name(p->dtype),
                        kiln_dtype_name(x->dtype));
    if (p->ndim > x->ndim)
        return ops_fail("%s has more dims than the data", what);
    for (int k = 0; k < p->ndim; k++) {
        int d = k + x->ndim - p->ndim;
        gdim pd = p->dims[k];
        if (!pd.sym && pd.v == 1)
            continue;
        if (d < from || !gdim_equal(pd, x->dims[d]))
            return ops_fail("%s does not broadcast to the normalized dims (dim %d)", what, k);
    }
    return REL_OK;
}

static rel_result rel_layer_norm(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->dtype != KILN_FLOAT32 && x->dtype != KILN_FLOAT64 && x->dtype != KILN_FLOAT16)
        return ops_fail("needs a float input, not %s", kiln_dtype_name(x->dtype));
    if (x->ndim < 1)
        return ops_fail("needs at least 1 dim");
    int64_t axis = graph_attr_int(call, "axis", -1);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0)
        axis += x->ndim;
    if (!ops_all_known(x, (int)axis, x->ndim))
        return ops_fail("the normalized dims must not be symbolic");
    for (int i = 1; i < call->nin; i++) {
        const gtensor_type *p = ops_tensor_in(in[i], i, &r);
        if (!p)
            return r;
        if ((r = check_param(x, p, (int)axis, i == 1 ? "gamma" : "beta")) != REL_OK)
            return r;
    }
    return ops_set_out(g, out, x);
}

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
    for (int d = 0; d < a->nd; d++)
        ix[d] = d < a->axis ? i[d] : ops_int(ctx, 0);
    return kiln_tensor_at(t, a->nd, ix);
}

static kiln_expr ln_mean(kiln_ctx *ctx, const ln_args *a, const kiln_expr *i) {
    return kiln_div(ln_stat(ctx, a, a->sum, i),
                    ops_const(ctx, kiln_tensor_dtype(a->x), (double)a->count));
}

static kiln_expr ln_sum_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++)
        ix[d] = d < a->axis ? i[d] : a->r1[d - a->axis];
    return kiln_sum(kiln_tensor_at(a->x, a->nd, ix), a->nd - a->axis, a->r1);
}

static kiln_expr ln_sq_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++)
        ix[d] = d < a->axis ? i[d] : a->r2[d - a->axis];
    kiln_expr c = kiln_sub(kiln_tensor_at(a->x, a->nd, ix), ln_mean(ctx, a, i));
    return kiln_sum(kiln_mul(c, c), a->nd - a->axis, a->r2);
}

static kiln_expr ln_out_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    ln_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    kiln_expr var = kiln_div(ln_stat(ctx, a, a->sqsum, i), ops_const(ctx, dt, (double)a->count));
    kiln_expr c = kiln_sub(kiln_tensor_at(a->x, a->nd, i), ln_mean(ctx, a, i));
    kiln_expr y = kiln_div(c, kiln_sqrt(kiln_add(var, ops_const(ctx, dt, a->eps))));
    if (a->gamma)
        y = kiln_mul(y, ops_bcast_read(ctx, a->gamma, a->nd, i));
    if (a->beta)
        y = kiln_add(y, ops_bcast_read(ctx, a->beta, a->nd, i));
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
    for (int d = 0; d + 1 < a->nd; d++)
        ix[d] = i[d];
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
    for (int d = 0; d + 1 < v->a->nd; d++)
        ix[d] = i[d];
    ix[v->a->nd - 1] = v->ki;
    return kiln_sum(kiln_tensor_at(v->part, v->a->nd, ix), 1, &v->ki);
}

static int ln_lanes_form(int nd, const int64_t *xd, int axis) {
    return axis == nd - 1 && nd >= 2 && xd[nd - 1] % LN_LANES == 0 && xd[nd - 1] >= 2 * LN_LANES;
}

static kiln_status compute_layer_norm(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    ln_args a;
    memset(&a, 0, sizeof a);
    /* the normalized dims are constants (rel_layer_norm); the leading ones
       may be symbolic, so the shapes are expressions */
    int64_t xd[KILN_MAX_NDIM];
    kiln_expr xe[KILN_MAX_NDIM], se[KILN_MAX_NDIM], one = ops_int(ctx, 1);
    a.x = in[0];
    a.gamma = call->nin > 1 ? in[1] : NULL;
    a.beta = call->nin > 2 ? in[2] : NULL;
    a.nd = ops_shape(in[0], xd);
    int64_t axis = graph_attr_int(call, "axis", -1);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.eps = graph_attr_float(call, "epsilon", 1e-5);
    a.count = 1;
    for (int d = 0; d < a.nd; d++) {
        xe[d] = kiln_tensor_dim(in[0], d);
        se[d] = d < a.axis ? xe[d] : one;
        if (d < a.axis)
            continue;
        a.count *= xd[d];
        a.r1[d - a.axis] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
        a.r2[d - a.axis] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
    }
    if (ln_lanes_form(a.nd, xd, a.axis)) {
        kiln_expr pe[KILN_MAX_NDIM];
        memcpy(pe, se, sizeof pe);
        pe[a.nd - 1] = ops_int(ctx, LN_LANES);
        kiln_expr ko_ext = ops_int(ctx, xd[a.nd - 1] / LN_LANES), l = ops_int(ctx, LN_LANES);
        lnv_args v1 = {&a, NULL, kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko"),
                       kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki")};
        lnv_args v2 = {&a, NULL, kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko"),
                       kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki")};
        v1.part = ops_compute_e(ctx, call, ".sump", a.nd, pe, lnv_sump, &v1); /* plain sums */
        a.sum = v1.part ? ops_compute_e(ctx, call, ".sum", a.nd, se, lnv_total, &v1) : NULL;
        v2.part = a.sum ? ops_compute_e(ctx, call, ".sqsump", a.nd, pe, lnv_sump, &v2) : NULL;
        a.sqsum = v2.part ? ops_compute_e(ctx, call, ".sqsum", a.nd, se, lnv_total, &v2) : NULL;
    } else {
        a.sum = ops_compute_e(ctx, call, ".sum", a.nd, se, ln_sum_body, &a);
        a.sqsum = a.sum ? ops_compute_e(ctx, call, ".sqsum", a.nd, se, ln_sq_body, &a) : NULL;
    }
    out[0] = a.sqsum ? ops_compute_e(ctx, call, "", a.nd, xe, ln_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The schedule of the lane-parallel layer norm: rows (the leading axes,
 * fused) in parallel; per row the partial sums and the output are vectors of
 * LN_LANES, every statistic computed at the row in local buffers. */
static kiln_status schedule_layer_norm(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                       kiln_tensor *out, const kiln_target *target) {
    (void)target;
    int64_t xd[KILN_MAX_NDIM];
    int nd = ops_shape(out, xd);
    int64_t axis = graph_attr_int(call, "axis", -1);
    if (axis < 0)
        axis += nd;
    if (anchor != out || !ln_lanes_form(nd, xd, (int)axis))
        return KILN_OK;
    /* out reads x, sum, sqsum (and gamma, beta); sqsum reads sqsump, which
       reads x and sum; sum reads sump */
    kiln_tensor *t[8], *sum = NULL, *sq = NULL, *sump, *sqp;
    int n = kiln_tensor_inputs(out, t, 8);
    for (int k = 0; k < n && k < 8; k++) {
        const char *nm = kiln_tensor_name(t[k]);
        size_t len = strlen(nm);
        if (len > 4 && !strcmp(nm + len - 4, ".sum"))
            sum = t[k];
        if (len > 6 && !strcmp(nm + len - 6, ".sqsum"))
            sq = t[k];
    }
    if (!sum || !sq || kiln_tensor_inputs(sum, t, 8) != 1)
        return KILN_OK;
    sump = t[0];
    if (kiln_tensor_inputs(sq, t, 8) != 1)
        return KILN_OK;
    sqp = t[0];
    /* consumers first: sqsum, its partials, sum, its partials */
    kiln_tensor *stages[4] = {sq, sqp, sum, sump};
    static const ops_row_kind kinds[4] = {OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_SCALAR,
                                          OPS_ROW_PARTIAL};
    return ops_schedule_rows(s, out, LN_LANES, 4, stages, kinds, NULL, 0);
}

/* ---- nn.batch_norm ------------------------------------------------------------------- */

static rel_result rel_batch_norm(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(5);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int64_t axis = graph_attr_int(call, "axis", 1);
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim)
        return ops_fail("axis is out of range");
    static const char *const what[5] = {"", "scale", "bias", "mean", "var"};
    for (int i = 1; i < 5; i++) {
        const gtensor_type *p = ops_tensor_in(in[i], i, &r);
        if (!p)
            return r;
        if (p->ndim != 1 || !gdim_equal(p->dims[0], x->dims[axis])) {
            char c[64], got[64];
            ops_dim_str(x->dims[axis], c, sizeof c);
            ops_dim_str(p->ndim ? p->dims[0] : (gdim){1, NULL}, got, sizeof got);
            return ops_fail("input %d (%s) must be 1-D with the channel count %s, got %d-D of %s",
                            i, what[i], c, p->ndim, got);
        }
    }
    return ops_set_out(g, out, x);
}

typedef struct {
    kiln_tensor *const *in;
    int nd, axis;
    double eps;
} bn_args;

/* (x - mean) * gamma / sqrt(var + eps) + beta, per channel */
static kiln_expr bn_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    bn_args *b = u;
    kiln_dtype dt = kiln_tensor_dtype(b->in[0]);
    const kiln_expr *ch = &idx[b->axis];
    kiln_expr x = kiln_tensor_at(b->in[0], b->nd, idx);
    kiln_expr gamma = kiln_tensor_at(b->in[1], 1, ch), beta = kiln_tensor_at(b->in[2], 1, ch);
    kiln_expr mean = kiln_tensor_at(b->in[3], 1, ch), var = kiln_tensor_at(b->in[4], 1, ch);
    kiln_expr scale = kiln_div(gamma, kiln_sqrt(kiln_add(var, ops_const(ctx, dt, b->eps))));
    return kiln_add(kiln_mul(kiln_sub(x, mean), scale), beta);
}

static kiln_status compute_batch_norm(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    bn_args b = {in, ops_out_shape(call, dims), 0, graph_attr_float(call, "epsilon", 1e-5)};
    b.axis = ops_norm_axis(call, 1, b.nd);
    out[0] = ops_compute(ctx, call, "", b.nd, dims, bn_body, &b);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.lrn ------------------------------------------------------------------------------- */

/* x [N, C, ...] normalized across channels:
 *   y[n, c, ..] = x[n, c, ..] / (bias + alpha / size * s[n, c, ..])^beta,
 * s the sum of x^2 over the channels c - (size - 1) / 2 to
 * c + ceil((size - 1) / 2) that exist (ONNX's LRN; Caffe's across-channel). */
static rel_result rel_lrn(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    rel_result r = ops_rel_float_unary(g, call, in, out);
    if (r != REL_OK)
        return r;
    const gtensor_type *x = &in[0]->t[0];
    if (x->ndim < 2)
        return ops_fail("needs at least 2 dims (N, C, ...), has %d", x->ndim);
    if (x->dims[1].sym)
        return ops_fail("the channel dim must not be symbolic");
    int64_t size = graph_attr_int(call, "size", 0);
    if (size < 1 || size > GRAPH_MAX_ELEMENTS)
        return ops_fail("size %lld must be 1 to 2^48", (long long)size);
    return REL_OK;
}

typedef struct {
    kiln_tensor *x, *sq;
    int nd;
    int64_t c, size;
    double scale, beta, bias; /* scale: alpha / size */
    kiln_expr k;
} lrn_args;

static kiln_expr lrn_sum_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lrn_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)a->nd);
    kiln_expr c = kiln_add(i[1], kiln_sub(a->k, ops_int(ctx, (a->size - 1) / 2)));
    kiln_expr in = kiln_and(kiln_ge(c, ops_int(ctx, 0)), kiln_lt(c, ops_int(ctx, a->c)));
    /* read a channel that exists (both sides of the select are evaluated) */
    ix[1] = kiln_min(kiln_max(c, ops_int(ctx, 0)), ops_int(ctx, a->c - 1));
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    v = kiln_select(in, kiln_mul(v, v), ops_const(ctx, kiln_tensor_dtype(a->x), 0));
    return kiln_sum(v, 1, &a->k);
}

static kiln_expr lrn_out_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lrn_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    kiln_expr d = kiln_add(ops_const(ctx, dt, a->bias),
                           kiln_mul(ops_const(ctx, dt, a->scale), kiln_tensor_at(a->sq, a->nd, i)));
    return kiln_div(kiln_tensor_at(a->x, a->nd, i), kiln_pow(d, ops_const(ctx, dt, a->beta)));
}

static kiln_status compute_lrn(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    int64_t xd[KILN_MAX_NDIM];
    lrn_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    a.c = xd[1];
    a.size = graph_attr_int(call, "size", 1);
    a.scale = graph_attr_float(call, "alpha", 1e-4) / (double)a.size;
    a.beta = graph_attr_float(call, "beta", 0.75);
    a.bias = graph_attr_float(call, "bias", 1);
    /* only the window offsets k that reach a channel for some c: a size
       past the channel count costs no more than 2C - 1 steps */
    int64_t lo = (a.size - 1) / 2, kmin = lo - (a.c - 1) > 0 ? lo - (a.c - 1) : 0,
            kend = a.size < lo + a.c ? a.size : lo + a.c;
    a.k = kiln_reduce_axis(ctx, ops_int(ctx, kmin), ops_int(ctx, kend - kmin), "k");
    a.sq = ops_compute(ctx, call, ".sqsum", a.nd, xd, lrn_sum_body, &a);
    out[0] = a.sq ? ops_compute(ctx, call, "", a.nd, xd, lrn_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_norm_rows[] = {
    {.name = "nn.layer_norm",
     .min_in = 1,
     .max_in = 3,
     .attrs = layer_norm_attrs,
     .rel = rel_layer_norm,
     .pattern = OP_OPAQUE,
     .compute = compute_layer_norm,
     .sym_dims = 1,
     .summary = "normalize over dims axis.. (data, gamma, beta)",
     .schedule = schedule_layer_norm},
    {.name = "nn.batch_norm",
     .min_in = 5,
     .max_in = 5,
     .attrs = batch_norm_attrs,
     .rel = rel_batch_norm,
     .pattern = OP_OPAQUE,
     .compute = compute_batch_norm,
     .summary = "inference batch norm (data, gamma, beta, mean, var)"},
    {.name = "nn.lrn",
     .min_in = 1,
     .max_in = 1,
     .attrs = lrn_attrs,
     .rel = rel_lrn,
     .pattern = OP_OPAQUE,
     .compute = compute_lrn,
     .summary = "x / (bias + alpha / size * sum of x^2 over size channels around c)^beta"},
};

const int ops_norm_count = (int)(sizeof ops_norm_rows / sizeof ops_norm_rows[0]);
