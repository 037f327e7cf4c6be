/* test_base_sha256.c: SHA-256 against the NIST examples (FIPS 180-4's
 * SHA256 example documents, and the one-million-'a' long message), and
 * the incremental interface fed in every split of a message; each with
 * the portable code and, where the CPU has them, the SHA extensions, which
 * must also agree with it on random messages of every length to 4 KiB. */
#include "base/sha256.h"
#include "check.h"

static void check_hex(const char *msg, size_t len, const char *want) {
    char hex[KILN_SHA256_HEX];
    kiln_sha256_hex(msg, len, hex);
    CHECK_EQ_STR(hex, want);
}

static void test_nist_vectors(void) {
    check_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_hex(m448, strlen(m448),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_hex(m896, strlen(m896),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    /* one million 'a', fed in pieces of 1000 */
    char a[1000];
    memset(a, 'a', sizeof a);
    kiln_sha256 s;
    unsigned char d[KILN_SHA256_BYTES];
    char hex[KILN_SHA256_HEX];
    kiln_sha256_init(&s);
    for (int i = 0; i < 1000; i++)
        kiln_sha256_update(&s, a, sizeof a);
    kiln_sha256_final(&s, d);
    kiln_sha256_to_hex(d, hex);
    CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the padding boundaries (55, 56, 63, 64 bytes), each
 * split at every point, give the digest of the one-piece update. */
static void test_incremental(void) {
    unsigned char msg[130];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 37 + 11);
    static const size_t lens[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 130};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        char whole[KILN_SHA256_HEX], part[KILN_SHA256_HEX];
        kiln_sha256_hex(msg, lens[l], whole);
        for (size_t cut = 0; cut <= lens[l]; cut++) {
            kiln_sha256 s;
            unsigned char d[KILN_SHA256_BYTES];
            kiln_sha256_init(&s);
            kiln_sha256_update(&s, msg, cut);
            kiln_sha256_update(&s, NULL, 0);
            kiln_sha256_update(&s, msg + cut, lens[l] - cut);
            kiln_sha256_final(&s, d);
            kiln_sha256_to_hex(d, part);
            CHECK_EQ_STR(part, whole);
        }
    }
    /* 55 and 56 bytes of 'a' differ in whether the length fits the block */
    char a[64];
    memset(a, 'a', sizeof a);
    check_hex(a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    check_hex(a, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    check_hex(a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

/* The same tests through the portable code, then the SHA extensions. */
static void test_both_paths(void) {
    int have = kiln_sha256_accelerated(1);
    printf("SHA extensions: %s\n", have ? "yes, tested" : "no (portable code only)");
    for (int use = 0; use <= have; use++) {
        CHECK_EQ_INT(kiln_sha256_accelerated(use), use);
        test_nist_vectors();
        test_incremental();
    }
    if (have) { /* random messages: both paths agree */
        static unsigned char msg[4096];
        uint64_t x = 88172645463325252ull;
        for (size_t i = 0; i < sizeof msg; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            msg[i] = (unsigned char)x;
        }
        for (size_t len = 0; len <= sizeof msg; len += len < 200 ? 1 : 61) {
            char h0[KILN_SHA256_HEX], h1[KILN_SHA256_HEX];
            kiln_sha256_accelerated(0);
            kiln_sha256_hex(msg, len, h0);
            kiln_sha256_accelerated(1);
            kiln_sha256_hex(msg, len, h1);
            CHECK_EQ_STR(h1, h0);
        }
    }
    kiln_sha256_accelerated(have);
}

TEST_MAIN(TEST(test_nist_vectors), TEST(test_incremental), TEST(test_both_paths))
