"""PyTorch modules into kiln graphs: :func:`from_pytorch`.

The module is traced (``torch.jit.trace``, under ``torch.no_grad``; a
``torch.jit.ScriptModule`` is taken as it is), frozen (parameters become
constants, submodules are inlined), and its TorchScript graph is read
once. Values the example inputs' shapes decide -- constants, ``aten::size``
and the integer arithmetic on it, lists -- are computed with torch itself
while converting ("static" values); every other node becomes kiln ops
through one converter table (parts in ``_pytorch_ops.py`` and
``_pytorch_nn.py``; :func:`supported_ops` lists it). Before
anything is built, every node that reads a graph input and has no converter
is collected, and one :class:`UnsupportedOpError` lists them all with their
counts and where the first of each is in the model's source.

torch.export (torch >= 2.1) is not read: the torch this project tests
with (Debian's 1.13) does not have it.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._lib import KilnError
from ..graph import Graph, Node
from . import _pytorch_nn, _pytorch_ops

# the one converter table: "aten::NAME" -> converter, from both parts
_CONVERTERS = {**_pytorch_ops.TABLE, **_pytorch_nn.TABLE}

# nodes whose result depends on a graph input's shape only, not its values
_SHAPE_QUERIES = {"aten::size", "aten::dim", "aten::numel", "prim::dtype", "prim::device",
                  "prim::layout", "aten::__isnot__", "aten::__is__", "prim::shape", "aten::len"}
# nodes whose result depends on their first input's shape and dtype only
# (torch computes them on a stand-in of that shape)
_LIKE_OPS = {"aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::zeros_like",
             "aten::ones_like", "aten::full_like"}
# nodes the driver itself handles, whatever their inputs
_STRUCTURAL = {"prim::Constant", "prim::ListConstruct", "prim::TupleConstruct",
               "prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex", "aten::__getitem__",
               "prim::If", "prim::RaiseException", "prim::Uninitialized",
               "prim::DictConstruct"}

_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_TORCH_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16",
                 "int64": "int64", "int32": "int32", "int8": "int8", "uint8": "uint8",
                 "bool": "bool"}


class UnsupportedOpError(KilnError, NotImplementedError):
    """The PyTorch graph has ops the frontend cannot convert. ``ops`` maps
    each op ("aten::roll") to ``(count, first source location)``."""

    def __init__(self, ops: Dict[str, Tuple[int, str]]) -> None:
        self.ops = ops
        lines = [f"  {k} (x{c}){': ' + loc if loc else ''}" for k, (c, loc) in sorted(ops.items())]
        super().__init__(f"kiln: the PyTorch graph has {len(ops)} unsupported op"
                         f"{'s' if len(ops) != 1 else ''} (no kiln conversion):\n"
                         + "\n".join(lines))


class _NodeError(KilnError):
    """An error that already names its node (raised once, not wrapped again)."""


def converter(kind: str) -> Optional[Any]:
    """The converter of op ``kind`` ("aten::conv2d"), or None."""
    fn = _CONVERTERS.get(kind)
    if fn is None and kind.endswith("_") and not kind.endswith("__"):
        fn = _CONVERTERS.get(kind[:-1])  # an in-place op: its functional form
    return fn


def supported_ops() -> List[str]:
    """The aten ops with a conversion (their in-place forms convert too)."""
    return sorted(_CONVERTERS)


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise KilnError("kiln: from_pytorch needs torch (import torch failed: "
                        f"{e})") from e
    return torch


def location(node: Any) -> str:
    """Where a TorchScript node comes from: its module (scope) and the
    first source line outside torch itself."""
    scope = node.scopeName() or ""
    scope = scope.split("/")[-1].replace("__module.", "")
    text = node.sourceRange() or ""
    frames = re.findall(r"^(.*)\((\d+)\): (\S+)$", text, flags=re.M)
    where = ""
    if frames:
        mine = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]
                and not f[0].startswith(_KILN_DIR)]
        f = (mine or frames)[0]
        where = f"{f[0]}:{f[1]}"
    else:  # a scripted node: 'File "path", line N' and the source text
        m = re.search(r'File "([^"]+)", line (\d+)', text)
        where = f"{m.group(1)}:{m.group(2)}" if m else ""
    return ", ".join(p for p in (f"module {scope}" if scope else "", where) if p)


def _example_tuple(torch: Any, example_inputs: Any) -> Tuple[Any, ...]:
    xs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not xs:
        raise TypeError("kiln: from_pytorch needs at least one example input tensor")
    for k, x in enumerate(xs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"kiln: from_pytorch's example input {k} is a {type(x).__name__}, "
                            "not a torch.Tensor (give a tensor or a tuple of tensors)")
        if str(x.dtype).replace("torch.", "") not in _TORCH_DTYPES:
            raise TypeError(f"kiln: example input {k} has dtype {x.dtype}, which kiln does not "
                            f"take (supported: {', '.join(_TORCH_DTYPES)})")
    return tuple(xs)


def _frozen_graph(torch: Any, module: Any, inputs: Tuple[Any, ...]) -> Any:
    if getattr(module, "training", False):
        raise KilnError("kiln: the module is in training mode (dropout and batch norm would "
                        "train): call module.eval() before from_pytorch")
    if isinstance(module, torch.jit.ScriptModule):
        scripted = module
    elif isinstance(module, torch.nn.Module):
        try:
            with torch.no_grad():
                # strict=False: a dict of outputs (segmentation models) is traced
                scripted = torch.jit.trace(module, inputs, check_trace=False, strict=False)
        except Exception as e:  # the module's own error on these inputs
            raise KilnError(f"kiln: torch.jit.trace of {type(module).__name__} on the example "
                            f"inputs failed: {type(e).__name__}: {e}") from e
    else:
        raise TypeError(f"kiln: from_pytorch takes a torch.nn.Module or torch.jit.ScriptModule, "
                        f"not a {type(module).__name__}")
    frozen = torch._C._freeze_module(scripted._c)
    graph = frozen._get_method("forward").graph
    torch._C._jit_pass_inline(graph)
    torch._C._jit_pass_constant_propagation(graph)
    torch._C._jit_pass_dce(graph)
    return graph


class _Converter:
    """One conversion: the TorchScript graph, the kiln graph being built and
    the value of each TorchScript value (a kiln Node, or a static Python or
    torch value)."""

    def __init__(self, torch: Any, ts_graph: Any, inputs: Tuple[Any, ...],
                 input_names: Optional[Sequence[str]]) -> None:
        self.torch = torch
        self.ts = ts_graph
        self.inputs = inputs
        self.g = Graph()
        self.env: Dict[int, Any] = {}
        self.node: Any = None  # the node being converted, for messages
        params = list(ts_graph.inputs())[1:]  # [0] is the module itself
        if len(params) != len(inputs):
            raise TypeError(f"kiln: the module's forward takes {len(params)} input"
                            f"{'s' if len(params) != 1 else ''}, {len(inputs)} example input"
                            f"{'s were' if len(inputs) != 1 else ' was'} given")
        if input_names is not None:
            if len(input_names) != len(inputs) or len(set(input_names)) != len(input_names):
                raise ValueError(f"kiln: input_names must be {len(inputs)} distinct names, got "
                                 f"{list(input_names)}")
            self.names = [str(n) for n in input_names]
        else:
            self.names = []
            for k, p in enumerate(params):
                n = re.sub(r"\.\d+$", "", p.debugName()) or f"input{k}"
                self.names.append(n if n not in self.names else f"{n}_{k}")
        self.params = params

    # ---- the check: every unsupported op, at once -------------------------------
    def check_supported(self) -> None:
        static = set()
        missing: Dict[str, List[Any]] = {}

        def add_missing(kind: str, n: Any) -> None:
            missing.setdefault(kind, [0, location(n)])[0] += 1

        def visit(block: Any) -> None:
            for n in block.nodes():
                kind = n.kind()
                ins = [v.unique() for v in n.inputs()]
                if kind in _STRUCTURAL:
                    if kind == "prim::If" and ins[0] not in static:
                        add_missing("prim::If (on a tensor's values)", n)
                    for b in n.blocks():
                        visit(b)
                    block_outs = [v.unique() for b in n.blocks() for v in b.outputs()]
                    if all(i in static for i in ins + block_outs):
                        static.update(o.unique() for o in n.outputs())
                    continue
                like = kind in _LIKE_OPS and all(i in static for i in ins[1:])
                if kind in _SHAPE_QUERIES or like or (all(i in static for i in ins)
                                              and not n.isNondeterministic()
                                              and not list(n.blocks())):
                    static.update(o.unique() for o in n.outputs())
                    continue
                if converter(kind) is None:
                    add_missing(kind, n)
                for b in n.blocks():
                    visit(b)

        visit(self.ts.block())
        if missing:
            raise UnsupportedOpError({k: (c, loc) for k, (c, loc) in missing.items()})

    # ---- building ------------------------------------------------------------------
    def build(self) -> Graph:
        for p, x, name in zip(self.params, self.inputs, self.names):
            dt = _TORCH_DTYPES[str(x.dtype).replace("torch.", "")]
            self.env[p.unique()] = self.g.var(name, tuple(x.shape), dtype=dt)
        self.run_block(self.ts.block())
        outs: List[Tuple[Optional[str], Node]] = []
        for v in self.ts.outputs():
            self._flatten_output(self.env[v.unique()], None, outs)
        names = None
        if any(name is not None for name, _ in outs):  # a dict's keys name its outputs
            names = []
            for k, (name, _) in enumerate(outs):
                name = name or f"output{k}"
                names.append(name if name not in names else f"{name}_{k}")
        self.g.set_outputs([node for _, node in outs], names)
        self.node = None
        self._infer()
        return self.g

    def _flatten_output(self, val: Any, name: Optional[str],
                        outs: List[Tuple[Optional[str], Node]]) -> None:
        if isinstance(val, (list, tuple)):
            for x in val:
                self._flatten_output(x, name, outs)
        elif isinstance(val, dict):
            for key, x in val.items():
                self._flatten_output(x, f"{name}.{key}" if name else str(key), outs)
        elif isinstance(val, Node):
            outs.append((name, val))
        elif isinstance(val, self.torch.Tensor):
            outs.append((name, self.const(val)))
        else:
            raise KilnError(f"kiln: the module returns a {type(val).__name__} ({val!r}); "
                            "from_pytorch takes tensors, and tuples, lists and dicts of them, "
                            "as outputs")

    def run_block(self, block: Any) -> None:
        for n in block.nodes():
            self.node = n
            try:
                self._run_node(n)
            except (UnsupportedOpError, _NodeError):
                raise
            except (KilnError, ValueError, TypeError, IndexError, RuntimeError) as e:
                raise _NodeError(f"kiln: converting {n.kind()} ({location(n)}): {e}") from e

    def _run_node(self, n: Any) -> None:
        kind = n.kind()
        ins = [self.env[v.unique()] for v in n.inputs()]
        outs = list(n.outputs())
        if kind == "prim::Constant":
            self._set(outs, [n.output().toIValue()])
            return
        if kind == "prim::DictConstruct":  # keys and values alternate
            self._set(outs, [dict(zip(ins[0::2], ins[1::2]))])
            return
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            self._set(outs, [list(ins) if kind == "prim::ListConstruct" else tuple(ins)])
            return
        if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            if len(ins[0]) != len(outs):
                self.fail(f"unpacks {len(outs)} values from a list of {len(ins[0])}")
            self._set(outs, list(ins[0]))
            return
        if kind in ("prim::TupleIndex", "aten::__getitem__"):
            self._set(outs, [ins[0][int(ins[1])]])
            return
        if kind == "prim::Uninitialized":
            self._set(outs, [None])
            return
        if kind == "prim::RaiseException":
            self.fail(f"the module raises an exception for these inputs: {ins[0]}")
        if kind == "prim::If":
            self._run_if(n, ins[0])
            return
        if kind == "aten::len":  # of a list, whatever it holds
            self._set(outs, [len(ins[0])])
            return
        if kind in _SHAPE_QUERIES and ins and isinstance(ins[0], Node):
            self._set(outs, [self._shape_query(kind, ins)])
            return
        if kind in _LIKE_OPS and isinstance(ins[0], Node) and \
                not any(self._dynamic(x) for x in ins[1:]):
            ins[0] = self.torch.zeros(self.shape(ins[0]),
                                      dtype=getattr(self.torch, self.dtype(ins[0])))
        if not any(self._dynamic(x) for x in ins) and not n.isNondeterministic():
            self._set(outs, self._eval_static(n, ins))
            return
        fn = converter(kind)
        if fn is None:  # check_supported lists these first
            raise UnsupportedOpError({kind: (1, location(n))})
        res = fn(self, *ins)
        self._infer()  # a kiln type error is this node's
        self._set(outs, list(res) if len(outs) > 1 else [res])

    def _run_if(self, n: Any, cond: Any) -> None:
        if isinstance(cond, Node):
            self.fail("a branch (prim::If) on a tensor's values is not supported: kiln graphs "
                      "here have no data-dependent control flow")
        blocks = list(n.blocks())
        chosen = blocks[0] if bool(cond) else blocks[1]
        self.run_block(chosen)
        self.node = n
        self._set(list(n.outputs()), [self.env[v.unique()] for v in chosen.outputs()])

    def _shape_query(self, kind: str, ins: List[Any]) -> Any:
        shape = self.shape(ins[0])
        if kind == "aten::size":
            return shape[int(ins[1])] if len(ins) > 1 else list(shape)
        if kind == "aten::dim":
            return len(shape)
        if kind == "aten::numel":
            return _pytorch_ops._numel(shape)
        if kind == "prim::dtype":
            return getattr(self.torch, self.dtype(ins[0]))
        if kind == "prim::device":
            return self.torch.device("cpu")
        if kind in ("aten::__is__", "aten::__isnot__"):
            same = ins[0] is ins[1]
            return same if kind == "aten::__is__" else not same
        if kind == "prim::layout":
            return self.torch.strided
        return list(shape)

    def _dynamic(self, x: Any) -> bool:
        if isinstance(x, Node):
            return True
        if isinstance(x, (list, tuple)):
            return any(self._dynamic(y) for y in x)
        return False

    def _eval_static(self, n: Any, ins: List[Any]) -> List[Any]:
        """A node of static inputs, computed by torch itself."""
        ns, name = n.kind().split("::", 1)
        if n.kind() == "prim::NumToTensor":
            return [self.torch.tensor(ins[0])]
        # the node's own overload: torch.ops' resolution by the Python
        # values can pick another (aten::ne(3, 4) as ne.int_list is False)
        try:
            schema = self.torch._C.parse_schema(n.schema())
            packet = getattr(getattr(self.torch.ops, ns), name)
            fn = getattr(packet, schema.overload_name or "default")
        except (AttributeError, RuntimeError):
            self.fail("it has only constant inputs, and torch has no operator of this "
                      "schema to compute it with")
        args = [v for a, v in zip(schema.arguments, ins) if not a.kwarg_only]
        kwargs = {a.name: v for a, v in zip(schema.arguments, ins) if a.kwarg_only}
        with self.torch.no_grad():
            res = fn(*args, **kwargs)
        outs = list(n.outputs())
        return list(res) if len(outs) > 1 else [res]

    def _set(self, outs: List[Any], vals: List[Any]) -> None:
        if len(vals) != len(outs):
            self.fail(f"gave {len(vals)} values for {len(outs)} outputs")
        for o, v in zip(outs, vals):
            self.env[o.unique()] = v
            if v is None and o.uses() and not o.type().kind() in ("NoneType", "OptionalType"):
                self.fail(f"its output {o.offset()} ({o.debugName()}) is not supported")

    # ---- for the converters ----------------------------------------------------------
    def fail(self, message: str) -> None:
        """Raise a KilnError that names the node being converted and where it is."""
        n = self.node
        where = f" ({location(n)})" if n is not None and location(n) else ""
        raise _NodeError(f"kiln: converting {n.kind() if n is not None else 'the graph'}"
                        f"{where}: {message}")

    def _infer(self) -> None:
        self.g.infer_types()

    def shape(self, x: Node) -> Tuple[int, ...]:
        s = x.shape
        if s is None:
            self._infer()
            s = x.shape
        if s is None or any(d is None for d in s):
            self.fail(f"the shape of kiln node {x!r} is not known")
        return tuple(s)

    def dtype(self, x: Node) -> str:
        d = x.dtype
        if d is None:
            self._infer()
            d = x.dtype
        return d or "float32"

    def const(self, value: Any, dtype: Optional[str] = None) -> Node:
        """A kiln constant of a torch tensor, numpy array or Python scalar."""
        import numpy as np

        if isinstance(value, self.torch.Tensor):
            value = value.detach().cpu()
            name = str(value.dtype).replace("torch.", "")
            if name not in _TORCH_DTYPES:
                self.fail(f"a constant has dtype {value.dtype}, which kiln does not take")
            arr = value.numpy()
        else:  # a Python scalar: float32 (or int64), as torch's scalars
            arr = np.asarray(value)
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
        if dtype:
            arr = arr.astype(dtype)
        return self.g.const(np.ascontiguousarray(arr))

    def tensor(self, x: Any, like: Optional[Node] = None) -> Node:
        """x as a kiln node: a node as it is, anything static as a constant
        (of ``like``'s dtype for a Python or 0-d scalar)."""
        if isinstance(x, Node):
            return x
        if x is None:
            self.fail("a tensor input is None")
        if like is not None and (not isinstance(x, self.torch.Tensor) or x.dim() == 0):
            v = x.item() if isinstance(x, self.torch.Tensor) else x
            return self.const(v, dtype=self.dtype(like))
        return self.const(x)


def from_pytorch(module: Any, example_inputs: Any,
                 input_names: Optional[Sequence[str]] = None) -> Graph:
    """The kiln graph of a PyTorch module (``torch.nn.Module``, traced on
    ``example_inputs``, or a ``torch.jit.ScriptModule``) for inputs of the
    example inputs' shapes and dtypes. Parameters become the graph's
    constants, so ``kiln.graph.compile`` packages them. The graph's inputs
    are named ``input_names`` or after forward's arguments. Raises
    :class:`UnsupportedOpError` listing every op without a conversion, and
    KilnError (naming the op and its source line) for what a converter
    refuses, such as a module left in training mode."""
    torch = _import_torch()
    inputs = _example_tuple(torch, example_inputs)
    ts_graph = _frozen_graph(torch, module, inputs)
    conv = _Converter(torch, ts_graph, inputs, input_names)
    conv.check_supported()
    return conv.build()


def input_names(graph: Graph) -> List[str]:
    """The names of a converted graph's inputs, in order (its variables)."""
    return [n.name for n in graph.nodes if n.op == "var"]
