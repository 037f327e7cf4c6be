#!/usr/bin/env bash
# tflite_models.sh: TFLite models compiled by kiln against the TFLite
# interpreter. Makes the venv with tensorflow-cpu (scripts/tflite-env.sh),
# writes the models and the interpreter's outputs with
# models/tflite/make_tflite_models.py, then runs test_tflite_models on them
# (float: max |err| <= 1e-4 * max |ref|; int8: within one quantization step
# on >= 99 % of the outputs; dynamic-range: 5e-2, see the test's header).
#
#   scripts/tflite_models.sh [--full] [--build DIR] [--out DIR] [--venv DIR] [NAME ...]
#
#   --full        the full-size models (MobileNetV2 224x224 alpha 1.0,
#                 EfficientNet-lite0 224x224, a 4-layer encoder of 256):
#                 slow, run by hand for the figures in docs/TFLITE.md;
#                 default: the narrow variants CI runs (scripts/test.sh)
#   --build DIR   the kiln build with tests/test_tflite_models (default build)
#   --out DIR     where the models go (default DIR/tflite-models, or
#                 /tmp/kiln-tflite-full with --full); nothing is committed
#   --venv DIR    the tensorflow venv (default build-tflite-venv)
# Exits non-zero when tensorflow cannot be installed, a model cannot be
# made, or a model fails: the test never skips.
set -euo pipefail
cd "$(dirname "$0")/.."
full=()
build=build
out=
venv=build-tflite-venv
names=()
while [ $# -gt 0 ]; do
  case $1 in
    --full) full=(--full); shift ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    -*) echo "tflite_models.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ -n "$out" ] || { [ ${#full[@]} -gt 0 ] && out=/tmp/kiln-tflite-full || out=$build/tflite-models; }
test_bin=$build/tests/test_tflite_models
[ -x "$test_bin" ] || { echo "tflite_models.sh: $test_bin not found; build first" >&2; exit 2; }
py=$(bash scripts/tflite-env.sh "$venv") || { echo "tflite_models.sh: no tensorflow venv" >&2; exit 1; }
# the models' tensor names change with tensorflow's graph counters: no
# model of an earlier run may stay beside the new ones
mkdir -p "$out"
rm -f "$out"/*.tflite "$out"/*_io.npz "$out/make.log"
TF_CPP_MIN_LOG_LEVEL=2 "$py" models/tflite/make_tflite_models.py --out "$out" \
  ${full[@]+"${full[@]}"} ${names[@]+"${names[@]}"} >"$out/make.log" 2>&1 ||
  { tail -40 "$out/make.log" >&2; echo "tflite_models.sh: making the models failed" >&2; exit 1; }
grep -E '^[a-z0-9_]+: [0-9]+ bytes' "$out/make.log" || true
"$test_bin" "$out" ${names[@]+"${names[@]}"}
