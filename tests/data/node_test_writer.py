"""What the node-test generators (make_index_node_tests.py,
make_image_node_tests.py) share: writing one test in the ONNX backend
layout (test_NAME/model.onnx, test_data_set_0/input_N.pb, output_N.pb)."""
import os

import onnx
from onnx import helper, numpy_helper
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE


def writer(out, producer):
    """write(name, nodes, inputs, outputs, opset, consts=()) for tests in
    folder out: nodes reading graph inputs (name, array) and Constant nodes
    (name, array), producing outputs (name, expected array)."""

    def write(name, nodes, inputs, outputs, opset, consts=()):
        cnodes = [helper.make_node("Constant", [], [c], value=numpy_helper.from_array(v, c))
                  for c, v in consts]
        vi = lambda n, a: helper.make_tensor_value_info(
            n, NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
        graph = helper.make_graph(cnodes + nodes, name, [vi(n, a) for n, a in inputs],
                                  [vi(n, a) for n, a in outputs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name=producer)
        model.ir_version = 8
        onnx.checker.check_model(model)
        d = os.path.join(out, "test_" + name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(model, os.path.join(d, "model.onnx"))
        for kind, vals in (("input", inputs), ("output", outputs)):
            for i, (n, a) in enumerate(vals):
                with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())

    return write
