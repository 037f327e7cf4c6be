/* pattern_fold_quantize.c: seed note 001's pass, written with the pattern
 * language (kiln/pattern.h): a quantize of a constant weight becomes the
 * quantized constant, so the model never quantizes it at run time.
 *
 * A quantize is written in kiln's ops as ONNX's QuantizeLinear is:
 *     q = cast(clip(add(round(divide(w, scale)), zero_point), -128, 127), int8)
 * The pattern matches that chain with w, scale and the zero point constants
 * (scalars here: per-tensor); the callback computes q in C, round half to
 * even as `round` does, and returns a constant. The graph around it
 * dequantizes q and multiplies it with the input, as a QDQ model would.
 * The example prints the graph before and after, checks that no quantize
 * is left, and that both graphs, compiled, give bit-identical outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/pattern.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

#define N 64

typedef struct {
    kiln_pattern *w, *scale, *zp, *clip, *cast;
} quant_parts;

static float scalar(const kiln_graph *g, int node) {
    return ((const float *)kiln_ndarray_data(kiln_graph_node_value(g, node)))[0];
}

/* The callback: (pre, post, node map) as TVM's DFPatternCallback has them. */
static int fold_quantize(kiln_rewrite *rw, void *user) {
    quant_parts *P = user;
    const kiln_graph *pre = kiln_rewrite_pre(rw);
    int w = kiln_rewrite_pre_node(rw, P->w), c = kiln_rewrite_pre_node(rw, P->clip);
    const kiln_ndarray *wv = kiln_graph_node_value(pre, w);
    if (kiln_ndarray_numel(kiln_graph_node_value(pre, kiln_rewrite_pre_node(rw, P->scale))) != 1 ||
        kiln_ndarray_numel(kiln_graph_node_value(pre, kiln_rewrite_pre_node(rw, P->zp))) != 1)
        return KILN_REWRITE_SKIP; /* this pass folds per-tensor parameters only */
    float s = scalar(pre, kiln_rewrite_pre_node(rw, P->scale));
    float z = scalar(pre, kiln_rewrite_pre_node(rw, P->zp));
    double lo = kiln_graph_node_attr_float(pre, c, "a_min", 0);
    double hi = kiln_graph_node_attr_float(pre, c, "a_max", 0);
    int64_t n = kiln_ndarray_numel(wv), dims[8];
    for (int d = 0; d < kiln_ndarray_ndim(wv); d++)
        dims[d] = kiln_ndarray_dim(wv, d);
    kiln_ndarray *q = kiln_ndarray_empty(KILN_INT8, kiln_ndarray_ndim(wv), dims);
    const float *src = kiln_ndarray_data(wv); /* a constant is compact */
    int8_t *dst = kiln_ndarray_data(q);
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(src[i] / s) + z; /* round half to even, in float32 */
        dst[i] = (int8_t)fmin(fmax(v, lo), hi);
    }
    char name[256];
    snprintf(name, sizeof name, "%s.quantized", kiln_graph_node_name(pre, w));
    int id = kiln_graph_const(kiln_rewrite_post(rw), name, q);
    kiln_ndarray_free(q);
    printf("folded the quantize of '%s' (%lld values) into a constant\n",
           kiln_graph_node_name(pre, w), (long long)n);
    return id;
}

static kiln_ndarray *filled(kiln_dtype dt, int64_t n, float v0, float step) {
    kiln_ndarray *a = kiln_ndarray_empty(dt, 1, &n);
    for (int64_t i = 0; i < n; i++)
        ((float *)kiln_ndarray_data(a))[i] = v0 + step * (float)i;
    return a;
}

static int call(kiln_graph *g, const char *op, int a, int b, const char *attrs) {
    int in[2] = {a, b};
    return kiln_graph_call(g, op, b < 0 ? 1 : 2, in, attrs, op);
}

/* y = x * dequantize(quantize(w)) */
static kiln_graph *qdq_graph(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t n = N;
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, &n, NULL);
    kiln_ndarray *wv = filled(KILN_FLOAT32, N, -1.0f, 2.0f / N),
                 *sv = filled(KILN_FLOAT32, 1, 0.01f, 0);
    kiln_ndarray *zv = filled(KILN_FLOAT32, 1, 3.0f, 0);
    int w = kiln_graph_const(g, "weight", wv), s = kiln_graph_const(g, "scale", sv);
    int z = kiln_graph_const(g, "zero_point", zv);
    kiln_ndarray_free(wv);
    kiln_ndarray_free(sv);
    kiln_ndarray_free(zv);
    int r = call(g, "round", call(g, "divide", w, s, NULL), -1, NULL);
    int q =
        call(g, "cast", call(g, "clip", call(g, "add", r, z, NULL), -1, "a_min=-128, a_max=127"),
             -1, "dtype=\"int8\"");
    int dq =
        call(g, "multiply",
             call(g, "subtract", call(g, "cast", q, -1, "dtype=\"float32\""), z, NULL), s, NULL);
    int y = call(g, "multiply", x, dq, NULL);
    kiln_graph_set_outputs(g, 1, &y, NULL);
    return g;
}

static kiln_ndarray *compile_run(kiln_graph *g, const char *pkg, const kiln_ndarray *x) {
    kiln_build_options *o = kiln_build_options_new();
    kiln_build_options_set(o, "disabled-pass", "FoldConstant"); /* the pass does it here */
    kiln_status st = kiln_graph_compile(g, pkg, o);
    kiln_build_options_free(o);
    kiln_executor *ex = st == KILN_OK ? kiln_executor_load(pkg) : NULL;
    kiln_ndarray *y = NULL;
    if (ex && kiln_executor_set_input(ex, "x", x) == KILN_OK && kiln_executor_run(ex) == KILN_OK) {
        int64_t n = N;
        y = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
        kiln_ndarray_copy(y, kiln_executor_output(ex, 0));
    }
    kiln_executor_free(ex);
    return y;
}

int main(void) {
    kiln_graph *g = qdq_graph();
    kiln_pattern_set *s = kiln_pattern_set_new();
    /* the seed's pattern: a quantize whose input is a constant */
    kiln_pattern *p = kiln_pattern_parse(
        s, "%cast=cast[dtype=\"int8\"](%clip=clip(add(round(divide(%w=const, %scale=const)), "
           "%zp=const)))");
    if (!p) {
        fprintf(stderr, "pattern: %s\n", kiln_last_error());
        return 1;
    }
    quant_parts parts = {kiln_pattern_named(s, "w"), kiln_pattern_named(s, "scale"),
                         kiln_pattern_named(s, "zp"), kiln_pattern_named(s, "clip"),
                         kiln_pattern_named(s, "cast")};
    char *text = kiln_pattern_print(p);
    printf("pattern: %s\n", text);
    free(text);
    kiln_graph *r = kiln_graph_rewrite(g, p, fold_quantize, &parts);
    if (!r) {
        fprintf(stderr, "rewrite: %s\n", kiln_last_error());
        return 1;
    }
    char *before = kiln_graph_print(g), *after = kiln_graph_print(r);
    printf("before:\n%s\nafter:\n%s\n", before, after);
    int left = strstr(after, "round(") != NULL || strstr(after, "clip(") != NULL;
    free(before);
    free(after);
    kiln_ndarray *x = filled(KILN_FLOAT32, N, 0.5f, 0.25f);
    kiln_ndarray *y0 = compile_run(g, "pattern_fold_before.tar", x);
    kiln_ndarray *y1 = compile_run(r, "pattern_fold_after.tar", x);
    int same = y0 && y1 && !memcmp(kiln_ndarray_data(y0), kiln_ndarray_data(y1), sizeof(float) * N);
    printf("quantize left: %s; outputs before and after: %s\n", left ? "yes" : "no",
           same ? "bit-identical" : "DIFFERENT");
    kiln_ndarray_free(x);
    kiln_ndarray_free(y0);
    kiln_ndarray_free(y1);
    kiln_graph_free(r);
    kiln_graph_free(g);
    kiln_pattern_set_free(s);
    return !same || left;
}
