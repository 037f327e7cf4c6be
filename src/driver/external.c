/* external.c: the build's side of bring-your-own-codegen (kiln/byoc.h):
 * an external call's kernel is the C its backend writes, the module links
 * the backends' libraries, and mod.json names them for the runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "../contrib/contrib.h"
#include "driver_internal.h"

int driver_backend(const kiln_codegen_spec **list, int *n, int cap, const char *name) {
    for (int k = 0; k < *n; k++)
        if (!strcmp(list[k]->name, name))
            return k;
    /* a graph partitioned before the build (kiln_graph_partition_for) */
    const kiln_codegen_spec *b = contrib_find(name);
    if (!b)
        return -1;
    if (*n == cap) {
        kiln_set_error(KILN_ERR_UNSUPPORTED, "more than %d external backends", cap);
        return -1;
    }
    list[*n] = b;
    return (*n)++;
}

tir_func *driver_external_func(kiln_ctx *ctx, const struct kiln_graph *g, const gnode *n,
                               const char *name, int nin, const int *in,
                               const kiln_codegen_spec *b) {
    char label[512];
    /* a body holds the call's arguments and calls only: a constant comes in
       as an argument (PartitionGraph makes it so; a hand-written one may not) */
    const struct kiln_graph *body = graph_attr_graph(n, "body");
    for (int id = 0; body && id < body->n; id++) {
        const gnode *x = body->nodes[id];
        if (x->kind != GN_VAR && x->kind != GN_CALL) {
            char inner[300];
            kiln_set_error(KILN_ERR_UNSUPPORTED,
                           "%s: in its body, %s is not an argument or a call (a function for "
                           "a backend takes its constants as arguments)",
                           graph_node_label(n, label, sizeof label),
                           graph_node_label(x, inner, sizeof inner));
            return NULL;
        }
    }
    char *text = b->codegen(g, n->id, name, b->user);
    if (!text) {
        kiln_error_prefix("backend %s: %s", b->name, graph_node_label(n, label, sizeof label));
        return NULL;
    }
    arena *A = tir_arena(ctx);
    tir_func *f = arena_alloc(A, sizeof *f);
    int nout = n->type.is_tuple ? n->type.n : 1;
    f->name = tir_intern(ctx, name);
    f->extern_text = arena_strdup(A, text);
    free(text);
    f->nparams = nin + nout;
    f->params = arena_alloc(A, sizeof(tir_param) * (size_t)f->nparams);
    f->body = tir_nop(ctx);
    for (int i = 0; i < f->nparams; i++) {
        const gtensor_type *t = i < nin ? &g->nodes[in[i]]->type.t[0] : &n->type.t[i - nin];
        char nm[32];
        snprintf(nm, sizeof nm, i < nin ? "in%d" : "out%d", i < nin ? i : i - nin);
        tir_param *p = &f->params[i];
        p->name = tir_intern(ctx, nm);
        p->buf = tir_handle(ctx, nm, t->dtype);
        p->dtype = t->dtype;
        p->ndim = t->ndim;
        tir_node *shape = arena_alloc(A, sizeof(tir_node) * (size_t)(t->ndim ? t->ndim : 1));
        for (int d = 0; d < t->ndim; d++)
            shape[d] = tir_int(ctx, KILN_INT64, t->dims[d].v);
        p->shape = shape;
    }
    return f;
}

int driver_body_ops(const gnode *n) {
    const struct kiln_graph *b = graph_attr_graph(n, "body");
    if (!b)
        return 1;
    int ops = 0;
    for (int id = 0; id < b->n; id++)
        if (b->nodes[id]->kind == GN_CALL)
            ops += driver_body_ops(b->nodes[id]);
    return ops;
}

void driver_external_json(kstr *js, int n, const kiln_codegen_spec *const *b, const int *funcs) {
    int any = 0;
    for (int k = 0; k < n; k++)
        any |= funcs[k] > 0;
    if (!any)
        return; /* a package of kiln's kernels only: no key */
    kstr_puts(js, ", \"external\": [");
    for (int k = 0, lead = 1; k < n; k++) {
        if (!funcs[k])
            continue;
        kstr_printf(js, "%s{\"backend\": ", lead ? "" : ", ");
        json_write_string(js, b[k]->name);
        kstr_puts(js, ", \"library\": ");
        json_write_string(js, b[k]->library ? b[k]->library : "");
        kstr_printf(js, ", \"functions\": %d}", funcs[k]);
        lead = 0;
    }
    kstr_putc(js, ']');
}

void driver_external_flags(codegen_toolchain *tc, kstr *cflags, kstr *ldflags, int n,
                           const kiln_codegen_spec *const *b, const int *funcs) {
    kstr_init(cflags);
    kstr_init(ldflags);
    kstr_puts(cflags, tc->cflags ? tc->cflags : "");
    for (int k = 0; k < n; k++)
        if (funcs[k]) {
            kstr_printf(cflags, " %s", b[k]->cflags ? b[k]->cflags : "");
            kstr_printf(ldflags, " %s", b[k]->ldflags ? b[k]->ldflags : "");
        }
    tc->cflags = cflags->buf;
    tc->ldflags = ldflags->buf;
}
