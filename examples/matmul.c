/* matmul.c: C = A x B in tensor expressions, scheduled the way TVM's CPU
 * tutorial does it (tiles, a local accumulator, k split and unrolled,
 * vectorized inner axis, parallel outer axis). Checks against a plain C
 * loop and prints GFLOP/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"

enum { M = 256, N = 256, K = 256 };

typedef struct {
    kiln_tensor *A, *B;
    kiln_expr k;
} mm;

static kiln_expr body(kiln_ctx *ctx, const kiln_expr *i, void *user) {
    mm *m = user;
    kiln_expr ia[2] = {i[0], m->k}, ib[2] = {m->k, i[1]};
    return kiln_sum(kiln_mul(kiln_tensor_at(m->A, 2, ia), kiln_tensor_at(m->B, 2, ib)), 1, &m->k);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "matmul: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr sa[2] = {kiln_int(ctx, M), kiln_int(ctx, K)},
              sb[2] = {kiln_int(ctx, K), kiln_int(ctx, N)};
    kiln_expr sc[2] = {kiln_int(ctx, M), kiln_int(ctx, N)};
    mm m = {kiln_placeholder(ctx, 2, sa, KILN_FLOAT32, "A"),
            kiln_placeholder(ctx, 2, sb, KILN_FLOAT32, "B"),
            kiln_reduce_axis(ctx, kiln_int(ctx, 0), kiln_int(ctx, K), "k")};
    kiln_tensor *C = kiln_compute(ctx, 2, sc, body, &m, "C");
    if (!C)
        return fail("compute");

    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_tensor *CC = kiln_cache_write(s, C, "local");
    kiln_stage *sC = kiln_schedule_stage(s, C), *sCC = kiln_schedule_stage(s, CC);
    kiln_expr yo, xo, yi, xi;
    kiln_tile(sC, kiln_tensor_axis(C, 0), kiln_tensor_axis(C, 1), 8, 32, &yo, &xo, &yi, &xi);
    kiln_parallel(sC, yo);
    kiln_unroll(sC, yi);
    kiln_vectorize(sC, xi);
    kiln_compute_at(sCC, sC, xo);
    kiln_expr cy = kiln_tensor_axis(CC, 0), cx = kiln_tensor_axis(CC, 1);
    kiln_expr k = kiln_tensor_reduce_axis(CC, 0), ko, ki;
    kiln_split(sCC, k, 4, &ko, &ki);
    kiln_expr order[4] = {ko, ki, cy, cx};
    if (kiln_reorder(sCC, 4, order) != KILN_OK)
        return fail("reorder");
    kiln_unroll(sCC, ki);
    kiln_unroll(sCC, cy);
    kiln_vectorize(sCC, cx);

    kiln_tensor *args[3] = {m.A, m.B, C};
    kiln_module *mod = kiln_build(s, 3, args, "matmul", NULL);
    if (!mod)
        return fail("build");
    kiln_function *f = kiln_module_get_function(mod, "matmul");
    int64_t ash[2] = {M, K}, bsh[2] = {K, N}, csh[2] = {M, N};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, ash);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 2, bsh);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 2, csh);
    float *pa = kiln_ndarray_data(a), *pb = kiln_ndarray_data(b), *pc = kiln_ndarray_data(c);
    for (int i = 0; i < M * K; i++)
        pa[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < K * N; i++)
        pb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    kiln_ndarray *call[3] = {a, b, c};
    if (kiln_function_call(f, 3, call) != KILN_OK)
        return fail("call");
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int q = 0; q < K; q++)
                acc += (double)pa[i * K + q] * pb[q * N + j];
            double e = fabs(acc - pc[i * N + j]);
            if (e > worst)
                worst = e;
        }
    if (worst > 1e-3) {
        fprintf(stderr, "matmul: wrong result (max error %g)\n", worst);
        return 1;
    }
    int reps = 20;
    double t0 = now();
    for (int r = 0; r < reps; r++)
        kiln_function_call(f, 3, call);
    double sec = (now() - t0) / reps;
    printf("matmul %dx%dx%d: correct (max error %.2g); %.3f ms, %.1f GFLOP/s on %d threads\n", M, N,
           K, worst, sec * 1e3, 2.0 * M * N * K / sec / 1e9, kiln_num_threads());
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(c);
    kiln_module_free(mod);
    kiln_ctx_free(ctx);
    return 0;
}
