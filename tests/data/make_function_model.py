"""Writes tests/data/local_function.onnx: a model whose graph calls a
model-local function "ScaledRelu" (domain "kiln.test"), which calls another
local function "Scale" with an attribute reference (alpha). kiln inlines
both. y = relu(x) * alpha, alpha = 0.5 on the call. Run with /usr/bin/python3
(Debian's python3-onnx)."""
import os
import onnx
from onnx import TensorProto, helper

def attr_ref(name, ref, kind):
    a = onnx.AttributeProto()
    a.name = name
    a.ref_attr_name = ref
    a.type = kind
    return a


alpha_ref = attr_ref("value_float", "alpha", onnx.AttributeProto.FLOAT)
const = helper.make_node("Constant", [], ["a"], name="alpha_const")
const.attribute.append(alpha_ref)
scale = helper.make_function(
    "kiln.test", "Scale", ["v"], ["w"],
    [const, helper.make_node("Mul", ["v", "a"], ["w"], name="mul")],
    [helper.make_opsetid("", 13)], attributes=["alpha"])
alpha_pass = attr_ref("alpha", "alpha", onnx.AttributeProto.FLOAT)
call_scale = helper.make_node("Scale", ["r"], ["out"], name="scale", domain="kiln.test")
call_scale.attribute.append(alpha_pass)
scaled_relu = helper.make_function(
    "kiln.test", "ScaledRelu", ["in"], ["out"],
    [helper.make_node("Relu", ["in"], ["r"], name="relu"), call_scale],
    [helper.make_opsetid("", 13), helper.make_opsetid("kiln.test", 1)], attributes=["alpha"])
node = helper.make_node("ScaledRelu", ["x"], ["y"], name="sr", domain="kiln.test", alpha=0.5)
graph = helper.make_graph(
    [node], "local_function",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
model = helper.make_model(graph, functions=[scale, scaled_relu],
                          opset_imports=[helper.make_opsetid("", 13),
                                         helper.make_opsetid("kiln.test", 1)])
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "local_function.onnx"))
