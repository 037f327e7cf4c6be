/* package_util.h: writing package archives by hand for tests: ustar
 * members and the manifest.json that lists the others (package format 2,
 * include/kiln/runtime.h), so a test can build a package that is whole
 * except for the one fault it checks. */
#ifndef KILN_TEST_PACKAGE_UTIL_H
#define KILN_TEST_PACKAGE_UTIL_H

#include <stdio.h>
#include <string.h>

#include "base/sha256.h"
#include "kiln/runtime.h"
#include "runtime/module_abi.h"

/* Append a ustar member (type '0' regular, '2' symlink, '5' folder). */
static inline void pkg_tar_add(FILE *f, const char *name, const void *data, size_t len, char type) {
    unsigned char h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)(len & 077777777777ull));
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (unsigned char)type;
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    fwrite(h, 1, 512, f);
    fwrite(data, 1, len, f);
    static const char zero[512];
    fwrite(zero, 1, (512 - len % 512) % 512, f);
}

/* The manifest listing n members (names[i], data[i][0, len[i])) into out. */
static inline void pkg_manifest(char *out, size_t cap, int n, const char *const *names,
                                const void *const *data, const size_t *len) {
    size_t k = (size_t)snprintf(out, cap,
                                "{\"format\": \"kiln-package\", \"version\": %d, \"abi\": %d, "
                                "\"members\": [",
                                KILN_PACKAGE_FORMAT_VERSION, KILN_MODULE_ABI_VERSION);
    for (int i = 0; i < n && k < cap; i++) {
        char hex[KILN_SHA256_HEX];
        kiln_sha256_hex(data[i], len[i], hex);
        k += (size_t)snprintf(out + k, cap - k,
                              "%s{\"name\": \"%s\", \"size\": %zu, \"sha256\": \"%s\"}",
                              i ? ", " : "", names[i], len[i], hex);
    }
    if (k < cap)
        snprintf(out + k, cap - k, "]}\n");
}

/* Append manifest.json for the n members. */
static inline void pkg_tar_add_manifest(FILE *f, int n, const char *const *names,
                                        const void *const *data, const size_t *len) {
    char m[2048];
    pkg_manifest(m, sizeof m, n, names, data, len);
    pkg_tar_add(f, "manifest.json", m, strlen(m), '0');
}

#endif
