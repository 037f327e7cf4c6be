"""Writes the models of kiln's import-time folding tests (tests/unit/
test_frontend_onnx_import.c); the first is also a seed of the fuzz_onnx corpus.

fold_int64_div.onnx  integer division on int64 constants where C traps or is
                     undefined: q = Div([INT64_MIN, 7, -7, 5], [-1, 0, 2, -1])
                     is [INT64_MIN, 0, -3, -5] by kiln's rule (INT64_MIN / -1
                     wraps, x / 0 is 0); and a shape sub-graph with the same
                     divisions, Shape(x) / 0 + Shape(x) ... feeding Reshape,
                     so y = Reshape(x, [2, 3]) = x.
fold_shape_overflow.onnx  ConstantOfShape of [2^40, 2^40]: an element count
                     that overflows int64, an error naming the node.
fold_sym_chunk.onnx  PyTorch's attention chunks its packed projection into
                     q, k, v with Slices whose ends come from Shape(x)[-1]
                     (Gather, Add, Div, Mul) over an x whose batch is
                     symbolic: x float[N, 6] (dim_param N) -> y0 = x[:, 0:2],
                     y1 = x[:, 2:4], y2 = x[:, 4:6], each [N, 2].
Run with /usr/bin/python3 (Debian's python3-onnx)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
I64_MIN = np.iinfo(np.int64).min


def const(name, values):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(values, dtype=np.int64), name))


def int64_div():
    nodes = [
        const("a", [I64_MIN, 7, -7, 5]),
        const("b", [-1, 0, 2, -1]),
        helper.make_node("Div", ["a", "b"], ["q"], name="trap_div"),
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("zeros", [0, 0]),
        helper.make_node("Div", ["s", "zeros"], ["z"], name="div_by_zero"),   # [0, 0]
        helper.make_node("Add", ["s", "z"], ["s2"], name="add"),              # [2, 3]
        const("minus1", [-1, -1]),
        helper.make_node("Mul", ["s2", "minus1"], ["neg"], name="neg"),       # [-2, -3]
        helper.make_node("Div", ["neg", "minus1"], ["shape"], name="div_by_minus1"),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "fold_int64_div",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("q", TensorProto.INT64, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def shape_overflow():
    nodes = [
        const("big", [1 << 40, 1 << 40]),
        helper.make_node("ConstantOfShape", ["big"], ["c"], name="huge_fill"),
        helper.make_node("Add", ["x", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "fold_shape_overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def sym_chunk():
    # as torch 1.13 exports nn.MultiheadAttention's qkv.chunk(3, dim=-1)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("last", [-1]),
        helper.make_node("Gather", ["s", "last"], ["d"], name="gather", axis=0),   # [6]
        const("two", [2]),
        helper.make_node("Add", ["d", "two"], ["d2"], name="add"),                  # [8]
        const("three", [3]),
        helper.make_node("Div", ["d2", "three"], ["w"], name="div"),                # [2]
        const("zero", [0]),
    ]
    for k in range(3):
        nodes.append(const(f"k{k + 1}", [k + 1]))
        nodes.append(helper.make_node("Mul", ["w", f"k{k + 1}"], [f"e{k}"], name=f"end{k}"))
        start = "zero" if k == 0 else f"e{k - 1}"
        nodes.append(helper.make_node("Slice", ["x", start, f"e{k}", "last"], [f"y{k}"],
                                      name=f"chunk{k}"))
    graph = helper.make_graph(
        nodes, "fold_sym_chunk",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
        [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, ["N", 2]) for k in range(3)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


for name, make in [("fold_int64_div", int64_div), ("fold_shape_overflow", shape_overflow),
                   ("fold_sym_chunk", sym_chunk)]:
    m = make()
    m.producer_name = "kiln tests/data/make_fold_models.py"
    onnx.save(m, os.path.join(HERE, name + ".onnx"))
