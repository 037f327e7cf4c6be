/* compress.c: the ops whose output size is decided by the data, ONNX's
 * NonZero and Compress. Each takes the count as a binder's value (input
 * after its data: src/ops/shape.c's nonzero_dims and compress_dims compute
 * it when the package runs), so its output's dim is a size variable.
 *
 *   nonzero(x, count)            int64[rank, count]: the coordinates of the
 *                                nonzero elements, in row-major order
 *   compress(x, cond, count)     the slices of x along `axis` whose
 *                                condition is true, in order (a condition
 *                                shorter than the axis leaves the rest out)
 *
 * The k-th selected element is found by its rank among the selected ones:
 * a reduction counts the selected ones before each position, then output
 * k takes the position whose rank is k. Cost: n^2 compares and count * n
 * selects for n positions (quadratic, like TopK's), which suits the small
 * inputs these ops are used on. A count that does not fit the data (only a
 * hand-written graph can give one) reads no element past the data:
 * compress checks each position it found (ops_checked_index), and
 * nonzero's output k past the last one is -1. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM

/* The count: one value of input i, a constant or a binder's. */
static int count_of(const struct kiln_graph *g, const gnode *call, int i, gdim *n) {
    if (ops_value_dims(g, call, i, n, 1) != 1)
        return ops_fail("input %d (the count) must be a constant or a bind_dims vector of one "
                        "value",
                        i),
               0;
    if (!n->sym && (n->v < 0 || n->v > GRAPH_MAX_ELEMENTS))
        return ops_fail("the count %lld must be 0 to 2^48", (long long)n->v), 0;
    return 1;
}

static kiln_expr minus1_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    (void)o;
    (void)u;
    return ops_int(ctx, -1);
}

/* 0 of u's dtype (an empty output) */
static kiln_expr zero_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    (void)o;
    return ops_const(ctx, kiln_tensor_dtype(u), 0);
}

/* ---- nonzero ----------------------------------------------------------------------- */

static rel_result rel_nonzero(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 1 || !ops_all_known(x, 0, x->ndim))
        return ops_fail("the data must have 1 or more dims, all known at compile time");
    gtensor_type res = {KILN_INT64, 2, {{x->ndim, NULL}}};
    if (!count_of(g, call, 1, &res.dims[1]))
        return REL_ERROR;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *rank;
    int nd;
    int64_t dims[MAXD];
    kiln_expr r[MAXD]; /* reduce axes over x */
} nz_args;

static kiln_expr nonzero_at(kiln_ctx *ctx, kiln_tensor *x, int nd, const kiln_expr *i) {
    return kiln_ne(kiln_tensor_at(x, nd, i), ops_const(ctx, kiln_tensor_dtype(x), 0));
}

/* flat position of index i in dims, as int64 */
static kiln_expr flat(kiln_ctx *ctx, const int64_t *dims, int nd, const kiln_expr *i) {
    kiln_expr f = ops_int(ctx, 0);
    for (int d = 0; d < nd; d++)
        f = kiln_add(kiln_mul(f, ops_int(ctx, dims[d])), i[d]);
    return f;
}

/* rank[i] = how many nonzero elements come before i (row-major) */
static kiln_expr nz_rank_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    nz_args *a = u;
    kiln_expr before =
        kiln_and(kiln_lt(flat(ctx, a->dims, a->nd, a->r), flat(ctx, a->dims, a->nd, i)),
                 nonzero_at(ctx, a->x, a->nd, a->r));
    return kiln_sum(kiln_select(before, ops_int(ctx, 1), ops_int(ctx, 0)), a->nd, a->r);
}

/* out[d, k] = coordinate d of the nonzero element of rank k */
static kiln_expr nz_out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nz_args *a = u;
    kiln_expr hit = kiln_and(nonzero_at(ctx, a->x, a->nd, a->r),
                             kiln_eq(kiln_tensor_at(a->rank, a->nd, a->r), o[1]));
    kiln_expr coord = a->r[a->nd - 1];
    for (int d = a->nd - 2; d >= 0; d--)
        coord = kiln_select(kiln_eq(o[0], ops_int(ctx, d)), a->r[d], coord);
    return kiln_max_reduce(kiln_select(hit, coord, ops_int(ctx, -1)), a->nd, a->r);
}

static kiln_status compute_nonzero(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                   kiln_tensor **out) {
    static _Thread_local nz_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], a.dims);
    int64_t od[2];
    ops_out_shape(call, od);
    int64_t numel = 1;
    for (int d = 0; d < a.nd; d++)
        numel *= a.dims[d];
    if (numel == 0) { /* no element: the count is 0 */
        out[0] = ops_compute(ctx, call, "", 2, od, minus1_body, NULL);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    for (int d = 0; d < a.nd; d++) {
        char nm[8];
        snprintf(nm, sizeof nm, "r%d", d);
        a.r[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.dims[d]), nm);
    }
    a.rank = ops_compute(ctx, call, ".rank", a.nd, a.dims, nz_rank_body, &a);
    for (int d = 0; d < a.nd; d++) { /* fresh axes for the second reduction */
        char nm[8];
        snprintf(nm, sizeof nm, "s%d", d);
        a.r[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.dims[d]), nm);
    }
    out[0] = a.rank ? ops_compute(ctx, call, "", 2, od, nz_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- compress ---------------------------------------------------------------------- */

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};
static const attr_schema compress_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static rel_result rel_compress(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *c = x ? ops_tensor_in(in[1], 1, &r) : 0;
    int axis;
    if (!c)
        return r;
    if (!ops_attr_axis(call, "axis", 0, x->ndim, &axis))
        return REL_ERROR;
    if (!ops_all_known(x, 0, x->ndim))
        return ops_fail("the data's dims must be known at compile time");
    if (c->ndim != 1 || c->dims[0].sym || c->dtype == KILN_FLOAT16 || c->dtype == KILN_BFLOAT16)
        return ops_fail("the condition must be a 1-D bool (or number) vector of a length known "
                        "at compile time");
    gtensor_type res = *x;
    if (!count_of(g, call, 2, &res.dims[axis]))
        return REL_ERROR;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *cond, *rank, *pos;
    int nd, axis;
    int64_t n; /* the positions: the condition's length, at most the axis */
    kiln_expr p;
} cp_args;

static kiln_expr cond_at(kiln_ctx *ctx, kiln_tensor *c, kiln_expr i) {
    return kiln_ne(kiln_tensor_at(c, 1, &i), ops_const(ctx, kiln_tensor_dtype(c), 0));
}

/* rank[q] = how many true conditions come before q */
static kiln_expr cp_rank_body(kiln_ctx *ctx, const kiln_expr *q, void *u) {
    cp_args *a = u;
    kiln_expr before = kiln_and(kiln_lt(a->p, q[0]), cond_at(ctx, a->cond, a->p));
    return kiln_sum(kiln_select(before, ops_int(ctx, 1), ops_int(ctx, 0)), 1, &a->p);
}

/* pos[k] = the position of the true condition of rank k */
static kiln_expr cp_pos_body(kiln_ctx *ctx, const kiln_expr *k, void *u) {
    cp_args *a = u;
    kiln_expr hit =
        kiln_and(cond_at(ctx, a->cond, a->p), kiln_eq(kiln_tensor_at(a->rank, 1, &a->p), k[0]));
    return kiln_max_reduce(kiln_select(hit, a->p, ops_int(ctx, -1)), 1, &a->p);
}

static kiln_expr cp_out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    cp_args *a = u;
    kiln_expr ix[MAXD];
    memcpy(ix, o, sizeof(kiln_expr) * (size_t)a->nd);
    int64_t dims[MAXD];
    ops_shape(a->x, dims);
    ix[a->axis] = ops_checked_index(ctx, kiln_tensor_at(a->pos, 1, &o[a->axis]), dims[a->axis], 0);
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_status compute_compress(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    static _Thread_local cp_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[MAXD], od[MAXD], cn;
    a.x = in[0];
    a.cond = in[1];
    a.nd = ops_shape(in[0], xd);
    a.axis = ops_norm_axis(call, 0, a.nd);
    ops_shape(in[1], &cn);
    ops_out_shape(call, od);
    a.n = cn < xd[a.axis] ? cn : xd[a.axis];
    if (a.n == 0 || xd[a.axis] == 0) { /* nothing selected: the count is 0 */
        out[0] = ops_compute(ctx, call, "", a.nd, od, zero_body, in[0]);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    a.p = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "p");
    a.rank = ops_compute(ctx, call, ".rank", 1, &a.n, cp_rank_body, &a);
    a.p = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "q");
    kiln_expr count = ops_dim(ctx, call->type.t[0].dims[a.axis]);
    a.pos = ops_compute_e(ctx, call, ".pos", 1, &count, cp_pos_body, &a);
    out[0] = a.rank && a.pos ? ops_compute(ctx, call, "", a.nd, od, cp_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

const kiln_op_def ops_compress_rows[] = {
    {.name = "nonzero",
     .min_in = 2,
     .max_in = 2,
     .attrs = no_attrs,
     .rel = rel_nonzero,
     .pattern = OP_OPAQUE,
     .compute = compute_nonzero,
     .summary = "int64[rank, count]: the coordinates of the nonzero elements (count: input 1)",
     .sym_dims = 1},
    {.name = "compress",
     .min_in = 3,
     .max_in = 3,
     .attrs = compress_attrs,
     .rel = rel_compress,
     .pattern = OP_OPAQUE,
     .compute = compute_compress,
     .summary = "the slices along axis whose condition is true (count: input 2)",
     .sym_dims = 1},
};

const int ops_compress_count = (int)(sizeof ops_compress_rows / sizeof ops_compress_rows[0]);
