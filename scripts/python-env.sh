#!/usr/bin/env bash
# Make (or reuse) the virtual environment the Python package's tests run in:
# numpy, pytest, onnx and onnxruntime (the examples compare against it), and
# build/setuptools/wheel (the wheel test), from PyPI. Prints the venv's
# python. Usage: scripts/python-env.sh [DIR] (default build-python-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-python-venv}
py=${KILN_PYTHON_BASE:-python3}
want="numpy pytest onnx onnxruntime build setuptools wheel"
if [ ! -x "$dir/bin/python" ]; then
  "$py" -m venv "$dir" >&2
fi
if ! "$dir/bin/python" -c "import numpy, pytest, onnx, onnxruntime, build, setuptools, wheel" \
     2>/dev/null; then
  echo "kiln: installing $want into $dir" >&2
  "$dir/bin/python" -m pip install -q --disable-pip-version-check $want >&2
fi
echo "$dir/bin/python"
