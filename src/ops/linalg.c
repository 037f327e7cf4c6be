/* linalg.c: linear algebra beyond products (the products are nn.c's).
 *
 *   det   the determinant of each M x M matrix of [*, M, M] (ONNX Det)
 *
 * The determinant comes from an LU factorization with partial pivoting,
 * unrolled over the M columns as stages of the compute: for column k, the
 * pivot row p_k is the first row from k on whose |value| in the column is
 * largest (two reductions, a max then the first row that reaches it); the
 * next matrix swaps rows k and p_k and subtracts multiples of the pivot
 * row from the rows below. The determinant is the product of the pivots,
 * negated once per swap. It is computed in float64 (the input converted,
 * the result rounded to the input's dtype once), so float32 matrices keep
 * their precision whatever the order of the eliminations. A zero pivot
 * (a singular matrix) eliminates nothing, so the product is 0, not NaN.
 *
 * Each matrix stage has a select and is read by the next column's
 * reductions, so the default schedule materializes it (src/driver/
 * compile.c) and no stage re-evaluates its predecessors: the work is
 * O(M^3) per matrix, with 3M stages; M is at most DET_MAX_M. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM
/* The largest M: the compute has 3M stages, so a larger one would take
 * long to build and compile; it is refused by the relation instead. */
#define DET_MAX_M 1024

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};

/* ---- det ------------------------------------------------------------------------------ */

static rel_result rel_det(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 2)
        return ops_fail("needs matrices [*, M, M], not a %d-D input", x->ndim);
    if (!ops_is_float_dtype(x->dtype) || x->dtype == KILN_BFLOAT16)
        return ops_fail("needs float16, float32 or float64 matrices, not %s",
                        kiln_dtype_name(x->dtype));
    if (!ops_all_known(x, 0, x->ndim))
        return ops_fail("symbolic dims are not supported by det yet");
    if (x->dims[x->ndim - 1].v != x->dims[x->ndim - 2].v)
        return ops_fail("the matrices are %lld x %lld, not square",
                        (long long)x->dims[x->ndim - 2].v, (long long)x->dims[x->ndim - 1].v);
    if (x->dims[x->ndim - 1].v > DET_MAX_M)
        return ops_fail("%lld x %lld matrices are larger than det supports (%d x %d)",
                        (long long)x->dims[x->ndim - 1].v, (long long)x->dims[x->ndim - 1].v,
                        DET_MAX_M, DET_MAX_M);
    gtensor_type res = *x;
    res.ndim = x->ndim - 2;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *a, *amax, *piv; /* the input; column k's matrix, max and pivot row */
    int nb, k;                       /* batch dims; the column */
    int64_t m;
    kiln_expr i;        /* reduce axis: the rows from k on */
    kiln_tensor **mats; /* every column's matrix and pivot row (the product reads them) */
    kiln_tensor **pivs;
} det_args;

/* t (batch dims, then two) at the batch index of o, row i, column j. */
static kiln_expr mat_at(kiln_tensor *t, int nb, const kiln_expr *o, kiln_expr i, kiln_expr j) {
    kiln_expr idx[MAXD];
    memcpy(idx, o, sizeof(kiln_expr) * (size_t)nb);
    idx[nb] = i;
    idx[nb + 1] = j;
    return kiln_tensor_at(t, nb + 2, idx);
}

static kiln_expr det_input_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    det_args *a = u;
    return kiln_cast(KILN_FLOAT64, kiln_tensor_at(a->x, a->nb + 2, o));
}

/* max over the rows i >= k of |a[.., i, k]| */
static kiln_expr det_max_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    det_args *a = u;
    return kiln_max_reduce(kiln_abs(mat_at(a->a, a->nb, o, a->i, ops_int(ctx, a->k))), 1, &a->i);
}

/* the first row i >= k where |a[.., i, k]| is the max; m (past the rows)
 * when none is, as with NaN */
static kiln_expr det_pivot_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    det_args *a = u;
    kiln_expr v = kiln_abs(mat_at(a->a, a->nb, o, a->i, ops_int(ctx, a->k)));
    kiln_expr hit = kiln_eq(v, kiln_tensor_at(a->amax, a->nb, o));
    return kiln_min_reduce(kiln_select(hit, a->i, ops_int(ctx, a->m)), 1, &a->i);
}

/* The pivot row of column k at batch index o: p_k, or k when no row was
 * found (a NaN column), so every read stays in the matrix. */
static kiln_expr pivot_row(kiln_ctx *ctx, kiln_tensor *piv, int nb, const kiln_expr *o, int k,
                           int64_t m) {
    kiln_expr p = kiln_tensor_at(piv, nb, o);
    return kiln_select(kiln_lt(p, ops_int(ctx, m)), p, ops_int(ctx, k));
}

/* the next matrix: rows k and p swapped, then row i > k minus
 * (its value in column k / the pivot) times the pivot row */
static kiln_expr det_step_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    det_args *a = u;
    kiln_expr i = o[a->nb], j = o[a->nb + 1], k = ops_int(ctx, a->k);
    kiln_expr p = pivot_row(ctx, a->piv, a->nb, o, a->k, a->m);
    kiln_expr src = kiln_select(kiln_eq(i, k), p, kiln_select(kiln_eq(i, p), k, i));
    kiln_expr row = mat_at(a->a, a->nb, o, src, j);
    kiln_expr pivot = mat_at(a->a, a->nb, o, p, k), zero = ops_const(ctx, KILN_FLOAT64, 0);
    kiln_expr f =
        kiln_select(kiln_eq(pivot, zero), zero, kiln_div(mat_at(a->a, a->nb, o, src, k), pivot));
    kiln_expr reduced = kiln_sub(row, kiln_mul(f, mat_at(a->a, a->nb, o, p, j)));
    return kiln_select(kiln_gt(i, k), reduced, row);
}

/* the product of the pivots, negated once per swap */
static kiln_expr det_out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    det_args *a = u;
    kiln_expr d = ops_const(ctx, KILN_FLOAT64, 1);
    for (int k = 0; k < a->m; k++) {
        kiln_expr p = pivot_row(ctx, a->pivs[k], a->nb, o, k, a->m);
        kiln_expr v = mat_at(a->mats[k], a->nb, o, p, ops_int(ctx, k));
        d = kiln_mul(d, kiln_select(kiln_eq(p, ops_int(ctx, k)), v, kiln_neg(v)));
    }
    return kiln_cast(kiln_tensor_dtype(a->x), d);
}

static kiln_status compute_det(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    int64_t xd[MAXD];
    det_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nb = ops_shape(in[0], xd) - 2;
    a.m = xd[a.nb];
    kiln_tensor *mats[DET_MAX_M], *pivs[DET_MAX_M];
    if (a.m > DET_MAX_M)
        return kiln_set_error(KILN_ERR_INVALID, "det: matrices larger than %d x %d", DET_MAX_M,
                              DET_MAX_M);
    a.mats = mats;
    a.pivs = pivs;
    a.a = ops_compute(ctx, call, ".a0", a.nb + 2, xd, det_input_body, &a);
    for (a.k = 0; a.a && a.k < a.m; a.k++) {
        char nm[48];
        mats[a.k] = a.a;
        a.i = kiln_reduce_axis(ctx, ops_int(ctx, a.k), ops_int(ctx, a.m - a.k), "i");
        snprintf(nm, sizeof nm, ".max%d", a.k);
        a.amax = ops_compute(ctx, call, nm, a.nb, xd, det_max_body, &a);
        snprintf(nm, sizeof nm, ".pivot%d", a.k);
        a.piv = a.amax ? ops_compute(ctx, call, nm, a.nb, xd, det_pivot_body, &a) : NULL;
        if (!(pivs[a.k] = a.piv))
            return KILN_ERR_INVALID;
        snprintf(nm, sizeof nm, ".a%d", a.k + 1);
        if (a.k + 1 < a.m)
            a.a = ops_compute(ctx, call, nm, a.nb + 2, xd, det_step_body, &a);
    }
    if (!a.a)
        return KILN_ERR_INVALID;
    out[0] = ops_compute(ctx, call, "", a.nb, xd, det_out_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_linalg_rows[] = {
    {.name = "det",
     .min_in = 1,
     .max_in = 1,
     .attrs = no_attrs,
     .rel = rel_det,
     .pattern = OP_OPAQUE,
     .compute = compute_det,
     .summary = "the determinant of each matrix of [*, M, M] (LU with partial pivoting, in "
                "float64)"},
};

const int ops_linalg_count = (int)(sizeof ops_linalg_rows / sizeof ops_linalg_rows[0]);
