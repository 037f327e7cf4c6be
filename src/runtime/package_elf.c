/* package_elf.c: what kiln reads from mod.so's bytes before (or instead
 * of) loading it: the ELF64 structure against its length, the machine and
 * the CPU features it needs, and the kiln_module_meta text it exports.
 * dlopen maps mod.so's segments without comparing them with the file's
 * size: a truncated mod.so then died with SIGBUS inside the loader. Every
 * offset read here is checked against the member's length first. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "package.h"

#define ELF_EHDR 64u
#define ELF_PHDR 56u
#define ELF_SHDR 64u
#define ELF_SYM 24u
#define SHT_STRTAB 3u
#define SHT_NOBITS 8u
#define SHT_DYNSYM 11u
#define PT_LOAD 1u
#define ET_DYN 3u
#define EM_X86_64 62u
#define EM_AARCH64 183u

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* 1 if [off, off + len) lies within `size` bytes. */
static int within(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

static kiln_status elf_error(const char *pkg, const char *what, uint64_t size) {
    return kiln_set_error(KILN_ERR_INVALID,
                          "%s: member mod.so (%llu bytes) is truncated or corrupt: %s; the "
                          "package cannot be loaded",
                          pkg, (unsigned long long)size, what);
}

kiln_status pkg_check_elf(const char *pkg, const unsigned char *h, size_t len) {
    uint64_t size = len;
    if (size < ELF_EHDR)
        return elf_error(pkg, "shorter than an ELF header", size);
    if (memcmp(h, "\177ELF", 4) != 0)
        return elf_error(pkg, "not an ELF file (bad magic)", size);
    if (h[4] != 2 || h[5] != 1 || h[6] != 1)
        return elf_error(pkg, "not a little-endian ELF64 file, version 1", size);
    uint64_t type = le(h + 16, 2), phoff = le(h + 32, 8), shoff = le(h + 40, 8);
    uint64_t phentsize = le(h + 54, 2), phnum = le(h + 56, 2);
    uint64_t shentsize = le(h + 58, 2), shnum = le(h + 60, 2);
    if (type != ET_DYN)
        return elf_error(pkg, "not a shared object (e_type is not ET_DYN)", size);
    if (phnum == 0 || phnum == 0xffff || phentsize != ELF_PHDR ||
        !within(phoff, phnum * ELF_PHDR, size))
        return elf_error(pkg, "its program header table lies outside the file", size);
    if (shoff != 0 &&
        (shentsize != ELF_SHDR || !within(shoff, (shnum ? shnum : 1) * ELF_SHDR, size)))
        return elf_error(pkg, "its section header table lies outside the file", size);
    for (uint64_t i = 0; i < phnum; i++) {
        const unsigned char *p = h + phoff + i * ELF_PHDR;
        uint64_t ptype = le(p, 4), off = le(p + 8, 8), filesz = le(p + 32, 8);
        uint64_t memsz = le(p + 40, 8);
        if (!within(off, filesz, size)) {
            char what[160];
            snprintf(what, sizeof what, "segment %llu reaches byte %llu, past the end of the file",
                     (unsigned long long)i, (unsigned long long)(off + filesz));
            return elf_error(pkg, what, size);
        }
        if (ptype == PT_LOAD && filesz > memsz)
            return elf_error(pkg, "a loadable segment is larger in the file than in memory", size);
    }
    return KILN_OK;
}

/* ---- kiln_module_meta, from the dynamic symbol table ---------------------------- */

/* Section header i, or NULL if it lies outside so. */
static const unsigned char *section(const unsigned char *so, uint64_t size, uint64_t i) {
    uint64_t shoff = le(so + 40, 8), shnum = le(so + 60, 2);
    if (shoff == 0 || le(so + 58, 2) != ELF_SHDR || i >= shnum ||
        !within(shoff, shnum * ELF_SHDR, size))
        return NULL;
    return so + shoff + i * ELF_SHDR;
}

char *pkg_elf_module_meta(const unsigned char *so, size_t len) {
    static const char want[] = "kiln_module_meta";
    uint64_t size = len;
    if (size < ELF_EHDR || memcmp(so, "\177ELF", 4) != 0 || so[4] != 2 || so[5] != 1)
        return NULL;
    uint64_t shnum = le(so + 60, 2);
    for (uint64_t s = 0; s < shnum; s++) {
        const unsigned char *sh = section(so, size, s);
        if (!sh || le(sh + 4, 4) != SHT_DYNSYM)
            continue;
        uint64_t symoff = le(sh + 24, 8), symsize = le(sh + 32, 8);
        const unsigned char *strh = section(so, size, le(sh + 40, 4));
        if (!strh || le(strh + 4, 4) != SHT_STRTAB || !within(symoff, symsize, size))
            return NULL;
        uint64_t stroff = le(strh + 24, 8), strsize = le(strh + 32, 8);
        if (!within(stroff, strsize, size))
            return NULL;
        for (uint64_t k = 0; k < symsize / ELF_SYM; k++) {
            const unsigned char *sym = so + symoff + k * ELF_SYM;
            uint64_t name = le(sym, 4);
            if (name >= strsize || strsize - name < sizeof want ||
                memcmp(so + stroff + name, want, sizeof want) != 0)
                continue;
            uint64_t value = le(sym + 8, 8), vsize = le(sym + 16, 8);
            const unsigned char *dh = section(so, size, le(sym + 6, 2));
            if (!dh || le(dh + 4, 4) == SHT_NOBITS)
                return NULL;
            uint64_t addr = le(dh + 16, 8), doff = le(dh + 24, 8), dsize = le(dh + 32, 8);
            if (value < addr || !within(value - addr, vsize, dsize) || !within(doff, dsize, size) ||
                vsize == 0)
                return NULL;
            const unsigned char *text = so + doff + (value - addr);
            const unsigned char *nul = memchr(text, 0, (size_t)vsize);
            if (!nul)
                return NULL;
            char *out = malloc((size_t)(nul - text) + 1);
            if (out)
                memcpy(out, text, (size_t)(nul - text) + 1);
            return out;
        }
        return NULL;
    }
    return NULL;
}

/* ---- the target --------------------------------------------------------------
 * mod.so must be code for this machine: its ELF machine is checked before
 * dlopen, and the x86 features mod.json's "target" lists must be this
 * CPU's, so a package built for another machine gets a clear error instead
 * of a dlopen failure or an illegal instruction. */

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_ARCH "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
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
#endif

kiln_status pkg_check_target(const char *pkg, const unsigned char *so, size_t len,
                             const char *json_text, size_t jlen) {
#ifdef HOST_MACHINE
    if (len < 20 || memcmp(so, "\177ELF", 4) != 0)
        return KILN_OK; /* pkg_check_elf says why */
    unsigned machine = so[5] == 2 ? (unsigned)so[18] << 8 | so[19] : (unsigned)so[19] << 8 | so[18];
    arena *a = arena_new();
    const json *root = a ? json_parse(a, json_text, jlen, "mod.json") : NULL;
    const json *tg = json_get(root, "target");
    const char *str = json_str(json_get(tg, "str"));
    char desc[600];
    snprintf(desc, sizeof desc, "%s%s%s", str ? " (target \"" : "", str ? str : "",
             str ? "\")" : "");
    kiln_status st = KILN_OK;
    if (machine != HOST_MACHINE) {
        const char *arch = machine == EM_X86_64    ? "x86_64"
                           : machine == EM_AARCH64 ? "aarch64"
                                                   : "another CPU";
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: its kernels are %s code%s, but this machine is " HOST_ARCH
                            ": run it with a kiln runtime built for %s",
                            pkg, arch, desc, arch);
    }
    const json *feats = json_get(tg, "features");
    for (int i = 0; !st && i < json_len(feats); i++) {
        const char *name = json_str(json_at(feats, i));
        if (name && cpu_lacks(name))
            st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                                "%s: its kernels need %s%s, which this CPU lacks: compile the "
                                "model for this machine (--target host) or for a CPU it has",
                                pkg, name, desc);
    }
    /* the libraries its external functions call (kiln/byoc.h): a missing
       one is named here, not left to dlopen's message about mod.so */
    const json *ext = json_get(tg, "external");
    for (int i = 0; !st && i < json_len(ext); i++) {
        const char *lib = json_str(json_get(json_at(ext, i), "library"));
        const char *backend = json_str(json_get(json_at(ext, i), "backend"));
        if (!lib || !*lib || strchr(lib, '/'))
            continue;
        /* OpenMP runtimes (oneDNN's) and OpenBLAS read these as they load:
           their idle threads then sleep at once instead of spinning on the
           cores kiln's own kernels run on between the backend's calls
           (BERT-base with dnnl on 2 cores: 149 ms spinning, 59 passive).
           The user's settings win. */
        setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
        void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
        if (h) {
            dlclose(h);
            continue;
        }
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: its kernels call the %s backend's library %s, which this machine "
                            "does not have (install it: Debian's libdnnl2 for dnnl, "
                            "libopenblas0 for blas), or compile the model without --target "
                            "\"%s, ...\"",
                            pkg, backend ? backend : "?", lib, backend ? backend : "?");
    }
    arena_free(a);
    if (!root && !st)
        kiln_clear_error(); /* the executor reports a bad mod.json */
    return st;
#else
    (void)pkg, (void)so, (void)len, (void)json_text, (void)jlen;
    return KILN_OK;
#endif
}
