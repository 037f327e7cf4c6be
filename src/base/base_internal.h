/* base_internal.h: the base layer shared by every other layer: errors,
 * assertions, the arena, growable strings and small helpers. Hidden from
 * the shared libraries' exported symbols. */
#ifndef KILN_BASE_INTERNAL_H
#define KILN_BASE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base.h"

#if defined(__GNUC__)
#define KILN_HIDDEN __attribute__((visibility("hidden")))
#define KILN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KILN_HIDDEN
#define KILN_PRINTF(a, b)
#endif

/* ---- errors ---------------------------------------------------------------
 * Bad input: record a message for kiln_last_error() and return the status.
 * Broken internal invariant: KILN_ASSERT prints file:line and aborts. */
KILN_HIDDEN kiln_status kiln_set_error(kiln_status st, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Prefix the current error message with "prefix: ". */
KILN_HIDDEN void kiln_error_prefix(const char *fmt, ...) KILN_PRINTF(1, 2);
KILN_HIDDEN _Noreturn void kiln_assert_fail(const char *expr, const char *file, int line);
#define KILN_ASSERT(c) ((c) ? (void)0 : kiln_assert_fail(#c, __FILE__, __LINE__))

/* ---- dtypes ---------------------------------------------------------------- */
/* Whether dt is an element dtype (a valid value other than KILN_HANDLE). */
static inline int kiln_dtype_is_data(kiln_dtype dt) {
    return (unsigned)dt < KILN_DTYPE_COUNT && dt != KILN_HANDLE;
}
/* Whether dt is an unsigned integer dtype (bool is not). */
static inline int kiln_dtype_is_unsigned(kiln_dtype dt) {
    return dt == KILN_UINT8 || dt == KILN_UINT16 || dt == KILN_UINT32 || dt == KILN_UINT64;
}
/* The least and greatest value of integer dtype dt (bool: 0 and 1) as
 * int64 bit patterns: uint64's greatest is held as -1. */
static inline int64_t kiln_dtype_int_min(kiln_dtype dt) {
    if (dt == KILN_BOOL || kiln_dtype_is_unsigned(dt))
        return 0;
    return dt == KILN_INT8    ? INT8_MIN
           : dt == KILN_INT16 ? INT16_MIN
           : dt == KILN_INT32 ? INT32_MIN
                              : INT64_MIN;
}
static inline int64_t kiln_dtype_int_max(kiln_dtype dt) {
    switch (dt) {
    case KILN_BOOL: return 1;
    case KILN_INT8: return INT8_MAX;
    case KILN_UINT8: return UINT8_MAX;
    case KILN_INT16: return INT16_MAX;
    case KILN_UINT16: return UINT16_MAX;
    case KILN_INT32: return INT32_MAX;
    case KILN_UINT32: return UINT32_MAX;
    case KILN_UINT64: return -1;
    default: return INT64_MAX;
    }
}

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
KILN_HIDDEN int kiln_hex_digit(char c);

/* ---- memory ---------------------------------------------------------------- */
/* malloc/calloc/realloc that record KILN_ERR_NOMEM on failure. */
KILN_HIDDEN void *kiln_malloc(size_t n);
KILN_HIDDEN void *kiln_calloc(size_t n, size_t size);
KILN_HIDDEN void *kiln_realloc(void *p, size_t n);
KILN_HIDDEN char *kiln_strdup(const char *s);
/* Room for one more element in arr (n used of *cap, each elem bytes),
 * doubling from `first`: the array (maybe moved; *cap updated), or NULL
 * with KILN_ERR_NOMEM and arr left as it was. */
KILN_HIDDEN void *kiln_grow(void *arr, int n, int *cap, int first, size_t elem);

/* A bump allocator: everything is freed at once by arena_free. */
typedef struct arena arena;
KILN_HIDDEN arena *arena_new(void);
KILN_HIDDEN void arena_free(arena *a);
/* Zeroed, 16-byte aligned memory that lives as long as the arena. */
KILN_HIDDEN void *arena_alloc(arena *a, size_t n);
KILN_HIDDEN char *arena_strdup(arena *a, const char *s);

/* ---- growable strings ------------------------------------------------------ */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom; /* set once an allocation failed; the string is then truncated */
} kstr;

KILN_HIDDEN void kstr_init(kstr *s);
KILN_HIDDEN void kstr_free(kstr *s);
KILN_HIDDEN void kstr_puts(kstr *s, const char *t);
KILN_HIDDEN void kstr_putc(kstr *s, char c);
KILN_HIDDEN void kstr_printf(kstr *s, const char *fmt, ...) KILN_PRINTF(2, 3);
KILN_HIDDEN void kstr_vprintf(kstr *s, const char *fmt, va_list ap);
KILN_HIDDEN void kstr_indent(kstr *s, int level); /* 2 spaces a level */
/* Give the buffer to the caller (malloc'd, NUL-terminated, never NULL
 * unless allocation failed) and reset s. */
KILN_HIDDEN char *kstr_take(kstr *s);

/* ---- files --------------------------------------------------------------- */
/* Read a whole file (malloc'd, NUL-terminated); sets *len. NULL + error. */
KILN_HIDDEN char *kiln_read_file(const char *path, size_t *len);
KILN_HIDDEN kiln_status kiln_write_file(const char *path, const void *data, size_t len);

/* ---- integer helpers ------------------------------------------------------ */
/* a*b and a+b for sizes; return 0 on overflow (and leave *out unset). */
KILN_HIDDEN int kiln_mul_ok(int64_t a, int64_t b, int64_t *out);
KILN_HIDDEN int kiln_add_ok(int64_t a, int64_t b, int64_t *out);
KILN_HIDDEN int64_t kiln_floordiv_i64(int64_t a, int64_t b);
KILN_HIDDEN int64_t kiln_floormod_i64(int64_t a, int64_t b);

/* ---- clocks and pseudo-random numbers ------------------------------------- */
/* Seconds on the monotonic clock (for intervals). */
KILN_HIDDEN double kiln_now_s(void);
/* One xorshift64 step of *state (non-zero): the next value, also stored. */
KILN_HIDDEN uint64_t kiln_xorshift64(uint64_t *state);

#endif
