/* fuse_ops.c: FuseOps. Groups chains of calls into one kernel by op
 * pattern. A chain's inner nodes each have exactly one consumer (the next
 * node), so a group is convex: no path leaves it and comes back. */
#include <stdlib.h>

#include "passes.h"

/* The most demanding pattern in the group: what it can still absorb. */
static int can_absorb(op_pattern master, op_pattern next) {
    if (next > OP_BROADCAST && next != OP_INJECTIVE) return 0; /* reduce, fusable, opaque */
    if (master == OP_OUT_ELEMWISE_FUSABLE) return next <= OP_BROADCAST;
    if (master <= OP_INJECTIVE) return next <= OP_INJECTIVE;
    return 0;
}

int pass_fuse_ops(const struct kiln_graph *g, int *group) {
    int *consumers = calloc((size_t)(g->n ? g->n : 1), sizeof(int));
    op_pattern *master = calloc((size_t)(g->n ? g->n : 1), sizeof(op_pattern));
    KILN_ASSERT(consumers && master);
    for (int id = 0; id < g->n; id++)
        for (int i = 0; i < g->nodes[id]->nin; i++) {
            /* count consumer nodes, not edges: add(x, x) is one consumer */
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= g->nodes[id]->in[j] == g->nodes[id]->in[i];
            if (!dup) consumers[g->nodes[id]->in[i]]++;
        }
    for (int k = 0; k < g->nout; k++) consumers[g->outs[k]]++; /* outputs escape */
    int ngroups = 0;
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        group[id] = -1;
        if (n->kind != GN_CALL) continue;
        int multi_out = n->type.is_tuple;
        if (!multi_out && n->op->pattern != OP_OPAQUE) {
            for (int i = 0; i < n->nin && group[id] < 0; i++) {
                const gnode *p = g->nodes[n->in[i]];
                if (p->kind != GN_CALL || p->type.is_tuple || consumers[p->id] != 1) continue;
                int pg = group[p->id];
                if (pg >= 0 && can_absorb(master[pg], n->op->pattern)) {
                    /* p must be its group's output (the newest member) */
                    int newest = 1;
                    for (int q = p->id + 1; q < id && newest; q++) newest = group[q] != pg;
                    if (newest) {
                        group[id] = pg;
                        if (master[pg] != OP_OUT_ELEMWISE_FUSABLE && n->op->pattern > master[pg])
                            master[pg] = n->op->pattern;
                    }
                }
            }
        }
        if (group[id] < 0) {
            group[id] = ngroups;
            master[ngroups] = n->op->pattern;
            ngroups++;
        }
    }
    free(consumers);
    free(master);
    return ngroups;
}
