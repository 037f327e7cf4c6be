#!/usr/bin/env bash
# The README's first command: install what is missing, build kiln, and run
# the main job (the vector-add tutorial: lowered loop IR, run, time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
./build/examples/example_vector_add
