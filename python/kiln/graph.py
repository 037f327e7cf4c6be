"""Graphs: build them with op functions, import ONNX, print and parse the
text IR, and compile them into packages.

    import numpy as np
    import kiln
    from kiln import op

    g = kiln.graph.Graph()
    x = g.var("x", (1, 3, 8, 8))
    w = g.const(np.ones((4, 3, 3, 3), "float32"))
    y = op.nn.relu(op.nn.conv2d(x, w, padding=[1, 1, 1, 1]))
    g.set_outputs([y])
    print(g)                                  # the text IR
    kiln.graph.compile(g, "m.tar", target="llvm")

Nodes are handles into their graph (:class:`Node`); an op function takes
nodes (and numpy arrays, which become constants) and keyword attributes,
and any op the C library knows works, user ops from plugins included
(:func:`load_plugin`).
"""

from __future__ import annotations

import ctypes
import json
import operator
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import ndarray as _nd
from ._lib import C, KilnError, check, check_ptr, enc, take_str
from .options import BuildOptions


def format_attr(v: Any) -> str:
    """A Python value in the graph text's attribute syntax."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if hasattr(v, "item") and not hasattr(v, "__len__"):  # numpy scalar
        v = v.item()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r if any(c in r for c in ".einn") else r + ".0"
    raise TypeError(f"kiln: attribute value {v!r} is not an int, float, str or list")


def _split_top(text: str) -> List[str]:
    out, depth, cur, quote = [], 0, [], False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quote = not quote
        if not quote:
            depth += ch in "[("
            depth -= ch in "])"
            if ch == "," and depth == 0:
                out.append("".join(cur).strip())
                cur = []
                continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def parse_attrs(text: str) -> Dict[str, Any]:
    """Attribute text ("strides=[2, 2], layout=\"NCHW\"") as a dict."""
    out: Dict[str, Any] = {}
    for item in _split_top(text):
        key, _, val = item.partition("=")
        val = val.strip()
        try:
            out[key.strip()] = json.loads(val.rstrip("f") if val.endswith("f") and
                                          not val.startswith('"') else val)
        except ValueError:
            out[key.strip()] = val
    return out


def format_attrs(attrs: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={format_attr(v)}" for k, v in attrs.items() if v is not None)


class Graph:
    """A graph (``kiln_graph``). Graphs made here own their C graph; a graph
    a callback receives from C is a view valid during the call."""

    def __init__(self, handle: Optional[int] = None) -> None:
        self.handle = handle if handle is not None else check_ptr(C.kiln_graph_new())
        self._owned = True
        self._writable = True
        self._owner: Any = None

    @classmethod
    def _borrowed(cls, handle: int, owner: Any = None, writable: bool = False) -> "Graph":
        """A view of a graph C owns: ``owner`` (kept alive) owns it; only
        the graph a rewrite builds (post) may be added to."""
        g = cls.__new__(cls)
        g.handle = handle
        g._owned = False
        g._writable = writable
        g._owner = owner
        return g

    def _check_writable(self) -> None:
        if not self._writable:
            raise KilnError("kiln: this graph is a read-only view (a rewrite's pre graph, a "
                            "function body): build nodes in post.graph or a graph of your own")

    def __del__(self) -> None:
        h = getattr(self, "handle", None)
        if h and getattr(self, "_owned", False):
            self.handle = None
            try:
                C.kiln_graph_free(h)
            except Exception:
                pass

    # ---- building -------------------------------------------------------------
    def var(self, name: str, shape: Sequence[Union[int, str]], dtype: str = "float32") -> "Node":
        """A graph input. A dim given as a string is symbolic ("batch")."""
        self._check_writable()
        nd = len(shape)
        fixed = [None if isinstance(d, str) else operator.index(d) for d in shape]
        dims = (ctypes.c_int64 * max(nd, 1))(*[-1 if d is None else d for d in fixed])
        syms = (ctypes.c_char_p * max(nd, 1))(
            *[str(d).encode() if f is None else None for d, f in zip(shape, fixed)]
        )
        i = C.kiln_graph_var(self.handle, name.encode(), _nd.dtype_code(dtype), nd, dims, syms)
        return self._node(i)

    def const(self, value: Any, name: Optional[str] = None, dtype: Optional[str] = None) -> "Node":
        """A constant holding a copy of ``value`` (a numpy array or scalar)."""
        self._check_writable()
        import numpy as np

        arr = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats: float32, as Relay's const
        w = _nd.Wrapped(arr)
        try:
            i = C.kiln_graph_const(self.handle, enc(name), w.handle)
        finally:
            w.free()
        return self._node(i)

    def call(self, op: str, *inputs: Any, name: Optional[str] = None, **attrs: Any) -> "Node":
        """A call of ``op`` on ``inputs`` (nodes of this graph, or arrays that
        become constants) with attributes ``attrs``."""
        self._check_writable()
        ids = [self._input_id(x) for x in _flatten(inputs)]
        arr = (ctypes.c_int * max(len(ids), 1))(*ids)
        text = format_attrs(attrs)
        i = C.kiln_graph_call(self.handle, op.encode(), len(ids), arr, text.encode(), enc(name))
        return self._node(i)

    def tuple(self, nodes: Sequence["Node"], name: Optional[str] = None) -> "Node":
        self._check_writable()
        ids = [self._input_id(x) for x in nodes]
        arr = (ctypes.c_int * max(len(ids), 1))(*ids)
        return self._node(C.kiln_graph_tuple(self.handle, len(ids), arr, enc(name)))

    def tuple_get(self, t: "Node", index: int, name: Optional[str] = None) -> "Node":
        self._check_writable()
        return self._node(C.kiln_graph_tuple_get(self.handle, self._input_id(t), index, enc(name)))

    def set_outputs(self, nodes: Sequence["Node"], names: Optional[Sequence[str]] = None) -> None:
        self._check_writable()
        ids = [self._input_id(x) for x in nodes]
        arr = (ctypes.c_int * max(len(ids), 1))(*ids)
        cn = (ctypes.c_char_p * max(len(ids), 1))(*[n.encode() for n in names]) if names else None
        check(C.kiln_graph_set_outputs(self.handle, len(ids), arr, cn))

    def _node(self, i: int) -> "Node":
        if i < 0:
            check(1)
        return Node(self, i)

    def _input_id(self, x: Any) -> int:
        if hasattr(x, "materialize"):  # a rewrite's post: the call, rebuilt here
            x = x.materialize()
        if isinstance(x, Node):
            if x.graph.handle != self.handle:
                raise KilnError("kiln: a node of another graph was given as an input")
            return x.id
        return self.const(x).id

    # ---- reading -----------------------------------------------------------------
    def __len__(self) -> int:
        return C.kiln_graph_num_nodes(self.handle)

    @property
    def nodes(self) -> List["Node"]:
        return [Node(self, i) for i in range(len(self))]

    @property
    def outputs(self) -> List["Node"]:
        return [Node(self, C.kiln_graph_output(self.handle, k))
                for k in range(C.kiln_graph_num_outputs(self.handle))]

    def node(self, i: int) -> "Node":
        if not 0 <= i < len(self):
            raise IndexError(f"kiln: no node {i} (the graph has {len(self)})")
        return Node(self, i)

    def infer_types(self) -> "Graph":
        """Infer every node's type (a view C handed out is typed already)."""
        if self._writable:
            check(C.kiln_graph_infer_types(self.handle))
        return self

    def text(self) -> str:
        """The graph in Relay-like text (constants as meta[relay.Constant][K])."""
        return take_str(C.kiln_graph_print(self.handle))

    __str__ = text

    def __repr__(self) -> str:
        return f"<kiln.Graph {len(self)} nodes>"

    def op_counts(self) -> str:
        return take_str(C.kiln_graph_op_counts(self.handle))

    def constants(self) -> Dict[str, Any]:
        """The constants in meta order: {"0": array, "1": ...}."""
        z = check_ptr(C.kiln_graph_constants(self.handle))
        try:
            return {C.kiln_npz_name(z, i).decode(): _nd.to_numpy(C.kiln_npz_array(z, i))
                    for i in range(C.kiln_npz_count(z))}
        finally:
            C.kiln_npz_free(z)

    @staticmethod
    def parse(text: str, constants: Optional[Dict[str, Any]] = None) -> "Graph":
        """The graph of ``text`` (kiln's text IR); ``constants`` supplies
        meta[relay.Constant][K] as {"K": array} (what :meth:`constants` gives)."""
        return parse(text, constants)

    def copy(self) -> "Graph":
        return Graph(self._copy_handle())

    def _copy_handle(self) -> int:
        return check_ptr(C.kiln_graph_run_pass(self.handle, b"InferType", None))


class Node:
    """A node of a graph: a variable, constant, call, tuple or tuple_get."""

    __slots__ = ("graph", "id")

    def __init__(self, graph: Graph, i: int) -> None:
        self.graph = graph
        self.id = i

    @property
    def op(self) -> str:
        """The op of a call ("nn.conv2d"), or "var", "const", "tuple", "tuple_get"."""
        return (C.kiln_graph_node_op(self.graph.handle, self.id) or b"").decode()

    @property
    def name(self) -> str:
        return (C.kiln_graph_node_name(self.graph.handle, self.id) or b"").decode()

    @property
    def inputs(self) -> List["Node"]:
        h = self.graph.handle
        return [Node(self.graph, C.kiln_graph_node_input(h, self.id, k))
                for k in range(C.kiln_graph_node_num_inputs(h, self.id))]

    @property
    def args(self) -> List["Node"]:  # Relay's name
        return self.inputs

    @property
    def value(self) -> Any:
        """A constant's value (a numpy copy), else None."""
        v = C.kiln_graph_node_value(self.graph.handle, self.id)
        return _nd.to_numpy(v) if v else None

    def attr(self, name: str, default: Any = None) -> Any:
        """A call's attribute (or its schema default) as int, float or str;
        ``default`` decides which is read (int when None)."""
        h = self.graph.handle
        if isinstance(default, str):
            r = C.kiln_graph_node_attr_str(h, self.id, name.encode(), default.encode())
            return r.decode() if r is not None else default
        if isinstance(default, float):
            return C.kiln_graph_node_attr_float(h, self.id, name.encode(), default)
        return C.kiln_graph_node_attr_int(h, self.id, name.encode(),
                                          0 if default is None else int(default))

    @property
    def dtype(self) -> Optional[str]:
        code = C.kiln_graph_node_dtype(self.graph.handle, self.id)
        return None if code >= len(_nd.DTYPES) else _nd.dtype_name(code)

    @property
    def shape(self) -> Optional[tuple]:
        """Dims (None where symbolic), after types are inferred; None if unknown."""
        h = self.graph.handle
        nd = C.kiln_graph_node_ndim(h, self.id)
        if nd < 0:
            return None
        return tuple(None if d < 0 else d
                     for d in (C.kiln_graph_node_dim(h, self.id, k) for k in range(nd)))

    @property
    def body(self) -> Optional[Graph]:
        """The function body of a composite or external call (a view)."""
        b = C.kiln_graph_node_body(self.graph.handle, self.id)
        return Graph._borrowed(b, owner=self.graph) if b else None

    @property
    def attrs(self) -> Dict[str, Any]:
        """The attributes the call sets (not its defaults), as Python
        values: ints, floats, strings and lists of them."""
        return parse_attrs(take_str(C.kiln_graph_node_attrs(self.graph.handle, self.id)))

    def __getitem__(self, index: int) -> "Node":
        return self.graph.tuple_get(self, index)

    def _bin(self, op: str, other: Any, swap: bool = False) -> "Node":
        o = other if isinstance(other, Node) else self.graph.const(other, dtype=self.dtype)
        return self.graph.call(op, o, self) if swap else self.graph.call(op, self, o)

    def __add__(self, o: Any) -> "Node":
        return self._bin("add", o)

    def __radd__(self, o: Any) -> "Node":
        return self._bin("add", o, True)

    def __sub__(self, o: Any) -> "Node":
        return self._bin("subtract", o)

    def __rsub__(self, o: Any) -> "Node":
        return self._bin("subtract", o, True)

    def __mul__(self, o: Any) -> "Node":
        return self._bin("multiply", o)

    def __rmul__(self, o: Any) -> "Node":
        return self._bin("multiply", o, True)

    def __truediv__(self, o: Any) -> "Node":
        return self._bin("divide", o)

    def __neg__(self) -> "Node":
        return self.graph.call("negative", self)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Node) and o.graph.handle == self.graph.handle and o.id == self.id

    def __hash__(self) -> int:
        return hash((self.graph.handle, self.id))

    def __repr__(self) -> str:
        return f"<kiln.Node %{self.id} {self.op} {self.name}>"


def _flatten(xs: Iterable[Any]) -> List[Any]:
    out: List[Any] = []
    for x in xs:
        if isinstance(x, (list, tuple)) and x and all(isinstance(y, Node) for y in x):
            out += list(x)
        else:
            out.append(x)
    return out


class _OpNamespace:
    """``kiln.op.nn.conv2d(x, w, strides=[2, 2])``: a call of op "nn.conv2d"
    in the graph of the first node argument."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> "_OpNamespace":
        if name.startswith("__"):
            raise AttributeError(name)
        return _OpNamespace(f"{self._prefix}.{name}" if self._prefix else name)

    def __call__(self, *args: Any, name: Optional[str] = None, **attrs: Any) -> Node:
        args = tuple(a.materialize() if hasattr(a, "materialize") else a for a in args)
        nodes = [a for a in _flatten(args) if isinstance(a, Node)]
        if not nodes:
            raise KilnError(f"kiln: op {self._prefix} needs at least one graph node argument")
        return nodes[0].graph.call(self._prefix, *args, name=name, **attrs)

    def __repr__(self) -> str:
        return f"<kiln op {self._prefix or '(namespace)'}>"


op = _OpNamespace("")


def call(op_name: str, *args: Any, name: Optional[str] = None, **attrs: Any) -> Node:
    """A call of op ``op_name`` (any registered op) on node arguments."""
    return _OpNamespace(op_name)(*args, name=name, **attrs)


def load_plugin(path: str) -> None:
    """Load a C plugin (.so: user ops, backends) or a Python one (.py)."""
    check(C.kiln_plugin_load(path.encode()))


def parse(text: str, constants: Optional[Dict[str, Any]] = None) -> Graph:
    z = None
    keep = []
    if constants:
        z = check_ptr(C.kiln_npz_new())
    try:
        if constants:
            for k, v in constants.items():
                w = _nd.Wrapped(v)
                keep.append(w)
                check(C.kiln_npz_add(z, str(k).encode(), w.handle))
        return Graph(check_ptr(C.kiln_graph_parse(text.encode(), z)))
    finally:
        if z:
            C.kiln_npz_free(z)


def _shapes_arg(shape_dict: Optional[Dict[str, Sequence[Union[int, str]]]]) -> Optional[str]:
    """A shape_dict as the C importers take it: "name:[1,3,224,224],..."."""
    if not shape_dict:
        return None
    return ",".join(f"{k}:[{','.join(str(d) for d in v)}]" for k, v in shape_dict.items())


def from_onnx(model: Any, shape_dict: Optional[Dict[str, Sequence[Union[int, str]]]] = None
              ) -> Graph:
    """Import an ONNX model: a path, or an ``onnx.ModelProto`` (or its
    serialized bytes). ``shape_dict`` gives inputs shapes, as
    relay.frontend.from_onnx takes them ({"input": [1, 3, 224, 224]}; a
    string dim stays symbolic)."""
    shapes = _shapes_arg(shape_dict)
    if isinstance(model, (str, os.PathLike)):
        h = C.kiln_onnx_import(os.fspath(model).encode(), enc(shapes))
    else:
        data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
        name = getattr(getattr(model, "graph", None), "name", None) or "<ModelProto>"
        h = C.kiln_onnx_import_bytes(bytes(data), len(data), name.encode(), enc(shapes))
    return Graph(check_ptr(h))


def from_tflite(model: Union[str, os.PathLike, bytes, bytearray],
                shape_dict: Optional[Dict[str, Sequence[int]]] = None,
                kernels: str = "xnnpack") -> Graph:
    """Import a TFLite model (a .tflite path, or its bytes), as
    relay.frontend.from_tflite does. ``shape_dict`` gives inputs other
    static shapes ({"input": [1, 224, 224, 3]}). Float32, float16, int8
    (full-integer and dynamic-range) models; every unsupported operator is
    named in one error (docs/TFLITE.md). ``kernels`` says whose int8
    results a quantized model gives: "xnnpack" (the interpreter's default
    delegate, float32 requantization) or "reference" (TFLite's reference
    kernels and TFLite Micro: fixed-point requantization)."""
    if kernels not in ("xnnpack", "reference"):
        raise ValueError(f"kernels={kernels!r}: not 'xnnpack' or 'reference'")
    flags = 1 if kernels == "reference" else 0  # KILN_TFLITE_REFERENCE_KERNELS
    shapes = _shapes_arg(shape_dict)
    if isinstance(model, (str, os.PathLike)):
        h = C.kiln_tflite_import_flags(os.fspath(model).encode(), enc(shapes), flags)
    else:
        data = bytes(model)
        h = C.kiln_tflite_import_bytes_flags(data, len(data), b"<bytes>", enc(shapes), flags)
    return Graph(check_ptr(h))


def quantize(model: str, calibration: Any, output: str, calibration_method: str = "minmax",
             percentile: Optional[float] = None, per_channel: bool = True,
             max_samples: Optional[int] = None, batch: Optional[int] = None,
             input_shapes: Optional[str] = None) -> str:
    """Post-training quantization (``kiln quantize``): write a QDQ ONNX
    model of the float model at ``model`` to ``output``, calibrated on
    ``calibration`` (a dict of numpy arrays, one per model input with the
    samples along dim 0, or an .npz path). Returns what was quantized."""
    opts = check_ptr(C.kiln_quantize_options_new())
    z = None
    keep = []
    try:
        for key, val in (("calibration", calibration_method), ("percentile", percentile),
                         ("per-channel", None if per_channel else "0"),
                         ("max-samples", max_samples), ("batch", batch),
                         ("input-shapes", input_shapes)):
            if val is not None:
                check(C.kiln_quantize_options_set(opts, key.encode(), str(val).encode()))
        if isinstance(calibration, (str, os.PathLike)):
            z = check_ptr(C.kiln_npz_load(os.fspath(calibration).encode()))
        else:
            z = check_ptr(C.kiln_npz_new())
            for k, v in calibration.items():
                w = _nd.Wrapped(v)
                keep.append(w)
                check(C.kiln_npz_add(z, str(k).encode(), w.handle))
        report = ctypes.c_void_p()
        check(C.kiln_onnx_quantize(os.fspath(model).encode(), z, os.fspath(output).encode(), opts,
                                   ctypes.byref(report)))
        return take_str(report.value)
    finally:
        C.kiln_quantize_options_free(opts)
        if z:
            C.kiln_npz_free(z)


def compile(graph: Graph, path: str, target: Any = None, tuning_records: Optional[str] = None,
            options: Optional[BuildOptions] = None, **kw: Any) -> str:
    """Compile ``graph`` into a package at ``path`` (mod.so, mod.json and
    mod.params in a tar, as ``kiln compile`` writes) and return the path.
    Keywords are build options: opt_level, disabled_pass, dump_ir,
    pass_ (user passes, run first), winograd, cache, ..."""
    if options is None:
        from .transform import PassContext

        kw = {**PassContext.current().build_options(), **kw}  # the context, then the call
    if kw.get("dump_ir"):
        os.makedirs(kw["dump_ir"], exist_ok=True)
    o = options or BuildOptions(target=target, tuning_records=tuning_records, **kw)
    check(C.kiln_graph_compile(graph.handle, os.fspath(path).encode(), o.handle))
    return os.fspath(path)
