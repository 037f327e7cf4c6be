"""Bring your own codegen from Python: a backend's pattern table, the
calls it supports, and a codegen that writes C for each partition
(kiln/byoc.h); and ``partition_for`` to run the four BYOC passes.

    kiln.byoc.register_backend(
        "mylib",
        patterns=[("mylib.dense_relu", "nn.relu(nn.dense(*, const))", None)],
        supported=lambda node: node.op == "add",
        codegen=lambda graph, node, symbol: C_TEXT)
    g2 = kiln.byoc.partition_for(g, "mylib")
    kiln.graph.compile(g, "m.tar", target="mylib, llvm")

The codegen returns the C definition of
``int32_t SYMBOL(void *const *args, const int64_t *vars)`` (kiln's kernel
signature: the call's inputs, then its outputs).
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ._lib import CODEGEN_FN, PRED_FN, C, check, check_ptr, keep_alive, raise_in_c
from .graph import Graph, Node
from .pattern import Pattern

_libc = ctypes.CDLL(None)
_libc.strdup.restype = ctypes.c_void_p
_libc.strdup.argtypes = [ctypes.c_char_p]

PatternRow = Tuple[str, Union[str, Pattern], Optional[Callable[[Node], bool]]]


def _pred(fn: Callable[[Node], bool]) -> Any:
    def call(g: int, node: int, user: int) -> int:
        try:
            return 1 if fn(Node(Graph._borrowed(g), node)) else 0
        except BaseException as e:  # noqa: BLE001 - a failing check declines
            raise_in_c(e)
            return 0

    return keep_alive(PRED_FN(call))


def register_backend(name: str, patterns: Sequence[PatternRow] = (),
                     codegen: Optional[Callable[[Graph, Node, str], str]] = None,
                     supported: Optional[Callable[[Node], bool]] = None,
                     summary: str = "", cflags: str = "", ldflags: str = "",
                     library: str = "") -> None:
    """Register backend ``name``. ``patterns`` rows are (composite name
    starting with "NAME.", pattern text or Pattern, check or None); earlier
    rows win. ``codegen(graph, node, symbol)`` gets the external call (its
    body: ``node.body``) and returns C text. A backend cannot be removed."""
    if codegen is None:
        raise TypeError("kiln: a backend needs a codegen function")
    b = check_ptr(C.kiln_codegen_builder_new(name.encode()))
    try:
        for key, val in (("summary", summary), ("cflags", cflags), ("ldflags", ldflags),
                         ("library", library)):
            if val:
                check(C.kiln_codegen_builder_set(b, key.encode(), val.encode()))
        for row in patterns:
            cname, pat, chk = (tuple(row) + (None,))[:3]
            text = pat.text() if isinstance(pat, Pattern) else str(pat)
            check(C.kiln_codegen_builder_add_pattern(b, cname.encode(), text.encode(),
                                                     _pred(chk) if chk else PRED_FN()))
        if supported is not None:
            check(C.kiln_codegen_builder_set_supported(b, _pred(supported)))

        def gen(g: int, node: int, symbol: bytes, user: int) -> Optional[int]:
            try:
                text = codegen(Graph._borrowed(g), Node(Graph._borrowed(g), node),
                               symbol.decode())
                if not isinstance(text, str):
                    raise TypeError(f"codegen returned {type(text).__name__}, not C text")
                return _libc.strdup(text.encode())  # C frees it
            except BaseException as e:  # noqa: BLE001 - the error goes back to C
                raise_in_c(e)
                return None

        check(C.kiln_codegen_builder_set_codegen(b, keep_alive(CODEGEN_FN(gen))))
    except BaseException:
        C.kiln_codegen_builder_free(b)
        raise
    check(C.kiln_codegen_builder_register(b, None))  # frees b on an error


def backends() -> List[str]:
    """The backends kiln knows (built in and registered)."""
    return [n.strip() for n in C.kiln_codegen_names().decode().split(",") if n.strip()]


def partition_for(graph: Graph, backends: Union[str, Sequence[str]]) -> Graph:
    """MergeComposite, AnnotateTarget, MergeCompilerRegions and
    PartitionGraph for these backends: a new graph with external calls."""
    names = backends if isinstance(backends, str) else ",".join(backends)
    return Graph(check_ptr(C.kiln_graph_partition_for(graph.infer_types().handle,
                                                      names.encode())))
