/* compile_cache.h: the kernel cache, a content-addressed store of what the
 * C compiler made (objects and modules) under $XDG_CACHE_HOME/kiln
 * (default ~/.cache/kiln). The toolchain (toolchain.c) keys each compiler
 * job by the SHA-256 of everything that decides its output and asks here
 * before running it. docs/COMPILE_TIME.md describes the layout, the
 * limits and the environment. */
#ifndef KILN_COMPILE_CACHE_H
#define KILN_COMPILE_CACHE_H

#include "../base/sha256.h"

typedef struct codegen_cache codegen_cache;

/* The cache as `setting` says: 1 on, 0 off, -1 on unless $KILN_CACHE is
 * "0" or "off". NULL when off, or when its folder cannot be made or is
 * not private to this user (then with one warning on stderr): the build
 * goes on without it. */
KILN_HIDDEN codegen_cache *codegen_cache_open(int setting);

/* If the entry `key` is there and whole, write its content to `path`, its
 * digest to `digest`, mark it used (eviction takes the least recently
 * used first) and return 1. Else 0: a missing entry, or one that is
 * truncated or corrupt, which is removed with a warning on stderr and
 * never used. */
KILN_HIDDEN int codegen_cache_get(codegen_cache *c, const unsigned char key[KILN_SHA256_BYTES],
                                  const char *path, unsigned char digest[KILN_SHA256_BYTES]);

/* Store the file at `path` as entry `key` and write its digest to
 * `digest`. The entry appears whole or not at all (written aside, then
 * renamed), so concurrent builds may store and read the same keys. A
 * failure to store is silent (a later build compiles again); 0 then, and
 * the digest is still written if the file could be read. Returns 1 when
 * stored. */
KILN_HIDDEN int codegen_cache_put(codegen_cache *c, const unsigned char key[KILN_SHA256_BYTES],
                                  const char *path, unsigned char digest[KILN_SHA256_BYTES]);

/* The folder of the cache (for messages and tests). */
KILN_HIDDEN const char *codegen_cache_dir(const codegen_cache *c);

/* Close the cache. If this build stored entries, the oldest entries
 * (least recently used) are removed until the cache is within its limit:
 * $KILN_CACHE_SIZE bytes (a number with an optional K, M or G suffix),
 * default 1 GiB. NULL is allowed. */
KILN_HIDDEN void codegen_cache_close(codegen_cache *c);

#endif
