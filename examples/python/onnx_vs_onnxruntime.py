"""Compile an ONNX model with kiln and check it against ONNX Runtime on
the same random inputs (kiln.from_onnx, kiln.graph.compile, kiln.runtime).

    PYTHONPATH=python python examples/python/onnx_vs_onnxruntime.py [MODEL.onnx]

Default: the bundled digits CNN (models/digits). Exits 1 if an output
differs by more than 1e-4 of its scale.
"""

import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "models", "digits", "digits_cnn.onnx")


def concrete(shape):
    return [d if isinstance(d, int) and d > 0 else 1 for d in shape]


def main(path):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.RandomState(0)
    feeds, shapes = {}, {}
    for i in sess.get_inputs():
        shape = concrete(i.shape)
        dtype = {"tensor(float)": "float32", "tensor(int64)": "int64"}[i.type]
        feeds[i.name] = (rng.randn(*shape) if dtype == "float32"
                         else rng.randint(0, 2, shape)).astype(dtype)
        shapes[i.name] = shape
    ref = sess.run(None, feeds)
    g = kiln.from_onnx(path, shape_dict=shapes)
    with tempfile.TemporaryDirectory() as tmp:
        model = kiln.runtime.load(kiln.graph.compile(g, os.path.join(tmp, "m.tar")))
        outs = model.run(feeds)
    worst = 0.0
    for o, r, info in zip(outs, ref, sess.get_outputs()):
        err = float(np.abs(o - r).max()) / max(float(np.abs(r).max()), 1e-6)
        worst = max(worst, err)
        print(f"{info.name}: shape {o.shape}, max error {err:.2e} of the output's scale")
    ok = worst <= 1e-4
    print("kiln matches ONNX Runtime" if ok else "kiln DIFFERS from ONNX Runtime")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT))
