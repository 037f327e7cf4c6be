"""kiln.runtime: packages run on numpy, executors, timing, per-kernel
profiles, threads, and clear errors for bad inputs."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln
from conftest import run_threads


@pytest.fixture(scope="module")
def reference(root):
    z = np.load(os.path.join(root, "models", "digits", "reference_logits.npz"))
    return z["logits"]


def test_model_run_matches_reference(digits_tar, digits_data, reference):
    m = kiln.runtime.load(digits_tar)
    assert [p.name for p in m.inputs] == ["input"] and m.inputs[0].shape == (1, 1, 8, 8)
    assert m.outputs[0].name == "logits" and m.outputs[0].dtype == "float32"
    for i in range(5):
        (y,) = m.run({"input": digits_data["input"][i:i + 1]})
        np.testing.assert_allclose(y[0], reference[i], rtol=1e-4, atol=1e-4)
    # a non-contiguous input is fine (any strides)
    x = np.asfortranarray(digits_data["input"][0:1])
    np.testing.assert_allclose(m.run([x])[0][0], reference[0], rtol=1e-4, atol=1e-4)


def test_graph_module_benchmark_profile(digits_tar, digits_data, reference):
    gm = kiln.runtime.GraphModule(digits_tar)
    gm.set_input("input", digits_data["input"][3:4])
    gm.run()
    assert gm.get_num_outputs() == 1
    np.testing.assert_allclose(gm.get_output(0)[0], reference[3], rtol=1e-4, atol=1e-4)
    gm.run(input=digits_data["input"][4:5])
    np.testing.assert_allclose(gm.get_output(0)[0], reference[4], rtol=1e-4, atol=1e-4)
    t = gm.benchmark(repeat=5, number=3)
    assert set(t) == {"mean", "median", "max", "min", "std"}
    assert 0 < t["min"] <= t["median"] <= t["max"]
    prof = gm.profile(repeat=2)
    assert prof and all(k["seconds"] >= 0 and k["func"] for k in prof)
    assert sum(k["flops"] for k in prof if k["flops"] > 0) > 0


def test_threads_one_executor_each(digits_tar, digits_data, reference):
    m = kiln.runtime.load(digits_tar)

    def work(k):
        gm = kiln.runtime.GraphModule(m)
        for i in range(k, 40, 4):
            gm.run(input=digits_data["input"][i:i + 1])
            np.testing.assert_allclose(gm.get_output(0)[0], reference[i], rtol=1e-4, atol=1e-4)
            (y,) = m.run([digits_data["input"][i:i + 1]])  # the shared model too
            np.testing.assert_allclose(y[0], reference[i], rtol=1e-4, atol=1e-4)

    errors = run_threads(work)
    assert not errors, errors


def test_errors(digits_tar, tmp_path):
    m = kiln.runtime.load(digits_tar)
    with pytest.raises(kiln.KilnError, match="missing"):
        m.run({"wrong": np.zeros((1, 1, 8, 8), "float32")})
    with pytest.raises(kiln.KilnError):
        m.run([np.zeros((1, 1, 9, 8), "float32")])
    with pytest.raises(kiln.KilnError):
        m.run([np.zeros((1, 1, 8, 8), "int32")])
    gm = kiln.runtime.GraphModule(m)
    with pytest.raises(kiln.KilnError):
        gm.set_input("nope", np.zeros((1, 1, 8, 8), "float32"))
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not a package")
    with pytest.raises(kiln.KilnError, match="bad.tar"):
        kiln.runtime.load(str(bad))


def test_dynamic_batch(digits_onnx, digits_data, reference, tmp_path):
    g = kiln.from_onnx(digits_onnx)  # batch stays symbolic
    pkg = kiln.graph.compile(g, str(tmp_path / "dyn.tar"))
    m = kiln.runtime.load(pkg)
    assert m.inputs[0].shape[0] == "batch"
    for n in (1, 7):
        (y,) = m.run([digits_data["input"][:n]])
        np.testing.assert_allclose(y, reference[:n], rtol=1e-4, atol=1e-4)


def test_output_views_keep_the_executor(digits_tar, digits_data, reference):
    import gc

    gm = kiln.runtime.GraphModule(digits_tar)
    gm.run(input=digits_data["input"][0:1])
    view = gm.get_output(0, copy=False)
    out = np.empty((1, 10), "float32")
    assert gm.get_output(0, out=out) is out
    assert gm.get_num_inputs() == 1
    del gm
    gc.collect()
    np.testing.assert_allclose(view[0], reference[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(view, out)
