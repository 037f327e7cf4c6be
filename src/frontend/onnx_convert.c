/* onnx_convert.c: one converter per ONNX op type, listed in one table at
 * the end (the nn converters are in onnx_convert_nn.c). A converter maps
 * the node's inputs and attributes (as its opset defines them) onto graph
 * ops. Nodes computing on constants only (shape
 * arithmetic) are folded into constants here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "onnx_convert.h"

/* ---- constant folding ------------------------------------------------------- */

static int64_t numel_of(const kiln_ndarray *a) { return kiln_ndarray_numel(a); }

static double get_d(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)d)[i];
    case KILN_FLOAT64: return ((const double *)d)[i];
    case KILN_INT64: return (double)((const int64_t *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_UINT8: case KILN_BOOL: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

int64_t cvt_get_i(const kiln_ndarray *a, int64_t i) {
    return kiln_ndarray_dtype(a) == KILN_INT64 ? ((const int64_t *)kiln_ndarray_data(a))[i]
                                               : (int64_t)get_d(a, i);
}

static void set_d(kiln_ndarray *a, int64_t i, double v) {
    void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: ((float *)d)[i] = (float)v; break;
    case KILN_FLOAT64: ((double *)d)[i] = v; break;
    case KILN_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case KILN_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case KILN_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case KILN_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case KILN_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: break;
    }
}

static int foldable_dtype(kiln_dtype dt) {
    return dt == KILN_FLOAT32 || dt == KILN_FLOAT64 || dt == KILN_INT64 || dt == KILN_INT32 ||
           dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_BOOL;
}

int cvt_concrete(const gtensor_type *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym) return 0;
    return 1;
}

/* Folding works on small tensors only (shape arithmetic). */
#define FOLD_MAX_NUMEL 65536

/* A copy of a with a new shape (same element count). */
static kiln_ndarray *reshaped(const kiln_ndarray *a, int nd, const int64_t *dims) {
    kiln_ndarray *r = kiln_ndarray_empty(kiln_ndarray_dtype(a), nd, dims);
    if (!r) return NULL;
    memcpy(kiln_ndarray_data(r), kiln_ndarray_data(a),
           (size_t)numel_of(a) * kiln_dtype_size(kiln_ndarray_dtype(a)));
    return r;
}

static int ndarray_dims(const kiln_ndarray *a, int64_t *dims) {
    int nd = kiln_ndarray_ndim(a);
    for (int d = 0; d < nd; d++) dims[d] = kiln_ndarray_dim(a, d);
    return nd;
}

/* numpy-broadcast binary fold; op is a graph op name. NULL if not foldable. */
static kiln_ndarray *fold_binary(const char *op, const kiln_ndarray *a, const kiln_ndarray *b) {
    kiln_dtype dt = kiln_ndarray_dtype(a);
    if (dt != kiln_ndarray_dtype(b) || !foldable_dtype(dt)) return NULL;
    if (numel_of(a) > FOLD_MAX_NUMEL || numel_of(b) > FOLD_MAX_NUMEL) return NULL;
    int64_t ad[MAXD], bd[MAXD], od[MAXD];
    int an = ndarray_dims(a, ad), bn = ndarray_dims(b, bd), on = an > bn ? an : bn;
    for (int d = 0; d < on; d++) {
        int64_t x = d - (on - an) >= 0 ? ad[d - (on - an)] : 1;
        int64_t y = d - (on - bn) >= 0 ? bd[d - (on - bn)] : 1;
        if (x != y && x != 1 && y != 1) return NULL;
        od[d] = x == 1 ? y : x;
    }
    int cmp = !strcmp(op, "equal") || !strcmp(op, "less") || !strcmp(op, "greater");
    kiln_ndarray *r = kiln_ndarray_empty(cmp ? KILN_BOOL : dt, on, od);
    if (!r) return NULL;
    int64_t n = numel_of(r);
    int isint = dt != KILN_FLOAT32 && dt != KILN_FLOAT64;
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, ai = 0, bi = 0, as = 1, bs = 1;
        for (int d = on - 1; d >= 0; d--) {
            int64_t c = rem % od[d];
            rem /= od[d];
            int ka = d - (on - an), kb = d - (on - bn);
            if (ka >= 0) {
                ai += (ad[ka] == 1 ? 0 : c) * as;
                as *= ad[ka];
            }
            if (kb >= 0) {
                bi += (bd[kb] == 1 ? 0 : c) * bs;
                bs *= bd[kb];
            }
        }
        double x = get_d(a, ai), y = get_d(b, bi), v;
        if (!strcmp(op, "add")) v = x + y;
        else if (!strcmp(op, "subtract")) v = x - y;
        else if (!strcmp(op, "multiply")) v = x * y;
        else if (!strcmp(op, "divide")) {
            if (isint && y == 0) {
                kiln_ndarray_free(r);
                return NULL;
            }
            v = isint ? trunc(x / y) : x / y;
        } else if (!strcmp(op, "equal")) v = x == y;
        else if (!strcmp(op, "less")) v = x < y;
        else if (!strcmp(op, "greater")) v = x > y;
        else if (!strcmp(op, "maximum")) v = x > y ? x : y;
        else if (!strcmp(op, "minimum")) v = x < y ? x : y;
        else {
            kiln_ndarray_free(r);
            return NULL;
        }
        if (isint && !cmp && dt == KILN_INT64) {
            int64_t xi = cvt_get_i(a, ai), yi = cvt_get_i(b, bi);
            int64_t vi = !strcmp(op, "add") ? xi + yi : !strcmp(op, "subtract") ? xi - yi
                         : !strcmp(op, "multiply") ? xi * yi : !strcmp(op, "divide") ? xi / yi
                         : (int64_t)v;
            ((int64_t *)kiln_ndarray_data(r))[i] = vi;
        } else {
            set_d(r, i, v);
        }
    }
    return r;
}

/* ---- elementwise ------------------------------------------------------------------ */

typedef struct {
    const char *onnx, *op;
} op_map;

static const op_map unary_ops[] = {
    {"Relu", "nn.relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},   {"Exp", "exp"},
    {"Log", "log"},      {"Sqrt", "sqrt"},       {"Neg", "negative"}, {"Abs", "abs"},
    {"Erf", "erf"},      {"Floor", "floor"},     {"Ceil", "ceil"},   {"Round", "round"},
    {"Not", "logical_not"}, {"Reciprocal", "reciprocal"}, {"Sign", "sign"},
    {"Softplus", "nn.softplus"}, {"Softsign", "nn.softsign"}, {NULL, NULL}};

static const op_map binary_ops[] = {
    {"Add", "add"},     {"Sub", "subtract"}, {"Mul", "multiply"}, {"Div", "divide"},
    {"Pow", "power"},   {"Equal", "equal"},  {"Less", "less"},    {"Greater", "greater"},
    {"And", "logical_and"}, {"Or", "logical_or"}, {"Max", "maximum"}, {"Min", "minimum"},
    {"LessOrEqual", "less_equal"}, {"GreaterOrEqual", "greater_equal"}, {NULL, NULL}};

static const char *lookup(const op_map *m, const char *onnx) {
    for (; m->onnx; m++)
        if (!strcmp(m->onnx, onnx)) return m->op;
    return NULL;
}

/* A 0-d constant v of dtype dt (any foldable dtype). */
int cvt_scalar_of(imp *I, const Onnx__NodeProto *n, kiln_dtype dt, double v) {
    kiln_ndarray *r = foldable_dtype(dt) ? kiln_ndarray_empty(dt, 0, NULL) : NULL;
    if (!r) return imp_fail(I, n, "cannot make a %s constant", kiln_dtype_name(dt));
    set_d(r, 0, v);
    return imp_add_const(I, n->name, r);
}

/* x converted to dtype dt (folded for constants). */
static int cast_to(imp *I, const Onnx__NodeProto *n, int x, kiln_dtype dt) {
    const gtensor_type *t = imp_type(I, x);
    if (!t || t->dtype == dt) return x;
    const kiln_ndarray *c = imp_const(I, x);
    if (c && foldable_dtype(kiln_ndarray_dtype(c)) && foldable_dtype(dt) &&
        numel_of(c) <= FOLD_MAX_NUMEL) {
        int64_t dims[MAXD];
        int nd = ndarray_dims(c, dims);
        kiln_ndarray *r = kiln_ndarray_empty(dt, nd, dims);
        if (!r) return -1;
        for (int64_t i = 0; i < numel_of(c); i++) set_d(r, i, get_d(c, i));
        return imp_add_const(I, n->name, r);
    }
    char attrs[64];
    snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(dt));
    return imp_call(I, n, "cast", 1, &x, attrs);
}

/* A binary graph op on two nodes, folded when both are constant. */
int cvt_binary_of(imp *I, const Onnx__NodeProto *n, const char *op, int a, int b) {
    if (a < 0 || b < 0) return -1;
    const kiln_ndarray *ca = imp_const(I, a), *cb = imp_const(I, b);
    kiln_ndarray *f = ca && cb ? fold_binary(op, ca, cb) : NULL;
    if (f) return imp_add_const(I, n->name, f);
    int in[2] = {a, b};
    return imp_call(I, n, op, 2, in, NULL);
}

int cvt_unary_of(imp *I, const Onnx__NodeProto *n, const char *op, int x) {
    return x < 0 ? -1 : imp_call(I, n, op, 1, &x, NULL);
}

/* A unary op on a small constant, folded (shape arithmetic); NULL if not foldable. */
static kiln_ndarray *fold_unary(const char *op, const kiln_ndarray *c) {
    kiln_dtype dt = kiln_ndarray_dtype(c);
    int isf = dt == KILN_FLOAT32 || dt == KILN_FLOAT64;
    if (!foldable_dtype(dt) || dt == KILN_BOOL || numel_of(c) > FOLD_MAX_NUMEL) return NULL;
    int64_t dims[MAXD];
    int nd = ndarray_dims(c, dims);
    kiln_ndarray *r = kiln_ndarray_empty(dt, nd, dims);
    for (int64_t i = 0; r && i < numel_of(c); i++) {
        double x = get_d(c, i);
        if (!strcmp(op, "negative")) x = -x;
        else if (!strcmp(op, "abs")) x = fabs(x);
        else if (isf && !strcmp(op, "sqrt")) x = sqrt(x);
        else if (isf && !strcmp(op, "exp")) x = exp(x);
        else if (isf && !strcmp(op, "log")) x = log(x);
        else if (isf && !strcmp(op, "floor")) x = floor(x);
        else if (isf && !strcmp(op, "ceil")) x = ceil(x);
        else if (isf && !strcmp(op, "reciprocal")) x = 1 / x;
        else {
            kiln_ndarray_free(r);
            return NULL;
        }
        if (dt == KILN_INT64 && !strcmp(op, "negative")) /* exact beyond 2^53 */
            ((int64_t *)kiln_ndarray_data(r))[i] = -cvt_get_i(c, i);
        else
            set_d(r, i, x);
    }
    return r;
}

static int cv_unary(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const char *op = lookup(unary_ops, n->op_type);
    const kiln_ndarray *c = imp_const(I, x);
    kiln_ndarray *f = c ? fold_unary(op, c) : NULL;
    if (f) return outs[0] = imp_add_const(I, n->name, f);
    return outs[0] = imp_call(I, n, op, 1, &x, NULL);
}

/* Binary ops, and the variadic Max/Min/Sum folded left to right. */
static int cv_binary(imp *I, const Onnx__NodeProto *n, int *outs) {
    const char *op = !strcmp(n->op_type, "Sum") ? "add" : lookup(binary_ops, n->op_type);
    int k = imp_ninputs(n);
    if (k < 1) return imp_fail(I, n, "needs at least one input");
    int acc = imp_input(I, n, 0);
    for (int i = 1; i < k; i++) {
        int b = imp_input(I, n, i);
        if (!strcmp(op, "power")) { /* the exponent may have another dtype */
            const gtensor_type *t = imp_type(I, acc);
            b = t ? cast_to(I, n, b, t->dtype) : b;
        }
        if ((acc = cvt_binary_of(I, n, op, acc, b)) < 0) return -1;
    }
    return outs[0] = acc;
}

/* Mean of several inputs: their sum over the count. */
static int cv_mean(imp *I, const Onnx__NodeProto *n, int *outs) {
    int k = imp_ninputs(n), acc = imp_input(I, n, 0);
    for (int i = 1; i < k && acc >= 0; i++) acc = cvt_binary_of(I, n, "add", acc, imp_input(I, n, i));
    const gtensor_type *t = imp_type(I, acc);
    if (acc < 0 || !t) return -1;
    return outs[0] = k == 1 ? acc : cvt_binary_of(I, n, "divide", acc, cvt_scalar_of(I, n, t->dtype, k));
}

static int cv_where(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[3] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2)};
    return outs[0] = imp_call(I, n, "where", 3, in, NULL);
}

int cvt_float_const_like(imp *I, const Onnx__NodeProto *n, int like, double v) {
    const gtensor_type *t = imp_type(I, like);
    return imp_scalar_const(I, n->name, t ? t->dtype : KILN_FLOAT32, v);
}

/* Clip: the clip op for constant float bounds, else maximum/minimum with
 * the bound tensors (non-constant bounds, integer dtypes). */
static int cv_clip(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), bound[2] = {-1, -1};
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int isf = t->dtype == KILN_FLOAT32 || t->dtype == KILN_FLOAT64;
    double v[2] = {-INFINITY, INFINITY};
    int is_const[2] = {1, 1};
    if (I->opset < 11) {
        v[0] = imp_attr_float(n, "min", -INFINITY);
        v[1] = imp_attr_float(n, "max", INFINITY);
    } else {
        for (int k = 0; k < 2; k++) {
            if ((bound[k] = imp_input(I, n, k + 1)) < 0) continue;
            const kiln_ndarray *c = imp_const(I, bound[k]);
            if (c && numel_of(c) == 1) v[k] = get_d(c, 0);
            else is_const[k] = 0;
        }
    }
    if (isf && is_const[0] && is_const[1]) {
        double lim = t->dtype == KILN_FLOAT32 ? 3.4e38 : 1.7e308;
        char attrs[128];
        snprintf(attrs, sizeof attrs, "a_min=%.17g, a_max=%.17g", isinf(v[0]) ? -lim : v[0],
                 isinf(v[1]) ? lim : v[1]);
        return outs[0] = imp_call(I, n, "clip", 1, &x, attrs);
    }
    int y = x;
    for (int k = 0; k < 2 && y >= 0; k++) {
        int b = bound[k];
        if (is_const[k]) {
            if (isinf(v[k])) continue;
            b = cvt_scalar_of(I, n, t->dtype, v[k]);
        }
        if (b >= 0) y = cvt_binary_of(I, n, k ? "minimum" : "maximum", y, cast_to(I, n, b, t->dtype));
    }
    return outs[0] = y;
}

/* PRelu: x < 0 ? x * slope : x, the slope broadcast onto x. */
static int cv_prelu(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), slope = imp_input(I, n, 1);
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int neg = cvt_binary_of(I, n, "less", x, cvt_scalar_of(I, n, t->dtype, 0));
    int scaled_x = cvt_binary_of(I, n, "multiply", x, slope);
    int in[3] = {neg, scaled_x, x};
    return outs[0] = neg < 0 || scaled_x < 0 ? -1 : imp_call(I, n, "where", 3, in, NULL);
}

static int cv_elu(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    char attrs[96];
    if (!strcmp(n->op_type, "Selu")) {
        snprintf(attrs, sizeof attrs, "alpha=%.9g, gamma=%.9g",
                 imp_attr_float(n, "alpha", 1.67326319217681884765625f),
                 imp_attr_float(n, "gamma", 1.05070102214813232421875f));
        return outs[0] = imp_call(I, n, "nn.selu", 1, &x, attrs);
    }
    snprintf(attrs, sizeof attrs, "alpha=%.9g", imp_attr_float(n, "alpha", 1.0f));
    return outs[0] = imp_call(I, n, "nn.elu", 1, &x, attrs);
}

static int cv_leaky_relu(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "alpha=%.9gf", imp_attr_float(n, "alpha", 0.01f));
    return outs[0] = imp_call(I, n, "nn.leaky_relu", 1, &x, attrs);
}

/* HardSigmoid: clip(alpha*x + beta, 0, 1); HardSwish: x * HardSigmoid(x) with 1/6, 1/2. */
static int hard_sigmoid(imp *I, const Onnx__NodeProto *n, int x, double alpha, double beta) {
    int a = cvt_float_const_like(I, n, x, alpha), b = cvt_float_const_like(I, n, x, beta);
    if (a < 0 || b < 0) return -1;
    int m[2] = {x, a};
    int ax = imp_call(I, n, "multiply", 2, m, NULL);
    int s[2] = {ax, b};
    int axb = ax < 0 ? -1 : imp_call(I, n, "add", 2, s, NULL);
    return axb < 0 ? -1 : imp_call(I, n, "clip", 1, &axb, "a_min=0, a_max=1");
}

static int cv_hard_sigmoid(imp *I, const Onnx__NodeProto *n, int *outs) {
    return outs[0] = hard_sigmoid(I, n, imp_input(I, n, 0), imp_attr_float(n, "alpha", 0.2f),
                                  imp_attr_float(n, "beta", 0.5f));
}

static int cv_hard_swish(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int hs = hard_sigmoid(I, n, x, 1.0 / 6.0, 0.5);
    int m[2] = {x, hs};
    return outs[0] = hs < 0 ? -1 : imp_call(I, n, "multiply", 2, m, NULL);
}

static int cv_cast(imp *I, const Onnx__NodeProto *n, int *outs) {
    kiln_dtype dt;
    int64_t to = imp_attr_int(n, "to", 0);
    if (!onnx_dtype_to_kiln((int)to, &dt))
        return imp_fail(I, n, "cast to %s is not supported", onnx_dtype_name((int)to));
    return outs[0] = cast_to(I, n, imp_input(I, n, 0), dt);
}

static int shape_attr(kstr *a, const char *name, int nd, const int64_t *dims) {
    kstr_printf(a, "%s=[", name);
    for (int d = 0; d < nd; d++) kstr_printf(a, "%s%lld", d ? ", " : "", (long long)dims[d]);
    kstr_puts(a, "]");
    return 0;
}

/* Identity, and Dropout at inference: y = x, the mask all true. */
static int cv_identity(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    if (strcmp(n->op_type, "Dropout")) return outs[0] = x;
    int tm = imp_input(I, n, 2), rid = imp_input(I, n, 1);
    const kiln_ndarray *train = tm >= 0 ? imp_const(I, tm) : NULL;
    const kiln_ndarray *ratio = rid >= 0 ? imp_const(I, rid) : NULL;
    int zero_ratio = ratio && numel_of(ratio) == 1 && get_d(ratio, 0) == 0;
    if (tm >= 0 && !zero_ratio && (!train || numel_of(train) != 1 || get_d(train, 0) != 0))
        return imp_fail(I, n, "training mode is not supported (training_mode must be a constant "
                        "false)");
    outs[0] = x;
    if (n->n_output < 2 || !n->output[1][0]) return 0;
    const gtensor_type *t = imp_type(I, x);
    if (!t || !cvt_concrete(t)) return imp_fail(I, n, "the mask needs a concrete shape");
    int one = cvt_scalar_of(I, n, KILN_BOOL, 1);
    int64_t dims[MAXD];
    for (int d = 0; d < t->ndim; d++) dims[d] = t->dims[d].v;
    kstr a;
    kstr_init(&a);
    shape_attr(&a, "shape", t->ndim, dims);
    outs[1] = one < 0 ? -1 : imp_call(I, n, "broadcast_to", 1, &one, a.buf);
    kstr_free(&a);
    return outs[1] < 0 ? -1 : 0;
}

/* ---- constants and shapes ------------------------------------------------------------ */

static int cv_constant(imp *I, const Onnx__NodeProto *n, int *outs) {
    const Onnx__AttributeProto *a;
    kiln_ndarray *r = NULL;
    if ((a = imp_attr(n, "value")) && a->t) {
        char what[600];
        snprintf(what, sizeof what, "Constant '%s'", n->name);
        r = onnx_tensor_to_ndarray(I->m, a->t, what);
        if (!r) return imp_fail(I, n, "%s", kiln_last_error());
    } else if ((a = imp_attr(n, "value_float")) && a->has_f) {
        r = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
        if (r) *(float *)kiln_ndarray_data(r) = a->f;
    } else if ((a = imp_attr(n, "value_int")) && a->has_i) {
        r = kiln_ndarray_empty(KILN_INT64, 0, NULL);
        if (r) *(int64_t *)kiln_ndarray_data(r) = a->i;
    } else if ((a = imp_attr(n, "value_floats"))) {
        int64_t len = (int64_t)a->n_floats;
        r = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
        if (r && len) memcpy(kiln_ndarray_data(r), a->floats, sizeof(float) * (size_t)len);
    } else if ((a = imp_attr(n, "value_ints"))) {
        int64_t len = (int64_t)a->n_ints;
        r = kiln_ndarray_empty(KILN_INT64, 1, &len);
        if (r && len) memcpy(kiln_ndarray_data(r), a->ints, sizeof(int64_t) * (size_t)len);
    } else {
        return imp_fail(I, n, "needs a value, value_float(s) or value_int(s) attribute "
                        "(sparse and string values are not supported)");
    }
    if (!r) return -1;
    return outs[0] = imp_add_const(I, n->name, r);
}

static int cv_shape(imp *I, const Onnx__NodeProto *n, int *outs) {
    const gtensor_type *t = imp_type(I, imp_input(I, n, 0));
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int64_t start = imp_attr_int(n, "start", 0), end = imp_attr_int(n, "end", t->ndim);
    if (start < 0) start += t->ndim;
    if (end < 0) end += t->ndim;
    start = start < 0 ? 0 : start > t->ndim ? t->ndim : start;
    end = end < start ? start : end > t->ndim ? t->ndim : end;
    int64_t len = end - start;
    kiln_ndarray *r = kiln_ndarray_empty(KILN_INT64, 1, &len);
    if (!r) return -1;
    for (int64_t d = start; d < end; d++) {
        if (t->dims[d].sym) {
            kiln_ndarray_free(r);
            return imp_fail(I, n, "dim %lld is the symbolic '%s'; give concrete shapes with "
                            "--input-shapes", (long long)d, t->dims[d].sym);
        }
        ((int64_t *)kiln_ndarray_data(r))[d - start] = t->dims[d].v;
    }
    return outs[0] = imp_add_const(I, n->name, r);
}

static int cv_constant_of_shape(imp *I, const Onnx__NodeProto *n, int *outs) {
    const kiln_ndarray *s = imp_const(I, imp_input(I, n, 0));
    if (!s) return imp_fail(I, n, "the shape input must be constant");
    int64_t dims[MAXD];
    int nd = (int)numel_of(s);
    if (nd > MAXD) return imp_fail(I, n, "too many dims");
    for (int d = 0; d < nd; d++) dims[d] = cvt_get_i(s, d);
    kiln_dtype dt = KILN_FLOAT32;
    double v = 0;
    const Onnx__AttributeProto *a = imp_attr(n, "value");
    if (a && a->t) {
        kiln_ndarray *val = onnx_tensor_to_ndarray(I->m, a->t, "ConstantOfShape value");
        if (!val) return imp_fail(I, n, "%s", kiln_last_error());
        dt = kiln_ndarray_dtype(val);
        v = numel_of(val) ? get_d(val, 0) : 0;
        kiln_ndarray_free(val);
    }
    kiln_ndarray *r = kiln_ndarray_empty(dt, nd, dims);
    if (!r) return imp_fail(I, n, "%s", kiln_last_error());
    if (!foldable_dtype(dt)) {
        kiln_ndarray_free(r);
        return imp_fail(I, n, "value dtype %s is not supported", kiln_dtype_name(dt));
    }
    for (int64_t i = 0; i < numel_of(r); i++) set_d(r, i, v);
    return outs[0] = imp_add_const(I, n->name, r);
}

/* Gather on constants (shape arithmetic): indices along `axis`. */
static int cv_gather(imp *I, const Onnx__NodeProto *n, int *outs) {
    const kiln_ndarray *data = imp_const(I, imp_input(I, n, 0));
    const kiln_ndarray *idx = imp_const(I, imp_input(I, n, 1));
    if (!data || !idx || numel_of(data) > FOLD_MAX_NUMEL) {
        int in[2] = {imp_input(I, n, 0), imp_input(I, n, 1)};
        char attrs[48];
        snprintf(attrs, sizeof attrs, "axis=%lld", (long long)imp_attr_int(n, "axis", 0));
        return outs[0] = imp_call(I, n, "take", 2, in, attrs);
    }
    int64_t dd[MAXD], id[MAXD], od[MAXD];
    int dn = ndarray_dims(data, dd), in = ndarray_dims(idx, id);
    int64_t axis = imp_attr_int(n, "axis", 0);
    if (axis < 0) axis += dn;
    if (axis < 0 || axis >= dn || dn + in - 1 > MAXD) return imp_fail(I, n, "axis out of range");
    int on = 0;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) od[on++] = dd[d], outer *= dd[d];
    for (int d = 0; d < in; d++) od[on++] = id[d];
    for (int d = (int)axis + 1; d < dn; d++) od[on++] = dd[d], inner *= dd[d];
    kiln_ndarray *r = kiln_ndarray_empty(kiln_ndarray_dtype(data), on, od);
    if (!r) return -1;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(data));
    int64_t ni = numel_of(idx);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < ni; k++) {
            int64_t j = cvt_get_i(idx, k);
            if (j < 0) j += dd[axis];
            if (j < 0 || j >= dd[axis]) {
                kiln_ndarray_free(r);
                return imp_fail(I, n, "index %lld is out of range for a dim of %lld",
                                (long long)cvt_get_i(idx, k), (long long)dd[axis]);
            }
            memcpy((char *)kiln_ndarray_data(r) + ((o * ni + k) * inner) * (int64_t)es,
                   (const char *)kiln_ndarray_data(data) + ((o * dd[axis] + j) * inner) * (int64_t)es,
                   (size_t)inner * es);
        }
    return outs[0] = imp_add_const(I, n->name, r);
}

/* Concat: folded when every input is constant, else the concatenate op. */
static int cv_concat(imp *I, const Onnx__NodeProto *n, int *outs) {
    int k = imp_ninputs(n), ids[256], all_const = 1;
    if (k < 1 || k > 256) return imp_fail(I, n, "needs 1 to 256 inputs");
    for (int i = 0; i < k; i++) {
        ids[i] = imp_input(I, n, i);
        all_const &= imp_const(I, ids[i]) != NULL;
    }
    int64_t axis = imp_attr_int(n, "axis", 0);
    const gtensor_type *t0 = imp_type(I, ids[0]);
    if (!t0) return imp_fail(I, n, "input 0 has no tensor type");
    if (axis < 0) axis += t0->ndim;
    if (all_const && t0->ndim == 1) {
        int64_t len = 0;
        for (int i = 0; i < k; i++) len += numel_of(imp_const(I, ids[i]));
        kiln_ndarray *r = kiln_ndarray_empty(t0->dtype, 1, &len);
        if (!r) return -1;
        size_t es = kiln_dtype_size(t0->dtype), off = 0;
        for (int i = 0; i < k; i++) {
            const kiln_ndarray *c = imp_const(I, ids[i]);
            if (kiln_ndarray_dtype(c) != t0->dtype) {
                kiln_ndarray_free(r);
                return imp_fail(I, n, "inputs have different dtypes");
            }
            memcpy((char *)kiln_ndarray_data(r) + off, kiln_ndarray_data(c), (size_t)numel_of(c) * es);
            off += (size_t)numel_of(c) * es;
        }
        return outs[0] = imp_add_const(I, n->name, r);
    }
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    return outs[0] = imp_call(I, n, "concatenate", k, ids, attrs);
}

/* Reshape of x to dims (folded for constants). */
int cvt_reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd, const int64_t *dims) {
    const kiln_ndarray *c = imp_const(I, x);
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= dims[d];
    if (c && total == numel_of(c)) {
        kiln_ndarray *r = reshaped(c, nd, dims);
        return r ? imp_add_const(I, n->name, r) : -1;
    }
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "newshape=[");
    for (int d = 0; d < nd; d++) kstr_printf(&a, "%s%lld", d ? ", " : "", (long long)dims[d]);
    kstr_puts(&a, "]");
    int id = imp_call(I, n, "reshape", 1, &x, a.buf);
    kstr_free(&a);
    return id;
}

static int cv_reshape(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t dims[MAXD];
    int nd;
    if (I->opset < 5) {
        nd = imp_attr_ints(n, "shape", dims, MAXD);
    } else {
        const kiln_ndarray *s = imp_const(I, imp_input(I, n, 1));
        if (!s) return imp_fail(I, n, "the shape input must be constant (computed at compile time)");
        nd = (int)numel_of(s);
        if (nd > MAXD) return imp_fail(I, n, "too many dims");
        for (int d = 0; d < nd; d++) dims[d] = cvt_get_i(s, d);
    }
    if (!t || nd < 0) return imp_fail(I, n, "bad input or shape");
    /* resolve 0 (copy, unless allowzero) and -1 here so constants fold too */
    int64_t known = 1, total = 1, infer = -1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym) return imp_fail(I, n, "symbolic input dims are not supported yet");
        total *= t->dims[d].v;
    }
    int allowzero = (int)imp_attr_int(n, "allowzero", 0);
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0 && !allowzero) {
            if (d >= t->ndim) return imp_fail(I, n, "shape[%d] is 0 past the input's rank", d);
            dims[d] = t->dims[d].v;
        }
        if (dims[d] == -1) {
            if (infer >= 0) return imp_fail(I, n, "more than one -1 in the shape");
            infer = d;
        } else if (dims[d] < 0) {
            return imp_fail(I, n, "shape[%d] = %lld is invalid", d, (long long)dims[d]);
        } else {
            known *= dims[d];
        }
    }
    if (infer >= 0) {
        if (!known || total % known) return imp_fail(I, n, "cannot infer the -1 dim");
        dims[infer] = total / known;
    }
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

static int cv_flatten(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int64_t axis = imp_attr_int(n, "axis", 1);
    if (axis < 0) axis += t->ndim;
    if (axis < 0 || axis > t->ndim) return imp_fail(I, n, "axis out of range");
    if (axis == 1 && t->ndim >= 1)
        return outs[0] = imp_call(I, n, "nn.batch_flatten", 1, &x, NULL);
    int64_t a = 1, b = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym) return imp_fail(I, n, "symbolic dims are not supported here yet");
        *(d < axis ? &a : &b) *= t->dims[d].v;
    }
    int64_t dims[2] = {a, b};
    return outs[0] = cvt_reshape_to(I, n, x, 2, dims);
}

/* Axes from the attribute (opset < 13) or the second input. */
static int axes_of(imp *I, const Onnx__NodeProto *n, int64_t *axes) {
    if (I->opset < 13) return imp_attr_ints(n, "axes", axes, MAXD);
    int id = imp_input(I, n, 1);
    if (id < 0) return -1;
    const kiln_ndarray *c = imp_const(I, id);
    if (!c || numel_of(c) > MAXD) return -2;
    for (int64_t i = 0; i < numel_of(c); i++) axes[i] = cvt_get_i(c, i);
    return (int)numel_of(c);
}

static int cv_unsqueeze(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t axes[MAXD], dims[MAXD];
    int na = axes_of(I, n, axes);
    if (!t || na < 0) return imp_fail(I, n, "axes must be given and constant");
    int nd = t->ndim + na;
    if (nd > MAXD) return imp_fail(I, n, "too many dims");
    int mark[MAXD] = {0};
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
        if (a < 0 || a >= nd || mark[a]) return imp_fail(I, n, "bad axes");
        mark[a] = 1;
    }
    for (int d = 0, k = 0; d < nd; d++) {
        if (mark[d]) dims[d] = 1;
        else {
            if (t->dims[k].sym) return imp_fail(I, n, "symbolic dims are not supported here yet");
            dims[d] = t->dims[k++].v;
        }
    }
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

static int cv_squeeze(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t axes[MAXD], dims[MAXD];
    int na = axes_of(I, n, axes);
    if (!t || na == -2) return imp_fail(I, n, "axes must be constant");
    int drop[MAXD] = {0}, nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym) return imp_fail(I, n, "symbolic dims are not supported here yet");
        drop[d] = na < 0 && t->dims[d].v == 1;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + t->ndim : axes[i];
        if (a < 0 || a >= t->ndim || t->dims[a].v != 1)
            return imp_fail(I, n, "axis %lld is not a dim of size 1", (long long)axes[i]);
        drop[a] = 1;
    }
    for (int d = 0; d < t->ndim; d++)
        if (!drop[d]) dims[nd++] = t->dims[d].v;
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

/* Up to MAXD int64 values of a constant input (or -1 absent, -2 not constant). */
int cvt_const_ints(imp *I, const Onnx__NodeProto *n, int i, int64_t *v) {
    int id = imp_input(I, n, i);
    if (id < 0) return -1;
    const kiln_ndarray *c = imp_const(I, id);
    if (!c || numel_of(c) > MAXD) return -2;
    for (int64_t k = 0; k < numel_of(c); k++) v[k] = cvt_get_i(c, k);
    return (int)numel_of(c);
}

void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v) {
    kstr_printf(a, "%s%s=[", a->len ? ", " : "", name);
    for (int i = 0; i < k; i++) kstr_printf(a, "%s%lld", i ? ", " : "", (long long)v[i]);
    kstr_puts(a, "]");
}

/* Slice: starts, ends, axes, steps (attributes before opset 10, constant
 * inputs after) -> strided_slice; a constant 1-D input folds. */
static int cv_slice(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t st[MAXD], en[MAXD], ax[MAXD], sp[MAXD];
    int ns, ne, na, nsp = -1;
    if (I->opset < 10) {
        ns = imp_attr_ints(n, "starts", st, MAXD);
        ne = imp_attr_ints(n, "ends", en, MAXD);
        na = imp_attr_ints(n, "axes", ax, MAXD);
    } else {
        ns = cvt_const_ints(I, n, 1, st);
        ne = cvt_const_ints(I, n, 2, en);
        na = cvt_const_ints(I, n, 3, ax);
        nsp = cvt_const_ints(I, n, 4, sp);
    }
    if (ns < 0 || ne != ns || na == -2 || nsp == -2 || (na >= 0 && na != ns) ||
        (nsp >= 0 && nsp != ns))
        return imp_fail(I, n, "starts, ends, axes and steps must be constant and of one length");
    const kiln_ndarray *c = imp_const(I, x);
    if (c && kiln_ndarray_ndim(c) == 1 && ns == 1 && (na < 0 || ax[0] == 0 || ax[0] == -1)) {
        /* fold shape arithmetic: a 1-D constant sliced */
        int64_t step = nsp > 0 ? sp[0] : 1, start, len;
        if (step == 0) return imp_fail(I, n, "a slice step must not be 0");
        ops_slice_axis(kiln_ndarray_dim(c, 0), st[0], en[0], step, &start, &len);
        kiln_ndarray *r = kiln_ndarray_empty(kiln_ndarray_dtype(c), 1, &len);
        if (!r) return -1;
        size_t es = kiln_dtype_size(kiln_ndarray_dtype(c));
        for (int64_t i = 0; i < len; i++)
            memcpy((char *)kiln_ndarray_data(r) + i * (int64_t)es,
                   (const char *)kiln_ndarray_data(c) + (start + i * step) * (int64_t)es, es);
        return outs[0] = imp_add_const(I, n->name, r);
    }
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "begin", ns, st);
    cvt_ints_attr(&a, "end", ne, en);
    if (na >= 0) cvt_ints_attr(&a, "axes", na, ax);
    if (nsp >= 0) cvt_ints_attr(&a, "strides", nsp, sp);
    outs[0] = imp_call(I, n, "strided_slice", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* Expand: bidirectional broadcast of x and the constant shape. */
static int cv_expand(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t sh[MAXD], od[MAXD];
    int ns = cvt_const_ints(I, n, 1, sh);
    if (ns < 0) return imp_fail(I, n, "the shape input must be constant");
    if (!t || !cvt_concrete(t)) return imp_fail(I, n, "the input needs a concrete shape");
    int nd = ns > t->ndim ? ns : t->ndim, same = nd == t->ndim;
    for (int d = 0; d < nd; d++) {
        int64_t a = d - (nd - t->ndim) >= 0 ? t->dims[d - (nd - t->ndim)].v : 1;
        int64_t b = d - (nd - ns) >= 0 ? sh[d - (nd - ns)] : 1;
        if (a != b && a != 1 && b != 1)
            return imp_fail(I, n, "dim %lld cannot broadcast to %lld", (long long)a, (long long)b);
        od[d] = a == 1 ? b : a;
        same &= od[d] == a;
    }
    if (same) return outs[0] = x;
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "shape", nd, od);
    outs[0] = imp_call(I, n, "broadcast_to", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* Pad: ONNX pads [b0, b1, ..., e0, e1, ...] -> pad_width [b0, e0, b1, e1, ...]. */
static int cv_pad(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int64_t p[2 * MAXD], pw[2 * MAXD];
    double value = 0;
    int np;
    if (I->opset < 11) {
        np = imp_attr_ints(n, "pads", p, 2 * MAXD);
        value = imp_attr_float(n, "value", 0);
    } else {
        int id = imp_input(I, n, 1);
        const kiln_ndarray *c = id >= 0 ? imp_const(I, id) : NULL;
        if (!c || numel_of(c) > 2 * MAXD) return imp_fail(I, n, "pads must be constant");
        np = (int)numel_of(c);
        for (int i = 0; i < np; i++) p[i] = cvt_get_i(c, i);
        int vid = imp_input(I, n, 2);
        const kiln_ndarray *v = vid >= 0 ? imp_const(I, vid) : NULL;
        if (vid >= 0 && (!v || numel_of(v) != 1))
            return imp_fail(I, n, "constant_value must be a constant scalar");
        value = v ? get_d(v, 0) : 0;
    }
    if (np != 2 * t->ndim) return imp_fail(I, n, "pads needs %d values, has %d", 2 * t->ndim, np);
    for (int d = 0; d < t->ndim; d++) {
        pw[2 * d] = p[d];
        pw[2 * d + 1] = p[d + t->ndim];
    }
    char buf[32];
    const char *mode = imp_attr_str(n, "mode", "constant", buf, sizeof buf);
    if (!isfinite(value)) return imp_fail(I, n, "a non-finite pad value is not supported");
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "pad_width", 2 * t->ndim, pw);
    kstr_printf(&a, ", pad_value=%.17g, pad_mode=\"%s\"", value, mode);
    outs[0] = imp_call(I, n, "nn.pad", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

static int cv_size(imp *I, const Onnx__NodeProto *n, int *outs) {
    const gtensor_type *t = imp_type(I, imp_input(I, n, 0));
    if (!t || !cvt_concrete(t)) return imp_fail(I, n, "the input needs a concrete shape");
    int64_t total = 1;
    for (int d = 0; d < t->ndim; d++) total *= t->dims[d].v;
    return outs[0] = cvt_scalar_of(I, n, KILN_INT64, (double)total);
}

/* ---- the table ------------------------------------------------------------------------- */

static const imp_converter g_converters[] = {
    {"Relu", 1, cv_unary},        {"Sigmoid", 1, cv_unary},     {"Tanh", 1, cv_unary},
    {"Exp", 1, cv_unary},         {"Log", 1, cv_unary},         {"Sqrt", 1, cv_unary},
    {"Neg", 1, cv_unary},         {"Abs", 1, cv_unary},         {"Erf", 9, cv_unary},
    {"Floor", 1, cv_unary},       {"Ceil", 1, cv_unary},        {"Round", 11, cv_unary},
    {"Not", 1, cv_unary},         {"Add", 7, cv_binary},        {"Sub", 7, cv_binary},
    {"Mul", 7, cv_binary},        {"Div", 7, cv_binary},        {"Pow", 7, cv_binary},
    {"Equal", 7, cv_binary},      {"Less", 7, cv_binary},       {"Greater", 7, cv_binary},
    {"And", 7, cv_binary},        {"Or", 7, cv_binary},         {"Max", 8, cv_binary},
    {"Min", 8, cv_binary},        {"Sum", 8, cv_binary},        {"Where", 9, cv_where},
    {"Clip", 6, cv_clip},         {"LeakyRelu", 6, cv_leaky_relu},
    {"HardSigmoid", 6, cv_hard_sigmoid}, {"HardSwish", 14, cv_hard_swish},
    {"Cast", 6, cv_cast},         {"Identity", 1, cv_identity}, {"Dropout", 7, cv_identity},
    {"Constant", 9, cv_constant}, {"Shape", 1, cv_shape},       {"ConstantOfShape", 9, cv_constant_of_shape},
    {"Gather", 1, cv_gather},     {"Concat", 4, cv_concat},     {"Reshape", 5, cv_reshape},
    {"Flatten", 1, cv_flatten},   {"Unsqueeze", 1, cv_unsqueeze}, {"Squeeze", 1, cv_squeeze},
    {"Slice", 1, cv_slice},       {"Conv", 1, cvt_conv},         {"MaxPool", 1, cvt_pool},
    {"AveragePool", 7, cvt_pool},  {"GlobalAveragePool", 1, cvt_global_pool},
    {"GlobalMaxPool", 1, cvt_global_pool}, {"LogSoftmax", 1, cvt_softmax},
    {"Reciprocal", 6, cv_unary},  {"Sign", 9, cv_unary},        {"Softplus", 1, cv_unary},
    {"Softsign", 1, cv_unary},    {"LessOrEqual", 12, cv_binary}, {"GreaterOrEqual", 12, cv_binary},
    {"Mean", 8, cv_mean},         {"PRelu", 7, cv_prelu},       {"Elu", 6, cv_elu},
    {"Selu", 6, cv_elu},          {"Expand", 8, cv_expand},     {"Pad", 2, cv_pad},
    {"Size", 1, cv_size},         {"ReduceSum", 1, cvt_reduce},  {"ReduceMean", 1, cvt_reduce},
    {"ReduceMax", 1, cvt_reduce},  {"ReduceMin", 1, cvt_reduce},  {"ReduceProd", 1, cvt_reduce},
    {"ReduceL1", 1, cvt_reduce},   {"ReduceL2", 1, cvt_reduce},   {"ReduceLogSum", 1, cvt_reduce},
    {"ReduceLogSumExp", 1, cvt_reduce}, {"ReduceSumSquare", 1, cvt_reduce},
    {"ArgMax", 1, cvt_arg_reduce}, {"ArgMin", 1, cvt_arg_reduce},
    {"LayerNormalization", 17, cvt_layer_norm},
    {"BatchNormalization", 7, cvt_batch_norm}, {"Gemm", 7, cvt_gemm}, {"MatMul", 1, cvt_matmul},
    {"Softmax", 1, cvt_softmax},   {"Transpose", 1, cvt_transpose}, {"Split", 2, cvt_split},
    {NULL, 0, NULL}};

const imp_converter *imp_converters(void) { return g_converters; }
