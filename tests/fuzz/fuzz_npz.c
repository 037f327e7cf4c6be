/* fuzz_npz.c: libFuzzer target for the runtime's numpy readers. Every input
 * goes through both kiln_npy_parse (a .npy image) and kiln_npz_parse (a ZIP
 * of .npy members, stored or deflated). An array that parses is serialized
 * again and must parse back to the same dtype, shape and bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npy_internal.h"

/* Inputs past this are skipped. It bounds time and memory per input: a
 * deflated member may claim up to 1100 times its compressed size, so this
 * keeps one archive's arrays to a few hundred MiB. */
#define FUZZ_MAX_INPUT (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t nbytes(const kiln_ndarray *a) {
    return (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a));
}

/* Abort unless a survives kiln_npy_serialize + kiln_npy_parse unchanged. */
static void check_round_trip(const kiln_ndarray *a) {
    unsigned char *buf = NULL;
    size_t len = 0;
    if (kiln_npy_serialize(a, &buf, &len) != KILN_OK)
        return; /* no numpy dtype, or no memory */
    kiln_ndarray *b = kiln_npy_parse(buf, len, "round trip");
    free(buf);
    int same = b && kiln_ndarray_dtype(a) == kiln_ndarray_dtype(b) &&
               kiln_ndarray_ndim(a) == kiln_ndarray_ndim(b);
    for (int i = 0; same && i < kiln_ndarray_ndim(a); i++)
        same = kiln_ndarray_dim(a, i) == kiln_ndarray_dim(b, i);
    same = same && memcmp(kiln_ndarray_data(a), kiln_ndarray_data(b), nbytes(a)) == 0;
    if (!same) {
        fprintf(stderr, "fuzz_npz: serialize + parse changed the array: %s\n",
                b ? "different dtype, shape or bytes" : kiln_last_error());
        abort();
    }
    kiln_ndarray_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    kiln_ndarray *a = kiln_npy_parse(data, size, "fuzz.npy");
    if (a)
        check_round_trip(a);
    kiln_ndarray_free(a);

    kiln_npz *z = kiln_npz_parse(data, size, "fuzz.npz");
    for (int i = 0; i < kiln_npz_count(z); i++) {
        const char *name = kiln_npz_name(z, i);
        if (kiln_npz_get(z, name) != kiln_npz_array(z, i)) {
            fprintf(stderr, "fuzz_npz: member %d '%s' is not found by its name\n", i, name);
            abort();
        }
        check_round_trip(kiln_npz_array(z, i));
    }
    kiln_npz_free(z);
    return 0;
}
