/* onnx_import.h: shared by the ONNX importer (onnx_import.c) and its op
 * converters (onnx_convert.c): the import state and converter helpers. */
#ifndef KILN_FRONTEND_ONNX_IMPORT_H
#define KILN_FRONTEND_ONNX_IMPORT_H

#include "../graph/graph_internal.h"
#include "onnx_load.h"

typedef struct {
    struct kiln_graph *g;
    const onnx_model *m;
    const char *path;
    int64_t opset; /* of the default domain */
    char **names;  /* value name -> node id, open addressing */
    int *ids;
    size_t cap, count;
} imp;

/* Convert one node: write the graph node id of each ONNX output to outs
 * (an alias is fine: Identity writes its input's id). Returns >= 0, or -1
 * with an error made by imp_fail. */
typedef int (*imp_convert_fn)(imp *I, const Onnx__NodeProto *n, int *outs);

typedef struct {
    const char *op_type;
    int64_t min_opset; /* the first default-domain opset the converter handles */
    imp_convert_fn convert;
} imp_converter;

/* The converter table, terminated by a row with op_type NULL. */
KILN_HIDDEN const imp_converter *imp_converters(void);

/* "FILE: node 'NAME' (OP, opset N): message"; returns -1. */
KILN_HIDDEN int imp_fail(imp *I, const Onnx__NodeProto *n, const char *fmt, ...) KILN_PRINTF(3, 4);
/* Node id of input i, or -1 if absent (optional inputs are ""). */
KILN_HIDDEN int imp_input(imp *I, const Onnx__NodeProto *n, int i);
/* Inputs given, ignoring trailing empty names. */
KILN_HIDDEN int imp_ninputs(const Onnx__NodeProto *n);
KILN_HIDDEN const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name);
KILN_HIDDEN int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
KILN_HIDDEN float imp_attr_float(const Onnx__NodeProto *n, const char *name, float def);
/* Count (-1 absent, -2 more than cap). */
KILN_HIDDEN int imp_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int cap);
KILN_HIDDEN const char *imp_attr_str(const Onnx__NodeProto *n, const char *name, const char *def,
                                     char *buf, size_t cap);
/* The tensor type of node id (NULL for tuples). */
KILN_HIDDEN const gtensor_type *imp_type(const imp *I, int id);
/* The value of node id if it is a constant, else NULL. */
KILN_HIDDEN const kiln_ndarray *imp_const(const imp *I, int id);
/* Add a typed call named after the ONNX node; -1 with imp_fail's error. */
KILN_HIDDEN int imp_call(imp *I, const Onnx__NodeProto *n, const char *op, int nin, const int *in,
                         const char *attrs);
/* Add a constant (takes ownership of value). */
KILN_HIDDEN int imp_add_const(imp *I, const char *name, kiln_ndarray *value);
KILN_HIDDEN int imp_scalar_const(imp *I, const char *name, kiln_dtype dt, double v);

#endif
