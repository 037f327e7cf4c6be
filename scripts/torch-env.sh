#!/usr/bin/env bash
# Make (or reuse) the virtual environment the PyTorch frontend's tests run
# in (python/tests/test_frontend_pytorch.py): Debian's torch and torchvision
# (python3-torch, python3-torchvision: scripts/install-deps.sh installs
# them) through --system-site-packages, with Debian's numpy they are built
# against, and pytest from PyPI. PyPI's torch wheels are not used (gigabytes
# of CUDA libraries). Prints the venv's python; fails when torch or
# torchvision cannot be imported. Usage: scripts/torch-env.sh [DIR]
# (default build-torch-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-torch-venv}
py=${KILN_TORCH_PYTHON_BASE:-/usr/bin/python3}
if [ ! -x "$dir/bin/python" ]; then
  "$py" -m venv --system-site-packages "$dir" >&2
fi
if ! "$dir/bin/python" -c "import torch, torchvision" 2>/dev/null; then
  echo "kiln: $py has no torch/torchvision (install python3-torch python3-torchvision:" \
       "scripts/install-deps.sh)" >&2
  exit 1
fi
if ! "$dir/bin/python" -c "import pytest" 2>/dev/null; then
  echo "kiln: installing pytest into $dir" >&2
  "$dir/bin/python" -m pip install -q --disable-pip-version-check pytest >&2
fi
echo "$dir/bin/python"
