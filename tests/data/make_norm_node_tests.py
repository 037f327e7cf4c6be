"""Writes tests/data/norm_nodes: node tests in the ONNX backend layout for
kiln's normalizations and losses (src/ops/norm.c, nn.c; their converters in
src/frontend/onnx_convert_nn.c), run by kiln_conformance --data (the
norm_node_tests test in tests/CMakeLists.txt).

They cover what the ONNX node tests miss: LRN with an even size, a size
past the channel count, 3-D and float64 inputs; InstanceNormalization of
3-D and 5-D inputs; MeanVarianceNormalization over other axes (negative at
opset 13); NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss at opset
12, with int32 targets, the default reduction, every target ignored (the
mean is 0 / 0 = NaN) and 2-D scores; BatchNormalization in training mode
with a momentum, 2-D and 3-D inputs and some outputs left out; Dropout in
training mode where its output is determined (ratio 0, constant or given
at run time, or training_mode false given at run time; a random mask is
tested by property in tests/unit/test_ops_library.c). The expected outputs are computed here with
plain loops in float64 from the operator definitions, independently of
kiln.

Run with /usr/bin/python3 (Debian's python3-onnx); it rewrites the folder."""
import math
import os

import numpy as np

from node_test_writer import Writer, node

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "norm_nodes")
RNG = np.random.default_rng(7)


put = None  # the Writer, made in main (it empties OUT)


# ---- references ------------------------------------------------------------------


def lrn(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    c_count = x.shape[1]
    y = np.empty_like(x)
    lo, hi = (size - 1) // 2, math.ceil((size - 1) / 2)
    for idx in np.ndindex(x.shape):
        c = idx[1]
        s = sum(float(x[idx[:1] + (k,) + idx[2:]]) ** 2
                for k in range(max(0, c - lo), min(c_count - 1, c + hi) + 1))
        y[idx] = float(x[idx]) / (bias + alpha / size * s) ** beta
    return y


def instance_norm(x, scale, b, eps):
    y = np.empty_like(x)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            v = x[n, c].astype(np.float64)
            m = v.sum() / v.size
            var = ((v - m) ** 2).sum() / v.size
            y[n, c] = (v - m) / math.sqrt(var + eps) * scale[c] + b[c]
    return y


def mvn(x, axes):
    axes = tuple(a % x.ndim for a in axes)
    v = x.astype(np.float64)
    m = v.mean(axis=axes, keepdims=True)
    msq = (v * v).mean(axis=axes, keepdims=True)
    return ((v - m) / (np.sqrt(msq - m * m) + 1e-9)).astype(x.dtype)


def log_softmax_axis1(x):
    v = x.astype(np.float64)
    m = v.max(axis=1, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(axis=1, keepdims=True))


def nll(x, t, w=None, ii=None, reduction="mean"):
    """Per target: -x[n, t, d..] * w[t], 0 where ignored; the mean divides by
    the summed weights of the targets not ignored."""
    loss = np.zeros(t.shape)
    wsum = 0.0
    for idx in np.ndindex(t.shape):
        c = int(t[idx])
        if ii is not None and c == ii:
            continue
        wt = 1.0 if w is None else float(w[c])
        loss[idx] = -float(x[idx[:1] + (c,) + idx[1:]]) * wt
        wsum += wt
    if reduction == "none":
        return loss.astype(x.dtype)
    if reduction == "sum":
        return np.array(loss.sum(), x.dtype)
    with np.errstate(invalid="ignore"):
        return np.array(loss.sum() / wsum if wsum else np.nan, x.dtype)


def bn_train(x, s, b, mean, var, eps, mom):
    axes = tuple(d for d in range(x.ndim) if d != 1)
    v = x.astype(np.float64)
    bm, bv = v.mean(axis=axes), v.var(axis=axes)
    sh = [1] * x.ndim
    sh[1] = -1
    y = (v - bm.reshape(sh)) / np.sqrt(bv.reshape(sh) + eps) * s.reshape(sh) + b.reshape(sh)
    return (y.astype(x.dtype), (mean * mom + bm * (1 - mom)).astype(x.dtype),
            (var * mom + bv * (1 - mom)).astype(x.dtype))


def main():
    global put
    put = Writer(OUT, "kiln make_norm_node_tests.py")
    f32 = lambda *s: RNG.standard_normal(s).astype(np.float32)
    # LRN
    x = f32(2, 4, 3, 3)
    put("lrn_even_size", [node("LRN", ["x"], ["y"], size=4, alpha=0.3, beta=0.6, bias=1.5)],
        [("x", x)], [("y", lrn(x, 4, 0.3, 0.6, 1.5))], 13)
    x = f32(2, 3, 5)
    put("lrn_size_past_channels_3d", [node("LRN", ["x"], ["y"], size=7, alpha=0.5)],
        [("x", x)], [("y", lrn(x, 7, 0.5))], 1)
    x = RNG.standard_normal((1, 6, 2, 2))
    put("lrn_float64", [node("LRN", ["x"], ["y"], size=5)], [("x", x)], [("y", lrn(x, 5))], 13)
    # InstanceNormalization
    x, s, b = f32(2, 3, 7), f32(3), f32(3)
    put("instancenorm_3d", [node("InstanceNormalization", ["x", "s", "b"], ["y"])],
        [("x", x), ("s", s), ("b", b)], [("y", instance_norm(x, s, b, 1e-5))], 6)
    x, s, b = (RNG.standard_normal(d) for d in ((2, 2, 2, 3, 2), (2,), (2,)))
    put("instancenorm_5d_float64",
        [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
        [("x", x), ("s", s), ("b", b)], [("y", instance_norm(x, s, b, 1e-3))], 6)
    # MeanVarianceNormalization
    x = f32(2, 3, 4, 5)
    put("mvn_negative_axes", [node("MeanVarianceNormalization", ["x"], ["y"], axes=[-1, -2])],
        [("x", x)], [("y", mvn(x, [-1, -2]))], 13)
    x = f32(3, 4, 2)
    put("mvn_opset9_axis1", [node("MeanVarianceNormalization", ["x"], ["y"], axes=[1])],
        [("x", x)], [("y", mvn(x, [1]))], 9)
    # NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
    x, w = f32(4, 5, 3), np.abs(f32(5))
    t = RNG.integers(0, 5, (4, 3)).astype(np.int32)
    t[0, 1] = t[2, 2] = 2
    put("nllloss_opset12_int32_weight_ii",
        [node("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["y"], ignore_index=2)],
        [("x", x), ("t", t), ("w", w)], [("y", nll(x, t, w, 2))], 12)
    t = np.full((4, 3), -100, np.int64)
    put("nllloss_all_ignored_mean_nan",
        [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=-100)],
        [("x", x), ("t", t)], [("y", nll(x, t, None, -100))], 13)
    t = RNG.integers(0, 5, (4, 3))
    t[1, 0] = -100
    put("nllloss_default_reduction_weight",
        [node("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["y"], ignore_index=-100)],
        [("x", x), ("t", t), ("w", w)], [("y", nll(x, t, w, -100))], 13)
    x2, t2 = f32(6, 4), np.array([3, 0, 1, 1, 7, 2], np.int64)
    w2 = np.abs(f32(4))
    lp = log_softmax_axis1(x2)
    put("sce_opset12_2d_sum_ii_log_prob",
        [node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y", "lp"], reduction="sum",
              ignore_index=7)],
        [("x", x2), ("t", t2), ("w", w2)],
        [("y", nll(lp, t2, w2, 7, "sum").astype(np.float32)), ("lp", lp.astype(np.float32))], 12)
    x4 = f32(2, 3, 2, 2)
    t4 = RNG.integers(0, 3, (2, 2, 2)).astype(np.int32)
    put("sce_4d_none_int32", [node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"],
                                   reduction="none")],
        [("x", x4), ("t", t4)], [("y", nll(log_softmax_axis1(x4), t4, None, None,
                                         "none").astype(np.float32))], 13)
    # BatchNormalization in training mode
    x, s, b, m, v = f32(6, 3), f32(3), f32(3), f32(3), np.abs(f32(3))
    y, rm, rv = bn_train(x, s, b, m, v, 1e-3, np.float32(0.6))
    put("batchnorm_training_2d_momentum",
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
              training_mode=1, momentum=0.6, epsilon=1e-3)],
        [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], [("y", y), ("rm", rm), ("rv", rv)],
        14)
    x = f32(2, 4, 5)
    s, b, m, v = f32(4), f32(4), f32(4), np.abs(f32(4))
    y, rm, rv = bn_train(x, s, b, m, v, 1e-5, np.float32(0.9))
    put("batchnorm_training_3d_y_only",
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], training_mode=1)],
        [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], [("y", y)], 15)
    put("batchnorm_training_running_var_only",
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "", "rv"], training_mode=1)],
        [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], [("y", y), ("rv", rv)], 15)
    # Dropout where its output is determined: y = x, the mask all true
    x = f32(3, 4, 5)
    ones = np.ones(x.shape, bool)
    put("dropout_training_false_at_run_time", [node("Dropout", ["x", "r", "t"], ["y", "z"])],
        [("x", x), ("r", np.array(0.3, np.float32)), ("t", np.array(False))],
        [("y", x), ("z", ones)], 13)
    x64 = RNG.standard_normal((4, 5))
    put("dropout_training_ratio0_float64_ratio_shape1",
        [node("Dropout", ["x", "r", "t"], ["y", "z"], seed=3)],
        [("x", x64), ("r", np.zeros(1, np.float32)), ("t", np.array(True))],
        [("y", x64), ("z", np.ones(x64.shape, bool))], 12)
    put("dropout_constant_ratio0_training", [node("Dropout", ["x", "r", "t"], ["y"])],
        [("x", x)], [("y", x)], 13,
        [("r", np.array(0.0, np.float32)), ("t", np.array(True))])
    put("dropout_opset10_mask", [node("Dropout", ["x"], ["y", "z"], ratio=0.4)], [("x", x)],
        [("y", x), ("z", ones)], 10)


if __name__ == "__main__":
    main()
