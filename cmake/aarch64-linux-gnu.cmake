# aarch64-linux-gnu.cmake: a CMake toolchain file that cross-builds kiln's
# runtime for 64-bit Arm Linux boards (Raspberry Pi 4/5, Graviton, Jetson):
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64
#
# It builds libkiln_runtime and a runtime-only `kiln` (run, and inspect of
# packages; KILN_RUNTIME_ONLY), linked statically against the runtime: the
# compiler needs protobuf-c and ONNX, and runs on the host anyway
# (kiln compile --target "llvm -mtriple=aarch64-linux-gnu -mcpu=...").
# Debian's gcc-aarch64-linux-gnu and libc6-dev-arm64-cross provide the
# compiler and its libc in /usr/aarch64-linux-gnu, the only place searched
# for libraries; zlib is used if found there, else the runtime reads stored
# (np.savez) .npz members only. qemu-user runs the result on the host:
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/kiln run m.tar
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)

set(KILN_RUNTIME_ONLY ON CACHE BOOL "runtime-only build (cross)" FORCE)
