/* onnx_convert.c: one converter per ONNX op type, listed in one table at
 * the end. A converter maps the node's inputs and attributes (as its opset
 * defines them) onto graph ops. Nodes computing on constants only (shape
 * arithmetic) are folded into constants here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define MAXD KILN_MAX_NDIM

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

static int64_t get_i(const kiln_ndarray *a, int64_t i) {
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
            int64_t xi = get_i(a, ai), yi = get_i(b, bi);
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
    {"Not", "logical_not"}, {NULL, NULL}};

static const op_map binary_ops[] = {
    {"Add", "add"},     {"Sub", "subtract"}, {"Mul", "multiply"}, {"Div", "divide"},
    {"Pow", "power"},   {"Equal", "equal"},  {"Less", "less"},    {"Greater", "greater"},
    {"And", "logical_and"}, {"Or", "logical_or"}, {"Max", "maximum"}, {"Min", "minimum"},
    {NULL, NULL}};

static const char *lookup(const op_map *m, const char *onnx) {
    for (; m->onnx; m++)
        if (!strcmp(m->onnx, onnx)) return m->op;
    return NULL;
}

static int cv_unary(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    return outs[0] = imp_call(I, n, lookup(unary_ops, n->op_type), 1, &x, NULL);
}

/* Binary ops, and the variadic Max/Min/Sum folded left to right. */
static int cv_binary(imp *I, const Onnx__NodeProto *n, int *outs) {
    const char *op = !strcmp(n->op_type, "Sum") ? "add" : lookup(binary_ops, n->op_type);
    int k = imp_ninputs(n);
    if (k < 1) return imp_fail(I, n, "needs at least one input");
    int acc = imp_input(I, n, 0);
    for (int i = 1; i < k; i++) {
        int in[2] = {acc, imp_input(I, n, i)};
        const kiln_ndarray *a = imp_const(I, in[0]), *b = imp_const(I, in[1]);
        kiln_ndarray *f = a && b ? fold_binary(op, a, b) : NULL;
        acc = f ? imp_add_const(I, n->name, f) : imp_call(I, n, op, 2, in, NULL);
        if (acc < 0) return -1;
    }
    return outs[0] = acc;
}

static int cv_where(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[3] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2)};
    return outs[0] = imp_call(I, n, "where", 3, in, NULL);
}

static int float_const_like(imp *I, const Onnx__NodeProto *n, int like, double v) {
    const gtensor_type *t = imp_type(I, like);
    return imp_scalar_const(I, n->name, t ? t->dtype : KILN_FLOAT32, v);
}

static int cv_clip(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    double lo = -INFINITY, hi = INFINITY;
    if (I->opset < 11) {
        lo = imp_attr_float(n, "min", -INFINITY);
        hi = imp_attr_float(n, "max", INFINITY);
    } else {
        for (int k = 1; k <= 2; k++) {
            int id = imp_input(I, n, k);
            if (id < 0) continue;
            const kiln_ndarray *c = imp_const(I, id);
            if (!c || numel_of(c) != 1)
                return imp_fail(I, n, "min and max must be constant scalars");
            if (k == 1) lo = get_d(c, 0);
            else hi = get_d(c, 0);
        }
    }
    char attrs[128];
    snprintf(attrs, sizeof attrs, "a_min=%.9gf, a_max=%.9gf", isinf(lo) ? -3.4e38 : lo,
             isinf(hi) ? 3.4e38 : hi);
    return outs[0] = imp_call(I, n, "clip", 1, &x, attrs);
}

static int cv_leaky_relu(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "alpha=%.9gf", imp_attr_float(n, "alpha", 0.01f));
    return outs[0] = imp_call(I, n, "nn.leaky_relu", 1, &x, attrs);
}

/* HardSigmoid: clip(alpha*x + beta, 0, 1); HardSwish: x * HardSigmoid(x) with 1/6, 1/2. */
static int hard_sigmoid(imp *I, const Onnx__NodeProto *n, int x, double alpha, double beta) {
    int a = float_const_like(I, n, x, alpha), b = float_const_like(I, n, x, beta);
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
    int x = imp_input(I, n, 0);
    kiln_dtype dt;
    int64_t to = imp_attr_int(n, "to", 0);
    if (!onnx_dtype_to_kiln((int)to, &dt))
        return imp_fail(I, n, "cast to %s is not supported", onnx_dtype_name((int)to));
    const kiln_ndarray *c = imp_const(I, x);
    if (c && foldable_dtype(kiln_ndarray_dtype(c)) && foldable_dtype(dt) &&
        numel_of(c) <= FOLD_MAX_NUMEL) {
        int64_t dims[MAXD];
        int nd = ndarray_dims(c, dims);
        kiln_ndarray *r = kiln_ndarray_empty(dt, nd, dims);
        if (!r) return -1;
        for (int64_t i = 0; i < numel_of(c); i++) set_d(r, i, get_d(c, i));
        return outs[0] = imp_add_const(I, n->name, r);
    }
    char attrs[64];
    snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(dt));
    return outs[0] = imp_call(I, n, "cast", 1, &x, attrs);
}

static int cv_identity(imp *I, const Onnx__NodeProto *n, int *outs) {
    if (n->n_output > 1 && n->output[1][0] && !strcmp(n->op_type, "Dropout"))
        return imp_fail(I, n, "the Dropout mask output is not supported");
    return outs[0] = imp_input(I, n, 0);
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
    for (int d = 0; d < nd; d++) dims[d] = get_i(s, d);
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
    if (!data || !idx)
        return imp_fail(I, n, "Gather is supported on constant inputs only so far");
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
            int64_t j = get_i(idx, k);
            if (j < 0) j += dd[axis];
            if (j < 0 || j >= dd[axis]) {
                kiln_ndarray_free(r);
                return imp_fail(I, n, "index %lld is out of range for a dim of %lld",
                                (long long)get_i(idx, k), (long long)dd[axis]);
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
static int reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd, const int64_t *dims) {
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
        for (int d = 0; d < nd; d++) dims[d] = get_i(s, d);
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
    return outs[0] = reshape_to(I, n, x, nd, dims);
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
    return outs[0] = reshape_to(I, n, x, 2, dims);
}

/* Axes from the attribute (opset < 13) or the second input. */
static int axes_of(imp *I, const Onnx__NodeProto *n, int64_t *axes) {
    if (I->opset < 13) return imp_attr_ints(n, "axes", axes, MAXD);
    int id = imp_input(I, n, 1);
    if (id < 0) return -1;
    const kiln_ndarray *c = imp_const(I, id);
    if (!c || numel_of(c) > MAXD) return -2;
    for (int64_t i = 0; i < numel_of(c); i++) axes[i] = get_i(c, i);
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
    return outs[0] = reshape_to(I, n, x, nd, dims);
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
    return outs[0] = reshape_to(I, n, x, nd, dims);
}

/* Slice of a constant 1-D tensor (shape arithmetic). */
static int cv_slice(imp *I, const Onnx__NodeProto *n, int *outs) {
    const kiln_ndarray *c = imp_const(I, imp_input(I, n, 0));
    if (!c || kiln_ndarray_ndim(c) != 1 || I->opset < 10)
        return imp_fail(I, n, "Slice is supported on constant 1-D inputs only so far");
    const kiln_ndarray *st = imp_const(I, imp_input(I, n, 1)), *en = imp_const(I, imp_input(I, n, 2));
    int sid = imp_input(I, n, 4);
    const kiln_ndarray *sp = sid >= 0 ? imp_const(I, sid) : NULL;
    if (!st || !en || numel_of(st) != 1 || numel_of(en) != 1 || (sid >= 0 && !sp))
        return imp_fail(I, n, "starts, ends and steps must be constant");
    int64_t len = kiln_ndarray_dim(c, 0), s = get_i(st, 0), e = get_i(en, 0);
    int64_t step = sp ? get_i(sp, 0) : 1;
    if (step != 1) return imp_fail(I, n, "only step 1 is supported so far");
    if (s < 0) s += len;
    if (e < 0) e += len;
    s = s < 0 ? 0 : s > len ? len : s;
    e = e < s ? s : e > len ? len : e;
    int64_t olen = e - s;
    kiln_ndarray *r = kiln_ndarray_empty(kiln_ndarray_dtype(c), 1, &olen);
    if (!r) return -1;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(c));
    memcpy(kiln_ndarray_data(r), (const char *)kiln_ndarray_data(c) + s * (int64_t)es, (size_t)olen * es);
    return outs[0] = imp_add_const(I, n->name, r);
}

/* ---- nn --------------------------------------------------------------------------- */

/* pads for auto_pad SAME_UPPER / SAME_LOWER / VALID, or the pads attribute;
 * writes [top, left, bottom, right]. */
static int conv_pads(imp *I, const Onnx__NodeProto *n, const gtensor_type *x, const int64_t *k,
                     const int64_t *s, const int64_t *d, int64_t *pads) {
    char buf[32];
    const char *ap = imp_attr_str(n, "auto_pad", "NOTSET", buf, sizeof buf);
    int64_t p[4] = {0, 0, 0, 0};
    if (!strcmp(ap, "NOTSET")) {
        int np = imp_attr_ints(n, "pads", p, 4);
        if (np != -1 && np != 4) return imp_fail(I, n, "pads must have 4 values for 2-D");
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t in = x->dims[2 + i].v, out = (in + s[i] - 1) / s[i];
            int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in;
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            p[i] = !strcmp(ap, "SAME_UPPER") ? small : big;
            p[i + 2] = !strcmp(ap, "SAME_UPPER") ? big : small;
        }
    } else if (strcmp(ap, "VALID")) {
        return imp_fail(I, n, "auto_pad '%s' is not supported", ap);
    }
    /* ONNX order is [x1_begin, x2_begin, x1_end, x2_end]: the same as (t, l, b, r) */
    memcpy(pads, p, sizeof p);
    return 0;
}

static int spatial2d(imp *I, const Onnx__NodeProto *n, const gtensor_type *x) {
    if (!x || x->ndim != 4)
        return imp_fail(I, n, "only 2-D (4-D NCHW tensors) is supported so far");
    if (x->dims[2].sym || x->dims[3].sym) return imp_fail(I, n, "spatial dims must be concrete");
    return 0;
}

static int ints2(const Onnx__NodeProto *n, const char *name, int64_t def, int64_t *v) {
    int k = imp_attr_ints(n, name, v, 2);
    if (k < 0) v[0] = v[1] = def;
    else if (k == 1) v[1] = v[0];
    else if (k != 2) return 0;
    return 1;
}

static int cv_conv(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), w = imp_input(I, n, 1), b = imp_input(I, n, 2);
    const gtensor_type *xt = imp_type(I, x), *wt = imp_type(I, w);
    if (spatial2d(I, n, xt) < 0) return -1;
    if (!wt || wt->ndim != 4) return imp_fail(I, n, "the weight must be 4-D");
    int64_t k[2] = {wt->dims[2].v, wt->dims[3].v}, s[2], d[2], pads[4];
    if (!ints2(n, "strides", 1, s) || !ints2(n, "dilations", 1, d))
        return imp_fail(I, n, "strides and dilations need 2 values");
    if (conv_pads(I, n, xt, k, s, d, pads) < 0) return -1;
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             "strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], dilation=[%lld, %lld], "
             "groups=%lld",
             (long long)s[0], (long long)s[1], (long long)pads[0], (long long)pads[1],
             (long long)pads[2], (long long)pads[3], (long long)d[0], (long long)d[1],
             (long long)imp_attr_int(n, "group", 1));
    int in[2] = {x, w};
    int c = imp_call(I, n, "nn.conv2d", 2, in, attrs);
    if (c < 0 || b < 0) return outs[0] = c;
    int bi[2] = {c, b};
    return outs[0] = imp_call(I, n, "nn.bias_add", 2, bi, "axis=1");
}

static int cv_pool(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *xt = imp_type(I, x);
    if (spatial2d(I, n, xt) < 0) return -1;
    if (n->n_output > 1 && n->output[1][0])
        return imp_fail(I, n, "the Indices output of MaxPool is not supported");
    int64_t k[2], s[2], d[2], pads[4];
    if (imp_attr_ints(n, "kernel_shape", k, 2) != 2) return imp_fail(I, n, "kernel_shape needs 2 values");
    if (!ints2(n, "strides", 1, s) || !ints2(n, "dilations", 1, d))
        return imp_fail(I, n, "strides and dilations need 2 values");
    if (conv_pads(I, n, xt, k, s, d, pads) < 0) return -1;
    int is_max = !strcmp(n->op_type, "MaxPool");
    if (!is_max && (d[0] != 1 || d[1] != 1)) return imp_fail(I, n, "dilated average pooling");
    char attrs[320];
    snprintf(attrs, sizeof attrs,
             "pool_size=[%lld, %lld], strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], "
             "dilation=[%lld, %lld], ceil_mode=%lld, count_include_pad=%lld",
             (long long)k[0], (long long)k[1], (long long)s[0], (long long)s[1], (long long)pads[0],
             (long long)pads[1], (long long)pads[2], (long long)pads[3], (long long)d[0],
             (long long)d[1], (long long)imp_attr_int(n, "ceil_mode", 0),
             (long long)imp_attr_int(n, "count_include_pad", 0));
    return outs[0] = imp_call(I, n, is_max ? "nn.max_pool2d" : "nn.avg_pool2d", 1, &x, attrs);
}

static int cv_global_avg_pool(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    return outs[0] = imp_call(I, n, "nn.global_avg_pool2d", 1, &x, NULL);
}

static int cv_batch_norm(imp *I, const Onnx__NodeProto *n, int *outs) {
    if (imp_attr_int(n, "training_mode", 0))
        return imp_fail(I, n, "training mode is not supported");
    int in[5];
    for (int i = 0; i < 5; i++) in[i] = imp_input(I, n, i);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "epsilon=%.9gf", imp_attr_float(n, "epsilon", 1e-5f));
    return outs[0] = imp_call(I, n, "nn.batch_norm", 5, in, attrs);
}

/* A constant's 2-D transpose, for weights given as [K, N]. */
static int transposed_const(imp *I, const Onnx__NodeProto *n, const kiln_ndarray *c) {
    int64_t r = kiln_ndarray_dim(c, 0), k = kiln_ndarray_dim(c, 1), dims[2] = {k, r};
    kiln_ndarray *t = kiln_ndarray_empty(kiln_ndarray_dtype(c), 2, dims);
    if (!t) return -1;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(c));
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < k; j++)
            memcpy((char *)kiln_ndarray_data(t) + (j * r + i) * (int64_t)es,
                   (const char *)kiln_ndarray_data(c) + (i * k + j) * (int64_t)es, es);
    char name[600];
    snprintf(name, sizeof name, "%s.T", n->name);
    return imp_add_const(I, name, t);
}

/* dense(x, W) with W as [units, in]: transposed at import when given as [in, units]. */
static int dense_of(imp *I, const Onnx__NodeProto *n, int x, int w, int w_is_kn) {
    if (w_is_kn) {
        const kiln_ndarray *c = imp_const(I, w);
        if (c && kiln_ndarray_ndim(c) == 2) {
            w = transposed_const(I, n, c);
        } else {
            w = imp_call(I, n, "transpose", 1, &w, "axes=[1, 0]");
        }
        if (w < 0) return -1;
    }
    int in[2] = {x, w};
    return imp_call(I, n, "nn.dense", 2, in, NULL);
}

static int scaled(imp *I, const Onnx__NodeProto *n, int x, double s) {
    if (s == 1.0) return x;
    int c = float_const_like(I, n, x, s);
    int m[2] = {x, c};
    return c < 0 ? -1 : imp_call(I, n, "multiply", 2, m, NULL);
}

static int cv_gemm(imp *I, const Onnx__NodeProto *n, int *outs) {
    int a = imp_input(I, n, 0), b = imp_input(I, n, 1), c = imp_input(I, n, 2);
    if (imp_attr_int(n, "transA", 0)) {
        a = imp_call(I, n, "transpose", 1, &a, "axes=[1, 0]");
        if (a < 0) return -1;
    }
    int y = dense_of(I, n, a, b, !imp_attr_int(n, "transB", 0));
    if (y < 0) return -1;
    y = scaled(I, n, y, imp_attr_float(n, "alpha", 1.0f));
    if (y < 0 || c < 0) return outs[0] = y;
    int cs = scaled(I, n, c, imp_attr_float(n, "beta", 1.0f));
    int in[2] = {y, cs};
    return outs[0] = cs < 0 ? -1 : imp_call(I, n, "add", 2, in, NULL);
}

static int cv_matmul(imp *I, const Onnx__NodeProto *n, int *outs) {
    int a = imp_input(I, n, 0), b = imp_input(I, n, 1);
    const gtensor_type *bt = imp_type(I, b);
    if (!bt || bt->ndim != 2 || !imp_const(I, b))
        return imp_fail(I, n, "MatMul is supported with a constant 2-D right-hand side only so "
                        "far");
    return outs[0] = dense_of(I, n, a, b, 1);
}

static int cv_softmax(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int64_t axis = imp_attr_int(n, "axis", I->opset < 13 ? 1 : -1);
    if (axis < 0) axis += t->ndim;
    if (axis < 0 || axis >= t->ndim) return imp_fail(I, n, "axis out of range");
    char attrs[32];
    if (I->opset >= 13 || axis == t->ndim - 1) {
        snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
        return outs[0] = imp_call(I, n, "nn.softmax", 1, &x, attrs);
    }
    /* opset < 13: softmax over the flattened dims from axis on */
    int64_t a = 1, b = 1, orig[MAXD];
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym) return imp_fail(I, n, "symbolic dims are not supported here yet");
        orig[d] = t->dims[d].v;
        *(d < axis ? &a : &b) *= t->dims[d].v;
    }
    int64_t flat[2] = {a, b};
    int r = reshape_to(I, n, x, 2, flat);
    int s = r < 0 ? -1 : imp_call(I, n, "nn.softmax", 1, &r, "axis=1");
    return outs[0] = s < 0 ? -1 : reshape_to(I, n, s, t->ndim, orig);
}

static int cv_transpose(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t perm[MAXD];
    int np = imp_attr_ints(n, "perm", perm, MAXD);
    if (np < 0) return outs[0] = imp_call(I, n, "transpose", 1, &x, NULL);
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "axes=[");
    for (int i = 0; i < np; i++) kstr_printf(&a, "%s%lld", i ? ", " : "", (long long)perm[i]);
    kstr_puts(&a, "]");
    outs[0] = imp_call(I, n, "transpose", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

static int cv_split(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t) return imp_fail(I, n, "the input has no tensor type");
    int64_t axis = imp_attr_int(n, "axis", 0), parts[64];
    if (axis < 0) axis += t->ndim;
    if (axis < 0 || axis >= t->ndim) return imp_fail(I, n, "axis out of range");
    int np;
    if (I->opset < 13) {
        np = imp_attr_ints(n, "split", parts, 64);
    } else {
        int sid = imp_input(I, n, 1);
        const kiln_ndarray *c = sid >= 0 ? imp_const(I, sid) : NULL;
        if (sid >= 0 && (!c || numel_of(c) > 64)) return imp_fail(I, n, "split must be constant");
        np = c ? (int)numel_of(c) : -1;
        for (int i = 0; i < np; i++) parts[i] = get_i(c, i);
    }
    kstr a;
    kstr_init(&a);
    if (np < 0) {
        /* equal parts, one per output */
        int64_t len = t->dims[axis].v, k = (int64_t)n->n_output;
        if (t->dims[axis].sym || k < 1 || len % k)
            return kstr_free(&a), imp_fail(I, n, "cannot split the axis into %lld equal parts", (long long)k);
        kstr_puts(&a, "indices_or_sections=[");
        for (int64_t i = 1; i < k; i++) kstr_printf(&a, "%s%lld", i > 1 ? ", " : "", (long long)(len / k * i));
        kstr_printf(&a, "], axis=%lld", (long long)axis);
    } else {
        kstr_puts(&a, "indices_or_sections=[");
        int64_t acc = 0;
        for (int i = 0; i + 1 < np; i++) {
            acc += parts[i];
            kstr_printf(&a, "%s%lld", i ? ", " : "", (long long)acc);
        }
        kstr_printf(&a, "], axis=%lld", (long long)axis);
    }
    int s = imp_call(I, n, "split", 1, &x, a.buf);
    kstr_free(&a);
    if (s < 0) return -1;
    for (size_t k = 0; k < n->n_output && k < 64; k++) {
        outs[k] = kiln_graph_tuple_get(I->g, s, (int)k, n->output[k]);
        if (outs[k] < 0 || graph_infer_node(I->g, outs[k]) != KILN_OK)
            return imp_fail(I, n, "%s", kiln_last_error());
    }
    return 0;
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
    {"Slice", 10, cv_slice},      {"Conv", 1, cv_conv},         {"MaxPool", 1, cv_pool},
    {"AveragePool", 7, cv_pool},  {"GlobalAveragePool", 1, cv_global_avg_pool},
    {"BatchNormalization", 7, cv_batch_norm}, {"Gemm", 7, cv_gemm}, {"MatMul", 1, cv_matmul},
    {"Softmax", 1, cv_softmax},   {"Transpose", 1, cv_transpose}, {"Split", 2, cv_split},
    {NULL, 0, NULL}};

const imp_converter *imp_converters(void) { return g_converters; }
