"""Tensor expressions and schedules, as TVM's ``te`` writes them.

    from kiln import te
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    print(kiln.lower(s, [A, B, C]))
    f = kiln.build(s, [A, B, C], target="llvm", name="myadd")
    f(a, b, c)                                # numpy arrays, no copies

Expressions are immutable and hash-consed in C; they live in a context
(``kiln_ctx``): by default one per process, or a fresh one inside
``with te.Context():``. A context is not for concurrent use by threads.
"""

from __future__ import annotations

import builtins
import ctypes
import numbers
import threading
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from . import ndarray as _nd
from ._lib import COMPUTE_FN, TE_BINARY, TE_UNARY, C, KilnError, check, check_ptr, raise_in_c

P = ctypes.c_void_p
_bmax = builtins.max

_U = {n: getattr(C, "kiln_" + n) for n in TE_UNARY}
_B = {n: getattr(C, "kiln_" + n) for n in TE_BINARY}


class Context:
    """A ``kiln_ctx``: owns every expression, tensor and schedule made while
    it is current (``with te.Context(): ...``), freed with it."""

    def __init__(self) -> None:
        self.handle = check_ptr(C.kiln_ctx_new())
        self._prev: Optional[Context] = None

    def __enter__(self) -> "Context":
        self._prev = _state.ctx
        _state.ctx = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.ctx = self._prev

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_ctx_free(h)
            except Exception:
                pass


class _State(threading.local):
    ctx: Optional[Context] = None  # the innermost `with Context()`
    default: Optional[Context] = None  # this thread's own


_state = _State()


def current_context() -> Context:
    """The context new expressions go to: the innermost ``with
    te.Context()`` of this thread, else this thread's default one (each
    thread has its own: a context is not for concurrent use)."""
    if _state.ctx is not None:
        return _state.ctx
    if _state.default is None:
        _state.default = Context()
    return _state.default


class Expr:
    """An expression, variable or iteration axis (``kiln_expr``)."""

    __slots__ = ("handle", "ctx")

    def __init__(self, handle: int, ctx: Context) -> None:
        self.handle = handle
        self.ctx = ctx

    # arithmetic
    def _b(self, name: str, o: Any, swap: bool = False) -> "Expr":
        o = const(o, ctx=self.ctx) if not isinstance(o, Expr) else o
        a, b = (o, self) if swap else (self, o)
        return _wrap(_B[name](a.handle, b.handle), self.ctx)

    def __add__(self, o: Any) -> "Expr":
        return self._b("add", o)

    def __radd__(self, o: Any) -> "Expr":
        return self._b("add", o, True)

    def __sub__(self, o: Any) -> "Expr":
        return self._b("sub", o)

    def __rsub__(self, o: Any) -> "Expr":
        return self._b("sub", o, True)

    def __mul__(self, o: Any) -> "Expr":
        return self._b("mul", o)

    def __rmul__(self, o: Any) -> "Expr":
        return self._b("mul", o, True)

    def __truediv__(self, o: Any) -> "Expr":
        return self._b("div", o)

    def __rtruediv__(self, o: Any) -> "Expr":
        return self._b("div", o, True)

    def __floordiv__(self, o: Any) -> "Expr":
        return self._b("floordiv", o)

    def __rfloordiv__(self, o: Any) -> "Expr":
        return self._b("floordiv", o, True)

    def __mod__(self, o: Any) -> "Expr":
        return self._b("floormod", o)

    def __rmod__(self, o: Any) -> "Expr":
        return self._b("floormod", o, True)

    def __pow__(self, o: Any) -> "Expr":
        return self._b("pow", o)

    def __lshift__(self, o: Any) -> "Expr":
        return self._b("shl", o)

    def __rshift__(self, o: Any) -> "Expr":
        return self._b("shr", o)

    def __neg__(self) -> "Expr":
        return _wrap(_U["neg"](self.handle), self.ctx)

    def __lt__(self, o: Any) -> "Expr":
        return self._b("lt", o)

    def __le__(self, o: Any) -> "Expr":
        return self._b("le", o)

    def __gt__(self, o: Any) -> "Expr":
        return self._b("gt", o)

    def __ge__(self, o: Any) -> "Expr":
        return self._b("ge", o)

    def __eq__(self, o: Any) -> "Expr":  # type: ignore[override]
        return _EqExpr(self, o, "eq")

    def __ne__(self, o: Any) -> "Expr":  # type: ignore[override]
        return _EqExpr(self, o, "ne")

    def __hash__(self) -> int:
        return hash(self.handle)

    def __bool__(self) -> bool:
        raise TypeError("kiln: an expression has no truth value: use te.if_then_else, "
                        "logical_and/or, or compare handles with same_as")

    def same_as(self, o: "Expr") -> bool:
        return isinstance(o, Expr) and o.handle == self.handle

    def astype(self, dtype: str) -> "Expr":
        return _wrap(C.kiln_cast(_nd.dtype_code(dtype), self.handle), self.ctx)

    @property
    def value(self) -> Optional[int]:
        """The value of an integer constant, else None."""
        try:
            return int(str(self))
        except ValueError:
            return None

    def __str__(self) -> str:
        n = C.kiln_expr_print(self.handle, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        C.kiln_expr_print(self.handle, buf, n + 1)
        return buf.value.decode()

    def __repr__(self) -> str:
        return f"<kiln.te.Expr {self}>"

    def __index__(self) -> int:
        v = self.value
        if v is None:
            raise TypeError(f"kiln: {self} is not a constant")
        return v


class _EqExpr(Expr):
    """a == b (or a != b): an expression, and in a Python condition whether
    a and b are (are not) the same expression, as TVM's EqualOp."""

    __slots__ = ("_same", "_eq")

    def __init__(self, a: Expr, b: Any, name: str) -> None:
        e = a._b(name, b)
        super().__init__(e.handle, a.ctx)
        self._same = isinstance(b, Expr) and a.handle == b.handle
        self._eq = name == "eq"

    def __bool__(self) -> bool:
        return self._same if self._eq else not self._same


def _wrap(h: Optional[int], ctx: Context) -> Expr:
    return Expr(check_ptr(h), ctx)


def _ctx(ctx: Optional[Context]) -> Context:
    return ctx if ctx is not None else current_context()


def const(v: Any, dtype: Optional[str] = None, ctx: Optional[Context] = None) -> Expr:
    """A constant: int64 for Python ints, float32 for floats, unless dtype."""
    c = _ctx(ctx)
    if isinstance(v, Expr):
        return v
    if dtype is None:
        if isinstance(v, bool):
            dtype = "bool"
        elif isinstance(v, numbers.Integral):  # int, numpy integers
            return _wrap(C.kiln_int(c.handle, int(v)), c)
        else:
            dtype = "float32"
    return _wrap(C.kiln_const(c.handle, _nd.dtype_code(dtype), float(v)), c)


def var(name: str = "v", dtype: str = "int64", ctx: Optional[Context] = None) -> Expr:
    """A symbolic size (TVM's te.var); only int64 sizes exist in kiln."""
    if dtype not in ("int64", "int32"):
        raise KilnError(f"kiln: te.var is a size: dtype int64, not {dtype}")
    c = _ctx(ctx)
    return _wrap(C.kiln_var(c.handle, name.encode()), c)


def size_var(name: str = "n", ctx: Optional[Context] = None) -> Expr:
    """The context's one size variable of this name (a graph's symbolic dim)."""
    c = _ctx(ctx)
    return _wrap(C.kiln_size_var(c.handle, name.encode()), c)


def reduce_axis(dom: Union[Tuple[Any, Any], Sequence[Any]], name: str = "k") -> Expr:
    """A reduce axis over [dom[0], dom[1])."""
    c = current_context()
    lo, hi = const(dom[0], ctx=c), const(dom[1], ctx=c)
    return _wrap(C.kiln_reduce_axis(c.handle, lo.handle, (hi - lo).handle, name.encode()), c)


def _axes(axis: Any) -> Tuple[int, Any]:
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    return len(axes), (P * _bmax(len(axes), 1))(*[a.handle for a in axes])


def sum(expr: Expr, axis: Any) -> Expr:  # noqa: A001 - TVM's name
    n, arr = _axes(axis)
    return _wrap(C.kiln_sum(expr.handle, n, arr), expr.ctx)


def prod(expr: Expr, axis: Any) -> Expr:
    n, arr = _axes(axis)
    return _wrap(C.kiln_prod(expr.handle, n, arr), expr.ctx)


def max(a: Expr, b: Any = None, axis: Any = None) -> Expr:  # noqa: A001
    """max over reduce axes (``max(x, axis=k)``), or of two expressions."""
    if axis is not None:
        n, arr = _axes(axis)
        return _wrap(C.kiln_max_reduce(a.handle, n, arr), a.ctx)
    return a._b("max", b)


def min(a: Expr, b: Any = None, axis: Any = None) -> Expr:  # noqa: A001
    if axis is not None:
        n, arr = _axes(axis)
        return _wrap(C.kiln_min_reduce(a.handle, n, arr), a.ctx)
    return a._b("min", b)


def if_then_else(cond: Expr, t: Any, f: Any) -> Expr:
    c = cond.ctx
    t = const(t, ctx=c) if not isinstance(t, Expr) else t
    f = const(f, ctx=c) if not isinstance(f, Expr) else f
    return _wrap(C.kiln_select(cond.handle, t.handle, f.handle), c)


select = if_then_else


def dot(a: Sequence[Expr], b: Sequence[Expr]) -> Expr:
    """The int32 sum of ``a[j] * b[j]`` over 2 or 4 pairs of integers of at
    most 16 bits: the int8 kernels' step (``kiln_dot``). Vectorized where
    lane l's ``b`` values are consecutive and ``a``'s the same in every
    lane, it is one ``vpdpbusd`` (4 pairs, uint8 x int8, VNNI), ``vpmaddwd``
    (2 pairs, uint8 x int16), ``sdot``/``usdot`` on aarch64; an exact loop
    elsewhere."""
    if len(a) != len(b) or not a:
        raise KilnError(f"dot: {len(a)} and {len(b)} operands, not two lists of 2 or 4")
    arr = (ctypes.c_void_p * len(a))
    return _wrap(C.kiln_dot(len(a), arr(*[x.handle for x in a]), arr(*[x.handle for x in b])),
                 a[0].ctx)


def logical_and(a: Expr, b: Expr) -> Expr:
    return a._b("and", b)


def logical_or(a: Expr, b: Expr) -> Expr:
    return a._b("or", b)


def logical_not(a: Expr) -> Expr:
    return _wrap(_U["not"](a.handle), a.ctx)


def power(a: Expr, b: Any) -> Expr:
    return a._b("pow", b)


def _unary(name: str) -> Callable[[Expr], Expr]:
    def f(x: Expr) -> Expr:
        return _wrap(_U[name](x.handle), x.ctx)

    f.__name__ = name
    f.__doc__ = f"Elementwise {name} of a float expression."
    return f


exp, log, sqrt, rsqrt, tanh, sigmoid, erf = (_unary(n) for n in
                                             ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                                              "erf"))
floor, ceil, round, sin, cos, tan = (_unary(n) for n in  # noqa: A001
                                     ("floor", "ceil", "round", "sin", "cos", "tan"))
asin, acos, atan, sinh, cosh, asinh, acosh, atanh = (_unary(n) for n in
                                                     ("asin", "acos", "atan", "sinh", "cosh",
                                                      "asinh", "acosh", "atanh"))
abs = _unary("abs")  # noqa: A001


# ---- tensors --------------------------------------------------------------------


class Tensor:
    """A placeholder or the output of a compute (``kiln_tensor``)."""

    __slots__ = ("handle", "ctx")

    def __init__(self, handle: int, ctx: Context) -> None:
        self.handle = handle
        self.ctx = ctx

    def __getitem__(self, idx: Any) -> Expr:
        idx = idx if isinstance(idx, tuple) else (idx,)
        es = [i if isinstance(i, Expr) else const(i, ctx=self.ctx) for i in idx]
        arr = (P * _bmax(len(es), 1))(*[e.handle for e in es])
        return _wrap(C.kiln_tensor_at(self.handle, len(es), arr), self.ctx)

    @property
    def ndim(self) -> int:
        return C.kiln_tensor_ndim(self.handle)

    @property
    def shape(self) -> List[Expr]:
        return [_wrap(C.kiln_tensor_dim(self.handle, i), self.ctx) for i in range(self.ndim)]

    @property
    def dtype(self) -> str:
        return _nd.dtype_name(C.kiln_tensor_dtype(self.handle))

    @property
    def name(self) -> str:
        return C.kiln_tensor_name(self.handle).decode()

    @property
    def op(self) -> "Operation":
        return Operation(self)

    def __hash__(self) -> int:
        return hash(self.handle)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Tensor) and o.handle == self.handle

    def __repr__(self) -> str:
        return f"<kiln.te.Tensor {self.name} {self.dtype}[{', '.join(map(str, self.shape))}]>"


class Operation:
    """TVM's ``tensor.op``: the axes of the compute that makes a tensor."""

    def __init__(self, t: Tensor) -> None:
        self.tensor = t

    @property
    def axis(self) -> List[Expr]:
        t = self.tensor
        out = []
        for i in range(t.ndim):
            h = C.kiln_tensor_axis(t.handle, i)
            if h:
                out.append(Expr(h, t.ctx))
        return out

    @property
    def reduce_axis(self) -> List[Expr]:
        t = self.tensor
        return [Expr(C.kiln_tensor_reduce_axis(t.handle, i), t.ctx)
                for i in range(C.kiln_tensor_num_reduce_axes(t.handle))]

    @property
    def input_tensors(self) -> List[Tensor]:
        t = self.tensor
        n = C.kiln_tensor_inputs(t.handle, None, 0)
        arr = (P * _bmax(n, 1))()
        C.kiln_tensor_inputs(t.handle, arr, n)
        return [Tensor(arr[i], t.ctx) for i in range(n)]

    @property
    def name(self) -> str:
        return self.tensor.name

    def output(self, i: int = 0) -> Tensor:
        if i != 0:
            raise IndexError("kiln: a compute has one output")
        return self.tensor


def _shape(shape: Sequence[Any], c: Context) -> Tuple[int, Any]:
    es = [d if isinstance(d, Expr) else const(builtins.int(d), ctx=c) for d in shape]
    return len(es), (P * _bmax(len(es), 1))(*[e.handle for e in es])


def placeholder(shape: Sequence[Any], dtype: str = "float32", name: str = "placeholder"
                ) -> Tensor:
    c = current_context()
    n, arr = _shape(shape, c)
    return Tensor(check_ptr(C.kiln_placeholder(c.handle, n, arr, _nd.dtype_code(dtype),
                                               name.encode())), c)


def compute(shape: Sequence[Any], fcompute: Callable[..., Any], name: str = "compute",
            tag: str = "", attrs: Optional[dict] = None) -> Tensor:
    """A tensor whose element at (i, j, ...) is ``fcompute(i, j, ...)``.
    ``tag`` and ``attrs`` are TVM's metadata for its schedules; kiln's
    schedules do not read them, and they are accepted for compatibility."""
    c = current_context()
    n, arr = _shape(shape, c)

    def body(ctx: int, idx: Any, user: int) -> Optional[int]:
        try:
            e = fcompute(*[Expr(idx[k], c) for k in range(n)])
            if not isinstance(e, Expr):
                e = const(e, ctx=c)
            return e.handle
        except BaseException as ex:  # noqa: BLE001 - the error goes back to C
            raise_in_c(ex)
            return None

    cb = COMPUTE_FN(body)
    return Tensor(check_ptr(C.kiln_compute(c.handle, n, arr, cb, None, name.encode())), c)


def scan(shape: Sequence[Any], fcompute: Callable[..., Any], dtype: str = "float32",
         scan_axis: int = 0, name: str = "scan") -> Tensor:
    """A recurrent compute (TVM's te.scan, simpler): ``fcompute(y, *idx)``
    gives element idx and may read ``y`` itself at an index below its own
    on ``scan_axis`` (guard t - 1 for t = 0 with if_then_else), e.g. a
    prefix sum ``lambda y, t: A[t] + if_then_else(t > 0, y[t - 1], 0.0)``.
    kiln checks the rule (kiln/te.h) and refuses a body that breaks it."""
    c = current_context()
    n, arr = _shape(shape, c)
    y = Tensor(check_ptr(C.kiln_scan_declare(c.handle, n, arr, _nd.dtype_code(dtype), scan_axis,
                                             name.encode())), c)

    def body(ctx: int, idx: Any, user: int) -> Optional[int]:
        try:
            e = fcompute(y, *[Expr(idx[k], c) for k in range(n)])
            return (e if isinstance(e, Expr) else const(e, dtype, ctx=c)).handle
        except BaseException as ex:  # noqa: BLE001 - the error goes back to C
            raise_in_c(ex)
            return None

    check(C.kiln_scan_define(y.handle, COMPUTE_FN(body), None))
    return y


def checked_index(index: Expr, n: Any, from_end: bool = False) -> Expr:
    """An index read from data, checked against extent n (kiln_checked_index:
    out of range gives 0 and a KILN_ERR_RANGE error from the kernel)."""
    nn = n if isinstance(n, Expr) else const(int(n), ctx=index.ctx)
    return _wrap(C.kiln_checked_index(index.handle, nn.handle, 1 if from_end else 0),
                 index.ctx)


# ---- schedules ------------------------------------------------------------------


def thread_axis(tag: str) -> str:
    """A GPU thread axis name for Stage.bind ("blockIdx.x", "threadIdx.x")."""
    return tag


class Stage:
    """The schedule of one operation (``s[T]``)."""

    def __init__(self, handle: int, sched: "Schedule") -> None:
        self.handle = handle
        self.sched = sched
        self.ctx = sched.ctx

    def _axes_out(self, *ptrs: Any) -> Tuple[Expr, ...]:
        return tuple(Expr(p.value, self.ctx) for p in ptrs)

    def split(self, axis: Expr, factor: Optional[int] = None, nparts: Optional[int] = None
              ) -> Tuple[Expr, Expr]:
        o, i = P(), P()
        if (factor is None) == (nparts is None):
            raise KilnError("kiln: split takes a factor or nparts")
        if factor is not None:
            check(C.kiln_split(self.handle, axis.handle, int(factor), ctypes.byref(o),
                               ctypes.byref(i)))
        else:
            check(C.kiln_split_nparts(self.handle, axis.handle, int(nparts), ctypes.byref(o),
                                      ctypes.byref(i)))
        return self._axes_out(o, i)  # type: ignore[return-value]

    def tile(self, x: Expr, y: Expr, x_factor: int, y_factor: int
             ) -> Tuple[Expr, Expr, Expr, Expr]:
        ps = [P() for _ in range(4)]
        check(C.kiln_tile(self.handle, x.handle, y.handle, int(x_factor), int(y_factor),
                          *[ctypes.byref(p) for p in ps]))
        return self._axes_out(*ps)  # type: ignore[return-value]

    def fuse(self, *axes: Expr) -> Expr:
        axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (list, tuple)) else axes
        cur = axes[0]
        for a in axes[1:]:
            f = P()
            check(C.kiln_fuse(self.handle, cur.handle, a.handle, ctypes.byref(f)))
            cur = Expr(f.value, self.ctx)
        return cur

    def reorder(self, *axes: Expr) -> None:
        arr = (P * len(axes))(*[a.handle for a in axes])
        check(C.kiln_reorder(self.handle, len(axes), arr))

    def vectorize(self, axis: Expr) -> None:
        check(C.kiln_vectorize(self.handle, axis.handle))

    def unroll(self, axis: Expr) -> None:
        check(C.kiln_unroll(self.handle, axis.handle))

    def parallel(self, axis: Expr) -> None:
        check(C.kiln_parallel(self.handle, axis.handle))

    def bind(self, axis: Expr, thread: str) -> None:
        check(C.kiln_bind(self.handle, axis.handle, str(thread).encode()))

    def compute_at(self, parent: "Stage", axis: Expr) -> None:
        check(C.kiln_compute_at(self.handle, parent.handle, axis.handle))

    def compute_inline(self) -> None:
        check(C.kiln_compute_inline(self.handle))

    def compute_root(self) -> None:
        check(C.kiln_compute_root(self.handle))

    def set_scope(self, scope: str) -> None:
        check(C.kiln_set_scope(self.handle, scope.encode()))

    @property
    def leaf_iter_vars(self) -> List[Expr]:
        n = C.kiln_stage_leaf_axes(self.handle, None, 0)
        arr = (P * _bmax(n, 1))()
        C.kiln_stage_leaf_axes(self.handle, arr, n)
        return [Expr(arr[i], self.ctx) for i in range(n)]


class Schedule:
    """A schedule over the operations that make ``outputs`` (``kiln_schedule``)."""

    def __init__(self, outputs: Sequence[Any]) -> None:
        ts = [o.tensor if isinstance(o, Operation) else o for o in outputs]
        if not ts:
            raise KilnError("kiln: a schedule needs at least one output")
        self.ctx = ts[0].ctx
        arr = (P * len(ts))(*[t.handle for t in ts])
        self.handle = check_ptr(C.kiln_schedule_create(self.ctx.handle, len(ts), arr))

    def __getitem__(self, t: Any) -> Stage:
        t = t.tensor if isinstance(t, Operation) else t
        return Stage(check_ptr(C.kiln_schedule_stage(self.handle, t.handle)), self)

    def cache_read(self, t: Tensor, scope: str, readers: Sequence[Any]) -> Tensor:
        rs = [r.tensor if isinstance(r, Operation) else r for r in readers]
        arr = (P * _bmax(len(rs), 1))(*[r.handle for r in rs])
        return Tensor(check_ptr(C.kiln_cache_read(self.handle, t.handle, scope.encode(),
                                                  len(rs), arr)), self.ctx)

    def cache_write(self, t: Tensor, scope: str) -> Tensor:
        return Tensor(check_ptr(C.kiln_cache_write(self.handle, t.handle, scope.encode())),
                      self.ctx)


def create_schedule(ops: Any) -> Schedule:
    """A schedule over one output operation (or tensor), or a list of them."""
    return Schedule(list(ops) if isinstance(ops, (list, tuple)) else [ops])


def tensor_args(args: Sequence[Tensor]) -> Any:
    return (P * _bmax(len(args), 1))(*[a.handle for a in args])


__all__ = [
    "Context", "Expr", "Tensor", "Operation", "Stage", "Schedule", "var", "size_var", "const",
    "placeholder", "compute", "scan", "checked_index", "reduce_axis", "sum", "prod", "max", "min", "if_then_else",
    "select", "logical_and", "logical_or", "logical_not", "power", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "round", "abs", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "create_schedule",
    "thread_axis",
]
