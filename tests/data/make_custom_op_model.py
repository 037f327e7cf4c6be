"""Writes tests/data/custom_cumsum.onnx: one node of the user op
"contrib.cumsum" (domain "kiln.contrib"), which kiln imports as the plugin
op of that name (examples/plugin_cumsum.c). Run with /usr/bin/python3
(Debian's python3-onnx)."""
import os
import onnx
from onnx import TensorProto, helper

node = helper.make_node("contrib.cumsum", ["x"], ["y"], name="cs", domain="kiln.contrib",
                        axis=1, exclusive=0)
graph = helper.make_graph(
    [node], "custom_cumsum",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("kiln.contrib", 1)])
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "custom_cumsum.onnx"))
