"""numpy arrays to kiln arrays and back.

A numpy array passed to kiln is wrapped, not copied (``kiln_ndarray_wrap``
over its buffer, with its strides), so kernels read and write numpy's
memory; the wrapper keeps the numpy array alive for as long as kiln uses it.
"""

from __future__ import annotations

import ctypes
from typing import Any, Tuple

from ._lib import C, check, check_ptr

# kiln_dtype values (kiln/base.h), by name; the numbering is stored in packages.
DTYPES = [
    "float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool",
    "float64", "handle", "uint16", "uint32", "uint64", "int16",
]
DTYPE_CODE = {name: i for i, name in enumerate(DTYPES)}


def dtype_code(dtype: Any) -> int:
    """kiln's code for a dtype given by name ("float32"), numpy dtype or code."""
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str):
        name = dtype
    else:  # a numpy dtype, or a type such as np.float32
        try:
            name = _np().dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name not in DTYPE_CODE or name == "handle":
        raise ValueError(f"kiln: unknown dtype '{name}' (known: {', '.join(DTYPES[:9])}, ...)")
    return DTYPE_CODE[name]


def dtype_name(code: int) -> str:
    return DTYPES[code] if 0 <= code < len(DTYPES) else "unknown"


def _np():
    import numpy

    return numpy


class Wrapped:
    """A kiln array over a numpy array's memory. Free it (or let it go)
    only after every kiln call that uses it has returned."""

    __slots__ = ("handle", "array")

    def __init__(self, arr: Any) -> None:
        np = _np()
        if not isinstance(arr, np.ndarray):
            arr = np.asarray(arr)
        if arr.dtype.name not in DTYPE_CODE:
            raise TypeError(f"kiln: arrays of dtype {arr.dtype} are not supported")
        if not arr.dtype.isnative:  # kiln reads this machine's byte order
            arr = arr.astype(arr.dtype.newbyteorder("="))
        item = arr.itemsize
        if any(s % item or s < 0 for s in arr.strides):
            arr = np.ascontiguousarray(arr)
        self.array = arr
        nd = arr.ndim
        shape = (ctypes.c_int64 * max(nd, 1))(*arr.shape)
        strides = (ctypes.c_int64 * max(nd, 1))(*[s // item for s in arr.strides])
        data = arr.ctypes.data  # valid for an empty array too
        self.handle = check_ptr(
            C.kiln_ndarray_wrap(data, DTYPE_CODE[arr.dtype.name], nd, shape, strides, 0)
        )

    def free(self) -> None:
        if self.handle:
            C.kiln_ndarray_free(self.handle)
            self.handle = None

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass


def shape_of(handle: int) -> Tuple[int, ...]:
    return tuple(C.kiln_ndarray_dim(handle, i) for i in range(C.kiln_ndarray_ndim(handle)))


def to_numpy(handle: int, copy: bool = True, owner: Any = None) -> Any:
    """The kiln array as numpy: a copy (default), or a view of kiln's memory
    that keeps ``owner`` (what owns that memory) alive, and is valid only as
    long as the kiln array is."""
    np = _np()
    code = C.kiln_ndarray_dtype(handle)
    name = dtype_name(code)
    if name in ("bfloat16", "handle", "unknown"):
        raise TypeError(f"kiln: arrays of dtype {name} have no numpy equivalent")
    dt = np.dtype(name)
    shape = shape_of(handle)
    strides = tuple(C.kiln_ndarray_stride(handle, i) * dt.itemsize for i in range(len(shape)))
    n = int(np.prod(shape)) if shape else 1
    if n == 0:
        return np.zeros(shape, dt)
    ptr = C.kiln_ndarray_data(handle)
    # the span the strides reach, from element 0
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + dt.itemsize
    buf = (ctypes.c_char * (hi - lo)).from_address(ptr + lo)
    buf._kiln_owner = owner  # type: ignore[attr-defined] - numpy keeps buf alive
    view = np.ndarray(shape, dt, buffer=buf, offset=-lo, strides=strides)
    return view.copy() if copy else view


def empty(shape: Tuple[int, ...], dtype: Any = "float32") -> int:
    """A new zero-filled kiln array (a handle the caller frees)."""
    nd = len(shape)
    dims = (ctypes.c_int64 * max(nd, 1))(*shape)
    return check_ptr(C.kiln_ndarray_empty(dtype_code(dtype), nd, dims))


def copy_into(dst: int, src: int) -> None:
    check(C.kiln_ndarray_copy(dst, src))
