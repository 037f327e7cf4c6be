/* emit.c: what the built-in backends' code generators share: which body
 * node is which argument of the external function, scratch buffers for the
 * rest, and the function's opening and closing lines (module ABI, with
 * scratch from the runtime's workspace pool). */
#include <stdlib.h>
#include <string.h>

#include "contrib.h"

const char *contrib_call_kind(const gnode *n) {
    if (n->kind != GN_CALL)
        return "";
    return strcmp(n->op->name, "composite") ? n->op->name : graph_attr_str(n, "Composite", "");
}

const gnode *contrib_inner(const gnode *n, const char *op) {
    if (n->kind == GN_CALL && !strcmp(n->op->name, op))
        return n;
    const struct kiln_graph *b = n->kind == GN_CALL ? graph_attr_graph(n, "body") : NULL;
    for (int id = 0; b && id < b->n; id++)
        if (b->nodes[id]->kind == GN_CALL && !strcmp(b->nodes[id]->op->name, op))
            return b->nodes[id];
    return NULL;
}

int64_t contrib_numel(const gnode *n) {
    int64_t c = 1;
    for (int d = 0; d < n->type.t[0].ndim; d++)
        c *= n->type.t[0].dims[d].v;
    return c;
}

int contrib_static_f32(const gnode *n) {
    if (!n->type.known || n->type.is_tuple || n->type.n != 1 || n->type.t[0].dtype != KILN_FLOAT32)
        return 0;
    for (int d = 0; d < n->type.t[0].ndim; d++)
        if (n->type.t[0].dims[d].sym)
            return 0;
    return 1;
}

int contrib_static_f32_call(const struct kiln_graph *g, const gnode *n) {
    for (int i = 0; i < n->nin; i++)
        if (!contrib_static_f32(g->nodes[n->in[i]]))
            return 0;
    return contrib_static_f32(n);
}

int contrib_fn_init(contrib_fn *F, const struct kiln_graph *g, const gnode *call) {
    (void)g;
    memset(F, 0, sizeof *F);
    F->body = graph_attr_graph(call, "body");
    F->nin = call->nin;
    const struct kiln_graph *b = F->body;
    if (!b) {
        kiln_set_error(KILN_ERR_INVALID, "external call '%s' has no body", call->name);
        return 0;
    }
    size_t n = (size_t)(b->n ? b->n : 1);
    F->var_arg = malloc(sizeof(int) * n);
    F->out_arg = malloc(sizeof(int) * n);
    F->scratch = calloc(n, 1);
    if (!F->var_arg || !F->out_arg || !F->scratch) {
        contrib_fn_free(F);
        kiln_set_error(KILN_ERR_NOMEM, "out of memory");
        return 0;
    }
    for (int id = 0, v = 0; id < b->n; id++) {
        const gnode *x = b->nodes[id];
        F->var_arg[id] = x->kind == GN_VAR ? v++ : -1;
        F->out_arg[id] = -1;
        if (!contrib_static_f32(x)) {
            char label[300];
            kiln_set_error(KILN_ERR_UNSUPPORTED,
                           "external function '%s': %s is not a float32 tensor of static shape",
                           graph_attr_str(call, "global_symbol", ""),
                           graph_node_label(x, label, sizeof label));
            contrib_fn_free(F);
            return 0;
        }
    }
    for (int k = 0; k < b->nout; k++) {
        int o = b->outs[k];
        if (F->out_arg[o] >= 0 || b->nodes[o]->kind != GN_CALL) {
            kiln_set_error(KILN_ERR_UNSUPPORTED,
                           "external function '%s': a result that is an argument or another "
                           "result",
                           graph_attr_str(call, "global_symbol", ""));
            contrib_fn_free(F);
            return 0;
        }
        F->out_arg[o] = F->nin + k;
    }
    for (int id = 0; id < b->n; id++)
        F->scratch[id] = b->nodes[id]->kind == GN_CALL && F->out_arg[id] < 0;
    return 1;
}

void contrib_fn_free(contrib_fn *F) {
    free(F->var_arg);
    free(F->out_arg);
    free(F->scratch);
    memset(F, 0, sizeof *F);
}

void contrib_buf(kstr *out, const contrib_fn *F, int id) {
    if (F->var_arg[id] >= 0)
        kstr_printf(out, "((float *)args[%d])", F->var_arg[id]);
    else if (F->out_arg[id] >= 0)
        kstr_printf(out, "((float *)args[%d])", F->out_arg[id]);
    else
        kstr_printf(out, "t%d", id);
}

void contrib_fn_open(kstr *out, const contrib_fn *F, const char *symbol) {
    const struct kiln_graph *b = F->body;
    kstr_printf(out,
                "__attribute__((visibility(\"default\")))\n"
                "int32_t %s(void *const *args, const int64_t *vars) {\n"
                "    (void)vars;\n",
                symbol);
    int any = 0;
    for (int id = 0; id < b->n; id++)
        if (F->scratch[id]) {
            kstr_printf(out, "    float *t%d = (float *)kiln__api->workspace_alloc(%lld);\n", id,
                        (long long)(contrib_numel(b->nodes[id]) * 4));
            any = 1;
        }
    if (any) {
        kstr_puts(out, "    if (");
        const char *sep = "";
        for (int id = 0; id < b->n; id++)
            if (F->scratch[id]) {
                kstr_printf(out, "%s!t%d", sep, id);
                sep = " || ";
            }
        kstr_puts(out, ") {\n");
        for (int id = 0; id < b->n; id++)
            if (F->scratch[id])
                kstr_printf(out, "        if (t%d) kiln__api->workspace_free(t%d);\n", id, id);
        kstr_puts(out, "        return KILN_KERNEL_ENOMEM;\n    }\n");
    }
}

void contrib_fn_close(kstr *out, const contrib_fn *F) {
    for (int id = 0; id < F->body->n; id++)
        if (F->scratch[id])
            kstr_printf(out, "    kiln__api->workspace_free(t%d);\n", id);
    kstr_puts(out, "    return 0;\n}\n");
}
