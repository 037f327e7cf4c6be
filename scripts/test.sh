#!/usr/bin/env bash
# The README's second command: build kiln twice (optimized, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and run every test in both,
# then the Python package's tests (pytest) on the optimized build, and the
# PyTorch frontend's in a venv with Debian's torch, then the TFLite models
# against the TFLite interpreter (tensorflow-cpu), then the
# runtime's tests under ThreadSanitizer (a third build), then the
# optimized build's tests again for AVX2 and baseline x86-64 code.
# First it checks that the sources follow .clang-format.
# The cross test (tests/cli/test_cross.sh) builds the runtime for aarch64
# and runs models under qemu; install-deps.sh installs its tools.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
status=0
echo "== kiln: source format (.clang-format) =="
bash scripts/check-format.sh || status=1
for variant in release asan; do
  dir=build-test-$variant
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON)
  # the sanitized build also goes without XGBoost and without the BYOC
  # backends' libraries: kiln tune's fallback cost model (nearest neighbour)
  # and a kiln that has no dnnl or blas backend get tested there
  [ $variant = asan ] && flags+=(-DKILN_SANITIZE=ON -DKILN_NO_XGBOOST=ON -DKILN_NO_DNNL=ON
                                 -DKILN_NO_OPENBLAS=ON)
  echo "== kiln: $variant build =="
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== kiln: $variant tests =="
  # ASan: generated kernels are loaded with dlopen; keep leak checks on
  ( cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs" ) || status=1
done
# The Python package (python/kiln) over the optimized build's libkiln:
# pytest in a venv of its own (scripts/python-env.sh: numpy, pytest, onnx,
# onnxruntime, build), every test and every example script under
# examples/python. pytest exits non-zero on a failure and when it collects
# no test.
echo "== kiln: Python package tests (pytest, python/tests) =="
if py=$(bash scripts/python-env.sh build-python-venv); then
  ( cd python && KILN_BUILD_DIR="$PWD/../build-test-release" \
      KILN_LIBRARY_PATH="$PWD/../build-test-release" "../$py" -m pytest -q -p no:cacheprovider ) ||
    status=1
else
  echo "kiln: could not make the Python test environment" >&2
  status=1
fi
# The PyTorch frontend (kiln.frontend.from_pytorch) against Debian's torch
# and torchvision, in a venv of its own (scripts/torch-env.sh); the run
# above skips these tests for want of torch. KILN_REQUIRE_TORCH=1 makes a
# missing torch a failure here, never a skip.
echo "== kiln: PyTorch frontend tests (pytest, python/tests/test_frontend_pytorch.py) =="
if py=$(bash scripts/torch-env.sh build-torch-venv); then
  ( cd python && KILN_REQUIRE_TORCH=1 KILN_BUILD_DIR="$PWD/../build-test-release" \
      KILN_LIBRARY_PATH="$PWD/../build-test-release" "../$py" -m pytest -q -p no:cacheprovider \
      tests/test_frontend_pytorch.py ) || status=1
else
  echo "kiln: could not make the PyTorch test environment" >&2
  status=1
fi
# The TFLite frontend against the TFLite interpreter: narrow MobileNetV2
# (float, float16, int8), EfficientNet-lite0 int8, a ResNet-style net and a
# BERT-like encoder (float, dynamic-range), made with tensorflow-cpu from
# PyPI in a venv of their own (scripts/tflite-env.sh). A failed install
# fails the run.
echo "== kiln: TFLite models against the TFLite interpreter (scripts/tflite_models.sh) =="
bash scripts/tflite_models.sh --build build-test-release || status=1
# ThreadSanitizer: the runtime's tests (one loaded model run by 8 threads,
# the thread pool under concurrent callers, executors, modules), built and
# run alone to keep it fast. die_after_fork=0: the pool tests fork children
# after threads exist, and the children only exit.
echo "== kiln: ThreadSanitizer build (runtime tests) =="
tsan_tests=(test_runtime_ndarray test_runtime_npy test_runtime_pool test_runtime_module
            test_runtime_executor test_runtime_threads)
if cmake -S . -B build-test-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON \
     -DKILN_SANITIZE=thread >/dev/null &&
   cmake --build build-test-tsan -j "$jobs" --target "${tsan_tests[@]}"; then
  echo "== kiln: ThreadSanitizer tests =="
  ( cd build-test-tsan && TSAN_OPTIONS=die_after_fork=0:halt_on_error=1:second_deadlock_stack=1 \
      ctest --output-on-failure -j "$jobs" -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" ) ||
    status=1
else
  status=1
fi
# The generated kernels target this machine by default ("llvm -mcpu=native").
# Run the optimized build's tests again for other CPUs through the target
# mechanism ($KILN_TARGET is the library's default target): AVX2 (haswell:
# 256-bit vectors, 16 registers, NCHW8c blocks) and baseline x86-64 (128-bit
# SSE), as far as this CPU can run that code.
if [ -d build-test-release ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  echo "== kiln: release tests, AVX2 code (KILN_TARGET=\"llvm -mcpu=haswell\") =="
  ( cd build-test-release && KILN_TARGET="llvm -mcpu=haswell" \
      ctest --output-on-failure -j "$jobs" ) || status=1
fi
if [ -d build-test-release ] && [ "$(uname -m)" = x86_64 ]; then
  echo "== kiln: release tests, baseline x86-64 code (KILN_TARGET=\"llvm -mcpu=x86-64\") =="
  ( cd build-test-release && KILN_TARGET="llvm -mcpu=x86-64" \
      ctest --output-on-failure -j "$jobs" ) || status=1
fi
exit $status
