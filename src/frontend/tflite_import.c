/* tflite_import.c: the TFLite importer's driver (kiln/tflite.h). It loads
 * and checks the model (tflite_load.c), lists every operator it cannot
 * convert in one error, makes the graph's inputs (applying input_shapes),
 * then converts the operators in their order: constants are made when an
 * operator first reads them, quantized inputs are dequantized to float32
 * and quantized outputs quantized back, the converter (tflite_convert.c)
 * working in float32 in between. Errors name the file, the operator's
 * index and its op. */
#include "tflite_import.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../passes/passes.h"
#include "kiln/tflite.h"
#include "onnx_import.h"

/* The float32 value of tensor index (dequantized or widened), or the
 * stored value for a non-float tensor. */
static int float_node(tfl_imp *T, int index) {
    if (T->fl[index] >= 0)
        return T->fl[index];
    int id = tfl_tensor_node(T, index);
    if (id < 0)
        return -1;
    const tfl_tensor *x = &T->m->tensors[index];
    if (tfl_is_quantized(x)) {
        id = tfl_qnn_call(T, "qnn.dequantize", id, index, -1, "");
    } else if (x->type == TFL_FLOAT16 || x->type == TFL_FLOAT64) {
        id = tfl_call(T, "cast", 1, &id, "dtype=\"float32\"");
    }
    return id < 0 ? -1 : (T->fl[index] = id);
}

/* The attributes (after the axis) of the qnn.quantize of a quantized
 * output x: its dtype, and with KILN_TFLITE_REFERENCE_KERNELS TFLite's
 * rounding (half away from zero; TFLite's integer requantization where
 * the value is a dequantized accumulator, docs/TFLITE.md). */
static const char *quantize_attrs(const tfl_imp *T, const tfl_tensor *x) {
    if (T->reference)
        return x->type == TFL_INT8 ? ", out_dtype=\"int8\", rounding=\"TFLITE\""
                                   : ", out_dtype=\"uint8\", rounding=\"TFLITE\"";
    return x->type == TFL_INT8 ? ", out_dtype=\"int8\"" : ", out_dtype=\"uint8\"";
}

/* Bind output i of the current operator to `v` (its float32 value, or the
 * stored value of a non-float output), quantizing or narrowing it to the
 * tensor's type. */
static int bind_output(tfl_imp *T, int i, int v) {
    int index = T->op->out[i];
    const tfl_tensor *x = &T->m->tensors[index];
    if (v < 0)
        return tfl_fail(T, "output %d was not computed", i);
    if (T->ids[index] >= 0)
        return tfl_fail(T, "tensor %d '%s' is written twice", index, x->name);
    const gtensor_type *t = tfl_type(T, v);
    if (!t)
        return tfl_fail(T, "output %d is not a tensor", i);
    int nchw = -1, fl_nchw = -1;
    if ((T->out_nchw >> i) & 1) { /* keep the NCHW value; bind its NHWC transpose */
        if (t->ndim != 4 || (tfl_is_quantized(x) && (x->nq != 1 || x->type == TFL_INT32)) ||
            (!tfl_is_quantized(x) && x->type != TFL_FLOAT32))
            return tfl_fail(T, "output %d: an NCHW value of an unexpected kind", i);
        if (tfl_is_quantized(x))
            nchw = tfl_qnn_call(T, "qnn.quantize", v, index, -1, quantize_attrs(T, x));
        else
            nchw = fl_nchw = v;
        if (nchw < 0)
            return -1;
        v = tfl_transpose(T, tfl_is_quantized(x) ? nchw : v, 4, tfl_to_nhwc);
        if (v < 0)
            return -1;
        t = tfl_type(T, v);
    }
    int id = v, flt = -1;
    if (nchw >= 0 && tfl_is_quantized(x)) {
        flt = -1; /* the NHWC transpose of the quantized value: as stored */
    } else if (tfl_is_quantized(x) && x->type != TFL_INT32) {
        if (t->dtype != KILN_FLOAT32)
            return tfl_fail(T, "output %d: a quantized %s from %s", i, tfl_type_name(x->type),
                            kiln_dtype_name(t->dtype));
        id = tfl_qnn_call(T, "qnn.quantize", v, index, -1, quantize_attrs(T, x));
    } else {
        kiln_dtype want = tfl_dtype_of(x->type);
        if (want == KILN_DTYPE_COUNT)
            return tfl_fail(T, "output %d has type %s, which kiln does not support", i,
                            tfl_type_name(x->type));
        if (t->dtype != want) {
            char attrs[64];
            snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(want));
            id = tfl_call(T, "cast", 1, &v, attrs);
        }
        if (want == KILN_FLOAT32)
            flt = id;
    }
    if (id < 0)
        return -1;
    /* the declared shape, where the file gives a static one, must match */
    t = tfl_type(T, id);
    int static_decl = 1;
    for (int d = 0; d < x->ndim; d++)
        static_decl &= !x->dynamic[d];
    if (static_decl && x->ndim && t->ndim != x->ndim)
        return tfl_fail(T, "output %d '%s' is %d-D here, %d-D in the file", i, x->name, t->ndim,
                        x->ndim);
    for (int d = 0; static_decl && x->ndim && !T->reshaped && d < t->ndim; d++)
        if (!t->dims[d].sym && t->dims[d].v != x->dims[d])
            return tfl_fail(T, "output %d '%s' has size %lld in dim %d here, %lld in the file", i,
                            x->name, (long long)t->dims[d].v, d, (long long)x->dims[d]);
    T->ids[index] = id;
    T->fl[index] = flt;
    T->nchw[index] = nchw;
    T->fl_nchw[index] = fl_nchw;
    return 0;
}

/* 1 if operators a and b run the same op (a builtin, or one custom code). */
static int same_op(const tfl_opcode *a, const tfl_opcode *b) {
    if (a->custom || b->custom)
        return a->custom && b->custom && !strcmp(a->custom, b->custom);
    return a->builtin == b->builtin;
}

/* Every operator kiln cannot convert, in one error: each op once, with the
 * indices of the operators that use it. */
static int check_supported(tfl_imp *T) {
    const tfl_model *m = T->m;
    kstr s;
    kstr_init(&s);
    int nbad = 0;
    char *done = kiln_calloc((size_t)m->nops + 1, 1);
    if (!done)
        return -1;
    for (int i = 0; i < m->nops; i++) {
        const tfl_opcode *c = m->ops[i].code;
        if (done[i] || (!c->custom && tfl_find_converter(c->builtin)))
            continue;
        int k = 0;
        for (int j = i; j < m->nops; j++)
            k += same_op(m->ops[j].code, c);
        const char *name = tfl_op_name(c->builtin);
        if (c->custom)
            kstr_printf(&s, "%sCUSTOM '%s'", nbad ? "; " : "", c->custom);
        else if (name)
            kstr_printf(&s, "%s%s", nbad ? "; " : "", name);
        else
            kstr_printf(&s, "%sbuiltin %d", nbad ? "; " : "", c->builtin);
        kstr_printf(&s, " (operator%s", k > 1 ? "s" : "");
        k = 0;
        for (int j = i; j < m->nops; j++) {
            if (!same_op(m->ops[j].code, c))
                continue;
            done[j] = 1;
            if (k < 16)
                kstr_printf(&s, "%s %d", k ? "," : "", j);
            else if (k == 16)
                kstr_puts(&s, ", ...");
            k++;
        }
        kstr_puts(&s, ")");
        nbad++;
    }
    kiln_free(done);
    if (nbad)
        kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: %d unsupported operator type%s: %s", T->path,
                       nbad, nbad > 1 ? "s" : "", s.buf ? s.buf : "");
    kstr_free(&s);
    return nbad ? -1 : 0;
}

/* ---- inputs ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int found, ndim;
    int64_t dims[KILN_MAX_NDIM];
} shape_query;

static kiln_status find_shape(const char *name, size_t nlen, int ndim, const int64_t *dims,
                              const char *const *syms, void *user) {
    shape_query *q = user;
    if (strlen(q->name) != nlen || memcmp(q->name, name, nlen))
        return KILN_OK;
    for (int d = 0; d < ndim; d++)
        if (syms[d])
            return kiln_set_error(KILN_ERR_INVALID,
                                  "input '%s': dim %d is symbolic; the TFLite frontend takes "
                                  "static shapes",
                                  q->name, d);
    q->found = 1;
    q->ndim = ndim;
    memcpy(q->dims, dims, sizeof(int64_t) * (size_t)ndim);
    return KILN_OK;
}

/* Each name in input_shapes must be an input of the model. */
static kiln_status check_name(const char *name, size_t nlen, int ndim, const int64_t *dims,
                              const char *const *syms, void *user) {
    (void)ndim, (void)dims, (void)syms;
    const tfl_imp *T = user;
    for (int i = 0; i < T->m->nin; i++) {
        const char *n = T->m->tensors[T->m->inputs[i]].name;
        if (strlen(n) == nlen && !memcmp(n, name, nlen))
            return KILN_OK;
    }
    return kiln_set_error(KILN_ERR_INVALID, "input_shapes names '%.*s', which is not an input",
                          (int)nlen, name);
}

static int add_inputs(tfl_imp *T, const char *shapes) {
    if (shapes && onnx_shapes_parse(shapes, check_name, T) != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return tfl_fail(T, "%s", msg);
    }
    for (int i = 0; i < T->m->nin; i++) {
        int index = T->m->inputs[i];
        const tfl_tensor *x = &T->m->tensors[index];
        if (T->ids[index] >= 0)
            return tfl_fail(T, "tensor %d '%s' is listed twice as an input", index, x->name);
        kiln_dtype dt = tfl_dtype_of(x->type);
        if (dt == KILN_DTYPE_COUNT)
            return tfl_fail(T, "input %d '%s' has type %s, which kiln does not support", i, x->name,
                            tfl_type_name(x->type));
        shape_query q = {x->name, 0, x->ndim, {0}};
        memcpy(q.dims, x->dims, sizeof(int64_t) * (size_t)x->ndim);
        if (shapes && onnx_shapes_parse(shapes, find_shape, &q) != KILN_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error());
            return tfl_fail(T, "%s", msg);
        }
        char name[32];
        if (!*x->name)
            snprintf(name, sizeof name, "input%d", i);
        int id = kiln_graph_var(T->g, *x->name ? x->name : name, dt, q.ndim, q.dims, NULL);
        if (id < 0 || graph_infer_node(T->g, id) != KILN_OK)
            return tfl_fail(T, "input '%s': %s", x->name, kiln_last_error());
        T->ids[index] = id;
    }
    return 0;
}

/* ---- operators ------------------------------------------------------------------ */

static int convert_op(tfl_imp *T, int i) {
    const tfl_op *op = &T->m->ops[i];
    T->op_index = i;
    T->op = op;
    const tfl_converter *c = tfl_find_converter(op->code->builtin);
    if (op->nin < c->in_min || op->nin > c->in_max)
        return tfl_fail(T, "%d inputs, expected %d to %d", op->nin, c->in_min, c->in_max);
    if (c->nout ? op->nout != c->nout : op->nout < 1)
        return tfl_fail(T, "%d outputs, expected %d", op->nout, c->nout ? c->nout : 1);
    int in[TFL_MAX_OP_IO], outs[TFL_MAX_OP_IO];
    for (int k = 0; k < op->nin; k++) {
        in[k] = op->in[k] < 0 ? -1 : float_node(T, op->in[k]);
        if (op->in[k] >= 0 && in[k] < 0)
            return -1;
    }
    for (int k = 0; k < op->nout; k++)
        outs[k] = -1;
    T->out_nchw = 0;
    if (c->convert(T, in, outs) < 0 || T->failed)
        return tfl_fail(T, "conversion failed");
    for (int k = 0; k < op->nout; k++)
        if (bind_output(T, k, outs[k]))
            return -1;
    return 0;
}

static int set_outputs(tfl_imp *T) {
    T->op = NULL;
    int n = T->m->nout;
    if (!n)
        return tfl_fail(T, "the model has no output");
    int *ids = kiln_malloc(sizeof(int) * (size_t)n);
    const char **names = kiln_malloc(sizeof(char *) * (size_t)n);
    int r = ids && names ? 0 : -1;
    for (int i = 0; i < n && !r; i++) {
        int index = T->m->outputs[i];
        const tfl_tensor *x = &T->m->tensors[index];
        ids[i] = tfl_tensor_node(T, index);
        names[i] = *x->name ? x->name : NULL;
        r = ids[i] < 0 ? -1 : 0;
    }
    if (!r && kiln_graph_set_outputs(T->g, n, ids, names) != KILN_OK)
        r = tfl_fail(T, "%s", kiln_last_error());
    kiln_free(ids);
    kiln_free((void *)names);
    return r;
}

static kiln_graph *import_model(const tfl_model *m, const char *path, const char *shapes,
                                int flags) {
    tfl_imp T = {0};
    T.m = m;
    T.reference = (flags & KILN_TFLITE_REFERENCE_KERNELS) != 0;
    T.path = path;
    T.reshaped = shapes && *shapes;
    T.g = kiln_graph_new();
    T.ids = kiln_malloc(sizeof(int) * (size_t)(m->ntensors + 1));
    T.fl = kiln_malloc(sizeof(int) * (size_t)(m->ntensors + 1));
    T.nchw = kiln_malloc(sizeof(int) * (size_t)(m->ntensors + 1));
    T.fl_nchw = kiln_malloc(sizeof(int) * (size_t)(m->ntensors + 1));
    int ok = T.g && T.ids && T.fl && T.nchw && T.fl_nchw;
    for (int i = 0; ok && i < m->ntensors; i++)
        T.ids[i] = T.fl[i] = T.nchw[i] = T.fl_nchw[i] = -1;
    ok = ok && !check_supported(&T) && !add_inputs(&T, shapes);
    for (int i = 0; ok && i < m->nops; i++)
        ok = !convert_op(&T, i);
    ok = ok && !set_outputs(&T) && kiln_graph_infer_types(T.g) == KILN_OK;
    if (ok) { /* the NHWC transposes of NCHW values that no operator read */
        kiln_graph *live = pass_dead_code(T.g);
        ok = live != NULL;
        if (live != T.g)
            kiln_graph_free(T.g);
        T.g = live;
    }
    kiln_free(T.ids);
    kiln_free(T.fl);
    kiln_free(T.nchw);
    kiln_free(T.fl_nchw);
    if (!ok) {
        kiln_graph_free(T.g);
        return NULL;
    }
    return T.g;
}

kiln_graph *kiln_tflite_import_bytes_flags(const void *data, size_t len, const char *name,
                                           const char *input_shapes, int flags) {
    const char *path = name ? name : "<memory>";
    if (flags & ~KILN_TFLITE_REFERENCE_KERNELS) {
        kiln_set_error(KILN_ERR_INVALID, "%s: unknown TFLite import flags 0x%x", path,
                       (unsigned)(flags & ~KILN_TFLITE_REFERENCE_KERNELS));
        return NULL;
    }
    tfl_model *m = tfl_model_load(data, len, path);
    if (!m)
        return NULL;
    kiln_graph *g = import_model(m, path, input_shapes, flags);
    tfl_model_free(m);
    return g;
}

kiln_graph *kiln_tflite_import_bytes(const void *data, size_t len, const char *name,
                                     const char *input_shapes) {
    return kiln_tflite_import_bytes_flags(data, len, name, input_shapes, 0);
}

kiln_graph *kiln_tflite_import_flags(const char *path, const char *input_shapes, int flags) {
    if (!path) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_tflite_import: no path");
        return NULL;
    }
    size_t len;
    char *data = kiln_read_file(path, &len);
    if (!data)
        return NULL;
    kiln_graph *g = kiln_tflite_import_bytes_flags(data, len, path, input_shapes, flags);
    kiln_free(data);
    return g;
}

kiln_graph *kiln_tflite_import(const char *path, const char *input_shapes) {
    return kiln_tflite_import_flags(path, input_shapes, 0);
}

int kiln_tflite_is_model(const void *data, size_t len) {
    return tfl_is_tflite(data, len);
}
