/* package.h: the package files' shared parts (package.c reads and writes
 * the archive and verifies its manifest, package_elf.c checks mod.so's
 * bytes, package_info.c describes a package without loading it). */
#ifndef KILN_PACKAGE_H
#define KILN_PACKAGE_H

#include "../base/sha256.h"
#include "runtime_internal.h"

/* The size of a ustar block: a header, and the unit members are padded to. */
#define PKG_BLOCK 512

/* The members of a package, in the order kiln writes them. */
enum { PKG_MANIFEST, PKG_SO, PKG_JSON, PKG_PARAMS, PKG_COUNT };

/* A package read into memory, its manifest verified: every member's bytes
 * (malloc'd; json NUL-terminated) and digest. */
typedef struct {
    unsigned char *data[PKG_COUNT];
    size_t len[PKG_COUNT];
    char sha256[PKG_COUNT][KILN_SHA256_HEX];
    int abi; /* the manifest's module ABI version */
} pkg_members;

/* The name of member m ("manifest.json", "mod.so", ...). */
KILN_HIDDEN const char *pkg_member_name(int m);
/* Read the package at `path` (a file) into *out, checking the archive's
 * structure and the manifest: present and first, known format, version and
 * ABI, each member listed once with its size and SHA-256, nothing else.
 * Runs none of its code. Errors name the package and the member. */
KILN_HIDDEN kiln_status pkg_read_file(const char *path, pkg_members *out);
/* The same for the image buf[0, len); `name` prefixes errors. */
KILN_HIDDEN kiln_status pkg_read_image(const void *buf, size_t len, const char *name,
                                       pkg_members *out);
KILN_HIDDEN void pkg_members_free(pkg_members *p);
/* The ustar header of a member `name` of `size` bytes as kiln writes it
 * (mode 0644, uid 0, mtime 0); an error naming `path` if it is too large. */
KILN_HIDDEN kiln_status pkg_tar_header(unsigned char h[PKG_BLOCK], const char *name, int64_t size,
                                       const char *path);

/* Check that so[0, len) is a little-endian ELF64 shared object whose
 * program and section header tables and segments lie inside it, so dlopen
 * cannot fault on it (a truncated mod.so died with SIGBUS). `pkg` names
 * the package in the error. */
KILN_HIDDEN kiln_status pkg_check_elf(const char *pkg, const unsigned char *so, size_t len);
/* Check that mod.so is code for this machine (its ELF machine) and that
 * this CPU has the features mod.json's "target" lists. */
KILN_HIDDEN kiln_status pkg_check_target(const char *pkg, const unsigned char *so, size_t len,
                                         const char *json, size_t json_len);
/* The kiln_module_meta text mod.so exports, read from its dynamic symbol
 * table without loading it (malloc'd), or NULL when it cannot be found
 * there (no error set). */
KILN_HIDDEN char *pkg_elf_module_meta(const unsigned char *so, size_t len);

#endif
