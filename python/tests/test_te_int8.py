"""kiln.te.dot: the int8 kernels' dot product intrinsic, written by hand in a
tensor expression (an int8 GEMV with packed weights), built for the host and
for AVX2 and baseline x86-64, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import te


def gemv(k):
    """out[n] = sum_c a[c] * w[c, n] with w packed [N/16, K/k, 16, k]."""
    K, N = 64, 32
    A = te.placeholder((K,), name="A", dtype="uint8")
    W = te.placeholder((N // 16, K // k, 16, k), name="W", dtype="int8" if k == 4 else "int16")
    r = te.reduce_axis((0, K // k), name="r")
    O = te.compute((N,), lambda n: te.sum(te.dot(
        [A[r * k + j] for j in range(k)], [W[n // 16, r, n % 16, j] for j in range(k)]), axis=r),
        name="O")
    s = te.create_schedule(O.op)
    no, ni = s[O].split(O.op.axis[0], factor=16)
    s[O].reorder(no, r, ni)
    s[O].vectorize(ni)
    return s, [A, W, O], K, N


@pytest.mark.parametrize("k", [4, 2])
@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell", "llvm -mcpu=x86-64"])
def test_dot_gemv(k, target):
    s, args, K, N = gemv(k)
    f = kiln.build(s, args, target=target, name="gemv")
    rng = np.random.default_rng(k)
    a = rng.integers(0, 256, K, dtype=np.uint8)
    w = rng.integers(-128, 128, (N, K), dtype=np.int64)
    packed = w.T.reshape(K // k, k, N // 16, 16).transpose(2, 0, 3, 1)
    packed = np.ascontiguousarray(packed.astype(np.int8 if k == 4 else np.int16))
    out = np.zeros(N, np.int32)
    f(a, packed, out)
    np.testing.assert_array_equal(out, (a.astype(np.int64) @ w.T).astype(np.int32))
    # the vectorized dot products are the helper's calls, not a lane loop
    assert f"kiln_dot{k}_u8" in f.get_source()


def test_dot_errors():
    A = te.placeholder((8,), name="A", dtype="uint8")
    F = te.placeholder((8,), name="F")
    with pytest.raises(kiln.KilnError, match="3 pairs"):
        te.dot([A[0], A[1], A[2]], [A[3], A[4], A[5]])
    with pytest.raises(kiln.KilnError, match="not an integer of 8 or 16 bits"):
        te.dot([F[0], F[1]], [A[0], A[1]])
    with pytest.raises(kiln.KilnError, match="two lists"):
        te.dot([A[0], A[1]], [A[0]])
