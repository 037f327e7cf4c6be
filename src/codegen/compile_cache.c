/* compile_cache.c: the kernel cache (compile_cache.h). An entry is one file,
 * DIR/ab/cdef... for the key abcdef... (64 hex digits), holding a header
 * line "kiln-cache 1 SIZE SHA256\n" and then SIZE bytes of content whose
 * digest is SHA256: an entry cut short or changed on disk fails the check
 * and is compiled again, never used. Entries are written to a temporary
 * file beside their place and renamed into it, so a reader sees a whole
 * entry or none, and builds running at once may share the cache. A hit
 * sets the entry's time, and a build that stored entries removes the least
 * recently used ones beyond the size limit. */
#define _GNU_SOURCE
#include "compile_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAGIC "kiln-cache 1 "
#define CACHE_DEFAULT_LIMIT ((int64_t)1 << 30)
/* a temporary file older than this was left by a build that died */
#define CACHE_STALE_TMP_S 3600

struct codegen_cache {
    char dir[4096];
    int64_t limit;
    int stored;
};

/* mkdir -p, new folders private to this user. */
static int make_dirs(const char *path) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* $KILN_CACHE_SIZE in bytes, or the default (with a warning if unreadable). */
static int64_t size_limit(void) {
    const char *v = getenv("KILN_CACHE_SIZE");
    if (!v || !*v)
        return CACHE_DEFAULT_LIMIT;
    char *end;
    long long n = strtoll(v, &end, 10);
    int64_t unit = *end == 'K' || *end == 'k'   ? 1 << 10
                   : *end == 'M' || *end == 'm' ? 1 << 20
                   : *end == 'G' || *end == 'g' ? 1 << 30
                                                : 1;
    if (unit > 1)
        end++;
    int64_t bytes;
    if (end == v || *end || n < 0 || !kiln_mul_ok(n, unit, &bytes)) {
        fprintf(stderr,
                "kiln: warning: KILN_CACHE_SIZE='%s' is not a size (bytes, or a number with K, "
                "M or G); using 1G\n",
                v);
        return CACHE_DEFAULT_LIMIT;
    }
    return bytes;
}

codegen_cache *codegen_cache_open(int setting) {
    if (setting == 0)
        return NULL;
    const char *env = getenv("KILN_CACHE");
    if (setting < 0 && env && (!strcmp(env, "0") || !strcmp(env, "off")))
        return NULL;
    char dir[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') /* the XDG spec: a relative path is ignored */
        n = snprintf(dir, sizeof dir, "%s/kiln", xdg);
    else if (home && home[0] == '/')
        n = snprintf(dir, sizeof dir, "%s/.cache/kiln", home);
    else
        return NULL; /* nowhere to keep it */
    struct stat sb;
    const char *why = NULL;
    if (n >= (int)sizeof dir - 80)
        why = "its path is too long";
    else if (make_dirs(dir) != 0 || stat(dir, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(sb.st_mode))
        why = "it is not a folder";
    else if (sb.st_uid != geteuid() || (sb.st_mode & 022))
        why = "it is not private to this user (owned by another, or writable by others)";
    if (why) {
        fprintf(stderr, "kiln: warning: not using the kernel cache %s: %s\n", dir, why);
        return NULL;
    }
    codegen_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    memcpy(c->dir, dir, sizeof dir);
    c->limit = size_limit();
    return c;
}

const char *codegen_cache_dir(const codegen_cache *c) {
    return c ? c->dir : "";
}

static void entry_path(const codegen_cache *c, const unsigned char key[KILN_SHA256_BYTES],
                       char *sub, size_t subcap, char *path, size_t cap) {
    char hex[KILN_SHA256_HEX];
    kiln_sha256_to_hex(key, hex);
    snprintf(sub, subcap, "%s/%.2s", c->dir, hex);
    snprintf(path, cap, "%s/%s", sub, hex + 2);
}

static void digest_of(const void *data, size_t len, unsigned char out[KILN_SHA256_BYTES]) {
    kiln_sha256 h;
    kiln_sha256_init(&h);
    kiln_sha256_update(&h, data, len);
    kiln_sha256_final(&h, out);
}

int codegen_cache_get(codegen_cache *c, const unsigned char key[KILN_SHA256_BYTES],
                      const char *path, unsigned char digest[KILN_SHA256_BYTES]) {
    if (!c)
        return 0;
    char sub[4200], ep[4300];
    entry_path(c, key, sub, sizeof sub, ep, sizeof ep);
    size_t len;
    char *data = kiln_read_file(ep, &len);
    if (!data) {
        kiln_clear_error(); /* a miss is no error */
        return 0;
    }
    const char *why = NULL;
    size_t mlen = strlen(CACHE_MAGIC);
    char *nl = memchr(data, '\n', len < 200 ? len : 200);
    unsigned long long size = 0;
    char want[KILN_SHA256_HEX] = "", got[KILN_SHA256_HEX];
    if (!nl || len < mlen || memcmp(data, CACHE_MAGIC, mlen) != 0 ||
        sscanf(data + mlen, "%llu %64[0-9a-f]", &size, want) != 2 || strlen(want) != 64)
        why = "no valid header";
    size_t off = nl ? (size_t)(nl + 1 - data) : 0;
    if (!why && size != len - off)
        why = "truncated or too long";
    if (!why) {
        digest_of(data + off, len - off, digest);
        kiln_sha256_to_hex(digest, got);
        if (strcmp(got, want) != 0)
            why = "its content does not match its digest";
    }
    if (why) {
        fprintf(stderr, "kiln: warning: kernel cache entry %s is corrupt (%s); compiling again\n",
                ep, why);
        unlink(ep);
        free(data);
        return 0;
    }
    kiln_status st = kiln_write_file(path, data + off, len - off);
    free(data);
    if (st != KILN_OK) {
        kiln_clear_error();
        return 0;
    }
    utimensat(AT_FDCWD, ep, NULL, 0); /* used now: evicted last */
    return 1;
}

int codegen_cache_put(codegen_cache *c, const unsigned char key[KILN_SHA256_BYTES],
                      const char *path, unsigned char digest[KILN_SHA256_BYTES]) {
    size_t len;
    char *data = kiln_read_file(path, &len);
    if (!data) {
        kiln_clear_error();
        return 0;
    }
    digest_of(data, len, digest);
    if (!c) {
        free(data);
        return 0;
    }
    char sub[4200], ep[4300], tmp[4300], hex[KILN_SHA256_HEX];
    entry_path(c, key, sub, sizeof sub, ep, sizeof ep);
    kiln_sha256_to_hex(digest, hex);
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", sub);
    int fd = -1, ok = 0;
    if (mkdir(sub, 0700) == 0 || errno == EEXIST)
        fd = mkstemp(tmp);
    if (fd >= 0) {
        char head[128];
        int hn = snprintf(head, sizeof head, CACHE_MAGIC "%zu %s\n", len, hex);
        FILE *f = fdopen(fd, "wb");
        if (f) {
            ok = fwrite(head, 1, (size_t)hn, f) == (size_t)hn && fwrite(data, 1, len, f) == len;
            ok = (fclose(f) == 0) && ok;
        } else {
            close(fd);
        }
        ok = ok && rename(tmp, ep) == 0;
        if (!ok)
            unlink(tmp);
    }
    free(data);
    c->stored += ok;
    return ok;
}

typedef struct {
    char *path;
    int64_t size;
    struct timespec used;
} entry;

static int older(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec)
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == 0;
}

/* Remove the least recently used entries until the cache is within its
 * limit, and temporary files left by builds that died. Only names of the
 * cache's own form are touched. */
static void evict(codegen_cache *c) {
    entry *e = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    time_t now = time(NULL);
    DIR *top = opendir(c->dir);
    struct dirent *d;
    while (top && (d = readdir(top))) {
        if (!is_hex(d->d_name, 2))
            continue;
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/%s", c->dir, d->d_name);
        DIR *in = opendir(sub);
        struct dirent *f;
        while (in && (f = readdir(in))) {
            char p[4700];
            snprintf(p, sizeof p, "%s/%s", sub, f->d_name);
            struct stat sb;
            int tmp = !strncmp(f->d_name, ".tmp-", 5);
            if ((!tmp && !is_hex(f->d_name, 62)) || lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
                continue;
            if (tmp) {
                if (now - sb.st_mtime > CACHE_STALE_TMP_S)
                    unlink(p);
                continue;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                entry *ne = realloc(e, cap * sizeof *e);
                if (!ne)
                    break;
                e = ne;
            }
            e[n].path = strdup(p);
            if (!e[n].path)
                break;
            e[n].size = (int64_t)sb.st_size;
            e[n].used = sb.st_mtim;
            total += e[n].size;
            n++;
        }
        if (in)
            closedir(in);
    }
    if (top)
        closedir(top);
    if (total > c->limit) {
        qsort(e, n, sizeof *e, older);
        for (size_t i = 0; i < n && total > c->limit; i++)
            if (unlink(e[i].path) == 0 || errno == ENOENT) /* another build may be evicting */
                total -= e[i].size;
    }
    for (size_t i = 0; i < n; i++)
        free(e[i].path);
    free(e);
}

void codegen_cache_close(codegen_cache *c) {
    if (!c)
        return;
    if (c->stored)
        evict(c);
    free(c);
}
