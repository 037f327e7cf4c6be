/* graph_executor.c: runs a loaded model (graph_plan.c reads mod.json into
 * it). The model (module, plan, weights) is immutable and reference
 * counted; everything a run writes lives in a run state. An executor is a
 * model and one run state; kiln_model_run takes an idle run state from the
 * model's pool (or makes one), so concurrent runs each have their own and
 * memory grows by one run state per concurrent run.
 *
 * A static plan's run state is one arena holding the inputs, activations
 * and outputs, and each kernel call's argument pointers into it and into
 * the shared weights; a run allocates nothing once its state exists.
 *
 * A dynamic plan's run state has one buffer per storage id (weights aside)
 * and the state of one binding of the dim variables: every entry's dims,
 * the kernels' symbolic sizes, the argument pointers and the input and
 * output views. A run binds the variables from its inputs' shapes and
 * checks every input dim against them; when the binding differs from the
 * one the state is set up for, it evaluates the entries' shapes, grows the
 * buffers that are too small (never shrinking one), checks every kernel's
 * signature and binds its sizes, and moves the views. A run whose binding
 * equals the previous one does none of that and allocates nothing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_control.h"
#include "graph_plan.h"

struct run_state {
    run_state *next;      /* in the model's pool */
    unsigned char *arena; /* static plans: every storage id but the weights', at its offset */
    void **args;          /* kernel node n's arguments start at args[n->arg0] */
    kiln_ndarray **views; /* ninputs input views, then noutputs output views */
    /* dynamic plans */
    unsigned char **buf; /* per storage id: its buffer (NULL for a weight's) */
    int64_t *cap;        /* per storage id: the bytes buf holds */
    int64_t total;       /* the bytes of all buffers */
    int64_t *vals;       /* the binding the state is set up for (when ready) */
    int64_t *bind;       /* the binding of the run being prepared */
    int64_t *dims;       /* each entry's dims under vals: entry en's at dims + en->dim0 */
    int64_t *kvars;      /* kernel node n's symbolic sizes at kvars + n->kv0 */
    int64_t *need;       /* scratch: per storage id, the bytes a binding needs */
    char *set;           /* per input: an executor's set_input gave it a value */
    int ready;           /* dims, kvars, args and views are those of vals */
};

struct kiln_executor {
    kiln_model *m;
    run_state *rs;
    unsigned flags; /* KILN_RUN_* for kiln_executor_run */
};

/* ---- run states --------------------------------------------------------------- */

static void state_free(run_state *rs, const kiln_model *m) {
    if (!rs)
        return;
    for (int i = 0; rs->views && i < m->ninputs + m->noutputs; i++)
        kiln_ndarray_free(rs->views[i]);
    for (int s = 0; rs->buf && s < m->nstorage; s++)
        free(rs->buf[s]);
    free(rs->buf);
    free(rs->cap);
    free(rs->vals);
    free(rs->bind);
    free(rs->dims);
    free(rs->kvars);
    free(rs->need);
    free(rs->set);
    free(rs->views);
    free(rs->args);
    free(rs->arena);
    free(rs);
}

/* Make storage id s of a dynamic plan's run state hold at least `bytes`
 * (a new zeroed buffer if it must grow: the old contents are lost). */
static kiln_status grow(run_state *rs, int s, int64_t bytes) {
    if (rs->buf[s] && bytes <= rs->cap[s])
        return KILN_OK;
    int64_t n = (bytes + KILN_ALIGNMENT - 1) / KILN_ALIGNMENT * KILN_ALIGNMENT;
    n = n ? n : KILN_ALIGNMENT; /* bytes <= MAX_STORAGE_BYTES: no overflow */
    rs->total -= rs->cap[s];
    free(rs->buf[s]);
    rs->buf[s] = NULL;
    rs->cap[s] = 0;
    void *p = NULL;
    if (n > graph_run_storage_limit - rs->total || posix_memalign(&p, KILN_ALIGNMENT, (size_t)n))
        return kiln_set_error(KILN_ERR_NOMEM,
                              "cannot allocate %lld bytes for storage_id %d (the run's buffers "
                              "hold %lld bytes already)",
                              (long long)n, s, (long long)rs->total);
    memset(p, 0, (size_t)n);
    rs->buf[s] = p;
    rs->cap[s] = n;
    rs->total += n;
    return KILN_OK;
}

/* Where entry en's data lives in run state rs (a dynamic plan's offsets
 * are 0: graph_views.c). */
static void *entry_data(const kiln_model *m, const run_state *rs, const plan_entry *en) {
    int s = en->storage;
    if (m->weights[s])
        return m->weights[s];
    return m->dynamic ? (void *)rs->buf[s] : (void *)(rs->arena + m->offset[s] + en->offset);
}

/* The view of each input and output of rs, its shape `dims` + en->dim0 (or
 * the plan's, with dims NULL). */
static kiln_status make_views(const kiln_model *m, run_state *rs, const int64_t *dims) {
    for (int i = 0; i < m->ninputs + m->noutputs; i++) {
        const plan_port *p = i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs];
        const plan_entry *en = &m->entries[p->entry];
        rs->views[i] = kiln_ndarray_wrap(entry_data(m, rs, en), en->dtype, en->ndim,
                                         dims ? dims + en->dim0 : en->shape, NULL, 0);
        if (!rs->views[i])
            return KILN_ERR_NOMEM;
    }
    return KILN_OK;
}

/* A dynamic plan's run state: every storage id's buffer at the size its
 * static entries need, the constant dims in dims[] (a symbolic one 0 until
 * a run binds it) and views of those shapes; nothing bound yet. */
static kiln_status dynamic_state_init(const kiln_model *m, run_state *rs) {
    size_t ns = (size_t)m->nstorage, nv = (size_t)(m->vars.n ? m->vars.n : 1);
    rs->buf = kiln_calloc(ns, sizeof *rs->buf);
    rs->cap = kiln_calloc(ns, sizeof *rs->cap);
    rs->need = kiln_calloc(ns, sizeof *rs->need);
    rs->vals = kiln_calloc(nv, sizeof *rs->vals);
    rs->bind = kiln_calloc(nv, sizeof *rs->bind);
    rs->dims = kiln_calloc((size_t)(m->ndims ? m->ndims : 1), sizeof *rs->dims);
    rs->kvars = kiln_calloc((size_t)(m->nkvars ? m->nkvars : 1), sizeof *rs->kvars);
    rs->set = kiln_calloc((size_t)(m->ninputs ? m->ninputs : 1), 1);
    if (!rs->buf || !rs->cap || !rs->need || !rs->vals || !rs->bind || !rs->dims || !rs->kvars ||
        !rs->set)
        return KILN_ERR_NOMEM;
    for (int s = 0; s < m->nstorage; s++)
        if (!m->weights[s] && grow(rs, s, m->min_bytes[s]))
            return KILN_ERR_NOMEM;
    for (int i = 0; i < m->nentries; i++) {
        const plan_entry *en = &m->entries[i];
        for (int d = 0; d < en->ndim; d++)
            rs->dims[en->dim0 + d] = en->shape[d] >= 0 ? en->shape[d] : 0;
    }
    return make_views(m, rs, rs->dims);
}

/* A new run state for m: a static plan's zeroed arena, the argument arrays
 * and the views; a dynamic plan's buffers (dynamic_state_init). */
static run_state *state_new(const kiln_model *m) {
    run_state *rs = kiln_calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    rs->args = kiln_calloc((size_t)(m->nargs ? m->nargs : 1), sizeof(void *));
    rs->views = kiln_calloc((size_t)(m->ninputs + m->noutputs), sizeof(kiln_ndarray *));
    if (!rs->args || !rs->views) {
        state_free(rs, m);
        return NULL;
    }
    if (m->dynamic) {
        if (dynamic_state_init(m, rs)) {
            state_free(rs, m);
            return NULL;
        }
        return rs;
    }
    size_t bytes = m->arena_bytes ? (size_t)m->arena_bytes : KILN_ALIGNMENT;
    void *buf = NULL;
    if (posix_memalign(&buf, KILN_ALIGNMENT, bytes)) {
        kiln_set_error(KILN_ERR_NOMEM, "cannot allocate a run's %zu bytes of activations", bytes);
        state_free(rs, m);
        return NULL;
    }
    memset(buf, 0, bytes);
    rs->arena = buf;
    for (int a = 0; a < m->nargs; a++)
        rs->args[a] = entry_data(m, rs, &m->entries[m->arg_entry[a]]);
    if (make_views(m, rs, NULL)) {
        state_free(rs, m);
        return NULL;
    }
    return rs;
}

/* An idle run state of m's pool, or a new one. */
static run_state *state_acquire(kiln_model *m) {
    pthread_mutex_lock(&m->pool_mu);
    run_state *rs = m->pool;
    if (rs)
        m->pool = rs->next;
    pthread_mutex_unlock(&m->pool_mu);
    return rs ? rs : state_new(m);
}

static void state_release(kiln_model *m, run_state *rs) {
    pthread_mutex_lock(&m->pool_mu);
    rs->next = m->pool;
    m->pool = rs;
    pthread_mutex_unlock(&m->pool_mu);
}

/* ---- binding a dynamic plan's variables ------------------------------------------ */

/* Append "n = 5, from input 'x' dim 0" for each variable x uses. */
static void describe_vars(kstr *s, const kiln_model *m, const dim_expr *x, const int64_t *vals) {
    int first = 1;
    for (int k = 0; k < m->vars.n; k++)
        if (dim_expr_uses(x, k)) {
            if (m->var_port[k] >= 0)
                kstr_printf(s, "%s%s = %lld, from input '%s' dim %d", first ? "" : "; ",
                            m->vars.names[k], (long long)vals[k], m->inputs[m->var_port[k]].name,
                            m->var_dim[k]);
            else
                kstr_printf(s, "%s%s = %lld, value %d of node %d '%s'", first ? "" : "; ",
                            m->vars.names[k], (long long)vals[k], m->var_dim[k], m->var_node[k],
                            m->nodes[m->var_node[k]].name);
            first = 0;
        }
}

/* Add " (n = 5, from input 'x' dim 0)" to the current error. */
static kiln_status add_vars(const kiln_model *m, const dim_expr *x, const int64_t *vals) {
    kstr s;
    kstr_init(&s);
    describe_vars(&s, m, x, vals);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    kiln_set_error(KILN_ERR_INVALID, "%s (%s)", msg, s.buf ? s.buf : "");
    kstr_free(&s);
    return KILN_ERR_INVALID;
}

/* Bind m's variables from the inputs' shapes into vals, and check every
 * symbolic input dim against that binding. The inputs' dtypes, ranks and
 * constant dims are checked already. */
static kiln_status bind_inputs(const kiln_model *m, const kiln_ndarray *const *in, int64_t *vals,
                               const char *what) {
    for (int k = 0; k < m->vars.n; k++) /* a binder's variables: set when it runs */
        vals[k] = m->var_port[k] >= 0 ? kiln_ndarray_dim(in[m->var_port[k]], m->var_dim[k]) : 0;
    for (int i = 0; i < m->ninputs; i++) {
        const plan_entry *en = &m->entries[m->inputs[i].entry];
        const char *name = m->inputs[i].name;
        for (int d = 0; en->expr && d < en->ndim; d++) {
            const dim_expr *x = en->expr[d];
            int64_t want, got = kiln_ndarray_dim(in[i], d);
            if (!x || (x->var >= 0 && m->var_port[x->var] == i && m->var_dim[x->var] == d))
                continue;
            if (dim_expr_eval(x, vals, &want)) {
                kiln_error_prefix("%s: input '%s' dim %d", what, name, d);
                return add_vars(m, x, vals);
            }
            if (want == got)
                continue;
            if (x->var >= 0)
                return kiln_set_error(
                    KILN_ERR_INVALID,
                    "%s: input '%s' dim %d is %lld, but %s = %lld (from input '%s' dim %d)", what,
                    name, d, (long long)got, x->text, (long long)want,
                    m->inputs[m->var_port[x->var]].name, m->var_dim[x->var]);
            kiln_set_error(KILN_ERR_INVALID, "%s: input '%s' dim %d is %lld, but %s = %lld", what,
                           name, d, (long long)got, x->text, (long long)want);
            return add_vars(m, x, vals);
        }
    }
    return KILN_OK;
}

/* Entry i's dims under rs->vals into rs->dims, its bytes into rs->need. */
static kiln_status entry_dims(const kiln_model *m, run_state *rs, int i, const char *what) {
    const plan_entry *en = &m->entries[i];
    int64_t *dims = rs->dims + en->dim0, bytes = (int64_t)kiln_dtype_size(en->dtype);
    char name[300], type[256], run[256];
    int ok = 1;
    for (int d = 0; d < en->ndim; d++) {
        if (en->expr[d] && dim_expr_eval(en->expr[d], rs->vals, &dims[d])) {
            kiln_error_prefix("%s: %s dim %d", what, graph_entry_name(name, sizeof name, m, i), d);
            return add_vars(m, en->expr[d], rs->vals);
        }
        ok = ok && kiln_mul_ok(bytes, dims[d], &bytes) && bytes <= MAX_STORAGE_BYTES;
    }
    if (!ok)
        return kiln_set_error(KILN_ERR_INVALID, "%s: %s is %s, %s in this run: more than 1 TiB",
                              what, graph_entry_name(name, sizeof name, m, i),
                              graph_entry_str(type, sizeof type, en),
                              graph_type_str(run, sizeof run, en->dtype, en->ndim, dims));
    if (rs->need[en->storage] < bytes)
        rs->need[en->storage] = bytes;
    return KILN_OK;
}

/* Entry i's dims under rs->vals, and its storage grown to hold it. */
static kiln_status entry_place(const kiln_model *m, run_state *rs, int i, const char *what) {
    const plan_entry *en = &m->entries[i];
    int s = en->storage;
    if (m->weights[s])
        return KILN_OK;
    rs->need[s] = m->min_bytes[s];
    if (en->expr && entry_dims(m, rs, i, what))
        return KILN_ERR_INVALID;
    if (grow(rs, s, rs->need[s])) {
        kiln_error_prefix("%s", what);
        return KILN_ERR_NOMEM;
    }
    return KILN_OK;
}

/* The view of input or output port i at its entry's dims in this run. */
static void rewrap_port(const kiln_model *m, run_state *rs, int i) {
    const plan_port *p = i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs];
    const plan_entry *en = &m->entries[p->entry];
    ndarray_rewrap(rs->views[i], entry_data(m, rs, en), rs->dims + en->dim0);
}

/* A staged plan (some node binds variables): the inputs' entries and
 * views under the binding; every kernel is set up as it is reached
 * (kernel_setup), the outputs' views after the run. */
static kiln_status staged_setup(const kiln_model *m, run_state *rs, const char *what) {
    rs->ready = 0;
    memcpy(rs->vals, rs->bind, (size_t)m->vars.n * sizeof(int64_t));
    for (int i = 0; i < m->ninputs; i++) {
        if (entry_place(m, rs, m->inputs[i].entry, what))
            return KILN_ERR_INVALID;
        rewrap_port(m, rs, i);
    }
    return KILN_OK;
}

/* Staged plans: kernel node nid's outputs placed under the variables bound
 * so far, its arguments pointed at them and its sizes bound. */
static kiln_status kernel_setup(const kiln_model *m, run_state *rs, int nid, const char *what) {
    const plan_node *n = &m->nodes[nid];
    for (int o = 0; o < n->noutputs; o++)
        if (entry_place(m, rs, n->first + o, what))
            return KILN_ERR_INVALID;
    for (int a = 0; a < n->ninputs + n->noutputs; a++)
        rs->args[n->arg0 + a] = entry_data(m, rs, &m->entries[m->arg_entry[n->arg0 + a]]);
    if (graph_plan_bind_kernel(m, nid, rs->dims, rs->kvars + n->kv0)) {
        kiln_error_prefix("%s: node %d '%s'", what, nid, n->name);
        return KILN_ERR_INVALID;
    }
    return KILN_OK;
}

/* After binder node nid ran: its output's values are its variables'. */
static kiln_status read_binds(const kiln_model *m, run_state *rs, int nid, const char *what) {
    const plan_node *n = &m->nodes[nid];
    const int64_t *v = (const int64_t *)(const void *)rs->buf[m->entries[n->first].storage];
    for (int k = 0; k < n->nbinds; k++) {
        if (v[k] < 0 || v[k] > ((int64_t)1 << 48))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: node %d '%s': the size '%s' computed in this run is %lld, "
                                  "not in [0, 2^48]: the values that decide the op's shape are "
                                  "invalid for it",
                                  what, nid, n->name,
                                  n->binds[k] >= 0 ? m->vars.names[n->binds[k]] : "(a constant)",
                                  (long long)v[k]);
        int64_t want = n->binds[k] < 0 ? n->bind_size[k] : rs->vals[n->binds[k]];
        if (n->check[k] && v[k] != want) {
            char what_dim[80];
            if (n->binds[k] < 0)
                snprintf(what_dim, sizeof what_dim, "%lld", (long long)want);
            else
                snprintf(what_dim, sizeof what_dim, "'%.60s' = %lld", m->vars.names[n->binds[k]],
                         (long long)want);
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: node %d '%s': size %d computed in this run is %lld, but the "
                                  "compiled graph needs it to be %s: the values that decide the "
                                  "op's shape do not fit this run's sizes",
                                  what, nid, n->name, k, (long long)v[k], what_dim);
        }
        if (!n->check[k])
            rs->vals[n->binds[k]] = v[k];
    }
    return KILN_OK;
}

/* Set rs up for the binding rs->bind: nothing to do if it is set up for
 * it already; else every entry's dims, the buffers, the arguments, the
 * kernels' sizes and the views. */
static kiln_status state_setup(const kiln_model *m, run_state *rs, const char *what) {
    if (m->staged)
        return staged_setup(m, rs, what);
    size_t vb = (size_t)m->vars.n * sizeof(int64_t);
    if (rs->ready && memcmp(rs->vals, rs->bind, vb) == 0)
        return KILN_OK;
    rs->ready = 0;
    memcpy(rs->vals, rs->bind, vb);
    memcpy(rs->need, m->min_bytes, (size_t)m->nstorage * sizeof(int64_t));
    for (int i = 0; i < m->nentries; i++)
        if (m->entries[i].expr && entry_dims(m, rs, i, what))
            return KILN_ERR_INVALID;
    for (int s = 0; s < m->nstorage; s++)
        if (!m->weights[s] && grow(rs, s, rs->need[s])) {
            kiln_error_prefix("%s", what);
            return KILN_ERR_NOMEM;
        }
    for (int a = 0; a < m->nargs; a++)
        rs->args[a] = entry_data(m, rs, &m->entries[m->arg_entry[a]]);
    for (int k = 0; k < m->nkernels; k++) {
        const plan_node *n = &m->nodes[m->kernels[k]];
        if (graph_plan_bind_kernel(m, m->kernels[k], rs->dims, rs->kvars + n->kv0)) {
            kiln_error_prefix("%s: node %d '%s'", what, m->kernels[k], n->name);
            return KILN_ERR_INVALID;
        }
    }
    for (int i = 0; i < m->ninputs + m->noutputs; i++)
        rewrap_port(m, rs, i);
    rs->ready = 1;
    return KILN_OK;
}

/* ---- running ------------------------------------------------------------------ */

/* The error for kernel node nid's non-zero return r (module_abi.h's bit
 * set), or KILN_OK for a division by zero the run did not ask about. */
static kiln_status kernel_status(const kiln_model *m, int nid, int32_t r, unsigned flags) {
    const plan_node *n = &m->nodes[nid];
    if (r & KILN_KERNEL_ENOMEM)
        return kiln_set_error(KILN_ERR_NOMEM,
                              "node %d '%s' (function '%s'): the kernel could not allocate "
                              "memory",
                              nid, n->name, n->func);
    if (r & KILN_KERNEL_EINDEX)
        return kiln_set_error(KILN_ERR_RANGE,
                              "node %d '%s' (function '%s'): index out of range (an index "
                              "input is outside the axis it indexes)",
                              nid, n->name, n->func);
    if (r & KILN_KERNEL_EEXTERNAL)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "node %d '%s' (function '%s'): the external library this function "
                              "calls failed (its message is on stderr)",
                              nid, n->name, n->func);
    if (r &
        ~(KILN_KERNEL_ENOMEM | KILN_KERNEL_EINDEX | KILN_KERNEL_EDIVZERO | KILN_KERNEL_EEXTERNAL))
        return kiln_set_error(KILN_ERR_INVALID,
                              "node %d '%s' (function '%s'): the kernel returned %d, which is "
                              "not a set of KILN_KERNEL_* codes",
                              nid, n->name, n->func, (int)r);
    if ((r & KILN_KERNEL_EDIVZERO) && (flags & KILN_RUN_CHECK_DIV_ZERO))
        return kiln_set_error(KILN_ERR_INVALID,
                              "node %d '%s' (function '%s'): integer division by zero (the run "
                              "asked to report it; the result would be x / 0 = 0, x %% 0 = 0)",
                              nid, n->name, n->func);
    return KILN_OK;
}

static kiln_status model_run(kiln_model *m, const kiln_ndarray *const *inputs,
                             kiln_ndarray *const *outputs, kiln_ndarray **made, unsigned flags,
                             const char *what);

/* How a control node runs a body (graph_control.c): a run of its own. */
static kiln_status run_body(kiln_model *body, const kiln_ndarray *const *in, kiln_ndarray **out,
                            unsigned flags) {
    return model_run(body, in, NULL, out, flags, "body");
}

/* The dims of output o of control node n known before it runs: a
 * constant, or an expression of variables bound already; -1 for one its
 * run binds. */
static void control_hint(const kiln_model *m, const run_state *rs, int nid, int o, int64_t *hint) {
    const plan_entry *en = &m->entries[m->nodes[nid].first + o];
    for (int d = 0; d < en->ndim; d++) {
        hint[d] = en->shape[d];
        const dim_expr *x = en->expr ? en->expr[d] : NULL;
        int own = 0;
        for (int k = 0; x && k < m->vars.n; k++)
            own |= m->var_node[k] == nid && dim_expr_uses(x, k);
        if (x && (own || dim_expr_eval(x, rs->vals, &hint[d])))
            hint[d] = -1;
    }
}

/* Control node nid (a staged plan): run its bodies on its inputs' values,
 * bind the size variables its outputs name from their shapes, place the
 * outputs and copy the values in. Every other dim of an output must be
 * what the plan says in this run. */
static kiln_status run_control(const kiln_model *m, run_state *rs, int nid, unsigned flags,
                               const char *what) {
    const plan_node *n = &m->nodes[nid];
    kiln_ndarray *in[PLAN_MAX_CONTROL_IO] = {0}, *out[PLAN_MAX_CONTROL_IO] = {0};
    int64_t(*hint)[KILN_MAX_NDIM] = kiln_calloc((size_t)n->noutputs, sizeof *hint);
    kiln_status st = hint ? KILN_OK : KILN_ERR_NOMEM;
    for (int i = 0; i < n->ninputs && !st; i++) {
        const plan_entry *en = &m->entries[n->inputs[i]];
        in[i] = kiln_ndarray_wrap(entry_data(m, rs, en), en->dtype, en->ndim, rs->dims + en->dim0,
                                  NULL, 0);
        st = in[i] ? KILN_OK : KILN_ERR_NOMEM;
    }
    for (int o = 0; o < n->noutputs && !st; o++)
        control_hint(m, rs, nid, o, hint[o]);
    if (!st)
        st = graph_control_run(m, nid, (const kiln_ndarray *const *)in,
                               (const int64_t(*)[KILN_MAX_NDIM])hint, out, run_body, flags);
    for (int o = 0; o < n->noutputs && !st; o++) { /* its variables, from the values */
        const plan_entry *en = &m->entries[n->first + o];
        for (int d = 0; en->expr && d < en->ndim; d++) {
            const dim_expr *x = en->expr[d];
            if (x && x->var >= 0 && m->var_node[x->var] == nid)
                rs->vals[x->var] = kiln_ndarray_dim(out[o], d);
        }
    }
    for (int o = 0; o < n->noutputs && !st; o++) {
        const plan_entry *en = &m->entries[n->first + o];
        if ((st = entry_place(m, rs, n->first + o, what)) != KILN_OK)
            break;
        kiln_ndarray *v = kiln_ndarray_wrap(entry_data(m, rs, en), en->dtype, en->ndim,
                                            rs->dims + en->dim0, NULL, 0);
        char want[256], got[256];
        if (!v)
            st = KILN_ERR_NOMEM;
        else if (kiln_ndarray_copy(v, out[o]) != KILN_OK)
            st = kiln_set_error(KILN_ERR_INVALID,
                                "%s: node %d '%s': output %d is %s in this run, but the plan "
                                "makes it %s",
                                what, nid, n->name, o, graph_array_str(got, sizeof got, out[o]),
                                graph_array_str(want, sizeof want, v));
        kiln_ndarray_free(v);
    }
    for (int i = 0; i < PLAN_MAX_CONTROL_IO; i++) {
        kiln_ndarray_free(in[i]);
        kiln_ndarray_free(out[i]);
    }
    free(hint);
    return st;
}

static kiln_status run_kernels(const kiln_model *m, run_state *rs, unsigned flags, double *seconds,
                               const char *what) {
    for (int k = 0; k < m->nkernels; k++) {
        const plan_node *n = &m->nodes[m->kernels[k]];
        if (n->ctl) {
            double t0 = seconds ? kiln_now_s() : 0;
            kiln_status cs = run_control(m, rs, m->kernels[k], flags, what);
            if (cs)
                return cs;
            if (seconds)
                seconds[k] = kiln_now_s() - t0;
            continue;
        }
        if (m->staged && kernel_setup(m, rs, m->kernels[k], what))
            return KILN_ERR_INVALID;
        double t0 = seconds ? kiln_now_s() : 0;
        if (n->external)
            kiln_pool_quiet();
        int32_t r = n->fn(rs->args + n->arg0, m->dynamic ? rs->kvars + n->kv0 : n->vars);
        if (r) {
            kiln_status st = kernel_status(m, m->kernels[k], r, flags);
            if (st)
                return st;
        }
        if (seconds)
            seconds[k] = kiln_now_s() - t0;
        if (n->nbinds && read_binds(m, rs, m->kernels[k], what))
            return KILN_ERR_INVALID;
    }
    if (m->staged) { /* the outputs' views are this run's */
        for (int i = m->ninputs; i < m->ninputs + m->noutputs; i++)
            rewrap_port(m, rs, i);
        rs->ready = 1;
    }
    return KILN_OK;
}

static kiln_status check_flags(unsigned flags, const char *what) {
    if (flags & ~(unsigned)KILN_RUN_CHECK_DIV_ZERO)
        return kiln_set_error(KILN_ERR_INVALID, "%s: unknown flags 0x%x", what,
                              flags & ~(unsigned)KILN_RUN_CHECK_DIV_ZERO);
    return KILN_OK;
}

/* Check that value has port p's dtype, rank and constant dims (an input or
 * an output; a symbolic dim is checked against a binding). */
static kiln_status check_port(const kiln_model *m, const plan_port *p, const kiln_ndarray *value,
                              const char *what) {
    const plan_entry *en = &m->entries[p->entry];
    if (graph_array_matches(value, en))
        return KILN_OK;
    char want[256], got[256];
    return kiln_set_error(KILN_ERR_INVALID, "%s '%s': expected %s, got %s", what, p->name,
                          graph_entry_str(want, sizeof want, en),
                          graph_array_str(got, sizeof got, value));
}

/* Check that output array a has output i's shape in this run (view v) of a
 * dynamic plan. */
static kiln_status check_run_output(const kiln_model *m, int i, const kiln_ndarray *a,
                                    const kiln_ndarray *v, const char *what) {
    int ok = kiln_ndarray_dtype(a) == kiln_ndarray_dtype(v) &&
             kiln_ndarray_ndim(a) == kiln_ndarray_ndim(v);
    for (int d = 0; ok && d < kiln_ndarray_ndim(v); d++)
        ok = kiln_ndarray_dim(a, d) == kiln_ndarray_dim(v, d);
    if (ok)
        return KILN_OK;
    char want[256], plan[256], got[256];
    return kiln_set_error(KILN_ERR_INVALID, "%s: output '%s': expected %s in this run (%s), got %s",
                          what, m->outputs[i].name, graph_array_str(want, sizeof want, v),
                          graph_entry_str(plan, sizeof plan, &m->entries[m->outputs[i].entry]),
                          graph_array_str(got, sizeof got, a));
}

/* Check the caller's output arrays against this run's output shapes (a
 * dynamic plan), or make them (`made`). */
static kiln_status prepare_outputs(const kiln_model *m, run_state *rs, kiln_ndarray *const *outputs,
                                   kiln_ndarray **made, const char *what) {
    for (int i = 0; i < m->noutputs && outputs && m->dynamic; i++)
        if (outputs[i] && check_run_output(m, i, outputs[i], rs->views[m->ninputs + i], what))
            return KILN_ERR_INVALID;
    for (int i = 0; i < m->noutputs && made; i++) {
        const kiln_ndarray *v = rs->views[m->ninputs + i];
        int64_t shape[KILN_MAX_NDIM];
        for (int d = 0; d < kiln_ndarray_ndim(v); d++)
            shape[d] = kiln_ndarray_dim(v, d);
        if (!(made[i] = kiln_ndarray_empty(kiln_ndarray_dtype(v), kiln_ndarray_ndim(v), shape)))
            return KILN_ERR_NOMEM;
    }
    return KILN_OK;
}

/* kiln_model_run, and with `made` kiln_model_run_alloc: outputs[i] (may be
 * NULL) or made[i] (new arrays, NULL after a failure) receive the outputs. */
static kiln_status model_run(kiln_model *m, const kiln_ndarray *const *inputs,
                             kiln_ndarray *const *outputs, kiln_ndarray **made, unsigned flags,
                             const char *what) {
    char where[64];
    snprintf(where, sizeof where, "%s: input", what);
    for (int i = 0; i < m->ninputs; i++) {
        if (!inputs[i])
            return kiln_set_error(KILN_ERR_INVALID, "%s: no value for input %d '%s'", what, i,
                                  m->inputs[i].name);
        if (check_port(m, &m->inputs[i], inputs[i], where))
            return KILN_ERR_INVALID;
    }
    snprintf(where, sizeof where, "%s: output", what);
    for (int i = 0; i < m->noutputs && outputs; i++)
        if (outputs[i] && check_port(m, &m->outputs[i], outputs[i], where))
            return KILN_ERR_INVALID;
    run_state *rs = state_acquire(m);
    if (!rs)
        return KILN_ERR_NOMEM;
    kiln_status st = KILN_OK;
    if (m->dynamic) {
        st = bind_inputs(m, inputs, rs->bind, what);
        if (!st)
            st = state_setup(m, rs, what);
    }
    /* a staged plan's output shapes are known after the run */
    if (!st && !m->staged)
        st = prepare_outputs(m, rs, outputs, made, what);
    for (int i = 0; i < m->ninputs && !st; i++)
        st = kiln_ndarray_copy(rs->views[i], inputs[i]);
    if (!st)
        st = run_kernels(m, rs, flags, NULL, what);
    if (!st && m->staged)
        st = prepare_outputs(m, rs, outputs, made, what);
    for (int i = 0; i < m->noutputs && !st; i++) {
        kiln_ndarray *out = made ? made[i] : outputs[i];
        if (out)
            st = kiln_ndarray_copy(out, rs->views[m->ninputs + i]);
    }
    state_release(m, rs);
    for (int i = 0; i < m->noutputs && made && st; i++) {
        kiln_ndarray_free(made[i]);
        made[i] = NULL;
    }
    return st;
}

kiln_status kiln_model_run(kiln_model *m, const kiln_ndarray *const *inputs,
                           kiln_ndarray *const *outputs, unsigned flags) {
    if (!m || (!inputs && m->ninputs) || !outputs)
        return kiln_set_error(KILN_ERR_INVALID, "model_run: NULL argument");
    if (check_flags(flags, "model_run"))
        return KILN_ERR_INVALID;
    return model_run(m, inputs, outputs, NULL, flags, "model_run");
}

kiln_status kiln_model_run_alloc(kiln_model *m, const kiln_ndarray *const *inputs,
                                 kiln_ndarray **outputs, unsigned flags) {
    if (!m || (!inputs && m->ninputs) || !outputs)
        return kiln_set_error(KILN_ERR_INVALID, "model_run_alloc: NULL argument");
    for (int i = 0; i < m->noutputs; i++)
        outputs[i] = NULL;
    if (check_flags(flags, "model_run_alloc"))
        return KILN_ERR_INVALID;
    return model_run(m, inputs, NULL, outputs, flags, "model_run_alloc");
}

/* Bind a dynamic plan's variables from the executor's inputs and set its
 * run state up for them. */
static kiln_status executor_prepare(kiln_executor *e, const char *what) {
    const kiln_model *m = e->m;
    if (!m->dynamic)
        return KILN_OK;
    for (int i = 0; i < m->ninputs; i++) {
        const plan_entry *en = &m->entries[m->inputs[i].entry];
        char type[256];
        if (en->expr && !e->rs->set[i])
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: input '%s' (%s) has symbolic dims and no value yet "
                                  "(kiln_executor_set_input gives it one)",
                                  what, m->inputs[i].name, graph_entry_str(type, sizeof type, en));
    }
    kiln_status st = bind_inputs(m, (const kiln_ndarray *const *)e->rs->views, e->rs->bind, what);
    return st ? st : state_setup(m, e->rs, what);
}

kiln_status kiln_executor_run(kiln_executor *e) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run: NULL executor");
    kiln_status st = executor_prepare(e, "executor_run");
    return st ? st : run_kernels(e->m, e->rs, e->flags, NULL, "executor_run");
}

kiln_status kiln_executor_run_profiled(kiln_executor *e, double *kernel_seconds) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run_profiled: NULL executor");
    if (!kernel_seconds)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run_profiled: NULL time array");
    kiln_status st = executor_prepare(e, "executor_run_profiled");
    return st ? st : run_kernels(e->m, e->rs, e->flags, kernel_seconds, "executor_run_profiled");
}

kiln_status kiln_executor_set_check_div_zero(kiln_executor *e, int on) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_set_check_div_zero: NULL executor");
    e->flags =
        on ? e->flags | KILN_RUN_CHECK_DIV_ZERO : e->flags & ~(unsigned)KILN_RUN_CHECK_DIV_ZERO;
    return KILN_OK;
}

/* ---- models ------------------------------------------------------------------- */

static kiln_model *model_create(const char *json_text, size_t len, kiln_module *mod,
                                const kiln_npz *params, kiln_npz *own) {
    if (!json_text || !mod) {
        kiln_set_error(KILN_ERR_INVALID, "model_create: NULL argument");
        return NULL;
    }
    kiln_model *m = graph_model_alloc();
    if (!m)
        return NULL;
    if (graph_plan_read(m, json_text, len, mod, params, own)) {
        kiln_model_free(m);
        return NULL;
    }
    return m;
}

kiln_model *kiln_model_create(const char *json_text, size_t len, kiln_module *mod,
                              const kiln_npz *params) {
    return model_create(json_text, len, mod, params, NULL);
}

kiln_model *kiln_model_load(const char *path) {
    char *text;
    size_t len = 0;
    kiln_module *mod;
    kiln_npz *params;
    if (kiln_package_read(path, &text, &len, &mod, &params))
        return NULL;
    kiln_model *m = model_create(text, len, mod, params, params);
    free(text);
    kiln_npz_free(params);
    if (!m) {
        kiln_error_prefix("%s", path);
        kiln_module_free(mod);
        return NULL;
    }
    m->owned = mod;
    return m;
}

kiln_model *kiln_model_retain(kiln_model *m) {
    if (m)
        atomic_fetch_add(&m->refs, 1);
    return m;
}

void kiln_model_free(kiln_model *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    while (m->pool) {
        run_state *rs = m->pool;
        m->pool = rs->next;
        state_free(rs, m);
    }
    if (m->pool_mu_ok)
        pthread_mutex_destroy(&m->pool_mu);
    for (int i = 0; m->nodes && i < m->nnodes; i++)
        for (int k = 0; m->nodes[i].ctl && k < m->nodes[i].ctl->nbodies; k++)
            kiln_model_free(m->nodes[i].ctl->bodies[k]);
    graph_plan_free_weights(m);
    arena_free(m->ar);
    kiln_module_free(m->owned);
    free(m);
}

int kiln_model_num_inputs(const kiln_model *m) {
    return m ? m->ninputs : 0;
}

int kiln_model_num_outputs(const kiln_model *m) {
    return m ? m->noutputs : 0;
}

/* Input i (output i with `out`) of m, or NULL if out of range. */
static const plan_port *model_port(const kiln_model *m, int out, int i) {
    if (!m || i < 0 || i >= (out ? m->noutputs : m->ninputs))
        return NULL;
    return out ? &m->outputs[i] : &m->inputs[i];
}

static const plan_entry *port_entry(const kiln_model *m, int out, int i) {
    const plan_port *p = model_port(m, out, i);
    return p ? &m->entries[p->entry] : NULL;
}

const char *kiln_model_input_name(const kiln_model *m, int i) {
    const plan_port *p = model_port(m, 0, i);
    return p ? p->name : NULL;
}

const char *kiln_model_output_name(const kiln_model *m, int i) {
    const plan_port *p = model_port(m, 1, i);
    return p ? p->name : NULL;
}

static kiln_dtype port_dtype(const kiln_model *m, int out, int i) {
    const plan_entry *en = port_entry(m, out, i);
    return en ? en->dtype : KILN_DTYPE_COUNT;
}

static int port_ndim(const kiln_model *m, int out, int i) {
    const plan_entry *en = port_entry(m, out, i);
    return en ? en->ndim : -1;
}

static int64_t port_dim(const kiln_model *m, int out, int i, int d) {
    const plan_entry *en = port_entry(m, out, i);
    return en && d >= 0 && d < en->ndim ? en->shape[d] : -1;
}

static const char *port_dim_expr(const kiln_model *m, int out, int i, int d) {
    const plan_entry *en = port_entry(m, out, i);
    return en && d >= 0 && d < en->ndim && en->expr && en->expr[d] ? en->expr[d]->text : NULL;
}

kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i) {
    return port_dtype(m, 0, i);
}

int kiln_model_input_ndim(const kiln_model *m, int i) {
    return port_ndim(m, 0, i);
}

int64_t kiln_model_input_dim(const kiln_model *m, int i, int d) {
    return port_dim(m, 0, i, d);
}

kiln_dtype kiln_model_output_dtype(const kiln_model *m, int i) {
    return port_dtype(m, 1, i);
}

int kiln_model_output_ndim(const kiln_model *m, int i) {
    return port_ndim(m, 1, i);
}

int64_t kiln_model_output_dim(const kiln_model *m, int i, int d) {
    return port_dim(m, 1, i, d);
}

const char *kiln_model_input_dim_expr(const kiln_model *m, int i, int d) {
    return port_dim_expr(m, 0, i, d);
}

const char *kiln_model_output_dim_expr(const kiln_model *m, int i, int d) {
    return port_dim_expr(m, 1, i, d);
}

/* ---- executors ---------------------------------------------------------------- */

kiln_executor *kiln_executor_create_from_model(kiln_model *m) {
    if (!m) {
        kiln_set_error(KILN_ERR_INVALID, "executor_create_from_model: NULL model");
        return NULL;
    }
    kiln_executor *e = kiln_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    if (!(e->rs = state_new(m))) {
        free(e);
        return NULL;
    }
    e->m = kiln_model_retain(m);
    return e;
}

/* An executor over a new model, which it then holds the only reference to. */
static kiln_executor *executor_over(kiln_model *m) {
    kiln_executor *e = m ? kiln_executor_create_from_model(m) : NULL;
    kiln_model_free(m);
    return e;
}

kiln_executor *kiln_executor_create(const char *json_text, size_t len, kiln_module *mod,
                                    const kiln_npz *params) {
    if (!json_text || !mod) {
        kiln_set_error(KILN_ERR_INVALID, "executor_create: NULL argument");
        return NULL;
    }
    return executor_over(kiln_model_create(json_text, len, mod, params));
}

kiln_executor *kiln_executor_load(const char *path) {
    return executor_over(kiln_model_load(path));
}

void kiln_executor_free(kiln_executor *e) {
    if (!e)
        return;
    state_free(e->rs, e->m);
    kiln_model_free(e->m);
    free(e);
}

kiln_model *kiln_executor_model(const kiln_executor *e) {
    return e ? e->m : NULL;
}

/* ---- an executor's inputs and outputs ------------------------------------------ */

int kiln_executor_num_inputs(const kiln_executor *e) {
    return e ? e->m->ninputs : 0;
}

const char *kiln_executor_input_name(const kiln_executor *e, int i) {
    return kiln_model_input_name(e ? e->m : NULL, i);
}

kiln_dtype kiln_executor_input_dtype(const kiln_executor *e, int i) {
    return port_dtype(e ? e->m : NULL, 0, i);
}

int kiln_executor_input_ndim(const kiln_executor *e, int i) {
    return port_ndim(e ? e->m : NULL, 0, i);
}

int64_t kiln_executor_input_dim(const kiln_executor *e, int i, int d) {
    return port_dim(e ? e->m : NULL, 0, i, d);
}

const char *kiln_executor_input_dim_expr(const kiln_executor *e, int i, int d) {
    return port_dim_expr(e ? e->m : NULL, 0, i, d);
}

kiln_status kiln_executor_set_input(kiln_executor *e, const char *name, const kiln_ndarray *value) {
    if (!e || !name || !value)
        return kiln_set_error(KILN_ERR_INVALID, "set_input: NULL argument");
    const kiln_model *m = e->m;
    int i = 0;
    while (i < m->ninputs && strcmp(m->inputs[i].name, name) != 0)
        i++;
    if (i == m->ninputs) {
        for (int k = 0; k < m->nnodes; k++)
            if (m->nodes[k].is_param && strcmp(m->nodes[k].name, name) == 0)
                return kiln_set_error(KILN_ERR_INVALID,
                                      "set_input: '%s' is a parameter, not an input", name);
        kstr s;
        kstr_init(&s);
        for (int k = 0; k < m->ninputs; k++)
            kstr_printf(&s, "%s%s", k ? ", " : "", m->inputs[k].name);
        kiln_set_error(KILN_ERR_INVALID, "set_input: the model has no input '%s' (its inputs: %s)",
                       name, s.buf ? s.buf : "none");
        kstr_free(&s);
        return KILN_ERR_INVALID;
    }
    if (check_port(m, &m->inputs[i], value, "set_input"))
        return KILN_ERR_INVALID;
    const plan_entry *en = &m->entries[m->inputs[i].entry];
    run_state *rs = e->rs;
    if (en->expr) { /* its buffer and view take the value's shape */
        int64_t shape[KILN_MAX_NDIM], bytes = (int64_t)kiln_dtype_size(en->dtype);
        int ok = 1;
        for (int d = 0; d < en->ndim; d++) {
            shape[d] = kiln_ndarray_dim(value, d);
            ok = ok && kiln_mul_ok(bytes, shape[d], &bytes) && bytes <= MAX_STORAGE_BYTES;
        }
        char got[256];
        if (!ok)
            return kiln_set_error(KILN_ERR_INVALID, "set_input '%s': %s is more than 1 TiB", name,
                                  graph_array_str(got, sizeof got, value));
        rs->set[i] = 0;
        if (!rs->buf[en->storage] || bytes > rs->cap[en->storage]) {
            rs->ready = 0; /* the arguments and views into the old buffer are gone */
            if (grow(rs, en->storage, bytes)) {
                kiln_error_prefix("set_input '%s'", name);
                return KILN_ERR_NOMEM;
            }
        }
        ndarray_rewrap(rs->views[i], rs->buf[en->storage], shape);
    }
    kiln_status st = kiln_ndarray_copy(rs->views[i], value);
    if (m->dynamic)
        rs->set[i] = !st;
    return st;
}

int kiln_executor_num_outputs(const kiln_executor *e) {
    return e ? e->m->noutputs : 0;
}

const char *kiln_executor_output_name(const kiln_executor *e, int i) {
    return kiln_model_output_name(e ? e->m : NULL, i);
}

const kiln_ndarray *kiln_executor_output(const kiln_executor *e, int i) {
    if (!e || i < 0 || i >= e->m->noutputs || (e->m->dynamic && !e->rs->ready))
        return NULL;
    return e->rs->views[e->m->ninputs + i];
}

int kiln_executor_num_kernels(const kiln_executor *e) {
    return e ? e->m->nkernels : 0;
}

const char *kiln_executor_kernel_name(const kiln_executor *e, int k) {
    return e && k >= 0 && k < e->m->nkernels ? e->m->nodes[e->m->kernels[k]].name : NULL;
}

const char *kiln_executor_kernel_func(const kiln_executor *e, int k) {
    return e && k >= 0 && k < e->m->nkernels ? e->m->nodes[e->m->kernels[k]].func : NULL;
}

kiln_status kiln_executor_kernel_cost(const kiln_executor *e, int k, double *flops, double *bytes) {
    if (!e || k < 0 || k >= e->m->nkernels || !flops || !bytes)
        return kiln_set_error(KILN_ERR_INVALID, "executor_kernel_cost: %s",
                              e && flops && bytes ? "kernel index out of range" : "NULL argument");
    const kiln_model *m = e->m;
    const plan_node *n = &m->nodes[m->kernels[k]];
    double c[2];
    graph_cost_eval(m, m->kernels[k],
                    m->dynamic && e->rs && e->rs->ready ? e->rs->kvars + n->kv0 : NULL, c);
    *flops = c[0];
    *bytes = c[1];
    return KILN_OK;
}

int kiln_executor_vector_bits(const kiln_executor *e) {
    return e ? e->m->vector_bits : 0;
}
