/* test_ops_image.c: the image ops (src/ops/image.c) past what the node tests
 * (Debian's, and kiln's own in tests/data/image_nodes) reach: every relation
 * error of image.resize and image.grid_sample; hostile grids (NaN, infinities,
 * 1e30) that must sample inside the image or read padding, never crash;
 * edge shapes (an empty output, a one-pixel input under every coordinate
 * mode, a cubic exclude_outside where only one tap is inside); and the
 * importer's errors for Resize, Upsample and GridSample models
 * (tests/data/image_bad, written by make_image_node_tests.py); and the
 * errors of the run-time form, image.resize with its dims from a binder of
 * resize_dims (its values: test_runtime_values.c and the Debian tests
 * whose scales and sizes are graph inputs). */
#include <math.h>

#include "check.h"
#include "graph/graph_internal.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "onnx_util.h"
#include "op_util.h"
#include "te_util.h"

/* ---- harness ------------------------------------------------------------------- */

/* A float32 array of type t holding v. */
static kiln_ndarray *f32_array(ot_type t, const double *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, t.nd, t.d);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
        ((float *)kiln_ndarray_data(a))[i] = (float)v[i];
    return a;
}

/* Compile and run op on float32 inputs of types ts holding vs: output 0,
 * or NULL (the error printed). */
static kiln_ndarray *run_f32(const char *op, const char *attrs, int nin, const ot_type *ts,
                             const double *const *vs) {
    kiln_graph *g = kiln_graph_new();
    kiln_ndarray *xs[2];
    for (int i = 0; i < nin; i++)
        xs[i] = f32_array(ts[i], vs[i]);
    int c = ot_call_on_vars(g, op, attrs, nin, ts);
    CHECK(c >= 0);
    kiln_ndarray *r = NULL;
    if (c >= 0 && kiln_graph_set_outputs(g, 1, &c, NULL) == KILN_OK)
        r = gu_compile_run(g, NULL, nin, (const kiln_ndarray *const *)xs, NULL, NULL, 0);
    for (int i = 0; i < nin; i++)
        kiln_ndarray_free(xs[i]);
    kiln_graph_free(g);
    return r;
}

/* r holds want[n] (exactly; NaN matches NaN), and frees r. */
static void expect_values(kiln_ndarray *r, int64_t n, const double *want, const char *what) {
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_INT(kiln_ndarray_numel(r), n);
    for (int64_t i = 0; i < n && i < kiln_ndarray_numel(r); i++) {
        double got = tu_get(r, i);
        if (got != want[i] && !(isnan(got) && isnan(want[i]))) {
            fprintf(stderr, "%s[%lld] = %g, want %g\n", what, (long long)i, got, want[i]);
            CHECK(got == want[i]);
            break;
        }
    }
    kiln_ndarray_free(r);
}

/* ---- relation errors -------------------------------------------------------------- */

static void test_relation_errors(void) {
    const char *rs = "image.resize", *gs = "image.grid_sample";
    ot_expect_error(rs, "size=[2, 3]", 1, T(F32(1, 2, 3)), "size has 2 values for a 3-D input");
    ot_expect_error(rs, "size=[1, -2]", 1, T(F32(1, 2)), "size[1] = -2 must be 0 to 2^48");
    ot_expect_error(rs, "size=[1, 4]", 1, T(F32(1, 0)),
                    "dim 1 is empty and cannot be resized to 4");
    ot_expect_error(rs, "size=[1, 4], scales=[1]", 1, T(F32(1, 2)),
                    "scales has 1 values for a 2-D input");
    ot_expect_error(rs, "size=[1, 4], scales=[1, 0]", 1, T(F32(1, 2)),
                    "scales[1] = 0 must be positive and finite");
    ot_expect_error(rs, "size=[1, 4], scales=[1, inff]", 1, T(F32(1, 2)),
                    "scales[1] = inf must be positive and finite");
    ot_expect_error(rs, "size=[1, 4], roi=[0, 0, 1]", 1, T(F32(1, 2)),
                    "roi has 3 values for a 2-D input (it needs the 2 starts, then the 2 ends)");
    ot_expect_error(rs, "size=[1, 4], roi=[0, 0, 1, nanf]", 1, T(F32(1, 2)),
                    "roi[3] must be finite");
    ot_expect_error(rs, "size=[1, 4], method=\"bilinear\"", 1, T(F32(1, 2)),
                    "method 'bilinear' is not one of nearest, linear, cubic");
    ot_expect_error(rs, "size=[1, 4], coordinate_transformation_mode=\"half\"", 1, T(F32(1, 2)),
                    "coordinate_transformation_mode 'half' is not one of half_pixel");
    ot_expect_error(rs, "size=[1, 4], rounding_method=\"round\"", 1, T(F32(1, 2)),
                    "rounding_method 'round' is not one of round_prefer_floor");
    ot_expect_error(rs, "size=[1, 4], exclude_outside=2", 1, T(F32(1, 2)),
                    "exclude_outside = 2 must be 0 or 1");
    ot_expect_error(rs, "size=[1, 4], cubic_alpha=nanf", 1, T(F32(1, 2)),
                    "cubic_alpha must be finite");
    ot_expect_error(rs, "size=[1, 4], method=\"linear\"", 1, T(I32(1, 2)),
                    "linear interpolation needs a float input, not int32");
    ot_expect_error(rs,
                    "size=[1, 4], coordinate_transformation_mode=\"tf_crop_and_resize\", "
                    "extrapolation_value=inff",
                    1, T(I32(1, 2)), "extrapolation_value inf does not fit the int32 input");
    ot_expect_error(rs,
                    "size=[1, 4], coordinate_transformation_mode=\"tf_crop_and_resize\", "
                    "extrapolation_value=1e30",
                    1, T(I32(1, 2)), "extrapolation_value 1e+30 does not fit the int32 input");
    ot_expect_error(rs, "size=[4]", 1, T(SCALAR(KILN_FLOAT32)), "needs an input of at least 1 dim");
    /* cubic on 5 axes reads 4^5 elements per output element */
    ot_expect_error(rs, "size=[3, 3, 3, 3, 3], method=\"cubic\"", 1, T(F32(2, 2, 2, 2, 2)),
                    "reads more than 256 input elements per output element");
    ot_expect_error(gs, NULL, 2, T(F32(1, 1, 2, 2, 2), F32(1, 2, 2, 2)),
                    "needs a 4-D input [N, C, H, W] and a 4-D grid [N, H_out, W_out, 2], not 5-D "
                    "and 4-D");
    ot_expect_error(gs, NULL, 2, T(F32(1, 1, 2, 2), F32(1, 2, 2, 3)),
                    "the grid's last dim is 3, not 2 (x, y)");
    ot_expect_error(gs, NULL, 2, T(F32(1, 1, 2, 2), F32(2, 2, 2, 2)),
                    "the grid's batch is 2, the input's 1");
    ot_expect_error(gs, NULL, 2, T(I32(1, 1, 2, 2), F32(1, 2, 2, 2)),
                    "needs a float input and grid, not int32 and float32");
    ot_expect_error(gs, NULL, 2, T(F32(1, 1, 0, 2), F32(1, 2, 2, 2)),
                    "the input's H and W must not be empty (0 x 2)");
    ot_expect_error(gs, "method=\"linear\"", 2, T(F32(1, 1, 2, 2), F32(1, 2, 2, 2)),
                    "method 'linear' is not one of bilinear, nearest, bicubic");
    ot_expect_error(gs, "padding_mode=\"wrap\"", 2, T(F32(1, 1, 2, 2), F32(1, 2, 2, 2)),
                    "padding_mode 'wrap' is not one of zeros, border, reflection");
    ot_expect_error(gs, "align_corners=2", 2, T(F32(1, 1, 2, 2), F32(1, 2, 2, 2)),
                    "align_corners = 2 must be 0 or 1");
    const char *ra = "image.roi_align";
    ot_expect_error(ra, NULL, 3, T(F32(1, 2, 3), F32(2, 4), I64(2)),
                    "needs an input [N, C, H, W], rois [R, 4] and batch indices [R], not 3-D, "
                    "2-D and 1-D");
    ot_expect_error(ra, NULL, 3, T(F32(1, 1, 2, 3), F32(2, 3), I64(2)),
                    "the rois are [2, 3] for 2 batch indices");
    ot_expect_error(ra, NULL, 3, T(F32(1, 1, 2, 3), F32(2, 4), I64(3)),
                    "the rois are [2, 4] for 3 batch indices");
    ot_expect_error(ra, NULL, 3, T(I32(1, 1, 2, 3), I32(2, 4), I64(2)),
                    "needs a float16, float32 or float64 input and rois of its dtype, not int32");
    ot_expect_error(ra, NULL, 3, T(F32(1, 1, 2, 3), F32(2, 4), F32(2)),
                    "the batch indices must be integers, not float32");
    ot_expect_error(ra, NULL, 3, T(F32(1, 1, 0, 3), F32(2, 4), I64(2)),
                    "the input's N, H and W must not be empty (1, 0 x 3)");
    ot_expect_error(ra, NULL, 3, T(F32(0, 1, 2, 3), F32(2, 4), I64(2)),
                    "the input's N, H and W must not be empty (0, 2 x 3)");
    ot_expect_error(ra, "mode=\"sum\"", 3, T(F32(1, 1, 2, 3), F32(2, 4), I64(2)),
                    "mode 'sum' is not one of avg, max");
    ot_expect_error(ra, "coordinate_transformation_mode=\"asymmetric\"", 3,
                    T(F32(1, 1, 2, 3), F32(2, 4), I64(2)),
                    "coordinate_transformation_mode 'asymmetric' is not one of half_pixel, "
                    "output_half_pixel");
    ot_expect_error(ra, "output_width=0", 3, T(F32(1, 1, 2, 3), F32(2, 4), I64(2)),
                    "output_height and output_width must be 1 to 2^48, not 1 and 0");
    ot_expect_error(ra, "sampling_ratio=100000", 3, T(F32(1, 1, 2, 3), F32(2, 4), I64(2)),
                    "sampling_ratio = 100000 must be 0 (adaptive) to 65536");
    ot_expect_error(ra, "spatial_scale=inff", 3, T(F32(1, 1, 2, 3), F32(2, 4), I64(2)),
                    "spatial_scale = inf must be finite");
}

/* ---- hostile grids ------------------------------------------------------------------ */

/* Grid values that are NaN, infinite or far outside the image: zeros padding
 * reads 0 where every tap is outside, border the edge pixels, and nothing
 * reads outside the input or overflows a conversion (the ASan build checks
 * the reads). */
static void test_hostile_grids(void) {
    const double x[6] = {1, 2, 3, 4, 5, 6}; /* 2 x 3 */
    const double big = 1e30;
    const double grid[12] = {-big, -big, big, big, INFINITY,  -INFINITY,
                             NAN,  0,    0,   NAN, -INFINITY, INFINITY};
    const ot_type t[2] = {F32(1, 1, 2, 3), F32(1, 1, 6, 2)};
    const double *v[2] = {x, grid};
    static const char *const methods[] = {"bilinear", "nearest", "bicubic"};
    for (int m = 0; m < 3; m++) {
        char attrs[96];
        snprintf(attrs, sizeof attrs, "method=\"%s\"", methods[m]);
        kiln_ndarray *r = run_f32("image.grid_sample", attrs, 2, t, v);
        CHECK(r != NULL);
        if (r) { /* the far corners: all taps outside */
            CHECK(tu_get(r, 0) == 0 && tu_get(r, 1) == 0);
            kiln_ndarray_free(r);
        }
        snprintf(attrs, sizeof attrs, "method=\"%s\", padding_mode=\"border\"", methods[m]);
        r = run_f32("image.grid_sample", attrs, 2, t, v);
        CHECK(r != NULL);
        if (r) { /* clamped to the corners: (x, y) = (-big, -big) and (big, big) */
            CHECK(tu_get(r, 0) == 1 && tu_get(r, 1) == 6);
            /* (inf, -inf): the top right corner (bicubic's weights are NaN there) */
            CHECK(m == 2 || tu_get(r, 2) == 3);
            kiln_ndarray_free(r);
        }
        for (int align = 0; align < 2; align++) {
            snprintf(attrs, sizeof attrs,
                     "method=\"%s\", padding_mode=\"reflection\", align_corners=%d", methods[m],
                     align);
            r = run_f32("image.grid_sample", attrs, 2, t, v);
            CHECK(r != NULL);
            kiln_ndarray_free(r);
        }
    }
}

/* ---- edge shapes ----------------------------------------------------------------------- */

static void test_edges(void) {
    const double x[6] = {1, 2, 3, 4, 5, 6};
    const double *v[1] = {x};
    /* an empty output */
    kiln_ndarray *r = run_f32("image.resize", "size=[2, 0], method=\"linear\"", 1, T(F32(2, 3)), v);
    CHECK(r != NULL && kiln_ndarray_numel(r) == 0);
    kiln_ndarray_free(r);
    /* one pixel read under every coordinate mode and method: that pixel */
    static const char *const modes[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const methods[] = {"nearest", "linear", "cubic"};
    const double seven[3] = {7, 7, 7};
    const double *sv[1] = {seven + 0};
    for (int m = 0; m < 6; m++)
        for (int k = 0; k < 3; k++) {
            char attrs[160];
            snprintf(attrs, sizeof attrs,
                     "size=[1, 3], method=\"%s\", coordinate_transformation_mode=\"%s\", "
                     "exclude_outside=%d",
                     methods[k], modes[m], k == 2);
            /* tf_crop_and_resize of one pixel: roi [0, 1] maps every output to 0 */
            expect_values(run_f32("image.resize", attrs, 1, T(F32(1, 1)), sv), 3, seven, attrs);
        }
    /* exclude_outside renormalizes the taps inside: upsampling [1, 2, 3] by 2
       with half_pixel, output 0 reads -0.25: taps -2 .. 1 at t = 0.75, of
       which 0 (distance 0.25) and 1 (1.25) are inside */
    r = run_f32("image.resize", "size=[1, 6], method=\"cubic\", exclude_outside=1", 1, T(F32(1, 3)),
                v);
    CHECK(r != NULL);
    if (r) {
        double a = -0.75, near = ((a + 2) * 0.25 - (a + 3)) * 0.25 * 0.25 + 1;
        double far = ((a * 1.25 - 5 * a) * 1.25 + 8 * a) * 1.25 - 4 * a;
        CHECK_NEAR(tu_get(r, 0), (1 * near + 2 * far) / (near + far), 1e-6);
        kiln_ndarray_free(r);
    }
    /* nearest on the leading axes of integers, and tf_crop_and_resize's
       extrapolation on an integer input */
    kiln_graph *g = kiln_graph_new();
    int c = ot_call_on_vars(g, "image.resize",
                            "size=[3, 2], coordinate_transformation_mode=\"tf_crop_and_resize\", "
                            "roi=[-0.5, 0, 1.5, 1], extrapolation_value=-9",
                            1, T(I32(2, 2)));
    CHECK(c >= 0 && kiln_graph_set_outputs(g, 1, &c, NULL) == KILN_OK);
    int64_t d2[2] = {2, 2};
    kiln_ndarray *xi = kiln_ndarray_empty(KILN_INT32, 2, d2);
    for (int i = 0; i < 4; i++)
        ((int32_t *)kiln_ndarray_data(xi))[i] = 10 * (i + 1);
    /* rows: -0.5 (outside), 0.5 -> 1 (prefer floor: 0), 1.5 (outside) */
    const double want[6] = {-9, -9, 10, 20, -9, -9};
    expect_values(gu_compile_run(g, NULL, 1, (const kiln_ndarray *const *)&xi, NULL, NULL, 0), 6,
                  want, "crop int32");
    kiln_ndarray_free(xi);
    kiln_graph_free(g);
}

/* ---- ONNX models ------------------------------------------------------------------------ */

static void test_onnx_errors(void) {
    static const struct {
        const char *file, *op, *msg;
    } cases[] = {
        {"bad_resize_roi_input", "Resize, opset 13",
         "the roi input must be a constant (computed at compile time)"},
        {"bad_resize_both", "Resize, opset 13",
         "exactly one of scales and sizes must be given (non-empty)"},
        {"bad_resize_neither", "Resize, opset 13", "exactly one of scales and sizes"},
        {"bad_resize_scales_count", "Resize, opset 13", "scales has 3 values for a 4-D input"},
        {"bad_resize_scales_zero", "Resize, opset 13", "scales[2] = 0 must be positive and finite"},
        {"bad_resize_sizes_negative", "Resize, opset 13",
         "output dim 2 = -2 must be a whole number from 0 to 2^48"},
        {"bad_resize_mode", "Resize, opset 13",
         "attribute 'mode' = 'bilinear' is not one of nearest, linear, cubic"},
        {"bad_resize_coordinate_mode", "Resize, opset 13",
         "attribute 'coordinate_transformation_mode' = 'half_pixel_symmetric' is not one of"},
        {"bad_resize_nearest_mode", "Resize, opset 13",
         "attribute 'nearest_mode' = 'simple' is not one of round_prefer_floor"},
        {"bad_resize_crop_no_roi", "Resize, opset 13",
         "tf_crop_and_resize needs a roi of 8 values (starts, then ends), not 0"},
        {"bad_resize_linear_int", "Resize, opset 13",
         "linear interpolation needs a float input, not int32"},
        {"bad_resize_empty_dim", "Resize, opset 13", "dim 2 is empty and cannot be resized to 4"},
        {"bad_resize10_cubic", "Resize, opset 10",
         "attribute 'mode' = 'cubic' is not one of nearest, linear"},
        {"bad_upsample_opset10", "Upsample, opset 10",
         "Upsample is deprecated from opset 10 on: use Resize"},
        {"bad_upsample_scale_below_1", "Upsample, opset 7",
         "scales[2] = 0.5: Upsample's scales must be at least 1"},
        {"bad_gridsample_mode", "GridSample, opset 16",
         "attribute 'mode' = 'linear' is not one of bilinear, nearest, bicubic"},
        {"bad_gridsample_padding", "GridSample, opset 16",
         "attribute 'padding_mode' = 'wrap' is not one of zeros, border, reflection"},
        {"bad_gridsample_grid_last_dim", "GridSample, opset 16", "the grid's last dim is 3"},
        {"bad_gridsample_5d", "GridSample, opset 16", "needs a 4-D input"},
        {"bad_gridsample_batch", "GridSample, opset 16", "the grid's batch is 2, the input's 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ou_expect_data_error("image_bad", cases[i].file, cases[i].op, cases[i].msg);
    static const char *const good[] = {"good_resize_sizes", "good_upsample7"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/image_bad/%s.onnx", getenv("KILN_TEST_DATA"), good[i]);
        kiln_graph *g = kiln_onnx_import(path, NULL);
        if (!g)
            fprintf(stderr, "%s: %s\n", good[i], kiln_last_error());
        CHECK(g != NULL);
        kiln_graph_free(g);
    }
}

/* ---- the run-time form ------------------------------------------------------------------ */

/* image.resize(x, dims, in2, in3) with x f32[1, 2, 3, 4], dims a binder of
 * resize_dims (the scales v), or v itself when var_dims; in2 v, in3 a roi
 * f32[8]. Checks it is refused with msg (NULL: accepted). */
static void expect_run_time(const char *attrs, int nin, int var_dims, const char *msg) {
    kiln_graph *g = kiln_graph_new();
    int64_t xd[4] = {1, 2, 3, 4}, vd[1] = {4}, rd[1] = {8};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    int v = kiln_graph_var(g, "v", KILN_FLOAT32, 1, vd, NULL);
    int r = kiln_graph_var(g, "roi", KILN_FLOAT32, 1, rd, NULL);
    int xv[4] = {x, v, v, r};
    int d = kiln_graph_call(g, "resize_dims", 2, xv, NULL, "dims");
    CHECK_EQ_INT(graph_infer_node(g, d), KILN_OK);
    if (!var_dims) {
        xv[1] = kiln_graph_call(g, "bind_dims", 1, &d, "prefix=\"s\"", "bind");
        CHECK_EQ_INT(graph_infer_node(g, xv[1]), KILN_OK);
    }
    int c = kiln_graph_call(g, "image.resize", nin, xv, attrs, "resize");
    kiln_status st = c < 0 ? KILN_ERR_INVALID : graph_infer_node(g, c);
    if (!msg) {
        CHECK_EQ_INT(st, KILN_OK);
        if (st)
            fprintf(stderr, "%s: %s\n", attrs, kiln_last_error());
    } else {
        CHECK_EQ_INT(st, KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), msg);
    }
    kiln_graph_free(g);
}

static void test_run_time_errors(void) {
    const char *crop = "coordinate_transformation_mode=\"tf_crop_and_resize\"";
    char attrs[200];
    expect_run_time("scales_input=1", 3, 0, NULL);
    expect_run_time("", 2, 0, NULL); /* the scale out / in */
    snprintf(attrs, sizeof attrs, "scales_input=1, roi_input=1, %s", crop);
    expect_run_time(attrs, 4, 0, NULL);
    expect_run_time("", 2, 1, "input 1 (the dims) must be a constant or a bind_dims vector of 4");
    expect_run_time("size=[1, 2, 3, 4]", 2, 0,
                    "give the output dims as size or as input 1, not both");
    expect_run_time("", 1, 0, "give the output dims as size or as input 1");
    expect_run_time("scales_input=1", 2, 0, "takes 3 inputs (x, the dims, the scales), not 2");
    expect_run_time("roi_input=1", 2, 0, "takes 3 inputs (x, the dims, the roi), not 2");
    expect_run_time("scales_input=2", 3, 0, "scales_input and roi_input must be 0 or 1");
    expect_run_time("scales_input=1, scales=[1, 1, 2, 2]", 3, 0,
                    "give the scales and the roi as attributes or as inputs, not both");
    expect_run_time("roi_input=1", 3, 0, "roi_input is read by tf_crop_and_resize only");
    snprintf(attrs, sizeof attrs, "roi_input=1, %s", crop); /* input 2 is v: 4 values */
    expect_run_time(attrs, 3, 0, "input 2 (the roi) must be a float vector of 8 values");
    /* resize_dims */
    const char *rd = "resize_dims";
    ot_expect_error(rd, NULL, 2, T(F32(1, 2, 3), F32(2)),
                    "the scales must be a vector of one value per dim of the 3-D input");
    ot_expect_error(rd, NULL, 2, T(F32(1, 2, 3), I64(3)),
                    "the scales must be a 1-D float tensor of a length known at compile time");
    ot_expect_error(rd, "sizes=1", 2, T(F32(1, 2, 3), F32(3)),
                    "the sizes must be int64, not float32");
    ot_expect_error(rd, "sizes=1, upsample=1", 2, T(F32(1, 2, 3), I64(3)),
                    "sizes and upsample must be 0 or 1, and not both 1");
    ot_expect_error(rd, "sizes=1", 2, T(SCALAR(KILN_FLOAT32), I64(1)),
                    "the sizes must be a vector of one value per dim of the 0-D input");
}

TEST_MAIN(TEST(test_relation_errors), TEST(test_hostile_grids), TEST(test_edges),
          TEST(test_onnx_errors), TEST(test_run_time_errors))
