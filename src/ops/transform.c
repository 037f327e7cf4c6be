/* transform.c: the ops that move elements without computing with them
 * (the injective ops): reshape, nn.batch_flatten, transpose, concatenate,
 * split, strided_slice (any steps, negative too), take (gather along an
 * axis, negative indices counted from the end), broadcast_to, nn.pad
 * (constant, edge and reflect) and tile (depth_to_space and space_to_depth
 * are in depth_space.c, layout_transform in layout.c).
 * Each output element reads input elements at indices derived from its
 * own; every read stays in bounds: indices are clamped where the value
 * read is not selected, and an index that comes from data is checked
 * (ops_checked_index: out of range is an error, never a clamp). The ops
 * built around indices from data beyond take (gather and scatter forms,
 * one_hot, reverse_sequence) are in index.c. */
#include <stdio.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "ops.h"

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};
static const attr_schema axis0_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema reshape_attrs[] = {{"newshape", GA_INTS, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema transpose_attrs[] = {{"axes", GA_INTS, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema split_attrs[] = {
    {"indices_or_sections", GA_INTS, 1, NULL}, {"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema strided_slice_attrs[] = {{"begin", GA_INTS, 0, NULL},
                                                  {"end", GA_INTS, 0, NULL},
                                                  {"strides", GA_INTS, 0, NULL},
                                                  {"axes", GA_INTS, 0, NULL},
                                                  {NULL, 0, 0, NULL}};
static const attr_schema broadcast_to_attrs[] = {{"shape", GA_INTS, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema pad_attrs[] = {{"pad_width", GA_INTS, 0, NULL},
                                        {"pad_value", GA_FLOAT, 0, "0"},
                                        {"pad_mode", GA_STR, 0, "\"constant\""},
                                        {NULL, 0, 0, NULL}};
static const attr_schema tile_attrs[] = {{"reps", GA_INTS, 0, NULL}, {NULL, 0, 0, NULL}};

/* ---- reshape, nn.batch_flatten, transpose ------------------------------------------ */

/* The dims an op takes as attribute `name` (1 input) or as the values of
 * input 1 (a constant or a binder's, ops_value_dims): their count, or -1
 * with *r = REL_ERROR (REL_INCOMPLETE while input 1 is untyped). */
static int values_or_attr(const struct kiln_graph *g, const gnode *call, const char *name,
                          gdim *dims, rel_result *r) {
    *r = REL_ERROR;
    if (call->nin == 1) {
        int64_t v[KILN_MAX_NDIM + 1];
        int n = graph_attr_ints(call, name, v, KILN_MAX_NDIM + 1);
        if (n < 0 || n > KILN_MAX_NDIM)
            return ops_fail("%s must have 0 to %d values (and be given, without input 1)", name,
                            KILN_MAX_NDIM),
                   -1;
        for (int d = 0; d < n; d++) {
            if (v[d] < 0)
                return ops_fail("%s[%d] = %lld is negative", name, d, (long long)v[d]), -1;
            dims[d] = (gdim){v[d], NULL};
        }
        return n;
    }
    if (!g->nodes[call->in[1]]->type.known)
        return *r = REL_INCOMPLETE, -1;
    if (graph_attr(call, name))
        return ops_fail("give %s as an attribute or as input 1, not both", name), -1;
    int n = ops_value_dims(g, call, 1, dims, KILN_MAX_NDIM);
    if (n < 0)
        return ops_fail("input 1 (the %s) must be a constant or a bind_dims vector of at most %d "
                        "values",
                        name, KILN_MAX_NDIM),
               -1;
    for (int d = 0; d < n; d++)
        if (!dims[d].sym && dims[d].v < 0)
            return ops_fail("%s[%d] = %lld is negative", name, d, (long long)dims[d].v), -1;
    *r = REL_OK;
    return n;
}

/* reshape(x, dims): the output's dims are the values of input 1, a
 * constant or a binder's (the shape function before it resolved ONNX's 0
 * and -1, and checks the element count when the sizes are known only as
 * the package runs). */
static rel_result rel_reshape_to_values(const struct kiln_graph *g, const gnode *call,
                                        const gtensor_type *x, gtype *out) {
    rel_result r;
    gtensor_type res = {x->dtype, 0, {{0, NULL}}};
    res.ndim = values_or_attr(g, call, "newshape", res.dims, &r);
    if (res.ndim < 0)
        return r;
    int64_t a = 1, b = 1;
    if (ops_all_known(x, 0, x->ndim) && ops_all_known(&res, 0, res.ndim)) {
        for (int d = 0; d < x->ndim; d++)
            a *= x->dims[d].v; /* under GRAPH_MAX_ELEMENTS */
        for (int d = 0; d < res.ndim; d++)
            if (!kiln_mul_ok(b, res.dims[d].v, &b))
                return ops_fail("size overflow");
        if (a != b)
            return ops_fail("the dims hold %lld elements, the input %lld", (long long)b,
                            (long long)a);
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_reshape(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (call->nin == 2)
        return rel_reshape_to_values(g, call, x, out);
    int64_t ns[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "newshape", ns, KILN_MAX_NDIM + 1);
    if (n < 0 || n > KILN_MAX_NDIM)
        return ops_fail("newshape must have 0 to %d dims (and be given, without a shape input)",
                        KILN_MAX_NDIM);
    /* a symbolic dim must be copied (newshape 0) to the same place: then
       both sides hold it once, and the rest is counted without it (dims
       that are products of symbols wait for dim expressions) */
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d].sym && (d >= n || ns[d] != 0))
            return ops_fail("the symbolic dim '%s' (dim %d) must be kept in place (newshape "
                            "0 there); other reshapes of it are not supported yet",
                            x->dims[d].sym, d);
    int64_t total = 1, known = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!x->dims[d].sym && !kiln_mul_ok(total, x->dims[d].v, &total))
            return ops_fail("size overflow");
    gtensor_type res = {x->dtype, n, {{0, NULL}}};
    int infer = -1;
    for (int d = 0; d < n; d++) {
        int64_t v = ns[d];
        if (v == 0) {
            if (d >= x->ndim)
                return ops_fail("newshape[%d] is 0 but the input has %d dims", d, x->ndim);
            if (x->dims[d].sym) {
                res.dims[d] = x->dims[d];
                continue;
            }
            v = x->dims[d].v;
        } else if (v == -1) {
            if (infer >= 0)
                return ops_fail("newshape has more than one -1");
            infer = d;
            continue;
        } else if (v < -1) {
            return ops_fail("newshape[%d] = %lld is invalid", d, (long long)v);
        }
        res.dims[d].v = v;
        if (!kiln_mul_ok(known, v, &known))
            return ops_fail("size overflow");
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return ops_fail("cannot infer the -1 dim of newshape");
        res.dims[infer].v = total / known;
    } else if (known != total) {
        return ops_fail("newshape has %lld elements, the input %lld", (long long)known,
                        (long long)total);
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_batch_flatten(const struct kiln_graph *g, const gnode *call,
                                    const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 1)
        return ops_fail("needs at least 1 dim");
    if (!ops_all_known(x, 1, x->ndim))
        return ops_fail("only the batch dim may be symbolic");
    int64_t rest = 1;
    for (int d = 1; d < x->ndim; d++)
        if (!kiln_mul_ok(rest, x->dims[d].v, &rest))
            return ops_fail("size overflow");
    gtensor_type res = {x->dtype, 2, {x->dims[0], {rest, NULL}}};
    return ops_set_out(g, out, &res);
}

static rel_result rel_transpose(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int64_t ax[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "axes", ax, KILN_MAX_NDIM + 1);
    gtensor_type res = *x;
    if (n < 0 || n == 0) {
        for (int d = 0; d < x->ndim; d++)
            res.dims[d] = x->dims[x->ndim - 1 - d];
        return ops_set_out(g, out, &res);
    }
    if (n != x->ndim)
        return ops_fail("axes has %d entries for a %d-D input", n, x->ndim);
    int seen[KILN_MAX_NDIM] = {0};
    for (int d = 0; d < n; d++) {
        int64_t a = ax[d] < 0 ? ax[d] + n : ax[d];
        if (a < 0 || a >= n || seen[a]++)
            return ops_fail("axes is not a permutation");
        res.dims[d] = x->dims[a];
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    const gnode *call;
    kiln_tensor *const *in;
    int nd;
} ew;

typedef struct {
    ew e;
    int64_t odims[KILN_MAX_NDIM];
    int64_t idims[KILN_MAX_NDIM];
    kiln_expr oe[KILN_MAX_NDIM], ie[KILN_MAX_NDIM]; /* reshape: the dims as expressions */
    kiln_expr numel; /* reshape to dims from values: the input's element count, else NULL */
    int ind;
    int64_t perm[KILN_MAX_NDIM];
    int axis;
    int ntensors; /* concatenate: the joined inputs (qnn.concatenate has more inputs) */
    int64_t offset[4097];
} lay;

/* 0 of the input's dtype (the reshape of an empty tensor) */
static kiln_expr zero_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    (void)idx;
    return ops_const(ctx, kiln_tensor_dtype(u), 0);
}

/* Row-major reshape: flat index of idx in odims, unflattened in idims. */
static kiln_expr reshape_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    kiln_expr flat = kiln_int(ctx, 0);
    for (int d = 0; d < l->e.nd; d++)
        flat = kiln_add(kiln_mul(flat, l->oe[d]), idx[d]);
    kiln_expr ix[KILN_MAX_NDIM];
    if (l->numel) /* dims from values: an element count that differs is an error */
        flat = kiln_checked_index(flat, l->numel, 0);
    for (int d = l->ind - 1; d >= 0; d--) {
        ix[d] = d ? kiln_floormod(flat, l->ie[d]) : flat;
        flat = kiln_floordiv(flat, l->ie[d]);
    }
    return kiln_tensor_at(l->e.in[0], l->ind, ix);
}

static kiln_status compute_reshape(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                   kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    l.ind = ops_shape(in[0], l.idims);
    for (int d = 0; d < l.e.nd; d++) /* symbolic dims as their size variables */
        l.oe[d] = ops_dim(ctx, call->type.t[0].dims[d]);
    for (int d = 0; d < l.ind; d++)
        l.ie[d] = kiln_tensor_dim(in[0], d);
    /* dims from a binder's values (a shape function checked them; a graph
       may pair any binder with any data): every read stays in bounds */
    int sym = 0;
    for (int d = 0; d < l.e.nd; d++)
        sym |= l.odims[d] < 0;
    if (call->nin == 2 && sym) {
        l.numel = ops_int(ctx, 1);
        for (int d = 0; d < l.ind; d++)
            l.numel = kiln_mul(l.numel, l.ie[d]);
        int empty = 0;
        for (int d = 0; d < l.ind; d++)
            empty |= l.idims[d] == 0;
        if (empty) { /* nothing to read (a valid shape is empty too) */
            out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, zero_body, in[0]);
            return out[0] ? KILN_OK : KILN_ERR_INVALID;
        }
    }
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, reshape_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_expr transpose_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < l->e.nd; d++)
        ix[l->perm[d]] = idx[d];
    return kiln_tensor_at(l->e.in[0], l->e.nd, ix);
}

static kiln_status compute_transpose(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    int n = graph_attr_ints(call, "axes", l.perm, KILN_MAX_NDIM);
    for (int d = 0; d < l.e.nd; d++) {
        if (n <= 0)
            l.perm[d] = l.e.nd - 1 - d;
        else if (l.perm[d] < 0)
            l.perm[d] += l.e.nd;
    }
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, transpose_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The direct fold (kiln_op_def.fold): the input seen through permuted
 * strides and copied in tiles, not element by element through the
 * interpreter (a constant weight's transpose at import). */
static kiln_status fold_transpose(const gnode *call, const kiln_ndarray *const *in,
                                  kiln_ndarray **out) {
    const kiln_ndarray *x = in[0];
    int nd = kiln_ndarray_ndim(x);
    int64_t perm[KILN_MAX_NDIM], shape[KILN_MAX_NDIM], strides[KILN_MAX_NDIM];
    int n = graph_attr_ints(call, "axes", perm, KILN_MAX_NDIM);
    for (int d = 0; d < nd; d++) {
        int64_t a = n <= 0 ? nd - 1 - d : perm[d] < 0 ? perm[d] + nd : perm[d];
        shape[d] = kiln_ndarray_dim(x, (int)a);
        strides[d] = kiln_ndarray_stride(x, (int)a);
    }
    kiln_ndarray *v = kiln_ndarray_view(x, nd, shape, strides, kiln_ndarray_byte_offset(x));
    kiln_ndarray *y = v ? ndarray_empty_uninit(kiln_ndarray_dtype(x), nd, shape) : NULL;
    kiln_status st = y ? kiln_ndarray_copy(y, v) : KILN_ERR_NOMEM;
    kiln_ndarray_free(v);
    if (st != KILN_OK) {
        kiln_ndarray_free(y);
        return st;
    }
    *out = y;
    return KILN_OK;
}

/* ---- concatenate, split ------------------------------------------------------------ */

rel_result ops_concat_rel(const struct kiln_graph *g, const gnode *call, int n,
                          const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(n);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim)
        return ops_fail("axis is out of range for a %d-D input", x->ndim);
    if (x->dims[axis].sym)
        return ops_fail("the concatenated axis must not be symbolic");
    gtensor_type res = *x;
    for (int i = 1; i < n; i++) {
        const gtensor_type *y = ops_tensor_in(in[i], i, &r);
        if (!y)
            return r;
        if (y->ndim != x->ndim || y->dtype != x->dtype)
            return ops_fail("input %d has rank %d and dtype %s, input 0 rank %d and %s", i, y->ndim,
                            kiln_dtype_name(y->dtype), x->ndim, kiln_dtype_name(x->dtype));
        for (int d = 0; d < x->ndim; d++) {
            if (d == axis)
                continue;
            if (!gdim_equal(x->dims[d], y->dims[d]))
                return ops_fail("input %d differs from input 0 in dim %d", i, d);
        }
        if (y->dims[axis].sym)
            return ops_fail("the concatenated axis must not be symbolic");
        if (!kiln_add_ok(res.dims[axis].v, y->dims[axis].v, &res.dims[axis].v))
            return ops_fail("the concatenated axis overflows int64");
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_concatenate(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    return ops_concat_rel(g, call, call->nin, in, out);
}

static rel_result rel_split(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim)
        return ops_fail("axis is out of range for a %d-D input", x->ndim);
    if (x->dims[axis].sym)
        return ops_fail("the split axis must not be symbolic");
    int64_t len = x->dims[axis].v, bounds[65];
    int np;
    const gattr *a = graph_attr(call, "indices_or_sections");
    if (!a)
        return ops_fail("attribute indices_or_sections is missing");
    if (a->kind == GA_INT) {
        if (a->i < 1 || a->i > 64 || len % a->i)
            return ops_fail("%lld sections do not divide the axis of length %lld", (long long)a->i,
                            (long long)len);
        np = (int)a->i;
        for (int i = 0; i <= np; i++)
            bounds[i] = len / np * i;
    } else if (a->kind == GA_INTS) {
        if (a->n > 63)
            return ops_fail("too many split indices");
        np = a->n + 1;
        bounds[0] = 0;
        for (int i = 0; i < a->n; i++) {
            bounds[i + 1] = a->ints[i];
            if (bounds[i + 1] < bounds[i] || bounds[i + 1] > len)
                return ops_fail("split indices must be increasing and within the axis");
        }
        bounds[np] = len;
    } else {
        return ops_fail("indices_or_sections must be an int or an int list");
    }
    gtensor_type parts[64];
    for (int i = 0; i < np; i++) {
        parts[i] = *x;
        parts[i].dims[axis].v = bounds[i + 1] - bounds[i];
    }
    return ops_set_tuple(g, out, np, parts);
}

/* out[.., i, ..] = input k at i - offset[k] for the k whose range holds i.
 * The inputs are chosen by a balanced tree of selects on i, so an element
 * costs log2(n) comparisons and the expression is log2(n) deep, not n: a
 * chain of fused 256-input concatenations made one expression tens of
 * thousands of selects deep, which the C compiler took minutes over.
 * Empty inputs are left out; the index of each read is clamped to its
 * input, so the reads a vector select does not keep stay in bounds. */
static kiln_expr concat_leaf(kiln_ctx *ctx, const lay *l, const kiln_expr *idx, int k) {
    kiln_expr ix[KILN_MAX_NDIM];
    memcpy(ix, idx, sizeof(kiln_expr) * (size_t)l->e.nd);
    int64_t len = l->offset[k + 1] - l->offset[k];
    kiln_expr local = kiln_sub(idx[l->axis], kiln_int(ctx, l->offset[k]));
    ix[l->axis] = kiln_min(kiln_max(local, kiln_int(ctx, 0)), kiln_int(ctx, len - 1));
    return kiln_tensor_at(l->e.in[k], l->e.nd, ix);
}

/* The select tree over ks[lo, hi) (indices of non-empty inputs). */
static kiln_expr concat_tree(kiln_ctx *ctx, const lay *l, const kiln_expr *idx, const int *ks,
                             int lo, int hi) {
    if (hi - lo == 1)
        return concat_leaf(ctx, l, idx, ks[lo]);
    int mid = lo + (hi - lo) / 2;
    kiln_expr below = kiln_lt(idx[l->axis], kiln_int(ctx, l->offset[ks[mid]]));
    return kiln_select(below, concat_tree(ctx, l, idx, ks, lo, mid),
                       concat_tree(ctx, l, idx, ks, mid, hi));
}

static kiln_expr concat_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    lay *l = u;
    int ks[4096], nk = 0;
    for (int k = 0; k < l->ntensors; k++)
        if (l->offset[k + 1] > l->offset[k])
            ks[nk++] = k;
    /* no element to compute when every input is empty; read input 0 */
    return nk ? concat_tree(ctx, l, idx, ks, 0, nk) : concat_leaf(ctx, l, idx, 0);
}

kiln_status ops_concat_compute(kiln_ctx *ctx, const gnode *call, int n, kiln_tensor *const *in,
                               kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    l.axis = ops_norm_axis(call, 0, l.e.nd);
    l.ntensors = n;
    for (int k = 0; k < n; k++) {
        int64_t d[KILN_MAX_NDIM];
        ops_shape(in[k], d);
        l.offset[k + 1] = l.offset[k] + d[l.axis];
    }
    /* skip empty inputs: they contribute no elements */
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, concat_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_status compute_concatenate(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    return ops_concat_compute(ctx, call, call->nin, in, out);
}

typedef struct {
    ew e;
    int axis;
    int64_t off;
} split_part;

static kiln_expr split_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    split_part *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    memcpy(ix, idx, sizeof(kiln_expr) * (size_t)s->e.nd);
    ix[s->axis] = kiln_add(idx[s->axis], kiln_int(ctx, s->off));
    return kiln_tensor_at(s->e.in[0], s->e.nd, ix);
}

static kiln_status compute_split(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    const gtype *t = &call->type;
    int nd = t->t[0].ndim;
    split_part s = {{call, in, nd}, ops_norm_axis(call, 0, nd), 0};
    for (int k = 0; k < t->n; k++) {
        int64_t dims[KILN_MAX_NDIM];
        for (int d = 0; d < nd; d++)
            dims[d] = t->t[k].dims[d].v;
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%d", k);
        out[k] = ops_compute(ctx, call, suffix, nd, dims, split_body, &s);
        if (!out[k])
            return KILN_ERR_INVALID;
        s.off += dims[s.axis];
    }
    return KILN_OK;
}

/* ---- strided_slice ---------------------------------------------------------------- */

/* numpy/ONNX slicing of one dim (ops.h) */
void ops_slice_axis(int64_t n, int64_t b, int64_t e, int64_t s, int64_t *start, int64_t *len) {
    if (b < 0)
        b += n;
    if (e < 0)
        e += n;
    if (s > 0) {
        b = b < 0 ? 0 : b > n ? n : b;
        e = e < 0 ? 0 : e > n ? n : e;
        /* ceil((e - b) / s) without e - b + s overflowing for a huge step */
        *len = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
        b = b < 0 ? 0 : b > n - 1 ? n - 1 : b; /* ONNX clamps to [0, n-1] */
        e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
        /* |s| in unsigned: -INT64_MIN does not fit an int64 */
        uint64_t m = (uint64_t)0 - (uint64_t)s;
        *len = b > e ? (int64_t)((uint64_t)(b - e - 1) / m) + 1 : 0;
    }
    *start = *len ? b : 0;
}

/* strided_slice over dims[nd] (attributes begin, end, strides, axes): per
 * dim the first index, step and length, numpy-clamped. 0, or -1 with an
 * error. */
static int slice_params(const gnode *call, int nd, const int64_t *dims, int64_t *start,
                        int64_t *step, int64_t *len) {
    int64_t b[KILN_MAX_NDIM + 1], e[KILN_MAX_NDIM + 1], s[KILN_MAX_NDIM + 1], ax[KILN_MAX_NDIM + 1];
    int nb = graph_attr_ints(call, "begin", b, KILN_MAX_NDIM + 1);
    int ne = graph_attr_ints(call, "end", e, KILN_MAX_NDIM + 1);
    int ns = graph_attr_ints(call, "strides", s, KILN_MAX_NDIM + 1);
    int na = graph_attr_ints(call, "axes", ax, KILN_MAX_NDIM + 1);
    if (nb < 0 || nb != ne || nb > nd) {
        ops_fail("begin and end must have the same length, at most the rank %d", nd);
        return -1;
    }
    if (ns >= 0 && ns != nb && ns != 1) {
        ops_fail("strides must have 1 value or one per begin value");
        return -1;
    }
    if (na >= 0 && na != nb) {
        ops_fail("axes must have one value per begin value");
        return -1;
    }
    int seen[KILN_MAX_NDIM] = {0};
    for (int d = 0; d < nd; d++) {
        start[d] = 0;
        step[d] = 1;
        len[d] = dims[d];
    }
    for (int i = 0; i < nb; i++) {
        int64_t a = na >= 0 ? ax[i] : i;
        if (a < 0)
            a += nd;
        if (a < 0 || a >= nd || seen[a]++) {
            ops_fail("slice axis %lld is out of range or repeated",
                     (long long)(na >= 0 ? ax[i] : i));
            return -1;
        }
        int64_t st = ns < 0 ? 1 : ns == 1 ? s[0] : s[i];
        if (st == 0) {
            ops_fail("a slice step must not be 0");
            return -1;
        }
        if (dims[a] < 0) {
            ops_fail("the sliced dim %lld must not be symbolic", (long long)a);
            return -1;
        }
        step[a] = st;
        ops_slice_axis(dims[a], b[i], e[i], st, &start[a], &len[a]);
    }
    return 0;
}

/* strided_slice(x, params, dims): each dim's start and step are values of
 * params (slice_params: lengths, starts, steps), the output's dims a
 * binder's values (the lengths); the attributes are not given. */
static rel_result rel_slice_by_params(const struct kiln_graph *g, const gnode *call,
                                      const gtensor_type *x, const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *p = ops_tensor_in(in[1], 1, &r);
    if (!p)
        return r;
    if (graph_attr(call, "begin") || graph_attr(call, "end"))
        return ops_fail("give begin and end, or params and dims inputs, not both");
    if (p->dtype != KILN_INT64 || p->ndim != 1 || p->dims[0].sym ||
        p->dims[0].v != 3 * (int64_t)x->ndim)
        return ops_fail("params must be int64[%d] (lengths, starts and steps per dim)",
                        3 * x->ndim);
    gtensor_type res = *x;
    if (ops_value_dims(g, call, 2, res.dims, KILN_MAX_NDIM) != x->ndim)
        return ops_fail("input 2 (the dims) must be a constant or a bind_dims vector of %d values",
                        x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        if (x->dims[d].sym)
            return ops_fail("dim %d of the input is symbolic", d);
        if (x->dims[d].v == 0) /* a slice of nothing is empty, whatever the values */
            res.dims[d] = x->dims[d];
    }
    return ops_set_out(g, out, &res);
}

static rel_result rel_strided_slice(const struct kiln_graph *g, const gnode *call,
                                    const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (call->nin == 3)
        return rel_slice_by_params(g, call, x, in, out);
    int64_t dims[KILN_MAX_NDIM], start[KILN_MAX_NDIM], step[KILN_MAX_NDIM], len[KILN_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++)
        dims[d] = x->dims[d].sym ? -1 : x->dims[d].v;
    if (slice_params(call, x->ndim, dims, start, step, len) < 0)
        return REL_ERROR;
    gtensor_type res = *x;
    for (int d = 0; d < x->ndim; d++)
        if (!x->dims[d].sym)
            res.dims[d].v = len[d];
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x;
    int nd;
    int64_t start[KILN_MAX_NDIM], step[KILN_MAX_NDIM], len[KILN_MAX_NDIM];
    kiln_tensor *params; /* the 3-input form: starts and steps read from it */
} slice_args;

static kiln_expr slice_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    slice_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < a->nd; d++) {
        if (!a->params) {
            ix[d] = kiln_add(ops_int(ctx, a->start[d]), kiln_mul(i[d], ops_int(ctx, a->step[d])));
            continue;
        }
        /* from values: checked, so that params that do not fit x are an error */
        kiln_expr s = ops_int(ctx, a->nd + d), t = ops_int(ctx, 2 * a->nd + d);
        kiln_expr v = kiln_add(kiln_tensor_at(a->params, 1, &s),
                               kiln_mul(i[d], kiln_tensor_at(a->params, 1, &t)));
        /* (a dim of 0: the output's is 0 too, so nothing is read) */
        ix[d] = a->len[d] > 0 ? ops_checked_index(ctx, v, a->len[d], 0) : v;
    }
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_status compute_strided_slice(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                         kiln_tensor **out) {
    slice_args a;
    int64_t xd[KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    if (call->nin == 3) { /* len: the input's dims, which the reads are checked against */
        a.params = in[1];
        memcpy(a.len, xd, sizeof xd);
        int64_t od[KILN_MAX_NDIM];
        ops_out_shape(call, od);
        out[0] = ops_compute(ctx, call, "", a.nd, od, slice_body, &a);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    if (slice_params(call, a.nd, xd, a.start, a.step, a.len) < 0)
        return KILN_ERR_INVALID;
    out[0] = ops_compute(ctx, call, "", a.nd, a.len, slice_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- take ---------------------------------------------------------------------------- */

static rel_result rel_take(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *ix = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!ix)
        return r;
    if (!ops_is_index_dtype(ix->dtype))
        return ops_fail("indices must be integers, not %s", kiln_dtype_name(ix->dtype));
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0)
        axis += x->ndim;
    if (!x->dims[axis].sym && x->dims[axis].v == 0)
        return ops_fail("cannot take from an empty axis");
    if (x->ndim - 1 + ix->ndim > KILN_MAX_NDIM)
        return ops_fail("too many dims");
    gtensor_type res = {x->dtype, 0, {{0, NULL}}};
    for (int d = 0; d < axis; d++)
        res.dims[res.ndim++] = x->dims[d];
    for (int d = 0; d < ix->ndim; d++)
        res.dims[res.ndim++] = ix->dims[d];
    for (int d = (int)axis + 1; d < x->ndim; d++)
        res.dims[res.ndim++] = x->dims[d];
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *idx;
    int nd, ni, axis;
    kiln_expr n; /* the axis' extent (it may be symbolic) */
} take_args;

static kiln_expr take_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    take_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    /* negative: from the end; out of range: reported, never clamped */
    (void)ctx;
    kiln_expr j = kiln_checked_index(kiln_tensor_at(a->idx, a->ni, i + a->axis), a->n, 1);
    for (int d = 0; d < a->axis; d++)
        ix[d] = i[d];
    ix[a->axis] = j;
    for (int d = a->axis + 1; d < a->nd; d++)
        ix[d] = i[d - 1 + a->ni];
    return kiln_tensor_at(a->x, a->nd, ix);
}

static kiln_status compute_take(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    take_args a;
    kiln_expr od[KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.idx = in[1];
    a.nd = kiln_tensor_ndim(in[0]);
    a.ni = kiln_tensor_ndim(in[1]);
    int64_t axis = graph_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    a.n = kiln_tensor_dim(in[0], a.axis);
    int ond = ops_out_dims(ctx, call, od);
    out[0] = ops_compute_e(ctx, call, "", ond, od, take_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- broadcast_to ------------------------------------------------------------------- */

static rel_result rel_broadcast_to(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    gdim sh[KILN_MAX_NDIM];
    int n = values_or_attr(g, call, "shape", sh, &r);
    if (n < 0)
        return r;
    if (n < x->ndim)
        return ops_fail("shape has %d dims, fewer than the input's %d", n, x->ndim);
    gtensor_type res = {x->dtype, n, {{0, NULL}}};
    for (int d = 0; d < n; d++) {
        res.dims[d] = sh[d];
        int k = d - (n - x->ndim);
        if (k < 0)
            continue;
        gdim xd = x->dims[k];
        if (xd.sym && call->nin == 1)
            return ops_fail("dim %d of the input is symbolic", k);
        if (xd.sym) /* the run decides: the data's size or 1 (the kernel clamps) */
            continue;
        if (xd.v == 1)
            continue;
        /* a dim known only at run time is the input's (its shape function
           checks it): so the kernel never reads past the input */
        if (sh[d].sym)
            res.dims[d] = xd;
        else if (xd.v != sh[d].v)
            return ops_fail("dim %d of size %lld cannot broadcast to %lld", k, (long long)xd.v,
                            (long long)sh[d].v);
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x;
    int nd;
} bcast_args;

static kiln_expr bcast_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    bcast_args *a = u;
    int64_t dims[KILN_MAX_NDIM];
    int nd = ops_shape(a->x, dims), sym = 0;
    for (int k = 0; k < nd; k++)
        sym |= dims[k] < 0;
    if (!sym)
        return ops_bcast_read(ctx, a->x, a->nd, i);
    /* a symbolic dim is 1 (read 0) or the output's (read i) as the run
       decides: min(i, dim - 1) is both, and in bounds whatever the dims */
    kiln_expr ix[KILN_MAX_NDIM], one = ops_int(ctx, 1), zero = ops_int(ctx, 0);
    for (int k = 0; k < nd; k++)
        ix[k] = dims[k] == 1  ? zero
                : dims[k] < 0 ? kiln_min(i[k + a->nd - nd],
                                         kiln_max(kiln_sub(kiln_tensor_dim(a->x, k), one), zero))
                              : i[k + a->nd - nd];
    return kiln_tensor_at(a->x, nd, ix);
}

static kiln_status compute_broadcast_to(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM];
    bcast_args a = {in[0], ops_out_shape(call, od)};
    out[0] = ops_compute(ctx, call, "", a.nd, od, bcast_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- nn.pad ----------------------------------------------------------------------------- */

/* nn.pad(x, pads, dims[, value]): the pads are values (ONNX's order: the
 * begins, then the ends), the output's dims a binder's (pad_dims), and the
 * constant to pad with a scalar input (else pad_value). */
static rel_result rel_pad_by_values(const struct kiln_graph *g, const gnode *call,
                                    const gtensor_type *x, const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *p = ops_tensor_in(in[1], 1, &r);
    const gtensor_type *v = p && call->nin > 3 ? ops_tensor_in(in[3], 3, &r) : NULL;
    if (!p || (call->nin > 3 && !v))
        return r;
    if (call->nin < 3)
        return ops_fail("pads given as input 1 need the dims as input 2");
    if (graph_attr(call, "pad_width"))
        return ops_fail("give pad_width or pads and dims inputs, not both");
    if (!ops_is_index_dtype(p->dtype) || p->ndim != 1 || p->dims[0].sym ||
        p->dims[0].v != 2 * (int64_t)x->ndim)
        return ops_fail("pads must be an integer vector of 2 values per dim (%d)", 2 * x->ndim);
    if (v && (v->dtype != x->dtype || v->ndim > 1 || (v->ndim == 1 && v->dims[0].v != 1)))
        return ops_fail("the pad value must be a scalar of the input's dtype");
    const char *mode = graph_attr_str(call, "pad_mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "edge") && strcmp(mode, "reflect"))
        return ops_fail("pad_mode '%s' is not constant, edge or reflect", mode);
    gtensor_type res = *x;
    if (ops_value_dims(g, call, 2, res.dims, KILN_MAX_NDIM) != x->ndim)
        return ops_fail("input 2 (the dims) must be a constant or a bind_dims vector of %d values",
                        x->ndim);
    return ops_set_out(g, out, &res);
}

static rel_result rel_pad(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (call->nin > 1)
        return rel_pad_by_values(g, call, x, in, out);
    int64_t pw[2 * KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "pad_width", pw, 2 * KILN_MAX_NDIM + 1);
    if (n != 2 * x->ndim)
        return ops_fail("pad_width must have 2 values per dim (%d), has %d", 2 * x->ndim, n);
    const char *mode = graph_attr_str(call, "pad_mode", "constant");
    int reflect = !strcmp(mode, "reflect");
    if (!reflect && strcmp(mode, "constant") && strcmp(mode, "edge"))
        return ops_fail("pad_mode '%s' is not constant, edge or reflect", mode);
    gtensor_type res = *x;
    for (int d = 0; d < x->ndim; d++) {
        int64_t b = pw[2 * d], a = pw[2 * d + 1];
        if (!b && !a)
            continue;
        if (x->dims[d].sym)
            return ops_fail("the padded dim %d must not be symbolic", d);
        int64_t v;
        if (__builtin_add_overflow(x->dims[d].v, b, &v) || __builtin_add_overflow(v, a, &v))
            return ops_fail("dim %d: pads %lld and %lld overflow 64 bits", d, (long long)b,
                            (long long)a);
        if (v < 0)
            return ops_fail("dim %d: the pads remove more than the dim", d);
        if (strcmp(mode, "constant") && (b < 0 || a < 0))
            return ops_fail("negative pads need pad_mode constant");
        if (x->dims[d].v == 0)
            return ops_fail("cannot pad the empty dim %d", d);
        res.dims[d].v = v;
    }
    return ops_set_out(g, out, &res);
}

typedef enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT } pad_mode;

typedef struct {
    kiln_tensor *x;
    int nd;
    pad_mode mode;
    double value;
    int64_t xd[KILN_MAX_NDIM], before[KILN_MAX_NDIM], after[KILN_MAX_NDIM];
    kiln_tensor *pads, *pad_value; /* the value form: both read when it runs (or NULL) */
} npad_args;

static kiln_expr npad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    npad_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM], inside = NULL;
    kiln_expr zero = ops_int(ctx, 0);
    for (int d = 0; d < a->nd; d++) {
        if (!a->pads && !a->before[d] && !a->after[d]) {
            ix[d] = i[d];
            continue;
        }
        kiln_expr k = ops_int(ctx, d);
        kiln_expr b = a->pads ? kiln_cast(KILN_INT64, kiln_tensor_at(a->pads, 1, &k))
                              : ops_int(ctx, a->before[d]);
        kiln_expr s = kiln_sub(i[d], b), n = kiln_tensor_dim(a->x, d), one = ops_int(ctx, 1);
        kiln_expr clamped = kiln_min(kiln_max(s, zero), kiln_max(kiln_sub(n, one), zero));
        ix[d] = clamped;
        if (a->mode == PAD_REFLECT && (a->pads || a->xd[d] > 1)) {
            /* mirror without repeating the edge: period 2(n-1) (a dim of 1:
               the clamp, which a dim known only when it runs selects) */
            kiln_expr period = kiln_mul(ops_int(ctx, 2), kiln_sub(n, one));
            kiln_expr m = kiln_floormod(s, kiln_max(period, one));
            kiln_expr r = kiln_select(kiln_lt(m, n), m, kiln_sub(period, m));
            ix[d] = a->pads ? kiln_select(kiln_gt(n, one), r, clamped) : r;
        }
        if (a->mode == PAD_CONSTANT) {
            kiln_expr in_d = kiln_and(kiln_ge(s, zero), kiln_lt(s, n));
            inside = inside ? kiln_and(inside, in_d) : in_d;
        }
    }
    kiln_expr v = kiln_tensor_at(a->x, a->nd, ix);
    if (!inside)
        return v;
    kiln_expr zero_idx = ops_int(ctx, 0);
    kiln_expr c = a->pad_value
                      ? kiln_tensor_at(a->pad_value, kiln_tensor_ndim(a->pad_value), &zero_idx)
                      : ops_const(ctx, kiln_tensor_dtype(a->x), a->value);
    return kiln_select(inside, v, c);
}

static kiln_status compute_pad(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    npad_args a;
    int64_t od[KILN_MAX_NDIM], pw[2 * KILN_MAX_NDIM];
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.nd = ops_shape(in[0], a.xd);
    ops_out_shape(call, od);
    if (call->nin > 1) {
        a.pads = in[1];
        a.pad_value = call->nin > 3 ? in[3] : NULL;
    } else {
        graph_attr_ints(call, "pad_width", pw, 2 * KILN_MAX_NDIM);
        for (int d = 0; d < a.nd; d++) {
            a.before[d] = pw[2 * d];
            a.after[d] = pw[2 * d + 1];
        }
    }
    const char *mode = graph_attr_str(call, "pad_mode", "constant");
    a.mode = !strcmp(mode, "edge")      ? PAD_EDGE
             : !strcmp(mode, "reflect") ? PAD_REFLECT
                                        : PAD_CONSTANT;
    a.value = graph_attr_float(call, "pad_value", 0);
    out[0] = ops_compute(ctx, call, "", a.nd, od, npad_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- tile ------------------------------------------------------------------------------ */

static rel_result rel_tile(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (call->nin == 2) { /* the output's dims are input 1's values (tile_dims) */
        gtensor_type res = *x;
        int n = values_or_attr(g, call, "reps", res.dims, &r);
        if (n < 0)
            return r;
        if (n != x->ndim)
            return ops_fail("input 1 has %d dims for a %d-D input", n, x->ndim);
        for (int d = 0; d < n; d++)
            if (x->dims[d].sym)
                return ops_fail("dim %d of the input is symbolic", d);
        return ops_set_out(g, out, &res);
    }
    int64_t reps[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "reps", reps, KILN_MAX_NDIM + 1);
    if (n != x->ndim)
        return ops_fail("reps has %d values for a %d-D input", n, x->ndim);
    gtensor_type res = *x;
    for (int d = 0; d < n; d++) {
        if (reps[d] < 0)
            return ops_fail("reps[%d] = %lld is negative", d, (long long)reps[d]);
        if (reps[d] == 1)
            continue;
        if (x->dims[d].sym)
            return ops_fail("the tiled dim %d must not be symbolic", d);
        if (!kiln_mul_ok(x->dims[d].v, reps[d], &res.dims[d].v))
            return ops_fail("dim %d times %lld overflows int64", d, (long long)reps[d]);
    }
    return ops_set_out(g, out, &res);
}

/* out[i] = x[i mod dims] */
static kiln_expr tile_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lay *l = u;
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < l->e.nd; d++)
        ix[d] = l->idims[d] == l->odims[d] || l->idims[d] == 0
                    ? i[d]
                    : kiln_floormod(i[d], ops_int(ctx, l->idims[d]));
    return kiln_tensor_at(l->e.in[0], l->e.nd, ix);
}

static kiln_status compute_tile(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    static _Thread_local lay l;
    memset(&l, 0, sizeof l);
    l.e = (ew){call, in, ops_out_shape(call, l.odims)};
    l.ind = ops_shape(in[0], l.idims);
    out[0] = ops_compute(ctx, call, "", l.e.nd, l.odims, tile_body, &l);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

#define MAXIN 4096
/* ---- shape values (ops_values): the elements these ops move ---------------------- */

/* reshape of a small integer value (0-D <-> 1-D): its elements as they are. */
static int values_reshape(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                          const int *nin, gval *out, int cap) {
    (void)g, (void)call;
    if (nin[0] < 0 || nin[0] > cap)
        return -1;
    memcpy(out, in[0], (size_t)nin[0] * sizeof(gval));
    return nin[0];
}

/* The layout hook: a concatenation along the channels of 4-D tensors whose
 * channel counts are all multiples of the block x of a blocked input runs
 * in NCHW[x]c, along the block axis (axis 1 there too). DenseNet's growing
 * concatenation then stays blocked between its convolutions instead of
 * going back to NCHW and out again: two layout transforms of the whole
 * concatenation per layer. */
static int alter_concatenate(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    const gtensor_type *ot = ops_node_type(call);
    if (!ot || ot->ndim != 4 || !ops_all_known(ot, 1, 4) || call->nin > LAYOUT_MAX_IN)
        return 0;
    if (ops_norm_axis(call, 0, 4) != 1)
        return 0;
    int b = 0;
    for (int i = 0; i < call->nin && !b; i++)
        b = q->block[call->in[i]];
    if (!b)
        return 0;
    for (int i = 0; i < call->nin; i++) {
        const gtensor_type *t = ops_node_type(call->graph->nodes[call->in[i]]);
        if (!t || t->ndim != 4 || t->dims[1].sym || t->dims[1].v % b)
            return 0;
        rw->in[i].block = b;
    }
    static const char *const drop[] = {"axis", NULL};
    rw->drop = drop;
    snprintf(rw->attrs, sizeof rw->attrs, "axis=1");
    rw->out_block = b;
    return 1;
}

/* A concatenation is its inputs' bytes one after another when every dim
 * before the axis is 1: batch 1 along the channels, in NCHW and in
 * NCHW[x]c (whole channel blocks, axis 1). The memory planner may then
 * place the inputs in the output (src/driver/concat_views.c). */
static int view_concatenate(const struct kiln_graph *g, const gnode *call) {
    const gtensor_type *ot = ops_node_type(call);
    if (!ot || !ops_all_known(ot, 0, ot->ndim))
        return 0;
    int axis = ops_norm_axis(call, 0, ot->ndim);
    for (int d = 0; d < axis; d++)
        if (ot->dims[d].v != 1)
            return 0;
    for (int i = 0; i < call->nin; i++) {
        const gtensor_type *t = ops_node_type(g->nodes[call->in[i]]);
        if (!t || t->ndim != ot->ndim || t->dtype != ot->dtype || !ops_all_known(t, 0, t->ndim))
            return 0;
    }
    return 1;
}

/* concatenate of 1-D values: their elements in order; an input nothing is
 * known of gives UNKNOWN elements, as many as its type has. */
static int values_concatenate(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                              const int *nin, gval *out, int cap) {
    int n = 0;
    for (int i = 0; i < call->nin; i++) {
        const gtensor_type *t = ops_node_type(g->nodes[call->in[i]]);
        if (!t || t->ndim != 1 || t->dims[0].sym || t->dims[0].v > cap - n)
            return -1;
        for (int k = 0; k < t->dims[0].v; k++)
            out[n + k] = nin[i] == t->dims[0].v ? in[i][k] : (gval){GVAL_UNKNOWN, {0, NULL}};
        n += (int)t->dims[0].v;
    }
    return n;
}

/* take of a 1-D value at constant indices. */
static int values_take(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                       const int *nin, gval *out, int cap) {
    (void)g;
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (nin[0] < 0 || nin[1] < 0 || nin[1] > cap || (axis != 0 && axis != -1))
        return -1;
    for (int k = 0; k < nin[1]; k++) {
        gval j = in[1][k];
        if (j.kind != GVAL_EXACT || j.d.sym)
            return -1;
        int64_t at = j.d.v < 0 ? j.d.v + nin[0] : j.d.v;
        if (at < 0 || at >= nin[0])
            return -1;
        out[k] = in[0][at];
    }
    return nin[1];
}

/* strided_slice (attributes) of a 1-D value. */
static int values_strided_slice(const struct kiln_graph *g, const gnode *call,
                                const gval *const *in, const int *nin, gval *out, int cap) {
    (void)g;
    int64_t dims[1] = {nin[0]}, start[1], step[1], len[1];
    if (call->nin != 1 || nin[0] < 0 || slice_params(call, 1, dims, start, step, len) < 0 ||
        len[0] > cap)
        return -1;
    for (int64_t k = 0; k < len[0]; k++)
        out[k] = in[0][start[0] + k * step[0]];
    return (int)len[0];
}

#define ROW(nm, nmin, nmax, schema, relation, fn, pat, sum)                                        \
    {                                                                                              \
        .name = nm, .min_in = nmin, .max_in = nmax, .attrs = schema, .rel = relation,              \
        .pattern = pat, .compute = fn, .summary = sum                                              \
    }

const kiln_op_def ops_transform_rows[] = {
    OPS_SYM_ROW_VALS("reshape", 1, 2, reshape_attrs, rel_reshape, compute_reshape, OP_INJECTIVE, 0,
                     values_reshape,
                     "new shape (0 copies, -1 infers), or the values of input 1 (a constant or a "
                     "bind_dims)"),
    {.name = "transpose",
     .min_in = 1,
     .max_in = 1,
     .attrs = transpose_attrs,
     .rel = rel_transpose,
     .pattern = OP_INJECTIVE,
     .compute = compute_transpose,
     .fold = fold_transpose,
     .summary = "permute axes",
     .sym_dims = 1},
    OPS_SYM_ROW("nn.batch_flatten", 1, 1, no_attrs, rel_batch_flatten, compute_reshape,
                OP_INJECTIVE, "[N, ...] -> [N, rest]"),
    {.name = "concatenate",
     .min_in = 1,
     .max_in = MAXIN,
     .attrs = axis0_attrs,
     .rel = rel_concatenate,
     .pattern = OP_INJECTIVE,
     .compute = compute_concatenate,
     .alter = alter_concatenate,
     .sym_dims = 1, /* the other dims may be symbolic; the joined one may not */
     .summary = "join along axis",
     .values = values_concatenate,
     .view = view_concatenate},
    ROW("split", 1, 1, split_attrs, rel_split, compute_split, OP_INJECTIVE,
        "split along axis (a tuple)"),
    OPS_SYM_ROW_VALS("strided_slice", 1, 3, strided_slice_attrs, rel_strided_slice,
                     compute_strided_slice, OP_INJECTIVE, 0, values_strided_slice,
                     "x[begin:end:strides] on axes (numpy clamping)"),
    OPS_SYM_ROW_VALS("take", 2, 2, axis0_attrs, rel_take, compute_take, OP_INJECTIVE, 0,
                     values_take, "gather along axis; negative indices count from the end"),
    OPS_SYM_ROW("broadcast_to", 1, 2, broadcast_to_attrs, rel_broadcast_to, compute_broadcast_to,
                OP_BROADCAST, "broadcast to shape"),
    OPS_SYM_ROW("nn.pad", 1, 4, pad_attrs, rel_pad, compute_pad, OP_INJECTIVE,
                "pad_width [before0, after0, ...]; constant, edge or reflect"),
    OPS_SYM_ROW("tile", 1, 2, tile_attrs, rel_tile, compute_tile, OP_INJECTIVE,
                "repeat reps[d] times along each dim d"),
};

const int ops_transform_count = (int)(sizeof ops_transform_rows / sizeof ops_transform_rows[0]);
