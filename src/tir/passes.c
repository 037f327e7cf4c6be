/* passes.c: loop passes over flat loop IR. Unrolling replaces a loop of
 * constant extent by copies of its body; vectorizing turns a loop of
 * constant extent into one vector statement of RAMP/BROADCAST expressions,
 * or leaves it serial when the body cannot be vectorized safely. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tir.h"

/* Largest body copies * extent an unrolled loop may produce. */
#define UNROLL_MAX_EXTENT 64

/* ---- unroll -------------------------------------------------------------- */

static tir_node unroll_fn(tir_node n, void *user) {
    kiln_ctx *ctx = user;
    if (n->op != TIR_FOR || n->aux != TIR_FOR_UNROLLED)
        return n;
    int64_t mn, ext;
    if (!tir_const_int(n->src[1], &mn) || !tir_const_int(n->src[2], &ext) ||
        ext > UNROLL_MAX_EXTENT) {
        /* non-constant: keep it an unrolled loop for the renderer's pragma */
        return n;
    }
    if (ext <= 0)
        return tir_nop(ctx);
    tir_node *copies = malloc(sizeof(tir_node) * (size_t)ext);
    KILN_ASSERT(copies);
    tir_node var = n->src[0];
    for (int64_t i = 0; i < ext; i++) {
        tir_node v = tir_int(ctx, (kiln_dtype)var->dtype, mn + i);
        copies[i] = tir_substitute(n->src[3], 1, &var, &v);
    }
    tir_node r = tir_seq(ctx, (int)ext, copies);
    free(copies);
    return r;
}

tir_node tir_unroll(kiln_ctx *ctx, tir_node s) {
    return tir_rewrite(s, unroll_fn, ctx);
}

/* ---- vectorize ------------------------------------------------------------------ */

typedef struct {
    kiln_ctx *ctx;
    tir_node var;  /* the loop variable */
    tir_node ramp; /* its vector value: ramp(min, 1, lanes) */
    int lanes;
    int failed;
    tir_map done;  /* each expression's vector form: shared subtrees are made once */
    tir_node mask; /* a tail's lanes: loads and stores that move with var keep to them */
} vec_ctx;

static tir_node widen(vec_ctx *v, tir_node e) {
    return e->lanes == 1 ? tir_broadcast(e, v->lanes) : e;
}

static tir_node vec_node(vec_ctx *v, tir_node e, const tir_node *src);

/* Vector form of expression e (e itself if it does not use the loop var).
 * Expressions are DAGs: each node is made once (an elementwise chain that
 * reads a value twice per step doubles at every step as a tree). */
static tir_node vec_expr(vec_ctx *v, tir_node e) {
    if (v->failed)
        return e;
    if (e == v->var)
        return v->ramp;
    tir_node hit = tir_map_get(&v->done, e);
    if (hit)
        return hit;
    tir_node src[8], r = e;
    if (e->nsrc > 8) {
        if (tir_uses_var(e, v->var))
            v->failed = 1;
    } else {
        int uses = 0;
        for (uint32_t i = 0; i < e->nsrc && !v->failed; i++) {
            src[i] = vec_expr(v, e->src[i]);
            uses |= src[i] != e->src[i];
        }
        if (uses && !v->failed)
            r = vec_node(v, e, src);
    }
    if (!v->failed)
        tir_map_put(&v->done, e, r);
    return r;
}

/* Vector form of e, which uses the loop var, from its sources' (src). */
static tir_node vec_node(vec_ctx *v, tir_node e, const tir_node *src) {
    if (e->lanes != 1) {
        v->failed = 1;
        return e;
    }
    switch (e->op) {
    case TIR_LOAD:
        if (src[1]->lanes == 1)
            return e;
        return v->mask ? tir_load_masked(v->ctx, src[0], src[1], v->mask)
                       : tir_load(v->ctx, src[0], src[1]);
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_DIV:
    case TIR_MOD:
    case TIR_FLOORDIV:
    case TIR_FLOORMOD:
    case TIR_MIN:
    case TIR_MAX:
    case TIR_EQ:
    case TIR_NE:
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE:
    case TIR_AND:
    case TIR_OR: return tir_bin((tir_op)e->op, widen(v, src[0]), widen(v, src[1]));
    case TIR_NOT: return tir_not(src[0]);
    case TIR_SELECT: return tir_select(widen(v, src[0]), widen(v, src[1]), widen(v, src[2]));
    case TIR_CAST:
        return tir_make(v->ctx, TIR_CAST, (kiln_dtype)e->dtype, v->lanes, 0, 0, 0, NULL, NULL, 1,
                        src);
    case TIR_CALL: {
        tir_node w[8];
        for (uint32_t i = 0; i < e->nsrc; i++)
            w[i] = widen(v, src[i]);
        return tir_call(v->ctx, (tir_intrin)e->aux, (kiln_dtype)e->dtype, v->lanes, (int)e->nsrc,
                        w);
    }
    case TIR_CHECK: /* reports per element (the renderer's status): the loop stays serial */
    default: v->failed = 1; return e;
    }
}

/* Vector form of a statement; sets failed when it cannot be vectorized. */
static tir_node vec_stmt(vec_ctx *v, tir_node s) {
    if (v->failed)
        return s;
    switch (s->op) {
    case TIR_SEQ: {
        tir_node *out = malloc(sizeof(tir_node) * (s->nsrc ? s->nsrc : 1));
        KILN_ASSERT(out);
        for (uint32_t i = 0; i < s->nsrc; i++)
            out[i] = vec_stmt(v, s->src[i]);
        tir_node r = tir_seq(v->ctx, (int)s->nsrc, out);
        free(out);
        return r;
    }
    case TIR_STORE: {
        /* A store whose address does not move with the loop var would be
           repeated by every lane: only a vector address is safe. */
        if (!tir_uses_var(s->src[1], v->var)) {
            v->failed = 1;
            return s;
        }
        tir_node idx = vec_expr(v, s->src[1]);
        tir_node val = vec_expr(v, s->src[2]);
        if (v->failed)
            return s;
        return v->mask ? tir_store_masked(s->src[0], idx, widen(v, val), v->mask)
                       : tir_store(s->src[0], idx, widen(v, val));
    }
    case TIR_IF:
        /* a condition that varies across lanes needs masking: stay serial */
        if (tir_uses_var(s->src[0], v->var)) {
            v->failed = 1;
            return s;
        }
        return tir_if(s->src[0], vec_stmt(v, s->src[1]),
                      s->nsrc > 2 ? vec_stmt(v, s->src[2]) : NULL);
    default: v->failed = 1; return s;
    }
}

static int lanes_ok(int64_t n) {
    return n == 2 || n == 4 || n == 8 || n == 16 || n == 32 || n == 64;
}

/* 1 if e is affine in v: v enters only through +, - and products with
 * factors free of v. */
static int affine_in(tir_node e, tir_node v) {
    if (!tir_uses_var(e, v) || e == v)
        return 1;
    switch (e->op) {
    case TIR_ADD:
    case TIR_SUB: return affine_in(e->src[0], v) && affine_in(e->src[1], v);
    case TIR_MUL:
        return (!tir_uses_var(e->src[0], v) && affine_in(e->src[1], v)) ||
               (!tir_uses_var(e->src[1], v) && affine_in(e->src[0], v));
    case TIR_CAST: return tir_is_int_dtype((kiln_dtype)e->dtype) && affine_in(e->src[0], v);
    default: return 0;
    }
}

/* 1 if cond is a conjunction of comparisons of affine expressions in v:
 * the v that satisfy it form one interval, so it holds on a whole vector of
 * lanes iff it holds at the first and the last lane. */
static int interval_cond(tir_node c, tir_node v) {
    switch (c->op) {
    case TIR_AND: return interval_cond(c->src[0], v) && interval_cond(c->src[1], v);
    case TIR_LT:
    case TIR_LE:
    case TIR_GT:
    case TIR_GE: return affine_in(c->src[0], v) && affine_in(c->src[1], v);
    default: return !tir_uses_var(c, v);
    }
}

/* The tail of a guarded vector loop n (body: if (cond) stmt): stmt with
 * its loads and stores that move with the loop var masked to the lanes
 * where cond holds, run when some lane does. Loads that do not move with
 * it are read as the serial loop reads them, once a lane runs. The serial
 * loop where masking fails. */
/* The lanes of a vector loop (var from v0, `lanes` lanes) where c holds, as
 * a BOOL vector. A comparison whose sides differ by +-var plus a term free
 * of var holds on a prefix or a suffix of the lanes: it becomes the lane
 * number (an int32 ramp from 0) against a count clamped to [0, lanes], so
 * the mask costs one narrow compare; anything else is c in vector form. */
static tir_node lane_mask(vec_ctx *m, tir_node c, tir_node v0) {
    kiln_ctx *ctx = m->ctx;
    tir_node var = m->var;
    int L = m->lanes;
    if (c->op == TIR_AND)
        return tir_bin(TIR_AND, lane_mask(m, c->src[0], v0), lane_mask(m, c->src[1], v0));
    if (!tir_uses_var(c, var))
        return tir_broadcast(c, L);
    int op = c->op;
    if ((op == TIR_LT || op == TIR_LE || op == TIR_GT || op == TIR_GE) &&
        c->src[0]->dtype == var->dtype && c->src[0]->lanes == 1) {
        /* d < 0 (or <= 0) with d = lhs - rhs, or rhs - lhs for > and >= */
        int gt = op == TIR_GT || op == TIR_GE, strict = op == TIR_LT || op == TIR_GT;
        tir_node d = gt ? tir_sub(c->src[1], c->src[0]) : tir_sub(c->src[0], c->src[1]);
        tir_node v1 = tir_add(v0, tir_int(ctx, (kiln_dtype)var->dtype, 1));
        tir_node d0 = tir_simplify(NULL, tir_substitute(d, 1, &var, &v0));
        int64_t step;
        if (tir_const_int(tir_simplify(NULL, tir_sub(tir_substitute(d, 1, &var, &v1), d0)),
                          &step) &&
            (step == 1 || step == -1)) {
            kiln_dtype it = (kiln_dtype)var->dtype;
            /* step 1: lanes l < -d0 (+1 if not strict); step -1: l > d0 (-1 if not strict) */
            tir_node bound = step == 1 ? tir_sub(tir_int(ctx, it, strict ? 0 : 1), d0)
                                       : tir_sub(d0, tir_int(ctx, it, strict ? 0 : 1));
            bound = tir_bin(TIR_MIN, tir_bin(TIR_MAX, bound, tir_int(ctx, it, -1)),
                            tir_int(ctx, it, L));
            bound = tir_broadcast(tir_simplify(NULL, tir_cast(KILN_INT32, bound)), L);
            tir_node iota = tir_ramp(tir_int(ctx, KILN_INT32, 0), tir_int(ctx, KILN_INT32, 1), L);
            return step == 1 ? tir_bin(TIR_LT, iota, bound) : tir_bin(TIR_GT, iota, bound);
        }
    }
    return vec_expr(m, c);
}

static tir_node masked_tail(const vec_ctx *fast, tir_node n, tir_node body, tir_node serial) {
    kiln_ctx *ctx = fast->ctx;
    tir_node var = fast->var, cond = body->src[0];
    vec_ctx m = {ctx, var, fast->ramp, fast->lanes, 0, {0}, NULL};
    tir_node mask = lane_mask(&m, cond, n->src[1]);
    tir_map_free(&m.done);
    if (m.failed || mask->lanes != fast->lanes)
        return serial;
    vec_ctx w = {ctx, var, fast->ramp, fast->lanes, 0, {0}, mask};
    tir_node r = vec_stmt(&w, body->src[1]);
    tir_map_free(&w.done);
    if (w.failed)
        return serial;
    tir_node any = NULL;
    for (int l = 0; l < fast->lanes; l++) {
        tir_node at = tir_add(n->src[1], tir_int(ctx, (kiln_dtype)var->dtype, l));
        tir_node c = tir_substitute(cond, 1, &var, &at);
        any = any ? tir_bin(TIR_OR, any, c) : c;
    }
    return tir_if(any, r, NULL);
}

static tir_node vectorize_fn(tir_node n, void *user) {
    kiln_ctx *ctx = user;
    if (n->op != TIR_FOR || n->aux != TIR_FOR_VECTORIZED)
        return n;
    int64_t ext;
    tir_node var = n->src[0], body = n->src[3];
    tir_node serial = tir_for(var, n->src[1], n->src[2], TIR_FOR_SERIAL, NULL, body);
    if (!tir_const_int(n->src[2], &ext) || !lanes_ok(ext))
        return serial;
    vec_ctx v = {ctx, var, NULL, (int)ext, 0, {0}, NULL};
    v.ramp = tir_ramp(n->src[1], tir_int(ctx, (kiln_dtype)var->dtype, 1), (int)ext);
    /* A guard over the lanes (a split that does not divide): run the
       vector body when every lane passes, else (the tail) the same body
       with its loads and stores masked to the lanes that pass, when any
       does, or the serial loop if it cannot be masked. */
    if (body->op == TIR_IF && body->nsrc == 2 && tir_uses_var(body->src[0], var) &&
        interval_cond(body->src[0], var)) {
        tir_node r = vec_stmt(&v, body->src[1]);
        tir_map_free(&v.done);
        if (v.failed)
            return serial;
        tir_node last = tir_add(n->src[1], tir_int(ctx, (kiln_dtype)var->dtype, ext - 1));
        tir_node all = tir_bin(TIR_AND, tir_substitute(body->src[0], 1, &var, &n->src[1]),
                               tir_substitute(body->src[0], 1, &var, &last));
        return tir_if(all, r, masked_tail(&v, n, body, serial));
    }
    tir_node r = vec_stmt(&v, body);
    tir_map_free(&v.done);
    return v.failed ? serial : r;
}

tir_node tir_vectorize(kiln_ctx *ctx, tir_node s) {
    return tir_rewrite(s, vectorize_fn, ctx);
}

/* ---- horizontal reductions ---------------------------------------------------- */

typedef struct {
    kiln_ctx *ctx;
    tir_set local; /* buffers allocated with scope "local" */
} horiz_ctx;

static void collect_local(horiz_ctx *H, tir_node s, tir_set *seen) {
    if (tir_set_add(seen, s) || !tir_is_stmt(s))
        return;
    if (s->op == TIR_ALLOCATE && s->name && !strcmp(s->name, "local"))
        tir_set_add(&H->local, s->src[0]);
    for (uint32_t i = 0; i < s->nsrc; i++)
        collect_local(H, s->src[i], seen);
}

/* 1 if every load in x that moves with v reads a local buffer at
   consecutive elements (v's coefficient 1): the partial lanes of a row
   reduction, not the products of a convolution's channel loop, whose
   order of additions the schedule keeps */
static int local_lanes(const horiz_ctx *H, tir_node x, tir_node v, int *budget) {
    if (--*budget < 0)
        return 0;
    if (!tir_uses_var(x, v))
        return 1;
    if (x->op == TIR_LOAD) {
        tir_node one = tir_int(v->ctx, (kiln_dtype)v->dtype, 1), v1 = tir_add(v, one);
        int64_t d;
        if (x->nsrc != 2 || !tir_set_has(&H->local, x->src[0]) ||
            !tir_const_int(
                tir_simplify(NULL, tir_sub(tir_substitute(x->src[1], 1, &v, &v1), x->src[1])),
                &d) ||
            d != 1)
            return 0;
        return 1;
    }
    for (uint32_t i = 0; i < x->nsrc; i++)
        if (!local_lanes(H, x->src[i], v, budget))
            return 0;
    return 1;
}

/* for v in [m, m + L): acc[c] = acc[c] OP x(v), OP + (any type), max or
   min (float), acc read nowhere else in x, c not using v, x's loads
   local_lanes */
static tir_node horizontal_fn(tir_node n, void *user) {
    horiz_ctx *H = user;
    kiln_ctx *ctx = H->ctx;
    int64_t ext;
    if (n->op != TIR_FOR || n->aux != TIR_FOR_SERIAL || !tir_const_int(n->src[2], &ext) ||
        !lanes_ok(ext) || ext < 4)
        return n;
    tir_node var = n->src[0], st = n->src[3];
    if (st->op != TIR_STORE || st->nsrc != 3 || st->src[1]->lanes != 1 ||
        tir_uses_var(st->src[1], var))
        return n;
    tir_node acc = st->src[0], val = st->src[2];
    tir_intrin h = val->op == TIR_ADD ? TIR_HSUM : val->op == TIR_MAX ? TIR_HMAX : TIR_HMIN;
    if ((val->op != TIR_ADD && val->op != TIR_MAX && val->op != TIR_MIN) || val->lanes != 1 ||
        (val->op != TIR_ADD && !tir_is_float_dtype((kiln_dtype)val->dtype)))
        return n;
    int self = -1;
    for (int i = 0; i < 2; i++) {
        tir_node a = val->src[i];
        if (a->op == TIR_LOAD && a->nsrc == 2 && a->src[0] == acc && a->src[1] == st->src[1])
            self = i;
    }
    tir_node x = self < 0 ? NULL : val->src[1 - self];
    int budget = 256;
    if (!x || !tir_uses_var(x, var) || tir_uses_var(x, acc) || !local_lanes(H, x, var, &budget))
        return n;
    vec_ctx v = {ctx, var, NULL, (int)ext, 0, {0}, NULL};
    v.ramp = tir_ramp(n->src[1], tir_int(ctx, (kiln_dtype)var->dtype, 1), (int)ext);
    tir_node xv = vec_expr(&v, x);
    tir_map_free(&v.done);
    if (v.failed || xv->lanes != ext)
        return n;
    tir_node r = tir_call(ctx, h, (kiln_dtype)val->dtype, 1, 1, &xv);
    return tir_store(acc, st->src[1], tir_bin((tir_op)val->op, val->src[self], r));
}

tir_node tir_horizontal(kiln_ctx *ctx, tir_node s) {
    horiz_ctx H = {ctx, {0}};
    tir_set seen = {0};
    collect_local(&H, s, &seen);
    tir_set_free(&seen);
    tir_node r = H.local.count ? tir_rewrite(s, horizontal_fn, &H) : s;
    tir_set_free(&H.local);
    return r;
}

/* ---- lane legalization --------------------------------------------------------
 * A vector wider than the target's registers is split into register-wide
 * pieces: every vector op is per lane, so piece c of an expression is the
 * same op over piece c of its operands. gcc compiles register-wide vector
 * types well and wider ones poorly. */

typedef struct {
    kiln_ctx *ctx;
    int max_bytes;
} legal_ctx;

/* Lanes [c*w, c*w + w) of e. */
static tir_node piece(kiln_ctx *ctx, tir_node e, int c, int w) {
    if (e->lanes == 1)
        return e;
    switch (e->op) {
    case TIR_RAMP: {
        tir_node off =
            tir_mul(e->src[1], tir_int(ctx, (kiln_dtype)e->src[1]->dtype, (int64_t)c * w));
        return tir_ramp(tir_add(e->src[0], off), e->src[1], w);
    }
    case TIR_BROADCAST: return tir_broadcast(e->src[0], w);
    case TIR_LOAD:
        return e->nsrc > 2 ? tir_load_masked(ctx, e->src[0], piece(ctx, e->src[1], c, w),
                                             piece(ctx, e->src[2], c, w))
                           : tir_load(ctx, e->src[0], piece(ctx, e->src[1], c, w));
    default: {
        tir_node src[8];
        KILN_ASSERT(e->nsrc <= 8);
        for (uint32_t i = 0; i < e->nsrc; i++)
            src[i] = piece(ctx, e->src[i], c, w);
        return tir_make(ctx, (tir_op)e->op, (kiln_dtype)e->dtype, w, e->aux, e->ival, e->fval,
                        e->name, e->ptr, (int)e->nsrc, src);
    }
    }
}

static tir_node legalize_fn(tir_node n, void *user) {
    legal_ctx *lc = user;
    if (n->op != TIR_STORE || n->src[2]->lanes == 1)
        return n;
    int lanes = n->src[2]->lanes;
    int esz = (int)kiln_dtype_size((kiln_dtype)n->src[2]->dtype);
    int w = lanes;
    while (w > 1 && w * esz > lc->max_bytes)
        w /= 2;
    if (w == lanes || lanes % w)
        return n;
    int np = lanes / w;
    tir_node *parts = malloc(sizeof(tir_node) * (size_t)np);
    KILN_ASSERT(parts);
    for (int c = 0; c < np; c++) {
        tir_node idx = piece(lc->ctx, n->src[1], c, w), val = piece(lc->ctx, n->src[2], c, w);
        parts[c] = n->nsrc > 3
                       ? tir_store_masked(n->src[0], idx, val, piece(lc->ctx, n->src[3], c, w))
                       : tir_store(n->src[0], idx, val);
    }
    tir_node r = tir_seq(lc->ctx, np, parts);
    free(parts);
    return r;
}

tir_node tir_legalize_lanes(kiln_ctx *ctx, tir_node s, int max_bytes) {
    if (max_bytes <= 0)
        return s;
    legal_ctx lc = {ctx, max_bytes};
    return tir_rewrite(s, legalize_fn, &lc);
}

/* ---- truncating division where it is floor division --------------------------
 * floordiv/floormod need a sign fix-up that C's / and % lack; when the
 * dividend is provably >= 0 and the divisor a positive constant, the two
 * agree, and plain / and % are cheaper and let the C compiler hoist index
 * arithmetic out of inner loops (the fix-up's branches defeat that). Loop
 * variables are bound to their ranges first: each var has one loop, so all
 * can be bound at once. */

static void bind_loops(tir_analyzer *an, tir_node s) {
    if (s->op == TIR_FOR) {
        int64_t mn, ext;
        if (tir_const_int(s->src[1], &mn) && tir_const_int(s->src[2], &ext) && ext > 0)
            tir_analyzer_bind(an, s->src[0], mn, mn + ext - 1);
        else if (tir_const_int(s->src[1], &mn) && mn >= 0) /* a symbolic extent: v >= mn */
            tir_analyzer_bind(an, s->src[0], mn, INT64_MAX);
        bind_loops(an, s->src[3]);
    } else if (s->op == TIR_SEQ) {
        for (uint32_t i = 0; i < s->nsrc; i++)
            bind_loops(an, s->src[i]);
    } else if (s->op == TIR_IF) {
        for (uint32_t i = 1; i < s->nsrc; i++)
            bind_loops(an, s->src[i]);
    } else if (s->op == TIR_ALLOCATE) {
        bind_loops(an, s->src[2]);
    }
}

static tir_node divmod_fn(tir_node n, void *user) {
    if ((n->op != TIR_FLOORDIV && n->op != TIR_FLOORMOD) || n->lanes != 1 ||
        (n->dtype != KILN_INT64 && n->dtype != KILN_INT32))
        return n;
    int64_t d, lo, hi;
    if (!tir_const_int(n->src[1], &d) || d <= 0)
        return n;
    tir_const_bound((tir_analyzer *)user, n->src[0], &lo, &hi);
    if (lo < 0)
        return n;
    return tir_bin(n->op == TIR_FLOORDIV ? TIR_DIV : TIR_MOD, n->src[0], n->src[1]);
}

tir_node tir_truncate_divmod(kiln_ctx *ctx, tir_node s) {
    tir_analyzer *an = tir_analyzer_new(ctx);
    if (!an)
        return s;
    bind_loops(an, s);
    tir_node r = tir_rewrite(s, divmod_fn, an);
    tir_analyzer_free(an);
    return r;
}

/* ---- unswitching guards that a loop nest does not change ----------------------
 * A split whose factor does not divide its extent, or a tile that does not
 * divide the output, leaves guards in the nest: `if (f % 7 * 32 + 31 < 197)`
 * around each vector statement, with a scalar loop in the else. When such a
 * condition depends only on variables bound outside a loop's body (the
 * loop's own variable and those around it), and sits inside a loop nested
 * in that body, the body is emitted twice: once under the conjunction of
 * those conditions, with each of them true (no guards, so the C compiler
 * keeps the accumulators in registers), and once as it was, for the
 * iterations where some guard fails (the tail tiles). The copy that runs
 * in the tail is not unswitched again, so a nest grows at most twice per
 * level. Conditions that read memory or call functions stay where they
 * are. */

#define UNSWITCH_MAX_CONDS 64
#define UNSWITCH_MAX_STMTS 4096

typedef struct {
    kiln_ctx *ctx;
    tir_node inner[64]; /* loop variables bound inside the body */
    int ninner, overflow;
    tir_node conds[UNSWITCH_MAX_CONDS];
    int nconds, nested_hit, nstmts;
} unswitch_scan;

static int pure_index_expr(tir_node e, tir_set *seen) {
    if (tir_set_add(seen, e))
        return 1;
    if (e->op == TIR_LOAD || e->op == TIR_CALL || e->op == TIR_CHECK || e->op == TIR_TENSOR_READ ||
        e->op == TIR_REDUCE || e->lanes != 1)
        return 0;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!pure_index_expr(e->src[i], seen))
            return 0;
    return 1;
}

static void collect_inner_vars(unswitch_scan *u, tir_node s) {
    if (++u->nstmts > UNSWITCH_MAX_STMTS)
        return;
    switch (s->op) {
    case TIR_FOR: {
        int have = 0;
        for (int i = 0; i < u->ninner; i++)
            have |= u->inner[i] == s->src[0];
        if (!have && u->ninner < 64)
            u->inner[u->ninner++] = s->src[0];
        else if (!have)
            u->overflow = 1;
        collect_inner_vars(u, s->src[3]);
    } break;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            collect_inner_vars(u, s->src[i]);
        break;
    case TIR_IF:
        for (uint32_t i = 1; i < s->nsrc; i++)
            collect_inner_vars(u, s->src[i]);
        break;
    case TIR_ALLOCATE: collect_inner_vars(u, s->src[2]); break;
    default: break;
    }
}

static int invariant_cond(const unswitch_scan *u, tir_node c) {
    if (c->dtype != KILN_BOOL || tir_is_const(c))
        return 0;
    tir_set seen = {0};
    int ok = pure_index_expr(c, &seen);
    tir_set_free(&seen);
    for (int i = 0; ok && i < u->ninner; i++)
        ok = !tir_uses_var(c, u->inner[i]);
    return ok;
}

/* c's conjuncts (split at &&) added to conds[0, *n), each once, up to cap
   of them; returns 1 if some did not fit */
static int put_conjuncts(tir_node *conds, int *n, int cap, tir_node c) {
    if (c->op == TIR_AND)
        return put_conjuncts(conds, n, cap, c->src[0]) | put_conjuncts(conds, n, cap, c->src[1]);
    for (int i = 0; i < *n; i++)
        if (conds[i] == c)
            return 0;
    if (*n == cap)
        return 1;
    conds[(*n)++] = c;
    return 0;
}

/* past the cap the rest stay guards in the fast copy: any subset of the
   conditions is a correct one to unswitch on */
static void add_conjuncts(unswitch_scan *u, tir_node c) {
    put_conjuncts(u->conds, &u->nconds, UNSWITCH_MAX_CONDS, c);
}

/* depth: the loops of the body around s */
static void collect_conds(unswitch_scan *u, tir_node s, int depth) {
    switch (s->op) {
    case TIR_FOR: collect_conds(u, s->src[3], depth + 1); break;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            collect_conds(u, s->src[i], depth);
        break;
    case TIR_ALLOCATE: collect_conds(u, s->src[2], depth); break;
    case TIR_IF: {
        tir_node c = s->src[0];
        if (invariant_cond(u, c)) {
            add_conjuncts(u, c);
            if (depth > 0)
                u->nested_hit = 1;
            collect_conds(u, s->src[1], depth); /* the else: dead when c holds */
        } else {
            for (uint32_t i = 1; i < s->nsrc; i++)
                collect_conds(u, s->src[i], depth);
        }
        break;
    }
    default: break;
    }
}

typedef struct {
    const tir_node *conds;
    int n;
} cond_subst;

/* each conjunct becomes true; the simplifier then drops the guards */
static tir_node subst_cond_fn(tir_node n, void *user) {
    const cond_subst *cs = user;
    int64_t c;
    if (n->op == TIR_IF && tir_const_int(n->src[0], &c) && c)
        return n->src[1];
    for (int i = 0; i < cs->n; i++)
        if (n == cs->conds[i])
            return tir_int(n->ctx, KILN_BOOL, 1);
    return n;
}

static tir_node unswitch_stmt(kiln_ctx *ctx, tir_node s, int in_tail);

static tir_node unswitch_body(kiln_ctx *ctx, tir_node loop, int in_tail) {
    tir_node body = loop->src[3];
    if (!in_tail) {
        unswitch_scan u;
        memset(&u, 0, sizeof u);
        u.ctx = ctx;
        collect_inner_vars(&u, body);
        if (!u.overflow && u.nstmts <= UNSWITCH_MAX_STMTS) {
            collect_conds(&u, body, 0);
            if (u.nconds && u.nested_hit && !u.overflow) {
                tir_node all = u.conds[0];
                for (int i = 1; i < u.nconds; i++)
                    all = tir_bin(TIR_AND, all, u.conds[i]);
                cond_subst cs = {u.conds, u.nconds};
                tir_node fast = tir_rewrite(body, subst_cond_fn, &cs);
                return tir_if(all, unswitch_stmt(ctx, fast, 0), unswitch_stmt(ctx, body, 1));
            }
        }
    }
    return unswitch_stmt(ctx, body, in_tail);
}

static tir_node unswitch_stmt(kiln_ctx *ctx, tir_node s, int in_tail) {
    switch (s->op) {
    case TIR_FOR: {
        tir_node src[4] = {s->src[0], s->src[1], s->src[2], unswitch_body(ctx, s, in_tail)};
        return tir_with_src(s, 4, src);
    }
    case TIR_SEQ:
    case TIR_IF:
    case TIR_ALLOCATE: {
        tir_node src[64];
        tir_node *buf = s->nsrc <= 64 ? src : malloc(sizeof(tir_node) * s->nsrc);
        KILN_ASSERT(buf);
        int first = s->op == TIR_SEQ ? 0 : s->op == TIR_IF ? 1 : 2;
        for (uint32_t i = 0; i < s->nsrc; i++)
            buf[i] = (int)i >= first ? unswitch_stmt(ctx, s->src[i], in_tail) : s->src[i];
        tir_node r = tir_with_src(s, (int)s->nsrc, buf);
        if (buf != src)
            free(buf);
        return r;
    }
    default: return s;
    }
}

/* ---- peeling the last iterations of a loop whose guards they fail ----------------
 * A serial loop of constant extent E whose body holds guards that depend on
 * its variable alone (`k_outer * 32 + 31 < 197`: the column panel cut
 * short) runs its first P iterations with every such guard true and its
 * last ones (E - P <= 2) with some false. Those last iterations are peeled
 * off, each a copy of the body at a constant value of the variable, which
 * the simplifier then folds: their guards and masks become constants and
 * the vector tails straight-line code, instead of the unswitched tail,
 * which kept every guard inside its inner loops (ViT's attention scores
 * with 197 keys ran a seventh of their panels that way at a fraction of
 * the speed). The first P iterations keep the body with those guards true.
 * Runs before unswitching, which then handles the guards left. */

#define PEEL_MAX_EXTENT 64
#define PEEL_MAX_TAIL 2
/* a panel of 5 vectors by 2 rows, each vector's guard and its masked
   tail's any-lane test, is some 40 distinct conditions */
#define PEEL_MAX_CONDS 128

typedef struct {
    tir_node conds[PEEL_MAX_CONDS];
    int n, overflow;
} peel_conds;

/* the guards (IF conditions, conjunct by conjunct) of statement s that use
   v; *nested set when one sits inside a loop of the body (depth > 0):
   without one, peeling saves a branch per iteration at most */
static void peel_collect(peel_conds *pc, tir_node s, tir_node v, int depth, int *nested,
                         int *budget) {
    if (--*budget < 0)
        return;
    switch (s->op) {
    case TIR_FOR: peel_collect(pc, s->src[3], v, depth + 1, nested, budget); break;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            peel_collect(pc, s->src[i], v, depth, nested, budget);
        break;
    case TIR_ALLOCATE: peel_collect(pc, s->src[2], v, depth, nested, budget); break;
    case TIR_IF: {
        tir_set seen = {0};
        if (s->src[0]->dtype == KILN_BOOL && tir_uses_var(s->src[0], v) &&
            pure_index_expr(s->src[0], &seen)) {
            pc->overflow |= put_conjuncts(pc->conds, &pc->n, PEEL_MAX_CONDS, s->src[0]);
            *nested |= depth > 0;
        }
        tir_set_free(&seen);
        for (uint32_t i = 1; i < s->nsrc; i++)
            peel_collect(pc, s->src[i], v, depth, nested, budget);
    } break;
    default: break;
    }
}

/* c at v = value: 1 true, 0 false, -1 when it does not fold to a constant
   (it reads another variable) */
static int peel_eval(tir_node c, tir_node v, int64_t value) {
    tir_node k = tir_int(v->ctx, (kiln_dtype)v->dtype, value);
    int64_t r;
    return tir_const_int(tir_simplify(NULL, tir_substitute(c, 1, &v, &k)), &r) ? r != 0 : -1;
}

static tir_node peel_loop(kiln_ctx *ctx, tir_node loop) {
    int64_t mn, ext;
    if (loop->op != TIR_FOR || loop->aux == TIR_FOR_PARALLEL || loop->aux == TIR_FOR_THREAD ||
        !tir_const_int(loop->src[1], &mn) || !tir_const_int(loop->src[2], &ext) || ext < 2 ||
        ext > PEEL_MAX_EXTENT)
        return loop;
    tir_node v = loop->src[0];
    peel_conds all = {{0}, 0, 0}, mine = {{0}, 0, 0};
    int budget = UNSWITCH_MAX_STMTS, nested = 0;
    peel_collect(&all, loop->src[3], v, 0, &nested, &budget);
    if (all.overflow || budget < 0 || !nested)
        return loop;
    /* the guards on v alone, and the iterations where all of them hold */
    int64_t first_false = ext;
    for (int i = 0; i < all.n; i++) {
        int ok = 1;
        for (int64_t k = 0; k < ext && ok; k++)
            ok = peel_eval(all.conds[i], v, mn + k) >= 0;
        if (ok)
            mine.conds[mine.n++] = all.conds[i];
    }
    for (int64_t k = 0; k < ext && first_false == ext; k++)
        for (int i = 0; i < mine.n; i++)
            if (!peel_eval(mine.conds[i], v, mn + k))
                first_false = k;
    if (!mine.n || first_false == 0 || ext - first_false > PEEL_MAX_TAIL)
        return loop;
    tir_node parts[1 + PEEL_MAX_TAIL];
    cond_subst cs = {mine.conds, mine.n};
    tir_node fast = tir_rewrite(loop->src[3], subst_cond_fn, &cs);
    parts[0] = tir_for(v, loop->src[1], tir_i64(ctx, first_false), (tir_for_kind)loop->aux,
                       loop->name, fast);
    for (int64_t k = first_false; k < ext; k++) {
        tir_node c = tir_int(ctx, (kiln_dtype)v->dtype, mn + k);
        parts[1 + k - first_false] = tir_substitute(loop->src[3], 1, &v, &c);
    }
    return tir_seq(ctx, (int)(1 + ext - first_false), parts);
}

static tir_node peel_fn(tir_node n, void *user) {
    return peel_loop((kiln_ctx *)user, n);
}

tir_node tir_unswitch(kiln_ctx *ctx, tir_node s) {
    return tir_rewrite(unswitch_stmt(ctx, s, 0), peel_fn, ctx);
}
