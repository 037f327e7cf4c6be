/* onnx_import.h: the ONNX importer's state and the helpers its converters
 * use. The frontend's files call one way only:
 *
 *   onnx_import.c       the driver: model -> graph, node by node
 *     -> onnx_table.c   the converter table: one row per ONNX op type
 *       -> onnx_convert.c, onnx_convert_nn.c, onnx_convert_conv.c,
 *          onnx_convert_index.c, onnx_convert_image.c, onnx_convert_text.c,
 *          onnx_convert_quant.c, onnx_convert_rnn.c, onnx_convert_control.c
 *                         converter functions (a control op's bodies are
 *                         imported through imp.import_body, a pointer to
 *                         onnx_import.c's node loop, not a call upward)
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

struct imp_converter;

typedef struct imp {
    struct kiln_graph *g;
    const onnx_model *m;
    onnx_model *own; /* m, when the import may take its top-level initializers'
                        data (onnx_tensor_take_ndarray: m is freed after), else NULL */
    const char *path;
    int64_t opset;    /* of the default domain */
    int64_t fold_max; /* the most elements a call folded at import may have */
    char **names;     /* value name -> node id, open addressing */
    int *ids;
    size_t cap, count;
    const struct imp_converter *row; /* the row converting the current node */
    const void *failed;              /* the node (Onnx__NodeProto) whose conversion has failed:
                                        its later calls add nothing and keep the first error */
    int nbinders;                    /* size-variable prefixes made (imp_fresh_prefix) */
    /* a body's importer (onnx_convert_control.c): the importer of the graph
       around it, whose values the body may use by name; each one it uses
       becomes a variable of the body, listed here (ids in parent->g) */
    struct imp *parent;
    int ncaptured, capcap;
    int *captured;
    const char **captured_names;
    /* onnx_import.c's import of a body's nodes (initializers, nodes, outputs)
       into I->g, whose formal inputs the converter has added; 0 or -1 */
    int (*import_body)(struct imp *I, const Onnx__GraphProto *gp);
} imp;

/* Convert one node: write the graph node id of each ONNX output to outs
 * (an alias is fine: Identity writes its input's id). Returns >= 0, or -1
 * with an error made by imp_fail. */
typedef int (*imp_convert_fn)(imp *I, const Onnx__NodeProto *n, int *outs);

/* Inputs or outputs without an upper bound (Concat, Sum, Split). */
#define IMP_ANY 0x7fffffff

/* One row of the converter table (onnx_table.c, which says how to add one):
 * one ONNX op type from one opset on, until the next row of that op type. */
typedef struct imp_converter {
    const char *op_type;    /* the ONNX op type (default domain) */
    int64_t since;          /* the first opset the row handles */
    const char *op;         /* a kiln op taking the node's inputs as they are, or NULL */
    imp_convert_fn convert; /* else the converter function */
    int in_min, in_max;     /* inputs: the first in_min must be named; at most in_max */
    int out_min, out_max;   /* outputs, likewise */
    const char *attrs;      /* the ONNX attributes the op has at these opsets,
                               "name:TYPE[!][=default], ..." (NULL: none): see
                               onnx_table.c */
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

/* The row for an ONNX op type at `opset` (the newest row whose `since` is
 * at most opset), or NULL; with opset -1 any row of the op type. */
/* --input-shapes (onnx_shapes.c): parse `spec` strictly, calling fn (may
 * be NULL) with each entry's name (not NUL-terminated: `nlen` bytes), rank
 * and dims in order, and per dim its name if it is one (a symbolic dim,
 * -1 in dims: "x:[batch,3,224,224]") or NULL; an error names the input and
 * dimension. A non-zero status from fn stops the walk and is returned. */
typedef kiln_status (*onnx_shape_fn)(const char *name, size_t nlen, int ndim, const int64_t *dims,
                                     const char *const *syms, void *user);
KILN_HIDDEN kiln_status onnx_shapes_parse(const char *spec, onnx_shape_fn fn, void *user);

KILN_HIDDEN const imp_converter *imp_find_converter(const char *op_type, int64_t opset);
/* Check node n against its row c, then convert it. */
KILN_HIDDEN int imp_convert(imp *I, const Onnx__NodeProto *n, const imp_converter *c, int *outs);

/* ---- helpers (onnx_helpers.c) ----------------------------------------------- */

/* The node id a value name is bound to, or -1; bind it. */
KILN_HIDDEN int imp_name_get(const imp *I, const char *name);
KILN_HIDDEN void imp_name_set(imp *I, const char *name, int id);
/* The node id of value `name` in I's scope: its own, else (a body) the
 * graph around it's, which becomes a variable of the body (a constant is
 * copied in instead); -1 if no scope has it, -2 with an error if it cannot
 * be captured (a tuple). */
KILN_HIDDEN int imp_lookup(imp *I, const char *name);
/* Make outer value `outer` (an id in I->parent->g) named `name` a variable
 * of body I; its id, or -1 with an error. */
KILN_HIDDEN int imp_capture(imp *I, const char *name, int outer);
/* A prefix "_rt<N>" for size variables, clear of the graph's input dims
 * and of every prefix made so far in this model (bodies included). */
KILN_HIDDEN void imp_fresh_prefix(imp *I, char *buf, size_t cap);
/* "FILE: node 'NAME' (OP, opset N): message"; returns -1. */
KILN_HIDDEN int imp_fail(imp *I, const Onnx__NodeProto *n, const char *fmt, ...) KILN_PRINTF(3, 4);
/* Node id of input i, or -1 if absent (optional inputs are ""). */
KILN_HIDDEN int imp_input(imp *I, const Onnx__NodeProto *n, int i);
/* Inputs given, ignoring trailing empty names. */
KILN_HIDDEN int imp_ninputs(const Onnx__NodeProto *n);
/* ---- attributes ----
 * imp_check_node checks a node before its converter runs: no attribute
 * name twice; with its row, the input and output counts, and each
 * attribute against the row's schema (a known name, of its type, with a
 * value; the required ones given). So the accessors below, which read the
 * current row's (I->row) attributes, never meet a wrong type: they assert
 * that the type they read is the schema's, and give def for a name the
 * row does not define (the node cannot carry it). */

/* The attribute's ONNX type: its type field, or for IR version 1 models,
 * which had none, the value field in use (UNDEFINED if none). */
KILN_HIDDEN int imp_attr_type(const Onnx__AttributeProto *a);
/* ONNX's name of an AttributeProto type ("FLOAT", "INTS", ...). */
KILN_HIDDEN const char *imp_attr_type_name(int type);
/* One entry of a row's attribute schema. */
typedef struct {
    char name[64];
    int type;        /* an ONNX AttributeType */
    int required;    /* "!" after the type */
    const char *def; /* the text after "=", or NULL */
    size_t def_len;
} imp_attr_spec;
/* The next entry of the schema at *p into *e (advancing *p): 1, or 0 at
 * the end; asserts on a malformed schema (the table is code). */
KILN_HIDDEN int imp_schema_next(const char **p, imp_attr_spec *e);
/* Node n's attributes, input and output counts against row c (NULL: only
 * repeated attribute names, for a user op); -1 with imp_fail's error. */
KILN_HIDDEN int imp_check_node(imp *I, const Onnx__NodeProto *n, const imp_converter *c);
/* The node's attribute `name` (the first), unchecked; NULL if absent. */
KILN_HIDDEN const Onnx__AttributeProto *imp_attr_find(const Onnx__NodeProto *n, const char *name);
/* Attribute `name` of the current row's type `type`; NULL if absent. */
KILN_HIDDEN const Onnx__AttributeProto *imp_attr(const imp *I, const Onnx__NodeProto *n,
                                                 const char *name, int type);
KILN_HIDDEN int64_t imp_attr_int(const imp *I, const Onnx__NodeProto *n, const char *name,
                                 int64_t def);
KILN_HIDDEN float imp_attr_float(const imp *I, const Onnx__NodeProto *n, const char *name,
                                 float def);
/* Count (-1 absent, -2 more than cap). */
KILN_HIDDEN int imp_attr_ints(const imp *I, const Onnx__NodeProto *n, const char *name,
                              int64_t *out, int cap);
KILN_HIDDEN const char *imp_attr_str(const imp *I, const Onnx__NodeProto *n, const char *name,
                                     const char *def, char *buf, size_t cap);
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
/* A constant int64 vector of the k values v. */
KILN_HIDDEN int cvt_ints_const(imp *I, const Onnx__NodeProto *n, int k, const int64_t *v);
/* Node x reshaped to dims[nd]. */
KILN_HIDDEN int cvt_reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd,
                               const int64_t *dims);
/* The dims that call `dims` (an int64 vector, a shape function of
 * src/ops/shape.c) computes when the package runs, as size variables for
 * the types after it: bind_dims(dims) with a prefix of its own; -1 with
 * imp_fail's error. */
KILN_HIDDEN int cvt_bind_dims(imp *I, const Onnx__NodeProto *n, int dims);
/* Up to MAXD values of constant input i: the count, -1 if absent, -2 if not
 * constant. A computed input counts as constant when the graph knows every
 * value to be the same number in every run (ops_values, all GVAL_EXACT with
 * no size variable): Shape(x)[-1] / 3 of an x whose last dim is static and
 * whose batch is symbolic, as PyTorch's attention exports its chunks. */
KILN_HIDDEN int cvt_const_ints(imp *I, const Onnx__NodeProto *n, int i, int64_t *v);
/* Bind node n's outputs (at most 64) to the elements of the tuple call id
 * (tuple-gets named after them): 0, or -1 with imp_fail's error (also if
 * id is -1). */
KILN_HIDDEN int cvt_tuple_outputs(imp *I, const Onnx__NodeProto *n, int id, int *outs);
/* The node's attribute 'axis' (def if absent) of a rank-ndim input, from
 * -ndim to ndim - 1, normalized to 0 .. ndim - 1 into *axis; -1 with an
 * error giving the value and rank if it is out of range. */
KILN_HIDDEN int cvt_axis_attr(imp *I, const Onnx__NodeProto *n, int64_t def, int ndim,
                              int64_t *axis);
/* Append ", name=[v0, v1, ...]" (no comma first) to an attribute string. */
KILN_HIDDEN void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v);

#endif
