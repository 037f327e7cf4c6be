/* conv2d.c: a padded 3x3 NCHW convolution with ReLU in tensor expressions.
 * The padding stage is inlined, output channels run in parallel, the output
 * width is vectorized. Checks against plain C loops and prints GFLOP/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"

enum { CI = 16, CO = 32, H = 28, W = 28, KS = 3, PAD = 1 };

typedef struct {
    kiln_tensor *data, *pad, *weight, *conv;
    kiln_expr ci, kh, kw;
} net;

static kiln_expr pad_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    net *n = u;
    kiln_expr h = kiln_sub(i[2], kiln_int(ctx, PAD)), w = kiln_sub(i[3], kiln_int(ctx, PAD));
    kiln_expr inside =
        kiln_and(kiln_and(kiln_ge(h, kiln_int(ctx, 0)), kiln_lt(h, kiln_int(ctx, H))),
                 kiln_and(kiln_ge(w, kiln_int(ctx, 0)), kiln_lt(w, kiln_int(ctx, W))));
    /* clamp so the read is in bounds even where the select discards it */
    kiln_expr hc = kiln_min(kiln_max(h, kiln_int(ctx, 0)), kiln_int(ctx, H - 1));
    kiln_expr wc = kiln_min(kiln_max(w, kiln_int(ctx, 0)), kiln_int(ctx, W - 1));
    kiln_expr idx[4] = {i[0], i[1], hc, wc};
    return kiln_select(inside, kiln_tensor_at(n->data, 4, idx), kiln_float(ctx, 0));
}

static kiln_expr conv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    net *n = u;
    kiln_expr di[4] = {i[0], n->ci, kiln_add(i[2], n->kh), kiln_add(i[3], n->kw)};
    kiln_expr wi[4] = {i[1], n->ci, n->kh, n->kw};
    kiln_expr axes[3] = {n->ci, n->kh, n->kw};
    return kiln_sum(kiln_mul(kiln_tensor_at(n->pad, 4, di), kiln_tensor_at(n->weight, 4, wi)), 3,
                    axes);
}

static kiln_expr relu_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    net *n = u;
    return kiln_max(kiln_tensor_at(n->conv, 4, i), kiln_float(ctx, 0));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "conv2d: %s: %s\n", what, kiln_last_error());
    return 1;
}

int main(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    net n;
    kiln_expr z = kiln_int(ctx, 0);
    kiln_expr ds[4] = {kiln_int(ctx, 1), kiln_int(ctx, CI), kiln_int(ctx, H), kiln_int(ctx, W)};
    kiln_expr ps[4] = {ds[0], ds[1], kiln_int(ctx, H + 2 * PAD), kiln_int(ctx, W + 2 * PAD)};
    kiln_expr ws[4] = {kiln_int(ctx, CO), ds[1], kiln_int(ctx, KS), kiln_int(ctx, KS)};
    kiln_expr os[4] = {ds[0], ws[0], ds[2], ds[3]};
    n.data = kiln_placeholder(ctx, 4, ds, KILN_FLOAT32, "data");
    n.weight = kiln_placeholder(ctx, 4, ws, KILN_FLOAT32, "weight");
    n.pad = kiln_compute(ctx, 4, ps, pad_body, &n, "pad");
    n.ci = kiln_reduce_axis(ctx, z, ds[1], "ci");
    n.kh = kiln_reduce_axis(ctx, z, ws[2], "kh");
    n.kw = kiln_reduce_axis(ctx, z, ws[3], "kw");
    n.conv = kiln_compute(ctx, 4, os, conv_body, &n, "conv");
    kiln_tensor *out = kiln_compute(ctx, 4, os, relu_body, &n, "relu");
    if (!out)
        return fail("compute");

    kiln_schedule *s = kiln_schedule_create(ctx, 1, &out);
    kiln_stage *sp = kiln_schedule_stage(s, n.pad), *sc = kiln_schedule_stage(s, n.conv);
    kiln_stage *sr = kiln_schedule_stage(s, out);
    kiln_compute_inline(sp);
    /* conv: (n, co, h, ci, kh, kw, w) with w vectorized, computed per output row */
    kiln_expr co = kiln_tensor_axis(n.conv, 1), h = kiln_tensor_axis(n.conv, 2);
    kiln_expr w = kiln_tensor_axis(n.conv, 3);
    kiln_expr order[5] = {h, n.ci, n.kh, n.kw, w};
    if (kiln_reorder(sc, 5, order) != KILN_OK)
        return fail("reorder");
    kiln_unroll(sc, n.kw);
    kiln_expr wo, wi;
    kiln_split(sc, w, 4, &wo, &wi);
    kiln_vectorize(sc, wi);
    kiln_expr rco = kiln_tensor_axis(out, 1), rh = kiln_tensor_axis(out, 2);
    kiln_parallel(sr, rco);
    kiln_compute_at(sc, sr, rh);
    (void)co;

    kiln_tensor *args[3] = {n.data, n.weight, out};
    kiln_module *mod = kiln_build(s, 3, args, "conv2d", NULL);
    if (!mod)
        return fail("build");
    kiln_function *f = kiln_module_get_function(mod, "conv2d");
    int64_t dsh[4] = {1, CI, H, W}, wsh[4] = {CO, CI, KS, KS}, osh[4] = {1, CO, H, W};
    kiln_ndarray *d = kiln_ndarray_empty(KILN_FLOAT32, 4, dsh);
    kiln_ndarray *wt = kiln_ndarray_empty(KILN_FLOAT32, 4, wsh);
    kiln_ndarray *o = kiln_ndarray_empty(KILN_FLOAT32, 4, osh);
    float *pd = kiln_ndarray_data(d), *pw = kiln_ndarray_data(wt), *po = kiln_ndarray_data(o);
    for (int i = 0; i < CI * H * W; i++)
        pd[i] = (float)((i * 7) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < CO * CI * KS * KS; i++)
        pw[i] = (float)((i * 3) % 19) / 19.0f - 0.5f;
    kiln_ndarray *call[3] = {d, wt, o};
    if (kiln_function_call(f, 3, call) != KILN_OK)
        return fail("call");
    double worst = 0;
    for (int c = 0; c < CO; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                double acc = 0;
                for (int q = 0; q < CI; q++)
                    for (int a = 0; a < KS; a++)
                        for (int b = 0; b < KS; b++) {
                            int yy = y + a - PAD, xx = x + b - PAD;
                            if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                                continue;
                            acc += (double)pd[(q * H + yy) * W + xx] *
                                   pw[((c * CI + q) * KS + a) * KS + b];
                        }
                acc = acc > 0 ? acc : 0;
                double e = fabs(acc - po[(c * H + y) * W + x]);
                if (e > worst)
                    worst = e;
            }
    if (worst > 1e-3) {
        fprintf(stderr, "conv2d: wrong result (max error %g)\n", worst);
        return 1;
    }
    int reps = 20;
    double t0 = now();
    for (int r = 0; r < reps; r++)
        kiln_function_call(f, 3, call);
    double sec = (now() - t0) / reps;
    double flops = 2.0 * CO * H * W * CI * KS * KS;
    printf("conv2d 1x%dx%dx%d -> %d channels, 3x3 pad 1: correct (max error %.2g); %.3f ms, "
           "%.1f GFLOP/s on %d threads\n",
           CI, H, W, CO, worst, sec * 1e3, flops / sec / 1e9, kiln_num_threads());
    kiln_ndarray_free(d);
    kiln_ndarray_free(wt);
    kiln_ndarray_free(o);
    kiln_module_free(mod);
    kiln_ctx_free(ctx);
    return 0;
}
