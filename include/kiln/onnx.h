/* kiln/onnx.h: importing ONNX models into kiln's graph IR. */
#ifndef KILN_ONNX_H
#define KILN_ONNX_H

#include "kiln/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Import the ONNX model at `path` (opsets 1 to 17 of the default domain).
 * `input_shapes` may be NULL, or tvmc's syntax "name:[1,3,224,224],other:[1,128]"
 * to give inputs concrete shapes (a dynamic batch dim, for example); a shape
 * given there replaces the model's declared one, rank included.
 * Every unsupported op is listed in one error (op type, opset, node name).
 * Errors name the file and, where there is one, the node. */
KILN_API kiln_graph *kiln_onnx_import(const char *path, const char *input_shapes);
/* The same for a model held in memory (a serialized ModelProto); `name`
 * names it in errors (NULL: "<memory>"). Tensors stored in external files
 * cannot be found from memory: import such a model from its path. */
KILN_API kiln_graph *kiln_onnx_import_bytes(const void *data, size_t len, const char *name,
                                            const char *input_shapes);
/* Check an input_shapes value without a model: each dimension a whole
 * number from 0 to INT64_MAX, at most 16 per input, an element count that
 * fits in int64. KILN_ERR_INVALID with a message naming the input and the
 * dimension, or KILN_OK. kiln_onnx_import applies the same rules. */
KILN_API kiln_status kiln_onnx_check_input_shapes(const char *input_shapes);

/* ---- post-training quantization (`kiln quantize`) ------------------------------
 * kiln_onnx_quantize writes a QDQ ONNX model of the float model at
 * model_path (which ONNX Runtime runs too): the inputs of its Conv, MatMul
 * and Gemm nodes that are float activations, and of each Add of two
 * activations whose sum (through a Relu) only such nodes read, or Adds
 * whose own sums such nodes read (a CNN's
 * residual connection; a transformer's, which a LayerNorm reads, stays
 * float), become QuantizeLinear ->
 * DequantizeLinear pairs (uint8, asymmetric) over ranges calibrated by
 * running the model on `calibration` (one array per model input, named as
 * the input, samples along dim 0), and their float32 weights symmetric
 * int8 (per output channel from opset 13; per tensor before) with a
 * DequantizeLinear; biases stay float. Options (NULL: the defaults):
 *   "calibration"  minmax (default: each activation's minimum and maximum)
 *                  or percentile (the range that keeps "percentile" % of
 *                  its values, default 99.999: outliers clipped)
 *   "per-channel"  1 (default) or 0: weights per tensor
 *   "max-samples"  use at most this many calibration samples
 *   "batch"        samples per run where the batch dim is symbolic (8)
 *   "input-shapes" as kiln_onnx_import takes them
 * *report (may be NULL) gets a malloc'd line saying what was quantized. */
typedef struct kiln_quantize_options kiln_quantize_options;
KILN_API kiln_quantize_options *kiln_quantize_options_new(void);
KILN_API void kiln_quantize_options_free(kiln_quantize_options *o);
KILN_API kiln_status kiln_quantize_options_set(kiln_quantize_options *o, const char *key,
                                               const char *value);
KILN_API kiln_status kiln_onnx_quantize(const char *model_path, const kiln_npz *calibration,
                                        const char *out_path, const kiln_quantize_options *o,
                                        char **report);

#ifdef __cplusplus
}
#endif
#endif
