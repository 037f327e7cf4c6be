/* module.c: loading built modules (shared objects following module_abi.h):
 * dlopen (a file, or an image in memory through a memfd), hand the module
 * the runtime API, parse its metadata text strictly,
 * and call its functions after checking every argument against it. A
 * module can also be made from metadata text and in-process kernels
 * (kiln_module_from_meta), which is how the package fuzzer runs plans. */
#define _GNU_SOURCE /* memfd_create, O_TMPFILE */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module_abi.h"
#include "runtime_internal.h"

typedef struct {
    const char *name;
    kiln_dtype dtype;
    int ndim;
    int64_t dims[KILN_MAX_NDIM]; /* >= 0: fixed; -1 - k: symbolic size vars[k] */
} fn_arg;

struct kiln_function {
    const char *name;
    int nargs, nvars;
    const char **vars;
    fn_arg *args;
    kiln_kernel_fn fn;
};

struct kiln_module {
    void *handle;
    char *path;   /* the shared object, for kiln_module_save */
    char *name;   /* for messages, if not path: "model.tar: mod.so" */
    char *tmpdir; /* removed on free, or NULL */
    int fd;       /* the image's memfd (kept open while loaded: its name is unique), or -1 */
    arena *ar;    /* names, args and functions */
    int nfuncs;
    kiln_function *funcs;
};

static const kiln_module_api g_api = {KILN_MODULE_ABI_VERSION, kiln_parallel_for,
                                      kiln_workspace_alloc, kiln_workspace_free};

/* ---- metadata ---------------------------------------------------------------- */

#define MAX_TOKENS (4 + KILN_MAX_NDIM)
#define MAX_COUNT 100000

typedef struct {
    const char *path;
    int line;
    char *next; /* start of the next line, or NULL at the end */
    char *tok[MAX_TOKENS];
    int ntok;
    kiln_kernel_fn (*lookup)(void *user, const char *name); /* a function's kernel */
    void *user;
} meta_reader;

static kiln_status meta_err(const meta_reader *r, const char *what, const char *got) {
    return kiln_set_error(KILN_ERR_IO, "%s: module metadata line %d: %s%s%s%s", r->path, r->line,
                          what, got ? " (got '" : "", got ? got : "", got ? "')" : "");
}

/* Split the next line into tokens separated by single spaces. Returns 0 at
 * the end of the text, -1 on a malformed line (error set), else 1. */
static int meta_line(meta_reader *r) {
    if (!r->next || !*r->next)
        return 0; /* a final newline ends the text */
    char *s = r->next, *nl = strchr(s, '\n');
    r->next = nl ? nl + 1 : NULL;
    if (nl)
        *nl = 0;
    r->line++;
    r->ntok = 0;
    for (;;) {
        char *sp = strchr(s, ' ');
        if (sp)
            *sp = 0;
        if (!*s || r->ntok == MAX_TOKENS) {
            meta_err(r, *s ? "too many fields" : "empty field (fields are separated by one space)",
                     NULL);
            return -1;
        }
        r->tok[r->ntok++] = s;
        if (!sp)
            break;
        s = sp + 1;
    }
    return 1;
}

/* A decimal integer in [lo, hi], digits only. */
static int parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    int64_t v = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        if (!kiln_mul_ok(v, 10, &v) || !kiln_add_ok(v, *s - '0', &v))
            return 0;
    }
    if (v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static kiln_status meta_expect(meta_reader *r, const char *kw, int ntok) {
    int st = meta_line(r);
    if (st < 0)
        return KILN_ERR_IO;
    if (st == 0)
        return meta_err(r, "unexpected end of metadata", NULL);
    if (strcmp(r->tok[0], kw) != 0) {
        char want[64];
        snprintf(want, sizeof want, "expected '%s'", kw);
        return meta_err(r, want, r->tok[0]);
    }
    if (ntok >= 0 && r->ntok != ntok)
        return meta_err(r, "wrong number of fields", NULL);
    return KILN_OK;
}

static kiln_status parse_arg(meta_reader *r, kiln_module *m, kiln_function *f, fn_arg *a) {
    if (meta_expect(r, "arg", -1))
        return KILN_ERR_IO;
    int64_t nd;
    if (r->ntok < 4 || !parse_count(r->tok[3], 0, KILN_MAX_NDIM, &nd))
        return meta_err(r, "expected 'arg NAME DTYPE NDIM DIMS...' with NDIM <= 16",
                        r->ntok >= 4 ? r->tok[3] : NULL);
    if (r->ntok != 4 + nd)
        return meta_err(r, "the number of dims does not match NDIM", NULL);
    a->name = arena_strdup(m->ar, r->tok[1]);
    if (kiln_dtype_parse(r->tok[2], &a->dtype) || a->dtype == KILN_HANDLE)
        return meta_err(r, "unknown dtype", r->tok[2]);
    a->ndim = (int)nd;
    for (int i = 0; i < a->ndim; i++) {
        const char *t = r->tok[4 + i];
        int64_t v;
        if (t[0] == '$') {
            if (!parse_count(t + 1, 0, f->nvars - 1, &v))
                return meta_err(r, "symbolic dim names no declared var", t);
            a->dims[i] = -1 - v;
        } else {
            if (!parse_count(t, 0, INT64_MAX, &v))
                return meta_err(r, "bad dim", t);
            a->dims[i] = v;
        }
    }
    return KILN_OK;
}

static kiln_status parse_func(meta_reader *r, kiln_module *m, kiln_function *f) {
    int64_t nargs, nvars;
    if (r->ntok != 4 || !parse_count(r->tok[2], 0, MAX_COUNT, &nargs) ||
        !parse_count(r->tok[3], 0, MAX_COUNT, &nvars))
        return meta_err(r, "expected 'func NAME NARGS NVARS'", NULL);
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, r->tok[1]) == 0)
            return meta_err(r, "duplicate function", r->tok[1]);
    f->name = arena_strdup(m->ar, r->tok[1]);
    f->nargs = (int)nargs;
    f->nvars = (int)nvars;
    f->vars = arena_alloc(m->ar, (size_t)nvars * sizeof(char *));
    f->args = arena_alloc(m->ar, (size_t)nargs * sizeof(fn_arg));
    for (int i = 0; i < f->nvars; i++) {
        if (meta_expect(r, "var", 2))
            return KILN_ERR_IO;
        f->vars[i] = arena_strdup(m->ar, r->tok[1]);
    }
    for (int i = 0; i < f->nargs; i++)
        if (parse_arg(r, m, f, &f->args[i]))
            return KILN_ERR_IO;
    /* Every var must be bound by some argument's shape. */
    for (int k = 0; k < f->nvars; k++) {
        int used = 0;
        for (int i = 0; i < f->nargs && !used; i++)
            for (int d = 0; d < f->args[i].ndim; d++)
                used |= f->args[i].dims[d] == -1 - k;
        if (!used)
            return meta_err(r, "var is not the size of any argument dim", f->vars[k]);
    }
    f->fn = r->lookup(r->user, f->name);
    if (!f->fn)
        return kiln_set_error(KILN_ERR_IO, "%s: function '%s' is listed but not exported", r->path,
                              f->name);
    return KILN_OK;
}

static kiln_status parse_meta(kiln_module *m, const char *text,
                              kiln_kernel_fn (*lookup)(void *user, const char *name), void *user) {
    meta_reader r = {
        m->name ? m->name : m->path, 0, arena_strdup(m->ar, text), {0}, 0, lookup, user};
    int st = meta_line(&r);
    if (st < 0)
        return KILN_ERR_IO;
    if (st == 0 || r.ntok != 2 || strcmp(r.tok[0], "kiln-module") != 0) {
        r.line = 1;
        return meta_err(&r, "expected 'kiln-module 1'", NULL);
    }
    if (strcmp(r.tok[1], "1") != 0)
        return meta_err(&r, "unsupported metadata version", r.tok[1]);
    int cap = 0;
    for (;;) {
        st = meta_line(&r);
        if (st < 0)
            return KILN_ERR_IO;
        if (st == 0)
            return meta_err(&r, "missing 'end'", NULL);
        if (strcmp(r.tok[0], "end") == 0 && r.ntok == 1)
            break;
        if (strcmp(r.tok[0], "func") != 0)
            return meta_err(&r, "expected 'func' or 'end'", r.tok[0]);
        if (m->nfuncs == cap) {
            cap = cap ? cap * 2 : 8;
            kiln_function *nf = kiln_realloc(m->funcs, (size_t)cap * sizeof *nf);
            if (!nf)
                return KILN_ERR_NOMEM;
            m->funcs = nf;
        }
        kiln_function *f = &m->funcs[m->nfuncs];
        memset(f, 0, sizeof *f);
        if (parse_func(&r, m, f))
            return KILN_ERR_IO;
        m->nfuncs++;
    }
    if (r.next && strspn(r.next, "\n") != strlen(r.next)) {
        r.line++;
        return meta_err(&r, "text after 'end'", NULL);
    }
    return KILN_OK;
}

/* ---- loading ----------------------------------------------------------------- */

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            size_t n = strlen(dir) + strlen(e->d_name) + 2;
            char *p = malloc(n);
            if (!p)
                continue;
            snprintf(p, n, "%s/%s", dir, e->d_name);
            unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

void kiln_module_free(kiln_module *m) {
    if (!m)
        return;
    if (m->handle)
        dlclose(m->handle);
    if (m->fd >= 0)
        close(m->fd);
    if (m->tmpdir)
        remove_dir(m->tmpdir);
    free(m->tmpdir);
    free(m->path);
    free(m->name);
    free(m->funcs);
    arena_free(m->ar);
    free(m);
}

static kiln_kernel_fn dl_lookup(void *handle, const char *name) {
    return (kiln_kernel_fn)dlsym(handle, name);
}

static kiln_module *module_new(void) {
    kiln_module *m = kiln_calloc(1, sizeof *m);
    if (m)
        m->fd = -1;
    if (m && !(m->ar = arena_new())) {
        kiln_module_free(m);
        return NULL;
    }
    return m;
}

/* dlopen m->path, check that it is a kiln module of this ABI and read its
 * functions; `what` names it in errors. Frees m on failure. */
static kiln_module *module_open(kiln_module *m, const char *what) {
    dlerror();
    m->handle = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) {
        const char *e = dlerror();
        kiln_set_error(KILN_ERR_IO, "%s: cannot load module: %s", what, e ? e : "dlopen failed");
        kiln_module_free(m);
        return NULL;
    }
    const char *meta = dlsym(m->handle, "kiln_module_meta");
    int (*init)(const kiln_module_api *) =
        (int (*)(const kiln_module_api *))dlsym(m->handle, "kiln_module_init");
    kiln_status st = KILN_OK;
    if (!meta)
        st = kiln_set_error(KILN_ERR_IO, "%s: not a kiln module (no kiln_module_meta)", what);
    else if (!init)
        st = kiln_set_error(KILN_ERR_IO, "%s: not a kiln module (no kiln_module_init)", what);
    else if (init(&g_api) != 0)
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: the module rejected runtime ABI version %d (rebuild it with "
                            "this kiln)",
                            what, KILN_MODULE_ABI_VERSION);
    else
        st = parse_meta(m, meta, dl_lookup, m->handle);
    if (st) {
        kiln_module_free(m);
        return NULL;
    }
    return m;
}

kiln_module *kiln_module_load_owned(const char *so_path, const char *tmpdir) {
    if (!so_path) {
        kiln_set_error(KILN_ERR_INVALID, "module_load: NULL path");
        return NULL;
    }
    kiln_module *m = module_new();
    if (!m)
        return NULL;
    /* dlopen searches the library path for names without a '/'. */
    size_t n = strlen(so_path) + 3;
    if (!(m->path = kiln_malloc(n))) {
        kiln_module_free(m);
        return NULL;
    }
    snprintf(m->path, n, "%s%s", strchr(so_path, '/') ? "" : "./", so_path);
    if (!(m = module_open(m, so_path)))
        return NULL;
    if (tmpdir && !(m->tmpdir = kiln_strdup(tmpdir))) {
        kiln_module_free(m);
        return NULL;
    }
    return m;
}

kiln_module *kiln_module_load(const char *path) {
    return kiln_module_load_owned(path, NULL);
}

int kiln_module_image_no_memfd;

/* A file with no name anywhere holding the image: a memfd, or where memfd
 * is unavailable (or kiln_module_image_no_memfd is set, for tests) an
 * O_TMPFILE file in $TMPDIR. -1 with an error. */
static int image_fd(const void *bytes, size_t len, const char *what) {
    int fd = -1, memfd_errno = ENOSYS;
#ifdef MFD_CLOEXEC
    if (!kiln_module_image_no_memfd) {
        fd = memfd_create("kiln-mod.so", MFD_CLOEXEC);
        memfd_errno = errno;
    }
#endif
    if (fd < 0) {
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir)
            dir = "/tmp";
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0700);
        if (fd < 0) {
            kiln_set_error(KILN_ERR_IO,
                           "%s: cannot load the module from memory: memfd_create: %s; an unnamed "
                           "file in %s (O_TMPFILE): %s",
                           what, strerror(memfd_errno), dir, strerror(errno));
            return -1;
        }
    }
    for (const char *p = bytes; len > 0;) {
        ssize_t k = write(fd, p, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            kiln_set_error(KILN_ERR_IO, "%s: cannot write the module's image: %s", what,
                           k < 0 ? strerror(errno) : "no space");
            close(fd);
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return fd;
}

kiln_module *kiln_module_load_image(const void *bytes, size_t len, const char *what) {
    if (!bytes || !what) {
        kiln_set_error(KILN_ERR_INVALID, "module_load_image: NULL argument");
        return NULL;
    }
    kiln_module *m = module_new();
    if (!m)
        return NULL;
    m->fd = image_fd(bytes, len, what);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", m->fd);
    if (m->fd < 0 || !(m->path = kiln_strdup(path)) || !(m->name = kiln_strdup(what))) {
        kiln_module_free(m);
        return NULL;
    }
    return module_open(m, what);
}

kiln_module *kiln_module_from_meta(const char *what, const char *meta,
                                   kiln_kernel_fn (*lookup)(void *user, const char *name),
                                   void *user) {
    if (!what || !meta || !lookup) {
        kiln_set_error(KILN_ERR_INVALID, "module_from_meta: NULL argument");
        return NULL;
    }
    kiln_module *m = module_new();
    if (!m)
        return NULL;
    m->path = kiln_strdup(what);
    if (!m->path || parse_meta(m, meta, lookup, user)) {
        kiln_module_free(m);
        return NULL;
    }
    return m;
}

kiln_status kiln_module_save(const kiln_module *m, const char *path) {
    if (!m || !path)
        return kiln_set_error(KILN_ERR_INVALID, "module_save: NULL argument");
    if (!m->handle)
        return kiln_set_error(KILN_ERR_INVALID, "%s: the module has no shared object to save",
                              m->path);
    struct stat a, b;
    if (stat(m->path, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return KILN_OK; /* already there */
    FILE *in = fopen(m->path, "rb");
    if (!in)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", m->path, strerror(errno));
    FILE *out = fopen(path, "wb");
    if (!out) {
        fclose(in);
        return kiln_set_error(KILN_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    char buf[65536];
    size_t k;
    int bad = 0;
    while (!bad && (k = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, k, out) != k;
    bad |= ferror(in);
    fclose(in);
    bad |= fclose(out) != 0;
    if (bad) {
        remove(path);
        return kiln_set_error(KILN_ERR_IO, "%s: write error while saving module", path);
    }
    return KILN_OK;
}

int kiln_module_function_count(const kiln_module *m) {
    return m ? m->nfuncs : 0;
}

kiln_function *kiln_module_get_function(kiln_module *m, const char *name) {
    if (!m || !name) {
        kiln_set_error(KILN_ERR_INVALID, "module_get_function: NULL argument");
        return NULL;
    }
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0)
            return &m->funcs[i];
    kstr s;
    kstr_init(&s);
    for (int i = 0; i < m->nfuncs; i++)
        kstr_printf(&s, "%s%s", i ? ", " : "", m->funcs[i].name);
    kiln_set_error(KILN_ERR_INVALID, "%s: no function '%s' (it has: %s)",
                   m->name ? m->name : m->path, name, s.buf ? s.buf : "none");
    kstr_free(&s);
    return NULL;
}

kiln_function *kiln_module_function_at(kiln_module *m, int i) {
    return m && i >= 0 && i < m->nfuncs ? &m->funcs[i] : NULL;
}

const char *kiln_function_name(const kiln_function *f) {
    return f->name;
}

int kiln_function_num_args(const kiln_function *f) {
    return f->nargs;
}

/* ---- calling ------------------------------------------------------------------ */

#define SMALL 32

/* Check args against f's signature; fill ptrs and vars (bound_by: scratch). */
static kiln_status check_args(const kiln_function *f, kiln_ndarray *const *args, void **ptrs,
                              int64_t *vars, int *bound_by) {
    for (int k = 0; k < f->nvars; k++)
        bound_by[k] = -1;
    for (int i = 0; i < f->nargs; i++) {
        const fn_arg *p = &f->args[i];
        const kiln_ndarray *a = args[i];
        if (!a)
            return kiln_set_error(KILN_ERR_INVALID, "%s: argument %d '%s' is NULL", f->name, i,
                                  p->name);
        if (kiln_ndarray_dtype(a) != p->dtype)
            return kiln_set_error(KILN_ERR_INVALID, "%s: argument %d '%s': expected %s, got %s",
                                  f->name, i, p->name, kiln_dtype_name(p->dtype),
                                  kiln_dtype_name(kiln_ndarray_dtype(a)));
        if (kiln_ndarray_ndim(a) != p->ndim)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: argument %d '%s': expected %d dimensions, got %d", f->name,
                                  i, p->name, p->ndim, kiln_ndarray_ndim(a));
        for (int d = 0; d < p->ndim; d++) {
            int64_t got = kiln_ndarray_dim(a, d), want = p->dims[d];
            if (want >= 0) {
                if (got != want)
                    return kiln_set_error(KILN_ERR_INVALID,
                                          "%s: argument %d '%s' dim %d is %lld, expected %lld",
                                          f->name, i, p->name, d, (long long)got, (long long)want);
                continue;
            }
            int k = (int)(-1 - want);
            if (bound_by[k] < 0) {
                bound_by[k] = i;
                vars[k] = got;
            } else if (vars[k] != got) {
                return kiln_set_error(KILN_ERR_INVALID,
                                      "%s: argument %d '%s' dim %d is %lld, but %s = %lld from "
                                      "argument %d '%s'",
                                      f->name, i, p->name, d, (long long)got, f->vars[k],
                                      (long long)vars[k], bound_by[k], f->args[bound_by[k]].name);
            }
        }
        if (!kiln_ndarray_is_contiguous(a))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: argument %d '%s' is not contiguous; copy it first", f->name,
                                  i, p->name);
        ptrs[i] = kiln_ndarray_data(a);
    }
    return KILN_OK;
}

kiln_status kiln_function_call(const kiln_function *f, int nargs, kiln_ndarray *const *args) {
    if (!f)
        return kiln_set_error(KILN_ERR_INVALID, "function_call: NULL function");
    if (nargs != f->nargs)
        return kiln_set_error(KILN_ERR_INVALID, "%s: expected %d arguments, got %d", f->name,
                              f->nargs, nargs);
    if (nargs > 0 && !args)
        return kiln_set_error(KILN_ERR_INVALID, "%s: the argument array is NULL", f->name);
    void *ptr_small[SMALL], **ptrs = ptr_small;
    int64_t var_small[SMALL], *vars = var_small;
    int bound_small[SMALL], *bound = bound_small;
    if (f->nargs > SMALL && !(ptrs = kiln_malloc((size_t)f->nargs * sizeof *ptrs)))
        return KILN_ERR_NOMEM;
    if (f->nvars > SMALL) {
        vars = kiln_malloc((size_t)f->nvars * sizeof *vars);
        bound = kiln_malloc((size_t)f->nvars * sizeof *bound);
    }
    kiln_status st = !vars || !bound ? KILN_ERR_NOMEM : check_args(f, args, ptrs, vars, bound);
    int32_t bits = st ? 0 : f->fn(ptrs, vars);
    /* the kernel's KILN_KERNEL_* bits: a zero divisor has a defined value
       (base/intdiv.h) and is not an error here */
    if (bits & KILN_KERNEL_ENOMEM)
        st = kiln_set_error(KILN_ERR_NOMEM, "%s: kernel could not allocate memory", f->name);
    else if (bits & KILN_KERNEL_EINDEX)
        st = kiln_set_error(KILN_ERR_RANGE,
                            "%s: index out of range: an index input (of a Gather, say) is "
                            "outside the dim it indexes",
                            f->name);
    else if (bits & KILN_KERNEL_EEXTERNAL)
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: the external library it calls failed (its message is on stderr)",
                            f->name);
    else if (bits & ~(int32_t)KILN_KERNEL_EDIVZERO)
        st = kiln_set_error(KILN_ERR_INVALID, "%s: kernel returned unknown status bits 0x%x",
                            f->name, (unsigned)bits);
    if (ptrs != ptr_small)
        free(ptrs);
    if (vars != var_small)
        free(vars);
    if (bound != bound_small)
        free(bound);
    return st;
}

/* ---- for the graph executor ----------------------------------------------------- */

int kiln_function_num_vars(const kiln_function *f) {
    return f->nvars;
}

const char *kiln_function_var_name(const kiln_function *f, int k) {
    return k >= 0 && k < f->nvars ? f->vars[k] : NULL;
}

int kiln_function_arg_info(const kiln_function *f, int i, kiln_dtype *dtype, int *ndim,
                           const int64_t **dims) {
    if (i < 0 || i >= f->nargs)
        return 0;
    *dtype = f->args[i].dtype;
    *ndim = f->args[i].ndim;
    *dims = f->args[i].dims;
    return 1;
}

kiln_kernel_fn kiln_function_kernel(const kiln_function *f) {
    return f->fn;
}
