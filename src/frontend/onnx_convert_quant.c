/* onnx_convert_quant.c: the ONNX converters of the quantization ops:
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
 * QLinearConv and ConvInteger. They become kiln's quantized ops
 * (src/ops/qnn.c): qnn.quantize, qnn.dequantize, and qnn.conv2d or
 * qnn.batch_matmul followed by qnn.requantize, whose computes follow
 * ONNX's reference exactly (rounding half to even). What those ops do not
 * take is built from plain kiln ops instead (cast, divide, multiply,
 * round, clip, and the int32 matmul and convolution over centered
 * operands): a 3-D QLinearConv or ConvInteger, a QLinearMatMul of a 1-D
 * operand or with parameters per row of a, and DynamicQuantizeLinear.
 * The quantized types are int8 and uint8 (ONNX's up to opset 18). Scales
 * are float32 and zero points of the quantized type; in the plain-op
 * forms a per-axis (per-row, per-column, per-channel) parameter is a 1-D
 * tensor reshaped to [per, 1, ..., 1] so it broadcasts along its axis.
 * The converter table is in onnx_table.c. */
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

/* ---- parameters ------------------------------------------------------------------- */

/* The range [*lo, *hi] of the quantized dtype dt (`what` in the error). */
static int qrange(imp *I, const Onnx__NodeProto *n, kiln_dtype dt, const char *what, double *lo,
                  double *hi) {
    if (dt == KILN_UINT8 || dt == KILN_INT8) {
        *lo = dt == KILN_UINT8 ? 0 : -128;
        *hi = dt == KILN_UINT8 ? 255 : 127;
        return 0;
    }
    return imp_fail(I, n, "%s must be int8 or uint8, not %s", what, kiln_dtype_name(dt));
}

/* The element count of a scale or zero point p: a scalar or a 1-D tensor
 * of concrete dims; -1 with an error naming it (`what`). */
static int64_t param_count(imp *I, const Onnx__NodeProto *n, int p, const char *what) {
    const gtensor_type *t = imp_type(I, p);
    if (!t || t->ndim > 1 || !cvt_concrete(t))
        return imp_fail(I, n, "%s must be a scalar or a 1-D tensor of concrete dims", what);
    return t->ndim ? t->dims[0].v : 1;
}

/* A zero point z (if >= 0) has as many elements as its scale s. */
static int same_count(imp *I, const Onnx__NodeProto *n, int s, int z, const char *what) {
    int64_t cs = param_count(I, n, s, "a scale"), cz = z < 0 ? cs : param_count(I, n, z, what);
    if (cs < 0 || cz < 0)
        return -1;
    if (cs != cz)
        return imp_fail(I, n, "%s has %lld elements; its scale has %lld", what, (long long)cz,
                        (long long)cs);
    return 0;
}

/* The element count of parameter p (`what` in errors): 1 or per; -1 with
 * an error otherwise. */
static int64_t count_of(imp *I, const Onnx__NodeProto *n, int p, int64_t per, const char *what) {
    int64_t cnt = param_count(I, n, p, what);
    if (cnt < 0)
        return -1;
    if (cnt != 1 && per == 1)
        return imp_fail(I, n, "%s must have one element, not %lld", what, (long long)cnt);
    if (cnt != 1 && cnt != per)
        return imp_fail(I, n, "%s has %lld elements, not 1 or %lld", what, (long long)cnt,
                        (long long)per);
    return cnt;
}

/* Parameter p (a scale if is_scale, else a zero point) has 1 or `per`
 * elements, and a scale is float32: 0, or -1 with an error. */
static int check_count(imp *I, const Onnx__NodeProto *n, int p, int64_t per, int is_scale) {
    const gtensor_type *t = imp_type(I, p);
    if (is_scale && (!t || t->dtype != KILN_FLOAT32))
        return imp_fail(I, n, "a scale must be float32, not %s",
                        t ? kiln_dtype_name(t->dtype) : "a tuple");
    return count_of(I, n, p, per, is_scale ? "a scale" : "a zero point") < 0 ? -1 : 0;
}

/* Parameter p (1 or per elements) shaped to broadcast against its tensor:
 * 0-d if it has one element, else [per, 1, ..., 1] of rank `rank`. */
static int param_shaped(imp *I, const Onnx__NodeProto *n, int p, int64_t per, int rank,
                        const char *what) {
    int64_t cnt = count_of(I, n, p, per, what), dims[MAXD];
    if (cnt < 0)
        return -1;
    if (cnt == 1)
        return imp_type(I, p)->ndim ? cvt_reshape_to(I, n, p, 0, dims) : p;
    dims[0] = cnt;
    for (int d = 1; d < rank; d++)
        dims[d] = 1;
    return cvt_reshape_to(I, n, p, rank, dims);
}

/* A float32 scale s, shaped as param_shaped does. */
static int scale_shaped(imp *I, const Onnx__NodeProto *n, int s, int64_t per, int rank) {
    const gtensor_type *t = imp_type(I, s);
    if (!t || t->dtype != KILN_FLOAT32)
        return imp_fail(I, n, "a scale must be float32, not %s",
                        t ? kiln_dtype_name(t->dtype) : "a tuple");
    return param_shaped(I, n, s, per, rank, "a scale");
}

/* The layout of the scale s of x in QuantizeLinear and DequantizeLinear:
 * one element (*per = 1), or from opset 13 one per index of dim `axis` of
 * x, as params of rank *rank. */
static int axis_layout(imp *I, const Onnx__NodeProto *n, int x, int s, int64_t *per, int *rank) {
    const gtensor_type *xt = imp_type(I, x);
    int64_t cnt = param_count(I, n, s, "the scale");
    *per = 1;
    *rank = 0;
    if (cnt < 0)
        return -1;
    if (cnt == 1)
        return 0;
    if (I->opset < 13)
        return imp_fail(I, n, "the scale must have one element before opset 13, not %lld",
                        (long long)cnt);
    int64_t axis;
    if (cvt_axis_attr(I, n, 1, xt->ndim, &axis) < 0)
        return -1;
    if (xt->dims[axis].sym || xt->dims[axis].v != cnt)
        return imp_fail(I, n, "the scale has %lld elements; dim %lld of x must have as many",
                        (long long)cnt, (long long)axis);
    *per = cnt;
    *rank = xt->ndim - (int)axis;
    return 0;
}

/* v, with the zero point z (if >= 0) added before or after rounding half
 * to even (zp_first), saturated to [lo, hi] and cast to the quantized
 * dtype dt. */
static int saturate_of(imp *I, const Onnx__NodeProto *n, int v, int z, int zp_first, kiln_dtype dt,
                       double lo, double hi) {
    const gtensor_type *t = imp_type(I, v);
    if (v < 0 || !t)
        return -1;
    int zf = -1;
    if (z >= 0 && (zf = cvt_cast_to(I, n, z, t->dtype)) < 0)
        return -1;
    if (zf >= 0 && zp_first)
        v = cvt_binary_of(I, n, "add", v, zf);
    v = cvt_unary_of(I, n, "round", v);
    if (zf >= 0 && !zp_first)
        v = cvt_binary_of(I, n, "add", v, zf);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "a_min=%.1f, a_max=%.1f", lo, hi);
    v = v < 0 ? -1 : imp_call(I, n, "clip", 1, &v, attrs);
    return cvt_cast_to(I, n, v, dt);
}

/* ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ------------------------- */

/* The axis of a per-axis parameter of x (attribute axis, default 1), or
 * -1 for a per-tensor one; -2 with an error. */
static int64_t param_axis(imp *I, const Onnx__NodeProto *n, int x, int64_t per) {
    int64_t axis = -1;
    const gtensor_type *xt = imp_type(I, x);
    if (per > 1 && cvt_axis_attr(I, n, 1, xt->ndim, &axis) < 0)
        return -2;
    return axis;
}

/* QuantizeLinear: qnn.quantize, saturate(round(x / y_scale) +
 * y_zero_point) in float32 (an int32 x is converted first); y has the zero
 * point's dtype, uint8 without one. */
int cvt_quantize_linear(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), s = imp_input(I, n, 1), z = imp_input(I, n, 2), rank;
    const gtensor_type *xt = imp_type(I, x), *zt = imp_type(I, z), *st = imp_type(I, s);
    kiln_dtype qdt = z >= 0 && zt ? zt->dtype : KILN_UINT8;
    double lo = 0, hi = 0;
    int64_t per, axis;
    if (!xt || (xt->dtype != KILN_FLOAT32 && xt->dtype != KILN_INT32))
        return imp_fail(I, n, "x must be float32 or int32, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    if (!st || st->dtype != KILN_FLOAT32)
        return imp_fail(I, n, "a scale must be float32, not %s",
                        st ? kiln_dtype_name(st->dtype) : "a tuple");
    if ((z >= 0 && !zt) || qrange(I, n, qdt, "the zero point", &lo, &hi) < 0 ||
        axis_layout(I, n, x, s, &per, &rank) < 0 || same_count(I, n, s, z, "the zero point") < 0 ||
        (axis = param_axis(I, n, x, per)) < -1)
        return -1;
    if ((xt->dtype == KILN_INT32 && (x = cvt_cast_to(I, n, x, KILN_FLOAT32)) < 0) ||
        (z < 0 && (z = imp_scalar_const(I, n, qdt, 0)) < 0))
        return -1;
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=%lld, out_dtype=\"%s\"", (long long)axis,
             kiln_dtype_name(qdt));
    int in[3] = {x, s, z};
    return outs[0] = imp_call(I, n, "qnn.quantize", 3, in, attrs);
}

/* DequantizeLinear: qnn.dequantize, (x - x_zero_point) * x_scale in
 * float32. */
int cvt_dequantize_linear(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), s = imp_input(I, n, 1), z = imp_input(I, n, 2), rank;
    const gtensor_type *xt = imp_type(I, x), *zt = imp_type(I, z), *st = imp_type(I, s);
    int64_t per, axis;
    if (!xt || (xt->dtype != KILN_INT8 && xt->dtype != KILN_UINT8 && xt->dtype != KILN_INT32))
        return imp_fail(I, n, "x must be int8, uint8 or int32, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    if (z >= 0 && (!zt || zt->dtype != xt->dtype))
        return imp_fail(I, n, "the zero point must be %s like x", kiln_dtype_name(xt->dtype));
    if (!st || st->dtype != KILN_FLOAT32)
        return imp_fail(I, n, "a scale must be float32, not %s",
                        st ? kiln_dtype_name(st->dtype) : "a tuple");
    if (axis_layout(I, n, x, s, &per, &rank) < 0 || same_count(I, n, s, z, "the zero point") < 0 ||
        (axis = param_axis(I, n, x, per)) < -1 ||
        (z < 0 && (z = imp_scalar_const(I, n, xt->dtype, 0)) < 0))
        return -1;
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    int in[3] = {x, s, z};
    return outs[0] = imp_call(I, n, "qnn.dequantize", 3, in, attrs);
}

/* DynamicQuantizeLinear (uint8): over the range [min(0, min x), max(0,
 * max x)], y_scale = range / 255 (1 for an all-zero x, as ONNX's reference
 * defines it), y_zero_point = round(clip(-min / y_scale, 0, 255)) and y
 * = QuantizeLinear(x, y_scale, y_zero_point); all in float32. */
int cvt_dynamic_quantize_linear(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *xt = imp_type(I, x);
    if (!xt || xt->dtype != KILN_FLOAT32)
        return imp_fail(I, n, "x must be float32, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    /* each step checked in turn: a later call that succeeds clears the error */
    int zero, one, c255, mx, mn, range, in[3], scale, zp;
    if ((zero = imp_scalar_const(I, n, KILN_FLOAT32, 0)) < 0 ||
        (one = imp_scalar_const(I, n, KILN_FLOAT32, 1)) < 0 ||
        (c255 = imp_scalar_const(I, n, KILN_FLOAT32, 255)) < 0 ||
        (mx = cvt_binary_of(I, n, "maximum", imp_call(I, n, "max", 1, &x, NULL), zero)) < 0 ||
        (mn = cvt_binary_of(I, n, "minimum", imp_call(I, n, "min", 1, &x, NULL), zero)) < 0 ||
        (range = cvt_binary_of(I, n, "subtract", mx, mn)) < 0 ||
        (in[0] = cvt_binary_of(I, n, "equal", mx, mn)) < 0 ||
        (in[2] = cvt_binary_of(I, n, "divide", range, c255)) < 0 ||
        (in[1] = one, scale = imp_call(I, n, "where", 3, in, NULL)) < 0 ||
        (zp = cvt_binary_of(I, n, "divide", mn, scale)) < 0 ||
        (zp = cvt_binary_of(I, n, "subtract", zero, zp)) < 0 ||
        (zp = imp_call(I, n, "clip", 1, &zp, "a_min=0.0, a_max=255.0")) < 0 ||
        (zp = cvt_unary_of(I, n, "round", zp)) < 0 ||
        (outs[0] = saturate_of(I, n, cvt_binary_of(I, n, "divide", x, scale), zp, 0, KILN_UINT8, 0,
                               255)) < 0)
        return -1;
    outs[1] = scale;
    return (outs[2] = cvt_cast_to(I, n, zp, KILN_UINT8)) < 0 ? -1 : 0;
}

/* ---- QLinearMatMul, QLinearConv ------------------------------------------------------ */

/* Each zero point of QLinearMatMul's or QLinearConv's inputs in[] (its
 * three scale and zero point pairs at 1, 4 and 6) has its scale's count. */
static int params_paired(imp *I, const Onnx__NodeProto *n, const int *in) {
    static const int scale_at[3] = {1, 4, 6};
    for (int k = 0; k < 3; k++)
        if (same_count(I, n, in[scale_at[k]], in[scale_at[k] + 1], "a zero point") < 0)
            return -1;
    return 0;
}

/* The int32 accumulator acc requantized: acc * (sa * sb / sy) (the
 * multiplier in float32, the product in float64) plus y_zero_point zy,
 * rounded half to even and saturated to zy's dtype, as ONNX's reference
 * computes it. sa, sb, sy are shaped already. */
static int requantize(imp *I, const Onnx__NodeProto *n, int acc, int sa, int sb, int sy, int zy) {
    const gtensor_type *zt = imp_type(I, zy);
    double lo = 0, hi = 0;
    if (acc < 0 || !zt || qrange(I, n, zt->dtype, "y_zero_point", &lo, &hi) < 0)
        return -1;
    int m, a;
    if ((m = cvt_binary_of(I, n, "multiply", sa, sb)) < 0 ||
        (m = cvt_binary_of(I, n, "divide", m, sy)) < 0 ||
        (m = cvt_cast_to(I, n, m, KILN_FLOAT64)) < 0 ||
        (a = cvt_cast_to(I, n, acc, KILN_FLOAT64)) < 0)
        return -1;
    return saturate_of(I, n, cvt_binary_of(I, n, "multiply", a, m), zy, 1, zt->dtype, lo, hi);
}

/* The int32 accumulator acc requantized by qnn.requantize with
 * compute_dtype float64 (ONNX's reference: the multiplier sa * sb / sy in
 * float32, the product in float64, y_zero_point added before rounding
 * half to even), per channel along `axis` where a scale is. */
static int qnn_requantize(imp *I, const Onnx__NodeProto *n, int acc, int sa, int sb, int sy, int zy,
                          int64_t axis) {
    const gtensor_type *zt = imp_type(I, zy);
    double lo = 0, hi = 0;
    if (acc < 0 || !zt || qrange(I, n, zt->dtype, "y_zero_point", &lo, &hi) < 0)
        return -1;
    int in[5] = {acc, cvt_binary_of(I, n, "multiply", sa, sb),
                 imp_scalar_const(I, n, KILN_INT32, 0), sy, zy};
    if (in[1] < 0 || in[2] < 0)
        return -1;
    char attrs[128];
    snprintf(attrs, sizeof attrs, "axis=%lld, out_dtype=\"%s\", compute_dtype=\"float64\"",
             (long long)axis, kiln_dtype_name(zt->dtype));
    return imp_call(I, n, "qnn.requantize", 5, in, attrs);
}

/* A zero point input z, or (absent) a scalar 0 of x's dtype. */
static int zero_or(imp *I, const Onnx__NodeProto *n, int z, int x) {
    const gtensor_type *xt = imp_type(I, x);
    if (z >= 0 || !xt)
        return z >= 0 ? z : -1;
    return imp_scalar_const(I, n, xt->dtype, 0);
}

/* QLinearMatMul: the int32 product of a - a_zero_point by b - b_zero_point
 * (qnn.batch_matmul), requantized. a's and y's parameters are one or one
 * per row of a, b's one or one per column of b. Operands of rank 2 and up
 * with a and y per tensor become qnn ops; the rest plain ops. */
int cvt_qlinear_matmul(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[8];
    for (int i = 0; i < 8; i++)
        in[i] = imp_input(I, n, i);
    const gtensor_type *at = imp_type(I, in[0]), *bt = imp_type(I, in[3]);
    if (!at || !bt || at->ndim < 1 || bt->ndim < 1)
        return imp_fail(I, n, "both inputs need a tensor type of rank >= 1");
    gdim rows = at->ndim > 1 ? at->dims[at->ndim - 2] : (gdim){1, NULL};
    gdim cols = bt->ndim > 1 ? bt->dims[bt->ndim - 1] : (gdim){1, NULL};
    int64_t nr = rows.sym ? 1 : rows.v, nc = cols.sym ? 1 : cols.v;
    int rrank = bt->ndim > 1 ? 2 : 1; /* a per-row parameter against the product */
    if (params_paired(I, n, in) < 0)
        return -1;
    int64_t ca = param_count(I, n, in[1], "a_scale"), cy = param_count(I, n, in[6], "y_scale");
    int64_t cb = param_count(I, n, in[4], "b_scale");
    if (ca < 0 || cy < 0 || cb < 0)
        return -1;
    if (at->ndim >= 2 && bt->ndim >= 2 && ca == 1 && cy == 1) {
        if (check_count(I, n, in[4], nc, 1) < 0 ||
            (in[5] >= 0 && check_count(I, n, in[5], nc, 0) < 0))
            return -1;
        int za = zero_or(I, n, in[2], in[0]), zb = zero_or(I, n, in[5], in[3]);
        int q[6] = {in[0], in[3], za, zb, in[1], in[4]};
        if (za < 0 || zb < 0)
            return -1;
        int acc = imp_call(I, n, "qnn.batch_matmul", 6, q, NULL);
        const gtensor_type *t = acc < 0 ? NULL : imp_type(I, acc);
        return outs[0] = t ? qnn_requantize(I, n, acc, in[1], in[4], in[6], in[7],
                                            cb > 1 ? t->ndim - 1 : -1)
                           : -1;
    }
    int sa, sb, sy, zy;
    if ((sa = scale_shaped(I, n, in[1], nr, rrank)) < 0 ||
        (sb = scale_shaped(I, n, in[4], nc, 1)) < 0 ||
        (sy = scale_shaped(I, n, in[6], nr, rrank)) < 0 ||
        (zy = param_shaped(I, n, in[7], nr, rrank, "y_zero_point")) < 0)
        return -1;
    int a = cvt_int_minus_zero(I, n, in[0], in[2], nr, 2);
    int b = a < 0 ? -1 : cvt_int_minus_zero(I, n, in[3], in[5], nc, 1);
    int acc = b < 0 ? -1 : cvt_matmul_of(I, n, a, b);
    return outs[0] = requantize(I, n, acc, sa, sb, sy, zy);
}

/* QLinearConv: the int32 convolution of x - x_zero_point by w -
 * w_zero_point (one, or one per output channel) plus the int32 bias B, the
 * padding counting as x's zero point (qnn.conv2d), requantized. A 3-D one
 * is built from plain ops, as ConvInteger's. */
int cvt_qlinear_conv(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[9];
    for (int i = 0; i < 9; i++)
        in[i] = imp_input(I, n, i);
    const gtensor_type *wt = imp_type(I, in[3]), *bt = imp_type(I, in[8]);
    if (!wt || wt->ndim < 3 || wt->dims[0].sym)
        return imp_fail(I, n, "the weight must have rank >= 3 and concrete dims");
    if (in[8] >= 0 && (!bt || bt->dtype != KILN_INT32))
        return imp_fail(I, n, "the bias B must be int32");
    int64_t m = wt->dims[0].v;
    if (params_paired(I, n, in) < 0 || check_count(I, n, in[1], 1, 1) < 0 ||
        check_count(I, n, in[2], 1, 0) < 0 || check_count(I, n, in[4], m, 1) < 0 ||
        check_count(I, n, in[5], m, 0) < 0 || check_count(I, n, in[6], 1, 1) < 0 ||
        check_count(I, n, in[7], 1, 0) < 0)
        return -1;
    int q[4] = {zero_or(I, n, in[2], in[0]), zero_or(I, n, in[5], in[3]), in[1], in[4]};
    if (q[0] < 0 || q[1] < 0)
        return -1;
    int acc = cvt_qconv_of(I, n, in[0], in[3], q, in[8]);
    if (acc != -2)
        return outs[0] = qnn_requantize(I, n, acc, in[1], in[4], in[6], in[7], 1);
    /* 3-D: plain ops; the output has the weight's rank; w's scale is per
       output channel */
    int sx, sw, sy, zy;
    if ((sx = scale_shaped(I, n, in[1], 1, 0)) < 0 ||
        (sw = scale_shaped(I, n, in[4], m, wt->ndim - 1)) < 0 ||
        (sy = scale_shaped(I, n, in[6], 1, 0)) < 0 ||
        (zy = param_shaped(I, n, in[7], 1, 0, "y_zero_point")) < 0)
        return -1;
    int x = cvt_int_minus_zero(I, n, in[0], in[2], 1, 1);
    int w = x < 0 ? -1 : cvt_int_minus_zero(I, n, in[3], in[5], m, wt->ndim);
    int acc3 = w < 0 ? -1 : cvt_conv_of(I, n, x, w, in[8]);
    return outs[0] = requantize(I, n, acc3, sx, sw, sy, zy);
}

/* ConvInteger: qnn.conv2d with unit scales (the int32 convolution of
 * x - x_zero_point by w - w_zero_point, per output channel or one; the
 * padding is x's zero point, so it adds 0, as ONNX Runtime computes it);
 * a 3-D one from plain ops. */
int cvt_conv_integer(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), w = imp_input(I, n, 1);
    const gtensor_type *wt = imp_type(I, w), *xt = imp_type(I, x);
    if (!wt || wt->ndim < 1 || wt->dims[0].sym)
        return imp_fail(I, n, "the weight must have concrete dims");
    for (int k = 0; k < 2; k++) {
        const gtensor_type *t = k ? wt : xt;
        if (!t || (t->dtype != KILN_INT8 && t->dtype != KILN_UINT8))
            return imp_fail(I, n, "the inputs must be int8 or uint8, not %s",
                            t ? kiln_dtype_name(t->dtype) : "a tuple");
    }
    int zx = imp_input(I, n, 2), zw = imp_input(I, n, 3);
    if ((zx >= 0 && check_count(I, n, zx, 1, 0) < 0) ||
        (zw >= 0 && check_count(I, n, zw, wt->dims[0].v, 0) < 0))
        return -1;
    int q[4] = {zero_or(I, n, zx, x), zero_or(I, n, zw, w), imp_scalar_const(I, n, KILN_FLOAT32, 1),
                imp_scalar_const(I, n, KILN_FLOAT32, 1)};
    if (q[0] < 0 || q[1] < 0 || q[2] < 0 || q[3] < 0)
        return -1;
    int acc = cvt_qconv_of(I, n, x, w, q, -1);
    if (acc != -2)
        return outs[0] = acc;
    x = cvt_int_minus_zero(I, n, x, imp_input(I, n, 2), 1, 1);
    w = x < 0 ? -1 : cvt_int_minus_zero(I, n, w, imp_input(I, n, 3), wt->dims[0].v, wt->ndim);
    return outs[0] = w < 0 ? -1 : cvt_conv_of(I, n, x, w, -1);
}
