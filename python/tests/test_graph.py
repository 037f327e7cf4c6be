"""kiln.graph and kiln.transform: graphs from op functions and ONNX, the
text IR both ways, passes by name and in Python, compile, and user ops."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kiln
from kiln import op


def small_graph():
    g = kiln.Graph()
    x = g.var("x", (1, 3, 8, 8))
    w = np.random.RandomState(0).randn(4, 3, 3, 3).astype("float32")
    y = op.nn.conv2d(x, w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])
    y = op.nn.relu(op.nn.bias_add(y, np.arange(4, dtype="float32"), axis=1))
    g.set_outputs([y], ["y"])
    return g, w


def conv_ref(x, w, b):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 4, 8, 8), "float32")
    for o in range(4):
        for i in range(8):
            for j in range(8):
                out[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[o]).sum() + b[o]
    return np.maximum(out, 0)


def test_build_print_parse_compile_run(tmp_path):
    g, w = small_graph()
    g.infer_types()
    out = g.outputs[0]
    assert out.op == "nn.relu" and out.shape == (1, 4, 8, 8) and out.dtype == "float32"
    conv = out.inputs[0].inputs[0]
    assert conv.op == "nn.conv2d" and conv.attr("channels") == 4
    assert conv.attr("data_layout", "") == "NCHW"
    np.testing.assert_array_equal(conv.inputs[1].value, w)
    text = g.text()
    assert "nn.conv2d" in text and "meta[relay.Constant][0]" in text
    g2 = kiln.graph.parse(text, g.constants())
    assert g2.text() == text
    pkg = kiln.graph.compile(g2, str(tmp_path / "m.tar"), target="llvm")
    x = np.random.randn(1, 3, 8, 8).astype("float32")
    (y,) = kiln.runtime.load(pkg).run({"x": x})
    np.testing.assert_allclose(y, conv_ref(x, w, np.arange(4)), rtol=1e-4, atol=1e-4)
    counts = g.op_counts()
    assert re.search(r"nn\.conv2d\s+1\n", counts) and re.search(r"nn\.relu\s+1\n", counts)
    assert conv.attrs == {"padding": [1, 1, 1, 1], "channels": 4, "kernel_size": [3, 3]}


def test_node_arithmetic_tuple_and_symbolic(tmp_path):
    g = kiln.Graph()
    a = g.var("a", ("n", 4))
    b = g.var("b", ("n", 4))
    s = a + b * 2.0 - 1.0
    t = g.tuple([s, -a])
    g.set_outputs([t[0], t[1]])
    g.infer_types()
    assert g.outputs[0].shape == (None, 4)
    pkg = kiln.graph.compile(g, str(tmp_path / "sym.tar"))
    m = kiln.runtime.load(pkg)
    assert m.inputs[0].shape == ("n", 4)
    av = np.random.randn(3, 4).astype("float32")
    bv = np.random.randn(3, 4).astype("float32")
    y0, y1 = m.run([av, bv])
    np.testing.assert_allclose(y0, av + bv * 2 - 1, rtol=1e-6)
    np.testing.assert_array_equal(y1, -av)


def test_graph_errors():
    g = kiln.Graph()
    x = g.var("x", (2, 2))
    with pytest.raises(kiln.KilnError, match="no_such_op"):
        op.no_such_op(x)
    with pytest.raises(kiln.KilnError, match="nn.conv2d"):
        op.nn.conv2d(x, x, strides="wrong")
    with pytest.raises(kiln.KilnError):
        kiln.graph.parse("def @main( {")
    with pytest.raises(kiln.KilnError, match="nope.onnx"):
        kiln.from_onnx("/nonexistent/nope.onnx")
    other = kiln.Graph()
    y = other.var("y", (2, 2))
    with pytest.raises(kiln.KilnError, match="another graph"):
        g.call("add", x, y)


def test_from_onnx_path_and_modelproto(digits_onnx, digits_data, tmp_path):
    onnx = pytest.importorskip("onnx")
    g1 = kiln.from_onnx(digits_onnx, shape_dict={"input": [4, 1, 8, 8]})
    g2 = kiln.from_onnx(onnx.load(digits_onnx), shape_dict={"input": [4, 1, 8, 8]})
    assert g1.op_counts() == g2.op_counts()
    c1, c2 = g1.constants(), g2.constants()
    assert c1.keys() == c2.keys() and all(np.array_equal(c1[k], c2[k]) for k in c1)
    assert re.sub(r'span="[^"]*"', "", g1.text()) == re.sub(r'span="[^"]*"', "", g2.text())
    pkg = kiln.graph.compile(g2, str(tmp_path / "d.tar"))
    ref = np.load(os.path.join(os.path.dirname(digits_onnx), "reference_logits.npz"))["logits"]
    (y,) = kiln.runtime.load(pkg).run([digits_data["input"][:4]])
    np.testing.assert_allclose(y, ref[:4], rtol=1e-4, atol=1e-4)
    with pytest.raises(kiln.KilnError):
        kiln.from_onnx(b"not a protobuf at all")


def test_user_op_from_plugin(build_dir, tmp_path):
    plugin = os.path.join(build_dir, "examples", "libkiln_cumsum.so")
    kiln.load_plugin(plugin)
    g = kiln.Graph()
    x = g.var("x", (2, 5))
    y = op.contrib.cumsum(x, axis=1)
    g.set_outputs([y])
    pkg = kiln.graph.compile(g, str(tmp_path / "cumsum.tar"))
    xv = np.random.randn(2, 5).astype("float32")
    (yv,) = kiln.runtime.load(pkg).run([xv])
    np.testing.assert_allclose(yv, np.cumsum(xv, 1), rtol=1e-5, atol=1e-6)


# ---- passes -------------------------------------------------------------------


def bn_graph():
    g = kiln.Graph()
    x = g.var("x", (1, 2, 4, 4))
    r = np.random.RandomState(1)
    p = [r.rand(2).astype("float32") + 0.5 for _ in range(4)]
    y = op.nn.batch_norm(x, *p)  # one output in kiln (inference)
    g.set_outputs([y])
    return g


def test_passes_by_name_sequential_and_dump(tmp_path):
    passes = kiln.transform.list_passes()
    assert passes["SimplifyInference"] == 0 and passes["FoldConstant"] == 2
    g = bn_graph()
    g2 = kiln.transform.run_pass(g, "SimplifyInference")
    assert "nn.batch_norm" in g.text() and "nn.batch_norm" not in g2.text()
    seq = kiln.transform.Sequential(["SimplifyInference", "FoldConstant", "SimplifyExpr"],
                                    opt_level=1, dump_ir=str(tmp_path / "dump"))
    g3 = seq(g)
    assert "nn.batch_norm" not in g3.text()
    dumps = sorted(os.listdir(tmp_path / "dump"))
    assert dumps == ["00_input_graph.txt", "01_after_SimplifyInference.txt"]  # levels > 1 skip
    g4 = kiln.transform.Sequential(["SimplifyInference"], disabled_pass=["SimplifyInference"])(g)
    assert "nn.batch_norm" in g4.text()
    with pytest.raises(kiln.KilnError, match="FuseOps"):
        kiln.transform.run_pass(g, "FuseOps")
    with pytest.raises(kiln.KilnError, match="NoSuchPass"):
        kiln.transform.run_pass(g, "NoSuchPass")


def test_python_pass_in_sequential_and_compile(tmp_path):
    calls = []

    @kiln.register_pass("test.double_to_add", override=True)
    def double_to_add(g: kiln.Graph) -> kiln.Graph:
        calls.append(len(g))
        from kiln.pattern import is_op, rewrite, wildcard

        x = wildcard()
        pat = is_op("multiply")(x, kiln.pattern.is_constant())

        def cb(pre, post, node_map):
            c = pre.inputs[1].value
            if c is None or c.size != 1 or float(c.reshape(-1)[0]) != 2.0:
                return None
            xv = node_map[x][0]
            return post.graph.call("add", xv, xv)

        return rewrite(pat, cb, g)

    g = kiln.Graph()
    a = g.var("a", (4,))
    g.set_outputs([a * 2.0])
    out = kiln.transform.Sequential(["test.double_to_add"])(g)
    assert "add(%a, %a)" in out.text() and "multiply" not in out.text()
    assert "test.double_to_add" in kiln.list_global_func_names()
    pkg = kiln.graph.compile(g, str(tmp_path / "p.tar"), pass_="test.double_to_add",
                             dump_ir=str(tmp_path / "ir"))
    assert any("after_test.double_to_add" in f for f in os.listdir(tmp_path / "ir"))
    av = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(kiln.runtime.load(pkg).run([av])[0], av * 2)
    assert len(calls) == 2

    @kiln.register_pass("test.broken", override=True)
    def broken(g):
        raise RuntimeError("this pass is broken on purpose")

    with pytest.raises(kiln.KilnError) as ei:
        kiln.graph.compile(g, str(tmp_path / "b.tar"), pass_="test.broken")
    msg = str(ei.value)
    assert "pass test.broken" in msg and "broken on purpose" in msg and "Traceback" in msg
    with pytest.raises(kiln.KilnError, match="unknown pass"):
        kiln.graph.compile(g, str(tmp_path / "c.tar"), pass_="test.not_registered")


def test_numpy_values_as_arguments():
    g = kiln.Graph()
    x = g.var("x", np.array([2, 3]))  # numpy ints are sizes, not names
    assert g.infer_types().node(x.id).shape == (2, 3)
    y = g.var("y", (np.int64(2), "n"), dtype=np.float32)
    assert y.dtype == "float32" and g.infer_types().node(y.id).shape == (2, None)
    with pytest.raises(TypeError):
        g.var("z", (2.5,))


def test_views_are_read_only_and_keep_their_owner():
    import gc

    from kiln.pattern import is_op, partition, wildcard

    g = kiln.Graph()
    x = g.var("x", (4,))
    g.set_outputs([op.nn.relu(op.abs(x))])
    p = partition(is_op("nn.relu")(is_op("abs")(wildcard())), g, {"Composite": "t.ar"})
    body = [n for n in p.nodes if n.op == "composite"][0].body
    del p
    gc.collect()
    assert [n.op for n in body.nodes] == ["var", "abs", "nn.relu"]  # still alive
    with pytest.raises(kiln.KilnError, match="read-only"):
        body.var("y", (2,))


def test_pass_context_and_pass_objects(tmp_path):
    T = kiln.transform
    g = bn_graph()
    assert isinstance(T.SimplifyInference(), T.Pass)
    assert "nn.batch_norm" not in T.SimplifyInference()(g).text()
    seq = T.Sequential([T.SimplifyInference(), T.FoldConstant()])
    with T.PassContext(opt_level=1):
        assert seq.opt_level == 1
        with T.PassContext(opt_level=3, disabled_pass=["SimplifyInference"]):
            assert "nn.batch_norm" in seq(g).text()
        assert "nn.batch_norm" not in seq(g).text()
    assert seq.opt_level == 3
    # compile reads the context: a disabled SimplifyInference leaves the
    # batch norm to lower as it is, and dumps show the pipeline it ran
    with T.PassContext(opt_level=3, disabled_pass=["FoldConstant"], config={"cache": False}):
        kiln.graph.compile(g, str(tmp_path / "c.tar"), dump_ir=str(tmp_path / "ir"))
    names = os.listdir(tmp_path / "ir")
    assert any("SimplifyInference" in n for n in names)
    assert not any("FoldConstant" in n for n in names)
