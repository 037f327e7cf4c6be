#!/usr/bin/env python3
"""Model benchmark: kiln against ONNX Runtime (and PyTorch, TVM where present).

Runs the model bench set (DEFAULT_MODELS: fifteen rows, thirteen
architectures, exported by models/e2e/export_models.py --full and
export_dynamic_bert.py --full) with 2 and then 1 thread(s) per engine, and
prints markdown tables: the CPU, its ISA and the FP32 peak measured in the
same run; per model and thread count kiln's median latency, GFLOP/s and % of
that peak, ONNX Runtime's median in the same run and the ratio (plus the
geometric mean of the ratios); per model the compile time, whether kiln's
output matches ONNX Runtime's (max error / the output's scale) and the peak
memory (RSS) of kiln against ONNX Runtime, each measured in a fresh process
that loads the model and runs it once. The tables go to --out
(bench/last_results.md) and, for a full run of the whole set, to
bench/results/CPU-TAG-DATE.md (e.g. zen5-avx512-2026-11-27.md), the file kept
per CPU. Normally started by bench/bench_models.sh, which sets up the Python,
exports and compiles. --check-only skips the timing: compile, correctness and
memory only (kept as CPU-TAG-DATE-check.md for the whole set).

Timing: each engine keeps its model loaded (kiln through build/bench/kiln_time,
a runtime-only helper process) and gets warm-up runs; then the engines
alternate in ROUNDS rounds (their order rotating each round), each running
RUNS times per round, so drift on the machine hits every engine alike. An
engine whose warm-up run takes more than --slow seconds runs once per round
instead (ROUNDS runs in all; the table marks it). Not a test: CI never runs it.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The CPUs this process may use, taken before any engine loads: TVM's
# runtime.config_threadpool pins the calling thread to one CPU, and every
# process started afterwards (the kiln helper) would inherit that.
ALL_CPUS = os.sched_getaffinity(0)


def unpin():
    os.sched_setaffinity(0, ALL_CPUS)
# the bench set (issue 13): batch 1 and 3x224x224 unless the name says
DEFAULT_MODELS = ["resnet50", "resnet50_b8", "mobilenetv2", "mobilenet_v3_large",
                  "efficientnet_b0", "shufflenetv2", "regnet_y_800mf", "resnext50_32x4d",
                  "densenet121", "googlenet", "convnext_tiny", "vit_b_16", "bert_base_opset17",
                  "bert_base_seq", "transformer_encoder"]
# untuned TVM takes minutes to compile and seconds to run each big model
DEFAULT_TVM_MODELS = ["resnet50", "mobilenetv2"]
# kiln's output against ONNX Runtime's, as tests/e2e/test_e2e_models.c:
# |kiln - ORT| <= RTOL |ORT| + ATOL_OF_SCALE max|ORT|
RTOL, ATOL_OF_SCALE = 1e-3, 1e-4


def log(*a):
    print(*a, flush=True)


# ------------------------------------------------------------ machine ---

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        return ""


def machine():
    lscpu = sh("LC_ALL=C lscpu")
    field = lambda k: next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
                            if l.startswith(k + ":")), "?")
    flags = field("Flags").split()
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    isa = "AVX-512 (" + ", ".join(f for f in flags if f.startswith("avx512")) + ")" \
        if "avx512f" in flags else ("AVX2 + FMA, no AVX-512" if "avx2" in flags else "no AVX2")
    return {
        "cpu": f"{field('Model name')} (family {field('CPU family')}, model {field('Model')})",
        "isa": isa,
        "cores": f"{os.cpu_count()} CPUs ({field('Core(s) per socket')} cores/socket, "
                 f"{field('Thread(s) per core')} thread/core), "
                 f"L1d {field('L1d cache')}, L2 {field('L2 cache')}, L3 {field('L3 cache')}",
        "hypervisor": field("Hypervisor vendor"),
        "memory": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "os": f"{platform.platform()}",
        "cc": sh("cc --version | head -1"),
    }


def cpu_tag():
    """A short name for the CPU and its vector ISA, from /proc/cpuinfo (x86:
    vendor, family and model; aarch64: implementer and part), e.g.
    zen5-avx512, zen3-avx2, icelake-server-avx512, arm-0xd0c-neon."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        return platform.machine() or "unknown"
    flags = (info.get("flags") or info.get("Features") or "").split()
    isa = ("avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else
           "sve" if "sve" in flags else "neon" if "asimd" in flags else
           "sse" if "sse2" in flags else platform.machine())
    vendor = info.get("vendor_id", "")
    try:
        fam, model = int(info.get("cpu family", "-1")), int(info.get("model", "-1"))
    except ValueError:
        fam, model = -1, -1
    name = None
    if vendor == "AuthenticAMD":
        if fam == 23:
            name = "zen2" if model >= 0x30 else "zen"
        elif fam == 25:
            name = "zen4" if (0x10 <= model <= 0x1f or 0x60 <= model <= 0x7f or
                              0xa0 <= model <= 0xaf) else "zen3"
        elif fam == 26:
            name = "zen5"
        else:
            name = f"amd-f{fam}m{model}"
    elif vendor == "GenuineIntel":
        intel = {(60, 63, 69, 70): "haswell", (61, 71, 79, 86): "broadwell",
                 (78, 94, 142, 158, 165, 166): "skylake", (85,): "skylake-server",
                 (106, 108): "icelake-server", (125, 126): "icelake", (140, 141): "tigerlake",
                 (143,): "sapphirerapids", (207,): "emeraldrapids", (173, 174): "graniterapids",
                 (151, 154, 183, 186, 191): "alderlake", (170, 172): "meteorlake"}
        name = next((v for k, v in intel.items() if fam == 6 and model in k),
                    f"intel-f{fam}m{model}")
    elif "CPU implementer" in info:
        name = f"arm-{info.get('CPU part', '?')}"
    return f"{name or platform.machine()}-{isa}"


def cpus_busy(seconds=1.0):
    """How many CPUs other processes keep busy: /proc/stat's non-idle share
    over `seconds` while this process sleeps, times the CPU count."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)   # total, idle + iowait
    try:
        t0, i0 = read()
        time.sleep(seconds)
        t1, i1 = read()
    except (OSError, ValueError, IndexError):
        return 0.0
    return (1 - (i1 - i0) / max(t1 - t0, 1)) * (os.cpu_count() or 1)


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def kiln_version():
    head = sh(f"git -C {ROOT} rev-parse --short HEAD") or "?"
    dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--"],
                           capture_output=True).returncode
    return head + (" + uncommitted changes" if dirty else "")


def peak(build, lanes=None):
    """The measured FP32 FMA peak at 1 and 2 threads: at the widest vector the
    build targets, or at `lanes` float lanes (another ISA's, narrower)."""
    out = subprocess.run([os.path.join(build, "bench", "peak_main"), "2"]
                         + ([str(lanes)] if lanes else []),
                         capture_output=True, text=True, check=True, preexec_fn=unpin).stdout
    return {(int(k) if k.isdigit() else k): v for k, v in json.loads(out).items()}


# ------------------------------------------------------------ models ---

def onnx_stats(path, feeds=None):
    """FLOPs (2 x MACs of Conv, Gemm and MatMul), weight bytes and the largest
    intermediate tensor, from the ONNX graph with inferred shapes (a symbolic
    input dim taken from the feeds' shapes, propagated through the model's
    shape arithmetic)."""
    import onnx
    m = onnx.load(path)
    for i in m.graph.input:
        if feeds is not None and i.name in feeds:
            for d, v in zip(i.type.tensor_type.shape.dim, feeds[i.name].shape):
                d.dim_value = int(v)
    m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    try:  # through Shape -> Gather -> Concat -> Reshape too (onnx's own stops there)
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
        m = SymbolicShapeInference.infer_shapes(m, auto_merge=True) or m
    except Exception as e:
        log(f"  note: ONNX Runtime's symbolic shape inference failed ({type(e).__name__}); "
            "some FLOPs may not be counted")
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            shapes[vi.name] = ([d.dim_value for d in t.shape.dim], t.elem_type)
    inits = {t.name: list(t.dims) for t in g.initializer}
    for n in g.node:  # Constant nodes feed shapes too
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    inits[n.output[0]] = list(a.t.dims)
    shape = lambda name: inits.get(name) or (shapes.get(name) or (None,))[0]
    macs = {"Conv": 0, "Gemm": 0, "MatMul": 0}
    missing = [x for n in g.node if n.op_type in macs
               for x in (n.input[0], n.input[1], n.output[0]) if shape(x) is None]
    if missing and feeds is not None:
        shapes.update(measured_shapes(path, feeds, sorted(set(missing))))
    for n in g.node:
        if n.op_type not in macs:
            continue
        out = shape(n.output[0])
        a, b = shape(n.input[0]), shape(n.input[1])
        if out is None or a is None or b is None:
            log(f"  note: no shape for {n.op_type} {n.name}; its FLOPs are not counted")
            continue
        if n.op_type == "Conv":   # out [N, Cout, ...], weight [Cout, Cin/group, k...]
            macs["Conv"] += int(np.prod(out)) * int(np.prod(b[1:]))
        elif n.op_type == "Gemm":
            trans_a = next((x.i for x in n.attribute if x.name == "transA"), 0)
            macs["Gemm"] += int(np.prod(out)) * (a[0] if trans_a else a[-1])
        else:
            macs["MatMul"] += int(np.prod(out)) * a[-1]
    weight_bytes = sum(int(np.prod(t.dims)) * (8 if t.data_type == 7 else 4) for t in g.initializer)
    elem = {1: 4, 7: 8, 6: 4, 9: 1, 11: 8}
    init_names = set(inits)
    acts = [(int(np.prod(s)) * elem.get(et, 4), name) for name, (s, et) in shapes.items()
            if name not in init_names]
    largest = max(acts) if acts else (0, "?")
    # the largest set a single node needs at once: its activation inputs + outputs
    live = 0
    size = {name: b for b, name in acts}
    for n in g.node:
        s = sum(size.get(x, 0) for x in list(n.input) + list(n.output))
        live = max(live, s)
    return {"flops": 2 * sum(macs.values()), "macs": macs, "weight_bytes": weight_bytes,
            "largest_act": largest, "largest_node_live": live,
            "inputs": [i.name for i in g.input if i.name not in init_names]}


def measured_shapes(path, feeds, names):
    """The shapes of tensors `names` that shape inference could not give
    (Swin-T's window attention: shapes computed by Shape, Gather, Mod, ...
    into Reshape), from one ONNX Runtime run of the model with them added as
    outputs. Without this its MatMuls were not counted: 0.95 of its 4.5
    GFLOP."""
    try:
        import onnx
        import onnxruntime as ort
        m = onnx.load(path)
        have = {o.name for o in m.graph.output}
        for name in names:
            if name not in have:
                m.graph.output.append(onnx.ValueInfoProto(name=name))
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        inputs = {i.name: feeds[i.name] for i in sess.get_inputs() if i.name in feeds}
        vals = sess.run(names, inputs)
        return {n: (list(v.shape), 1) for n, v in zip(names, vals)}
    except Exception as e:  # pragma: no cover
        log(f"  note: measuring {len(names)} shapes with ONNX Runtime failed "
            f"({type(e).__name__}); some FLOPs may not be counted")
        return {}


def package_storage(tar_path):
    """Activation storage kiln's memory plan allocates (mod.json: one buffer per
    storage_id, sized for its largest entry) and the size of mod.params."""
    with tarfile.open(tar_path) as t:
        j = json.load(t.extractfile("mod.json"))
        params = t.getmember("mod.params").size
    attrs = j["attrs"]
    shapes, dtypes, sids = attrs["shape"][1], attrs["dltype"][1], attrs["storage_id"][1]
    nbytes = {"float32": 4, "int64": 8, "int32": 4, "float64": 8, "uint8": 1, "int8": 1, "bool": 1}
    per_sid = {}
    for s, dt, sid in zip(shapes, dtypes, sids):
        b = int(np.prod(s)) * nbytes.get(dt, 4)
        per_sid[sid] = max(per_sid.get(sid, 0), b)
    return {"storage_bytes": sum(per_sid.values()), "n_storage": len(per_sid), "params_file": params}


# ------------------------------------------------------------ engines ---

class Kiln:
    name = "kiln"

    def __init__(self, build, tar, io_npz, threads):
        env = dict(os.environ, KILN_NUM_THREADS=str(threads))
        self.p = subprocess.Popen([os.path.join(build, "bench", "kiln_time"), tar, io_npz],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                  preexec_fn=unpin)
        ready = json.loads(self.p.stdout.readline() or "{}")
        if not ready.get("ready"):
            raise RuntimeError(f"kiln_time failed on {tar}")
        assert ready["threads"] == threads, ready
        assert os.sched_getaffinity(self.p.pid) == ALL_CPUS
        self.load_s = ready["load_s"]

    def run(self, n):
        self.p.stdin.write(f"{n}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("kiln_time exited")
        return json.loads(line)["times"]

    def close(self):
        try:
            self.p.stdin.write("q\n")
            self.p.stdin.close()
        except Exception:
            pass
        self.p.wait()


class KilnDynamic(Kiln):
    """The same model compiled with its batch (bert_base_seq: and sequence)
    symbolic (MODEL_dyn.tar), run at the static package's sizes: what leaving
    a dim to run time costs."""
    name = "kiln dyn"


class Ort:
    name = "ORT"

    def __init__(self, ort, onnx_path, feeds, threads):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        self.feeds = {i.name: feeds[i.name] for i in self.s.get_inputs()}

    def run(self, n):
        out = []
        for _ in range(n):
            t = time.perf_counter()
            self.s.run(None, self.feeds)
            out.append(time.perf_counter() - t)
        return out

    def close(self):
        del self.s


class Torch:
    name = "PyTorch"

    def __init__(self, torch, model, inputs, threads):
        self.torch, self.model, self.inputs, self.threads = torch, model, inputs, threads

    def run(self, n):
        torch = self.torch
        torch.set_num_threads(self.threads)
        out = []
        with torch.no_grad():
            for _ in range(n):
                t = time.perf_counter()
                self.model(*self.inputs)
                out.append(time.perf_counter() - t)
        return out

    def close(self):
        pass


def torch_model(torch, name, log_note):
    """The PyTorch model the ONNX file was exported from (same seed, same
    weights): eager, or traced + frozen + jit.optimize_for_inference, whichever
    is faster after warm-up (the latter is much slower on BERT with torch 1.13)."""
    sys.path.insert(0, os.path.join(ROOT, "models", "e2e"))
    import export_models as em
    for (n, make), _opset in em.full_specs():
        if n == name:
            break
    else:
        return None, None, "no PyTorch source"
    em.seed_everything(em.SEED)
    model, inputs, _ins, _outs, _bn = make(torch.Generator().manual_seed(em.SEED))
    model.eval()
    torch.set_num_threads(2)

    def speed(m):
        with torch.no_grad():
            for _ in range(3):
                m(*inputs)
            t = time.perf_counter()
            m(*inputs)
            return time.perf_counter() - t
    try:
        with torch.no_grad():
            jm = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, inputs).eval()))
        tj, te = speed(jm), speed(model)
        log(f"  PyTorch {name}: jit.optimize_for_inference {tj * 1e3:.1f} ms, eager {te * 1e3:.1f} ms")
        if tj <= te:
            return jm, inputs, "jit.optimize_for_inference"
        log_note(f"{name}: PyTorch runs eager: jit.optimize_for_inference was slower "
                 f"({tj * 1e3:.0f} ms against {te * 1e3:.0f} ms after 3 warm-up runs, 2 threads)")
        return model, inputs, "eager"
    except Exception as e:  # pragma: no cover
        log_note(f"{name}: torch.jit.optimize_for_inference failed ({type(e).__name__}); PyTorch runs eager")
        return model, inputs, "eager"


class Tvm:
    name = "TVM"

    def __init__(self, tvm, vm, args, threads):
        self.tvm, self.vm, self.args, self.threads = tvm, vm, args, threads
        self.cfg = tvm.get_global_func("runtime.config_threadpool", allow_missing=True)

    def run(self, n):
        if self.cfg:
            self.cfg(0, self.threads)
        f = self.vm["main"]
        out = []
        for _ in range(n):
            t = time.perf_counter()
            f(*self.args)
            out.append(time.perf_counter() - t)
        unpin()   # config_threadpool pinned this thread to one CPU
        return out

    def close(self):
        pass


def tvm_build(tvm, onnx_path, feeds):
    """Relax (apache-tvm from pip): from_onnx, tvm.compile for llvm -mcpu=native,
    no tuning. Returns (vm, args, compile seconds)."""
    import onnx
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    m = onnx.load(onnx_path)
    names = [i.name for i in m.graph.input if i.name in feeds]
    t0 = time.perf_counter()
    mod = from_onnx(m, {k: feeds[k].shape for k in names}, {k: str(feeds[k].dtype) for k in names})
    host = tvm.get_global_func("tvm.codegen.llvm.GetHostCPUName", allow_missing=True)
    ex = tvm.compile(mod, tvm.target.Target({"kind": "llvm", "mcpu": host() if host else "native"}))
    sec = time.perf_counter() - t0
    vm = relax.VirtualMachine(ex, tvm.cpu())
    mk = tvm.runtime.tensor if hasattr(tvm.runtime, "tensor") else tvm.nd.array
    return vm, [mk(feeds[k]) for k in names], sec


# ------------------------------------------------------------ timing ---

def measure(engines, rounds, runs, slow, warmup, max_run, note, what):
    """Warm every engine up, then alternate them in rounds. Returns
    {engine name: list of seconds}. A peer (not kiln) whose warm-up run takes
    over max_run seconds is not timed further: its one warm-up run is kept."""
    per_round, dropped = {}, {}
    for e in list(engines):
        t = e.run(1)[0]                       # first run: also decides fast/slow
        if e.name != "kiln" and t > max_run:
            dropped[e.name] = [t]
            engines.remove(e)
            note(f"{what}: {e.name} took {t:.1f} s for its warm-up run (over --max-peer-run "
                 f"{max_run:g} s); its figure is that one run")
            continue
        if t <= slow and warmup > 1:
            e.run(warmup - 1)
        per_round[e.name] = runs if t <= slow else 1
        log(f"    {e.name}: warm-up run {t * 1e3:.1f} ms -> {per_round[e.name]} run(s) per round")
    times = {e.name: [] for e in engines}
    # CPU this (Python) process burns while the kiln helper runs: it should be
    # idle, so anything here is a peer's threads spinning, stealing kiln's cores
    busy, wall = 0.0, 0.0
    for r in range(rounds):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for e in order:
            c0, w0 = cpu_self(), time.perf_counter()
            times[e.name] += e.run(per_round[e.name])
            if e.name == "kiln":
                busy += cpu_self() - c0
                wall += time.perf_counter() - w0
            time.sleep(0.05)                  # let the last engine's spinning threads sleep
    if wall > 0:
        log(f"    CPU used by the peers' process while kiln ran: {busy:.2f} s of {wall:.2f} s wall")
        if busy > 0.05 * wall and busy > 0.02:
            note(f"{what}: the peers' process used {busy:.1f} s of CPU during kiln's {wall:.1f} s of runs "
                 f"(spinning threads): kiln's figure for this row may be pessimistic")
    times.update(dropped)
    return times


def cpu_self():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def med_ms(ts):
    return statistics.median(ts) * 1e3 if ts else None


# ------------------------------------------------- correctness, memory ---

# One ONNX Runtime run in a fresh interpreter: load the model, run it once on
# the inputs, save the outputs. With "-" for the model it only imports (the
# interpreter's own share of the peak RSS).
ORT_ONCE = r"""
import sys
import numpy as np
import onnxruntime as ort
model, in_npz, out_npz, threads = sys.argv[1:5]
feeds = dict(np.load(in_npz))
if model != "-":
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    outs = s.run(None, {i.name: feeds[i.name] for i in s.get_inputs()})
    np.savez(out_npz, **{o.name: v for o, v in zip(s.get_outputs(), outs)})
"""


def fresh_run(cmd, env=None):
    """Peak RSS (bytes) of CMD run once in a fresh process, from /usr/bin/time -v.
    (Not os.wait4 on a child of this process: a child forked from a big Python
    process reports that process's RSS as its ru_maxrss, even after exec.)"""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env, preexec_fn=unpin)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if p.returncode or not m:
        tail = "\n".join(l for l in p.stderr.splitlines() if not l.startswith("\t"))[-600:]
        raise RuntimeError(f"{os.path.basename(cmd[0])} {cmd[1]} failed (exit {p.returncode}): {tail}")
    return int(m.group(1)) * 1024


def compare(got, exp):
    """max |got - exp|, the scale max |exp|, and how many elements are out of
    tolerance (shape or dtype mismatch: all of them)."""
    exp64 = exp.astype(np.float64)
    scale = float(np.max(np.abs(exp64))) if exp.size else 0.0
    if got.shape != exp.shape:
        return float("inf"), scale, exp.size
    err = np.abs(got.astype(np.float64) - exp64)
    bad = int(np.count_nonzero(~(err <= RTOL * np.abs(exp64) + ATOL_OF_SCALE * scale)))
    return (float(np.max(err)) if err.size else 0.0), scale, bad


def check_model(build, name, st, threads, tmp_dir):
    """`kiln run` and an ONNX Runtime session, each in a fresh process that
    loads the model, runs it once on the bench's inputs and saves the outputs:
    both peak RSS figures, and kiln's outputs against ORT's. Returns a dict:
    kiln_rss, ort_rss, err (worst max error / scale over the outputs), ok,
    details (one line per output), error (a failure's message)."""
    in_npz = os.path.join(tmp_dir, name + "_bench_in.npz")
    kiln_out = os.path.join(tmp_dir, name + "_kiln_out.npz")
    ort_out = os.path.join(tmp_dir, name + "_ort_out.npz")
    np.savez(in_npz, **st["feeds"])
    res = {"kiln_rss": None, "ort_rss": None, "err": None, "ok": False, "details": [], "error": None}
    try:
        res["ort_rss"] = fresh_run([sys.executable, "-c", ORT_ONCE, st["onnx"], in_npz, ort_out,
                                    str(threads)])
        env = dict(os.environ, KILN_NUM_THREADS=str(threads))
        res["kiln_rss"] = fresh_run([os.path.join(build, "kiln"), "run", st["tar"], "--inputs", in_npz,
                                     "--outputs", kiln_out], env)
    except RuntimeError as e:
        res["error"] = str(e)
        return res
    got, exp = np.load(kiln_out), np.load(ort_out)
    worst, ok = 0.0, True
    for o in exp.files:
        if o not in got.files:
            res["details"].append(f"{o}: kiln has no such output")
            ok, worst = False, float("inf")
            continue
        err, scale, bad = compare(got[o], exp[o])
        rel = err / scale if scale > 0 else err
        worst, ok = max(worst, rel), ok and bad == 0
        res["details"].append(f"{o} {list(exp[o].shape)}: max |kiln - ORT| {err:.3g}, scale {scale:.4g} "
                              f"({rel:.2g} of scale)"
                              + (f"; {bad} of {exp[o].size} elements out of tolerance" if bad else ""))
    res["err"], res["ok"] = worst, ok
    return res


# ------------------------------------------------------------ main ---

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench-models"),
                    help="MODEL.onnx, MODEL_io.npz (export_models.py --full) and MODEL.tar")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS,
                    help="default: the bench set, " + " ".join(DEFAULT_MODELS))
    ap.add_argument("--list-models", action="store_true", help="print the bench set and exit")
    ap.add_argument("--threads", default=None, help="thread counts, e.g. 2,1 (the default)")
    ap.add_argument("--rounds", type=int, default=None, help="default 5")
    ap.add_argument("--runs", type=int, default=None, help="runs per engine per round (default 5)")
    ap.add_argument("--warmup", type=int, default=None, help="default 3")
    ap.add_argument("--quick", action="store_true",
                    help="2 threads only, 3 rounds of 3 runs, 2 warm-up runs (about a third of "
                         "the time; noisier); its results are not kept in bench/results")
    ap.add_argument("--check-only", action="store_true",
                    help="no timing: compile times, kiln's outputs against ORT's, peak memory")
    ap.add_argument("--slow", type=float, default=1.0,
                    help="an engine whose warm-up run exceeds this (s) runs once per round")
    ap.add_argument("--max-peer-run", type=float, default=10.0,
                    help="a peer whose warm-up run exceeds this (s) is not timed further")
    ap.add_argument("--compile-times", default=None, help="JSON {model: seconds} from bench_models.sh")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-tvm", action="store_true")
    ap.add_argument("--tvm-models", nargs="*", default=DEFAULT_TVM_MODELS,
                    help="models to run TVM on (default: " + " ".join(DEFAULT_TVM_MODELS)
                         + "; untuned Relax takes minutes to compile a big model)")
    ap.add_argument("--out", default=None,
                    help="the report (default bench/last_results.md; with --check-only, none)")
    ap.add_argument("--target", default=None,
                    help="the packages were compiled for this kiln target (another ISA than this "
                         "CPU's widest, e.g. 'llvm -mcpu=znver3'): %% of peak is against this "
                         "machine's peak at the packages' vector width, and the kiln/ORT ratios "
                         "are marked as not that ISA's (ORT runs its own code for this CPU)")
    ap.add_argument("--packages-dir", default=None,
                    help="where MODEL.tar are (default: --models-dir)")
    ap.add_argument("--results-dir", default=os.path.join(ROOT, "bench", "results"),
                    help="a run of the whole set (not --quick) also writes CPU-TAG-DATE.md here")
    args = ap.parse_args()
    quick = dict(threads="2", rounds=3, runs=3, warmup=2)
    full = dict(threads="2,1", rounds=5, runs=5, warmup=3)
    for k, v in (quick if args.quick else full).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.out is None and not args.check_only:
        args.out = os.path.join(ROOT, "bench", "last_results.md")
    if args.packages_dir is None:
        args.packages_dir = args.models_dir
    return args


def package_vector_bits(build, tar):
    """The vector width a package was compiled for (kiln_time's ready line)."""
    p = subprocess.Popen([os.path.join(build, "bench", "kiln_time"), tar], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(p.stdout.readline() or "{}")
    finally:
        p.communicate("q\n")
    return int(ready.get("vector_bits", 0))


def target_slug(target):
    """'llvm -mcpu=znver3' -> 'znver3' (for the results file's name)."""
    m = re.search(r"-mcpu=([A-Za-z0-9_.+-]+)", target or "")
    return m.group(1) if m else re.sub(r"[^A-Za-z0-9]+", "-", target or "").strip("-")


def load_model(args, name, note):
    """The model's ONNX statistics, inputs and package; None (with a note)
    when a file is missing, e.g. when `kiln compile` failed."""
    onnx_path = os.path.join(args.models_dir, name + ".onnx")
    io_path = os.path.join(args.models_dir, name + "_io.npz")
    tar = os.path.join(args.packages_dir, name + ".tar")
    for f in (onnx_path, io_path, tar):
        if not os.path.exists(f):
            note(f"{name}: {os.path.basename(f)} is missing ("
                 + ("did `kiln compile` fail? see bench_models.sh's output" if f == tar
                    else "run bench/bench_models.sh, which exports it") + "); the model is skipped")
            return None
    io = np.load(io_path)
    st = onnx_stats(onnx_path, io)
    st.update(package_storage(tar))
    st["feeds"] = {k: io[k] for k in st["inputs"]}
    st["onnx"], st["io"], st["tar"] = onnx_path, io_path, tar
    log(f"{name}: {st['flops'] / 1e9:.3f} GFLOP (2 x MACs; by op: "
        + ", ".join(f"{k} {2 * v / 1e9:.3f}" for k, v in st["macs"].items()) + ")")
    return st


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    args = parse_args()
    if args.list_models:
        print(" ".join(DEFAULT_MODELS))
        return 0
    threads = [int(t) for t in args.threads.split(",")]
    notes = []
    note = lambda s: (notes.append(s), log("note:", s))
    t_start = time.time()

    import onnxruntime as ort
    versions = {"onnxruntime": ort.__version__, "numpy": np.__version__}
    torch = tvm = None
    generic_blas = False
    if not args.no_torch and not args.check_only:
        try:
            import torch
            versions["torch"] = torch.__version__
            generic_blas = "BLAS_INFO=generic" in torch.__config__.show()
            if generic_blas:
                blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
                note(f"this PyTorch (Debian's) calls the system BLAS (BLAS_INFO=generic), here "
                     f"{blas}" + (" (the reference netlib BLAS, package libblas3)" if "/blas/" in blas
                                  else "") + ": its Linear/MatMul are far slower than a PyTorch "
                     "wheel with MKL (its convolutions use oneDNN and are not affected), so the "
                     "models whose FLOPs are mostly Gemm/MatMul get no PyTorch column: seconds "
                     "per run, minutes per model, for a figure that says nothing of PyTorch")
        except ImportError:
            note("PyTorch is not importable; its column is empty")
    if not args.no_tvm and not args.check_only:
        try:
            import tvm
            from tvm.relax.frontend.onnx import from_onnx  # noqa: F401
            versions["apache-tvm"] = tvm.__version__
        except Exception as e:
            tvm = None
            note(f"TVM not used ({type(e).__name__}: {str(e)[:80]})")
    elif args.no_tvm:
        note("TVM not used (--no-tvm)")

    mach = machine()
    tag = cpu_tag() + (f"-as-{target_slug(args.target)}" if args.target else "")
    load0 = loadavg()
    others0 = cpus_busy()
    log("machine:", json.dumps(mach, indent=1), "\nCPU tag:", tag)
    log("load average at start:", load0)
    compile_times = json.load(open(args.compile_times)) if args.compile_times else {}

    models = {}
    for name in args.models:
        st = load_model(args, name, note)
        if st is not None:
            models[name] = st
    # another ISA's packages: the peak at their vector width
    pkg_lanes = None
    if args.target and models:
        bits = package_vector_bits(args.build, next(iter(models.values()))["tar"])
        pkg_lanes = bits // 32 if bits >= 128 else None
        note(f"kiln's packages were compiled for `{args.target}` ({bits}-bit vectors) and run on "
             f"this CPU ({mach['isa'].split(' (')[0]}): kiln % of peak is against this machine's "
             f"FP32 FMA peak at {pkg_lanes} lanes, measured in the same run. ONNX Runtime runs "
             f"its own kernels for this CPU, so kiln/ORT here is NOT the ratio on a CPU that has "
             f"only that ISA: that one is measured only on such a CPU "
             f"(bench/results/<its tag>-DATE.md)")
    pk0 = peak(args.build, pkg_lanes)
    log("FP32 peak at start (GFLOP/s):", pk0)

    # ---- correctness and peak memory, each engine in a fresh process that
    # loads the model and runs it once (before anything big is loaded here)
    mem_threads = threads[0]
    base_rss = None
    checks = {}
    for name, st in models.items():
        c = checks[name] = check_model(args.build, name, st, mem_threads, args.models_dir)
        if c["error"]:
            note(f"{name}: FAILED: {c['error']}")
            continue
        if base_rss is None:
            in_npz = os.path.join(args.models_dir, name + "_bench_in.npz")
            base_rss = fresh_run([sys.executable, "-c", ORT_ONCE, "-", in_npz, "-", "1"])
        log(f"{name}: kiln {'matches' if c['ok'] else 'DOES NOT MATCH'} ORT; "
            + "; ".join(c["details"]) + f"; peak RSS kiln {c['kiln_rss'] / 2**20:.1f} MiB, "
            f"ORT {c['ort_rss'] / 2**20:.1f} MiB")
        if not c["ok"]:
            note(f"{name}: kiln's output does not match ONNX Runtime's (|kiln - ORT| <= "
                 f"{RTOL:g} |ORT| + {ATOL_OF_SCALE:g} max|ORT|): " + "; ".join(c["details"]))
    mem = None
    if "resnet50" in models and checks["resnet50"]["kiln_rss"]:
        st = models["resnet50"]
        mem = dict(rss=checks["resnet50"]["kiln_rss"], weights=st["weight_bytes"],
                   params_file=st["params_file"], largest=st["largest_act"],
                   live=st["largest_node_live"], storage=st["storage_bytes"],
                   n_storage=st["n_storage"])

    # ---- timing
    rows, tvm_compile = [], {}
    for name, st in models.items():
        if args.check_only:
            break
        if checks[name]["error"]:
            continue
        tm = None
        matmul_bound = 2 * (st["macs"]["Gemm"] + st["macs"]["MatMul"]) > 0.5 * st["flops"]
        if torch is not None and not (generic_blas and matmul_bound):
            tm, tin, mode = torch_model(torch, name, note)
            if tm is None:
                note(f"{name}: no PyTorch model")
        tv = None
        if tvm is not None and name in args.tvm_models:
            try:
                tv = tvm_build(tvm, st["onnx"], st["feeds"])
                tvm_compile[name] = tv[2]
                log(f"  TVM compiled {name} in {tv[2]:.1f} s")
            except Exception as e:
                note(f"{name}: TVM failed ({type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''})")
        for T in threads:
            log(f"== {name}, {T} thread(s)")
            unpin()
            try:
                engines = [Kiln(args.build, st["tar"], st["io"], T),
                           Ort(ort, st["onnx"], st["feeds"], T)]
            except RuntimeError as e:
                note(f"{name}, {T} thread(s): not timed ({e})")
                continue
            dyn_tar = os.path.join(args.packages_dir, name + "_dyn.tar")
            if os.path.exists(dyn_tar):
                engines.append(KilnDynamic(args.build, dyn_tar, st["io"], T))
            if tm is not None:
                engines.append(Torch(torch, tm, tin, T))
            if tv is not None:
                engines.append(Tvm(tvm, tv[0], tv[1], T))
            all_engines = list(engines)
            times = measure(engines, args.rounds, args.runs, args.slow, args.warmup,
                            args.max_peer_run, note, f"{name}, {T} thread(s)")
            if tv is not None and len(times.get("TVM", [])) == 1:
                note(f"{name}: TVM is not run again with fewer threads (too slow)")
                tv = None
            for e in all_engines:
                e.close()
            r = {"model": name, "threads": T, "gflop": st["flops"] / 1e9}
            for k, v in times.items():
                r[k] = (med_ms(v), len(v))
                log(f"    {k}: median {med_ms(v):.2f} ms of {len(v)} runs "
                    f"(min {min(v) * 1e3:.2f}, max {max(v) * 1e3:.2f})")
            r["torch_mode"] = mode if tm is not None else None
            rows.append(r)
        del tm, tv

    pk1 = peak(args.build, pkg_lanes)
    load1 = loadavg()
    others1 = cpus_busy()
    if max(others0, others1) > 0.25:
        note(f"the machine was not idle: other processes kept {others0:.2f} CPUs busy at the start "
             f"and {others1:.2f} at the end (of {os.cpu_count()}; /proc/stat over 1 s while this "
             f"bench slept): times, compile times included, may be pessimistic; ratios measured "
             f"in one run less so")
    log("FP32 peak at end (GFLOP/s):", pk1)
    pk = {t: max(pk0.get(t, 0), pk1.get(t, 0)) for t in threads}
    elapsed = time.time() - t_start

    # ---- the report
    def cell(r, k):
        if k not in r:
            return "–"
        ms, n = r[k]
        return (f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}") + ("" if n >= 20 else f" (n={n})")

    def ratio(r, k):
        return f"{r['kiln'][0] / r[k][0]:.2f}" if k in r else "–"

    def gflops(r, k):
        return f"{r['gflop'] / (r[k][0] / 1e3):.0f}" if k in r else "–"

    def pct(r, k):
        return f"{100 * r['gflop'] / (r[k][0] / 1e3) / pk[r['threads']]:.1f} %" if k in r else "–"

    have_torch = any("PyTorch" in r for r in rows)
    have_tvm = any("TVM" in r for r in rows)
    hdr = ["model", "GFLOP", "threads", "kiln ms", "kiln GFLOP/s", "kiln % peak", "ORT ms",
           "kiln/ORT" + (" (not this ISA's)" if args.target else ""), "ORT % peak"]
    if have_torch:
        hdr += ["PyTorch ms", "kiln/PyTorch"]
    if have_tvm:
        hdr += ["TVM ms", "kiln/TVM"]
    have_dyn = any("kiln dyn" in r for r in rows)
    if have_dyn:
        hdr += ["kiln dyn ms", "dyn/static"]
    table = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for r in rows:
        c = [r["model"], f"{r['gflop']:.2f}", str(r["threads"]), cell(r, "kiln"), gflops(r, "kiln"),
             pct(r, "kiln"), cell(r, "ORT"), ratio(r, "ORT"), pct(r, "ORT")]
        if have_torch:
            c += [cell(r, "PyTorch"), ratio(r, "PyTorch")]
        if have_tvm:
            c += [cell(r, "TVM"), ratio(r, "TVM")]
        if have_dyn:
            c += [cell(r, "kiln dyn"),
                  f"{r['kiln dyn'][0] / r['kiln'][0]:.2f}" if "kiln dyn" in r else "–"]
        table.append("| " + " | ".join(c) + " |")
    summary = []
    for T in threads:
        rs = [r for r in rows if r["threads"] == T and "ORT" in r]
        if not rs:
            continue
        q = [(r["kiln"][0] / r["ORT"][0], r["model"]) for r in rs]
        over = [f"{m} {x:.2f}" for x, m in sorted(q, reverse=True) if x > 1.0]
        summary.append(f"- {T} thread(s): geometric mean of kiln/ORT **{geomean([x for x, _ in q]):.2f}** "
                       + ("(ORT's code for this CPU, not the target ISA's) " if args.target else "")
                       + f"over {len(q)} models; worst {max(q)[1]} {max(q)[0]:.2f}; "
                       + (f"over 1.0: {', '.join(over)}" if over else "none over 1.0"))
        if args.target:
            fr = [(100 * r["gflop"] / (r["kiln"][0] / 1e3) / pk[T], r["model"]) for r in rs]
            summary.append(f"- {T} thread(s), kiln's % of the {pkg_lanes}-lane peak: "
                           + ", ".join(f"{m} {x:.1f} %" for x, m in fr))

    mib = lambda b: f"{b / 2**20:.0f}" if b is not None else "–"
    mhdr = ["model", "kiln compile (s)"] + (["TVM compile (s)"] if tvm_compile else []) + \
        ["kiln vs ORT: max err / scale", "kiln peak RSS (MiB)", "ORT peak RSS (MiB)", "kiln/ORT RSS"]
    mt = ["| " + " | ".join(mhdr) + " |", "|" + "---|" * len(mhdr)]
    for name in args.models:
        k = compile_times.get(name)
        c = [name, f"{k:.1f}" if k is not None else ("failed" if name in compile_times else "–")]
        if tvm_compile:
            c.append(f"{tvm_compile[name]:.1f}" if name in tvm_compile else "–")
        ck = checks.get(name)
        if ck is None:
            c += ["not run", "–", "–", "–"]
        elif ck["error"]:
            c += ["**run failed**", mib(ck["kiln_rss"]), mib(ck["ort_rss"]), "–"]
        else:
            c += [f"{ck['err']:.1e}" + ("" if ck["ok"] else " **MISMATCH**"), mib(ck["kiln_rss"]),
                  mib(ck["ort_rss"]), f"{ck['kiln_rss'] / ck['ort_rss']:.2f}"]
        mt.append("| " + " | ".join(c) + " |")

    lines = []
    lines.append("# Model benchmark: " + ("compile, correctness and memory check\n" if args.check_only
                                          else "last measured results\n"))
    lines.append("Written by `bench/bench_models.sh` (bench/bench_models.py"
                 + (" --check-only" if args.check_only else " --quick" if args.quick else "")
                 + f") on {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, kiln {kiln_version()}, "
                 f"CPU tag {tag}; the whole run took {elapsed / 60:.1f} min.\n")
    if args.target:
        lines.append(f"**kiln compiled for `{args.target}`, run on this CPU.** kiln's % of peak is "
                     f"against this machine's peak at the packages' vector width ({pkg_lanes} "
                     f"lanes). The kiln/ORT column compares that code with ORT's kernels for this "
                     f"CPU: it is not the ratio on a CPU with only that ISA.\n")
    lines.append("## Machine\n")
    lines.append(f"- CPU: {mach['cpu']}, {mach['hypervisor']} guest")
    lines.append(f"- ISA: {mach['isa']}")
    lines.append(f"- {mach['cores']}")
    lines.append(f"- memory: {mach['memory']}; {mach['os']}; {mach['cc']}")
    lines.append(f"- measured FP32 FMA peak (bench/peak.h, {pk0.get('lanes', '?')} float lanes): "
                 + ", ".join(f"{t} thread(s) {pk0[t]:.1f} at start / {pk1[t]:.1f} at end GFLOP/s"
                             for t in sorted(k for k in pk0 if isinstance(k, int)))
                 + "; % of peak uses the larger of the two")
    lines.append(f"- load average at start {load0}, at end {load1}")
    lines.append("- " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    lines.append("")
    if rows:
        lines.append("## Latency (float32, medians; batch 1 but resnet50_b8)\n")
        lines.extend(table)
        lines.append("")
        lines.extend(summary)
        lines.append("")
        lines.append(
            f"Each engine keeps its model loaded, gets warm-up runs, then the engines alternate "
            f"in {args.rounds} rounds (order rotating) of {args.runs} runs each: "
            f"{args.rounds * args.runs} runs per median. An engine whose warm-up run took over "
            f"{args.slow:g} s ran once per round instead: its median is of the n runs shown. "
            f"ORT: intra_op_num_threads = threads, inter_op 1, sequential, all graph "
            f"optimizations. kiln: `kiln compile` defaults, KILN_NUM_THREADS = threads. "
            + ("PyTorch: the same nn.Module the ONNX file was exported from, "
               "eager or traced + frozen + `jit.optimize_for_inference`, whichever was faster (see "
               "Notes), torch.set_num_threads, no_grad. " if have_torch else "")
            + ("TVM: apache-tvm from pip (Relax), `from_onnx` + `tvm.compile` for "
               "llvm with the host CPU, untuned. " if have_tvm else "")
            + "GFLOP = 2 x MACs of the Conv, Gemm and MatMul nodes; GFLOP/s = GFLOP / median; "
            "% of peak = that / the measured peak for that thread count. Ratios > 1 mean kiln is "
            "slower. kiln runs some 3x3 convolutions by Winograd, which does fewer multiply-adds "
            "than the direct count above, so its % of peak is an effective rate and may pass "
            "100 %.\n")
    lines.append("## Per model: compile time, correctness, peak memory\n")
    lines.extend(mt)
    lines.append("")
    lines.append(
        "kiln compile: wall seconds of `kiln compile MODEL.onnx -o MODEL.tar` (bench_models.sh). "
        f"Correctness and memory: `kiln run PACKAGE --inputs IN --outputs OUT` and a Python that "
        f"creates an ONNX Runtime session for MODEL.onnx, each a fresh process that loads the "
        f"model, runs it once on the bench's inputs ({mem_threads} thread(s)) and exits; peak RSS "
        f"from `/usr/bin/time -v`. kiln's outputs are compared with ORT's from that run: max "
        f"|kiln - ORT| / max |ORT| over the outputs; MISMATCH where an element is over "
        f"{RTOL:g} |ORT| + {ATOL_OF_SCALE:g} max|ORT| (tests/e2e's tolerance). "
        + (f"ORT's figure includes its Python interpreter with numpy and onnxruntime imported, "
           f"{base_rss / 2**20:.0f} MiB of it before loading any model." if base_rss else "")
        + "\n")
    if mem:
        mb = lambda b: f"{b / 2**20:.1f} MiB"
        lines.append("## Memory: `kiln run` on ResNet-50\n")
        lines.append(f"- peak RSS of `build/kiln run resnet50.tar --inputs ...` (load, one run, "
                     f"exit; `/usr/bin/time -v`): **{mb(mem['rss'])}**")
        lines.append(f"- weights: {mb(mem['weights'])} (ONNX initializers; mod.params "
                     f"{mb(mem['params_file'])})")
        lines.append(f"- largest activation: {mb(mem['largest'][0])} (`{mem['largest'][1]}`); "
                     f"largest inputs + outputs of one node: {mb(mem['live'])}")
        lines.append(f"- kiln's memory plan: {mem['n_storage']} buffers, {mb(mem['storage'])} in all")
        floor = mem["weights"] + mem["live"]
        lines.append(f"- weights + largest live activations = {mb(floor)}; peak RSS is "
                     f"{mem['rss'] / floor:.2f}x that ({mb(mem['rss'] - floor)} over it)")
        lines.append("")
    if notes:
        lines.append("## Notes\n")
        lines.extend(f"- {n}" for n in notes)
        lines.append("")
    text = "\n".join(lines)
    log("\n" + text)
    outs = [args.out] if args.out else []
    if set(args.models) >= set(DEFAULT_MODELS) and not args.quick:
        os.makedirs(args.results_dir, exist_ok=True)
        outs.append(os.path.join(args.results_dir, f"{tag}-{datetime.date.today().isoformat()}"
                                 + ("-check" if args.check_only else "") + ".md"))
    else:
        log(f"(not kept in {os.path.relpath(args.results_dir, ROOT)}/: only a run of the "
            f"whole set, not --quick, is)")
    for o in outs:
        with open(o, "w") as f:
            f.write(text)
        log(f"wrote {o}")
    failed = [n for n in args.models if n not in checks or checks[n]["error"] or not checks[n]["ok"]]
    if failed:
        log(f"FAILED (not run, run failed, or output does not match ORT): {' '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
