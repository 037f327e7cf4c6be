/* registry.c: the backends kiln can hand sub-graphs to (kiln/byoc.h):
 * the built-in ones this build has, then those plugins register. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../target/target.h"
#include "contrib.h"

#define MAX_BACKENDS 32

static kiln_codegen_spec g_backends[MAX_BACKENDS];
static int g_nbackends, g_builtins_added;
static char g_names[MAX_BACKENDS * 72];

/* The built-in backends, and whether this build has each. */
static const struct {
    const char *name, *package;
    const kiln_codegen_spec *spec;
} k_builtin[] = {
#ifdef KILN_HAVE_DNNL
    {"dnnl", "libdnnl-dev", &contrib_dnnl},
#else
    {"dnnl", "libdnnl-dev", NULL},
#endif
#ifdef KILN_HAVE_OPENBLAS
    {"blas", "libopenblas-dev", &contrib_blas},
#else
    {"blas", "libopenblas-dev", NULL},
#endif
};
#define NBUILTIN (int)(sizeof k_builtin / sizeof k_builtin[0])

static void add_builtins(void) {
    if (g_builtins_added)
        return;
    g_builtins_added = 1;
    for (int i = 0; i < NBUILTIN; i++)
        if (k_builtin[i].spec && g_nbackends < MAX_BACKENDS)
            g_backends[g_nbackends++] = *k_builtin[i].spec;
}

static const kiln_codegen_spec *lookup(const char *name) {
    add_builtins();
    for (int i = 0; i < g_nbackends; i++)
        if (!strcmp(g_backends[i].name, name))
            return &g_backends[i];
    return NULL;
}

const char *kiln_codegen_names(void) {
    add_builtins();
    g_names[0] = 0;
    for (int i = 0; i < g_nbackends; i++) {
        if (i)
            strcat(g_names, ", ");
        strncat(g_names, g_backends[i].name, 63);
    }
    return g_names;
}

static int is_ident(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) || strlen(s) > 63)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

kiln_status kiln_codegen_register_sized(const kiln_codegen_spec *spec, size_t size) {
    kiln_codegen_spec s;
    memset(&s, 0, sizeof s);
    if (!spec || size == 0)
        return kiln_set_error(KILN_ERR_INVALID, "codegen_register: NULL spec");
    memcpy(&s, spec, size < sizeof s ? size : sizeof s);
    if (!is_ident(s.name))
        return kiln_set_error(KILN_ERR_INVALID,
                              "codegen_register: the name '%s' is not an identifier of at most 63 "
                              "characters",
                              s.name ? s.name : "(null)");
    if (lookup(s.name))
        return kiln_set_error(KILN_ERR_INVALID, "codegen_register: backend '%s' exists already",
                              s.name);
    if (!s.codegen || s.npatterns < 0 || (s.npatterns && !s.patterns))
        return kiln_set_error(KILN_ERR_INVALID,
                              "codegen_register '%s': needs a codegen function and a pattern "
                              "table of npatterns rows",
                              s.name);
    /* the patterns must parse, and their composites be named "<name>.x" */
    kiln_status st = KILN_OK;
    size_t len = strlen(s.name);
    for (int i = 0; !st && i < s.npatterns; i++) {
        const kiln_codegen_pattern *p = &s.patterns[i];
        kiln_pattern_set *ps = kiln_pattern_set_new(); /* a row's %names are its own */
        if (!p->name || strncmp(p->name, s.name, len) || p->name[len] != '.')
            st = kiln_set_error(KILN_ERR_INVALID,
                                "codegen_register '%s': pattern %d's name '%s' must start with "
                                "'%s.'",
                                s.name, i, p->name ? p->name : "(null)", s.name);
        else if (!p->pattern || !kiln_pattern_parse(ps, p->pattern)) {
            if (!p->pattern)
                kiln_set_error(KILN_ERR_INVALID, "no pattern text");
            kiln_error_prefix("codegen_register '%s': pattern '%s'", s.name, p->name);
            st = KILN_ERR_INVALID;
        }
        kiln_pattern_set_free(ps);
    }
    if (st)
        return st;
    if (g_nbackends == MAX_BACKENDS)
        return kiln_set_error(KILN_ERR_INVALID, "codegen_register: more than %d backends",
                              MAX_BACKENDS);
    g_backends[g_nbackends++] = s;
    return KILN_OK;
}

const kiln_codegen_spec *contrib_find(const char *name) {
    const kiln_codegen_spec *b = lookup(name);
    if (b)
        return b;
    for (int i = 0; i < NBUILTIN; i++)
        if (!strcmp(k_builtin[i].name, name)) {
            kiln_set_error(KILN_ERR_UNSUPPORTED,
                           "external backend '%s': this kiln was built without it (install %s and "
                           "build kiln again)",
                           name, k_builtin[i].package);
            return NULL;
        }
    const char *known = kiln_codegen_names();
    kiln_set_error(KILN_ERR_UNSUPPORTED, "unknown external backend '%s' (known: %s)", name,
                   *known ? known : "none in this build");
    return NULL;
}

kiln_status contrib_backends(const kiln_target *t, int *n, const kiln_codegen_spec **out) {
    *n = 0;
    for (int i = 0; i < kiln_target_num_external(t); i++) {
        const kiln_codegen_spec *b = contrib_find(kiln_target_external(t, i));
        if (!b)
            return KILN_ERR_UNSUPPORTED;
        out[(*n)++] = b;
    }
    return KILN_OK;
}

void kiln_codegen_error(const char *message) {
    kiln_set_error(KILN_ERR_UNSUPPORTED, "%s", message ? message : "codegen failed");
}

const kiln_graph *kiln_graph_node_body(const kiln_graph *g, int node) {
    const gnode *n = g && node >= 0 && node < g->n ? g->nodes[node] : NULL;
    return n && n->kind == GN_CALL ? graph_attr_graph(n, "body") : NULL;
}

int kiln_graph_num_outputs(const kiln_graph *g) {
    return g ? g->nout : 0;
}

int kiln_graph_output(const kiln_graph *g, int k) {
    return g && k >= 0 && k < g->nout ? g->outs[k] : -1;
}

kiln_graph *kiln_graph_partition_for(const kiln_graph *g, const char *backends) {
    if (!g || !backends) {
        kiln_set_error(KILN_ERR_INVALID, "partition_for: needs a graph and backend names");
        return NULL;
    }
    const kiln_codegen_spec *b[MAX_BACKENDS];
    int nb = 0;
    char name[64];
    for (const char *p = backends; *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, " ,");
        if (!len)
            break;
        if (len >= sizeof name || nb == MAX_BACKENDS) {
            kiln_set_error(KILN_ERR_INVALID, "partition_for: bad backend list '%s'", backends);
            return NULL;
        }
        memcpy(name, p, len);
        name[len] = 0;
        if (!(b[nb++] = contrib_find(name)))
            return NULL;
        p += len;
    }
    if (kiln_graph_infer_types((kiln_graph *)g) != KILN_OK)
        return NULL;
    struct kiln_graph *a = pass_merge_composite(g, nb, b);
    struct kiln_graph *c = a ? pass_annotate_target(a, nb, b) : NULL;
    kiln_graph_free(a);
    struct kiln_graph *d = c ? pass_merge_compiler_regions(c) : NULL;
    kiln_graph_free(c);
    struct kiln_graph *e = d ? pass_partition_graph(d) : NULL;
    kiln_graph_free(d);
    return e;
}
