#!/usr/bin/env bash
# Install what kiln needs on a fresh Debian 12 machine: a C compiler, CMake,
# zlib, protobuf-c (library and protoc-c), onnx.proto and the ONNX node tests,
# torch and torchvision for the PyTorch frontend's tests, and on x86-64 the
# aarch64 cross compiler, its libc and qemu-user.
# Does nothing for packages that are already there.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v make >/dev/null 2>&1 || need+=(make)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need+=(libprotobuf-c-dev)
command -v protoc-c >/dev/null 2>&1 || need+=(protobuf-c-compiler)
command -v pkg-config >/dev/null 2>&1 || need+=(pkgconf) # tests/install checks kiln.pc
command -v python3 >/dev/null 2>&1 || need+=(python3) # tests/layering reads the objects with nm
# the Python package's tests run in a venv (scripts/python-env.sh)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
# the PyTorch frontend's tests (scripts/torch-env.sh): Debian's torch, not PyPI's
/usr/bin/python3 -c "import torch" >/dev/null 2>&1 || need+=(python3-torch)
/usr/bin/python3 -c "import torchvision" >/dev/null 2>&1 || need+=(python3-torchvision)
command -v clang-format >/dev/null 2>&1 || need+=(clang-format) # scripts/check-format.sh
[ -f /usr/include/onnx/onnx.proto ] || need+=(libonnx-dev)
[ -d /usr/share/libonnx-testdata/data/node ] || need+=(libonnx-testdata)
[ -f /usr/include/xgboost/c_api.h ] || need+=(libxgboost-dev) # kiln tune's cost model (optional to the build)
# the bring-your-own-codegen backends dnnl and blas (optional to the build: kiln/byoc.h)
[ -f /usr/include/dnnl.h ] || need+=(libdnnl-dev)
[ -f /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] ||
  [ -f /usr/include/aarch64-linux-gnu/openblas-pthread/cblas.h ] || need+=(libopenblas-dev)
# cross-compilation (tests/cli/test_cross.sh, cmake/aarch64-linux-gnu.cmake):
# the aarch64 C compiler and libc, and qemu to run the result. No arm64
# multiarch packages: an arm64 libc6 beside the cross one breaks
# `qemu-aarch64 -L /usr/aarch64-linux-gnu`, and the cross-built runtime
# needs no zlib.
if [ "$(uname -m)" = x86_64 ]; then
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
  [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need+=(libc6-dev-arm64-cross)
  command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "kiln: installing ${need[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
