/* compute_nchwc.c: the blocked data layout NCHW[x]c, TVM's x86 fast path.
 * A tensor [N, C, H, W] in NCHW16c is [N, C/16, H, W, 16]: sixteen
 * channels sit side by side, so a convolution can keep a vector of output
 * channels in a register and multiply it by a broadcast input value.
 * AlterOpLayout (passes/alter_layout.c) rewrites convolutions into
 * nn.contrib_conv2d_NCHWc, packs their weights into OIHW[x]i[y]o
 * ([O/y, I/x, KH, KW, x, y]) at compile time and inserts layout_transform
 * where a consumer needs NCHW back. Here: the relations, computes and the
 * register-blocked schedule of those two ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"
#include "relations.h"

int ops_layout_block(const char *layout) {
    if (!layout) return -1;
    if (!strcmp(layout, "NCHW")) return 0;
    if (strncmp(layout, "NCHW", 4)) return -1;
    char *end;
    long b = strtol(layout + 4, &end, 10);
    if (b < 1 || b > 4096 || strcmp(end, "c")) return -1;
    return (int)b;
}

#define REQUIRE_KNOWN(n)                                                               \
    for (int i_ = 0; i_ < (n); i_++)                                                   \
        if (!in[i_]->known) return REL_INCOMPLETE;

/* ---- layout_transform ----------------------------------------------------------- */

static int layouts(const gnode *call, int *src, int *dst) {
    const char *s = graph_attr_str(call, "src_layout", NULL);
    const char *d = graph_attr_str(call, "dst_layout", NULL);
    *src = ops_layout_block(s);
    *dst = ops_layout_block(d);
    if (*src < 0 || *dst < 0) {
        ops_fail("layout_transform supports NCHW and NCHW[x]c, not '%s' -> '%s'", s ? s : "?",
                 d ? d : "?");
        return 0;
    }
    return 1;
}

/* The logical channel count of layout_transform's input: attribute
 * `channels` where a blocked input's last block is padded, else all of
 * its (n blocks of sb, or n plain) channels. */
static int64_t lt_channels(const gnode *call, int64_t n, int sb) {
    int64_t c = graph_attr_int(call, "channels", 0);
    return c ? c : sb ? n * sb : n;
}

rel_result rel_layout_transform(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int sb, db;
    if (!layouts(call, &sb, &db)) return REL_ERROR;
    if (x->ndim != (sb ? 5 : 4))
        return ops_fail("data in %s must be %d-D, got %d-D", graph_attr_str(call, "src_layout", ""),
                        sb ? 5 : 4, x->ndim);
    if (!ops_all_known(x, 1, x->ndim)) return ops_fail("only the batch dim may be symbolic");
    if (sb && x->dims[4].v != sb)
        return ops_fail("the last dim is %lld, not the block %d", (long long)x->dims[4].v, sb);
    int64_t c = lt_channels(call, x->dims[1].v, sb);
    if (!sb && c != x->dims[1].v)
        return ops_fail("channels=%lld is not the NCHW input's %lld channels", (long long)c,
                        (long long)x->dims[1].v);
    if (c < 1 || (sb && (c > x->dims[1].v * sb || c <= (x->dims[1].v - 1) * sb)))
        return ops_fail("channels=%lld does not fit %lld blocks of %d", (long long)c,
                        (long long)x->dims[1].v, sb);
    gtensor_type res = *x;
    res.ndim = db ? 5 : 4;
    res.dims[1] = (gdim){db ? (c + db - 1) / db : c, NULL};
    if (db) res.dims[4] = (gdim){db, NULL};
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x;
    int sb, db;
    int64_t c; /* logical channels: a padded last block reads zeros past them */
} lt_args;

static kiln_expr lt_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lt_args *a = u;
    kiln_expr c = a->db ? kiln_add(kiln_mul(i[1], ops_int(ctx, a->db)), i[4]) : i[1];
    int pad = a->db && a->c % a->db;
    kiln_expr cc = pad ? kiln_min(c, ops_int(ctx, a->c - 1)) : c; /* in bounds */
    kiln_expr ix[5] = {i[0], cc, i[2], i[3], NULL};
    if (a->sb) {
        ix[1] = kiln_floordiv(cc, ops_int(ctx, a->sb));
        ix[4] = kiln_floormod(cc, ops_int(ctx, a->sb));
    }
    kiln_expr v = kiln_tensor_at(a->x, a->sb ? 5 : 4, ix);
    if (!pad) return v;
    return kiln_select(kiln_lt(c, ops_int(ctx, a->c)), v,
                       ops_const(ctx, kiln_tensor_dtype(a->x), 0));
}

kiln_status compute_layout_transform(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    lt_args a = {in[0], 0, 0, 0};
    if (!layouts(call, &a.sb, &a.db)) return KILN_ERR_INVALID;
    int64_t xd[5];
    ops_shape(in[0], xd);
    a.c = lt_channels(call, xd[1], a.sb);
    int64_t od[5];
    int nd = ops_out_shape(call, od);
    out[0] = ops_compute(ctx, call, "", nd, od, lt_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.contrib_conv2d_NCHWc -------------------------------------------------------
 * data [N, IC/x, H, W, x], weight [OC/y, IC/x, KH, KW, x, y], out [N, OC/y,
 * OH, OW, y]. Depthwise (groups = IC = OC, x = y): weight [C/x, 1, KH, KW,
 * 1, x], and output channel c reads input channel c only. */

/* Depthwise: groups > 1 with one input channel per group, packed as
 * [C/x, 1, KH, KW, 1, x]. Other grouped convolutions keep the general packing
 * with [O/y, I/x, ...] holding a group's I input channels. */
static int is_depthwise(const gnode *call) {
    const gtensor_type *w = &call->graph->nodes[call->in[1]]->type.t[0];
    return graph_attr_int(call, "groups", 1) > 1 && w->ndim == 6 && w->dims[4].v == 1 &&
           w->dims[1].v == 1;
}

rel_result rel_conv2d_nchwc(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w) return r;
    int ib = ops_layout_block(graph_attr_str(call, "data_layout", "NCHW"));
    int ob = ops_layout_block(graph_attr_str(call, "out_layout", "NCHW"));
    if (ib < 1 || ob < 1) return ops_fail("data_layout and out_layout must be NCHW[x]c");
    if (x->ndim != 5 || w->ndim != 6)
        return ops_fail("data must be 5-D (NCHW[x]c) and weight 6-D (OIHW[x]i[y]o), got %d-D and "
                        "%d-D",
                        x->ndim, w->ndim);
    if (x->dtype != w->dtype)
        return ops_fail("data is %s but weight is %s", kiln_dtype_name(x->dtype),
                        kiln_dtype_name(w->dtype));
    if (!ops_all_known(x, 1, 5) || !ops_all_known(w, 0, 6))
        return ops_fail("only the batch dim may be symbolic");
    int64_t groups = graph_attr_int(call, "groups", 1);
    int64_t ic = x->dims[1].v * x->dims[4].v;
    if (x->dims[4].v != ib) return ops_fail("data's block is %lld, not %d", (long long)x->dims[4].v, ib);
    if (w->dims[5].v != ob) return ops_fail("weight's output block is %lld, not %d",
                                            (long long)w->dims[5].v, ob);
    int64_t oc = w->dims[0].v * ob;
    int dwk = groups > 1 && w->dims[1].v == 1 && w->dims[4].v == 1;
    if (groups < 1 || ic % groups || oc % groups)
        return ops_fail("groups=%lld must divide input channels %lld and output channels %lld",
                        (long long)groups, (long long)ic, (long long)oc);
    if (dwk) {
        if (groups != ic || ib != ob || oc != ic)
            return ops_fail("a depthwise NCHW[x]c convolution needs groups = channels = %lld and "
                            "one block, got groups=%lld",
                            (long long)ic, (long long)groups);
    } else if (w->dims[1].v * ib * groups != ic || w->dims[4].v != ib ||
               (ic / groups) % ib || (oc / groups) % ob) {
        return ops_fail("weight [%lld, %lld, ., ., %lld, .] does not match data with %lld "
                        "channels in blocks of %d and %lld groups",
                        (long long)w->dims[0].v, (long long)w->dims[1].v,
                        (long long)w->dims[4].v, (long long)ic, ib, (long long)groups);
    }
    int64_t s[2], d[2], p[4];
    ops_attr2(call, "strides", 1, s);
    ops_attr2(call, "dilation", 1, d);
    ops_pad4(call, p);
    if (s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0)
        return ops_fail("strides and dilation must be >= 1 and padding >= 0");
    gtensor_type res = *x;
    res.dims[1] = (gdim){w->dims[0].v, NULL};
    res.dims[4] = (gdim){ob, NULL};
    for (int i = 0; i < 2; i++) {
        int64_t span = x->dims[2 + i].v + p[i] + p[i + 2] - d[i] * (w->dims[2 + i].v - 1) - 1;
        if (span < 0) return ops_fail("the kernel is larger than the padded input");
        res.dims[2 + i] = (gdim){span / s[i] + 1, NULL};
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *p, *w;
    int64_t s[2], d[2];
    int dw;
    int64_t ob, ocg, icb; /* grouped: output block, a group's output channels, its input blocks */
    kiln_expr icc, kh, kw, ib;
} convc_args;

static kiln_expr convc_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    convc_args *c = u;
    kiln_expr h = kiln_add(kiln_mul(i[2], ops_int(ctx, c->s[0])), kiln_mul(c->kh, ops_int(ctx, c->d[0])));
    kiln_expr w = kiln_add(kiln_mul(i[3], ops_int(ctx, c->s[1])), kiln_mul(c->kw, ops_int(ctx, c->d[1])));
    kiln_expr z = ops_int(ctx, 0);
    if (c->dw) {
        kiln_expr pi[5] = {i[0], i[1], h, w, i[4]}, wi[6] = {i[1], z, c->kh, c->kw, z, i[4]};
        kiln_expr axes[2] = {c->kh, c->kw};
        return kiln_sum(kiln_mul(kiln_tensor_at(c->p, 5, pi), kiln_tensor_at(c->w, 6, wi)), 2, axes);
    }
    kiln_expr ci = c->icc; /* grouped: the first input block of this output block's group */
    if (c->ocg)
        ci = kiln_add(kiln_mul(kiln_floordiv(kiln_mul(i[1], ops_int(ctx, c->ob)), ops_int(ctx, c->ocg)),
                               ops_int(ctx, c->icb)),
                      c->icc);
    kiln_expr pi[5] = {i[0], ci, h, w, c->ib}, wi[6] = {i[1], c->icc, c->kh, c->kw, c->ib, i[4]};
    kiln_expr axes[4] = {c->icc, c->kh, c->kw, c->ib};
    return kiln_sum(kiln_mul(kiln_tensor_at(c->p, 5, pi), kiln_tensor_at(c->w, 6, wi)), 4, axes);
}

kiln_status compute_conv2d_nchwc(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    int64_t od[5], wd[6], pad[4];
    ops_out_shape(call, od);
    ops_shape(in[1], wd);
    ops_pad4(call, pad);
    convc_args c;
    memset(&c, 0, sizeof c);
    c.p = ops_pad_spatial(ctx, call, in[0], pad, 0);
    c.w = in[1];
    if (!c.p) return KILN_ERR_INVALID;
    ops_attr2(call, "strides", 1, c.s);
    ops_attr2(call, "dilation", 1, c.d);
    c.dw = is_depthwise(call);
    int64_t groups = graph_attr_int(call, "groups", 1);
    if (groups > 1 && !c.dw) {
        c.ob = od[4];
        c.ocg = od[1] * od[4] / groups;
        c.icb = wd[1];
    }
    c.icc = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[1]), "rco");
    c.kh = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[2]), "ry");
    c.kw = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[3]), "rx");
    c.ib = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[4]), "rci");
    out[0] = ops_compute(ctx, call, "", 5, od, convc_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the schedule -------------------------------------------------------------------
 * TVM's conv2d_NCHWc x86 schedule with a two-dimensional register block,
 * as hand-written convolution kernels (MLAS, oneDNN) do it: reg_n output
 * pixels of a row times ocb output-channel blocks. For each (batch,
 * channel-block group, row) in parallel and each chunk of the row, the
 * reg_n x ocb x y accumulators live in registers (the conv stage computed
 * at the chunk, local scope) while the reduction runs over input-channel
 * blocks, kernel rows, kernel columns and the x channels of a block; each
 * step broadcasts reg_n input values and loads ocb weight vectors for
 * reg_n * ocb multiply-adds, so the loads stop being the bottleneck once
 * both are above 1. Pixels and channel blocks are unrolled, the y channels
 * vectorized. The epilogue (bias, batch-norm scale, relu, residual add) is
 * the output stage, over the same block. Depthwise convolutions have no
 * reuse across channel blocks: ocb is 1 for them. */

/* The register block: reg_n divides the output width, ocb the number of
 * output-channel blocks. Within one reduction step the reg_n * ocb * vecs
 * accumulators stay live, and so do either the reg_n broadcast inputs
 * (channel blocks outer: *pixels_inner = 1) or the ocb weight vectors
 * (pixels outer); all must fit in the nregs vector registers, or the
 * accumulators spill. Among those blocks it takes the one with the lowest
 * cost per multiply-add, the largest of: the FMA pipes (2 a cycle), the
 * loads (2 a cycle; reg_n + ocb per step for reg_n*ocb multiply-adds), and
 * re-reading the weight slice (ocb blocks of block_bytes) from L2 once per
 * block of pixels when it does not fit in L1 (about 16 bytes a cycle);
 * ties go to more accumulators. */
void ops_register_block(int64_t ow, int64_t occ, int64_t vecs, int64_t nregs, int dw,
                           int64_t block_bytes, int64_t *reg_n, int64_t *ocb, int *pixels_inner) {
    double best = 1e30;
    *reg_n = 1;
    *ocb = 1;
    *pixels_inner = 1;
    for (int64_t r = 1; r <= ow && r <= nregs; r++) {
        if (ow % r) continue;
        for (int64_t o = 1; o <= (dw ? 1 : occ) && o <= 8; o++) {
            if (occ % o) continue;
            int64_t acc = r * o * vecs;
            /* live besides the accumulators: broadcasts (or, depthwise, one
               input vector) with pixels inner; weight vectors with them outer */
            int64_t with_bcast = acc + (dw ? vecs : r) + vecs, with_w = acc + o * vecs + 1;
            if (with_bcast > nregs && with_w > nregs) continue;
            double fma = 0.5, loads = (double)(r + o) / (double)(r * o) / 2.0;
            double l2 = o * block_bytes > (32 << 10) ? 4.0 / (double)r : 0.0;
            double cost = fma > loads ? fma : loads;
            if (l2 > cost) cost = l2;
            cost -= 1e-4 * (double)acc;
            if (cost < best) {
                best = cost;
                *reg_n = r;
                *ocb = o;
                *pixels_inner = with_bcast <= nregs;
            }
        }
    }
}

kiln_status ops_schedule_accumulators(kiln_stage *sl, kiln_tensor *local, int chan, int pix,
                                      int pixels_inner) {
    kiln_expr order[5 + 8];
    int k = 0, nr = kiln_tensor_num_reduce_axes(local);
    if (kiln_tensor_ndim(local) != 5 || nr > 8)
        return kiln_set_error(KILN_ERR_INVALID, "accumulators: a 5-D stage with at most 8 "
                                                "reductions, not %d-D with %d",
                              kiln_tensor_ndim(local), nr);
    for (int i = 0; i < 4; i++)
        if (i != chan && i != pix) order[k++] = kiln_tensor_axis(local, i);
    for (int i = 0; i < nr; i++) order[k++] = kiln_tensor_reduce_axis(local, i);
    kiln_expr c = kiln_tensor_axis(local, chan), p = kiln_tensor_axis(local, pix),
              lanes = kiln_tensor_axis(local, 4);
    order[k++] = pixels_inner ? c : p;
    order[k++] = pixels_inner ? p : c;
    order[k++] = lanes;
    kiln_status st;
    if ((st = kiln_reorder(sl, k, order)) != KILN_OK || (st = kiln_unroll(sl, c)) != KILN_OK ||
        (st = kiln_unroll(sl, p)) != KILN_OK)
        return st;
    return kiln_vectorize(sl, lanes);
}

kiln_status schedule_conv2d_nchwc(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                  kiln_tensor *out, const kiln_target *target) {
    int64_t od[5];
    if (kiln_tensor_ndim(out) != 5 || ops_shape(out, od) != 5) return KILN_OK;
    int lanes = target_lanes(target), nregs = target->vector_regs;
    int64_t vecs = (od[4] + lanes - 1) / lanes; /* registers per pixel and block */
    int dw = is_depthwise(call);
    int64_t reg_n, ocb, block_bytes = 4;
    int pixels_inner;
    const gtensor_type *wt = &call->graph->nodes[call->in[1]]->type.t[0];
    for (int d = 1; d < wt->ndim; d++) block_bytes *= wt->dims[d].v; /* one output block's weights */
    ops_register_block(od[3], od[1], vecs, nregs, dw, block_bytes, &reg_n, &ocb, &pixels_inner);
    kiln_tensor *conv = anchor;
    if (anchor == out) {
        conv = kiln_cache_write(s, out, "local");
        if (!conv) return KILN_ERR_INVALID;
    }
    kiln_stage *so = kiln_schedule_stage(s, out), *sc = kiln_schedule_stage(s, conv);
    if (!so || !sc) return KILN_ERR_INVALID;
    kiln_status st = kiln_set_scope(sc, "local");
    if (st != KILN_OK) return st;
    kiln_expr n = kiln_tensor_axis(out, 0), occ = kiln_tensor_axis(out, 1),
              oh = kiln_tensor_axis(out, 2), ow = kiln_tensor_axis(out, 3),
              ob = kiln_tensor_axis(out, 4);
    kiln_expr owo, owi, oco, oci, f1, f2;
    if ((st = kiln_split(so, ow, reg_n, &owo, &owi)) != KILN_OK ||
        (st = kiln_split(so, occ, ocb, &oco, &oci)) != KILN_OK)
        return st;
    /* Which operand stays in cache: with all the weights within half an L2,
       rows outermost and the channel-block groups inside a block of pixels,
       so the input tile is reused from L1 by every group instead of being
       read again per group (ResNet-50 22.0 -> 20.0 ms in an interleaved A/B
       run); larger weights keep TVM's order, groups outermost, and so do
       depthwise convolutions, whose groups share no input: there, one
       block's consecutive rows reuse the input rows they overlap in. */
    int rows_outer = !dw && block_bytes * od[1] <= (512 << 10);
    kiln_expr order[7] = {n, oco, oh, owo, oci, owi, ob};
    if (rows_outer) {
        order[1] = oh;
        order[2] = owo;
        order[3] = oco;
    }
    if ((st = kiln_reorder(so, 7, order)) != KILN_OK ||
        (st = kiln_fuse(so, n, order[1], &f1)) != KILN_OK ||
        (!rows_outer && (st = kiln_fuse(so, f1, oh, &f1)) != KILN_OK))
        return st;
    f2 = f1;
    if ((st = kiln_parallel(so, f2)) != KILN_OK || (st = kiln_unroll(so, oci)) != KILN_OK ||
        (st = kiln_unroll(so, owi)) != KILN_OK || (st = kiln_vectorize(so, ob)) != KILN_OK ||
        (st = kiln_compute_at(sc, so, rows_outer ? oco : owo)) != KILN_OK)
        return st;
    if ((st = ops_schedule_accumulators(sc, conv, 1, 3, pixels_inner)) != KILN_OK) return st;
    /* A depthwise convolution does few multiply-adds per input value, so a
       padded copy of its input written and read back through memory costs
       about as much as the convolution: it reads the input directly, the
       padding a select per load, uniform across the vector (with vector
       selects rendered as blends, MobileNetV2 3.1 -> 2.6 ms; a per-row copy
       in L1 was 45% slower). */
    kiln_tensor *ins[4];
    if (dw && kiln_tensor_inputs(conv, ins, 4) >= 1 && kiln_tensor_axis(ins[0], 0)) {
        kiln_stage *sp = kiln_schedule_stage(s, ins[0]);
        if (!sp) return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sp)) != KILN_OK) return st;
    }
    return KILN_OK;
}

/* ---- pooling in NCHW[x]c ------------------------------------------------------------
 * Max pooling does one comparison per input value read, so a padded copy of
 * its input costs more than the pooling: the input is read in place (the
 * padding a select per load). Rows of (batch, channel block) run in
 * parallel; per output pixel the window is reduced with the x channels of a
 * block as one vector. Other pools keep the default schedule. */
kiln_status schedule_pool2d_nchwc(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                  kiln_tensor *out, const kiln_target *target) {
    (void)target;
    int64_t od[5];
    if (strcmp(call->op->name, "nn.max_pool2d") || kiln_tensor_ndim(out) != 5 ||
        ops_shape(out, od) != 5 || kiln_tensor_num_reduce_axes(anchor) != 2 ||
        (od[4] & (od[4] - 1)) || od[4] < 4)
        return KILN_OK;
    kiln_status st;
    kiln_tensor *ins[4];
    if (kiln_tensor_inputs(anchor, ins, 4) >= 1 && kiln_tensor_axis(ins[0], 0)) {
        kiln_stage *sp = kiln_schedule_stage(s, ins[0]);
        if (!sp) return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sp)) != KILN_OK) return st;
    }
    kiln_stage *so = kiln_schedule_stage(s, out);
    if (!so) return KILN_ERR_INVALID;
    kiln_expr ax[5], f;
    for (int i = 0; i < 5; i++) ax[i] = kiln_tensor_axis(out, i);
    if ((st = kiln_fuse(so, ax[0], ax[1], &f)) != KILN_OK ||
        (st = kiln_fuse(so, f, ax[2], &f)) != KILN_OK || (st = kiln_parallel(so, f)) != KILN_OK)
        return st;
    if (anchor == out) {
        kiln_expr order[5] = {f, ax[3], kiln_tensor_reduce_axis(out, 0),
                              kiln_tensor_reduce_axis(out, 1), ax[4]};
        if ((st = kiln_reorder(so, 5, order)) != KILN_OK) return st;
        return kiln_vectorize(so, ax[4]);
    }
    kiln_stage *sa = kiln_schedule_stage(s, anchor);
    if (!sa) return KILN_ERR_INVALID;
    kiln_expr c[5];
    for (int i = 0; i < 5; i++) c[i] = kiln_tensor_axis(anchor, i);
    kiln_expr corder[7] = {c[0], c[1], c[2], c[3], kiln_tensor_reduce_axis(anchor, 0),
                           kiln_tensor_reduce_axis(anchor, 1), c[4]};
    if ((st = kiln_vectorize(so, ax[4])) != KILN_OK ||
        (st = kiln_compute_at(sa, so, ax[3])) != KILN_OK ||
        (st = kiln_set_scope(sa, "local")) != KILN_OK ||
        (st = kiln_reorder(sa, 7, corder)) != KILN_OK)
        return st;
    return kiln_vectorize(sa, c[4]);
}
