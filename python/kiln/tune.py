"""Auto-tuning from Python (``kiln tune``; docs/tuning.md).

    kiln.tune.tune(g, "records.json", trials=64)
    kiln.graph.compile(g, "tuned.tar", tuning_records="records.json")
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ._lib import TUNE_LOG_FN, C, check, check_ptr
from .graph import Graph
from .options import BuildOptions


def tune(graph: Graph, output: str, target: Any = None, trials: Optional[int] = None,
         early_stopping: Optional[int] = None, tuner: Optional[str] = None,
         tuning_records: Optional[str] = None, timeout: Optional[float] = None,
         tasks: Optional[str] = None, jobs: Optional[int] = None, repeat: Optional[int] = None,
         seed: Optional[int] = None, log_plot: Optional[str] = None,
         log: Optional[Callable[[int, str], None]] = None,
         build_options: Optional[BuildOptions] = None) -> str:
    """Tune the kernels of ``graph`` for ``target`` and append the records
    to ``output`` (resuming from what it holds); returns ``output``.
    ``log(level, line)`` gets the progress (level 0: a line the next one
    replaces, 1: a line to keep); default: stderr."""
    b = build_options or BuildOptions(target=target)
    t = check_ptr(C.kiln_tune_options_new())
    keep = []
    try:
        opts = {"output": output, "tuning-records": tuning_records, "trials": trials,
                "early-stopping": early_stopping, "tuner": tuner, "timeout": timeout,
                "tasks": tasks, "jobs": jobs, "repeat": repeat, "seed": seed,
                "log-plot": log_plot}
        for k, v in opts.items():
            if v is not None:
                check(C.kiln_tune_options_set(t, k.encode(), str(v).encode()))
        if log is not None:
            def cb(user: int, level: int, line: bytes) -> None:
                try:
                    log(level, line.decode(errors="replace"))
                except Exception:  # noqa: BLE001 - a logger must not stop tuning
                    pass

            fn = TUNE_LOG_FN(cb)
            keep.append(fn)
            check(C.kiln_tune_options_set_log(t, fn, None))
        check(C.kiln_graph_tune(graph.handle, b.handle, t))
    finally:
        C.kiln_tune_options_free(t)
    return output
