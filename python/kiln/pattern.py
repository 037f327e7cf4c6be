"""The graph pattern language (TVM's dataflow patterns) and rewrites with
Python callbacks, run by the C pattern engine.

    from kiln.pattern import is_op, wildcard, is_constant, rewrite

    class FoldQuantize(kiln.pattern.DFPatternCallback):     # seed note 001
        def __init__(self):
            super().__init__()
            self.data = is_constant()
            self.pattern = is_op("qnn.quantize")(self.data, is_constant(), is_constant())

        def callback(self, pre, post, node_map):
            data = node_map[self.data][0].value
            ...
            return post.graph.const(folded)

    g2 = rewrite(FoldQuantize(), g)

A pattern object used twice in one pattern binds one node, as in TVM.
Patterns are Python objects; each use compiles them into a C pattern set.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import ndarray as _nd
from ._lib import PRED_FN, REWRITE_FN, C, KilnError, check_ptr, raise_in_c, take_str
from .graph import Graph, Node, format_attrs

P = ctypes.c_void_p
_CLASSES = {"elemwise": 0, "broadcast": 1, "injective": 2, "reduce": 3, "fusable": 4,
            "out_elemwise_fusable": 4, "opaque": 8}


class Pattern:
    """A pattern. Combine with ``|``; constrain with has_attr, has_dtype,
    has_shape; match a node with match(node)."""

    def __or__(self, other: "Pattern") -> "Pattern":
        return AltPattern(self, other)

    def has_attr(self, attrs: Dict[str, Any]) -> "Pattern":
        return AttrPattern(self, attrs)

    def has_dtype(self, dtype: str) -> "Pattern":
        return TypePattern(self, dtype, None)

    def has_shape(self, shape: Sequence[Optional[int]]) -> "Pattern":
        return TypePattern(self, None, shape)

    def has_type(self, dtype: Optional[str] = None, shape: Optional[Sequence[Any]] = None
                 ) -> "Pattern":
        return TypePattern(self, dtype, shape)

    def optional(self, op: Union[str, Callable[["Pattern"], "Pattern"]]) -> "Pattern":
        """op(self), or self alone; op is an op name or TVM's lambda form
        (``lambda x: is_op("nn.relu")(x)``)."""
        if callable(op):
            made = op(self)
            if not isinstance(made, CallPattern) or made.op is None:
                raise TypeError("kiln: optional(f) needs f(x) = is_op(NAME)(x)")
            op = made.op
        return OptionalPattern(op, self)

    def dominates(self, parent: "Pattern", path: Optional["Pattern"] = None) -> "Pattern":
        return DominatorPattern(parent, path or wildcard(), self)

    def match(self, node: Node) -> bool:
        with _Compiled(self) as c:
            m = C.kiln_pattern_match(c.root, node.graph.infer_types().handle, node.id)
            if m:
                C.kiln_match_free(m)
            c.reraise()
            return bool(m)

    def partition(self, graph: Graph, attrs: Optional[Dict[str, Any]] = None,
                  check: Optional[Callable[[Node], bool]] = None) -> Graph:
        return partition(self, graph, attrs, check)

    def text(self) -> str:
        """The pattern in kiln's text form."""
        with _Compiled(self) as c:
            return take_str(C.kiln_pattern_print(c.root))

    __str__ = text

    def __repr__(self) -> str:
        try:
            return f"<kiln.Pattern {self.text()}>"
        except Exception:
            return "<kiln.Pattern>"

    # identity semantics: patterns are dict keys of node_map
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def _make(self, c: "_Compiled") -> int:
        raise NotImplementedError


class WildcardPattern(Pattern):
    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_wildcard(c.set)


class ConstantPattern(Pattern):
    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_constant(c.set)


class CallPattern(Pattern):
    """A call of an op (by name, by predicate, or by fusion class); calling
    it with argument patterns fixes the arguments (without: any)."""

    def __init__(self, op: Optional[str] = None, args: Optional[Sequence[Pattern]] = None,
                 pred: Optional[Callable[[Node], bool]] = None, op_class: Optional[int] = None
                 ) -> None:
        self.op, self.args, self.pred, self.op_class = op, args, pred, op_class

    def __call__(self, *args: Pattern) -> "CallPattern":
        return CallPattern(self.op, list(args), self.pred, self.op_class)

    def _make(self, c: "_Compiled") -> int:
        n = -1 if self.args is None else len(self.args)
        subs = [c.get(a) for a in (self.args or [])]
        arr = (P * max(len(subs), 1))(*subs)
        if self.op is not None:
            return C.kiln_pattern_op(c.set, self.op.encode(), n, arr)
        if self.op_class is not None:
            return C.kiln_pattern_op_class(c.set, self.op_class, n, arr)
        cb = c.predicate(self.pred)
        c.keep.append(cb)
        return C.kiln_pattern_op_where(c.set, cb, None, n, arr)


class AltPattern(Pattern):
    def __init__(self, a: Pattern, b: Pattern) -> None:
        self.a, self.b = a, b

    def __call__(self, *args: Pattern) -> "AltPattern":
        """(is_op("add") | is_op("subtract"))(x, y): each side with these args."""
        sides = []
        for side in (self.a, self.b):
            if not callable(side):
                raise TypeError("kiln: only alternatives of op patterns take arguments")
            sides.append(side(*args))
        return AltPattern(*sides)

    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_alt(c.set, c.get(self.a), c.get(self.b))


class AttrPattern(Pattern):
    def __init__(self, p: Pattern, attrs: Dict[str, Any]) -> None:
        self.p, self.attrs = p, attrs

    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_attrs(c.set, c.get(self.p), format_attrs(self.attrs).encode())


class TypePattern(Pattern):
    def __init__(self, p: Pattern, dtype: Optional[str], shape: Optional[Sequence[Any]]) -> None:
        self.p, self.dtype, self.shape = p, dtype, shape

    def _make(self, c: "_Compiled") -> int:
        code = _nd.dtype_code(self.dtype) if self.dtype else len(_nd.DTYPES)
        if self.shape is None:
            return C.kiln_pattern_type(c.set, c.get(self.p), code, -1, None)
        dims = (ctypes.c_int64 * max(len(self.shape), 1))(
            *[-1 if d is None or not isinstance(d, int) else d for d in self.shape])
        return C.kiln_pattern_type(c.set, c.get(self.p), code, len(self.shape), dims)


class OptionalPattern(Pattern):
    def __init__(self, op: str, p: Pattern) -> None:
        self.op, self.p = op, p

    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_optional(c.set, self.op.encode(), c.get(self.p))


class DominatorPattern(Pattern):
    def __init__(self, parent: Pattern, path: Pattern, child: Pattern) -> None:
        self.parent, self.path, self.child = parent, path, child

    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_dominator(c.set, c.get(self.parent), c.get(self.path),
                                        c.get(self.child))


class TextPattern(Pattern):
    """A pattern in kiln's text form (``kiln/pattern.h``):
    ``nn.conv2d(%x, const) | nn.dense(%x, *)``. Its named parts are
    :meth:`named` patterns, usable as node_map keys."""

    def __init__(self, text: str) -> None:
        self.source = text

    def named(self, name: str) -> "NamedPattern":
        return NamedPattern(self, name)

    def _make(self, c: "_Compiled") -> int:
        return C.kiln_pattern_parse(c.set, self.source.encode())


class NamedPattern(Pattern):
    def __init__(self, text: TextPattern, name: str) -> None:
        self.textp, self.name = text, name

    def _make(self, c: "_Compiled") -> int:
        c.get(self.textp)
        return C.kiln_pattern_named(c.set, self.name.lstrip("%").encode())




class _Compiled:
    """Python patterns as one C pattern set (freed on exit). A Python
    callback that raises (a predicate, a check) is remembered, answers "no"
    from then on, and the exception is raised when the C call returns
    (:meth:`reraise`): C's matcher treats a predicate's answer as a yes/no."""

    def __init__(self, root: Pattern) -> None:
        self.set = check_ptr(C.kiln_pattern_set_new())
        self.map: Dict[int, int] = {}
        self.objs: Dict[int, Pattern] = {}
        self.keep: List[Any] = []
        self.error: Optional[BaseException] = None
        try:
            self.root = self.get(root)
        except BaseException:
            C.kiln_pattern_set_free(self.set)
            raise

    def get(self, p: Pattern) -> int:
        if not isinstance(p, Pattern):
            raise TypeError(f"kiln: {p!r} is not a pattern")
        k = id(p)
        if k not in self.map:
            self.map[k] = check_ptr(p._make(self))
            self.objs[k] = p
        return self.map[k]

    def predicate(self, fn: Callable[[Node], bool]) -> Any:
        """A C predicate calling fn(node), failing safely (see above)."""

        def cpred(g: int, node: int, user: int) -> int:
            if self.error is not None:
                return 0
            try:
                return 1 if fn(Node(Graph._borrowed(g), node)) else 0
            except BaseException as e:  # noqa: BLE001 - raised after the C call
                self.error = e
                return 0

        cb = PRED_FN(cpred)
        self.keep.append(cb)
        return cb

    def reraise(self) -> None:
        if self.error is not None:
            e, self.error = self.error, None
            raise KilnError(f"a pattern callback failed: {type(e).__name__}: {e}") from e

    def __enter__(self) -> "_Compiled":
        return self

    def __exit__(self, *exc: Any) -> None:
        C.kiln_pattern_set_free(self.set)


# ---- constructors (TVM's names) ------------------------------------------------------


def wildcard() -> Pattern:
    return WildcardPattern()


def is_constant() -> Pattern:
    return ConstantPattern()


def is_op(op: str) -> CallPattern:
    """A call of op ``op``; ``is_op("add")(x, y)`` fixes its arguments."""
    return CallPattern(op=op)


def is_op_where(pred: Callable[[Node], bool]) -> CallPattern:
    """A call that ``pred(node)`` accepts (its op and attributes)."""
    return CallPattern(pred=pred)


def is_class(name: str) -> CallPattern:
    """A call of any op of fusion class ``name`` or a lighter one
    (elemwise, broadcast, injective, reduce, fusable, opaque)."""
    if name not in _CLASSES:
        raise ValueError(f"kiln: unknown fusion class {name} (known: {', '.join(_CLASSES)})")
    return CallPattern(op_class=_CLASSES[name])


def has_attr(attrs: Dict[str, Any], pattern: Optional[Pattern] = None) -> Pattern:
    """A pattern (default: any call) whose attributes have these values."""
    return (pattern if pattern is not None else CallPattern(op_class=8)).has_attr(attrs)


def dominates(parent: Pattern, path: Pattern, child: Pattern) -> Pattern:
    return DominatorPattern(parent, path, child)


def parse(text: str) -> TextPattern:
    return TextPattern(text)


# ---- rewriting -------------------------------------------------------------------------


class DFPatternCallback:
    """A rewrite: set ``self.pattern`` and define ``callback(pre, post,
    node_map)``, which returns the replacement node (built in
    ``post.graph``) or None to leave the match alone."""

    def __init__(self, require_type: bool = False, rewrite_once: bool = False) -> None:
        # kiln always types the graph first, so require_type always holds
        self.pattern: Optional[Pattern] = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre: Node, post: Node, node_map: Dict[Pattern, List[Node]]
                 ) -> Optional[Node]:
        raise NotImplementedError

    def rewrite(self, graph: Graph) -> Graph:
        return rewrite(self, graph)


_current = threading.local()


def uses(pre_node: Node) -> int:
    """Inside a rewrite callback: how many nodes the outputs need read
    ``pre_node`` (a node of ``pre.graph``); a rewrite that would compute an
    inner node twice checks it."""
    rw = getattr(_current, "rw", None)
    if not rw:
        raise RuntimeError("kiln: pattern.uses() is for use inside a rewrite callback")
    return C.kiln_rewrite_uses(rw, pre_node.id)


class PostCall:
    """TVM's ``post``: the matched call with its inputs as rewritten so far,
    in ``graph`` (the graph being built). Build the replacement there."""

    def __init__(self, pre: Node, post: Graph, rw: int) -> None:
        self.pre = pre
        self.graph = post
        self._inputs = [Node(post, C.kiln_rewrite_post_of(rw, n.id)) for n in pre.inputs]
        self._made: Optional[Node] = None

    @property
    def inputs(self) -> List[Node]:
        return list(self._inputs)

    args = inputs

    @property
    def op(self) -> str:
        return self.pre.op

    @property
    def name(self) -> str:
        return self.pre.name

    @property
    def dtype(self) -> Optional[str]:
        return self.pre.dtype

    @property
    def shape(self) -> Optional[tuple]:
        return self.pre.shape

    def attr(self, name: str, default: Any = None) -> Any:
        return self.pre.attr(name, default)

    @property
    def attrs(self) -> Dict[str, Any]:
        return self.pre.attrs

    def materialize(self) -> Node:
        """The call itself, made in post.graph (once): what TVM's ``post``
        is, for a replacement that wraps it (``op.nn.relu(post)``)."""
        if self._made is None:
            text = take_str(C.kiln_graph_node_attrs(self.pre.graph.handle, self.pre.id))
            ids = (ctypes.c_int * max(len(self._inputs), 1))(*[n.id for n in self._inputs])
            i = C.kiln_graph_call(self.graph.handle, self.op.encode(), len(self._inputs), ids,
                                  text.encode(), self.name.encode() or None)
            self._made = self.graph._node(i)
        return self._made

    def __repr__(self) -> str:
        return f"<kiln post {self.op}>"


def _rewrite_one(pattern: Pattern, fn: Callable[..., Optional[Node]], graph: Graph,
                 once: bool = False) -> Graph:
    with _Compiled(pattern) as c:

        def cb(rw: int, user: int) -> int:
            prev = getattr(_current, "rw", None)
            _current.rw = rw
            try:
                pre_g = Graph._borrowed(C.kiln_rewrite_pre(rw), owner=graph)
                post_g = Graph._borrowed(C.kiln_rewrite_post(rw), writable=True)
                pre = Node(pre_g, C.kiln_rewrite_root(rw))
                post = PostCall(pre, post_g, rw)
                node_map: Dict[Pattern, List[Node]] = {}
                for k, cp in c.map.items():
                    n = C.kiln_rewrite_post_node(rw, cp)
                    if n >= 0:
                        node_map[c.objs[k]] = [Node(post_g, n)]
                node_map[pattern] = [post]  # TVM: node_map[self.pattern][0] is post
                out = fn(pre, post, node_map)
                if out is None or out is post:
                    return -2  # KILN_REWRITE_SKIP: the match stays as it is
                if post._made is not None and out is post._made:
                    return -2  # the call rebuilt unchanged: no rewrite
                if not isinstance(out, Node) or out.graph.handle != post_g.handle:
                    raise TypeError("a rewrite callback must return a node of post.graph "
                                    "(or None)")
                return out.id
            except BaseException as e:  # noqa: BLE001 - the error goes back to C
                raise_in_c(e)
                return -1
            finally:
                _current.rw = prev

        ccb = REWRITE_FN(cb)
        run = C.kiln_graph_rewrite_once if once else C.kiln_graph_rewrite
        h = run(graph.infer_types().handle, c.root, ccb, None)
        c.reraise()
        return Graph(check_ptr(h))


def rewrite(pattern: Any, callback: Any = None, graph: Optional[Graph] = None,
            once: bool = False) -> Graph:
    """Rewrite ``graph`` until no match is left (at most 100 rounds), or
    with ``once`` (a callback's rewrite_once) in one round whose results are
    not matched again.

    ``rewrite(pattern, callback, graph)`` with ``callback(pre, post,
    node_map)``, or ``rewrite(callbacks, graph)`` with one or more
    DFPatternCallback objects, applied in order."""
    if isinstance(pattern, Pattern):
        if graph is None:
            raise TypeError("kiln: rewrite(pattern, callback, graph)")
        return _rewrite_one(pattern, callback, graph, once)
    graph = callback
    cbs = pattern if isinstance(pattern, (list, tuple)) else [pattern]
    for cb in cbs:
        if cb.pattern is None:
            raise ValueError(f"kiln: {type(cb).__name__} has no pattern")
        graph = _rewrite_one(cb.pattern, cb.callback, graph, once or cb.rewrite_once)
    return graph


def partition(pattern: Pattern, graph: Graph, attrs: Optional[Dict[str, Any]] = None,
              check: Optional[Callable[[Node], bool]] = None) -> Graph:
    """Each match becomes a call of a composite function with ``attrs``
    (at least {"Composite": NAME}); ``check(root_node)`` may refuse one."""
    attrs = attrs or {"Composite": "composite"}
    with _Compiled(pattern) as c:
        ccheck = c.predicate(check) if check is not None else PRED_FN()
        h = C.kiln_graph_partition(graph.infer_types().handle, c.root,
                                   format_attrs(attrs).encode(), ccheck, None)
        c.reraise()
        return Graph(check_ptr(h))


__all__ = ["Pattern", "wildcard", "is_constant", "is_op", "is_op_where", "is_class", "has_attr",
           "dominates", "parse", "rewrite", "partition", "DFPatternCallback", "uses"]
