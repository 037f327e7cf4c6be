/* build.c: the build pipeline for tensor-expression functions: lower the
 * schedule, render C, run the toolchain and load the module. */
#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"
#include "../runtime/runtime_internal.h"
#include "../te/te_internal.h"

struct kiln_build_options {
    char *cc;
    char *cflags;
    char *target;
    int vector_bytes; /* 0: the host's */
};

kiln_build_options *kiln_build_options_new(void) {
    return kiln_calloc(1, sizeof(kiln_build_options));
}

void kiln_build_options_free(kiln_build_options *o) {
    if (!o) return;
    free(o->cc);
    free(o->cflags);
    free(o->target);
    free(o);
}

kiln_status kiln_build_options_set(kiln_build_options *o, const char *key, const char *value) {
    if (!o || !key || !value)
        return kiln_set_error(KILN_ERR_INVALID, "build option: NULL argument");
    if (strcmp(key, "vector-bits") == 0) {
        char *end;
        long b = strtol(value, &end, 10);
        if (*end || (b != 128 && b != 256 && b != 512))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "build option vector-bits: '%s' is not 128, 256 or 512", value);
        o->vector_bytes = (int)(b / 8);
        return KILN_OK;
    }
    char **slot = strcmp(key, "cc") == 0       ? &o->cc
                  : strcmp(key, "cflags") == 0 ? &o->cflags
                  : strcmp(key, "target") == 0 ? &o->target
                                               : NULL;
    if (!slot)
        return kiln_set_error(KILN_ERR_INVALID,
                              "unknown build option '%s' (known: cc, cflags, target, vector-bits)", key);
    if (slot == &o->target && strcmp(value, "cpu") != 0 && strcmp(value, "llvm") != 0 &&
        strcmp(value, "c") != 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "target '%s' is not supported (known: cpu, llvm, c)", value);
    if (slot == &o->cc && !*value)
        return kiln_set_error(KILN_ERR_INVALID, "build option cc: empty compiler name");
    char *v = kiln_strdup(value);
    if (!v) return KILN_ERR_NOMEM;
    free(*slot);
    *slot = v;
    return KILN_OK;
}

char *kiln_build_source(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                        const kiln_build_options *opts) {
    tir_func *f = te_lower(s, nargs, args, name, opts ? opts->vector_bytes : 0);
    if (!f) return NULL;
    return codegen_render_c(1, f);
}

kiln_module *kiln_build(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                        const kiln_build_options *opts) {
    if (opts && opts->target && strcmp(opts->target, "c") == 0) {
        kiln_set_error(KILN_ERR_INVALID,
                       "target 'c' emits source only: use kiln_build_source instead of kiln_build");
        return NULL;
    }
    char *src = kiln_build_source(s, nargs, args, name, opts);
    if (!src) return NULL;
    codegen_toolchain tc = codegen_default_toolchain();
    if (opts && opts->cc) tc.cc = opts->cc;
    if (opts && opts->cflags) tc.cflags = opts->cflags;
    char *so = NULL, *dir = NULL;
    kiln_status st = codegen_compile(src, name && *name ? name : "kernel", &tc, &so, &dir);
    free(src);
    if (st != KILN_OK) return NULL;
    kiln_module *m = kiln_module_load_owned(so, dir);
    free(so);
    free(dir);
    return m;
}
