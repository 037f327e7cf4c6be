/* tflite_convert_image.c: TFLite's image and layout operators and the
 * small ones around them (tflite_convert.h names them for the table in
 * tflite_convert.c): RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (to
 * image.resize, which resizes any dims, so NHWC as it is, with ONNX's names
 * of TF's coordinate rules), DEPTH_TO_SPACE and SPACE_TO_DEPTH (NCHW ops:
 * TF's NHWC channel order is ONNX's DCR), TRANSPOSE_CONV (to
 * nn.conv2d_transpose: the filter [O, KH, KW, I] as IOHW, the padding
 * that gives the output_shape input), PRELU, ELU, TILE,
 * BROADCAST_TO, FILL, ZEROS_LIKE, ADD_N, ARG_MAX, ARG_MIN, FLOOR_DIV and FLOOR_MOD
 * on floats, and the unary SIN, COS, CEIL, ROUND, SIGN. */
#include <stdio.h>
#include <string.h>

#include "tflite_convert.h"

#define MAXD KILN_MAX_NDIM

/* RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (their options: align_corners
 * 2 and half_pixel_centers 3 for bilinear, which keeps two deprecated
 * slots first; 0 and 1 for nearest): the constant [H, W] of input 1. */
static int convert_resize(tfl_imp *T, const int *in, int *outs, int bilinear) {
    int64_t xd[MAXD], hw[2];
    if (tfl_dims(T, in[0], xd) != 4 || tfl_const_ints(T, 1, hw, 2) != 2)
        return tfl_fail(T, "the input must be 4-D (NHWC) and the size two constants");
    if (hw[0] < 1 || hw[1] < 1 || hw[0] > (1 << 20) || hw[1] > (1 << 20))
        return tfl_fail(T, "size %lldx%lld out of range", (long long)hw[0], (long long)hw[1]);
    int base = bilinear ? 2 : 0;
    int align = (int)tfl_opt_int(T, base, 1, 0), half = (int)tfl_opt_int(T, base + 1, 1, 0);
    const char *mode = align  ? "align_corners"
                       : half ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn")
                              : "asymmetric";
    const char *round = align ? "round_prefer_ceil" : "floor";
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             "size=[%lld, %lld, %lld, %lld], method=\"%s\", coordinate_transformation_mode=\"%s\", "
             "rounding_method=\"%s\"",
             (long long)xd[0], (long long)hw[0], (long long)hw[1], (long long)xd[3],
             bilinear ? "linear" : "nearest", mode, round);
    return outs[0] = tfl_call(T, "image.resize", 1, in, attrs);
}

int tfl_cvt_resize_bilinear(tfl_imp *T, const int *in, int *outs) {
    return convert_resize(T, in, outs, 1);
}

int tfl_cvt_resize_nearest(tfl_imp *T, const int *in, int *outs) {
    return convert_resize(T, in, outs, 0);
}

/* DEPTH_TO_SPACE, SPACE_TO_DEPTH (options: block_size 0). */
static int convert_depth_space(tfl_imp *T, const int *in, int *outs, const char *op) {
    int64_t xd[MAXD];
    if (tfl_dims(T, in[0], xd) != 4)
        return tfl_fail(T, "the input must be 4-D (NHWC)");
    int64_t b = tfl_opt_int(T, 0, 4, 0);
    if (b < 1 || b > 4096)
        return tfl_fail(T, "block_size %lld out of range", (long long)b);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "block_size=%lld%s", (long long)b,
             !strcmp(op, "depth_to_space") ? ", mode=\"DCR\"" : "");
    int x = tfl_transpose(T, in[0], 4, tfl_to_nchw);
    return outs[0] = tfl_transpose(T, tfl_call(T, op, 1, &x, attrs), 4, tfl_to_nhwc);
}

int tfl_cvt_depth_to_space(tfl_imp *T, const int *in, int *outs) {
    return convert_depth_space(T, in, outs, "depth_to_space");
}

int tfl_cvt_space_to_depth(tfl_imp *T, const int *in, int *outs) {
    return convert_depth_space(T, in, outs, "space_to_depth");
}

/* TRANSPOSE_CONV (TransposeConvOptions: padding 0, stride_w 1, stride_h 2,
 * activation 3): inputs output_shape, filter [O, KH, KW, I], data, bias. */
int tfl_cvt_transpose_conv(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], wd[MAXD], os[4];
    if (tfl_dims(T, in[2], xd) != 4 || tfl_dims(T, in[1], wd) != 4 ||
        tfl_const_ints(T, 0, os, 4) != 4)
        return tfl_fail(T, "data and filter must be 4-D and output_shape 4 constants");
    int64_t pad = tfl_opt_int(T, 0, 1, 0), sw = tfl_opt_int(T, 1, 4, 0),
            sh = tfl_opt_int(T, 2, 4, 0), act = tfl_opt_int(T, 3, 1, 0);
    if (sw < 1 || sh < 1 || sw > 65536 || sh > 65536)
        return tfl_fail(T, "strides %lldx%lld must be 1 to 65536", (long long)sh, (long long)sw);
    if (wd[3] != xd[3] || os[3] != wd[0] || os[0] != xd[0])
        return tfl_fail(T,
                        "filter [%lld, ..., %lld], data of %lld channels, output_shape "
                        "[%lld, ..., %lld]",
                        (long long)wd[0], (long long)wd[3], (long long)xd[3], (long long)os[0],
                        (long long)os[3]);
    int64_t p[2][2], op[2];
    for (int k = 0; k < 2; k++) {
        int64_t s = k ? sw : sh, kk = wd[1 + k], in_ = xd[1 + k], out = os[1 + k];
        int64_t full = (in_ - 1) * s + kk, total = pad == 0 ? full - out : 0;
        if (total < 0)
            total = 0;
        p[k][0] = total / 2;
        p[k][1] = total - p[k][0];
        op[k] = out - (full - total);
        if (op[k] < 0 || op[k] >= s)
            return tfl_fail(T,
                            "output_shape %lld in dim %d does not fit a %s transposed "
                            "convolution of %lld by stride %lld",
                            (long long)out, 1 + k, pad == 0 ? "SAME" : "VALID", (long long)in_,
                            (long long)s);
    }
    static const int to_iohw[4] = {3, 0, 1, 2};
    char attrs[512];
    snprintf(attrs, sizeof attrs,
             "strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], output_padding=[%lld, %lld], "
             "kernel_layout=\"IOHW\"",
             (long long)sh, (long long)sw, (long long)p[0][0], (long long)p[1][0],
             (long long)p[0][1], (long long)p[1][1], (long long)op[0], (long long)op[1]);
    int ci[2] = {tfl_transpose(T, in[2], 4, tfl_to_nchw), tfl_transpose(T, in[1], 4, to_iohw)};
    int y = tfl_call(T, "nn.conv2d_transpose", 2, ci, attrs);
    if (T->op->nin > 3 && in[3] >= 0) {
        int bi[2] = {y, in[3]};
        y = tfl_call(T, "nn.bias_add", 2, bi, "axis=1");
    }
    return outs[0] = tfl_activation(T, tfl_transpose(T, y, 4, tfl_to_nhwc), act);
}

/* PRELU: x where x >= 0, else alpha * x (alpha broadcast). */
int tfl_cvt_prelu(tfl_imp *T, const int *in, int *outs) {
    int w[3] = {tfl_binary(T, "greater_equal", in[0], tfl_scalar(T, 0)), in[0],
                tfl_binary(T, "multiply", in[0], in[1])};
    return outs[0] = tfl_call(T, "where", 3, w, NULL);
}

/* Attributes "name=[v...]" of k values into buf. */
static void ints_attr(char *buf, size_t cap, const char *name, int k, const int64_t *v) {
    int n = snprintf(buf, cap, "%s=[", name);
    for (int i = 0; i < k && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%lld", i ? ", " : "", (long long)v[i]);
    if ((size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "]");
}

/* TILE: by the constant multiples of input 1. */
int tfl_cvt_tile(tfl_imp *T, const int *in, int *outs) {
    int64_t r[MAXD];
    int n = tfl_const_ints(T, 1, r, MAXD);
    if (n < 0)
        return -1;
    char attrs[512];
    ints_attr(attrs, sizeof attrs, "reps", n, r);
    return outs[0] = tfl_call(T, "tile", 1, in, attrs);
}

/* BROADCAST_TO (input 1: the constant shape) and FILL (input 0: the
 * constant dims, input 1: the scalar value). */
static int broadcast(tfl_imp *T, int x, int shape_input, int *outs) {
    int64_t s[MAXD];
    int n = tfl_const_ints(T, shape_input, s, MAXD);
    if (n < 0)
        return -1;
    char attrs[512];
    ints_attr(attrs, sizeof attrs, "shape", n, s);
    return outs[0] = tfl_call(T, "broadcast_to", 1, &x, attrs);
}

int tfl_cvt_broadcast_to(tfl_imp *T, const int *in, int *outs) {
    return broadcast(T, in[0], 1, outs);
}

int tfl_cvt_fill(tfl_imp *T, const int *in, int *outs) {
    return broadcast(T, in[1], 0, outs);
}

/* ZEROS_LIKE: x * 0 would keep NaNs; 0 broadcast to x's shape. */
int tfl_cvt_zeros_like(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD];
    int nx = tfl_dims(T, in[0], xd);
    const gtensor_type *t = tfl_type(T, in[0]);
    if (nx < 0 || !t)
        return -1;
    int zero = tfl_scalar(T, 0);
    char attrs[512];
    ints_attr(attrs, sizeof attrs, "shape", nx, xd);
    int y = tfl_call(T, "broadcast_to", 1, &zero, attrs);
    if (t->dtype != KILN_FLOAT32) {
        snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(t->dtype));
        y = tfl_call(T, "cast", 1, &y, attrs);
    }
    return outs[0] = y;
}

/* ADD_N: the inputs summed. */
int tfl_cvt_add_n(tfl_imp *T, const int *in, int *outs) {
    int y = in[0];
    for (int i = 1; i < T->op->nin; i++)
        y = tfl_binary(T, "add", y, in[i]);
    return outs[0] = y;
}

/* ARG_MAX, ARG_MIN: over the constant axis input 1 (the driver casts the
 * int64 indices to the output's type). */
static int convert_arg(tfl_imp *T, const int *in, int *outs, const char *op) {
    const gtensor_type *t = tfl_type(T, in[0]);
    int64_t axis;
    if (!t || tfl_const_ints(T, 1, &axis, 1) != 1)
        return tfl_fail(T, "the axis must be one constant");
    int ax = tfl_norm_axis(T, axis, t->ndim);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=%d, keepdims=0", ax);
    return ax < 0 ? -1 : (outs[0] = tfl_call(T, op, 1, in, attrs));
}

int tfl_cvt_arg_max(tfl_imp *T, const int *in, int *outs) {
    return convert_arg(T, in, outs, "argmax");
}

int tfl_cvt_arg_min(tfl_imp *T, const int *in, int *outs) {
    return convert_arg(T, in, outs, "argmin");
}

/* FLOOR_DIV and FLOOR_MOD of floats: floor(a / b), a - floor(a / b) * b. */
static int float_operands(tfl_imp *T, const int *in) {
    const gtensor_type *a = tfl_type(T, in[0]);
    if (a && a->dtype != KILN_FLOAT32)
        return tfl_fail(T, "only float operands are supported, not %s", kiln_dtype_name(a->dtype));
    return a ? 0 : -1;
}

int tfl_cvt_floor_div(tfl_imp *T, const int *in, int *outs) {
    if (float_operands(T, in))
        return -1;
    return outs[0] = tfl_unary(T, "floor", tfl_binary(T, "divide", in[0], in[1]));
}

int tfl_cvt_floor_mod(tfl_imp *T, const int *in, int *outs) {
    if (float_operands(T, in))
        return -1;
    int q = tfl_unary(T, "floor", tfl_binary(T, "divide", in[0], in[1]));
    return outs[0] = tfl_binary(T, "subtract", in[0], tfl_binary(T, "multiply", q, in[1]));
}
