/* shape.c: shapes known only when the package runs
 * (docs/DYNAMIC_SHAPES.md, part 3).
 *
 *   bind_dims        the binder: an int64 vector passed through, whose
 *                    element k is size variable "<prefix>_k" for the types
 *                    after it (ops_value_dims reads them); the plan marks
 *                    its kernel, and the executor binds the variables from
 *                    its output before it sets up the kernels that use them
 *   shape_of         ONNX Shape over symbolic dims: the dims as values
 *   reshape_dims,    the shape functions: the output dims of an op whose
 *   broadcast_dims,  shape depends on an input's values, computed from
 *   tile_dims,       those values and the data's dims (Reshape, Expand,
 *   range_dims,      Tile, Range, TopK's k, ReduceX's axes)
 *   topk_dims,
 *   reduce_dims,
 *   count_dims,      (and OneHot's depth, a window's size)
 *   unpool_dims,     (and MaxUnpool's output_shape, checked)
 *   split_params,
 *   nonzero_dims,    (and how many elements NonZero and Compress select)
 *   compress_dims,
 *
 * A shape function never fails: a value the op cannot take (a reshape to
 * the wrong element count, two -1s) makes every dim it computes -1, and
 * the executor reports that run's binding as invalid for the node. So the
 * graph holds three calls where a static shape needed one, e.g.
 * reshape(x, bind_dims(reshape_dims(x, shape))): the op itself takes its
 * dims from the binder (reshape, whose second input is then its shape).
 * Where every value is a constant, FoldConstant folds the first two and
 * the op is static again. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};
static const attr_schema axis0_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

/* ---- bind_dims ------------------------------------------------------------------- */

static const attr_schema bind_attrs[] = {
    {"prefix", GA_STR, 1, NULL}, {"names", GA_STR, 0, "\"\""}, {NULL, 0, 0, NULL}};

/* The most values one binder may name (the plan's limit, KILN_MAX_BINDS). */
#define MAX_BINDS 64

static rel_result rel_bind(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *v = ops_tensor_in(in[0], 0, &r);
    if (!v)
        return r;
    if (v->dtype != KILN_INT64 || v->ndim != 1 || v->dims[0].sym || v->dims[0].v < 1 ||
        v->dims[0].v > MAX_BINDS)
        return ops_fail("the input must be an int64 vector of 1 to %d values of a length known "
                        "at compile time",
                        MAX_BINDS);
    /* "<prefix>_63" stays a size name of at most 63 characters */
    if (!graph_is_size_name(graph_attr_str(call, "prefix", NULL), 60))
        return ops_fail("prefix must be an identifier of at most 60 characters");
    /* names: one entry per value (a size variable, a size, or empty) */
    const char *names = graph_attr_str(call, "names", "");
    int commas = 0;
    for (const char *c = names; *c; c++)
        commas += *c == ',';
    gdim d[MAX_BINDS];
    if (*names &&
        (commas + 1 != v->dims[0].v || ops_binder_names(g, call, (int)v->dims[0].v, d) < 0))
        return ops_fail("names must list one entry per value (%lld): a size variable (an "
                        "identifier of at most 63 characters), a size from 0 to 2^48, or empty",
                        (long long)v->dims[0].v);
    return ops_set_out(g, out, v);
}

static kiln_expr copy_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    (void)ctx;
    return kiln_tensor_at(u, 1, idx);
}

static kiln_status compute_bind(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    int64_t n;
    ops_out_shape(call, &n);
    out[0] = ops_compute(ctx, call, "", 1, &n, copy_body, in[0]);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- reshape_dims ---------------------------------------------------------------- */

static const attr_schema reshape_dims_attrs[] = {{"allowzero", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static rel_result rel_reshape_dims(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *s = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!s)
        return r;
    if (s->dtype != KILN_INT64)
        return ops_fail("the shape must be int64, not %s", kiln_dtype_name(s->dtype));
    return ops_dims_rel(g, s, "the shape", 0, -1, out);
}

/* ONNX Reshape's dims: shape[k], where 0 copies the data's dim k (unless
 * allowzero) and one -1 takes what is left of the element count. */
static kiln_status compute_reshape_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0], *s = in[1];
    int xn = kiln_tensor_ndim(x), allowzero = graph_attr_int(call, "allowzero", 0) != 0;
    int64_t n;
    ops_shape(s, &n);
    f.n = (int)n;
    kiln_expr zero = kiln_int(ctx, 0), one = kiln_int(ctx, 1), minus1 = kiln_int(ctx, -1);
    kiln_expr numel = one;
    for (int d = 0; d < xn; d++)
        numel = kiln_mul(numel, kiln_tensor_dim(x, d));
    kiln_expr w[MAXD], nneg = zero, bad = kiln_const(ctx, KILN_BOOL, 0);
    kiln_expr knownd = kiln_const(ctx, KILN_FLOAT64, 1);
    for (int k = 0; k < f.n; k++) {
        kiln_expr v = ops_elem_i64(ctx, s, k);
        if (!allowzero) /* 0 past the data's rank is invalid: -2 */
            v = kiln_select(kiln_eq(v, zero), k < xn ? kiln_tensor_dim(x, k) : kiln_int(ctx, -2),
                            v);
        w[k] = v;
        kiln_expr neg = kiln_eq(v, minus1);
        nneg = kiln_add(nneg, kiln_select(neg, one, zero));
        bad = kiln_or(bad, kiln_lt(v, minus1));
        /* the product in float64, so that no value can overflow it */
        knownd = kiln_mul(
            knownd, kiln_select(neg, kiln_const(ctx, KILN_FLOAT64, 1), kiln_cast(KILN_FLOAT64, v)));
    }
    kiln_expr limit = kiln_const(ctx, KILN_FLOAT64, (double)GRAPH_MAX_ELEMENTS);
    bad = kiln_or(bad, kiln_or(kiln_gt(nneg, one), kiln_gt(knownd, limit)));
    kiln_expr known = kiln_cast(KILN_INT64, kiln_min(knownd, limit));
    kiln_expr safe = kiln_max(known, one);
    kiln_expr fits =
        kiln_select(kiln_eq(nneg, one),
                    kiln_and(kiln_gt(known, zero), kiln_eq(kiln_floormod(numel, safe), zero)),
                    kiln_eq(known, numel));
    bad = kiln_or(bad, kiln_not(fits));
    for (int k = 0; k < f.n; k++)
        f.dim[k] = kiln_select(
            bad, minus1, kiln_select(kiln_eq(w[k], minus1), kiln_floordiv(numel, safe), w[k]));
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- broadcast_dims, tile_dims ----------------------------------------------------- */

static rel_result rel_broadcast_dims(const struct kiln_graph *g, const gnode *call,
                                     const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *s = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!s)
        return r;
    if (s->ndim != 1 || s->dims[0].sym)
        return ops_fail("the shape must be a 1-D vector of a length known at compile time");
    int64_t len = s->dims[0].v > x->ndim ? s->dims[0].v : x->ndim;
    return ops_dims_rel(g, s, "the shape", 0, len, out);
}

/* |v| as a float64 size no value can overflow, and whether it is one. */
static kiln_expr too_big(kiln_ctx *ctx, kiln_expr d) {
    return kiln_gt(d, kiln_const(ctx, KILN_FLOAT64, (double)GRAPH_MAX_ELEMENTS));
}

/* ONNX Expand's dims: numpy broadcasting of the data's dims and the shape
 * values, right-aligned; dims that do not broadcast (and negative values)
 * give -1. */
static kiln_status compute_broadcast_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                          kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0], *s = in[1];
    int64_t ns;
    ops_shape(s, &ns);
    int xn = kiln_tensor_ndim(x);
    f.n = ns > xn ? (int)ns : xn;
    kiln_expr one = kiln_int(ctx, 1), minus1 = kiln_int(ctx, -1);
    for (int k = 0; k < f.n; k++) {
        int kx = k - (f.n - xn), ks = k - (f.n - (int)ns);
        kiln_expr a = kx >= 0 ? kiln_tensor_dim(x, kx) : one;
        kiln_expr b = ks >= 0 ? ops_elem_i64(ctx, s, ks) : one;
        kiln_expr d = kiln_select(kiln_eq(a, one), b,
                                  kiln_select(kiln_or(kiln_eq(b, one), kiln_eq(b, a)), a, minus1));
        f.dim[k] = kiln_select(kiln_lt(b, kiln_int(ctx, 0)), minus1, d);
    }
    return ops_dims_out(ctx, call, &f, out);
}

static rel_result rel_tile_dims(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *s = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!s)
        return r;
    if (s->ndim != 1 || s->dims[0].sym || s->dims[0].v != x->ndim)
        return ops_fail("the repeats must be a vector of one value per dim of the data (%d)",
                        x->ndim);
    return ops_dims_rel(g, s, "the repeats", 0, -1, out);
}

/* ONNX Tile's dims: dim k times repeats[k]; a negative repeat or a product
 * past 2^48 gives -1. */
static kiln_status compute_tile_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0], *s = in[1];
    f.n = kiln_tensor_ndim(x);
    for (int k = 0; k < f.n; k++) {
        kiln_expr a = kiln_tensor_dim(x, k), b = ops_elem_i64(ctx, s, k);
        kiln_expr p = kiln_mul(kiln_cast(KILN_FLOAT64, a), kiln_cast(KILN_FLOAT64, b));
        kiln_expr bad = kiln_or(kiln_lt(b, kiln_int(ctx, 0)), too_big(ctx, p));
        /* the product only where it fits: min keeps the multiply in range */
        f.dim[k] = kiln_select(bad, kiln_int(ctx, -1),
                               kiln_mul(a, kiln_min(b, kiln_int(ctx, GRAPH_MAX_ELEMENTS))));
    }
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- range_dims, topk_dims, count_dims -------------------------------------------- */

/* A scalar (0-D or one element) input. */
static int scalar_in(const gtensor_type *t) {
    return t->ndim == 0 || (t->ndim == 1 && !t->dims[0].sym && t->dims[0].v == 1);
}

/* A number as a count: -1 unless it is finite (a float, truncated) and in
 * [lo, hi]. */
static kiln_expr as_count(kiln_ctx *ctx, kiln_expr v, kiln_dtype dt, kiln_expr lo, kiln_expr hi) {
    if (ops_is_float_dtype(dt)) {
        kiln_expr d = kiln_cast(KILN_FLOAT64, v);
        kiln_expr ok = kiln_and(kiln_ge(d, kiln_cast(KILN_FLOAT64, lo)),
                                kiln_le(d, kiln_cast(KILN_FLOAT64, hi))); /* false for NaN */
        return kiln_select(
            ok, kiln_cast(KILN_INT64, kiln_select(ok, d, kiln_const(ctx, KILN_FLOAT64, 0))),
            kiln_int(ctx, -1));
    }
    if (dt == KILN_UINT64) /* above INT64_MAX reads as negative: then -1 */
        v = kiln_cast(KILN_INT64, v);
    v = kiln_cast(KILN_INT64, v);
    return kiln_select(kiln_and(kiln_ge(v, lo), kiln_le(v, hi)), v, kiln_int(ctx, -1));
}

static rel_result rel_range_dims(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *t[3];
    for (int i = 0; i < 3; i++)
        if (!(t[i] = ops_tensor_in(in[i], i, &r)))
            return r;
    for (int i = 0; i < 3; i++)
        if (!scalar_in(t[i]) || t[i]->dtype != t[0]->dtype || t[i]->dtype == KILN_BOOL)
            return ops_fail("start, limit and delta must be scalar numbers of one dtype");
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    return ops_set_out(g, out, &res);
}

/* ONNX Range's length: max(ceil((limit - start) / delta), 0), in float64
 * (exact below 2^53, and a length past 2^48 is refused anyway); a delta of
 * 0 or a length that is not finite gives -1. */
static kiln_status compute_range_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_expr v[3];
    for (int i = 0; i < 3; i++)
        v[i] = kiln_cast(KILN_FLOAT64, ops_elem_as(ctx, in[i], 0, kiln_tensor_dtype(in[i])));
    kiln_expr q = kiln_ceil(kiln_div(kiln_sub(v[1], v[0]), v[2]));
    kiln_expr zero = kiln_const(ctx, KILN_FLOAT64, 0);
    q = kiln_select(kiln_lt(q, zero), zero, q); /* NaN stays NaN: then -1 */
    f.n = 1;
    f.dim[0] = kiln_select(
        kiln_eq(v[2], zero), kiln_int(ctx, -1),
        as_count(ctx, q, KILN_FLOAT64, kiln_int(ctx, 0), kiln_int(ctx, GRAPH_MAX_ELEMENTS)));
    return ops_dims_out(ctx, call, &f, out);
}

static const attr_schema axis_attrs[] = {{"axis", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};

static rel_result rel_topk_dims(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *k = x ? ops_tensor_in(in[1], 1, &r) : 0;
    int axis;
    if (!k)
        return r;
    if (!scalar_in(k) || !ops_is_index_dtype(k->dtype))
        return ops_fail("k must be an integer scalar (or a vector of one)");
    if (!ops_attr_axis(call, "axis", -1, x->ndim, &axis))
        return REL_ERROR;
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    return ops_set_out(g, out, &res);
}

/* TopK's k: in [0, the axis length], else -1. */
static kiln_status compute_topk_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    int axis = ops_norm_axis(call, -1, kiln_tensor_ndim(in[0]));
    f.n = 1;
    f.dim[0] = as_count(ctx, ops_elem_as(ctx, in[1], 0, kiln_tensor_dtype(in[1])),
                        kiln_tensor_dtype(in[1]), kiln_int(ctx, 0), kiln_tensor_dim(in[0], axis));
    return ops_dims_out(ctx, call, &f, out);
}

static const attr_schema count_dims_attrs[] = {{"min", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static rel_result rel_count_dims(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *d = ops_tensor_in(in[0], 0, &r);
    if (!d)
        return r;
    if (!scalar_in(d) || d->dtype == KILN_BOOL)
        return ops_fail("the count must be a scalar number (or a vector of one)");
    int64_t min = graph_attr_int(call, "min", 0);
    if (min < 0 || min > GRAPH_MAX_ELEMENTS)
        return ops_fail("min = %lld must be 0 to 2^48", (long long)min);
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    return ops_set_out(g, out, &res);
}

/* A count from a scalar (OneHot's depth, a window's size): a number (a
 * float truncated) in [min, 2^48], else -1. */
static kiln_status compute_count_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    f.n = 1;
    f.dim[0] =
        as_count(ctx, ops_elem_as(ctx, in[0], 0, dt), dt,
                 kiln_int(ctx, graph_attr_int(call, "min", 0)), kiln_int(ctx, GRAPH_MAX_ELEMENTS));
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- unpool_dims ------------------------------------------------------------------- */

static const attr_schema unpool_dims_attrs[] = {{"min", GA_INTS, 1, NULL}, {NULL, 0, 0, NULL}};

static rel_result rel_unpool_dims(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *s = ops_tensor_in(in[0], 0, &r);
    if (!s)
        return r;
    int64_t min[MAXD];
    int n = graph_attr_ints(call, "min", min, MAXD);
    if (n < 1 || n > MAXD)
        return ops_fail("min must have 1 to %d values", MAXD);
    for (int k = 0; k < n; k++)
        if (min[k] < 0 || min[k] > GRAPH_MAX_ELEMENTS)
            return ops_fail("min[%d] = %lld must be 0 to 2^48", k, (long long)min[k]);
    if (s->ndim == 1 && !s->dims[0].sym && s->dims[0].v != n)
        return ops_fail("the output shape has %lld values, min %d", (long long)s->dims[0].v, n);
    return ops_dims_rel(g, s, "the output shape", 0, -1, out);
}

/* ONNX MaxUnpool's output_shape: its values, each from min[k] (the
 * unpooled size) to 2^48, with a product of at most 2^48; else -1 each. */
static kiln_status compute_unpool_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    int64_t min[MAXD];
    f.n = graph_attr_ints(call, "min", min, MAXD);
    kiln_expr limit = kiln_int(ctx, GRAPH_MAX_ELEMENTS);
    kiln_expr prod = kiln_const(ctx, KILN_FLOAT64, 1), bad = kiln_const(ctx, KILN_BOOL, 0);
    for (int k = 0; k < f.n; k++) {
        f.dim[k] = ops_elem_i64(ctx, in[0], k);
        bad = kiln_or(bad,
                      kiln_or(kiln_lt(f.dim[k], kiln_int(ctx, min[k])), kiln_gt(f.dim[k], limit)));
        /* in float64, so that no value can overflow it */
        prod = kiln_mul(prod, kiln_cast(KILN_FLOAT64, f.dim[k]));
    }
    bad = kiln_or(bad, too_big(ctx, prod));
    for (int k = 0; k < f.n; k++)
        f.dim[k] = kiln_select(bad, kiln_int(ctx, -1), f.dim[k]);
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- nonzero_dims, compress_dims ------------------------------------------------------ */

static rel_result rel_selected_dims(const struct kiln_graph *g, const gnode *call,
                                    const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (!ops_all_known(x, 0, x->ndim))
        return ops_fail("the data's dims must be known at compile time");
    if (call->op->variant) {
        int axis;
        const gtensor_type *c = ops_tensor_in(in[1], 1, &r);
        if (!c)
            return r;
        if (c->ndim != 1 || c->dims[0].sym)
            return ops_fail("the condition must be a 1-D vector of a length known at compile "
                            "time");
        if (!ops_attr_axis(call, "axis", 0, x->ndim, &axis))
            return REL_ERROR;
    }
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    return ops_set_out(g, out, &res);
}

/* How many elements NonZero (variant 0: the nonzero ones) or Compress
 * (variant 1: the true conditions within the axis) selects. */
static kiln_status compute_selected_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                         kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *t = in[call->op->variant];
    int64_t dims[MAXD];
    int nd = ops_shape(t, dims);
    if (call->op->variant) { /* the condition, within the axis */
        int64_t xd[MAXD];
        int axis = ops_norm_axis(call, 0, ops_shape(in[0], xd));
        dims[0] = dims[0] < xd[axis] ? dims[0] : xd[axis];
    }
    int64_t numel = 1;
    kiln_expr r[MAXD], one = kiln_int(ctx, 1), zero = kiln_int(ctx, 0);
    for (int d = 0; d < nd; d++) {
        numel *= dims[d];
        r[d] = kiln_reduce_axis(ctx, zero, kiln_int(ctx, dims[d]), d ? "r" : "q");
    }
    f.n = 1;
    if (numel == 0) {
        f.dim[0] = zero;
        return ops_dims_out(ctx, call, &f, out);
    }
    kiln_expr v = kiln_tensor_at(t, nd, r);
    kiln_expr nz = kiln_ne(v, ops_const(ctx, kiln_tensor_dtype(t), 0));
    f.dim[0] = kiln_sum(kiln_select(nz, one, zero), nd, r);
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- split_params ----------------------------------------------------------------- */

static const attr_schema split_params_attrs[] = {
    {"axis", GA_INT, 0, "0"}, {"index", GA_INT, 1, NULL}, {NULL, 0, 0, NULL}};

static rel_result rel_split_params(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *p = x ? ops_tensor_in(in[1], 1, &r) : 0;
    int axis;
    if (!p)
        return r;
    if (!ops_is_index_dtype(p->dtype) || p->ndim != 1 || p->dims[0].sym || p->dims[0].v < 1)
        return ops_fail("the sizes must be a non-empty integer vector of a length known at "
                        "compile time");
    if (!ops_attr_axis(call, "axis", 0, x->ndim, &axis))
        return REL_ERROR;
    int64_t k = graph_attr_int(call, "index", -1);
    if (k < 0 || k >= p->dims[0].v)
        return ops_fail("index %lld is not one of the %lld parts", (long long)k,
                        (long long)p->dims[0].v);
    gtensor_type res = {KILN_INT64, 1, {{3 * (int64_t)x->ndim, NULL}}};
    return ops_set_out(g, out, &res);
}

/* ONNX Split with sizes given as data: part `index` as slice_params gives
 * a slice (lengths, starts, steps): on the axis, its size from the sum of
 * the sizes before it; elsewhere whole. Sizes below 0, or not summing to
 * the axis, give -1 lengths. */
static kiln_status compute_split_params(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0];
    int nd = kiln_tensor_ndim(x), axis = ops_norm_axis(call, 0, nd);
    int64_t np, k = graph_attr_int(call, "index", 0);
    ops_shape(in[1], &np);
    kiln_expr zero = kiln_int(ctx, 0), sum = zero, start = zero;
    kiln_expr bad = kiln_const(ctx, KILN_BOOL, 0);
    for (int j = 0; j < np; j++) {
        kiln_expr v = ops_elem_i64(ctx, in[1], j);
        bad =
            kiln_or(bad, kiln_or(kiln_lt(v, zero), kiln_gt(v, kiln_int(ctx, GRAPH_MAX_ELEMENTS))));
        /* each under 2^48: the sum of 64 of them fits */
        sum = kiln_add(sum, kiln_min(kiln_max(v, zero), kiln_int(ctx, GRAPH_MAX_ELEMENTS)));
        if (j < k)
            start = sum;
    }
    bad = kiln_or(bad, kiln_ne(sum, kiln_tensor_dim(x, axis)));
    f.n = 3 * nd;
    for (int d = 0; d < nd; d++) {
        kiln_expr len = d == axis ? ops_elem_i64(ctx, in[1], (int)k) : kiln_tensor_dim(x, d);
        f.dim[d] = kiln_select(bad, kiln_int(ctx, -1), len);
        f.dim[nd + d] = d == axis ? start : zero;
        f.dim[2 * nd + d] = kiln_int(ctx, 1);
    }
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- unsqueeze_dims, squeeze_dims ---------------------------------------------------- */

static rel_result rel_axes_dims(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *a = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!a)
        return r;
    if (!ops_is_index_dtype(a->dtype) || a->ndim != 1 || a->dims[0].sym || a->dims[0].v < 1)
        return ops_fail("the axes must be a non-empty integer vector of a length known at "
                        "compile time");
    int64_t len = call->op->variant ? x->ndim - a->dims[0].v : x->ndim + a->dims[0].v;
    if (len < 1)
        return ops_fail("%lld axes for a %d-D input", (long long)a->dims[0].v, x->ndim);
    return ops_dims_rel(g, a, "the axes", 0, len, out);
}

/* Axis value v (int64) of an nd-D tensor, negative from the end. */
static kiln_expr norm_axis(kiln_ctx *ctx, kiln_expr v, int nd) {
    return kiln_select(kiln_lt(v, kiln_int(ctx, 0)), kiln_add(v, kiln_int(ctx, nd)), v);
}

/* hit[p] = how many axes name position p of an nd-D tensor; *bad is set
 * where an axis is outside it or named twice. */
static void axes_hits(kiln_ctx *ctx, kiln_tensor *axes, int nd, kiln_expr *hit, kiln_expr *bad) {
    int64_t na;
    ops_shape(axes, &na);
    kiln_expr zero = kiln_int(ctx, 0), one = kiln_int(ctx, 1), total = zero;
    for (int p = 0; p < nd; p++)
        hit[p] = zero;
    for (int k = 0; k < na; k++) {
        kiln_expr a = norm_axis(ctx, ops_elem_i64(ctx, axes, k), nd);
        for (int p = 0; p < nd; p++)
            hit[p] = kiln_add(hit[p], kiln_select(kiln_eq(a, kiln_int(ctx, p)), one, zero));
    }
    *bad = kiln_const(ctx, KILN_BOOL, 0);
    for (int p = 0; p < nd; p++) {
        total = kiln_add(total, hit[p]);
        *bad = kiln_or(*bad, kiln_gt(hit[p], one));
    }
    *bad = kiln_or(*bad, kiln_ne(total, kiln_int(ctx, na))); /* one out of range */
}

/* ONNX Unsqueeze's dims (variant 0): a 1 at each axis of the output, the
 * data's dims in order elsewhere; Squeeze's (variant 1): the data's dims
 * but those at the axes, which must be 1. Bad axes give -1. */
static kiln_status compute_axes_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0];
    int xn = kiln_tensor_ndim(x), squeeze = call->op->variant;
    int64_t na;
    ops_shape(in[1], &na);
    int nd = squeeze ? xn : xn + (int)na; /* where the axes count */
    f.n = squeeze ? xn - (int)na : nd;
    kiln_expr hit[MAXD], bad, zero = kiln_int(ctx, 0), one = kiln_int(ctx, 1);
    axes_hits(ctx, in[1], nd, hit, &bad);
    /* src[p]: the data dim output p shows (unsqueeze), or the output
       position data dim p goes to (squeeze): the unmarked ones before it */
    kiln_expr before = zero;
    for (int p = 0; p < f.n; p++)
        f.dim[p] = kiln_int(ctx, -1);
    for (int p = 0; p < nd; p++) {
        kiln_expr marked = kiln_gt(hit[p], zero);
        if (!squeeze) {
            kiln_expr d = kiln_int(ctx, -1);
            for (int j = xn - 1; j >= 0; j--)
                d = kiln_select(kiln_eq(before, kiln_int(ctx, j)), kiln_tensor_dim(x, j), d);
            f.dim[p] = kiln_select(marked, one, d);
        } else {
            bad = kiln_or(bad, kiln_and(marked, kiln_ne(kiln_tensor_dim(x, p), one)));
            for (int q = 0; q < f.n; q++)
                f.dim[q] =
                    kiln_select(kiln_and(kiln_not(marked), kiln_eq(before, kiln_int(ctx, q))),
                                kiln_tensor_dim(x, p), f.dim[q]);
        }
        before = kiln_add(before, kiln_select(marked, zero, one));
    }
    for (int p = 0; p < f.n; p++)
        f.dim[p] = kiln_select(bad, kiln_int(ctx, -1), f.dim[p]);
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- reduce_dims --------------------------------------------------------------------- */

static const attr_schema reduce_dims_attrs[] = {{"keepdims", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};

static rel_result rel_reduce_dims(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *a = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!a)
        return r;
    if (x->ndim < 1)
        return ops_fail("the data must have at least 1 dim");
    if (a->ndim != 1 || a->dims[0].sym || a->dims[0].v < 1 || a->dims[0].v > x->ndim)
        return ops_fail("the axes must be a vector of 1 to %d values (the data's rank) of a "
                        "length known at compile time",
                        x->ndim);
    int64_t len = x->ndim;
    if (!graph_attr_int(call, "keepdims", 1) && (len -= a->dims[0].v) < 1)
        return ops_fail("keepdims = 0 over as many axes as dims leaves no dims");
    return ops_dims_rel(g, a, "the axes", 0, len, out);
}

/* ONNX ReduceX's dims over run-time axes (negative: from the end): with
 * keepdims, one per dim of the data, 1 where reduced, else the data's;
 * without, the dims not reduced, in order. An axis out of range or given
 * twice gives -1. */
static kiln_status compute_reduce_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0];
    int nd = kiln_tensor_ndim(x);
    int64_t na;
    ops_shape(in[1], &na);
    kiln_expr hit[MAXD], bad, zero = kiln_int(ctx, 0), one = kiln_int(ctx, 1);
    kiln_expr minus1 = kiln_int(ctx, -1);
    axes_hits(ctx, in[1], nd, hit, &bad);
    if (graph_attr_int(call, "keepdims", 1)) {
        f.n = nd;
        for (int d = 0; d < nd; d++)
            f.dim[d] = kiln_select(bad, minus1,
                                   kiln_select(kiln_gt(hit[d], zero), one, kiln_tensor_dim(x, d)));
        return ops_dims_out(ctx, call, &f, out);
    }
    /* kept dim j: the data's dim d that is not reduced and has j kept before it */
    f.n = nd - (int)na;
    for (int j = 0; j < f.n; j++) {
        kiln_expr e = minus1, before = zero;
        for (int d = 0; d < nd; d++) {
            kiln_expr kept = kiln_eq(hit[d], zero);
            e = kiln_select(kiln_and(kept, kiln_eq(before, kiln_int(ctx, j))),
                            kiln_tensor_dim(x, d), e);
            before = kiln_add(before, kiln_select(kept, one, zero));
        }
        f.dim[j] = kiln_select(bad, minus1, e);
    }
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- slice_params, pad_dims ---------------------------------------------------------- */

/* The inputs a rank-nd slice or pad reads: vector i of n integers. */
static int int_vector(const gtensor_type *t, int64_t n) {
    return ops_is_index_dtype(t->dtype) && t->ndim == 1 && !t->dims[0].sym && t->dims[0].v == n;
}

static rel_result rel_slice_params(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *t[5];
    for (int i = 0; i < call->nin; i++)
        if (!(t[i] = ops_tensor_in(in[i], i, &r)))
            return r;
    if (t[1]->ndim != 1 || t[1]->dims[0].sym || t[1]->dims[0].v < 1 || t[1]->dims[0].v > t[0]->ndim)
        return ops_fail("starts must be a vector of 1 to %d values (the data's rank)", t[0]->ndim);
    for (int i = 1; i < call->nin; i++)
        if (!int_vector(t[i], t[1]->dims[0].v))
            return ops_fail("starts, ends, axes and steps must be integer vectors of one length");
    gtensor_type res = {KILN_INT64, 1, {{3 * (int64_t)t[0]->ndim, NULL}}};
    return ops_set_out(g, out, &res);
}

/* ONNX Slice, per data dim d of n elements: [length, start, step], as three
 * runs of nd values. A dim no axis names is whole (0, step 1). Starts and
 * ends count from the end when negative and clamp to [0, n] (a positive
 * step) or [-1, n - 1] (a negative one); length max(ceil((end - start) /
 * step), 0). A step of 0, an axis out of range or named twice gives -1
 * lengths. */
static kiln_status compute_slice_params(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0];
    int nd = kiln_tensor_ndim(x);
    int64_t ns;
    ops_shape(in[1], &ns);
    f.n = 3 * nd;
    kiln_expr zero = kiln_int(ctx, 0), one = kiln_int(ctx, 1), minus1 = kiln_int(ctx, -1);
    kiln_expr bad = kiln_const(ctx, KILN_BOOL, 0), hit[MAXD], ax[MAXD];
    for (int p = 0; p < nd; p++)
        hit[p] = zero;
    for (int k = 0; k < ns; k++) {
        ax[k] = call->nin > 3 ? norm_axis(ctx, ops_elem_i64(ctx, in[3], k), nd) : kiln_int(ctx, k);
        for (int p = 0; p < nd; p++)
            hit[p] = kiln_add(hit[p], kiln_select(kiln_eq(ax[k], kiln_int(ctx, p)), one, zero));
        if (call->nin > 4)
            bad = kiln_or(bad, kiln_eq(ops_elem_i64(ctx, in[4], k), zero));
    }
    kiln_expr total = zero;
    for (int p = 0; p < nd; p++) {
        total = kiln_add(total, hit[p]);
        bad = kiln_or(bad, kiln_gt(hit[p], one));
    }
    bad = kiln_or(bad, kiln_ne(total, kiln_int(ctx, ns)));
    for (int d = 0; d < nd; d++) {
        kiln_expr n = kiln_tensor_dim(x, d), len = n, start = zero, step = one;
        for (int k = 0; k < ns; k++) {
            kiln_expr st = ops_elem_i64(ctx, in[1], k), en = ops_elem_i64(ctx, in[2], k);
            kiln_expr sp = call->nin > 4 ? ops_elem_i64(ctx, in[4], k) : one;
            kiln_expr up = kiln_gt(sp, zero);
            st = kiln_select(kiln_lt(st, zero), kiln_add(st, n), st);
            en = kiln_select(kiln_lt(en, zero), kiln_add(en, n), en);
            kiln_expr lo = kiln_select(up, zero, minus1), hi = kiln_select(up, n, kiln_sub(n, one));
            st = kiln_min(kiln_max(st, lo), hi);
            en = kiln_min(kiln_max(en, lo), hi);
            /* ceil((en - st) / sp) for either sign, as a floor division */
            kiln_expr l =
                kiln_neg(kiln_floordiv(kiln_sub(st, en), kiln_select(kiln_eq(sp, zero), one, sp)));
            kiln_expr mine = kiln_eq(ax[k], kiln_int(ctx, d));
            len = kiln_select(mine, kiln_max(l, zero), len);
            start = kiln_select(mine, st, start);
            step = kiln_select(mine, sp, step);
        }
        f.dim[d] = kiln_select(bad, minus1, len);
        f.dim[nd + d] = start;
        f.dim[2 * nd + d] = step;
    }
    return ops_dims_out(ctx, call, &f, out);
}

static const attr_schema pad_dims_attrs[] = {{"pad_mode", GA_STR, 0, "\"constant\""},
                                             {NULL, 0, 0, NULL}};

static rel_result rel_pad_dims(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *p = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!p)
        return r;
    if (!int_vector(p, 2 * (int64_t)x->ndim))
        return ops_fail("the pads must be an integer vector of 2 values per dim (%d)", 2 * x->ndim);
    if (x->ndim < 1)
        return ops_fail("cannot pad a scalar");
    return ops_dims_rel(g, p, "the pads", 0, x->ndim, out);
}

/* ONNX Pad's dims: n + begin + end per dim (the pads as ONNX orders them,
 * the begins then the ends); a dim below 0 or past 2^48, a negative pad in
 * a mode other than constant, or an empty dim padded by edge or reflect
 * gives -1. */
static kiln_status compute_pad_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0];
    f.n = kiln_tensor_ndim(x);
    int constant = !strcmp(graph_attr_str(call, "pad_mode", "constant"), "constant");
    kiln_expr zero = kiln_int(ctx, 0);
    for (int d = 0; d < f.n; d++) {
        kiln_expr n = kiln_tensor_dim(x, d), b = ops_elem_i64(ctx, in[1], d),
                  e = ops_elem_i64(ctx, in[1], f.n + d);
        kiln_expr sum = kiln_add(kiln_cast(KILN_FLOAT64, n),
                                 kiln_add(kiln_cast(KILN_FLOAT64, b), kiln_cast(KILN_FLOAT64, e)));
        kiln_expr bad = kiln_or(too_big(ctx, sum), kiln_lt(sum, kiln_const(ctx, KILN_FLOAT64, 0)));
        if (!constant)
            bad = kiln_or(bad, kiln_or(kiln_or(kiln_lt(b, zero), kiln_lt(e, zero)),
                                       kiln_and(kiln_eq(n, zero), kiln_ne(kiln_add(b, e), zero))));
        f.dim[d] = kiln_select(
            bad, kiln_int(ctx, -1),
            kiln_cast(KILN_INT64, kiln_select(bad, kiln_const(ctx, KILN_FLOAT64, 0), sum)));
    }
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- shape_of ----------------------------------------------------------------------- */

static const attr_schema shape_of_attrs[] = {
    {"start", GA_INT, 0, "0"}, {"end", GA_INT, 0, "2147483647"}, {NULL, 0, 0, NULL}};

/* ONNX Shape's [start, end) of the data's dims (negative from the end,
 * clamped): an empty range is refused (a constant, not this op). */
static int shape_range(const gnode *call, int nd, int *start, int *end) {
    int64_t s = graph_attr_int(call, "start", 0), e = graph_attr_int(call, "end", nd);
    s = s < 0 ? s + nd : s;
    e = e < 0 ? e + nd : e;
    s = s < 0 ? 0 : s > nd ? nd : s;
    e = e < s ? s : e > nd ? nd : e;
    *start = (int)s;
    *end = (int)e;
    return e > s;
}

static rel_result rel_shape_of(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    int s, e;
    if (!x)
        return r;
    if (!shape_range(call, x->ndim, &s, &e))
        return ops_fail("the range of dims [start, end) is empty");
    gtensor_type res = {KILN_INT64, 1, {{e - s, NULL}}};
    return ops_set_out(g, out, &res);
}

/* The data's dims as values, a symbolic one read from the kernel's own
 * size variable: what a shape sub-graph over symbolic dims computes from. */
static kiln_status compute_shape_of(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    int s, e;
    shape_range(call, kiln_tensor_ndim(in[0]), &s, &e);
    f.n = e - s;
    for (int d = s; d < e; d++)
        f.dim[d - s] = kiln_tensor_dim(in[0], d);
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- shape values (docs/DYNAMIC_SHAPES.md, part 2) --------------------------------------
 * What each shape function computes, told before the package runs: the
 * importer then needs no binder where every dim is EXACT, and a binder's
 * names check the ASSUMED ones (ops_values, graph.h's gval). */

static gval val_c(int64_t v) {
    return (gval){GVAL_EXACT, {v, NULL}};
}
static gval val_unknown(void) {
    return (gval){GVAL_UNKNOWN, {0, NULL}};
}
static int is_c(gval v, int64_t c) {
    return v.kind == GVAL_EXACT && !v.d.sym && v.d.v == c;
}
/* The dims of input i's type. */
static const gtensor_type *in_type(const struct kiln_graph *g, const gnode *call, int i) {
    return ops_node_type(g->nodes[call->in[i]]);
}

static int values_shape_of(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                           const int *nin, gval *out, int cap) {
    (void)in, (void)nin;
    const gtensor_type *x = in_type(g, call, 0);
    int st, en;
    if (!x || !shape_range(call, x->ndim, &st, &en) || en - st > cap)
        return -1;
    for (int d = st; d < en; d++)
        out[d - st] = (gval){GVAL_EXACT, x->dims[d]};
    return en - st;
}

/* A product of dims: a constant times size variables. */
typedef struct {
    int64_t c;
    int n;
    const char *sym[2 * MAXD];
} sym_product;

static int product_add(sym_product *p, gdim d) {
    if (d.sym) {
        p->sym[p->n++] = d.sym;
        return 1;
    }
    return kiln_mul_ok(p->c, d.v, &p->c);
}

/* Takes b's variables out of a: 1 if each was there. */
static int product_cancel(sym_product *a, const sym_product *b) {
    for (int j = 0; j < b->n; j++) {
        int k = 0;
        while (k < a->n && strcmp(a->sym[k], b->sym[j]))
            k++;
        if (k == a->n)
            return 0;
        a->sym[k] = a->sym[--a->n];
    }
    return 1;
}

/* Reshape's dims as reshape_dims computes them: 0 copies (unless
 * allowzero), one -1 takes the rest. EXACT where the element counts are
 * equal as products of the same variables; a -1 left a constant ratio or
 * one variable is that; otherwise what the values say, ASSUMED (a binder
 * checks them, as the run computes -1s for a reshape that does not fit). */
static int values_reshape_dims(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                               const int *nin, gval *out, int cap) {
    const gtensor_type *x = in_type(g, call, 0);
    int n = nin[1], allowzero = graph_attr_int(call, "allowzero", 0) != 0, infer = -1;
    if (!x || n < 0 || n > cap || n > MAXD)
        return -1;
    sym_product pin = {1, 0, {0}}, pout = {1, 0, {0}};
    gval_kind kind = GVAL_EXACT;
    for (int d = 0; d < x->ndim; d++)
        if (!product_add(&pin, x->dims[d]))
            return -1;
    for (int k = 0; k < n; k++) {
        gval v = in[1][k];
        if (v.kind != GVAL_UNKNOWN && !v.d.sym && v.d.v == 0 && !allowzero) {
            if (k >= x->ndim)
                return -1; /* invalid: the run fails at the binder */
            v = (gval){v.kind, x->dims[k]};
        }
        out[k] = v;
        kind = ops_gval_weaker(kind, v.kind);
        if (v.kind != GVAL_UNKNOWN && !v.d.sym && v.d.v == -1) {
            if (infer >= 0)
                return -1;
            infer = k;
            continue;
        }
        if (v.kind != GVAL_UNKNOWN && ((!v.d.sym && v.d.v < 0) || !product_add(&pout, v.d)))
            return -1;
    }
    if (kind == GVAL_UNKNOWN) {
        if (infer >= 0)
            out[infer] = val_unknown();
        return n;
    }
    int same = product_cancel(&pin, &pout);
    if (infer < 0) {
        if (!(same && pin.n == 0 && pin.c == pout.c))
            for (int k = 0; k < n; k++)
                out[k].kind = GVAL_ASSUMED;
        return n;
    }
    if (same && pin.n == 0 && pout.c > 0 && pin.c % pout.c == 0)
        out[infer] = (gval){kind, {pin.c / pout.c, NULL}};
    else if (same && pin.n == 1 && pin.c == pout.c)
        out[infer] = (gval){kind, {0, pin.sym[0]}};
    else
        out[infer] = val_unknown();
    return n;
}

/* Expand's dims: a dim of 1 takes the other side's; equal dims stay;
 * a constant against a variable is the constant, ASSUMED (the variable
 * must be 1 or it). */
static int values_broadcast_dims(const struct kiln_graph *g, const gnode *call,
                                 const gval *const *in, const int *nin, gval *out, int cap) {
    const gtensor_type *x = in_type(g, call, 0);
    int ns = nin[1];
    if (!x || ns < 0)
        return -1;
    int n = ns > x->ndim ? ns : x->ndim;
    if (n > cap)
        return -1;
    for (int k = 0; k < n; k++) {
        int kx = k - (n - x->ndim), ks = k - (n - ns);
        gval a = kx >= 0 ? (gval){GVAL_EXACT, x->dims[kx]} : val_c(1);
        gval b = ks >= 0 ? in[1][ks] : val_c(1);
        if (b.kind == GVAL_UNKNOWN || (!b.d.sym && b.d.v < 0))
            out[k] = val_unknown();
        else if (is_c(a, 1))
            out[k] = b;
        else if (!b.d.sym && b.d.v == 1)
            out[k] = (gval){b.kind, a.d};
        else if (gdim_equal(a.d, b.d))
            out[k] = b;
        else if (!a.d.sym && !b.d.sym)
            return -1; /* invalid: the run fails at the binder */
        else if (!a.d.sym || !b.d.sym)
            out[k] = (gval){GVAL_ASSUMED, a.d.sym ? b.d : a.d};
        else
            out[k] = val_unknown();
    }
    return n;
}

/* Range's length from integer start, limit and delta: from constants, or
 * limit itself when start is 0 and delta 1 (a size is never negative). */
static int values_range_dims(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                             const int *nin, gval *out, int cap) {
    const gtensor_type *t = in_type(g, call, 0);
    if (!t || !ops_is_int_dtype(t->dtype) || cap < 1 || nin[0] != 1 || nin[1] != 1 || nin[2] != 1)
        return -1;
    gval st = in[0][0], lim = in[1][0], dl = in[2][0];
    out[0] = val_unknown();
    if (is_c(st, 0) && is_c(dl, 1) && lim.kind == GVAL_EXACT && lim.d.sym)
        out[0] = lim;
    else if (st.kind == GVAL_EXACT && lim.kind == GVAL_EXACT && dl.kind == GVAL_EXACT &&
             !st.d.sym && !lim.d.sym && !dl.d.sym && dl.d.v != 0 && st.d.v > -GRAPH_MAX_ELEMENTS &&
             st.d.v < GRAPH_MAX_ELEMENTS && lim.d.v > -GRAPH_MAX_ELEMENTS &&
             lim.d.v < GRAPH_MAX_ELEMENTS) {
        int64_t num = lim.d.v - st.d.v, q = num / dl.d.v;
        if (q * dl.d.v != num && (num < 0) == (dl.d.v < 0))
            q++; /* ceil */
        out[0] = val_c(q > 0 ? q : 0);
    }
    return 1;
}

/* Unsqueeze's and Squeeze's dims from constant axes; squeezing a variable
 * makes them ASSUMED (it must be 1). */
static int values_axes_dims(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                            const int *nin, gval *out, int cap) {
    const gtensor_type *x = in_type(g, call, 0);
    int squeeze = call->op->variant, na = nin[1];
    if (!x || na < 1 || na > MAXD)
        return -1;
    int nd = squeeze ? x->ndim : x->ndim + na, hit[2 * MAXD] = {0};
    int n = squeeze ? x->ndim - na : nd;
    if (nd > MAXD || n < 1 || n > cap)
        return -1;
    for (int k = 0; k < na; k++) {
        if (in[1][k].kind != GVAL_EXACT || in[1][k].d.sym)
            return -1;
        int64_t a = in[1][k].d.v < 0 ? in[1][k].d.v + nd : in[1][k].d.v;
        if (a < 0 || a >= nd || hit[a]++)
            return -1;
    }
    gval_kind kind = GVAL_EXACT;
    for (int p = 0, j = 0; p < nd; p++) {
        if (!squeeze) {
            out[p] = hit[p] ? val_c(1) : (gval){GVAL_EXACT, x->dims[j++]};
        } else if (!hit[p]) {
            out[j++] = (gval){GVAL_EXACT, x->dims[p]};
        } else if (x->dims[p].sym) {
            kind = GVAL_ASSUMED;
        } else if (x->dims[p].v != 1) {
            return -1;
        }
    }
    for (int k = 0; k < n; k++)
        out[k].kind = kind;
    return n;
}

/* Slice's lengths, starts and steps, where the values tell them: from
 * constants; the whole of a variable dim (start 0, step 1, an end past
 * 2^48 or the variable itself); a prefix [0, n) of step 1 of a constant
 * dim c is n, ASSUMED: n <= c is checked when it runs (a position table
 * sliced to the sequence length; past it, ONNX Runtime's slice would be
 * shorter than the sequence, and the model would fail where it adds the
 * two). */
static int values_slice_params(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                               const int *nin, gval *out, int cap) {
    const gtensor_type *x = in_type(g, call, 0);
    int nd = x ? x->ndim : 0, ns = nin[1];
    if (!x || 3 * nd > cap || ns < 1 || nin[2] != ns || (call->nin > 3 && nin[3] != ns) ||
        (call->nin > 4 && nin[4] != ns))
        return -1;
    int which[MAXD];
    for (int d = 0; d < nd; d++) {
        which[d] = -1;
        out[d] = (gval){GVAL_EXACT, x->dims[d]};
        out[nd + d] = val_c(0);
        out[2 * nd + d] = val_c(1);
    }
    for (int k = 0; k < ns; k++) {
        gval a = call->nin > 3 ? in[3][k] : val_c(k);
        if (a.kind != GVAL_EXACT || a.d.sym)
            return -1;
        int64_t ax = a.d.v < 0 ? a.d.v + nd : a.d.v;
        if (ax < 0 || ax >= nd || which[ax] >= 0)
            return -1;
        which[ax] = k;
    }
    for (int d = 0; d < nd; d++) {
        int k = which[d];
        if (k < 0)
            continue;
        gval st = in[1][k], en = in[2][k], sp = call->nin > 4 ? in[4][k] : val_c(1);
        gdim n = x->dims[d];
        out[d] = out[nd + d] = out[2 * nd + d] = val_unknown();
        if (st.kind != GVAL_EXACT || en.kind != GVAL_EXACT || sp.kind != GVAL_EXACT || st.d.sym ||
            sp.d.sym || sp.d.v == 0)
            continue;
        out[2 * nd + d] = val_c(sp.d.v);
        if (!n.sym && !en.d.sym) { /* all constant: as compute_slice_params */
            int64_t s0 = st.d.v, e0 = en.d.v, step = sp.d.v;
            s0 = s0 < 0 ? (s0 < -n.v ? -n.v - 1 : s0) + n.v : s0;
            e0 = e0 < 0 ? (e0 < -n.v ? -n.v - 1 : e0) + n.v : e0;
            int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n.v : n.v - 1;
            s0 = s0 < lo ? lo : s0 > hi ? hi : s0;
            e0 = e0 < lo ? lo : e0 > hi ? hi : e0;
            int64_t diff = e0 - s0, len = diff / step;
            if (len * step != diff && (diff < 0) == (step < 0))
                len++;
            out[d] = val_c(len > 0 ? len : 0);
            out[nd + d] = val_c(s0);
            continue;
        }
        if (st.d.v != 0 || sp.d.v != 1)
            continue;
        out[nd + d] = val_c(0);
        if (n.sym && ((!en.d.sym && en.d.v >= GRAPH_MAX_ELEMENTS) || gdim_equal(en.d, n)))
            out[d] = (gval){GVAL_EXACT, n};
        else if (!n.sym && en.d.sym) /* a variable end within a constant dim */
            out[d] = (gval){GVAL_ASSUMED, en.d};
        /* a constant end within a variable dim is min(n, end): either may
           be the length in a run ONNX Runtime takes too, so it stays
           unknown (a binder binds it) */
    }
    return 3 * nd;
}

/* ---- the table ------------------------------------------------------------------- */

/* a shape function: its output is an int64 vector of dims */
#define DIMS_ROW(nm, nmin, nmax, schema, relation, fn, sum)                                        \
    OPS_SYM_ROW(nm, nmin, nmax, schema, relation, fn, OP_INJECTIVE, sum)
/* one that tells its values before the package runs too */
#define DIMS_ROW_VALS(nm, nmin, nmax, schema, relation, fn, var, vals, sum)                        \
    OPS_SYM_ROW_VALS(nm, nmin, nmax, schema, relation, fn, OP_INJECTIVE, var, vals, sum)

const kiln_op_def ops_shape_rows[] = {
    {.name = "bind_dims",
     .min_in = 1,
     .max_in = 1,
     .attrs = bind_attrs,
     .rel = rel_bind,
     .pattern = OP_OPAQUE,
     .compute = compute_bind,
     .summary = "int64 sizes known at run time; value k is size variable <prefix>_k after it",
     .sym_dims = 1,
     .binds = 1},
    DIMS_ROW_VALS("shape_of", 1, 1, shape_of_attrs, rel_shape_of, compute_shape_of, 0,
                  values_shape_of,
                  "ONNX Shape: the data's dims [start, end) as int64 values, symbolic ones too"),
    DIMS_ROW_VALS("reshape_dims", 2, 2, reshape_dims_attrs, rel_reshape_dims, compute_reshape_dims,
                  0, values_reshape_dims,
                  "ONNX Reshape's output dims from its shape values (-1 each if invalid)"),
    DIMS_ROW_VALS("broadcast_dims", 2, 2, no_attrs, rel_broadcast_dims, compute_broadcast_dims, 0,
                  values_broadcast_dims,
                  "ONNX Expand's output dims: the data's dims broadcast with the shape values"),
    DIMS_ROW("tile_dims", 2, 2, no_attrs, rel_tile_dims, compute_tile_dims,
             "ONNX Tile's output dims: each dim times its repeat"),
    DIMS_ROW_VALS("range_dims", 3, 3, no_attrs, rel_range_dims, compute_range_dims, 0,
                  values_range_dims, "ONNX Range's length from start, limit and delta"),
    DIMS_ROW("topk_dims", 2, 2, axis_attrs, rel_topk_dims, compute_topk_dims,
             "TopK's k from its value, checked against the axis"),
    DIMS_ROW("count_dims", 1, 1, count_dims_attrs, rel_count_dims, compute_count_dims,
             "a count (OneHot's depth, a window's size) from a scalar value, at least min"),
    DIMS_ROW("unpool_dims", 1, 1, unpool_dims_attrs, rel_unpool_dims, compute_unpool_dims,
             "ONNX MaxUnpool's output dims from its output_shape values, each at least min[k]"),
    DIMS_ROW("nonzero_dims", 1, 1, no_attrs, rel_selected_dims, compute_selected_dims,
             "how many nonzero elements NonZero selects"),
    OPS_SYM_ROW_V("compress_dims", 2, 2, axis0_attrs, rel_selected_dims, compute_selected_dims,
                  OP_INJECTIVE, 1,
                  "how many slices Compress selects: the true conditions within the axis"),
    DIMS_ROW("split_params", 2, 2, split_params_attrs, rel_split_params, compute_split_params,
             "ONNX Split with sizes as data: part index as slice_params gives a slice"),
    DIMS_ROW_VALS("unsqueeze_dims", 2, 2, no_attrs, rel_axes_dims, compute_axes_dims, 0,
                  values_axes_dims, "ONNX Unsqueeze's output dims from its axes values"),
    DIMS_ROW_VALS("squeeze_dims", 2, 2, no_attrs, rel_axes_dims, compute_axes_dims, 1,
                  values_axes_dims,
                  "ONNX Squeeze's output dims from its axes values (each a dim of 1)"),
    DIMS_ROW("reduce_dims", 2, 2, reduce_dims_attrs, rel_reduce_dims, compute_reduce_dims,
             "ReduceX's output dims over axes values (keepdims: 1 where reduced; else the rest)"),
    DIMS_ROW_VALS("slice_params", 3, 5, no_attrs, rel_slice_params, compute_slice_params, 0,
                  values_slice_params,
                  "ONNX Slice per dim: lengths, then starts, then steps (from starts, ends, axes, "
                  "steps)"),
    DIMS_ROW("pad_dims", 2, 2, pad_dims_attrs, rel_pad_dims, compute_pad_dims,
             "ONNX Pad's output dims from its pads values"),
};

const int ops_shape_count = (int)(sizeof ops_shape_rows / sizeof ops_shape_rows[0]);
