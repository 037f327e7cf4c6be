/* lower.c: schedule -> loop IR. In order:
 *   1. inline-expand stage bodies (compute_inline);
 *   2. bound inference, consumers first: the region of each stage that its
 *      attach point needs, and every axis's extent;
 *   3. loop-nest generation per stage, with guards for splits that do not
 *      divide, reductions split into init and update, and attached stages
 *      placed (with their buffers) inside their consumer's loop;
 *   4. storage flattening (multi-dim PROVIDE/TENSOR_READ -> STORE/LOAD);
 *   5. loop passes: simplify, unroll, vectorize. */
#include <stdio.h>
#include <string.h>

#include "te_internal.h"

typedef struct {
    kiln_stage *st;
    tir_node body;  /* inline-expanded */
    tir_node *ext;  /* per iter: loop extent */
    tir_node *off;  /* per iter: value in terms of leaf vars (offset from rmin) */
    tir_node *rmin; /* per root iter: absolute min of the region */
    tir_node *rext; /* per root iter: extent of the region */
    tir_node buf;   /* HANDLE var of its storage */
    tir_node *smin; /* per data dim: storage origin */
    tir_node *sext; /* per data dim: storage extent (for strides) */
    int is_param;
    int ready;       /* bounds computed */
    int attach_leaf; /* compute_at: the consumer's leaf iter it sits in */
    int emitted;     /* its nest was generated */
} lstage;

typedef struct {
    kiln_ctx *ctx;
    kiln_schedule *s;
    lstage *ls;
    int n;
    tir_analyzer *an;
    int nargs;
    kiln_tensor *const *args;
    tir_node *arg_bufs;
} lower_ctx;

static lstage *ls_of(lower_ctx *L, const kiln_tensor *t) {
    for (int i = 0; i < L->n; i++)
        if (L->ls[i].st && L->ls[i].st->tensor == t)
            return &L->ls[i];
    return NULL;
}

static tir_node *nodes(lower_ctx *L, int n) {
    return arena_alloc(tir_arena(L->ctx), sizeof(tir_node) * (size_t)(n ? n : 1));
}

static tir_node simp(lower_ctx *L, tir_node e) {
    return tir_simplify(L->an, e);
}

static tir_node ceildiv(lower_ctx *L, tir_node a, int64_t f) {
    return simp(L, tir_bin(TIR_FLOORDIV, tir_add(a, tir_i64(L->ctx, f - 1)), tir_i64(L->ctx, f)));
}

/* ---- 1. inlining ---------------------------------------------------------- */

static tir_node inline_fn(tir_node n, void *user) {
    lower_ctx *L = user;
    if (n->op != TIR_TENSOR_READ)
        return n;
    lstage *p = ls_of(L, n->ptr);
    if (!p || p->st->attach != TE_ATTACH_INLINE)
        return n;
    kiln_tensor *t = p->st->tensor;
    /* p->body is already expanded: stages are in producer-first order */
    return tir_substitute(p->body, t->ndim, t->axis, n->src);
}

/* ---- 2. bounds ------------------------------------------------------------- */

/* Extents of every iter from the root extents, and each iter's offset in
 * terms of the leaf loop vars. Binds constant leaf ranges in the analyzer. */
static void derive_iters(lower_ctx *L, lstage *ls) {
    kiln_stage *st = ls->st;
    for (int i = 0; i < st->nroot; i++)
        ls->ext[i] = ls->rext[i];
    for (int r = 0; r < st->nrels; r++) {
        te_rel *rel = &st->rels[r];
        if (rel->kind == TE_REL_SPLIT) {
            tir_node pe = ls->ext[rel->parent];
            if (rel->by_nparts) {
                ls->ext[rel->outer] = tir_i64(L->ctx, rel->factor);
                ls->ext[rel->inner] = ceildiv(L, pe, rel->factor);
            } else {
                ls->ext[rel->outer] = ceildiv(L, pe, rel->factor);
                ls->ext[rel->inner] = tir_i64(L->ctx, rel->factor);
            }
        } else {
            ls->ext[rel->fused] = simp(L, tir_mul(ls->ext[rel->outer], ls->ext[rel->inner]));
        }
    }
    for (int i = 0; i < st->niters; i++)
        ls->off[i] = NULL;
    for (int i = 0; i < st->nleaves; i++) {
        int it = st->leaves[i];
        ls->off[it] = st->iters[it].var;
        int64_t e;
        if (tir_const_int(ls->ext[it], &e) && e > 0)
            tir_analyzer_bind(L->an, st->iters[it].var, 0, e - 1);
        else if (!tir_const_int(ls->ext[it], &e)) /* a symbolic extent (a size variable) */
            tir_analyzer_bind_extent(L->an, st->iters[it].var, ls->ext[it]);
    }
    for (int r = st->nrels - 1; r >= 0; r--) {
        te_rel *rel = &st->rels[r];
        if (rel->kind == TE_REL_SPLIT) {
            tir_node step = rel->by_nparts ? ls->ext[rel->inner] : tir_i64(L->ctx, rel->factor);
            ls->off[rel->parent] = tir_add(tir_mul(ls->off[rel->outer], step), ls->off[rel->inner]);
        } else {
            /* fused = outer * ie + inner; with either of extent 1 the other
               is the fused value itself (no division for the simplifier to
               see through, e.g. under a tail's guard, where the fused
               value's bound alone does not show it stays below ie) */
            tir_node ie = ls->ext[rel->inner];
            int64_t oe = 0, b = 0;
            if (tir_const_int(ls->ext[rel->outer], &oe) && oe == 1) {
                ls->off[rel->outer] = tir_i64(L->ctx, 0);
                ls->off[rel->inner] = ls->off[rel->fused];
            } else if (tir_const_int(ie, &b) && b == 1) {
                ls->off[rel->outer] = ls->off[rel->fused];
                ls->off[rel->inner] = tir_i64(L->ctx, 0);
            } else {
                ls->off[rel->outer] = tir_bin(TIR_FLOORDIV, ls->off[rel->fused], ie);
                ls->off[rel->inner] = tir_bin(TIR_FLOORMOD, ls->off[rel->fused], ie);
            }
        }
    }
    for (int i = 0; i < st->niters; i++)
        if (ls->off[i])
            ls->off[i] = simp(L, ls->off[i]);
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* What relax_iters knows of an iter's interval beyond its bounds: its low
 * end is a multiple of `align` (0: the low end is 0, a multiple of
 * anything), and it holds exactly `width` values (0: not known). */
typedef struct {
    int64_t align, width;
} ival_shape;

static int64_t align_gcd(int64_t a, int64_t b) {
    return !a ? b : !b ? a : gcd64(a, b);
}

/* Intervals of c's iters with leaves up to attach position `pos` fixed and
 * the rest relaxed over their loops. A fused iter's interval maps back to
 * its two iters exactly when it is known not to straddle a block of the
 * inner one (a row tile of mr rows over a fused [14, 14] with mr dividing
 * 14), else to a covering box. */
static void relax_iters(lower_ctx *L, lstage *c, int pos, te_ival *iv) {
    kiln_stage *st = c->st;
    ival_shape *sh = arena_alloc(tir_arena(L->ctx), (size_t)st->niters * sizeof *sh);
    for (int i = 0; i < st->niters; i++)
        iv[i] = (te_ival){NULL, NULL};
    for (int i = 0; i < st->nleaves; i++) {
        int it = st->leaves[i];
        tir_node v = st->iters[it].var;
        int64_t e;
        if (i <= pos) {
            iv[it] = (te_ival){v, v};
            sh[it] = (ival_shape){1, 1};
        } else {
            iv[it] =
                (te_ival){tir_i64(L->ctx, 0), simp(L, tir_sub(c->ext[it], tir_i64(L->ctx, 1)))};
            sh[it] = (ival_shape){0, tir_const_int(c->ext[it], &e) && e > 0 ? e : 0};
        }
    }
    for (int r = st->nrels - 1; r >= 0; r--) {
        te_rel *rel = &st->rels[r];
        if (rel->kind == TE_REL_SPLIT) {
            tir_node step = rel->by_nparts ? c->ext[rel->inner] : tir_i64(L->ctx, rel->factor);
            te_ival o = iv[rel->outer], in = iv[rel->inner];
            iv[rel->parent] =
                (te_ival){tir_add(tir_mul(o.lo, step), in.lo), tir_add(tir_mul(o.hi, step), in.hi)};
            ival_shape so = sh[rel->outer], si = sh[rel->inner];
            int64_t k = 0, w = 0;
            if (tir_const_int(step, &k) && k > 0) {
                if (so.width == 1)
                    w = si.width;
                else if (so.width > 1 && si.align == 0 && si.width == k)
                    w = so.width * k; /* whole inner blocks */
                sh[rel->parent] = (ival_shape){align_gcd(so.align ? so.align * k : 0, si.align), w};
            } else {
                sh[rel->parent] = (ival_shape){1, 0};
            }
        } else {
            te_ival f = iv[rel->fused];
            ival_shape fs = sh[rel->fused];
            tir_node ie = c->ext[rel->inner];
            int64_t b = 0;
            int known = tir_const_int(ie, &b) && b > 0 && fs.width > 0;
            int64_t oe = 0;
            tir_node zero = tir_i64(L->ctx, 0);
            if (f.lo != f.hi && tir_const_int(c->ext[rel->outer], &oe) && oe == 1) {
                /* fused = inner: a dim of 1 fused with a row dim */
                iv[rel->outer] = (te_ival){zero, zero};
                sh[rel->outer] = (ival_shape){0, 1};
                iv[rel->inner] = f;
                sh[rel->inner] = fs;
            } else if (f.lo != f.hi && b == 1) { /* fused = outer */
                iv[rel->outer] = f;
                sh[rel->outer] = fs;
                iv[rel->inner] = (te_ival){zero, zero};
                sh[rel->inner] = (ival_shape){0, 1};
            } else if (f.lo == f.hi) {
                iv[rel->outer] =
                    (te_ival){tir_bin(TIR_FLOORDIV, f.lo, ie), tir_bin(TIR_FLOORDIV, f.lo, ie)};
                iv[rel->inner] =
                    (te_ival){tir_bin(TIR_FLOORMOD, f.lo, ie), tir_bin(TIR_FLOORMOD, f.lo, ie)};
                sh[rel->outer] = sh[rel->inner] = (ival_shape){1, 1};
            } else if (known && b % fs.width == 0 && fs.align % fs.width == 0) {
                /* aligned to its width, which divides the inner extent: the
                   interval lies in one inner block */
                tir_node lo = tir_bin(TIR_FLOORMOD, f.lo, ie);
                iv[rel->outer] =
                    (te_ival){tir_bin(TIR_FLOORDIV, f.lo, ie), tir_bin(TIR_FLOORDIV, f.lo, ie)};
                iv[rel->inner] = (te_ival){lo, tir_add(lo, tir_i64(L->ctx, fs.width - 1))};
                sh[rel->outer] = (ival_shape){1, 1};
                sh[rel->inner] = (ival_shape){fs.align ? gcd64(fs.align, b) : 0, fs.width};
            } else if (known && fs.width % b == 0 && fs.align % b == 0) {
                /* whole inner blocks: a box of width / b outer values */
                tir_node lo = tir_bin(TIR_FLOORDIV, f.lo, ie);
                iv[rel->outer] = (te_ival){lo, tir_add(lo, tir_i64(L->ctx, fs.width / b - 1))};
                iv[rel->inner] = (te_ival){tir_i64(L->ctx, 0), tir_sub(ie, tir_i64(L->ctx, 1))};
                sh[rel->outer] = (ival_shape){fs.align / b, fs.width / b};
                sh[rel->inner] = (ival_shape){0, b};
            } else {
                iv[rel->outer] =
                    (te_ival){tir_bin(TIR_FLOORDIV, f.lo, ie), tir_bin(TIR_FLOORDIV, f.hi, ie)};
                iv[rel->inner] = (te_ival){tir_i64(L->ctx, 0), tir_sub(ie, tir_i64(L->ctx, 1))};
                sh[rel->outer] = (ival_shape){1, 0};
                sh[rel->inner] = (ival_shape){0, b > 0 ? b : 0};
            }
        }
    }
}

typedef struct {
    const kiln_tensor *t;
    int n;
    const tir_node *vars;
    const te_ival *ivals;
    te_ival *region; /* per dim; lo NULL until the first read */
    int failed;
} region_acc;

static void collect_region_rec(tir_set *seen, tir_node e, region_acc *acc) {
    if (tir_set_add(seen, e))
        return; /* a shared read widens the region once */
    if (e->op == TIR_TENSOR_READ && e->ptr == acc->t) {
        for (uint32_t d = 0; d < e->nsrc; d++) {
            te_ival v;
            if (!te_eval_interval(e->src[d], acc->n, acc->vars, acc->ivals, &v)) {
                acc->failed = 1;
                return;
            }
            te_ival *r = &acc->region[d];
            if (!r->lo)
                *r = v;
            else
                *r = (te_ival){tir_bin(TIR_MIN, r->lo, v.lo), tir_bin(TIR_MAX, r->hi, v.hi)};
        }
    }
    for (uint32_t i = 0; i < e->nsrc && !acc->failed; i++)
        collect_region_rec(seen, e->src[i], acc);
}

static void collect_region(tir_node e, region_acc *acc) {
    tir_set seen = {0};
    collect_region_rec(&seen, e, acc);
    tir_set_free(&seen);
}

/* The leaf of c where an attached stage goes. compute_at names an axis; if
 * that axis was split or fused afterwards, the stage goes inside the
 * innermost leaf derived from it, which still runs once per value of the
 * axis or more often (bound inference sizes the region for that spot). */
static int resolve_attach(const kiln_stage *c, int it) {
    int pos = -1, best = -1;
    for (int i = 0; i < c->nleaves; i++)
        if (c->leaves[i] == it)
            pos = i;
    if (pos >= 0)
        return it;
    for (int r = 0; r < c->nrels; r++) {
        const te_rel *rel = &c->rels[r];
        int child[2] = {-1, -1};
        if (rel->kind == TE_REL_SPLIT && rel->parent == it) {
            child[0] = rel->outer;
            child[1] = rel->inner;
        } else if (rel->kind == TE_REL_FUSE && (rel->outer == it || rel->inner == it)) {
            child[0] = rel->fused;
        }
        for (int k = 0; k < 2; k++) {
            if (child[k] < 0)
                continue;
            int leaf = resolve_attach(c, child[k]);
            for (int i = 0; i < c->nleaves; i++)
                if (c->leaves[i] == leaf && i > best) {
                    best = i;
                    pos = leaf;
                }
        }
    }
    KILN_ASSERT(pos >= 0 && "an attach axis always has a leaf descendant");
    return pos;
}

static void infer_bounds(lower_ctx *L, lstage *ls) {
    kiln_stage *st = ls->st;
    kiln_tensor *t = st->tensor;
    int nd = st->ndata;
    for (int d = 0; d < nd; d++) {
        ls->rmin[d] = tir_i64(L->ctx, 0);
        ls->rext[d] = t->shape[d];
    }
    if (st->attach == TE_ATTACH_AT) {
        lstage *c = ls_of(L, st->attach_stage->tensor);
        KILN_ASSERT(c && c->ready);
        int pos = 0;
        for (int i = 0; i < c->st->nleaves; i++)
            if (c->st->leaves[i] == ls->attach_leaf)
                pos = i;
        te_ival iv[TE_MAX_ITERS];
        relax_iters(L, c, pos, iv);
        /* intervals of c's root vars, absolute */
        tir_node rv[TE_MAX_ITERS];
        te_ival riv[TE_MAX_ITERS];
        for (int i = 0; i < c->st->nroot; i++) {
            rv[i] = c->st->iters[i].var;
            riv[i] = (te_ival){simp(L, tir_add(c->rmin[i], iv[i].lo)),
                               simp(L, tir_add(c->rmin[i], iv[i].hi))};
        }
        te_ival region[16] = {{0}};
        region_acc acc = {t, c->st->nroot, rv, riv, region, 0};
        collect_region(c->body, &acc);
        /* consumers computed inside c at this spot or deeper: their whole
           region at that spot, with c's loops below this spot relaxed */
        for (int k = 0; k < L->s->nstages && !acc.failed; k++) {
            lstage *x = &L->ls[k];
            if (x == ls || x == c || x->st->attach != TE_ATTACH_AT ||
                x->st->attach_stage != c->st || !te_reads(x->body, t))
                continue; /* (x's body inline-expanded: it may read t through
                             an inlined stage, softmax's through the
                             epilogue of the matmul fused with it) */
            if (!x->ready) {
                acc.failed = 1;
                break;
            }
            tir_node xv[TE_MAX_ITERS], cv[TE_MAX_ITERS];
            te_ival xiv[TE_MAX_ITERS];
            for (int i = 0; i < c->st->niters; i++)
                cv[i] = c->st->iters[i].var;
            for (int i = 0; i < x->st->nroot && !acc.failed; i++) {
                te_ival lo, hi;
                tir_node last = tir_sub(tir_add(x->rmin[i], x->rext[i]), tir_i64(L->ctx, 1));
                xv[i] = x->st->iters[i].var;
                if (!te_eval_interval(x->rmin[i], c->st->niters, cv, iv, &lo) ||
                    !te_eval_interval(last, c->st->niters, cv, iv, &hi))
                    acc.failed = 1;
                else
                    xiv[i] = (te_ival){simp(L, lo.lo), simp(L, hi.hi)};
            }
            if (acc.failed)
                break;
            region_acc ax = {t, x->st->nroot, xv, xiv, region, 0};
            collect_region(x->body, &ax);
            acc.failed |= ax.failed;
        }
        if (!acc.failed) {
            for (int d = 0; d < nd; d++) {
                if (!region[d].lo)
                    continue;
                ls->rmin[d] = simp(L, region[d].lo);
                ls->rext[d] =
                    simp(L, tir_add(tir_sub(region[d].hi, region[d].lo), tir_i64(L->ctx, 1)));
            }
        }
    }
    for (int i = nd; i < st->nroot; i++) {
        const te_dom *dom = te_axis_dom(st->iters[i].var);
        ls->rmin[i] = dom->min;
        ls->rext[i] = dom->extent;
    }
    derive_iters(L, ls);
    ls->ready = 1;
}

/* ---- 3. loop nests ----------------------------------------------------------- */

static tir_node gen_stage(lower_ctx *L, lstage *ls);

/* Absolute value of root iter i. */
static tir_node bind_data_axes(lower_ctx *L, lstage *ls, tir_node e);

static tir_node root_value(lower_ctx *L, lstage *ls, int i) {
    tir_node v = simp(L, tir_add(ls->rmin[i], ls->off[i]));
    return i >= ls->st->ndata ? bind_data_axes(L, ls, v) : v;
}

/* Conjunction of guards: splits that may overrun, and producer regions that
 * may leave the tensor's shape. data_only skips guards on reduce iters. */
static tir_node guards(lower_ctx *L, lstage *ls, int data_only) {
    kiln_stage *st = ls->st;
    tir_node g = NULL;
    for (int r = 0; r < st->nrels; r++) {
        te_rel *rel = &st->rels[r];
        if (rel->kind != TE_REL_SPLIT)
            continue;
        if (data_only && st->iters[rel->parent].is_reduce)
            continue;
        tir_node pext = ls->ext[rel->parent];
        if (st->iters[rel->parent].is_reduce)
            pext = bind_data_axes(L, ls, pext);
        tir_node c = simp(L, tir_bin(TIR_LT, ls->off[rel->parent], pext));
        if (tir_prove(L->an, c))
            continue;
        g = g ? tir_bin(TIR_AND, g, c) : c;
    }
    if (st->attach == TE_ATTACH_AT) {
        for (int d = 0; d < st->ndata; d++) {
            tir_node v = root_value(L, ls, d);
            tir_node lo = simp(L, tir_bin(TIR_GE, v, tir_i64(L->ctx, 0)));
            tir_node hi = simp(L, tir_bin(TIR_LT, v, st->tensor->shape[d]));
            if (!tir_prove(L->an, lo))
                g = g ? tir_bin(TIR_AND, g, lo) : lo;
            if (!tir_prove(L->an, hi))
                g = g ? tir_bin(TIR_AND, g, hi) : hi;
        }
    }
    return g;
}

static tir_node provide(lower_ctx *L, lstage *ls, tir_node value) {
    kiln_stage *st = ls->st;
    tir_node src[17];
    src[0] = value;
    for (int d = 0; d < st->ndata; d++)
        src[1 + d] = root_value(L, ls, d);
    return tir_make(L->ctx, TIR_PROVIDE, KILN_HANDLE, 1, 0, 0, 0, st->tensor->name, st->tensor,
                    st->ndata + 1, src);
}

static tir_node guarded(tir_node g, tir_node s) {
    return g ? tir_if(g, s, NULL) : s;
}

/* Stages attached at iter `it` of ls, each with its buffer, around `body`. */
static tir_node with_attached(lower_ctx *L, lstage *ls, int it, tir_node body) {
    for (int i = L->n - 1; i >= 0; i--) {
        lstage *p = &L->ls[i];
        if (p->st->attach != TE_ATTACH_AT || p->st->attach_stage != ls->st || p->attach_leaf != it)
            continue;
        tir_node nest = gen_stage(L, p);
        if (!nest)
            return NULL;
        p->emitted = 1;
        body = tir_seq2(nest, body);
        if (!p->is_param) {
            tir_node count = tir_i64(L->ctx, 1);
            for (int d = 0; d < p->st->ndata; d++)
                count = tir_mul(count, p->sext[d]);
            body = tir_allocate(p->buf, simp(L, count), p->st->scope, body);
        }
    }
    return body;
}

/* A reduce axis's domain may depend on a data axis (a prefix sum reduces
 * over [0, i]): such bounds name the axis var, whose value inside the
 * loops is the root value. */
static tir_node bind_data_axes(lower_ctx *L, lstage *ls, tir_node e) {
    kiln_stage *st = ls->st;
    if (!e || st->nroot == st->ndata)
        return e;
    tir_node vars[TE_MAX_ITERS], vals[TE_MAX_ITERS];
    for (int d = 0; d < st->ndata; d++) {
        vars[d] = st->iters[d].var;
        vals[d] = root_value(L, ls, d);
    }
    return simp(L, tir_substitute(e, st->ndata, vars, vals));
}

static tir_node loop(lower_ctx *L, lstage *ls, int it, tir_node body) {
    te_iter *iv = &ls->st->iters[it];
    tir_node ext = iv->is_reduce ? bind_data_axes(L, ls, ls->ext[it]) : ls->ext[it];
    return tir_for(iv->var, tir_i64(L->ctx, 0), ext, iv->kind, iv->tag, body);
}

static tir_node reduce_identity(lower_ctx *L, tir_node red) {
    kiln_dtype dt = (kiln_dtype)red->dtype;
    double v = 0;
    int fl = tir_is_float_dtype(dt);
    switch ((tir_combiner)red->aux) {
    case TIR_RSUM: v = 0; break;
    case TIR_RPROD: v = 1; break;
    case TIR_RMAX:
        if (!fl)
            return tir_int(L->ctx, dt, kiln_dtype_int_min(dt));
        v = -__builtin_inf();
        break;
    case TIR_RMIN:
        if (!fl)
            return tir_int(L->ctx, dt, kiln_dtype_int_max(dt));
        v = __builtin_inf();
        break;
    default: KILN_ASSERT(0);
    }
    return tir_const(L->ctx, dt, 1, v);
}

static tir_node combine(tir_node red, tir_node acc, tir_node x) {
    switch ((tir_combiner)red->aux) {
    case TIR_RSUM: return tir_add(acc, x);
    case TIR_RPROD: return tir_mul(acc, x);
    case TIR_RMAX: return tir_bin(TIR_MAX, acc, x);
    case TIR_RMIN: return tir_bin(TIR_MIN, acc, x);
    default: KILN_ASSERT(0); return NULL;
    }
}

/* The element value with root vars replaced by their absolute values. */
static tir_node bind_roots(lower_ctx *L, lstage *ls, tir_node e) {
    kiln_stage *st = ls->st;
    tir_node vars[TE_MAX_ITERS], vals[TE_MAX_ITERS];
    for (int i = 0; i < st->nroot; i++) {
        vars[i] = st->iters[i].var;
        vals[i] = root_value(L, ls, i);
    }
    return tir_substitute(e, st->nroot, vars, vals);
}

static tir_node gen_stage(lower_ctx *L, lstage *ls) {
    kiln_stage *st = ls->st;
    int n = st->nleaves;
    tir_node body = ls->body, stmt;
    int k = n; /* first reduce leaf */
    if (body->op == TIR_REDUCE) {
        for (int i = 0; i < n && k == n; i++)
            if (st->iters[st->leaves[i]].is_reduce)
                k = i;
        tir_node self[16];
        for (int d = 0; d < st->ndata; d++)
            self[d] = root_value(L, ls, d);
        tir_node acc = te_read(st->tensor, st->ndata, self);
        tir_node upd = guarded(guards(L, ls, 0),
                               provide(L, ls, combine(body, acc, bind_roots(L, ls, body->src[0]))));
        for (int i = n - 1; i >= k; i--) {
            int it = st->leaves[i];
            upd = with_attached(L, ls, it, upd);
            if (!upd)
                return NULL;
            upd = loop(L, ls, it, upd);
        }
        tir_node init = guarded(guards(L, ls, 1), provide(L, ls, reduce_identity(L, body)));
        for (int i = n - 1; i >= k; i--) {
            int it = st->leaves[i];
            if (!st->iters[it].is_reduce)
                init = loop(L, ls, it, init);
        }
        stmt = tir_seq2(init, upd);
    } else {
        stmt = guarded(guards(L, ls, 0), provide(L, ls, bind_roots(L, ls, body)));
    }
    for (int i = k - 1; i >= 0; i--) {
        int it = st->leaves[i];
        stmt = with_attached(L, ls, it, stmt);
        if (!stmt)
            return NULL;
        stmt = loop(L, ls, it, stmt);
    }
    return stmt;
}

/* ---- 4. flattening ------------------------------------------------------------ */

static tir_node flat_index(lower_ctx *L, lstage *ls, const kiln_tensor *t, int n,
                           const tir_node *idx) {
    tir_node flat = tir_i64(L->ctx, 0);
    for (int d = 0; d < n; d++) {
        tir_node ext = ls ? ls->sext[d] : t->shape[d];
        tir_node rel = ls ? tir_sub(idx[d], ls->smin[d]) : idx[d];
        flat = tir_add(tir_mul(flat, ext), rel);
    }
    return simp(L, flat);
}

static tir_node buffer_of(lower_ctx *L, const kiln_tensor *t, lstage **lso) {
    lstage *ls = ls_of(L, t);
    *lso = ls;
    if (ls)
        return ls->buf;
    for (int i = 0; i < L->nargs; i++)
        if (L->args[i] == t)
            return L->arg_bufs[i];
    return NULL;
}

static tir_node flatten_fn(tir_node n, void *user) {
    lower_ctx *L = user;
    lstage *ls;
    if (n->op == TIR_TENSOR_READ) {
        tir_node buf = buffer_of(L, n->ptr, &ls);
        KILN_ASSERT(buf);
        return tir_load(L->ctx, buf, flat_index(L, ls, n->ptr, (int)n->nsrc, n->src));
    }
    if (n->op == TIR_PROVIDE) {
        tir_node buf = buffer_of(L, n->ptr, &ls);
        KILN_ASSERT(buf);
        tir_node v = n->src[0];
        if (v->dtype != ((kiln_tensor *)n->ptr)->dtype)
            v = tir_cast(((kiln_tensor *)n->ptr)->dtype, v);
        return tir_store(buf, flat_index(L, ls, n->ptr, (int)n->nsrc - 1, n->src + 1), v);
    }
    return n;
}

/* ---- the driver ----------------------------------------------------------------- */

static int collect_size_vars_rec(tir_set *seen, tir_node e, tir_node *out, int n, int cap) {
    if (tir_set_add(seen, e))
        return n;
    if (e->op == TIR_VAR && e->dtype != KILN_HANDLE && !e->aux) {
        for (int i = 0; i < n; i++)
            if (out[i] == e)
                return n;
        if (n < cap)
            out[n++] = e;
        return n;
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        n = collect_size_vars_rec(seen, e->src[i], out, n, cap);
    return n;
}

static int collect_size_vars(tir_node e, tir_node *out, int n, int cap) {
    tir_set seen = {0};
    n = collect_size_vars_rec(&seen, e, out, n, cap);
    tir_set_free(&seen);
    return n;
}

static int check_placeholders_rec(lower_ctx *L, tir_set *seen, tir_node e, const char *stage) {
    if (tir_set_add(seen, e))
        return 1;
    if (e->op == TIR_TENSOR_READ) {
        kiln_tensor *t = e->ptr;
        if (t->kind == TE_PLACEHOLDER) {
            int found = 0;
            for (int i = 0; i < L->nargs; i++)
                found |= L->args[i] == t;
            if (!found) {
                kiln_set_error(KILN_ERR_INVALID,
                               "placeholder '%s' (read by '%s') is not among the arguments",
                               t->name, stage);
                return 0;
            }
        }
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!check_placeholders_rec(L, seen, e->src[i], stage))
            return 0;
    return 1;
}

static int check_placeholders(lower_ctx *L, tir_node e, const char *stage) {
    tir_set seen = {0};
    int ok = check_placeholders_rec(L, &seen, e, stage);
    tir_set_free(&seen);
    return ok;
}

static tir_func *lower_impl(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                            int vector_bytes) {
    kiln_ctx *ctx = s->ctx;
    arena *A = tir_arena(ctx);
    lower_ctx Lc = {ctx, s, NULL, s->nstages, NULL, nargs, args, NULL};
    lower_ctx *L = &Lc;
    if (!name || !*name)
        name = "kernel";
    if (nargs < 1 || !args)
        return kiln_set_error(KILN_ERR_INVALID, "lower '%s': needs at least one argument", name),
               NULL;
    for (int i = 0; i < nargs; i++) {
        if (!args[i] || args[i]->ctx != ctx)
            return kiln_set_error(KILN_ERR_INVALID, "lower '%s': argument %d is %s", name, i,
                                  args[i] ? "from another context" : "NULL"),
                   NULL;
        for (int j = 0; j < i; j++)
            if (args[j] == args[i])
                return kiln_set_error(KILN_ERR_INVALID, "lower '%s': tensor '%s' is passed twice",
                                      name, args[i]->name),
                       NULL;
        kiln_stage *ast = te_stage_of(s, args[i]);
        if (args[i]->kind == TE_COMPUTE && (!ast || ast->attach == TE_ATTACH_INLINE))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "lower '%s': argument '%s' is %s, so it has no storage", name,
                                  args[i]->name, ast ? "inlined" : "not computed by this schedule"),
                   NULL;
    }
    for (int i = 0; i < s->noutputs; i++) {
        int found = 0;
        for (int j = 0; j < nargs; j++)
            found |= args[j] == s->outputs[i];
        if (!found)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "lower '%s': output '%s' is not among the arguments", name,
                                  s->outputs[i]->name),
                   NULL;
    }

    L->an = tir_analyzer_new(ctx);
    L->ls = arena_alloc(A, sizeof(lstage) * (size_t)(s->nstages ? s->nstages : 1));
    L->arg_bufs = nodes(L, nargs);
    for (int i = 0; i < nargs; i++)
        L->arg_bufs[i] = tir_handle(ctx, args[i]->name, args[i]->dtype);

    tir_func *f = NULL;
    /* 1. inline */
    for (int i = 0; i < s->nstages; i++) {
        lstage *ls = &L->ls[i];
        ls->st = s->stages[i];
        ls->body = tir_rewrite(ls->st->body, inline_fn, L);
        if (!check_placeholders(L, ls->body, ls->st->tensor->name))
            goto done;
        int nit = ls->st->niters;
        ls->ext = nodes(L, nit);
        ls->off = nodes(L, nit);
        ls->rmin = nodes(L, ls->st->nroot);
        ls->rext = nodes(L, ls->st->nroot);
        ls->smin = nodes(L, ls->st->ndata);
        ls->sext = nodes(L, ls->st->ndata);
        ls->buf = NULL;
        for (int a = 0; a < nargs; a++)
            if (args[a] == ls->st->tensor) {
                ls->buf = L->arg_bufs[a];
                ls->is_param = 1;
            }
        if (!ls->buf)
            ls->buf = tir_handle(ctx, ls->st->tensor->name, ls->st->tensor->dtype);
        if (ls->st->attach == TE_ATTACH_AT)
            ls->attach_leaf = resolve_attach(ls->st->attach_stage, ls->st->attach_iter);
    }
    /* an attached stage must be read only by its attach target (also
       through stages inlined since compute_at) and by stages computed
       inside the target at the same spot or deeper */
    for (int i = 0; i < s->nstages; i++) {
        kiln_stage *p = s->stages[i];
        if (p->attach != TE_ATTACH_AT)
            continue;
        for (int j = 0; j < s->nstages; j++) {
            kiln_stage *x = s->stages[j];
            if (x == p || x == p->attach_stage || x->attach == TE_ATTACH_INLINE)
                continue;
            if (x->attach == TE_ATTACH_AT && x->attach_stage == p->attach_stage) {
                int pp = -1, px = -1;
                for (int k = 0; k < x->attach_stage->nleaves; k++) {
                    if (x->attach_stage->leaves[k] == L->ls[i].attach_leaf)
                        pp = k;
                    if (x->attach_stage->leaves[k] == L->ls[j].attach_leaf)
                        px = k;
                }
                if (pp >= 0 && px >= pp)
                    continue;
            }
            if (te_reads(L->ls[j].body, p->tensor)) {
                kiln_set_error(KILN_ERR_INVALID,
                               "lower '%s': '%s' is computed at '%s' but also read by '%s'", name,
                               p->tensor->name, p->attach_stage->tensor->name, x->tensor->name);
                goto done;
            }
        }
    }
    /* 2. bounds, consumers first */
    for (int i = s->nstages - 1; i >= 0; i--) {
        lstage *ls = &L->ls[i];
        if (ls->st->attach == TE_ATTACH_INLINE)
            continue;
        infer_bounds(L, ls);
        for (int d = 0; d < ls->st->ndata; d++) {
            if (ls->is_param || ls->st->attach != TE_ATTACH_AT) {
                ls->smin[d] = tir_i64(ctx, 0);
                ls->sext[d] = ls->st->tensor->shape[d];
                continue;
            }
            ls->smin[d] = ls->rmin[d];
            int64_t lo, hi;
            tir_const_bound(L->an, ls->rext[d], &lo, &hi);
            ls->sext[d] = (hi != INT64_MAX && hi > 0 && !tir_is_const(ls->rext[d]))
                              ? tir_i64(ctx, hi)
                              : ls->rext[d];
        }
    }
    /* 3. nests of the root stages, in producer-first order */
    tir_node *parts = nodes(L, s->nstages);
    int np = 0;
    for (int i = 0; i < s->nstages; i++) {
        lstage *ls = &L->ls[i];
        if (ls->st->attach != TE_ATTACH_ROOT)
            continue;
        tir_node nest = gen_stage(L, ls);
        if (!nest)
            goto done;
        parts[np++] = nest;
    }
    tir_node body = tir_seq(ctx, np, parts);
    for (int i = 0; i < s->nstages; i++)
        KILN_ASSERT(L->ls[i].st->attach != TE_ATTACH_AT || L->ls[i].emitted);
    for (int i = s->nstages - 1; i >= 0; i--) {
        lstage *ls = &L->ls[i];
        if (ls->st->attach != TE_ATTACH_ROOT || ls->is_param)
            continue;
        tir_node count = tir_i64(ctx, 1);
        for (int d = 0; d < ls->st->ndata; d++)
            count = tir_mul(count, ls->sext[d]);
        body = tir_allocate(ls->buf, simp(L, count), ls->st->scope, body);
    }
    /* 4. flatten, 5. loop passes */
    body = tir_rewrite(body, flatten_fn, L);
    body = tir_simplify_stmt(L->an, body);
    body = tir_unroll(ctx, body);
    body = tir_simplify_stmt(L->an, body);
    body = tir_vectorize(ctx, body);
    body = tir_legalize_lanes(ctx, body, vector_bytes); /* 0: widths as scheduled */
    body = tir_simplify_stmt(L->an, body);
    tir_node unswitched = tir_unswitch(ctx, body); /* the same node when nothing was hoisted */
    if (unswitched != body)
        body = tir_simplify_stmt(L->an, unswitched);
    body = tir_horizontal(ctx, body);
    body = tir_promote_slots(ctx, body);
    body = tir_truncate_divmod(ctx, body);

    /* the signature: buffers, then every symbolic size in argument shapes */
    f = arena_alloc(A, sizeof *f);
    f->name = tir_intern(ctx, name);
    f->nparams = nargs;
    f->params = arena_alloc(A, sizeof(tir_param) * (size_t)nargs);
    tir_node vars[64];
    int nv = 0;
    for (int i = 0; i < nargs; i++) {
        tir_param *p = &f->params[i];
        p->name = args[i]->name;
        p->buf = L->arg_bufs[i];
        p->dtype = args[i]->dtype;
        p->ndim = args[i]->ndim;
        p->shape = args[i]->shape;
        for (int d = 0; d < p->ndim; d++) {
            tir_node dim = p->shape[d];
            if (dim->op != TIR_INT && dim->op != TIR_VAR) {
                char b[128];
                kiln_expr_print(dim, b, sizeof b);
                kiln_set_error(KILN_ERR_UNSUPPORTED,
                               "lower '%s': dim %d of argument '%s' is the expression '%s'; "
                               "argument dims must be constants or size variables",
                               name, d, p->name, b);
                f = NULL;
                goto done;
            }
            nv = collect_size_vars(dim, vars, nv, 64);
        }
    }
    tir_node used[64];
    int nu = collect_size_vars(body, used, 0, 64);
    for (int i = 0; i < nu; i++) {
        int found = 0;
        for (int j = 0; j < nv; j++)
            found |= used[i] == vars[j];
        if (!found) {
            kiln_set_error(KILN_ERR_INVALID,
                           "lower '%s': size variable '%s' is not a dim of any argument", name,
                           used[i]->name);
            f = NULL;
            goto done;
        }
    }
    f->nvars = nv;
    tir_node *fv = nodes(L, nv);
    memcpy(fv, vars, sizeof(tir_node) * (size_t)nv);
    f->vars = fv;
    f->body = body;
done:
    tir_analyzer_free(L->an);
    return f;
}

tir_func *te_lower(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                   int vector_bytes) {
    if (!s) {
        kiln_set_error(KILN_ERR_INVALID, "lower: schedule is NULL");
        return NULL;
    }
    return lower_impl(s, nargs, args, name, vector_bytes);
}

char *kiln_lower_to_string(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                           const char *name) {
    tir_func *f = te_lower(s, nargs, args, name, 0);
    if (!f)
        return NULL;
    kstr out;
    kstr_init(&out);
    tir_print_func(&out, f);
    return kstr_take(&out);
}
