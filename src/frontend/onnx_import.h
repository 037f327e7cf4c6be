/* onnx_import.h: the ONNX importer's state and the helpers its converters
 * use. The frontend's files call one way only:
 *
 *   onnx_import.c       the driver: model -> graph, node by node
 *     -> onnx_table.c   the converter table: one row per ONNX op type
 *       -> onnx_convert.c, onnx_convert_nn.c   converter functions
 *         -> onnx_helpers.c   what converters share (this header); it calls
 *                             nothing above it
 *   onnx_load.c         protobuf loading, below all of them
 *
 * A call the converters add whose inputs are all constants is folded as it
 * is added (imp_call): the graph layer evaluates the op's compute with the
 * reference interpreter, so shape sub-graphs (Shape -> Gather -> Unsqueeze
 * -> Concat -> Reshape) become constants with no arithmetic of the
 * importer's own. */
#ifndef KILN_FRONTEND_ONNX_IMPORT_H
#define KILN_FRONTEND_ONNX_IMPORT_H

#include "../graph/graph_internal.h"
#include "onnx_load.h"

#define MAXD KILN_MAX_NDIM

typedef struct {
    struct kiln_graph *g;
    const onnx_model *m;
    const char *path;
    int64_t opset;    /* of the default domain */
    int64_t fold_max; /* the most elements a call folded at import may have */
    char **names;     /* value name -> node id, open addressing */
    int *ids;
    size_t cap, count;
} imp;

/* Convert one node: write the graph node id of each ONNX output to outs
 * (an alias is fine: Identity writes its input's id). Returns >= 0, or -1
 * with an error made by imp_fail. */
typedef int (*imp_convert_fn)(imp *I, const Onnx__NodeProto *n, int *outs);

/* One row of the converter table (onnx_table.c, which says how to add one). */
typedef struct {
    const char *op_type;    /* the ONNX op type (default domain) */
    int64_t since;          /* the first opset the row handles */
    const char *op;         /* a kiln op taking the node's inputs as they are, or NULL */
    const char *attrs;      /* for `op`: the ONNX attributes it passes, as
                               "onnx_name[:kiln_name]=default, ..." (NULL: none) */
    imp_convert_fn convert; /* else the converter function */
} imp_converter;

/* A call folds at import when it is cheap to evaluate: an elementwise,
 * broadcasting, injective or reducing op (a convolution, a matmul or an
 * opaque op is left to FoldConstant) of at most this many elements by
 * default (a larger result, a ConstantOfShape of a big shape say, stays an
 * op and is computed at run time instead of being stored). BERT-base's
 * largest weight transpose has 2.4 M. */
#define IMPORT_FOLD_MAX_ELEMENTS ((int64_t)1 << 24)

/* kiln_onnx_import of a parsed model (path names it in errors; it is not
 * read): fold_max caps the elements of a call folded at import (0: the
 * default). m stays the caller's. */
KILN_HIDDEN struct kiln_graph *onnx_import_model(const onnx_model *m, const char *path,
                                                 const char *input_shapes, int64_t fold_max);

/* The row for an ONNX op type, or NULL. */
KILN_HIDDEN const imp_converter *imp_find_converter(const char *op_type);
/* Convert node n by its row c. */
KILN_HIDDEN int imp_convert(imp *I, const Onnx__NodeProto *n, const imp_converter *c, int *outs);

/* ---- helpers (onnx_helpers.c) ----------------------------------------------- */

/* The node id a value name is bound to, or -1; bind it. */
KILN_HIDDEN int imp_name_get(const imp *I, const char *name);
KILN_HIDDEN void imp_name_set(imp *I, const char *name, int id);
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
/* Add a typed call named after the ONNX node (folded into a constant when
 * its inputs are all constants and it is cheap: see onnx_helpers.c); -1
 * with imp_fail's error. */
KILN_HIDDEN int imp_call(imp *I, const Onnx__NodeProto *n, const char *op, int nin, const int *in,
                         const char *attrs);
/* Add a constant (takes ownership of value). */
KILN_HIDDEN int imp_add_const(imp *I, const char *name, kiln_ndarray *value);
/* A 0-d constant v of dtype dt (any dtype but float16/bfloat16). */
KILN_HIDDEN int imp_scalar_const(imp *I, const Onnx__NodeProto *n, kiln_dtype dt, double v);

/* Element i of a constant as an int64 (floats truncated). */
KILN_HIDDEN int64_t cvt_get_i(const kiln_ndarray *a, int64_t i);
/* Element i of a constant as a double. */
KILN_HIDDEN double cvt_get_d(const kiln_ndarray *a, int64_t i);
/* 1 if every dim of t is concrete. */
KILN_HIDDEN int cvt_concrete(const gtensor_type *t);
/* The element count of dims[nd] into *out; 0 with imp_fail's error if it
 * overflows int64 or a dim is negative. */
KILN_HIDDEN int cvt_numel(imp *I, const Onnx__NodeProto *n, int nd, const int64_t *dims,
                          int64_t *out);
/* A 0-d constant v of the dtype of node `like`. */
KILN_HIDDEN int cvt_float_const_like(imp *I, const Onnx__NodeProto *n, int like, double v);
/* A binary graph op on nodes a and b; -1 if either is -1. */
KILN_HIDDEN int cvt_binary_of(imp *I, const Onnx__NodeProto *n, const char *op, int a, int b);
KILN_HIDDEN int cvt_unary_of(imp *I, const Onnx__NodeProto *n, const char *op, int x);
/* x converted to dtype dt (x itself if it has it). */
KILN_HIDDEN int cvt_cast_to(imp *I, const Onnx__NodeProto *n, int x, kiln_dtype dt);
/* Node x reshaped to dims[nd]. */
KILN_HIDDEN int cvt_reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd,
                               const int64_t *dims);
/* Up to MAXD values of constant input i: the count, -1 if absent, -2 if not constant. */
KILN_HIDDEN int cvt_const_ints(imp *I, const Onnx__NodeProto *n, int i, int64_t *v);
/* Append ", name=[v0, v1, ...]" (no comma first) to an attribute string. */
KILN_HIDDEN void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v);

#endif
