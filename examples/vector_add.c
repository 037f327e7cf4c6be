/* vector_add.c: the tensor-expression tutorial of seed note 004 in C.
 * C[i] = A[i] + B[i] over a symbolic length n, split by 64; prints the
 * lowered loop IR, builds it with the system C compiler, runs it on
 * 2^22 elements, checks the result and prints the time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"

typedef struct {
    kiln_tensor *A, *B;
} inputs;

static kiln_expr add(kiln_ctx *ctx, const kiln_expr *i, void *user) {
    inputs *in = user;
    return kiln_add(kiln_tensor_at(in->A, 1, i), kiln_tensor_at(in->B, 1, i));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "vector_add: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    inputs in = {kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A"),
                 kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "B")};
    kiln_tensor *C = kiln_compute(ctx, 1, &n, add, &in, "C");
    if (!C)
        return fail("compute");

    /* s = create_schedule(C.op); xo, xi = s[C].split(C.op.axis[0], factor=64) */
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_stage *st = kiln_schedule_stage(s, C);
    kiln_expr xo, xi;
    if (kiln_split(st, kiln_tensor_axis(C, 0), 64, &xo, &xi) != KILN_OK)
        return fail("split");
    kiln_tensor *args[3] = {in.A, in.B, C};
    char *ir = kiln_lower_to_string(s, 3, args, "myadd");
    if (!ir)
        return fail("lower");
    printf("Lowered loop IR:\n%s\n", ir);
    free(ir);

    /* for speed: vectorize the inner loop and run the outer one in parallel */
    kiln_vectorize(st, xi);
    kiln_parallel(st, xo);
    kiln_module *m = kiln_build(s, 3, args, "myadd", NULL);
    if (!m)
        return fail("build");
    kiln_function *f = kiln_module_get_function(m, "myadd");

    int64_t len = 1 << 22;
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
    if (!a || !b || !c)
        return fail("allocate");
    float *pa = kiln_ndarray_data(a), *pb = kiln_ndarray_data(b), *pc = kiln_ndarray_data(c);
    for (int64_t i = 0; i < len; i++) {
        pa[i] = (float)i;
        pb[i] = (float)(2 * i);
    }
    kiln_ndarray *call[3] = {a, b, c};
    if (kiln_function_call(f, 3, call) != KILN_OK)
        return fail("call");
    for (int64_t i = 0; i < len; i++)
        if (pc[i] != (float)(3 * i)) {
            fprintf(stderr, "vector_add: wrong result at %lld\n", (long long)i);
            return 1;
        }
    int reps = 50;
    double t0 = now();
    for (int r = 0; r < reps; r++)
        kiln_function_call(f, 3, call);
    double ms = (now() - t0) / reps * 1e3;
    printf("myadd on n=%lld: correct; %.3f ms per call (%.1f GB/s) on %d threads\n", (long long)len,
           ms, 3.0 * 4 * (double)len / (ms * 1e-3) / 1e9, kiln_num_threads());
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(c);
    kiln_module_free(m);
    kiln_ctx_free(ctx);
    return 0;
}
