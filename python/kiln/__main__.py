"""``python -m kiln compile|run|tune|inspect ...``: the kiln command line,
run in this process through libkiln_cli, so passes and backends that
Python plugins register (``--plugin my_passes.py``) are there for it."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
