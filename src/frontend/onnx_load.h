/* onnx_load.h: the bottom of the ONNX frontend: reading and validating an
 * ONNX protobuf (protobuf-c bindings generated at build time from Debian's
 * onnx.proto), and turning TensorProtos into kiln_ndarray. Hostile input gets
 * an error naming the file, never a crash, a hang or unbounded memory. */
#ifndef KILN_FRONTEND_ONNX_LOAD_H
#define KILN_FRONTEND_ONNX_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base_internal.h"
#include "kiln/runtime.h"
#include "onnx.pb-c.h"

/* Largest model or tensor file read (2 GiB, protobuf's own limit). */
#define ONNX_MAX_FILE_BYTES ((int64_t)1 << 31)
/* Largest element count of one tensor (2^34). */
#define ONNX_MAX_NUMEL ((int64_t)1 << 34)
/* Deepest nesting of protobuf messages accepted (graphs inside attributes). */
#define ONNX_MAX_NESTING 64

/* An unpacked, structurally checked ModelProto with the folder its external
 * data is resolved against. After loading: ir_version and at least one
 * opset_import are present; every graph, node, value_info, initializer and
 * attribute name, node domain and op_type is non-NULL ("" if absent); every
 * op_type is non-empty and every node's domain is imported (so
 * onnx_model_opset(m, node->domain) >= 1); every graph-level input, output and
 * initializer has a non-empty name. This holds in nested graphs too. A model
 * may import no default-domain opset (then onnx_model_opset(m, "") is -1). */
typedef struct onnx_model onnx_model;

/* Read and check the model at `path` (at most 2 GiB). NULL with an error
 * "PATH: ..." on failure. External data resolves against path's folder. */
KILN_HIDDEN onnx_model *onnx_model_load(const char *path);
/* Parse a model from memory. `name` is used in messages (NULL: "<memory>");
 * `dir` is the folder for external data, or NULL to refuse external data. */
KILN_HIDDEN onnx_model *onnx_model_parse(const void *buf, size_t len, const char *name,
                                         const char *dir);
KILN_HIDDEN void onnx_model_free(onnx_model *m);

KILN_HIDDEN const Onnx__ModelProto *onnx_model_proto(const onnx_model *m);
/* The imported opset version of `domain` ("" or "ai.onnx" is the default
 * domain; the highest if imported twice), or -1 if not imported. */
KILN_HIDDEN int64_t onnx_model_opset(const onnx_model *m, const char *domain);
/* The file name given at load (or the parse name), for messages. */
KILN_HIDDEN const char *onnx_model_path(const onnx_model *m);

/* A new array holding tensor `t`'s values (raw_data, typed fields or external
 * data in m's folder). `m` may be NULL: then external data is refused.
 * `what` names the tensor in messages, e.g. "initializer 'conv1.weight'". */
KILN_HIDDEN kiln_ndarray *onnx_tensor_to_ndarray(const onnx_model *m, const Onnx__TensorProto *t,
                                                 const char *what);
/* onnx_tensor_to_ndarray for a tensor of m that is converted only once: a
 * large raw_data (protobuf-c's copy of it) becomes the array's storage
 * instead of being copied again, and t is left without it. */
KILN_HIDDEN kiln_ndarray *onnx_tensor_take_ndarray(onnx_model *m, Onnx__TensorProto *t,
                                                   const char *what);
/* Read a serialized TensorProto (.pb, as the ONNX node tests store their
 * inputs and outputs). If name_out is not NULL it receives the tensor's name
 * (malloc'd, "" if it has none). External data resolves against path's folder. */
KILN_HIDDEN kiln_ndarray *onnx_load_tensor_file(const char *path, char **name_out);

/* ONNX's name of a TensorProto.DataType ("float", "int16", "complex64", ...),
 * or "invalid" for a value outside the enum. */
KILN_HIDDEN const char *onnx_dtype_name(int onnx_data_type);
/* Map an ONNX data type to a kiln dtype: 1 and *out set, or 0 if kiln has none. */
KILN_HIDDEN int onnx_dtype_to_kiln(int onnx_data_type, kiln_dtype *out);

#endif
