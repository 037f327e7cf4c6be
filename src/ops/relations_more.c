/* relations_more.c: the type relations of the reductions (sum, mean, max,
 * argmax, ...), layer normalization, batched matmul and the indexing ops
 * (strided_slice, take, broadcast_to, nn.pad), and the attribute helpers
 * their computes share. */
#include <stdio.h>
#include <string.h>

#include "relations.h"

#define REQUIRE_KNOWN(n)                                                               \
    for (int i_ = 0; i_ < (n); i_++)                                                   \
        if (!in[i_]->known) return REL_INCOMPLETE;

static int is_int_dtype(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_INT32 || dt == KILN_INT64;
}

/* ---- shared attribute helpers ------------------------------------------------- */

int ops_reduce_mask(const gnode *call, int ndim, int *mask) {
    int64_t ax[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "axis", ax, KILN_MAX_NDIM + 1);
    int exclude = graph_attr_int(call, "exclude", 0) != 0;
    if (n > KILN_MAX_NDIM) {
        ops_fail("axis has more than %d entries", KILN_MAX_NDIM);
        return -1;
    }
    for (int d = 0; d < ndim; d++) mask[d] = n <= 0 ? 1 : exclude;
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

void ops_slice_axis(int64_t n, int64_t b, int64_t e, int64_t s, int64_t *start, int64_t *len) {
    if (b < 0) b += n;
    if (e < 0) e += n;
    if (s > 0) {
        b = b < 0 ? 0 : b > n ? n : b;
        e = e < 0 ? 0 : e > n ? n : e;
        *len = e > b ? (e - b + s - 1) / s : 0;
    } else {
        b = b < 0 ? 0 : b > n - 1 ? n - 1 : b; /* ONNX clamps to [0, n-1] */
        e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
        *len = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    *start = *len ? b : 0;
}

int ops_slice_params(const gnode *call, int nd, const int64_t *dims, int64_t *start, int64_t *step,
                     int64_t *len) {
    int64_t b[KILN_MAX_NDIM + 1], e[KILN_MAX_NDIM + 1], s[KILN_MAX_NDIM + 1],
        ax[KILN_MAX_NDIM + 1];
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
        if (a < 0) a += nd;
        if (a < 0 || a >= nd || seen[a]++) {
            ops_fail("slice axis %lld is out of range or repeated", (long long)(na >= 0 ? ax[i] : i));
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

/* ---- reductions ------------------------------------------------------------------ */

rel_result rel_reduce(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                      gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    if (x->dtype == KILN_BOOL) return ops_fail("cannot reduce a bool tensor");
    int mask[KILN_MAX_NDIM];
    if (ops_reduce_mask(call, x->ndim, mask) < 0) return REL_ERROR;
    int keep = graph_attr_int(call, "keepdims", 0) != 0;
    gtensor_type res = {x->dtype, 0, {{0, NULL}}};
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d]) res.dims[res.ndim++] = x->dims[d];
        else if (keep) res.dims[res.ndim++] = (gdim){1, NULL};
        else continue;
        if (mask[d] && x->dims[d].sym && !strcmp(call->op->name, "mean"))
            return ops_fail("mean over the symbolic dim '%s'", x->dims[d].sym);
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_arg_reduce(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    if (x->ndim < 1) return ops_fail("needs at least 1 dim");
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0) axis += x->ndim;
    if (x->dims[axis].sym) return ops_fail("the reduced axis must not be symbolic");
    int keep = graph_attr_int(call, "keepdims", 1) != 0;
    gtensor_type res = {KILN_INT64, 0, {{0, NULL}}};
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) res.dims[res.ndim++] = x->dims[d];
        else if (keep) res.dims[res.ndim++] = (gdim){1, NULL};
    }
    return ops_set_out(g, out, &res);
}

/* A parameter that broadcasts onto x, right-aligned, within dims [from, nd). */
static rel_result check_param(const gtensor_type *x, const gtensor_type *p, int from,
                              const char *what) {
    if (p->dtype != x->dtype)
        return ops_fail("%s is %s but the data is %s", what, kiln_dtype_name(p->dtype),
                        kiln_dtype_name(x->dtype));
    if (p->ndim > x->ndim) return ops_fail("%s has more dims than the data", what);
    for (int k = 0; k < p->ndim; k++) {
        int d = k + x->ndim - p->ndim;
        gdim pd = p->dims[k];
        if (!pd.sym && pd.v == 1) continue;
        if (d < from || !gdim_equal(pd, x->dims[d]))
            return ops_fail("%s does not broadcast to the normalized dims (dim %d)", what, k);
    }
    return REL_OK;
}

rel_result rel_layer_norm(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    if (x->dtype != KILN_FLOAT32 && x->dtype != KILN_FLOAT64 && x->dtype != KILN_FLOAT16)
        return ops_fail("needs a float input, not %s", kiln_dtype_name(x->dtype));
    if (x->ndim < 1) return ops_fail("needs at least 1 dim");
    int64_t axis = graph_attr_int(call, "axis", -1);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0) axis += x->ndim;
    if (!ops_all_known(x, (int)axis, x->ndim)) return ops_fail("the normalized dims must not be symbolic");
    for (int i = 1; i < call->nin; i++) {
        const gtensor_type *p = ops_tensor_in(in[i], i, &r);
        if (!p) return r;
        if ((r = check_param(x, p, (int)axis, i == 1 ? "gamma" : "beta")) != REL_OK) return r;
    }
    return ops_set_out(g, out, x);
}

/* ---- matmul ------------------------------------------------------------------------ */

rel_result rel_batch_matmul(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r), *b = a ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!b) return r;
    if (a->ndim < 2 || b->ndim < 2)
        return ops_fail("both inputs must have rank >= 2, got %d-D and %d-D", a->ndim, b->ndim);
    if (a->dtype != b->dtype)
        return ops_fail("input 0 is %s but input 1 is %s", kiln_dtype_name(a->dtype),
                        kiln_dtype_name(b->dtype));
    int ta = graph_attr_int(call, "transpose_a", 0) != 0, tb = graph_attr_int(call, "transpose_b", 0) != 0;
    gdim m = a->dims[a->ndim - 2 + ta], ka = a->dims[a->ndim - 1 - ta];
    gdim kb = b->dims[b->ndim - 2 + tb], n = b->dims[b->ndim - 1 - tb];
    if (!gdim_equal(ka, kb)) {
        char s1[64], s2[64];
        ops_dim_str(ka, s1, sizeof s1);
        ops_dim_str(kb, s2, sizeof s2);
        return ops_fail("the reduced dims differ: %s in input 0, %s in input 1", s1, s2);
    }
    gtensor_type ba = *a, bb = *b, res;
    ba.ndim -= 2;
    bb.ndim -= 2;
    const gtensor_type *ts[2] = {&ba, &bb};
    if ((r = ops_broadcast(2, ts, 0, &res)) != REL_OK) return r;
    if (res.ndim + 2 > KILN_MAX_NDIM) return ops_fail("too many dims");
    res.dims[res.ndim++] = m;
    res.dims[res.ndim++] = n;
    return ops_set_out(g, out, &res);
}

/* ---- indexing ------------------------------------------------------------------------- */

rel_result rel_strided_slice(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t dims[KILN_MAX_NDIM], start[KILN_MAX_NDIM], step[KILN_MAX_NDIM], len[KILN_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++) dims[d] = x->dims[d].sym ? -1 : x->dims[d].v;
    if (ops_slice_params(call, x->ndim, dims, start, step, len) < 0) return REL_ERROR;
    gtensor_type res = *x;
    for (int d = 0; d < x->ndim; d++)
        if (!x->dims[d].sym) res.dims[d].v = len[d];
    return ops_set_out(g, out, &res);
}

rel_result rel_take(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                    gtype *out) {
    REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *ix = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!ix) return r;
    if (!is_int_dtype(ix->dtype))
        return ops_fail("indices must be integers, not %s", kiln_dtype_name(ix->dtype));
    int64_t axis = graph_attr_int(call, "axis", 0);
    if (axis < -x->ndim || axis >= x->ndim)
        return ops_fail("axis %lld is out of range for a %d-D input", (long long)axis, x->ndim);
    if (axis < 0) axis += x->ndim;
    if (x->dims[axis].sym) return ops_fail("the indexed axis must not be symbolic");
    if (x->dims[axis].v == 0) return ops_fail("cannot take from an empty axis");
    if (x->ndim - 1 + ix->ndim > KILN_MAX_NDIM) return ops_fail("too many dims");
    gtensor_type res = {x->dtype, 0, {{0, NULL}}};
    for (int d = 0; d < axis; d++) res.dims[res.ndim++] = x->dims[d];
    for (int d = 0; d < ix->ndim; d++) res.dims[res.ndim++] = ix->dims[d];
    for (int d = (int)axis + 1; d < x->ndim; d++) res.dims[res.ndim++] = x->dims[d];
    return ops_set_out(g, out, &res);
}

rel_result rel_broadcast_to(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
    int64_t sh[KILN_MAX_NDIM + 1];
    int n = graph_attr_ints(call, "shape", sh, KILN_MAX_NDIM + 1);
    if (n < 0 || n > KILN_MAX_NDIM) return ops_fail("shape must have 0 to %d dims", KILN_MAX_NDIM);
    if (n < x->ndim) return ops_fail("shape has %d dims, fewer than the input's %d", n, x->ndim);
    gtensor_type res = {x->dtype, n, {{0, NULL}}};
    for (int d = 0; d < n; d++) {
        if (sh[d] < 0) return ops_fail("shape[%d] = %lld is negative", d, (long long)sh[d]);
        res.dims[d].v = sh[d];
        int k = d - (n - x->ndim);
        if (k < 0) continue;
        gdim xd = x->dims[k];
        if (xd.sym) return ops_fail("dim %d of the input is symbolic", k);
        if (xd.v != 1 && xd.v != sh[d])
            return ops_fail("dim %d of size %lld cannot broadcast to %lld", k, (long long)xd.v,
                            (long long)sh[d]);
    }
    return ops_set_out(g, out, &res);
}

rel_result rel_pad(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                   gtype *out) {
    REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x) return r;
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
        if (!b && !a) continue;
        if (x->dims[d].sym) return ops_fail("the padded dim %d must not be symbolic", d);
        int64_t v = x->dims[d].v + b + a;
        if (v < 0) return ops_fail("dim %d: the pads remove more than the dim", d);
        if (strcmp(mode, "constant") && (b < 0 || a < 0))
            return ops_fail("negative pads need pad_mode constant");
        if (x->dims[d].v == 0) return ops_fail("cannot pad the empty dim %d", d);
        res.dims[d].v = v;
    }
    return ops_set_out(g, out, &res);
}
