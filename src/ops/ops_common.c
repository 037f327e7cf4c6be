/* ops_common.c: what the op families share: relation helpers (errors,
 * broadcasting, the identity relations), attribute readers, compute
 * helpers (the elementwise compute every row with an `elem` scalar uses,
 * spatial padding), schedule building blocks (the per-row schedule of
 * softmax and layer norm, the register block of the convolutions) and the
 * blocked re-layout of a constant. It calls no family. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../te/te_internal.h"
#include "ops.h"

/* ---- relations ------------------------------------------------------------------ */

rel_result ops_fail(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_set_error(KILN_ERR_INVALID, "%s", msg);
    return REL_ERROR;
}

const gtensor_type *ops_tensor_in(const gtype *t, int i, rel_result *r) {
    if (t->is_tuple) {
        *r = ops_fail("input %d is a tuple, not a tensor", i);
        return NULL;
    }
    return &t->t[0];
}

kiln_dtype ops_out_dtype(const gnode *call) {
    const char *s = graph_attr_str(call, "out_dtype", "");
    kiln_dtype dt;
    return *s && kiln_dtype_parse(s, &dt) == KILN_OK ? dt : KILN_DTYPE_COUNT;
}

static int small_int(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_INT16 || dt == KILN_INT32;
}

rel_result ops_accum_dtype(const gnode *call, const gtensor_type *a, const gtensor_type *b,
                           kiln_dtype *acc) {
    const char *s = graph_attr_str(call, "out_dtype", "");
    if (!*s) {
        if (a->dtype != b->dtype)
            return ops_fail("data is %s but weight is %s", kiln_dtype_name(a->dtype),
                            kiln_dtype_name(b->dtype));
        *acc = a->dtype;
        return REL_OK;
    }
    if (kiln_dtype_parse(s, acc) != KILN_OK || (*acc != KILN_INT32 && *acc != KILN_INT64))
        return ops_fail("out_dtype '%s' is not int32 or int64", s);
    if (!small_int(a->dtype) || !small_int(b->dtype))
        return ops_fail("with out_dtype %s the operands must be int8, uint8, int16 or int32, "
                        "not %s and %s",
                        s, kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    return REL_OK;
}

kiln_expr ops_accum_operand(kiln_dtype acc, kiln_expr x) {
    return acc == KILN_DTYPE_COUNT ? x : kiln_cast(acc, x);
}

rel_result ops_set_out(const struct kiln_graph *g, gtype *out, const gtensor_type *t) {
    *out = gtype_tensor((struct kiln_graph *)g, t->dtype, t->ndim, t->dims);
    return REL_OK;
}

rel_result ops_set_tuple(const struct kiln_graph *g, gtype *out, int n, const gtensor_type *t) {
    gtensor_type *tt = arena_alloc(g->arena, sizeof(gtensor_type) * (size_t)n);
    memcpy(tt, t, sizeof(gtensor_type) * (size_t)n);
    *out = (gtype){.known = 1, .is_tuple = 1, .n = n, .t = tt};
    return REL_OK;
}

void ops_dim_str(gdim d, char *buf, size_t cap) {
    if (d.sym)
        snprintf(buf, cap, "%s", d.sym);
    else
        snprintf(buf, cap, "%lld", (long long)d.v);
}

/* ---- shape functions ---------------------------------------------------------------- */

static kiln_expr pick_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    const ops_dims_fn *f = u;
    kiln_expr e = f->dim[f->n - 1];
    for (int k = f->n - 2; k >= 0; k--)
        e = kiln_select(kiln_eq(idx[0], kiln_int(ctx, k)), f->dim[k], e);
    return e;
}

kiln_status ops_dims_out(kiln_ctx *ctx, const gnode *call, ops_dims_fn *f, kiln_tensor **out) {
    int64_t n = f->n;
    KILN_ASSERT(n >= 1);
    out[0] = ops_compute(ctx, call, "", 1, &n, pick_body, f);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

kiln_expr ops_elem_as(kiln_ctx *ctx, kiln_tensor *t, int k, kiln_dtype dt) {
    kiln_expr i = kiln_int(ctx, k);
    int nd = kiln_tensor_ndim(t);
    kiln_expr v = kiln_tensor_at(t, nd, nd ? &i : NULL);
    return kiln_tensor_dtype(t) == dt ? v : kiln_cast(dt, v);
}

kiln_expr ops_elem_i64(kiln_ctx *ctx, kiln_tensor *t, int k) {
    return ops_elem_as(ctx, t, k, KILN_INT64);
}

rel_result ops_dims_rel(const struct kiln_graph *g, const gtensor_type *v, const char *what,
                        int is_float, int64_t len, gtype *out) {
    if (!(is_float ? ops_is_float_dtype(v->dtype) : ops_is_index_dtype(v->dtype)) || v->ndim != 1 ||
        v->dims[0].sym)
        return ops_fail("%s must be a 1-D %s tensor of a length known at compile time", what,
                        is_float ? "float" : "integer");
    if (len < 0)
        len = v->dims[0].v;
    if (len < 1 || len > KILN_MAX_NDIM)
        return ops_fail("%s has %lld values; 1 to %d dims are supported", what, (long long)len,
                        KILN_MAX_NDIM);
    gtensor_type res = {KILN_INT64, 1, {{len, NULL}}};
    return ops_set_out(g, out, &res);
}

/* ---- shape values ---------------------------------------------------------------- */

/* The most nodes one evaluation visits: a shape sub-graph is small, and a
 * DAG that shares a deep chain cannot make it exponential. */
#define VALUES_BUDGET 4096
#define VALUES_DEPTH 64

static int const_values(const kiln_ndarray *a, gval *out, int cap) {
    kiln_dtype dt = kiln_ndarray_dtype(a);
    int64_t n = kiln_ndarray_numel(a);
    if (n > cap || (dt != KILN_INT64 && dt != KILN_INT32 && dt != KILN_BOOL))
        return -1;
    const void *p = kiln_ndarray_data(a);
    for (int k = 0; k < n; k++) {
        int64_t v = dt == KILN_INT64   ? ((const int64_t *)p)[k]
                    : dt == KILN_INT32 ? ((const int32_t *)p)[k]
                                       : ((const uint8_t *)p)[k] != 0;
        out[k] = (gval){GVAL_EXACT, {v, NULL}};
    }
    return (int)n;
}

static int values_rec(const struct kiln_graph *g, int id, gval *out, int cap, int depth,
                      int *budget) {
    const gnode *v = graph_node(g, id);
    if (!v || depth > VALUES_DEPTH || --*budget < 0 || !v->type.known || v->type.n != 1 ||
        v->type.t[0].ndim > 1 || (v->type.t[0].ndim == 1 && v->type.t[0].dims[0].sym))
        return -1;
    kiln_dtype dt = v->type.t[0].dtype;
    if (dt != KILN_INT64 && dt != KILN_INT32 && dt != KILN_BOOL)
        return -1;
    int64_t count = v->type.t[0].ndim ? v->type.t[0].dims[0].v : 1;
    if (count > cap)
        return -1;
    if (v->kind == GN_CONST)
        return const_values(v->value, out, cap);
    if (v->kind != GN_CALL)
        return -1;
    if (v->op->binds) {
        gdim d[GVAL_MAX];
        int n = ops_bound_dims(g, v, d, GVAL_MAX);
        for (int k = 0; k < n && k < cap; k++)
            out[k] = (gval){GVAL_EXACT, d[k]};
        return n <= cap ? n : -1;
    }
    if (!v->op->values)
        return -1;
    gval *buf = malloc((size_t)(v->nin ? v->nin : 1) * GVAL_MAX * sizeof(gval));
    const gval **in = malloc((size_t)(v->nin ? v->nin : 1) * sizeof(gval *));
    int *nin = malloc((size_t)(v->nin ? v->nin : 1) * sizeof(int));
    int n = -1;
    if (buf && in && nin) {
        for (int i = 0; i < v->nin; i++) {
            nin[i] =
                values_rec(g, v->in[i], buf + (size_t)i * GVAL_MAX, GVAL_MAX, depth + 1, budget);
            in[i] = nin[i] >= 0 ? buf + (size_t)i * GVAL_MAX : NULL;
        }
        n = v->op->values(g, v, in, nin, out, cap);
        if (n != count)
            n = -1;
    }
    free(buf);
    free(in);
    free(nin);
    return n;
}

gval_kind ops_gval_weaker(gval_kind a, gval_kind b) {
    return a == GVAL_UNKNOWN || b == GVAL_UNKNOWN   ? GVAL_UNKNOWN
           : a == GVAL_ASSUMED || b == GVAL_ASSUMED ? GVAL_ASSUMED
                                                    : GVAL_EXACT;
}

int ops_values(const struct kiln_graph *g, int id, gval *out, int cap) {
    int budget = VALUES_BUDGET;
    return values_rec(g, id, out, cap, 0, &budget);
}

int ops_value_dims(const struct kiln_graph *g, const gnode *call, int i, gdim *out, int cap) {
    if (i >= call->nin)
        return -1;
    const gnode *v = g->nodes[call->in[i]];
    if (!v->type.known || v->type.n != 1 || v->type.t[0].ndim > 1)
        return -1;
    if (v->type.t[0].dtype != KILN_INT64 && v->type.t[0].dtype != KILN_INT32)
        return -1;
    gval e[GVAL_MAX];
    int n = ops_values(g, v->id, e, cap < GVAL_MAX ? cap : GVAL_MAX);
    for (int k = 0; k < n; k++) {
        if (e[k].kind != GVAL_EXACT)
            return -1;
        out[k] = e[k].d;
    }
    return n;
}

int ops_bound_dims(const struct kiln_graph *g, const gnode *v, gdim *out, int cap) {
    if (v->kind != GN_CALL || !v->op->binds || !v->type.known || v->type.n != 1 ||
        v->type.t[0].ndim != 1 || v->type.t[0].dims[0].sym || v->type.t[0].dims[0].v > cap)
        return -1;
    return ops_binder_names(g, v, (int)v->type.t[0].dims[0].v, out);
}

int ops_binder_names(const struct kiln_graph *g, const gnode *v, int n, gdim *out) {
    const char *prefix = graph_attr_str(v, "prefix", NULL);
    const char *names = graph_attr_str(v, "names", "");
    if (!prefix || !names)
        return -1;
    for (int k = 0; k < n; k++) {
        /* entry k of `names` (comma-separated): a name, a size, or empty */
        const char *e = names;
        for (int j = 0; j < k && e; j++)
            e = strchr(e, ',') ? strchr(e, ',') + 1 : NULL;
        size_t len = e ? strcspn(e, ",") : 0;
        char name[300];
        if (len == 0)
            snprintf(name, sizeof name, "%s_%d", prefix, k);
        else
            snprintf(name, sizeof name, "%.*s", (int)(len < 200 ? len : 200), e);
        if (name[0] >= '0' && name[0] <= '9') {
            char *end;
            long long c = strtoll(name, &end, 10);
            if (*end || c < 0 || c > GRAPH_MAX_ELEMENTS)
                return -1;
            out[k] = (gdim){c, NULL};
            continue;
        }
        if (!graph_is_size_name(name, 64))
            return -1;
        out[k] = (gdim){0, arena_strdup(g->arena, name)};
        if (!out[k].sym)
            return -1;
    }
    return n;
}

int ops_all_known(const gtensor_type *t, int from, int to) {
    for (int d = from; d < to; d++)
        if (t->dims[d].sym)
            return 0;
    return 1;
}

rel_result ops_broadcast(int n, const gtensor_type *const *ts, int dt_from, gtensor_type *res) {
    int nd = 0;
    for (int i = 0; i < n; i++)
        nd = ts[i]->ndim > nd ? ts[i]->ndim : nd;
    res->ndim = nd;
    res->dtype = ts[dt_from]->dtype;
    for (int d = 0; d < nd; d++) {
        gdim r = {1, NULL};
        for (int i = 0; i < n; i++) {
            int k = d - (nd - ts[i]->ndim);
            if (k < 0)
                continue;
            gdim x = ts[i]->dims[k];
            if (!x.sym && x.v == 1)
                continue;
            if (!r.sym && r.v == 1) {
                r = x;
                continue;
            }
            if (!gdim_equal(r, x)) {
                char a[64], b[64];
                ops_dim_str(r, a, sizeof a);
                ops_dim_str(x, b, sizeof b);
                return ops_fail("shapes cannot broadcast: dim %d is %s in one input and %s in "
                                "input %d",
                                d, a, b, i);
            }
        }
        res->dims[d] = r;
    }
    return REL_OK;
}

rel_result ops_rel_identity(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    return a ? ops_set_out(g, out, a) : r;
}

rel_result ops_rel_float_unary(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    if (!a)
        return r;
    if (a->dtype != KILN_FLOAT32 && a->dtype != KILN_FLOAT64 && a->dtype != KILN_FLOAT16)
        return ops_fail("needs a float input, not %s", kiln_dtype_name(a->dtype));
    return ops_set_out(g, out, a);
}

int ops_is_float_dtype(kiln_dtype dt) {
    return dt == KILN_FLOAT32 || dt == KILN_FLOAT64 || dt == KILN_FLOAT16 || dt == KILN_BFLOAT16;
}

int ops_is_int_dtype(kiln_dtype dt) {
    return tir_is_int_dtype(dt) && dt != KILN_BOOL;
}

int ops_is_index_dtype(kiln_dtype dt) {
    /* not uint64: a value past INT64_MAX would read as an index from the end */
    return ops_is_int_dtype(dt) && dt != KILN_UINT64;
}

/* ---- attributes ------------------------------------------------------------------ */

int ops_attr_axis(const gnode *call, const char *name, int64_t def, int nd, int *axis) {
    int64_t a = graph_attr_int(call, name, def);
    if (a < -nd || a >= nd) {
        ops_fail("%s %lld is out of range for a %d-D input", name, (long long)a, nd);
        return 0;
    }
    *axis = (int)(a < 0 ? a + nd : a);
    return 1;
}

int ops_attr_choice(const gnode *call, const char *name, const char *def,
                    const char *const *names) {
    const char *s = graph_attr_str(call, name, def);
    char list[256] = "";
    size_t len = 0;
    for (int i = 0; names[i]; i++) {
        if (!strcmp(s, names[i]))
            return i;
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
        if (len >= sizeof list)
            len = sizeof list - 1;
    }
    ops_fail("%s '%s' is not one of %s", name, s, list);
    return -1;
}

int ops_norm_axis(const gnode *call, int64_t def, int nd) {
    int64_t a = graph_attr_int(call, "axis", def);
    return (int)(a < 0 ? a + nd : a);
}

/* Spatial attributes come from the model: a count other than 1 or nsp
 * (2 * nsp for padding) is an error in the relation, and every sum of
 * padding is checked, so an overflow is an error (or an empty window),
 * never undefined behaviour. */
void ops_attr_sp(const gnode *call, const char *name, int64_t def, int nsp, int64_t *v) {
    int64_t b[OPS_MAX_SPATIAL];
    int n = graph_attr_ints(call, name, b, OPS_MAX_SPATIAL);
    for (int i = 0; i < nsp; i++)
        v[i] = n < 1 ? def : n < nsp ? b[0] : b[i];
}

int ops_attr_sp_checked(const gnode *call, const char *name, int64_t def, int64_t minv, int nsp,
                        int64_t *v) {
    int64_t b[OPS_MAX_SPATIAL];
    int n = graph_attr_ints(call, name, b, OPS_MAX_SPATIAL);
    if (n >= 0 && n != 1 && n != nsp) {
        ops_fail("attribute %s must have 1 or %d values, has %d", name, nsp, n);
        return 0;
    }
    ops_attr_sp(call, name, def, nsp, v);
    for (int i = 0; i < nsp; i++)
        if (v[i] < minv) {
            ops_fail("attribute %s must be >= %lld", name, (long long)minv);
            return 0;
        }
    return 1;
}

void ops_attr2(const gnode *call, const char *name, int64_t def, int64_t v[2]) {
    ops_attr_sp(call, name, def, 2, v);
}

int ops_attr2_checked(const gnode *call, const char *name, int64_t def, int64_t minv,
                      int64_t v[2]) {
    return ops_attr_sp_checked(call, name, def, minv, 2, v);
}

void ops_pad_sp(const gnode *call, int nsp, int64_t *p) {
    int64_t b[2 * OPS_MAX_SPATIAL];
    int n = graph_attr_ints(call, "padding", b, 2 * OPS_MAX_SPATIAL);
    for (int i = 0; i < 2 * nsp; i++)
        p[i] = n == 1 ? b[0] : n == nsp ? b[i % nsp] : n == 2 * nsp ? b[i] : 0;
}

void ops_pad4(const gnode *call, int64_t p[4]) {
    ops_pad_sp(call, 2, p);
}

int ops_pad_sp_checked(const gnode *call, int nsp, int allow_negative, int64_t *p) {
    int n = graph_attr_ints(call, "padding", p, 0);
    if (n > 0 && n != 1 && n != nsp && n != 2 * nsp) {
        ops_fail("attribute padding must have 1, %d or %d values, has %d", nsp, 2 * nsp, n);
        return 0;
    }
    ops_pad_sp(call, nsp, p);
    for (int i = 0; i < 2 * nsp; i++)
        if (p[i] < 0 && !allow_negative)
            return ops_fail("padding must not be negative"), 0;
    return 1;
}

int ops_pad_sum(const gnode *call, int nsp, int64_t *p) {
    int64_t b[2 * OPS_MAX_SPATIAL];
    if (!ops_pad_sp_checked(call, nsp, 0, b))
        return 0;
    for (int i = 0; i < nsp; i++)
        if (!kiln_add_ok(b[i], b[nsp + i], &p[i]))
            return ops_fail("padding is too large (its sum overflows int64)"), 0;
    return 1;
}

int64_t ops_window_out(int64_t in, int64_t pad, int64_t k, int64_t stride, int64_t dil,
                       int ceil_mode) {
    int64_t reach, span;
    if (k < 1 || stride < 1 || dil < 1 || __builtin_mul_overflow(dil, k - 1, &reach) ||
        __builtin_add_overflow(in, pad, &span) || __builtin_sub_overflow(span, reach, &span) ||
        __builtin_sub_overflow(span, 1, &span) || span < 0)
        return -1;
    int64_t o = (ceil_mode && span % stride ? span / stride + 1 : span / stride) + 1, end;
    /* a ceil_mode window may end past the padded input: its end must fit too */
    if (__builtin_mul_overflow(o - 1, stride, &end) || __builtin_add_overflow(end, reach, &end) ||
        __builtin_add_overflow(end, 1, &end))
        return -1;
    return o;
}

int64_t ops_window_span(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t extra) {
    int64_t span, reach;
    if (in < 1 || k < 1 || stride < 1 || dil < 1 || extra < 0 ||
        !kiln_mul_ok(stride, in - 1, &span) || !kiln_mul_ok(dil, k - 1, &reach) ||
        !kiln_add_ok(span, reach, &span) || !kiln_add_ok(span, 1, &span) ||
        !kiln_add_ok(span, extra, &span))
        return -1;
    return span;
}

int ops_layout_block(const char *layout) {
    if (!layout)
        return -1;
    if (!strcmp(layout, "NCHW"))
        return 0;
    if (strncmp(layout, "NCHW", 4))
        return -1;
    char *end;
    long b = strtol(layout + 4, &end, 10);
    if (b < 1 || b > 4096 || strcmp(end, "c"))
        return -1;
    return (int)b;
}

/* ---- computes -------------------------------------------------------------------- */

kiln_expr ops_int(kiln_ctx *ctx, int64_t v) {
    return kiln_int(ctx, v);
}

kiln_expr ops_const(kiln_ctx *ctx, kiln_dtype dt, double v) {
    return kiln_const(ctx, dt, v);
}

kiln_expr ops_checked_index(kiln_ctx *ctx, kiln_expr index, int64_t n, int from_end) {
    return kiln_checked_index(index, kiln_int(ctx, n), from_end);
}

int ops_shape(const kiln_tensor *t, int64_t *dims) {
    for (int d = 0; d < t->ndim; d++)
        if (!tir_const_int(t->shape[d], &dims[d]))
            dims[d] = -1; /* a symbolic dim: only ops with sym_dims see one */
    return t->ndim;
}

int ops_out_shape(const gnode *call, int64_t *dims) {
    const gtensor_type *t = &call->type.t[0];
    for (int d = 0; d < t->ndim; d++)
        dims[d] = t->dims[d].sym ? -1 : t->dims[d].v;
    return t->ndim;
}

kiln_expr ops_dim(kiln_ctx *ctx, gdim d) {
    return d.sym ? kiln_size_var(ctx, d.sym) : kiln_int(ctx, d.v);
}

int ops_out_dims(kiln_ctx *ctx, const gnode *call, kiln_expr *dims) {
    const gtensor_type *t = &call->type.t[0];
    for (int d = 0; d < t->ndim; d++)
        dims[d] = ops_dim(ctx, t->dims[d]);
    return t->ndim;
}

kiln_tensor *ops_compute(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                         const int64_t *shape, kiln_compute_fn fn, void *user) {
    kiln_expr sh[KILN_MAX_NDIM];
    const gtensor_type *t = &call->type.t[0];
    for (int d = 0; d < ndim; d++) {
        KILN_ASSERT(shape[d] >= 0 || (ndim == t->ndim && t->dims[d].sym));
        sh[d] = shape[d] >= 0 ? kiln_int(ctx, shape[d]) : ops_dim(ctx, t->dims[d]);
    }
    return ops_compute_e(ctx, call, suffix, ndim, sh, fn, user);
}

/* A stage's name: the call's (or its op's) plus suffix. */
static void stage_name(const gnode *call, const char *suffix, char *name, size_t cap) {
    const char *base = call->name && *call->name ? call->name : call->op->name;
    snprintf(name, cap, "%s%s", base, suffix);
}

kiln_tensor *ops_compute_e(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                           const kiln_expr *sh, kiln_compute_fn fn, void *user) {
    char name[256];
    stage_name(call, suffix, name, sizeof name);
    return kiln_compute(ctx, ndim, sh, fn, user, name);
}

kiln_tensor *ops_scan(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                      const int64_t *shape, kiln_dtype dt, int axis, kiln_compute_fn fn, void *user,
                      kiln_tensor **self) {
    char name[256];
    kiln_expr sh[KILN_MAX_NDIM];
    stage_name(call, suffix, name, sizeof name);
    for (int d = 0; d < ndim; d++)
        sh[d] = kiln_int(ctx, shape[d]);
    kiln_tensor *t = *self = kiln_scan_declare(ctx, ndim, sh, dt, axis, name);
    return t && kiln_scan_define(t, fn, user) == KILN_OK ? t : NULL;
}

kiln_expr ops_bcast_read(kiln_ctx *ctx, kiln_tensor *t, int out_nd, const kiln_expr *idx) {
    int64_t dims[KILN_MAX_NDIM];
    int nd = ops_shape(t, dims);
    kiln_expr ix[KILN_MAX_NDIM];
    for (int k = 0; k < nd; k++)
        ix[k] = dims[k] == 1 ? kiln_int(ctx, 0) : idx[k + out_nd - nd];
    return kiln_tensor_at(t, nd, ix);
}

typedef struct {
    const gnode *call;
    kiln_tensor *const *in;
    int nd;
} elem_args;

static kiln_expr elem_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    elem_args *e = u;
    kiln_expr args[LAYOUT_MAX_IN];
    for (int i = 0; i < e->call->nin; i++) {
        /* a unary op's input has the output's shape: read at its index */
        args[i] = e->call->nin == 1 && kiln_tensor_ndim(e->in[i]) == e->nd
                      ? kiln_tensor_at(e->in[i], e->nd, idx)
                      : ops_bcast_read(ctx, e->in[i], e->nd, idx);
    }
    return e->call->op->elem(ctx, e->call, kiln_tensor_dtype(e->in[0]), args);
}

kiln_status ops_compute_elemwise(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    if (!call->op->elem || call->nin < 1 || call->nin > LAYOUT_MAX_IN)
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: an elementwise compute needs a scalar and "
                              "1 to %d inputs",
                              call->op->name, LAYOUT_MAX_IN);
    int64_t dims[KILN_MAX_NDIM];
    elem_args e = {call, in, ops_out_shape(call, dims)};
    out[0] = ops_compute(ctx, call, "", e.nd, dims, elem_body, &e);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

kiln_expr ops_elem_multiply(kiln_ctx *ctx, const gnode *call, kiln_dtype dt,
                            const kiln_expr *args) {
    return kiln_mul(args[0], args[1]);
}

typedef struct {
    kiln_tensor *x;
    int nd, nsp;
    int64_t dims[KILN_MAX_NDIM], pad[2 * OPS_MAX_SPATIAL];
    double fill;
} pad_args;

static kiln_expr pad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pad_args *p = u;
    kiln_expr z = ops_int(ctx, 0), in = NULL, ix[KILN_MAX_NDIM];
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)p->nd);
    for (int d = 0; d < p->nsp; d++) {
        kiln_expr c = kiln_sub(i[2 + d], ops_int(ctx, p->pad[d]));
        kiln_expr inside = kiln_and(kiln_ge(c, z), kiln_lt(c, ops_int(ctx, p->dims[2 + d])));
        in = in ? kiln_and(in, inside) : inside;
        ix[2 + d] = kiln_min(kiln_max(c, z), ops_int(ctx, p->dims[2 + d] - 1));
    }
    return kiln_select(in, kiln_tensor_at(p->x, p->nd, ix),
                       ops_const(ctx, kiln_tensor_dtype(p->x), p->fill));
}

kiln_tensor *ops_pad_window(kiln_ctx *ctx, const gnode *call, kiln_tensor *x, int nsp,
                            const int64_t *pad, double fill) {
    int any = 0;
    for (int i = 0; i < 2 * nsp; i++)
        any |= pad[i] != 0;
    if (!any)
        return x;
    pad_args p = {x, 0, nsp, {0}, {0}, fill};
    memcpy(p.pad, pad, sizeof(int64_t) * 2 * (size_t)nsp);
    p.nd = ops_shape(x, p.dims);
    int64_t sh[KILN_MAX_NDIM];
    memcpy(sh, p.dims, sizeof(int64_t) * (size_t)p.nd);
    for (int d = 0; d < nsp; d++)
        sh[2 + d] = p.dims[2 + d] + pad[d] + pad[nsp + d];
    return ops_compute(ctx, call, ".pad", p.nd, sh, pad_body, &p);
}

kiln_tensor *ops_pad_spatial(kiln_ctx *ctx, const gnode *call, kiln_tensor *x, const int64_t pad[4],
                             double fill) {
    return ops_pad_window(ctx, call, x, 2, pad, fill);
}

/* ---- schedules ------------------------------------------------------------------ */

int64_t ops_cache_bytes(const kiln_target *t, int level, int64_t def) {
    return t && level >= 1 && level <= 3 && t->cache[level - 1] > 0 ? t->cache[level - 1] : def;
}

int64_t ops_reduce_extent(const kiln_tensor *t, int i) {
    const te_dom *dom = te_axis_dom(kiln_tensor_reduce_axis(t, i));
    int64_t e;
    return dom && tir_const_int(dom->extent, &e) ? e : -1;
}

kiln_status ops_schedule_rows(kiln_schedule *s, kiln_tensor *out, int64_t lanes, int n,
                              kiln_tensor *const *stages, const ops_row_kind *kinds,
                              kiln_tensor *producer, int64_t producer_rows) {
    int nd = kiln_tensor_ndim(out);
    kiln_stage *so = kiln_schedule_stage(s, out);
    if (!so || nd < 2)
        return KILN_ERR_INVALID;
    kiln_expr row = kiln_tensor_axis(out, 0), ko, ki, tile = NULL, inner = NULL;
    kiln_status st;
    if (producer && producer_rows > 1) {
        /* tiles of the row axis itself (a tile across two of the leading
           indices would make the producer's region a box over both) */
        if ((st = kiln_split(so, kiln_tensor_axis(out, nd - 2), producer_rows, &tile, &inner)) !=
            KILN_OK)
            return st;
        row = nd > 2 ? kiln_tensor_axis(out, 0) : tile;
        for (int d = 1; d < nd - 2; d++)
            if ((st = kiln_fuse(so, row, kiln_tensor_axis(out, d), &row)) != KILN_OK)
                return st;
        if (nd > 2 && (st = kiln_fuse(so, row, tile, &row)) != KILN_OK)
            return st;
        tile = row;
        row = inner;
    } else {
        for (int d = 1; d < nd - 1; d++)
            if ((st = kiln_fuse(so, row, kiln_tensor_axis(out, d), &row)) != KILN_OK)
                return st;
        tile = row;
    }
    if ((st = kiln_parallel(so, tile)) != KILN_OK ||
        (st = kiln_split(so, kiln_tensor_axis(out, nd - 1), lanes, &ko, &ki)) != KILN_OK ||
        (st = kiln_vectorize(so, ki)) != KILN_OK)
        return st;
    for (int k = 0; k < n; k++) {
        kiln_stage *x = kiln_schedule_stage(s, stages[k]);
        if (!x)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_at(x, so, row)) != KILN_OK ||
            (st = kiln_set_scope(x, "local")) != KILN_OK)
            return st;
        if (kinds[k] == OPS_ROW_SCALAR)
            continue;
        kiln_expr last = kiln_tensor_axis(stages[k], nd - 1), eo, ei;
        if (kinds[k] == OPS_ROW_VECTOR) {
            if ((st = kiln_split(x, last, lanes, &eo, &ei)) != KILN_OK ||
                (st = kiln_vectorize(x, ei)) != KILN_OK)
                return st;
        } else { /* partial results: reduce outside, lanes inside */
            kiln_expr order[2] = {kiln_tensor_reduce_axis(stages[k], 0), last};
            if ((st = kiln_reorder(x, 2, order)) != KILN_OK ||
                (st = kiln_vectorize(x, last)) != KILN_OK)
                return st;
        }
    }
    if (producer) {
        kiln_stage *p = kiln_schedule_stage(s, producer);
        if (!p)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_at(p, so, tile)) != KILN_OK ||
            (st = kiln_set_scope(p, "local")) != KILN_OK)
            return st;
    }
    return KILN_OK;
}

/* The register block: reg_n output pixels by ocb output-channel blocks.
 * Within one reduction step the reg_n * ocb * vecs accumulators stay live,
 * and so do either the reg_n broadcast inputs (channel blocks outer:
 * *pixels_inner = 1) or the ocb weight vectors (pixels outer); all must fit
 * in the nregs vector registers, or the accumulators spill. Among those
 * blocks it takes the one with the lowest cost per useful multiply-add
 * (docs/PERFORMANCE.md), the largest of: the FMA pipes (2 a cycle), the
 * loads (2 a cycle; reg_n + ocb per step for reg_n*ocb multiply-adds), the
 * dependency chains (about 4 cycles of latency over reg_n*ocb*vecs
 * accumulators), and re-reading the weight slice (ocb blocks of
 * block_bytes) from L2 once per block of pixels when it does not fit in L1
 * (about half a vector a cycle). Neither need divide the output: the last
 * block is then cut short, its guards unswitched out of the full blocks
 * (tir_unswitch), and it runs guarded, counted as two blocks; the cost is
 * per useful multiply-add, over the blocks an output needs. Ties go to
 * more accumulators. */
void ops_register_block(int64_t ow, int64_t occ, int64_t vecs, int64_t nregs, int dw,
                        int64_t block_bytes, int64_t l1, int64_t *reg_n, int64_t *ocb,
                        int *pixels_inner) {
    double best = 1e30;
    *reg_n = 1;
    *ocb = 1;
    *pixels_inner = 1;
    for (int64_t r = 1; r <= ow && r <= nregs; r++) {
        for (int64_t o = 1; o <= (dw ? 1 : occ) && o <= 8; o++) {
            int64_t acc = r * o * vecs;
            /* live besides the accumulators: broadcasts (or, depthwise, one
               input vector) with pixels inner; weight vectors with them outer */
            int64_t with_bcast = acc + (dw ? vecs : r) + vecs, with_w = acc + o * vecs + 1;
            if (with_bcast > nregs && with_w > nregs)
                continue;
            double fma = 0.5, loads = (double)(r + o) / (double)(r * o) / 2.0;
            double l2 = o * block_bytes > l1 ? 2.0 / (double)r : 0.0;
            double chains = 4.0 / (double)acc;
            double cost = fma > loads ? fma : loads;
            if (l2 > cost)
                cost = l2;
            if (chains > cost)
                cost = chains;
            /* blocks per output, the one cut short counted twice */
            double nr = (double)(ow / r + 2 * (ow % r != 0)),
                   no = (double)(occ / o + 2 * (occ % o != 0));
            cost *= nr * (double)r / (double)ow * no * (double)o / (double)occ;
            cost -= 1e-4 * (double)acc;
            if (cost < best) {
                best = cost;
                *reg_n = r;
                *ocb = o;
                *pixels_inner = with_bcast <= nregs;
            }
        }
    }
}

int64_t ops_knob(kiln_schedule *s, const char *name, int64_t def, int n, const int64_t *cands) {
    return te_knob_value(s ? s->knobs : NULL, name, def, n, cands);
}

void ops_knob_invalid(kiln_schedule *s) {
    if (s && s->knobs)
        s->knobs->invalid = 1;
}

void ops_register_block_knobs(kiln_schedule *s, const char *prefix, int64_t ow, int64_t occ,
                              int64_t vecs, int64_t nregs, int dw, int64_t block_bytes, int64_t l1,
                              int64_t *reg_n, int64_t *ocb, int *pixels_inner) {
    ops_register_block(ow, occ, vecs, nregs, dw, block_bytes, l1, reg_n, ocb, pixels_inner);
    int64_t c[TE_KNOB_CANDS];
    int n = 0;
    char name[TE_KNOB_NAME];
    for (int64_t r = 1; r <= ow && r <= nregs && n < TE_KNOB_CANDS; r++)
        c[n++] = r;
    snprintf(name, sizeof name, "%s.reg_n", prefix);
    *reg_n = ops_knob(s, name, *reg_n, n, c);
    n = 0;
    for (int64_t o = 1; o <= (dw ? 1 : occ) && o <= 8; o++)
        c[n++] = o;
    snprintf(name, sizeof name, "%s.ocb", prefix);
    *ocb = ops_knob(s, name, *ocb, n, c);
    int64_t two[2] = {0, 1};
    snprintf(name, sizeof name, "%s.pixels_inner", prefix);
    *pixels_inner = (int)ops_knob(s, name, *pixels_inner, 2, two);
    /* the register budget ops_register_block keeps: accumulators and the
       operands live in the chosen order */
    int64_t acc = *reg_n * *ocb * vecs;
    int64_t live = *pixels_inner ? acc + (dw ? vecs : *reg_n) + vecs : acc + *ocb * vecs + 1;
    if (live > nregs)
        ops_knob_invalid(s);
}

kiln_status ops_schedule_accumulators(kiln_stage *sl, kiln_tensor *local, int chan, int pix,
                                      int pixels_inner) {
    kiln_expr order[5 + 8];
    int k = 0, nr = kiln_tensor_num_reduce_axes(local);
    if (kiln_tensor_ndim(local) != 5 || nr > 8)
        return kiln_set_error(KILN_ERR_INVALID,
                              "accumulators: a 5-D stage with at most 8 "
                              "reductions, not %d-D with %d",
                              kiln_tensor_ndim(local), nr);
    for (int i = 0; i < 4; i++)
        if (i != chan && i != pix)
            order[k++] = kiln_tensor_axis(local, i);
    for (int i = 0; i < nr; i++)
        order[k++] = kiln_tensor_reduce_axis(local, i);
    kiln_expr c = kiln_tensor_axis(local, chan), p = kiln_tensor_axis(local, pix),
              lanes = kiln_tensor_axis(local, 4);
    order[k++] = pixels_inner ? c : p;
    order[k++] = pixels_inner ? p : c;
    order[k++] = lanes;
    kiln_status st;
    if ((st = kiln_reorder(sl, k, order)) != KILN_OK || (st = kiln_unroll(sl, c)) != KILN_OK ||
        (st = kiln_unroll(sl, p)) != KILN_OK)
        return st;
    return kiln_vectorize(sl, lanes);
}

/* ---- layouts ---------------------------------------------------------------------- */

const gtensor_type *ops_node_type(const gnode *n) {
    return n->type.known && !n->type.is_tuple && n->type.n == 1 ? &n->type.t[0] : NULL;
}

kiln_ndarray *ops_block_array(const kiln_ndarray *c, const int64_t d4[4], int b, int *bb) {
    int64_t C = d4[1], blk = C == 1 ? 1 : b;
    int64_t dims[5] = {d4[0], (C + blk - 1) / blk, d4[2], d4[3], blk}; /* padding: zeros */
    kiln_ndarray *t = kiln_ndarray_empty(kiln_ndarray_dtype(c), 5, dims);
    if (!t)
        return NULL;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(c));
    const char *src = kiln_ndarray_data(c);
    char *dst = kiln_ndarray_data(t);
    for (int64_t n = 0; n < d4[0]; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t h = 0; h < d4[2]; h++)
                for (int64_t w = 0; w < d4[3]; w++) {
                    int64_t s = ((n * C + ch) * d4[2] + h) * d4[3] + w;
                    int64_t o =
                        ((((n * dims[1] + ch / blk) * d4[2] + h) * d4[3]) + w) * blk + ch % blk;
                    memcpy(dst + o * (int64_t)es, src + s * (int64_t)es, es);
                }
    if (bb)
        *bb = (int)blk;
    return t;
}

int ops_int8_dot(const kiln_target *t, kiln_dtype *wdt) {
    if (t->arch == TGT_X86_64 && !target_has(t, TGT_AVX512VNNI) && !target_has(t, TGT_AVXVNNI) &&
        target_has(t, TGT_AVX2)) {
        *wdt = KILN_INT16;
        return 2;
    }
    *wdt = KILN_INT8;
    return 4;
}

int ops_int8_fast(const kiln_target *t) {
    if (t->arch == TGT_X86_64)
        return target_has(t, TGT_AVX512VNNI) || target_has(t, TGT_AVXVNNI);
    return target_has(t, TGT_DOTPROD) || target_has(t, TGT_I8MM);
}
