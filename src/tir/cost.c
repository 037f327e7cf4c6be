/* cost.c: a lowered kernel's floating-point operations and compulsory bytes
 * (cost.h), for the roofline profile.
 *
 * A count is kept as a small polynomial: terms of an integer coefficient
 * times a product of atoms, each atom a symbolic extent or dim (a TIR
 * expression over size variables). A static kernel's count is one constant
 * term. The walk carries the values of the loop variables it has fixed
 * (an environment), so a guard whose condition reads only those and
 * constants is decided exactly; a loop whose body holds such a guard (or a
 * loop bound) that reads its variable is enumerated, every other loop
 * multiplies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/intdiv.h"
#include "cost.h"

#define CP_TERMS 16
#define CP_ATOMS 4
/* Loop iterations the walk may enumerate per kernel, all loops together. */
#define COST_BUDGET 1000000
#define COST_MAX_DEPTH 64

typedef struct {
    int64_t c;
    int na;
    tir_node atom[CP_ATOMS]; /* in increasing pointer order */
} cterm;

typedef struct {
    int ok, nt;
    cterm t[CP_TERMS];
} cpoly;

typedef struct {
    tir_node var[COST_MAX_DEPTH];
    int64_t val[COST_MAX_DEPTH];
    int n;
    int64_t budget;
    const tir_func *f; /* its size variables may be atoms */
    /* each store's count, once (an enumerated loop visits a store often) */
    tir_node *memo_key;
    int64_t *memo_val;
    size_t memo_cap, memo_n;
} cenv;

static void cp_const(cpoly *p, int64_t c) {
    p->ok = 1;
    p->nt = c ? 1 : 0;
    p->t[0] = (cterm){c, 0, {0}};
}

static int cp_is_const(const cpoly *p, int64_t *c) {
    if (!p->ok || p->nt > 1 || (p->nt == 1 && p->t[0].na))
        return 0;
    *c = p->nt ? p->t[0].c : 0;
    return 1;
}

/* Add term t to p, merging it with a term of the same atoms. */
static void cp_add_term(cpoly *p, const cterm *t) {
    if (!p->ok || !t->c)
        return;
    for (int i = 0; i < p->nt; i++) {
        cterm *u = &p->t[i];
        if (u->na != t->na || memcmp(u->atom, t->atom, sizeof(tir_node) * (size_t)t->na))
            continue;
        if (!kiln_add_ok(u->c, t->c, &u->c))
            p->ok = 0;
        return;
    }
    if (p->nt == CP_TERMS) {
        p->ok = 0;
        return;
    }
    p->t[p->nt++] = *t;
}

static void cp_add(cpoly *p, const cpoly *q) {
    if (!q->ok)
        p->ok = 0;
    for (int i = 0; i < q->nt && p->ok; i++)
        cp_add_term(p, &q->t[i]);
}

/* p * q into r (r may not be p or q). */
static void cp_mul(cpoly *r, const cpoly *p, const cpoly *q) {
    cp_const(r, 0);
    r->ok = p->ok && q->ok;
    for (int i = 0; i < p->nt && r->ok; i++)
        for (int j = 0; j < q->nt && r->ok; j++) {
            const cterm *a = &p->t[i], *b = &q->t[j];
            cterm t = {0, 0, {0}};
            if (a->na + b->na > CP_ATOMS || !kiln_mul_ok(a->c, b->c, &t.c)) {
                r->ok = 0;
                break;
            }
            int x = 0, y = 0; /* merge the sorted atom lists */
            while (x < a->na || y < b->na)
                t.atom[t.na++] =
                    y >= b->na || (x < a->na && (uintptr_t)a->atom[x] <= (uintptr_t)b->atom[y])
                        ? a->atom[x++]
                        : b->atom[y++];
            cp_add_term(r, &t);
        }
}

/* ---- integer expressions under an environment ------------------------------ */

static int env_get(const cenv *env, tir_node v, int64_t *out) {
    for (int i = env->n - 1; i >= 0; i--)
        if (env->var[i] == v) {
            *out = env->val[i];
            return 1;
        }
    return 0;
}

static int ieval_lane(tir_node e, const cenv *env, int lane, int64_t *out);

/* The value of scalar integer or boolean expression e, or 0 if it reads
 * anything but constants and fixed loop variables, or overflows. */
static int ieval(tir_node e, const cenv *env, int64_t *out) {
    return ieval_lane(e, env, -1, out);
}

/* The same, of lane `lane` of a vector e (lane -1: e must be a scalar). */
static int ieval_lane(tir_node e, const cenv *env, int lane, int64_t *out) {
    if (e->lanes != 1 && lane < 0)
        return 0;
    if (e->op == TIR_INT) {
        *out = e->ival;
        return 1;
    }
    if (e->op == TIR_VAR)
        return env_get(env, e, out);
    int64_t a, b = 0, c = 0;
    if (e->op == TIR_BROADCAST)
        return ieval_lane(e->src[0], env, -1, out);
    if (e->op == TIR_RAMP)
        return ieval_lane(e->src[0], env, -1, &a) && ieval_lane(e->src[1], env, -1, &b) &&
               !__builtin_mul_overflow(b, (int64_t)lane, &c) && !__builtin_add_overflow(a, c, out);
    if (e->nsrc < 1 || e->nsrc > 3 || !ieval_lane(e->src[0], env, lane, &a))
        return 0;
    if (e->op == TIR_NOT || e->op == TIR_CAST) {
        *out = e->op == TIR_NOT ? !a : (e->dtype == KILN_BOOL ? a != 0 : a);
        return e->op == TIR_NOT || tir_is_int_dtype((kiln_dtype)e->dtype);
    }
    if (e->op == TIR_SELECT) {
        if (!ieval_lane(e->src[a ? 1 : 2], env, lane, &c))
            return 0;
        *out = c;
        return 1;
    }
    if (e->nsrc != 2)
        return 0;
    if (e->op == TIR_AND && !a) { /* short-circuit as C does */
        *out = 0;
        return 1;
    }
    if (e->op == TIR_OR && a) {
        *out = 1;
        return 1;
    }
    if (!ieval_lane(e->src[1], env, lane, &b))
        return 0;
    switch (e->op) {
    case TIR_ADD: return !__builtin_add_overflow(a, b, out);
    case TIR_SUB: return !__builtin_sub_overflow(a, b, out);
    case TIR_MUL: return !__builtin_mul_overflow(a, b, out);
    case TIR_DIV: *out = kiln_idiv_trunc_i64(a, b); return 1;
    case TIR_MOD: *out = kiln_imod_trunc_i64(a, b); return 1;
    case TIR_FLOORDIV: *out = kiln_idiv_floor_i64(a, b); return 1;
    case TIR_FLOORMOD: *out = kiln_imod_floor_i64(a, b); return 1;
    case TIR_MIN: *out = a < b ? a : b; return 1;
    case TIR_MAX: *out = a > b ? a : b; return 1;
    case TIR_EQ: *out = a == b; return 1;
    case TIR_NE: *out = a != b; return 1;
    case TIR_LT: *out = a < b; return 1;
    case TIR_LE: *out = a <= b; return 1;
    case TIR_GT: *out = a > b; return 1;
    case TIR_GE: *out = a >= b; return 1;
    case TIR_AND: *out = b != 0; return 1;
    case TIR_OR: *out = b != 0; return 1;
    default: return 0;
    }
}

/* An extent as a polynomial: its value under env, or one atom (an
 * expression over size variables only: not ok if it reads a loop
 * variable the walk has not fixed, or data). */
static int uses_only_sizes(tir_node e, const tir_func *f, tir_set *seen) {
    if (tir_set_add(seen, e))
        return 1;
    if (e->op == TIR_VAR) {
        for (int k = 0; k < f->nvars; k++)
            if (f->vars[k] == e)
                return 1;
        return 0;
    }
    if (e->op == TIR_LOAD || e->op == TIR_CALL || e->op == TIR_CHECK)
        return 0;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!uses_only_sizes(e->src[i], f, seen))
            return 0;
    return 1;
}

static void cp_extent(cpoly *p, tir_node e, const cenv *env) {
    int64_t v;
    if (ieval(e, env, &v)) {
        cp_const(p, v > 0 ? v : 0);
        return;
    }
    tir_set seen = {0};
    int ok = uses_only_sizes(e, env->f, &seen);
    tir_set_free(&seen);
    cp_const(p, 1);
    p->t[0].na = 1;
    p->t[0].atom[0] = e;
    p->ok = ok;
}

/* ---- the walk ---------------------------------------------------------------- */

static int is_float_arith(tir_node e) {
    if (!tir_is_float_dtype((kiln_dtype)e->dtype))
        return 0;
    switch (e->op) {
    case TIR_ADD:
    case TIR_SUB:
    case TIR_MUL:
    case TIR_DIV:
    case TIR_MIN:
    case TIR_MAX:
    case TIR_CALL: return 1;
    default: return 0;
    }
}

static int64_t expr_flops(tir_node e, tir_set *seen) {
    if (tir_set_add(seen, e))
        return 0;
    int64_t n = is_float_arith(e) ? e->lanes : 0;
    /* an integer dot product (the int8 kernels): its multiplies and adds,
       so an int8 convolution's count is its float twin's */
    if (e->op == TIR_CALL && tir_dot_pairs((tir_intrin)e->aux))
        n = 2 * (int64_t)tir_dot_pairs((tir_intrin)e->aux) * e->lanes;
    for (uint32_t i = 0; i < e->nsrc; i++)
        n += expr_flops(e->src[i], seen);
    return n;
}

static int64_t store_flops(cenv *env, tir_node s) {
    size_t mask = env->memo_cap - 1, i = env->memo_cap ? s->hash & mask : 0;
    for (; env->memo_cap && env->memo_key[i]; i = (i + 1) & mask)
        if (env->memo_key[i] == s)
            return env->memo_val[i];
    tir_set seen = {0};
    int64_t n = expr_flops(s->src[2], &seen);
    tir_set_free(&seen);
    if ((env->memo_n + 1) * 2 > env->memo_cap) { /* grow, rehashing */
        size_t cap = env->memo_cap ? env->memo_cap * 2 : 64;
        tir_node *k = calloc(cap, sizeof *k);
        int64_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return n;
        }
        for (size_t j = 0; j < env->memo_cap; j++) {
            if (!env->memo_key[j])
                continue;
            size_t h = env->memo_key[j]->hash & (cap - 1);
            while (k[h])
                h = (h + 1) & (cap - 1);
            k[h] = env->memo_key[j];
            v[h] = env->memo_val[j];
        }
        free(env->memo_key);
        free(env->memo_val);
        env->memo_key = k;
        env->memo_val = v;
        env->memo_cap = cap;
    }
    i = s->hash & (env->memo_cap - 1);
    while (env->memo_key[i])
        i = (i + 1) & (env->memo_cap - 1);
    env->memo_key[i] = s;
    env->memo_val[i] = n;
    env->memo_n++;
    return n;
}

/* 1 if a guard or a loop bound inside statement s reads variable v. */
static int control_uses(tir_node s, tir_node v) {
    switch (s->op) {
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            if (control_uses(s->src[i], v))
                return 1;
        return 0;
    case TIR_FOR:
        return tir_uses_var(s->src[1], v) || tir_uses_var(s->src[2], v) ||
               control_uses(s->src[3], v);
    case TIR_ALLOCATE: return control_uses(s->src[2], v);
    case TIR_IF:
        return tir_uses_var(s->src[0], v) || control_uses(s->src[1], v) ||
               (s->nsrc > 2 && control_uses(s->src[2], v));
    default: return 0;
    }
}

static void count_stmt(tir_node s, cenv *env, cpoly *out);

static void count_for(tir_node s, cenv *env, cpoly *out) {
    tir_node v = s->src[0], body = s->src[3];
    int64_t ext, lo;
    if (ieval(s->src[2], env, &ext) && env->n < COST_MAX_DEPTH && ext > 0 && ext <= env->budget &&
        ieval(s->src[1], env, &lo) && control_uses(body, v)) {
        env->budget -= ext;
        cp_const(out, 0);
        cpoly it;
        env->var[env->n] = v;
        env->n++;
        for (int64_t i = 0; i < ext && out->ok; i++) {
            env->val[env->n - 1] = lo + i;
            count_stmt(body, env, &it);
            cp_add(out, &it);
        }
        env->n--;
        return;
    }
    cpoly e, b;
    cp_extent(&e, s->src[2], env);
    count_stmt(body, env, &b);
    cp_mul(out, &e, &b);
}

static void count_stmt(tir_node s, cenv *env, cpoly *out) {
    cp_const(out, 0);
    switch (s->op) {
    case TIR_SEQ: {
        cpoly c;
        for (uint32_t i = 0; i < s->nsrc && out->ok; i++) {
            count_stmt(s->src[i], env, &c);
            cp_add(out, &c);
        }
        return;
    }
    case TIR_FOR: count_for(s, env, out); return;
    case TIR_ALLOCATE: count_stmt(s->src[2], env, out); return;
    case TIR_IF: {
        int64_t c;
        if (ieval(s->src[0], env, &c)) {
            if (c)
                count_stmt(s->src[1], env, out);
            else if (s->nsrc > 2)
                count_stmt(s->src[2], env, out);
            return;
        }
        /* undecided: the larger branch where both are constants, else then */
        cpoly t, e;
        int64_t tv, ev;
        count_stmt(s->src[1], env, &t);
        if (s->nsrc > 2) {
            count_stmt(s->src[2], env, &e);
            if (cp_is_const(&t, &tv) && cp_is_const(&e, &ev) && ev > tv)
                t = e;
        }
        *out = t;
        return;
    }
    case TIR_STORE: {
        /* a masked store: the lanes it writes, where the walk fixes them all */
        int64_t n = store_flops(env, s), on = 0, m;
        int lanes = s->src[1]->lanes;
        if (s->nsrc > 3 && lanes > 1) {
            for (int l = 0; l < lanes && on >= 0; l++)
                on = ieval_lane(s->src[3], env, l, &m) ? on + (m != 0) : -1;
            if (on >= 0)
                n = n / lanes * on;
        }
        cp_const(out, n);
        return;
    }
    default: return;
    }
}

/* ---- rendering --------------------------------------------------------------- */

static int is_ident(const char *s) {
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* Write size expression e in dim-expression syntax; 0 if it has a form the
 * syntax lacks. Truncating division and remainder appear only over
 * non-negative sizes (the lowering's), where they are the floor forms. */
static int render_atom(kstr *o, tir_node e) {
    static const struct {
        tir_op op;
        const char *s;
    } bins[] = {{TIR_ADD, "+"},      {TIR_SUB, "-"},  {TIR_MUL, "*"}, {TIR_FLOORDIV, "//"},
                {TIR_FLOORMOD, "%"}, {TIR_DIV, "//"}, {TIR_MOD, "%"}};
    if (e->op == TIR_INT) {
        kstr_printf(o, e->ival < 0 ? "(%lld)" : "%lld", (long long)e->ival);
        return 1;
    }
    if (e->op == TIR_VAR) {
        kstr_puts(o, e->name);
        return is_ident(e->name);
    }
    if (e->nsrc != 2)
        return 0;
    if (e->op == TIR_MIN || e->op == TIR_MAX) {
        kstr_puts(o, e->op == TIR_MIN ? "min(" : "max(");
        int ok = render_atom(o, e->src[0]);
        kstr_puts(o, ", ");
        ok = ok && render_atom(o, e->src[1]);
        kstr_putc(o, ')');
        return ok;
    }
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        if (bins[i].op != e->op)
            continue;
        kstr_putc(o, '(');
        int ok = render_atom(o, e->src[0]);
        kstr_puts(o, bins[i].s);
        ok = ok && render_atom(o, e->src[1]);
        kstr_putc(o, ')');
        return ok;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The count in out: an integer, or the terms in sorted order (so the same
 * kernel always writes the same text). */
static void render(const cpoly *p, tir_count *out) {
    memset(out, 0, sizeof *out);
    int64_t c;
    if (!p->ok)
        return;
    if (cp_is_const(p, &c)) {
        out->known = c >= 0;
        out->value = c;
        return;
    }
    char *terms[CP_TERMS];
    int ok = 1;
    for (int i = 0; i < p->nt; i++) {
        kstr t;
        kstr_init(&t);
        if (p->t[i].c < 0)
            ok = 0;
        kstr_printf(&t, "%lld", (long long)p->t[i].c);
        for (int a = 0; a < p->t[i].na; a++) {
            kstr_putc(&t, '*');
            ok = render_atom(&t, p->t[i].atom[a]) && ok;
        }
        terms[i] = kstr_take(&t);
        ok = ok && terms[i];
    }
    qsort(terms, (size_t)p->nt, sizeof *terms, cmp_str);
    kstr s;
    kstr_init(&s);
    for (int i = 0; i < p->nt; i++) {
        kstr_printf(&s, "%s%s", i ? "+" : "", terms[i] ? terms[i] : "");
        free(terms[i]);
    }
    char *text = kstr_take(&s);
    if (ok && text && strlen(text) <= TIR_COST_MAX_EXPR) {
        out->known = 1;
        snprintf(out->expr, sizeof out->expr, "%s", text);
    }
    free(text);
}

void tir_func_flops(const tir_func *f, tir_count *out) {
    cenv env = {.n = 0, .budget = COST_BUDGET, .f = f};
    cpoly p;
    count_stmt(f->body, &env, &p);
    free(env.memo_key);
    free(env.memo_val);
    render(&p, out);
}

void tir_func_bytes(const tir_func *f, tir_count *out) {
    cpoly sum, arg, dim, r;
    cenv env = {.n = 0, .f = f};
    cp_const(&sum, 0);
    for (int i = 0; i < f->nparams && sum.ok; i++) {
        const tir_param *a = &f->params[i];
        cp_const(&arg, (int64_t)kiln_dtype_size(a->dtype));
        for (int d = 0; d < a->ndim; d++) {
            cp_extent(&dim, a->shape[d], &env);
            cp_mul(&r, &arg, &dim);
            arg = r;
        }
        cp_add(&sum, &arg);
    }
    render(&sum, out);
}
