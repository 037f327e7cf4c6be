/* graph_plan.c: reads TVM's graph-executor JSON (mod.json) into a loaded
 * model and checks the whole plan: ids, shapes, dtypes, storage liveness,
 * the parameters (against "param_names" when the compiler wrote it) and
 * every kernel's signature against its entries. The weights get one
 * aligned buffer per storage id, shared by every run; in a static plan
 * every other storage id gets an offset in a run's arena (graph_executor.c).
 *
 * A dim may be a string, a dim expression (dim_expr.h); one without
 * variables is folded to its value at load. A plan with variables is
 * dynamic: each variable is bound by the first input dim that is that
 * variable alone, parameters must be static, the kernels' signatures are
 * checked here as far as the constant dims go and per run for the rest,
 * and a run state gives each storage id a buffer of its own, grown as the
 * runs need (graph_executor.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "graph_plan.h"

#define WHAT "mod.json"

int64_t graph_run_storage_limit = INT64_MAX;

/* ---- errors ------------------------------------------------------------------- */

/* Prefix the current error with "mod.json: node N 'name'". */
static kiln_status node_prefix(const kiln_model *e, int nid) {
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

/* A type, dim d printed as expr[d]'s text where expr and expr[d] are not NULL. */
static const char *type_str(char *buf, size_t n, kiln_dtype dt, int ndim, const int64_t *shape,
                            const dim_expr *const *expr) {
    int k = snprintf(buf, n, "%s[", kiln_dtype_name(dt));
    for (int d = 0; d < ndim && k > 0 && (size_t)k < n; d++) {
        const char *sep = d ? ", " : "";
        if (expr && expr[d])
            k += snprintf(buf + k, n - (size_t)k, "%s%s", sep, expr[d]->text);
        else if (shape[d] < 0)
            k += snprintf(buf + k, n - (size_t)k, "%s?", sep);
        else
            k += snprintf(buf + k, n - (size_t)k, "%s%lld", sep, (long long)shape[d]);
    }
    if (k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "]");
    return buf;
}

const char *graph_type_str(char *buf, size_t n, kiln_dtype dt, int ndim, const int64_t *shape) {
    return type_str(buf, n, dt, ndim, shape, NULL);
}

const char *graph_entry_str(char *buf, size_t n, const plan_entry *en) {
    return type_str(buf, n, en->dtype, en->ndim, en->shape, en->expr);
}

const char *graph_entry_name(char *buf, size_t n, const kiln_model *m, int entry) {
    const plan_entry *en = &m->entries[entry];
    const plan_node *nd = &m->nodes[en->node];
    snprintf(buf, n, "entry %d (output %d of node %d '%s')", entry, entry - nd->first, en->node,
             nd->name);
    return buf;
}

const char *graph_array_str(char *buf, size_t n, const kiln_ndarray *a) {
    int64_t shape[KILN_MAX_NDIM];
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        shape[d] = kiln_ndarray_dim(a, d);
    return graph_type_str(buf, n, kiln_ndarray_dtype(a), kiln_ndarray_ndim(a), shape);
}

int graph_array_matches(const kiln_ndarray *a, const plan_entry *en) {
    int ok = kiln_ndarray_dtype(a) == en->dtype && kiln_ndarray_ndim(a) == en->ndim;
    for (int d = 0; ok && d < en->ndim; d++)
        ok = en->shape[d] < 0 || kiln_ndarray_dim(a, d) == en->shape[d];
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

/* Prefix the current error with "mod.json: entry i: dim d". */
static kiln_status plan_prefix_entry(int i, int d) {
    kiln_error_prefix(WHAT ": entry %d: dim %d", i, d);
    return KILN_ERR_INVALID;
}

/* Dim d of entry en, the string v: a dim expression. One without variables
 * is folded to its value; otherwise shape[d] is -1 and expr[d] holds it. */
static kiln_status read_dim_expr(kiln_model *e, plan_entry *en, int d, const json *v) {
    const dim_expr *x = dim_expr_parse(&e->vars, v->s, v->slen);
    if (!x)
        return KILN_ERR_INVALID;
    if (dim_expr_is_const(x))
        return dim_expr_eval(x, NULL, &en->shape[d]);
    if (!en->expr)
        en->expr = arena_alloc(e->ar, KILN_MAX_NDIM * sizeof *en->expr);
    en->expr[d] = x;
    en->shape[d] = -1;
    e->dynamic = 1;
    return KILN_OK;
}

static kiln_status read_entries(kiln_model *e, const json *attrs) {
    const json *shapes = graph_attr(attrs, "shape", "list_shape", e->nentries);
    const json *dtypes = shapes ? graph_attr(attrs, "dltype", "list_str", e->nentries) : NULL;
    const json *sids = dtypes ? graph_attr(attrs, "storage_id", "list_int", e->nentries) : NULL;
    if (!sids)
        return KILN_ERR_INVALID;
    const json *offs = NULL; /* views' placed entries (graph_views.c); absent: all 0 */
    if (json_get(attrs, "storage_offset") &&
        !(offs = graph_attr(attrs, "storage_offset", "list_int", e->nentries)))
        return KILN_ERR_INVALID;
    for (int i = 0; i < e->nentries; i++) {
        plan_entry *en = &e->entries[i];
        const json *sh = json_at(shapes, i);
        const char *dt = json_str(json_at(dtypes, i));
        if (!dt || kiln_dtype_parse(dt, &en->dtype) || en->dtype == KILN_HANDLE)
            return plan_err("entry %d: unknown dltype '%s'", i, dt ? dt : "(not a string)");
        if (!json_is(sh, JSON_ARRAY) || json_len(sh) > KILN_MAX_NDIM)
            return plan_err("entry %d: shape must be a list of at most %d dims", i, KILN_MAX_NDIM);
        en->ndim = json_len(sh);
        en->bytes = (int64_t)kiln_dtype_size(en->dtype);
        for (int d = 0; d < en->ndim; d++) {
            const json *v = json_at(sh, d);
            if (json_is(v, JSON_STRING)) {
                if (read_dim_expr(e, en, d, v))
                    return plan_prefix_entry(i, d);
                if (en->shape[d] < 0)
                    continue;
            } else if (!json_int(v, &en->shape[d]) || en->shape[d] < 0) {
                return plan_err("entry %d: dim %d is not a non-negative integer or a dim "
                                "expression (a string)",
                                i, d);
            }
            if (!kiln_mul_ok(en->bytes, en->shape[d], &en->bytes) || en->bytes > MAX_STORAGE_BYTES)
                return plan_err("entry %d: the shape is too large", i);
        }
        en->dim0 = e->ndims;
        e->ndims += en->ndim; /* each dim is a JSON value: fewer than JSON_MAX_SIZE < INT_MAX */
        if (!int_in(json_at(sids, i), 0, e->nentries - 1, &en->storage))
            return plan_err("entry %d: storage_id must be an integer in [0, %d)", i, e->nentries);
        if (en->storage >= e->nstorage)
            e->nstorage = en->storage + 1;
        if (offs && (!json_int(json_at(offs, i), &en->offset) || en->offset < 0 ||
                     en->offset > MAX_STORAGE_BYTES))
            return plan_err("entry %d: storage_offset must be an integer in [0, 2^40]", i);
    }
    return KILN_OK;
}

/* An entry reference [nid, index, version] of a node before `before`. */
static int entry_ref(const kiln_model *e, const json *r, int before, int *out) {
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

static kiln_status read_node(kiln_model *e, int nid, const json *jn, const int *row) {
    plan_node *n = &e->nodes[nid];
    const char *op = json_str(json_get(jn, "op"));
    n->name = json_str(json_get(jn, "name"));
    if (!n->name)
        return plan_err("node %d has no \"name\" string", nid);
    if (!op || (strcmp(op, "null") != 0 && strcmp(op, "tvm_op") != 0 && strcmp(op, "control") != 0))
        return node_err(e, nid, "\"op\" must be \"null\", \"tvm_op\" or \"control\"");
    n->is_op = op[0] != 'n';
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
    if (op[0] == 'c') { /* its bodies are read once the entries are (read_controls) */
        n->ctl_json = attrs;
        n->func = json_str(json_get(attrs, "control"));
        if (!n->func)
            return node_err(e, nid, "a control node's attrs has no \"control\" kind");
    }
    if (!n->func || !n->func[0])
        return node_err(e, nid, "attrs has no \"func_name\"");
    n->is_view = op[0] == 't' && !strcmp(n->func, "__view");
    if (!attr_count(json_get(attrs, "num_inputs"), &nin) || nin != n->ninputs)
        return node_err(e, nid, "attrs.num_inputs must be the number of inputs (%d)", n->ninputs);
    if (!attr_count(json_get(attrs, "num_outputs"), &nout) || nout != n->noutputs || nout < 1)
        return node_err(e, nid,
                        "attrs.num_outputs must be at least 1 and agree with "
                        "node_row_ptr (%d)",
                        n->noutputs);
    n->external = json_str(json_get(attrs, "external")) != NULL;
    n->cost_json[0] = json_get(attrs, "flops");
    n->cost_json[1] = json_get(attrs, "bytes");
    n->binds_json = json_get(attrs, "binds");
    if (n->binds_json && (!json_is(n->binds_json, JSON_ARRAY) || json_len(n->binds_json) < 1 ||
                          json_len(n->binds_json) > KILN_MAX_BINDS))
        return node_err(e, nid, "attrs.binds must be a list of 1 to %d variable names or sizes",
                        KILN_MAX_BINDS);
    n->inputs = arena_alloc(e->ar, (size_t)n->ninputs * sizeof(int));
    for (int i = 0; i < n->ninputs; i++)
        if (!entry_ref(e, json_at(ins, i), nid, &n->inputs[i]))
            return node_err(e, nid,
                            "input %d must be [nid, index, version] naming an output of "
                            "an earlier node",
                            i);
    return KILN_OK;
}

/* The binders' variables (attrs.binds, read_node): each a name alone,
 * interned with the entries' variables, or a size the value must be
 * (0 to INT_MAX here, though the graph allows a binder name sizes up to
 * 2^48: a larger one is refused at load). A binder's output is one int64 vector of a constant
 * length, one element per entry. */
static kiln_status read_binds(kiln_model *e) {
    for (int nid = 0; nid < e->nnodes; nid++) {
        plan_node *n = &e->nodes[nid];
        if (!n->binds_json)
            continue;
        n->nbinds = json_len(n->binds_json);
        n->binds = arena_alloc(e->ar, (size_t)n->nbinds * sizeof(int));
        n->check = arena_alloc(e->ar, (size_t)n->nbinds);
        n->bind_size = arena_alloc(e->ar, (size_t)n->nbinds * sizeof(int64_t));
        for (int k = 0; k < n->nbinds; k++) {
            const json *v = json_at(n->binds_json, k);
            n->check[k] = 0;
            n->bind_size[k] = -1;
            if (json_is(v, JSON_INT) || json_is(v, JSON_DOUBLE)) {
                int size;
                if (!int_in(v, 0, INT_MAX, &size))
                    return node_err(e, nid, "attrs.binds[%d] must be a variable name or a size", k);
                n->binds[k] = -1;
                n->check[k] = 1;
                n->bind_size[k] = size;
                continue;
            }
            const dim_expr *x =
                json_is(v, JSON_STRING) ? dim_expr_parse(&e->vars, v->s, v->slen) : NULL;
            if (!x || x->var < 0)
                return node_err(e, nid, "attrs.binds[%d] must be a variable name or a size", k);
            n->binds[k] = x->var;
        }
        e->dynamic = 1;
        e->staged = 1;
        if (n->ctl_json) { /* each variable is the whole of some dim of an output */
            for (int k = 0; k < n->nbinds; k++) {
                int found = 0;
                if (n->binds[k] < 0)
                    return node_err(e, nid,
                                    "attrs.binds[%d] of a control node must be a variable "
                                    "name",
                                    k);
                for (int o = 0; o < n->noutputs && !found; o++) {
                    const plan_entry *en = &e->entries[n->first + o];
                    for (int d = 0; en->expr && d < en->ndim && !found; d++)
                        found = en->expr[d] && en->expr[d]->var == n->binds[k];
                }
                if (!found)
                    return node_err(e, nid,
                                    "attrs.binds[%d] '%s' is no dim of the control node's "
                                    "outputs",
                                    k, e->vars.names[n->binds[k]]);
            }
            continue;
        }
        const plan_entry *en = &e->entries[n->first];
        if (n->noutputs != 1 || en->dtype != KILN_INT64 || en->ndim != 1 ||
            en->shape[0] != n->nbinds)
            return node_err(e, nid,
                            "a binder's output must be one int64[%d] (one value per "
                            "variable of attrs.binds)",
                            n->nbinds);
    }
    return KILN_OK;
}

static kiln_status read_nodes(kiln_model *e, const json *root) {
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
    e->nodes = arena_alloc(e->ar, (size_t)e->nnodes * sizeof(plan_node));
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
    e->entries = arena_alloc(e->ar, (size_t)e->nentries * sizeof(plan_entry));
    for (int i = 0; i < e->nnodes; i++)
        for (int k = 0; k < e->nodes[i].noutputs; k++) {
            plan_entry *en = &e->entries[e->nodes[i].first + k];
            en->node = i;
            en->last_use = e->nodes[i].is_op ? i : INT_MAX;
        }
    kiln_status st = read_entries(e, json_get(root, "attrs"));
    return st ? st : read_binds(e);
}

/* ---- parameters ----------------------------------------------------------------- */

typedef struct {
    const char *name;
    int index; /* in param_names */
} name_ref;

static int cmp_name_ref(const void *a, const void *b) {
    return strcmp(((const name_ref *)a)->name, ((const name_ref *)b)->name);
}

/* The compiler's "param_names", sorted for lookup (*n entries; *list NULL
 * when the plan has none: then a "null" node is a parameter when mod.params
 * has its name). Every name must be a distinct string naming a "null" node;
 * that is checked in read_args, which marks the names it finds in *used. */
static kiln_status read_param_names(kiln_model *e, const json *root, name_ref **list, int *n) {
    const json *pn = json_get(root, "param_names");
    *list = NULL;
    *n = 0;
    if (!pn)
        return KILN_OK;
    if (!json_is(pn, JSON_ARRAY))
        return plan_err("\"param_names\" must be a list of strings");
    *n = json_len(pn);
    *list = arena_alloc(e->ar, (size_t)(*n ? *n : 1) * sizeof(name_ref));
    for (int k = 0; k < *n; k++) {
        const char *s = json_str(json_at(pn, k));
        if (!s || !s[0])
            return plan_err("param_names[%d] must be a non-empty string", k);
        (*list)[k] = (name_ref){s, k};
    }
    qsort(*list, (size_t)*n, sizeof(name_ref), cmp_name_ref);
    for (int k = 1; k < *n; k++)
        if (strcmp((*list)[k - 1].name, (*list)[k].name) == 0)
            return plan_err("param_names lists '%s' twice", (*list)[k].name);
    return KILN_OK;
}

/* Inputs and params from arg_nodes. With "param_names", a "null" node is a
 * parameter exactly when it is listed there, and mod.params must hold it;
 * without, it is one when mod.params has its name. */
static kiln_status read_args(kiln_model *e, const json *root, const kiln_npz *params) {
    const json *args = json_get(root, "arg_nodes");
    if (!json_is(args, JSON_ARRAY))
        return plan_err("\"arg_nodes\" must be a list");
    int nargs = json_len(args), nnull = 0, nnames;
    for (int i = 0; i < e->nnodes; i++)
        nnull += !e->nodes[i].is_op;
    if (nargs != nnull)
        return plan_err("\"arg_nodes\" lists %d nodes, but there are %d \"null\" nodes", nargs,
                        nnull);
    name_ref *names;
    if (read_param_names(e, root, &names, &nnames))
        return KILN_ERR_INVALID;
    char *seen = arena_alloc(e->ar, (size_t)e->nnodes);
    char *used = arena_alloc(e->ar, (size_t)(nnames ? nnames : 1));
    e->inputs = arena_alloc(e->ar, (size_t)nargs * sizeof(plan_port));
    for (int i = 0; i < nargs; i++) {
        int nid;
        if (!int_in(json_at(args, i), 0, e->nnodes - 1, &nid) || e->nodes[nid].is_op || seen[nid]++)
            return plan_err("arg_nodes[%d] must name a \"null\" node, once", i);
        plan_node *n = &e->nodes[nid];
        plan_entry *en = &e->entries[n->first];
        const kiln_ndarray *p = kiln_npz_get(params, n->name);
        if (names) {
            name_ref key = {n->name, 0};
            const name_ref *at = bsearch(&key, names, (size_t)nnames, sizeof key, cmp_name_ref);
            if (at && used[at - names]++)
                return node_err(e, nid,
                                "another \"null\" node has this name, which "
                                "\"param_names\" lists");
            if (at && !p)
                return node_err(e, nid,
                                "the weight '%s' is missing from mod.params (\"param_names\" "
                                "lists it)",
                                n->name);
            if (!at)
                p = NULL; /* an input, even if mod.params has a member of its name */
        }
        if (!p) {
            for (int k = 0; k < e->ninputs; k++)
                if (strcmp(e->inputs[k].name, n->name) == 0)
                    return node_err(e, nid, "two inputs have this name");
            e->inputs[e->ninputs++] = (plan_port){n->name, n->first};
            continue;
        }
        char want[256], got[256];
        for (int d = 0; en->expr && d < en->ndim; d++)
            if (en->expr[d])
                return node_err(e, nid,
                                "a parameter's shape must be static, but dim %d is '%s' (mod.json "
                                "shape %s)",
                                d, en->expr[d]->text, graph_entry_str(want, sizeof want, en));
        if (!graph_array_matches(p, en))
            return node_err(e, nid, "mod.params has %s, but the graph says %s",
                            graph_array_str(got, sizeof got, p),
                            graph_type_str(want, sizeof want, en->dtype, en->ndim, en->shape));
        n->is_param = 1;
    }
    for (int k = 0; k < nnames; k++)
        if (!used[k])
            return plan_err("param_names[%d] '%s' names no \"null\" node", names[k].index,
                            names[k].name);
    return KILN_OK;
}

static kiln_status read_heads(kiln_model *e, const json *root) {
    const json *heads = json_get(root, "heads"), *names = json_get(root, "output_names");
    if (!json_is(heads, JSON_ARRAY) || json_len(heads) < 1)
        return plan_err("\"heads\" must be a non-empty list");
    e->noutputs = json_len(heads);
    if (names && (!json_is(names, JSON_ARRAY) || json_len(names) != e->noutputs))
        return plan_err("\"output_names\" must be a list of %d strings (one per head)",
                        e->noutputs);
    e->outputs = arena_alloc(e->ar, (size_t)e->noutputs * sizeof(plan_port));
    for (int i = 0; i < e->noutputs; i++) {
        plan_port *o = &e->outputs[i];
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

/* Each variable is bound by the first input dim that is the variable alone
 * (inputs in arg_nodes order, dims in order); one that none binds is an
 * error naming it and an entry that uses it. */
static kiln_status bind_vars(kiln_model *e) {
    int n = e->vars.n;
    e->var_port = arena_alloc(e->ar, (size_t)(n ? n : 1) * sizeof(int));
    e->var_dim = arena_alloc(e->ar, (size_t)(n ? n : 1) * sizeof(int));
    e->var_node = arena_alloc(e->ar, (size_t)(n ? n : 1) * sizeof(int));
    for (int k = 0; k < n; k++)
        e->var_port[k] = e->var_node[k] = -1;
    for (int i = 0; i < e->ninputs; i++) {
        const plan_entry *en = &e->entries[e->inputs[i].entry];
        for (int d = 0; en->expr && d < en->ndim; d++) {
            const dim_expr *x = en->expr[d];
            if (x && x->var >= 0 && e->var_port[x->var] < 0) {
                e->var_port[x->var] = i;
                e->var_dim[x->var] = d;
            }
        }
    }
    /* the first binder of a variable no input binds binds it; a later
       mention (of one an input or an earlier binder binds) checks it */
    for (int nid = 0; nid < e->nnodes; nid++)
        for (int j = 0; j < e->nodes[nid].nbinds; j++) {
            int k = e->nodes[nid].binds[j];
            if (k < 0)
                continue;
            if (e->var_port[k] >= 0 || e->var_node[k] >= 0) {
                if (e->var_node[k] == nid)
                    return node_err(e, nid, "binds dim variable '%s' twice", e->vars.names[k]);
                if (e->nodes[nid].ctl_json) /* a control node's are its own */
                    return node_err(e, nid,
                                    "binds dim variable '%s', which %s binds already: a "
                                    "control node's variables have it as their one source",
                                    e->vars.names[k], e->var_port[k] >= 0 ? "an input" : "a node");
                e->nodes[nid].check[j] = 1;
                continue;
            }
            e->var_node[k] = nid;
            e->var_dim[k] = j;
        }
    /* a variable a node binds is known only after that node ran */
    for (int i = 0; i < e->nentries; i++) {
        const plan_entry *en = &e->entries[i];
        for (int d = 0; en->expr && d < en->ndim; d++)
            for (int k = 0; en->expr[d] && k < n; k++)
                if (e->var_node[k] >= en->node + (e->nodes[en->node].ctl_json != NULL) &&
                    dim_expr_uses(en->expr[d], k))
                    return plan_err("entry %d dim %d ('%s') uses dim variable '%s', which node "
                                    "%d binds, but node %d, which comes no later, makes it",
                                    i, d, en->expr[d]->text, e->vars.names[k], e->var_node[k],
                                    en->node);
    }
    for (int k = 0; k < n; k++) {
        if (e->var_port[k] >= 0 || e->var_node[k] >= 0)
            continue;
        for (int i = 0; i < e->nentries; i++) {
            const plan_entry *en = &e->entries[i];
            for (int d = 0; en->expr && d < en->ndim; d++)
                if (en->expr[d] && dim_expr_uses(en->expr[d], k))
                    return plan_err("dim variable '%s' (entry %d dim %d: '%s') is bound by no "
                                    "input: a variable must be a dim of its own of some input",
                                    e->vars.names[k], i, d, en->expr[d]->text);
        }
        KILN_ASSERT(0 && "an interned variable that no entry uses");
    }
    return KILN_OK;
}

/* ---- kernels and storage -------------------------------------------------------- */

kiln_status graph_plan_bind_kernel(const kiln_model *e, int nid, const int64_t *dims,
                                   int64_t *vars) {
    const plan_node *n = &e->nodes[nid];
    for (int k = 0; k < kiln_function_num_vars(n->f); k++)
        vars[k] = -1;
    for (int a = 0; a < n->ninputs + n->noutputs; a++) {
        const plan_entry *en =
            &e->entries[a < n->ninputs ? n->inputs[a] : n->first + a - n->ninputs];
        const int64_t *shape = dims ? dims + en->dim0 : en->shape;
        kiln_dtype dt;
        int ndim, ok;
        const int64_t *fdims;
        KILN_ASSERT(kiln_function_arg_info(n->f, a, &dt, &ndim, &fdims));
        ok = dt == en->dtype && ndim == en->ndim;
        for (int d = 0; d < ndim && ok; d++) {
            if (shape[d] < 0) /* a symbolic dim: checked per run */
                continue;
            if (fdims[d] >= 0) {
                ok = fdims[d] == shape[d];
                continue;
            }
            int k = (int)(-1 - fdims[d]); /* a symbolic size: bound by its first use */
            if (vars[k] < 0)
                vars[k] = shape[d];
            ok = vars[k] == shape[d];
        }
        if (ok)
            continue;
        char want[256], got[256], run[256] = "";
        int64_t fshape[KILN_MAX_NDIM];
        for (int d = 0; d < ndim; d++)
            fshape[d] = fdims[d] >= 0 ? fdims[d] : -1;
        if (dims && en->expr) {
            snprintf(run, sizeof run, " (");
            graph_type_str(run + 2, sizeof run - 2, en->dtype, en->ndim, shape);
            snprintf(run + strlen(run), sizeof run - strlen(run), " in this run)");
        }
        return kiln_set_error(
            KILN_ERR_INVALID, "function '%s' argument %d (%s %d) is %s, but the entry is %s%s",
            n->func, a, a < n->ninputs ? "input" : "output", a < n->ninputs ? a : a - n->ninputs,
            graph_type_str(want, sizeof want, dt, ndim, fshape),
            graph_entry_str(got, sizeof got, en), run);
    }
    return KILN_OK;
}

/* Bind node nid's function, check its arguments as far as the plan's
 * constant dims go (all of them, in a static plan, whose symbolic sizes are
 * then bound here) and record the entry of each argument. */
static kiln_status bind_kernel(kiln_model *e, int nid, kiln_module *mod, int arg0) {
    plan_node *n = &e->nodes[nid];
    n->arg0 = arg0;
    if (n->ctl_json) /* a control node: it runs its bodies, no kernel */
        return KILN_OK;
    kiln_function *f = kiln_module_get_function(mod, n->func);
    if (!f)
        return node_prefix(e, nid);
    int nargs = n->ninputs + n->noutputs, nvars = kiln_function_num_vars(f);
    if (kiln_function_num_args(f) != nargs)
        return node_err(e, nid,
                        "function '%s' takes %d arguments, but the node has %d inputs "
                        "and %d outputs",
                        n->func, kiln_function_num_args(f), n->ninputs, n->noutputs);
    n->f = f;
    n->fn = kiln_function_kernel(f);
    n->vars = arena_alloc(e->ar, (size_t)nvars * sizeof(int64_t));
    if (nvars > INT_MAX / 2 - e->nkvars)
        return node_err(e, nid, "the kernels take too many symbolic sizes in all");
    n->kv0 = e->nkvars;
    e->nkvars += nvars;
    if (graph_plan_bind_kernel(e, nid, NULL, n->vars) || graph_cost_read(e, nid))
        return node_prefix(e, nid);
    for (int a = 0; a < nargs; a++)
        e->arg_entry[arg0 + a] = a < n->ninputs ? n->inputs[a] : n->first + a - n->ninputs;
    return KILN_OK;
}

static kiln_status bind_kernels(kiln_model *e, kiln_module *mod) {
    e->kernels = arena_alloc(e->ar, (size_t)e->nnodes * sizeof(int));
    int64_t nargs = 0;
    for (int i = 0; i < e->nnodes; i++)
        if (e->nodes[i].is_op && !e->nodes[i].is_view)
            nargs += e->nodes[i].ninputs + e->nodes[i].noutputs; /* < nnodes * INT_MAX */
    if (nargs > INT_MAX / 2)
        return plan_err("the kernels take %lld arguments in all", (long long)nargs);
    e->nargs = (int)nargs;
    e->arg_entry = arena_alloc(e->ar, (size_t)(nargs ? nargs : 1) * sizeof(int));
    for (int i = 0, arg0 = 0; i < e->nnodes; i++)
        if (e->nodes[i].is_op && !e->nodes[i].is_view) {
            e->kernels[e->nkernels++] = i;
            if (bind_kernel(e, i, mod, arg0))
                return KILN_ERR_INVALID;
            arg0 += e->nodes[i].ninputs + e->nodes[i].noutputs;
        }
    return KILN_OK;
}

/* One buffer per parameter's storage id, holding its weight (taken from
 * `own` when it can be: the weights are then in memory once), and, in a
 * static plan, an offset in a run's arena for every other storage id, each
 * sized for the largest entry that uses it and 64-byte aligned. A dynamic
 * plan records the bytes each storage id's static entries need (min_bytes):
 * a run state's buffer starts at that size. */
static kiln_status place_storage(kiln_model *e, const kiln_npz *params, kiln_npz *own) {
    int64_t *size = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int64_t)), total = 0;
    int *users = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int));
    for (int i = 0; i < e->nentries; i++) {
        plan_entry *en = &e->entries[i];
        if (!en->expr && size[en->storage] < en->bytes)
            size[en->storage] = en->bytes;
        users[en->storage]++;
    }
    e->min_bytes = e->dynamic ? size : NULL;
    e->weights = kiln_calloc((size_t)e->nstorage, sizeof(void *));
    e->offset = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int64_t));
    if (!e->weights)
        return KILN_ERR_NOMEM;
    char *is_weight = arena_alloc(e->ar, (size_t)e->nstorage);
    int in_blob = 0;
    for (int i = 0; i < e->nnodes; i++)
        if (e->nodes[i].is_param)
            is_weight[e->entries[e->nodes[i].first].storage] = 1;
    for (int s = 0; s < e->nstorage; s++) {
        int64_t n = (size[s] + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT;
        if (!kiln_add_ok(total, n, &total) || total > MAX_STORAGE_BYTES)
            return plan_err("the storage needs more than %lld bytes", (long long)MAX_STORAGE_BYTES);
        if (!is_weight[s] && !e->dynamic) {
            e->offset[s] = e->arena_bytes;
            e->arena_bytes += n;
        }
    }
    for (int i = 0; i < e->nnodes; i++) {
        const plan_node *n = &e->nodes[i];
        if (!n->is_param)
            continue;
        const plan_entry *en = &e->entries[n->first];
        void **dst = &e->weights[en->storage];
        kiln_ndarray *a = own ? npz_get_mutable(own, n->name) : NULL;
        if (*dst)
            continue; /* two params on one storage id: refused by graph_check_storage */
        if (users[en->storage] == 1 && a &&
            kiln_ndarray_numel(a) * (int64_t)kiln_dtype_size(kiln_ndarray_dtype(a)) == en->bytes) {
            if ((*dst = ndarray_take_data(a)) != NULL)
                continue;
            if ((*dst = npz_blob_data(own, a)) != NULL && (uintptr_t)*dst % KILN_ALIGNMENT == 0 &&
                kiln_ndarray_is_contiguous(a)) {
                in_blob = 1; /* a view into the package's mod.params image */
                continue;
            }
            *dst = NULL;
        }
        size_t bytes = (size_t)(size[en->storage] ? size[en->storage] : 1);
        bytes = (bytes + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT;
        if (posix_memalign(dst, KILN_ALIGNMENT, bytes)) {
            *dst = NULL;
            return kiln_set_error(
                KILN_ERR_NOMEM, WHAT ": cannot allocate %zu bytes for weight '%s'", bytes, n->name);
        }
        memset(*dst, 0, bytes);
        kiln_ndarray *view = kiln_ndarray_wrap(*dst, en->dtype, en->ndim, en->shape, NULL, 0);
        kiln_status st =
            view ? kiln_ndarray_copy(view, kiln_npz_get(params, n->name)) : KILN_ERR_NOMEM;
        kiln_ndarray_free(view);
        if (st)
            return st;
    }
    if (in_blob)
        e->params_blob = npz_take_blob(own, &e->params_blob_len);
    return KILN_OK;
}

kiln_model *graph_model_alloc(void) {
    kiln_model *m = kiln_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->refs, 1);
    if (pthread_mutex_init(&m->pool_mu, NULL) != 0) {
        free(m);
        kiln_set_error(KILN_ERR_NOMEM, "model_create: cannot create a mutex");
        return NULL;
    }
    m->pool_mu_ok = 1;
    if (!(m->ar = arena_new())) {
        pthread_mutex_destroy(&m->pool_mu);
        free(m);
        return NULL;
    }
    return m;
}

static kiln_status read_plan(kiln_model *e, const json *root, kiln_module *mod,
                             const kiln_npz *params, kiln_npz *own);

/* ---- control nodes ------------------------------------------------------------ */

/* Entry en has dtype dt and rank nd. */
static int entry_is(const plan_entry *en, kiln_dtype dt, int nd) {
    return en->dtype == dt && en->ndim == nd;
}

/* Node entry `e1` and body port entry `e2` (input or output k of body b)
 * have the same dtype and a rank that differs by `extra` (a scan axis or a
 * batch dim the body does not see). */
static kiln_status port_matches(const kiln_model *e, int nid, const plan_entry *e1,
                                const kiln_model *b, int bi, int out, int k, int extra) {
    const plan_entry *e2 = &b->entries[out ? b->outputs[k].entry : b->inputs[k].entry];
    if (e1->dtype == e2->dtype && e1->ndim == e2->ndim + extra)
        return KILN_OK;
    char t1[256], t2[256];
    return node_err(e, nid,
                    "body %d's %s %d is %s, which does not fit the control node's %s (the same "
                    "dtype and %d more dims expected)",
                    bi, out ? "output" : "input", k, graph_entry_str(t2, sizeof t2, e2),
                    graph_entry_str(t1, sizeof t1, e1), extra);
}

/* A per-item list attribute of a Scan: absent (all 0), or n integers in
 * [lo, hi] (an axis may be negative: counted from rank[i], normalized). */
static int *scan_list(kiln_model *e, int nid, const json *attrs, const char *key, int n,
                      const int *rank) {
    int *v = arena_alloc(e->ar, (size_t)(n ? n : 1) * sizeof(int));
    const json *l = json_get(attrs, key);
    if (!l || json_len(l) == 0)
        return v;
    if (!json_is(l, JSON_ARRAY) || json_len(l) != n) {
        node_err(e, nid, "attrs.%s must be a list of %d integers", key, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        int lo = rank ? -rank[i] : 0, hi = rank ? rank[i] - 1 : 1;
        if (!int_in(json_at(l, i), lo, hi, &v[i])) {
            node_err(e, nid, "attrs.%s[%d] must be an integer in [%d, %d]", key, i, lo, hi);
            return NULL;
        }
        v[i] += v[i] < 0 ? rank[i] : 0;
    }
    return v;
}

/* Check body b (index bi) of control node nid against the node: the
 * counts of its inputs and outputs, and their dtypes and ranks. The shapes
 * are checked as the bodies run. */
static kiln_status check_body(kiln_model *e, int nid, const kiln_model *b, int bi) {
    plan_node *n = &e->nodes[nid];
    plan_control *c = n->ctl;
    const plan_entry *in0 = n->ninputs ? &e->entries[n->inputs[0]] : NULL;
    const plan_entry *out = &e->entries[n->first];
    int nc = c->num_carried, ns = c->num_scan_inputs, bt = c->batch;
    if (c->kind == PLAN_IF) {
        if (in0->dtype != KILN_BOOL)
            return node_err(e, nid, "an if node's condition (input 0) must be bool");
        if (b->ninputs != n->ninputs - 1 || b->noutputs != n->noutputs)
            return node_err(e, nid, "body %d has %d inputs and %d outputs, not %d and %d", bi,
                            b->ninputs, b->noutputs, n->ninputs - 1, n->noutputs);
        for (int i = 0; i < b->ninputs; i++)
            if (port_matches(e, nid, &e->entries[n->inputs[1 + i]], b, bi, 0, i, 0))
                return KILN_ERR_INVALID;
        for (int k = 0; k < b->noutputs; k++)
            if (port_matches(e, nid, &out[k], b, bi, 1, k, 0))
                return KILN_ERR_INVALID;
        return KILN_OK;
    }
    if (c->kind == PLAN_LOOP) {
        const plan_entry *cin = &e->entries[n->inputs[1]];
        if (b->ninputs != n->ninputs || b->noutputs != n->noutputs + 1 || nc > n->noutputs)
            return node_err(e, nid,
                            "the body has %d inputs and %d outputs, not %d and %d (%d carried "
                            "values)",
                            b->ninputs, b->noutputs, n->ninputs, n->noutputs + 1, nc);
        if (!entry_is(&b->entries[b->inputs[0].entry], KILN_INT64, 0) ||
            !entry_is(&b->entries[b->inputs[1].entry], KILN_BOOL, 0) ||
            !entry_is(&b->entries[b->outputs[0].entry], KILN_BOOL, 0) || in0->dtype != KILN_INT64 ||
            cin->dtype != KILN_BOOL)
            return node_err(e, nid,
                            "a loop takes an int64 trip count and a bool condition, and its "
                            "body an int64[] iteration number and a bool[] condition, and "
                            "returns a bool[] condition first");
        for (int i = 2; i < b->ninputs; i++)
            if (port_matches(e, nid, &e->entries[n->inputs[i]], b, bi, 0, i, 0))
                return KILN_ERR_INVALID;
        for (int k = 0; k < n->noutputs; k++)
            if (port_matches(e, nid, &out[k], b, bi, 1, 1 + k, k >= nc))
                return KILN_ERR_INVALID;
        return KILN_OK;
    }
    /* scan */
    if (b->ninputs != n->ninputs || b->noutputs != n->noutputs || nc + ns > n->ninputs ||
        nc > n->noutputs)
        return node_err(e, nid,
                        "the body has %d inputs and %d outputs, not %d and %d (%d carried and "
                        "%d scan inputs)",
                        b->ninputs, b->noutputs, n->ninputs, n->noutputs, nc, ns);
    for (int i = 0; i < b->ninputs; i++)
        if (port_matches(e, nid, &e->entries[n->inputs[i]], b, bi, 0, i,
                         i < nc + ns ? bt + (i >= nc) : 0))
            return KILN_ERR_INVALID;
    for (int k = 0; k < n->noutputs; k++)
        if (port_matches(e, nid, &out[k], b, bi, 1, k, bt + (k >= nc)))
            return KILN_ERR_INVALID;
    return KILN_OK;
}

/* Control node nid's kind, attributes and bodies (each a plan of its own,
 * read with the same checks, sharing the module and the parameters). */
static kiln_status read_control(kiln_model *e, int nid, kiln_module *mod, const kiln_npz *params) {
    plan_node *n = &e->nodes[nid];
    const json *a = n->ctl_json, *bodies = json_get(a, "bodies");
    plan_control *c = arena_alloc(e->ar, sizeof *c);
    n->ctl = c;
    c->kind = !strcmp(n->func, "if")     ? PLAN_IF
              : !strcmp(n->func, "loop") ? PLAN_LOOP
              : !strcmp(n->func, "scan") ? PLAN_SCAN
                                         : 0;
    if (!c->kind)
        return node_err(e, nid, "attrs.control must be \"if\", \"loop\" or \"scan\"");
    if (n->ninputs > PLAN_MAX_CONTROL_IO || n->noutputs > PLAN_MAX_CONTROL_IO)
        return node_err(e, nid, "a control node has at most %d inputs and outputs",
                        PLAN_MAX_CONTROL_IO);
    int want = c->kind == PLAN_IF ? 2 : 1, min_in = c->kind == PLAN_IF ? 1 : 2;
    if (!json_is(bodies, JSON_ARRAY) || json_len(bodies) != want)
        return node_err(e, nid, "attrs.bodies must be a list of %d plans", want);
    if (n->ninputs < (c->kind == PLAN_SCAN ? 1 : min_in))
        return node_err(e, nid, "a %s node takes at least %d inputs", n->func, min_in);
    if (c->kind != PLAN_IF && (!json_get(a, "num_carried") ||
                               !int_in(json_get(a, "num_carried"), 0, n->ninputs, &c->num_carried)))
        return node_err(e, nid, "attrs.num_carried must be an integer in [0, %d]", n->ninputs);
    if (c->kind == PLAN_SCAN) {
        if (!int_in(json_get(a, "num_scan_inputs"), 1, n->ninputs, &c->num_scan_inputs) ||
            (json_get(a, "batch") && !int_in(json_get(a, "batch"), 0, 1, &c->batch)))
            return node_err(e, nid,
                            "attrs.num_scan_inputs must be an integer in [1, %d] and "
                            "attrs.batch 0 or 1",
                            n->ninputs);
    }
    if (e->depth >= PLAN_MAX_DEPTH)
        return node_err(e, nid, "bodies nest more than %d deep", PLAN_MAX_DEPTH);
    for (int k = 0; k < want; k++) {
        const json *jb = json_at(bodies, k);
        if (!json_is(jb, JSON_OBJECT))
            return node_err(e, nid, "attrs.bodies[%d] is not an object", k);
        kiln_model *b = graph_model_alloc();
        if (!b)
            return KILN_ERR_NOMEM;
        c->bodies[c->nbodies++] = b;
        b->depth = e->depth + 1;
        if (read_plan(b, jb, mod, params, NULL)) {
            node_prefix(e, nid);
            kiln_error_prefix("body %d", k);
            return KILN_ERR_INVALID;
        }
        if (check_body(e, nid, b, k))
            return KILN_ERR_INVALID;
    }
    if (c->kind == PLAN_SCAN) {
        int nc = c->num_carried, ns = c->num_scan_inputs, rank[PLAN_MAX_CONTROL_IO];
        const kiln_model *b = c->bodies[0];
        for (int i = 0; i < ns; i++)
            rank[i] = b->entries[b->inputs[nc + i].entry].ndim + 1;
        if (!(c->in_axes = scan_list(e, nid, a, "scan_input_axes", ns, rank)) ||
            !(c->in_dirs = scan_list(e, nid, a, "scan_input_directions", ns, NULL)))
            return KILN_ERR_INVALID;
        int nk = n->noutputs - nc;
        for (int k = 0; k < nk; k++)
            rank[k] = b->entries[b->outputs[nc + k].entry].ndim + 1;
        if (!(c->out_axes = scan_list(e, nid, a, "scan_output_axes", nk, rank)) ||
            !(c->out_dirs = scan_list(e, nid, a, "scan_output_directions", nk, NULL)))
            return KILN_ERR_INVALID;
    }
    e->dynamic = 1;
    e->staged = 1; /* its outputs are placed when it has run */
    return KILN_OK;
}

static kiln_status read_controls(kiln_model *e, kiln_module *mod, const kiln_npz *params) {
    for (int nid = 0; nid < e->nnodes; nid++)
        if (e->nodes[nid].ctl_json && read_control(e, nid, mod, params))
            return KILN_ERR_INVALID;
    return KILN_OK;
}

static kiln_status read_plan(kiln_model *e, const json *root, kiln_module *mod,
                             const kiln_npz *params, kiln_npz *own) {
    e->vars.ar = e->ar;
    if (!json_is(root, JSON_OBJECT))
        return plan_err("the top level must be an object");
    kiln_status st = read_nodes(e, root);
    if (!st)
        st = read_args(e, root, params);
    if (!st)
        st = read_controls(e, mod, params);
    if (!st && e->dynamic)
        st = bind_vars(e);
    if (!st)
        st = read_heads(e, root);
    if (!st)
        st = graph_check_views(e);
    if (!st)
        st = graph_check_storage(e);
    if (!st)
        st = bind_kernels(e, mod);
    if (!st)
        st = place_storage(e, params, own);
    return st;
}

kiln_status graph_plan_read(kiln_model *e, const char *text, size_t len, kiln_module *mod,
                            const kiln_npz *params, kiln_npz *own) {
    e->vars.ar = e->ar;
    const json *root = json_parse(e->ar, text, len, WHAT);
    if (!root)
        return KILN_ERR_INVALID;
    int64_t vb; /* only informs the roofline profile's peak: checked loosely */
    if (json_int(json_get(json_get(root, "target"), "vector_bits"), &vb) && vb >= 0 && vb <= 8192)
        e->vector_bits = (int)vb;
    return read_plan(e, root, mod, params, own);
}

void graph_plan_free_weights(kiln_model *e) {
    uintptr_t lo = (uintptr_t)e->params_blob, hi = lo + e->params_blob_len;
    for (int s = 0; e->weights && s < e->nstorage; s++) {
        uintptr_t w = (uintptr_t)e->weights[s];
        if (!lo || w < lo || w >= hi)
            free(e->weights[s]);
    }
    free(e->weights);
    e->weights = NULL;
    free(e->params_blob);
    e->params_blob = NULL;
}
