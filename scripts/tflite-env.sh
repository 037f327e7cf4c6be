#!/usr/bin/env bash
# Make (or reuse) the virtual environment that makes the TFLite test models:
# tensorflow-cpu (the TFLite converter and interpreter) and numpy, from PyPI.
# Prints the venv's python; exits non-zero when the install fails, so the
# TFLite model test fails rather than skips. Usage: scripts/tflite-env.sh [DIR]
# (default build-tflite-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tflite-venv}
py=${KILN_PYTHON_BASE:-python3}
# tensorflow's minor version pinned: the converter's output (its ops, the
# int8 kernels' rounding) is what the tests compare against
want="tensorflow-cpu==2.21.* numpy"
if [ ! -x "$dir/bin/python" ]; then
  "$py" -m venv "$dir" >&2
fi
if ! "$dir/bin/python" -c "import importlib.metadata as m, numpy
assert m.version('tensorflow-cpu').startswith('2.21.')" 2>/dev/null; then
  echo "kiln: installing $want into $dir" >&2
  "$dir/bin/python" -m pip install -q --disable-pip-version-check $want >&2
fi
echo "$dir/bin/python"
