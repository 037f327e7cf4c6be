/* interp.c: the reference interpreter of tensor expressions (interp.h).
 *
 * Stages are evaluated one at a time, producers first, each into a compact
 * buffer of its dtype. A stage is walked in passes of up to CH lanes: by
 * default the lanes are consecutive elements of the stage (so every node
 * of the body is visited once per CH elements, not once per element); a
 * reduction with few elements, or whose reduce domain depends on the data
 * axes, instead puts its innermost reduce axis across the lanes, one
 * element at a time, and folds the lanes into the accumulator in order.
 *
 * A value is CH lanes in a canonical C type per dtype class (int64 for the
 * integers and bool, float for float32/float16/bfloat16, double for
 * float64), or one lane when it is the same for all (uniform: constants,
 * sizes, reduce variables, and what is computed from them only). Each
 * node of a stage's body has a slot that memoizes its value for the
 * current pass: nodes that do not use the reduce axes keep theirs across
 * the reduction's steps. A select, && and || evaluate their operands under
 * a lane mask (the lanes whose condition picks them), so a read outside a
 * tensor on an unpicked lane is never made; such masked values live in
 * scratch memory reset at each pass, never in a slot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_lanes.h"

#define CH TE_LANES
#define LANE_BYTES TE_LANE_BYTES
#define LANES(n, uni) ((uni) ? 1 : (n))

/* Bytes of one lane of a value of dtype dt. */
static size_t lane_size(kiln_dtype dt) {
    return te_vkind_of(dt) == TE_K_F32 ? 4 : 8;
}

/* ---- pointer maps ----------------------------------------------------------------- */

typedef struct {
    const void **keys;
    int *vals;
    size_t cap, n;
} ptrmap;

static size_t ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static int pm_get(const ptrmap *m, const void *k) {
    if (!m->cap)
        return -1;
    for (size_t j = ptr_hash(k) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (m->keys[j] == k)
            return m->vals[j];
        if (!m->keys[j])
            return -1;
    }
}

static int pm_put(ptrmap *m, const void *k, int v) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        const void **nk = kiln_calloc(ncap, sizeof *nk);
        int *nv = kiln_calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free((void *)nk);
            free(nv);
            return 0;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = ptr_hash(m->keys[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free((void *)m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t j = ptr_hash(k) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != k)
        j = (j + 1) & (m->cap - 1);
    if (!m->keys[j])
        m->n++;
    m->keys[j] = k;
    m->vals[j] = v;
    return 1;
}

static void pm_free(ptrmap *m) {
    free((void *)m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- evaluator state ---------------------------------------------------------------- */

/* A tensor's values: a given placeholder array, or a computed stage. */
typedef struct {
    kiln_tensor *t;
    int ndim;
    int64_t dims[16], strides[16]; /* strides in elements */
    int64_t numel;
    const char *data;  /* element [0, ..., 0] */
    void *own;         /* storage of a computed stage, malloc'd (NULL: arr's) */
    kiln_ndarray *arr; /* the result array of an output stage */
    int state;         /* 0 not evaluated, 1 being evaluated, 2 done */
} stage;

/* A body node's memo for the current pass. */
typedef struct {
    void *buf; /* CH lanes it owns */
    void *p;   /* its value: buf, or a lane array it aliases */
    uint64_t gen;
    int uni;
    int variant; /* uses a reduce axis: recomputed at every reduction step */
    int stage;   /* TENSOR_READ: the stage read */
} slot;

/* A value: lanes of the node's kind; only lane 0 if uni. */
typedef struct {
    void *p;
    int uni;
} val;

typedef struct {
    kiln_ctx *ctx;
    const te_eval_options *opt;
    int64_t budget; /* elements that may still be allocated */
    stage *st;
    int nst, cap_st;
    ptrmap stage_of; /* tensor -> stage index */
    /* the stage being evaluated and the current pass */
    stage *cur;
    int n;                  /* lanes */
    int64_t *axis_vals[16]; /* data axis values per lane */
    int axis_uni[16];
    int nred; /* its reduce axes */
    tir_node rvar[33];
    int64_t rval[33];
    int lane_rvar; /* the reduce axis across the lanes, or -1 */
    int64_t *lane_rvals;
    slot *slots;
    int nslots;
    ptrmap slot_of; /* body node -> slot index */
    uint64_t gen, gen_chunk, gen_iter;
    /* scratch lanes for masked values, reset at each pass */
    void **scratch;
    int nscratch, used_scratch;
    kiln_status fail; /* the status of an error that is not KILN_ERR_INVALID */
} ev;

static void *scratch(ev *E) {
    if (E->used_scratch == E->nscratch) {
        void **ns = kiln_realloc(E->scratch, sizeof(void *) * (size_t)(E->nscratch + 16));
        if (!ns)
            return NULL;
        E->scratch = ns;
        for (int i = 0; i < 16; i++) {
            E->scratch[E->nscratch + i] = kiln_malloc(CH * LANE_BYTES);
            if (!E->scratch[E->nscratch + i]) {
                E->nscratch += i;
                return NULL;
            }
        }
        E->nscratch += 16;
    }
    return E->scratch[E->used_scratch++];
}

static kiln_status fail_expr(const ev *E, const char *what, tir_node e) {
    char buf[160];
    kiln_expr_print(e, buf, sizeof buf);
    return kiln_set_error(KILN_ERR_INVALID, "te_eval: compute '%s': %s '%s'",
                          E->cur ? E->cur->t->name : "(shape)", what, buf);
}

/* ---- expressions ---------------------------------------------------------------------- */

static int eval(ev *E, tir_node e, const uint8_t *m, val *out);

/* A uniform integer value of e (sizes, reduce domains, shapes). */
static int eval_int(ev *E, tir_node e, int64_t *v) {
    val x;
    if (!eval(E, e, NULL, &x))
        return 0;
    if (!x.uni)
        return fail_expr(E, "a size or reduce domain depends on the data axes:", e), 0;
    *v = te_vkind_of((kiln_dtype)e->dtype) == TE_K_I64   ? ((int64_t *)x.p)[0]
         : te_vkind_of((kiln_dtype)e->dtype) == TE_K_F32 ? (int64_t)((float *)x.p)[0]
                                                         : (int64_t)((double *)x.p)[0];
    return 1;
}

static int eval_var(ev *E, tir_node e, val *out) {
    int64_t *r = out->p;
    out->uni = 1;
    if (E->cur)
        for (int d = 0; d < E->cur->ndim; d++)
            if (E->cur->t->axis && E->cur->t->axis[d] == e) {
                out->p = E->axis_vals[d];
                out->uni = E->axis_uni[d];
                return 1;
            }
    for (int k = 0; k < E->nred; k++)
        if (E->rvar[k] == e) {
            if (k == E->lane_rvar) {
                out->p = E->lane_rvals;
                out->uni = 0;
            } else {
                r[0] = E->rval[k];
            }
            return 1;
        }
    const te_eval_options *o = E->opt;
    for (int k = 0; o && k < o->nvars; k++)
        if (o->vars[k] == e) {
            r[0] = te_wrap_int((kiln_dtype)e->dtype, o->var_values[k]);
            return 1;
        }
    if (e->dtype == KILN_HANDLE)
        return fail_expr(E, "a buffer variable is not a tensor expression:", e), 0;
    return fail_expr(E, "the variable has no value (give sizes in te_eval_options):", e), 0;
}

/* Lanes active in m (NULL: all n). */
static int any_active(const ev *E, const uint8_t *m) {
    if (!m)
        return E->n > 0;
    for (int i = 0; i < E->n; i++)
        if (m[i])
            return 1;
    return 0;
}

static int eval_read(ev *E, tir_node e, const uint8_t *m, val *out) {
    int si = -1;
    int slot_i = pm_get(&E->slot_of, e);
    if (slot_i >= 0)
        si = E->slots[slot_i].stage;
    if (si < 0)
        si = pm_get(&E->stage_of, e->ptr);
    /* a scan reads its own elements written by earlier passes */
    int self = si >= 0 && E->cur == &E->st[si] && te_is_scan(E->cur->t);
    if (si < 0 || (E->st[si].state != 2 && !self))
        return fail_expr(E, "reads a tensor that is not evaluated:", e), 0;
    const stage *S = &E->st[si];
    if ((int)e->nsrc != S->ndim)
        return fail_expr(E, "a read with the wrong number of indices:", e), 0;
    val ix[16];
    int uni = 1;
    for (int d = 0; d < S->ndim; d++) {
        if (te_vkind_of((kiln_dtype)e->src[d]->dtype) != TE_K_I64)
            return fail_expr(E, "a read with a non-integer index:", e), 0;
        if (!eval(E, e->src[d], m, &ix[d]))
            return 0;
        uni &= ix[d].uni;
    }
    out->uni = uni;
    int n = LANES(E->n, uni);
    if (!any_active(E, m)) {
        memset(out->p, 0, (size_t)n * LANE_BYTES);
        out->uni = 1;
        return 1;
    }
    /* offsets, dim by dim; an inactive lane gets -1 (and reads 0) */
    int64_t *off = scratch(E);
    if (!off)
        return 0;
    const uint8_t *act = uni ? NULL : m;
    int64_t base = 0; /* the uniform dims' part */
    if (act)
        for (int i = 0; i < n; i++)
            off[i] = act[i] ? 0 : -1;
    else
        memset(off, 0, sizeof(int64_t) * (size_t)n);
    for (int d = 0; d < S->ndim; d++) {
        const int64_t *x = ix[d].p, stride = S->strides[d], dim = S->dims[d];
        int bad = -1;
        if (ix[d].uni) {
            if (x[0] < 0 || x[0] >= dim)
                bad = 0;
            base += x[0] * stride;
        } else if (!act) { /* every lane: check the range, then a plain loop */
            int64_t lo = x[0], hi = x[0];
            for (int i = 1; i < n; i++) {
                lo = x[i] < lo ? x[i] : lo;
                hi = x[i] > hi ? x[i] : hi;
            }
            for (int i = 0; bad < 0 && (lo < 0 || hi >= dim) && i < n; i++)
                if (x[i] < 0 || x[i] >= dim)
                    bad = i;
            for (int i = 0; i < n; i++)
                off[i] += x[i] * stride;
        } else {
            for (int i = 0; i < n && bad < 0; i++) {
                if (off[i] < 0)
                    continue;
                if (x[i] < 0 || x[i] >= dim)
                    bad = i;
                off[i] += x[i] * stride;
            }
        }
        if (bad >= 0) {
            char buf[160];
            kiln_expr_print(e, buf, sizeof buf);
            kiln_set_error(KILN_ERR_INVALID,
                           "te_eval: compute '%s' reads '%s' at index %lld of dim %d (of "
                           "size %lld), outside the tensor: '%s'",
                           E->cur ? E->cur->t->name : "?", S->t->name, (long long)x[bad], d,
                           (long long)dim, buf);
            return 0;
        }
    }
    te_lanes_gather(S->t->dtype, S->data + base * (int64_t)kiln_dtype_size(S->t->dtype), off,
                    act != NULL, out->p, n);
    return 1;
}

/* A checked index (TIR_CHECK): normalized on every lane, and an error
 * (KILN_ERR_RANGE) when it is out of range on a lane m selects; the
 * others give 0, as in generated code. */
static int eval_check(ev *E, tir_node e, const uint8_t *m, val *out) {
    val j, n;
    if (e->nsrc != 2 || te_vkind_of((kiln_dtype)e->src[0]->dtype) != TE_K_I64 ||
        te_vkind_of((kiln_dtype)e->src[1]->dtype) != TE_K_I64)
        return fail_expr(E, "a malformed checked index:", e), 0;
    if (!eval(E, e->src[0], m, &j) || !eval(E, e->src[1], m, &n))
        return 0;
    out->uni = j.uni && n.uni;
    int cnt = LANES(E->n, out->uni), from_end = e->ival != 0;
    const int64_t *jv = j.p, *nv = n.p;
    int64_t *r = out->p;
    for (int i = 0; i < cnt; i++) {
        int64_t x = jv[j.uni ? 0 : i], ext = nv[n.uni ? 0 : i];
        int ok = x < ext && (from_end ? x >= -ext : x >= 0);
        if (!ok && (out->uni ? any_active(E, m) : !m || m[i])) {
            char buf[160];
            kiln_expr_print(e, buf, sizeof buf);
            E->fail = kiln_set_error(KILN_ERR_RANGE,
                                     "te_eval: compute '%s': index %lld is out of range for a "
                                     "dim of %lld (valid: %s%lld to %lld): '%s'",
                                     E->cur ? E->cur->t->name : "(shape)", (long long)x,
                                     (long long)ext, from_end ? "-" : "",
                                     (long long)(from_end ? ext : 0), (long long)(ext - 1), buf);
            return 0;
        }
        r[i] = !ok ? 0 : x < 0 ? x + ext : x;
    }
    return 1;
}

/* a && b or a || b, b evaluated only on the lanes where a does not decide. */
static int eval_logic(ev *E, tir_node e, const uint8_t *m, val *out) {
    int is_and = e->op == TIR_AND;
    val a, b;
    if (!eval(E, e->src[0], m, &a))
        return 0;
    const int64_t *av = a.p;
    int64_t *r = out->p;
    if (a.uni) {
        if ((av[0] != 0) != is_and) { /* decided */
            r[0] = !is_and;
            out->uni = 1;
            return 1;
        }
        if (!eval(E, e->src[1], m, &b))
            return 0;
        const int64_t *bv = b.p;
        out->uni = b.uni;
        for (int i = 0; i < LANES(E->n, b.uni); i++)
            r[i] = bv[i] != 0;
        return 1;
    }
    uint8_t *m2 = scratch(E);
    if (!m2)
        return 0;
    for (int i = 0; i < E->n; i++)
        m2[i] = (uint8_t)((!m || m[i]) && ((av[i] != 0) == is_and));
    if (!eval(E, e->src[1], m2, &b))
        return 0;
    const int64_t *bv = b.p;
    out->uni = 0;
    for (int i = 0; i < E->n; i++)
        r[i] = is_and ? (av[i] && bv[b.uni ? 0 : i]) : (av[i] || bv[b.uni ? 0 : i]);
    return 1;
}

static int eval_select(ev *E, tir_node e, const uint8_t *m, val *out) {
    val c, t, f;
    if (!eval(E, e->src[0], m, &c))
        return 0;
    const int64_t *cv = c.p;
    if (c.uni) { /* one branch: its value is the select's */
        if (!eval(E, e->src[cv[0] ? 1 : 2], m, &t))
            return 0;
        memcpy(out->p, t.p, (size_t)LANES(E->n, t.uni) * lane_size((kiln_dtype)e->dtype));
        out->uni = t.uni;
        return 1;
    }
    uint8_t *mt = scratch(E), *mf = scratch(E);
    if (!mt || !mf)
        return 0;
    for (int i = 0; i < E->n; i++) {
        int on = !m || m[i];
        mt[i] = (uint8_t)(on && cv[i]);
        mf[i] = (uint8_t)(on && !cv[i]);
    }
    /* each branch's lanes are copied out before the other is evaluated */
    out->uni = 0;
    char *r = out->p;
    size_t ls = lane_size((kiln_dtype)e->dtype);
    if (!eval(E, e->src[1], mt, &t))
        return 0;
    for (int i = 0; i < E->n; i++)
        if (cv[i])
            memcpy(r + (size_t)i * ls, (char *)t.p + (size_t)(t.uni ? 0 : i) * ls, ls);
    if (!eval(E, e->src[2], mf, &f))
        return 0;
    for (int i = 0; i < E->n; i++)
        if (!cv[i])
            memcpy(r + (size_t)i * ls, (char *)f.p + (size_t)(f.uni ? 0 : i) * ls, ls);
    return 1;
}

/* A dot product (TIR_DOT2, TIR_DOT4): int32 sum of the pairs' products. */
static int eval_dot(ev *E, tir_node e, const uint8_t *m, val *out) {
    int k = tir_dot_pairs((tir_intrin)e->aux);
    val a[8];
    out->uni = 1;
    for (int j = 0; j < 2 * k; j++) {
        if (!tir_is_int_dtype((kiln_dtype)e->src[j]->dtype) || e->src[j]->dtype == KILN_BOOL)
            return fail_expr(E, "a dot product of non-integers:", e), 0;
        if (!eval(E, e->src[j], m, &a[j]))
            return 0;
        out->uni &= a[j].uni;
    }
    int n = LANES(E->n, out->uni);
    int64_t *r = out->p;
    for (int i = 0; i < n; i++) {
        int64_t acc = 0;
        for (int j = 0; j < k; j++)
            acc += ((const int64_t *)a[j].p)[a[j].uni ? 0 : i] *
                   ((const int64_t *)a[k + j].p)[a[k + j].uni ? 0 : i];
        r[i] = te_wrap_int(KILN_INT32, acc);
    }
    return 1;
}

static int eval_call(ev *E, tir_node e, const uint8_t *m, val *out) {
    tir_intrin f = (tir_intrin)e->aux;
    kiln_dtype dt = (kiln_dtype)e->dtype;
    if (f >= TIR_INTRIN_COUNT || (int)e->nsrc != tir_intrin_nargs(f))
        return fail_expr(E, "a call with an unknown intrinsic or argument count:", e), 0;
    if (tir_dot_pairs(f))
        return dt == KILN_INT32 ? eval_dot(E, e, m, out)
                                : (fail_expr(E, "a dot product not of int32:", e), 0);
    val a, b = {NULL, 1};
    if (!eval(E, e->src[0], m, &a))
        return 0;
    if (e->nsrc == 2 && !eval(E, e->src[1], m, &b))
        return 0;
    out->uni = a.uni && b.uni;
    int n = LANES(E->n, out->uni), sa = !a.uni, sb = !b.uni;
    if (te_lanes_call(f, dt, a.p, sa, b.p, sb, out->p, n))
        return 1;
    char what[96];
    snprintf(what, sizeof what, "intrinsic %s of %s (cast to a float first):", tir_intrin_name(f),
             kiln_dtype_name(dt));
    return fail_expr(E, what, e), 0;
}

static int eval_binary(ev *E, tir_node e, const uint8_t *m, val *out) {
    val a, b;
    if (e->nsrc != 2)
        return fail_expr(E, "a binary node without two operands:", e), 0;
    if (!eval(E, e->src[0], m, &a) || !eval(E, e->src[1], m, &b))
        return 0;
    kiln_dtype odt = (kiln_dtype)e->src[0]->dtype, dt = (kiln_dtype)e->dtype;
    if (e->src[1]->dtype != odt)
        return fail_expr(E, "operands of different dtypes:", e), 0;
    out->uni = a.uni && b.uni;
    int n = LANES(E->n, out->uni), sa = !a.uni, sb = !b.uni;
    tir_op op = (tir_op)e->op;
    if (op >= TIR_EQ && op <= TIR_GE) {
        te_lanes_compare(op, odt, a.p, sa, b.p, sb, out->p, n);
        return 1;
    }
    te_lanes_arith(op, dt, a.p, sa, b.p, sb, out->p, n);
    return 1;
}

/* The value of e on the pass's lanes; out->p is set to where it lives. */
static int compute(ev *E, tir_node e, const uint8_t *m, val *out) {
    kiln_dtype dt = (kiln_dtype)e->dtype;
    if (e->lanes != 1)
        return fail_expr(E, "a vector is not a tensor expression:", e), 0;
    if (tir_is_stmt(e) || !kiln_dtype_is_data(dt)) {
        if (e->op == TIR_VAR)
            return eval_var(E, e, out);
        return fail_expr(E, "not a scalar tensor expression:", e), 0;
    }
    switch ((tir_op)e->op) {
    case TIR_INT:
        out->uni = 1;
        if (te_vkind_of(dt) == TE_K_I64)
            ((int64_t *)out->p)[0] = te_wrap_int(dt, e->ival);
        else if (te_vkind_of(dt) == TE_K_F32) {
            ((float *)out->p)[0] = (float)e->ival;
            te_round_lanes(dt, out->p, 1);
        } else
            ((double *)out->p)[0] = (double)e->ival;
        return 1;
    case TIR_FLOAT:
        out->uni = 1;
        if (te_vkind_of(dt) == TE_K_I64)
            ((int64_t *)out->p)[0] = te_float_to_int(e->fval, dt);
        else if (te_vkind_of(dt) == TE_K_F32) {
            ((float *)out->p)[0] = (float)e->fval;
            te_round_lanes(dt, out->p, 1);
        } else
            ((double *)out->p)[0] = e->fval;
        return 1;
    case TIR_VAR: return eval_var(E, e, out);
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
    case TIR_GE: return eval_binary(E, e, m, out);
    case TIR_AND:
    case TIR_OR: return eval_logic(E, e, m, out);
    case TIR_NOT: {
        val a;
        if (!eval(E, e->src[0], m, &a))
            return 0;
        out->uni = a.uni;
        for (int i = 0; i < LANES(E->n, a.uni); i++)
            ((int64_t *)out->p)[i] = ((const int64_t *)a.p)[i] == 0;
        return 1;
    }
    case TIR_SELECT: return eval_select(E, e, m, out);
    case TIR_CAST: {
        val a;
        if (!eval(E, e->src[0], m, &a))
            return 0;
        out->uni = a.uni;
        te_lanes_convert(dt, (kiln_dtype)e->src[0]->dtype, a.p, out->p, LANES(E->n, a.uni));
        return 1;
    }
    case TIR_CALL: return eval_call(E, e, m, out);
    case TIR_TENSOR_READ: return eval_read(E, e, m, out);
    case TIR_CHECK: return eval_check(E, e, m, out);
    case TIR_REDUCE:
        return fail_expr(E, "a reduction that is not the whole body of its compute:", e), 0;
    default: {
        char what[80];
        snprintf(what, sizeof what, "%s is not a tensor expression:", tir_op_name((tir_op)e->op));
        return fail_expr(E, what, e), 0;
    }
    }
}

static int eval(ev *E, tir_node e, const uint8_t *m, val *out) {
    int si = pm_get(&E->slot_of, e);
    slot *s = si >= 0 ? &E->slots[si] : NULL;
    if (s && s->gen == (s->variant ? E->gen_iter : E->gen_chunk)) {
        out->p = s->p;
        out->uni = s->uni;
        return 1;
    }
    if (s && !m && !s->buf)
        s->buf = kiln_malloc(CH * LANE_BYTES);
    out->p = s && !m ? s->buf : scratch(E);
    if (!out->p)
        return 0;
    if (!compute(E, e, m, out))
        return 0;
    if (s && !m) {
        s->p = out->p;
        s->uni = out->uni;
        s->gen = s->variant ? E->gen_iter : E->gen_chunk;
    }
    return 1;
}

/* ---- stages ------------------------------------------------------------------------------ */

static int stage_index(ev *E, kiln_tensor *t);
static int run_stage(ev *E, int si);

/* Evaluate every stage that e reads (through reduce domains too) that is
 * not evaluated yet; seen marks the nodes visited. */
static int eval_deps(ev *E, tir_node e, const kiln_tensor *self, ptrmap *seen) {
    if (pm_get(seen, e) >= 0)
        return 1;
    if (!pm_put(seen, e, 1))
        return 0;
    if (e->op == TIR_TENSOR_READ && e->ptr != self) {
        int si = stage_index(E, (kiln_tensor *)e->ptr);
        if (si < 0)
            return 0;
        if (E->st[si].state == 1)
            return kiln_set_error(KILN_ERR_INVALID, "te_eval: tensor '%s' depends on itself",
                                  E->st[si].t->name),
                   0;
        if (E->st[si].state == 0 && !run_stage(E, si))
            return 0;
    }
    const te_dom *dom = e->op == TIR_VAR && e->aux == TE_AXIS_REDUCE ? te_axis_dom(e) : NULL;
    if (dom && (!eval_deps(E, dom->min, self, seen) || !eval_deps(E, dom->extent, self, seen)))
        return 0;
    for (uint32_t i = 0; i < e->nsrc; i++)
        if (!eval_deps(E, e->src[i], self, seen))
            return 0;
    return 1;
}

/* Make a slot for every node of the body, marking those that use a reduce
 * axis (variant); *variant says whether e does. */
static int prepare(ev *E, tir_node e, int *variant) {
    int k = pm_get(&E->slot_of, e);
    if (k >= 0) {
        *variant = E->slots[k].variant;
        return 1;
    }
    int var = 0;
    for (int i = 0; i < E->nred; i++)
        var |= e == E->rvar[i];
    for (uint32_t i = 0; i < e->nsrc; i++) {
        int v = 0;
        if (!prepare(E, e->src[i], &v))
            return 0;
        var |= v;
    }
    if (E->nslots % 64 == 0) {
        slot *ns = kiln_realloc(E->slots, sizeof(slot) * (size_t)(E->nslots + 64));
        if (!ns)
            return 0;
        E->slots = ns;
    }
    slot *s = &E->slots[E->nslots];
    memset(s, 0, sizeof *s);
    s->variant = var;
    s->stage = e->op == TIR_TENSOR_READ ? pm_get(&E->stage_of, e->ptr) : -1;
    if (!pm_put(&E->slot_of, e, E->nslots))
        return 0;
    E->nslots++;
    *variant = var;
    return 1;
}

/* acc[i] = combine(acc[i], x[i]) for n lanes (x uniform: x[0]). */
static void combine_lanes(tir_combiner c, kiln_dtype dt, void *acc, const val *x, int n) {
    te_lanes_arith(te_combine_op(c), dt, acc, 1, x->p, !x->uni, acc, n);
}

static void fold_lanes(tir_combiner c, kiln_dtype dt, void *acc, const val *x, int n) {
    for (int i = 0; i < n; i++) {
        val one = {(char *)x->p + (size_t)(x->uni ? 0 : i) * lane_size(dt), 1};
        combine_lanes(c, dt, acc, &one, 1);
    }
}

/* Begin a pass over n lanes. */
static void new_pass(ev *E, int n, int chunk) {
    E->n = n;
    E->used_scratch = 0;
    if (chunk)
        E->gen_chunk = ++E->gen;
    E->gen_iter = ++E->gen;
}

/* The reduction's steps from axis level r inward, for the current lanes. */
static int reduce_steps(ev *E, tir_node body, int r, void *acc) {
    const te_dom *dom = te_axis_dom(body->src[1 + r]);
    int64_t lo, ext;
    if (!dom)
        return fail_expr(E, "a reduce axis without a domain:", body->src[1 + r]), 0;
    /* The domain may depend on the outer reduce axes, whose values have
       changed since the body last ran: a node it shares with the body
       (hash-consing) must not come from the cache of that previous step. */
    E->used_scratch = 0;
    E->gen_iter = ++E->gen;
    if (!eval_int(E, dom->min, &lo) || !eval_int(E, dom->extent, &ext))
        return 0;
    tir_combiner c = (tir_combiner)body->aux;
    kiln_dtype dt = (kiln_dtype)body->dtype;
    if (r == E->lane_rvar) { /* the innermost axis across the lanes, one element */
        for (int64_t k0 = 0; k0 < ext; k0 += CH) {
            int n = (int)(ext - k0 < CH ? ext - k0 : CH);
            new_pass(E, n, 0);
            for (int i = 0; i < n; i++)
                E->lane_rvals[i] = lo + k0 + i;
            val x;
            if (!eval(E, body->src[0], NULL, &x))
                return 0;
            fold_lanes(c, dt, acc, &x, n);
        }
        return 1;
    }
    int n = E->n;
    for (int64_t k = 0; k < ext; k++) {
        E->rval[r] = lo + k;
        if (r + 1 < E->nred) {
            if (!reduce_steps(E, body, r + 1, acc))
                return 0;
            E->n = n;
            continue;
        }
        new_pass(E, n, 0);
        val x;
        if (!eval(E, body->src[0], NULL, &x))
            return 0;
        combine_lanes(c, dt, acc, &x, n);
    }
    return 1;
}

static int64_t shape_dim(ev *E, kiln_tensor *t, int d, int *ok) {
    int64_t v = 0;
    stage *cur = E->cur;
    E->cur = NULL;
    int nred = E->nred;
    E->nred = 0;
    E->n = 1;
    E->used_scratch = 0;
    *ok = eval_int(E, t->shape[d], &v);
    E->cur = cur;
    E->nred = nred;
    if (*ok && v < 0) {
        kiln_set_error(KILN_ERR_INVALID, "te_eval: tensor '%s' has dim %d = %lld", t->name, d,
                       (long long)v);
        *ok = 0;
    }
    return v;
}

/* The stage of t (added on first sight), or -1 with an error. */
static int stage_index(ev *E, kiln_tensor *t) {
    int i = pm_get(&E->stage_of, t);
    if (i >= 0)
        return i;
    if (t->kind == TE_PLACEHOLDER)
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: no value for placeholder '%s'", t->name),
               -1;
    if (E->nst == E->cap_st) {
        int ncap = E->cap_st ? E->cap_st * 2 : 16;
        stage *ns = kiln_realloc(E->st, sizeof(stage) * (size_t)ncap);
        if (!ns)
            return -1;
        E->st = ns;
        E->cap_st = ncap;
    }
    stage *S = &E->st[E->nst];
    memset(S, 0, sizeof *S);
    S->t = t;
    S->ndim = t->ndim;
    S->numel = 1;
    int ok = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        S->dims[d] = shape_dim(E, t, d, &ok);
        if (!ok)
            return -1;
    }
    for (int d = t->ndim - 1; d >= 0; d--) {
        S->strides[d] = S->numel;
        if (!kiln_mul_ok(S->numel, S->dims[d], &S->numel))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "te_eval: tensor '%s' has more elements than "
                                  "int64 can count",
                                  t->name),
                   -1;
    }
    if (!pm_put(&E->stage_of, t, E->nst))
        return -1;
    return E->nst++;
}

/* The lanes' data axis values for elements [start, start + n). */
static void set_axes(ev *E, const stage *S, int64_t start, int n) {
    int64_t idx[16], last[16], a = start, b = start + n - 1;
    for (int d = S->ndim - 1; d >= 0; d--) {
        int64_t dim = S->dims[d] ? S->dims[d] : 1;
        idx[d] = a % dim;
        last[d] = b % dim;
        a /= dim;
        b /= dim;
    }
    /* dims up to k are the same on every lane (all before them are) */
    int k = 0;
    for (; k < S->ndim && idx[k] == last[k]; k++) {
        E->axis_uni[k] = 1;
        E->axis_vals[k][0] = idx[k];
    }
    for (int d = k; d < S->ndim; d++)
        E->axis_uni[d] = 0;
    if (k == S->ndim)
        return;
    if (k == S->ndim - 1) { /* within one row: the last dim counts up */
        for (int i = 0; i < n; i++)
            E->axis_vals[k][i] = idx[k] + i;
        return;
    }
    for (int i = 0; i < n; i++) {
        for (int d = k; d < S->ndim; d++)
            E->axis_vals[d][i] = idx[d];
        for (int d = S->ndim - 1; d >= k; d--) { /* odometer */
            if (++idx[d] < S->dims[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Count stage S's elements against the cap; 0 with an error past it. */
static int reserve(ev *E, const stage *S) {
    if (S->numel <= E->budget) {
        E->budget -= S->numel;
        return 1;
    }
    kiln_set_error(KILN_ERR_INVALID,
                   "te_eval: compute '%s' has %lld elements, more than the %lld the evaluation "
                   "may still hold",
                   S->t->name, (long long)S->numel, (long long)E->budget);
    return 0;
}

/* Whether a reduce domain of the stage depends on its data axes. */
static int domain_uses_axes(const ev *E, const kiln_tensor *t) {
    for (int k = 0; k < E->nred; k++) {
        const te_dom *dom = te_axis_dom(E->rvar[k]);
        for (int d = 0; dom && d < t->ndim; d++)
            if (tir_uses_var(dom->min, t->axis[d]) || tir_uses_var(dom->extent, t->axis[d]))
                return 1;
    }
    return 0;
}

/* Evaluate stage si (its producers first) into its buffer. */
static int run_stage(ev *E, int si) {
    kiln_tensor *t = E->st[si].t;
    E->st[si].state = 1;
    if (t->kind != TE_COMPUTE || !t->body)
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: tensor '%s' has no compute", t->name), 0;
    tir_node body = t->body;
    ptrmap seen = {0};
    int ok = eval_deps(E, body, te_is_scan(t) ? t : NULL, &seen);
    pm_free(&seen);
    if (!ok)
        return 0;
    stage *S = &E->st[si]; /* producers may have grown the array */
    int is_reduce = body->op == TIR_REDUCE;
    E->nred = 0;
    E->lane_rvar = -1;
    if (is_reduce) {
        if (body->nsrc < 2 || body->nsrc > 33 || body->aux >= TIR_COMBINER_COUNT)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "te_eval: compute '%s': a reduction with %u "
                                  "axes and combiner %u",
                                  t->name, body->nsrc - 1, body->aux),
                   0;
        E->nred = (int)body->nsrc - 1;
        for (int k = 0; k < E->nred; k++)
            E->rvar[k] = body->src[1 + k];
        /* the innermost reduce axis across the lanes, one element at a
           time: for few elements, or a domain that depends on the data axes */
        if (domain_uses_axes(E, t) || S->numel < CH / 4)
            E->lane_rvar = E->nred - 1;
    }
    int variant = 0;
    if (!prepare(E, is_reduce ? body->src[0] : body, &variant))
        return 0;
    if (!S->arr && !reserve(E, S))
        return 0;
    if (!S->arr) {
        S->own = kiln_malloc((size_t)(S->numel ? S->numel : 1) * kiln_dtype_size(t->dtype));
        if (!S->own)
            return 0;
        S->data = S->own;
    }
    int64_t *lanes = kiln_malloc(sizeof(int64_t) * CH * (size_t)(S->ndim + 1));
    void *acc = kiln_malloc(CH * LANE_BYTES);
    ok = lanes && acc;
    for (int d = 0; ok && d < S->ndim; d++)
        E->axis_vals[d] = lanes + (size_t)d * CH;
    if (ok)
        E->lane_rvals = lanes + (size_t)S->ndim * CH;
    E->cur = S;
    kiln_dtype dt = t->dtype;
    int64_t step = E->lane_rvar >= 0 ? 1 : CH;
    /* a scan: elements in row-major order (each reads only earlier ones
       along the scan axis, at its own index on the others), a pass never
       crossing a step of the scan axis (elements of one step do not read
       each other) */
    int64_t inner = 1;
    for (int d = te_is_scan(t) ? t->scan_axis + 1 : 0; d < S->ndim; d++)
        inner *= S->dims[d];
    int n = 0;
    for (int64_t start = 0; ok && start < S->numel; start += n) {
        int64_t left = inner - start % inner;
        n = (int)(left < step ? left : step);
        set_axes(E, S, start, n);
        new_pass(E, n, 1);
        val x = {acc, 0};
        if (is_reduce) {
            for (int i = 0; i < n; i++)
                te_reduce_identity((tir_combiner)body->aux, dt, acc, i);
            ok = reduce_steps(E, body, 0, acc);
        } else {
            ok = eval(E, body, NULL, &x);
        }
        if (ok)
            te_lanes_store(dt, (char *)S->data, start, x.p, !x.uni, n);
    }
    free(lanes);
    free(acc);
    for (int k = 0; k < E->nslots; k++)
        free(E->slots[k].buf);
    pm_free(&E->slot_of);
    free(E->slots);
    E->slots = NULL;
    E->nslots = 0;
    E->nred = 0;
    E->cur = NULL;
    if (!ok)
        return 0;
    S->state = 2;
    return 1;
}

/* ---- the entry point ------------------------------------------------------------------- */

static int bind_placeholder(ev *E, kiln_tensor *t, const kiln_ndarray *a) {
    if (!t || t->kind != TE_PLACEHOLDER)
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: '%s' is not a placeholder",
                              t ? t->name : "(null)"),
               0;
    if (!a)
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: no value for placeholder '%s'", t->name),
               0;
    if (pm_get(&E->stage_of, t) >= 0)
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: placeholder '%s' is given twice",
                              t->name),
               0;
    if (kiln_ndarray_dtype(a) != t->dtype || kiln_ndarray_ndim(a) != t->ndim)
        return kiln_set_error(KILN_ERR_INVALID,
                              "te_eval: placeholder '%s' is %s of rank %d; "
                              "its value is %s of rank %d",
                              t->name, kiln_dtype_name(t->dtype), t->ndim,
                              kiln_dtype_name(kiln_ndarray_dtype(a)), kiln_ndarray_ndim(a)),
               0;
    if (E->nst == E->cap_st) {
        int ncap = E->cap_st ? E->cap_st * 2 : 16;
        stage *ns = kiln_realloc(E->st, sizeof(stage) * (size_t)ncap);
        if (!ns)
            return 0;
        E->st = ns;
        E->cap_st = ncap;
    }
    stage *S = &E->st[E->nst];
    memset(S, 0, sizeof *S);
    S->t = t;
    S->ndim = t->ndim;
    S->numel = kiln_ndarray_numel(a);
    for (int d = 0; d < t->ndim; d++) {
        int ok;
        int64_t want = shape_dim(E, t, d, &ok);
        if (!ok)
            return 0;
        S->dims[d] = kiln_ndarray_dim(a, d);
        S->strides[d] = kiln_ndarray_stride(a, d);
        if (S->dims[d] != want)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "te_eval: placeholder '%s' has dim %d = %lld; "
                                  "its value has %lld",
                                  t->name, d, (long long)want, (long long)S->dims[d]),
                   0;
    }
    S->data = (const char *)kiln_ndarray_data(a);
    S->state = 2;
    if (!pm_put(&E->stage_of, t, E->nst))
        return 0;
    E->nst++;
    return 1;
}

kiln_status te_eval(int nout, kiln_tensor *const *outputs, int nin,
                    kiln_tensor *const *placeholders, const kiln_ndarray *const *values,
                    const te_eval_options *opts, kiln_ndarray **results) {
    if (nout < 1 || !outputs || !results || nin < 0 || (nin && (!placeholders || !values)))
        return kiln_set_error(KILN_ERR_INVALID, "te_eval: bad arguments");
    for (int k = 0; k < nout; k++) {
        results[k] = NULL;
        if (!outputs[k])
            return kiln_set_error(KILN_ERR_INVALID, "te_eval: output %d is NULL", k);
    }
    ev E;
    memset(&E, 0, sizeof E);
    E.ctx = outputs[0]->ctx;
    E.opt = opts;
    E.budget = opts && opts->max_elements > 0 ? opts->max_elements : TE_EVAL_MAX_ELEMENTS;
    E.lane_rvar = -1;
    int ok = 1;
    for (int i = 0; i < nin && ok; i++)
        ok = bind_placeholder(&E, placeholders[i], values[i]);
    /* output stages get their result arrays first, so they are written in place */
    for (int k = 0; k < nout && ok; k++) {
        int si = stage_index(&E, outputs[k]);
        ok = si >= 0;
        if (!ok)
            break;
        stage *S = &E.st[si];
        if (S->t->kind == TE_PLACEHOLDER || S->arr)
            continue;
        if (!(ok = reserve(&E, S)))
            break;
        S->arr = kiln_ndarray_empty(S->t->dtype, S->ndim, S->dims);
        ok = S->arr != NULL;
        if (ok)
            S->data = kiln_ndarray_data(S->arr);
    }
    for (int k = 0; k < nout && ok; k++) {
        int si = pm_get(&E.stage_of, outputs[k]);
        if (E.st[si].state == 0)
            ok = run_stage(&E, si);
    }
    for (int k = 0; k < nout && ok; k++) {
        stage *S = &E.st[pm_get(&E.stage_of, outputs[k])];
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= outputs[j] == outputs[k];
        if (S->arr && !dup) {
            results[k] = S->arr;
            S->arr = NULL;
            continue;
        }
        /* a placeholder, or an output given twice: a compact copy */
        const kiln_ndarray *src = dup ? results[0] : NULL;
        for (int j = 0; j < k && dup; j++)
            if (outputs[j] == outputs[k])
                src = results[j];
        if (!src) {
            for (int i = 0; i < nin; i++)
                if (placeholders[i] == outputs[k])
                    src = values[i];
        }
        results[k] = kiln_ndarray_empty(S->t->dtype, S->ndim, S->dims);
        ok = results[k] && kiln_ndarray_copy(results[k], src) == KILN_OK;
    }
    for (int i = 0; i < E.nst; i++) {
        free(E.st[i].own);
        kiln_ndarray_free(E.st[i].arr);
    }
    free(E.st);
    pm_free(&E.stage_of);
    pm_free(&E.slot_of);
    free(E.slots);
    for (int i = 0; i < E.nscratch; i++)
        free(E.scratch[i]);
    free(E.scratch);
    if (!ok) {
        for (int k = 0; k < nout; k++) {
            kiln_ndarray_free(results[k]);
            results[k] = NULL;
        }
        const char *e = kiln_last_error();
        if (E.fail)
            return E.fail;
        return *e ? KILN_ERR_INVALID : kiln_set_error(KILN_ERR_NOMEM, "te_eval: out of memory");
    }
    return KILN_OK;
}
