/* fold_constant.c: FoldConstant. Calls whose inputs are all constants (or
 * calls folded before them) are evaluated at compile time by the graph
 * layer's evaluator (graph_eval_call: the op's compute run by the
 * reference interpreter, in C, with no compiler) and replaced by
 * constants. What folds: calls of one tensor with concrete dims whose op
 * has a compute, whatever its fusion pattern (the interpreter runs any
 * compute, so no op is singled out by name). A call the interpreter
 * cannot evaluate (past its element cap, say) stays a call, and so do the
 * calls that read it; only running out of memory, or a constant index out
 * of range (a Gather of a constant by a bad constant index: the error names
 * the node, as ONNX Runtime reports it), fails the pass. A value is
 * kept only while a later folded call still reads it, or if the new graph
 * needs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static int foldable(const struct kiln_graph *g, const gnode *n, const int *fold) {
    if (n->kind != GN_CALL || !n->op->compute || !n->type.known || n->type.is_tuple)
        return 0;
    for (int i = 0; i < n->nin; i++) {
        const gnode *p = g->nodes[n->in[i]];
        if (p->kind != GN_CONST && !fold[p->id])
            return 0;
    }
    for (int k = 0; k < n->type.t[0].ndim; k++)
        if (n->type.t[0].dims[k].sym)
            return 0;
    return 1;
}

/* Evaluate the nodes marked in fold, in order; values[id] keeps each
 * needed one. A node whose evaluation fails (the interpreter's element cap,
 * an expression it does not run), or that reads such a node, is left
 * unfolded: fold[id] is cleared, the folded values it reads become needed,
 * the error is cleared and the others go on. Only running out of memory and
 * an index out of range (KILN_ERR_RANGE) fail. */
static kiln_status evaluate(const struct kiln_graph *g, int64_t fold_max, int *fold, int *needed,
                            kiln_ndarray **values) {
    int *uses = kiln_calloc((size_t)g->n, sizeof(int)); /* folded readers still to come */
    const kiln_ndarray **in = NULL;
    if (!uses)
        return KILN_ERR_NOMEM;
    int maxin = 1;
    for (int id = 0; id < g->n; id++) {
        if (!fold[id])
            continue;
        const gnode *n = g->nodes[id];
        if (n->nin > maxin)
            maxin = n->nin;
        for (int i = 0; i < n->nin; i++)
            uses[n->in[i]]++;
    }
    kiln_status st = (in = kiln_calloc((size_t)maxin, sizeof *in)) ? KILN_OK : KILN_ERR_NOMEM;
    for (int id = 0; id < g->n && st == KILN_OK; id++) {
        if (!fold[id])
            continue;
        const gnode *n = g->nodes[id];
        int ready = 1;
        for (int i = 0; i < n->nin; i++) {
            const gnode *p = g->nodes[n->in[i]];
            in[i] = p->kind == GN_CONST ? p->value : values[p->id];
            ready &= p->kind == GN_CONST || fold[p->id];
        }
        st = ready ? graph_eval_call(n, in, fold_max, &values[id]) : KILN_ERR_INVALID;
        if (st == KILN_ERR_RANGE) /* a constant index out of range: the model is wrong */
            break;
        if (st != KILN_OK && st != KILN_ERR_NOMEM) {
            /* left unfolded; its folded inputs stay (their uses are not
               counted down, so they are not freed before the rebuild) */
            kiln_ndarray_free(values[id]);
            values[id] = NULL;
            fold[id] = 0;
            for (int i = 0; i < n->nin; i++)
                needed[n->in[i]] |= fold[n->in[i]];
            kiln_clear_error();
            st = KILN_OK;
            continue;
        }
        for (int i = 0; i < n->nin && st == KILN_OK; i++) {
            int p = n->in[i];
            if (fold[p] && --uses[p] == 0 && !needed[p]) {
                kiln_ndarray_free(values[p]);
                values[p] = NULL;
            }
        }
    }
    free((void *)in);
    free(uses);
    return st;
}

struct kiln_graph *pass_fold_constant(struct kiln_graph *g, const pass_env *env) {
    int n = g->n ? g->n : 1;
    int *fold = kiln_calloc((size_t)n, sizeof(int)), *needed = kiln_calloc((size_t)n, sizeof(int));
    int *map = kiln_malloc(sizeof(int) * (size_t)n);
    kiln_ndarray **values = kiln_calloc((size_t)n, sizeof(kiln_ndarray *));
    struct kiln_graph *r = NULL;
    if (!fold || !needed || !map || !values)
        goto done;
    int any = 0;
    for (int id = 0; id < g->n; id++)
        any |= fold[id] = foldable(g, g->nodes[id], fold);
    for (int id = 0; id < g->n; id++) {
        const gnode *c = g->nodes[id];
        if (fold[id])
            continue;
        for (int i = 0; i < c->nin; i++)
            needed[c->in[i]] |= fold[c->in[i]];
    }
    for (int k = 0; k < g->nout; k++)
        needed[g->outs[k]] |= fold[g->outs[k]];
    if (any && evaluate(g, env->fold_max, fold, needed, values) != KILN_OK)
        goto done;
    r = graph_new(g->ops);
    if (!r)
        goto done;
    for (int id = 0; id < g->n; id++) {
        const gnode *c = g->nodes[id];
        map[id] = -1;
        if (fold[id] && !needed[id])
            continue; /* only feeds other folded nodes */
        if (fold[id]) {
            map[id] = graph_const_take(r, c->name, values[id]);
            values[id] = NULL; /* taken */
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
    for (int id = 0; values && id < g->n; id++)
        kiln_ndarray_free(values[id]);
    free(values);
    free(fold);
    free(needed);
    free(map);
    return r;
}
