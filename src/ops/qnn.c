/* qnn.c: the quantized ops (Relay's QNN dialect): qnn.quantize,
 * qnn.dequantize, qnn.requantize, qnn.conv2d, qnn.dense, qnn.batch_matmul,
 * qnn.add, qnn.mul and qnn.concatenate. A quantized tensor q stands for
 * the reals (q - zero_point) * scale. Scales are float32 and zero points
 * integers (int8, uint8 or int32), each a scalar (a 0-D tensor or one
 * element: per tensor) or a 1-D tensor along the op's `axis` (per
 * channel: a convolution's output channels, a dense's units).
 *
 * The computes here are the ops' definitions, exact and unfused; rounding
 * is to nearest, half to even (numpy's rint), as ONNX's QuantizeLinear and
 * ONNX Runtime's requantization (float32 multiplier) do:
 *   quantize    q = clamp(rint(x / scale) + zp, range of out_dtype)
 *   dequantize  x = float32(q - zp) * scale
 *   requantize  q' = clamp(rint(float32(q - zp) * (scale / out_scale)) + out_zp)
 *               (compute_dtype "float32": ONNX Runtime's), or with
 *               compute_dtype "float64" clamp(rint(float64(q - zp) * m + out_zp)),
 *               the multiplier m in float32 (ONNX's reference QLinearConv and
 *               QLinearMatMul: the zero point added before rounding)
 *   conv2d, dense, batch_matmul: the int32 sum of (x - x_zp) * (w - w_zp),
 *               padding counting as x_zp (adding 0)
 *   add, mul    the reals of both inputs added (multiplied), quantized to
 *               the output's scale and zero point
 *   concatenate each input requantized to the output's parameters, joined
 * qnn.quantize and qnn.requantize take rounding="TFLITE" for TFLite's
 * definitions: quantize rounds half away from zero (std::round, TFLite's
 * AffineQuantize); requantize is TFLite's integer requantization,
 *   q' = clamp(MultiplyByQuantizedMultiplier(q - zp, m0, shift) + out_zp)
 * with m0 (a 31-bit fixed-point fraction) and shift from QuantizeMultiplier
 * of float64(scale) / float64(out_scale), as fixed_point_multiply (below)
 * computes it. fixed_point_multiply(x, multiplier, shift) is that multiply
 * on int32 tensors: TFLite's double rounding (rounding="TFLITE", the
 * default), or TVM's single rounding half up (rounding="UPWARD").
 * The quantized convolution, dense and matmul take the scales too (they
 * are unused by the sum), so that the requantize after them and the
 * graph's passes see one op with all its parameters, as in Relay. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define QCONCAT_MAX 64
/* the products' variants; qnn.conv2d's is also its spatial rank, which
   nn.conv2d's relation and compute read */
enum { QP_DENSE = 0, QP_BMM = 1, QP_CONV2D = 2 };

/* ---- parameters ------------------------------------------------------------------ */

enum { Q_QUANTIZE, Q_DEQUANTIZE, Q_REQUANTIZE, Q_ADD, Q_MUL };

static const attr_schema quantize_attrs[] = {{"axis", GA_INT, 0, "-1"},
                                             {"out_dtype", GA_STR, 0, "\"int8\""},
                                             {"rounding", GA_STR, 0, "\"TONEAREST\""},
                                             {NULL, 0, 0, NULL}};
static const attr_schema fixed_point_attrs[] = {{"rounding", GA_STR, 0, "\"TFLITE\""},
                                                {NULL, 0, 0, NULL}};
static const attr_schema dequantize_attrs[] = {{"axis", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};
static const attr_schema requantize_attrs[] = {{"axis", GA_INT, 0, "-1"},
                                               {"out_dtype", GA_STR, 0, "\"int8\""},
                                               {"rounding", GA_STR, 0, "\"TONEAREST\""},
                                               {"compute_dtype", GA_STR, 0, "\"float32\""},
                                               {NULL, 0, 0, NULL}};
static const attr_schema binary_attrs[] = {{"out_dtype", GA_STR, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema qconv_attrs[] = {
    {"strides", GA_INTS, 0, "[1, 1]"},      {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},
    {"dilation", GA_INTS, 0, "[1, 1]"},     {"groups", GA_INT, 0, "1"},
    {"channels", GA_INT, 0, NULL},          {"kernel_size", GA_INTS, 0, NULL},
    {"data_layout", GA_STR, 0, "\"NCHW\""}, {"kernel_layout", GA_STR, 0, "\"OIHW\""},
    {"out_dtype", GA_STR, 0, "\"int32\""},  {NULL, 0, 0, NULL}};
static const attr_schema qdense_attrs[] = {
    {"units", GA_INT, 0, NULL}, {"out_dtype", GA_STR, 0, "\"int32\""}, {NULL, 0, 0, NULL}};
static const attr_schema qbmm_attrs[] = {
    {"transpose_b", GA_INT, 0, "0"}, {"out_dtype", GA_STR, 0, "\"int32\""}, {NULL, 0, 0, NULL}};
static const attr_schema qconcat_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static int is_quant_dtype(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_INT32;
}

/* The dtype of string attribute `name` (default def), one of int8, uint8
 * or int32; 0 with an error otherwise. */
static int quant_dtype_attr(const gnode *call, const char *name, const char *def, kiln_dtype *dt) {
    const char *s = graph_attr_str(call, name, def);
    if (kiln_dtype_parse(s, dt) == KILN_OK && is_quant_dtype(*dt))
        return 1;
    ops_fail("%s '%s' is not int8, uint8 or int32", name, s);
    return 0;
}

/* In a relation: input i (a scale if is_scale, else a zero point) is a
 * scalar or a 1-D tensor of 1 or `per` elements (per < 0: of any length);
 * its element count goes to *count. */
static int check_param(const gtype *const *in, int i, int is_scale, int64_t per, int64_t *count) {
    rel_result r = REL_OK;
    const gtensor_type *t = ops_tensor_in(in[i], i, &r);
    if (!t)
        return 0;
    const char *what = is_scale ? "scale" : "zero point";
    if (is_scale ? t->dtype != KILN_FLOAT32 : !is_quant_dtype(t->dtype)) {
        ops_fail("input %d, a %s, is %s (not %s)", i, what, kiln_dtype_name(t->dtype),
                 is_scale ? "float32" : "int8, uint8 or int32");
        return 0;
    }
    if (t->ndim > 1 || (t->ndim == 1 && t->dims[0].sym)) {
        ops_fail("input %d, a %s, must be a scalar or a 1-D tensor of known length", i, what);
        return 0;
    }
    int64_t n = t->ndim ? t->dims[0].v : 1;
    if (n != 1 && per >= 0 && n != per) {
        ops_fail("input %d, a %s, has %lld elements: not 1 or the %lld of its axis", i, what,
                 (long long)n, (long long)per);
        return 0;
    }
    if (count)
        *count = n;
    return 1;
}

/* A parameter's element for output index idx: its only one, or the one at
 * idx[axis] (a per-channel parameter), as dtype dt. */
static kiln_expr param_at(kiln_ctx *ctx, kiln_tensor *p, int axis, const kiln_expr *idx,
                          kiln_dtype dt) {
    int64_t d[1] = {1};
    int nd = ops_shape(p, d);
    kiln_expr k = ops_int(ctx, 0);
    if (nd == 1 && d[0] != 1)
        k = idx[axis];
    kiln_expr v = kiln_tensor_at(p, nd, &k);
    return kiln_tensor_dtype(p) == dt ? v : kiln_cast(dt, v);
}

/* Whether call's `rounding` is TFLITE (1) or TONEAREST (0); -1 with an
 * error otherwise. */
static int rounding_of(const gnode *call) {
    const char *s = graph_attr_str(call, "rounding", "TONEAREST");
    if (!strcmp(s, "TONEAREST") || !strcmp(s, "TFLITE"))
        return !strcmp(s, "TFLITE");
    ops_fail("rounding '%s' is not TONEAREST (half to even) or TFLITE", s);
    return -1;
}

/* v (float dtype fdt) rounded half away from zero, exactly: a tie (v - rint(v)
 * is +-0.5) moves v by half a step away from zero, which is exact. */
static kiln_expr round_away(kiln_ctx *ctx, kiln_expr v, kiln_dtype fdt) {
    kiln_expr r = kiln_round(v);
    kiln_expr tie = kiln_eq(kiln_abs(kiln_sub(v, r)), ops_const(ctx, fdt, 0.5));
    kiln_expr half = kiln_select(kiln_lt(v, ops_const(ctx, fdt, 0)), ops_const(ctx, fdt, -0.5),
                                 ops_const(ctx, fdt, 0.5));
    return kiln_select(tie, kiln_add(v, half), r);
}

/* The range of quantized dtype dt: uint8, int8 or int32. */
static void quant_range(kiln_dtype dt, double *lo, double *hi) {
    *lo = dt == KILN_UINT8 ? 0 : dt == KILN_INT8 ? -128 : -2147483648.0;
    *hi = dt == KILN_UINT8 ? 255 : dt == KILN_INT8 ? 127 : 2147483647.0;
}

/* round(v) + zp clamped to dt's range, as dt (v and zp of float dtype fdt);
 * round is half to even, or half away from zero if away. */
static kiln_expr saturate(kiln_ctx *ctx, kiln_expr v, kiln_expr zp, kiln_dtype dt, kiln_dtype fdt,
                          int away) {
    double lo, hi;
    quant_range(dt, &lo, &hi);
    kiln_expr r = kiln_add(away ? round_away(ctx, v, fdt) : kiln_round(v), zp);
    if (dt == KILN_INT32) /* float32 cannot hold INT32_MAX: clamp in float64 */
        r = kiln_cast(KILN_FLOAT64, r);
    kiln_dtype ft = dt == KILN_INT32 ? KILN_FLOAT64 : fdt;
    r = kiln_min(kiln_max(r, ops_const(ctx, ft, lo)), ops_const(ctx, ft, hi));
    return kiln_cast(dt, r);
}

/* float32(q - zp): the subtraction in int32, exact. */
static kiln_expr centered(kiln_expr q, kiln_expr zp_i32) {
    return kiln_cast(KILN_FLOAT32, kiln_sub(kiln_cast(KILN_INT32, q), zp_i32));
}

/* ---- TFLite's fixed-point multiply ------------------------------------------------ */

static kiln_expr i64(kiln_ctx *ctx, int64_t v) {
    return ops_const(ctx, KILN_INT64, (double)v);
}

/* x * m0 * 2^shift / 2^31 on int64 expressions holding int32 values, as
 * TFLite's MultiplyByQuantizedMultiplier: x shifted left by max(shift, 0)
 * (saturated to int32), SaturatingRoundingDoublingHighMul (the product's
 * high half, rounded half up), then RoundingDivideByPOT by
 * max(-shift, 0) (half away from zero), two roundings. In int64 the high
 * half cannot overflow: its one saturating case (x = m0 = INT32_MIN) gives
 * 2^31, which the caller's clamp to int32 and the rounding shift turn into
 * TFLite's result. RoundingDivideByPOT(h, e) is (h + 2^e / 2 - [h < 0 and e
 * > 0]) >> e, its remainder test folded into the nudge. upward: TVM's
 * fixed_point_multiply instead, one rounding half up of x * m0 /
 * 2^(31 - shift). */
static kiln_expr fixed_point(kiln_ctx *ctx, kiln_expr x, kiln_expr m0, kiln_expr shift,
                             int upward) {
    kiln_expr zero = i64(ctx, 0), one = i64(ctx, 1);
    if (upward) {
        kiln_expr total = kiln_min(kiln_max(kiln_sub(i64(ctx, 31), shift), one), i64(ctx, 62));
        kiln_expr nudge = kiln_shl(one, kiln_sub(total, one));
        return kiln_shr(kiln_add(kiln_mul(x, m0), nudge), total);
    }
    kiln_expr left = kiln_min(kiln_max(shift, zero), i64(ctx, 31));
    kiln_expr right = kiln_min(kiln_max(kiln_neg(shift), zero), i64(ctx, 31));
    kiln_expr a = kiln_min(kiln_max(kiln_shl(x, left), i64(ctx, INT32_MIN)), i64(ctx, INT32_MAX));
    /* TFLite's (ab + (ab >= 0 ? 2^30 : 1 - 2^30)) / 2^31, truncating, is
       (ab + 2^30) >> 31 for either sign: one shift, no division */
    kiln_expr high = kiln_shr(kiln_add(kiln_mul(a, m0), i64(ctx, (int64_t)1 << 30)), i64(ctx, 31));
    kiln_expr half = kiln_shr(kiln_shl(one, right), one);
    kiln_expr down = kiln_select(kiln_lt(high, zero), kiln_min(half, one), zero);
    return kiln_shr(kiln_sub(kiln_add(high, half), down), right);
}

/* TFLite's QuantizeMultiplier of the float64 multiplier m > 0 in tensor
 * expressions: m = m0 * 2^(shift - 31), m0 = round(frac * 2^31) for frexp's
 * frac in [0.5, 1) (2^31 becoming 2^30 with shift + 1), both 0 where shift
 * would be below -31 or m is not in (0, 2^31). The exponent comes from a
 * log, corrected by one either way against powers of two, so it is exact;
 * the rest is exact in float64. */
static void quantize_multiplier_expr(kiln_ctx *ctx, kiln_expr m, kiln_expr *m0, kiln_expr *shift) {
    const kiln_dtype F = KILN_FLOAT64;
    kiln_expr one = ops_const(ctx, F, 1), two = ops_const(ctx, F, 2);
    kiln_expr ok =
        kiln_and(kiln_gt(m, ops_const(ctx, F, 0)), kiln_lt(m, ops_const(ctx, F, 2147483648.0)));
    kiln_expr ms = kiln_select(ok, m, one);
    kiln_expr e = kiln_floor(kiln_div(kiln_log(ms), ops_const(ctx, F, 0.69314718055994530942)));
    kiln_expr p = kiln_pow(two, e);
    e = kiln_select(kiln_lt(ms, p), kiln_sub(e, one),
                    kiln_select(kiln_ge(ms, kiln_mul(p, two)), kiln_add(e, one), e));
    kiln_expr frac = kiln_div(ms, kiln_pow(two, e)); /* in [1, 2) */
    kiln_expr q = kiln_floor(
        kiln_add(kiln_mul(frac, ops_const(ctx, F, 1073741824.0)), ops_const(ctx, F, 0.5)));
    kiln_expr sh = kiln_add(e, one);
    kiln_expr full = kiln_eq(q, ops_const(ctx, F, 2147483648.0));
    q = kiln_select(full, ops_const(ctx, F, 1073741824.0), q);
    sh = kiln_select(full, kiln_add(sh, one), sh);
    kiln_expr zero_ = kiln_or(kiln_not(ok), kiln_lt(sh, ops_const(ctx, F, -31)));
    *m0 = kiln_cast(KILN_INT64, kiln_select(zero_, ops_const(ctx, F, 0), q));
    *shift = kiln_cast(KILN_INT64, kiln_select(zero_, ops_const(ctx, F, 0), sh));
}

/* fixed_point_multiply(x, multiplier, shift): int32 tensors, broadcast. */
static rel_result rel_fixed_point(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *ts[3];
    for (int i = 0; i < 3; i++) {
        if (!(ts[i] = ops_tensor_in(in[i], i, &r)))
            return r;
        if (ts[i]->dtype != KILN_INT32)
            return ops_fail("input %d is %s, not int32", i, kiln_dtype_name(ts[i]->dtype));
    }
    const char *rnd = graph_attr_str(call, "rounding", "TFLITE");
    if (strcmp(rnd, "TFLITE") && strcmp(rnd, "UPWARD"))
        return ops_fail("rounding '%s' is not TFLITE (TFLite's double rounding) or UPWARD", rnd);
    gtensor_type res;
    if ((r = ops_broadcast(3, ts, 0, &res)) != REL_OK)
        return r;
    return ops_set_out(g, out, &res);
}

/* the scalar of fixed_point_multiply (the shared elementwise compute) */
static kiln_expr fixed_point_elem(kiln_ctx *ctx, const gnode *call, kiln_dtype dt,
                                  const kiln_expr *x) {
    (void)dt;
    kiln_expr v[3];
    for (int k = 0; k < 3; k++)
        v[k] = kiln_cast(KILN_INT64, x[k]);
    int upward = !strcmp(graph_attr_str(call, "rounding", "TFLITE"), "UPWARD");
    kiln_expr y = fixed_point(ctx, v[0], v[1], v[2], upward);
    y = kiln_min(kiln_max(y, i64(ctx, INT32_MIN)), i64(ctx, INT32_MAX));
    return kiln_cast(KILN_INT32, y);
}

/* ---- quantize, dequantize, requantize ---------------------------------------------- */

static rel_result rel_quant_unary(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    int v = call->op->variant, nin = v == Q_REQUANTIZE ? 5 : 3;
    OPS_REQUIRE_KNOWN(nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (v == Q_QUANTIZE ? !ops_is_float_dtype(x->dtype) : !is_quant_dtype(x->dtype))
        return ops_fail("the data is %s, not %s", kiln_dtype_name(x->dtype),
                        v == Q_QUANTIZE ? "a float" : "int8, uint8 or int32");
    int axis = 0;
    if (x->ndim && !ops_attr_axis(call, "axis", -1, x->ndim, &axis))
        return REL_ERROR;
    int64_t per = x->ndim && !x->dims[axis].sym ? x->dims[axis].v : -1;
    int64_t cs, cz;
    for (int k = 1; k < nin; k += 2)
        if (!check_param(in, k, 1, per, &cs) || !check_param(in, k + 1, 0, per, &cz))
            return REL_ERROR;
    if (v != Q_DEQUANTIZE && rounding_of(call) < 0)
        return REL_ERROR;
    gtensor_type res = *x;
    if (v == Q_DEQUANTIZE)
        res.dtype = KILN_FLOAT32;
    else if (!quant_dtype_attr(call, "out_dtype", "int8", &res.dtype))
        return REL_ERROR;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *const *in;
    int variant, axis;
    kiln_dtype out;
    int f64;    /* requantize in float64 (ONNX's reference) */
    int tflite; /* rounding TFLITE */
} quant_args;

/* requantize with rounding TFLITE: clamp(MultiplyByQuantizedMultiplier(q -
 * zp) + out_zp) in int64, the multiplier from float64(s) / float64(out_s) */
static kiln_expr requantize_tflite(kiln_ctx *ctx, const quant_args *a, const kiln_expr *i,
                                   kiln_expr q) {
    kiln_expr m = kiln_div(param_at(ctx, a->in[1], a->axis, i, KILN_FLOAT64),
                           param_at(ctx, a->in[3], a->axis, i, KILN_FLOAT64));
    kiln_expr m0, shift;
    quantize_multiplier_expr(ctx, m, &m0, &shift);
    kiln_expr c =
        kiln_sub(kiln_cast(KILN_INT64, q), param_at(ctx, a->in[2], a->axis, i, KILN_INT64));
    kiln_expr y = kiln_add(fixed_point(ctx, c, m0, shift, 0),
                           param_at(ctx, a->in[4], a->axis, i, KILN_INT64));
    double lo, hi;
    quant_range(a->out, &lo, &hi);
    y = kiln_min(kiln_max(y, ops_const(ctx, KILN_INT64, lo)), ops_const(ctx, KILN_INT64, hi));
    return kiln_cast(a->out, y);
}

static kiln_expr quant_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    quant_args *a = u;
    int nd = kiln_tensor_ndim(a->in[0]);
    kiln_expr x = kiln_tensor_at(a->in[0], nd, i);
    kiln_expr s = param_at(ctx, a->in[1], a->axis, i, KILN_FLOAT32);
    switch (a->variant) {
    case Q_QUANTIZE:
        return saturate(ctx, kiln_div(kiln_cast(KILN_FLOAT32, x), s),
                        param_at(ctx, a->in[2], a->axis, i, KILN_FLOAT32), a->out, KILN_FLOAT32,
                        a->tflite);
    case Q_DEQUANTIZE:
        return kiln_mul(centered(x, param_at(ctx, a->in[2], a->axis, i, KILN_INT32)), s);
    default: { /* requantize: the multiplier in float32 */
        if (a->tflite)
            return requantize_tflite(ctx, a, i, x);
        kiln_expr m = kiln_div(s, param_at(ctx, a->in[3], a->axis, i, KILN_FLOAT32));
        kiln_expr c = centered(x, param_at(ctx, a->in[2], a->axis, i, KILN_INT32));
        if (!a->f64)
            return saturate(ctx, kiln_mul(c, m), param_at(ctx, a->in[4], a->axis, i, KILN_FLOAT32),
                            a->out, KILN_FLOAT32, 0);
        kiln_expr v = kiln_add(kiln_mul(kiln_cast(KILN_FLOAT64, c), kiln_cast(KILN_FLOAT64, m)),
                               param_at(ctx, a->in[4], a->axis, i, KILN_FLOAT64));
        return saturate(ctx, v, ops_const(ctx, KILN_FLOAT64, 0), a->out, KILN_FLOAT64, 0);
    }
    }
}

static kiln_status compute_quant_unary(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_out_shape(call, od);
    const char *cd = graph_attr_str(call, "compute_dtype", "float32");
    quant_args a = {in,
                    call->op->variant,
                    nd ? ops_norm_axis(call, -1, nd) : 0,
                    call->type.t[0].dtype,
                    !strcmp(cd, "float64"),
                    !strcmp(graph_attr_str(call, "rounding", "TONEAREST"), "TFLITE")};
    if (a.variant == Q_REQUANTIZE && !a.tflite && strcmp(cd, "float32") && !a.f64) {
        kiln_set_error(KILN_ERR_UNSUPPORTED,
                       "qnn.requantize: compute_dtype '%s' is not float32 (ONNX Runtime's "
                       "requantization) or float64 (ONNX's reference)",
                       cd);
        return KILN_ERR_UNSUPPORTED;
    }
    out[0] = ops_compute(ctx, call, "", nd, od, quant_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The layout hook of quantize, dequantize and requantize: with every
 * parameter per tensor, the op runs in its data's blocked NCHW[x]c layout
 * (it reads the data at its own index and the parameters at 0), so a
 * quantized model's QDQ pairs between blocked convolutions need no layout
 * transforms; per channel, it needs NCHW (the row's LAYOUT_PLAIN). */
static int alter_quant(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    int b = q->block[call->in[0]];
    if (!b)
        return 0;
    for (int i = 1; i < call->nin; i++) {
        const gtensor_type *t = ops_node_type(call->graph->nodes[call->in[i]]);
        if (!t || t->ndim > 1 || (t->ndim == 1 && t->dims[0].v != 1))
            return 0;
    }
    rw->in[0].block = b;
    rw->out_block = b;
    return 1;
}

/* ---- qnn.add, qnn.mul ----------------------------------------------------------------
 * Inputs: lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point,
 * output_scale, output_zero_point (Relay's order); per-tensor parameters.
 * The output has lhs's dtype unless out_dtype says otherwise. */

static rel_result rel_quant_binary(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(8);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r),
                       *b = a ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!b)
        return r;
    if (!is_quant_dtype(a->dtype) || !is_quant_dtype(b->dtype))
        return ops_fail("the inputs are %s and %s, not int8, uint8 or int32",
                        kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    for (int k = 2; k < 8; k += 2)
        if (!check_param(in, k, 1, 1, NULL) || !check_param(in, k + 1, 0, 1, NULL))
            return REL_ERROR;
    const gtensor_type *ts[2] = {a, b};
    gtensor_type res;
    if ((r = ops_broadcast(2, ts, 0, &res)) != REL_OK)
        return r;
    if (*graph_attr_str(call, "out_dtype", "") &&
        !quant_dtype_attr(call, "out_dtype", "int8", &res.dtype))
        return REL_ERROR;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *const *in;
    int variant, nd;
    kiln_dtype out;
} qbin_args;

static kiln_expr qbin_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    qbin_args *a = u;
    kiln_expr real[2];
    for (int k = 0; k < 2; k++) {
        kiln_expr q = ops_bcast_read(ctx, a->in[k], a->nd, i);
        real[k] = kiln_mul(centered(q, param_at(ctx, a->in[3 + 2 * k], 0, i, KILN_INT32)),
                           param_at(ctx, a->in[2 + 2 * k], 0, i, KILN_FLOAT32));
    }
    kiln_expr v = a->variant == Q_ADD ? kiln_add(real[0], real[1]) : kiln_mul(real[0], real[1]);
    return saturate(ctx, kiln_div(v, param_at(ctx, a->in[6], 0, i, KILN_FLOAT32)),
                    param_at(ctx, a->in[7], 0, i, KILN_FLOAT32), a->out, KILN_FLOAT32, 0);
}

static kiln_status compute_quant_binary(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_out_shape(call, od);
    qbin_args a = {in, call->op->variant, nd, call->type.t[0].dtype};
    out[0] = ops_compute(ctx, call, "", nd, od, qbin_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- qnn.conv2d ----------------------------------------------------------------------
 * Inputs: data [N, C, H, W] and weight [O, C/groups, KH, KW] (int8 or
 * uint8, each its own), input_zero_point (per tensor), kernel_zero_point
 * (per tensor or per output channel), input_scale, kernel_scale (likewise).
 * It is nn.conv2d of the centered operands: built from nn.conv2d's own
 * compute over two centered tensors, so there is one convolution. */

static rel_result rel_qconv2d(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    OPS_REQUIRE_KNOWN(6);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w)
        return r;
    if ((x->dtype != KILN_INT8 && x->dtype != KILN_UINT8) ||
        (w->dtype != KILN_INT8 && w->dtype != KILN_UINT8))
        return ops_fail("data and weight must be int8 or uint8, not %s and %s",
                        kiln_dtype_name(x->dtype), kiln_dtype_name(w->dtype));
    if (x->ndim != 4 || w->ndim != 4 || w->dims[0].sym)
        return ops_fail("data and weight must be 4-D (NCHW, OIHW), the weight of known dims");
    if (strcmp(graph_attr_str(call, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(call, "kernel_layout", "OIHW"), "OIHW"))
        return ops_fail("only NCHW data and OIHW kernels are supported");
    int64_t o = w->dims[0].v;
    if (!check_param(in, 2, 0, 1, NULL) || !check_param(in, 3, 0, o, NULL) ||
        !check_param(in, 4, 1, 1, NULL) || !check_param(in, 5, 1, o, NULL))
        return REL_ERROR;
    kiln_dtype acc;
    if (!quant_dtype_attr(call, "out_dtype", "int32", &acc) || acc != KILN_INT32)
        return ops_fail("out_dtype must be int32");
    return ops_conv_rel(g, call, in, out);
}

/* ---- qnn.dense, qnn.batch_matmul --------------------------------------------------- */

static rel_result rel_qdense(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(6);
    rel_result r = REL_OK;
    int bmm = call->op->variant == QP_BMM;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w)
        return r;
    if ((x->dtype != KILN_INT8 && x->dtype != KILN_UINT8) ||
        (w->dtype != KILN_INT8 && w->dtype != KILN_UINT8))
        return ops_fail("the operands must be int8 or uint8, not %s and %s",
                        kiln_dtype_name(x->dtype), kiln_dtype_name(w->dtype));
    int tb = bmm && graph_attr_int(call, "transpose_b", 0);
    if (x->ndim < (bmm ? 2 : 1) || w->ndim < 2 || (!bmm && w->ndim != 2))
        return ops_fail(bmm ? "both operands must have rank >= 2"
                            : "dense needs data of rank >= 1 and a 2-D weight [units, in]");
    /* the columns of the result: dense's units (weight rows), matmul's last
       dim of b (its rows when transposed) */
    gdim cols = w->dims[(bmm && !tb) ? w->ndim - 1 : w->ndim - 2];
    int64_t per = cols.sym ? -1 : cols.v;
    if (!check_param(in, 2, 0, 1, NULL) || !check_param(in, 3, 0, per, NULL) ||
        !check_param(in, 4, 1, 1, NULL) || !check_param(in, 5, 1, per, NULL))
        return REL_ERROR;
    kiln_dtype acc;
    if (!quant_dtype_attr(call, "out_dtype", "int32", &acc) || acc != KILN_INT32)
        return ops_fail("out_dtype must be int32");
    return bmm ? ops_bmm_rel(g, call, in, out) : ops_dense_rel(g, call, in, out);
}

/* The centered operands of a quantized product, in int32: data - its zero
 * point, and weight - its zero point (per tensor, or per output channel
 * along w_axis of the weight). */
typedef struct {
    kiln_tensor *t, *zp;
    int axis;
} center_args;

static kiln_expr center_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    center_args *a = u;
    int nd = kiln_tensor_ndim(a->t);
    return kiln_sub(kiln_cast(KILN_INT32, kiln_tensor_at(a->t, nd, i)),
                    param_at(ctx, a->zp, a->axis, i, KILN_INT32));
}

static kiln_tensor *center(kiln_ctx *ctx, const gnode *call, kiln_tensor *t, kiln_tensor *zp,
                           int axis, const char *suffix) {
    int64_t d[KILN_MAX_NDIM];
    int nd = ops_shape(t, d);
    center_args a = {t, zp, axis};
    return ops_compute(ctx, call, suffix, nd, d, center_body, &a);
}

static kiln_status compute_qproduct(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    int conv = call->op->variant == QP_CONV2D, bmm = call->op->variant == QP_BMM;
    int wnd = kiln_tensor_ndim(in[1]);
    int tb = bmm && graph_attr_int(call, "transpose_b", 0);
    /* the weight's axis of the output channels */
    int waxis = conv || !bmm ? 0 : tb ? wnd - 2 : wnd - 1;
    kiln_tensor *x = center(ctx, call, in[0], in[2], 0, "_x");
    kiln_tensor *w = x ? center(ctx, call, in[1], in[3], waxis, "_w") : NULL;
    if (!w)
        return KILN_ERR_INVALID;
    kiln_tensor *ops[2] = {x, w};
    return conv  ? ops_conv_compute(ctx, call, ops, out)
           : bmm ? ops_bmm_compute(ctx, call, ops, out)
                 : ops_dense_compute(ctx, call, ops, out);
}

/* ---- qnn.concatenate -----------------------------------------------------------------
 * Inputs: n quantized tensors, their n scales, their n zero points, then
 * output_scale and output_zero_point (3n + 2 inputs; per tensor); the
 * output has the first input's dtype. */

static rel_result rel_qconcat(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    int nin = call->nin;
    if (nin < 5 || (nin - 2) % 3)
        return ops_fail("%d inputs: not n tensors, n scales, n zero points, the output's scale "
                        "and zero point",
                        nin);
    OPS_REQUIRE_KNOWN(nin);
    int n = (nin - 2) / 3;
    rel_result r = REL_OK;
    const gtensor_type *first = ops_tensor_in(in[0], 0, &r);
    if (!first)
        return r;
    for (int k = 0; k < n; k++) {
        const gtensor_type *t = ops_tensor_in(in[k], k, &r);
        if (!t)
            return r;
        if (!is_quant_dtype(t->dtype) || t->dtype != first->dtype)
            return ops_fail("input %d is %s: the inputs must all be int8, uint8 or int32, alike", k,
                            kiln_dtype_name(t->dtype));
        if (!check_param(in, n + k, 1, 1, NULL) || !check_param(in, 2 * n + k, 0, 1, NULL))
            return REL_ERROR;
    }
    if (!check_param(in, 3 * n, 1, 1, NULL) || !check_param(in, 3 * n + 1, 0, 1, NULL))
        return REL_ERROR;
    return ops_concat_rel(g, call, n, in, out);
}

typedef struct {
    kiln_tensor *const *in;
    int k, n;
    kiln_dtype dt;
} qcat_args;

/* input k requantized to the output's parameters */
static kiln_expr qcat_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    qcat_args *a = u;
    int nd = kiln_tensor_ndim(a->in[a->k]);
    kiln_expr q = kiln_tensor_at(a->in[a->k], nd, i);
    kiln_expr m = kiln_div(param_at(ctx, a->in[a->n + a->k], 0, i, KILN_FLOAT32),
                           param_at(ctx, a->in[3 * a->n], 0, i, KILN_FLOAT32));
    kiln_expr v = kiln_mul(centered(q, param_at(ctx, a->in[2 * a->n + a->k], 0, i, KILN_INT32)), m);
    return saturate(ctx, v, param_at(ctx, a->in[3 * a->n + 1], 0, i, KILN_FLOAT32), a->dt,
                    KILN_FLOAT32, 0);
}

static kiln_status compute_qconcat(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                   kiln_tensor **out) {
    int n = (call->nin - 2) / 3;
    kiln_tensor *parts[QCONCAT_MAX];
    if (n > QCONCAT_MAX)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "qnn.concatenate: more than %d inputs",
                              QCONCAT_MAX);
    for (int k = 0; k < n; k++) {
        int64_t d[KILN_MAX_NDIM];
        int nd = ops_shape(in[k], d);
        qcat_args a = {in, k, n, call->type.t[0].dtype};
        char suffix[32];
        snprintf(suffix, sizeof suffix, "_rq%d", k);
        if (!(parts[k] = ops_compute(ctx, call, suffix, nd, d, qcat_body, &a)))
            return KILN_ERR_INVALID;
    }
    return ops_concat_compute(ctx, call, n, parts, out);
}

/* ---- the table -------------------------------------------------------------------- */

/* a row: name, inputs (min, max), schema, relation, pattern, compute, variant,
   whether it takes symbolic dims, summary */
#define QROW(nm, lo, hi, schema, relation, pat, fn, var, sym, sum)                                 \
    {                                                                                              \
        .name = nm, .min_in = lo, .max_in = hi, .attrs = schema, .rel = relation, .pattern = pat,  \
        .compute = fn, .summary = sum, .variant = var, .sym_dims = sym,                            \
        .alter = pat == OP_ELEMWISE ? alter_quant : NULL                                           \
    }

const kiln_op_def ops_qnn_rows[] = {
    QROW("qnn.quantize", 3, 3, quantize_attrs, rel_quant_unary, OP_ELEMWISE, compute_quant_unary,
         Q_QUANTIZE, 1, "quantize(data, scale, zero_point): clamp(rint(x / scale) + zp)"),
    QROW("qnn.dequantize", 3, 3, dequantize_attrs, rel_quant_unary, OP_ELEMWISE,
         compute_quant_unary, Q_DEQUANTIZE, 1,
         "dequantize(data, scale, zero_point): float32(q - zp) * scale"),
    QROW("qnn.requantize", 5, 5, requantize_attrs, rel_quant_unary, OP_ELEMWISE,
         compute_quant_unary, Q_REQUANTIZE, 1,
         "requantize(data, scale, zp, out_scale, out_zp): to other quantization parameters"),
    {.name = "fixed_point_multiply",
     .min_in = 3,
     .max_in = 3,
     .attrs = fixed_point_attrs,
     .rel = rel_fixed_point,
     .pattern = OP_BROADCAST,
     .compute = ops_compute_elemwise,
     .elem = fixed_point_elem,
     .layout = LAYOUT_FOLLOWS,
     .sym_dims = 1,
     .summary = "x * multiplier * 2^shift / 2^31 in int32: TFLite's MultiplyByQuantizedMultiplier, "
                "or TVM's single rounding (rounding=\"UPWARD\")"},
    QROW("qnn.add", 8, 8, binary_attrs, rel_quant_binary, OP_BROADCAST, compute_quant_binary, Q_ADD,
         1, "the sum of two quantized tensors, quantized to the output's parameters"),
    QROW("qnn.mul", 8, 8, binary_attrs, rel_quant_binary, OP_BROADCAST, compute_quant_binary, Q_MUL,
         1, "the product of two quantized tensors, quantized to the output's parameters"),
    QROW("qnn.conv2d", 6, 6, qconv_attrs, rel_qconv2d, OP_OUT_ELEMWISE_FUSABLE, compute_qproduct,
         QP_CONV2D, 0, "quantized 2-D convolution: int32 sum of (x - x_zp) * (w - w_zp)"),
    QROW("qnn.dense", 6, 6, qdense_attrs, rel_qdense, OP_OUT_ELEMWISE_FUSABLE, compute_qproduct,
         QP_DENSE, 1, "quantized dense: int32 sum of (x - x_zp) * (w - w_zp) over the features"),
    QROW("qnn.batch_matmul", 6, 6, qbmm_attrs, rel_qdense, OP_OUT_ELEMWISE_FUSABLE,
         compute_qproduct, QP_BMM, 1,
         "quantized numpy matmul: int32 sum of (a - a_zp) * (b - b_zp)"),
    QROW("qnn.concatenate", 5, 3 * QCONCAT_MAX + 2, qconcat_attrs, rel_qconcat, OP_INJECTIVE,
         compute_qconcat, 0, 0,
         "concatenate quantized tensors, each requantized to the output's parameters"),
};
const int ops_qnn_count = (int)(sizeof ops_qnn_rows / sizeof ops_qnn_rows[0]);
