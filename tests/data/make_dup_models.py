"""Writes the models of the importer's duplicate-name tests (tests/unit/
test_frontend_onnx_import.c): ONNX names each value once, and a model that
names one twice must be refused, not imported with one definition winning.

dup_output.onnx       two Relu nodes both write 'y'
dup_input.onnx        the graph input 'x' is listed twice
dup_initializer.onnx  the initializer 'w' is listed twice (different values)
Run with /usr/bin/python3 (Debian's python3-onnx)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "dup", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def vi(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3])


def main():
    x, y = vi("x"), vi("y")
    dup_output = model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                        helper.make_node("Relu", ["x"], ["y"], name="second")], [x], [y])
    dup_input = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x, vi("x")], [y])
    w1 = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w2 = numpy_helper.from_array(np.zeros((2, 3), np.float32), "w")
    dup_init = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [x], [y],
                     [w1, w2])
    for name, m in [("dup_output", dup_output), ("dup_input", dup_input),
                    ("dup_initializer", dup_init)]:
        onnx.save(m, os.path.join(HERE, name + ".onnx"))


if __name__ == "__main__":
    main()
