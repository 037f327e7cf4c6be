/* pool.c: 2-D pooling: nn.max_pool2d and nn.avg_pool2d (windows with
 * strides, dilation, padding, ceil_mode, count_include_pad) and the
 * global pools (over all spatial dims), in NCHW or the blocked NCHW[x]c.
 * Their layout hook keeps a blocked input blocked (attribute layout);
 * max pooling in NCHW[x]c has a schedule that reads the input in place.
 * Max and average share the computes and tell themselves apart by the
 * row's variant. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

enum { POOL_MAX, POOL_AVG };

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema pool2d_attrs[] = {
    {"pool_size", GA_INTS, 1, NULL},         {"strides", GA_INTS, 0, "[1, 1]"},
    {"padding", GA_INTS, 0, "[0, 0, 0, 0]"}, {"dilation", GA_INTS, 0, "[1, 1]"},
    {"ceil_mode", GA_INT, 0, "0"},           {"count_include_pad", GA_INT, 0, "0"},
    {"layout", GA_STR, 0, "\"NCHW\""},       {NULL, 0, 0, NULL}};
static const attr_schema global_pool_attrs[] = {{"layout", GA_STR, 0, "\"NCHW\""},
                                                {NULL, 0, 0, NULL}};

/* ---- relations -------------------------------------------------------------------- */

static rel_result rel_pool2d(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int blk = ops_layout_block(graph_attr_str(call, "layout", "NCHW"));
    if (blk < 0)
        return ops_fail("layout must be NCHW or NCHW[x]c");
    if (x->ndim != (blk ? 5 : 4))
        return ops_fail("data must be %d-D %s, got %d-D", blk ? 5 : 4, blk ? "NCHW[x]c" : "NCHW",
                        x->ndim);
    if (blk && x->dims[4].v != blk)
        return ops_fail("data's last dim is not the block %d", blk);
    if (!ops_all_known(x, 2, 4))
        return ops_fail("spatial dims must not be symbolic");
    int64_t k[2], s[2], d[2], p[2];
    if (!ops_attr2_checked(call, "pool_size", 1, 1, k) ||
        !ops_attr2_checked(call, "strides", 1, 1, s) ||
        !ops_attr2_checked(call, "dilation", 1, 1, d) || !ops_pad_sum(call, p))
        return REL_ERROR;
    int ceil_mode = graph_attr_int(call, "ceil_mode", 0) != 0;
    gtensor_type res = *x;
    for (int i = 0; i < 2; i++) {
        int64_t o = ops_window_out(x->dims[2 + i].v, p[i], k[i], s[i], d[i], ceil_mode);
        if (o < 1)
            return ops_fail("the window is larger than the padded input");
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_global_pool2d(const struct kiln_graph *g, const gnode *call,
                                    const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 3)
        return ops_fail("data must be at least 3-D (N, C, spatial...), got %d-D", x->ndim);
    int blk = ops_layout_block(graph_attr_str(call, "layout", "NCHW"));
    if (blk < 0)
        return ops_fail("layout must be NCHW or NCHW[x]c");
    if (blk && (x->ndim != 5 || x->dims[4].v != blk))
        return ops_fail("data in NCHW%dc must be 5-D with the block last", blk);
    gtensor_type res = *x;
    for (int i = 2; i < x->ndim - (blk > 0); i++)
        res.dims[i] = (gdim){1, NULL};
    return ops_set_out(g, out, &res);
}

/* ---- computes ---------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *p;
    int64_t k[2], s[2], d[2], pad[4], in_dims[5];
    int is_max, count_pad, nd; /* nd 5: NCHW[x]c, the channel block last */
    kiln_expr kh, kw;
    kiln_tensor *sum;
} pool_args;

static kiln_expr pool_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_expr h =
        kiln_add(kiln_mul(i[2], ops_int(ctx, a->s[0])), kiln_mul(a->kh, ops_int(ctx, a->d[0])));
    kiln_expr w =
        kiln_add(kiln_mul(i[3], ops_int(ctx, a->s[1])), kiln_mul(a->kw, ops_int(ctx, a->d[1])));
    kiln_expr ix[5] = {i[0], i[1], h, w, a->nd == 5 ? i[4] : NULL}, axes[2] = {a->kh, a->kw};
    kiln_expr v = kiln_tensor_at(a->p, a->nd, ix);
    return a->is_max ? kiln_max_reduce(v, 2, axes) : kiln_sum(v, 2, axes);
}

/* Average: divide the window sum by the window size, or by the number of
 * elements inside the unpadded input. */
static kiln_expr avg_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->sum);
    kiln_expr s = kiln_tensor_at(a->sum, a->nd, i);
    if (a->count_pad)
        return kiln_div(s, ops_const(ctx, dt, (double)(a->k[0] * a->k[1])));
    kiln_expr cnt[2];
    for (int d = 0; d < 2; d++) {
        kiln_expr start =
            kiln_sub(kiln_mul(i[2 + d], ops_int(ctx, a->s[d])), ops_int(ctx, a->pad[d]));
        kiln_expr end = kiln_add(start, ops_int(ctx, (a->k[d] - 1) * a->d[d] + 1));
        kiln_expr lo = kiln_max(start, ops_int(ctx, 0));
        kiln_expr hi = kiln_min(end, ops_int(ctx, a->in_dims[2 + d]));
        /* elements of the dilated window inside [lo, hi) */
        kiln_expr first = kiln_add(
            start, kiln_mul(kiln_floordiv(kiln_add(kiln_sub(lo, start), ops_int(ctx, a->d[d] - 1)),
                                          ops_int(ctx, a->d[d])),
                            ops_int(ctx, a->d[d])));
        kiln_expr n = kiln_floordiv(kiln_add(kiln_sub(hi, first), ops_int(ctx, a->d[d] - 1)),
                                    ops_int(ctx, a->d[d]));
        cnt[d] = kiln_max(n, ops_int(ctx, 1));
    }
    return kiln_div(s, kiln_cast(dt, kiln_mul(cnt[0], cnt[1])));
}

static kiln_status compute_pool2d(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    pool_args a;
    memset(&a, 0, sizeof a);
    int64_t od[5];
    ops_out_shape(call, od);
    a.nd = ops_shape(in[0], a.in_dims);
    ops_attr2(call, "pool_size", 1, a.k);
    ops_attr2(call, "strides", 1, a.s);
    ops_attr2(call, "dilation", 1, a.d);
    ops_pad4(call, a.pad);
    a.is_max = call->op->variant == POOL_MAX;
    a.count_pad = graph_attr_int(call, "count_include_pad", 0) != 0;
    /* ceil_mode windows may run past the padded input: pad the far side more */
    int64_t pad[4] = {a.pad[0], a.pad[1], a.pad[2], a.pad[3]};
    for (int d = 0; d < 2; d++) {
        int64_t need = (od[2 + d] - 1) * a.s[d] + (a.k[d] - 1) * a.d[d] + 1;
        int64_t have = a.in_dims[2 + d] + a.pad[d] + a.pad[d + 2];
        if (need > have)
            pad[d + 2] += need - have;
    }
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    double fill = 0; /* max pooling pads with the dtype's lowest value */
    if (a.is_max)
        fill = dt == KILN_FLOAT32 || dt == KILN_FLOAT64 ? -INFINITY
               : dt == KILN_UINT8                       ? 0
               : dt == KILN_INT8                        ? -128
               : dt == KILN_INT32                       ? -2147483648.0
                                                        : -9223372036854775808.0;
    a.p = ops_pad_spatial(ctx, call, in[0], pad, fill);
    if (!a.p)
        return KILN_ERR_INVALID;
    a.kh = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.k[0]), "rv");
    a.kw = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.k[1]), "rw");
    if (a.is_max) {
        out[0] = ops_compute(ctx, call, "", a.nd, od, pool_body, &a);
    } else {
        a.sum = ops_compute(ctx, call, ".sum", a.nd, od, pool_body, &a);
        out[0] = a.sum ? ops_compute(ctx, call, "", a.nd, od, avg_body, &a) : NULL;
    }
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

typedef struct {
    kiln_tensor *x, *sum;
    int nd, nsp; /* rank; spatial dims 2 .. 2+nsp (NCHW[x]c: the block is last) */
    int64_t count;
    int is_max;
    kiln_expr r[KILN_MAX_NDIM];
} gpool_args;

static kiln_expr gsum_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    gpool_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    ix[0] = i[0];
    ix[1] = i[1];
    for (int d = 2; d < a->nd; d++)
        ix[d] = d < 2 + a->nsp ? a->r[d - 2] : i[d];
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    return a->is_max ? kiln_max_reduce(v, a->nsp, a->r) : kiln_sum(v, a->nsp, a->r);
}

static kiln_expr gmean_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    gpool_args *a = u;
    return kiln_div(kiln_tensor_at(a->sum, a->nd, i),
                    ops_const(ctx, kiln_tensor_dtype(a->x), (double)a->count));
}

static kiln_status compute_global_pool2d(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                         kiln_tensor **out) {
    gpool_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    ops_out_shape(call, od);
    a.count = 1;
    a.nsp = a.nd - 2 - (ops_layout_block(graph_attr_str(call, "layout", "NCHW")) > 0);
    for (int d = 2; d < 2 + a.nsp; d++) {
        a.r[d - 2] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
        a.count *= xd[d];
    }
    a.is_max = call->op->variant == POOL_MAX;
    if (a.is_max) {
        out[0] = ops_compute(ctx, call, "", a.nd, od, gsum_body, &a);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    a.sum = ops_compute(ctx, call, ".sum", a.nd, od, gsum_body, &a);
    out[0] = a.sum ? ops_compute(ctx, call, "", a.nd, od, gmean_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the schedule ------------------------------------------------------------------
 * Max pooling in NCHW[x]c does one comparison per input value read, so a padded copy of
 * its input costs more than the pooling: the input is read in place (the
 * padding a select per load). Rows of (batch, channel block) run in
 * parallel; per output pixel the window is reduced with the x channels of a
 * block as one vector. Other pools keep the default schedule. */
static kiln_status schedule_pool2d_nchwc(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                         kiln_tensor *out, const kiln_target *target) {
    (void)target;
    int64_t od[5];
    if (call->op->variant != POOL_MAX || kiln_tensor_ndim(out) != 5 || ops_shape(out, od) != 5 ||
        kiln_tensor_num_reduce_axes(anchor) != 2 || (od[4] & (od[4] - 1)) || od[4] < 4)
        return KILN_OK;
    kiln_status st;
    kiln_tensor *ins[4];
    if (kiln_tensor_inputs(anchor, ins, 4) >= 1 && kiln_tensor_axis(ins[0], 0)) {
        kiln_stage *sp = kiln_schedule_stage(s, ins[0]);
        if (!sp)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sp)) != KILN_OK)
            return st;
    }
    kiln_stage *so = kiln_schedule_stage(s, out);
    if (!so)
        return KILN_ERR_INVALID;
    kiln_expr ax[5], f;
    for (int i = 0; i < 5; i++)
        ax[i] = kiln_tensor_axis(out, i);
    if ((st = kiln_fuse(so, ax[0], ax[1], &f)) != KILN_OK ||
        (st = kiln_fuse(so, f, ax[2], &f)) != KILN_OK || (st = kiln_parallel(so, f)) != KILN_OK)
        return st;
    if (anchor == out) {
        kiln_expr order[5] = {f, ax[3], kiln_tensor_reduce_axis(out, 0),
                              kiln_tensor_reduce_axis(out, 1), ax[4]};
        if ((st = kiln_reorder(so, 5, order)) != KILN_OK)
            return st;
        return kiln_vectorize(so, ax[4]);
    }
    kiln_stage *sa = kiln_schedule_stage(s, anchor);
    if (!sa)
        return KILN_ERR_INVALID;
    kiln_expr c[5];
    for (int i = 0; i < 5; i++)
        c[i] = kiln_tensor_axis(anchor, i);
    kiln_expr corder[7] = {c[0],
                           c[1],
                           c[2],
                           c[3],
                           kiln_tensor_reduce_axis(anchor, 0),
                           kiln_tensor_reduce_axis(anchor, 1),
                           c[4]};
    if ((st = kiln_vectorize(so, ax[4])) != KILN_OK ||
        (st = kiln_compute_at(sa, so, ax[3])) != KILN_OK ||
        (st = kiln_set_scope(sa, "local")) != KILN_OK ||
        (st = kiln_reorder(sa, 7, corder)) != KILN_OK)
        return st;
    return kiln_vectorize(sa, c[4]);
}

/* ---- the layout hook ------------------------------------------------------------------ */

/* An input in NCHW[x]c stays so: the pool runs with layout="NCHW[x]c". */
static int alter_pool(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    int b = q->block[call->in[0]];
    if (!b || strcmp(graph_attr_str(call, "layout", "NCHW"), "NCHW"))
        return 0;
    static const char *const drop[] = {"layout", NULL};
    rw->drop = drop;
    snprintf(rw->attrs, sizeof rw->attrs, "layout=\"NCHW%dc\"", b);
    rw->in[0].block = b;
    rw->out_block = b;
    return 1;
}

/* ---- the table ------------------------------------------------------------------------ */

#define POOL(nm, schema, relation, fn, kind, sched, sum)                                           \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = schema, .rel = relation,                    \
        .pattern = OP_OUT_ELEMWISE_FUSABLE, .compute = fn, .summary = sum, .schedule = sched,      \
        .variant = kind, .alter = alter_pool                                                       \
    }

const kiln_op_def ops_pool_rows[] = {
    POOL("nn.max_pool2d", pool2d_attrs, rel_pool2d, compute_pool2d, POOL_MAX, schedule_pool2d_nchwc,
         "2-D max pooling"),
    POOL("nn.avg_pool2d", pool2d_attrs, rel_pool2d, compute_pool2d, POOL_AVG, NULL,
         "2-D average pooling"),
    POOL("nn.global_avg_pool2d", global_pool_attrs, rel_global_pool2d, compute_global_pool2d,
         POOL_AVG, NULL, "mean over the spatial dims"),
    POOL("nn.global_max_pool2d", global_pool_attrs, rel_global_pool2d, compute_global_pool2d,
         POOL_MAX, NULL, "max over the spatial dims"),
};

const int ops_pool_count = (int)(sizeof ops_pool_rows / sizeof ops_pool_rows[0]);
