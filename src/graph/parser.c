/* parser.c: the Relay-like text of printer.c back into a graph.
 *
 * One pass over the tokens of text.c's lexer; tuples are let-bound, never
 * nested, and only a sub-graph attribute (fn (...) { ... }, a control op's
 * body) recurses, at most GRAPH_MAX_BODY_DEPTH deep. %names resolve through a hash map to earlier
 * definitions; meta[relay.Constant][J] takes array "J" of the constants,
 * one node per J. Annotation comments (ty=, span=, outputs=) are lexed by a
 * second lexer over the comment text. Every error is "graph text:LINE:COL:
 * message" and frees the partial graph. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

#define MAX_TEXT (1 << 30)
#define MAX_LIST 4096 /* arguments, tuple fields, outputs, tuple types */

/* ---- a map from local names to node ids ---------------------------------- */

typedef struct {
    const char **keys;
    int *ids;
    int n, cap; /* cap is a power of two, or 0 */
} name_map;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of key: where it is, or the empty slot where it would go. */
static int map_slot(const name_map *m, const char *key) {
    int i = (int)(hash_str(key) & (uint64_t)(m->cap - 1));
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int map_get(const name_map *m, const char *key) {
    if (!m->cap)
        return -1;
    int i = map_slot(m, key);
    return m->keys[i] ? m->ids[i] : -1;
}

/* Insert a key not in the map (an arena string); 0 if out of memory. */
static int map_put(name_map *m, const char *key, int id) {
    if (2 * (m->n + 1) > m->cap) {
        name_map b = {NULL, NULL, 0, m->cap ? m->cap * 2 : 64};
        b.keys = kiln_calloc((size_t)b.cap, sizeof(char *));
        b.ids = kiln_calloc((size_t)b.cap, sizeof(int));
        if (!b.keys || !b.ids) {
            free((void *)b.keys);
            free(b.ids);
            return 0;
        }
        for (int i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                int j = map_slot(&b, m->keys[i]);
                b.keys[j] = m->keys[i];
                b.ids[j] = m->ids[i];
            }
        b.n = m->n;
        free((void *)m->keys);
        free(m->ids);
        *m = b;
    }
    int i = map_slot(m, key);
    m->keys[i] = key;
    m->ids[i] = id;
    m->n++;
    return 1;
}

/* ---- the parser ----------------------------------------------------------- */

/* The bodies parsed so far (sub-graph attributes): the parse holds one
 * reference to each until it ends; the graph that takes one holds its own. */
typedef struct {
    int n, cap;
    struct kiln_graph **g;
} body_list;

typedef struct {
    lexer lx;
    struct kiln_graph *g;
    const kiln_npz *consts;
    arena *tmp; /* names and scratch, freed after the parse */
    name_map map;
    int depth; /* 0 for the graph, 1 for a body, ... */
    body_list *bodies;
} parser;

/* What an annotation comment said. */
typedef struct {
    int has_ty, has_span, has_outputs;
    gtype ty;
    const char *span;
    int nout;
    const char **outs;
} annot;

/* lex_error, unless the lexer has reported the bad token here already. */
static int fail(const lexer *lx, const char *fmt, ...) KILN_PRINTF(2, 3);
static int fail(const lexer *lx, const char *fmt, ...) {
    if (lx->tok.kind == TK_ERROR)
        return 0;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lex_error(lx, "%s", msg);
}

static int is_ident(const lexer *lx, const char *s) {
    return lx->tok.kind == TK_IDENT && (int)strlen(s) == lx->tok.len &&
           memcmp(lx->tok.start, s, (size_t)lx->tok.len) == 0;
}

static int expect(lexer *lx, char c) {
    if (!lex_is(lx, c))
        return fail(lx, "expected '%c'", c);
    lex_next(lx);
    return 1;
}

/* Move past a ',' if there is one; 0 if not. */
static int comma(lexer *lx) {
    if (!lex_is(lx, ','))
        return 0;
    lex_next(lx);
    return 1;
}

/* 1 if the token after the current one is punctuation c. */
static int peek_is(const lexer *lx, char c) {
    lexer la = *lx;
    lex_next(&la);
    return lex_is(&la, c);
}

static int parse_int(lexer *lx, int64_t lo, int64_t hi, const char *what, int64_t *out) {
    if (lx->tok.kind != TK_INT)
        return fail(lx, "expected %s", what);
    if (lx->tok.i < lo || lx->tok.i > hi)
        return fail(lx, "%s %lld is out of range", what, (long long)lx->tok.i);
    *out = lx->tok.i;
    lex_next(lx);
    return 1;
}

/* Tensor[(d0, d1, ...), dtype], a dim being an int or a symbol. */
static int parse_tensor_type(parser *ps, lexer *lx, gtensor_type *t) {
    if (!is_ident(lx, "Tensor"))
        return fail(lx, "expected a type: Tensor[...]");
    lex_next(lx);
    if (!expect(lx, '[') || !expect(lx, '('))
        return 0;
    t->ndim = 0;
    while (!lex_is(lx, ')')) {
        if (t->ndim == KILN_MAX_NDIM)
            return fail(lx, "more than %d dims", KILN_MAX_NDIM);
        gdim *d = &t->dims[t->ndim++];
        if (lx->tok.kind == TK_IDENT || lx->tok.kind == TK_STRING) {
            d->sym = lex_text(lx, ps->g->arena);
            d->v = -1;
            if (!*d->sym)
                return fail(lx, "empty symbolic dim");
            lex_next(lx);
        } else if (!parse_int(lx, 0, INT64_MAX, "a dim", &d->v)) {
            return 0;
        }
        if (!comma(lx))
            break;
    }
    if (!expect(lx, ')') || !expect(lx, ','))
        return 0;
    if (lx->tok.kind != TK_IDENT)
        return fail(lx, "expected a dtype");
    char *name = lex_text(lx, ps->tmp);
    if (kiln_dtype_parse(name, &t->dtype) != KILN_OK || t->dtype == KILN_HANDLE)
        return fail(lx, "unknown dtype '%s'", name);
    lex_next(lx);
    return expect(lx, ']');
}

/* A tensor type or a tuple of them: (T, ...), (T,) or (). */
static int parse_type(parser *ps, lexer *lx, gtype *t) {
    memset(t, 0, sizeof *t);
    t->known = 1;
    if (!lex_is(lx, '(')) {
        t->n = 1;
        t->t = arena_alloc(ps->g->arena, sizeof(gtensor_type));
        return parse_tensor_type(ps, lx, t->t);
    }
    lex_next(lx);
    t->is_tuple = 1;
    int cap = 4;
    t->t = arena_alloc(ps->g->arena, sizeof(gtensor_type) * (size_t)cap);
    while (!lex_is(lx, ')')) {
        if (t->n == MAX_LIST)
            return fail(lx, "more than %d fields in a tuple type", MAX_LIST);
        if (t->n == cap) {
            gtensor_type *nt = arena_alloc(ps->g->arena, sizeof(gtensor_type) * (size_t)cap * 2);
            memcpy(nt, t->t, sizeof(gtensor_type) * (size_t)cap);
            t->t = nt;
            cap *= 2;
        }
        if (!parse_tensor_type(ps, lx, &t->t[t->n++]))
            return 0;
        if (!comma(lx))
            break;
    }
    return expect(lx, ')');
}

static int parse_string_list(parser *ps, lexer *lx, annot *an) {
    int cap = 4;
    an->outs = arena_alloc(ps->tmp, sizeof(char *) * (size_t)cap);
    if (!expect(lx, '['))
        return 0;
    while (!lex_is(lx, ']')) {
        if (lx->tok.kind != TK_STRING)
            return fail(lx, "expected an output name");
        if (an->nout == MAX_LIST)
            return fail(lx, "more than %d outputs", MAX_LIST);
        if (an->nout == cap) {
            const char **n = arena_alloc(ps->tmp, sizeof(char *) * (size_t)cap * 2);
            memcpy((void *)n, (const void *)an->outs, sizeof(char *) * (size_t)cap);
            an->outs = n;
            cap *= 2;
        }
        an->outs[an->nout++] = lex_text(lx, ps->tmp);
        lex_next(lx);
        if (!comma(lx))
            break;
    }
    return expect(lx, ']');
}

/* If the current token is a comment, parse it as "key=value, ..." with
 * keys ty, span and outputs, and move past it. */
static int parse_annotation(parser *ps, annot *an) {
    memset(an, 0, sizeof *an);
    lexer *lx = &ps->lx;
    if (lx->tok.kind != TK_COMMENT)
        return 1;
    char *body = arena_alloc(ps->tmp, (size_t)lx->tok.len + 1);
    memcpy(body, lx->tok.start, (size_t)lx->tok.len);
    lexer sub;
    memset(&sub, 0, sizeof sub);
    sub.src = sub.p = body;
    sub.line = lx->tok.line;
    sub.col = lx->tok.col + 2;
    sub.what = lx->what;
    lex_next(&sub);
    while (sub.tok.kind != TK_EOF) {
        int *seen = is_ident(&sub, "ty")        ? &an->has_ty
                    : is_ident(&sub, "span")    ? &an->has_span
                    : is_ident(&sub, "outputs") ? &an->has_outputs
                                                : NULL;
        if (!seen)
            return fail(&sub, "expected ty=, span= or outputs= in an annotation");
        if (*seen)
            return fail(&sub, "annotation key given twice");
        *seen = 1;
        lex_next(&sub);
        if (!expect(&sub, '='))
            return 0;
        if (seen == &an->has_ty) {
            if (!parse_type(ps, &sub, &an->ty))
                return 0;
        } else if (seen == &an->has_span) {
            if (sub.tok.kind != TK_STRING)
                return fail(&sub, "expected a string");
            an->span = lex_text(&sub, ps->tmp);
            lex_next(&sub);
        } else if (!parse_string_list(ps, &sub, an)) {
            return 0;
        }
        if (sub.tok.kind == TK_EOF)
            break;
        if (!expect(&sub, ','))
            return 0;
    }
    lex_next(lx);
    return 1;
}

/* A comment that starts with "outputs=" belongs to the output line. */
static int outputs_comment(const lexer *lx) {
    if (lx->tok.kind != TK_COMMENT)
        return 0;
    int i = 0;
    while (i < lx->tok.len && (lx->tok.start[i] == ' ' || lx->tok.start[i] == '\n'))
        i++;
    return lx->tok.len - i >= 8 && memcmp(lx->tok.start + i, "outputs=", 8) == 0;
}

/* Define %name as node id; the name is checked as new by the caller. */
static int define(parser *ps, const char *name, int id) {
    if (!map_put(&ps->map, name, id))
        return fail(&ps->lx, "out of memory");
    return 1;
}

/* The node name: span=, else the local name unless it is a number. */
static const char *node_name(const annot *an, const char *local) {
    if (an->has_span)
        return an->span;
    for (const char *c = local; *c; c++)
        if (*c < '0' || *c > '9')
            return local;
    return "";
}

/* meta[relay.Constant][J] with its annotation: node id or -1. */
static int parse_const(parser *ps) {
    lexer *lx = &ps->lx;
    token at = lx->tok;
    int64_t j = 0;
    lex_next(lx);
    if (!expect(lx, '['))
        return -1;
    if (!is_ident(lx, "relay.Constant"))
        return fail(lx, "expected relay.Constant"), -1;
    lex_next(lx);
    if (!expect(lx, ']') || !expect(lx, '[') ||
        !parse_int(lx, 0, INT_MAX, "a constant index", &j) || !expect(lx, ']'))
        return -1;
    annot an;
    memset(&an, 0, sizeof an);
    if (!outputs_comment(lx) && !parse_annotation(ps, &an))
        return -1;
    if (an.has_outputs)
        return fail(lx, "outputs= belongs to the output line"), -1;
    char key[32];
    snprintf(key, sizeof key, "\001%lld", (long long)j);
    int id = map_get(&ps->map, key);
    if (id < 0) {
        const kiln_ndarray *v = kiln_npz_get(ps->consts, key + 1);
        if (!v) {
            lx->tok = at;
            fail(lx, "meta[relay.Constant][%lld]: the constants have no array \"%s\"", (long long)j,
                 key + 1);
            return -1;
        }
        id = kiln_graph_const(ps->g, an.has_span ? an.span : "", v);
        if (id < 0) {
            kiln_error_prefix("%s:%d:%d", lx->what, at.line, at.col);
            return -1;
        }
        if (!define(ps, arena_strdup(ps->tmp, key), id))
            return -1;
    }
    if (an.has_ty && !gtype_equal(&an.ty, &ps->g->nodes[id]->type)) {
        lx->tok = at;
        fail(lx, "meta[relay.Constant][%lld]: ty= does not match the array's type", (long long)j);
        return -1;
    }
    return id;
}

/* An argument: %name or a constant. Node id or -1. */
static int parse_atom(parser *ps) {
    lexer *lx = &ps->lx;
    if (is_ident(lx, "meta"))
        return parse_const(ps);
    if (lx->tok.kind != TK_LOCAL)
        return fail(lx, "expected %%name or meta[...]"), -1;
    char *name = lex_text(lx, ps->tmp);
    int id = map_get(&ps->map, name);
    if (id < 0)
        return fail(lx, "undefined %%%s", name), -1;
    lex_next(lx);
    return id;
}

/* Atoms up to `close`; the list is in ps->tmp. Stops (without error) at an
 * identifier other than meta when attrs is set. Returns the count or -1. */
static int parse_atoms(parser *ps, char close, int attrs, int **out) {
    lexer *lx = &ps->lx;
    int n = 0, cap = 8;
    int *ids = arena_alloc(ps->tmp, sizeof(int) * (size_t)cap);
    while (!lex_is(lx, close)) {
        if (attrs && lx->tok.kind == TK_IDENT && (!is_ident(lx, "meta") || peek_is(lx, '=')))
            break;
        if (n == MAX_LIST)
            return fail(lx, "more than %d items in a list", MAX_LIST), -1;
        if (n == cap) {
            int *nid = arena_alloc(ps->tmp, sizeof(int) * (size_t)cap * 2);
            memcpy(nid, ids, sizeof(int) * (size_t)cap);
            ids = nid;
            cap *= 2;
        }
        if ((ids[n++] = parse_atom(ps)) < 0)
            return -1;
        if (!comma(lx))
            break;
    }
    *out = ids;
    return n;
}

/* The right side of "%x = ...": a call, a tuple or a tuple-get. */
static int parse_rhs(parser *ps, const char *local) {
    lexer *lx = &ps->lx;
    token at = lx->tok;
    gnode_kind kind = GN_CALL;
    const kiln_op_def *op = NULL;
    int nin = 0, nattr = 0, index = 0, base = -1;
    int *in = NULL;
    gattr *attrs = NULL;
    if (lx->tok.kind == TK_LOCAL) { /* %t.1 */
        kind = GN_TUPLE_GET;
        char *name = lex_text(lx, ps->tmp), *dot = strrchr(name, '.');
        int64_t ix = 0;
        if (dot && dot[1]) {
            char *e = dot + 1;
            while (*e >= '0' && *e <= '9' && ix <= INT_MAX)
                ix = ix * 10 + (*e++ - '0');
            if (*e || ix > INT_MAX)
                dot = NULL;
        } else {
            dot = NULL;
        }
        if (!dot)
            return fail(lx, "expected a call, a tuple or %%tuple.INDEX"), -1;
        *dot = 0;
        if ((base = map_get(&ps->map, name)) < 0)
            return fail(lx, "undefined %%%s", name), -1;
        index = (int)ix;
        lex_next(lx);
    } else if (is_ident(lx, "meta")) { /* a constant's field */
        kind = GN_TUPLE_GET;
        int64_t ix = 0;
        if ((base = parse_const(ps)) < 0 || !expect(lx, '.') ||
            !parse_int(lx, 0, INT_MAX, "a tuple index", &ix))
            return -1;
        index = (int)ix;
    } else if (lex_is(lx, '(')) {
        kind = GN_TUPLE;
        lex_next(lx);
        if ((nin = parse_atoms(ps, ')', 0, &in)) < 0 || !expect(lx, ')'))
            return -1;
    } else if (lx->tok.kind == TK_IDENT) {
        char *name = lex_text(lx, ps->tmp);
        if (!(op = op_registry_find(ps->g->ops, name)))
            return fail(lx, "unknown op '%s'", name), -1;
        lex_next(lx);
        if (!expect(lx, '(') || (nin = parse_atoms(ps, ')', 1, &in)) < 0 ||
            (nattr = graph_parse_attr_list(ps->g, lx, &attrs)) < 0 || !expect(lx, ')'))
            return -1;
    } else {
        return fail(lx, "expected a call, a tuple or %%tuple.INDEX"), -1;
    }
    annot an;
    if (!parse_annotation(ps, &an))
        return -1;
    if (an.has_outputs)
        return fail(lx, "outputs= belongs to the output line"), -1;
    const char *name = node_name(&an, local);
    int id = kind == GN_TUPLE_GET ? kiln_graph_tuple_get(ps->g, base, index, name)
                                  : graph_add(ps->g, kind, op, nin, in, nattr, attrs, name);
    if (id < 0) {
        kiln_error_prefix("%s:%d:%d", lx->what, at.line, at.col);
        return -1;
    }
    if (an.has_ty)
        ps->g->nodes[id]->type = an.ty;
    return id;
}

/* "%name: TYPE <span>" */
static int parse_param(parser *ps) {
    lexer *lx = &ps->lx;
    if (lx->tok.kind != TK_LOCAL)
        return fail(lx, "expected a parameter %%name");
    token at = lx->tok;
    char *local = lex_text(lx, ps->tmp);
    if (map_get(&ps->map, local) >= 0)
        return fail(lx, "%%%s is defined twice", local);
    lex_next(lx);
    gtype ty = {0, 0, 0, NULL};
    if (lex_is(lx, ':')) {
        lex_next(lx);
        if (!parse_type(ps, lx, &ty))
            return 0;
    }
    annot an;
    if (!parse_annotation(ps, &an))
        return 0;
    if (an.has_ty || an.has_outputs)
        return fail(lx, "a parameter annotation holds span= only");
    int id = graph_add(ps->g, GN_VAR, NULL, 0, NULL, 0, NULL, an.has_span ? an.span : local);
    if (id < 0) {
        kiln_error_prefix("%s:%d:%d", lx->what, at.line, at.col);
        return 0;
    }
    ps->g->nodes[id]->type = ty;
    return define(ps, local, id);
}

/* "%x = RHS <annotation>;" */
static int parse_let(parser *ps) {
    lexer *lx = &ps->lx;
    char *local = lex_text(lx, ps->tmp);
    if (map_get(&ps->map, local) >= 0)
        return fail(lx, "%%%s is defined twice", local);
    lex_next(lx);
    lex_next(lx); /* '=' */
    int id = parse_rhs(ps, local);
    return id >= 0 && expect(lx, ';') && define(ps, local, id);
}

/* The output line: an atom or (atom, ...), then outputs=[...]. */
static int parse_outputs(parser *ps) {
    lexer *lx = &ps->lx;
    token at = lx->tok;
    int *outs, n;
    if (lex_is(lx, '(')) {
        lex_next(lx);
        if ((n = parse_atoms(ps, ')', 0, &outs)) < 0 || !expect(lx, ')'))
            return 0;
    } else {
        outs = arena_alloc(ps->tmp, sizeof(int));
        if ((outs[0] = parse_atom(ps)) < 0)
            return 0;
        n = 1;
    }
    annot an;
    if (!parse_annotation(ps, &an))
        return 0;
    if (an.has_ty || an.has_span)
        return fail(lx, "the output line takes outputs= only");
    if (an.has_outputs && an.nout != n)
        return fail(lx, "%d outputs but %d output names", n, an.nout);
    if (n == 0)
        return 1;
    if (kiln_graph_set_outputs(ps->g, n, outs, an.has_outputs ? an.outs : NULL) != KILN_OK) {
        kiln_error_prefix("%s:%d:%d", lx->what, at.line, at.col);
        return 0;
    }
    return 1;
}

/* "def @main(PARAMS) { LETS OUTPUTS }", or for a body "fn (PARAMS) { ... }". */
static int parse_function(parser *ps) {
    lexer *lx = &ps->lx;
    if (ps->depth == 0) {
        if (!is_ident(lx, "def"))
            return fail(lx, "expected 'def @main('");
        lex_next(lx);
        if (lx->tok.kind != TK_GLOBAL)
            return fail(lx, "expected a function name @main");
    }
    lex_next(lx); /* @main, or fn */
    if (!expect(lx, '('))
        return 0;
    while (!lex_is(lx, ')')) {
        if (!parse_param(ps))
            return 0;
        if (!comma(lx))
            break;
    }
    if (!expect(lx, ')') || !expect(lx, '{'))
        return 0;
    while (lx->tok.kind == TK_LOCAL && peek_is(lx, '='))
        if (!parse_let(ps))
            return 0;
    if (!parse_outputs(ps))
        return 0;
    if (ps->depth > 0) {
        if (!lex_is(lx, '}'))
            return fail(lx, "expected '}'");
        return 1; /* the attribute parser moves past it */
    }
    if (!expect(lx, '}'))
        return 0;
    if (lx->tok.kind != TK_EOF)
        return fail(lx, "unexpected text after the function");
    return 1;
}

/* The lexer's hook for a sub-graph attribute value: "fn (...) { ... }"
 * at lx, parsed into a new graph with names of its own. */
static int parse_body(void *user, lexer *lx, struct kiln_graph **out) {
    parser *outer = user;
    if (outer->depth >= GRAPH_MAX_BODY_DEPTH)
        return fail(lx, "bodies nest more than %d deep", GRAPH_MAX_BODY_DEPTH);
    body_list *bl = outer->bodies;
    if (bl->n == bl->cap) {
        int ncap = bl->cap ? bl->cap * 2 : 8;
        struct kiln_graph **n = kiln_realloc((void *)bl->g, sizeof(*n) * (size_t)ncap);
        if (!n)
            return fail(lx, "out of memory");
        bl->g = n;
        bl->cap = ncap;
    }
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.lx = *lx;
    ps.lx.graph_user = &ps;
    ps.g = graph_new(outer->g->ops);
    ps.consts = outer->consts;
    ps.tmp = outer->tmp;
    ps.depth = outer->depth + 1;
    ps.bodies = bl;
    if (!ps.g)
        return fail(lx, "out of memory");
    bl->g[bl->n++] = ps.g; /* released when the whole parse ends */
    int ok = parse_function(&ps);
    free((void *)ps.map.keys);
    free(ps.map.ids);
    *lx = ps.lx;
    lx->graph_user = outer;
    *out = ps.g;
    return ok;
}

struct kiln_graph *graph_parse(const char *text, const kiln_npz *constants,
                               const kiln_op_registry *ops) {
    if (!text) {
        kiln_set_error(KILN_ERR_INVALID, "graph text is NULL");
        return NULL;
    }
    if (strnlen(text, MAX_TEXT) == MAX_TEXT) {
        kiln_set_error(KILN_ERR_INVALID, "graph text is over %d bytes", MAX_TEXT);
        return NULL;
    }
    parser ps;
    body_list bodies = {0, 0, NULL};
    memset(&ps, 0, sizeof ps);
    ps.g = graph_new(ops);
    ps.tmp = arena_new();
    ps.consts = constants;
    ps.bodies = &bodies;
    int ok = ps.g && ps.tmp;
    if (ok) {
        lex_init(&ps.lx, text, "graph text");
        ps.lx.parse_graph = parse_body;
        ps.lx.graph_user = &ps;
        ok = parse_function(&ps);
    }
    free((void *)ps.map.keys);
    free(ps.map.ids);
    arena_free(ps.tmp);
    for (int i = 0; i < bodies.n; i++)
        kiln_graph_free(bodies.g[i]);
    free((void *)bodies.g);
    if (!ok) {
        kiln_graph_free(ps.g);
        return NULL;
    }
    return ps.g;
}
