/* ndarray.c: n-dimensional arrays: 64-byte aligned owned storage or views of
 * other storage, with strides in elements and a byte offset. Every view keeps
 * the byte range of its storage so that views made from it can be checked. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../base/ffi_internal.h"
#include "runtime_internal.h"

struct kiln_ndarray {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_NDIM];
    int64_t strides[KILN_MAX_NDIM]; /* in elements */
    int64_t byte_offset;            /* of element 0 from `data` */
    unsigned char *data;            /* storage base */
    int owns;                       /* free `data` with the array */
    atomic_int *refs;               /* owned storage shared by several arrays: their count */
    int64_t lo, hi;                 /* valid storage bytes: [data + lo, data + hi) */
};

static kiln_status check_dtype(kiln_dtype dt) {
    if ((unsigned)dt >= KILN_DTYPE_COUNT || dt == KILN_HANDLE)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray: invalid dtype %d", (int)dt);
    return KILN_OK;
}

/* Check rank and shape; sets *numel. */
static kiln_status check_shape(int ndim, const int64_t *shape, int64_t *numel) {
    if (ndim < 0 || ndim > KILN_MAX_NDIM)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray: rank %d is outside [0, %d]", ndim,
                              KILN_MAX_NDIM);
    if (ndim > 0 && !shape)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray: shape is NULL");
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return kiln_set_error(KILN_ERR_INVALID, "ndarray: dim %d is negative (%lld)", i,
                                  (long long)shape[i]);
        if (!kiln_mul_ok(n, shape[i], &n))
            return kiln_set_error(KILN_ERR_INVALID, "ndarray: the element count overflows");
    }
    *numel = n;
    return KILN_OK;
}

static void compact_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        /* an empty array's other dims may multiply past int64: saturate (no
           element is ever addressed through these strides) */
        if (!kiln_mul_ok(s, shape[i] > 0 ? shape[i] : 1, &s))
            s = INT64_MAX;
    }
}

/* The byte range [*lo, *hi) that a layout touches; empty (lo == hi) if it has
 * no elements. Returns 0 on overflow. */
static int layout_reach(int ndim, const int64_t *shape, const int64_t *strides, size_t esize,
                        int64_t byte_offset, int64_t *lo, int64_t *hi) {
    int64_t mn = 0, mx = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *lo = *hi = byte_offset;
            return 1;
        }
    }
    for (int i = 0; i < ndim; i++) {
        int64_t ext;
        if (!kiln_mul_ok(shape[i] - 1, strides[i], &ext))
            return 0;
        if (!kiln_mul_ok(ext, (int64_t)esize, &ext))
            return 0;
        if (ext < 0) {
            if (!kiln_add_ok(mn, ext, &mn))
                return 0;
        } else {
            if (!kiln_add_ok(mx, ext, &mx))
                return 0;
        }
    }
    if (!kiln_add_ok(mn, byte_offset, &mn))
        return 0;
    if (!kiln_add_ok(mx, byte_offset, &mx))
        return 0;
    if (!kiln_add_ok(mx, (int64_t)esize, &mx))
        return 0;
    *lo = mn;
    *hi = mx;
    return 1;
}

/* Allocate a header for a layout; strides NULL means compact. */
static kiln_ndarray *make_header(kiln_dtype dt, int ndim, const int64_t *shape,
                                 const int64_t *strides, int64_t byte_offset) {
    kiln_ndarray *a = kiln_calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->dtype = dt;
    a->ndim = ndim;
    if (ndim > 0)
        memcpy(a->shape, shape, (size_t)ndim * sizeof(int64_t));
    if (strides && ndim > 0)
        memcpy(a->strides, strides, (size_t)ndim * sizeof(int64_t));
    else
        compact_strides(ndim, a->shape, a->strides);
    a->byte_offset = byte_offset;
    return a;
}

/* A compact array of its own 64-byte aligned storage: zero-filled if `zero`,
 * else only the padding past its last element (the caller writes the rest). */
static kiln_ndarray *empty_with(kiln_dtype dt, int ndim, const int64_t *shape, int zero) {
    int64_t numel, nbytes;
    if (check_dtype(dt) || check_shape(ndim, shape, &numel))
        return NULL;
    if (!kiln_mul_ok(numel, (int64_t)kiln_dtype_size(dt), &nbytes) ||
        nbytes > INT64_MAX - KILN_ALIGNMENT) {
        kiln_set_error(KILN_ERR_INVALID, "ndarray: the size in bytes overflows");
        return NULL;
    }
    size_t alloc = ((size_t)nbytes + KILN_ALIGNMENT - 1) & ~(size_t)(KILN_ALIGNMENT - 1);
    if (alloc == 0)
        alloc = KILN_ALIGNMENT;
    void *mem = NULL;
    if (posix_memalign(&mem, KILN_ALIGNMENT, alloc) != 0) {
        kiln_set_error(KILN_ERR_NOMEM, "ndarray: out of memory (%lld bytes)", (long long)nbytes);
        return NULL;
    }
    if (zero)
        memset(mem, 0, alloc);
    else
        memset((unsigned char *)mem + nbytes, 0, alloc - (size_t)nbytes);
    kiln_ndarray *a = make_header(dt, ndim, shape, NULL, 0);
    if (!a) {
        free(mem);
        return NULL;
    }
    a->data = mem;
    a->owns = 1;
    a->lo = 0;
    a->hi = nbytes;
    return a;
}

kiln_ndarray *kiln_ndarray_empty(kiln_dtype dt, int ndim, const int64_t *shape) {
    return empty_with(dt, ndim, shape, 1);
}

kiln_ndarray *ndarray_empty_uninit(kiln_dtype dt, int ndim, const int64_t *shape) {
    return empty_with(dt, ndim, shape, 0);
}

kiln_ndarray *ndarray_adopt(void *base, int64_t offset, kiln_dtype dt, int ndim,
                            const int64_t *shape) {
    int64_t numel;
    KILN_ASSERT(base && offset >= 0 && ((uintptr_t)base + (uintptr_t)offset) % KILN_ALIGNMENT == 0);
    if (check_dtype(dt) || check_shape(ndim, shape, &numel))
        return NULL;
    kiln_ndarray *a = make_header(dt, ndim, shape, NULL, offset);
    if (!a)
        return NULL;
    a->data = base;
    a->owns = 1;
    a->lo = offset;
    a->hi = offset + numel * (int64_t)kiln_dtype_size(dt);
    return a;
}

kiln_ndarray *kiln_ndarray_wrap(void *data, kiln_dtype dt, int ndim, const int64_t *shape,
                                const int64_t *strides, int64_t byte_offset) {
    int64_t numel, lo, hi;
    if (check_dtype(dt) || check_shape(ndim, shape, &numel))
        return NULL;
    if (!data && numel > 0) {
        kiln_set_error(KILN_ERR_INVALID, "ndarray: wrap of a NULL pointer");
        return NULL;
    }
    kiln_ndarray *a = make_header(dt, ndim, shape, strides, byte_offset);
    if (!a)
        return NULL;
    if (!layout_reach(ndim, a->shape, a->strides, kiln_dtype_size(dt), byte_offset, &lo, &hi)) {
        free(a);
        kiln_set_error(KILN_ERR_INVALID, "ndarray: the strides overflow");
        return NULL;
    }
    a->data = data;
    a->lo = lo;
    a->hi = hi;
    return a;
}

kiln_ndarray *kiln_ndarray_view(const kiln_ndarray *base, int ndim, const int64_t *shape,
                                const int64_t *strides, int64_t byte_offset) {
    int64_t numel, lo, hi;
    if (!base) {
        kiln_set_error(KILN_ERR_INVALID, "ndarray: view of a NULL array");
        return NULL;
    }
    if (check_shape(ndim, shape, &numel))
        return NULL;
    size_t es = kiln_dtype_size(base->dtype);
    if (byte_offset % (int64_t)es != 0) {
        kiln_set_error(KILN_ERR_INVALID,
                       "ndarray: view byte offset %lld is not a multiple of the %zu-byte element",
                       (long long)byte_offset, es);
        return NULL;
    }
    kiln_ndarray *a = make_header(base->dtype, ndim, shape, strides, byte_offset);
    if (!a)
        return NULL;
    if (!layout_reach(ndim, a->shape, a->strides, es, byte_offset, &lo, &hi)) {
        free(a);
        kiln_set_error(KILN_ERR_INVALID, "ndarray: the view's strides overflow");
        return NULL;
    }
    if (lo < hi && (lo < base->lo || hi > base->hi)) {
        free(a);
        kiln_set_error(KILN_ERR_INVALID,
                       "ndarray: view reaches bytes [%lld, %lld) outside the storage [%lld, %lld)",
                       (long long)lo, (long long)hi, (long long)base->lo, (long long)base->hi);
        return NULL;
    }
    a->data = base->data;
    a->lo = base->lo;
    a->hi = base->hi;
    return a;
}

kiln_ndarray *ndarray_clone(const kiln_ndarray *a) {
    if (!a)
        return NULL;
    kiln_ndarray *c = ndarray_empty_uninit(a->dtype, a->ndim, a->shape);
    if (c && kiln_ndarray_copy(c, a) != KILN_OK) {
        kiln_ndarray_free(c);
        c = NULL;
    }
    return c;
}

kiln_ndarray *ndarray_share(kiln_ndarray *a) {
    if (!a)
        return NULL;
    if (!a->owns)
        return ndarray_clone(a); /* storage someone else frees */
    kiln_ndarray *b = kiln_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    if (!a->refs) {
        a->refs = malloc(sizeof *a->refs);
        if (!a->refs) {
            free(b);
            kiln_set_error(KILN_ERR_NOMEM, "ndarray: out of memory");
            return NULL;
        }
        atomic_init(a->refs, 1);
    }
    atomic_fetch_add(a->refs, 1);
    *b = *a;
    return b;
}

void *ndarray_take_data(kiln_ndarray *a) {
    if (!a || !a->owns || a->byte_offset || ((uintptr_t)a->data % KILN_ALIGNMENT))
        return NULL;
    if (a->refs && atomic_load(a->refs) > 1)
        return NULL; /* others read it too */
    int64_t step = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] != 1 && a->strides[d] != step)
            return NULL;
        step *= a->shape[d];
    }
    a->owns = 0;
    free(a->refs);
    a->refs = NULL;
    return a->data;
}

void ndarray_rewrap(kiln_ndarray *a, void *data, const int64_t *shape) {
    KILN_ASSERT(!a->owns && data);
    memcpy(a->shape, shape, (size_t)a->ndim * sizeof(int64_t));
    compact_strides(a->ndim, a->shape, a->strides);
    a->byte_offset = 0;
    a->data = data;
    int ok =
        layout_reach(a->ndim, a->shape, a->strides, kiln_dtype_size(a->dtype), 0, &a->lo, &a->hi);
    KILN_ASSERT(ok); /* the executor's shapes stay under 1 TiB */
}

void kiln_ndarray_free(kiln_ndarray *a) {
    if (!a)
        return;
    if (a->owns && (!a->refs || atomic_fetch_sub(a->refs, 1) == 1)) {
        free(a->data);
        free(a->refs);
    }
    free(a);
}

kiln_status kiln_ndarray_copy(kiln_ndarray *dst, const kiln_ndarray *src) {
    if (!dst || !src)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray_copy: NULL array");
    if (dst->dtype != src->dtype)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray_copy: dtype %s into %s",
                              kiln_dtype_name(src->dtype), kiln_dtype_name(dst->dtype));
    int same = dst->ndim == src->ndim;
    for (int i = 0; same && i < dst->ndim; i++)
        same = dst->shape[i] == src->shape[i];
    if (!same)
        return kiln_set_error(KILN_ERR_INVALID, "ndarray_copy: shapes differ (rank %d and %d)",
                              src->ndim, dst->ndim);
    int64_t n = kiln_ndarray_numel(src);
    if (n == 0)
        return KILN_OK;
    size_t es = kiln_dtype_size(src->dtype);
    unsigned char *d = kiln_ndarray_data(dst);
    const unsigned char *s = kiln_ndarray_data(src);
    if (kiln_ndarray_is_contiguous(dst) && kiln_ndarray_is_contiguous(src)) {
        memmove(d, s, (size_t)n * es);
        return KILN_OK;
    }
    ndarray_copy_strided(d, dst->strides, s, src->strides, src->ndim, src->shape, es);
    return KILN_OK;
}

kiln_dtype kiln_ndarray_dtype(const kiln_ndarray *a) {
    return a->dtype;
}

int kiln_ndarray_ndim(const kiln_ndarray *a) {
    return a->ndim;
}

int64_t kiln_ndarray_dim(const kiln_ndarray *a, int i) {
    return i >= 0 && i < a->ndim ? a->shape[i] : -1;
}

int64_t kiln_ndarray_stride(const kiln_ndarray *a, int i) {
    return i >= 0 && i < a->ndim ? a->strides[i] : 0;
}

int64_t kiln_ndarray_byte_offset(const kiln_ndarray *a) {
    return a->byte_offset;
}

int64_t kiln_ndarray_numel(const kiln_ndarray *a) {
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

void *kiln_ndarray_data(const kiln_ndarray *a) {
    return a->data ? a->data + a->byte_offset : NULL;
}

int kiln_ndarray_is_contiguous(const kiln_ndarray *a) {
    int64_t s = 1;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] == 0)
            return 1;
        if (a->shape[i] != 1 && a->strides[i] != s)
            return 0;
        s *= a->shape[i];
    }
    return 1;
}

/* ---- arrays in value lists (kiln/ffi.h) ---------------------------------------- */

static void free_array(void *p) {
    kiln_ndarray_free(p);
}

kiln_status kiln_args_push_array(kiln_args *a, kiln_ndarray *arr, int take) {
    return ffi_push_object(a, KILN_VALUE_ARRAY, arr, take ? free_array : NULL);
}

kiln_ndarray *kiln_args_array(const kiln_args *a, int i) {
    return ffi_object(a, i, KILN_VALUE_ARRAY);
}

kiln_ndarray *kiln_args_take_array(kiln_args *a, int i, int *owned) {
    return ffi_take_object(a, i, KILN_VALUE_ARRAY, owned);
}
