/* onnx_convert_conv.c: the ONNX converters of convolutions and pooling:
 * Conv, ConvInteger, ConvTranspose, MaxPool (and its Indices output),
 * AveragePool, LpPool, the global pools and MaxUnpool. A 2-D or 3-D window
 * becomes the kiln op of its rank (nn.conv2d, nn.max_pool3d, ...); a 1-D
 * window runs as the 2-D op on the input reshaped to [N, C, 1, L], with
 * kernel, stride and dilation 1 and no padding on the unit H, which is
 * exactly the 1-D op (flat MaxPool indices included: H = 1 adds nothing to
 * them). The converter table is in onnx_table.c. */
#include <stdio.h>
#include <string.h>

#include "../ops/ops.h"
#include "onnx_convert.h"

#define MAXSP OPS_MAX_SPATIAL

/* ---- windows ------------------------------------------------------------------------ */

/* The window of a Conv or pool: its spatial dims (1 to 3), their input and
 * kernel sizes, strides, dilations, and pads (the begins, then the ends)
 * from auto_pad or the pads attribute. */
typedef struct {
    int nsp;
    int64_t in[MAXSP], k[MAXSP], s[MAXSP], d[MAXSP], pads[2 * MAXSP];
} window;

/* The spatial dims of x: 1 to 3, all concrete; -1 with an error. */
static int spatial_dims(imp *I, const Onnx__NodeProto *n, const gtensor_type *x) {
    if (!x || x->ndim < 3 || x->ndim > 2 + MAXSP)
        return imp_fail(I, n, "only 1-D, 2-D and 3-D windows (3-D to 5-D tensors) are supported");
    for (int d = 2; d < x->ndim; d++)
        if (x->dims[d].sym)
            return imp_fail(I, n, "spatial dims must be concrete");
    return x->ndim - 2;
}

/* An ints attribute of one value per spatial dim (ONNX's rule for
 * strides, dilations, kernel_shape, output_padding); absent: def. -1 with
 * an error naming it if it has another count. */
static int sp_ints(imp *I, const Onnx__NodeProto *n, const char *name, int nsp, int64_t def,
                   int64_t *v) {
    int k = imp_attr_ints(I, n, name, v, nsp);
    if (k == -1)
        for (int i = 0; i < nsp; i++)
            v[i] = def;
    else if (k != nsp)
        return imp_fail(I, n, "attribute '%s' has %s%d values; the input has %d spatial dims", name,
                        k == -2 ? "more than " : "", k == -2 ? nsp : k, nsp);
    return 0;
}

/* Each of v[nsp] is at least least (`what` in the error). */
static int at_least(imp *I, const Onnx__NodeProto *n, const char *what, int nsp, const int64_t *v,
                    int64_t least) {
    for (int i = 0; i < nsp; i++)
        if (v[i] < least)
            return imp_fail(I, n, "%s %lld is not at least %lld", what, (long long)v[i],
                            (long long)least);
    return 0;
}

/* Attribute pads: 2 * nsp values, none negative, or none (zeros). */
static int pads_attr(imp *I, const Onnx__NodeProto *n, int nsp, int64_t *p) {
    int np = imp_attr_ints(I, n, "pads", p, 2 * nsp);
    if (np == -1)
        memset(p, 0, sizeof(int64_t) * 2 * (size_t)nsp);
    else if (np != 2 * nsp)
        return imp_fail(I, n,
                        "attribute 'pads' must have %d values (a begin and an end per spatial "
                        "dim), has %s%d",
                        2 * nsp, np == -2 ? "more than " : "", np == -2 ? 2 * nsp : np);
    return at_least(I, n, "pad", 2 * nsp, p, 0);
}

/* floor(t / 2), t of either sign (ONNX's reference rounds so). */
static int64_t floor_half(int64_t t) {
    return t >= 0 ? t / 2 : -((1 - t) / 2);
}

/* Padding `total` (negative: the output grows) split as ONNX's auto_pad
 * does: SAME_UPPER puts the odd one at the end, else at the begin. */
static void split_pad(int64_t total, int upper, int64_t *begin, int64_t *end) {
    int64_t half = floor_half(total);
    *begin = upper ? half : total - half;
    *end = upper ? total - half : half;
}

static int window_of(imp *I, const Onnx__NodeProto *n, const gtensor_type *x, const int64_t *ksp,
                     window *w) {
    if ((w->nsp = spatial_dims(I, n, x)) < 0)
        return -1;
    for (int i = 0; i < w->nsp; i++) {
        w->in[i] = x->dims[2 + i].v;
        w->k[i] = ksp[i];
    }
    if (sp_ints(I, n, "strides", w->nsp, 1, w->s) < 0 ||
        sp_ints(I, n, "dilations", w->nsp, 1, w->d) < 0)
        return -1;
    /* before any division by them (auto_pad SAME, the output size) */
    if (at_least(I, n, "kernel size", w->nsp, w->k, 1) < 0 ||
        at_least(I, n, "stride", w->nsp, w->s, 1) < 0 ||
        at_least(I, n, "dilation", w->nsp, w->d, 1) < 0)
        return -1;
    char buf[32];
    const char *ap = imp_attr_str(I, n, "auto_pad", "NOTSET", buf, sizeof buf);
    int64_t *p = w->pads;
    memset(p, 0, sizeof w->pads);
    if (!strcmp(ap, "NOTSET"))
        return pads_attr(I, n, w->nsp, p);
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < w->nsp; i++) {
            /* the output ceil(in / s); the padding that reaches it, if any */
            int64_t out = w->in[i] / w->s[i] + (w->in[i] % w->s[i] != 0);
            int64_t span = ops_window_span(out, w->k[i], w->s[i], w->d[i], 0);
            if (span < 0)
                return imp_fail(I, n, "the window of spatial dim %d overflows int64", i);
            split_pad(span > w->in[i] ? span - w->in[i] : 0, !strcmp(ap, "SAME_UPPER"), &p[i],
                      &p[w->nsp + i]);
        }
    } else if (strcmp(ap, "VALID")) {
        return imp_fail(I, n, "auto_pad '%s' is not supported", ap);
    }
    return 0;
}

/* Append ", name=[...]" of the nsp values v as the kiln op takes them: a
 * 1-D window gets the unit H's value `unit` first. */
static void sp_attr(kstr *a, const char *name, int nsp, const int64_t *v, int64_t unit) {
    int64_t b[2] = {unit, v[0]};
    cvt_ints_attr(a, name, nsp == 1 ? 2 : nsp, nsp == 1 ? b : v);
}

/* The same for padding p (the begins, then the ends): 0 on the unit H. */
static void pad_attr(kstr *a, int nsp, const int64_t *p) {
    int64_t b[4] = {0, p[0], 0, p[1]};
    cvt_ints_attr(a, "padding", nsp == 1 ? 4 : 2 * nsp, nsp == 1 ? b : p);
}

/* strides, padding and dilation of w */
static void window_attrs(kstr *a, const window *w) {
    sp_attr(a, "strides", w->nsp, w->s, 1);
    pad_attr(a, w->nsp, w->pads);
    sp_attr(a, "dilation", w->nsp, w->d, 1);
}

/* A 1-D tensor [N, C, L] as [N, C, 1, L] (to4), or a [N, C, 1, L] result
 * back to [N, C, L]. */
static int as_2d(imp *I, const Onnx__NodeProto *n, int x, int to4) {
    const gtensor_type *t = imp_type(I, x);
    if (x < 0 || !t)
        return -1;
    int64_t dims[4] = {t->dims[0].v, t->dims[1].v, 1, t->dims[t->ndim - 1].v};
    if (!to4)
        dims[2] = dims[3];
    return cvt_reshape_to(I, n, x, to4 ? 4 : 3, dims);
}

/* The kiln op for a window of nsp dims: "nn.<base><2 or 3>d<suffix>". */
static const char *op_name(char *buf, size_t cap, const char *base, int nsp, const char *suffix) {
    snprintf(buf, cap, "nn.%s%dd%s", base, nsp == 1 ? 2 : nsp, suffix);
    return buf;
}

/* "[v0, v1, ...]" */
static const char *ints_text(char *buf, size_t cap, int k, const int64_t *v) {
    size_t at = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < k && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (at < cap)
        snprintf(buf + at, cap - at, "]");
    return buf;
}

/* The weight's spatial dims ksp: the kernel_shape attribute, if given,
 * must be them. */
static int kernel_shape_ok(imp *I, const Onnx__NodeProto *n, int nsp, const int64_t *ksp) {
    int64_t ks[MAXSP];
    int nk = imp_attr_ints(I, n, "kernel_shape", ks, MAXSP);
    if (nk == -1)
        return 0;
    if (nk != nsp)
        return imp_fail(I, n,
                        "attribute 'kernel_shape' has %s%d values; the input has %d spatial dims",
                        nk == -2 ? "more than " : "", nk == -2 ? MAXSP : nk, nsp);
    char a[96], b[96];
    if (memcmp(ks, ksp, sizeof(int64_t) * (size_t)nsp))
        return imp_fail(I, n,
                        "attribute 'kernel_shape' %s disagrees with the weight's spatial dims %s",
                        ints_text(a, sizeof a, nsp, ks), ints_text(b, sizeof b, nsp, ksp));
    return 0;
}

/* The weight w of data x: its rank, concrete dims; its spatial dims into ksp. */
static int weight_of(imp *I, const Onnx__NodeProto *n, int x, int w, int64_t *ksp) {
    const gtensor_type *xt = imp_type(I, x), *wt = imp_type(I, w);
    if (!wt || !xt || wt->ndim != xt->ndim || !cvt_concrete(wt))
        return imp_fail(I, n, "the weight must have the data's rank and concrete dims");
    for (int d = 2; d < wt->ndim && d < 2 + MAXSP; d++)
        ksp[d - 2] = wt->dims[d].v;
    return 0;
}

/* The group attribute, at least 1, into *group. */
static int group_of(imp *I, const Onnx__NodeProto *n, int64_t *group) {
    *group = imp_attr_int(I, n, "group", 1);
    if (*group < 1)
        return imp_fail(I, n, "attribute 'group' = %lld is not at least 1", (long long)*group);
    return 0;
}

/* y (nsp-D; 1-D: [N, C, 1, L]) plus the bias b (if >= 0) on the channels,
 * as the ONNX op's output. */
static int biased(imp *I, const Onnx__NodeProto *n, int y, int b, int nsp) {
    if (y >= 0 && b >= 0) {
        int bi[2] = {y, b};
        y = imp_call(I, n, "nn.bias_add", 2, bi, "axis=1");
    }
    return nsp == 1 ? as_2d(I, n, y, 0) : y;
}

/* ---- convolutions ----------------------------------------------------------------- */

/* Conv of x by w (+ the bias b if >= 0) with node n's window and group:
 * nn.conv<k>d, or with q (x_zero_point, w_zero_point, x_scale, w_scale)
 * qnn.conv2d of 1-D and 2-D windows (-2, no error, for others). */
static int conv_call(imp *I, const Onnx__NodeProto *n, int x, int w, const int *q, int b) {
    int64_t ksp[MAXSP], group;
    window win;
    if (weight_of(I, n, x, w, ksp) < 0 || window_of(I, n, imp_type(I, x), ksp, &win) < 0 ||
        kernel_shape_ok(I, n, win.nsp, ksp) < 0 || group_of(I, n, &group) < 0)
        return -1;
    if (q && win.nsp > 2)
        return -2;
    if (win.nsp == 1 && ((x = as_2d(I, n, x, 1)) < 0 || (w = as_2d(I, n, w, 1)) < 0))
        return -1;
    kstr a;
    kstr_init(&a);
    window_attrs(&a, &win);
    kstr_printf(&a, ", groups=%lld", (long long)group);
    char op[32];
    int in[6] = {x, w, q ? q[0] : -1, q ? q[1] : -1, q ? q[2] : -1, q ? q[3] : -1};
    int c = imp_call(I, n, q ? "qnn.conv2d" : op_name(op, sizeof op, "conv", win.nsp, ""),
                     q ? 6 : 2, in, a.buf);
    kstr_free(&a);
    return biased(I, n, c, b, win.nsp);
}

/* (onnx_convert.h) */
int cvt_conv_of(imp *I, const Onnx__NodeProto *n, int x, int w, int b) {
    return conv_call(I, n, x, w, NULL, b);
}

/* (onnx_convert.h) */
int cvt_qconv_of(imp *I, const Onnx__NodeProto *n, int x, int w, const int q[4], int b) {
    return conv_call(I, n, x, w, q, b);
}

int cvt_conv(imp *I, const Onnx__NodeProto *n, int *outs) {
    return outs[0] = cvt_conv_of(I, n, imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2));
}

/* (onnx_convert.h) Zero points per output channel of ConvInteger's weight,
 * per row of MatMulInteger's A, or per column of its B. */
int cvt_int_minus_zero(imp *I, const Onnx__NodeProto *n, int x, int z, int64_t per, int zrank) {
    const gtensor_type *xt = imp_type(I, x), *zt = imp_type(I, z);
    if (!xt || (xt->dtype != KILN_INT8 && xt->dtype != KILN_UINT8))
        return imp_fail(I, n, "the inputs must be int8 or uint8, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    x = cvt_cast_to(I, n, x, KILN_INT32);
    if (z < 0)
        return x;
    if (!zt || zt->dtype != xt->dtype || !cvt_concrete(zt) || zt->ndim > 1)
        return imp_fail(I, n, "a zero point must be a %s scalar or 1-D tensor of concrete dims",
                        kiln_dtype_name(xt->dtype));
    int64_t cnt = zt->ndim ? zt->dims[0].v : 1, dims[MAXD];
    if (cnt != 1 && cnt != per)
        return imp_fail(I, n, "a zero point has %lld elements, not 1 or %lld", (long long)cnt,
                        (long long)per);
    z = cvt_cast_to(I, n, z, KILN_INT32);
    if (cnt > 1) {
        dims[0] = cnt;
        for (int d = 1; d < zrank; d++)
            dims[d] = 1;
        z = cvt_reshape_to(I, n, z, zrank, dims);
    }
    return cvt_binary_of(I, n, "subtract", x, z);
}

/* ConvTranspose: nn.conv2d/3d_transpose (1-D as 2-D). The padding comes
 * from output_shape (then pads are ignored), auto_pad (SAME: the output is
 * input * stride) or pads; from the first two it is the total padding
 * stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - out, split
 * as ONNX's reference does (SAME_UPPER: the odd one at the end); a negative
 * total grows the output with zeros. */
int cvt_conv_transpose(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), w = imp_input(I, n, 1), b = imp_input(I, n, 2);
    const gtensor_type *xt = imp_type(I, x);
    int64_t ksp[MAXSP], s[MAXSP], d[MAXSP], op[MAXSP], pads[2 * MAXSP], group;
    int nsp;
    if (weight_of(I, n, x, w, ksp) < 0 || (nsp = spatial_dims(I, n, xt)) < 0 ||
        kernel_shape_ok(I, n, nsp, ksp) < 0 || group_of(I, n, &group) < 0 ||
        sp_ints(I, n, "strides", nsp, 1, s) < 0 || sp_ints(I, n, "dilations", nsp, 1, d) < 0 ||
        sp_ints(I, n, "output_padding", nsp, 0, op) < 0 ||
        at_least(I, n, "stride", nsp, s, 1) < 0 || at_least(I, n, "dilation", nsp, d, 1) < 0 ||
        at_least(I, n, "output padding", nsp, op, 0) < 0 ||
        at_least(I, n, "kernel size", nsp, ksp, 1) < 0)
        return -1;
    char buf[32];
    const char *ap = imp_attr_str(I, n, "auto_pad", "NOTSET", buf, sizeof buf);
    int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return imp_fail(I, n, "auto_pad '%s' is not supported", ap);
    /* output_shape: the spatial dims, or with N and C first */
    int64_t os[MAXSP + 2];
    int nos = imp_attr_ints(I, n, "output_shape", os, MAXSP + 2);
    if (nos != -1 && nos != nsp && nos != nsp + 2)
        return imp_fail(I, n,
                        "attribute 'output_shape' has %s%d values; the input has %d spatial "
                        "dims",
                        nos == -2 ? "more than " : "", nos == -2 ? MAXSP + 2 : nos, nsp);
    if (nos == nsp + 2)
        memmove(os, os + 2, sizeof(int64_t) * (size_t)nsp);
    if (nos > 0 && at_least(I, n, "output size", nsp, os, 1) < 0)
        return -1;
    memset(pads, 0, sizeof pads);
    if (nos > 0 || same) {
        for (int i = 0; i < nsp; i++) {
            int64_t in = xt->dims[2 + i].v, out = nos > 0 ? os[i] : 0;
            int64_t span = ops_window_span(in, ksp[i], s[i], d[i], op[i]);
            if (span < 0 || (nos < 0 && !kiln_mul_ok(in, s[i], &out)))
                return imp_fail(I, n, "the output of spatial dim %d is empty or overflows int64",
                                i);
            split_pad(span - out, !strcmp(ap, "SAME_UPPER"), &pads[i], &pads[nsp + i]);
        }
    } else if (!strcmp(ap, "NOTSET") && pads_attr(I, n, nsp, pads) < 0) {
        return -1;
    }
    if (nsp == 1 && ((x = as_2d(I, n, x, 1)) < 0 || (w = as_2d(I, n, w, 1)) < 0))
        return -1;
    kstr a;
    kstr_init(&a);
    sp_attr(&a, "strides", nsp, s, 1);
    pad_attr(&a, nsp, pads);
    sp_attr(&a, "output_padding", nsp, op, 0);
    sp_attr(&a, "dilation", nsp, d, 1);
    kstr_printf(&a, ", groups=%lld", (long long)group);
    char name[32];
    int in[2] = {x, w};
    int y = imp_call(I, n, op_name(name, sizeof name, "conv", nsp, "_transpose"), 2, in, a.buf);
    kstr_free(&a);
    return outs[0] = biased(I, n, y, b, nsp);
}

/* ---- pooling ------------------------------------------------------------------------- */

/* MaxPool (with the Indices output: nn.max_pool2d/3d_with_argmax),
 * AveragePool and LpPool. */
int cvt_pool(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *xt = imp_type(I, x);
    int is_max = !strcmp(n->op_type, "MaxPool"), is_lp = !strcmp(n->op_type, "LpPool");
    int argmax = is_max && n->n_output > 1 && n->output[1][0];
    int64_t ksp[MAXSP];
    int nk = imp_attr_ints(I, n, "kernel_shape", ksp, MAXSP);
    window w;
    if (!xt)
        return imp_fail(I, n, "the input has no tensor type");
    if (nk != xt->ndim - 2)
        return imp_fail(I, n,
                        "attribute 'kernel_shape' has %s%d values; the %d-D input has %d "
                        "spatial dims",
                        nk == -2 ? "more than " : "", nk == -2 ? MAXSP : nk, xt->ndim,
                        xt->ndim - 2);
    if (window_of(I, n, xt, ksp, &w) < 0)
        return -1;
    int64_t p = imp_attr_int(I, n, "p", 2), order = imp_attr_int(I, n, "storage_order", 0);
    if (is_lp && p < 1)
        return imp_fail(I, n, "attribute 'p' = %lld is not at least 1", (long long)p);
    if (order != 0 && order != 1)
        return imp_fail(I, n, "attribute 'storage_order' = %lld is not 0 or 1", (long long)order);
    if (w.nsp == 1 && (x = as_2d(I, n, x, 1)) < 0)
        return -1;
    kstr a;
    kstr_init(&a);
    sp_attr(&a, "pool_size", w.nsp, w.k, 1);
    window_attrs(&a, &w);
    kstr_printf(&a, ", ceil_mode=%d", imp_attr_int(I, n, "ceil_mode", 0) != 0);
    if (is_lp)
        kstr_printf(&a, ", p=%lld", (long long)p);
    else if (argmax)
        kstr_printf(&a, ", storage_order=%lld", (long long)order);
    else if (!is_max)
        kstr_printf(&a, ", count_include_pad=%d", imp_attr_int(I, n, "count_include_pad", 0) != 0);
    char op[48];
    op_name(op, sizeof op,
            is_max  ? "max_pool"
            : is_lp ? "lp_pool"
                    : "avg_pool",
            w.nsp, argmax ? "_with_argmax" : "");
    int y = imp_call(I, n, op, 1, &x, a.buf);
    kstr_free(&a);
    if (!argmax)
        return outs[0] = w.nsp == 1 ? as_2d(I, n, y, 0) : y;
    if (cvt_tuple_outputs(I, n, y, outs) < 0)
        return -1;
    for (int k = 0; k < 2 && w.nsp == 1; k++)
        if ((outs[k] = as_2d(I, n, outs[k], 0)) < 0)
            return -1;
    return 0;
}

int cvt_global_pool(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    if (!strcmp(n->op_type, "GlobalLpPool")) {
        int64_t p = imp_attr_int(I, n, "p", 2);
        if (p < 1)
            return imp_fail(I, n, "attribute 'p' = %lld is not at least 1", (long long)p);
        char attrs[32];
        snprintf(attrs, sizeof attrs, "p=%lld", (long long)p);
        return outs[0] = imp_call(I, n, "nn.global_lp_pool2d", 1, &x, attrs);
    }
    const char *op =
        !strcmp(n->op_type, "GlobalMaxPool") ? "nn.global_max_pool2d" : "nn.global_avg_pool2d";
    return outs[0] = imp_call(I, n, op, 1, &x, NULL);
}

/* MaxUnpool's output_shape known when the package runs: unpool_dims checks
 * each value against the unpooled size `least` (a run with a smaller one
 * fails, naming the node), a binder names them, and y is padded with
 * zeros at the end of each dim to them: pads [0, ..., dims - least]. */
static int unpool_run_time(imp *I, const Onnx__NodeProto *n, int y, int nd, const int64_t *least) {
    int s = imp_input(I, n, 2);
    const gtensor_type *st = imp_type(I, s);
    if (!st || st->dtype != KILN_INT64 || st->ndim != 1 || st->dims[0].sym || st->dims[0].v != nd)
        return imp_fail(I, n, "output_shape must be an int64 vector of %d values", nd);
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "min", nd, least);
    int dims = a.oom ? imp_fail(I, n, "out of memory")
                     : cvt_bind_dims(I, n, imp_call(I, n, "unpool_dims", 1, &s, a.buf));
    kstr_free(&a);
    int64_t zeros[MAXD] = {0};
    int pads[2] = {cvt_ints_const(I, n, nd, zeros),
                   cvt_binary_of(I, n, "subtract", dims, cvt_ints_const(I, n, nd, least))};
    int in[3] = {y, imp_call(I, n, "concatenate", 2, pads, "axis=0"), dims};
    return imp_call(I, n, "nn.pad", 3, in, "");
}

/* MaxUnpool: zeros of the unpooled shape (the input's N and C and per
 * spatial dim stride * (in - 1) + kernel - pads) with each input value
 * written at its flat index (MaxPool's Indices): a scatter over the
 * flattened output. A flat index out of range is KILN_ERR_RANGE when the
 * kernel runs (the scatter checks it); of two values at one index, the
 * later one stays. With the output_shape input (a constant, or values
 * known when the package runs), each value at least the unpooled size,
 * that result is padded with zeros at the end of each dim to it, as the
 * ONNX reference implementation does. */
int cvt_max_unpool(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), ix = imp_input(I, n, 1);
    const gtensor_type *xt = imp_type(I, x), *it = imp_type(I, ix);
    /* od: cvt_const_ints writes up to MAXD values */
    int64_t k[MAXSP], s[MAXSP], pads[2 * MAXSP], od[MAXD], least[2 + MAXSP], m, total;
    int nsp;
    if ((nsp = spatial_dims(I, n, xt)) < 0)
        return -1;
    if (!cvt_concrete(xt) || !it || it->dtype != KILN_INT64 || it->ndim != xt->ndim ||
        !cvt_concrete(it))
        return imp_fail(I, n, "X must have concrete dims and I be int64 of X's rank");
    for (int d = 0; d < xt->ndim; d++)
        if (it->dims[d].v != xt->dims[d].v)
            return imp_fail(I, n, "I and X differ in dim %d", d);
    if (sp_ints(I, n, "kernel_shape", nsp, 1, k) < 0 || sp_ints(I, n, "strides", nsp, 1, s) < 0 ||
        at_least(I, n, "kernel size", nsp, k, 1) < 0 || at_least(I, n, "stride", nsp, s, 1) < 0 ||
        pads_attr(I, n, nsp, pads) < 0)
        return -1;
    int64_t xd[2 + MAXSP];
    for (int d = 0; d < xt->ndim; d++)
        xd[d] = least[d] = xt->dims[d].v;
    for (int i = 0; i < nsp; i++) {
        int64_t o = ops_window_span(xt->dims[2 + i].v, k[i], s[i], 1, 0);
        if (o < 0 || __builtin_sub_overflow(o, pads[i], &o) ||
            __builtin_sub_overflow(o, pads[nsp + i], &o) || o < 1)
            return imp_fail(I, n, "the output of spatial dim %d is empty or overflows", i);
        least[2 + i] = o;
    }
    if (!cvt_numel(I, n, xt->ndim, xd, &m) || !cvt_numel(I, n, xt->ndim, least, &total))
        return -1;
    if (total < 1)
        return imp_fail(I, n, "the output is empty");
    char attrs[64];
    snprintf(attrs, sizeof attrs, "shape=[%lld]", (long long)total);
    int zero = cvt_float_const_like(I, n, x, 0);
    int in[3] = {imp_call(I, n, "broadcast_to", 1, &zero, attrs), cvt_reshape_to(I, n, ix, 1, &m),
                 cvt_reshape_to(I, n, x, 1, &m)};
    int y =
        cvt_reshape_to(I, n, imp_call(I, n, "scatter_elements", 3, in, "axis=0"), xt->ndim, least);
    if (imp_ninputs(n) < 3)
        return outs[0] = y;
    int no = cvt_const_ints(I, n, 2, od);
    if (no == -2)
        return outs[0] = unpool_run_time(I, n, y, xt->ndim, least);
    if (no == -1)
        return imp_fail(I, n, "output_shape is missing");
    if (no != xt->ndim)
        return imp_fail(I, n, "output_shape has %d values for a %d-D input", no, xt->ndim);
    int64_t pw[2 * (2 + MAXSP)] = {0}, count;
    int same = 1;
    for (int d = 0; d < no; d++) {
        if (od[d] < least[d])
            return imp_fail(I, n, "output_shape[%d] = %lld is smaller than the unpooled size %lld",
                            d, (long long)od[d], (long long)least[d]);
        pw[2 * d + 1] = od[d] - least[d];
        same &= od[d] == least[d];
    }
    if (!cvt_numel(I, n, no, od, &count))
        return -1;
    if (same)
        return outs[0] = y;
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "pad_width", 2 * no, pw);
    outs[0] = a.oom ? imp_fail(I, n, "out of memory") : imp_call(I, n, "nn.pad", 1, &y, a.buf);
    kstr_free(&a);
    return outs[0];
}
