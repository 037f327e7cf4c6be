/* conv_int8.c: the int8 convolution in the blocked layout,
 * nn.contrib_conv2d_NCHWc_int8, TVM's conv2d_NCHWc_int8 for x86.
 *
 * An integer nn.conv2d (uint8 data, a constant int8 kernel, out_dtype
 * int32: what QnnCanonicalize makes of qnn.conv2d) is rewritten by the
 * layout hook into this op when the data is 4-D and the groups are 1:
 * data NCHW[x]c, output NCHW[y]c int32 (y = one vector of int32), and the
 * kernel packed here into OIHW[x/k]i[y]o[k]i: for each output block, each
 * input block and each tap, x/k rows of y lanes of k consecutive input
 * channels. The compute is a sum of kiln_dot(k) over the input blocks, the
 * taps and the x/k rows: per output vector, k activations (the same in
 * every lane) times lane l's k weights, which is one vpdpbusd where the
 * target has VNNI (k = 4, int8 weights) and one vpmaddwd plus an add on
 * AVX2 (k = 2, weights widened to int16 here so no pair can saturate:
 * vpmaddubsw's int16 sums of two uint8 x int8 products can). The target
 * picks k: the renderer (src/codegen/c_dot.c) maps the dot products onto
 * those instructions and onto an exact loop elsewhere. The padding of the
 * data is the call's pad_value (the zero point of the activations, so it
 * stands for a real 0). The schedule is the float blocked convolution's
 * register-blocked one (conv.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static const attr_schema conv2d_nchwc_int8_attrs[] = {{"strides", GA_INTS, 0, "[1, 1]"},
                                                      {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},
                                                      {"dilation", GA_INTS, 0, "[1, 1]"},
                                                      {"channels", GA_INT, 0, NULL},
                                                      {"kernel_size", GA_INTS, 0, NULL},
                                                      {"data_layout", GA_STR, 1, NULL},
                                                      {"kernel_layout", GA_STR, 1, NULL},
                                                      {"out_layout", GA_STR, 1, NULL},
                                                      {"out_dtype", GA_STR, 0, "\"int32\""},
                                                      {"pad_value", GA_INT, 0, "0"},
                                                      {NULL, 0, 0, NULL}};

/* A depthwise integer convolution (groups = channels = outputs): no
 * reduction over channels for a dot product, so the blocked convolution
 * nn.contrib_conv2d_NCHWc in int32 (out_dtype), a vector of channels per
 * multiply-add, the kernel packed [C/b, 1, KH, KW, 1, b] int8 (b the
 * target's int32 lanes; padded channels are groups of their own, with
 * zero weights), the padding at pad_value. */
static int depthwise_int8(const gnode *n, const layout_query *q, layout_rewrite *rw) {
    const struct kiln_graph *g = n->graph;
    const gnode *x = g->nodes[n->in[0]], *w = g->nodes[n->in[1]];
    int64_t C = kiln_ndarray_dim(w->value, 0), KH = kiln_ndarray_dim(w->value, 2),
            KW = kiln_ndarray_dim(w->value, 3);
    if (kiln_ndarray_dim(w->value, 1) != 1 || C != ops_node_type(x)->dims[1].v)
        return 0;
    int64_t xb = q->block[x->id], b = xb ? xb : target_lanes(q->target), Cb = (C + b - 1) / b;
    int64_t dims[6] = {Cb, 1, KH, KW, 1, b};
    kiln_ndarray *pw = kiln_ndarray_empty(KILN_INT8, 6, dims);
    if (!pw)
        return -1;
    int8_t *dst = kiln_ndarray_data(pw);
    const int8_t *src = kiln_ndarray_data(w->value);
    memset(dst, 0, (size_t)(Cb * b * KH * KW));
    for (int64_t c = 0; c < C; c++)
        for (int64_t t = 0; t < KH * KW; t++)
            dst[((c / b) * KH * KW + t) * b + c % b] = src[c * KH * KW + t];
    char suffix[48], extra[256];
    snprintf(suffix, sizeof suffix, ".OIHW1i%do", (int)b);
    snprintf(extra, sizeof extra,
             "groups=%lld, data_layout=\"NCHW%dc\", kernel_layout=\"OIHW1i%do\", "
             "out_layout=\"NCHW%dc\"",
             (long long)(Cb * b), (int)b, (int)b, (int)b);
    return ops_blocked_conv("nn.contrib_conv2d_NCHWc", pw, suffix, b, b, extra, rw);
}

int ops_alter_conv2d_int8(const gnode *n, const layout_query *q, layout_rewrite *rw) {
    const struct kiln_graph *g = n->graph;
    const gnode *x = g->nodes[n->in[0]], *w = g->nodes[n->in[1]];
    const gtensor_type *xt = ops_node_type(x), *ot = ops_node_type(n);
    if (w->kind != GN_CONST || !xt || !ot || xt->dtype != KILN_UINT8 || xt->ndim != 4 ||
        ot->dtype != KILN_INT32 || !ops_all_known(xt, 1, 4) || !ops_all_known(ot, 1, 4) ||
        kiln_ndarray_dtype(w->value) != KILN_INT8 || kiln_ndarray_ndim(w->value) != 4 ||
        strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW"))
        return 0;
    int64_t groups = graph_attr_int(n, "groups", 1);
    if (groups != 1)
        return groups == xt->dims[1].v ? depthwise_int8(n, q, rw) : 0;
    kiln_dtype wdt;
    int64_t k = ops_int8_dot(q->target, &wdt), lanes = target_lanes(q->target);
    int64_t O = kiln_ndarray_dim(w->value, 0), I = kiln_ndarray_dim(w->value, 1);
    int64_t KH = kiln_ndarray_dim(w->value, 2), KW = kiln_ndarray_dim(w->value, 3);
    if (I != xt->dims[1].v)
        return 0;
    /* the input block: the producer's where it is a multiple of k, else a
       vector's worth of channels (at most the channels, rounded up to k);
       the padded channels' weights are zeros */
    int64_t xb = q->block[x->id], Ik = (I + k - 1) / k * k;
    int64_t ib = xb && xb % k == 0 ? xb : Ik < lanes ? Ik : lanes;
    int64_t ob = lanes, Ob = (O + ob - 1) / ob, Ic = (I + ib - 1) / ib;
    int64_t dims[7] = {Ob, Ic, KH, KW, ib / k, ob, k};
    kiln_ndarray *pw = kiln_ndarray_empty(wdt, 7, dims);
    if (!pw)
        return -1;
    size_t es = kiln_dtype_size(wdt);
    memset(kiln_ndarray_data(pw), 0, (size_t)(Ob * Ic * KH * KW * ib * ob) * es);
    const int8_t *src = kiln_ndarray_data(w->value);
    char *dst = kiln_ndarray_data(pw);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t h = 0; h < KH; h++)
                for (int64_t c = 0; c < KW; c++) {
                    int64_t at =
                        (((((o / ob * Ic + i / ib) * KH + h) * KW + c) * (ib / k) + i % ib / k) *
                             ob +
                         o % ob) *
                            k +
                        i % k;
                    int8_t v = src[((o * I + i) * KH + h) * KW + c];
                    if (wdt == KILN_INT16) {
                        int16_t s = v;
                        memcpy(dst + at * 2, &s, 2);
                    } else {
                        dst[at] = (char)v;
                    }
                }
    char suffix[48], extra[256];
    snprintf(suffix, sizeof suffix, ".OIHW%di%do%di", (int)(ib / k), (int)ob, (int)k);
    snprintf(extra, sizeof extra,
             "data_layout=\"NCHW%dc\", kernel_layout=\"OIHW%di%do%di\", out_layout=\"NCHW%dc\"",
             (int)ib, (int)(ib / k), (int)ob, (int)k, (int)ob);
    return ops_blocked_conv("nn.contrib_conv2d_NCHWc_int8", pw, suffix, ib, ob, extra, rw);
}

/* data [N, C/x, H, W, x] uint8, weight [O/y, C/x, KH, KW, x/k, y, k] int8
 * or int16, out [N, O/y, OH, OW, y] int32 */
static rel_result rel_conv2d_nchwc_int8(const struct kiln_graph *g, const gnode *call,
                                        const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    const gtensor_type *x, *w;
    int ib = 0, ob = 0;
    rel_result r = ops_nchwc_operands(call, in, 7, "OIHW[x/k]i[y]o[k]i", &x, &w, &ib, &ob);
    if (r != REL_OK)
        return r;
    if (x->dtype != KILN_UINT8 || (w->dtype != KILN_INT8 && w->dtype != KILN_INT16))
        return ops_fail("data must be uint8 and weight int8 or int16, got %s and %s",
                        kiln_dtype_name(x->dtype), kiln_dtype_name(w->dtype));
    if (strcmp(graph_attr_str(call, "out_dtype", "int32"), "int32"))
        return ops_fail("out_dtype must be int32");
    int64_t k = w->dims[6].v;
    if ((k != 2 && k != 4) || x->dims[4].v != ib || w->dims[5].v != ob || w->dims[4].v * k != ib ||
        w->dims[1].v != x->dims[1].v)
        return ops_fail("weight [%lld, %lld, ., ., %lld, %lld, %lld] does not match data in "
                        "blocks of %d and output blocks of %d (k must be 2 or 4)",
                        (long long)w->dims[0].v, (long long)w->dims[1].v, (long long)w->dims[4].v,
                        (long long)w->dims[5].v, (long long)k, ib, ob);
    return ops_nchwc_result(g, call, x, w, ob, KILN_INT32, out);
}

typedef struct {
    kiln_tensor *p, *w;
    int64_t s[2], d[2], k;
    kiln_expr icc, kh, kw, icf;
} convq_args;

static kiln_expr convq_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    convq_args *c = u;
    kiln_expr h, w;
    ops_nchwc_window(ctx, i, c->s, c->d, c->kh, c->kw, &h, &w);
    kiln_expr a[4], b[4];
    for (int j = 0; j < c->k; j++) {
        kiln_expr ch = kiln_add(kiln_mul(c->icf, ops_int(ctx, c->k)), ops_int(ctx, j));
        kiln_expr pi[5] = {i[0], c->icc, h, w, ch};
        kiln_expr wi[7] = {i[1], c->icc, c->kh, c->kw, c->icf, i[4], ops_int(ctx, j)};
        a[j] = kiln_tensor_at(c->p, 5, pi);
        b[j] = kiln_tensor_at(c->w, 7, wi);
    }
    kiln_expr axes[4] = {c->icc, c->kh, c->kw, c->icf};
    return kiln_sum(kiln_dot((int)c->k, a, b), 4, axes);
}

static kiln_status compute_conv2d_nchwc_int8(kiln_ctx *ctx, const gnode *call,
                                             kiln_tensor *const *in, kiln_tensor **out) {
    int64_t od[5], wd[7], pad[4];
    ops_out_shape(call, od);
    ops_shape(in[1], wd);
    ops_pad4(call, pad);
    convq_args c;
    memset(&c, 0, sizeof c);
    c.p = ops_pad_spatial(ctx, call, in[0], pad, (double)graph_attr_int(call, "pad_value", 0));
    c.w = in[1];
    c.k = wd[6];
    if (!c.p)
        return KILN_ERR_INVALID;
    ops_attr2(call, "strides", 1, c.s);
    ops_attr2(call, "dilation", 1, c.d);
    c.icc = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[1]), "rco");
    c.kh = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[2]), "ry");
    c.kw = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[3]), "rx");
    c.icf = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[4]), "rci");
    out[0] = ops_compute(ctx, call, "", 5, od, convq_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

const kiln_op_def ops_conv_int8_rows[] = {
    {.name = "nn.contrib_conv2d_NCHWc_int8",
     .min_in = 2,
     .max_in = 2,
     .attrs = conv2d_nchwc_int8_attrs,
     .rel = rel_conv2d_nchwc_int8,
     .pattern = OP_OUT_ELEMWISE_FUSABLE,
     .compute = compute_conv2d_nchwc_int8,
     .summary = "int8 2-D convolution in NCHW[x]c x OIHW[x/k]i[y]o[k]i, int32 out (nn.conv2d's "
                "layout hook makes it)",
     .schedule = ops_schedule_conv2d_nchwc,
     .sym_dims = 1},
};

const int ops_conv_int8_count = (int)(sizeof ops_conv_int8_rows / sizeof ops_conv_int8_rows[0]);
