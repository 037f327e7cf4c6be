/* text.c: the lexer of the graph IR's text syntax, and attributes in it:
 * `strides=[2, 2], padding=[1, 1, 1, 1], layout="NCHW", alpha=0.2f`.
 * Every error carries line:column. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

void lex_init(lexer *lx, const char *src, const char *what) {
    memset(lx, 0, sizeof *lx);
    lx->src = lx->p = src;
    lx->line = lx->col = 1;
    lx->what = what;
    lex_next(lx);
}

int lex_error(const lexer *lx, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_set_error(KILN_ERR_INVALID, "%s:%d:%d: %s", lx->what, lx->tok.line, lx->tok.col, msg);
    return 0;
}

static void advance(lexer *lx, int n) {
    for (int i = 0; i < n && *lx->p; i++, lx->p++) {
        if (*lx->p == '\n') {
            lx->line++;
            lx->col = 1;
        } else {
            lx->col++;
        }
    }
}

static int ident_char(char c, int first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '.'));
}

void lex_next(lexer *lx) {
    for (;;) {
        while (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r')
            advance(lx, 1);
        if (lx->p[0] == '/' && lx->p[1] == '/') { /* line comment */
            while (*lx->p && *lx->p != '\n')
                advance(lx, 1);
            continue;
        }
        break;
    }
    token *t = &lx->tok;
    memset(t, 0, sizeof *t);
    t->start = lx->p;
    t->line = lx->line;
    t->col = lx->col;
    const char *p = lx->p;
    if (!*p) {
        t->kind = TK_EOF;
        return;
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        if (!e) {
            t->kind = TK_ERROR;
            lex_error(lx, "unterminated comment");
            return;
        }
        t->kind = TK_COMMENT;
        t->start = p + 2;
        t->len = (int)(e - (p + 2));
        advance(lx, (int)(e + 2 - p));
        return;
    }
    if (*p == '%' || *p == '@') {
        int n = 1;
        while (ident_char(p[n], 0) || (p[n] >= '0' && p[n] <= '9'))
            n++;
        if (n == 1) {
            t->kind = TK_ERROR;
            lex_error(lx, "'%c' must be followed by a name", *p);
            return;
        }
        t->kind = *p == '%' ? TK_LOCAL : TK_GLOBAL;
        t->start = p + 1;
        t->len = n - 1;
        advance(lx, n);
        return;
    }
    if (ident_char(*p, 1)) {
        int n = 1;
        while (ident_char(p[n], 0))
            n++;
        t->kind = TK_IDENT;
        t->len = n;
        /* inf and nan, as printed ("inff", "nanf") */
        if ((n == 4 || n == 3) &&
            (!strncmp(p, "inff", (size_t)n) || !strncmp(p, "nanf", (size_t)n))) {
            t->kind = TK_FLOAT;
            t->f = p[0] == 'i' ? INFINITY : NAN;
        }
        advance(lx, n);
        return;
    }
    if ((*p >= '0' && *p <= '9') || (*p == '-' && p[1] >= '0' && p[1] <= '9') ||
        (*p == '-' && (strncmp(p + 1, "inf", 3) == 0 || strncmp(p + 1, "nan", 3) == 0))) {
        char *end;
        errno = 0;
        long long iv = strtoll(p, &end, 10);
        int is_float = *end == '.' || *end == 'e' || *end == 'E' || *end == 'f' ||
                       strncmp(p + (*p == '-'), "inf", 3) == 0 ||
                       strncmp(p + (*p == '-'), "nan", 3) == 0;
        if (!is_float) {
            if (errno == ERANGE) {
                t->kind = TK_ERROR;
                lex_error(lx, "integer out of range");
                return;
            }
            t->kind = TK_INT;
            t->i = iv;
        } else {
            t->kind = TK_FLOAT;
            t->f = strtod(p, &end);
            if (*end == 'f')
                end++;
        }
        t->len = (int)(end - p);
        advance(lx, t->len);
        return;
    }
    if (*p == '"') {
        int n = 1;
        while (p[n] && p[n] != '"' && p[n] != '\n')
            n += (p[n] == '\\' && p[n + 1]) ? 2 : 1;
        if (p[n] != '"') {
            t->kind = TK_ERROR;
            lex_error(lx, "unterminated string");
            return;
        }
        t->kind = TK_STRING;
        t->start = p + 1;
        t->len = n - 1;
        advance(lx, n + 1);
        return;
    }
    t->kind = TK_PUNCT;
    t->len = 1;
    advance(lx, 1);
}

int lex_is(const lexer *lx, char c) {
    return lx->tok.kind == TK_PUNCT && *lx->tok.start == c;
}

char *lex_text(const lexer *lx, arena *a) {
    char *s = arena_alloc(a, (size_t)lx->tok.len + 1);
    int k = 0;
    for (int i = 0; i < lx->tok.len; i++) {
        char c = lx->tok.start[i];
        if (lx->tok.kind == TK_STRING && c == '\\' && i + 1 < lx->tok.len) {
            c = lx->tok.start[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        s[k++] = c;
    }
    s[k] = 0;
    return s;
}

/* ---- attributes ----------------------------------------------------------- */

static int parse_value(struct kiln_graph *g, lexer *lx, gattr *a) {
    token *t = &lx->tok;
    if (t->kind == TK_INT) {
        a->kind = GA_INT;
        a->i = t->i;
    } else if (t->kind == TK_FLOAT) {
        a->kind = GA_FLOAT;
        a->f = t->f;
    } else if (t->kind == TK_IDENT && lx->parse_graph && t->len == 2 &&
               memcmp(t->start, "fn", 2) == 0) {
        a->kind = GA_GRAPH;
        if (!lx->parse_graph(lx->graph_user, lx, &a->graph))
            return 0; /* at its closing '}' otherwise */
    } else if (t->kind == TK_STRING || t->kind == TK_IDENT) {
        a->kind = GA_STR;
        a->s = lex_text(lx, g->arena);
    } else if (lex_is(lx, '[')) {
        int cap = 8, n = 0, any_float = 0;
        double *vals = malloc(sizeof(double) * (size_t)cap);
        int64_t *ivals = malloc(sizeof(int64_t) * (size_t)cap);
        if (!vals || !ivals) {
            free(vals);
            free(ivals);
            return lex_error(lx, "out of memory");
        }
        lex_next(lx);
        while (!lex_is(lx, ']')) {
            if (t->kind != TK_INT && t->kind != TK_FLOAT) {
                free(vals);
                free(ivals);
                return lex_error(lx, "attribute '%s': lists hold numbers", a->name);
            }
            if (n == cap) {
                cap *= 2;
                double *nv = realloc(vals, sizeof(double) * (size_t)cap);
                int64_t *ni = realloc(ivals, sizeof(int64_t) * (size_t)cap);
                if (nv)
                    vals = nv;
                if (ni)
                    ivals = ni;
                if (!nv || !ni || cap > (1 << 20)) {
                    free(vals);
                    free(ivals);
                    return lex_error(lx, "attribute '%s': list too long", a->name);
                }
            }
            any_float |= t->kind == TK_FLOAT;
            vals[n] = t->kind == TK_FLOAT ? t->f : (double)t->i;
            ivals[n] = t->i;
            n++;
            lex_next(lx);
            if (lex_is(lx, ','))
                lex_next(lx);
            else if (!lex_is(lx, ']')) {
                free(vals);
                free(ivals);
                return lex_error(lx, "attribute '%s': expected ',' or ']' in a list", a->name);
            }
        }
        a->n = n;
        if (any_float) {
            a->kind = GA_FLOATS;
            double *f = arena_alloc(g->arena, sizeof(double) * (size_t)(n ? n : 1));
            memcpy(f, vals, sizeof(double) * (size_t)n);
            a->floats = f;
        } else {
            a->kind = GA_INTS;
            int64_t *iv = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
            memcpy(iv, ivals, sizeof(int64_t) * (size_t)n);
            a->ints = iv;
        }
        free(vals);
        free(ivals);
    } else {
        return lex_error(lx, "attribute '%s': expected a value", a->name);
    }
    lex_next(lx);
    return 1;
}

int graph_parse_attr_list(struct kiln_graph *g, lexer *lx, gattr **out) {
    int cap = 4, n = 0;
    gattr *as = arena_alloc(g->arena, sizeof(gattr) * (size_t)cap);
    while (lx->tok.kind == TK_IDENT) {
        /* an identifier followed by '=' starts an attribute */
        const char *save = lx->p;
        int line = lx->line, col = lx->col;
        token ident = lx->tok;
        lex_next(lx);
        if (!lex_is(lx, '=')) {
            lx->p = save;
            lx->line = line;
            lx->col = col;
            lx->tok = ident;
            break;
        }
        if (n == cap) {
            gattr *na = arena_alloc(g->arena, sizeof(gattr) * (size_t)cap * 2);
            memcpy(na, as, sizeof(gattr) * (size_t)cap);
            as = na;
            cap *= 2;
        }
        gattr *a = &as[n++];
        memset(a, 0, sizeof *a);
        lexer tmp = *lx;
        tmp.tok = ident;
        a->name = lex_text(&tmp, g->arena);
        lex_next(lx);
        if (!parse_value(g, lx, a))
            return -1;
        if (!lex_is(lx, ','))
            break;
        lex_next(lx);
    }
    *out = as;
    return n;
}

int graph_parse_attrs(struct kiln_graph *g, const char *text, gattr **out) {
    lexer lx;
    lex_init(&lx, text, "attributes");
    int n = graph_parse_attr_list(g, &lx, out);
    if (n < 0)
        return -1;
    if (lx.tok.kind != TK_EOF) {
        lex_error(&lx, "expected 'name=value'");
        return -1;
    }
    return n;
}

/* Defaults are parsed once into a process-wide arena, held by a graph of
 * no nodes that only lends its arena to the attribute parser. */
static struct kiln_graph g_defaults_arena;
static struct {
    pthread_mutex_t mu;
    struct kiln_graph *g;
    const attr_schema **keys;
    gattr *vals;
    int n, cap;
} g_defaults = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, 0, 0};

const gattr *graph_default_attr(const kiln_op_def *op, const attr_schema *s) {
    const gattr *r = NULL;
    pthread_mutex_lock(&g_defaults.mu);
    for (int i = 0; i < g_defaults.n && !r; i++)
        if (g_defaults.keys[i] == s)
            r = &g_defaults.vals[i];
    if (!r) {
        if (!g_defaults.g && (g_defaults_arena.arena = arena_new()))
            g_defaults.g = &g_defaults_arena;
        char text[512];
        snprintf(text, sizeof text, "%s=%s", s->name, s->def);
        gattr *a;
        KILN_ASSERT(g_defaults.g && graph_parse_attrs(g_defaults.g, text, &a) == 1 &&
                    "op table defaults must parse");
        if (g_defaults.n == g_defaults.cap) {
            int nc = g_defaults.cap ? g_defaults.cap * 2 : 64;
            const attr_schema **nk = realloc((void *)g_defaults.keys, sizeof(*nk) * (size_t)nc);
            gattr *nv = realloc(g_defaults.vals, sizeof(*nv) * (size_t)nc);
            KILN_ASSERT(nk && nv);
            g_defaults.keys = nk;
            g_defaults.vals = nv;
            g_defaults.cap = nc;
        }
        g_defaults.keys[g_defaults.n] = s;
        g_defaults.vals[g_defaults.n] = *a;
        /* a schema's kind wins: "[1, 1]" for a float list */
        if (a->kind != s->kind && s->kind == GA_FLOAT && a->kind == GA_INT) {
            g_defaults.vals[g_defaults.n].kind = GA_FLOAT;
            g_defaults.vals[g_defaults.n].f = (double)a->i;
        }
        r = &g_defaults.vals[g_defaults.n++];
    }
    pthread_mutex_unlock(&g_defaults.mu);
    (void)op;
    return r;
}

/* 9 significant digits when they read back exactly, else 17. */
static void print_float(kstr *out, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", v);
    if (v == v && strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    kstr_printf(out, "%sf", buf);
}

void graph_print_attr(kstr *out, const gattr *a) {
    kstr_printf(out, "%s=", a->name);
    switch (a->kind) {
    case GA_INT: kstr_printf(out, "%lld", (long long)a->i); break;
    case GA_FLOAT: print_float(out, a->f); break;
    case GA_STR: {
        kstr_putc(out, '"');
        for (const char *c = a->s; *c; c++) {
            if (*c == '"' || *c == '\\')
                kstr_putc(out, '\\');
            if (*c == '\n') {
                kstr_puts(out, "\\n");
                continue;
            }
            kstr_putc(out, *c);
        }
        kstr_putc(out, '"');
        break;
    }
    case GA_INTS:
    case GA_FLOATS:
        kstr_putc(out, '[');
        for (int i = 0; i < a->n; i++) {
            if (i)
                kstr_puts(out, ", ");
            if (a->kind == GA_INTS)
                kstr_printf(out, "%lld", (long long)a->ints[i]);
            else
                print_float(out, a->floats[i]);
        }
        kstr_putc(out, ']');
        break;
    case GA_GRAPH: kstr_puts(out, "fn(...)"); break;
    }
}
