/* depth_space.c: depth_to_space (DCR and CRD) and space_to_depth, ONNX's
 * DepthToSpace and SpaceToDepth on NCHW tensors: injective ops that move
 * block_size^2 channels to as many pixels and back. Each output element
 * reads one input element at an index derived from its own. */
#include <string.h>

#include "ops.h"

static const attr_schema depth_to_space_attrs[] = {
    {"block_size", GA_INT, 1, NULL}, {"mode", GA_STR, 0, "\"DCR\""}, {NULL, 0, 0, NULL}};
static const attr_schema space_to_depth_attrs[] = {{"block_size", GA_INT, 1, NULL},
                                                   {NULL, 0, 0, NULL}};

/* ---- depth_to_space, space_to_depth ------------------------------------------------------ */

enum { TO_SPACE, TO_DEPTH };

/* NCHW: depth_to_space moves blocks of b x b channels into b x b pixels,
 * space_to_depth the reverse. */
static rel_result rel_depth_space(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim != 4 || !ops_all_known(x, 1, 4))
        return ops_fail("needs a 4-D NCHW input with concrete C, H and W");
    int64_t b = graph_attr_int(call, "block_size", 0), bb;
    if (b < 1 || !kiln_mul_ok(b, b, &bb))
        return ops_fail("block_size %lld must be positive", (long long)b);
    const char *mode = graph_attr_str(call, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return ops_fail("mode '%s' is not DCR or CRD", mode);
    gtensor_type res = *x;
    int64_t c = x->dims[1].v, h = x->dims[2].v, w = x->dims[3].v;
    if (call->op->variant == TO_SPACE) {
        if (c % bb)
            return ops_fail("%lld channels are not a multiple of block_size^2 = %lld", (long long)c,
                            (long long)bb);
        res.dims[1].v = c / bb;
        if (!kiln_mul_ok(h, b, &res.dims[2].v) || !kiln_mul_ok(w, b, &res.dims[3].v))
            return ops_fail("the output size overflows int64");
    } else {
        if (h % b || w % b)
            return ops_fail("H = %lld and W = %lld must be multiples of block_size %lld",
                            (long long)h, (long long)w, (long long)b);
        if (!kiln_mul_ok(c, bb, &res.dims[1].v))
            return ops_fail("the output size overflows int64");
        res.dims[2].v = h / b;
        res.dims[3].v = w / b;
    }
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x;
    int64_t b, c; /* the block; the channels of the side with fewer (out or in) */
    int variant, crd;
} ds_args;

/* The channel of a block offset (bh, bw) and a plain channel c of the side
 * with fewer channels: DCR (and space_to_depth) (bh * b + bw) * C + c, CRD
 * c * b * b + bh * b + bw. */
static kiln_expr ds_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    ds_args *a = u;
    kiln_expr b = ops_int(ctx, a->b), bb = ops_int(ctx, a->b * a->b);
    if (a->variant == TO_SPACE) {
        kiln_expr bh = kiln_floormod(o[2], b), bw = kiln_floormod(o[3], b);
        kiln_expr blk = kiln_add(kiln_mul(bh, b), bw);
        kiln_expr c = a->crd ? kiln_add(kiln_mul(o[1], bb), blk)
                             : kiln_add(kiln_mul(blk, ops_int(ctx, a->c)), o[1]);
        kiln_expr ix[4] = {o[0], c, kiln_floordiv(o[2], b), kiln_floordiv(o[3], b)};
        return kiln_tensor_at(a->x, 4, ix);
    }
    kiln_expr blk = kiln_floordiv(o[1], ops_int(ctx, a->c));
    kiln_expr ix[4] = {o[0], kiln_floormod(o[1], ops_int(ctx, a->c)),
                       kiln_add(kiln_mul(o[2], b), kiln_floordiv(blk, b)),
                       kiln_add(kiln_mul(o[3], b), kiln_floormod(blk, b))};
    return kiln_tensor_at(a->x, 4, ix);
}

static kiln_status compute_depth_space(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    int64_t xd[4], od[4];
    ops_shape(in[0], xd);
    ops_out_shape(call, od);
    ds_args a = {in[0], graph_attr_int(call, "block_size", 1), 0, call->op->variant,
                 !strcmp(graph_attr_str(call, "mode", "DCR"), "CRD")};
    a.c = a.variant == TO_SPACE ? od[1] : xd[1];
    out[0] = ops_compute(ctx, call, "", 4, od, ds_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

const kiln_op_def ops_depth_space_rows[] = {
    {.name = "depth_to_space",
     .min_in = 1,
     .max_in = 1,
     .attrs = depth_to_space_attrs,
     .rel = rel_depth_space,
     .pattern = OP_INJECTIVE,
     .compute = compute_depth_space,
     .summary = "NCHW: block_size^2 channels to block_size^2 pixels (mode DCR or CRD)",
     .variant = TO_SPACE},
    {.name = "space_to_depth",
     .min_in = 1,
     .max_in = 1,
     .attrs = space_to_depth_attrs,
     .rel = rel_depth_space,
     .pattern = OP_INJECTIVE,
     .compute = compute_depth_space,
     .summary = "NCHW: block_size^2 pixels to block_size^2 channels",
     .variant = TO_DEPTH},
};

const int ops_depth_space_count =
    (int)(sizeof ops_depth_space_rows / sizeof ops_depth_space_rows[0]);
