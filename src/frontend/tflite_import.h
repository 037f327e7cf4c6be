/* tflite_import.h: the TFLite importer's state and what its converters
 * share. The frontend's files call one way only:
 *
 *   tflite_import.c     the driver: model -> graph, operator by operator;
 *                       it dequantizes the quantized inputs of each
 *                       operator and quantizes its quantized outputs
 *     -> tflite_convert.c   the converter table (one row per builtin
 *                           operator) and converters, which see float
 *                           values in TFLite's layout (NHWC)
 *       -> tflite_helpers.c what the driver and converters share (this
 *                           header); it calls nothing above it
 *   tflite_load.c       the checked model (tflite_load.h)
 *     -> flatbuf.c      the verifying FlatBuffer reader
 *
 * Quantized models: a converter computes in float32 on dequantized
 * operands (qnn.dequantize of the int8/uint8/int32 tensors), and each
 * quantized output is qnn.quantize'd with the output tensor's scale and
 * zero point: TFLite's graph in the QDQ form that kiln's ONNX frontend
 * gives QDQ models (docs/TFLITE.md). */
#ifndef KILN_FRONTEND_TFLITE_IMPORT_H
#define KILN_FRONTEND_TFLITE_IMPORT_H

#include "../graph/graph_internal.h"
#include "tflite_load.h"

typedef struct tfl_imp {
    struct kiln_graph *g;
    const tfl_model *m;
    const char *path;
    int *ids;     /* tensor index -> node id of its value as TFLite holds it, -1 */
    int *fl;      /* tensor index -> node id of its float32 value, -1 */
    int op_index; /* the operator being converted */
    const tfl_op *op;
    int failed;   /* the current operator has failed: keep its first error */
    int reshaped; /* input_shapes were given: the file's shapes may not hold */
    /* a 4-D tensor an NCHW operator wrote also has its value in NCHW, so
       the next NCHW operator reads it without a transpose pair: the node
       as stored (int8 or float), and (-1 for a quantized one) as float32 */
    int *nchw, *fl_nchw;
    unsigned out_nchw; /* bit k: the converter's output k is in NCHW */
    int reference;     /* KILN_TFLITE_REFERENCE_KERNELS: quantize with TFLite's rounding */
} tfl_imp;

/* Convert one operator: in[i] is the float32 value of each input that is
 * a float, quantized or float16 tensor, the value as stored otherwise (an
 * int32 shape, say), -1 for an absent optional input; write the float32
 * (or, for a non-float output, the stored) value of each output to outs.
 * >= 0, or -1 with tfl_fail's error. */
typedef int (*tfl_convert_fn)(tfl_imp *T, const int *in, int *outs);

typedef struct {
    int builtin; /* BuiltinOperator */
    tfl_convert_fn convert;
    int in_min, in_max; /* inputs (counting absent optional ones) */
    int nout;           /* outputs (0: one or more) */
} tfl_converter;

/* The row for a builtin operator, or NULL. */
KILN_HIDDEN const tfl_converter *tfl_find_converter(int builtin);

/* "FILE: operator N (NAME): message"; returns -1. */
KILN_HIDDEN int tfl_fail(tfl_imp *T, const char *fmt, ...) KILN_PRINTF(2, 3);
/* A typed call (folded when its inputs are constants and it is cheap); -1
 * with tfl_fail's error (also when an input is -1). */
KILN_HIDDEN int tfl_call(tfl_imp *T, const char *op, int nin, const int *in, const char *attrs);
/* The tensor type of a node (NULL for a tuple or unknown). */
KILN_HIDDEN const gtensor_type *tfl_type(const tfl_imp *T, int id);
/* The static dims of node id into dims (its rank), or -1 with an error
 * when a dim is symbolic. */
KILN_HIDDEN int tfl_dims(tfl_imp *T, int id, int64_t *dims);
/* The values of the operator's constant input i (an integer or float
 * tensor with a buffer) as int64 (at most cap): the count, or -1 with an
 * error when it is not a constant or has more. */
KILN_HIDDEN int tfl_const_ints(tfl_imp *T, int i, int64_t *v, int cap);
/* The first value of constant input i as a double, dequantized; 0 or -1. */
KILN_HIDDEN int tfl_const_scalar(tfl_imp *T, int i, double *v);
/* kiln's dtype of a TFLite tensor type, or KILN_DTYPE_COUNT. */
KILN_HIDDEN kiln_dtype tfl_dtype_of(int type);
/* The node of tensor `index` as stored (a constant made now if it has
 * data), or -1 with an error. */
KILN_HIDDEN int tfl_tensor_node(tfl_imp *T, int index);
/* 1 if tensor x is quantized (scales given, an integer type). */
KILN_HIDDEN int tfl_is_quantized(const tfl_tensor *x);
/* qnn.quantize or qnn.dequantize (op) of x with the parameters of tensor
 * index, per channel along `axis` (-1: the tensor's quantized_dimension)
 * when it has several scales; attributes `extra` after the axis. */
KILN_HIDDEN int tfl_qnn_call(tfl_imp *T, const char *op, int x, int index, int axis,
                             const char *extra);
/* The operator's input i as stored (int8/uint8) when it is quantized, its
 * tensor into *index; else -1. A converter that moves data before the
 * arithmetic (a transpose to NCHW) applies it to the integers and
 * dequantizes after, so the graph has the QDQ form that
 * FakeQuantizationToInteger turns into QNN ops. */
KILN_HIDDEN int tfl_quantized_input(tfl_imp *T, int i, int *index);
/* 1 if the operator's input i has an NCHW value (an NCHW operator wrote
 * it). */
KILN_HIDDEN int tfl_has_nchw(const tfl_imp *T, int i);
/* The operator's 4-D input i as float32 in NCHW: the NCHW value an earlier
 * operator left (dequantized if it is quantized), else in[i] transposed. */
KILN_HIDDEN int tfl_in_nchw(tfl_imp *T, const int *in, int i);
/* Constants made by the converters. */
KILN_HIDDEN int tfl_ints_const(tfl_imp *T, kiln_dtype dt, int n, const int64_t *v);
KILN_HIDDEN int tfl_float_const(tfl_imp *T, int n, const float *v);
/* One-input and two-input calls, a float32 scalar constant, x transposed
 * by perm[nd]. */
KILN_HIDDEN int tfl_unary(tfl_imp *T, const char *op, int x);
KILN_HIDDEN int tfl_binary(tfl_imp *T, const char *op, int a, int b);
KILN_HIDDEN int tfl_scalar(tfl_imp *T, float v);
KILN_HIDDEN int tfl_transpose(tfl_imp *T, int x, int nd, const int *perm);
/* The permutations from NHWC to NCHW and back. */
KILN_HIDDEN extern const int tfl_to_nchw[4], tfl_to_nhwc[4];
/* A fused activation (ActivationFunctionType) applied to x. */
KILN_HIDDEN int tfl_activation(tfl_imp *T, int x, int64_t act);
/* An axis from -nd to nd - 1 normalized, or -1 with an error. */
KILN_HIDDEN int tfl_norm_axis(tfl_imp *T, int64_t axis, int nd);
/* TFLite's padding (Padding: SAME 0, VALID 1) of one spatial dim. */
KILN_HIDDEN void tfl_same_pad(int64_t padding, int64_t in, int64_t k, int64_t stride, int64_t dil,
                              int64_t *before, int64_t *after);
/* x reshaped to dims[nd]. */
KILN_HIDDEN int tfl_reshape(tfl_imp *T, int x, int nd, const int64_t *dims);
/* The operator's tensor of input i / output i. */
KILN_HIDDEN const tfl_tensor *tfl_in_tensor(const tfl_imp *T, int i);
KILN_HIDDEN const tfl_tensor *tfl_out_tensor(const tfl_imp *T, int i);
/* The operator's builtin options, if any (NULL: every field its default). */
KILN_HIDDEN const fb_table *tfl_options(const tfl_imp *T);
/* Field slot of the options as an integer of size bytes (def if absent or
 * no options); sets T->failed with an error if it lies outside its table. */
KILN_HIDDEN int64_t tfl_opt_int(tfl_imp *T, int slot, int size, int64_t def);
KILN_HIDDEN float tfl_opt_float(tfl_imp *T, int slot, float def);

#endif
