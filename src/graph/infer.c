/* infer.c: type inference, in the graph layer so that every layer above
 * (the frontend as it imports, the passes as they rewrite, the driver)
 * types nodes the same way. Nodes are visited in order (inputs come
 * first) and each op's relation gives the output type. An error names the
 * node, its op and the reason. The InferType pass of the pipeline is
 * kiln_graph_infer_types. */
#include <stdio.h>

#include "graph_internal.h"

/* Infer the type of every node of g. */
kiln_status kiln_graph_infer_types(kiln_graph *g) {
    if (!g)
        return kiln_set_error(KILN_ERR_INVALID, "graph is NULL");
    for (int id = 0; id < g->n; id++) {
        kiln_status st = graph_infer_node(g, id);
        if (st != KILN_OK)
            return st;
    }
    return KILN_OK;
}

kiln_status graph_infer_node(struct kiln_graph *g, int id) {
    if (!g || id < 0 || id >= g->n)
        return kiln_set_error(KILN_ERR_INVALID, "infer type: no node %d", id);
    gnode *n = g->nodes[id];
    char label[512];
    const gtype *in[4096];
    for (int i = 0; i < n->nin; i++)
        in[i] = &g->nodes[n->in[i]]->type;
    switch (n->kind) {
    case GN_VAR:
    case GN_CONST:
        if (!n->type.known)
            return kiln_set_error(KILN_ERR_INVALID, "%s has no type",
                                  graph_node_label(n, label, sizeof label));
        break;
    case GN_TUPLE: {
        gtype t = {1, 1, n->nin,
                   arena_alloc(g->arena, sizeof(gtensor_type) * (size_t)(n->nin ? n->nin : 1))};
        for (int i = 0; i < n->nin; i++) {
            if (!in[i]->known || in[i]->is_tuple)
                return kiln_set_error(KILN_ERR_INVALID, "%s: field %d is %s",
                                      graph_node_label(n, label, sizeof label), i,
                                      in[i]->known ? "a nested tuple (not supported)"
                                                   : "of unknown type");
            t.t[i] = in[i]->t[0];
        }
        n->type = t;
        break;
    }
    case GN_TUPLE_GET:
        if (!in[0]->known || !in[0]->is_tuple || n->index >= in[0]->n)
            return kiln_set_error(KILN_ERR_INVALID, "%s: %s",
                                  graph_node_label(n, label, sizeof label),
                                  !in[0]->known      ? "its input has no type"
                                  : !in[0]->is_tuple ? "its input is not a tuple"
                                                     : "index out of range");
        n->type = gtype_tensor(g, in[0]->t[n->index].dtype, in[0]->t[n->index].ndim,
                               in[0]->t[n->index].dims);
        break;
    case GN_CALL: {
        gtype out = {0, 0, 0, NULL};
        kiln_clear_error();
        rel_result r = n->op->rel(g, n, in, &out);
        if (r == REL_INCOMPLETE)
            return kiln_set_error(KILN_ERR_INVALID, "%s: input types are unknown",
                                  graph_node_label(n, label, sizeof label));
        if (r == REL_ERROR) {
            kiln_error_prefix("%s", graph_node_label(n, label, sizeof label));
            return KILN_ERR_INVALID;
        }
        n->type = out;
        break;
    }
    }
    char why[96];
    if (!gtype_size_ok(&n->type, why, sizeof why))
        return kiln_set_error(KILN_ERR_INVALID, "%s: %s", graph_node_label(n, label, sizeof label),
                              why);
    return KILN_OK;
}
