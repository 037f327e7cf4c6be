/* onnx_convert.h: the converter functions the table (onnx_table.c) names:
 * onnx_convert.c has elementwise ops with more than a 1:1 mapping,
 * constants and shapes; onnx_convert_nn.c has reductions, normalization,
 * losses, matmul and layout; onnx_convert_conv.c convolutions and pooling;
 * onnx_convert_index.c has the indexing ops (gather, scatter, TopK, ...)
 * and Tile, DepthToSpace and SpaceToDepth; onnx_convert_image.c has Resize,
 * Upsample, GridSample and RoiAlign; onnx_convert_text.c TfIdfVectorizer;
 * onnx_convert_quant.c the quantization ops
 * (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
 * QLinearConv); onnx_convert_rnn.c has RNN, GRU and LSTM (unrolled over the
 * time steps) and Einsum; onnx_convert_control.c If, Loop and Scan, whose
 * GRAPH attributes become sub-graphs. Each is an imp_convert_fn. */
#ifndef KILN_FRONTEND_ONNX_CONVERT_H
#define KILN_FRONTEND_ONNX_CONVERT_H

#include "onnx_import.h"

#define KILN_CVT(name) KILN_HIDDEN int name(imp *I, const Onnx__NodeProto *n, int *outs)
/* onnx_convert.c */
KILN_CVT(cvt_variadic);
KILN_CVT(cvt_legacy_binary);
KILN_CVT(cvt_power);
KILN_CVT(cvt_mean);
KILN_CVT(cvt_mod);
KILN_CVT(cvt_bitshift);
KILN_CVT(cvt_clip);
KILN_CVT(cvt_prelu);
KILN_CVT(cvt_hard_sigmoid);
KILN_CVT(cvt_cast);
KILN_CVT(cvt_cast_like);
KILN_CVT(cvt_identity);
KILN_CVT(cvt_dropout);
KILN_CVT(cvt_constant);
KILN_CVT(cvt_shape);
KILN_CVT(cvt_size);
KILN_CVT(cvt_constant_of_shape);
KILN_CVT(cvt_gather);
KILN_CVT(cvt_concat);
KILN_CVT(cvt_reshape);
KILN_CVT(cvt_flatten);
KILN_CVT(cvt_unsqueeze);
KILN_CVT(cvt_squeeze);
KILN_CVT(cvt_slice);
KILN_CVT(cvt_expand);
KILN_CVT(cvt_pad);
/* onnx_convert_nn.c */
KILN_CVT(cvt_reduce);
KILN_CVT(cvt_arg_reduce);
KILN_CVT(cvt_layer_norm);
KILN_CVT(cvt_instance_norm);
KILN_CVT(cvt_mvn);
KILN_CVT(cvt_loss);
KILN_CVT(cvt_batch_norm);
KILN_CVT(cvt_gemm);
KILN_CVT(cvt_matmul);
KILN_CVT(cvt_matmul_integer);
KILN_CVT(cvt_softmax);
KILN_CVT(cvt_transpose);
KILN_CVT(cvt_split);
/* onnx_convert_conv.c: convolutions and pooling */
KILN_CVT(cvt_conv);
KILN_CVT(cvt_conv_integer);
KILN_CVT(cvt_conv_transpose);
KILN_CVT(cvt_pool);
KILN_CVT(cvt_global_pool);
KILN_CVT(cvt_max_unpool);
/* onnx_convert_index.c: indexing and layout */
KILN_CVT(cvt_scatter);
KILN_CVT(cvt_one_hot);
KILN_CVT(cvt_cumsum);
KILN_CVT(cvt_topk);
KILN_CVT(cvt_eye_like);
KILN_CVT(cvt_window);
KILN_CVT(cvt_nonzero);
KILN_CVT(cvt_compress);
KILN_CVT(cvt_unique);
KILN_CVT(cvt_range);
KILN_CVT(cvt_tile);
KILN_CVT(cvt_depth_space);
/* onnx_convert_image.c: resizing and sampling */
KILN_CVT(cvt_resize);
KILN_CVT(cvt_grid_sample);
KILN_CVT(cvt_roi_align);
KILN_CVT(cvt_nms);
/* onnx_convert_text.c: text */
KILN_CVT(cvt_tfidf);
/* onnx_convert_quant.c: quantization */
KILN_CVT(cvt_quantize_linear);
KILN_CVT(cvt_dequantize_linear);
KILN_CVT(cvt_dynamic_quantize_linear);
KILN_CVT(cvt_qlinear_matmul);
KILN_CVT(cvt_qlinear_conv);
/* onnx_convert_rnn.c: recurrent networks and Einsum */
KILN_CVT(cvt_rnn);
KILN_CVT(cvt_einsum);
/* onnx_convert_control.c: If, Loop and Scan over their bodies */
KILN_CVT(cvt_if);
KILN_CVT(cvt_loop);
KILN_CVT(cvt_scan);
#undef KILN_CVT

/* onnx_convert_conv.c, for MatMulInteger too: an int8 or uint8 input x as
 * int32 minus its zero point z (if >= 0): one element, or where per > 1 a
 * 1-D one of per elements, reshaped to [per, 1, ...] of rank zrank. */
KILN_HIDDEN int cvt_int_minus_zero(imp *I, const Onnx__NodeProto *n, int x, int z, int64_t per,
                                   int zrank);
/* onnx_convert_conv.c, for QLinearConv too: Conv of x by w (+ the bias b
 * if >= 0) with node n's window and group. */
KILN_HIDDEN int cvt_conv_of(imp *I, const Onnx__NodeProto *n, int x, int w, int b);
/* qnn.conv2d of x by w with q = {x_zero_point, w_zero_point, x_scale,
 * w_scale} (+ the int32 bias b if >= 0), node n's window and group; -2
 * without an error for a window that is not 1-D or 2-D. */
KILN_HIDDEN int cvt_qconv_of(imp *I, const Onnx__NodeProto *n, int x, int w, const int q[4], int b);
/* onnx_convert_nn.c, for QLinearMatMul too: ONNX MatMul of a and b. */
KILN_HIDDEN int cvt_matmul_of(imp *I, const Onnx__NodeProto *n, int a, int b);

/* onnx_convert.c, for the recurrent converters too: clip(alpha*x + beta,
 * 0, 1); the constant scalar (node id) broadcast to dims[nd]. */
KILN_HIDDEN int cvt_hard_sigmoid_of(imp *I, const Onnx__NodeProto *n, int x, double alpha,
                                    double beta);
KILN_HIDDEN int cvt_filled(imp *I, const Onnx__NodeProto *n, int scalar, int nd,
                           const int64_t *dims);

#endif
