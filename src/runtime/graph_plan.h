/* graph_plan.h: the loaded model (kiln_model) behind the graph executor.
 * graph_plan.c reads and checks mod.json into it and places the weights;
 * graph_executor.c shares it between runs. Everything here is immutable
 * once loaded, except the reference count and the pool of idle run states
 * (under pool_mu), so any number of threads may run one model at once.
 *
 * A static plan (every dim an integer) has its shapes here and its kernels'
 * symbolic sizes bound at load. A dynamic plan (some dim a dim expression,
 * dim_expr.h) has the expressions here; each run state binds the
 * variables from its inputs' shapes and evaluates the rest per run. */
#ifndef KILN_GRAPH_PLAN_H
#define KILN_GRAPH_PLAN_H

#include <pthread.h>
#include <stdatomic.h>

#include "dim_expr.h"
#include "runtime_internal.h"

/* The most variables one binder node binds (its output's length). */
#define KILN_MAX_BINDS 64

/* The most bytes an entry, and a static plan's storage in all, may have: 1 TiB. */
#define MAX_STORAGE_BYTES ((int64_t)1 << 40)

typedef struct {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_NDIM]; /* -1 where the dim is an expression */
    int64_t bytes;                /* the element size times the constant dims */
    int storage;
    int64_t offset; /* its bytes' offset in the storage (attrs.storage_offset; graph_views.c) */
    int node;       /* the node that produces it */
    int last_use;   /* the last node reading it (INT_MAX for heads and null nodes) */
    /* per dim: its expression (shape[d] is then -1), or NULL for a constant;
       expr itself is NULL when every dim is a constant */
    const dim_expr **expr;
    int dim0; /* dynamic plans: this run's dims are a run state's dims[dim0 ...] */
} plan_entry;

/* A control node ("op": "control", docs/CONTROL_FLOW.md): If, Loop or
 * Scan, whose bodies are plans of their own (models sharing the module and
 * the parameters), which the executor runs as the data says
 * (graph_control.c). */
enum { PLAN_IF = 1, PLAN_LOOP = 2, PLAN_SCAN = 3 };

/* The most bodies nested in one another that load. */
#define PLAN_MAX_DEPTH 16
/* The most inputs and outputs of a control node. */
#define PLAN_MAX_CONTROL_IO 256

typedef struct {
    int kind;    /* PLAN_IF, PLAN_LOOP, PLAN_SCAN */
    int nbodies; /* If: 2 (then, else); Loop, Scan: 1 */
    kiln_model *bodies[2];
    int num_carried, num_scan_inputs, batch;
    /* Scan: per scan input and per scan output, its axis (normalized to the
       rank of the body's slice plus one) and direction (1: reversed) */
    int *in_axes, *in_dirs, *out_axes, *out_dirs;
} plan_control;

typedef struct {
    const char *name, *func;
    int is_op, is_param;
    int is_view;       /* a "__view" tvm_op: runs nothing (graph_views.c); not a kernel */
    int external;      /* attrs.external: a backend's function (kiln/byoc.h), with threads of
                          its own: the pool's workers sleep before it runs */
    plan_control *ctl; /* a control node (is_op is set: it runs in order with the kernels) */
    int ninputs, noutputs, first; /* first: its first entry id (node_row_ptr) */
    int *inputs;                  /* entry ids */
    int arg0;                     /* its arguments' index in arg_entry and a run's args */
    kiln_kernel_fn fn;
    const kiln_function *f;
    int64_t *vars; /* symbolic sizes, bound at load (static plans) */
    int kv0;       /* dynamic plans: its sizes are a run state's kvars[kv0 ...] */
    /* a binder (its attrs' "binds"): after it runs, element k of its output,
       an int64 vector, is the value of dim variable binds[k] for this run,
       or, where check[k], must equal it (a variable bound before: an input
       dim or an earlier binder) or, where binds[k] < 0, the size
       bind_size[k]; a control node's binds are dims of its outputs (each
       the variable alone) */
    int nbinds;
    int *binds;
    unsigned char *check;
    int64_t *bind_size;
    const struct json *binds_json; /* while loading */
    const struct json *ctl_json;   /* while loading: a control node's attrs */
    /* its cost per call (attrs.flops, attrs.bytes; graph_cost.c): a count,
       -1 where unknown or symbolic; a symbolic one is cost_e's, over the
       function's size variables (vars, or a run's kvars + kv0) */
    const struct json *cost_json[2]; /* while loading */
    int64_t cost[2];
    const dim_expr *cost_e[2];
} plan_node;

typedef struct {
    const char *name;
    int entry;
} plan_port;

/* Per-run state (graph_executor.c): the activation arena and the kernels'
 * argument pointers into it. */
typedef struct run_state run_state;

struct kiln_model {
    atomic_int refs;
    arena *ar;
    kiln_module *owned; /* the package's module, or NULL */
    int nnodes, nentries, nstorage, ninputs, noutputs, nkernels, nargs;
    plan_node *nodes;
    plan_entry *entries;
    plan_port *inputs, *outputs;
    int *kernels;               /* node ids of the tvm_op and control nodes, views left out */
    int *arg_entry;             /* the entry of every kernel argument, kernels in order */
    void **weights;             /* per storage id: a parameter's buffer, shared by all runs and
                                   never written; NULL for the others */
    unsigned char *params_blob; /* the package's mod.params image, when weights point into it
                                   (npz_parse_take): freed with them */
    size_t params_blob_len;
    int64_t *offset;     /* static plans, per storage id: byte offset of its buffer in a
                            run's arena */
    int64_t arena_bytes; /* static plans: a run's arena: inputs, activations and outputs */
    /* dynamic plans (all 0 for a static one) */
    int dynamic;
    dim_vars vars;           /* the dim variables, named in vars.names */
    int *var_port, *var_dim; /* variable k is dim var_dim[k] of input var_port[k], or (port
                                -1) element var_dim[k] of binder node var_node[k]'s output */
    int *var_node;
    int staged;         /* some node binds variables: a run sets each kernel up just
                           before it runs, once its sizes are known */
    int ndims;          /* the dims of all entries: the size of a run's dims[] */
    int nkvars;         /* the symbolic sizes of all kernels: a run's kvars[] */
    int64_t *min_bytes; /* per storage id: the most bytes its static entries need */
    int depth;          /* 0, or how deep a body's plan is nested in control nodes */
    int vector_bits;    /* the package target's vector width (mod.json target), or 0 */
    pthread_mutex_t pool_mu;
    int pool_mu_ok;
    run_state *pool; /* idle run states for kiln_model_run */
};

/* A zeroed model with its arena and pool mutex, one reference (NULL if out
 * of memory); kiln_model_free frees it. */
KILN_HIDDEN kiln_model *graph_model_alloc(void);

/* Read and check the plan text[0, len) into m (zeroed, with its arena),
 * bind every kernel to mod's functions and place the weights from params.
 * With `own` (the package's npz, freed next), a weight's storage may be
 * taken from it instead of copied. An error names mod.json and the node. */
KILN_HIDDEN kiln_status graph_plan_read(kiln_model *m, const char *text, size_t len,
                                        kiln_module *mod, const kiln_npz *params, kiln_npz *own);
/* Read kernel node nid's cost attributes (cost_json, once its function is
 * bound): each absent (unknown), a non-negative integer, or a dim
 * expression over the function's size variables, evaluated here in a static
 * plan. An error without a prefix names the attribute. */
KILN_HIDDEN kiln_status graph_cost_read(kiln_model *m, int nid);
/* Kernel node nid's flops and bytes per call (out[0], out[1]; -1 where
 * unknown) with its size variables vars (a static plan: NULL). */
KILN_HIDDEN void graph_cost_eval(const kiln_model *m, int nid, const int64_t *vars, double out[2]);
/* Check the views and the storage offsets (graph_views.c), once the
 * entries, nodes and heads are read; an error names mod.json and the entry
 * or node. */
KILN_HIDDEN kiln_status graph_check_views(kiln_model *m);
/* Check that entries sharing a storage id are never live at once, a view's
 * set counting as one (graph_views.c); sets each entry's last_use. */
KILN_HIDDEN kiln_status graph_check_storage(kiln_model *m);
/* Free the weights graph_plan_read placed. */
KILN_HIDDEN void graph_plan_free_weights(kiln_model *m);

/* "float32[2, 8]" for a type; a negative dim (a symbolic size) prints "?". */
KILN_HIDDEN const char *graph_type_str(char *buf, size_t n, kiln_dtype dt, int ndim,
                                       const int64_t *shape);
/* The same for an entry, its symbolic dims as their expressions ("float32[n*2, 3]"). */
KILN_HIDDEN const char *graph_entry_str(char *buf, size_t n, const plan_entry *en);
/* "entry 5 (output 0 of node 3 'y')", for messages. */
KILN_HIDDEN const char *graph_entry_name(char *buf, size_t n, const kiln_model *m, int entry);
/* The same for an array. */
KILN_HIDDEN const char *graph_array_str(char *buf, size_t n, const kiln_ndarray *a);
/* 1 if array a has entry en's dtype, rank and constant dims (its symbolic
 * dims are checked against a binding, graph_executor.c). */
KILN_HIDDEN int graph_array_matches(const kiln_ndarray *a, const plan_entry *en);
/* Check kernel node nid's arguments against their entries, whose dims are
 * dims + en->dim0 for each entry en in a run of a dynamic plan, or, with dims
 * NULL, the plan's shapes (a symbolic dim, -1 there, is then skipped: it is
 * checked per run). Binds the kernel's symbolic sizes into vars (-1 where
 * still unbound). An error (without a prefix) names the function, the
 * argument and both types. */
KILN_HIDDEN kiln_status graph_plan_bind_kernel(const kiln_model *m, int nid, const int64_t *dims,
                                               int64_t *vars);
/* The most bytes the buffers of one run state of a dynamic plan may hold in
 * all (INT64_MAX, unlimited, unless a test or fuzzer lowers it); past it a
 * run fails with KILN_ERR_NOMEM. */
KILN_HIDDEN extern int64_t graph_run_storage_limit;

#endif
