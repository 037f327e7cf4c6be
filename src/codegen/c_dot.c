/* c_dot.c: the fast form of the integer dot products TIR_DOT2 and
 * TIR_DOT4 (tir.h), the multiply-add of the int8 kernels: the shape the
 * renderer (c_render.c) asks about, and the helpers it calls.
 *
 * The int8 convolution (src/ops/conv_int8.c) reads, per output vector of
 * L int32 lanes, k consecutive activations a[i..i+k) (the same in every
 * lane) and a weight block b[j..j + L*k) packed so that lane l's k weights
 * are b[j + l*k ..]: exactly the operands of x86's vpdpbusd (k = 4,
 * uint8 x int8) and vpmaddwd (k = 2, int16 x int16, the activations
 * zero-extended). Where a vectorized dot product has that shape (its
 * arguments are loads of two buffers at those indices), it is rendered as
 * a call of a helper whose body picks the instruction by the macros the C
 * compiler defines for the target's flags (__AVX512VNNI__, __AVXVNNI__,
 * __AVX512BW__, __AVX2__; on aarch64 __ARM_FEATURE_MATMUL_INT8 for usdot,
 * __ARM_FEATURE_DOTPROD for sdot), with a plain loop for any other; an
 * accumulation acc + dot(...) passes acc in, so it is one vpdpbusd. Any
 * other dot product is the lanes' sum of products, exact everywhere. The
 * target decides the shape: the layout hook packs k = 4 weights where the
 * target has VNNI and k = 2 (int16) where it has only AVX2, so a package
 * built for a target uses that target's instruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_render_internal.h"

/* idx as base + c (c a constant), base NULL for a constant index */
static void split_offset(tir_node idx, tir_node *base, int64_t *c) {
    int64_t v;
    if (tir_const_int(idx, &v)) {
        *base = NULL;
        *c = v;
    } else if ((idx->op == TIR_ADD || idx->op == TIR_SUB) && tir_const_int(idx->src[1], &v)) {
        *base = idx->src[0];
        *c = idx->op == TIR_ADD ? v : -v;
    } else if (idx->op == TIR_ADD && tir_const_int(idx->src[0], &v)) {
        *base = idx->src[1];
        *c = v;
    } else {
        *base = idx;
        *c = 0;
    }
}

/* Whether loads[0..k) read one buffer at consecutive offsets (scalar
 * indices, maybe broadcast, for lanes 1; ramps of stride `stride` and
 * `lanes` lanes otherwise); the buffer and the first index in *buf,
 * *first. */
static int consecutive(cg_render *r, const tir_node *loads, int k, int stride, int lanes,
                       tir_node *buf, tir_node *first) {
    tir_node b0 = NULL;
    int64_t c0 = 0;
    for (int j = 0; j < k; j++) {
        tir_node x = loads[j];
        if (lanes == 1 && x->op == TIR_BROADCAST)
            x = x->src[0];
        if (x->op != TIR_LOAD || x->nsrc != 2 || x->lanes != lanes)
            return 0;
        cg_alloc *ai = cg_find_alloc(r, x->src[0]);
        if ((ai && ai->promoted) || (j && x->src[0] != *buf))
            return 0;
        tir_node idx = x->src[1], base;
        int64_t c, s;
        if (lanes > 1) {
            if (idx->op != TIR_RAMP || !tir_const_int(idx->src[1], &s) || s != stride)
                return 0;
            idx = idx->src[0];
        }
        split_offset(idx, &base, &c);
        if (!j) {
            b0 = base;
            c0 = c;
            *buf = x->src[0];
            *first = idx;
        } else if (base != b0 || c != c0 + j) {
            return 0;
        }
    }
    return 1;
}

/* The helper for a k-pair dot product of L lanes, a of dtype adt and b of
 * bdt, accumulating; its name, or NULL where kiln has none for the shape. */
static const char *dot_helper(cg_render *r, int k, int L, kiln_dtype adt, kiln_dtype bdt) {
    static const char *const names[6] = {"kiln_dot4_u8i8_x16", "kiln_dot4_u8i8_x8",
                                         "kiln_dot4_u8i8_x4",  "kiln_dot2_u8i16_x16",
                                         "kiln_dot2_u8i16_x8", "kiln_dot2_u8i16_x4"};
    if (adt != KILN_UINT8 || (L != 16 && L != 8 && L != 4) ||
        !((k == 4 && bdt == KILN_INT8) || (k == 2 && bdt == KILN_INT16)))
        return NULL;
    int which = (k == 4 ? 0 : 3) + (L == 8 ? 1 : L == 4 ? 2 : 0);
    const char *name = names[which];
    if (cg_have_helper(r, name))
        return name;
    char vt[48];
    cg_vtype(r, vt, KILN_INT32, L);
    const char *bt = k == 4 ? "int8_t" : "int16_t";
    /* the instruction, by the compiler's target macros */
    static const char *const fast[6] = {
        "#if defined(__AVX512VNNI__) && defined(__AVX512F__)\n"
        "    return (%s)_mm512_dpbusd_epi32((__m512i)acc, _mm512_set1_epi32(s), "
        "_mm512_loadu_si512((const void *)b));\n",
        "#if defined(__AVX512VNNI__) && defined(__AVX512VL__)\n"
        "    return (%s)_mm256_dpbusd_epi32((__m256i)acc, _mm256_set1_epi32(s), "
        "_mm256_loadu_si256((const void *)b));\n"
        "#elif defined(__AVXVNNI__)\n"
        "    return (%s)_mm256_dpbusd_avx_epi32((__m256i)acc, _mm256_set1_epi32(s), "
        "_mm256_loadu_si256((const void *)b));\n",
        /* NEON: usdot (uint8 x int8) with the int8 matrix extension; with
           only the dot product extension sdot on the activations moved to
           int8 (a - 128), plus 128 * the weights' sum (a second sdot) */
        "#if defined(__ARM_FEATURE_MATMUL_INT8)\n"
        "    return (%s)vusdotq_s32((int32x4_t)acc, vreinterpretq_u8_s32(vdupq_n_s32(s)), "
        "vld1q_s8(b));\n"
        "#elif defined(__ARM_FEATURE_DOTPROD)\n"
        "    int8x16_t w = vld1q_s8(b), x = vreinterpretq_s8_u8(veorq_u8("
        "vreinterpretq_u8_s32(vdupq_n_s32(s)), vdupq_n_u8(0x80)));\n"
        "    int32x4_t t = vdotq_s32((int32x4_t)acc, x, w);\n"
        "    return (%s)vaddq_s32(t, vshlq_n_s32(vdotq_s32(vdupq_n_s32(0), vdupq_n_s8(1), w), "
        "7));\n",
        "#if defined(__AVX512BW__)\n"
        "    return (%s)_mm512_add_epi32((__m512i)acc, _mm512_madd_epi16(_mm512_set1_epi32(s), "
        "_mm512_loadu_si512((const void *)b)));\n",
        "#if defined(__AVX2__)\n"
        "    return (%s)_mm256_add_epi32((__m256i)acc, _mm256_madd_epi16(_mm256_set1_epi32(s), "
        "_mm256_loadu_si256((const void *)b)));\n",
        "#if defined(__ARM_NEON)\n"
        "    int16x8_t w = vld1q_s16(b);\n"
        "    int16x4_t x = vreinterpret_s16_s32(vdup_n_s32(s));\n"
        "    int32x4_t p = vmull_s16(vget_low_s16(w), x), q = vmull_s16(vget_high_s16(w), x);\n"
        "    return (%s)vaddq_s32((int32x4_t)acc, vpaddq_s32(p, q));\n",
    };
    kstr t;
    kstr_init(&t);
    kstr_puts(&t, "#if defined(__AVX2__) || defined(__AVX512F__)\n#include <immintrin.h>\n"
                  "#elif defined(__ARM_NEON)\n#include <arm_neon.h>\n#endif\n");
    kstr_printf(&t, "static inline %s %s(%s acc, const uint8_t *a, const %s *b) {\n", vt, name, vt,
                bt);
    if (k == 4)
        kstr_puts(&t, "    int32_t s;\n    memcpy(&s, a, 4);\n");
    else
        kstr_puts(&t, "    int32_t s = (int32_t)((uint32_t)a[0] | ((uint32_t)a[1] << 16));\n");
    kstr_printf(&t, fast[which], vt, vt);
    kstr_puts(&t, "#else\n    (void)s;\n");
    kstr_printf(&t, "    for (int l = 0; l < %d; l++)\n        acc[l] += ", L);
    for (int j = 0; j < k; j++)
        kstr_printf(&t, "%s(int32_t)a[%d] * b[l * %d + %d]", j ? " + " : "", j, k, j);
    kstr_puts(&t, ";\n    return acc;\n#endif\n}\n");
    cg_add_helper(r, name, kstr_take(&t));
    return name;
}

const char *cg_dot_fast(cg_render *r, tir_node e, tir_node op[4]) {
    int k = tir_dot_pairs((tir_intrin)e->aux), L = e->lanes;
    if (L > 1 && consecutive(r, e->src, k, 0, 1, &op[0], &op[1]) &&
        consecutive(r, e->src + k, k, k, L, &op[2], &op[3]))
        return dot_helper(r, k, L, (kiln_dtype)e->src[0]->dtype, (kiln_dtype)e->src[k]->dtype);
    return NULL;
}
