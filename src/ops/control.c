/* control.c: the control-flow ops, If, Loop and Scan, whose bodies are
 * sub-graphs (GA_GRAPH attributes) compiled like any other graph
 * (docs/CONTROL_FLOW.md). A control op has no compute: its row's `control`
 * tells the driver to compile its bodies into plans nested in its plan
 * node, which the executor runs as many times as the data says. The
 * relations here give the output types from the bodies' types:
 *
 *   if(cond, c...)                   then_branch(c...) and else_branch(c...)
 *                                    both return the outputs
 *   loop(M, cond, v..., c...)        body(i, cond, v..., c...) returns
 *                                    (cond, v..., s...); outputs (v..., S...),
 *                                    S_j = s_j stacked over the iterations
 *   scan(v..., x..., c...)           body(v..., x_t..., c...) returns
 *                                    (v..., s...); x_t is x's slice t along
 *                                    its scan axis; outputs (v..., S...)
 *
 * v are carried values (num_carried of them), c values captured from the
 * graph around (the importer makes every outer-scope value a body uses an
 * explicit input). A body's variables take exactly the types of the inputs
 * they stand for. An output dim the bodies do not fix before the op runs (If's
 * branches disagree, Loop's iteration count, a dim a body computes at run
 * time) is a size variable "<prefix>_k" that the executor binds from the
 * output when the op has run, as a binder's (shape.c) are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* The most inputs and outputs of a control op and of its bodies. */
#define MAX_CTL_IO 256

/* ---- helpers ------------------------------------------------------------------------ */

/* The body attribute `name` of call, typed, and its variables (node ids,
 * in order, at most MAX_CTL_IO); NULL with an error. */
static struct kiln_graph *typed_body(const gnode *call, const char *name, int *vars, int *nvars) {
    struct kiln_graph *b = graph_attr_graph(call, name);
    if (!b) {
        ops_fail("attribute '%s' must be a graph", name);
        return NULL;
    }
    if (kiln_graph_infer_types(b) != KILN_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        ops_fail("body '%s': %s", name, msg);
        return NULL;
    }
    *nvars = 0;
    for (int id = 0; id < b->n; id++)
        if (b->nodes[id]->kind == GN_VAR) {
            if (*nvars == MAX_CTL_IO) {
                ops_fail("body '%s' has more than %d parameters", name, MAX_CTL_IO);
                return NULL;
            }
            vars[(*nvars)++] = id;
        }
    if (b->nout < 1 || b->nout > MAX_CTL_IO) {
        ops_fail("body '%s' has %d outputs (1 to %d)", name, b->nout, MAX_CTL_IO);
        return NULL;
    }
    for (int k = 0; k < b->nout; k++)
        if (b->nodes[b->outs[k]]->type.is_tuple) {
            ops_fail("body '%s': output %d is a tuple", name, k);
            return NULL;
        }
    return b;
}

static const gtensor_type *out_type(const struct kiln_graph *b, int k) {
    return &b->nodes[b->outs[k]]->type.t[0];
}

static void type_str(const gtensor_type *t, char *buf, size_t cap) {
    kstr s;
    kstr_init(&s);
    gtype g = {1, 0, 1, (gtensor_type *)t};
    gtype_print(&s, &g);
    snprintf(buf, cap, "%s", s.buf ? s.buf : "?");
    kstr_free(&s);
}

/* Body variable k (node vars[k]) must have type t, the input it stands for. */
static int var_is(const struct kiln_graph *b, const char *name, const int *vars, int k,
                  const gtensor_type *t, const char *what) {
    const gtype *v = &b->nodes[vars[k]]->type;
    gtype want = {1, 0, 1, (gtensor_type *)t};
    if (v->known && gtype_equal(v, &want))
        return 1;
    char got[256], exp[256];
    type_str(v->known && !v->is_tuple ? &v->t[0] : t, got, sizeof got);
    type_str(t, exp, sizeof exp);
    ops_fail("body '%s': parameter %d (%s) is %s, but %s is %s", name, k, what,
             v->known && !v->is_tuple ? got : "untyped", what, exp);
    return 0;
}

/* 1 if t is a one-element tensor of dtype dt with static dims. */
static int is_flag(const gtensor_type *t, kiln_dtype dt) {
    if (t->dtype != dt)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym || t->dims[d].v != 1)
            return 0;
    return 1;
}

/* 1 if symbol s is a dim of one of the call's input types (so the graph
 * around the op knows it before the op runs). */
static int sym_outside(const gtype *const *in, int nin, const char *s) {
    for (int i = 0; i < nin; i++)
        for (int k = 0; in[i]->known && k < in[i]->n; k++)
            for (int d = 0; d < in[i]->t[k].ndim; d++)
                if (in[i]->t[k].dims[d].sym && !strcmp(in[i]->t[k].dims[d].sym, s))
                    return 1;
    return 0;
}

/* Naming the dims known only when the op runs. */
typedef struct {
    const struct kiln_graph *g;
    const gnode *call;
    const gtype *const *in;
    int next;
} fresh_names;

/* The next fresh size name, "<prefix>_k" (prefix "_cf<node id>" when the
 * attribute is empty), skipping one the inputs' dims use already. */
static gdim fresh_dim(fresh_names *f) {
    char name[128];
    const char *prefix = graph_attr_str(f->call, "prefix", "");
    do {
        if (*prefix)
            snprintf(name, sizeof name, "%s_%d", prefix, f->next++);
        else
            snprintf(name, sizeof name, "_cf%d_%d", f->call->id, f->next++);
    } while (sym_outside(f->in, f->call->nin, name));
    return (gdim){-1, arena_strdup(f->g->arena, name)};
}

/* A body's dim d as the op's output dim: kept if it is a constant or a
 * size the graph around knows, else a fresh variable. */
static gdim outer_dim(fresh_names *f, const gtype *const *in, int nin, gdim d) {
    if (!d.sym || sym_outside(in, nin, d.sym))
        return d;
    return fresh_dim(f);
}

/* The output type: n tensor types (a tuple unless n == 1). */
static rel_result set_outs(const struct kiln_graph *g, gtype *out, int n, const gtensor_type *t) {
    return n == 1 ? ops_set_out(g, out, &t[0]) : ops_set_tuple(g, out, n, t);
}

/* Carried value k's body output `o` against its variable type `v`: the
 * same dtype and rank, and each dim the same or one the body computes at
 * run time (the executor then checks it keeps the value's shape). */
static int carried_ok(const char *name, int k, const gtensor_type *o, const gtensor_type *v,
                      const gtype *const *in, int nin) {
    int ok = o->dtype == v->dtype && o->ndim == v->ndim;
    for (int d = 0; ok && d < o->ndim; d++)
        ok = gdim_equal(o->dims[d], v->dims[d]) ||
             (o->dims[d].sym && !sym_outside(in, nin, o->dims[d].sym));
    if (ok)
        return 1;
    char a[256], b[256];
    type_str(v, a, sizeof a);
    type_str(o, b, sizeof b);
    ops_fail("body '%s': carried value %d enters as %s but leaves as %s: a carried value "
             "keeps its type",
             name, k, a, b);
    return 0;
}

/* The scan output type: slice s with the iteration count t inserted at
 * `axis` (of the s->ndim + 1 dims of the result), its other dims through
 * outer_dim. */
static int stacked(fresh_names *f, const gtype *const *in, int nin, const gtensor_type *s, gdim t,
                   int axis, gtensor_type *res) {
    if (s->ndim + 1 > KILN_MAX_NDIM)
        return ops_fail("a scan output of rank %d is over %d", s->ndim + 1, KILN_MAX_NDIM), 0;
    res->dtype = s->dtype;
    res->ndim = s->ndim + 1;
    for (int d = 0, j = 0; d < res->ndim; d++)
        res->dims[d] = d == axis ? t : outer_dim(f, in, nin, s->dims[j++]);
    return 1;
}

/* REL_OK when every input is typed and a tensor, and the prefix of the
 * op's size names is empty or an identifier that leaves them short. */
static rel_result tensor_inputs(const gnode *call, const gtype *const *in) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    for (int i = 0; i < call->nin && r == REL_OK; i++)
        ops_tensor_in(in[i], i, &r);
    const char *prefix = graph_attr_str(call, "prefix", "");
    if (r == REL_OK && *prefix && !graph_is_size_name(prefix, 60))
        return ops_fail("prefix must be an identifier of at most 60 characters");
    return r;
}

/* ---- if -------------------------------------------------------------------------- */

static const attr_schema if_attrs[] = {{"then_branch", GA_GRAPH, 1, NULL},
                                       {"else_branch", GA_GRAPH, 1, NULL},
                                       {"prefix", GA_STR, 0, "\"\""},
                                       {NULL, 0, 0, NULL}};

static rel_result rel_if(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                         gtype *out) {
    rel_result r = tensor_inputs(call, in);
    if (r != REL_OK)
        return r;
    if (!is_flag(&in[0]->t[0], KILN_BOOL))
        return ops_fail("the condition must be a bool tensor of one element");
    static const char *const names[2] = {"then_branch", "else_branch"};
    struct kiln_graph *b[2];
    int vars[2][MAX_CTL_IO], nv[2];
    for (int k = 0; k < 2; k++) {
        if (!(b[k] = typed_body(call, names[k], vars[k], &nv[k])))
            return REL_ERROR;
        if (nv[k] != call->nin - 1)
            return ops_fail("body '%s' has %d parameters, but the op captures %d values", names[k],
                            nv[k], call->nin - 1);
        for (int i = 0; i < nv[k]; i++)
            if (!var_is(b[k], names[k], vars[k], i, &in[1 + i]->t[0], "the captured value"))
                return REL_ERROR;
    }
    if (b[0]->nout != b[1]->nout)
        return ops_fail("then_branch has %d outputs and else_branch %d", b[0]->nout, b[1]->nout);
    gtensor_type t[MAX_CTL_IO];
    fresh_names f = {g, call, in, 0};
    for (int k = 0; k < b[0]->nout; k++) {
        const gtensor_type *x = out_type(b[0], k), *y = out_type(b[1], k);
        if (x->dtype != y->dtype || x->ndim != y->ndim) {
            char a[256], c[256];
            type_str(x, a, sizeof a);
            type_str(y, c, sizeof c);
            return ops_fail("output %d is %s in then_branch but %s in else_branch", k, a, c);
        }
        t[k] = *x;
        for (int d = 0; d < x->ndim; d++)
            t[k].dims[d] = gdim_equal(x->dims[d], y->dims[d])
                               ? outer_dim(&f, in, call->nin, x->dims[d])
                               : fresh_dim(&f);
    }
    return set_outs(g, out, b[0]->nout, t);
}

/* ---- loop ------------------------------------------------------------------------- */

static const attr_schema loop_attrs[] = {{"body", GA_GRAPH, 1, NULL},
                                         {"num_carried", GA_INT, 0, "0"},
                                         {"prefix", GA_STR, 0, "\"\""},
                                         {NULL, 0, 0, NULL}};

static rel_result rel_loop(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    rel_result r = tensor_inputs(call, in);
    if (r != REL_OK)
        return r;
    int64_t nc = graph_attr_int(call, "num_carried", 0);
    if (nc < 0 || nc > call->nin - 2)
        return ops_fail("num_carried is %lld, not in [0, %d]", (long long)nc, call->nin - 2);
    int n = (int)nc;
    if (!is_flag(&in[0]->t[0], KILN_INT64))
        return ops_fail("the trip count must be an int64 tensor of one element");
    if (!is_flag(&in[1]->t[0], KILN_BOOL))
        return ops_fail("the condition must be a bool tensor of one element");
    int vars[MAX_CTL_IO], nv;
    struct kiln_graph *b = typed_body(call, "body", vars, &nv);
    if (!b)
        return REL_ERROR;
    if (nv != call->nin)
        return ops_fail("body 'body' has %d parameters, but the op passes it %d (the iteration "
                        "number, the condition, %d carried and %d captured values)",
                        nv, call->nin, n, call->nin - 2 - n);
    gtensor_type scalar_i64 = {KILN_INT64, 0, {{0, NULL}}}, scalar_bool = {KILN_BOOL, 0, {{0, 0}}};
    if (!var_is(b, "body", vars, 0, &scalar_i64, "the iteration number") ||
        !var_is(b, "body", vars, 1, &scalar_bool, "the condition"))
        return REL_ERROR;
    for (int i = 2; i < nv; i++)
        if (!var_is(b, "body", vars, i, &in[i]->t[0],
                    i < 2 + n ? "the carried value" : "the captured value"))
            return REL_ERROR;
    if (b->nout < 1 + n)
        return ops_fail("body 'body' has %d outputs, fewer than the condition and %d carried "
                        "values",
                        b->nout, n);
    if (!is_flag(out_type(b, 0), KILN_BOOL))
        return ops_fail("body 'body': output 0 (the condition) must be a bool tensor of one "
                        "element");
    int nout = b->nout - 1;
    if (nout < 1)
        return ops_fail("the loop has no outputs");
    gtensor_type t[MAX_CTL_IO];
    fresh_names f = {g, call, in, 0};
    gdim count = fresh_dim(&f); /* the iteration count */
    for (int k = 0; k < nout; k++) {
        const gtensor_type *o = out_type(b, 1 + k);
        if (k < n) {
            if (!carried_ok("body", k, o, &in[2 + k]->t[0], in, call->nin))
                return REL_ERROR;
            t[k] = in[2 + k]->t[0];
        } else if (!stacked(&f, in, call->nin, o, count, 0, &t[k])) {
            return REL_ERROR;
        }
    }
    return set_outs(g, out, nout, t);
}

/* ---- scan ------------------------------------------------------------------------- */

static const attr_schema scan_attrs[] = {{"body", GA_GRAPH, 1, NULL},
                                         {"num_carried", GA_INT, 0, "0"},
                                         {"num_scan_inputs", GA_INT, 1, NULL},
                                         {"scan_input_axes", GA_INTS, 0, "[]"},
                                         {"scan_input_directions", GA_INTS, 0, "[]"},
                                         {"scan_output_axes", GA_INTS, 0, "[]"},
                                         {"scan_output_directions", GA_INTS, 0, "[]"},
                                         {"batch", GA_INT, 0, "0"},
                                         {"prefix", GA_STR, 0, "\"\""},
                                         {NULL, 0, 0, NULL}};

/* Per-input or per-output attribute `name`: absent, or one 0/1 direction or
 * axis per item; the axes normalized against rank[i] (an axis may be from
 * -rank[i] to rank[i] - 1). 0 with an error. */
static int scan_list(const gnode *call, const char *name, int n, const int *rank, int64_t *v) {
    int k = graph_attr_ints(call, name, v, MAX_CTL_IO);
    if (k <= 0) {
        for (int i = 0; i < n; i++)
            v[i] = 0;
        return 1;
    }
    if (k != n)
        return ops_fail("%s has %d values, one per item (%d) expected", name, k, n), 0;
    for (int i = 0; i < n; i++) {
        if (!rank) {
            if (v[i] != 0 && v[i] != 1)
                return ops_fail("%s[%d] is %lld, not 0 or 1", name, i, (long long)v[i]), 0;
            continue;
        }
        if (v[i] < -rank[i] || v[i] >= rank[i])
            return ops_fail("%s[%d] is %lld, outside [-%d, %d]", name, i, (long long)v[i], rank[i],
                            rank[i] - 1),
                   0;
        v[i] += v[i] < 0 ? rank[i] : 0;
    }
    return 1;
}

static rel_result rel_scan(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    rel_result r = tensor_inputs(call, in);
    if (r != REL_OK)
        return r;
    int64_t nc = graph_attr_int(call, "num_carried", 0),
            ns = graph_attr_int(call, "num_scan_inputs", 0);
    if (nc < 0 || ns < 1 || nc + ns > call->nin)
        return ops_fail("num_carried %lld and num_scan_inputs %lld do not fit the %d inputs (at "
                        "least one scan input)",
                        (long long)nc, (long long)ns, call->nin);
    int n = (int)nc, m = (int)ns, batch = graph_attr_int(call, "batch", 0) != 0;
    int vars[MAX_CTL_IO], nv;
    struct kiln_graph *b = typed_body(call, "body", vars, &nv);
    if (!b)
        return REL_ERROR;
    if (nv != call->nin)
        return ops_fail("body 'body' has %d parameters, but the op passes it %d", nv, call->nin);
    if (b->nout < n)
        return ops_fail("body 'body' has %d outputs, fewer than its %d carried values", b->nout, n);
    int rank[MAX_CTL_IO];
    int64_t axes[MAX_CTL_IO], dirs[MAX_CTL_IO];
    /* batch (ONNX Scan 8): dim 0 of the carried and scan values is a batch
       the body does not see, run one by one */
    gdim bdim = {0, NULL};
    gtensor_type vt[MAX_CTL_IO]; /* the carried and scan inputs as the body's loop sees them */
    for (int i = 0; i < n + m; i++) {
        vt[i] = in[i]->t[0];
        if (!batch)
            continue;
        if (vt[i].ndim < 1)
            return ops_fail("input %d has no batch dim", i);
        if (i == 0)
            bdim = vt[i].dims[0];
        else if (!gdim_equal(bdim, vt[i].dims[0]))
            return ops_fail("input %d's batch dim differs from input 0's", i);
        vt[i].ndim--;
        memmove(vt[i].dims, vt[i].dims + 1, sizeof(gdim) * (size_t)vt[i].ndim);
    }
    for (int i = 0; i < m; i++)
        rank[i] = vt[n + i].ndim;
    if (!scan_list(call, "scan_input_axes", m, rank, axes) ||
        !scan_list(call, "scan_input_directions", m, NULL, dirs))
        return REL_ERROR;
    gdim count = {0, NULL};
    for (int i = 0; i < m; i++) {
        gtensor_type s = vt[n + i];
        int a = (int)axes[i];
        if (i == 0)
            count = s.dims[a];
        else if (!gdim_equal(count, s.dims[a]))
            return ops_fail("scan input %d's scan axis differs in length from scan input 0's", i);
        memmove(s.dims + a, s.dims + a + 1, sizeof(gdim) * (size_t)(s.ndim - a - 1));
        s.ndim--;
        if (!var_is(b, "body", vars, n + i, &s, "the scan input's slice"))
            return REL_ERROR;
    }
    for (int i = 0; i < n; i++)
        if (!var_is(b, "body", vars, i, &vt[i], "the carried value"))
            return REL_ERROR;
    for (int i = n + m; i < nv; i++)
        if (!var_is(b, "body", vars, i, &in[i]->t[0], "the captured value"))
            return REL_ERROR;
    int k = b->nout - n;
    for (int j = 0; j < k; j++)
        rank[j] = out_type(b, n + j)->ndim + 1;
    if (!scan_list(call, "scan_output_axes", k, rank, axes) ||
        !scan_list(call, "scan_output_directions", k, NULL, dirs))
        return REL_ERROR;
    gtensor_type t[MAX_CTL_IO];
    fresh_names f = {g, call, in, 0};
    for (int j = 0; j < b->nout; j++) {
        const gtensor_type *o = out_type(b, j);
        if (j < n) {
            if (!carried_ok("body", j, o, &vt[j], in, call->nin))
                return REL_ERROR;
            t[j] = vt[j];
        } else if (!stacked(&f, in, call->nin, o, count, (int)axes[j - n], &t[j])) {
            return REL_ERROR;
        }
        if (batch) {
            if (t[j].ndim + 1 > KILN_MAX_NDIM)
                return ops_fail("output %d with its batch dim is over rank %d", j, KILN_MAX_NDIM);
            memmove(t[j].dims + 1, t[j].dims, sizeof(gdim) * (size_t)t[j].ndim);
            t[j].dims[0] = bdim;
            t[j].ndim++;
        }
    }
    return set_outs(g, out, b->nout, t);
}

/* ---- functions: composite and external -------------------------------------------------
 * composite(a...): Relay's function with a Composite attribute, made by
 * partitioning on a pattern (kiln/pattern.h, MergeComposite): its body is
 * the matched ops on variables standing for the arguments. external(a...):
 * a function PartitionGraph handed to a BYOC backend (Compiler="dnnl"),
 * compiled by that backend (src/contrib) under the name global_symbol. Both
 * take the types of their bodies' results. */

static const attr_schema composite_attrs[] = {{"Composite", GA_STR, 1, NULL},
                                              {"PartitionedFromPattern", GA_STR, 0, "\"\""},
                                              {"body", GA_GRAPH, 1, NULL},
                                              {NULL, 0, 0, NULL}};
static const attr_schema external_attrs[] = {{"Compiler", GA_STR, 1, NULL},
                                             {"global_symbol", GA_STR, 1, NULL},
                                             {"body", GA_GRAPH, 1, NULL},
                                             {NULL, 0, 0, NULL}};

static rel_result rel_function(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    rel_result r = tensor_inputs(call, in);
    if (r != REL_OK)
        return r;
    int vars[MAX_CTL_IO], nv;
    struct kiln_graph *b = typed_body(call, "body", vars, &nv);
    if (!b)
        return REL_ERROR;
    if (nv != call->nin)
        return ops_fail("body has %d parameters, but the call passes %d arguments", nv, call->nin);
    for (int i = 0; i < nv; i++)
        if (!var_is(b, "body", vars, i, &in[i]->t[0], "the argument"))
            return REL_ERROR;
    gtensor_type t[MAX_CTL_IO];
    for (int k = 0; k < b->nout; k++)
        t[k] = *out_type(b, k);
    return set_outs(g, out, b->nout, t);
}

/* annotation.compiler_begin / compiler_end (AnnotateTarget): the value
 * itself, marking where a backend's region starts and ends. */
static const attr_schema annotation_attrs[] = {{"compiler", GA_STR, 1, NULL}, {NULL, 0, 0, NULL}};

static rel_result rel_annotation(const struct kiln_graph *g, const gnode *call,
                                 const gtype *const *in, gtype *out) {
    rel_result r = tensor_inputs(call, in);
    return r == REL_OK ? ops_set_out(g, out, &in[0]->t[0]) : r;
}

/* Left in a graph (PartitionGraph removes them), an annotation copies. */
static kiln_expr elem_annotation(kiln_ctx *ctx, const gnode *call, kiln_dtype dt,
                                 const kiln_expr *args) {
    (void)ctx, (void)call, (void)dt;
    return args[0];
}

/* A composite's compute: its body's ops composed, as a fused group's are
 * (a composite no backend took, compiled by kiln). */
static kiln_status compute_composite(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *inputs,
                                     kiln_tensor **outputs) {
    struct kiln_graph *b = graph_attr_graph(call, "body");
    kiln_tensor **t = b ? kiln_calloc((size_t)b->n + 1, sizeof *t) : NULL;
    kiln_status st = t ? KILN_OK : KILN_ERR_NOMEM;
    for (int id = 0, v = 0; st == KILN_OK && id < b->n; id++) {
        const gnode *n = b->nodes[id];
        if (n->kind == GN_VAR) {
            t[id] = inputs[v++];
            continue;
        }
        if (n->kind != GN_CALL || !n->op->compute || n->type.is_tuple || n->nin > MAX_CTL_IO) {
            st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                                "composite '%s': body node '%s' is not a call kiln can compute",
                                graph_attr_str(call, "Composite", ""), n->name);
            break;
        }
        kiln_tensor *in[MAX_CTL_IO], *outs[64] = {0};
        for (int i = 0; i < n->nin; i++)
            in[i] = t[n->in[i]];
        st = n->op->compute(ctx, n, in, outs);
        t[id] = outs[0];
    }
    for (int k = 0; st == KILN_OK && k < b->nout; k++)
        outputs[k] = t[b->outs[k]];
    free(t);
    return st;
}

/* ---- the rows ---------------------------------------------------------------------- */

#define CONTROL_ROW(nm, nmin, schema, relation, kind, sum)                                         \
    {                                                                                              \
        .name = nm, .min_in = nmin, .max_in = MAX_CTL_IO, .attrs = schema, .rel = relation,        \
        .pattern = OP_OPAQUE, .summary = sum, .sym_dims = 1, .control = kind                       \
    }

/* The two annotations: the same identity, told apart by their variant. */
#define ANNOTATION_ROW(nm, which, sum)                                                             \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = annotation_attrs, .rel = rel_annotation,    \
        .pattern = OP_ELEMWISE, .compute = ops_compute_elemwise, .elem = elem_annotation,          \
        .variant = which, .sym_dims = 1, .summary = sum                                            \
    }

const kiln_op_def ops_control_rows[] = {
    CONTROL_ROW("if", 1, if_attrs, rel_if, OP_CONTROL_IF,
                "runs then_branch or else_branch on the captured inputs, as input 0 says"),
    CONTROL_ROW("loop", 2, loop_attrs, rel_loop, OP_CONTROL_LOOP,
                "runs body while the trip count and the condition allow, carrying values and "
                "stacking scan outputs"),
    CONTROL_ROW("scan", 1, scan_attrs, rel_scan, OP_CONTROL_SCAN,
                "runs body over slices of the scan inputs, carrying values and stacking the "
                "scan outputs"),
    {.name = "composite",
     .min_in = 0,
     .max_in = MAX_CTL_IO,
     .attrs = composite_attrs,
     .rel = rel_function,
     .pattern = OP_OPAQUE,
     .compute = compute_composite,
     .summary = "a function of matched ops (MergeComposite), computed as its body"},
    ANNOTATION_ROW("annotation.compiler_begin", 0,
                   "its input: where a backend's region starts (AnnotateTarget)"),
    ANNOTATION_ROW("annotation.compiler_end", 1,
                   "its input: where a backend's region ends (AnnotateTarget)"),
    {.name = "external",
     .min_in = 0,
     .max_in = MAX_CTL_IO,
     .attrs = external_attrs,
     .rel = rel_function,
     .pattern = OP_OPAQUE,
     .external = 1,
     .summary = "a function a bring-your-own-codegen backend compiles (PartitionGraph)"},
};

const int ops_control_count = (int)(sizeof ops_control_rows / sizeof ops_control_rows[0]);
