"""The command line as a function: ``kiln.cli.main(["compile", ...])``."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import List, Optional

from ._lib import KilnLibraryError, library_path


def _cli() -> ctypes.CDLL:
    folder = os.path.dirname(library_path)
    for name in ("libkiln_cli.so", "libkiln_cli.so.0"):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            lib = ctypes.CDLL(p)
            lib.kiln_cli_main.restype = ctypes.c_int
            lib.kiln_cli_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            return lib
    raise KilnLibraryError(f"kiln: no libkiln_cli.so beside {library_path}: rebuild kiln")


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI on ``argv`` (without the program name); the exit code."""
    args = ["kiln"] + list(sys.argv[1:] if argv is None else argv)
    arr = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    sys.stdout.flush()
    sys.stderr.flush()
    rc = _cli().kiln_cli_main(len(args), arr)
    libc = ctypes.CDLL(None)
    libc.fflush(None)  # the C side's buffered output, before Python's
    return rc
