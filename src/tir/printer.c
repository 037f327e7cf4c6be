/* printer.c: deterministic text form of loop-IR expressions, statements and
 * functions (TVM-like). Infix operators get parentheses only where C
 * precedence needs them, so golden tests can compare printed IR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir.h"

/* Printing of each expression op: infix text or function name, and the
 * precedence level (higher binds tighter; 7 is an atom or a call). */
static const struct {
    const char *infix; /* " + " for a binary operator */
    const char *fn;    /* "floordiv" for a call-like binary op */
    int prec;
} OPS[TIR_OP_COUNT] = {
    [TIR_ADD] = {" + ", NULL, 4},
    [TIR_SUB] = {" - ", NULL, 4},
    [TIR_MUL] = {"*", NULL, 5},
    [TIR_DIV] = {" / ", NULL, 5},
    [TIR_MOD] = {" % ", NULL, 5},
    [TIR_FLOORDIV] = {NULL, "floordiv", 7},
    [TIR_FLOORMOD] = {NULL, "floormod", 7},
    [TIR_MIN] = {NULL, "min", 7},
    [TIR_MAX] = {NULL, "max", 7},
    [TIR_EQ] = {" == ", NULL, 3},
    [TIR_NE] = {" != ", NULL, 3},
    [TIR_LT] = {" < ", NULL, 3},
    [TIR_LE] = {" <= ", NULL, 3},
    [TIR_GT] = {" > ", NULL, 3},
    [TIR_GE] = {" >= ", NULL, 3},
    [TIR_AND] = {" && ", NULL, 2},
    [TIR_OR] = {" || ", NULL, 1},
    [TIR_NOT] = {NULL, NULL, 6},
};

static const char *const COMBINERS[TIR_COMBINER_COUNT] = {"sum", "max", "min", "prod"};

static int prec(tir_node n) {
    return (n->op < TIR_OP_COUNT && OPS[n->op].prec) ? OPS[n->op].prec : 7;
}

static void print_name(kstr *out, tir_node v) {
    if (v->name)
        kstr_puts(out, v->name);
    else
        kstr_printf(out, "v%lld", (long long)v->ival);
}

/* x printed inside an operator of level p: parenthesized when it binds looser
 * (or as tight, when `same` asks for it: right operands, comparisons) */
static void print_operand(kstr *out, tir_node x, int p, int same) {
    int q = prec(x);
    int paren = q < p || (same && q == p);
    if (paren)
        kstr_putc(out, '(');
    tir_print_expr(out, x);
    if (paren)
        kstr_putc(out, ')');
}

static void print_list(kstr *out, int n, const tir_node *xs) {
    for (int i = 0; i < n; i++) {
        if (i)
            kstr_puts(out, ", ");
        tir_print_expr(out, xs[i]);
    }
}

static void print_float(kstr *out, kiln_dtype dt, double v) {
    char buf[64];
    if (dt == KILN_FLOAT32) {
        snprintf(buf, sizeof buf, "%.9g", v);
        int plain = !strpbrk(buf, ".e") && !strstr(buf, "inf") && !strstr(buf, "nan");
        kstr_printf(out, "%s%sf", buf, plain ? ".0" : "");
        return;
    }
    /* the shortest text that reads back as v */
    for (int digits = 9; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (isnan(v) || strtod(buf, NULL) == v)
            break;
    }
    kstr_printf(out, "%s(%s)", kiln_dtype_name(dt), buf);
}

/* Expressions are DAGs; printed as trees they can grow exponentially with
 * the depth (x2 = x1 + x0, x3 = x2 + x1, ...). One top-level expression
 * prints at most PRINT_MAX bytes, then "..." for each operand past it, so
 * a dump or a message stays bounded in size and time. */
#define PRINT_MAX ((size_t)1 << 20)
static _Thread_local int print_depth;
static _Thread_local size_t print_limit;

static void print_expr(kstr *out, tir_node e);

void tir_print_expr(kstr *out, tir_node e) {
    if (print_depth == 0)
        print_limit = out->len + PRINT_MAX;
    if (out->len > print_limit) {
        kstr_puts(out, "...");
        return;
    }
    print_depth++;
    print_expr(out, e);
    print_depth--;
}

static void print_expr(kstr *out, tir_node e) {
    const tir_node *s = e->src;
    switch ((tir_op)e->op) {
    case TIR_INT:
        if (e->dtype == KILN_BOOL)
            kstr_puts(out, e->ival ? "True" : "False");
        else if (e->dtype == KILN_UINT64) /* held as its int64 bit pattern */
            kstr_printf(out, "%llu", (unsigned long long)e->ival);
        else
            kstr_printf(out, "%lld", (long long)e->ival);
        return;
    case TIR_FLOAT: print_float(out, (kiln_dtype)e->dtype, e->fval); return;
    case TIR_VAR: print_name(out, e); return;
    case TIR_NOT:
        kstr_putc(out, '!');
        print_operand(out, s[0], OPS[TIR_NOT].prec, 0);
        return;
    case TIR_SELECT:
        kstr_puts(out, "select(");
        print_list(out, 3, s);
        kstr_putc(out, ')');
        return;
    case TIR_CAST:
        kstr_printf(out, "%s(", kiln_dtype_name((kiln_dtype)e->dtype));
        tir_print_expr(out, s[0]);
        kstr_putc(out, ')');
        return;
    case TIR_CALL:
        kstr_printf(out, "%s(", tir_intrin_name((tir_intrin)e->aux));
        print_list(out, (int)e->nsrc, s);
        kstr_putc(out, ')');
        return;
    case TIR_TENSOR_READ:
        kstr_printf(out, "%s[", e->name ? e->name : "?");
        print_list(out, (int)e->nsrc, s);
        kstr_putc(out, ']');
        return;
    case TIR_REDUCE:
        kstr_printf(out, "%s(", e->aux < TIR_COMBINER_COUNT ? COMBINERS[e->aux] : "?");
        tir_print_expr(out, s[0]);
        kstr_puts(out, ", axis=[");
        for (uint32_t i = 1; i + 2 < e->nsrc; i += 3) {
            if (i > 1)
                kstr_puts(out, ", ");
            print_name(out, s[i]);
        }
        kstr_puts(out, "])");
        return;
    case TIR_LOAD:
        print_name(out, s[0]);
        kstr_putc(out, '[');
        tir_print_expr(out, s[1]);
        if (e->nsrc > 2) {
            kstr_puts(out, " where ");
            tir_print_expr(out, s[2]);
        }
        kstr_putc(out, ']');
        return;
    case TIR_RAMP:
        kstr_puts(out, "ramp(");
        print_list(out, 2, s);
        kstr_printf(out, ", %d)", (int)e->lanes);
        return;
    case TIR_BROADCAST:
        kstr_printf(out, "x%d(", (int)e->lanes);
        tir_print_expr(out, s[0]);
        kstr_putc(out, ')');
        return;
    case TIR_CHECK:
        kstr_puts(out, e->ival ? "checked_index_from_end(" : "checked_index(");
        print_list(out, 2, s);
        kstr_putc(out, ')');
        return;
    default: break;
    }
    if (e->op < TIR_OP_COUNT && OPS[e->op].fn) {
        kstr_printf(out, "%s(", OPS[e->op].fn);
        print_list(out, 2, s);
        kstr_putc(out, ')');
    } else if (e->op < TIR_OP_COUNT && OPS[e->op].infix) {
        int p = OPS[e->op].prec;
        print_operand(out, s[0], p, p == 3); /* comparisons never chain bare */
        kstr_puts(out, OPS[e->op].infix);
        print_operand(out, s[1], p, 1);
    } else {
        kstr_printf(out, "<%s>", tir_op_name((tir_op)e->op));
    }
}

static void print_body(kstr *out, tir_node body, int indent) {
    kstr_puts(out, " {\n");
    tir_print_stmt(out, body, indent + 1);
    kstr_indent(out, indent);
    kstr_putc(out, '}');
}

void tir_print_stmt(kstr *out, tir_node st, int indent) {
    static const char *const kinds[] = {"for", "parallel", "vectorized", "unrolled"};
    const tir_node *s = st->src;
    if (st->op == TIR_SEQ) {
        for (uint32_t i = 0; i < st->nsrc; i++)
            tir_print_stmt(out, s[i], indent);
        return;
    }
    kstr_indent(out, indent);
    switch ((tir_op)st->op) {
    case TIR_FOR:
        if (st->aux == TIR_FOR_THREAD) {
            kstr_puts(out, "launch_thread (");
            print_name(out, s[0]);
            kstr_printf(out, ": %s, ", st->name ? st->name : "?");
        } else {
            kstr_printf(out, "%s (", st->aux < 4 ? kinds[st->aux] : "for");
            print_name(out, s[0]);
            kstr_puts(out, ", ");
        }
        print_list(out, 2, s + 1);
        kstr_putc(out, ')');
        print_body(out, s[3], indent);
        break;
    case TIR_STORE:
        print_name(out, s[0]);
        kstr_putc(out, '[');
        tir_print_expr(out, s[1]);
        if (st->nsrc > 3) {
            kstr_puts(out, " where ");
            tir_print_expr(out, s[3]);
        }
        kstr_puts(out, "] = ");
        tir_print_expr(out, s[2]);
        break;
    case TIR_PROVIDE:
        kstr_printf(out, "%s[", st->name ? st->name : "?");
        print_list(out, (int)st->nsrc - 1, s + 1);
        kstr_puts(out, "] = ");
        tir_print_expr(out, s[0]);
        break;
    case TIR_ALLOCATE:
        kstr_puts(out, "allocate ");
        print_name(out, s[0]);
        kstr_printf(out, ": %s[", kiln_dtype_name((kiln_dtype)s[0]->aux));
        tir_print_expr(out, s[1]);
        kstr_printf(out, "], %s", st->name ? st->name : "global");
        print_body(out, s[2], indent);
        break;
    case TIR_IF:
        kstr_puts(out, "if (");
        tir_print_expr(out, s[0]);
        kstr_putc(out, ')');
        print_body(out, s[1], indent);
        if (st->nsrc > 2) {
            kstr_puts(out, " else");
            print_body(out, s[2], indent);
        }
        break;
    default: tir_print_expr(out, st); break;
    }
    kstr_putc(out, '\n');
}

void tir_print_func(kstr *out, const tir_func *f) {
    kstr_printf(out, "primfn %s(", f->name ? f->name : "?");
    for (int i = 0; i < f->nparams; i++) {
        const tir_param *p = &f->params[i];
        kstr_printf(out, "%s%s: %s[", i ? ", " : "", p->name ? p->name : "?",
                    kiln_dtype_name(p->dtype));
        print_list(out, p->ndim, p->shape);
        kstr_putc(out, ']');
    }
    kstr_puts(out, ") {\n");
    if (f->body)
        tir_print_stmt(out, f->body, 1);
    kstr_puts(out, "}\n");
}

int kiln_expr_print(kiln_expr e, char *buf, size_t cap) {
    kstr s;
    kstr_init(&s);
    if (e)
        tir_print_expr(&s, e);
    else
        kstr_puts(&s, "(null)");
    size_t len = s.oom ? 0 : s.len;
    if (buf && cap) {
        size_t m = len < cap - 1 ? len : cap - 1;
        if (m)
            memcpy(buf, s.buf, m);
        buf[m] = '\0';
    }
    kstr_free(&s);
    return (int)len;
}
