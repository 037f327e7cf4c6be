#!/usr/bin/env bash
# The README's second command: build kiln twice (optimized, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and run every test in both,
# then the optimized build's tests again for AVX2 and baseline x86-64 code.
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
# The generated kernels target the host (-march=native, its vector width). Run
# the optimized build's tests again as if on machines without AVX-512: AVX2
# (256-bit vectors, NCHW8c blocks) and baseline x86-64 (128-bit), as far as
# this CPU can run that code.
if [ -d build-test-release ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  echo "== kiln: release tests, AVX2 code (KILN_VECTOR_BITS=256, -march=haswell) =="
  ( cd build-test-release && KILN_VECTOR_BITS=256 KILN_CFLAGS="-O3 -march=haswell" \
      ctest --output-on-failure -j "$jobs" ) || status=1
fi
if [ -d build-test-release ] && [ "$(uname -m)" = x86_64 ]; then
  echo "== kiln: release tests, baseline x86-64 code (KILN_VECTOR_BITS=128) =="
  ( cd build-test-release && KILN_VECTOR_BITS=128 KILN_CFLAGS="-O3 -march=x86-64" \
      ctest --output-on-failure -j "$jobs" ) || status=1
fi
exit $status
