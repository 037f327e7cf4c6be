/* onnx_import.c: ONNX model -> graph IR, the driver. Initializers become
 * constants, graph inputs variables (with --input-shapes overrides),
 * calls of model-local functions are inlined, and each node is converted
 * by its row of the converter table (onnx_table.c), or as a registered
 * user op. Calls on constants fold as they are added (onnx_helpers.c), so
 * shape sub-graphs of exported transformers become constants. Every node
 * is typed as it is added, so errors name the ONNX node, its op type and
 * the opset. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph_internal.h"
#include "../ops/ops.h"
#include "kiln/onnx.h"
#include "onnx_import.h"
#include "onnx_load.h"

/* ---- the importer ---------------------------------------------------------------- */

static int is_default_domain(const char *d) {
    return !*d || strcmp(d, "ai.onnx") == 0;
}

/* A user op (kiln/plugin.h) registered under the node's op type. */
static const kiln_op_def *registered_op(const imp *I, const Onnx__NodeProto *n) {
    const kiln_op_def *d = op_registry_find(I->g->ops, n->op_type);
    return d && d->plugin ? d : NULL;
}

/* Import a node as the registered user op of the same name, passing its
 * attributes through by name. */
static int convert_registered(imp *I, const Onnx__NodeProto *n, const kiln_op_def *def, int *outs) {
    if (imp_check_node(I, n, NULL) < 0)
        return -1;
    int in[4096], nin = imp_ninputs(n);
    if (nin > 4096)
        return imp_fail(I, n, "too many inputs");
    for (int i = 0; i < nin; i++)
        if ((in[i] = imp_input(I, n, i)) < 0)
            return imp_fail(I, n, "input %d is missing", i);
    gattr *as = arena_alloc(I->g->arena, sizeof(gattr) * (n->n_attribute ? n->n_attribute : 1));
    int na = 0;
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        gattr *g = &as[na];
        memset(g, 0, sizeof *g);
        g->name = a->name;
        switch (a->type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
            g->kind = GA_INT;
            g->i = a->i;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
            g->kind = GA_FLOAT;
            g->f = a->f;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            g->kind = GA_INTS;
            g->n = (int)a->n_ints;
            g->ints = a->ints;
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
            double *f = arena_alloc(I->g->arena, sizeof(double) * (a->n_floats ? a->n_floats : 1));
            for (size_t j = 0; j < a->n_floats; j++)
                f[j] = a->floats[j];
            g->kind = GA_FLOATS;
            g->n = (int)a->n_floats;
            g->floats = f;
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            char *str = arena_alloc(I->g->arena, a->s.len + 1);
            memcpy(str, a->s.data, a->s.len);
            g->kind = GA_STR;
            g->s = str;
            break;
        }
        default: return imp_fail(I, n, "attribute '%s' has a type user ops cannot take", a->name);
        }
        na++;
    }
    int id = graph_add(I->g, GN_CALL, def, nin, in, na, as, n->name);
    if (id < 0 || graph_infer_node(I->g, id) != KILN_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", kiln_last_error());
        return imp_fail(I, n, "%s", msg);
    }
    return outs[0] = id;
}

/* The override of input `name` in an --input-shapes value (the last one
 * given wins, as in tvmc). */
typedef struct {
    const char *name;
    int found, ndim;
    int64_t *dims;
    char (*syms)[64]; /* a named (symbolic) dim's name, else "" */
} shape_find;

static kiln_status find_shape(const char *name, size_t nlen, int ndim, const int64_t *dims,
                              const char *const *syms, void *user) {
    shape_find *f = user;
    if (nlen == strlen(f->name) && strncmp(name, f->name, nlen) == 0) {
        f->found = 1;
        f->ndim = ndim;
        memcpy(f->dims, dims, sizeof(int64_t) * (size_t)ndim);
        for (int d = 0; d < ndim; d++)
            snprintf(f->syms[d], 64, "%s", syms[d] ? syms[d] : "");
    }
    return KILN_OK;
}

/* Every name in the override must be a graph input. */
typedef struct {
    imp *I;
    const Onnx__GraphProto *gp;
} shape_names;

static kiln_status check_shape_name(const char *p, size_t nlen, int ndim, const int64_t *dims,
                                    const char *const *syms, void *user) {
    (void)ndim;
    (void)dims;
    (void)syms;
    shape_names *c = user;
    const Onnx__GraphProto *gp = c->gp;
    for (size_t i = 0; i < gp->n_input; i++)
        if (strlen(gp->input[i]->name) == nlen && strncmp(gp->input[i]->name, p, nlen) == 0)
            return KILN_OK;
    kstr known;
    kstr_init(&known);
    for (size_t i = 0; i < gp->n_input; i++) {
        const gnode *v = graph_node(c->I->g, imp_name_get(c->I, gp->input[i]->name));
        if (v && v->kind == GN_VAR)
            kstr_printf(&known, "%s'%s'", known.len ? ", " : "", gp->input[i]->name);
    }
    kiln_set_error(KILN_ERR_INVALID,
                   "--input-shapes: the model has no input '%.*s' "
                   "(its inputs: %s)",
                   nlen > 200 ? 200 : (int)nlen, p, known.buf ? known.buf : "none");
    kstr_free(&known);
    return KILN_ERR_INVALID;
}

static int check_shape_names(imp *I, const Onnx__GraphProto *gp, const char *spec) {
    shape_names c = {I, gp};
    return onnx_shapes_parse(spec, check_shape_name, &c) == KILN_OK;
}

/* A dim_param ("batch size", "unk__3", "2*seq") as the identifier a size
 * variable needs: other characters become '_', and a leading digit gets a
 * '_' before it. (Two names that differ only there become one variable,
 * which the runtime then requires to be one size.) */
static void sym_identifier(char *s) {
    size_t n = strlen(s);
    if (s[0] >= '0' && s[0] <= '9') {
        memmove(s + 1, s, n < 62 ? n + 1 : 62);
        s[0] = '_';
        s[63] = 0;
    }
    for (char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            *c = '_';
}

/* A graph input: the model's dtype, and the shape --input-shapes gives it,
 * which replaces the declared shape whole, rank included (as tvmc's
 * --input-shapes and TVM's shape dict do; ONNX's backend tests feed data
 * whose shape is not always the declared one, e.g. CastLike's `like`,
 * whose values are never read), or else the declared shape, each unknown
 * dim a symbol. A shape that does not suit the model is refused by the
 * first node that reads it, by name. */
static int add_input(imp *I, const Onnx__ValueInfoProto *vi, const char *shapes) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        !tp->tensor_type->has_elem_type) {
        kiln_set_error(KILN_ERR_UNSUPPORTED,
                       "%s: input '%s' is not a tensor with a known "
                       "element type",
                       I->path, vi->name);
        return 0;
    }
    kiln_dtype dt;
    if (!onnx_dtype_to_kiln(tp->tensor_type->elem_type, &dt)) {
        kiln_set_error(KILN_ERR_UNSUPPORTED,
                       "%s: input '%s' has dtype %s, which kiln does not "
                       "support",
                       I->path, vi->name, onnx_dtype_name(tp->tensor_type->elem_type));
        return 0;
    }
    int64_t dims[KILN_MAX_NDIM];
    const char *syms[KILN_MAX_NDIM];
    char symbuf[KILN_MAX_NDIM][64];
    int nd = 0, found = 0;
    if (shapes) {
        shape_find f = {vi->name, 0, 0, dims, symbuf};
        if (onnx_shapes_parse(shapes, find_shape, &f) != KILN_OK)
            return 0;
        found = f.found;
        nd = f.ndim;
        for (int d = 0; d < nd; d++)
            syms[d] = symbuf[d][0] ? symbuf[d] : NULL;
    }
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    if (!found) {
        if (!sh) {
            kiln_set_error(KILN_ERR_INVALID,
                           "%s: input '%s' has no shape; give one with "
                           "--input-shapes",
                           I->path, vi->name);
            return 0;
        }
        if (sh->n_dim > KILN_MAX_NDIM) {
            kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: input '%s' has %zu dims (at most %d)",
                           I->path, vi->name, sh->n_dim, KILN_MAX_NDIM);
            return 0;
        }
        nd = (int)sh->n_dim;
        for (int d = 0; d < nd; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
            syms[d] = NULL;
            if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                dim->dim_value >= 0) {
                dims[d] = dim->dim_value;
            } else {
                dims[d] = -1;
                if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                    dim->dim_param && *dim->dim_param)
                    snprintf(symbuf[d], sizeof symbuf[d], "%s", dim->dim_param);
                else
                    snprintf(symbuf[d], sizeof symbuf[d], "%s_dim%d", vi->name, d);
                sym_identifier(symbuf[d]);
                syms[d] = symbuf[d];
            }
        }
    }
    int id = kiln_graph_var(I->g, vi->name, dt, nd, dims, syms);
    if (id < 0) {
        kiln_error_prefix("%s: input '%s'", I->path, vi->name);
        return 0;
    }
    imp_name_set(I, vi->name, id);
    return 1;
}

/* ---- model-local functions ------------------------------------------------------
 * A node that calls a function of the model is replaced by the function's
 * nodes: formal inputs and outputs renamed to the call's, internal values
 * prefixed with the call's name, and attribute references (ref_attr_name)
 * bound to the call's attributes. The result is a flat node list. */

typedef struct {
    arena *a;
    const Onnx__NodeProto **nodes;
    size_t n, cap;
    int calls;
} flat_list;

static int flat_push(flat_list *fl, const Onnx__NodeProto *n) {
    if (fl->n == fl->cap) {
        size_t ncap = fl->cap ? fl->cap * 2 : 256;
        const Onnx__NodeProto **nn = realloc((void *)fl->nodes, sizeof(*nn) * ncap);
        if (!nn)
            return kiln_set_error(KILN_ERR_NOMEM, "out of memory"), 0;
        fl->nodes = nn;
        fl->cap = ncap;
    }
    fl->nodes[fl->n++] = n;
    return 1;
}

static const Onnx__FunctionProto *find_function(const Onnx__ModelProto *mp,
                                                const Onnx__NodeProto *n) {
    for (size_t i = 0; i < mp->n_functions; i++) {
        const Onnx__FunctionProto *f = mp->functions[i];
        if (f->name && !strcmp(f->name, n->op_type) &&
            !strcmp(f->domain ? f->domain : "", n->domain))
            return f;
    }
    return NULL;
}

static char *prefixed(arena *a, const char *prefix, const char *name) {
    char *r = arena_alloc(a, strlen(prefix) + strlen(name) + 1);
    strcpy(r, prefix);
    strcat(r, name);
    return r;
}

static int flatten(imp *I, flat_list *fl, const Onnx__NodeProto *n, int depth) {
    const Onnx__FunctionProto *f = find_function(onnx_model_proto(I->m), n);
    if (!f)
        return flat_push(fl, n);
    if (depth > 16)
        return imp_fail(I, n, "model-local functions nest more than 16 deep (recursion?)"), 0;
    char pre[600];
    snprintf(pre, sizeof pre, "%s/%s#%d/", *n->name ? n->name : n->op_type, f->name, fl->calls++);
    for (size_t k = 0; k < f->n_node; k++) {
        const Onnx__NodeProto *fn = f->node[k];
        Onnx__NodeProto *c = arena_alloc(fl->a, sizeof *c);
        *c = *fn;
        c->name = prefixed(fl->a, pre, fn->name ? fn->name : "");
        c->domain = fn->domain ? fn->domain : (char *)"";
        c->input = arena_alloc(fl->a, sizeof(char *) * (fn->n_input ? fn->n_input : 1));
        c->output = arena_alloc(fl->a, sizeof(char *) * (fn->n_output ? fn->n_output : 1));
        for (size_t i = 0; i < fn->n_input; i++) {
            const char *v = fn->input[i], *r = NULL;
            for (size_t j = 0; j < f->n_input && !r; j++)
                if (!strcmp(v, f->input[j]))
                    r = j < n->n_input ? n->input[j] : "";
            c->input[i] = (char *)(r ? r : *v ? prefixed(fl->a, pre, v) : "");
        }
        for (size_t i = 0; i < fn->n_output; i++) {
            const char *v = fn->output[i], *r = NULL;
            for (size_t j = 0; j < f->n_output && !r; j++)
                if (!strcmp(v, f->output[j]))
                    r = j < n->n_output ? n->output[j] : "";
            c->output[i] = (char *)(r ? r : *v ? prefixed(fl->a, pre, v) : "");
        }
        c->attribute = arena_alloc(fl->a, sizeof(void *) * (fn->n_attribute ? fn->n_attribute : 1));
        c->n_attribute = 0;
        for (size_t i = 0; i < fn->n_attribute; i++) {
            const Onnx__AttributeProto *at = fn->attribute[i];
            if (at->ref_attr_name && *at->ref_attr_name) {
                const Onnx__AttributeProto *bound = imp_attr_find(n, at->ref_attr_name);
                if (!bound)
                    continue; /* not set by the call: the op's default */
                Onnx__AttributeProto *b = arena_alloc(fl->a, sizeof *b);
                *b = *bound;
                b->name = at->name;
                c->attribute[c->n_attribute++] = b;
            } else {
                c->attribute[c->n_attribute++] = (Onnx__AttributeProto *)at;
            }
        }
        if (!flatten(I, fl, c, depth + 1))
            return 0;
    }
    return 1;
}

/* List every node whose op is unsupported, at once. */
static int check_supported(imp *I, const flat_list *gp) {
    kstr bad;
    kstr_init(&bad);
    int nbad = 0;
    for (size_t i = 0; i < gp->n; i++) {
        const Onnx__NodeProto *n = gp->nodes[i];
        int dflt = is_default_domain(n->domain);
        /* an op type of the table at an older opset is not a user op */
        int ok = dflt && imp_find_converter(n->op_type, I->opset)
                     ? 1
                     : !(dflt && imp_find_converter(n->op_type, -1)) && registered_op(I, n);
        if (!ok) {
            /* an identical op type is listed once per node name, up to 50 */
            if (nbad < 50)
                kstr_printf(&bad, "\n  %s%s%s (opset %lld) at node '%s'", n->domain,
                            *n->domain ? "." : "", n->op_type,
                            (long long)onnx_model_opset(I->m, n->domain),
                            *n->name ? n->name : "(unnamed)");
            nbad++;
        }
    }
    if (nbad) {
        kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: %d node%s use%s ops kiln does not support:%s%s",
                       I->path, nbad, nbad == 1 ? "" : "s", nbad == 1 ? "s" : "",
                       bad.buf ? bad.buf : "", nbad > 50 ? "\n  ..." : "");
        kstr_free(&bad);
        return 0;
    }
    kstr_free(&bad);
    return 1;
}

/* Convert the nodes of fl into I->g in order, binding their outputs'
 * names; 0 with an error. */
static int convert_nodes(imp *I, const flat_list *fl) {
    for (size_t i = 0; i < fl->n; i++) {
        const Onnx__NodeProto *n = fl->nodes[i];
        for (size_t k = 0; k < n->n_input; k++) {
            int v = n->input[k][0] ? imp_lookup(I, n->input[k]) : 0;
            if (v == -1)
                return imp_fail(I, n,
                                "input '%s' is not produced by any earlier node, initializer or "
                                "graph input (a dangling name, or the graph is not in order/has "
                                "a cycle)",
                                n->input[k]),
                       0;
            if (v < 0) {
                char msg[2048];
                snprintf(msg, sizeof msg, "%s", kiln_last_error());
                return imp_fail(I, n, "%s", msg), 0;
            }
        }
        int outs[64];
        if (n->n_output > 64)
            return imp_fail(I, n, "too many outputs"), 0;
        for (int k = 0; k < 64; k++)
            outs[k] = -1;
        const imp_converter *c =
            is_default_domain(n->domain) ? imp_find_converter(n->op_type, I->opset) : NULL;
        const kiln_op_def *user = c ? NULL : registered_op(I, n);
        if (c ? imp_convert(I, n, c, outs) < 0 : convert_registered(I, n, user, outs) < 0)
            return 0;
        for (size_t k = 0; k < n->n_output; k++) {
            if (!n->output[k][0])
                continue;
            if (outs[k] < 0) {
                if (k == 0)
                    return imp_fail(I, n, "internal: no value for output 0"), 0;
                continue; /* an optional output kiln does not produce */
            }
            if (imp_name_get(I, n->output[k]) >= 0)
                return imp_fail(I, n,
                                "output '%s' is already defined (by an earlier node, an "
                                "initializer or a graph input): ONNX names each value once",
                                n->output[k]),
                       0;
            imp_name_set(I, n->output[k], outs[k]);
        }
    }
    return 1;
}

/* gp's outputs as I->g's; 0 with an error. */
static int set_outputs(imp *I, const Onnx__GraphProto *gp, const char *what) {
    int *outs = malloc(sizeof(int) * (gp->n_output ? gp->n_output : 1));
    const char **names = malloc(sizeof(char *) * (gp->n_output ? gp->n_output : 1));
    int ok = outs && names;
    for (size_t i = 0; i < gp->n_output && ok; i++) {
        outs[i] = imp_lookup(I, gp->output[i]->name);
        names[i] = gp->output[i]->name;
        if (outs[i] < 0) {
            if (outs[i] == -1)
                kiln_set_error(KILN_ERR_INVALID, "%s: %s output '%s' is not produced by any node",
                               I->path, what, gp->output[i]->name);
            ok = 0;
        }
    }
    if (ok && gp->n_output == 0) {
        kiln_set_error(KILN_ERR_INVALID, "%s: the %s has no outputs", I->path, what);
        ok = 0;
    }
    ok = ok && kiln_graph_set_outputs(I->g, (int)gp->n_output, outs, names) == KILN_OK;
    free(outs);
    free(names);
    return ok;
}

/* Initializers of gp as constants of I->g; 0 with an error. The model's
 * own (top-level) ones take their data from I->own when it is set: they
 * are converted once, and a body may be imported more than once. */
static int add_initializers(imp *I, const Onnx__GraphProto *gp, int top) {
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *t = gp->initializer[i];
        char what[600];
        snprintf(what, sizeof what, "initializer '%s'", t->name);
        if (imp_name_get(I, t->name) >= 0) {
            kiln_set_error(KILN_ERR_INVALID, "%s: initializer '%s' is listed twice",
                           I->path ? I->path : "model", t->name);
            return 0;
        }
        kiln_ndarray *a = top && I->own ? onnx_tensor_take_ndarray(I->own, t, what)
                                        : onnx_tensor_to_ndarray(I->m, t, what);
        if (!a)
            return 0;
        int id = imp_add_const(I, t->name, a);
        if (id < 0)
            return 0;
        imp_name_set(I, t->name, id);
    }
    return 1;
}

/* A body (imp.import_body): its initializers, nodes (model-local
 * functions inlined) and outputs into I->g, whose formal inputs the
 * converter added. */
static int import_body(imp *I, const Onnx__GraphProto *gp) {
    flat_list fl = {0};
    int ok = (fl.a = arena_new()) != NULL;
    for (size_t i = 0; ok && i < gp->n_node; i++)
        ok = flatten(I, &fl, gp->node[i], 0);
    ok = ok && check_supported(I, &fl) && add_initializers(I, gp, 0) && convert_nodes(I, &fl) &&
         set_outputs(I, gp, "body");
    free((void *)fl.nodes);
    arena_free(fl.a);
    return ok ? 0 : -1;
}

static kiln_graph *import_model(const onnx_model *m, onnx_model *own, const char *path,
                                const char *input_shapes, int64_t fold_max);

kiln_graph *kiln_onnx_import(const char *path, const char *input_shapes) {
    if (!path) {
        kiln_set_error(KILN_ERR_INVALID, "onnx import: no path");
        return NULL;
    }
    onnx_model *m = onnx_model_load(path);
    if (!m)
        return NULL;
    kiln_graph *g = import_model(m, m, path, input_shapes, 0);
    onnx_model_free(m);
    return g;
}

kiln_graph *kiln_onnx_import_bytes(const void *data, size_t len, const char *name,
                                   const char *input_shapes) {
    if (!name)
        name = "<memory>";
    onnx_model *m = onnx_model_parse(data, len, name, NULL);
    if (!m)
        return NULL;
    kiln_graph *g = import_model(m, m, name, input_shapes, 0);
    onnx_model_free(m);
    return g;
}

kiln_graph *onnx_import_model(const onnx_model *m, const char *path, const char *input_shapes,
                              int64_t fold_max) {
    return import_model(m, NULL, path, input_shapes, fold_max);
}

/* onnx_import_model; with `own` (m itself, freed after) the top-level
 * initializers take their data from it instead of copying it. */
static kiln_graph *import_model(const onnx_model *m, onnx_model *own, const char *path,
                                const char *input_shapes, int64_t fold_max) {
    imp I;
    memset(&I, 0, sizeof I);
    I.m = m;
    I.own = own;
    I.path = path;
    I.fold_max = fold_max > 0 ? fold_max : IMPORT_FOLD_MAX_ELEMENTS;
    I.opset = onnx_model_opset(m, "");
    I.import_body = import_body;
    I.g = graph_new(ops_default_registry());
    kiln_graph *result = NULL;
    const Onnx__GraphProto *gp = onnx_model_proto(m)->graph;
    flat_list fl = {0};
    if (!I.g)
        goto done;
    if (I.opset < 1) {
        kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the model imports no default-domain opset", path);
        goto done;
    }
    if (I.opset > 17) {
        kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: opset %lld is not supported (1 to 17 are)", path,
                       (long long)I.opset);
        goto done;
    }
    fl.a = arena_new();
    if (!fl.a)
        goto done;
    for (size_t i = 0; i < gp->n_node; i++)
        if (!flatten(&I, &fl, gp->node[i], 0))
            goto done;
    if (!check_supported(&I, &fl))
        goto done;
    if (!add_initializers(&I, gp, 1))
        goto done;
    for (size_t i = 0; i < gp->n_input; i++) {
        int prev = imp_name_get(&I, gp->input[i]->name);
        if (prev >= 0 && graph_node(I.g, prev)->kind == GN_VAR) {
            kiln_set_error(KILN_ERR_INVALID, "%s: graph input '%s' is listed twice",
                           path ? path : "model", gp->input[i]->name);
            goto done;
        }
        if (prev >= 0)
            continue; /* an initializer */
        if (!add_input(&I, gp->input[i], input_shapes))
            goto done;
    }
    if (input_shapes && !check_shape_names(&I, gp, input_shapes))
        goto done;
    if (convert_nodes(&I, &fl) && set_outputs(&I, gp, "graph")) {
        result = I.g;
        I.g = NULL;
    }
done:
    kiln_graph_free(I.g);
    free(I.names);
    free(I.ids);
    free((void *)fl.nodes);
    arena_free(fl.a);
    return result;
}
