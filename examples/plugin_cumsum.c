/* plugin_cumsum.c: an op added from outside the core, as seed note 003
 * adds cumsum to TVM: its attributes (axis, exclusive), its type relation,
 * its compute in tensor expressions and its CPU schedule, registered by a
 * shared object.
 * Load it with kiln_plugin_load("libkiln_cumsum.so") or
 * `kiln compile --plugin libkiln_cumsum.so model.onnx`: an ONNX CumSum...
 * node then imports as this op when it is named "CumSum". */
#include "kiln/plugin.h"

/* The output has the input's type; the axis must exist. */
static kiln_status cumsum_relation(kiln_op_call *call) {
    int nd = kiln_op_call_input_ndim(call, 0);
    int64_t axis = kiln_op_call_attr_int(call, "axis", 0);
    if (axis < -nd || axis >= nd)
        return kiln_op_call_error(call, "cumsum: axis is out of range");
    int64_t dims[16];
    for (int d = 0; d < nd && d < 16; d++)
        dims[d] = kiln_op_call_input_dim(call, 0, d);
    return kiln_op_call_set_output(call, kiln_op_call_input_dtype(call, 0), nd, dims);
}

typedef struct {
    kiln_tensor *x;
    int axis, nd, exclusive;
} cumsum_args;

/* out[..., i, ...] = sum over k in [0, i] (or [0, i) if exclusive) of x[..., k, ...] */
static kiln_expr cumsum_body(kiln_ctx *ctx, const kiln_expr *idx, void *user) {
    cumsum_args *a = user;
    kiln_expr end = a->exclusive ? idx[a->axis] : kiln_add(idx[a->axis], kiln_int(ctx, 1));
    kiln_expr k = kiln_reduce_axis(ctx, kiln_int(ctx, 0), end, "k");
    kiln_expr xi[16];
    for (int d = 0; d < a->nd; d++)
        xi[d] = d == a->axis ? k : idx[d];
    return kiln_sum(kiln_tensor_at(a->x, a->nd, xi), 1, &k);
}

static kiln_tensor *cumsum_compute(kiln_ctx *ctx, const kiln_op_call *call,
                                   kiln_tensor *const *inputs) {
    cumsum_args a = {inputs[0], 0, kiln_tensor_ndim(inputs[0]),
                     (int)kiln_op_call_attr_int(call, "exclusive", 0)};
    int64_t axis = kiln_op_call_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    kiln_expr shape[16];
    for (int d = 0; d < a.nd; d++)
        shape[d] = kiln_tensor_dim(inputs[0], d);
    return kiln_compute(ctx, a.nd, shape, cumsum_body, &a, "cumsum");
}

/* The schedule of the kernel cumsum anchors. Every output element is a sum
 * of its own, so the outer axis runs in parallel. When the scan runs along
 * another axis than the last, the last axis is cut into vectors of the
 * target's width and the scan loop moved outside them: each step adds a
 * whole vector of inputs to a vector of running sums. With an epilogue
 * fused after it (anchor != out) it keeps the default schedule. */
static kiln_status cumsum_schedule(kiln_schedule *s, const kiln_op_call *call, kiln_tensor *anchor,
                                   kiln_tensor *out, const kiln_target *target) {
    int nd = kiln_tensor_ndim(out);
    kiln_stage *st = kiln_schedule_stage(s, out);
    if (anchor != out || nd < 1 || nd > 15)
        return KILN_OK;
    if (!st)
        return KILN_ERR_INVALID;
    int64_t axis = kiln_op_call_attr_int(call, "axis", 0);
    if (axis < 0)
        axis += nd;
    int64_t lanes = kiln_target_vector_bits(target) / 32,
            last = kiln_op_call_output_dim(call, nd - 1);
    kiln_status r;
    if (nd >= 2 && axis != nd - 1 && lanes > 1 && last >= lanes && last % lanes == 0) {
        kiln_expr lo, li, order[17];
        if ((r = kiln_split(st, kiln_tensor_axis(out, nd - 1), lanes, &lo, &li)) != KILN_OK)
            return r;
        int k = 0;
        for (int d = 0; d + 1 < nd; d++)
            order[k++] = kiln_tensor_axis(out, d);
        order[k++] = lo;
        order[k++] = kiln_tensor_reduce_axis(out, 0); /* the scan, outside the lanes */
        order[k++] = li;
        if ((r = kiln_reorder(st, k, order)) != KILN_OK || (r = kiln_vectorize(st, li)) != KILN_OK)
            return r;
    }
    if (kiln_op_call_output_dim(call, 0) > 1)
        return kiln_parallel(st, kiln_tensor_axis(out, 0));
    return KILN_OK;
}

__attribute__((visibility("default"))) int kiln_plugin_init(void);

int kiln_plugin_init(void) {
    static const kiln_op_spec spec = {
        .name = "contrib.cumsum",
        .min_inputs = 1,
        .max_inputs = 1,
        .attrs = "axis:int=0, exclusive:int=0",
        .relation = cumsum_relation,
        .compute = cumsum_compute,
        .pattern = KILN_OP_OPAQUE,
        .summary = "cumulative sum along axis",
        .schedule = cumsum_schedule,
    };
    return kiln_op_register(&spec) == KILN_OK ? 0 : 1;
}
