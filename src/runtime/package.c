/* package.c: model.tar = mod.so + mod.json + mod.params, in POSIX ustar.
 * The reader streams the archive with a fixed buffer: it checks every
 * header's checksum, magic and size against the file, rejects unsafe names
 * (absolute, "..") and non-regular members, extracts mod.so and mod.params
 * into a private temporary folder and reads mod.json into memory.
 * kiln_package_parse reads an archive image in memory the same way, without
 * loading mod.so (tools, and the fuzzer of tests/fuzz/fuzz_package.c). The
 * writer produces deterministic archives (mtime 0, uid 0) atomically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/json.h"
#include "runtime_internal.h"

#define BLOCK 512
#define MAX_JSON_BYTES ((int64_t)256 << 20)
#define MAX_MEMBER_BYTES (((int64_t)1 << 33) - 1) /* 11 octal digits */
#define COPY_CHUNK 65536

enum { M_SO, M_JSON, M_PARAMS, M_COUNT };
static const char *const k_members[M_COUNT] = {"mod.so", "mod.json", "mod.params"};

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
    char *dir; /* the temporary folder */
    int found[M_COUNT];
    char *json;
    size_t json_len;
    unsigned char *mem[M_COUNT]; /* without a folder: mod.so and mod.params in memory */
    size_t mem_len[M_COUNT];
} tar_reader;

/* Copy n bytes of the archive to `out` (a FILE) or to memory `mem`. */
static kiln_status copy_member(tar_reader *t, int64_t n, FILE *out, char *mem, const char *name) {
    char buf[COPY_CHUNK];
    while (n > 0) {
        size_t k = n < COPY_CHUNK ? (size_t)n : COPY_CHUNK;
        if (fread(buf, 1, k, t->f) != k)
            return kiln_set_error(KILN_ERR_IO, "%s: member %s: read error", t->path, name);
        if (out && fwrite(buf, 1, k, out) != k)
            return kiln_set_error(KILN_ERR_IO, "%s: cannot extract %s: %s", t->path, name,
                                  strerror(errno));
        if (mem) {
            memcpy(mem, buf, k);
            mem += k;
        }
        n -= (int64_t)k;
    }
    return KILN_OK;
}

static char *dir_file(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = kiln_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static kiln_status extract(tar_reader *t, int m, int64_t size) {
    const char *name = k_members[m];
    if (m == M_JSON) {
        if (size > MAX_JSON_BYTES)
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: mod.json is %lld bytes, more than the limit "
                                  "of %lld",
                                  t->path, (long long)size, (long long)MAX_JSON_BYTES);
        if (!(t->json = kiln_malloc((size_t)size + 1)))
            return KILN_ERR_NOMEM;
        t->json[size] = 0;
        t->json_len = (size_t)size;
        return copy_member(t, size, NULL, t->json, name);
    }
    if (!t->dir) { /* kiln_package_parse: the size is at most the image's */
        if (!(t->mem[m] = kiln_malloc(size ? (size_t)size : 1)))
            return KILN_ERR_NOMEM;
        t->mem_len[m] = (size_t)size;
        return copy_member(t, size, NULL, (char *)t->mem[m], name);
    }
    char *p = dir_file(t->dir, name);
    if (!p)
        return KILN_ERR_NOMEM;
    FILE *out = fopen(p, "wb");
    kiln_status st =
        out ? copy_member(t, size, out, NULL, name)
            : kiln_set_error(KILN_ERR_IO, "%s: cannot create %s: %s", t->path, p, strerror(errno));
    if (out && fclose(out) != 0 && !st)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot extract %s", t->path, name);
    free(p);
    return st;
}

/* Read one header at offset off. Sets *next (the offset of the following
 * header) and returns 1 for a member, 0 at the end, -1 on error. */
static int read_member(tar_reader *t, int64_t off, int64_t *next) {
    unsigned char h[BLOCK];
    int64_t left = t->file_size - off;
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
    if (*next > t->file_size)
        *next = t->file_size;
    if (type == '5')
        return 1; /* a folder: nothing to extract */
    for (int m = 0; m < M_COUNT; m++) {
        if (strcmp(name, k_members[m]) != 0)
            continue;
        if (t->found[m]++) {
            kiln_set_error(KILN_ERR_IO, "%s: member '%s' appears twice", t->path, name);
            return -1;
        }
        if (extract(t, m, size))
            return -1;
    }
    return 1; /* other members are ignored */
}

/* Read every member; an error unless all three were there. */
static kiln_status read_members(tar_reader *t) {
    for (int64_t off = 0, next = 0;; off = next) {
        int r = read_member(t, off, &next);
        if (r < 0)
            return KILN_ERR_IO;
        if (r == 0)
            break;
    }
    for (int m = 0; m < M_COUNT; m++)
        if (!t->found[m])
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: no member '%s' (a package holds mod.so, "
                                  "mod.json and mod.params)",
                                  t->path, k_members[m]);
    return KILN_OK;
}

static void remove_tmpdir(const char *dir) {
    for (int m = 0; m < M_COUNT; m++) {
        char *p = dir_file(dir, k_members[m]);
        if (p)
            unlink(p);
        free(p);
    }
    rmdir(dir);
}

static char *make_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *d = dir_file(base, "kiln-pkg-XXXXXX");
    if (d && !mkdtemp(d)) {
        kiln_set_error(KILN_ERR_IO, "cannot create a temporary folder in %s: %s", base,
                       strerror(errno));
        free(d);
        return NULL;
    }
    return d;
}

/* ---- mod.so's ELF structure -------------------------------------------------
 * dlopen maps mod.so's segments without comparing them with the file's size:
 * a truncated mod.so then dies with SIGBUS inside the loader. So before
 * dlopen the ELF64 header, the program headers and the section header table
 * are read and checked against the file: a file shorter than its headers
 * promise, or not a little-endian ELF64 shared object, is an error naming
 * the package and the member. */

#define ELF_EHDR 64u
#define ELF_PHDR 56u
#define ELF_SHDR 64u

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* 1 if [off, off + len) lies within a file of `size` bytes. */
static int within(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

static kiln_status elf_error(const tar_reader *t, const char *what, uint64_t size) {
    return kiln_set_error(KILN_ERR_INVALID,
                          "%s: member mod.so (%llu bytes) is truncated or corrupt: %s; the "
                          "package cannot be loaded",
                          t->path, (unsigned long long)size, what);
}

static kiln_status check_elf(const tar_reader *t, const char *so) {
    FILE *f = fopen(so, "rb");
    if (!f)
        return kiln_set_error(KILN_ERR_IO, "%s: mod.so: cannot open: %s", t->path, strerror(errno));
    kiln_status st = KILN_OK;
    unsigned char h[ELF_EHDR], p[ELF_PHDR];
    off_t end = fseeko(f, 0, SEEK_END) == 0 ? ftello(f) : -1;
    uint64_t size = end > 0 ? (uint64_t)end : 0;
    if (end < 0 || fseeko(f, 0, SEEK_SET) != 0) {
        st = kiln_set_error(KILN_ERR_IO, "%s: mod.so: cannot seek", t->path);
        goto done;
    }
    if (size < ELF_EHDR || fread(h, 1, ELF_EHDR, f) != ELF_EHDR) {
        st = elf_error(t, "shorter than an ELF header", size);
        goto done;
    }
    if (memcmp(h, "\177ELF", 4) != 0) {
        st = elf_error(t, "not an ELF file (bad magic)", size);
        goto done;
    }
    if (h[4] != 2 || h[5] != 1 || h[6] != 1) {
        st = elf_error(t, "not a little-endian ELF64 file, version 1", size);
        goto done;
    }
    uint64_t type = le(h + 16, 2), phoff = le(h + 32, 8), shoff = le(h + 40, 8);
    uint64_t phentsize = le(h + 54, 2), phnum = le(h + 56, 2);
    uint64_t shentsize = le(h + 58, 2), shnum = le(h + 60, 2);
    if (type != 3) {
        st = elf_error(t, "not a shared object (e_type is not ET_DYN)", size);
        goto done;
    }
    if (phnum == 0 || phnum == 0xffff || phentsize != ELF_PHDR ||
        !within(phoff, phnum * ELF_PHDR, size)) {
        st = elf_error(t, "its program header table lies outside the file", size);
        goto done;
    }
    if (shoff != 0 &&
        (shentsize != ELF_SHDR || !within(shoff, (shnum ? shnum : 1) * ELF_SHDR, size))) {
        st = elf_error(t, "its section header table lies outside the file", size);
        goto done;
    }
    for (uint64_t i = 0; i < phnum; i++) {
        if (fseeko(f, (off_t)(phoff + i * ELF_PHDR), SEEK_SET) != 0 ||
            fread(p, 1, ELF_PHDR, f) != ELF_PHDR) {
            st = elf_error(t, "cannot read its program headers", size);
            goto done;
        }
        uint64_t ptype = le(p, 4), off = le(p + 8, 8), filesz = le(p + 32, 8);
        uint64_t memsz = le(p + 40, 8);
        if (!within(off, filesz, size)) {
            char what[160];
            snprintf(what, sizeof what, "segment %llu reaches byte %llu, past the end of the file",
                     (unsigned long long)i, (unsigned long long)(off + filesz));
            st = elf_error(t, what, size);
            goto done;
        }
        if (ptype == 1 && filesz > memsz) { /* PT_LOAD */
            st = elf_error(t, "a loadable segment is larger in the file than in memory", size);
            goto done;
        }
    }
done:
    fclose(f);
    return st;
}

/* ---- the target --------------------------------------------------------------
 * mod.so must be code for this machine: its ELF machine is checked before
 * dlopen, and the x86 features mod.json's "target" lists must be this
 * CPU's, so a package built for another machine gets a clear error instead
 * of a dlopen failure or an illegal instruction. */

#if defined(__x86_64__)
#define HOST_MACHINE 62u
#define HOST_ARCH "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE 183u
#define HOST_ARCH "aarch64"
#endif

#ifdef HOST_MACHINE
/* 1 if this CPU lacks x86 feature `name` (one the compilers can test). */
static int cpu_lacks(const char *name) {
#if defined(__x86_64__)
    __builtin_cpu_init();
#define FEATURE(s)                                                                                 \
    if (!strcmp(name, s))                                                                          \
    return !__builtin_cpu_supports(s)
    FEATURE("sse4.2");
    FEATURE("avx");
    FEATURE("avx2");
    FEATURE("fma");
    FEATURE("avx512f");
    FEATURE("avx512cd");
    FEATURE("avx512bw");
    FEATURE("avx512dq");
    FEATURE("avx512vl");
    FEATURE("avx512vnni");
    FEATURE("avx512bf16");
#undef FEATURE
#endif
    (void)name;
    return 0;
}

static kiln_status check_target(const tar_reader *t, const char *so) {
    unsigned char h[20];
    FILE *f = fopen(so, "rb");
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f)
        fclose(f);
    if (n != sizeof h || memcmp(h, "\177ELF", 4) != 0)
        return KILN_OK; /* dlopen says why */
    unsigned machine = h[5] == 2 ? (unsigned)h[18] << 8 | h[19] : (unsigned)h[19] << 8 | h[18];
    arena *a = arena_new();
    const json *root = a ? json_parse(a, t->json, t->json_len, "mod.json") : NULL;
    const json *tg = json_get(root, "target");
    const char *str = json_str(json_get(tg, "str"));
    char desc[600];
    snprintf(desc, sizeof desc, "%s%s%s", str ? " (target \"" : "", str ? str : "",
             str ? "\")" : "");
    kiln_status st = KILN_OK;
    if (machine != HOST_MACHINE) {
        const char *arch = machine == 62 ? "x86_64" : machine == 183 ? "aarch64" : "another CPU";
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: its kernels are %s code%s, but this machine is " HOST_ARCH
                            ": run it with a kiln runtime built for %s",
                            t->path, arch, desc, arch);
    }
    const json *feats = json_get(tg, "features");
    for (int i = 0; !st && i < json_len(feats); i++) {
        const char *name = json_str(json_at(feats, i));
        if (name && cpu_lacks(name))
            st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                                "%s: its kernels need %s%s, which this CPU lacks: compile the "
                                "model for this machine (--target host) or for a CPU it has",
                                t->path, name, desc);
    }
    arena_free(a);
    return st;
}
#endif

kiln_status kiln_package_read(const char *path, char **text, size_t *text_len, kiln_module **mod,
                              kiln_npz **params) {
    *text = NULL;
    *mod = NULL;
    *params = NULL;
    if (!path)
        return kiln_set_error(KILN_ERR_INVALID, "executor_load: NULL path");
    tar_reader t = {path, fopen(path, "rb"), 0, NULL, {0}, NULL, 0};
    if (!t.f)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    kiln_status st = KILN_OK;
    if (fseeko(t.f, 0, SEEK_END) != 0 || (t.file_size = ftello(t.f)) < 0)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot seek", path);
    else if (!(t.dir = make_tmpdir()))
        st = KILN_ERR_IO;
    if (!st)
        st = read_members(&t);
    fclose(t.f);
    char *pp = !st ? dir_file(t.dir, "mod.params") : NULL;
    if (pp) {
        *params = kiln_npz_load(pp);
        if (!*params) {
            kiln_error_prefix("%s: mod.params", path);
            st = KILN_ERR_IO;
        }
        unlink(pp);
        free(pp);
    }
    char *so = !st ? dir_file(t.dir, "mod.so") : NULL;
    if (so && (st = check_elf(&t, so)) != KILN_OK) {
        free(so);
        so = NULL;
    }
#ifdef HOST_MACHINE
    if (so && (st = check_target(&t, so)) != KILN_OK) {
        free(so);
        so = NULL;
    }
#endif
    if (so) {
        *mod = kiln_module_load_owned(so, t.dir); /* now owns the folder */
        if (!*mod) {
            kiln_error_prefix("%s: mod.so", path);
            st = KILN_ERR_IO;
        }
        free(so);
    }
    if (st && t.dir)
        remove_tmpdir(t.dir);
    free(t.dir);
    if (st) {
        kiln_npz_free(*params);
        *params = NULL;
        free(t.json);
        return st;
    }
    *text = t.json;
    *text_len = t.json_len;
    return KILN_OK;
}

kiln_status kiln_package_parse(const void *buf, size_t len, const char *name, char **text,
                               size_t *text_len, unsigned char **so, size_t *so_len,
                               kiln_npz **params) {
    *text = NULL;
    *text_len = *so_len = 0;
    *so = NULL;
    *params = NULL;
    if (!buf && len)
        return kiln_set_error(KILN_ERR_INVALID, "package_parse: NULL image");
    if (!name)
        name = "<memory>";
    tar_reader t = {name, NULL, (int64_t)len, NULL, {0}, NULL, 0, {0}, {0}};
    if (len && !(t.f = fmemopen((void *)buf, len, "rb")))
        return kiln_set_error(KILN_ERR_NOMEM, "%s: cannot read the image: %s", name,
                              strerror(errno));
    kiln_status st = read_members(&t);
    if (t.f)
        fclose(t.f);
    if (!st && !(*params = kiln_npz_parse(t.mem[M_PARAMS], t.mem_len[M_PARAMS], "mod.params"))) {
        kiln_error_prefix("%s", name);
        st = KILN_ERR_IO;
    }
    free(t.mem[M_PARAMS]);
    if (st) {
        free(t.json);
        free(t.mem[M_SO]);
        return st;
    }
    *text = t.json;
    *text_len = t.json_len;
    *so = t.mem[M_SO];
    *so_len = t.mem_len[M_SO];
    return KILN_OK;
}

/* ---- writing ------------------------------------------------------------------ */

static kiln_status write_header(FILE *out, const char *name, int64_t size, const char *path) {
    unsigned char h[BLOCK] = {0};
    if (size > MAX_MEMBER_BYTES)
        return kiln_set_error(KILN_ERR_INVALID,
                              "%s: member %s is too large for ustar (%lld "
                              "bytes)",
                              path, name, (long long)size);
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
    return fwrite(h, 1, BLOCK, out) == BLOCK ? KILN_OK
                                             : kiln_set_error(KILN_ERR_IO, "%s: write error", path);
}

static kiln_status write_padding(FILE *out, int64_t size, const char *path) {
    static const unsigned char zero[BLOCK];
    size_t pad = (size_t)((BLOCK - size % BLOCK) % BLOCK);
    return fwrite(zero, 1, pad, out) == pad ? KILN_OK
                                            : kiln_set_error(KILN_ERR_IO, "%s: write error", path);
}

/* Append the file at src as member `name`. */
static kiln_status write_file_member(FILE *out, const char *name, const char *src,
                                     const char *path) {
    FILE *in = fopen(src, "rb");
    if (!in)
        return kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    struct stat sb;
    kiln_status st = fstat(fileno(in), &sb) != 0 || !S_ISREG(sb.st_mode)
                         ? kiln_set_error(KILN_ERR_IO, "%s: not a regular file", src)
                         : write_header(out, name, (int64_t)sb.st_size, path);
    char buf[COPY_CHUNK];
    int64_t left = (int64_t)sb.st_size;
    while (!st && left > 0) {
        size_t k = left < COPY_CHUNK ? (size_t)left : COPY_CHUNK;
        if (fread(buf, 1, k, in) != k)
            st = kiln_set_error(KILN_ERR_IO, "%s: read error (did it change?)", src);
        else if (fwrite(buf, 1, k, out) != k)
            st = kiln_set_error(KILN_ERR_IO, "%s: write error", path);
        left -= (int64_t)k;
    }
    fclose(in);
    return st ? st : write_padding(out, (int64_t)sb.st_size, path);
}

static char *temp_beside(const char *path, const char *suffix) {
    size_t n = strlen(path) + strlen(suffix) + 8;
    char *p = kiln_malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%s%sXXXXXX", path, suffix);
    int fd = mkstemp(p);
    if (fd < 0) {
        kiln_set_error(KILN_ERR_IO, "%s: cannot create a temporary file: %s", path,
                       strerror(errno));
        free(p);
        return NULL;
    }
    close(fd);
    return p;
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
    if (!params && !empty)
        return KILN_ERR_NOMEM;
    char *ptmp = temp_beside(path, ".params.");
    char *ttmp = ptmp ? temp_beside(path, ".tmp.") : NULL;
    kiln_status st = !ttmp ? KILN_ERR_IO : kiln_npz_save(params ? params : empty, ptmp, 0);
    FILE *out = !st ? fopen(ttmp, "wb") : NULL;
    if (!st && !out)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot create: %s", ttmp, strerror(errno));
    if (!st)
        st = write_file_member(out, "mod.so", so_path, path);
    if (!st)
        st = write_header(out, "mod.json", (int64_t)json_len, path);
    if (!st && fwrite(text, 1, json_len, out) != json_len)
        st = kiln_set_error(KILN_ERR_IO, "%s: write error", path);
    if (!st)
        st = write_padding(out, (int64_t)json_len, path);
    if (!st)
        st = write_file_member(out, "mod.params", ptmp, path);
    if (!st) { /* the end-of-archive marker: two zero blocks */
        static const unsigned char zero[2 * BLOCK];
        if (fwrite(zero, 1, sizeof zero, out) != sizeof zero)
            st = kiln_set_error(KILN_ERR_IO, "%s: write error", path);
    }
    if (out && fclose(out) != 0 && !st)
        st = kiln_set_error(KILN_ERR_IO, "%s: write error", path);
    if (!st && rename(ttmp, path) != 0)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (ttmp) {
        if (st)
            unlink(ttmp);
        free(ttmp);
    }
    if (ptmp)
        unlink(ptmp);
    free(ptmp);
    kiln_npz_free(empty);
    return st;
}
