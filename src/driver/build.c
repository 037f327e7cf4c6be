/* build.c: the build pipeline for tensor-expression functions: lower the
 * schedule, render C, run the toolchain and load the module. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../contrib/contrib.h"
#include "../passes/passes.h"
#include "../runtime/runtime_internal.h"
#include "../te/te_internal.h"
#include "driver_internal.h"
#include "kiln/ffi.h"

kiln_build_options *kiln_build_options_new(void) {
    kiln_build_options *o = kiln_calloc(1, sizeof(kiln_build_options));
    if (o)
        o->opt_level = o->winograd = o->cache = -1;
    return o;
}

kiln_status kiln_build_options_set_progress(kiln_build_options *o, kiln_build_progress_fn fn,
                                            void *user) {
    if (!o)
        return kiln_set_error(KILN_ERR_INVALID, "build_options_set_progress: NULL options");
    o->progress = fn;
    o->progress_user = user;
    return KILN_OK;
}

void driver_progress(const kiln_build_options *opts, const char *phase, int done, int total,
                     const char *note) {
    if (opts && opts->progress)
        opts->progress(opts->progress_user, phase, done, total, note);
}

codegen_toolchain driver_toolchain(const kiln_build_options *opts, const kiln_target *t) {
    codegen_toolchain tc = codegen_target_toolchain(t);
    if (opts) {
        tc.cache = opts->cache;
        tc.progress = opts->progress;
        tc.progress_user = opts->progress_user;
    }
    return tc;
}

void kiln_build_options_free(kiln_build_options *o) {
    if (!o)
        return;
    free(o->cc);
    free(o->cflags);
    kiln_target_free(o->target);
    free(o->disabled);
    free(o->passes);
    free(o->dump_dir);
    free(o->records);
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
            return kiln_set_error(KILN_ERR_INVALID, "build option opt-level: '%s' is not 0-3",
                                  value);
        o->opt_level = value[0] - '0';
        return KILN_OK;
    }
    int is_pass = strcmp(key, "pass") == 0;
    if (is_pass || strcmp(key, "disabled-pass") == 0) {
        /* a comma-separated list; each name must be a known pass: built
           in, or a user pass (a registered global function, kiln/ffi.h) */
        for (const char *p = value; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), p);
            kiln_func *f = pass_known(name) ? NULL : kiln_func_get(name, 1);
            if (!pass_known(name) && !f)
                return kiln_set_error(KILN_ERR_INVALID,
                                      "unknown pass '%s' (built in: %s; a user pass is a "
                                      "global function a plugin registers)",
                                      name, pass_names());
            kiln_func_release(f);
            if (is_pass && !pass_graph_to_graph(name))
                return kiln_set_error(KILN_ERR_INVALID,
                                      "pass %s runs when the graph is lowered (opt level 1 "
                                      "and up), not as a pass to run by name",
                                      name);
            p = e ? e + 1 : p + len;
        }
        char **list = is_pass ? &o->passes : &o->disabled;
        size_t old = *list ? strlen(*list) : 0;
        char *d = kiln_realloc(*list, old + strlen(value) + 2);
        if (!d)
            return KILN_ERR_NOMEM;
        if (old)
            d[old++] = ',';
        strcpy(d + old, value);
        *list = d;
        return KILN_OK;
    }
    if (strcmp(key, "dump-ir") == 0) {
        char *v = kiln_strdup(value);
        if (!v)
            return KILN_ERR_NOMEM;
        free(o->dump_dir);
        o->dump_dir = v;
        return KILN_OK;
    }
    if (strcmp(key, "tuning-records") == 0) {
        char *v = *value ? kiln_strdup(value) : NULL;
        if (*value && !v)
            return KILN_ERR_NOMEM;
        free(o->records);
        o->records = v;
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
        if (strcmp(value, "auto") && strcmp(value, "off") && strcmp(value, "2") &&
            strcmp(value, "4"))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "build option winograd: '%s' is not auto, off, 2 or 4", value);
        o->winograd = value[0] == 'a' ? -1 : value[0] == 'o' ? 0 : value[0] - '0';
        return KILN_OK;
    }
    if (strcmp(key, "cache") == 0) {
        if (strcmp(value, "0") && strcmp(value, "1"))
            return kiln_set_error(KILN_ERR_INVALID, "build option cache: '%s' is not 0 or 1",
                                  value);
        o->cache = value[0] == '1';
        return KILN_OK;
    }
    if (strcmp(key, "fuse") == 0) {
        if (strcmp(value, "0") && strcmp(value, "1"))
            return kiln_set_error(KILN_ERR_INVALID, "build option fuse: '%s' is not 0 or 1", value);
        o->no_fuse = value[0] == '0';
        return KILN_OK;
    }
    if (strcmp(key, "target") == 0) {
        kiln_target *t;
        kiln_status st = target_parse(value, &t);
        if (st)
            return st;
        /* its external backends must exist (kiln/byoc.h) */
        int nb;
        const kiln_codegen_spec *b[TGT_MAX_EXTERNAL];
        if ((st = contrib_backends(t, &nb, b)) != KILN_OK) {
            kiln_error_prefix("target \"%s\"", value);
            kiln_target_free(t);
            return st;
        }
        kiln_target_free(o->target);
        o->target = t;
        return KILN_OK;
    }
    char **slot = strcmp(key, "cc") == 0 ? &o->cc : strcmp(key, "cflags") == 0 ? &o->cflags : NULL;
    if (!slot)
        return kiln_set_error(KILN_ERR_INVALID,
                              "unknown build option '%s' (known: cc, cflags, target, vector-bits, "
                              "fuse, schedule, winograd, opt-level, pass, disabled-pass, dump-ir, "
                              "cache)",
                              key);
    if (slot == &o->cc && !*value)
        return kiln_set_error(KILN_ERR_INVALID, "build option cc: empty compiler name");
    char *v = kiln_strdup(value);
    if (!v)
        return KILN_ERR_NOMEM;
    free(*slot);
    *slot = v;
    return KILN_OK;
}

kiln_status kiln_build_options_set_target(kiln_build_options *o, const kiln_target *t) {
    if (!o)
        return kiln_set_error(KILN_ERR_INVALID, "build_options_set_target: NULL options");
    kiln_target *c = NULL;
    if (t && !(c = kiln_target_copy(t)))
        return KILN_ERR_NOMEM;
    kiln_target_free(o->target);
    o->target = c;
    return KILN_OK;
}

kiln_target *driver_target(const kiln_build_options *opts) {
    kiln_target *t = NULL;
    const char *env = getenv("KILN_TARGET");
    if (opts && opts->target) {
        t = kiln_target_copy(opts->target);
    } else if (env && *env) {
        if (target_parse(env, &t) != KILN_OK)
            kiln_error_prefix("$KILN_TARGET");
    } else {
        t = kiln_target_host();
    }
    if (!t)
        return NULL;
    kiln_status st = KILN_OK;
    /* KILN_VECTOR_BITS (128, 256, 512), from before targets existed, still
       narrows the default target's vectors; the build option wins */
    const char *vb = getenv("KILN_VECTOR_BITS");
    if (opts && opts->vector_bytes)
        st = kiln_target_set_vector_bits(t, opts->vector_bytes * 8);
    else if (vb && *vb && !(opts && opts->target)) {
        char *end;
        long bits = strtol(vb, &end, 10);
        st = *end ? kiln_set_error(KILN_ERR_INVALID, "$KILN_VECTOR_BITS: '%s' is not a number", vb)
                  : kiln_target_set_vector_bits(t, (int)bits);
        if (st)
            kiln_error_prefix("$KILN_VECTOR_BITS");
    }
    if (!st && opts && (opts->cc || opts->cflags))
        st = kiln_target_set_compiler(t, opts->cc, opts->cflags);
    if (st) {
        kiln_target_free(t);
        return NULL;
    }
    return t;
}

/* The ELF machine of a shared object: "x86_64", "aarch64", another name,
   or NULL if it cannot be read. */
static const char *elf_machine(const char *path, char *buf, size_t cap) {
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f)
        fclose(f);
    if (n != sizeof h || memcmp(h, "\177ELF", 4) != 0)
        return NULL;
    unsigned m = h[5] == 2 ? (unsigned)h[18] << 8 | h[19] : (unsigned)h[19] << 8 | h[18];
    if (m == 62)
        return "x86_64";
    if (m == 183)
        return "aarch64";
    snprintf(buf, cap, "ELF machine %u", m);
    return buf;
}

kiln_status driver_check_arch(const char *so, const kiln_target *t) {
    char buf[32];
    const char *m = elf_machine(so, buf, sizeof buf);
    if (!m)
        return kiln_set_error(KILN_ERR_TOOLCHAIN,
                              "%s: the C compiler '%s' wrote no ELF "
                              "shared object",
                              so, t->cc);
    if (strcmp(m, kiln_target_arch(t)) != 0)
        return kiln_set_error(KILN_ERR_TOOLCHAIN,
                              "the C compiler '%s' built %s code, but the target \"%s\" is %s: "
                              "give a compiler for %s (kiln compile --cross-compiler, build "
                              "option cc, kiln_target_set_compiler)",
                              t->cc, m, t->text, kiln_target_arch(t), t->triple);
    return KILN_OK;
}

/* Lower and render one function for target t. */
static char *build_source(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                          const kiln_target *t) {
    tir_func *f = te_lower(s, nargs, args, name, t->vector_bytes);
    if (!f)
        return NULL;
    return codegen_render_c(1, f);
}

char *kiln_build_source(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                        const kiln_build_options *opts) {
    kiln_target *t = driver_target(opts);
    char *src = t ? build_source(s, nargs, args, name, t) : NULL;
    kiln_target_free(t);
    return src;
}

/* Lower, render and compile; the .so and its folder go to the caller.
 * With `load`, the target must be this machine's architecture. */
static kiln_status build_so(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                            const kiln_build_options *opts, int load, char **so, char **dir) {
    kiln_target *t = driver_target(opts);
    if (!t)
        return KILN_ERR_INVALID;
    kiln_status st = KILN_OK;
    if (strcmp(t->kind, "c") == 0)
        st =
            kiln_set_error(KILN_ERR_INVALID, "target 'c' emits source only: use kiln_build_source");
    else if (load && t->arch != target_host_arch())
        st = kiln_set_error(KILN_ERR_INVALID,
                            "target \"%s\" is %s code, which this %s machine cannot load: "
                            "build it with kiln_build_save and load it there",
                            t->text, kiln_target_arch(t), target_arch_name(target_host_arch()));
    char *src = st ? NULL : build_source(s, nargs, args, name, t);
    if (!st && !src)
        st = KILN_ERR_INVALID;
    if (!st) {
        codegen_toolchain tc = driver_toolchain(opts, t);
        st = codegen_compile(src, name && *name ? name : "kernel", &tc, so, dir);
        if (!st && (st = driver_check_arch(*so, t)) != KILN_OK) {
            driver_remove_dir(*dir);
            free(*so);
            free(*dir);
            *so = *dir = NULL;
        }
    }
    free(src);
    kiln_target_free(t);
    return st;
}

void driver_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
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
    if (build_so(s, nargs, args, name, opts, 1, &so, &dir) != KILN_OK)
        return NULL;
    kiln_module *m = kiln_module_load_owned(so, dir);
    if (!m)
        driver_remove_dir(dir);
    free(so);
    free(dir);
    return m;
}

kiln_status kiln_build_save(kiln_schedule *s, int nargs, kiln_tensor *const *args, const char *name,
                            const kiln_build_options *opts, const char *path) {
    if (!path || !*path)
        return kiln_set_error(KILN_ERR_INVALID, "build_save: no output path");
    char *so = NULL, *dir = NULL;
    kiln_status st = build_so(s, nargs, args, name, opts, 0, &so, &dir);
    if (st != KILN_OK)
        return st;
    size_t len;
    char *bytes = kiln_read_file(so, &len);
    st = bytes ? kiln_write_file(path, bytes, len) : KILN_ERR_IO;
    free(bytes);
    driver_remove_dir(dir);
    free(so);
    free(dir);
    return st;
}

/* ---- one pass by name (kiln/graph.h) ------------------------------------------- */

kiln_graph *kiln_graph_run_pass(kiln_graph *g, const char *name, const kiln_build_options *opts) {
    if (!g || !name) {
        kiln_set_error(KILN_ERR_INVALID, "run pass: NULL argument");
        return NULL;
    }
    kiln_target *t = driver_target(opts);
    if (!t)
        return NULL;
    const kiln_codegen_spec *byoc[TGT_MAX_EXTERNAL];
    int nbyoc = 0;
    kiln_graph *out = NULL;
    if (contrib_backends(t, &nbyoc, byoc) == KILN_OK) {
        pass_env env = {t, opts ? opts->winograd : -1, 0, NULL, NULL, NULL, nbyoc, byoc, NULL};
        out = pass_run_one(g, name, &env);
    }
    kiln_target_free(t);
    return out;
}

/* ---- global functions kiln registers itself (kiln/ffi.h) ------------------------
 * Registered when the library loads (this file is in every program that
 * builds anything), so any binding can reach them by name. */

/* kiln.version() -> str */
static kiln_status fn_version(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)user;
    return kiln_args_push_str(ret, kiln_version());
}

/* kiln.call(f, args...) -> what f returns: calls a function value (a
 * callback handed across the boundary) with the other arguments. */
static kiln_status fn_call(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    kiln_func *f = kiln_args_func(in, 0);
    if (!f)
        return KILN_ERR_INVALID;
    kiln_args *rest = kiln_args_new();
    if (!rest)
        return KILN_ERR_NOMEM;
    kiln_status st = KILN_OK;
    for (int i = 1; st == KILN_OK && i < kiln_args_count(in); i++)
        switch (kiln_args_kind(in, i)) {
        case KILN_VALUE_NONE: st = kiln_args_push_none(rest); break;
        case KILN_VALUE_INT: st = kiln_args_push_int(rest, kiln_args_int(in, i)); break;
        case KILN_VALUE_FLOAT: st = kiln_args_push_float(rest, kiln_args_float(in, i)); break;
        case KILN_VALUE_STR: st = kiln_args_push_str(rest, kiln_args_str(in, i)); break;
        case KILN_VALUE_ARRAY: st = kiln_args_push_array(rest, kiln_args_array(in, i), 0); break;
        case KILN_VALUE_GRAPH: st = kiln_args_push_graph(rest, kiln_args_graph(in, i), 0); break;
        case KILN_VALUE_FUNC: st = kiln_args_push_func(rest, kiln_args_func(in, i)); break;
        }
    if (st == KILN_OK)
        st = kiln_func_call(f, rest, ret);
    kiln_args_free(rest);
    return st;
}

/* kiln.graph.run_pass(graph, name[, target]) -> graph */
static kiln_status fn_run_pass(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    kiln_graph *g = kiln_args_graph(in, 0);
    const char *name = g ? kiln_args_str(in, 1) : NULL;
    if (!name)
        return KILN_ERR_INVALID;
    kiln_build_options *o = NULL;
    if (kiln_args_count(in) > 2) {
        const char *t = kiln_args_str(in, 2);
        if (!t || !(o = kiln_build_options_new()) ||
            kiln_build_options_set(o, "target", t) != KILN_OK) {
            kiln_build_options_free(o);
            return KILN_ERR_INVALID;
        }
    }
    kiln_graph *out = kiln_graph_run_pass(g, name, o);
    kiln_build_options_free(o);
    return out ? kiln_args_push_graph(ret, out, 1) : KILN_ERR_INVALID;
}

/* kiln.graph.print(graph) -> str */
static kiln_status fn_print(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    kiln_graph *g = kiln_args_graph(in, 0);
    char *text = g ? kiln_graph_print(g) : NULL;
    if (!text)
        return KILN_ERR_INVALID;
    kiln_status st = kiln_args_push_str(ret, text);
    free(text);
    return st;
}

__attribute__((constructor)) static void register_builtins(void) {
    static const struct {
        const char *name;
        kiln_packed_fn fn;
    } rows[] = {{"kiln.version", fn_version},
                {"kiln.call", fn_call},
                {"kiln.graph.run_pass", fn_run_pass},
                {"kiln.graph.print", fn_print}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        kiln_func *f = kiln_func_new(rows[i].fn, NULL, NULL);
        if (f)
            kiln_func_register(rows[i].name, f, 1);
        kiln_func_release(f);
    }
}
