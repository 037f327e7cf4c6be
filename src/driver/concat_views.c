/* concat_views.c: ConcatViews, the memory planner's concatenation without
 * copies. A concatenation whose output is its inputs' bytes one after
 * another (its row's `view` hook: every dim before the axis is 1, e.g.
 * batch 1 along the channels, NCHW or NCHW[x]c) becomes a view: each
 * input's producer writes straight into its slice of the output's buffer,
 * and the concatenation runs nothing (a "__view" node in mod.json, its
 * entries at byte offsets of one storage id: "storage_offset").
 *
 * A view must not make a tensor go through memory that did not. The
 * concatenation stays a copy when FuseOps (run first without views) puts
 * one of its inputs and one of its consumers in its kernel: ShuffleNet's
 * layout transforms and slices are computed inside its channel shuffle,
 * and a view would write them out and read them again. (An input fused into
 * a concatenation that ends its kernel becomes a kernel writing its slice:
 * the same bytes.) An input can live in one place only. It
 * keeps its own buffer, and the concatenation stays a copying kernel, when
 * it is a graph input, a constant, a graph output, a tuple element, a
 * control node's or a binder's output, an input twice, or placed already
 * in another concatenation in a different way. The concatenations are placed from the
 * last to the first, so a concatenation whose inputs already lie, in
 * order, in a later one becomes a view of that stretch of it: DenseNet's
 * block, whose every concatenation is a prefix of the next (torchvision's
 * export concatenates all k+1 features at each layer), is one buffer, the
 * block's last concatenation, which the producers fill one slice at a time.
 * The buffer of such a set lives from its first producer to its last
 * reader (compile.c joins their lifetimes). A concatenation whose own
 * output is placed in a later one places its inputs there in turn.
 *
 * Only static plans get views: a plan with a symbolic dim, a binder or a
 * control node keeps the copies (the runtime sizes its buffers per run).
 * kiln's kernels never update a buffer in place, so no other read
 * conflicts with a placement. */
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"
#include "../passes/passes.h"
#include "concat_views.h"

static int is_output(const struct kiln_graph *g, int id) {
    for (int k = 0; k < g->nout; k++)
        if (g->outs[k] == id)
            return 1;
    return 0;
}

/* The bytes of node id's (static, single) tensor. */
static int64_t node_bytes(const gnode *n) {
    const gtensor_type *t = &n->type.t[0];
    int64_t b = (int64_t)kiln_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++)
        b *= t->dims[d].v; /* the relation checked each tensor against 1 TiB */
    return b;
}

/* 1 if every node's type is static and no call binds sizes or runs bodies. */
static int plan_is_static(const struct kiln_graph *g) {
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (!n->type.known)
            return 0;
        if (n->kind == GN_CALL && (n->op->binds || n->op->control))
            return 0;
        for (int k = 0; k < n->type.n; k++)
            for (int d = 0; d < n->type.t[k].ndim; d++)
                if (n->type.t[k].dims[d].sym)
                    return 0;
    }
    return 1;
}

/* 1 if node c may be a view at all: its op says its output is its inputs'
 * bytes in order, it is no graph output, and each input is a kernel's whole
 * (single) output that is no graph output, once; and no input is in c's
 * kernel when ops after c are too (fused[id]: its FuseOps group without
 * views; NULL: no fusion). */
static int candidate(const struct kiln_graph *g, const gnode *c, const int *fused) {
    if (c->kind != GN_CALL || !c->op->view || c->type.is_tuple || c->nin < 1 ||
        is_output(g, c->id) || !c->op->view(g, c))
        return 0;
    int last = 1; /* c is its group's output */
    for (int q = c->id + 1; fused && q < g->n && last; q++)
        last = fused[q] != fused[c->id];
    for (int i = 0; i < c->nin; i++) {
        const gnode *p = g->nodes[c->in[i]];
        if (p->kind != GN_CALL || p->type.is_tuple || p->op->binds || p->op->control ||
            is_output(g, p->id) || (fused && !last && fused[p->id] == fused[c->id]))
            return 0;
        for (int j = 0; j < i; j++)
            if (c->in[j] == c->in[i])
                return 0;
    }
    return 1;
}

kiln_status driver_plan_views(const struct kiln_graph *g, int enabled, int fuse, driver_views *v) {
    memset(v, 0, sizeof *v);
    size_t n = (size_t)(g->n ? g->n : 1);
    v->view = calloc(n, 1);
    v->root = malloc(n * sizeof(int));
    v->off = calloc(n, sizeof(int64_t));
    int64_t *rel = malloc(n * sizeof(int64_t));
    if (!v->view || !v->root || !v->off || !rel) {
        free(rel);
        driver_views_free(v);
        return KILN_ERR_NOMEM;
    }
    for (int id = 0; id < g->n; id++)
        v->root[id] = -1;
    int any = 0, *fused = NULL;
    for (int id = 0; id < g->n && enabled && !any; id++)
        any = candidate(g, g->nodes[id], NULL);
    if (!any || !plan_is_static(g)) {
        free(rel);
        return KILN_OK;
    }
    if (fuse) {
        if (!(fused = malloc(n * sizeof(int)))) {
            free(rel);
            driver_views_free(v);
            return KILN_ERR_NOMEM;
        }
        pass_fuse_ops(g, NULL, fused);
    }
    for (int id = g->n - 1; id >= 0; id--) {
        const gnode *c = g->nodes[id];
        if (!candidate(g, c, fused))
            continue;
        /* each input's offset within c, and how many are placed already */
        int placed = 0;
        int64_t at = 0;
        for (int i = 0; i < c->nin; i++) {
            rel[i] = at;
            at += node_bytes(g->nodes[c->in[i]]);
            placed += v->root[c->in[i]] >= 0;
        }
        int r = v->root[id];
        int64_t base = v->off[id];
        if (placed == 0) { /* the inputs go into c's buffer, or where c lies */
            if (r < 0) {
                r = id;
                base = 0;
                v->root[id] = id;
            }
            for (int i = 0; i < c->nin; i++) {
                v->root[c->in[i]] = r;
                v->off[c->in[i]] = base + rel[i];
            }
        } else if (placed == c->nin) { /* c is a stretch of where they lie, if they do in order */
            int r0 = v->root[c->in[0]], ok = 1;
            int64_t o0 = v->off[c->in[0]];
            for (int i = 1; i < c->nin && ok; i++)
                ok = v->root[c->in[i]] == r0 && v->off[c->in[i]] == o0 + rel[i];
            if (!ok || (r >= 0 && (r != r0 || base != o0)))
                continue;
            v->root[id] = r0;
            v->off[id] = o0;
        } else {
            continue;
        }
        v->view[id] = 1;
        v->nviews++;
    }
    free(fused);
    free(rel);
    return KILN_OK;
}

kiln_status driver_views_join_lifetimes(const driver_views *v, int ngroups, const int *group_out,
                                        int *last_use, int nnodes) {
    if (!v->nviews)
        return KILN_OK;
    int *last = malloc(sizeof(int) * (size_t)(nnodes ? nnodes : 1));
    if (!last)
        return KILN_ERR_NOMEM;
    for (int id = 0; id < nnodes; id++)
        last[id] = -1;
    for (int k = 0; k < ngroups; k++) {
        int r = v->root[group_out[k]];
        if (r >= 0 && last[r] < last_use[k])
            last[r] = last_use[k];
    }
    for (int k = 0; k < ngroups; k++) {
        int r = v->root[group_out[k]];
        if (r >= 0)
            last_use[k] = last[r];
    }
    free(last);
    return KILN_OK;
}

void driver_views_free(driver_views *v) {
    free(v->view);
    free(v->root);
    free(v->off);
    memset(v, 0, sizeof *v);
}
