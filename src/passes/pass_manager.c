/* pass_manager.c: the graph pass pipeline. Passes are rows of one table
 * with a name and the opt level that turns them on; they run in table
 * order, each producing a new graph from the last. --disabled-pass drops
 * one by name; --dump-ir writes the graph before the first pass and after
 * each pass. Also the small passes: DeadCodeElimination,
 * EliminateCommonSubexpr and SimplifyInference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "passes.h"

/* ---- DeadCodeElimination ---------------------------------------------------- */

static struct kiln_graph *pass_dce(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_dead_code(g);
}

/* ---- EliminateCommonSubexpr ---------------------------------------------------- */

static int same_attrs(const gnode *a, const gnode *b) {
    if (a->nattr != b->nattr)
        return 0;
    for (int i = 0; i < a->nattr; i++) {
        const gattr *x = &a->attrs[i], *y = graph_attr(b, x->name);
        if (!y || x->kind != y->kind || x->n != y->n)
            return 0;
        switch (x->kind) {
        case GA_INT:
            if (x->i != y->i)
                return 0;
            break;
        case GA_FLOAT:
            if (memcmp(&x->f, &y->f, sizeof x->f))
                return 0;
            break;
        case GA_STR:
            if (strcmp(x->s, y->s))
                return 0;
            break;
        case GA_INTS:
            if (x->n && memcmp(x->ints, y->ints, sizeof(int64_t) * (size_t)x->n))
                return 0;
            break;
        case GA_FLOATS:
            if (x->n && memcmp(x->floats, y->floats, sizeof(double) * (size_t)x->n))
                return 0;
            break;
        case GA_GRAPH: /* the same body (a body is never compared by content) */
            if (x->graph != y->graph)
                return 0;
            break;
        }
    }
    return 1;
}

/* Calls (and tuple-gets) with the same op, inputs and attributes are one.
 * The nodes already in the new graph sit in an open-addressing table keyed
 * by kind, op, index and inputs, so the pass is linear in the graph (a
 * scan of every earlier node made a 50,000-op Sum take seconds here). */
typedef struct {
    int *slot; /* new-graph node ids, -1 empty */
    size_t cap;
    int indexed; /* r->nodes[0 .. indexed) are in the table */
} cse_table;

static uint64_t cse_hash(const gnode *n, const int *in, const int *map) {
    uint64_t h = 1469598103934665603ull;
    uint64_t k[4] = {(uint64_t)n->kind, (uint64_t)(uintptr_t)n->op, (uint64_t)n->index,
                     (uint64_t)n->nin};
    for (int i = 0; i < 4 + n->nin; i++) {
        uint64_t v = i < 4 ? k[i] : (uint64_t)(map ? map[in[i - 4]] : in[i - 4]);
        h = (h ^ v) * 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static int cse_keyed(const gnode *n) {
    return n->kind == GN_CALL || n->kind == GN_TUPLE_GET;
}

static void cse_insert(cse_table *t, const struct kiln_graph *r, int id) {
    size_t j = cse_hash(r->nodes[id], r->nodes[id]->in, NULL) & (t->cap - 1);
    while (t->slot[j] >= 0)
        j = (j + 1) & (t->cap - 1);
    t->slot[j] = id;
}

static int merge_same(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                      const int *map, void *user) {
    (void)g;
    cse_table *t = user;
    for (; t->indexed < r->n; t->indexed++)
        if (cse_keyed(r->nodes[t->indexed]))
            cse_insert(t, r, t->indexed);
    if (!cse_keyed(n))
        return REBUILD_COPY;
    for (size_t j = cse_hash(n, n->in, map) & (t->cap - 1); t->slot[j] >= 0;
         j = (j + 1) & (t->cap - 1)) {
        const gnode *m = r->nodes[t->slot[j]];
        if (m->kind != n->kind || m->op != n->op || m->nin != n->nin || m->index != n->index)
            continue;
        int same = 1;
        for (int i = 0; i < n->nin && same; i++)
            same = m->in[i] == map[n->in[i]];
        if (same && same_attrs(n, m))
            return t->slot[j];
    }
    return REBUILD_COPY;
}

static struct kiln_graph *pass_cse(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    cse_table t = {NULL, 16, 0};
    while (t.cap < 2 * (size_t)g->n + 2)
        t.cap *= 2; /* the new graph has at most g->n nodes: load <= 1/2 */
    t.slot = malloc(sizeof(int) * t.cap);
    if (!t.slot) {
        kiln_set_error(KILN_ERR_NOMEM, "EliminateCommonSubexpr: out of memory");
        return NULL;
    }
    memset(t.slot, 0xff, sizeof(int) * t.cap);
    struct kiln_graph *r = pass_rebuild(g, merge_same, &t);
    free(t.slot);
    return r;
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
        if (!p[i] ||
            (kiln_ndarray_dtype(p[i]) != KILN_FLOAT32 && kiln_ndarray_dtype(p[i]) != KILN_FLOAT64))
            return REBUILD_COPY;
    }
    const gtensor_type *xt = &n->type.t[0];
    int64_t axis = graph_attr_int(n, "axis", 1);
    if (axis < 0)
        axis += xt->ndim;
    if (xt->dims[axis].sym)
        return REBUILD_COPY;
    int64_t c = xt->dims[axis].v, shape[KILN_MAX_NDIM];
    int nd = xt->ndim - (int)axis;
    shape[0] = c;
    for (int d = 1; d < nd; d++)
        shape[d] = 1;
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
    if (sc < 0 || sh < 0)
        return -1;
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
    return pass_rebuild(g, fold_batch_norm, NULL);
}

/* ---- SimplifyExpr ----------------------------------------------------------------
 * Three rewrites in one walk: a division by powers of two becomes a
 * multiplication, a zero nn.pad folds into the pool or convolution reading
 * it, and layer normalization written out becomes nn.layer_norm. */

/* ---- layer normalization written out ---------------------------------------------
 * Exporters before ONNX opset 17 write LayerNormalization as
 *   d = x - mean(x, -1); y = d / sqrt(mean(d^2, -1) + eps) [* gamma] [+ beta]
 * which runs as six kernels with plain reductions. The pattern becomes one
 * nn.layer_norm (with gamma and beta when they follow); the replaced nodes
 * are left to DeadCodeElimination. */

typedef struct {
    int *x; /* old id -> old id of the normalized input, or -1 */
    double *eps;
    int *gamma; /* old id of gamma / beta constants, or -1 */
    int *beta;
} ln_match;

static const gnode *ln_in(const struct kiln_graph *g, const gnode *n, int i) {
    return n && i < n->nin ? g->nodes[n->in[i]] : NULL;
}

static int is_call(const gnode *n, const char *op) {
    return n && n->kind == GN_CALL && !strcmp(n->op->name, op);
}

/* A constant holding one value; writes it to *v. */
static int scalar_const(const gnode *n, double *v) {
    if (!n || n->kind != GN_CONST || kiln_ndarray_numel(n->value) != 1)
        return 0;
    *v = at(n->value, 0);
    return !isnan(*v);
}

/* mean over the last axis only, keeping it. */
static int last_axis_mean(const gnode *n) {
    if (!is_call(n, "mean") || !n->type.known || graph_attr_int(n, "keepdims", 0) != 1 ||
        graph_attr_int(n, "exclude", 0))
        return 0;
    int64_t ax[4];
    int nd = n->type.t[0].ndim;
    return graph_attr_ints(n, "axis", ax, 4) == 1 && (ax[0] == -1 || ax[0] == nd - 1);
}

/* x if n is (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), else -1. */
static int match_ln_core(const struct kiln_graph *g, const gnode *n, double *eps) {
    if (!is_call(n, "divide"))
        return -1;
    const gnode *d = ln_in(g, n, 0), *sq = ln_in(g, n, 1), *m = ln_in(g, d, 1);
    if (!is_call(d, "subtract") || !last_axis_mean(m) || m->in[0] != d->in[0])
        return -1;
    if (!is_call(sq, "sqrt"))
        return -1;
    const gnode *e = ln_in(g, sq, 0);
    if (!is_call(e, "add"))
        return -1;
    const gnode *v = ln_in(g, e, 0), *c = ln_in(g, e, 1);
    if (!last_axis_mean(v)) {
        const gnode *t = v;
        v = c;
        c = t;
    }
    if (!last_axis_mean(v) || !scalar_const(c, eps) || *eps < 0)
        return -1;
    const gnode *p = ln_in(g, v, 0);
    double two;
    int squared = (is_call(p, "power") && p->in[0] == d->id && scalar_const(ln_in(g, p, 1), &two) &&
                   two == 2.0) ||
                  (is_call(p, "multiply") && p->in[0] == d->id && p->in[1] == d->id);
    const gnode *x = g->nodes[d->in[0]];
    if (!squared || !x->type.known || x->type.is_tuple || x->type.t[0].dtype != KILN_FLOAT32)
        return -1;
    return x->id;
}

/* The constant operand of a binary op whose other operand is `other`, if it
 * is 1-D over the last axis (k elements). */
static const gnode *affine_const(const struct kiln_graph *g, const gnode *n, int other, int64_t k) {
    if (n->nin != 2)
        return NULL;
    const gnode *c = g->nodes[n->in[n->in[0] == other ? 1 : 0]];
    if ((n->in[0] != other && n->in[1] != other) || c->kind != GN_CONST ||
        kiln_ndarray_ndim(c->value) != 1 || kiln_ndarray_dim(c->value, 0) != k ||
        kiln_ndarray_dtype(c->value) != KILN_FLOAT32)
        return NULL;
    return c;
}

/* x / c, c a float32 constant of powers of two whose reciprocals are
 * normal numbers too (attention's / 8): x * (1 / c), the same value to the
 * bit (both are x scaled by a power of two, rounded once) without a vector
 * division per element (about 5 cycles each on Zen). -2 when n is not
 * such a division. */
static int divide_by_power_of_two(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                                  const int *map) {
    if (!is_call(n, "divide") || n->nin != 2 || !n->type.known || n->type.is_tuple ||
        n->type.t[0].dtype != KILN_FLOAT32)
        return -2;
    const gnode *c = g->nodes[n->in[1]];
    if (c->kind != GN_CONST || kiln_ndarray_dtype(c->value) != KILN_FLOAT32 ||
        kiln_ndarray_numel(c->value) > 4096)
        return -2;
    int64_t k = kiln_ndarray_numel(c->value);
    for (int64_t i = 0; i < k; i++) {
        int e;
        double v = at(c->value, i), m = frexp(v, &e);
        if (!isfinite(v) || fabs(m) != 0.5 || e - 1 < -125 || e - 1 > 125)
            return -2;
    }
    kiln_ndarray *inv = ndarray_clone(c->value);
    if (!inv)
        return -1;
    float *d = kiln_ndarray_data(inv); /* a clone is compact */
    for (int64_t i = 0; i < k; i++)
        d[i] = 1.0f / (float)at(c->value, i);
    char nm[256];
    snprintf(nm, sizeof nm, "%s.reciprocal", c->name ? c->name : "");
    int ci = graph_const_take(r, nm, inv);
    int in[2] = {map[n->in[0]], ci};
    int id = ci < 0 ? -1 : kiln_graph_call(r, "multiply", 2, in, NULL, n->name);
    if (id < 0 || graph_infer_node(r, id) != KILN_OK)
        return -1;
    return id;
}

/* An average pool or a 2-D convolution (NCHW) reading a constant zero
 * nn.pad of its spatial dims only: the padding becomes the call's own (a
 * pool then counts it, as count_include_pad=1 does: the pad's zeros were
 * input to it), so the padded copy is never made, and the call keeps the
 * blocked layout nn.pad has no rule for. Inception-v3's exported Pad +
 * AveragePool (F.avg_pool2d(x, 3, 1, padding=1)) ran in NCHW with layout
 * transforms around it, at 4 % of the memory roofline: 4.8 of its 27 ms on
 * Zen 5. A pool with padding of its own that it does not count keeps the
 * pad. -2 when n is not such a call. */
static int fold_pad(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                    const int *map) {
    int pool = is_call(n, "nn.avg_pool2d"), conv = is_call(n, "nn.conv2d");
    if ((!pool && !conv) || n->nin < 1)
        return -2;
    const gnode *p = g->nodes[n->in[0]];
    int64_t pw[16], pad[8];
    if (!is_call(p, "nn.pad") || p->nin != 1 ||
        strcmp(graph_attr_str(p, "pad_mode", "constant"), "constant") ||
        graph_attr_float(p, "pad_value", 0) != 0 || graph_attr_ints(p, "pad_width", pw, 16) != 8 ||
        pw[0] || pw[1] || pw[2] || pw[3] || pw[4] < 0 || pw[5] < 0 || pw[6] < 0 || pw[7] < 0)
        return -2;
    const char *layout = graph_attr_str(n, pool ? "layout" : "data_layout", "NCHW");
    if (strcmp(layout, "NCHW") || graph_attr_ints(n, "padding", pad, 8) != 4)
        return -2;
    int counts = pool && graph_attr_int(n, "count_include_pad", 0);
    if (pool && !counts && (pad[0] || pad[1] || pad[2] || pad[3]))
        return -2;
    /* padding is [top, left, bottom, right]; pad_width [before, after] per dim */
    char extra[160];
    snprintf(extra, sizeof extra, "padding=[%lld, %lld, %lld, %lld]%s", (long long)(pad[0] + pw[4]),
             (long long)(pad[1] + pw[6]), (long long)(pad[2] + pw[5]), (long long)(pad[3] + pw[7]),
             pool ? ", count_include_pad=1" : "");
    static const char *const skip_pool[] = {"padding", "count_include_pad", NULL},
                             *const skip_conv[] = {"padding", NULL};
    char *attrs = pass_attrs_text(n, pool ? skip_pool : skip_conv, extra);
    int in[8];
    for (int i = 0; i < n->nin && i < 8; i++)
        in[i] = map[i ? n->in[i] : p->in[0]];
    int id =
        attrs && n->nin <= 8 ? kiln_graph_call(r, n->op->name, n->nin, in, attrs, n->name) : -1;
    free(attrs);
    if (id < 0 || graph_infer_node(r, id) != KILN_OK)
        return -1;
    return id;
}

static int fuse_layer_norm(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                           const int *map, void *user) {
    ln_match *L = user;
    L->x[n->id] = -1;
    if (n->kind != GN_CALL)
        return REBUILD_COPY;
    int div = divide_by_power_of_two(r, g, n, map);
    if (div != -2)
        return div;
    int folded = fold_pad(r, g, n, map);
    if (folded != -2)
        return folded;
    double eps;
    int x = match_ln_core(g, n, &eps);
    int gamma = -1, beta = -1;
    if (x < 0 && (is_call(n, "multiply") || is_call(n, "add"))) {
        /* gamma after a matched core, or beta after a core (with gamma) */
        for (int i = 0; i < n->nin && x < 0; i++) {
            int src = n->in[i];
            if (L->x[src] < 0)
                continue;
            const gnode *xn = g->nodes[L->x[src]];
            int64_t k = xn->type.t[0].dims[xn->type.t[0].ndim - 1].v;
            const gnode *c = affine_const(g, n, src, k);
            if (!c || xn->type.t[0].dims[xn->type.t[0].ndim - 1].sym)
                continue;
            if (is_call(n, "multiply") && L->gamma[src] < 0 && L->beta[src] < 0) {
                x = L->x[src], eps = L->eps[src], gamma = c->id;
            } else if (is_call(n, "add") && L->beta[src] < 0) {
                x = L->x[src], eps = L->eps[src], gamma = L->gamma[src], beta = c->id;
            }
        }
    }
    if (x < 0)
        return REBUILD_COPY;
    if (beta >= 0 && gamma < 0)
        return REBUILD_COPY; /* nn.layer_norm takes beta after gamma */
    int in[3] = {map[x], gamma >= 0 ? map[gamma] : -1, beta >= 0 ? map[beta] : -1};
    int nin = beta >= 0 ? 3 : gamma >= 0 ? 2 : 1;
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=-1, epsilon=%.9g", eps);
    int id = kiln_graph_call(r, "nn.layer_norm", nin, in, attrs, n->name);
    if (id < 0 || graph_infer_node(r, id) != KILN_OK)
        return -1;
    L->x[n->id] = x;
    L->eps[n->id] = eps;
    L->gamma[n->id] = gamma;
    L->beta[n->id] = beta;
    return id;
}

static struct kiln_graph *pass_simplify_expr(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    size_t n = (size_t)(g->n ? g->n : 1);
    ln_match L = {malloc(sizeof(int) * n), malloc(sizeof(double) * n), malloc(sizeof(int) * n),
                  malloc(sizeof(int) * n)};
    struct kiln_graph *r = NULL;
    if (L.x && L.eps && L.gamma && L.beta) {
        for (int i = 0; i < g->n; i++)
            L.x[i] = L.gamma[i] = L.beta[i] = -1;
        r = pass_rebuild(g, fuse_layer_norm, &L);
    }
    free(L.x);
    free(L.eps);
    free(L.gamma);
    free(L.beta);
    return r;
}

/* ---- the pipeline ------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int opt_level; /* runs when the opt level is at least this */
    struct kiln_graph *(*run)(struct kiln_graph *g, const pass_env *env);
    int byoc; /* runs only for a target with external backends (kiln/byoc.h) */
} pass_row;

static struct kiln_graph *run_merge_composite(struct kiln_graph *g, const pass_env *env) {
    return pass_merge_composite(g, env->nbyoc, env->byoc);
}

static struct kiln_graph *run_annotate_target(struct kiln_graph *g, const pass_env *env) {
    return pass_annotate_target(g, env->nbyoc, env->byoc);
}

static struct kiln_graph *run_merge_regions(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_merge_compiler_regions(g);
}

static struct kiln_graph *run_partition_graph(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_partition_graph(g);
}

/* The order of TVM's x86 pipeline, restricted to the passes kiln has.
 * FuseOps is not here: it partitions the graph at lowering (driver) and
 * only reads the flags below; nor is ConcatViews, the memory planner's
 * placing of concatenations (src/driver/concat_views.c). */
/* The BYOC passes run after the graph is simplified and before
 * AlterOpLayout, so the backends see plain layouts and kiln lays out only
 * what stays its own. */
static const pass_row k_passes[] = {
    {"SimplifyInference", 0, pass_simplify_inference, 0},
    {"EliminateCommonSubexpr", 3, pass_cse, 0},
    {"FoldConstant", 2, pass_fold_constant, 0},
    {"SimplifyExpr", 3, pass_simplify_expr, 0},
    {"MergeComposite", 0, run_merge_composite, 1},
    {"AnnotateTarget", 0, run_annotate_target, 1},
    {"MergeCompilerRegions", 0, run_merge_regions, 1},
    {"PartitionGraph", 0, run_partition_graph, 1},
    {"AlterOpLayout", 3, pass_alter_op_layout, 0},
    {"DeadCodeElimination", 1, pass_dce, 0},
};
#define NPASSES (int)(sizeof k_passes / sizeof k_passes[0])

int pass_known(const char *name) {
    if (!strcmp(name, "FuseOps") || !strcmp(name, "InferType") || !strcmp(name, "ConcatViews"))
        return 1;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(k_passes[i].name, name))
            return 1;
    return 0;
}

const char *pass_names(void) {
    return "InferType, SimplifyInference, EliminateCommonSubexpr, FoldConstant, "
           "SimplifyExpr, MergeComposite, AnnotateTarget, MergeCompilerRegions, PartitionGraph, "
           "AlterOpLayout, DeadCodeElimination, FuseOps, ConcatViews";
}

static int disabled(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static kiln_status dump(const char *dir, int step, const char *when, const char *pass,
                        const struct kiln_graph *g) {
    if (!dir)
        return KILN_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/%02d_%s_%s.txt", dir, step, when, pass);
    char *text = graph_print(g);
    if (!text)
        return KILN_ERR_NOMEM;
    kiln_status st = kiln_write_file(path, text, strlen(text));
    free(text);
    return st;
}

struct kiln_graph *pass_run_pipeline(struct kiln_graph *g, int opt_level, const char *disabled_list,
                                     const char *dump_dir, const pass_env *env) {
    if (kiln_graph_infer_types(g) != KILN_OK)
        return NULL;
    struct kiln_graph *cur = g;
    int step = 0;
    if (dump(dump_dir, step++, "input", "graph", cur) != KILN_OK)
        return NULL;
    for (int i = 0; i < NPASSES; i++) {
        const pass_row *p = &k_passes[i];
        if (opt_level < p->opt_level || disabled(disabled_list, p->name) ||
            (p->byoc && env->nbyoc == 0))
            continue;
        if (env->progress) {
            char phase[96];
            snprintf(phase, sizeof phase, "pass %s", p->name);
            env->progress(env->progress_user, phase, 0, 0, NULL);
        }
        struct kiln_graph *next = p->run(cur, env);
        if (!next) {
            kiln_error_prefix("pass %s", p->name);
            if (cur != g)
                kiln_graph_free(cur);
            return NULL;
        }
        if (cur != g)
            kiln_graph_free(cur);
        cur = next;
        if (kiln_graph_infer_types(cur) != KILN_OK ||
            dump(dump_dir, step++, "after", p->name, cur) != KILN_OK) {
            if (cur != g)
                kiln_graph_free(cur);
            return NULL;
        }
    }
    return cur;
}
