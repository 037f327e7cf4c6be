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
 *   split_params,
 *   nonzero_dims,    (and how many elements NonZero and Compress select)
 *   compress_dims,
 *   resize_dims      (and Resize's scales or sizes)
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

/* What a shape function computes, per output dim, before the select that
 * picks dim i. */
typedef struct {
    int n;
    kiln_expr dim[3 * MAXD];
} dims_fn;

static kiln_expr pick_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    const dims_fn *f = u;
    kiln_expr e = f->dim[f->n - 1];
    for (int k = f->n - 2; k >= 0; k--)
        e = kiln_select(kiln_eq(idx[0], kiln_int(ctx, k)), f->dim[k], e);
    return e;
}

/* The call's output, an int64[f->n] of the dims f computed (n >= 1). */
static kiln_status dims_out(kiln_ctx *ctx, const gnode *call, dims_fn *f, kiln_tensor **out) {
    int64_t n = f->n;
    KILN_ASSERT(n >= 1);
    out[0] = ops_compute(ctx, call, "", 1, &n, pick_body, f);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* Element k of a 0-D or 1-D tensor, in dtype dt. */
static kiln_expr elem_as(kiln_ctx *ctx, kiln_tensor *t, int k, kiln_dtype dt) {
    kiln_expr i = kiln_int(ctx, k);
    int nd = kiln_tensor_ndim(t);
    kiln_expr v = kiln_tensor_at(t, nd, nd ? &i : NULL);
    return kiln_tensor_dtype(t) == dt ? v : kiln_cast(dt, v);
}

/* Element k of a 1-D tensor, as int64. */
static kiln_expr elem(kiln_ctx *ctx, kiln_tensor *t, int k) {
    return elem_as(ctx, t, k, KILN_INT64);
}

/* The relation of a shape function: input v is a 1-D integer (or, with
 * is_float, float) vector of known length, the output an int64 vector of
 * `len` dims (len < 0: the vector's length). */
static rel_result dims_rel(const struct kiln_graph *g, const gtensor_type *v, const char *what,
                           int is_float, int64_t len, gtype *out) {
    if (!(is_float ? ops_is_float_dtype(v->dtype) : ops_is_index_dtype(v->dtype)) || v->ndim != 1 ||
        v->dims[0].sym)
        return ops_fail("%s must be a 1-D %s tensor of a length known at compile time", what,
                        is_float ? "float" : "integer");
    if (len < 0)
        len = v->dims[0].v;
    if (len < 1 || len > MAXD)
        return ops_fail("%s has %lld values; 1 to %d dims are supported", what, (long long)len,
                        MAXD);
    gtensor_type res = {KILN_INT64, 1, {{len, NULL}}};
    return ops_set_out(g, out, &res);
}

/* ---- bind_dims ------------------------------------------------------------------- */

static const attr_schema bind_attrs[] = {{"prefix", GA_STR, 1, NULL}, {NULL, 0, 0, NULL}};

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
    return dims_rel(g, s, "the shape", 0, -1, out);
}

/* ONNX Reshape's dims: shape[k], where 0 copies the data's dim k (unless
 * allowzero) and one -1 takes what is left of the element count. */
static kiln_status compute_reshape_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    static _Thread_local dims_fn f;
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
        kiln_expr v = elem(ctx, s, k);
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
    return dims_out(ctx, call, &f, out);
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
    return dims_rel(g, s, "the shape", 0, len, out);
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
    static _Thread_local dims_fn f;
    kiln_tensor *x = in[0], *s = in[1];
    int64_t ns;
    ops_shape(s, &ns);
    int xn = kiln_tensor_ndim(x);
    f.n = ns > xn ? (int)ns : xn;
    kiln_expr one = kiln_int(ctx, 1), minus1 = kiln_int(ctx, -1);
    for (int k = 0; k < f.n; k++) {
        int kx = k - (f.n - xn), ks = k - (f.n - (int)ns);
        kiln_expr a = kx >= 0 ? kiln_tensor_dim(x, kx) : one;
        kiln_expr b = ks >= 0 ? elem(ctx, s, ks) : one;
        kiln_expr d = kiln_select(kiln_eq(a, one), b,
                                  kiln_select(kiln_or(kiln_eq(b, one), kiln_eq(b, a)), a, minus1));
        f.dim[k] = kiln_select(kiln_lt(b, kiln_int(ctx, 0)), minus1, d);
    }
    return dims_out(ctx, call, &f, out);
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
    return dims_rel(g, s, "the repeats", 0, -1, out);
}

/* ONNX Tile's dims: dim k times repeats[k]; a negative repeat or a product
 * past 2^48 gives -1. */
static kiln_status compute_tile_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local dims_fn f;
    kiln_tensor *x = in[0], *s = in[1];
    f.n = kiln_tensor_ndim(x);
    for (int k = 0; k < f.n; k++) {
        kiln_expr a = kiln_tensor_dim(x, k), b = elem(ctx, s, k);
        kiln_expr p = kiln_mul(kiln_cast(KILN_FLOAT64, a), kiln_cast(KILN_FLOAT64, b));
        kiln_expr bad = kiln_or(kiln_lt(b, kiln_int(ctx, 0)), too_big(ctx, p));
        /* the product only where it fits: min keeps the multiply in range */
        f.dim[k] = kiln_select(bad, kiln_int(ctx, -1),
                               kiln_mul(a, kiln_min(b, kiln_int(ctx, GRAPH_MAX_ELEMENTS))));
    }
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
    kiln_expr v[3];
    for (int i = 0; i < 3; i++)
        v[i] = kiln_cast(KILN_FLOAT64, elem_as(ctx, in[i], 0, kiln_tensor_dtype(in[i])));
    kiln_expr q = kiln_ceil(kiln_div(kiln_sub(v[1], v[0]), v[2]));
    kiln_expr zero = kiln_const(ctx, KILN_FLOAT64, 0);
    q = kiln_select(kiln_lt(q, zero), zero, q); /* NaN stays NaN: then -1 */
    f.n = 1;
    f.dim[0] = kiln_select(
        kiln_eq(v[2], zero), kiln_int(ctx, -1),
        as_count(ctx, q, KILN_FLOAT64, kiln_int(ctx, 0), kiln_int(ctx, GRAPH_MAX_ELEMENTS)));
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
    int axis = ops_norm_axis(call, -1, kiln_tensor_ndim(in[0]));
    f.n = 1;
    f.dim[0] = as_count(ctx, elem_as(ctx, in[1], 0, kiln_tensor_dtype(in[1])),
                        kiln_tensor_dtype(in[1]), kiln_int(ctx, 0), kiln_tensor_dim(in[0], axis));
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
    kiln_dtype dt = kiln_tensor_dtype(in[0]);
    f.n = 1;
    f.dim[0] =
        as_count(ctx, elem_as(ctx, in[0], 0, dt), dt, kiln_int(ctx, graph_attr_int(call, "min", 0)),
                 kiln_int(ctx, GRAPH_MAX_ELEMENTS));
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
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
        return dims_out(ctx, call, &f, out);
    }
    kiln_expr v = kiln_tensor_at(t, nd, r);
    kiln_expr nz = kiln_ne(v, ops_const(ctx, kiln_tensor_dtype(t), 0));
    f.dim[0] = kiln_sum(kiln_select(nz, one, zero), nd, r);
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
    kiln_tensor *x = in[0];
    int nd = kiln_tensor_ndim(x), axis = ops_norm_axis(call, 0, nd);
    int64_t np, k = graph_attr_int(call, "index", 0);
    ops_shape(in[1], &np);
    kiln_expr zero = kiln_int(ctx, 0), sum = zero, start = zero;
    kiln_expr bad = kiln_const(ctx, KILN_BOOL, 0);
    for (int j = 0; j < np; j++) {
        kiln_expr v = elem(ctx, in[1], j);
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
        kiln_expr len = d == axis ? elem(ctx, in[1], (int)k) : kiln_tensor_dim(x, d);
        f.dim[d] = kiln_select(bad, kiln_int(ctx, -1), len);
        f.dim[nd + d] = d == axis ? start : zero;
        f.dim[2 * nd + d] = kiln_int(ctx, 1);
    }
    return dims_out(ctx, call, &f, out);
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
    return dims_rel(g, a, "the axes", 0, len, out);
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
        kiln_expr a = norm_axis(ctx, elem(ctx, axes, k), nd);
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
    static _Thread_local dims_fn f;
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
    return dims_out(ctx, call, &f, out);
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
    return dims_rel(g, a, "the axes", 0, len, out);
}

/* ONNX ReduceX's dims over run-time axes (negative: from the end): with
 * keepdims, one per dim of the data, 1 where reduced, else the data's;
 * without, the dims not reduced, in order. An axis out of range or given
 * twice gives -1. */
static kiln_status compute_reduce_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local dims_fn f;
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
        return dims_out(ctx, call, &f, out);
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
    return dims_out(ctx, call, &f, out);
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
    static _Thread_local dims_fn f;
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
        ax[k] = call->nin > 3 ? norm_axis(ctx, elem(ctx, in[3], k), nd) : kiln_int(ctx, k);
        for (int p = 0; p < nd; p++)
            hit[p] = kiln_add(hit[p], kiln_select(kiln_eq(ax[k], kiln_int(ctx, p)), one, zero));
        if (call->nin > 4)
            bad = kiln_or(bad, kiln_eq(elem(ctx, in[4], k), zero));
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
            kiln_expr st = elem(ctx, in[1], k), en = elem(ctx, in[2], k);
            kiln_expr sp = call->nin > 4 ? elem(ctx, in[4], k) : one;
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
    return dims_out(ctx, call, &f, out);
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
    return dims_rel(g, p, "the pads", 0, x->ndim, out);
}

/* ONNX Pad's dims: n + begin + end per dim (the pads as ONNX orders them,
 * the begins then the ends); a dim below 0 or past 2^48, a negative pad in
 * a mode other than constant, or an empty dim padded by edge or reflect
 * gives -1. */
static kiln_status compute_pad_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    static _Thread_local dims_fn f;
    kiln_tensor *x = in[0];
    f.n = kiln_tensor_ndim(x);
    int constant = !strcmp(graph_attr_str(call, "pad_mode", "constant"), "constant");
    kiln_expr zero = kiln_int(ctx, 0);
    for (int d = 0; d < f.n; d++) {
        kiln_expr n = kiln_tensor_dim(x, d), b = elem(ctx, in[1], d), e = elem(ctx, in[1], f.n + d);
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
    return dims_out(ctx, call, &f, out);
}

/* ---- resize_dims ----------------------------------------------------------------- */

static const attr_schema resize_dims_attrs[] = {
    {"sizes", GA_INT, 0, "0"}, {"upsample", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static rel_result rel_resize_dims(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *v = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!v)
        return r;
    int64_t sizes = graph_attr_int(call, "sizes", 0), up = graph_attr_int(call, "upsample", 0);
    if ((sizes != 0 && sizes != 1) || (up != 0 && up != 1) || (sizes && up))
        return ops_fail("sizes and upsample must be 0 or 1, and not both 1");
    if (sizes && v->dtype != KILN_INT64)
        return ops_fail("the sizes must be int64, not %s", kiln_dtype_name(v->dtype));
    if (x->ndim < 1 || v->ndim != 1 || v->dims[0].sym || v->dims[0].v != x->ndim)
        return ops_fail("the %s must be a vector of one value per dim of the %d-D input",
                        sizes ? "sizes" : "scales", x->ndim);
    return dims_rel(g, v, sizes ? "the sizes" : "the scales", !sizes, -1, out);
}

/* ONNX Resize's (and Upsample's) output dims: sizes[d], or
 * floor(dim d * scales[d]) in float64 (ONNX's reference multiplies its
 * float32 scales by the int64 dims). A scale that is not positive and
 * finite (below 1 for Upsample), a size below 0 or one that resizes an
 * empty dim, and a dim past 2^48 are invalid. */
static kiln_status compute_resize_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local dims_fn f;
    kiln_tensor *x = in[0], *v = in[1];
    int sizes = graph_attr_int(call, "sizes", 0) != 0,
        up = graph_attr_int(call, "upsample", 0) != 0;
    f.n = kiln_tensor_ndim(x);
    kiln_dtype f64 = KILN_FLOAT64;
    kiln_expr zero = kiln_int(ctx, 0), limit = kiln_int(ctx, GRAPH_MAX_ELEMENTS);
    kiln_expr flimit = kiln_const(ctx, f64, (double)GRAPH_MAX_ELEMENTS);
    kiln_expr bad = kiln_const(ctx, KILN_BOOL, 0), w[MAXD];
    for (int d = 0; d < f.n; d++) {
        kiln_expr n = kiln_tensor_dim(x, d);
        if (sizes) {
            w[d] = elem(ctx, v, d);
            bad = kiln_or(bad, kiln_or(kiln_or(kiln_lt(w[d], zero), kiln_gt(w[d], limit)),
                                       kiln_and(kiln_eq(n, zero), kiln_gt(w[d], zero))));
            continue;
        }
        kiln_expr i = kiln_int(ctx, d);
        kiln_expr s = kiln_cast(f64, kiln_tensor_at(v, 1, &i));
        kiln_expr p = kiln_floor(kiln_mul(s, kiln_cast(f64, n)));
        /* NaN fails every comparison: not ok */
        kiln_expr ok = kiln_and(kiln_and(kiln_gt(s, kiln_const(ctx, f64, 0)),
                                         kiln_le(s, kiln_const(ctx, f64, DBL_MAX))),
                                kiln_and(kiln_ge(p, kiln_const(ctx, f64, 0)), kiln_le(p, flimit)));
        if (up)
            ok = kiln_and(ok, kiln_ge(s, kiln_const(ctx, f64, 1)));
        bad = kiln_or(bad, kiln_not(ok));
        /* converted only where it is in range, so the conversion is defined */
        w[d] = kiln_cast(KILN_INT64, kiln_select(ok, p, kiln_const(ctx, f64, 0)));
    }
    for (int d = 0; d < f.n; d++)
        f.dim[d] = kiln_select(bad, kiln_int(ctx, -1), w[d]);
    return dims_out(ctx, call, &f, out);
}

/* ---- shape_of ----------------------------------------------------------------------- */

static const attr_schema shape_of_attrs[] = {
    {"start", GA_INT, 0, "0"}, {"end", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};

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
    static _Thread_local dims_fn f;
    int s, e;
    shape_range(call, kiln_tensor_ndim(in[0]), &s, &e);
    f.n = e - s;
    for (int d = s; d < e; d++)
        f.dim[d - s] = kiln_tensor_dim(in[0], d);
    return dims_out(ctx, call, &f, out);
}

/* ---- the table ------------------------------------------------------------------- */

/* a shape function: its output is an int64 vector of dims */
#define DIMS_ROW(nm, nmin, nmax, schema, relation, fn, sum)                                        \
    OPS_SYM_ROW(nm, nmin, nmax, schema, relation, fn, OP_INJECTIVE, sum)

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
    DIMS_ROW("shape_of", 1, 1, shape_of_attrs, rel_shape_of, compute_shape_of,
             "ONNX Shape: the data's dims [start, end) as int64 values, symbolic ones too"),
    DIMS_ROW("reshape_dims", 2, 2, reshape_dims_attrs, rel_reshape_dims, compute_reshape_dims,
             "ONNX Reshape's output dims from its shape values (-1 each if invalid)"),
    DIMS_ROW("broadcast_dims", 2, 2, no_attrs, rel_broadcast_dims, compute_broadcast_dims,
             "ONNX Expand's output dims: the data's dims broadcast with the shape values"),
    DIMS_ROW("tile_dims", 2, 2, no_attrs, rel_tile_dims, compute_tile_dims,
             "ONNX Tile's output dims: each dim times its repeat"),
    DIMS_ROW("range_dims", 3, 3, no_attrs, rel_range_dims, compute_range_dims,
             "ONNX Range's length from start, limit and delta"),
    DIMS_ROW("topk_dims", 2, 2, axis_attrs, rel_topk_dims, compute_topk_dims,
             "TopK's k from its value, checked against the axis"),
    DIMS_ROW("count_dims", 1, 1, count_dims_attrs, rel_count_dims, compute_count_dims,
             "a count (OneHot's depth, a window's size) from a scalar value, at least min"),
    DIMS_ROW("nonzero_dims", 1, 1, no_attrs, rel_selected_dims, compute_selected_dims,
             "how many nonzero elements NonZero selects"),
    OPS_SYM_ROW_V("compress_dims", 2, 2, axis0_attrs, rel_selected_dims, compute_selected_dims,
                  OP_INJECTIVE, 1,
                  "how many slices Compress selects: the true conditions within the axis"),
    DIMS_ROW("split_params", 2, 2, split_params_attrs, rel_split_params, compute_split_params,
             "ONNX Split with sizes as data: part index as slice_params gives a slice"),
    DIMS_ROW("unsqueeze_dims", 2, 2, no_attrs, rel_axes_dims, compute_axes_dims,
             "ONNX Unsqueeze's output dims from its axes values"),
    OPS_SYM_ROW_V("squeeze_dims", 2, 2, no_attrs, rel_axes_dims, compute_axes_dims, OP_INJECTIVE, 1,
                  "ONNX Squeeze's output dims from its axes values (each a dim of 1)"),
    DIMS_ROW("reduce_dims", 2, 2, reduce_dims_attrs, rel_reduce_dims, compute_reduce_dims,
             "ReduceX's output dims over axes values (keepdims: 1 where reduced; else the rest)"),
    DIMS_ROW("slice_params", 3, 5, no_attrs, rel_slice_params, compute_slice_params,
             "ONNX Slice per dim: lengths, then starts, then steps (from starts, ends, axes, "
             "steps)"),
    DIMS_ROW("pad_dims", 2, 2, pad_dims_attrs, rel_pad_dims, compute_pad_dims,
             "ONNX Pad's output dims from its pads values"),
    DIMS_ROW("resize_dims", 2, 2, resize_dims_attrs, rel_resize_dims, compute_resize_dims,
             "ONNX Resize's output dims from its scales or (sizes=1) sizes (-1 each if invalid)"),
};

const int ops_shape_count = (int)(sizeof ops_shape_rows / sizeof ops_shape_rows[0]);
