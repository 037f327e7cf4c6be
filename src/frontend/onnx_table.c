/* onnx_table.c: the ONNX converter table, one row per ONNX op type of the
 * default domain and opset range. This is the one place the importer maps
 * ONNX ops, and says what a node of each may carry.
 *
 * Adding a row. An ONNX op that is one kiln op taking the node's inputs in
 * the same order needs only its row:
 *
 *     {"LeakyRelu", 6, "nn.leaky_relu", NULL, IO(1, 1, 1, 1), "alpha:FLOAT=0.01"},
 *
 * op_type; the first opset whose semantics the row handles (older models
 * are told the op is not supported; a later row of the same op type takes
 * over from its own `since`, so rows of one op type are adjacent and in
 * order); the kiln op (its row in src/ops), or NULL and the converter
 * function; the least and most inputs, and outputs, a node may have
 * (IMP_ANY: no limit; the first `least` must be named, and trailing empty
 * names are absent optional ones); then the attribute schema.
 *
 * The schema lists every attribute ONNX defines for the op at the row's
 * opsets (1 to 17 are imported) as "name:TYPE", TYPE being ONNX's
 * AttributeProto type name (INT, FLOAT, STRING, INTS, TENSOR, ...), "!"
 * after the type for a required one. A node is checked against it before
 * conversion (imp_check_node): a repeated name, an attribute the op does
 * not have, or one of another type or without a value is an error naming
 * the node, op, opset and attribute. For a plain row, "=default" marks the
 * attributes passed on to the kiln op under the same name, the node's
 * value or else the default (ONNX's, in the text syntax); a required one
 * passed on has an empty default ("size:INT!=").
 *
 * Anything else (attributes turned into other attributes or inputs,
 * several kiln ops, inputs that must be constant) is a converter function
 * (imp_convert_fn, declared in onnx_convert.h, in onnx_convert.c,
 * onnx_convert_nn.c, onnx_convert_conv.c, onnx_convert_index.c,
 * onnx_convert_image.c, onnx_convert_text.c, onnx_convert_quant.c,
 * onnx_convert_rnn.c or onnx_convert_control.c by family) named in the fourth field, with NULL for
 * the kiln op:
 *
 *     {"Gemm", 7, NULL, cvt_gemm, IO(2, 3, 1, 1), "alpha:FLOAT, beta:FLOAT, ..."},
 *
 * A converter reads attributes with imp_attr_* (onnx_helpers.c), which
 * assert that the type read is the schema's. Rows are kept in the order of
 * the families below. A call on constant inputs folds as it is added, so
 * no row needs a folding case. */
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

#define IO(in_min, in_max, out_min, out_max) in_min, in_max, out_min, out_max
#define ANY IMP_ANY
#define UNARY IO(1, 1, 1, 1)
#define BINARY IO(2, 2, 1, 1)
#define REDUCE_ATTRS "axes:INTS, keepdims:INT"
/* Add, Sub, Mul, Div before opset 7 (broadcasting on request) */
#define LEGACY_BINARY_ATTRS "axis:INT, broadcast:INT"
#define WINDOW_ATTRS "auto_pad:STRING, pads:INTS, strides:INTS"
#define CONV_ATTRS WINDOW_ATTRS ", dilations:INTS, group:INT, kernel_shape:INTS"
#define POOL_ATTRS "kernel_shape:INTS!, " WINDOW_ATTRS
#define RESIZE_ATTRS                                                                               \
    "coordinate_transformation_mode:STRING, cubic_coeff_a:FLOAT, exclude_outside:INT, "            \
    "extrapolation_value:FLOAT, mode:STRING, nearest_mode:STRING"

#define ROI_ALIGN_ATTRS                                                                            \
    "mode:STRING, output_height:INT, output_width:INT, sampling_ratio:INT, spatial_scale:FLOAT"

#define RNN_ATTRS                                                                                  \
    "activation_alpha:FLOATS, activation_beta:FLOATS, activations:STRINGS, clip:FLOAT, "           \
    "direction:STRING, hidden_size:INT"

static const imp_converter g_table[] = {
    /* unary elementwise */
    {"Relu", 1, "nn.relu", NULL, UNARY, NULL},
    {"Sigmoid", 1, "sigmoid", NULL, UNARY, NULL},
    {"Tanh", 1, "tanh", NULL, UNARY, NULL},
    {"Exp", 1, "exp", NULL, UNARY, NULL},
    {"Log", 1, "log", NULL, UNARY, NULL},
    {"Sqrt", 1, "sqrt", NULL, UNARY, NULL},
    {"Neg", 1, "negative", NULL, UNARY, NULL},
    {"Abs", 1, "abs", NULL, UNARY, NULL},
    {"Erf", 9, "erf", NULL, UNARY, NULL},
    {"Floor", 1, "floor", NULL, UNARY, NULL},
    {"Ceil", 1, "ceil", NULL, UNARY, NULL},
    {"Round", 11, "round", NULL, UNARY, NULL},
    {"Not", 1, "logical_not", NULL, UNARY, NULL},
    {"Reciprocal", 6, "reciprocal", NULL, UNARY, NULL},
    {"Sign", 9, "sign", NULL, UNARY, NULL},
    {"Softplus", 1, "nn.softplus", NULL, UNARY, NULL},
    {"Softsign", 1, "nn.softsign", NULL, UNARY, NULL},
    {"LeakyRelu", 6, "nn.leaky_relu", NULL, UNARY, "alpha:FLOAT=0.01"},
    {"Elu", 6, "nn.elu", NULL, UNARY, "alpha:FLOAT=1.0"},
    {"Selu", 6, "nn.selu", NULL, UNARY,
     "alpha:FLOAT=1.67326319217681884765625, gamma:FLOAT=1.05070102214813232421875"},
    {"Clip", 6, NULL, cvt_clip, UNARY, "min:FLOAT, max:FLOAT"},
    {"Clip", 11, NULL, cvt_clip, IO(1, 3, 1, 1), NULL},
    {"PRelu", 6, NULL, cvt_prelu, BINARY, NULL},
    {"PRelu", 7, NULL, cvt_prelu, BINARY, NULL},
    {"HardSigmoid", 6, NULL, cvt_hard_sigmoid, UNARY, "alpha:FLOAT, beta:FLOAT"},
    {"HardSwish", 14, "nn.hard_swish", NULL, UNARY, NULL},
    {"Celu", 12, "nn.celu", NULL, UNARY, "alpha:FLOAT=1.0"},
    {"Shrink", 9, "nn.shrink", NULL, UNARY, "bias:FLOAT=0.0, lambd:FLOAT=0.5"},
    {"ThresholdedRelu", 10, "nn.thresholded_relu", NULL, UNARY, "alpha:FLOAT=1.0"},
    {"Mish", 18, "nn.mish", NULL, UNARY, NULL},
    {"Sin", 7, "sin", NULL, UNARY, NULL},
    {"Cos", 7, "cos", NULL, UNARY, NULL},
    {"Tan", 7, "tan", NULL, UNARY, NULL},
    {"Asin", 7, "asin", NULL, UNARY, NULL},
    {"Acos", 7, "acos", NULL, UNARY, NULL},
    {"Atan", 7, "atan", NULL, UNARY, NULL},
    {"Sinh", 9, "sinh", NULL, UNARY, NULL},
    {"Cosh", 9, "cosh", NULL, UNARY, NULL},
    {"Asinh", 9, "asinh", NULL, UNARY, NULL},
    {"Acosh", 9, "acosh", NULL, UNARY, NULL},
    {"Atanh", 9, "atanh", NULL, UNARY, NULL},
    {"IsNaN", 9, "isnan", NULL, UNARY, NULL},
    {"IsInf", 10, "isinf", NULL, UNARY, "detect_negative:INT=1, detect_positive:INT=1"},
    {"Cast", 6, NULL, cvt_cast, UNARY, "to:INT!"},
    {"CastLike", 15, NULL, cvt_cast_like, BINARY, NULL},
    {"Identity", 1, NULL, cvt_identity, UNARY, NULL},
    {"Dropout", 7, NULL, cvt_dropout, IO(1, 1, 1, 2), "ratio:FLOAT"},
    {"Dropout", 12, NULL, cvt_dropout, IO(1, 3, 1, 2), "seed:INT"},
    /* binary (numpy broadcasting) and variadic */
    {"Add", 1, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS ", consumed_inputs:INTS"},
    {"Add", 6, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS},
    {"Add", 7, "add", NULL, BINARY, NULL},
    {"Sub", 1, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS ", consumed_inputs:INTS"},
    {"Sub", 6, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS},
    {"Sub", 7, "subtract", NULL, BINARY, NULL},
    {"Mul", 1, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS ", consumed_inputs:INTS"},
    {"Mul", 6, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS},
    {"Mul", 7, "multiply", NULL, BINARY, NULL},
    {"Div", 1, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS ", consumed_inputs:INTS"},
    {"Div", 6, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS},
    {"Div", 7, "divide", NULL, BINARY, NULL},
    {"Equal", 7, "equal", NULL, BINARY, NULL},
    {"Less", 7, "less", NULL, BINARY, NULL},
    {"Greater", 7, "greater", NULL, BINARY, NULL},
    {"LessOrEqual", 12, "less_equal", NULL, BINARY, NULL},
    {"GreaterOrEqual", 12, "greater_equal", NULL, BINARY, NULL},
    {"And", 7, "logical_and", NULL, BINARY, NULL},
    {"Or", 7, "logical_or", NULL, BINARY, NULL},
    {"Xor", 7, "logical_xor", NULL, BINARY, NULL},
    {"Mod", 10, NULL, cvt_mod, BINARY, "fmod:INT"},
    {"BitShift", 11, NULL, cvt_bitshift, BINARY, "direction:STRING!"},
    {"Where", 9, "where", NULL, IO(3, 3, 1, 1), NULL},
    {"Pow", 1, NULL, cvt_legacy_binary, BINARY, LEGACY_BINARY_ATTRS},
    {"Pow", 7, NULL, cvt_power, BINARY, NULL},
    {"Max", 6, NULL, cvt_variadic, IO(1, ANY, 1, 1), NULL},
    {"Min", 6, NULL, cvt_variadic, IO(1, ANY, 1, 1), NULL},
    {"Sum", 6, NULL, cvt_variadic, IO(1, ANY, 1, 1), NULL},
    {"Mean", 6, NULL, cvt_mean, IO(1, ANY, 1, 1), NULL},
    /* constants and shapes */
    {"Constant", 1, NULL, cvt_constant, IO(0, 0, 1, 1), "value:TENSOR!"},
    {"Constant", 9, NULL, cvt_constant, IO(0, 0, 1, 1),
     "value:TENSOR, sparse_value:SPARSE_TENSOR, value_float:FLOAT, value_floats:FLOATS, "
     "value_int:INT, value_ints:INTS, value_string:STRING, value_strings:STRINGS"},
    {"Shape", 1, NULL, cvt_shape, UNARY, "start:INT, end:INT"},
    {"Size", 1, NULL, cvt_size, UNARY, NULL},
    {"ConstantOfShape", 9, NULL, cvt_constant_of_shape, UNARY, "value:TENSOR"},
    {"Gather", 1, NULL, cvt_gather, BINARY, "axis:INT"},
    {"Concat", 4, NULL, cvt_concat, IO(1, ANY, 1, 1), "axis:INT!"},
    {"Reshape", 5, NULL, cvt_reshape, BINARY, "allowzero:INT"},
    {"Flatten", 1, NULL, cvt_flatten, UNARY, "axis:INT"},
    {"Unsqueeze", 1, NULL, cvt_unsqueeze, UNARY, "axes:INTS!"},
    {"Unsqueeze", 13, NULL, cvt_unsqueeze, BINARY, NULL},
    {"Squeeze", 1, NULL, cvt_squeeze, UNARY, "axes:INTS"},
    {"Squeeze", 13, NULL, cvt_squeeze, IO(1, 2, 1, 1), NULL},
    {"Slice", 1, NULL, cvt_slice, UNARY, "starts:INTS!, ends:INTS!, axes:INTS"},
    {"Slice", 10, NULL, cvt_slice, IO(3, 5, 1, 1), NULL},
    {"Expand", 8, NULL, cvt_expand, BINARY, NULL},
    {"Pad", 2, NULL, cvt_pad, UNARY, "mode:STRING, pads:INTS!, value:FLOAT"},
    {"Pad", 11, NULL, cvt_pad, IO(2, 3, 1, 1), "mode:STRING"},
    {"Transpose", 1, NULL, cvt_transpose, UNARY, "perm:INTS"},
    {"Split", 2, NULL, cvt_split, IO(1, 1, 1, ANY), "axis:INT, split:INTS"},
    {"Split", 13, NULL, cvt_split, IO(1, 2, 1, ANY), "axis:INT"},
    /* reductions */
    {"ReduceSum", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceSum", 13, NULL, cvt_reduce, IO(1, 2, 1, 1), "keepdims:INT, noop_with_empty_axes:INT"},
    {"ReduceMean", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceMax", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceMin", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceProd", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceL1", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceL2", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceLogSum", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceLogSumExp", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ReduceSumSquare", 1, NULL, cvt_reduce, UNARY, REDUCE_ATTRS},
    {"ArgMax", 1, NULL, cvt_arg_reduce, UNARY, "axis:INT, keepdims:INT, select_last_index:INT"},
    {"ArgMin", 1, NULL, cvt_arg_reduce, UNARY, "axis:INT, keepdims:INT, select_last_index:INT"},
    /* normalization */
    {"Softmax", 1, NULL, cvt_softmax, UNARY, "axis:INT"},
    {"LogSoftmax", 1, NULL, cvt_softmax, UNARY, "axis:INT"},
    {"Hardmax", 1, NULL, cvt_softmax, UNARY, "axis:INT"},
    {"LayerNormalization", 17, NULL, cvt_layer_norm, IO(2, 3, 1, 3),
     "axis:INT, epsilon:FLOAT, stash_type:INT"},
    {"InstanceNormalization", 6, NULL, cvt_instance_norm, IO(3, 3, 1, 1), "epsilon:FLOAT"},
    {"LRN", 1, "nn.lrn", NULL, UNARY,
     "alpha:FLOAT=0.0001, beta:FLOAT=0.75, bias:FLOAT=1.0, size:INT!="},
    {"MeanVarianceNormalization", 9, NULL, cvt_mvn, UNARY, "axes:INTS"},
    {"BatchNormalization", 6, NULL, cvt_batch_norm, IO(5, 5, 1, 5),
     "epsilon:FLOAT, is_test:INT, momentum:FLOAT, spatial:INT"},
    {"BatchNormalization", 7, NULL, cvt_batch_norm, IO(5, 5, 1, 5),
     "epsilon:FLOAT, momentum:FLOAT, spatial:INT"},
    {"BatchNormalization", 14, NULL, cvt_batch_norm, IO(5, 5, 1, 3),
     "epsilon:FLOAT, momentum:FLOAT, training_mode:INT"},
    /* losses */
    {"NegativeLogLikelihoodLoss", 12, NULL, cvt_loss, IO(2, 3, 1, 1),
     "ignore_index:INT, reduction:STRING"},
    {"SoftmaxCrossEntropyLoss", 12, NULL, cvt_loss, IO(2, 3, 1, 2),
     "ignore_index:INT, reduction:STRING"},
    /* convolution, pooling, matmul; Det (src/ops/linalg.c) */
    {"Conv", 1, NULL, cvt_conv, IO(2, 3, 1, 1), CONV_ATTRS},
    {"ConvInteger", 10, NULL, cvt_conv_integer, IO(2, 4, 1, 1), CONV_ATTRS},
    {"ConvTranspose", 1, NULL, cvt_conv_transpose, IO(2, 3, 1, 1),
     CONV_ATTRS ", output_padding:INTS, output_shape:INTS"},
    {"MaxPool", 1, NULL, cvt_pool, UNARY, POOL_ATTRS},
    {"MaxPool", 8, NULL, cvt_pool, IO(1, 1, 1, 2), POOL_ATTRS ", storage_order:INT"},
    {"MaxPool", 10, NULL, cvt_pool, IO(1, 1, 1, 2),
     POOL_ATTRS ", storage_order:INT, ceil_mode:INT, dilations:INTS"},
    {"AveragePool", 1, NULL, cvt_pool, UNARY, POOL_ATTRS},
    {"AveragePool", 7, NULL, cvt_pool, UNARY, POOL_ATTRS ", count_include_pad:INT"},
    {"AveragePool", 10, NULL, cvt_pool, UNARY, POOL_ATTRS ", count_include_pad:INT, ceil_mode:INT"},
    {"LpPool", 2, NULL, cvt_pool, UNARY, POOL_ATTRS ", p:INT"},
    {"MaxUnpool", 9, NULL, cvt_max_unpool, IO(2, 3, 1, 1),
     "kernel_shape:INTS!, pads:INTS, strides:INTS"},
    {"GlobalAveragePool", 1, NULL, cvt_global_pool, UNARY, NULL},
    {"GlobalMaxPool", 1, NULL, cvt_global_pool, UNARY, NULL},
    {"GlobalLpPool", 2, NULL, cvt_global_pool, UNARY, "p:INT"},
    {"Gemm", 6, NULL, cvt_gemm, IO(3, 3, 1, 1),
     "alpha:FLOAT, beta:FLOAT, broadcast:INT, transA:INT, transB:INT"},
    {"Gemm", 7, NULL, cvt_gemm, IO(2, 3, 1, 1), "alpha:FLOAT, beta:FLOAT, transA:INT, transB:INT"},
    {"MatMul", 1, NULL, cvt_matmul, BINARY, NULL},
    {"MatMulInteger", 10, NULL, cvt_matmul_integer, IO(2, 4, 1, 1), NULL},
    {"Det", 11, "det", NULL, UNARY, NULL},
    /* indexing and layout (src/ops/index.c, transform.c; onnx_convert_index.c) */
    {"GatherElements", 11, "gather_elements", NULL, BINARY, "axis:INT=0"},
    {"GatherND", 11, "gather_nd", NULL, BINARY, NULL},
    {"GatherND", 12, "gather_nd", NULL, BINARY, "batch_dims:INT=0"},
    {"Scatter", 9, "scatter_elements", NULL, IO(3, 3, 1, 1), "axis:INT=0"},
    {"ScatterElements", 11, "scatter_elements", NULL, IO(3, 3, 1, 1), "axis:INT=0"},
    {"ScatterElements", 16, NULL, cvt_scatter, IO(3, 3, 1, 1), "axis:INT, reduction:STRING"},
    {"ScatterND", 11, "scatter_nd", NULL, IO(3, 3, 1, 1), NULL},
    {"ScatterND", 16, NULL, cvt_scatter, IO(3, 3, 1, 1), "reduction:STRING"},
    {"OneHot", 11, NULL, cvt_one_hot, IO(3, 3, 1, 1), "axis:INT"},
    {"ReverseSequence", 10, "reverse_sequence", NULL, BINARY, "batch_axis:INT=1, time_axis:INT=0"},
    {"Trilu", 14, "trilu", NULL, IO(1, 2, 1, 1), "upper:INT=1"},
    {"EyeLike", 9, NULL, cvt_eye_like, UNARY, "dtype:INT, k:INT"},
    {"NonZero", 9, NULL, cvt_nonzero, UNARY, NULL},
    {"Compress", 9, NULL, cvt_compress, BINARY, "axis:INT"},
    {"Unique", 11, NULL, cvt_unique, IO(1, 1, 1, 4), "axis:INT, sorted:INT"},
    {"HannWindow", 17, NULL, cvt_window, UNARY, "output_datatype:INT, periodic:INT"},
    {"HammingWindow", 17, NULL, cvt_window, UNARY, "output_datatype:INT, periodic:INT"},
    {"BlackmanWindow", 17, NULL, cvt_window, UNARY, "output_datatype:INT, periodic:INT"},
    {"Range", 11, NULL, cvt_range, IO(3, 3, 1, 1), NULL},
    {"CumSum", 11, NULL, cvt_cumsum, BINARY, "exclusive:INT, reverse:INT"},
    {"TopK", 1, NULL, cvt_topk, IO(1, 1, 2, 2), "axis:INT, k:INT!"},
    {"TopK", 10, NULL, cvt_topk, IO(2, 2, 2, 2), "axis:INT"},
    {"TopK", 11, NULL, cvt_topk, IO(2, 2, 2, 2), "axis:INT, largest:INT, sorted:INT"},
    {"Tile", 6, NULL, cvt_tile, BINARY, NULL},
    {"DepthToSpace", 1, NULL, cvt_depth_space, UNARY, "blocksize:INT!"},
    {"DepthToSpace", 11, NULL, cvt_depth_space, UNARY, "blocksize:INT!, mode:STRING"},
    {"SpaceToDepth", 1, NULL, cvt_depth_space, UNARY, "blocksize:INT!"},
    /* resizing and sampling (src/ops/image.c; onnx_convert_image.c) */
    {"Upsample", 7, NULL, cvt_resize, UNARY, "mode:STRING, scales:FLOATS!"},
    {"Upsample", 9, NULL, cvt_resize, BINARY, "mode:STRING"},
    {"Resize", 10, NULL, cvt_resize, BINARY, "mode:STRING"},
    {"Resize", 11, NULL, cvt_resize, IO(3, 4, 1, 1), RESIZE_ATTRS},
    {"Resize", 13, NULL, cvt_resize, IO(1, 4, 1, 1), RESIZE_ATTRS},
    {"GridSample", 16, NULL, cvt_grid_sample, BINARY,
     "align_corners:INT, mode:STRING, padding_mode:STRING"},
    {"RoiAlign", 10, NULL, cvt_roi_align, IO(3, 3, 1, 1), ROI_ALIGN_ATTRS},
    {"RoiAlign", 16, NULL, cvt_roi_align, IO(3, 3, 1, 1),
     ROI_ALIGN_ATTRS ", coordinate_transformation_mode:STRING"},
    {"NonMaxSuppression", 10, NULL, cvt_nms, IO(2, 5, 1, 1), "center_point_box:INT"},
    /* text (src/ops/text.c; onnx_convert_text.c) */
    {"TfIdfVectorizer", 9, NULL, cvt_tfidf, UNARY,
     "max_gram_length:INT!, max_skip_count:INT!, min_gram_length:INT!, mode:STRING!, "
     "ngram_counts:INTS!, ngram_indexes:INTS!, pool_int64s:INTS, pool_strings:STRINGS, "
     "weights:FLOATS"},
    /* quantization (onnx_convert_quant.c) */
    {"QuantizeLinear", 10, NULL, cvt_quantize_linear, IO(2, 3, 1, 1), NULL},
    {"QuantizeLinear", 13, NULL, cvt_quantize_linear, IO(2, 3, 1, 1), "axis:INT"},
    {"DequantizeLinear", 10, NULL, cvt_dequantize_linear, IO(2, 3, 1, 1), NULL},
    {"DequantizeLinear", 13, NULL, cvt_dequantize_linear, IO(2, 3, 1, 1), "axis:INT"},
    {"DynamicQuantizeLinear", 11, NULL, cvt_dynamic_quantize_linear, IO(1, 1, 3, 3), NULL},
    {"QLinearMatMul", 10, NULL, cvt_qlinear_matmul, IO(8, 8, 1, 1), NULL},
    {"QLinearConv", 10, NULL, cvt_qlinear_conv, IO(8, 9, 1, 1), CONV_ATTRS},
    /* recurrent networks (unrolled) and Einsum (onnx_convert_rnn.c) */
    {"RNN", 7, NULL, cvt_rnn, IO(3, 6, 0, 2), RNN_ATTRS},
    {"RNN", 14, NULL, cvt_rnn, IO(3, 6, 0, 2), RNN_ATTRS ", layout:INT"},
    {"GRU", 7, NULL, cvt_rnn, IO(3, 6, 0, 2), RNN_ATTRS ", linear_before_reset:INT"},
    {"GRU", 14, NULL, cvt_rnn, IO(3, 6, 0, 2), RNN_ATTRS ", layout:INT, linear_before_reset:INT"},
    {"LSTM", 7, NULL, cvt_rnn, IO(3, 8, 0, 3), RNN_ATTRS ", input_forget:INT"},
    {"LSTM", 14, NULL, cvt_rnn, IO(3, 8, 0, 3), RNN_ATTRS ", input_forget:INT, layout:INT"},
    {"Einsum", 12, NULL, cvt_einsum, IO(1, ANY, 1, 1), "equation:STRING!"},
    /* control flow over sub-graphs (onnx_convert_control.c); Loop's trip
       count and condition, and Scan 8's sequence_lens, may be absent */
    {"If", 1, NULL, cvt_if, IO(1, 1, 1, ANY), "else_branch:GRAPH!, then_branch:GRAPH!"},
    {"Loop", 1, NULL, cvt_loop, IO(0, ANY, 1, ANY), "body:GRAPH!"},
    {"Scan", 8, NULL, cvt_scan, IO(0, ANY, 1, ANY),
     "body:GRAPH!, directions:INTS, num_scan_inputs:INT!"},
    {"Scan", 9, NULL, cvt_scan, IO(1, ANY, 1, ANY),
     "body:GRAPH!, num_scan_inputs:INT!, scan_input_axes:INTS, scan_input_directions:INTS, "
     "scan_output_axes:INTS, scan_output_directions:INTS"},
};

#define NROWS (sizeof g_table / sizeof g_table[0])

const imp_converter *imp_find_converter(const char *op_type, int64_t opset) {
    const imp_converter *best = NULL;
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(g_table[i].op_type, op_type) == 0 && (opset < 0 || g_table[i].since <= opset))
            best = &g_table[i];
    return best;
}

/* The attribute text of a plain row: each schema attribute with a default,
 * the node's value or the default (imp_check_node has checked the types). */
static void row_attrs(imp *I, const Onnx__NodeProto *n, kstr *out) {
    imp_attr_spec e;
    for (const char *p = I->row->attrs; imp_schema_next(&p, &e);) {
        if (!e.def)
            continue;
        kstr_printf(out, "%s%s=", out->len ? ", " : "", e.name);
        const Onnx__AttributeProto *a = imp_attr(I, n, e.name, e.type);
        if (a && e.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
            kstr_printf(out, "%.9gf", a->f);
        else if (a && e.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
            kstr_printf(out, "%lld", (long long)a->i);
        else
            kstr_printf(out, "%.*s", (int)e.def_len, e.def);
        KILN_ASSERT(!a || e.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ||
                    e.type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    }
}

int imp_convert(imp *I, const Onnx__NodeProto *n, const imp_converter *c, int *outs) {
    if (imp_check_node(I, n, c) < 0)
        return -1;
    I->row = c;
    if (c->convert)
        return c->convert(I, n, outs);
    int k = imp_ninputs(n), in[16];
    KILN_ASSERT(k <= 16); /* the row's in_max is smaller */
    for (int i = 0; i < k; i++)
        in[i] = imp_input(I, n, i);
    kstr a;
    kstr_init(&a);
    row_attrs(I, n, &a);
    outs[0] = imp_call(I, n, c->op, k, in, a.buf);
    kstr_free(&a);
    return outs[0];
}
