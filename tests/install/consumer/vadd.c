/* vadd.c: a program outside kiln's tree, built against an installed kiln.
 * It builds C[i] = A[i] + B[i] from tensor expressions (split and
 * vectorized), calls it, checks the sums, and saves the module to argv[1]
 * for runtime_only.c. */
#include <stdio.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"

typedef struct {
    kiln_tensor *a, *b;
} inputs;

static kiln_expr add(kiln_ctx *ctx, const kiln_expr *i, void *user) {
    (void)ctx;
    inputs *in = user;
    return kiln_add(kiln_tensor_at(in->a, 1, i), kiln_tensor_at(in->b, 1, i));
}

static int fail(const char *what) {
    fprintf(stderr, "vadd: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(int argc, char **argv) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    inputs in = {kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A"),
                 kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "B")};
    kiln_tensor *c = kiln_compute(ctx, 1, &n, add, &in, "C");
    if (!c)
        return fail("compute");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &c);
    kiln_stage *st = kiln_schedule_stage(s, c);
    kiln_expr xo, xi;
    if (kiln_split(st, kiln_tensor_axis(c, 0), 8, &xo, &xi) || kiln_vectorize(st, xi))
        return fail("schedule");
    kiln_tensor *args[3] = {in.a, in.b, c};
    kiln_module *m = kiln_build(s, 3, args, "vadd", NULL);
    if (!m)
        return fail("build");
    int64_t len = 1000;
    kiln_ndarray *arr[3];
    for (int k = 0; k < 3; k++)
        arr[k] = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
    float *pa = kiln_ndarray_data(arr[0]), *pb = kiln_ndarray_data(arr[1]);
    for (int64_t i = 0; i < len; i++) {
        pa[i] = (float)i;
        pb[i] = 0.5f * (float)i;
    }
    if (kiln_function_call(kiln_module_get_function(m, "vadd"), 3, arr))
        return fail("call");
    const float *pc = kiln_ndarray_data(arr[2]);
    for (int64_t i = 0; i < len; i++)
        if (pc[i] != 1.5f * (float)i) {
            fprintf(stderr, "vadd: C[%lld] = %g, expected %g\n", (long long)i, pc[i],
                    1.5 * (double)i);
            return 1;
        }
    if (argc > 1 && kiln_module_save(m, argv[1]))
        return fail("save");
    for (int k = 0; k < 3; k++)
        kiln_ndarray_free(arr[k]);
    kiln_module_free(m);
    kiln_ctx_free(ctx);
    printf("vadd: built, called and checked %lld sums\n", (long long)len);
    return 0;
}
