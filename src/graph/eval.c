/* eval.c: graph nodes evaluated on concrete values, without a compiler.
 * A call's op builds its compute on placeholders of its inputs' types
 * (the same compute the driver lowers), and the reference interpreter
 * (te/interp.h) evaluates it in C. FoldConstant and the ONNX importer fold
 * constants with it; tests run whole graphs through graph_eval as the
 * oracle of compiled kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "../te/interp.h"
#include "graph_internal.h"

/* 1 if the array has exactly type t's dtype and (concrete) dims. */
static int matches(const kiln_ndarray *a, const gtensor_type *t) {
    if (!a || kiln_ndarray_dtype(a) != t->dtype || kiln_ndarray_ndim(a) != t->ndim)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym || kiln_ndarray_dim(a, d) != t->dims[d].v)
            return 0;
    return 1;
}

static void type_text(const gtensor_type *t, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "%s[", kiln_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim && k < cap; d++) {
        if (t->dims[d].sym)
            k += (size_t)snprintf(buf + k, cap - k, "%s%s", d ? ", " : "", t->dims[d].sym);
        else
            k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "",
                                  (long long)t->dims[d].v);
    }
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
}

static kiln_status eval_fail(const gnode *n, const char *fmt, const char *detail) {
    char label[512];
    graph_node_label(n, label, sizeof label);
    return kiln_set_error(KILN_ERR_INVALID, fmt, label, detail);
}

/* The op's direct fold of n (one output, within the element cap that the
 * interpreter would apply), checked against n's type; KILN_ERR_UNSUPPORTED
 * when there is none or it declines. */
static kiln_status direct_fold(const gnode *n, const kiln_ndarray *const *inputs,
                               int64_t max_elements, kiln_ndarray **outs) {
    if (!n->op->fold || n->type.is_tuple)
        return KILN_ERR_UNSUPPORTED;
    int64_t numel = 1, cap = max_elements > 0 ? max_elements : TE_EVAL_MAX_ELEMENTS;
    const gtensor_type *t = &n->type.t[0];
    for (int d = 0; d < t->ndim; d++)
        if (!kiln_mul_ok(numel, t->dims[d].v, &numel))
            return KILN_ERR_UNSUPPORTED;
    if (numel > cap)
        return KILN_ERR_UNSUPPORTED; /* the interpreter says why */
    kiln_status st = n->op->fold(n, inputs, &outs[0]);
    if (st != KILN_OK)
        return st;
    if (!matches(outs[0], t)) {
        char tt[256];
        type_text(t, tt, sizeof tt);
        kiln_ndarray_free(outs[0]);
        outs[0] = NULL;
        return eval_fail(n,
                         "evaluate %s: the direct fold's output is not the %s its type "
                         "relation says",
                         tt);
    }
    return KILN_OK;
}

kiln_status graph_eval_call(const gnode *n, const kiln_ndarray *const *inputs, int64_t max_elements,
                            kiln_ndarray **outs) {
    char label[512], tt[256];
    if (!n || n->kind != GN_CALL)
        return kiln_set_error(KILN_ERR_INVALID, "evaluate: not a call node");
    graph_node_label(n, label, sizeof label);
    if (!n->type.known)
        return eval_fail(n, "evaluate %s: %s", "its type is not inferred");
    if (!n->op->compute)
        return eval_fail(n, "evaluate %s: %s", "the op has no compute");
    int nout = n->type.is_tuple ? n->type.n : 1;
    if (nout < 1 || nout > 64)
        return eval_fail(n, "evaluate %s: %s", "too many outputs");
    for (int k = 0; k < nout; k++) {
        outs[k] = NULL;
        for (int d = 0; d < n->type.t[k].ndim; d++)
            if (n->type.t[k].dims[d].sym)
                return eval_fail(n, "evaluate %s: output dim '%s' is symbolic",
                                 n->type.t[k].dims[d].sym);
    }
    const struct kiln_graph *g = n->graph;
    kiln_tensor **in = kiln_calloc((size_t)(n->nin ? n->nin : 1), sizeof *in);
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_status st = KILN_ERR_NOMEM;
    if (!in || !ctx)
        goto done;
    for (int i = 0; i < n->nin; i++) {
        const gnode *p = g->nodes[n->in[i]];
        st = KILN_ERR_INVALID;
        if (!p->type.known || p->type.is_tuple) {
            kiln_set_error(st, "evaluate %s: input %d is %s", label, i,
                           p->type.known ? "a tuple" : "untyped");
            goto done;
        }
        const gtensor_type *t = &p->type.t[0];
        if (!matches(inputs[i], t)) {
            type_text(t, tt, sizeof tt);
            kiln_set_error(st, "evaluate %s: the value of input %d is not a %s", label, i, tt);
            goto done;
        }
        kiln_expr sh[KILN_MAX_NDIM];
        for (int d = 0; d < t->ndim; d++)
            sh[d] = kiln_int(ctx, t->dims[d].v);
        char nm[32];
        snprintf(nm, sizeof nm, "in%d", i);
        if (!(in[i] = kiln_placeholder(ctx, t->ndim, sh, t->dtype, nm)))
            goto done;
    }
    if ((st = direct_fold(n, inputs, max_elements, outs)) != KILN_ERR_UNSUPPORTED)
        goto done;
    kiln_tensor *res[64] = {0};
    kiln_clear_error();
    if ((st = n->op->compute(ctx, n, in, res)) != KILN_OK) {
        kiln_error_prefix("evaluate %s", label);
        goto done;
    }
    te_eval_options opt = {0, NULL, NULL, max_elements};
    if ((st = te_eval(nout, res, n->nin, in, inputs, &opt, outs)) != KILN_OK) {
        kiln_error_prefix("evaluate %s", label);
        goto done;
    }
    for (int k = 0; k < nout; k++)
        if (!matches(outs[k], &n->type.t[k])) {
            type_text(&n->type.t[k], tt, sizeof tt);
            st = kiln_set_error(KILN_ERR_INVALID,
                                "evaluate %s: output %d of the compute is not "
                                "the %s its type relation says",
                                label, k, tt);
            for (int j = 0; j < nout; j++) {
                kiln_ndarray_free(outs[j]);
                outs[j] = NULL;
            }
            break;
        }
done:
    kiln_ctx_free(ctx);
    free(in);
    return st;
}

kiln_status graph_eval_node(const struct kiln_graph *g, int id, int64_t max_elements,
                            kiln_ndarray **outs) {
    const gnode *n = graph_node(g, id);
    if (!n || n->kind != GN_CALL)
        return kiln_set_error(KILN_ERR_INVALID, "evaluate: node %d is not a call", id);
    const kiln_ndarray **in = kiln_calloc((size_t)(n->nin ? n->nin : 1), sizeof *in);
    if (!in)
        return KILN_ERR_NOMEM;
    for (int i = 0; i < n->nin; i++) {
        const gnode *p = g->nodes[n->in[i]];
        if (p->kind != GN_CONST) {
            free((void *)in);
            return eval_fail(n, "evaluate %s: input %s is not a constant", p->name);
        }
        in[i] = p->value;
    }
    kiln_status st = graph_eval_call(n, in, max_elements, outs);
    free((void *)in);
    return st;
}

kiln_status graph_fold_node(struct kiln_graph *g, int id, int64_t max_elements) {
    gnode *n = graph_node(g, id);
    if (!n || n->kind != GN_CALL || !n->type.known || n->type.is_tuple)
        return kiln_set_error(KILN_ERR_INVALID, "fold: node %d is not a call of one tensor", id);
    kiln_ndarray *v = NULL;
    kiln_status st = graph_eval_node(g, id, max_elements, &v);
    if (st != KILN_OK)
        return st;
    n->kind = GN_CONST;
    n->op = NULL;
    n->nin = 0;
    n->nattr = 0;
    n->value = v;
    return KILN_OK;
}

kiln_status graph_eval(const struct kiln_graph *g, int nin, const kiln_ndarray *const *inputs,
                       int64_t max_elements, kiln_ndarray **outs) {
    if (!g)
        return kiln_set_error(KILN_ERR_INVALID, "evaluate: graph is NULL");
    /* vals[id]: node id's tensors (a tuple has several), owned unless a
       constant's or an input's */
    kiln_ndarray ***vals = kiln_calloc((size_t)(g->n ? g->n : 1), sizeof *vals);
    int *owned = kiln_calloc((size_t)(g->n ? g->n : 1), sizeof *owned);
    kiln_status st = vals && owned ? KILN_OK : KILN_ERR_NOMEM;
    int var = 0;
    for (int id = 0; id < g->n && st == KILN_OK; id++) {
        const gnode *n = g->nodes[id];
        int cnt = n->type.known && n->type.is_tuple ? n->type.n : 1;
        if (!(vals[id] = kiln_calloc((size_t)(cnt ? cnt : 1), sizeof **vals))) {
            st = KILN_ERR_NOMEM;
            break;
        }
        switch (n->kind) {
        case GN_VAR:
            if (var >= nin || !n->type.known || !matches(inputs[var], &n->type.t[0])) {
                st = eval_fail(n, "evaluate %s: %s",
                               var >= nin ? "no value was given" : "its value has another type");
                break;
            }
            vals[id][0] = (kiln_ndarray *)inputs[var++];
            break;
        case GN_CONST: vals[id][0] = n->value; break;
        case GN_CALL: {
            const kiln_ndarray *in[4096];
            for (int i = 0; i < n->nin; i++)
                in[i] = vals[n->in[i]][0];
            owned[id] = 1;
            st = graph_eval_call(n, in, max_elements, vals[id]);
            break;
        }
        case GN_TUPLE:
            for (int i = 0; i < n->nin; i++)
                vals[id][i] = vals[n->in[i]][0];
            break;
        case GN_TUPLE_GET: vals[id][0] = vals[n->in[0]][n->index]; break;
        }
    }
    for (int k = 0; k < g->nout && st == KILN_OK; k++) {
        outs[k] = ndarray_clone(vals[g->outs[k]][0]);
        if (!outs[k]) {
            st = KILN_ERR_NOMEM;
            for (int j = 0; j < k; j++)
                kiln_ndarray_free(outs[j]);
        }
    }
    for (int id = 0; vals && id < g->n; id++) {
        if (vals[id] && owned[id]) {
            int cnt = g->nodes[id]->type.is_tuple ? g->nodes[id]->type.n : 1;
            for (int k = 0; k < cnt; k++)
                kiln_ndarray_free(vals[id][k]);
        }
        free(vals[id]);
    }
    free(vals);
    free(owned);
    return st;
}
