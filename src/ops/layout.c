/* layout.c: layout_transform, the relayout between NCHW and the blocked
 * NCHW[x]c that AlterOpLayout inserts at the edges of a blocked region (a
 * last block past the logical channels is zeros). An injective op like
 * those of transform.c, with a family of its own. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

static const attr_schema layout_transform_attrs[] = {{"src_layout", GA_STR, 1, NULL},
                                                     {"dst_layout", GA_STR, 1, NULL},
                                                     {"channels", GA_INT, 0, "0"},
                                                     {NULL, 0, 0, NULL}};

/* ---- layout_transform ----------------------------------------------------------- */

static int layouts(const gnode *call, int *src, int *dst) {
    const char *s = graph_attr_str(call, "src_layout", NULL);
    const char *d = graph_attr_str(call, "dst_layout", NULL);
    *src = ops_layout_block(s);
    *dst = ops_layout_block(d);
    if (*src < 0 || *dst < 0) {
        ops_fail("layout_transform supports NCHW and NCHW[x]c, not '%s' -> '%s'", s ? s : "?",
                 d ? d : "?");
        return 0;
    }
    return 1;
}

/* The logical channel count of layout_transform's input: attribute
 * `channels` where a blocked input's last block is padded, else all of
 * its (n blocks of sb, or n plain) channels. */
static int64_t lt_channels(const gnode *call, int64_t n, int sb) {
    int64_t c = graph_attr_int(call, "channels", 0);
    return c ? c : sb ? n * sb : n;
}

static rel_result rel_layout_transform(const struct kiln_graph *g, const gnode *call,
                                       const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    int sb, db;
    if (!layouts(call, &sb, &db))
        return REL_ERROR;
    if (x->ndim != (sb ? 5 : 4))
        return ops_fail("data in %s must be %d-D, got %d-D", graph_attr_str(call, "src_layout", ""),
                        sb ? 5 : 4, x->ndim);
    if (!ops_all_known(x, 1, x->ndim))
        return ops_fail("only the batch dim may be symbolic");
    if (sb && x->dims[4].v != sb)
        return ops_fail("the last dim is %lld, not the block %d", (long long)x->dims[4].v, sb);
    int64_t c = lt_channels(call, x->dims[1].v, sb);
    if (!sb && c != x->dims[1].v)
        return ops_fail("channels=%lld is not the NCHW input's %lld channels", (long long)c,
                        (long long)x->dims[1].v);
    /* dims are at most 2^48 (GRAPH_MAX_ELEMENTS) and blocks at most 4096 */
    if (c < 1 || (sb && (c > x->dims[1].v * sb || c <= (x->dims[1].v - 1) * sb)))
        return ops_fail("channels=%lld does not fit %lld blocks of %d", (long long)c,
                        (long long)x->dims[1].v, sb);
    gtensor_type res = *x;
    res.ndim = db ? 5 : 4;
    res.dims[1] = (gdim){db ? (c + db - 1) / db : c, NULL};
    if (db)
        res.dims[4] = (gdim){db, NULL};
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x;
    int sb, db;
    int64_t c; /* logical channels: a padded last block reads zeros past them */
} lt_args;

static kiln_expr lt_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    lt_args *a = u;
    kiln_expr c = a->db ? kiln_add(kiln_mul(i[1], ops_int(ctx, a->db)), i[4]) : i[1];
    int pad = a->db && a->c % a->db;
    kiln_expr cc = pad ? kiln_min(c, ops_int(ctx, a->c - 1)) : c; /* in bounds */
    kiln_expr ix[5] = {i[0], cc, i[2], i[3], NULL};
    if (a->sb) {
        ix[1] = kiln_floordiv(cc, ops_int(ctx, a->sb));
        ix[4] = kiln_floormod(cc, ops_int(ctx, a->sb));
    }
    kiln_expr v = kiln_tensor_at(a->x, a->sb ? 5 : 4, ix);
    if (!pad)
        return v;
    return kiln_select(kiln_lt(c, ops_int(ctx, a->c)), v,
                       ops_const(ctx, kiln_tensor_dtype(a->x), 0));
}

static kiln_status compute_layout_transform(kiln_ctx *ctx, const gnode *call,
                                            kiln_tensor *const *in, kiln_tensor **out) {
    lt_args a = {in[0], 0, 0, 0};
    if (!layouts(call, &a.sb, &a.db))
        return KILN_ERR_INVALID;
    int64_t xd[5];
    ops_shape(in[0], xd);
    a.c = lt_channels(call, xd[1], a.sb);
    int64_t od[5];
    int nd = ops_out_shape(call, od);
    out[0] = ops_compute(ctx, call, "", nd, od, lt_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_layout_rows[] = {
    OPS_SYM_ROW("layout_transform", 1, 1, layout_transform_attrs, rel_layout_transform,
                compute_layout_transform, OP_INJECTIVE,
                "NCHW <-> NCHW[x]c; a last block past `channels` is zeros"),
};

const int ops_layout_count = (int)(sizeof ops_layout_rows / sizeof ops_layout_rows[0]);
