"""kiln.te: expressions with operator overloading, computes from lambdas,
reductions, math, every schedule primitive, lower and build on numpy."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kiln
from conftest import run_threads
from kiln import te


def build_and_run(s, args, arrays, **kw):
    f = kiln.build(s, args, target="llvm", name="f", **kw)
    f(*arrays)
    return f


def test_vector_add_split_lower_build():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    text = kiln.lower(s, [A, B, C], name="myadd")
    assert "i.outer" in text and "i.inner" in text and "< n" in text
    f = kiln.build(s, [A, B, C], target="llvm", name="myadd")
    for size in (1, 63, 64, 1000):
        a = np.random.rand(size).astype("float32")
        b = np.random.rand(size).astype("float32")
        c = np.zeros(size, "float32")
        f(a, b, c)
        np.testing.assert_array_equal(c, a + b)
    assert f.functions == ["myadd"]
    assert "myadd" in f.get_source()


def test_operators_and_math():
    A = te.placeholder((4, 5), name="A")
    C = te.compute((4, 5), lambda i, j: te.exp(A[i, j]) * 2.0 - A[i, j] / 3.0 + te.sqrt(
        te.abs(A[i, j])) + te.if_then_else(i > j, A[i, j], -A[i, j]), name="C")
    s = te.create_schedule(C.op)
    a = np.random.randn(4, 5).astype("float32")
    c = np.zeros_like(a)
    build_and_run(s, [A, C], [a, c])
    ii, jj = np.meshgrid(range(4), range(5), indexing="ij")
    ref = np.exp(a) * 2 - a / 3 + np.sqrt(np.abs(a)) + np.where(ii > jj, a, -a)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "erf", "floor", "ceil", "round", "sin",
                                  "cos", "atan", "log"])
def test_unary_math(name):
    import math

    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: getattr(te, name)(A[i]), name="C")
    a = np.linspace(0.1, 3.0, 16).astype("float32")
    c = np.zeros_like(a)
    build_and_run(te.create_schedule(C.op), [A, C], [a, c])
    ref = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": np.vectorize(math.erf),
           "round": np.round, "atan": np.arctan}.get(name, getattr(np, name, None))
    np.testing.assert_allclose(c, ref(a.astype("float64")), rtol=1e-5, atol=1e-6)


def test_reduce_matmul_astype_and_schedule_primitives():
    n, m, k = 32, 24, 16
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    Cm = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((n, m), lambda i, j: (Cm[i, j] + 1.0).astype("float64"), name="D")
    s = te.create_schedule(D.op)
    io, jo, ii, ji = s[Cm].tile(Cm.op.axis[0], Cm.op.axis[1], 8, 8)
    s[Cm].reorder(io, jo, Cm.op.reduce_axis[0], ii, ji)
    s[Cm].vectorize(ji)
    s[Cm].unroll(ii)
    fused = s[D].fuse(D.op.axis[0], D.op.axis[1])
    s[D].parallel(fused)
    assert len(s[D].leaf_iter_vars) == 1
    a = np.random.randn(n, k).astype("float32")
    b = np.random.randn(k, m).astype("float32")
    d = np.zeros((n, m), "float64")
    build_and_run(s, [A, B, D], [a, b, d])
    np.testing.assert_allclose(d, a @ b + 1, rtol=1e-4, atol=1e-4)
    assert D.dtype == "float64" and [e.value for e in D.shape] == [n, m]


def test_max_min_reduce_compute_at_inline_cache():
    A = te.placeholder((8, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((8, 16), lambda i, j: A[i, j] * 2.0, name="B")
    Mx = te.compute((8,), lambda i: te.max(B[i, k], axis=k), name="Mx")
    k2 = te.reduce_axis((0, 16), name="k2")
    Mn = te.compute((8,), lambda i: te.min(A[i, k2], axis=k2), name="Mn")
    Out = te.compute((8,), lambda i: Mx[i] - Mn[i], name="Out")
    s = te.create_schedule(Out.op)
    s[B].compute_inline()
    s[Mx].compute_at(s[Out], Out.op.axis[0])
    AA = s.cache_read(A, "local", [Mn])
    assert AA.name
    a = np.random.randn(8, 16).astype("float32")
    out = np.zeros(8, "float32")
    build_and_run(s, [A, Out], [a, out])
    np.testing.assert_allclose(out, (a * 2).max(1) - a.min(1), rtol=1e-6)
    # elementwise max/min of two expressions
    C2 = te.compute((8,), lambda i: te.max(A[i, 0], A[i, 1]) + te.min(A[i, 2], 0.0), name="C2")
    c2 = np.zeros(8, "float32")
    build_and_run(te.create_schedule(C2.op), [A, C2], [a, c2])
    np.testing.assert_allclose(c2, np.maximum(a[:, 0], a[:, 1]) + np.minimum(a[:, 2], 0))
    # cache_write, set_scope, compute_root, split by nparts
    T = te.compute((8, 16), lambda i, j: A[i, j] + 1.0, name="T")
    U = te.compute((8, 16), lambda i, j: T[i, j] * 3.0, name="U")
    s3 = te.create_schedule(U.op)
    UL = s3.cache_write(U, "local")
    assert UL.name != U.name
    s3[T].set_scope("global")
    s3[T].compute_at(s3[UL], UL.op.axis[0])
    s3[T].compute_root()
    s3[U].split(U.op.axis[0], nparts=2)
    u = np.zeros((8, 16), "float32")
    build_and_run(s3, [A, U], [a, u])
    np.testing.assert_allclose(u, (a + 1) * 3, rtol=1e-6)


def test_export_library_and_load(tmp_path):
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i] * A[i], name="C")
    f = kiln.build(te.create_schedule(C.op), [A, C], target="llvm", name="square")
    path = str(tmp_path / "square.so")
    f.export_library(path)
    g = kiln.load_module(path)
    a = np.arange(10, dtype="float32")
    c = np.zeros(10, "float32")
    g["square"](a, c)
    np.testing.assert_array_equal(c, a * a)
    assert os.path.getsize(path) > 0


def test_errors():
    A = te.placeholder((4,), name="A", dtype="float32")
    B = te.placeholder((4,), name="B", dtype="int32")
    with pytest.raises(kiln.KilnError):
        te.compute((4,), lambda i: A[i] + B[i], name="bad")  # mixed dtypes

    def boom(i):
        raise ValueError("my lambda is broken")

    with pytest.raises(kiln.KilnError) as ei:
        te.compute((4,), boom, name="boom")
    assert "my lambda is broken" in str(ei.value) and "Traceback" in str(ei.value)
    C = te.compute((4,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(kiln.KilnError) as ei:
        s[C].split(C.op.axis[0], factor=0)
    assert ei.value.c_trace  # the C stack where it was raised
    f = kiln.build(s, [A, C], target="llvm", name="f")
    with pytest.raises(kiln.KilnError):
        f(np.zeros(5, "float32"), np.zeros(4, "float32"))  # wrong shape
    with pytest.raises(kiln.KilnError):
        kiln.build(s, [A, C], target="no-such-target")
    s2 = te.create_schedule(C.op)
    bx, tx = s2[C].split(C.op.axis[0], factor=2)
    s2[C].bind(bx, te.thread_axis("blockIdx.x"))
    with pytest.raises(kiln.KilnError):
        kiln.build(s2, [A, C], target="llvm")  # GPU bindings: no CPU code


def test_context_and_expr_identity():
    with te.Context():
        n = te.size_var("n")
        assert te.size_var("n").same_as(n)
        e = n + 1
        assert bool(e == e) and not bool(e != e)
        assert str(e) in ("n + 1", "(n + 1)")
        assert te.const(5).value == 5


def test_scan_prefix_sum_and_checked_index():
    n = 16
    A = te.placeholder((n,), name="A")
    Y = te.scan((n,), lambda y, t: A[t] + te.if_then_else(t > 0, y[t - 1], 0.0), name="Y")
    s = te.create_schedule(Y.op)
    a = np.random.rand(n).astype("float32")
    y = np.zeros(n, "float32")
    build_and_run(s, [A, Y], [a, y])
    np.testing.assert_allclose(y, np.cumsum(a), rtol=1e-5)
    with pytest.raises(kiln.KilnError):  # reads y at its own index: refused
        te.scan((n,), lambda y, t: y[t] + 1.0, name="bad")
    idx = te.placeholder((4,), dtype="int64", name="idx")
    G = te.compute((4,), lambda i: A[te.checked_index(idx[i], n)], name="G")
    iv = np.array([0, 3, 15, 2], "int64")
    g = np.zeros(4, "float32")
    f = build_and_run(te.create_schedule(G.op), [A, idx, G], [a, iv, g])
    np.testing.assert_array_equal(g, a[iv])
    with pytest.raises(kiln.KilnError):
        f(a, np.array([0, 99, 1, 2], "int64"), g)  # out of range: an error, no crash


def test_build_save_cross(tmp_path):
    import shutil

    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    if not shutil.which("aarch64-linux-gnu-gcc"):
        pytest.skip("no aarch64 cross compiler")
    path = kiln.build_save(s, [A, B], str(tmp_path / "f.so"),
                           target="llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", name="f")
    assert open(path, "rb").read(20)[18] == 183  # e_machine: EM_AARCH64


def test_targets():
    if not kiln.target.Target.host().has("avx2"):
        pytest.skip("runs AVX2 code")
    t = kiln.target.Target("llvm -mcpu=haswell")
    assert t.arch == "x86_64" and t.cpu == "haswell" and t.vector_bits == 256
    assert t.has("avx2") and t.has("fma") and not t.has("avx512f")
    assert "avx2" in t.features
    assert str(kiln.target.Target(str(t))) == str(t)
    host = kiln.target.Target.host()
    assert host.arch in ("x86_64", "aarch64")
    with pytest.raises(kiln.KilnError, match="bogus"):
        kiln.target.Target("llvm -mcpu=bogus")
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    a = np.arange(16, dtype="float32")
    b = np.zeros(16, "float32")
    kiln.build(s, [A, B], target=t, name="f")(a, b)  # AVX2 code: this CPU runs it
    np.testing.assert_array_equal(b, a * 3)


def test_numpy_scalars_and_dtypes():
    A = te.placeholder((4,), dtype=np.float32, name="A")
    assert A.dtype == "float32"
    C = te.compute((np.int64(4),), lambda i: A[np.int64(3) - i] * np.float32(2), name="C")
    a = np.arange(4, dtype="float32")
    c = np.zeros(4, "float32")
    build_and_run(te.create_schedule(C.op), [A, C], [a, c])
    np.testing.assert_array_equal(c, a[::-1] * 2)
    # a big-endian array is read by value
    A2 = te.placeholder((3,), dtype="int32", name="A2")
    C2 = te.compute((3,), lambda i: A2[i] + 1, name="C2")
    c2 = np.zeros(3, "int32")
    f = kiln.build(te.create_schedule(C2.op), [A2, C2], target="llvm", name="f2")
    big = np.arange(3, dtype=">i4")
    from kiln import ndarray as knd

    w = knd.Wrapped(big)
    assert knd.to_numpy(w.handle).tolist() == [0, 1, 2]
    f(np.ascontiguousarray(big.astype("int32")), c2)
    assert c2.tolist() == [1, 2, 3]
    ro = np.zeros(3, "int32")
    ro.flags.writeable = False
    with pytest.raises(kiln.KilnError, match="read-only"):
        f(np.arange(3, dtype="int32"), ro)


def test_threads_have_their_own_default_context():
    main = te.current_context()

    def work(k):
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
        b = np.zeros(8, "float32")
        kiln.build(te.create_schedule(B.op), [A, B], target="llvm", name="g")(
            np.ones(8, "float32"), b)
        assert (b == 2).all()
        assert te.current_context() is not main

    errors = run_threads(work, 3)
    assert not errors, errors
