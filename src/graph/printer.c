/* printer.c: a graph as Relay-like text, deterministic so tests compare it:
 *
 *   def @main(%data: Tensor[(1, 3, n), float32], %v1: Tensor[(4,), int64] <span="in:0">) {
 *     %0 = nn.conv2d(%data, meta[relay.Constant][0] <ty=..., span="w">, strides=[2, 2]) <ty=...>;
 *     %1 = split(%0, indices_or_sections=[2], axis=1) <ty=(Tensor[...], Tensor[...])>;
 *     %2 = %1.0;
 *     %3 = (%2, %0);
 *     (%2, %0) <outputs=["a", "b"]>
 *   }
 *
 * where <...> stands for an annotation comment, slash-star ... star-slash.
 * Inputs are the parameters, in node order; an input whose name is not an
 * identifier (or repeats, or looks like v<digits>) prints as %v<id> with its
 * name in span="...". Calls, tuples and tuple-gets are numbered %0, %1, ...
 * in node order. Constants print inline at each use as
 * meta[relay.Constant][J], J in order of first use; kiln_graph_constants
 * gives the arrays in that order (a constant nothing uses is not printed).
 * Annotations carry ty= (omitted while the type is unknown) and span= (the
 * node name, omitted if empty). The last line is the output, or a tuple of
 * outputs, with their names. A sub-graph attribute (a control op's body)
 * prints as a nested function in the attribute list,
 *
 *   %1 = if(%c, %x, then_branch=fn (%x: Tensor[(2,), float32]) {
 *       %0 = add(%x, %x);
 *       %0
 *     }, else_branch=fn (...) { ... });
 *
 * with its own %names, its constants numbered on in the one meta order.
 * parser.c reads all of it back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* What the printers of a graph and its bodies share: the text, and the
 * constants in meta order (J is their index), numbered at first use. */
typedef struct {
    kstr out;
    int nconst, cap;
    const gnode **consts;
} print_shared;

typedef struct {
    const struct kiln_graph *g;
    print_shared *sh;
    int depth;          /* nesting: 0 for the graph, 1 for a body, ... */
    int *meta;          /* per node: constant index J, or -1 */
    int *num;           /* per node: K of %K for calls/tuples/tuple-gets, or -1 */
    const char **local; /* per node: the local name of an input */
} printer;

/* Append s as a quoted string that the lexer reads back, also inside a
 * comment: "*" followed by "/" is written as "*\/". */
static void put_string(kstr *out, const char *s) {
    kstr_putc(out, '"');
    for (const char *c = s; *c; c++) {
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

/* An annotation comment with ty= and span=, those that are known, or nothing. */
static void put_annotation(kstr *out, const gtype *t, const char *name) {
    int has_name = name && *name;
    if (!t->known && !has_name)
        return;
    kstr_puts(out, " /* ");
    if (t->known) {
        kstr_puts(out, "ty=");
        gtype_print(out, t);
        if (has_name)
            kstr_puts(out, ", ");
    }
    if (has_name) {
        kstr_puts(out, "span=");
        put_string(out, name);
    }
    kstr_puts(out, " */");
}

/* Constant node n's meta index J, numbered at its first use. */
static int const_index(printer *p, const gnode *n) {
    if (p->meta[n->id] >= 0)
        return p->meta[n->id];
    print_shared *sh = p->sh;
    if (sh->nconst == sh->cap) {
        int ncap = sh->cap ? sh->cap * 2 : 16;
        const gnode **nc = kiln_realloc((void *)sh->consts, sizeof(*nc) * (size_t)ncap);
        if (!nc) {
            sh->out.oom = 1;
            return 0;
        }
        sh->consts = nc;
        sh->cap = ncap;
    }
    sh->consts[sh->nconst] = n;
    return p->meta[n->id] = sh->nconst++;
}

/* A name that prints as %name as it is: an identifier that does not look
 * like a generated one (%0, %v12). */
static int clean_name(const char *s) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (const char *c = s + 1; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == '.' ||
              (*c >= '0' && *c <= '9')))
            return 0;
    if (s[0] == 'v' && s[1]) {
        const char *c = s + 1;
        while (*c >= '0' && *c <= '9')
            c++;
        if (!*c)
            return 0;
    }
    return 1;
}

typedef struct {
    const char *name;
    int id;
} name_id;

static int cmp_name_id(const void *a, const void *b) {
    const name_id *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Local names of the inputs: the node name when clean and not taken by an
 * earlier input, else "v<id>". */
static int name_inputs(printer *p, arena *a) {
    const struct kiln_graph *g = p->g;
    int nv = 0;
    name_id *v = kiln_malloc(sizeof(name_id) * (size_t)(g->n ? g->n : 1));
    if (!v)
        return 0;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = g->nodes[i];
        if (n->kind != GN_VAR)
            continue;
        if (n->name && clean_name(n->name))
            v[nv++] = (name_id){n->name, i};
        else
            p->local[i] = "";
    }
    qsort(v, (size_t)nv, sizeof *v, cmp_name_id);
    for (int k = 0; k < nv; k++)
        p->local[v[k].id] = (k > 0 && strcmp(v[k - 1].name, v[k].name) == 0) ? "" : v[k].name;
    free(v);
    for (int i = 0; i < g->n; i++) {
        if (g->nodes[i]->kind != GN_VAR || *p->local[i])
            continue;
        char buf[32];
        snprintf(buf, sizeof buf, "v%d", i);
        p->local[i] = arena_strdup(a, buf);
    }
    return 1;
}

/* A reference to node id as an argument. */
static void put_ref(printer *p, int id) {
    const gnode *n = p->g->nodes[id];
    kstr *out = &p->sh->out;
    if (n->kind == GN_VAR) {
        kstr_printf(out, "%%%s", p->local[id]);
    } else if (n->kind == GN_CONST) {
        kstr_printf(out, "meta[relay.Constant][%d]", const_index(p, n));
        put_annotation(out, &n->type, n->name);
    } else {
        kstr_printf(out, "%%%d", p->num[id]);
    }
}

static void indent(printer *p) {
    for (int i = 0; i <= p->depth; i++)
        kstr_puts(&p->sh->out, "  ");
}

static void put_params(printer *p) {
    const struct kiln_graph *g = p->g;
    kstr *out = &p->sh->out;
    int first = 1;
    kstr_puts(out, p->depth ? "fn (" : "def @main(");
    for (int i = 0; i < g->n; i++) {
        const gnode *n = g->nodes[i];
        if (n->kind != GN_VAR)
            continue;
        if (!first)
            kstr_puts(out, ", ");
        first = 0;
        kstr_printf(out, "%%%s", p->local[i]);
        if (n->type.known) {
            kstr_puts(out, ": ");
            gtype_print(out, &n->type);
        }
        if (strcmp(p->local[i], n->name ? n->name : "") != 0) {
            kstr_puts(out, " /* span=");
            put_string(out, n->name ? n->name : "");
            kstr_puts(out, " */");
        }
    }
    kstr_puts(out, ") {\n");
}

static int print_graph(print_shared *sh, const struct kiln_graph *g, int depth);

static int put_node(printer *p, const gnode *n, int k) {
    kstr *out = &p->sh->out;
    indent(p);
    kstr_printf(out, "%%%d = ", k);
    if (n->kind == GN_TUPLE_GET) {
        put_ref(p, n->in[0]);
        kstr_printf(out, ".%d", n->index);
    } else {
        if (n->kind == GN_CALL)
            kstr_puts(out, n->op->name);
        kstr_putc(out, '(');
        for (int j = 0; j < n->nin; j++) {
            if (j)
                kstr_puts(out, ", ");
            put_ref(p, n->in[j]);
        }
        for (int j = 0; j < n->nattr; j++) {
            if (j || n->nin)
                kstr_puts(out, ", ");
            if (n->attrs[j].kind != GA_GRAPH) {
                graph_print_attr(out, &n->attrs[j]);
                continue;
            }
            kstr_printf(out, "%s=", n->attrs[j].name);
            if (!print_graph(p->sh, n->attrs[j].graph, p->depth + 1))
                return 0;
        }
        if (n->kind == GN_TUPLE && n->nin == 1)
            kstr_putc(out, ',');
        kstr_putc(out, ')');
    }
    put_annotation(out, &n->type, n->name);
    kstr_puts(out, ";\n");
    return 1;
}

static void put_outputs(printer *p) {
    const struct kiln_graph *g = p->g;
    kstr *out = &p->sh->out;
    indent(p);
    if (g->nout != 1)
        kstr_putc(out, '(');
    for (int i = 0; i < g->nout; i++) {
        if (i)
            kstr_puts(out, ", ");
        put_ref(p, g->outs[i]);
    }
    if (g->nout != 1)
        kstr_putc(out, ')');
    if (g->nout > 0) {
        kstr_puts(out, " /* outputs=[");
        for (int i = 0; i < g->nout; i++) {
            if (i)
                kstr_puts(out, ", ");
            put_string(out, g->out_names && g->out_names[i] ? g->out_names[i] : "");
        }
        kstr_puts(out, "] */");
    }
    kstr_putc(out, '\n');
    for (int i = 0; i < p->depth; i++)
        kstr_puts(out, "  ");
    kstr_puts(out, p->depth ? "}" : "}\n");
}

/* Print g (a body at depth > 0) into sh; 0 on an error (set). */
static int print_graph(print_shared *sh, const struct kiln_graph *g, int depth) {
    if (depth > GRAPH_MAX_BODY_DEPTH) {
        kiln_set_error(KILN_ERR_UNSUPPORTED, "graph_print: bodies nest more than %d deep",
                       GRAPH_MAX_BODY_DEPTH);
        return 0;
    }
    printer p = {g, sh, depth, NULL, NULL, NULL};
    arena *a = arena_new();
    size_t n = (size_t)(g->n ? g->n : 1);
    p.meta = kiln_malloc(sizeof(int) * n);
    p.num = kiln_malloc(sizeof(int) * n);
    p.local = kiln_calloc(n, sizeof(char *));
    int ok = a && p.meta && p.num && p.local && name_inputs(&p, a);
    if (ok) {
        int k = 0;
        for (int i = 0; i < g->n; i++) {
            p.meta[i] = -1;
            p.num[i] = (g->nodes[i]->kind == GN_VAR || g->nodes[i]->kind == GN_CONST) ? -1 : k++;
        }
        put_params(&p);
        for (int i = 0; i < g->n && ok; i++)
            if (p.num[i] >= 0)
                ok = put_node(&p, g->nodes[i], p.num[i]);
        if (ok)
            put_outputs(&p);
    }
    free(p.meta);
    free(p.num);
    free((void *)p.local);
    arena_free(a);
    return ok;
}

/* The text of g, and its constants in meta order (*consts, *nconst; the
 * caller frees the list) when consts is not NULL. */
static char *print_all(const struct kiln_graph *g, const gnode ***consts, int *nconst) {
    if (!g) {
        kiln_set_error(KILN_ERR_INVALID, "graph_print: graph is NULL");
        return NULL;
    }
    print_shared sh;
    memset(&sh, 0, sizeof sh);
    kstr_init(&sh.out);
    char *text = NULL;
    if (print_graph(&sh, g, 0))
        text = kstr_take(&sh.out);
    kstr_free(&sh.out);
    if (text && consts) {
        *consts = sh.consts;
        *nconst = sh.nconst;
    } else {
        free((void *)sh.consts);
    }
    return text;
}

char *graph_print(const struct kiln_graph *g) {
    return print_all(g, NULL, NULL);
}

char *kiln_graph_print(const kiln_graph *g) {
    return graph_print(g);
}

kiln_npz *kiln_graph_constants(const kiln_graph *g) {
    if (!g) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_graph_constants: graph is NULL");
        return NULL;
    }
    const gnode **order = NULL;
    int count = 0;
    char *text = print_all(g, &order, &count); /* numbers them as the text does */
    kiln_npz *z = text ? kiln_npz_new() : NULL;
    free(text);
    for (int j = 0; z && j < count; j++) {
        char name[32], label[256];
        snprintf(name, sizeof name, "%d", j);
        if (!order[j]->value) {
            kiln_set_error(KILN_ERR_INVALID, "%s has no value",
                           graph_node_label(order[j], label, sizeof label));
        } else if (kiln_npz_add(z, name, order[j]->value) == KILN_OK) {
            continue;
        }
        kiln_npz_free(z);
        z = NULL;
    }
    free((void *)order);
    return z;
}
