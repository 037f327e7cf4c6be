"""Graph passes by name (TVM's ``relay.transform``), sequences of them, and
passes written in Python.

    seq = kiln.transform.Sequential(["SimplifyInference", "FoldConstant", my_pass],
                                    opt_level=3, disabled_pass=["FoldConstant"])
    g2 = seq(g)

    @kiln.transform.register_pass("fold_my_quantize")
    def fold(g: kiln.graph.Graph) -> kiln.graph.Graph:
        return kiln.pattern.rewrite(FoldQuantize(), g)

A registered pass is a global function (kiln.register_func) from graph to
graph, so the C pass manager runs it too: ``kiln.graph.compile(g, ...,
pass_="fold_my_quantize")``, or from the command line ``kiln compile
m.onnx --plugin my_passes.py --pass fold_my_quantize``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ._lib import C, check_ptr
from .ffi import register_func
from .graph import Graph
from .options import BuildOptions

PassLike = Union[str, Callable[[Graph], Graph]]

_opt_levels: Dict[str, int] = {}


class PassContext:
    """TVM's PassContext: ``with PassContext(opt_level=2, disabled_pass=[...]):``
    sets what Sequential and kiln.graph.compile use when not told
    otherwise. ``config`` takes more build options (e.g. {"winograd": "off"})."""

    _stack: List["PassContext"] = []

    def __init__(self, opt_level: int = 3, disabled_pass: Sequence[str] = (),
                 required_pass: Sequence[str] = (), config: Optional[Dict[str, Any]] = None
                 ) -> None:
        self.opt_level = opt_level
        self.disabled_pass = list(disabled_pass)
        self.required_pass = list(required_pass)
        self.config = dict(config or {})

    def __enter__(self) -> "PassContext":
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        PassContext._stack.pop()

    @staticmethod
    def current() -> "PassContext":
        return PassContext._stack[-1] if PassContext._stack else _DEFAULT_CONTEXT

    def build_options(self) -> Dict[str, Any]:
        """What kiln.graph.compile takes from the context."""
        opts: Dict[str, Any] = {"opt_level": self.opt_level}
        if self.disabled_pass:
            opts["disabled_pass"] = ",".join(self.disabled_pass)
        opts.update(self.config)
        return opts


_DEFAULT_CONTEXT = PassContext()


class Pass(str):
    """A built-in pass by name (``kiln.transform.FoldConstant()``), usable in
    Sequential and callable on a graph, as TVM's pass objects."""

    def __call__(self, graph: Graph, target: Any = None) -> Graph:  # type: ignore[override]
        return run_pass(graph, str(self), target=target)


def _builtin(name: str) -> Callable[[], Pass]:
    def make() -> Pass:
        return Pass(name)

    make.__name__ = name
    make.__doc__ = f"The built-in pass {name}."
    return make


InferType = _builtin("InferType")
SimplifyInference = _builtin("SimplifyInference")
EliminateCommonSubexpr = _builtin("EliminateCommonSubexpr")
FoldConstant = _builtin("FoldConstant")
SimplifyExpr = _builtin("SimplifyExpr")
MergeComposite = _builtin("MergeComposite")
AnnotateTarget = _builtin("AnnotateTarget")
MergeCompilerRegions = _builtin("MergeCompilerRegions")
PartitionGraph = _builtin("PartitionGraph")
AlterOpLayout = _builtin("AlterOpLayout")
DeadCodeElimination = _builtin("DeadCodeElimination")


def list_passes() -> Dict[str, int]:
    """The built-in passes in pipeline order, with the opt level of each,
    then the passes registered from Python."""
    out: Dict[str, int] = {}
    for item in C.kiln_pass_list().decode().split(","):
        name, level = item.split(":")
        out[name] = int(level)
    out.update(_opt_levels)
    return out


def run_pass(graph: Graph, name: str, target: Any = None,
             options: Optional[BuildOptions] = None) -> Graph:
    """Run one pass (built in, or registered) and return the new graph.
    ``target`` matters to AlterOpLayout and the BYOC passes."""
    o = options or (BuildOptions(target=target) if target is not None else None)
    h = C.kiln_graph_run_pass(graph.handle, name.encode(), o.handle if o else None)
    return Graph(check_ptr(h))


def register_pass(name: str, opt_level: int = 0, override: bool = False
                  ) -> Callable[[Callable[[Graph], Graph]], Callable[[Graph], Graph]]:
    """Register a Python function from graph to graph as pass ``name``."""

    def reg(fn: Callable[[Graph], Graph]) -> Callable[[Graph], Graph]:
        def wrapped(g: Graph) -> Graph:
            out = fn(g)
            if not isinstance(out, Graph):
                raise TypeError(f"pass {name} returned {type(out).__name__}, not a Graph")
            return out

        register_func(name, wrapped, override=override)
        _opt_levels[name] = opt_level
        fn.pass_name = name  # type: ignore[attr-defined]
        return fn

    return reg


class Sequential:
    """Passes run in order: names (built in or registered) or Python
    functions from graph to graph. A pass runs when its opt level is at
    most ``opt_level`` and it is not in ``disabled_pass``, as TVM's
    PassContext decides. ``dump_ir`` (a folder) gets the graph before the
    first pass and after each one."""

    def __init__(self, passes: Sequence[PassLike], opt_level: Optional[int] = None,
                 disabled_pass: Optional[Sequence[str]] = None,
                 required_pass: Optional[Sequence[str]] = None,
                 target: Any = None, dump_ir: Optional[str] = None) -> None:
        self.passes = list(passes)
        self._opt_level = opt_level
        self._disabled = disabled_pass
        self._required = required_pass
        self.target = target
        self.dump_ir = dump_ir

    def _name(self, p: PassLike) -> str:
        return p if isinstance(p, str) else getattr(p, "pass_name", getattr(p, "__name__", "pass"))

    @property
    def opt_level(self) -> int:
        """Given, else the current PassContext's."""
        return self._opt_level if self._opt_level is not None else PassContext.current().opt_level

    @property
    def disabled(self) -> set:
        d = self._disabled if self._disabled is not None else PassContext.current().disabled_pass
        return set(d)

    @property
    def required(self) -> set:
        r = self._required if self._required is not None else PassContext.current().required_pass
        return set(r)

    def __call__(self, graph: Graph) -> Graph:
        levels = list_passes()
        opts = BuildOptions(target=self.target) if self.target is not None else None
        cur = graph
        step = 0
        self._dump(step, "input", "graph", cur)
        for p in self.passes:
            name = self._name(p)
            if name in self.disabled:
                continue
            level = levels.get(name, getattr(p, "opt_level", 0))
            if level > self.opt_level and name not in self.required:
                continue
            if isinstance(p, str):
                cur = run_pass(cur, p, options=opts)
            else:
                out = p(cur)
                if not isinstance(out, Graph):
                    raise TypeError(f"pass {name} returned {type(out).__name__}, not a Graph")
                cur = out.infer_types()
            step += 1
            self._dump(step, "after", name, cur)
        return cur

    def _dump(self, step: int, when: str, name: str, g: Graph) -> None:
        if not self.dump_ir:
            return
        os.makedirs(self.dump_ir, exist_ok=True)
        with open(os.path.join(self.dump_ir, f"{step:02d}_{when}_{name}.txt"), "w") as f:
            f.write(g.text())


__all__ = ["list_passes", "run_pass", "register_pass", "Sequential", "PassContext", "Pass",
           "InferType", "SimplifyInference", "EliminateCommonSubexpr", "FoldConstant",
           "SimplifyExpr", "MergeComposite", "AnnotateTarget", "MergeCompilerRegions",
           "PartitionGraph", "AlterOpLayout", "DeadCodeElimination"]
