/* fuse_ops.c: FuseOps. Groups calls into one kernel by op pattern, in two
 * phases. Chains: a node joins the group of an input whose only consumer it
 * is. Diamonds: a group whose every consumer lies in one other group is
 * merged into it when the patterns allow, e.g. GELU, x * 0.5 * (1 +
 * erf(x / sqrt 2)), reads the dense output x twice and becomes the dense's
 * epilogue. TVM reaches the same groups through the post-dominator tree: a
 * group whose consumers all lie in one group is post-dominated by it, and
 * every path between them stays inside the two, so the union is convex. */
#include <stdlib.h>

#include "passes.h"

/* The most ops in one group, as TVM's max_fuse_depth. A fused kernel inlines
 * its ops into one expression, so the cap bounds the expression depth that
 * lowering, simplification and codegen see (and their time, which grows
 * with the square of a group's length): a chain of 20,000 elementwise ops
 * becomes 79 kernels, not one expression 20,000 deep. */
#define MAX_FUSED_OPS 256

/* The most demanding pattern in the group: what it can still absorb. */
static int can_absorb(op_pattern master, op_pattern next) {
    if (next > OP_BROADCAST && next != OP_INJECTIVE)
        return 0; /* reduce, fusable, opaque */
    if (master == OP_OUT_ELEMWISE_FUSABLE)
        return next <= OP_BROADCAST;
    if (master <= OP_INJECTIVE)
        return next <= OP_INJECTIVE;
    return 0;
}

/* The element count of a node's (single, static) output; -1 if unknown. */
static int64_t static_numel(const gnode *n) {
    if (!n->type.known || n->type.n != 1 || n->type.is_tuple)
        return -1;
    int64_t c = 1;
    for (int d = 0; d < n->type.t[0].ndim; d++) {
        const gdim *x = &n->type.t[0].dims[d];
        if (x->sym || x->v < 0 || (x->v && c > INT64_MAX / x->v))
            return -1;
        c *= x->v;
    }
    return c;
}

/* Whether node n, joining a group whose anchor (a convolution or dense)
 * produced `anchor` elements, would broadcast the group's value over more
 * elements: the anchor, computed per output block of the group, would then
 * be recomputed for every block it is broadcast to. A squeeze-and-excitation
 * block's 1x1 convolution on the pooled [1, C, 1, 1] vector, its sigmoid,
 * and the channel scale of the [1, C, H, W] features were one kernel that
 * ran the convolution and the sigmoid H x W times (EfficientNet-B0: 90 us
 * where the scale alone reads and writes 3.6 MB). */
static int widens(int64_t anchor, const gnode *n) {
    int64_t m = static_numel(n);
    return anchor >= 0 && m > anchor;
}

int pass_find(int *rep, int g) {
    while (rep[g] != g)
        g = rep[g] = rep[rep[g]];
    return g;
}

/* The groups of phase 2 and what it knows of each (arrays indexed by group,
 * with room for one group per node: peel_tail makes new ones). */
typedef struct {
    const struct kiln_graph *g;
    int *group, *rep, *tuple, *size, *escape;
    op_pattern *master, *maxpat;
    const int *cstart, *cons;
    int ngroups;
    char *seen; /* reaches' scratch: g->n zeroed entries, and 2 g->n ints */
    int *stack;
} groups;

/* Split group b into its elementwise/broadcast head and an injective tail
 * (its injective nodes and every node of b after one of them), so that a
 * producer's elementwise consumers can join the producer while the tail
 * (a layout_transform back to NCHW, a reshape) stays a kernel of its own:
 * conv -> sigmoid -> multiply(conv, sigmoid) -> layout_transform had the
 * SiLU in the layout transform's kernel, which has no vector schedule
 * (1.9 ms against the conv's 0.2). Only when the head is not empty, none of
 * a's consumers is in the tail, and the head has one output (the node the
 * tail or the graph reads). Returns 1 if it split. */
static int peel_tail(groups *G, int a, int b, char *tail) {
    const struct kiln_graph *g = G->g;
    int head = 0, ntail = 0, outs = 0;
    for (int id = 0; id < g->n; id++) {
        tail[id] = 0;
        if (G->group[id] < 0 || pass_find(G->rep, G->group[id]) != b)
            continue;
        const gnode *nd = g->nodes[id];
        int t = nd->op->pattern > OP_BROADCAST;
        for (int i = 0; i < nd->nin && !t; i++)
            t = tail[nd->in[i]];
        tail[id] = (char)t;
        head += !t;
        ntail += t;
    }
    if (!head || !ntail)
        return 0;
    for (int id = 0; id < g->n; id++) {
        if (G->group[id] < 0)
            continue;
        int gid = pass_find(G->rep, G->group[id]);
        if (gid == b && !tail[id]) {
            int out = G->escape[id];
            for (int e = G->cstart[id]; e < G->cstart[id + 1]; e++) {
                int c = G->cons[e];
                out |= G->group[c] < 0 || pass_find(G->rep, G->group[c]) != b || tail[c];
            }
            outs += out;
        }
        if (gid == a)
            for (int e = G->cstart[id]; e < G->cstart[id + 1]; e++)
                if (tail[G->cons[e]])
                    return 0;
    }
    if (outs != 1)
        return 0;
    int t = G->ngroups++;
    G->rep[t] = t;
    G->tuple[t] = 0;
    G->size[t] = ntail;
    G->size[b] = head;
    G->master[t] = G->maxpat[t] = OP_INJECTIVE;
    G->maxpat[b] = OP_ELEMWISE;
    for (int id = 0; id < g->n; id++) {
        if (tail[id])
            G->group[id] = t;
        else if (G->group[id] >= 0 && pass_find(G->rep, G->group[id]) == b &&
                 g->nodes[id]->op->pattern > G->maxpat[b])
            G->maxpat[b] = g->nodes[id]->op->pattern;
    }
    G->master[b] = G->maxpat[b];
    return 1;
}

/* Whether node `from` depends on a member of group b (whose first node is
 * first_b): a walk up its inputs, which stops below first_b (node ids are
 * in topological order). seen has g->n entries, zeroed; it is left
 * zeroed. */
static int reaches(const groups *G, int from, int b, int first_b) {
    const struct kiln_graph *g = G->g;
    char *seen = G->seen;
    int *stack = G->stack;
    int top = 0, found = 0, nseen = 0;
    if (from < first_b)
        return 0;
    stack[top++] = from;
    seen[from] = 1;
    while (top && !found) {
        int id = stack[--top];
        stack[g->n + nseen++] = id; /* to clear seen after */
        if (G->group[id] >= 0 && pass_find(G->rep, G->group[id]) == b) {
            found = 1;
            break;
        }
        for (int i = 0; i < g->nodes[id]->nin; i++) {
            int src = g->nodes[id]->in[i];
            if (src >= first_b && !seen[src]) {
                seen[src] = 1;
                stack[top++] = src;
            }
        }
    }
    for (int k = 0; k < nseen; k++)
        seen[stack[g->n + k]] = 0;
    while (top)
        seen[stack[--top]] = 0;
    return found;
}

/* The first node of group b (g->n if none). */
static int first_node(const groups *G, int b) {
    for (int id = 0; id < G->g->n; id++)
        if (G->group[id] >= 0 && pass_find(G->rep, G->group[id]) == b)
            return id;
    return G->g->n;
}

/* Whether the members of group a after node `from` (all of a: from -1) can
 * join anchor group b (anchor its element count) as a side input of its
 * epilogue: a residual connection's dequantize (cast, subtract, multiply of
 * an int8 tensor) read by the add after a convolution. Then the int8 tensor
 * is what the kernel reads, not a float copy that a kernel of its own writes
 * first (4x the memory traffic). Only when the inputs they read from
 * outside a do not depend on b (the union stays free of cycles), and their
 * readers outside a are elementwise or broadcast ops of b (not its anchor,
 * which reads per tap) over values of the anchor's size (nothing is computed
 * twice). */
static int side_ok(const groups *G, int a, int from, int b, int64_t anchor) {
    const struct kiln_graph *g = G->g;
    int first_b = first_node(G, b);
    if (anchor < 0)
        return 0;
    for (int id = from + 1; id < g->n; id++) {
        if (G->group[id] < 0 || pass_find(G->rep, G->group[id]) != a)
            continue;
        const gnode *nd = g->nodes[id];
        for (int i = 0; i < nd->nin; i++) {
            int src = nd->in[i];
            int inside = G->group[src] >= 0 && pass_find(G->rep, G->group[src]) == a;
            if (!inside && reaches(G, src, b, first_b))
                return 0;
        }
        for (int e = G->cstart[id]; e < G->cstart[id + 1]; e++) {
            const gnode *c = g->nodes[G->cons[e]];
            if (G->group[c->id] >= 0 && pass_find(G->rep, G->group[c->id]) == a)
                continue;
            if (c->op->pattern > OP_BROADCAST || static_numel(nd) != anchor)
                return 0;
        }
    }
    return 1;
}

/* Whether node id is an int8 or uint8 value. */
static int is_byte_value(const gnode *n) {
    return n->type.known && !n->type.is_tuple && n->type.n == 1 &&
           (n->type.t[0].dtype == KILN_UINT8 || n->type.t[0].dtype == KILN_INT8);
}

/* Move the dequantizing tail of anchor group a into the anchor group b that
 * reads it: a convolution whose output is quantized to int8 and at once
 * dequantized for the add of another convolution's epilogue (ResNet's
 * downsample branch) wrote the float value; with the tail in b, a writes
 * the int8 value and b dequantizes it as a side input (side_ok's
 * conditions). The tail is every member of a after its last int8 value q,
 * all elementwise, reading only q and each other. Returns 1 if it moved. */
static int move_tail(groups *G, int a, const int64_t *anchor_numel) {
    const struct kiln_graph *g = G->g;
    int q = -1, last = -1;
    for (int id = 0; id < g->n; id++)
        if (G->group[id] >= 0 && pass_find(G->rep, G->group[id]) == a) {
            last = id;
            if (is_byte_value(g->nodes[id]))
                q = id;
        }
    if (q < 0 || q == last)
        return 0;
    int b = -1, ntail = 0;
    for (int id = q + 1; id <= last; id++) {
        if (G->group[id] < 0 || pass_find(G->rep, G->group[id]) != a)
            continue;
        const gnode *nd = g->nodes[id];
        if (nd->op->pattern > OP_BROADCAST || G->escape[id])
            return 0;
        for (int i = 0; i < nd->nin; i++) {
            int src = nd->in[i];
            int in_a = G->group[src] >= 0 && pass_find(G->rep, G->group[src]) == a;
            if (in_a && src < q)
                return 0; /* reads the anchor's other values: not a tail */
        }
        for (int e = G->cstart[id]; e < G->cstart[id + 1]; e++) {
            int c = G->cons[e];
            int gc = G->group[c] < 0 ? -1 : pass_find(G->rep, G->group[c]);
            if (gc == a)
                continue;
            if (gc < 0 || (b >= 0 && gc != b))
                return 0;
            b = gc;
        }
        ntail++;
    }
    if (b < 0 || G->tuple[b] || G->master[b] != OP_OUT_ELEMWISE_FUSABLE ||
        G->size[b] + ntail > MAX_FUSED_OPS)
        return 0;
    /* side_ok's conditions, for the tail as a group of its own */
    if (reaches(G, q, b, first_node(G, b)) || !side_ok(G, a, q, b, anchor_numel[b]))
        return 0;
    for (int id = q + 1; id <= last; id++)
        if (G->group[id] >= 0 && pass_find(G->rep, G->group[id]) == a)
            G->group[id] = b;
    G->size[a] -= ntail;
    G->size[b] += ntail;
    return 1;
}

/* Phase 2: merge a group into the one group that consumes all its members'
 * outputs, when that group's ops can follow the producer's master (an
 * out-elemwise-fusable op takes elementwise and broadcast ops, after
 * peeling an injective tail off the consumer; injective groups take
 * injective ones). Repeats until nothing merges; renumbers the groups 0..
 * in node order and returns the count. */
static int merge_diamonds(const struct kiln_graph *g, const char *alone, int *group, int ngroups,
                          op_pattern *master, int64_t *anchor_numel) {
    int n = g->n ? g->n : 1, ng = n; /* a group per node at most, peeled tails too */
    int *rep = malloc(sizeof(int) * (size_t)ng), *escape = calloc((size_t)n, sizeof(int));
    op_pattern *maxpat = malloc(sizeof(op_pattern) * (size_t)ng);
    int *tuple = calloc((size_t)ng, sizeof(int)), *size = calloc((size_t)ng, sizeof(int));
    char *tail = malloc((size_t)n);
    KILN_ASSERT(rep && escape && maxpat && tuple && size && tail);
    for (int k = 0; k < ngroups; k++) {
        rep[k] = k;
        maxpat[k] = OP_ELEMWISE;
    }
    for (int k = 0; k < g->nout; k++)
        escape[g->outs[k]] = 1;
    for (int id = 0; id < g->n; id++) {
        const gnode *nd = g->nodes[id];
        if (group[id] < 0)
            continue;
        if (nd->op->pattern > maxpat[group[id]])
            maxpat[group[id]] = nd->op->pattern;
        tuple[group[id]] |= nd->type.is_tuple || (alone && alone[id]); /* neither merges */
        size[group[id]]++;
    }
    /* consumers of each node, as lists (CSR) */
    int *cstart = calloc((size_t)n + 1, sizeof(int)), nedges = 0;
    KILN_ASSERT(cstart);
    for (int id = 0; id < g->n; id++)
        for (int i = 0; i < g->nodes[id]->nin; i++)
            cstart[g->nodes[id]->in[i] + 1]++;
    for (int id = 0; id < g->n; id++)
        cstart[id + 1] += cstart[id];
    nedges = cstart[g->n];
    int *cons = malloc(sizeof(int) * (size_t)(nedges ? nedges : 1)),
        *fill = calloc((size_t)n, sizeof(int));
    KILN_ASSERT(cons && fill);
    for (int id = 0; id < g->n; id++)
        for (int i = 0; i < g->nodes[id]->nin; i++) {
            int src = g->nodes[id]->in[i];
            cons[cstart[src] + fill[src]++] = id;
        }
    char *seen = calloc((size_t)n, 1);
    int *stack = malloc(sizeof(int) * 2 * (size_t)n);
    KILN_ASSERT(seen && stack);
    groups G = {g,      group,  rep,  tuple,   size, escape, master,
                maxpat, cstart, cons, ngroups, seen, stack};
    for (int a = 0; a < G.ngroups; a++)
        if (master[a] == OP_OUT_ELEMWISE_FUSABLE && !tuple[a])
            move_tail(&G, a, anchor_numel);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int a = 0; a < G.ngroups; a++) {
            if (pass_find(rep, a) != a || tuple[a])
                continue;
            if (master[a] != OP_OUT_ELEMWISE_FUSABLE && master[a] > OP_INJECTIVE)
                continue;
            int b = -1, ok = 1;
            for (int id = 0; id < g->n && ok; id++) {
                if (group[id] < 0 || pass_find(rep, group[id]) != a)
                    continue;
                if (escape[id])
                    ok = 0;
                for (int e = cstart[id]; e < cstart[id + 1] && ok; e++) {
                    int c = cons[e];
                    int gc = group[c] < 0 ? -1 : pass_find(rep, group[c]);
                    if (gc == a)
                        continue;
                    if (gc < 0 || (b >= 0 && gc != b))
                        ok = 0;
                    b = gc;
                }
            }
            if (!ok || b < 0 || tuple[b] || size[a] + size[b] > MAX_FUSED_OPS)
                continue;
            /* an anchor's group is not widened by a broadcasting consumer */
            int64_t an = master[a] == OP_OUT_ELEMWISE_FUSABLE ? anchor_numel[a] : -1;
            int wide = 0;
            for (int id = 0; id < g->n && an >= 0 && !wide; id++)
                wide = group[id] >= 0 && pass_find(rep, group[id]) == b && widens(an, g->nodes[id]);
            if (wide)
                continue;
            int fits = master[a] == OP_OUT_ELEMWISE_FUSABLE ? maxpat[b] <= OP_BROADCAST
                                                            : maxpat[b] <= OP_INJECTIVE;
            if (!fits && master[a] == OP_OUT_ELEMWISE_FUSABLE && maxpat[b] == OP_INJECTIVE)
                fits = peel_tail(&G, a, b, tail);
            if (!fits && maxpat[a] <= OP_BROADCAST && master[b] == OP_OUT_ELEMWISE_FUSABLE)
                fits = side_ok(&G, a, -1, b, anchor_numel[b]);
            if (!fits)
                continue;
            rep[a] = b;
            size[b] += size[a];
            if (master[a] == OP_OUT_ELEMWISE_FUSABLE) {
                master[b] = OP_OUT_ELEMWISE_FUSABLE;
                anchor_numel[b] = anchor_numel[a]; /* the group's one anchor moves along */
            }
            if (maxpat[a] > maxpat[b])
                maxpat[b] = maxpat[a];
            changed = 1;
        }
    }
    /* renumber the surviving groups in node order */
    int *num = malloc(sizeof(int) * (size_t)ng), count = 0;
    KILN_ASSERT(num);
    for (int k = 0; k < G.ngroups; k++)
        num[k] = -1;
    for (int id = 0; id < g->n; id++) {
        if (group[id] < 0)
            continue;
        int r = pass_find(rep, group[id]);
        if (num[r] < 0)
            num[r] = count++;
        group[id] = num[r];
    }
    free(num);
    free(cstart);
    free(cons);
    free(fill);
    free(rep);
    free(escape);
    free(maxpat);
    free(tuple);
    free(size);
    free(tail);
    free(seen);
    free(stack);
    return count;
}

/* Row fusion (op_rows_fn): the group that opaque node n may end, or -1.
 * n's first input must be the newest member of a group led by an anchor
 * that computes rows, with n its only consumer, and n must say it reduces
 * along its last axis. The group is closed after it: master OP_OPAQUE
 * absorbs nothing more, in either phase. */
static int row_join(const struct kiln_graph *g, const gnode *n, const int *consumers, int *group,
                    op_pattern *master, int *size, const int *anchor_id, const char *alone) {
    if (!n->op->rows || n->nin < 1 || !n->op->rows(n))
        return -1;
    const gnode *p = g->nodes[n->in[0]];
    int pg =
        p->kind == GN_CALL && !p->type.is_tuple && consumers[p->id] == 1 && !(alone && alone[p->id])
            ? group[p->id]
            : -1;
    if (pg < 0 || master[pg] != OP_OUT_ELEMWISE_FUSABLE || size[pg] >= MAX_FUSED_OPS)
        return -1;
    const gnode *a = g->nodes[anchor_id[pg]];
    if (!a->op->rows || !a->op->rows(a))
        return -1;
    for (int q = p->id + 1; q < n->id; q++)
        if (group[q] == pg)
            return -1; /* p is not the group's output */
    size[pg]++;
    master[pg] = OP_OPAQUE;
    return pg;
}

int pass_fuse_ops(const struct kiln_graph *g, const char *alone, int *group) {
    int *consumers = calloc((size_t)(g->n ? g->n : 1), sizeof(int));
    op_pattern *master = calloc((size_t)(g->n ? g->n : 1), sizeof(op_pattern));
    int *size = calloc((size_t)(g->n ? g->n : 1), sizeof(int));
    int64_t *anchor_numel = malloc(sizeof(int64_t) * (size_t)(g->n ? g->n : 1));
    int *anchor_id = malloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
    KILN_ASSERT(consumers && master && size && anchor_numel && anchor_id);
    for (int k = 0; k < (g->n ? g->n : 1); k++)
        anchor_numel[k] = -1;
    for (int id = 0; id < g->n; id++)
        for (int i = 0; i < g->nodes[id]->nin; i++) {
            /* count consumer nodes, not edges: add(x, x) is one consumer */
            int dup = 0;
            for (int j = 0; j < i; j++)
                dup |= g->nodes[id]->in[j] == g->nodes[id]->in[i];
            if (!dup)
                consumers[g->nodes[id]->in[i]]++;
        }
    for (int k = 0; k < g->nout; k++)
        consumers[g->outs[k]]++; /* outputs escape */
    int ngroups = 0;
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        group[id] = -1;
        if (n->kind != GN_CALL)
            continue;
        int multi_out = n->type.is_tuple;
        if (!multi_out && n->op->pattern == OP_OPAQUE && !(alone && alone[id]))
            group[id] = row_join(g, n, consumers, group, master, size, anchor_id, alone);
        if (!multi_out && n->op->pattern != OP_OPAQUE && !(alone && alone[id])) {
            for (int i = 0; i < n->nin && group[id] < 0; i++) {
                const gnode *p = g->nodes[n->in[i]];
                if (p->kind != GN_CALL || p->type.is_tuple || consumers[p->id] != 1 ||
                    (alone && alone[p->id]))
                    continue;
                int pg = group[p->id];
                if (pg >= 0 && master[pg] == OP_OUT_ELEMWISE_FUSABLE && widens(anchor_numel[pg], n))
                    continue;
                if (pg >= 0 && size[pg] < MAX_FUSED_OPS && can_absorb(master[pg], n->op->pattern)) {
                    /* p must be its group's output (the newest member) */
                    int newest = 1;
                    for (int q = p->id + 1; q < id && newest; q++)
                        newest = group[q] != pg;
                    if (newest) {
                        group[id] = pg;
                        size[pg]++;
                        if (master[pg] != OP_OUT_ELEMWISE_FUSABLE && n->op->pattern > master[pg])
                            master[pg] = n->op->pattern;
                    }
                }
            }
        }
        if (group[id] < 0) {
            group[id] = ngroups;
            master[ngroups] = n->op->pattern;
            anchor_numel[ngroups] =
                n->op->pattern == OP_OUT_ELEMWISE_FUSABLE ? static_numel(n) : -1;
            anchor_id[ngroups] = id;
            size[ngroups] = 1;
            ngroups++;
        }
    }
    ngroups = merge_diamonds(g, alone, group, ngroups, master, anchor_numel);
    free(consumers);
    free(master);
    free(size);
    free(anchor_numel);
    free(anchor_id);
    return ngroups;
}
