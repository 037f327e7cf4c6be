"""The global function registry: Python functions called from C by name,
C functions called from Python, one packed convention over ints, floats,
strings, arrays, graphs and functions, and errors crossing both ways."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from conftest import run_threads


def test_python_function_called_through_c():
    @kiln.register_func("test.py.add", override=True)
    def add(a, b):
        return a + b

    f = kiln.get_global_func("test.py.add")  # a kiln_func: the call goes through C
    assert f(2, 3) == 5 and f(1.5, 2) == 3.5 and f("a", "b") == "ab"
    assert "test.py.add" in kiln.list_global_func_names()
    arr = f(np.arange(3, dtype="float32"), np.ones(3, "float32"))
    np.testing.assert_array_equal(arr, [1, 2, 3])


def test_c_functions_from_python():
    assert kiln.get_global_func("kiln.version")() == kiln.library_version()
    g = kiln.Graph()
    x = g.var("x", (2,))
    g.set_outputs([kiln.op.nn.relu(x)])
    text = kiln.get_global_func("kiln.graph.print")(g)
    assert "nn.relu(%x)" in text
    g2 = kiln.get_global_func("kiln.graph.run_pass")(g, "InferType")
    assert isinstance(g2, kiln.Graph) and g2.text() == g.infer_types().text()


def test_callbacks_as_values_and_all_kinds():
    # kiln.call (C) calls a Python function handed to it as a value
    call = kiln.get_global_func("kiln.call")
    got = {}

    def cb(i, f, s, arr, g, none, fn):
        got.update(i=i, f=f, s=s, arr=arr, g=g, none=none, fn=fn)
        return i * 2, s.upper(), arr + 1, fn(20, 22)

    g = kiln.Graph()
    g.set_outputs([g.var("v", (1,))])
    r = call(cb, 21, 0.25, "str", np.array([1, 2], "int32"), g, None,
             kiln.get_global_func("test.py.add"))
    assert r[0] == 42 and r[1] == "STR" and r[3] == 42
    np.testing.assert_array_equal(r[2], [2, 3])
    assert got["f"] == 0.25 and got["none"] is None and isinstance(got["g"], kiln.Graph)
    assert isinstance(got["fn"], kiln.Function)


def test_errors_cross_both_ways():
    @kiln.register_func("test.py.fail", override=True)
    def fail(x):
        raise ValueError(f"bad value {x}")

    with pytest.raises(kiln.KilnError) as ei:
        kiln.get_global_func("test.py.fail")(7)
    msg = str(ei.value)
    assert "bad value 7" in msg and "Traceback" in msg and "ValueError" in msg
    # a C error in a function Python called: the message and the C stack
    with pytest.raises(kiln.KilnError) as ei:
        kiln.get_global_func("kiln.graph.run_pass")(kiln.Graph(), "NoSuchPass")
    assert "NoSuchPass" in str(ei.value) and ei.value.c_trace
    with pytest.raises(kiln.KilnError, match="no global function 'test.missing'"):
        kiln.get_global_func("test.missing")
    assert kiln.get_global_func("test.missing", allow_missing=True) is None
    with pytest.raises(kiln.KilnError, match="already registered"):
        kiln.register_func("test.py.fail", lambda: 0)
    with pytest.raises(TypeError):
        kiln.get_global_func("test.py.add")(object(), 1)


def test_remove_and_lifetime():
    kiln.register_func("test.py.tmp", lambda: 1, override=True)
    f = kiln.get_global_func("test.py.tmp")
    kiln.remove_global_func("test.py.tmp")
    assert f() == 1  # our reference keeps it alive
    del f
    with pytest.raises(kiln.KilnError):
        kiln.remove_global_func("test.py.tmp")


def test_threads_call_python_functions():
    kiln.register_func("test.py.square", lambda v: v * v, override=True)
    f = kiln.get_global_func("test.py.square")

    def work(k):
        for i in range(200):
            assert f(i + k) == (i + k) ** 2

    errors = run_threads(work)
    assert not errors, errors


def test_numpy_scalars_and_in_place_arrays():
    f = kiln.get_global_func("test.py.add")
    assert f(np.int64(3), np.int32(4)) == 7 and f(np.float32(0.5), 1) == 1.5
    assert f(True, 1) == 2

    def fill(out, v):
        out[:] = v  # arguments are views of the caller's arrays

    out = np.zeros(4, "float32")
    kiln.get_global_func("kiln.call")(fill, out, 7.0)
    np.testing.assert_array_equal(out, [7, 7, 7, 7])


def test_nested_function_release_does_not_deadlock():
    import gc

    from kiln import ffi

    before = len(ffi._live)

    def make():
        inner = ffi.to_function(lambda: 1)
        return ffi.to_function(lambda: inner() + 1)

    outer = make()
    assert outer() == 2
    del outer
    gc.collect()
    assert len(ffi._live) == before  # both Python entries freed, no hang
