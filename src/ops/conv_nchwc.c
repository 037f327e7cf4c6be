/* conv_nchwc.c: nn.contrib_conv2d_NCHWc, the float convolution in the
 * blocked layout NCHW[x]c that nn.conv2d's layout hook (conv.c) makes,
 * TVM's x86 fast path: a tensor [N, C, H, W] in NCHW16c is [N, C/16, H,
 * W, 16], sixteen channels side by side, so a convolution keeps a vector
 * of output channels in a register and multiplies it by a broadcast input
 * value. Its register-blocked schedule, its output type and its window
 * indices are shared with the int8 form (conv_int8.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static const attr_schema conv2d_nchwc_attrs[] = {
    {"strides", GA_INTS, 0, "[1, 1]"},  {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},
    {"dilation", GA_INTS, 0, "[1, 1]"}, {"groups", GA_INT, 0, "1"},
    {"channels", GA_INT, 0, NULL},      {"kernel_size", GA_INTS, 0, NULL},
    {"data_layout", GA_STR, 1, NULL},   {"kernel_layout", GA_STR, 0, NULL},
    {"out_layout", GA_STR, 1, NULL},    {"out_dtype", GA_STR, 0, NULL},
    {"pad_value", GA_INT, 0, "0"},      {NULL, 0, 0, NULL}};

/* ---- nn.contrib_conv2d_NCHWc -------------------------------------------------------
 * data [N, IC/x, H, W, x], weight [OC/y, IC/x, KH, KW, x, y], out [N, OC/y,
 * OH, OW, y]. Depthwise (groups = IC = OC, x = y): weight [C/x, 1, KH, KW,
 * 1, x], and output channel c reads input channel c only. */
/* Depthwise: groups > 1 with one input channel per group, packed as
 * [C/x, 1, KH, KW, 1, x]. Other grouped convolutions keep the general packing
 * with [O/y, I/x, ...] holding a group's I input channels. */
static int is_depthwise(const gnode *call) {
    const gtensor_type *x = &call->graph->nodes[call->in[0]]->type.t[0];
    const gtensor_type *w = &call->graph->nodes[call->in[1]]->type.t[0];
    /* a depthwise one with a channel multiplier (more output channels than
       input ones) is packed in the general grouped form, one input channel
       per group: not depthwise here */
    return graph_attr_int(call, "groups", 1) > 1 && w->ndim == 6 && w->dims[4].v == 1 &&
           w->dims[1].v == 1 && x->ndim == 5 &&
           w->dims[0].v * w->dims[5].v == x->dims[1].v * x->dims[4].v;
}

rel_result ops_nchwc_operands(const gnode *call, const gtype *const *in, int wdims,
                              const char *wlayout, const gtensor_type **x, const gtensor_type **w,
                              int *ib, int *ob) {
    rel_result r = REL_OK;
    *x = ops_tensor_in(in[0], 0, &r);
    *w = *x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!*w)
        return r;
    *ib = ops_layout_block(graph_attr_str(call, "data_layout", "NCHW"));
    *ob = ops_layout_block(graph_attr_str(call, "out_layout", "NCHW"));
    if (*ib < 1 || *ob < 1)
        return ops_fail("data_layout and out_layout must be NCHW[x]c");
    if ((*x)->ndim != 5 || (*w)->ndim != wdims)
        return ops_fail("data must be 5-D (NCHW[x]c) and weight %d-D (%s), got %d-D and %d-D",
                        wdims, wlayout, (*x)->ndim, (*w)->ndim);
    if (!ops_all_known(*x, 1, 5) || !ops_all_known(*w, 0, wdims))
        return ops_fail("only the batch dim may be symbolic");
    return REL_OK;
}

int ops_blocked_conv(const char *op, kiln_ndarray *pw, const char *suffix, int64_t ib, int64_t ob,
                     const char *extra, layout_rewrite *rw) {
    static const char *const drop[] = {"data_layout", "kernel_layout", "out_layout", "groups",
                                       NULL};
    rw->op = op;
    rw->drop = drop;
    snprintf(rw->attrs, sizeof rw->attrs, "%s", extra);
    rw->out_block = (int)ob;
    rw->in[0].block = (int)ib;
    rw->in[1].value = pw;
    snprintf(rw->in[1].suffix, sizeof rw->in[1].suffix, "%s", suffix);
    return 1;
}

static rel_result rel_conv2d_nchwc(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    const gtensor_type *x, *w;
    int ib = 0, ob = 0;
    rel_result r = ops_nchwc_operands(call, in, 6, "OIHW[x]i[y]o", &x, &w, &ib, &ob);
    if (r != REL_OK)
        return r;
    kiln_dtype acc;
    if (ops_accum_dtype(call, x, w, &acc) != REL_OK)
        return REL_ERROR;
    int64_t groups = graph_attr_int(call, "groups", 1), ic, oc, wic;
    if (x->dims[4].v != ib)
        return ops_fail("data's block is %lld, not %d", (long long)x->dims[4].v, ib);
    if (w->dims[5].v != ob)
        return ops_fail("weight's output block is %lld, not %d", (long long)w->dims[5].v, ob);
    if (!kiln_mul_ok(x->dims[1].v, ib, &ic) || !kiln_mul_ok(w->dims[0].v, ob, &oc))
        return ops_fail("the channel counts overflow int64");
    int dwk = is_depthwise(call);
    if (groups < 1 || ic % groups || oc % groups)
        return ops_fail("groups=%lld must divide input channels %lld and output channels %lld",
                        (long long)groups, (long long)ic, (long long)oc);
    if (dwk) {
        if (groups != ic || ib != ob || oc != ic)
            return ops_fail("a depthwise NCHW[x]c convolution needs groups = channels = %lld and "
                            "one block, got groups=%lld",
                            (long long)ic, (long long)groups);
    } else if (!kiln_mul_ok(w->dims[1].v, ib, &wic) || !kiln_mul_ok(wic, groups, &wic) ||
               wic != ic || w->dims[4].v != ib || (ic / groups) % ib || (oc / groups) % ob) {
        return ops_fail("weight [%lld, %lld, ., ., %lld, .] does not match data with %lld "
                        "channels in blocks of %d and %lld groups",
                        (long long)w->dims[0].v, (long long)w->dims[1].v, (long long)w->dims[4].v,
                        (long long)ic, ib, (long long)groups);
    }
    return ops_nchwc_result(g, call, x, w, ob, acc, out);
}

rel_result ops_nchwc_result(const struct kiln_graph *g, const gnode *call, const gtensor_type *x,
                            const gtensor_type *w, int64_t ob, kiln_dtype dt, gtype *out) {
    int64_t s[2], d[2], p[2];
    if (!ops_attr2_checked(call, "strides", 1, 1, s) ||
        !ops_attr2_checked(call, "dilation", 1, 1, d) || !ops_pad_sum(call, 2, p))
        return REL_ERROR;
    gtensor_type res = *x;
    res.dtype = dt;
    res.dims[1] = (gdim){w->dims[0].v, NULL};
    res.dims[4] = (gdim){ob, NULL};
    for (int i = 0; i < 2; i++) {
        int64_t o = ops_window_out(x->dims[2 + i].v, p[i], w->dims[2 + i].v, s[i], d[i], 0);
        if (o < 1)
            return ops_fail("the kernel is larger than the padded input");
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

void ops_nchwc_window(kiln_ctx *ctx, const kiln_expr *i, const int64_t s[2], const int64_t d[2],
                      kiln_expr kh, kiln_expr kw, kiln_expr *h, kiln_expr *w) {
    *h = kiln_add(kiln_mul(i[2], ops_int(ctx, s[0])), kiln_mul(kh, ops_int(ctx, d[0])));
    *w = kiln_add(kiln_mul(i[3], ops_int(ctx, s[1])), kiln_mul(kw, ops_int(ctx, d[1])));
}

typedef struct {
    kiln_tensor *p, *w;
    int64_t s[2], d[2];
    int dw;
    kiln_dtype acc;       /* out_dtype, or KILN_DTYPE_COUNT */
    int64_t ob, ocg, icb; /* grouped: output block, a group's output channels, its input blocks */
    kiln_expr icc, kh, kw, ib;
} convc_args;

static kiln_expr convc_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    convc_args *c = u;
    kiln_expr h, w;
    ops_nchwc_window(ctx, i, c->s, c->d, c->kh, c->kw, &h, &w);
    kiln_expr z = ops_int(ctx, 0);
    if (c->dw) {
        kiln_expr pi[5] = {i[0], i[1], h, w, i[4]}, wi[6] = {i[1], z, c->kh, c->kw, z, i[4]};
        kiln_expr axes[2] = {c->kh, c->kw};
        return kiln_sum(kiln_mul(ops_accum_operand(c->acc, kiln_tensor_at(c->p, 5, pi)),
                                 ops_accum_operand(c->acc, kiln_tensor_at(c->w, 6, wi))),
                        2, axes);
    }
    kiln_expr ci = c->icc; /* grouped: the first input block of this output block's group */
    if (c->ocg)
        ci = kiln_add(
            kiln_mul(kiln_floordiv(kiln_mul(i[1], ops_int(ctx, c->ob)), ops_int(ctx, c->ocg)),
                     ops_int(ctx, c->icb)),
            c->icc);
    kiln_expr pi[5] = {i[0], ci, h, w, c->ib}, wi[6] = {i[1], c->icc, c->kh, c->kw, c->ib, i[4]};
    kiln_expr axes[4] = {c->icc, c->kh, c->kw, c->ib};
    return kiln_sum(kiln_mul(ops_accum_operand(c->acc, kiln_tensor_at(c->p, 5, pi)),
                             ops_accum_operand(c->acc, kiln_tensor_at(c->w, 6, wi))),
                    4, axes);
}

static kiln_status compute_conv2d_nchwc(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    int64_t od[5], wd[6], pad[4];
    ops_out_shape(call, od);
    ops_shape(in[1], wd);
    ops_pad4(call, pad);
    convc_args c;
    memset(&c, 0, sizeof c);
    c.p = ops_pad_spatial(ctx, call, in[0], pad, (double)graph_attr_int(call, "pad_value", 0));
    c.w = in[1];
    c.acc = ops_out_dtype(call);
    if (!c.p)
        return KILN_ERR_INVALID;
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

kiln_status ops_schedule_conv2d_nchwc(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                      kiln_tensor *out, const kiln_target *target) {
    int64_t od[5];
    if (kiln_tensor_ndim(out) != 5 || ops_shape(out, od) != 5)
        return KILN_OK;
    int lanes = target_lanes(target), nregs = target->vector_regs;
    int64_t vecs = (od[4] + lanes - 1) / lanes; /* registers per pixel and block */
    int dw = is_depthwise(call);
    int64_t reg_n, ocb, block_bytes;
    int pixels_inner;
    const gtensor_type *wt = &call->graph->nodes[call->in[1]]->type.t[0];
    block_bytes = (int64_t)kiln_dtype_size(wt->dtype);
    for (int d = 1; d < wt->ndim; d++)
        block_bytes *= wt->dims[d].v; /* one output block's weights */
    ops_register_block_knobs(s, "conv", od[3], od[1], vecs, nregs, dw, block_bytes,
                             ops_cache_bytes(target, 1, 32 << 10), &reg_n, &ocb, &pixels_inner);
    kiln_tensor *conv = anchor;
    if (anchor == out) {
        conv = kiln_cache_write(s, out, "local");
        if (!conv)
            return KILN_ERR_INVALID;
    }
    kiln_stage *so = kiln_schedule_stage(s, out), *sc = kiln_schedule_stage(s, conv);
    if (!so || !sc)
        return KILN_ERR_INVALID;
    kiln_status st = kiln_set_scope(sc, "local");
    if (st != KILN_OK)
        return st;
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
    int64_t two[2] = {0, 1};
    int rows_outer = (int)ops_knob(
        s, "conv.rows_outer", !dw && block_bytes * od[1] <= ops_cache_bytes(target, 2, 1 << 20) / 2,
        2, two);
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
    /* a tuning knob: how many more loops the parallel loop takes in (the
       row chunks, then with rows outer the channel-block groups), for
       balance where rows are few (7 rows of ResNet-50's layer 4 on 2
       threads: 4 and 3) */
    kiln_expr attach = rows_outer ? oco : owo;
    int64_t depths[3] = {0, 1, 2};
    int64_t par = ops_knob(s, "conv.par_fuse", 0, rows_outer ? 3 : 2, depths);
    if (par >= 1) {
        if ((st = kiln_fuse(so, f1, owo, &f1)) != KILN_OK)
            return st;
        if (!rows_outer)
            attach = f1;
    }
    if (par >= 2) {
        if ((st = kiln_fuse(so, f1, oco, &f1)) != KILN_OK)
            return st;
        attach = f1;
    }
    f2 = f1;
    if ((st = kiln_parallel(so, f2)) != KILN_OK || (st = kiln_unroll(so, oci)) != KILN_OK ||
        (st = kiln_unroll(so, owi)) != KILN_OK || (st = kiln_vectorize(so, ob)) != KILN_OK ||
        (st = kiln_compute_at(sc, so, attach)) != KILN_OK)
        return st;
    if ((st = ops_schedule_accumulators(sc, conv, 1, 3, pixels_inner)) != KILN_OK)
        return st;
    /* an annotation knob: the kernel-width reduction unrolled (its input
       offsets become constants) or a loop */
    int kwi = dw ? 1 : 2;
    int64_t kwe = ops_reduce_extent(conv, kwi);
    if (kwe > 1 && kwe <= 7 && ops_knob(s, "conv.unroll_kw", 0, 2, two) &&
        (st = kiln_unroll(sc, kiln_tensor_reduce_axis(conv, kwi))) != KILN_OK)
        return st;
    /* A depthwise convolution does few multiply-adds per input value, so a
       padded copy of its input written and read back through memory costs
       about as much as the convolution: it reads the input directly, the
       padding a select per load, uniform across the vector (with vector
       selects rendered as blends, MobileNetV2 3.1 -> 2.6 ms; a per-row copy
       in L1 was 45% slower). */
    kiln_tensor *ins[4];
    if (dw && kiln_tensor_inputs(conv, ins, 4) >= 1 && kiln_tensor_axis(ins[0], 0)) {
        kiln_stage *sp = kiln_schedule_stage(s, ins[0]);
        if (!sp)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sp)) != KILN_OK)
            return st;
    }
    return KILN_OK;
}

const kiln_op_def ops_conv_nchwc_rows[] = {
    {.name = "nn.contrib_conv2d_NCHWc",
     .min_in = 2,
     .max_in = 2,
     .attrs = conv2d_nchwc_attrs,
     .rel = rel_conv2d_nchwc,
     .pattern = OP_OUT_ELEMWISE_FUSABLE,
     .compute = compute_conv2d_nchwc,
     .summary = "2-D convolution in NCHW[x]c x OIHW[x]i[y]o (nn.conv2d's layout hook makes it)",
     .schedule = ops_schedule_conv2d_nchwc,
     .sym_dims = 1},
};

const int ops_conv_nchwc_count = (int)(sizeof ops_conv_nchwc_rows / sizeof ops_conv_nchwc_rows[0]);
