"""kiln.pattern: the pattern language from Python, matching, rewrites with
callbacks (pre, post, node_map) run by the C engine, and partitioning."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln
from kiln import op
from kiln.pattern import (DFPatternCallback, dominates, is_class, is_constant, is_op,
                          is_op_where, parse, partition, rewrite, wildcard)


def conv_graph():
    g = kiln.Graph()
    x = g.var("x", (1, 2, 6, 6))
    w = np.ones((2, 2, 3, 3), "float32")
    c = op.nn.conv2d(x, w, padding=[1, 1, 1, 1])
    b = op.nn.bias_add(c, np.ones(2, "float32"), axis=1)
    r = op.nn.relu(b)
    g.set_outputs([op.add(r, x)])
    return g.infer_types(), (x, c, b, r)


def test_constructors_match_and_text():
    g, (x, c, b, r) = conv_graph()
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    pat = is_op("nn.relu")(is_op("nn.bias_add")(conv, is_constant()))
    assert pat.match(r) and not pat.match(b)
    assert "nn.conv2d(*, const)" in pat.text()
    alt = is_op("nn.relu")(wildcard()) | is_op("nn.bias_add")(wildcard(), wildcard())
    assert alt.match(r) and alt.match(b) and not alt.match(c)
    assert conv.has_attr({"padding": [1, 1, 1, 1]}).match(c)
    assert not conv.has_attr({"groups": 2}).match(c)
    assert wildcard().has_dtype("float32").has_shape([1, 2, None, 6]).match(r)
    assert not wildcard().has_shape([1, 3, 6, 6]).match(r)
    assert is_op("nn.relu")(wildcard()).optional("nn.relu").match(r)
    assert wildcard().optional(lambda p: is_op("nn.relu")(p)).match(b)
    assert is_class("elemwise")(wildcard()).match(r) and not is_class("elemwise").match(c)
    assert is_op_where(lambda n: n.op.startswith("nn.b"))(wildcard(), wildcard()).match(b)
    d = dominates(conv, is_class("broadcast")(wildcard()) | is_class("broadcast")(
        wildcard(), wildcard()), is_op("nn.relu")(wildcard()))
    assert d.match(r)
    p = parse("nn.relu(nn.bias_add(%c=nn.conv2d(*, const), const))")
    assert p.match(r) and p.named("c").match(c)
    # one pattern object twice binds one node
    same = wildcard()
    assert not is_op("add")(same, same).match(g.outputs[0])
    g2 = kiln.Graph()
    a = g2.var("a", (3,))
    assert is_op("add")(same, same).match(op.add(a, a))
    with pytest.raises(kiln.KilnError):
        parse("nn.relu(").match(r)


def test_rewrite_callback_node_map_and_skip(tmp_path):
    g, _ = conv_graph()
    data, w, bias = wildcard(), is_constant(), is_constant()
    pat = is_op("nn.bias_add")(is_op("nn.conv2d")(data, w), bias)
    seen = {}

    def cb(pre, post, node_map):
        seen["pre"] = pre.op
        seen["keys"] = {k for k in node_map}
        assert node_map[w][0].value.shape == (2, 2, 3, 3)
        assert kiln.pattern.uses(pre.inputs[0]) == 1
        assert post.op == "nn.bias_add" and post.inputs[0].op == "nn.conv2d"
        assert node_map[pat][0] is post  # TVM: node_map[self.pattern][0] is post
        return post.graph.call("nn.conv2d", node_map[data][0], node_map[w][0],
                               padding=[1, 1, 1, 1], name="conv_no_bias") + \
            post.graph.call("reshape", node_map[bias][0], newshape=[2, 1, 1])

    g2 = rewrite(pat, cb, g)
    assert seen["pre"] == "nn.bias_add" and {data, w, bias} <= seen["keys"]
    assert "nn.bias_add" not in g2.text() and "reshape" in g2.text()
    # the rewritten graph computes the same
    x = np.random.randn(1, 2, 6, 6).astype("float32")
    outs = []
    for gg in (g, g2):
        pkg = kiln.graph.compile(gg, str(tmp_path / f"rw{len(outs)}.tar"))
        outs.append(kiln.runtime.load(pkg).run([x])[0])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    # returning None leaves every match alone
    assert rewrite(pat, lambda pre, post, m: None, g).text() == g.text()


def test_seed001_fold_quantize_callback(root):
    """Seed 001: fold the quantize of a constant into a constant, with the
    example's callback and graph (examples/python/pattern_pass.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "pattern_pass", os.path.join(root, "examples", "python", "pattern_pass.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    g = ex.qdq_graph()
    g2 = rewrite(ex.FoldQuantize(), g)
    assert "round" not in g2.text() and "divide" not in g2.text()
    folded = [n for n in g2.nodes if n.op == "const" and n.dtype == "int8"]
    assert len(folded) == 1
    ref = np.clip(np.round(np.linspace(-1, 1, 64).astype("float32") / np.float32(0.01)) + 3,
                  -128, 127)
    np.testing.assert_array_equal(folded[0].value, ref.astype("int8"))


def test_callback_errors_reach_python():
    g, _ = conv_graph()

    def bad(pre, post, node_map):
        raise KeyError("no such thing in the callback")

    with pytest.raises(kiln.KilnError) as ei:
        rewrite(is_op("nn.relu")(wildcard()), bad, g)
    assert "no such thing in the callback" in str(ei.value) and "Traceback" in str(ei.value)
    with pytest.raises(kiln.KilnError, match="node of post.graph"):
        rewrite(is_op("nn.relu")(wildcard()), lambda pre, post, m: pre, g)


def test_partition_with_check():
    g, _ = conv_graph()
    pat = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()),
                                                is_constant()))
    g2 = partition(pat, g, {"Composite": "my.conv_bias_relu"})
    comps = [n for n in g2.nodes if n.op == "composite"]
    assert len(comps) == 1 and comps[0].attr("Composite", "") == "my.conv_bias_relu"
    assert [n.op for n in comps[0].body.nodes if n.op not in ("var", "const")] == [
        "nn.conv2d", "nn.bias_add", "nn.relu"]
    g3 = pat.partition(g, {"Composite": "x.y"}, check=lambda root: False)
    assert not [n for n in g3.nodes if n.op == "composite"]


def test_post_wraps_and_alternatives_take_args():
    g, (x, c, b, r) = conv_graph()
    # wrap each relu in a clip: post is the call as TVM's post is
    relu = is_op("nn.relu")(wildcard())

    def cb(pre, post, node_map):
        return op.clip(post, a_min=0.0, a_max=6.0)

    g2 = rewrite(relu, cb, g, once=True)  # wrapping what it matches: one round
    assert g2.text().count("clip(") == 1 and g2.text().count("nn.relu(") == 1
    with pytest.raises(kiln.KilnError, match="still matching"):
        rewrite(relu, cb, g)  # to a fixed point it never settles

    class Wrap(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.pattern = relu

        def callback(self, pre, post, node_map):
            return op.clip(node_map[self.pattern][0], a_min=0.0, a_max=6.0)

    assert rewrite(Wrap(), g).text() == g2.text()
    alt = (is_op("add") | is_op("subtract"))(wildcard(), wildcard())
    assert alt.match(g.outputs[0])
    assert kiln.pattern.has_attr({"axis": 1}).match(b) and not kiln.pattern.has_attr(
        {"axis": 2}).match(b)


def test_predicate_errors_are_raised_not_swallowed():
    g, (x, c, b, r) = conv_graph()

    def bad(n):
        raise ZeroDivisionError("the check divided by zero")

    with pytest.raises(kiln.KilnError, match="divided by zero"):
        partition(is_op("nn.relu")(wildcard()), g, {"Composite": "x.y"}, check=bad)
    with pytest.raises(kiln.KilnError, match="divided by zero"):
        is_op_where(bad)(wildcard()).match(r)
    with pytest.raises(kiln.KilnError, match="divided by zero"):
        rewrite(is_op_where(bad)(wildcard()), lambda pre, post, m: None, g)
    # and the engine is fine afterwards
    assert is_op("nn.relu")(wildcard()).match(r)


def test_pre_is_read_only():
    g, _ = conv_graph()

    def cb(pre, post, node_map):
        pre.graph.call("nn.relu", pre)  # building in pre is refused

    with pytest.raises(kiln.KilnError, match="read-only"):
        rewrite(is_op("nn.relu")(wildcard()), cb, g)
