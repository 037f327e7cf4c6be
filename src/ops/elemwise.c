/* elemwise.c: the unary elementwise ops (relu, exp, sigmoid, clip, cast,
 * ...). Each is a scalar, its output element from its input's element at
 * the same index (op_elem_fn); they share one compute
 * (ops_compute_elemwise), fuse as OP_ELEMWISE, follow a blocked layout
 * (LAYOUT_FOLLOWS) and keep the default schedule. Adding one: a scalar
 * here and a row at the bottom. */
#include <math.h>
#include <string.h>

#include "ops.h"

/* A scalar builder: x[0] is the input element, dt its dtype. */
#define ELEM(fn)                                                                                   \
    static kiln_expr fn(kiln_ctx *ctx, const gnode *call, kiln_dtype dt, const kiln_expr *x)

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};
/* alpha defaulting to 1: nn.elu, nn.celu, nn.thresholded_relu */
static const attr_schema alpha1_attrs[] = {{"alpha", GA_FLOAT, 0, "1"}, {NULL, 0, 0, NULL}};
static const attr_schema selu_attrs[] = {
    {"alpha", GA_FLOAT, 0, "1.67326319"}, {"gamma", GA_FLOAT, 0, "1.05070102"}, {NULL, 0, 0, NULL}};
static const attr_schema clip_attrs[] = {
    {"a_min", GA_FLOAT, 1, NULL}, {"a_max", GA_FLOAT, 1, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema leaky_attrs[] = {{"alpha", GA_FLOAT, 0, "0.01"}, {NULL, 0, 0, NULL}};
static const attr_schema cast_attrs[] = {{"dtype", GA_STR, 1, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema isinf_attrs[] = {
    {"detect_negative", GA_INT, 0, "1"}, {"detect_positive", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};
static const attr_schema shrink_attrs[] = {
    {"bias", GA_FLOAT, 0, "0"}, {"lambd", GA_FLOAT, 0, "0.5"}, {NULL, 0, 0, NULL}};

/* ---- relations (besides ops_rel_identity and ops_rel_float_unary) ------------------- */

/* logical_not: a bool input, the same type out. */
static rel_result rel_logic_not(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    if (!in[0]->is_tuple && in[0]->t[0].dtype != KILN_BOOL)
        return ops_fail("input 0 must be bool, not %s", kiln_dtype_name(in[0]->t[0].dtype));
    return ops_rel_identity(g, call, in, out);
}

/* isnan, isinf: a float input, a bool of its shape out. */
static rel_result rel_float_test(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    rel_result r = ops_rel_float_unary(g, call, in, out);
    if (r == REL_OK)
        out->t[0].dtype = KILN_BOOL;
    return r;
}

/* nn.celu: a float input and alpha != 0 (it divides by alpha). */
static rel_result rel_celu(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    if (graph_attr_float(call, "alpha", 1.0) == 0)
        return ops_fail("attribute alpha must not be 0");
    return ops_rel_float_unary(g, call, in, out);
}

/* cast: the input's shape in attribute dtype. */
static rel_result rel_cast(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r);
    if (!a)
        return r;
    kiln_dtype dt;
    const char *name = graph_attr_str(call, "dtype", "");
    if (kiln_dtype_parse(name, &dt) != KILN_OK || dt == KILN_HANDLE)
        return ops_fail("cast to unknown dtype '%s'", name);
    gtensor_type res = *a;
    res.dtype = dt;
    return ops_set_out(g, out, &res);
}

/* cast's shape values (ops_values): between int64, int32 and bool, a value
 * the target holds passes; to bool, a constant is != 0 and a size variable
 * unknown (it may be 0). */
static int values_cast(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                       const int *nin, gval *out, int cap) {
    const gtensor_type *t = ops_node_type(call);
    (void)g;
    if (!t || nin[0] < 0 || nin[0] > cap)
        return -1;
    for (int k = 0; k < nin[0]; k++) {
        gval v = in[0][k];
        out[k] = v;
        if (v.kind == GVAL_UNKNOWN)
            continue;
        if (t->dtype == KILN_BOOL)
            out[k] = v.d.sym ? (gval){GVAL_UNKNOWN, {0, NULL}} : (gval){v.kind, {v.d.v != 0, NULL}};
        else if (t->dtype == KILN_INT32 && !v.d.sym && (v.d.v < INT32_MIN || v.d.v > INT32_MAX))
            out[k].kind = GVAL_UNKNOWN;
    }
    return nin[0];
}

/* ---- the scalars ------------------------------------------------------------------ */

/* clang-format off */
ELEM(relu_elem) { return kiln_max(x[0], ops_const(ctx, dt, 0)); }
ELEM(negative_elem) { return kiln_neg(x[0]); }
ELEM(abs_elem) { return kiln_abs(x[0]); }
ELEM(exp_elem) { return kiln_exp(x[0]); }
ELEM(log_elem) { return kiln_log(x[0]); }
ELEM(sqrt_elem) { return kiln_sqrt(x[0]); }
ELEM(rsqrt_elem) { return kiln_rsqrt(x[0]); }
ELEM(sigmoid_elem) { return kiln_sigmoid(x[0]); }
ELEM(tanh_elem) { return kiln_tanh(x[0]); }
ELEM(erf_elem) { return kiln_erf(x[0]); }
ELEM(floor_elem) { return kiln_floor(x[0]); }
ELEM(ceil_elem) { return kiln_ceil(x[0]); }
ELEM(round_elem) { return kiln_round(x[0]); }
ELEM(logical_not_elem) { return kiln_not(x[0]); }
ELEM(reciprocal_elem) { return kiln_div(ops_const(ctx, dt, 1), x[0]); }
ELEM(sin_elem) { return kiln_sin(x[0]); }
ELEM(cos_elem) { return kiln_cos(x[0]); }
ELEM(tan_elem) { return kiln_tan(x[0]); }
ELEM(asin_elem) { return kiln_asin(x[0]); }
ELEM(acos_elem) { return kiln_acos(x[0]); }
ELEM(atan_elem) { return kiln_atan(x[0]); }
ELEM(sinh_elem) { return kiln_sinh(x[0]); }
ELEM(cosh_elem) { return kiln_cosh(x[0]); }
ELEM(asinh_elem) { return kiln_asinh(x[0]); }
ELEM(acosh_elem) { return kiln_acosh(x[0]); }
ELEM(atanh_elem) { return kiln_atanh(x[0]); }
ELEM(isnan_elem) { return kiln_ne(x[0], x[0]); }
/* clang-format on */

/* x == +inf if detect_positive, x == -inf if detect_negative */
ELEM(isinf_elem) {
    kiln_expr pos = kiln_eq(x[0], ops_const(ctx, dt, INFINITY));
    kiln_expr neg = kiln_eq(x[0], ops_const(ctx, dt, -INFINITY));
    int p = graph_attr_int(call, "detect_positive", 1) != 0;
    int n = graph_attr_int(call, "detect_negative", 1) != 0;
    if (p && n)
        return kiln_or(pos, neg);
    return p ? pos : n ? neg : kiln_const(ctx, KILN_BOOL, 0);
}

ELEM(sign_elem) {
    kiln_expr zero = ops_const(ctx, dt, 0);
    return kiln_select(kiln_gt(x[0], zero), ops_const(ctx, dt, 1),
                       kiln_select(kiln_lt(x[0], zero), ops_const(ctx, dt, -1), zero));
}

/* max(x, 0) + log(1 + e^-|x|): no overflow */
ELEM(softplus_elem) {
    kiln_expr tail = kiln_exp(kiln_neg(kiln_abs(x[0])));
    return kiln_add(kiln_max(x[0], ops_const(ctx, dt, 0)),
                    kiln_log(kiln_add(ops_const(ctx, dt, 1), tail)));
}

ELEM(softsign_elem) {
    kiln_expr denom = kiln_add(ops_const(ctx, dt, 1), kiln_abs(x[0]));
    return kiln_div(x[0], denom);
}

/* x <= 0 ? alpha * (e^x - 1) : x */
static kiln_expr elu(kiln_ctx *ctx, kiln_dtype dt, kiln_expr x, double alpha) {
    kiln_expr neg =
        kiln_mul(ops_const(ctx, dt, alpha), kiln_sub(kiln_exp(x), ops_const(ctx, dt, 1)));
    return kiln_select(kiln_le(x, ops_const(ctx, dt, 0)), neg, x);
}

ELEM(elu_elem) {
    double alpha = graph_attr_float(call, "alpha", 1.0);
    return elu(ctx, dt, x[0], alpha);
}

ELEM(selu_elem) {
    kiln_expr y = elu(ctx, dt, x[0], graph_attr_float(call, "alpha", 1.67326319217681884765625));
    return kiln_mul(ops_const(ctx, dt, graph_attr_float(call, "gamma", 1.05070102214813232421875)),
                    y);
}

ELEM(clip_elem) {
    return kiln_min(kiln_max(x[0], ops_const(ctx, dt, graph_attr_float(call, "a_min", 0))),
                    ops_const(ctx, dt, graph_attr_float(call, "a_max", 0)));
}

ELEM(leaky_relu_elem) {
    kiln_expr scaled = kiln_mul(x[0], ops_const(ctx, dt, graph_attr_float(call, "alpha", 0.01)));
    return kiln_select(kiln_lt(x[0], ops_const(ctx, dt, 0)), scaled, x[0]);
}

/* max(0, x) + min(0, alpha * (e^(x/alpha) - 1)) */
ELEM(celu_elem) {
    double alpha = graph_attr_float(call, "alpha", 1.0);
    kiln_expr zero = ops_const(ctx, dt, 0);
    kiln_expr e = kiln_exp(kiln_div(x[0], ops_const(ctx, dt, alpha)));
    kiln_expr neg = kiln_mul(ops_const(ctx, dt, alpha), kiln_sub(e, ops_const(ctx, dt, 1)));
    return kiln_add(kiln_max(x[0], zero), kiln_min(neg, zero));
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0 */
ELEM(shrink_elem) {
    double lambd = graph_attr_float(call, "lambd", 0.5), bias = graph_attr_float(call, "bias", 0);
    kiln_expr b = ops_const(ctx, dt, bias);
    kiln_expr above = kiln_select(kiln_gt(x[0], ops_const(ctx, dt, lambd)), kiln_sub(x[0], b),
                                  ops_const(ctx, dt, 0));
    return kiln_select(kiln_lt(x[0], ops_const(ctx, dt, -lambd)), kiln_add(x[0], b), above);
}

/* x > alpha ? x : 0 */
ELEM(thresholded_relu_elem) {
    kiln_expr alpha = ops_const(ctx, dt, graph_attr_float(call, "alpha", 1.0));
    return kiln_select(kiln_gt(x[0], alpha), x[0], ops_const(ctx, dt, 0));
}

/* x * tanh(softplus(x)) */
ELEM(mish_elem) {
    return kiln_mul(x[0], kiln_tanh(softplus_elem(ctx, call, dt, x)));
}

/* x * clip(x/6 + 1/2, 0, 1) (ONNX HardSwish) */
ELEM(hard_swish_elem) {
    kiln_expr gate =
        kiln_add(kiln_mul(x[0], ops_const(ctx, dt, 1.0 / 6.0)), ops_const(ctx, dt, 0.5));
    gate = kiln_min(kiln_max(gate, ops_const(ctx, dt, 0)), ops_const(ctx, dt, 1));
    return kiln_mul(x[0], gate);
}

/* a cast to bool is x != 0 (NaN too), in every layer; a comparison would
 * be bfloat16 arithmetic, which the C back end does not have */
ELEM(cast_elem) {
    kiln_dtype to = KILN_FLOAT32;
    kiln_dtype_parse(graph_attr_str(call, "dtype", "float32"), &to);
    return kiln_cast(to, x[0]);
}

/* ---- the table ------------------------------------------------------------------- */

#define UNARY(nm, schema, relation, scalar, sum)                                                   \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = schema, .rel = relation,                    \
        .pattern = OP_ELEMWISE, .compute = ops_compute_elemwise, .summary = sum, .elem = scalar,   \
        .layout = LAYOUT_FOLLOWS, .sym_dims = 1                                                    \
    }
#define ID ops_rel_identity
#define FLOAT ops_rel_float_unary

const kiln_op_def ops_elemwise_rows[] = {
    UNARY("nn.relu", no_attrs, ID, relu_elem, "max(x, 0)"),
    UNARY("negative", no_attrs, ID, negative_elem, "-x"),
    UNARY("abs", no_attrs, ID, abs_elem, "|x|"),
    UNARY("exp", no_attrs, FLOAT, exp_elem, "e^x"),
    UNARY("log", no_attrs, FLOAT, log_elem, "natural logarithm"),
    UNARY("sqrt", no_attrs, FLOAT, sqrt_elem, "square root"),
    UNARY("rsqrt", no_attrs, FLOAT, rsqrt_elem, "1 / sqrt(x)"),
    UNARY("sigmoid", no_attrs, FLOAT, sigmoid_elem, "1 / (1 + e^-x)"),
    UNARY("tanh", no_attrs, FLOAT, tanh_elem, "hyperbolic tangent"),
    UNARY("erf", no_attrs, FLOAT, erf_elem, "error function"),
    UNARY("floor", no_attrs, FLOAT, floor_elem, "round down"),
    UNARY("ceil", no_attrs, FLOAT, ceil_elem, "round up"),
    UNARY("round", no_attrs, FLOAT, round_elem, "round half to even"),
    UNARY("logical_not", no_attrs, rel_logic_not, logical_not_elem, "!x"),
    UNARY("reciprocal", no_attrs, FLOAT, reciprocal_elem, "1 / x"),
    UNARY("sign", no_attrs, ID, sign_elem, "-1, 0 or 1"),
    UNARY("nn.softplus", no_attrs, FLOAT, softplus_elem, "log(1 + e^x)"),
    UNARY("nn.softsign", no_attrs, FLOAT, softsign_elem, "x / (1 + |x|)"),
    UNARY("nn.elu", alpha1_attrs, FLOAT, elu_elem, "x <= 0 ? alpha*(e^x - 1) : x"),
    UNARY("nn.selu", selu_attrs, FLOAT, selu_elem, "gamma * (x <= 0 ? alpha*(e^x - 1) : x)"),
    UNARY("clip", clip_attrs, ID, clip_elem, "min(max(x, a_min), a_max)"),
    UNARY("nn.leaky_relu", leaky_attrs, ID, leaky_relu_elem, "x < 0 ? alpha*x : x"),
    {.name = "cast",
     .min_in = 1,
     .max_in = 1,
     .attrs = cast_attrs,
     .rel = rel_cast,
     .pattern = OP_ELEMWISE,
     .compute = ops_compute_elemwise,
     .summary = "convert to dtype",
     .elem = cast_elem,
     .layout = LAYOUT_FOLLOWS,
     .sym_dims = 1,
     .values = values_cast},
    UNARY("nn.hard_swish", no_attrs, FLOAT, hard_swish_elem, "x * clip(x/6 + 1/2, 0, 1)"),
    UNARY("sin", no_attrs, FLOAT, sin_elem, "sine"),
    UNARY("cos", no_attrs, FLOAT, cos_elem, "cosine"),
    UNARY("tan", no_attrs, FLOAT, tan_elem, "tangent"),
    UNARY("asin", no_attrs, FLOAT, asin_elem, "arcsine"),
    UNARY("acos", no_attrs, FLOAT, acos_elem, "arccosine"),
    UNARY("atan", no_attrs, FLOAT, atan_elem, "arctangent"),
    UNARY("sinh", no_attrs, FLOAT, sinh_elem, "hyperbolic sine"),
    UNARY("cosh", no_attrs, FLOAT, cosh_elem, "hyperbolic cosine"),
    UNARY("asinh", no_attrs, FLOAT, asinh_elem, "inverse hyperbolic sine"),
    UNARY("acosh", no_attrs, FLOAT, acosh_elem, "inverse hyperbolic cosine"),
    UNARY("atanh", no_attrs, FLOAT, atanh_elem, "inverse hyperbolic tangent"),
    UNARY("isnan", no_attrs, rel_float_test, isnan_elem, "x is NaN (bool)"),
    UNARY("isinf", isinf_attrs, rel_float_test, isinf_elem,
          "x is +inf (detect_positive) or -inf (detect_negative) (bool)"),
    UNARY("nn.celu", alpha1_attrs, rel_celu, celu_elem,
          "max(0, x) + min(0, alpha*(e^(x/alpha) - 1))"),
    UNARY("nn.shrink", shrink_attrs, FLOAT, shrink_elem,
          "x < -lambd ? x + bias : x > lambd ? x - bias : 0"),
    UNARY("nn.thresholded_relu", alpha1_attrs, FLOAT, thresholded_relu_elem, "x > alpha ? x : 0"),
    UNARY("nn.mish", no_attrs, FLOAT, mish_elem, "x * tanh(log(1 + e^x))"),
};

const int ops_elemwise_count = (int)(sizeof ops_elemwise_rows / sizeof ops_elemwise_rows[0]);
