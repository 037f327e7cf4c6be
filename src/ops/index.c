/* index.c: the ops that index with data or by position, and the scans.
 *
 *   gather_elements, gather_nd     read data at indices from data
 *   scatter_elements, scatter_nd   write updates at indices from data
 *                                  (none, add, mul, max or min)
 *   one_hot, reverse_sequence      compare with, or index by, data
 *   trilu, eye_like, arange,       select or compute by position
 *   random_uniform_like
 *   cumsum, topk                   reductions along an axis
 *
 * Every index that comes from data goes through ops_checked_index: one
 * out of range is KILN_ERR_RANGE when the kernel runs and an error when
 * the call is folded, never a clamp (a negative one counts from the end,
 * once, as ONNX says). Indices that are derived from the output index
 * alone (tile, depth_to_space, space_to_depth) stay in transform.c with
 * the other ops that move elements; reverse_sequence is here because its
 * lengths are data.
 *
 * A scatter is a gather over the updates: out[i] is data[i] unless an
 * update targets i, found by a reduction over the updates with a select
 * on index equality (the costs are at each op). TopK and CumSum are
 * reductions along the axis too; their costs are quadratic in its length
 * (said at each), which suits the short axes they are used on. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema axis0_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema gather_nd_attrs[] = {{"batch_dims", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema scatter_elements_attrs[] = {
    {"axis", GA_INT, 0, "0"}, {"reduction", GA_STR, 0, "\"none\""}, {NULL, 0, 0, NULL}};
static const attr_schema scatter_nd_attrs[] = {{"reduction", GA_STR, 0, "\"none\""},
                                               {NULL, 0, 0, NULL}};
static const attr_schema one_hot_attrs[] = {
    {"depth", GA_INT, 0, NULL}, {"axis", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};
static const attr_schema reverse_sequence_attrs[] = {
    {"batch_axis", GA_INT, 0, "1"}, {"time_axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema trilu_attrs[] = {{"upper", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};
static const attr_schema eye_like_attrs[] = {
    {"k", GA_INT, 0, "0"}, {"dtype", GA_STR, 0, "\"\""}, {NULL, 0, 0, NULL}};
static const attr_schema arange_attrs[] = {{"n", GA_INT, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema random_attrs[] = {{"seed", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema cumsum_attrs[] = {{"axis", GA_INT, 0, "0"},
                                           {"exclusive", GA_INT, 0, "0"},
                                           {"reverse", GA_INT, 0, "0"},
                                           {NULL, 0, 0, NULL}};
static const attr_schema topk_attrs[] = {{"k", GA_INT, 0, NULL},
                                         {"axis", GA_INT, 0, "-1"},
                                         {"largest", GA_INT, 0, "1"},
                                         {NULL, 0, 0, NULL}};

/* ---- shared helpers ------------------------------------------------------------------ */

/* Inputs 0 .. n-1 as tensor types into t[]; 0 with *r set if one is a tuple. */
static int tensors_in(const gtype *const *in, int n, const gtensor_type **t, rel_result *r) {
    for (int i = 0; i < n; i++)
        if (!(t[i] = ops_tensor_in(in[i], i, r)))
            return 0;
    return 1;
}

/* In a relation: dim d of x, which data indexes, is concrete and not empty. */
static int indexed_dim(const gtensor_type *x, int d) {
    if (x->dims[d].sym)
        return ops_fail("the indexed dim %d must not be symbolic", d), 0;
    if (x->dims[d].v == 0)
        return ops_fail("cannot index the empty dim %d", d), 0;
    return 1;
}

/* a fits within b: both the same symbol, or both concrete and a <= b. */
static int dim_within(gdim a, gdim b) {
    return a.sym ? gdim_equal(a, b) : !b.sym && a.v <= b.v;
}

/* A scalar operand: a 0-d tensor or one of one element. */
static int is_scalar_type(const gtensor_type *t) {
    return t->ndim == 0 || (t->ndim == 1 && !t->dims[0].sym && t->dims[0].v == 1);
}

/* The one element of a scalar operand. */
static kiln_expr scalar_at(kiln_ctx *ctx, kiln_tensor *t) {
    kiln_expr zero = ops_int(ctx, 0);
    return kiln_tensor_at(t, kiln_tensor_ndim(t), &zero);
}

/* A count an op takes as int attribute `name` (min to 2^48) or, with an
 * input i, as that input's one value (a binder's, known when the package
 * runs: src/ops/shape.c); 0 with *r set if it is neither. */
static int count_in(const struct kiln_graph *g, const gnode *call, int i, const char *name,
                    int64_t min, gdim *n, rel_result *r) {
    *r = REL_ERROR;
    if (call->nin > i) {
        if (!g->nodes[call->in[i]]->type.known)
            return *r = REL_INCOMPLETE, 0;
        if (graph_attr(call, name))
            return ops_fail("give %s as an attribute or as input %d, not both", name, i), 0;
        if (ops_value_dims(g, call, i, n, 1) != 1)
            return ops_fail("input %d (%s) must be a constant or a bind_dims vector of one value",
                            i, name),
                   0;
    } else {
        *n = (gdim){graph_attr_int(call, name, -1), NULL};
    }
    if (!n->sym && (n->v < min || n->v > GRAPH_MAX_ELEMENTS))
        return ops_fail("%s = %lld must be %lld to 2^48", name, (long long)n->v, (long long)min), 0;
    *r = REL_OK;
    return 1;
}

static kiln_status one_out(kiln_tensor **out, kiln_tensor *t) {
    out[0] = t;
    return t ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- scatter reductions ------------------------------------------------------------- */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* Attribute reduction: RED_*, or -1 with an error. */
static int reduction_of(const gnode *call) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *s = graph_attr_str(call, "reduction", "none");
    for (int k = 0; k < 5; k++)
        if (!strcmp(s, names[k]))
            return k;
    ops_fail("reduction '%s' is not none, add, mul, max or min", s);
    return -1;
}

/* The relation's check of a scatter's reduction for data of dtype dt. */
static int reduction_ok(const gnode *call, kiln_dtype dt) {
    int red = reduction_of(call);
    if (red < 0)
        return 0;
    if (red != RED_NONE && dt == KILN_BOOL)
        return ops_fail("reduction '%s' of bool data", graph_attr_str(call, "reduction", "")), 0;
    return 1;
}

/* The value a reduction starts from, which leaves the other operand as it
 * is: 0, 1, the lowest or the highest value of dt. */
static kiln_expr red_identity(kiln_ctx *ctx, kiln_dtype dt, int red) {
    if (red == RED_ADD || red == RED_MUL)
        return ops_const(ctx, dt, red == RED_MUL);
    int hi = red == RED_MIN;
    if (ops_is_float_dtype(dt))
        return ops_const(ctx, dt, hi ? INFINITY : -INFINITY);
    /* the bounds as int64 bit patterns, wrapped to dt (uint64's greatest is -1) */
    return kiln_cast(dt, ops_int(ctx, hi ? kiln_dtype_int_max(dt) : kiln_dtype_int_min(dt)));
}

static kiln_expr red_reduce(kiln_expr v, int red, int n, const kiln_expr *axes) {
    switch (red) {
    case RED_ADD: return kiln_sum(v, n, axes);
    case RED_MUL: return kiln_prod(v, n, axes);
    case RED_MAX: return kiln_max_reduce(v, n, axes);
    default: return kiln_min_reduce(v, n, axes);
    }
}

/* data combined with the reduced updates acc. The updates are reduced
 * first, then applied: a float sum may differ from ONNX's update-by-update
 * order in the last bits. An element no update targets has the identity
 * in acc and stays data exactly (a sum of 0 is not added, so -0 stays). */
static kiln_expr red_combine(kiln_ctx *ctx, kiln_expr data, kiln_expr acc, int red) {
    switch (red) {
    case RED_ADD: return kiln_select(kiln_eq(acc, ops_int(ctx, 0)), data, kiln_add(data, acc));
    case RED_MUL: return kiln_mul(data, acc);
    case RED_MAX: return kiln_max(data, acc);
    default: return kiln_min(data, acc);
    }
}

/* ---- gather_elements, scatter_elements ----------------------------------------------- */

/* The shared checks of data x and indices ix: the same rank, integer
 * indices, a concrete non-empty indexed axis, and indices no larger than
 * the data in the other dims. 0 with an error, or 1 and *axis. */
static int elements_check(const gnode *call, const gtensor_type *x, const gtensor_type *ix,
                          int *axis) {
    if (x->ndim < 1)
        return ops_fail("needs data of at least 1 dim"), 0;
    if (ix->ndim != x->ndim)
        return ops_fail("indices have rank %d, the data %d", ix->ndim, x->ndim), 0;
    if (!ops_is_index_dtype(ix->dtype))
        return ops_fail("indices must be integers, not %s", kiln_dtype_name(ix->dtype)), 0;
    if (!ops_attr_axis(call, "axis", 0, x->ndim, axis) || !indexed_dim(x, *axis))
        return 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != *axis && !dim_within(ix->dims[d], x->dims[d]))
            return ops_fail("dim %d of the indices is larger than the data's", d), 0;
    return 1;
}

static rel_result rel_gather_elements(const struct kiln_graph *g, const gnode *call,
                                      const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *t[2];
    int axis;
    if (!tensors_in(in, 2, t, &r))
        return r;
    if (!elements_check(call, t[0], t[1], &axis))
        return REL_ERROR;
    gtensor_type res = *t[1];
    res.dtype = t[0]->dtype;
    return ops_set_out(g, out, &res);
}

static rel_result rel_scatter_elements(const struct kiln_graph *g, const gnode *call,
                                       const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *t[3];
    int axis;
    if (!tensors_in(in, 3, t, &r))
        return r;
    if (!elements_check(call, t[0], t[1], &axis) || !reduction_ok(call, t[0]->dtype))
        return REL_ERROR;
    if (t[2]->dtype != t[0]->dtype)
        return ops_fail("updates are %s, the data %s", kiln_dtype_name(t[2]->dtype),
                        kiln_dtype_name(t[0]->dtype));
    if (t[2]->ndim != t[1]->ndim)
        return ops_fail("updates and indices differ in rank");
    for (int d = 0; d < t[1]->ndim; d++)
        if (!gdim_equal(t[2]->dims[d], t[1]->dims[d]))
            return ops_fail("updates and indices differ in dim %d", d);
    return ops_set_out(g, out, t[0]);
}

typedef struct {
    kiln_tensor *x, *idx, *upd, *last, *acc;
    int nd, axis, red, none; /* none: no update at all (an empty dim of the indices) */
    int64_t xd[MAXD], id[MAXD];
    kiln_expr k;
} elems;

static kiln_status elems_init(elems *a, const gnode *call, kiln_tensor *const *in) {
    memset(a, 0, sizeof *a);
    a->x = in[0];
    a->idx = in[1];
    a->upd = call->nin > 2 ? in[2] : NULL;
    a->nd = ops_shape(in[0], a->xd);
    ops_shape(in[1], a->id);
    a->axis = ops_norm_axis(call, 0, a->nd);
    for (int d = 0; d < a->nd; d++)
        a->none |= a->id[d] == 0;
    a->red = a->upd ? reduction_of(call) : RED_NONE;
    return a->red < 0 ? KILN_ERR_INVALID : KILN_OK;
}

/* out[i] = x[i with the axis at idx[i]] */
static kiln_expr gather_elements_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    elems *a = u;
    kiln_expr ix[MAXD];
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)a->nd);
    ix[a->axis] = ops_checked_index(ctx, kiln_tensor_at(a->idx, a->nd, i), a->xd[a->axis], 1);
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_status compute_gather_elements(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                           kiln_tensor **out) {
    static _Thread_local elems a;
    elems_init(&a, call, in);
    return one_out(out, ops_compute(ctx, call, "", a.nd, a.id, gather_elements_body, &a));
}

/* The update at step k of the axis for data index i: i with the axis k and
 * the other dims clamped into the indices (where an index is past them,
 * `covered` is false and the value is not used). */
static void update_index(kiln_ctx *ctx, const elems *a, const kiln_expr *i, kiln_expr k,
                         kiln_expr *ix) {
    for (int d = 0; d < a->nd; d++)
        ix[d] = d == a->axis          ? k
                : a->id[d] < a->xd[d] ? kiln_min(i[d], ops_int(ctx, a->id[d] - 1))
                                      : i[d];
}

/* Whether update k (along the axis) targets data index i. */
static kiln_expr elements_hit(kiln_ctx *ctx, const elems *a, const kiln_expr *i, kiln_expr k) {
    kiln_expr ix[MAXD];
    update_index(ctx, a, i, k, ix);
    kiln_expr j = ops_checked_index(ctx, kiln_tensor_at(a->idx, a->nd, ix), a->xd[a->axis], 1);
    kiln_expr hit = kiln_eq(j, i[a->axis]);
    for (int d = 0; d < a->nd; d++)
        if (d != a->axis && a->id[d] < a->xd[d])
            hit = kiln_and(hit, kiln_lt(i[d], ops_int(ctx, a->id[d])));
    return hit;
}

/* last[i] = the last step k whose update targets i, or -1 */
static kiln_expr elements_last_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    elems *a = u;
    kiln_expr hit = elements_hit(ctx, a, i, a->k);
    return kiln_max_reduce(kiln_select(hit, a->k, ops_int(ctx, -1)), 1, &a->k);
}

/* acc[i] = the updates that target i, reduced */
static kiln_expr elements_acc_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    elems *a = u;
    kiln_expr ix[MAXD];
    update_index(ctx, a, i, a->k, ix);
    kiln_expr v = kiln_select(elements_hit(ctx, a, i, a->k), kiln_tensor_at(a->upd, a->nd, ix),
                              red_identity(ctx, kiln_tensor_dtype(a->x), a->red));
    return red_reduce(v, a->red, 1, &a->k);
}

static kiln_expr elements_out_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    elems *a = u;
    kiln_expr x = kiln_tensor_at(a->x, a->nd, i);
    if (a->none)
        return x;
    if (a->red != RED_NONE)
        return red_combine(ctx, x, kiln_tensor_at(a->acc, a->nd, i), a->red);
    kiln_expr last = kiln_tensor_at(a->last, a->nd, i), ix[MAXD];
    update_index(ctx, a, i, kiln_max(last, ops_int(ctx, 0)), ix);
    return kiln_select(kiln_ge(last, ops_int(ctx, 0)), kiln_tensor_at(a->upd, a->nd, ix), x);
}

/* Cost: each data element scans the updates along the axis, numel(data) x
 * (indices' axis length) steps, then reads one update (none) or combines
 * (a reduction). Without a reduction, duplicate indices (whose order ONNX
 * leaves undefined) take the last update along the axis. */
static kiln_status compute_scatter_elements(kiln_ctx *ctx, const gnode *call,
                                            kiln_tensor *const *in, kiln_tensor **out) {
    static _Thread_local elems a;
    if (elems_init(&a, call, in) != KILN_OK)
        return KILN_ERR_INVALID;
    if (!a.none) {
        a.k = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.id[a.axis]), "k");
        if (a.red == RED_NONE)
            a.last = ops_compute(ctx, call, ".last", a.nd, a.xd, elements_last_body, &a);
        else
            a.acc = ops_compute(ctx, call, ".acc", a.nd, a.xd, elements_acc_body, &a);
        if (!a.last && !a.acc)
            return KILN_ERR_INVALID;
    }
    return one_out(out, ops_compute(ctx, call, "", a.nd, a.xd, elements_out_body, &a));
}

/* ---- gather_nd, scatter_nd ----------------------------------------------------------- */

/* The shared checks of data x (rank r) and indices ix (rank q, last dim
 * k): integer indices, 1 <= k <= r - b, the first b dims equal, the
 * indexed dims concrete and not empty. 0 with an error, or 1 and *k. */
static int nd_check(const gtensor_type *x, const gtensor_type *ix, int64_t b, int *k) {
    if (!ops_is_index_dtype(ix->dtype))
        return ops_fail("indices must be integers, not %s", kiln_dtype_name(ix->dtype)), 0;
    if (x->ndim < 1 || ix->ndim < 1)
        return ops_fail("data and indices need at least 1 dim"), 0;
    if (b < 0 || b >= x->ndim || b >= ix->ndim)
        return ops_fail("batch_dims %lld must be below both ranks (%d, %d)", (long long)b, x->ndim,
                        ix->ndim),
               0;
    gdim last = ix->dims[ix->ndim - 1];
    if (last.sym || last.v < 1 || last.v > x->ndim - b)
        return ops_fail("the last dim of the indices must be 1 to %lld", (long long)(x->ndim - b)),
               0;
    *k = (int)last.v;
    for (int d = 0; d < b; d++)
        if (!gdim_equal(x->dims[d], ix->dims[d]))
            return ops_fail("batch dim %d differs between data and indices", d), 0;
    for (int d = (int)b; d < b + *k; d++)
        if (!indexed_dim(x, d))
            return 0;
    return 1;
}

static rel_result rel_gather_nd(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *t[2];
    int k;
    if (!tensors_in(in, 2, t, &r))
        return r;
    int64_t b = graph_attr_int(call, "batch_dims", 0);
    if (!nd_check(t[0], t[1], b, &k))
        return REL_ERROR;
    gtensor_type res = {t[0]->dtype, 0, {{0, NULL}}};
    if (t[1]->ndim - 1 + t[0]->ndim - b - k > MAXD)
        return ops_fail("the output would have more than %d dims", MAXD);
    for (int d = 0; d + 1 < t[1]->ndim; d++)
        res.dims[res.ndim++] = t[1]->dims[d];
    for (int d = (int)b + k; d < t[0]->ndim; d++)
        res.dims[res.ndim++] = t[0]->dims[d];
    return ops_set_out(g, out, &res);
}

static rel_result rel_scatter_nd(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *t[3];
    int k;
    if (!tensors_in(in, 3, t, &r))
        return r;
    if (!nd_check(t[0], t[1], 0, &k) || !reduction_ok(call, t[0]->dtype))
        return REL_ERROR;
    const gtensor_type *x = t[0], *ix = t[1], *up = t[2];
    if (up->dtype != x->dtype)
        return ops_fail("updates are %s, the data %s", kiln_dtype_name(up->dtype),
                        kiln_dtype_name(x->dtype));
    /* updates: the indices' dims but the last, then the data's past k */
    int q = ix->ndim;
    if (up->ndim != q - 1 + x->ndim - k)
        return ops_fail("updates have rank %d, not %d", up->ndim, q - 1 + x->ndim - k);
    for (int d = 0; d < up->ndim; d++)
        if (!gdim_equal(up->dims[d], d < q - 1 ? ix->dims[d] : x->dims[d - (q - 1) + k]))
            return ops_fail("dim %d of the updates does not match the indices and data", d);
    return ops_set_out(g, out, x);
}

typedef struct {
    kiln_tensor *x, *idx, *upd, *last, *acc;
    int nd, ni, b, k, nj, red, none;
    int64_t xd[MAXD], id[MAXD];
    kiln_expr j[MAXD]; /* the reduce axes over the updates (scatter) */
} nds;

static void nds_init(nds *a, const gnode *call, kiln_tensor *const *in) {
    memset(a, 0, sizeof *a);
    a->x = in[0];
    a->idx = in[1];
    a->upd = call->nin > 2 ? in[2] : NULL;
    a->nd = ops_shape(in[0], a->xd);
    a->ni = ops_shape(in[1], a->id);
    a->b = (int)graph_attr_int(call, "batch_dims", 0);
    a->k = (int)a->id[a->ni - 1];
    a->nj = a->ni - 1;
    for (int d = 0; d < a->nj; d++)
        a->none |= a->id[d] == 0;
}

/* Index t of the index tuple at position p (the indices' dims but the
 * last), checked against data dim b + t. */
static kiln_expr nd_index(kiln_ctx *ctx, const nds *a, const kiln_expr *p, int t) {
    kiln_expr ix[MAXD];
    memcpy(ix, p, sizeof(kiln_expr) * (size_t)a->nj);
    ix[a->nj] = ops_int(ctx, t);
    return ops_checked_index(ctx, kiln_tensor_at(a->idx, a->ni, ix), a->xd[a->b + t], 1);
}

/* out[p..., rest...] = x[p[:b], idx[p, 0], ..., idx[p, k-1], rest...] */
static kiln_expr gather_nd_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nds *a = u;
    kiln_expr ix[MAXD];
    for (int d = 0; d < a->b; d++)
        ix[d] = o[d];
    for (int t = 0; t < a->k; t++)
        ix[a->b + t] = nd_index(ctx, a, o, t);
    for (int d = a->b + a->k; d < a->nd; d++)
        ix[d] = o[a->nj + d - a->b - a->k];
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_status compute_gather_nd(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local nds a;
    int64_t od[MAXD];
    nds_init(&a, call, in);
    int ond = ops_out_shape(call, od);
    return one_out(out, ops_compute(ctx, call, "", ond, od, gather_nd_body, &a));
}

/* Whether the update at a->j targets data index i (its first k dims). */
static kiln_expr nd_hit(kiln_ctx *ctx, const nds *a, const kiln_expr *i) {
    kiln_expr hit = NULL;
    for (int t = 0; t < a->k; t++) {
        kiln_expr e = kiln_eq(nd_index(ctx, a, a->j, t), i[t]);
        hit = hit ? kiln_and(hit, e) : e;
    }
    return hit;
}

/* The update at position p (the indices' dims but the last) for data index i. */
static kiln_expr nd_update(const nds *a, const kiln_expr *p, const kiln_expr *i) {
    kiln_expr ix[MAXD];
    memcpy(ix, p, sizeof(kiln_expr) * (size_t)a->nj);
    for (int d = a->k; d < a->nd; d++)
        ix[a->nj + d - a->k] = i[d];
    return kiln_tensor_at(a->upd, a->nj + a->nd - a->k, ix);
}

/* last[i[:k]] = the last update (row-major over the indices' dims) that
 * targets i[:k], flattened, or -1 */
static kiln_expr nd_last_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    nds *a = u;
    kiln_expr flat = ops_int(ctx, 0);
    for (int d = 0; d < a->nj; d++)
        flat = kiln_add(kiln_mul(flat, ops_int(ctx, a->id[d])), a->j[d]);
    kiln_expr v = kiln_select(nd_hit(ctx, a, i), flat, ops_int(ctx, -1));
    return kiln_max_reduce(v, a->nj ? a->nj : 1, a->j);
}

static kiln_expr nd_acc_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    nds *a = u;
    kiln_expr v = kiln_select(nd_hit(ctx, a, i), nd_update(a, a->j, i),
                              red_identity(ctx, kiln_tensor_dtype(a->x), a->red));
    return red_reduce(v, a->red, a->nj ? a->nj : 1, a->j);
}

static kiln_expr nd_out_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    nds *a = u;
    kiln_expr x = kiln_tensor_at(a->x, a->nd, i);
    if (a->none)
        return x;
    if (a->red != RED_NONE)
        return red_combine(ctx, x, kiln_tensor_at(a->acc, a->nd, i), a->red);
    kiln_expr last = kiln_tensor_at(a->last, a->k, i), p[MAXD];
    kiln_expr f = kiln_max(last, ops_int(ctx, 0));
    for (int d = a->nj - 1; d >= 0; d--) {
        p[d] = kiln_floormod(f, ops_int(ctx, a->id[d]));
        f = kiln_floordiv(f, ops_int(ctx, a->id[d]));
    }
    return kiln_select(kiln_ge(last, ops_int(ctx, 0)), nd_update(a, p, i), x);
}

/* Cost, with N updates (the indices' elements over their last dim):
 * without a reduction, each of the numel(data[:k]) index tuples scans the
 * N updates (k compares each), then each data element reads one update;
 * with one, each data element scans them. Without a reduction, duplicate
 * indices (whose order ONNX leaves undefined) take the last update. */
static kiln_status compute_scatter_nd(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                      kiln_tensor **out) {
    static _Thread_local nds a;
    nds_init(&a, call, in);
    if ((a.red = reduction_of(call)) < 0)
        return KILN_ERR_INVALID;
    if (!a.none) {
        for (int d = 0; d < a.nj; d++)
            a.j[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.id[d]), "j");
        if (!a.nj) /* one index tuple: a reduction over one step */
            a.j[0] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, 1), "j");
        if (a.red == RED_NONE)
            a.last = ops_compute(ctx, call, ".last", a.k, a.xd, nd_last_body, &a);
        else
            a.acc = ops_compute(ctx, call, ".acc", a.nd, a.xd, nd_acc_body, &a);
        if (!a.last && !a.acc)
            return KILN_ERR_INVALID;
    }
    return one_out(out, ops_compute(ctx, call, "", a.nd, a.xd, nd_out_body, &a));
}

/* ---- one_hot, reverse_sequence -------------------------------------------------------- */

static rel_result rel_one_hot(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *t[2];
    int axis;
    if (!tensors_in(in, 2, t, &r))
        return r;
    if (t[0]->dtype == KILN_BOOL)
        return ops_fail("indices must be numbers, not bool");
    if (t[1]->ndim != 1 || t[1]->dims[0].sym || t[1]->dims[0].v != 2)
        return ops_fail("values must be [off, on], a 1-D tensor of 2 elements");
    gdim depth;
    if (!count_in(g, call, 2, "depth", 1, &depth, &r))
        return r;
    if (t[0]->ndim + 1 > MAXD)
        return ops_fail("the output would have more than %d dims", MAXD);
    if (!ops_attr_axis(call, "axis", -1, t[0]->ndim + 1, &axis))
        return REL_ERROR;
    gtensor_type res = {t[1]->dtype, t[0]->ndim + 1, {{0, NULL}}};
    for (int d = 0, s = 0; d < res.ndim; d++)
        res.dims[d] = d == axis ? depth : t[0]->dims[s++];
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *idx, *val;
    int nd, axis;
    kiln_expr depth; /* int64: a constant or a size variable */
} hot_args;

/* out[o] = on where idx[o without the axis], negative ones counted from
 * the end (once), is o[axis], else off: an index outside [-depth, depth)
 * (or a float that is not an integer) gives a row of off, as ONNX says. */
static kiln_expr one_hot_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    hot_args *a = u;
    kiln_expr ic[MAXD];
    for (int d = 0, s = 0; d < a->nd; d++)
        if (d != a->axis)
            ic[s++] = o[d];
    kiln_expr v = kiln_tensor_at(a->idx, a->nd - 1, ic), pos = o[a->axis], depth;
    if (ops_is_index_dtype(kiln_tensor_dtype(a->idx))) {
        v = kiln_cast(KILN_INT64, v);
        depth = a->depth;
    } else { /* floats compare as float64, exact for any depth */
        v = kiln_cast(KILN_FLOAT64, v);
        pos = kiln_cast(KILN_FLOAT64, pos);
        depth = kiln_cast(KILN_FLOAT64, a->depth);
    }
    kiln_expr w = kiln_select(kiln_lt(v, ops_int(ctx, 0)), kiln_add(v, depth), v);
    kiln_expr one = ops_int(ctx, 1), zero = ops_int(ctx, 0);
    return kiln_select(kiln_eq(w, pos), kiln_tensor_at(a->val, 1, &one),
                       kiln_tensor_at(a->val, 1, &zero));
}

static kiln_status compute_one_hot(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                   kiln_tensor **out) {
    int64_t od[MAXD];
    hot_args a = {in[0], in[1], ops_out_shape(call, od), 0, NULL};
    a.axis = ops_norm_axis(call, -1, a.nd);
    a.depth = ops_dim(ctx, call->type.t[0].dims[a.axis]);
    return one_out(out, ops_compute(ctx, call, "", a.nd, od, one_hot_body, &a));
}

/* t (nd-D) read at index i with dim `axis` replaced by v. */
static kiln_expr at_axis(kiln_tensor *t, int nd, const kiln_expr *i, int axis, kiln_expr v) {
    kiln_expr ix[MAXD];
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)nd);
    ix[axis] = v;
    return kiln_tensor_at(t, nd, ix);
}

static rel_result rel_reverse_sequence(const struct kiln_graph *g, const gnode *call,
                                       const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *t[2];
    int ba, ta;
    if (!tensors_in(in, 2, t, &r))
        return r;
    if (t[0]->ndim < 2)
        return ops_fail("needs data of at least 2 dims");
    if (!ops_attr_axis(call, "batch_axis", 1, t[0]->ndim, &ba) ||
        !ops_attr_axis(call, "time_axis", 0, t[0]->ndim, &ta) || !indexed_dim(t[0], ta))
        return REL_ERROR;
    if (ba == ta)
        return ops_fail("batch_axis and time_axis are both %d", ba);
    if (t[1]->ndim != 1 || !ops_is_index_dtype(t[1]->dtype))
        return ops_fail("the lengths must be a 1-D integer tensor");
    if (!gdim_equal(t[1]->dims[0], t[0]->dims[ba]))
        return ops_fail("the lengths do not have one entry per batch element");
    return ops_set_out(g, out, t[0]);
}

typedef struct {
    kiln_tensor *x, *len;
    int nd, ba, ta;
    int64_t steps;
} rev_args;

/* out[.., t, ..] = x[.., len - 1 - t, ..] for t < len (the batch's length),
 * else x itself: a length past the time axis is an index out of range, a
 * length of 0 or less reverses nothing. */
static kiln_expr reverse_sequence_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    rev_args *a = u;
    kiln_expr len = kiln_cast(KILN_INT64, kiln_tensor_at(a->len, 1, &o[a->ba])), t = o[a->ta];
    kiln_expr src = kiln_select(kiln_lt(t, len), kiln_sub(kiln_sub(len, ops_int(ctx, 1)), t), t);
    return at_axis(a->x, a->nd, o, a->ta, ops_checked_index(ctx, src, a->steps, 0));
}

static kiln_status compute_reverse_sequence(kiln_ctx *ctx, const gnode *call,
                                            kiln_tensor *const *in, kiln_tensor **out) {
    int64_t xd[MAXD];
    rev_args a = {in[0], in[1], ops_shape(in[0], xd), 0, 0, 0};
    int64_t ba = graph_attr_int(call, "batch_axis", 1), ta = graph_attr_int(call, "time_axis", 0);
    a.ba = (int)(ba < 0 ? ba + a.nd : ba);
    a.ta = (int)(ta < 0 ? ta + a.nd : ta);
    a.steps = xd[a.ta];
    return one_out(out, ops_compute(ctx, call, "", a.nd, xd, reverse_sequence_body, &a));
}

/* ---- trilu, eye_like, arange ------------------------------------------------------------ */

static rel_result rel_trilu(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *t[2] = {NULL, NULL};
    if (!tensors_in(in, call->nin, t, &r))
        return r;
    if (t[0]->ndim < 2)
        return ops_fail("needs an input of at least 2 dims");
    if (call->nin > 1 && (!is_scalar_type(t[1]) || !ops_is_index_dtype(t[1]->dtype)))
        return ops_fail("k must be an integer scalar");
    return ops_set_out(g, out, t[0]);
}

typedef struct {
    kiln_tensor *x, *k;
    int nd, upper;
    int64_t kc;
    kiln_dtype dt;
} diag_args;

/* out[.., i, j] = x[.., i, j] where j - i >= k (upper) or <= k (lower), else 0 */
static kiln_expr trilu_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    diag_args *a = u;
    kiln_expr k = a->k ? kiln_cast(KILN_INT64, scalar_at(ctx, a->k)) : ops_int(ctx, 0);
    kiln_expr off = kiln_sub(o[a->nd - 1], o[a->nd - 2]);
    kiln_expr keep = a->upper ? kiln_ge(off, k) : kiln_le(off, k);
    return kiln_select(keep, kiln_tensor_at(a->x, a->nd, o), ops_const(ctx, a->dt, 0));
}

static kiln_status compute_trilu(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    int64_t xd[MAXD];
    diag_args a = {in[0],
                   call->nin > 1 ? in[1] : NULL,
                   ops_shape(in[0], xd),
                   graph_attr_int(call, "upper", 1) != 0,
                   0,
                   kiln_tensor_dtype(in[0])};
    return one_out(out, ops_compute(ctx, call, "", a.nd, xd, trilu_body, &a));
}

/* The dtype of eye_like's output: attribute dtype, or the input's. */
static int eye_dtype(const gnode *call, kiln_dtype in, kiln_dtype *dt) {
    const char *name = graph_attr_str(call, "dtype", "");
    *dt = in;
    if (*name && (kiln_dtype_parse(name, dt) != KILN_OK || *dt == KILN_HANDLE))
        return ops_fail("unknown dtype '%s'", name), 0;
    return 1;
}

static rel_result rel_eye_like(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim != 2)
        return ops_fail("needs a 2-D input, not %d-D", x->ndim);
    gtensor_type res = *x;
    return eye_dtype(call, x->dtype, &res.dtype) ? ops_set_out(g, out, &res) : REL_ERROR;
}

/* out[i, j] = 1 where j - i == k, else 0 (the input gives only the shape) */
static kiln_expr eye_like_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    diag_args *a = u;
    kiln_expr on = kiln_eq(kiln_sub(o[1], o[0]), ops_int(ctx, a->kc));
    return kiln_select(on, ops_const(ctx, a->dt, 1), ops_const(ctx, a->dt, 0));
}

static kiln_status compute_eye_like(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    int64_t xd[MAXD];
    diag_args a = {in[0], NULL, ops_shape(in[0], xd), 0, graph_attr_int(call, "k", 0), 0};
    if (!eye_dtype(call, kiln_tensor_dtype(in[0]), &a.dt))
        return KILN_ERR_INVALID;
    return one_out(out, ops_compute(ctx, call, "", 2, xd, eye_like_body, &a));
}

static rel_result rel_arange(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *t[2];
    if (!tensors_in(in, 2, t, &r))
        return r;
    if (!is_scalar_type(t[0]) || !is_scalar_type(t[1]))
        return ops_fail("start and delta must be scalars");
    if (t[0]->dtype != t[1]->dtype || t[0]->dtype == KILN_BOOL)
        return ops_fail("start and delta must be numbers of one dtype, not %s and %s",
                        kiln_dtype_name(t[0]->dtype), kiln_dtype_name(t[1]->dtype));
    gdim n;
    if (!count_in(g, call, 2, "n", 0, &n, &r))
        return r;
    gtensor_type res = {t[0]->dtype, 1, {n}};
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *start, *delta;
} range_args;

/* out[i] = start + i * delta, in the dtype's own arithmetic (as ONNX's Range) */
static kiln_expr arange_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    range_args *a = u;
    kiln_expr i = kiln_cast(kiln_tensor_dtype(a->start), o[0]);
    return kiln_add(scalar_at(ctx, a->start), kiln_mul(i, scalar_at(ctx, a->delta)));
}

static kiln_status compute_arange(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    int64_t od[1];
    range_args a = {in[0], in[1]};
    ops_out_shape(call, od);
    return one_out(out, ops_compute(ctx, call, "", 1, od, arange_body, &a));
}

/* ---- random_uniform_like ---------------------------------------------------------------- */

/* Pseudo-random numbers in [0, 1) of the input's shape and float dtype (its
 * values are not read): element f (row-major) is a counter-based hash of f
 * and the seed, so it depends on nothing else: the same seed gives the same
 * numbers in every run, kernel and fold, and no state is kept. The hash
 * follows Widynski's "Squares" (four rounds of x = x * x + y, swapping the
 * halves), on 32-bit words held in int64 so that every product stays below
 * 2^63: y is the counter times an odd key below 2^31 made from the seed
 * with the splitmix64 finalizer. The top bits of the word give the number,
 * as many as the dtype's significand holds (11 for float16, 24 for
 * float32, 32 of float64's 53), so it is below 1. */
#define W16 ((int64_t)1 << 16)
#define W32 ((int64_t)1 << 32)

typedef struct {
    int nd, bits;
    int64_t dims[MAXD], key;
    kiln_dtype dt;
} random_args;

/* x mod 2^32, x >= 0 */
static kiln_expr word(kiln_ctx *ctx, kiln_expr x) {
    return kiln_floormod(x, ops_int(ctx, W32));
}

/* One round: x = x * x + add (mod 2^32, the square from 16-bit halves),
 * then its halves swapped. */
static kiln_expr squares_round(kiln_ctx *ctx, kiln_expr x, kiln_expr add) {
    kiln_expr hi = kiln_floordiv(x, ops_int(ctx, W16)), lo = kiln_floormod(x, ops_int(ctx, W16));
    kiln_expr cross = kiln_floormod(kiln_mul(kiln_mul(hi, lo), ops_int(ctx, 2)), ops_int(ctx, W16));
    x = word(ctx, kiln_add(kiln_add(kiln_mul(lo, lo), kiln_mul(cross, ops_int(ctx, W16))), add));
    return kiln_add(kiln_floordiv(x, ops_int(ctx, W16)),
                    kiln_mul(kiln_floormod(x, ops_int(ctx, W16)), ops_int(ctx, W16)));
}

static kiln_expr random_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    random_args *a = u;
    kiln_expr f = ops_int(ctx, 0);
    for (int d = 0; d < a->nd; d++)
        f = kiln_add(kiln_mul(f, ops_int(ctx, a->dims[d])), o[d]);
    /* f < 2^48: its high part is folded into the 32-bit counter */
    kiln_expr hi = kiln_mul(kiln_floordiv(f, ops_int(ctx, W32)), ops_int(ctx, 0x61c88647));
    kiln_expr ctr = word(ctx, kiln_add(word(ctx, f), hi));
    kiln_expr key = ops_int(ctx, a->key);
    kiln_expr y = word(ctx, kiln_mul(ctr, key)), z = word(ctx, kiln_add(y, key));
    kiln_expr x = squares_round(ctx, y, y);
    x = squares_round(ctx, x, z);
    x = squares_round(ctx, x, y);
    x = squares_round(ctx, x, z);
    kiln_expr top = kiln_floordiv(x, ops_int(ctx, (int64_t)1 << (32 - a->bits)));
    return kiln_mul(kiln_cast(a->dt, top), ops_const(ctx, a->dt, ldexp(1, -a->bits)));
}

static kiln_status compute_random_uniform_like(kiln_ctx *ctx, const gnode *call,
                                               kiln_tensor *const *in, kiln_tensor **out) {
    random_args a;
    memset(&a, 0, sizeof a);
    a.nd = ops_shape(in[0], a.dims);
    a.dt = kiln_tensor_dtype(in[0]);
    a.bits = a.dt == KILN_FLOAT16 ? 11 : a.dt == KILN_FLOAT32 ? 24 : 32; /* ops_rel_float_unary */
    /* splitmix64's finalizer of the seed, as an odd key below 2^31 */
    uint64_t k = (uint64_t)graph_attr_int(call, "seed", 0) + 0x9e3779b97f4a7c15u;
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9u;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebu;
    k ^= k >> 31;
    a.key = (int64_t)(k >> 33) | 1;
    return one_out(out, ops_compute(ctx, call, "", a.nd, a.dims, random_body, &a));
}

/* ---- cumsum, topk ----------------------------------------------------------------------- */

/* x of rank >= 1, not bool, with a concrete dim at attribute axis (default def). */
static int scan_check(const gnode *call, const gtensor_type *x, int64_t def, int *axis) {
    if (x->ndim < 1)
        return ops_fail("needs an input of at least 1 dim"), 0;
    if (x->dtype == KILN_BOOL)
        return ops_fail("needs numbers, not bool"), 0;
    if (!ops_attr_axis(call, "axis", def, x->ndim, axis))
        return 0;
    if (x->dims[*axis].sym)
        return ops_fail("the axis must not be symbolic"), 0;
    return 1;
}

static rel_result rel_cumsum(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *a = NULL;
    int axis;
    if (!x || (call->nin == 2 && !(a = ops_tensor_in(in[1], 1, &r))))
        return r;
    if (!a)
        return scan_check(call, x, 0, &axis) ? ops_set_out(g, out, x) : REL_ERROR;
    /* the axis as a value (input 1), read when the package runs */
    if (graph_attr(call, "axis"))
        return ops_fail("give axis as an attribute or as input 1, not both");
    if (!is_scalar_type(a) || !ops_is_index_dtype(a->dtype))
        return ops_fail("input 1 (the axis) must be an integer scalar (or a vector of one)");
    if (!scan_check(call, x, 0, &axis))
        return REL_ERROR;
    if (!ops_all_known(x, 0, x->ndim))
        return ops_fail("with the axis as a value, every dim must be known at compile time");
    return ops_set_out(g, out, x);
}

typedef struct {
    kiln_tensor *x, *rank, *pick;
    kiln_tensor *axis_value, **per_axis; /* cumsum's axis as a value; a cumsum per axis */
    int nd, axis, exclusive, reverse, largest;
    int64_t n;
    kiln_expr m, e;
} scan_args;

/* out[.., i, ..] = x[.., 0, ..] + ... + x[.., i, ..] (to i - 1 if exclusive;
 * reversed: from the last element down to i, or i + 1), a reduction whose
 * domain depends on i, summed in the order ONNX's reference sums. Cost:
 * n (n + 1) / 2 additions for an axis of n. */
static kiln_expr cumsum_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    scan_args *a = u;
    kiln_expr i = o[a->axis], one = ops_int(ctx, 1), count;
    if (a->reverse)
        count = kiln_sub(ops_int(ctx, a->n - a->exclusive), i);
    else
        count = a->exclusive ? i : kiln_add(i, one);
    kiln_expr k = kiln_reduce_axis(ctx, ops_int(ctx, 0), count, "k");
    kiln_expr src = a->reverse ? kiln_sub(ops_int(ctx, a->n - 1), k) : k;
    return kiln_sum(at_axis(a->x, a->nd, o, a->axis, src), 1, &k);
}

/* With the axis as a value: out = the cumsum along that axis, picked
 * from one stage per axis (the rank is known; the axis read from data goes
 * through ops_checked_index, so one out of range is an error). At rank 1
 * the checked axis can only be 0, so a comparison with it folds and would
 * drop the check: there it is added to the index instead. */
static kiln_expr cumsum_pick_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    scan_args *a = u;
    kiln_expr axis = ops_checked_index(ctx, scalar_at(ctx, a->axis_value), a->nd, 1);
    if (a->nd == 1) {
        kiln_expr at = kiln_add(o[0], axis);
        return kiln_tensor_at(a->per_axis[0], 1, &at);
    }
    kiln_expr e = kiln_tensor_at(a->per_axis[a->nd - 1], a->nd, o);
    for (int d = a->nd - 2; d >= 0; d--)
        e = kiln_select(kiln_eq(axis, ops_int(ctx, d)), kiln_tensor_at(a->per_axis[d], a->nd, o),
                        e);
    return e;
}

static kiln_status compute_cumsum(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    int64_t xd[MAXD];
    scan_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    a.exclusive = graph_attr_int(call, "exclusive", 0) != 0;
    a.reverse = graph_attr_int(call, "reverse", 0) != 0;
    if (call->nin == 1) {
        a.axis = ops_norm_axis(call, 0, a.nd);
        a.n = xd[a.axis];
        return one_out(out, ops_compute(ctx, call, "", a.nd, xd, cumsum_body, &a));
    }
    kiln_tensor *per_axis[MAXD];
    for (a.axis = 0; a.axis < a.nd; a.axis++) {
        char suffix[24];
        snprintf(suffix, sizeof suffix, ".axis%d", a.axis);
        a.n = xd[a.axis];
        if (!(per_axis[a.axis] = ops_compute(ctx, call, suffix, a.nd, xd, cumsum_body, &a)))
            return KILN_ERR_INVALID;
    }
    a.axis_value = in[1];
    a.per_axis = per_axis;
    return one_out(out, ops_compute(ctx, call, "", a.nd, xd, cumsum_pick_body, &a));
}

static rel_result rel_topk(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    int axis;
    if (!x)
        return r;
    if (!scan_check(call, x, -1, &axis))
        return REL_ERROR;
    gdim k;
    if (!count_in(g, call, 1, "k", 0, &k, &r))
        return r;
    if (!k.sym && k.v > x->dims[axis].v)
        return ops_fail("k = %lld must be 0 to the axis length %lld", (long long)k.v,
                        (long long)x->dims[axis].v);
    gtensor_type t[2] = {*x, *x};
    t[0].dims[axis] = t[1].dims[axis] = k;
    t[1].dtype = KILN_INT64;
    return ops_set_tuple(g, out, 2, t);
}

/* Whether a (at position ia) comes before b (at ib) in TopK's order:
 * larger (smaller) first, ties by the lower position, as ONNX specifies.
 * NaN counts as larger than every number and equal to NaN, so the order is
 * total and every rank is taken once. */
static kiln_expr ordered_before(kiln_expr a, kiln_expr b, kiln_expr ia, kiln_expr ib, int largest,
                                int is_float) {
    kiln_expr strict = largest ? kiln_gt(a, b) : kiln_lt(a, b), same = kiln_eq(a, b);
    if (is_float) {
        kiln_expr na = kiln_ne(a, a), nb = kiln_ne(b, b);
        strict = kiln_or(strict, largest ? kiln_and(na, kiln_not(nb)) : kiln_and(nb, kiln_not(na)));
        same = kiln_or(same, kiln_and(na, nb));
    }
    return kiln_or(strict, kiln_and(same, kiln_lt(ia, ib)));
}

/* rank[.., i, ..] = how many elements of the axis come before x[.., i, ..] */
static kiln_expr topk_rank_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    scan_args *a = u;
    kiln_expr before =
        ordered_before(at_axis(a->x, a->nd, o, a->axis, a->m), kiln_tensor_at(a->x, a->nd, o), a->m,
                       o[a->axis], a->largest, ops_is_float_dtype(kiln_tensor_dtype(a->x)));
    return kiln_sum(kiln_select(before, ops_int(ctx, 1), ops_int(ctx, 0)), 1, &a->m);
}

/* pick[.., r, ..] = the position whose rank is r */
static kiln_expr topk_pick_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    scan_args *a = u;
    kiln_expr hit = kiln_eq(at_axis(a->rank, a->nd, o, a->axis, a->e), o[a->axis]);
    return kiln_max_reduce(kiln_select(hit, a->e, ops_int(ctx, -1)), 1, &a->e);
}

static kiln_expr topk_value_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    scan_args *a = u;
    if (!a->pick) /* an empty axis: no element */
        return kiln_tensor_at(a->x, a->nd, o);
    kiln_expr p = kiln_max(kiln_tensor_at(a->pick, a->nd, o), ops_int(ctx, 0));
    return at_axis(a->x, a->nd, o, a->axis, p);
}

static kiln_expr zero_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    return ops_int(ctx, 0);
}

/* values and indices of the k first elements of the axis in TopK's order
 * (ordered_before): each element's rank counts the elements before it,
 * then output r is the element of rank r. Cost: n^2 compares and k * n
 * selects for an axis of n. The output is always sorted, which ONNX's
 * sorted = 0 (any order) allows too. */
static kiln_status compute_topk(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    int64_t xd[MAXD], od[MAXD];
    static _Thread_local scan_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    ops_out_shape(call, od);
    a.axis = ops_norm_axis(call, -1, a.nd);
    a.n = xd[a.axis];
    a.largest = graph_attr_int(call, "largest", 1) != 0;
    if (a.n > 0) {
        a.m = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "m");
        a.e = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.n), "e");
        a.rank = ops_compute(ctx, call, ".rank", a.nd, xd, topk_rank_body, &a);
        a.pick = a.rank ? ops_compute(ctx, call, ".indices", a.nd, od, topk_pick_body, &a) : NULL;
        if (!a.pick)
            return KILN_ERR_INVALID;
        out[1] = a.pick;
    } else {
        out[1] = ops_compute(ctx, call, ".indices", a.nd, od, zero_body, &a);
    }
    out[0] = ops_compute(ctx, call, ".values", a.nd, od, topk_value_body, &a);
    return out[0] && out[1] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

#define ROW(nm, nmin, nmax, schema, relation, fn, pat, sum)                                        \
    {                                                                                              \
        .name = nm, .min_in = nmin, .max_in = nmax, .attrs = schema, .rel = relation,              \
        .pattern = pat, .compute = fn, .summary = sum                                              \
    }

const kiln_op_def ops_index_rows[] = {
    ROW("gather_elements", 2, 2, axis0_attrs, rel_gather_elements, compute_gather_elements,
        OP_INJECTIVE, "out[i] = data[i with axis at indices[i]]"),
    ROW("gather_nd", 2, 2, gather_nd_attrs, rel_gather_nd, compute_gather_nd, OP_INJECTIVE,
        "data at index tuples (the indices' last dim), after batch_dims shared dims"),
    ROW("scatter_elements", 3, 3, scatter_elements_attrs, rel_scatter_elements,
        compute_scatter_elements, OP_COMM_REDUCE,
        "data with updates written (or reduced) at indices along axis"),
    ROW("scatter_nd", 3, 3, scatter_nd_attrs, rel_scatter_nd, compute_scatter_nd, OP_COMM_REDUCE,
        "data with updates written (or reduced) at index tuples"),
    OPS_SYM_ROW("one_hot", 2, 3, one_hot_attrs, rel_one_hot, compute_one_hot, OP_INJECTIVE,
                "values[1] where the index (negative: from the end) is the position on axis, else "
                "values[0]"),
    ROW("reverse_sequence", 2, 2, reverse_sequence_attrs, rel_reverse_sequence,
        compute_reverse_sequence, OP_INJECTIVE,
        "reverse the first lengths[b] steps of time_axis for each b of batch_axis"),
    ROW("trilu", 1, 2, trilu_attrs, rel_trilu, compute_trilu, OP_INJECTIVE,
        "upper (or lower) triangle of the last 2 dims from diagonal k (input 1), else 0"),
    ROW("eye_like", 1, 1, eye_like_attrs, rel_eye_like, compute_eye_like, OP_INJECTIVE,
        "1 on diagonal k of a 2-D shape, else 0, in dtype"),
    OPS_SYM_ROW("arange", 2, 3, arange_attrs, rel_arange, compute_arange, OP_INJECTIVE,
                "start + i * delta for i < n"),
    ROW("random_uniform_like", 1, 1, random_attrs, ops_rel_float_unary, compute_random_uniform_like,
        OP_INJECTIVE,
        "pseudo-random numbers in [0, 1) of the input's shape and dtype, a hash of seed and "
        "position"),
    ROW("cumsum", 1, 2, cumsum_attrs, rel_cumsum, compute_cumsum, OP_COMM_REDUCE,
        "cumulative sum along axis (an attribute, or the scalar input 1 read when it runs; "
        "exclusive, reverse)"),
    OPS_SYM_ROW("topk", 1, 2, topk_attrs, rel_topk, compute_topk, OP_OPAQUE,
                "(values, int64 indices) of the k largest (smallest) along axis, sorted, ties by "
                "position"),
};

const int ops_index_count = (int)(sizeof ops_index_rows / sizeof ops_index_rows[0]);
