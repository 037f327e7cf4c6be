"""The PyTorch frontend's converters, part 1: elementwise ops, shapes,
reductions, linear algebra and indexing, and the helpers every converter
uses. Part 2, _pytorch_nn.py, has convolutions, normalizations, pooling,
resizing and attention; kiln.frontend.pytorch joins the two tables into
the one the converter looks ops up in.

A converter takes the converter context ``cv`` (kiln.frontend.pytorch's
_Converter: ``cv.g`` the graph, ``cv.shape``/``cv.dtype`` of a node,
``cv.tensor`` to make a static value a constant, ``cv.fail`` for an error
that names the node and its source line) and the node's inputs in schema
order, and returns the output (or a tuple of them). At least one input is
a kiln Node: nodes whose inputs are all static are computed by torch.
In-place ops (``aten::relu_``) convert as their functional op.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..graph import Node

Converter = Callable[..., Any]
#: "aten::NAME" -> its converter (this file's part)
TABLE: Dict[str, Converter] = {}


def registrar(table: Dict[str, Converter]) -> Callable[..., Callable[[Converter], Converter]]:
    """A decorator maker: ``@op("relu", "relu6")`` enters a converter in
    ``table`` under each "aten::" name."""
    def op(*names: str) -> Callable[[Converter], Converter]:
        def reg(fn: Converter) -> Converter:
            for n in names:
                table["aten::" + n] = fn
            return fn
        return reg
    return op


_op = registrar(TABLE)


# ---- helpers ------------------------------------------------------------------------------

def _ints(v: Any, n: int) -> List[int]:
    """An int or list of ints as n ints (a single one repeated)."""
    if isinstance(v, int):
        return [v] * n
    v = [int(x) for x in v]
    return v * n if len(v) == 1 else v


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _axis(d: int, nd: int) -> int:
    return d + nd if d < 0 else d


def _is_float(dt: str) -> bool:
    return dt.startswith("float") or dt == "bfloat16"


def _call(cv: Any, op: str, *ins: Any, **attrs: Any) -> Node:
    return cv.g.call(op, *ins, **attrs)


def _reshape(cv: Any, x: Node, shape: Sequence[int]) -> Node:
    shape = [int(d) for d in shape]
    if tuple(shape) == cv.shape(x):
        return x
    return _call(cv, "reshape", x, newshape=shape)


def _full_shape(cv: Any, x: Node, size: Sequence[Any]) -> List[int]:
    """A view's size with its -1 resolved."""
    size = [int(d) for d in size]
    total = _numel(cv.shape(x))
    known = 1
    for d in size:
        known *= d if d != -1 else 1
    if size.count(-1) > 1 or (size.count(-1) == 0 and known != total) or \
            (size.count(-1) == 1 and (known == 0 or total % known)):
        cv.fail(f"cannot view a tensor of shape {list(cv.shape(x))} as {size}")
    return [total // known if d == -1 else d for d in size]


def _slice(cv: Any, x: Node, axis: int, begin: int, end: int, step: int = 1) -> Node:
    n = cv.shape(x)[axis]
    begin = max(0, min(n, begin + n if begin < 0 else begin))
    end = max(0, min(n, end + n if end < 0 else end))
    if begin == 0 and end == n and step == 1:
        return x
    if end <= begin:
        cv.fail(f"an empty slice [{begin}:{end}] of dim {axis} (kiln has no empty tensors)")
    return _call(cv, "strided_slice", x, begin=[begin], end=[end], strides=[step], axes=[axis])


def _cast(cv: Any, x: Node, dtype: str) -> Node:
    return x if cv.dtype(x) == dtype else _call(cv, "cast", x, dtype=dtype)


def _torch_dtype_name(cv: Any, dt: Any) -> Optional[str]:
    """A torch dtype (or its ScalarType code in a traced graph) as kiln's name."""
    if dt is None:
        return None
    if isinstance(dt, int):  # ScalarType: the order of c10's enum
        names = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                 None, None, None, "bool"]
        name = names[dt] if dt < len(names) else None
    else:
        name = str(dt).replace("torch.", "")
    if name is None:
        cv.fail(f"dtype {dt} is not supported")
    return name


def _scalar_value(cv: Any, v: Any) -> Any:
    if isinstance(v, cv.torch.Tensor) and v.dim() == 0:
        return v.item()
    return v


# ---- elementwise --------------------------------------------------------------------------

_PROMOTION = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"]


def _binary(cv: Any, op: str, a: Any, b: Any) -> Node:
    a_is_node = isinstance(a, Node)
    like = a if a_is_node else b
    ov = _scalar_value(cv, b if a_is_node else a)
    if not _is_float(cv.dtype(like)) and isinstance(ov, float):
        like = _cast(cv, like, "float32")  # an integer tensor and a float scalar: float
        a, b = (like, b) if a_is_node else (a, like)
    x, y = cv.tensor(a, like), cv.tensor(b, like)
    dx, dy = cv.dtype(x), cv.dtype(y)
    if dx != dy:  # torch's promotion of two tensors: the wider kind, then size
        target = max(dx, dy, key=lambda d: _PROMOTION.index(d) if d in _PROMOTION else -1)
        x, y = _cast(cv, x, target), _cast(cv, y, target)
    return _call(cv, op, x, y)


def _scaled(cv: Any, b: Any, alpha: Any) -> Any:
    if alpha is None or alpha == 1:
        return b
    if isinstance(b, Node):
        return _binary(cv, "multiply", b, alpha)
    return b * alpha


@_op("add")
def _add(cv: Any, a: Any, b: Any, alpha: Any = 1) -> Node:
    return _binary(cv, "add", a, _scaled(cv, b, alpha))


@_op("sub")
def _sub(cv: Any, a: Any, b: Any, alpha: Any = 1) -> Node:
    return _binary(cv, "subtract", a, _scaled(cv, b, alpha))


@_op("rsub")
def _rsub(cv: Any, a: Any, b: Any, alpha: Any = 1) -> Node:
    return _binary(cv, "subtract", b, _scaled(cv, a, alpha))


@_op("mul")
def _mul(cv: Any, a: Any, b: Any) -> Node:
    return _binary(cv, "multiply", a, b)


@_op("div")
def _div(cv: Any, a: Any, b: Any, rounding_mode: Optional[str] = None) -> Node:
    like = a if isinstance(a, Node) else b
    int_dtype = None if _is_float(cv.dtype(like)) else cv.dtype(like)
    if int_dtype is not None:  # integers: in float64 (exact to 2^53), then back
        a = _cast(cv, a, "float64") if isinstance(a, Node) else a
        b = _cast(cv, b, "float64") if isinstance(b, Node) else b
    q = _binary(cv, "divide", a, b)
    if rounding_mode is not None:
        q = _rounded(cv, q, rounding_mode)
    if int_dtype is None:
        return q
    return _cast(cv, q, "float32" if rounding_mode is None else int_dtype)


def _rounded(cv: Any, q: Node, rounding_mode: str) -> Node:
    if rounding_mode == "floor":
        return _call(cv, "floor", q)
    if rounding_mode != "trunc":
        cv.fail(f"rounding_mode {rounding_mode!r} is not 'floor' or 'trunc'")
    zero = cv.tensor(0.0, q)
    return _call(cv, "where", _call(cv, "less", q, zero), _call(cv, "ceil", q),
                 _call(cv, "floor", q))


@_op("floor_divide")
def _floor_divide(cv: Any, a: Any, b: Any) -> Node:
    return _div(cv, a, b, "floor")


@_op("remainder")
def _remainder(cv: Any, a: Any, b: Any) -> Node:
    return _binary(cv, "floor_mod", a, b)


@_op("maximum")
def _maximum(cv: Any, a: Any, b: Any) -> Node:
    return _binary(cv, "maximum", a, b)


def _max_min(op: str, arg: str, binary: str) -> Converter:
    """aten::max / aten::min: of all elements, elementwise of two tensors,
    or along a dim (values and indices)."""
    def conv(cv: Any, x: Any, dim: Any = None, keepdim: Any = False) -> Any:
        if isinstance(dim, Node) or isinstance(dim, cv.torch.Tensor):
            return _binary(cv, binary, x, dim)
        nd = len(cv.shape(x))
        if dim is None:
            return _call(cv, op, x, axis=list(range(nd)), keepdims=0)
        axis = _axis(int(dim), nd)
        k = 1 if keepdim else 0
        return (_call(cv, op, x, axis=[axis], keepdims=k),
                _call(cv, arg, x, axis=axis, keepdims=k))
    return conv


_op("max")(_max_min("max", "argmax", "maximum"))
_op("min")(_max_min("min", "argmin", "minimum"))


@_op("minimum")
def _minimum(cv: Any, a: Any, b: Any) -> Node:
    return _binary(cv, "minimum", a, b)


def _compare(op: str) -> Converter:
    return lambda cv, a, b: _binary(cv, op, a, b)


for _name, _kop in (("eq", "equal"), ("ne", "not_equal"), ("gt", "greater"), ("lt", "less"),
                    ("ge", "greater_equal"), ("le", "less_equal")):
    _op(_name)(_compare(_kop))


@_op("pow")
def _pow(cv: Any, x: Any, e: Any) -> Node:
    ev = _scalar_value(cv, e)
    if isinstance(x, Node) and isinstance(ev, (int, float)):
        if ev == 2:
            return _call(cv, "multiply", x, x)
        if ev == 1:
            return x
        if ev == 0.5:
            return _call(cv, "sqrt", x)
    return _binary(cv, "power", x, e)


def _unary(op: str) -> Converter:
    return lambda cv, x, *rest: _call(cv, op, x)


for _name, _kop in (("relu", "nn.relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"),
                    ("exp", "exp"), ("log", "log"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"),
                    ("erf", "erf"), ("abs", "abs"), ("neg", "negative"), ("sin", "sin"),
                    ("cos", "cos"), ("floor", "floor"), ("ceil", "ceil"), ("sign", "sign"),
                    ("reciprocal", "reciprocal"), ("hardswish", "nn.hard_swish"),
                    ("mish", "nn.mish"), ("selu", "nn.selu"), ("logical_not", "logical_not")):
    _op(_name)(_unary(_kop))


def _clip(cv: Any, x: Node, lo: Any, hi: Any) -> Node:
    big = 3.4028234663852886e38
    lo = -big if lo is None else float(_scalar_value(cv, lo))
    hi = big if hi is None else float(_scalar_value(cv, hi))
    return _call(cv, "clip", x, a_min=lo, a_max=hi)


@_op("clamp", "clip")
def _clamp(cv: Any, x: Node, lo: Any = None, hi: Any = None) -> Node:
    if isinstance(lo, Node) or isinstance(hi, Node):
        y = x if lo is None else _binary(cv, "maximum", x, lo)
        return y if hi is None else _binary(cv, "minimum", y, hi)
    return _clip(cv, x, lo, hi)


@_op("clamp_min")
def _clamp_min(cv: Any, x: Node, lo: Any) -> Node:
    return _clamp(cv, x, lo, None)


@_op("clamp_max")
def _clamp_max(cv: Any, x: Node, hi: Any) -> Node:
    return _clamp(cv, x, None, hi)


@_op("hardtanh")
def _hardtanh(cv: Any, x: Node, lo: Any = -1.0, hi: Any = 1.0) -> Node:
    return _clip(cv, x, lo, hi)


@_op("relu6")
def _relu6(cv: Any, x: Node) -> Node:
    return _clip(cv, x, 0.0, 6.0)


@_op("hardsigmoid")
def _hardsigmoid(cv: Any, x: Node) -> Node:
    # torch: min(max(x + 3, 0), 6) / 6
    return _binary(cv, "divide", _clip(cv, _binary(cv, "add", x, 3.0), 0.0, 6.0), 6.0)


@_op("silu")
def _silu(cv: Any, x: Node) -> Node:
    return _call(cv, "multiply", x, _call(cv, "sigmoid", x))


@_op("gelu")
def _gelu(cv: Any, x: Node, approximate: str = "none") -> Node:
    half = _binary(cv, "multiply", x, 0.5)
    if approximate == "tanh":
        cube = _call(cv, "multiply", x, _call(cv, "multiply", x, x))
        inner = _binary(cv, "add", x, _binary(cv, "multiply", cube, 0.044715))
        t = _call(cv, "tanh", _binary(cv, "multiply", inner, math.sqrt(2.0 / math.pi)))
    elif approximate == "none":
        t = _call(cv, "erf", _binary(cv, "multiply", x, 1.0 / math.sqrt(2.0)))
    else:
        cv.fail(f"gelu approximate={approximate!r} is not 'none' or 'tanh'")
    return _call(cv, "multiply", half, _binary(cv, "add", t, 1.0))


@_op("leaky_relu")
def _leaky_relu(cv: Any, x: Node, slope: Any = 0.01) -> Node:
    return _call(cv, "nn.leaky_relu", x, alpha=float(slope))


@_op("elu")
def _elu(cv: Any, x: Node, alpha: Any = 1.0, scale: Any = 1, input_scale: Any = 1) -> Node:
    if scale != 1 or input_scale != 1:
        cv.fail("elu with scale or input_scale other than 1 is not supported")
    return _call(cv, "nn.elu", x, alpha=float(alpha))


@_op("softplus")
def _softplus(cv: Any, x: Node, beta: Any = 1, threshold: Any = 20) -> Node:
    if beta != 1:
        cv.fail("softplus with beta other than 1 is not supported")
    return _call(cv, "nn.softplus", x)


@_op("softmax", "_softmax")
def _softmax(cv: Any, x: Node, dim: int, dtype: Any = None) -> Node:
    if isinstance(dtype, bool):  # aten::_softmax(self, dim, half_to_float)
        dtype = None
    x = _cast(cv, x, _torch_dtype_name(cv, dtype) or cv.dtype(x))
    return _call(cv, "nn.softmax", x, axis=int(dim))


@_op("log_softmax")
def _log_softmax(cv: Any, x: Node, dim: int, dtype: Any = None) -> Node:
    x = _cast(cv, x, _torch_dtype_name(cv, dtype) or cv.dtype(x))
    return _call(cv, "nn.log_softmax", x, axis=int(dim))


@_op("where")
def _where(cv: Any, cond: Any, a: Any, b: Any) -> Node:
    like = a if isinstance(a, Node) else b if isinstance(b, Node) else None
    c = cv.tensor(cond)
    if like is None:
        x, y = cv.tensor(a), cv.tensor(b)
    else:
        x, y = cv.tensor(a, like), cv.tensor(b, like)
    return _call(cv, "where", _cast(cv, c, "bool"), x, y)


@_op("masked_fill")
def _masked_fill(cv: Any, x: Any, mask: Any, value: Any) -> Node:
    x = cv.tensor(x)
    return _call(cv, "where", _cast(cv, cv.tensor(mask), "bool"), cv.tensor(value, x), x)


@_op("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")
def _dropout(cv: Any, x: Node, p: Any, train: Any) -> Node:
    if train and float(p) != 0.0:  # p = 0 is the identity in training too
        cv.fail("dropout in training mode: call module.eval() before converting")
    return x


@_op("contiguous", "clone", "detach", "alias", "lift_fresh", "lift", "dequantize")
def _identity(cv: Any, x: Node, *rest: Any) -> Node:
    return x


@_op("to", "type_as", "float", "int", "long")
def _to(cv: Any, x: Node, *rest: Any) -> Node:
    """aten::to's overloads: the first dtype-like argument decides."""
    import_torch = cv.torch
    for r in rest:
        if isinstance(r, Node):  # type_as / to(other)
            return _cast(cv, x, cv.dtype(r))
        if isinstance(r, import_torch.Tensor):
            return _cast(cv, x, _torch_dtype_name(cv, r.dtype))
        if isinstance(r, (int, import_torch.dtype)) and not isinstance(r, bool):
            return _cast(cv, x, _torch_dtype_name(cv, r))
    kind = cv.node.kind()
    if kind in ("aten::float", "aten::int", "aten::long"):
        return _cast(cv, x, {"aten::float": "float32", "aten::int": "int32",
                             "aten::long": "int64"}[kind])
    return x


# ---- shapes -------------------------------------------------------------------------------

@_op("view", "reshape")
def _view(cv: Any, x: Node, size: Sequence[Any]) -> Node:
    return _reshape(cv, x, _full_shape(cv, x, size))


@_op("view_as", "reshape_as")
def _view_as(cv: Any, x: Node, other: Node) -> Node:
    return _reshape(cv, x, cv.shape(other))


@_op("flatten")
def _flatten(cv: Any, x: Node, start: int = 0, end: int = -1) -> Node:
    s = list(cv.shape(x))
    if not s:
        return _reshape(cv, x, [1])
    a, b = _axis(int(start), len(s)), _axis(int(end), len(s))
    return _reshape(cv, x, s[:a] + [_numel(s[a:b + 1])] + s[b + 1:])


@_op("unsqueeze")
def _unsqueeze(cv: Any, x: Node, dim: int) -> Node:
    s = list(cv.shape(x))
    s.insert(_axis(int(dim), len(s) + 1), 1)
    return _reshape(cv, x, s)


@_op("squeeze")
def _squeeze(cv: Any, x: Node, dim: Any = None) -> Node:
    s = list(cv.shape(x))
    if dim is None:
        return _reshape(cv, x, [d for d in s if d != 1])
    dims = {_axis(int(d), len(s)) for d in _ints(dim, 1)}
    return _reshape(cv, x, [d for k, d in enumerate(s) if not (k in dims and d == 1)])


@_op("permute")
def _permute(cv: Any, x: Node, dims: Sequence[int]) -> Node:
    nd = len(cv.shape(x))
    axes = [_axis(int(d), nd) for d in dims]
    if axes == list(range(nd)):
        return x
    return _call(cv, "transpose", x, axes=axes)


@_op("transpose", "swapaxes", "swapdims")
def _transpose(cv: Any, x: Node, d0: int, d1: int) -> Node:
    nd = len(cv.shape(x))
    axes = list(range(nd))
    a, b = _axis(int(d0), nd), _axis(int(d1), nd)
    axes[a], axes[b] = axes[b], axes[a]
    return _permute(cv, x, axes)


@_op("t", "numpy_T")
def _t(cv: Any, x: Node) -> Node:
    nd = len(cv.shape(x))
    return x if nd < 2 else _permute(cv, x, list(range(nd))[::-1])


@_op("expand")
def _expand(cv: Any, x: Node, size: Sequence[int], implicit: Any = False) -> Node:
    s = list(cv.shape(x))
    size = [int(d) for d in size]
    full = [1] * (len(size) - len(s)) + s
    out = [full[k] if d == -1 else d for k, d in enumerate(size)]
    if out == s:
        return x
    return _call(cv, "broadcast_to", x, shape=out)


@_op("expand_as")
def _expand_as(cv: Any, x: Node, other: Node) -> Node:
    return _expand(cv, x, list(cv.shape(other)))


@_op("repeat")
def _repeat(cv: Any, x: Node, reps: Sequence[int]) -> Node:
    reps = [int(r) for r in reps]
    s = list(cv.shape(x))
    if len(reps) > len(s):
        x = _reshape(cv, x, [1] * (len(reps) - len(s)) + s)
    return _call(cv, "tile", x, reps=reps)


@_op("cat", "concat", "concatenate")
def _cat(cv: Any, xs: Sequence[Any], dim: int = 0) -> Node:
    like = next(x for x in xs if isinstance(x, Node))
    nodes = [cv.tensor(x) for x in xs]
    nodes = [n for n in nodes if 0 not in cv.shape(n)]  # torch allows empty pieces
    if len(nodes) == 1:
        return nodes[0]
    return _call(cv, "concatenate", *nodes, axis=_axis(int(dim), len(cv.shape(like))))


@_op("stack")
def _stack(cv: Any, xs: Sequence[Any], dim: int = 0) -> Node:
    nd = len(cv.shape(next(x for x in xs if isinstance(x, Node)))) + 1
    d = _axis(int(dim), nd)
    return _cat(cv, [_unsqueeze(cv, cv.tensor(x), d) for x in xs], d)


def _pieces(cv: Any, x: Node, dim: int, sizes: Sequence[int]) -> List[Node]:
    axis = _axis(int(dim), len(cv.shape(x)))
    out, at = [], 0
    for n in sizes:
        out.append(_slice(cv, x, axis, at, at + n))
        at += n
    return out


@_op("chunk")
def _chunk(cv: Any, x: Node, chunks: int, dim: int = 0) -> List[Node]:
    n = cv.shape(x)[_axis(int(dim), len(cv.shape(x)))]
    each = -(-n // int(chunks))
    sizes = [min(each, n - k) for k in range(0, n, each)]
    return _pieces(cv, x, dim, sizes)


@_op("split", "split_with_sizes")
def _split(cv: Any, x: Node, size: Any, dim: int = 0) -> List[Node]:
    n = cv.shape(x)[_axis(int(dim), len(cv.shape(x)))]
    if isinstance(size, int):
        sizes = [min(size, n - k) for k in range(0, n, size)]
    else:
        sizes = [int(s) for s in size]
    return _pieces(cv, x, dim, sizes)


@_op("unbind")
def _unbind(cv: Any, x: Node, dim: int = 0) -> List[Node]:
    s = list(cv.shape(x))
    axis = _axis(int(dim), len(s))
    rest = s[:axis] + s[axis + 1:]
    return [_reshape(cv, p, rest) for p in _pieces(cv, x, axis, [1] * s[axis])]


@_op("slice")
def _slice_op(cv: Any, x: Node, dim: int = 0, start: Any = None, end: Any = None,
              step: int = 1) -> Node:
    s = cv.shape(x)
    axis = _axis(int(dim), len(s))
    start = 0 if start is None else int(start)
    end = s[axis] if end is None else min(int(end), s[axis])
    return _slice(cv, x, axis, start, end, int(step))


@_op("narrow")
def _narrow(cv: Any, x: Node, dim: int, start: int, length: int) -> Node:
    return _slice_op(cv, x, dim, int(start), int(start) + int(length))


@_op("select")
def _select(cv: Any, x: Node, dim: int, index: int) -> Node:
    s = list(cv.shape(x))
    axis = _axis(int(dim), len(s))
    i = int(index) + s[axis] if int(index) < 0 else int(index)
    if not 0 <= i < s[axis]:
        cv.fail(f"index {index} is out of range for dim {axis} of size {s[axis]}")
    return _reshape(cv, _slice(cv, x, axis, i, i + 1), s[:axis] + s[axis + 1:])


@_op("index_select")
def _index_select(cv: Any, x: Node, dim: int, index: Any) -> Node:
    return _call(cv, "take", cv.tensor(x), cv.tensor(index),
                 axis=_axis(int(dim), len(cv.shape(cv.tensor(x)))))


@_op("embedding")
def _embedding(cv: Any, weight: Any, indices: Any, *rest: Any) -> Node:
    return _call(cv, "take", cv.tensor(weight), cv.tensor(indices), axis=0)


@_op("roll")
def _roll(cv: Any, x: Node, shifts: Any, dims: Any = ()) -> Node:
    shifts = _ints(shifts, 1)
    dims = _ints(dims, 1) if dims is not None else []
    if not dims:
        s = cv.shape(x)
        return _reshape(cv, _roll(cv, _reshape(cv, x, [_numel(s)]), shifts, [0]), s)
    for sh, d in zip(shifts, dims):
        axis = _axis(d, len(cv.shape(x)))
        n = cv.shape(x)[axis]
        k = sh % n
        if k:
            x = _cat(cv, [_slice(cv, x, axis, n - k, n), _slice(cv, x, axis, 0, n - k)], axis)
    return x


def _pad_width(cv: Any, x: Node, pad: Sequence[int]) -> List[int]:
    """torch's pad (last dim first, before/after pairs) as kiln's pad_width."""
    nd = len(cv.shape(x))
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > nd:
        cv.fail(f"pad {pad} does not fit a {nd}-D tensor")
    width = [0] * (2 * nd)
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        width[2 * d], width[2 * d + 1] = pad[2 * k], pad[2 * k + 1]
    return width


def _circular(cv: Any, x: Node, width: List[int]) -> Node:
    for d in range(len(width) // 2):
        lo, hi = width[2 * d], width[2 * d + 1]
        n = cv.shape(x)[d]
        parts = ([_slice(cv, x, d, n - lo, n)] if lo else []) + [x] + \
            ([_slice(cv, x, d, 0, hi)] if hi else [])
        if len(parts) > 1:
            x = _cat(cv, parts, d)
    return x


@_op("pad")
def _pad(cv: Any, x: Node, pad: Sequence[int], mode: str = "constant", value: Any = None) -> Node:
    width = _pad_width(cv, x, pad)
    if any(w < 0 for w in width):
        cv.fail("negative padding (cropping) is not supported")
    if mode == "circular":
        return _circular(cv, x, width)
    kmode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}.get(mode)
    if kmode is None:
        cv.fail(f"pad mode {mode!r} is not supported")
    return _call(cv, "nn.pad", x, pad_width=width, pad_value=float(value or 0.0), pad_mode=kmode)


@_op("constant_pad_nd")
def _constant_pad(cv: Any, x: Node, pad: Sequence[int], value: Any = 0) -> Node:
    return _pad(cv, x, pad, "constant", value)


for _name, _mode in (("reflection_pad1d", "reflect"), ("reflection_pad2d", "reflect"),
                     ("replication_pad1d", "replicate"), ("replication_pad2d", "replicate"),
                     ("replication_pad3d", "replicate")):
    _op(_name)(lambda cv, x, pad, _m=_mode: _pad(cv, x, pad, _m))


# ---- reductions ---------------------------------------------------------------------------

def _arg_names(cv: Any) -> List[str]:
    """The argument names of the node's own overload."""
    return [a.name for a in cv.torch._C.parse_schema(cv.node.schema()).arguments]


def _reduce(op: str) -> Converter:
    def conv(cv: Any, x: Node, dim: Any = None, keepdim: Any = False, dtype: Any = None) -> Node:
        if "dim" not in _arg_names(cv):  # aten::mean(self, dtype): all elements
            dim, dtype = None, dim
        nd = len(cv.shape(x))
        axes = list(range(nd)) if dim is None or dim == [] else \
            [_axis(int(d), nd) for d in _ints(dim, 1)]
        x = _cast(cv, x, _torch_dtype_name(cv, dtype) or cv.dtype(x))
        return _call(cv, op, x, axis=axes, keepdims=1 if keepdim else 0)
    return conv


@_op("argmax", "argmin")
def _arg_reduce(cv: Any, x: Node, dim: Any = None, keepdim: Any = False) -> Node:
    op = cv.node.kind().split("::")[1]
    if dim is None:  # of the flattened tensor
        y = _call(cv, op, _reshape(cv, x, [_numel(cv.shape(x))]), axis=0, keepdims=0)
        return _reshape(cv, y, [1] * len(cv.shape(x))) if keepdim else y
    return _call(cv, op, x, axis=_axis(int(dim), len(cv.shape(x))), keepdims=1 if keepdim else 0)


@_op("cumsum")
def _cumsum(cv: Any, x: Node, dim: int, dtype: Any = None) -> Node:
    x = _cast(cv, x, _torch_dtype_name(cv, dtype) or cv.dtype(x))
    return _call(cv, "cumsum", x, axis=_axis(int(dim), len(cv.shape(x))))


@_op("norm", "linalg_vector_norm")
def _norm(cv: Any, x: Node, p: Any = 2, dim: Any = None, keepdim: Any = False,
          dtype: Any = None) -> Node:
    """The p-norm over dims (all when none): p = 1, 2 or inf."""
    p = 2 if p is None else float(_scalar_value(cv, p))
    nd = len(cv.shape(x))
    axes = list(range(nd)) if dim is None or dim == [] else \
        [_axis(int(d), nd) for d in _ints(dim, 1)]
    k = 1 if keepdim else 0
    if p == 2:
        return _call(cv, "sqrt", _call(cv, "sum", _call(cv, "multiply", x, x), axis=axes,
                                       keepdims=k))
    if p == 1:
        return _call(cv, "sum", _call(cv, "abs", x), axis=axes, keepdims=k)
    if p == math.inf:
        return _call(cv, "max", _call(cv, "abs", x), axis=axes, keepdims=k)
    cv.fail(f"a {p}-norm is not supported (1, 2 and inf are)")


_op("mean")(_reduce("mean"))
_op("sum")(_reduce("sum"))
_op("amax")(_reduce("max"))
_op("amin")(_reduce("min"))
_op("prod")(_reduce("prod"))


# ---- linear algebra ---------------------------------------------------------------------

def _dense(cv: Any, x: Node, w: Any, transposed: bool) -> Node:
    """x @ w^T (transposed=True: w is [out, in], as Linear's weight)."""
    if isinstance(w, Node):
        wn = w if transposed else _call(cv, "transpose", w, axes=[1, 0])
    else:
        wn = cv.tensor(w if transposed else w.t().contiguous())
    return _call(cv, "nn.dense", x, wn)


@_op("linear")
def _linear(cv: Any, x: Node, w: Any, b: Any = None) -> Node:
    y = _dense(cv, cv.tensor(x), w, True)
    return y if b is None else _binary(cv, "add", y, b)


def _matmul_nodes(cv: Any, a: Any, b: Any) -> Node:
    if not isinstance(b, Node) and b.dim() == 2 and isinstance(a, Node):
        return _dense(cv, a, b, False)
    a, b = cv.tensor(a), cv.tensor(b)
    ra, rb = len(cv.shape(a)), len(cv.shape(b))
    if ra == 1:
        a = _reshape(cv, a, [1] + list(cv.shape(a)))
    if rb == 1:
        b = _reshape(cv, b, list(cv.shape(b)) + [1])
    y = _call(cv, "nn.batch_matmul", a, b)
    if ra == 1 or rb == 1:
        s = list(cv.shape(y))
        drop = ({len(s) - 2} if ra == 1 else set()) | ({len(s) - 1} if rb == 1 else set())
        y = _reshape(cv, y, [d for k, d in enumerate(s) if k not in drop])
    return y


@_op("matmul", "mm", "bmm")
def _matmul(cv: Any, a: Any, b: Any) -> Node:
    return _matmul_nodes(cv, a, b)


@_op("addmm", "baddbmm")
def _addmm(cv: Any, bias: Any, a: Any, b: Any, beta: Any = 1, alpha: Any = 1) -> Node:
    y = _matmul_nodes(cv, a, b)
    if alpha != 1:
        y = _binary(cv, "multiply", y, float(alpha))
    if beta == 0:
        return y
    return _binary(cv, "add", y, _scaled(cv, bias, beta))


def _einsum_terms(cv: Any, equation: str, ranks: Sequence[int]) -> List[str]:
    """The equation's operand and output subscripts, one letter per dim
    ("..." spelled out with letters the equation does not use)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        cv.fail(f"einsum {equation!r} has {len(terms)} operands, {len(ranks)} were given")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    ns = [r - (len(t) - 3) if "..." in t else 0 for t, r in zip(terms, ranks)]
    ell = "".join(spare[:max(ns)])  # "..." of each operand: its last letters
    for k, (t, r) in enumerate(zip(terms, ranks)):
        terms[k] = t.replace("...", ell[len(ell) - ns[k]:]) if "..." in t else t
        if len(terms[k]) != r or len(set(terms[k])) != r:
            cv.fail(f"einsum term {t!r} does not fit a {r}-D operand (repeated subscripts, "
                    "diagonals, are not supported)")
    if not arrow:  # implicit output: the letters used once, in order
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return terms + [out.replace("...", ell)]


def _einsum_sum(cv: Any, x: Node, term: str, keep: str) -> Any:
    """x with the dims of ``term`` not in ``keep`` summed away."""
    axes = [k for k, c in enumerate(term) if c not in keep]
    if not axes:
        return x, term
    return _call(cv, "sum", x, axis=axes, keepdims=0), "".join(c for c in term if c in keep)


@_op("einsum")
def _einsum(cv: Any, equation: str, operands: Sequence[Any], *rest: Any) -> Node:
    """One or two operands: sums, a transpose, and one batch_matmul over
    [batch, kept of a, kept of b] with the shared subscripts contracted."""
    xs = [cv.tensor(x) for x in operands]
    if len(xs) not in (1, 2):
        cv.fail("einsum of more than two operands is not supported")
    terms = _einsum_terms(cv, equation, [len(cv.shape(x)) for x in xs])
    out = terms[-1]
    if len(xs) == 1:
        y, t = _einsum_sum(cv, xs[0], terms[0], out)
        return _permute(cv, y, [t.index(c) for c in out])
    (a, ta), (b, tb) = (_einsum_sum(cv, xs[0], terms[0], terms[1] + out),
                        _einsum_sum(cv, xs[1], terms[1], terms[0] + out))
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    ka = [c for c in ta if c not in tb]
    kb = [c for c in tb if c not in ta]
    dims = {c: d for t, x in ((ta, a), (tb, b)) for c, d in zip(t, cv.shape(x))}
    if any(cv.shape(a)[ta.index(c)] != cv.shape(b)[tb.index(c)] for c in batch + contract):
        cv.fail(f"einsum {equation!r}: shared subscripts of different sizes (broadcasting is "
                "not supported)")
    size = lambda cs: _numel([dims[c] for c in cs])  # noqa: E731
    a = _reshape(cv, _permute(cv, a, [ta.index(c) for c in batch + ka + contract]),
                 [size(batch), size(ka), size(contract)])
    b = _reshape(cv, _permute(cv, b, [tb.index(c) for c in batch + contract + kb]),
                 [size(batch), size(contract), size(kb)])
    y = _reshape(cv, _call(cv, "nn.batch_matmul", a, b), [dims[c] for c in batch + ka + kb])
    t = "".join(batch + ka + kb)
    return _permute(cv, y, [t.index(c) for c in out])


# ---- indexing -----------------------------------------------------------------------------

@_op("index")
def _index(cv: Any, x: Node, indices: Sequence[Any]) -> Node:
    used = [k for k, i in enumerate(indices) if i is not None]
    if len(used) != 1:
        cv.fail("indexing with more than one index tensor is not supported")
    idx = indices[used[0]]
    if (isinstance(idx, Node) and cv.dtype(idx) == "bool") or \
            (not isinstance(idx, Node) and idx.dtype == cv.torch.bool):
        cv.fail("indexing with a boolean mask (a data-dependent shape) is not supported")
    return _call(cv, "take", cv.tensor(x), cv.tensor(idx), axis=used[0])
