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


def _residual_cnn(path):
    """A small ResNet-style net: two residual blocks (one with a 1x1
    projection), ReLUs, global pooling and a dense layer; random weights."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    inits, nodes = [], []

    def w(name, *shape):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name))
        return name

    def conv(x, name, cin, cout, k):
        nodes.append(helper.make_node("Conv", [x, w(name + "_w", cout, cin, k, k),
                                               w(name + "_b", cout)], [name],
                                      pads=[k // 2] * 4))
        return name

    def relu(x, name):
        nodes.append(helper.make_node("Relu", [x], [name]))
        return name

    x = relu(conv("input", "c0", 3, 16, 3), "r0")
    y = relu(conv(x, "c1", 16, 16, 3), "r1")
    nodes.append(helper.make_node("Add", [conv(y, "c2", 16, 16, 3), x], ["a1"]))
    x = relu("a1", "r2")
    y = relu(conv(x, "c3", 16, 32, 3), "r3")
    nodes.append(helper.make_node("Add", [conv(y, "c4", 32, 32, 3), conv(x, "p4", 16, 32, 1)],
                                  ["a2"]))
    x = relu("a2", "r4")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    nodes.append(helper.make_node("Gemm", ["flat", w("fc_w", 10, 32), w("fc_b", 10)], ["logits"],
                                  transB=1))
    g = helper.make_graph(nodes, "resnet_tiny",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                         [8, 3, 16, 16])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 10])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_quantize_residual_adds(tmp_path):
    """A CNN's residual Adds are quantized too where only convolutions read
    their sums (as ONNX Runtime's QDQ quantizer does), and kiln's int8 run of the model (the QDQ Add folded
    into the convolution's epilogue, the other branch read as uint8) agrees
    with ONNX Runtime's."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    src, out = str(tmp_path / "res.onnx"), str(tmp_path / "res_int8.onnx")
    _residual_cnn(src)
    rng = np.random.default_rng(5)
    calib = rng.uniform(-1, 1, (32, 3, 16, 16)).astype(np.float32)
    kiln.quantize(src, {"input": calib}, out)
    m = onnx.load(out)
    adds = [n for n in m.graph.node if n.op_type == "Add"]
    producers = {o: n.op_type for n in m.graph.node for o in n.output}
    assert len(adds) == 2
    # the first Add's sum (through a ReLU) feeds only convolutions: quantized;
    # the last one's feeds the pooling: left in float
    assert [producers[i] for i in adds[0].input] == ["DequantizeLinear"] * 2
    assert [producers[i] for i in adds[1].input] == ["Conv"] * 2
    x = rng.uniform(-1, 1, (8, 3, 16, 16)).astype(np.float32)
    q = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    f = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    k = kiln.runtime.load(kiln.graph.compile(kiln.from_onnx(out), str(tmp_path / "r.tar"))).run(
        [x])[0]
    assert np.abs(q - f).max() <= 0.1 * np.abs(f).max()  # int8 stays near float
    assert np.abs(k - q).max() <= 0.02 * np.abs(q).max()  # kiln and ORT agree


def test_quantize_leaves_transformer_adds_float(tmp_path):
    """An embedding sum (word + position, then + token type, then a
    LayerNorm) and a residual add a LayerNorm reads stay float: only Adds
    whose sums feed products are quantized."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(2)
    h = 16
    inits = [numpy_helper.from_array(rng.standard_normal((h, h)).astype(np.float32), "w"),
             numpy_helper.from_array(np.ones(h, np.float32), "gamma"),
             numpy_helper.from_array(np.zeros(h, np.float32), "beta")]
    nodes = [helper.make_node("Add", ["word", "pos"], ["e1"]),
             helper.make_node("Add", ["e1", "tt"], ["e2"]),
             helper.make_node("LayerNormalization", ["e2", "gamma", "beta"], ["ln"], axis=-1),
             helper.make_node("MatMul", ["ln", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "ln"], ["res"]),
             helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["out"], axis=-1)]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8, h])
           for n in ("word", "pos", "tt")]
    g = helper.make_graph(nodes, "emb", ins,
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 8, h])],
                          inits)
    src, out = str(tmp_path / "emb.onnx"), str(tmp_path / "emb_int8.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    calib = {n: rng.standard_normal((8, 8, h)).astype(np.float32) for n in ("word", "pos", "tt")}
    kiln.quantize(src, calib, out, batch=2)
    m = onnx.load(out)
    producers = {o: n.op_type for n in m.graph.node for o in n.output}
    adds = [n for n in m.graph.node if n.op_type == "Add"]
    assert len(adds) == 3
    assert all(producers.get(i, "input") != "DequantizeLinear" for a in adds for i in a.input)
    # the MatMul's data is quantized
    mm = next(n for n in m.graph.node if n.op_type == "MatMul")
    assert producers[mm.input[0]] == "DequantizeLinear"
