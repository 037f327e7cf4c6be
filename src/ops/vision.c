/* vision.c: detection post-processing, ONNX NonMaxSuppression.
 *
 *   vision.non_max_suppression(boxes, scores, max_output, iou_threshold,
 *                              score_threshold, count)
 *       int64[count, 3]: the (batch, class, box) of every box kept, per
 *       batch and class in descending score order (ONNX Runtime's order)
 *   nms_dims(boxes, scores, max_output, iou_threshold, score_threshold)
 *       int64[1]: how many boxes it keeps (its shape function; the importer
 *       binds the count with bind_dims, docs/DYNAMIC_SHAPES.md part 4)
 *
 * boxes [B, N, 4] and scores [B, C, N] of one float dtype; max_output (int64)
 * and the thresholds (the boxes' dtype) hold one value each, read when the
 * package runs. Attributes: center_point_box (0: [y1, x1, y2, x2], any two
 * opposite corners; 1: [x_center, y_center, width, height]) and
 * has_score_threshold (0: every box is a candidate).
 *
 * Per batch and class, as ONNX Runtime does it: the candidates are the
 * boxes whose score is above score_threshold (strictly), taken in
 * descending score order, equal scores by ascending box index; a candidate
 * is kept unless a kept one overlaps it with an IoU above iou_threshold
 * (strictly; boxes of no area overlap nothing), and at most max_output
 * (below 0: none) are kept. A NaN score sorts as -inf.
 *
 * The stages: `.box` puts each box in corner form with its area; `.rank`
 * counts the candidates that come before each box (a comparison sort,
 * quadratic, like TopK) and `.order` inverts it. Greedy suppression is
 * sequential, so `.sup` is a scan (kiln/te.h) along the sorted boxes:
 * sup[r] > 0 iff a kept box before r overlaps box r, a max over q in [0, r)
 * that reads sup[q]; `.kept` (a second scan, a prefix count) numbers the
 * kept boxes. Keeping the first max_output of them is the same as
 * stopping there, as ONNX Runtime does. The output then finds row k's box
 * by its place: the kept counts of the (batch, class) pairs before it plus
 * its number among its own. Cost: per (batch, class) N^2 comparisons for
 * the sort and N^2 overlap tests for the scan, and count * B * C * N for
 * the output's search. */
#include <math.h>
#include <string.h>

#include "ops.h"

typedef struct {
    kiln_tensor *boxes, *scores, *maxo, *iou, *sthr;
    kiln_tensor *box, *rank, *order, *sup, *kept, *off, *pos;
    int64_t B, C, N;
    int center, has_thr;
    kiln_dtype dt;
    kiln_expr r[3]; /* the current stage's reduce axes */
} nms_args;

static const attr_schema nms_attrs[] = {{"center_point_box", GA_INT, 0, "0"},
                                        {"has_score_threshold", GA_INT, 0, "0"},
                                        {NULL, 0, 0, NULL}};

/* ---- the relation ------------------------------------------------------------------ */

static int one_value(const gtensor_type *t) {
    return t->ndim == 0 || (t->ndim == 1 && !t->dims[0].sym && t->dims[0].v == 1);
}

/* variant 0: non_max_suppression (the count is input 5); 1: nms_dims */
static rel_result rel_nms(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *t[5];
    for (int i = 0; i < 5; i++)
        if (!(t[i] = ops_tensor_in(in[i], i, &r)))
            return r;
    const gtensor_type *bx = t[0], *sc = t[1];
    if (bx->ndim != 3 || sc->ndim != 3 || !ops_all_known(bx, 0, 3) || !ops_all_known(sc, 0, 3))
        return ops_fail("boxes [batches, boxes, 4] and scores [batches, classes, boxes] must be "
                        "3-D with dims known at compile time");
    if (bx->dims[2].v != 4 || sc->dims[0].v != bx->dims[0].v || sc->dims[2].v != bx->dims[1].v)
        return ops_fail("boxes [%lld, %lld, %lld] and scores [%lld, %lld, %lld] do not match: "
                        "[batches, boxes, 4] and [batches, classes, boxes]",
                        (long long)bx->dims[0].v, (long long)bx->dims[1].v,
                        (long long)bx->dims[2].v, (long long)sc->dims[0].v,
                        (long long)sc->dims[1].v, (long long)sc->dims[2].v);
    if ((bx->dtype != KILN_FLOAT32 && bx->dtype != KILN_FLOAT64) || sc->dtype != bx->dtype)
        return ops_fail("boxes and scores must both be float32 or float64, not %s and %s",
                        kiln_dtype_name(bx->dtype), kiln_dtype_name(sc->dtype));
    if (t[2]->dtype != KILN_INT64 || !one_value(t[2]))
        return ops_fail("max_output_boxes_per_class must be one int64 value");
    for (int i = 3; i < 5; i++)
        if (t[i]->dtype != bx->dtype || !one_value(t[i]))
            return ops_fail("%s must be one value of the boxes' dtype (%s)",
                            i == 3 ? "iou_threshold" : "score_threshold",
                            kiln_dtype_name(bx->dtype));
    int64_t cpb = graph_attr_int(call, "center_point_box", 0);
    int64_t hst = graph_attr_int(call, "has_score_threshold", 0);
    if ((cpb != 0 && cpb != 1) || (hst != 0 && hst != 1))
        return ops_fail("center_point_box (%lld) and has_score_threshold (%lld) must be 0 or 1",
                        (long long)cpb, (long long)hst);
    int64_t bc, bcn;
    if (!kiln_mul_ok(sc->dims[0].v, sc->dims[1].v, &bc) || !kiln_mul_ok(bc, sc->dims[2].v, &bcn) ||
        bcn > GRAPH_MAX_ELEMENTS)
        return ops_fail("batches * classes * boxes is over 2^48");
    gtensor_type res = {KILN_INT64, 1, {{1, NULL}}};
    if (call->op->variant == 0) {
        gdim n;
        if (ops_value_dims(g, call, 5, &n, 1) != 1)
            return ops_fail("input 5 (the count) must be a constant or a bind_dims vector of one "
                            "value");
        if (!n.sym && (n.v < 0 || n.v > bcn))
            return ops_fail("the count %lld must be 0 to batches * classes * boxes (%lld)",
                            (long long)n.v, (long long)bcn);
        res = (gtensor_type){KILN_INT64, 2, {n, {3, NULL}}};
    }
    return ops_set_out(g, out, &res);
}

/* ---- the stages ---------------------------------------------------------------------- */

static kiln_expr at3(kiln_tensor *t, kiln_expr a, kiln_expr b, kiln_expr c) {
    kiln_expr ix[3] = {a, b, c};
    return kiln_tensor_at(t, 3, ix);
}

/* the one value of t (rank 0 or 1) */
static kiln_expr value_of(kiln_ctx *ctx, kiln_tensor *t) {
    kiln_expr z = ops_int(ctx, 0);
    return kiln_tensor_at(t, kiln_tensor_ndim(t), &z);
}

/* box i of batch b and class c is a candidate */
static kiln_expr cand(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr i) {
    if (!a->has_thr)
        return kiln_const(ctx, KILN_BOOL, 1);
    return kiln_gt(at3(a->scores, b, c, i), value_of(ctx, a->sthr));
}

/* the score as a sort key: NaN as -inf */
static kiln_expr key(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr i) {
    kiln_expr s = at3(a->scores, b, c, i);
    return kiln_select(kiln_ne(s, s), ops_const(ctx, a->dt, -INFINITY), s);
}

/* box[b, i, k]: y1, x1, y2, x2 (corners, min first) and the area */
static kiln_expr box_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr v[4], y1, x1, y2, x2;
    for (int k = 0; k < 4; k++)
        v[k] = at3(a->boxes, o[0], o[1], ops_int(ctx, k));
    if (a->center) {
        kiln_expr hw = kiln_div(v[2], ops_const(ctx, a->dt, 2));
        kiln_expr hh = kiln_div(v[3], ops_const(ctx, a->dt, 2));
        x1 = kiln_sub(v[0], hw);
        x2 = kiln_add(v[0], hw);
        y1 = kiln_sub(v[1], hh);
        y2 = kiln_add(v[1], hh);
    } else {
        y1 = kiln_min(v[0], v[2]);
        y2 = kiln_max(v[0], v[2]);
        x1 = kiln_min(v[1], v[3]);
        x2 = kiln_max(v[1], v[3]);
    }
    kiln_expr area = kiln_mul(kiln_sub(x2, x1), kiln_sub(y2, y1)), k = o[2];
    return kiln_select(
        kiln_eq(k, ops_int(ctx, 0)), y1,
        kiln_select(kiln_eq(k, ops_int(ctx, 1)), x1,
                    kiln_select(kiln_eq(k, ops_int(ctx, 2)), y2,
                                kiln_select(kiln_eq(k, ops_int(ctx, 3)), x2, area))));
}

/* rank[b, c, i]: the boxes before box i in the order (candidates first,
 * then by descending score, then by ascending index) */
static kiln_expr rank_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr j = a->r[0], i = o[2];
    kiln_expr cj = cand(ctx, a, o[0], o[1], j), ci = cand(ctx, a, o[0], o[1], i);
    kiln_expr kj = key(ctx, a, o[0], o[1], j), ki = key(ctx, a, o[0], o[1], i);
    kiln_expr better = kiln_or(kiln_gt(kj, ki), kiln_and(kiln_eq(kj, ki), kiln_lt(j, i)));
    kiln_expr before = kiln_or(kiln_and(cj, kiln_not(ci)), kiln_and(kiln_eq(cj, ci), better));
    return kiln_sum(kiln_select(before, ops_int(ctx, 1), ops_int(ctx, 0)), 1, &j);
}

/* order[b, c, r]: the box of rank r */
static kiln_expr order_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr j = a->r[0];
    kiln_expr hit = kiln_eq(at3(a->rank, o[0], o[1], j), o[2]);
    return kiln_max_reduce(kiln_select(hit, j, ops_int(ctx, -1)), 1, &j);
}

/* the box at sorted position r (a rank is a permutation; checked all the same) */
static kiln_expr ord(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr r) {
    return ops_checked_index(ctx, at3(a->order, b, c, r), a->N, 0);
}

static kiln_expr sbox(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr r, int k) {
    return at3(a->box, b, ord(ctx, a, b, c, r), ops_int(ctx, k));
}

/* sorted boxes q and r overlap with an IoU above the threshold (as ONNX
 * Runtime decides it: boxes of no area, or no intersection, do not) */
static kiln_expr overlap(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr q,
                         kiln_expr r) {
    kiln_expr lo[2], hi[2], zero = ops_const(ctx, a->dt, 0);
    for (int d = 0; d < 2; d++) { /* y, then x */
        lo[d] = kiln_max(sbox(ctx, a, b, c, q, d), sbox(ctx, a, b, c, r, d));
        hi[d] = kiln_min(sbox(ctx, a, b, c, q, d + 2), sbox(ctx, a, b, c, r, d + 2));
    }
    kiln_expr inter = kiln_mul(kiln_sub(hi[1], lo[1]), kiln_sub(hi[0], lo[0]));
    kiln_expr aq = sbox(ctx, a, b, c, q, 4), ar = sbox(ctx, a, b, c, r, 4);
    kiln_expr uni = kiln_sub(kiln_add(aq, ar), inter);
    kiln_expr ok = kiln_and(kiln_gt(hi[0], lo[0]), kiln_gt(hi[1], lo[1]));
    ok = kiln_and(ok, kiln_and(kiln_gt(inter, zero), kiln_gt(aq, zero)));
    ok = kiln_and(ok, kiln_and(kiln_gt(ar, zero), kiln_gt(uni, zero)));
    return kiln_and(ok, kiln_gt(kiln_div(inter, uni), value_of(ctx, a->iou)));
}

/* sorted box r of (b, c) is kept: a candidate not suppressed */
static kiln_expr keep(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c, kiln_expr r) {
    return kiln_and(cand(ctx, a, b, c, ord(ctx, a, b, c, r)),
                    kiln_le(at3(a->sup, b, c, r), ops_int(ctx, 0)));
}

/* sup[b, c, r] > 0 iff a kept box before r overlaps box r (a scan: reads
 * sup at q < r; at r = 0 the empty max, the int64 minimum) */
static kiln_expr sup_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr q = kiln_reduce_axis(ctx, ops_int(ctx, 0), o[2], "q");
    kiln_expr hit = kiln_and(keep(ctx, a, o[0], o[1], q), overlap(ctx, a, o[0], o[1], q, o[2]));
    return kiln_max_reduce(kiln_select(hit, ops_int(ctx, 1), ops_int(ctx, 0)), 1, &q);
}

/* kept[b, c, r]: how many of sorted boxes 0..r are kept (a scan) */
static kiln_expr kept_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr one = ops_int(ctx, 1), zero = ops_int(ctx, 0);
    kiln_expr prev = at3(a->kept, o[0], o[1], kiln_sub(o[2], one));
    return kiln_add(kiln_select(keep(ctx, a, o[0], o[1], o[2]), one, zero),
                    kiln_select(kiln_gt(o[2], zero), prev, zero));
}

/* max_output, at least 0 */
static kiln_expr max_out(kiln_ctx *ctx, nms_args *a) {
    return kiln_max(value_of(ctx, a->maxo), ops_int(ctx, 0));
}

/* how many boxes (b, c) selects */
static kiln_expr selected(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c) {
    return kiln_min(at3(a->kept, b, c, ops_int(ctx, a->N - 1)), max_out(ctx, a));
}

static kiln_expr total_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    (void)o;
    nms_args *a = u;
    return kiln_sum(selected(ctx, a, a->r[0], a->r[1]), 2, a->r);
}

static kiln_expr flat2(kiln_ctx *ctx, nms_args *a, kiln_expr b, kiln_expr c) {
    return kiln_add(kiln_mul(b, ops_int(ctx, a->C)), c);
}

/* off[b, c]: the rows of the (batch, class) pairs before (b, c) */
static kiln_expr off_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr before = kiln_lt(flat2(ctx, a, a->r[0], a->r[1]), flat2(ctx, a, o[0], o[1]));
    return kiln_sum(kiln_select(before, selected(ctx, a, a->r[0], a->r[1]), ops_int(ctx, 0)), 2,
                    a->r);
}

/* pos[k]: the flat (b, c, r) of output row k */
static kiln_expr pos_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr b = a->r[0], c = a->r[1], r = a->r[2];
    kiln_expr n = at3(a->kept, b, c, r); /* its number, from 1, if kept */
    kiln_expr off[2] = {b, c};
    kiln_expr row = kiln_add(kiln_tensor_at(a->off, 2, off), kiln_sub(n, ops_int(ctx, 1)));
    kiln_expr hit =
        kiln_and(kiln_and(keep(ctx, a, b, c, r), kiln_le(n, max_out(ctx, a))), kiln_eq(row, o[0]));
    kiln_expr flat = kiln_add(kiln_mul(flat2(ctx, a, b, c), ops_int(ctx, a->N)), r);
    return kiln_max_reduce(kiln_select(hit, flat, ops_int(ctx, -1)), 3, a->r);
}

static kiln_expr out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    nms_args *a = u;
    kiln_expr p = ops_checked_index(ctx, kiln_tensor_at(a->pos, 1, o), a->B * a->C * a->N, 0);
    kiln_expr n = ops_int(ctx, a->N);
    kiln_expr b = kiln_floordiv(p, ops_int(ctx, a->C * a->N));
    kiln_expr c = kiln_floormod(kiln_floordiv(p, n), ops_int(ctx, a->C));
    kiln_expr r = kiln_floormod(p, n);
    return kiln_select(kiln_eq(o[1], ops_int(ctx, 0)), b,
                       kiln_select(kiln_eq(o[1], ops_int(ctx, 1)), c, at3(a->order, b, c, r)));
}

static kiln_expr zero_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    (void)o;
    (void)u;
    return ops_int(ctx, 0);
}

static kiln_expr axis_of(kiln_ctx *ctx, int64_t n, const char *name) {
    return kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, n), name);
}

/* The stages both ops share, up to `.kept`; 1 if there are boxes, 0 if
 * none (no stage made), -1 on an error. */
static int nms_init(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in, nms_args *a) {
    memset(a, 0, sizeof *a);
    int64_t bd[3], sd[3];
    ops_shape(in[0], bd);
    ops_shape(in[1], sd);
    a->boxes = in[0];
    a->scores = in[1];
    a->maxo = in[2];
    a->iou = in[3];
    a->sthr = in[4];
    a->B = sd[0];
    a->C = sd[1];
    a->N = sd[2];
    a->dt = kiln_tensor_dtype(in[0]);
    a->center = graph_attr_int(call, "center_point_box", 0) != 0;
    a->has_thr = graph_attr_int(call, "has_score_threshold", 0) != 0;
    if (a->B == 0 || a->C == 0 || a->N == 0)
        return 0;
    int64_t bcn[3] = {a->B, a->C, a->N}, bn5[3] = {a->B, a->N, 5};
    a->box = ops_compute(ctx, call, ".box", 3, bn5, box_body, a);
    a->r[0] = axis_of(ctx, a->N, "j");
    a->rank = ops_compute(ctx, call, ".rank", 3, bcn, rank_body, a);
    a->r[0] = axis_of(ctx, a->N, "s");
    a->order = a->rank ? ops_compute(ctx, call, ".order", 3, bcn, order_body, a) : NULL;
    if (!a->box || !a->order ||
        !ops_scan(ctx, call, ".sup", 3, bcn, KILN_INT64, 2, sup_body, a, &a->sup))
        return -1;
    a->kept = ops_scan(ctx, call, ".kept", 3, bcn, KILN_INT64, 2, kept_body, a, &a->kept);
    return a->kept ? 1 : -1;
}

/* variant 0: non_max_suppression's rows; 1: nms_dims's count */
static kiln_status compute_nms(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                               kiln_tensor **out) {
    static _Thread_local nms_args a;
    int k = nms_init(ctx, call, in, &a);
    if (k < 0)
        return KILN_ERR_INVALID;
    int64_t od[2];
    int nd = ops_out_shape(call, od);
    if (k == 0) { /* no box: none kept */
        out[0] = ops_compute(ctx, call, "", nd, od, zero_body, NULL);
    } else if (call->op->variant) {
        a.r[0] = axis_of(ctx, a.B, "tb");
        a.r[1] = axis_of(ctx, a.C, "tc");
        out[0] = ops_compute(ctx, call, "", 1, od, total_body, &a);
    } else {
        int64_t bc[2] = {a.B, a.C};
        a.r[0] = axis_of(ctx, a.B, "ob");
        a.r[1] = axis_of(ctx, a.C, "oc");
        a.off = ops_compute(ctx, call, ".off", 2, bc, off_body, &a);
        a.r[0] = axis_of(ctx, a.B, "pb");
        a.r[1] = axis_of(ctx, a.C, "pc");
        a.r[2] = axis_of(ctx, a.N, "pr");
        kiln_expr count = ops_dim(ctx, call->type.t[0].dims[0]);
        a.pos = a.off ? ops_compute_e(ctx, call, ".pos", 1, &count, pos_body, &a) : NULL;
        out[0] = a.pos ? ops_compute(ctx, call, "", 2, od, out_body, &a) : NULL;
    }
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

const kiln_op_def ops_vision_rows[] = {
    OPS_SYM_ROW_V("vision.non_max_suppression", 6, 6, nms_attrs, rel_nms, compute_nms, OP_OPAQUE, 0,
                  "ONNX NonMaxSuppression: int64[count, 3] (batch, class, box) of the boxes kept "
                  "(count: input 5)"),
    OPS_SYM_ROW_V("nms_dims", 5, 5, nms_attrs, rel_nms, compute_nms, OP_OPAQUE, 1,
                  "how many boxes vision.non_max_suppression keeps"),
};

const int ops_vision_count = (int)(sizeof ops_vision_rows / sizeof ops_vision_rows[0]);
