/* c_render.c: the C renderer's tree walk over flat loop IR: expressions
 * (scalars are plain C; vectors are GCC vector_size types with the helpers
 * of c_base.c), statements, loops and allocations. Parallel loops are
 * outlined into closures run by the runtime's parallel_for; constant-index
 * "local" buffers are promoted to separate variables so gcc keeps them in
 * registers; heap buffers come from the runtime's workspace pool and are
 * freed on every exit. c_render_internal.h says how the renderer's files
 * fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_render_internal.h"

#define BF16_MSG "bfloat16 arithmetic is not supported: cast to float32 first"

/* ---- expressions ------------------------------------------------------------------------ */

static char *ex(cg_render *r, tir_node e);

/* e rendered at `lanes` lanes (scalars are splatted). */
static char *ex_at(cg_render *r, tir_node e, int lanes) {
    char *a = ex(r, e);
    if (e->lanes == 1 && lanes > 1)
        return cg_splat(r, (kiln_dtype)e->dtype, lanes, a);
    return a;
}

static int is_contig_ramp(tir_node idx) {
    int64_t s;
    return idx->op == TIR_RAMP && tir_const_int(idx->src[1], &s) && s == 1;
}

/* v converted to dtype `to` (scalar or vector). */
static char *cast_expr(cg_render *r, kiln_dtype to, tir_node v) {
    kiln_dtype from = (kiln_dtype)v->dtype;
    int L = v->lanes;
    char *a = ex(r, v), *t;
    if (from == to)
        return a;
    if (L == 1) {
        t = cg_cast_text(r, to, from, a);
    } else if (from != KILN_BFLOAT16 && to != KILN_BFLOAT16) {
        char vt[48], bt[48];
        cg_vtype(r, vt, to, L);
        if (to == KILN_BOOL) {
            cg_vtype(r, bt, KILN_BOOL, L);
            t = cg_sfmt("(__builtin_convertvector((%s) != 0, %s) & 1)", a, bt);
        } else {
            t = cg_vector_cast(r, to, from, L, a);
        }
    } else {
        t = cg_lane_call(r, "cast", TIR_CAST, 0, to, L, from, 1, &from, &a);
    }
    free(a);
    return t;
}

static char *promoted_ref(cg_render *r, cg_alloc *ai, tir_node idx) {
    int64_t base = 0;
    if (idx->op == TIR_RAMP)
        tir_const_int(idx->src[0], &base);
    else
        tir_const_int(idx, &base);
    char *n = cg_var_name(r, ai->buf), *t = cg_sfmt("%s_r%lld", n, (long long)(base / ai->lanes));
    free(n);
    return t;
}

static char *ex_load(cg_render *r, tir_node e) {
    tir_node buf = e->src[0], idx = e->src[1];
    kiln_dtype dt = (kiln_dtype)e->dtype;
    int L = e->lanes;
    cg_alloc *ai = cg_find_alloc(r, buf);
    if (ai && ai->promoted) /* a register: every lane is there to read */
        return promoted_ref(r, ai, idx);
    char *bn = cg_var_name(r, buf), *t;
    if (e->nsrc > 2) {
        char *m = ex(r, e->src[2]);
        if (is_contig_ramp(idx)) {
            char *b = ex(r, idx->src[0]);
            t = cg_sfmt("%s(%s + %s, %s)", cg_mem_helper(r, "mload", dt, L, dt), bn, b, m);
            free(b);
        } else {
            char *i = ex(r, idx);
            t = cg_sfmt("%s(%s, %s, %s)",
                        cg_mem_helper(r, "mgather", dt, L, (kiln_dtype)idx->dtype), bn, i, m);
            free(i);
        }
        free(m);
    } else if (L == 1) {
        char *i = ex(r, idx);
        t = cg_sfmt("%s[%s]", bn, i);
        free(i);
    } else if (is_contig_ramp(idx)) {
        char *b = ex(r, idx->src[0]);
        t = cg_sfmt("%s(%s + %s)", cg_mem_helper(r, "vload", dt, L, dt), bn, b);
        free(b);
    } else if (idx->op == TIR_BROADCAST) {
        char *b = ex(r, idx->src[0]);
        t = cg_splat(r, dt, L, cg_sfmt("%s[%s]", bn, b));
        free(b);
    } else {
        char *i = ex(r, idx);
        t = cg_sfmt("%s(%s, %s)", cg_mem_helper(r, "gather", dt, L, (kiln_dtype)idx->dtype), bn, i);
        free(i);
    }
    free(bn);
    return t;
}

/* Whether an integer div-like op by d follows base/intdiv.h's rule at run
 * time: unless d is a known constant other than 0 and -1 (index math with
 * constant divisors stays plain C, for speed). TIR's div and mod truncate,
 * floordiv and floormod round down; the rule keeps that. */
static int div_guarded(int op, kiln_dtype dt, tir_node d) {
    if (cg_is_float(dt) || !cg_intdiv_name(op))
        return 0;
    if (d->op == TIR_BROADCAST)
        d = d->src[0];
    return !(d->op == TIR_INT && d->ival != 0 && d->ival != -1);
}

/* Whether e reads a buffer (TIR_LOAD anywhere in it); past `budget` nodes
 * (a divisor is small, but a shared DAG unfolds) it assumes so. */
static int reads_data(tir_node e, int *budget) {
    if (e->op == TIR_LOAD || --*budget < 0)
        return 1;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (reads_data(e->src[i], budget))
            return 1;
    return 0;
}

/* Whether a guarded division by d reports a zero divisor to the kernel
 * status: d reads data or is the constant 0. A divisor made of loop and size
 * variables only is index arithmetic (a zero size runs no iteration), which
 * reports nothing and so costs a float kernel nothing. */
static int div_reports(tir_node d) {
    if (d->op == TIR_BROADCAST)
        d = d->src[0];
    if (d->op == TIR_INT)
        return d->ival == 0;
    int budget = 256;
    return reads_data(d, &budget);
}

static const char *share_name(const cg_render *r, tir_node e);

/* A call of the horizontal reduction f (TIR_HSUM, TIR_HMAX, TIR_HMIN) of
 * vector text `arg` (lanes x dt): a helper that folds the vector's halves
 * into each other with the vector op (its own text: NaN-propagating for
 * max and min) down to 2 lanes, then those two: log2(lanes) dependent
 * steps, not lanes - 1. The halves are taken by memcpy, which the C
 * compiler turns into register extracts. */
static char *horizontal_call(cg_render *r, tir_intrin f, kiln_dtype dt, int lanes, char *arg) {
    char vt[48], name[96];
    cg_vtype(r, vt, dt, lanes);
    snprintf(name, sizeof name, "kiln_%s_%s", tir_intrin_name(f), vt + 5);
    int op = f == TIR_HSUM ? TIR_ADD : f == TIR_HMAX ? TIR_MAX : TIR_MIN;
    const char *T = cg_types[dt].c;
    kstr b;
    kstr_init(&b);
    /* the halves' types and ops first (each may add a helper of its own) */
    char *step[8] = {0};
    char ht[8][48];
    int k = 0;
    for (int w = lanes / 2; w >= 2; w /= 2, k++) {
        cg_vtype(r, ht[k], dt, w);
        char *a[3] = {"lo", "hi", NULL};
        kiln_dtype adt[3] = {dt, dt, dt};
        step[k] = op == TIR_ADD
                      ? cg_sdup("(lo + hi)")
                      : cg_lane_call(r, op == TIR_MAX ? "max" : "min", op, 0, dt, w, dt, 2, adt, a);
    }
    char *a[3] = {"x[0]", "x[1]", NULL};
    char *last = cg_scalar_text(r, op, 0, dt, dt, a);
    kstr_printf(&b, "static inline %s %s(%s v) {\n", T, name, vt);
    const char *cur = "v";
    for (int i = 0, w = lanes / 2; i < k; i++, w /= 2) {
        kstr_printf(&b, "    %s x%d;\n    {\n        %s lo, hi;\n", ht[i], i, ht[i]);
        kstr_printf(&b, "        memcpy(&lo, &%s, sizeof lo);\n", cur);
        kstr_printf(&b, "        memcpy(&hi, (const char *)&%s + sizeof lo, sizeof hi);\n", cur);
        kstr_printf(&b, "        x%d = %s;\n    }\n", i, step[i]);
        cur = i == 0 ? "x0" : i == 1 ? "x1" : i == 2 ? "x2" : i == 3 ? "x3" : i == 4 ? "x4" : "x5";
        free(step[i]);
    }
    kstr_printf(&b, "    %s x[2];\n    memcpy(x, &%s, sizeof x);\n", T, cur);
    kstr_printf(&b, "    return %s;\n}\n", last);
    free(last);
    cg_add_helper(r, name, kstr_take(&b));
    char *t = cg_sfmt("%s(%s)", name, arg);
    free(arg);
    return t;
}

/* x as int32 at L lanes */
static char *widened(cg_render *r, tir_node x, int L) {
    char *a = ex(r, x), *t;
    if (x->lanes == 1) {
        t = cg_sfmt("((int32_t)(%s))", a);
        free(a);
        return L == 1 ? t : cg_splat(r, KILN_INT32, L, t);
    }
    char vt[48];
    cg_vtype(r, vt, KILN_INT32, L);
    t = cg_sfmt("__builtin_convertvector(%s, %s)", a, vt);
    free(a);
    return t;
}

/* A dot product call e (TIR_DOT2, TIR_DOT4) plus acc (NULL: none): the
 * int8 kernels' helper (c_dot.c), or the lanes' sum of products. */
static char *ex_dot(cg_render *r, tir_node e, tir_node acc) {
    int k = tir_dot_pairs((tir_intrin)e->aux), L = e->lanes;
    tir_node op[4];
    const char *h = cg_dot_fast(r, e, op);
    if (h) {
        char *a[5] = {acc ? ex(r, acc) : cg_splat(r, KILN_INT32, L, cg_sdup("0")),
                      cg_var_name(r, op[0]), ex(r, op[1]), cg_var_name(r, op[2]), ex(r, op[3])};
        char *t = cg_sfmt("%s(%s, %s + (%s), %s + (%s))", h, a[0], a[1], a[2], a[3], a[4]);
        for (int i = 0; i < 5; i++)
            free(a[i]);
        return t;
    }
    kstr t;
    kstr_init(&t);
    kstr_putc(&t, '(');
    if (acc) {
        char *a = ex(r, acc);
        kstr_printf(&t, "%s + ", a);
        free(a);
    }
    for (int j = 0; j < k; j++) {
        char *a = widened(r, e->src[j], L), *b = widened(r, e->src[k + j], L);
        kstr_printf(&t, "%s%s * %s", j ? " + " : "", a, b);
        free(a);
        free(b);
    }
    kstr_putc(&t, ')');
    return kstr_take(&t);
}

static char *ex(cg_render *r, tir_node e) {
    if (r->st)
        return cg_sdup("0");
    const char *bound = share_name(r, e);
    if (bound)
        return cg_sdup(bound);
    int op = e->op, L = e->lanes;
    kiln_dtype dt = (kiln_dtype)e->dtype;
    if (op < TIR_FOR && !kiln_dtype_is_data(dt) && !(op == TIR_VAR)) {
        cg_fail(r, KILN_ERR_INVALID, "cannot render a %s of dtype %s", tir_op_name((tir_op)op),
                kiln_dtype_name(dt));
        return cg_sdup("0");
    }
    if (!cg_lanes_ok(L)) {
        cg_fail(r, KILN_ERR_UNSUPPORTED, "vectors of %d x %s are not supported by the C back end",
                L, kiln_dtype_name(dt));
        return cg_sdup("0");
    }
    kiln_dtype odt = e->nsrc ? (kiln_dtype)e->src[0]->dtype : dt;
    switch (op) {
    case TIR_INT: return cg_const_int(dt, e->ival);
    case TIR_FLOAT: return cg_const_float(dt, e->fval);
    case TIR_VAR:
        if (dt == KILN_HANDLE) {
            cg_fail(r, KILN_ERR_INVALID, "buffer '%s' used as a value", e->name ? e->name : "?");
            return cg_sdup("0");
        }
        return cg_var_name(r, e);
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
    case TIR_OR:
    case TIR_NOT:
    case TIR_CALL: {
        if (odt == KILN_BFLOAT16 || dt == KILN_BFLOAT16) {
            cg_fail(r, KILN_ERR_UNSUPPORTED, BF16_MSG);
            return cg_sdup("0");
        }
        if (op == TIR_CALL && tir_dot_pairs((tir_intrin)e->aux)) {
            if (dt != KILN_INT32 || (int)e->nsrc != tir_intrin_nargs((tir_intrin)e->aux)) {
                cg_fail(r, KILN_ERR_INVALID, "malformed %s node", tir_intrin_name(e->aux));
                return cg_sdup("0");
            }
            return ex_dot(r, e, NULL);
        }
        /* an accumulation into a dot product: one multiply-add instruction */
        if (op == TIR_ADD && dt == KILN_INT32 && e->src[1]->op == TIR_CALL &&
            tir_dot_pairs((tir_intrin)e->src[1]->aux) && e->src[0]->lanes == L &&
            (int)e->src[1]->nsrc == tir_intrin_nargs((tir_intrin)e->src[1]->aux))
            return ex_dot(r, e->src[1], e->src[0]);
        if (op == TIR_CALL && e->aux >= TIR_HSUM && e->aux <= TIR_HMIN) {
            if (e->nsrc != 1 || L != 1 || !cg_lanes_ok(e->src[0]->lanes) || odt != dt) {
                cg_fail(r, KILN_ERR_INVALID, "malformed %s node", tir_intrin_name(e->aux));
                return cg_sdup("0");
            }
            return horizontal_call(r, (tir_intrin)e->aux, dt, e->src[0]->lanes, ex(r, e->src[0]));
        }
        int n = (int)e->nsrc;
        if (n > 3 || (op != TIR_CALL && op != TIR_NOT && n != 2) || (op == TIR_NOT && n != 1) ||
            (op == TIR_CALL && n != tir_intrin_nargs((tir_intrin)e->aux))) {
            cg_fail(r, KILN_ERR_INVALID, "malformed %s node", tir_op_name((tir_op)op));
            return cg_sdup("0");
        }
        char *a[3] = {0};
        kiln_dtype adt[3];
        for (int k = 0; k < n; k++) {
            a[k] = ex_at(r, e->src[k], L);
            adt[k] = (kiln_dtype)e->src[k]->dtype;
        }
        char *t;
        int guard = n == 2 && div_guarded(op, dt, e->src[1]);
        if (guard && div_reports(e->src[1])) {
            KILN_ASSERT(r->status); /* cg_uses_status saw it */
            a[1] = cg_divisor(r, dt, L, a[1]);
        }
        int vec_op = L > 1 && (op <= TIR_DIV || (op == TIR_MOD && !cg_is_float(dt)));
        int cmp = op >= TIR_EQ && op <= TIR_GE;
        if (guard) {
            t = L == 1 ? cg_scalar_text(r, op, CG_DIV_GUARDED, dt, odt, a)
                       : cg_lane_call(r, cg_intdiv_name(op), op, CG_DIV_GUARDED, dt, L, odt, n, adt,
                                      a);
        } else if (L == 1) {
            t = cg_scalar_text(r, op, e->aux, dt, odt, a);
        } else if (vec_op) {
            t = cg_sfmt("(%s %s %s)", a[0], cg_binop_c[op], a[1]);
        } else if (cmp) {
            char bt[48];
            cg_vtype(r, bt, KILN_BOOL, L);
            t = cg_sfmt("(__builtin_convertvector(%s %s %s, %s) & 1)", a[0], cg_binop_c[op], a[1],
                        bt);
        } else if (op == TIR_AND || op == TIR_OR) {
            t = cg_sfmt("(%s %s %s)", a[0], op == TIR_AND ? "&" : "|", a[1]);
        } else if (op == TIR_NOT) {
            t = cg_sfmt("(%s ^ 1)", a[0]);
        } else {
            const char *nm =
                op == TIR_CALL ? tir_intrin_name((tir_intrin)e->aux) : tir_op_name((tir_op)op);
            t = cg_lane_call(r, nm, op, e->aux, dt, L, odt, n, adt, a);
        }
        for (int k = 0; k < n; k++)
            free(a[k]);
        return t;
    }
    case TIR_SELECT: {
        tir_node c = e->src[0];
        char *a[3];
        a[1] = ex_at(r, e->src[1], L);
        a[2] = ex_at(r, e->src[2], L);
        char *t;
        if (c->lanes == 1 || c->op == TIR_BROADCAST) {
            /* a condition the same in every lane picks whole vectors */
            a[0] = ex(r, c->lanes == 1 ? c : c->src[0]);
            t = cg_scalar_text(r, TIR_SELECT, 0, dt, dt, a);
        } else {
            a[0] = ex(r, c);
            kiln_dtype adt[3] = {KILN_BOOL, dt, dt};
            t = cg_lane_call(r, "select", TIR_SELECT, 0, dt, L, dt, 3, adt, a);
        }
        for (int k = 0; k < 3; k++)
            free(a[k]);
        return t;
    }
    case TIR_CAST: return cast_expr(r, dt, e->src[0]);
    case TIR_LOAD: return ex_load(r, e);
    case TIR_RAMP: {
        char *b = ex(r, e->src[0]), *s = ex(r, e->src[1]);
        if (L == 1) {
            free(s);
            return b;
        }
        char vt[48], name[64];
        cg_vtype(r, vt, dt, L);
        snprintf(name, sizeof name, "kiln_ramp_%s", vt + 5);
        if (!cg_have_helper(r, name))
            cg_add_helper(
                r, name,
                cg_sfmt("static inline %s %s(%s b, %s s) {\n    %s r;\n    for (int i = 0; i < "
                        "%d; i++) r[i] = (%s)(b + (%s)i * s);\n    return r;\n}\n",
                        vt, name, cg_types[dt].c, cg_types[dt].c, vt, L, cg_types[dt].c,
                        cg_types[dt].c));
        char *t = cg_sfmt("%s(%s, %s)", name, b, s);
        free(b);
        free(s);
        return t;
    }
    case TIR_BROADCAST: return ex_at(r, e->src[0], L);
    case TIR_CHECK: {
        if (L != 1 || e->nsrc != 2 || dt != KILN_INT64) {
            cg_fail(r, KILN_ERR_INVALID, "malformed checked index (vectorize leaves it scalar)");
            return cg_sdup("0");
        }
        KILN_ASSERT(r->status); /* cg_uses_status saw it */
        char *j = ex(r, e->src[0]), *m = ex(r, e->src[1]);
        char *t = cg_check_index(r, j, m, e->ival != 0);
        free(j);
        free(m);
        return t;
    }
    default:
        cg_fail(r, KILN_ERR_INVALID, "cannot render %s in the C back end (lower it first)",
                tir_op_name((tir_op)op));
        return cg_sdup("0");
    }
}

/* ---- analysis: free variables, register promotion ------------------------ */

static int status_walk(tir_set *seen, tir_node n) {
    if (tir_set_add(seen, n))
        return 0;
    if (n->op == TIR_CHECK)
        return 1;
    if (n->nsrc == 2 && n->op < TIR_FOR && div_guarded(n->op, (kiln_dtype)n->dtype, n->src[1]) &&
        div_reports(n->src[1]))
        return 1;
    for (uint32_t i = 0; i < n->nsrc; i++)
        if (status_walk(seen, n->src[i]))
            return 1;
    return 0;
}

int cg_uses_status(tir_node s) {
    tir_set seen = {0};
    int r = status_walk(&seen, s);
    tir_set_free(&seen);
    return r;
}

typedef struct {
    tir_set seen, defined;
    tir_node *used;
    int nused, capused;
} freevars;

static void fv_walk(freevars *fv, tir_node n) {
    if (tir_set_add(&fv->seen, n))
        return;
    if (n->op == TIR_VAR) {
        if (fv->nused == fv->capused) {
            fv->capused = fv->capused ? fv->capused * 2 : 16;
            fv->used = realloc(fv->used, (size_t)fv->capused * sizeof(tir_node));
            KILN_ASSERT(fv->used);
        }
        fv->used[fv->nused++] = n;
        return;
    }
    if (n->op == TIR_FOR || n->op == TIR_ALLOCATE)
        tir_set_add(&fv->defined, n->src[0]);
    for (uint32_t i = 0; i < n->nsrc; i++)
        fv_walk(fv, n->src[i]);
}

typedef struct {
    tir_node buf;
    int64_t count;
    int lanes, ok;
    tir_set seen;
} promo;

static void promo_walk(promo *p, tir_node n) {
    if (!p->ok || tir_set_add(&p->seen, n))
        return;
    if (n == p->buf) {
        p->ok = 0; /* used other than as a load/store target */
        return;
    }
    if ((n->op == TIR_LOAD || n->op == TIR_STORE) && n->src[0] == p->buf) {
        tir_node idx = n->src[1];
        int64_t base = -1, s = 0;
        int l = idx->lanes;
        if (l == 1)
            tir_const_int(idx, &base);
        else if (!(idx->op == TIR_RAMP && tir_const_int(idx->src[0], &base) &&
                   tir_const_int(idx->src[1], &s) && s == 1))
            base = -1;
        if (base < 0 || base + l > p->count || base % l || (p->lanes && p->lanes != l)) {
            p->ok = 0;
            return;
        }
        p->lanes = l;
        for (uint32_t i = 2; i < n->nsrc; i++)
            promo_walk(p, n->src[i]);
        return;
    }
    if (n->op == TIR_FOR && n->aux == TIR_FOR_PARALLEL && tir_uses_var(n, p->buf)) {
        p->ok = 0;
        return;
    }
    for (uint32_t i = 0; i < n->nsrc; i++)
        promo_walk(p, n->src[i]);
}

/* ---- statements ------------------------------------------------------------------------- */

/* Free the heap buffers of the current C function, then return `value`:
 * a kernel with a status adds its bits; a parallel closure ORs its status
 * into its kernel's first. */
static void emit_return(cg_render *r, kstr *o, int ind, const char *value) {
    for (int i = r->na - 1; i >= r->exit_base; i--) {
        if (!r->allocs[i].heap)
            continue;
        char *n = cg_var_name(r, r->allocs[i].buf);
        cg_line(o, ind, "kiln__api->workspace_free(%s);", n);
        free(n);
    }
    if (r->status && r->in_par)
        cg_line(o, ind,
                "if (kiln__st) __atomic_fetch_or(kiln__cl->kiln__st, kiln__st, __ATOMIC_RELAXED);");
    if (r->status && !r->in_par)
        cg_line(o, ind, "return %s | kiln__st;", value);
    else
        cg_line(o, ind, "return %s;", value);
}

static int alloc_begin(cg_render *r, kstr *o, tir_node s, int ind);
static void alloc_end(cg_render *r, kstr *o, int ind);

static void push_alloc(cg_render *r, cg_alloc ai) {
    if (r->na == r->capa) {
        r->capa = r->capa ? r->capa * 2 : 8;
        r->allocs = realloc(r->allocs, (size_t)r->capa * sizeof(cg_alloc));
        KILN_ASSERT(r->allocs);
    }
    r->allocs[r->na++] = ai;
}

static void stmt_parallel(cg_render *r, kstr *o, tir_node s, int ind) {
    tir_node v = s->src[0], body = s->src[3];
    int k = r->npar++;
    char fn[160];
    snprintf(fn, sizeof fn, "%s__par%d", r->fname, k);
    freevars fv = {0};
    fv_walk(&fv, body);
    kstr *pre = &r->pre, inner;
    kstr_init(&inner);
    kstr_printf(pre, "struct %s_cl {\n", fn);
    char *vn = cg_var_name(r, v), *mn = ex(r, s->src[1]), *en = ex(r, s->src[2]);
    kstr init;
    kstr_init(&init);
    kstr decl;
    kstr_init(&decl);
    for (int i = 0; i < fv.nused; i++) {
        tir_node u = fv.used[i];
        if (u == v || tir_set_has(&fv.defined, u))
            continue;
        char *un = cg_var_name(r, u), t[48];
        if (u->dtype == KILN_HANDLE) {
            kiln_dtype el = (kiln_dtype)u->aux;
            if (!kiln_dtype_is_data(el))
                el = KILN_UINT8;
            kstr_printf(pre, "    %s *%s;\n", cg_types[el].c, un);
            cg_line(&decl, 1, "%s *restrict %s = kiln__cl->%s;", cg_types[el].c, un, un);
        } else {
            cg_vtype(r, t, (kiln_dtype)u->dtype, 1);
            kstr_printf(pre, "    %s %s;\n", t, un);
            cg_line(&decl, 1, "const %s %s = kiln__cl->%s;", t, un, un);
        }
        kstr_printf(&init, "%s, ", un);
        free(un);
    }
    /* a body with a status ORs it into the kernel's, through a pointer */
    int outer_status = r->status, status = cg_uses_status(body);
    KILN_ASSERT(!status || outer_status);
    if (status) {
        kstr_printf(pre, "    int32_t *kiln__st;\n");
        kstr_printf(&init, "&kiln__st, ");
    }
    kstr_printf(pre, "    int64_t kiln__min;\n};\n");
    kstr_printf(&init, "%s", mn);
    /* the outlined body: allocations that do not depend on the loop variable
       are made once per chunk rather than once per iteration */
    int saved_base = r->exit_base, nh = 0;
    r->exit_base = r->na;
    r->in_par = 1;
    r->status = status;
    if (status)
        cg_line(&inner, 1, "int32_t kiln__st = 0;");
    cg_line(&inner, 1, "const int64_t %s_lo = kiln__cl->kiln__min + kiln__begin;", vn);
    cg_line(&inner, 1, "const int64_t %s_hi = kiln__cl->kiln__min + kiln__end;", vn);
    while (body->op == TIR_ALLOCATE && !tir_uses_var(body->src[1], v) &&
           alloc_begin(r, &inner, body, 1 + nh)) {
        body = body->src[2];
        nh++;
    }
    cg_line(&inner, 1 + nh, "for (%s %s = %s_lo; %s < %s_hi; ++%s) {", cg_types[v->dtype].c, vn, vn,
            vn, vn, vn);
    cg_stmt(r, &inner, body, 2 + nh);
    cg_line(&inner, 1 + nh, "}");
    while (nh > 0)
        alloc_end(r, &inner, nh--);
    if (status)
        cg_line(&inner, 1,
                "if (kiln__st) __atomic_fetch_or(kiln__cl->kiln__st, kiln__st, __ATOMIC_RELAXED);");
    r->in_par = 0;
    r->status = outer_status;
    r->exit_base = saved_base;
    kstr_printf(
        pre, "static int %s(int64_t kiln__begin, int64_t kiln__end, void *kiln__closure) {\n", fn);
    kstr_printf(pre, "    const struct %s_cl *kiln__cl = (const struct %s_cl *)kiln__closure;\n",
                fn, fn);
    if (decl.buf)
        kstr_puts(pre, decl.buf);
    if (inner.buf)
        kstr_puts(pre, inner.buf);
    cg_line(pre, 1, "return 0;");
    kstr_puts(pre, "}\n\n");
    /* the call */
    cg_line(o, ind, "{");
    cg_line(o, ind + 1, "struct %s_cl kiln__cl%d = {%s};", fn, k, init.buf);
    cg_line(o, ind + 1, "int kiln__r%d = kiln__api->parallel_for(%s, %s, &kiln__cl%d);", k, en, fn,
            k);
    cg_line(o, ind + 1, "if (kiln__r%d) {", k);
    char rv[32];
    snprintf(rv, sizeof rv, "kiln__r%d", k);
    emit_return(r, o, ind + 2, rv);
    cg_line(o, ind + 1, "}");
    cg_line(o, ind, "}");
    free(vn);
    free(mn);
    free(en);
    kstr_free(&init);
    kstr_free(&decl);
    kstr_free(&inner);
    free(fv.used);
    tir_set_free(&fv.seen);
    tir_set_free(&fv.defined);
}

static void stmt_for(cg_render *r, kstr *o, tir_node s, int ind) {
    tir_node v = s->src[0], mn = s->src[1], ext = s->src[2];
    tir_for_kind kind = (tir_for_kind)s->aux;
    if (kind == TIR_FOR_THREAD) {
        cg_fail(
            r, KILN_ERR_UNSUPPORTED,
            "loop '%s' is bound to %s, which the CPU back end cannot run; remove the bind or use "
            "a GPU target",
            v->name ? v->name : "?", s->name ? s->name : "a thread axis");
        return;
    }
    if (v->op != TIR_VAR || !kiln_dtype_is_data(v->dtype) || !tir_is_int_dtype(v->dtype)) {
        cg_fail(r, KILN_ERR_INVALID, "loop variable must be an integer variable");
        return;
    }
    if (kind == TIR_FOR_PARALLEL && !r->in_par) {
        stmt_parallel(r, o, s, ind);
        return;
    }
    char *vn = cg_var_name(r, v), *m = ex(r, mn), *e = ex(r, ext);
    const char *T = cg_types[v->dtype].c;
    int64_t m0, e0;
    if (kind == TIR_FOR_UNROLLED)
        cg_line(o, ind, "#pragma GCC unroll 8");
    if (tir_const_int(mn, &m0) && tir_const_int(ext, &e0)) {
        char *end = cg_const_int((kiln_dtype)v->dtype, m0 + e0);
        cg_line(o, ind, "for (%s %s = %s; %s < %s; ++%s) {", T, vn, m, vn, end, vn);
        free(end);
        cg_stmt(r, o, s->src[3], ind + 1);
        cg_line(o, ind, "}");
    } else {
        cg_line(o, ind, "{");
        cg_line(o, ind + 1, "const %s %s_end = %s + %s;", T, vn, m, e);
        if (kind == TIR_FOR_UNROLLED)
            cg_line(o, ind + 1, "#pragma GCC unroll 8");
        cg_line(o, ind + 1, "for (%s %s = %s; %s < %s_end; ++%s) {", T, vn, m, vn, vn, vn);
        cg_stmt(r, o, s->src[3], ind + 2);
        cg_line(o, ind + 1, "}");
        cg_line(o, ind, "}");
    }
    free(vn);
    free(m);
    free(e);
}

/* Open an ALLOCATE's scope: "{" and the declaration (stack array, promoted
 * registers, or checked heap buffer); 0 on error. */
static int alloc_begin(cg_render *r, kstr *o, tir_node s, int ind) {
    tir_node buf = s->src[0], cnt = s->src[1], body = s->src[2];
    kiln_dtype el = (kiln_dtype)buf->aux;
    if (buf->op != TIR_VAR || buf->dtype != KILN_HANDLE || !kiln_dtype_is_data(el)) {
        cg_fail(r, KILN_ERR_INVALID, "allocate needs a buffer variable");
        return 0;
    }
    size_t esz = kiln_dtype_size(el);
    const char *T = cg_types[el].c;
    int64_t c;
    int local = s->name && strcmp(s->name, "local") == 0;
    int stack = local && tir_const_int(cnt, &c) && c >= 0 && (uint64_t)c * esz <= 65536;
    char *bn = cg_var_name(r, buf);
    cg_alloc ai = {buf, 0, 1, !stack};
    cg_line(o, ind, "{");
    if (stack) {
        promo p = {buf, c, 0, 1, {0}};
        promo_walk(&p, body);
        tir_set_free(&p.seen);
        if (p.ok && p.lanes && c / p.lanes <= 128) {
            char vt[48];
            cg_vtype(r, vt, el, p.lanes);
            ai.promoted = 1;
            ai.lanes = p.lanes;
            for (int64_t k = 0; k < (c + p.lanes - 1) / p.lanes; k++)
                cg_line(o, ind + 1, "%s %s_r%lld = {0};", vt, bn, (long long)k);
        } else {
            cg_line(o, ind + 1, "%s %s[%lld] __attribute__((aligned(64)));", T, bn,
                    (long long)(c ? c : 1));
        }
    } else {
        cg_add_helper(
            r, "kiln_alloc",
            cg_sdup("static inline void *kiln_alloc(int64_t n, size_t esz) {\n"
                    "    if (n > 0 && (uint64_t)n > SIZE_MAX / esz - 64) return NULL;\n"
                    "    return kiln__api->workspace_alloc(n > 0 ? (size_t)n * esz : 1);\n"
                    "}\n"));
        char *ce = ex(r, cnt);
        cg_line(o, ind + 1, "%s *restrict %s = (%s *)kiln_alloc(%s, %zu);", T, bn, T, ce, esz);
        free(ce);
        cg_line(o, ind + 1, "if (!%s) {", bn);
        emit_return(r, o, ind + 2, "KILN_KERNEL_ENOMEM");
        cg_line(o, ind + 1, "}");
    }
    free(bn);
    push_alloc(r, ai);
    return 1;
}

/* Close the scope alloc_begin opened (freeing a heap buffer). */
static void alloc_end(cg_render *r, kstr *o, int ind) {
    cg_alloc *ai = &r->allocs[--r->na];
    if (ai->heap) {
        char *bn = cg_var_name(r, ai->buf);
        cg_line(o, ind + 1, "kiln__api->workspace_free(%s);", bn);
        free(bn);
    }
    cg_line(o, ind, "}");
}

static void stmt_allocate(cg_render *r, kstr *o, tir_node s, int ind) {
    if (!alloc_begin(r, o, s, ind))
        return;
    cg_stmt(r, o, s->src[2], ind + 1);
    alloc_end(r, o, ind);
}

/* ---- shared sub-expressions ---------------------------------------------------------------
 * Loop IR is hash-consed, so an expression is a DAG: x = a + b; y = x + a;
 * z = y + x; ... reads each node several times. Rendered as a tree, such a
 * chain doubles with every step (a fused chain of 25 such adds gave cc1
 * gigabytes of C). Before a store, every non-trivial node its value and
 * index reach more than once is bound to a local constant, children first,
 * and rendered by name. A node reached only through a select's branches is
 * bound too (reads stay in bounds whatever the condition: ops clamp their
 * indices), unless it reports through the kernel status (a checked index,
 * a reported division): evaluated unconditionally it could report for a
 * lane the select does not take. */
typedef struct {
    tir_node key;
    int count;       /* parent edges that reach it */
    uint8_t uncond;  /* reached outside every select branch */
    uint8_t effect;  /* it or a node below reports through the status */
    uint8_t emitted; /* its binding (if any) is written */
    uint8_t walked;  /* children visited (unconditionally if uncond) */
    char *name;      /* the constant it is bound to, or NULL */
} share_ent;

struct cg_share {
    share_ent *e;
    size_t cap, count;
};

static share_ent *share_get(struct cg_share *m, tir_node n, int add) {
    if (add && (m->count + 1) * 2 > m->cap) {
        struct cg_share o = *m;
        m->cap = o.cap ? o.cap * 2 : 64;
        m->e = calloc(m->cap, sizeof(share_ent));
        KILN_ASSERT(m->e);
        m->count = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.e[i].key) {
                *share_get(m, o.e[i].key, 1) = o.e[i];
            }
        free(o.e);
    }
    if (!m->cap)
        return NULL;
    size_t j = ((uintptr_t)n >> 4) * 2654435761u & (m->cap - 1);
    while (m->e[j].key) {
        if (m->e[j].key == n)
            return &m->e[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!add)
        return NULL;
    m->e[j].key = n;
    m->count++;
    return &m->e[j];
}

static const char *share_name(const cg_render *r, tir_node e) {
    if (!r->share || e->nsrc == 0)
        return NULL;
    share_ent *s = share_get(r->share, e, 0);
    return s ? s->name : NULL;
}

static int share_effect_here(tir_node n) {
    return n->op == TIR_CHECK ||
           (n->nsrc == 2 && n->op < TIR_FOR &&
            div_guarded(n->op, (kiln_dtype)n->dtype, n->src[1]) && div_reports(n->src[1]));
}

/* Count the parent edges of every node under n; `cond`: inside a select
 * branch. Returns whether n reports through the status. */
static int share_walk(struct cg_share *m, tir_node n, int cond) {
    share_ent *s = share_get(m, n, 1);
    s->count++;
    int again = !cond && !s->uncond;
    if (!cond)
        s->uncond = 1;
    if (s->walked && !again)
        return s->effect;
    s->walked = 1;
    int effect = share_effect_here(n);
    for (uint32_t i = 0; i < n->nsrc; i++) {
        int c = cond || (n->op == TIR_SELECT && i > 0);
        effect |= share_walk(m, n->src[i], c);
    }
    s = share_get(m, n, 0); /* the table may have grown */
    s->effect = (uint8_t)effect;
    return effect;
}

static int share_worth(tir_node n) {
    return n->op < TIR_FOR && n->nsrc > 0 && n->op != TIR_BROADCAST && n->op != TIR_RAMP &&
           kiln_dtype_is_data(n->dtype) && n->dtype != KILN_BFLOAT16;
}

/* Write the bindings under n, children first. */
static void share_emit(cg_render *r, kstr *o, int ind, tir_node n) {
    share_ent *s = share_get(r->share, n, 0);
    if (!s || s->emitted)
        return;
    s->emitted = 1;
    for (uint32_t i = 0; i < n->nsrc; i++)
        share_emit(r, o, ind, n->src[i]);
    s = share_get(r->share, n, 0);
    if (s->count < 2 || !share_worth(n) || (!s->uncond && s->effect) || r->st)
        return;
    char *text = ex(r, n), ty[48];
    if (n->lanes == 1)
        snprintf(ty, sizeof ty, "%s", cg_types[n->dtype].c);
    else
        cg_vtype(r, ty, (kiln_dtype)n->dtype, n->lanes);
    char name[32];
    snprintf(name, sizeof name, "kiln__e%d", r->nshare++);
    cg_line(o, ind, "const %s %s = %s;", ty, name, text);
    free(text);
    share_get(r->share, n, 0)->name = cg_sdup(name);
}

static void share_begin(cg_render *r, kstr *o, int ind, int n, const tir_node *roots) {
    struct cg_share *m = calloc(1, sizeof *m);
    KILN_ASSERT(m);
    for (int i = 0; i < n; i++)
        share_walk(m, roots[i], 0);
    r->share = m;
    for (int i = 0; i < n; i++)
        share_emit(r, o, ind, roots[i]);
}

static void share_end(cg_render *r) {
    struct cg_share *m = r->share;
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].name);
    free(m->e);
    free(m);
    r->share = NULL;
}

static void stmt_store_body(cg_render *r, kstr *o, tir_node s, int ind);

static void stmt_store(cg_render *r, kstr *o, tir_node s, int ind) {
    KILN_ASSERT(!r->share); /* stores do not nest */
    share_begin(r, o, ind, 2, (tir_node[]){s->src[1], s->src[2]});
    stmt_store_body(r, o, s, ind);
    share_end(r);
}

static void stmt_store_body(cg_render *r, kstr *o, tir_node s, int ind) {
    tir_node buf = s->src[0], idx = s->src[1], val = s->src[2];
    if (buf->op != TIR_VAR || buf->dtype != KILN_HANDLE || !kiln_dtype_is_data(buf->aux)) {
        cg_fail(r, KILN_ERR_INVALID, "store needs a buffer variable");
        return;
    }
    kiln_dtype el = (kiln_dtype)buf->aux;
    int L = idx->lanes;
    if (!cg_lanes_ok(L) || (val->lanes != L && val->lanes != 1)) {
        cg_fail(r, KILN_ERR_INVALID, "store of %d lanes at an index of %d lanes", val->lanes, L);
        return;
    }
    char *v = cast_expr(r, el, val);
    if (val->lanes == 1 && L > 1)
        v = cg_splat(r, el, L, v);
    cg_alloc *ai = cg_find_alloc(r, buf);
    char *bn = cg_var_name(r, buf);
    char *m = s->nsrc > 3 ? ex(r, s->src[3]) : NULL;
    if (ai && ai->promoted) {
        char *ref = promoted_ref(r, ai, idx);
        if (m) { /* the lanes outside the mask keep their value */
            char *a[3] = {m, v, ref};
            kiln_dtype adt[3] = {KILN_BOOL, el, el};
            char *blend = cg_lane_call(r, "select", TIR_SELECT, 0, el, L, el, 3, adt, a);
            cg_line(o, ind, "%s = %s;", ref, blend);
            free(blend);
        } else {
            cg_line(o, ind, "%s = %s;", ref, v);
        }
        free(ref);
    } else if (m && is_contig_ramp(idx)) {
        char *b = ex(r, idx->src[0]);
        cg_line(o, ind, "%s(%s + %s, %s, %s);", cg_mem_helper(r, "mstore", el, L, el), bn, b, m, v);
        free(b);
    } else if (m) {
        char *i = ex(r, idx);
        cg_line(o, ind, "%s(%s, %s, %s, %s);",
                cg_mem_helper(r, "mscatter", el, L, (kiln_dtype)idx->dtype), bn, i, m, v);
        free(i);
    } else if (L == 1) {
        char *i = ex(r, idx);
        cg_line(o, ind, "%s[%s] = %s;", bn, i, v);
        free(i);
    } else if (is_contig_ramp(idx)) {
        char *b = ex(r, idx->src[0]);
        cg_line(o, ind, "%s(%s + %s, %s);", cg_mem_helper(r, "vstore", el, L, el), bn, b, v);
        free(b);
    } else {
        char *i = ex(r, idx);
        cg_line(o, ind, "%s(%s, %s, %s);",
                cg_mem_helper(r, "scatter", el, L, (kiln_dtype)idx->dtype), bn, i, v);
        free(i);
    }
    free(bn);
    free(v);
    free(m);
}

void cg_stmt(cg_render *r, kstr *o, tir_node s, int ind) {
    if (r->st)
        return;
    switch (s->op) {
    case TIR_FOR: stmt_for(r, o, s, ind); return;
    case TIR_ALLOCATE: stmt_allocate(r, o, s, ind); return;
    case TIR_STORE: stmt_store(r, o, s, ind); return;
    case TIR_SEQ:
        for (uint32_t i = 0; i < s->nsrc; i++)
            cg_stmt(r, o, s->src[i], ind);
        return;
    case TIR_IF: {
        if (s->src[0]->lanes != 1) {
            cg_fail(r, KILN_ERR_INVALID, "if condition must be a scalar");
            return;
        }
        char *c = ex(r, s->src[0]);
        cg_line(o, ind, "if (%s) {", c);
        free(c);
        cg_stmt(r, o, s->src[1], ind + 1);
        if (s->nsrc > 2) {
            cg_line(o, ind, "} else {");
            cg_stmt(r, o, s->src[2], ind + 1);
        }
        cg_line(o, ind, "}");
        return;
    }
    default:
        cg_fail(r, KILN_ERR_INVALID, "cannot render %s as a statement in the C back end",
                tir_op_name((tir_op)s->op));
    }
}
