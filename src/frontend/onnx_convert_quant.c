/* onnx_convert_quant.c: the ONNX converters of the quantization ops:
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul
 * and QLinearConv, each built from kiln ops exactly (cast, divide,
 * multiply, round (half to even, like numpy's rint), clip, and the int32
 * matmul and convolution that MatMulInteger and ConvInteger use). The
 * quantized types are int8 and uint8 (ONNX's up to opset 18). Scales are
 * float32 and zero points of the quantized type; a per-axis (per-row,
 * per-column, per-channel) parameter is a 1-D tensor, reshaped to
 * [per, 1, ..., 1] so it broadcasts along its axis. The converter table is
 * in onnx_table.c. */
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

/* Parameter p (1 or per elements) shaped to broadcast against its tensor:
 * 0-d if it has one element, else [per, 1, ..., 1] of rank `rank`. */
static int param_shaped(imp *I, const Onnx__NodeProto *n, int p, int64_t per, int rank,
                        const char *what) {
    int64_t cnt = param_count(I, n, p, what), dims[MAXD];
    if (cnt < 0)
        return -1;
    if (cnt != 1 && per == 1)
        return imp_fail(I, n, "%s must have one element, not %lld", what, (long long)cnt);
    if (cnt != 1 && cnt != per)
        return imp_fail(I, n, "%s has %lld elements, not 1 or %lld", what, (long long)cnt,
                        (long long)per);
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

/* QuantizeLinear: saturate(round(x / y_scale) + y_zero_point), computed in
 * float32 (an int32 x is converted first); y has the zero point's dtype,
 * uint8 without one. */
int cvt_quantize_linear(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), s = imp_input(I, n, 1), z = imp_input(I, n, 2), rank;
    const gtensor_type *xt = imp_type(I, x), *zt = imp_type(I, z);
    kiln_dtype qdt = z >= 0 && zt ? zt->dtype : KILN_UINT8;
    double lo = 0, hi = 0;
    int64_t per;
    if (!xt || (xt->dtype != KILN_FLOAT32 && xt->dtype != KILN_INT32))
        return imp_fail(I, n, "x must be float32 or int32, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    if ((z >= 0 && !zt) || qrange(I, n, qdt, "the zero point", &lo, &hi) < 0 ||
        axis_layout(I, n, x, s, &per, &rank) < 0 || same_count(I, n, s, z, "the zero point") < 0)
        return -1;
    if ((s = scale_shaped(I, n, s, per, rank)) < 0 ||
        (z >= 0 && (z = param_shaped(I, n, z, per, rank, "the zero point")) < 0))
        return -1;
    int q = cvt_binary_of(I, n, "divide", cvt_cast_to(I, n, x, KILN_FLOAT32), s);
    return outs[0] = saturate_of(I, n, q, z, 0, qdt, lo, hi);
}

/* DequantizeLinear: (x - x_zero_point) * x_scale in float32, x and the
 * zero point converted to float32 first (exact for int8 and uint8). */
int cvt_dequantize_linear(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), s = imp_input(I, n, 1), z = imp_input(I, n, 2), rank;
    const gtensor_type *xt = imp_type(I, x), *zt = imp_type(I, z);
    int64_t per;
    if (!xt || (xt->dtype != KILN_INT8 && xt->dtype != KILN_UINT8 && xt->dtype != KILN_INT32))
        return imp_fail(I, n, "x must be int8, uint8 or int32, not %s",
                        xt ? kiln_dtype_name(xt->dtype) : "a tuple");
    if (z >= 0 && (!zt || zt->dtype != xt->dtype))
        return imp_fail(I, n, "the zero point must be %s like x", kiln_dtype_name(xt->dtype));
    if (axis_layout(I, n, x, s, &per, &rank) < 0 || same_count(I, n, s, z, "the zero point") < 0 ||
        (s = scale_shaped(I, n, s, per, rank)) < 0 ||
        (z >= 0 && (z = param_shaped(I, n, z, per, rank, "the zero point")) < 0))
        return -1;
    int y = cvt_cast_to(I, n, x, KILN_FLOAT32);
    if (y < 0 || (z >= 0 && ((z = cvt_cast_to(I, n, z, KILN_FLOAT32)) < 0 ||
                             (y = cvt_binary_of(I, n, "subtract", y, z)) < 0)))
        return -1;
    return outs[0] = cvt_binary_of(I, n, "multiply", y, s);
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

/* QLinearMatMul: the int32 product of a - a_zero_point by b - b_zero_point
 * (as MatMulInteger), requantized. a's and y's parameters are one or one
 * per row of a, b's one or one per column of b. */
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
 * w_zero_point (one, or one per output channel) plus the int32 bias B (as
 * ConvInteger; the padding is x's zero point), requantized. */
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
    if (params_paired(I, n, in) < 0)
        return -1;
    /* the output has the weight's rank; w's scale is per output channel */
    int sx, sw, sy, zy;
    if ((sx = scale_shaped(I, n, in[1], 1, 0)) < 0 ||
        (sw = scale_shaped(I, n, in[4], m, wt->ndim - 1)) < 0 ||
        (sy = scale_shaped(I, n, in[6], 1, 0)) < 0 ||
        (zy = param_shaped(I, n, in[7], 1, 0, "y_zero_point")) < 0)
        return -1;
    int x = cvt_int_minus_zero(I, n, in[0], in[2], 1, 1);
    int w = x < 0 ? -1 : cvt_int_minus_zero(I, n, in[3], in[5], m, wt->ndim);
    int acc = w < 0 ? -1 : cvt_conv_of(I, n, x, w, in[8]);
    return outs[0] = requantize(I, n, acc, sx, sw, sy, zy);
}
