/* reduce.c: the reductions sum, mean, max, min and prod (over attribute
 * axis, or all but it with exclude, keeping the reduced dims as 1 with
 * keepdims) and argmax / argmin (a max or min reduction, then the first or
 * last index that reaches it). Each kind shares its relation and compute
 * with the others, which read the kind from the row's variant.
 *
 * Axes known only when the package runs (ONNX ReduceX's axes input): the
 * reductions then take the output dims as input 1 instead of the
 * attributes, as keepdims gives them (the binder of reduce_dims,
 * src/ops/shape.c: 1 where reduced, else the data's dim), and reduce a
 * window of x_d - o_d + 1 elements from each output index (the whole dim
 * where o_d = 1, one element where o_d = x_d). Symbolic dims are taken
 * everywhere (sym_dims). */
#include <stdio.h>
#include <string.h>

#include "ops.h"

enum { REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD };
enum { ARG_MAX, ARG_MIN };

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema reduce_attrs[] = {{"axis", GA_INTS, 0, NULL},
                                           {"keepdims", GA_INT, 0, "0"},
                                           {"exclude", GA_INT, 0, "0"},
                                           {NULL, 0, 0, NULL}};
static const attr_schema arg_reduce_attrs[] = {{"axis", GA_INT, 0, "0"},
                                               {"keepdims", GA_INT, 0, "1"},
                                               {"select_last_index", GA_INT, 0, "0"},
                                               {NULL, 0, 0, NULL}};

/* ---- relations -------------------------------------------------------------------- */

/* The axes a reduction reduces (attributes axis, exclude) over an ndim-D
 * input: mask[d] = 1 if dim d is reduced. 0, or -1 with an error. */
static int reduce_mask(const gnode *call, int ndim, int *mask) {
    int64_t ax[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "axis", ax, KILN_MAX_NDIM + 1);
    int exclude = graph_attr_int(call, "exclude", 0) != 0;
    if (n > KILN_MAX_NDIM) {
        ops_fail("axis has more than %d entries", KILN_MAX_NDIM);
        return -1;
    }
    for (int d = 0; d < ndim; d++)
        mask[d] = n <= 0 ? 1 : exclude;
    for (int i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + ndim : ax[i];
        if (a < 0 || a >= ndim) {
            ops_fail("axis %lld is out of range for a %d-D input", (long long)ax[i], ndim);
            return -1;
        }
        mask[a] = !exclude;
    }
    return 0;
}

/* reduce(x, dims): the output's dims are the values of input 1 (a
 * constant's, or a binder's: reduce_dims, src/ops/shape.c), one per dim of
 * x, as keepdims gives them. */
static rel_result rel_reduce_to_values(const struct kiln_graph *g, const gnode *call,
                                       const gtensor_type *x, gtype *out) {
    if (!g->nodes[call->in[1]]->type.known)
        return REL_INCOMPLETE;
    if (graph_attr(call, "axis") || graph_attr(call, "keepdims") || graph_attr(call, "exclude"))
        return ops_fail("with the dims as input 1, give none of axis, keepdims and exclude");
    gtensor_type res = {x->dtype, x->ndim, {{0, NULL}}};
    int n = ops_value_dims(g, call, 1, res.dims, KILN_MAX_NDIM);
    if (n != x->ndim)
        return ops_fail("input 1 (the output dims) must be a constant or a bind_dims vector of one "
                        "value per dim of the data (%d)",
                        x->ndim);
    for (int d = 0; d < n; d++) {
        int64_t v = res.dims[d].v;
        if (!res.dims[d].sym && (v < 0 || (!x->dims[d].sym && v > x->dims[d].v)))
            return ops_fail("output dim %d = %lld is not in [0, the data's dim]", d, (long long)v);
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_reduce(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->dtype == KILN_BOOL)
        return ops_fail("cannot reduce a bool tensor");
    if (call->nin == 2)
        return rel_reduce_to_values(g, call, x, out);
    int mask[KILN_MAX_NDIM];
    if (reduce_mask(call, x->ndim, mask) < 0)
        return REL_ERROR;
    int keep = graph_attr_int(call, "keepdims", 0) != 0;
    gtensor_type res = {x->dtype, 0, {{0, NULL}}};
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d])
            res.dims[res.ndim++] = x->dims[d];
        else if (keep)
            res.dims[res.ndim++] = (gdim){1, NULL};
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_arg_reduce(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 1)
        return ops_fail("needs at least 1 dim");
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0)
        axis += x->ndim;
    if (x->dims[axis].sym)
        return ops_fail("the reduced axis must not be symbolic");
    int keep = graph_attr_int(call, "keepdims", 1) != 0;
    gtensor_type res = {KILN_INT64, 0, {{0, NULL}}};
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis)
            res.dims[res.ndim++] = x->dims[d];
        else if (keep)
            res.dims[res.ndim++] = (gdim){1, NULL};
    }
    return ops_set_out(g, out, &res);
}

/* ---- sum, mean, max, min, prod ---------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *acc;
    int kind;
    int nd, keep, nr, window;
    int mask[KILN_MAX_NDIM];
    kiln_expr r[KILN_MAX_NDIM];
    kiln_expr count; /* mean: the element count of a reduction, in x's dtype */
} red_args;

/* The input index for output index i: the reduce axes r[] on the masked
 * dims (which the output keeps as size 1 with keepdims, or drops). */
static void red_index(int nd, const int *mask, int keep, const kiln_expr *r, const kiln_expr *i,
                      kiln_expr *ix) {
    int j = 0, k = 0;
    for (int d = 0; d < nd; d++) {
        if (mask[d]) {
            ix[d] = r[k++];
            j += keep;
        } else {
            ix[d] = i[j++];
        }
    }
}

/* With the output dims as values (a window): i[d] + r on the dims with a
 * reduce axis (the masked ones), i[d] on the others. */
static void window_index(const red_args *a, const kiln_expr *i, kiln_expr *ix) {
    for (int d = 0, k = 0; d < a->nd; d++)
        ix[d] = a->mask[d] ? kiln_add(i[d], a->r[k++]) : i[d];
}

static kiln_expr red_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    if (a->window)
        window_index(a, i, ix);
    else
        red_index(a->nd, a->mask, a->keep, a->r, i, ix);
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    if (a->nr == 0)
        return v; /* nothing to reduce: a copy */
    switch (a->kind) {
    case REDUCE_MAX: return kiln_max_reduce(v, a->nr, a->r);
    case REDUCE_MIN: return kiln_min_reduce(v, a->nr, a->r);
    case REDUCE_PROD: return kiln_prod(v, a->nr, a->r);
    default: return kiln_sum(v, a->nr, a->r); /* sum, mean */
    }
}

static kiln_expr mean_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    red_args *a = u;
    int nd = kiln_tensor_ndim(a->acc);
    return kiln_div(kiln_tensor_at(a->acc, nd, i), a->count);
}

/* The reduce axes of x: over the dims of attribute axis (exclude), each
 * its whole extent; or, with the output dims o[] as input 1, a window of
 * x_d - o_d + 1 on each dim where that is not the constant 1 (reduce_dims
 * gives o_d = 1 on a reduced dim and x_d on the others, and any o_d keeps
 * every read in bounds: o_d - 1 + x_d - o_d = x_d - 1). The number of
 * elements each output reduces is *count times *sym_count, the product
 * of the symbolic extents (NULL if there are none). */
static kiln_status reduce_axes(kiln_ctx *ctx, const gnode *call, red_args *a, int64_t *count,
                               kiln_expr *sym_count) {
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM], ext[KILN_MAX_NDIM], known = 1;
    ops_shape(a->x, xd);
    ops_out_shape(call, od);
    kiln_expr e[KILN_MAX_NDIM], sym = NULL;
    for (int d = 0; d < a->nd; d++) {
        ext[d] = xd[d];
        e[d] = kiln_tensor_dim(a->x, d);
        if (a->window) { /* -1: symbolic */
            ext[d] = xd[d] >= 0 && od[d] >= 0 ? xd[d] - od[d] + 1 : -1;
            e[d] = ext[d] >= 0 ? ops_int(ctx, ext[d])
                               : kiln_add(kiln_sub(e[d], ops_dim(ctx, call->type.t[0].dims[d])),
                                          ops_int(ctx, 1));
            a->mask[d] = ext[d] != 1;
        }
    }
    if (!a->window && reduce_mask(call, a->nd, a->mask) < 0)
        return KILN_ERR_INVALID;
    for (int d = 0; d < a->nd; d++) {
        if (!a->mask[d])
            continue;
        a->r[a->nr++] = kiln_reduce_axis(ctx, ops_int(ctx, 0), e[d], "r");
        if (ext[d] >= 0 && !kiln_mul_ok(known, ext[d] > 0 ? ext[d] : 0, &known))
            return kiln_set_error(KILN_ERR_INVALID, "the reduction's element count overflows");
        else if (ext[d] < 0)
            sym = sym ? kiln_mul(sym, e[d]) : e[d];
    }
    *count = known;
    *sym_count = sym;
    return KILN_OK;
}

static kiln_status compute_reduce(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    red_args a;
    memset(&a, 0, sizeof a);
    int64_t od[KILN_MAX_NDIM];
    a.x = in[0];
    a.kind = call->op->variant;
    a.nd = kiln_tensor_ndim(in[0]);
    a.window = call->nin == 2;
    int ond = ops_out_shape(call, od);
    a.keep = graph_attr_int(call, "keepdims", 0) != 0;
    int64_t count = 1;
    kiln_expr sym = NULL;
    if (reduce_axes(ctx, call, &a, &count, &sym) != KILN_OK)
        return KILN_ERR_INVALID;
    if (a.kind != REDUCE_MEAN || a.nr == 0) {
        out[0] = ops_compute(ctx, call, "", ond, od, red_body, &a);
    } else {
        kiln_dtype dt = kiln_tensor_dtype(a.x);
        a.count = !sym ? ops_const(ctx, dt, (double)count)
                       : kiln_cast(dt, count == 1 ? sym : kiln_mul(sym, ops_int(ctx, count)));
        a.acc = ops_compute(ctx, call, ".sum", ond, od, red_body, &a);
        out[0] = a.acc ? ops_compute(ctx, call, "", ond, od, mean_body, &a) : NULL;
    }
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- argmax, argmin ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *best;
    int nd, axis, keep, is_max, last;
    int64_t n;
    kiln_expr k1, k2;
} arg_args;

/* The input index for output index i with `at` on the reduced axis. */
static void arg_index(const arg_args *a, const kiln_expr *i, kiln_expr at, kiln_expr *ix) {
    int mask[KILN_MAX_NDIM] = {0};
    mask[a->axis] = 1;
    red_index(a->nd, mask, a->keep, &at, i, ix);
}

static kiln_expr arg_best(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    arg_index(a, i, a->k1, ix);
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    return a->is_max ? kiln_max_reduce(v, 1, &a->k1) : kiln_min_reduce(v, 1, &a->k1);
}

/* first index: min over k of (x[k] == best ? k : n); last: max of (... ? k : -1) */
static kiln_expr arg_pick(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    arg_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    arg_index(a, i, a->k2, ix);
    int ond = kiln_tensor_ndim(a->best);
    kiln_expr x = kiln_tensor_at(a->x, a->nd, ix), best = kiln_tensor_at(a->best, ond, i);
    /* max and min propagate NaN, so best is NaN iff the slice has one: then
       the answer is a NaN's index, as numpy's argmax/argmin give */
    kiln_expr hit = kiln_eq(x, best);
    if (ops_is_float_dtype(kiln_tensor_dtype(a->x)))
        hit = kiln_or(hit, kiln_and(kiln_ne(x, x), kiln_ne(best, best)));
    if (a->last)
        return kiln_max_reduce(kiln_select(hit, a->k2, ops_int(ctx, -1)), 1, &a->k2);
    return kiln_min_reduce(kiln_select(hit, a->k2, ops_int(ctx, a->n)), 1, &a->k2);
}

static kiln_status compute_arg_reduce(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    arg_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    int ond = ops_out_shape(call, od);
    int64_t axis = graph_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.keep = graph_attr_int(call, "keepdims", 1) != 0;
    a.last = graph_attr_int(call, "select_last_index", 0) != 0;
    a.is_max = call->op->variant == ARG_MAX;
    a.n = xd[a.axis];
    a.k1 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "k");
    a.k2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "k");
    a.best = ops_compute(ctx, call, ".best", ond, od, arg_best, &a);
    out[0] = a.best ? ops_compute(ctx, call, "", ond, od, arg_pick, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

#define REDUCE(nm, kind, sum)                                                                      \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 2, .attrs = reduce_attrs, .rel = rel_reduce,            \
        .pattern = OP_COMM_REDUCE, .compute = compute_reduce, .summary = sum, .variant = kind,     \
        .sym_dims = 1                                                                              \
    }
#define ARG_REDUCE(nm, kind, sum)                                                                  \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = arg_reduce_attrs, .rel = rel_arg_reduce,    \
        .pattern = OP_COMM_REDUCE, .compute = compute_arg_reduce, .summary = sum, .variant = kind  \
    }

const kiln_op_def ops_reduce_rows[] = {
    REDUCE("sum", REDUCE_SUM, "sum over axis"),
    REDUCE("mean", REDUCE_MEAN, "mean over axis"),
    REDUCE("max", REDUCE_MAX, "max over axis"),
    REDUCE("min", REDUCE_MIN, "min over axis"),
    REDUCE("prod", REDUCE_PROD, "product over axis"),
    ARG_REDUCE("argmax", ARG_MAX, "index of the max along axis (int64)"),
    ARG_REDUCE("argmin", ARG_MIN, "index of the min along axis (int64)"),
};

const int ops_reduce_count = (int)(sizeof ops_reduce_rows / sizeof ops_reduce_rows[0]);
