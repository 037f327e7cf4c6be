/* promote.c: keeping a loop's accumulators in registers (scalar
 * replacement). A local buffer that the C back end cannot promote as a
 * whole (some access has a variable index) may still be read and written at
 * a few fixed slots throughout a loop: a matmul row accumulated in place by
 * a k loop, and read by index afterwards (row fusion), or a vector of
 * partial maxima updated once per chunk. Each such slot becomes a buffer of
 * its own for the loop, copied in before it and back after; those slot
 * buffers have constant indices only, so the back end makes them
 * registers, and the loop carries no store-to-load chain through memory.
 * A slot accessed under one mask throughout (a vector tail) is copied in
 * and out under it. */
#include <stdlib.h>
#include <string.h>

#include "tir.h"

/* At most this many slots per loop: beyond the vector registers, the
 * copies would spill anyway. */
#define PROMOTE_MAX_SLOTS 32

typedef struct {
    tir_node buf;
    int nslots, ok, stores;
    tir_node idx[PROMOTE_MAX_SLOTS];  /* one index per slot */
    tir_node mask[PROMOTE_MAX_SLOTS]; /* the slot's one mask (NULL: none) */
    int lanes[PROMOTE_MAX_SLOTS];
    tir_node tmp[PROMOTE_MAX_SLOTS]; /* the slot buffers */
    tir_node defined[256];           /* vars bound inside the loop */
    int ndefined;
    tir_set seen;
} slots;

/* The constant difference a - b of two int64 indices, if it is one. */
static int const_diff(tir_node a, tir_node b, int64_t *d) {
    return tir_const_int(tir_simplify(NULL, tir_sub(a, b)), d);
}

static int invariant(const slots *S, tir_node e) {
    for (int i = 0; i < S->ndefined; i++)
        if (tir_uses_var(e, S->defined[i]))
            return 0;
    return 1;
}

/* The base index and lanes of an access's index: a scalar, or a ramp of
 * stride 1; 0 for anything else. */
static int base_of(tir_node idx, tir_node *base, int *lanes) {
    int64_t s;
    *base = idx;
    *lanes = 0;
    if (idx->lanes == 1) {
        *base = idx;
        *lanes = 1;
        return 1;
    }
    if (idx->op == TIR_RAMP && tir_const_int(idx->src[1], &s) && s == 1) {
        *base = idx->src[0];
        *lanes = idx->lanes;
        return 1;
    }
    return 0;
}

/* Record the slot of an access at `idx` under `mask` (or NULL): the same
 * slot as one seen (the same base, lanes and mask) or a disjoint new one;
 * anything else (a partial overlap, a difference that is not a constant,
 * another mask) fails. A masked slot is copied in and out under its mask,
 * and its lanes outside the mask are never read or written. */
static void add_slot(slots *S, tir_node idx, tir_node mask) {
    tir_node base;
    int lanes;
    if (!base_of(idx, &base, &lanes) || !invariant(S, base) || (mask && !invariant(S, mask))) {
        S->ok = 0;
        return;
    }
    for (int k = 0; k < S->nslots; k++) {
        int64_t d;
        tir_node kb;
        int kl;
        base_of(S->idx[k], &kb, &kl);
        if (!const_diff(base, kb, &d)) {
            S->ok = 0;
            return;
        }
        if (d == 0 && kl == lanes) {
            S->ok &= S->mask[k] == mask; /* (nodes are hash-consed) */
            return;
        }
        if (d < kl && -d < lanes) { /* overlapping, not the same */
            S->ok = 0;
            return;
        }
    }
    if (S->nslots == PROMOTE_MAX_SLOTS) {
        S->ok = 0;
        return;
    }
    S->idx[S->nslots] = idx;
    S->mask[S->nslots] = mask;
    S->lanes[S->nslots++] = lanes;
}

/* Walk loop body n: the slots of buf's accesses, the vars bound inside. */
static void scan(slots *S, tir_node n) {
    if (!S->ok || tir_set_add(&S->seen, n))
        return;
    if (n == S->buf) {
        S->ok = 0; /* used other than as a load or store target */
        return;
    }
    if (n->op == TIR_FOR && (n->aux == TIR_FOR_PARALLEL || n->aux == TIR_FOR_THREAD)) {
        S->ok = 0; /* a closure of its own: the slot buffers stay outside it */
        return;
    }
    if (n->op == TIR_LOAD || n->op == TIR_STORE) {
        for (uint32_t i = 1; i < n->nsrc; i++)
            scan(S, n->src[i]);
        if (n->src[0] == S->buf) {
            int masked = n->nsrc == (n->op == TIR_LOAD ? 3u : 4u);
            S->stores += n->op == TIR_STORE;
            add_slot(S, n->src[1], masked ? n->src[n->nsrc - 1] : NULL);
        }
        return;
    }
    for (uint32_t i = 0; i < n->nsrc; i++)
        scan(S, n->src[i]);
}

/* Vars bound anywhere in loop (its own first). Collected before the scan
 * so that an index is tested against every var of the loop. */
static void bound_vars(slots *S, tir_node n, tir_set *seen) {
    if (tir_set_add(seen, n) || !tir_is_stmt(n))
        return;
    if ((n->op == TIR_FOR || n->op == TIR_ALLOCATE) && S->ndefined < 256)
        S->defined[S->ndefined++] = n->src[0];
    for (uint32_t i = 0; i < n->nsrc; i++)
        bound_vars(S, n->src[i], seen);
}

static int slot_of(const slots *S, tir_node idx) {
    tir_node base, kb;
    int lanes, kl;
    int64_t d;
    KILN_ASSERT(base_of(idx, &base, &lanes));
    for (int k = 0; k < S->nslots; k++) {
        base_of(S->idx[k], &kb, &kl);
        if (kl == lanes && const_diff(base, kb, &d) && d == 0)
            return k;
    }
    KILN_ASSERT(!"every access of a promoted buffer has a slot");
    return -1;
}

static tir_node slot_index(kiln_ctx *ctx, int lanes) {
    tir_node z = tir_i64(ctx, 0);
    return lanes == 1 ? z : tir_ramp(z, tir_i64(ctx, 1), lanes);
}

static tir_node redirect_fn(tir_node n, void *user) {
    const slots *S = user;
    if ((n->op != TIR_LOAD && n->op != TIR_STORE) || n->src[0] != S->buf)
        return n;
    int k = slot_of(S, n->src[1]);
    kiln_ctx *ctx = n->ctx;
    tir_node ix = slot_index(ctx, S->lanes[k]), m = S->mask[k];
    if (n->op == TIR_LOAD)
        return m ? tir_load_masked(ctx, S->tmp[k], ix, m) : tir_load(ctx, S->tmp[k], ix);
    return m ? tir_store_masked(S->tmp[k], ix, n->src[2], m) : tir_store(S->tmp[k], ix, n->src[2]);
}

/* Loop n with buf's slots in slot buffers, or n itself when buf is not
 * read and written at fixed slots throughout it. */
static tir_node promote_loop(kiln_ctx *ctx, tir_node n, tir_node buf) {
    slots S = {0};
    S.buf = buf;
    S.ok = 1;
    tir_set seen = {0};
    bound_vars(&S, n, &seen);
    tir_set_free(&seen);
    scan(&S, n->src[3]);
    tir_set_free(&S.seen);
    if (!S.ok || !S.stores || !S.nslots || S.ndefined >= 256)
        return n; /* (256 bound vars: some may be missing from the test) */
    kiln_dtype el = (kiln_dtype)buf->aux;
    tir_node pre[PROMOTE_MAX_SLOTS], post[PROMOTE_MAX_SLOTS];
    for (int k = 0; k < S.nslots; k++) {
        S.tmp[k] = tir_handle(ctx, buf->name ? buf->name : "acc", el);
        tir_node ix = slot_index(ctx, S.lanes[k]), m = S.mask[k];
        pre[k] =
            tir_store(S.tmp[k], ix,
                      m ? tir_load_masked(ctx, buf, S.idx[k], m) : tir_load(ctx, buf, S.idx[k]));
        post[k] = m ? tir_store_masked(buf, S.idx[k], tir_load(ctx, S.tmp[k], ix), m)
                    : tir_store(buf, S.idx[k], tir_load(ctx, S.tmp[k], ix));
    }
    tir_node loop = tir_rewrite(n, redirect_fn, &S);
    tir_node parts[3] = {tir_seq(ctx, S.nslots, pre), loop, tir_seq(ctx, S.nslots, post)};
    tir_node r = tir_seq(ctx, 3, parts);
    for (int k = S.nslots - 1; k >= 0; k--)
        r = tir_allocate(S.tmp[k], tir_i64(ctx, S.lanes[k]), "local", r);
    return r;
}

/* 1 if every access of buf in s has a constant index (the back end then
 * promotes the whole buffer already). */
static int all_constant(tir_node s, tir_node buf, tir_set *seen) {
    if (tir_set_add(seen, s))
        return 1;
    if ((s->op == TIR_LOAD || s->op == TIR_STORE) && s->src[0] == buf) {
        tir_node base;
        int lanes;
        int64_t c;
        if (!base_of(s->src[1], &base, &lanes) || !tir_const_int(base, &c))
            return 0;
    }
    for (uint32_t i = 0; i < s->nsrc; i++)
        if (!all_constant(s->src[i], buf, seen))
            return 0;
    return 1;
}

/* In s (inside buf's allocation): each outermost loop that accesses buf at
 * fixed slots only, promoted. */
static tir_node promote_in(kiln_ctx *ctx, tir_node s, tir_node buf) {
    if (!tir_is_stmt(s) || !tir_uses_var(s, buf))
        return s;
    if (s->op == TIR_FOR && s->aux != TIR_FOR_PARALLEL && s->aux != TIR_FOR_THREAD) {
        tir_node r = promote_loop(ctx, s, buf);
        if (r != s)
            return r;
    }
    if (s->op == TIR_STORE || s->op == TIR_LOAD)
        return s;
    tir_node src[64];
    if (s->nsrc > 64)
        return s;
    int changed = 0;
    for (uint32_t i = 0; i < s->nsrc; i++) {
        src[i] = promote_in(ctx, s->src[i], buf);
        changed |= src[i] != s->src[i];
    }
    return changed ? tir_with_src(s, (int)s->nsrc, src) : s;
}

static tir_node promote_fn(tir_node n, void *user) {
    kiln_ctx *ctx = user;
    int64_t c;
    if (n->op != TIR_ALLOCATE || !n->name || strcmp(n->name, "local") ||
        !tir_const_int(n->src[1], &c))
        return n;
    tir_set seen = {0};
    int whole = all_constant(n->src[2], n->src[0], &seen);
    tir_set_free(&seen);
    if (whole)
        return n;
    tir_node body = promote_in(ctx, n->src[2], n->src[0]);
    if (body == n->src[2])
        return n;
    tir_node src[3] = {n->src[0], n->src[1], body};
    return tir_with_src(n, 3, src);
}

tir_node tir_promote_slots(kiln_ctx *ctx, tir_node s) {
    return tir_rewrite(s, promote_fn, ctx);
}
