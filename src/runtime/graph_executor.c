/* graph_executor.c: runs a loaded model (graph_plan.c reads mod.json into
 * it). The model (module, plan, weights) is immutable and reference
 * counted; everything a run writes lives in a run state: one arena holding
 * the inputs, activations and outputs, and each kernel call's argument
 * pointers into it and into the shared weights. An executor is a model and
 * one run state; kiln_model_run takes an idle run state from the model's
 * pool (or makes one), so concurrent runs each have their own and memory
 * grows by one arena per concurrent run. A run allocates nothing once its
 * state exists. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_plan.h"

struct run_state {
    run_state *next; /* in the model's pool */
    unsigned char *arena;
    void **args;          /* kernel node n's arguments start at args[n->arg0] */
    kiln_ndarray **views; /* ninputs input views, then noutputs output views */
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
    free(rs->views);
    free(rs->args);
    free(rs->arena);
    free(rs);
}

/* A new run state for m: a zeroed arena, the argument arrays and the views. */
static run_state *state_new(const kiln_model *m) {
    run_state *rs = kiln_calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    size_t bytes = m->arena_bytes ? (size_t)m->arena_bytes : KILN_ALIGNMENT;
    void *buf = NULL;
    if (posix_memalign(&buf, KILN_ALIGNMENT, bytes)) {
        kiln_set_error(KILN_ERR_NOMEM, "cannot allocate a run's %zu bytes of activations", bytes);
        free(rs);
        return NULL;
    }
    memset(buf, 0, bytes);
    rs->arena = buf;
    rs->args = kiln_calloc((size_t)(m->nargs ? m->nargs : 1), sizeof(void *));
    rs->views = kiln_calloc((size_t)(m->ninputs + m->noutputs), sizeof(kiln_ndarray *));
    if (!rs->args || !rs->views) {
        state_free(rs, m);
        return NULL;
    }
    for (int a = 0; a < m->nargs; a++) {
        int s = m->arg_storage[a];
        rs->args[a] = m->weights[s] ? m->weights[s] : rs->arena + m->offset[s];
    }
    for (int i = 0; i < m->ninputs + m->noutputs; i++) {
        const plan_port *p = i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs];
        const plan_entry *en = &m->entries[p->entry];
        void *data =
            m->weights[en->storage] ? m->weights[en->storage] : rs->arena + m->offset[en->storage];
        rs->views[i] = kiln_ndarray_wrap(data, en->dtype, en->ndim, en->shape, NULL, 0);
        if (!rs->views[i]) {
            state_free(rs, m);
            return NULL;
        }
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

/* ---- running ------------------------------------------------------------------ */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
    if (r & ~(KILN_KERNEL_ENOMEM | KILN_KERNEL_EINDEX | KILN_KERNEL_EDIVZERO))
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

static kiln_status run_kernels(const kiln_model *m, run_state *rs, unsigned flags,
                               double *seconds) {
    for (int k = 0; k < m->nkernels; k++) {
        const plan_node *n = &m->nodes[m->kernels[k]];
        double t0 = seconds ? now_seconds() : 0;
        int32_t r = n->fn(rs->args + n->arg0, n->vars);
        if (r) {
            kiln_status st = kernel_status(m, m->kernels[k], r, flags);
            if (st)
                return st;
        }
        if (seconds)
            seconds[k] = now_seconds() - t0;
    }
    return KILN_OK;
}

static kiln_status check_flags(unsigned flags, const char *what) {
    if (flags & ~(unsigned)KILN_RUN_CHECK_DIV_ZERO)
        return kiln_set_error(KILN_ERR_INVALID, "%s: unknown flags 0x%x", what,
                              flags & ~(unsigned)KILN_RUN_CHECK_DIV_ZERO);
    return KILN_OK;
}

/* Check that value fits port i of ports (an input or an output). */
static kiln_status check_port(const kiln_model *m, const plan_port *p, const kiln_ndarray *value,
                              const char *what) {
    const plan_entry *en = &m->entries[p->entry];
    if (graph_array_matches(value, en))
        return KILN_OK;
    char want[256], got[256];
    return kiln_set_error(KILN_ERR_INVALID, "%s '%s': expected %s, got %s", what, p->name,
                          graph_type_str(want, sizeof want, en->dtype, en->ndim, en->shape),
                          graph_array_str(got, sizeof got, value));
}

kiln_status kiln_model_run(kiln_model *m, const kiln_ndarray *const *inputs,
                           kiln_ndarray *const *outputs, unsigned flags) {
    if (!m || (!inputs && m->ninputs) || !outputs)
        return kiln_set_error(KILN_ERR_INVALID, "model_run: NULL argument");
    if (check_flags(flags, "model_run"))
        return KILN_ERR_INVALID;
    for (int i = 0; i < m->ninputs; i++) {
        if (!inputs[i])
            return kiln_set_error(KILN_ERR_INVALID, "model_run: no value for input %d '%s'", i,
                                  m->inputs[i].name);
        if (check_port(m, &m->inputs[i], inputs[i], "model_run: input"))
            return KILN_ERR_INVALID;
    }
    for (int i = 0; i < m->noutputs; i++)
        if (outputs[i] && check_port(m, &m->outputs[i], outputs[i], "model_run: output"))
            return KILN_ERR_INVALID;
    run_state *rs = state_acquire(m);
    if (!rs)
        return KILN_ERR_NOMEM;
    kiln_status st = KILN_OK;
    for (int i = 0; i < m->ninputs && !st; i++)
        st = kiln_ndarray_copy(rs->views[i], inputs[i]);
    if (!st)
        st = run_kernels(m, rs, flags, NULL);
    for (int i = 0; i < m->noutputs && !st; i++)
        if (outputs[i])
            st = kiln_ndarray_copy(outputs[i], rs->views[m->ninputs + i]);
    state_release(m, rs);
    return st;
}

kiln_status kiln_executor_run(kiln_executor *e) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run: NULL executor");
    return run_kernels(e->m, e->rs, e->flags, NULL);
}

kiln_status kiln_executor_run_profiled(kiln_executor *e, double *kernel_seconds) {
    if (!e)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run_profiled: NULL executor");
    if (!kernel_seconds)
        return kiln_set_error(KILN_ERR_INVALID, "executor_run_profiled: NULL time array");
    return run_kernels(e->m, e->rs, e->flags, kernel_seconds);
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
    kiln_model *m = kiln_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->refs, 1);
    if (pthread_mutex_init(&m->pool_mu, NULL) != 0) {
        free(m);
        kiln_set_error(KILN_ERR_NOMEM, "model_create: cannot create a mutex");
        return NULL;
    }
    m->pool_mu_ok = 1;
    if (!(m->ar = arena_new()) || graph_plan_read(m, json_text, len, mod, params, own)) {
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
    return kiln_ndarray_copy(e->rs->views[i], value);
}

int kiln_executor_num_outputs(const kiln_executor *e) {
    return e ? e->m->noutputs : 0;
}

const char *kiln_executor_output_name(const kiln_executor *e, int i) {
    return kiln_model_output_name(e ? e->m : NULL, i);
}

const kiln_ndarray *kiln_executor_output(const kiln_executor *e, int i) {
    return e && i >= 0 && i < e->m->noutputs ? e->rs->views[e->m->ninputs + i] : NULL;
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
