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
 *   unique(x, count)             ONNX Unique's four outputs along `axis`
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
        char nm[16];
        snprintf(nm, sizeof nm, "r%d", d);
        a.r[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.dims[d]), nm);
    }
    a.rank = ops_compute(ctx, call, ".rank", a.nd, a.dims, nz_rank_body, &a);
    for (int d = 0; d < a.nd; d++) { /* fresh axes for the second reduction */
        char nm[16];
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

/* ---- unique ----------------------------------------------------------------------- */

static const attr_schema unique_attrs[] = {
    {"axis", GA_INT, 0, "0"}, {"sorted", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};

static rel_result rel_unique(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    int axis;
    gdim n;
    if (!x)
        return r;
    if (x->ndim < 1 || !ops_all_known(x, 0, x->ndim))
        return ops_fail("the data must have 1 or more dims, all known at compile time");
    if (!ops_attr_axis(call, "axis", 0, x->ndim, &axis) || !count_of(g, call, 1, &n))
        return REL_ERROR;
    gtensor_type t[4] = {
        *x, {KILN_INT64, 1, {n}}, {KILN_INT64, 1, {x->dims[axis]}}, {KILN_INT64, 1, {n}}};
    t[0].dims[axis] = n;
    return ops_set_tuple(g, out, 4, t);
}

typedef struct {
    kiln_tensor *x, *eq, *first, *fd, *rank, *firstof, *pos;
    int nd, axis, sorted;
    int64_t dims[MAXD], len, inner, outer, slice; /* slice = outer * inner */
    kiln_expr r;                                  /* the current stage's reduce axis */
} uq_args;

/* x's element p (0 <= p < slice, row-major over the other dims) of slice j */
static kiln_expr uq_at(kiln_ctx *ctx, const uq_args *a, kiln_expr j, kiln_expr p) {
    kiln_expr ix[MAXD], o = kiln_floordiv(p, ops_int(ctx, a->inner));
    kiln_expr i = kiln_floormod(p, ops_int(ctx, a->inner));
    for (int d = a->nd - 1; d > a->axis; d--) {
        ix[d] = d > a->axis + 1 ? kiln_floormod(i, ops_int(ctx, a->dims[d])) : i;
        i = kiln_floordiv(i, ops_int(ctx, a->dims[d]));
    }
    for (int d = a->axis - 1; d >= 0; d--) {
        ix[d] = d ? kiln_floormod(o, ops_int(ctx, a->dims[d])) : o;
        o = kiln_floordiv(o, ops_int(ctx, a->dims[d]));
    }
    ix[a->axis] = j;
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_expr one_if(kiln_ctx *ctx, kiln_expr c) {
    return kiln_select(c, ops_int(ctx, 1), ops_int(ctx, 0));
}

/* eq[j, k] = 1 if slices j and k are equal element by element */
static kiln_expr uq_eq_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    return kiln_min_reduce(
        one_if(ctx, kiln_eq(uq_at(ctx, a, i[0], a->r), uq_at(ctx, a, i[1], a->r))), 1, &a->r);
}

/* fd[j, k] = the first element where slices j and k differ, or slice */
static kiln_expr uq_fd_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    kiln_expr ne = kiln_ne(uq_at(ctx, a, i[0], a->r), uq_at(ctx, a, i[1], a->r));
    return kiln_min_reduce(kiln_select(ne, a->r, ops_int(ctx, a->slice)), 1, &a->r);
}

static kiln_expr at2(kiln_tensor *t, kiln_expr a, kiln_expr b) {
    kiln_expr ix[2] = {a, b};
    return kiln_tensor_at(t, 2, ix);
}

/* first[j] = 1 if no earlier slice equals slice j */
static kiln_expr uq_first_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    kiln_expr dup = kiln_and(kiln_lt(a->r, i[0]), kiln_eq(at2(a->eq, i[0], a->r), ops_int(ctx, 1)));
    return kiln_min_reduce(kiln_select(dup, ops_int(ctx, 0), ops_int(ctx, 1)), 1, &a->r);
}

/* rank[j] = the place of slice j's value among the first occurrences:
 * those before it (sorted = 0), or those smaller (sorted = 1: compared at
 * their first differing element) */
static kiln_expr uq_rank_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    kiln_expr before, first = kiln_eq(kiln_tensor_at(a->first, 1, &a->r), ops_int(ctx, 1));
    if (a->sorted) {
        kiln_expr fd = at2(a->fd, a->r, i[0]);
        kiln_expr p = kiln_min(fd, ops_int(ctx, a->slice - 1));
        before = kiln_and(kiln_lt(fd, ops_int(ctx, a->slice)),
                          kiln_lt(uq_at(ctx, a, a->r, p), uq_at(ctx, a, i[0], p)));
    } else {
        before = kiln_lt(a->r, i[0]);
    }
    return kiln_sum(one_if(ctx, kiln_and(first, before)), 1, &a->r);
}

/* firstof[j] = the first slice equal to slice j */
static kiln_expr uq_firstof_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    kiln_expr same = kiln_eq(at2(a->eq, i[0], a->r), ops_int(ctx, 1));
    return kiln_min_reduce(kiln_select(same, a->r, ops_int(ctx, a->len - 1)), 1, &a->r);
}

/* pos[k] = the first occurrence of rank k (-1 past the last) */
static kiln_expr uq_pos_body(kiln_ctx *ctx, const kiln_expr *k, void *u) {
    uq_args *a = u;
    kiln_expr hit = kiln_and(kiln_eq(kiln_tensor_at(a->first, 1, &a->r), ops_int(ctx, 1)),
                             kiln_eq(kiln_tensor_at(a->rank, 1, &a->r), k[0]));
    return kiln_max_reduce(kiln_select(hit, a->r, ops_int(ctx, -1)), 1, &a->r);
}

static kiln_expr uq_pos_at(kiln_ctx *ctx, const uq_args *a, kiln_expr k) {
    return ops_checked_index(ctx, kiln_tensor_at(a->pos, 1, &k), a->len, 0);
}

static kiln_expr uq_y_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    uq_args *a = u;
    kiln_expr ix[MAXD];
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)a->nd);
    ix[a->axis] = uq_pos_at(ctx, a, i[a->axis]);
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_expr uq_index_body(kiln_ctx *ctx, const kiln_expr *k, void *u) {
    (void)ctx;
    return kiln_tensor_at(((uq_args *)u)->pos, 1, k);
}

static kiln_expr uq_inverse_body(kiln_ctx *ctx, const kiln_expr *j, void *u) {
    uq_args *a = u;
    kiln_expr f = kiln_tensor_at(a->firstof, 1, j); /* in [0, len) by its reduction */
    return kiln_tensor_at(a->rank, 1, &f);
}

static kiln_expr uq_count_body(kiln_ctx *ctx, const kiln_expr *k, void *u) {
    uq_args *a = u;
    kiln_expr same = kiln_eq(at2(a->eq, uq_pos_at(ctx, a, k[0]), a->r), ops_int(ctx, 1));
    return kiln_sum(one_if(ctx, same), 1, &a->r);
}

static kiln_expr new_axis(kiln_ctx *ctx, int64_t n, const char *name) {
    return kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, n), name);
}

/* ONNX Unique along `axis` (the converter flattens for none): the distinct
 * slices (sorted, or in order of first occurrence), the index of each one's
 * first occurrence, every slice's place among them, and how often each
 * occurs. Slices compare element by element; NaN equals nothing, so each
 * NaN is distinct. Cost: len^2 * slice compares, as compress's. */
/* a's shape and the eq and first stages of unique (and unique_dims) */
static kiln_status uq_init(kiln_ctx *ctx, const gnode *call, kiln_tensor *x, uq_args *a) {
    memset(a, 0, sizeof *a);
    a->x = x;
    a->nd = ops_shape(x, a->dims);
    a->axis = ops_norm_axis(call, 0, a->nd);
    a->sorted = graph_attr_int(call, "sorted", 1) != 0;
    a->len = a->dims[a->axis];
    a->inner = a->outer = 1;
    for (int d = 0; d < a->nd; d++)
        if (d < a->axis)
            a->outer *= a->dims[d];
        else if (d > a->axis)
            a->inner *= a->dims[d];
    a->slice = a->outer * a->inner;
    if (a->len == 0 || a->slice == 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "unique of an empty tensor is not supported");
    int64_t ll[2] = {a->len, a->len};
    a->r = new_axis(ctx, a->slice, "p");
    a->eq = ops_compute(ctx, call, ".eq", 2, ll, uq_eq_body, a);
    a->r = new_axis(ctx, a->len, "j");
    a->first = a->eq ? ops_compute(ctx, call, ".first", 1, &a->len, uq_first_body, a) : NULL;
    return a->first ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_status compute_unique(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    static _Thread_local uq_args a;
    if (uq_init(ctx, call, in[0], &a))
        return KILN_ERR_INVALID;
    gdim n = call->type.t[1].dims[0];
    kiln_expr count = ops_dim(ctx, n), len = ops_int(ctx, a.len);
    int64_t ll[2] = {a.len, a.len};
    if (a.sorted) {
        a.r = new_axis(ctx, a.slice, "q");
        a.fd = ops_compute(ctx, call, ".fd", 2, ll, uq_fd_body, &a);
    }
    a.r = new_axis(ctx, a.len, "k");
    a.rank = ops_compute(ctx, call, ".rank", 1, &a.len, uq_rank_body, &a);
    a.r = new_axis(ctx, a.len, "m");
    a.firstof = ops_compute(ctx, call, ".firstof", 1, &a.len, uq_firstof_body, &a);
    a.r = new_axis(ctx, a.len, "s");
    a.pos = ops_compute_e(ctx, call, ".pos", 1, &count, uq_pos_body, &a);
    if (!a.eq || !a.first || !a.rank || !a.firstof || !a.pos || (a.sorted && !a.fd))
        return KILN_ERR_INVALID;
    kiln_expr yd[MAXD];
    for (int d = 0; d < a.nd; d++)
        yd[d] = d == a.axis ? count : ops_int(ctx, a.dims[d]);
    out[0] = ops_compute_e(ctx, call, "", a.nd, yd, uq_y_body, &a);
    out[1] = ops_compute_e(ctx, call, ".indices", 1, &count, uq_index_body, &a);
    out[2] = ops_compute_e(ctx, call, ".inverse", 1, &len, uq_inverse_body, &a);
    a.r = new_axis(ctx, a.len, "c");
    out[3] = ops_compute_e(ctx, call, ".counts", 1, &count, uq_count_body, &a);
    return out[0] && out[1] && out[2] && out[3] ? KILN_OK : KILN_ERR_INVALID;
}

/* unique_dims(x): how many distinct slices unique finds (its shape
 * function: here, as it shares unique's stages) */
static rel_result rel_unique_dims(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    int axis;
    if (!x)
        return r;
    if (x->ndim < 1 || !ops_all_known(x, 0, x->ndim))
        return ops_fail("the data must have 1 or more dims, all known at compile time");
    if (!ops_attr_axis(call, "axis", 0, x->ndim, &axis))
        return REL_ERROR;
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    return ops_set_out(g, out, &res);
}

static kiln_expr uq_total_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    (void)i;
    uq_args *a = u;
    return kiln_sum(kiln_tensor_at(a->first, 1, &a->r), 1, &a->r);
}

static kiln_status compute_unique_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local uq_args a;
    if (uq_init(ctx, call, in[0], &a))
        return KILN_ERR_INVALID;
    a.r = new_axis(ctx, a.len, "u");
    out[0] = ops_compute(ctx, call, "", 1, (int64_t[]){1}, uq_total_body, &a);
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
    {.name = "unique",
     .min_in = 2,
     .max_in = 2,
     .attrs = unique_attrs,
     .rel = rel_unique,
     .pattern = OP_OPAQUE,
     .compute = compute_unique,
     .summary = "(distinct slices along axis, first indices, inverse, counts); count: input 1",
     .sym_dims = 1},
    {.name = "unique_dims",
     .min_in = 1,
     .max_in = 1,
     .attrs = unique_attrs,
     .rel = rel_unique_dims,
     .pattern = OP_OPAQUE,
     .compute = compute_unique_dims,
     .summary = "how many distinct slices along axis unique finds",
     .sym_dims = 1},
};

const int ops_compress_count = (int)(sizeof ops_compress_rows / sizeof ops_compress_rows[0]);
