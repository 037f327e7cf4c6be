/* tir.c: the context, hash-consing of nodes, constructors and the generic
 * rewriter. Every node is made by tir_make, which returns the existing node
 * when an equal one exists, so structural equality is pointer equality. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tir.h"

/* ---- context ------------------------------------------------------------ */

/* A full 64-bit mix per word (splitmix64's finalizer): the tables probe
 * linearly on the low bits, and child pointers from one arena differ only
 * in a few bits, so a weaker combine clustered them into long runs (a
 * 50,000-term sum spent a quarter of its compile probing). */
static uint32_t hash_mix(uint32_t h, uint64_t v) {
    uint64_t x = v ^ ((uint64_t)h * 0x9e3779b97f4a7c15ull);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint32_t)x;
}

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

kiln_ctx *kiln_ctx_new(void) {
    kiln_ctx *ctx = kiln_calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    ctx->arena = arena_new();
    ctx->cap = 1024;
    ctx->table = kiln_calloc(ctx->cap, sizeof(tir_node));
    ctx->scap = 256;
    ctx->strs = kiln_calloc(ctx->scap, sizeof(char *));
    if (!ctx->arena || !ctx->table || !ctx->strs) {
        kiln_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void kiln_ctx_free(kiln_ctx *ctx) {
    if (!ctx)
        return;
    arena_free(ctx->arena);
    free(ctx->table);
    free(ctx->strs);
    free(ctx->scratch);
    free(ctx);
}

arena *tir_arena(kiln_ctx *ctx) {
    return ctx->arena;
}

const char *tir_intern(kiln_ctx *ctx, const char *s) {
    if (!s)
        return NULL;
    if (ctx->scount * 2 >= ctx->scap) {
        size_t ncap = ctx->scap * 2;
        const char **nt = calloc(ncap, sizeof(char *));
        KILN_ASSERT(nt);
        for (size_t i = 0; i < ctx->scap; i++) {
            if (!ctx->strs[i])
                continue;
            size_t j = hash_str(ctx->strs[i]) & (ncap - 1);
            while (nt[j])
                j = (j + 1) & (ncap - 1);
            nt[j] = ctx->strs[i];
        }
        free(ctx->strs);
        ctx->strs = nt;
        ctx->scap = ncap;
    }
    size_t j = hash_str(s) & (ctx->scap - 1);
    while (ctx->strs[j]) {
        if (strcmp(ctx->strs[j], s) == 0)
            return ctx->strs[j];
        j = (j + 1) & (ctx->scap - 1);
    }
    ctx->strs[j] = arena_strdup(ctx->arena, s);
    ctx->scount++;
    return ctx->strs[j];
}

/* ---- hash-consing ----------------------------------------------------------- */

static uint32_t node_hash(const struct kiln_node *n) {
    uint32_t h = hash_mix(0, ((uint64_t)n->op << 48) | ((uint64_t)n->dtype << 40) |
                                 ((uint64_t)n->lanes << 24) | n->aux);
    h = hash_mix(h, (uint64_t)n->ival);
    uint64_t fb;
    memcpy(&fb, &n->fval, sizeof fb);
    h = hash_mix(h, fb);
    h = hash_mix(h, (uint64_t)(uintptr_t)n->name);
    h = hash_mix(h, (uint64_t)(uintptr_t)n->ptr);
    for (uint32_t i = 0; i < n->nsrc; i++)
        h = hash_mix(h, (uint64_t)(uintptr_t)n->src[i]);
    return h ? h : 1;
}

static int node_equal(const struct kiln_node *a, const struct kiln_node *b) {
    if (a->hash != b->hash || a->op != b->op || a->dtype != b->dtype || a->lanes != b->lanes ||
        a->aux != b->aux || a->ival != b->ival || a->name != b->name || a->ptr != b->ptr ||
        a->nsrc != b->nsrc)
        return 0;
    if (memcmp(&a->fval, &b->fval, sizeof a->fval) != 0)
        return 0;
    for (uint32_t i = 0; i < a->nsrc; i++)
        if (a->src[i] != b->src[i])
            return 0;
    return 1;
}

static void table_grow(kiln_ctx *ctx) {
    size_t ncap = ctx->cap * 2;
    tir_node *nt = calloc(ncap, sizeof(tir_node));
    KILN_ASSERT(nt);
    for (size_t i = 0; i < ctx->cap; i++) {
        tir_node n = ctx->table[i];
        if (!n)
            continue;
        size_t j = n->hash & (ncap - 1);
        while (nt[j])
            j = (j + 1) & (ncap - 1);
        nt[j] = n;
    }
    free(ctx->table);
    ctx->table = nt;
    ctx->cap = ncap;
}

tir_node tir_make(kiln_ctx *ctx, tir_op op, kiln_dtype dt, int lanes, uint32_t aux, int64_t ival,
                  double fval, const char *name, void *ptr, int nsrc, const tir_node *src) {
    KILN_ASSERT(ctx && nsrc >= 0 && lanes >= 1 && lanes < 65536);
    for (int i = 0; i < nsrc; i++)
        KILN_ASSERT(src[i] != NULL);
    size_t sz = sizeof(struct kiln_node) + (size_t)nsrc * sizeof(tir_node);
    struct kiln_node *key = ctx->scratch_cap >= sz ? ctx->scratch : NULL;
    if (!key) {
        free(ctx->scratch);
        ctx->scratch = malloc(sz * 2);
        KILN_ASSERT(ctx->scratch);
        ctx->scratch_cap = sz * 2;
        key = ctx->scratch;
    }
    memset(key, 0, sizeof *key);
    key->ctx = ctx;
    key->op = (uint8_t)op;
    key->dtype = (uint8_t)dt;
    key->lanes = (uint16_t)lanes;
    key->aux = aux;
    key->nsrc = (uint32_t)nsrc;
    key->ival = ival;
    key->fval = fval;
    key->name = name ? tir_intern(ctx, name) : NULL;
    key->ptr = ptr;
    if (nsrc)
        memcpy((void *)key->src, src, (size_t)nsrc * sizeof(tir_node));
    key->hash = node_hash(key);

    if (ctx->count * 2 >= ctx->cap)
        table_grow(ctx);
    size_t j = key->hash & (ctx->cap - 1);
    while (ctx->table[j]) {
        if (node_equal(ctx->table[j], key))
            return ctx->table[j];
        j = (j + 1) & (ctx->cap - 1);
    }
    struct kiln_node *n = arena_alloc(ctx->arena, sz);
    memcpy(n, key, sz);
    ctx->table[j] = n;
    ctx->count++;
    return n;
}

tir_node tir_with_src(tir_node n, int nsrc, const tir_node *src) {
    if ((uint32_t)nsrc == n->nsrc) {
        int same = 1;
        for (int i = 0; i < nsrc && same; i++)
            same = src[i] == n->src[i];
        if (same)
            return n;
    }
    return tir_make(n->ctx, (tir_op)n->op, (kiln_dtype)n->dtype, n->lanes, n->aux, n->ival, n->fval,
                    n->name, n->ptr, nsrc, src);
}

/* ---- constructors ----------------------------------------------------------- */

tir_node tir_int(kiln_ctx *ctx, kiln_dtype dt, int64_t v) {
    return tir_make(ctx, TIR_INT, dt, 1, 0, v, 0, NULL, NULL, 0, NULL);
}

tir_node tir_i64(kiln_ctx *ctx, int64_t v) {
    return tir_int(ctx, KILN_INT64, v);
}

tir_node tir_floatc(kiln_ctx *ctx, kiln_dtype dt, double v) {
    if (v == 0)
        v = 0; /* -0.0 and 0.0 are one constant only if equal bits: keep sign */
    return tir_make(ctx, TIR_FLOAT, dt, 1, 0, 0, v, NULL, NULL, 0, NULL);
}

/* v as an integer constant's value: truncated, saturating at int64's range
 * (C leaves the conversion undefined past it), NaN 0; a uint64 past
 * INT64_MAX is held as its int64 bit pattern. */
static int64_t const_ival(kiln_dtype dt, double v) {
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0) {
        if (dt != KILN_UINT64)
            return INT64_MAX;
        return v >= 18446744073709551616.0 ? -1 : (int64_t)(uint64_t)v;
    }
    return v < -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}

tir_node tir_const(kiln_ctx *ctx, kiln_dtype dt, int lanes, double v) {
    int64_t iv = tir_is_float_dtype(dt) ? 0 : const_ival(dt, v);
    tir_node c = tir_is_float_dtype(dt) ? tir_floatc(ctx, dt, v) : tir_int(ctx, dt, iv);
    return lanes > 1 ? tir_broadcast(c, lanes) : c;
}

tir_node tir_var(kiln_ctx *ctx, const char *name, kiln_dtype dt) {
    return tir_make(ctx, TIR_VAR, dt, 1, 0, ++ctx->next_id, 0, name, NULL, 0, NULL);
}

tir_node tir_size_var(kiln_ctx *ctx, const char *name) {
    const char *in = tir_intern(ctx, name);
    for (int i = 0; i < ctx->nsize_vars; i++)
        if (ctx->size_vars[i]->name == in)
            return ctx->size_vars[i];
    if (ctx->nsize_vars == ctx->size_vars_cap) {
        int cap = ctx->size_vars_cap ? ctx->size_vars_cap * 2 : 8;
        tir_node *a = arena_alloc(ctx->arena, sizeof(tir_node) * (size_t)cap);
        if (ctx->nsize_vars)
            memcpy(a, ctx->size_vars, sizeof(tir_node) * (size_t)ctx->nsize_vars);
        ctx->size_vars = a;
        ctx->size_vars_cap = cap;
    }
    return ctx->size_vars[ctx->nsize_vars++] = tir_var(ctx, in, KILN_INT64);
}

tir_node tir_handle(kiln_ctx *ctx, const char *name, kiln_dtype elem) {
    return tir_make(ctx, TIR_VAR, KILN_HANDLE, 1, (uint32_t)elem, ++ctx->next_id, 0, name, NULL, 0,
                    NULL);
}

static int is_bool_result(tir_op op) {
    return op >= TIR_EQ && op <= TIR_OR;
}

tir_node tir_bin(tir_op op, tir_node a, tir_node b) {
    KILN_ASSERT(a->ctx == b->ctx);
    tir_node s[2] = {a, b};
    kiln_dtype dt = is_bool_result(op) ? KILN_BOOL : (kiln_dtype)a->dtype;
    int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
    return tir_make(a->ctx, op, dt, lanes, 0, 0, 0, NULL, NULL, 2, s);
}

tir_node tir_add(tir_node a, tir_node b) {
    return tir_bin(TIR_ADD, a, b);
}
tir_node tir_sub(tir_node a, tir_node b) {
    return tir_bin(TIR_SUB, a, b);
}
tir_node tir_mul(tir_node a, tir_node b) {
    return tir_bin(TIR_MUL, a, b);
}

tir_node tir_not(tir_node a) {
    return tir_make(a->ctx, TIR_NOT, KILN_BOOL, a->lanes, 0, 0, 0, NULL, NULL, 1, &a);
}

tir_node tir_select(tir_node c, tir_node a, tir_node b) {
    tir_node s[3] = {c, a, b};
    int lanes = a->lanes > b->lanes ? a->lanes : b->lanes;
    if (c->lanes > lanes)
        lanes = c->lanes;
    return tir_make(a->ctx, TIR_SELECT, (kiln_dtype)a->dtype, lanes, 0, 0, 0, NULL, NULL, 3, s);
}

tir_node tir_cast(kiln_dtype dt, tir_node a) {
    if (a->dtype == dt)
        return a;
    return tir_make(a->ctx, TIR_CAST, dt, a->lanes, 0, 0, 0, NULL, NULL, 1, &a);
}

tir_node tir_call(kiln_ctx *ctx, tir_intrin f, kiln_dtype dt, int lanes, int nargs,
                  const tir_node *args) {
    return tir_make(ctx, TIR_CALL, dt, lanes, (uint32_t)f, 0, 0, NULL, NULL, nargs, args);
}

tir_node tir_load(kiln_ctx *ctx, tir_node buf, tir_node index) {
    KILN_ASSERT(buf->op == TIR_VAR && buf->dtype == KILN_HANDLE);
    tir_node s[2] = {buf, index};
    return tir_make(ctx, TIR_LOAD, (kiln_dtype)buf->aux, index->lanes, 0, 0, 0, NULL, NULL, 2, s);
}

tir_node tir_load_masked(kiln_ctx *ctx, tir_node buf, tir_node index, tir_node mask) {
    KILN_ASSERT(buf->op == TIR_VAR && buf->dtype == KILN_HANDLE && mask->dtype == KILN_BOOL &&
                mask->lanes == index->lanes && index->lanes > 1);
    tir_node s[3] = {buf, index, mask};
    return tir_make(ctx, TIR_LOAD, (kiln_dtype)buf->aux, index->lanes, 0, 0, 0, NULL, NULL, 3, s);
}

tir_node tir_ramp(tir_node base, tir_node stride, int lanes) {
    tir_node s[2] = {base, stride};
    return tir_make(base->ctx, TIR_RAMP, (kiln_dtype)base->dtype, lanes, 0, 0, 0, NULL, NULL, 2, s);
}

tir_node tir_broadcast(tir_node v, int lanes) {
    if (lanes == 1)
        return v;
    KILN_ASSERT(v->lanes == 1);
    return tir_make(v->ctx, TIR_BROADCAST, (kiln_dtype)v->dtype, lanes, 0, 0, 0, NULL, NULL, 1, &v);
}

tir_node tir_check(tir_node index, tir_node extent, int from_end) {
    KILN_ASSERT(index->dtype == KILN_INT64 && extent->dtype == KILN_INT64 && index->lanes == 1 &&
                extent->lanes == 1);
    tir_node s[2] = {index, extent};
    return tir_make(index->ctx, TIR_CHECK, KILN_INT64, 1, 0, from_end != 0, 0, NULL, NULL, 2, s);
}

tir_node tir_for(tir_node var, tir_node min, tir_node extent, tir_for_kind kind,
                 const char *thread_tag, tir_node body) {
    tir_node s[4] = {var, min, extent, body};
    return tir_make(var->ctx, TIR_FOR, KILN_HANDLE, 1, (uint32_t)kind, 0, 0, thread_tag, NULL, 4,
                    s);
}

tir_node tir_store(tir_node buf, tir_node index, tir_node value) {
    tir_node s[3] = {buf, index, value};
    return tir_make(buf->ctx, TIR_STORE, KILN_HANDLE, 1, 0, 0, 0, NULL, NULL, 3, s);
}

tir_node tir_store_masked(tir_node buf, tir_node index, tir_node value, tir_node mask) {
    KILN_ASSERT(mask->dtype == KILN_BOOL && mask->lanes == index->lanes && index->lanes > 1);
    tir_node s[4] = {buf, index, value, mask};
    return tir_make(buf->ctx, TIR_STORE, KILN_HANDLE, 1, 0, 0, 0, NULL, NULL, 4, s);
}

tir_node tir_allocate(tir_node buf, tir_node count, const char *scope, tir_node body) {
    tir_node s[3] = {buf, count, body};
    return tir_make(buf->ctx, TIR_ALLOCATE, KILN_HANDLE, 1, 0, 0, 0, scope, NULL, 3, s);
}

tir_node tir_if(tir_node cond, tir_node then_s, tir_node else_s) {
    tir_node s[3] = {cond, then_s, else_s};
    return tir_make(cond->ctx, TIR_IF, KILN_HANDLE, 1, 0, 0, 0, NULL, NULL, else_s ? 3 : 2, s);
}

tir_node tir_seq(kiln_ctx *ctx, int n, const tir_node *stmts) {
    int total = 0;
    for (int i = 0; i < n; i++)
        total += stmts[i]->op == TIR_SEQ ? (int)stmts[i]->nsrc : 1;
    if (total == 1) {
        for (int i = 0; i < n; i++) {
            if (stmts[i]->op != TIR_SEQ)
                return stmts[i];
            if (stmts[i]->nsrc == 1)
                return stmts[i]->src[0];
        }
    }
    tir_node small[16] = {0};
    tir_node *flat = total <= 16 ? small : malloc((size_t)total * sizeof(tir_node));
    KILN_ASSERT(flat);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (stmts[i]->op == TIR_SEQ)
            for (uint32_t j = 0; j < stmts[i]->nsrc; j++)
                flat[k++] = stmts[i]->src[j];
        else
            flat[k++] = stmts[i];
    }
    tir_node r = tir_make(ctx, TIR_SEQ, KILN_HANDLE, 1, 0, 0, 0, NULL, NULL, total, flat);
    if (flat != small)
        free(flat);
    return r;
}

tir_node tir_seq2(tir_node a, tir_node b) {
    tir_node s[2] = {a, b};
    return tir_seq(a->ctx, 2, s);
}

tir_node tir_nop(kiln_ctx *ctx) {
    return tir_make(ctx, TIR_SEQ, KILN_HANDLE, 1, 0, 0, 0, NULL, NULL, 0, NULL);
}

/* ---- inspecting -------------------------------------------------------------- */

int tir_is_stmt(tir_node n) {
    return n->op >= TIR_FOR;
}

int tir_is_int_dtype(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_INT32 || dt == KILN_INT64 ||
           dt == KILN_BOOL || dt == KILN_INT16 || dt == KILN_UINT16 || dt == KILN_UINT32 ||
           dt == KILN_UINT64;
}

int tir_is_float_dtype(kiln_dtype dt) {
    return dt == KILN_FLOAT32 || dt == KILN_FLOAT16 || dt == KILN_BFLOAT16 || dt == KILN_FLOAT64;
}

int tir_const_int(tir_node n, int64_t *v) {
    if (n->op != TIR_INT || n->lanes != 1)
        return 0;
    if (v)
        *v = n->ival;
    return 1;
}

int tir_is_const(tir_node n) {
    return (n->op == TIR_INT || n->op == TIR_FLOAT) && n->lanes == 1;
}

const char *tir_op_name(tir_op op) {
    static const char *names[TIR_OP_COUNT] = {
        "int",         "float",    "var",  "add",  "sub",       "mul",    "div",  "mod",
        "floordiv",    "floormod", "min",  "max",  "eq",        "ne",     "lt",   "le",
        "gt",          "ge",       "and",  "or",   "not",       "select", "cast", "call",
        "tensor_read", "reduce",   "load", "ramp", "broadcast", "check",  "for",  "store",
        "provide",     "allocate", "if",   "seq"};
    return (unsigned)op < TIR_OP_COUNT ? names[op] : "?";
}

const char *tir_intrin_name(tir_intrin f) {
    static const char *names[TIR_INTRIN_COUNT] = {
        "exp",   "log",   "sqrt",  "rsqrt", "tanh", "sigmoid", "erf",  "pow",  "floor", "ceil",
        "abs",   "round", "sin",   "cos",   "tan",  "asin",    "acos", "atan", "sinh",  "cosh",
        "asinh", "acosh", "atanh", "shl",   "shr",  "hsum",    "hmax", "hmin", "dot2",  "dot4"};
    return (unsigned)f < TIR_INTRIN_COUNT ? names[f] : "?";
}

int tir_intrin_nargs(tir_intrin f) {
    if (tir_dot_pairs(f))
        return 2 * tir_dot_pairs(f);
    return f == TIR_POW || f == TIR_SHL || f == TIR_SHR ? 2 : 1;
}

int tir_dot_pairs(tir_intrin f) {
    return f == TIR_DOT2 ? 2 : f == TIR_DOT4 ? 4 : 0;
}

/* ---- node sets ------------------------------------------------------------------ */

int tir_set_add(tir_set *s, tir_node n) {
    if ((s->count + 1) * 2 >= s->cap) {
        tir_set old = *s;
        s->cap = old.cap ? old.cap * 2 : 64;
        s->keys = calloc(s->cap, sizeof(tir_node));
        KILN_ASSERT(s->keys);
        s->count = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                tir_set_add(s, old.keys[i]);
        free(old.keys);
    }
    size_t j = n->hash & (s->cap - 1);
    while (s->keys[j]) {
        if (s->keys[j] == n)
            return 1;
        j = (j + 1) & (s->cap - 1);
    }
    s->keys[j] = n;
    s->count++;
    return 0;
}

int tir_set_has(const tir_set *s, tir_node n) {
    if (!s->cap)
        return 0;
    for (size_t j = n->hash & (s->cap - 1); s->keys[j]; j = (j + 1) & (s->cap - 1))
        if (s->keys[j] == n)
            return 1;
    return 0;
}

void tir_set_free(tir_set *s) {
    free(s->keys);
    s->keys = NULL;
    s->cap = s->count = 0;
}

/* ---- rewriting ------------------------------------------------------------------ */

void tir_map_free(tir_map *m) {
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->cap = m->count = 0;
}

tir_node tir_map_get(const tir_map *m, tir_node k) {
    if (!m->cap)
        return NULL;
    size_t j = k->hash & (m->cap - 1);
    while (m->keys[j]) {
        if (m->keys[j] == k)
            return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

void tir_map_put(tir_map *m, tir_node k, tir_node v) {
    if ((m->count + 1) * 2 >= m->cap) {
        tir_map old = *m;
        m->cap = old.cap ? old.cap * 2 : 256;
        m->keys = calloc(m->cap, sizeof(tir_node));
        m->vals = calloc(m->cap, sizeof(tir_node));
        KILN_ASSERT(m->keys && m->vals);
        m->count = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                tir_map_put(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    size_t j = k->hash & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != k)
        j = (j + 1) & (m->cap - 1);
    if (!m->keys[j])
        m->count++;
    m->keys[j] = k;
    m->vals[j] = v;
}

typedef struct {
    tir_rewrite_fn fn;
    void *user;
    tir_map m;
} rewriter;

static tir_node rewrite_rec(rewriter *rw, tir_node n) {
    tir_node hit = tir_map_get(&rw->m, n);
    if (hit)
        return hit;
    tir_node small[8] = {0};
    tir_node *src = n->nsrc <= 8 ? small : malloc(n->nsrc * sizeof(tir_node));
    KILN_ASSERT(src);
    for (uint32_t i = 0; i < n->nsrc; i++)
        src[i] = rewrite_rec(rw, n->src[i]);
    tir_node r = tir_with_src(n, (int)n->nsrc, src);
    if (src != small)
        free(src);
    r = rw->fn(r, rw->user);
    tir_map_put(&rw->m, n, r);
    return r;
}

tir_node tir_rewrite(tir_node root, tir_rewrite_fn fn, void *user) {
    rewriter rw = {fn, user, {0}};
    tir_node r = rewrite_rec(&rw, root);
    free(rw.m.keys);
    free(rw.m.vals);
    return r;
}

typedef struct {
    int n;
    const tir_node *vars, *values;
} subst;

static tir_node subst_fn(tir_node n, void *user) {
    subst *s = user;
    if (n->op != TIR_VAR)
        return n;
    for (int i = 0; i < s->n; i++)
        if (s->vars[i] == n)
            return s->values[i];
    return n;
}

tir_node tir_substitute(tir_node root, int n, const tir_node *vars, const tir_node *values) {
    if (n == 0)
        return root;
    subst s = {n, vars, values};
    return tir_rewrite(root, subst_fn, &s);
}

static int uses_rec(tir_node n, tir_node v, tir_map *seen) {
    if (n == v)
        return 1;
    if (tir_map_get(seen, n))
        return 0;
    for (uint32_t i = 0; i < n->nsrc; i++)
        if (uses_rec(n->src[i], v, seen))
            return 1;
    tir_map_put(seen, n, n);
    return 0;
}

int tir_uses_var(tir_node n, tir_node v) {
    tir_map seen = {0};
    int r = uses_rec(n, v, &seen);
    free(seen.keys);
    free(seen.vals);
    return r;
}
