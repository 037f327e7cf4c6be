/* tflite_helpers.c: what the TFLite importer's driver and converters
 * share (tflite_import.h): errors that name the operator, typed calls that
 * fold on constants, constants read from the model's buffers, and the
 * operator's options read field by field. It calls nothing above it. */
#include "tflite_import.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../te/interp.h"

int tfl_fail(tfl_imp *T, const char *fmt, ...) {
    if (T->failed)
        return -1;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = T->op ? tfl_op_name(T->op->code->builtin) : NULL;
    if (T->op)
        kiln_set_error(KILN_ERR_INVALID, "%s: operator %d (%s): %s", T->path, T->op_index,
                       name ? name : "?", msg);
    else
        kiln_set_error(KILN_ERR_INVALID, "%s: %s", T->path, msg);
    T->failed = 1;
    return -1;
}

const gtensor_type *tfl_type(const tfl_imp *T, int id) {
    const gnode *n = graph_node(T->g, id);
    return n && n->type.known && !n->type.is_tuple ? &n->type.t[0] : NULL;
}

int tfl_dims(tfl_imp *T, int id, int64_t *dims) {
    const gtensor_type *t = tfl_type(T, id);
    if (!t)
        return tfl_fail(T, "an operand has no type");
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym)
            return tfl_fail(T, "dim %d of an operand is not static", d);
        dims[d] = t->dims[d].v;
    }
    return t->ndim;
}

/* Fold call id when it reads only constants and is cheap, as the ONNX
 * importer does; the dequantize of an int8 weight stays for FoldConstant
 * (an int32 bias's folds: FakeQuantizationToInteger wants it constant). */
static int fold(tfl_imp *T, int id) {
    const gnode *c = graph_node(T->g, id);
    if (!c->op->compute || c->type.is_tuple || c->op->pattern > OP_COMM_REDUCE)
        return id;
    for (int i = 0; i < c->nin; i++) {
        const gnode *a = graph_node(T->g, c->in[i]);
        if (a->kind != GN_CONST)
            return id;
    }
    if (!strcmp(c->op->name, "qnn.dequantize")) {
        const gtensor_type *q = tfl_type(T, c->in[0]);
        if (!q || q->dtype == KILN_INT8 || q->dtype == KILN_UINT8)
            return id; /* a weight: FakeQuantizationToInteger may want it */
    }
    int64_t count = 1;
    const gtensor_type *t = &c->type.t[0];
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym || !kiln_mul_ok(count, t->dims[d].v, &count))
            return id;
    }
    if (count > ((int64_t)1 << 24))
        return id;
    if (graph_fold_node(T->g, id, (int64_t)1 << 26) != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return tfl_fail(T, "folding constants: %s", msg);
    }
    return id;
}

int tfl_call(tfl_imp *T, const char *op, int nin, const int *in, const char *attrs) {
    if (T->failed)
        return -1;
    for (int i = 0; i < nin; i++)
        if (in[i] < 0)
            return tfl_fail(T, "a required input of %s is missing", op);
    /* named after the operator's first output, as TFLite's tools show it */
    const char *name = T->op && T->op->nout ? T->m->tensors[T->op->out[0]].name : NULL;
    int id = kiln_graph_call(T->g, op, nin, in, attrs, name && *name ? name : NULL);
    if (id < 0 || graph_infer_node(T->g, id) != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return tfl_fail(T, "%s", msg);
    }
    return fold(T, id);
}

const tfl_tensor *tfl_in_tensor(const tfl_imp *T, int i) {
    return i < T->op->nin && T->op->in[i] >= 0 ? &T->m->tensors[T->op->in[i]] : NULL;
}

const tfl_tensor *tfl_out_tensor(const tfl_imp *T, int i) {
    return &T->m->tensors[T->op->out[i]];
}

const fb_table *tfl_options(const tfl_imp *T) {
    return T->op->has_options ? &T->op->options : NULL;
}

int64_t tfl_opt_int(tfl_imp *T, int slot, int size, int64_t def) {
    const fb_table *o = tfl_options(T);
    int bad = 0;
    int64_t v = o ? fb_int(o, slot, size, 1, def, &bad) : def;
    if (bad)
        tfl_fail(T, "builtin option %d lies outside its table", slot);
    return v;
}

float tfl_opt_float(tfl_imp *T, int slot, float def) {
    const fb_table *o = tfl_options(T);
    int bad = 0;
    float v = o ? fb_float(o, slot, def, &bad) : def;
    if (bad)
        tfl_fail(T, "builtin option %d lies outside its table", slot);
    return v;
}

kiln_dtype tfl_dtype_of(int type) {
    switch (type) {
    case TFL_FLOAT32: return KILN_FLOAT32;
    case TFL_FLOAT16: return KILN_FLOAT16;
    case TFL_FLOAT64: return KILN_FLOAT64;
    case TFL_INT32: return KILN_INT32;
    case TFL_INT64: return KILN_INT64;
    case TFL_UINT8: return KILN_UINT8;
    case TFL_INT8: return KILN_INT8;
    case TFL_INT16: return KILN_INT16;
    case TFL_BOOL: return KILN_BOOL;
    case TFL_UINT16: return KILN_UINT16;
    case TFL_UINT32: return KILN_UINT32;
    case TFL_UINT64: return KILN_UINT64;
    default: return KILN_DTYPE_COUNT;
    }
}

/* The array of a tensor that has a buffer, or NULL (*err set if it is
 * malformed). */
static kiln_ndarray *tensor_array(tfl_imp *T, const tfl_tensor *x, int index, int *err) {
    const tfl_buffer *b = &T->m->buffers[x->buffer];
    if (!x->buffer || !b->data)
        return NULL;
    *err = 1;
    kiln_dtype dt = tfl_dtype_of(x->type);
    if (dt == KILN_DTYPE_COUNT)
        return tfl_fail(T, "constant tensor %d '%s' has type %s, which kiln does not read", index,
                        x->name, tfl_type_name(x->type)),
               NULL;
    if (x->has_sparsity)
        return tfl_fail(T, "constant tensor %d '%s' is sparse, which kiln does not read", index,
                        x->name),
               NULL;
    int64_t numel = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!kiln_mul_ok(numel, x->dims[d], &numel))
            return tfl_fail(T, "tensor %d '%s': its element count overflows", index, x->name), NULL;
    size_t es = kiln_dtype_size(dt);
    if ((uint64_t)numel > b->size / es || (uint64_t)numel * es != b->size)
        return tfl_fail(T, "tensor %d '%s' of %lld %s elements has a buffer of %zu bytes", index,
                        x->name, (long long)numel, tfl_type_name(x->type), b->size),
               NULL;
    kiln_ndarray *a = kiln_ndarray_empty(dt, x->ndim, x->dims);
    if (!a) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return tfl_fail(T, "tensor %d '%s': %s", index, x->name, msg), NULL;
    }
    if (b->size)
        memcpy(kiln_ndarray_data(a), b->data, b->size);
    if (dt == KILN_BOOL) { /* any non-zero byte is true */
        unsigned char *p = kiln_ndarray_data(a);
        for (size_t i = 0; i < b->size; i++)
            p[i] = p[i] != 0;
    }
    *err = 0;
    return a;
}

int tfl_tensor_node(tfl_imp *T, int index) {
    if (T->ids[index] >= 0)
        return T->ids[index];
    const tfl_tensor *x = &T->m->tensors[index];
    int err = 0;
    kiln_ndarray *a = tensor_array(T, x, index, &err);
    if (err)
        return -1;
    if (!a)
        return tfl_fail(T, "tensor %d '%s' is read before an operator writes it", index, x->name);
    int id = graph_const_take(T->g, x->name, a);
    if (id < 0)
        return tfl_fail(T, "tensor %d '%s': %s", index, x->name, kiln_last_error());
    return T->ids[index] = id;
}

int tfl_ints_const(tfl_imp *T, kiln_dtype dt, int n, const int64_t *v) {
    int64_t dims[1] = {n};
    kiln_ndarray *a = kiln_ndarray_empty(dt, 1, dims);
    if (!a)
        return tfl_fail(T, "%s", kiln_last_error());
    for (int i = 0; i < n; i++) {
        if (dt == KILN_INT64)
            ((int64_t *)kiln_ndarray_data(a))[i] = v[i];
        else
            ((int32_t *)kiln_ndarray_data(a))[i] = (int32_t)v[i];
    }
    return graph_const_take(T->g, NULL, a);
}

int tfl_float_const(tfl_imp *T, int n, const float *v) {
    int64_t dims[1] = {n};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, n == 1 ? 0 : 1, dims);
    if (!a)
        return tfl_fail(T, "%s", kiln_last_error());
    memcpy(kiln_ndarray_data(a), v, sizeof(float) * (size_t)n);
    return graph_const_take(T->g, NULL, a);
}

int tfl_reshape(tfl_imp *T, int x, int nd, const int64_t *dims) {
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "newshape=[");
    for (int d = 0; d < nd; d++)
        kstr_printf(&a, "%s%lld", d ? ", " : "", (long long)dims[d]);
    kstr_puts(&a, "]");
    int id = tfl_call(T, "reshape", 1, &x, a.buf);
    kstr_free(&a);
    return id;
}

/* The element v[i] of an integer or float array as int64 / double. */
static double elem_d(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)d)[i];
    case KILN_FLOAT64: return ((const double *)d)[i];
    case KILN_FLOAT16: return te_half_to_float(((const uint16_t *)d)[i]);
    case KILN_INT64: return (double)((const int64_t *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    case KILN_INT16: return ((const int16_t *)d)[i];
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_UINT8:
    case KILN_BOOL: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

/* The constant array of the operator's input i, or NULL with an error. */
static const kiln_ndarray *const_input(tfl_imp *T, int i) {
    if (i >= T->op->nin || T->op->in[i] < 0)
        return tfl_fail(T, "input %d is missing", i), NULL;
    int id = tfl_tensor_node(T, T->op->in[i]);
    const gnode *n = id >= 0 ? graph_node(T->g, id) : NULL;
    if (!n)
        return NULL;
    if (n->kind != GN_CONST)
        return tfl_fail(T, "input %d must be a constant", i), NULL;
    return n->value;
}

int tfl_const_ints(tfl_imp *T, int i, int64_t *v, int cap) {
    const kiln_ndarray *a = const_input(T, i);
    if (!a)
        return -1;
    int64_t n = kiln_ndarray_numel(a);
    if (n > cap)
        return tfl_fail(T, "input %d has %lld values, more than %d", i, (long long)n, cap);
    kiln_dtype dt = kiln_ndarray_dtype(a);
    if (dt != KILN_INT32 && dt != KILN_INT64)
        return tfl_fail(T, "input %d must be int32 or int64, is %s", i, kiln_dtype_name(dt));
    for (int64_t k = 0; k < n; k++)
        v[k] = dt == KILN_INT64 ? ((const int64_t *)kiln_ndarray_data(a))[k]
                                : ((const int32_t *)kiln_ndarray_data(a))[k];
    return (int)n;
}

int tfl_const_scalar(tfl_imp *T, int i, double *v) {
    const kiln_ndarray *a = const_input(T, i);
    if (!a)
        return -1;
    if (kiln_ndarray_numel(a) < 1)
        return tfl_fail(T, "input %d is empty", i);
    const tfl_tensor *x = tfl_in_tensor(T, i);
    *v = elem_d(a, 0);
    if (x->nq)
        *v = (*v - (double)x->zero_point[0]) * x->scale[0];
    return 0;
}

/* The quantization parameters of tensor x as constants (a scalar, or one
 * per channel) into *s, *zp. */
static int quant_params(tfl_imp *T, const tfl_tensor *x, int *s, int *zp) {
    int64_t z[1];
    *s = tfl_float_const(T, x->nq, x->scale);
    if (x->nq == 1) {
        z[0] = x->zero_point[0];
        kiln_ndarray *a = kiln_ndarray_empty(KILN_INT32, 0, NULL);
        if (!a)
            return tfl_fail(T, "%s", kiln_last_error());
        *(int32_t *)kiln_ndarray_data(a) = (int32_t)z[0];
        *zp = graph_const_take(T->g, NULL, a);
    } else {
        *zp = tfl_ints_const(T, KILN_INT32, x->nq, x->zero_point);
    }
    return *s >= 0 && *zp >= 0 ? 0 : -1;
}

int tfl_is_quantized(const tfl_tensor *x) {
    return x->nq && (x->type == TFL_INT8 || x->type == TFL_UINT8 || x->type == TFL_INT16 ||
                     x->type == TFL_INT32);
}

int tfl_qnn_call(tfl_imp *T, const char *op, int x, int index, int axis, const char *extra) {
    const tfl_tensor *t = &T->m->tensors[index];
    if (t->type == TFL_INT16)
        return tfl_fail(T, "tensor %d '%s': int16 activations are not supported", index, t->name);
    int s = -1, zp = -1;
    if (quant_params(T, t, &s, &zp))
        return -1;
    char attrs[128];
    snprintf(attrs, sizeof attrs, "axis=%d%s", t->nq > 1 ? (axis >= 0 ? axis : t->qdim) : -1,
             extra);
    int in[3] = {x, s, zp};
    return tfl_call(T, op, 3, in, attrs);
}

/* The operator's input i as stored when its tensor is quantized (*index
 * its tensor), else -1. */
int tfl_quantized_input(tfl_imp *T, int i, int *index) {
    const tfl_tensor *x = tfl_in_tensor(T, i);
    if (!x || !tfl_is_quantized(x) || x->type == TFL_INT32)
        return -1;
    *index = T->op->in[i];
    return tfl_tensor_node(T, *index);
}

/* ---- what converters share ------------------------------------------------------ */

int tfl_unary(tfl_imp *T, const char *op, int x) {
    return tfl_call(T, op, 1, &x, NULL);
}

int tfl_binary(tfl_imp *T, const char *op, int a, int b) {
    int in[2] = {a, b};
    return tfl_call(T, op, 2, in, NULL);
}

int tfl_scalar(tfl_imp *T, float v) {
    return tfl_float_const(T, 1, &v);
}

int tfl_transpose(tfl_imp *T, int x, int nd, const int *perm) {
    char attrs[128];
    int k = snprintf(attrs, sizeof attrs, "axes=[");
    for (int d = 0; d < nd; d++)
        k += snprintf(attrs + k, sizeof attrs - (size_t)k, "%s%d", d ? ", " : "", perm[d]);
    snprintf(attrs + k, sizeof attrs - (size_t)k, "]");
    return tfl_call(T, "transpose", 1, &x, attrs);
}

const int tfl_to_nchw[4] = {0, 3, 1, 2}, tfl_to_nhwc[4] = {0, 2, 3, 1};

/* A fused activation (ActivationFunctionType) applied to x. */
int tfl_activation(tfl_imp *T, int x, int64_t act) {
    switch (act) {
    case 0: return x;
    case 1: return tfl_unary(T, "nn.relu", x);
    case 2: return tfl_call(T, "clip", 1, &x, "a_min=-1, a_max=1");
    case 3: return tfl_call(T, "clip", 1, &x, "a_min=0, a_max=6");
    case 4: return tfl_unary(T, "tanh", x);
    default: return tfl_fail(T, "fused activation %lld is not supported", (long long)act);
    }
}

/* An axis from -nd to nd - 1 normalized, or -1 with an error. */
int tfl_norm_axis(tfl_imp *T, int64_t axis, int nd) {
    if (axis < -nd || axis >= nd)
        return tfl_fail(T, "axis %lld out of range for rank %d", (long long)axis, nd);
    return (int)(axis < 0 ? axis + nd : axis);
}

/* TFLite's padding (Padding: SAME 0, VALID 1) of one spatial dim. */
void tfl_same_pad(int64_t padding, int64_t in, int64_t k, int64_t stride, int64_t dil,
                  int64_t *before, int64_t *after) {
    *before = *after = 0;
    if (padding != 0)
        return;
    int64_t out = (in + stride - 1) / stride;
    int64_t ek = (k - 1) * dil + 1;
    int64_t total = (out - 1) * stride + ek - in;
    if (total < 0)
        total = 0;
    *before = total / 2;
    *after = total - *before;
}

int tfl_has_nchw(const tfl_imp *T, int i) {
    int index = i < T->op->nin ? T->op->in[i] : -1;
    return index >= 0 && (T->fl_nchw[index] >= 0 || T->nchw[index] >= 0);
}

int tfl_in_nchw(tfl_imp *T, const int *in, int i) {
    int index = i < T->op->nin ? T->op->in[i] : -1;
    if (index >= 0 && T->fl_nchw[index] >= 0)
        return T->fl_nchw[index];
    if (index >= 0 && T->nchw[index] >= 0) {
        const tfl_tensor *x = &T->m->tensors[index];
        if (!tfl_is_quantized(x) || x->nq != 1)
            return tfl_fail(T, "tensor %d '%s': an NCHW value of an unexpected kind", index,
                            x->name);
        int v = tfl_qnn_call(T, "qnn.dequantize", T->nchw[index], index, -1, "");
        return v < 0 ? -1 : (T->fl_nchw[index] = v);
    }
    return tfl_transpose(T, in[i], 4, tfl_to_nchw);
}
