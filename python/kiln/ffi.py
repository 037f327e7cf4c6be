"""The global function registry (TVM's ``register_func`` and PackedFunc).

A Python function registered with :func:`register_func` is callable from
C by name (``kiln_func_call_name``), and any function registered in C is
callable from Python through :func:`get_global_func`. Both sides use one
packed calling convention over kiln's value types: ints, floats, strings,
arrays (numpy), graphs (:class:`kiln.graph.Graph`) and functions.

Errors cross the boundary both ways: a Python exception inside a function
that C calls becomes a C error whose message holds the Python traceback
(never a crash), and a C error raises :class:`kiln.KilnError` in Python
with kiln's message and the C stack where it was raised (``c_trace``).
"""

from __future__ import annotations

import ctypes
import numbers
import threading
from typing import Any, Callable, Dict, List, Optional

from . import ndarray as _nd
from ._lib import FREE_FN, PACKED_FN, C, KilnError, check, check_ptr, raise_in_c, take_str

NONE, INT, FLOAT, STR, ARRAY, GRAPH, FUNC = range(7)


class Function:
    """A packed function (``kiln_func``): call it with Python values."""

    def __init__(self, handle: int, name: Optional[str] = None) -> None:
        self.handle = handle  # one reference, ours
        self.name = name

    def __call__(self, *args: Any) -> Any:
        a = C.kiln_args_new()
        r = C.kiln_args_new()
        keep: List[Any] = []
        try:
            push_values(a, args, keep)
            st = C.kiln_func_call(self.handle, a, r)
            check(st)
            vals = read_values(r, take=True)
        finally:
            C.kiln_args_free(a)
            C.kiln_args_free(r)
        if not vals:
            return None
        return vals[0] if len(vals) == 1 else tuple(vals)

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_func_release(h)
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"<kiln.Function {self.name or hex(self.handle or 0)}>"


# Python callables behind kiln_func objects: alive until C releases them.
_live: Dict[int, Any] = {}
_live_lock = threading.RLock()
_next_key = [1]


@FREE_FN
def _free_user(user: int) -> None:
    with _live_lock:
        item = _live.pop(user or 0, None)
    # dropped outside the lock: the callable's closure may hold functions
    # whose release comes back here
    del item


def _packed(fn: Callable) -> Any:
    def call(args: int, ret: int, user: int) -> int:
        try:
            vals = read_values(args, take=False)
            out = fn(*vals)
            keep: List[Any] = []
            if out is not None:
                push_values(ret, out if isinstance(out, tuple) else (out,), keep, own=True)
            return 0
        except BaseException as e:  # noqa: BLE001 - every error goes back to C
            return raise_in_c(e)

    return PACKED_FN(call)


def to_function(fn: Callable, name: Optional[str] = None) -> Function:
    """A kiln function object calling the Python callable ``fn``."""
    if isinstance(fn, Function):
        return fn
    cfn = _packed(fn)
    with _live_lock:
        key = _next_key[0]
        _next_key[0] += 1
        _live[key] = (fn, cfn)
    h = C.kiln_func_new(cfn, key, _free_user)
    if not h:
        with _live_lock:
            _live.pop(key, None)
        check_ptr(h)
    return Function(h, name or getattr(fn, "__name__", None))


def register_func(name: Any = None, f: Optional[Callable] = None, override: bool = False) -> Any:
    """Register a Python function as global function ``name``, callable from
    C (and from any plugin) by that name. Use as a decorator
    (``@kiln.register_func("demo.add")`` or bare ``@kiln.register_func``,
    which takes the function's name) or call it with the function."""
    if callable(name) and f is None:
        fn = name
        register_func(fn.__name__, fn, override)
        return fn

    def reg(fn: Callable) -> Callable:
        func = to_function(fn, name)
        check(C.kiln_func_register(name.encode(), func.handle, 1 if override else 0))
        return fn

    return reg(f) if f is not None else reg


def get_global_func(name: str, allow_missing: bool = False) -> Optional[Function]:
    """The global function ``name`` (registered in C or Python)."""
    h = C.kiln_func_get(name.encode(), 1 if allow_missing else 0)
    if not h:
        if allow_missing:
            return None
        check_ptr(h)
    return Function(h, name)


def remove_global_func(name: str) -> None:
    check(C.kiln_func_unregister(name.encode()))


def list_global_func_names() -> List[str]:
    return [n for n in take_str(C.kiln_func_list()).split("\n") if n]


# ---- values --------------------------------------------------------------------


def push_values(a: int, values: Any, keep: List[Any], own: bool = False) -> None:
    """Push Python values on list ``a``. ``keep`` collects what must stay
    alive while C uses the list; with ``own`` (results handed to C) arrays
    and graphs are copied into the list, which then owns them."""
    from .graph import Graph  # graph depends on ffi, not the other way

    for v in values:
        if v is None:
            st = C.kiln_args_push_none(a)
        elif isinstance(v, numbers.Integral):  # bool, int, numpy integers
            st = C.kiln_args_push_int(a, int(v))
        elif isinstance(v, numbers.Real):  # float, numpy floats
            st = C.kiln_args_push_float(a, float(v))
        elif isinstance(v, str):
            st = C.kiln_args_push_str(a, v.encode())
        elif isinstance(v, Graph):
            if own:
                st = C.kiln_args_push_graph(a, v._copy_handle(), 1)
            else:
                keep.append(v)
                st = C.kiln_args_push_graph(a, v.handle, 0)
        elif isinstance(v, Function):
            st = C.kiln_args_push_func(a, v.handle)
        elif callable(v):
            fn = to_function(v)
            keep.append(fn)
            st = C.kiln_args_push_func(a, fn.handle)
        elif hasattr(v, "__array__") or isinstance(v, (list, tuple)):
            if own:
                w = _nd.Wrapped(v)
                h = _nd.empty(w.array.shape, w.array.dtype)
                _nd.copy_into(h, w.handle)
                st = C.kiln_args_push_array(a, h, 1)
            else:
                w = _nd.Wrapped(v)
                keep.append(w)
                st = C.kiln_args_push_array(a, w.handle, 0)
        else:
            raise TypeError(f"kiln: cannot pass a {type(v).__name__} to a packed function")
        check(st)


def read_values(a: int, take: bool) -> List[Any]:
    """The values of list ``a`` as Python objects. With ``take`` (results),
    arrays come back as numpy copies and graphs as Graphs of their own;
    without (arguments of a call from C), arrays and graphs are views of
    the caller's, valid during the call (a function may write an output
    array in place, as TVM's packed functions do; copy one to keep it)."""
    from .graph import Graph

    out: List[Any] = []
    for i in range(C.kiln_args_count(a)):
        k = C.kiln_args_kind(a, i)
        if k == NONE:
            out.append(None)
        elif k == INT:
            out.append(C.kiln_args_int(a, i))
        elif k == FLOAT:
            out.append(C.kiln_args_float(a, i))
        elif k == STR:
            out.append(C.kiln_args_str(a, i).decode())
        elif k == ARRAY:
            out.append(_nd.to_numpy(check_ptr(C.kiln_args_array(a, i)), copy=take))
        elif k == GRAPH:
            if take:
                owned = ctypes.c_int(0)
                h = check_ptr(C.kiln_args_take_graph(a, i, ctypes.byref(owned)))
                out.append(Graph(h) if owned.value else Graph._borrowed(h).copy())
            else:
                out.append(Graph._borrowed(check_ptr(C.kiln_args_graph(a, i))))
        elif k == FUNC:
            h = check_ptr(C.kiln_args_func(a, i))
            out.append(Function(C.kiln_func_retain(h)))
        else:
            raise KilnError(f"kiln: unknown value kind {k}")
    return out


# ---- Python plugins for the CLI (kiln compile --plugin pass.py) -------------------


def _load_python_plugin(path: str) -> None:
    import runpy

    runpy.run_path(path, run_name="kiln_plugin")


register_func("kiln.plugin.load_python", _load_python_plugin, override=True)
