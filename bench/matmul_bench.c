/* matmul_bench.c: a 1024x1024x1024 float32 matmul written in tensor
 * expressions with a TVM-tutorial style schedule (B packed into column
 * panels, register-tiled local accumulator, unrolled rows, vectorized
 * columns, parallel panels), against the FMA peak measured in the same run.
 * Prints GFLOP/s and the ratio to peak for 1 and 2 threads.
 * Usage: bench_matmul [MR NR [--source]]  (register tile; default by ISA;
 * --source prints the generated C instead of running) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "peak.h"

enum { SZ = 1024 };

typedef struct {
    kiln_tensor *A, *B, *PB;
    kiln_expr k;
    int64_t nr;
} mm;

static kiln_expr pack_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    mm *m = u;
    /* PB[x, k, xi] = B[k, x*NR + xi] */
    kiln_expr idx[2] = {i[1], kiln_add(kiln_mul(i[0], kiln_int(ctx, m->nr)), i[2])};
    return kiln_tensor_at(m->B, 2, idx);
}

static kiln_expr mm_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    mm *m = u;
    kiln_expr nr = kiln_int(ctx, m->nr);
    kiln_expr ia[2] = {i[0], m->k};
    kiln_expr ib[3] = {kiln_floordiv(i[1], nr), m->k, kiln_floormod(i[1], nr)};
    return kiln_sum(kiln_mul(kiln_tensor_at(m->A, 2, ia), kiln_tensor_at(m->PB, 3, ib)), 1, &m->k);
}

static int fail(const char *what) {
    fprintf(stderr, "bench_matmul: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(int argc, char **argv) {
    /* default register tile: 12 x 32 floats (24 of 32 zmm registers) with
       AVX-512, 6 x 16 (12 of 16 ymm) with AVX2 */
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f");
    int64_t MR = avx512 ? 12 : 6, NR = avx512 ? 32 : 16;
    if (argc > 2) {
        MR = atoll(argv[1]);
        NR = atoll(argv[2]);
    }
    if (MR < 1 || NR < 1 || SZ % NR) {
        fprintf(stderr, "usage: bench_matmul [MR NR], NR dividing %d\n", SZ);
        return 2;
    }
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, SZ);
    kiln_expr s2[2] = {n, n};
    kiln_expr sp[3] = {kiln_int(ctx, SZ / NR), n, kiln_int(ctx, NR)};
    mm m = {kiln_placeholder(ctx, 2, s2, KILN_FLOAT32, "A"),
            kiln_placeholder(ctx, 2, s2, KILN_FLOAT32, "B"), NULL,
            kiln_reduce_axis(ctx, kiln_int(ctx, 0), n, "k"), NR};
    m.PB = kiln_compute(ctx, 3, sp, pack_body, &m, "packedB");
    kiln_tensor *C = kiln_compute(ctx, 2, s2, mm_body, &m, "C");
    if (!C)
        return fail("compute");

    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_tensor *CC = kiln_cache_write(s, C, "local");
    kiln_stage *sC = kiln_schedule_stage(s, C), *sCC = kiln_schedule_stage(s, CC);
    kiln_stage *sPB = kiln_schedule_stage(s, m.PB);
    kiln_expr mo, no, mi, ni;
    kiln_tile(sC, kiln_tensor_axis(C, 0), kiln_tensor_axis(C, 1), MR, NR, &mo, &no, &mi, &ni);
    kiln_expr order[4] = {no, mo, mi, ni};
    kiln_reorder(sC, 4, order);
    kiln_parallel(sC, no);
    kiln_unroll(sC, mi);
    kiln_vectorize(sC, ni);
    kiln_compute_at(sCC, sC, mo);
    kiln_expr cm = kiln_tensor_axis(CC, 0), cn = kiln_tensor_axis(CC, 1);
    kiln_expr k = kiln_tensor_reduce_axis(CC, 0);
    kiln_expr corder[3] = {k, cm, cn};
    kiln_reorder(sCC, 3, corder);
    kiln_unroll(sCC, cm);
    kiln_vectorize(sCC, cn);
    kiln_parallel(sPB, kiln_tensor_axis(m.PB, 0));
    kiln_vectorize(sPB, kiln_tensor_axis(m.PB, 2));

    kiln_tensor *args[3] = {m.A, m.B, C};
    if (argc > 3) {
        char *src = kiln_build_source(s, 3, args, "matmul", NULL);
        if (!src)
            return fail("render");
        fputs(src, stdout);
        free(src);
        return 0;
    }
    kiln_module *mod = kiln_build(s, 3, args, "matmul", NULL);
    if (!mod)
        return fail("build");
    kiln_function *f = kiln_module_get_function(mod, "matmul");
    int64_t sh[2] = {SZ, SZ};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, sh);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 2, sh);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 2, sh);
    float *pa = kiln_ndarray_data(a), *pb = kiln_ndarray_data(b), *pc = kiln_ndarray_data(c);
    for (int i = 0; i < SZ * SZ; i++) {
        pa[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
        pb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    }
    kiln_ndarray *call[3] = {a, b, c};
    if (kiln_function_call(f, 3, call) != KILN_OK)
        return fail("call");
    /* spot-check 64 entries against double-precision dot products */
    double worst = 0;
    for (int t = 0; t < 64; t++) {
        int i = (t * 131) % SZ, j = (t * 977) % SZ;
        double acc = 0;
        for (int q = 0; q < SZ; q++)
            acc += (double)pa[i * SZ + q] * pb[q * SZ + j];
        worst = fmax(worst, fabs(acc - pc[i * SZ + j]));
    }
    if (worst > 1e-2) {
        fprintf(stderr, "bench_matmul: wrong result (max error %g)\n", worst);
        return 1;
    }
    double flops = 2.0 * SZ * SZ * SZ;
    printf("matmul %dx%dx%d float32, register tile %lldx%lld (max error %.2g)\n", SZ, SZ, SZ,
           (long long)MR, (long long)NR, worst);
    printf("%-8s %12s %12s %8s\n", "threads", "kiln GF/s", "peak GF/s", "ratio");
    int maxt = kiln_num_threads();
    for (int th = 1; th <= (maxt < 2 ? maxt : 2); th++) {
        double peak = peak_gflops(th);
        kiln_set_num_threads(th);
        kiln_function_call(f, 3, call); /* warm-up */
        double best = 1e30, times[15];
        int reps = 15;
        for (int r = 0; r < reps; r++) {
            double t0 = peak_now();
            kiln_function_call(f, 3, call);
            times[r] = peak_now() - t0;
            if (times[r] < best)
                best = times[r];
        }
        /* median */
        for (int i = 1; i < reps; i++)
            for (int j = i; j > 0 && times[j - 1] > times[j]; j--) {
                double x = times[j];
                times[j] = times[j - 1];
                times[j - 1] = x;
            }
        double gf = flops / times[reps / 2] / 1e9;
        double peak2 = peak_gflops(th); /* peak again, after: take the larger */
        if (peak2 > peak)
            peak = peak2;
        printf("%-8d %12.1f %12.1f %7.1f%%\n", th, gf, peak, 100 * gf / peak);
    }
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(c);
    kiln_module_free(mod);
    kiln_ctx_free(ctx);
    return 0;
}
