/* builder.c: a backend registered piece by piece through opaque handles
 * (kiln_codegen_builder, kiln/byoc.h), for bindings that cannot lay out
 * kiln_codegen_spec: the Python package's kiln.byoc. */
#include <stdlib.h>
#include <string.h>

#include "contrib.h"

struct kiln_codegen_builder {
    kiln_codegen_spec spec;
    kiln_codegen_pattern *rows;
    int nrows, cap;
    char *strs[5]; /* name, summary, cflags, ldflags, library */
};

kiln_codegen_builder *kiln_codegen_builder_new(const char *name) {
    kiln_codegen_builder *b = kiln_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    if (!name || !(b->strs[0] = kiln_strdup(name))) {
        if (!name)
            kiln_set_error(KILN_ERR_INVALID, "codegen builder: no name");
        free(b);
        return NULL;
    }
    b->spec.name = b->strs[0];
    return b;
}

void kiln_codegen_builder_free(kiln_codegen_builder *b) {
    if (!b)
        return;
    for (int i = 0; i < b->nrows; i++) {
        free((char *)b->rows[i].name);
        free((char *)b->rows[i].pattern);
    }
    free(b->rows);
    for (int i = 0; i < 5; i++)
        free(b->strs[i]);
    free(b);
}

kiln_status kiln_codegen_builder_set(kiln_codegen_builder *b, const char *key, const char *value) {
    static const char *const keys[] = {"summary", "cflags", "ldflags", "library"};
    if (!b || !key || !value)
        return kiln_set_error(KILN_ERR_INVALID, "codegen builder: NULL argument");
    for (int i = 0; i < 4; i++)
        if (!strcmp(key, keys[i])) {
            char *v = kiln_strdup(value);
            if (!v)
                return KILN_ERR_NOMEM;
            free(b->strs[i + 1]);
            b->strs[i + 1] = v;
            const char **field[] = {&b->spec.summary, &b->spec.cflags, &b->spec.ldflags,
                                    &b->spec.library};
            *field[i] = v;
            return KILN_OK;
        }
    return kiln_set_error(KILN_ERR_INVALID,
                          "codegen builder '%s': unknown key '%s' (summary, cflags, ldflags, "
                          "library)",
                          b->spec.name, key);
}

kiln_status kiln_codegen_builder_add_pattern(kiln_codegen_builder *b, const char *name,
                                             const char *pattern, kiln_pattern_pred check) {
    if (!b || !name || !pattern)
        return kiln_set_error(KILN_ERR_INVALID, "codegen builder: NULL argument");
    kiln_codegen_pattern *rows = kiln_grow(b->rows, b->nrows, &b->cap, 8, sizeof *rows);
    if (!rows)
        return KILN_ERR_NOMEM;
    b->rows = rows;
    kiln_codegen_pattern *row = &b->rows[b->nrows];
    row->name = kiln_strdup(name);
    row->pattern = kiln_strdup(pattern);
    row->check = check;
    if (!row->name || !row->pattern) {
        free((char *)row->name);
        free((char *)row->pattern);
        return KILN_ERR_NOMEM;
    }
    b->nrows++;
    return KILN_OK;
}

kiln_status kiln_codegen_builder_set_supported(kiln_codegen_builder *b,
                                               int (*supported)(const kiln_graph *, int, void *)) {
    if (!b)
        return kiln_set_error(KILN_ERR_INVALID, "codegen builder: NULL argument");
    b->spec.supported = supported;
    return KILN_OK;
}

kiln_status kiln_codegen_builder_set_codegen(kiln_codegen_builder *b,
                                             char *(*codegen)(const kiln_graph *, int, const char *,
                                                              void *)) {
    if (!b)
        return kiln_set_error(KILN_ERR_INVALID, "codegen builder: NULL argument");
    b->spec.codegen = codegen;
    return KILN_OK;
}

kiln_status kiln_codegen_builder_register(kiln_codegen_builder *b, void *user) {
    if (!b)
        return kiln_set_error(KILN_ERR_INVALID, "codegen builder: NULL argument");
    b->spec.npatterns = b->nrows;
    b->spec.patterns = b->rows;
    b->spec.user = user;
    kiln_status st = kiln_codegen_register(&b->spec);
    if (st == KILN_OK)
        return KILN_OK; /* the registry keeps pointers into b: it lives on */
    kiln_codegen_builder_free(b);
    return st;
}
