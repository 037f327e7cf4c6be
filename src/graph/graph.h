/* graph.h: kiln's graph IR, a typed dataflow graph in the manner of Relay.
 *
 * A graph is an array of nodes in topological order (a node's inputs are
 * earlier nodes). A node is a variable (a graph input), a constant (an
 * ndarray), a call of an op with typed attributes, a tuple, or a tuple-get.
 * Every node keeps the name of the source node it came from, through every
 * pass. A node's type is a tensor type (dtype + dims, where a dim may be a
 * named symbol) or a tuple of tensor types; it may be unknown until
 * InferType runs.
 *
 * Ops are rows of an op table (struct kiln_op_def) that the op library
 * (src/ops) provides: the graph layer only reads them, through the
 * registry handed to it, so it depends on nothing above it. */
#ifndef KILN_GRAPH_H
#define KILN_GRAPH_H

#include "../base/base_internal.h"
#include "../target/target.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "kiln/te.h"

/* ---- types ------------------------------------------------------------- */

typedef struct {
    int64_t v;       /* the size, when sym is NULL */
    const char *sym; /* a symbolic size ("batch"), or NULL */
} gdim;

typedef struct {
    kiln_dtype dtype;
    int ndim;
    gdim dims[KILN_MAX_NDIM];
} gtensor_type;

/* A node's type: `n` tensor types; a tuple has n != 1 or is_tuple set. */
typedef struct {
    int known; /* 0 until inferred */
    int is_tuple;
    int n;
    gtensor_type *t;
} gtype;

/* ---- attributes ---------------------------------------------------------- */

/* GA_GRAPH: a sub-graph (the body of a control op, src/ops/control.c): its
 * variables are the body's parameters, its outputs the body's results. The
 * graph holding the attribute holds a reference to it (graph_add retains
 * it), so passes that copy the call share the body. */
typedef enum { GA_INT, GA_FLOAT, GA_INTS, GA_FLOATS, GA_STR, GA_GRAPH } gattr_kind;

struct kiln_graph;

typedef struct {
    const char *name;
    gattr_kind kind;
    int n; /* element count of INTS/FLOATS */
    int64_t i;
    double f;
    const int64_t *ints;
    const double *floats;
    const char *s;
    struct kiln_graph *graph; /* GA_GRAPH */
} gattr;

/* ---- ops ---------------------------------------------------------------- */

/* How an op fuses (TVM's TOpPattern), in increasing order. */
typedef enum {
    OP_ELEMWISE = 0,
    OP_BROADCAST = 1,
    OP_INJECTIVE = 2,
    OP_COMM_REDUCE = 3,
    OP_OUT_ELEMWISE_FUSABLE = 4,
    OP_TUPLE = 7,
    OP_OPAQUE = 8
} op_pattern;

typedef struct {
    const char *name;
    gattr_kind kind;
    int required;
    const char *def; /* default in the text syntax ("1", "[1, 1]", "\"NCHW\""), or NULL */
} attr_schema;

struct gnode;

/* Result of a type relation. */
typedef enum { REL_OK = 0, REL_INCOMPLETE = 1, REL_ERROR = 2 } rel_result;

/* Infer the output type of `call` from its inputs' types (in[i] may be an
 * unknown type: return REL_INCOMPLETE). REL_ERROR sets an error message
 * (the caller adds the node and op). */
typedef rel_result (*op_rel_fn)(const struct kiln_graph *g, const struct gnode *call,
                                const gtype *const *in, gtype *out);

/* Build the op's compute in tensor expressions: inputs are tensors of the
 * input types; write the outputs (one per output tensor type) to outputs.
 * Returns KILN_OK or an error naming what is unsupported. */
typedef kiln_status (*op_compute_fn)(kiln_ctx *ctx, const struct gnode *call,
                                     kiln_tensor *const *inputs, kiln_tensor **outputs);

/* Schedule the group whose anchor (out-elemwise-fusable) op is `call`:
 * `anchor` is the op's output tensor, `out` the group's output, which may
 * be anchor itself or an elementwise epilogue of it (already inlined into
 * out), for `target` (its vector width, registers and caches). Stages the function does
 * not touch keep the driver's default schedule. */
typedef kiln_status (*op_schedule_fn)(kiln_schedule *s, const struct gnode *call,
                                      kiln_tensor *anchor, kiln_tensor *out,
                                      const kiln_target *target);

/* Row fusion: attention's scores (q x k^T, scaled and masked) and their
 * softmax in one kernel, so the scores never reach memory. An op's `rows`
 * says of a call whether it takes part:
 * - for an out-elemwise-fusable op (batch_matmul): that it can compute its
 *   output a row (its last axis) at a time, at a loop of a later stage;
 * - for an opaque op (softmax): that it reduces along its last axis only,
 *   a static row short enough to stay in L1, so FuseOps may end such an
 *   anchor's group with it (after the anchor's elementwise epilogue).
 * The driver then calls the row op's schedule with `anchor` the anchor's
 * output (it computes the anchor at its row loop, a local buffer), and
 * after it the anchor's schedule with `out` NULL: the anchor's stage is
 * attached already, and only its register tile inside the row is left. */
typedef int (*op_rows_fn)(const struct gnode *call);

/* The scalar of an elementwise or broadcasting op: its output element
 * from args[i], the element of input i at the same (numpy-broadcast)
 * index; dt is input 0's dtype. Rows with one set their compute to
 * ops_compute_elemwise (src/ops/ops.h), which builds the loop around it. */
typedef kiln_expr (*op_elem_fn)(kiln_ctx *ctx, const struct gnode *call, kiln_dtype dt,
                                const kiln_expr *args);

/* ---- shape values: what the graph knows of a small integer value ----
 * An element of a 0-D or 1-D integer value of at most GVAL_MAX elements
 * (a shape computation: Shape -> Gather -> Concat -> Reshape), as far as
 * the graph can tell before it runs (docs/DYNAMIC_SHAPES.md, part 2). */
#define GVAL_MAX 64
typedef enum {
    GVAL_UNKNOWN = 0, /* known only as the package runs */
    GVAL_EXACT,       /* d, for every run: a constant or a size variable */
    GVAL_ASSUMED      /* d in every run the op can take (a slice end that
                         is within the dim, say), else the op's shape
                         function gives another value: a binder checks it */
} gval_kind;
typedef struct {
    gval_kind kind;
    gdim d;
} gval;

/* Partial evaluation of an op on shape values: the elements of the call's
 * output (a 0-D or 1-D integer value, of its type's element count) from
 * its inputs', in[i] holding nin[i] elements (nin[i] = -1: nothing known
 * of input i, in[i] NULL). Returns the count (at most cap), or -1 if the
 * op knows nothing of its output. Elements it cannot tell are
 * GVAL_UNKNOWN. */
typedef int (*op_values_fn)(const struct kiln_graph *g, const struct gnode *call,
                            const gval *const *in, const int *nin, gval *out, int cap);

/* What AlterOpLayout does with an op that its alter hook (if any) leaves
 * alone. */
typedef enum {
    LAYOUT_PLAIN = 0,  /* needs NCHW: inputs in a blocked layout are transformed back */
    LAYOUT_FOLLOWS = 1 /* elementwise, no axis: runs in its inputs' blocked NCHW[x]c layout */
} op_layout;

/* ---- the layout hook: an op decides, AlterOpLayout rewrites the graph ----
 * The hook reads the call (in the graph being rewritten, read-only) and
 * what the pass knows (layout_query), and describes the replacement call
 * in a layout_rewrite; the pass makes it. */

/* DenseNet-201's widest concatenation has 49 inputs */
#define LAYOUT_MAX_IN 64

/* The knobs of layout hooks (docs/tuning.md): a choice a hook makes for a
 * call (the Winograd tile) is asked of `value` with its default and legal
 * values, and the value to use comes back: the default, or what a tuning
 * record or the tuner says. */
typedef struct layout_knobs {
    int64_t (*value)(struct layout_knobs *k, const struct gnode *call, const char *name,
                     int64_t def, int n, const int64_t *cands);
} layout_knobs;

typedef struct {
    const kiln_target *target;
    int winograd;        /* 3x3 convolutions: -1 the op decides, 0 never, 2 or 4 that tile */
    const int *block;    /* block[id]: the layout node id has now (0 NCHW, x NCHW[x]c) */
    layout_knobs *knobs; /* NULL: every knob at its default */
} layout_query;

/* One input of the replacement call: the call's input read in layout
 * `block` (0 NCHW, x NCHW[x]c; the pass inserts the transform), or, if
 * value is set, a new constant (taken by the pass) named after the input
 * plus `suffix`. */
typedef struct {
    int block;
    kiln_ndarray *value;
    char suffix[48];
} layout_input;

typedef struct {
    const char *op;                 /* the replacement's op; NULL: the call's own */
    const char *const *drop;        /* the call's attributes left out (NULL-ended), or NULL */
    char attrs[256];                /* attributes added, in the text syntax ("" for none) */
    int out_block;                  /* the layout of the output (0 NCHW, x NCHW[x]c) */
    layout_input in[LAYOUT_MAX_IN]; /* one per input of the call */
} layout_rewrite;

/* An op's layout hook: fill *rw (which comes zeroed) and return 1
 * to rewrite the call, 0 to leave it to the op's `layout`, or -1 with an
 * error (having freed any values it made). */
typedef int (*op_alter_fn)(const struct gnode *call, const layout_query *q, layout_rewrite *rw);

/* Whether a call's output is, byte for byte, its inputs one after another
 * in input order (a concatenation along an axis whose leading dims are all
 * 1): then the memory planner may place each input in the output's buffer
 * and the call runs nothing (src/driver/concat_views.c). Its type and its
 * inputs' are known and static when the driver asks. */
typedef int (*op_view_fn)(const struct kiln_graph *g, const struct gnode *call);
/* An op's direct fold: its one output from concrete inputs (their types
 * checked against the call's), computed without the reference interpreter
 * and bit-identical to evaluating its compute. KILN_OK with a new compact
 * array in *out, KILN_ERR_UNSUPPORTED (no error set) to leave this call to
 * the interpreter, or another error. */
typedef kiln_status (*op_fold_fn)(const struct gnode *call, const kiln_ndarray *const *in,
                                  kiln_ndarray **out);

/* What a control op does with its bodies (kiln_op_def.control). */
typedef enum { OP_CONTROL_NONE = 0, OP_CONTROL_IF, OP_CONTROL_LOOP, OP_CONTROL_SCAN } op_control;

/* One row of the op table: an op's whole definition. A family file in
 * src/ops (elemwise.c, conv.c, ...) holds each op's schema, relation,
 * compute, layout hook and schedule, and exports its rows; op_table.c
 * assembles the registry from the families. */
typedef struct kiln_op_def {
    const char *name; /* Relay-style: "nn.conv2d", "add" */
    int min_in, max_in;
    const attr_schema *attrs; /* terminated by a row with name NULL */
    op_rel_fn rel;
    op_pattern pattern;
    op_compute_fn compute;
    const char *summary;     /* one line for --help and docs */
    const void *plugin;      /* a user op's kiln_op_spec (kiln/plugin.h), else NULL */
    op_schedule_fn schedule; /* the CPU schedule of its fused group, or NULL: the default */
    op_elem_fn elem;         /* elementwise and broadcasting ops: the scalar, else NULL */
    int variant;             /* which op of its family a shared compute, relation or
                                schedule builds (a family's own enum: REDUCE_MEAN, ...) */
    op_layout layout;        /* AlterOpLayout's default for it */
    op_alter_fn alter;       /* (optional) AlterOpLayout's rewrite of it for the target */
    int sym_dims;            /* 1: its compute and schedule take symbolic (run-time) dims;
                                the driver refuses a symbolic dim on an op without it
                                (docs/DYNAMIC_SHAPES.md) */
    op_values_fn values;     /* (optional) its output as shape values, from its inputs' */
    int binds;               /* 1: its output, an int64 vector, holds sizes known only when
                                it runs; element k names size variable "<prefix>_k" (its
                                `prefix` attribute), which later types use as a dim. The
                                driver makes its kernel a binder in the plan */
    op_control control;      /* a control op (If, Loop, Scan: src/ops/control.c): no
                                compute; its bodies (GA_GRAPH attributes) are compiled as
                                graphs and the plan runs them (docs/CONTROL_FLOW.md) */
    op_view_fn view;         /* (optional) 1 when this call's output is its inputs' bytes in
                                order, so it can be a view of them (op_view_fn) */
    op_fold_fn fold;         /* (optional) evaluation without the interpreter (graph_eval_call):
                                data movement on large constants, a weight's transpose */
    op_rows_fn rows;         /* (optional) 1 when this call takes part in row fusion
                                (op_rows_fn) */
    int external;            /* 1: a call of a function that a bring-your-own-codegen
                                backend compiles (src/contrib; its Compiler attribute) */
} kiln_op_def;

/* The ops a graph may use: the built-in table plus rows added by plugins. */
typedef struct kiln_op_registry {
    int n, cap;
    const kiln_op_def **ops;
} kiln_op_registry;

KILN_HIDDEN const kiln_op_def *op_registry_find(const kiln_op_registry *r, const char *name);
KILN_HIDDEN kiln_status op_registry_add(kiln_op_registry *r, const kiln_op_def *def);

/* ---- nodes and graphs ------------------------------------------------------ */

typedef enum { GN_VAR, GN_CONST, GN_CALL, GN_TUPLE, GN_TUPLE_GET } gnode_kind;

typedef struct gnode {
    const struct kiln_graph *graph; /* the graph it belongs to */
    int id;
    gnode_kind kind;
    const kiln_op_def *op; /* GN_CALL */
    int nin;
    const int *in; /* input node ids, all < id */
    int nattr;
    const gattr *attrs; /* GN_CALL, sorted as given */
    const char *name;   /* source name ("" if none) */
    gtype type;
    kiln_ndarray *value; /* GN_CONST, owned by the graph */
    int index;           /* GN_TUPLE_GET */
} gnode;

struct kiln_graph {
    int refs; /* kiln_graph_free frees it when the last reference goes */
    int nsubs, subs_cap;
    struct kiln_graph **subs; /* the sub-graphs its calls' GA_GRAPH attributes hold */
    arena *arena;
    const kiln_op_registry *ops;
    int n, cap;
    gnode **nodes;
    int nout;
    int *outs;
    const char **out_names;
};

/* A node by id, or NULL if out of range. */
KILN_HIDDEN gnode *graph_node(const struct kiln_graph *g, int id);
/* Append a node; copies the arrays into the graph's arena. Returns its id,
 * or -1 with an error (bad input ids, unknown op, arity, attributes). */
KILN_HIDDEN int graph_add(struct kiln_graph *g, gnode_kind kind, const kiln_op_def *op, int nin,
                          const int *in, int nattr, const gattr *attrs, const char *name);
KILN_HIDDEN const gattr *graph_attr(const gnode *n, const char *name);
/* Attribute value helpers: the value, or the schema default, or `def`. */
KILN_HIDDEN int64_t graph_attr_int(const gnode *n, const char *name, int64_t def);
KILN_HIDDEN double graph_attr_float(const gnode *n, const char *name, double def);
/* INTS attribute: count, writes up to cap values; -1 if absent. */
KILN_HIDDEN int graph_attr_ints(const gnode *n, const char *name, int64_t *out, int cap);
KILN_HIDDEN const char *graph_attr_str(const gnode *n, const char *name, const char *def);
/* GA_GRAPH attribute: the sub-graph, or NULL if absent. */
KILN_HIDDEN struct kiln_graph *graph_attr_graph(const gnode *n, const char *name);
/* Another reference to g (kiln_graph_free drops one). */
KILN_HIDDEN struct kiln_graph *graph_retain(struct kiln_graph *g);

/* 1 if s may name a size variable (a symbolic dim): an identifier,
 * [A-Za-z_][A-Za-z0-9_]*, of at most max_len characters. */
KILN_HIDDEN int graph_is_size_name(const char *s, size_t max_len);

/* Types. */
KILN_HIDDEN gtype gtype_tensor(struct kiln_graph *g, kiln_dtype dt, int ndim, const gdim *dims);
KILN_HIDDEN int gtype_equal(const gtype *a, const gtype *b);
KILN_HIDDEN int gdim_equal(gdim a, gdim b);
/* The most elements a tensor type may have: 2^48, more than any machine
 * holds. Every type the graph carries stays under it (checked as types are
 * inferred), so arithmetic on its dims, and on a dim times a small factor,
 * never overflows int64. */
#define GRAPH_MAX_ELEMENTS ((int64_t)1 << 48)
/* The most control-flow bodies (if, loop, scan) nested in one another that
 * the text IR, the driver and the plan loader take (each level nests the
 * plan's JSON about 5 deeper: JSON_MAX_DEPTH leaves room for it). */
#define GRAPH_MAX_BODY_DEPTH 16
/* 1 when every known dim of t is in [0, GRAPH_MAX_ELEMENTS] and so is the
 * known dims' product; else 0, with the reason in why. */
KILN_HIDDEN int gtype_size_ok(const gtype *t, char *why, size_t cap);
/* "Tensor[(1, 3, n), float32]" or "(Tensor[...], Tensor[...])" */
KILN_HIDDEN void gtype_print(kstr *out, const gtype *t);

/* A node label for error messages: "node 'Conv_0' (nn.conv2d)". */
KILN_HIDDEN const char *graph_node_label(const gnode *n, char *buf, size_t cap);

#endif
