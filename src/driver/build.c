/* build.c: the build pipeline for tensor-expression functions: lower the
 * schedule, render C, run the toolchain and load the module. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../passes/passes.h"
#include "driver_internal.h"
#include "../runtime/runtime_internal.h"
#include "../te/te_internal.h"


kiln_build_options *kiln_build_options_new(void) {
    kiln_build_options *o = kiln_calloc(1, sizeof(kiln_build_options));
    if (o) o->opt_level = o->winograd = -1;
    return o;
}

void kiln_build_options_free(kiln_build_options *o) {
    if (!o) return;
    free(o->cc);
    free(o->cflags);
    free(o->target);
    free(o->disabled);
    free(o->dump_dir);
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
    if (strcmp(key, "opt-level") == 0) {
        if (strlen(value) != 1 || value[0] < '0' || value[0] > '3')
            return kiln_set_error(KILN_ERR_INVALID, "build option opt-level: '%s' is not 0-3", value);
        o->opt_level = value[0] - '0';
        return KILN_OK;
    }
    if (strcmp(key, "disabled-pass") == 0) {
        /* a comma-separated list; each name must be a known pass */
        for (const char *p = value; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), p);
            if (!pass_known(name))
                return kiln_set_error(KILN_ERR_INVALID, "unknown pass '%s' (known: %s)", name,
                                      pass_names());
            p = e ? e + 1 : p + len;
        }
        size_t old = o->disabled ? strlen(o->disabled) : 0;
        char *d = kiln_realloc(o->disabled, old + strlen(value) + 2);
        if (!d) return KILN_ERR_NOMEM;
        if (old) d[old++] = ',';
        strcpy(d + old, value);
        o->disabled = d;
        return KILN_OK;
    }
    if (strcmp(key, "dump-ir") == 0) {
        char *v = kiln_strdup(value);
        if (!v) return KILN_ERR_NOMEM;
        free(o->dump_dir);
        o->dump_dir = v;
        return KILN_OK;
    }
    if (strcmp(key, "schedule") == 0) {
        if (strcmp(value, "default") && strcmp(value, "naive"))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "build option schedule: '%s' is not default or naive", value);
        o->naive = value[0] == 'n';
        return KILN_OK;
    }
    if (strcmp(key, "winograd") == 0) {
        if (strcmp(value, "auto") && strcmp(value, "off") && strcmp(value, "2") && strcmp(value, "4"))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "build option winograd: '%s' is not auto, off, 2 or 4", value);
        o->winograd = value[0] == 'a' ? -1 : value[0] == 'o' ? 0 : value[0] - '0';
        return KILN_OK;
    }
    if (strcmp(key, "fuse") == 0) {
        if (strcmp(value, "0") && strcmp(value, "1"))
            return kiln_set_error(KILN_ERR_INVALID, "build option fuse: '%s' is not 0 or 1", value);
        o->no_fuse = value[0] == '0';
        return KILN_OK;
    }
    char **slot = strcmp(key, "cc") == 0       ? &o->cc
                  : strcmp(key, "cflags") == 0 ? &o->cflags
                  : strcmp(key, "target") == 0 ? &o->target
                                               : NULL;
    if (!slot)
        return kiln_set_error(KILN_ERR_INVALID,
                              "unknown build option '%s' (known: cc, cflags, target, vector-bits, fuse, schedule, winograd, opt-level, disabled-pass, dump-ir)", key);
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

kiln_target *driver_target(const kiln_build_options *opts) {
    kiln_target *t = kiln_target_host();
    if (t && opts && opts->vector_bytes) {
        t->vector_bytes = opts->vector_bytes;
        t->vector_regs = opts->vector_bytes >= 64 ? 32 : 16;
    }
    return t;
}

char *kiln_build_source(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                        const kiln_build_options *opts) {
    tir_func *f = te_lower(s, nargs, args, name, opts ? opts->vector_bytes : 0);
    if (!f) return NULL;
    return codegen_render_c(1, f);
}

/* Lower, render and compile; the .so and its folder go to the caller. */
static kiln_status build_so(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                            const char *name, const kiln_build_options *opts, char **so,
                            char **dir) {
    if (opts && opts->target && strcmp(opts->target, "c") == 0)
        return kiln_set_error(KILN_ERR_INVALID, "target 'c' emits source only: use "
                              "kiln_build_source");
    char *src = kiln_build_source(s, nargs, args, name, opts);
    if (!src) return KILN_ERR_INVALID;
    codegen_toolchain tc = driver_toolchain(opts);
    kiln_status st = codegen_compile(src, name && *name ? name : "kernel", &tc, so, dir);
    free(src);
    return st;
}

codegen_toolchain driver_toolchain(const kiln_build_options *opts) {
    codegen_toolchain tc = codegen_default_toolchain();
    if (opts && opts->cc) tc.cc = opts->cc;
    if (opts && opts->cflags) tc.cflags = opts->cflags;
    return tc;
}

void driver_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

kiln_module *kiln_build(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                        const kiln_build_options *opts) {
    char *so = NULL, *dir = NULL;
    if (build_so(s, nargs, args, name, opts, &so, &dir) != KILN_OK) return NULL;
    kiln_module *m = kiln_module_load_owned(so, dir);
    if (!m) driver_remove_dir(dir);
    free(so);
    free(dir);
    return m;
}

kiln_status kiln_build_save(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                            const char *name, const kiln_build_options *opts, const char *path) {
    if (!path || !*path) return kiln_set_error(KILN_ERR_INVALID, "build_save: no output path");
    char *so = NULL, *dir = NULL;
    kiln_status st = build_so(s, nargs, args, name, opts, &so, &dir);
    if (st != KILN_OK) return st;
    size_t len;
    char *bytes = kiln_read_file(so, &len);
    st = bytes ? kiln_write_file(path, bytes, len) : KILN_ERR_IO;
    free(bytes);
    driver_remove_dir(dir);
    free(so);
    free(dir);
    return st;
}
