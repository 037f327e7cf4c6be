/* onnx_convert_index.c: converters of the indexing and layout ops whose
 * kiln op (src/ops/index.c, transform.c) needs more than the node's inputs
 * as they are: the scatters with a reduction string, OneHot, CumSum, TopK,
 * EyeLike, Range, Tile, DepthToSpace and SpaceToDepth. The plain ones
 * (GatherElements, GatherND, Scatter, ScatterElements and ScatterND before
 * opset 16, Trilu, ReverseSequence) are rows of onnx_table.c alone.
 *
 * An input that decides the output's shape or the loop structure (TopK's
 * k, Tile's repeats, OneHot's depth, Range's start, limit and delta,
 * CumSum's axis) is a constant (computed at compile time, as the importer
 * folds shape sub-graphs) or a value read when the package runs, through
 * a shape function and a binder (docs/DYNAMIC_SHAPES.md, part 3; CumSum's
 * axis, which decides no shape, goes to cumsum as its input 1). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

/* Constant input i (`what` in errors) as at most MAXD int64 values into
 * v: the count, or -1 with an error if it is not a constant. */
static int const_ints(imp *I, const Onnx__NodeProto *n, int i, const char *what, int64_t *v) {
    int id = imp_input(I, n, i);
    const kiln_ndarray *c = id >= 0 ? imp_const(I, id) : NULL;
    if (!c)
        return imp_fail(I, n, "the %s input must be a constant (computed at compile time)", what);
    if (kiln_ndarray_numel(c) > MAXD)
        return imp_fail(I, n, "the %s input has %lld values, more than %d", what,
                        (long long)kiln_ndarray_numel(c), MAXD);
    return cvt_const_ints(I, n, i, v);
}

/* The one value of constant input i (a scalar or one element) as an
 * int64 into *v; -1 with an error naming it `what`. */
static int const_int(imp *I, const Onnx__NodeProto *n, int i, const char *what, int64_t *v) {
    int64_t vals[MAXD];
    int k = const_ints(I, n, i, what, vals);
    if (k < 0)
        return -1;
    if (k != 1)
        return imp_fail(I, n, "the %s input must have one value, has %d", what, k);
    *v = vals[0];
    return 0;
}

/* ScatterElements and ScatterND from opset 16: the reduction string (none,
 * add, mul; max and min come at opset 18). */
int cvt_scatter(imp *I, const Onnx__NodeProto *n, int *outs) {
    char buf[16];
    const char *red = imp_attr_str(I, n, "reduction", "none", buf, sizeof buf);
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul"))
        return imp_fail(I, n, "attribute 'reduction' = '%s' is not none, add or mul", red);
    int in[3] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2)};
    char attrs[64];
    int elements = !strcmp(n->op_type, "ScatterElements");
    if (elements)
        snprintf(attrs, sizeof attrs, "axis=%lld, reduction=\"%s\"",
                 (long long)imp_attr_int(I, n, "axis", 0), red);
    else
        snprintf(attrs, sizeof attrs, "reduction=\"%s\"", red);
    return outs[0] = imp_call(I, n, elements ? "scatter_elements" : "scatter_nd", 3, in, attrs);
}

/* OneHot: indices, depth (a constant), values [off, on]. */
/* 1 if input i of node n is there and is not a constant: a value known
 * when the package runs, read by a shape function (src/ops/shape.c). */
static int run_time_input(imp *I, const Onnx__NodeProto *n, int i) {
    int id = imp_input(I, n, i);
    return id >= 0 && !imp_const(I, id);
}

int cvt_one_hot(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[3] = {imp_input(I, n, 0), imp_input(I, n, 2), -1};
    char attrs[96];
    if (run_time_input(I, n, 1)) { /* the depth, known when the package runs */
        int d = imp_input(I, n, 1);
        in[2] = cvt_bind_dims(I, n, imp_call(I, n, "count_dims", 1, &d, "min=1"));
        snprintf(attrs, sizeof attrs, "axis=%lld", (long long)imp_attr_int(I, n, "axis", -1));
        return outs[0] = in[2] < 0 ? -1 : imp_call(I, n, "one_hot", 3, in, attrs);
    }
    int64_t depth = 0;
    if (const_int(I, n, 1, "depth", &depth) < 0)
        return -1;
    snprintf(attrs, sizeof attrs, "depth=%lld, axis=%lld", (long long)depth,
             (long long)imp_attr_int(I, n, "axis", -1));
    return outs[0] = imp_call(I, n, "one_hot", 2, in, attrs);
}

/* CumSum: x and the axis, a constant or a value read when the package
 * runs (cumsum's input 1: a cumsum along each axis, one picked). */
int cvt_cumsum(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t axis = 0;
    char attrs[96];
    int len =
        snprintf(attrs, sizeof attrs, "exclusive=%d, reverse=%d",
                 imp_attr_int(I, n, "exclusive", 0) != 0, imp_attr_int(I, n, "reverse", 0) != 0);
    if (run_time_input(I, n, 1)) {
        int in[2] = {x, imp_input(I, n, 1)};
        return outs[0] = imp_call(I, n, "cumsum", 2, in, attrs);
    }
    if (const_int(I, n, 1, "axis", &axis) < 0)
        return -1;
    snprintf(attrs + len, sizeof attrs - (size_t)len, ", axis=%lld", (long long)axis);
    return outs[0] = imp_call(I, n, "cumsum", 1, &x, attrs);
}

/* TopK: k as an attribute (opset 1) or a constant input (10); largest
 * from opset 11. The output is always sorted, which sorted = 0 allows. */
int cvt_topk(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t k = imp_attr_int(I, n, "k", -1), axis = imp_attr_int(I, n, "axis", -1);
    char attrs[128];
    if (I->opset >= 10 && run_time_input(I, n, 1)) { /* k, known when the package runs */
        int in[2] = {x, imp_input(I, n, 1)};
        snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
        in[1] = cvt_bind_dims(I, n, imp_call(I, n, "topk_dims", 2, in, attrs));
        snprintf(attrs, sizeof attrs, "axis=%lld, largest=%d", (long long)axis,
                 imp_attr_int(I, n, "largest", 1) != 0);
        return cvt_tuple_outputs(I, n, in[1] < 0 ? -1 : imp_call(I, n, "topk", 2, in, attrs), outs);
    }
    if (I->opset >= 10 && const_int(I, n, 1, "k", &k) < 0)
        return -1;
    snprintf(attrs, sizeof attrs, "k=%lld, axis=%lld, largest=%d", (long long)k,
             (long long)imp_attr_int(I, n, "axis", -1), imp_attr_int(I, n, "largest", 1) != 0);
    return cvt_tuple_outputs(I, n, imp_call(I, n, "topk", 1, &x, attrs), outs);
}

/* EyeLike: the input's shape, attribute dtype (default the input's) and k. */
int cvt_eye_like(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    char attrs[96];
    int len = snprintf(attrs, sizeof attrs, "k=%lld", (long long)imp_attr_int(I, n, "k", 0));
    int64_t to = imp_attr_int(I, n, "dtype", 0);
    if (to) {
        kiln_dtype dt;
        if (!onnx_dtype_to_kiln((int)to, &dt))
            return imp_fail(I, n, "attribute 'dtype' = %s is not supported",
                            onnx_dtype_name((int)to));
        snprintf(attrs + len, sizeof attrs - (size_t)len, ", dtype=\"%s\"", kiln_dtype_name(dt));
    }
    return outs[0] = imp_call(I, n, "eye_like", 1, &x, attrs);
}

/* NonZero: the count of nonzero elements, bound when the package runs,
 * then their coordinates. */
int cvt_nonzero(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (t && t->ndim == 0) /* a scalar: as a 1-D tensor of one, whose coordinates are [1, k] */
        return imp_fail(I, n, "the input must have at least 1 dim");
    int in[2] = {x, cvt_bind_dims(I, n, imp_call(I, n, "nonzero_dims", 1, &x, ""))};
    return outs[0] = in[1] < 0 ? -1 : imp_call(I, n, "nonzero", 2, in, "");
}

/* Compress: without an axis, of the flattened input; the count of true
 * conditions (within the axis) bound when the package runs. */
int cvt_compress(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), c = imp_input(I, n, 1);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axis = 0;
    if (imp_attr(I, n, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        if (cvt_axis_attr(I, n, 0, t->ndim, &axis) < 0)
            return -1;
    } else if (t->ndim != 1) {
        int64_t numel;
        int64_t dims[MAXD];
        for (int d = 0; d < t->ndim; d++)
            dims[d] = t->dims[d].sym ? -1 : t->dims[d].v;
        if (!cvt_concrete(t) || !cvt_numel(I, n, t->ndim, dims, &numel))
            return imp_fail(I, n, "the input's dims must be known at compile time");
        x = cvt_reshape_to(I, n, x, 1, &numel);
    }
    char attrs[32];
    snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
    int in[3] = {x, c, -1};
    in[2] = cvt_bind_dims(I, n, imp_call(I, n, "compress_dims", 2, in, attrs));
    return outs[0] = in[2] < 0 ? -1 : imp_call(I, n, "compress", 3, in, attrs);
}

/* Unique: without an axis, of the flattened input; the count of distinct
 * slices bound when the package runs, then the four outputs. */
int cvt_unique(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t || !cvt_concrete(t))
        return imp_fail(I, n, "the input's dims must be known at compile time");
    int64_t axis = 0;
    if (imp_attr(I, n, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) {
        if (cvt_axis_attr(I, n, 0, t->ndim, &axis) < 0)
            return -1;
    } else if (t->ndim != 1) {
        int64_t dims[MAXD], numel;
        for (int d = 0; d < t->ndim; d++)
            dims[d] = t->dims[d].v;
        if (!cvt_numel(I, n, t->ndim, dims, &numel))
            return -1;
        x = cvt_reshape_to(I, n, x, 1, &numel);
    }
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=%lld, sorted=%d", (long long)axis,
             imp_attr_int(I, n, "sorted", 1) != 0);
    int in[2] = {x, cvt_bind_dims(I, n, imp_call(I, n, "unique_dims", 1, &x, attrs))};
    return cvt_tuple_outputs(I, n, in[1] < 0 ? -1 : imp_call(I, n, "unique", 2, in, attrs), outs);
}

/* HannWindow, HammingWindow and BlackmanWindow: the window op over the
 * size's value as a count (a constant folds at import; data is bound when
 * the package runs). */
int cvt_window(imp *I, const Onnx__NodeProto *n, int *outs) {
    int size = imp_input(I, n, 0);
    int64_t to = imp_attr_int(I, n, "output_datatype", 1);
    kiln_dtype dt;
    if (!onnx_dtype_to_kiln((int)to, &dt) || dt == KILN_BOOL)
        return imp_fail(I, n, "attribute 'output_datatype' = %s is not a number type",
                        onnx_dtype_name((int)to));
    const char *kind =
        n->op_type[1] == 'a' ? (n->op_type[2] == 'n' ? "hann" : "hamming") : "blackman";
    char attrs[96];
    snprintf(attrs, sizeof attrs, "kind=\"%s\", periodic=%d, dtype=\"%s\"", kind,
             imp_attr_int(I, n, "periodic", 1) != 0, kiln_dtype_name(dt));
    int len = cvt_bind_dims(I, n, imp_call(I, n, "count_dims", 1, &size, ""));
    return outs[0] = len < 0 ? -1 : imp_call(I, n, "window", 1, &len, attrs);
}

/* The element count of Range(start, limit, delta) of integers,
 * max(ceil((limit - start) / delta), 0), without overflowing int64. */
static uint64_t range_count_int(int64_t s, int64_t l, int64_t d) {
    if (d > 0)
        return l > s ? ((uint64_t)l - (uint64_t)s - 1) / (uint64_t)d + 1 : 0;
    return l < s ? ((uint64_t)s - (uint64_t)l - 1) / ((uint64_t)0 - (uint64_t)d) + 1 : 0;
}

/* Range: start, limit and delta (constants of one dtype) -> arange of
 * max(ceil((limit - start) / delta), 0) elements, the count computed as
 * numpy's arange, in double for floats. */
int cvt_range(imp *I, const Onnx__NodeProto *n, int *outs) {
    if (run_time_input(I, n, 0) || run_time_input(I, n, 1) || run_time_input(I, n, 2)) {
        /* the length, known when the package runs */
        int in[3] = {imp_input(I, n, 0), imp_input(I, n, 1), imp_input(I, n, 2)};
        int count = cvt_bind_dims(I, n, imp_call(I, n, "range_dims", 3, in, ""));
        int args[3] = {in[0], in[2], count};
        return outs[0] = count < 0 ? -1 : imp_call(I, n, "arange", 3, args, "");
    }
    const kiln_ndarray *c[3];
    for (int i = 0; i < 3; i++) {
        int id = imp_input(I, n, i);
        if (!(c[i] = id >= 0 ? imp_const(I, id) : NULL))
            return imp_fail(I, n,
                            "the start, limit and delta inputs must be constants "
                            "(computed at compile time)");
        if (kiln_ndarray_numel(c[i]) != 1 || kiln_ndarray_dtype(c[i]) != kiln_ndarray_dtype(c[0]))
            return imp_fail(I, n, "start, limit and delta must be scalars of one dtype");
    }
    kiln_dtype dt = kiln_ndarray_dtype(c[0]);
    uint64_t count;
    if (dt != KILN_FLOAT32 && dt != KILN_FLOAT64 && dt != KILN_INT32 && dt != KILN_INT64)
        return imp_fail(I, n, "a Range of %s is not supported", kiln_dtype_name(dt));
    if (dt == KILN_FLOAT32 || dt == KILN_FLOAT64) {
        double s = cvt_get_d(c[0], 0), l = cvt_get_d(c[1], 0), d = cvt_get_d(c[2], 0);
        double q = ceil((l - s) / d);
        if (d == 0 || !isfinite(q))
            return imp_fail(I, n, "Range(%g, %g, %g) has no finite length", s, l, d);
        count = q > 0 ? (q < 1e18 ? (uint64_t)q : UINT64_MAX) : 0;
    } else {
        int64_t d = cvt_get_i(c[2], 0);
        if (d == 0)
            return imp_fail(I, n, "delta must not be 0");
        count = range_count_int(cvt_get_i(c[0], 0), cvt_get_i(c[1], 0), d);
    }
    if (count > (uint64_t)GRAPH_MAX_ELEMENTS)
        return imp_fail(I, n, "the range has %llu elements, more than 2^48",
                        (unsigned long long)count);
    int in[2] = {imp_input(I, n, 0), imp_input(I, n, 2)};
    char attrs[48];
    snprintf(attrs, sizeof attrs, "n=%llu", (unsigned long long)count);
    return outs[0] = imp_call(I, n, "arange", 2, in, attrs);
}

/* Tile: the repeats input (a constant, one per dim). */
int cvt_tile(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    if (run_time_input(I, n, 1)) { /* the repeats, known when the package runs */
        int in[2] = {x, imp_input(I, n, 1)};
        in[1] = cvt_bind_dims(I, n, imp_call(I, n, "tile_dims", 2, in, ""));
        return outs[0] = in[1] < 0 ? -1 : imp_call(I, n, "tile", 2, in, "");
    }
    int64_t reps[MAXD];
    int nr = const_ints(I, n, 1, "repeats", reps);
    if (nr < 0)
        return -1;
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "reps", nr, reps);
    outs[0] = imp_call(I, n, "tile", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* DepthToSpace (mode DCR or CRD from opset 11) and SpaceToDepth. */
int cvt_depth_space(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), to_space = !strcmp(n->op_type, "DepthToSpace");
    char buf[16], attrs[96];
    const char *mode = imp_attr_str(I, n, "mode", "DCR", buf, sizeof buf);
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return imp_fail(I, n, "attribute 'mode' = '%s' is not DCR or CRD", mode);
    int len = snprintf(attrs, sizeof attrs, "block_size=%lld",
                       (long long)imp_attr_int(I, n, "blocksize", 0));
    if (to_space)
        snprintf(attrs + len, sizeof attrs - (size_t)len, ", mode=\"%s\"", mode);
    return outs[0] = imp_call(I, n, to_space ? "depth_to_space" : "space_to_depth", 1, &x, attrs);
}
