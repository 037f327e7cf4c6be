/* fold_constant.c: FoldConstant. Calls whose inputs are all constants are
 * evaluated at compile time and replaced by constants. All of them are
 * gathered into one graph, compiled once by kiln itself (at -O1) and run
 * once, so folding costs one compile however many nodes fold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/runtime_internal.h"
#include "kiln/schedule.h"
#include "passes.h"

static int foldable(const struct kiln_graph *g, const gnode *n, const int *fold) {
    if (n->kind != GN_CALL || !n->op->compute || !n->type.known || n->type.is_tuple) return 0;
    if (n->op->pattern == OP_OPAQUE && strcmp(n->op->name, "nn.batch_norm")) return 0;
    for (int i = 0; i < n->nin; i++) {
        const gnode *p = g->nodes[n->in[i]];
        if (p->kind != GN_CONST && !fold[p->id]) return 0;
    }
    for (int k = 0; k < n->type.t[0].ndim; k++)
        if (n->type.t[0].dims[k].sym) return 0;
    return 1;
}

/* Evaluate the nodes marked in fold; values[id] receives each needed one. */
static kiln_status evaluate(const struct kiln_graph *g, const int *fold, const int *needed,
                            kiln_ndarray **values) {
    struct kiln_graph *f = graph_new(g->ops);
    int *map = malloc(sizeof(int) * (size_t)g->n), *outs = malloc(sizeof(int) * (size_t)g->n);
    int nout = 0;
    kiln_status st = KILN_ERR_NOMEM;
    kiln_build_options *o = kiln_build_options_new();
    kiln_executor *ex = NULL;
    char pkg[4096] = "";
    if (!f || !map || !outs || !o) goto done;
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        map[id] = -1;
        int used_const = 0;
        if (n->kind == GN_CONST)
            for (int j = id + 1; j < g->n && !used_const; j++)
                if (fold[j])
                    for (int i = 0; i < g->nodes[j]->nin; i++) used_const |= g->nodes[j]->in[i] == id;
        if (!fold[id] && !used_const) continue;
        if ((map[id] = graph_copy_node(f, n, map)) < 0) goto done;
        if (needed[id]) outs[nout++] = map[id];
    }
    if ((st = kiln_graph_set_outputs(f, nout, outs, NULL)) != KILN_OK) goto done;
    const char *tmp = getenv("TMPDIR");
    snprintf(pkg, sizeof pkg, "%s/kiln-fold-%d-%p.tar", tmp && *tmp ? tmp : "/tmp", (int)getpid(),
             (void *)f);
    kiln_build_options_set(o, "cflags", "-O1");
    kiln_build_options_set(o, "disabled-pass", "FoldConstant"); /* it would recurse */
    if ((st = kiln_graph_compile(f, pkg, o)) != KILN_OK) goto done;
    if (!(ex = kiln_executor_load(pkg))) {
        st = KILN_ERR_INVALID;
        goto done;
    }
    if ((st = kiln_executor_run(ex)) != KILN_OK) goto done;
    for (int id = 0, k = 0; id < g->n; id++) {
        if (!needed[id]) continue;
        values[id] = ndarray_clone(kiln_executor_output(ex, k++));
        if (!values[id]) {
            st = KILN_ERR_NOMEM;
            goto done;
        }
    }
    st = KILN_OK;
done:
    if (*pkg) unlink(pkg);
    kiln_executor_free(ex);
    kiln_build_options_free(o);
    kiln_graph_free(f);
    free(map);
    free(outs);
    return st;
}

struct kiln_graph *pass_fold_constant(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    int n = g->n ? g->n : 1;
    int *fold = calloc((size_t)n, sizeof(int)), *needed = calloc((size_t)n, sizeof(int));
    int *map = malloc(sizeof(int) * (size_t)n);
    kiln_ndarray **values = calloc((size_t)n, sizeof(kiln_ndarray *));
    struct kiln_graph *r = NULL;
    if (!fold || !needed || !map || !values) goto done;
    int any = 0;
    for (int id = 0; id < g->n; id++) any |= fold[id] = foldable(g, g->nodes[id], fold);
    for (int id = 0; id < g->n; id++) {
        const gnode *c = g->nodes[id];
        if (fold[id]) continue;
        for (int i = 0; i < c->nin; i++) needed[c->in[i]] |= fold[c->in[i]];
    }
    for (int k = 0; k < g->nout; k++) needed[g->outs[k]] |= fold[g->outs[k]];
    if (any && evaluate(g, fold, needed, values) != KILN_OK) goto done;
    r = graph_new(g->ops);
    if (!r) goto done;
    for (int id = 0; id < g->n; id++) {
        const gnode *c = g->nodes[id];
        map[id] = -1;
        if (fold[id] && !needed[id]) continue; /* only feeds other folded nodes */
        if (fold[id]) {
            map[id] = graph_const_take(r, c->name, ndarray_share(values[id]));
        } else {
            map[id] = graph_copy_node(r, c, map);
        }
        if (map[id] < 0) {
            kiln_graph_free(r);
            r = NULL;
            goto done;
        }
    }
    if (graph_copy_outputs(r, g, map) != KILN_OK) {
        kiln_graph_free(r);
        r = NULL;
    }
done:
    for (int id = 0; values && id < g->n; id++) kiln_ndarray_free(values[id]);
    free(values);
    free(fold);
    free(needed);
    free(map);
    return r;
}
