/* onnx_convert_image.c: converters of the image ops (src/ops/image.c):
 * Resize (opsets 10, 11 and 13) and Upsample (7 and 9) to image.resize,
 * GridSample (16) to image.grid_sample, RoiAlign (10 and 16) to
 * image.roi_align, and NonMaxSuppression (10) to nms_dims, bind_dims and
 * vision.non_max_suppression (src/ops/vision.c).
 *
 * Resize's scales, sizes and roi decide the output's shape and the
 * sampling. Constants (computed at compile time) become image.resize's
 * attributes. Scales or sizes known only when the package runs (and a
 * tf_crop_and_resize roi) are inputs instead, as Reshape's shape
 * (docs/DYNAMIC_SHAPES.md, part 3): resize_dims computes the output dims,
 * bind_dims names them, and image.resize takes them as input 1, the scales
 * and the roi after it (cvt_resize_run_time). With scales, the output is
 * floor(input * scale) per axis, computed in float64 from the float32
 * scales as ONNX's reference computes it (like ONNX Runtime, it does not
 * multiply by tf_crop_and_resize's roi extent).
 *
 * Upsample and Resize-10 have no coordinate attributes: they sample as
 * ONNX Runtime does, asymmetric coordinates and nearest rounding down, up
 * on an axis scaled down (image.resize's rounding "simple"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

/* The string attribute `name` (default def) into buf if it is one of
 * `allowed` (NULL-ended): 0, or -1 with an error listing them. */
static int attr_one_of(imp *I, const Onnx__NodeProto *n, const char *name, const char *def,
                       const char *const *allowed, char *buf, size_t cap) {
    const char *v = imp_attr_str(I, n, name, def, buf, cap);
    if (v != buf)
        snprintf(buf, cap, "%s", v);
    kstr list;
    kstr_init(&list);
    for (int i = 0; allowed[i]; i++) {
        if (!strcmp(buf, allowed[i])) {
            kstr_free(&list);
            return 0;
        }
        kstr_printf(&list, "%s%s", i ? ", " : "", allowed[i]);
    }
    imp_fail(I, n, "attribute '%s' = '%s' is not one of %s", name, buf, list.buf);
    kstr_free(&list);
    return -1;
}

/* Input i as at most cap values into v: the count, 0 when the input is
 * absent or an empty tensor (Resize-11's way to leave scales out); -1 with
 * an error naming it `what` unless it is a constant. */
static int const_values(imp *I, const Onnx__NodeProto *n, int i, const char *what, int cap,
                        double *v) {
    int id = imp_input(I, n, i);
    if (id < 0)
        return 0;
    const kiln_ndarray *c = imp_const(I, id);
    if (!c)
        return imp_fail(I, n, "the %s input must be a constant (computed at compile time)", what);
    int64_t k = kiln_ndarray_numel(c);
    if (k > cap)
        return imp_fail(I, n, "the %s input has %lld values, more than %d", what, (long long)k,
                        cap);
    for (int64_t j = 0; j < k; j++)
        v[j] = cvt_get_d(c, j);
    return (int)k;
}

/* 1 if input i is given, not empty, and known only when the package runs. */
static int run_time_input(imp *I, const Onnx__NodeProto *n, int i) {
    int id = imp_input(I, n, i);
    const gtensor_type *t = id < 0 ? NULL : imp_type(I, id);
    int empty = t && t->ndim == 1 && !t->dims[0].sym && t->dims[0].v == 0;
    return id >= 0 && !imp_const(I, id) && !empty;
}

/* Append ", name=[v0, v1, ...]" with every double exact. */
static void floats_attr(kstr *a, const char *name, int k, const double *v) {
    kstr_printf(a, ", %s=[", name);
    for (int i = 0; i < k; i++)
        kstr_printf(a, "%s%.17g", i ? ", " : "", v[i]);
    kstr_puts(a, "]");
}

static const char *const g_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const g_legacy_modes[] = {"nearest", "linear", NULL};
static const char *const g_coord_modes[] = {
    "half_pixel", "pytorch_half_pixel",   "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize",
    NULL};
static const char *const g_nearest_modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                              "ceil", NULL};

/* The sampling attributes of image.resize from the node's: Resize from
 * opset 11 has them, Upsample and Resize-10 sample as ONNX Runtime does.
 * Sets *crop for tf_crop_and_resize; 0, or -1 with an error. */
static int resize_sampling(imp *I, const Onnx__NodeProto *n, int legacy, kstr *a, int *crop) {
    char mode[32], coord[32], nearest[32];
    if (attr_one_of(I, n, "mode", "nearest", legacy ? g_legacy_modes : g_modes, mode, sizeof mode) <
        0)
        return -1;
    if (legacy) {
        kstr_printf(a,
                    ", method=\"%s\", coordinate_transformation_mode=\"asymmetric\", "
                    "rounding_method=\"simple\"",
                    mode);
        *crop = 0;
        return 0;
    }
    if (attr_one_of(I, n, "coordinate_transformation_mode", "half_pixel", g_coord_modes, coord,
                    sizeof coord) < 0 ||
        attr_one_of(I, n, "nearest_mode", "round_prefer_floor", g_nearest_modes, nearest,
                    sizeof nearest) < 0)
        return -1;
    double alpha = imp_attr_float(I, n, "cubic_coeff_a", -0.75f);
    double extrapolation = imp_attr_float(I, n, "extrapolation_value", 0);
    if (!isfinite(alpha) || !isfinite(extrapolation))
        return imp_fail(I, n,
                        "attributes 'cubic_coeff_a' and 'extrapolation_value' must be "
                        "finite");
    kstr_printf(a,
                ", method=\"%s\", coordinate_transformation_mode=\"%s\", rounding_method=\"%s\", "
                "cubic_alpha=%.17g, exclude_outside=%d, extrapolation_value=%.17g",
                mode, coord, nearest, alpha, imp_attr_int(I, n, "exclude_outside", 0) != 0,
                extrapolation);
    *crop = !strcmp(coord, "tf_crop_and_resize");
    return 0;
}

/* Resize with its scales or sizes (input vi), or its roi, known only when
 * the package runs: image.resize(x, bind_dims(resize_dims(x, values)),
 * [scales], [roi]). */
static int cvt_resize_run_time(imp *I, const Onnx__NodeProto *n, int x, const gtensor_type *t,
                               int legacy, int upsample, int vi) {
    int sizes = vi == 3, other = sizes ? 2 : legacy ? -1 : 3;
    int v = imp_input(I, n, vi), o = other < 0 ? -1 : imp_input(I, n, other);
    const kiln_ndarray *oc = o < 0 ? NULL : imp_const(I, o);
    if (run_time_input(I, n, other) || (oc && kiln_ndarray_numel(oc) > 0))
        return imp_fail(I, n, "exactly one of scales and sizes must be given (non-empty)");
    const gtensor_type *vt = imp_type(I, v);
    if (!vt || vt->ndim != 1 || vt->dims[0].sym || vt->dims[0].v != t->ndim)
        return imp_fail(I, n, "the %s input must be a vector of %d values, one per dim",
                        sizes ? "sizes" : "scales", t->ndim);
    int in[4] = {x, v, v, -1}, nin = 2 + !sizes, crop = 0, nr;
    char buf[64];
    snprintf(buf, sizeof buf, "sizes=%d, upsample=%d", sizes, upsample);
    in[1] = cvt_bind_dims(I, n, imp_call(I, n, "resize_dims", 2, in, buf));
    if (in[1] < 0)
        return -1;
    kstr a;
    kstr_init(&a);
    kstr_printf(&a, "scales_input=%d", !sizes);
    if (resize_sampling(I, n, legacy, &a, &crop) < 0) {
        kstr_free(&a);
        return -1;
    }
    if (crop && run_time_input(I, n, 1)) {
        kstr_puts(&a, ", roi_input=1");
        in[nin++] = imp_input(I, n, 1);
    } else if (crop) {
        double roi[2 * MAXD];
        if ((nr = const_values(I, n, 1, "roi", 2 * MAXD, roi)) != 2 * t->ndim) {
            kstr_free(&a);
            return nr < 0 ? -1
                          : imp_fail(I, n,
                                     "tf_crop_and_resize needs a roi of %d values (starts, then "
                                     "ends), not %d",
                                     2 * t->ndim, nr);
        }
        floats_attr(&a, "roi", nr, roi);
    }
    int id =
        a.oom ? imp_fail(I, n, "out of memory") : imp_call(I, n, "image.resize", nin, in, a.buf);
    kstr_free(&a);
    return id;
}

/* Resize (X, scales at opset 10; X, roi, scales, sizes from 11) and
 * Upsample (X with attribute scales at opset 7; X, scales at 9). */
int cvt_resize(imp *I, const Onnx__NodeProto *n, int *outs) {
    int upsample = !strcmp(n->op_type, "Upsample"), legacy = upsample || I->opset < 11;
    if (upsample && I->opset >= 10)
        return imp_fail(I, n, "Upsample is deprecated from opset 10 on: use Resize");
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t || !cvt_concrete(t))
        return imp_fail(I, n, "the input needs a concrete shape");
    if (!(upsample && I->opset < 9)) {
        int si = legacy ? 1 : 2;
        if (run_time_input(I, n, si))
            return outs[0] = cvt_resize_run_time(I, n, x, t, legacy, upsample, si);
        if (!legacy && run_time_input(I, n, 3))
            return outs[0] = cvt_resize_run_time(I, n, x, t, legacy, upsample, 3);
    }
    double scales[MAXD], sizes[MAXD], roi[2 * MAXD];
    int ns = 0, nz = 0, nr = 0;
    if (upsample && I->opset < 9) {
        const Onnx__AttributeProto *s =
            imp_attr(I, n, "scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
        if (s->n_floats > MAXD)
            return imp_fail(I, n, "attribute 'scales' has %zu values, more than %d", s->n_floats,
                            MAXD);
        ns = (int)s->n_floats;
        for (int d = 0; d < ns; d++)
            scales[d] = s->floats[d];
    } else if ((ns = const_values(I, n, legacy ? 1 : 2, "scales", MAXD, scales)) < 0 ||
               (!legacy && (nz = const_values(I, n, 3, "sizes", MAXD, sizes)) < 0)) {
        return -1;
    }
    if ((ns > 0) == (nz > 0))
        return imp_fail(I, n, "exactly one of scales and sizes must be given (non-empty)");
    if ((ns ? ns : nz) != t->ndim)
        return imp_fail(I, n, "%s has %d values for a %d-D input", ns ? "scales" : "sizes",
                        ns ? ns : nz, t->ndim);
    int64_t size[MAXD];
    for (int d = 0; d < t->ndim; d++) {
        if (ns && (!(scales[d] > 0) || !isfinite(scales[d])))
            return imp_fail(I, n, "scales[%d] = %g must be positive and finite", d, scales[d]);
        if (upsample && scales[d] < 1)
            return imp_fail(I, n, "scales[%d] = %g: Upsample's scales must be at least 1", d,
                            scales[d]);
        double v = ns ? floor(scales[d] * (double)t->dims[d].v) : sizes[d];
        if (!(v >= 0 && v <= (double)GRAPH_MAX_ELEMENTS) || v != floor(v))
            return imp_fail(I, n, "output dim %d = %g must be a whole number from 0 to 2^48", d, v);
        size[d] = (int64_t)v;
    }
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "size", t->ndim, size);
    if (ns)
        floats_attr(&a, "scales", ns, scales);
    int crop = 0;
    if (resize_sampling(I, n, legacy, &a, &crop) < 0 ||
        (crop && (nr = const_values(I, n, 1, "roi", 2 * MAXD, roi)) < 0)) {
        kstr_free(&a);
        return -1;
    }
    if (crop && nr != 2 * t->ndim) {
        kstr_free(&a);
        return imp_fail(I, n,
                        "tf_crop_and_resize needs a roi of %d values (starts, then ends), "
                        "not %d",
                        2 * t->ndim, nr);
    }
    if (crop)
        floats_attr(&a, "roi", nr, roi);
    outs[0] = imp_call(I, n, "image.resize", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* GridSample: X [N, C, H, W] and the grid [N, H_out, W_out, 2]. */
int cvt_grid_sample(imp *I, const Onnx__NodeProto *n, int *outs) {
    static const char *const modes[] = {"bilinear", "nearest", "bicubic", NULL};
    static const char *const paddings[] = {"zeros", "border", "reflection", NULL};
    char mode[32], padding[32], attrs[128];
    if (attr_one_of(I, n, "mode", "bilinear", modes, mode, sizeof mode) < 0 ||
        attr_one_of(I, n, "padding_mode", "zeros", paddings, padding, sizeof padding) < 0)
        return -1;
    snprintf(attrs, sizeof attrs, "method=\"%s\", padding_mode=\"%s\", align_corners=%d", mode,
             padding, imp_attr_int(I, n, "align_corners", 0) != 0);
    int in[2] = {imp_input(I, n, 0), imp_input(I, n, 1)};
    return outs[0] = imp_call(I, n, "image.grid_sample", 2, in, attrs);
}

/* RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R]. Opset 10
 * places pixels without the half-pixel shift (output_half_pixel, opset
 * 16's name for it); opset 16 chooses, half_pixel by default. */
int cvt_roi_align(imp *I, const Onnx__NodeProto *n, int *outs) {
    static const char *const modes[] = {"avg", "max", NULL};
    static const char *const coords[] = {"half_pixel", "output_half_pixel", NULL};
    char mode[32], coord[32], attrs[320];
    if (attr_one_of(I, n, "mode", "avg", modes, mode, sizeof mode) < 0 ||
        attr_one_of(I, n, "coordinate_transformation_mode",
                    I->opset >= 16 ? "half_pixel" : "output_half_pixel", coords, coord,
                    sizeof coord) < 0)
        return -1;
    snprintf(attrs, sizeof attrs,
             "mode=\"%s\", coordinate_transformation_mode=\"%s\", output_height=%lld, "
             "output_width=%lld, sampling_ratio=%lld, spatial_scale=%.9gf",
             mode, coord, (long long)imp_attr_int(I, n, "output_height", 1),
             (long long)imp_attr_int(I, n, "output_width", 1),
             (long long)imp_attr_int(I, n, "sampling_ratio", 0),
             (double)imp_attr_float(I, n, "spatial_scale", 1.0f));
    int in[3] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2)};
    return outs[0] = imp_call(I, n, "image.roi_align", 3, in, attrs);
}

/* NonMaxSuppression (10, 11): an absent optional input takes its default
 * (max_output_boxes_per_class 0: no box is kept; iou_threshold 0; no
 * score threshold); the count of boxes kept is bound when the package
 * runs, then vision.non_max_suppression lists them. An iou_threshold
 * outside [0, 1] is an error when it is a constant (ONNX Runtime's check);
 * one read when the package runs is used as it is. */
int cvt_nms(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[6] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2),
                 imp_input(I, n, 3), imp_input(I, n, 4), -1};
    int has_thr = in[4] >= 0;
    if (in[2] < 0)
        in[2] = imp_scalar_const(I, n, KILN_INT64, 0);
    for (int i = 3; i < 5; i++)
        if (in[i] < 0)
            in[i] = cvt_float_const_like(I, n, in[0], 0);
    if (in[2] < 0 || in[3] < 0 || in[4] < 0)
        return -1;
    const kiln_ndarray *iou = imp_const(I, in[3]);
    if (iou && kiln_ndarray_numel(iou) == 1 && !(cvt_get_d(iou, 0) >= 0 && cvt_get_d(iou, 0) <= 1))
        return imp_fail(I, n, "iou_threshold %g is not in [0, 1]", cvt_get_d(iou, 0));
    char attrs[64];
    snprintf(attrs, sizeof attrs, "center_point_box=%lld, has_score_threshold=%d",
             (long long)imp_attr_int(I, n, "center_point_box", 0), has_thr);
    in[5] = cvt_bind_dims(I, n, imp_call(I, n, "nms_dims", 5, in, attrs));
    return outs[0] = in[5] < 0 ? -1 : imp_call(I, n, "vision.non_max_suppression", 6, in, attrs);
}
