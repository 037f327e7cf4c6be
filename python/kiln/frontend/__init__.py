"""Frontends written in Python: :func:`from_pytorch` (PyTorch modules).

ONNX import is in C (:func:`kiln.graph.from_onnx`). torch is imported only
when :func:`from_pytorch` is called, so ``import kiln`` never needs it.
"""

from __future__ import annotations

from .pytorch import UnsupportedOpError, from_pytorch

__all__ = ["from_pytorch", "UnsupportedOpError"]
