/* features.c: what the cost model knows of a candidate besides its knob
 * values, read from its lowered loop nest (tune_internal.h): the parallel
 * extent; the loops, stores, loads and guards as written (the unrolled
 * code's size); as executed, the stores, loads and floating-point
 * operations, each weighted by the extents of the loops around it; their
 * ratio (the intensity at the registers); the widest vector; the local
 * buffers' bytes; the bytes each cache level is estimated to fetch from
 * the one below it, and the floating-point operations per byte fetched
 * into L1 and from memory (the arithmetic intensity a roofline plots).
 * Counts span orders of magnitude, so most are log2.
 *
 * The bytes per cache level come from footprints, as in the reuse
 * analyses of Ansor's and TVM's feature extractors, without their per-
 * buffer stride detail: an access touches, over all iterations of a loop
 * around it, its own bytes times the extents of the loops between it and
 * that loop (that loop included) whose variable its index uses; a loop's
 * footprint sums, per buffer, the largest such region among its accesses.
 * A loop whose footprint fits a cache of C bytes fetches it once; one
 * that does not fetches its body's traffic again on every iteration. So
 * the traffic into a cache is the root's, a fitting loop's footprint
 * counted once, every other loop's children's traffic times its extent.
 * Overlapping windows (a convolution's rows) count once per offset, so
 * the estimate errs high there, by the same factor for every candidate of
 * a task. Local buffers are registers and count nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune_internal.h"

#define FP_LOOPS 256 /* loops tracked; deeper ones count as their parent */
#define FP_BUFS 12   /* buffers per loop; more share the last slot */
#define FP_DEPTH 48
#define FP_VARS 32 /* variables an index may use */

typedef struct {
    int parent;
    double ext;
    double direct; /* bytes per iteration of the accesses in the body itself */
    int nb;
    tir_node buf[FP_BUFS];
    double bytes[FP_BUFS]; /* per buffer, the largest region over all iterations */
} fp_loop;

typedef struct {
    double par, loops, stores, loads, ifs, dyn_stores, dyn_loads, dyn_flops, lanes, local;
    fp_loop *fp; /* fp[0] is the whole function, extent 1 */
    int nfp;
    int stack[FP_DEPTH]; /* the tracked loops around the walk, fp indices */
    tir_node var[FP_DEPTH];
    int depth;
    tir_node local_buf[16];
    int nlocal;
} counts;

static void collect_vars(tir_node e, tir_node *vars, int *n, int depth) {
    if (!e || depth > 64)
        return;
    if (e->op == TIR_VAR) {
        for (int i = 0; i < *n; i++)
            if (vars[i] == e)
                return;
        if (*n < FP_VARS)
            vars[(*n)++] = e;
        return;
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        collect_vars(e->src[i], vars, n, depth + 1);
}

static void fp_note(fp_loop *l, tir_node buf, double bytes) {
    int i = 0;
    while (i < l->nb && l->buf[i] != buf)
        i++;
    if (i == l->nb) {
        if (l->nb == FP_BUFS)
            i = FP_BUFS - 1, bytes += l->bytes[i]; /* shares the last slot */
        else
            l->nb++, l->buf[i] = buf, l->bytes[i] = 0;
    }
    if (bytes > l->bytes[i])
        l->bytes[i] = bytes;
}

/* one load or store of `bytes` at `index` in buffer buf */
static void access(counts *c, tir_node buf, tir_node index, double bytes) {
    if (!c->fp)
        return;
    for (int i = 0; i < c->nlocal; i++)
        if (c->local_buf[i] == buf)
            return;
    tir_node vars[FP_VARS];
    int nv = 0;
    collect_vars(index, vars, &nv, 0);
    c->fp[c->depth ? c->stack[c->depth - 1] : 0].direct += bytes;
    double r = bytes;
    for (int d = c->depth - 1; d >= 0; d--) {
        for (int i = 0; i < nv; i++)
            if (vars[i] == c->var[d]) {
                r *= c->fp[c->stack[d]].ext;
                break;
            }
        fp_note(&c->fp[c->stack[d]], buf, r);
    }
    fp_note(&c->fp[0], buf, r);
}

static double footprint(const fp_loop *l) {
    double f = 0;
    for (int i = 0; i < l->nb; i++)
        f += l->bytes[i];
    return f;
}

/* the bytes loop i fetches into a cache of `cap` bytes (see the top) */
static double traffic(const counts *c, int i, double cap, int depth) {
    const fp_loop *l = &c->fp[i];
    double f = footprint(l);
    if (f <= cap || depth > FP_DEPTH)
        return f;
    double body = l->direct;
    for (int k = i + 1; k < c->nfp; k++)
        if (c->fp[k].parent == i)
            body += traffic(c, k, cap, depth + 1);
    return l->ext * body;
}

static double extent_of(tir_node e) {
    int64_t v = 0;
    return tir_const_int(e, &v) && v > 0 ? (double)v : 1.0;
}

static void walk_expr(tir_node e, double mult, counts *c, int depth) {
    if (!e || depth > 200)
        return;
    if (e->op == TIR_LOAD) {
        c->loads++;
        c->dyn_loads += mult;
        access(c, e->src[0], e->src[1],
               (double)kiln_dtype_size((kiln_dtype)e->dtype) * (e->lanes ? e->lanes : 1));
    } else if ((e->op == TIR_ADD || e->op == TIR_SUB || e->op == TIR_MUL || e->op == TIR_DIV ||
                e->op == TIR_MIN || e->op == TIR_MAX) &&
               (e->dtype == KILN_FLOAT32 || e->dtype == KILN_FLOAT64)) {
        c->dyn_flops += mult * (e->lanes ? e->lanes : 1);
    }
    for (uint32_t i = 0; i < e->nsrc; i++)
        walk_expr(e->src[i], mult, c, depth + 1);
}

static void walk(tir_node s, double mult, counts *c, int depth) {
    if (!s || depth > 200)
        return;
    switch (s->op) {
    case TIR_FOR: {
        double ext = extent_of(s->src[2]);
        c->loops++;
        if (s->aux == TIR_FOR_PARALLEL && c->par == 0)
            c->par = ext;
        int tracked = c->fp && c->nfp < FP_LOOPS && c->depth < FP_DEPTH;
        if (tracked) {
            fp_loop *l = &c->fp[c->nfp];
            memset(l, 0, sizeof *l);
            l->parent = c->depth ? c->stack[c->depth - 1] : 0;
            l->ext = ext;
            c->var[c->depth] = s->src[0];
            c->stack[c->depth++] = c->nfp++;
        }
        walk(s->src[3], mult * ext, c, depth + 1);
        c->depth -= tracked;
        break;
    }
    case TIR_STORE:
        c->stores++;
        c->dyn_stores += mult;
        if (s->src[2]->lanes > c->lanes)
            c->lanes = s->src[2]->lanes;
        access(c, s->src[0], s->src[1],
               (double)kiln_dtype_size((kiln_dtype)s->src[2]->dtype) *
                   (s->src[2]->lanes ? s->src[2]->lanes : 1));
        walk_expr(s->src[1], mult, c, depth + 1);
        walk_expr(s->src[2], mult, c, depth + 1);
        break;
    case TIR_ALLOCATE: {
        int64_t n = 0;
        if (!strcmp(s->name ? s->name : "", "local")) {
            if (tir_const_int(s->src[1], &n))
                c->local += (double)n * (double)kiln_dtype_size((kiln_dtype)s->src[0]->aux);
            if (c->nlocal < 16)
                c->local_buf[c->nlocal++] = s->src[0];
        }
        walk(s->src[2], mult, c, depth + 1);
        break;
    }
    case TIR_IF:
        c->ifs++;
        for (uint32_t i = 1; i < s->nsrc; i++)
            walk(s->src[i], mult, c, depth + 1);
        break;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            walk(s->src[i], mult, c, depth + 1);
        break;
    default: break;
    }
}

void tune_tir_features(const tir_func *f, const kiln_target *target, float out[TUNE_TIR_FEATS]) {
    counts c;
    memset(&c, 0, sizeof c);
    c.fp = calloc(FP_LOOPS, sizeof *c.fp); /* without it, the traffic reads 0 */
    if (c.fp) {
        c.fp[0].ext = 1;
        c.nfp = 1;
    }
    walk(f->body, 1.0, &c, 0);
    /* the cache sizes the target knows, else a common x86 core's */
    static const int64_t dflt[3] = {32 << 10, 1 << 20, 32 << 20};
    double t[3];
    for (int i = 0; i < 3; i++) {
        int64_t cap = kiln_target_cache_bytes(target, i + 1);
        t[i] = c.fp ? traffic(&c, 0, (double)(cap > 0 ? cap : dflt[i]), 0) : 0;
    }
    free(c.fp);
    double v[TUNE_TIR_FEATS] = {log2(1 + c.par),
                                c.loops,
                                log2(1 + c.stores),
                                log2(1 + c.loads),
                                c.ifs,
                                log2(1 + c.dyn_stores),
                                log2(1 + c.dyn_loads),
                                log2(1 + c.dyn_flops),
                                c.dyn_flops / (c.dyn_loads + 1),
                                c.lanes,
                                log2(1 + c.local),
                                log2(1 + t[0]),
                                log2(1 + t[1]),
                                log2(1 + t[2]),
                                c.dyn_flops / (t[0] + 1),
                                c.dyn_flops / (t[2] + 1)};
    for (int i = 0; i < TUNE_TIR_FEATS; i++)
        out[i] = (float)v[i];
}
