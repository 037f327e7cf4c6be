"""Writes the models of the importer's attribute, arity and shape-constraint
tests (tests/unit/test_frontend_onnx_import.c, test_bad_attr_models): each
bad_*.onnx breaks one rule ONNX documents for a node, and kiln must refuse it
with an error naming the node, its op and the attribute or input, instead of
importing it with a default or a guess. The good_*.onnx models are the
nearest valid ones and must import.

Attribute types: an attribute of the wrong AttributeProto type (Elu alpha
as INT, Softmax axis as STRING, Transpose perm as FLOATS, Flatten axis as
INTS, Conv group as STRING, LeakyRelu alpha and Clip min as STRING), one of
the right type without its value, one given twice, one the op does not
have (Clip min at opset 13, where min is an input), a required one missing.
Arity: Relu with 3 outputs, Add with 3 inputs, Gemm with an empty B.
Shapes: Conv kernel_shape against the weight, group against the channels,
pads/strides/dilations lengths, a 4-D window; pool kernel_shape length,
MaxPool storage_order (0 or 1, and not at opset 7), LpPool's p, MaxUnpool's
index dtype and a constant output_shape below the unpooled size or of the
wrong length; ConvTranspose output_shape length, output_padding, group, an
empty and an overflowing output; ConvInteger's input dtypes and zero point
length; BatchNormalization
parameter lengths, spatial=0 and running statistics before opset 14; the
reduction of NegativeLogLikelihoodLoss, the target rank of
SoftmaxCrossEntropyLoss, InstanceNormalization of a 2-D input, LRN's size,
MeanVarianceNormalization's axes and Dropout's ratio; Gemm/MatMul inner dims; Gather, Concat,
Softmax and Flatten axes; Reshape -1s, element counts and allowzero; Concat
ranks and dims; Transpose perm; Split sizes; Clip bounds that are not
scalars; Pad pads length and mode; Mod's fmod (0 or 1, and 1 for floats),
BitShift's direction, Celu's alpha (not 0), Hardmax's axis, and Max before
opset 8 (no broadcasting).
Run with /usr/bin/python3 (Debian's python3-onnx)."""
import os

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(node, inputs, opset=13, inits=(), outputs=None, types=None):
    """One node named after its file, graph inputs given as {name: shape}
    (float, or types[name])."""
    outs = outputs or [helper.make_tensor_value_info(o, F, None) for o in node.output if o]
    ins = [vi(k, v, (types or {}).get(k, F)) for k, v in inputs.items()]
    g = helper.make_graph([node], "bad_attr", ins, outs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def node(op, ins, outs, name, attrs=()):
    n = helper.make_node(op, ins, outs, name=name)
    n.attribute.extend(attrs)
    return n


def attr(name, value, type_=None):
    """An attribute of `value` (helper's type), or forced to type_ with only
    the field `value` implies set (type_ without value: no field at all)."""
    a = helper.make_attribute(name, value) if value is not None else AttributeProto(name=name)
    if type_ is not None:
        a.type = type_
    return a


def init(name, array):
    return numpy_helper.from_array(np.asarray(array, np.float32), name)


def w33(name="w", o=1, i=1):
    return init(name, np.ones((o, i, 3, 3), np.float32))


X4 = {"x": [1, 1, 5, 5]}
X2 = {"x": [2, 3]}


def cases():
    A = AttributeProto
    c = {}
    # attribute types, values, repeats, unknown and required ones
    c["bad_elu_alpha_int"] = model(node("Elu", ["x"], ["y"], "elu", [attr("alpha", 2)]), X2)
    c["bad_softmax_axis_string"] = model(
        node("Softmax", ["x"], ["y"], "sm", [attr("axis", "1")]), X2)
    c["bad_transpose_perm_floats"] = model(
        node("Transpose", ["x"], ["y"], "tr", [attr("perm", [1.0, 0.0])]), X2)
    c["bad_flatten_axis_ints"] = model(
        node("Flatten", ["x"], ["y"], "fl", [attr("axis", [1])]), X2)
    c["bad_conv_group_string"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("group", "1")]), X4, inits=[w33()])
    c["bad_leakyrelu_alpha_string"] = model(
        node("LeakyRelu", ["x"], ["y"], "lrelu", [attr("alpha", "0.1")]), X2)
    c["bad_clip_min_string"] = model(
        node("Clip", ["x"], ["y"], "clip", [attr("min", "0")]), X2, opset=10)
    c["bad_elu_alpha_no_value"] = model(
        node("Elu", ["x"], ["y"], "elu", [attr("alpha", None, A.FLOAT)]), X2)
    c["bad_dup_attr"] = model(
        node("LeakyRelu", ["x"], ["y"], "lrelu", [attr("alpha", 0.1), attr("alpha", 0.2)]), X2)
    c["bad_unknown_attr"] = model(node("Relu", ["x"], ["y"], "relu", [attr("alpha", 0.1)]), X2)
    c["bad_clip_min_attr_opset13"] = model(
        node("Clip", ["x"], ["y"], "clip", [attr("min", 0.0)]), X2)
    c["bad_cast_no_to"] = model(node("Cast", ["x"], ["y"], "cast"), X2)
    # arity
    c["bad_relu_outputs"] = model(node("Relu", ["x"], ["y", "y2", "y3"], "relu"), X2)
    c["bad_add_inputs"] = model(node("Add", ["x", "x", "x"], ["y"], "add"), X2)
    c["bad_gemm_empty_b"] = model(node("Gemm", ["x", ""], ["y"], "gemm"), X2)
    # Conv and pools
    c["bad_conv_kernel_shape"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("kernel_shape", [5, 5])]), X4,
        inits=[w33()])
    c["bad_conv_group_channels"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("group", 2)]), {"x": [1, 3, 5, 5]},
        inits=[w33(o=2, i=3)])
    c["bad_conv_pads_length"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("pads", [1, 1, 1])]), X4, inits=[w33()])
    c["bad_conv_strides_length"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("strides", [1])]), X4, inits=[w33()])
    c["bad_conv_dilations_length"] = model(
        node("Conv", ["x", "w"], ["y"], "conv", [attr("dilations", [1, 1, 1])]), X4,
        inits=[w33()])
    c["bad_maxpool_kernel_length"] = model(
        node("MaxPool", ["x"], ["y"], "pool", [attr("kernel_shape", [2])]), X4)
    c["bad_conv_6d"] = model(node("Conv", ["x", "w"], ["y"], "conv"),
                             {"x": [1, 1, 2, 2, 2, 2], "w": [1, 1, 1, 1, 1, 1]})
    c["bad_maxpool_storage_order"] = model(
        node("MaxPool", ["x"], ["y", "i"], "pool",
             [attr("kernel_shape", [2, 2]), attr("storage_order", 2)]), X4, opset=12)
    c["bad_maxpool_storage_order_opset7"] = model(
        node("MaxPool", ["x"], ["y"], "pool",
             [attr("kernel_shape", [2, 2]), attr("storage_order", 1)]), X4, opset=7)
    c["bad_lppool_p"] = model(
        node("LpPool", ["x"], ["y"], "pool", [attr("kernel_shape", [2, 2]), attr("p", 0)]), X4)
    c["bad_maxunpool_float_indices"] = model(
        node("MaxUnpool", ["x", "i"], ["y"], "unpool", [attr("kernel_shape", [2, 2])]),
        {"x": [1, 1, 2, 2], "i": [1, 1, 2, 2]})
    # a constant output_shape below the unpooled [1, 1, 4, 4], and one of 3 values
    def unpool_shape(shape):
        return model(
            node("MaxUnpool", ["x", "i", "s"], ["y"], "unpool",
                 [attr("kernel_shape", [2, 2]), attr("strides", [2, 2])]),
            {"x": [1, 1, 2, 2], "i": [1, 1, 2, 2]}, types={"i": TensorProto.INT64},
            inits=[numpy_helper.from_array(np.array(shape, np.int64), "s")])
    c["bad_maxunpool_output_shape_small"] = unpool_shape([1, 1, 5, 3])
    c["bad_maxunpool_output_shape_length"] = unpool_shape([1, 4, 4])
    # ConvTranspose: output_shape and output_padding, groups, an empty or
    # overflowing output
    def convt(attrs, x=(1, 1, 3, 3), w=(1, 1, 3, 3)):
        return model(node("ConvTranspose", ["x", "w"], ["y"], "convt", attrs), {"x": list(x)},
                     inits=[init("w", np.ones(w, np.float32))])
    c["bad_convtranspose_output_shape_length"] = convt([attr("output_shape", [5])])
    c["bad_convtranspose_output_padding"] = convt([attr("output_padding", [-1, 0])])
    c["bad_convtranspose_group"] = convt([attr("group", 2)], x=(1, 3, 3, 3), w=(3, 1, 3, 3))
    c["bad_convtranspose_empty"] = convt([attr("pads", [3, 0, 3, 0])])
    c["bad_convtranspose_stride_overflow"] = convt([attr("strides", [1 << 62, 1])])
    # ConvInteger: integer inputs, zero points of one or of the output channels
    U8, I8 = TensorProto.UINT8, TensorProto.INT8
    c["bad_convinteger_float"] = model(node("ConvInteger", ["x", "w"], ["y"], "convi"),
                                       {"x": [1, 1, 3, 3], "w": [1, 1, 2, 2]})
    c["bad_convinteger_zero_point"] = model(
        node("ConvInteger", ["x", "w", "", "wz"], ["y"], "convi"),
        {"x": [1, 1, 3, 3], "w": [3, 1, 2, 2], "wz": [2]}, types={"x": U8, "w": I8, "wz": I8})
    # BatchNormalization
    bn = [init(k, np.ones(n, np.float32)) for k, n in
          [("s", 3), ("b", 2), ("m", 2), ("v", 2)]]
    c["bad_batchnorm_scale_length"] = model(
        node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn"),
        {"x": [1, 2, 3, 3]}, inits=bn)
    bn1 = [init(k, np.ones(2, np.float32)) for k in "sbmv"]
    c["bad_batchnorm_spatial"] = model(
        node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn",
             [attr("spatial", 0)]), {"x": [1, 2, 3, 3]}, opset=7, inits=bn1)
    # BatchNormalization's running statistics before opset 14; the losses and
    # the other normalizations
    c["bad_batchnorm_stats_opset9"] = model(
        node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "m2", "v2", "sm", "sv"], "bn"),
        {"x": [1, 2, 3, 3]}, opset=9, inits=bn1)
    tgt = numpy_helper.from_array(np.array([0, 2], np.int64), "t")
    c["bad_nllloss_reduction"] = model(
        node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], "nll", [attr("reduction", "avg")]),
        X2, inits=[tgt])
    c["bad_sce_target_rank"] = model(
        node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], "sce"), X2,
        inits=[numpy_helper.from_array(np.zeros((2, 1), np.int64), "t")])
    c["bad_instancenorm_rank"] = model(
        node("InstanceNormalization", ["x", "s", "b"], ["y"], "in"), X2,
        inits=[init("s", np.ones(3)), init("b", np.ones(3))])
    c["bad_lrn_size_zero"] = model(node("LRN", ["x"], ["y"], "lrn", [attr("size", 0)]), X4)
    c["bad_mvn_axes"] = model(
        node("MeanVarianceNormalization", ["x"], ["y"], "mvn", [attr("axes", [0, 5])]), X2)
    c["bad_dropout_ratio"] = model(
        node("Dropout", ["x", "r", "t"], ["y"], "drop"), X2,
        inits=[init("r", 1.5), numpy_helper.from_array(np.array(True), "t")])
    # Gemm, MatMul
    c["bad_gemm_inner"] = model(
        node("Gemm", ["a", "b"], ["y"], "gemm", [attr("transB", 1)]),
        {"a": [2, 3], "b": [5, 4]})
    c["bad_matmul_inner"] = model(node("MatMul", ["a", "b"], ["y"], "mm"),
                                  {"a": [2, 3], "b": [4, 5]})
    # axes
    c["bad_gather_axis"] = model(
        node("Gather", ["x", "i"], ["y"], "gather", [attr("axis", 2)]), X2,
        inits=[numpy_helper.from_array(np.array([0], np.int64), "i")])
    c["bad_concat_axis"] = model(
        node("Concat", ["x", "x"], ["y"], "cat", [attr("axis", 2)]), X2)
    c["bad_softmax_axis"] = model(node("Softmax", ["x"], ["y"], "sm", [attr("axis", 3)]), X2)
    c["bad_flatten_axis"] = model(node("Flatten", ["x"], ["y"], "fl", [attr("axis", -3)]), X2)
    # Reshape
    def reshape(shape, attrs=()):
        s = numpy_helper.from_array(np.array(shape, np.int64), "s")
        return model(node("Reshape", ["x", "s"], ["y"], "reshape", attrs), X2, opset=14,
                     inits=[s])
    c["bad_reshape_two_neg"] = reshape([-1, -1])
    c["bad_reshape_count"] = reshape([4, 4])
    c["bad_reshape_allowzero"] = reshape([0, -1], [attr("allowzero", 1)])
    # Concat inputs
    c["bad_concat_dims"] = model(
        node("Concat", ["x", "z"], ["y"], "cat", [attr("axis", 1)]), {"x": [2, 3], "z": [3, 3]})
    c["bad_concat_rank"] = model(
        node("Concat", ["x", "z"], ["y"], "cat", [attr("axis", 0)]),
        {"x": [2, 3], "z": [2, 3, 1]})
    # Transpose
    c["bad_transpose_repeat"] = model(
        node("Transpose", ["x"], ["y"], "tr", [attr("perm", [0, 0])]), X2)
    c["bad_transpose_length"] = model(
        node("Transpose", ["x"], ["y"], "tr", [attr("perm", [1, 0, 2])]), X2)
    # Split
    sp = numpy_helper.from_array(np.array([1, 1], np.int64), "sp")
    c["bad_split_sum"] = model(
        node("Split", ["x", "sp"], ["y0", "y1"], "split", [attr("axis", 1)]), X2, inits=[sp])
    c["bad_split_count"] = model(
        node("Split", ["x", "sp"], ["y0", "y1", "y2"], "split", [attr("axis", 1)]), X2,
        inits=[sp])
    # Clip bounds, Pad
    c["bad_clip_min_tensor"] = model(
        node("Clip", ["x", "lo"], ["y"], "clip"), X2, inits=[init("lo", [0.0, 0.0])])
    pads = numpy_helper.from_array(np.array([0, 1, 0], np.int64), "p")
    c["bad_pad_length"] = model(node("Pad", ["x", "p"], ["y"], "pad"), X2, inits=[pads])
    pads4 = numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")
    c["bad_pad_mode"] = model(
        node("Pad", ["x", "p"], ["y"], "pad", [attr("mode", "wrap")]), X2, inits=[pads4])
    # Mod, BitShift, Celu, Hardmax; Max before opset 8 does not broadcast
    c["bad_mod_float_fmod0"] = model(node("Mod", ["x", "x"], ["y"], "mod"), X2)
    c["bad_mod_fmod2"] = model(node("Mod", ["x", "x"], ["y"], "mod", [attr("fmod", 2)]), X2)
    c["bad_bitshift_direction"] = model(
        node("BitShift", ["x", "x"], ["y"], "shift", [attr("direction", "UP")]), X2)
    c["bad_celu_alpha_zero"] = model(node("Celu", ["x"], ["y"], "celu", [attr("alpha", 0.0)]), X2)
    c["bad_hardmax_axis"] = model(node("Hardmax", ["x"], ["y"], "hm", [attr("axis", -3)]), X2)
    c["bad_max_broadcast_opset6"] = model(
        node("Max", ["x", "z"], ["y"], "max"), {"x": [2, 3], "z": [3]}, opset=6)
    # the nearest valid models import
    c["good_conv_kernel_shape"] = model(
        node("Conv", ["x", "w"], ["y"], "conv",
             [attr("kernel_shape", [3, 3]), attr("group", 1), attr("strides", [1, 1]),
              attr("pads", [1, 1, 1, 1])]), X4, inits=[w33()])
    c["good_clip_min_1"] = model(
        node("Clip", ["x", "lo"], ["y"], "clip"), X2, inits=[init("lo", [0.0])])
    c["good_untyped_alpha"] = model(  # IR version 1 style: no type field
        node("LeakyRelu", ["x"], ["y"], "lrelu", [attr("alpha", 0.2, A.UNDEFINED)]), X2)
    c["good_split_sizes"] = model(
        node("Split", ["x", "sp"], ["y0", "y1"], "split", [attr("axis", 1)]), X2,
        inits=[numpy_helper.from_array(np.array([1, 2], np.int64), "sp")])
    c["good_reshape_zero"] = reshape([0, -1], [attr("allowzero", 0)])
    c["good_mod_float_fmod1"] = model(node("Mod", ["x", "x"], ["y"], "mod", [attr("fmod", 1)]), X2)
    c["good_max_opset6"] = model(
        node("Max", ["x", "z"], ["y"], "max"), {"x": [2, 3], "z": [2, 3]}, opset=6)
    return c


def main():
    for name, m in cases().items():
        onnx.save(m, os.path.join(HERE, "bad_attr", name + ".onnx"))


if __name__ == "__main__":
    main()
