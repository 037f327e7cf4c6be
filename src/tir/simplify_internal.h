/* simplify_internal.h: what the simplifier's two files share.
 *
 * simplify_bound.c holds the analyzer, integer intervals, the bounds of an
 * expression and the linear form; simplify.c holds the rewrite rules and the
 * driver and calls into simplify_bound.c, never the other way. The small
 * helpers on dtypes and constants are inline here so both files use one copy. */
#ifndef KILN_TIR_SIMPLIFY_INTERNAL_H
#define KILN_TIR_SIMPLIFY_INTERNAL_H

#include "tir.h"

#define NEG_INF INT64_MIN /* lower bound unknown */
#define POS_INF INT64_MAX /* upper bound unknown */

/* ---- the analyzer ---- */

typedef struct {
    tir_node var;
    int64_t lo, hi;
    tir_node ext; /* or, with lo 0: var < ext, a symbolic extent (hi unknown) */
} var_range;

/* the innermost binding of v, or NULL (also when an is NULL) */
KILN_HIDDEN var_range *tir_analyzer_find(const tir_analyzer *an, tir_node v);

/* ---- intervals ----
 * [lo, hi] inclusive; NEG_INF / POS_INF mean unbounded. */

typedef struct {
    int64_t lo, hi;
} itv;

#define ITV_ALL ((itv){NEG_INF, POS_INF})

static inline itv itv_make(int64_t lo, int64_t hi) {
    itv r = {lo, hi};
    if (r.lo == POS_INF)
        r.lo = NEG_INF; /* a lower bound that overflowed upward */
    if (r.hi == NEG_INF)
        r.hi = POS_INF;
    return r;
}

static inline int itv_finite(itv a) {
    return a.lo != NEG_INF && a.hi != POS_INF;
}

static inline itv dtype_range(kiln_dtype dt) {
    switch (dt) {
    case KILN_INT8: return itv_make(INT8_MIN, INT8_MAX);
    case KILN_UINT8: return itv_make(0, UINT8_MAX);
    case KILN_INT16: return itv_make(INT16_MIN, INT16_MAX);
    case KILN_UINT16: return itv_make(0, UINT16_MAX);
    case KILN_INT32: return itv_make(INT32_MIN, INT32_MAX);
    case KILN_UINT32: return itv_make(0, UINT32_MAX);
    case KILN_BOOL: return itv_make(0, 1);
    default: return ITV_ALL;
    }
}

/* ---- dtypes and constants ---- */

/* v converted to dt as C does (two's complement wrap; bool is v != 0) */
static inline int64_t wrap_dt(int64_t v, kiln_dtype dt) {
    switch (dt) {
    case KILN_INT8: return (int8_t)v;
    case KILN_UINT8: return (uint8_t)v;
    case KILN_INT16: return (int16_t)v;
    case KILN_UINT16: return (uint16_t)v;
    case KILN_INT32: return (int32_t)v;
    case KILN_UINT32: return (uint32_t)v;
    case KILN_BOOL: return v != 0;
    default: return v;
    }
}

/* integer types the rules reason about; uint64 (held as int64 bit patterns)
 * is left alone: the interval and linear-form reasoning is signed */
static inline int is_int(tir_node n) {
    return tir_is_int_dtype((kiln_dtype)n->dtype) && n->dtype != KILN_UINT64;
}
/* integer types whose arithmetic is assumed exact (no overflow) */
static inline int is_exact(tir_node n) {
    return n->dtype == KILN_INT32 || n->dtype == KILN_INT64;
}

/* 1 and *v if n is an integer constant, scalar or broadcast */
static inline int cint(tir_node n, int64_t *v) {
    if (n->op == TIR_BROADCAST)
        n = n->src[0];
    return tir_const_int(n, v);
}

/* ---- bounds ---- */

/* sound bounds of the integer expression e (the dtype's range when unknown) */
KILN_HIDDEN itv tir_bound(const tir_analyzer *an, tir_node e);
/* bounds of a - b taken as exact integers (shared terms cancel for exact types) */
KILN_HIDDEN itv tir_bound_diff(const tir_analyzer *an, tir_node a, tir_node b);
/* bounds of e, through its linear form for exact types */
KILN_HIDDEN itv tir_bound_exact(const tir_analyzer *an, tir_node e);
/* -1 unknown, else whether `a op b` holds for every value */
KILN_HIDDEN int tir_decide_cmp(const tir_analyzer *an, tir_op op, tir_node a, tir_node b);

/* ---- the linear form ----
 * An integer expression as k + sum(c_i * t_i) over distinct terms t_i (compared
 * by pointer), in order of first appearance. */

typedef struct {
    tir_node t;
    int64_t c;
} lterm;

typedef struct {
    kiln_dtype dt;
    int ok, n, cap;
    int64_t k;
    lterm *v;
    lterm small[8];
} lform;

/* f = the linear form of e (wrapped, div/mod pairs merged); returns f->ok.
 * f is to be freed with tir_lf_free whatever the result. */
KILN_HIDDEN int tir_lf_of(lform *f, tir_node e);
KILN_HIDDEN void tir_lf_free(lform *f);
/* f split by c > 0 into q (terms with multiples of c, divided) and r; see simplify_bound.c */
KILN_HIDDEN int tir_lf_split(const lform *f, int64_t c, lform *q, lform *r);
KILN_HIDDEN tir_node tir_lf_rebuild(kiln_ctx *ctx, const lform *f);
KILN_HIDDEN itv tir_lf_bound(const tir_analyzer *an, const lform *f);

#endif
