/* default_schedule.c: the default CPU schedule of a fused group's kernel
 * (driver_default_schedule): what stays inlined, what is materialized, the
 * parallel loops, and the vectorized axes of reductions and of elementwise
 * and injective outputs; the group's anchor op (a conv, a dense) may place
 * its own stages first through its row's schedule. compile.c calls it for
 * every group it lowers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../ops/ops.h"
#include "../te/te_internal.h"
#include "driver_internal.h"

/* 1 if e contains a select (a padding or clamping stage). */
static int has_select_rec(tir_set *seen, tir_node e) {
    if (tir_set_add(seen, e))
        return 0;
    if (e->op == TIR_SELECT)
        return 1;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (has_select_rec(seen, e->src[i]))
            return 1;
    return 0;
}

static int has_select(tir_node e) {
    tir_set seen = {0};
    int r = has_select_rec(&seen, e);
    tir_set_free(&seen);
    return r;
}

/* 1 if e calls a transcendental function (exp, log, tanh, erf, ...): an
 * elementwise stage worth computing once rather than in each reader. */
static int calls_transcendental_rec(tir_set *seen, tir_node e) {
    if (tir_set_add(seen, e))
        return 0;
    if (e->op == TIR_CALL && e->aux != TIR_SQRT && e->aux != TIR_RSQRT && e->aux != TIR_FLOOR &&
        e->aux != TIR_CEIL && e->aux != TIR_ABS && e->aux != TIR_ROUND && e->aux < TIR_SHL)
        return 1;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (calls_transcendental_rec(seen, e->src[i]))
            return 1;
    return 0;
}

static int calls_transcendental(tir_node e) {
    tir_set seen = {0};
    int r = calls_transcendental_rec(&seen, e);
    tir_set_free(&seen);
    return r;
}

/* How many stages of s other than t's own read t. */
static int readers(kiln_schedule *s, const kiln_tensor *t) {
    int n = 0;
    for (int i = 0; i < s->nstages; i++)
        n += s->stages[i]->tensor != t && te_reads(s->stages[i]->body, t);
    return n;
}

/* 1 if some reduction stage of s reads t. */
static int read_by_reduction(kiln_schedule *s, const kiln_tensor *t) {
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i]->body->op == TIR_REDUCE && te_reads(s->stages[i]->body, t))
            return 1;
    return 0;
}

/* 1 if every tensor read in e moves by 0 or 1 element in its last index
 * when v grows by one, and not at all in the others: vectorizing v then
 * loads contiguous or broadcast vectors. */
/* 1 if the tensor read e moves by 0 or 1 element in its last index when v
 * grows by one, and not at all in the others. */
static int read_moves_contiguously(tir_node e, tir_node v) {
    tir_node v1 = tir_add(v, tir_i64(v->ctx, 1));
    for (uint32_t d = 0; d < e->nsrc; d++) {
        tir_node idx = e->src[d];
        tir_node diff = tir_simplify(NULL, tir_sub(tir_substitute(idx, 1, &v, &v1), idx));
        int64_t c;
        if (!tir_const_int(diff, &c) || c < 0 || c > (d + 1 == e->nsrc ? 1 : 0))
            return 0;
    }
    return 1;
}

static int contiguous_in_rec(tir_set *seen, tir_node e, tir_node v) {
    if (tir_set_add(seen, e))
        return 1;
    if (e->op == TIR_TENSOR_READ && !read_moves_contiguously(e, v))
        return 0;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!contiguous_in_rec(seen, e->src[i], v))
            return 0;
    return 1;
}

static int contiguous_in(tir_node e, tir_node v) {
    tir_set seen = {0};
    int r = contiguous_in_rec(&seen, e, v);
    tir_set_free(&seen);
    return r;
}

/* 1 if a reduce domain of the stage depends on var v (a prefix sum along
 * v reduces over [0, v]). */
static int domain_uses(const kiln_stage *st, tir_node v) {
    for (uint32_t k = 1; k < st->body->nsrc; k++) {
        const te_dom *dom = te_axis_dom(st->body->src[k]);
        if (dom && (tir_uses_var(dom->min, v) || tir_uses_var(dom->extent, v)))
            return 1;
    }
    return 0;
}

/* A reduction whose innermost data axis reads contiguously (a convolution
 * along the output width, pooling): loop over the reduce axes outside that
 * axis and vectorize it, so each step is a vector multiply-add. Not when a
 * reduce domain depends on that axis (a cumsum along it): the reduce loops
 * cannot move outside the axis their extents read. */
static void vectorize_reduction(kiln_stage *st) {
    if (st->ndata < 1 || st->nroot == st->ndata || te_is_scan(st->tensor))
        return;
    tir_node w = st->iters[st->ndata - 1].var;
    if (domain_uses(st, w) || domain_uses(st, st->tensor->axis[st->tensor->ndim - 1]))
        return;
    int64_t ext;
    int sym = !tir_const_int(st->tensor->shape[st->ndata - 1], &ext);
    if ((!sym && ext < 8) || !contiguous_in(st->body->src[0], w))
        return;
    kiln_expr wo, wi, order[TE_MAX_ITERS];
    if (sym) { /* a symbolic extent: the reduce loops outside it, which the C
                  compiler vectorizes (splitting it would need a tail) */
        int n = 0;
        for (int d = 0; d + 1 < st->ndata; d++)
            order[n++] = st->iters[d].var;
        for (int r = st->ndata; r < st->nroot; r++)
            order[n++] = st->iters[r].var;
        order[n++] = w;
        kiln_reorder(st, n, order);
        kiln_clear_error();
        return;
    }
    if (kiln_split(st, w, 16, &wo, &wi) != KILN_OK) {
        kiln_clear_error(); /* the stage stays as it was: no message left behind */
        return;
    }
    int n = 0;
    for (int d = 0; d + 1 < st->ndata; d++)
        order[n++] = st->iters[d].var;
    order[n++] = wo;
    for (int r = st->ndata; r < st->nroot; r++)
        order[n++] = st->iters[r].var;
    order[n++] = wi;
    if (kiln_reorder(st, n, order) != KILN_OK || kiln_vectorize(st, wi) != KILN_OK)
        kiln_clear_error(); /* split but not vectorized: correct, only slower */
}

/* A symbolic extent counts as OPS_SYM_EXTENT_HINT when the schedule weighs
 * parallel work, so the fused parallel loop stops after it or the next axis
 * instead of running every element as a task of its own. */
static int64_t extent_hint(tir_node extent) {
    int64_t e;
    return tir_const_int(extent, &e) ? e : OPS_SYM_EXTENT_HINT;
}

/* Fuse a stage's leading data axes until there is enough parallel work, and
 * run them in parallel; for a scan, only axes outside its scan axis. */
static void parallel_outer(kiln_stage *st) {
    int nd = te_is_scan(st->tensor) ? st->tensor->scan_axis : st->ndata;
    if (nd == 0)
        return;
    kiln_expr ax = st->iters[0].var;
    int64_t ext = extent_hint(st->tensor->shape[0]);
    for (int d = 1; d < nd && ext < 64; d++) {
        int64_t e = extent_hint(st->tensor->shape[d]);
        kiln_expr f;
        if (kiln_fuse(st, ax, st->iters[d].var, &f) != KILN_OK) {
            /* axis d was split already (vectorize_reduction's lanes): the
               loops fused so far run in parallel, and the fuse's message
               must not outlive a compile that succeeds */
            kiln_clear_error();
            break;
        }
        ax = f;
        ext *= e;
    }
    if (ext > 1 && kiln_parallel(st, ax) != KILN_OK)
        kiln_clear_error(); /* serial loops: correct, only slower */
}

/* 1 if every buffer that e reads (through the stages inlined into it) is
 * read at consecutive elements, or at one, as v steps (contiguous_in's test
 * of each read, which this applies through inlined stages too): vectors of
 * v are then whole loads and broadcasts, not gathers. A channel shuffle
 * (reshape, transpose, reshape: indices by division) is not, and its
 * vector form ran 12x slower than the scalar loop (ShuffleNetV2). `budget`
 * bounds the walk (inlined bodies are expanded per read). */
static int reads_contiguous(kiln_schedule *s, tir_node e, tir_node v, int *budget) {
    if (--*budget < 0)
        return 0;
    if (!tir_uses_var(e, v))
        return 1;
    if (e->op == TIR_TENSOR_READ) {
        kiln_stage *p = te_stage_of(s, (const kiln_tensor *)e->ptr);
        if (p && p->attach == TE_ATTACH_INLINE && p->ndata == (int)e->nsrc) {
            tir_node vars[TE_MAX_ITERS];
            for (int d = 0; d < p->ndata; d++)
                vars[d] = p->iters[d].var;
            return reads_contiguous(s, tir_substitute(p->body, p->ndata, vars, e->src), v, budget);
        }
        return read_moves_contiguously(e, v);
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!reads_contiguous(s, e->src[i], v, budget))
            return 0;
    return 1;
}

/* A float32 output of an elementwise or injective group: its innermost axis
 * in vectors of the target's lanes (a tail that does not fill one runs
 * scalar). The C compiler vectorizes a plain elementwise loop by itself,
 * but not one that picks its source by a select, as a concatenation does:
 * DenseNet's blocked concatenations then copied 4 bytes at a time, at
 * about 7 GB/s. Only when its reads are contiguous (reads_contiguous). A
 * 1-D output's vectors run in parallel; for more dims parallel_outer takes
 * the leading axes. */
/* The dtypes an output is vectorized in at the float32 lane count: float32
 * and the integers of at most 4 bytes (an int8 model's quantize writes
 * uint8: scalar, it took 2.5 ms of ResNet-50's int8 run per 200 K values). */
static int vector_dtype(kiln_dtype dt) {
    return dt == KILN_FLOAT32 ||
           ((tir_is_int_dtype(dt) && dt != KILN_BOOL) && kiln_dtype_size(dt) <= 4);
}

static void vectorize_inner(kiln_stage *st, const kiln_target *target) {
    int nd = st->ndata, lanes = target_lanes(target), budget = 20000;
    int64_t e;
    if (nd < 1 || te_is_scan(st->tensor) || st->body->op == TIR_REDUCE ||
        !vector_dtype(kiln_tensor_dtype(st->tensor)) || lanes < 4 ||
        !tir_const_int(st->tensor->shape[nd - 1], &e) || e < lanes ||
        !reads_contiguous(st->sch, st->body, st->iters[nd - 1].var, &budget))
        return;
    kiln_expr o, i;
    if (kiln_split(st, st->iters[nd - 1].var, lanes, &o, &i) != KILN_OK ||
        kiln_vectorize(st, i) != KILN_OK ||
        (nd == 1 && e >= 2 * lanes && kiln_parallel(st, o) != KILN_OK))
        kiln_clear_error(); /* scalar or serial: correct, only slower */
}

/* The default CPU schedule: elementwise and injective stages are inlined
 * (except padding read by a reduction, which is materialized so the
 * reduction's loads stay contiguous); reductions are computed at the top
 * of the kernel, vectorized along a contiguous innermost axis; outer axes
 * run in parallel. When the group's anchor op (its out-elemwise-fusable
 * op) has a schedule of its own in the op table, that schedule places the
 * anchor's stage and the group's output; the rest stays as above. With
 * `naive`, every stage but padding (and scans, kiln/te.h) is inlined and
 * nothing else is done:
 * the reference every schedule is tested against. */
kiln_status driver_default_schedule(kiln_schedule *s, int nout, kiln_tensor **outs,
                                    const gnode *out_node, const gnode *anchor_node,
                                    kiln_tensor *anchor, int naive, const kiln_target *target) {
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *st = s->stages[i];
        if (st->is_output || st->body->op == TIR_REDUCE || te_is_scan(st->tensor))
            continue; /* a scan is always materialized */
        if (has_select(st->body) && read_by_reduction(s, st->tensor))
            continue;
        /* exp (softmax's numerators) read by a sum and a division: computed
           once, not in each (the naive schedule, the reference, inlines it) */
        if (!naive && calls_transcendental(st->body) && readers(s, st->tensor) > 1)
            continue;
        kiln_status r = kiln_compute_inline(st);
        if (r != KILN_OK)
            return r;
    }
    if (naive)
        return KILN_OK;
    kiln_stage *sa = NULL;
    /* a row op ending an anchor's group (op_rows_fn) places its rows and the
       anchor in them; the anchor then tiles the inside of its row */
    int by_rows = anchor && nout == 1 && out_node && out_node != anchor_node &&
                  out_node->op->rows && out_node->op->schedule && anchor_node->op->rows &&
                  anchor_node->op->schedule && out_node->op->rows(out_node) &&
                  anchor_node->op->rows(anchor_node);
    if (by_rows) {
        kiln_status r = out_node->op->schedule(s, out_node, anchor, outs[0], target);
        if (r == KILN_OK)
            r = anchor_node->op->schedule(s, anchor_node, anchor, NULL, target);
        if (r != KILN_OK)
            return r;
        sa = kiln_schedule_stage(s, anchor);
    } else if (anchor && nout == 1 && anchor_node->op->schedule) {
        kiln_status r = anchor_node->op->schedule(s, anchor_node, anchor, outs[0], target);
        if (r != KILN_OK)
            return r;
        sa = kiln_schedule_stage(s, anchor);
        kiln_stage *so = kiln_schedule_stage(s, outs[0]);
        /* a schedule that declined (returned without touching the anchor or
           the output) leaves the group to the default */
        if (sa && !sa->touched && so && !so->touched && sa->attach == TE_ATTACH_ROOT &&
            so->attach == TE_ATTACH_ROOT)
            sa = NULL;
    }
    /* padding the anchor's schedule did not place: materialized, in parallel */
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *st = s->stages[i];
        if (st->attach == TE_ATTACH_ROOT && !st->touched && !st->is_output &&
            st->body->op != TIR_REDUCE)
            parallel_outer(st);
    }
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *st = s->stages[i];
        if (st->body->op != TIR_REDUCE || (sa && (st == sa || st->touched)))
            continue;
        vectorize_reduction(st);
        if (!st->is_output)
            parallel_outer(st);
    }
    for (int k = 0; k < nout && !sa; k++) {
        kiln_stage *st = kiln_schedule_stage(s, outs[k]);
        if (!st)
            continue;
        vectorize_inner(st, target);
        if (st->ndata > 1)
            parallel_outer(st);
    }
    return KILN_OK;
}
