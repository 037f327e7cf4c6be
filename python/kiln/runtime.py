"""Running packages from Python, as ``kiln run`` (and tvmc run) does.

    m = kiln.runtime.load("model.tar")         # a Model: code and weights, shared
    outs = m.run({"input": x})                # any thread, at once: no shared state
    gm = kiln.runtime.GraphModule(m)          # an executor: one per thread
    gm.set_input("input", x); gm.run(); y = gm.get_output(0)
    print(gm.benchmark(repeat=100))           # mean/median/max/min/std in ms
    for k in gm.profile(): print(k)           # per kernel

Arrays go in and out as numpy. ``Model.run`` writes outputs straight into
numpy arrays and reads contiguous inputs in place (no copies); an executor
copies inputs into its own buffers, as kiln_executor_set_input does.
Calls into C release the GIL, so threads run models in parallel.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import time
from typing import Any, Dict, List, Optional, Sequence, Union

from . import ndarray as _nd
from ._lib import C, KilnError, check, check_ptr
from .driver import Module, load_module  # noqa: F401 - kiln.runtime.load_module


class _Port:
    def __init__(self, name: str, dtype: str, shape: tuple) -> None:
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.name}: {self.dtype}[{dims}]"


class Model:
    """A loaded package (``kiln_model``). It may be run from any number of
    threads at once."""

    def __init__(self, path: str) -> None:
        self.path = os.fspath(path)
        self.handle = check_ptr(C.kiln_model_load(self.path.encode()))
        h = self.handle
        self.inputs = [self._port(True, i) for i in range(C.kiln_model_num_inputs(h))]
        self.outputs = [self._port(False, i) for i in range(C.kiln_model_num_outputs(h))]

    def _port(self, inp: bool, i: int) -> _Port:
        h = self.handle
        pre = "kiln_model_input_" if inp else "kiln_model_output_"
        name = getattr(C, pre + "name")(h, i).decode()
        dt = _nd.dtype_name(getattr(C, pre + "dtype")(h, i))
        dims = []
        for d in range(getattr(C, pre + "ndim")(h, i)):
            v = getattr(C, pre + "dim")(h, i, d)
            dims.append(v if v >= 0 else getattr(C, pre + "dim_expr")(h, i, d).decode())
        return _Port(name, dt, tuple(dims))

    def _in_list(self, inputs: Union[Dict[str, Any], Sequence[Any]]) -> List[Any]:
        import numpy as np

        if isinstance(inputs, dict):
            missing = [p.name for p in self.inputs if p.name not in inputs]
            extra = [k for k in inputs if k not in {p.name for p in self.inputs}]
            if missing or extra:
                raise KilnError(f"kiln: {self.path}: inputs missing {missing}, unknown {extra} "
                                f"(the model's: {[p.name for p in self.inputs]})")
            vals = [inputs[p.name] for p in self.inputs]
        else:
            vals = list(inputs)
            if len(vals) != len(self.inputs):
                raise KilnError(f"kiln: {self.path}: {len(vals)} inputs given, the model has "
                                f"{len(self.inputs)}")
        return [np.asarray(v) for v in vals]

    def run(self, inputs: Union[Dict[str, Any], Sequence[Any]]) -> List[Any]:
        """Outputs (numpy) for inputs (a dict by name, or a list in order)."""
        import numpy as np

        vals = self._in_list(inputs)
        ws = [_nd.Wrapped(v) for v in vals]
        ins = (ctypes.c_void_p * max(len(ws), 1))(*[w.handle for w in ws])
        static = all(all(isinstance(d, int) for d in p.shape) for p in self.outputs)
        try:
            if static:
                outs = [np.empty(p.shape, np.dtype(p.dtype)) for p in self.outputs]
                ow = [_nd.Wrapped(o) for o in outs]
                oa = (ctypes.c_void_p * max(len(ow), 1))(*[w.handle for w in ow])
                try:
                    check(C.kiln_model_run(self.handle, ins, oa, 0))
                finally:
                    for w in ow:
                        w.free()
                return outs
            oa = (ctypes.c_void_p * max(len(self.outputs), 1))()
            _run_alloc(self.handle, ins, oa)
            res = []
            for i in range(len(self.outputs)):
                res.append(_nd.to_numpy(oa[i]))
                C.kiln_ndarray_free(oa[i])
            return res
        finally:
            for w in ws:
                w.free()

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_model_free(h)
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"<kiln.runtime.Model {self.path} inputs={self.inputs} outputs={self.outputs}>"


def _run_alloc(model: int, ins: Any, outs: Any) -> None:
    check(C.kiln_model_run_alloc(model, ins, outs, 0))


def load(path: str) -> Model:
    """Load a package written by kiln compile or kiln.graph.compile."""
    return Model(path)


class GraphModule:
    """An executor over a model (TVM's graph_executor.GraphModule): inputs
    that keep their values, outputs readable until the next run, timing and
    per-kernel profiles. One thread at a time; make one per thread."""

    def __init__(self, model: Union[Model, str]) -> None:
        self.model = model if isinstance(model, Model) else Model(model)
        self.handle = check_ptr(C.kiln_executor_create_from_model(self.model.handle))

    def set_input(self, key: Any = None, value: Any = None, **inputs: Any) -> None:
        if key is not None:
            name = self.model.inputs[key].name if isinstance(key, int) else key
            inputs = {name: value, **inputs}
        for name, v in inputs.items():
            w = _nd.Wrapped(v)
            try:
                check(C.kiln_executor_set_input(self.handle, name.encode(), w.handle))
            finally:
                w.free()

    def run(self, **inputs: Any) -> None:
        if inputs:
            self.set_input(**inputs)
        check(C.kiln_executor_run(self.handle))

    def get_num_outputs(self) -> int:
        return C.kiln_executor_num_outputs(self.handle)

    def get_num_inputs(self) -> int:
        return len(self.model.inputs)

    def get_output(self, index: int, out: Any = None, copy: bool = True) -> Any:
        """Output ``index`` of the last run as numpy: a copy, or copied into
        ``out`` (and returned), or with copy=False a view of the executor's
        buffer (it keeps the executor alive; its values change with the
        next run)."""
        h = C.kiln_executor_output(self.handle, index)
        if not h:
            raise KilnError(f"kiln: no output {index} (run first; the model has "
                            f"{self.get_num_outputs()})")
        if out is not None:
            w = _nd.Wrapped(out)
            try:
                if w.array is not out:
                    raise KilnError("kiln: get_output(out=...) needs an array of the output's "
                                    "dtype in this machine's byte order")
                check(C.kiln_ndarray_copy(w.handle, h))
            finally:
                w.free()
            return out
        return _nd.to_numpy(h, copy=copy, owner=self)

    def benchmark(self, repeat: int = 10, number: int = 1, warmup: int = 1) -> Dict[str, float]:
        """Time ``repeat`` rounds of ``number`` runs: mean, median, max, min
        and std in milliseconds per run, as tvmc run --print-time reports."""
        for _ in range(warmup):
            self.run()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                check(C.kiln_executor_run(self.handle))
            times.append((time.perf_counter() - t0) * 1e3 / number)
        return {"mean": statistics.fmean(times), "median": statistics.median(times),
                "max": max(times), "min": min(times),
                "std": statistics.pstdev(times) if len(times) > 1 else 0.0}

    def profile(self, repeat: int = 1) -> List[Dict[str, Any]]:
        """Per kernel: name, function, seconds (the best of ``repeat``
        runs), flops and bytes (counted by the compiler; -1 if unknown)."""
        n = C.kiln_executor_num_kernels(self.handle)
        best = [float("inf")] * n
        secs = (ctypes.c_double * max(n, 1))()
        for _ in range(max(1, repeat)):
            check(C.kiln_executor_run_profiled(self.handle, secs))
            best = [min(b, secs[i]) for i, b in enumerate(best)]
        out = []
        for k in range(n):
            fl, by = ctypes.c_double(-1), ctypes.c_double(-1)
            C.kiln_executor_kernel_cost(self.handle, k, ctypes.byref(fl), ctypes.byref(by))
            out.append({"name": C.kiln_executor_kernel_name(self.handle, k).decode(),
                        "func": C.kiln_executor_kernel_func(self.handle, k).decode(),
                        "seconds": best[k], "flops": fl.value, "bytes": by.value})
        return out

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_executor_free(h)
            except Exception:
                pass


def set_num_threads(n: int) -> None:
    """The threads kiln's kernels use (0: one per core)."""
    check(C.kiln_set_num_threads(n))


def num_threads() -> int:
    return C.kiln_num_threads()


__all__ = ["Model", "GraphModule", "load", "load_module", "Module", "set_num_threads",
           "num_threads"]
