/* package_info.c: kiln_package_inspect, a package described without
 * loading it. The manifest is verified and mod.so's ELF structure checked
 * as for a load (package.c, package_elf.c), mod.params is parsed for its
 * names, and the plan's inputs, outputs and kernel calls are read from
 * mod.json. mod.so is never dlopened, so none of its code (ELF
 * constructors included) runs, and a package for another machine can be
 * inspected. A symbolic dim (a dim expression, dim_expr.h) is checked as a
 * load checks it and described by its text. The functions mod.so exports come from its
 * kiln_module_meta text, read from the dynamic symbol table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "dim_expr.h"
#include "package.h"

struct kiln_package_info {
    arena *ar;
    const char *target, *functions;
    int abi;
    int64_t size[PKG_COUNT];
    char sha256[PKG_COUNT][KILN_SHA256_HEX];
    int ninputs, noutputs, nkernels;
    kiln_tensor_desc *inputs, *outputs;
    const char **kernel_names, **kernel_funcs, **kernel_backends;
    int *kernel_ops;
};

typedef struct {
    const char *path;
    const json *root, *shapes, *dtypes;
    int nnodes, nentries;
    int64_t *row_ptr; /* nnodes + 1 */
    dim_vars vars;    /* the dim variables the shapes name */
} plan;

static kiln_status plan_err(const plan *p, const char *fmt, const char *a, long long b) {
    char what[300];
    snprintf(what, sizeof what, fmt, a, b);
    return kiln_set_error(KILN_ERR_INVALID, "%s: mod.json: %s", p->path, what);
}

/* Entry eid as a tensor called `name`. */
static kiln_status entry_desc(plan *p, int64_t eid, const char *name, kiln_tensor_desc *d) {
    const json *shape = json_at(p->shapes, (int)eid);
    const char *dt = json_str(json_at(p->dtypes, (int)eid));
    d->name = name;
    if (!dt || kiln_dtype_parse(dt, &d->dtype) || d->dtype == KILN_HANDLE)
        return plan_err(p, "entry %s%lld has no known dltype", "", eid);
    d->ndim = json_len(shape);
    if (d->ndim < 0 || d->ndim > KILN_MAX_NDIM)
        return plan_err(p, "entry %s%lld: its shape must be a list of at most 16 dims", "", eid);
    for (int i = 0; i < d->ndim; i++) {
        const json *v = json_at(shape, i);
        const dim_expr *x =
            json_is(v, JSON_STRING) ? dim_expr_parse(&p->vars, v->s, v->slen) : NULL;
        if (x && dim_expr_is_const(x) && !dim_expr_eval(x, NULL, &d->shape[i]))
            continue;
        if (x && !dim_expr_is_const(x)) { /* symbolic: shown as its expression */
            d->shape[i] = -1;
            d->dim_expr[i] = x->text;
            continue;
        }
        if (json_is(v, JSON_STRING)) {
            kiln_error_prefix("%s: mod.json: entry %lld: dim %d", p->path, (long long)eid, i);
            return KILN_ERR_INVALID;
        }
        if (!json_int(v, &d->shape[i]) || d->shape[i] < 0)
            return plan_err(p, "entry %s%lld: a dim is not an integer >= 0 or a dim expression", "",
                            eid);
    }
    return KILN_OK;
}

static kiln_status read_rows(plan *p, arena *ar) {
    const json *nodes = json_get(p->root, "nodes"), *rp = json_get(p->root, "node_row_ptr");
    p->nnodes = json_len(nodes);
    if (!json_is(nodes, JSON_ARRAY))
        return plan_err(p, "\"nodes\" must be a list%s", "", 0);
    if (!json_is(rp, JSON_ARRAY) || json_len(rp) != p->nnodes + 1)
        return plan_err(p, "\"node_row_ptr\" must be a list of %s%lld integers (nodes + 1)", "",
                        p->nnodes + 1LL);
    p->row_ptr = arena_alloc(ar, (size_t)(p->nnodes + 1) * sizeof *p->row_ptr);
    for (int i = 0; i <= p->nnodes; i++)
        if (!json_int(json_at(rp, i), &p->row_ptr[i]) || (i == 0 && p->row_ptr[0] != 0) ||
            (i > 0 && p->row_ptr[i] < p->row_ptr[i - 1]) || p->row_ptr[i] > INT32_MAX)
            return plan_err(p,
                            "node_row_ptr[%s%lld] must be an integer, 0 first and never "
                            "decreasing",
                            "", i);
    p->nentries = (int)p->row_ptr[p->nnodes];
    const json *attrs = json_get(p->root, "attrs");
    p->shapes = json_at(json_get(attrs, "shape"), 1);
    p->dtypes = json_at(json_get(attrs, "dltype"), 1);
    if (json_len(p->shapes) != p->nentries || json_len(p->dtypes) != p->nentries)
        return plan_err(p, "attrs.shape and attrs.dltype must list %s%lld entries", "",
                        p->nentries);
    return KILN_OK;
}

static kiln_status read_plan(kiln_package_info *info, plan *p, const kiln_npz *params) {
    arena *ar = info->ar;
    kiln_status st = read_rows(p, ar);
    if (st)
        return st;
    const json *nodes = json_get(p->root, "nodes"), *args = json_get(p->root, "arg_nodes");
    if (!json_is(args, JSON_ARRAY))
        return plan_err(p, "\"arg_nodes\" must be a list%s", "", 0);
    info->inputs = arena_alloc(ar, (size_t)json_len(args) * sizeof *info->inputs);
    for (int i = 0; i < json_len(args); i++) {
        int64_t nid;
        if (!json_int(json_at(args, i), &nid) || nid < 0 || nid >= p->nnodes)
            return plan_err(p, "arg_nodes[%s%lld] must name a node", "", i);
        const char *name = json_str(json_get(json_at(nodes, (int)nid), "name"));
        if (!name || p->row_ptr[nid + 1] == p->row_ptr[nid])
            return plan_err(p, "node %s%lld (an arg node) needs a name and an entry", "", nid);
        if (!kiln_npz_get(params, name) &&
            entry_desc(p, p->row_ptr[nid], arena_strdup(ar, name), &info->inputs[info->ninputs++]))
            return KILN_ERR_INVALID;
    }
    const json *heads = json_get(p->root, "heads"), *names = json_get(p->root, "output_names");
    if (!json_is(heads, JSON_ARRAY))
        return plan_err(p, "\"heads\" must be a list%s", "", 0);
    if (names && json_len(names) != json_len(heads))
        return plan_err(p, "\"output_names\" must have one name per head (%s%lld)", "",
                        json_len(heads));
    info->outputs = arena_alloc(ar, (size_t)json_len(heads) * sizeof *info->outputs);
    for (int i = 0; i < json_len(heads); i++) {
        const json *h = json_at(heads, i);
        int64_t nid, idx;
        if (!json_int(json_at(h, 0), &nid) || !json_int(json_at(h, 1), &idx) || nid < 0 ||
            nid >= p->nnodes || idx < 0 || idx >= p->row_ptr[nid + 1] - p->row_ptr[nid])
            return plan_err(p, "heads[%s%lld] must name an output of a node", "", i);
        char buf[32];
        const char *name = json_str(json_at(names, i));
        if (!names) {
            snprintf(buf, sizeof buf, "output_%d", i);
            name = buf;
        } else if (!name) {
            return plan_err(p, "output_names[%s%lld] must be a string", "", i);
        }
        if (entry_desc(p, p->row_ptr[nid] + idx, arena_strdup(ar, name),
                       &info->outputs[info->noutputs++]))
            return KILN_ERR_INVALID;
    }
    info->kernel_names = arena_alloc(ar, (size_t)p->nnodes * sizeof(char *));
    info->kernel_funcs = arena_alloc(ar, (size_t)p->nnodes * sizeof(char *));
    info->kernel_backends = arena_alloc(ar, (size_t)p->nnodes * sizeof(char *));
    info->kernel_ops = arena_alloc(ar, (size_t)p->nnodes * sizeof(int));
    for (int i = 0; i < p->nnodes; i++) {
        const json *n = json_at(nodes, i);
        const char *op = json_str(json_get(n, "op")), *name = json_str(json_get(n, "name"));
        const char *func = json_str(json_get(json_get(n, "attrs"), "func_name"));
        if (!op || !name)
            return plan_err(p, "node %s%lld needs an \"op\" and a \"name\"", "", i);
        if (!strcmp(op, "control")) /* If, Loop, Scan: the kind of its bodies' runs */
            func = json_str(json_get(json_get(n, "attrs"), "control"));
        else if (strcmp(op, "tvm_op") != 0)
            continue;
        if (!func)
            return plan_err(p, "node '%s' (%lld) has no attrs.func_name", name, i);
        if (!strcmp(op, "tvm_op") && !strcmp(func, "__view"))
            continue; /* a view of its inputs (graph_views.c): no kernel */
        const char *backend = json_str(json_get(json_get(n, "attrs"), "external"));
        int64_t ops = -1;
        if (!json_int(json_get(json_get(n, "attrs"), "ops"), &ops) || ops < 0 || ops > INT32_MAX)
            ops = -1;
        info->kernel_backends[info->nkernels] = arena_strdup(ar, backend ? backend : "kiln");
        info->kernel_ops[info->nkernels] = (int)ops;
        info->kernel_names[info->nkernels] = arena_strdup(ar, name);
        info->kernel_funcs[info->nkernels++] = arena_strdup(ar, func);
    }
    const char *target = json_str(json_get(json_get(p->root, "target"), "str"));
    info->target = target ? arena_strdup(ar, target) : NULL;
    return KILN_OK;
}

kiln_package_info *kiln_package_inspect(const char *path) {
    pkg_members m;
    if (pkg_read_file(path, &m))
        return NULL;
    kiln_package_info *info = kiln_calloc(1, sizeof *info);
    kiln_npz *params = NULL;
    kiln_status st = info && (info->ar = arena_new()) ? KILN_OK : KILN_ERR_NOMEM;
    if (!st)
        st = pkg_check_elf(path, m.data[PKG_SO], m.len[PKG_SO]);
    if (!st && !(params = kiln_npz_parse(m.data[PKG_PARAMS], m.len[PKG_PARAMS], "mod.params"))) {
        kiln_error_prefix("%s", path);
        st = KILN_ERR_IO;
    }
    char where[1100];
    snprintf(where, sizeof where, "%s: mod.json", path);
    plan p = {path, NULL, NULL, NULL, 0, 0, NULL, {info ? info->ar : NULL, 0, 0, NULL, NULL}};
    if (!st &&
        !(p.root = json_parse(info->ar, (const char *)m.data[PKG_JSON], m.len[PKG_JSON], where)))
        st = KILN_ERR_INVALID;
    if (!st && !json_is(p.root, JSON_OBJECT))
        st = plan_err(&p, "the top level must be an object%s", "", 0);
    if (!st)
        st = read_plan(info, &p, params);
    if (!st) {
        char *meta = pkg_elf_module_meta(m.data[PKG_SO], m.len[PKG_SO]);
        info->functions = meta ? arena_strdup(info->ar, meta) : NULL;
        free(meta);
        info->abi = m.abi;
        for (int k = PKG_SO; k < PKG_COUNT; k++) {
            info->size[k] = (int64_t)m.len[k];
            memcpy(info->sha256[k], m.sha256[k], KILN_SHA256_HEX);
        }
    }
    kiln_npz_free(params);
    pkg_members_free(&m);
    if (st) {
        kiln_package_info_free(info);
        return NULL;
    }
    return info;
}

void kiln_package_info_free(kiln_package_info *p) {
    if (!p)
        return;
    arena_free(p->ar);
    free(p);
}

const char *kiln_package_info_target(const kiln_package_info *p) {
    return p ? p->target : NULL;
}

int kiln_package_info_abi(const kiln_package_info *p) {
    return p ? p->abi : 0;
}

int kiln_package_info_num_members(const kiln_package_info *p) {
    return p ? PKG_COUNT - PKG_SO : 0;
}

int kiln_package_info_member(const kiln_package_info *p, int i, const char **name, int64_t *size,
                             const char **sha256) {
    if (!p || i < 0 || i >= PKG_COUNT - PKG_SO)
        return 0;
    *name = pkg_member_name(PKG_SO + i);
    *size = p->size[PKG_SO + i];
    *sha256 = p->sha256[PKG_SO + i];
    return 1;
}

int kiln_package_info_num_inputs(const kiln_package_info *p) {
    return p ? p->ninputs : 0;
}

const kiln_tensor_desc *kiln_package_info_input(const kiln_package_info *p, int i) {
    return p && i >= 0 && i < p->ninputs ? &p->inputs[i] : NULL;
}

int kiln_package_info_num_outputs(const kiln_package_info *p) {
    return p ? p->noutputs : 0;
}

const kiln_tensor_desc *kiln_package_info_output(const kiln_package_info *p, int i) {
    return p && i >= 0 && i < p->noutputs ? &p->outputs[i] : NULL;
}

int kiln_package_info_num_kernels(const kiln_package_info *p) {
    return p ? p->nkernels : 0;
}

const char *kiln_package_info_kernel_name(const kiln_package_info *p, int k) {
    return p && k >= 0 && k < p->nkernels ? p->kernel_names[k] : NULL;
}

const char *kiln_package_info_kernel_func(const kiln_package_info *p, int k) {
    return p && k >= 0 && k < p->nkernels ? p->kernel_funcs[k] : NULL;
}

const char *kiln_package_info_kernel_backend(const kiln_package_info *p, int k) {
    return p && k >= 0 && k < p->nkernels ? p->kernel_backends[k] : NULL;
}

int kiln_package_info_kernel_ops(const kiln_package_info *p, int k) {
    return p && k >= 0 && k < p->nkernels ? p->kernel_ops[k] : -1;
}

const char *kiln_package_info_functions(const kiln_package_info *p) {
    return p ? p->functions : NULL;
}
