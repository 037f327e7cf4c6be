/* dim_expr.h: the dim expressions of a plan's symbolic shapes (mod.json's
 * attrs.shape may hold a string for a dim, such as "n", "n*12" or
 * "(s+1)//2"). The syntax: decimal integer literals, variable names
 * ([A-Za-z_][A-Za-z0-9_]*), binary + - *, // (floor division) and %
 * (floor modulo, the sign of the divisor), unary -, min(a, b), max(a, b)
 * and parentheses; * // % bind tighter than + -, and operators of one
 * level group from the left. Spaces and tabs may separate tokens.
 *
 * An expression is parsed once, at load, into a postfix program in the
 * model's arena, its variables interned in a per-model table (dim_vars),
 * and evaluated per run with checked int64 arithmetic: an overflow, a
 * division or modulo by zero and a negative result are errors, never
 * undefined behaviour. A hostile plan cannot make the parser recurse or
 * the evaluator's stack grow without bound: an expression has at most
 * DIM_EXPR_MAX_LEN bytes and DIM_EXPR_MAX_DEPTH levels of nesting. */
#ifndef KILN_DIM_EXPR_H
#define KILN_DIM_EXPR_H

#include "../base/base_internal.h"

#define DIM_EXPR_MAX_LEN 256
#define DIM_EXPR_MAX_DEPTH 32

/* The variables of one model: names interned in an arena, numbered from 0
 * in order of first appearance. Zero-initialise it, with the arena set. */
typedef struct {
    arena *ar;
    int n, cap;
    const char **names;
    int *slot; /* open-addressing hash: 2 * cap slots of variable index + 1, 0 empty */
} dim_vars;

typedef struct dim_insn dim_insn;

typedef struct {
    const char *text; /* the expression as written */
    int var;          /* >= 0: the expression is this variable alone */
    int ncode;
    const dim_insn *code; /* postfix */
} dim_expr;

/* Parse text[0, len) into an expression in vars->ar, interning its
 * variables in vars. NULL with an error (KILN_ERR_INVALID) that quotes the
 * text and says what is wrong where. */
KILN_HIDDEN const dim_expr *dim_expr_parse(dim_vars *vars, const char *text, size_t len);
/* 1 if e uses no variable (then dim_expr_eval needs no values). */
KILN_HIDDEN int dim_expr_is_const(const dim_expr *e);
/* Evaluate e with variable k = vals[k]: KILN_OK and *out >= 0, or
 * KILN_ERR_INVALID with an error quoting the expression and saying what
 * went wrong (an overflow, a division by zero, a negative result). */
KILN_HIDDEN kiln_status dim_expr_eval(const dim_expr *e, const int64_t *vals, int64_t *out);
/* 1 if e reads variable k. */
KILN_HIDDEN int dim_expr_uses(const dim_expr *e, int k);

#endif
