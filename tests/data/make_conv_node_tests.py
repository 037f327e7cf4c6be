"""Writes tests/data/conv_nodes: node tests in the ONNX backend layout
(test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb) for kiln's
convolutions and pools (src/ops/conv.c, pool.c; the converters in
src/frontend/onnx_convert_conv.c), run by kiln_conformance --data (the
conv_node_tests test in tests/CMakeLists.txt).

They cover what the ONNX node tests miss: 3-D and 1-D Conv with groups,
strides, dilations and asymmetric pads; ConvTranspose with groups, every
attribute at once, 3-D, 1-D, output_shape with N and C, a negative total
padding and SAME_LOWER; MaxPool's Indices in 1-D and 3-D, column major,
with ties, padding and dilation; AveragePool in 1-D and 3-D with and
without count_include_pad, and ceil_mode windows that overhang the padded
input; LpPool and GlobalLpPool; MaxUnpool in 3-D and with a constant
output_shape; ConvInteger with per-channel weight zero points and groups;
MatMulInteger with per-row and per-column zero points, int8 by uint8,
batched. The expected outputs are computed here with plain numpy loops as
the ONNX operator docs define the ops, independently of kiln.

Run with /usr/bin/python3 (Debian's python3-onnx); it rewrites the folder."""
import itertools
import os

import numpy as np

from node_test_writer import Writer, node

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "conv_nodes")
RNG = np.random.default_rng(2026)
write = None  # main's Writer


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---- references (loops, as the ONNX operator docs define the ops) ----------------


def conv(x, w, b, strides, dils, pads, group):
    """y[n, m, o] = sum over the group's channels c and taps k of
    x[n, c, o * s + k * d - pad_begin] * w[m, c, k] (0 outside x)."""
    nsp = x.ndim - 2
    pb, pe = pads[:nsp], pads[nsp:]
    ks = w.shape[2:]
    outs = [(x.shape[2 + i] + pb[i] + pe[i] - ((ks[i] - 1) * dils[i] + 1)) // strides[i] + 1
            for i in range(nsp)]
    m, cg = w.shape[0], w.shape[1]
    mg = m // group
    y = np.zeros((x.shape[0], m) + tuple(outs))
    for n, o in itertools.product(range(x.shape[0]), range(m)):
        g = o // mg
        for pos in np.ndindex(*outs):
            acc = 0.0
            for c in range(cg):
                for k in np.ndindex(*ks):
                    at = [pos[i] * strides[i] + k[i] * dils[i] - pb[i] for i in range(nsp)]
                    if all(0 <= at[i] < x.shape[2 + i] for i in range(nsp)):
                        acc += float(x[(n, g * cg + c) + tuple(at)]) * float(w[(o, c) + k])
            y[(n, o) + pos] = acc + (float(b[o]) if b is not None else 0.0)
    return y


def conv_transpose(x, w, b, strides, dils, pads, out_pad, group):
    """The full output (every input scattered through the kernel, extent
    s * (in - 1) + d * (k - 1) + 1 + output_padding) cropped by the pads;
    a negative pad reads outside it: zeros."""
    nsp = x.ndim - 2
    pb, pe = pads[:nsp], pads[nsp:]
    cin, mg = w.shape[0], w.shape[1]
    cg = cin // group
    ks = w.shape[2:]
    full = [strides[i] * (x.shape[2 + i] - 1) + dils[i] * (ks[i] - 1) + 1 + out_pad[i]
            for i in range(nsp)]
    f = np.zeros((x.shape[0], mg * group) + tuple(full))
    for n, c in itertools.product(range(x.shape[0]), range(cin)):
        g = c // cg
        for i in np.ndindex(*x.shape[2:]):
            for k in np.ndindex(*ks):
                at = tuple(i[d] * strides[d] + k[d] * dils[d] for d in range(nsp))
                for o in range(mg):
                    f[(n, g * mg + o) + at] += float(x[(n, c) + i]) * float(w[(c, o) + k])
    outs = [full[i] - pb[i] - pe[i] for i in range(nsp)]
    y = np.zeros((x.shape[0], mg * group) + tuple(outs))
    for pos in np.ndindex(*outs):
        at = [pos[i] + pb[i] for i in range(nsp)]
        if all(0 <= at[i] < full[i] for i in range(nsp)):
            y[(slice(None), slice(None)) + pos] = f[(slice(None), slice(None)) + tuple(at)]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nsp)
    return y


def convt_pads(x, w, strides, dils, out_pad, out_shape, auto_pad):
    """ConvTranspose's pads from output_shape (or SAME: in * stride), as the
    ONNX docs give them (python's floor division)."""
    nsp = x.ndim - 2
    if out_shape is None:
        out_shape = [x.shape[2 + i] * strides[i] for i in range(nsp)]
    begin, end = [], []
    for i in range(nsp):
        total = (strides[i] * (x.shape[2 + i] - 1) + out_pad[i]
                 + (w.shape[2 + i] - 1) * dils[i] + 1 - out_shape[i])
        if auto_pad == "SAME_UPPER":
            begin.append(total // 2)
            end.append(total - total // 2)
        else:
            begin.append(total - total // 2)
            end.append(total // 2)
    return begin + end


def pool_out(n, k, s, d, pb, pe, ceil_mode):
    span = n + pb + pe - ((k - 1) * d + 1)
    return (-(-span // s) if ceil_mode else span // s) + 1


def pool(x, kind, ks, strides, dils, pads, ceil_mode=0, count_include_pad=0, p=2,
         storage_order=0):
    """kind: max (values and ONNX's flat indices of the first max in the
    window's row-major order), avg or lp. The average divides by the
    elements inside x, or with count_include_pad inside the padded x."""
    nsp = x.ndim - 2
    pb, pe = pads[:nsp], pads[nsp:]
    outs = [pool_out(x.shape[2 + i], ks[i], strides[i], dils[i], pb[i], pe[i], ceil_mode)
            for i in range(nsp)]
    # no window starts in the end padding (where ceil_mode conventions differ)
    assert all((outs[i] - 1) * strides[i] - pb[i] < x.shape[2 + i] for i in range(nsp))
    y = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    idx = np.zeros(x.shape[:2] + tuple(outs), np.int64)
    sp = x.shape[2:]
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in np.ndindex(*outs):
            vals, where, padded = [], [], 0
            for k in np.ndindex(*ks):
                at = [pos[i] * strides[i] + k[i] * dils[i] - pb[i] for i in range(nsp)]
                if all(0 <= at[i] < sp[i] for i in range(nsp)):
                    vals.append(x[(n, c) + tuple(at)])
                    where.append(at)
                elif all(-pb[i] <= at[i] < sp[i] + pe[i] for i in range(nsp)):
                    padded += 1
            if kind == "max":
                j = int(np.argmax(vals))  # the first max
                y[(n, c) + pos] = vals[j]
                at = where[j]
                order = range(nsp) if storage_order == 0 else reversed(range(nsp))
                off = 0
                for i in order:
                    off = off * sp[i] + at[i]
                idx[(n, c) + pos] = (n * x.shape[1] + c) * int(np.prod(sp)) + off
            elif kind == "avg":
                cnt = len(vals) + (padded if count_include_pad else 0)
                y[(n, c) + pos] = np.float64(np.sum(np.float64(vals))) / cnt
            else:
                y[(n, c) + pos] = np.sum(np.abs(np.float64(vals)) ** p) ** (1.0 / p)
    return (y, idx) if kind == "max" else y


def max_unpool(x, ind, unpooled, out_shape=None):
    """The values at their flat indices in zeros of the unpooled shape; with
    out_shape (at least that in every dim), that padded with zeros at the
    end of each dim to it, as the ONNX reference implementation does."""
    y = np.zeros(int(np.prod(unpooled)), x.dtype)
    for v, i in zip(x.reshape(-1), ind.reshape(-1)):
        y[i] = v  # the later one stays
    y = y.reshape(unpooled)
    if out_shape is None:
        return y
    z = np.zeros(out_shape, x.dtype)
    z[tuple(slice(0, n) for n in unpooled)] = y
    return z


# ---- the tests -------------------------------------------------------------------------


def convs():
    x, w, b = f32(2, 4, 5, 6, 4), f32(6, 2, 3, 2, 3), f32(6)
    a = dict(strides=[2, 1, 2], dilations=[1, 2, 1], pads=[1, 0, 2, 0, 1, 1], group=2)
    write("conv3d_group_strides_dilations_pads", [node("Conv", ["x", "w", "b"], ["y"], **a)],
          [("x", x), ("w", w), ("b", b)],
          [("y", conv(x, w, b, a["strides"], a["dilations"], a["pads"], 2).astype(np.float32))],
          13)
    x, w = f32(1, 2, 5, 4, 5), f32(3, 2, 2, 3, 2)
    # SAME_UPPER with stride 2: outputs ceil(in / 2), the odd padding at the end
    pads = []
    for n, k in zip(x.shape[2:], w.shape[2:]):
        out = -(-n // 2)
        total = max(0, (out - 1) * 2 + k - n)
        pads.append((total // 2, total - total // 2))
    pads = [p[0] for p in pads] + [p[1] for p in pads]
    write("conv3d_same_upper_stride2",
          [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2, 2])],
          [("x", x), ("w", w)],
          [("y", conv(x, w, None, [2, 2, 2], [1, 1, 1], pads, 1).astype(np.float32))], 11)
    x, w = f32(2, 3, 11), f32(4, 3, 3)
    write("conv1d_strides_dilations_pads",
          [node("Conv", ["x", "w"], ["y"], strides=[2], dilations=[2], pads=[2, 1])],
          [("x", x), ("w", w)], [("y", conv(x, w, None, [2], [2], [2, 1], 1).astype(np.float32))],
          11)


def conv_transposes():
    x, w, b = f32(1, 4, 4, 3), f32(4, 3, 3, 2), f32(6)
    a = dict(strides=[2, 3], dilations=[2, 1], pads=[1, 0, 0, 2], output_padding=[1, 0], group=2)
    ref = conv_transpose(x, w, b, a["strides"], a["dilations"], a["pads"], a["output_padding"],
                         2)
    write("convtranspose_group_every_attribute",
          [node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 2], **a)],
          [("x", x), ("w", w), ("b", b)], [("y", ref.astype(np.float32))], 11)
    x, w = f32(2, 2, 3, 2, 3), f32(2, 2, 2, 3, 2)
    a = dict(strides=[2, 1, 2], pads=[0, 1, 1, 1, 0, 0], output_padding=[1, 0, 0])
    ref = conv_transpose(x, w, None, a["strides"], [1, 1, 1], a["pads"], a["output_padding"], 1)
    write("convtranspose_3d_strides_pads_output_padding",
          [node("ConvTranspose", ["x", "w"], ["y"], **a)], [("x", x), ("w", w)],
          [("y", ref.astype(np.float32))], 11)
    # output_shape larger than the full extent: a negative total padding of
    # -3 (begin -1, end -2); given with N and C in front
    x, w = f32(1, 2, 4), f32(2, 1, 3)
    pads = convt_pads(x, w, [2], [1], [0], [12], "NOTSET")
    assert pads == [-1, -2], pads
    ref = conv_transpose(x, w, None, [2], [1], pads, [0], 1)
    write("convtranspose_1d_output_shape_negative_padding",
          [node("ConvTranspose", ["x", "w"], ["y"], strides=[2], output_shape=[1, 1, 12])],
          [("x", x), ("w", w)], [("y", ref.astype(np.float32))], 11)
    # SAME_LOWER with an odd total: the extra one at the begin
    x, w = f32(1, 1, 3, 4), f32(1, 2, 3, 2)
    pads = convt_pads(x, w, [2, 2], [1, 2], [0, 0], None, "SAME_LOWER")
    ref = conv_transpose(x, w, None, [2, 2], [1, 2], pads, [0, 0], 1)
    write("convtranspose_same_lower_dilations",
          [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], dilations=[1, 2],
                auto_pad="SAME_LOWER")],
          [("x", x), ("w", w)], [("y", ref.astype(np.float32))], 11)


def pools():
    # MaxPool with Indices: 3-D, column major, dilations, ceil_mode, pads
    x = f32(1, 2, 4, 5, 6)
    a = dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2], dilations=[1, 1, 2],
             pads=[0, 1, 1, 1, 1, 0], ceil_mode=1, storage_order=1)
    y, i = pool(x, "max", a["kernel_shape"], a["strides"], a["dilations"], a["pads"], 1,
                storage_order=1)
    write("maxpool_3d_indices_column_major", [node("MaxPool", ["x"], ["y", "i"], **a)],
          [("x", x)], [("y", y), ("i", i)], 12)
    # 1-D, row major, with padding; int8 with ties: the first max in the window
    x = f32(2, 3, 9)
    y, i = pool(x, "max", [3], [2], [1], [1, 2])
    write("maxpool_1d_indices_pads",
          [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3], strides=[2], pads=[1, 2])],
          [("x", x)], [("y", y), ("i", i)], 12)
    x = RNG.integers(-3, 3, (1, 2, 5, 6)).astype(np.int8)
    y, i = pool(x, "max", [2, 3], [1, 2], [1, 1], [0, 1, 1, 0])
    write("maxpool_int8_ties_indices",
          [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 3], strides=[1, 2],
                pads=[0, 1, 1, 0])],
          [("x", x)], [("y", y), ("i", i)], 12)
    # MaxPool 3-D without indices, dilations and ceil_mode
    x = f32(1, 2, 5, 6, 5)
    y, _ = pool(x, "max", [2, 2, 2], [2, 1, 2], [1, 2, 1], [1, 0, 0, 0, 1, 1], 1)
    write("maxpool_3d_dilations_ceil",
          [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2], strides=[2, 1, 2],
                dilations=[1, 2, 1], pads=[1, 0, 0, 0, 1, 1], ceil_mode=1)],
          [("x", x)], [("y", y)], 12)
    # AveragePool 3-D with and without the padding counted; ceil_mode windows
    # that overhang the padded input count only what is inside it
    x = f32(2, 2, 5, 4, 6)
    for cip in (0, 1):
        y = pool(x, "avg", [3, 2, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1, 0, 0, 2], 1, cip)
        write("averagepool_3d_ceil_count_include_pad%d" % cip,
              [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2, 3], strides=[2, 2, 2],
                    pads=[1, 1, 1, 0, 0, 2], ceil_mode=1, count_include_pad=cip)],
              [("x", x)], [("y", y.astype(np.float32))], 11)
    x = f32(1, 3, 8)
    y = pool(x, "avg", [3], [2], [1], [1, 1], 1, 1)
    write("averagepool_1d_ceil_count_include_pad",
          [node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1],
                ceil_mode=1, count_include_pad=1)],
          [("x", x)], [("y", y.astype(np.float32))], 11)
    # LpPool: 2-D p = 3 with pads and strides, 3-D p = 1, 1-D default p = 2
    x = f32(1, 2, 6, 7)
    y = pool(x, "lp", [2, 3], [2, 2], [1, 1], [1, 0, 1, 1], p=3)
    write("lppool_2d_p3_pads_strides",
          [node("LpPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[2, 2], pads=[1, 0, 1, 1],
                p=3)],
          [("x", x)], [("y", y.astype(np.float32))], 11)
    x = f32(1, 2, 4, 5, 4)
    y = pool(x, "lp", [2, 2, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1, 1, 1, 1], p=1)
    write("lppool_3d_p1",
          [node("LpPool", ["x"], ["y"], kernel_shape=[2, 2, 3], pads=[1, 1, 1, 1, 1, 1], p=1)],
          [("x", x)], [("y", y.astype(np.float32))], 11)
    x = f32(2, 2, 7)
    y = pool(x, "lp", [3], [2], [1], [0, 0])
    write("lppool_1d_default_p", [node("LpPool", ["x"], ["y"], kernel_shape=[3], strides=[2])],
          [("x", x)], [("y", y.astype(np.float32))], 11)
    # GlobalLpPool on 4-D and 5-D inputs
    x = f32(2, 3, 5, 4)
    y = np.sqrt(np.sum(np.float64(x) ** 2, axis=(2, 3), keepdims=True))
    write("globallppool_2d", [node("GlobalLpPool", ["x"], ["y"])], [("x", x)],
          [("y", y.astype(np.float32))], 11)
    x = f32(1, 2, 3, 4, 2)
    y = np.sum(np.abs(np.float64(x)) ** 3, axis=(2, 3, 4), keepdims=True) ** (1.0 / 3)
    write("globallppool_3d_p3", [node("GlobalLpPool", ["x"], ["y"], p=3)], [("x", x)],
          [("y", y.astype(np.float32))], 11)


def unpools():
    # 3-D: MaxPool's indices scattered back, with pads
    x = f32(1, 2, 4, 4, 6)
    y, i = pool(x, "max", [2, 2, 2], [2, 2, 2], [1, 1, 1], [0] * 6)
    out = [1, 2, 4, 4, 6]
    write("maxunpool_3d", [node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[2, 2, 2],
                                strides=[2, 2, 2])],
          [("y", y), ("i", i)], [("z", max_unpool(y, i, out))], 11)
    x = f32(1, 1, 5, 5)
    y, i = pool(x, "max", [2, 2], [2, 2], [1, 1], [1, 1, 0, 0])
    out = [int(v) for v in (1, 1, 2 * (y.shape[2] - 1) + 2 - 1, 2 * (y.shape[3] - 1) + 2 - 1)]
    write("maxunpool_2d_pads", [node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[2, 2],
                                     strides=[2, 2], pads=[1, 1, 0, 0])],
          [("y", y), ("i", i)], [("z", max_unpool(y, i, out))], 11)
    # a constant output_shape larger than the unpooled [1, 2, 4, 6] in C, H
    # and W; indices (flat in the unpooled shape) repeat
    y = f32(1, 2, 2, 3)
    i = np.array([[[[0, 7, 7], [20, 21, 2]], [[30, 31, 40], [41, 44, 29]]]], np.int64)
    shape = np.array([1, 3, 5, 7], np.int64)
    write("maxunpool_constant_output_shape_repeats",
          [node("MaxUnpool", ["y", "i", "s"], ["z"], kernel_shape=[2, 2], strides=[2, 2])],
          [("y", y), ("i", i)], [("z", max_unpool(y, i, [1, 2, 4, 6], list(shape)))], 11,
          consts=[("s", shape)])


def integers():
    x = RNG.integers(0, 256, (1, 4, 5, 5)).astype(np.uint8)
    w = RNG.integers(-128, 128, (6, 2, 3, 2)).astype(np.int8)
    xz = np.array(131, np.uint8)
    wz = RNG.integers(-5, 5, (6,)).astype(np.int8)
    xi = np.int64(x) - np.int64(xz)
    wi = np.int64(w) - np.int64(wz).reshape(6, 1, 1, 1)
    ref = conv(xi, wi, None, [2, 1], [1, 1], [1, 0, 1, 1], 2)
    write("convinteger_uint8_int8_per_channel_group",
          [node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[2, 1], pads=[1, 0, 1, 1],
                group=2)],
          [("x", x), ("w", w), ("xz", xz), ("wz", wz)], [("y", ref.astype(np.int32))], 10)
    a = RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    b = RNG.integers(0, 256, (4, 5)).astype(np.uint8)
    az = np.array([-3], np.int8)
    bz = RNG.integers(0, 256, (5,)).astype(np.uint8)
    ref = np.matmul(np.int64(a) - np.int64(az), np.int64(b) - np.int64(bz))
    write("matmulinteger_batched_per_column",
          [node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
          [("a", a), ("b", b), ("az", az), ("bz", bz)], [("y", ref.astype(np.int32))], 10)
    a = RNG.integers(0, 256, (3, 4)).astype(np.uint8)
    b = RNG.integers(-128, 128, (4, 2)).astype(np.int8)
    az = RNG.integers(0, 256, (3,)).astype(np.uint8)
    ref = np.matmul(np.int64(a) - np.int64(az).reshape(3, 1), np.int64(b))
    write("matmulinteger_per_row", [node("MatMulInteger", ["a", "b", "az"], ["y"])],
          [("a", a), ("b", b), ("az", az)], [("y", ref.astype(np.int32))], 10)


def main():
    global write
    write = Writer(OUT, "kiln make_conv_node_tests.py")
    convs()
    conv_transposes()
    pools()
    unpools()
    integers()


if __name__ == "__main__":
    main()
