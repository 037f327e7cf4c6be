/* image.c: the ops that resample images and volumes.
 *
 *   image.resize       ONNX Resize and Upsample, of any rank: each output
 *                      element reads the input around a source coordinate
 *                      computed, axis by axis, from its own index (nearest,
 *                      linear or cubic; six coordinate transformations).
 *                      Its output dims are the `size` attribute, or input 1
 *                      (a constant or a bind_dims of resize_dims, known
 *                      when the package runs); then the scales and the roi
 *                      may be inputs too, read when it runs
 *   resize_dims        its shape function: the output dims from the scales
 *                      or sizes values (docs/DYNAMIC_SHAPES.md, part 3)
 *   image.grid_sample  ONNX GridSample (4-D NCHW): the source coordinates
 *                      come from a grid, that is from data (bilinear,
 *                      nearest or bicubic; padding zeros, border or
 *                      reflection)
 *   image.roi_align    ONNX RoiAlign (4-D NCHW): each region of interest
 *                      (boxes from data) pooled to a fixed grid of bins,
 *                      each bin the average or max of bilinear samples
 *
 * Resize's coordinates are computed in float64 as ONNX's reference
 * implementation computes them, with its float32 steps where it has them
 * (the resized length in * scale, as ONNX's scales are float32, and the
 * roi arithmetic), so the rounding of nearest and the range test of
 * tf_crop_and_resize agree with it at pixel boundaries. GridSample's are
 * computed in float32 (float64 when the input or the grid is float64), as
 * PyTorch, whose results the ONNX tests hold, and ONNX Runtime compute
 * them.
 *
 * Every read stays in the input. A source coordinate is clamped while it
 * is still a float (NaN goes to the low end) and only then becomes an
 * integer, so no conversion overflows; a tap outside the input is clamped
 * to the edge (Resize, as ONNX's edge padding) or reads zero (GridSample's
 * zeros padding). A grid coordinate outside the image is padding, not an
 * error; the one index from data is RoiAlign's batch index of each region,
 * which goes through ops_checked_index. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM
/* The most input elements one output element of image.resize may read:
 * its taps are the product over the resized axes of 1 (nearest), 2
 * (linear) or 4 (cubic), so cubic on 4 axes, linear on 8. */
#define RESIZE_MAX_TAPS 256

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema resize_attrs[] = {
    {"size", GA_INTS, 0, NULL},
    {"scales", GA_FLOATS, 0, NULL},
    {"roi", GA_FLOATS, 0, NULL},
    {"scales_input", GA_INT, 0, "0"},
    {"roi_input", GA_INT, 0, "0"},
    {"method", GA_STR, 0, "\"nearest\""},
    {"coordinate_transformation_mode", GA_STR, 0, "\"half_pixel\""},
    {"rounding_method", GA_STR, 0, "\"round_prefer_floor\""},
    {"cubic_alpha", GA_FLOAT, 0, "-0.75"},
    {"exclude_outside", GA_INT, 0, "0"},
    {"extrapolation_value", GA_FLOAT, 0, "0"},
    {NULL, 0, 0, NULL}};
static const attr_schema roi_align_attrs[] = {
    {"mode", GA_STR, 0, "\"avg\""},
    {"output_height", GA_INT, 0, "1"},
    {"output_width", GA_INT, 0, "1"},
    {"sampling_ratio", GA_INT, 0, "0"},
    {"spatial_scale", GA_FLOAT, 0, "1"},
    {"coordinate_transformation_mode", GA_STR, 0, "\"half_pixel\""},
    {NULL, 0, 0, NULL}};
static const attr_schema grid_sample_attrs[] = {{"method", GA_STR, 0, "\"bilinear\""},
                                                {"padding_mode", GA_STR, 0, "\"zeros\""},
                                                {"align_corners", GA_INT, 0, "0"},
                                                {NULL, 0, 0, NULL}};

/* ---- shared helpers ------------------------------------------------------------------ */

/* An integer attribute that must be 0 or 1 into *v; 0 with an error if not. */
static int attr_flag(const gnode *call, const char *name, int *v) {
    int64_t f = graph_attr_int(call, name, 0);
    if (f != 0 && f != 1)
        return ops_fail("%s = %lld must be 0 or 1", name, (long long)f), 0;
    *v = (int)f;
    return 1;
}

static kiln_expr fconst(kiln_ctx *ctx, kiln_dtype dt, double v) {
    return ops_const(ctx, dt, v);
}

/* Float c (of dtype dt) as an int64 in [lo, hi]: clamped while it is a
 * float, NaN to lo, so the conversion never overflows. */
static kiln_expr float_index(kiln_ctx *ctx, kiln_dtype dt, kiln_expr c, int64_t lo, int64_t hi) {
    kiln_expr l = fconst(ctx, dt, (double)lo), h = fconst(ctx, dt, (double)hi);
    kiln_expr in = kiln_select(kiln_le(c, h), c, h);
    return kiln_cast(KILN_INT64, kiln_select(kiln_ge(c, l), in, l));
}

/* The weights of the taps at -1, 0, 1 and 2 around a coordinate t in
 * [0, 1) past tap 0: Keys' cubic convolution with parameter A, in the
 * nested form ONNX's reference and PyTorch write (weights for |d| <= 1
 * and for 1 < |d| < 2). */
static void cubic_weights(kiln_ctx *ctx, kiln_dtype dt, kiln_expr t, double A, kiln_expr w[4]) {
    kiln_expr one = fconst(ctx, dt, 1), u = kiln_sub(one, t);
    kiln_expr d[4] = {kiln_add(t, one), t, u, kiln_add(u, one)};
    for (int k = 0; k < 4; k++) {
        kiln_expr x = d[k];
        if (k == 1 || k == 2) /* ((A + 2) x - (A + 3)) x x + 1 */
            w[k] = kiln_add(kiln_mul(kiln_mul(kiln_sub(kiln_mul(fconst(ctx, dt, A + 2), x),
                                                       fconst(ctx, dt, A + 3)),
                                              x),
                                     x),
                            one);
        else /* ((A x - 5 A) x + 8 A) x - 4 A */
            w[k] = kiln_sub(kiln_mul(kiln_add(kiln_mul(kiln_sub(kiln_mul(fconst(ctx, dt, A), x),
                                                                fconst(ctx, dt, 5 * A)),
                                                       x),
                                              fconst(ctx, dt, 8 * A)),
                                     x),
                            fconst(ctx, dt, 4 * A));
    }
}

/* ---- image.resize ------------------------------------------------------------------ */

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
static const char *const g_resize_methods[] = {"nearest", "linear", "cubic", NULL};
enum {
    CT_HALF_PIXEL,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_HALF_PIXEL_NN,
    CT_CROP
};
static const char *const g_coord_modes[] = {
    "half_pixel", "pytorch_half_pixel",   "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize",
    NULL};
/* ONNX's nearest modes, and "simple" (ONNX Runtime's name): Upsample's and
 * Resize-10's rounding, ceil on an axis scaled down, else floor. */
enum { RND_PREFER_FLOOR, RND_PREFER_CEIL, RND_FLOOR, RND_CEIL, RND_SIMPLE };
static const char *const g_roundings[] = {
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple", NULL};

/* image.resize's attributes for an input of dims in[nd], checked.
 * exclude_outside gives linear and cubic taps outside the input weight 0
 * and renormalizes the rest, as ONNX's reference does (nearest reads one
 * tap, clamped into the input, and ignores it). Per
 * axis: the scale of the coordinate transformation (`scales`, else
 * size / in), the resized length (in * scale, in float32 when `scales`
 * gives it, as ONNX's reference computes with its float32 scales) and the
 * roi's extent and offset in input pixels (float32 steps likewise).
 *
 * With the dims as input 1, the inputs are x, the dims, then the scales if
 * scales_input, then the roi (starts, then ends) if roi_input: an output
 * dim known only at run time is -1 in out, and an axis whose scale is
 * known only then (scales_input, or a run-time size without `scales`) is
 * `dyn`: its scale and length are computed in the kernel (resize_geom). */
typedef struct {
    int nd, method, coord, rounding, exclude;
    int scales_in, roi_in; /* the input index of the scales, the roi; 0: none */
    double alpha, extrapolation;
    int64_t in[MAXD], out[MAXD];
    double scale[MAXD], length[MAXD], roi_len[MAXD], roi_off[MAXD];
    int plain[MAXD]; /* the axis maps each output index to itself */
    int dyn[MAXD];
} resize_params;

/* v rounded to float32 where it is within float32's range. */
static double round_f32(double v) {
    return fabs(v) <= FLT_MAX ? (double)(float)v : v;
}

/* 1 if every output index x of axis d reads input index x alone: the sizes
 * agree and the transformation is the identity there (exactly so in
 * float64: (x + 0.5) / 1 - 0.5, x * (n - 1) / (n - 1), ...). */
static int resize_axis_plain(const resize_params *p, int d) {
    if (p->out[d] != p->in[d])
        return 0;
    double n = (double)p->in[d];
    switch (p->coord) {
    case CT_HALF_PIXEL:
    case CT_PYTORCH_HALF_PIXEL: /* with one element -0.5: every tap is the edge */
    case CT_ASYMMETRIC: return p->scale[d] == 1;
    case CT_ALIGN_CORNERS: return p->length[d] == n;
    case CT_HALF_PIXEL_NN: /* x + 0.5: rounds back to x only downward */
        return p->scale[d] == 1 && p->method == RS_NEAREST &&
               (p->rounding == RND_PREFER_FLOOR || p->rounding == RND_FLOOR ||
                p->rounding == RND_SIMPLE);
    default: return p->length[d] == n && p->roi_len[d] == 1 && p->roi_off[d] == 0;
    }
}

/* The output dims: the `size` attribute, or (with input 1) dims[nd], -1
 * where known only at run time; the input layout checked. */
static int resize_read_size(const gnode *call, int nd, const int64_t *dims, resize_params *p,
                            int64_t *size) {
    int64_t sin = graph_attr_int(call, "scales_input", 0),
            rin = graph_attr_int(call, "roi_input", 0);
    if ((sin != 0 && sin != 1) || (rin != 0 && rin != 1))
        return ops_fail("scales_input and roi_input must be 0 or 1"), 0;
    p->scales_in = sin ? 2 : 0;
    p->roi_in = rin ? 2 + (int)sin : 0;
    if (call->nin == 1) {
        int ns = graph_attr_ints(call, "size", size, MAXD + 1);
        if (sin || rin)
            return ops_fail("scales_input and roi_input need the dims as input 1"), 0;
        if (ns < 0)
            return ops_fail("give the output dims as size or as input 1"), 0;
        if (ns != nd)
            return ops_fail("size has %d values for a %d-D input", ns, nd), 0;
        return 1;
    }
    if (graph_attr(call, "size"))
        return ops_fail("give the output dims as size or as input 1, not both"), 0;
    if (call->nin != 2 + sin + rin)
        return ops_fail("takes %lld inputs (x, the dims%s%s), not %d", (long long)(2 + sin + rin),
                        sin ? ", the scales" : "", rin ? ", the roi" : "", call->nin),
               0;
    for (int d = 0; d < nd; d++)
        if ((size[d] = dims[d]) < -1)
            return ops_fail("output dim %d is %lld", d, (long long)size[d]), 0;
    return 1;
}

static int resize_read(const gnode *call, int nd, const int64_t *in, const int64_t *dims,
                       resize_params *p) {
    memset(p, 0, sizeof *p);
    p->nd = nd;
    int64_t size[MAXD + 1];
    if (!resize_read_size(call, nd, dims, p, size))
        return 0;
    if ((p->method = ops_attr_choice(call, "method", "nearest", g_resize_methods)) < 0 ||
        (p->coord = ops_attr_choice(call, "coordinate_transformation_mode", "half_pixel",
                                    g_coord_modes)) < 0 ||
        (p->rounding =
             ops_attr_choice(call, "rounding_method", "round_prefer_floor", g_roundings)) < 0 ||
        !attr_flag(call, "exclude_outside", &p->exclude))
        return 0;
    p->alpha = graph_attr_float(call, "cubic_alpha", -0.75);
    p->extrapolation = graph_attr_float(call, "extrapolation_value", 0);
    if (!isfinite(p->alpha))
        return ops_fail("cubic_alpha must be finite"), 0;
    const gattr *sc = graph_attr(call, "scales"), *roi = graph_attr(call, "roi");
    int has_scales = sc && sc->n > 0, has_roi = roi && roi->n > 0;
    if (has_scales && sc->n != nd)
        return ops_fail("scales has %d values for a %d-D input", sc->n, nd), 0;
    if ((has_scales && p->scales_in) || (has_roi && p->roi_in))
        return ops_fail("give the scales and the roi as attributes or as inputs, not both"), 0;
    if (p->roi_in && p->coord != CT_CROP)
        return ops_fail("roi_input is read by tf_crop_and_resize only"), 0;
    if (has_roi && roi->n != 2 * nd)
        return ops_fail("roi has %d values for a %d-D input (it needs the %d starts, then the "
                        "%d ends)",
                        roi->n, nd, nd, nd),
               0;
    int64_t taps = 1;
    for (int d = 0; d < nd; d++) {
        p->in[d] = in[d];
        int run_time = call->nin > 1 && size[d] == -1; /* resize_dims checks it */
        if (!run_time && (size[d] < 0 || size[d] > GRAPH_MAX_ELEMENTS))
            return ops_fail("size[%d] = %lld must be 0 to 2^48", d, (long long)size[d]), 0;
        if (in[d] == 0 && size[d] > 0)
            return ops_fail("dim %d is empty and cannot be resized to %lld", d, (long long)size[d]),
                   0;
        p->out[d] = size[d];
        double n = (double)in[d];
        p->dyn[d] = p->scales_in || (run_time && !has_scales);
        if (p->dyn[d]) {
            /* the kernel computes scale and length (resize_geom) */
        } else if (has_scales) {
            double s = sc->floats[d];
            if (!(s > 0) || !isfinite(s))
                return ops_fail("scales[%d] = %g must be positive and finite", d, s), 0;
            p->scale[d] = s;
            p->length[d] = round_f32(s * n);
        } else {
            p->scale[d] = in[d] ? (double)size[d] / n : 1;
            p->length[d] = p->scale[d] * n;
        }
        double start = has_roi ? roi->floats[d] : 0, end = has_roi ? roi->floats[nd + d] : 1;
        if (!isfinite(start) || !isfinite(end))
            return ops_fail("roi[%d] must be finite", isfinite(start) ? nd + d : d), 0;
        p->roi_len[d] = round_f32(end - start);
        p->roi_off[d] = round_f32(start * (n - 1));
        p->plain[d] = !p->dyn[d] && !p->roi_in && resize_axis_plain(p, d);
        if (!p->plain[d])
            taps *= p->method == RS_CUBIC ? 4 : p->method == RS_LINEAR ? 2 : 1;
        if (taps > RESIZE_MAX_TAPS)
            return ops_fail("resizing this many axes reads more than %d input elements per "
                            "output element",
                            RESIZE_MAX_TAPS),
                   0;
    }
    return 1;
}

/* Input i of the call a 1-D float vector of n values: REL_OK, or an error
 * naming it `what`. */
static rel_result resize_vector_in(const gtype *const *in, int i, const char *what, int n) {
    rel_result r = REL_OK;
    const gtensor_type *v = ops_tensor_in(in[i], i, &r);
    if (!v)
        return r;
    if (!ops_is_float_dtype(v->dtype) || v->ndim != 1 || v->dims[0].sym || v->dims[0].v != n)
        return ops_fail("input %d (the %s) must be a float vector of %d values", i, what, n);
    return REL_OK;
}

static rel_result rel_resize(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                             gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 1)
        return ops_fail("needs an input of at least 1 dim");
    if (!ops_all_known(x, 0, x->ndim))
        return ops_fail("symbolic dims are not supported by image.resize yet");
    int64_t dims[MAXD], size[MAXD];
    gdim vd[MAXD];
    for (int d = 0; d < x->ndim; d++)
        dims[d] = x->dims[d].v;
    if (call->nin > 1) { /* the output dims from input 1 */
        if (ops_value_dims(g, call, 1, vd, MAXD) != x->ndim)
            return ops_fail("input 1 (the dims) must be a constant or a bind_dims vector of %d "
                            "values",
                            x->ndim);
        for (int d = 0; d < x->ndim; d++) {
            if (!vd[d].sym && vd[d].v < 0)
                return ops_fail("output dim %d is %lld", d, (long long)vd[d].v);
            size[d] = vd[d].sym ? -1 : vd[d].v;
        }
    }
    resize_params p;
    if (!resize_read(call, x->ndim, dims, size, &p))
        return REL_ERROR;
    if (p.scales_in && (r = resize_vector_in(in, p.scales_in, "scales", x->ndim)) != REL_OK)
        return r;
    if (p.roi_in && (r = resize_vector_in(in, p.roi_in, "roi", 2 * x->ndim)) != REL_OK)
        return r;
    if (p.method != RS_NEAREST && !ops_is_float_dtype(x->dtype))
        return ops_fail("%s interpolation needs a float input, not %s", g_resize_methods[p.method],
                        kiln_dtype_name(x->dtype));
    /* an integer input gets the value converted: it must fit an int64 */
    if (p.coord == CT_CROP && !ops_is_float_dtype(x->dtype) &&
        !(p.extrapolation >= -0x1p63 && p.extrapolation < 0x1p63))
        return ops_fail("extrapolation_value %g does not fit the %s input", p.extrapolation,
                        kiln_dtype_name(x->dtype));
    gtensor_type res = *x;
    for (int d = 0; d < x->ndim; d++)
        res.dims[d] = p.out[d] < 0 ? vd[d] : (gdim){p.out[d], NULL};
    return ops_set_out(g, out, &res);
}

/* One axis's scale, resized length and roi as float64 expressions:
 * constants, or computed in the kernel from the values known when it runs
 * (len_one, the test length == 1, is then an expression; NULL when the
 * length is a constant). len_m1 is length - 1 (1 where the length is 1, so
 * that no select divides by 0), roi_mid the roi's middle in input pixels
 * (the coordinate where the length is 1). */
typedef struct {
    kiln_expr scale, length, len_m1, len_one, roi_len, roi_off, roi_mid;
} resize_geom;

/* v rounded to float32 where it is within float32's range, in the kernel. */
static kiln_expr round_f32_expr(kiln_ctx *ctx, kiln_expr v) {
    kiln_dtype f = KILN_FLOAT64;
    return kiln_select(kiln_le(kiln_abs(v), fconst(ctx, f, FLT_MAX)),
                       kiln_cast(f, kiln_cast(KILN_FLOAT32, v)), v);
}

/* Element k of a 1-D tensor as float64. */
static kiln_expr f64_elem(kiln_ctx *ctx, kiln_tensor *t, int k) {
    kiln_expr i = ops_int(ctx, k);
    return kiln_cast(KILN_FLOAT64, kiln_tensor_at(t, 1, &i));
}

/* Axis d's geometry (in: the call's inputs; outd: its output dims). */
static void resize_geom_of(kiln_ctx *ctx, const resize_params *p, int d, kiln_tensor *const *in,
                           const kiln_expr *outd, resize_geom *g) {
    kiln_dtype f = KILN_FLOAT64;
    double n = (double)p->in[d];
    kiln_expr one = fconst(ctx, f, 1), nf = fconst(ctx, f, n), n1 = fconst(ctx, f, n - 1);
    memset(g, 0, sizeof *g);
    if (!p->dyn[d]) {
        g->scale = fconst(ctx, f, p->scale[d]);
        g->length = fconst(ctx, f, p->length[d]);
        g->len_m1 = fconst(ctx, f, p->length[d] - 1);
    } else {
        if (p->scales_in) { /* ONNX's float32 scale times the dim, in float32 */
            g->scale = f64_elem(ctx, in[p->scales_in], d);
            g->length = round_f32_expr(ctx, kiln_mul(g->scale, nf));
        } else { /* out / in, as the static path computes it */
            g->scale = p->in[d] ? kiln_div(kiln_cast(f, outd[d]), nf) : one;
            g->length = kiln_mul(g->scale, nf);
        }
        g->len_one = kiln_eq(g->length, one);
        g->len_m1 = kiln_select(g->len_one, one, kiln_sub(g->length, one));
    }
    if (!p->roi_in) {
        g->roi_len = fconst(ctx, f, p->roi_len[d]);
        g->roi_off = fconst(ctx, f, p->roi_off[d]);
        g->roi_mid = fconst(ctx, f, round_f32(p->roi_len[d] * (n - 1)) / 2);
    } else {
        kiln_expr start = f64_elem(ctx, in[p->roi_in], d);
        kiln_expr end = f64_elem(ctx, in[p->roi_in], p->nd + d);
        g->roi_len = round_f32_expr(ctx, kiln_sub(end, start));
        g->roi_off = round_f32_expr(ctx, kiln_mul(start, n1));
        g->roi_mid = kiln_div(round_f32_expr(ctx, kiln_mul(g->roi_len, n1)), fconst(ctx, f, 2));
    }
}

/* `other`, or `if_one` where the axis's length is 1. */
static kiln_expr where_len_one(const resize_geom *g, kiln_expr if_one, kiln_expr other) {
    return g->len_one ? kiln_select(g->len_one, if_one, other) : other;
}

/* The source coordinate of output index o (int64) on axis d, in float64,
 * in the order of operations of ONNX's reference. */
static kiln_expr resize_coord(kiln_ctx *ctx, const resize_params *p, const resize_geom *g, int d,
                              kiln_expr o) {
    kiln_dtype f = KILN_FLOAT64;
    kiln_expr x = kiln_cast(f, o), half = fconst(ctx, f, 0.5);
    kiln_expr n1 = fconst(ctx, f, (double)(p->in[d] - 1));
    int one = !g->len_one && p->length[d] == 1; /* a constant length of 1 */
    switch (p->coord) {
    case CT_PYTORCH_HALF_PIXEL:
        if (one)
            return fconst(ctx, f, -0.5);
        return where_len_one(g, fconst(ctx, f, -0.5),
                             kiln_sub(kiln_div(kiln_add(x, half), g->scale), half));
    case CT_HALF_PIXEL: return kiln_sub(kiln_div(kiln_add(x, half), g->scale), half);
    case CT_ALIGN_CORNERS:
        return one ? fconst(ctx, f, 0)
                   : where_len_one(g, fconst(ctx, f, 0), kiln_div(kiln_mul(x, n1), g->len_m1));
    case CT_ASYMMETRIC: return kiln_div(x, g->scale);
    case CT_HALF_PIXEL_NN: return kiln_div(kiln_add(x, half), g->scale);
    default: {
        kiln_expr base =
            one ? g->roi_mid
                : where_len_one(g, g->roi_mid,
                                kiln_div(kiln_mul(kiln_mul(x, g->roi_len), n1), g->len_m1));
        return kiln_add(base, g->roi_off);
    }
    }
}

/* The taps of one axis: input indices (in range) and float64 weights
 * (NULL: 1); outside is set when tf_crop_and_resize's coordinate leaves
 * the input. */
typedef struct {
    int n;
    kiln_expr idx[4], w[4], outside;
} axis_taps;

static void resize_axis(kiln_ctx *ctx, const resize_params *p, const resize_geom *g, int d,
                        kiln_expr o, axis_taps *t) {
    kiln_dtype f = KILN_FLOAT64;
    memset(t, 0, sizeof *t);
    t->n = 1;
    t->idx[0] = o;
    if (p->plain[d])
        return;
    int64_t n = p->in[d];
    kiln_expr c = resize_coord(ctx, p, g, d, o), one = fconst(ctx, f, 1), zero = fconst(ctx, f, 0);
    kiln_expr hi = fconst(ctx, f, (double)(n - 1));
    if (p->coord == CT_CROP)
        t->outside = kiln_or(kiln_lt(c, zero), kiln_gt(c, hi));
    kiln_expr fl = kiln_floor(c), frac = kiln_sub(c, fl), pos[4];
    if (p->method == RS_NEAREST) {
        kiln_expr half = fconst(ctx, f, 0.5), up = NULL; /* round up from the floor */
        if (p->rounding == RND_PREFER_FLOOR)
            up = kiln_gt(frac, half);
        else if (p->rounding == RND_PREFER_CEIL)
            up = kiln_ge(frac, half);
        else if (p->rounding == RND_CEIL ||
                 (p->rounding == RND_SIMPLE && !p->dyn[d] && p->scale[d] < 1))
            up = kiln_gt(frac, zero);
        else if (p->rounding == RND_SIMPLE && p->dyn[d]) /* the scale known at run time */
            up = kiln_and(kiln_lt(g->scale, one), kiln_gt(frac, zero));
        t->idx[0] = float_index(ctx, f, up ? kiln_select(up, kiln_add(fl, one), fl) : fl, 0, n - 1);
        return;
    }
    if (p->method == RS_LINEAR) {
        t->n = 2;
        pos[0] = fl;
        pos[1] = kiln_add(fl, one);
        t->w[0] = kiln_sub(one, frac);
        t->w[1] = frac;
    } else {
        t->n = 4;
        for (int k = 0; k < 4; k++)
            pos[k] = kiln_add(fl, fconst(ctx, f, k - 1));
        cubic_weights(ctx, f, frac, p->alpha, t->w);
    }
    if (p->exclude) { /* taps outside weigh 0; the rest renormalized */
        kiln_expr sum = NULL;
        for (int k = 0; k < t->n; k++) {
            t->w[k] =
                kiln_select(kiln_and(kiln_ge(pos[k], zero), kiln_le(pos[k], hi)), t->w[k], zero);
            sum = sum ? kiln_add(sum, t->w[k]) : t->w[k];
        }
        for (int k = 0; k < t->n; k++)
            t->w[k] = kiln_div(t->w[k], sum);
    }
    for (int k = 0; k < t->n; k++)
        t->idx[k] = float_index(ctx, f, pos[k], 0, n - 1);
}

typedef struct {
    const resize_params *p;
    kiln_tensor *x;
    resize_geom g[MAXD];
    axis_taps t[MAXD];
} resize_args;

/* The interpolation over axes d.. with the indices of axes before d in
 * idx: axis d's taps weigh the interpolations of the axes after it (the
 * reference's order); float64 for linear and cubic, the element itself for
 * nearest. */
static kiln_expr resize_interp(resize_args *a, int d, kiln_expr *idx) {
    if (d == a->p->nd) {
        kiln_expr v = kiln_tensor_at(a->x, a->p->nd, idx);
        return a->p->method == RS_NEAREST ? v : kiln_cast(KILN_FLOAT64, v);
    }
    const axis_taps *t = &a->t[d];
    kiln_expr acc = NULL;
    for (int k = 0; k < t->n; k++) {
        idx[d] = t->idx[k];
        kiln_expr v = resize_interp(a, d + 1, idx);
        v = t->w[k] ? kiln_mul(t->w[k], v) : v;
        acc = acc ? kiln_add(acc, v) : v;
    }
    return acc;
}

static kiln_expr resize_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    resize_args *a = u;
    kiln_expr outside = NULL, idx[MAXD];
    for (int d = 0; d < a->p->nd; d++) {
        resize_axis(ctx, a->p, &a->g[d], d, o[d], &a->t[d]);
        if (a->t[d].outside)
            outside = outside ? kiln_or(outside, a->t[d].outside) : a->t[d].outside;
    }
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    kiln_expr v = resize_interp(a, 0, idx);
    if (a->p->method != RS_NEAREST)
        v = kiln_cast(dt, v);
    return outside ? kiln_select(outside, fconst(ctx, dt, a->p->extrapolation), v) : v;
}

static kiln_status compute_resize(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                  kiln_tensor **out) {
    int64_t xd[MAXD], od[MAXD];
    int nd = ops_shape(in[0], xd);
    ops_out_shape(call, od);
    resize_params p;
    if (!resize_read(call, nd, xd, od, &p))
        return KILN_ERR_INVALID;
    resize_args a;
    memset(&a, 0, sizeof a);
    a.p = &p;
    a.x = in[0];
    kiln_expr outd[MAXD];
    ops_out_dims(ctx, call, outd);
    for (int d = 0; d < nd; d++)
        resize_geom_of(ctx, &p, d, in, outd, &a.g[d]);
    out[0] = ops_compute(ctx, call, "", nd, od, resize_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- image.grid_sample ---------------------------------------------------------------- */

enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC };
static const char *const g_gs_methods[] = {"bilinear", "nearest", "bicubic", NULL};
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION };
static const char *const g_gs_paddings[] = {"zeros", "border", "reflection", NULL};

typedef struct {
    kiln_tensor *x, *grid;
    int method, padding, align;
    kiln_dtype f; /* the coordinates' float type */
    int64_t h, w;
} gs_args;

static int gs_read_attrs(const gnode *call, gs_args *a) {
    return (a->method = ops_attr_choice(call, "method", "bilinear", g_gs_methods)) >= 0 &&
           (a->padding = ops_attr_choice(call, "padding_mode", "zeros", g_gs_paddings)) >= 0 &&
           attr_flag(call, "align_corners", &a->align);
}

static rel_result rel_grid_sample(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *grid = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!grid)
        return r;
    if (x->ndim != 4 || grid->ndim != 4)
        return ops_fail("needs a 4-D input [N, C, H, W] and a 4-D grid [N, H_out, W_out, 2], not "
                        "%d-D and %d-D",
                        x->ndim, grid->ndim);
    if (!ops_all_known(x, 0, 4) || !ops_all_known(grid, 0, 4))
        return ops_fail("symbolic dims are not supported by image.grid_sample yet");
    if (!ops_is_float_dtype(x->dtype) || !ops_is_float_dtype(grid->dtype))
        return ops_fail("needs a float input and grid, not %s and %s", kiln_dtype_name(x->dtype),
                        kiln_dtype_name(grid->dtype));
    if (grid->dims[3].v != 2)
        return ops_fail("the grid's last dim is %lld, not 2 (x, y)", (long long)grid->dims[3].v);
    if (grid->dims[0].v != x->dims[0].v)
        return ops_fail("the grid's batch is %lld, the input's %lld", (long long)grid->dims[0].v,
                        (long long)x->dims[0].v);
    if (x->dims[2].v < 1 || x->dims[3].v < 1)
        return ops_fail("the input's H and W must not be empty (%lld x %lld)",
                        (long long)x->dims[2].v, (long long)x->dims[3].v);
    gs_args a;
    if (!gs_read_attrs(call, &a))
        return REL_ERROR;
    gtensor_type res = {x->dtype, 4, {x->dims[0], x->dims[1], grid->dims[1], grid->dims[2]}};
    return ops_set_out(g, out, &res);
}

/* A grid value (-1: the first pixel, 1: the last) as a pixel coordinate
 * along an axis of `size` pixels: their centers with align_corners, else
 * their outer edges. */
static kiln_expr gs_unnormalize(kiln_ctx *ctx, const gs_args *a, kiln_expr g, int64_t size) {
    kiln_expr one = fconst(ctx, a->f, 1), two = fconst(ctx, a->f, 2), n = fconst(ctx, a->f, size);
    if (a->align)
        return kiln_mul(kiln_div(kiln_add(g, one), two), kiln_sub(n, one));
    return kiln_div(kiln_sub(kiln_mul(kiln_add(g, one), n), one), two);
}

/* c clamped to [lo, hi] (NaN to lo). */
static kiln_expr gs_clip(kiln_ctx *ctx, kiln_dtype f, kiln_expr c, double lo, double hi) {
    kiln_expr l = fconst(ctx, f, lo), h = fconst(ctx, f, hi);
    return kiln_select(kiln_ge(c, l), kiln_select(kiln_le(c, h), c, h), l);
}

/* c mirrored into [twice_low / 2, twice_high / 2] (PyTorch's
 * reflect_coordinates): the distance from the low end, folded by the span
 * an even or odd number of times. */
static kiln_expr gs_reflect(kiln_ctx *ctx, kiln_dtype f, kiln_expr c, double twice_low,
                            double twice_high) {
    if (twice_low == twice_high)
        return fconst(ctx, f, 0);
    double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
    kiln_expr sp = fconst(ctx, f, span), l = fconst(ctx, f, lo);
    kiln_expr d = kiln_abs(kiln_sub(c, l)), extra = kiln_mod(d, sp);
    kiln_expr flips = kiln_floor(kiln_div(d, sp));
    kiln_expr even = kiln_eq(kiln_mod(flips, fconst(ctx, f, 2)), fconst(ctx, f, 0));
    return kiln_select(even, kiln_add(extra, l), kiln_add(kiln_sub(sp, extra), l));
}

/* A pixel coordinate along an axis of `size` under the padding mode:
 * border clamps it to the image, reflection mirrors it at the image's
 * edges (pixel centers with align_corners, else outer edges) and clamps;
 * zeros leaves it (its taps outside read 0). */
static kiln_expr gs_pad(kiln_ctx *ctx, const gs_args *a, kiln_expr c, int64_t size) {
    double last = (double)(size - 1);
    if (a->padding == PAD_ZEROS)
        return c;
    if (a->padding == PAD_REFLECTION)
        c = a->align ? gs_reflect(ctx, a->f, c, 0, 2 * last)
                     : gs_reflect(ctx, a->f, c, -1, 2 * (double)size - 1);
    return gs_clip(ctx, a->f, c, 0, last);
}

/* x[n, c, y, x] at integral float coordinates (fy, fx), as the float type:
 * 0 outside the image. */
static kiln_expr gs_tap(kiln_ctx *ctx, const gs_args *a, const kiln_expr *o, kiln_expr fy,
                        kiln_expr fx) {
    kiln_expr iy = float_index(ctx, a->f, fy, -1, a->h), ix = float_index(ctx, a->f, fx, -1, a->w);
    kiln_expr zero = ops_int(ctx, 0);
    kiln_expr inside = kiln_and(kiln_and(kiln_ge(iy, zero), kiln_lt(iy, ops_int(ctx, a->h))),
                                kiln_and(kiln_ge(ix, zero), kiln_lt(ix, ops_int(ctx, a->w))));
    kiln_expr idx[4] = {o[0], o[1], kiln_min(kiln_max(iy, zero), ops_int(ctx, a->h - 1)),
                        kiln_min(kiln_max(ix, zero), ops_int(ctx, a->w - 1))};
    kiln_expr v = kiln_cast(a->f, kiln_tensor_at(a->x, 4, idx));
    return kiln_select(inside, v, fconst(ctx, a->f, 0));
}

static kiln_expr gs_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    gs_args *a = u;
    kiln_expr gi[4] = {o[0], o[2], o[3], ops_int(ctx, 0)};
    kiln_expr gx = kiln_cast(a->f, kiln_tensor_at(a->grid, 4, gi));
    gi[3] = ops_int(ctx, 1);
    kiln_expr gy = kiln_cast(a->f, kiln_tensor_at(a->grid, 4, gi));
    kiln_expr one = fconst(ctx, a->f, 1), v;
    if (a->method == GS_NEAREST) {
        kiln_expr x = gs_pad(ctx, a, gs_unnormalize(ctx, a, gx, a->w), a->w);
        kiln_expr y = gs_pad(ctx, a, gs_unnormalize(ctx, a, gy, a->h), a->h);
        v = gs_tap(ctx, a, o, kiln_round(y), kiln_round(x));
    } else if (a->method == GS_BILINEAR) {
        kiln_expr x = gs_pad(ctx, a, gs_unnormalize(ctx, a, gx, a->w), a->w);
        kiln_expr y = gs_pad(ctx, a, gs_unnormalize(ctx, a, gy, a->h), a->h);
        kiln_expr x0 = kiln_floor(x), y0 = kiln_floor(y);
        kiln_expr x1 = kiln_add(x0, one), y1 = kiln_add(y0, one);
        kiln_expr wx[2] = {kiln_sub(x1, x), kiln_sub(x, x0)},
                  wy[2] = {kiln_sub(y1, y), kiln_sub(y, y0)};
        kiln_expr xs[2] = {x0, x1}, ys[2] = {y0, y1};
        v = NULL;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                kiln_expr t = kiln_mul(gs_tap(ctx, a, o, ys[i], xs[j]), kiln_mul(wx[j], wy[i]));
                v = v ? kiln_add(v, t) : t;
            }
    } else { /* bicubic: the padding applies to each tap */
        kiln_expr x = gs_unnormalize(ctx, a, gx, a->w), y = gs_unnormalize(ctx, a, gy, a->h);
        kiln_expr x0 = kiln_floor(x), y0 = kiln_floor(y), wx[4], wy[4], xs[4];
        cubic_weights(ctx, a->f, kiln_sub(x, x0), -0.75, wx);
        cubic_weights(ctx, a->f, kiln_sub(y, y0), -0.75, wy);
        for (int j = 0; j < 4; j++)
            xs[j] = gs_pad(ctx, a, kiln_add(x0, fconst(ctx, a->f, j - 1)), a->w);
        v = NULL;
        for (int i = 0; i < 4; i++) {
            kiln_expr yi = gs_pad(ctx, a, kiln_add(y0, fconst(ctx, a->f, i - 1)), a->h), row = NULL;
            for (int j = 0; j < 4; j++) {
                kiln_expr t = kiln_mul(gs_tap(ctx, a, o, yi, xs[j]), wx[j]);
                row = row ? kiln_add(row, t) : t;
            }
            kiln_expr t = kiln_mul(row, wy[i]);
            v = v ? kiln_add(v, t) : t;
        }
    }
    return kiln_cast(kiln_tensor_dtype(a->x), v);
}

static kiln_status compute_grid_sample(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    gs_args a;
    if (!gs_read_attrs(call, &a))
        return KILN_ERR_INVALID;
    int64_t xd[4], od[4];
    ops_shape(in[0], xd);
    ops_out_shape(call, od);
    a.x = in[0];
    a.grid = in[1];
    a.h = xd[2];
    a.w = xd[3];
    a.f = kiln_tensor_dtype(in[0]) == KILN_FLOAT64 || kiln_tensor_dtype(in[1]) == KILN_FLOAT64
              ? KILN_FLOAT64
              : KILN_FLOAT32;
    out[0] = ops_compute(ctx, call, "", 4, od, gs_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- image.roi_align ---------------------------------------------------------------- */

/* RoiAlign as ONNX's reference and ONNX Runtime compute it (from Caffe2):
 * region r of rois [R, (x1, y1, x2, y2)], scaled by spatial_scale and, with
 * half_pixel, shifted by -0.5, is cut into output_height x output_width
 * bins. Bin (ph, pw) takes gh x gw samples, sampling_ratio each way, or
 * when it is 0 ceil(the region's height / output_height) and likewise for
 * the width: sample (iy, ix) is at y = y1 + ph * bin_h + (iy + 0.5) *
 * bin_h / gh. A sample outside [-1, H] x [-1, W] counts as 0; one inside
 * is clamped to the image and interpolated from its four neighbours. The
 * bin is the sum of its samples over max(gh * gw, 1) (avg), or the largest
 * of its samples, each the largest of the four weighted neighbours (max:
 * ONNX Runtime's definition, which the ONNX tests hold).
 *
 * With sampling_ratio 0 the sample counts depend on the regions, that is
 * on data, so the loops run a bound fixed by the input instead: a bin's
 * samples are at most one pixel apart (bin_h / ceil(bin_h)), so at most
 * H + 3 of them fall inside [-1, H]. The loop over a bin's rows runs
 * H + 8 steps from an offset: 0 when the bin has no more samples than
 * that (a guard skips the rows past gh), else just before its first
 * sample inside the image, computed from the coordinates (the rows it
 * skips are all outside, that is 0). Coordinates are float64, as the
 * reference computes them; the counts are clamped while they are floats,
 * so no conversion overflows. Cost: R * C * output_height * output_width
 * * (H + 8) * (W + 8) samples with sampling_ratio 0, else times
 * sampling_ratio^2. */
enum { ROI_AVG, ROI_MAX };
static const char *const g_roi_modes[] = {"avg", "max", NULL};
static const char *const g_roi_coords[] = {"half_pixel", "output_half_pixel", NULL};
#define ROI_SLACK 8               /* the loop bound past H (W) with sampling_ratio 0 */
#define ROI_MAX_GRID 1073741824.0 /* 2^30: sample counts are clamped to it */

typedef struct {
    kiln_tensor *x, *rois, *idx, *acc;
    int mode, half;
    int64_t n, h, w, oh, ow, ratio, th, tw; /* th x tw: the sample loops */
    double scale;
    kiln_expr ty, tx;
} roi_args;

static int roi_read_attrs(const gnode *call, roi_args *a) {
    a->oh = graph_attr_int(call, "output_height", 1);
    a->ow = graph_attr_int(call, "output_width", 1);
    a->ratio = graph_attr_int(call, "sampling_ratio", 0);
    a->scale = graph_attr_float(call, "spatial_scale", 1);
    int coord;
    if ((a->mode = ops_attr_choice(call, "mode", "avg", g_roi_modes)) < 0 ||
        (coord = ops_attr_choice(call, "coordinate_transformation_mode", "half_pixel",
                                 g_roi_coords)) < 0)
        return 0;
    a->half = coord == 0;
    if (a->oh < 1 || a->ow < 1 || a->oh > GRAPH_MAX_ELEMENTS || a->ow > GRAPH_MAX_ELEMENTS)
        return ops_fail("output_height and output_width must be 1 to 2^48, not %lld and %lld",
                        (long long)a->oh, (long long)a->ow),
               0;
    if (a->ratio < 0 || a->ratio > 65536)
        return ops_fail("sampling_ratio = %lld must be 0 (adaptive) to 65536", (long long)a->ratio),
               0;
    if (!isfinite(a->scale))
        return ops_fail("spatial_scale = %g must be finite", a->scale), 0;
    return 1;
}

static rel_result rel_roi_align(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *rois = x ? ops_tensor_in(in[1], 1, &r) : NULL,
                       *bi = rois ? ops_tensor_in(in[2], 2, &r) : NULL;
    if (!bi)
        return r;
    if (x->ndim != 4 || rois->ndim != 2 || bi->ndim != 1)
        return ops_fail("needs an input [N, C, H, W], rois [R, 4] and batch indices [R], not "
                        "%d-D, %d-D and %d-D",
                        x->ndim, rois->ndim, bi->ndim);
    if (!ops_all_known(x, 0, 4) || !ops_all_known(rois, 0, 2) || !ops_all_known(bi, 0, 1))
        return ops_fail("symbolic dims are not supported by image.roi_align yet");
    if (!ops_is_float_dtype(x->dtype) || x->dtype == KILN_BFLOAT16 || rois->dtype != x->dtype)
        return ops_fail("needs a float16, float32 or float64 input and rois of its dtype, not %s "
                        "and %s",
                        kiln_dtype_name(x->dtype), kiln_dtype_name(rois->dtype));
    if (!ops_is_index_dtype(bi->dtype))
        return ops_fail("the batch indices must be integers, not %s", kiln_dtype_name(bi->dtype));
    if (rois->dims[1].v != 4 || rois->dims[0].v != bi->dims[0].v)
        return ops_fail("the rois are [%lld, %lld] for %lld batch indices; they must be [R, 4] "
                        "for R",
                        (long long)rois->dims[0].v, (long long)rois->dims[1].v,
                        (long long)bi->dims[0].v);
    if (x->dims[0].v < 1 || x->dims[2].v < 1 || x->dims[3].v < 1)
        return ops_fail("the input's N, H and W must not be empty (%lld, %lld x %lld)",
                        (long long)x->dims[0].v, (long long)x->dims[2].v, (long long)x->dims[3].v);
    roi_args a;
    if (!roi_read_attrs(call, &a))
        return REL_ERROR;
    gtensor_type res = {x->dtype, 4, {rois->dims[0], x->dims[1], {a.oh, NULL}, {a.ow, NULL}}};
    return ops_set_out(g, out, &res);
}

/* Along one axis of `size` pixels, for the bin at output index o: the
 * region's start and bin size, the sample count g (float, clamped) and
 * the float64 coordinate of the loop's step t, with its sample index (the
 * loop runs `loop` steps). */
typedef struct {
    kiln_expr start, bin, g, gi, coord, index;
} roi_axis;

static void roi_axis_at(kiln_ctx *ctx, const roi_args *a, const kiln_expr *o, int col, int64_t bins,
                        int64_t loop, kiln_expr o_bin, kiln_expr t, roi_axis *ax) {
    kiln_dtype f = KILN_FLOAT64;
    kiln_expr r0[2] = {o[0], ops_int(ctx, col)}, r1[2] = {o[0], ops_int(ctx, col + 2)};
    kiln_expr off = fconst(ctx, f, a->half ? 0.5 : 0), sc = fconst(ctx, f, a->scale);
    ax->start = kiln_sub(kiln_mul(kiln_cast(f, kiln_tensor_at(a->rois, 2, r0)), sc), off);
    kiln_expr end = kiln_sub(kiln_mul(kiln_cast(f, kiln_tensor_at(a->rois, 2, r1)), sc), off);
    kiln_expr len = kiln_sub(end, ax->start), one = fconst(ctx, f, 1);
    if (!a->half) /* malformed regions become 1 x 1 */
        len = kiln_select(kiln_gt(len, one), len, one);
    ax->bin = kiln_div(len, fconst(ctx, f, (double)bins));
    kiln_expr g = a->ratio > 0 ? fconst(ctx, f, (double)a->ratio) : kiln_ceil(ax->bin);
    kiln_expr lo = fconst(ctx, f, -ROI_MAX_GRID), hi = fconst(ctx, f, ROI_MAX_GRID);
    ax->g = kiln_select(kiln_ge(g, lo), kiln_select(kiln_le(g, hi), g, hi), lo);
    ax->gi = kiln_cast(KILN_INT64, ax->g);
    kiln_expr first = kiln_add(ax->start, kiln_mul(kiln_cast(f, o_bin), ax->bin));
    kiln_expr skip = ops_int(ctx, 0);
    if (a->ratio == 0) {
        /* more samples than the loop: start 2 before the first at y >= -1 */
        kiln_expr est =
            kiln_sub(kiln_floor(kiln_sub(
                         kiln_div(kiln_mul(kiln_sub(fconst(ctx, f, -1), first), ax->g), ax->bin),
                         fconst(ctx, f, 0.5))),
                     fconst(ctx, f, 2));
        kiln_expr most = kiln_sub(ax->g, fconst(ctx, f, (double)loop)), z = fconst(ctx, f, 0);
        est = kiln_select(kiln_le(est, most), est, most);
        est = kiln_select(kiln_ge(est, z), est, z);
        skip = kiln_select(kiln_gt(ax->gi, ops_int(ctx, loop)), kiln_cast(KILN_INT64, est), skip);
    }
    ax->index = kiln_add(skip, t);
    kiln_expr at = kiln_add(kiln_cast(f, ax->index), fconst(ctx, f, 0.5));
    ax->coord = kiln_add(first, kiln_div(kiln_mul(at, ax->bin), ax->g));
}

/* The two neighbours of coordinate c (inside [-1, size]) and the weight
 * of the upper one: c below 0 reads pixel 0, past size - 1 the last. */
static void roi_taps(kiln_ctx *ctx, kiln_expr c, int64_t size, kiln_expr *lo, kiln_expr *hi,
                     kiln_expr *frac) {
    kiln_dtype f = KILN_FLOAT64;
    kiln_expr z = fconst(ctx, f, 0);
    c = kiln_select(kiln_gt(c, z), c, z);
    kiln_expr low = float_index(ctx, f, c, 0, size - 1);
    kiln_expr last = kiln_ge(low, ops_int(ctx, size - 1));
    *lo = low;
    *hi = kiln_select(last, low, kiln_add(low, ops_int(ctx, 1)));
    *frac = kiln_select(last, z, kiln_sub(c, kiln_cast(f, low)));
}

/* one bin's samples, summed (avg) or maxed (max) over the loops */
static kiln_expr roi_acc_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    roi_args *a = u;
    kiln_dtype f = KILN_FLOAT64;
    roi_axis ay, ax;
    roi_axis_at(ctx, a, o, 1, a->oh, a->th, o[2], a->ty, &ay);
    roi_axis_at(ctx, a, o, 0, a->ow, a->tw, o[3], a->tx, &ax);
    kiln_expr valid = kiln_and(kiln_lt(ay.index, ay.gi), kiln_lt(ax.index, ax.gi));
    kiln_expr m1 = fconst(ctx, f, -1);
    kiln_expr outside =
        kiln_or(kiln_or(kiln_lt(ay.coord, m1), kiln_gt(ay.coord, fconst(ctx, f, (double)a->h))),
                kiln_or(kiln_lt(ax.coord, m1), kiln_gt(ax.coord, fconst(ctx, f, (double)a->w))));
    kiln_expr y0, y1, ly, x0, x1, lx, one = fconst(ctx, f, 1), z = fconst(ctx, f, 0);
    roi_taps(ctx, ay.coord, a->h, &y0, &y1, &ly);
    roi_taps(ctx, ax.coord, a->w, &x0, &x1, &lx);
    kiln_expr zi = ops_int(ctx, 0);
    kiln_expr ys[2] = {kiln_select(outside, zi, y0), kiln_select(outside, zi, y1)};
    kiln_expr xs[2] = {kiln_select(outside, zi, x0), kiln_select(outside, zi, x1)};
    kiln_expr wy[2] = {kiln_sub(one, ly), ly}, wx[2] = {kiln_sub(one, lx), lx};
    kiln_expr b = ops_checked_index(ctx, kiln_tensor_at(a->idx, 1, o), a->n, 0), v = NULL;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            kiln_expr at[4] = {b, o[1], ys[i], xs[j]};
            kiln_expr w = kiln_select(outside, z, kiln_mul(wy[i], wx[j]));
            kiln_expr t = kiln_mul(w, kiln_cast(f, kiln_tensor_at(a->x, 4, at)));
            v = !v ? t : a->mode == ROI_AVG ? kiln_add(v, t) : kiln_max(v, t);
        }
    kiln_expr axes[2] = {a->ty, a->tx};
    if (a->mode == ROI_AVG)
        return kiln_sum(kiln_select(valid, v, z), 2, axes);
    return kiln_max_reduce(kiln_select(valid, v, fconst(ctx, f, -INFINITY)), 2, axes);
}

/* avg: the sum over max(gh * gw, 1); max: the largest sample, 0 where the
 * loops skipped samples (outside the image, so 0) or the bin has none */
static kiln_expr roi_out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    roi_args *a = u;
    kiln_dtype f = KILN_FLOAT64;
    roi_axis ay, ax;
    kiln_expr zi = ops_int(ctx, 0), z = fconst(ctx, f, 0);
    roi_axis_at(ctx, a, o, 1, a->oh, a->th, o[2], zi, &ay);
    roi_axis_at(ctx, a, o, 0, a->ow, a->tw, o[3], zi, &ax);
    kiln_expr acc = kiln_tensor_at(a->acc, 4, o), v;
    if (a->mode == ROI_AVG) {
        kiln_expr count = kiln_mul(ay.g, ax.g), one = fconst(ctx, f, 1);
        v = kiln_div(acc, kiln_select(kiln_gt(count, one), count, one));
    } else {
        kiln_expr any = kiln_and(kiln_gt(ay.gi, zi), kiln_gt(ax.gi, zi));
        kiln_expr skipped =
            kiln_or(kiln_gt(ay.gi, ops_int(ctx, a->th)), kiln_gt(ax.gi, ops_int(ctx, a->tw)));
        v = kiln_select(any, kiln_select(skipped, kiln_max(acc, z), acc), z);
    }
    return kiln_cast(kiln_tensor_dtype(a->x), v);
}

static kiln_status compute_roi_align(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                     kiln_tensor **out) {
    roi_args a;
    memset(&a, 0, sizeof a);
    if (!roi_read_attrs(call, &a))
        return KILN_ERR_INVALID;
    int64_t xd[4], od[4];
    ops_shape(in[0], xd);
    ops_out_shape(call, od);
    a.x = in[0];
    a.rois = in[1];
    a.idx = in[2];
    a.n = xd[0];
    a.h = xd[2];
    a.w = xd[3];
    a.th = a.ratio > 0 ? a.ratio : a.h + ROI_SLACK;
    a.tw = a.ratio > 0 ? a.ratio : a.w + ROI_SLACK;
    a.ty = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.th), "ty");
    a.tx = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.tw), "tx");
    a.acc = ops_compute(ctx, call, ".acc", 4, od, roi_acc_body, &a);
    out[0] = a.acc ? ops_compute(ctx, call, "", 4, od, roi_out_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- resize_dims ----------------------------------------------------------------- */

/* (a shape function of docs/DYNAMIC_SHAPES.md, part 3, beside the op it serves) */
static const attr_schema resize_dims_attrs[] = {
    {"sizes", GA_INT, 0, "0"}, {"upsample", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};

static rel_result rel_resize_dims(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r), *v = x ? ops_tensor_in(in[1], 1, &r) : 0;
    if (!v)
        return r;
    int64_t sizes = graph_attr_int(call, "sizes", 0), up = graph_attr_int(call, "upsample", 0);
    if ((sizes != 0 && sizes != 1) || (up != 0 && up != 1) || (sizes && up))
        return ops_fail("sizes and upsample must be 0 or 1, and not both 1");
    if (sizes && v->dtype != KILN_INT64)
        return ops_fail("the sizes must be int64, not %s", kiln_dtype_name(v->dtype));
    if (x->ndim < 1 || v->ndim != 1 || v->dims[0].sym || v->dims[0].v != x->ndim)
        return ops_fail("the %s must be a vector of one value per dim of the %d-D input",
                        sizes ? "sizes" : "scales", x->ndim);
    return ops_dims_rel(g, v, sizes ? "the sizes" : "the scales", !sizes, -1, out);
}

/* ONNX Resize's (and Upsample's) output dims: sizes[d], or
 * floor(dim d * scales[d]) in float64 (ONNX's reference multiplies its
 * float32 scales by the int64 dims). A scale that is not positive and
 * finite (below 1 for Upsample), a size below 0 or one that resizes an
 * empty dim, and a dim past 2^48 are invalid. */
static kiln_status compute_resize_dims(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    static _Thread_local ops_dims_fn f;
    kiln_tensor *x = in[0], *v = in[1];
    int sizes = graph_attr_int(call, "sizes", 0) != 0,
        up = graph_attr_int(call, "upsample", 0) != 0;
    f.n = kiln_tensor_ndim(x);
    kiln_dtype f64 = KILN_FLOAT64;
    kiln_expr zero = kiln_int(ctx, 0), limit = kiln_int(ctx, GRAPH_MAX_ELEMENTS);
    kiln_expr flimit = kiln_const(ctx, f64, (double)GRAPH_MAX_ELEMENTS);
    kiln_expr bad = kiln_const(ctx, KILN_BOOL, 0), w[KILN_MAX_NDIM];
    for (int d = 0; d < f.n; d++) {
        kiln_expr n = kiln_tensor_dim(x, d);
        if (sizes) {
            w[d] = ops_elem_i64(ctx, v, d);
            bad = kiln_or(bad, kiln_or(kiln_or(kiln_lt(w[d], zero), kiln_gt(w[d], limit)),
                                       kiln_and(kiln_eq(n, zero), kiln_gt(w[d], zero))));
            continue;
        }
        kiln_expr i = kiln_int(ctx, d);
        kiln_expr s = kiln_cast(f64, kiln_tensor_at(v, 1, &i));
        kiln_expr p = kiln_floor(kiln_mul(s, kiln_cast(f64, n)));
        /* NaN fails every comparison: not ok */
        kiln_expr ok = kiln_and(kiln_and(kiln_gt(s, kiln_const(ctx, f64, 0)),
                                         kiln_le(s, kiln_const(ctx, f64, DBL_MAX))),
                                kiln_and(kiln_ge(p, kiln_const(ctx, f64, 0)), kiln_le(p, flimit)));
        if (up)
            ok = kiln_and(ok, kiln_ge(s, kiln_const(ctx, f64, 1)));
        bad = kiln_or(bad, kiln_not(ok));
        /* converted only where it is in range, so the conversion is defined */
        w[d] = kiln_cast(KILN_INT64, kiln_select(ok, p, kiln_const(ctx, f64, 0)));
    }
    for (int d = 0; d < f.n; d++)
        f.dim[d] = kiln_select(bad, kiln_int(ctx, -1), w[d]);
    return ops_dims_out(ctx, call, &f, out);
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_image_rows[] = {
    OPS_SYM_ROW(
        "resize_dims", 2, 2, resize_dims_attrs, rel_resize_dims, compute_resize_dims, OP_INJECTIVE,
        "ONNX Resize's output dims from its scales or (sizes=1) sizes (-1 each if invalid)"),
    {.name = "image.resize",
     .min_in = 1,
     .max_in = 4,
     .attrs = resize_attrs,
     .rel = rel_resize,
     .pattern = OP_INJECTIVE,
     .compute = compute_resize,
     .summary = "resize to `size` or the dims of input 1 (ONNX Resize): nearest, linear or "
                "cubic around a source coordinate per axis",
     .sym_dims = 1},
    {.name = "image.grid_sample",
     .min_in = 2,
     .max_in = 2,
     .attrs = grid_sample_attrs,
     .rel = rel_grid_sample,
     .pattern = OP_INJECTIVE,
     .compute = compute_grid_sample,
     .summary = "NCHW input sampled at a grid [N, H_out, W_out, (x, y)] in [-1, 1] (ONNX "
                "GridSample)"},
    {.name = "image.roi_align",
     .min_in = 3,
     .max_in = 3,
     .attrs = roi_align_attrs,
     .rel = rel_roi_align,
     .pattern = OP_OPAQUE,
     .compute = compute_roi_align,
     .summary = "regions rois [R, (x1, y1, x2, y2)] of NCHW images batch_indices [R] pooled to "
                "output_height x output_width bins of bilinear samples, avg or max (ONNX "
                "RoiAlign)"},
};

const int ops_image_count = (int)(sizeof ops_image_rows / sizeof ops_image_rows[0]);
