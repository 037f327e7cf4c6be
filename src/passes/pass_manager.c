/* pass_manager.c: the graph pass pipeline. Passes are rows of one table
 * with a name and the opt level that turns them on; they run in table
 * order, each producing a new graph from the last. --disabled-pass drops
 * one by name; --dump-ir writes the graph before the first pass and after
 * each pass. Also the small passes: DeadCodeElimination,
 * EliminateCommonSubexpr and SimplifyInference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* ---- rebuilding a graph ------------------------------------------------------
 * Every pass builds a new graph node by node. rebuild calls fn for each node
 * of g in order with the new graph and the map old id -> new id so far; fn
 * returns the new id for the node, REBUILD_COPY to copy it unchanged,
 * REBUILD_DROP to leave it out, or -1 on an error. */
typedef int (*rebuild_fn)(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                          const int *map, void *user);

static struct kiln_graph *rebuild(const struct kiln_graph *g, rebuild_fn fn, void *user) {
    struct kiln_graph *r = graph_new(g->ops);
    int *map = malloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
    if (!r || !map) goto fail;
    for (int id = 0; id < g->n; id++) {
        int v = fn(r, g, g->nodes[id], map, user);
        if (v == REBUILD_COPY) v = graph_copy_node(r, g->nodes[id], map);
        if (v == -1) goto fail;
        map[id] = v == REBUILD_DROP ? -1 : v;
    }
    if (graph_copy_outputs(r, g, map) != KILN_OK) goto fail;
    free(map);
    return r;
fail:
    free(map);
    kiln_graph_free(r);
    return NULL;
}

/* ---- DeadCodeElimination ---------------------------------------------------- */

static int keep_live(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                     const int *map, void *user) {
    return ((const int *)user)[n->id] ? REBUILD_COPY : REBUILD_DROP;
}

static struct kiln_graph *pass_dce(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    int *live = calloc((size_t)(g->n ? g->n : 1), sizeof(int));
    if (!live) return NULL;
    for (int k = 0; k < g->nout; k++) live[g->outs[k]] = 1;
    for (int id = g->n - 1; id >= 0; id--) {
        const gnode *n = g->nodes[id];
        if (n->kind == GN_VAR) live[id] = 1; /* inputs stay: the signature is fixed */
        if (!live[id]) continue;
        for (int i = 0; i < n->nin; i++) live[n->in[i]] = 1;
    }
    struct kiln_graph *r = rebuild(g, keep_live, live);
    free(live);
    return r;
}

/* ---- EliminateCommonSubexpr ---------------------------------------------------- */

static int same_attrs(const gnode *a, const gnode *b) {
    if (a->nattr != b->nattr) return 0;
    for (int i = 0; i < a->nattr; i++) {
        const gattr *x = &a->attrs[i], *y = graph_attr(b, x->name);
        if (!y || x->kind != y->kind || x->n != y->n) return 0;
        switch (x->kind) {
        case GA_INT: if (x->i != y->i) return 0; break;
        case GA_FLOAT: if (memcmp(&x->f, &y->f, sizeof x->f)) return 0; break;
        case GA_STR: if (strcmp(x->s, y->s)) return 0; break;
        case GA_INTS: if (x->n && memcmp(x->ints, y->ints, sizeof(int64_t) * (size_t)x->n)) return 0; break;
        case GA_FLOATS: if (x->n && memcmp(x->floats, y->floats, sizeof(double) * (size_t)x->n)) return 0; break;
        }
    }
    return 1;
}

/* Calls (and tuple-gets) with the same op, inputs and attributes are one. */
static int merge_same(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                      const int *map, void *user) {
    if (n->kind != GN_CALL && n->kind != GN_TUPLE_GET) return REBUILD_COPY;
    for (int j = 0; j < r->n; j++) {
        const gnode *m = r->nodes[j];
        if (m->kind != n->kind || m->op != n->op || m->nin != n->nin || m->index != n->index)
            continue;
        int same = 1;
        for (int i = 0; i < n->nin && same; i++) same = m->in[i] == map[n->in[i]];
        if (same && same_attrs(n, m)) return j;
    }
    return REBUILD_COPY;
}

static struct kiln_graph *pass_cse(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return rebuild(g, merge_same, NULL);
}

/* ---- SimplifyInference ------------------------------------------------------------ */

static double at(const kiln_ndarray *a, int64_t i) {
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)kiln_ndarray_data(a))[i];
    case KILN_FLOAT64: return ((const double *)kiln_ndarray_data(a))[i];
    default: return NAN;
    }
}

static int fold_batch_norm(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                           const int *map, void *user) {
    if (n->kind != GN_CALL || strcmp(n->op->name, "nn.batch_norm") || !n->type.known)
        return REBUILD_COPY;
    const kiln_ndarray *p[4];
    for (int i = 0; i < 4; i++) {
        const gnode *pn = g->nodes[n->in[1 + i]];
        p[i] = pn->kind == GN_CONST ? pn->value : NULL;
        if (!p[i] || (kiln_ndarray_dtype(p[i]) != KILN_FLOAT32 &&
                      kiln_ndarray_dtype(p[i]) != KILN_FLOAT64))
            return REBUILD_COPY;
    }
    const gtensor_type *xt = &n->type.t[0];
    int64_t axis = graph_attr_int(n, "axis", 1);
    if (axis < 0) axis += xt->ndim;
    if (xt->dims[axis].sym) return REBUILD_COPY;
    int64_t c = xt->dims[axis].v, shape[KILN_MAX_NDIM];
    int nd = xt->ndim - (int)axis;
    shape[0] = c;
    for (int d = 1; d < nd; d++) shape[d] = 1;
    kiln_ndarray *scale = kiln_ndarray_empty(xt->dtype, nd, shape);
    kiln_ndarray *shift = kiln_ndarray_empty(xt->dtype, nd, shape);
    double eps = graph_attr_float(n, "epsilon", 1e-5);
    for (int64_t k = 0; scale && shift && k < c; k++) {
        double s = at(p[0], k) / sqrt(at(p[3], k) + eps);
        double b = at(p[1], k) - at(p[2], k) * s;
        if (xt->dtype == KILN_FLOAT32) {
            ((float *)kiln_ndarray_data(scale))[k] = (float)s;
            ((float *)kiln_ndarray_data(shift))[k] = (float)b;
        } else {
            ((double *)kiln_ndarray_data(scale))[k] = s;
            ((double *)kiln_ndarray_data(shift))[k] = b;
        }
    }
    char nm[600];
    snprintf(nm, sizeof nm, "%s.scale", n->name);
    int sc = scale ? kiln_graph_const(r, nm, scale) : -1;
    snprintf(nm, sizeof nm, "%s.shift", n->name);
    int sh = shift ? kiln_graph_const(r, nm, shift) : -1;
    kiln_ndarray_free(scale);
    kiln_ndarray_free(shift);
    if (sc < 0 || sh < 0) return -1;
    int m[2] = {map[n->in[0]], sc};
    int mul = kiln_graph_call(r, "multiply", 2, m, NULL, n->name);
    int a[2] = {mul, sh};
    int add = mul < 0 ? -1 : kiln_graph_call(r, "add", 2, a, NULL, n->name);
    if (add < 0 || graph_infer_node(r, mul) != KILN_OK || graph_infer_node(r, add) != KILN_OK)
        return -1;
    return add;
}

/* batch_norm(x, gamma, beta, mean, var) with constant parameters becomes
 * x * scale + shift, scale = gamma / sqrt(var + eps), shift = beta -
 * mean * scale, with scale and shift shaped to broadcast on the axis. The
 * multiply and add then fuse into the producer (a convolution). */
static struct kiln_graph *pass_simplify_inference(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return rebuild(g, fold_batch_norm, NULL);
}

/* ---- the pipeline ------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int opt_level; /* runs when the opt level is at least this */
    struct kiln_graph *(*run)(struct kiln_graph *g, const pass_env *env);
} pass_row;

/* The order of TVM's x86 pipeline, restricted to the passes kiln has.
 * FuseOps is not here: it partitions the graph at lowering (driver) and
 * only reads the flags below. */
static const pass_row k_passes[] = {
    {"SimplifyInference", 0, pass_simplify_inference},
    {"EliminateCommonSubexpr", 3, pass_cse},
    {"FoldConstant", 2, pass_fold_constant},
    {"AlterOpLayout", 3, pass_alter_op_layout},
    {"DeadCodeElimination", 1, pass_dce},
};
#define NPASSES (int)(sizeof k_passes / sizeof k_passes[0])

int pass_known(const char *name) {
    if (!strcmp(name, "FuseOps") || !strcmp(name, "InferType")) return 1;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(k_passes[i].name, name)) return 1;
    return 0;
}

const char *pass_names(void) {
    return "InferType, SimplifyInference, EliminateCommonSubexpr, FoldConstant, "
           "AlterOpLayout, DeadCodeElimination, FuseOps";
}

static int disabled(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static kiln_status dump(const char *dir, int step, const char *when, const char *pass,
                        const struct kiln_graph *g) {
    if (!dir) return KILN_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/%02d_%s_%s.txt", dir, step, when, pass);
    char *text = graph_print(g);
    if (!text) return KILN_ERR_NOMEM;
    kiln_status st = kiln_write_file(path, text, strlen(text));
    free(text);
    return st;
}

struct kiln_graph *pass_run_pipeline(struct kiln_graph *g, int opt_level, const char *disabled_list,
                                     const char *dump_dir, const pass_env *env) {
    if (kiln_graph_infer_types(g) != KILN_OK) return NULL;
    struct kiln_graph *cur = g;
    int step = 0;
    if (dump(dump_dir, step++, "input", "graph", cur) != KILN_OK) return NULL;
    for (int i = 0; i < NPASSES; i++) {
        const pass_row *p = &k_passes[i];
        if (opt_level < p->opt_level || disabled(disabled_list, p->name)) continue;
        struct kiln_graph *next = p->run(cur, env);
        if (!next) {
            kiln_error_prefix("pass %s", p->name);
            if (cur != g) kiln_graph_free(cur);
            return NULL;
        }
        if (cur != g) kiln_graph_free(cur);
        cur = next;
        if (kiln_graph_infer_types(cur) != KILN_OK ||
            dump(dump_dir, step++, "after", p->name, cur) != KILN_OK) {
            if (cur != g) kiln_graph_free(cur);
            return NULL;
        }
    }
    return cur;
}
