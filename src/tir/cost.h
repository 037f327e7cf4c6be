/* cost.h: what a lowered kernel costs, counted at compile time for the
 * roofline profile (`kiln run --profile`, docs/PROFILING.md): the
 * floating-point operations it executes and the bytes of its arguments.
 *
 * A count is an integer, or, where a loop extent or an argument's dim is a
 * symbolic size, a dim expression (the syntax of runtime/dim_expr.h) over
 * the function's size variables, which the runtime evaluates per run from
 * the sizes it binds. A count that cannot be written so is unknown. */
#ifndef KILN_TIR_COST_H
#define KILN_TIR_COST_H

#include "tir.h"

/* The longest expression a count may be: DIM_EXPR_MAX_LEN. */
#define TIR_COST_MAX_EXPR 256

typedef struct {
    int known;                        /* 0: not counted */
    int64_t value;                    /* the count, when expr is "" */
    char expr[TIR_COST_MAX_EXPR + 1]; /* or a dim expression over f's size variables */
} tir_count;

/* Floating-point operations one call of f executes: every float add,
 * subtract, multiply, divide, min and max counts 1 per lane (a multiply-add
 * is 2), every float intrinsic call (exp, erf, sqrt, ...) 1 per lane;
 * comparisons, selects, casts, loads and integer arithmetic count 0. A
 * subexpression one store reads twice counts once (the renderer computes it
 * once). Loops multiply their body's count by their extent; a guard
 * (a split's tail, a region's edge) is decided for every iteration of the
 * loops it depends on, so padded iterations do not count, up to a budget of
 * iterations, past which, and for a guard that reads data or a symbolic
 * size, the guarded statement counts as if taken (an upper bound). */
KILN_HIDDEN void tir_func_flops(const tir_func *f, tir_count *out);

/* The compulsory bytes of one call: the size of each argument, inputs and
 * outputs, once. */
KILN_HIDDEN void tir_func_bytes(const tir_func *f, tir_count *out);

#endif
