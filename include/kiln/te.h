/* kiln/te.h: tensor expressions. A kiln_ctx owns every expression, tensor
 * and schedule made in it and frees them at once. Expressions are immutable
 * and hash-consed: equal expressions are the same handle.
 *
 * Errors propagate: a builder given NULL returns NULL, and a builder given
 * inputs of mismatched dtypes records an error and returns NULL. Calls that
 * consume an expression (kiln_compute, ...) report the first such error. */
#ifndef KILN_TE_H
#define KILN_TE_H

#include "kiln/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_ctx kiln_ctx;
/* An expression (also a variable or an iteration axis). */
typedef const struct kiln_node *kiln_expr;
/* A tensor: a placeholder or the output of a compute. */
typedef struct kiln_tensor kiln_tensor;

KILN_API kiln_ctx *kiln_ctx_new(void);
/* Free the context and everything made in it. NULL is a no-op. */
KILN_API void kiln_ctx_free(kiln_ctx *ctx);

/* ---- leaves --------------------------------------------------------------- */
/* A symbolic int64 size variable (TVM's te.var / te.size_var). */
KILN_API kiln_expr kiln_var(kiln_ctx *ctx, const char *name);
/* The context's one size variable called name: every call with the same
 * name returns the same variable (kiln_var makes a new one each time). A
 * graph's symbolic dim "n" is kiln_size_var(ctx, "n") in every kernel. */
KILN_API kiln_expr kiln_size_var(kiln_ctx *ctx, const char *name);
KILN_API kiln_expr kiln_int(kiln_ctx *ctx, int64_t v);                 /* int64 */
KILN_API kiln_expr kiln_const(kiln_ctx *ctx, kiln_dtype dt, double v); /* any dtype */
KILN_API kiln_expr kiln_float(kiln_ctx *ctx, double v);                /* float32 */
/* A reduce axis iterating over [min, min+extent). */
KILN_API kiln_expr kiln_reduce_axis(kiln_ctx *ctx, kiln_expr min, kiln_expr extent,
                                    const char *name);

/* ---- arithmetic, comparison, logic --------------------------------------
 * Binary builders require equal dtypes, except that a constant operand is
 * converted to the other operand's dtype. */
KILN_API kiln_expr kiln_add(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_sub(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_mul(kiln_expr a, kiln_expr b);
/* Float division, or C (truncating) division for integers. */
KILN_API kiln_expr kiln_div(kiln_expr a, kiln_expr b);
/* The truncating remainder: its sign is a's (C's %, and C's fmod for floats). */
KILN_API kiln_expr kiln_mod(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_floordiv(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_floormod(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_min(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_max(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_neg(kiln_expr a);
KILN_API kiln_expr kiln_eq(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_ne(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_lt(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_le(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_gt(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_ge(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_and(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_or(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_not(kiln_expr a);
/* cond ? a : b, evaluating both (TVM's select and if_then_else). */
KILN_API kiln_expr kiln_select(kiln_expr cond, kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_cast(kiln_dtype dt, kiln_expr a); /* astype */
/* An index that comes from data, checked against an extent n >= 1 (an
 * integer expression; it must be positive when the code runs). The value is
 * the index as int64, with a negative one counted from the end (index + n)
 * if from_end; an index outside [-n, n-1] (from_end) or [0, n-1] gives 0,
 * so what it indexes is still read in bounds, and is reported: the
 * interpreter fails with KILN_ERR_RANGE, a compiled kernel returns
 * KILN_KERNEL_EINDEX (kiln_function_call: KILN_ERR_RANGE) after writing
 * every output. For Gather/Take, Scatter, OneHot and the like. */
KILN_API kiln_expr kiln_checked_index(kiln_expr index, kiln_expr n, int from_end);

/* ---- math intrinsics (float operands) ----------------------------------- */
KILN_API kiln_expr kiln_exp(kiln_expr a);
KILN_API kiln_expr kiln_log(kiln_expr a);
KILN_API kiln_expr kiln_sqrt(kiln_expr a);
KILN_API kiln_expr kiln_rsqrt(kiln_expr a);
KILN_API kiln_expr kiln_tanh(kiln_expr a);
KILN_API kiln_expr kiln_sigmoid(kiln_expr a);
KILN_API kiln_expr kiln_erf(kiln_expr a);
KILN_API kiln_expr kiln_pow(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_floor(kiln_expr a);
KILN_API kiln_expr kiln_ceil(kiln_expr a);
KILN_API kiln_expr kiln_abs(kiln_expr a);   /* also integers */
KILN_API kiln_expr kiln_round(kiln_expr a); /* half to even, as numpy */
/* Trigonometric and hyperbolic functions and their inverses (C's sin, ...;
 * outside an inverse's domain the result is NaN). */
KILN_API kiln_expr kiln_sin(kiln_expr a);
KILN_API kiln_expr kiln_cos(kiln_expr a);
KILN_API kiln_expr kiln_tan(kiln_expr a);
KILN_API kiln_expr kiln_asin(kiln_expr a);
KILN_API kiln_expr kiln_acos(kiln_expr a);
KILN_API kiln_expr kiln_atan(kiln_expr a);
KILN_API kiln_expr kiln_sinh(kiln_expr a);
KILN_API kiln_expr kiln_cosh(kiln_expr a);
KILN_API kiln_expr kiln_asinh(kiln_expr a);
KILN_API kiln_expr kiln_acosh(kiln_expr a);
KILN_API kiln_expr kiln_atanh(kiln_expr a);

/* ---- bit shifts (integer operands, not bool) ----------------------------
 * As numpy's left_shift and right_shift: a shift by b outside [0, bits of
 * the dtype) gives 0, or for a right shift of a negative a, -1; a right
 * shift of a signed integer is arithmetic, a left shift wraps. */
KILN_API kiln_expr kiln_shl(kiln_expr a, kiln_expr b);
KILN_API kiln_expr kiln_shr(kiln_expr a, kiln_expr b);

/* ---- integer dot products ------------------------------------------------
 * The int32 sum of int32(a[j]) * int32(b[j]) for j < k, k = 2 or 4; the
 * operands integers of at most 16 bits (not bool). The int8 kernels' step:
 * vectorized where b's k values per lane are consecutive (lane l at
 * l * k + j) and a's are the same in every lane, it becomes one vpdpbusd
 * (k = 4, uint8 x int8, VNNI) or vpmaddwd (k = 2, uint8 x int16) on x86,
 * and an exact loop elsewhere. */
KILN_API kiln_expr kiln_dot(int k, const kiln_expr *a, const kiln_expr *b);

/* ---- reductions ----------------------------------------------------------
 * A reduction must be the whole body of a compute. `axes` are reduce axes. */
KILN_API kiln_expr kiln_sum(kiln_expr a, int naxes, const kiln_expr *axes);
KILN_API kiln_expr kiln_max_reduce(kiln_expr a, int naxes, const kiln_expr *axes);
KILN_API kiln_expr kiln_min_reduce(kiln_expr a, int naxes, const kiln_expr *axes);
KILN_API kiln_expr kiln_prod(kiln_expr a, int naxes, const kiln_expr *axes);

/* ---- tensors ---------------------------------------------------------------- */
KILN_API kiln_tensor *kiln_placeholder(kiln_ctx *ctx, int ndim, const kiln_expr *shape,
                                       kiln_dtype dt, const char *name);
/* The body of a compute: given the index variables, return the element. */
typedef kiln_expr (*kiln_compute_fn)(kiln_ctx *ctx, const kiln_expr *idx, void *user);
/* A tensor defined elementwise by fn. NULL with an error if fn fails. */
KILN_API kiln_tensor *kiln_compute(kiln_ctx *ctx, int ndim, const kiln_expr *shape,
                                   kiln_compute_fn fn, void *user, const char *name);
/* ---- recurrent computes (scans) ---------------------------------------------
 * A compute whose element may read the compute's own earlier elements along
 * one declared scan axis (like TVM's te.scan, simpler): a prefix sum
 * y[t] = x[t] + y[t-1], a first-order IIR filter, a greedy selection such
 * as non-maximum suppression. The self-reference is explicit, in two steps:
 *
 *     kiln_tensor *y = kiln_scan_declare(ctx, 1, &n, KILN_FLOAT32, 0, "y");
 *     kiln_scan_define(y, body, user);   (body reads y with kiln_tensor_at)
 *
 * The rule, checked by kiln_scan_define (a body it cannot prove follows it
 * is refused with an error naming the read): every read of y in its body is
 * at the element's own index on every axis but the scan axis, and on the
 * scan axis at an index provably below the element's own (t - 1, t - k, or
 * a reduce axis whose domain ends before t: a reduction over [0, t) may
 * read y at it). A read at t - 1 must be guarded for t = 0 by a select
 * (kiln_select(kiln_gt(t, 0), y[t-1], init)); the lanes a select does not
 * pick are never read. The reduce axes' domains may not read y.
 * Until it is defined, y may be read only by its own body (other computes
 * that read it are refused). The dtype is declared: the body must have it.
 *
 * Schedules (kiln/schedule.h): the stage is always materialized, and its
 * scan axis stays one serial loop around the stage's reduce axes: split,
 * fuse, reorder, parallel, vectorize or bind of the scan axis, a reorder
 * that puts a reduce axis outside it, compute_inline, compute_at and
 * cache_write of the stage, and a cache_read of y for y itself are refused
 * with an error. The other data axes may be split, reordered, vectorized
 * or run in parallel: elements at one scan index do not read each other. */
KILN_API kiln_tensor *kiln_scan_declare(kiln_ctx *ctx, int ndim, const kiln_expr *shape,
                                        kiln_dtype dt, int scan_axis, const char *name);
/* Give a declared scan its body; KILN_OK, or an error (the scan stays
 * declared and undefined) on a body that breaks the rule above. */
KILN_API kiln_status kiln_scan_define(kiln_tensor *t, kiln_compute_fn fn, void *user);
/* The scan axis of a scan, or -1 for any other tensor. */
KILN_API int kiln_tensor_scan_axis(const kiln_tensor *t);
/* t[idx...]; NULL (error) on a wrong index count or non-integer index. */
KILN_API kiln_expr kiln_tensor_at(kiln_tensor *t, int n, const kiln_expr *idx);
KILN_API int kiln_tensor_ndim(const kiln_tensor *t);
KILN_API kiln_expr kiln_tensor_dim(const kiln_tensor *t, int i);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API const char *kiln_tensor_name(const kiln_tensor *t);
/* Axis i of a compute's output (data-parallel), or NULL for a placeholder. */
KILN_API kiln_expr kiln_tensor_axis(const kiln_tensor *t, int i);
/* Reduce axis i of a compute whose body is a reduction, or NULL. */
KILN_API kiln_expr kiln_tensor_reduce_axis(const kiln_tensor *t, int i);
KILN_API int kiln_tensor_num_reduce_axes(const kiln_tensor *t);
/* The tensors a compute reads (TVM's op.input_tensors), in first-read
 * order: returns the count and writes up to cap of them (0 for a
 * placeholder). */
KILN_API int kiln_tensor_inputs(const kiln_tensor *t, kiln_tensor **out, int cap);

/* Print an expression in infix form into buf (truncated to cap). Returns
 * the length it needed, like snprintf. */
KILN_API int kiln_expr_print(kiln_expr e, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
