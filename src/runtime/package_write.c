/* package_write.c: kiln_package_write: model.tar = manifest.json, mod.so,
 * mod.json and mod.params (the format, and the reader, are package.c's).
 * The archive is deterministic (mtime 0, uid 0) and appears whole or not at
 * all: it is written to a temporary file beside the package and renamed
 * over it. The weights are nearly all of a package (440 MB for BERT-base),
 * so they are never copied in memory and, when nothing changed, never
 * written:
 * - mod.params goes from the parameter arrays into the file
 *   (npz_write_sink), its SHA-256 taken on the way a chunk at a time, while
 *   the chunk is in the cache. The manifest comes first in the archive but
 *   lists that digest; its length does not depend on the digests' values,
 *   so it goes out with zeros in their place and is completed at the end.
 * - A package already at the path, of the same size and with all of its
 *   pages in memory (a recompile), is compared with instead of written: as
 *   long as every byte matches, nothing is written; the first byte that
 *   differs starts the temporary file with the bytes that matched, and the
 *   write goes on as above. If every byte matches, the final manifest's
 *   included, the package is left in place and its modification time is
 *   renewed, as if it had been written again. (As with any mapped file,
 *   another program truncating that package while it is compared would
 *   fault this one; kiln itself only ever replaces packages by rename.) */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/json.h"
#include "package.h"

#define BLOCK PKG_BLOCK
/* Bytes per step: buffered, hashed and compared a chunk at a time. */
#define CHUNK ((size_t)64 << 10)

typedef struct {
    npz_sink base;            /* mod.params' bytes (npz_write_sink) */
    const char *path;         /* the package, for messages */
    char *tmp;                /* the temporary file's name, once made */
    int fd;                   /* the temporary file, or -1 */
    const unsigned char *old; /* the package at path, while all bytes put match it */
    const unsigned char *map; /* its mapping (old or not), or NULL */
    size_t map_len;
    int old_fd;                /* open on it, while mapped */
    uint64_t pos;              /* bytes put so far */
    uint64_t skip_lo, skip_hi; /* the manifest: compared once it is complete */
    int hashing;               /* 1 while mod.params goes out */
    kiln_sha256 sha;           /* of mod.params */
    size_t used;               /* bytes waiting in buf */
    unsigned char buf[CHUNK];
} tar_out;

static int write_all(tar_out *o, const unsigned char *p, size_t n) {
    while (n) {
        ssize_t r = write(o->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            kiln_set_error(KILN_ERR_IO, "%s: write error: %s", o->path,
                           r < 0 ? strerror(errno) : "no space written");
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int out_flush(tar_out *o) {
    size_t n = o->used;
    o->used = 0;
    return write_all(o, o->buf, n);
}

/* Make the temporary file beside the package: 0, or -1 with an error. */
static int start_temp(tar_out *o) {
    size_t n = strlen(o->path) + 16;
    if (!(o->tmp = kiln_malloc(n)))
        return -1;
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", o->path);
    if ((o->fd = mkstemp(o->tmp)) < 0) {
        kiln_set_error(KILN_ERR_IO, "%s: cannot create a temporary file: %s", o->path,
                       strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

/* Stop comparing: the temporary file, holding the bytes that matched. */
static int diverge(tar_out *o) {
    const unsigned char *old = o->old;
    o->old = NULL;
    return start_temp(o) != 0 || write_all(o, old, (size_t)o->pos) != 0 ? -1 : 0;
}

/* Whether p[0, n), to go at o->pos, matches the old package there (the
 * manifest's bytes aside). */
static int matches_old(const tar_out *o, const unsigned char *p, size_t n) {
    if (o->pos + n > o->map_len)
        return 0;
    uint64_t lo = o->pos, hi = o->pos + n;
    uint64_t a = lo > o->skip_lo ? lo : o->skip_lo, b = hi < o->skip_hi ? hi : o->skip_hi;
    if (a >= b) /* no overlap with the manifest */
        return memcmp(p, o->old + lo, n) == 0;
    return memcmp(p, o->old + lo, (size_t)(a - lo)) == 0 &&
           memcmp(p + (b - lo), o->old + b, (size_t)(hi - b)) == 0;
}

/* Append p[0, n) (and hash it while hashing): compared while comparing,
 * else written. 0, or -1 with an error. */
static int out_put(tar_out *o, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n) {
        size_t k = n < CHUNK ? n : CHUNK;
        if (o->hashing)
            kiln_sha256_update(&o->sha, p, k);
        if (o->old && !matches_old(o, p, k) && diverge(o) != 0)
            return -1;
        if (!o->old) {
            if (o->used + k <= CHUNK) {
                memcpy(o->buf + o->used, p, k);
                o->used += k;
            } else if (out_flush(o) != 0 || write_all(o, p, k) != 0) {
                return -1;
            }
        }
        o->pos += k;
        p += k;
        n -= k;
    }
    return 0;
}

static int params_put(npz_sink *k, const void *p, size_t n) {
    return out_put((tar_out *)k, p, n);
}

static kiln_status write_header(tar_out *o, const char *name, int64_t size) {
    unsigned char h[BLOCK];
    kiln_status st = pkg_tar_header(h, name, size, o->path);
    return st ? st : out_put(o, h, BLOCK) ? KILN_ERR_IO : KILN_OK;
}

static uint64_t padded(uint64_t len) {
    return (len + BLOCK - 1) / BLOCK * BLOCK;
}

/* Zeros up to the next whole block after a member of len bytes. */
static kiln_status write_pad(tar_out *o, uint64_t len) {
    static const unsigned char zero[BLOCK];
    return out_put(o, zero, (size_t)(padded(len) - len)) ? KILN_ERR_IO : KILN_OK;
}

/* Append member `name` holding data[0, len), padded to a whole block. */
static kiln_status write_member(tar_out *o, const char *name, const void *data, size_t len) {
    kiln_status st = write_header(o, name, (int64_t)len);
    if (!st)
        st = out_put(o, data, len) ? KILN_ERR_IO : write_pad(o, len);
    return st;
}

/* The whole regular file at src (malloc'd), or NULL with an error. */
static char *read_regular(const char *src, size_t *len) {
    struct stat sb;
    if (stat(src, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        kiln_set_error(KILN_ERR_IO, "%s: not a regular file", src);
        return NULL;
    }
    return kiln_read_file(src, len);
}

/* The manifest of the members PKG_SO.., given their sizes and digests, as
 * the reader checks it; its length does not depend on the digests. */
static char *manifest_text(const size_t *len, char hex[PKG_COUNT][KILN_SHA256_HEX]) {
    kstr s;
    kstr_init(&s);
    kstr_printf(&s, "{\"format\": \"kiln-package\", \"version\": %d, \"abi\": %d, \"members\": [",
                KILN_PACKAGE_FORMAT_VERSION, KILN_MODULE_ABI_VERSION);
    for (int m = PKG_SO; m < PKG_COUNT; m++)
        kstr_printf(&s, "%s\n  {\"name\": \"%s\", \"size\": %zu, \"sha256\": \"%s\"}",
                    m > PKG_SO ? "," : "", pkg_member_name(m), len[m], hex[m]);
    kstr_puts(&s, "]}\n");
    if (s.oom) {
        kstr_free(&s);
        kiln_set_error(KILN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return kstr_take(&s);
}

/* Compare with the package at o->path instead of writing, if it is a
 * regular file of `size` bytes all in memory (a recompile to the same
 * path); else nothing. */
static void map_old(tar_out *o, uint64_t size) {
    struct stat ls, fs;
    if (lstat(o->path, &ls) != 0 || !S_ISREG(ls.st_mode) || (uint64_t)ls.st_size != size ||
        size == 0)
        return;
    int fd = open(o->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    void *m = MAP_FAILED;
    if (fstat(fd, &fs) == 0 && fs.st_dev == ls.st_dev && fs.st_ino == ls.st_ino &&
        (uint64_t)fs.st_size == size)
        m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return;
    }
    /* only a package in memory: reading one from disk to spare a write
       would be slower than the write */
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = ((size_t)size + (size_t)page - 1) / (size_t)page;
    unsigned char *in = malloc(pages);
    int resident = in && mincore(m, (size_t)size, in) == 0;
    for (size_t i = 0; resident && i < pages; i++)
        resident = in[i] & 1;
    free(in);
    if (!resident) {
        munmap(m, (size_t)size);
        close(fd);
        return;
    }
    o->old = o->map = m;
    o->map_len = (size_t)size;
    o->old_fd = fd;
}

/* The archive of the members data[PKG_SO..PKG_JSON] and params into o; the
 * manifest's length is mlen, its text complete into *manifest (malloc'd). */
static kiln_status write_archive(tar_out *o, const void *const *data, size_t *len,
                                 const kiln_npz *params, size_t mlen, char hex[][KILN_SHA256_HEX],
                                 char **manifest) {
    kiln_status st = write_header(o, pkg_member_name(PKG_MANIFEST), (int64_t)mlen);
    static const unsigned char zero[BLOCK];
    for (uint64_t at = 0; !st && at < padded(mlen); at += BLOCK) /* completed at the end */
        st = out_put(o, zero, BLOCK) ? KILN_ERR_IO : KILN_OK;
    for (int m = PKG_SO; !st && m < PKG_PARAMS; m++)
        st = write_member(o, pkg_member_name(m), data[m], len[m]);
    if (!st)
        st = write_header(o, pkg_member_name(PKG_PARAMS), (int64_t)len[PKG_PARAMS]);
    uint64_t wrote = 0;
    o->hashing = 1;
    kiln_sha256_init(&o->sha);
    if (!st)
        st = npz_write_sink(params, 0, &o->base, &wrote);
    o->hashing = 0;
    if (!st && wrote != len[PKG_PARAMS])
        st = kiln_set_error(KILN_ERR_INVALID, "%s: mod.params came out %llu bytes, not %zu",
                            o->path, (unsigned long long)wrote, len[PKG_PARAMS]);
    if (!st)
        st = write_pad(o, wrote);
    for (int b = 0; !st && b < 2; b++) /* the end-of-archive marker: two zero blocks */
        st = out_put(o, zero, BLOCK) ? KILN_ERR_IO : KILN_OK;
    if (!st && !o->old && out_flush(o) != 0)
        st = KILN_ERR_IO;
    if (st)
        return st;
    unsigned char d[KILN_SHA256_BYTES];
    kiln_sha256_final(&o->sha, d);
    kiln_sha256_to_hex(d, hex[PKG_PARAMS]);
    if (!(*manifest = manifest_text(len, hex)))
        return KILN_ERR_NOMEM;
    KILN_ASSERT(strlen(*manifest) == mlen);
    return KILN_OK;
}

/* The package's members written (data[PKG_SO..PKG_JSON] and params) to
 * o->path; *same set when the package there already held these bytes and
 * was left in place. */
static kiln_status write_package(tar_out *o, const void *const *data, size_t *len,
                                 const kiln_npz *params, int *same) {
    char hex[PKG_COUNT][KILN_SHA256_HEX];
    for (int m = PKG_SO; m < PKG_PARAMS; m++)
        kiln_sha256_hex(data[m], len[m], hex[m]);
    uint64_t psize;
    kiln_status st = npz_stored_size(params, &psize);
    if (st)
        return st;
    len[PKG_PARAMS] = (size_t)psize;
    memset(hex[PKG_PARAMS], '0', KILN_SHA256_HEX - 1);
    hex[PKG_PARAMS][KILN_SHA256_HEX - 1] = 0;
    char *draft = manifest_text(len, hex), *manifest = NULL;
    if (!draft)
        return KILN_ERR_NOMEM;
    size_t mlen = strlen(draft);
    free(draft);
    uint64_t total = 2 * BLOCK + BLOCK + padded(mlen);
    for (int m = PKG_SO; m < PKG_COUNT; m++)
        total += BLOCK + padded(len[m]);
    o->skip_lo = BLOCK;
    o->skip_hi = BLOCK + mlen;
    map_old(o, total);
    if (!o->old && start_temp(o) != 0)
        return KILN_ERR_IO;
    st = write_archive(o, data, len, params, mlen, hex, &manifest);
    if (!st && o->old && o->pos == total && !memcmp(o->old + BLOCK, manifest, mlen)) {
        *same = 1;
    } else if (!st && (!o->old || diverge(o) == 0)) {
        ssize_t r = pwrite(o->fd, manifest, mlen, BLOCK);
        if (r != (ssize_t)mlen)
            st = kiln_set_error(KILN_ERR_IO, "%s: write error: %s", o->path,
                                r < 0 ? strerror(errno) : "short write");
    } else if (!st) {
        st = KILN_ERR_IO;
    }
    free(manifest);
    return st;
}

kiln_status kiln_package_write(const char *path, const char *text, size_t json_len,
                               const char *so_path, const kiln_npz *params) {
    if (!path || !text || !so_path)
        return kiln_set_error(KILN_ERR_INVALID, "package_write: NULL argument");
    arena *ar = arena_new();
    if (!ar)
        return KILN_ERR_NOMEM;
    json *doc = json_parse(ar, text, json_len, "mod.json");
    arena_free(ar);
    if (!doc) {
        kiln_error_prefix("%s", path);
        return KILN_ERR_INVALID;
    }
    kiln_npz *empty = params ? NULL : kiln_npz_new();
    tar_out *o = kiln_malloc(sizeof *o);
    if ((!params && !empty) || !o) {
        kiln_npz_free(empty);
        free(o);
        return KILN_ERR_NOMEM;
    }
    memset(o, 0, offsetof(tar_out, buf));
    o->base.put = params_put;
    o->path = path;
    o->fd = o->old_fd = -1;
    const void *data[PKG_COUNT] = {NULL};
    size_t len[PKG_COUNT] = {0};
    char *so = read_regular(so_path, &len[PKG_SO]);
    data[PKG_SO] = so;
    data[PKG_JSON] = text;
    len[PKG_JSON] = json_len;
    int same = 0;
    kiln_status st = so ? write_package(o, data, len, params ? params : empty, &same) : KILN_ERR_IO;
    if (same) /* renewed, as a write would have */
        (void)futimens(o->old_fd, NULL);
    if (o->fd >= 0 && close(o->fd) != 0 && !st)
        st = kiln_set_error(KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
    if (!st && !same && rename(o->tmp, path) != 0)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (o->tmp && (st || same))
        unlink(o->tmp);
    if (o->map)
        munmap((void *)o->map, o->map_len);
    if (o->old_fd >= 0)
        close(o->old_fd);
    free(o->tmp);
    free(so);
    free(o);
    kiln_npz_free(empty);
    return st;
}
