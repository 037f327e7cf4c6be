/* simplify.c: SimplifyInference and SimplifyExpr, as rewrites in the
 * pattern language (kiln/pattern.h): each rule is a pattern in its text
 * form and a callback that checks what a pattern cannot say (values of
 * constants, single use) and builds the replacement. They run to a fixed
 * point, so a rule's output can feed another rule (a layer norm's core,
 * then its gamma, then its beta). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "rules.h"

/* ---- SimplifyInference ------------------------------------------------------------
 * batch_norm(x, gamma, beta, mean, var) with constant parameters becomes
 * x * scale + shift, scale = gamma / sqrt(var + eps), shift = beta -
 * mean * scale, with scale and shift shaped to broadcast on the axis. The
 * multiply and add then fuse into the producer (and FoldScaleAxis below
 * takes the multiply into a convolution's weights). */

static int fold_batch_norm(kiln_rewrite *rw, const rule *r) {
    (void)r;
    const gnode *n = rule_root(rw);
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    if (!n->type.known || n->type.is_tuple)
        return KILN_REWRITE_SKIP;
    const kiln_ndarray *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = g->nodes[n->in[1 + i]]->value;
        if (kiln_ndarray_dtype(p[i]) != KILN_FLOAT32 && kiln_ndarray_dtype(p[i]) != KILN_FLOAT64)
            return KILN_REWRITE_SKIP;
    }
    const gtensor_type *xt = &n->type.t[0];
    int64_t axis = graph_attr_int(n, "axis", 1);
    if (axis < 0)
        axis += xt->ndim;
    if (xt->dims[axis].sym)
        return KILN_REWRITE_SKIP;
    int64_t c = xt->dims[axis].v, shape[KILN_MAX_NDIM];
    int nd = xt->ndim - (int)axis;
    shape[0] = c;
    for (int d = 1; d < nd; d++)
        shape[d] = 1;
    kiln_ndarray *scale = kiln_ndarray_empty(xt->dtype, nd, shape);
    kiln_ndarray *shift = kiln_ndarray_empty(xt->dtype, nd, shape);
    double eps = graph_attr_float(n, "epsilon", 1e-5);
    for (int64_t k = 0; scale && shift && k < c; k++) {
        double s = rule_at(p[0], k) / sqrt(rule_at(p[3], k) + eps);
        double b = rule_at(p[1], k) - rule_at(p[2], k) * s;
        if (xt->dtype == KILN_FLOAT32) {
            ((float *)kiln_ndarray_data(scale))[k] = (float)s;
            ((float *)kiln_ndarray_data(shift))[k] = (float)b;
        } else {
            ((double *)kiln_ndarray_data(scale))[k] = s;
            ((double *)kiln_ndarray_data(shift))[k] = b;
        }
    }
    struct kiln_graph *out = kiln_rewrite_post(rw);
    char nm[600];
    snprintf(nm, sizeof nm, "%s.scale", n->name);
    int sc = scale ? kiln_graph_const(out, nm, scale) : -1;
    snprintf(nm, sizeof nm, "%s.shift", n->name);
    int sh = shift ? kiln_graph_const(out, nm, shift) : -1;
    kiln_ndarray_free(scale);
    kiln_ndarray_free(shift);
    if (sc < 0 || sh < 0)
        return -1;
    int m[2] = {rule_post(rw, r->x[0]), sc};
    int mul = rule_call(rw, "multiply", 2, m, NULL, n->name);
    int a[2] = {mul, sh};
    return mul < 0 ? -1 : rule_call(rw, "add", 2, a, NULL, n->name);
}

struct kiln_graph *pass_simplify_inference(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    rule rules[] = {{"nn.batch_norm(%a, const, const, const, const)", fold_batch_norm, NULL, {0}}};
    return rule_run(g, rules, 1);
}

/* ---- SimplifyExpr ------------------------------------------------------------------ */

/* A constant holding one value; writes it to *v. */
static int scalar_const(const gnode *n, double *v) {
    if (!n || n->kind != GN_CONST || kiln_ndarray_numel(n->value) != 1)
        return 0;
    *v = rule_at(n->value, 0);
    return !isnan(*v);
}

/* mean over the last axis only, keeping it. */
static int last_axis_mean(const gnode *n) {
    if (!n->type.known || graph_attr_int(n, "keepdims", 0) != 1 || graph_attr_int(n, "exclude", 0))
        return 0;
    int64_t ax[4];
    int nd = n->type.t[0].ndim;
    return graph_attr_ints(n, "axis", ax, 4) == 1 && (ax[0] == -1 || ax[0] == nd - 1);
}

/* x / c, c a float32 constant of powers of two whose reciprocals are
 * normal numbers too (attention's / 8): x * (1 / c), the same value to the
 * bit (both are x scaled by a power of two, rounded once) without a vector
 * division per element (about 5 cycles each on Zen). */
static int divide_by_power_of_two(kiln_rewrite *rw, const rule *r) {
    const gnode *c = rule_pre(rw, r->x[1]);
    if (kiln_ndarray_dtype(c->value) != KILN_FLOAT32 || kiln_ndarray_numel(c->value) > 4096)
        return KILN_REWRITE_SKIP;
    int64_t k = kiln_ndarray_numel(c->value);
    for (int64_t i = 0; i < k; i++) {
        int e;
        double v = rule_at(c->value, i), m = frexp(v, &e);
        if (!isfinite(v) || fabs(m) != 0.5 || e - 1 < -125 || e - 1 > 125)
            return KILN_REWRITE_SKIP;
    }
    kiln_ndarray *inv = ndarray_clone(c->value);
    if (!inv)
        return -1;
    float *d = kiln_ndarray_data(inv); /* a clone is compact */
    for (int64_t i = 0; i < k; i++)
        d[i] = 1.0f / (float)rule_at(c->value, i);
    char nm[256];
    snprintf(nm, sizeof nm, "%s.reciprocal", c->name ? c->name : "");
    int ci = graph_const_take(kiln_rewrite_post(rw), nm, inv);
    int in[2] = {rule_post(rw, r->x[0]), ci};
    return ci < 0 ? -1 : rule_call(rw, "multiply", 2, in, NULL, rule_root(rw)->name);
}

/* An average pool or a 2-D convolution (NCHW) reading a constant zero
 * nn.pad of its spatial dims only: the padding becomes the call's own (a
 * pool then counts it, as count_include_pad=1 does: the pad's zeros were
 * input to it), so the padded copy is never made, and the call keeps the
 * blocked layout nn.pad has no rule for. Inception-v3's exported Pad +
 * AveragePool (F.avg_pool2d(x, 3, 1, padding=1)) ran in NCHW with layout
 * transforms around it, at 4 % of the memory roofline: 4.8 of its 27 ms on
 * Zen 5. A pool with padding of its own that it does not count keeps the
 * pad. */
static int fold_pad(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw), *p = rule_pre(rw, r->x[0]);
    int pool = !strcmp(n->op->name, "nn.avg_pool2d");
    int64_t pw[16], pad[8];
    if (p->nin != 1 || graph_attr_ints(p, "pad_width", pw, 16) != 8 || pw[0] || pw[1] || pw[2] ||
        pw[3] || pw[4] < 0 || pw[5] < 0 || pw[6] < 0 || pw[7] < 0)
        return KILN_REWRITE_SKIP;
    const char *layout = graph_attr_str(n, pool ? "layout" : "data_layout", "NCHW");
    if (strcmp(layout, "NCHW") || graph_attr_ints(n, "padding", pad, 8) != 4 || n->nin > 8)
        return KILN_REWRITE_SKIP;
    int counts = pool && graph_attr_int(n, "count_include_pad", 0);
    if (pool && !counts && (pad[0] || pad[1] || pad[2] || pad[3]))
        return KILN_REWRITE_SKIP;
    /* padding is [top, left, bottom, right]; pad_width [before, after] per dim */
    char extra[160];
    snprintf(extra, sizeof extra, "padding=[%lld, %lld, %lld, %lld]%s", (long long)(pad[0] + pw[4]),
             (long long)(pad[1] + pw[6]), (long long)(pad[2] + pw[5]), (long long)(pad[3] + pw[7]),
             pool ? ", count_include_pad=1" : "");
    static const char *const skip_pool[] = {"padding", "count_include_pad", NULL},
                             *const skip_conv[] = {"padding", NULL};
    char *attrs = pass_attrs_text(n, pool ? skip_pool : skip_conv, extra);
    int in[2] = {rule_post(rw, r->x[1]),
                 n->nin > 1 ? rule_post(rw, r->x[2]) : -1}; /* pad's input */
    int id = attrs ? rule_call(rw, n->op->name, n->nin, in, attrs, n->name) : -1;
    free(attrs);
    return id;
}

/* Layer normalization written out, as exporters before ONNX opset 17 do:
 *   d = x - mean(x, -1); y = d / sqrt(mean(d^2, -1) + eps)
 * runs as six kernels with plain reductions: one nn.layer_norm. The gamma
 * and beta after it are the next two rules. */
static int layer_norm_core(kiln_rewrite *rw, const rule *r) {
    const gnode *x = rule_pre(rw, r->x[0]), *m = rule_pre(rw, r->x[1]), *v = rule_pre(rw, r->x[2]);
    const gnode *p = rule_pre(rw, r->x[4]);
    double eps, two = 2;
    if (!p || !last_axis_mean(m) || !last_axis_mean(v) ||
        !scalar_const(rule_pre(rw, r->x[3]), &eps) || eps < 0 || !x->type.known ||
        x->type.is_tuple || x->type.t[0].dtype != KILN_FLOAT32)
        return KILN_REWRITE_SKIP;
    if (!strcmp(p->op->name, "power") &&
        (!scalar_const(kiln_rewrite_pre(rw)->nodes[p->in[1]], &two) || two != 2.0))
        return KILN_REWRITE_SKIP;
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=-1, epsilon=%.9g", eps);
    int in = rule_post(rw, r->x[0]);
    return rule_call(rw, "nn.layer_norm", 1, &in, attrs, rule_root(rw)->name);
}

/* nn.layer_norm(x [, gamma]) then a multiply by gamma (add of beta): a
 * float32 constant over the last axis, the norm read by nothing else. */
static int layer_norm_affine(kiln_rewrite *rw, const rule *r) {
    const gnode *ln = rule_pre(rw, r->x[0]), *c = rule_pre(rw, r->x[1]);
    int beta = ln->nin == 2; /* the rule for beta matches a norm with gamma */
    const gtensor_type *t = &ln->type.t[0];
    int64_t axis = graph_attr_int(ln, "axis", -1);
    if (!ln->type.known || t->dims[t->ndim - 1].sym || (axis != -1 && axis != t->ndim - 1) ||
        kiln_rewrite_uses(rw, ln->id) != 1 || kiln_ndarray_ndim(c->value) != 1 ||
        kiln_ndarray_dim(c->value, 0) != t->dims[t->ndim - 1].v ||
        kiln_ndarray_dtype(c->value) != KILN_FLOAT32)
        return KILN_REWRITE_SKIP;
    int in[3]; /* the norm's own inputs, then the constant */
    in[0] = rule_post(rw, r->x[2]);
    if (beta)
        in[1] = rule_post(rw, r->x[3]);
    in[ln->nin] = rule_post(rw, r->x[1]);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=-1, epsilon=%.9g", graph_attr_float(ln, "epsilon", 1e-5));
    return rule_call(rw, "nn.layer_norm", ln->nin + 1, in, attrs, rule_root(rw)->name);
}

/* FoldScaleAxis: a convolution whose only reader multiplies it by a
 * per-output-channel float32 constant ([O, 1, 1] or [1, O, 1, 1]: a batch
 * norm's scale) convolves with the weights scaled instead, rounded once as
 * the multiply would have, so no multiply is left (TVM's FoldScaleAxis). */
static int fold_scale(kiln_rewrite *rw, const rule *r) {
    const gnode *conv = rule_pre(rw, r->x[0]), *w = rule_pre(rw, r->x[1]),
                *s = rule_pre(rw, r->x[2]);
    const kiln_ndarray *wv = w->value, *sv = s->value;
    if (kiln_rewrite_uses(rw, conv->id) != 1 || kiln_ndarray_dtype(wv) != KILN_FLOAT32 ||
        kiln_ndarray_dtype(sv) != KILN_FLOAT32 || kiln_ndarray_ndim(wv) != 4 ||
        strcmp(graph_attr_str(conv, "kernel_layout", "OIHW"), "OIHW") ||
        strcmp(graph_attr_str(conv, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(conv, "out_layout", ""), "") || !rule_root(rw)->type.known ||
        !gtype_equal(&rule_root(rw)->type, &conv->type))
        return KILN_REWRITE_SKIP;
    int64_t O = kiln_ndarray_dim(wv, 0);
    int nd = kiln_ndarray_ndim(sv);
    if (nd < 3 || nd > 4 || kiln_ndarray_dim(sv, nd - 3) != O)
        return KILN_REWRITE_SKIP;
    for (int d = 0; d < nd; d++)
        if (d != nd - 3 && kiln_ndarray_dim(sv, d) != 1)
            return KILN_REWRITE_SKIP;
    kiln_ndarray *scaled = ndarray_clone(wv);
    if (!scaled)
        return -1;
    float *dst = kiln_ndarray_data(scaled);
    const float *sc = kiln_ndarray_data(sv); /* constants are compact */
    int64_t per = kiln_ndarray_numel(wv) / (O ? O : 1);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < per; i++)
            dst[o * per + i] *= sc[o];
    char nm[600];
    snprintf(nm, sizeof nm, "%s.scaled", w->name ? w->name : "");
    int wi = graph_const_take(kiln_rewrite_post(rw), nm, scaled);
    char *attrs = pass_attrs_text(conv, NULL, "");
    int in[2] = {rule_post(rw, r->x[3]), wi};
    int id = wi >= 0 && attrs ? rule_call(rw, "nn.conv2d", 2, in, attrs, conv->name) : -1;
    free(attrs);
    return id;
}

struct kiln_graph *pass_simplify_expr(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    rule rules[] = {
        {"divide(%a, %b=const) : float32", divide_by_power_of_two, NULL, {0}},
        {"nn.avg_pool2d(%a=nn.pad[pad_mode=\"constant\", pad_value=0](%b)) | "
         "nn.conv2d[pad_value=0](%a, %c)",
         fold_pad,
         NULL,
         {0}},
        {"divide(%f=subtract(%a, %b=mean(%a)), "
         "sqrt(add(%c=mean(%e=(power(%f, const) | multiply(%f, %f))), %d=const)))",
         layer_norm_core,
         NULL,
         {0}},
        {"multiply(%a=nn.layer_norm(%c), %b=const)", layer_norm_affine, NULL, {0}},
        {"add(%a=nn.layer_norm(%c, %d), %b=const)", layer_norm_affine, NULL, {0}},
        {"multiply(%a=nn.conv2d(%d, %b=const), %c=const)", fold_scale, NULL, {0}},
    };
    return rule_run(g, rules, (int)(sizeof rules / sizeof rules[0]));
}
