/* sha256.c: SHA-256 as FIPS 180-4 section 6.2 defines it: 512-bit blocks,
 * a 64-word message schedule, 64 rounds with the constants K (the first 32
 * bits of the fractional parts of the cube roots of the first 64 primes),
 * and padding with a 1 bit, zeros and the 64-bit big-endian bit length.
 * On an x86-64 CPU with the SHA extensions the blocks go through them
 * (about 5x faster: a package's 100 MB of weights are hashed when it is
 * written and when it is loaded); elsewhere through the portable code. */
#include "sha256.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_X86 1
#endif

static const uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) {
    return x >> n | x << (32 - n);
}

/* One 64-byte block into the state (section 6.2.2). */
static void compress(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ w[t - 15] >> 3;
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ w[t - 2] >> 10;
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      k_round[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

#ifdef SHA256_X86
/* n blocks with the SHA extensions. They keep the state as two vectors,
 * ABEF and CDGH (lane 3 first), and do two rounds an instruction; the
 * message schedule is four words a step: W[t..t+3] from msg1 (W[t-16] +
 * s0(W[t-15])), the words t-7..t-4 and msg2 (+ s1 of the two before). */
__attribute__((target("sha,sse4.1,ssse3"))) static void
blocks_shani(uint32_t h[8], const unsigned char *p, size_t n) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&h[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&h[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1), efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8), cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; n; n--, p += 64) {
        __m128i m[16], s0 = abef, s1 = cdgh;
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
        for (int i = 4; i < 16; i++)
            m[i] = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(m[i - 4], m[i - 3]),
                                                      _mm_alignr_epi8(m[i - 1], m[i - 2], 4)),
                                        m[i - 1]);
        for (int i = 0; i < 16; i++) {
            __m128i wk = _mm_add_epi32(m[i], _mm_loadu_si128((const __m128i *)&k_round[4 * i]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, s0);
        cdgh = _mm_add_epi32(cdgh, s1);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* 1 if this CPU has the SHA extensions and SSE4.1 (and the OS runs it). */
static int cpu_has_sha(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)) ||
        !(c & (1u << 9)))
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1;
}
#endif

/* -1 until decided; then 1 to use the SHA extensions, 0 not. Racing
 * first calls decide the same. */
static int g_accel = -1;

int kiln_sha256_accelerated(int use) {
#ifdef SHA256_X86
    int have = cpu_has_sha();
#else
    int have = 0;
#endif
    if (use >= 0)
        g_accel = use && have;
    else if (g_accel < 0)
        g_accel = have;
    return g_accel;
}

/* n whole blocks into the state. */
static void blocks(uint32_t h[8], const unsigned char *p, size_t n) {
#ifdef SHA256_X86
    if (g_accel < 0)
        kiln_sha256_accelerated(-1);
    if (g_accel) {
        blocks_shani(h, p, n);
        return;
    }
#endif
    for (; n; n--, p += 64)
        compress(h, p);
}

void kiln_sha256_init(kiln_sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->used = 0;
}

void kiln_sha256_update(kiln_sha256 *s, const void *data, size_t len) {
    const unsigned char *p = data;
    if (len == 0)
        return; /* data may be NULL: no memcpy from it */
    s->bytes += len;
    if (s->used) {
        size_t k = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->block + s->used, p, k);
        s->used += k;
        p += k;
        len -= k;
        if (s->used < 64)
            return;
        blocks(s->h, s->block, 1);
        s->used = 0;
    }
    blocks(s->h, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
    if (len)
        memcpy(s->block, p, len);
    s->used = len;
}

void kiln_sha256_final(kiln_sha256 *s, unsigned char out[KILN_SHA256_BYTES]) {
    uint64_t bits = s->bytes * 8;
    s->block[s->used++] = 0x80;
    if (s->used > 56) {
        memset(s->block + s->used, 0, 64 - s->used);
        compress(s->h, s->block);
        s->used = 0;
    }
    memset(s->block + s->used, 0, 56 - s->used);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    compress(s->h, s->block);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

void kiln_sha256_to_hex(const unsigned char d[KILN_SHA256_BYTES], char out[KILN_SHA256_HEX]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < KILN_SHA256_BYTES; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[2 * KILN_SHA256_BYTES] = 0;
}

void kiln_sha256_hex(const void *data, size_t len, char out[KILN_SHA256_HEX]) {
    kiln_sha256 s;
    unsigned char d[KILN_SHA256_BYTES];
    kiln_sha256_init(&s);
    kiln_sha256_update(&s, data, len);
    kiln_sha256_final(&s, d);
    kiln_sha256_to_hex(d, out);
}
