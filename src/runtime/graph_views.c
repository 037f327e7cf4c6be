/* graph_views.c: the checks of a plan's storage: views (concatenation
 * without copies, src/driver/concat_views.c) and liveness.
 *
 * An entry may lie at a byte offset of its storage id ("storage_offset"
 * in attrs, ["list_int", [...]], one per entry; absent: all 0). A "__view"
 * node (a tvm_op whose func_name is "__view") runs nothing: its one output
 * is its inputs' bytes one after another, in input order, in one storage
 * id, so each input's producer has written its slice of the output
 * already. Loading checks, before anything runs:
 *   - only a static plan has views or offsets (a dynamic one sizes each
 *     storage id per run);
 *   - an offset is a multiple of its entry's element size, and a graph
 *     input's or a weight's is 0;
 *   - a storage id's size is its largest entry at offset 0, and every entry
 *     at an offset lies within it;
 *   - a view's inputs are kernels' outputs (no inputs or weights) of its
 *     storage id and dtype, at the offsets that lay them end to end from the
 *     view's own, and fill its bytes exactly;
 *   - entries sharing a storage id are never live at once, where a view and
 *     its inputs (and, through them, the views they are inputs of) count as
 *     one set, live from its first producer to its last reader, whose
 *     entries written by kernels do not overlap.
 * A forged package thus gets an error naming the entry or node, and a run
 * only touches bytes inside its arena. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "graph_plan.h"

#define WHAT "mod.json"

static kiln_status node_fail(const kiln_model *e, int nid) {
    kiln_error_prefix(WHAT ": node %d '%s'", nid, e->nodes[nid].name ? e->nodes[nid].name : "?");
    return KILN_ERR_INVALID;
}

/* Prefix the current error with "mod.json: entry 5 (output 0 of node 3 'y')". */
static kiln_status entry_fail(const kiln_model *e, int i) {
    const plan_entry *en = &e->entries[i];
    const plan_node *n = &e->nodes[en->node];
    kiln_error_prefix(WHAT ": entry %d (output %d of node %d '%s')", i, i - n->first, en->node,
                      n->name);
    return KILN_ERR_INVALID;
}

/* A view node's inputs against its output (see the top of the file). */
static kiln_status check_view(const kiln_model *e, int nid) {
    const plan_node *n = &e->nodes[nid];
    if (n->noutputs != 1 || n->ninputs < 1 || n->binds_json || n->cost_json[0] || n->cost_json[1]) {
        kiln_set_error(KILN_ERR_INVALID,
                       "a \"__view\" node has one output, one input or more, and no binds, "
                       "flops or bytes");
        return node_fail(e, nid);
    }
    const plan_entry *out = &e->entries[n->first];
    int64_t at = out->offset;
    for (int i = 0; i < n->ninputs; i++) {
        const plan_entry *in = &e->entries[n->inputs[i]];
        if (!e->nodes[in->node].is_op || in->storage != out->storage || in->dtype != out->dtype ||
            in->offset != at) {
            kiln_set_error(KILN_ERR_INVALID,
                           "input %d of the \"__view\" (entry %d: storage_id %d, offset %lld, "
                           "%s) must be a kernel's output in its output's storage_id %d, dtype "
                           "%s, at offset %lld",
                           i, n->inputs[i], in->storage, (long long)in->offset,
                           kiln_dtype_name(in->dtype), out->storage, kiln_dtype_name(out->dtype),
                           (long long)at);
            return node_fail(e, nid);
        }
        at += in->bytes; /* each <= 1 TiB, fewer than INT_MAX of them */
    }
    if (at != out->offset + out->bytes) {
        kiln_set_error(KILN_ERR_INVALID,
                       "the \"__view\"'s inputs hold %lld bytes, but its output %lld",
                       (long long)(at - out->offset), (long long)out->bytes);
        return node_fail(e, nid);
    }
    return KILN_OK;
}

kiln_status graph_check_views(kiln_model *e) {
    int any = 0;
    for (int nid = 0; nid < e->nnodes; nid++)
        any |= e->nodes[nid].is_view;
    for (int i = 0; i < e->nentries; i++) {
        const plan_entry *en = &e->entries[i];
        any |= en->offset != 0;
        if (en->offset % (int64_t)kiln_dtype_size(en->dtype) ||
            (en->offset && !e->nodes[en->node].is_op)) {
            kiln_set_error(KILN_ERR_INVALID,
                           "storage_offset %lld must be a multiple of the element size (%d), "
                           "and 0 for a graph input or a weight",
                           (long long)en->offset, (int)kiln_dtype_size(en->dtype));
            return entry_fail(e, i);
        }
    }
    if (!any)
        return KILN_OK;
    if (e->dynamic)
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: \"__view\" nodes and storage offsets need a static plan "
                              "(every dim an integer, no binder or control node)",
                              WHAT);
    int64_t *size = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int64_t));
    for (int i = 0; i < e->nentries; i++) {
        const plan_entry *en = &e->entries[i];
        if (!en->offset && size[en->storage] < en->bytes)
            size[en->storage] = en->bytes;
    }
    for (int i = 0; i < e->nentries; i++) {
        const plan_entry *en = &e->entries[i];
        if (en->offset && en->offset > size[en->storage] - en->bytes) {
            kiln_set_error(KILN_ERR_INVALID,
                           "storage_offset %lld + %lld bytes lies past the end of storage_id %d "
                           "(%lld bytes: its largest entry at offset 0)",
                           (long long)en->offset, (long long)en->bytes, en->storage,
                           (long long)size[en->storage]);
            return entry_fail(e, i);
        }
    }
    for (int nid = 0; nid < e->nnodes; nid++)
        if (e->nodes[nid].is_view && check_view(e, nid))
            return KILN_ERR_INVALID;
    return KILN_OK;
}

/* ---- liveness --------------------------------------------------------------------- */

static int find(int *up, int i) {
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

typedef struct {
    int set, entry;
    int64_t lo, hi;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->set != y->set)
        return x->set < y->set ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The entries a kernel writes in one set must not overlap: sorted by set
 * and offset, each must start at or after the end of those before it. */
static kiln_status check_disjoint(const kiln_model *e, int *up) {
    span *sp = arena_alloc(e->ar, (size_t)(e->nentries ? e->nentries : 1) * sizeof(span));
    int ns = 0;
    for (int i = 0; i < e->nentries; i++) {
        const plan_entry *en = &e->entries[i];
        if (en->bytes && !e->nodes[en->node].is_view)
            sp[ns++] = (span){find(up, i), i, en->offset, en->offset + en->bytes};
    }
    qsort(sp, (size_t)ns, sizeof(span), cmp_span);
    for (int k = 1, far = 0; k < ns; k++) {
        if (sp[k].set != sp[far].set) {
            far = k;
            continue;
        }
        if (sp[k].lo < sp[far].hi) {
            const plan_entry *a = &e->entries[sp[far].entry];
            kiln_set_error(KILN_ERR_INVALID,
                           "its output overlaps entry %d (output of node %d '%s') in storage_id "
                           "%d while both are live",
                           sp[far].entry, a->node, e->nodes[a->node].name, a->storage);
            return node_fail(e, e->entries[sp[k].entry].node);
        }
        if (sp[k].hi > sp[far].hi)
            far = k;
    }
    return KILN_OK;
}

/* Entries sharing a storage_id must never be live at once: an entry's
 * buffer is free after its last reader. Null nodes and heads stay live. A
 * view's set (see the top) holds its storage id as one entry would. */
kiln_status graph_check_storage(kiln_model *e) {
    for (int i = 0; i < e->nnodes; i++)
        for (int k = 0; k < e->nodes[i].ninputs; k++) {
            plan_entry *en = &e->entries[e->nodes[i].inputs[k]];
            if (en->last_use < i)
                en->last_use = i;
        }
    size_t ne = (size_t)(e->nentries ? e->nentries : 1);
    int *up = arena_alloc(e->ar, ne * sizeof(int)), *last = arena_alloc(e->ar, ne * sizeof(int));
    for (int i = 0; i < e->nentries; i++)
        up[i] = i;
    int views = 0;
    for (int nid = 0; nid < e->nnodes; nid++) {
        const plan_node *n = &e->nodes[nid];
        for (int k = 0; n->is_view && k < n->ninputs; k++) {
            int a = find(up, n->first), b = find(up, n->inputs[k]);
            up[a > b ? a : b] = a < b ? a : b; /* a set's id: its first entry */
            views = 1;
        }
    }
    for (int i = 0; i < e->nentries; i++)
        last[i] = -1;
    for (int i = 0; i < e->nentries; i++) {
        int s = find(up, i);
        if (last[s] < e->entries[i].last_use)
            last[s] = e->entries[i].last_use;
    }
    if (views && check_disjoint(e, up))
        return KILN_ERR_INVALID;
    int *busy = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int)); /* last_use + 2 */
    int *holder = arena_alloc(e->ar, (size_t)e->nstorage * sizeof(int));
    for (int i = 0; i < e->nentries; i++) { /* entry order is node order */
        plan_entry *en = &e->entries[i];
        int set = find(up, i);
        if (set != i) /* its set holds the storage since the set's first entry */
            continue;
        int s = en->storage, def = e->nodes[en->node].is_op ? en->node : -1;
        if (busy[s] && busy[s] - 2 >= def) {
            plan_entry *h = &e->entries[holder[s]];
            kiln_set_error(KILN_ERR_INVALID,
                           "its output shares storage_id %d with an output of node %d '%s' "
                           "that is still live%s",
                           s, h->node, e->nodes[h->node].name,
                           def < 0 || last[holder[s]] == INT_MAX
                               ? " (inputs, params and outputs need their own storage)"
                               : "");
            return node_fail(e, en->node);
        }
        busy[s] = last[set] == INT_MAX ? INT_MAX : last[set] + 2;
        holder[s] = i;
    }
    return KILN_OK;
}
