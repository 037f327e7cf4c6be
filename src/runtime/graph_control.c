/* graph_control.c: running a plan's control nodes (docs/CONTROL_FLOW.md).
 * A control node's bodies are models of their own (graph_plan.c reads
 * them); the executor hands this file the node's input values and a way to
 * run a body (its kiln_model_run_alloc), and gets new arrays for the
 * node's outputs, whose shapes then bind the node's size variables.
 *
 *   If    reads its condition and runs one branch on the captured values.
 *   Loop  runs its body while the iteration number is below the trip count
 *         (0 to 2^31) and the condition holds, carrying values (which keep
 *         their shape) and stacking each scan output along a new axis 0.
 *   Scan  runs its body over the slices of the scan inputs along their
 *         axes (forward or reversed), carrying values and writing each scan
 *         output's slices along its axis; with `batch`, once per index of
 *         dim 0 of the carried and scan values (ONNX Scan 8).
 *
 * Each body runs through the model's pool of run states, so the state of
 * a body is made once and reused by every iteration. Every error names the
 * node and what was wrong with the values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_control.h"

/* The most iterations a Loop may run (its trip count's limit too). */
#define MAX_TRIP ((int64_t)1 << 31)

int64_t graph_control_max_iterations = MAX_TRIP;

/* An error unless iteration t (counted from 0) is within the limit. */
#define ITERATION_OK(r, t)                                                                         \
    ((t) < graph_control_max_iterations                                                            \
         ? KILN_OK                                                                                 \
         : CTL_ERR(r, KILN_ERR_INVALID, "more than %lld iterations in one run",                    \
                   (long long)graph_control_max_iterations))

typedef struct {
    const kiln_model *m;
    int nid;
    const plan_node *n;
    const plan_control *c;
    graph_body_fn run;
    unsigned flags;
    const int64_t (*hint)[KILN_MAX_NDIM]; /* per output: its dims if known before it runs */
} ctl;

/* An error about control node r->nid, of status st. */
#define CTL_ERR(r, st, ...)                                                                        \
    (kiln_set_error(st, __VA_ARGS__),                                                              \
     kiln_error_prefix("node %d '%s' (%s)", (r)->nid, (r)->n->name, (r)->n->func), st)

static void free_arrays(kiln_ndarray **a, int n) {
    for (int i = 0; i < n; i++) {
        kiln_ndarray_free(a[i]);
        a[i] = NULL;
    }
}

static void shape_of(const kiln_ndarray *a, int64_t *shape) {
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        shape[d] = kiln_ndarray_dim(a, d);
}

static int same_shape(const kiln_ndarray *a, const kiln_ndarray *b) {
    if (kiln_ndarray_dtype(a) != kiln_ndarray_dtype(b) ||
        kiln_ndarray_ndim(a) != kiln_ndarray_ndim(b))
        return 0;
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        if (kiln_ndarray_dim(a, d) != kiln_ndarray_dim(b, d))
            return 0;
    return 1;
}

static kiln_ndarray *dup(const kiln_ndarray *a) {
    int64_t shape[KILN_MAX_NDIM];
    shape_of(a, shape);
    kiln_ndarray *r = kiln_ndarray_empty(kiln_ndarray_dtype(a), kiln_ndarray_ndim(a), shape);
    if (r && kiln_ndarray_copy(r, a) != KILN_OK) {
        kiln_ndarray_free(r);
        return NULL;
    }
    return r;
}

/* The value of a one-element int64 or bool tensor; 0 if it is not one. */
static int read_scalar(const kiln_ndarray *a, int64_t *v) {
    if (kiln_ndarray_numel(a) != 1)
        return 0;
    if (kiln_ndarray_dtype(a) == KILN_INT64)
        *v = *(const int64_t *)kiln_ndarray_data(a);
    else if (kiln_ndarray_dtype(a) == KILN_BOOL)
        *v = *(const uint8_t *)kiln_ndarray_data(a) != 0;
    else
        return 0;
    return 1;
}

/* Copy between the slice at index t along `axis` of `full` and `slice`
 * (full's shape without that axis): to_full 1 writes the slice into full. */
static void axis_copy(kiln_ndarray *full, int axis, int64_t t, kiln_ndarray *slice, int to_full) {
    int64_t outer = 1, inner = (int64_t)kiln_dtype_size(kiln_ndarray_dtype(full));
    int64_t len = kiln_ndarray_dim(full, axis);
    for (int d = 0; d < axis; d++)
        outer *= kiln_ndarray_dim(full, d);
    for (int d = axis + 1; d < kiln_ndarray_ndim(full); d++)
        inner *= kiln_ndarray_dim(full, d);
    unsigned char *f = kiln_ndarray_data(full), *s = kiln_ndarray_data(slice);
    for (int64_t o = 0; o < outer && inner; o++) {
        unsigned char *fp = f + (o * len + t) * inner, *sp = s + o * inner;
        memcpy(to_full ? fp : sp, to_full ? sp : fp, (size_t)inner);
    }
}

/* A new array of a's dtype and shape with dim `axis` removed. */
static kiln_ndarray *slice_like(const kiln_ndarray *a, int axis) {
    int64_t shape[KILN_MAX_NDIM];
    int nd = 0;
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        if (d != axis)
            shape[nd++] = kiln_ndarray_dim(a, d);
    return kiln_ndarray_empty(kiln_ndarray_dtype(a), nd, shape);
}

/* A new array of s's dtype and shape with a dim of length t inserted at axis. */
static kiln_ndarray *stacked_like(const kiln_ndarray *s, int axis, int64_t t) {
    int64_t shape[KILN_MAX_NDIM];
    int nd = kiln_ndarray_ndim(s) + 1;
    for (int d = 0, j = 0; d < nd; d++)
        shape[d] = d == axis ? t : kiln_ndarray_dim(s, j++);
    return kiln_ndarray_empty(kiln_ndarray_dtype(s), nd, shape);
}

/* Output o when the op ran no iteration: its dims as known before the run,
 * an unknown one (a size only the run would give) 0, dim `axis` t. */
static kiln_ndarray *empty_output(const ctl *r, int o, int axis, int64_t t) {
    const plan_entry *en = &r->m->entries[r->n->first + o];
    int64_t shape[KILN_MAX_NDIM];
    for (int d = 0; d < en->ndim; d++)
        shape[d] = d == axis ? t : r->hint[o][d] >= 0 ? r->hint[o][d] : 0;
    return kiln_ndarray_empty(en->dtype, en->ndim, shape);
}

static kiln_status run_body(const ctl *r, int k, const kiln_ndarray *const *in,
                            kiln_ndarray **out) {
    kiln_status st = r->run(r->c->bodies[k], in, out, r->flags);
    if (st)
        kiln_error_prefix("node %d '%s' (%s): body %d", r->nid, r->n->name, r->n->func, k);
    return st;
}

/* `now`, value i in iteration `iter`, must have the shape of `first`, as
 * `what` says: a carried value keeps the shape it entered with, a scan
 * output's slices keep iteration 0's. */
static kiln_status same_or_fail(const ctl *r, int carried, int i, const kiln_ndarray *first,
                                const kiln_ndarray *now, int64_t iter) {
    if (same_shape(first, now))
        return KILN_OK;
    char a[256], b[256];
    return CTL_ERR(r, KILN_ERR_INVALID, "%s %d is %s %s but %s in iteration %lld: %s",
                   carried ? "carried value" : "scan output", i,
                   graph_array_str(a, sizeof a, first), carried ? "as it enters" : "in iteration 0",
                   graph_array_str(b, sizeof b, now), (long long)iter,
                   carried ? "a carried value keeps its shape" : "its slices must have one shape");
}

/* Slice s of output k (`what`), made at index `at` (`when`), must fit the
 * output `full` made from index 0's: full's dtype and dims but `axis`. */
static kiln_status slice_fits(const ctl *r, const char *what, int k, const kiln_ndarray *full,
                              int axis, const kiln_ndarray *s, const char *when, int64_t at) {
    int ok = kiln_ndarray_dtype(s) == kiln_ndarray_dtype(full) &&
             kiln_ndarray_ndim(s) + 1 == kiln_ndarray_ndim(full);
    for (int d = 0, j = 0; ok && d < kiln_ndarray_ndim(full); d++)
        ok = d == axis || kiln_ndarray_dim(full, d) == kiln_ndarray_dim(s, j++);
    if (ok)
        return KILN_OK;
    char a[256], b[256];
    return CTL_ERR(r, KILN_ERR_INVALID,
                   "%s %d is %s at %s %lld, which does not fit %s made from %s 0: its slices "
                   "must have one shape",
                   what, k, graph_array_str(a, sizeof a, s), when, (long long)at,
                   graph_array_str(b, sizeof b, full), when);
}

/* ---- if ------------------------------------------------------------------------ */

static kiln_status run_if(const ctl *r, const kiln_ndarray *const *in, kiln_ndarray **out) {
    int64_t c;
    if (!read_scalar(in[0], &c))
        return CTL_ERR(r, KILN_ERR_INVALID, "the condition must hold one value");
    return run_body(r, c ? 0 : 1, in + 1, out);
}

/* ---- loop ---------------------------------------------------------------------- */

typedef struct {
    kiln_ndarray **a;
    int64_t n, cap;
} array_list;

static kiln_status list_push(array_list *l, kiln_ndarray *a) {
    if (l->n == l->cap) {
        int64_t ncap = l->cap ? l->cap * 2 : 16;
        kiln_ndarray **na = kiln_realloc((void *)l->a, sizeof(*na) * (size_t)ncap);
        if (!na)
            return KILN_ERR_NOMEM;
        l->a = na;
        l->cap = ncap;
    }
    l->a[l->n++] = a;
    return KILN_OK;
}

/* The slices of list l stacked along a new axis 0 (output o). */
static kiln_ndarray *stack(const ctl *r, const array_list *l, int o) {
    if (l->n == 0)
        return empty_output(r, o, 0, 0);
    kiln_ndarray *s = stacked_like(l->a[0], 0, l->n);
    for (int64_t t = 0; s && t < l->n; t++)
        axis_copy(s, 0, t, l->a[t], 1);
    return s;
}

static kiln_status run_loop(const ctl *r, const kiln_ndarray *const *in, kiln_ndarray **out) {
    const plan_node *n = r->n;
    int nc = r->c->num_carried, nk = n->noutputs - nc, nin = n->ninputs;
    int64_t trip, cond;
    if (!read_scalar(in[0], &trip) || !read_scalar(in[1], &cond))
        return CTL_ERR(r, KILN_ERR_INVALID, "the trip count and the condition must hold one value");
    if (trip < 0 || trip > MAX_TRIP)
        return CTL_ERR(r, KILN_ERR_INVALID, "the trip count is %lld, not in [0, 2^31]",
                       (long long)trip);
    kiln_ndarray *carry[PLAN_MAX_CONTROL_IO] = {0}, *bout[PLAN_MAX_CONTROL_IO + 1] = {0};
    const kiln_ndarray *bin[PLAN_MAX_CONTROL_IO];
    array_list *scans = kiln_calloc((size_t)(nk ? nk : 1), sizeof *scans);
    kiln_ndarray *iter = kiln_ndarray_empty(KILN_INT64, 0, NULL);
    kiln_ndarray *cv = kiln_ndarray_empty(KILN_BOOL, 0, NULL);
    kiln_status st = scans && iter && cv ? KILN_OK : KILN_ERR_NOMEM;
    for (int i = 0; i < nc && !st; i++)
        if (!(carry[i] = dup(in[2 + i])))
            st = KILN_ERR_NOMEM;
    for (int64_t t = 0; t < trip && cond && !st; t++) {
        *(int64_t *)kiln_ndarray_data(iter) = t;
        *(uint8_t *)kiln_ndarray_data(cv) = 1;
        if ((st = ITERATION_OK(r, t)) != KILN_OK)
            break;
        bin[0] = iter;
        bin[1] = cv;
        for (int i = 2; i < nin; i++)
            bin[i] = i < 2 + nc ? carry[i - 2] : in[i];
        if ((st = run_body(r, 0, bin, bout)) != KILN_OK)
            break;
        if (!read_scalar(bout[0], &cond))
            st = CTL_ERR(r, KILN_ERR_INVALID, "the body's condition must hold one value");
        for (int i = 0; i < nc && !st; i++)
            st = same_or_fail(r, 1, i, in[2 + i], bout[1 + i], t);
        for (int j = 0; j < nk && !st; j++)
            if (t > 0)
                st = same_or_fail(r, 0, j, scans[j].a[0], bout[1 + nc + j], t);
        if (st) {
            free_arrays(bout, 1 + n->noutputs);
            break;
        }
        kiln_ndarray_free(bout[0]);
        for (int i = 0; i < nc; i++) {
            kiln_ndarray_free(carry[i]);
            carry[i] = bout[1 + i];
        }
        for (int j = 0; j < nk && !st; j++) {
            if ((st = list_push(&scans[j], bout[1 + nc + j])) != KILN_OK)
                free_arrays(&bout[1 + nc + j], nk - j);
        }
    }
    for (int i = 0; i < nc && !st; i++) {
        out[i] = carry[i];
        carry[i] = NULL;
    }
    for (int j = 0; j < nk && !st; j++)
        if (!(out[nc + j] = stack(r, &scans[j], nc + j)))
            st = KILN_ERR_NOMEM;
    free_arrays(carry, nc);
    for (int j = 0; scans && j < nk; j++) {
        free_arrays(scans[j].a, (int)scans[j].n);
        free((void *)scans[j].a);
    }
    free(scans);
    kiln_ndarray_free(iter);
    kiln_ndarray_free(cv);
    if (st)
        free_arrays(out, n->noutputs);
    return st;
}

/* ---- scan ---------------------------------------------------------------------- */

/* One scan over inputs in (carried, scan, captured; no batch dim) into new
 * arrays out. */
static kiln_status scan_once(const ctl *r, const kiln_ndarray *const *in, kiln_ndarray **out) {
    const plan_node *n = r->n;
    const plan_control *c = r->c;
    int nc = c->num_carried, ns = c->num_scan_inputs, nk = n->noutputs - nc, nin = n->ninputs;
    int64_t len = kiln_ndarray_dim(in[nc], c->in_axes[0]);
    for (int j = 1; j < ns; j++)
        if (kiln_ndarray_dim(in[nc + j], c->in_axes[j]) != len)
            return CTL_ERR(r, KILN_ERR_INVALID,
                           "scan input %d has %lld slices along its axis but scan input 0 has "
                           "%lld",
                           j, (long long)kiln_ndarray_dim(in[nc + j], c->in_axes[j]),
                           (long long)len);
    kiln_ndarray *carry[PLAN_MAX_CONTROL_IO] = {0}, *slices[PLAN_MAX_CONTROL_IO] = {0};
    kiln_ndarray *bout[PLAN_MAX_CONTROL_IO] = {0};
    const kiln_ndarray *bin[PLAN_MAX_CONTROL_IO];
    kiln_status st = KILN_OK;
    for (int i = 0; i < nc && !st; i++)
        if (!(carry[i] = dup(in[i])))
            st = KILN_ERR_NOMEM;
    for (int j = 0; j < ns && !st; j++)
        if (!(slices[j] = slice_like(in[nc + j], c->in_axes[j])))
            st = KILN_ERR_NOMEM;
    for (int64_t t = 0; t < len && !st; t++) {
        if ((st = ITERATION_OK(r, t)) != KILN_OK)
            break;
        for (int j = 0; j < ns; j++)
            axis_copy((kiln_ndarray *)in[nc + j], c->in_axes[j], c->in_dirs[j] ? len - 1 - t : t,
                      slices[j], 0);
        for (int i = 0; i < nin; i++)
            bin[i] = i < nc ? carry[i] : i < nc + ns ? slices[i - nc] : in[i];
        if ((st = run_body(r, 0, bin, bout)) != KILN_OK)
            break;
        for (int i = 0; i < nc && !st; i++)
            st = same_or_fail(r, 1, i, in[i], bout[i], t);
        for (int k = 0; k < nk && !st; k++) {
            kiln_ndarray *s = bout[nc + k];
            if (t == 0 && !(out[nc + k] = stacked_like(s, c->out_axes[k], len)))
                st = KILN_ERR_NOMEM;
            else if (t > 0)
                st =
                    slice_fits(r, "scan output", k, out[nc + k], c->out_axes[k], s, "iteration", t);
            if (!st)
                axis_copy(out[nc + k], c->out_axes[k], c->out_dirs[k] ? len - 1 - t : t, s, 1);
        }
        for (int i = 0; i < nc && !st; i++) {
            kiln_ndarray_free(carry[i]);
            carry[i] = bout[i];
            bout[i] = NULL;
        }
        free_arrays(bout, n->noutputs);
    }
    for (int i = 0; i < nc && !st; i++) {
        out[i] = carry[i];
        carry[i] = NULL;
    }
    for (int k = 0; k < nk && !st && len == 0; k++) {
        int o = nc + k, b = c->batch;
        /* no slice ran: the output's dims as known, less the batch dim */
        kiln_ndarray *e = empty_output(r, o, -1, 0);
        int64_t shape[KILN_MAX_NDIM];
        if (e) {
            shape_of(e, shape);
            shape[b + c->out_axes[k]] = 0;
            out[o] = kiln_ndarray_empty(kiln_ndarray_dtype(e), kiln_ndarray_ndim(e) - b, shape + b);
        }
        kiln_ndarray_free(e);
        if (!out[o])
            st = KILN_ERR_NOMEM;
    }
    free_arrays(carry, nc);
    free_arrays(slices, ns);
    if (st)
        free_arrays(out, n->noutputs);
    return st;
}

/* ONNX Scan 8: dim 0 of the carried and scan values is a batch, scanned
 * one index at a time. */
static kiln_status run_scan_batch(const ctl *r, const kiln_ndarray *const *in, kiln_ndarray **out) {
    const plan_node *n = r->n;
    int nv = r->c->num_carried + r->c->num_scan_inputs;
    int64_t nb = kiln_ndarray_dim(in[0], 0);
    for (int i = 1; i < nv; i++)
        if (kiln_ndarray_dim(in[i], 0) != nb)
            return CTL_ERR(r, KILN_ERR_INVALID, "input %d's batch is %lld but input 0's is %lld", i,
                           (long long)kiln_ndarray_dim(in[i], 0), (long long)nb);
    kiln_ndarray *sub[PLAN_MAX_CONTROL_IO] = {0}, *sout[PLAN_MAX_CONTROL_IO] = {0};
    const kiln_ndarray *sin[PLAN_MAX_CONTROL_IO];
    kiln_status st = KILN_OK;
    for (int i = 0; i < nv && !st; i++)
        if (!(sub[i] = slice_like(in[i], 0)))
            st = KILN_ERR_NOMEM;
    for (int64_t b = 0; b < nb && !st; b++) {
        for (int i = 0; i < n->ninputs; i++) {
            if (i < nv)
                axis_copy((kiln_ndarray *)in[i], 0, b, sub[i], 0);
            sin[i] = i < nv ? sub[i] : in[i];
        }
        if ((st = scan_once(r, sin, sout)) != KILN_OK)
            break;
        for (int o = 0; o < n->noutputs && !st; o++) {
            if (b == 0 && !(out[o] = stacked_like(sout[o], 0, nb)))
                st = KILN_ERR_NOMEM;
            else if (b > 0)
                st = slice_fits(r, "output", o, out[o], 0, sout[o], "batch index", b);
            if (!st)
                axis_copy(out[o], 0, b, sout[o], 1);
        }
        free_arrays(sout, n->noutputs);
    }
    for (int o = 0; o < n->noutputs && !st && nb == 0; o++)
        if (!(out[o] = empty_output(r, o, 0, 0)))
            st = KILN_ERR_NOMEM;
    free_arrays(sub, nv);
    if (st)
        free_arrays(out, n->noutputs);
    return st;
}

kiln_status graph_control_run(const kiln_model *m, int nid, const kiln_ndarray *const *in,
                              const int64_t (*hint)[KILN_MAX_NDIM], kiln_ndarray **out,
                              graph_body_fn run, unsigned flags) {
    const plan_node *n = &m->nodes[nid];
    ctl r = {m, nid, n, n->ctl, run, flags, hint};
    for (int o = 0; o < n->noutputs; o++)
        out[o] = NULL;
    switch (r.c->kind) {
    case PLAN_IF: return run_if(&r, in, out);
    case PLAN_LOOP: return run_loop(&r, in, out);
    default: return r.c->batch ? run_scan_batch(&r, in, out) : scan_once(&r, in, out);
    }
}
