/* signal.c: the window functions of ONNX's signal ops (HannWindow,
 * HammingWindow, BlackmanWindow), generators of a 1-D window whose length
 * is the one value of input 0 (a constant, or a binder's when the size is
 * known only as the package runs: src/ops/shape.c's count_dims).
 *
 * With N the length (periodic) or the length - 1 (symmetric), element n is
 *   hann      0.5 - 0.5 cos(2 pi n / N)
 *   hamming   25/46 - 21/46 cos(2 pi n / N)
 *   blackman  0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
 * computed in float64 and cast to the output dtype. A symmetric window of
 * one element has N = 0; it is computed with N = 1 (a value of the cosine
 * at 0), where ONNX's reference divides by zero. */
#include <math.h>
#include <string.h>

#include "ops.h"

enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

static const char *const g_windows[] = {"hann", "hamming", "blackman", NULL};

static const attr_schema window_attrs[] = {{"kind", GA_STR, 1, NULL},
                                           {"periodic", GA_INT, 0, "1"},
                                           {"dtype", GA_STR, 0, "\"float32\""},
                                           {NULL, 0, 0, NULL}};

static rel_result rel_window(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    if (ops_attr_choice(call, "kind", "hann", g_windows) < 0)
        return REL_ERROR;
    kiln_dtype dt;
    if (kiln_dtype_parse(graph_attr_str(call, "dtype", "float32"), &dt) || dt == KILN_HANDLE ||
        dt == KILN_BOOL)
        return ops_fail("dtype '%s' is not a number type", graph_attr_str(call, "dtype", "?"));
    gtensor_type res = {dt, 1, {{0, NULL}}};
    if (ops_value_dims(g, call, 0, res.dims, 1) != 1)
        return ops_fail("input 0 (the length) must be a constant or a bind_dims vector of one "
                        "value");
    if (!res.dims[0].sym && (res.dims[0].v < 0 || res.dims[0].v > GRAPH_MAX_ELEMENTS))
        return ops_fail("the length %lld must be 0 to 2^48", (long long)res.dims[0].v);
    return ops_set_out(g, out, &res);
}

typedef struct {
    int kind;
    kiln_dtype dt;
    kiln_expr n; /* N, float64 */
} window_args;

static kiln_expr window_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    window_args *a = u;
    kiln_dtype f64 = KILN_FLOAT64;
    kiln_expr x = kiln_div(kiln_mul(ops_const(ctx, f64, 2 * M_PI), kiln_cast(f64, i[0])), a->n);
    kiln_expr c1 = kiln_cos(x), v;
    switch (a->kind) {
    case WIN_HANN:
        v = kiln_sub(ops_const(ctx, f64, 0.5), kiln_mul(ops_const(ctx, f64, 0.5), c1));
        break;
    case WIN_HAMMING:
        v = kiln_sub(ops_const(ctx, f64, 25.0 / 46.0),
                     kiln_mul(ops_const(ctx, f64, 21.0 / 46.0), c1));
        break;
    default:
        v = kiln_add(
            kiln_sub(ops_const(ctx, f64, 0.42), kiln_mul(ops_const(ctx, f64, 0.5), c1)),
            kiln_mul(ops_const(ctx, f64, 0.08), kiln_cos(kiln_mul(ops_const(ctx, f64, 2), x))));
        break;
    }
    return a->dt == f64 ? v : kiln_cast(a->dt, v);
}

static kiln_status compute_window(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    (void)in;
    window_args a = {ops_attr_choice(call, "kind", "hann", g_windows), call->type.t[0].dtype, NULL};
    kiln_expr len = ops_dim(ctx, call->type.t[0].dims[0]), one = ops_int(ctx, 1);
    kiln_expr n = graph_attr_int(call, "periodic", 1) ? len : kiln_sub(len, one);
    a.n = kiln_cast(KILN_FLOAT64, kiln_max(n, one));
    int64_t od[1];
    ops_out_shape(call, od);
    out[0] = ops_compute(ctx, call, "", 1, od, window_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

const kiln_op_def ops_signal_rows[] = {
    {.name = "window",
     .min_in = 1,
     .max_in = 1,
     .attrs = window_attrs,
     .rel = rel_window,
     .pattern = OP_INJECTIVE,
     .compute = compute_window,
     .summary = "a hann, hamming or blackman window of input 0's one value elements",
     .sym_dims = 1},
};

const int ops_signal_count = (int)(sizeof ops_signal_rows / sizeof ops_signal_rows[0]);
