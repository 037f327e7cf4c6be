/* npy_internal.h: the in-memory .npy codec that npy.c implements and npz.c
 * uses for the members of an archive. */
#ifndef KILN_NPY_INTERNAL_H
#define KILN_NPY_INTERNAL_H

#include "runtime_internal.h"

/* What a .npy header says, checked against the image's length: the data is
 * nbytes at data_offset, in Fortran order if `fortran`. */
typedef struct {
    kiln_dtype dtype;
    int fortran, ndim;
    int64_t shape[KILN_MAX_NDIM];
    int64_t numel, nbytes;
    size_t data_offset;
} npy_layout;

/* Read and check the header of the .npy image buf[0, len); `name` prefixes
 * every error message. */
KILN_HIDDEN kiln_status kiln_npy_header(const void *buf, size_t len, const char *name,
                                        npy_layout *out);
/* Parse the .npy image buf[0, len); `name` prefixes every error message.
 * Returns a new compact array, or NULL with an error. */
KILN_HIDDEN kiln_ndarray *kiln_npy_parse(const void *buf, size_t len, const char *name);
/* The most bytes a .npy header takes (magic, version, length, dict, padding). */
#define NPY_HEADER_MAX 1024
/* The .npy header of `a` (version 1.0, or 2.0 if it needs it) into out, its
 * length (a multiple of 64: the data follows aligned) into *len. */
KILN_HIDDEN kiln_status npy_header(const kiln_ndarray *a, unsigned char out[NPY_HEADER_MAX],
                                   size_t *len);
/* Serialize `a` (any strides) as a .npy image (version 1.0, or 2.0 if the
 * header needs it) into a malloc'd *buf of *len bytes. */
KILN_HIDDEN kiln_status kiln_npy_serialize(const kiln_ndarray *a, unsigned char **buf, size_t *len);

#endif
