/* test_tune_features.c: the cost model's loop-nest features
 * (src/tune/features.c) on matrix products whose traffic is known by
 * hand: a kernel whose data fits a cache fetches each byte into it once
 * (the compulsory traffic, exactly the three matrices' bytes); one that
 * does not fetches more; a tiled schedule fetches less into L1 than the
 * naive one; the counts as executed are the loop extents' product. */
#include <math.h>

#include "check.h"
#include "te/te_internal.h"
#include "te_util.h"
#include "tune/tune_internal.h"

/* feature indices (features.c's order) */
enum { F_DYN_FLOPS = 7, F_LANES = 9, F_L1 = 11, F_L2 = 12, F_L3 = 13, F_AI_L1 = 14, F_AI_MEM = 15 };

/* the features of C = A B (n x n, float32) on target, naive or tiled
 * (8 x 16 blocks of C accumulated in registers, k outside them) */
static void mm_features(int64_t n, int tiled, const kiln_target *target, float f[TUNE_TIR_FEATS]) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_tensor *A, *B, *C = tu_matmul(ctx, n, n, n, &A, &B);
    kiln_schedule *sch = kiln_schedule_create(ctx, 1, &C);
    if (tiled) {
        kiln_tensor *CL = kiln_cache_write(sch, C, "local");
        CHECK(CL != NULL);
        kiln_stage *sc = kiln_schedule_stage(sch, C), *sl = kiln_schedule_stage(sch, CL);
        kiln_expr yo, xo, yi, xi;
        CHECK_EQ_INT(kiln_tile(sc, kiln_tensor_axis(C, 0), kiln_tensor_axis(C, 1), 8, 16, &yo, &xo,
                               &yi, &xi),
                     KILN_OK);
        CHECK_EQ_INT(kiln_compute_at(sl, sc, xo), KILN_OK);
        kiln_expr order[3] = {kiln_tensor_reduce_axis(CL, 0), kiln_tensor_axis(CL, 0),
                              kiln_tensor_axis(CL, 1)};
        CHECK_EQ_INT(kiln_reorder(sl, 3, order), KILN_OK);
        CHECK_EQ_INT(kiln_vectorize(sl, order[2]), KILN_OK);
    }
    kiln_tensor *args[3] = {A, B, C};
    tir_func *fn = te_lower(sch, 3, args, "mm", 0);
    CHECK(fn != NULL);
    if (fn)
        tune_tir_features(fn, target, f);
    kiln_ctx_free(ctx);
}

static double bytes_of(float feature) {
    return exp2((double)feature) - 1;
}

static void test_compulsory(void) {
    /* haswell: L1 32 KB, L2 256 KB, L3 8 MB; 3 x 64 KB fit L2 and L3 */
    kiln_target *t = kiln_target_parse("llvm -mcpu=haswell");
    CHECK(t != NULL);
    float f[TUNE_TIR_FEATS];
    mm_features(128, 0, t, f);
    CHECK_NEAR(bytes_of(f[F_L2]), 3 * 65536.0, 1.0);
    CHECK_NEAR(bytes_of(f[F_L3]), 3 * 65536.0, 1.0);
    /* not L1: B's 64 KB come in again for every row of C */
    CHECK(bytes_of(f[F_L1]) > 128 * 65536.0);
    /* 128^3 multiplies and adds */
    CHECK(fabs(bytes_of(f[F_DYN_FLOPS]) - 2.0 * 128 * 128 * 128) < 1e3);
    CHECK(fabs(f[F_AI_MEM] - 2.0 * 128 * 128 * 128 / (3 * 65536.0 + 1)) < 1e-2);
    CHECK(f[F_AI_L1] < f[F_AI_MEM]);
    kiln_target_free(t);
}

static void test_beyond_l2(void) {
    /* 3 x 1 MB: past haswell's L2, within its L3 */
    kiln_target *t = kiln_target_parse("llvm -mcpu=haswell");
    float f[TUNE_TIR_FEATS];
    mm_features(512, 1, t, f);
    CHECK(fabs(bytes_of(f[F_L3]) - 3.0 * 1048576) < 16.0);
    CHECK(bytes_of(f[F_L2]) > 2 * 3.0 * 1048576);
    CHECK(bytes_of(f[F_L1]) >= bytes_of(f[F_L2]));
    CHECK_EQ_INT((int)f[F_LANES], 16);
    kiln_target_free(t);
}

static void test_tiling_cuts_l1_traffic(void) {
    kiln_target *t = kiln_target_parse("llvm -mcpu=haswell");
    float naive[TUNE_TIR_FEATS], tiled[TUNE_TIR_FEATS];
    mm_features(256, 0, t, naive);
    mm_features(256, 1, t, tiled);
    /* the naive product reads B from L2 once per element of C's rows; the
       tiled one once per 8 rows */
    CHECK(bytes_of(tiled[F_L1]) * 4 < bytes_of(naive[F_L1]));
    CHECK(tiled[F_AI_L1] > naive[F_AI_L1]);
    /* the same work either way */
    CHECK(fabs(tiled[F_DYN_FLOPS] - naive[F_DYN_FLOPS]) < 1e-3);
    kiln_target_free(t);
}

TEST_MAIN(TEST(test_compulsory), TEST(test_beyond_l2), TEST(test_tiling_cuts_l1_traffic))
