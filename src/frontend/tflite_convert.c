/* tflite_convert.c: the TFLite converter table (at the bottom, one row per
 * builtin operator) and the converters of the arithmetic, convolution,
 * pooling, reduction and shape operators (tflite_convert_image.c has the
 * image and layout ones). Each converter sees its operands as float32
 * (the driver dequantizes) in TFLite's layout, NHWC. kiln's convolutions
 * and pools are NCHW: a 2-D convolution or pool reads its input in NCHW
 * (tfl_in_nchw: the NCHW value an earlier operator left, else a
 * transpose), its weights transposed to OIHW (constants, which fold), and
 * leaves its output in NCHW (T->out_nchw); elementwise operators and a
 * MEAN over H and W carry NCHW on (docs/TFLITE.md, "Layout"). A quantized
 * operand is transposed as integers and dequantized after, the form
 * FakeQuantizationToInteger matches.
 * Fused activations are applied in float before the driver quantizes.
 * Options are read by their field slot in schema.fbs (named in each
 * converter). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tflite_convert.h"

/* BuiltinOperator codes (schema.fbs). */
enum {
    B_ADD = 0,
    B_AVERAGE_POOL_2D = 1,
    B_CONCATENATION = 2,
    B_CONV_2D = 3,
    B_DEPTHWISE_CONV_2D = 4,
    B_DEQUANTIZE = 6,
    B_FLOOR = 8,
    B_FULLY_CONNECTED = 9,
    B_LOGISTIC = 14,
    B_MAX_POOL_2D = 17,
    B_MUL = 18,
    B_RELU = 19,
    B_RELU_N1_TO_1 = 20,
    B_RELU6 = 21,
    B_RESHAPE = 22,
    B_SOFTMAX = 25,
    B_TANH = 28,
    B_PAD = 34,
    B_GATHER = 36,
    B_TRANSPOSE = 39,
    B_MEAN = 40,
    B_SUB = 41,
    B_DIV = 42,
    B_SQUEEZE = 43,
    B_STRIDED_SLICE = 45,
    B_EXP = 47,
    B_SPLIT = 49,
    B_LOG_SOFTMAX = 50,
    B_CAST = 53,
    B_MAXIMUM = 55,
    B_ARG_MAX = 56,
    B_MINIMUM = 57,
    B_NEG = 59,
    B_PADV2 = 60,
    B_SLICE = 65,
    B_EXPAND_DIMS = 70,
    B_LOG = 73,
    B_SUM = 74,
    B_SQRT = 75,
    B_RSQRT = 76,
    B_SHAPE = 77,
    B_POW = 78,
    B_REDUCE_PROD = 81,
    B_REDUCE_MAX = 82,
    B_PACK = 83,
    B_UNPACK = 88,
    B_REDUCE_MIN = 89,
    B_SQUARE = 92,
    B_LEAKY_RELU = 98,
    B_SQUARED_DIFFERENCE = 99,
    B_ABS = 101,
    B_SPLIT_V = 102,
    B_QUANTIZE = 114,
    B_HARD_SWISH = 117,
    B_BATCH_MATMUL = 126,
    B_GELU = 150,
    B_LESS = 58,
    B_GREATER = 61,
    B_GREATER_EQUAL = 62,
    B_LESS_EQUAL = 63,
    B_SELECT = 64,
    B_EQUAL = 71,
    B_NOT_EQUAL = 72,
    B_LOGICAL_OR = 84,
    B_LOGICAL_AND = 86,
    B_LOGICAL_NOT = 87,
    B_SELECT_V2 = 123,
    B_DEPTH_TO_SPACE = 5,
    B_RESIZE_BILINEAR = 23,
    B_SPACE_TO_DEPTH = 26,
    B_PRELU = 54,
    B_SIN = 66,
    B_TRANSPOSE_CONV = 67,
    B_TILE = 69,
    B_ARG_MIN = 79,
    B_FLOOR_DIV = 90,
    B_ZEROS_LIKE = 93,
    B_FILL = 94,
    B_FLOOR_MOD = 95,
    B_RESIZE_NEAREST_NEIGHBOR = 97,
    B_MIRROR_PAD = 100,
    B_CEIL = 104,
    B_ADD_N = 106,
    B_COS = 108,
    B_ELU = 111,
    B_ROUND = 116,
    B_BROADCAST_TO = 130,
    B_SIGN = 158
};

#define MAXD KILN_MAX_NDIM

/* ---- helpers ----------------------------------------------------------------------- */

/* ---- convolution, pooling, dense --------------------------------------------------- */

/* The operator's input i permuted by perm (4-D); a quantized tensor is
 * permuted as integers and dequantized after, its per-channel axis moved
 * along, so the convolution reads dequantize(...) as
 * FakeQuantizationToInteger matches it. */
static int nchw_operand(tfl_imp *T, const int *in, int i, const int *perm) {
    if (perm == tfl_to_nchw && tfl_has_nchw(T, i))
        return tfl_in_nchw(T, in, i);
    int index, raw = tfl_quantized_input(T, i, &index);
    if (raw < 0)
        return tfl_transpose(T, in[i], 4, perm);
    int axis = -1;
    for (int k = 0; k < 4; k++)
        if (perm[k] == T->m->tensors[index].qdim)
            axis = k;
    return tfl_qnn_call(T, "qnn.dequantize", tfl_transpose(T, raw, 4, perm), index, axis, "");
}

/* y + bias along y's dim 1 (NCHW channels, dense units). */
static int bias_add(tfl_imp *T, int y, int bias) {
    int in[2] = {y, bias};
    return tfl_call(T, "nn.bias_add", 2, in, "axis=1");
}

/* CONV_2D (Conv2DOptions: padding 0, stride_w 1, stride_h 2, activation 3,
 * dilation_w 4, dilation_h 5) and DEPTHWISE_CONV_2D (padding 0, stride_w 1,
 * stride_h 2, depth_multiplier 3, activation 4, dilation_w 5, dilation_h 6). */
static int convert_conv(tfl_imp *T, const int *in, int *outs, int depthwise) {
    int64_t xd[MAXD], wd[MAXD];
    if (tfl_dims(T, in[0], xd) != 4 || tfl_dims(T, in[1], wd) != 4)
        return tfl_fail(T, "input and filter must be 4-D (NHWC, OHWI)");
    int64_t pad = tfl_opt_int(T, 0, 1, 0), sw = tfl_opt_int(T, 1, 4, 0),
            sh = tfl_opt_int(T, 2, 4, 0);
    int a = depthwise ? 4 : 3;
    int64_t act = tfl_opt_int(T, a, 1, 0), dw = tfl_opt_int(T, a + 1, 4, 1),
            dh = tfl_opt_int(T, a + 2, 4, 1);
    if (sw < 1 || sh < 1 || dw < 1 || dh < 1 || sw > 65536 || sh > 65536 || dw > 65536 ||
        dh > 65536)
        return tfl_fail(T, "strides %lldx%lld and dilations %lldx%lld must be 1 to 65536",
                        (long long)sh, (long long)sw, (long long)dh, (long long)dw);
    int64_t C = xd[3], O, groups;
    int w;
    if (depthwise) {
        O = wd[3];
        if (wd[0] != 1 || !C || O % C)
            return tfl_fail(T, "depthwise filter [%lld, ..., %lld] for %lld channels",
                            (long long)wd[0], (long long)O, (long long)C);
        static const int perm[4] = {3, 0, 1, 2};
        w = nchw_operand(T, in, 1, perm);
        groups = C;
    } else {
        O = wd[0];
        if (!wd[3] || C % wd[3])
            return tfl_fail(T, "filter of %lld input channels for an input of %lld",
                            (long long)wd[3], (long long)C);
        w = nchw_operand(T, in, 1, tfl_to_nchw);
        groups = C / wd[3];
    }
    int64_t pt, pb, pl, pr;
    tfl_same_pad(pad, xd[1], wd[1], sh, dh, &pt, &pb);
    tfl_same_pad(pad, xd[2], wd[2], sw, dw, &pl, &pr);
    char attrs[512];
    snprintf(attrs, sizeof attrs,
             "strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], dilation=[%lld, %lld], "
             "groups=%lld, channels=%lld, kernel_size=[%lld, %lld]",
             (long long)sh, (long long)sw, (long long)pt, (long long)pl, (long long)pb,
             (long long)pr, (long long)dh, (long long)dw, (long long)groups, (long long)O,
             (long long)wd[1], (long long)wd[2]);
    int conv_in[2] = {nchw_operand(T, in, 0, tfl_to_nchw), w};
    int y = tfl_call(T, "nn.conv2d", 2, conv_in, attrs);
    if (T->op->nin > 2 && in[2] >= 0)
        y = bias_add(T, y, in[2]);
    T->out_nchw = 1; /* the driver binds its NHWC transpose too */
    return outs[0] = tfl_activation(T, y, act);
}

static int cvt_conv2d(tfl_imp *T, const int *in, int *outs) {
    return convert_conv(T, in, outs, 0);
}

static int cvt_depthwise(tfl_imp *T, const int *in, int *outs) {
    return convert_conv(T, in, outs, 1);
}

/* AVERAGE_POOL_2D, MAX_POOL_2D (Pool2DOptions: padding 0, stride_w 1,
 * stride_h 2, filter_width 3, filter_height 4, activation 5). TFLite's
 * average leaves the padding out of the count. */
static int convert_pool(tfl_imp *T, const int *in, int *outs, const char *op) {
    int64_t xd[MAXD];
    if (tfl_dims(T, in[0], xd) != 4)
        return tfl_fail(T, "input must be 4-D (NHWC)");
    int64_t pad = tfl_opt_int(T, 0, 1, 0), sw = tfl_opt_int(T, 1, 4, 0),
            sh = tfl_opt_int(T, 2, 4, 0), fw = tfl_opt_int(T, 3, 4, 0),
            fh = tfl_opt_int(T, 4, 4, 0), act = tfl_opt_int(T, 5, 1, 0);
    if (sw < 1 || sh < 1 || fw < 1 || fh < 1 || sw > 65536 || sh > 65536 || fw > 65536 ||
        fh > 65536)
        return tfl_fail(T, "filter %lldx%lld and strides %lldx%lld must be 1 to 65536",
                        (long long)fh, (long long)fw, (long long)sh, (long long)sw);
    int64_t pt, pb, pl, pr;
    tfl_same_pad(pad, xd[1], fh, sh, 1, &pt, &pb);
    tfl_same_pad(pad, xd[2], fw, sw, 1, &pl, &pr);
    char attrs[512];
    snprintf(attrs, sizeof attrs,
             "pool_size=[%lld, %lld], strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld]%s",
             (long long)fh, (long long)fw, (long long)sh, (long long)sw, (long long)pt,
             (long long)pl, (long long)pb, (long long)pr,
             !strcmp(op, "nn.avg_pool2d") ? ", count_include_pad=0" : "");
    int x = tfl_in_nchw(T, in, 0);
    T->out_nchw = 1;
    return outs[0] = tfl_activation(T, tfl_call(T, op, 1, &x, attrs), act);
}

static int cvt_avg_pool(tfl_imp *T, const int *in, int *outs) {
    return convert_pool(T, in, outs, "nn.avg_pool2d");
}

static int cvt_max_pool(tfl_imp *T, const int *in, int *outs) {
    return convert_pool(T, in, outs, "nn.max_pool2d");
}

/* A hybrid (dynamic-range) FULLY_CONNECTED's product of float rows x2
 * [M, K] by the int8 filter (input 1, [N, K], per-channel or per-tensor
 * scales) as TFLite computes it with asymmetric_quantize_inputs: each row
 * quantized to int8 on the fly, with the range [min(x, 0), max(x, 0)] over
 * 255 steps and the zero point whose error is smaller (as XNNPACK's
 * qd8 kernels, the interpreter's default, nudge it), the int sums
 * rescaled by the row's and the channel's scales. Float32 throughout, so
 * the sums are exact while they stay under 2^24. */
static int hybrid_rows(tfl_imp *T, int x2, const int *in) {
    int index, w = tfl_quantized_input(T, 1, &index);
    const tfl_tensor *wt = &T->m->tensors[index];
    int keep[2], zero = tfl_scalar(T, 0), k255 = tfl_scalar(T, 255);
    keep[0] = tfl_call(T, "min", 1, &x2, "axis=[1], keepdims=1");
    keep[1] = tfl_call(T, "max", 1, &x2, "axis=[1], keepdims=1");
    int mn = tfl_binary(T, "minimum", keep[0], zero), mx = tfl_binary(T, "maximum", keep[1], zero);
    int den = tfl_binary(T, "subtract", mx, mn);
    int sel[3] = {tfl_binary(T, "equal", den, zero), k255, den};
    int scale = tfl_binary(T, "divide", k255, tfl_call(T, "where", 3, sel, NULL));
    int smn = tfl_binary(T, "multiply", mn, scale), smx = tfl_binary(T, "multiply", mx, scale);
    int err = tfl_binary(T, "add", tfl_binary(T, "add", tfl_scalar(T, -128), smn),
                         tfl_binary(T, "add", tfl_scalar(T, 127), smx));
    int zsel[3] = {tfl_binary(T, "greater", err, zero),
                   tfl_binary(T, "subtract", tfl_scalar(T, -128), smn),
                   tfl_binary(T, "subtract", tfl_scalar(T, 127), smx)};
    int zp = tfl_call(T, "where", 3, zsel, NULL);
    zp = tfl_unary(T, "round", tfl_call(T, "clip", 1, &zp, "a_min=-128, a_max=127"));
    int q = tfl_binary(T, "add", tfl_binary(T, "multiply", x2, scale), zp);
    q = tfl_call(T, "clip", 1, (int[]){tfl_unary(T, "round", q)}, "a_min=-128, a_max=127");
    int wf = tfl_call(T, "cast", 1, &w, "dtype=\"float32\"");
    char attrs[64];
    snprintf(attrs, sizeof attrs, "units=%lld", (long long)wt->dims[0]);
    int dense_in[2] = {tfl_binary(T, "subtract", q, zp), wf};
    int acc = tfl_call(T, "nn.dense", 2, dense_in, attrs);
    int inv = tfl_binary(T, "divide", tfl_scalar(T, 1), scale);
    return tfl_binary(T, "multiply", tfl_binary(T, "multiply", acc, inv),
                      tfl_float_const(T, wt->nq, wt->scale));
}

/* FULLY_CONNECTED (FullyConnectedOptions: activation 0, weights_format 1,
 * keep_num_dims 2, asymmetric_quantize_inputs 3): the input's last dim
 * against the filter's [N, K]. A float input with an int8 filter is
 * TFLite's hybrid kernel (hybrid_rows) when it quantizes its inputs
 * asymmetrically, else the float product of the dequantized filter. */
static int cvt_fully_connected(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], wd[MAXD];
    int nx = tfl_dims(T, in[0], xd), nw = tfl_dims(T, in[1], wd);
    if (nx < 1 || nw != 2)
        return tfl_fail(T, "the filter must be 2-D and the input at least 1-D");
    if (tfl_opt_int(T, 1, 1, 0))
        return tfl_fail(T, "shuffled weights are not supported");
    int64_t K = wd[1], N = wd[0], numel = 1;
    for (int d = 0; d < nx; d++)
        numel *= xd[d];
    if (!K || numel % K)
        return tfl_fail(T, "an input of %lld elements does not split into rows of %lld",
                        (long long)numel, (long long)K);
    int64_t rows[2] = {numel / K, K};
    int index, raw = tfl_quantized_input(T, 0, &index), x;
    if (raw >= 0) /* reshaped as integers, then dequantized (as nchw_operand) */
        x = tfl_qnn_call(T, "qnn.dequantize", tfl_reshape(T, raw, 2, rows), index, -1, "");
    else
        x = tfl_reshape(T, in[0], 2, rows);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "units=%lld", (long long)N);
    int dense_in[2] = {x, in[1]}, windex, y;
    if (raw < 0 && tfl_quantized_input(T, 1, &windex) >= 0 && tfl_opt_int(T, 3, 1, 0) &&
        T->m->tensors[windex].type == TFL_INT8)
        y = hybrid_rows(T, x, in);
    else
        y = tfl_call(T, "nn.dense", 2, dense_in, attrs);
    if (T->op->nin > 2 && in[2] >= 0)
        y = bias_add(T, y, in[2]);
    if (tfl_opt_int(T, 2, 1, 0) && nx > 1) {
        xd[nx - 1] = N;
        y = tfl_reshape(T, y, nx, xd);
    }
    return outs[0] = tfl_activation(T, y, tfl_opt_int(T, 0, 1, 0));
}

/* BATCH_MATMUL (BatchMatMulOptions: adj_x 0, adj_y 1). TFLite's int8
 * kernel ignores the right operand's zero point (it assumes a symmetric
 * one, whatever the tensor says: the converter gives activations others);
 * kiln reads that operand the same way, so that its outputs are the
 * interpreter's (docs/TFLITE.md). */
static int cvt_batch_matmul(tfl_imp *T, const int *in, int *outs) {
    char attrs[64];
    snprintf(attrs, sizeof attrs, "transpose_a=%d, transpose_b=%d", (int)!!tfl_opt_int(T, 0, 1, 0),
             (int)!!tfl_opt_int(T, 1, 1, 0));
    int index, raw = tfl_quantized_input(T, 1, &index), ab[2] = {in[0], in[1]};
    if (raw >= 0 && T->m->tensors[index].nq == 1) {
        int64_t zero = 0;
        int dq[3] = {raw, tfl_float_const(T, 1, T->m->tensors[index].scale),
                     tfl_ints_const(T, KILN_INT32, 1, &zero)};
        ab[1] = tfl_call(T, "qnn.dequantize", 3, dq, NULL);
    }
    return outs[0] = tfl_call(T, "nn.batch_matmul", 2, ab, attrs);
}

/* ---- elementwise ---------------------------------------------------------------------- */

/* 1 if node id has exactly one element. */
static int is_single(const tfl_imp *T, int id) {
    const gtensor_type *t = tfl_type(T, id);
    if (!t)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym || t->dims[d].v != 1)
            return 0;
    return 1;
}

/* Operands a and b of a binary elementwise op in NCHW when that needs no
 * transpose: one has an NCHW value and the other has one too (the same
 * 4-D shape) or is a single element. 1 and *a, *b, or 0 (NHWC). */
static int nchw_pair(tfl_imp *T, const int *in, int *a, int *b) {
    const gtensor_type *ta = tfl_type(T, in[0]), *tb = tfl_type(T, in[1]);
    if (!ta || !tb)
        return 0;
    int na = tfl_has_nchw(T, 0), nb = tfl_has_nchw(T, 1), same = ta->ndim == tb->ndim;
    for (int d = 0; same && d < ta->ndim; d++)
        same = !ta->dims[d].sym && !tb->dims[d].sym && ta->dims[d].v == tb->dims[d].v;
    if (na && (nb ? same : is_single(T, in[1]))) {
        *a = tfl_in_nchw(T, in, 0);
        *b = nb ? tfl_in_nchw(T, in, 1) : in[1];
        return 1;
    }
    if (nb && is_single(T, in[0])) {
        *a = in[0];
        *b = tfl_in_nchw(T, in, 1);
        return 1;
    }
    return 0;
}

/* ADD, SUB, MUL, DIV (their options: activation 0), in NCHW when the
 * operands are (nchw_pair). */
static int convert_binary_act(tfl_imp *T, const int *in, int *outs, const char *op) {
    int a = in[0], b = in[1];
    if (nchw_pair(T, in, &a, &b))
        T->out_nchw = 1;
    return outs[0] = tfl_activation(T, tfl_binary(T, op, a, b), tfl_opt_int(T, 0, 1, 0));
}

#define BINARY_ACT(fn, op)                                                                         \
    static int fn(tfl_imp *T, const int *in, int *outs) {                                          \
        return convert_binary_act(T, in, outs, op);                                                \
    }
BINARY_ACT(cvt_add, "add")
BINARY_ACT(cvt_sub, "subtract")
BINARY_ACT(cvt_mul, "multiply")
BINARY_ACT(cvt_div, "divide")

#define BINARY(fn, op)                                                                             \
    static int fn(tfl_imp *T, const int *in, int *outs) {                                          \
        return outs[0] = tfl_binary(T, op, in[0], in[1]);                                          \
    }
BINARY(cvt_maximum, "maximum")
BINARY(cvt_minimum, "minimum")
BINARY(cvt_pow, "power")
BINARY(cvt_less, "less")
BINARY(cvt_greater, "greater")
BINARY(cvt_less_equal, "less_equal")
BINARY(cvt_greater_equal, "greater_equal")
BINARY(cvt_equal, "equal")
BINARY(cvt_not_equal, "not_equal")
BINARY(cvt_logical_and, "logical_and")
BINARY(cvt_logical_or, "logical_or")

/* SELECT, SELECT_V2: where(condition, x, y), broadcasting. */
static int cvt_select(tfl_imp *T, const int *in, int *outs) {
    return outs[0] = tfl_call(T, "where", 3, in, NULL);
}

/* x, in NCHW when it has an NCHW value (for an elementwise op). */
static int any_layout(tfl_imp *T, const int *in) {
    if (!tfl_has_nchw(T, 0))
        return in[0];
    T->out_nchw = 1;
    return tfl_in_nchw(T, in, 0);
}

#define UNARY(fn, op)                                                                              \
    static int fn(tfl_imp *T, const int *in, int *outs) {                                          \
        return outs[0] = tfl_unary(T, op, any_layout(T, in));                                      \
    }
UNARY(cvt_relu, "nn.relu")
UNARY(cvt_logistic, "sigmoid")
UNARY(cvt_tanh, "tanh")
UNARY(cvt_exp, "exp")
UNARY(cvt_log, "log")
UNARY(cvt_sqrt, "sqrt")
UNARY(cvt_rsqrt, "rsqrt")
UNARY(cvt_neg, "negative")
UNARY(cvt_abs, "abs")
UNARY(cvt_floor, "floor")
UNARY(cvt_hard_swish, "nn.hard_swish")
UNARY(cvt_logical_not, "logical_not")
UNARY(cvt_elu, "nn.elu")
UNARY(cvt_sin, "sin")
UNARY(cvt_cos, "cos")
UNARY(cvt_ceil, "ceil")
UNARY(cvt_round, "round")
UNARY(cvt_sign, "sign")

static int cvt_relu6(tfl_imp *T, const int *in, int *outs) {
    return outs[0] = tfl_activation(T, any_layout(T, in), 3);
}

static int cvt_relu_n1_to_1(tfl_imp *T, const int *in, int *outs) {
    return outs[0] = tfl_activation(T, any_layout(T, in), 2);
}

static int cvt_square(tfl_imp *T, const int *in, int *outs) {
    return outs[0] = tfl_binary(T, "multiply", in[0], in[0]);
}

static int cvt_squared_difference(tfl_imp *T, const int *in, int *outs) {
    int d = tfl_binary(T, "subtract", in[0], in[1]);
    return outs[0] = tfl_binary(T, "multiply", d, d);
}

/* LEAKY_RELU (LeakyReluOptions: alpha 0). */
static int cvt_leaky_relu(tfl_imp *T, const int *in, int *outs) {
    char attrs[64];
    snprintf(attrs, sizeof attrs, "alpha=%.9g", (double)tfl_opt_float(T, 0, 0));
    return outs[0] = tfl_call(T, "nn.leaky_relu", 1, in, attrs);
}

/* GELU (GeluOptions: approximate 0): x/2 (1 + erf(x/sqrt 2)), or the tanh
 * form x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static int cvt_gelu(tfl_imp *T, const int *in, int *outs) {
    int x = in[0], inner;
    if (tfl_opt_int(T, 0, 1, 0)) {
        int x3 = tfl_binary(T, "multiply", tfl_binary(T, "multiply", x, x), x);
        int t = tfl_binary(T, "add", x, tfl_binary(T, "multiply", x3, tfl_scalar(T, 0.044715f)));
        inner = tfl_unary(T, "tanh", tfl_binary(T, "multiply", t, tfl_scalar(T, 0.7978845608f)));
    } else {
        inner = tfl_unary(T, "erf", tfl_binary(T, "multiply", x, tfl_scalar(T, 0.70710678118f)));
    }
    int half = tfl_binary(T, "multiply", x, tfl_scalar(T, 0.5f));
    return outs[0] =
               tfl_binary(T, "multiply", half, tfl_binary(T, "add", inner, tfl_scalar(T, 1.0f)));
}

/* QUANTIZE, DEQUANTIZE: the driver's dequantize and quantize are the op. */
static int cvt_identity(tfl_imp *T, const int *in, int *outs) {
    const gtensor_type *t = tfl_type(T, in[0]);
    if (t && t->dtype == KILN_FLOAT32)
        return outs[0] = any_layout(T, in);
    return outs[0] = in[0];
}

/* CAST: to the output tensor's type (the driver casts). */
static int cvt_cast(tfl_imp *T, const int *in, int *outs) {
    (void)T;
    return outs[0] = in[0];
}

/* SOFTMAX (SoftmaxOptions: beta 0), LOG_SOFTMAX. */
static int cvt_softmax(tfl_imp *T, const int *in, int *outs) {
    float beta = tfl_opt_float(T, 0, 0.0f);
    int x = beta == 1.0f ? in[0] : tfl_binary(T, "multiply", in[0], tfl_scalar(T, beta));
    return outs[0] = tfl_call(T, "nn.softmax", 1, &x, "axis=-1");
}

static int cvt_log_softmax(tfl_imp *T, const int *in, int *outs) {
    return outs[0] = tfl_call(T, "nn.log_softmax", 1, in, "axis=-1");
}

/* ---- reductions ------------------------------------------------------------------------ */

/* MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD (ReducerOptions:
 * keep_dims 0): over the axes of constant input 1. */
static int convert_reduce(tfl_imp *T, const int *in, int *outs, const char *op) {
    const gtensor_type *t = tfl_type(T, in[0]);
    int64_t axes[MAXD * 2];
    int n = tfl_const_ints(T, 1, axes, MAXD * 2);
    if (!t || n < 0)
        return -1;
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "axis=[");
    int seen[MAXD] = {0}, k = 0;
    for (int i = 0; i < n; i++) {
        int ax = tfl_norm_axis(T, axes[i], t->ndim);
        if (ax < 0) {
            kstr_free(&a);
            return -1;
        }
        if (!seen[ax])
            kstr_printf(&a, "%s%d", k++ ? ", " : "", ax);
        seen[ax] = 1;
    }
    int keep = (int)!!tfl_opt_int(T, 0, 1, 0);
    kstr_printf(&a, "], keepdims=%d", keep);
    int x = in[0];
    if (k == 2 && t->ndim == 4 && seen[1] && seen[2] && tfl_has_nchw(T, 0)) {
        /* over H and W (a global pool) of an NCHW value: the same [N, C]
           (or [N, C, 1, 1], kept in NCHW) */
        x = tfl_in_nchw(T, in, 0);
        kstr_free(&a);
        kstr_init(&a);
        kstr_printf(&a, "axis=[2, 3], keepdims=%d", keep);
        T->out_nchw = (unsigned)keep;
    }
    int y = k ? tfl_call(T, op, 1, &x, a.buf) : in[0];
    kstr_free(&a);
    return outs[0] = y;
}

#define REDUCE(fn, op)                                                                             \
    static int fn(tfl_imp *T, const int *in, int *outs) {                                          \
        return convert_reduce(T, in, outs, op);                                                    \
    }
REDUCE(cvt_mean, "mean")
REDUCE(cvt_sum, "sum")
REDUCE(cvt_reduce_max, "max")
REDUCE(cvt_reduce_min, "min")
REDUCE(cvt_reduce_prod, "prod")

/* ---- shapes ------------------------------------------------------------------------------ */

/* RESHAPE (ReshapeOptions: new_shape 0): the shape of input 1, else of the
 * option, else the output tensor's; one -1 takes the rest. */
static int cvt_reshape(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], s[MAXD + 1];
    int nx = tfl_dims(T, in[0], xd), n = -1;
    if (nx < 0)
        return -1;
    if (T->op->nin > 1 && in[1] >= 0) {
        n = tfl_const_ints(T, 1, s, MAXD + 1);
    } else if (tfl_options(T)) {
        fb_vec v;
        int r = fb_field_vec(tfl_options(T), 0, 4, &v);
        if (r < 0)
            return tfl_fail(T, "new_shape: %s", kiln_last_error());
        if (r && v.n > MAXD)
            return tfl_fail(T, "new_shape has %u dims", v.n);
        if (r) {
            n = (int)v.n;
            for (uint32_t i = 0; i < v.n; i++)
                s[i] = fb_vec_int(&v, i, 1);
        }
    }
    if (n < 0) {
        const tfl_tensor *o = tfl_out_tensor(T, 0);
        n = o->ndim;
        memcpy(s, o->dims, sizeof(int64_t) * (size_t)n);
    }
    if (n > MAXD)
        return tfl_fail(T, "a shape of %d dims", n);
    int64_t numel = 1, known = 1;
    int infer = -1;
    for (int d = 0; d < nx; d++)
        numel *= xd[d];
    for (int d = 0; d < n; d++) {
        if (s[d] == -1 && infer < 0)
            infer = d;
        else if (s[d] < 0 || !kiln_mul_ok(known, s[d], &known))
            return tfl_fail(T, "shape value %lld at %d", (long long)s[d], d);
    }
    if (infer >= 0) {
        if (!known || numel % known)
            return tfl_fail(T, "cannot infer dim %d: %lld elements into %lld", infer,
                            (long long)numel, (long long)known);
        s[infer] = numel / known;
    }
    return outs[0] = tfl_reshape(T, in[0], n, s);
}

/* SQUEEZE (SqueezeOptions: squeeze_dims 0; none: every dim of size 1). */
static int cvt_squeeze(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], s[MAXD];
    int nx = tfl_dims(T, in[0], xd), drop[MAXD] = {0}, any = 0;
    if (nx < 0)
        return -1;
    fb_vec v;
    int r = tfl_options(T) ? fb_field_vec(tfl_options(T), 0, 4, &v) : 0;
    if (r < 0)
        return tfl_fail(T, "squeeze_dims: %s", kiln_last_error());
    for (uint32_t i = 0; r && i < v.n; i++) {
        int ax = tfl_norm_axis(T, fb_vec_int(&v, i, 1), nx);
        if (ax < 0)
            return -1;
        if (xd[ax] != 1)
            return tfl_fail(T, "dim %d has size %lld, not 1", ax, (long long)xd[ax]);
        drop[ax] = any = 1;
    }
    int n = 0;
    for (int d = 0; d < nx; d++)
        if (!(any ? drop[d] : xd[d] == 1))
            s[n++] = xd[d];
    return outs[0] = tfl_reshape(T, in[0], n, s);
}

/* EXPAND_DIMS: a 1 inserted at constant axis input 1. */
static int cvt_expand_dims(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], s[MAXD], axis;
    int nx = tfl_dims(T, in[0], xd);
    if (nx < 0 || tfl_const_ints(T, 1, &axis, 1) != 1)
        return tfl_fail(T, "the axis must be one constant");
    if (nx >= MAXD)
        return tfl_fail(T, "the result would have more than %d dims", MAXD);
    int ax = tfl_norm_axis(T, axis, nx + 1);
    if (ax < 0)
        return -1;
    for (int d = 0, k = 0; d <= nx; d++)
        s[d] = d == ax ? 1 : xd[k++];
    return outs[0] = tfl_reshape(T, in[0], nx + 1, s);
}

/* SHAPE (ShapeOptions: out_type 0): a constant of the input's dims. */
static int cvt_shape(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD];
    int nx = tfl_dims(T, in[0], xd);
    if (nx < 0)
        return -1;
    int64_t ty = tfl_opt_int(T, 0, 1, TFL_INT32);
    return outs[0] = tfl_ints_const(T, ty == TFL_INT64 ? KILN_INT64 : KILN_INT32, nx, xd);
}

/* TRANSPOSE: by constant permutation input 1. */
static int cvt_transpose(tfl_imp *T, const int *in, int *outs) {
    int64_t p[MAXD];
    int n = tfl_const_ints(T, 1, p, MAXD);
    if (n < 0)
        return -1;
    int perm[MAXD];
    for (int d = 0; d < n; d++)
        perm[d] = (int)(p[d] < 0 || p[d] >= n ? -1 : p[d]);
    return outs[0] = tfl_transpose(T, in[0], n, perm);
}

/* CONCATENATION (ConcatenationOptions: axis 0, activation 1). */
static int cvt_concat(tfl_imp *T, const int *in, int *outs) {
    const gtensor_type *t = tfl_type(T, in[0]);
    if (!t)
        return -1;
    int ax = tfl_norm_axis(T, tfl_opt_int(T, 0, 4, 0), t->ndim);
    if (ax < 0)
        return -1;
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%d", ax);
    int y = tfl_call(T, "concatenate", T->op->nin, in, attrs);
    return outs[0] = tfl_activation(T, y, tfl_opt_int(T, 1, 1, 0));
}

/* PAD, PADV2, MIRROR_PAD: constant paddings [rank, 2] (input 1), PADV2's
 * constant value (input 2, dequantized); MIRROR_PAD's mode (option 0)
 * REFLECT (SYMMETRIC is not supported). */
static int convert_pad(tfl_imp *T, const int *in, int *outs, int mirror) {
    if (mirror && tfl_opt_int(T, 0, 1, 0) != 0)
        return tfl_fail(T, "SYMMETRIC mirror padding is not supported (REFLECT is)");
    const gtensor_type *t = tfl_type(T, in[0]);
    int64_t p[2 * MAXD];
    int n = tfl_const_ints(T, 1, p, 2 * MAXD);
    if (!t || n < 0)
        return -1;
    if (n != 2 * t->ndim)
        return tfl_fail(T, "%d padding values for a %d-D input", n, t->ndim);
    double value = 0;
    if (T->op->nin > 2 && in[2] >= 0 && tfl_const_scalar(T, 2, &value))
        return -1;
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "pad_width=[");
    for (int i = 0; i < n; i++)
        kstr_printf(&a, "%s%lld", i ? ", " : "", (long long)p[i]);
    if (mirror)
        kstr_puts(&a, "], pad_mode=\"reflect\"");
    else
        kstr_printf(&a, "], pad_value=%.9g", value);
    int y = tfl_call(T, "nn.pad", 1, in, a.buf);
    kstr_free(&a);
    return outs[0] = y;
}

static int cvt_pad(tfl_imp *T, const int *in, int *outs) {
    return convert_pad(T, in, outs, 0);
}

static int cvt_mirror_pad(tfl_imp *T, const int *in, int *outs) {
    return convert_pad(T, in, outs, 1);
}

/* GATHER (GatherOptions: axis 0, batch_dims 1). */
static int cvt_gather(tfl_imp *T, const int *in, int *outs) {
    const gtensor_type *t = tfl_type(T, in[0]);
    if (!t)
        return -1;
    if (tfl_opt_int(T, 1, 4, 0))
        return tfl_fail(T, "batch_dims is not supported");
    int ax = tfl_norm_axis(T, tfl_opt_int(T, 0, 4, 0), t->ndim);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%d", ax);
    return ax < 0 ? -1 : (outs[0] = tfl_call(T, "take", 2, in, attrs));
}

/* A strided slice of x over every dim: begin, end (numpy's, clamped) and
 * stride per dim, then reshaped to out[nout] when out is not NULL. */
static int slice_all(tfl_imp *T, int x, int nd, const int64_t *b, const int64_t *e,
                     const int64_t *s, int nout, const int64_t *out) {
    kstr a;
    kstr_init(&a);
    const int64_t *v[3] = {b, e, s};
    const char *names[3] = {"begin", "end", "strides"};
    for (int k = 0; k < 3; k++) {
        kstr_printf(&a, "%s%s=[", k ? "], " : "", names[k]);
        for (int d = 0; d < nd; d++)
            kstr_printf(&a, "%s%lld", d ? ", " : "", (long long)v[k][d]);
    }
    kstr_puts(&a, "]");
    int y = tfl_call(T, "strided_slice", 1, &x, a.buf);
    kstr_free(&a);
    return out ? tfl_reshape(T, y, nout, out) : y;
}

/* STRIDED_SLICE (StridedSliceOptions: begin_mask 0, end_mask 1,
 * ellipsis_mask 2, new_axis_mask 3, shrink_axis_mask 4, offset 5). */
static int cvt_strided_slice(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], b[MAXD], e[MAXD], s[MAXD], out[MAXD];
    int nx = tfl_dims(T, in[0], xd);
    if (nx < 0)
        return -1;
    int nb = tfl_const_ints(T, 1, b, MAXD), ne = tfl_const_ints(T, 2, e, MAXD), ns = nb;
    if (T->op->nin > 3 && in[3] >= 0)
        ns = tfl_const_ints(T, 3, s, MAXD);
    else
        for (int d = 0; d < MAXD; d++)
            s[d] = 1;
    if (nb < 0 || ne < 0 || ns < 0)
        return -1;
    if (nb != ne || nb != ns || nb > nx)
        return tfl_fail(T, "begin, end and strides of %d, %d and %d values for rank %d", nb, ne, ns,
                        nx);
    int64_t bm = tfl_opt_int(T, 0, 4, 0), em = tfl_opt_int(T, 1, 4, 0),
            elm = tfl_opt_int(T, 2, 4, 0), nam = tfl_opt_int(T, 3, 4, 0),
            sm = tfl_opt_int(T, 4, 4, 0), off = tfl_opt_int(T, 5, 1, 0);
    if (elm || nam)
        return tfl_fail(T, "ellipsis_mask and new_axis_mask are not supported");
    int n = 0;
    for (int d = 0; d < nx; d++) {
        int64_t dim = xd[d], st = d < nb ? s[d] : 1, lo, hi;
        if (!st)
            return tfl_fail(T, "stride 0 in dim %d", d);
        lo = d < nb ? b[d] : 0;
        hi = d < nb ? e[d] : dim;
        if (d < nb && off)
            hi = lo + hi;
        int shrink = d < nb && ((sm >> d) & 1);
        if (lo < 0)
            lo += dim;
        if (shrink) {
            if (lo < 0 || lo >= dim)
                return tfl_fail(T, "index %lld out of range in dim %d", (long long)b[d], d);
            hi = lo + 1;
            st = 1;
        } else {
            if (hi < 0)
                hi += dim;
            if (st > 0) {
                lo = d < nb && ((bm >> d) & 1) ? 0 : lo < 0 ? 0 : lo > dim ? dim : lo;
                hi = d >= nb || ((em >> d) & 1) ? dim : hi < 0 ? 0 : hi > dim ? dim : hi;
            } else {
                lo = (bm >> d) & 1 ? dim - 1 : lo < -1 ? -1 : lo > dim - 1 ? dim - 1 : lo;
                hi = (em >> d) & 1 ? -1 : hi < -1 ? -1 : hi > dim - 1 ? dim - 1 : hi;
                if (hi == -1)
                    hi = -dim - 1; /* numpy's "before index 0" */
            }
        }
        b[d] = lo;
        e[d] = hi;
        s[d] = st;
        if (!shrink) {
            int64_t len = st > 0 ? (hi > lo ? (hi - lo + st - 1) / st : 0)
                                 : ((hi < -dim ? -1 : hi) < lo
                                        ? (lo - (hi < -dim ? -1 : hi) + (-st) - 1) / (-st)
                                        : 0);
            out[n++] = len;
        }
    }
    return outs[0] = slice_all(T, in[0], nx, b, e, s, n, out);
}

/* SLICE: constant begin (input 1) and size (input 2; -1: to the end). */
static int cvt_slice(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], b[MAXD], sz[MAXD], e[MAXD], s[MAXD];
    int nx = tfl_dims(T, in[0], xd);
    if (nx < 0)
        return -1;
    int nb = tfl_const_ints(T, 1, b, MAXD), ns = tfl_const_ints(T, 2, sz, MAXD);
    if (nb < 0 || ns < 0)
        return -1;
    if (nb != nx || ns != nx)
        return tfl_fail(T, "begin and size of %d and %d values for rank %d", nb, ns, nx);
    for (int d = 0; d < nx; d++) {
        if (b[d] < 0 || b[d] > xd[d] || sz[d] < -1 || (sz[d] >= 0 && sz[d] > xd[d] - b[d]))
            return tfl_fail(T, "begin %lld, size %lld out of range in dim %d of %lld",
                            (long long)b[d], (long long)sz[d], d, (long long)xd[d]);
        e[d] = sz[d] < 0 ? xd[d] : b[d] + sz[d];
        s[d] = 1;
    }
    return outs[0] = slice_all(T, in[0], nx, b, e, s, 0, NULL);
}

/* Split x along ax into n parts of sizes[] (outputs outs[0..n)). */
static int split_into(tfl_imp *T, int x, int ax, int n, const int64_t *sizes, int *outs,
                      int drop_axis) {
    int64_t xd[MAXD], b[MAXD], e[MAXD], s[MAXD], od[MAXD];
    int nx = tfl_dims(T, x, xd);
    if (nx < 0)
        return -1;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (int d = 0; d < nx; d++) {
            b[d] = d == ax ? at : 0;
            e[d] = d == ax ? at + sizes[i] : xd[d];
            s[d] = 1;
            if (d != ax || !drop_axis)
                od[k++] = d == ax ? sizes[i] : xd[d];
        }
        outs[i] = slice_all(T, x, nx, b, e, s, k, od);
        if (outs[i] < 0)
            return -1;
        at += sizes[i];
    }
    return 0;
}

/* SPLIT (SplitOptions: num_splits 0): the axis is input 0, the data 1. */
static int cvt_split(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], axis, sizes[TFL_MAX_OP_IO];
    int nx = tfl_dims(T, in[1], xd);
    if (nx < 0 || tfl_const_ints(T, 0, &axis, 1) != 1)
        return tfl_fail(T, "the axis must be one constant");
    int ax = tfl_norm_axis(T, axis, nx), n = T->op->nout;
    if (ax < 0)
        return -1;
    if (xd[ax] % n)
        return tfl_fail(T, "dim %d of size %lld does not split in %d", ax, (long long)xd[ax], n);
    for (int i = 0; i < n; i++)
        sizes[i] = xd[ax] / n;
    return split_into(T, in[1], ax, n, sizes, outs, 0);
}

/* SPLIT_V: the data, constant sizes (one -1 takes the rest), constant axis. */
static int cvt_split_v(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], axis, sizes[TFL_MAX_OP_IO];
    int nx = tfl_dims(T, in[0], xd), n = T->op->nout;
    if (nx < 0 || tfl_const_ints(T, 2, &axis, 1) != 1)
        return tfl_fail(T, "the axis must be one constant");
    int ax = tfl_norm_axis(T, axis, nx);
    if (ax < 0 || tfl_const_ints(T, 1, sizes, TFL_MAX_OP_IO) != n)
        return tfl_fail(T, "the sizes must be %d constants", n);
    int64_t sum = 0;
    int infer = -1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1 && infer < 0)
            infer = i;
        else if (sizes[i] < 0 || (sum += sizes[i]) > xd[ax])
            return tfl_fail(T, "sizes do not fit dim %d of size %lld", ax, (long long)xd[ax]);
    }
    if (infer >= 0)
        sizes[infer] = xd[ax] - sum;
    else if (sum != xd[ax])
        return tfl_fail(T, "sizes sum to %lld, not %lld", (long long)sum, (long long)xd[ax]);
    return split_into(T, in[0], ax, n, sizes, outs, 0);
}

/* The dims of x (rank in *nx) and the axis of option slot 1 (PACK's and
 * UNPACK's), normalized for rank nx + grow; -1 with an error. */
static int dims_and_axis(tfl_imp *T, int x, int64_t *xd, int grow, int *nx) {
    *nx = tfl_dims(T, x, xd);
    if (*nx < 0)
        return -1;
    if (*nx + grow > MAXD)
        return tfl_fail(T, "the result would have more than %d dims", MAXD);
    return tfl_norm_axis(T, tfl_opt_int(T, 1, 4, 0), *nx + grow);
}

/* UNPACK (UnpackOptions: num 0, axis 1). */
static int cvt_unpack(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], sizes[TFL_MAX_OP_IO];
    int n = T->op->nout, nx, ax = dims_and_axis(T, in[0], xd, 0, &nx);
    if (ax < 0)
        return -1;
    if (xd[ax] != n)
        return tfl_fail(T, "%d outputs for dim %d of size %lld", n, ax, (long long)xd[ax]);
    for (int i = 0; i < n; i++)
        sizes[i] = 1;
    return split_into(T, in[0], ax, n, sizes, outs, 1);
}

/* PACK (PackOptions: values_count 0, axis 1): the inputs stacked. */
static int cvt_pack(tfl_imp *T, const int *in, int *outs) {
    int64_t xd[MAXD], s[MAXD];
    int n = T->op->nin, nx, ax = dims_and_axis(T, in[0], xd, 1, &nx);
    if (ax < 0)
        return -1;
    for (int d = 0, k = 0; d <= nx; d++)
        s[d] = d == ax ? 1 : xd[k++];
    int *parts = kiln_malloc(sizeof(int) * (size_t)n);
    if (!parts)
        return -1;
    for (int i = 0; i < n; i++)
        parts[i] = tfl_reshape(T, in[i], nx + 1, s);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%d", ax);
    int y = tfl_call(T, "concatenate", n, parts, attrs);
    kiln_free(parts);
    return outs[0] = y;
}

/* ---- the table --------------------------------------------------------------------- */

static const tfl_converter table[] = {
    {B_ADD, cvt_add, 2, 2, 1},
    {B_AVERAGE_POOL_2D, cvt_avg_pool, 1, 1, 1},
    {B_CONCATENATION, cvt_concat, 1, TFL_MAX_OP_IO, 1},
    {B_CONV_2D, cvt_conv2d, 2, 3, 1},
    {B_DEPTHWISE_CONV_2D, cvt_depthwise, 2, 3, 1},
    {B_DEQUANTIZE, cvt_identity, 1, 1, 1},
    {B_FLOOR, cvt_floor, 1, 1, 1},
    {B_FULLY_CONNECTED, cvt_fully_connected, 2, 3, 1},
    {B_LOGISTIC, cvt_logistic, 1, 1, 1},
    {B_MAX_POOL_2D, cvt_max_pool, 1, 1, 1},
    {B_MUL, cvt_mul, 2, 2, 1},
    {B_RELU, cvt_relu, 1, 1, 1},
    {B_RELU_N1_TO_1, cvt_relu_n1_to_1, 1, 1, 1},
    {B_RELU6, cvt_relu6, 1, 1, 1},
    {B_RESHAPE, cvt_reshape, 1, 2, 1},
    {B_SOFTMAX, cvt_softmax, 1, 1, 1},
    {B_TANH, cvt_tanh, 1, 1, 1},
    {B_PAD, cvt_pad, 2, 2, 1},
    {B_GATHER, cvt_gather, 2, 2, 1},
    {B_TRANSPOSE, cvt_transpose, 2, 2, 1},
    {B_MEAN, cvt_mean, 2, 2, 1},
    {B_SUB, cvt_sub, 2, 2, 1},
    {B_DIV, cvt_div, 2, 2, 1},
    {B_SQUEEZE, cvt_squeeze, 1, 1, 1},
    {B_STRIDED_SLICE, cvt_strided_slice, 3, 4, 1},
    {B_EXP, cvt_exp, 1, 1, 1},
    {B_SPLIT, cvt_split, 2, 2, 0},
    {B_LOG_SOFTMAX, cvt_log_softmax, 1, 1, 1},
    {B_CAST, cvt_cast, 1, 1, 1},
    {B_MAXIMUM, cvt_maximum, 2, 2, 1},
    {B_ARG_MAX, tfl_cvt_arg_max, 2, 2, 1},
    {B_MINIMUM, cvt_minimum, 2, 2, 1},
    {B_NEG, cvt_neg, 1, 1, 1},
    {B_PADV2, cvt_pad, 2, 3, 1},
    {B_SLICE, cvt_slice, 3, 3, 1},
    {B_EXPAND_DIMS, cvt_expand_dims, 2, 2, 1},
    {B_LOG, cvt_log, 1, 1, 1},
    {B_SUM, cvt_sum, 2, 2, 1},
    {B_SQRT, cvt_sqrt, 1, 1, 1},
    {B_RSQRT, cvt_rsqrt, 1, 1, 1},
    {B_SHAPE, cvt_shape, 1, 1, 1},
    {B_POW, cvt_pow, 2, 2, 1},
    {B_REDUCE_PROD, cvt_reduce_prod, 2, 2, 1},
    {B_REDUCE_MAX, cvt_reduce_max, 2, 2, 1},
    {B_PACK, cvt_pack, 1, TFL_MAX_OP_IO, 1},
    {B_UNPACK, cvt_unpack, 1, 1, 0},
    {B_REDUCE_MIN, cvt_reduce_min, 2, 2, 1},
    {B_SQUARE, cvt_square, 1, 1, 1},
    {B_LEAKY_RELU, cvt_leaky_relu, 1, 1, 1},
    {B_SQUARED_DIFFERENCE, cvt_squared_difference, 2, 2, 1},
    {B_ABS, cvt_abs, 1, 1, 1},
    {B_SPLIT_V, cvt_split_v, 3, 3, 0},
    {B_QUANTIZE, cvt_identity, 1, 1, 1},
    {B_HARD_SWISH, cvt_hard_swish, 1, 1, 1},
    {B_BATCH_MATMUL, cvt_batch_matmul, 2, 2, 1},
    {B_GELU, cvt_gelu, 1, 1, 1},
    {B_LESS, cvt_less, 2, 2, 1},
    {B_GREATER, cvt_greater, 2, 2, 1},
    {B_GREATER_EQUAL, cvt_greater_equal, 2, 2, 1},
    {B_LESS_EQUAL, cvt_less_equal, 2, 2, 1},
    {B_SELECT, cvt_select, 3, 3, 1},
    {B_EQUAL, cvt_equal, 2, 2, 1},
    {B_NOT_EQUAL, cvt_not_equal, 2, 2, 1},
    {B_LOGICAL_OR, cvt_logical_or, 2, 2, 1},
    {B_LOGICAL_AND, cvt_logical_and, 2, 2, 1},
    {B_LOGICAL_NOT, cvt_logical_not, 1, 1, 1},
    {B_SELECT_V2, cvt_select, 3, 3, 1},
    {B_DEPTH_TO_SPACE, tfl_cvt_depth_to_space, 1, 1, 1},
    {B_RESIZE_BILINEAR, tfl_cvt_resize_bilinear, 2, 2, 1},
    {B_SPACE_TO_DEPTH, tfl_cvt_space_to_depth, 1, 1, 1},
    {B_PRELU, tfl_cvt_prelu, 2, 2, 1},
    {B_SIN, cvt_sin, 1, 1, 1},
    {B_TRANSPOSE_CONV, tfl_cvt_transpose_conv, 3, 4, 1},
    {B_TILE, tfl_cvt_tile, 2, 2, 1},
    {B_ARG_MIN, tfl_cvt_arg_min, 2, 2, 1},
    {B_FLOOR_DIV, tfl_cvt_floor_div, 2, 2, 1},
    {B_ZEROS_LIKE, tfl_cvt_zeros_like, 1, 1, 1},
    {B_FILL, tfl_cvt_fill, 2, 2, 1},
    {B_FLOOR_MOD, tfl_cvt_floor_mod, 2, 2, 1},
    {B_RESIZE_NEAREST_NEIGHBOR, tfl_cvt_resize_nearest, 2, 2, 1},
    {B_MIRROR_PAD, cvt_mirror_pad, 2, 2, 1},
    {B_CEIL, cvt_ceil, 1, 1, 1},
    {B_ADD_N, tfl_cvt_add_n, 1, TFL_MAX_OP_IO, 1},
    {B_COS, cvt_cos, 1, 1, 1},
    {B_ELU, cvt_elu, 1, 1, 1},
    {B_ROUND, cvt_round, 1, 1, 1},
    {B_BROADCAST_TO, tfl_cvt_broadcast_to, 2, 2, 1},
    {B_SIGN, cvt_sign, 1, 1, 1},
};

const tfl_converter *tfl_find_converter(int builtin) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].builtin == builtin)
            return &table[i];
    return NULL;
}
