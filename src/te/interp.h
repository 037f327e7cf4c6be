/* interp.h: the reference interpreter of tensor expressions (interp.c).
 *
 * te_eval computes compute tensors directly in C on concrete arrays, with
 * no schedule, no code generation and no compiler: it is what constant
 * folding runs, and the oracle kernel tests compare compiled code against.
 * Each compute stage the outputs depend on is evaluated once, in full, into
 * a buffer of its own (so a stage read many times costs one evaluation).
 * Arithmetic follows the generated code's: each dtype in its own arithmetic
 * (float32 in float, float16 and bfloat16 in float rounded back after each
 * operation, integers wrapping at their width), integer division by
 * base/intdiv.h's rule, float min/max propagating NaN, round half to even,
 * and a select or a logical and/or evaluating only the operand its
 * condition picks (as C's ?:, && and ||), so a padded read outside its
 * input is never made. Reductions combine in the order of their axes, the
 * first outermost, from the identity the lowering uses. Conversions of
 * NaN or out-of-range floats to integers (undefined in C) saturate, NaN
 * giving 0. */
#ifndef KILN_TE_INTERP_H
#define KILN_TE_INTERP_H

#include "kiln/runtime.h"
#include "te_internal.h"

/* The default cap on the elements of all stages of one evaluation. */
#define TE_EVAL_MAX_ELEMENTS ((int64_t)1 << 27)

typedef struct {
    /* Values of the symbolic sizes (kiln_var) the tensors use. */
    int nvars;
    const kiln_expr *vars;
    const int64_t *var_values;
    /* Cap on the elements of all evaluated stages together (0: the default,
     * TE_EVAL_MAX_ELEMENTS); more is an error, not an allocation. */
    int64_t max_elements;
} te_eval_options;

/* Evaluate outputs[0..nout) (compute tensors or placeholders) on the
 * values of the placeholders they read: values[i] is the array of
 * placeholders[i] (its dtype and shape must match; any strides). Writes a
 * new compact array per output to results (the caller frees them), or
 * returns an error naming the tensor (a missing placeholder value, an
 * unbound size, a read outside a tensor, an expression kind that is not a
 * tensor expression, a stage over the cap; KILN_ERR_RANGE for a checked
 * index out of range, kiln_checked_index) and writes nothing. opts may be
 * NULL. */
KILN_HIDDEN kiln_status te_eval(int nout, kiln_tensor *const *outputs, int nin,
                                kiln_tensor *const *placeholders, const kiln_ndarray *const *values,
                                const te_eval_options *opts, kiln_ndarray **results);

/* float16 and bfloat16 bits to float and back (round to nearest even; NaN
 * stays NaN). */
KILN_HIDDEN float te_half_to_float(uint16_t h);
KILN_HIDDEN uint16_t te_float_to_half(float f);
KILN_HIDDEN float te_bf16_to_float(uint16_t h);
KILN_HIDDEN uint16_t te_float_to_bf16(float f);

#endif
