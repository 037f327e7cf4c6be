/* byoc_ccomp.h: "ccomp", a bring-your-own-codegen backend for tests,
 * written against the public API only (kiln/byoc.h), as TVM's ccompiler
 * example is: C loops for same-shape float32 add and multiply, and a
 * multiply-add composite. test_byoc.c registers it directly; byoc_plugin.c
 * from a plugin's kiln_plugin_init. */
#ifndef KILN_TEST_BYOC_CCOMP_H
#define KILN_TEST_BYOC_CCOMP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/byoc.h"

static int f32_static(const kiln_graph *g, int id) {
    if (kiln_graph_node_dtype(g, id) != KILN_FLOAT32)
        return 0;
    for (int d = 0; d < kiln_graph_node_ndim(g, id); d++)
        if (kiln_graph_node_dim(g, id, d) < 0)
            return 0;
    return 1;
}

static int64_t numel(const kiln_graph *g, int id) {
    int64_t n = 1;
    for (int d = 0; d < kiln_graph_node_ndim(g, id); d++)
        n *= kiln_graph_node_dim(g, id, d);
    return n;
}

/* same-shape elementwise add and multiply */
static int ccomp_supported(const kiln_graph *g, int node, void *user) {
    (void)user;
    const char *op = kiln_graph_node_op(g, node);
    if (strcmp(op, "add") && strcmp(op, "multiply"))
        return 0;
    int a = kiln_graph_node_input(g, node, 0), b = kiln_graph_node_input(g, node, 1);
    return f32_static(g, node) && numel(g, a) == numel(g, node) && numel(g, b) == numel(g, node);
}

static int mul_add_ok(const kiln_graph *g, int node, void *user) {
    int m = kiln_graph_node_input(g, node, 0);
    if (strcmp(kiln_graph_node_op(g, m), "multiply"))
        m = kiln_graph_node_input(g, node, 1);
    return ccomp_supported(g, node, user) && ccomp_supported(g, m, user);
}

static const kiln_codegen_pattern k_ccomp_patterns[] = {
    {"ccomp.mul_add", "add(multiply(*, *), *)", mul_add_ok},
};

/* The C expression of body node id: an argument, the result or a scratch. */
static void ref(char *buf, size_t cap, const kiln_graph *b, int id, int nin) {
    int v = 0;
    for (int j = 0; j < id; j++)
        v += !strcmp(kiln_graph_node_op(b, j), "var");
    if (!strcmp(kiln_graph_node_op(b, id), "var")) {
        snprintf(buf, cap, "((float *)args[%d])", v);
        return;
    }
    for (int k = 0; k < kiln_graph_num_outputs(b); k++)
        if (kiln_graph_output(b, k) == id) {
            snprintf(buf, cap, "((float *)args[%d])", nin + k);
            return;
        }
    snprintf(buf, cap, "t%d", id);
}

/* The element expression of node id of composite c's body (c a node of
 * the function body b): its variables are c's arguments. */
static int body_expr(char *buf, size_t cap, const kiln_graph *cb, int id, const kiln_graph *b,
                     int c, int nin) {
    const char *op = kiln_graph_node_op(cb, id);
    if (!strcmp(op, "var")) {
        int v = 0;
        for (int j = 0; j < id; j++)
            v += !strcmp(kiln_graph_node_op(cb, j), "var");
        char r[64];
        ref(r, sizeof r, b, kiln_graph_node_input(b, c, v), nin);
        snprintf(buf, cap, "%s[i]", r);
        return 1;
    }
    if (strcmp(op, "add") && strcmp(op, "multiply"))
        return 0;
    char l[200], r[200];
    if (!body_expr(l, sizeof l, cb, kiln_graph_node_input(cb, id, 0), b, c, nin) ||
        !body_expr(r, sizeof r, cb, kiln_graph_node_input(cb, id, 1), b, c, nin))
        return 0;
    return snprintf(buf, cap, "(%s %c %s)", l, op[0] == 'a' ? '+' : '*', r) < (int)cap;
}

static int composite_expr(char *buf, size_t cap, const kiln_graph *b, int c, int nin) {
    const kiln_graph *cb = kiln_graph_node_body(b, c);
    return cb && kiln_graph_num_outputs(cb) == 1 &&
           body_expr(buf, cap, cb, kiln_graph_output(cb, 0), b, c, nin);
}

static char *ccomp_codegen(const kiln_graph *g, int node, const char *symbol, void *user) {
    (void)user;
    const kiln_graph *b = kiln_graph_node_body(g, node);
    int nin = kiln_graph_node_num_inputs(g, node);
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len,
                            "int32_t %s(void *const *args, const int64_t *vars) {\n"
                            "    (void)vars;\n",
                            symbol);
    for (int id = 0; id < kiln_graph_num_nodes(b); id++) {
        const char *op = kiln_graph_node_op(b, id);
        if (!strcmp(op, "var"))
            continue;
        char out[64], x[64], y[64];
        ref(out, sizeof out, b, id, nin);
        if (out[0] == 't')
            len += (size_t)snprintf(s + len, cap - len, "    float %s[%lld];\n", out,
                                    (long long)numel(b, id));
        if (!strcmp(op, "composite")) { /* its body, an expression of its arguments */
            char e[1024];
            if (!composite_expr(e, sizeof e, b, id, nin)) {
                free(s);
                kiln_codegen_error("ccomp: a composite it does not take");
                return NULL;
            }
            len += (size_t)snprintf(s + len, cap - len,
                                    "    for (int64_t i = 0; i < %lld; i++) %s[i] = %s;\n",
                                    (long long)numel(b, id), out, e);
            continue;
        }
        if (strcmp(op, "add") && strcmp(op, "multiply")) {
            free(s);
            kiln_codegen_error("ccomp: an op it does not take");
            return NULL;
        }
        ref(x, sizeof x, b, kiln_graph_node_input(b, id, 0), nin);
        ref(y, sizeof y, b, kiln_graph_node_input(b, id, 1), nin);
        len += (size_t)snprintf(s + len, cap - len,
                                "    for (int64_t i = 0; i < %lld; i++) %s[i] = %s[i] %c %s[i];\n",
                                (long long)numel(b, id), out, x, op[0] == 'a' ? '+' : '*', y);
    }
    snprintf(s + len, cap - len, "    return 0;\n}\n");
    return s;
}

static kiln_codegen_spec ccomp_spec(const char *name, const char *library) {
    kiln_codegen_spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.summary = "test backend: C loops";
    s.npatterns = 1;
    s.patterns = k_ccomp_patterns;
    s.supported = ccomp_supported;
    s.codegen = ccomp_codegen;
    s.library = library;
    return s;
}

#endif
