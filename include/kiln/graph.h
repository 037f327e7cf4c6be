/* kiln/graph.h: building, printing and parsing graphs by hand, like the
 * symbol API of seed note 000 (var, conv2d, sum, ...). Nodes are named by
 * int ids in the order they are added; ops by their Relay-style names
 * ("nn.conv2d", "add"). Attributes are written in the text syntax of the
 * graph IR: "strides=[2, 2], padding=[1, 1, 1, 1], channels=64". */
#ifndef KILN_GRAPH_PUBLIC_H
#define KILN_GRAPH_PUBLIC_H

#include "kiln/base.h"
#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_graph kiln_graph;

/* An empty graph over the built-in ops (and plugins loaded so far). */
KILN_API kiln_graph *kiln_graph_new(void);
KILN_API void kiln_graph_free(kiln_graph *g);

/* A graph input. dims[i] >= 0 is a size; dims[i] < 0 takes the symbolic
 * name sym_names[i] (e.g. "batch"). Returns the node id, or -1. */
KILN_API int kiln_graph_var(kiln_graph *g, const char *name, kiln_dtype dt, int ndim,
                            const int64_t *dims, const char *const *sym_names);
/* A constant holding a copy of `value`. */
KILN_API int kiln_graph_const(kiln_graph *g, const char *name, const kiln_ndarray *value);
/* A call of op `op` on nodes `in`, with attributes in text syntax (may be
 * NULL or ""). Returns the node id, or -1 with an error that names the op
 * and the problem (unknown op, arity, unknown or ill-typed attribute). */
KILN_API int kiln_graph_call(kiln_graph *g, const char *op, int nin, const int *in,
                             const char *attrs, const char *name);
KILN_API int kiln_graph_tuple(kiln_graph *g, int n, const int *in, const char *name);
KILN_API int kiln_graph_tuple_get(kiln_graph *g, int tuple, int index, const char *name);
/* Declare the graph's outputs (names may be NULL: "output0", ...). */
KILN_API kiln_status kiln_graph_set_outputs(kiln_graph *g, int n, const int *nodes,
                                            const char *const *names);
KILN_API int kiln_graph_num_nodes(const kiln_graph *g);

/* ---- reading nodes (a bad graph or id gives NULL, -1 or the default) ---- */
/* The op of a call ("nn.conv2d"), "var", "const", "tuple" or "tuple_get". */
KILN_API const char *kiln_graph_node_op(const kiln_graph *g, int id);
KILN_API const char *kiln_graph_node_name(const kiln_graph *g, int id);
KILN_API int kiln_graph_node_num_inputs(const kiln_graph *g, int id);
KILN_API int kiln_graph_node_input(const kiln_graph *g, int id, int i);
/* A constant's value (owned by the graph), else NULL. */
KILN_API const kiln_ndarray *kiln_graph_node_value(const kiln_graph *g, int id);
/* A call's attribute, or its schema default, or def. */
KILN_API int64_t kiln_graph_node_attr_int(const kiln_graph *g, int id, const char *name,
                                          int64_t def);
KILN_API double kiln_graph_node_attr_float(const kiln_graph *g, int id, const char *name,
                                           double def);
KILN_API const char *kiln_graph_node_attr_str(const kiln_graph *g, int id, const char *name,
                                              const char *def);
/* The attributes a call sets (not its schema's defaults; no sub-graphs), in
 * the text syntax ("strides=[2, 2], data_layout=\"NCHW\""), malloc'd (""
 * for a node that is not a call). */
KILN_API char *kiln_graph_node_attrs(const kiln_graph *g, int id);
/* The node's (inferred) type, when it is one tensor: dtype (KILN_DTYPE_COUNT
 * if unknown), rank (-1) and dim d (-1 if symbolic or unknown). */
KILN_API kiln_dtype kiln_graph_node_dtype(const kiln_graph *g, int id);
KILN_API int kiln_graph_node_ndim(const kiln_graph *g, int id);
KILN_API int64_t kiln_graph_node_dim(const kiln_graph *g, int id, int d);

/* Infer every node's type; an error names the node, op and reason. */
KILN_API kiln_status kiln_graph_infer_types(kiln_graph *g);

struct kiln_build_options;
/* Compile the graph into a package at package_path (a tar of mod.so,
 * mod.json and mod.params that kiln_executor_load runs). Types are
 * inferred first; every dim must be concrete. opts may be NULL (see
 * kiln_build_options_set in kiln/schedule.h). */
KILN_API kiln_status kiln_graph_compile(kiln_graph *g, const char *package_path,
                                        const struct kiln_build_options *opts);

/* ---- passes by name (TVM's relay.transform) ----------------------------------
 * The built-in graph passes, in the order the pipeline runs them, each
 * with the opt level that turns it on: "InferType:0,SimplifyInference:0,
 * EliminateCommonSubexpr:3,...". (FuseOps and ConcatViews run when a graph
 * is lowered: they are not graph-to-graph passes.) */
KILN_API const char *kiln_pass_list(void);
/* Run one pass on g (types inferred first) and return the new graph, or
 * NULL with an error that names the pass. `name` is a built-in pass or a
 * user pass: a global function (kiln/ffi.h) that takes a graph and returns
 * a graph. opts (may be NULL) give the target: AlterOpLayout lays out for
 * it, and the BYOC passes use its backends. opt-level and disabled-pass
 * are not applied here: the caller (a sequence of passes) decides. The
 * build option "pass" runs user passes first in every compile
 * (kiln compile --pass NAME). */
KILN_API kiln_graph *kiln_graph_run_pass(kiln_graph *g, const char *name,
                                         const struct kiln_build_options *opts);

/* The graph in Relay-like text, malloc'd. Constants print as
 * meta[relay.Constant][K]; kiln_graph_constants lists them in that order. */
KILN_API char *kiln_graph_print(const kiln_graph *g);
/* A summary: inputs and outputs with their types, and how many times each
 * op is called, malloc'd. */
KILN_API char *kiln_graph_op_counts(const kiln_graph *g);
/* Constants in meta order, as a set of arrays named "0", "1", ... */
KILN_API kiln_npz *kiln_graph_constants(const kiln_graph *g);
/* Parse the text form back; `constants` supplies meta[relay.Constant][K]
 * (may be NULL if the text has none). Errors give line:column. */
KILN_API kiln_graph *kiln_graph_parse(const char *text, const kiln_npz *constants);

#ifdef __cplusplus
}
#endif
#endif
