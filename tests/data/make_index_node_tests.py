"""Writes tests/data/index_nodes: node tests in the ONNX backend layout
(test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb) for kiln's
indexing and layout ops (src/ops/index.c, transform.c), run by
kiln_conformance --data (the index_node_tests test in tests/CMakeLists.txt).

They cover what the ONNX node tests cannot reach or miss: the inputs that
must be constants (TopK's k, CumSum's axis, Tile's repeats, OneHot's depth,
Range's start, limit and delta) come from Constant nodes, not graph inputs;
and edge cases: duplicate and negative indices, indices smaller than the
data, scatter reductions, batch dims, ties and NaN in TopK, exclusive and
reverse scans along a long last axis (the default schedule's vectorized
path), empty one-hot rows. The expected outputs are computed here with
plain numpy loops, independently of kiln.

Run with /usr/bin/python3 (Debian's python3-onnx); it rewrites the folder."""
import os
import shutil

import numpy as np
from onnx import helper

from node_test_writer import writer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "index_nodes")
RNG = np.random.default_rng(12)
write = writer(OUT, "kiln make_index_node_tests.py")


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


# ---- references (loops, as the ONNX operator docs define the ops) ----------------


def cumsum(x, axis, exclusive, reverse):
    x = np.moveaxis(x, axis, -1)
    out = np.zeros_like(x)
    n = x.shape[-1]
    for idx in np.ndindex(x.shape[:-1]):
        for i in range(n):
            js = range(n - 1, i - 1 + exclusive, -1) if reverse else range(0, i + 1 - exclusive)
            acc = x.dtype.type(0)
            for j in js:
                acc = x.dtype.type(acc + x[idx + (j,)])
            out[idx + (i,)] = acc
    return np.moveaxis(out, -1, axis)


def topk(x, k, axis, largest):
    """Larger (smaller) first, ties by the lower index; NaN is larger than
    any number (kiln's rule: the order stays total)."""
    x = np.moveaxis(x, axis, -1)
    vals = np.zeros(x.shape[:-1] + (k,), x.dtype)
    idxs = np.zeros(x.shape[:-1] + (k,), np.int64)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        def key(j):
            v = row[j]
            big = np.isnan(v) if v.dtype.kind == "f" else False
            num = 0.0 if big else float(v)
            return ((0 if big else 1, -num) if largest else (1 if big else 0, num), j)
        order = sorted(range(len(row)), key=key)[:k]
        vals[idx] = row[order]
        idxs[idx] = order
    return np.moveaxis(vals, -1, axis), np.moveaxis(idxs, -1, axis)


def scatter_elements(data, indices, updates, axis, reduction):
    out = data.copy()
    for idx in np.ndindex(indices.shape):
        t = list(idx)
        j = int(indices[idx])
        t[axis] = j + data.shape[axis] if j < 0 else j
        t = tuple(t)
        u = updates[idx]
        out[t] = u if reduction == "none" else out[t] + u if reduction == "add" else out[t] * u
    return out


def scatter_nd(data, indices, updates, reduction):
    out = data.copy()
    for idx in np.ndindex(indices.shape[:-1]):
        t = tuple(int(v) + (data.shape[d] if v < 0 else 0) for d, v in enumerate(indices[idx]))
        u = updates[idx]
        out[t] = u if reduction == "none" else out[t] + u if reduction == "add" else out[t] * u
    return out


def gather_nd(data, indices, b):
    k = indices.shape[-1]
    out = np.zeros(indices.shape[:-1] + data.shape[b + k:], data.dtype)
    for idx in np.ndindex(indices.shape[:-1]):
        t = tuple(int(v) + (data.shape[b + d] if v < 0 else 0) for d, v in enumerate(indices[idx]))
        out[idx] = data[idx[:b] + t]
    return out


def one_hot(indices, depth, values, axis):
    out = np.empty(indices.shape + (depth,), values.dtype)
    for idx in np.ndindex(indices.shape):
        v = indices[idx]
        v = v + depth if v < 0 else v
        for d in range(depth):
            out[idx + (d,)] = values[1] if v == d else values[0]
    return np.moveaxis(out, -1, axis)


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    f32 = lambda *s: RNG.standard_normal(s).astype(np.float32)
    i64 = lambda v: np.array(v, np.int64)

    # CumSum: a long last axis (vectorized by the default schedule), axis 0, int32
    x = f32(3, 37)
    for ex in (0, 1):
        for rev in (0, 1):
            write("cumsum_last_axis_ex%d_rev%d" % (ex, rev),
                  [node("CumSum", ["x", "ax"], ["y"], exclusive=ex, reverse=rev)],
                  [("x", x)], [("y", cumsum(x, 1, ex, rev))], 14, [("ax", i64(1))])
    xi = RNG.integers(-50, 50, (37, 5)).astype(np.int32)
    write("cumsum_int32_negative_axis", [node("CumSum", ["x", "ax"], ["y"], reverse=1)],
          [("x", xi)], [("y", cumsum(xi, 0, 0, 1))], 14, [("ax", np.array([-2], np.int32))])
    x0 = f32(9, 20)
    write("cumsum_axis0_wide", [node("CumSum", ["x", "ax"], ["y"])], [("x", x0)],
          [("y", cumsum(x0, 0, 0, 0))], 14, [("ax", i64(0))])
    x3 = RNG.standard_normal((2, 3, 4))
    write("cumsum_float64_middle_axis", [node("CumSum", ["x", "ax"], ["y"], exclusive=1)],
          [("x", x3)], [("y", cumsum(x3, 1, 1, 0))], 11, [("ax", i64(1))])

    # TopK: ties (by lower index), NaN, both orders, axis 0
    t = np.array([[3, 1, 3, 2, 1, 3, 0, 2, 2], [5, 5, 5, 5, 5, 5, 5, 5, 5],
                  [np.nan, 1, -np.inf, np.inf, np.nan, 0, 2, -1, 1], [9, 8, 7, 6, 5, 4, 3, 2, 1]],
                 np.float32)
    for largest in (1, 0):
        v, i = topk(t, 4, 1, largest)
        write("topk_ties_nan_largest%d" % largest,
              [node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=largest)],
              [("x", t)], [("v", v), ("i", i)], 11, [("k", i64([4]))])
    ti = RNG.integers(0, 4, (6, 5)).astype(np.int32)
    v, i = topk(ti, 3, 0, 1)
    write("topk_int32_axis0", [node("TopK", ["x", "k"], ["v", "i"], axis=0)],
          [("x", ti)], [("v", v), ("i", i)], 10, [("k", i64([3]))])
    x = f32(3, 5)
    v, i = topk(x, 2, 1, 1)
    write("topk_opset1_attribute_k", [node("TopK", ["x"], ["v", "i"], k=2)],
          [("x", x)], [("v", v), ("i", i)], 9)

    # Tile, OneHot, Range, EyeLike with their constant inputs
    x = f32(2, 3, 4)
    write("tile_constant_repeats", [node("Tile", ["x", "r"], ["y"])], [("x", x)],
          [("y", np.tile(x, (2, 1, 3)))], 13, [("r", i64([2, 1, 3]))])
    idx = i64([[0, -1, 4], [-5, 5, -6]])
    vals = np.array([-2.0, 7.5], np.float32)
    write("onehot_out_of_range_axis0", [node("OneHot", ["i", "d", "v"], ["y"], axis=0)],
          [("i", idx), ("v", vals)], [("y", one_hot(idx, 5, vals, 0))], 11,
          [("d", np.array(5, np.float32))])
    fidx = np.array([1.0, 1.5, -2.0, 3.0], np.float32)
    ivals = np.array([0, 1], np.int32)
    write("onehot_float_indices", [node("OneHot", ["i", "d", "v"], ["y"])],
          [("i", fidx), ("v", ivals)],
          [("y", np.array([[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], np.int32))],
          11, [("d", i64([4]))])
    for dt, (s, l, d) in ((np.float32, (0.5, 2.0, 0.25)), (np.int64, (7, -5, -3)),
                          (np.int32, (-4, 4, 3))):
        r = np.arange(s, l, d, dtype=dt)
        z = np.zeros_like(r)
        write("range_%s" % np.dtype(dt).name, [node("Range", ["s", "l", "d"], ["r"]),
                                               node("Add", ["r", "z"], ["y"])],
              [("z", z)], [("y", r)], 11,
              [("s", np.array(s, dt)), ("l", np.array(l, dt)), ("d", np.array(d, dt))])
    x = f32(3, 5)
    write("eyelike_negative_k_int64", [node("EyeLike", ["x"], ["y"], k=-1, dtype=7)],
          [("x", x)], [("y", np.eye(3, 5, -1, dtype=np.int64))], 9)

    # Scatter: duplicates (last wins; reductions), negative indices, indices
    # smaller than the data in the other dims, one index tuple
    data = f32(4, 5)
    ind = i64([[1, -1, 1], [0, 0, 4]])
    upd = f32(2, 3)
    for red in ("none", "add", "mul"):
        attrs = {"axis": -1} if red == "none" else {"axis": -1, "reduction": red}
        write("scatter_elements_dup_%s" % red,
              [node("ScatterElements", ["d", "i", "u"], ["y"], **attrs)],
              [("d", data), ("i", ind), ("u", upd)],
              [("y", scatter_elements(data, ind, upd, 1, red))], 16)
    data = f32(4, 3, 2)
    ind = i64([[[1], [-1]], [[1], [-4]], [[1], [2]]])
    upd = f32(3, 2, 3, 2)
    for red in ("none", "add", "mul"):
        attrs = {} if red == "none" else {"reduction": red}
        write("scatternd_dup_%s" % red, [node("ScatterND", ["d", "i", "u"], ["y"], **attrs)],
              [("d", data), ("i", ind), ("u", upd)], [("y", scatter_nd(data, ind, upd, red))], 16)
    ind1 = i64([2, -1])
    upd1 = f32(2)
    write("scatternd_one_tuple", [node("ScatterND", ["d", "i", "u"], ["y"])],
          [("d", data), ("i", ind1), ("u", upd1)], [("y", scatter_nd(data, ind1, upd1, "none"))],
          13)

    # Gather: batch dims with a tuple of 2, negative indices, smaller indices
    data = f32(2, 3, 4, 2)
    ind = i64([[[0, -1], [2, 3]], [[-3, 0], [1, 1]]])
    write("gathernd_batch_dims_tuple2", [node("GatherND", ["d", "i"], ["y"], batch_dims=1)],
          [("d", data), ("i", ind)], [("y", gather_nd(data, ind, 1))], 13)
    data = f32(3, 4)
    ind = i64([[-1, 0], [3, -4]])
    ref = np.take_along_axis(data[:2], np.where(ind < 0, ind + 4, ind), axis=1)
    write("gather_elements_smaller_indices", [node("GatherElements", ["d", "i"], ["y"], axis=-1)],
          [("d", data), ("i", ind)], [("y", ref)], 13)

    # ReverseSequence on a 3-D input; DepthToSpace CRD with a block of 3
    x = f32(5, 3, 2)
    lens = i64([5, 0, 3])
    ref = x.copy()
    for b, n in enumerate(lens):
        ref[:n, b] = x[:n, b][::-1]
    write("reversesequence_3d", [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=1,
                                      time_axis=0)],
          [("x", x), ("l", lens)], [("y", ref)], 10)
    x = f32(1, 18, 2, 2)
    ref = x.reshape(1, 2, 3, 3, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 6, 6)
    write("depthtospace_crd_block3", [node("DepthToSpace", ["x"], ["y"], blocksize=3, mode="CRD")],
          [("x", x)], [("y", ref)], 13)


if __name__ == "__main__":
    main()
