/* plugin_cumsum.c: an op added from outside the core, as seed note 003
 * adds cumsum to TVM: its attributes (axis, exclusive), its type relation,
 * and its compute in tensor expressions, registered by a shared object.
 * Load it with kiln_plugin_load("libkiln_cumsum.so") or
 * `kiln compile --plugin libkiln_cumsum.so model.onnx`: an ONNX CumSum...
 * node then imports as this op when it is named "CumSum". */
#include "kiln/plugin.h"

/* The output has the input's type; the axis must exist. */
static kiln_status cumsum_relation(kiln_op_call *call) {
    int nd = kiln_op_call_input_ndim(call, 0);
    int64_t axis = kiln_op_call_attr_int(call, "axis", 0);
    if (axis < -nd || axis >= nd) return kiln_op_call_error(call, "cumsum: axis is out of range");
    int64_t dims[16];
    for (int d = 0; d < nd && d < 16; d++) dims[d] = kiln_op_call_input_dim(call, 0, d);
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
    for (int d = 0; d < a->nd; d++) xi[d] = d == a->axis ? k : idx[d];
    return kiln_sum(kiln_tensor_at(a->x, a->nd, xi), 1, &k);
}

static kiln_tensor *cumsum_compute(kiln_ctx *ctx, const kiln_op_call *call,
                                   kiln_tensor *const *inputs) {
    cumsum_args a = {inputs[0], 0, kiln_tensor_ndim(inputs[0]),
                     (int)kiln_op_call_attr_int(call, "exclusive", 0)};
    int64_t axis = kiln_op_call_attr_int(call, "axis", 0);
    a.axis = (int)(axis < 0 ? axis + a.nd : axis);
    kiln_expr shape[16];
    for (int d = 0; d < a.nd; d++) shape[d] = kiln_tensor_dim(inputs[0], d);
    return kiln_compute(ctx, a.nd, shape, cumsum_body, &a, "cumsum");
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
    };
    return kiln_op_register(&spec) == KILN_OK ? 0 : 1;
}
