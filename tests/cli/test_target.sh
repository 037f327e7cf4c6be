#!/bin/sh
# test_target.sh KILN TESTDIR MODELS_DIR: `kiln compile --target` with tvmc
# target strings, which the CLI hands to the library as they are: a named
# CPU or -mattr picks the C compiler's flags, the vector width and the
# register count the schedules size their register blocks for; a bad string
# is a bad argument (exit 2) naming the bad word. Also --winograd, which
# like --target picks how kernels are generated.
KILN=$1
DIR=$2
MODELS=$3
MODEL=$MODELS/digits/digits_cnn.onnx
RESNET=$MODELS/e2e/resnet50_narrow.onnx
OUT=$DIR/cli_target_out
. "$(dirname "$0")/expect.sh"

SHAPES="input:[1,1,8,8]"
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then
    expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
        --target "llvm -mcpu=haswell" -o "$DIR/cli_haswell.tar"
    expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_haswell.tar" --fill random
    expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
        --target "llvm -mcpu=x86-64 -mattr=+avx2,+fma" -o "$DIR/cli_mattr.tar"
    expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_mattr.tar" --fill random
fi
expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" --target "c -mcpu=x86-64" \
    -o "$DIR/cli_c.tar"
expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_c.tar" --fill random

# a bad number in --input-shapes is a bad argument naming the flag and the number
BIG=99999999999999999999999
for cmd in compile inspect; do
    expect 2 "--input-shapes: input 'input': dimension '$BIG' is out of range" \
        "$KILN" $cmd "$MODEL" --input-shapes "input:[$BIG,1,8,8]"
    expect 2 "--input-shapes: input 'input': dimension '-1' is negative" \
        "$KILN" $cmd "$MODEL" --input-shapes "input:[-1,1,8,8]"
    expect 2 "--input-shapes: input 'input': dimension '8x' is not a whole number" \
        "$KILN" $cmd "$MODEL" --input-shapes "input:[1,1,8x,8]"
    expect 2 "dimension '4294967296' makes the input's element count overflow 64 bits" \
        "$KILN" $cmd "$MODEL" --input-shapes "input:[4294967296,4294967296,1,8]"
done

# the largest register block (local buffer) of a model's kernels, in floats
max_block() {
    grep -o "allocate [^{]*local {" "$1/kernels.tir.txt" | sed 's/.*\[\([0-9]*\)\].*/\1/' |
        sort -n | tail -1
}
# dump NAME MODEL SHAPES [TARGET]: compile MODEL (for TARGET) with its IR
# dumped into the folder cli_target_dump_NAME
dump() {
    d=$DIR/cli_target_dump_$1
    rm -rf "$d"
    mkdir -p "$d"
    if [ $# -gt 3 ]; then
        expect 0 "wrote" "$KILN" compile "$2" --input-shapes "$3" --target "$4" \
            --dump-ir "$d" -o "$d.tar"
    else
        expect 0 "wrote" "$KILN" compile "$2" --input-shapes "$3" --dump-ir "$d" -o "$d.tar"
    fi
}
RSHAPES="input:[1,3,64,64]"
# An AVX2 CPU has 16 vector registers: its register blocks keep at most 16
# eight-lane accumulators, though this machine may have AVX-512's 32; an
# AVX-512 CPU's keep more than 16 of 16 lanes. Compiled only: cc builds for
# any x86 CPU.
dump haswell "$RESNET" "$RSHAPES" "llvm -mcpu=haswell"
expect 0 "vector registers: 16" cat "$DIR/cli_target_dump_haswell/target.txt"
expect 0 "cflags: -O3 -march=haswell" cat "$DIR/cli_target_dump_haswell/target.txt"
m=$(max_block "$DIR/cli_target_dump_haswell")
if [ -z "$m" ] || [ $((m / 8)) -gt 16 ]; then
    echo "FAIL: haswell: the largest register block is $m floats, more than 16 AVX2 registers"
    fails=$((fails + 1))
fi
dump skx "$RESNET" "$RSHAPES" "llvm -mcpu=skylake-avx512"
expect 0 "vector registers: 32" cat "$DIR/cli_target_dump_skx/target.txt"
m=$(max_block "$DIR/cli_target_dump_skx")
if [ -z "$m" ] || [ $((m / 16)) -le 16 ] || [ $((m / 16)) -gt 32 ]; then
    echo "FAIL: skylake-avx512: the largest register block is $m floats, not 17-32 registers"
    fails=$((fails + 1))
fi
# -mattr=-avx512f takes an AVX-512 CPU down to AVX2's width and registers
dump noavx512 "$MODEL" "$SHAPES" "llvm -mcpu=skylake-avx512 -mattr=-avx512f"
expect 0 "vector registers: 16" cat "$DIR/cli_target_dump_noavx512/target.txt"
expect 0 "cflags: -O3 -march=skylake-avx512 -mno-avx512f" \
    cat "$DIR/cli_target_dump_noavx512/target.txt"
# $KILN_TARGET is the default target; --target wins over it
saved_target=${KILN_TARGET-}
export KILN_TARGET="llvm -mcpu=haswell"
dump env "$MODEL" "$SHAPES"
dump env2 "$MODEL" "$SHAPES" "llvm -mcpu=x86-64"
if [ -n "$saved_target" ]; then KILN_TARGET=$saved_target; else unset KILN_TARGET; fi
expect 0 "target: llvm -mtriple=x86_64-linux-gnu -mcpu=haswell" \
    cat "$DIR/cli_target_dump_env/target.txt"
expect 0 "vector bits: 128" cat "$DIR/cli_target_dump_env2/target.txt"

# bad target strings: one error naming the bad word, exit 2
bad() {
    expect 2 "$1" "$KILN" compile "$MODEL" --target "$2" -o "$DIR/cli_bad.tar"
}
bad "unknown CPU 'nosuchcpu' for x86_64 in -mcpu (known: native, x86-64" "llvm -mcpu=nosuchcpu"
bad "unknown CPU 'a;b'" "llvm -mcpu=a;b"
bad "target 'cuda' is not supported" cuda
bad "unknown target kind 'llvmx'" llvmx
bad "unknown external backend 'nosuch' (known:" "nosuch, llvm"
bad "unknown feature '+avx3' for x86_64 in -mattr" "llvm -mattr=+avx2,+avx3"
bad "unknown option '-mfpu'" "llvm -mfpu=neon"
bad "unexpected word 'haswell'" "llvm haswell"
bad "unsupported -mtriple 'riscv64-linux-gnu'" "llvm -mtriple=riscv64-linux-gnu"
bad "CPU 'cortex-a72' is aarch64, but -mtriple=x86_64-linux-gnu is x86_64" \
    "llvm -mtriple=x86_64-linux-gnu -mcpu=cortex-a72"
bad "target \"\": empty" ""
expect 2 "--target needs a value" "$KILN" compile "$MODEL" --target
expect 1 "\$KILN_TARGET: target \"llvm -mcpu=bogus\": unknown CPU 'bogus'" \
    env KILN_TARGET="llvm -mcpu=bogus" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
    -o "$DIR/cli_bad.tar"

# --winograd: a tile for every 3x3 stride-1 convolution, or a clear error
expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" --winograd 2 \
    -o "$DIR/cli_wino.tar"
expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_wino.tar" --fill random
expect 2 "winograd: '3' is not auto, off, 2 or 4" "$KILN" compile "$MODEL" --winograd 3 \
    -o "$DIR/cli_bad.tar"
expect 2 "--winograd needs a value" "$KILN" compile "$MODEL" --winograd

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "cli target checks passed"
