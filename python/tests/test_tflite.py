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
