/* fuzz_package.c: libFuzzer target for the package reader (model.tar) and
 * the graph executor's loading. Every input is read as a package image by
 * kiln_package_parse: the ustar members, the manifest (sizes and SHA-256
 * digests), mod.json and mod.params (.npz).
 *
 * mod.so is never loaded from fuzzed bytes (dlopen would run them), and
 * nothing here calls kiln_package_read, kiln_executor_load or
 * kiln_module_load*. If the member is an ELF file, the checks that run
 * before dlopen (pkg_check_elf) and kiln inspect's reading of its
 * kiln_module_meta from the symbol table (pkg_elf_module_meta) run on it,
 * and that text stands for the module; otherwise the harness reads the
 * member itself as the metadata text the module would export
 * (kiln_module_meta, module_abi.h). It builds the module with
 * kiln_module_from_meta, binding each listed function to a kernel of its
 * own that reads and writes every byte its signature says an argument
 * has. The plan is then loaded by kiln_executor_create (every check of the
 * JSON plan against the module and the params), its inputs are set and it
 * runs, so ASan checks the executor's buffers against the signatures. A
 * plan with symbolic dims (dim expressions) runs three times, its dim
 * variables 2, then 3 (the buffers grow), then 2 again; such a run may
 * fail (inputs that contradict the plan's expressions, a kernel's fixed
 * dim), with a message, but must not crash, and its run state's buffers
 * are bounded by FUZZ_MAX_STORAGE.
 *
 * A byte inserted into mod.json would move every later tar header, so
 * LLVMFuzzerCustomMutator mutates, three times in four, the contents of one
 * member and writes the archive again with its headers' sizes and checksums
 * right, and, unless the member it mutated is manifest.json, a manifest that
 * matches the new contents (else no edit would pass the digest check); the
 * fourth time it mutates the raw bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/sha256.h"
#include "runtime/graph_control.h"
#include "runtime/graph_plan.h"
#include "runtime/package.h"

/* Inputs past this are skipped: it bounds time and memory per input (a
 * deflated mod.params member may inflate to 1100 times its size). */
#define FUZZ_MAX_INPUT (128u << 10)
/* Plans whose entries add up to more bytes than this are skipped before the
 * executor allocates their storage (it accepts up to 1 TiB); a dynamic
 * plan's run states are held to it too (graph_run_storage_limit). */
#define FUZZ_MAX_STORAGE ((int64_t)64 << 20)
/* The iterations a control node (Loop, Scan) may run per run, which a
 * mutated trip count could otherwise make 2^31. */
#define FUZZ_MAX_ITERATIONS 4096
/* Kernels a module may have: each function gets one of these. */
#define NKERNELS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
/* libFuzzer's own mutator; weak, so replay.c links this file without it */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size) __attribute__((weak));

static kiln_module *g_mod;      /* the module being built or run */
static char *g_names[NKERNELS]; /* the function behind kernel k */
static const kiln_function *g_funcs[NKERNELS];
static int g_nkernels;
static volatile unsigned char g_sink;
/* What the kernels write into int64 arguments: the run's size (2 or 3),
   so the variables a binder node binds from its output get that value. */
static int64_t g_fill = 2;

/* Kernel k: every argument, as its function's signature and vars size it,
   is read whole and then written whole. */
static int32_t touch(int k, void *const *args, const int64_t *vars) {
    const kiln_function *f = g_funcs[k];
    unsigned char acc = 0;
    for (int a = 0; a < kiln_function_num_args(f); a++) {
        kiln_dtype dt;
        int ndim;
        const int64_t *dims;
        if (!kiln_function_arg_info(f, a, &dt, &ndim, &dims))
            abort();
        int64_t n = (int64_t)kiln_dtype_size(dt);
        for (int d = 0; d < ndim; d++)
            if (!kiln_mul_ok(n, dims[d] >= 0 ? dims[d] : vars[-1 - dims[d]], &n))
                abort();
        unsigned char *p = args[a];
        for (int64_t i = 0; i < n; i++)
            acc ^= p[i];
        if (dt == KILN_INT64) /* small values: a binder's are this run's sizes */
            for (int64_t i = 0; i < n / 8; i++)
                memcpy(p + 8 * i, &g_fill, 8);
        else
            memset(p, 0x3c, (size_t)n);
    }
    g_sink = acc;
    return 0;
}

#define KERNEL(k)                                                                                  \
    static int32_t kernel_##k(void *const *a, const int64_t *v) {                                  \
        return touch(k, a, v);                                                                     \
    }
/* clang-format off */
KERNEL(0) KERNEL(1) KERNEL(2) KERNEL(3) KERNEL(4) KERNEL(5) KERNEL(6) KERNEL(7)
KERNEL(8) KERNEL(9) KERNEL(10) KERNEL(11) KERNEL(12) KERNEL(13) KERNEL(14) KERNEL(15)
static const kiln_kernel_fn k_kernels[NKERNELS] = {
    kernel_0, kernel_1, kernel_2,  kernel_3,  kernel_4,  kernel_5,  kernel_6,  kernel_7,
    kernel_8, kernel_9, kernel_10, kernel_11, kernel_12, kernel_13, kernel_14, kernel_15};
/* clang-format on */

static kiln_kernel_fn lookup(void *user, const char *name) {
    (void)user;
    if (g_nkernels == NKERNELS)
        return NULL; /* "listed but not exported" */
    g_names[g_nkernels] = strdup(name);
    return g_names[g_nkernels] ? k_kernels[g_nkernels++] : NULL;
}

/* Bytes the plan's entries need at most (attrs.shape x 8 bytes, a symbolic
   dim counted as 1), or -1 when that cannot be told (the executor rejects
   such a plan). */
static int64_t plan_bytes(const char *text, size_t len) {
    arena *ar = arena_new();
    const json *root = ar ? json_parse(ar, text, len, "mod.json") : NULL;
    const json *shapes = json_at(json_get(json_get(root, "attrs"), "shape"), 1);
    int64_t total = json_is(shapes, JSON_ARRAY) ? 0 : -1;
    for (int i = 0; total >= 0 && i < json_len(shapes); i++) {
        const json *sh = json_at(shapes, i);
        int64_t n = 8, d;
        for (int k = 0; n >= 0 && k < json_len(sh); k++) {
            if (json_is(json_at(sh, k), JSON_STRING))
                continue;
            if (!json_int(json_at(sh, k), &d) || d < 0 || !kiln_mul_ok(n, d, &n))
                n = -1;
        }
        if (n < 0 || !kiln_add_ok(total, n, &total))
            total = -1;
    }
    arena_free(ar);
    kiln_clear_error();
    return total;
}

/* Symbolic dim d of input i of m with every variable `sym`: its
   expression's value when that is small, else sym (then the run fails). */
static int64_t sym_dim(const kiln_model *m, int i, int d, int64_t sym) {
    const dim_expr *x = m->entries[m->inputs[i].entry].expr[d];
    int64_t *vals = malloc((size_t)(m->vars.n ? m->vars.n : 1) * sizeof *vals), v = sym;
    for (int k = 0; vals && k < m->vars.n; k++)
        vals[k] = sym;
    if (!vals || dim_expr_eval(x, vals, &v) || v > 64)
        v = sym;
    free(vals);
    return v;
}

/* Set every input of e to zeros, its symbolic dims as if each variable
   were `sym`; 1 if the plan has symbolic dims. */
static int set_inputs(kiln_executor *e, int64_t sym) {
    int dynamic = 0;
    for (int i = 0; i < kiln_executor_num_inputs(e); i++) {
        int64_t shape[KILN_MAX_NDIM];
        int nd = kiln_executor_input_ndim(e, i);
        for (int d = 0; d < nd; d++) {
            shape[d] = kiln_executor_input_dim(e, i, d);
            if (kiln_executor_input_dim_expr(e, i, d)) {
                shape[d] = sym_dim(kiln_executor_model(e), i, d, sym);
                dynamic = 1;
            } else if (shape[d] < 0) {
                abort(); /* -1 is for symbolic dims only */
            }
        }
        kiln_ndarray *a = kiln_ndarray_empty(kiln_executor_input_dtype(e, i), nd, shape);
        if (a && kiln_executor_set_input(e, kiln_executor_input_name(e, i), a) != KILN_OK) {
            fprintf(stderr, "fuzz_package: input %d '%s' of its own shape is refused: %s\n", i,
                    kiln_executor_input_name(e, i), kiln_last_error());
            abort();
        }
        kiln_ndarray_free(a);
    }
    return dynamic;
}

/* Load the plan on g_mod, set every input to zeros, run it and read the
   outputs; a dynamic plan at three sizes. */
static void run_plan(const char *text, size_t len, const kiln_npz *params) {
    int64_t bytes = plan_bytes(text, len);
    if (bytes < 0 || bytes > FUZZ_MAX_STORAGE)
        return;
    kiln_executor *e = kiln_executor_create(text, len, g_mod, params);
    if (!e)
        return;
    static const int64_t sizes[3] = {2, 3, 2};
    for (int round = 0; round < 3; round++) {
        g_fill = sizes[round];
        /* a staged plan's sizes come from kernels: any run may fail */
        int dynamic = set_inputs(e, sizes[round]) || kiln_executor_model(e)->staged;
        if (kiln_executor_run(e) != KILN_OK) {
            if (!dynamic || !kiln_last_error()[0]) {
                fprintf(stderr, "fuzz_package: a plan of kernels that cannot fail failed: %s\n",
                        kiln_last_error());
                abort();
            }
            continue;
        }
        unsigned char acc = 0;
        for (int i = 0; i < kiln_executor_num_outputs(e); i++) {
            const kiln_ndarray *o = kiln_executor_output(e, i);
            if (!o || !kiln_executor_output_name(e, i))
                abort();
            const unsigned char *p = kiln_ndarray_data(o);
            int64_t n = kiln_ndarray_numel(o) * (int64_t)kiln_dtype_size(kiln_ndarray_dtype(o));
            for (int64_t k = 0; k < n; k++)
                acc ^= p[k];
        }
        g_sink = acc;
        if (!dynamic)
            break;
    }
    for (int k = 0; k < kiln_executor_num_kernels(e); k++)
        if (!kiln_executor_kernel_name(e, k) || !kiln_executor_kernel_func(e, k))
            abort();
    kiln_executor_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    graph_run_storage_limit = FUZZ_MAX_STORAGE;
    graph_control_max_iterations = FUZZ_MAX_ITERATIONS;
    char *text = NULL;
    unsigned char *so = NULL;
    size_t text_len = 0, so_len = 0;
    kiln_npz *params = NULL;
    if (kiln_package_parse(data, size, "fuzz.tar", &text, &text_len, &so, &so_len, &params)) {
        kiln_clear_error();
        return 0;
    }
    char *meta = NULL;
    if (so_len >= 4 && memcmp(so, "\177ELF", 4) == 0) {
        if (pkg_check_elf("fuzz.tar", so, so_len))
            kiln_clear_error();
        meta = pkg_elf_module_meta(so, so_len);
    } else if ((meta = malloc(so_len + 1)) != NULL) {
        memcpy(meta, so, so_len);
        meta[so_len] = 0;
    }
    if (meta) {
        g_nkernels = 0;
        g_mod = kiln_module_from_meta("fuzz.tar: mod.so", meta, lookup, NULL);
        for (int k = 0; g_mod && k < g_nkernels; k++) {
            g_funcs[k] = kiln_module_get_function(g_mod, g_names[k]);
            if (!g_funcs[k])
                abort(); /* a function the module listed */
        }
        if (g_mod)
            run_plan(text, text_len, params);
        kiln_module_free(g_mod);
        g_mod = NULL;
        for (int k = 0; k < g_nkernels; k++)
            free(g_names[k]);
        g_nkernels = 0;
        free(meta);
    }
    kiln_clear_error();
    free(text);
    free(so);
    kiln_npz_free(params);
    return 0;
}

/* ---- the structure-aware mutator ---------------------------------------------- */

#define MAX_MEMBERS 8

/* A manifest.json for the members other than `skip` (the manifest's own
   index), their names from the headers; malloc'd. */
static char *remake_manifest(const uint8_t *const *hdr, const uint8_t *const *body,
                             const size_t *len, int n, int skip) {
    kstr s;
    kstr_init(&s);
    kstr_printf(&s, "{\"format\": \"kiln-package\", \"version\": %d, \"abi\": %d, \"members\": [",
                KILN_PACKAGE_FORMAT_VERSION, KILN_MODULE_ABI_VERSION);
    for (int m = 0, k = 0; m < n; m++) {
        if (m == skip)
            continue;
        char name[101], hex[KILN_SHA256_HEX];
        memcpy(name, hdr[m], 100);
        name[100] = 0;
        const char *nm = name;
        while (nm[0] == '.' && nm[1] == '/')
            nm += 2;
        kiln_sha256_hex(body[m], len[m], hex);
        kstr_puts(&s, k++ ? ", {\"name\": " : "{\"name\": ");
        json_write_string(&s, nm);
        kstr_printf(&s, ", \"size\": %zu, \"sha256\": \"%s\"}", len[m], hex);
    }
    kstr_puts(&s, "]}\n");
    return kstr_take(&s);
}

/* Rewrite the size field and the checksum of the ustar header h. */
static void set_header_size(unsigned char *h, size_t size) {
    char f[16];
    snprintf(f, sizeof f, "%011llo", (unsigned long long)size);
    memcpy(h + 124, f, 12); /* 11 digits and the NUL */
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf(f, sizeof f, "%06o", sum & 0777777u);
    memcpy(h + 148, f, 7); /* six digits, a NUL, and the space left */
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    size_t hdr[MAX_MEMBERS], len[MAX_MEMBERS], off = 0;
    int n = 0;
    while (seed % 4 && n < MAX_MEMBERS && off + 512 <= size) {
        const unsigned char *h = data + off;
        size_t sz = 0;
        int i = 0, zero = 1;
        for (int k = 0; k < 512 && zero; k++)
            zero = !h[k];
        if (zero)
            break;
        while (i < 12 && h[124 + i] == ' ')
            i++;
        for (; i < 12 && h[124 + i] >= '0' && h[124 + i] <= '7'; i++)
            sz = sz * 8 + (size_t)(h[124 + i] - '0');
        if (sz > size - off - 512)
            break;
        hdr[n] = off;
        len[n++] = sz;
        off += 512 + (sz + 511) / 512 * 512;
    }
    if (n == 0 || !LLVMFuzzerMutate)
        return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    int pick = (int)((seed / 4) % (unsigned)n);
    size_t cap = max_size > 512 * (size_t)(n + 1) ? max_size - 512 * (size_t)(n + 1) : 0;
    unsigned char *body = malloc(cap + 1), *out = malloc(max_size + 1);
    size_t blen = len[pick] < cap ? len[pick] : cap, total = 0;
    if (!body || !out) {
        free(body);
        free(out);
        return size;
    }
    memcpy(body, data + hdr[pick] + 512, blen);
    blen = LLVMFuzzerMutate(body, blen, cap);
    const uint8_t *hdrs[MAX_MEMBERS], *bodies[MAX_MEMBERS];
    size_t lens[MAX_MEMBERS];
    int manifest = -1;
    for (int m = 0; m < n; m++) {
        hdrs[m] = data + hdr[m];
        bodies[m] = m == pick ? body : data + hdr[m] + 512;
        lens[m] = m == pick ? blen : len[m];
        if (manifest < 0 && (strncmp((const char *)hdrs[m], "manifest.json", 100) == 0 ||
                             strncmp((const char *)hdrs[m], "./manifest.json", 100) == 0))
            manifest = m;
    }
    char *remade =
        manifest >= 0 && manifest != pick ? remake_manifest(hdrs, bodies, lens, n, manifest) : NULL;
    if (remade) {
        bodies[manifest] = (const uint8_t *)remade;
        lens[manifest] = strlen(remade);
    }
    for (int m = 0; m < n; m++) {
        const unsigned char *src = bodies[m];
        size_t l = lens[m], padded = (l + 511) / 512 * 512;
        if (total + 512 + padded > max_size) {
            total = 0; /* does not fit: keep the input */
            break;
        }
        memcpy(out + total, data + hdr[m], 512);
        set_header_size(out + total, l);
        memcpy(out + total + 512, src, l);
        memset(out + total + 512 + l, 0, padded - l);
        total += 512 + padded;
    }
    if (total && total + 1024 <= max_size) {
        memset(out + total, 0, 1024); /* the end of the archive */
        total += 1024;
    }
    if (total)
        memcpy(data, out, total);
    free(remade);
    free(body);
    free(out);
    return total ? total : size;
}
