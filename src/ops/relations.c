/* relations.c: the type relations of the built-in ops: given the input
 * types and the attributes, the output type, or REL_INCOMPLETE while an
 * input type is unknown. Symbolic dims (a dynamic batch) pass through ops
 * that do not compute with them; where an op must compute with a symbolic
 * dim, the relation says so. */
#include <stdio.h>
#include <string.h>

#include "relations.h"

#define REQUIRE_KNOWN(n)                                                               \
    for (int i_ = 0; i_ < (n); i_++)                                                   \
        if (!in[i_]->known) return REL_INCOMPLETE;

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

rel_result ops_set_out(const struct kiln_graph *g, gtype *out, const gtensor_type *t) {
    *out = gtype_tensor((struct kiln_graph *)g, t->dtype, t->ndim, t->dims);
    return REL_OK;
}

void ops_dim_str(gdim d, char *buf, size_t cap) {
    if (d.sym)
        snprintf(buf, cap, "%s", d.sym);
    else
        snprintf(buf, cap, "%lld", (long long)d.v);
}

/* ---- elementwise and broadcasting -------------------------------------------- */

rel_result rel_identity(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                        gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    return a ? ops_set_out(g, out, a) : r;
}

rel_result rel_float_unary(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    if (!a) return r;
    if (a->dtype != KILN_FLOAT32 && a->dtype != KILN_FLOAT64 && a->dtype != KILN_FLOAT16)
        return ops_fail("needs a float input, not %s", kiln_dtype_name(a->dtype));
    return ops_set_out(g, out, a);
}

/* numpy broadcasting of n tensor types into *res (dtype from `dt_from`). */
rel_result ops_broadcast(int n, const gtensor_type *const *ts, int dt_from, gtensor_type *res) {
    int nd = 0;
    for (int i = 0; i < n; i++) nd = ts[i]->ndim > nd ? ts[i]->ndim : nd;
    res->ndim = nd;
    res->dtype = ts[dt_from]->dtype;
    for (int d = 0; d < nd; d++) {
        gdim r = {1, NULL};
        for (int i = 0; i < n; i++) {
            int k = d - (nd - ts[i]->ndim);
            if (k < 0) continue;
            gdim x = ts[i]->dims[k];
            if (!x.sym && x.v == 1) continue;
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

static rel_result broadcast_rel(const struct kiln_graph *g, int n, const gtype *const *in,
                                int first_value, int same_dtype_from, kiln_dtype force,
                                gtype *out) {
    REQUIRE_KNOWN(n);
    const gtensor_type *ts[8];
    rel_result r = REL_OK;
    for (int i = 0; i < n; i++)
        if (!(ts[i] = ops_tensor_in(in[i], i, &r))) return r;
    for (int i = same_dtype_from + 1; i < n; i++)
        if (ts[i]->dtype != ts[same_dtype_from]->dtype)
            return ops_fail("input %d is %s but input %d is %s", same_dtype_from,
                        kiln_dtype_name(ts[same_dtype_from]->dtype), i,
                        kiln_dtype_name(ts[i]->dtype));
    gtensor_type res;
    if ((r = ops_broadcast(n, ts, first_value, &res)) != REL_OK) return r;
    if ((int)force >= 0) res.dtype = force;
    return ops_set_out(g, out, &res);
}

rel_result rel_broadcast(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                         gtype *out) {
    return broadcast_rel(g, 2, in, 0, 0, (kiln_dtype)-1, out);
}

rel_result rel_compare(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                       gtype *out) {
    return broadcast_rel(g, 2, in, 0, 0, KILN_BOOL, out);
}

rel_result rel_logic(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                     gtype *out) {
    REQUIRE_KNOWN(call->nin);
    for (int i = 0; i < call->nin; i++)
        if (!in[i]->is_tuple && in[i]->t[0].dtype != KILN_BOOL)
            return ops_fail("input %d must be bool, not %s", i, kiln_dtype_name(in[i]->t[0].dtype));
    return call->nin == 1 ? rel_identity(g, call, in, out)
                          : broadcast_rel(g, 2, in, 0, 0, KILN_BOOL, out);
}

rel_result rel_where(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                     gtype *out) {
    REQUIRE_KNOWN(3);
    if (!in[0]->is_tuple && in[0]->t[0].dtype != KILN_BOOL)
        return ops_fail("the condition must be bool, not %s", kiln_dtype_name(in[0]->t[0].dtype));
    return broadcast_rel(g, 3, in, 1, 1, (kiln_dtype)-1, out);
}

rel_result rel_cast(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                    gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    if (!a) return r;
    kiln_dtype dt;
    const char *name = graph_attr_str(call, "dtype", "");
    if (kiln_dtype_parse(name, &dt) != KILN_OK || dt == KILN_HANDLE)
        return ops_fail("cast to unknown dtype '%s'", name);
    gtensor_type res = *a;
    res.dtype = dt;
    return ops_set_out(g, out, &res);
}

/* ---- nn --------------------------------------------------------------------- */

int ops_all_known(const gtensor_type *t, int from, int to) {
    for (int d = from; d < to; d++)
        if (t->dims[d].sym) return 0;
    return 1;
}

/* out = floor((in + pads - dil*(k-1) - 1) / stride) + 1, or ceil with ceil_mode */
static int64_t window_out(int64_t in, int64_t pad, int64_t k, int64_t stride, int64_t dil,
                          int ceil_mode) {
    int64_t span = in + pad - dil * (k - 1) - 1;
    if (span < 0) return -1;
    return (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
}

/* Read a 2-element attribute (or one value repeated), >= minv. */
static int attr2(const gnode *call, const char *name, int64_t def, int64_t minv, int64_t v[2]) {
    int64_t buf[4];
    int n = graph_attr_ints(call, name, buf, 4);
    if (n < 0) {
        v[0] = v[1] = def;
    } else if (n == 1) {
        v[0] = v[1] = buf[0];
    } else if (n == 2) {
        v[0] = buf[0];
        v[1] = buf[1];
    } else {
        ops_fail("attribute %s must have 2 values, has %d", name, n);
        return 0;
    }
    if (v[0] < minv || v[1] < minv) {
        ops_fail("attribute %s must be >= %lld", name, (long long)minv);
        return 0;
    }
    return 1;
}

/* padding: 1 value, 2 (h, w) or 4 (top, left, bottom, right). Sums per axis. */
static int pad2(const gnode *call, int64_t p[2]) {
    int64_t buf[4];
    int n = graph_attr_ints(call, "padding", buf, 4);
    if (n < 0 || n == 0) {
        p[0] = p[1] = 0;
    } else if (n == 1) {
        p[0] = p[1] = 2 * buf[0];
    } else if (n == 2) {
        p[0] = 2 * buf[0];
        p[1] = 2 * buf[1];
    } else if (n == 4) {
        p[0] = buf[0] + buf[2];
        p[1] = buf[1] + buf[3];
    } else {
        ops_fail("attribute padding must have 1, 2 or 4 values, has %d", n);
        return 0;
    }
    for (int i = 0; i < (n < 0 ? 0 : n); i++)
        if (buf[i] < 0) return ops_fail("padding must not be negative"), 0;
    return 1;
}

rel_result rel_conv2d(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                      gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w) return r;
    if (x->ndim != 4 || w->ndim != 4)
        return ops_fail("data and weight must be 4-D (NCHW, OIHW), got %d-D and %d-D", x->ndim,
                    w->ndim);
    if (x->dtype != w->dtype)
        return ops_fail("data is %s but weight is %s", kiln_dtype_name(x->dtype),
                    kiln_dtype_name(w->dtype));
    if (!ops_all_known(x, 1, 4) || !ops_all_known(w, 0, 4))
        return ops_fail("only the batch dim may be symbolic");
    int64_t s[2], d[2], p[2];
    if (!attr2(call, "strides", 1, 1, s) || !attr2(call, "dilation", 1, 1, d) || !pad2(call, p))
        return REL_ERROR;
    int64_t groups = graph_attr_int(call, "groups", 1);
    if (groups < 1 || x->dims[1].v % groups || w->dims[0].v % groups)
        return ops_fail("groups=%lld must divide input channels %lld and output channels %lld",
                    (long long)groups, (long long)x->dims[1].v, (long long)w->dims[0].v);
    if (w->dims[1].v * groups != x->dims[1].v)
        return ops_fail("weight has %lld input channels per group, data has %lld channels in %lld "
                    "groups",
                    (long long)w->dims[1].v, (long long)x->dims[1].v, (long long)groups);
    gtensor_type res = *x;
    res.dims[1] = w->dims[0];
    for (int i = 0; i < 2; i++) {
        int64_t o = window_out(x->dims[2 + i].v, p[i], w->dims[2 + i].v, s[i], d[i], 0);
        if (o < 1) return ops_fail("the kernel is larger than the padded input");
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_pool2d(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                      gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int blk = ops_layout_block(graph_attr_str(call, "layout", "NCHW"));
    if (blk < 0) return ops_fail("layout must be NCHW or NCHW[x]c");
    if (x->ndim != (blk ? 5 : 4))
        return ops_fail("data must be %d-D %s, got %d-D", blk ? 5 : 4, blk ? "NCHW[x]c" : "NCHW",
                        x->ndim);
    if (blk && x->dims[4].v != blk) return ops_fail("data's last dim is not the block %d", blk);
    if (!ops_all_known(x, 2, 4)) return ops_fail("spatial dims must not be symbolic");
    int64_t k[2], s[2], d[2], p[2];
    if (!attr2(call, "pool_size", 1, 1, k) || !attr2(call, "strides", 1, 1, s) ||
        !attr2(call, "dilation", 1, 1, d) || !pad2(call, p))
        return REL_ERROR;
    int ceil_mode = graph_attr_int(call, "ceil_mode", 0) != 0;
    gtensor_type res = *x;
    for (int i = 0; i < 2; i++) {
        int64_t o = window_out(x->dims[2 + i].v, p[i], k[i], s[i], d[i], ceil_mode);
        if (o < 1) return ops_fail("the window is larger than the padded input");
        res.dims[2 + i] = (gdim){o, NULL};
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_global_pool2d(const struct kiln_graph *g, const gnode *call,
                             const gtype *const *in, gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    if (x->ndim < 3) return ops_fail("data must be at least 3-D (N, C, spatial...), got %d-D", x->ndim);
    int blk = ops_layout_block(graph_attr_str(call, "layout", "NCHW"));
    if (blk < 0) return ops_fail("layout must be NCHW or NCHW[x]c");
    if (blk && (x->ndim != 5 || x->dims[4].v != blk))
        return ops_fail("data in NCHW%dc must be 5-D with the block last", blk);
    gtensor_type res = *x;
    for (int i = 2; i < x->ndim - (blk > 0); i++) res.dims[i] = (gdim){1, NULL};
    return ops_set_out(g, out, &res);
}

rel_result rel_dense(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                     gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w) return r;
    /* weight_layout "NK" is Relay's [units, in]; "KN" is [in, units]; "NC[x]n"
       is [units/x, in, x], the panels AlterOpLayout packs constant weights into */
    const char *layout = graph_attr_str(call, "weight_layout", "NK");
    int nr = ops_dense_layout(layout);
    if (nr < 0) return ops_fail("weight_layout '%s' is not NK, KN or NC[x]n", layout);
    int kn = nr == 0 && !strcmp(layout, "KN");
    if (x->ndim < 1 || w->ndim != (nr ? 3 : 2))
        return ops_fail("dense needs data of rank >= 1 and a %d-D weight (%s), got %d-D and %d-D",
                        nr ? 3 : 2, layout, x->ndim, w->ndim);
    if (x->dtype != w->dtype)
        return ops_fail("data is %s but weight is %s", kiln_dtype_name(x->dtype),
                    kiln_dtype_name(w->dtype));
    if (nr && (w->dims[2].sym || w->dims[2].v != nr || w->dims[0].sym))
        return ops_fail("weight in %s must be [units/%d, in, %d]", layout, nr, nr);
    gdim kdim = w->dims[nr ? 1 : kn ? 0 : 1];
    if (!gdim_equal(x->dims[x->ndim - 1], kdim)) {
        char a[64], b[64];
        ops_dim_str(x->dims[x->ndim - 1], a, sizeof a);
        ops_dim_str(kdim, b, sizeof b);
        return ops_fail("data has %s features but the weight expects %s", a, b);
    }
    gtensor_type res = *x;
    res.dims[x->ndim - 1] = nr ? (gdim){w->dims[0].v * nr, NULL} : w->dims[kn ? 1 : 0];
    return ops_set_out(g, out, &res);
}

rel_result rel_bias_add(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                        gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *b = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!b) return r;
    int64_t axis = graph_attr_int(call, "axis", 1);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return ops_fail("axis is out of range for a %d-D input", x->ndim);
    if (b->ndim != 1 || !gdim_equal(b->dims[0], x->dims[axis]))
        return ops_fail("bias must be 1-D with the size of axis %lld", (long long)axis);
    if (b->dtype != x->dtype) return ops_fail("bias dtype differs from data dtype");
    return ops_set_out(g, out, x);
}

rel_result rel_softmax(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                       gtype *out) {
    rel_result r = rel_float_unary(g, call, in, out);
    if (r != REL_OK) return r;
    int64_t axis = graph_attr_int(call, "axis", -1), nd = in[0]->t[0].ndim;
    if (axis < -nd || axis >= nd) return ops_fail("axis %lld is out of range", (long long)axis);
    return REL_OK;
}

rel_result rel_batch_norm(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    REQUIRE_KNOWN(5);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t axis = graph_attr_int(call, "axis", 1);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return ops_fail("axis is out of range");
    for (int i = 1; i < 5; i++) {
        const gtensor_type *p = ops_tensor_in(in[i], i, &r);
        if (!p) return r;
        if (p->ndim != 1 || !gdim_equal(p->dims[0], x->dims[axis]))
            return ops_fail("input %d must be 1-D with the channel count", i);
    }
    return ops_set_out(g, out, x);
}

/* ---- layout ----------------------------------------------------------------- */

rel_result rel_reshape(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                       gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t ns[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "newshape", ns, KILN_MAX_NDIM + 1);
    if (n < 0 || n > KILN_MAX_NDIM) return ops_fail("newshape must have 0 to %d dims", KILN_MAX_NDIM);
    if (!ops_all_known(x, 0, x->ndim)) return ops_fail("symbolic dims are not supported by reshape yet");
    int64_t total = 1, known = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!kiln_mul_ok(total, x->dims[d].v, &total)) return ops_fail("size overflow");
    gtensor_type res = {x->dtype, n, {{0, NULL}}};
    int infer = -1;
    for (int d = 0; d < n; d++) {
        int64_t v = ns[d];
        if (v == 0) {
            if (d >= x->ndim) return ops_fail("newshape[%d] is 0 but the input has %d dims", d, x->ndim);
            v = x->dims[d].v;
        } else if (v == -1) {
            if (infer >= 0) return ops_fail("newshape has more than one -1");
            infer = d;
            continue;
        } else if (v < -1) {
            return ops_fail("newshape[%d] = %lld is invalid", d, (long long)v);
        }
        res.dims[d].v = v;
        if (!kiln_mul_ok(known, v, &known)) return ops_fail("size overflow");
    }
    if (infer >= 0) {
        if (known == 0 || total % known) return ops_fail("cannot infer the -1 dim of newshape");
        res.dims[infer].v = total / known;
    } else if (known != total) {
        return ops_fail("newshape has %lld elements, the input %lld", (long long)known,
                    (long long)total);
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_transpose(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                         gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t ax[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "axes", ax, KILN_MAX_NDIM + 1);
    gtensor_type res = *x;
    if (n < 0 || n == 0) {
        for (int d = 0; d < x->ndim; d++) res.dims[d] = x->dims[x->ndim - 1 - d];
        return ops_set_out(g, out, &res);
    }
    if (n != x->ndim) return ops_fail("axes has %d entries for a %d-D input", n, x->ndim);
    int seen[KILN_MAX_NDIM] = {0};
    for (int d = 0; d < n; d++) {
        int64_t a = ax[d] < 0 ? ax[d] + n : ax[d];
        if (a < 0 || a >= n || seen[a]++) return ops_fail("axes is not a permutation");
        res.dims[d] = x->dims[a];
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_batch_flatten(const struct kiln_graph *g, const gnode *call,
                             const gtype *const *in, gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    if (x->ndim < 1) return ops_fail("needs at least 1 dim");
    if (!ops_all_known(x, 1, x->ndim)) return ops_fail("only the batch dim may be symbolic");
    int64_t rest = 1;
    for (int d = 1; d < x->ndim; d++)
        if (!kiln_mul_ok(rest, x->dims[d].v, &rest)) return ops_fail("size overflow");
    gtensor_type res = {x->dtype, 2, {x->dims[0], {rest, NULL}}};
    return ops_set_out(g, out, &res);
}

rel_result rel_concatenate(const struct kiln_graph *g, const gnode *call,
                           const gtype *const *in, gtype *out) {
    REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return ops_fail("axis is out of range for a %d-D input", x->ndim);
    gtensor_type res = *x;
    for (int i = 1; i < call->nin; i++) {
        const gtensor_type *y = ops_tensor_in(in[i], i, &r);
        if (!y) return r;
        if (y->ndim != x->ndim || y->dtype != x->dtype)
            return ops_fail("input %d has rank %d and dtype %s, input 0 rank %d and %s", i, y->ndim,
                        kiln_dtype_name(y->dtype), x->ndim, kiln_dtype_name(x->dtype));
        for (int d = 0; d < x->ndim; d++) {
            if (d == axis) continue;
            if (!gdim_equal(x->dims[d], y->dims[d]))
                return ops_fail("input %d differs from input 0 in dim %d", i, d);
        }
        if (res.dims[axis].sym || y->dims[axis].sym)
            return ops_fail("the concatenated axis must not be symbolic");
        res.dims[axis].v += y->dims[axis].v;
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_split(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                     gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < 0) axis += x->ndim;
    if (axis < 0 || axis >= x->ndim) return ops_fail("axis is out of range for a %d-D input", x->ndim);
    if (x->dims[axis].sym) return ops_fail("the split axis must not be symbolic");
    int64_t len = x->dims[axis].v, bounds[65];
    int np;
    const gattr *a = graph_attr(call, "indices_or_sections");
    if (!a) return ops_fail("attribute indices_or_sections is missing");
    if (a->kind == GA_INT) {
        if (a->i < 1 || a->i > 64 || len % a->i)
            return ops_fail("%lld sections do not divide the axis of length %lld", (long long)a->i,
                        (long long)len);
        np = (int)a->i;
        for (int i = 0; i <= np; i++) bounds[i] = len / np * i;
    } else if (a->kind == GA_INTS) {
        if (a->n > 63) return ops_fail("too many split indices");
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
    out->known = 1;
    out->is_tuple = 1;
    out->n = np;
    out->t = arena_alloc(g->arena, sizeof(gtensor_type) * (size_t)np);
    for (int i = 0; i < np; i++) {
        out->t[i] = *x;
        out->t[i].dims[axis].v = bounds[i + 1] - bounds[i];
    }
    return REL_OK;
}
