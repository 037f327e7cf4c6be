/* runtime_internal.h: runtime functions the compiler side uses but users
 * do not: loading a module built into a temporary folder or held in memory. */
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H

#include "../base/base_internal.h"
#include "kiln/runtime.h"
#include "module_abi.h"

/* Load the module at so_path. If tmpdir is not NULL, the module owns that
 * folder and removes it (and the files in it) when freed. */
KILN_HIDDEN kiln_module *kiln_module_load_owned(const char *so_path, const char *tmpdir);
/* Load the module whose shared object is bytes[0, len) from memory: a
 * memfd (or, without memfd, an unnamed O_TMPFILE file in $TMPDIR) that
 * dlopen opens as /proc/self/fd/N, so no file is left behind even by a
 * crash. `what` names it in errors ("model.tar: mod.so"). */
KILN_HIDDEN kiln_module *kiln_module_load_image(const void *bytes, size_t len, const char *what);
/* Let the pool's spinning workers sleep now: a function of another
 * library with threads of its own (kiln/byoc.h) is about to run, and
 * spinning would take the cores it needs. */
KILN_HIDDEN void kiln_pool_quiet(void);
/* Tests set this to take the O_TMPFILE path instead of memfd. */
KILN_HIDDEN extern int kiln_module_image_no_memfd;

/* Parse the .npz (ZIP) image buf[0, len); `name` prefixes every error
 * message (NULL: "<memory>"). A new set, or NULL with an error. */
KILN_HIDDEN kiln_npz *kiln_npz_parse(const void *buf, size_t len, const char *name);
/* kiln_npz_parse of the malloc'd image buf, which the set takes (and frees,
 * on failure too): stored members that need no conversion become views
 * into it, each moved to a KILN_ALIGNMENT boundary, so the arrays are in
 * memory once. */
KILN_HIDDEN kiln_npz *npz_parse_take(void *buf, size_t len, const char *name);
/* Where npz_write_sink puts an archive's bytes. */
typedef struct npz_sink {
    /* Append p[0, n): 0, or -1 with an error set. */
    int (*put)(struct npz_sink *k, const void *p, size_t n);
    int count_only; /* 1: nothing is put or read, the bytes are only counted */
} npz_sink;
/* The archive of z (deflated if compress) into k, its size into *size. A
 * stored member whose array is contiguous goes out from the array itself
 * (one put of all its data), never copied. KILN_ERR_IO when k failed (k set the error). */
KILN_HIDDEN kiln_status npz_write_sink(const kiln_npz *z, int compress, npz_sink *k,
                                       uint64_t *size);
/* The size of z's archive with stored members, without making it. */
KILN_HIDDEN kiln_status npz_stored_size(const kiln_npz *z, uint64_t *size);
/* a's data if it is a view into z's image (npz_parse_take), else NULL. */
KILN_HIDDEN void *npz_blob_data(const kiln_npz *z, const kiln_ndarray *a);
/* Hand z's image to the caller (who frees it once done with the views'
 * data); z's views stay valid until then. */
KILN_HIDDEN void *npz_take_blob(kiln_npz *z, size_t *len);
/* kiln_npz_add without the copy: the member shares a's storage
 * (ndarray_share), which must not be written while z holds it; a
 * non-contiguous a is copied. */
KILN_HIDDEN kiln_status npz_add_shared(kiln_npz *z, const char *name, kiln_ndarray *a);
/* Member `name` of z, writable (NULL if absent). */
KILN_HIDDEN kiln_ndarray *npz_get_mutable(kiln_npz *z, const char *name);
/* A compact copy of a with storage of its own; NULL with an error. */
KILN_HIDDEN kiln_ndarray *ndarray_clone(const kiln_ndarray *a);
/* kiln_ndarray_empty without the zero fill: the caller writes every element. */
KILN_HIDDEN kiln_ndarray *ndarray_empty_uninit(kiln_dtype dt, int ndim, const int64_t *shape);
/* A compact array that owns the malloc'd block `base` (freed with free) and
 * holds its elements from base + offset, which must be KILN_ALIGNMENT-aligned;
 * the block must hold them (the caller checked the size). NULL with an error
 * (then the caller still owns base). */
KILN_HIDDEN kiln_ndarray *ndarray_adopt(void *base, int64_t offset, kiln_dtype dt, int ndim,
                                        const int64_t *shape);
/* Copy the elements of shape from s to d, with strides in elements of es
 * bytes (ndarray_copy.c): kiln_ndarray_copy's loops, tiled for a transpose.
 * The two ranges must not overlap. */
KILN_HIDDEN void ndarray_copy_strided(unsigned char *d, const int64_t *dst_strides,
                                      const unsigned char *s, const int64_t *src_strides, int nd,
                                      const int64_t *shape, size_t es);
/* Another array over a's storage, which lives until the last of them is
 * freed (a reference count); a must not be written while shared. Storage
 * a does not own is copied instead. NULL with an error. */
KILN_HIDDEN kiln_ndarray *ndarray_share(kiln_ndarray *a);
/* Take a's storage if a owns it, is C-contiguous from offset 0 and
 * KILN_ALIGNMENT-aligned: returns it (the caller frees it with free) and
 * leaves a a view of it; else NULL. */
KILN_HIDDEN void *ndarray_take_data(kiln_ndarray *a);
/* Point a, a view that owns nothing (kiln_ndarray_wrap's), at data as a
 * compact array of its dtype and rank with this shape; data must hold it.
 * Allocates nothing (the graph executor moves its views between runs). */
KILN_HIDDEN void ndarray_rewrap(kiln_ndarray *a, void *data, const int64_t *shape);

/* The workspace pool (workspace.c) behind the module API's scratch
 * buffers: 64-byte aligned, NULL when out of memory; free takes NULL. */
KILN_HIDDEN void *kiln_workspace_alloc(size_t bytes);
KILN_HIDDEN void kiln_workspace_free(void *p);

/* ---- for the graph executor (module.c, package.c) ---- */
/* Number of symbolic sizes (vars[]) f takes. */
KILN_HIDDEN int kiln_function_num_vars(const kiln_function *f);
/* The name of symbolic size k (module_abi.h's "var" line), or NULL. */
KILN_HIDDEN const char *kiln_function_var_name(const kiln_function *f, int k);
/* Signature of argument i: dtype, rank, dims (>= 0 fixed, -1 - k the
 * symbolic size vars[k]; owned by the module). 0 if i is out of range. */
KILN_HIDDEN int kiln_function_arg_info(const kiln_function *f, int i, kiln_dtype *dtype, int *ndim,
                                       const int64_t **dims);
/* The kernel entry point, to call without per-call checks. */
KILN_HIDDEN kiln_kernel_fn kiln_function_kernel(const kiln_function *f);

/* Read the package (tar) at path, its manifest verified and mod.so checked
 * before it is loaded: mod.json into *text (malloc'd, NUL-terminated,
 * *text_len bytes), mod.so loaded from memory into *mod and mod.params
 * into *params. */
KILN_HIDDEN kiln_status kiln_package_read(const char *path, char **text, size_t *text_len,
                                          kiln_module **mod, kiln_npz **params);
/* Read the package image buf[0, len) (`name` prefixes errors) the same way,
 * its manifest verified, without checking or loading its module: mod.json into *text (malloc'd,
 * NUL-terminated, *text_len bytes), mod.so's bytes into *so (malloc'd, *so_len bytes) and
 * mod.params into *params. */
KILN_HIDDEN kiln_status kiln_package_parse(const void *buf, size_t len, const char *name,
                                           char **text, size_t *text_len, unsigned char **so,
                                           size_t *so_len, kiln_npz **params);
/* A module without a shared object: its functions are described by `meta`
 * (the text a module exports as kiln_module_meta, checked as strictly) and
 * their kernels come from lookup(user, name) (NULL: not exported). `what`
 * names it in errors. For tests and the package fuzzer; NULL with an error. */
KILN_HIDDEN kiln_module *
kiln_module_from_meta(const char *what, const char *meta,
                      kiln_kernel_fn (*lookup)(void *user, const char *name), void *user);

#endif
