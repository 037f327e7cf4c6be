/* dim_expr.c: parsing dim expressions into postfix programs and evaluating
 * them with checked int64 arithmetic (dim_expr.h has the syntax). The
 * parser is recursive descent; its recursion is bounded by
 * DIM_EXPR_MAX_DEPTH, and every token emits at most one instruction, so a
 * program and the evaluator's stack never exceed DIM_EXPR_MAX_LEN. */
#include <string.h>

#include "dim_expr.h"

#define STR_(x) #x
#define STR(x) STR_(x)

typedef enum {
    OP_CONST,
    OP_VAR,
    OP_NEG,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_MIN,
    OP_MAX
} op;

struct dim_insn {
    int op;
    int var;     /* OP_VAR */
    int64_t val; /* OP_CONST */
};

/* ---- variables ---------------------------------------------------------------- */

static uint32_t hash_name(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The hash slot of name s[0, n): its variable's, or the empty one it would take. */
static int *var_slot(const dim_vars *v, const char *s, size_t n) {
    uint32_t mask = (uint32_t)(2 * v->cap - 1);
    for (uint32_t i = hash_name(s, n) & mask;; i = (i + 1) & mask) {
        int *sl = &v->slot[i];
        if (!*sl)
            return sl;
        const char *name = v->names[*sl - 1];
        if (strncmp(name, s, n) == 0 && name[n] == 0)
            return sl;
    }
}

/* The index of variable s[0, n), added if new. */
static int var_intern(dim_vars *v, const char *s, size_t n) {
    if (v->cap) {
        int *sl = var_slot(v, s, n);
        if (*sl)
            return *sl - 1;
    }
    if (v->n == v->cap) { /* grow: the arena keeps the old arrays, at most as much again */
        int cap = v->cap ? 2 * v->cap : 8;
        const char **names = arena_alloc(v->ar, (size_t)cap * sizeof *names);
        if (v->n)
            memcpy(names, v->names, (size_t)v->n * sizeof *names);
        v->names = names;
        v->cap = cap;
        v->slot = arena_alloc(v->ar, (size_t)(2 * cap) * sizeof *v->slot);
        for (int k = 0; k < v->n; k++)
            *var_slot(v, names[k], strlen(names[k])) = k + 1;
    }
    char *name = arena_alloc(v->ar, n + 1);
    memcpy(name, s, n);
    v->names[v->n] = name;
    *var_slot(v, s, n) = v->n + 1;
    return v->n++;
}

/* ---- parsing ------------------------------------------------------------------ */

typedef struct {
    dim_vars *vars;
    const char *text;
    size_t len, pos;
    int depth, ncode;
    dim_insn code[DIM_EXPR_MAX_LEN];
} parser;

static int is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c) {
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static void skip_space(parser *p) {
    while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t'))
        p->pos++;
}

static int fail(parser *p, const char *what) {
    unsigned char c = p->pos < p->len ? (unsigned char)p->text[p->pos] : 0;
    if (p->pos >= p->len)
        kiln_set_error(KILN_ERR_INVALID, "dim expression '%s': %s at the end", p->text, what);
    else if (c > ' ' && c < 127)
        kiln_set_error(KILN_ERR_INVALID, "dim expression '%s': %s at byte %zu ('%c')", p->text,
                       what, p->pos, c);
    else
        kiln_set_error(KILN_ERR_INVALID, "dim expression '%s': %s at byte %zu (0x%02x)", p->text,
                       what, p->pos, c);
    return 0;
}

/* Consume s if the text continues with it (after spaces). */
static int accept(parser *p, const char *s) {
    skip_space(p);
    size_t n = strlen(s);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, s, n) != 0)
        return 0;
    p->pos += n;
    return 1;
}

static void emit(parser *p, int o, int var, int64_t val) {
    KILN_ASSERT(p->ncode < DIM_EXPR_MAX_LEN); /* one instruction per token at most */
    p->code[p->ncode++] = (dim_insn){o, var, val};
}

static int parse_sum(parser *p);

static int parse_number(parser *p) {
    int64_t v = 0;
    while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9') {
        if (!kiln_mul_ok(v, 10, &v) || !kiln_add_ok(v, p->text[p->pos] - '0', &v))
            return fail(p, "the number does not fit int64");
        p->pos++;
    }
    emit(p, OP_CONST, 0, v);
    return 1;
}

/* min(a, b) or max(a, b), the name consumed. */
static int parse_call(parser *p, int o) {
    if (!accept(p, "("))
        return fail(p, "min and max take two arguments: expected '('");
    if (!parse_sum(p))
        return 0;
    if (!accept(p, ","))
        return fail(p, "expected ','");
    if (!parse_sum(p))
        return 0;
    if (!accept(p, ")"))
        return fail(p, "expected ')'");
    emit(p, o, 0, 0);
    return 1;
}

/* A number, a variable, min/max(...), (sum), or -unary. */
static int parse_unary(parser *p) {
    if (++p->depth > DIM_EXPR_MAX_DEPTH)
        return fail(p, "nested more than " STR(DIM_EXPR_MAX_DEPTH) " levels deep");
    int ok;
    skip_space(p);
    char c = p->pos < p->len ? p->text[p->pos] : 0;
    if (accept(p, "-")) {
        if ((ok = parse_unary(p)) != 0)
            emit(p, OP_NEG, 0, 0);
    } else if (accept(p, "(")) {
        ok = parse_sum(p) && (accept(p, ")") || fail(p, "expected ')'"));
    } else if (c >= '0' && c <= '9') {
        ok = parse_number(p);
    } else if (is_name_start(c)) {
        size_t start = p->pos;
        while (p->pos < p->len && is_name_char(p->text[p->pos]))
            p->pos++;
        size_t n = p->pos - start;
        const char *s = p->text + start;
        if (n == 3 && (memcmp(s, "min", 3) == 0 || memcmp(s, "max", 3) == 0))
            ok = parse_call(p, s[1] == 'i' ? OP_MIN : OP_MAX);
        else if ((ok = 1) != 0)
            emit(p, OP_VAR, var_intern(p->vars, s, n), 0);
    } else {
        ok = fail(p, "expected a number, a name, '(' or '-'");
    }
    p->depth--;
    return ok;
}

static int parse_product(parser *p) {
    if (!parse_unary(p))
        return 0;
    for (;;) {
        int o = accept(p, "*") ? OP_MUL : accept(p, "//") ? OP_DIV : accept(p, "%") ? OP_MOD : -1;
        if (o < 0)
            return 1;
        if (!parse_unary(p))
            return 0;
        emit(p, o, 0, 0);
    }
}

static int parse_sum(parser *p) {
    int ok = parse_product(p);
    while (ok) {
        int o = accept(p, "+") ? OP_ADD : accept(p, "-") ? OP_SUB : -1;
        if (o < 0)
            break;
        if ((ok = parse_product(p)) != 0)
            emit(p, o, 0, 0);
    }
    return ok;
}

const dim_expr *dim_expr_parse(dim_vars *vars, const char *text, size_t len) {
    if (len > DIM_EXPR_MAX_LEN || strlen(text) != len) {
        kiln_set_error(KILN_ERR_INVALID,
                       "a dim expression has at most %d bytes and no NUL (this one has %zu)",
                       DIM_EXPR_MAX_LEN, len);
        return NULL;
    }
    parser ps = {vars, text, len, 0, 0, 0, {{0, 0, 0}}}, *p = &ps;
    int ok = parse_sum(p);
    skip_space(p);
    if (ok && p->pos < p->len)
        ok = fail(p, "expected an operator");
    if (!ok)
        return NULL;
    dim_expr *e = arena_alloc(vars->ar, sizeof *e);
    dim_insn *code = arena_alloc(vars->ar, (size_t)p->ncode * sizeof *code);
    memcpy(code, p->code, (size_t)p->ncode * sizeof *code);
    e->text = arena_strdup(vars->ar, text);
    e->code = code;
    e->ncode = p->ncode;
    e->var = p->ncode == 1 && code[0].op == OP_VAR ? code[0].var : -1;
    return e;
}

int dim_expr_uses(const dim_expr *e, int k) {
    for (int i = 0; i < e->ncode; i++)
        if (e->code[i].op == OP_VAR && e->code[i].var == k)
            return 1;
    return 0;
}

int dim_expr_is_const(const dim_expr *e) {
    for (int i = 0; i < e->ncode; i++)
        if (e->code[i].op == OP_VAR)
            return 0;
    return 1;
}

/* ---- evaluation --------------------------------------------------------------- */

/* a o b into *out; 0 on overflow, -1 on a zero divisor. */
static int apply(int o, int64_t a, int64_t b, int64_t *out) {
    switch (o) {
    case OP_ADD: return kiln_add_ok(a, b, out);
    case OP_SUB: return !__builtin_sub_overflow(a, b, out);
    case OP_MUL: return kiln_mul_ok(a, b, out);
    case OP_MIN: *out = a < b ? a : b; return 1;
    case OP_MAX: *out = a > b ? a : b; return 1;
    default: break;
    }
    if (b == 0)
        return -1;
    if (b == -1) { /* INT64_MIN / -1 overflows, and INT64_MIN % -1 is undefined in C */
        if (o != OP_MOD && a == INT64_MIN)
            return 0;
        *out = o == OP_MOD ? 0 : -a;
        return 1;
    }
    *out = o == OP_DIV ? kiln_floordiv_i64(a, b) : kiln_floormod_i64(a, b);
    return 1;
}

kiln_status dim_expr_eval(const dim_expr *e, const int64_t *vals, int64_t *out) {
    int64_t st[DIM_EXPR_MAX_LEN];
    int sp = 0;
    for (int i = 0; i < e->ncode; i++) {
        const dim_insn *in = &e->code[i];
        int r = 1;
        switch (in->op) {
        case OP_CONST: st[sp++] = in->val; break;
        case OP_VAR: st[sp++] = vals[in->var]; break;
        case OP_NEG:
            r = st[sp - 1] != INT64_MIN;
            st[sp - 1] = r ? -st[sp - 1] : 0;
            break;
        default:
            sp--;
            r = apply(in->op, st[sp - 1], st[sp], &st[sp - 1]);
            break;
        }
        if (r == 0)
            return kiln_set_error(KILN_ERR_INVALID, "'%s' overflows int64", e->text);
        if (r < 0)
            return kiln_set_error(KILN_ERR_INVALID, "'%s' divides by zero", e->text);
    }
    KILN_ASSERT(sp == 1);
    if (st[0] < 0)
        return kiln_set_error(KILN_ERR_INVALID, "'%s' is negative (%lld)", e->text,
                              (long long)st[0]);
    *out = st[0];
    return KILN_OK;
}
