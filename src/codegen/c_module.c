/* c_module.c: the module the C renderer writes, following
 * runtime/module_abi.h without including any kiln header: a prelude (the
 * ABI declarations, the runtime API pointer and the module's entry), the
 * helpers the functions use, each function as an exported kernel, and the
 * metadata text. The module can be split into translation units that
 * compile in parallel. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sha256.h"
#include "c_render_internal.h"

/* ---- functions and the module -------------------------------------------------------- */

static int valid_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

static void render_func(cg_render *r, kstr *out, const tir_func *f) {
    if (f->extern_text) { /* a backend's own C (kiln/byoc.h) */
        kstr_puts(out, f->extern_text);
        kstr_putc(out, '\n');
        return;
    }
    cg_names_reset(r);
    r->nshare = 0;
    r->fname = f->name;
    r->npar = 0;
    r->na = r->exit_base = r->in_par = 0;
    r->status = cg_uses_status(f->body);
    kstr_init(&r->pre);
    kstr body;
    kstr_init(&body);
    cg_stmt(r, &body, f->body, 1);
    if (r->pre.buf)
        kstr_puts(out, r->pre.buf);
    kstr_free(&r->pre);
    kstr_printf(out,
                "__attribute__((visibility(\"default\")))\n"
                "int32_t %s(void *const *args, const int64_t *vars) {\n"
                "    (void)args;\n    (void)vars;\n",
                f->name);
    for (int i = 0; i < f->nparams; i++) {
        tir_node b = f->params[i].buf;
        kiln_dtype el = (kiln_dtype)b->aux;
        if (b->op != TIR_VAR || b->dtype != KILN_HANDLE || !kiln_dtype_is_data(el)) {
            cg_fail(r, KILN_ERR_INVALID, "parameter %d of '%s' has no buffer variable", i, f->name);
            break;
        }
        char *n = cg_var_name(r, b);
        cg_line(out, 1, "%s *restrict %s = (%s *)args[%d];", cg_types[el].c, n, cg_types[el].c, i);
        free(n);
    }
    for (int k = 0; k < f->nvars; k++) {
        char *n = cg_var_name(r, f->vars[k]);
        cg_line(out, 1, "const int64_t %s = vars[%d];", n, k);
        cg_line(out, 1, "(void)%s;", n);
        free(n);
    }
    if (r->status)
        cg_line(out, 1, "int32_t kiln__st = 0;");
    if (body.buf)
        kstr_puts(out, body.buf);
    kstr_puts(out, r->status ? "    return kiln__st;\n}\n\n" : "    return 0;\n}\n\n");
    kstr_free(&body);
}

/* Append s to a C string literal body, escaping quotes, backslashes and spaces-in-names. */
static void meta_name(kstr *m, const char *s) {
    if (!s || !*s)
        s = "_";
    for (; *s; s++) {
        if (isspace((unsigned char)*s))
            kstr_putc(m, '_');
        else if (*s == '"' || *s == '\\')
            kstr_printf(m, "\\%c", *s);
        else if (!isprint((unsigned char)*s))
            kstr_printf(m, "\\%03o", (unsigned char)*s);
        else
            kstr_putc(m, *s);
    }
}

static void render_meta(cg_render *r, kstr *m, int nfuncs, const tir_func *funcs) {
    kstr_puts(m, "__attribute__((visibility(\"default\")))\nconst char kiln_module_meta[] =\n"
                 "    \"kiln-module 1\\n\"\n");
    for (int i = 0; i < nfuncs; i++) {
        const tir_func *f = &funcs[i];
        kstr_printf(m, "    \"func %s %d %d\\n\"\n", f->name, f->nparams, f->nvars);
        for (int k = 0; k < f->nvars; k++) {
            kstr_puts(m, "    \"var ");
            meta_name(m, f->vars[k]->name);
            kstr_puts(m, "\\n\"\n");
        }
        for (int a = 0; a < f->nparams; a++) {
            const tir_param *p = &f->params[a];
            kstr_puts(m, "    \"arg ");
            meta_name(m, p->name);
            kstr_printf(m, " %s %d", kiln_dtype_name(p->dtype), p->ndim);
            for (int d = 0; d < p->ndim; d++) {
                tir_node dim = p->shape[d];
                int64_t v;
                int found = -1;
                if (tir_const_int(dim, &v)) {
                    kstr_printf(m, " %lld", (long long)v);
                    continue;
                }
                for (int k = 0; k < f->nvars; k++)
                    if (f->vars[k] == dim)
                        found = k;
                if (found < 0) {
                    cg_fail(
                        r, KILN_ERR_INVALID,
                        "dim %d of argument '%s' of '%s' is neither a constant nor a size variable",
                        d, p->name ? p->name : "?", f->name);
                    return;
                }
                kstr_printf(m, " $%d", found);
            }
            kstr_puts(m, "\\n\"\n");
        }
    }
    kstr_puts(m, "    \"end\\n\";\n");
}

/* The text every part starts with: the module ABI's declarations, from
 * their one definition in runtime/module_abi.h. Part 0 of several (or the
 * only part) defines the module's entry kiln_module_init and the API
 * pointer, the others refer to it (hidden: it stays inside mod.so). */
static void render_prelude(kstr *all, int part, int nparts) {
    kstr_puts(all,
              "/* Generated by kiln. Do not edit. */\n"
              "#include <stdint.h>\n#include <string.h>\n#include <stdlib.h>\n#include <math.h>\n"
              "\n"
              "#if defined(__GNUC__) && !defined(__clang__)\n"
              "#pragma GCC diagnostic ignored \"-Wpsabi\" /* wide vectors in static helpers */\n"
              "#endif\n"
              "\n/* The module ABI (kiln's runtime/module_abi.h) */\n");
    kstr_puts(all, codegen_module_abi_text);
    kstr_putc(all, '\n');
    if (nparts == 1)
        kstr_puts(all, "static const kiln_module_api *kiln__api;\n\n");
    else
        kstr_printf(
            all, "%s__attribute__((visibility(\"hidden\"))) const kiln_module_api *kiln__api;\n\n",
            part ? "extern " : "");
    if (part == 0)
        kstr_puts(all, "__attribute__((visibility(\"default\")))\n"
                       "int kiln_module_init(const kiln_module_api *api) {\n"
                       "    if (!api || api->version != KILN_MODULE_ABI_VERSION) return 1;\n"
                       "    kiln__api = api;\n"
                       "    return 0;\n"
                       "}\n\n");
}

static void render_free(cg_render *r) {
    for (int i = 0; i < r->nh; i++) {
        free(r->helpers[i].key);
        free(r->helpers[i].text);
    }
    free(r->helpers);
    free(r->allocs);
    cg_names_reset(r);
}

int codegen_render_c_parts(int nfuncs, const tir_func *funcs, int nparts, char **parts) {
    cg_render r = {0};
    for (int i = 0; i < nfuncs; i++) {
        const char *n = funcs[i].name;
        if (!valid_ident(n) || !strncmp(n, "kiln_", 5)) {
            kiln_set_error(KILN_ERR_INVALID,
                           "function name '%s' is not a valid C identifier (or uses the reserved "
                           "prefix 'kiln_')",
                           n ? n : "(null)");
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(funcs[j].name, n)) {
                kiln_set_error(KILN_ERR_INVALID, "two functions are named '%s'", n);
                return -1;
            }
    }
    if (nparts > nfuncs)
        nparts = nfuncs;
    if (nparts < 1)
        nparts = 1;
    kstr fns, meta;
    kstr_init(&fns);
    kstr_init(&meta);
    size_t *ends = calloc((size_t)nfuncs + 1, sizeof(size_t)); /* fns.len after function i */
    KILN_ASSERT(ends);
    for (int i = 0; i < nfuncs && !r.st; i++) {
        render_func(&r, &fns, &funcs[i]);
        ends[i] = fns.len;
        if (r.st)
            kiln_error_prefix("function '%s'", funcs[i].name);
    }
    if (!r.st)
        render_meta(&r, &meta, nfuncs, funcs);
    int made = r.st ? -1 : nparts;
    /* part k takes the functions whose text ends within its share of the
       whole, so the parts compile in about the same time */
    for (int k = 0, f = 0; k < made; k++) {
        kstr all;
        kstr_init(&all);
        render_prelude(&all, k, nparts);
        for (int i = 0; i < r.nh; i++)
            kstr_puts(&all, r.helpers[i].text);
        if (r.nh)
            kstr_putc(&all, '\n');
        size_t from = f ? ends[f - 1] : 0, upto = fns.len * (size_t)(k + 1) / (size_t)nparts;
        for (int first = f; f < nfuncs; f++) {
            int last = k == nparts - 1;
            if (!last && nfuncs - (f + 1) < nparts - 1 - k)
                break; /* leave one function to each later part */
            if (!last && f > first && ends[f] > upto)
                break;
        }
        size_t to = f ? ends[f - 1] : 0;
        if (to > from)
            kstr_printf(&all, "%.*s", (int)(to - from), fns.buf + from);
        if (k == 0 && meta.buf)
            kstr_puts(&all, meta.buf);
        parts[k] = kstr_take(&all);
    }
    render_free(&r);
    free(ends);
    kstr_free(&fns);
    kstr_free(&meta);
    return made;
}

char *codegen_render_c(int nfuncs, const tir_func *funcs) {
    char *src = NULL;
    return codegen_render_c_parts(nfuncs, funcs, 1, &src) == 1 ? src : NULL;
}

/* The function rendered as the module would hold it, but under a fixed
 * name, with its variables named by order of first use and its arguments
 * unnamed, then its metadata line the same way (dtypes, ranks, dims and
 * the names of its size variables, which the runtime binds by name): two
 * functions with the same text compute the same thing from the same
 * arguments, whatever their names. The helpers a function calls are named
 * by what they do (kiln_vload_f32x16), so their names stand for them. */
kiln_status codegen_func_key(const tir_func *f, unsigned char key[KILN_SHA256_BYTES]) {
    cg_render r = {0};
    r.canon = 1;
    tir_func g = *f;
    g.name = "kiln__self";
    tir_param *anon = malloc(sizeof(tir_param) * (size_t)(f->nparams ? f->nparams : 1));
    if (!anon)
        return KILN_ERR_NOMEM;
    for (int i = 0; i < f->nparams; i++) {
        anon[i] = f->params[i];
        anon[i].name = NULL;
    }
    g.params = anon;
    kstr text;
    kstr_init(&text);
    render_func(&r, &text, &g);
    if (!r.st)
        render_meta(&r, &text, 1, &g);
    kiln_status st = r.st ? r.st : text.oom ? KILN_ERR_NOMEM : KILN_OK;
    if (r.st)
        kiln_error_prefix("function '%s'", f->name);
    if (!st) {
        kiln_sha256 h;
        kiln_sha256_init(&h);
        kiln_sha256_update(&h, text.buf, text.len);
        kiln_sha256_final(&h, key);
    }
    kstr_free(&text);
    free(anon);
    render_free(&r);
    return st;
}
