/* pattern_text.c: the text form of patterns (kiln/pattern.h), parsed with
 * the graph text's lexer and attribute syntax, and printed back. */
#include <stdlib.h>
#include <string.h>

#include "pattern_internal.h"

typedef struct {
    lexer lx;
    kiln_pattern_set *s;
    int depth;
} pparser;

#define PATTERN_MAX_DEPTH 200

static kiln_pattern *parse_alt(pparser *P);

static int tok_is(const pparser *P, const char *word) {
    return P->lx.tok.kind == TK_IDENT && (int)strlen(word) == P->lx.tok.len &&
           !strncmp(P->lx.tok.start, word, (size_t)P->lx.tok.len);
}

static int expect(pparser *P, char c) {
    if (!lex_is(&P->lx, c))
        return lex_error(&P->lx, "expected '%c'", c);
    lex_next(&P->lx);
    return 1;
}

static char *tok_name(pparser *P) {
    return lex_text(&P->lx, P->s->a);
}

/* "(P, P, ...)" after an op: the arguments, or nargs -1 without '('. */
static int parse_args(pparser *P, kiln_pattern ***args) {
    if (!lex_is(&P->lx, '('))
        return -1;
    lex_next(&P->lx);
    kiln_pattern *buf[256];
    int n = 0;
    while (!lex_is(&P->lx, ')')) {
        if (n == 256)
            return lex_error(&P->lx, "more than 256 arguments"), -2;
        if (n && !expect(P, ','))
            return -2;
        if (!(buf[n++] = parse_alt(P)))
            return -2;
    }
    lex_next(&P->lx);
    *args = arena_alloc(P->s->a, sizeof(kiln_pattern *) * (size_t)(n ? n : 1));
    memcpy(*args, buf, sizeof(kiln_pattern *) * (size_t)n);
    return n;
}

/* An op pattern: NAME, NAME?, or @class, with [attrs] and (args). */
static kiln_pattern *parse_op(pparser *P) {
    int cls = -1;
    char *name = tok_name(P);
    if (P->lx.tok.kind == TK_GLOBAL && (cls = pattern_class_of(name)) < 0) {
        lex_error(&P->lx,
                  "unknown op class '@%s' (elemwise, broadcast, injective, reduce, "
                  "fusable, opaque)",
                  name);
        return NULL;
    }
    if (cls < 0 && !op_registry_find(P->s->scratch->ops, name)) {
        lex_error(&P->lx, "unknown op '%s'", name);
        return NULL;
    }
    lex_next(&P->lx);
    int optional = cls < 0 && lex_is(&P->lx, '?');
    if (optional)
        lex_next(&P->lx);
    gattr *attrs = NULL;
    int nattr = 0, bracket = lex_is(&P->lx, '[');
    if (bracket) {
        lex_next(&P->lx);
        if ((nattr = graph_parse_attr_list(P->s->scratch, &P->lx, &attrs)) < 0 || !expect(P, ']'))
            return NULL;
    }
    kiln_pattern **args = NULL;
    int nargs = parse_args(P, &args);
    if (nargs == -2)
        return NULL;
    kiln_pattern *p;
    if (optional) {
        if (nargs != 1) {
            lex_error(&P->lx, "an optional op '%s?' takes one argument pattern", name);
            return NULL;
        }
        p = kiln_pattern_optional(P->s, name, args[0]);
    } else if (cls >= 0) {
        p = kiln_pattern_op_class(P->s, cls, nargs, args);
    } else {
        p = kiln_pattern_op(P->s, name, nargs, args);
    }
    if (p && bracket) { /* (an empty list too: the text prints back as it was) */
        p = kiln_pattern_attrs(P->s, p, "");
        if (p)
            p->nattr = nattr, p->attrs = attrs;
    }
    return p;
}

static kiln_pattern *parse_prim(pparser *P) {
    lexer *lx = &P->lx;
    if (lex_is(lx, '*')) {
        lex_next(lx);
        return kiln_pattern_wildcard(P->s);
    }
    if (lex_is(lx, '(')) {
        lex_next(lx);
        kiln_pattern *p = parse_alt(P);
        return p && expect(P, ')') ? p : NULL;
    }
    if (lx->tok.kind == TK_LOCAL) {
        char *name = tok_name(P);
        lex_next(lx);
        kiln_pattern *p = kiln_pattern_named(P->s, name);
        if (lex_is(lx, '=')) {
            if (p) {
                lex_error(lx, "%%%s is defined already", name);
                return NULL;
            }
            lex_next(lx);
            p = parse_prim(P);
        } else if (!p) {
            p = kiln_pattern_wildcard(P->s);
        }
        if (p && !p->name)
            p->name = name;
        return p;
    }
    if (tok_is(P, "const")) {
        lex_next(lx);
        return kiln_pattern_constant(P->s);
    }
    if (tok_is(P, "dom")) {
        lex_next(lx);
        kiln_pattern **args = NULL;
        int n = parse_args(P, &args);
        if (n == -2)
            return NULL;
        if (n != 3) {
            lex_error(lx, "dom takes (parent, path, child)");
            return NULL;
        }
        return kiln_pattern_dominator(P->s, args[0], args[1], args[2]);
    }
    if (lx->tok.kind == TK_IDENT || lx->tok.kind == TK_GLOBAL)
        return parse_op(P);
    lex_error(lx, "expected a pattern");
    return NULL;
}

/* ": float32[1, _, 3]" after a pattern. */
static kiln_pattern *parse_typed(pparser *P) {
    if (++P->depth > PATTERN_MAX_DEPTH) {
        lex_error(&P->lx, "patterns nest more than %d deep", PATTERN_MAX_DEPTH);
        return NULL;
    }
    kiln_pattern *p = parse_prim(P);
    P->depth--;
    if (p && lex_is(&P->lx, '[')) { /* (P)[attrs] */
        lex_next(&P->lx);
        gattr *attrs = NULL;
        int nattr = graph_parse_attr_list(P->s->scratch, &P->lx, &attrs);
        if (nattr < 0 || !expect(P, ']') || !(p = kiln_pattern_attrs(P->s, p, "")))
            return NULL;
        p->nattr = nattr, p->attrs = attrs;
    }
    if (!p || !lex_is(&P->lx, ':'))
        return p;
    lex_next(&P->lx);
    kiln_dtype dt = KILN_DTYPE_COUNT;
    if (P->lx.tok.kind == TK_IDENT) {
        char *name = tok_name(P);
        if (kiln_dtype_parse(name, &dt) != KILN_OK) {
            lex_error(&P->lx, "unknown dtype '%s'", name);
            return NULL;
        }
        lex_next(&P->lx);
    }
    int ndim = -1;
    int64_t dims[KILN_MAX_NDIM];
    if (lex_is(&P->lx, '[')) {
        lex_next(&P->lx);
        ndim = 0;
        while (!lex_is(&P->lx, ']')) {
            if (ndim && !expect(P, ','))
                return NULL;
            if (ndim == KILN_MAX_NDIM) {
                lex_error(&P->lx, "more than %d dims", KILN_MAX_NDIM);
                return NULL;
            }
            if (P->lx.tok.kind == TK_INT && P->lx.tok.i >= 0)
                dims[ndim++] = P->lx.tok.i;
            else if (tok_is(P, "_"))
                dims[ndim++] = -1;
            else
                return lex_error(&P->lx, "expected a dim (an integer or _)"), NULL;
            lex_next(&P->lx);
        }
        lex_next(&P->lx);
    }
    if (dt == KILN_DTYPE_COUNT && ndim < 0) {
        lex_error(&P->lx, "expected a dtype or [dims] after ':'");
        return NULL;
    }
    return kiln_pattern_type(P->s, p, dt, ndim, dims);
}

static kiln_pattern *parse_alt(pparser *P) {
    kiln_pattern *p = parse_typed(P);
    while (p && lex_is(&P->lx, '|')) {
        lex_next(&P->lx);
        kiln_pattern *q = parse_typed(P);
        p = q ? kiln_pattern_alt(P->s, p, q) : NULL;
    }
    return p;
}

kiln_pattern *kiln_pattern_parse(kiln_pattern_set *s, const char *text) {
    if (!s || !text) {
        kiln_set_error(KILN_ERR_INVALID, "pattern parse: needs a set and a text");
        return NULL;
    }
    pparser P = {.s = s};
    lex_init(&P.lx, text, "pattern");
    kiln_pattern *p = parse_alt(&P);
    if (p && P.lx.tok.kind != TK_EOF) {
        lex_error(&P.lx, "unexpected text after the pattern");
        return NULL;
    }
    return p;
}

/* ---- printing ------------------------------------------------------------------ */

static void print_pat(kstr *out, const kiln_pattern *p, char *seen, int top);

/* uses[id]: how often each pattern is reached from the root (at most 2 counted) */
static void count_uses(const kiln_pattern *p, char *uses) {
    if (uses[p->id]) {
        uses[p->id] = 2;
        return;
    }
    uses[p->id] = 1;
    int n = p->kind == PAT_OP ? p->nargs : p->kind == PAT_ALT ? 2 : p->kind == PAT_DOM ? 3 : 1;
    if (p->kind == PAT_WILDCARD || p->kind == PAT_CONST)
        n = 0;
    for (int i = 0; i < n; i++)
        count_uses(p->args[i], uses);
}

static void print_args(kstr *out, const kiln_pattern *p, char *seen) {
    if (p->nargs < 0)
        return;
    kstr_putc(out, '(');
    for (int i = 0; i < p->nargs; i++) {
        if (i)
            kstr_puts(out, ", ");
        print_pat(out, p->args[i], seen, 1);
    }
    kstr_putc(out, ')');
}

static void print_op_head(kstr *out, const kiln_pattern *p) {
    if (p->op)
        kstr_puts(out, p->op);
    else if (p->pred)
        kstr_puts(out, "@where"); /* a C predicate has no text */
    else
        kstr_printf(out, "@%s", pattern_class_name(p->op_class));
}

/* top: p stands where any pattern may (an argument, the whole); else it
 * is an operand of ':' or '|' and an alternation needs parentheses. */
static void print_pat(kstr *out, const kiln_pattern *p, char *seen, int top) {
    if (p->name || seen[p->id] & 2) {
        if (p->name)
            kstr_printf(out, "%%%s", p->name);
        else
            kstr_printf(out, "%%_%d", p->id); /* used twice: one node, so one name */
        if (seen[p->id] & 1 || p->kind == PAT_WILDCARD) {
            seen[p->id] |= 1;
            return;
        }
        kstr_putc(out, '=');
        top = 0;
    }
    seen[p->id] |= 1;
    switch (p->kind) {
    case PAT_WILDCARD: kstr_putc(out, '*'); break;
    case PAT_CONST: kstr_puts(out, "const"); break;
    case PAT_OP:
        print_op_head(out, p);
        print_args(out, p, seen);
        break;
    case PAT_ALT:
        if (!top)
            kstr_putc(out, '(');
        print_pat(out, p->args[0], seen, p->args[0]->kind == PAT_ALT); /* | is left-assoc */
        kstr_puts(out, " | ");
        print_pat(out, p->args[1], seen, 0);
        if (!top)
            kstr_putc(out, ')');
        break;
    case PAT_ATTRS: {
        const kiln_pattern *q = p->args[0];
        if (q->kind == PAT_OP && !q->name) {
            seen[q->id] |= 1;
            print_op_head(out, q);
        } else {
            kstr_putc(out, '(');
            print_pat(out, q, seen, 1);
            kstr_putc(out, ')');
        }
        kstr_putc(out, '[');
        for (int i = 0; i < p->nattr; i++) {
            if (i)
                kstr_puts(out, ", ");
            graph_print_attr(out, &p->attrs[i]);
        }
        kstr_putc(out, ']');
        if (q->kind == PAT_OP && !q->name)
            print_args(out, q, seen);
        break;
    }
    case PAT_TYPE:
        if (!top)
            kstr_putc(out, '(');
        print_pat(out, p->args[0], seen, 0);
        kstr_puts(out, " : ");
        if (p->dtype != KILN_DTYPE_COUNT)
            kstr_puts(out, kiln_dtype_name(p->dtype));
        if (p->ndim >= 0) {
            kstr_putc(out, '[');
            for (int d = 0; d < p->ndim; d++) {
                if (d)
                    kstr_puts(out, ", ");
                if (p->dims[d] < 0)
                    kstr_putc(out, '_');
                else
                    kstr_printf(out, "%lld", (long long)p->dims[d]);
            }
            kstr_putc(out, ']');
        }
        if (!top)
            kstr_putc(out, ')');
        break;
    case PAT_OPTIONAL:
        kstr_printf(out, "%s?(", p->op);
        print_pat(out, p->args[0], seen, 1);
        kstr_putc(out, ')');
        break;
    case PAT_DOM:
        kstr_puts(out, "dom(");
        for (int i = 0; i < 3; i++) {
            if (i)
                kstr_puts(out, ", ");
            print_pat(out, p->args[i], seen, 1);
        }
        kstr_putc(out, ')');
        break;
    }
}

char *kiln_pattern_print(const kiln_pattern *p) {
    if (!p) {
        kiln_set_error(KILN_ERR_INVALID, "pattern print: no pattern");
        return NULL;
    }
    char *seen = kiln_calloc((size_t)p->set->n, 1);
    if (!seen)
        return NULL;
    count_uses(p, seen);
    for (int i = 0; i < p->set->n; i++)
        seen[i] = seen[i] > 1 ? 2 : 0; /* bit 1: named for being shared; bit 0: printed */
    kstr out;
    kstr_init(&out);
    print_pat(&out, p, seen, 1);
    free(seen);
    return kstr_take(&out);
}
