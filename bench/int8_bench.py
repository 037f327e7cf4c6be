#!/usr/bin/env python3
"""int8_bench.py: a model quantized by `kiln quantize` (QDQ ONNX), run by
kiln and by ONNX Runtime, against both runs of the float model, in the same
session (rounds alternate). Prints ms per run, the ratios and the CPU. A
benchmark, not a test: CI never runs it.

    PYTHONPATH=python python bench/int8_bench.py --model build/bench-models/resnet50.onnx
        [--input-shapes "input:[1,3,224,224]"] [--calib-samples 16] [--rounds 5] [--runs 10]
        [--float-kernels]   also kiln running the QDQ model on float kernels
                            (FakeQuantizationToInteger disabled: the weights
                            dequantized at compile time)
        [--agree N]         top-1 agreement of each int8 run with its float run
                            on N random inputs
        [--cpu-time]        also each kiln package's single-thread CPU time per
                            run (`kiln run` in a child, KILN_NUM_THREADS=1, the
                            CPU seconds of 41 runs less those of 1, over 40, best
                            of 3): on a shared VM whose other tenants take the
                            cores, wall times swing 2x and CPU time does not

The calibration data is random (N(0, 1)); with random weights, what this
measures is speed, not accuracy (test_quantize checks that on the digits CNN).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

import kiln  # noqa: E402
from python_overhead import cpu_model, isa  # noqa: E402


def timed(fn, runs):
    fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--input-shapes", default=None)
    ap.add_argument("--calib-samples", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--float-kernels", action="store_true")
    ap.add_argument("--agree", type=int, default=0)
    ap.add_argument("--cpu-time", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kiln-int8-")
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    rng = np.random.RandomState(0)
    calib = {inp.name: rng.randn(a.calib_samples, *shape[1:]).astype("float32")}
    q = os.path.join(tmp, "model_int8.onnx")
    t0 = time.perf_counter()
    print(kiln.quantize(a.model, calib, q, input_shapes=a.input_shapes,
                        batch=shape[0]), f"({time.perf_counter() - t0:.1f} s)")
    x = {inp.name: rng.randn(*shape).astype("float32")}
    shapes = {inp.name: shape}
    ways, outs, pkgs = {}, {}, {}
    for name, path, extra in (("kiln float", a.model, {}), ("kiln int8 (QDQ)", q, {})) + (
            (("kiln int8 (float kernels)", q, {"disabled_pass": "FakeQuantizationToInteger"}),)
            if a.float_kernels else ()):
        g = kiln.from_onnx(path, shape_dict=shapes)
        pkgs[name] = kiln.graph.compile(g, os.path.join(tmp, f"{len(ways)}.tar"), **extra)
        m = kiln.runtime.load(pkgs[name])
        gm = kiln.runtime.GraphModule(m)
        gm.set_input(**x)
        ways[name] = gm.run
        outs[name] = lambda v, m=m: m.run({inp.name: v})[0]
    so = ort.SessionOptions()
    for name, path in (("ORT float", a.model), ("ORT int8 (QDQ)", q)):
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ways[name] = (lambda s=s: s.run(None, x))
        outs[name] = lambda v, s=s: s.run(None, {inp.name: v})[0]
    if a.agree:
        vs = [rng.randn(*shape).astype("float32") for _ in range(a.agree)]
        for i8, f in (("kiln int8 (QDQ)", "kiln float"), ("ORT int8 (QDQ)", "ORT float"),
                      ("kiln int8 (QDQ)", "ORT int8 (QDQ)")):
            same = sum(int(np.argmax(outs[i8](v)) == np.argmax(outs[f](v))) for v in vs)
            print(f"top-1 agreement, {i8} vs {f}: {same}/{len(vs)}")
    res = {k: [] for k in ways}
    names = list(ways)
    for r in range(a.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            res[k].append(timed(ways[k], a.runs))
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"\n{os.path.basename(a.model)}; CPU: {cpu_model()} ({isa()}), "
          f"{kiln.runtime.num_threads()} threads; {a.rounds} rounds of {a.runs} runs, medians")
    print("| way | ms | / ORT float | / ORT int8 |\n|---|---:|---:|---:|")
    for k in names:
        print(f"| {k} | {med[k]:.2f} | {med[k] / med['ORT float']:.2f} | "
              f"{med[k] / med['ORT int8 (QDQ)']:.2f} |")
    if a.cpu_time:
        kb = os.path.join(os.environ.get("KILN_BUILD_DIR", os.path.join(os.path.dirname(HERE),
                                                                          "build")), "kiln")
        cms = {k: cpu_ms(p, kb) for k, p in pkgs.items()}
        print("\nsingle-thread CPU time per run (best of 3):")
        print("| way | ms | / kiln float |\n|---|---:|---:|")
        for k, v in cms.items():
            print(f"| {k} | {v:.2f} | {v / cms['kiln float']:.2f} |")


def cpu_ms(pkg, kiln_bin):
    """Single-thread CPU ms per run of a package (see --cpu-time)."""
    import resource
    import subprocess

    def cpu(n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([kiln_bin, "run", pkg, "--fill", "random", "--print-time", "--repeat", "1",
                        "--number", str(n)], env={**os.environ, "KILN_NUM_THREADS": "1"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return min((cpu(41) - cpu(1)) / 40 for _ in range(3)) * 1e3


if __name__ == "__main__":
    main()
