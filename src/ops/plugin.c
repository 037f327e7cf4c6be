/* plugin.c: user ops (kiln/plugin.h). A kiln_op_spec becomes an op-table
 * row like a built-in op's: its relation, compute and schedule are
 * trampolines that wrap the call in a kiln_op_call and call the user's
 * functions; its pattern and layout behaviour are the spec's. Plugins are
 * shared objects exporting kiln_plugin_init. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../te/te_internal.h"
#include "kiln/ffi.h"
#include "kiln/plugin.h"
#include "ops.h"

struct kiln_op_call {
    const struct kiln_graph *g;
    const gnode *n;
    const gtype *const *in; /* relation: input types */
    gtype *out;             /* relation: the output type to set */
    rel_result result;
};

static const gtensor_type *in_type(const kiln_op_call *c, int i) {
    if (!c || i < 0 || i >= c->n->nin)
        return NULL;
    const gtype *t = c->in ? c->in[i] : &c->g->nodes[c->n->in[i]]->type;
    return t->known && !t->is_tuple ? &t->t[0] : NULL;
}

int kiln_op_call_num_inputs(const kiln_op_call *c) {
    return c ? c->n->nin : 0;
}

kiln_dtype kiln_op_call_input_dtype(const kiln_op_call *c, int i) {
    const gtensor_type *t = in_type(c, i);
    return t ? t->dtype : KILN_DTYPE_COUNT;
}

int kiln_op_call_input_ndim(const kiln_op_call *c, int i) {
    const gtensor_type *t = in_type(c, i);
    return t ? t->ndim : -1;
}

int64_t kiln_op_call_input_dim(const kiln_op_call *c, int i, int d) {
    const gtensor_type *t = in_type(c, i);
    return t && d >= 0 && d < t->ndim && !t->dims[d].sym ? t->dims[d].v : -1;
}

int64_t kiln_op_call_attr_int(const kiln_op_call *c, const char *name, int64_t def) {
    return c && name ? graph_attr_int(c->n, name, def) : def;
}

double kiln_op_call_attr_float(const kiln_op_call *c, const char *name, double def) {
    return c && name ? graph_attr_float(c->n, name, def) : def;
}

const char *kiln_op_call_attr_str(const kiln_op_call *c, const char *name, const char *def) {
    return c && name ? graph_attr_str(c->n, name, def) : def;
}

kiln_status kiln_op_call_set_output(kiln_op_call *c, kiln_dtype dt, int ndim, const int64_t *dims) {
    if (!c || !c->out)
        return kiln_set_error(KILN_ERR_INVALID, "set_output outside a relation");
    if (ndim < 0 || ndim > KILN_MAX_NDIM || !kiln_dtype_is_data(dt) || (ndim && !dims))
        return kiln_op_call_error(c, "set_output: bad rank or dtype");
    gdim dd[KILN_MAX_NDIM];
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 0)
            return kiln_op_call_error(c, "set_output: negative dim");
        dd[d] = (gdim){dims[d], NULL};
    }
    *c->out = gtype_tensor((struct kiln_graph *)c->g, dt, ndim, dd);
    c->result = REL_OK;
    return KILN_OK;
}

kiln_status kiln_op_call_error(kiln_op_call *c, const char *message) {
    if (c)
        c->result = REL_ERROR;
    return kiln_set_error(KILN_ERR_INVALID, "%s", message ? message : "invalid call");
}

int kiln_op_call_output_ndim(const kiln_op_call *c) {
    return c && c->n->type.known ? c->n->type.t[0].ndim : -1;
}

int64_t kiln_op_call_output_dim(const kiln_op_call *c, int d) {
    if (!c || !c->n->type.known || d < 0 || d >= c->n->type.t[0].ndim)
        return -1;
    return c->n->type.t[0].dims[d].sym ? -1 : c->n->type.t[0].dims[d].v;
}

/* ---- trampolines ---------------------------------------------------------------- */

static rel_result plugin_rel(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    for (int i = 0; i < call->nin; i++)
        if (!in[i]->known)
            return REL_INCOMPLETE;
    const kiln_op_spec *spec = call->op->plugin;
    kiln_op_call c = {g, call, in, out, REL_ERROR};
    kiln_status st = spec->relation(&c);
    if (st != KILN_OK || c.result != REL_OK) {
        if (!*kiln_last_error())
            kiln_set_error(KILN_ERR_INVALID, "the relation set no output type");
        return REL_ERROR;
    }
    return REL_OK;
}

static kiln_status plugin_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    const kiln_op_spec *spec = call->op->plugin;
    kiln_op_call c = {call->graph, call, NULL, NULL, REL_OK};
    kiln_clear_error();
    out[0] = spec->compute(ctx, &c, in);
    if (!out[0]) {
        if (!*kiln_last_error())
            kiln_set_error(KILN_ERR_INVALID, "the compute returned NULL");
        return KILN_ERR_INVALID;
    }
    const gtensor_type *t = &call->type.t[0];
    int ok = out[0]->ndim == t->ndim && out[0]->dtype == t->dtype;
    for (int d = 0; ok && d < t->ndim; d++) {
        int64_t v;
        ok = tir_const_int(out[0]->shape[d], &v) && v == t->dims[d].v;
    }
    if (!ok)
        return kiln_set_error(KILN_ERR_INVALID, "the compute's output does not have the type "
                                                "its relation gave");
    return KILN_OK;
}

static kiln_status plugin_schedule(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                   kiln_tensor *out, const kiln_target *target) {
    const kiln_op_spec *spec = call->op->plugin;
    kiln_op_call c = {call->graph, call, NULL, NULL, REL_OK};
    kiln_clear_error();
    kiln_status st = spec->schedule(s, &c, anchor, out, target);
    if (st != KILN_OK && !*kiln_last_error())
        kiln_set_error(st, "the op's schedule failed without a message");
    return st;
}

/* ---- registration -------------------------------------------------------------------- */

static void free_schema(attr_schema *schema);

/* Parse "name:kind[=default], ..." into a schema (NULL-terminated). */
static attr_schema *parse_schema(const char *text) {
    int cap = 1;
    for (const char *p = text; p && *p; p++)
        cap += *p == ',';
    attr_schema *s = calloc((size_t)cap + 1, sizeof *s);
    char *copy = text ? strdup(text) : NULL;
    if (!s || (text && !copy))
        goto fail;
    int n = 0;
    for (char *tok = copy ? strtok(copy, ",") : NULL; tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        char *colon = strchr(tok, ':');
        if (!colon)
            goto fail;
        *colon = 0;
        char *kind = colon + 1, *eq = strchr(kind, '=');
        if (eq)
            *eq = 0;
        char *end = kind + strlen(kind);
        while (end > kind && end[-1] == ' ')
            *--end = 0;
        gattr_kind k;
        if (!strcmp(kind, "int"))
            k = GA_INT;
        else if (!strcmp(kind, "float"))
            k = GA_FLOAT;
        else if (!strcmp(kind, "ints"))
            k = GA_INTS;
        else if (!strcmp(kind, "floats"))
            k = GA_FLOATS;
        else if (!strcmp(kind, "str"))
            k = GA_STR;
        else
            goto fail;
        char *nm = tok;
        end = nm + strlen(nm);
        while (end > nm && end[-1] == ' ')
            *--end = 0;
        if (!*nm)
            goto fail;
        s[n].name = strdup(nm);
        s[n].kind = k;
        s[n].required = eq == NULL;
        s[n].def = eq ? strdup(eq + 1) : NULL;
        if (!s[n].name || (eq && !s[n].def)) {
            free((void *)s[n].name);
            s[n].name = NULL; /* free_schema stops at the first NULL name */
            free(copy);
            free_schema(s);
            kiln_set_error(KILN_ERR_NOMEM, "op attributes: out of memory");
            return NULL;
        }
        n++;
    }
    free(copy);
    return s;
fail:
    free(copy);
    free_schema(s);
    kiln_set_error(KILN_ERR_INVALID,
                   "op attributes '%s': expected 'name:kind[=default], ...' "
                   "with kind int, float, ints, floats or str",
                   text ? text : "");
    return NULL;
}

static void free_schema(attr_schema *schema) {
    for (attr_schema *s = schema; s && s->name; s++) {
        free((void *)s->name);
        free((void *)s->def);
    }
    free(schema);
}

/* Free a row that did not make it into the registry. */
static void free_row(kiln_op_def *def, kiln_op_spec *copy, attr_schema *schema) {
    if (copy) {
        free((void *)copy->name);
        free((void *)copy->summary);
    }
    free(copy);
    free(def);
    free_schema(schema);
}

/* Plugins built before a spec had `schedule` and `layout` call the function
 * kiln_op_register itself: their struct ends there. */
#undef kiln_op_register
kiln_status kiln_op_register(const kiln_op_spec *spec) {
    return kiln_op_register_sized(spec, offsetof(kiln_op_spec, schedule));
}

kiln_status kiln_op_register_sized(const kiln_op_spec *user, size_t spec_size) {
    if (!user || spec_size < offsetof(kiln_op_spec, schedule))
        return kiln_set_error(KILN_ERR_INVALID,
                              "op registration: a spec needs a name, a relation "
                              "and a compute (NULL spec or size %zu too small)",
                              spec_size);
    /* the fields the caller's struct has; the rest stay zero */
    kiln_op_spec local;
    memset(&local, 0, sizeof local);
    memcpy(&local, user, spec_size < sizeof local ? spec_size : sizeof local);
    const kiln_op_spec *spec = &local;
    if (!spec->name || !*spec->name || !spec->relation || !spec->compute)
        return kiln_set_error(KILN_ERR_INVALID, "op registration: a spec needs a name, a relation "
                                                "and a compute");
    if (spec->min_inputs < 0 || spec->max_inputs < spec->min_inputs || spec->max_inputs > 4096)
        return kiln_set_error(KILN_ERR_INVALID, "op '%s': bad input counts %d..%d", spec->name,
                              spec->min_inputs, spec->max_inputs);
    if (spec->layout != KILN_OP_LAYOUT_PLAIN && spec->layout != KILN_OP_LAYOUT_ANY)
        return kiln_set_error(KILN_ERR_INVALID,
                              "op '%s': layout %d is not KILN_OP_LAYOUT_PLAIN "
                              "or KILN_OP_LAYOUT_ANY",
                              spec->name, (int)spec->layout);
    switch (spec->pattern) {
    case KILN_OP_ELEMWISE:
    case KILN_OP_BROADCAST:
    case KILN_OP_INJECTIVE:
    case KILN_OP_COMM_REDUCE:
    case KILN_OP_OUT_ELEMWISE_FUSABLE:
    case KILN_OP_OPAQUE: break;
    default:
        return kiln_set_error(KILN_ERR_INVALID, "op '%s': %d is not a kiln_op_pattern", spec->name,
                              (int)spec->pattern);
    }
    kiln_op_registry *r = ops_default_registry();
    if (op_registry_find(r, spec->name))
        return kiln_set_error(KILN_ERR_INVALID, "op '%s' is already registered", spec->name);
    attr_schema *schema = parse_schema(spec->attrs);
    kiln_op_spec *copy = calloc(1, sizeof *copy);
    kiln_op_def *def = calloc(1, sizeof *def);
    if (!schema || !copy || !def) {
        free(copy);
        free(def);
        free_schema(schema);
        return schema ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    }
    *copy = *spec;
    copy->name = strdup(spec->name);
    copy->summary = spec->summary ? strdup(spec->summary) : NULL;
    if (!copy->name || (spec->summary && !copy->summary)) {
        free_row(def, copy, schema);
        return kiln_set_error(KILN_ERR_NOMEM, "op '%s': out of memory", spec->name);
    }
    def->name = copy->name;
    def->min_in = spec->min_inputs;
    def->max_in = spec->max_inputs;
    def->attrs = schema;
    def->rel = plugin_rel;
    def->pattern = (op_pattern)spec->pattern;
    def->compute = plugin_compute;
    def->summary = copy->summary ? copy->summary : "user op";
    def->plugin = copy;
    def->schedule = spec->schedule ? plugin_schedule : NULL;
    def->layout = spec->layout == KILN_OP_LAYOUT_ANY ? LAYOUT_FOLLOWS : LAYOUT_PLAIN;
    /* defaults must parse: check them now, not at first use */
    for (const attr_schema *s = schema; s->name; s++)
        if (s->def) {
            struct kiln_graph *tmp = graph_new(NULL);
            gattr *a;
            char text[512];
            snprintf(text, sizeof text, "%s=%s", s->name, s->def);
            int ok = tmp && graph_parse_attrs(tmp, text, &a) == 1 &&
                     (a->kind == s->kind || (s->kind == GA_FLOAT && a->kind == GA_INT));
            kiln_graph_free(tmp);
            if (!ok) {
                kiln_set_error(KILN_ERR_INVALID,
                               "op '%s': default '%s' of attribute '%s' does "
                               "not parse as its kind",
                               spec->name, s->def, s->name);
                free_row(def, copy, schema);
                return KILN_ERR_INVALID;
            }
        }
    /* rows live for the process: the registry is process-wide */
    kiln_status st = op_registry_add(r, def);
    if (st != KILN_OK)
        free_row(def, copy, schema);
    return st;
}

kiln_status kiln_plugin_load(const char *path) {
    if (!path)
        return kiln_set_error(KILN_ERR_INVALID, "plugin: no path");
    size_t plen = strlen(path);
    if (plen > 3 && !strcmp(path + plen - 3, ".py")) {
        /* a Python plugin: the Python package (kiln/__init__.py) registers
           the loader when it is imported into this process */
        kiln_func *load = kiln_func_get("kiln.plugin.load_python", 1);
        if (!load)
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "plugin %s is Python: it loads only where the kiln Python "
                                  "package runs (python -m kiln, which the kiln command "
                                  "starts itself for a .py plugin)",
                                  path);
        kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
        kiln_status st = in && ret ? kiln_args_push_str(in, path) : KILN_ERR_NOMEM;
        if (st == KILN_OK && (st = kiln_func_call(load, in, ret)) != KILN_OK)
            kiln_error_prefix("plugin %s", path);
        kiln_args_free(in);
        kiln_args_free(ret);
        kiln_func_release(load);
        return st;
    }
    char full[4096];
    snprintf(full, sizeof full, "%s%s", strchr(path, '/') ? "" : "./", path);
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return kiln_set_error(KILN_ERR_IO, "plugin %s: %s", path, dlerror());
    int (*init)(void) = (int (*)(void))dlsym(h, "kiln_plugin_init");
    if (!init) {
        dlclose(h);
        return kiln_set_error(KILN_ERR_INVALID, "plugin %s: no kiln_plugin_init function", path);
    }
    kiln_clear_error();
    if (init() != 0) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return kiln_set_error(KILN_ERR_INVALID, "plugin %s: kiln_plugin_init failed%s%s", path,
                              *msg ? ": " : "", msg);
    }
    return KILN_OK; /* the plugin stays loaded: its ops are registered */
}
