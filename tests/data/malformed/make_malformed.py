"""Writes small malformed ONNX models that kiln must reject with a clear
error (tests/unit/test_frontend_onnx_import.c). Run with /usr/bin/python3
(Debian's python3-onnx). The structural checks of onnx.checker are not run:
these models are broken on purpose."""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(here, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
# a node reads a name nothing produces
save("dangling", [helper.make_node("Relu", ["nowhere"], ["y"], name="relu0")], [x], [y])
# two nodes read each other's outputs
save("cycle", [helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
               helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
               helper.make_node("Identity", ["b"], ["y"], name="out")], [x], [y])
# the weight is neither an initializer nor a graph input
save("missing_initializer", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [x], [y])
# the graph output is never produced
save("missing_output", [helper.make_node("Relu", ["x"], ["z"], name="relu0")], [x], [y])
# an initializer whose raw data is shorter than its dims say
t = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
t.raw_data = t.raw_data[:8]
save("short_initializer", [helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [x], [y], [t])
# a huge dim on a graph input
big = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 40, 1 << 40])
save("huge_dims", [helper.make_node("Relu", ["x"], ["y"], name="relu0")], [big], [y])
# an opset kiln does not cover
save("new_opset", [helper.make_node("Relu", ["x"], ["y"], name="relu0")], [x], [y], opset=18)
# an op kiln has only from a later opset (Dropout's opset 6 form has is_test)
save("old_dropout", [helper.make_node("Dropout", ["x"], ["y"], name="drop0")], [x], [y], opset=6)
