/* ffi_internal.h: what the layers that own arrays and graphs need to put
 * them in value lists (kiln/ffi.h). */
#ifndef KILN_FFI_INTERNAL_H
#define KILN_FFI_INTERNAL_H

#include "base_internal.h"
#include "kiln/ffi.h"

/* Push an array or graph; free_obj (NULL: borrowed) frees it with the list. */
KILN_HIDDEN kiln_status ffi_push_object(kiln_args *a, kiln_value_kind kind, void *obj,
                                        void (*free_obj)(void *));
/* Value i as an object of `kind`, or NULL with an error. */
KILN_HIDDEN void *ffi_object(const kiln_args *a, int i, kiln_value_kind kind);
KILN_HIDDEN void *ffi_take_object(kiln_args *a, int i, kiln_value_kind kind, int *owned);
/* Empty the list (freeing what it owns). */
KILN_HIDDEN void ffi_args_clear(kiln_args *a);

#endif
