#!/usr/bin/env bash
# The README's first command: install what is missing, build kiln, and run
# the main job: compile the bundled digits CNN (models/digits, trained on
# scikit-learn's 8x8 digits) with `kiln compile`, then classify its held-out
# set with the runtime alone and print the accuracy and latency.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
./build/kiln compile models/digits/digits_cnn.onnx --input-shapes "input:[1,1,8,8]" \
    -o build/digits.tar
./build/examples/example_digits build/digits.tar models/digits/heldout.npz
