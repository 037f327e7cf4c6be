#!/usr/bin/env python3
"""BYOC benchmark: kiln alone, kiln+dnnl and kiln+blas against ONNX Runtime.

For each model (default: ResNet-50, MobileNetV2, the TransformerEncoder and
BERT-base of the bench set, from bench/bench_models.sh's build/bench-models)
it compiles three packages: `--target llvm`, `--target "dnnl, llvm"` and
`--target "blas, llvm"` (the backends this kiln has; kiln/byoc.h), checks
each one's outputs against ONNX Runtime's on the bench inputs, counts the
functions each backend took, then times the three packages and an ORT
session in the same rounds (bench_models.py's engines and rounds, so drift
hits each alike) and prints each one's median and its ratio to ORT's, with
the CPU and its ISA. Writes the table to --out (default
bench/results/byoc-CPU-TAG-DATE.md). A benchmark, not a test: CI runs the
narrow models offloaded (e2e_models_dnnl, e2e_models_blas) instead.

    build/bench-venv/bin/python bench/byoc_bench.py [--models resnet50 ...] [--threads 2]
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tarfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models as bm  # noqa: E402  (the engines, rounds and machine facts)

ROOT = bm.ROOT
TARGETS = [("kiln", "llvm"), ("kiln+dnnl", "dnnl, llvm"), ("kiln+blas", "blas, llvm")]


def backends(build):
    """The built-in backends this kiln has."""
    have = set()
    for name in ("dnnl", "blas"):
        # the target check names the backends this build has when one is unknown
        r = subprocess.run([os.path.join(build, "kiln"), "compile", "/dev/null", "--target",
                            name + ", llvm", "-o", "/dev/null"], capture_output=True, text=True)
        if "external backend" not in r.stderr:
            have.add(name)
    return have


def external_functions(tar):
    """{backend: functions} from the package's mod.json."""
    with tarfile.open(tar) as t:
        plan = json.load(t.extractfile("mod.json"))
    return {e["backend"]: e["functions"] for e in plan.get("target", {}).get("external", [])}


def check(build, tar, in_npz, ort_out, tmp):
    out = os.path.join(tmp, "byoc_out.npz")
    subprocess.run([os.path.join(build, "kiln"), "run", tar, "--inputs", in_npz, "--outputs", out],
                   check=True, capture_output=True)
    got, exp = np.load(out), np.load(ort_out)
    worst = 0.0
    ok = True
    for o in exp.files:
        err, scale, bad = bm.compare(got[o], exp[o])
        worst = max(worst, err / scale if scale > 0 else err)
        ok = ok and bad == 0
    return ok, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="*",
                    default=["resnet50", "mobilenetv2", "transformer_encoder", "bert_base_opset17"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import onnxruntime as ort

    have = backends(args.build)
    # idle backend threads sleep at once (the runtime's defaults too): the
    # engines alternate, and one's spinning threads would slow the next
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    targets = [t for t in TARGETS if t[0] == "kiln" or t[0].split("+")[1] in have]
    tmp = os.path.join(args.models_dir, "byoc")
    os.makedirs(tmp, exist_ok=True)
    m = bm.machine()
    rows, notes = [], []
    for name in args.models:
        onnx_path = os.path.join(args.models_dir, name + ".onnx")
        io_npz = os.path.join(args.models_dir, name + "_io.npz")
        if not os.path.exists(onnx_path) or not os.path.exists(io_npz):
            notes.append(f"{name}: no {name}.onnx / {name}_io.npz (run bench/bench_models.sh once)")
            continue
        io = np.load(io_npz)
        sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        feeds = {i.name: io[i.name] for i in sess.get_inputs()}
        in_npz = os.path.join(tmp, name + "_in.npz")
        ort_out = os.path.join(tmp, name + "_ort.npz")
        np.savez(in_npz, **feeds)
        np.savez(ort_out, **dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds))))
        del sess
        engines, info = [], {}
        for label, target in targets:
            tar = os.path.join(tmp, f"{name}_{label.replace('+', '_')}.tar")
            bm.log(f"== {name}: compile {label} (--target \"{target}\")")
            subprocess.run([os.path.join(args.build, "kiln"), "compile", onnx_path, "--target",
                            target, "-o", tar], check=True, capture_output=True)
            ok, err = check(args.build, tar, in_npz, ort_out, tmp)
            info[label] = (ok, err, external_functions(tar))
            e = bm.Kiln(args.build, tar, io_npz, args.threads)
            e.name = label
            engines.append(e)
        engines.append(bm.Ort(ort, onnx_path, feeds, args.threads))
        times = bm.measure(engines, args.rounds, args.runs, 1.0, 3, 10.0, notes.append, name)
        for e in engines:
            e.close()
        ort_ms = bm.med_ms(times["ORT"])
        for label, _ in targets:
            ms = bm.med_ms(times[label])
            ok, err, ext = info[label]
            rows.append((name, label, ms, ort_ms, ms / ort_ms, ok, err,
                         ", ".join(f"{k}: {v}" for k, v in ext.items()) or "-"))
    date = datetime.date.today().isoformat()
    lines = [f"# kiln alone, kiln+dnnl and kiln+blas against ONNX Runtime ({date})", "",
             f"- CPU: {m['cpu']}; {m['isa']}; {m['cores']}",
             f"- {args.threads} thread(s) per engine; ORT {ort.__version__}, "
             f"CPUExecutionProvider, all graph optimizations; {args.rounds} rounds of "
             f"{args.runs} runs, engines alternating; medians",
             "- kiln+X: `kiln compile --target \"X, llvm\"` (kiln/byoc.h): the backend's "
             "functions (column) run what it took, kiln the rest", "",
             "| model | build | kiln (ms) | ORT (ms) | kiln/ORT | matches ORT | functions |",
             "|---|---|---:|---:|---:|---|---|"]
    for name, label, ms, o, r, ok, err, ext in rows:
        lines.append(f"| {name} | {label} | {ms:.2f} | {o:.2f} | {r:.2f} | "
                     f"{'yes' if ok else 'NO'} ({err:.1g} of scale) | {ext} |")
    for label, _ in targets:
        rs = [r for _, lb, _, _, r, _, _, _ in rows if lb == label]
        if rs:
            g = math.exp(sum(math.log(x) for x in rs) / len(rs))
            lines.append(f"\nGeometric mean kiln/ORT, {label}: **{g:.2f}**")
    if notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or os.path.join(ROOT, "bench", "results", f"byoc-{bm.cpu_tag()}-{date}.md")
    with open(out, "w") as f:
        f.write(text)
    bm.log(f"wrote {out}")


if __name__ == "__main__":
    main()
