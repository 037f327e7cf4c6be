/* features.c: what the cost model knows of a candidate besides its knob
 * values, read from its lowered loop nest (tune_internal.h): the parallel
 * extent; the loops, stores, loads and guards as written (the unrolled
 * code's size); as executed, the stores, loads and floating-point
 * operations, each weighted by the extents of the loops around it; their
 * ratio (the intensity at the registers); the widest vector; the local
 * buffers' bytes. Counts span orders of magnitude, so most are log2. */
#include <math.h>
#include <string.h>

#include "tune_internal.h"

typedef struct {
    double par, loops, stores, loads, ifs, dyn_stores, dyn_loads, dyn_flops, lanes, local;
} counts;

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
        walk(s->src[3], mult * ext, c, depth + 1);
        break;
    }
    case TIR_STORE:
        c->stores++;
        c->dyn_stores += mult;
        if (s->src[2]->lanes > c->lanes)
            c->lanes = s->src[2]->lanes;
        walk_expr(s->src[1], mult, c, depth + 1);
        walk_expr(s->src[2], mult, c, depth + 1);
        break;
    case TIR_ALLOCATE: {
        int64_t n = 0;
        if (!strcmp(s->name ? s->name : "", "local") && tir_const_int(s->src[1], &n))
            c->local += (double)n * (double)kiln_dtype_size((kiln_dtype)s->src[0]->aux);
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

void tune_tir_features(const tir_func *f, float out[TUNE_TIR_FEATS]) {
    counts c;
    memset(&c, 0, sizeof c);
    walk(f->body, 1.0, &c, 0);
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
                                log2(1 + c.local)};
    for (int i = 0; i < TUNE_TIR_FEATS; i++)
        out[i] = (float)v[i];
}
