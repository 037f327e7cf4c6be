"""Writes tests/data/image_nodes: node tests in the ONNX backend layout
(test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb) for kiln's
image ops (src/ops/image.c: Resize, Upsample, GridSample), run by
kiln_conformance --data (the image_node_tests test in tests/CMakeLists.txt).

The Debian node tests of Resize and Upsample feed scales, sizes and roi as
graph inputs, which kiln needs as constants (they decide the output's
shape): each is written here again with those inputs as Constant nodes,
with Debian's data and expected output unchanged (test_*_const). Then cases
the node tests miss: other ranks and axes, float64, float16 and integer
data, ties of every nearest mode, tf_crop_and_resize with nearest and
cubic and with scales, resized lengths of 1, Resize-10 and Upsample-7,
and GridSample in every mode, padding and align_corners on several
channels and batches, with grid values far outside the image. Their
expected outputs come from ONNX's own reference (interpolate_nd in
onnx.backend.test.case.node.resize) where it covers the mode, else from
the plain loops below, which are first checked against the Debian tests
they share a mode with (GridSample's against all eight).

It also writes tests/data/image_bad: models the importer must refuse with
an error naming the node and what is wrong (a shape-deciding input that is
not a constant, scales and sizes both or neither given, counts that do not
match the rank, values and strings ONNX does not define, Upsample past
opset 9, a linear resize of integers, GridSample's shapes), and good_*
ones that must import (tests/unit/test_ops_image.c).

Run with /usr/bin/python3 (Debian's python3-onnx, with libonnx-testdata
installed); it rewrites both folders."""
import math
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.test.case.node.resize import (cubic_coeffs, interpolate_nd, linear_coeffs,
                                                nearest_coeffs)
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE

from node_test_writer import Writer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "image_nodes")
BAD = os.path.join(HERE, "image_bad")
DEBIAN = "/usr/share/libonnx-testdata/data/node"
RNG = np.random.default_rng(16)
write = None  # the Writer, made in main (it empties OUT)


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def debian_case(test):
    """The model, inputs {name: array} and outputs [array] of a Debian test."""
    d = os.path.join(DEBIAN, test)
    model = onnx.load(os.path.join(d, "model.onnx"))
    ins = {}
    for i, vi in enumerate(model.graph.input):
        ins[vi.name] = read_pb(os.path.join(d, "test_data_set_0", "input_%d.pb" % i))
    outs = [read_pb(os.path.join(d, "test_data_set_0", "output_%d.pb" % i))
            for i in range(len(model.graph.output))]
    return model, ins, outs


def mirror(test):
    """Debian's test with every graph input but the first as a Constant."""
    model, ins, outs = debian_case(test)
    g = model.graph
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0]
    first = g.input[0].name
    consts = [(n, a) for n, a in ins.items() if n != first]
    write(test[len("test_"):] + "_const", list(g.node), [(first, ins[first])],
          [(vi.name, a) for vi, a in zip(g.output, outs)], opset, consts)


# ---- references: loops, as the ONNX operator docs and PyTorch define the ops --------------


def nearest_rounded(c, mode, down):
    """ONNX's nearest modes on a source coordinate, and "simple" (ONNX
    Runtime's, for Upsample and Resize-10): ceil on an axis scaled down."""
    fl = math.floor(c)
    frac = c - fl
    if mode == "simple":
        return math.ceil(c) if down else fl
    if frac == 0:
        return fl
    up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5,
          "floor": False, "ceil": True}[mode]
    return fl + 1 if up else fl


def nearest_nd(x, out_shape, coord, mode, downs):
    """x resized by nearest: coord(d, o) the source coordinate of output
    index o of axis d; indices clamped to the input (edge padding)."""
    idx = [[min(max(nearest_rounded(coord(d, o), mode, downs[d]), 0), x.shape[d] - 1)
            for o in range(out_shape[d])] for d in range(x.ndim)]
    return x[np.ix_(*idx)]


def legacy_nearest(x, scales):
    """Upsample and Resize-10: asymmetric coordinates, "simple" rounding."""
    s = [float(np.float32(v)) for v in scales]
    out = [int(math.floor(v * n)) for v, n in zip(s, x.shape)]
    return nearest_nd(x, out, lambda d, o: o / s[d], "simple", [v < 1 for v in s])


def half_pixel_for_nn(x, sizes, mode):
    s = [o / n for o, n in zip(sizes, x.shape)]
    return nearest_nd(x, sizes, lambda d, o: (o + 0.5) / s[d], mode, [False] * x.ndim)


def onnx_resize(x, mode, sizes=None, scales=None, roi=None, nearest="round_prefer_floor",
                alpha=-0.75, **kw):
    """ONNX's reference for Resize (opset 13 semantics)."""
    coeffs = {"nearest": lambda r: nearest_coeffs(r, mode=nearest), "linear": linear_coeffs,
              "cubic": lambda r: cubic_coeffs(r, A=alpha)}[mode]
    return interpolate_nd(x, coeffs, output_size=sizes, scale_factors=scales, roi=roi,
                          **kw).astype(x.dtype)


def grid_sample(x, grid, mode, padding, align):
    """GridSample as PyTorch computes it (ONNX's GridSample tests hold its
    results), in float32 unless the input or grid is float64: grid x
    indexes W, grid y H; -1 and 1 are the edge pixels' centers with
    align_corners, else the image's outer edges."""
    n_, c_, h, w = x.shape
    out = np.zeros((n_, c_) + grid.shape[1:3], x.dtype)
    ft = np.float64 if np.float64 in (x.dtype, grid.dtype) else np.float32
    one, two = ft(1), ft(2)

    def unnorm(g, size):
        return (g + one) / two * ft(size - 1) if align else ((g + one) * ft(size) - one) / two

    def reflect(c, twice_low, twice_high):
        if twice_low == twice_high:
            return ft(0)
        lo, span = ft(twice_low / 2), ft((twice_high - twice_low) / 2)
        c = abs(c - lo)
        extra, flips = np.fmod(c, span), np.floor(c / span)
        return extra + lo if np.fmod(flips, two) == 0 else span - extra + lo

    def pad(c, size):
        if padding == "zeros":
            return c
        if padding == "reflection":
            c = reflect(c, 0, 2 * (size - 1)) if align else reflect(c, -1, 2 * size - 1)
        return min(ft(size - 1), max(c, ft(0)))

    def at(b, ch, y, xx):
        y, xx = int(y), int(xx)
        return ft(x[b, ch, y, xx]) if 0 <= y < h and 0 <= xx < w else ft(0)

    def cubic(t):
        a = ft(-0.75)
        near = lambda d: ((a + two) * d - (a + ft(3))) * d * d + one
        far = lambda d: ((a * d - ft(5) * a) * d + ft(8) * a) * d - ft(4) * a
        return [far(t + one), near(t), near(one - t), far(two - t)]

    for b, i, j in np.ndindex(grid.shape[:3]):
        gx, gy = ft(grid[b, i, j, 0]), ft(grid[b, i, j, 1])
        for ch in range(c_):
            if mode == "bicubic":
                ix, iy = unnorm(gx, w), unnorm(gy, h)
                x0, y0 = np.floor(ix), np.floor(iy)
                wx, wy = cubic(ix - x0), cubic(iy - y0)
                v = sum(wy[r] * sum(wx[k] * at(b, ch, pad(y0 + ft(r - 1), h),
                                               pad(x0 + ft(k - 1), w)) for k in range(4))
                        for r in range(4))
            else:
                ix, iy = pad(unnorm(gx, w), w), pad(unnorm(gy, h), h)
                if mode == "nearest":
                    v = at(b, ch, np.rint(iy), np.rint(ix))  # half to even, as nearbyint
                else:
                    x0, y0 = np.floor(ix), np.floor(iy)
                    v = sum(at(b, ch, y0 + dy, x0 + dx) * (one - abs(ix - x0 - ft(dx))) *
                            (one - abs(iy - y0 - ft(dy))) for dy in (0, 1) for dx in (0, 1))
            out[b, ch, i, j] = v
    return out


def check_references():
    """The loops above against the Debian tests of the modes they cover."""
    for test in ("test_gridsample", "test_gridsample_aligncorners_true", "test_gridsample_bicubic",
                 "test_gridsample_bilinear", "test_gridsample_border_padding",
                 "test_gridsample_nearest", "test_gridsample_reflection_padding",
                 "test_gridsample_zeros_padding"):
        model, ins, outs = debian_case(test)
        attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
        dec = lambda v: v.decode() if isinstance(v, bytes) else v
        got = grid_sample(ins["X"], ins["Grid"], dec(attrs.get("mode", "bilinear")),
                          dec(attrs.get("padding_mode", "zeros")), attrs.get("align_corners", 0))
        assert np.allclose(got, outs[0], rtol=1e-3, atol=1e-5), test  # outputs rounded to 4 places
    _, ins, outs = debian_case("test_upsample_nearest")
    assert np.array_equal(legacy_nearest(ins["X"], ins["scales"]), outs[0])
    _, ins, outs = debian_case("test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn")
    assert np.array_equal(half_pixel_for_nn(ins["X"], list(ins["sizes"]), "round_prefer_floor"),
                          outs[0])


# ---- the tests ----------------------------------------------------------------------------


def resize_node(mode, ins=("x", "", "", "sizes"), **attrs):
    return helper.make_node("Resize", list(ins), ["y"], mode=mode, **attrs)


def resize_sizes(name, x, sizes, mode, opset=13, **attrs):
    """Resize to constant sizes, expected from ONNX's reference."""
    kw = {k: v for k, v in attrs.items() if k in ("exclude_outside", "extrapolation_value")}
    ref = onnx_resize(x, mode, sizes=np.array(sizes), nearest=attrs.get("nearest_mode",
                                                                       "round_prefer_floor"),
                      alpha=attrs.get("cubic_coeff_a", -0.75),
                      coordinate_transformation_mode=attrs.get("coordinate_transformation_mode",
                                                               "half_pixel"), **kw)
    write(name, [resize_node(mode, **attrs)], [("x", x)], [("y", ref)], opset,
          [("sizes", np.array(sizes, np.int64))])


def main():
    global write
    check_references()
    write = Writer(OUT, "kiln make_image_node_tests.py")
    for test in sorted(os.listdir(DEBIAN)):
        if test.startswith("test_resize_") or test == "test_upsample_nearest":
            mirror(test)

    f32 = lambda *s: RNG.standard_normal(s).astype(np.float32)
    ramp = lambda *s: np.arange(1, np.prod(s) + 1, dtype=np.float32).reshape(s)

    # other ranks and axes: 3-D (last axis), 5-D trilinear with scales, the
    # leading axes (nearest, asymmetric)
    resize_sizes("resize_3d_linear_last_axis", f32(2, 3, 5), [2, 3, 9], "linear")
    x = f32(1, 2, 3, 4, 5)
    scales = np.array([1, 1, 2, 0.5, 1.5], np.float32)
    ref = onnx_resize(x, "linear", scales=scales, coordinate_transformation_mode="align_corners")
    write("resize_5d_trilinear_align_corners_scales",
          [resize_node("linear", ("x", "", "scales"), coordinate_transformation_mode="align_corners")],
          [("x", x)], [("y", ref)], 13, [("scales", scales)])
    resize_sizes("resize_leading_axes_nearest_asymmetric", f32(3, 2, 2), [5, 3, 2], "nearest",
                 coordinate_transformation_mode="asymmetric")

    # cubic: float64, A = -0.5 and exclude_outside, pytorch_half_pixel
    resize_sizes("resize_cubic_float64_exclude_pytorch_half_pixel",
                 RNG.standard_normal((1, 2, 5, 6)), [1, 2, 7, 4], "cubic", cubic_coeff_a=-0.5,
                 exclude_outside=1, coordinate_transformation_mode="pytorch_half_pixel")

    # every nearest mode at ties (half_pixel halving: 2x + 0.5), int32 and uint8
    x = np.arange(32, dtype=np.int32).reshape(1, 1, 4, 8)
    for mode in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        resize_sizes("resize_nearest_ties_%s_int32" % mode, x, [1, 1, 2, 4], "nearest",
                     nearest_mode=mode)
    resize_sizes("resize_nearest_upsample_uint8", (np.arange(12) * 20).astype(np.uint8)
                 .reshape(1, 1, 3, 4), [1, 1, 7, 9], "nearest", nearest_mode="round_prefer_ceil")
    resize_sizes("resize_nearest_float16_align_corners",
                 f32(1, 2, 3, 3).astype(np.float16), [1, 2, 5, 4], "nearest",
                 coordinate_transformation_mode="align_corners")
    resize_sizes("resize_linear_float16", f32(1, 1, 3, 4).astype(np.float16), [1, 1, 5, 7],
                 "linear")

    # tf_crop_and_resize: nearest and cubic, and with scales (the resized
    # length in * scale, in float32)
    x = ramp(1, 1, 4, 5)
    for mode, ext in (("nearest", -1.0), ("cubic", 0.5)):
        roi = np.array([0, 0, 0.25, -0.1, 1, 1, 0.9, 1.2], np.float32)
        ref = onnx_resize(x, mode, sizes=np.array([1, 1, 3, 6]), roi=roi,
                          coordinate_transformation_mode="tf_crop_and_resize",
                          extrapolation_value=ext)
        write("resize_crop_and_resize_%s" % mode,
              [resize_node(mode, ("x", "roi", "", "sizes"),
                           coordinate_transformation_mode="tf_crop_and_resize",
                           extrapolation_value=ext)],
              [("x", x)], [("y", ref)], 13,
              [("roi", roi), ("sizes", np.array([1, 1, 3, 6], np.int64))])
    roi = np.array([0, 0, 0.1, 0.3, 1, 1, 0.8, 1.1], np.float32)
    scales = np.array([1, 1, 1.5, 0.7], np.float32)
    ref = onnx_resize(x, "linear", scales=scales, roi=roi,
                      coordinate_transformation_mode="tf_crop_and_resize")
    write("resize_crop_and_resize_scales",
          [resize_node("linear", ("x", "roi", "scales"),
                       coordinate_transformation_mode="tf_crop_and_resize")],
          [("x", x)], [("y", ref)], 13, [("roi", roi), ("scales", scales)])

    # resized lengths of 1: pytorch_half_pixel reads -0.5, align_corners 0
    resize_sizes("resize_pytorch_half_pixel_to_one", ramp(1, 1, 4, 5), [1, 1, 1, 3], "linear",
                 coordinate_transformation_mode="pytorch_half_pixel")
    resize_sizes("resize_align_corners_to_one_cubic", ramp(1, 1, 4, 5), [1, 1, 1, 2], "cubic",
                 coordinate_transformation_mode="align_corners")
    x = ramp(1, 1, 5, 5)
    scales = np.array([1, 1, 0.6, 0.6], np.float32)
    ref = onnx_resize(x, "cubic", scales=scales, coordinate_transformation_mode="asymmetric")
    write("resize_downsample_scales_cubic_asymmetric",
          [resize_node("cubic", ("x", "", "scales"), coordinate_transformation_mode="asymmetric")],
          [("x", x)], [("y", ref)], 13, [("scales", scales)])

    # tf_half_pixel_for_nn rounding up; opset 11 with empty roi and scales
    x = ramp(1, 1, 3, 4)
    empty = np.zeros((0,), np.float32)
    write("resize_tf_half_pixel_for_nn_prefer_ceil_opset11",
          [resize_node("nearest", ("x", "roi", "scales", "sizes"),
                       coordinate_transformation_mode="tf_half_pixel_for_nn",
                       nearest_mode="round_prefer_ceil")],
          [("x", x)], [("y", half_pixel_for_nn(x, [1, 1, 5, 3], "round_prefer_ceil"))], 11,
          [("roi", empty), ("scales", empty), ("sizes", np.array([1, 1, 5, 3], np.int64))])

    # Resize-10 and Upsample: asymmetric, nearest rounding down (up when
    # scaling down); linear
    x = ramp(1, 1, 5, 6)
    scales = np.array([1, 1, 0.6, 0.5], np.float32)
    write("resize10_nearest_downsample", [helper.make_node("Resize", ["x", "scales"], ["y"])],
          [("x", x)], [("y", legacy_nearest(x, scales))], 10, [("scales", scales)])
    x = ramp(1, 1, 2, 3)
    scales = np.array([1, 1, 2, 1.5], np.float32)
    ref = onnx_resize(x, "linear", scales=scales, coordinate_transformation_mode="asymmetric")
    write("resize10_linear", [helper.make_node("Resize", ["x", "scales"], ["y"], mode="linear")],
          [("x", x)], [("y", ref)], 10, [("scales", scales)])
    scales = [1.0, 1.0, 2.0, 2.5]
    ref = onnx_resize(x, "linear", scales=np.array(scales, np.float32),
                      coordinate_transformation_mode="asymmetric")
    write("upsample7_linear_attribute_scales",
          [helper.make_node("Upsample", ["x"], ["y"], mode="linear", scales=scales)],
          [("x", x)], [("y", ref)], 7)
    write("upsample7_nearest", [helper.make_node("Upsample", ["x"], ["y"], scales=scales)],
          [("x", x)], [("y", legacy_nearest(x, scales))], 7)

    # GridSample: every mode, padding and align_corners on 2 batches of 3
    # channels, the grid reaching past the image, through its edges and
    # pixel centers
    x = f32(2, 3, 4, 5)
    grid = RNG.uniform(-1.4, 1.4, (2, 3, 4, 2)).astype(np.float32)
    grid[0, 0, :, 0] = [-1, 1, 0, -0.2]
    grid[0, 1, :, 1] = [-1, 1, 0.5, -0.75]
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (0, 1):
                write("gridsample_%s_%s_align%d" % (mode, padding, align),
                      [helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                                        padding_mode=padding, align_corners=align)],
                      [("x", x), ("grid", grid)],
                      [("y", grid_sample(x, grid, mode, padding, align))], 16)
    # far outside (reflection folds many times), float64, one-pixel-wide image
    grid = np.array([[[[-10.3, 7.9], [100.6, -55.2], [3.1, 0.4]]]])
    for mode in ("bicubic", "bilinear"):
        x = RNG.standard_normal((1, 2, 3, 4))
        write("gridsample_%s_reflection_far_float64" % mode,
              [helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                                padding_mode="reflection")],
              [("x", x), ("grid", grid)], [("y", grid_sample(x, grid, mode, "reflection", 0))],
              16)
    x = f32(1, 1, 3, 1)
    grid = RNG.uniform(-1.5, 1.5, (1, 2, 3, 2)).astype(np.float32)
    write("gridsample_width1_reflection_align",
          [helper.make_node("GridSample", ["x", "grid"], ["y"], padding_mode="reflection",
                            align_corners=1)],
          [("x", x), ("grid", grid)], [("y", grid_sample(x, grid, "bilinear", "reflection", 1))],
          16)


def bad_models():
    """image_bad/NAME.onnx: one node named after the file."""
    if os.path.isdir(BAD):
        shutil.rmtree(BAD)
    os.makedirs(BAD)

    def save(name, op, ins, inputs, opset=13, consts=(), **attrs):
        vi = lambda n, a: helper.make_tensor_value_info(n, NP_TYPE_TO_TENSOR_TYPE[a.dtype],
                                                        list(a.shape))
        nodes = [helper.make_node("Constant", [], [c], value=numpy_helper.from_array(v, c))
                 for c, v in consts]
        nodes.append(helper.make_node(op, ins, ["y"], name=name, **attrs))
        g = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(BAD, name + ".onnx"))

    x = ("x", np.zeros((1, 1, 2, 3), np.float32))
    i64 = lambda *v: np.array(v, np.int64)
    f32 = lambda *v: np.array(v, np.float32)
    sizes = ("sizes", i64(1, 1, 4, 5))
    scales = ("scales", f32(1, 1, 2, 2))
    save("bad_resize_roi_input", "Resize", ["x", "roi", "", "sizes"],
         [x, ("roi", f32(0, 0, 0, 0, 1, 1, 1, 1))], consts=[sizes],
         coordinate_transformation_mode="tf_crop_and_resize")
    save("bad_resize_both", "Resize", ["x", "", "scales", "sizes"], [x], consts=[scales, sizes])
    save("bad_resize_neither", "Resize", ["x"], [x])
    save("bad_resize_scales_count", "Resize", ["x", "", "scales"], [x],
         consts=[("scales", f32(1, 2, 2))])
    save("bad_resize_scales_zero", "Resize", ["x", "", "scales"], [x],
         consts=[("scales", f32(1, 1, 0, 2))])
    save("bad_resize_sizes_negative", "Resize", ["x", "", "", "sizes"], [x],
         consts=[("sizes", i64(1, 1, -2, 2))])
    save("bad_resize_mode", "Resize", ["x", "", "", "sizes"], [x], consts=[sizes],
         mode="bilinear")
    save("bad_resize_coordinate_mode", "Resize", ["x", "", "", "sizes"], [x], consts=[sizes],
         coordinate_transformation_mode="half_pixel_symmetric")
    save("bad_resize_nearest_mode", "Resize", ["x", "", "", "sizes"], [x], consts=[sizes],
         nearest_mode="simple")
    save("bad_resize_crop_no_roi", "Resize", ["x", "", "", "sizes"], [x], consts=[sizes],
         coordinate_transformation_mode="tf_crop_and_resize")
    save("bad_resize_linear_int", "Resize", ["x", "", "", "sizes"],
         [("x", np.zeros((1, 1, 2, 3), np.int32))], consts=[sizes], mode="linear")
    save("bad_resize_empty_dim", "Resize", ["x", "", "", "sizes"],
         [("x", np.zeros((1, 1, 0, 3), np.float32))], consts=[sizes])
    save("bad_resize10_cubic", "Resize", ["x", "scales"], [x], opset=10, consts=[scales],
         mode="cubic")
    save("bad_upsample_opset10", "Upsample", ["x", "scales"], [x], opset=10, consts=[scales])
    save("bad_upsample_scale_below_1", "Upsample", ["x"], [x], opset=7,
         scales=[1.0, 1.0, 0.5, 2.0])
    grid = ("grid", np.zeros((1, 2, 2, 2), np.float32))
    save("bad_gridsample_mode", "GridSample", ["x", "grid"], [x, grid], opset=16, mode="linear")
    save("bad_gridsample_padding", "GridSample", ["x", "grid"], [x, grid], opset=16,
         padding_mode="wrap")
    save("bad_gridsample_grid_last_dim", "GridSample", ["x", "grid"],
         [x, ("grid", np.zeros((1, 2, 2, 3), np.float32))], opset=16)
    save("bad_gridsample_5d", "GridSample", ["x", "grid"],
         [("x", np.zeros((1, 1, 2, 2, 2), np.float32)), grid], opset=16)
    save("bad_gridsample_batch", "GridSample", ["x", "grid"],
         [x, ("grid", np.zeros((2, 2, 2, 2), np.float32))], opset=16)
    save("good_resize_sizes", "Resize", ["x", "", "", "sizes"], [x], consts=[sizes],
         mode="cubic")
    save("good_upsample7", "Upsample", ["x"], [x], opset=7, scales=[1.0, 1.0, 2.0, 2.0])


if __name__ == "__main__":
    main()
    bad_models()
