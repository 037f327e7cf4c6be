/* compute_nn.c: computes of the nn ops: convolution (with a padding stage,
 * strides, dilation and groups), dense, pooling, and softmax as a chain of
 * reductions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"

/* 2-value attribute (one value repeats) and 4-value padding (t, l, b, r). */
void ops_attr2(const gnode *call, const char *name, int64_t def, int64_t v[2]) {
    int64_t b[4];
    int n = graph_attr_ints(call, name, b, 4);
    v[0] = n >= 1 ? b[0] : def;
    v[1] = n >= 2 ? b[1] : v[0];
}

void ops_pad4(const gnode *call, int64_t p[4]) {
    int64_t b[4];
    int n = graph_attr_ints(call, "padding", b, 4);
    if (n == 1) p[0] = p[1] = p[2] = p[3] = b[0];
    else if (n == 2) p[0] = p[2] = b[0], p[1] = p[3] = b[1];
    else if (n == 4) memcpy(p, b, sizeof b);
    else p[0] = p[1] = p[2] = p[3] = 0;
}

/* ---- padding ------------------------------------------------------------------ */

typedef struct {
    kiln_tensor *x;
    int nd;
    int64_t dims[5], pad[4];
    double fill;
} pad_args;

static kiln_expr pad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pad_args *p = u;
    kiln_expr h = kiln_sub(i[2], ops_int(ctx, p->pad[0]));
    kiln_expr w = kiln_sub(i[3], ops_int(ctx, p->pad[1]));
    kiln_expr z = ops_int(ctx, 0);
    kiln_expr in = kiln_and(kiln_and(kiln_ge(h, z), kiln_lt(h, ops_int(ctx, p->dims[2]))),
                            kiln_and(kiln_ge(w, z), kiln_lt(w, ops_int(ctx, p->dims[3]))));
    kiln_expr hc = kiln_min(kiln_max(h, z), ops_int(ctx, p->dims[2] - 1));
    kiln_expr wc = kiln_min(kiln_max(w, z), ops_int(ctx, p->dims[3] - 1));
    kiln_expr ix[5] = {i[0], i[1], hc, wc, p->nd == 5 ? i[4] : NULL};
    return kiln_select(in, kiln_tensor_at(p->x, p->nd, ix),
                       ops_const(ctx, kiln_tensor_dtype(p->x), p->fill));
}

kiln_tensor *ops_pad_spatial(kiln_ctx *ctx, const gnode *call, kiln_tensor *x,
                             const int64_t pad[4], double fill) {
    if (!pad[0] && !pad[1] && !pad[2] && !pad[3]) return x;
    pad_args p = {x, 0, {0}, {pad[0], pad[1], pad[2], pad[3]}, fill};
    p.nd = ops_shape(x, p.dims);
    int64_t sh[5] = {p.dims[0], p.dims[1], p.dims[2] + pad[0] + pad[2], p.dims[3] + pad[1] + pad[3],
                     p.dims[4]};
    return ops_compute(ctx, call, ".pad", p.nd, sh, pad_body, &p);
}

/* ---- conv2d ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *p, *w;
    int64_t s[2], d[2], ocg, icg;
    kiln_expr ic, kh, kw;
} conv_args;

static kiln_expr conv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    conv_args *c = u;
    /* input channel = group(oc) * icg + ic */
    kiln_expr g = kiln_floordiv(i[1], ops_int(ctx, c->ocg));
    kiln_expr ch = kiln_add(kiln_mul(g, ops_int(ctx, c->icg)), c->ic);
    kiln_expr h = kiln_add(kiln_mul(i[2], ops_int(ctx, c->s[0])), kiln_mul(c->kh, ops_int(ctx, c->d[0])));
    kiln_expr w = kiln_add(kiln_mul(i[3], ops_int(ctx, c->s[1])), kiln_mul(c->kw, ops_int(ctx, c->d[1])));
    kiln_expr pi[4] = {i[0], ch, h, w}, wi[4] = {i[1], c->ic, c->kh, c->kw};
    kiln_expr axes[3] = {c->ic, c->kh, c->kw};
    return kiln_sum(kiln_mul(kiln_tensor_at(c->p, 4, pi), kiln_tensor_at(c->w, 4, wi)), 3, axes);
}

kiln_status compute_conv2d(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                           kiln_tensor **out) {
    if (strcmp(graph_attr_str(call, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(call, "kernel_layout", "OIHW"), "OIHW"))
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "nn.conv2d: only NCHW data and OIHW "
                              "kernels are supported");
    int64_t od[4], wd[4], pad[4];
    ops_out_shape(call, od);
    ops_shape(in[1], wd);
    ops_pad4(call, pad);
    conv_args c = {ops_pad_spatial(ctx, call, in[0], pad, 0), in[1], {0}, {0}, 0, wd[1], NULL, NULL, NULL};
    if (!c.p) return KILN_ERR_INVALID;
    ops_attr2(call, "strides", 1, c.s);
    ops_attr2(call, "dilation", 1, c.d);
    c.ocg = wd[0] / graph_attr_int(call, "groups", 1);
    c.ic = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[1]), "rc");
    c.kh = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[2]), "ry");
    c.kw = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[3]), "rx");
    out[0] = ops_compute(ctx, call, "", 4, od, conv_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- dense -------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *w;
    int nd, kn, nr;
    kiln_expr k;
} dense_args;

static kiln_expr dense_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    dense_args *a = u;
    kiln_expr xi[KILN_MAX_NDIM];
    memcpy(xi, i, sizeof(kiln_expr) * (size_t)a->nd);
    xi[a->nd - 1] = a->k;
    kiln_expr n = i[a->nd - 1], w;
    if (a->nr) {
        kiln_expr wi[3] = {kiln_floordiv(n, ops_int(ctx, a->nr)), a->k,
                           kiln_floormod(n, ops_int(ctx, a->nr))};
        w = kiln_tensor_at(a->w, 3, wi);
    } else {
        kiln_expr wi[2] = {a->kn ? a->k : n, a->kn ? n : a->k};
        w = kiln_tensor_at(a->w, 2, wi);
    }
    return kiln_sum(kiln_mul(kiln_tensor_at(a->x, a->nd, xi), w), 1, &a->k);
}

int ops_dense_layout(const char *layout) {
    if (!layout) return -1;
    if (!strcmp(layout, "NK") || !strcmp(layout, "KN")) return 0;
    if (strncmp(layout, "NC", 2)) return -1;
    char *end;
    long b = strtol(layout + 2, &end, 10);
    return b >= 1 && b <= 4096 && !strcmp(end, "n") ? (int)b : -1;
}

kiln_status compute_dense(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                          kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM], wd[3];
    int nd = ops_out_shape(call, od);
    ops_shape(in[1], wd);
    const char *layout = graph_attr_str(call, "weight_layout", "NK");
    int nr = ops_dense_layout(layout), kn = nr == 0 && !strcmp(layout, "KN");
    dense_args a = {in[0], in[1], nd, kn, nr > 0 ? nr : 0,
                    kiln_reduce_axis(ctx, ops_int(ctx, 0),
                                     ops_int(ctx, wd[nr > 0 ? 1 : kn ? 0 : 1]), "k")};
    out[0] = ops_compute(ctx, call, "", nd, od, dense_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the dense schedule ---------------------------------------------------------------
 * The packed GEMM of bench/matmul_bench.c on the op (and on batch_matmul,
 * whose B is an activation read in place): the output is cut into
 * mr x nr tiles, column panels outermost and in parallel (with the batch
 * dims), each tile's accumulators in registers (the dense stage at the
 * tile, local scope) while k runs; per k step nr/lanes weight vectors and mr
 * broadcasts feed mr*nr/lanes multiply-adds. The epilogue (bias, GELU, the
 * residual add) is the output stage over the same tile. */

void ops_dense_tile(int64_t m, int64_t n, int64_t k, const kiln_target *target, int64_t *mr, int64_t *nr,
                    int64_t *vl) {
    int nregs = target->vector_regs;
    double best = -1e30;
    *mr = 1;
    *nr = 0;
    *vl = 0;
    /* whole registers if n allows, else half or quarter ones (n = 1000) */
    for (int64_t lanes = target_lanes(target); lanes >= 4 && !*nr; lanes /= 2) {
        for (int64_t v = 1; v <= 6; v++) {
            if (n % (v * lanes)) continue;
            /* a weight panel (k x nr floats) is read once per row tile: keep
               it within half of a 1 MiB L2, unless even one vector is wider */
            if (v > 1 && k * v * lanes * 4 > (512 << 10)) continue;
            for (int64_t r = 1; r <= m && r <= 16; r++) {
                if (m % r || r * v + v + 1 > nregs) continue;
                /* cycles per vector multiply-add: the FMA pipes (2 a cycle),
                   the loads (r + v per k step, 2 a cycle), and the weight panel
                   re-read from L2 for every r rows when it exceeds L1 (64/r
                   bytes per multiply-add at about 16 bytes a cycle) */
                double loads = (double)(r + v) / (double)(r * v) / 2.0;
                double l2 = k * v * lanes * 4 > (32 << 10) ? 4.0 / (double)r : 0.0;
                double cost = loads > 0.5 ? loads : 0.5;
                if (l2 > cost) cost = l2;
                double score = -cost + 1e-4 * (double)(r * v);
                if (score > best) {
                    best = score;
                    *mr = r;
                    *nr = v * lanes;
                    *vl = lanes;
                }
            }
        }
    }
}

kiln_status schedule_dense(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                           kiln_tensor *out, const kiln_target *target) {
    /* the columns must read the right-hand side contiguously: dense with
       packed or [in, units] weights, batch_matmul with B not transposed */
    int bmm = !strcmp(call->op->name, "nn.batch_matmul");
    const char *layout = bmm ? "KN" : graph_attr_str(call, "weight_layout", "NK");
    if (bmm && graph_attr_int(call, "transpose_b", 0)) return KILN_OK;
    if (ops_dense_layout(layout) <= 0 && strcmp(layout, "KN")) return KILN_OK;
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_shape(out, od);
    if (nd < 1 || nd != kiln_tensor_ndim(anchor)) return KILN_OK;
    int64_t m = nd >= 2 ? od[nd - 2] : 1, mr, nr, vl;
    const gtensor_type *xt = &call->graph->nodes[call->in[0]]->type.t[0];
    int64_t kext = xt->dims[xt->ndim - 1 - (bmm && graph_attr_int(call, "transpose_a", 0))].v;
    ops_dense_tile(m, od[nd - 1], kext, target, &mr, &nr, &vl);
    int pn = ops_dense_layout(layout);
    if (!nr || (pn > 0 && pn % nr && nr % pn)) return KILN_OK;
    kiln_tensor *acc = anchor;
    if (anchor == out && !(acc = kiln_cache_write(s, out, "local"))) return KILN_ERR_INVALID;
    kiln_stage *so = kiln_schedule_stage(s, out), *sc = kiln_schedule_stage(s, acc);
    if (!so || !sc) return KILN_ERR_INVALID;
    kiln_status st = kiln_set_scope(sc, "local");
    if (st != KILN_OK) return st;
    kiln_expr ax[KILN_MAX_NDIM], mo = NULL, mi = NULL, no, ni, order[KILN_MAX_NDIM + 2];
    for (int d = 0; d < nd; d++) ax[d] = kiln_tensor_axis(out, d);
    if ((st = kiln_split(so, ax[nd - 1], nr, &no, &ni)) != KILN_OK) return st;
    if (nd >= 2 && (st = kiln_split(so, ax[nd - 2], mr, &mo, &mi)) != KILN_OK) return st;
    int k = 0;
    for (int d = 0; d + 2 < nd; d++) order[k++] = ax[d];
    order[k++] = no;
    if (nd >= 2) order[k++] = mo;
    if (nd >= 2) order[k++] = mi;
    order[k++] = ni;
    if ((st = kiln_reorder(so, k, order)) != KILN_OK) return st;
    kiln_expr par = no; /* batch dims and column panels run in parallel */
    for (int d = nd - 3; d >= 0; d--)
        if ((st = kiln_fuse(so, ax[d], par, &par)) != KILN_OK) return st;
    /* nr is a multiple of the lanes: whole vectors, unrolled */
    int64_t lanes = vl;
    kiln_expr nio, nii;
    if ((st = kiln_parallel(so, par)) != KILN_OK || (mi && (st = kiln_unroll(so, mi)) != KILN_OK) ||
        (st = kiln_split(so, ni, lanes, &nio, &nii)) != KILN_OK ||
        (st = kiln_unroll(so, nio)) != KILN_OK || (st = kiln_vectorize(so, nii)) != KILN_OK ||
        (st = kiln_compute_at(sc, so, nd >= 2 ? mo : no)) != KILN_OK)
        return st;
    kiln_expr c[KILN_MAX_NDIM + 2], cno, cni;
    if ((st = kiln_split(sc, kiln_tensor_axis(acc, nd - 1), lanes, &cno, &cni)) != KILN_OK) return st;
    k = 0;
    for (int d = 0; d + 2 < nd; d++) c[k++] = kiln_tensor_axis(acc, d);
    c[k++] = kiln_tensor_reduce_axis(acc, 0);
    if (nd >= 2) c[k++] = kiln_tensor_axis(acc, nd - 2);
    c[k++] = cno;
    c[k++] = cni;
    if ((st = kiln_reorder(sc, k, c)) != KILN_OK ||
        (nd >= 2 && (st = kiln_unroll(sc, kiln_tensor_axis(acc, nd - 2))) != KILN_OK) ||
        (st = kiln_unroll(sc, cno)) != KILN_OK || (st = kiln_vectorize(sc, cni)) != KILN_OK)
        return st;
    return KILN_OK;
}

/* ---- pooling -------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *p;
    int64_t k[2], s[2], d[2], pad[4], in_dims[5];
    int is_max, count_pad, nd; /* nd 5: NCHW[x]c, the channel block last */
    kiln_expr kh, kw;
    kiln_tensor *sum;
} pool_args;

static kiln_expr pool_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_expr h = kiln_add(kiln_mul(i[2], ops_int(ctx, a->s[0])), kiln_mul(a->kh, ops_int(ctx, a->d[0])));
    kiln_expr w = kiln_add(kiln_mul(i[3], ops_int(ctx, a->s[1])), kiln_mul(a->kw, ops_int(ctx, a->d[1])));
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
    if (a->count_pad) return kiln_div(s, ops_const(ctx, dt, (double)(a->k[0] * a->k[1])));
    kiln_expr cnt[2];
    for (int d = 0; d < 2; d++) {
        kiln_expr start = kiln_sub(kiln_mul(i[2 + d], ops_int(ctx, a->s[d])), ops_int(ctx, a->pad[d]));
        kiln_expr end = kiln_add(start, ops_int(ctx, (a->k[d] - 1) * a->d[d] + 1));
        kiln_expr lo = kiln_max(start, ops_int(ctx, 0));
        kiln_expr hi = kiln_min(end, ops_int(ctx, a->in_dims[2 + d]));
        /* elements of the dilated window inside [lo, hi) */
        kiln_expr first = kiln_add(start, kiln_mul(kiln_floordiv(kiln_add(kiln_sub(lo, start), ops_int(ctx, a->d[d] - 1)), ops_int(ctx, a->d[d])), ops_int(ctx, a->d[d])));
        kiln_expr n = kiln_floordiv(kiln_add(kiln_sub(hi, first), ops_int(ctx, a->d[d] - 1)), ops_int(ctx, a->d[d]));
        cnt[d] = kiln_max(n, ops_int(ctx, 1));
    }
    return kiln_div(s, kiln_cast(dt, kiln_mul(cnt[0], cnt[1])));
}

kiln_status compute_pool2d(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
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
    a.is_max = strcmp(call->op->name, "nn.max_pool2d") == 0;
    a.count_pad = graph_attr_int(call, "count_include_pad", 0) != 0;
    /* ceil_mode windows may run past the padded input: pad the far side more */
    int64_t pad[4] = {a.pad[0], a.pad[1], a.pad[2], a.pad[3]};
    for (int d = 0; d < 2; d++) {
        int64_t need = (od[2 + d] - 1) * a.s[d] + (a.k[d] - 1) * a.d[d] + 1;
        int64_t have = a.in_dims[2 + d] + a.pad[d] + a.pad[d + 2];
        if (need > have) pad[d + 2] += need - have;
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
    if (!a.p) return KILN_ERR_INVALID;
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
    for (int d = 2; d < a->nd; d++) ix[d] = d < 2 + a->nsp ? a->r[d - 2] : i[d];
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    return a->is_max ? kiln_max_reduce(v, a->nsp, a->r) : kiln_sum(v, a->nsp, a->r);
}

static kiln_expr gmean_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    gpool_args *a = u;
    return kiln_div(kiln_tensor_at(a->sum, a->nd, i),
                    ops_const(ctx, kiln_tensor_dtype(a->x), (double)a->count));
}

kiln_status compute_global_pool2d(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
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
    a.is_max = strcmp(call->op->name, "nn.global_max_pool2d") == 0;
    if (a.is_max) {
        out[0] = ops_compute(ctx, call, "", a.nd, od, gsum_body, &a);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    a.sum = ops_compute(ctx, call, ".sum", a.nd, od, gsum_body, &a);
    out[0] = a.sum ? ops_compute(ctx, call, "", a.nd, od, gmean_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- softmax: max, exp(x - max), sum, divide ------------------------------------ */

typedef struct {
    kiln_tensor *x, *mx, *ex, *sum;
    int nd, axis;
    kiln_expr k1, k2;
} sm_args;

static void with_axis(const sm_args *s, const kiln_expr *i, kiln_expr k, kiln_expr *ix) {
    int j = 0;
    for (int d = 0; d < s->nd; d++) ix[d] = d == s->axis ? k : i[j++];
}

static kiln_expr sm_max(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    with_axis(s, i, s->k1, ix);
    return kiln_max_reduce(kiln_tensor_at(s->x, s->nd, ix), 1, &s->k1);
}

/* the reduced tensors drop the axis: index them without it */
static kiln_expr drop_axis_read(const sm_args *s, kiln_tensor *t, const kiln_expr *i) {
    kiln_expr ix[KILN_MAX_NDIM];
    int j = 0;
    for (int d = 0; d < s->nd; d++)
        if (d != s->axis) ix[j++] = i[d];
    return kiln_tensor_at(t, s->nd - 1, ix);
}

static kiln_expr sm_exp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    return kiln_exp(kiln_sub(kiln_tensor_at(s->x, s->nd, i), drop_axis_read(s, s->mx, i)));
}

static kiln_expr sm_sum(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    with_axis(s, i, s->k2, ix);
    return kiln_sum(kiln_tensor_at(s->ex, s->nd, ix), 1, &s->k2);
}

static kiln_expr sm_div(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    return kiln_div(kiln_tensor_at(s->ex, s->nd, i), drop_axis_read(s, s->sum, i));
}

/* log_softmax: x - max - log(sum) */
static kiln_expr sm_log(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr shifted = kiln_sub(kiln_tensor_at(s->x, s->nd, i), drop_axis_read(s, s->mx, i));
    return kiln_sub(shifted, kiln_log(drop_axis_read(s, s->sum, i)));
}

/* Softmax over a last axis of K = ko * SM_LANES elements, in lane-parallel
 * form: max and sum first reduce over ko into SM_LANES partial results per
 * row (contiguous reads, so they vectorize), then over those. Only the
 * order of the max and sum reductions differs from the plain form. */
#define SM_LANES 16

typedef struct {
    kiln_tensor *x, *mxp, *mx, *ex, *smp, *sm;
    int nd;
    kiln_expr ko, ki, ko2, ki2;
} smv_args;

/* t (rank nd-1+extra) at the row of output index i plus `last` */
static kiln_expr row_at(kiln_tensor *t, int nrow, const kiln_expr *i, kiln_expr last) {
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < nrow; d++) ix[d] = i[d];
    if (last) ix[nrow] = last;
    return kiln_tensor_at(t, nrow + (last != NULL), ix);
}

static kiln_expr x_at_lane(kiln_ctx *ctx, const smv_args *s, kiln_tensor *t, const kiln_expr *i,
                           kiln_expr ko, kiln_expr ki) {
    return row_at(t, s->nd - 1, i, kiln_add(kiln_mul(ko, ops_int(ctx, SM_LANES)), ki));
}

static kiln_expr smv_mxp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_max_reduce(x_at_lane(ctx, s, s->x, i, s->ko, i[s->nd - 1]), 1, &s->ko);
}
static kiln_expr smv_mx(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_max_reduce(row_at(s->mxp, s->nd - 1, i, s->ki), 1, &s->ki);
}
static kiln_expr smv_ex(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_exp(kiln_sub(row_at(s->x, s->nd - 1, i, i[s->nd - 1]), row_at(s->mx, s->nd - 1, i, NULL)));
}
static kiln_expr smv_smp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_sum(x_at_lane(ctx, s, s->ex, i, s->ko2, i[s->nd - 1]), 1, &s->ko2);
}
static kiln_expr smv_sm(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_sum(row_at(s->smp, s->nd - 1, i, s->ki2), 1, &s->ki2);
}
static kiln_expr smv_out(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_div(row_at(s->ex, s->nd - 1, i, i[s->nd - 1]), row_at(s->sm, s->nd - 1, i, NULL));
}

static int softmax_lanes_form(const gnode *call, int nd, const int64_t *od, int *axis) {
    int64_t a = graph_attr_int(call, "axis", -1);
    *axis = (int)(a < 0 ? a + nd : a);
    return strcmp(call->op->name, "nn.softmax") == 0 && *axis == nd - 1 &&
           od[nd - 1] % SM_LANES == 0 && od[nd - 1] >= 2 * SM_LANES;
}

kiln_status compute_softmax(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                            kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM], rd[KILN_MAX_NDIM];
    int nd = ops_out_shape(call, od), axis;
    if (softmax_lanes_form(call, nd, od, &axis)) {
        smv_args v;
        memset(&v, 0, sizeof v);
        v.x = in[0];
        v.nd = nd;
        for (int d = 0; d < nd - 1; d++) rd[d] = od[d];
        rd[nd - 1] = SM_LANES;
        kiln_expr ko_ext = ops_int(ctx, od[nd - 1] / SM_LANES), l = ops_int(ctx, SM_LANES);
        v.ko = kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko");
        v.ko2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko");
        v.ki = kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki");
        v.ki2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki");
        v.mxp = ops_compute(ctx, call, ".maxp", nd, rd, smv_mxp, &v);
        v.mx = v.mxp ? ops_compute(ctx, call, ".max", nd - 1, rd, smv_mx, &v) : NULL;
        v.ex = v.mx ? ops_compute(ctx, call, ".exp", nd, od, smv_ex, &v) : NULL;
        v.smp = v.ex ? ops_compute(ctx, call, ".sump", nd, rd, smv_smp, &v) : NULL;
        v.sm = v.smp ? ops_compute(ctx, call, ".sum", nd - 1, rd, smv_sm, &v) : NULL;
        out[0] = v.sm ? ops_compute(ctx, call, "", nd, od, smv_out, &v) : NULL;
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    sm_args s;
    memset(&s, 0, sizeof s);
    s.x = in[0];
    s.nd = nd;
    s.axis = axis;
    int j = 0;
    for (int d = 0; d < s.nd; d++)
        if (d != s.axis) rd[j++] = od[d];
    s.k1 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, od[s.axis]), "k");
    s.k2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, od[s.axis]), "k");
    s.mx = ops_compute(ctx, call, ".max", s.nd - 1, rd, sm_max, &s);
    s.ex = s.mx ? ops_compute(ctx, call, ".exp", s.nd, od, sm_exp, &s) : NULL;
    s.sum = s.ex ? ops_compute(ctx, call, ".sum", s.nd - 1, rd, sm_sum, &s) : NULL;
    int is_log = strcmp(call->op->name, "nn.log_softmax") == 0;
    out[0] = s.sum ? ops_compute(ctx, call, "", s.nd, od, is_log ? sm_log : sm_div, &s) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The schedule of the lane-parallel softmax: rows (the leading axes,
 * fused) in parallel; per row the partial max, the exponentials, the
 * partial sums and the output are vectors of SM_LANES, in local buffers
 * computed at the row. */
kiln_status schedule_softmax(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                             kiln_tensor *out, const kiln_target *target) {
    (void)target;
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_shape(out, od), axis;
    if (anchor != out || nd < 2 || !softmax_lanes_form(call, nd, od, &axis)) return KILN_OK;
    kiln_tensor *t[4], *ex, *sm, *smp, *mx, *mxp;
    if (kiln_tensor_inputs(out, t, 4) != 2) return KILN_OK;
    ex = t[0];
    sm = t[1];
    if (kiln_tensor_inputs(sm, t, 4) != 1) return KILN_OK;
    smp = t[0];
    if (kiln_tensor_inputs(ex, t, 4) != 2) return KILN_OK;
    mx = t[1];
    if (kiln_tensor_inputs(mx, t, 4) != 1) return KILN_OK;
    mxp = t[0];
    /* consumers first (compute_at needs a stage's other consumers placed
       inside the same loop already) */
    kiln_tensor *stages[5] = {sm, smp, ex, mx, mxp};
    static const ops_row_kind kinds[5] = {OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_VECTOR,
                                          OPS_ROW_SCALAR, OPS_ROW_PARTIAL};
    return ops_schedule_rows(s, out, SM_LANES, 5, stages, kinds);
}

/* ---- batch_matmul: numpy matmul with broadcast batch dims ---------------------- */

typedef struct {
    kiln_tensor *a, *b;
    int nd, na, nb, ta, tb;
    int64_t ad[KILN_MAX_NDIM], bd[KILN_MAX_NDIM];
    kiln_expr k;
} bmm_args;

/* The index of a rank-n operand with dims `dims`: batch dims right-aligned
 * (size 1 reads 0), then (row, col) or (col, row) when transposed. */
static void bmm_index(kiln_ctx *ctx, const bmm_args *a, int n, const int64_t *dims, int trans,
                      const kiln_expr *i, kiln_expr row, kiln_expr col, kiln_expr *ix) {
    for (int d = 0; d < n - 2; d++)
        ix[d] = dims[d] == 1 ? ops_int(ctx, 0) : i[d + (a->nd - 2) - (n - 2)];
    ix[n - 2] = trans ? col : row;
    ix[n - 1] = trans ? row : col;
}

static kiln_expr bmm_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    bmm_args *a = u;
    kiln_expr ai[KILN_MAX_NDIM], bi[KILN_MAX_NDIM];
    bmm_index(ctx, a, a->na, a->ad, a->ta, i, i[a->nd - 2], a->k, ai);
    bmm_index(ctx, a, a->nb, a->bd, a->tb, i, a->k, i[a->nd - 1], bi);
    return kiln_sum(kiln_mul(kiln_tensor_at(a->a, a->na, ai), kiln_tensor_at(a->b, a->nb, bi)), 1,
                    &a->k);
}

kiln_status compute_batch_matmul(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    bmm_args a;
    memset(&a, 0, sizeof a);
    int64_t od[KILN_MAX_NDIM];
    a.a = in[0];
    a.b = in[1];
    a.nd = ops_out_shape(call, od);
    a.na = ops_shape(in[0], a.ad);
    a.nb = ops_shape(in[1], a.bd);
    a.ta = graph_attr_int(call, "transpose_a", 0) != 0;
    a.tb = graph_attr_int(call, "transpose_b", 0) != 0;
    int64_t kdim = a.ad[a.na - 1 - a.ta];
    a.k = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, kdim), "k");
    out[0] = ops_compute(ctx, call, "", a.nd, od, bmm_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}
