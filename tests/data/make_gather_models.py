"""Writes the models of kiln's Gather range tests (tests/unit/test_te_checks.c,
issue 11: an out-of-range index is reported, never clamped).

gather_oob.onnx        y = Gather(table, c1 + c2, axis=0) + x, where table is a
                       constant [5, 3] and c1 + c2 = [1, 7]: a constant index
                       out of range. Folded at import (the default) or by
                       FoldConstant at compile time (import with a fold cap of
                       1 element), it is an error naming the node "bad_gather".
gather_indices.onnx    y = Gather(data, idx, axis=0) with data float [5, 3] and
                       idx int64 [4] graph inputs: an index out of range at run
                       time is a run error, not a clamped read.
Run with /usr/bin/python3 (Debian's python3-onnx)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def const(name, values, dtype):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(values, dtype=dtype), name))


def gather_oob():
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    nodes = [
        const("c1", [1, 4], np.int64),
        const("c2", [0, 3], np.int64),
        helper.make_node("Add", ["c1", "c2"], ["idx"], name="idx_add"),   # [1, 7]
        const("table", table, np.float32),
        helper.make_node("Gather", ["table", "idx"], ["g"], name="bad_gather", axis=0),
        helper.make_node("Add", ["g", "x"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "gather_oob",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def gather_indices():
    nodes = [helper.make_node("Gather", ["data", "idx"], ["y"], name="gather", axis=0)]
    graph = helper.make_graph(
        nodes, "gather_indices",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 3]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


if __name__ == "__main__":
    for name, model in (("gather_oob.onnx", gather_oob()),
                        ("gather_indices.onnx", gather_indices())):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(HERE, name))
