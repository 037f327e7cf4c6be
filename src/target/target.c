/* target.c: the target object. INTERIM: only the host probe and "llvm" /
 * "host" are implemented here; the full tvmc syntax is being added. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

static kiln_target *target_alloc(void) {
    kiln_target *t = kiln_calloc(1, sizeof *t);
    return t;
}

kiln_target *kiln_target_host(void) {
    kiln_target *t = target_alloc();
    if (!t) return NULL;
    snprintf(t->kind, sizeof t->kind, "llvm");
    snprintf(t->mcpu, sizeof t->mcpu, "native");
    t->is_host = 1;
#if defined(__x86_64__)
    t->arch = TGT_X86_64;
    snprintf(t->triple, sizeof t->triple, "x86_64-linux-gnu");
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx")) t->features |= TGT_AVX;
    if (__builtin_cpu_supports("avx2")) t->features |= TGT_AVX2;
    if (__builtin_cpu_supports("fma")) t->features |= TGT_FMA;
    if (__builtin_cpu_supports("avx512f")) t->features |= TGT_AVX512F;
    t->vector_bytes = target_has(t, TGT_AVX512F) ? 64 : target_has(t, TGT_AVX) ? 32 : 16;
    t->vector_regs = target_has(t, TGT_AVX512F) ? 32 : 16;
#elif defined(__aarch64__)
    t->arch = TGT_AARCH64;
    snprintf(t->triple, sizeof t->triple, "aarch64-linux-gnu");
    t->features |= TGT_NEON | TGT_FMA;
    t->vector_bytes = 16;
    t->vector_regs = 32;
#else
    t->vector_bytes = 16;
    t->vector_regs = 16;
#endif
    /* KILN_VECTOR_BITS narrows the host's vector width (tests run the
       generated code as on an AVX2 or baseline machine) */
    const char *e = getenv("KILN_VECTOR_BITS");
    if (e) {
        long b = strtol(e, NULL, 10);
        if ((b == 128 || b == 256 || b == 512) && b / 8 <= t->vector_bytes) {
            t->vector_bytes = (int)(b / 8);
            if (b < 512) t->vector_regs = 16;
        }
    }
    const char *cc = getenv("KILN_CC"), *fl = getenv("KILN_CFLAGS");
    t->cc = kiln_strdup(cc && *cc ? cc : "cc");
    t->cflags = kiln_strdup(fl && *fl ? fl : "-O3 -march=native");
    t->text = kiln_strdup("llvm -mcpu=native");
    if (!t->cc || !t->cflags || !t->text) {
        kiln_target_free(t);
        return NULL;
    }
    return t;
}

kiln_target *kiln_target_parse(const char *text) {
    if (!text) {
        kiln_set_error(KILN_ERR_INVALID, "target: NULL string");
        return NULL;
    }
    if (!strcmp(text, "llvm") || !strcmp(text, "host") || !strcmp(text, "c") ||
        !strcmp(text, "cpu"))
        return kiln_target_host();
    kiln_set_error(KILN_ERR_INVALID, "target '%s': not supported yet", text);
    return NULL;
}

kiln_target *kiln_target_copy(const kiln_target *s) {
    if (!s) return NULL;
    kiln_target *t = target_alloc();
    if (!t) return NULL;
    *t = *s;
    t->text = kiln_strdup(s->text);
    t->cc = kiln_strdup(s->cc);
    t->cflags = kiln_strdup(s->cflags);
    for (int i = 0; i < s->n_external; i++) t->external[i] = kiln_strdup(s->external[i]);
    return t;
}

void kiln_target_free(kiln_target *t) {
    if (!t) return;
    free(t->text);
    free(t->cc);
    free(t->cflags);
    for (int i = 0; i < t->n_external; i++) free(t->external[i]);
    free(t);
}

const char *kiln_target_str(const kiln_target *t) { return t ? t->text : ""; }
const char *kiln_target_arch(const kiln_target *t) {
    return t && t->arch == TGT_AARCH64 ? "aarch64" : "x86_64";
}
int kiln_target_vector_bits(const kiln_target *t) { return t ? t->vector_bytes * 8 : 0; }
int kiln_target_vector_registers(const kiln_target *t) { return t ? t->vector_regs : 0; }
int64_t kiln_target_cache_bytes(const kiln_target *t, int level) {
    return t && level >= 1 && level <= 3 ? t->cache[level - 1] : 0;
}
const char *kiln_target_cc(const kiln_target *t) { return t ? t->cc : NULL; }
const char *kiln_target_cflags(const kiln_target *t) { return t ? t->cflags : NULL; }

int kiln_target_has(const kiln_target *t, const char *name) {
    static const struct {
        const char *name;
        unsigned bit;
    } f[] = {{"sse4.2", TGT_SSE42},          {"avx", TGT_AVX},         {"avx2", TGT_AVX2},
             {"fma", TGT_FMA},               {"avx512f", TGT_AVX512F}, {"avx512vnni", TGT_AVX512VNNI},
             {"avxvnni", TGT_AVXVNNI},       {"avx512bf16", TGT_AVX512BF16},
             {"neon", TGT_NEON},             {"dotprod", TGT_DOTPROD}, {"f16c", TGT_F16C}};
    if (!t || !name) return 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!strcmp(f[i].name, name)) return target_has(t, f[i].bit);
    return 0;
}

kiln_status kiln_target_set_compiler(kiln_target *t, const char *cc, const char *cflags) {
    if (!t) return kiln_set_error(KILN_ERR_INVALID, "target: NULL");
    if (cc) {
        char *c = kiln_strdup(cc);
        if (!c) return KILN_ERR_NOMEM;
        free(t->cc);
        t->cc = c;
    }
    if (cflags) {
        char *c = kiln_strdup(cflags);
        if (!c) return KILN_ERR_NOMEM;
        free(t->cflags);
        t->cflags = c;
    }
    return KILN_OK;
}
