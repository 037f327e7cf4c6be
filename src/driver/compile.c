/* compile.c: the graph build pipeline. A typed graph is split into fused
 * groups (FuseOps); each group becomes one kernel: its ops' computes are
 * composed over placeholders for the group's inputs, scheduled by the
 * default CPU schedule, and lowered. All kernels are rendered into one C
 * source and compiled into mod.so. The execution plan (mod.json, TVM's
 * graph-executor JSON) and a memory plan that reuses buffers are made here,
 * and the constants become mod.params. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/json.h"
#include "../contrib/contrib.h"
#include "../ops/ops.h"
#include "../passes/passes.h"
#include "../runtime/runtime_internal.h"
#include "../te/te_internal.h"
#include "../tir/cost.h"
#include "concat_views.h"
#include "driver_internal.h"
#include "tune_records.h"

typedef struct {
    int nmembers;
    int *members; /* node ids, increasing */
    int nin;
    int *in;          /* input node ids (outside the group) */
    int out;          /* the output node */
    char func[160];   /* its kernel's name */
    char kernel[160]; /* the C function it runs: its own, or an earlier kernel's with the same
                         code (codegen_func_key) */
    int fidx;         /* that function's index in build.funcs (-1: a control node) */
} group_t;

/* What the plans of a graph and of its bodies share as they are made: the
 * build's options, the kernels of all of them (one module), the
 * parameters (one mod.params, names unique across the plans) and the count
 * of bodies, which names their kernels apart. */
typedef struct {
    const kiln_build_options *opts;
    const kiln_target *target;
    pass_env env;
    kiln_ctx *ctx;
    int level, fuse, views;    /* views: ConcatViews is on (concat_views.c) */
    tir_func *funcs;           /* the distinct kernels */
    tir_count (*cost)[2];      /* funcs[i]'s flops and bytes (tir/cost.h) */
    unsigned char (*keys)[32]; /* funcs[i]'s codegen_func_key */
    int nfuncs, fcap;
    int nkernels;               /* all, before kernels with the same code became one */
    unsigned char (*gkeys)[32]; /* the groups lowered so far: their driver_group_key */
    int *gfunc;                 /* and the function each runs */
    int ngkeys, gcap;
    kiln_npz *params;
    int pcount, nbodies;
    driver_records *records; /* --tuning-records, or NULL */
    driver_layout_knobs lk;  /* which apply them to AlterOpLayout's knobs */
    int ntuned;              /* distinct kernels built with a record's config */
    int nbyoc;               /* the target's external backends (kiln/byoc.h), and those */
    const kiln_codegen_spec *byoc[2 * TGT_MAX_EXTERNAL]; /* a graph partitioned by hand names */
    int byoc_funcs[2 * TGT_MAX_EXTERNAL];                /* the external functions each compiled */
} build;

typedef struct {
    struct kiln_graph *g;
    int *group_of;
    int ngroups;
    group_t *groups;
    const char *prefix; /* of its kernels' names: "" for the graph, "b1_" for a body */
    int depth;          /* 0 for the graph, 1 for a body, ... */
    driver_views V;     /* the concatenations that are views, and where tensors lie */
} plan;

static void sanitize(char *dst, size_t cap, const char *src) {
    size_t k = 0;
    for (; *src && k + 1 < cap; src++) {
        char c = *src;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        dst[k++] = ok ? c : '_';
    }
    dst[k] = 0;
}

/* ---- grouping --------------------------------------------------------------- */

static kiln_status make_groups(plan *P, int fuse) {
    struct kiln_graph *g = P->g;
    P->group_of = calloc((size_t)g->n, sizeof(int));
    if (!P->group_of)
        return KILN_ERR_NOMEM;
    if (fuse) {
        P->ngroups = pass_fuse_ops(g, P->V.view, P->group_of);
        /* number groups in the order of their output nodes: a group's inputs
           are outputs of groups that end earlier, so this order runs
           producers first (creation order may not: dense joins add later) */
        int *last = malloc(sizeof(int) * (size_t)(P->ngroups ? P->ngroups : 1));
        int *rank = malloc(sizeof(int) * (size_t)(P->ngroups ? P->ngroups : 1));
        if (!last || !rank) {
            free(last);
            free(rank);
            return KILN_ERR_NOMEM;
        }
        for (int id = 0; id < g->n; id++)
            if (P->group_of[id] >= 0)
                last[P->group_of[id]] = id;
        for (int k = 0; k < P->ngroups; k++) {
            rank[k] = 0;
            for (int j = 0; j < P->ngroups; j++)
                rank[k] += last[j] < last[k];
        }
        for (int id = 0; id < g->n; id++)
            if (P->group_of[id] >= 0)
                P->group_of[id] = rank[P->group_of[id]];
        free(last);
        free(rank);
    } else {
        for (int id = 0; id < g->n; id++)
            P->group_of[id] = g->nodes[id]->kind == GN_CALL ? P->ngroups++ : -1;
    }
    P->groups = calloc((size_t)(P->ngroups ? P->ngroups : 1), sizeof(group_t));
    if (!P->groups)
        return KILN_ERR_NOMEM;
    for (int k = 0; k < P->ngroups; k++) {
        group_t *gr = &P->groups[k];
        gr->members = malloc(sizeof(int) * (size_t)g->n);
        gr->in = malloc(sizeof(int) * (size_t)g->n);
        if (!gr->members || !gr->in)
            return KILN_ERR_NOMEM;
    }
    for (int id = 0; id < g->n; id++) {
        int k = P->group_of[id];
        if (k < 0)
            continue;
        group_t *gr = &P->groups[k];
        gr->members[gr->nmembers++] = id;
        gr->out = id;
        const gnode *n = g->nodes[id];
        for (int i = 0; i < n->nin; i++) {
            int src = n->in[i];
            if (P->group_of[src] == k)
                continue;
            int seen = 0;
            for (int j = 0; j < gr->nin; j++)
                seen |= gr->in[j] == src;
            if (!seen)
                gr->in[gr->nin++] = src;
        }
    }
    for (int k = 0; k < P->ngroups; k++) {
        group_t *gr = &P->groups[k];
        const gnode *on = g->nodes[gr->out];
        if (on->op->control || on->op->external) { /* its inputs as they are: they are its
                                                      bodies' parameters */
            gr->nin = on->nin;
            memcpy(gr->in, on->in, sizeof(int) * (size_t)on->nin);
        }
        char ops[120] = "";
        for (int m = 0; m < gr->nmembers && strlen(ops) < 80; m++) {
            char part[64];
            sanitize(part, sizeof part, g->nodes[gr->members[m]]->op->name);
            const char *p = strncmp(part, "nn_", 3) == 0 ? part + 3 : part;
            strncat(ops, "_", sizeof ops - strlen(ops) - 1);
            strncat(ops, p, sizeof ops - strlen(ops) - 1);
        }
        snprintf(gr->func, sizeof gr->func, "%sfused%s_%d", P->prefix, ops, k);
        memcpy(gr->kernel, gr->func, sizeof gr->kernel);
        gr->fidx = -1;
    }
    return KILN_OK;
}

/* What make_groups and driver_plan_views allocated in P. */
static void plan_free(plan *P) {
    for (int k = 0; k < P->ngroups && P->groups; k++) {
        free(P->groups[k].members);
        free(P->groups[k].in);
    }
    free(P->groups);
    free(P->group_of);
    driver_views_free(&P->V);
}

/* ---- one kernel per group ------------------------------------------------------ */

static kiln_tensor *placeholder_for(kiln_ctx *ctx, const gtensor_type *t, const char *name) {
    kiln_expr sh[KILN_MAX_NDIM];
    for (int d = 0; d < t->ndim; d++) /* a symbolic dim: the kernel's size variable */
        sh[d] = t->dims[d].sym ? kiln_size_var(ctx, t->dims[d].sym) : kiln_int(ctx, t->dims[d].v);
    return kiln_placeholder(ctx, t->ndim, sh, t->dtype, name);
}

static tir_func *lower_group(plan *P, kiln_ctx *ctx, group_t *gr, const kiln_build_options *opts,
                             const kiln_target *target, te_knobs *knobs) {
    struct kiln_graph *g = P->g;
    kiln_tensor **t = calloc((size_t)g->n * 2 + 2, sizeof(kiln_tensor *)); /* node -> tensor(s) */
    kiln_tensor *args[4096];
    tir_func *f = NULL;
    int nargs = 0;
    char label[512];
    kiln_tensor *anchor = NULL;
    const gnode *anchor_node = NULL;
    if (!t)
        return NULL;
    for (int i = 0; i < gr->nin; i++) {
        const gnode *src = g->nodes[gr->in[i]];
        const gtensor_type *ty = &src->type.t[0];
        char nm[64];
        snprintf(nm, sizeof nm, "in%d", i);
        if (src->type.is_tuple) {
            kiln_set_error(KILN_ERR_UNSUPPORTED, "%s takes a tuple input",
                           graph_node_label(g->nodes[gr->out], label, sizeof label));
            goto done;
        }
        t[src->id] = placeholder_for(ctx, ty, nm);
        args[nargs++] = t[src->id];
    }
    for (int m = 0; m < gr->nmembers; m++) {
        const gnode *n = g->nodes[gr->members[m]];
        if (!n->op->compute) {
            kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: op %s has no compute yet",
                           graph_node_label(n, label, sizeof label), n->op->name);
            goto done;
        }
        kiln_tensor *in[4096];
        for (int i = 0; i < n->nin; i++)
            in[i] = t[n->in[i]];
        kiln_tensor *outs[64] = {0};
        if (n->op->compute(ctx, n, in, outs) != KILN_OK) {
            kiln_error_prefix("%s", graph_node_label(n, label, sizeof label));
            goto done;
        }
        t[n->id] = outs[0];
        if ((n->op->pattern == OP_OUT_ELEMWISE_FUSABLE || n->op->schedule) && !anchor) {
            anchor = outs[0];
            anchor_node = n;
        }
        if (n->type.is_tuple) {
            if (n->id != gr->out) {
                kiln_set_error(KILN_ERR_INVALID, "internal: a tuple-valued node inside a group");
                goto done;
            }
            for (int k = 0; k < n->type.n; k++)
                args[nargs + k] = outs[k];
        }
    }
    const gnode *on = g->nodes[gr->out];
    int nout = on->type.is_tuple ? on->type.n : 1;
    if (!on->type.is_tuple)
        args[nargs] = t[gr->out];
    kiln_schedule *s = kiln_schedule_create(ctx, nout, args + nargs);
    if (s)
        s->knobs = knobs;
    if (!s || driver_default_schedule(s, nout, args + nargs, on, anchor_node, anchor,
                                      opts && opts->naive, target) != KILN_OK) {
        kiln_error_prefix("scheduling %s",
                          graph_node_label(g->nodes[gr->out], label, sizeof label));
        goto done;
    }
    f = te_lower(s, nargs + nout, args, gr->func, target->vector_bytes);
    if (!f)
        kiln_error_prefix("lowering %s", graph_node_label(on, label, sizeof label));
done:
    free(t);
    return f;
}

/* The kernel of external call group gr (kiln/byoc.h): its backend's C. */
static tir_func *external_func(build *B, plan *P, group_t *gr) {
    const gnode *n = P->g->nodes[gr->out];
    int k =
        driver_backend(B->byoc, &B->nbyoc, 2 * TGT_MAX_EXTERNAL, graph_attr_str(n, "Compiler", ""));
    char label[512];
    if (k < 0) {
        kiln_error_prefix("%s", graph_node_label(n, label, sizeof label));
        return NULL;
    }
    snprintf(gr->func, sizeof gr->func, "%s%s", P->prefix, graph_attr_str(n, "global_symbol", ""));
    memcpy(gr->kernel, gr->func, sizeof gr->kernel);
    tir_func *f = driver_external_func(B->ctx, P->g, n, gr->func, gr->nin, gr->in, B->byoc[k]);
    B->byoc_funcs[k] += f != NULL;
    return f;
}

/* ---- the execution plan ------------------------------------------------------------ */

/* An entry's bytes, a symbolic dim counted as 1: only a hint for sharing
 * storage, since the runtime grows a buffer to what each run needs. */
static size_t entry_bytes(const gtensor_type *t) {
    size_t b = kiln_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++)
        b *= t->dims[d].sym ? 1 : (size_t)t->dims[d].v;
    return b;
}

typedef struct {
    const gtensor_type *type;
    int storage;
    int64_t offset; /* bytes into the storage: a tensor placed in a view's buffer */
} entry;

static char *plan_graph(build *B, struct kiln_graph *g, const char *prefix, int depth,
                        kiln_status *st);
static kiln_status check_static(struct kiln_graph *g);
static kiln_status check_symbolic(struct kiln_graph *g);

/* Body b of a control op: typed, through the pass pipeline and the checks a
 * graph gets, then planned with its kernels named apart ("b<N>_"). The
 * plan's JSON text, or NULL with *st. */
static char *plan_body(build *B, struct kiln_graph *b, int depth, kiln_status *st) {
    if (depth > GRAPH_MAX_BODY_DEPTH) {
        *st = kiln_set_error(KILN_ERR_UNSUPPORTED, "bodies nest more than %d deep",
                             GRAPH_MAX_BODY_DEPTH);
        return NULL;
    }
    const char *disabled = B->opts ? B->opts->disabled : NULL;
    struct kiln_graph *g = pass_run_pipeline(b, B->level, disabled, NULL, &B->env);
    if (!g) {
        *st = KILN_ERR_INVALID;
        return NULL;
    }
    char *text = NULL;
    if ((*st = check_static(g)) == KILN_OK && (*st = check_symbolic(g)) == KILN_OK) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "b%d_", ++B->nbodies);
        text = plan_graph(B, g, prefix, depth, st);
    }
    if (g != b)
        kiln_graph_free(g);
    return text;
}

/* 1 if symbol s is a dim of an input of call n. */
static int input_sym(const struct kiln_graph *g, const gnode *n, const char *s) {
    for (int i = 0; i < n->nin; i++) {
        const gtype *t = &g->nodes[n->in[i]]->type;
        for (int k = 0; k < t->n; k++)
            for (int d = 0; d < t->t[k].ndim; d++)
                if (t->t[k].dims[d].sym && !strcmp(t->t[k].dims[d].sym, s))
                    return 1;
    }
    return 0;
}

/* A control node's attributes in its plan node (docs/CONTROL_FLOW.md): its
 * kind, counts and axes, the size variables its outputs bind (each output
 * dim symbol its inputs do not have) and its bodies' plans, in the order of
 * the op's schema. */
static kiln_status control_attrs(build *B, plan *P, const gnode *on, const group_t *gr, kstr *js) {
    static const char *const kinds[] = {"", "if", "loop", "scan"};
    kstr_printf(js,
                ", \"control\": \"%s\", \"num_carried\": %lld, \"num_scan_inputs\": %lld, "
                "\"batch\": %lld",
                kinds[on->op->control], (long long)graph_attr_int(on, "num_carried", 0),
                (long long)graph_attr_int(on, "num_scan_inputs", 0),
                (long long)graph_attr_int(on, "batch", 0));
    static const char *const lists[] = {"scan_input_axes", "scan_input_directions",
                                        "scan_output_axes", "scan_output_directions"};
    for (int l = 0; l < 4; l++) {
        int64_t v[256];
        int n = graph_attr_ints(on, lists[l], v, 256);
        if (n < 0 || n > 256)
            continue;
        kstr_printf(js, ", \"%s\": [", lists[l]);
        for (int i = 0; i < n; i++)
            kstr_printf(js, "%s%lld", i ? ", " : "", (long long)v[i]);
        kstr_putc(js, ']');
    }
    int nb = 0;
    for (int o = 0; o < on->type.n; o++)
        for (int d = 0; d < on->type.t[o].ndim; d++) {
            const char *s = on->type.t[o].dims[d].sym;
            int seen = !s || input_sym(P->g, on, s);
            for (int p = 0; p <= o && !seen; p++)
                for (int e = 0; e < (p < o ? on->type.t[p].ndim : d) && !seen; e++)
                    seen = on->type.t[p].dims[e].sym && !strcmp(on->type.t[p].dims[e].sym, s);
            if (!seen)
                kstr_printf(js, "%s\"%s\"", nb++ ? ", " : ", \"binds\": [", s);
        }
    if (nb)
        kstr_putc(js, ']');
    kstr_puts(js, ", \"bodies\": [");
    int first = 1;
    for (const attr_schema *a = on->op->attrs; a && a->name; a++) {
        if (a->kind != GA_GRAPH)
            continue;
        kiln_status st = KILN_OK;
        char *body = plan_body(B, graph_attr_graph(on, a->name), P->depth + 1, &st);
        if (!body) {
            char label[512];
            kiln_error_prefix("%s: body '%s'", graph_node_label(on, label, sizeof label), a->name);
            return st ? st : KILN_ERR_INVALID;
        }
        kstr_puts(js, first ? "" : ", ");
        kstr_puts(js, body);
        free(body);
        first = 0;
    }
    kstr_putc(js, ']');
    (void)gr;
    return KILN_OK;
}

/* A kernel node's cost attributes (docs/PROFILING.md): "flops" and "bytes",
 * each an integer or a dim expression over its function's size variables;
 * an unknown count is left out. */
static void cost_attrs(kstr *js, const tir_count c[2]) {
    static const char *const keys[2] = {"flops", "bytes"};
    for (int i = 0; i < 2; i++) {
        if (!c[i].known)
            continue;
        kstr_printf(js, ", \"%s\": ", keys[i]);
        if (c[i].expr[0])
            json_write_string(js, c[i].expr);
        else
            kstr_printf(js, "%lld", (long long)c[i].value);
    }
}

/* JSON text of the plan. Null nodes: graph inputs and constants (params
 * named p0, p1, ... unless the constant has a unique name); then one
 * tvm_op per group ("__view" for a concatenation that is a view, which runs
 * nothing). Storage: inputs and params own theirs; group outputs reuse a
 * freed buffer of the same or larger size when their producer's consumers
 * are done (a graph output is never freed). The tensors placed in a view's
 * buffer share one storage id, taken by the first of them to be produced
 * and sized for the view, at their byte offsets ("storage_offset"), and it
 * is freed after the last reader of any of them. */
static char *make_json(plan *P, build *B, kiln_status *st) {
    struct kiln_graph *g = P->g;
    kiln_npz *params = B->params;
    const kiln_target *target = B->target;
    int nentries = 0, nnodes = 0;
    entry *ent = calloc((size_t)g->n * 2 + 64, sizeof(entry));
    int *node_first = malloc(sizeof(int) * (size_t)g->n); /* graph node -> entry */
    int *jnode_of = malloc(sizeof(int) * (size_t)g->n);   /* graph node -> json node */
    int *row_ptr = malloc(sizeof(int) * ((size_t)g->n + 2));
    int *last_use = malloc(sizeof(int) * ((size_t)g->n * 2 + 64));
    size_t *sbytes = calloc((size_t)g->n * 2 + 64, sizeof(size_t));
    int *sfree = calloc((size_t)g->n * 2 + 64, sizeof(int));
    int *root_storage = malloc(sizeof(int) * ((size_t)g->n + 1)); /* a view's buffer's id */
    int *group_out = malloc(sizeof(int) * ((size_t)P->ngroups + 1));
    kstr js, args, pnames;
    kstr_init(&js);
    kstr_init(&args);
    kstr_init(&pnames);
    *st = KILN_ERR_NOMEM;
    if (!ent || !node_first || !jnode_of || !row_ptr || !last_use || !sbytes || !sfree ||
        !root_storage || !group_out)
        goto fail;
    for (int id = 0; id < g->n; id++)
        node_first[id] = jnode_of[id] = root_storage[id] = -1;
    int nstorage = 0;
    kstr_puts(&js, "{\n  \"nodes\": [\n");
    /* null nodes first */
    int first = 1, pcount = 0;
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (n->kind != GN_VAR && n->kind != GN_CONST)
            continue;
        char pname[300];
        if (n->kind == GN_CONST) {
            snprintf(pname, sizeof pname, "p%d", B->pcount++);
            if (npz_add_shared(params, pname, n->value) != KILN_OK)
                goto fail;
            kstr_puts(&pnames, pcount++ ? ", " : "");
            json_write_string(&pnames, pname);
        } else {
            snprintf(pname, sizeof pname, "%s", n->name);
        }
        kstr_puts(&js, first ? "    " : ",\n    ");
        first = 0;
        kstr_puts(&js, "{\"op\": \"null\", \"name\": ");
        json_write_string(&js, pname);
        kstr_puts(&js, ", \"inputs\": []}");
        kstr_printf(&args, "%s%d", nnodes ? ", " : "", nnodes);
        jnode_of[id] = nnodes;
        row_ptr[nnodes] = nentries;
        node_first[id] = nentries;
        ent[nentries].type = &n->type.t[0];
        ent[nentries].storage = nstorage;
        sbytes[nstorage++] = entry_bytes(&n->type.t[0]);
        nentries++;
        nnodes++;
    }
    /* last use of each group output (by group index), for buffer reuse */
    for (int k = 0; k < P->ngroups; k++)
        last_use[k] = k;
    for (int k = 0; k < P->ngroups; k++)
        for (int i = 0; i < P->groups[k].nin; i++) {
            int src = P->groups[k].in[i];
            while (g->nodes[src]->kind == GN_TUPLE_GET)
                src = g->nodes[src]->in[0];
            int pg = P->group_of[src];
            if (pg >= 0 && last_use[pg] < k)
                last_use[pg] = k;
        }
    for (int k = 0; k < g->nout; k++) {
        int src = g->outs[k];
        while (g->nodes[src]->kind == GN_TUPLE_GET)
            src = g->nodes[src]->in[0];
        if (P->group_of[src] >= 0)
            last_use[P->group_of[src]] = P->ngroups; /* never freed */
    }
    for (int k = 0; k < P->ngroups; k++)
        group_out[k] = P->groups[k].out;
    if (driver_views_join_lifetimes(&P->V, P->ngroups, group_out, last_use, g->n) != KILN_OK)
        goto fail;
    int *group_storage = malloc(sizeof(int) * 64 * (size_t)(P->ngroups + 1));
    if (!group_storage)
        goto fail;
    for (int k = 0; k < P->ngroups; k++) {
        group_t *gr = &P->groups[k];
        const gnode *on = g->nodes[gr->out];
        int nout = on->type.is_tuple ? on->type.n : 1;
        if (nout > 64) {
            free(group_storage);
            *st = kiln_set_error(KILN_ERR_UNSUPPORTED, "a node with more than 64 outputs");
            goto fail;
        }
        /* release buffers whose last consumer ran before this group */
        for (int q = 0; q < k; q++)
            if (last_use[q] >= 0 && last_use[q] < k) {
                const gnode *qo = g->nodes[P->groups[q].out];
                int qn = qo->type.is_tuple ? qo->type.n : 1;
                for (int o = 0; o < qn; o++)
                    sfree[group_storage[q * 64 + o]] = 1;
                last_use[q] = -1;
            }
        kstr_puts(&js, first ? "    " : ",\n    ");
        first = 0;
        int control = on->kind == GN_CALL && on->op->control;
        kstr_printf(&js, "{\"op\": \"%s\", \"name\": ", control ? "control" : "tvm_op");
        json_write_string(&js, on->name && *on->name ? on->name : gr->func);
        kstr_printf(&js,
                    ", \"attrs\": {\"func_name\": \"%s\", \"num_inputs\": \"%d\", "
                    "\"num_outputs\": \"%d\", \"flatten_data\": \"0\"",
                    P->V.view[gr->out] ? "__view" : gr->kernel, gr->nin, nout);
        if (!control && gr->fidx >= 0)
            cost_attrs(&js, B->cost[gr->fidx]);
        if (on->kind == GN_CALL && on->op->external) {
            kstr_puts(&js, ", \"external\": ");
            json_write_string(&js, graph_attr_str(on, "Compiler", ""));
        }
        if (!control) /* the graph's ops it computes (kiln inspect's placement) */
            kstr_printf(&js, ", \"ops\": %d",
                        on->kind == GN_CALL && on->op->external ? driver_body_ops(on)
                                                                : gr->nmembers);
        if (control && (*st = control_attrs(B, P, on, gr, &js)) != KILN_OK) {
            free(group_storage);
            goto fail;
        }
        if (on->kind == GN_CALL && on->op->binds) {
            /* a binder: its values are the dims these variables name later */
            gdim names[64];
            int nb = ops_bound_dims(g, on, names, 64);
            KILN_ASSERT(nb >= 1); /* its relation checked it */
            kstr_puts(&js, ", \"binds\": [");
            for (int b = 0; b < nb; b++)
                if (names[b].sym) /* bound here, or checked against an earlier binding */
                    kstr_printf(&js, "%s\"%s\"", b ? ", " : "", names[b].sym);
                else /* checked against a size */
                    kstr_printf(&js, "%s%lld", b ? ", " : "", (long long)names[b].v);
            kstr_putc(&js, ']');
        }
        kstr_puts(&js, "}, \"inputs\": [");
        for (int i = 0; i < gr->nin; i++) {
            int src = gr->in[i], idx = 0;
            if (g->nodes[src]->kind == GN_TUPLE_GET) {
                idx = g->nodes[src]->index;
                src = g->nodes[src]->in[0];
            }
            int jn = jnode_of[src];
            if (jn < 0) {
                free(group_storage);
                char label[512];
                *st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                                     "%s: its input is not a tensor "
                                     "produced by a kernel or a graph input",
                                     graph_node_label(on, label, sizeof label));
                goto fail;
            }
            kstr_printf(&js, "%s[%d, %d, 0]", i ? ", " : "", jn, idx);
        }
        kstr_puts(&js, "]}");
        jnode_of[gr->out] = nnodes;
        row_ptr[nnodes] = nentries;
        node_first[gr->out] = nentries;
        for (int o = 0; o < nout; o++) {
            const gtensor_type *ty = &on->type.t[o];
            int root = on->type.is_tuple ? -1 : P->V.root[on->id];
            size_t need = entry_bytes(root >= 0 ? &g->nodes[root]->type.t[0] : ty);
            ent[nentries].offset = root >= 0 ? P->V.off[on->id] : 0;
            if (root >= 0 && root_storage[root] >= 0) { /* the view's buffer, taken already */
                group_storage[k * 64 + o] = root_storage[root];
                ent[nentries].type = ty;
                ent[nentries++].storage = root_storage[root];
                continue;
            }
            int best = -1;
            for (int sidx = 0; sidx < nstorage; sidx++)
                if (sfree[sidx] && sbytes[sidx] >= need &&
                    (best < 0 || sbytes[sidx] < sbytes[best]))
                    best = sidx;
            if (best < 0) {
                best = nstorage;
                sbytes[nstorage++] = need;
            }
            sfree[best] = 0;
            if (root >= 0)
                root_storage[root] = best;
            group_storage[k * 64 + o] = best;
            ent[nentries].type = ty;
            ent[nentries].storage = best;
            nentries++;
        }
        nnodes++;
    }
    free(group_storage);
    row_ptr[nnodes] = nentries;
    kstr_puts(&js, "\n  ],\n  \"arg_nodes\": [");
    kstr_puts(&js, args.buf ? args.buf : "");
    kstr_free(&args);
    kstr_puts(&js, "],\n  \"heads\": [");
    for (int k = 0; k < g->nout; k++) {
        int src = g->outs[k], idx = 0;
        if (g->nodes[src]->kind == GN_TUPLE_GET) {
            idx = g->nodes[src]->index;
            src = g->nodes[src]->in[0];
        }
        if (jnode_of[src] < 0) {
            *st = kiln_set_error(KILN_ERR_UNSUPPORTED, "graph output %d is not a tensor", k);
            goto fail;
        }
        kstr_printf(&js, "%s[%d, %d, 0]", k ? ", " : "", jnode_of[src], idx);
    }
    /* the parameters: the runtime refuses a package whose mod.params lacks one */
    if (pnames.oom) {
        *st = KILN_ERR_NOMEM;
        goto fail;
    }
    kstr_puts(&js, "],\n  \"param_names\": [");
    kstr_puts(&js, pnames.buf ? pnames.buf : "");
    kstr_puts(&js, "],\n  \"output_names\": [");
    for (int k = 0; k < g->nout; k++) {
        if (k)
            kstr_puts(&js, ", ");
        json_write_string(&js, g->out_names[k]);
    }
    /* what the kernels were built for: the runtime refuses a package for
       another architecture, or one needing features this CPU lacks */
    kstr_puts(&js, "]");
    if (P->depth == 0) { /* a body's plan leaves it to the graph's */
        kstr_puts(&js, ",\n  \"target\": {\"str\": ");
        json_write_string(&js, kiln_target_str(target));
        kstr_printf(&js, ", \"arch\": \"%s\", \"vector_bits\": %d, \"features\": [",
                    kiln_target_arch(target), kiln_target_vector_bits(target));
        char *feats = kiln_target_features(target);
        for (const char *f = feats ? feats : ""; *f;) {
            size_t n = strcspn(f, ",");
            kstr_printf(&js, "%s\"%.*s\"", f == feats ? "" : ", ", (int)n, f);
            f += n + (f[n] == ',');
        }
        free(feats);
        kstr_puts(&js, "]");
        driver_external_json(&js, B->nbyoc, B->byoc, B->byoc_funcs);
        kstr_puts(&js, "}");
    }
    kstr_puts(&js, ",\n  \"node_row_ptr\": [");
    for (int i = 0; i <= nnodes; i++)
        kstr_printf(&js, "%s%d", i ? ", " : "", row_ptr[i]);
    kstr_puts(&js, "],\n  \"attrs\": {\n    \"dltype\": [\"list_str\", [");
    for (int e = 0; e < nentries; e++)
        kstr_printf(&js, "%s\"%s\"", e ? ", " : "", kiln_dtype_name(ent[e].type->dtype));
    kstr_puts(&js, "]],\n    \"storage_id\": [\"list_int\", [");
    for (int e = 0; e < nentries; e++)
        kstr_printf(&js, "%s%d", e ? ", " : "", ent[e].storage);
    if (P->V.nviews) { /* the views' placed tensors (absent: every offset 0) */
        kstr_puts(&js, "]],\n    \"storage_offset\": [\"list_int\", [");
        for (int e = 0; e < nentries; e++)
            kstr_printf(&js, "%s%lld", e ? ", " : "", (long long)ent[e].offset);
    }
    kstr_puts(&js, "]],\n    \"shape\": [\"list_shape\", [");
    for (int e = 0; e < nentries; e++) {
        kstr_puts(&js, e ? ", [" : "[");
        for (int d = 0; d < ent[e].type->ndim; d++) {
            const gdim *dd = &ent[e].type->dims[d];
            if (dd->sym) /* an identifier (kiln_graph_var checks): a dim expression */
                kstr_printf(&js, "%s\"%s\"", d ? ", " : "", dd->sym);
            else
                kstr_printf(&js, "%s%lld", d ? ", " : "", (long long)dd->v);
        }
        kstr_putc(&js, ']');
    }
    kstr_puts(&js, "]]\n  }\n}\n");
    *st = KILN_OK;
fail:
    kstr_free(&args);
    kstr_free(&pnames);
    free(ent);
    free(node_first);
    free(jnode_of);
    free(row_ptr);
    free(last_use);
    free(sbytes);
    free(sfree);
    free(root_storage);
    free(group_out);
    if (*st != KILN_OK) {
        kstr_free(&js);
        return NULL;
    }
    return kstr_take(&js);
}

/* ---- the entry point --------------------------------------------------------------- */

/* With --dump-ir: what the kernels became, after the graph passes' dumps:
 * the target, the loop IR of every kernel and the C source parts. */
static kiln_status dump_kernels(const char *dir, const kiln_target *target, int nfuncs,
                                const tir_func *funcs, int nparts, char *const *parts) {
    kstr s;
    kstr_init(&s);
    kstr_printf(&s,
                "target: %s\narch: %s\nvector bits: %d\nvector registers: %d\n"
                "cc: %s\ncflags: %s\n",
                kiln_target_str(target), kiln_target_arch(target), kiln_target_vector_bits(target),
                kiln_target_vector_registers(target), target->cc, target->cflags);
    char path[4096];
    snprintf(path, sizeof path, "%s/target.txt", dir);
    kiln_status st = s.oom ? KILN_ERR_NOMEM : kiln_write_file(path, s.buf, s.len);
    kstr_free(&s);
    kstr_init(&s);
    for (int k = 0; k < nfuncs; k++) {
        tir_print_func(&s, &funcs[k]);
        kstr_putc(&s, '\n');
    }
    snprintf(path, sizeof path, "%s/kernels.tir.txt", dir);
    if (!st)
        st = s.oom ? KILN_ERR_NOMEM : kiln_write_file(path, s.buf ? s.buf : "", s.len);
    kstr_free(&s);
    for (int k = 0; k < nparts && !st; k++) {
        snprintf(path, sizeof path, "%s/mod_%d.c", dir, k);
        st = kiln_write_file(path, parts[k], strlen(parts[k]));
    }
    return st;
}

/* The largest tensor a package may hold (the executor's limit too). */
#define MAX_TENSOR_BYTES ((int64_t)1 << 40)

static kiln_status check_static(struct kiln_graph *g) {
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        for (int k = 0; k < n->type.n; k++) {
            int64_t bytes = (int64_t)kiln_dtype_size(n->type.t[k].dtype);
            int ok = 1;
            for (int d = 0; d < n->type.t[k].ndim && ok; d++)
                ok = n->type.t[k].dims[d].sym || kiln_mul_ok(bytes, n->type.t[k].dims[d].v, &bytes);
            if (!ok || bytes > MAX_TENSOR_BYTES) {
                char label[512];
                return kiln_set_error(KILN_ERR_INVALID, "%s: its tensor is larger than 1 TiB",
                                      graph_node_label(n, label, sizeof label));
            }
        }
    }
    return KILN_OK;
}

static const char *symbolic_dim(const gtype *t) {
    for (int k = 0; t->known && k < t->n; k++)
        for (int d = 0; d < t->t[k].ndim; d++)
            if (t->t[k].dims[d].sym)
                return t->t[k].dims[d].sym;
    return NULL;
}

/* A symbolic dim left unbound reaches the kernels as a size variable bound
 * when the package runs (docs/DYNAMIC_SHAPES.md). Every call that sees one,
 * on an input or an output, must be of an op whose compute and schedule
 * take them (its row's sym_dims); the others are refused by name. Run after
 * the pass pipeline, on the ops that will be lowered. */
static kiln_status check_symbolic(struct kiln_graph *g) {
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (n->kind != GN_CALL || n->op->sym_dims)
            continue;
        const char *sym = symbolic_dim(&n->type);
        for (int i = 0; i < n->nin && !sym; i++)
            sym = symbolic_dim(&g->nodes[n->in[i]]->type);
        if (sym) {
            char label[512];
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "%s: op %s does not take a symbolic dim yet ('%s'); bind it "
                                  "at compile time with --input-shapes \"name:[...]\"",
                                  graph_node_label(n, label, sizeof label), n->op->name, sym);
        }
    }
    return KILN_OK;
}

/* The plan of g (typed, through the passes) as JSON text, its kernels
 * appended to B's; NULL with *st. */
static char *plan_graph(build *B, struct kiln_graph *g, const char *prefix, int depth,
                        kiln_status *st) {
    plan P = {g, NULL, 0, NULL, prefix, depth, {0}};
    char *text = NULL;
    if ((*st = driver_plan_views(g, B->views, B->fuse, &P.V)) != KILN_OK ||
        (*st = make_groups(&P, B->fuse)) != KILN_OK)
        goto done;
    for (int k = 0; k < P.ngroups; k++) {
        if (g->nodes[P.groups[k].out]->op->control || P.V.view[P.groups[k].out])
            continue; /* its bodies are planned in its plan node; a view runs nothing */
        if (B->nfuncs == B->fcap) {
            int ncap = B->fcap ? B->fcap * 2 : 64;
            tir_func *nf = kiln_realloc(B->funcs, sizeof(tir_func) * (size_t)ncap);
            if (nf)
                B->funcs = nf;
            unsigned char(*nk)[32] = nf ? kiln_realloc(B->keys, 32 * (size_t)ncap) : NULL;
            if (nk)
                B->keys = nk;
            tir_count(*nc)[2] = nk ? kiln_realloc(B->cost, sizeof *nc * (size_t)ncap) : NULL;
            if (!nc) {
                *st = KILN_ERR_NOMEM;
                goto done;
            }
            B->cost = nc;
            B->fcap = ncap;
        }
        group_t *gr = &P.groups[k];
        if (g->nodes[gr->out]->op->external) {
            tir_func *f = external_func(B, &P, gr);
            if (!f) {
                *st = KILN_ERR_UNSUPPORTED;
                goto done;
            }
            if ((*st = codegen_func_key(f, B->keys[B->nfuncs])) != KILN_OK)
                goto done;
            memset(B->cost[B->nfuncs], 0, sizeof B->cost[B->nfuncs]);
            gr->fidx = B->nfuncs;
            B->funcs[B->nfuncs++] = *f;
            B->nkernels++;
            continue;
        }
        /* a group like one lowered before runs that one's function */
        if (B->ngkeys == B->gcap) {
            int ncap = B->gcap ? B->gcap * 2 : 64;
            unsigned char(*nk)[32] = kiln_realloc(B->gkeys, 32 * (size_t)ncap);
            if (nk)
                B->gkeys = nk;
            int *nf = nk ? kiln_realloc(B->gfunc, sizeof(int) * (size_t)ncap) : NULL;
            if (!nf) {
                *st = KILN_ERR_NOMEM;
                goto done;
            }
            B->gfunc = nf;
            B->gcap = ncap;
        }
        int keyed = driver_group_key(g, gr->members, gr->nmembers, gr->in, gr->nin,
                                     B->gkeys[B->ngkeys]),
            like = -1;
        for (int j = 0; keyed && j < B->ngkeys && like < 0; j++)
            if (!memcmp(B->gkeys[j], B->gkeys[B->ngkeys], 32))
                like = B->gfunc[j];
        if (like >= 0) {
            snprintf(gr->kernel, sizeof gr->kernel, "%s", B->funcs[like].name);
            gr->fidx = like;
            B->nkernels++;
            if (depth == 0)
                driver_progress(B->opts, "lower", k + 1, P.ngroups, NULL);
            continue;
        }
        /* a tuned workload: its best record's config */
        const driver_record *rec = keyed && B->records && depth == 0
                                       ? driver_records_best(B->records, B->gkeys[B->ngkeys], NULL)
                                       : NULL;
        te_knobs knobs = {NULL, rec ? &rec->cfg : NULL, 0};
        B->ntuned += rec != NULL;
        tir_func *f = lower_group(&P, B->ctx, gr, B->opts, B->target, rec ? &knobs : NULL);
        if (!f) {
            *st = KILN_ERR_INVALID;
            goto done;
        }
        /* a kernel with the same code as an earlier one (DenseNet's and
           ResNet's repeated blocks) runs that one's C function */
        if ((*st = codegen_func_key(f, B->keys[B->nfuncs])) != KILN_OK)
            goto done;
        B->nkernels++;
        int same = -1;
        for (int j = 0; j < B->nfuncs && same < 0; j++)
            if (!memcmp(B->keys[j], B->keys[B->nfuncs], 32))
                same = j;
        snprintf(gr->kernel, sizeof gr->kernel, "%s", same < 0 ? gr->func : B->funcs[same].name);
        if (keyed)
            B->gfunc[B->ngkeys++] = same < 0 ? B->nfuncs : same;
        gr->fidx = same < 0 ? B->nfuncs : same;
        if (same < 0) {
            tir_func_flops(f, &B->cost[B->nfuncs][0]);
            tir_func_bytes(f, &B->cost[B->nfuncs][1]);
            B->funcs[B->nfuncs++] = *f;
        }
        if (depth == 0)
            driver_progress(B->opts, "lower", k + 1, P.ngroups, NULL);
    }
    text = make_json(&P, B, st);
done:
    plan_free(&P);
    return text;
}

/* g typed, checked and through the pass pipeline for opts' target (B set
 * up with both); NULL with *st, target freed. The result is g itself or a
 * new graph. lk answers AlterOpLayout's knobs (a tuning session's); with
 * none, a build with tuning records has B's apply them (B->records). */
static struct kiln_graph *prepare(kiln_graph *g, const kiln_build_options *opts, build *B,
                                  kiln_status *st, driver_layout_knobs *lk) {
    int level = opts && opts->opt_level >= 0 ? opts->opt_level : 3;
    const char *disabled = opts ? opts->disabled : NULL;
    memset(B, 0, sizeof *B);
    if ((*st = kiln_graph_infer_types(g)) != KILN_OK || (*st = check_static(g)) != KILN_OK)
        return NULL;
    kiln_target *target = driver_target(opts);
    if (!target) {
        *st = KILN_ERR_INVALID;
        return NULL;
    }
    B->opts = opts;
    B->target = target;
    if ((*st = contrib_backends(target, &B->nbyoc, B->byoc)) != KILN_OK) {
        kiln_target_free(target);
        return NULL;
    }
    B->env = (pass_env){target,
                        opts ? opts->winograd : -1,
                        0,
                        opts ? opts->progress : NULL,
                        opts ? opts->progress_user : NULL,
                        lk ? &lk->base : NULL,
                        B->nbyoc,
                        B->byoc,
                        opts ? opts->passes : NULL};
    if (!lk && opts && opts->records) {
        char rec_target[1200];
        driver_records_target(target, rec_target, sizeof rec_target);
        if (!(B->records = driver_records_load(opts->records, rec_target, 0))) {
            *st = KILN_ERR_IO;
            kiln_target_free(target);
            return NULL;
        }
        driver_layout_knobs_init(&B->lk, DRIVER_LK_APPLY, B->records, NULL, 0);
        B->env.knobs = &B->lk.base;
    }
    B->level = level;
    B->fuse = level > 0 && !(opts && opts->no_fuse) && !(disabled && strstr(disabled, "FuseOps"));
    B->views = level > 0 && !(disabled && strstr(disabled, "ConcatViews"));
    struct kiln_graph *pg =
        pass_run_pipeline(g, level, disabled, opts ? opts->dump_dir : NULL, &B->env);
    *st = pg ? check_symbolic(pg) : KILN_ERR_INVALID;
    if (*st != KILN_OK) {
        if (pg && pg != g)
            kiln_graph_free(pg);
        kiln_target_free(target);
        driver_records_free(B->records);
        B->records = NULL;
        driver_progress(opts, "done", 0, 0, NULL);
        return NULL;
    }
    return pg;
}

kiln_status kiln_graph_compile(kiln_graph *g, const char *package_path,
                               const kiln_build_options *opts) {
    if (!g || !package_path)
        return kiln_set_error(KILN_ERR_INVALID, "compile: NULL argument");
    if (g->nout < 1)
        return kiln_set_error(KILN_ERR_INVALID, "compile: the graph has no outputs");
    struct kiln_graph *user = g;
    build B;
    kiln_status st;
    if (!(g = prepare(user, opts, &B, &st, NULL)))
        return st;
    kiln_target *target = (kiln_target *)B.target;
    B.ctx = kiln_ctx_new();
    B.params = kiln_npz_new();
    char *parts[8] = {0}, *plan_json = NULL, *so = NULL, *dir = NULL;
    int nparts = 0;
    if (!B.ctx || !B.params) {
        st = KILN_ERR_NOMEM;
        goto done;
    }
    driver_progress(opts, "lower", 0, 0, NULL);
    plan_json = plan_graph(&B, g, "", 0, &st);
    if (!plan_json)
        goto done;
    char note[96];
    snprintf(note, sizeof note, "%d kernels, %d distinct", B.nkernels, B.nfuncs);
    driver_progress(opts, "lower", B.nkernels, B.nkernels, note);
    if (B.records) {
        char tn[320];
        int len = snprintf(tn, sizeof tn, "%d of %d distinct kernels tuned from %s", B.ntuned,
                           B.ngkeys, opts->records);
        if (B.lk.applied && len > 0 && len < (int)sizeof tn)
            len += snprintf(tn + len, sizeof tn - (size_t)len, "; %d calls' layout choices",
                            B.lk.applied);
        if (B.records->other_target && len > 0 && len < (int)sizeof tn)
            len += snprintf(tn + len, sizeof tn - (size_t)len,
                            "; %d records for other targets ignored", B.records->other_target);
        if (B.records->bad && len > 0 && len < (int)sizeof tn)
            snprintf(tn + len, sizeof tn - (size_t)len,
                     "; %d malformed lines skipped (the first: line %d)", B.records->bad,
                     B.records->first_bad);
        driver_progress(opts, "tuning records", B.ntuned, B.ngkeys, tn);
    }
    driver_progress(opts, "render", 0, 0, NULL);
    /* A model's kernels compile as one translation unit per core, in
       parallel (ResNet-50: 6.1 -> 3.6 s on 2 cores); a small graph's as one,
       which saves the link step. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    nparts = B.nfuncs >= 8 && ncpu > 1 ? (int)(ncpu < 8 ? ncpu : 8) : 1;
    nparts = codegen_render_c_parts(B.nfuncs, B.funcs, nparts, parts);
    if (nparts < 1) {
        nparts = 0;
        st = KILN_ERR_INVALID;
        goto done;
    }
    if (opts && opts->dump_dir &&
        (st = dump_kernels(opts->dump_dir, target, B.nfuncs, B.funcs, nparts, parts)) != KILN_OK)
        goto done;
    codegen_toolchain tc = driver_toolchain(opts, target);
    kstr cflags, ldflags; /* with the headers and libraries of the backends used */
    driver_external_flags(&tc, &cflags, &ldflags, B.nbyoc, B.byoc, B.byoc_funcs);
    st = codegen_compile_parts(nparts, (const char *const *)parts, "mod", &tc, &so, &dir);
    kstr_free(&cflags);
    kstr_free(&ldflags);
    if (st != KILN_OK)
        goto done;
    if ((st = driver_check_arch(so, target)) != KILN_OK) {
        driver_remove_dir(dir);
        goto done;
    }
    driver_progress(opts, "package", 0, 0, NULL);
    st = kiln_package_write(package_path, plan_json, strlen(plan_json), so, B.params);
    driver_remove_dir(dir);
done:
    driver_progress(opts, "done", 0, 0, NULL);
    free(B.funcs);
    free(B.cost);
    free(B.keys);
    free(B.gkeys);
    free(B.gfunc);
    for (int k = 0; k < nparts; k++)
        free(parts[k]);
    free(plan_json);
    free(so);
    free(dir);
    kiln_npz_free(B.params);
    kiln_ctx_free(B.ctx);
    driver_records_free(B.records);
    if (g != user)
        kiln_graph_free(g);
    kiln_target_free(target);
    return st;
}

/* ---- tuning sessions (driver_internal.h) ------------------------------------------ */

struct driver_session {
    build B;
    plan P;
    struct kiln_graph *user, *g;
    int ntasks;
    driver_task *tasks;
    int *group_task; /* group k's task, or -1 (no key, a control op, a view) */
};

void driver_session_close(driver_session *S) {
    if (!S)
        return;
    plan_free(&S->P);
    if (S->g && S->g != S->user)
        kiln_graph_free(S->g);
    kiln_target_free((kiln_target *)S->B.target);
    free(S->tasks);
    free(S->group_task);
    free(S);
}

driver_session *driver_session_open(kiln_graph *g, const kiln_build_options *opts,
                                    driver_layout_knobs *lk) {
    if (!g || g->nout < 1) {
        kiln_set_error(KILN_ERR_INVALID, "tune: %s", g ? "the graph has no outputs" : "NULL graph");
        return NULL;
    }
    driver_session *S = kiln_calloc(1, sizeof *S);
    kiln_status st;
    if (!S)
        return NULL;
    S->user = g;
    if (!(S->g = prepare(g, opts, &S->B, &st, lk))) {
        free(S);
        return NULL;
    }
    S->P = (plan){S->g, NULL, 0, NULL, "", 0, {0}};
    if ((st = driver_plan_views(S->g, S->B.views, S->B.fuse, &S->P.V)) != KILN_OK ||
        (st = make_groups(&S->P, S->B.fuse)) != KILN_OK ||
        !(S->tasks = kiln_calloc((size_t)(S->P.ngroups ? S->P.ngroups : 1), sizeof(driver_task))) ||
        !(S->group_task = kiln_calloc((size_t)(S->P.ngroups ? S->P.ngroups : 1), sizeof(int)))) {
        driver_session_close(S);
        return NULL;
    }
    for (int k = 0; k < S->P.ngroups; k++) {
        group_t *gr = &S->P.groups[k];
        const gnode *on = S->g->nodes[gr->out];
        unsigned char key[32];
        S->group_task[k] = -1;
        if (on->op->control || S->P.V.view[gr->out] ||
            !driver_group_key(S->g, gr->members, gr->nmembers, gr->in, gr->nin, key))
            continue;
        int t = 0;
        while (t < S->ntasks && memcmp(S->tasks[t].key, key, 32))
            t++;
        driver_task *T = &S->tasks[t];
        if (t == S->ntasks) {
            S->ntasks++;
            memcpy(T->key, key, 32);
            T->group = k;
            T->nout = on->type.is_tuple ? on->type.n : 1;
            for (int i = 0; i < gr->nin && i < 64; i++)
                if (S->g->nodes[gr->in[i]]->kind == GN_CONST)
                    T->consts |= (uint64_t)1 << i;
            for (int m = 0; m < gr->nmembers; m++) {
                size_t len = strlen(T->ops);
                snprintf(T->ops + len, sizeof T->ops - len, "%s%s", m ? "+" : "",
                         S->g->nodes[gr->members[m]]->op->name);
            }
            const gtype *ty = &on->type;
            for (int d = 0; ty->known && !ty->is_tuple && d < ty->t[0].ndim; d++) {
                size_t len = strlen(T->shape);
                char dim[32];
                ops_dim_str(ty->t[0].dims[d], dim, sizeof dim);
                snprintf(T->shape + len, sizeof T->shape - len, "%s%s", d ? "x" : "", dim);
            }
        }
        T->count++;
        S->group_task[k] = t;
    }
    return S;
}

int driver_session_task_of(const driver_session *S, const char *name) {
    if (!name || !*name)
        return -1;
    for (int k = 0; k < S->P.ngroups; k++) {
        const group_t *gr = &S->P.groups[k];
        for (int m = 0; m < gr->nmembers; m++) {
            const char *nm = S->g->nodes[gr->members[m]]->name;
            if (nm && !strcmp(nm, name))
                return S->group_task[k];
        }
    }
    return -1;
}

int driver_session_tasks(const driver_session *S, const driver_task **tasks) {
    *tasks = S->tasks;
    return S->ntasks;
}

const kiln_target *driver_session_target(const driver_session *S) {
    return S->B.target;
}

tir_func *driver_session_lower(driver_session *S, int task, kiln_ctx *ctx, te_knobs *knobs,
                               const char *name) {
    if (task < 0 || task >= S->ntasks) {
        kiln_set_error(KILN_ERR_INVALID, "tune: no task %d", task);
        return NULL;
    }
    group_t gr = S->P.groups[S->tasks[task].group];
    snprintf(gr.func, sizeof gr.func, "%s", name);
    return lower_group(&S->P, ctx, &gr, S->B.opts, S->B.target, knobs);
}
