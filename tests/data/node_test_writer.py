"""What the generators of kiln's own node tests share (make_index_node_tests.py,
make_conv_node_tests.py): a Writer puts tests in the ONNX backend layout
(test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb) under one
folder, which kiln_conformance --data runs."""
import os
import shutil

import onnx
from onnx import helper, numpy_helper
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE


class Writer:
    def __init__(self, out, producer):
        """Tests go to the folder out (emptied first), made by `producer`."""
        self.out, self.producer = out, producer
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)

    def __call__(self, name, nodes, inputs, outputs, opset, consts=()):
        """One test: nodes reading graph inputs (name, array) and Constant
        nodes (name, array), producing outputs (name, expected array)."""
        cnodes = [helper.make_node("Constant", [], [c], value=numpy_helper.from_array(v, c))
                  for c, v in consts]
        vi = lambda n, a: helper.make_tensor_value_info(
            n, NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
        graph = helper.make_graph(cnodes + nodes, name, [vi(n, a) for n, a in inputs],
                                  [vi(n, a) for n, a in outputs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name=self.producer)
        model.ir_version = 8
        onnx.checker.check_model(model)
        d = os.path.join(self.out, "test_" + name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(model, os.path.join(d, "model.onnx"))
        for kind, vals in (("input", inputs), ("output", outputs)):
            for i, (n, a) in enumerate(vals):
                with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)
