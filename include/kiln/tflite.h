/* kiln/tflite.h: importing TFLite models (.tflite FlatBuffers) into kiln's
 * graph IR. The file is read by a verifying reader: a malformed model
 * gives an error, never a crash. Float32, float16 (weights behind
 * DEQUANTIZE), full-integer int8/uint8 (per tensor and per channel) and
 * dynamic-range (int8 weights) models import; docs/TFLITE.md lists the
 * operators and how quantized tensors map to kiln's QNN ops. */
#ifndef KILN_TFLITE_H
#define KILN_TFLITE_H

#include "kiln/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Import the TFLite model at `path` (its first subgraph). `input_shapes`
 * may be NULL, or "name:[1,224,224,3],other:[1,128]" to give inputs other
 * static shapes. Every unsupported operator is listed in one error (its
 * op name and operator indices); other errors name the file, and the
 * operator's index and op where there is one. */
KILN_API kiln_graph *kiln_tflite_import(const char *path, const char *input_shapes);
/* The same for a model held in memory; `name` names it in errors (NULL:
 * "<memory>"). */
KILN_API kiln_graph *kiln_tflite_import_bytes(const void *data, size_t len, const char *name,
                                              const char *input_shapes);
/* Import flags. KILN_TFLITE_REFERENCE_KERNELS: compute a quantized model as
 * TFLite's reference kernels define it (OpResolverType.BUILTIN_REF; TFLite
 * Micro's kernels): quantize with rounding half away from zero, and
 * requantize the int32 sums of CONV_2D, DEPTHWISE_CONV_2D and
 * FULLY_CONNECTED with TFLite's 31-bit fixed-point multiplier and shift
 * (fixed_point_multiply), bit-exact with those kernels when the model is
 * compiled at opt level 3 with FakeQuantizationToInteger and
 * QnnCanonicalize enabled (the default; below that the requantization is
 * float, rounded half away from zero, within a step). Without it a
 * quantized model gives the outputs of XNNPACK, the interpreter's default
 * delegate, which requantizes in float32, rounding half to even. The two
 * differ by one step on some outputs (docs/TFLITE.md). */
#define KILN_TFLITE_REFERENCE_KERNELS 1
KILN_API kiln_graph *kiln_tflite_import_flags(const char *path, const char *input_shapes,
                                              int flags);
KILN_API kiln_graph *kiln_tflite_import_bytes_flags(const void *data, size_t len, const char *name,
                                                    const char *input_shapes, int flags);
/* 1 if the bytes start like a TFLite model (the identifier "TFL3" at byte
 * 4), else 0: how `kiln compile` picks the frontend. */
KILN_API int kiln_tflite_is_model(const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
