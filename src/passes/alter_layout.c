/* alter_layout.c: AlterOpLayout, TVM's x86 layout rewrite, as generic
 * graph walking. What happens to each op is the op's own (its row, in
 * src/ops): its alter hook may rewrite the call for the target (nn.conv2d
 * into nn.contrib_conv2d_NCHWc or Winograd with packed weights, nn.dense
 * with packed weight panels, pools and nn.bias_add kept in a blocked
 * layout); otherwise its `layout` says whether it follows a blocked
 * layout (LAYOUT_FOLLOWS: elementwise ops, with their operands re-laid
 * out) or needs NCHW (LAYOUT_PLAIN). This file makes the replacement
 * calls, the blocked constants and the layout_transforms between layouts.
 *
 * The blocked layout NCHW[x]c flows as far as it can, so transforms stay
 * rare: every consumer that needs NCHW, and every graph output, gets NCHW
 * back through one layout_transform per tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "passes.h"

typedef struct {
    const struct kiln_graph *g;
    struct kiln_graph *r;
    layout_query q; /* what the ops' hooks are told; q.block is blk */
    int *map;       /* old id -> new id, in the layout blk says */
    int *blk;       /* old id -> its new node's channel block (0: plain) */
    int *plain;     /* old id -> a plain (NCHW) version, or -1 until asked */
    int *alt;       /* old id -> a version blocked by alt_b, or -1 */
    int *alt_b;
} alter;

/* A call in the new graph, typed. */
static int call(alter *A, const char *op, int nin, const int *in, const char *attrs,
                const char *name) {
    int id = kiln_graph_call(A->r, op, nin, in, attrs, name);
    if (id < 0 || graph_infer_node(A->r, id) != KILN_OK)
        return -1;
    return id;
}

static const char *layout_name(char *buf, size_t cap, int b) {
    if (b)
        snprintf(buf, cap, "NCHW%dc", b);
    else
        snprintf(buf, cap, "NCHW");
    return buf;
}

static int transform(alter *A, int id, int from, int to) {
    char attrs[160], s1[32], s2[32], nm[600];
    const gtensor_type *t = ops_node_type(A->g->nodes[id]);
    /* the logical channels, for a blocked source whose last block is padded */
    long long c = from && t && t->ndim == 4 ? (long long)t->dims[1].v : 0;
    snprintf(attrs, sizeof attrs, "src_layout=\"%s\", dst_layout=\"%s\", channels=%lld",
             layout_name(s1, sizeof s1, from), layout_name(s2, sizeof s2, to), c);
    snprintf(nm, sizeof nm, "%s.%s", A->g->nodes[id]->name, s2);
    int in = A->map[id];
    return call(A, "layout_transform", 1, &in, attrs, nm);
}

/* Old node id in plain NCHW (its usual form). */
static int as_plain(alter *A, int id) {
    if (!A->blk[id])
        return A->map[id];
    if (A->plain[id] < 0)
        A->plain[id] = transform(A, id, A->blk[id], 0);
    return A->plain[id];
}

/* Old node id (4-D NCHW) blocked by b. */
static int as_blocked(alter *A, int id, int b) {
    if (A->blk[id] == b)
        return A->map[id];
    if (A->alt[id] >= 0 && A->alt_b[id] == b)
        return A->alt[id];
    int t = transform(A, id, A->blk[id], b);
    A->alt[id] = t;
    A->alt_b[id] = b;
    return t;
}

/* 1 if every dim of t is static but, in a 4-D NCHW one, the batch: a
 * symbolic batch stays dim 0 of the blocked layout too. */
static int static_but_batch(const gtensor_type *t) {
    for (int d = t->ndim == 4 ? 1 : 0; d < t->ndim; d++)
        if (t->dims[d].sym)
            return 0;
    return 1;
}

char *pass_attrs_text(const gnode *n, const char *const *skip, const char *extra) {
    kstr s;
    kstr_init(&s);
    for (int i = 0; i < n->nattr; i++) {
        int drop = 0;
        for (const char *const *k = skip; k && *k; k++)
            drop |= !strcmp(*k, n->attrs[i].name);
        if (drop)
            continue;
        if (s.len)
            kstr_puts(&s, ", ");
        graph_print_attr(&s, &n->attrs[i]);
    }
    if (extra && *extra) {
        if (s.len)
            kstr_puts(&s, ", ");
        kstr_puts(&s, extra);
    }
    return kstr_take(&s);
}

/* ---- an op's rewrite ------------------------------------------------------------------- */

/* Make the call rw describes in place of n: its new constants first, then
 * its other inputs in the layouts asked for. Every value in rw is handed
 * to the new graph or freed. */
static int apply_rewrite(alter *A, const gnode *n, layout_rewrite *rw) {
    int in[LAYOUT_MAX_IN], made[LAYOUT_MAX_IN] = {0}, ok = 1;
    for (int i = 0; i < n->nin; i++) {
        kiln_ndarray *v = rw->in[i].value;
        if (!v)
            continue;
        made[i] = 1;
        rw->in[i].value = NULL;
        if (!ok) {
            kiln_ndarray_free(v);
            continue;
        }
        char nm[600];
        snprintf(nm, sizeof nm, "%s%s", A->g->nodes[n->in[i]]->name, rw->in[i].suffix);
        in[i] = graph_const_take(A->r, nm, v); /* taken, also on failure */
        ok = in[i] >= 0;
    }
    for (int i = 0; i < n->nin && ok; i++) {
        if (made[i])
            continue;
        int b = rw->in[i].block;
        in[i] = b ? as_blocked(A, n->in[i], b) : as_plain(A, n->in[i]);
        ok = in[i] >= 0;
    }
    if (!ok)
        return -1;
    char *at = pass_attrs_text(n, rw->drop, rw->attrs);
    if (!at)
        return -1;
    int id = call(A, rw->op ? rw->op : n->op->name, n->nin, in, at, n->name);
    free(at);
    A->blk[n->id] = rw->out_block;
    return id;
}

/* Ask n's op for a rewrite: the new node's id, REBUILD_COPY if the op
 * leaves n alone, or -1 with an error. */
static int ask_op(alter *A, const gnode *n) {
    if (!n->op->alter || n->nin > LAYOUT_MAX_IN)
        return REBUILD_COPY;
    layout_rewrite rw;
    memset(&rw, 0, sizeof rw);
    int r = n->op->alter(n, &A->q, &rw);
    if (r < 0) {
        for (int i = 0; i < LAYOUT_MAX_IN; i++)
            kiln_ndarray_free(rw.in[i].value);
        return -1;
    }
    if (r == 0) {
        for (int i = 0; i < LAYOUT_MAX_IN; i++)
            kiln_ndarray_free(rw.in[i].value);
        return REBUILD_COPY;
    }
    for (int i = n->nin; i < LAYOUT_MAX_IN; i++) { /* values past the inputs: none taken */
        kiln_ndarray_free(rw.in[i].value);
        rw.in[i].value = NULL;
    }
    return apply_rewrite(A, n, &rw);
}

/* ---- ops that follow the blocked layout ------------------------------------------------ */

/* A constant of logical shape d4 (right-aligned to [n, C or 1, h, w]) as a
 * blocked [n, C/b or 1, h, w, b or 1] constant. */
static int block_const(alter *A, const gnode *c, const int64_t *d4, int b) {
    int bb;
    kiln_ndarray *t = ops_block_array(c->value, d4, b, &bb);
    if (!t)
        return -1;
    char nm[600];
    snprintf(nm, sizeof nm, "%s.NCHW%dc", c->name, bb);
    return graph_const_take(A->r, nm, t);
}

/* Input `id` of an op whose output is blocked by b with logical channels
 * C, in a form that broadcasts against [N, C/b, H, W, b]. -2 if there is
 * none (the op then stays in NCHW). */
static int operand(alter *A, int id, int b, int64_t C) {
    const gnode *p = A->g->nodes[id];
    if (A->blk[id] == b)
        return A->map[id];
    const gtensor_type *t = ops_node_type(p);
    if (!t || t->ndim > 4 || !static_but_batch(t))
        return -2;
    int64_t d4[4] = {1, 1, 1, 1};
    for (int d = 0; d < t->ndim; d++)
        d4[4 - t->ndim + d] = t->dims[d].v;
    if (A->blk[id])
        return t->ndim == 4 && d4[1] == C ? as_blocked(A, id, b) : -2;
    if (d4[1] != C && d4[1] != 1)
        return -2;
    if (p->kind == GN_CONST)
        return block_const(A, p, d4, b);
    int src = A->map[id];
    char nm[600], attrs[160];
    if (d4[1] == 1) { /* [.., 1, h, w] -> [n, 1, h, w, 1] (a symbolic n copied: 0) */
        snprintf(attrs, sizeof attrs, "newshape=[%lld, 1, %lld, %lld, 1]",
                 t->ndim == 4 && t->dims[0].sym ? 0 : (long long)d4[0], (long long)d4[2],
                 (long long)d4[3]);
        snprintf(nm, sizeof nm, "%s.5d", p->name);
        return call(A, "reshape", 1, &src, attrs, nm);
    }
    if (t->ndim < 4) {
        snprintf(attrs, sizeof attrs, "newshape=[%lld, %lld, %lld, %lld]", (long long)d4[0],
                 (long long)d4[1], (long long)d4[2], (long long)d4[3]);
        snprintf(nm, sizeof nm, "%s.4d", p->name);
        int r4 = call(A, "reshape", 1, &src, attrs, nm);
        if (r4 < 0)
            return -1;
        char s2[32];
        snprintf(attrs, sizeof attrs, "src_layout=\"NCHW\", dst_layout=\"%s\"",
                 layout_name(s2, sizeof s2, b));
        snprintf(nm, sizeof nm, "%s.%s", p->name, s2);
        return call(A, "layout_transform", 1, &r4, attrs, nm);
    }
    return as_blocked(A, id, b);
}

/* An elementwise op (LAYOUT_FOLLOWS) with a 4-D input in a blocked layout:
 * it runs in that layout, its other inputs re-laid out to broadcast
 * against it. */
static int alter_elemwise(alter *A, const gnode *n) {
    const gtensor_type *ot = ops_node_type(n);
    if (!ot || ot->ndim != 4 || !static_but_batch(ot) || n->nin > LAYOUT_MAX_IN)
        return REBUILD_COPY;
    int b = 0;
    for (int i = 0; i < n->nin && !b; i++) {
        const gtensor_type *t = ops_node_type(A->g->nodes[n->in[i]]);
        if (A->blk[n->in[i]] && t && t->ndim == 4)
            b = A->blk[n->in[i]];
    }
    if (!b)
        return REBUILD_COPY;
    int in[LAYOUT_MAX_IN];
    for (int i = 0; i < n->nin; i++) {
        in[i] = operand(A, n->in[i], b, ot->dims[1].v);
        if (in[i] == -2)
            return REBUILD_COPY;
        if (in[i] < 0)
            return -1;
    }
    char *at = pass_attrs_text(n, NULL, NULL);
    if (!at)
        return -1;
    int id = call(A, n->op->name, n->nin, in, at, n->name);
    free(at);
    A->blk[n->id] = b;
    return id;
}

/* ---- the pass --------------------------------------------------------------------------- */

struct kiln_graph *pass_alter_op_layout(struct kiln_graph *g, const pass_env *env) {
    alter A = {.g = g, .r = graph_new(g->ops)};
    A.q.target = env->target;
    A.q.winograd = env->winograd;
    A.q.knobs = env->knobs;
    size_t n = (size_t)(g->n ? g->n : 1);
    A.map = malloc(sizeof(int) * n);
    A.blk = calloc(n, sizeof(int));
    A.plain = malloc(sizeof(int) * n);
    A.alt = malloc(sizeof(int) * n);
    A.alt_b = calloc(n, sizeof(int));
    A.q.block = A.blk;
    int *pin = malloc(sizeof(int) * n); /* old id -> plain new id, for copies */
    int ok = A.r && A.map && A.blk && A.plain && A.alt && A.alt_b && pin;
    for (int id = 0; ok && id < g->n; id++)
        A.map[id] = A.plain[id] = A.alt[id] = pin[id] = -1;
    for (int id = 0; ok && id < g->n; id++) {
        const gnode *node = g->nodes[id];
        int v = REBUILD_COPY;
        if (node->kind == GN_CALL) {
            v = ask_op(&A, node);
            if (v == REBUILD_COPY && node->op->layout == LAYOUT_FOLLOWS)
                v = alter_elemwise(&A, node);
        }
        if (v == REBUILD_COPY) { /* in NCHW */
            A.blk[id] = 0;
            for (int i = 0; i < node->nin && v != -1; i++)
                if ((pin[node->in[i]] = as_plain(&A, node->in[i])) < 0)
                    v = -1;
            if (v == REBUILD_COPY)
                v = graph_copy_node(A.r, node, pin);
        }
        if (v < 0)
            ok = 0;
        else
            A.map[id] = v;
    }
    for (int k = 0; ok && k < g->nout; k++)
        if ((pin[g->outs[k]] = as_plain(&A, g->outs[k])) < 0)
            ok = 0;
    if (ok && graph_copy_outputs(A.r, g, pin) != KILN_OK)
        ok = 0;
    free(A.map);
    free(A.blk);
    free(A.plain);
    free(A.alt);
    free(A.alt_b);
    free(pin);
    if (!ok) {
        kiln_graph_free(A.r);
        return NULL;
    }
    return A.r;
}
