/* npz.c: numpy's .npz archives: a ZIP file of .npy members, stored or
 * deflated. Reading walks the central directory (ZIP64 included), checks
 * every offset and size against the file, bounds inflated sizes and verifies
 * CRC32; writing streams members to the file and then the directory. A
 * runtime built without zlib (a cross build for a board that lacks it)
 * reads and writes stored members only, and says so for deflated ones. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef KILN_HAVE_ZLIB
#include <zlib.h>
#else
#include <pthread.h>
#endif

#include "npy_internal.h"

struct kiln_npz {
    int count, cap;
    char **names;          /* without ".npy" */
    kiln_ndarray **arrays; /* owned; some may be views into `blob` */
    unsigned char *blob;   /* the archive image the views point into (npz_parse_take), or NULL */
    size_t blob_len;
};

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define U32_MAX 0xffffffffu
/* Deflate cannot expand data by more than about 1032:1; a member that claims
 * more is corrupt, and refusing it bounds memory by the file's size. */
#define MAX_INFLATE_RATIO 1100u
#define ZCHUNK (1u << 30)

/* ---- the set ---------------------------------------------------------------- */

kiln_npz *kiln_npz_new(void) {
    return kiln_calloc(1, sizeof(kiln_npz));
}

void kiln_npz_free(kiln_npz *z) {
    if (!z)
        return;
    for (int i = 0; i < z->count; i++) {
        free(z->names[i]);
        kiln_ndarray_free(z->arrays[i]);
    }
    free(z->names);
    free(z->arrays);
    free(z->blob);
    free(z);
}

static int find_member(const kiln_npz *z, const char *name) {
    for (int i = 0; i < z->count; i++)
        if (strcmp(z->names[i], name) == 0)
            return i;
    return -1;
}

/* Append (name, a), taking ownership of `a` even on failure. */
static kiln_status push_member(kiln_npz *z, const char *name, kiln_ndarray *a) {
    if (z->count == z->cap) {
        int cap = z->cap ? z->cap * 2 : 8;
        char **n = kiln_realloc(z->names, (size_t)cap * sizeof *n);
        if (n)
            z->names = n;
        kiln_ndarray **r = n ? kiln_realloc(z->arrays, (size_t)cap * sizeof *r) : NULL;
        if (!r) {
            kiln_ndarray_free(a);
            return KILN_ERR_NOMEM;
        }
        z->arrays = r;
        z->cap = cap;
    }
    char *copy = kiln_strdup(name);
    if (!copy) {
        kiln_ndarray_free(a);
        return KILN_ERR_NOMEM;
    }
    z->names[z->count] = copy;
    z->arrays[z->count++] = a;
    return KILN_OK;
}

/* Add (name, a's clone, or with `share` a's storage shared). */
static kiln_status add_member(kiln_npz *z, const char *name, kiln_ndarray *a, int share) {
    if (!z || !name || !a)
        return kiln_set_error(KILN_ERR_INVALID, "npz_add: NULL argument");
    if (!name[0] || strlen(name) > 60000)
        return kiln_set_error(KILN_ERR_INVALID, "npz_add: bad member name '%s'", name);
    if (find_member(z, name) >= 0)
        return kiln_set_error(KILN_ERR_INVALID, "npz_add: duplicate member name '%s'", name);
    kiln_ndarray *c = share && kiln_ndarray_is_contiguous(a) ? ndarray_share(a) : ndarray_clone(a);
    if (!c)
        return KILN_ERR_NOMEM; /* a copy into a fresh array of a's shape fails only so */
    return push_member(z, name, c);
}

kiln_status kiln_npz_add(kiln_npz *z, const char *name, const kiln_ndarray *a) {
    return add_member(z, name, (kiln_ndarray *)a, 0);
}

kiln_status npz_add_shared(kiln_npz *z, const char *name, kiln_ndarray *a) {
    return add_member(z, name, a, 1);
}

int kiln_npz_count(const kiln_npz *z) {
    return z ? z->count : 0;
}

const char *kiln_npz_name(const kiln_npz *z, int i) {
    return z && i >= 0 && i < z->count ? z->names[i] : NULL;
}

const kiln_ndarray *kiln_npz_array(const kiln_npz *z, int i) {
    return z && i >= 0 && i < z->count ? z->arrays[i] : NULL;
}

kiln_ndarray *npz_get_mutable(kiln_npz *z, const char *name) {
    int i = z && name ? find_member(z, name) : -1;
    return i >= 0 ? z->arrays[i] : NULL;
}

const kiln_ndarray *kiln_npz_get(const kiln_npz *z, const char *name) {
    int i = z && name ? find_member(z, name) : -1;
    return i >= 0 ? z->arrays[i] : NULL;
}

/* ---- reading ---------------------------------------------------------------- */

static uint64_t rd(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A stored member whose array is, for now, a view of its unaligned data in
 * the image (npz_parse_take): `fix_views` moves it. */
typedef struct {
    int index; /* in the set */
    size_t off;
    int64_t nbytes;
} inplace_member;

typedef struct {
    const unsigned char *buf;
    size_t len;
    const char *path;
    int mapped; /* buf is a read-only file mapping: release members once parsed */
    /* npz_parse_take: the image is ours to rearrange; its stored members
       become views instead of copies (listed here until fix_views) */
    int inplace;
    inplace_member *pend;
    int npend, pend_cap;
} zipfile;

/* Where the End Of Central Directory record starts, or -1. */
static int64_t find_eocd(const zipfile *f) {
    if (f->len < 22)
        return -1;
    size_t lowest = f->len - 22 > 65535 ? f->len - 22 - 65535 : 0;
    for (size_t i = f->len - 22 + 1; i-- > lowest;) {
        if (rd(f->buf + i, 4) == SIG_EOCD && i + 22 + rd(f->buf + i + 20, 2) <= f->len)
            return (int64_t)i;
    }
    return -1;
}

/* Read the ZIP64 extra field (0x0001) in extra[0, n): replace each of the
 * fields that hold 0xffffffff, in order, with its 64-bit value. */
static kiln_status zip64_extra(const zipfile *f, const char *member, const unsigned char *extra,
                               size_t n, uint64_t *usize, uint64_t *csize, uint64_t *off) {
    size_t p = 0;
    while (p + 4 <= n) {
        unsigned id = (unsigned)rd(extra + p, 2);
        size_t sz = (size_t)rd(extra + p + 2, 2);
        if (sz > n - p - 4)
            break; /* a short trailing field: ignore, as zipfile does */
        if (id == 0x0001) {
            const unsigned char *d = extra + p + 4;
            size_t q = 0;
            uint64_t *fields[3] = {usize, csize, off};
            for (int k = 0; k < 3; k++) {
                if (!fields[k] || *fields[k] != U32_MAX)
                    continue;
                if (q + 8 > sz)
                    return kiln_set_error(KILN_ERR_IO, "%s: %s: ZIP64 extra field is too short",
                                          f->path, member);
                *fields[k] = rd(d + q, 8);
                q += 8;
            }
            return KILN_OK;
        }
        p += 4 + sz;
    }
    return KILN_OK;
}

#ifndef KILN_HAVE_ZLIB
static uint32_t g_crc_table[256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;
static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        g_crc_table[i] = c;
    }
}
#endif

/* CRC-32 (ZIP's: polynomial 0xEDB88320, reflected) of what crc covered
 * followed by p[0, n); crc 0 starts one. */
static uint32_t npz_crc32_more(uint32_t crc, const unsigned char *p, size_t n) {
#ifdef KILN_HAVE_ZLIB
    return (uint32_t)crc32_z(crc, p, n);
#else
    pthread_once(&g_crc_once, crc_table_init);
    uint32_t c = crc ^ 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        c = g_crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
#endif
}

static uint32_t npz_crc32(const unsigned char *p, size_t n) {
    return npz_crc32_more(0, p, n);
}

#ifndef KILN_HAVE_ZLIB
static kiln_status inflate_member(const zipfile *f, const char *member, const unsigned char *src,
                                  uint64_t csize, unsigned char *dst, uint64_t usize) {
    return kiln_set_error(KILN_ERR_UNSUPPORTED,
                          "%s: %s is deflated (np.savez_compressed), and this kiln runtime was "
                          "built without zlib: save the file with np.savez",
                          f->path, member);
}
#else
static kiln_status inflate_member(const zipfile *f, const char *member, const unsigned char *src,
                                  uint64_t csize, unsigned char *dst, uint64_t usize) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return kiln_set_error(KILN_ERR_NOMEM, "%s: %s: cannot start inflate", f->path, member);
    /* One spare output byte detects data that inflates past the declared size. */
    uint64_t in_left = csize, out_left = usize + 1;
    zs.next_in = (Bytef *)src;
    zs.next_out = dst;
    kiln_status st = KILN_OK;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            zs.avail_in = in_left > ZCHUNK ? ZCHUNK : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left) {
            zs.avail_out = out_left > ZCHUNK ? ZCHUNK : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        int r = inflate(&zs, Z_NO_FLUSH);
        if (r == Z_STREAM_END)
            break;
        if (r == Z_OK && (zs.avail_in || in_left) && (zs.avail_out || out_left))
            continue;
        if (r == Z_OK || r == Z_BUF_ERROR) {
            if (zs.avail_out == 0 && out_left == 0)
                st = kiln_set_error(KILN_ERR_IO, "%s: %s: inflates to more than %llu bytes",
                                    f->path, member, (unsigned long long)usize);
            else if (zs.avail_in == 0 && in_left == 0)
                st = kiln_set_error(KILN_ERR_IO, "%s: %s: deflate data is truncated", f->path,
                                    member);
            else
                continue;
        } else {
            st = kiln_set_error(KILN_ERR_IO, "%s: %s: corrupt deflate data (%s)", f->path, member,
                                zs.msg ? zs.msg : "zlib error");
        }
        break;
    }
    uint64_t produced = (uint64_t)(zs.next_out - dst);
    inflateEnd(&zs);
    if (!st && produced != usize)
        st = kiln_set_error(KILN_ERR_IO, "%s: %s: inflates to %llu bytes, but %llu are declared",
                            f->path, member, (unsigned long long)produced,
                            (unsigned long long)usize);
    return st;
}
#endif

/* Parse one central directory entry at *pos (within [*pos, cd_end)), read its
 * member and add it to z; advances *pos. */
static kiln_status read_entry(zipfile *f, size_t *pos, size_t cd_end, kiln_npz *z) {
    const unsigned char *c = f->buf + *pos;
    if (cd_end - *pos < 46 || rd(c, 4) != SIG_CENTRAL)
        return kiln_set_error(KILN_ERR_IO, "%s: corrupt ZIP central directory", f->path);
    unsigned flags = (unsigned)rd(c + 8, 2), method = (unsigned)rd(c + 10, 2);
    uint32_t crc = (uint32_t)rd(c + 16, 4);
    uint64_t csize = rd(c + 20, 4), usize = rd(c + 24, 4), off = rd(c + 42, 4);
    size_t nlen = (size_t)rd(c + 28, 2), elen = (size_t)rd(c + 30, 2), clen = (size_t)rd(c + 32, 2);
    if (cd_end - *pos - 46 < nlen + elen + clen)
        return kiln_set_error(KILN_ERR_IO, "%s: corrupt ZIP central directory entry", f->path);
    *pos += 46 + nlen + elen + clen;

    char member[300];
    snprintf(member, sizeof member, "%.*s", (int)(nlen < 256 ? nlen : 256), (const char *)c + 46);
    if (nlen == 0 || memchr(c + 46, 0, nlen))
        return kiln_set_error(KILN_ERR_IO, "%s: ZIP member with a bad name", f->path);
    if (zip64_extra(f, member, c + 46 + nlen, elen, &usize, &csize, &off))
        return KILN_ERR_IO;
    if (flags & 1)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: %s: encrypted members are not supported",
                              f->path, member);
    if (method != 0 && method != 8)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: %s: unsupported compression method %u (only stored and "
                              "deflate)",
                              f->path, member, method);

    /* The local header: its name and extra lengths place the data. */
    if (off > f->len || f->len - off < 30 || rd(f->buf + off, 4) != SIG_LOCAL)
        return kiln_set_error(KILN_ERR_IO, "%s: %s: bad local header offset %llu", f->path, member,
                              (unsigned long long)off);
    const unsigned char *l = f->buf + off;
    size_t lnlen = (size_t)rd(l + 26, 2), lelen = (size_t)rd(l + 28, 2);
    if (f->len - off - 30 < lnlen + lelen || lnlen != nlen || memcmp(l + 30, c + 46, nlen) != 0)
        return kiln_set_error(KILN_ERR_IO, "%s: %s: local header does not match the directory",
                              f->path, member);
    uint64_t data = off + 30 + lnlen + lelen;
    if (csize > f->len - data)
        return kiln_set_error(KILN_ERR_IO, "%s: %s: member data runs past the end of the file",
                              f->path, member);

    const unsigned char *src = f->buf + data;
    unsigned char *plain = NULL;
    if (method == 0) {
        if (csize != usize)
            return kiln_set_error(KILN_ERR_IO, "%s: %s: stored member sizes differ", f->path,
                                  member);
    } else {
        if (usize / MAX_INFLATE_RATIO > csize || usize >= SIZE_MAX)
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: %s: declared size %llu is impossible for %llu compressed "
                                  "bytes",
                                  f->path, member, (unsigned long long)usize,
                                  (unsigned long long)csize);
        plain = kiln_malloc((size_t)usize + 1);
        if (!plain)
            return KILN_ERR_NOMEM;
        kiln_status ist = inflate_member(f, member, src, csize, plain, usize);
        if (ist) {
            free(plain);
            return ist;
        }
        src = plain;
    }
    if (npz_crc32(src, (size_t)usize) != crc) {
        free(plain);
        return kiln_set_error(KILN_ERR_IO, "%s: %s: CRC32 mismatch (the archive is corrupt)",
                              f->path, member);
    }
    char where[1400];
    snprintf(where, sizeof where, "%s: %s", f->path, member);
    kiln_ndarray *a = NULL;
    npy_layout lay;
    if (f->inplace && !plain) {
        if (kiln_npy_header(src, (size_t)usize, where, &lay))
            return KILN_ERR_IO;
        /* a view can stand for the member when its bytes are the array's
           as they are (bools must be normalized to 0 and 1: copied) */
        if (lay.numel > 0 && lay.dtype != KILN_BOOL && (!lay.fortran || lay.ndim < 2)) {
            if (!(a = kiln_ndarray_wrap((void *)(src + lay.data_offset), lay.dtype, lay.ndim,
                                        lay.shape, NULL, 0)))
                return KILN_ERR_NOMEM;
            if (f->npend == f->pend_cap) {
                int cap = f->pend_cap ? 2 * f->pend_cap : 16;
                inplace_member *p = kiln_realloc(f->pend, (size_t)cap * sizeof *p);
                if (!p) {
                    kiln_ndarray_free(a);
                    return KILN_ERR_NOMEM;
                }
                f->pend = p;
                f->pend_cap = cap;
            }
            f->pend[f->npend++] =
                (inplace_member){z->count, (size_t)data + lay.data_offset, lay.nbytes};
        }
    }
    if (!a)
        a = kiln_npy_parse(src, (size_t)usize, where);
    free(plain);
    if (f->mapped) {
        /* the member's pages are copied out: give them back, so a large file
           is not resident twice (clean file pages; a later touch rereads) */
        long pg = sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)(f->buf + data) + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
        uintptr_t hi = (uintptr_t)(f->buf + data + csize) & ~((uintptr_t)pg - 1);
        if (pg > 0 && hi > lo)
            madvise((void *)lo, hi - lo, MADV_DONTNEED);
    }
    if (!a)
        return KILN_ERR_IO;
    if (nlen > 4 && memcmp(c + 46 + nlen - 4, ".npy", 4) == 0)
        nlen -= 4;
    char *name = kiln_malloc(nlen + 1);
    if (!name) {
        kiln_ndarray_free(a);
        return KILN_ERR_NOMEM;
    }
    memcpy(name, c + 46, nlen);
    name[nlen] = 0;
    kiln_status st = KILN_OK;
    if (find_member(z, name) >= 0) {
        kiln_ndarray_free(a);
        st = kiln_set_error(KILN_ERR_IO, "%s: duplicate member '%s'", f->path, name);
    } else {
        st = push_member(z, name, a);
    }
    free(name);
    return st;
}

static kiln_status read_zip(zipfile *f, kiln_npz *z) {
    int64_t e = find_eocd(f);
    if (e < 0)
        return kiln_set_error(KILN_ERR_IO,
                              "%s: not a ZIP/.npz archive (no end of central directory record)",
                              f->path);
    const unsigned char *r = f->buf + e;
    uint64_t disk = rd(r + 4, 2), cd_disk = rd(r + 6, 2), entries = rd(r + 10, 2);
    uint64_t cd_size = rd(r + 12, 4), cd_off = rd(r + 16, 4);
    if (e >= 20 && rd(r - 20, 4) == SIG_LOC64) {
        uint64_t o = rd(r - 20 + 8, 8);
        if (o > f->len || f->len - o < 56 || rd(f->buf + o, 4) != SIG_EOCD64)
            return kiln_set_error(KILN_ERR_IO, "%s: bad ZIP64 end of central directory", f->path);
        const unsigned char *r64 = f->buf + o;
        disk = rd(r64 + 16, 4);
        cd_disk = rd(r64 + 20, 4);
        entries = rd(r64 + 32, 8);
        cd_size = rd(r64 + 40, 8);
        cd_off = rd(r64 + 48, 8);
    }
    if (disk != 0 || cd_disk != 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: multi-disk ZIP archives are not supported",
                              f->path);
    if (cd_off > f->len || cd_size > f->len - cd_off || entries > cd_size / 46)
        return kiln_set_error(KILN_ERR_IO, "%s: ZIP central directory lies outside the file",
                              f->path);
    size_t pos = (size_t)cd_off, cd_end = (size_t)(cd_off + cd_size);
    for (uint64_t i = 0; i < entries; i++)
        if (read_entry(f, &pos, cd_end, z))
            return KILN_ERR_IO;
    return KILN_OK;
}

static int by_offset(const void *a, const void *b) {
    size_t x = ((const inplace_member *)a)->off, y = ((const inplace_member *)b)->off;
    return x < y ? -1 : x > y;
}

/* Give each view of a stored member (npz_parse_take) KILN_ALIGNMENT-aligned
 * data, as the kernels expect of weights: move it down to the boundary at
 * or below it, over the ZIP and .npy headers in front of it. Members go in
 * file order, so a move only overwrites bytes of its own member and the
 * headers after the one before; a member that has no room (a header
 * shorter than the alignment, or members that overlap, which only a forged
 * archive has) is copied into storage of its own instead. */
static kiln_status fix_views(zipfile *f, kiln_npz *z) {
    if (f->npend == 0)
        return KILN_OK;
    qsort(f->pend, (size_t)f->npend, sizeof *f->pend, by_offset);
    int overlap = 0;
    for (int i = 1; i < f->npend; i++)
        if (f->pend[i].off < f->pend[i - 1].off + (size_t)f->pend[i - 1].nbytes)
            overlap = 1;
    unsigned char *base = (unsigned char *)f->buf;
    size_t floor = 0; /* where the member before ends */
    for (int i = 0; i < f->npend; i++) {
        const inplace_member *m = &f->pend[i];
        kiln_ndarray **a = &z->arrays[m->index];
        uintptr_t at = (uintptr_t)(base + m->off);
        size_t dst = m->off - (size_t)(at % KILN_ALIGNMENT);
        if (!overlap && dst >= floor) {
            memmove(base + dst, base + m->off, (size_t)m->nbytes);
            int64_t shape[KILN_MAX_NDIM];
            int nd = kiln_ndarray_ndim(*a);
            for (int d = 0; d < nd; d++)
                shape[d] = kiln_ndarray_dim(*a, d);
            ndarray_rewrap(*a, base + dst, shape);
        } else {
            kiln_ndarray *c = ndarray_clone(*a);
            if (!c)
                return KILN_ERR_NOMEM;
            kiln_ndarray_free(*a);
            *a = c;
        }
        floor = m->off + (size_t)m->nbytes;
    }
    return KILN_OK;
}

static kiln_npz *parse_zip(const void *buf, size_t len, const char *name, int mapped, int inplace) {
    kiln_npz *z = kiln_npz_new();
    zipfile f = {buf, len, name ? name : "<memory>", mapped, inplace, NULL, 0, 0};
    if (z && (read_zip(&f, z) || fix_views(&f, z))) {
        kiln_npz_free(z);
        z = NULL;
    }
    free(f.pend);
    return z;
}

kiln_npz *kiln_npz_parse(const void *buf, size_t len, const char *name) {
    return parse_zip(buf, len, name, 0, 0);
}

kiln_npz *npz_parse_take(void *buf, size_t len, const char *name) {
    kiln_npz *z = parse_zip(buf, len, name, 0, 1);
    if (!z) {
        free(buf);
        return NULL;
    }
    z->blob = buf;
    z->blob_len = len;
    return z;
}

void *npz_blob_data(const kiln_npz *z, const kiln_ndarray *a) {
    uintptr_t d = a ? (uintptr_t)kiln_ndarray_data(a) : 0, lo = z ? (uintptr_t)z->blob : 0;
    if (!lo || !d || d < lo || d >= lo + z->blob_len)
        return NULL;
    return (void *)d;
}

void *npz_take_blob(kiln_npz *z, size_t *len) {
    void *b = z->blob;
    *len = z->blob_len;
    z->blob = NULL;
    z->blob_len = 0;
    return b;
}

/* A regular file is mapped rather than read, and each member's pages are
 * released once parsed: loading a file of weights then needs the arrays'
 * memory, not twice it. Anything mmap cannot take is read whole. */
kiln_npz *kiln_npz_load(const char *path) {
    size_t len = 0;
    int fd = path ? open(path, O_RDONLY) : -1;
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (m != MAP_FAILED) {
            kiln_npz *z = parse_zip(m, (size_t)sb.st_size, path, 1, 0);
            munmap(m, (size_t)sb.st_size);
            return z;
        }
    } else if (fd >= 0) {
        close(fd);
    }
    char *buf = kiln_read_file(path, &len);
    if (!buf)
        return NULL;
    kiln_npz *z = kiln_npz_parse(buf, len, path);
    free(buf);
    return z;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct {
    npz_sink *k;
    uint64_t pos;
    int bad;
} zout;

static void put(zout *o, const void *p, size_t n) {
    if (!o->bad && n && !o->k->count_only && o->k->put(o->k, p, n) != 0)
        o->bad = 1;
    o->pos += n;
}

static void put_le(zout *o, uint64_t v, int n) {
    unsigned char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    put(o, b, (size_t)n);
}

/* Raw-deflate src[0, n) into a malloc'd *out of *outlen bytes. */
static kiln_status deflate_buf(const unsigned char *src, size_t n, unsigned char **out,
                               size_t *outlen) {
#ifndef KILN_HAVE_ZLIB
    return kiln_set_error(KILN_ERR_UNSUPPORTED,
                          "npz: compressed saving needs zlib, and this "
                          "kiln runtime was built without it: save uncompressed");
#else
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return kiln_set_error(KILN_ERR_NOMEM, "npz: cannot start deflate");
    size_t cap = (size_t)deflateBound(&zs, (uLong)n) + 64;
    unsigned char *b = kiln_malloc(cap);
    if (!b) {
        deflateEnd(&zs);
        return KILN_ERR_NOMEM;
    }
    size_t in_left = n, out_left = cap;
    zs.next_in = (Bytef *)src;
    zs.next_out = b;
    int r;
    do {
        if (zs.avail_in == 0 && in_left) {
            zs.avail_in = in_left > ZCHUNK ? ZCHUNK : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left) {
            zs.avail_out = out_left > ZCHUNK ? ZCHUNK : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        r = deflate(&zs, in_left || zs.avail_in ? Z_NO_FLUSH : Z_FINISH);
    } while (r == Z_OK);
    *outlen = (size_t)(zs.next_out - b);
    deflateEnd(&zs);
    if (r != Z_STREAM_END) {
        free(b);
        return kiln_set_error(KILN_ERR_NOMEM, "npz: deflate failed");
    }
    *out = b;
    return KILN_OK;
#endif
}

typedef struct {
    uint64_t off, csize, usize;
    uint32_t crc;
    int method;
} zentry;

static void put_local(zout *o, const char *name, const zentry *e) {
    size_t nlen = strlen(name) + 4;
    int z64 = e->usize >= U32_MAX || e->csize >= U32_MAX;
    put_le(o, SIG_LOCAL, 4);
    put_le(o, z64 ? 45 : 20, 2);
    put_le(o, 0, 2); /* flags */
    put_le(o, (uint64_t)e->method, 2);
    put_le(o, 0, 2);    /* time 00:00 */
    put_le(o, 0x21, 2); /* date 1980-01-01 */
    put_le(o, e->crc, 4);
    put_le(o, z64 ? U32_MAX : e->csize, 4);
    put_le(o, z64 ? U32_MAX : e->usize, 4);
    put_le(o, nlen, 2);
    put_le(o, z64 ? 20 : 0, 2);
    put(o, name, nlen - 4);
    put(o, ".npy", 4);
    if (z64) {
        put_le(o, 1, 2);
        put_le(o, 16, 2);
        put_le(o, e->usize, 8);
        put_le(o, e->csize, 8);
    }
}

static void put_central(zout *o, const char *name, const zentry *e) {
    size_t nlen = strlen(name) + 4;
    int bu = e->usize >= U32_MAX, bc = e->csize >= U32_MAX, bo = e->off >= U32_MAX;
    int elen = 8 * (bu + bc + bo);
    put_le(o, SIG_CENTRAL, 4);
    put_le(o, 3 << 8 | 45, 2); /* made by: Unix, ZIP 4.5 */
    put_le(o, elen ? 45 : 20, 2);
    put_le(o, 0, 2);
    put_le(o, (uint64_t)e->method, 2);
    put_le(o, 0, 2);
    put_le(o, 0x21, 2);
    put_le(o, e->crc, 4);
    put_le(o, bc ? U32_MAX : e->csize, 4);
    put_le(o, bu ? U32_MAX : e->usize, 4);
    put_le(o, nlen, 2);
    put_le(o, elen ? (uint64_t)elen + 4 : 0, 2);
    put_le(o, 0, 2); /* comment */
    put_le(o, 0, 2); /* disk */
    put_le(o, 0, 2); /* internal attributes */
    put_le(o, (uint64_t)0100644 << 16, 4);
    put_le(o, bo ? U32_MAX : e->off, 4);
    put(o, name, nlen - 4);
    put(o, ".npy", 4);
    if (elen) {
        put_le(o, 1, 2);
        put_le(o, (uint64_t)elen, 2);
        if (bu)
            put_le(o, e->usize, 8);
        if (bc)
            put_le(o, e->csize, 8);
        if (bo)
            put_le(o, e->off, 8);
    }
}

static void put_end(zout *o, uint64_t count, uint64_t cd_off, uint64_t cd_size) {
    if (count >= 0xffff || cd_off >= U32_MAX || cd_size >= U32_MAX) {
        uint64_t e64 = o->pos;
        put_le(o, SIG_EOCD64, 4);
        put_le(o, 44, 8);
        put_le(o, 3 << 8 | 45, 2);
        put_le(o, 45, 2);
        put_le(o, 0, 4);
        put_le(o, 0, 4);
        put_le(o, count, 8);
        put_le(o, count, 8);
        put_le(o, cd_size, 8);
        put_le(o, cd_off, 8);
        put_le(o, SIG_LOC64, 4);
        put_le(o, 0, 4);
        put_le(o, e64, 8);
        put_le(o, 1, 4);
    }
    put_le(o, SIG_EOCD, 4);
    put_le(o, 0, 2);
    put_le(o, 0, 2);
    put_le(o, count >= 0xffff ? 0xffff : count, 2);
    put_le(o, count >= 0xffff ? 0xffff : count, 2);
    put_le(o, cd_size >= U32_MAX ? U32_MAX : cd_size, 4);
    put_le(o, cd_off >= U32_MAX ? U32_MAX : cd_off, 4);
    put_le(o, 0, 2);
}

/* Member i stored, its data put straight from the array (contiguous):
 * no copy of it is made. */
static kiln_status put_stored(zout *o, const kiln_npz *z, int i, zentry *e) {
    const kiln_ndarray *a = z->arrays[i];
    unsigned char hdr[NPY_HEADER_MAX];
    size_t hlen;
    kiln_status st = npy_header(a, hdr, &hlen);
    if (st) {
        kiln_error_prefix("member '%s'", z->names[i]);
        return st;
    }
    const unsigned char *data = kiln_ndarray_data(a);
    size_t nbytes = (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a));
    e->off = o->pos;
    e->usize = e->csize = hlen + nbytes;
    e->method = 0;
    e->crc = o->k->count_only ? 0 : npz_crc32_more(npz_crc32(hdr, hlen), data, nbytes);
    put_local(o, z->names[i], e);
    put(o, hdr, hlen);
    put(o, data, nbytes);
    return KILN_OK;
}

/* Write member i: its local header and data. */
static kiln_status put_member(zout *o, const kiln_npz *z, int i, int compress, zentry *e) {
    if (!compress && kiln_ndarray_is_contiguous(z->arrays[i]))
        return put_stored(o, z, i, e);
    unsigned char *npy = NULL, *def = NULL;
    size_t len = 0, dlen = 0;
    kiln_status st = kiln_npy_serialize(z->arrays[i], &npy, &len);
    if (st) {
        kiln_error_prefix("member '%s'", z->names[i]);
        return st;
    }
    if (compress && (st = deflate_buf(npy, len, &def, &dlen))) {
        free(npy);
        return st;
    }
    e->off = o->pos;
    e->usize = len;
    e->csize = compress ? dlen : len;
    e->crc = npz_crc32(npy, len);
    e->method = compress ? 8 : 0;
    put_local(o, z->names[i], e);
    put(o, compress ? def : npy, (size_t)e->csize);
    free(npy);
    free(def);
    return KILN_OK;
}

kiln_status npz_write_sink(const kiln_npz *z, int compress, npz_sink *k, uint64_t *size) {
    zentry *ents = kiln_calloc((size_t)z->count + 1, sizeof *ents);
    if (!ents)
        return KILN_ERR_NOMEM;
    zout o = {k, 0, 0};
    kiln_status st = KILN_OK;
    for (int i = 0; i < z->count && !st && !o.bad; i++)
        st = put_member(&o, z, i, compress, &ents[i]);
    if (!st && !o.bad) {
        uint64_t cd_off = o.pos;
        for (int i = 0; i < z->count; i++)
            put_central(&o, z->names[i], &ents[i]);
        put_end(&o, (uint64_t)z->count, cd_off, o.pos - cd_off);
    }
    free(ents);
    *size = o.pos;
    if (!st && o.bad)
        st = KILN_ERR_IO; /* the sink set the error */
    return st;
}

kiln_status npz_stored_size(const kiln_npz *z, uint64_t *size) {
    npz_sink count = {NULL, 1};
    return npz_write_sink(z, 0, &count, size);
}

/* A sink into a stdio stream. */
typedef struct {
    npz_sink base;
    FILE *fp;
    const char *what;
} file_sink;

static int file_put(npz_sink *k, const void *p, size_t n) {
    file_sink *f = (file_sink *)k;
    if (fwrite(p, 1, n, f->fp) == n)
        return 0;
    kiln_set_error(KILN_ERR_IO, "%s: write error", f->what);
    return -1;
}

kiln_status kiln_npz_save(const kiln_npz *z, const char *path, int compress) {
    if (!z || !path)
        return kiln_set_error(KILN_ERR_INVALID, "npz_save: NULL argument");
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot create", path);
    file_sink f = {{file_put, 0}, fp, path};
    uint64_t size;
    kiln_status st = npz_write_sink(z, compress, &f.base, &size);
    if (fclose(fp) != 0 && !st)
        st = kiln_set_error(KILN_ERR_IO, "%s: write error", path);
    else if (st && st != KILN_ERR_IO)
        kiln_error_prefix("%s", path);
    if (st)
        remove(path);
    return st;
}
