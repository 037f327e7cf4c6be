"""kiln.quantize / kiln quantize: a QDQ model that ONNX Runtime runs too,
and that kiln and ONNX Runtime agree on."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln
from conftest import run_py


def test_quantize_digits_runs_in_onnxruntime(digits_onnx, digits_data, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    out = str(tmp_path / "digits_int8.onnx")
    report = kiln.quantize(digits_onnx, {"input": digits_data["input"][:96]}, out)
    assert "4 activations" in report and "per channel" in report
    onnx.checker.check_model(onnx.load(out))
    x = digits_data["input"]
    f = ort.InferenceSession(digits_onnx, providers=["CPUExecutionProvider"]).run(None,
                                                                                {"input": x})[0]
    q = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    g = kiln.from_onnx(out, shape_dict={"input": [360, 1, 8, 8]})
    k = kiln.runtime.load(kiln.graph.compile(g, str(tmp_path / "q.tar"))).run([x])[0]
    assert (f.argmax(1) == q.argmax(1)).mean() >= 0.99  # int8 keeps the float answers
    assert (k.argmax(1) == q.argmax(1)).mean() >= 0.99  # kiln and ORT agree on the int8 model
    assert np.abs(k - q).max() <= 0.02 * np.abs(q).max()


def test_quantize_cli(digits_onnx, digits_data, tmp_path):
    np.savez(tmp_path / "calib.npz", input=digits_data["input"][:64])
    out = str(tmp_path / "m.onnx")
    r = run_py(["-m", "kiln", "quantize", digits_onnx, "--calibration",
                str(tmp_path / "calib.npz"), "-o", out, "--method", "percentile", "--per-tensor"])
    assert "percentile over 64 samples" in r.stdout and "per tensor" in r.stdout
    assert os.path.getsize(out) > 0
    r = run_py(["-m", "kiln", "quantize", digits_onnx, "-o", out], check=False)
    assert r.returncode == 2 and "--calibration" in r.stderr
    with pytest.raises(kiln.KilnError, match="no array 'input'"):
        kiln.quantize(digits_onnx, {"pixels": digits_data["input"][:8]}, out)
