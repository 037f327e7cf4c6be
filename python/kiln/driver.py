"""Lowering and building tensor-expression schedules: ``kiln.lower`` and
``kiln.build`` (TVM's ``tvm.lower`` and ``tvm.build``), and the modules
they make."""

from __future__ import annotations

import ctypes
import os
from typing import Any, List, Optional, Sequence

from . import ndarray as _nd
from ._lib import C, KilnError, check, check_ptr, take_str
from .options import BuildOptions
from .te import Schedule, Tensor, tensor_args


def lower(s: Schedule, args: Sequence[Tensor], name: str = "main",
          simple_mode: bool = True) -> str:
    """The loop IR of the function taking ``args`` (placeholders and
    outputs), as text."""
    return take_str(C.kiln_lower_to_string(s.handle, len(args), tensor_args(args),
                                           name.encode()))


class PackedFunction:
    """A built function: call it on numpy arrays (inputs and outputs, in the
    order of the build's args). Contiguous arrays are passed without a copy;
    outputs are written in place."""

    def __init__(self, handle: int, module: "Module") -> None:
        self.handle = handle
        self.module = module  # keeps the code loaded

    @property
    def name(self) -> str:
        return C.kiln_function_name(self.handle).decode()

    @property
    def num_args(self) -> int:
        return C.kiln_function_num_args(self.handle)

    def __call__(self, *arrays: Any) -> None:
        import numpy as np

        ws = []
        for k, a in enumerate(arrays):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"kiln: {self.name} takes numpy arrays, not {type(a).__name__}")
            if k == len(arrays) - 1 and not a.flags.writeable:
                raise KilnError(f"kiln: {self.name}: the output (the last argument) is a "
                                "read-only array (kernels write their outputs in place)")
            if not a.flags.c_contiguous:
                raise KilnError(f"kiln: {self.name}: arrays must be C-contiguous "
                                "(np.ascontiguousarray)")
            ws.append(_nd.Wrapped(a))
        arr = (ctypes.c_void_p * max(len(ws), 1))(*[w.handle for w in ws])
        try:
            check(C.kiln_function_call(self.handle, len(ws), arr))
        finally:
            for w in ws:
                w.free()

    def __repr__(self) -> str:
        return f"<kiln.PackedFunction {self.name}>"


class Module:
    """A loaded shared object of built functions (``kiln_module``)."""

    def __init__(self, handle: int, source: Any = None) -> None:
        self.handle = handle
        self._source = source  # the C text, or a function that makes it

    def __getitem__(self, name: str) -> PackedFunction:
        return PackedFunction(check_ptr(C.kiln_module_get_function(self.handle, name.encode())),
                              self)

    get_function = __getitem__

    @property
    def functions(self) -> List[str]:
        return [C.kiln_function_name(C.kiln_module_function_at(self.handle, i)).decode()
                for i in range(C.kiln_module_function_count(self.handle))]

    def __call__(self, *arrays: Any) -> None:
        """Call the module's function (a module of one function)."""
        fns = self.functions
        if len(fns) != 1:
            raise KilnError(f"kiln: the module has {len(fns)} functions: pick one with mod[name]")
        self[fns[0]](*arrays)

    def export_library(self, path: str) -> None:
        """Save the shared object; kiln.runtime.load_module (or the C
        runtime's kiln_module_load) loads it in another process."""
        check(C.kiln_module_save(self.handle, os.fspath(path).encode()))

    def get_source(self) -> str:
        """The generated C (when the build kept it)."""
        if self._source is None:
            raise KilnError("kiln: this module was loaded from a file: it has no source")
        if callable(self._source):
            self._source = self._source()
        return self._source

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_module_free(h)
            except Exception:
                pass


def build(s: Schedule, args: Sequence[Tensor], target: Any = None, name: str = "default_function",
          target_host: Any = None, options: Optional[BuildOptions] = None, **kw: Any) -> Module:
    """Lower, generate C, compile and load one function ``name`` taking
    ``args``. ``target`` is a target string ("llvm", "llvm -mcpu=haswell");
    keywords are build options (cc, cflags, vector_bits, cache)."""
    if target_host is not None and target is not None and str(target).split()[0] in ("cuda",):
        raise KilnError("kiln: there is no CUDA back end; build for the CPU (target='llvm')")
    o = options or BuildOptions(target=target, **kw)
    a = tensor_args(args)
    h = check_ptr(C.kiln_build(s.handle, len(args), a, name.encode(), o.handle))

    def source() -> str:
        return take_str(C.kiln_build_source(s.handle, len(args), a, name.encode(), o.handle))

    return Module(h, source)


def load_module(path: str) -> Module:
    """Load a module saved by Module.export_library."""
    return Module(check_ptr(C.kiln_module_load(os.fspath(path).encode())))


def build_save(s: Schedule, args: Sequence[Tensor], path: str, target: Any = None,
               name: str = "default_function", options: Optional[BuildOptions] = None,
               **kw: Any) -> str:
    """Build into a shared object at ``path`` without loading it: the way
    to cross-compile ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72";
    the C runtime's kiln_module_load reads it on the target machine)."""
    o = options or BuildOptions(target=target, **kw)
    check(C.kiln_build_save(s.handle, len(args), tensor_args(args), name.encode(), o.handle,
                            os.fspath(path).encode()))
    return os.fspath(path)
