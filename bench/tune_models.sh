#!/usr/bin/env bash
# tune_models.sh: what `kiln tune` gains (docs/tuning.md, issue 14). Per
# model: the default tuning run (kiln tune MODEL -o records; its wall time),
# then the untuned and the tuned package, timed interleaved in the same run
# (ROUNDS rounds of `kiln run --print-time --repeat 30` on each, 2 threads),
# and the ratio of the medians. Prints the CPU and a markdown table; writes
# it to bench/results/tune-CPU-TAG-DATE.md for a run of the default set. A
# benchmark, not a test: CI runs `kiln tune` on tiny models only.
#
#   bench/tune_models.sh [--dir DIR] [--rounds N] [--trials N] [MODEL ...]
#
#   --dir DIR     the bench models (default build/bench-models, made by
#                 bench/bench_models.sh --check); MODEL is a name there
#                 (resnet50 mobilenetv2 bert_base_opset17 by default)
#   --rounds N    interleaved rounds per package (default 5)
#   --trials N    kiln tune --trials (default: kiln tune's own, 64)
#   KILN          the kiln binary (default build/kiln)
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${KILN:-build/kiln}
DIR=build/bench-models
ROUNDS=5
TRIALS=()
MODELS=()
while [ $# -gt 0 ]; do
  case $1 in
    --dir) DIR=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --trials) TRIALS=(--trials "$2"); shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "tune_models.sh: unknown option $1" >&2; exit 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
default_set=0
if [ ${#MODELS[@]} -eq 0 ]; then
  MODELS=(resnet50 mobilenetv2 bert_base_opset17)
  default_set=1
fi
[ -x "$KILN" ] || { echo "tune_models.sh: $KILN not built" >&2; exit 2; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
isa=$(grep -qw avx512f /proc/cpuinfo && echo "AVX-512" || echo "AVX2")
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
cpumodel=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
# family 25 is Zen 3 (AVX2) and Zen 4 (AVX-512); 26 is Zen 5
tag=$(case $family/$isa in 25/AVX2) echo zen3 ;; 25/*) echo zen4 ;; 26/*) echo zen5 ;; *) echo "fam$family" ;; esac)-$(echo "$isa" | tr -d '-' | tr 'A-Z' 'a-z')
work=$DIR/tune
mkdir -p "$work"
report=$(mktemp)
{
  echo "# kiln tune: tuned against untuned, $(date -u +%Y-%m-%d)"
  echo
  echo "CPU: $cpu (family $family model $cpumodel), $isa, $(nproc) cores; 2 threads;"
  echo "kiln $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $ROUNDS interleaved rounds of 30 runs."
  echo
  echo "| model | tuning time | tasks | untuned ms | tuned ms | untuned / tuned |"
  echo "|---|---|---|---|---|---|"
} >"$report"
for m in "${MODELS[@]}"; do
  onnx=$DIR/$m.onnx
  [ -f "$onnx" ] || { echo "tune_models.sh: no $onnx (run bench/bench_models.sh --check)" >&2; exit 2; }
  rec=$work/$m.json
  rm -f "$rec"
  echo "== $m: kiln tune" >&2
  t0=$(date +%s)
  "$KILN" tune "$onnx" -o "$rec" --log-plot "$work/$m.svg" "${TRIALS[@]}" 2>"$work/$m.tune.log" </dev/null
  t1=$(date +%s)
  tasks=$(sed -n 's/.*; \([0-9]*\) tasks in .*/\1/p' "$work/$m.tune.log" | tail -1)
  "$KILN" compile "$onnx" -o "$work/$m.untuned.tar" >/dev/null
  "$KILN" compile "$onnx" -o "$work/$m.tuned.tar" --tuning-records "$rec" >/dev/null 2>&1
  echo "== $m: untuned / tuned, interleaved" >&2
  u=() t=()
  for _ in $(seq "$ROUNDS"); do
    u+=("$(KILN_NUM_THREADS=2 "$KILN" run "$work/$m.untuned.tar" --fill random --print-time --repeat 30 | tail -1 | awk '{print $2}')")
    t+=("$(KILN_NUM_THREADS=2 "$KILN" run "$work/$m.tuned.tar" --fill random --print-time --repeat 30 | tail -1 | awk '{print $2}')")
  done
  um=$(printf '%s\n' "${u[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  tm=$(printf '%s\n' "${t[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  ratio=$(awk -v a="$um" -v b="$tm" 'BEGIN {printf "%.3f", a / b}')
  mins=$(awk -v s=$((t1 - t0)) 'BEGIN {printf "%d min %02d s", s / 60, s % 60}')
  echo "| $m | $mins | ${tasks:-?} | $um | $tm | $ratio |" >>"$report"
  echo "   untuned per round: ${u[*]}; tuned: ${t[*]}" >&2
done
cat "$report"
if [ $default_set = 1 ]; then
  out=bench/results/tune-$tag-$(date -u +%Y-%m-%d).md
  cp "$report" "$out"
  echo "wrote $out" >&2
fi
rm -f "$report"
