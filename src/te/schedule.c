/* schedule.c: schedule primitives. Each records a relation between axes or
 * an annotation on a stage; nothing is lowered here. Every primitive checks
 * its input and returns an error naming the stage and axis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te_internal.h"

/* ---- building the stage list --------------------------------------------- */

/* A growable list on the heap. The traversals below keep their stacks in
 * these, not on the C stack: a chain of tens of thousands of tensors, or an
 * expression as deep, must not overflow it. */
typedef struct {
    void **v;
    size_t n, cap;
} ptr_stack;

static int ps_push(ptr_stack *p, void *x) {
    if (p->n == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 64;
        void **nv = kiln_realloc(p->v, sizeof(void *) * ncap);
        if (!nv)
            return 0;
        p->v = nv;
        p->cap = ncap;
    }
    p->v[p->n++] = x;
    return 1;
}

/* Appends to out the tensors that e reads and out does not hold yet, in
 * first-read order (pre-order, sources left to right). 0 on out-of-memory. */
static int collect_reads(tir_node e, ptr_stack *out, size_t from) {
    ptr_stack work = {0};
    int ok = ps_push(&work, (void *)e);
    while (ok && work.n) {
        tir_node x = work.v[--work.n];
        if (x->op == TIR_TENSOR_READ) {
            kiln_tensor *t = x->ptr;
            int seen = 0;
            for (size_t i = from; i < out->n && !seen; i++)
                seen = out->v[i] == t;
            if (!seen)
                ok = ps_push(out, t);
        }
        for (uint32_t i = x->nsrc; i-- > 0 && ok;)
            ok = ps_push(&work, (void *)x->src[i]);
    }
    free(work.v);
    return ok;
}

int te_reads(tir_node body, const kiln_tensor *t) {
    ptr_stack work = {0};
    int found = 0;
    KILN_ASSERT(ps_push(&work, (void *)body));
    while (work.n && !found) {
        tir_node x = work.v[--work.n];
        found = x->op == TIR_TENSOR_READ && x->ptr == t;
        for (uint32_t i = 0; i < x->nsrc && !found; i++)
            KILN_ASSERT(ps_push(&work, (void *)x->src[i]));
    }
    free(work.v);
    return found;
}

static kiln_stage *stage_new(kiln_schedule *s, kiln_tensor *t, tir_node body) {
    kiln_stage *st = arena_alloc(tir_arena(s->ctx), sizeof *st);
    st->sch = s;
    st->tensor = t;
    st->body = body;
    st->scope = tir_intern(s->ctx, "global");
    for (int i = 0; i < t->ndim; i++)
        st->iters[st->niters++] = (te_iter){t->axis[i], 0, 0, 0};
    st->ndata = t->ndim;
    if (body->op == TIR_REDUCE)
        for (uint32_t i = 1; i < body->nsrc; i++)
            st->iters[st->niters++] = (te_iter){body->src[i], 1, 0, 0};
    st->nroot = st->niters;
    for (int i = 0; i < st->niters; i++)
        st->leaves[i] = i;
    st->nleaves = st->niters;
    return st;
}

static void stages_insert(kiln_schedule *s, int pos, kiln_stage *st) {
    if (s->nstages == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 16;
        kiln_stage **ns = arena_alloc(tir_arena(s->ctx), sizeof(kiln_stage *) * (size_t)ncap);
        if (s->nstages)
            memcpy(ns, s->stages, sizeof(kiln_stage *) * (size_t)s->nstages);
        s->stages = ns;
        s->cap = ncap;
    }
    memmove(s->stages + pos + 1, s->stages + pos,
            sizeof(kiln_stage *) * (size_t)(s->nstages - pos));
    s->stages[pos] = st;
    s->nstages++;
}

/* Post-order DFS from root: producers before consumers, each compute
 * tensor once. Iterative: each frame is a tensor and the segment of `reads`
 * holding the tensors its body reads. 0 with an error on a cycle or
 * out-of-memory. */
typedef struct {
    kiln_tensor *t;
    size_t start, next; /* its reads are reads.v[start..], next to visit */
} visit_frame;

static int needs_stage(kiln_schedule *s, const kiln_tensor *t) {
    return t->kind != TE_PLACEHOLDER && !te_stage_of(s, t);
}

static int visit(kiln_schedule *s, kiln_tensor *root) {
    if (!needs_stage(s, root))
        return 1;
    visit_frame *fr = NULL;
    size_t nfr = 0, capfr = 0;
    ptr_stack reads = {0};
    int ok = 1;
    kiln_tensor *t = root; /* the tensor to push next, or NULL */
    while (ok && (t || nfr)) {
        if (t) {
            if (nfr == capfr) {
                size_t ncap = capfr ? capfr * 2 : 64;
                visit_frame *nf = kiln_realloc(fr, sizeof *fr * ncap);
                if (!nf) {
                    ok = 0;
                    break;
                }
                fr = nf;
                capfr = ncap;
            }
            t->visiting = s;
            fr[nfr] = (visit_frame){t, reads.n, reads.n};
            nfr++;
            if (!collect_reads(t->body, &reads, reads.n)) {
                ok = 0;
                break;
            }
            t = NULL;
        }
        visit_frame *f = &fr[nfr - 1];
        if (f->next < reads.n) {
            kiln_tensor *r = reads.v[f->next++];
            if (r == f->t && te_is_scan(r))
                continue; /* a scan reads its own earlier elements */
            if (!r->body && r->kind == TE_COMPUTE) {
                kiln_set_error(KILN_ERR_INVALID, "scan '%s' is declared but not defined", r->name);
                ok = -1;
                break;
            }
            if (r->visiting == s) {
                kiln_set_error(KILN_ERR_INVALID, "tensor graph has a cycle through '%s'", r->name);
                ok = -1;
                break;
            }
            if (needs_stage(s, r))
                t = r;
            continue;
        }
        /* every producer has its stage: this tensor's stage follows them */
        f->t->visiting = NULL;
        stages_insert(s, s->nstages, stage_new(s, f->t, f->t->body));
        reads.n = f->start;
        nfr--;
    }
    for (size_t i = 0; i < nfr; i++)
        fr[i].t->visiting = NULL;
    free(fr);
    free(reads.v);
    if (!ok)
        kiln_set_error(KILN_ERR_NOMEM, "create_schedule: out of memory");
    return ok > 0;
}

kiln_schedule *kiln_schedule_create(kiln_ctx *ctx, int n, kiln_tensor *const *outputs) {
    if (!ctx)
        return NULL;
    if (n < 1 || !outputs) {
        kiln_set_error(KILN_ERR_INVALID, "create_schedule: needs at least one output tensor");
        return NULL;
    }
    kiln_schedule *s = arena_alloc(tir_arena(ctx), sizeof *s);
    s->ctx = ctx;
    s->noutputs = n;
    s->knobs = NULL;
    s->outputs = arena_alloc(tir_arena(ctx), sizeof(kiln_tensor *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (!outputs[i] || outputs[i]->ctx != ctx) {
            kiln_set_error(KILN_ERR_INVALID, "create_schedule: output %d is %s", i,
                           outputs[i] ? "from another context" : "NULL");
            return NULL;
        }
        if (outputs[i]->kind != TE_COMPUTE) {
            kiln_set_error(KILN_ERR_INVALID,
                           "create_schedule: output '%s' is a placeholder, not a compute",
                           outputs[i]->name);
            return NULL;
        }
        if (!outputs[i]->body) {
            kiln_set_error(KILN_ERR_INVALID,
                           "create_schedule: scan '%s' is declared but not defined",
                           outputs[i]->name);
            return NULL;
        }
        s->outputs[i] = outputs[i];
        if (!visit(s, outputs[i]))
            return NULL;
    }
    for (int i = 0; i < n; i++)
        te_stage_of(s, outputs[i])->is_output = 1;
    return s;
}

kiln_stage *te_stage_of(kiln_schedule *s, const kiln_tensor *t) {
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i]->tensor == t)
            return s->stages[i];
    return NULL;
}

kiln_stage *kiln_schedule_stage(kiln_schedule *s, const kiln_tensor *t) {
    if (!s || !t)
        return NULL;
    kiln_stage *st = te_stage_of(s, t);
    if (!st)
        kiln_set_error(KILN_ERR_INVALID, "tensor '%s' %s", t->name,
                       t->kind == TE_PLACEHOLDER ? "is a placeholder and has no stage"
                                                 : "is not part of this schedule");
    return st;
}

int te_iter_index(const kiln_stage *st, tir_node v) {
    for (int i = 0; i < st->niters; i++)
        if (st->iters[i].var == v)
            return i;
    return -1;
}

int kiln_stage_leaf_axes(const kiln_stage *st, kiln_expr *out, int cap) {
    if (!st)
        return 0;
    for (int i = 0; i < st->nleaves && i < cap; i++)
        out[i] = st->iters[st->leaves[i]].var;
    return st->nleaves;
}

/* ---- helpers for the primitives ---------------------------------------- */

static const char *axis_name(tir_node v) {
    return v && v->op == TIR_VAR ? v->name : "?";
}

/* Position of `axis` among st's leaves, or -1 with an error. */
static int leaf_pos(kiln_stage *st, const char *prim, tir_node axis) {
    if (!axis) {
        kiln_set_error(KILN_ERR_INVALID, "%s on stage '%s': axis is NULL", prim, st->tensor->name);
        return -1;
    }
    int it = te_iter_index(st, axis);
    if (it < 0) {
        kiln_set_error(KILN_ERR_INVALID, "%s: axis '%s' does not belong to stage '%s'", prim,
                       axis_name(axis), st->tensor->name);
        return -1;
    }
    for (int i = 0; i < st->nleaves; i++)
        if (st->leaves[i] == it)
            return i;
    kiln_set_error(KILN_ERR_INVALID,
                   "%s: axis '%s' of stage '%s' is no longer a leaf (it was already split or "
                   "fused)",
                   prim, axis_name(axis), st->tensor->name);
    return -1;
}

static int stage_ok(kiln_stage *st, const char *prim) {
    if (!st) {
        kiln_set_error(KILN_ERR_INVALID, "%s: stage is NULL", prim);
        return 0;
    }
    return 1;
}

/* 1 if iter it of st is the scan axis of a scan (the axis it computes in
 * order); then an error naming prim. */
static int is_scan_iter(kiln_stage *st, const char *prim, int it) {
    if (!te_is_scan(st->tensor) || it != st->tensor->scan_axis)
        return 0;
    kiln_set_error(KILN_ERR_INVALID,
                   "%s: axis '%s' is the scan axis of stage '%s', which reads its own earlier "
                   "elements along it: it stays one serial loop",
                   prim, axis_name(st->iters[it].var), st->tensor->name);
    return 1;
}

/* 1 (with an error naming prim) if st is a scan: it is always computed
 * into its own buffer at the top level. */
static int is_scan_stage(kiln_stage *st, const char *prim) {
    if (!te_is_scan(st->tensor))
        return 0;
    kiln_set_error(KILN_ERR_INVALID,
                   "%s: stage '%s' is a scan (it reads its own earlier elements); it is always "
                   "computed whole, into its own buffer",
                   prim, st->tensor->name);
    return 1;
}

static int new_iter(kiln_stage *st, const char *name, int is_reduce) {
    if (st->niters >= TE_MAX_ITERS || st->nrels >= TE_MAX_RELS) {
        kiln_set_error(KILN_ERR_INVALID, "stage '%s' has too many axes", st->tensor->name);
        return -1;
    }
    kiln_ctx *ctx = st->sch->ctx;
    tir_node v =
        tir_make(ctx, TIR_VAR, KILN_INT64, 1, TE_AXIS_LOOP, ++ctx->next_id, 0, name, NULL, 0, NULL);
    st->iters[st->niters] = (te_iter){v, is_reduce, TIR_FOR_SERIAL, NULL};
    return st->niters++;
}

static kiln_status do_split(kiln_stage *st, kiln_expr axis, int64_t f, int nparts, kiln_expr *outer,
                            kiln_expr *inner) {
    const char *prim = nparts ? "split(nparts)" : "split";
    if (!stage_ok(st, prim))
        return KILN_ERR_INVALID;
    int pos = leaf_pos(st, prim, axis);
    if (pos < 0)
        return KILN_ERR_INVALID;
    if (f < 1)
        return kiln_set_error(KILN_ERR_INVALID, "%s: %s %lld of axis '%s' must be >= 1", prim,
                              nparts ? "nparts" : "factor", (long long)f, axis_name(axis));
    int p = st->leaves[pos];
    if (is_scan_iter(st, prim, p))
        return KILN_ERR_INVALID;
    char no[256], ni[256];
    snprintf(no, sizeof no, "%s.outer", axis_name(axis));
    snprintf(ni, sizeof ni, "%s.inner", axis_name(axis));
    int o = new_iter(st, no, st->iters[p].is_reduce);
    int in = o < 0 ? -1 : new_iter(st, ni, st->iters[p].is_reduce);
    if (in < 0)
        return KILN_ERR_INVALID;
    st->rels[st->nrels++] = (te_rel){TE_REL_SPLIT, p, o, in, -1, f, nparts};
    memmove(st->leaves + pos + 2, st->leaves + pos + 1,
            sizeof(int) * (size_t)(st->nleaves - pos - 1));
    st->leaves[pos] = o;
    st->leaves[pos + 1] = in;
    st->nleaves++;
    st->touched = 1;
    if (outer)
        *outer = st->iters[o].var;
    if (inner)
        *inner = st->iters[in].var;
    return KILN_OK;
}

kiln_status kiln_split(kiln_stage *st, kiln_expr axis, int64_t factor, kiln_expr *outer,
                       kiln_expr *inner) {
    return do_split(st, axis, factor, 0, outer, inner);
}

kiln_status kiln_split_nparts(kiln_stage *st, kiln_expr axis, int64_t nparts, kiln_expr *outer,
                              kiln_expr *inner) {
    return do_split(st, axis, nparts, 1, outer, inner);
}

kiln_status kiln_tile(kiln_stage *st, kiln_expr x, kiln_expr y, int64_t fx, int64_t fy,
                      kiln_expr *xo, kiln_expr *yo, kiln_expr *xi, kiln_expr *yi) {
    kiln_expr a, b, c, d;
    kiln_status r;
    if (!stage_ok(st, "tile"))
        return KILN_ERR_INVALID;
    if (x == y)
        return kiln_set_error(KILN_ERR_INVALID, "tile: the two axes are the same");
    if ((r = kiln_split(st, x, fx, &a, &b)) != KILN_OK)
        return r;
    if ((r = kiln_split(st, y, fy, &c, &d)) != KILN_OK)
        return r;
    kiln_expr order[4] = {a, c, b, d};
    if ((r = kiln_reorder(st, 4, order)) != KILN_OK)
        return r;
    if (xo)
        *xo = a;
    if (yo)
        *yo = c;
    if (xi)
        *xi = b;
    if (yi)
        *yi = d;
    return KILN_OK;
}

kiln_status kiln_fuse(kiln_stage *st, kiln_expr outer, kiln_expr inner, kiln_expr *fused) {
    if (!stage_ok(st, "fuse"))
        return KILN_ERR_INVALID;
    int po = leaf_pos(st, "fuse", outer);
    if (po < 0)
        return KILN_ERR_INVALID;
    int pi = leaf_pos(st, "fuse", inner);
    if (pi < 0)
        return KILN_ERR_INVALID;
    if (pi != po + 1)
        return kiln_set_error(KILN_ERR_INVALID,
                              "fuse: axes '%s' and '%s' of stage '%s' are not adjacent in loop "
                              "order (outer first)",
                              axis_name(outer), axis_name(inner), st->tensor->name);
    int o = st->leaves[po], in = st->leaves[pi];
    if (is_scan_iter(st, "fuse", o) || is_scan_iter(st, "fuse", in))
        return KILN_ERR_INVALID;
    if (st->iters[o].is_reduce != st->iters[in].is_reduce)
        return kiln_set_error(KILN_ERR_INVALID,
                              "fuse: cannot fuse reduce axis and data axis ('%s', '%s') of stage "
                              "'%s'",
                              axis_name(outer), axis_name(inner), st->tensor->name);
    char nm[256];
    snprintf(nm, sizeof nm, "%s.%s.fused", axis_name(outer), axis_name(inner));
    int f = new_iter(st, nm, st->iters[o].is_reduce);
    if (f < 0)
        return KILN_ERR_INVALID;
    st->rels[st->nrels++] = (te_rel){TE_REL_FUSE, -1, o, in, f, 0, 0};
    st->leaves[po] = f;
    memmove(st->leaves + pi, st->leaves + pi + 1, sizeof(int) * (size_t)(st->nleaves - pi - 1));
    st->nleaves--;
    st->touched = 1;
    if (fused)
        *fused = st->iters[f].var;
    return KILN_OK;
}

kiln_status kiln_reorder(kiln_stage *st, int n, const kiln_expr *axes) {
    if (!stage_ok(st, "reorder"))
        return KILN_ERR_INVALID;
    if (n < 1 || n > st->nleaves || !axes)
        return kiln_set_error(KILN_ERR_INVALID, "reorder: stage '%s' has %d leaf axes, got %d",
                              st->tensor->name, st->nleaves, n);
    int pos[TE_MAX_ITERS], its[TE_MAX_ITERS];
    for (int i = 0; i < n; i++) {
        pos[i] = leaf_pos(st, "reorder", axes[i]);
        if (pos[i] < 0)
            return KILN_ERR_INVALID;
        its[i] = st->leaves[pos[i]];
        if (is_scan_iter(st, "reorder", its[i]))
            return KILN_ERR_INVALID;
        for (int j = 0; j < i; j++)
            if (pos[j] == pos[i])
                return kiln_set_error(KILN_ERR_INVALID, "reorder: axis '%s' is given twice",
                                      axis_name(axes[i]));
    }
    /* sort the slots, then fill them in the requested order */
    int slots[TE_MAX_ITERS];
    memcpy(slots, pos, sizeof(int) * (size_t)n);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && slots[j - 1] > slots[j]; j--) {
            int t = slots[j];
            slots[j] = slots[j - 1];
            slots[j - 1] = t;
        }
    int leaves[TE_MAX_ITERS];
    memcpy(leaves, st->leaves, sizeof(int) * (size_t)st->nleaves);
    for (int i = 0; i < n; i++)
        leaves[slots[i]] = its[i];
    if (te_is_scan(st->tensor)) /* the reduce loops stay inside the scan axis */
        for (int i = 0; i < st->nleaves && leaves[i] != st->tensor->scan_axis; i++)
            if (st->iters[leaves[i]].is_reduce)
                return kiln_set_error(KILN_ERR_INVALID,
                                      "reorder: reduce axis '%s' would run outside the scan axis "
                                      "'%s' of stage '%s', whose elements read earlier ones "
                                      "once they are complete",
                                      axis_name(st->iters[leaves[i]].var),
                                      axis_name(st->iters[st->tensor->scan_axis].var),
                                      st->tensor->name);
    memcpy(st->leaves, leaves, sizeof(int) * (size_t)st->nleaves);
    st->touched = 1;
    return KILN_OK;
}

static kiln_status annotate(kiln_stage *st, const char *prim, kiln_expr axis, tir_for_kind kind,
                            const char *tag) {
    if (!stage_ok(st, prim))
        return KILN_ERR_INVALID;
    int pos = leaf_pos(st, prim, axis);
    if (pos < 0)
        return KILN_ERR_INVALID;
    te_iter *it = &st->iters[st->leaves[pos]];
    if (kind != TIR_FOR_UNROLLED && is_scan_iter(st, prim, st->leaves[pos]))
        return KILN_ERR_INVALID;
    if (it->is_reduce &&
        (kind == TIR_FOR_PARALLEL || kind == TIR_FOR_VECTORIZED || kind == TIR_FOR_THREAD))
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: axis '%s' of stage '%s' is a reduce axis; its iterations "
                              "update one element and cannot run in parallel",
                              prim, axis_name(axis), st->tensor->name);
    if (it->kind != TIR_FOR_SERIAL && it->kind != kind)
        return kiln_set_error(KILN_ERR_INVALID, "%s: axis '%s' of stage '%s' is already %s", prim,
                              axis_name(axis), st->tensor->name,
                              it->kind == TIR_FOR_PARALLEL     ? "parallel"
                              : it->kind == TIR_FOR_VECTORIZED ? "vectorized"
                              : it->kind == TIR_FOR_UNROLLED   ? "unrolled"
                                                               : "bound to a thread axis");
    it->kind = kind;
    it->tag = tag ? tir_intern(st->sch->ctx, tag) : NULL;
    st->touched = 1;
    return KILN_OK;
}

kiln_status kiln_vectorize(kiln_stage *st, kiln_expr axis) {
    return annotate(st, "vectorize", axis, TIR_FOR_VECTORIZED, NULL);
}
kiln_status kiln_unroll(kiln_stage *st, kiln_expr axis) {
    return annotate(st, "unroll", axis, TIR_FOR_UNROLLED, NULL);
}
kiln_status kiln_parallel(kiln_stage *st, kiln_expr axis) {
    return annotate(st, "parallel", axis, TIR_FOR_PARALLEL, NULL);
}

kiln_status kiln_bind(kiln_stage *st, kiln_expr axis, const char *tag) {
    static const char *tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                 "threadIdx.y", "threadIdx.z", "vthread"};
    int ok = 0;
    for (size_t i = 0; tag && i < sizeof tags / sizeof *tags; i++)
        ok |= strcmp(tag, tags[i]) == 0;
    if (!ok)
        return kiln_set_error(KILN_ERR_INVALID,
                              "bind: '%s' is not a thread axis (blockIdx.x/y/z, threadIdx.x/y/z, "
                              "vthread)",
                              tag ? tag : "(null)");
    return annotate(st, "bind", axis, TIR_FOR_THREAD, tag);
}

/* ---- placement ------------------------------------------------------------------ */

/* 1 if body reads t, directly or through stages that are inlined. */
static int reads_through_inline(const kiln_schedule *s, tir_node body, const kiln_tensor *t,
                                int depth) {
    if (te_reads(body, t))
        return 1;
    if (depth > s->nstages)
        return 0;
    for (int i = 0; i < s->nstages; i++) {
        const kiln_stage *x = s->stages[i];
        if (x->attach == TE_ATTACH_INLINE && te_reads(body, x->tensor) &&
            reads_through_inline(s, x->body, t, depth + 1))
            return 1;
    }
    return 0;
}

/* The first stage, other than its target, that reads attached stage p
 * (directly or through inlined stages) without being computed inside p's
 * target at p's spot or deeper, with p placed at leaf `pos` of `parent`;
 * NULL if none. Lowering refuses such a schedule, so compute_at and
 * compute_inline refuse to make one. */
static kiln_stage *outside_reader(kiln_schedule *s, kiln_stage *p, kiln_stage *parent, int pos) {
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *c = s->stages[i];
        if (c == parent || c == p || c->attach == TE_ATTACH_INLINE ||
            !reads_through_inline(s, c->body, p->tensor, 0))
            continue;
        int inside = c->attach == TE_ATTACH_AT && c->attach_stage == parent;
        for (int k = 0; inside && k < parent->nleaves; k++)
            if (parent->leaves[k] == c->attach_iter)
                inside = k >= pos;
        if (!inside)
            return c;
    }
    return NULL;
}

kiln_status kiln_compute_at(kiln_stage *st, kiln_stage *parent, kiln_expr axis) {
    if (!stage_ok(st, "compute_at") || !stage_ok(parent, "compute_at"))
        return KILN_ERR_INVALID;
    const char *name = st->tensor->name;
    if (st == parent)
        return kiln_set_error(KILN_ERR_INVALID,
                              "compute_at: stage '%s' cannot be computed at "
                              "itself",
                              name);
    if (st->sch != parent->sch)
        return kiln_set_error(KILN_ERR_INVALID, "compute_at: stages from different schedules");
    if (is_scan_stage(st, "compute_at"))
        return KILN_ERR_INVALID;
    int pos = leaf_pos(parent, "compute_at", axis);
    if (pos < 0)
        return KILN_ERR_INVALID;
    if (parent->attach == TE_ATTACH_INLINE)
        return kiln_set_error(KILN_ERR_INVALID, "compute_at: target stage '%s' is inlined",
                              parent->tensor->name);
    int read_inside = 0; /* by a stage already computed inside parent (through
                            inlined stages too: softmax's stages read the
                            matmul they are fused with through its epilogue) */
    for (int i = 0; i < st->sch->nstages && !read_inside; i++) {
        kiln_stage *c = st->sch->stages[i];
        read_inside = c != st && c->attach == TE_ATTACH_AT && c->attach_stage == parent &&
                      reads_through_inline(st->sch, c->body, st->tensor, 0);
    }
    if (!read_inside && !reads_through_inline(st->sch, parent->body, st->tensor, 0))
        return kiln_set_error(KILN_ERR_INVALID,
                              "compute_at: stage '%s' does not read '%s', so '%s' cannot be "
                              "computed inside it (not a consumer)",
                              parent->tensor->name, name, name);
    kiln_schedule *s = st->sch;
    /* other consumers must sit inside the same parent (computed at it
       already, at this axis or deeper): bound inference unions their reads;
       a consumer that reads st through an inlined stage counts too */
    kiln_stage *c = outside_reader(s, st, parent, pos);
    if (c)
        return kiln_set_error(KILN_ERR_INVALID,
                              "compute_at: '%s' is also read by '%s', which is not computed "
                              "inside '%s' at this axis or deeper",
                              name, c->tensor->name, parent->tensor->name);
    for (kiln_stage *p = parent; p; p = p->attach == TE_ATTACH_AT ? p->attach_stage : NULL)
        if (p == st)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "compute_at: '%s' is already computed inside '%s' (a cycle)",
                                  parent->tensor->name, name);
    st->attach = TE_ATTACH_AT;
    st->attach_stage = parent;
    st->attach_iter = parent->leaves[pos];
    return KILN_OK;
}

kiln_status kiln_compute_inline(kiln_stage *st) {
    if (!stage_ok(st, "compute_inline") || is_scan_stage(st, "compute_inline"))
        return KILN_ERR_INVALID;
    if (st->body->op == TIR_REDUCE)
        return kiln_set_error(KILN_ERR_INVALID,
                              "compute_inline: stage '%s' is a reduction and cannot be inlined",
                              st->tensor->name);
    if (st->is_output)
        return kiln_set_error(KILN_ERR_INVALID,
                              "compute_inline: stage '%s' is an output of the schedule",
                              st->tensor->name);
    kiln_schedule *s = st->sch;
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i]->attach == TE_ATTACH_AT && s->stages[i]->attach_stage == st)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "compute_inline: stage '%s' has '%s' computed at it",
                                  st->tensor->name, s->stages[i]->tensor->name);
    int old_attach = st->attach;
    kiln_stage *old_stage = st->attach_stage;
    int old_iter = st->attach_iter;
    st->attach = TE_ATTACH_INLINE;
    st->attach_stage = NULL;
    /* inlined, st's consumers read what st reads: a stage st reads that is
       computed at some loop must still have all its readers inside it */
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *p = s->stages[i], *c = NULL;
        if (p->attach != TE_ATTACH_AT || !te_reads(st->body, p->tensor))
            continue;
        int pos = -1;
        for (int k = 0; k < p->attach_stage->nleaves; k++)
            if (p->attach_stage->leaves[k] == p->attach_iter)
                pos = k;
        if (pos >= 0 && (c = outside_reader(s, p, p->attach_stage, pos)) != NULL) {
            st->attach = old_attach;
            st->attach_stage = old_stage;
            st->attach_iter = old_iter;
            return kiln_set_error(KILN_ERR_INVALID,
                                  "compute_inline: '%s' is computed at '%s', and with '%s' "
                                  "inlined '%s' would read it outside that loop",
                                  p->tensor->name, p->attach_stage->tensor->name, st->tensor->name,
                                  c->tensor->name);
        }
    }
    return KILN_OK;
}

kiln_status kiln_compute_root(kiln_stage *st) {
    if (!stage_ok(st, "compute_root"))
        return KILN_ERR_INVALID;
    st->attach = TE_ATTACH_ROOT;
    st->attach_stage = NULL;
    return KILN_OK;
}

/* ---- caches ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *from, *to;
} retarget;

static tir_node retarget_fn(tir_node n, void *user) {
    retarget *r = user;
    if (n->op == TIR_TENSOR_READ && n->ptr == r->from)
        return te_read(r->to, (int)n->nsrc, n->src);
    return n;
}

static int scope_ok(const char *prim, const char *scope) {
    if (scope && (strcmp(scope, "global") == 0 || strcmp(scope, "local") == 0))
        return 1;
    kiln_set_error(KILN_ERR_INVALID, "%s: scope '%s' is not \"global\" or \"local\"", prim,
                   scope ? scope : "(null)");
    return 0;
}

kiln_status kiln_set_scope(kiln_stage *st, const char *scope) {
    if (!stage_ok(st, "set_scope"))
        return KILN_ERR_INVALID;
    if (!scope_ok("set_scope", scope))
        return KILN_ERR_INVALID;
    if (st->is_output && strcmp(scope, "global"))
        return kiln_set_error(KILN_ERR_INVALID, "set_scope: '%s' is an output; it stays global",
                              st->tensor->name);
    st->scope = tir_intern(st->sch->ctx, scope);
    return KILN_OK;
}

/* A compute copying `src` elementwise, named NAME.scope. */
static kiln_tensor *copy_tensor(kiln_ctx *ctx, kiln_tensor *src, const char *suffix) {
    char nm[512];
    snprintf(nm, sizeof nm, "%s.%s", src->name, suffix);
    kiln_tensor *t = te_tensor_new(ctx, TE_COMPUTE, nm, src->dtype, src->ndim, src->shape);
    static const char *an[] = {"i", "j", "k", "l"};
    for (int i = 0; i < src->ndim; i++) {
        char a[16];
        if (src->ndim <= 4)
            snprintf(a, sizeof a, "%s", an[i]);
        else
            snprintf(a, sizeof a, "ax%d", i);
        t->axis[i] = te_make_axis(ctx, a, TE_AXIS_DATA, tir_i64(ctx, 0), src->shape[i]);
    }
    t->body = te_read(src, src->ndim, t->axis);
    return t;
}

kiln_tensor *kiln_cache_read(kiln_schedule *s, kiln_tensor *t, const char *scope, int nreaders,
                             kiln_tensor *const *readers) {
    if (!s || !t)
        return NULL;
    if (!scope_ok("cache_read", scope))
        return NULL;
    if (nreaders < 1 || !readers) {
        kiln_set_error(KILN_ERR_INVALID, "cache_read of '%s': needs at least one reader", t->name);
        return NULL;
    }
    kiln_stage *rs[64];
    if (nreaders > 64)
        nreaders = 64;
    for (int i = 0; i < nreaders; i++) {
        rs[i] = readers[i] ? te_stage_of(s, readers[i]) : NULL;
        if (!rs[i]) {
            kiln_set_error(KILN_ERR_INVALID,
                           "cache_read of '%s': reader %d is not a stage of "
                           "this schedule",
                           t->name, i);
            return NULL;
        }
        if (rs[i]->tensor == t) {
            kiln_set_error(KILN_ERR_INVALID,
                           "cache_read of scan '%s' for itself: it reads its own elements as "
                           "it writes them",
                           t->name);
            return NULL;
        }
        if (!te_reads(rs[i]->body, t)) {
            kiln_set_error(KILN_ERR_INVALID, "cache_read: '%s' does not read '%s'",
                           readers[i]->name, t->name);
            return NULL;
        }
    }
    kiln_tensor *c = copy_tensor(s->ctx, t, scope);
    retarget r = {t, c};
    for (int i = 0; i < nreaders; i++)
        rs[i]->body = tir_rewrite(rs[i]->body, retarget_fn, &r);
    /* insert the cache right after t's stage (or first for a placeholder),
       which keeps producers before consumers */
    int pos = 0;
    kiln_stage *ts = te_stage_of(s, t);
    for (int i = 0; ts && i < s->nstages; i++)
        if (s->stages[i] == ts)
            pos = i + 1;
    kiln_stage *cs = stage_new(s, c, c->body);
    cs->scope = tir_intern(s->ctx, scope);
    stages_insert(s, pos, cs);
    return c;
}

kiln_tensor *kiln_cache_write(kiln_schedule *s, kiln_tensor *t, const char *scope) {
    if (!s || !t)
        return NULL;
    if (!scope_ok("cache_write", scope))
        return NULL;
    kiln_stage *st = kiln_schedule_stage(s, t);
    if (!st || is_scan_stage(st, "cache_write"))
        return NULL;
    if (st->touched || st->nleaves != st->nroot || st->attach != TE_ATTACH_ROOT) {
        kiln_set_error(KILN_ERR_INVALID,
                       "cache_write: stage '%s' was already scheduled; apply cache_write "
                       "before other primitives on it",
                       t->name);
        return NULL;
    }
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i]->attach == TE_ATTACH_AT && s->stages[i]->attach_stage == st) {
            kiln_set_error(KILN_ERR_INVALID, "cache_write: stage '%s' has '%s' computed at it",
                           t->name, s->stages[i]->tensor->name);
            return NULL;
        }
    /* The cache computes st's body over fresh axes; st becomes a copy. */
    char nm[512];
    snprintf(nm, sizeof nm, "%s.%s", t->name, scope);
    kiln_tensor *c = te_tensor_new(s->ctx, TE_COMPUTE, nm, t->dtype, t->ndim, t->shape);
    for (int i = 0; i < t->ndim; i++)
        c->axis[i] =
            te_make_axis(s->ctx, t->axis[i]->name, TE_AXIS_DATA, tir_i64(s->ctx, 0), t->shape[i]);
    c->body = tir_substitute(st->body, t->ndim, st->tensor->axis, c->axis);
    kiln_stage *cs = stage_new(s, c, c->body);
    cs->scope = tir_intern(s->ctx, scope);
    /* st now copies from the cache over its own data axes */
    st->body = te_read(c, t->ndim, t->axis);
    st->niters = st->nroot = st->nleaves = st->ndata;
    int pos = 0;
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i] == st)
            pos = i;
    stages_insert(s, pos, cs);
    return c;
}

/* ---- tuning knobs ------------------------------------------------------------ */

int64_t te_config_get(const te_config *c, const char *name, int64_t def) {
    for (int i = 0; c && i < c->n; i++)
        if (!strcmp(c->name[i], name))
            return c->v[i];
    return def;
}

int64_t te_knob_value(te_knobs *k, const char *name, int64_t def, int n, const int64_t *cands) {
    if (!k)
        return def;
    if (k->space) {
        te_space *sp = k->space;
        int have = 0;
        for (int i = 0; i < sp->n && !have; i++)
            have = !strcmp(sp->k[i].name, name);
        if (!have && sp->n < TE_KNOB_MAX && strlen(name) < TE_KNOB_NAME) {
            te_knob *kn = &sp->k[sp->n++];
            memset(kn, 0, sizeof *kn);
            snprintf(kn->name, sizeof kn->name, "%s", name);
            kn->def = def;
            /* the default first, then the others in order, at most TE_KNOB_CANDS */
            kn->cand[kn->n++] = def;
            for (int i = 0; i < n && kn->n < TE_KNOB_CANDS; i++)
                if (cands[i] != def)
                    kn->cand[kn->n++] = cands[i];
        }
    }
    int64_t v = te_config_get(k->cfg, name, def);
    if (v == def)
        return def;
    for (int i = 0; i < n; i++)
        if (cands[i] == v)
            return v;
    k->invalid = 1; /* a value the schedule does not allow here: the default */
    return def;
}
