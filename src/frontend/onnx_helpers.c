/* onnx_helpers.c: what the ONNX converters share (onnx_import.h): value
 * names, attributes, errors that name the node, and adding typed graph
 * nodes. A call whose inputs are all constants is folded here as it is
 * added, by the graph layer's evaluator (the op's compute run by the
 * reference interpreter): the importer has no arithmetic of its own, so
 * integer division by zero and INT64_MIN / -1 follow kiln's one rule
 * (base/intdiv.h) instead of trapping. This file calls nothing above it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "../te/interp.h"
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
    I->failed = n;
    return -1;
}

int imp_capture(imp *I, const char *name, int outer) {
    const gnode *o = graph_node(I->parent->g, outer);
    if (!o || !o->type.known || o->type.n != 1 || o->type.is_tuple) {
        kiln_set_error(KILN_ERR_UNSUPPORTED,
                       "%s: a body uses '%s' of the graph around it, which "
                       "is not a tensor",
                       I->path, name);
        return -1;
    }
    int id;
    if (o->kind == GN_CONST) { /* a constant stays one: it folds in the body */
        id = kiln_graph_const(I->g, o->name, o->value);
    } else {
        const gtensor_type *t = &o->type.t[0];
        int64_t dims[MAXD];
        const char *syms[MAXD];
        for (int d = 0; d < t->ndim; d++) {
            dims[d] = t->dims[d].sym ? -1 : t->dims[d].v;
            syms[d] = t->dims[d].sym;
        }
        id = kiln_graph_var(I->g, name, t->dtype, t->ndim, dims, syms);
        if (id >= 0 && I->ncaptured == I->capcap) {
            int ncap = I->capcap ? I->capcap * 2 : 8;
            int *nc = kiln_realloc(I->captured, sizeof(int) * (size_t)ncap);
            const char **nn =
                nc ? kiln_realloc((void *)I->captured_names, sizeof(char *) * (size_t)ncap) : NULL;
            if (nc)
                I->captured = nc;
            if (!nn)
                return -1;
            I->captured_names = nn;
            I->capcap = ncap;
        }
        if (id >= 0) {
            I->captured[I->ncaptured] = outer;
            I->captured_names[I->ncaptured++] = arena_strdup(I->g->arena, name);
        }
    }
    if (id >= 0)
        imp_name_set(I, name, id);
    return id;
}

int imp_lookup(imp *I, const char *name) {
    int id = imp_name_get(I, name);
    if (id >= 0 || !I->parent)
        return id;
    int outer = imp_lookup(I->parent, name);
    if (outer < 0)
        return outer;
    return imp_capture(I, name, outer) < 0 ? -2 : imp_name_get(I, name);
}

int imp_input(imp *I, const Onnx__NodeProto *n, int i) {
    if ((size_t)i >= n->n_input || !n->input[i][0])
        return -1;
    return imp_lookup(I, n->input[i]);
}

int imp_ninputs(const Onnx__NodeProto *n) {
    int k = (int)n->n_input;
    while (k > 0 && !n->input[k - 1][0])
        k--;
    return k;
}

/* ---- attributes: types, the schema, the node check ------------------------------- */

#define AT(x) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##x

static const struct {
    const char *name;
    int type;
} g_attr_types[] = {
    {"FLOAT", AT(FLOAT)},
    {"INT", AT(INT)},
    {"STRING", AT(STRING)},
    {"TENSOR", AT(TENSOR)},
    {"GRAPH", AT(GRAPH)},
    {"SPARSE_TENSOR", AT(SPARSE_TENSOR)},
    {"TYPE_PROTO", AT(TYPE_PROTO)},
    {"FLOATS", AT(FLOATS)},
    {"INTS", AT(INTS)},
    {"STRINGS", AT(STRINGS)},
    {"TENSORS", AT(TENSORS)},
    {"GRAPHS", AT(GRAPHS)},
    {"SPARSE_TENSORS", AT(SPARSE_TENSORS)},
    {"TYPE_PROTOS", AT(TYPE_PROTOS)},
};

#define NTYPES (sizeof g_attr_types / sizeof g_attr_types[0])

const char *imp_attr_type_name(int type) {
    for (size_t i = 0; i < NTYPES; i++)
        if (g_attr_types[i].type == type)
            return g_attr_types[i].name;
    return "UNDEFINED";
}

int imp_attr_type(const Onnx__AttributeProto *a) {
    if (a->has_type && a->type != AT(UNDEFINED))
        return a->type;
    return a->has_f              ? AT(FLOAT)
           : a->has_i            ? AT(INT)
           : a->has_s            ? AT(STRING)
           : a->t                ? AT(TENSOR)
           : a->g                ? AT(GRAPH)
           : a->sparse_tensor    ? AT(SPARSE_TENSOR)
           : a->tp               ? AT(TYPE_PROTO)
           : a->n_floats         ? AT(FLOATS)
           : a->n_ints           ? AT(INTS)
           : a->n_strings        ? AT(STRINGS)
           : a->n_tensors        ? AT(TENSORS)
           : a->n_graphs         ? AT(GRAPHS)
           : a->n_sparse_tensors ? AT(SPARSE_TENSORS)
           : a->n_type_protos    ? AT(TYPE_PROTOS)
                                 : AT(UNDEFINED);
}

/* 1 if a (of type `type`) holds a value: a scalar type needs its field; a
 * list may be empty. */
static int attr_has_value(const Onnx__AttributeProto *a, int type) {
    switch (type) {
    case AT(FLOAT): return a->has_f;
    case AT(INT): return a->has_i;
    case AT(STRING): return a->has_s;
    case AT(TENSOR): return a->t != NULL;
    case AT(GRAPH): return a->g != NULL;
    case AT(SPARSE_TENSOR): return a->sparse_tensor != NULL;
    case AT(TYPE_PROTO): return a->tp != NULL;
    default: return 1;
    }
}

int imp_schema_next(const char **p, imp_attr_spec *e) {
    const char *s = *p;
    if (!s)
        return 0;
    while (*s == ' ' || *s == ',')
        s++;
    if (!*s)
        return 0;
    const char *colon = strchr(s, ':');
    KILN_ASSERT(colon && colon - s < (ptrdiff_t)sizeof e->name);
    snprintf(e->name, sizeof e->name, "%.*s", (int)(colon - s), s);
    const char *t = colon + 1, *te = t;
    while ((*te >= 'A' && *te <= 'Z') || *te == '_')
        te++;
    e->type = AT(UNDEFINED);
    for (size_t i = 0; i < NTYPES; i++)
        if (strlen(g_attr_types[i].name) == (size_t)(te - t) &&
            !strncmp(g_attr_types[i].name, t, (size_t)(te - t)))
            e->type = g_attr_types[i].type;
    KILN_ASSERT(e->type != AT(UNDEFINED));
    e->required = *te == '!';
    te += e->required;
    e->def = NULL;
    e->def_len = 0;
    if (*te == '=') {
        e->def = te + 1;
        const char *de = strchr(e->def, ',');
        e->def_len = de ? (size_t)(de - e->def) : strlen(e->def);
        te = e->def + e->def_len;
    }
    KILN_ASSERT(!*te || *te == ',');
    *p = te;
    return 1;
}

/* The schema entry of `name` in row c: 1 and *e, or 0. */
static int schema_find(const imp_converter *c, const char *name, imp_attr_spec *e) {
    const char *p = c ? c->attrs : NULL;
    while (imp_schema_next(&p, e))
        if (!strcmp(e->name, name))
            return 1;
    return 0;
}

static int cmp_attr_name(const void *a, const void *b) {
    return strcmp((*(const Onnx__AttributeProto *const *)a)->name,
                  (*(const Onnx__AttributeProto *const *)b)->name);
}

/* Node n's inputs or outputs (`what`) against [lo, hi]: trailing empty
 * names are absent optional ones; the first lo must be named. */
static int check_count(imp *I, const Onnx__NodeProto *n, char **names, size_t count,
                       const char *what, int lo, int hi) {
    size_t k = count;
    while (k > 0 && !names[k - 1][0])
        k--;
    if (k > (size_t)hi)
        return imp_fail(I, n, "has %zu %ss; %s takes at most %d at opset %lld", k, what, n->op_type,
                        hi, (long long)I->opset);
    for (int i = 0; i < lo; i++)
        if ((size_t)i >= count || !names[i][0])
            return imp_fail(I, n, "%s %d is required (%s takes at least %d), but %s", what, i,
                            n->op_type, lo, (size_t)i >= count ? "absent" : "empty");
    return 0;
}

int imp_check_node(imp *I, const Onnx__NodeProto *n, const imp_converter *c) {
    /* the same name twice: sort a copy of the list (a hostile node may
       carry very many), then compare neighbours */
    if (n->n_attribute > 1) {
        const Onnx__AttributeProto **as = malloc(sizeof(*as) * n->n_attribute);
        if (!as)
            return imp_fail(I, n, "out of memory");
        memcpy((void *)as, n->attribute, sizeof(*as) * n->n_attribute);
        qsort((void *)as, n->n_attribute, sizeof(*as), cmp_attr_name);
        for (size_t i = 1; i < n->n_attribute; i++)
            if (!strcmp(as[i - 1]->name, as[i]->name)) {
                char name[256];
                snprintf(name, sizeof name, "%s", as[i]->name);
                free((void *)as);
                return imp_fail(I, n, "attribute '%s' is given twice", name);
            }
        free((void *)as);
    }
    if (!c)
        return 0;
    if (check_count(I, n, n->input, n->n_input, "input", c->in_min, c->in_max) < 0 ||
        check_count(I, n, n->output, n->n_output, "output", c->out_min, c->out_max) < 0)
        return -1;
    /* Each attribute: an unknown one is an error, as in ONNX's checker and
       ONNX Runtime. Ignoring it would drop what the model asked for without
       a word (Clip's min attribute at opset 11, where min became an input;
       a misspelt name), and kiln has no warning channel. The schemas list
       every attribute ONNX defines for the op at the row's opsets, so a
       valid model never meets this error. */
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        imp_attr_spec e;
        if (!schema_find(c, a->name, &e)) {
            kstr known;
            kstr_init(&known);
            for (const char *p = c->attrs; imp_schema_next(&p, &e);)
                kstr_printf(&known, "%s%s", known.len ? ", " : "", e.name);
            imp_fail(I, n, "attribute '%s' is not an attribute of %s at opset %lld (it has %s)",
                     a->name, n->op_type, (long long)I->opset, known.buf ? known.buf : "none");
            kstr_free(&known);
            return -1;
        }
        int got = imp_attr_type(a);
        if (got != e.type)
            return imp_fail(I, n, "attribute '%s' must be %s, not %s", a->name,
                            imp_attr_type_name(e.type), imp_attr_type_name(got));
        if (!attr_has_value(a, got))
            return imp_fail(I, n, "attribute '%s' is of type %s but has no value", a->name,
                            imp_attr_type_name(got));
    }
    imp_attr_spec e;
    for (const char *p = c->attrs; imp_schema_next(&p, &e);)
        if (e.required && !imp_attr_find(n, e.name))
            return imp_fail(I, n, "the required attribute '%s' (%s) is missing", e.name,
                            imp_attr_type_name(e.type));
    return 0;
}

/* ---- attribute accessors --------------------------------------------------------- */

const Onnx__AttributeProto *imp_attr_find(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

const Onnx__AttributeProto *imp_attr(const imp *I, const Onnx__NodeProto *n, const char *name,
                                     int type) {
    KILN_ASSERT(I->row);
    imp_attr_spec e;
    if (!schema_find(I->row, name, &e))
        return NULL; /* not the op's at this opset: imp_check_node refused it */
    KILN_ASSERT(e.type == type);
    return imp_attr_find(n, name);
}

int64_t imp_attr_int(const imp *I, const Onnx__NodeProto *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = imp_attr(I, n, name, AT(INT));
    return a ? a->i : def;
}

float imp_attr_float(const imp *I, const Onnx__NodeProto *n, const char *name, float def) {
    const Onnx__AttributeProto *a = imp_attr(I, n, name, AT(FLOAT));
    return a ? a->f : def;
}

int imp_attr_ints(const imp *I, const Onnx__NodeProto *n, const char *name, int64_t *out, int cap) {
    const Onnx__AttributeProto *a = imp_attr(I, n, name, AT(INTS));
    if (!a)
        return -1;
    if (a->n_ints > (size_t)cap)
        return -2;
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    return (int)a->n_ints;
}

const char *imp_attr_str(const imp *I, const Onnx__NodeProto *n, const char *name, const char *def,
                         char *buf, size_t cap) {
    const Onnx__AttributeProto *a = imp_attr(I, n, name, AT(STRING));
    if (!a)
        return def;
    size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if (!buf[i])
            buf[i] = '?'; /* "VALID\0..." must not read as "VALID" */
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
 * IMPORT_FOLD_MAX_ELEMENTS: I->fold_max); 0 with imp_fail's error. A call
 * that makes floats of an int8 or uint8 constant (a quantized weight's
 * DequantizeLinear) is left to FoldConstant: the graph keeps the quantized
 * weight for FakeQuantizationToInteger until the passes run. */
static int fold_if_constant(imp *I, const Onnx__NodeProto *n, int id) {
    const gnode *c = graph_node(I->g, id);
    if (!c->op->compute || c->type.is_tuple || c->op->pattern > OP_COMM_REDUCE)
        return 1;
    const gtensor_type *t = &c->type.t[0];
    for (int i = 0; i < c->nin; i++) {
        const kiln_ndarray *v = imp_const(I, c->in[i]);
        if (!v)
            return 1;
        kiln_dtype dt = kiln_ndarray_dtype(v);
        if ((dt == KILN_INT8 || dt == KILN_UINT8) &&
            (t->dtype == KILN_FLOAT32 || t->dtype == KILN_FLOAT16 || t->dtype == KILN_FLOAT64))
            return 1;
    }
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
    /* after a failed step of this node, keep its error: a later call that
       succeeded would clear it, and a -1 operand is that step's result */
    if (I->failed == n)
        return -1;
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
    case KILN_INT16: *(int16_t *)d = (int16_t)v; break;
    case KILN_UINT16: *(uint16_t *)d = (uint16_t)v; break;
    case KILN_UINT32: *(uint32_t *)d = (uint32_t)v; break;
    case KILN_UINT64: *(uint64_t *)d = (uint64_t)v; break;
    case KILN_BOOL: *(uint8_t *)d = v != 0; break;
    case KILN_FLOAT16: *(uint16_t *)d = te_float_to_half((float)v); break;
    case KILN_BFLOAT16: *(uint16_t *)d = te_float_to_bf16((float)v); break;
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
    case KILN_INT16: return ((const int16_t *)d)[i];
    case KILN_UINT16: return ((const uint16_t *)d)[i];
    case KILN_UINT32: return ((const uint32_t *)d)[i];
    case KILN_UINT64: return (double)((const uint64_t *)d)[i];
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

int cvt_axis_attr(imp *I, const Onnx__NodeProto *n, int64_t def, int ndim, int64_t *axis) {
    *axis = imp_attr_int(I, n, "axis", def);
    if (*axis < -ndim || *axis >= ndim)
        return imp_fail(I, n, "attribute 'axis' = %lld is out of range for a %d-D input",
                        (long long)*axis, ndim);
    if (*axis < 0)
        *axis += ndim;
    return 0;
}

int cvt_ints_const(imp *I, const Onnx__NodeProto *n, int k, const int64_t *v) {
    int64_t len = k;
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, 1, &len);
    if (!a)
        return imp_fail(I, n, "%s", kiln_last_error());
    if (k)
        memcpy(kiln_ndarray_data(a), v, (size_t)k * sizeof(int64_t));
    return imp_add_const(I, "", a);
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
    if (!c) { /* computed: constant if every value is a number in every run */
        gval g[MAXD];
        int nv = ops_values(I->g, id, g, MAXD);
        for (int k = 0; k < nv; k++) {
            if (g[k].kind != GVAL_EXACT || g[k].d.sym)
                return -2;
            v[k] = g[k].d.v;
        }
        return nv >= 1 ? nv : -2;
    }
    if (kiln_ndarray_numel(c) > MAXD)
        return -2;
    for (int64_t k = 0; k < kiln_ndarray_numel(c); k++)
        v[k] = cvt_get_i(c, k);
    return (int)kiln_ndarray_numel(c);
}

/* 1 if a graph input has a dim named "<prefix>_..." */
static int prefix_taken(const struct kiln_graph *g, const char *prefix) {
    size_t len = strlen(prefix);
    for (int id = 0; id < g->n; id++) {
        const gnode *v = g->nodes[id];
        for (int d = 0;
             v->kind == GN_VAR && v->type.known && v->type.n == 1 && d < v->type.t[0].ndim; d++) {
            const char *s = v->type.t[0].dims[d].sym;
            if (s && !strncmp(s, prefix, len) && s[len] == '_')
                return 1;
        }
    }
    return 0;
}

void imp_fresh_prefix(imp *I, char *buf, size_t cap) {
    imp *root = I;
    while (root->parent)
        root = root->parent;
    do
        snprintf(buf, cap, "_rt%d", ++root->nbinders);
    while (prefix_taken(root->g, buf) || prefix_taken(I->g, buf));
}

int cvt_bind_dims(imp *I, const Onnx__NodeProto *n, int dims) {
    if (dims < 0)
        return -1;
    /* what the graph knows of the dims (docs/DYNAMIC_SHAPES.md, part 2):
       when each is exact (a constant, or a size the model's inputs have),
       the op takes them as they are; else a binder names the exact and
       assumed ones (checked as the package runs) and new sizes the rest */
    gval v[GVAL_MAX];
    int nv = ops_values(I->g, dims, v, GVAL_MAX), exact = nv >= 1;
    for (int k = 0; k < nv; k++)
        exact &= v[k].kind == GVAL_EXACT;
    if (exact)
        return dims;
    char prefix[64];
    imp_fresh_prefix(I, prefix, sizeof prefix);
    kstr a;
    kstr_init(&a);
    kstr_printf(&a, "prefix=\"%s\"", prefix);
    if (nv >= 1) {
        kstr_puts(&a, ", names=\"");
        for (int k = 0; k < nv; k++) {
            kstr_puts(&a, k ? "," : "");
            if (v[k].kind != GVAL_UNKNOWN && v[k].d.sym)
                kstr_puts(&a, v[k].d.sym);
            else if (v[k].kind != GVAL_UNKNOWN && v[k].d.v >= 0)
                kstr_printf(&a, "%lld", (long long)v[k].d.v);
        }
        kstr_putc(&a, '"');
    }
    int id = a.oom ? imp_fail(I, n, "out of memory") : imp_call(I, n, "bind_dims", 1, &dims, a.buf);
    kstr_free(&a);
    return id;
}

void cvt_ints_attr(kstr *a, const char *name, int k, const int64_t *v) {
    kstr_printf(a, "%s%s=[", a->len ? ", " : "", name);
    for (int i = 0; i < k; i++)
        kstr_printf(a, "%s%lld", i ? ", " : "", (long long)v[i]);
    kstr_puts(a, "]");
}

int cvt_tuple_outputs(imp *I, const Onnx__NodeProto *n, int id, int *outs) {
    if (id < 0)
        return -1;
    for (size_t k = 0; k < n->n_output && k < 64; k++) {
        outs[k] = kiln_graph_tuple_get(I->g, id, (int)k, n->output[k]);
        if (outs[k] < 0 || graph_infer_node(I->g, outs[k]) != KILN_OK)
            return imp_fail(I, n, "%s", kiln_last_error());
    }
    return 0;
}
