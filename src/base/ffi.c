/* ffi.c: value lists, packed functions and the global registry
 * (kiln/ffi.h). Arrays and graphs are opaque objects here, each with the
 * destructor of the layer that made it (ffi_push_object), so the base layer
 * calls nothing above it. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ffi_internal.h"

typedef struct {
    kiln_value_kind kind;
    union {
        int64_t i;
        double f;
        char *s;
        void *obj;
        kiln_func *fn;
    } v;
    void (*free_obj)(void *); /* an owned array or graph; NULL when borrowed */
} value;

struct kiln_args {
    value *v;
    int n, cap;
};

struct kiln_func {
    kiln_packed_fn fn;
    void *user;
    void (*free_user)(void *);
    int refs; /* atomic */
};

kiln_args *kiln_args_new(void) {
    return kiln_calloc(1, sizeof(kiln_args));
}

static void value_clear(value *x) {
    if (x->kind == KILN_VALUE_STR)
        free(x->v.s);
    else if (x->kind == KILN_VALUE_FUNC)
        kiln_func_release(x->v.fn);
    else if ((x->kind == KILN_VALUE_ARRAY || x->kind == KILN_VALUE_GRAPH) && x->free_obj)
        x->free_obj(x->v.obj);
    x->kind = KILN_VALUE_NONE;
}

void ffi_args_clear(kiln_args *a) {
    for (int i = 0; i < a->n; i++)
        value_clear(&a->v[i]);
    a->n = 0;
}

void kiln_args_free(kiln_args *a) {
    if (!a)
        return;
    ffi_args_clear(a);
    free(a->v);
    free(a);
}

int kiln_args_count(const kiln_args *a) {
    return a ? a->n : 0;
}

kiln_value_kind kiln_args_kind(const kiln_args *a, int i) {
    return a && i >= 0 && i < a->n ? a->v[i].kind : KILN_VALUE_NONE;
}

static value *push(kiln_args *a) {
    if (!a) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_args: no list");
        return NULL;
    }
    value *v = kiln_grow(a->v, a->n, &a->cap, 4, sizeof *v);
    if (!v)
        return NULL;
    a->v = v;
    value *x = &a->v[a->n++];
    memset(x, 0, sizeof *x);
    return x;
}

kiln_status kiln_args_push_none(kiln_args *a) {
    return push(a) ? KILN_OK : a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
}

kiln_status kiln_args_push_int(kiln_args *a, int64_t v) {
    value *x = push(a);
    if (!x)
        return a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    x->kind = KILN_VALUE_INT;
    x->v.i = v;
    return KILN_OK;
}

kiln_status kiln_args_push_float(kiln_args *a, double v) {
    value *x = push(a);
    if (!x)
        return a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    x->kind = KILN_VALUE_FLOAT;
    x->v.f = v;
    return KILN_OK;
}

kiln_status kiln_args_push_str(kiln_args *a, const char *s) {
    if (!s)
        return kiln_set_error(KILN_ERR_INVALID, "kiln_args_push_str: NULL string");
    char *copy = kiln_strdup(s);
    if (!copy)
        return KILN_ERR_NOMEM;
    value *x = push(a);
    if (!x) {
        free(copy);
        return a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    }
    x->kind = KILN_VALUE_STR;
    x->v.s = copy;
    return KILN_OK;
}

kiln_status ffi_push_object(kiln_args *a, kiln_value_kind kind, void *obj,
                            void (*free_obj)(void *)) {
    if (!obj)
        return kiln_set_error(KILN_ERR_INVALID, "kiln_args: NULL %s",
                              kind == KILN_VALUE_ARRAY ? "array" : "graph");
    value *x = push(a);
    if (!x) {
        if (free_obj)
            free_obj(obj); /* the caller handed it over */
        return a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    }
    x->kind = kind;
    x->v.obj = obj;
    x->free_obj = free_obj;
    return KILN_OK;
}

kiln_status kiln_args_push_func(kiln_args *a, kiln_func *f) {
    if (!f)
        return kiln_set_error(KILN_ERR_INVALID, "kiln_args_push_func: NULL function");
    value *x = push(a);
    if (!x)
        return a ? KILN_ERR_NOMEM : KILN_ERR_INVALID;
    x->kind = KILN_VALUE_FUNC;
    x->v.fn = kiln_func_retain(f);
    return KILN_OK;
}

static const char *kind_name(kiln_value_kind k) {
    static const char *const names[] = {"none",  "int",   "float",   "str",
                                        "array", "graph", "function"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Value i of kind `want`, or NULL with an error. */
static value *get(const kiln_args *a, int i, kiln_value_kind want) {
    if (!a || i < 0 || i >= a->n) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_args: no value %d (the list has %d)", i,
                       a ? a->n : 0);
        return NULL;
    }
    value *x = &a->v[i];
    /* a float reads as an int when it is a whole number in int64's range
       (checked before any conversion: casting one outside it is undefined) */
    int ok = x->kind == want || (want == KILN_VALUE_FLOAT && x->kind == KILN_VALUE_INT) ||
             (want == KILN_VALUE_INT && x->kind == KILN_VALUE_FLOAT && x->v.f >= -0x1p63 &&
              x->v.f < 0x1p63 && x->v.f == trunc(x->v.f));
    if (!ok) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_args: value %d is a %s, not a %s", i,
                       kind_name(x->kind), kind_name(want));
        return NULL;
    }
    return x;
}

int64_t kiln_args_int(const kiln_args *a, int i) {
    value *x = get(a, i, KILN_VALUE_INT);
    return !x ? 0 : x->kind == KILN_VALUE_FLOAT ? (int64_t)x->v.f : x->v.i; /* checked in get */
}

double kiln_args_float(const kiln_args *a, int i) {
    value *x = get(a, i, KILN_VALUE_FLOAT);
    return !x ? 0 : x->kind == KILN_VALUE_INT ? (double)x->v.i : x->v.f;
}

const char *kiln_args_str(const kiln_args *a, int i) {
    value *x = get(a, i, KILN_VALUE_STR);
    return x ? x->v.s : NULL;
}

void *ffi_object(const kiln_args *a, int i, kiln_value_kind kind) {
    value *x = get(a, i, kind);
    return x ? x->v.obj : NULL;
}

void *ffi_take_object(kiln_args *a, int i, kiln_value_kind kind, int *owned) {
    value *x = get(a, i, kind);
    if (owned)
        *owned = x && x->free_obj;
    if (!x)
        return NULL;
    x->free_obj = NULL;
    return x->v.obj;
}

kiln_func *kiln_args_func(const kiln_args *a, int i) {
    value *x = get(a, i, KILN_VALUE_FUNC);
    return x ? x->v.fn : NULL;
}

/* ---- functions ---------------------------------------------------------------- */

kiln_func *kiln_func_new(kiln_packed_fn fn, void *user, void (*free_user)(void *)) {
    if (!fn) {
        kiln_set_error(KILN_ERR_INVALID, "kiln_func_new: no function");
        return NULL;
    }
    kiln_func *f = kiln_calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->fn = fn;
    f->user = user;
    f->free_user = free_user;
    f->refs = 1;
    return f;
}

kiln_func *kiln_func_retain(kiln_func *f) {
    if (f)
        __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
    return f;
}

void kiln_func_release(kiln_func *f) {
    if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (f->free_user)
        f->free_user(f->user);
    free(f);
}

kiln_status kiln_func_call(kiln_func *f, const kiln_args *args, kiln_args *ret) {
    if (!f || !ret)
        return kiln_set_error(KILN_ERR_INVALID, "kiln_func_call: no %s",
                              f ? "result list" : "function");
    ffi_args_clear(ret);
    kiln_args empty = {0};
    kiln_clear_error();
    kiln_status st = f->fn(args ? args : &empty, ret, f->user);
    if (st != KILN_OK && !kiln_last_error()[0])
        kiln_set_error(st, "a packed function failed (%s) without a message", kiln_status_str(st));
    return st;
}

/* ---- the registry --------------------------------------------------------------- */

typedef struct {
    char *name;
    kiln_func *fn;
} entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *g_entries;
static int g_n, g_cap;

static int find(const char *name) {
    for (int i = 0; i < g_n; i++)
        if (!strcmp(g_entries[i].name, name))
            return i;
    return -1;
}

kiln_status kiln_func_register(const char *name, kiln_func *f, int override) {
    if (!name || !*name || !f)
        return kiln_set_error(KILN_ERR_INVALID, "kiln_func_register: no %s",
                              f ? "name" : "function");
    kiln_status st = KILN_OK;
    kiln_func *old = NULL;
    pthread_mutex_lock(&g_lock);
    int i = find(name);
    if (i >= 0 && !override) {
        st = kiln_set_error(KILN_ERR_INVALID,
                            "global function '%s' is already registered (override it "
                            "explicitly)",
                            name);
    } else if (i >= 0) {
        old = g_entries[i].fn;
        g_entries[i].fn = kiln_func_retain(f);
    } else {
        char *copy = kiln_strdup(name);
        entry *e = copy ? kiln_grow(g_entries, g_n, &g_cap, 16, sizeof *e) : NULL;
        if (!e) {
            free(copy);
            st = KILN_ERR_NOMEM;
        } else {
            g_entries = e;
            g_entries[g_n].name = copy;
            g_entries[g_n++].fn = kiln_func_retain(f);
        }
    }
    pthread_mutex_unlock(&g_lock);
    kiln_func_release(old); /* outside the lock: its destructor may use the registry */
    return st;
}

kiln_status kiln_func_unregister(const char *name) {
    kiln_func *gone = NULL;
    pthread_mutex_lock(&g_lock);
    int i = name ? find(name) : -1;
    if (i >= 0) {
        free(g_entries[i].name);
        gone = g_entries[i].fn;
        g_entries[i] = g_entries[--g_n];
    }
    pthread_mutex_unlock(&g_lock);
    if (i < 0)
        return kiln_set_error(KILN_ERR_INVALID, "no global function '%s'", name ? name : "");
    kiln_func_release(gone); /* outside the lock: it may run a destructor */
    return KILN_OK;
}

kiln_func *kiln_func_get(const char *name, int quiet) {
    kiln_func *f = NULL;
    pthread_mutex_lock(&g_lock);
    int i = name ? find(name) : -1;
    if (i >= 0)
        f = kiln_func_retain(g_entries[i].fn);
    pthread_mutex_unlock(&g_lock);
    if (!f && !quiet)
        kiln_set_error(KILN_ERR_INVALID, "no global function '%s' is registered", name ? name : "");
    return f;
}

kiln_status kiln_func_call_name(const char *name, const kiln_args *args, kiln_args *ret) {
    kiln_func *f = kiln_func_get(name, 0);
    if (!f)
        return KILN_ERR_INVALID;
    kiln_status st = kiln_func_call(f, args, ret);
    if (st != KILN_OK)
        kiln_error_prefix("global function '%s'", name);
    kiln_func_release(f);
    return st;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *kiln_func_list(void) {
    pthread_mutex_lock(&g_lock);
    size_t len = 1;
    for (int i = 0; i < g_n; i++)
        len += strlen(g_entries[i].name) + 1;
    char **names = kiln_malloc((size_t)(g_n ? g_n : 1) * sizeof *names);
    char *out = kiln_malloc(len);
    if (names && out) {
        for (int i = 0; i < g_n; i++)
            names[i] = g_entries[i].name;
        qsort(names, (size_t)g_n, sizeof *names, cmp_str);
        char *p = out;
        for (int i = 0; i < g_n; i++) {
            size_t n = strlen(names[i]);
            memcpy(p, names[i], n);
            p[n] = '\n';
            p += n + 1;
        }
        *p = 0;
    } else {
        free(out);
        out = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    free(names);
    return out;
}
