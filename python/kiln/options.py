"""Build options (``kiln_build_options``) from Python keywords."""

from __future__ import annotations

from typing import Any, Optional

from ._lib import C, check, check_ptr


class BuildOptions:
    """Owns a ``kiln_build_options``. Keys are those of
    ``kiln_build_options_set`` (kiln/schedule.h) with ``_`` for ``-``:
    target, cc, cflags, vector_bits, opt_level, disabled_pass (a name or a
    list), dump_ir, fuse, schedule, winograd, cache, tuning_records, and
    pass_ (user passes run first: a name or a list)."""

    def __init__(self, target: Any = None, **opts: Any) -> None:
        self.handle = check_ptr(C.kiln_build_options_new())
        if target is not None:
            self.set("target", str(target))
        for k, v in opts.items():
            if v is None:
                continue
            key = k.rstrip("_").replace("_", "-")
            if isinstance(v, (list, tuple)):
                for item in v:
                    self.set(key, str(item))
            elif isinstance(v, bool):
                self.set(key, "1" if v else "0")
            else:
                self.set(key, str(v))

    def set(self, key: str, value: str) -> None:
        check(C.kiln_build_options_set(self.handle, key.encode(), value.encode()))

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                C.kiln_build_options_free(h)
            except Exception:
                pass


def make(opts: Optional[BuildOptions] = None, **kw: Any) -> BuildOptions:
    return opts if opts is not None else BuildOptions(**kw)
