/* graph_executor.c: runs TVM's graph-executor JSON (mod.json) over a
 * module. Loading validates the whole plan (ids, shapes, dtypes, storage
 * liveness, every kernel's signature against its entries), allocates one
 * aligned buffer per storage_id, copies the params in and precomputes each
 * kernel call's argument array, so a run is a loop of direct calls that
 * allocates nothing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/json.h"
#include "runtime_internal.h"

#define MAX_STORAGE_BYTES ((int64_t)1 << 40)
#define WHAT "mod.json"

typedef struct {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_NDIM];
    int64_t bytes;
    int storage;
    int node;     /* the node that produces it */
    int last_use; /* the last node reading it (INT_MAX for heads and null nodes) */
} entry;

typedef struct {
    const char *name, *func;
    int is_op, is_param;
    int ninputs, noutputs, first; /* first: its first entry id (node_row_ptr) */
    int *inputs;                  /* entry ids */
    kiln_kernel_fn fn;
    void **args;
    int64_t *vars;
} node;

typedef struct {
    const char *name;
    int entry;
    kiln_ndarray *view;
} port;

struct kiln_executor {
    arena *ar;
    kiln_module *owned; /* the package's module, or NULL */
    int nnodes, nentries, nstorage, ninputs, noutputs, nkernels;
    node *nodes;
    entry *entries;
    void **storage;
    port *inputs, *outputs;
    int *kernels; /* node ids of the tvm_op nodes */
};

/* ---- errors ------------------------------------------------------------------- */

/* Prefix the current error with "mod.json: node N 'name'". */
static kiln_status node_prefix(const kiln_executor *e, int nid) {
    kiln_error_prefix(WHAT ": node %d '%s'", nid, e->nodes[nid].name ? e->nodes[nid].name : "?");
    return KILN_ERR_INVALID;
}

static kiln_status plan_prefix(void) {
    kiln_error_prefix(WHAT);
    return KILN_ERR_INVALID;
}

/* Errors in the plan as a whole, and in one node: printf-style messages. */
#define plan_err(...) (kiln_set_error(KILN_ERR_INVALID, __VA_ARGS__), plan_prefix())
#define node_err(e, nid, ...) (kiln_set_error(KILN_ERR_INVALID, __VA_ARGS__), node_prefix(e, nid))

/* "float32[2, 8]"; a negative dim (a symbolic size) prints as "?". */
static const char *type_str(char *buf, size_t n, kiln_dtype dt, int ndim, const int64_t *shape) {
    int k = snprintf(buf, n, "%s[", kiln_dtype_name(dt));
    for (int d = 0; d < ndim && k > 0 && (size_t)k < n; d++) {
        if (shape[d] < 0)
            k += snprintf(buf + k, n - (size_t)k, "%s?", d ? ", " : "");
        else
            k += snprintf(buf + k, n - (size_t)k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    }
    if (k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "]");
    return buf;
}

static const char *array_str(char *buf, size_t n, const kiln_ndarray *a) {
    int64_t shape[KILN_MAX_NDIM];
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        shape[d] = kiln_ndarray_dim(a, d);
    return type_str(buf, n, kiln_ndarray_dtype(a), kiln_ndarray_ndim(a), shape);
}

/* 1 if array a has entry en's dtype and shape. */
static int array_matches(const kiln_ndarray *a, const entry *en) {
    int ok = kiln_ndarray_dtype(a) == en->dtype && kiln_ndarray_ndim(a) == en->ndim;
    for (int d = 0; ok && d < en->ndim; d++)
        ok = kiln_ndarray_dim(a, d) == en->shape[d];
    return ok;
}

/* ---- reading the plan --------------------------------------------------------- */

/* An int in [lo, hi]. */
static int int_in(const json *v, int64_t lo, int64_t hi, int *out) {
    int64_t x;
    if (!json_int(v, &x) || x < lo || x > hi)
        return 0;
    *out = (int)x;
    return 1;
}

/* A count attribute: TVM writes "2" (a string); an integer is accepted too. */
static int attr_count(const json *v, int *out) {
    const char *s = json_str(v);
    if (!s)
        return int_in(v, 0, INT_MAX, out);
    int64_t x = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || !kiln_mul_ok(x, 10, &x) || !kiln_add_ok(x, *s - '0', &x) ||
            x > INT_MAX)
            return 0;
    }
    *out = (int)x;
    return 1;
}

/* attrs[key] = [tag, list] with list of n items; returns the list. */
static const json *graph_attr(const json *attrs, const char *key, const char *tag, int n) {
    const json *a = json_get(attrs, key);
    if (!a) {
        plan_err("attrs has no \"%s\"", key);
        return NULL;
    }
    const char *t = json_str(json_at(a, 0));
    const json *list = json_at(a, 1);
    if (json_len(a) != 2 || !t || strcmp(t, tag) != 0 || !json_is(list, JSON_ARRAY)) {
        plan_err("attrs.%s must be [\"%s\", [...]]", key, tag);
        return NULL;
    }
    if (json_len(list) != n) {
        plan_err("attrs.%s has %d entries, but node_row_ptr says %d", key, json_len(list), n);
        return NULL;
    }
    return list;
}

static kiln_status read_entries(kiln_executor *e, const json *attrs) {
    const json *shapes = graph_attr(attrs, "shape", "list_shape", e->nentries);
    const json *dtypes = shapes ? graph_attr(attrs, "dltype", "list_str", e->nentries) : NULL;
    const json *sids = dtypes ? graph_attr(attrs, "storage_id", "list_int", e->nentries) : NULL;
    if (!sids)
        return KILN_ERR_INVALID;
    for (int i = 0; i < e->nentries; i++) {
        entry *en = &e->entries[i];
        const json *sh = json_at(shapes, i);
        const char *dt = json_str(json_at(dtypes, i));
        if (!dt || kiln_dtype_parse(dt, &en->dtype) || en->dtype == KILN_HANDLE)
            return plan_err("entry %d: unknown dltype '%s'", i, dt ? dt : "(not a string)");
        if (!json_is(sh, JSON_ARRAY) || json_len(sh) > KILN_MAX_NDIM)
            return plan_err("entry %d: shape must be a list of at most %d dims", i, KILN_MAX_NDIM);
        en->ndim = json_len(sh);
        en->bytes = (int64_t)kiln_dtype_size(en->dtype);
        for (int d = 0; d < en->ndim; d++) {
            if (!json_int(json_at(sh, d), &en->shape[d]) || en->shape[d] < 0)
                return plan_err("entry %d: dim %d is not a non-negative integer", i, d);
            if (!kiln_mul_ok(en->bytes, en->shape[d], &en->bytes) || en->bytes > MAX_STORAGE_BYTES)
                return plan_err("entry %d: the shape is too large", i);
        }
        if (!int_in(json_at(sids, i), 0, e->nentries - 1, &en->storage))
            return plan_err("entry %d: storage_id must be an integer in [0, %d)", i, e->nentries);
        if (en->storage >= e->nstorage)
            e->nstorage = en->storage + 1;
    }
    return KILN_OK;
}

/* An entry reference [nid, index, version] of a node before `before`. */
static int entry_ref(const kiln_executor *e, const json *r, int before, int *out) {
    int nid, idx;
    int64_t version;
    if ((json_len(r) != 3 && json_len(r) != 2) || !json_is(r, JSON_ARRAY) ||
        !int_in(json_at(r, 0), 0, before - 1, &nid) ||
        !int_in(json_at(r, 1), 0, e->nodes[nid].noutputs - 1, &idx) ||
        (json_len(r) == 3 && !json_int(json_at(r, 2), &version)))
        return 0;
    *out = e->nodes[nid].first + idx;
    return 1;
}

static kiln_status read_node(kiln_executor *e, int nid, const json *jn, const int *row) {
    node *n = &e->nodes[nid];
    const char *op = json_str(json_get(jn, "op"));
    n->name = json_str(json_get(jn, "name"));
    if (!n->name)
        return plan_err("node %d has no \"name\" string", nid);
    if (!op || (strcmp(op, "null") != 0 && strcmp(op, "tvm_op") != 0))
        return node_err(e, nid, "\"op\" must be \"null\" or \"tvm_op\"");
    n->is_op = op[0] == 't';
    n->first = row[nid];
    n->noutputs = row[nid + 1] - row[nid];
    const json *ins = json_get(jn, "inputs");
    if (ins && !json_is(ins, JSON_ARRAY))
        return node_err(e, nid, "\"inputs\" must be a list");
    n->ninputs = ins ? json_len(ins) : 0;
    if (!n->is_op) {
        if (n->ninputs)
            return node_err(e, nid, "a \"null\" node has no inputs");
        if (n->noutputs != 1)
            return node_err(e, nid, "node_row_ptr gives a \"null\" node %d outputs", n->noutputs);
        return KILN_OK;
    }
    const json *attrs = json_get(jn, "attrs");
    int nin, nout;
    n->func = json_str(json_get(attrs, "func_name"));
    if (!n->func || !n->func[0])
        return node_err(e, nid, "attrs has no \"func_name\"");
    if (!attr_count(json_get(attrs, "num_inputs"), &nin) || nin != n->ninputs)
        return node_err(e, nid, "attrs.num_inputs must be the number of inputs (%d)", n->ninputs);
    if (!attr_count(json_get(attrs, "num_outputs"), &nout) || nout != n->noutputs || nout < 1)
        return node_err(e, nid,
                        "attrs.num_outputs must be at least 1 and agree with "
                        "node_row_ptr (%d)",
                        n->noutputs);
    n->inputs = arena_alloc(e->ar, (size_t)n->ninputs * sizeof(int));
    for (int i = 0; i < n->ninputs; i++)
        if (!entry_ref(e, json_at(ins, i), nid, &n->inputs[i]))
            return node_err(e, nid,
                            "input %d must be [nid, index, version] naming an output of "
                            "an earlier node",
                            i);
    return KILN_OK;
}

static kiln_status read_nodes(kiln_executor *e, const json *root) {
    const json *nodes = json_get(root, "nodes"), *rp = json_get(root, "node_row_ptr");
    if (!json_is(nodes, JSON_ARRAY) || json_len(nodes) < 1)
        return plan_err("\"nodes\" must be a non-empty list");
    e->nnodes = json_len(nodes);
    if (!json_is(rp, JSON_ARRAY) || json_len(rp) != e->nnodes + 1)
        return plan_err("\"node_row_ptr\" must be a list of %d integers (nodes + 1)",
                        e->nnodes + 1);
    int *row = arena_alloc(e->ar, (size_t)(e->nnodes + 1) * sizeof(int));
    for (int i = 0; i <= e->nnodes; i++)
        if (!int_in(json_at(rp, i), i ? row[i - 1] : 0, i ? INT_MAX : 0, &row[i]))
            return plan_err("node_row_ptr[%d] must be an integer, 0 first and never decreasing", i);
    e->nentries = row[e->nnodes];
    e->nodes = arena_alloc(e->ar, (size_t)e->nnodes * sizeof(node));
    for (int i = 0; i < e->nnodes; i++) {
        const json *jn = json_at(nodes, i);
        if (!json_is(jn, JSON_OBJECT))
            return plan_err("node %d is not an object", i);
        if (read_node(e, i, jn, row))
            return KILN_ERR_INVALID;
    }
    /* check the count against the lists before allocating for it */
    if (!graph_attr(json_get(root, "attrs"), "shape", "list_shape", e->nentries))
        return KILN_ERR_INVALID;
    e->entries = arena_alloc(e->ar, (size_t)e->nentries * sizeof(entry));
    for (int i = 0; i < e->nnodes; i++)
        for (int k = 0; k < e->nodes[i].noutputs; k++) {
            entry *en = &e->entries[e->nodes[i].first + k];
            en->node = i;
            en->last_use = e->nodes[i].is_op ? i : INT_MAX;
        }
    return read_entries(e, json_get(root, "attrs"));
}

/* Inputs and params from arg_nodes; params copied from `params`. */
static kiln_status read_args(kiln_executor *e, const json *root, const kiln_npz *params) {
    const json *args = json_get(root, "arg_nodes");
    if (!json_is(args, JSON_ARRAY))
        return plan_err("\"arg_nodes\" must be a list");
    int nargs = json_len(args), nnull = 0;
    for (int i = 0; i < e->nnodes; i++)
        nnull += !e->nodes[i].is_op;
    if (nargs != nnull)
        return plan_err("\"arg_nodes\" lists %d nodes, but there are %d \"null\" nodes", nargs,
                        nnull);
    char *seen = arena_alloc(e->ar, (size_t)e->nnodes);
    e->inputs = arena_alloc(e->ar, (size_t)nargs * sizeof(port));
    for (int i = 0; i < nargs; i++) {
        int nid;
        if (!int_in(json_at(args, i), 0, e->nnodes - 1, &nid) || e->nodes[nid].is_op || seen[nid]++)
            return plan_err("arg_nodes[%d] must name a \"null\" node, once", i);
        node *n = &e->nodes[nid];
        entry *en = &e->entries[n->first];
        const kiln_ndarray *p = kiln_npz_get(params, n->name);
        if (!p) {
            for (int k = 0; k < e->ninputs; k++)
                if (strcmp(e->inputs[k].name, n->name) == 0)
                    return node_err(e, nid, "two inputs have this name");
            e->inputs[e->ninputs++] = (port){n->name, n->first, NULL};
            continue;
        }
        char want[256], got[256];
        if (!array_matches(p, en))
            return node_err(e, nid, "mod.params has %s, but the graph says %s",
                            array_str(got, sizeof got, p),
                            type_str(want, sizeof want, en->dtype, en->ndim, en->shape));
        n->is_param = 1;
    }
    return KILN_OK;
}

static kiln_status read_heads(kiln_executor *e, const json *root) {
    const json *heads = json_get(root, "heads"), *names = json_get(root, "output_names");
    if (!json_is(heads, JSON_ARRAY) || json_len(heads) < 1)
        return plan_err("\"heads\" must be a non-empty list");
    e->noutputs = json_len(heads);
    if (names && (!json_is(names, JSON_ARRAY) || json_len(names) != e->noutputs))
        return plan_err("\"output_names\" must be a list of %d strings (one per head)",
                        e->noutputs);
    e->outputs = arena_alloc(e->ar, (size_t)e->noutputs * sizeof(port));
    for (int i = 0; i < e->noutputs; i++) {
        port *o = &e->outputs[i];
        if (!entry_ref(e, json_at(heads, i), e->nnodes, &o->entry))
            return plan_err("heads[%d] must be [nid, index, version] naming a node output", i);
        e->entries[o->entry].last_use = INT_MAX;
        if (names) {
            o->name = json_str(json_at(names, i));
            if (!o->name || !o->name[0])
                return plan_err("output_names[%d] must be a non-empty string", i);
            for (int k = 0; k < i; k++)
                if (strcmp(e->outputs[k].name, o->name) == 0)
                    return plan_err("output_names: '%s' appears twice", o->name);
        } else {
            char buf[32];
            snprintf(buf, sizeof buf, "output_%d", i);
            o->name = arena_strdup(e->ar, buf);
        }
    }
    return KILN_OK;
}

/* Entries sharing a storage_id must never be live at once: an entry's
 * buffer is free after its last reader. Null nodes and heads stay live. */
static kiln_status check_storage(kiln_executor *e) {
    for (int i = 0; i < e->nnodes; i++)
        for (int k = 0; k < e->nodes[i].ninputs; k++) {
            entry *en = &e->entries[e->nodes[i].inputs[k]];
            if (en->last_use < i)
                en->last_use = i;
        }
    int *busy = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int)); /* last_use + 2 */
    int *holder = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int));
    for (int i = 0; i < e->nentries; i++) { /* entry order is node order */
        entry *en = &e->entries[i];
        int s = en->storage, def = e->nodes[en->node].is_op ? en->node : -1;
        if (busy[s] && busy[s] - 2 >= def) {
            entry *h = &e->entries[holder[s]];
            return node_err(e, en->node,
                            "its output shares storage_id %d with an output of node "
                            "%d '%s' that is still live%s",
                            s, h->node, e->nodes[h->node].name,
                            def < 0 || h->last_use == INT_MAX ? " (inputs, params and outputs "
                                                                "need their own storage)"
                                                              : "");
        }
        busy[s] = en->last_use == INT_MAX ? INT_MAX : en->last_use + 2;
        holder[s] = i;
    }
    return KILN_OK;
}

/* Bind node nid's function and precompute its argument and size arrays. */
static kiln_status bind_kernel(kiln_executor *e, int nid, kiln_module *mod) {
    node *n = &e->nodes[nid];
    kiln_function *f = kiln_module_get_function(mod, n->func);
    if (!f)
        return node_prefix(e, nid);
    int nargs = n->ninputs + n->noutputs, nvars = kiln_function_num_vars(f);
    if (kiln_function_num_args(f) != nargs)
        return node_err(e, nid,
                        "function '%s' takes %d arguments, but the node has %d inputs "
                        "and %d outputs",
                        n->func, kiln_function_num_args(f), n->ninputs, n->noutputs);
    n->fn = kiln_function_kernel(f);
    n->args = arena_alloc(e->ar, (size_t)nargs * sizeof(void *));
    n->vars = arena_alloc(e->ar, (size_t)nvars * sizeof(int64_t));
    char *bound = arena_alloc(e->ar, (size_t)nvars);
    for (int a = 0; a < nargs; a++) {
        const entry *en = &e->entries[a < n->ninputs ? n->inputs[a] : n->first + a - n->ninputs];
        kiln_dtype dt;
        int ndim, ok;
        const int64_t *dims;
        KILN_ASSERT(kiln_function_arg_info(f, a, &dt, &ndim, &dims));
        ok = dt == en->dtype && ndim == en->ndim;
        for (int d = 0; d < ndim && ok; d++) {
            if (dims[d] >= 0) {
                ok = dims[d] == en->shape[d];
                continue;
            }
            int k = (int)(-1 - dims[d]); /* a symbolic size: bound by its first use */
            if (!bound[k]) {
                bound[k] = 1;
                n->vars[k] = en->shape[d];
            }
            ok = n->vars[k] == en->shape[d];
        }
        if (!ok) {
            char want[256], got[256];
            int64_t shape[KILN_MAX_NDIM];
            for (int d = 0; d < ndim; d++)
                shape[d] = dims[d] >= 0 ? dims[d] : -1;
            return node_err(e, nid,
                            "function '%s' argument %d (%s %d) is %s, but the entry is "
                            "%s",
                            n->func, a, a < n->ninputs ? "input" : "output",
                            a < n->ninputs ? a : a - n->ninputs,
                            type_str(want, sizeof want, dt, ndim, shape),
                            type_str(got, sizeof got, en->dtype, en->ndim, en->shape));
        }
        n->args[a] = e->storage[en->storage];
    }
    return KILN_OK;
}

/* One buffer per storage id, and the params copied in. With `own`, the
 * executor may take a param's array storage instead of copying it (the
 * package's own npz, which it frees next): the weights are then in memory
 * once. */
static kiln_status allocate(kiln_executor *e, const kiln_npz *params, kiln_npz *own) {
    int64_t *size = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int64_t)), total = 0;
    int *users = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int));
    for (int i = 0; i < e->nentries; i++) {
        entry *en = &e->entries[i];
        if (size[en->storage] < en->bytes)
            size[en->storage] = en->bytes;
        users[en->storage]++;
    }
    e->storage = kiln_calloc((size_t)e->nstorage, sizeof(void *));
    if (!e->storage)
        return KILN_ERR_NOMEM;
    for (int i = 0; own && i < e->nnodes; i++) {
        const node *n = &e->nodes[i];
        if (!n->is_param)
            continue;
        const entry *en = &e->entries[n->first];
        kiln_ndarray *a = npz_get_mutable(own, n->name);
        if (users[en->storage] == 1 && a &&
            kiln_ndarray_numel(a) * (int64_t)kiln_dtype_size(kiln_ndarray_dtype(a)) == en->bytes)
            e->storage[en->storage] = ndarray_take_data(a);
    }
    for (int s = 0; s < e->nstorage; s++) {
        int64_t n = (size[s] + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT;
        if (!kiln_add_ok(total, n, &total) || total > MAX_STORAGE_BYTES)
            return plan_err("the storage needs more than %lld bytes", (long long)MAX_STORAGE_BYTES);
        if (e->storage[s])
            continue; /* a param's, taken over */
        if (posix_memalign(&e->storage[s], KILN_ALIGNMENT, n ? (size_t)n : KILN_ALIGNMENT)) {
            e->storage[s] = NULL;
            return kiln_set_error(KILN_ERR_NOMEM, WHAT ": cannot allocate %lld bytes of storage",
                                  (long long)n);
        }
        memset(e->storage[s], 0, (size_t)n);
    }
    for (int i = 0; i < e->nnodes; i++) {
        const node *n = &e->nodes[i];
        if (n->is_param) {
            const entry *en = &e->entries[n->first];
            const kiln_ndarray *src = kiln_npz_get(params, n->name);
            if (kiln_ndarray_data(src) == e->storage[en->storage])
                continue; /* taken */
            kiln_ndarray *dst =
                kiln_ndarray_wrap(e->storage[en->storage], en->dtype, en->ndim, en->shape, NULL, 0);
            kiln_status st = dst ? kiln_ndarray_copy(dst, src) : KILN_ERR_NOMEM;
            kiln_ndarray_free(dst);
            if (st)
                return st;
        }
    }
    return KILN_OK;
}

static kiln_status make_views(kiln_executor *e, port *ports, int n) {
    for (int i = 0; i < n; i++) {
        const entry *en = &e->entries[ports[i].entry];
        ports[i].view =
            kiln_ndarray_wrap(e->storage[en->storage], en->dtype, en->ndim, en->shape, NULL, 0);
        if (!ports[i].view)
            return KILN_ERR_NOMEM;
    }
    return KILN_OK;
}

static kiln_status build(kiln_executor *e, const char *text, size_t len, kiln_module *mod,
                         const kiln_npz *params, kiln_npz *own) {
    const json *root = json_parse(e->ar, text, len, WHAT);
    if (!root)
        return KILN_ERR_INVALID;
    if (!json_is(root, JSON_OBJECT))
        return plan_err("the top level must be an object");
    kiln_status st = read_nodes(e, root);
    if (!st)
        st = read_args(e, root, params);
    if (!st)
        st = read_heads(e, root);
    if (!st)
        st = check_storage(e);
    if (!st)
        st = allocate(e, params, own);
    e->kernels = arena_alloc(e->ar, (size_t)e->nnodes * sizeof(int));
    for (int i = 0; i < e->nnodes && !st; i++)
        if (e->nodes[i].is_op) {
            e->kernels[e->nkernels++] = i;
            st = bind_kernel(e, i, mod);
        }
    if (!st)
        st = make_views(e, e->inputs, e->ninputs);
    if (!st)
        st = make_views(e, e->outputs, e->noutputs);
    return st;
}

static kiln_executor *create(const char *json_text, size_t len, kiln_module *mod,
                             const kiln_npz *params, kiln_npz *own) {
    if (!json_text || !mod) {
        kiln_set_error(KILN_ERR_INVALID, "executor_create: NULL argument");
        return NULL;
    }
    kiln_executor *e = kiln_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    if (!(e->ar = arena_new()) || build(e, json_text, len, mod, params, own)) {
        kiln_executor_free(e);
        return NULL;
    }
    return e;
}

kiln_executor *kiln_executor_create(const char *json_text, size_t len, kiln_module *mod,
                                    const kiln_npz *params) {
    return create(json_text, len, mod, params, NULL);
}

kiln_executor *kiln_executor_load(const char *path) {
    char *text;
    size_t len = 0;
    kiln_module *mod;
    kiln_npz *params;
    if (kiln_package_read(path, &text, &len, &mod, &params))
        return NULL;
    kiln_executor *e = create(text, len, mod, params, params);
    free(text);
    kiln_npz_free(params);
    if (!e) {
        kiln_error_prefix("%s", path);
        kiln_module_free(mod);
        return NULL;
    }
    e->owned = mod;
    return e;
}

void kiln_executor_free(kiln_executor *e) {
    if (!e)
        return;
    for (int i = 0; e->inputs && i < e->ninputs; i++)
        kiln_ndarray_free(e->inputs[i].view);
    for (int i = 0; e->outputs && i < e->noutputs; i++)
        kiln_ndarray_free(e->outputs[i].view);
    for (int s = 0; e->storage && s < e->nstorage; s++)
        free(e->storage[s]);
    free(e->storage);
    arena_free(e->ar);
    kiln_module_free(e->owned);
    free(e);
}

/* ---- inputs and outputs ------------------------------------------------------- */

int kiln_executor_num_inputs(const kiln_executor *e) {
    return e ? e->ninputs : 0;
}

static const entry *input_entry(const kiln_executor *e, int i) {
    return e && i >= 0 && i < e->ninputs ? &e->entries[e->inputs[i].entry] : NULL;
}

const char *kiln_executor_input_name(const kiln_executor *e, int i) {
    return input_entry(e, i) ? e->inputs[i].name : NULL;
}

kiln_dtype kiln_executor_input_dtype(const kiln_executor *e, int i) {
    const entry *en = input_entry(e, i);
    return en ? en->dtype : KILN_DTYPE_COUNT;
}

int kiln_executor_input_ndim(const kiln_executor *e, int i) {
    const entry *en = input_entry(e, i);
    return en ? en->ndim : -1;
}

int64_t kiln_executor_input_dim(const kiln_executor *e, int i, int d) {
    const entry *en = input_entry(e, i);
    return en && d >= 0 && d < en->ndim ? en->shape[d] : -1;
}

kiln_status kiln_executor_set_input(kiln_executor *e, const char *name, const kiln_ndarray *value) {
    if (!e || !name || !value)
        return kiln_set_error(KILN_ERR_INVALID, "set_input: NULL argument");
    int i = 0;
    while (i < e->ninputs && strcmp(e->inputs[i].name, name) != 0)
        i++;
    if (i == e->ninputs) {
        kstr s;
        kstr_init(&s);
        for (int k = 0; k < e->ninputs; k++)
            kstr_printf(&s, "%s%s", k ? ", " : "", e->inputs[k].name);
        for (int k = 0; k < e->nnodes; k++)
            if (e->nodes[k].is_param && strcmp(e->nodes[k].name, name) == 0) {
                kstr_free(&s);
                return kiln_set_error(KILN_ERR_INVALID,
                                      "set_input: '%s' is a parameter, not an "
                                      "input",
                                      name);
            }
        kiln_set_error(KILN_ERR_INVALID,
                       "set_input: the model has no input '%s' (its inputs: "
                       "%s)",
                       name, s.buf ? s.buf : "none");
        kstr_free(&s);
        return KILN_ERR_INVALID;
    }
    const entry *en = &e->entries[e->inputs[i].entry];
    if (!array_matches(value, en)) {
        char want[256], got[256];
        return kiln_set_error(KILN_ERR_INVALID, "set_input '%s': expected %s, got %s", name,
                              type_str(want, sizeof want, en->dtype, en->ndim, en->shape),
                              array_str(got, sizeof got, value));
    }
    return kiln_ndarray_copy(e->inputs[i].view, value);
}

int kiln_executor_num_outputs(const kiln_executor *e) {
    return e ? e->noutputs : 0;
}

const char *kiln_executor_output_name(const kiln_executor *e, int i) {
    return e && i >= 0 && i < e->noutputs ? e->outputs[i].name : NULL;
}

const kiln_ndarray *kiln_executor_output(const kiln_executor *e, int i) {
    return e && i >= 0 && i < e->noutputs ? e->outputs[i].view : NULL;
}

int kiln_executor_num_kernels(const kiln_executor *e) {
    return e ? e->nkernels : 0;
}

const char *kiln_executor_kernel_name(const kiln_executor *e, int k) {
    return e && k >= 0 && k < e->nkernels ? e->nodes[e->kernels[k]].name : NULL;
}

const char *kiln_executor_kernel_func(const kiln_executor *e, int k) {
    return e && k >= 0 && k < e->nkernels ? e->nodes[e->kernels[k]].func : NULL;
}

/* ---- running ------------------------------------------------------------------ */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static kiln_status run(kiln_executor *e, double *seconds) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run: NULL executor");
    for (int k = 0; k < e->nkernels; k++) {
        const node *n = &e->nodes[e->kernels[k]];
        double t0 = seconds ? now_seconds() : 0;
        if (n->fn(n->args, n->vars) != 0)
            return kiln_set_error(KILN_ERR_NOMEM,
                                  "node %d '%s' (function '%s'): the kernel "
                                  "could not allocate memory",
                                  e->kernels[k], n->name, n->func);
        if (seconds)
            seconds[k] = now_seconds() - t0;
    }
    return KILN_OK;
}

kiln_status kiln_executor_run(kiln_executor *e) {
    return run(e, NULL);
}

kiln_status kiln_executor_run_profiled(kiln_executor *e, double *kernel_seconds) {
    if (!kernel_seconds)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run_profiled: NULL time array");
    return run(e, kernel_seconds);
}
