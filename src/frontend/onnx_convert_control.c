/* onnx_convert_control.c: If, Loop and Scan, whose GRAPH attributes become
 * the bodies of kiln's if/loop/scan (src/ops/control.c). A body is imported
 * like the model's graph (imp.import_body, onnx_import.c) into a graph of
 * its own whose formal inputs the converter types from the op's inputs;
 * each value of the graph around it that the body uses by name becomes a
 * variable of the body and an input of the op (a constant is copied in
 * instead). Bodies of sequences or optionals are refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_convert.h"

#define AT(x) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##x
/* The most inputs and outputs of a control op (its row's limit). */
#define MAX_IO 256

/* Refuse a body with an input or output that is not a tensor. */
static int check_tensor_body(imp *I, const Onnx__NodeProto *n, const char *attr,
                             const Onnx__GraphProto *gp) {
    for (int out = 0; out < 2; out++) {
        size_t cnt = out ? gp->n_output : gp->n_input;
        for (size_t i = 0; i < cnt; i++) {
            const Onnx__ValueInfoProto *vi = out ? gp->output[i] : gp->input[i];
            const Onnx__TypeProto *tp = vi->type;
            if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
                tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
                continue;
            const char *kind =
                tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE   ? "a sequence"
                : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "an optional"
                                                                          : "not a tensor";
            return imp_fail(I, n,
                            "body '%s': %s '%s' is %s; kiln's control flow takes tensors only "
                            "(sequences and optionals are not supported)",
                            attr, out ? "output" : "input", vi->name, kind);
        }
    }
    return 0;
}

/* A body's importer over a new graph, inside I. */
static void body_init(imp *B, imp *I) {
    memset(B, 0, sizeof *B);
    B->g = graph_new(I->g->ops);
    B->m = I->m;
    B->path = I->path;
    B->opset = I->opset;
    B->fold_max = I->fold_max;
    B->parent = I;
    B->import_body = I->import_body;
}

static void body_free(imp *B) {
    kiln_graph_free(B->g);
    free(B->names);
    free(B->ids);
    free(B->captured);
    free((void *)B->captured_names);
}

/* Formal input k of body gp, of type t (its dtype, dims and symbols). */
static int add_formal(imp *I, const Onnx__NodeProto *n, imp *B, const Onnx__GraphProto *gp, int k,
                      const gtensor_type *t) {
    int64_t dims[MAXD];
    const char *syms[MAXD];
    for (int d = 0; d < t->ndim; d++) {
        dims[d] = t->dims[d].sym ? -1 : t->dims[d].v;
        syms[d] = t->dims[d].sym;
    }
    const char *name = gp->input[k]->name;
    int id = kiln_graph_var(B->g, name, t->dtype, t->ndim, dims, syms);
    if (id < 0 || imp_name_get(B, name) >= 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", id < 0 ? kiln_last_error() : "it is named twice");
        return imp_fail(I, n, "body input '%s': %s", name, msg);
    }
    imp_name_set(B, name, id);
    return id;
}

/* Import body gp into B (its formal inputs added); -1 with an error. */
static int import(imp *I, const Onnx__NodeProto *n, imp *B, const Onnx__GraphProto *gp) {
    if (!B->g)
        return imp_fail(I, n, "out of memory");
    if (I->import_body(B, gp) < 0) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return imp_fail(I, n, "in its body: %s", msg);
    }
    return 0;
}

/* The call of control op `op` on in[nin] with the attributes, its
 * outputs bound to node n's. */
static int add_control(imp *I, const Onnx__NodeProto *n, const char *op, int nin, const int *in,
                       int nattr, gattr *attrs, int *outs) {
    char prefix[64];
    imp_fresh_prefix(I, prefix, sizeof prefix);
    attrs[nattr++] = (gattr){.name = "prefix", .kind = GA_STR, .s = prefix};
    int id =
        graph_add(I->g, GN_CALL, op_registry_find(I->g->ops, op), nin, in, nattr, attrs, n->name);
    if (id < 0 || graph_infer_node(I->g, id) != KILN_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return imp_fail(I, n, "%s", msg);
    }
    if (n->n_output == 1) {
        outs[0] = id;
        return 0;
    }
    return cvt_tuple_outputs(I, n, id, outs);
}

/* The values a body captured, appended to in[*nin]. */
static int add_captured(imp *I, const Onnx__NodeProto *n, const imp *B, int *in, int *nin) {
    if (*nin + B->ncaptured > MAX_IO)
        return imp_fail(I, n, "more than %d inputs with the values its body uses", MAX_IO);
    for (int k = 0; k < B->ncaptured; k++)
        in[(*nin)++] = B->captured[k];
    return 0;
}

static const Onnx__GraphProto *body_attr(imp *I, const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = imp_attr(I, n, name, AT(GRAPH));
    if (!a || !a->g || check_tensor_body(I, n, name, a->g) < 0)
        return NULL;
    return a->g;
}

int cvt_if(imp *I, const Onnx__NodeProto *n, int *outs) {
    const Onnx__GraphProto *tg = body_attr(I, n, "then_branch");
    const Onnx__GraphProto *eg = tg ? body_attr(I, n, "else_branch") : NULL;
    int cond = imp_input(I, n, 0);
    if (!eg || cond < 0)
        return cond < 0 && eg ? imp_fail(I, n, "the condition is missing") : -1;
    if (tg->n_input || eg->n_input)
        return imp_fail(I, n, "a branch of If takes no inputs");
    imp T, E;
    body_init(&T, I);
    body_init(&E, I);
    int r = import(I, n, &T, tg);
    /* the else branch takes the then branch's captured values first, in
       order, and the then branch the else branch's others after them: the
       two bodies have one parameter list */
    for (int k = 0; r == 0 && k < T.ncaptured; k++)
        if (E.g && imp_capture(&E, T.captured_names[k], T.captured[k]) < 0)
            r = imp_fail(I, n, "%s", "capturing a value for else_branch failed");
    if (r == 0)
        r = import(I, n, &E, eg);
    for (int k = T.ncaptured; r == 0 && k < E.ncaptured; k++)
        if (imp_capture(&T, E.captured_names[k], E.captured[k]) < 0)
            r = imp_fail(I, n, "%s", "capturing a value for then_branch failed");
    int in[MAX_IO + 1], nin = 1;
    in[0] = cond;
    if (r == 0)
        r = add_captured(I, n, &E, in, &nin);
    gattr attrs[3] = {{.name = "then_branch", .kind = GA_GRAPH, .graph = T.g},
                      {.name = "else_branch", .kind = GA_GRAPH, .graph = E.g}};
    if (r == 0)
        r = add_control(I, n, "if", nin, in, 2, attrs, outs);
    body_free(&T);
    body_free(&E);
    return r;
}

int cvt_loop(imp *I, const Onnx__NodeProto *n, int *outs) {
    const Onnx__GraphProto *gp = body_attr(I, n, "body");
    if (!gp)
        return -1;
    int nin = imp_ninputs(n), nc = nin > 2 ? nin - 2 : 0, in[MAX_IO + 1];
    if ((int)gp->n_input != 2 + nc || (int)gp->n_output < 1 + nc ||
        (int)n->n_output != (int)gp->n_output - 1)
        return imp_fail(I, n,
                        "the body has %zu inputs and %zu outputs; with %d carried values it "
                        "needs %d inputs and the node's %zu outputs plus the condition",
                        gp->n_input, gp->n_output, nc, 2 + nc, n->n_output);
    /* an absent trip count: at most 2^31 iterations (the runtime's limit);
       an absent condition: true */
    in[0] = imp_input(I, n, 0);
    in[1] = imp_input(I, n, 1);
    if (in[0] < 0)
        in[0] = imp_scalar_const(I, n, KILN_INT64, 2147483648.0);
    if (in[1] < 0)
        in[1] = imp_scalar_const(I, n, KILN_BOOL, 1);
    for (int i = 0; i < nc; i++)
        if ((in[2 + i] = imp_input(I, n, 2 + i)) < 0)
            return imp_fail(I, n, "carried value %d is missing", i);
    if (in[0] < 0 || in[1] < 0)
        return -1;
    imp B;
    body_init(&B, I);
    gtensor_type t_iter = {KILN_INT64, 0, {{0, NULL}}}, t_cond = {KILN_BOOL, 0, {{0, NULL}}};
    int r = B.g && add_formal(I, n, &B, gp, 0, &t_iter) >= 0 &&
                    add_formal(I, n, &B, gp, 1, &t_cond) >= 0
                ? 0
                : -1;
    for (int i = 0; r == 0 && i < nc; i++) {
        const gtensor_type *t = imp_type(I, in[2 + i]);
        r = t ? (add_formal(I, n, &B, gp, 2 + i, t) < 0 ? -1 : 0)
              : imp_fail(I, n, "carried value %d is not a tensor", i);
    }
    if (r == 0)
        r = import(I, n, &B, gp);
    int total = 2 + nc;
    if (r == 0)
        r = add_captured(I, n, &B, in, &total);
    gattr attrs[3] = {{.name = "body", .kind = GA_GRAPH, .graph = B.g},
                      {.name = "num_carried", .kind = GA_INT, .i = nc}};
    if (r == 0)
        r = add_control(I, n, "loop", total, in, 2, attrs, outs);
    body_free(&B);
    return r;
}

/* t without dim `axis`, into *s; 0 if the axis is out of range. */
static int drop_dim(const gtensor_type *t, int64_t axis, gtensor_type *s) {
    if (axis < -t->ndim || axis >= t->ndim)
        return 0;
    axis += axis < 0 ? t->ndim : 0;
    *s = *t;
    memmove(s->dims + axis, s->dims + axis + 1, sizeof(gdim) * (size_t)(t->ndim - axis - 1));
    s->ndim--;
    return 1;
}

int cvt_scan(imp *I, const Onnx__NodeProto *n, int *outs) {
    const Onnx__GraphProto *gp = body_attr(I, n, "body");
    if (!gp)
        return -1;
    int batch = I->opset < 9; /* Scan 8: a batch dim first, sequence_lens as input 0 */
    int first = batch, nin = imp_ninputs(n) - first, in[MAX_IO + 1];
    int64_t ns = imp_attr_int(I, n, "num_scan_inputs", 0), axes[MAX_IO];
    if (batch && imp_input(I, n, 0) >= 0)
        return imp_fail(I, n, "sequence_lens is not supported (every sequence is scanned whole)");
    if (ns < 1 || ns > nin || nin > MAX_IO)
        return imp_fail(I, n, "num_scan_inputs is %lld with %d state and scan inputs",
                        (long long)ns, nin);
    int nc = nin - (int)ns;
    if ((int)gp->n_input != nin || (int)gp->n_output != (int)n->n_output || (int)gp->n_output < nc)
        return imp_fail(I, n, "the body has %zu inputs and %zu outputs, not %d and %zu",
                        gp->n_input, gp->n_output, nin, n->n_output);
    int na = imp_attr_ints(I, n, "scan_input_axes", axes, MAX_IO);
    if (na >= 0 && na != (int)ns)
        return imp_fail(I, n, "scan_input_axes has %d values for %lld scan inputs", na,
                        (long long)ns);
    imp B;
    body_init(&B, I);
    int r = B.g ? 0 : imp_fail(I, n, "out of memory");
    for (int i = 0; r == 0 && i < nin; i++) {
        const gtensor_type *t =
            (in[i] = imp_input(I, n, first + i)) >= 0 ? imp_type(I, in[i]) : NULL;
        gtensor_type s;
        if (!t) {
            r = imp_fail(I, n, "input %d is missing or not a tensor", first + i);
            break;
        }
        s = *t;
        if (batch && !drop_dim(t, 0, &s)) {
            r = imp_fail(I, n, "input %d has no batch dim", first + i);
            break;
        }
        /* a scan input's slice: without its scan axis (1 under a batch) */
        if (i >= nc && !drop_dim(&s, na > 0 ? axes[i - nc] : 0, &s)) {
            r = imp_fail(I, n, "scan input %d's axis is out of range", i - nc);
            break;
        }
        if (add_formal(I, n, &B, gp, i, &s) < 0)
            r = -1;
    }
    if (r == 0)
        r = import(I, n, &B, gp);
    int total = nin;
    if (r == 0)
        r = add_captured(I, n, &B, in, &total);
    gattr attrs[10] = {{.name = "body", .kind = GA_GRAPH, .graph = B.g},
                       {.name = "num_carried", .kind = GA_INT, .i = nc},
                       {.name = "num_scan_inputs", .kind = GA_INT, .i = ns},
                       {.name = "batch", .kind = GA_INT, .i = batch}};
    int nattr = 4;
    static const char *const lists[][2] = {{"scan_input_axes", "scan_input_axes"},
                                           {"scan_input_directions", "scan_input_directions"},
                                           {"directions", "scan_input_directions"},
                                           {"scan_output_axes", "scan_output_axes"},
                                           {"scan_output_directions", "scan_output_directions"}};
    int64_t vals[5][MAX_IO];
    for (int l = 0; r == 0 && l < 5; l++) {
        int k = imp_attr_ints(I, n, lists[l][0], vals[l], MAX_IO);
        if (k == -2)
            r = imp_fail(I, n, "%s has more than %d values", lists[l][0], MAX_IO);
        else if (k >= 0)
            attrs[nattr++] = (gattr){.name = lists[l][1], .kind = GA_INTS, .n = k, .ints = vals[l]};
    }
    if (r == 0)
        r = add_control(I, n, "scan", total, in, nattr, attrs, outs);
    body_free(&B);
    return r;
}
