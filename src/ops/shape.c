/* shape.c: shapes known only when the package runs
 * (docs/DYNAMIC_SHAPES.md, part 3).
 *
 *   bind_dims        the binder: an int64 vector passed through, whose
 *                    element k is size variable "<prefix>_k" for the types
 *                    after it (ops_value_dims reads them); the plan marks
 *                    its kernel, and the executor binds the variables from
 *                    its output before it sets up the kernels that use them
 *   reshape_dims,    the shape functions: the output dims of an op whose
 *   resize_dims      shape depends on an input's values, computed from
 *                    those values and the data's dims
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

/* What a shape function computes, per output dim, before the select that
 * picks dim i. */
typedef struct {
    int n;
    kiln_expr dim[MAXD];
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

/* Element k of a 1-D tensor, as int64. */
static kiln_expr elem(kiln_ctx *ctx, kiln_tensor *t, int k) {
    kiln_expr i = kiln_int(ctx, k);
    int nd = kiln_tensor_ndim(t);
    kiln_expr v = kiln_tensor_at(t, nd, nd ? &i : NULL);
    return kiln_tensor_dtype(t) == KILN_INT64 ? v : kiln_cast(KILN_INT64, v);
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

/* ---- the table ------------------------------------------------------------------- */

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
    {.name = "reshape_dims",
     .min_in = 2,
     .max_in = 2,
     .attrs = reshape_dims_attrs,
     .rel = rel_reshape_dims,
     .pattern = OP_INJECTIVE,
     .compute = compute_reshape_dims,
     .summary = "ONNX Reshape's output dims from its shape values (-1 each if invalid)",
     .sym_dims = 1},
    {.name = "resize_dims",
     .min_in = 2,
     .max_in = 2,
     .attrs = resize_dims_attrs,
     .rel = rel_resize_dims,
     .pattern = OP_INJECTIVE,
     .compute = compute_resize_dims,
     .summary = "ONNX Resize's output dims from its scales or (sizes=1) sizes (-1 each if "
                "invalid)",
     .sym_dims = 1},
};

const int ops_shape_count = (int)(sizeof ops_shape_rows / sizeof ops_shape_rows[0]);
