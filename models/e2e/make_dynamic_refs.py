"""ONNX Runtime's outputs for the dynamic-batch e2e test (test_e2e_models.c,
run_dynamic): resnet50_narrow.onnx with its batch left symbolic ("N"), run
at batch 2 and 3 on inputs both sides compute from the same formula

    x[i] = ((i * 7919) % 2003) / 1001.5 - 1     (i: the flat index)

so only the outputs are stored (resnet50_narrow_dyn_io.npz: logits_2 and
logits_3). Needs onnx, numpy and onnxruntime (see README.md: a venv with
the system packages and onnxruntime from PyPI)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))


def inputs(shape):
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (((i * 7919) % 2003) / 1001.5 - 1).astype(np.float32).reshape(shape)


def main():
    m = onnx.load(os.path.join(HERE, "resnet50_narrow.onnx"))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    del m.graph.value_info[:]
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    out = {}
    for b in (2, 3):
        out["logits_%d" % b] = s.run(None, {"input": inputs((b, 3, 64, 64))})[0]
    np.savez(os.path.join(HERE, "resnet50_narrow_dyn_io.npz"), **out)
    print("onnxruntime", ort.__version__, {k: v.shape for k, v in out.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
