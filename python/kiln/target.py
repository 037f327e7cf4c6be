"""Targets (kiln/target.h): what code is generated for, as tvmc writes it.

    t = kiln.target.Target("llvm -mcpu=haswell")
    t.arch, t.cpu, t.vector_bits, t.has("avx2"), t.features
    kiln.build(s, args, target=t)          # any API that takes a target string
"""

from __future__ import annotations

from typing import List, Optional

from ._lib import C, check_ptr, take_str


class Target:
    """A parsed target; str() is its canonical string, which parses back."""

    def __init__(self, text: Optional[str] = None) -> None:
        self.handle = check_ptr(C.kiln_target_parse(text.encode()) if text is not None
                                else C.kiln_target_host())

    @staticmethod
    def host() -> "Target":
        """This machine (the probe of its CPU)."""
        return Target(None)

    def __str__(self) -> str:
        return C.kiln_target_str(self.handle).decode()

    def __repr__(self) -> str:
        return f"<kiln.target.Target {self}>"

    @property
    def arch(self) -> str:
        return C.kiln_target_arch(self.handle).decode()

    @property
    def cpu(self) -> str:
        return C.kiln_target_cpu(self.handle).decode()

    @property
    def vector_bits(self) -> int:
        return C.kiln_target_vector_bits(self.handle)

    def has(self, feature: str) -> bool:
        return bool(C.kiln_target_has(self.handle, feature.encode()))

    @property
    def features(self) -> List[str]:
        return [f for f in take_str(C.kiln_target_features(self.handle)).split(",") if f]

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_target_free(h)
            except Exception:
                pass
