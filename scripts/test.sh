#!/usr/bin/env bash
# The README's second command: build kiln twice (optimized, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and run every test in both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
status=0
for variant in release asan; do
  dir=build-test-$variant
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON)
  [ $variant = asan ] && flags+=(-DKILN_SANITIZE=ON)
  echo "== kiln: $variant build =="
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== kiln: $variant tests =="
  # ASan: generated kernels are loaded with dlopen; keep leak checks on
  ( cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs" ) || status=1
done
exit $status
