#!/usr/bin/env python3
"""gen_onnx_seeds.py OUT_DIR: the structured ONNX generator of issue 11.

Writes valid-looking ONNX models with hostile contents into OUT_DIR, one file
per model, as seeds for the fuzz_onnx target (scripts/fuzz.sh runs this
first). Byte mutation rarely builds a well-formed graph whose *values* are
hostile; these models are well-formed on purpose, so the fuzzer starts from
inputs that get past the parser into the importer, the constant folder and
the passes:

  * integer extremes (0, -1, INT_MIN, INT_MAX) through Div, Mod, Neg, Abs,
    Cast, Gather, Slice, Reshape, Expand, Tile, Range, ConstantOfShape, Pad;
  * float extremes (NaN, +-Inf, denormals, 3.4e38) cast to every integer type;
  * attributes of the wrong type (a string where a number belongs, floats
    where ints do, a missing value, a repeated attribute);
  * shape contradictions (Conv kernel_shape against the weights, group
    against the channels, Gemm inner dims, BatchNorm lengths);
  * names: duplicate outputs, duplicate inputs, a node reading its own
    output, an output nobody produces, empty names;
  * tensors whose raw_data, dims and data_type disagree, unknown dtypes,
    external data references;
  * opsets out of range and missing or foreign domains;
  * deep chains (thousands of ops) and wide fan-outs;
  * shape sub-graphs (Shape -> Gather -> Concat -> Reshape) on symbolic dims,
    and the shape arithmetic the graph evaluates (Slice to a symbolic end,
    Range(0, n, 1), Where(Equal(shape, -1), ...), Squeeze and Unsqueeze);
  * control flow: If, Loop and Scan bodies, nested, capturing outer values,
    with bodies of the wrong arity or types, and bodies that are missing.

Each model is written with SerializeToString and never checked, so nothing
here refuses to write an invalid model. Needs the onnx package (Debian's
python3-onnx is enough). Deterministic: the same files on every run.
"""
import os
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

I32 = (0, 1, -1, 2**31 - 1, -(2**31), 7)
I64 = (0, 1, -1, 2**63 - 1, -(2**63), 3)
F32 = (0.0, -0.0, 1.0, float("nan"), float("inf"), -float("inf"), 1e-45, 3.4e38, -3.4e38)

out_dir = sys.argv[1] if len(sys.argv) > 1 else "seeds"
os.makedirs(out_dir, exist_ok=True)
count = 0


def save(name, nodes, inputs, outputs, inits=(), opset=13, domain="", value_info=()):
    global count
    graph = helper.make_graph(nodes, name, list(inputs), list(outputs), list(inits),
                              value_info=list(value_info))
    opsets = [helper.make_opsetid(domain, opset)] if opset is not None else []
    model = helper.make_model(graph, producer_name="kiln-gen", opset_imports=opsets)
    model.ir_version = 8
    with open(os.path.join(out_dir, "gen_%03d_%s.onnx" % (count, name)), "wb") as f:
        f.write(model.SerializeToString())
    count += 1


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


# ---- integer extremes in folding and in kernels ---------------------------------
for op in ("Div", "Mod"):
    for dt, vals, elem in ((np.int32, I32, TensorProto.INT32), (np.int64, I64, TensorProto.INT64)):
        a = np.array(vals, dtype=dt)
        for b_val in (0, -1):
            b = np.full(a.shape, b_val, dtype=dt)
            attrs = {"fmod": 0} if op == "Mod" else {}
            # constants only: FoldConstant evaluates it
            save("%s_%s_const_by_%d" % (op, elem, b_val),
                 [helper.make_node(op, ["a", "b"], ["y"], **attrs)], [],
                 [vi("y", elem, [len(vals)])], [const("a", a), const("b", b)])
            # a runtime input divided by a constant, and a constant by an input
            save("%s_%s_input_by_%d" % (op, elem, b_val),
                 [helper.make_node(op, ["x", "b"], ["y"], **attrs)], [vi("x", elem, [len(vals)])],
                 [vi("y", elem, [len(vals)])], [const("b", b)])
            save("%s_%s_const_by_input" % (op, elem),
                 [helper.make_node(op, ["a", "x"], ["y"], **attrs)], [vi("x", elem, [len(vals)])],
                 [vi("y", elem, [len(vals)])], [const("a", a)])
for op in ("Neg", "Abs"):
    save(op + "_int_min", [helper.make_node(op, ["a"], ["y"])], [],
         [vi("y", TensorProto.INT64, [6])], [const("a", np.array(I64, dtype=np.int64))])

# float extremes cast to every integer type, folded and at run time
for to in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.INT32,
           TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT16):
    save("cast_f32_extremes_to_%d" % to, [helper.make_node("Cast", ["a"], ["y"], to=to)], [],
         [vi("y", to, [len(F32)])], [const("a", np.array(F32, dtype=np.float32))])
    save("cast_input_to_%d" % to, [helper.make_node("Cast", ["x"], ["y"], to=to)],
         [vi("x", TensorProto.FLOAT, [4])], [vi("y", to, [4])])

# Gather with indices outside [-n, n), constant and folded
for idx in (4, -5, 2**63 - 1, -(2**63), 2**31):
    save("gather_const_%d" % (idx & 0xffff),
         [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], [vi("x", TensorProto.FLOAT, [4, 3])],
         [vi("y", TensorProto.FLOAT, None)], [const("i", np.array([0, idx], dtype=np.int64))])
    save("gather_folded_%d" % (idx & 0xffff),
         [helper.make_node("Gather", ["d", "i"], ["y"], axis=0)], [],
         [vi("y", TensorProto.FLOAT, None)],
         [const("d", np.arange(4, dtype=np.float32)), const("i", np.array([idx], dtype=np.int64))])
for axis in (2, -3, 2**62):
    save("gather_axis_%d" % (axis & 0xff), [helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)],
         [vi("x", TensorProto.FLOAT, [4, 3]), vi("i", TensorProto.INT64, [2])],
         [vi("y", TensorProto.FLOAT, None)])

# Shape-valued inputs with hostile values
for name, shape in (("reshape_big", [2**62, 4]), ("reshape_neg", [-2, 6]), ("reshape_two_m1", [-1, -1]),
                    ("reshape_min", [-(2**63), 1]), ("reshape_zero", [0, 0, 0]),
                    ("reshape_overflow", [2**32, 2**32, 16])):
    save(name, [helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", TensorProto.FLOAT, [2, 3])],
         [vi("y", TensorProto.FLOAT, None)], [const("s", np.array(shape, dtype=np.int64))])
for name, shape in (("expand_big", [2**40, 2**40]), ("expand_neg", [-1, 3]), ("expand_ok", [4, 2, 3])):
    save(name, [helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", TensorProto.FLOAT, [2, 3])],
         [vi("y", TensorProto.FLOAT, None)], [const("s", np.array(shape, dtype=np.int64))])
for reps in ([2**40, 1], [-1, 2], [0, 5]):
    save("tile_%d" % (reps[0] & 0xff), [helper.make_node("Tile", ["x", "r"], ["y"])],
         [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, None)],
         [const("r", np.array(reps, dtype=np.int64))])
for shape in ([2**62], [-5], [2**31, 2**31]):
    save("constant_of_shape_%d" % len(shape), [helper.make_node("ConstantOfShape", ["s"], ["y"])], [],
         [vi("y", TensorProto.FLOAT, None)], [const("s", np.array(shape, dtype=np.int64))])
for start, limit, delta in ((0, 2**62, 1), (0, 10, 0), (-(2**63), 2**63 - 1, 1), (5, 0, 1)):
    save("range_%d" % (delta & 0xf), [helper.make_node("Range", ["a", "b", "c"], ["y"])], [],
         [vi("y", TensorProto.INT64, None)],
         [const("a", np.array(start, dtype=np.int64)), const("b", np.array(limit, dtype=np.int64)),
          const("c", np.array(delta, dtype=np.int64))])
for starts, ends, steps in (([-(2**63)], [2**63 - 1], [1]), ([0], [4], [0]), ([2**63 - 1], [-(2**63)], [-1]),
                            ([0], [4], [-(2**63)])):
    save("slice_%d" % (steps[0] & 0xf), [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
         [vi("x", TensorProto.FLOAT, [4, 3])], [vi("y", TensorProto.FLOAT, None)],
         [const("s", np.array(starts, dtype=np.int64)), const("e", np.array(ends, dtype=np.int64)),
          const("a", np.array([0], dtype=np.int64)), const("t", np.array(steps, dtype=np.int64))])
for pads in ([2**62, 0, 0, 0], [-5, 0, 0, 0], [1, 1]):
    save("pad_%d" % len(pads), [helper.make_node("Pad", ["x", "p"], ["y"])],
         [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, None)],
         [const("p", np.array(pads, dtype=np.int64))])

# ---- attributes of the wrong type ---------------------------------------------------
def bad_attr(op, name, value, attr_type, inputs, in_shapes, nout=1, opset=13, inits=()):
    a = AttributeProto()
    a.name = name
    a.type = attr_type
    if attr_type == AttributeProto.STRING:
        a.s = value
    elif attr_type == AttributeProto.FLOATS:
        a.floats.extend(value)
    elif attr_type == AttributeProto.INTS:
        a.ints.extend(value)
    elif attr_type == AttributeProto.FLOAT:
        a.f = value
    elif attr_type == AttributeProto.INT:
        a.i = value
    elif attr_type == AttributeProto.STRINGS:
        a.strings.extend(value)
    n = helper.make_node(op, inputs, ["y%d" % k for k in range(nout)])
    n.attribute.append(a)
    save("attr_%s_%s_%d" % (op, name, attr_type), [n],
         [vi(i, TensorProto.FLOAT, s) for i, s in zip(inputs, in_shapes) if s is not None],
         [vi("y0", TensorProto.FLOAT, None)], inits, opset=opset)


bad_attr("LeakyRelu", "alpha", b"abc", AttributeProto.STRING, ["x"], [[4]])
bad_attr("LeakyRelu", "alpha", [0.1, 0.2], AttributeProto.FLOATS, ["x"], [[4]])
bad_attr("Elu", "alpha", 3, AttributeProto.INT, ["x"], [[4]])
bad_attr("Clip", "min", b"0", AttributeProto.STRING, ["x"], [[4]], opset=6)
bad_attr("Softmax", "axis", b"1", AttributeProto.STRING, ["x"], [[2, 4]])
bad_attr("Softmax", "axis", 2**62, AttributeProto.INT, ["x"], [[2, 4]])
bad_attr("Transpose", "perm", [0, 0], AttributeProto.INTS, ["x"], [[2, 4]])
bad_attr("Transpose", "perm", [1.0, 0.0], AttributeProto.FLOATS, ["x"], [[2, 4]])
bad_attr("Concat", "axis", -(2**63), AttributeProto.INT, ["x", "z"], [[2, 4], [2, 4]])
bad_attr("Flatten", "axis", [1], AttributeProto.INTS, ["x"], [[2, 4]])
bad_attr("Conv", "strides", [1.0, 1.0], AttributeProto.FLOATS, ["x", "w"], [[1, 1, 5, 5], None],
         inits=[const("w", np.ones((1, 1, 3, 3), np.float32))])
bad_attr("Conv", "group", b"1", AttributeProto.STRING, ["x", "w"], [[1, 1, 5, 5], None],
         inits=[const("w", np.ones((1, 1, 3, 3), np.float32))])
bad_attr("MaxPool", "kernel_shape", [b"3", b"3"], AttributeProto.STRINGS, ["x"], [[1, 1, 5, 5]])
bad_attr("Cast", "to", 99, AttributeProto.INT, ["x"], [[4]])
bad_attr("Cast", "to", b"float", AttributeProto.STRING, ["x"], [[4]])
# an attribute with no value, and one repeated
n = helper.make_node("LeakyRelu", ["x"], ["y"])
a = n.attribute.add()
a.name = "alpha"
save("attr_no_value", [n], [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])])
n = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)
n.attribute.append(helper.make_attribute("alpha", 0.5))
save("attr_repeated", [n], [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])])

# ---- shape contradictions ----------------------------------------------------------
def conv(name, xshape, wshape, **attrs):
    save(name, [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], [vi("x", TensorProto.FLOAT, xshape)],
         [vi("y", TensorProto.FLOAT, None)], [const("w", np.ones(wshape, np.float32))])


conv("conv_kernel_shape_mismatch", [1, 2, 8, 8], [4, 2, 3, 3], kernel_shape=[5, 5])
conv("conv_group_mismatch", [1, 3, 8, 8], [4, 1, 3, 3], group=2)
conv("conv_group_zero", [1, 2, 8, 8], [4, 2, 3, 3], group=0)
conv("conv_group_huge", [1, 2, 8, 8], [4, 2, 3, 3], group=2**62)
conv("conv_weight_rank", [1, 2, 8, 8], [4, 2, 3], kernel_shape=[3, 3])
conv("conv_pads_neg", [1, 2, 8, 8], [4, 2, 3, 3], pads=[-9, -9, -9, -9])
conv("conv_pads_len", [1, 2, 8, 8], [4, 2, 3, 3], pads=[1, 1])
conv("conv_dilation_huge", [1, 2, 8, 8], [4, 2, 3, 3], dilations=[2**62, 1])
conv("conv_stride_zero", [1, 2, 8, 8], [4, 2, 3, 3], strides=[0, 1])
conv("conv_kernel_bigger", [1, 2, 2, 2], [4, 2, 5, 5])
conv("conv_1d", [1, 2, 8], [4, 2, 3])
conv("conv_3d", [1, 2, 4, 4, 4], [4, 2, 3, 3, 3])
save("gemm_inner", [helper.make_node("Gemm", ["a", "b"], ["y"], transB=1)], [vi("a", TensorProto.FLOAT, [2, 3])],
     [vi("y", TensorProto.FLOAT, None)], [const("b", np.ones((4, 5), np.float32))])
save("matmul_inner", [helper.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", TensorProto.FLOAT, [2, 3])],
     [vi("y", TensorProto.FLOAT, None)], [const("b", np.ones((4, 5), np.float32))])
save("batchnorm_lengths", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
     [vi("x", TensorProto.FLOAT, [1, 3, 2, 2])], [vi("y", TensorProto.FLOAT, None)],
     [const(k, np.ones(2, np.float32)) for k in "sbmv"])
save("maxpool_no_kernel", [helper.make_node("MaxPool", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])],
     [vi("y", TensorProto.FLOAT, None)])
save("maxpool_kernel_len", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2])],
     [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])], [vi("y", TensorProto.FLOAT, None)])
save("concat_rank", [helper.make_node("Concat", ["a", "b"], ["y"], axis=0)],
     [vi("a", TensorProto.FLOAT, [2, 3]), vi("b", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, None)])
save("add_broadcast", [helper.make_node("Add", ["a", "b"], ["y"])],
     [vi("a", TensorProto.FLOAT, [2, 3]), vi("b", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, None)])

# ---- names and graph structure -------------------------------------------------------
x4 = [vi("x", TensorProto.FLOAT, [4])]
y4 = [vi("y", TensorProto.FLOAT, [4])]
save("dup_output", [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])], x4, y4)
save("dup_input", [helper.make_node("Relu", ["x"], ["y"])], x4 + x4, y4)
save("self_loop", [helper.make_node("Add", ["x", "y"], ["y"])], x4, y4)
save("cycle", [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
               helper.make_node("Add", ["a", "x"], ["y"])], x4, y4)
save("unproduced_output", [helper.make_node("Relu", ["x"], ["z"])], x4, y4)
save("missing_input", [helper.make_node("Add", ["x", "nowhere"], ["y"])], x4, y4)
save("empty_names", [helper.make_node("Relu", [""], [""])], [vi("", TensorProto.FLOAT, [4])],
     [vi("", TensorProto.FLOAT, [4])])
save("empty_graph", [], [], [])
save("input_is_output", [], x4, [vi("x", TensorProto.FLOAT, [4])])
save("init_shadows_input", [helper.make_node("Relu", ["x"], ["y"])], x4, y4,
     [const("x", np.ones(4, np.float32))])
save("unknown_op", [helper.make_node("NoSuchOp", ["x"], ["y"])], x4, y4)
save("foreign_domain", [helper.make_node("Relu", ["x"], ["y"], domain="com.example")], x4, y4)
save("too_many_inputs", [helper.make_node("Relu", ["x", "x", "x"], ["y"])], x4, y4)
save("too_many_outputs", [helper.make_node("Relu", ["x"], ["y", "z", "w"])], x4, y4)
for opset in (0, 1, 6, 99, 2**62):
    save("opset_%d" % (opset & 0xff), [helper.make_node("Relu", ["x"], ["y"])], x4, y4, opset=opset)
save("no_opset", [helper.make_node("Relu", ["x"], ["y"])], x4, y4, opset=None)
save("dims_negative", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [-3, 4])], y4)
save("dims_huge", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [2**62, 2**62])], y4)
save("dims_symbolic", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, ["N", 4])],
     [vi("y", TensorProto.FLOAT, ["N", 4])])
save("input_undefined_type", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.UNDEFINED, [4])], y4)
save("input_string_type", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.STRING, [4])], y4)

# ---- tensors whose parts disagree ----------------------------------------------------
def raw_tensor(name, dt, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    t.raw_data = raw
    return t


for label, t in (("raw_short", raw_tensor("c", TensorProto.FLOAT, [4], b"\0" * 7)),
                 ("raw_long", raw_tensor("c", TensorProto.FLOAT, [4], b"\0" * 40)),
                 ("dims_overflow", raw_tensor("c", TensorProto.FLOAT, [2**62, 2**62], b"\0" * 16)),
                 ("dims_neg", raw_tensor("c", TensorProto.FLOAT, [-4], b"\0" * 16)),
                 ("dtype_unknown", raw_tensor("c", 99, [4], b"\0" * 16)),
                 ("dtype_string", raw_tensor("c", TensorProto.STRING, [4], b"\0" * 16)),
                 ("dtype_bf16", raw_tensor("c", TensorProto.BFLOAT16, [4], b"\x80\x7f" * 4)),
                 ("dtype_f16_nan", raw_tensor("c", TensorProto.FLOAT16, [4], b"\x00\x7e" * 4)),
                 ("dtype_u64", raw_tensor("c", TensorProto.UINT64, [4], b"\xff" * 32)),
                 ("scalar_empty", raw_tensor("c", TensorProto.FLOAT, [], b""))):
    save("tensor_" + label, [helper.make_node("Add", ["x", "c"], ["y"])], x4, y4, [t])
t = helper.make_tensor("c", TensorProto.FLOAT, [2], [1.0, 2.0])
t.dims[0] = 4  # float_data too short for the dims
save("tensor_float_data_short", [helper.make_node("Add", ["x", "c"], ["y"])], x4, y4, [t])
t = helper.make_tensor("c", TensorProto.INT64, [2], [2**63 - 1, -(2**63)])
save("tensor_int64_data", [helper.make_node("Reshape", ["x", "c"], ["y"])], x4, y4, [t])
t = TensorProto()
t.name = "c"
t.data_type = TensorProto.FLOAT
t.dims.extend([4])
t.data_location = TensorProto.EXTERNAL
e = t.external_data.add()
e.key, e.value = "location", "../../../etc/passwd"
save("tensor_external_traversal", [helper.make_node("Add", ["x", "c"], ["y"])], x4, y4, [t])
n = helper.make_node("Constant", [], ["c"])
n.attribute.append(helper.make_attribute("value", raw_tensor("", TensorProto.FLOAT, [4], b"\0" * 3)))
save("constant_raw_short", [n, helper.make_node("Add", ["x", "c"], ["y"])], x4, y4)
save("constant_no_value", [helper.make_node("Constant", [], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
     x4, y4)

# ---- depth and width ---------------------------------------------------------------
for n_ops in (300, 5000, 20000):
    nodes = [helper.make_node("Relu" if k % 2 else "Neg", ["t%d" % k if k else "x"],
                              ["t%d" % (k + 1) if k + 1 < n_ops else "y"]) for k in range(n_ops)]
    save("chain_%d" % n_ops, nodes, x4, y4)
# Shape-deciding inputs given as data: each op imports as a shape function, a
# binder and the op reading the binder's dims (src/ops/shape.c)
I64 = TensorProto.INT64
F32 = TensorProto.FLOAT
for op, ins, shapes, attrs in (
        ("Reshape", ["x", "s"], [[2, 3, 4], [3]], {}),
        ("Reshape", ["x", "s"], [[2, 3, 4], [0]], {"allowzero": 1}),
        ("Expand", ["x", "s"], [[3, 1], [3]], {}),
        ("Tile", ["x", "s"], [[2, 3], [2]], {}),
        ("Unsqueeze", ["x", "s"], [[2, 3], [2]], {}),
        ("Squeeze", ["x", "s"], [[1, 3, 1], [2]], {}),
        ("Pad", ["x", "s"], [[2, 3], [4]], {"mode": "reflect"}),
        ("Slice", ["x", "s", "s", "s", "s"], [[4, 5], [2]], {}),
        ("Split", ["x", "s"], [[6, 2], [3]], {}),
        ("ReduceSum", ["x", "s"], [[2, 3, 4], [2]], {"keepdims": 0}),
        ("CumSum", ["x", "s"], [[2, 3], []], {}),
        ("TopK", ["x", "s"], [[2, 5], [1]], {}),
        ("NonZero", ["x"], [[2, 3]], {}),
        ("Resize", ["x", "", "s"], [[1, 1, 2, 3], [4]], {"mode": "linear"})):
    nout = 3 if op == "Split" else 2 if op == "TopK" else 1
    types = [F32 if i == 0 else (F32 if op == "Resize" else I64) for i in range(len(shapes))]
    inputs = [vi(n, t, sh) for n, t, sh in zip(dict.fromkeys(i for i in ins if i), types, shapes)]
    save("run_time_%s_%d" % (op.lower(), len(attrs)),
         [helper.make_node(op, ins, ["y%d" % k for k in range(nout)], **attrs)], inputs,
         [vi("y%d" % k, TensorProto.UNDEFINED, None) for k in range(nout)])
save("run_time_constant_of_shape", [helper.make_node("ConstantOfShape", ["s"], ["y"])],
     [vi("s", I64, [3])], [vi("y", F32, None)])
save("run_time_range", [helper.make_node("Range", ["a", "b", "c"], ["y"])],
     [vi("a", F32, []), vi("b", F32, []), vi("c", F32, [])], [vi("y", F32, None)])
save("run_time_one_hot", [helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=-1)],
     [vi("i", I64, [3]), vi("d", F32, []), vi("v", F32, [2])], [vi("y", F32, None)], opset=11)
save("run_time_compress", [helper.make_node("Compress", ["x", "c"], ["y"], axis=1)],
     [vi("x", F32, [2, 3]), vi("c", TensorProto.BOOL, [3])], [vi("y", F32, None)], opset=11)
for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    save("run_time_%s" % op.lower(), [helper.make_node(op, ["n"], ["y"], periodic=0)],
         [vi("n", I64, [])], [vi("y", F32, None)], opset=17)

nodes = [helper.make_node("Add", ["x", "x"], ["a%d" % k]) for k in range(2000)]
nodes.append(helper.make_node("Sum", ["a%d" % k for k in range(2000)], ["y"]))
save("fan_2000", nodes, x4, y4)
nodes = [helper.make_node("Add", ["c" if k == 0 else "t%d" % (k - 1), "c"], ["t%d" % k]) for k in range(3000)]
nodes.append(helper.make_node("Add", ["x", "t2999"], ["y"]))
save("fold_chain_3000", nodes, x4, y4, [const("c", np.ones(4, np.float32))])

# ---- shape sub-graphs on symbolic dims --------------------------------------------
nodes = [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
         helper.make_node("Unsqueeze", ["d0", "ax"], ["d0u"]),
         helper.make_node("Concat", ["d0u", "m1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Expand", ["r", "shape"], ["y"])]
save("shape_subgraph", nodes, [vi("x", TensorProto.FLOAT, ["B", 3, 4])], [vi("y", TensorProto.FLOAT, None)],
     [const("i0", np.array(0, np.int64)), const("ax", np.array([0], np.int64)),
      const("m1", np.array([-1], np.int64))])
nodes = [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Div", ["s", "z"], ["q"]),
         helper.make_node("Reshape", ["x", "q"], ["y"])]
save("shape_div_zero", nodes, [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, None)],
     [const("z", np.array([0, -1], np.int64))])

# ---- shape values over symbolic dims ------------------------------------------------
sym_x = [vi("x", TensorProto.FLOAT, ["B", "S", 8])]
nodes = [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
         helper.make_node("Unsqueeze", ["d1", "ax"], ["e"]),
         helper.make_node("Slice", ["table", "zero", "e", "one", "one"], ["pos"]),
         helper.make_node("Add", ["x", "pos"], ["y"])]
save("shape_slice_sym_end", nodes, sym_x, [vi("y", TensorProto.FLOAT, None)],
     [const("i1", np.array(1, np.int64)), const("ax", np.array([0], np.int64)),
      const("table", np.zeros((1, 4, 8), np.float32)), const("zero", np.array([0], np.int64)),
      const("one", np.array([1], np.int64))])
nodes = [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
         helper.make_node("Range", ["z0", "d1", "z1"], ["r"]),
         helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["rf", "ax"], ["ru"]),
         helper.make_node("Mul", ["x", "ru"], ["y"])]
save("shape_range_sym", nodes, sym_x, [vi("y", TensorProto.FLOAT, None)],
     [const("i1", np.array(1, np.int64)), const("z0", np.array(0, np.int64)),
      const("z1", np.array(1, np.int64)), const("ax", np.array([0, 2], np.int64))])
nodes = [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Equal", ["s", "m1"], ["eq"]),
         helper.make_node("Where", ["eq", "ones", "s"], ["w"]),
         helper.make_node("Mul", ["w", "sc"], ["w2"]),
         helper.make_node("Expand", ["x", "w2"], ["y"])]
for sc in ((1, 1, 1), (2, 1, 0), (-1, 1, 1)):
    save("shape_where_expand", nodes, sym_x, [vi("y", TensorProto.FLOAT, None)],
         [const("m1", np.array([-1, -1, -1], np.int64)), const("ones", np.ones(3, np.int64)),
          const("sc", np.array(sc, np.int64))])
for shape in ((0, -1, 2, 4), (-1, 0, 8), (0, 0, -1, -1), (0, 2, -1), (-1,), (0, 0, 3)):
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Squeeze", ["r", "sq"], ["y"])]
    save("shape_reshape_sym", nodes, sym_x, [vi("y", TensorProto.FLOAT, None)],
         [const("shape", np.array(shape, np.int64)), const("sq", np.array([0], np.int64))])

# ---- control flow -------------------------------------------------------------------
def body(nodes, inputs, outputs, inits=()):
    return helper.make_graph(nodes, "body", list(inputs), list(outputs), list(inits))


x4v = [vi("x", TensorProto.FLOAT, [4])]
then_b = body([helper.make_node("Add", ["x", "x"], ["t"])], [], [vi("t", TensorProto.FLOAT, [4])])
else_b = body([helper.make_node("Neg", ["x"], ["e"])], [], [vi("e", TensorProto.FLOAT, [4])])
short_b = body([helper.make_node("Slice", ["x", "z", "o"], ["e"])], [],
               [vi("e", TensorProto.FLOAT, None)],
               [const("z", np.array([0], np.int64)), const("o", np.array([1], np.int64))])
for name, tb, eb in (("if", then_b, else_b), ("if_shapes_differ", then_b, short_b),
                     ("if_same_branch", then_b, then_b)):
    save("cf_" + name, [helper.make_node("If", ["c"], ["y"], then_branch=tb, else_branch=eb)],
         [vi("c", TensorProto.BOOL, [])] + x4v, [vi("y", TensorProto.FLOAT, None)], opset=13)
save("cf_if_missing_branch", [helper.make_node("If", ["c"], ["y"], then_branch=then_b)],
     [vi("c", TensorProto.BOOL, [])] + x4v, [vi("y", TensorProto.FLOAT, None)], opset=13)
two_out = body([helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Abs", ["x"], ["b"])], [],
               [vi("a", TensorProto.FLOAT, [4]), vi("b", TensorProto.FLOAT, [4])])
save("cf_if_arity", [helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=two_out)],
     [vi("c", TensorProto.BOOL, [])] + x4v, [vi("y", TensorProto.FLOAT, None)], opset=13)
# Loop: i, cond, carried acc; a scan output; the outer x captured
loop_b = body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
               helper.make_node("Add", ["acc", "x"], ["acc_out"]),
               helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
               helper.make_node("Mul", ["acc_out", "fi"], ["scan_out"])],
              [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [4])],
              [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [4]),
               vi("scan_out", TensorProto.FLOAT, [4])])
for m in (0, 3, 2**31, -1):
    save("cf_loop_m%d" % (m if m >= 0 else 99),
         [helper.make_node("Loop", ["m", "c", "x"], ["acc", "scans"], body=loop_b)],
         [vi("c", TensorProto.BOOL, [])] + x4v,
         [vi("acc", TensorProto.FLOAT, None), vi("scans", TensorProto.FLOAT, None)],
         [const("m", np.array(m, np.int64))], opset=13)
save("cf_loop_runtime_m", [helper.make_node("Loop", ["m", "", "x"], ["acc", "scans"], body=loop_b)],
     [vi("m", I64, [])] + x4v,
     [vi("acc", TensorProto.FLOAT, None), vi("scans", TensorProto.FLOAT, None)], opset=13)
grow_b = body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
               helper.make_node("Concat", ["acc", "acc"], ["acc_out"], axis=0)],
              [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [4])],
              [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [8])])
save("cf_loop_grows", [helper.make_node("Loop", ["m", "", "x"], ["acc"], body=grow_b)],
     [vi("m", I64, [])] + x4v, [vi("acc", TensorProto.FLOAT, None)], opset=13)
# nested: an If inside a Loop body, capturing the Loop's carried value
inner_if = helper.make_node("If", ["cond_in"], ["acc_out"], then_branch=body(
    [helper.make_node("Add", ["acc", "x"], ["t"])], [], [vi("t", TensorProto.FLOAT, [4])]),
    else_branch=body([helper.make_node("Sub", ["acc", "x"], ["e"])], [], [vi("e", TensorProto.FLOAT, [4])]))
nest_b = body([helper.make_node("Identity", ["cond_in"], ["cond_out"]), inner_if],
              [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", TensorProto.FLOAT, [4])],
              [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [4])])
save("cf_nested", [helper.make_node("Loop", ["m", "c", "x"], ["acc"], body=nest_b)],
     [vi("m", I64, []), vi("c", TensorProto.BOOL, [])] + x4v, [vi("acc", TensorProto.FLOAT, None)],
     opset=13)
for levels in (12, 24):  # 24: past the loader's nesting limit
    deep = then_b
    for level in range(levels):
        deep = body([helper.make_node("If", ["c"], ["t"], then_branch=deep, else_branch=then_b)], [],
                    [vi("t", TensorProto.FLOAT, [4])])
    save("cf_if_deep", [helper.make_node("If", ["c"], ["y"], then_branch=deep, else_branch=then_b)],
         [vi("c", TensorProto.BOOL, [])] + x4v, [vi("y", TensorProto.FLOAT, None)], opset=13)
# Scan: a running sum over the rows of x [5, 4], forward and reversed
scan_b = body([helper.make_node("Add", ["s", "row"], ["s_out"]),
               helper.make_node("Identity", ["s_out"], ["y_row"])],
              [vi("s", TensorProto.FLOAT, [4]), vi("row", TensorProto.FLOAT, [4])],
              [vi("s_out", TensorProto.FLOAT, [4]), vi("y_row", TensorProto.FLOAT, [4])])
for attrs in ({}, {"scan_input_directions": [1]}, {"scan_input_axes": [1]},
              {"scan_output_axes": [5]}, {"num_scan_inputs": 2}):
    kw = dict(num_scan_inputs=1, body=scan_b)
    kw.update(attrs)
    save("cf_scan", [helper.make_node("Scan", ["init", "xs"], ["final", "ys"], **kw)],
         [vi("init", TensorProto.FLOAT, [4]), vi("xs", TensorProto.FLOAT, [5, 4])],
         [vi("final", TensorProto.FLOAT, None), vi("ys", TensorProto.FLOAT, None)], opset=11)

print("%d models in %s" % (count, out_dir))
