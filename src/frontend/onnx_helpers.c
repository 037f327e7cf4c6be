/* onnx_helpers.c: what the ONNX converters share (onnx_import.h): value
 * names, attributes, errors that name the node, and adding typed graph
 * nodes. A call whose inputs are all constants is folded here as it is
 * added, by the graph layer's evaluator (the op's compute run by the
 * reference interpreter): the importer has no arithmetic of its own, so
 * integer division by zero and INT64_MIN / -1 follow kiln's one rule
 * (base/intdiv.h) instead of trapping. This file calls nothing above it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* ---- value names ---------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int imp_name_get(const imp *I, const char *name) {
    if (!I->cap)
        return -1;
    size_t j = hash_str(name) & (I->cap - 1);
    while (I->names[j]) {
        if (strcmp(I->names[j], name) == 0)
            return I->ids[j];
        j = (j + 1) & (I->cap - 1);
    }
    return -1;
}

void imp_name_set(imp *I, const char *name, int id) {
    if ((I->count + 1) * 2 >= I->cap) {
        size_t ncap = I->cap ? I->cap * 2 : 256;
        char **nn = calloc(ncap, sizeof(char *));
        int *ni = calloc(ncap, sizeof(int));
        KILN_ASSERT(nn && ni);
        for (size_t i = 0; i < I->cap; i++) {
            if (!I->names[i])
                continue;
            size_t j = hash_str(I->names[i]) & (ncap - 1);
            while (nn[j])
                j = (j + 1) & (ncap - 1);
            nn[j] = I->names[i];
            ni[j] = I->ids[i];
        }
        free(I->names);
        free(I->ids);
        I->names = nn;
        I->ids = ni;
        I->cap = ncap;
    }
    size_t j = hash_str(name) & (I->cap - 1);
    while (I->names[j] && strcmp(I->names[j], name) != 0)
        j = (j + 1) & (I->cap - 1);
    if (!I->names[j]) {
        I->names[j] = arena_strdup(I->g->arena, name);
        I->count++;
    }
    I->ids[j] = id;
}

/* ---- nodes, attributes, errors ------------------------------------------------ */

int imp_fail(imp *I, const Onnx__NodeProto *n, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_set_error(KILN_ERR_INVALID, "%s: node '%s' (%s, opset %lld): %s", I->path,
                   n->name && *n->name ? n->name : "(unnamed)", n->op_type, (long long)I->opset,
                   msg);
    return -1;
}

int imp_input(imp *I, const Onnx__NodeProto *n, int i) {
    if ((size_t)i >= n->n_input || !n->input[i][0])
        return -1;
    return imp_name_get(I, n->input[i]);
}

int imp_ninputs(const Onnx__NodeProto *n) {
    int k = (int)n->n_input;
    while (k > 0 && !n->input[k - 1][0])
        k--;
    return k;
}

const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_i ? a->i : def;
}

float imp_attr_float(const Onnx__NodeProto *n, const char *name, float def) {
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_f ? a->f : def;
}

int imp_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int cap) {
    const Onnx__AttributeProto *a = imp_attr(n, name);
    if (!a)
        return -1;
    if ((int)a->n_ints > cap)
        return -2;
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    return (int)a->n_ints;
}

const char *imp_attr_str(const Onnx__NodeProto *n, const char *name, const char *def, char *buf,
                         size_t cap) {
    const Onnx__AttributeProto *a = imp_attr(n, name);
    if (!a || !a->has_s)
        return def;
    size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = 0;
    return buf;
}

const gtensor_type *imp_type(const imp *I, int id) {
    const gnode *n = graph_node(I->g, id);
    return n && n->type.known && !n->type.is_tuple ? &n->type.t[0] : NULL;
}

const kiln_ndarray *imp_const(const imp *I, int id) {
    const gnode *n = graph_node(I->g, id);
    return n && n->kind == GN_CONST ? n->value : NULL;
}

/* Fold call id now if it reads only constants and is cheap (see
 * IMPORT_FOLD_MAX_ELEMENTS: I->fold_max); 0 with imp_fail's error. */
static int fold_if_constant(imp *I, const Onnx__NodeProto *n, int id) {
    const gnode *c = graph_node(I->g, id);
    if (!c->op->compute || c->type.is_tuple || c->op->pattern > OP_COMM_REDUCE)
        return 1;
    for (int i = 0; i < c->nin; i++)
        if (!imp_const(I, c->in[i]))
            return 1;
    const gtensor_type *t = &c->type.t[0];
    int64_t dims[MAXD], count;
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym)
            return 1;
        dims[d] = t->dims[d].v;
    }
    if (!cvt_numel(I, n, t->ndim, dims, &count))
        return 0;
    int64_t max = I->fold_max > 0 ? I->fold_max : IMPORT_FOLD_MAX_ELEMENTS;
    if (count > max)
        return 1;
    if (graph_fold_node(I->g, id, max > INT64_MAX / 4 ? INT64_MAX : 4 * max) != KILN_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return imp_fail(I, n, "folding its constant inputs: %s", msg), 0;
    }
    return 1;
}

int imp_call(imp *I, const Onnx__NodeProto *n, const char *op, int nin, const int *in,
             const char *attrs) {
    for (int i = 0; i < nin; i++)
        if (in[i] < 0)
            return imp_fail(I, n, "a required input of %s is missing", op);
    int id = kiln_graph_call(I->g, op, nin, in, attrs, n->name);
    if (id < 0)
        return imp_fail(I, n, "%s", kiln_last_error());
    if (graph_infer_node(I->g, id) != KILN_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return imp_fail(I, n, "%s", msg);
    }
    return fold_if_constant(I, n, id) ? id : -1;
}

int imp_add_const(imp *I, const char *name, kiln_ndarray *value) {
    return graph_const_take(I->g, name, value);
}

int imp_scalar_const(imp *I, const Onnx__NodeProto *n, kiln_dtype dt, double v) {
    kiln_ndarray *a = kiln_ndarray_empty(dt, 0, NULL);
    if (!a)
        return imp_fail(I, n, "%s", kiln_last_error());
    void *d = kiln_ndarray_data(a);
    switch (dt) {
    case KILN_FLOAT32: *(float *)d = (float)v; break;
    case KILN_FLOAT64: *(double *)d = v; break;
    case KILN_INT64: *(int64_t *)d = (int64_t)v; break;
    case KILN_INT32: *(int32_t *)d = (int32_t)v; break;
    case KILN_INT8: *(int8_t *)d = (int8_t)v; break;
    case KILN_UINT8: *(uint8_t *)d = (uint8_t)v; break;
    case KILN_BOOL: *(uint8_t *)d = v != 0; break;
    default:
        kiln_ndarray_free(a);
        return imp_fail(I, n, "cannot make a %s constant", kiln_dtype_name(dt));
    }
    return imp_add_const(I, n->name, a);
}

/* ---- converter helpers ---------------------------------------------------------- */

double cvt_get_d(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)d)[i];
    case KILN_FLOAT64: return ((const double *)d)[i];
    case KILN_INT64: return (double)((const int64_t *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_UINT8:
    case KILN_BOOL: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

int64_t cvt_get_i(const kiln_ndarray *a, int64_t i) {
    if (kiln_ndarray_dtype(a) == KILN_INT64)
        return ((const int64_t *)kiln_ndarray_data(a))[i];
    double v = cvt_get_d(a, i);
    return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
}

int cvt_concrete(const gtensor_type *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym)
            return 0;
    return 1;
}

int cvt_numel(imp *I, const Onnx__NodeProto *n, int nd, const int64_t *dims, int64_t *out) {
    int64_t total = 1;
    for (int d = 0; d < nd; d++) {
        if (dims[d] < 0)
            return imp_fail(I, n, "dim %d of the shape is negative (%lld)", d, (long long)dims[d]),
                   0;
        if (!kiln_mul_ok(total, dims[d], &total))
            return imp_fail(I, n, "the shape's element count overflows int64"), 0;
    }
    *out = total;
    return 1;
}

int cvt_float_const_like(imp *I, const Onnx__NodeProto *n, int like, double v) {
    const gtensor_type *t = imp_type(I, like);
    return imp_scalar_const(I, n, t ? t->dtype : KILN_FLOAT32, v);
}

int cvt_binary_of(imp *I, const Onnx__NodeProto *n, const char *op, int a, int b) {
    if (a < 0 || b < 0)
        return -1;
    int in[2] = {a, b};
    return imp_call(I, n, op, 2, in, NULL);
}

int cvt_unary_of(imp *I, const Onnx__NodeProto *n, const char *op, int x) {
    return x < 0 ? -1 : imp_call(I, n, op, 1, &x, NULL);
}

int cvt_cast_to(imp *I, const Onnx__NodeProto *n, int x, kiln_dtype dt) {
    const gtensor_type *t = imp_type(I, x);
    if (x < 0 || !t || t->dtype == dt)
        return x;
    char attrs[64];
    snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(dt));
    return imp_call(I, n, "cast", 1, &x, attrs);
}

int cvt_reshape_to(imp *I, const Onnx__NodeProto *n, int x, int nd, const int64_t *dims) {
    if (x < 0)
        return -1;
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "newshape", nd, dims);
    int id = imp_call(I, n, "reshape", 1, &x, a.buf);
    kstr_free(&a);
    return id;
}

int cvt_const_ints(imp *I, const Onnx__NodeProto *n, int i, int64_t *v) {
    int id = imp_input(I, n, i);
    if (id < 0)
        return -1;
    const kiln_ndarray *c = imp_const(I, id);
    if (!c || kiln_ndarray_numel(c) > MAXD)
        return -2;
    for (int64_t k = 0; k < kiln_ndarray_numel(c); k++)
        v[k] = cvt_get_i(c, k);
    return (int)kiln_ndarray_numel(c);
}

void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v) {
    kstr_printf(a, "%s%s=[", a->len ? ", " : "", name);
    for (int i = 0; i < k; i++)
        kstr_printf(a, "%s%lld", i ? ", " : "", (long long)v[i]);
    kstr_puts(a, "]");
}
