"""Seed note 001's pattern pass in Python: a DFPatternCallback that folds
the quantization of a constant weight into an int8 constant, registered
as a pass, run by kiln.graph.compile (pass_=...) and checked: the folded
model computes the same outputs.

The same pass runs from the command line when this file is the plugin:
    kiln compile model.onnx --plugin examples/python/pattern_pass.py \
        --pass fold_quantize_of_constant

    PYTHONPATH=python python examples/python/pattern_pass.py
"""

import os
import sys
import tempfile

import kiln
from kiln.pattern import DFPatternCallback, is_constant, is_op, rewrite


class FoldQuantize(DFPatternCallback):
    """cast<int8>(clip(round(w / scale) + zero_point)) of constants -> a constant."""

    def __init__(self):
        super().__init__()
        self.w, self.scale, self.zp = is_constant(), is_constant(), is_constant()
        q = is_op("add")(is_op("round")(is_op("divide")(self.w, self.scale)), self.zp)
        self.pattern = is_op("cast")(is_op("clip")(q)).has_attr({"dtype": "int8"})

    def callback(self, pre, post, node_map):
        import numpy as np

        w = node_map[self.w][0].value
        scale = node_map[self.scale][0].value
        zp = node_map[self.zp][0].value
        clip = pre.inputs[0]
        lo, hi = clip.attr("a_min", 0.0), clip.attr("a_max", 0.0)
        folded = np.clip(np.round(w / scale) + zp, lo, hi).astype("int8")
        print(f"folded the quantize of {w.size} values into a constant")
        return post.graph.const(folded, name=f"{node_map[self.w][0].name}.quantized")


@kiln.register_pass("fold_quantize_of_constant", override=True)
def fold_quantize_of_constant(graph):
    return rewrite(FoldQuantize(), graph)


def qdq_graph():
    """y = x * dequantize(quantize(w)), the quantize written out in ops."""
    import numpy as np

    from kiln import op

    g = kiln.Graph()
    x = g.var("x", (64,))
    w = g.const(np.linspace(-1, 1, 64).astype("float32"), name="weight")
    s = g.const(np.float32(0.01), name="scale")
    z = g.const(np.float32(3.0), name="zero_point")
    q = op.cast(op.clip(op.add(op.round(op.divide(w, s)), z), a_min=-128.0, a_max=127.0),
                dtype="int8")
    y = op.multiply(x, op.multiply(op.subtract(op.cast(q, dtype="float32"), z), s))
    g.set_outputs([y])
    return g


def main():
    import numpy as np

    g = qdq_graph()
    folded = fold_quantize_of_constant(g)
    print("after the pass:\n" + folded.text())
    assert "round" not in folded.text(), "the quantize was not folded"
    x = np.random.RandomState(0).randn(64).astype("float32")
    with tempfile.TemporaryDirectory() as tmp:
        # FoldConstant would fold it too: turn it off to see the pass do it
        plain = kiln.graph.compile(g, os.path.join(tmp, "plain.tar"),
                                   disabled_pass="FoldConstant")
        passed = kiln.graph.compile(g, os.path.join(tmp, "folded.tar"),
                                    disabled_pass="FoldConstant",
                                    pass_="fold_quantize_of_constant")
        y0 = kiln.runtime.load(plain).run([x])[0]
        y1 = kiln.runtime.load(passed).run([x])[0]
    np.testing.assert_array_equal(y0, y1)
    print("outputs before and after the pass are identical")


if __name__ == "__main__":
    sys.exit(main())
