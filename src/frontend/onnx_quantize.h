/* onnx_quantize.h: ONNX models edited for post-training quantization
 * (onnx_quantize.c). */
#ifndef KILN_ONNX_QUANTIZE_H
#define KILN_ONNX_QUANTIZE_H

#include "onnx_load.h"

/* The activations to quantize and their calibrated ranges. */
typedef struct {
    int n;
    const char *const *names; /* tensor names of the main graph */
    const float *lo, *hi;     /* each one's range (0 is added to it) */
    int per_channel;          /* weights per output channel (needs opset >= 13) */
} onnx_qdq_plan;

/* What onnx_pack_qdq quantized. */
typedef struct {
    int activations, weights;
    int per_channel; /* 1 if the weights are per channel */
} onnx_qdq_counts;

/* The activations the quantizer calibrates: the tensors (no initializers)
 * read as Conv's data and as either operand of MatMul and Gemm in the main
 * graph, each once, in node order; *names (malloc'd; the strings are m's)
 * lives as long as m. The count, or -1 with an error. */
KILN_HIDDEN int onnx_qdq_activations(const onnx_model *m, const char ***names);
/* m with the n tensors `names` added as outputs, packed (malloc'd bytes),
 * or NULL with an error. */
KILN_HIDDEN uint8_t *onnx_pack_with_outputs(const onnx_model *m, const char *const *names, int n,
                                            size_t *len);
/* The QDQ model (ONNX Runtime's QDQ format, inputs only): each activation
 * of the plan becomes QuantizeLinear -> DequantizeLinear (uint8, over its
 * range) before its first reader, and the float32 weights of Conv, MatMul
 * and Gemm symmetric int8 (per output channel: Conv's dim 0, MatMul's
 * columns, Gemm's B by transB) behind a DequantizeLinear; biases stay
 * float. Packed (malloc'd bytes), or NULL with an error. */
KILN_HIDDEN uint8_t *onnx_pack_qdq(const onnx_model *m, const onnx_qdq_plan *p,
                                   onnx_qdq_counts *counts, size_t *len);

#endif
