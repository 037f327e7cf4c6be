/* conv.c: convolutions. nn.conv2d and nn.conv3d are the plain ones (NCHW
 * or NCDHW data, OIHW or OIDHW kernel; strides, dilation, groups, padding
 * as a stage, padded with pad_value), one rank-generic relation and
 * compute; nn.conv2d_transpose and nn.conv3d_transpose are ONNX's
 * ConvTranspose, likewise. nn.conv2d's layout hook is TVM's x86
 * AlterOpLayout for it: with a constant float32 kernel it becomes
 * nn.contrib_conv2d_NCHWc (conv_nchwc.c, the blocked layout NCHW[x]c, its
 * schedule register-blocked), or nn.contrib_conv2d_winograd_NCHWc
 * (conv_winograd.c) where the cost model prefers it, the kernel packed here
 * at compile time; with uint8 data and an int8 kernel,
 * nn.contrib_conv2d_NCHWc_int8 (conv_int8.c). The 3-D and transposed
 * convolutions have the default schedule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* ---- attribute schemas ------------------------------------------------------------ */

/* a plain convolution's attributes, with its rank's defaults */
#define CONV_SCHEMA(ones, zeros, data, kernel)                                                     \
    {"strides", GA_INTS, 0, ones}, {"padding", GA_INTS, 0, zeros}, {"dilation", GA_INTS, 0, ones}, \
        {"groups", GA_INT, 0, "1"}, {"channels", GA_INT, 0, NULL},                                 \
        {"kernel_size", GA_INTS, 0, NULL}, {"data_layout", GA_STR, 0, data},                       \
        {"kernel_layout", GA_STR, 0, kernel}, {"out_dtype", GA_STR, 0, NULL},                      \
        {"pad_value", GA_INT, 0, "0"}, {                                                           \
        NULL, 0, 0, NULL                                                                           \
    }
/* a transposed one's: padding may be negative (it crops the extent) */
#define CONVT_SCHEMA(ones, zeros, data, kernel)                                                    \
    {"strides", GA_INTS, 0, ones}, {"padding", GA_INTS, 0, zeros},                                 \
        {"output_padding", GA_INTS, 0, zeros}, {"dilation", GA_INTS, 0, ones},                     \
        {"groups", GA_INT, 0, "1"}, {"data_layout", GA_STR, 0, data},                              \
        {"kernel_layout", GA_STR, 0, kernel}, {                                                    \
        NULL, 0, 0, NULL                                                                           \
    }

static const attr_schema conv2d_attrs[] = {
    CONV_SCHEMA("[1, 1]", "[0, 0, 0, 0]", "\"NCHW\"", "\"OIHW\"")};
static const attr_schema conv3d_attrs[] = {
    CONV_SCHEMA("[1, 1, 1]", "[0, 0, 0, 0, 0, 0]", "\"NCDHW\"", "\"OIDHW\"")};
static const attr_schema conv2d_transpose_attrs[] = {
    CONVT_SCHEMA("[1, 1]", "[0]", "\"NCHW\"", "\"IOHW\"")};
static const attr_schema conv3d_transpose_attrs[] = {
    CONVT_SCHEMA("[1, 1, 1]", "[0]", "\"NCDHW\"", "\"IODHW\"")};

/* ---- nn.conv2d, nn.conv3d -----------------------------------------------------------
 * One relation and compute for both; the row's variant is the number of
 * spatial dims. A 1-D convolution is a 2-D one with H = 1 (the ONNX
 * importer reshapes). */

/* The data and kernel layouts of an nsp-D convolution, and the kernel's of
 * the transposed one ([in channels, out channels / groups, ...]). */
static const char *const conv_data_layout[] = {NULL, "NCW", "NCHW", "NCDHW"};
static const char *const conv_kernel_layout[] = {NULL, "OIW", "OIHW", "OIDHW"};
static const char *const convt_kernel_layout[] = {NULL, "IOW", "IOHW", "IODHW"};

/* The reduction axis over kernel dim d of nsp: ..., ry, rx. */
static kiln_expr kernel_axis(kiln_ctx *ctx, int nsp, int d, int64_t k) {
    static const char *const names[] = {"rz", "ry", "rx"};
    return kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, k), names[3 - nsp + d]);
}

/* In a relation: the data *x and weight *w of an nsp-D convolution
 * (transposed: the kernel is IO..., else OI...) with their ranks, one
 * dtype and concrete dims but the batch, and its strides s and dilation d. */
static rel_result conv_operands(const gnode *call, const gtype *const *in, int transposed,
                                const gtensor_type **x, const gtensor_type **w, int64_t *s,
                                int64_t *d, kiln_dtype *acc) {
    OPS_REQUIRE_KNOWN(2);
    int nsp = call->op->variant;
    rel_result r = REL_OK;
    *x = ops_tensor_in(in[0], 0, &r);
    *w = *x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!*w)
        return r;
    const gtensor_type *a = *x, *b = *w;
    if (a->ndim != 2 + nsp || b->ndim != 2 + nsp)
        return ops_fail("data and weight must be %d-D (%s, %s), got %d-D and %d-D", 2 + nsp,
                        conv_data_layout[nsp],
                        (transposed ? convt_kernel_layout : conv_kernel_layout)[nsp], a->ndim,
                        b->ndim);
    if (transposed ? a->dtype != b->dtype : ops_accum_dtype(call, a, b, acc) != REL_OK)
        return transposed ? ops_fail("data is %s but weight is %s", kiln_dtype_name(a->dtype),
                                     kiln_dtype_name(b->dtype))
                          : REL_ERROR;
    if (!ops_all_known(a, 1, 2 + nsp) || !ops_all_known(b, 0, 2 + nsp))
        return ops_fail("only the batch dim may be symbolic");
    if (!ops_attr_sp_checked(call, "strides", 1, 1, nsp, s) ||
        !ops_attr_sp_checked(call, "dilation", 1, 1, nsp, d))
        return REL_ERROR;
    return REL_OK;
}

rel_result ops_conv_rel(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                        gtype *out) {
    int nsp = call->op->variant;
    const gtensor_type *x, *w;
    int64_t s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL], p[OPS_MAX_SPATIAL];
    kiln_dtype acc;
    rel_result r = conv_operands(call, in, 0, &x, &w, s, d, &acc);
    if (r != REL_OK)
        return r;
    if (!ops_pad_sum(call, nsp, p))
        return REL_ERROR;
    int64_t groups = graph_attr_int(call, "groups", 1);
    if (groups < 1 || x->dims[1].v % groups || w->dims[0].v % groups)
        return ops_fail("groups=%lld must divide input channels %lld and output channels %lld",
                        (long long)groups, (long long)x->dims[1].v, (long long)w->dims[0].v);
    /* groups divides the input channels, but with none of them any groups
       does: the product must not overflow */
    int64_t cin;
    if (!kiln_mul_ok(w->dims[1].v, groups, &cin) || cin != x->dims[1].v)
        return ops_fail("weight has %lld input channels per group, data has %lld channels in %lld "
                        "groups",
                        (long long)w->dims[1].v, (long long)x->dims[1].v, (long long)groups);
    gtensor_type res = *x;
    res.dtype = acc;
    res.dims[1] = w->dims[0];
    for (int i = 0; i < nsp; i++) {
        int64_t o = ops_window_out(x->dims[2 + i].v, p[i], w->dims[2 + i].v, s[i], d[i], 0);
        if (o < 1)
            return ops_fail("the kernel is larger than the padded input");
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *p, *w;
    int nsp;
    int64_t s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL], ocg, icg;
    kiln_expr ic, k[OPS_MAX_SPATIAL];
    kiln_dtype acc; /* out_dtype, or KILN_DTYPE_COUNT */
} conv_args;

static kiln_expr conv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    conv_args *c = u;
    /* input channel = group(oc) * icg + ic */
    kiln_expr g = kiln_floordiv(i[1], ops_int(ctx, c->ocg));
    kiln_expr ch = kiln_add(kiln_mul(g, ops_int(ctx, c->icg)), c->ic);
    kiln_expr pi[2 + OPS_MAX_SPATIAL] = {i[0], ch}, wi[2 + OPS_MAX_SPATIAL] = {i[1], c->ic};
    kiln_expr axes[1 + OPS_MAX_SPATIAL] = {c->ic};
    for (int d = 0; d < c->nsp; d++) {
        pi[2 + d] = kiln_add(kiln_mul(i[2 + d], ops_int(ctx, c->s[d])),
                             kiln_mul(c->k[d], ops_int(ctx, c->d[d])));
        wi[2 + d] = axes[1 + d] = c->k[d];
    }
    return kiln_sum(kiln_mul(ops_accum_operand(c->acc, kiln_tensor_at(c->p, 2 + c->nsp, pi)),
                             ops_accum_operand(c->acc, kiln_tensor_at(c->w, 2 + c->nsp, wi))),
                    1 + c->nsp, axes);
}

/* In a compute: 1 if the call's layouts are the plain ones of its rank
 * (kernels: `kernel`), else an error. */
static int plain_layouts(const gnode *call, int nsp, const char *const *kernel) {
    if (!strcmp(graph_attr_str(call, "data_layout", ""), conv_data_layout[nsp]) &&
        !strcmp(graph_attr_str(call, "kernel_layout", ""), kernel[nsp]))
        return 1;
    kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: only %s data and %s kernels are supported",
                   call->op->name, conv_data_layout[nsp], kernel[nsp]);
    return 0;
}

kiln_status ops_conv_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                             kiln_tensor **out) {
    int nsp = call->op->variant;
    if (!plain_layouts(call, nsp, conv_kernel_layout))
        return KILN_ERR_UNSUPPORTED;
    int64_t od[2 + OPS_MAX_SPATIAL], wd[2 + OPS_MAX_SPATIAL], pad[2 * OPS_MAX_SPATIAL];
    ops_out_shape(call, od);
    ops_shape(in[1], wd);
    ops_pad_sp(call, nsp, pad);
    conv_args c;
    memset(&c, 0, sizeof c);
    c.p = ops_pad_window(ctx, call, in[0], nsp, pad, (double)graph_attr_int(call, "pad_value", 0));
    c.w = in[1];
    c.nsp = nsp;
    c.icg = wd[1];
    c.acc = ops_out_dtype(call);
    if (!c.p)
        return KILN_ERR_INVALID;
    ops_attr_sp(call, "strides", 1, nsp, c.s);
    ops_attr_sp(call, "dilation", 1, nsp, c.d);
    c.ocg = wd[0] / graph_attr_int(call, "groups", 1);
    c.ic = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, wd[1]), "rc");
    for (int d = 0; d < nsp; d++)
        c.k[d] = kernel_axis(ctx, nsp, d, wd[2 + d]);
    out[0] = ops_compute(ctx, call, "", 2 + nsp, od, conv_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.conv2d_transpose, nn.conv3d_transpose ---------------------------------------
 * The gradient of a convolution (ONNX ConvTranspose): data [N, C, ...],
 * weight [C, O/groups, k...], output [N, O, ...] of extent
 * stride * (in - 1) + dilation * (k - 1) + 1 + output_padding per dim,
 * cropped by padding (begins, then ends; a negative one extends it with
 * zeros). Output p of a dim reads input q where q * stride + r * dilation
 * = p + pad_begin for a kernel tap r: a reduction over the group's input
 * channels and the taps, a tap counting where the division is exact and q
 * inside the input. Each output does k taps per dim, of which about
 * k / stride count; no dilated copy of the input is made. The variant is
 * the number of spatial dims (1-D: the importer reshapes to 2-D). */

static rel_result rel_conv_transpose(const struct kiln_graph *g, const gnode *call,
                                     const gtype *const *in, gtype *out) {
    int nsp = call->op->variant;
    const gtensor_type *x, *w;
    int64_t s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL], op[OPS_MAX_SPATIAL], p[2 * OPS_MAX_SPATIAL];
    kiln_dtype acc;
    rel_result r = conv_operands(call, in, 1, &x, &w, s, d, &acc);
    if (r != REL_OK)
        return r;
    if (!ops_attr_sp_checked(call, "output_padding", 0, 0, nsp, op) ||
        !ops_pad_sp_checked(call, nsp, 1, p))
        return REL_ERROR;
    int64_t groups = graph_attr_int(call, "groups", 1), oc;
    if (groups < 1 || x->dims[1].v % groups)
        return ops_fail("groups=%lld must divide the input channels %lld", (long long)groups,
                        (long long)x->dims[1].v);
    if (w->dims[0].v != x->dims[1].v)
        return ops_fail("weight has %lld input channels, data has %lld", (long long)w->dims[0].v,
                        (long long)x->dims[1].v);
    if (!kiln_mul_ok(w->dims[1].v, groups, &oc))
        return ops_fail("%lld output channels per group in %lld groups overflow int64",
                        (long long)w->dims[1].v, (long long)groups);
    gtensor_type res = *x;
    res.dims[1] = (gdim){oc, NULL};
    for (int i = 0; i < nsp; i++) {
        int64_t o = ops_window_span(x->dims[2 + i].v, w->dims[2 + i].v, s[i], d[i], op[i]);
        if (o < 0 || __builtin_sub_overflow(o, p[i], &o) ||
            __builtin_sub_overflow(o, p[nsp + i], &o) || o < 1)
            return ops_fail(
                "spatial dim %d: the output of %lld inputs, kernel %lld, stride %lld, "
                "dilation %lld, output padding %lld and padding (%lld, %lld) is empty or "
                "overflows",
                i, (long long)x->dims[2 + i].v, (long long)w->dims[2 + i].v, (long long)s[i],
                (long long)d[i], (long long)op[i], (long long)p[i], (long long)p[nsp + i]);
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *w;
    int nsp;
    int64_t s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL], pb[OPS_MAX_SPATIAL], in[OPS_MAX_SPATIAL];
    int64_t ocg, icg;
    kiln_expr ic, k[OPS_MAX_SPATIAL];
} convt_args;

static kiln_expr convt_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    convt_args *c = u;
    /* input channel = group(oc) * icg + ic; the weight's output channel oc % ocg */
    kiln_expr ocg = ops_int(ctx, c->ocg), z = ops_int(ctx, 0), ok = NULL;
    kiln_expr ch = kiln_add(kiln_mul(kiln_floordiv(i[1], ocg), ops_int(ctx, c->icg)), c->ic);
    kiln_expr xi[2 + OPS_MAX_SPATIAL] = {i[0], ch},
                     wi[2 + OPS_MAX_SPATIAL] = {ch, kiln_floormod(i[1], ocg)};
    kiln_expr axes[1 + OPS_MAX_SPATIAL] = {c->ic};
    for (int d = 0; d < c->nsp; d++) {
        kiln_expr s = ops_int(ctx, c->s[d]);
        kiln_expr t = kiln_sub(kiln_add(i[2 + d], ops_int(ctx, c->pb[d])),
                               kiln_mul(c->k[d], ops_int(ctx, c->d[d])));
        kiln_expr q = c->s[d] == 1 ? t : kiln_floordiv(t, s);
        kiln_expr in = kiln_and(kiln_ge(t, z), kiln_lt(q, ops_int(ctx, c->in[d])));
        if (c->s[d] != 1)
            in = kiln_and(in, kiln_eq(kiln_floormod(t, s), z));
        ok = ok ? kiln_and(ok, in) : in;
        xi[2 + d] = kiln_min(kiln_max(q, z), ops_int(ctx, c->in[d] - 1));
        wi[2 + d] = axes[1 + d] = c->k[d];
    }
    kiln_expr v =
        kiln_mul(kiln_tensor_at(c->x, 2 + c->nsp, xi), kiln_tensor_at(c->w, 2 + c->nsp, wi));
    return kiln_sum(kiln_select(ok, v, ops_const(ctx, kiln_tensor_dtype(c->x), 0)), 1 + c->nsp,
                    axes);
}

static kiln_status compute_conv_transpose(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                          kiln_tensor **out) {
    int nsp = call->op->variant;
    if (!plain_layouts(call, nsp, convt_kernel_layout))
        return KILN_ERR_UNSUPPORTED;
    int64_t od[2 + OPS_MAX_SPATIAL], xd[2 + OPS_MAX_SPATIAL], wd[2 + OPS_MAX_SPATIAL],
        pad[2 * OPS_MAX_SPATIAL];
    ops_out_shape(call, od);
    ops_shape(in[0], xd);
    ops_shape(in[1], wd);
    ops_pad_sp(call, nsp, pad);
    convt_args c;
    memset(&c, 0, sizeof c);
    c.x = in[0];
    c.w = in[1];
    c.nsp = nsp;
    ops_attr_sp(call, "strides", 1, nsp, c.s);
    ops_attr_sp(call, "dilation", 1, nsp, c.d);
    c.ocg = wd[1];
    c.icg = xd[1] / graph_attr_int(call, "groups", 1);
    for (int d = 0; d < nsp; d++) {
        c.pb[d] = pad[d];
        c.in[d] = xd[2 + d];
        c.k[d] = kernel_axis(ctx, nsp, d, wd[2 + d]);
    }
    c.ic = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, c.icg), "rc");
    out[0] = ops_compute(ctx, call, "", 2 + nsp, od, convt_body, &c);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.conv2d's layout hook: to NCHW[x]c or Winograd --------------------------------- */

/* The channel block for n channels: the widest power of two dividing n
 * that fits a register (a whole or half vector beats an odd width the
 * code generator must split, e.g. 24 channels: 3 blocks of 8, not 2 of
 * 12), else TVM's choice, the largest divisor that fits. Where `pad` allows
 * and that block is narrower than a register, a whole register with the
 * last block padded with zeros, if the padding is at most a third of n:
 * ShuffleNetV2's 116 channels were 29 blocks of 4, a quarter of each
 * AVX-512 multiply-add, and become 8 blocks of 16 (128 channels); 24 and
 * 40 channels become 2 and 3 blocks of 16 (MobileNetV2 2 % faster,
 * EfficientNet-B0 even, in interleaved runs; an eighth, which left them
 * at 8, and a half measured no better). */
static int64_t channel_block(int64_t n, int64_t lanes, int pad) {
    int64_t b = 1;
    for (int64_t p = lanes; p >= 4 && b == 1; p /= 2)
        if (n % p == 0)
            b = p;
    for (int64_t d = lanes < n ? lanes : n; d > 1 && b == 1; d--)
        if (n % d == 0)
            b = d;
    if (pad && b < lanes && n > lanes && (n + lanes - 1) / lanes * lanes - n <= n / 3)
        b = lanes;
    return b;
}

/* The Winograd tile for a convolution of C -> O channels, or 0 for the
 * direct convolution: the cheapest by ops_conv3x3_cost, or the build
 * option's. Only 3x3, stride 1, dilation 1, ungrouped. */
static int winograd_tile(const layout_query *q, const gnode *n, int64_t O, int64_t C, int64_t KH,
                         int64_t KW, int64_t groups, const gtensor_type *ot) {
    int64_t s[2], d[2];
    ops_attr2(n, "strides", 1, s);
    ops_attr2(n, "dilation", 1, d);
    if (q->winograd == 0 || KH != 3 || KW != 3 || groups != 1 || s[0] != 1 || s[1] != 1 ||
        d[0] != 1 || d[1] != 1)
        return 0;
    if (q->winograd > 0)
        return q->winograd;
    int64_t oh = ot->dims[2].v, ow = ot->dims[3].v, nb = ot->dims[0].sym ? 1 : ot->dims[0].v;
    int64_t llc = ops_cache_bytes(q->target, 3, 0);
    int best = 0, lanes = target_lanes(q->target);
    double cost = ops_conv3x3_cost(0, nb, oh, ow, C, O, lanes, llc);
    for (int m = 2; m <= 4; m += 2) {
        double c = ops_conv3x3_cost(m, nb, oh, ow, C, O, lanes, llc);
        if (c < cost)
            cost = c, best = m;
    }
    /* a tuning knob: the direct convolution or either tile */
    static const int64_t tiles[3] = {0, 2, 4};
    return q->knobs && !ot->dims[0].sym
               ? (int)q->knobs->value(q->knobs, n, "conv.winograd", best, 3, tiles)
               : best;
}

/* conv n as nn.contrib_conv2d_winograd_NCHWc with tile m: the kernel
 * transformed here */
static int winograd_conv(const gnode *n, const gnode *w, const float *src, int m, int64_t ib,
                         int64_t ob, layout_rewrite *rw) {
    int64_t O = kiln_ndarray_dim(w->value, 0), I = kiln_ndarray_dim(w->value, 1);
    int64_t Op = (O + ob - 1) / ob * ob, Ip = (I + ib - 1) / ib * ib; /* padded */
    /* the weight's output channels in blocks of two vectors where they
       pair up: the product's register block then reads one stream of
       weights, not two 16 KB apart whose lines evict each other in L1 */
    int64_t wb = (Op / ob) % 2 == 0 ? 2 * ob : ob;
    int64_t dims[5] = {(m + 2) * (m + 2), Op / wb, Ip / ib, ib, wb};
    kiln_ndarray *u = kiln_ndarray_empty(KILN_FLOAT32, 5, dims);
    if (!u)
        return -1;
    if (!ops_winograd_weight(src, O, I, Op, Ip, m, ib, wb, kiln_ndarray_data(u))) {
        kiln_ndarray_free(u);
        kiln_set_error(KILN_ERR_INVALID, "AlterOpLayout: no Winograd tile %d for %s", m, n->name);
        return -1;
    }
    char suffix[48], extra[256];
    snprintf(suffix, sizeof suffix, ".winograd%d", m);
    snprintf(extra, sizeof extra,
             "tile_size=%d, groups=1, data_layout=\"NCHW%dc\", kernel_layout=\"EOI%di%do\", "
             "out_layout=\"NCHW%dc\"",
             m, (int)ib, (int)ib, (int)wb, (int)ob);
    return ops_blocked_conv("nn.contrib_conv2d_winograd_NCHWc", u, suffix, ib, ob, extra, rw);
}

/* The layout hook of nn.conv2d (any groups; depthwise as its own case)
 * with a constant float32 kernel: data in NCHW[x]c, the kernel packed
 * here into OIHW[x]i[y]o, output in NCHW[y]c, the block fitting one
 * vector register of the target (channel_block); or Winograd. (A batch
 * norm's per-channel scale after it is in its weights already:
 * SimplifyExpr's FoldScaleAxis rule.) */
static int alter_conv2d(const gnode *n, const layout_query *q, layout_rewrite *rw) {
    const struct kiln_graph *g = n->graph;
    const gnode *x = g->nodes[n->in[0]], *w = g->nodes[n->in[1]];
    const gtensor_type *xt = ops_node_type(x), *ot = ops_node_type(n);
    if (xt && xt->dtype == KILN_UINT8)
        return ops_alter_conv2d_int8(n, q, rw);
    /* the batch may be symbolic: the NCHW[x]c compute and schedule take it */
    if (w->kind != GN_CONST || !xt || !ot || xt->dtype != KILN_FLOAT32 || xt->ndim != 4 ||
        !ops_all_known(xt, 1, 4) || !ops_all_known(ot, 1, ot->ndim) ||
        kiln_ndarray_dtype(w->value) != KILN_FLOAT32 || kiln_ndarray_ndim(w->value) != 4 ||
        strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW") ||
        graph_attr_int(n, "pad_value", 0))
        return 0;
    int64_t lanes = target_lanes(q->target);
    int64_t O = kiln_ndarray_dim(w->value, 0), I = kiln_ndarray_dim(w->value, 1);
    int64_t KH = kiln_ndarray_dim(w->value, 2), KW = kiln_ndarray_dim(w->value, 3);
    int64_t C = xt->dims[1].v, groups = graph_attr_int(n, "groups", 1);
    int dw = groups > 1 && groups == C && O == C && I == 1;
    int64_t cin;
    if (groups < 1 || C % groups || O % groups || !kiln_mul_ok(I, groups, &cin) || cin != C)
        return 0;
    const float *src = kiln_ndarray_data(w->value);
    float *merged = NULL;
    /* Groups of fewer channels than a vector (ResNeXt's 4 per group): merged
       in runs of mk = lanes / channels into groups of a whole vector, whose
       weights are zero off the diagonal blocks, so the convolution runs in
       full-width blocks at mk times the multiply-adds, at most 4 (on AVX-512,
       ResNeXt-50's 4-channel groups ran in NCHW4c with quarter-width vectors
       at about 15 % of peak, with layout transforms around them). */
    int64_t mk =
        !dw && groups > 1 && I == O / groups && I < lanes && lanes % I == 0 ? lanes / I : 1;
    if (mk > 1 && mk <= 4 && groups % mk == 0) {
        int64_t I2 = I * mk;
        merged = calloc((size_t)(O * I2 * KH * KW), sizeof(float));
        if (!merged)
            return -1;
        for (int64_t o = 0; o < O; o++) /* o's group within the merged one: o / I % k */
            for (int64_t i = 0; i < I; i++)
                for (int64_t t = 0; t < KH * KW; t++)
                    merged[(o * I2 + (o / I % mk) * I + i) * KH * KW + t] =
                        src[(o * I + i) * KH * KW + t];
        src = merged;
        I = I2;
        groups /= mk;
    }
    /* the input's block: keep the producer's when it divides the channels
       of a group (no block may straddle two groups; without groups, or
       depthwise, the last block may be padded) */
    int pad = groups == 1 || dw, xb = q->block[x->id];
    int64_t icg = dw ? C : C / groups, ocg = O / groups; /* depthwise: blocks span channels */
    int64_t ib = xb && (pad || icg % xb == 0) ? xb : channel_block(icg, lanes, pad);
    int64_t ob = dw ? ib : channel_block(ocg, lanes, pad);
    /* packed weight: [O/ob, I/ib, KH, KW, ib, ob] (I: a group's input channels; output
       block o reads input blocks of its group); depthwise [C/b, 1, KH, KW, 1, b]; the
       padded channels' weights are zeros */
    int64_t Ob = (O + ob - 1) / ob, ibw = dw ? 1 : ib, Ic = dw ? 1 : (I + ib - 1) / ib;
    int64_t dims[6] = {Ob, Ic, KH, KW, ibw, ob};
    /* (Winograd's tiles count the batch: a symbolic one takes the direct form) */
    int wm = dw || xt->dims[0].sym ? 0 : winograd_tile(q, n, O, C, KH, KW, groups, ot);
    if (wm) { /* (never with merged groups: Winograd takes groups = 1 only) */
        int r = winograd_conv(n, w, src, wm, ib, ob, rw);
        free(merged);
        return r;
    }
    if (dw)
        groups = Ob * ob; /* the padded channels are groups of their own */
    kiln_ndarray *pw = kiln_ndarray_empty(KILN_FLOAT32, 6, dims);
    if (!pw) {
        free(merged);
        return -1;
    }
    float *dst = kiln_ndarray_data(pw);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t h = 0; h < KH; h++)
                for (int64_t k = 0; k < KW; k++) {
                    int64_t oc = o / ob, ocb = o % ob, icc = dw ? 0 : i / ib, icb = dw ? 0 : i % ib;
                    dst[((((oc * Ic + icc) * KH + h) * KW + k) * ibw + icb) * ob + ocb] =
                        src[((o * I + i) * KH + h) * KW + k];
                }
    free(merged);
    char suffix[48], extra[256];
    snprintf(suffix, sizeof suffix, ".OIHW%di%do", (int)ibw, (int)ob);
    snprintf(extra, sizeof extra,
             "groups=%lld, data_layout=\"NCHW%dc\", kernel_layout=\"OIHW%di%do\", "
             "out_layout=\"NCHW%dc\"",
             (long long)groups, (int)ib, (int)ibw, (int)ob, (int)ob);
    return ops_blocked_conv("nn.contrib_conv2d_NCHWc", pw, suffix, ib, ob, extra, rw);
}

/* ---- the table ------------------------------------------------------------------------ */

/* The fields of a plain convolution's row: the variant is its spatial dims. */
#define CONV_ROW(nm, schema, relation, fn, nsp, sum)                                               \
    .name = nm, .min_in = 2, .max_in = 2, .attrs = schema, .rel = relation,                        \
    .pattern = OP_OUT_ELEMWISE_FUSABLE, .compute = fn, .summary = sum, .variant = nsp

const kiln_op_def ops_conv_rows[] = {
    {CONV_ROW("nn.conv2d", conv2d_attrs, ops_conv_rel, ops_conv_compute, 2,
              "2-D convolution, NCHW x OIHW"),
     .alter = alter_conv2d},
    {CONV_ROW("nn.conv3d", conv3d_attrs, ops_conv_rel, ops_conv_compute, 3,
              "3-D convolution, NCDHW x OIDHW")},
    {CONV_ROW("nn.conv2d_transpose", conv2d_transpose_attrs, rel_conv_transpose,
              compute_conv_transpose, 2, "2-D transposed convolution, NCHW x IOHW")},
    {CONV_ROW("nn.conv3d_transpose", conv3d_transpose_attrs, rel_conv_transpose,
              compute_conv_transpose, 3, "3-D transposed convolution, NCDHW x IODHW")},
};

const int ops_conv_count = (int)(sizeof ops_conv_rows / sizeof ops_conv_rows[0]);
