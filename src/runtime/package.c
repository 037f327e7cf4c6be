/* package.c: model.tar = manifest.json + mod.so + mod.json + mod.params, in
 * POSIX ustar (package format KILN_PACKAGE_FORMAT_VERSION). The reader
 * streams the archive with a fixed buffer: it checks every header's
 * checksum, magic and size against the file, rejects unsafe names
 * (absolute, "..") and non-regular members, and reads the members into
 * memory, hashing them as it goes. Then the manifest must be the first
 * member and must list every other member exactly once with its size and
 * SHA-256, the format version and the module ABI; only a package that
 * passes all of this goes on to the checks of mod.so (package_elf.c) and
 * to dlopen, which loads mod.so from memory (kiln_module_load_image): no
 * file of the package is written anywhere. kiln_package_parse reads an
 * archive image in memory the same way without loading mod.so (tools, and
 * the fuzzer of tests/fuzz/fuzz_package.c). The writer (package_write.c)
 * uses the header this file makes (pkg_tar_header). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/json.h"
#include "package.h"

#define BLOCK PKG_BLOCK
#define MAX_JSON_BYTES ((int64_t)256 << 20)
#define MAX_MANIFEST_BYTES ((int64_t)1 << 20)
#define MAX_MEMBER_BYTES (((int64_t)1 << 33) - 1) /* 11 octal digits */
#define COPY_CHUNK 65536

static const char *const k_members[PKG_COUNT] = {"manifest.json", "mod.so", "mod.json",
                                                 "mod.params"};

const char *pkg_member_name(int m) {
    return m >= 0 && m < PKG_COUNT ? k_members[m] : NULL;
}

/* ---- ustar headers ------------------------------------------------------------ */

/* Header field offsets and sizes (POSIX.1-1988 ustar). */
#define H_NAME 0
#define H_MODE 100
#define H_UID 108
#define H_GID 116
#define H_SIZE 124
#define H_MTIME 136
#define H_CHKSUM 148
#define H_TYPE 156
#define H_MAGIC 257
#define H_VERSION 263
#define H_PREFIX 345

static unsigned header_sum(const unsigned char *h) {
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += i >= H_CHKSUM && i < H_CHKSUM + 8 ? ' ' : h[i];
    return sum;
}

/* An octal field: optional leading spaces, digits, then NUL/space padding. */
static int parse_octal(const unsigned char *f, int n, int64_t *out) {
    int i = 0, digits = 0;
    int64_t v = 0;
    while (i < n && f[i] == ' ')
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v > (INT64_MAX >> 3))
            return 0;
        v = v * 8 + (f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != 0 && f[i] != ' ')
            return 0;
    *out = v;
    return digits > 0;
}

/* n - 1 octal digits (v must fit) and a NUL. */
static void put_octal(unsigned char *f, int n, int64_t v) {
    f[n - 1] = 0;
    for (int i = n - 2; i >= 0; i--, v >>= 3)
        f[i] = (unsigned char)('0' + (v & 7));
}

/* The member name (prefix "/" name), without a leading "./". Returns -1 if
 * it is unsafe (absolute, or with a ".." component), 0 if empty, else 1. */
static int member_name(const unsigned char *h, char *out, size_t cap) {
    char name[101], prefix[156];
    memcpy(name, h + H_NAME, 100);
    name[100] = 0;
    memcpy(prefix, h + H_PREFIX, 155);
    prefix[155] = 0;
    if (memcmp(h + H_MAGIC, "ustar\0", 6) != 0)
        prefix[0] = 0; /* GNU: no prefix field */
    snprintf(out, cap, "%s%s%s", prefix, prefix[0] ? "/" : "", name);
    while (out[0] == '.' && out[1] == '/')
        memmove(out, out + 2, strlen(out + 2) + 1);
    if (out[0] == '/')
        return -1;
    for (const char *c = out; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return -1;
        c += n + (c[n] == '/');
    }
    return out[0] != 0;
}

typedef struct {
    const char *path;
    FILE *f;
    int64_t file_size;
    int nregular;    /* regular members seen */
    int first;       /* the member that came first, or -1 (another file) */
    char extra[260]; /* the first regular member that is not a package member */
    int found[PKG_COUNT];
    pkg_members *out;
} tar_reader;

/* Read member m's n bytes into memory, hashing them. */
static kiln_status read_data(tar_reader *t, int m, int64_t n) {
    const char *name = k_members[m];
    int64_t cap = m == PKG_JSON ? MAX_JSON_BYTES : m == PKG_MANIFEST ? MAX_MANIFEST_BYTES : -1;
    if (cap >= 0 && n > cap)
        return kiln_set_error(KILN_ERR_IO, "%s: %s is %lld bytes, more than the limit of %lld",
                              t->path, name, (long long)n, (long long)cap);
    unsigned char *buf = kiln_malloc((size_t)n + 1); /* n is at most the file's size */
    if (!buf)
        return KILN_ERR_NOMEM;
    buf[n] = 0;
    t->out->data[m] = buf;
    t->out->len[m] = (size_t)n;
    kiln_sha256 h;
    kiln_sha256_init(&h);
    for (unsigned char *p = buf; n > 0;) {
        size_t k = n < COPY_CHUNK ? (size_t)n : COPY_CHUNK;
        if (fread(p, 1, k, t->f) != k)
            return kiln_set_error(KILN_ERR_IO, "%s: member %s: read error", t->path, name);
        kiln_sha256_update(&h, p, k);
        p += k;
        n -= (int64_t)k;
    }
    unsigned char d[KILN_SHA256_BYTES];
    kiln_sha256_final(&h, d);
    kiln_sha256_to_hex(d, t->out->sha256[m]);
    return KILN_OK;
}

/* Read one header at offset off. Sets *next (the offset of the following
 * header) and returns 1 for a member, 0 at the end, -1 on error. */
static int read_member(tar_reader *t, int64_t off, int64_t *next) {
    unsigned char h[BLOCK];
    int64_t left = t->file_size - off;
    if (left == 0 && off == 0) {
        kiln_set_error(KILN_ERR_IO, "%s: not a tar file (empty)", t->path);
        return -1;
    }
    if (left == 0)
        return 0; /* tolerate a missing end-of-archive marker */
    if (left < BLOCK || fseeko(t->f, off, SEEK_SET) != 0 || fread(h, 1, BLOCK, t->f) != BLOCK) {
        if (off == 0)
            kiln_set_error(KILN_ERR_IO, "%s: not a tar file (shorter than one header)", t->path);
        else
            kiln_set_error(KILN_ERR_IO, "%s: truncated header at byte %lld", t->path,
                           (long long)off);
        return -1;
    }
    static const unsigned char zero[BLOCK];
    if (memcmp(h, zero, BLOCK) == 0)
        return 0;
    int64_t sum, size;
    if (!parse_octal(h + H_CHKSUM, 8, &sum) || (unsigned)sum != header_sum(h)) {
        kiln_set_error(KILN_ERR_IO,
                       "%s: bad header checksum at byte %lld (not a tar file, or "
                       "corrupt)",
                       t->path, (long long)off);
        return -1;
    }
    if (memcmp(h + H_MAGIC, "ustar", 5) != 0) {
        kiln_set_error(KILN_ERR_IO, "%s: header at byte %lld is not ustar", t->path,
                       (long long)off);
        return -1;
    }
    char name[260], type = (char)h[H_TYPE];
    int named = member_name(h, name, sizeof name);
    if (named < 0 || (named == 0 && type != '5')) {
        kiln_set_error(KILN_ERR_IO,
                       "%s: unsafe member name '%.100s' (empty, absolute or with "
                       "'..')",
                       t->path, (const char *)h);
        return -1;
    }
    if (type != '0' && type != 0 && type != '5') {
        kiln_set_error(KILN_ERR_IO,
                       "%s: member '%s' has tar type '%c': only regular files are "
                       "allowed in a package",
                       t->path, name, type >= 32 && type < 127 ? type : '?');
        return -1;
    }
    if (!parse_octal(h + H_SIZE, 12, &size) || size > left - BLOCK) {
        kiln_set_error(KILN_ERR_IO,
                       "%s: member '%s' has a bad size or reaches past the end of "
                       "the file",
                       t->path, name);
        return -1;
    }
    *next = off + BLOCK + (size + BLOCK - 1) / BLOCK * BLOCK;
    if (*next > t->file_size) {
        kiln_set_error(KILN_ERR_IO,
                       "%s: member '%s' is cut short (the file ends inside its padding)", t->path,
                       name);
        return -1;
    }
    if (type == '5')
        return 1; /* a folder: nothing to read */
    int m = 0;
    while (m < PKG_COUNT && strcmp(name, k_members[m]) != 0)
        m++;
    if (t->nregular++ == 0)
        t->first = m < PKG_COUNT ? m : -1;
    if (m == PKG_COUNT) {
        if (!t->extra[0])
            snprintf(t->extra, sizeof t->extra, "%s", name);
        return 1; /* refused once the whole archive is known to be sound */
    }
    if (t->found[m]++) {
        kiln_set_error(KILN_ERR_IO, "%s: member '%s' appears twice", t->path, name);
        return -1;
    }
    return read_data(t, m, size) ? -1 : 1;
}

/* ---- the manifest ---------------------------------------------------------------
 * {"format": "kiln-package", "version": 2, "abi": <module ABI>,
 *  "members": [{"name": "mod.so", "size": N, "sha256": "<64 hex>"}, ...]} */

static int is_hex64(const char *s) {
    if (!s || strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

static kiln_status manifest_error(const tar_reader *t, const char *what) {
    return kiln_set_error(KILN_ERR_INVALID, "%s: manifest.json: %s", t->path, what);
}

static kiln_status check_manifest(tar_reader *t) {
    pkg_members *p = t->out;
    char where[300], msg[400];
    snprintf(where, sizeof where, "%s: manifest.json", t->path);
    arena *a = arena_new();
    if (!a)
        return KILN_ERR_NOMEM;
    const json *root =
        json_parse(a, (const char *)p->data[PKG_MANIFEST], p->len[PKG_MANIFEST], where);
    kiln_status st = root ? KILN_OK : KILN_ERR_INVALID;
    const char *format = json_str(json_get(root, "format"));
    int64_t version = 0, abi = 0;
    if (!st && !json_is(root, JSON_OBJECT))
        st = manifest_error(t, "not a JSON object");
    else if (!st && (!format || strcmp(format, "kiln-package") != 0))
        st = manifest_error(t, "\"format\" is not \"kiln-package\": not a kiln package");
    else if (!st && !json_int(json_get(root, "version"), &version))
        st = manifest_error(t, "\"version\" must be an integer");
    else if (!st && version != KILN_PACKAGE_FORMAT_VERSION) {
        snprintf(msg, sizeof msg,
                 "package format version %lld, but this kiln reads version %d: rebuild the "
                 "package with this kiln (`kiln compile` again)",
                 (long long)version, KILN_PACKAGE_FORMAT_VERSION);
        st = manifest_error(t, msg);
    } else if (!st && !json_int(json_get(root, "abi"), &abi))
        st = manifest_error(t, "\"abi\" must be an integer");
    else if (!st && abi != KILN_MODULE_ABI_VERSION) {
        snprintf(msg, sizeof msg,
                 "its kernels follow module ABI %lld, but this kiln runtime follows ABI %d: "
                 "rebuild the package with this kiln (`kiln compile` again)",
                 (long long)abi, KILN_MODULE_ABI_VERSION);
        st = manifest_error(t, msg);
    }
    const json *list = json_get(root, "members");
    if (!st && !json_is(list, JSON_ARRAY))
        st = manifest_error(t, "\"members\" must be a list");
    int listed[PKG_COUNT] = {0};
    for (int i = 0; !st && i < json_len(list); i++) {
        const json *e = json_at(list, i);
        const char *name = json_str(json_get(e, "name")), *sha = json_str(json_get(e, "sha256"));
        int64_t size = -1;
        int m = PKG_SO;
        while (name && m < PKG_COUNT && strcmp(name, k_members[m]) != 0)
            m++;
        if (!name || !json_int(json_get(e, "size"), &size) || size < 0 || !is_hex64(sha)) {
            snprintf(msg, sizeof msg,
                     "members[%d] must be {\"name\": ..., \"size\": N, \"sha256\": 64 lowercase "
                     "hex digits}",
                     i);
            st = manifest_error(t, msg);
        } else if (m == PKG_COUNT) {
            snprintf(msg, sizeof msg, "lists '%.100s', which is not a member of a kiln package",
                     name);
            st = manifest_error(t, msg);
        } else if (listed[m]++) {
            snprintf(msg, sizeof msg, "lists member '%s' twice", name);
            st = manifest_error(t, msg);
        } else if ((uint64_t)size != p->len[m]) {
            st = kiln_set_error(KILN_ERR_INVALID,
                                "%s: member %s is %zu bytes, but the manifest says %lld: the "
                                "package is truncated or corrupt",
                                t->path, name, p->len[m], (long long)size);
        } else if (strcmp(sha, p->sha256[m]) != 0) {
            st = kiln_set_error(KILN_ERR_INVALID,
                                "%s: member %s does not match its SHA-256 in the manifest: the "
                                "package is corrupt or was altered",
                                t->path, name);
        }
    }
    for (int m = PKG_SO; !st && m < PKG_COUNT; m++)
        if (!listed[m]) {
            snprintf(msg, sizeof msg, "does not list member '%s'", k_members[m]);
            st = manifest_error(t, msg);
        }
    p->abi = (int)abi;
    arena_free(a);
    return st;
}

/* Read every member, then check that the package is whole and that its
 * manifest vouches for each member. */
static kiln_status read_members(tar_reader *t) {
    t->first = -1;
    for (int64_t off = 0, next = 0;; off = next) {
        int r = read_member(t, off, &next);
        if (r < 0)
            return KILN_ERR_IO;
        if (r == 0)
            break;
    }
    if (!t->found[PKG_MANIFEST])
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: no manifest.json: the package was written by an older kiln "
                              "(before package format %d) or by another tool, and cannot be "
                              "checked before it is loaded; rebuild it with this kiln (`kiln "
                              "compile` again)",
                              t->path, KILN_PACKAGE_FORMAT_VERSION);
    for (int m = PKG_SO; m < PKG_COUNT; m++)
        if (!t->found[m])
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: no member '%s' (a package holds manifest.json, mod.so, "
                                  "mod.json and mod.params)",
                                  t->path, k_members[m]);
    if (t->extra[0])
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: member '%s' is not part of a kiln package (manifest.json, "
                              "mod.so, mod.json, mod.params)",
                              t->path, t->extra);
    if (t->first != PKG_MANIFEST)
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: manifest.json is not the first member: the package is corrupt "
                              "or was not written by kiln",
                              t->path);
    return check_manifest(t);
}

void pkg_members_free(pkg_members *p) {
    for (int m = 0; m < PKG_COUNT; m++) {
        free(p->data[m]);
        p->data[m] = NULL;
    }
}

static kiln_status read_all(tar_reader *t) {
    memset(t->out, 0, sizeof *t->out);
    kiln_status st = read_members(t);
    if (st)
        pkg_members_free(t->out);
    return st;
}

kiln_status pkg_read_file(const char *path, pkg_members *out) {
    memset(out, 0, sizeof *out);
    if (!path)
        return kiln_set_error(KILN_ERR_INVALID, "package: NULL path");
    tar_reader t = {path, fopen(path, "rb"), 0, 0, -1, {0}, {0}, out};
    if (!t.f)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    kiln_status st = KILN_OK;
    if (fseeko(t.f, 0, SEEK_END) != 0 || (t.file_size = ftello(t.f)) < 0)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot seek", path);
    else
        st = read_all(&t);
    fclose(t.f);
    return st;
}

kiln_status pkg_read_image(const void *buf, size_t len, const char *name, pkg_members *out) {
    memset(out, 0, sizeof *out);
    if (!buf && len)
        return kiln_set_error(KILN_ERR_INVALID, "package_parse: NULL image");
    if (!name)
        name = "<memory>";
    tar_reader t = {name, NULL, (int64_t)len, 0, -1, {0}, {0}, out};
    if (len && !(t.f = fmemopen((void *)buf, len, "rb")))
        return kiln_set_error(KILN_ERR_NOMEM, "%s: cannot read the image: %s", name,
                              strerror(errno));
    kiln_status st = read_all(&t);
    if (t.f)
        fclose(t.f);
    return st;
}

/* ---- reading for the executor and the tools -------------------------------------- */

kiln_status kiln_package_read(const char *path, char **text, size_t *text_len, kiln_module **mod,
                              kiln_npz **params) {
    *text = NULL;
    *mod = NULL;
    *params = NULL;
    if (!path)
        return kiln_set_error(KILN_ERR_INVALID, "executor_load: NULL path");
    pkg_members p;
    kiln_status st = pkg_read_file(path, &p);
    if (st)
        return st;
    /* the weights become views into mod.params' image, not copies of it */
    *params = npz_parse_take(p.data[PKG_PARAMS], p.len[PKG_PARAMS], "mod.params");
    p.data[PKG_PARAMS] = NULL;
    if (!*params) {
        kiln_error_prefix("%s", path);
        st = KILN_ERR_IO;
    }
    if (!st)
        st = pkg_check_elf(path, p.data[PKG_SO], p.len[PKG_SO]);
    if (!st)
        st = pkg_check_target(path, p.data[PKG_SO], p.len[PKG_SO], (char *)p.data[PKG_JSON],
                              p.len[PKG_JSON]);
    if (!st) {
        char what[1100];
        snprintf(what, sizeof what, "%s: mod.so", path);
        *mod = kiln_module_load_image(p.data[PKG_SO], p.len[PKG_SO], what);
        if (!*mod)
            st = KILN_ERR_IO;
    }
    if (st) {
        kiln_npz_free(*params);
        *params = NULL;
        pkg_members_free(&p);
        return st;
    }
    *text = (char *)p.data[PKG_JSON];
    *text_len = p.len[PKG_JSON];
    p.data[PKG_JSON] = NULL;
    pkg_members_free(&p);
    return KILN_OK;
}

kiln_status kiln_package_parse(const void *buf, size_t len, const char *name, char **text,
                               size_t *text_len, unsigned char **so, size_t *so_len,
                               kiln_npz **params) {
    *text = NULL;
    *text_len = *so_len = 0;
    *so = NULL;
    *params = NULL;
    pkg_members p;
    kiln_status st = pkg_read_image(buf, len, name, &p);
    if (st)
        return st;
    *params = npz_parse_take(p.data[PKG_PARAMS], p.len[PKG_PARAMS], "mod.params");
    p.data[PKG_PARAMS] = NULL;
    if (!*params) {
        kiln_error_prefix("%s", name ? name : "<memory>");
        pkg_members_free(&p);
        return KILN_ERR_IO;
    }
    *text = (char *)p.data[PKG_JSON];
    *text_len = p.len[PKG_JSON];
    *so = p.data[PKG_SO];
    *so_len = p.len[PKG_SO];
    p.data[PKG_JSON] = p.data[PKG_SO] = NULL;
    pkg_members_free(&p);
    return KILN_OK;
}

/* ---- the header kiln writes ---------------------------------------------------- */

kiln_status pkg_tar_header(unsigned char h[PKG_BLOCK], const char *name, int64_t size,
                           const char *path) {
    if (size > MAX_MEMBER_BYTES)
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: member %s is too large for ustar (%lld "
                              "bytes)",
                              path, name, (long long)size);
    memset(h, 0, BLOCK);
    memcpy(h + H_NAME, name, strlen(name));
    put_octal(h + H_MODE, 8, 0644);
    put_octal(h + H_UID, 8, 0);
    put_octal(h + H_GID, 8, 0);
    put_octal(h + H_SIZE, 12, size);
    put_octal(h + H_MTIME, 12, 0);
    h[H_TYPE] = '0';
    memcpy(h + H_MAGIC,
           "ustar\0"
           "00",
           8);
    put_octal(h + H_CHKSUM, 7, header_sum(h)); /* six digits, NUL, then a space */
    h[H_CHKSUM + 7] = ' ';
    return KILN_OK;
}
