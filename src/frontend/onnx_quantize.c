/* onnx_quantize.c: ONNX models edited for post-training quantization
 * (kiln_onnx_quantize, kiln/onnx.h; src/driver/quantize.c runs it): which
 * activations to calibrate, the model with them as extra outputs, and the
 * QDQ model. Every edit builds new arrays over the loaded proto (shallow
 * copies, in an arena) and packs the result: the loaded model is never
 * changed. Only the main graph is quantized. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "onnx_quantize.h"

/* ONNX's TensorProto data types */
enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3 };

static const Onnx__TensorProto *initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strcmp(g->initializer[i]->name, name))
            return g->initializer[i];
    return NULL;
}

static int is_product(const char *op) {
    return !strcmp(op, "Conv") || !strcmp(op, "MatMul") || !strcmp(op, "Gemm");
}

/* Whether tensor `name` is read by a Conv, MatMul or Gemm node, directly or
 * through one Relu (relu_ok). */
static int read_by_product(const Onnx__GraphProto *g, const char *name, int relu_ok) {
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *r = g->node[i];
        for (size_t k = 0; k < r->n_input; k++) {
            if (strcmp(r->input[k], name))
                continue;
            if (is_product(r->op_type) || (relu_ok && !strcmp(r->op_type, "Relu") &&
                                           r->n_output == 1 && read_by_product(g, r->output[0], 0)))
                return 1;
        }
    }
    return 0;
}

/* Whether tensor `name` is read only by Conv, MatMul or Gemm nodes, or by
 * Adds of two activations whose sums such nodes read in turn, directly or
 * through one Relu (relu_ok), and is no graph output. A ResNet's residual
 * Add qualifies (its sum feeds the next block's convolution and Add); a
 * BERT's embedding sum, word + position then + token type then a
 * LayerNorm, does not, nor does an Add that only the pooling reads. */
static int feeds_products(const Onnx__GraphProto *g, const char *name, int relu_ok) {
    for (size_t k = 0; k < g->n_output; k++)
        if (!strcmp(g->output[k]->name, name))
            return 0;
    int readers = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *r = g->node[i];
        int reads = 0;
        for (size_t k = 0; k < r->n_input; k++)
            reads |= !strcmp(r->input[k], name);
        if (!reads)
            continue;
        readers++;
        if (is_product(r->op_type))
            continue;
        if (r->n_output != 1)
            return 0;
        if (!strcmp(r->op_type, "Relu") && relu_ok) {
            if (!feeds_products(g, r->output[0], 0))
                return 0;
        } else if (strcmp(r->op_type, "Add") || r->n_input != 2 || initializer(g, r->input[0]) ||
                   initializer(g, r->input[1]) || !read_by_product(g, r->output[0], 1)) {
            return 0;
        }
    }
    return readers > 0;
}

/* The ops whose inputs are quantized, and which of their inputs is the
 * weight (-1: none): Conv, MatMul and Gemm (their weight 1), and an Add of
 * two activations whose sum (through a Relu) only such ops read: a CNN's
 * residual connection, as ONNX Runtime's QDQ quantizer quantizes it. With
 * both inputs quantized, the residual stream between blocks is int8
 * instead of float32 (a quarter of the memory traffic), and the add fuses
 * into the convolution before it, reading the other branch as int8. A
 * transformer's residual adds, which a LayerNorm reads, stay float: their
 * outliers make int8 costly there (bert_tiny: 2.8e-2 from float with them
 * quantized, 4.8e-4 without). An Add of a constant (a bias) stays float. */
static int quantizable(const Onnx__GraphProto *g, const Onnx__NodeProto *n, int *weight) {
    if (strcmp(n->domain, "") && strcmp(n->domain, "ai.onnx"))
        return 0;
    *weight = -1;
    if (is_product(n->op_type)) {
        *weight = 1;
        return 1;
    }
    return !strcmp(n->op_type, "Add") && n->n_input == 2 && n->n_output == 1 && *n->input[0] &&
           *n->input[1] && !initializer(g, n->input[0]) && !initializer(g, n->input[1]) &&
           feeds_products(g, n->output[0], 1);
}

/* A weight input k of node n that the quantizer makes int8: a float32
 * initializer, 4-D for Conv (OIHW: per channel along 0), 2-D for MatMul
 * (along 1, the columns) and Gemm (along 0 with transB, else 1); its
 * channel axis goes to *axis. */
static const Onnx__TensorProto *weight_of(const Onnx__GraphProto *g, const Onnx__NodeProto *n,
                                          int k, int *axis) {
    if (k < 0 || (size_t)k >= n->n_input || !*n->input[k])
        return NULL;
    const Onnx__TensorProto *t = initializer(g, n->input[k]);
    if (!t || t->data_type != DT_FLOAT || t->n_dims < 2)
        return NULL;
    int conv = !strcmp(n->op_type, "Conv");
    if (!conv && t->n_dims != 2)
        return NULL;
    *axis = 1;
    if (conv)
        *axis = 0;
    if (!strcmp(n->op_type, "Gemm"))
        for (size_t a = 0; a < n->n_attribute; a++)
            if (!strcmp(n->attribute[a]->name, "transB") && n->attribute[a]->i)
                *axis = 0;
    return t;
}

/* Whether input k of quantizable node n is an activation to calibrate: a
 * tensor that is no initializer, the data of Conv (input 0), either
 * operand of MatMul, Gemm's A and B. */
static int activation_input(const Onnx__GraphProto *g, const Onnx__NodeProto *n, int k) {
    if ((size_t)k >= n->n_input || !*n->input[k] || initializer(g, n->input[k]))
        return 0;
    return k == 0 || (k == 1 && strcmp(n->op_type, "Conv"));
}

int onnx_qdq_activations(const onnx_model *m, const char ***names) {
    const Onnx__GraphProto *g = onnx_model_proto(m)->graph;
    const char **out = kiln_calloc(2 * g->n_node + 1, sizeof *out);
    if (!out)
        return -1;
    int cnt = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        int w;
        if (!quantizable(g, n, &w))
            continue;
        for (int k = 0; k < 2; k++) {
            if (!activation_input(g, n, k))
                continue;
            int seen = 0;
            for (int j = 0; j < cnt && !seen; j++)
                seen = !strcmp(out[j], n->input[k]);
            if (!seen)
                out[cnt++] = n->input[k];
        }
    }
    *names = out;
    return cnt;
}

/* The packed model proto (malloc'd), or NULL with an error. */
static uint8_t *pack(const Onnx__ModelProto *p, size_t *len) {
    size_t n = protobuf_c_message_get_packed_size(&p->base);
    uint8_t *buf = kiln_malloc(n ? n : 1);
    if (!buf)
        return NULL;
    *len = protobuf_c_message_pack(&p->base, buf);
    return buf;
}

uint8_t *onnx_pack_with_outputs(const onnx_model *m, const char *const *names, int n, size_t *len) {
    const Onnx__ModelProto *mp = onnx_model_proto(m);
    Onnx__ModelProto p = *mp;
    Onnx__GraphProto g = *mp->graph;
    arena *a = arena_new();
    if (!a)
        return NULL;
    Onnx__ValueInfoProto **outs = arena_alloc(a, (g.n_output + (size_t)n) * sizeof *outs);
    uint8_t *buf = NULL;
    if (outs) {
        memcpy(outs, g.output, g.n_output * sizeof *outs);
        size_t k = g.n_output;
        for (int i = 0; i < n; i++) {
            Onnx__ValueInfoProto *v = arena_alloc(a, sizeof *v);
            if (!v)
                break;
            onnx__value_info_proto__init(v);
            v->name = (char *)names[i];
            outs[k++] = v;
        }
        if (k == g.n_output + (size_t)n) {
            g.output = outs;
            g.n_output = k;
            p.graph = &g;
            buf = pack(&p, len);
        }
    }
    arena_free(a);
    return buf;
}

/* ---- the QDQ model ---------------------------------------------------------------- */

typedef struct {
    arena *a;
    Onnx__NodeProto **nodes;
    size_t nnodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t ninits, cap_inits;
    int ok;
} builder;

static void *grow(builder *b, void *arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return arr;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = arena_alloc(b->a, c * elem);
    if (!n) {
        b->ok = 0;
        return arr;
    }
    if (arr)
        memcpy(n, arr, *cap * elem);
    *cap = c;
    return n;
}

static void add_node(builder *b, Onnx__NodeProto *n) {
    b->nodes = grow(b, b->nodes, &b->cap_nodes, b->nnodes + 1, sizeof *b->nodes);
    if (b->ok)
        b->nodes[b->nnodes++] = n;
}

static void add_init(builder *b, Onnx__TensorProto *t) {
    b->inits = grow(b, b->inits, &b->cap_inits, b->ninits + 1, sizeof *b->inits);
    if (b->ok)
        b->inits[b->ninits++] = t;
}

static char *name2(builder *b, const char *base, const char *suffix) {
    size_t n = strlen(base) + strlen(suffix) + 1;
    char *s = arena_alloc(b->a, n);
    if (!s) {
        b->ok = 0;
        return (char *)"";
    }
    snprintf(s, n, "%s%s", base, suffix);
    return s;
}

/* An initializer `name` of data type dt, dims, and raw bytes (copied). */
static void add_tensor(builder *b, const char *name, int dt, int nd, const int64_t *dims,
                       const void *raw, size_t bytes) {
    Onnx__TensorProto *t = arena_alloc(b->a, sizeof *t);
    int64_t *d = arena_alloc(b->a, (size_t)(nd ? nd : 1) * sizeof *d);
    uint8_t *data = arena_alloc(b->a, bytes ? bytes : 1);
    if (!t || !d || !data) {
        b->ok = 0;
        return;
    }
    onnx__tensor_proto__init(t);
    if (nd)
        memcpy(d, dims, (size_t)nd * sizeof *d);
    memcpy(data, raw, bytes);
    t->name = (char *)name;
    t->n_dims = (size_t)nd;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = dt;
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = data;
    add_init(b, t);
}

/* A node op(inputs) -> output, with an optional int attribute axis. */
static void add_qdq_node(builder *b, const char *op, const char *name, const char *const *in,
                         int nin, const char *out, int64_t axis) {
    Onnx__NodeProto *n = arena_alloc(b->a, sizeof *n);
    char **ins = arena_alloc(b->a, (size_t)nin * sizeof *ins);
    char **outs = arena_alloc(b->a, sizeof *outs);
    Onnx__AttributeProto *at = axis >= 0 ? arena_alloc(b->a, sizeof *at) : NULL;
    Onnx__AttributeProto **ats = axis >= 0 ? arena_alloc(b->a, sizeof *ats) : NULL;
    if (!n || !ins || !outs || (axis >= 0 && (!at || !ats))) {
        b->ok = 0;
        return;
    }
    onnx__node_proto__init(n);
    for (int i = 0; i < nin; i++)
        ins[i] = (char *)in[i];
    outs[0] = (char *)out;
    n->name = (char *)name;
    n->op_type = (char *)op;
    n->domain = (char *)"";
    n->n_input = (size_t)nin;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    if (at) {
        onnx__attribute_proto__init(at);
        at->name = (char *)"axis";
        at->has_type = 1;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at->has_i = 1;
        at->i = axis;
        ats[0] = at;
        n->n_attribute = 1;
        n->attribute = ats;
    }
    add_node(b, n);
}

/* Activation `t` quantized to uint8 over [lo, hi] (which hold 0): Q and DQ
 * nodes, their scale and zero point; returns the dequantized name. */
static const char *quantize_activation(builder *b, const char *t, float lo, float hi) {
    lo = fminf(lo, 0.0f);
    hi = fmaxf(hi, 0.0f);
    float scale = (hi - lo) / 255.0f;
    if (!(scale > 0) || !isfinite(scale))
        scale = 1.0f;
    float z = rintf(-lo / scale);
    uint8_t zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
    const char *s = name2(b, t, "_scale"), *zn = name2(b, t, "_zero_point");
    add_tensor(b, s, DT_FLOAT, 0, NULL, &scale, sizeof scale);
    add_tensor(b, zn, DT_UINT8, 0, NULL, &zp, 1);
    const char *q = name2(b, t, "_QuantizeLinear_Output");
    const char *dq = name2(b, t, "_DequantizeLinear_Output");
    const char *qin[3] = {t, s, zn}, *dqin[3] = {q, s, zn};
    add_qdq_node(b, "QuantizeLinear", name2(b, t, "_QuantizeLinear"), qin, 3, q, -1);
    add_qdq_node(b, "DequantizeLinear", name2(b, t, "_DequantizeLinear"), dqin, 3, dq, -1);
    return dq;
}

/* Weight w (float32) quantized to symmetric int8, one scale per index of
 * `axis` (per_channel) or one; an initializer and a DequantizeLinear.
 * Returns the dequantized name. */
static const char *quantize_weight(builder *b, const onnx_model *m, const Onnx__TensorProto *w,
                                   int axis, int per_channel) {
    kiln_ndarray *v = onnx_tensor_to_ndarray(m, w, w->name);
    if (!v) {
        b->ok = 0;
        return "";
    }
    int nd = kiln_ndarray_ndim(v);
    int64_t dims[KILN_MAX_NDIM], numel = kiln_ndarray_numel(v);
    for (int d = 0; d < nd; d++)
        dims[d] = kiln_ndarray_dim(v, d);
    int64_t nch = per_channel ? dims[axis] : 1, inner = 1;
    for (int d = axis + 1; per_channel && d < nd; d++)
        inner *= dims[d];
    const float *x = kiln_ndarray_data(v);
    float *scale = arena_alloc(b->a, (size_t)nch * sizeof *scale);
    int8_t *q = arena_alloc(b->a, (size_t)(numel ? numel : 1));
    int8_t *zp = arena_alloc(b->a, (size_t)nch);
    if (!scale || !q || !zp) {
        kiln_ndarray_free(v);
        b->ok = 0;
        return "";
    }
    for (int64_t i = 0; i < numel; i++) { /* the channel of element i */
        int64_t c = per_channel ? (i / inner) % nch : 0;
        scale[c] = fmaxf(scale[c], fabsf(x[i]));
    }
    for (int64_t c = 0; c < nch; c++)
        scale[c] = scale[c] > 0 ? scale[c] / 127.0f : 1.0f;
    for (int64_t i = 0; i < numel; i++) {
        float r = rintf(x[i] / scale[per_channel ? (i / inner) % nch : 0]);
        q[i] = (int8_t)(r < -127 ? -127 : r > 127 ? 127 : r);
    }
    kiln_ndarray_free(v);
    const char *qn = name2(b, w->name, "_quantized"), *sn = name2(b, w->name, "_scale");
    const char *zn = name2(b, w->name, "_zero_point");
    add_tensor(b, qn, DT_INT8, nd, dims, q, (size_t)numel);
    add_tensor(b, sn, DT_FLOAT, per_channel ? 1 : 0, &nch, scale, (size_t)nch * sizeof *scale);
    add_tensor(b, zn, DT_INT8, per_channel ? 1 : 0, &nch, zp, (size_t)nch);
    const char *dq = name2(b, w->name, "_DequantizeLinear_Output");
    const char *in[3] = {qn, sn, zn};
    add_qdq_node(b, "DequantizeLinear", name2(b, w->name, "_DequantizeLinear"), in, 3, dq,
                 per_channel ? axis : -1);
    return dq;
}

/* The index of activation `name` in the plan, or -1. */
static int plan_index(const onnx_qdq_plan *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name))
            return i;
    return -1;
}

uint8_t *onnx_pack_qdq(const onnx_model *m, const onnx_qdq_plan *p, onnx_qdq_counts *counts,
                       size_t *len) {
    const Onnx__ModelProto *mp = onnx_model_proto(m);
    const Onnx__GraphProto *g = mp->graph;
    int per_channel = p->per_channel && onnx_model_opset(m, "") >= 13;
    builder b = {arena_new(), NULL, 0, 0, NULL, 0, 0, 1};
    if (!b.a)
        return NULL;
    memset(counts, 0, sizeof *counts);
    counts->per_channel = per_channel;
    /* the dequantized name of each activation (NULL: not emitted yet) and
       of each quantized weight initializer */
    const char **act = arena_alloc(b.a, (size_t)(p->n ? p->n : 1) * sizeof *act);
    const char **wdq = arena_alloc(b.a, (g->n_initializer ? g->n_initializer : 1) * sizeof *wdq);
    Onnx__NodeProto *copies = arena_alloc(b.a, (g->n_node ? g->n_node : 1) * sizeof *copies);
    b.ok = act && wdq && copies;
    for (size_t i = 0; b.ok && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        int wk, axis = 0;
        Onnx__NodeProto *c = &copies[i];
        *c = *n;
        if (!quantizable(g, n, &wk)) {
            add_node(&b, c);
            continue;
        }
        char **ins = arena_alloc(b.a, n->n_input * sizeof *ins);
        if (!ins) {
            b.ok = 0;
            break;
        }
        memcpy(ins, n->input, n->n_input * sizeof *ins);
        c->input = ins;
        for (int k = 0; k < 2; k++) {
            int ai = activation_input(g, n, k) ? plan_index(p, n->input[k]) : -1;
            if (ai < 0)
                continue;
            if (!act[ai]) {
                act[ai] = quantize_activation(&b, p->names[ai], p->lo[ai], p->hi[ai]);
                counts->activations++;
            }
            ins[k] = (char *)act[ai];
        }
        const Onnx__TensorProto *w = weight_of(g, n, wk, &axis);
        if (w) {
            size_t wi = 0;
            while (wi < g->n_initializer && g->initializer[wi] != w)
                wi++;
            if (!wdq[wi]) {
                wdq[wi] = quantize_weight(&b, m, w, axis, per_channel);
                counts->weights++;
            }
            ins[wk] = (char *)wdq[wi];
        }
        add_node(&b, c);
    }
    /* the float weights no node reads any more are left out (all are kept
       when a node has a sub-graph, which may read them too) */
    int subgraphs = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t a = 0; a < g->node[i]->n_attribute; a++)
            subgraphs |= g->node[i]->attribute[a]->g || g->node[i]->attribute[a]->n_graphs;
    for (size_t i = 0; b.ok && i < g->n_initializer; i++) {
        int used = !wdq[i] || subgraphs;
        for (size_t j = 0; !used && j < b.nnodes; j++)
            for (size_t k = 0; k < b.nodes[j]->n_input && !used; k++)
                used = !strcmp(b.nodes[j]->input[k], g->initializer[i]->name);
        for (size_t k = 0; k < g->n_output && !used; k++)
            used = !strcmp(g->output[k]->name, g->initializer[i]->name);
        if (used)
            add_init(&b, g->initializer[i]);
    }
    uint8_t *buf = NULL;
    if (b.ok) {
        Onnx__ModelProto out = *mp;
        Onnx__GraphProto og = *g;
        og.node = b.nodes;
        og.n_node = b.nnodes;
        og.initializer = b.inits;
        og.n_initializer = b.ninits;
        out.graph = &og;
        buf = pack(&out, len);
    } else {
        kiln_set_error(KILN_ERR_NOMEM, "%s: out of memory writing the quantized model",
                       onnx_model_path(m));
    }
    arena_free(b.a);
    return buf;
}
