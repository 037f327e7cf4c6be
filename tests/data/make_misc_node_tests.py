"""Writes tests/data/misc_nodes: node tests in the ONNX backend layout
(test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb) for
TfIdfVectorizer (src/ops/text.c), RoiAlign (image.c) and Det (linalg.c), run
by kiln_conformance --data (the misc_node_tests test in tests/CMakeLists.txt);
and tests/data/misc_bad: one-node models the importer must refuse, naming
the node (tests/unit/test_ops_misc.c).

The node tests cover what the ONNX node tests miss: TfIdfVectorizer's IDF and
TFIDF modes with and without weights, a min_gram_length above 1, n-grams
sharing an output index and outputs with none, skips longer than the row,
int64 and 1-D tokens; RoiAlign with sampling_ratio 0 (sample counts that
depend on the regions), regions partly or wholly outside the image, reversed
and much larger than it (more samples than the kernel's loop bound), max
mode, opset 10 (no half-pixel shift), float64, batch indices other than 0;
Det of larger, batched, singular and pivoting matrices and 1 x 1. The
expected outputs are computed here, independently of kiln: plain loops as
ONNX defines TfIdfVectorizer and as its reference (ONNX Runtime's) computes
RoiAlign, and numpy.linalg.det in float64.

Run with /usr/bin/python3 (Debian's python3-onnx); it rewrites the folders."""
import math
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE

from node_test_writer import Writer, node

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "misc_nodes")
BAD = os.path.join(HERE, "misc_bad")
RNG = np.random.default_rng(23)


# ---- references ------------------------------------------------------------------------


def tfidf(x, mode, lo, hi, skip, counts, indexes, pool, weights=None):
    """Each pool n-gram of a length in [lo, hi] counted in each row: a
    1-gram once per position, a longer one once per position and skip
    distance 1 .. skip + 1 at which its tokens occur; counts add up per
    output index; IDF is 1 (or the output's weight) where the count is not
    0, TFIDF the count times the output's weight."""
    rows = x if x.ndim == 2 else x[None]
    grams, j = [], 0
    for g, start in enumerate(counts):
        end = counts[g + 1] if g + 1 < len(counts) else len(pool)
        for at in range(start, end, g + 1):
            grams.append((tuple(pool[at:at + g + 1]), indexes[j]))
            j += 1
    out = np.zeros((len(rows), max(indexes) + 1), np.float64)
    for b, row in enumerate(rows):
        for gram, idx in grams:
            n = len(gram)
            if n < lo or n > hi:
                continue
            for d in [1] if n == 1 else range(1, skip + 2):
                for i in range(len(row)):
                    if i + (n - 1) * d < len(row) and all(
                            row[i + k * d] == gram[k] for k in range(n)):
                        out[b, idx] += 1
    w = np.ones(out.shape[1]) if weights is None else np.array(weights[:out.shape[1]])
    if mode == "IDF":
        out = np.where(out > 0, w, 0)
    elif mode == "TFIDF":
        out = out * w
    out = out.astype(np.float32)
    return out if x.ndim == 2 else out[0]


def roi_align(x, rois, bidx, mode, oh, ow, ratio, scale, half):
    n, ch, h, w = x.shape
    y = np.zeros((len(rois), ch, oh, ow), np.float64)
    scale = float(np.float32(scale))
    for r in range(len(rois)):
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = (float(v) * scale - off for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(math.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(math.ceil(rw / ow))
        count = max(gh * gw, 1)
        for c in range(ch):
            img = x[bidx[r], c].astype(np.float64)
            for ph in range(oh):
                for pw in range(ow):
                    vals = []
                    for iy in range(gh):
                        yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            if yy < -1 or yy > h or xx < -1 or xx > w:
                                vals.append([0.0 * img[0, 0]] * 4)
                                continue
                            yv, xv = max(yy, 0.0), max(xx, 0.0)
                            yl, xl = int(yv), int(xv)
                            if yl >= h - 1:
                                yl = yhi = h - 1
                                yv = float(yl)
                            else:
                                yhi = yl + 1
                            if xl >= w - 1:
                                xl = xhi = w - 1
                                xv = float(xl)
                            else:
                                xhi = xl + 1
                            ly, lx = yv - yl, xv - xl
                            vals.append([(1 - ly) * (1 - lx) * img[yl, xl],
                                         (1 - ly) * lx * img[yl, xhi],
                                         ly * (1 - lx) * img[yhi, xl], ly * lx * img[yhi, xhi]])
                    if mode == "avg":
                        y[r, c, ph, pw] = sum(sum(v) for v in vals) / count
                    else:
                        y[r, c, ph, pw] = max(max(v) for v in vals) if vals else 0.0
    return y.astype(x.dtype)


def check_references():
    """The references reproduce the Debian node tests of the two ops (to
    the 4 decimals the RoiAlign outputs are written with)."""
    debian = "/usr/share/libonnx-testdata/data/node/"

    def read(test, name):
        t = onnx.TensorProto()
        with open(os.path.join(debian, test, "test_data_set_0", name + ".pb"), "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)

    for test, half in (("test_roialign_aligned_true", True),
                       ("test_roialign_aligned_false", False)):
        x, rois, bidx = (read(test, "input_%d" % i) for i in range(3))
        got = roi_align(x, rois, bidx, "avg", 5, 5, 2, 1.0, half)
        assert np.abs(got - read(test, "output_0")).max() < 1e-4, test
    for test in sorted(os.listdir(debian)):
        if not test.startswith("test_tfidfvectorizer"):
            continue
        n = onnx.load(os.path.join(debian, test, "model.onnx")).graph.node[0]
        a = {t.name: helper.get_attribute_value(t) for t in n.attribute}
        got = tfidf(read(test, "input_0"), a["mode"].decode(), a["min_gram_length"],
                    a["max_gram_length"], a["max_skip_count"], list(a["ngram_counts"]),
                    list(a["ngram_indexes"]), list(a["pool_int64s"]), a.get("weights"))
        assert (got == read(test, "output_0")).all(), test


# ---- the tests ---------------------------------------------------------------------------


def tfidf_tests(w):
    def case(name, x, mode, lo, hi, skip, counts, indexes, pool, weights=None):
        attrs = dict(mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skip,
                     ngram_counts=counts, ngram_indexes=indexes, pool_int64s=pool)
        if weights is not None:
            attrs["weights"] = weights
        y = tfidf(x, mode, lo, hi, skip, counts, indexes, pool, weights)
        w(name, [node("TfIdfVectorizer", ["x"], ["y"], **attrs)], [("x", x)], [("y", y)], 9)

    x = np.array([[1, 2, 3, 2, 3, 4, 1, 2], [4, 4, 3, 2, 1, 2, 3, 3]], np.int64)
    pool = [1, 2, 3, 4, 2, 3, 3, 4, 1, 2, 4, 4, 1, 2, 3, 2, 3, 4]  # 4 uni, 4 bi, 2 tri
    counts, idx = [0, 4, 12], list(range(10))
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5, 4.0, 1.25]
    case("tfidf_idf_weights", x, "IDF", 1, 3, 1, counts, idx, pool, weights)
    case("tfidf_tfidf_min2", x, "TFIDF", 2, 3, 2, counts, idx, pool, weights)
    case("tfidf_idf_no_weights", x, "IDF", 1, 2, 0, counts, idx, pool)
    case("tfidf_tf_trigrams_only", x, "TF", 3, 3, 3, counts, idx, pool)
    # two n-grams on output 1, none on outputs 3 and 5
    case("tfidf_tf_shared_index_1d", np.array([5, 6, 5, 7, 6, 5], np.int32), "TF", 1, 2, 1,
         [0, 3], [1, 0, 1, 4, 2, 6], [5, 6, 7, 5, 6, 6, 5, 7, 5])
    # skips far past the row
    case("tfidf_tf_long_skip", np.array([[3, 1, 3], [1, 1, 1]], np.int32), "TF", 1, 2, 100,
         [0, 2], [0, 1, 2, 3], [1, 3, 3, 3, 1, 1])
    # a one-token row: no 2-gram fits
    case("tfidf_tfidf_one_token", np.array([[7], [8]], np.int64), "TFIDF", 1, 2, 2, [0, 1],
         [0, 1], [7, 7, 8], [2.0, 3.0])


def roi_tests(w):
    def case(name, x, rois, bidx, opset=16, **attrs):
        half = attrs.get("coordinate_transformation_mode",
                         "half_pixel" if opset >= 16 else "output_half_pixel") == "half_pixel"
        y = roi_align(x, rois, bidx, attrs.get("mode", "avg"), attrs.get("output_height", 1),
                      attrs.get("output_width", 1), attrs.get("sampling_ratio", 0),
                      attrs.get("spatial_scale", 1.0), half)
        w(name, [node("RoiAlign", ["x", "rois", "batch_indices"], ["y"], **attrs)],
          [("x", x), ("rois", rois), ("batch_indices", bidx)], [("y", y)], opset)

    x = RNG.standard_normal((2, 3, 6, 7)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 5.5, 4.0], [2.0, 0.0, 12.0, 10.0], [-3.0, -2.0, 4.0, 3.0],
                     [6.0, 5.0, 1.0, 2.0]], np.float32)  # inside, half out, corner, reversed
    bidx = np.array([1, 0, 1, 0], np.int64)
    case("roialign_adaptive_avg", x, rois, bidx, output_height=3, output_width=2,
         spatial_scale=0.5)
    case("roialign_adaptive_max", x, rois, bidx, mode="max", output_height=2, output_width=3)
    case("roialign_adaptive_output_half_pixel", x, rois, bidx, output_height=2, output_width=2,
         coordinate_transformation_mode="output_half_pixel", spatial_scale=1.5)
    # regions far larger than the image: more samples per bin than H + 8
    big = np.array([[-40.0, -30.0, 60.0, 50.0], [-100.0, 2.0, 3.0, 90.0],
                    [10.0, 10.0, 90.0, 95.0]], np.float32)
    case("roialign_huge_rois_avg", x, big, np.array([0, 1, 1], np.int64), output_height=2,
         output_width=2)
    case("roialign_huge_rois_max", x, big, np.array([1, 0, 0], np.int64), mode="max",
         output_height=3, output_width=2)
    case("roialign_opset10_max", x, rois, bidx, opset=10, mode="max", output_height=2,
         output_width=2, sampling_ratio=3, spatial_scale=0.75)
    x64 = RNG.standard_normal((1, 2, 5, 4))
    case("roialign_float64", x64, np.array([[0.2, 0.4, 3.1, 4.3], [1.0, 1.0, 1.2, 1.1]]),
         np.array([0, 0], np.int64), output_height=2, output_width=3, sampling_ratio=2)


def det_tests(w):
    def case(name, x):
        y = np.linalg.det(x.astype(np.float64)).astype(x.dtype)
        w(name, [node("Det", ["x"], ["y"])], [("x", x)], [("y", np.asarray(y, x.dtype))], 11)

    case("det_batch_4x4", RNG.standard_normal((2, 3, 4, 4)).astype(np.float32))
    case("det_6x6_float64", RNG.standard_normal((6, 6)))
    case("det_singular", np.array([[1, 2, 3], [2, 4, 6], [1, 1, 1]], np.float32))
    case("det_zero_column", np.array([[0, 1, 2], [0, 3, 1], [0, 1, 5]], np.float32))
    case("det_needs_pivot", np.array([[0, 1, 2], [3, 0, 1], [1, 1, 0]], np.float32))
    case("det_1x1", np.array([[[2.5]], [[-4.0]]], np.float32))


# ---- models the importer refuses ------------------------------------------------------------


def bad_models():
    shutil.rmtree(BAD, ignore_errors=True)
    os.makedirs(BAD)

    def save(name, op, inputs, opset, **attrs):
        vi = lambda n, a: helper.make_tensor_value_info(n, NP_TYPE_TO_TENSOR_TYPE[a.dtype],
                                                        list(a.shape))
        nd = helper.make_node(op, [n for n, _ in inputs], ["y"], name=name, **attrs)
        g = helper.make_graph([nd], name, [vi(n, a) for n, a in inputs],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(BAD, name + ".onnx"))

    tok = [("x", np.zeros((2, 5), np.int64))]
    good = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0,
                ngram_counts=[0, 2], ngram_indexes=[0, 1, 2], pool_int64s=[1, 2, 1, 2])

    def tfidf(name, inputs=tok, **change):
        save(name, "TfIdfVectorizer", inputs, 9, **dict(good, **change))

    tfidf("bad_tfidf_mode", mode="BM25")
    tfidf("bad_tfidf_gram_lengths", min_gram_length=3, max_gram_length=2)
    tfidf("bad_tfidf_skip_negative", max_skip_count=-1)
    tfidf("bad_tfidf_counts_start", ngram_counts=[1, 2])
    tfidf("bad_tfidf_counts_falling", ngram_counts=[0, 3, 2])
    tfidf("bad_tfidf_counts_span", ngram_counts=[0, 1])
    tfidf("bad_tfidf_indexes_count", ngram_indexes=[0, 1])
    tfidf("bad_tfidf_index_negative", ngram_indexes=[0, -1, 2])
    tfidf("bad_tfidf_weights_count", weights=[1.0, 2.0])
    tfidf("bad_tfidf_weight_missing", ngram_indexes=[0, 1, 5], weights=[1.0, 2.0, 3.0])
    tfidf("bad_tfidf_strings", pool_strings=["a", "b"])
    tfidf("bad_tfidf_float_tokens", inputs=[("x", np.zeros((2, 5), np.float32))])
    tfidf("bad_tfidf_3d_tokens", inputs=[("x", np.zeros((2, 2, 5), np.int32))])

    roi = [("x", np.zeros((1, 2, 4, 4), np.float32)), ("rois", np.zeros((3, 4), np.float32)),
           ("batch_indices", np.zeros((3,), np.int64))]
    save("bad_roialign_mode", "RoiAlign", roi, 16, mode="sum")
    save("bad_roialign_coordinate_mode", "RoiAlign", roi, 16,
         coordinate_transformation_mode="asymmetric")
    save("bad_roialign_output_height", "RoiAlign", roi, 16, output_height=0)
    save("bad_roialign_sampling_ratio", "RoiAlign", roi, 16, sampling_ratio=-1)
    save("bad_roialign_rois_shape", "RoiAlign",
         [roi[0], ("rois", np.zeros((3, 5), np.float32)), roi[2]], 16)
    save("bad_roialign_index_count", "RoiAlign",
         [roi[0], roi[1], ("batch_indices", np.zeros((2,), np.int64))], 16)
    save("bad_roialign_3d", "RoiAlign", [("x", np.zeros((2, 4, 4), np.float32))] + roi[1:], 16)
    save("bad_roialign_opset10_coordinate_mode", "RoiAlign", roi, 10,
         coordinate_transformation_mode="half_pixel")

    save("bad_det_vector", "Det", [("x", np.zeros((3,), np.float32))], 11)
    save("bad_det_not_square", "Det", [("x", np.zeros((2, 3, 4), np.float32))], 11)
    save("bad_det_int", "Det", [("x", np.zeros((3, 3), np.int32))], 11)


def main():
    check_references()
    w = Writer(OUT, "kiln make_misc_node_tests.py")
    tfidf_tests(w)
    roi_tests(w)
    det_tests(w)
    bad_models()


if __name__ == "__main__":
    main()
