/* byoc.c: the four bring-your-own-codegen passes of kiln/byoc.h, with
 * TVM's semantics: MergeComposite, AnnotateTarget, MergeCompilerRegions
 * and PartitionGraph. Regions are read off the annotated graph: calls
 * joined by edges without annotations form one region, whose compiler is
 * that of the compiler_begin it reads or the compiler_end that reads it
 * (AnnotateTarget puts one of each around every call it annotates, and
 * MergeCompilerRegions removes the pairs inside a merged region). Calls
 * left unannotated are kiln's ("default" in TVM, which annotates them too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/byoc.h"
#include "pattern_internal.h"

#define BEGIN_OP "annotation.compiler_begin"
#define END_OP "annotation.compiler_end"

static int is_op(const gnode *n, const char *op) {
    return n->kind == GN_CALL && !strcmp(n->op->name, op);
}

static int is_annotation(const gnode *n) {
    return is_op(n, BEGIN_OP) || is_op(n, END_OP);
}

/* ---- MergeComposite ------------------------------------------------------------ */

struct kiln_graph *pass_merge_composite(const struct kiln_graph *g, int nb,
                                        const kiln_codegen_spec *const *b) {
    struct kiln_graph *cur = (struct kiln_graph *)g;
    for (int i = 0; i < nb; i++)
        for (int k = 0; k < b[i]->npatterns; k++) {
            const kiln_codegen_pattern *row = &b[i]->patterns[k];
            kiln_pattern_set *s = kiln_pattern_set_new(); /* a row's %names are its own */
            kiln_pattern *p = s ? kiln_pattern_parse(s, row->pattern) : NULL;
            char attrs[300];
            snprintf(attrs, sizeof attrs, "Composite=\"%s\", PartitionedFromPattern=\"%s\"",
                     row->name, row->name);
            struct kiln_graph *next =
                p ? kiln_graph_partition(cur, p, attrs, row->check, b[i]->user) : NULL;
            kiln_pattern_set_free(s);
            if (!next) {
                kiln_error_prefix("backend %s, pattern %s", b[i]->name, row->name);
                if (cur != g)
                    kiln_graph_free(cur);
                return NULL;
            }
            if (cur != g)
                kiln_graph_free(cur);
            cur = next;
        }
    return cur == g ? pass_rebuild(g, NULL, NULL) : cur;
}

/* ---- AnnotateTarget ----------------------------------------------------------------- */

typedef struct {
    int nb;
    const kiln_codegen_spec *const *b;
} annotate;

/* The backend that takes call n, or -1. */
static int target_of(const annotate *A, const struct kiln_graph *g, const gnode *n) {
    if (n->kind != GN_CALL || is_annotation(n) || n->op->external || n->op->control ||
        !n->type.known || n->type.is_tuple)
        return -1;
    for (int i = 0; i < n->nin; i++)
        if (g->nodes[n->in[i]]->type.is_tuple)
            return -1;
    for (int k = 0; k < A->nb; k++) {
        const kiln_codegen_spec *b = A->b[k];
        if (is_op(n, "composite")) {
            const char *c = graph_attr_str(n, "Composite", "");
            size_t len = strlen(b->name);
            if (!strncmp(c, b->name, len) && c[len] == '.')
                return k;
        } else if (b->supported && b->supported(g, n->id, b->user) == 1) {
            return k;
        }
    }
    return -1;
}

static int annotation(struct kiln_graph *r, const char *op, int in, const char *compiler,
                      const char *name) {
    char attrs[200];
    snprintf(attrs, sizeof attrs, "compiler=\"%s\"", compiler);
    int id = kiln_graph_call(r, op, 1, &in, attrs, name);
    return id < 0 || graph_infer_node(r, id) != KILN_OK ? -1 : id;
}

static int annotate_node(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                         const int *map, void *user) {
    int k = target_of(user, g, n);
    if (k < 0)
        return REBUILD_COPY;
    const char *c = ((annotate *)user)->b[k]->name;
    int in[4096];
    for (int i = 0; i < n->nin && i < 4096; i++)
        if ((in[i] = annotation(r, BEGIN_OP, map[n->in[i]], c, g->nodes[n->in[i]]->name)) < 0)
            return -1;
    int id = graph_add(r, GN_CALL, n->op, n->nin, in, n->nattr, n->attrs, n->name);
    if (id < 0 || graph_infer_node(r, id) != KILN_OK)
        return -1;
    return annotation(r, END_OP, id, c, n->name);
}

struct kiln_graph *pass_annotate_target(const struct kiln_graph *g, int nb,
                                        const kiln_codegen_spec *const *b) {
    annotate A = {nb, b};
    return pass_rebuild(g, annotate_node, &A);
}

/* ---- regions ----------------------------------------------------------------------
 * comp[id]: the region of call id (the id of one of its members), -1 for
 * nodes in no region; compiler[id]: its region's compiler (a string of the
 * graph). 0 when out of memory. */

static int regions(const struct kiln_graph *g, int *comp, const char **compiler) {
    int *rep = kiln_malloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
    if (!rep)
        return 0;
    for (int id = 0; id < g->n; id++) {
        rep[id] = id;
        compiler[id] = NULL;
    }
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (n->kind != GN_CALL)
            continue;
        for (int i = 0; i < n->nin; i++) {
            const gnode *x = g->nodes[n->in[i]];
            if (is_op(n, END_OP) && !is_annotation(x))
                compiler[x->id] = graph_attr_str(n, "compiler", "");
            else if (is_op(x, BEGIN_OP) && !is_annotation(n))
                compiler[id] = graph_attr_str(x, "compiler", "");
            else if (x->kind == GN_CALL && !is_annotation(n) && !is_annotation(x))
                rep[pass_find(rep, id)] = pass_find(rep, x->id); /* a direct edge: one region */
        }
    }
    for (int id = 0; id < g->n; id++) { /* a region's compiler is any member's */
        int c = pass_find(rep, id);
        if (compiler[id] && !compiler[c])
            compiler[c] = compiler[id];
    }
    for (int id = 0; id < g->n; id++) {
        int c = pass_find(rep, id);
        comp[id] =
            g->nodes[id]->kind == GN_CALL && !is_annotation(g->nodes[id]) && compiler[c] ? c : -1;
    }
    for (int id = 0; id < g->n; id++)
        compiler[id] = comp[id] >= 0 ? compiler[pass_find(rep, id)] : NULL;
    free(rep);
    return 1;
}

/* The node n reads as input i, through begin and end annotations. */
static int real_input(const struct kiln_graph *g, const gnode *n, int i) {
    int x = n->in[i];
    while (is_annotation(g->nodes[x]))
        x = g->nodes[x]->in[0];
    return x;
}

/* ---- MergeCompilerRegions ------------------------------------------------------- */

typedef struct {
    const struct kiln_graph *g;
    int *comp, *rep; /* region of each call; union-find over regions */
    const char **compiler;
    uint64_t *dep; /* dep[id * words ..]: the regions node id depends on (through any path) */
    int words;
} merger;

static int depends(const merger *M, int node, int region) {
    const uint64_t *d = &M->dep[(size_t)node * (size_t)M->words];
    for (int w = 0; w < M->words; w++)
        for (uint64_t bits = d[w]; bits; bits &= bits - 1) {
            int c = w * 64 + __builtin_ctzll(bits);
            if (pass_find(M->rep, c) == region)
                return 1;
        }
    return 0;
}

/* Whether regions a and b (merged sets) may become one: no member of one
 * reads a node outside both that depends on the other. */
static int may_merge(const merger *M, int a, int b) {
    const struct kiln_graph *g = M->g;
    for (int id = 0; id < g->n; id++) {
        int c = M->comp[id] >= 0 ? pass_find(M->rep, M->comp[id]) : -1;
        if (c != a && c != b)
            continue;
        const gnode *n = g->nodes[id];
        for (int i = 0; i < n->nin; i++) {
            int x = real_input(g, n, i);
            int cx = M->comp[x] >= 0 ? pass_find(M->rep, M->comp[x]) : -1;
            if (cx != a && cx != b && depends(M, x, c == a ? b : a))
                return 0;
        }
    }
    return 1;
}

/* A compiler_begin whose value comes, through its compiler_end, from the
 * same merged region as its consumer is dropped along with that end. */
static int merge_node(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                      const int *map, void *user) {
    const int *merged_from = user;
    return merged_from[n->id] >= 0 ? map[merged_from[n->id]] : REBUILD_COPY;
}

struct kiln_graph *pass_merge_compiler_regions(const struct kiln_graph *g) {
    size_t nn = (size_t)(g->n ? g->n : 1);
    merger M = {g,
                kiln_malloc(sizeof(int) * nn),
                kiln_malloc(sizeof(int) * nn),
                kiln_malloc(sizeof(char *) * nn),
                NULL,
                (int)((nn + 63) / 64)};
    int *from = kiln_malloc(sizeof(int) * nn);
    struct kiln_graph *r = NULL, *clean = NULL;
    if (!M.comp || !M.rep || !M.compiler || !from)
        goto done;
    M.dep = kiln_calloc(nn * (size_t)M.words, sizeof(uint64_t));
    if (!M.dep)
        goto done;
    if (!regions(g, M.comp, M.compiler))
        goto done;
    for (int id = 0; id < g->n; id++) {
        M.rep[id] = id;
        from[id] = -1;
        const gnode *n = g->nodes[id];
        uint64_t *d = &M.dep[(size_t)id * (size_t)M.words];
        for (int i = 0; i < n->nin; i++) {
            int x = n->in[i];
            const uint64_t *dx = &M.dep[(size_t)x * (size_t)M.words];
            for (int w = 0; w < M.words; w++)
                d[w] |= dx[w];
            if (M.comp[x] >= 0)
                d[M.comp[x] / 64] |= 1ull << (M.comp[x] % 64);
        }
    }
    /* each begin that reads an end of another region of the same compiler,
       in graph order: merge the two where no cycle results */
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (M.comp[id] < 0)
            continue;
        for (int i = 0; i < n->nin; i++) {
            const gnode *b = g->nodes[n->in[i]];
            if (!is_op(b, BEGIN_OP) || !is_op(g->nodes[b->in[0]], END_OP))
                continue;
            int src = g->nodes[b->in[0]]->in[0];
            if (M.comp[src] < 0 || strcmp(M.compiler[src], M.compiler[id]))
                continue;
            int a = pass_find(M.rep, M.comp[src]), c = pass_find(M.rep, M.comp[id]);
            if (a != c && may_merge(&M, a, c))
                M.rep[c] = a;
            if (pass_find(M.rep, M.comp[src]) == pass_find(M.rep, M.comp[id]))
                from[b->id] = src;
        }
    }
    r = pass_rebuild(g, merge_node, from);
    clean = r ? pass_dead_code(r) : NULL;
done:
    kiln_graph_free(r);
    free(M.comp);
    free(M.rep);
    free(M.compiler);
    free(M.dep);
    free(from);
    return clean;
}

/* ---- PartitionGraph ---------------------------------------------------------------- */

typedef struct {
    const struct kiln_graph *g; /* without annotations */
    struct kiln_graph *r;
    int *comp;             /* region of each node of g, -1 */
    const char **compiler; /* of each node's region */
    int *map;              /* g -> r, -1 until made */
    int *state;            /* DFS: 0 new, 1 entered, 2 done (per node; a region by its root) */
    int nfuncs;
} parter;

/* Annotations out, remembering each call's compiler. */
typedef struct {
    const int *comp;
    const char **compiler;
    int *newcomp; /* new id -> old region (-1) */
    const char **newcompiler;
} strip;

static int strip_node(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                      const int *map, void *user) {
    strip *S = user;
    int id = is_annotation(n) ? map[n->in[0]] : graph_copy_node(r, n, map);
    if (id >= 0 && !is_annotation(n)) {
        S->newcomp[id] = S->comp[n->id];
        S->newcompiler[id] = S->compiler[n->id];
    }
    return id;
}

/* Inline composite n's body into P->r, its variables the call's arguments. */
static int inline_composite(parter *P, const gnode *n) {
    const struct kiln_graph *b = graph_attr_graph(n, "body");
    int *bmap = kiln_malloc(sizeof(int) * (size_t)(b && b->n ? b->n : 1));
    if (!b || !bmap || b->nout != 1) {
        free(bmap);
        return kiln_set_error(KILN_ERR_INVALID, "composite '%s' has no body of one result",
                              n->name),
               -1;
    }
    for (int id = 0, v = 0; id < b->n; id++) {
        const gnode *x = b->nodes[id];
        bmap[id] = x->kind == GN_VAR ? P->map[n->in[v++]] : graph_copy_node(P->r, x, bmap);
        if (bmap[id] < 0) {
            free(bmap);
            return -1;
        }
    }
    int out = bmap[b->outs[0]];
    free(bmap);
    return out;
}

/* Make region k (its members; the nodes of it the rest reads are its
 * results) as one external call. */
static int make_region(parter *P, int k) {
    const struct kiln_graph *g = P->g;
    int *members = kiln_malloc(sizeof(int) * (size_t)g->n),
        *outs = kiln_malloc(sizeof(int) * (size_t)g->n);
    int nm = 0, nout = 0, ok = members && outs;
    char *used = kiln_calloc((size_t)g->n, 1);
    ok = ok && used;
    for (int id = 0; ok && id < g->n; id++) {
        const gnode *n = g->nodes[id];
        for (int i = 0; i < n->nin; i++)
            if (P->comp[n->in[i]] == k && P->comp[id] != k)
                used[n->in[i]] = 1;
    }
    for (int j = 0; ok && j < g->nout; j++)
        if (P->comp[g->outs[j]] == k)
            used[g->outs[j]] = 1;
    for (int id = 0; ok && id < g->n; id++)
        if (P->comp[id] == k) {
            members[nm++] = id;
            if (used[id])
                outs[nout++] = id;
        }
    int id = -1;
    if (ok && nout > 0) {
        char sym[160];
        snprintf(sym, sizeof sym, "tvmgen_default_%s_main_%d", P->compiler[k], P->nfuncs++);
        char attrs[400];
        snprintf(attrs, sizeof attrs, "Compiler=\"%s\", global_symbol=\"%s\"", P->compiler[k], sym);
        gattr *parsed = NULL;
        int na = graph_parse_attrs(P->r, attrs, &parsed);
        id = na < 0 ? -1
                    : pattern_make_function(P->r, g, members, nm, outs, nout, P->map, "external",
                                            parsed, na, g->nodes[outs[0]]->name);
        for (int j = 0; id >= 0 && j < nout; j++) {
            if (nout == 1) {
                P->map[outs[j]] = id;
                continue;
            }
            int t = kiln_graph_tuple_get(P->r, id, j, g->nodes[outs[j]]->name);
            if (t < 0 || graph_infer_node(P->r, t) != KILN_OK)
                id = -1;
            P->map[outs[j]] = t;
        }
    }
    free(members);
    free(outs);
    free(used);
    return id;
}

/* Make node id (or its region) after everything it reads: an explicit
 * depth-first walk, since graphs run to tens of thousands of nodes. */
static int emit(parter *P, int start) {
    const struct kiln_graph *g = P->g;
    size_t cap = (size_t)g->n + 2;
    for (int id = 0; id < g->n; id++)
        cap += (size_t)g->nodes[id]->nin; /* each edge pushes at most once */
    int *stack = kiln_malloc(sizeof(int) * cap), sp = 0, ok = 1;
    if (!stack)
        return 0;
    stack[sp++] = start;
    while (sp && ok) {
        int id = stack[sp - 1];
        int unit = P->comp[id] >= 0 ? P->comp[id] : id;
        if (P->state[unit] == 2) {
            sp--;
            continue;
        }
        if (P->state[unit] == 0) {
            P->state[unit] = 1;
            /* push what the node (every member of its region) reads */
            for (int m = P->comp[id] >= 0 ? 0 : id; m < g->n && ok; m++) {
                if (m != id && (P->comp[id] < 0 || P->comp[m] != P->comp[id]))
                    continue;
                for (int i = 0; i < g->nodes[m]->nin; i++) {
                    int x = g->nodes[m]->in[i];
                    int ux = P->comp[x] >= 0 ? P->comp[x] : x;
                    if (ux != unit && P->state[ux] == 0 && (size_t)sp < cap)
                        stack[sp++] = x;
                }
                if (P->comp[id] < 0)
                    break;
            }
            continue;
        }
        sp--; /* inputs made: make it */
        P->state[unit] = 2;
        const gnode *n = g->nodes[id];
        if (P->comp[id] >= 0)
            ok = make_region(P, P->comp[id]) >= 0;
        else if (is_op(n, "composite"))
            ok = (P->map[id] = inline_composite(P, n)) >= 0;
        else
            ok = (P->map[id] = graph_copy_node(P->r, n, P->map)) >= 0;
    }
    free(stack);
    return ok;
}

struct kiln_graph *pass_partition_graph(const struct kiln_graph *g) {
    size_t nn = (size_t)(g->n ? g->n : 1);
    int *comp = kiln_malloc(sizeof(int) * nn);
    const char **compiler = kiln_malloc(sizeof(char *) * nn);
    strip S = {comp, compiler, kiln_malloc(sizeof(int) * nn), kiln_malloc(sizeof(char *) * nn)};
    struct kiln_graph *plain = NULL, *r = NULL;
    parter P = {0};
    if (!comp || !compiler || !S.newcomp || !S.newcompiler)
        goto done;
    if (!regions(g, comp, compiler))
        goto done;
    for (size_t i = 0; i < nn; i++)
        S.newcomp[i] = -1;
    if (!(plain = pass_rebuild(g, strip_node, &S)))
        goto done;
    P = (parter){plain,
                 graph_new(g->ops),
                 S.newcomp,
                 S.newcompiler,
                 kiln_malloc(sizeof(int) * (size_t)(plain->n + 1)),
                 kiln_calloc((size_t)plain->n + 1, sizeof(int)),
                 0};
    if (!P.r || !P.map || !P.state)
        goto done;
    /* a region is numbered by its first member in the new graph (its old
       number may be a node id of the new graph outside it) */
    for (size_t i = 0; i < nn; i++)
        comp[i] = -1; /* old region -> new number */
    for (int id = 0; id < plain->n; id++) {
        P.map[id] = -1;
        int old = P.comp[id];
        if (old < 0)
            continue;
        if (comp[old] < 0)
            comp[old] = id;
        P.comp[id] = comp[old];
        P.compiler[P.comp[id]] = S.newcompiler[id];
    }
    int ok = 1;
    for (int id = 0; id < plain->n && ok; id++) /* the inputs keep their order */
        if (plain->nodes[id]->kind == GN_VAR)
            ok = emit(&P, id);
    for (int k = 0; k < plain->nout && ok; k++)
        ok = emit(&P, plain->outs[k]);
    if (ok && graph_copy_outputs(P.r, plain, P.map) == KILN_OK) {
        r = P.r;
        P.r = NULL;
    }
done:
    kiln_graph_free(P.r);
    kiln_graph_free(plain);
    free(P.map);
    free(P.state);
    free(comp);
    free(compiler);
    free(S.newcomp);
    free(S.newcompiler);
    return r;
}
