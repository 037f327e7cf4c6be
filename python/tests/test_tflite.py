"""kiln.from_tflite on the hand-made TFLite models of tests/data/tflite
(make_tflite_tests.py): a path and bytes import alike, the float16 model
compiles and runs as numpy computes it, and bad models raise KilnError
naming what is wrong. (The TFLite interpreter comparisons of real models are
scripts/tflite_models.sh's.)"""
import os

import numpy as np
import pytest

import kiln

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tflite")


def path(name):
    return os.path.join(DATA, name)


def test_from_tflite_path_and_bytes_run(tmp_path):
    g1 = kiln.from_tflite(path("ok_fp16.tflite"))
    with open(path("ok_fp16.tflite"), "rb") as f:
        g2 = kiln.graph.from_tflite(f.read())
    assert g1.op_counts() == g2.op_counts()
    assert "nn.conv2d" in g1.op_counts() and "nn.max_pool2d" in g1.op_counts()
    # the model: a 1x1 convolution by float16 weights [3, 1, 1, 2], then a
    # 2x2 max pool of stride 2, in NHWC
    w = np.array([[0.5, -1.0], [0.25, 2.0], [-0.125, 1.5]], np.float32)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    y = np.einsum("nhwi,oi->nhwo", x, w)
    ref = y.reshape(1, 2, 2, 2, 2, 3).max(axis=(2, 4))
    pkg = kiln.graph.compile(g1, str(tmp_path / "fp16.tar"))
    (got,) = kiln.runtime.load(pkg).run([x])
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_from_tflite_shape_dict():
    g = kiln.from_tflite(path("ok_conv_float.tflite"), shape_dict={"input": [1, 9, 9, 2]})
    assert "(1, 9, 9, 2)" in g.text()


def test_from_tflite_errors():
    with pytest.raises(kiln.KilnError, match="nope.tflite"):
        kiln.from_tflite("/nonexistent/nope.tflite")
    with pytest.raises(kiln.KilnError, match="TFL3"):
        kiln.from_tflite(b"not a flatbuffer")
    with pytest.raises(kiln.KilnError, match=r"CUSTOM 'MyOp' \(operators 1, 3\).*LSTM"):
        kiln.from_tflite(path("unsupported_ops.tflite"))
    with pytest.raises(kiln.KilnError, match="negative dim"):
        kiln.from_tflite(path("bad_negative_shape.tflite"))


def _generator():
    """make_tflite_tests.py, for the weights it wrote (ramp)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_tflite_tests",
                                                  path("make_tflite_tests.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(name, x, tmp_path):
    g = kiln.from_tflite(path(name))
    pkg = kiln.graph.compile(g, str(tmp_path / (name + ".tar")))
    return kiln.runtime.load(pkg).run([x])[0]


def test_conv_float_against_numpy(tmp_path):
    """CONV_2D 3x3 SAME stride 2 + bias, RELU6 -> ADD -> MEAN -> FC -> SOFTMAX."""
    gen = _generator()
    w = np.array(gen.ramp(4 * 3 * 3 * 2), np.float32).reshape(4, 3, 3, 2)  # OHWI
    b = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
    c = np.array(gen.ramp(4, 0.05), np.float32)
    fw = np.array(gen.ramp(3 * 4, 0.2), np.float32).reshape(3, 4)
    x = np.random.default_rng(1).uniform(-1, 1, (1, 5, 5, 2)).astype(np.float32)
    # TFLite's SAME: out 3, total padding (3 - 1) * 2 + 3 - 5 = 2, one each side
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    y = np.zeros((1, 3, 3, 4), np.float32)
    for i in range(3):
        for j in range(3):
            patch = xp[0, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :]
            y[0, i, j] = np.einsum("hwc,ohwc->o", patch, w) + b
    y = np.clip(y, 0, 6) + c
    logits = y.mean(axis=(1, 2)) @ fw.T
    ref = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(_run("ok_conv_float.tflite", x, tmp_path), ref, rtol=1e-5,
                               atol=1e-6)


def test_shape_ops_against_numpy(tmp_path):
    """RESHAPE, TRANSPOSE, STRIDED_SLICE (end and shrink masks), PAD,
    CONCATENATION, GATHER, SPLIT, PACK."""
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    t = x.reshape(2, 3, 2).transpose(0, 2, 1)
    s = t[0, 0:2, 0:]
    p = np.pad(s, [(0, 1), (1, 1)])
    c = np.concatenate([p, p], axis=-1)
    g = c[[2, 0]]
    h0, h1 = np.split(g, 2, axis=1)
    ref = np.stack([h0, h1], axis=0)
    np.testing.assert_array_equal(_run("ok_shapes.tflite", x, tmp_path), ref)


def test_hybrid_fully_connected(tmp_path):
    """A dynamic-range FULLY_CONNECTED quantizes each input row to int8 on
    the fly as TFLite's hybrid kernel (XNNPACK's qd8) does: the range
    [min(x, 0), max(x, 0)] over 255 steps, the zero point of smaller error,
    integer sums rescaled."""
    w = np.array([((i * 29) % 23) - 11 for i in range(24)], np.float32).reshape(3, 8)
    ws = np.array([0.02, 0.05, 0.01], np.float32)
    b = np.array([0.5, -0.25, 0.125], np.float32)
    x = np.random.default_rng(2).uniform(-1, 3, (2, 8)).astype(np.float32)
    mn, mx = np.minimum(0, x.min(1)), np.maximum(0, x.max(1))
    scale = (np.float32(255) / (mx - mn)).astype(np.float32)
    zp = np.where(-128 + mn * scale + 127 + mx * scale > 0, -128 - mn * scale, 127 - mx * scale)
    zp = np.rint(np.clip(zp, -128, 127))
    q = np.clip(np.rint(x * scale[:, None] + zp[:, None]), -128, 127)
    ref = ((q - zp[:, None]) @ w.T) * (1 / scale)[:, None] * ws + b
    got = _run("ok_hybrid_fc.tflite", x, tmp_path)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    # not the float product of the dequantized filter
    assert np.abs(x @ (w * ws[:, None]).T + b - got).max() > 1e-4


def test_reference_kernels(tmp_path):
    """kernels="reference": the int8 model's quantizes round as TFLite's
    reference kernels do, and its requantization lowers to the integer
    fixed_point_multiply; both forms run on the same input."""
    g = kiln.from_tflite(path("ok_int8.tflite"), kernels="reference")
    assert 'rounding="TFLITE"' in g.text()
    lowered = kiln.transform.run_pass(
        kiln.transform.run_pass(g, "FakeQuantizationToInteger"), "QnnCanonicalize")
    assert "fixed_point_multiply" in lowered.op_counts()
    plain = kiln.from_tflite(path("ok_int8.tflite"))
    assert "TFLITE" not in plain.text()
    x = np.random.default_rng(1).uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    outs = []
    for name, graph in (("ref", g), ("plain", plain)):
        pkg = kiln.graph.compile(graph, str(tmp_path / (name + ".tar")))
        outs.append(kiln.runtime.load(pkg).run([x])[0])
    assert outs[0].shape == outs[1].shape
    # both lie on the output's grid and differ by at most one step of it
    # (the smallest gap between the values is at least one step)
    step = np.diff(np.unique(np.concatenate([o.ravel() for o in outs]))).min()
    assert np.abs(outs[0] - outs[1]).max() <= step * 1.001
    with pytest.raises(ValueError, match="'fast': not 'xnnpack' or 'reference'"):
        kiln.from_tflite(path("ok_int8.tflite"), kernels="fast")
