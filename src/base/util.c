/* util.c: checked allocation, the arena, growable strings, whole-file I/O,
 * overflow-checked integer helpers and dtype names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base_internal.h"

void *kiln_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        kiln_set_error(KILN_ERR_NOMEM, "out of memory (%zu bytes)", n);
    return p;
}

void *kiln_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        kiln_set_error(KILN_ERR_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
    return p;
}

void *kiln_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q)
        kiln_set_error(KILN_ERR_NOMEM, "out of memory (%zu bytes)", n);
    return q;
}

void *kiln_grow(void *arr, int n, int *cap, int first, size_t elem) {
    if (n < *cap)
        return arr;
    int c = *cap ? 2 * *cap : first;
    void *p = kiln_realloc(arr, (size_t)c * elem);
    if (p)
        *cap = c;
    return p;
}

char *kiln_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = kiln_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- arena: a list of blocks, each at least 64 KiB ---- */
typedef struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} block;

struct arena {
    block *head;
};

arena *arena_new(void) {
    return kiln_calloc(1, sizeof(arena));
}

void arena_free(arena *a) {
    if (!a)
        return;
    for (block *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(a);
}

void *arena_alloc(arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof(block) + cap);
        KILN_ASSERT(b && "arena allocation failed");
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strdup(arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(a, n);
    memcpy(d, s, n);
    return d;
}

/* ---- kstr ---- */
void kstr_init(kstr *s) {
    memset(s, 0, sizeof *s);
}

void kstr_free(kstr *s) {
    free(s->buf);
    kstr_init(s);
}

static int kstr_reserve(kstr *s, size_t extra) {
    if (s->oom)
        return 0;
    if (s->len + extra + 1 <= s->cap)
        return 1;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + extra + 1)
        cap *= 2;
    char *b = realloc(s->buf, cap);
    if (!b) {
        s->oom = 1;
        return 0;
    }
    s->buf = b;
    s->cap = cap;
    return 1;
}

void kstr_puts(kstr *s, const char *t) {
    size_t n = strlen(t);
    if (!kstr_reserve(s, n))
        return;
    memcpy(s->buf + s->len, t, n + 1);
    s->len += n;
}

void kstr_putc(kstr *s, char c) {
    if (!kstr_reserve(s, 1))
        return;
    s->buf[s->len++] = c;
    s->buf[s->len] = 0;
}

void kstr_vprintf(kstr *s, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !kstr_reserve(s, (size_t)n))
        return;
    vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
}

void kstr_printf(kstr *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kstr_vprintf(s, fmt, ap);
    va_end(ap);
}

void kstr_indent(kstr *s, int level) {
    for (int i = 0; i < level; i++)
        kstr_puts(s, "  ");
}

char *kstr_take(kstr *s) {
    char *b = s->buf;
    if (s->oom) {
        free(b);
        b = NULL;
        kiln_set_error(KILN_ERR_NOMEM, "out of memory building a string");
    } else if (!b) {
        b = kiln_calloc(1, 1);
    }
    kstr_init(s);
    return b;
}

/* ---- files ---- */
char *kiln_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    kstr s;
    kstr_init(&s);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (!kstr_reserve(&s, n))
            break;
        memcpy(s.buf + s.len, buf, n);
        s.len += n;
        s.buf[s.len] = 0;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        kstr_free(&s);
        kiln_set_error(KILN_ERR_IO, "%s: read error", path);
        return NULL;
    }
    size_t l = s.len;
    char *out = kstr_take(&s);
    if (out && len)
        *len = l;
    return out;
}

kiln_status kiln_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    int bad = (w != len) | (fclose(f) != 0);
    if (bad)
        return kiln_set_error(KILN_ERR_IO, "%s: write error", path);
    return KILN_OK;
}

/* ---- integers ---- */
int kiln_mul_ok(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}

int kiln_add_ok(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}

int64_t kiln_floordiv_i64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int64_t kiln_floormod_i64(int64_t a, int64_t b) {
    return a - kiln_floordiv_i64(a, b) * b;
}

/* ---- dtypes ---- */
static const struct {
    const char *name;
    size_t size;
} g_dtypes[KILN_DTYPE_COUNT] = {
    [KILN_FLOAT32] = {"float32", 4},   [KILN_FLOAT16] = {"float16", 2},
    [KILN_BFLOAT16] = {"bfloat16", 2}, [KILN_INT8] = {"int8", 1},
    [KILN_UINT8] = {"uint8", 1},       [KILN_INT32] = {"int32", 4},
    [KILN_INT64] = {"int64", 8},       [KILN_BOOL] = {"bool", 1},
    [KILN_FLOAT64] = {"float64", 8},   [KILN_HANDLE] = {"handle", 8},
    [KILN_UINT16] = {"uint16", 2},     [KILN_UINT32] = {"uint32", 4},
    [KILN_UINT64] = {"uint64", 8},     [KILN_INT16] = {"int16", 2},
};

size_t kiln_dtype_size(kiln_dtype dt) {
    return (unsigned)dt < KILN_DTYPE_COUNT ? g_dtypes[dt].size : 0;
}

const char *kiln_dtype_name(kiln_dtype dt) {
    return (unsigned)dt < KILN_DTYPE_COUNT ? g_dtypes[dt].name : "invalid";
}

kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out) {
    for (int i = 0; i < KILN_DTYPE_COUNT; i++) {
        if (strcmp(name, g_dtypes[i].name) == 0) {
            *out = (kiln_dtype)i;
            return KILN_OK;
        }
    }
    return kiln_set_error(KILN_ERR_INVALID, "unknown dtype '%s'", name);
}

int kiln_hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

double kiln_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t kiln_xorshift64(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}
