/* onnx_convert.c: converters of the ONNX ops that are more than one kiln
 * op taking the node's inputs as they are (those are plain rows of the
 * table in onnx_table.c): variadic and mixed-dtype elementwise ops, ops
 * whose attributes pick the kiln op (Mod, BitShift), composites (Clip,
 * PRelu, HardSigmoid), Cast, CastLike, constants and shapes. A converter
 * maps the node's inputs and attributes, as its opset defines them, onto
 * graph ops; constant inputs fold as the ops are added (imp_call), so a
 * converter reads a shape input that a sub-graph computed as a constant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_convert.h"

/* ---- elementwise -------------------------------------------------------------------- */

/* Before opset 8 the inputs of Max, Min, Sum and Mean all have one shape
 * (no broadcasting): 0, or -1 with an error. */
static int same_shapes(imp *I, const Onnx__NodeProto *n) {
    const gtensor_type *t0 = imp_type(I, imp_input(I, n, 0));
    for (int i = 1; I->opset < 8 && t0 && i < imp_ninputs(n); i++) {
        const gtensor_type *t = imp_type(I, imp_input(I, n, i));
        int same = t && t->ndim == t0->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = gdim_equal(t->dims[d], t0->dims[d]);
        if (!same)
            return imp_fail(I, n,
                            "input %d's shape differs from input 0's (opset %lld does not "
                            "broadcast; opset 8 does)",
                            i, (long long)I->opset);
    }
    return 0;
}

/* Max, Min and Sum of one or more inputs, applied left to right. */
int cvt_variadic(imp *I, const Onnx__NodeProto *n, int *outs) {
    const char *op = !strcmp(n->op_type, "Sum")   ? "add"
                     : !strcmp(n->op_type, "Max") ? "maximum"
                                                  : "minimum";
    int k = imp_ninputs(n);
    if (k < 1)
        return imp_fail(I, n, "needs at least one input");
    if (same_shapes(I, n) < 0)
        return -1;
    int acc = imp_input(I, n, 0);
    for (int i = 1; i < k && acc >= 0; i++)
        acc = cvt_binary_of(I, n, op, acc, imp_input(I, n, i));
    return outs[0] = acc;
}

/* Add, Sub, Mul, Div and Pow before opset 7: no broadcasting unless broadcast=1,
 * and then B's shape is a run of A's dims starting at `axis` (by default
 * A's last dims), so the result has A's shape. B is reshaped with trailing
 * 1s for numpy's rule. */
int cvt_legacy_binary(imp *I, const Onnx__NodeProto *n, int *outs) {
    const char *op = !strcmp(n->op_type, "Add")   ? "add"
                     : !strcmp(n->op_type, "Sub") ? "subtract"
                     : !strcmp(n->op_type, "Mul") ? "multiply"
                     : !strcmp(n->op_type, "Pow") ? "power"
                                                  : "divide";
    int a = imp_input(I, n, 0), b = imp_input(I, n, 1);
    const gtensor_type *ta = imp_type(I, a), *tb = imp_type(I, b);
    if (!ta || !tb)
        return -1;
    if (!imp_attr_int(I, n, "broadcast", 0)) {
        if (same_shapes(I, n) < 0)
            return -1;
        return outs[0] = cvt_binary_of(I, n, op, a, b);
    }
    int64_t axis = imp_attr_int(I, n, "axis", ta->ndim - tb->ndim);
    if (axis < 0 || tb->ndim > ta->ndim || axis > ta->ndim - tb->ndim)
        return imp_fail(I, n, "B (rank %d) does not fit A (rank %d) at axis %lld", tb->ndim,
                        ta->ndim, (long long)axis);
    int64_t dims[MAXD];
    for (int d = 0; d < tb->ndim; d++) {
        if (!gdim_equal(tb->dims[d], ta->dims[axis + d]) &&
            !(tb->dims[d].v == 1 && !tb->dims[d].sym))
            return imp_fail(I, n, "B's dim %d does not match A's dim %lld", d,
                            (long long)(axis + d));
        if (tb->dims[d].sym)
            return imp_fail(I, n, "a symbolic dim in B is not supported here");
        dims[d] = tb->dims[d].v;
    }
    int nb = tb->ndim;
    while (nb < ta->ndim - axis)
        dims[nb++] = 1;
    int br = nb == tb->ndim ? b : cvt_reshape_to(I, n, b, nb, dims);
    return outs[0] = cvt_binary_of(I, n, op, a, br);
}

/* Pow: the exponent may have another dtype than the base. */
int cvt_power(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), y = imp_input(I, n, 1);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the base has no tensor type");
    return outs[0] = cvt_binary_of(I, n, "power", x, cvt_cast_to(I, n, y, t->dtype));
}

/* Mean of several inputs: their sum over the count. */
int cvt_mean(imp *I, const Onnx__NodeProto *n, int *outs) {
    if (same_shapes(I, n) < 0)
        return -1;
    int k = imp_ninputs(n), acc = imp_input(I, n, 0);
    for (int i = 1; i < k && acc >= 0; i++)
        acc = cvt_binary_of(I, n, "add", acc, imp_input(I, n, i));
    const gtensor_type *t = imp_type(I, acc);
    if (acc < 0 || !t)
        return -1;
    if (k == 1)
        return outs[0] = acc;
    return outs[0] = cvt_binary_of(I, n, "divide", acc, imp_scalar_const(I, n, t->dtype, k));
}

/* Mod: fmod 1 is the truncating remainder (C's % and fmod, the sign of the
 * dividend), fmod 0 the floor remainder (the sign of the divisor; integers
 * only, as ONNX says). An integer remainder by 0 is 0 (base/intdiv.h). */
int cvt_mod(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), y = imp_input(I, n, 1);
    const gtensor_type *t = imp_type(I, x);
    int64_t fmod = imp_attr_int(I, n, "fmod", 0);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    if (fmod != 0 && fmod != 1)
        return imp_fail(I, n, "attribute 'fmod' = %lld must be 0 or 1", (long long)fmod);
    int isf = t->dtype == KILN_FLOAT32 || t->dtype == KILN_FLOAT64 || t->dtype == KILN_FLOAT16 ||
              t->dtype == KILN_BFLOAT16;
    if (isf && !fmod)
        return imp_fail(I, n, "a %s input needs attribute 'fmod' = 1", kiln_dtype_name(t->dtype));
    return outs[0] = cvt_binary_of(I, n, fmod ? "mod" : "floor_mod", x, y);
}

/* BitShift: x shifted by y bits, direction LEFT or RIGHT. */
int cvt_bitshift(imp *I, const Onnx__NodeProto *n, int *outs) {
    char buf[16];
    const char *dir = imp_attr_str(I, n, "direction", "", buf, sizeof buf);
    int left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT"))
        return imp_fail(I, n, "attribute 'direction' = '%s' is not LEFT or RIGHT", dir);
    return outs[0] = cvt_binary_of(I, n, left ? "left_shift" : "right_shift", imp_input(I, n, 0),
                                   imp_input(I, n, 1));
}

/* Clip: the clip op for constant float bounds, else maximum/minimum with
 * the bound tensors (non-constant bounds, integer dtypes). */
int cvt_clip(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), bound[2] = {-1, -1};
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int isf = t->dtype == KILN_FLOAT32 || t->dtype == KILN_FLOAT64;
    double v[2] = {-INFINITY, INFINITY};
    int is_const[2] = {1, 1};
    if (I->opset < 11) {
        v[0] = imp_attr_float(I, n, "min", -INFINITY);
        v[1] = imp_attr_float(I, n, "max", INFINITY);
    } else {
        for (int k = 0; k < 2; k++) {
            if ((bound[k] = imp_input(I, n, k + 1)) < 0)
                continue;
            /* a scalar: rank 0, or [1] as ONNX Runtime also takes */
            const gtensor_type *bt = imp_type(I, bound[k]);
            if (!bt || bt->ndim > 1 || (bt->ndim == 1 && (bt->dims[0].sym || bt->dims[0].v != 1)))
                return imp_fail(I, n, "input '%s' (%s) must be a scalar, not of rank %d",
                                k ? "max" : "min", n->input[k + 1], bt ? bt->ndim : -1);
            const kiln_ndarray *c = imp_const(I, bound[k]);
            if (c && kiln_ndarray_numel(c) == 1)
                v[k] = cvt_get_d(c, 0);
            else
                is_const[k] = 0;
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
            if (isinf(v[k]))
                continue;
            b = imp_scalar_const(I, n, t->dtype, v[k]);
        }
        if (b >= 0)
            y = cvt_binary_of(I, n, k ? "minimum" : "maximum", y, cvt_cast_to(I, n, b, t->dtype));
    }
    return outs[0] = y;
}

/* PRelu: x < 0 ? x * slope : x, the slope broadcast onto x. */
int cvt_prelu(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), slope = imp_input(I, n, 1);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    /* before opset 7 a 1-D slope of C values is per channel (axis 1) */
    const gtensor_type *st = imp_type(I, slope);
    if (I->opset < 7 && st && st->ndim == 1 && t->ndim > 2 && !st->dims[0].sym &&
        gdim_equal(st->dims[0], t->dims[1])) {
        int64_t dims[MAXD];
        dims[0] = st->dims[0].v;
        for (int d = 1; d < t->ndim - 1; d++)
            dims[d] = 1;
        slope = cvt_reshape_to(I, n, slope, t->ndim - 1, dims);
    }
    int neg = cvt_binary_of(I, n, "less", x, imp_scalar_const(I, n, t->dtype, 0));
    int scaled_x = cvt_binary_of(I, n, "multiply", x, slope);
    int in[3] = {neg, scaled_x, x};
    return outs[0] = neg < 0 || scaled_x < 0 ? -1 : imp_call(I, n, "where", 3, in, NULL);
}

/* HardSigmoid: clip(alpha*x + beta, 0, 1). */
int cvt_hard_sigmoid_of(imp *I, const Onnx__NodeProto *n, int x, double alpha, double beta) {
    int ax = cvt_binary_of(I, n, "multiply", x, cvt_float_const_like(I, n, x, alpha));
    int axb = cvt_binary_of(I, n, "add", ax, cvt_float_const_like(I, n, x, beta));
    return axb < 0 ? -1 : imp_call(I, n, "clip", 1, &axb, "a_min=0, a_max=1");
}

int cvt_hard_sigmoid(imp *I, const Onnx__NodeProto *n, int *outs) {
    return outs[0] =
               cvt_hard_sigmoid_of(I, n, imp_input(I, n, 0), imp_attr_float(I, n, "alpha", 0.2f),
                                   imp_attr_float(I, n, "beta", 0.5f));
}

int cvt_cast(imp *I, const Onnx__NodeProto *n, int *outs) {
    kiln_dtype dt;
    int64_t to = imp_attr_int(I, n, "to", 0);
    if (!onnx_dtype_to_kiln((int)to, &dt))
        return imp_fail(I, n, "cast to %s is not supported", onnx_dtype_name((int)to));
    return outs[0] = cvt_cast_to(I, n, imp_input(I, n, 0), dt);
}

/* CastLike: input 0 cast to the dtype of input 1. */
int cvt_cast_like(imp *I, const Onnx__NodeProto *n, int *outs) {
    const gtensor_type *like = imp_type(I, imp_input(I, n, 1));
    if (!like)
        return imp_fail(I, n, "input 'target_type' has no tensor type");
    return outs[0] = cvt_cast_to(I, n, imp_input(I, n, 0), like->dtype);
}

/* A constant broadcast to dims[nd] (folded unless it is large). */
int cvt_filled(imp *I, const Onnx__NodeProto *n, int scalar, int nd, const int64_t *dims) {
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "shape", nd, dims);
    int id = scalar < 0 ? -1 : imp_call(I, n, "broadcast_to", 1, &scalar, a.buf);
    kstr_free(&a);
    return id;
}

int cvt_identity(imp *I, const Onnx__NodeProto *n, int *outs) {
    return outs[0] = imp_input(I, n, 0);
}

/* Input i of n as a 0-d value: a constant's only element as *c (if c), a
 * one-element tensor reshaped; -1 with an error naming `what` otherwise. */
static int scalar_input(imp *I, const Onnx__NodeProto *n, int i, const char *what,
                        const kiln_ndarray **c) {
    int id = imp_input(I, n, i);
    const gtensor_type *t = imp_type(I, id);
    if (!t || t->ndim > 1 || (t->ndim == 1 && (t->dims[0].sym || t->dims[0].v != 1)))
        return imp_fail(I, n, "%s must be a scalar", what);
    if (c)
        *c = imp_const(I, id);
    return t->ndim ? cvt_reshape_to(I, n, id, 0, NULL) : id;
}

/* Dropout. y = x and the mask all true at inference: before opset 12, and
 * from it without training_mode, with a constant false one or a constant
 * ratio of 0. In training mode (training_mode a constant true or given at
 * run time) an element is kept where random_uniform_like(x) >= ratio
 * (default 0.5) and scaled by 1 / (1 - ratio), else 0; where training_mode
 * is false at run time every element is kept unscaled. The numbers are a
 * hash of the position and attribute seed, or without one of a seed made
 * from the node's first output name: the same mask in every run of the
 * model (the kernels keep no state). */
int cvt_dropout(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    const kiln_ndarray *train = NULL, *ratio = NULL;
    int tm = I->opset >= 12 && imp_input(I, n, 2) >= 0
                 ? scalar_input(I, n, 2, "training_mode", &train)
                 : -2;
    int r = I->opset >= 12 && imp_input(I, n, 1) >= 0 ? scalar_input(I, n, 1, "ratio", &ratio) : -2;
    if (tm == -1 || r == -1)
        return -1;
    if (tm == -2 || (train && cvt_get_d(train, 0) == 0) || (ratio && cvt_get_d(ratio, 0) == 0)) {
        outs[0] = x;
        if (n->n_output < 2 || !n->output[1][0])
            return 0;
        if (!cvt_concrete(t))
            return imp_fail(I, n, "the mask needs a concrete shape");
        int64_t dims[MAXD];
        for (int d = 0; d < t->ndim; d++)
            dims[d] = t->dims[d].v;
        outs[1] = cvt_filled(I, n, imp_scalar_const(I, n, KILN_BOOL, 1), t->ndim, dims);
        return outs[1] < 0 ? -1 : 0;
    }
    if (ratio && !(cvt_get_d(ratio, 0) > 0 && cvt_get_d(ratio, 0) < 1))
        return imp_fail(I, n, "ratio %g is not in [0, 1)", cvt_get_d(ratio, 0));
    const Onnx__AttributeProto *sa =
        imp_attr(I, n, "seed", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    uint64_t seed = 14695981039346656037u; /* FNV-1a of the output name */
    for (const char *p = n->output[0]; *p; p++)
        seed = (seed ^ (unsigned char)*p) * 1099511628211u;
    char attrs[48];
    snprintf(attrs, sizeof attrs, "seed=%lld", sa ? (long long)sa->i : (long long)seed);
    int u = imp_call(I, n, "random_uniform_like", 1, &x, attrs);
    r = r >= 0 ? cvt_cast_to(I, n, r, t->dtype) : imp_scalar_const(I, n, t->dtype, 0.5);
    int one = imp_scalar_const(I, n, t->dtype, 1);
    int keep = cvt_binary_of(I, n, "greater_equal", u, r);
    int scale = cvt_binary_of(I, n, "divide", one, cvt_binary_of(I, n, "subtract", one, r));
    if (!train) { /* training_mode at run time */
        int in[3] = {tm, scale, one};
        keep = cvt_binary_of(I, n, "logical_or", keep, cvt_unary_of(I, n, "logical_not", tm));
        scale = scale < 0 ? -1 : imp_call(I, n, "where", 3, in, NULL);
    }
    int in[3] = {keep, cvt_binary_of(I, n, "multiply", x, scale),
                 imp_scalar_const(I, n, t->dtype, 0)};
    outs[0] = keep < 0 || in[1] < 0 ? -1 : imp_call(I, n, "where", 3, in, NULL);
    if (n->n_output > 1 && n->output[1][0])
        outs[1] = keep;
    return outs[0] < 0 ? -1 : 0;
}

/* ---- constants and shapes ------------------------------------------------------------ */

/* Constant: exactly one of its value attributes (ONNX's rule; the node
 * check has refused any other name). */
int cvt_constant(imp *I, const Onnx__NodeProto *n, int *outs) {
    const Onnx__AttributeProto *a;
    kiln_ndarray *r = NULL;
    if (n->n_attribute != 1)
        return imp_fail(I, n,
                        "needs exactly one of the attributes value, value_float(s) and "
                        "value_int(s), has %zu",
                        n->n_attribute);
    if ((a = imp_attr(I, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR))) {
        char what[600];
        snprintf(what, sizeof what, "Constant '%s'", n->name);
        r = onnx_tensor_to_ndarray(I->m, a->t, what);
        if (!r)
            return imp_fail(I, n, "%s", kiln_last_error());
    } else if ((a = imp_attr(I, n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))) {
        r = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
        if (r)
            *(float *)kiln_ndarray_data(r) = a->f;
    } else if ((a = imp_attr(I, n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))) {
        r = kiln_ndarray_empty(KILN_INT64, 0, NULL);
        if (r)
            *(int64_t *)kiln_ndarray_data(r) = a->i;
    } else if ((a = imp_attr(I, n, "value_floats",
                             ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS))) {
        int64_t len = (int64_t)a->n_floats;
        r = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
        if (r && len)
            memcpy(kiln_ndarray_data(r), a->floats, sizeof(float) * (size_t)len);
    } else if ((a = imp_attr(I, n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))) {
        int64_t len = (int64_t)a->n_ints;
        r = kiln_ndarray_empty(KILN_INT64, 1, &len);
        if (r && len)
            memcpy(kiln_ndarray_data(r), a->ints, sizeof(int64_t) * (size_t)len);
    } else {
        return imp_fail(I, n, "attribute '%s': sparse and string values are not supported",
                        n->attribute[0]->name);
    }
    if (!r)
        return imp_fail(I, n, "%s", kiln_last_error());
    return outs[0] = imp_add_const(I, n->name, r);
}

/* Shape: the input's dims [start, end) as a constant (shapes are static). */
int cvt_shape(imp *I, const Onnx__NodeProto *n, int *outs) {
    const gtensor_type *t = imp_type(I, imp_input(I, n, 0));
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t start = imp_attr_int(I, n, "start", 0), end = imp_attr_int(I, n, "end", t->ndim);
    if (start < 0)
        start += t->ndim;
    if (end < 0)
        end += t->ndim;
    start = start < 0 ? 0 : start > t->ndim ? t->ndim : start;
    end = end < start ? start : end > t->ndim ? t->ndim : end;
    int64_t len = end - start;
    for (int64_t d = start; d < end; d++)
        if (t->dims[d].sym) { /* the values when the package runs */
            char attrs[64];
            int x = imp_input(I, n, 0);
            snprintf(attrs, sizeof attrs, "start=%lld, end=%lld", (long long)start, (long long)end);
            return outs[0] = imp_call(I, n, "shape_of", 1, &x, attrs);
        }
    kiln_ndarray *r = kiln_ndarray_empty(KILN_INT64, 1, &len);
    if (!r)
        return imp_fail(I, n, "%s", kiln_last_error());
    for (int64_t d = start; d < end; d++)
        ((int64_t *)kiln_ndarray_data(r))[d - start] = t->dims[d].v;
    return outs[0] = imp_add_const(I, n->name, r);
}

int cvt_size(imp *I, const Onnx__NodeProto *n, int *outs) {
    const gtensor_type *t = imp_type(I, imp_input(I, n, 0));
    if (!t || !cvt_concrete(t))
        return imp_fail(I, n, "the input needs a concrete shape");
    int64_t dims[MAXD], total;
    for (int d = 0; d < t->ndim; d++)
        dims[d] = t->dims[d].v;
    if (!cvt_numel(I, n, t->ndim, dims, &total))
        return -1;
    kiln_ndarray *r = kiln_ndarray_empty(KILN_INT64, 0, NULL);
    if (!r)
        return imp_fail(I, n, "%s", kiln_last_error());
    *(int64_t *)kiln_ndarray_data(r) = total;
    return outs[0] = imp_add_const(I, n->name, r);
}

/* ConstantOfShape: the value (a one-element tensor, default float 0)
 * broadcast to the constant shape. */
int cvt_constant_of_shape(imp *I, const Onnx__NodeProto *n, int *outs) {
    int64_t dims[MAXD], count;
    int nd = cvt_const_ints(I, n, 0, dims), shape = -1;
    if (nd == -2) { /* the dims are the values, known when the package runs */
        int s = imp_input(I, n, 0);
        const gtensor_type *t = imp_type(I, s);
        if (!t || t->dtype != KILN_INT64 || t->ndim != 1 || t->dims[0].sym || t->dims[0].v < 1)
            return imp_fail(I, n, "the shape input must be int64 with 1 to %d values", MAXD);
        if ((shape = cvt_bind_dims(I, n, s)) < 0)
            return -1;
    } else if (nd < 0) {
        return imp_fail(I, n, "the shape input must be a constant of at most %d values", MAXD);
    } else if (!cvt_numel(I, n, nd, dims, &count)) {
        return -1;
    }
    const Onnx__AttributeProto *a =
        imp_attr(I, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    kiln_ndarray *v = NULL;
    if (a) {
        v = onnx_tensor_to_ndarray(I->m, a->t, "ConstantOfShape value");
        if (!v)
            return imp_fail(I, n, "%s", kiln_last_error());
        if (kiln_ndarray_numel(v) != 1) {
            kiln_ndarray_free(v);
            return imp_fail(I, n, "the value must have one element");
        }
        kiln_ndarray *s = kiln_ndarray_empty(kiln_ndarray_dtype(v), 0, NULL);
        if (s)
            memcpy(kiln_ndarray_data(s), kiln_ndarray_data(v),
                   kiln_dtype_size(kiln_ndarray_dtype(v)));
        kiln_ndarray_free(v);
        v = s;
    } else {
        v = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
        if (v)
            *(float *)kiln_ndarray_data(v) = 0;
    }
    if (!v)
        return imp_fail(I, n, "%s", kiln_last_error());
    int c = imp_add_const(I, n->name, v);
    if (shape >= 0) {
        int in[2] = {c, shape};
        return outs[0] = c < 0 ? -1 : imp_call(I, n, "broadcast_to", 2, in, "");
    }
    return outs[0] = cvt_filled(I, n, c, nd, dims);
}

/* Gather: the take op; constant indices are checked against the axis here. */
int cvt_gather(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[2] = {imp_input(I, n, 0), imp_input(I, n, 1)};
    const gtensor_type *t = imp_type(I, in[0]);
    const kiln_ndarray *idx = imp_const(I, in[1]);
    int64_t axis = imp_attr_int(I, n, "axis", 0);
    if (!t)
        return imp_fail(I, n, "the data input has no tensor type");
    if (axis < -t->ndim || axis >= t->ndim)
        return imp_fail(I, n, "attribute 'axis' = %lld is out of range for a %d-D input",
                        (long long)axis, t->ndim);
    if (idx) {
        gdim len = t->dims[axis < 0 ? axis + t->ndim : axis];
        for (int64_t k = 0; !len.sym && k < kiln_ndarray_numel(idx); k++) {
            int64_t j = cvt_get_i(idx, k);
            if (j < -len.v || j >= len.v)
                return imp_fail(I, n, "index %lld is out of range for a dim of %lld", (long long)j,
                                (long long)len.v);
        }
    }
    char attrs[48];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    return outs[0] = imp_call(I, n, "take", 2, in, attrs);
}

int cvt_concat(imp *I, const Onnx__NodeProto *n, int *outs) {
    int k = imp_ninputs(n), ids[256];
    if (k < 1 || k > 256)
        return imp_fail(I, n, "needs 1 to 256 inputs");
    for (int i = 0; i < k; i++)
        ids[i] = imp_input(I, n, i);
    const gtensor_type *t0 = imp_type(I, ids[0]);
    if (!t0)
        return imp_fail(I, n, "input 0 has no tensor type");
    int64_t axis;
    if (cvt_axis_attr(I, n, 0, t0->ndim, &axis) < 0)
        return -1;
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    return outs[0] = imp_call(I, n, "concatenate", k, ids, attrs);
}

/* Reshape to dims computed when the package runs: from shape values that
 * are data, or over symbolic dims. */
static int cvt_reshape_run_time(imp *I, const Onnx__NodeProto *n, int x) {
    int in[2] = {x, imp_input(I, n, 1)};
    const gtensor_type *s = imp_type(I, in[1]);
    if (I->opset < 5 || !s || s->ndim != 1 || s->dims[0].sym)
        return imp_fail(I, n, "the shape input must have a length known at compile time");
    if (s->dims[0].v == 0) /* to a scalar: nothing to compute */
        return cvt_reshape_to(I, n, x, 0, NULL);
    char attrs[32];
    snprintf(attrs, sizeof attrs, "allowzero=%d", imp_attr_int(I, n, "allowzero", 0) != 0);
    in[1] = cvt_bind_dims(I, n, imp_call(I, n, "reshape_dims", 2, in, attrs));
    return in[1] < 0 ? -1 : imp_call(I, n, "reshape", 2, in, "");
}

int cvt_reshape(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t dims[MAXD];
    int nd;
    if (I->opset < 5) {
        nd = imp_attr_ints(I, n, "shape", dims, MAXD);
    } else {
        nd = cvt_const_ints(I, n, 1, dims);
    }
    if (!t || nd == -1)
        return imp_fail(I, n, "bad input or shape");
    if (nd == -2) /* the dims are known when the package runs */
        return outs[0] = cvt_reshape_run_time(I, n, x);
    int allowzero = imp_attr_int(I, n, "allowzero", 0) != 0;
    if (!cvt_concrete(t)) {
        /* symbolic dims each copied in place (shape 0 there): the op keeps
           them, and infers a -1 from the other dims */
        int keep = !allowzero;
        for (int d = 0; d < t->ndim; d++)
            keep = keep && (!t->dims[d].sym || (d < nd && dims[d] == 0));
        if (!keep)
            return outs[0] = cvt_reshape_run_time(I, n, x);
        for (int d = 0; d < nd; d++)
            if (dims[d] == 0 && d < t->ndim && !t->dims[d].sym)
                dims[d] = t->dims[d].v;
        kstr a;
        kstr_init(&a);
        cvt_ints_attr(&a, "newshape", nd, dims);
        outs[0] = a.oom ? imp_fail(I, n, "out of memory") : imp_call(I, n, "reshape", 1, &x, a.buf);
        kstr_free(&a);
        return outs[0];
    }
    /* resolve 0 (copy, unless allowzero) and -1 here, so the op gets the shape */
    int64_t in_dims[MAXD], total, known = 1;
    for (int d = 0; d < t->ndim; d++)
        in_dims[d] = t->dims[d].v;
    if (!cvt_numel(I, n, t->ndim, in_dims, &total))
        return -1;
    int infer = -1, has_zero = 0;
    for (int d = 0; d < nd; d++)
        has_zero |= dims[d] == 0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0 && !allowzero) {
            if (d >= t->ndim)
                return imp_fail(I, n, "shape[%d] is 0 past the input's rank", d);
            dims[d] = t->dims[d].v;
        }
        if (dims[d] == -1) {
            if (infer >= 0)
                return imp_fail(I, n, "more than one -1 in the shape");
            infer = d;
        } else if (dims[d] < 0) {
            return imp_fail(I, n, "shape[%d] = %lld is invalid", d, (long long)dims[d]);
        } else if (!kiln_mul_ok(known, dims[d], &known)) {
            return imp_fail(I, n, "the shape's element count overflows int64");
        }
    }
    if (infer >= 0 && allowzero && has_zero)
        return imp_fail(I, n,
                        "the shape has both 0 and -1, which attribute 'allowzero' = 1 "
                        "forbids");
    if (infer >= 0) {
        if (!known || total % known)
            return imp_fail(I, n,
                            "cannot infer the -1 dim of the shape: %lld elements into a "
                            "multiple of %lld",
                            (long long)total, (long long)known);
        dims[infer] = total / known;
    } else if (known != total) {
        return imp_fail(I, n, "the shape (input 'shape') has %lld elements, the data %lld",
                        (long long)known, (long long)total);
    }
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

int cvt_flatten(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axis = imp_attr_int(I, n, "axis", 1);
    if (axis < -t->ndim || axis > t->ndim)
        return imp_fail(I, n, "attribute 'axis' = %lld is out of range for a %d-D input",
                        (long long)axis, t->ndim);
    if (axis < 0)
        axis += t->ndim;
    if (axis == 1 && t->ndim >= 1)
        return outs[0] = imp_call(I, n, "nn.batch_flatten", 1, &x, NULL);
    int64_t dims[MAXD], two[2];
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym)
            return imp_fail(I, n, "symbolic dims are not supported here yet");
        dims[d] = t->dims[d].v;
    }
    if (!cvt_numel(I, n, (int)axis, dims, &two[0]) ||
        !cvt_numel(I, n, t->ndim - (int)axis, dims + axis, &two[1]))
        return -1;
    return outs[0] = cvt_reshape_to(I, n, x, 2, two);
}

/* Axes from the attribute (opset < 13) or the second input. */
static int axes_of(imp *I, const Onnx__NodeProto *n, int64_t *axes) {
    if (I->opset < 13)
        return imp_attr_ints(I, n, "axes", axes, MAXD);
    return cvt_const_ints(I, n, 1, axes);
}

/* Unsqueeze (dims_op "unsqueeze_dims") or Squeeze whose axes are known
 * when the package runs, or whose data has symbolic dims (then the na
 * constant axes are given): a reshape to the dims its shape function
 * gives (cvt_bind_dims: with no binder where the graph knows them). */
static int cvt_axes_run_time(imp *I, const Onnx__NodeProto *n, int x, const char *dims_op, int na,
                             const int64_t *axes) {
    int in[2] = {x, imp_input(I, n, 1)};
    if (na >= 0)
        in[1] = cvt_ints_const(I, n, na, axes);
    in[1] = cvt_bind_dims(I, n, imp_call(I, n, dims_op, 2, in, ""));
    return in[1] < 0 ? -1 : imp_call(I, n, "reshape", 2, in, "");
}

int cvt_unsqueeze(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t axes[MAXD], dims[MAXD];
    int na = axes_of(I, n, axes);
    if (t && na == -2)
        return outs[0] = cvt_axes_run_time(I, n, x, "unsqueeze_dims", -1, NULL);
    if (!t || na < 0)
        return imp_fail(I, n, "axes must be given");
    if (!cvt_concrete(t) && na >= 1)
        return outs[0] = cvt_axes_run_time(I, n, x, "unsqueeze_dims", na, axes);
    int nd = t->ndim + na;
    if (nd > MAXD)
        return imp_fail(I, n, "too many dims");
    int mark[MAXD] = {0};
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
        if (a < 0 || a >= nd || mark[a])
            return imp_fail(I, n, "bad axes");
        mark[a] = 1;
    }
    for (int d = 0, k = 0; d < nd; d++) {
        if (mark[d]) {
            dims[d] = 1;
            continue;
        }
        dims[d] = t->dims[k++].v;
    }
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

int cvt_squeeze(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t axes[MAXD], dims[MAXD];
    int na = axes_of(I, n, axes);
    if (t && na == -2)
        return outs[0] = cvt_axes_run_time(I, n, x, "squeeze_dims", -1, NULL);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    if (!cvt_concrete(t)) {
        if (na < 1) /* which dims are 1 is known when the package runs */
            return imp_fail(I, n, "a Squeeze of symbolic dims needs its axes given");
        return outs[0] = cvt_axes_run_time(I, n, x, "squeeze_dims", na, axes);
    }
    int drop[MAXD] = {0}, nd = 0;
    for (int d = 0; d < t->ndim; d++)
        drop[d] = na < 0 && t->dims[d].v == 1;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + t->ndim : axes[i];
        if (a < 0 || a >= t->ndim || t->dims[a].v != 1)
            return imp_fail(I, n, "axis %lld is not a dim of size 1", (long long)axes[i]);
        drop[a] = 1;
    }
    for (int d = 0; d < t->ndim; d++)
        if (!drop[d])
            dims[nd++] = t->dims[d].v;
    return outs[0] = cvt_reshape_to(I, n, x, nd, dims);
}

/* Slice whose starts, ends, axes or steps are known when the package
 * runs: slice_params gives each dim's length, start and step; a binder
 * names the lengths (the first rank values) as the output's dims. */
static int cvt_slice_run_time(imp *I, const Onnx__NodeProto *n, int x) {
    const gtensor_type *t = imp_type(I, x);
    int in[5], k = imp_ninputs(n) < 5 ? imp_ninputs(n) : 5;
    for (int i = 0; i < k; i++)
        if ((in[i] = imp_input(I, n, i)) < 0) /* an absent axes with steps given */
            return imp_fail(I, n, "a Slice with steps but no axes needs axes given");
    if (!t || t->ndim < 1)
        return imp_fail(I, n, "the data must have at least 1 dim");
    int params = imp_call(I, n, "slice_params", k, in, "");
    char attrs[64];
    snprintf(attrs, sizeof attrs, "begin=[0], end=[%d]", t->ndim);
    int lens = params < 0 ? -1 : imp_call(I, n, "strided_slice", 1, &params, attrs);
    int args[3] = {x, params, cvt_bind_dims(I, n, lens)};
    return args[2] < 0 ? -1 : imp_call(I, n, "strided_slice", 3, args, "");
}

/* Slice: starts, ends, axes, steps (attributes before opset 10, constant
 * inputs after) -> strided_slice. */
int cvt_slice(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t st[MAXD], en[MAXD], ax[MAXD], sp[MAXD];
    int ns, ne, na, nsp = -1;
    if (I->opset < 10) {
        ns = imp_attr_ints(I, n, "starts", st, MAXD);
        ne = imp_attr_ints(I, n, "ends", en, MAXD);
        na = imp_attr_ints(I, n, "axes", ax, MAXD);
    } else {
        ns = cvt_const_ints(I, n, 1, st);
        ne = cvt_const_ints(I, n, 2, en);
        na = cvt_const_ints(I, n, 3, ax);
        nsp = cvt_const_ints(I, n, 4, sp);
    }
    if (I->opset >= 10 && (ns == -2 || ne == -2 || na == -2 || nsp == -2))
        return outs[0] = cvt_slice_run_time(I, n, x);
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
        return imp_fail(I, n, "starts, ends, axes and steps must be of one length");
    for (int i = 0; i < nsp; i++)
        if (sp[i] == 0)
            return imp_fail(I, n, "a slice step must not be 0");
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "begin", ns, st);
    cvt_ints_attr(&a, "end", ne, en);
    if (na >= 0)
        cvt_ints_attr(&a, "axes", na, ax);
    if (nsp >= 0)
        cvt_ints_attr(&a, "strides", nsp, sp);
    outs[0] = imp_call(I, n, "strided_slice", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* Expand: bidirectional broadcast of x and the constant shape. */
int cvt_expand(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    int64_t sh[MAXD], od[MAXD], count;
    int ns = cvt_const_ints(I, n, 1, sh);
    if (!t || ns == -1)
        return imp_fail(I, n, "bad input or shape");
    if (ns == -2) { /* the dims, known when the package runs */
        int in[2] = {x, imp_input(I, n, 1)};
        in[1] = cvt_bind_dims(I, n, imp_call(I, n, "broadcast_dims", 2, in, ""));
        return outs[0] = in[1] < 0 ? -1 : imp_call(I, n, "broadcast_to", 2, in, "");
    }
    if (!cvt_concrete(t))
        return imp_fail(I, n, "the input needs a concrete shape");
    int nd = ns > t->ndim ? ns : t->ndim, same = nd == t->ndim;
    for (int d = 0; d < nd; d++) {
        int64_t a = d - (nd - t->ndim) >= 0 ? t->dims[d - (nd - t->ndim)].v : 1;
        int64_t b = d - (nd - ns) >= 0 ? sh[d - (nd - ns)] : 1;
        if (a != b && a != 1 && b != 1)
            return imp_fail(I, n, "dim %lld cannot broadcast to %lld", (long long)a, (long long)b);
        od[d] = a == 1 ? b : a;
        same &= od[d] == a;
    }
    if (!cvt_numel(I, n, nd, od, &count))
        return -1;
    if (same)
        return outs[0] = x;
    return outs[0] = cvt_filled(I, n, x, nd, od);
}

/* Pad: ONNX pads [b0, b1, ..., e0, e1, ...] -> pad_width [b0, e0, b1, e1, ...]. */
/* Pad (opset 11+) whose pads or constant value are known when the package
 * runs: nn.pad(x, pads, dims[, value]) with dims from pad_dims. */
static int cvt_pad_run_time(imp *I, const Onnx__NodeProto *n, int x) {
    char buf[32], attrs[64];
    const char *mode = imp_attr_str(I, n, "mode", "constant", buf, sizeof buf);
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
        return imp_fail(I, n, "attribute 'mode' = '%s' is not constant, reflect or edge", mode);
    snprintf(attrs, sizeof attrs, "pad_mode=\"%s\"", mode);
    int in[4] = {x, imp_input(I, n, 1), -1, imp_input(I, n, 2)};
    in[2] = cvt_bind_dims(I, n, imp_call(I, n, "pad_dims", 2, in, attrs));
    return in[2] < 0 ? -1 : imp_call(I, n, "nn.pad", in[3] >= 0 ? 4 : 3, in, attrs);
}

int cvt_pad(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t p[2 * MAXD], pw[2 * MAXD];
    double value = 0;
    int np;
    if (I->opset < 11) {
        np = imp_attr_ints(I, n, "pads", p, 2 * MAXD);
        value = imp_attr_float(I, n, "value", 0);
    } else {
        int id = imp_input(I, n, 1), vid = imp_input(I, n, 2);
        const kiln_ndarray *c = id >= 0 ? imp_const(I, id) : NULL;
        if (id >= 0 && (!c || (vid >= 0 && !imp_const(I, vid))))
            return outs[0] = cvt_pad_run_time(I, n, x);
        if (!c || kiln_ndarray_numel(c) > 2 * MAXD)
            return imp_fail(I, n, "pads must be given, with at most %d values", 2 * MAXD);
        np = (int)kiln_ndarray_numel(c);
        for (int i = 0; i < np; i++)
            p[i] = cvt_get_i(c, i);
        const kiln_ndarray *v = vid >= 0 ? imp_const(I, vid) : NULL;
        if (vid >= 0 && (!v || kiln_ndarray_numel(v) != 1))
            return imp_fail(I, n, "constant_value must be a constant scalar");
        value = v ? cvt_get_d(v, 0) : 0;
    }
    if (np != 2 * t->ndim)
        return imp_fail(I, n, "%s 'pads' needs %d values (a begin and an end per dim), has %d",
                        I->opset < 11 ? "attribute" : "input", 2 * t->ndim, np);
    for (int d = 0; d < t->ndim; d++) {
        pw[2 * d] = p[d];
        pw[2 * d + 1] = p[d + t->ndim];
    }
    char buf[32];
    const char *mode = imp_attr_str(I, n, "mode", "constant", buf, sizeof buf);
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
        return imp_fail(I, n, "attribute 'mode' = '%s' is not constant, reflect or edge", mode);
    if (!isfinite(value))
        return imp_fail(I, n, "a non-finite pad value is not supported");
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "pad_width", 2 * t->ndim, pw);
    kstr_printf(&a, ", pad_value=%.17g, pad_mode=\"%s\"", value, mode);
    outs[0] = imp_call(I, n, "nn.pad", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}
