"""kiln: a deep-learning compiler in C11, from Python.

A thin ctypes layer over kiln's public C API (no compiled extension):

- :mod:`kiln.te`: tensor expressions and schedules; :func:`lower`, :func:`build`.
- :mod:`kiln.graph`: graphs built with :data:`op` functions, ONNX import,
  the text IR, and :func:`kiln.graph.compile` into packages.
- :mod:`kiln.transform`: passes by name, Sequential, passes in Python.
- :mod:`kiln.pattern`: the pattern language and rewrites with callbacks.
- :mod:`kiln.byoc`: backends with pattern tables, and partition_for.
- :mod:`kiln.frontend`: PyTorch modules into graphs (``from_pytorch``).
- :mod:`kiln.runtime`: packages run on numpy arrays, timed and profiled.
- :mod:`kiln.tune`: auto-tuning.
- :func:`register_func` / :func:`get_global_func`: the global function
  registry shared with C.
- ``python -m kiln compile|run|tune|inspect``: the command line.

The package finds libkiln at $KILN_LIBRARY_PATH, inside itself (a
wheel), in the source tree's build folder, or where the system's loader
looks, and checks that its C API version matches.
"""

from __future__ import annotations

from ._lib import API_VERSION, KilnError, KilnLibraryError, library_path
from ._lib import C as _C

__version__ = "0.1.0"

from . import byoc, frontend, graph, pattern, runtime, target, te, transform, tune  # noqa: E402
from .driver import Module, PackedFunction, build, build_save, load_module, lower  # noqa: E402
from .ffi import (  # noqa: E402
    Function,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from .graph import Graph, Node, from_onnx, from_tflite, load_plugin, op, quantize  # noqa: E402
from .options import BuildOptions  # noqa: E402
from .transform import register_pass  # noqa: E402


def library_version() -> str:
    """The version of the libkiln this package loaded."""
    return _C.kiln_version().decode()


def target_host() -> str:
    """This machine's target string ("llvm -mtriple=... -mcpu=native ...")."""
    t = _C.kiln_target_host()
    try:
        return _C.kiln_target_str(t).decode()
    finally:
        _C.kiln_target_free(t)


__all__ = [
    "API_VERSION", "KilnError", "KilnLibraryError", "library_path", "library_version",
    "target_host", "target", "te", "graph", "frontend", "transform", "pattern", "byoc", "runtime",
    "tune",
    "lower", "build", "build_save", "Module", "PackedFunction", "load_module", "register_func",
    "get_global_func", "list_global_func_names", "remove_global_func", "Function", "Graph",
    "Node", "op", "from_onnx", "from_tflite", "load_plugin", "quantize", "register_pass",
    "BuildOptions",
]
