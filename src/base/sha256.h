/* sha256.h: SHA-256 (FIPS 180-4), for the package manifest's member
 * digests. Incremental: init, update any number of times, final. */
#ifndef KILN_SHA256_H
#define KILN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "base_internal.h"

#define KILN_SHA256_BYTES 32
/* A digest as lowercase hex, with its NUL. */
#define KILN_SHA256_HEX 65

typedef struct {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    unsigned char block[64];
    size_t used; /* bytes waiting in block */
} kiln_sha256;

/* Start a new digest. */
KILN_HIDDEN void kiln_sha256_init(kiln_sha256 *s);
/* Add len bytes of data (data may be NULL when len is 0). */
KILN_HIDDEN void kiln_sha256_update(kiln_sha256 *s, const void *data, size_t len);
/* Finish: the 32-byte digest into out; s must be initialized again to reuse. */
KILN_HIDDEN void kiln_sha256_final(kiln_sha256 *s, unsigned char out[KILN_SHA256_BYTES]);
/* The digest of data[0, len) as 64 lowercase hex digits and a NUL. */
KILN_HIDDEN void kiln_sha256_hex(const void *data, size_t len, char out[KILN_SHA256_HEX]);
/* Whether whole blocks go through the CPU's SHA extensions (x86-64): with
 * use -1, as this CPU allows (decided once); 0 or 1 to choose, for tests
 * of both paths (1 only takes where the CPU has them). Returns the choice. */
KILN_HIDDEN int kiln_sha256_accelerated(int use);
/* A finished digest as 64 lowercase hex digits and a NUL. */
KILN_HIDDEN void kiln_sha256_to_hex(const unsigned char d[KILN_SHA256_BYTES],
                                    char out[KILN_SHA256_HEX]);

#endif
