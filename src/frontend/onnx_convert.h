/* onnx_convert.h: shared by the ONNX op converters (onnx_convert.c: the
 * table, elementwise, constants and shapes; onnx_convert_nn.c: reductions,
 * normalization, convolution, pooling, matmul and layout). */
#ifndef KILN_FRONTEND_ONNX_CONVERT_H
#define KILN_FRONTEND_ONNX_CONVERT_H

#include "onnx_import.h"

#define MAXD KILN_MAX_NDIM

/* Element i of a constant as an int64. */
KILN_HIDDEN int64_t cvt_get_i(const kiln_ndarray *a, int64_t i);
/* 1 if every dim of t is concrete. */
KILN_HIDDEN int cvt_concrete(const gtensor_type *t);
/* A 0-d constant v of dtype dt. */
KILN_HIDDEN int cvt_scalar_of(imp *I, const Onnx__NodeProto *n, kiln_dtype dt, double v);
/* A 0-d constant v of the dtype of node `like`. */
KILN_HIDDEN int cvt_float_const_like(imp *I, const Onnx__NodeProto *n, int like, double v);
/* A binary graph op on nodes a and b (folded when both are constant); -1 if
 * either is -1. */
KILN_HIDDEN int cvt_binary_of(imp *I, const Onnx__NodeProto *n, const char *op, int a, int b);
KILN_HIDDEN int cvt_unary_of(imp *I, const Onnx__NodeProto *n, const char *op, int x);
/* Node x reshaped to dims[nd] (folded for constants). */
KILN_HIDDEN int cvt_reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd, const int64_t *dims);
/* Up to MAXD values of constant input i: the count, -1 if absent, -2 if not constant. */
KILN_HIDDEN int cvt_const_ints(imp *I, const Onnx__NodeProto *n, int i, int64_t *v);
/* Append ", name=[v0, v1, ...]" (no comma first) to an attribute string. */
KILN_HIDDEN void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v);

/* Converters in onnx_convert_nn.c (imp_convert_fn). */
#define KILN_CVT(name) KILN_HIDDEN int name(imp *I, const Onnx__NodeProto *n, int *outs)
KILN_CVT(cvt_reduce);
KILN_CVT(cvt_arg_reduce);
KILN_CVT(cvt_layer_norm);
KILN_CVT(cvt_conv);
KILN_CVT(cvt_pool);
KILN_CVT(cvt_global_pool);
KILN_CVT(cvt_batch_norm);
KILN_CVT(cvt_gemm);
KILN_CVT(cvt_matmul);
KILN_CVT(cvt_softmax);
KILN_CVT(cvt_transpose);
KILN_CVT(cvt_split);
#undef KILN_CVT

#endif
