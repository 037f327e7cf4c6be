"""Seed note 004's tutorial in kiln: a vector add declared with a tensor
expression, split by 64, lowered (the loop IR before and after the split,
with its `if (i < n)` guard), built for this CPU and run on numpy arrays.

    PYTHONPATH=python python examples/python/tutorial_vector_add.py
"""

import numpy as np

import kiln
from kiln import te

n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

s = te.create_schedule(C.op)
print("before the split:")
print(kiln.lower(s, [A, B, C], name="myadd"))

xo, xi = s[C].split(C.op.axis[0], factor=64)
print("after s[C].split(C.op.axis[0], factor=64):")
print(kiln.lower(s, [A, B, C], name="myadd"))

# TVM's tutorial binds xo and xi to blockIdx.x / threadIdx.x and builds for
# "cuda"; kiln generates C for CPUs, so the outer loop runs in parallel.
s[C].parallel(xo)
fadd = kiln.build(s, [A, B, C], target="llvm", name="myadd")

for size in (1, 1000, 1024 + 7):
    a = np.random.uniform(size=size).astype(A.dtype)
    b = np.random.uniform(size=size).astype(B.dtype)
    c = np.zeros(size, dtype=C.dtype)
    fadd(a, b, c)  # the arrays are passed without copies
    np.testing.assert_allclose(c, a + b)
print("myadd matches numpy for n = 1, 1000 and 1031")
