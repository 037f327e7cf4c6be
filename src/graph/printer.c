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
 * outputs, with their names. parser.c reads all of it back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

typedef struct {
    const struct kiln_graph *g;
    kstr out;
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

static void number_const(const struct kiln_graph *g, int id, int *meta, int *count) {
    if (g->nodes[id]->kind == GN_CONST && meta[id] < 0)
        meta[id] = (*count)++;
}

/* Constant indices in order of first use in the text; returns the count. */
static int meta_order(const struct kiln_graph *g, int *meta) {
    int count = 0;
    for (int i = 0; i < g->n; i++)
        meta[i] = -1;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = g->nodes[i];
        if (n->kind == GN_VAR || n->kind == GN_CONST)
            continue;
        for (int j = 0; j < n->nin; j++)
            number_const(g, n->in[j], meta, &count);
    }
    for (int i = 0; i < g->nout; i++)
        number_const(g, g->outs[i], meta, &count);
    return count;
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
    if (n->kind == GN_VAR) {
        kstr_printf(&p->out, "%%%s", p->local[id]);
    } else if (n->kind == GN_CONST) {
        kstr_printf(&p->out, "meta[relay.Constant][%d]", p->meta[id]);
        put_annotation(&p->out, &n->type, n->name);
    } else {
        kstr_printf(&p->out, "%%%d", p->num[id]);
    }
}

static void put_params(printer *p) {
    const struct kiln_graph *g = p->g;
    int first = 1;
    kstr_puts(&p->out, "def @main(");
    for (int i = 0; i < g->n; i++) {
        const gnode *n = g->nodes[i];
        if (n->kind != GN_VAR)
            continue;
        if (!first)
            kstr_puts(&p->out, ", ");
        first = 0;
        kstr_printf(&p->out, "%%%s", p->local[i]);
        if (n->type.known) {
            kstr_puts(&p->out, ": ");
            gtype_print(&p->out, &n->type);
        }
        if (strcmp(p->local[i], n->name ? n->name : "") != 0) {
            kstr_puts(&p->out, " /* span=");
            put_string(&p->out, n->name ? n->name : "");
            kstr_puts(&p->out, " */");
        }
    }
    kstr_puts(&p->out, ") {\n");
}

static void put_node(printer *p, const gnode *n, int k) {
    kstr *out = &p->out;
    kstr_printf(out, "  %%%d = ", k);
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
            graph_print_attr(out, &n->attrs[j]);
        }
        if (n->kind == GN_TUPLE && n->nin == 1)
            kstr_putc(out, ',');
        kstr_putc(out, ')');
    }
    put_annotation(out, &n->type, n->name);
    kstr_puts(out, ";\n");
}

static void put_outputs(printer *p) {
    const struct kiln_graph *g = p->g;
    kstr *out = &p->out;
    kstr_puts(out, "  ");
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
    kstr_puts(out, "\n}\n");
}

char *graph_print(const struct kiln_graph *g) {
    if (!g) {
        kiln_set_error(KILN_ERR_INVALID, "graph_print: graph is NULL");
        return NULL;
    }
    printer p = {g, {0}, NULL, NULL, NULL};
    arena *a = arena_new();
    size_t n = (size_t)(g->n ? g->n : 1);
    p.meta = kiln_malloc(sizeof(int) * n);
    p.num = kiln_malloc(sizeof(int) * n);
    p.local = kiln_calloc(n, sizeof(char *));
    char *text = NULL;
    if (a && p.meta && p.num && p.local && name_inputs(&p, a)) {
        kstr_init(&p.out);
        meta_order(g, p.meta);
        int k = 0;
        for (int i = 0; i < g->n; i++)
            p.num[i] = (g->nodes[i]->kind == GN_VAR || g->nodes[i]->kind == GN_CONST) ? -1 : k++;
        put_params(&p);
        for (int i = 0; i < g->n; i++)
            if (p.num[i] >= 0)
                put_node(&p, g->nodes[i], p.num[i]);
        put_outputs(&p);
        text = kstr_take(&p.out);
    }
    free(p.meta);
    free(p.num);
    free((void *)p.local);
    arena_free(a);
    return text;
}

char *kiln_graph_print(const kiln_graph *g) {
    return graph_print(g);
}

kiln_npz *kiln_graph_constants(const kiln_graph *g) {
    if (!g) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_graph_constants: graph is NULL");
        return NULL;
    }
    int *meta = kiln_malloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
    kiln_npz *z = meta ? kiln_npz_new() : NULL;
    if (!z) {
        free(meta);
        return NULL;
    }
    int count = meta_order(g, meta);
    const gnode **order = kiln_calloc((size_t)(count ? count : 1), sizeof *order);
    for (int i = 0; order && i < g->n; i++)
        if (meta[i] >= 0)
            order[meta[i]] = g->nodes[i];
    for (int j = 0; z && j < count; j++) {
        char name[32], label[256];
        snprintf(name, sizeof name, "%d", j);
        if (!order) {
            /* out of memory, recorded */
        } else if (!order[j]->value) {
            kiln_set_error(KILN_ERR_INVALID, "%s has no value",
                           graph_node_label(order[j], label, sizeof label));
        } else if (kiln_npz_add(z, name, order[j]->value) == KILN_OK) {
            continue;
        }
        kiln_npz_free(z);
        z = NULL;
    }
    free((void *)order);
    free(meta);
    return z;
}
