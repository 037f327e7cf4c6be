#!/usr/bin/env python3
"""Model benchmark: kiln against ONNX Runtime (and PyTorch, TVM where present).

Runs the full-size models (ResNet-50, MobileNetV2, BERT-base encoder at seq
128; exported by models/e2e/export_models.py --full) at batch 1, float32, with
2 and then 1 thread(s) per engine, and prints a markdown table of medians, the
ratios and kiln's percentage of the FP32 peak measured in the same run. The
table, the machine, the compile times and the memory of `kiln run` on
ResNet-50 go to --out (bench/last_results.md). Normally started by
bench/bench_models.sh, which sets up the Python, exports and compiles.

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
DEFAULT_MODELS = ["resnet50", "mobilenetv2", "bert_base_opset17", "bert_base_seq", "shufflenetv2"]


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


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def kiln_version():
    head = sh(f"git -C {ROOT} rev-parse --short HEAD") or "?"
    dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--"],
                           capture_output=True).returncode
    return head + (" + uncommitted changes" if dirty else "")


def peak(build):
    out = subprocess.run([os.path.join(build, "bench", "peak_main"), "2"],
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
        if busy > 0.05 * wall:
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


# ------------------------------------------------------------ memory ---

def rss_of_kiln_run(kiln, tar, in_npz):
    """Peak RSS (bytes) of one `kiln run PACKAGE --inputs IN`, from /usr/bin/time -v.
    (Not os.wait4 on a child of this process: a child forked from a big Python
    process reports that process's RSS as its ru_maxrss, even after exec.)"""
    p = subprocess.run(["/usr/bin/time", "-v", kiln, "run", tar, "--inputs", in_npz],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       preexec_fn=unpin)
    if p.returncode:
        raise RuntimeError(f"kiln run failed: {p.stderr[-500:]}")
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024


# ------------------------------------------------------------ main ---

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench-models"),
                    help="MODEL.onnx, MODEL_io.npz (export_models.py --full) and MODEL.tar")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5, help="runs per engine per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--slow", type=float, default=1.0,
                    help="an engine whose warm-up run exceeds this (s) runs once per round")
    ap.add_argument("--max-peer-run", type=float, default=10.0,
                    help="a peer whose warm-up run exceeds this (s) is not timed further")
    ap.add_argument("--compile-times", default=None, help="JSON {model: seconds} from bench_models.sh")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-tvm", action="store_true")
    ap.add_argument("--tvm-models", nargs="*", default=None,
                    help="models to run TVM on (default: all; untuned Relax can be very slow)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "last_results.md"))
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    notes = []
    note = lambda s: (notes.append(s), log("note:", s))
    t_start = time.time()

    import onnxruntime as ort
    versions = {"onnxruntime": ort.__version__, "numpy": np.__version__}
    torch = tvm = None
    if not args.no_torch:
        try:
            import torch
            versions["torch"] = torch.__version__
            if "BLAS_INFO=generic" in torch.__config__.show():
                blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
                note(f"this PyTorch (Debian's) calls the system BLAS (BLAS_INFO=generic), here "
                     f"{blas}" + (" (the reference netlib BLAS, package libblas3)" if "/blas/" in blas
                                  else "") + ": its Linear/MatMul, i.e. BERT, are far slower "
                     "than a PyTorch wheel with MKL; its convolutions use oneDNN and are not affected")
        except ImportError:
            note("PyTorch is not importable; its column is empty")
    if not args.no_tvm:
        try:
            import tvm
            from tvm.relax.frontend.onnx import from_onnx  # noqa: F401
            versions["apache-tvm"] = tvm.__version__
        except Exception as e:
            tvm = None
            note(f"TVM not used ({type(e).__name__}: {str(e)[:80]})")
    else:
        note("TVM not used (--no-tvm)")

    mach = machine()
    load0 = loadavg()
    log("machine:", json.dumps(mach, indent=1))
    log("load average at start:", load0)
    pk0 = peak(args.build)
    log("FP32 peak at start (GFLOP/s):", pk0)
    compile_times = json.load(open(args.compile_times)) if args.compile_times else {}

    models = {}
    for name in args.models:
        onnx_path = os.path.join(args.models_dir, name + ".onnx")
        io_path = os.path.join(args.models_dir, name + "_io.npz")
        tar = os.path.join(args.models_dir, name + ".tar")
        for f in (onnx_path, io_path, tar):
            if not os.path.exists(f):
                sys.exit(f"bench_models.py: {f} is missing (run bench/bench_models.sh)")
        io = np.load(io_path)
        st = onnx_stats(onnx_path, io)
        st.update(package_storage(tar))
        st["feeds"] = {k: io[k] for k in st["inputs"]}
        st["onnx"], st["io"], st["tar"] = onnx_path, io_path, tar
        models[name] = st
        log(f"{name}: {st['flops'] / 1e9:.3f} GFLOP (2 x MACs; by op: "
            + ", ".join(f"{k} {2 * v / 1e9:.3f}" for k, v in st["macs"].items()) + ")")

    # ---- memory of `kiln run` on ResNet-50 (before anything big is loaded here)
    mem = None
    if "resnet50" in models:
        st = models["resnet50"]
        in_npz = os.path.join(args.models_dir, "resnet50_bench_in.npz")
        np.savez(in_npz, **st["feeds"])
        rss = rss_of_kiln_run(os.path.join(args.build, "kiln"), st["tar"], in_npz)
        mem = dict(rss=rss, weights=st["weight_bytes"], params_file=st["params_file"],
                   largest=st["largest_act"], live=st["largest_node_live"],
                   storage=st["storage_bytes"], n_storage=st["n_storage"])
        log(f"resnet50: kiln run peak RSS {rss / 2**20:.1f} MiB; weights {st['weight_bytes'] / 2**20:.1f} MiB")

    # ---- timing
    rows, tvm_compile = [], {}
    for name, st in models.items():
        tm = None
        if torch is not None:
            tm, tin, mode = torch_model(torch, name, note)
            if tm is None:
                note(f"{name}: no PyTorch model")
        tv = None
        if tvm is not None and (args.tvm_models is None or name in args.tvm_models):
            try:
                tv = tvm_build(tvm, st["onnx"], st["feeds"])
                tvm_compile[name] = tv[2]
                log(f"  TVM compiled {name} in {tv[2]:.1f} s")
            except Exception as e:
                note(f"{name}: TVM failed ({type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''})")
        for T in threads:
            log(f"== {name}, {T} thread(s)")
            unpin()
            engines = [Kiln(args.build, st["tar"], st["io"], T),
                       Ort(ort, st["onnx"], st["feeds"], T)]
            dyn_tar = os.path.join(args.models_dir, name + "_dyn.tar")
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

    pk1 = peak(args.build)
    load1 = loadavg()
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

    def pct(r, k):
        return f"{100 * r['gflop'] / (r[k][0] / 1e3) / pk[r['threads']]:.1f} %" if k in r else "–"

    have_torch = any("PyTorch" in r for r in rows)
    have_tvm = any("TVM" in r for r in rows)
    hdr = ["model", "GFLOP", "threads", "kiln ms", "ORT ms", "kiln/ORT"]
    if have_torch:
        hdr += ["PyTorch ms", "kiln/PyTorch"]
    if have_tvm:
        hdr += ["TVM ms", "kiln/TVM"]
    have_dyn = any("kiln dyn" in r for r in rows)
    if have_dyn:
        hdr += ["kiln dyn ms", "dyn/static"]
    hdr += ["kiln % peak", "ORT % peak"]
    table = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for r in rows:
        c = [r["model"], f"{r['gflop']:.2f}", str(r["threads"]), cell(r, "kiln"), cell(r, "ORT"),
             ratio(r, "ORT")]
        if have_torch:
            c += [cell(r, "PyTorch"), ratio(r, "PyTorch")]
        if have_tvm:
            c += [cell(r, "TVM"), ratio(r, "TVM")]
        if have_dyn:
            c += [cell(r, "kiln dyn"),
                  f"{r['kiln dyn'][0] / r['kiln'][0]:.2f}" if "kiln dyn" in r else "–"]
        c += [pct(r, "kiln"), pct(r, "ORT")]
        table.append("| " + " | ".join(c) + " |")

    ct = ["| model | kiln compile (s) |" + (" TVM compile (s) |" if tvm_compile else ""),
          "|---|---|" + ("---|" if tvm_compile else "")]
    for name in models:
        k = compile_times.get(name)
        ct.append(f"| {name} | {k:.1f} |" if k is not None else f"| {name} | – |")
        if tvm_compile:
            ct[-1] += f" {tvm_compile[name]:.1f} |" if name in tvm_compile else " – |"

    lines = []
    lines.append("# Model benchmark: last measured results\n")
    lines.append(f"Written by `bench/bench_models.sh` (bench/bench_models.py) on "
                 f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, kiln {kiln_version()}; "
                 f"the whole run took {elapsed / 60:.1f} min.\n")
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
    lines.append("## Latency (batch 1, float32, medians)\n")
    lines.append(table[0])
    lines.extend(table[1:])
    lines.append("")
    lines.append(f"Each engine keeps its model loaded, gets warm-up runs, then the engines alternate "
                 f"in {args.rounds} rounds (order rotating) of {args.runs} runs each: "
                 f"{args.rounds * args.runs} runs per median. An engine whose warm-up run took over "
                 f"{args.slow:g} s ran once per round instead: its median is of the n runs shown. "
                 f"ORT: intra_op_num_threads = threads, inter_op 1, sequential, all graph "
                 f"optimizations. kiln: `kiln compile` defaults, KILN_NUM_THREADS = threads. "
                 + (f"PyTorch: the same nn.Module the ONNX file was exported from, "
                    "eager or traced + frozen + `jit.optimize_for_inference`, whichever was faster (see "
                    "Notes), torch.set_num_threads, no_grad. " if have_torch else "")
                 + ("TVM: apache-tvm from pip (Relax), `from_onnx` + `tvm.compile` for "
                    "llvm with the host CPU, untuned. " if have_tvm else "")
                 + "GFLOP = 2 x MACs of the Conv, Gemm and MatMul nodes; % of peak = GFLOP / median "
                 "/ measured peak for that thread count. Ratios > 1 mean kiln is slower. kiln runs "
                 "some 3x3 convolutions by Winograd, which does fewer multiply-adds than the direct "
                 "count above, so its % of peak is an effective rate and may pass 100 %.\n")
    lines.append("## Compile time (`kiln compile`, wall, ONNX file to package)\n")
    lines.extend(ct)
    lines.append("")
    if mem:
        mib = lambda b: f"{b / 2**20:.1f} MiB"
        lines.append("## Memory: `kiln run` on ResNet-50\n")
        lines.append(f"- peak RSS of `build/kiln run resnet50.tar --inputs ...` (load, one run, "
                     f"exit; `/usr/bin/time -v`): **{mib(mem['rss'])}**")
        lines.append(f"- weights: {mib(mem['weights'])} (ONNX initializers; mod.params "
                     f"{mib(mem['params_file'])})")
        lines.append(f"- largest activation: {mib(mem['largest'][0])} (`{mem['largest'][1]}`); "
                     f"largest inputs + outputs of one node: {mib(mem['live'])}")
        lines.append(f"- kiln's memory plan: {mem['n_storage']} buffers, {mib(mem['storage'])} in all")
        floor = mem["weights"] + mem["live"]
        lines.append(f"- weights + largest live activations = {mib(floor)}; peak RSS is "
                     f"{mem['rss'] / floor:.2f}x that ({mib(mem['rss'] - floor)} over it)")
        lines.append("")
    if notes:
        lines.append("## Notes\n")
        lines.extend(f"- {n}" for n in notes)
        lines.append("")
    text = "\n".join(lines)
    with open(args.out, "w") as f:
        f.write(text)
    log("\n" + text)
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
