/* graph.c: graph construction. graph_add checks every call against its op's
 * row (arity, attribute names and kinds) so a malformed graph cannot be
 * built; types are left unknown for InferType. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/ffi_internal.h"
#include "../runtime/runtime_internal.h"
#include "graph_internal.h"

/* ---- op registry ------------------------------------------------------- */

const kiln_op_def *op_registry_find(const kiln_op_registry *r, const char *name) {
    for (int i = 0; r && i < r->n; i++)
        if (strcmp(r->ops[i]->name, name) == 0)
            return r->ops[i];
    return NULL;
}

kiln_status op_registry_add(kiln_op_registry *r, const kiln_op_def *def) {
    if (!def || !def->name || !*def->name || !def->rel || def->min_in < 0 ||
        def->max_in < def->min_in)
        return kiln_set_error(KILN_ERR_INVALID, "op registration: incomplete op row '%s'",
                              def && def->name ? def->name : "(null)");
    if (op_registry_find(r, def->name))
        return kiln_set_error(KILN_ERR_INVALID, "op registration: '%s' is already registered",
                              def->name);
    if (r->n == r->cap) {
        int ncap = r->cap ? r->cap * 2 : 64;
        const kiln_op_def **n = kiln_realloc((void *)r->ops, sizeof(*n) * (size_t)ncap);
        if (!n)
            return KILN_ERR_NOMEM;
        r->ops = n;
        r->cap = ncap;
    }
    r->ops[r->n++] = def;
    return KILN_OK;
}

/* ---- graphs ------------------------------------------------------------------ */

struct kiln_graph *graph_new(const kiln_op_registry *ops) {
    struct kiln_graph *g = kiln_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->refs = 1;
    g->arena = arena_new();
    g->ops = ops;
    if (!g->arena) {
        free(g);
        return NULL;
    }
    return g;
}

struct kiln_graph *graph_retain(struct kiln_graph *g) {
    if (g)
        g->refs++;
    return g;
}

void kiln_graph_free(kiln_graph *g) {
    if (!g || --g->refs > 0)
        return;
    for (int i = 0; i < g->nsubs; i++)
        kiln_graph_free(g->subs[i]);
    free((void *)g->subs);
    for (int i = 0; i < g->n; i++)
        kiln_ndarray_free(g->nodes[i]->value);
    free(g->nodes);
    arena_free(g->arena);
    free(g);
}

gnode *graph_node(const struct kiln_graph *g, int id) {
    return (g && id >= 0 && id < g->n) ? g->nodes[id] : NULL;
}

int kiln_graph_num_nodes(const kiln_graph *g) {
    return g ? g->n : 0;
}

static const gnode *node_at(const kiln_graph *g, int id) {
    return g && id >= 0 && id < g->n ? g->nodes[id] : NULL;
}

const char *kiln_graph_node_op(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    static const char *const kinds[] = {"var", "const", "", "tuple", "tuple_get"};
    return !n ? NULL : n->kind == GN_CALL ? n->op->name : kinds[n->kind];
}

const char *kiln_graph_node_name(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    return n ? (n->name ? n->name : "") : NULL;
}

int kiln_graph_node_num_inputs(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    return n ? n->nin : -1;
}

int kiln_graph_node_input(const kiln_graph *g, int id, int i) {
    const gnode *n = node_at(g, id);
    return n && i >= 0 && i < n->nin ? n->in[i] : -1;
}

const kiln_ndarray *kiln_graph_node_value(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    return n && n->kind == GN_CONST ? n->value : NULL;
}

int64_t kiln_graph_node_attr_int(const kiln_graph *g, int id, const char *name, int64_t def) {
    const gnode *n = node_at(g, id);
    return n && n->kind == GN_CALL && name ? graph_attr_int(n, name, def) : def;
}

double kiln_graph_node_attr_float(const kiln_graph *g, int id, const char *name, double def) {
    const gnode *n = node_at(g, id);
    return n && n->kind == GN_CALL && name ? graph_attr_float(n, name, def) : def;
}

const char *kiln_graph_node_attr_str(const kiln_graph *g, int id, const char *name,
                                     const char *def) {
    const gnode *n = node_at(g, id);
    return n && n->kind == GN_CALL && name ? graph_attr_str(n, name, def) : def;
}

char *kiln_graph_node_attrs(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    kstr s;
    kstr_init(&s);
    for (int i = 0; n && n->kind == GN_CALL && i < n->nattr; i++) {
        if (n->attrs[i].kind == GA_GRAPH)
            continue;
        if (s.len)
            kstr_puts(&s, ", ");
        graph_print_attr(&s, &n->attrs[i]);
    }
    char *out = kstr_take(&s);
    return out ? out : kiln_strdup("");
}

static const gtensor_type *node_tensor(const kiln_graph *g, int id) {
    const gnode *n = node_at(g, id);
    return n && n->type.known && !n->type.is_tuple && n->type.n == 1 ? &n->type.t[0] : NULL;
}

kiln_dtype kiln_graph_node_dtype(const kiln_graph *g, int id) {
    const gtensor_type *t = node_tensor(g, id);
    return t ? t->dtype : KILN_DTYPE_COUNT;
}

int kiln_graph_node_ndim(const kiln_graph *g, int id) {
    const gtensor_type *t = node_tensor(g, id);
    return t ? t->ndim : -1;
}

int64_t kiln_graph_node_dim(const kiln_graph *g, int id, int d) {
    const gtensor_type *t = node_tensor(g, id);
    return t && d >= 0 && d < t->ndim && !t->dims[d].sym ? t->dims[d].v : -1;
}

const char *graph_node_label(const gnode *n, char *buf, size_t cap) {
    const char *what = n->kind == GN_CALL    ? n->op->name
                       : n->kind == GN_VAR   ? "input"
                       : n->kind == GN_CONST ? "constant"
                       : n->kind == GN_TUPLE ? "tuple"
                                             : "tuple-get";
    if (n->name && *n->name)
        snprintf(buf, cap, "node '%s' (%s)", n->name, what);
    else
        snprintf(buf, cap, "node %%%d (%s)", n->id, what);
    return buf;
}

static const attr_schema *schema_find(const kiln_op_def *op, const char *name) {
    for (const attr_schema *s = op->attrs; s && s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

static const char *kind_name(gattr_kind k) {
    static const char *names[] = {"int", "float", "int list", "float list", "string", "graph"};
    return names[k];
}

/* Check a call's attributes against the op's schema; ints are accepted
 * where floats are expected (and converted). */
static int check_attrs(struct kiln_graph *g, const kiln_op_def *op, int nattr, gattr *attrs,
                       const char *name) {
    for (int i = 0; i < nattr; i++) {
        const attr_schema *s = schema_find(op, attrs[i].name);
        if (!s) {
            kiln_set_error(KILN_ERR_INVALID, "%s '%s': unknown attribute '%s'", op->name, name,
                           attrs[i].name);
            return 0;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(attrs[j].name, attrs[i].name) == 0) {
                kiln_set_error(KILN_ERR_INVALID, "%s '%s': attribute '%s' is given twice", op->name,
                               name, attrs[i].name);
                return 0;
            }
        gattr *a = &attrs[i];
        if (a->kind == s->kind)
            continue;
        if (s->kind == GA_FLOAT && a->kind == GA_INT) {
            a->kind = GA_FLOAT;
            a->f = (double)a->i;
        } else if (s->kind == GA_FLOATS && a->kind == GA_INTS) {
            double *f = arena_alloc(g->arena, sizeof(double) * (size_t)(a->n ? a->n : 1));
            for (int k = 0; k < a->n; k++)
                f[k] = (double)a->ints[k];
            a->floats = f;
            a->kind = GA_FLOATS;
        } else if ((s->kind == GA_INTS || s->kind == GA_FLOATS) && a->n == 0 &&
                   (a->kind == GA_INTS || a->kind == GA_FLOATS)) {
            a->kind = s->kind; /* [] */
        } else {
            kiln_set_error(KILN_ERR_INVALID, "%s '%s': attribute '%s' must be a %s, not a %s",
                           op->name, name, a->name, kind_name(s->kind), kind_name(a->kind));
            return 0;
        }
    }
    for (const attr_schema *s = op->attrs; s && s->name; s++) {
        if (!s->required)
            continue;
        int found = 0;
        for (int i = 0; i < nattr; i++)
            found |= strcmp(attrs[i].name, s->name) == 0;
        if (!found) {
            kiln_set_error(KILN_ERR_INVALID, "%s '%s': required attribute '%s' is missing",
                           op->name, name, s->name);
            return 0;
        }
    }
    return 1;
}

/* Record a reference to sub-graph s in g; 0 if out of memory. */
static int hold_sub(struct kiln_graph *g, struct kiln_graph *s) {
    if (s == g)
        return kiln_set_error(KILN_ERR_INVALID, "a graph cannot be its own body"), 0;
    if (g->nsubs == g->subs_cap) {
        int ncap = g->subs_cap ? g->subs_cap * 2 : 4;
        struct kiln_graph **n = kiln_realloc((void *)g->subs, sizeof(*n) * (size_t)ncap);
        if (!n)
            return 0;
        g->subs = n;
        g->subs_cap = ncap;
    }
    g->subs[g->nsubs++] = graph_retain(s);
    return 1;
}

int graph_add(struct kiln_graph *g, gnode_kind kind, const kiln_op_def *op, int nin, const int *in,
              int nattr, const gattr *attrs, const char *name) {
    if (!g)
        return kiln_set_error(KILN_ERR_INVALID, "graph is NULL"), -1;
    name = name ? name : "";
    if (nin < 0 || nin > 4096 || (nin && !in))
        return kiln_set_error(KILN_ERR_INVALID, "node '%s': bad input count %d", name, nin), -1;
    for (int i = 0; i < nin; i++)
        if (in[i] < 0 || in[i] >= g->n)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "node '%s': input %d refers to node %d, "
                                  "which does not exist (yet)",
                                  name, i, in[i]),
                   -1;
    if (kind == GN_CALL) {
        if (!op)
            return kiln_set_error(KILN_ERR_INVALID, "node '%s': no op", name), -1;
        if (nin < op->min_in || nin > op->max_in) {
            if (op->min_in == op->max_in)
                kiln_set_error(KILN_ERR_INVALID, "%s '%s': takes %d inputs, got %d", op->name, name,
                               op->min_in, nin);
            else
                kiln_set_error(KILN_ERR_INVALID, "%s '%s': takes %d to %d inputs, got %d", op->name,
                               name, op->min_in, op->max_in, nin);
            return -1;
        }
    }
    if (g->n == g->cap) {
        int ncap = g->cap ? g->cap * 2 : 64;
        gnode **nn = kiln_realloc(g->nodes, sizeof(gnode *) * (size_t)ncap);
        if (!nn)
            return -1;
        g->nodes = nn;
        g->cap = ncap;
    }
    gnode *n = arena_alloc(g->arena, sizeof *n);
    n->graph = g;
    n->id = g->n;
    n->kind = kind;
    n->op = op;
    n->nin = nin;
    int *ins = arena_alloc(g->arena, sizeof(int) * (size_t)(nin ? nin : 1));
    if (nin)
        memcpy(ins, in, sizeof(int) * (size_t)nin);
    n->in = ins;
    gattr *as = arena_alloc(g->arena, sizeof(gattr) * (size_t)(nattr ? nattr : 1));
    for (int i = 0; i < nattr; i++) {
        as[i] = attrs[i];
        as[i].name = arena_strdup(g->arena, attrs[i].name);
        if (attrs[i].s)
            as[i].s = arena_strdup(g->arena, attrs[i].s);
        if (attrs[i].n && attrs[i].ints) {
            int64_t *v = arena_alloc(g->arena, sizeof(int64_t) * (size_t)attrs[i].n);
            memcpy(v, attrs[i].ints, sizeof(int64_t) * (size_t)attrs[i].n);
            as[i].ints = v;
        }
        if (attrs[i].n && attrs[i].floats) {
            double *v = arena_alloc(g->arena, sizeof(double) * (size_t)attrs[i].n);
            memcpy(v, attrs[i].floats, sizeof(double) * (size_t)attrs[i].n);
            as[i].floats = v;
        }
        if (attrs[i].kind == GA_GRAPH && !attrs[i].graph)
            return kiln_set_error(KILN_ERR_INVALID, "node '%s': attribute '%s' has no graph", name,
                                  attrs[i].name),
                   -1;
    }
    if (kind == GN_CALL && !check_attrs(g, op, nattr, as, name))
        return -1;
    for (int i = 0; i < nattr; i++) /* the graph holds its bodies */
        if (as[i].kind == GA_GRAPH && !hold_sub(g, as[i].graph))
            return -1;
    n->nattr = nattr;
    n->attrs = as;
    n->name = arena_strdup(g->arena, name);
    g->nodes[g->n++] = n;
    return n->id;
}

/* ---- attributes -------------------------------------------------------------- */

const gattr *graph_attr(const gnode *n, const char *name) {
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

/* The schema default of an attribute, parsed (NULL if none). */
static const gattr *schema_default(const gnode *n, const char *name) {
    if (n->kind != GN_CALL)
        return NULL;
    const attr_schema *s = schema_find(n->op, name);
    if (!s || !s->def)
        return NULL;
    return graph_default_attr(n->op, s);
}

int64_t graph_attr_int(const gnode *n, const char *name, int64_t def) {
    const gattr *a = graph_attr(n, name);
    if (!a)
        a = schema_default(n, name);
    return a && a->kind == GA_INT ? a->i : def;
}

double graph_attr_float(const gnode *n, const char *name, double def) {
    const gattr *a = graph_attr(n, name);
    if (!a)
        a = schema_default(n, name);
    return a && a->kind == GA_FLOAT ? a->f : a && a->kind == GA_INT ? (double)a->i : def;
}

int graph_attr_ints(const gnode *n, const char *name, int64_t *out, int cap) {
    const gattr *a = graph_attr(n, name);
    if (!a)
        a = schema_default(n, name);
    if (!a || a->kind != GA_INTS)
        return -1;
    for (int i = 0; i < a->n && i < cap; i++)
        out[i] = a->ints[i];
    return a->n;
}

struct kiln_graph *graph_attr_graph(const gnode *n, const char *name) {
    const gattr *a = graph_attr(n, name);
    return a && a->kind == GA_GRAPH ? a->graph : NULL;
}

const char *graph_attr_str(const gnode *n, const char *name, const char *def) {
    const gattr *a = graph_attr(n, name);
    if (!a)
        a = schema_default(n, name);
    return a && a->kind == GA_STR ? a->s : def;
}

/* ---- types ------------------------------------------------------------------ */

int graph_is_size_name(const char *s, size_t max_len) {
    int ok = s && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_');
    for (const char *c = s; ok && *c; c++)
        ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
             *c == '_';
    return ok && strlen(s) <= max_len;
}

gtype gtype_tensor(struct kiln_graph *g, kiln_dtype dt, int ndim, const gdim *dims) {
    gtype t = {1, 0, 1, arena_alloc(g->arena, sizeof(gtensor_type))};
    t.t->dtype = dt;
    t.t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.t->dims[i] = dims[i];
    return t;
}

int gtype_size_ok(const gtype *t, char *why, size_t cap) {
    for (int i = 0; t->known && i < t->n; i++) {
        const gtensor_type *x = &t->t[i];
        int64_t n = 1;
        for (int d = 0; d < x->ndim; d++) {
            if (x->dims[d].sym)
                continue;
            if (x->dims[d].v < 0) {
                snprintf(why, cap, "dim %d is negative (%lld)", d, (long long)x->dims[d].v);
                return 0;
            }
            if (x->dims[d].v > GRAPH_MAX_ELEMENTS || __builtin_mul_overflow(n, x->dims[d].v, &n) ||
                n > GRAPH_MAX_ELEMENTS) {
                snprintf(why, cap, "the %s has more than 2^48 elements (or a dim over 2^48)",
                         t->is_tuple ? "a tuple field" : "tensor");
                return 0;
            }
        }
    }
    return 1;
}

int gdim_equal(gdim a, gdim b) {
    if (a.sym || b.sym)
        return a.sym && b.sym && strcmp(a.sym, b.sym) == 0;
    return a.v == b.v;
}

int gtype_equal(const gtype *a, const gtype *b) {
    if (a->known != b->known || a->n != b->n || a->is_tuple != b->is_tuple)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const gtensor_type *x = &a->t[i], *y = &b->t[i];
        if (x->dtype != y->dtype || x->ndim != y->ndim)
            return 0;
        for (int d = 0; d < x->ndim; d++)
            if (!gdim_equal(x->dims[d], y->dims[d]))
                return 0;
    }
    return 1;
}

/* A symbolic dim: bare if it is an identifier, else quoted (the parser
 * reads both). */
static void print_dim_name(kstr *out, const char *s) {
    int ident = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_';
    for (const char *c = s; *c && ident; c++)
        ident = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                (*c >= '0' && *c <= '9') || *c == '.';
    /* "inf"/"nan" lex as numbers */
    if (ident &&
        (!strcmp(s, "inf") || !strcmp(s, "inff") || !strcmp(s, "nan") || !strcmp(s, "nanf")))
        ident = 0;
    if (ident) {
        kstr_puts(out, s);
        return;
    }
    kstr_putc(out, '"');
    for (const char *c = s; *c; c++) {
        /* '*' '/' would end the comment the type is printed in */
        if (*c == '"' || *c == '\\' || (*c == '/' && c > s && c[-1] == '*'))
            kstr_putc(out, '\\');
        if (*c == '\n') {
            kstr_puts(out, "\\n");
            continue;
        }
        kstr_putc(out, *c);
    }
    kstr_putc(out, '"');
}

static void tensor_type_print(kstr *out, const gtensor_type *t) {
    kstr_puts(out, "Tensor[(");
    for (int d = 0; d < t->ndim; d++) {
        if (d)
            kstr_puts(out, ", ");
        if (t->dims[d].sym)
            print_dim_name(out, t->dims[d].sym);
        else
            kstr_printf(out, "%lld", (long long)t->dims[d].v);
    }
    if (t->ndim == 1)
        kstr_putc(out, ',');
    kstr_printf(out, "), %s]", kiln_dtype_name(t->dtype));
}

void gtype_print(kstr *out, const gtype *t) {
    if (!t->known) {
        kstr_puts(out, "?");
        return;
    }
    if (!t->is_tuple) {
        tensor_type_print(out, &t->t[0]);
        return;
    }
    kstr_putc(out, '(');
    for (int i = 0; i < t->n; i++) {
        if (i)
            kstr_puts(out, ", ");
        tensor_type_print(out, &t->t[i]);
    }
    if (t->n == 1)
        kstr_putc(out, ',');
    kstr_putc(out, ')');
}

/* ---- the public builder -------------------------------------------------------- */

int kiln_graph_var(kiln_graph *g, const char *name, kiln_dtype dt, int ndim, const int64_t *dims,
                   const char *const *sym_names) {
    if (!g)
        return -1;
    if (!name || !*name)
        return kiln_set_error(KILN_ERR_INVALID, "graph var: needs a name"), -1;
    if (ndim < 0 || ndim > KILN_MAX_NDIM || (ndim && !dims))
        return kiln_set_error(KILN_ERR_INVALID, "graph var '%s': rank %d is not in 0..%d", name,
                              ndim, KILN_MAX_NDIM),
               -1;
    if (!kiln_dtype_is_data(dt))
        return kiln_set_error(KILN_ERR_INVALID, "graph var '%s': invalid dtype", name), -1;
    gdim dd[KILN_MAX_NDIM];
    for (int i = 0; i < ndim; i++) {
        dd[i].v = dims[i];
        dd[i].sym = NULL;
        if (dims[i] < 0) {
            const char *s = sym_names ? sym_names[i] : NULL;
            if (!s || !*s)
                return kiln_set_error(KILN_ERR_INVALID,
                                      "graph var '%s': dim %d is symbolic "
                                      "but has no name",
                                      name, i),
                       -1;
            /* the name of a size variable in kernels and in mod.json */
            if (!graph_is_size_name(s, 63))
                return kiln_set_error(KILN_ERR_INVALID,
                                      "graph var '%s': dim %d's name '%s' is not an identifier "
                                      "([A-Za-z_][A-Za-z0-9_]*, at most 63 characters)",
                                      name, i, s),
                       -1;
            dd[i].sym = arena_strdup(g->arena, s);
            dd[i].v = -1;
        }
    }
    gtensor_type tt = {dt, ndim, {{0}}};
    memcpy(tt.dims, dd, sizeof(gdim) * (size_t)ndim);
    char why[96];
    if (!gtype_size_ok(&(gtype){1, 0, 1, &tt}, why, sizeof why))
        return kiln_set_error(KILN_ERR_INVALID, "graph var '%s': %s", name, why), -1;
    int id = graph_add(g, GN_VAR, NULL, 0, NULL, 0, NULL, name);
    if (id >= 0)
        g->nodes[id]->type = gtype_tensor(g, dt, ndim, dd);
    return id;
}

int graph_const_take(struct kiln_graph *g, const char *name, kiln_ndarray *value) {
    if (!value)
        return -1;
    int id = graph_add(g, GN_CONST, NULL, 0, NULL, 0, NULL, name);
    if (id < 0) {
        kiln_ndarray_free(value);
        return -1;
    }
    int nd = kiln_ndarray_ndim(value);
    gdim dd[KILN_MAX_NDIM];
    for (int i = 0; i < nd; i++)
        dd[i] = (gdim){kiln_ndarray_dim(value, i), NULL};
    g->nodes[id]->value = value;
    g->nodes[id]->type = gtype_tensor(g, kiln_ndarray_dtype(value), nd, dd);
    return id;
}

int kiln_graph_const(kiln_graph *g, const char *name, const kiln_ndarray *value) {
    if (!g)
        return -1;
    if (!value)
        return kiln_set_error(KILN_ERR_INVALID, "graph const '%s': no value", name ? name : ""), -1;
    return graph_const_take(g, name, ndarray_clone(value));
}

int kiln_graph_call(kiln_graph *g, const char *op, int nin, const int *in, const char *attrs,
                    const char *name) {
    if (!g)
        return -1;
    const kiln_op_def *def = op ? op_registry_find(g->ops, op) : NULL;
    if (!def)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "unknown op '%s'", op ? op : "(null)"), -1;
    gattr *as = NULL;
    int na = 0;
    if (attrs && *attrs) {
        na = graph_parse_attrs(g, attrs, &as);
        if (na < 0) {
            kiln_error_prefix("%s '%s': attributes", def->name, name ? name : "");
            return -1;
        }
    }
    return graph_add(g, GN_CALL, def, nin, in, na, as, name);
}

int kiln_graph_tuple(kiln_graph *g, int n, const int *in, const char *name) {
    return graph_add(g, GN_TUPLE, NULL, n, in, 0, NULL, name);
}

int kiln_graph_tuple_get(kiln_graph *g, int tuple, int index, const char *name) {
    if (index < 0)
        return kiln_set_error(KILN_ERR_INVALID, "tuple_get: negative index %d", index), -1;
    /* an element of a tuple built here is that element (Relay folds
       TupleGetItem(Tuple) the same way): outputs and ops then see tensors */
    if (g && tuple >= 0 && tuple < g->n && g->nodes[tuple]->kind == GN_TUPLE) {
        if (index >= g->nodes[tuple]->nin)
            return kiln_set_error(KILN_ERR_INVALID, "tuple_get: index %d of a tuple of %d", index,
                                  g->nodes[tuple]->nin),
                   -1;
        return g->nodes[tuple]->in[index];
    }
    int id = graph_add(g, GN_TUPLE_GET, NULL, 1, &tuple, 0, NULL, name);
    if (id >= 0)
        g->nodes[id]->index = index;
    return id;
}

kiln_status kiln_graph_set_outputs(kiln_graph *g, int n, const int *nodes,
                                   const char *const *names) {
    if (!g)
        return KILN_ERR_INVALID;
    if (n < 1 || !nodes)
        return kiln_set_error(KILN_ERR_INVALID, "graph needs at least one output");
    int *outs = arena_alloc(g->arena, sizeof(int) * (size_t)n);
    const char **nm = arena_alloc(g->arena, sizeof(char *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (nodes[i] < 0 || nodes[i] >= g->n)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "graph output %d refers to node %d, which "
                                  "does not exist",
                                  i, nodes[i]);
        outs[i] = nodes[i];
        char buf[32];
        snprintf(buf, sizeof buf, "output%d", i);
        nm[i] = arena_strdup(g->arena, names && names[i] ? names[i] : buf);
    }
    g->nout = n;
    g->outs = outs;
    g->out_names = nm;
    return KILN_OK;
}

char *kiln_graph_op_counts(const kiln_graph *g) {
    if (!g)
        return NULL;
    kstr s;
    kstr_init(&s);
    kstr_puts(&s, "inputs:\n");
    for (int id = 0; id < g->n; id++) {
        if (g->nodes[id]->kind != GN_VAR)
            continue;
        kstr_printf(&s, "  %s: ", g->nodes[id]->name);
        gtype_print(&s, &g->nodes[id]->type);
        kstr_putc(&s, '\n');
    }
    kstr_puts(&s, "outputs:\n");
    for (int k = 0; k < g->nout; k++) {
        kstr_printf(&s, "  %s: ", g->out_names[k]);
        gtype_print(&s, &g->nodes[g->outs[k]]->type);
        kstr_putc(&s, '\n');
    }
    kstr_puts(&s, "op counts:\n");
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (n->kind != GN_CALL)
            continue;
        int seen = 0, count = 0;
        for (int j = 0; j < id && !seen; j++)
            seen = g->nodes[j]->kind == GN_CALL && g->nodes[j]->op == n->op;
        if (seen)
            continue;
        for (int j = id; j < g->n; j++)
            count += g->nodes[j]->kind == GN_CALL && g->nodes[j]->op == n->op;
        kstr_printf(&s, "  %-24s %d\n", n->op->name, count);
    }
    return kstr_take(&s);
}

/* ---- copying between graphs (for passes) ----------------------------------------- */

static gtype copy_type(struct kiln_graph *g, const gtype *t) {
    gtype r = *t;
    if (t->known && t->n) {
        gtensor_type *tt = arena_alloc(g->arena, sizeof(gtensor_type) * (size_t)t->n);
        memcpy(tt, t->t, sizeof(gtensor_type) * (size_t)t->n);
        for (int i = 0; i < t->n; i++)
            for (int d = 0; d < tt[i].ndim; d++)
                if (tt[i].dims[d].sym)
                    tt[i].dims[d].sym = arena_strdup(g->arena, tt[i].dims[d].sym);
        r.t = tt;
    }
    return r;
}

int graph_copy_node(struct kiln_graph *g, const gnode *n, const int *map) {
    int in[4096];
    for (int i = 0; i < n->nin; i++) {
        in[i] = map[n->in[i]];
        KILN_ASSERT(in[i] >= 0 && "inputs are copied before their consumers");
    }
    /* constants are immutable: the copy shares the storage (BERT-base's
       440 MB were copied once per pass) */
    if (n->kind == GN_CONST)
        return graph_const_take(g, n->name, ndarray_share(n->value));
    int id = graph_add(g, n->kind, n->op, n->nin, in, n->nattr, n->attrs, n->name);
    if (id < 0)
        return -1;
    g->nodes[id]->index = n->index;
    g->nodes[id]->type = copy_type(g, &n->type);
    return id;
}

kiln_status graph_copy_outputs(struct kiln_graph *dst, const struct kiln_graph *g, const int *map) {
    int outs[4096];
    if (g->nout > 4096)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "more than 4096 outputs");
    for (int k = 0; k < g->nout; k++)
        outs[k] = map[g->outs[k]];
    return kiln_graph_set_outputs(dst, g->nout, outs, g->out_names);
}

/* ---- graphs in value lists (kiln/ffi.h) ---------------------------------------- */

static void free_graph(void *p) {
    kiln_graph_free(p);
}

kiln_status kiln_args_push_graph(kiln_args *a, kiln_graph *g, int take) {
    return ffi_push_object(a, KILN_VALUE_GRAPH, g, take ? free_graph : NULL);
}

kiln_graph *kiln_args_graph(const kiln_args *a, int i) {
    return ffi_object(a, i, KILN_VALUE_GRAPH);
}

kiln_graph *kiln_args_take_graph(kiln_args *a, int i, int *owned) {
    return ffi_take_object(a, i, KILN_VALUE_GRAPH, owned);
}
