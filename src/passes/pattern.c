/* pattern.c: the graph pattern language (kiln/pattern.h): constructors,
 * the matcher, rewriting to a fixed point, and partitioning matches into
 * composite functions. Also the two walks every pass builds on:
 * pass_rebuild (a new graph node by node) and dead-code elimination.
 *
 * Matching follows TVM's dataflow patterns: a pattern object binds one node
 * per match (so an object used twice matches one node twice), an
 * alternation tries its left side first, the commutative binary ops (add,
 * multiply, maximum, minimum) match their arguments in either order, and
 * there is no deeper backtracking: a choice that succeeded is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern_internal.h"

/* ---- rebuilding a graph ---------------------------------------------------- */

struct kiln_graph *pass_rebuild(const struct kiln_graph *g, rebuild_fn fn, void *user) {
    struct kiln_graph *r = graph_new(g->ops);
    int *map = malloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
    if (!r || !map)
        goto fail;
    for (int id = 0; id < g->n; id++) {
        int v = fn ? fn(r, g, g->nodes[id], map, user) : REBUILD_COPY;
        if (v == REBUILD_COPY)
            v = graph_copy_node(r, g->nodes[id], map);
        if (v == -1)
            goto fail;
        map[id] = v == REBUILD_DROP ? -1 : v;
    }
    if (graph_copy_outputs(r, g, map) != KILN_OK)
        goto fail;
    free(map);
    return r;
fail:
    free(map);
    kiln_graph_free(r);
    return NULL;
}

static int keep_live(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                     const int *map, void *user) {
    (void)r, (void)g, (void)map;
    return ((const char *)user)[n->id] ? REBUILD_COPY : REBUILD_DROP;
}

/* DCE with more roots: seed[id] set keeps node id and what it reads. */
static struct kiln_graph *dead_code_seeded(const struct kiln_graph *g, const char *seed) {
    char *live = calloc((size_t)(g->n ? g->n : 1), 1);
    if (!live)
        return NULL;
    for (int k = 0; k < g->nout; k++)
        live[g->outs[k]] = 1;
    for (int id = 0; seed && id < g->n; id++)
        live[id] |= seed[id];
    for (int id = g->n - 1; id >= 0; id--) {
        const gnode *n = g->nodes[id];
        if (n->kind == GN_VAR)
            live[id] = 1; /* inputs stay: the signature is fixed */
        if (!live[id])
            continue;
        for (int i = 0; i < n->nin; i++)
            live[n->in[i]] = 1;
    }
    struct kiln_graph *r = pass_rebuild(g, keep_live, live);
    free(live);
    return r;
}

struct kiln_graph *pass_dead_code(const struct kiln_graph *g) {
    return dead_code_seeded(g, NULL);
}

/* ---- sets and constructors ------------------------------------------------------- */

kiln_pattern_set *kiln_pattern_set_new(void) {
    kiln_pattern_set *s = kiln_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->a = arena_new();
    s->scratch = kiln_graph_new();
    if (!s->a || !s->scratch) {
        kiln_pattern_set_free(s);
        return NULL;
    }
    return s;
}

void kiln_pattern_set_free(kiln_pattern_set *s) {
    if (!s)
        return;
    arena_free(s->a);
    kiln_graph_free(s->scratch);
    free(s->all);
    free(s);
}

kiln_pattern *pattern_new(kiln_pattern_set *s, pat_kind k) {
    if (!s) {
        kiln_set_error(KILN_ERR_INVALID, "pattern: no pattern set");
        return NULL;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        kiln_pattern **all = kiln_realloc(s->all, sizeof *all * (size_t)cap);
        if (!all)
            return NULL;
        s->all = all;
        s->cap = cap;
    }
    kiln_pattern *p = arena_alloc(s->a, sizeof *p);
    p->kind = k;
    p->id = s->n;
    p->set = s;
    p->op_class = -1;
    p->nargs = -1;
    p->ndim = -1;
    p->dtype = KILN_DTYPE_COUNT;
    s->all[s->n++] = p;
    return p;
}

static const char *const k_classes[] = {"elemwise", "broadcast", "injective", "reduce", "fusable"};
static const int k_class_values[] = {OP_ELEMWISE, OP_BROADCAST, OP_INJECTIVE, OP_COMM_REDUCE,
                                     OP_OUT_ELEMWISE_FUSABLE};

int pattern_class_of(const char *name) {
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, k_classes[i]))
            return k_class_values[i];
    return !strcmp(name, "opaque") ? PAT_CLASS_ANY : -1;
}

const char *pattern_class_name(int cls) {
    for (int i = 0; i < 5; i++)
        if (cls == k_class_values[i])
            return k_classes[i];
    return "opaque";
}

/* The patterns given must belong to s. */
static int own(kiln_pattern_set *s, const kiln_pattern *p, const char *what) {
    if (p && p->set == s)
        return 1;
    kiln_set_error(KILN_ERR_INVALID, "pattern %s: %s", what,
                   p ? "an argument belongs to another pattern set" : "an argument is NULL");
    return 0;
}

static kiln_pattern *with_args(kiln_pattern_set *s, kiln_pattern *p, int nargs,
                               kiln_pattern *const *args, const char *what) {
    if (!p)
        return NULL;
    if (nargs < -1 || (nargs > 0 && !args)) {
        kiln_set_error(KILN_ERR_INVALID, "pattern %s: bad argument count %d", what, nargs);
        return NULL;
    }
    for (int i = 0; i < nargs; i++)
        if (!own(s, args[i], what))
            return NULL;
    p->nargs = nargs;
    if (nargs > 0) {
        p->args = arena_alloc(s->a, sizeof(kiln_pattern *) * (size_t)nargs);
        memcpy(p->args, args, sizeof(kiln_pattern *) * (size_t)nargs);
    }
    return p;
}

kiln_pattern *kiln_pattern_wildcard(kiln_pattern_set *s) {
    return pattern_new(s, PAT_WILDCARD);
}

kiln_pattern *kiln_pattern_constant(kiln_pattern_set *s) {
    return pattern_new(s, PAT_CONST);
}

kiln_pattern *kiln_pattern_op(kiln_pattern_set *s, const char *op, int nargs,
                              kiln_pattern *const *args) {
    if (!op || !*op) {
        kiln_set_error(KILN_ERR_INVALID, "pattern op: needs an op name");
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_OP), nargs, args, op);
    if (p)
        p->op = arena_strdup(s->a, op);
    return p;
}

kiln_pattern *kiln_pattern_op_where(kiln_pattern_set *s, kiln_pattern_pred pred, void *user,
                                    int nargs, kiln_pattern *const *args) {
    if (!pred) {
        kiln_set_error(KILN_ERR_INVALID, "pattern op_where: needs a predicate");
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_OP), nargs, args, "op_where");
    if (p)
        p->pred = pred, p->user = user;
    return p;
}

kiln_pattern *kiln_pattern_op_class(kiln_pattern_set *s, int max_class, int nargs,
                                    kiln_pattern *const *args) {
    if (max_class < 0) {
        kiln_set_error(KILN_ERR_INVALID, "pattern op_class: bad class %d", max_class);
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_OP), nargs, args, "op_class");
    if (p)
        p->op_class = max_class >= OP_OPAQUE ? PAT_CLASS_ANY : max_class;
    return p;
}

kiln_pattern *kiln_pattern_alt(kiln_pattern_set *s, kiln_pattern *a, kiln_pattern *b) {
    kiln_pattern *args[2] = {a, b};
    if (!own(s, a, "alt") || !own(s, b, "alt"))
        return NULL;
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_ALT), 2, args, "alt");
    return p;
}

kiln_pattern *kiln_pattern_attrs(kiln_pattern_set *s, kiln_pattern *inner, const char *attrs) {
    if (!own(s, inner, "attrs"))
        return NULL;
    gattr *parsed = NULL;
    int n = graph_parse_attrs(s->scratch, attrs ? attrs : "", &parsed);
    if (n < 0) {
        kiln_error_prefix("pattern attrs");
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_ATTRS), 1, &inner, "attrs");
    if (p)
        p->nattr = n, p->attrs = parsed;
    return p;
}

kiln_pattern *kiln_pattern_type(kiln_pattern_set *s, kiln_pattern *inner, kiln_dtype dtype,
                                int ndim, const int64_t *dims) {
    if (!own(s, inner, "type"))
        return NULL;
    if (ndim > KILN_MAX_NDIM || (dtype != KILN_DTYPE_COUNT && !kiln_dtype_is_data(dtype))) {
        kiln_set_error(KILN_ERR_INVALID, "pattern type: bad dtype or rank %d", ndim);
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_TYPE), 1, &inner, "type");
    if (!p)
        return NULL;
    p->dtype = dtype;
    p->ndim = ndim < 0 ? -1 : ndim;
    for (int i = 0; i < ndim; i++)
        p->dims[i] = dims ? dims[i] : -1;
    return p;
}

kiln_pattern *kiln_pattern_optional(kiln_pattern_set *s, const char *op, kiln_pattern *inner) {
    if (!op || !*op || !own(s, inner, "optional")) {
        if (!op || !*op)
            kiln_set_error(KILN_ERR_INVALID, "pattern optional: needs an op name");
        return NULL;
    }
    kiln_pattern *p = with_args(s, pattern_new(s, PAT_OPTIONAL), 1, &inner, "optional");
    if (p)
        p->op = arena_strdup(s->a, op);
    return p;
}

kiln_pattern *kiln_pattern_dominator(kiln_pattern_set *s, kiln_pattern *parent, kiln_pattern *path,
                                     kiln_pattern *child) {
    kiln_pattern *args[3] = {parent, path, child};
    return with_args(s, pattern_new(s, PAT_DOM), 3, args, "dom");
}

kiln_pattern *kiln_pattern_named(kiln_pattern_set *s, const char *name) {
    for (int i = 0; s && name && i < s->n; i++)
        if (s->all[i]->name && !strcmp(s->all[i]->name, name))
            return s->all[i];
    return NULL;
}

/* ---- matching ----------------------------------------------------------------------- */

struct kiln_match {
    const struct kiln_graph *g;
    const kiln_pattern_set *set;
    int root;
    int *bind; /* pattern id -> node, -1 unbound */
    int *undo; /* pattern ids in binding order */
    int nundo;
    char *inner;     /* node -> 1: a call the match covers (not a wildcard's or constant's) */
    int *inner_list; /* those nodes in the order they were bound */
    int ninner;
    int swapped_first; /* commutative calls try their swapped arguments first */
};

/* Bindings past `mark` are undone (a branch that failed). */
static void undo_to(kiln_match *m, int mark, int inner_mark) {
    while (m->nundo > mark)
        m->bind[m->undo[--m->nundo]] = -1;
    while (m->ninner > inner_mark)
        m->inner[m->inner_list[--m->ninner]] = 0;
}

static void cover(kiln_match *m, int node) {
    if (!m->inner[node]) {
        m->inner[node] = 1;
        m->inner_list[m->ninner++] = node;
    }
}

static int same_value(const gattr *want, const gattr *have) {
    if (!have)
        return 0;
    if (want->kind == GA_INT || want->kind == GA_FLOAT) {
        double w = want->kind == GA_INT ? (double)want->i : want->f;
        if (have->kind == GA_INT || have->kind == GA_FLOAT)
            return w == (have->kind == GA_INT ? (double)have->i : have->f);
        return 0;
    }
    if (want->kind == GA_STR)
        return have->kind == GA_STR && !strcmp(want->s, have->s);
    if (want->kind == GA_INTS || want->kind == GA_FLOATS) {
        if ((have->kind != GA_INTS && have->kind != GA_FLOATS) || have->n != want->n)
            return 0;
        for (int i = 0; i < want->n; i++) {
            double w = want->kind == GA_INTS ? (double)want->ints[i] : want->floats[i];
            double h = have->kind == GA_INTS ? (double)have->ints[i] : have->floats[i];
            if (w != h)
                return 0;
        }
        return 1;
    }
    return 0;
}

/* The call's attribute `name`, or its schema default. */
static const gattr *attr_or_default(const gnode *n, const char *name) {
    const gattr *a = graph_attr(n, name);
    if (a)
        return a;
    for (const attr_schema *s = n->op->attrs; s && s->name; s++)
        if (!strcmp(s->name, name))
            return graph_default_attr(n->op, s);
    return NULL;
}

static int is_commutative(const gnode *n) {
    const char *o = n->op->name;
    return n->nin == 2 && (!strcmp(o, "add") || !strcmp(o, "multiply") || !strcmp(o, "maximum") ||
                           !strcmp(o, "minimum"));
}

static int match_at(kiln_match *m, const kiln_pattern *p, int node);

static int match_args(kiln_match *m, const kiln_pattern *p, const gnode *n, int swap) {
    for (int i = 0; i < p->nargs; i++)
        if (!match_at(m, p->args[i], n->in[swap ? 1 - i : i]))
            return 0;
    return 1;
}

static int op_accepts(const kiln_pattern *p, const gnode *n) {
    if (n->kind != GN_CALL)
        return 0;
    if (p->op)
        return !strcmp(n->op->name, p->op);
    if (p->pred)
        return p->pred(n->graph, n->id, p->user) == 1;
    return p->op_class == PAT_CLASS_ANY || (int)n->op->pattern <= p->op_class;
}

/* dom: every input of node is the parent, a variable or constant, or a
 * node matching path whose own inputs are the same (TVM's MatchesPath,
 * which also lets leaves that do not depend on the parent through: a
 * bias). 2 when some input led to the parent, 1 when none did, 0 when an
 * input is none of these. */
static int dom_path(kiln_match *m, const kiln_pattern *p, int node, int depth) {
    const gnode *n = m->g->nodes[node];
    if (depth > 4096)
        return 0;
    int found = 1;
    for (int i = 0; i < n->nin; i++) {
        int mark = m->nundo, imark = m->ninner;
        if (match_at(m, p->args[0], n->in[i])) {
            found = 2;
            continue;
        }
        undo_to(m, mark, imark);
        const gnode *in = m->g->nodes[n->in[i]];
        if (in->kind == GN_CONST || in->kind == GN_VAR)
            continue;
        if (!match_at(m, p->args[1], n->in[i]))
            return 0;
        /* path matches each node of the chain afresh (TVM memoizes no
           path node): forget its bindings, keep what it covers */
        while (m->nundo > mark)
            m->bind[m->undo[--m->nundo]] = -1;
        cover(m, n->in[i]);
        int r = dom_path(m, p, n->in[i], depth + 1);
        if (!r)
            return 0;
        found = r > found ? r : found;
    }
    return found;
}

static int match_kind(kiln_match *m, const kiln_pattern *p, int node) {
    const gnode *n = m->g->nodes[node];
    switch (p->kind) {
    case PAT_WILDCARD: return 1;
    case PAT_CONST: return n->kind == GN_CONST;
    case PAT_OP: {
        if (!op_accepts(p, n) || (p->nargs >= 0 && n->nin != p->nargs))
            return 0;
        cover(m, node);
        int mark = m->nundo, imark = m->ninner;
        int comm = is_commutative(n) && p->nargs == 2, first = comm && m->swapped_first;
        if (p->nargs < 0 || match_args(m, p, n, first))
            return 1;
        undo_to(m, mark, imark);
        if (comm) {
            cover(m, node);
            return match_args(m, p, n, !first);
        }
        return 0;
    }
    case PAT_ALT: {
        int mark = m->nundo, imark = m->ninner;
        if (match_at(m, p->args[0], node))
            return 1;
        undo_to(m, mark, imark);
        return match_at(m, p->args[1], node);
    }
    case PAT_ATTRS:
        if (n->kind != GN_CALL)
            return 0;
        for (int i = 0; i < p->nattr; i++)
            if (!same_value(&p->attrs[i], attr_or_default(n, p->attrs[i].name)))
                return 0;
        return match_at(m, p->args[0], node);
    case PAT_TYPE: {
        if (!n->type.known || n->type.is_tuple || n->type.n != 1)
            return 0;
        const gtensor_type *t = &n->type.t[0];
        if (p->dtype != KILN_DTYPE_COUNT && t->dtype != p->dtype)
            return 0;
        if (p->ndim >= 0) {
            if (t->ndim != p->ndim)
                return 0;
            for (int d = 0; d < t->ndim; d++)
                if (p->dims[d] >= 0 && (t->dims[d].sym || t->dims[d].v != p->dims[d]))
                    return 0;
        }
        return match_at(m, p->args[0], node);
    }
    case PAT_OPTIONAL: {
        int mark = m->nundo, imark = m->ninner;
        if (n->kind == GN_CALL && n->nin >= 1 && !strcmp(n->op->name, p->op)) {
            cover(m, node);
            if (match_at(m, p->args[0], n->in[0]))
                return 1;
            undo_to(m, mark, imark);
        }
        return match_at(m, p->args[0], node);
    }
    case PAT_DOM:
        if (!match_at(m, p->args[2], node))
            return 0;
        cover(m, node);
        return dom_path(m, p, node, 0) == 2;
    }
    return 0;
}

static int match_at(kiln_match *m, const kiln_pattern *p, int node) {
    if (m->bind[p->id] >= 0)
        return m->bind[p->id] == node;
    int mark = m->nundo, imark = m->ninner;
    if (!match_kind(m, p, node)) {
        undo_to(m, mark, imark);
        return 0;
    }
    if (m->bind[p->id] >= 0) /* bound inside (a pattern that contains itself cannot be built) */
        return m->bind[p->id] == node;
    m->bind[p->id] = node;
    m->undo[m->nundo++] = p->id;
    return 1;
}

static void match_reset(kiln_match *m) {
    undo_to(m, 0, 0);
}

static kiln_match *match_new(const kiln_pattern_set *s, const struct kiln_graph *g) {
    kiln_match *m = kiln_calloc(1, sizeof *m);
    size_t np = (size_t)(s->n ? s->n : 1), nn = (size_t)(g->n ? g->n : 1);
    if (!m)
        return NULL;
    m->g = g;
    m->set = s;
    m->bind = kiln_malloc(sizeof(int) * np);
    m->undo = kiln_malloc(sizeof(int) * np);
    m->inner = kiln_calloc(nn, 1);
    m->inner_list = kiln_malloc(sizeof(int) * nn);
    if (!m->bind || !m->undo || !m->inner || !m->inner_list) {
        kiln_match_free(m);
        return NULL;
    }
    memset(m->bind, 0xff, sizeof(int) * np);
    return m;
}

void kiln_match_free(kiln_match *m) {
    if (!m)
        return;
    free(m->bind);
    free(m->undo);
    free(m->inner);
    free(m->inner_list);
    free(m);
}

/* Match p at node with m (reset first); 1 if it matches. */
static int match_run(kiln_match *m, const kiln_pattern *p, int node) {
    match_reset(m);
    m->root = node;
    return match_at(m, p, node);
}

kiln_match *kiln_pattern_match(const kiln_pattern *p, const kiln_graph *g, int node) {
    if (!p || !g || node < 0 || node >= g->n) {
        kiln_set_error(KILN_ERR_INVALID, "pattern match: bad pattern, graph or node %d", node);
        return NULL;
    }
    kiln_match *m = match_new(p->set, g);
    if (m && !match_run(m, p, node)) {
        kiln_match_free(m);
        return NULL;
    }
    return m;
}

int kiln_match_node(const kiln_match *m, const kiln_pattern *p) {
    if (!m || !p || p->set != m->set || p->id >= m->set->n)
        return -1;
    return m->bind[p->id];
}

/* ---- rewriting --------------------------------------------------------------------- */

struct kiln_rewrite {
    const struct kiln_graph *pre;
    struct kiln_graph *post;
    const int *map;
    kiln_match *m;
    const int *uses; /* consumers of each node of pre (a graph output counts) */
};

int kiln_rewrite_uses(const kiln_rewrite *rw, int node) {
    return rw && node >= 0 && node < rw->pre->n ? rw->uses[node] : -1;
}

const kiln_graph *kiln_rewrite_pre(const kiln_rewrite *rw) {
    return rw ? rw->pre : NULL;
}

kiln_graph *kiln_rewrite_post(kiln_rewrite *rw) {
    return rw ? rw->post : NULL;
}

int kiln_rewrite_root(const kiln_rewrite *rw) {
    return rw ? rw->m->root : -1;
}

int kiln_rewrite_pre_node(const kiln_rewrite *rw, const kiln_pattern *p) {
    return rw ? kiln_match_node(rw->m, p) : -1;
}

int kiln_rewrite_post_node(const kiln_rewrite *rw, const kiln_pattern *p) {
    int id = kiln_rewrite_pre_node(rw, p);
    return id >= 0 && id < rw->m->root + 1 && id != rw->m->root ? rw->map[id] : -1;
}

int kiln_rewrite_post_of(const kiln_rewrite *rw, int pre_node) {
    return rw && pre_node >= 0 && pre_node < rw->m->root ? rw->map[pre_node] : -1;
}

typedef struct {
    int n;
    const kiln_pattern *const *pats;
    const pattern_rewrite_fn *fns;
    void *const *users;
    kiln_match **ms;
    int changed;
    int *uses;
    char *keep; /* new graph: copies of nodes nothing read before (dead code a rewrite did not
                   make is not its to remove) */
    int keep_cap;
} rewriter;

static int rewrite_one(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                       const int *map, rewriter *R) {
    if (n->kind != GN_CALL)
        return REBUILD_COPY;
    for (int k = 0; k < R->n; k++) {
        if (!match_run(R->ms[k], R->pats[k], n->id))
            continue;
        kiln_rewrite rw = {g, r, map, R->ms[k], R->uses};
        int first = r->n;
        int v = R->fns[k](&rw, R->users[k]);
        if (v == KILN_REWRITE_SKIP)
            continue;
        if (v < 0 || v >= r->n) {
            if (v >= 0 || !kiln_last_error()[0])
                kiln_set_error(KILN_ERR_INVALID, "rewrite of node '%s': the callback gave %d",
                               n->name, v);
            return -1;
        }
        for (int id = first; id < r->n; id++)
            if (!r->nodes[id]->type.known && graph_infer_node(r, id) != KILN_OK)
                return -1;
        R->changed = 1;
        return v;
    }
    return REBUILD_COPY;
}

static int rewrite_node(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                        const int *map, void *user) {
    rewriter *R = user;
    int v = rewrite_one(r, g, n, map, R);
    if (v == REBUILD_COPY && !R->uses[n->id])
        v = graph_copy_node(r, n, map);
    if (v >= 0 && !R->uses[n->id]) {
        if (v >= R->keep_cap) {
            int cap = 2 * v + 64;
            char *k = kiln_realloc(R->keep, (size_t)cap);
            if (!k)
                return -1;
            memset(k + R->keep_cap, 0, (size_t)(cap - R->keep_cap));
            R->keep = k;
            R->keep_cap = cap;
        }
        R->keep[v] = 1;
    }
    return v;
}

#define REWRITE_MAX_ROUNDS 100

/* At most max_rounds rounds; with `settle`, still matching after them is an
 * error, else the graph after them is the result. */
static struct kiln_graph *rewrite_rounds(const struct kiln_graph *g, int n,
                                         const kiln_pattern *const *pats,
                                         const pattern_rewrite_fn *fns, void *const *users,
                                         int max_rounds, int settle) {
    struct kiln_graph *cur = (struct kiln_graph *)g;
    for (int round = 0; round < max_rounds; round++) {
        rewriter R = {n,
                      pats,
                      fns,
                      users,
                      kiln_calloc((size_t)n, sizeof(kiln_match *)),
                      0,
                      kiln_calloc((size_t)cur->n + 1, sizeof(int)),
                      NULL,
                      0};
        char *live = kiln_calloc((size_t)cur->n + 1, 1);
        int ok = R.ms && R.uses && live;
        /* uses by live nodes only: dead code (removed later) reads nothing */
        for (int k = 0; ok && k < cur->nout; k++) {
            R.uses[cur->outs[k]]++;
            live[cur->outs[k]] = 1;
        }
        for (int id = cur->n - 1; ok && id >= 0; id--)
            for (int i = 0; live[id] && i < cur->nodes[id]->nin; i++) {
                R.uses[cur->nodes[id]->in[i]]++;
                live[cur->nodes[id]->in[i]] = 1;
            }
        free(live);
        for (int k = 0; k < n && ok; k++)
            ok = (R.ms[k] = match_new(pats[k]->set, cur)) != NULL;
        struct kiln_graph *next = ok ? pass_rebuild(cur, rewrite_node, &R) : NULL;
        for (int k = 0; k < n && R.ms; k++)
            kiln_match_free(R.ms[k]);
        free(R.ms);
        free(R.uses);
        char *seed =
            next && R.keep_cap < next->n ? kiln_realloc(R.keep, (size_t)next->n + 1) : R.keep;
        if (seed && next && R.keep_cap < next->n)
            memset(seed + R.keep_cap, 0, (size_t)(next->n + 1 - R.keep_cap));
        struct kiln_graph *clean = next && R.changed ? dead_code_seeded(next, seed) : next;
        free(seed ? seed : R.keep);
        if (clean != next)
            kiln_graph_free(next);
        if (cur != g)
            kiln_graph_free(cur);
        if (!clean || !R.changed || (!settle && round + 1 == max_rounds))
            return clean;
        cur = clean;
    }
    if (cur != g)
        kiln_graph_free(cur);
    kiln_set_error(KILN_ERR_INVALID,
                   "rewrite: still matching after %d rounds (a rewrite that "
                   "makes what it matches?)",
                   max_rounds);
    return NULL;
}

struct kiln_graph *pattern_rewrite_all(const struct kiln_graph *g, int n,
                                       const kiln_pattern *const *pats,
                                       const pattern_rewrite_fn *fns, void *const *users) {
    return rewrite_rounds(g, n, pats, fns, users, REWRITE_MAX_ROUNDS, 1);
}

/* kiln_graph_rewrite (settle: to a fixed point) and kiln_graph_rewrite_once. */
static kiln_graph *rewrite_public(const kiln_graph *g, const kiln_pattern *p, kiln_rewrite_fn cb,
                                  void *user, int settle) {
    if (!g || !p || !cb) {
        kiln_set_error(KILN_ERR_INVALID, "rewrite: needs a graph, a pattern and a callback");
        return NULL;
    }
    if (kiln_graph_infer_types((kiln_graph *)g) != KILN_OK)
        return NULL;
    pattern_rewrite_fn fn = cb;
    return rewrite_rounds(g, 1, &p, &fn, &user, settle ? REWRITE_MAX_ROUNDS : 1, settle);
}

kiln_graph *kiln_graph_rewrite(const kiln_graph *g, const kiln_pattern *p, kiln_rewrite_fn cb,
                               void *user) {
    return rewrite_public(g, p, cb, user, 1);
}

kiln_graph *kiln_graph_rewrite_once(const kiln_graph *g, const kiln_pattern *p, kiln_rewrite_fn cb,
                                    void *user) {
    return rewrite_public(g, p, cb, user, 0);
}

/* ---- partitioning into composite functions ---------------------------------------- */

typedef struct {
    int *region; /* node -> region, -1 */
    int *root;   /* region -> its root node */
    const gattr *attrs;
    int nattr;
} parts;

/* A variable of body b standing for node src of g (a tensor). */
static int body_var(struct kiln_graph *b, const gnode *src, int k) {
    char nm[48];
    snprintf(nm, sizeof nm, "FunctionVar_%d", k);
    const gtensor_type *t = &src->type.t[0];
    int64_t dims[KILN_MAX_NDIM];
    const char *syms[KILN_MAX_NDIM];
    for (int d = 0; d < t->ndim; d++) {
        dims[d] = t->dims[d].sym ? -1 : t->dims[d].v;
        syms[d] = t->dims[d].sym;
    }
    return kiln_graph_var(b, nm, t->dtype, t->ndim, dims, syms);
}

int pattern_make_function(struct kiln_graph *r, const struct kiln_graph *g, const int *members,
                          int nmembers, const int *outs, int nout, const int *map, const char *op,
                          const gattr *attrs, int nattr, const char *name) {
    struct kiln_graph *b = graph_new(g->ops);
    int *bmap = kiln_malloc(sizeof(int) * (size_t)g->n);
    int *args = kiln_malloc(sizeof(int) * (size_t)g->n);
    gattr *all = kiln_malloc(sizeof(gattr) * (size_t)(nattr + 1));
    int nargs = 0, id = -1;
    if (!b || !bmap || !args || !all)
        goto done;
    for (int i = 0; i < g->n; i++)
        bmap[i] = -2; /* -2: not in the body yet */
    for (int k = 0; k < nmembers; k++)
        bmap[members[k]] = -3; /* a member, not made yet */
    for (int k = 0; k < nmembers; k++) {
        const gnode *n = g->nodes[members[k]];
        for (int i = 0; i < n->nin; i++) {
            int src = n->in[i];
            if (bmap[src] != -2)
                continue;
            const gnode *s = g->nodes[src];
            if (!s->type.known || s->type.is_tuple || s->type.n != 1) {
                kiln_set_error(KILN_ERR_UNSUPPORTED, "a function's argument '%s' is a tuple",
                               s->name);
                goto done;
            }
            if ((bmap[src] = body_var(b, s, nargs)) < 0)
                goto done;
            args[nargs++] = map[src];
        }
        if ((bmap[n->id] = graph_copy_node(b, n, bmap)) < 0)
            goto done;
    }
    int bouts[256];
    for (int k = 0; k < nout && k < 256; k++)
        bouts[k] = bmap[outs[k]];
    if (nout > 256 || kiln_graph_set_outputs(b, nout, bouts, NULL) != KILN_OK ||
        kiln_graph_infer_types(b) != KILN_OK)
        goto done;
    memcpy(all, attrs, sizeof(gattr) * (size_t)nattr);
    all[nattr] = (gattr){.name = "body", .kind = GA_GRAPH, .graph = b};
    const kiln_op_def *def = op_registry_find(g->ops, op);
    if (!def) {
        kiln_set_error(KILN_ERR_INVALID, "no op '%s'", op);
        goto done;
    }
    id = graph_add(r, GN_CALL, def, nargs, args, nattr + 1, all, name);
    if (id >= 0 && graph_infer_node(r, id) != KILN_OK)
        id = -1;
done:
    kiln_graph_free(b);
    free(bmap);
    free(args);
    free(all);
    return id;
}

static int partition_node(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                          const int *map, void *user) {
    parts *P = user;
    int k = P->region[n->id];
    if (k < 0)
        return REBUILD_COPY;
    if (P->root[k] != n->id)
        return REBUILD_DROP; /* made inside the function at the root */
    int *members = kiln_malloc(sizeof(int) * (size_t)(n->id + 1));
    if (!members)
        return -1;
    int nm = 0;
    for (int id = 0; id <= n->id; id++)
        if (P->region[id] == k)
            members[nm++] = id;
    int v = pattern_make_function(r, g, members, nm, &n->id, 1, map, "composite", P->attrs,
                                  P->nattr, n->name);
    free(members);
    return v;
}

kiln_graph *kiln_graph_partition(const kiln_graph *g, const kiln_pattern *p, const char *attrs,
                                 kiln_pattern_pred check, void *user) {
    if (!g || !p) {
        kiln_set_error(KILN_ERR_INVALID, "partition: needs a graph and a pattern");
        return NULL;
    }
    if (kiln_graph_infer_types((kiln_graph *)g) != KILN_OK)
        return NULL;
    gattr *parsed = NULL;
    int nattr = graph_parse_attrs(p->set->scratch, attrs ? attrs : "", &parsed);
    if (nattr < 0)
        return NULL;
    if (!graph_attr(&(gnode){.nattr = nattr, .attrs = parsed}, "Composite")) {
        kiln_set_error(KILN_ERR_INVALID, "partition: the attributes need Composite=\"NAME\"");
        return NULL;
    }
    size_t nn = (size_t)(g->n ? g->n : 1);
    parts P = {kiln_malloc(sizeof(int) * nn), kiln_malloc(sizeof(int) * nn), parsed, nattr};
    int *uses = kiln_calloc(nn, sizeof(int)), *reads = kiln_calloc(nn, sizeof(int));
    kiln_match *m = match_new(p->set, g);
    struct kiln_graph *r = NULL;
    if (!P.region || !P.root || !uses || !reads || !m)
        goto done;
    for (int id = 0; id < g->n; id++) {
        P.region[id] = -1;
        for (int i = 0; i < g->nodes[id]->nin; i++)
            uses[g->nodes[id]->in[i]]++;
    }
    for (int k = 0; k < g->nout; k++)
        uses[g->outs[k]]++;
    int nregions = 0;
    for (int id = g->n - 1; id >= 0; id--) {
        /* a match whose inner nodes are read outside it, tried again with
           the commutative calls' arguments the other way round (a residual
           add whose first operand is also read elsewhere) */
        int ok = 0;
        for (int order = 0; order < 2 && !ok; order++) {
            m->swapped_first = order;
            if (g->nodes[id]->kind != GN_CALL || P.region[id] >= 0 || !match_run(m, p, id) ||
                !m->inner[id])
                break;
            /* reads[x]: how often the match's nodes read x; an inner node
               read outside the match would be computed twice */
            for (int j = 0; j < m->ninner; j++)
                for (int i = 0; i < g->nodes[m->inner_list[j]]->nin; i++)
                    reads[g->nodes[m->inner_list[j]]->in[i]]++;
            ok = 1;
            for (int j = 0; j < m->ninner && ok; j++) {
                int x = m->inner_list[j];
                ok = P.region[x] < 0 && !g->nodes[x]->type.is_tuple &&
                     (x == id || reads[x] == uses[x]);
            }
            for (int j = 0; j < m->ninner; j++)
                for (int i = 0; i < g->nodes[m->inner_list[j]]->nin; i++)
                    reads[g->nodes[m->inner_list[j]]->in[i]] = 0;
        }
        if (!ok || (check && check(g, id, user) != 1))
            continue;
        for (int j = 0; j < m->ninner; j++)
            P.region[m->inner_list[j]] = nregions;
        P.root[nregions++] = id;
    }
    r = pass_rebuild(g, partition_node, &P);
done:
    kiln_match_free(m);
    free(P.region);
    free(P.root);
    free(uses);
    free(reads);
    return r;
}
