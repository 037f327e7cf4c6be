#!/bin/sh
# test_cross.sh KILN NPZ_TOOL TESTDIR SOURCE_DIR: cross-compilation that runs.
# Cross-builds the runtime-only kiln for aarch64 (cmake/aarch64-linux-gnu.cmake,
# into TESTDIR/aarch64), compiles the digits CNN and the narrow ResNet-50 and
# MobileNetV2 for "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72" with the
# x86 kiln, runs them under qemu-aarch64 and compares their outputs with the
# same models compiled for and run on this machine (max |diff| / max |x86|
# <= 1e-4); the int8 digits CNN likewise on sdot, usdot and plain NEON. Also: the packages' kernels are NEON code sized for 128-bit
# vectors and 32 registers; each runtime refuses the other's package; a
# compiler for the wrong architecture is named. Skipped (exit 77) without
# the cross tools (scripts/install-deps.sh installs them) or when
# $KILN_TARGET picks another default target.
KILN=$1
NPZ=$2
DIR=$3
SRC=$4
OUT=$DIR/cli_cross_out
. "$(dirname "$0")/expect.sh"

TRIPLE=aarch64-linux-gnu
SYSROOT=/usr/$TRIPLE
for tool in $TRIPLE-gcc qemu-aarch64 cmake; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "SKIP: $tool is not installed (scripts/install-deps.sh installs the cross tools:"
        echo "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user)"
        exit 77
    fi
done
if [ ! -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]; then
    echo "SKIP: no aarch64 libc in $SYSROOT (libc6-dev-arm64-cross)"
    exit 77
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "SKIP: the cross test runs on x86_64 hosts"
    exit 77
fi
if [ -n "$KILN_TARGET" ]; then
    echo "SKIP: KILN_TARGET is set ('$KILN_TARGET'); the cross test runs with the default target"
    exit 77
fi

# the runtime-only kiln for aarch64 (incremental on a rerun)
B=$DIR/aarch64
start=$(date +%s)
if ! { cmake -S "$SRC" -B "$B" -DCMAKE_TOOLCHAIN_FILE="$SRC/cmake/aarch64-linux-gnu.cmake" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON >"$OUT" 2>&1 &&
       cmake --build "$B" -j 2 >>"$OUT" 2>&1; }; then
    echo "FAIL: the aarch64 cross build of the runtime"; cat "$OUT"
    exit 1
fi
echo "cross build of the runtime: $(($(date +%s) - start)) s"
ARM="qemu-aarch64 -L $SYSROOT $B/kiln"
TARGET="llvm -mtriple=$TRIPLE -mcpu=cortex-a72"
W=$DIR/cli_cross
rm -rf "$W"
mkdir -p "$W"

# cross compile NAME MODEL INPUTS.npz INPUT-NAME [--input-shapes S]: compile for
# both machines, run both, compare
cross() {
    name=$1 model=$2 io=$3 input=$4
    shift 4
    expect 0 "" "$NPZ" pick "$io" "$W/$name.in.npz" "$input"
    expect 0 "wrote" "$KILN" compile "$model" "$@" -o "$W/$name.x86.tar"
    expect 0 "" "$KILN" run "$W/$name.x86.tar" --inputs "$W/$name.in.npz" \
        --outputs "$W/$name.x86.out.npz"
    mkdir -p "$W/$name.dump"
    expect 0 "wrote" "$KILN" compile "$model" "$@" --target "$TARGET" \
        --cross-compiler $TRIPLE-gcc --dump-ir "$W/$name.dump" -o "$W/$name.arm.tar"
    expect 0 "" $ARM run "$W/$name.arm.tar" --inputs "$W/$name.in.npz" \
        --outputs "$W/$name.arm.out.npz"
    "$NPZ" compare "$W/$name.arm.out.npz" "$W/$name.x86.out.npz" 1e-4 >"$OUT" 2>&1
    rc=$?
    sed "s/^/$name aarch64 vs x86: /" "$OUT"
    [ $rc -eq 0 ] || { echo "FAIL: $name: aarch64 and x86 outputs differ"; fails=$((fails + 1)); }
    # what the kernels were built for: 128-bit NEON, 32 registers
    expect 0 "vector bits: 128" cat "$W/$name.dump/target.txt"
    expect 0 "vector registers: 32" cat "$W/$name.dump/target.txt"
    if grep -qE "f32x(8|16)" "$W/$name.dump"/mod_*.c; then
        echo "FAIL: $name: aarch64 C source has vectors wider than 128 bits"
        fails=$((fails + 1))
    fi
    mkdir -p "$W/$name.pkg"
    tar -xf "$W/$name.arm.tar" -C "$W/$name.pkg"
    expect 0 "\"arch\": \"aarch64\"" cat "$W/$name.pkg/mod.json"
    machine=$(od -An -tu2 -j18 -N2 "$W/$name.pkg/mod.so" | tr -d ' ')
    [ "$machine" = 183 ] || { echo "FAIL: $name: mod.so is ELF machine $machine, not aarch64 (183)"; fails=$((fails + 1)); }
    if command -v $TRIPLE-objdump >/dev/null 2>&1; then
        n=$($TRIPLE-objdump -d "$W/$name.pkg/mod.so" | grep -cE "fmla[[:space:]]+v[0-9]+\.4s")
        echo "$name: $n NEON fmla v.4s instructions"
        [ "$n" -gt 0 ] || { echo "FAIL: $name: no NEON multiply-adds"; fails=$((fails + 1)); }
    fi
}

cross digits "$SRC/models/digits/digits_cnn.onnx" "$SRC/models/digits/heldout.npz" input \
    --input-shapes "input:[360,1,8,8]"
cross mobilenetv2 "$SRC/models/e2e/mobilenetv2_narrow.onnx" \
    "$SRC/models/e2e/mobilenetv2_narrow_io.npz" input
cross resnet50 "$SRC/models/e2e/resnet50_narrow.onnx" "$SRC/models/e2e/resnet50_narrow_io.npz" \
    input

# int8: the digits CNN quantized by kiln quantize runs on the int8 kernels
# of three aarch64 targets: sdot (dot product extension), usdot (+i8mm) and
# the exact loop (cortex-a72); the same integers as on this machine
expect 0 "wrote" "$KILN" quantize "$SRC/models/digits/digits_cnn.onnx" \
    --calibration "$SRC/models/digits/heldout.npz" -o "$W/digits_int8.onnx"
expect 0 "" "$NPZ" pick "$SRC/models/digits/heldout.npz" "$W/int8.in.npz" input
expect 0 "wrote" "$KILN" compile "$W/digits_int8.onnx" --input-shapes "input:[360,1,8,8]" \
    --pass FakeQuantizationToInteger -o "$W/int8.x86.tar"
expect 0 "" "$KILN" run "$W/int8.x86.tar" --inputs "$W/int8.in.npz" --outputs "$W/int8.x86.out.npz"
# (the pass is named everywhere: on a target without an int8 dot product,
# cortex-a72 or an AVX2 host, a QDQ model keeps its float kernels by default)
for cpu in "neoverse-n1:sdot" "neoverse-n1 -mattr=+i8mm:usdot" "cortex-a72:"; do
    mcpu=${cpu%%:*} insn=${cpu##*:} tag=$(echo "${cpu%%:*}" | tr -c 'a-z0-9\n' _)
    expect 0 "wrote" "$KILN" compile "$W/digits_int8.onnx" --input-shapes "input:[360,1,8,8]" \
        --target "llvm -mtriple=$TRIPLE -mcpu=$mcpu" --cross-compiler $TRIPLE-gcc \
        --pass FakeQuantizationToInteger -o "$W/int8.$tag.tar"
    expect 0 "" $ARM run "$W/int8.$tag.tar" --inputs "$W/int8.in.npz" \
        --outputs "$W/int8.$tag.out.npz"
    "$NPZ" compare "$W/int8.$tag.out.npz" "$W/int8.x86.out.npz" 1e-4 >"$OUT" 2>&1 ||
        { echo "FAIL: int8 on $mcpu: outputs differ from x86's"; cat "$OUT"; fails=$((fails + 1)); }
    if [ -n "$insn" ] && command -v $TRIPLE-objdump >/dev/null 2>&1; then
        mkdir -p "$W/int8.$tag.pkg"
        tar -xf "$W/int8.$tag.tar" -C "$W/int8.$tag.pkg"
        n=$($TRIPLE-objdump -d "$W/int8.$tag.pkg/mod.so" | grep -cE "[[:space:]]$insn[[:space:]]")
        echo "int8 on $mcpu: $n $insn instructions"
        [ "$n" -gt 0 ] || { echo "FAIL: int8 on $mcpu: no $insn"; fails=$((fails + 1)); }
    fi
done

# the register blocks use NEON's 32 registers: some convolution keeps more
# than 16 four-lane accumulators (an AVX2 target keeps at most 16 of 8 lanes)
max=$(grep -o "allocate [^{]*local {" "$W/resnet50.dump/kernels.tir.txt" |
      sed 's/.*\[\([0-9]*\)\].*/\1/' | sort -n | tail -1)
if [ -z "$max" ] || [ $((max / 4)) -le 16 ] || [ $((max / 4)) -gt 32 ]; then
    echo "FAIL: resnet50 on aarch64: largest register block is $max floats, not 17-32 vectors"
    fails=$((fails + 1))
fi

# each runtime refuses the other's package, naming both architectures
expect 1 "its kernels are aarch64 code (target \"$TARGET\")" "$KILN" run "$W/digits.arm.tar"
expect 1 "its kernels are x86_64 code" $ARM run "$W/digits.x86.tar"
expect 0 "kernels (" $ARM inspect "$W/digits.arm.tar"
# inspect never loads mod.so, so each kiln inspects the other's package too
expect 0 "target: $TARGET" "$KILN" inspect "$W/digits.arm.tar"
expect 0 "functions (8, from mod.so" "$KILN" inspect "$W/digits.arm.tar"
expect 0 "logits: float32[" $ARM inspect "$W/digits.x86.tar"
expect 2 "runtime-only build" $ARM compile "$SRC/models/digits/digits_cnn.onnx"
# without zlib in the cross sysroot, a deflated .npz is a clear error
if grep -q "ZLIB_LIBRARY_RELEASE:FILEPATH=ZLIB_LIBRARY_RELEASE-NOTFOUND" "$B/CMakeCache.txt"; then
    expect 1 "built without zlib" $ARM run "$W/resnet50.arm.tar" \
        --inputs "$SRC/models/e2e/resnet50_narrow_io.npz"
fi
# a compiler for the wrong architecture, or none, is named
expect 1 "with 'cc -std=gnu11 -fno-math-errno -O3 -mcpu=cortex-a72" "$KILN" compile \
    "$SRC/models/digits/digits_cnn.onnx" --input-shapes "input:[1,1,8,8]" --target "$TARGET" \
    --cross-compiler cc -o "$W/bad.tar"
expect 1 "cannot run the C compiler '/nonexistent/aarch64-gcc'" "$KILN" compile \
    "$SRC/models/digits/digits_cnn.onnx" --input-shapes "input:[1,1,8,8]" --target "$TARGET" \
    --cross-compiler /nonexistent/aarch64-gcc -o "$W/bad.tar"
# the default compiler of an aarch64 target is TRIPLE-gcc
expect 0 "wrote" "$KILN" compile "$SRC/models/digits/digits_cnn.onnx" \
    --input-shapes "input:[1,1,8,8]" --target "llvm -mtriple=$TRIPLE -mcpu=neoverse-n1" \
    -o "$W/n1.tar"
expect 0 "logits: float32[1, 10]" $ARM run "$W/n1.tar" --fill random

echo "cli cross test: $(($(date +%s) - start)) s"
if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "cli cross checks passed"
