#!/usr/bin/env bash
# scripts/fuzz.sh [TARGET|all] [MINUTES] [--merge] [--jobs N]
#
# Run kiln's libFuzzer targets (tests/fuzz/README.md) for MINUTES each
# (default 10; 0 only builds them): onnx, graph_text, npz, package, flags, pattern, tflite, or all of them in
# turn. Builds them first in build-fuzz/ with clang and
# -fsanitize=fuzzer,address,undefined. Each run starts from the checked-in
# corpus (tests/fuzz/corpus/TARGET, read only) and the structured ONNX
# generator's seeds (for onnx), and writes what it finds to
# build-fuzz/found/TARGET. A crash, a leak, a timeout or an out-of-memory
# input is saved as build-fuzz/crashes/TARGET-*, and the script exits 1.
#
# --merge   afterwards, merge the new inputs that add coverage into the
#           checked-in corpus (libFuzzer -merge=1), to commit.
# --jobs N  N fuzzing processes per target (libFuzzer -fork=N); the
#           CPU-minutes are then about N x MINUTES.
#
# Each run appends a line to build-fuzz/fuzz-log.tsv: date, commit, target,
# wall seconds, CPU seconds (user + system, all processes), executions,
# crashes. `scripts/fuzz.sh --summary` sums the CPU-hours per target.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${KILN_FUZZ_BUILD:-build-fuzz}
all_targets=(onnx graph_text npz package flags pattern tflite)
log=$build/fuzz-log.tsv

if [ "${1:-}" = --summary ]; then
  [ -f "$log" ] || { echo "no runs logged in $log"; exit 0; }
  awk -F'\t' '{cpu[$3]+=$5; ex[$3]+=$6; cr[$3]+=$7}
    END {printf "%-12s %10s %14s %8s\n", "target", "CPU-hours", "executions", "crashes";
         for (t in cpu) printf "%-12s %10.2f %14d %8d\n", t, cpu[t]/3600, ex[t], cr[t]}' "$log"
  exit 0
fi

target=${1:-all}
minutes=${2:-10}
merge=0
jobs=1
shift $(($# < 2 ? $# : 2))
while [ $# -gt 0 ]; do
  case $1 in
    --merge) merge=1 ;;
    --jobs) jobs=$2; shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
case $minutes in
  ''|*[!0-9]*) echo "fuzz.sh: MINUTES must be a whole number, got '$minutes'" >&2; exit 2 ;;
esac
case $jobs in
  ''|*[!0-9]*|0) echo "fuzz.sh: --jobs must be a positive number, got '$jobs'" >&2; exit 2 ;;
esac
if [ "$target" = all ]; then
  targets=("${all_targets[@]}")
else
  case " ${all_targets[*]} " in
    *" $target "*) targets=("$target") ;;
    *) echo "fuzz.sh: unknown target '$target' (one of: ${all_targets[*]}, all)" >&2; exit 2 ;;
  esac
fi

# clang with libFuzzer, and Debian's onnx for the seed generator
need=()
command -v clang >/dev/null 2>&1 || command -v clang-14 >/dev/null 2>&1 || need+=(clang)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
  need+=(libclang-rt-14-dev)
/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null || need+=(python3-onnx python3-numpy)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "fuzz.sh: installing ${need[*]}"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}" >/dev/null
fi
cc=$(command -v clang || command -v clang-14)
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=$cc cmake -S . -B "$build" -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
else
  cmake -S . -B "$build" >/dev/null # a target added since the folder was made
fi
cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

# Structured seeds for the ONNX target: valid-looking models with hostile
# contents (tests/fuzz/gen_onnx_seeds.py; needs the onnx Python package).
gen_seeds() {
  local out=$build/seeds/onnx py
  [ -d "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && return 0
  for py in /usr/bin/python3 python3; do # Debian's onnx, or the user's
    if "$py" -c 'import onnx' 2>/dev/null; then
      mkdir -p "$out"
      "$py" tests/fuzz/gen_onnx_seeds.py "$out" >/dev/null && return 0
    fi
  done
  echo "fuzz.sh: no onnx Python package; fuzzing onnx from the checked-in corpus only" >&2
}

[ "$minutes" -eq 0 ] && { echo "fuzz.sh: built $build/tests/fuzz_{${targets[*]}}"; exit 0; }

status=0
for t in "${targets[@]}"; do
  corpus=tests/fuzz/corpus/$t
  found=$build/found/$t
  mkdir -p "$found" "$build/crashes" "$corpus"
  extra=()
  [ "$t" = onnx ] && gen_seeds && [ -d "$build/seeds/onnx" ] && extra+=("$build/seeds/onnx")
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  par=()
  [ "$jobs" -gt 1 ] && par=(-fork="$jobs" -ignore_crashes=0)
  echo "== fuzz $t: $minutes min, $jobs process(es), corpus $corpus =="
  out=$build/fuzz-$t.out
  t0=$(date +%s)
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo -) # what was built, not HEAD at the end
  set +e
  /usr/bin/time -f '%U %S' -o "$build/time-$t.txt" \
    "$build/tests/fuzz_$t" "$found" "$corpus" "${extra[@]}" "${dict[@]}" "${par[@]}" \
    -max_total_time=$((minutes * 60)) -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" >"$out" 2>&1
  rc=$?
  set -e
  wall=$(($(date +%s) - t0))
  # (the last line: time writes "Command exited with non-zero status N" first)
  cpu=$(tail -n 1 "$build/time-$t.txt" 2>/dev/null | awk '{printf "%d", $1 + $2}')
  cpu=${cpu:-0}
  # (grep finds nothing in -fork runs: || true, or pipefail ends the script
  # here before the run is logged)
  execs=$({ grep -o 'stat::number_of_executed_units: *[0-9]*' "$out" || true; } |
    awk '{s+=$2} END {print s+0}')
  if [ "$execs" = 0 ]; then # -fork prints progress lines instead of final stats
    execs=$({ grep -o '#[0-9]*' "$out" || true; } | tail -1 | tr -d '#')
    execs=${execs:-0}
  fi
  crashes=$(grep -c -E '^==[0-9]+==ERROR|^SUMMARY: (Address|Undefined|Leak)|ERROR: libFuzzer' "$out" || true)
  [ $rc -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" \
    "$commit" "$t" "$wall" "$cpu" "$execs" \
    "$crashes" >>"$log"
  echo "   wall ${wall}s, CPU ${cpu}s, ${execs} executions, exit $rc"
  if [ $rc -ne 0 ]; then
    echo "   FAILED: see $out and $build/crashes/$t-*" >&2
    status=1
  fi
  if [ $merge = 1 ] && [ $rc -eq 0 ]; then
    "$build/tests/fuzz_$t" -merge=1 "$corpus" "$found" "${extra[@]}" "${dict[@]}" \
      -rss_limit_mb=2048 -timeout=10 >"$build/merge-$t.out" 2>&1 || status=1
    echo "   corpus: $(ls "$corpus" | wc -l) files"
  fi
done
exit $status
