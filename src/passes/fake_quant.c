/* fake_quant.c: FakeQuantizationToInteger (TVM's pass of that name): the
 * QDQ form of a quantized model (a float convolution or matmul of
 * dequantized operands, ONNX's QuantizeLinear/DequantizeLinear) rewritten
 * into integer arithmetic on the quantized values, as rules of the pattern
 * language (rules.h):
 *   conv2d(dequantize(x), dequantize(w))  ->  dequantize(qnn.conv2d(x, w, ...))
 *   dense / batch_matmul likewise         ->  qnn.dense / qnn.batch_matmul
 *   bias_add(dequantize(acc), bias)       ->  dequantize(bias_add(acc, rint(bias / s)))
 *   quantize(dequantize(q))               ->  qnn.requantize(q)
 * The accumulator is int32 with scale x_scale * w_scale (per output channel
 * where the weight's is) and zero point 0. Operands' parameters must be
 * constants; x per tensor. The rewritten graph computes the same reals up
 * to float rounding and the bias's rounding to its integer grid, which is
 * how ONNX Runtime runs a QDQ model.
 *
 * It runs at opt level 3, before FoldConstant (which would dequantize the
 * weights), on targets with a fast int8 dot product (ops_int8_fast: VNNI,
 * AVX-VNNI, aarch64's dot product or int8 matrix extensions);
 * QnnCanonicalize (qnn_canon.c) then lowers the QNN ops for the int8
 * kernels. Elsewhere it runs only when named, or where the graph quantizes
 * with TFLite's rounding (the TFLite importer's integer mode). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "../runtime/runtime_internal.h"
#include "passes.h"
#include "rules.h"

static int is_q8(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8;
}

/* A constant node's value, or NULL. */
static const kiln_ndarray *const_of(const struct kiln_graph *g, int id) {
    const gnode *n = g->nodes[id];
    return n->kind == GN_CONST ? n->value : NULL;
}

/* The copy in post of node id of pre. */
static int post_of(kiln_rewrite *rw, int id) {
    return kiln_rewrite_post_of(rw, id);
}

/* A qnn.dequantize node's operands and parameters: constant scale and zero
 * point (their element counts in *ns), its axis normalized to the data's
 * rank. 0 if they are not constants. */
typedef struct {
    const gnode *n;
    const kiln_ndarray *scale, *zp;
    int64_t count; /* elements of the scale (1: per tensor) */
    int axis;      /* the per-channel axis, or -1 */
    kiln_dtype dt; /* the quantized data's dtype */
} dq_info;

static int dq_of(const struct kiln_graph *g, const gnode *n, dq_info *d) {
    if (!n || n->kind != GN_CALL || strcmp(n->op->name, "qnn.dequantize"))
        return 0;
    d->n = n;
    d->scale = const_of(g, n->in[1]);
    d->zp = const_of(g, n->in[2]);
    const gtensor_type *t = ops_node_type(g->nodes[n->in[0]]);
    if (!d->scale || !d->zp || !t || kiln_ndarray_dtype(d->scale) != KILN_FLOAT32)
        return 0;
    d->dt = t->dtype;
    d->count = kiln_ndarray_numel(d->scale);
    if (kiln_ndarray_numel(d->zp) != d->count && kiln_ndarray_numel(d->zp) != 1)
        return 0;
    int64_t ax = graph_attr_int(n, "axis", -1);
    d->axis = d->count == 1 ? -1 : (int)(ax < 0 ? ax + t->ndim : ax);
    return 1;
}

/* A float32 constant in post: the scales sx * sw[k] (k < n). */
static int product_scale(kiln_rewrite *rw, const dq_info *x, const dq_info *w, const char *name) {
    int64_t n = w->count;
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, n == 1 ? 0 : 1, &n);
    if (!a)
        return -1;
    float sx = *(const float *)kiln_ndarray_data(x->scale);
    const float *sw = kiln_ndarray_data(w->scale);
    for (int64_t k = 0; k < n; k++)
        ((float *)kiln_ndarray_data(a))[k] = sx * sw[k];
    int id = kiln_graph_const(kiln_rewrite_post(rw), name, a);
    kiln_ndarray_free(a);
    return id;
}

/* qnn.dequantize(acc, scale, 0) along axis in post. */
static int dequantize_acc(kiln_rewrite *rw, int acc, int scale, int axis, const char *name) {
    kiln_ndarray *z = kiln_ndarray_empty(KILN_INT32, 0, NULL);
    int zid = z ? kiln_graph_const(kiln_rewrite_post(rw), "zero", z) : -1;
    kiln_ndarray_free(z);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%d", axis);
    int in[3] = {acc, scale, zid};
    return acc < 0 || scale < 0 || zid < 0 ? -1
                                           : rule_call(rw, "qnn.dequantize", 3, in, attrs, name);
}

/* The quantized product of rule r's root: the data's dequantize at %a
 * (its data %b), the weight's at %e; `op` the QNN op, w_axis the weight's
 * output-channel axis, out_axis the result's. */
static int quantized_product(kiln_rewrite *rw, const rule *r, const char *op, int w_axis,
                             int out_axis, const char *extra_attrs) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw);
    dq_info x, w;
    if (!dq_of(g, rule_pre(rw, r->x[0]), &x) || !dq_of(g, rule_pre(rw, r->x[4]), &w) ||
        !is_q8(x.dt) || !is_q8(w.dt) || x.count != 1 || !const_of(g, w.n->in[0]) ||
        (w.count != 1 && w.axis != w_axis))
        return KILN_REWRITE_SKIP;
    static const char *const skip[] = {"out_dtype", "weight_layout", "transpose_a", NULL};
    char *attrs = pass_attrs_text(n, skip, extra_attrs);
    if (!attrs)
        return -1;
    int in[6] = {rule_post(rw, r->x[1]),  post_of(rw, w.n->in[0]), post_of(rw, x.n->in[2]),
                 post_of(rw, w.n->in[2]), post_of(rw, x.n->in[1]), post_of(rw, w.n->in[1])};
    int acc = rule_call(rw, op, 6, in, attrs, n->name);
    free(attrs);
    return dequantize_acc(rw, acc, product_scale(rw, &x, &w, "acc_scale"), out_axis, n->name);
}

static int fake_conv(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    if (strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW"))
        return KILN_REWRITE_SKIP;
    return quantized_product(rw, r, "qnn.conv2d", 0, 1, "out_dtype=\"int32\"");
}

static int fake_dense(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const gtensor_type *t = ops_node_type(n);
    if (!t || strcmp(graph_attr_str(n, "weight_layout", "NK"), "NK"))
        return KILN_REWRITE_SKIP;
    return quantized_product(rw, r, "qnn.dense", 0, t->ndim - 1, "out_dtype=\"int32\"");
}

static int fake_matmul(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const gtensor_type *t = ops_node_type(n);
    const gtensor_type *b = ops_node_type(kiln_rewrite_pre(rw)->nodes[n->in[1]]);
    if (!t || !b || graph_attr_int(n, "transpose_a", 0))
        return KILN_REWRITE_SKIP;
    int tb = graph_attr_int(n, "transpose_b", 0) != 0;
    return quantized_product(rw, r, "qnn.batch_matmul", tb ? b->ndim - 2 : b->ndim - 1, t->ndim - 1,
                             "out_dtype=\"int32\"");
}

/* bias_add(dequantize(acc int32, s, 0), bias): the bias on acc's grid. */
static int fake_bias(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw);
    dq_info d;
    const kiln_ndarray *b = const_of(g, n->in[1]);
    const gtensor_type *t = ops_node_type(n);
    if (!dq_of(g, rule_pre(rw, r->x[0]), &d) || d.dt != KILN_INT32 || !b || !t ||
        kiln_ndarray_dtype(b) != KILN_FLOAT32 || kiln_ndarray_ndim(b) != 1)
        return KILN_REWRITE_SKIP;
    int64_t axis = graph_attr_int(n, "axis", 1), nb = kiln_ndarray_numel(b);
    if (axis < 0)
        axis += t->ndim;
    if ((d.count != 1 && (d.axis != axis || d.count != nb)) || !(d.axis == axis || d.count == 1))
        return KILN_REWRITE_SKIP;
    for (int64_t k = 0; k < kiln_ndarray_numel(d.zp); k++)
        if (((const int32_t *)kiln_ndarray_data(d.zp))[k] != 0)
            return KILN_REWRITE_SKIP;
    kiln_ndarray *q = kiln_ndarray_empty(KILN_INT32, 1, &nb);
    if (!q)
        return -1;
    const float *s = kiln_ndarray_data(d.scale), *bv = kiln_ndarray_data(b);
    for (int64_t k = 0; k < nb; k++) {
        double v = rint((double)bv[k] / s[d.count == 1 ? 0 : k]);
        ((int32_t *)kiln_ndarray_data(q))[k] = (int32_t)(v > INT32_MAX   ? INT32_MAX
                                                         : v < INT32_MIN ? INT32_MIN
                                                                         : v);
    }
    int qb = kiln_graph_const(kiln_rewrite_post(rw), "bias_quantized", q);
    kiln_ndarray_free(q);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    int in[2] = {rule_post(rw, r->x[1]), qb};
    int sum = qb < 0 ? -1 : rule_call(rw, "nn.bias_add", 2, in, attrs, n->name);
    int dq[3] = {sum, post_of(rw, d.n->in[1]), post_of(rw, d.n->in[2])};
    snprintf(attrs, sizeof attrs, "axis=%d", d.axis);
    return sum < 0 ? -1 : rule_call(rw, "qnn.dequantize", 3, dq, attrs, n->name);
}

/* quantize(dequantize(q, s, z), s2, z2) -> requantize(q, s, z, s2, z2) */
static int fake_requantize(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw);
    dq_info d;
    const kiln_ndarray *s2 = const_of(g, n->in[1]);
    if (!dq_of(g, rule_pre(rw, r->x[0]), &d) || !s2 || kiln_ndarray_numel(s2) != 1)
        return KILN_REWRITE_SKIP;
    char attrs[160];
    snprintf(attrs, sizeof attrs,
             "axis=%d, out_dtype=\"%s\", compute_dtype=\"float32\", rounding=\"%s\"", d.axis,
             graph_attr_str(n, "out_dtype", "int8"), graph_attr_str(n, "rounding", "TONEAREST"));
    int in[5] = {post_of(rw, d.n->in[0]), post_of(rw, d.n->in[1]), post_of(rw, d.n->in[2]),
                 post_of(rw, n->in[1]), post_of(rw, n->in[2])};
    return rule_call(rw, "qnn.requantize", 5, in, attrs, n->name);
}

/* Whether g quantizes with TFLite's rounding (a TFLite model imported for
 * TFLite's integer requantization): its results are TFLite's only on the
 * integer path. */
static int wants_tflite_integers(const struct kiln_graph *g) {
    for (int i = 0; i < g->n; i++) {
        const gnode *n = g->nodes[i];
        if (n->kind == GN_CALL && !strcmp(n->op->name, "qnn.quantize") &&
            !strcmp(graph_attr_str(n, "rounding", "TONEAREST"), "TFLITE"))
            return 1;
    }
    return 0;
}

struct kiln_graph *pass_fake_quantization(struct kiln_graph *g, const pass_env *env) {
    /* In the default pipeline, only for a target with a fast int8 dot
       product: elsewhere the integer kernels are slower than the float ones
       (AVX2's exact vpmaddwd path does as many multiply-adds per instruction
       as float32 FMA, and ResNet-50 int8 ran 1.2x slower than float on it),
       so a QDQ model runs on float kernels with its weights dequantized at
       compile time. Named (kiln compile --pass, run_pass), it always runs,
       and so it does for a graph that asks for TFLite's integer
       requantization, whose results only the integer path gives. */
    if (!env->named && !ops_int8_fast(env->target) && !wants_tflite_integers(g))
        return pass_rebuild(g, NULL, NULL);
    rule rules[] = {
        {"nn.conv2d(%a=qnn.dequantize(%b, const, const), %e=qnn.dequantize(const, const, const))",
         fake_conv,
         NULL,
         {0}},
        {"nn.dense(%a=qnn.dequantize(%b, const, const), %e=qnn.dequantize(const, const, const))",
         fake_dense,
         NULL,
         {0}},
        {"nn.batch_matmul(%a=qnn.dequantize(%b, const, const), "
         "%e=qnn.dequantize(const, const, const))",
         fake_matmul,
         NULL,
         {0}},
        {"nn.bias_add(%a=qnn.dequantize(%b, const, const), const)", fake_bias, NULL, {0}},
        {"qnn.quantize(%a=qnn.dequantize(*, const, const), const, const)",
         fake_requantize,
         NULL,
         {0}},
    };
    return rule_run(g, rules, (int)(sizeof rules / sizeof rules[0]));
}
