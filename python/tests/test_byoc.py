"""kiln.byoc: a backend written in Python (pattern table, supported ops and
a codegen that writes C), partition_for, and a build that offloads to it."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import op
from kiln.pattern import is_op, wildcard

CALLS = []


def walk(g):
    """The body's nodes in order, a composite's body in its place."""
    for n in g.nodes:
        if n.op == "composite":
            yield from walk(n.body)
        yield n


def relu_codegen(graph, node, symbol):
    """C for an external call whose body is relu/abs/add(x, x) chains: we
    generate the body op by op, over float32 tensors of the call's size."""
    CALLS.append(symbol)
    body = node.body
    n = int(np.prod(node.shape))
    lines = ["#include <stdint.h>", "#include <math.h>",
             f"int32_t {symbol}(void *const *args, const int64_t *vars) {{",
             "  (void)vars;", "  const float *in = args[0];", f"  float *out = args[1];",
             f"  for (int64_t i = 0; i < {n}; i++) {{", "    float v = in[i];"]
    for b in walk(body):
        if b.op == "nn.relu":
            lines.append("    v = v > 0 ? v : 0;")
        elif b.op == "abs":
            lines.append("    v = fabsf(v);")
        elif b.op not in ("var", "composite"):
            raise ValueError(f"pyrelu cannot generate {b.op}")
    lines += ["    out[i] = v;", "  }", "  return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def backend():
    if "pyrelu" not in kiln.byoc.backends():
        kiln.byoc.register_backend(
            "pyrelu",
            patterns=[("pyrelu.abs_relu", is_op("nn.relu")(is_op("abs")(wildcard())), None)],
            supported=lambda n: n.op == "nn.relu",
            codegen=relu_codegen, summary="relu and abs in generated C")
    return "pyrelu"


def graph():
    g = kiln.Graph()
    x = g.var("x", (2, 8))
    a = op.nn.relu(op.abs(x))          # the composite
    b = op.multiply(a, 3.0)            # kiln's
    c = op.nn.relu(op.subtract(b, 4.0))  # a supported single op
    g.set_outputs([c])
    return g


def test_partition_for_and_build(backend, tmp_path):
    g = graph()
    p = kiln.byoc.partition_for(g, backend)
    ext = [n for n in p.nodes if n.op == "external"]
    assert len(ext) == 2 and all(n.attr("Compiler", "") == "pyrelu" for n in ext)
    bodies = sorted([[b.op for b in walk(e.body) if b.op != "var"] for e in ext])
    assert bodies == [["abs", "nn.relu", "composite"], ["nn.relu"]]
    comp = [b for e in ext for b in e.body.nodes if b.op == "composite"]
    assert comp[0].attr("Composite", "") == "pyrelu.abs_relu"
    CALLS.clear()
    pkg = kiln.graph.compile(g, str(tmp_path / "byoc.tar"), target="pyrelu, llvm", cache=False)
    assert len(CALLS) == 2 and all(s.startswith("tvmgen_default_pyrelu_main_") for s in CALLS)
    x = np.random.randn(2, 8).astype("float32")
    (y,) = kiln.runtime.load(pkg).run([x])
    np.testing.assert_allclose(y, np.maximum(np.maximum(np.abs(x), 0) * 3 - 4, 0), rtol=1e-6,
                               atol=1e-6)  # kiln may fuse x * 3 - 4 into one FMA


def test_backend_errors(backend, tmp_path):
    with pytest.raises(kiln.KilnError, match="exists already"):
        kiln.byoc.register_backend("pyrelu", codegen=relu_codegen)
    with pytest.raises(kiln.KilnError, match="must start with"):
        kiln.byoc.register_backend("pybad", patterns=[("other.x", "nn.relu(*)", None)],
                                   codegen=relu_codegen)

    def broken(graph, node, symbol):
        raise RuntimeError("codegen exploded")

    kiln.byoc.register_backend("pybroken", supported=lambda n: n.op == "nn.relu",
                               codegen=broken)
    with pytest.raises(kiln.KilnError) as ei:
        kiln.graph.compile(graph(), str(tmp_path / "x.tar"), target="pybroken, llvm",
                           cache=False)
    assert "codegen exploded" in str(ei.value)
    with pytest.raises(kiln.KilnError, match="unknown external backend"):
        kiln.byoc.partition_for(graph(), "no_such_backend")
