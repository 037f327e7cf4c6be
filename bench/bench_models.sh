#!/usr/bin/env bash
# bench_models.sh: kiln against ONNX Runtime (and PyTorch and TVM where they
# are available) on the model bench set: ResNet-50 (batch 1 and 8),
# MobileNetV2, MobileNetV3-Large, EfficientNet-B0, ShuffleNetV2, RegNetY-800MF,
# ResNeXt-50 32x4d, DenseNet-121, GoogLeNet, ConvNeXt-tiny, ViT-B/16, a
# BERT-base encoder (seq 128; also exported with a symbolic batch and sequence,
# bert_base_seq, run at (1, 128)) and PyTorch's nn.TransformerEncoder (4
# layers, d_model 256, seq 128); float32, 2 and 1 thread(s). It prints the CPU,
# its ISA and the measured FP32 peak; per model kiln's latency, GFLOP/s and %
# of peak, ORT's latency in the same run and the ratio (and their geometric
# mean); per model the compile time, kiln's output against ORT's (max error /
# scale) and the peak RSS of kiln and of ORT, each in a fresh process that
# loads the model and runs it once. Where a model can leave a dim symbolic, a
# second package does, and the table gives its time against the static one's.
# Writes the report to bench/last_results.md and, for a full run of the whole
# set, to bench/results/CPU-TAG-DATE.md (e.g. zen5-avx512-2026-11-27.md), to
# be committed. A benchmark, not a test: CI never runs it.
#
#   bench/bench_models.sh [--out DIR] [--quick] [--check] [--no-tvm] [--skip-compile]
#                         [--target TARGET] [-- ARGS for bench_models.py]
#
#   --out DIR        the full-size models and packages (default build/bench-models; exported
#                    with models/e2e/export_models.py --full if missing, ~5 min, 2 GB)
#   --quick          2 threads only, 3 rounds of 3 runs: about a third of the time, noisier
#   --check          no timing: export, compile, one run of each model against ORT and
#                    the peak memory (a few minutes; for the whole set also kept as
#                    bench/results/CPU-TAG-DATE-check.md); exits 1 if a model fails
#   --no-tvm         do not try `pip install apache-tvm` (TVM runs on resnet50 and
#                    mobilenetv2 only unless ARGS say --tvm-models ...)
#   --skip-compile   reuse DIR/MODEL.tar (the compile-time column is then empty)
#   --target TARGET  compile for another ISA than this CPU's widest, e.g. "llvm -mcpu=znver3"
#                    or "llvm -mcpu=haswell" (AVX2) on an AVX-512 machine, into
#                    DIR/target-MCPU/: checks that code's outputs against ORT, and gives
#                    its % of this machine's peak at that vector width. Its kiln/ORT ratios
#                    are not that ISA's (ORT runs its own code for this CPU): only a run on
#                    a CPU with that ISA gives those. Results: CPU-TAG-as-MCPU-DATE.md
#   ARGS             e.g. --models resnet50 vit_b_16 --rounds 5 --runs 5 (bench_models.py --help)
#
# Sets up build/bench-venv (python3 -m venv --system-site-packages) with Debian's
# torch, torchvision and onnx plus onnxruntime from pip; apache-tvm from pip
# only if it installs within 3 minutes. Builds build/kiln, build/bench/kiln_time
# and build/bench/peak_main. On 2 cores the whole set takes about 20 minutes
# (compiles included; plus ~5 for a first export), --quick about 8.
set -eu
cd "$(dirname "$0")/.."

OUT=build/bench-models
TVM=1
COMPILE=1
CHECK=0
TARGET=
PYARGS=()
MODELS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --no-tvm) TVM=0; shift ;;
    --skip-compile) COMPILE=0; shift ;;
    --target) TARGET=$2; shift 2 ;;
    --quick) PYARGS+=(--quick); shift ;;
    --check) CHECK=1; PYARGS+=(--check-only); shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_models.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# --models in the extra arguments also picks what to export and compile
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = --models ]; then
    MODELS=()
    for ((j = i + 1; j < ${#args[@]}; j++)); do
      case "${args[$j]}" in -*) break ;; *) MODELS+=("${args[$j]}") ;; esac
    done
  fi
done

SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
need=()
/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
/usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
/usr/bin/python3 -c 'import torchvision' 2>/dev/null || need+=(python3-torchvision)
/usr/bin/python3 -c 'import onnx' 2>/dev/null || need+=(python3-onnx)
[ -x /usr/bin/time ] || need+=(time)   # peak RSS of each engine's fresh run
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  $SUDO apt-get update -q && $SUDO apt-get install -y -q "${need[@]}"
fi

VENV=build/bench-venv
PY=$VENV/bin/python
if [ ! -x "$PY" ]; then
  echo "== creating $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$PY" -c 'import onnxruntime' 2>/dev/null || { echo "== pip install onnxruntime"; "$PY" -m pip install -q onnxruntime; }
NUMPY=$("$PY" -c 'import numpy; print(numpy.__version__)')
# the bench set, unless --models in ARGS picked some
[ ${#MODELS[@]} -gt 0 ] || read -r -a MODELS <<< "$("$PY" bench/bench_models.py --list-models)"
if [ "$TVM" = 1 ] && [ "$CHECK" = 0 ] && ! "$PY" -c 'import tvm' 2>/dev/null; then
  # apache-tvm pulls numpy 2, which Debian's torch cannot load: keep the system
  # numpy, and give TVM's ONNX frontend the onnx (>= 1.14) it needs.
  echo "== pip install apache-tvm (skipped if it takes over 3 minutes)"
  if timeout 180 "$PY" -m pip install -q apache-tvm "numpy==$NUMPY" "ml_dtypes<0.5" \
       "onnx>=1.14,<1.18" && timeout 180 "$PY" -m pip install -q --ignore-installed --no-deps \
       typing_extensions && "$PY" -c 'import tvm, torch; from tvm.relax.frontend.onnx import from_onnx'; then
    echo "   apache-tvm installed"
  else
    echo "   apache-tvm not available; the TVM column is skipped"
  fi
fi

echo "== building kiln, kiln_time and peak_main"
[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake build >/dev/null
cmake --build build --target kiln_cli kiln_time peak_main -j"$(nproc)" >/dev/null

missing=()
for m in "${MODELS[@]}"; do
  [ -f "$OUT/$m.onnx" ] && [ -f "$OUT/${m}_io.npz" ] && continue
  if [ "$m" = bert_base_seq ]; then
    echo "== exporting $m into $OUT"
    mkdir -p "$OUT"
    "$PY" models/e2e/export_dynamic_bert.py --full --out "$OUT"
  else
    missing+=(--only "$m")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== exporting the full-size models into $OUT (${missing[*]})"
  "$PY" models/e2e/export_models.py --full --out "$OUT" "${missing[@]}"
else
  echo "== reusing the full-size models in $OUT"
fi

PKG=$OUT
tgt=()
if [ -n "$TARGET" ]; then
  slug=$(printf '%s' "$TARGET" | sed -n 's/.*-mcpu=\([A-Za-z0-9_.+-]*\).*/\1/p')
  [ -n "$slug" ] || slug=$(printf '%s' "$TARGET" | tr -c 'A-Za-z0-9' '-')
  PKG=$OUT/target-$slug
  mkdir -p "$PKG"
  tgt=(--target "$TARGET")
fi
CT=build/bench-compile-times.json
# kiln's kernel cache in the build tree, never the user's; the timed compile
# below skips it (--no-cache), so the column is a first compile's time
kiln_compile() { XDG_CACHE_HOME="$PWD/build/bench-cache" build/kiln compile "$@"; }
if [ "$COMPILE" = 1 ]; then
  echo "{" > "$CT.tmp"
  sep=
  failed=()
  for m in "${MODELS[@]}"; do
    static=()
    [ "$m" = bert_base_seq ] && static=(--input-shapes "input_ids:[1,128],attention_mask:[1,128]")
    rm -f "$PKG/$m.tar" "$PKG/${m}_dyn.tar"   # a failed compile must not leave an old package
    t0=$(date +%s.%N)
    if kiln_compile "$OUT/$m.onnx" "${static[@]}" "${tgt[@]}" -o "$PKG/$m.tar" --no-cache; then
      t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
      echo "   kiln compile $m: $t s"
    else
      t=null
      failed+=("$m")
      echo "   kiln compile $m FAILED (the model is skipped)"
    fi
    # the CNNs again with their batch left symbolic: the dynamic package's
    # cost against the static one's, at the same batch (bench_models.py)
    [ "$CHECK" = 0 ] && [ "$t" != null ] && [ -z "$TARGET" ] && case $m in
      resnet50|mobilenetv2|shufflenetv2)
        kiln_compile "$OUT/$m.onnx" --input-shapes "input:[N,3,224,224]" -o "$OUT/${m}_dyn.tar" ||
          echo "   kiln compile $m with a symbolic batch failed" ;;
      bert_base_seq) # its own dim_params: batch and seq
        kiln_compile "$OUT/$m.onnx" -o "$OUT/${m}_dyn.tar" ||
          echo "   kiln compile $m with a symbolic batch and sequence failed" ;;
    esac
    printf '%s "%s": %s\n' "$sep" "$m" "$t" >> "$CT.tmp"
    sep=,
  done
  echo "}" >> "$CT.tmp"
  mv "$CT.tmp" "$CT"
  [ ${#failed[@]} -eq 0 ] || echo "== kiln compile failed on: ${failed[*]}"
fi

echo "== bench/bench_models.py"
extra=()
[ "$COMPILE" = 1 ] && extra+=(--compile-times "$CT")
[ "$TVM" = 1 ] || extra+=(--no-tvm)
[ -z "$TARGET" ] || extra+=(--target "$TARGET" --packages-dir "$PKG")
exec "$PY" bench/bench_models.py --models-dir "$OUT" --models "${MODELS[@]}" "${extra[@]}" "${PYARGS[@]}" "$@"
