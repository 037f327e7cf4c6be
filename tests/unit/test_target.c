/* test_target.c: target strings (kiln/target.h). Every form tvmc accepts
 * parses to the CPU, features, vector width, registers, caches and C
 * compiler it names; the canonical string parses back to the same target;
 * a bad string is one error naming the bad word. */
#include <stdlib.h>

#include "check.h"
#include "kiln/target.h"
#include "target/target.h"

/* Parse s; CHECK it worked. */
static kiln_target *parse(const char *s) {
    kiln_target *t = kiln_target_parse(s);
    CHECK(t != NULL);
    if (!t)
        fprintf(stderr, "parse \"%s\": %s\n", s, kiln_last_error());
    return t;
}

/* The canonical string of s parses to the same target, printed the same. */
static void check_round_trip(const char *s) {
    kiln_target *a = parse(s);
    if (!a)
        return;
    kiln_target *b = parse(kiln_target_str(a));
    if (b) {
        CHECK_EQ_STR(kiln_target_str(b), kiln_target_str(a));
        CHECK_EQ_INT(b->features, a->features);
        CHECK_EQ_INT(b->vector_bytes, a->vector_bytes);
        CHECK_EQ_INT(b->vector_regs, a->vector_regs);
        CHECK_EQ_STR(b->cflags, a->cflags);
        CHECK_EQ_STR(b->cc, a->cc);
    }
    kiln_target_free(a);
    kiln_target_free(b);
}

/* Parsing s fails with status st and a message containing each of the
 * NULL-terminated fragments. */
static void check_bad(const char *s, kiln_status st, const char *frag1, const char *frag2) {
    kiln_clear_error();
    kiln_target *t = kiln_target_parse(s);
    CHECK(t == NULL);
    kiln_target_free(t);
    CHECK_CONTAINS(kiln_last_error(), frag1);
    if (frag2)
        CHECK_CONTAINS(kiln_last_error(), frag2);
    kiln_target *u = NULL;
    CHECK_EQ_INT(target_parse(s, &u), st);
    CHECK(u == NULL);
}

static void test_named_x86(void) {
    kiln_target *t = parse("llvm -mcpu=haswell");
    if (t) {
        CHECK_EQ_STR(kiln_target_arch(t), "x86_64");
        CHECK_EQ_STR(kiln_target_cpu(t), "haswell");
        CHECK_EQ_INT(kiln_target_vector_bits(t), 256);
        CHECK_EQ_INT(kiln_target_vector_registers(t), 16);
        CHECK(kiln_target_has(t, "avx2") && kiln_target_has(t, "fma"));
        CHECK(!kiln_target_has(t, "avx512f") && !kiln_target_has(t, "neon"));
        CHECK(!kiln_target_has(t, "no-such-feature"));
        CHECK_EQ_STR(kiln_target_str(t), "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
        CHECK_EQ_INT(kiln_target_cache_bytes(t, 1), 32 * 1024);
        CHECK_EQ_INT(kiln_target_cache_bytes(t, 4), 0);
        char *f = kiln_target_features(t);
        CHECK_EQ_STR(f, "sse4.2,avx,f16c,fma,avx2");
        free(f);
        if (!getenv("KILN_CFLAGS"))
            CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -march=haswell");
        if (!getenv("KILN_CC"))
            CHECK_EQ_STR(kiln_target_cc(t), "cc");
    }
    kiln_target_free(t);
    /* AVX-512 parts: 512-bit vectors and 32 registers */
    static const char *const wide[] = {"skylake-avx512", "cascadelake", "icelake-server",
                                       "sapphirerapids", "znver4",      "znver5",
                                       "x86-64-v4"};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        char s[64];
        snprintf(s, sizeof s, "llvm -mcpu=%s", wide[i]);
        t = parse(s);
        if (t) {
            CHECK_EQ_INT(kiln_target_vector_bits(t), 512);
            CHECK_EQ_INT(kiln_target_vector_registers(t), 32);
            CHECK(kiln_target_has(t, "avx512f"));
        }
        kiln_target_free(t);
    }
    t = parse("cpu -mcpu=sapphirerapids");
    if (t) {
        CHECK(kiln_target_has(t, "avx512vnni") && kiln_target_has(t, "avxvnni") &&
              kiln_target_has(t, "avx512bf16"));
        CHECK_EQ_STR(kiln_target_str(t), "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids");
    }
    kiln_target_free(t);
    /* baseline x86-64: 128-bit SSE, 16 registers */
    static const char *const narrow[] = {"x86-64", "x86-64-v2"};
    for (int i = 0; i < 2; i++) {
        char s[64];
        snprintf(s, sizeof s, "llvm -mcpu=%s", narrow[i]);
        t = parse(s);
        if (t) {
            CHECK_EQ_INT(kiln_target_vector_bits(t), 128);
            CHECK_EQ_INT(kiln_target_vector_registers(t), 16);
        }
        kiln_target_free(t);
    }
    /* gcc 12 lacks -march=znver4: its flags spell the ISA out */
    t = parse("llvm -mcpu=znver4");
    if (t && !getenv("KILN_CFLAGS"))
        CHECK_CONTAINS(kiln_target_cflags(t), "-march=x86-64-v4");
    kiln_target_free(t);
}

static void test_mattr(void) {
    /* features on top of the baseline, with what they imply */
    kiln_target *t = parse("llvm -mattr=+avx2,+fma");
    if (t) {
        CHECK_EQ_STR(kiln_target_cpu(t), "x86-64");
        CHECK_EQ_INT(kiln_target_vector_bits(t), 256);
        CHECK_EQ_INT(kiln_target_vector_registers(t), 16);
        CHECK(kiln_target_has(t, "avx") && kiln_target_has(t, "sse4.2"));
        CHECK_EQ_STR(kiln_target_str(t),
                     "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64 -mattr=+fma,+avx2");
        if (!getenv("KILN_CFLAGS"))
            CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -march=x86-64 -mfma -mavx2");
    }
    kiln_target_free(t);
    /* -avx512f narrows an AVX-512 CPU to AVX2 and drops what needs it */
    t = parse("llvm -mcpu=cascadelake -mattr=-avx512f");
    if (t) {
        CHECK_EQ_INT(kiln_target_vector_bits(t), 256);
        CHECK_EQ_INT(kiln_target_vector_registers(t), 16);
        CHECK(!kiln_target_has(t, "avx512vnni") && !kiln_target_has(t, "avx512bw"));
        CHECK(kiln_target_has(t, "avx2"));
        if (!getenv("KILN_CFLAGS"))
            CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -march=cascadelake -mno-avx512f");
        CHECK_EQ_STR(kiln_target_str(t),
                     "llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake -mattr=-avx512f");
    }
    kiln_target_free(t);
    /* +avx512vnni brings AVX-512 with it */
    t = parse("llvm -mcpu=haswell -mattr=+avx512vnni");
    if (t) {
        CHECK_EQ_INT(kiln_target_vector_bits(t), 512);
        CHECK(kiln_target_has(t, "avx512f"));
    }
    kiln_target_free(t);
    /* an -mattr that changes nothing is not printed */
    t = parse("llvm -mcpu=haswell -mattr=+avx2");
    if (t)
        CHECK_EQ_STR(kiln_target_str(t), "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
    kiln_target_free(t);
}

static void test_aarch64(void) {
    kiln_target *t = parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
    if (t) {
        CHECK_EQ_STR(kiln_target_arch(t), "aarch64");
        CHECK_EQ_INT(kiln_target_vector_bits(t), 128);
        CHECK_EQ_INT(kiln_target_vector_registers(t), 32);
        CHECK(kiln_target_has(t, "neon") && !kiln_target_has(t, "dotprod"));
        CHECK(!kiln_target_has(t, "avx2"));
        CHECK_EQ_STR(kiln_target_cc(t), "aarch64-linux-gnu-gcc");
        CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -mcpu=cortex-a72");
        CHECK_EQ_STR(kiln_target_str(t), "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
    }
    kiln_target_free(t);
    /* no -mcpu: the generic armv8-a; -mattr adds +ext modifiers */
    t = parse("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod");
    if (t) {
        CHECK_EQ_STR(kiln_target_cpu(t), "generic");
        CHECK(kiln_target_has(t, "dotprod"));
        CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -march=armv8-a+dotprod");
        CHECK_EQ_STR(kiln_target_str(t),
                     "llvm -mtriple=aarch64-linux-gnu -mcpu=generic -mattr=+dotprod");
    }
    kiln_target_free(t);
    /* an aarch64 CPU name implies its triple; a triple alone gets a suffix */
    t = parse("llvm -mcpu=neoverse-n1 -mattr=-dotprod");
    if (t) {
        CHECK_EQ_STR(kiln_target_arch(t), "aarch64");
        CHECK(!kiln_target_has(t, "dotprod") && kiln_target_has(t, "fp16"));
        CHECK_EQ_STR(kiln_target_cflags(t), "-O3 -mcpu=neoverse-n1+nodotprod");
    }
    kiln_target_free(t);
    t = parse("llvm -mtriple=aarch64");
    if (t)
        CHECK_EQ_STR(kiln_target_str(t), "llvm -mtriple=aarch64-linux-gnu -mcpu=generic");
    kiln_target_free(t);
    t = parse("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=apple-m1");
    if (t) {
        CHECK_EQ_STR(kiln_target_cc(t), "aarch64-unknown-linux-gnu-gcc");
        CHECK(kiln_target_has(t, "dotprod"));
    }
    kiln_target_free(t);
    static const char *const cpus[] = {"generic",     "cortex-a53",  "cortex-a55",
                                       "cortex-a72",  "cortex-a76",  "neoverse-n1",
                                       "neoverse-n2", "neoverse-v1", "apple-m1"};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        char s[96];
        snprintf(s, sizeof s, "llvm -mtriple=aarch64-linux-gnu -mcpu=%s", cpus[i]);
        t = parse(s);
        if (t)
            CHECK_EQ_INT(kiln_target_vector_registers(t), 32);
        kiln_target_free(t);
    }
}

static void test_host(void) {
    kiln_target *h = kiln_target_host(), *l = parse("llvm"), *c = parse("c"), *u = parse("cpu");
    CHECK(h != NULL);
    if (h && l && c && u) {
        CHECK_EQ_STR(kiln_target_cpu(h), "native");
        CHECK(h->is_host);
        CHECK_EQ_STR(kiln_target_str(l), kiln_target_str(h));
        CHECK_EQ_STR(kiln_target_str(u), kiln_target_str(h));
        CHECK_EQ_INT(l->features, h->features);
        CHECK_EQ_STR(c->kind, "c");
        CHECK(strncmp(kiln_target_str(c), "c -mtriple=", 11) == 0);
#if defined(__x86_64__)
        CHECK_EQ_STR(kiln_target_arch(h), "x86_64");
        int bits = __builtin_cpu_supports("avx512f") ? 512
                   : __builtin_cpu_supports("avx")   ? 256
                                                     : 128;
        CHECK_EQ_INT(kiln_target_vector_bits(h), bits);
        CHECK_EQ_INT(kiln_target_vector_registers(h), bits == 512 ? 32 : 16);
        CHECK_EQ_INT(kiln_target_has(h, "avx2"), !!__builtin_cpu_supports("avx2"));
        CHECK_EQ_INT(kiln_target_has(h, "fma"), !!__builtin_cpu_supports("fma"));
        CHECK_EQ_INT(kiln_target_has(h, "avx512bw"), !!__builtin_cpu_supports("avx512bw"));
        CHECK_EQ_INT(kiln_target_has(h, "avx512vnni"), !!__builtin_cpu_supports("avx512vnni"));
        if (!getenv("KILN_CFLAGS"))
            CHECK_EQ_STR(kiln_target_cflags(h), "-O3 -march=native");
#endif
        /* a cache size the OS reports, within reason */
        int64_t l1 = kiln_target_cache_bytes(h, 1);
        CHECK(l1 == 0 || (l1 >= 4096 && l1 <= (1 << 22)));
    }
    kiln_target_free(h);
    kiln_target_free(l);
    kiln_target_free(c);
    kiln_target_free(u);
    /* features off the probe: -mcpu=native keeps -march=native */
    kiln_target *n = parse("llvm -mcpu=native -mattr=-avx512f");
    if (n) {
        CHECK(kiln_target_vector_bits(n) <= 256);
        CHECK_EQ_INT(kiln_target_vector_registers(n), 16);
    }
    kiln_target_free(n);
    n = parse("host -mattr=-avx");
    if (n)
        CHECK_EQ_INT(kiln_target_vector_bits(n), 128);
    kiln_target_free(n);
}

static void test_round_trip(void) {
    static const char *const forms[] = {
        "llvm",
        "cpu",
        "c",
        "host",
        "host -mattr=-avx512f",
        "llvm -mcpu=haswell",
        "llvm -mcpu=x86-64 -mattr=+avx2",
        "llvm -mattr=+avx512f,-fma",
        "llvm -mcpu=skylake-avx512 -mattr=-avx512f,+avxvnni",
        "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3",
        "  llvm   -mcpu=icelake-server   ",
        "c -mcpu=znver5",
        "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
        "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n2 -mattr=-bf16,+fp16",
        "llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod,+i8mm"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        check_round_trip(forms[i]);
}

static void test_compiler(void) {
    kiln_target *t = parse("llvm -mcpu=haswell");
    if (!t)
        return;
    CHECK_EQ_INT(kiln_target_set_compiler(t, "clang", NULL), KILN_OK);
    CHECK_EQ_STR(kiln_target_cc(t), "clang");
    CHECK_EQ_INT(kiln_target_set_compiler(t, NULL, "-O2"), KILN_OK);
    CHECK_EQ_STR(kiln_target_cc(t), "clang");
    CHECK_EQ_STR(kiln_target_cflags(t), "-O2");
    CHECK_EQ_INT(kiln_target_set_compiler(t, "", NULL), KILN_ERR_INVALID);
    kiln_target *c = kiln_target_copy(t);
    kiln_target_free(t);
    CHECK(c != NULL);
    if (c) {
        CHECK_EQ_STR(kiln_target_cc(c), "clang");
        CHECK_EQ_STR(kiln_target_str(c), "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
        /* narrowing the vectors */
        CHECK_EQ_INT(kiln_target_set_vector_bits(c, 128), KILN_OK);
        CHECK_EQ_INT(kiln_target_vector_bits(c), 128);
        CHECK_EQ_INT(kiln_target_set_vector_bits(c, 512), KILN_OK);
        CHECK_EQ_INT(kiln_target_vector_registers(c), 32);
        CHECK_EQ_INT(kiln_target_set_vector_bits(c, 100), KILN_ERR_INVALID);
    }
    kiln_target_free(c);
    kiln_target *a = parse("llvm -mtriple=aarch64-linux-gnu");
    if (a) {
        CHECK_EQ_INT(kiln_target_set_vector_bits(a, 256), KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "aarch64 vectors are 128");
    }
    kiln_target_free(a);
    /* NULL handles are errors or empty answers, never crashes */
    CHECK(kiln_target_copy(NULL) == NULL);
    CHECK(kiln_target_parse(NULL) == NULL);
    CHECK_EQ_INT(kiln_target_set_compiler(NULL, "cc", NULL), KILN_ERR_INVALID);
    CHECK_EQ_STR(kiln_target_str(NULL), "");
    CHECK_EQ_INT(kiln_target_vector_bits(NULL), 0);
    CHECK_EQ_INT(kiln_target_has(NULL, "avx2"), 0);
    kiln_target_free(NULL);
}

static void test_bad(void) {
    check_bad("", KILN_ERR_INVALID, "target \"\": empty", NULL);
    check_bad("   ", KILN_ERR_INVALID, "empty", NULL);
    check_bad("llvmx", KILN_ERR_UNSUPPORTED, "unknown target kind 'llvmx'", "llvm, cpu, c or host");
    check_bad("cuda", KILN_ERR_UNSUPPORTED, "target 'cuda' is not supported", NULL);
    check_bad("llvm -mcpu=nosuchcpu", KILN_ERR_INVALID, "unknown CPU 'nosuchcpu'", "haswell");
    check_bad("llvm -mcpu=a;b", KILN_ERR_INVALID, "unknown CPU 'a;b'", NULL);
    check_bad("llvm -mcpu=", KILN_ERR_INVALID, "'-mcpu=' needs a value", NULL);
    check_bad("llvm -mcpu", KILN_ERR_INVALID, "'-mcpu' needs a value", NULL);
    check_bad("llvm -mcpu=haswell -mcpu=skylake", KILN_ERR_INVALID, "-mcpu is given twice", NULL);
    /* found by fuzz_flags: a long triple was cut to 63 characters, and the
       target then printed a string that did not parse */
    check_bad(
        "llvm -mtriple=aarch64-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-linux-gnu",
        KILN_ERR_INVALID, "is longer than 63 characters", NULL);
    check_bad("llvm -mfoo=1", KILN_ERR_INVALID, "unknown option '-mfoo'", "-mtriple, -mcpu");
    check_bad("llvm haswell", KILN_ERR_INVALID, "unexpected word 'haswell'", NULL);
    check_bad("-mcpu=haswell", KILN_ERR_INVALID, "'-mcpu=haswell' comes before the target kind",
              NULL);
    check_bad("llvm -mattr=+avx3", KILN_ERR_INVALID, "unknown feature '+avx3'", "avx512f");
    check_bad("llvm -mattr=avx2", KILN_ERR_INVALID, "feature 'avx2' in -mattr needs a '+' or '-'",
              NULL);
    check_bad("llvm -mattr=+avx2,,+fma", KILN_ERR_INVALID, "bad -mattr list", NULL);
    check_bad("llvm -mtriple=aarch64-linux-gnu -mattr=+avx2", KILN_ERR_INVALID,
              "unknown feature '+avx2' for aarch64", "dotprod");
    check_bad("llvm -mtriple=aarch64-linux-gnu -mattr=-neon", KILN_ERR_INVALID, "'-neon'", NULL);
    check_bad("llvm -mtriple=riscv64-linux-gnu", KILN_ERR_UNSUPPORTED,
              "unsupported -mtriple 'riscv64-linux-gnu'", NULL);
    check_bad("llvm -mtriple=aarch64-none-elf", KILN_ERR_UNSUPPORTED, "not a Linux triple", NULL);
    check_bad("llvm -mtriple=aarch64-linux-gnu -mcpu=haswell", KILN_ERR_INVALID,
              "CPU 'haswell' is x86_64", NULL);
    check_bad("llvm -mtriple=x86_64-linux-gnu -mcpu=cortex-a72", KILN_ERR_INVALID,
              "CPU 'cortex-a72' is aarch64", NULL);
    check_bad("host -mcpu=haswell", KILN_ERR_INVALID, "'host' is this machine's CPU", NULL);
    check_bad("llvm -device=gpu", KILN_ERR_INVALID, "unknown device 'gpu'", NULL);
    /* composite strings: backend names before the CPU part (the build checks
       that they exist) */
    kiln_target *ct = kiln_target_parse("dnnl, blas,llvm -mcpu=haswell");
    CHECK(ct && kiln_target_num_external(ct) == 2);
    CHECK_EQ_STR(kiln_target_external(ct, 0), "dnnl");
    CHECK_EQ_STR(kiln_target_external(ct, 1), "blas");
    CHECK(kiln_target_external(ct, 2) == NULL);
    CHECK_CONTAINS(kiln_target_str(ct), "dnnl, blas, llvm");
    kiln_target_free(ct);
    check_bad("dnnl x, llvm", KILN_ERR_INVALID, "is not an external backend's name", NULL);
    check_bad("dn-nl, llvm", KILN_ERR_INVALID, "'dn-nl' is not an external backend", NULL);
    check_bad("dnnl, dnnl, llvm", KILN_ERR_INVALID, "named twice", NULL);
    check_bad("llvm, llvm", KILN_ERR_INVALID, "only the last part", NULL);
    check_bad("dnnl, ", KILN_ERR_INVALID, "an empty part after ','", NULL);
    check_bad(", llvm", KILN_ERR_INVALID, "an empty part before ','", NULL);
    check_bad("llvm -mattr=+avx2, llvm", KILN_ERR_INVALID, "only the last part", NULL);
    /* the bad word is named, in the message with the whole string */
    check_bad("llvm -mcpu=haswell -mattr=+avx2,+nosuch", KILN_ERR_INVALID,
              "target \"llvm -mcpu=haswell -mattr=+avx2,+nosuch\": unknown feature '+nosuch'",
              NULL);
    char big[1100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    check_bad(big, KILN_ERR_INVALID, "longer than 1000 bytes", NULL);
}

/* -mcpu=native for another architecture is an error naming it. */
static void test_native_cross(void) {
#if defined(__x86_64__)
    check_bad("llvm -mtriple=aarch64-linux-gnu -mcpu=native", KILN_ERR_INVALID,
              "-mcpu=native names this machine's x86_64 CPU", "cortex-a72");
#endif
}

TEST_MAIN(TEST(test_named_x86), TEST(test_mattr), TEST(test_aarch64), TEST(test_host),
          TEST(test_round_trip), TEST(test_compiler), TEST(test_bad), TEST(test_native_cross))
