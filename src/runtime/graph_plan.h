/* graph_plan.h: the loaded model (kiln_model) behind the graph executor.
 * graph_plan.c reads and checks mod.json into it and places the weights;
 * graph_executor.c shares it between runs. Everything here is immutable
 * once loaded, except the reference count and the pool of idle run states
 * (under pool_mu), so any number of threads may run one model at once. */
#ifndef KILN_GRAPH_PLAN_H
#define KILN_GRAPH_PLAN_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime_internal.h"

typedef struct {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_NDIM];
    int64_t bytes;
    int storage;
    int node;     /* the node that produces it */
    int last_use; /* the last node reading it (INT_MAX for heads and null nodes) */
} plan_entry;

typedef struct {
    const char *name, *func;
    int is_op, is_param;
    int ninputs, noutputs, first; /* first: its first entry id (node_row_ptr) */
    int *inputs;                  /* entry ids */
    int arg0;                     /* its arguments' index in arg_storage and a run's args */
    kiln_kernel_fn fn;
    int64_t *vars; /* symbolic sizes, bound at load */
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
    int *kernels;        /* node ids of the tvm_op nodes */
    int *arg_storage;    /* storage id of every kernel argument, kernels in order */
    void **weights;      /* per storage id: a parameter's buffer, shared by all runs and
                            never written; NULL for the others */
    int64_t *offset;     /* per storage id: byte offset of its buffer in a run's arena */
    int64_t arena_bytes; /* a run's arena: inputs, activations and outputs */
    pthread_mutex_t pool_mu;
    int pool_mu_ok;
    run_state *pool; /* idle run states for kiln_model_run */
};

/* Read and check the plan text[0, len) into m (zeroed, with its arena),
 * bind every kernel to mod's functions and place the weights from params.
 * With `own` (the package's npz, freed next), a weight's storage may be
 * taken from it instead of copied. An error names mod.json and the node. */
KILN_HIDDEN kiln_status graph_plan_read(kiln_model *m, const char *text, size_t len,
                                        kiln_module *mod, const kiln_npz *params, kiln_npz *own);
/* Free the weights graph_plan_read placed. */
KILN_HIDDEN void graph_plan_free_weights(kiln_model *m);

/* "float32[2, 8]" for a type; a negative dim (a symbolic size) prints "?". */
KILN_HIDDEN const char *graph_type_str(char *buf, size_t n, kiln_dtype dt, int ndim,
                                       const int64_t *shape);
/* The same for an array. */
KILN_HIDDEN const char *graph_array_str(char *buf, size_t n, const kiln_ndarray *a);
/* 1 if array a has entry en's dtype and shape. */
KILN_HIDDEN int graph_array_matches(const kiln_ndarray *a, const plan_entry *en);

#endif
