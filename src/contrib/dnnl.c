/* dnnl.c: the `dnnl` backend (kiln/byoc.h) on oneDNN's C API: 2-D
 * convolutions (grouped and depthwise too), dense and batch matmul in
 * float32, with the post-ops oneDNN fuses: bias, a residual sum, ReLU and
 * clip (ReLU6). A region's convolutions keep oneDNN's blocked layout
 * (nChw16c, ...) between one another: kiln plans the layouts, each
 * tensor's layout is its producer's choice unless the function returns it
 * or a dense or matmul reads it (then plain), and the reorders are made
 * once, where neighbouring layouts differ. Constant weights are reordered
 * once, the first time the function runs. The generated C is the
 * function's state and calls into dnnl_rt.h's helpers. */
#include <stdlib.h>
#include <string.h>

#include "contrib.h"

#ifdef KILN_HAVE_DNNL

KILN_HIDDEN extern const char contrib_dnnl_rt_text[];

static int is_call(const gnode *n, const char *op) {
    return n->kind == GN_CALL && !strcmp(n->op->name, op);
}

/* ---- what it takes ----------------------------------------------------------------- */

static int conv_ok(const struct kiln_graph *g, const gnode *n) {
    int64_t v[8];
    return is_call(n, "nn.conv2d") && contrib_static_f32_call(g, n) && contrib_ty(n)->ndim == 4 &&
           !strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") &&
           !strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW") &&
           !strcmp(graph_attr_str(n, "out_layout", ""), "") &&
           graph_attr_ints(n, "padding", v, 8) == 4 && graph_attr_ints(n, "strides", v, 8) == 2 &&
           graph_attr_ints(n, "dilation", v, 8) == 2;
}

static int dense_ok(const struct kiln_graph *g, const gnode *n) {
    const char *wl = graph_attr_str(n, "weight_layout", "NK");
    return is_call(n, "nn.dense") && (!strcmp(wl, "NK") || !strcmp(wl, "KN")) &&
           contrib_static_f32_call(g, n);
}

static int matmul_ok(const struct kiln_graph *g, const gnode *n) {
    return is_call(n, "nn.batch_matmul") && contrib_static_f32_call(g, n) &&
           contrib_ty(n)->ndim <= 6;
}

static int dnnl_supported(const kiln_graph *g, int node, void *user) {
    (void)user;
    const gnode *n = g->nodes[node];
    return conv_ok(g, n) || dense_ok(g, n) || matmul_ok(g, n);
}

/* Whether n leads down to a convolution or dense through post-ops oneDNN
 * fuses, in its order: the anchor, a bias (one value per output channel or
 * unit, on the anchor itself), a residual sum (a tensor of the output's
 * shape), then ReLU or clip. stage: 0 an eltwise, a sum or a bias may
 * come, 1 a sum or a bias, 2 only a bias or the anchor. */
static int chain_ok(const struct kiln_graph *g, const gnode *n, int stage, int *sums) {
    if (is_call(n, "nn.conv2d"))
        return conv_ok(g, n);
    if (is_call(n, "nn.dense"))
        return dense_ok(g, n);
    if (!contrib_static_f32(n))
        return 0;
    if (is_call(n, "nn.relu") || is_call(n, "clip"))
        return stage == 0 && chain_ok(g, g->nodes[n->in[0]], 0, sums);
    if (!is_call(n, "add") && !is_call(n, "nn.bias_add"))
        return 0;
    for (int lead = 0; lead < 2; lead++) {
        const gnode *next = g->nodes[n->in[lead]], *other = g->nodes[n->in[1 - lead]];
        if (is_call(n, "nn.bias_add") && lead == 1)
            break;
        if (other->kind == GN_CONST) { /* a bias, right on the anchor */
            int conv = is_call(next, "nn.conv2d");
            if (!conv && !is_call(next, "nn.dense"))
                continue;
            const gtensor_type *t = contrib_ty(other), *nt = contrib_ty(next);
            int64_t units = conv ? nt->dims[1].v : nt->dims[nt->ndim - 1].v;
            int shaped = contrib_numel(other) == units && t->ndim >= 1;
            if (is_call(n, "add")) /* broadcast along the channels: [C, 1, 1]; units last: [N] */
                shaped = shaped && (conv ? t->ndim >= 3 && t->dims[t->ndim - 3].v == units
                                         : t->dims[t->ndim - 1].v == units);
            else
                shaped = shaped && t->ndim == 1 &&
                         graph_attr_int(n, "axis", 1) % nt->ndim == (conv ? 1 : nt->ndim - 1) &&
                         graph_attr_int(n, "axis", 1) >= -nt->ndim;
            if (shaped && chain_ok(g, next, 2, sums))
                return 1;
        } else if (stage <= 1 && is_call(n, "add") && gtype_equal(&other->type, &n->type) &&
                   chain_ok(g, next, 2, sums)) {
            ++*sums; /* a residual sum */
            return 1;
        }
    }
    return 0;
}

static int post_ops_ok(const kiln_graph *g, int node, void *user) {
    (void)user;
    int sums = 0;
    return chain_ok(g, g->nodes[node], 0, &sums) && !sums;
}

/* the same, with a residual sum (the pattern's `*` may be a bias too) */
static int sum_ok(const kiln_graph *g, int node, void *user) {
    (void)user;
    int sums = 0;
    return chain_ok(g, g->nodes[node], 0, &sums) && sums == 1;
}

/* Largest first: a residual sum, then a bias, then the op alone; each with
 * a ReLU or clip after it or not. */
/* A scalar float constant within 1e-6 of v. */
static int scalar_is(const gnode *c, double v) {
    if (c->kind != GN_CONST || kiln_ndarray_numel(c->value) != 1 ||
        kiln_ndarray_dtype(c->value) != KILN_FLOAT32)
        return 0;
    double x = ((const float *)kiln_ndarray_data(c->value))[0];
    return x > v - 1e-6 * (1 + v) && x < v + 1e-6 * (1 + v);
}

/* GELU as exporters write it, x * 0.5 * (1 + erf(x / sqrt 2)) (the
 * multiplies in either order, / sqrt 2 or * 1/sqrt 2), on a dense with its
 * bias: the constants must be those. */
static int gelu_ok(const kiln_graph *g, int node, void *user) {
    (void)user;
    const gnode *erf = NULL;
    for (int id = node; id >= 0 && id > node - 8 && !erf; id--)
        if (is_call(g->nodes[id], "erf"))
            erf = g->nodes[id];
    if (!erf)
        return 0;
    const gnode *in = g->nodes[erf->in[0]], *x = NULL;
    if (is_call(in, "divide") && scalar_is(g->nodes[in->in[1]], 1.4142135623730951))
        x = g->nodes[in->in[0]];
    for (int i = 0; i < 2 && is_call(in, "multiply"); i++)
        if (scalar_is(g->nodes[in->in[1 - i]], 0.7071067811865476))
            x = g->nodes[in->in[i]];
    if (!x)
        return 0;
    /* 1 + erf, and the two multiplies: by x and by 0.5 */
    int halves = 0, ones = 0, xs = 0;
    for (int id = erf->id + 1; id <= node; id++) {
        const gnode *c = g->nodes[id];
        for (int i = 0; i < c->nin && c->nin == 2; i++) {
            const gnode *o = g->nodes[c->in[1 - i]];
            ones += is_call(c, "add") && scalar_is(o, 1.0);
            halves += is_call(c, "multiply") && scalar_is(o, 0.5);
            xs += is_call(c, "multiply") && c->in[i] != x->id && o == x;
        }
    }
    int sums = 0;
    return ones == 1 && halves == 1 && xs == 1 && chain_ok(g, x, 2, &sums) && !sums;
}

static const kiln_codegen_pattern k_patterns[] = {
    {"dnnl.dense_gelu",
     "multiply(multiply(%b=(add(%v=nn.dense(*, const), const) | nn.bias_add(%v, const) | %v), "
     "add(%e=erf(divide(%b, const) | multiply(%b, const)), const)), const) | "
     "multiply(multiply(%b, const), add(%e, const))",
     gelu_ok},
    {"dnnl.conv2d_sum",
     "nn.relu(%s=add(%c=(nn.bias_add(%v=nn.conv2d(*, const), const) | add(%v, const) | %v), *)) "
     "| clip(%s) | %s",
     sum_ok},
    {"dnnl.conv2d",
     "nn.relu(%c=(nn.bias_add(%v=nn.conv2d(*, const), const) | add(%v, const) | %v)) | clip(%c) "
     "| %c",
     post_ops_ok},
    {"dnnl.dense",
     "nn.relu(%c=(nn.bias_add(%v=nn.dense(*, const), const) | add(%v, const) | %v)) | clip(%c) | "
     "%c",
     post_ops_ok},
};

/* ---- generating ---------------------------------------------------------------------- */

enum { OP_CONV, OP_DENSE, OP_MATMUL };

/* One oneDNN operation of the function: the anchor and its post-ops, with
 * the external body's nodes it reads and writes. */
typedef struct {
    int kind;
    const gnode *anchor;          /* in a composite's body, or the external body */
    int src, wei, bias, sum, out; /* external body node ids (-1: none) */
    int nelt;
    struct {
        int relu, gelu; /* else clip(lo, hi) */
        double lo, hi;
    } elt[8];
} dop;

/* The external-body node a node of composite call c's body stands for: its
 * variable's argument; -1 for a node inside. */
static int outer_of(const gnode *c, const struct kiln_graph *cb, int id) {
    if (cb->nodes[id]->kind != GN_VAR)
        return -1;
    int v = 0;
    for (int j = 0; j < id; j++)
        v += cb->nodes[j]->kind == GN_VAR;
    return c->in[v];
}

/* Read body node n (a composite or a supported op) as an operation. */
static int read_op(const struct kiln_graph *b, const gnode *n, dop *o) {
    memset(o, 0, sizeof *o);
    o->bias = o->sum = -1;
    o->out = n->id;
    if (is_call(n, "nn.batch_matmul") || is_call(n, "nn.conv2d") || is_call(n, "nn.dense")) {
        o->kind = is_call(n, "nn.conv2d") ? OP_CONV : is_call(n, "nn.dense") ? OP_DENSE : OP_MATMUL;
        o->anchor = n;
        o->src = n->in[0];
        o->wei = n->in[1];
        return 1;
    }
    if (!is_call(n, "composite"))
        return 0;
    const struct kiln_graph *cb = graph_attr_graph(n, "body");
    const gnode *a = NULL;
    for (int id = 0; id < cb->n && !a; id++)
        if (is_call(cb->nodes[id], "nn.conv2d") || is_call(cb->nodes[id], "nn.dense"))
            a = cb->nodes[id];
    if (!a)
        return 0;
    o->kind = is_call(a, "nn.conv2d") ? OP_CONV : OP_DENSE;
    o->anchor = a;
    o->src = outer_of(n, cb, a->in[0]);
    o->wei = outer_of(n, cb, a->in[1]);
    const char *name = graph_attr_str(n, "Composite", "");
    if (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, "_gelu")) {
        /* the anchor, its bias (the add that reads it), then GELU (the rest:
           its check read the whole shape) */
        for (int id = a->id + 1; id < cb->n; id++) {
            const gnode *x = cb->nodes[id];
            if (x->kind == GN_CALL && (is_call(x, "add") || is_call(x, "nn.bias_add")) &&
                (x->in[0] == a->id || x->in[1] == a->id)) {
                o->bias = outer_of(n, cb, x->in[x->in[0] == a->id ? 1 : 0]);
                break;
            }
        }
        o->nelt = 1;
        o->elt[0].gelu = 1;
        return o->src >= 0 && o->wei >= 0;
    }
    /* the chain after the anchor, each node read by the next */
    for (int cur = a->id, id = a->id + 1; id < cb->n; id++) {
        const gnode *x = cb->nodes[id];
        if (x->kind != GN_CALL)
            continue; /* a variable (the bias, the summand) */
        if (x->in[0] != cur && (x->nin < 2 || x->in[1] != cur))
            return 0;
        int other = x->nin == 2 ? (x->in[0] == cur ? x->in[1] : x->in[0]) : -1;
        if (is_call(x, "nn.relu") || is_call(x, "clip")) {
            if (o->nelt == 8)
                return 0;
            o->elt[o->nelt].relu = is_call(x, "nn.relu");
            o->elt[o->nelt].lo = graph_attr_float(x, "a_min", 0);
            o->elt[o->nelt++].hi = graph_attr_float(x, "a_max", 0);
        } else if ((is_call(x, "add") || is_call(x, "nn.bias_add")) && other >= 0) {
            const gnode *c = cb->nodes[other];
            int outer = outer_of(n, cb, other);
            int is_bias = outer >= 0 && c->type.known && contrib_numel(c) != contrib_numel(x);
            if (is_bias && o->bias < 0 && o->sum < 0 && !o->nelt && cur == a->id)
                o->bias = outer;
            else if (!is_bias && o->sum < 0 && !o->nelt && outer >= 0)
                o->sum = outer;
            else
                return 0;
        } else {
            return 0;
        }
        cur = id;
    }
    return o->src >= 0 && o->wei >= 0;
}

static void dims_list(kstr *s, const gtensor_type *t) {
    kstr_putc(s, '{');
    for (int d = 0; d < t->ndim; d++)
        kstr_printf(s, "%s%lld", d ? ", " : "", (long long)t->dims[d].v);
    kstr_putc(s, '}');
}

/* "dnnl_memory_desc_t NAME = md of node id in its plain layout" */
static void plain_md(kstr *s, const char *sym, const gnode *n) {
    kstr_printf(s, "    %s_st.md[%d] = kiln_dnnl_md(%d, (dnnl_dims_t)", sym, n->id,
                contrib_ty(n)->ndim);
    dims_list(s, contrib_ty(n));
    kstr_puts(s, ", dnnl_format_tag_undef);\n");
}

typedef struct {
    const contrib_fn *F;
    const struct kiln_graph *g; /* the graph of the external call */
    const gnode *call;
    const char *sym;
    int nops;
    dop *ops;
    char *blocked; /* body node -> 1: held in its producer's layout (not plain) */
    int *producer; /* body node -> the op that writes it, or -1 */
} gen;

static int is_const_arg(const gen *G, int id) {
    int a = G->F->var_arg[id];
    return a >= 0 && G->g->nodes[G->call->in[a]]->kind == GN_CONST;
}

static void post_ops(kstr *s, const dop *o) {
    if (o->sum < 0 && !o->nelt) {
        kstr_puts(s, "        dnnl_post_ops_t po = NULL;\n");
        return;
    }
    kstr_puts(s, "        dnnl_post_ops_t po;\n        dnnl_post_ops_create(&po);\n");
    if (o->sum >= 0)
        kstr_puts(s, "        dnnl_post_ops_append_sum(po, 1.0f);\n");
    for (int e = 0; e < o->nelt; e++)
        if (o->elt[e].relu)
            kstr_puts(s, "        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, "
                         "0.0f);\n");
        else if (o->elt[e].gelu)
            kstr_puts(s, "        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_erf, "
                         "0.0f, 0.0f);\n");
        else
            kstr_printf(s,
                        "        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, "
                        "(float)%.17g, (float)%.17g);\n",
                        o->elt[e].lo, o->elt[e].hi);
}

/* The layout md of body node id, as an expression. */
static void layout_of(kstr *s, const gen *G, int id) {
    kstr_printf(s, "%s_st.md[%d]", G->sym, id);
}

static void emit_init_op(kstr *s, const gen *G, int k) {
    const dop *o = &G->ops[k];
    const struct kiln_graph *b = G->F->body;
    const gnode *a = o->anchor, *out = b->nodes[o->out];
    kstr_printf(s, "    { /* %s '%s' */\n", contrib_call_kind(out), out->name);
    kstr_printf(s, "        kiln_dnnl_op *op = &%s_st.op[%d];\n", G->sym, k);
    kstr_printf(s, "        op->has_bias = %d;\n        op->has_sum = %d;\n", o->bias >= 0,
                o->sum >= 0);
    kstr_printf(s, "        op->wei_const = %d;\n", is_const_arg(G, o->wei));
    kstr_puts(s, "        op->src_in = ");
    layout_of(s, G, o->src);
    kstr_puts(s, ";\n");
    if (o->sum >= 0) {
        kstr_puts(s, "        op->sum_in = ");
        layout_of(s, G, o->sum);
        kstr_puts(s, ";\n");
    }
    post_ops(s, o);
    const gtensor_type *xt = contrib_ty(b->nodes[o->src]), *wt = contrib_ty(b->nodes[o->wei]),
                       *ot = contrib_ty(out);
    if (o->kind == OP_CONV) {
        int64_t str[2], pad[4], dil[2], groups = graph_attr_int(a, "groups", 1);
        graph_attr_ints(a, "strides", str, 2);
        graph_attr_ints(a, "padding", pad, 4);
        graph_attr_ints(a, "dilation", dil, 2);
        kstr_printf(s, "        dnnl_dims_t sd = {%lld, %lld, %lld, %lld};\n",
                    (long long)xt->dims[0].v, (long long)xt->dims[1].v, (long long)xt->dims[2].v,
                    (long long)xt->dims[3].v);
        kstr_printf(s, "        dnnl_dims_t dd = {%lld, %lld, %lld, %lld};\n",
                    (long long)ot->dims[0].v, (long long)ot->dims[1].v, (long long)ot->dims[2].v,
                    (long long)ot->dims[3].v);
        if (groups == 1)
            kstr_printf(s,
                        "        dnnl_dims_t wd = {%lld, %lld, %lld, %lld};\n        int wn = 4;\n",
                        (long long)wt->dims[0].v, (long long)wt->dims[1].v,
                        (long long)wt->dims[2].v, (long long)wt->dims[3].v);
        else
            kstr_printf(s,
                        "        dnnl_dims_t wd = {%lld, %lld, %lld, %lld, %lld};\n"
                        "        int wn = 5;\n",
                        (long long)groups, (long long)(wt->dims[0].v / groups),
                        (long long)wt->dims[1].v, (long long)wt->dims[2].v,
                        (long long)wt->dims[3].v);
        kstr_printf(s,
                    "        dnnl_dims_t bd = {%lld}, st = {%lld, %lld}, di = {%lld, %lld}, "
                    "pl = {%lld, %lld}, pr = {%lld, %lld};\n",
                    (long long)ot->dims[1].v, (long long)str[0], (long long)str[1],
                    (long long)(dil[0] - 1), (long long)(dil[1] - 1), (long long)pad[0],
                    (long long)pad[1], (long long)pad[2], (long long)pad[3]);
        kstr_puts(s,
                  "        dnnl_memory_desc_t s = kiln_dnnl_md(4, sd, dnnl_format_tag_any);\n"
                  "        dnnl_memory_desc_t w = kiln_dnnl_md(wn, wd, dnnl_format_tag_any);\n"
                  "        dnnl_memory_desc_t bb = kiln_dnnl_md(1, bd, dnnl_format_tag_undef);\n"
                  "        dnnl_memory_desc_t d = kiln_dnnl_md(4, dd, dnnl_format_tag_any);\n"
                  "        op->wei_in = kiln_dnnl_md(wn, wd, dnnl_format_tag_undef);\n"
                  "        dnnl_convolution_desc_t cd;\n"
                  "        dnnl_status_t r = dnnl_dilated_convolution_forward_desc_init(&cd, "
                  "dnnl_forward_inference, dnnl_convolution_direct, &s, &w, op->has_bias ? &bb : "
                  "NULL, &d, st, di, pl, pr);\n");
    } else if (o->kind == OP_DENSE) {
        int64_t kk = xt->dims[xt->ndim - 1].v, m = contrib_numel(b->nodes[o->src]) / (kk ? kk : 1);
        int64_t n = ot->dims[ot->ndim - 1].v;
        int kn = !strcmp(graph_attr_str(a, "weight_layout", "NK"), "KN");
        kstr_printf(s,
                    "        dnnl_dims_t sd = {%lld, %lld}, wd = {%lld, %lld}, bd = {%lld}, "
                    "dd = {%lld, %lld};\n",
                    (long long)m, (long long)kk, (long long)n, (long long)kk, (long long)n,
                    (long long)m, (long long)n);
        kstr_printf(s,
                    "        dnnl_memory_desc_t s = kiln_dnnl_md(2, sd, dnnl_format_tag_undef);\n"
                    "        dnnl_memory_desc_t w = kiln_dnnl_md(2, wd, dnnl_format_tag_any);\n"
                    "        dnnl_memory_desc_t bb = kiln_dnnl_md(1, bd, dnnl_format_tag_undef);\n"
                    "        dnnl_memory_desc_t d = kiln_dnnl_md(2, dd, dnnl_format_tag_undef);\n"
                    "        op->src_in = s;\n"
                    "        op->wei_in = kiln_dnnl_md(2, wd, %s);\n"
                    "        dnnl_inner_product_desc_t cd;\n"
                    "        dnnl_status_t r = dnnl_inner_product_forward_desc_init(&cd, "
                    "dnnl_forward_inference, &s, &w, op->has_bias ? &bb : NULL, &d);\n",
                    kn ? "dnnl_ba" : "dnnl_ab");
        if (o->sum >= 0)
            kstr_puts(s, "        op->sum_in = d;\n");
    } else {
        /* numpy matmul: both operands padded to the output's rank with leading
           1s (oneDNN broadcasts those), a transposed operand by its strides */
        int r = ot->ndim;
        const gtensor_type *t[2] = {xt, wt};
        int tr[2] = {(int)graph_attr_int(a, "transpose_a", 0),
                     (int)graph_attr_int(a, "transpose_b", 0)};
        for (int i = 0; i < 2; i++) {
            int64_t dims[8], strides[8], stored[8];
            int off = r - t[i]->ndim;
            for (int d = 0; d < r; d++)
                stored[d] = d < off ? 1 : t[i]->dims[d - off].v;
            int64_t acc = 1;
            for (int d = r - 1; d >= 0; d--) {
                strides[d] = acc;
                acc *= stored[d];
            }
            for (int d = 0; d < r; d++)
                dims[d] = stored[d];
            if (tr[i]) { /* the logical [.., rows, cols] is the stored one swapped */
                int64_t x = dims[r - 1], y = strides[r - 1];
                dims[r - 1] = dims[r - 2];
                strides[r - 1] = strides[r - 2];
                dims[r - 2] = x;
                strides[r - 2] = y;
            }
            kstr_printf(s, "        dnnl_dims_t %sd = {", i ? "w" : "s");
            for (int d = 0; d < r; d++)
                kstr_printf(s, "%s%lld", d ? ", " : "", (long long)dims[d]);
            kstr_printf(s, "}, %sst = {", i ? "w" : "s");
            for (int d = 0; d < r; d++)
                kstr_printf(s, "%s%lld", d ? ", " : "", (long long)strides[d]);
            kstr_puts(s, "};\n");
        }
        kstr_puts(s, "        dnnl_dims_t dd = ");
        dims_list(s, ot);
        kstr_printf(s,
                    ";\n        dnnl_memory_desc_t s, w, bb;\n"
                    "        dnnl_memory_desc_init_by_strides(&s, %d, sd, dnnl_f32, sst);\n"
                    "        dnnl_memory_desc_init_by_strides(&w, %d, wd, dnnl_f32, wst);\n"
                    "        dnnl_memory_desc_t d = kiln_dnnl_md(%d, dd, dnnl_format_tag_undef);\n"
                    "        (void)bb;\n"
                    "        op->src_in = s;\n        op->wei_in = w;\n"
                    "        dnnl_matmul_desc_t cd;\n"
                    "        dnnl_status_t r = dnnl_matmul_desc_init(&cd, &s, &w, NULL, &d);\n",
                    r, r, r);
    }
    /* where the result goes: plain when returned or read by a non-convolution */
    if (G->blocked[o->out])
        kstr_puts(s, "        op->dst_out = kiln_dnnl_md(1, (dnnl_dims_t){1}, "
                     "dnnl_format_tag_any);\n");
    else if (o->kind == OP_CONV)
        kstr_puts(s, "        op->dst_out = kiln_dnnl_md(4, dd, dnnl_format_tag_undef);\n");
    else
        kstr_puts(s, "        op->dst_out = d;\n");
    kstr_printf(s,
                "        if (r != dnnl_success)\n"
                "            return kiln_dnnl_fail(\"%s\", \"describe an operation\", r);\n"
                "        if (kiln_dnnl_make(\"%s\", op, &cd, po, ",
                G->sym, G->sym);
    if (is_const_arg(G, o->wei)) /* reordered once, here */
        contrib_buf(s, G->F, o->wei);
    else
        kstr_puts(s, "NULL");
    kstr_puts(s, "))\n            return 1;\n        ");
    layout_of(s, G, o->out);
    kstr_puts(s, " = op->dst_out;\n    }\n");
}

static char *dnnl_codegen(const kiln_graph *g, int node, const char *symbol, void *user) {
    (void)user;
    contrib_fn F;
    const gnode *call = g->nodes[node];
    if (!contrib_fn_init(&F, g, call))
        return NULL;
    const struct kiln_graph *b = F.body;
    gen G = {&F,
             g,
             call,
             symbol,
             0,
             calloc((size_t)b->n + 1, sizeof(dop)),
             calloc((size_t)b->n + 1, 1),
             malloc(sizeof(int) * (size_t)(b->n + 1))};
    kstr s;
    kstr_init(&s);
    int ok = G.ops && G.blocked && G.producer;
    for (int id = 0; ok && id < b->n; id++) {
        G.producer[id] = -1;
        if (b->nodes[id]->kind != GN_CALL)
            continue;
        ok = read_op(b, b->nodes[id], &G.ops[G.nops]);
        if (!ok)
            kiln_set_error(KILN_ERR_UNSUPPORTED, "dnnl: cannot generate '%s' (node '%s')",
                           contrib_call_kind(b->nodes[id]), b->nodes[id]->name);
        else
            G.producer[id] = G.nops++;
    }
    /* a convolution's result stays in its layout when only convolutions read
       it (as data or as the summand) and the function does not return it */
    for (int id = 0; ok && id < b->n; id++) {
        if (G.producer[id] < 0 || G.ops[G.producer[id]].kind != OP_CONV || F.out_arg[id] >= 0)
            continue;
        int only_convs = 1;
        for (int k = 0; k < G.nops; k++) {
            const dop *o = &G.ops[k];
            if ((o->src == id || o->sum == id || o->wei == id || o->bias == id) &&
                (o->kind != OP_CONV || o->wei == id || o->bias == id))
                only_convs = 0;
        }
        G.blocked[id] = (char)only_convs;
    }
    if (ok) {
        kstr_puts(&s, contrib_dnnl_rt_text);
        kstr_printf(&s,
                    "\nstatic struct {\n    int ready;\n    pthread_mutex_t mu;\n"
                    "    kiln_dnnl_op op[%d];\n    dnnl_memory_desc_t md[%d];\n"
                    "} %s_st = {0, PTHREAD_MUTEX_INITIALIZER};\n\n",
                    G.nops ? G.nops : 1, b->n, symbol);
        kstr_printf(&s, "static int %s_init(void *const *args) {\n", symbol);
        for (int id = 0; id < b->n; id++)
            if (F.var_arg[id] >= 0)
                plain_md(&s, symbol, b->nodes[id]);
        for (int k = 0; k < G.nops; k++)
            emit_init_op(&s, &G, k);
        kstr_puts(&s, "    (void)args;\n    return 0;\n}\n\n");
        /* at unload: the primitives and the reordered weights */
        kstr_printf(&s,
                    "__attribute__((destructor)) static void %s_fini(void) {\n"
                    "    for (int k = 0; k < %d; k++)\n"
                    "        kiln_dnnl_op_free(&%s_st.op[k]);\n}\n\n",
                    symbol, G.nops, symbol);
        /* the function: scratch tensors sized by their layouts */
        for (int id = 0; id < b->n; id++)
            F.scratch[id] = 0;
        contrib_fn_open(&s, &F, symbol);
        kstr_printf(&s,
                    "    if (!__atomic_load_n(&%s_st.ready, __ATOMIC_ACQUIRE)) {\n"
                    "        pthread_mutex_lock(&%s_st.mu);\n"
                    "        if (!%s_st.ready)\n"
                    "            __atomic_store_n(&%s_st.ready, %s_init(args) ? -1 : 1, "
                    "__ATOMIC_RELEASE);\n"
                    "        pthread_mutex_unlock(&%s_st.mu);\n    }\n"
                    "    if (%s_st.ready < 0)\n        return KILN_KERNEL_EEXTERNAL;\n"
                    "    dnnl_stream_t strm = kiln_dnnl_stream();\n"
                    "    int32_t bad = strm ? 0 : KILN_KERNEL_EEXTERNAL;\n",
                    symbol, symbol, symbol, symbol, symbol, symbol, symbol);
        for (int id = 0; id < b->n; id++)
            if (G.producer[id] >= 0 && F.out_arg[id] < 0)
                kstr_printf(&s,
                            "    float *t%d = (float *)kiln__api->workspace_alloc("
                            "dnnl_memory_desc_get_size(&%s_st.md[%d]));\n"
                            "    if (!t%d)\n        bad |= KILN_KERNEL_ENOMEM;\n",
                            id, symbol, id, id);
        for (int k = 0; k < G.nops; k++) {
            const dop *o = &G.ops[k];
            kstr_printf(&s, "    if (!bad && kiln_dnnl_run(\"%s\", strm, &%s_st.op[%d], ", symbol,
                        symbol, k);
            int bufs[5] = {o->src, o->wei, o->bias, o->sum, o->out};
            for (int i = 0; i < 5; i++) {
                if (bufs[i] < 0)
                    kstr_puts(&s, "NULL");
                else
                    contrib_buf(&s, &F, bufs[i]);
                kstr_puts(&s, i < 4 ? ", " : "))\n        bad |= KILN_KERNEL_EEXTERNAL;\n");
            }
        }
        for (int id = 0; id < b->n; id++)
            if (G.producer[id] >= 0 && F.out_arg[id] < 0)
                kstr_printf(&s, "    if (t%d)\n        kiln__api->workspace_free(t%d);\n", id, id);
        kstr_puts(&s, "    if (strm)\n        dnnl_stream_destroy(strm);\n    return bad;\n}\n");
    }
    free(G.ops);
    free(G.blocked);
    free(G.producer);
    contrib_fn_free(&F);
    if (!ok) {
        kstr_free(&s);
        return NULL;
    }
    return kstr_take(&s);
}

const kiln_codegen_spec contrib_dnnl = {
    .name = "dnnl",
    .summary = "oneDNN: convolution, dense and batch matmul in float32 with fused bias, sum, "
               "ReLU and clip",
    .npatterns = (int)(sizeof k_patterns / sizeof k_patterns[0]),
    .patterns = k_patterns,
    .supported = dnnl_supported,
    .codegen = dnnl_codegen,
    .cflags = KILN_DNNL_CFLAGS,
    .ldflags = KILN_DNNL_LDFLAGS,
    .library = "libdnnl.so.2",
};

#endif
