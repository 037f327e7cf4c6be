#!/bin/sh
# test_target.sh KILN TESTDIR MODEL: `kiln compile --target` with tvmc target
# strings: -mcpu picks the C compiler's -march and the vector width; a CPU
# the compiler does not know is a compile error naming the flag (exit 1); a
# target kiln does not support or a malformed -mcpu is a bad argument (2).
# Also --winograd, which like --target picks how kernels are generated.
KILN=$1
DIR=$2
MODEL=$3
OUT=$DIR/cli_target_out
. "$(dirname "$0")/expect.sh"

SHAPES="input:[1,1,8,8]"
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then
    expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
        --target "llvm -mcpu=haswell" -o "$DIR/cli_haswell.tar"
    expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_haswell.tar"
    expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
        --target "llvm -mcpu=x86-64 -mattr=+avx2" -o "$DIR/cli_mattr.tar"
    expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_mattr.tar"
fi
expect 1 "-march=nosuchcpu" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" \
    --target "llvm -mcpu=nosuchcpu" -o "$DIR/cli_bad.tar"
expect 2 "bad -mcpu" "$KILN" compile "$MODEL" --target "llvm -mcpu=a;b" -o "$DIR/cli_bad.tar"
expect 2 "target 'cuda' is not supported" "$KILN" compile "$MODEL" --target cuda \
    -o "$DIR/cli_bad.tar"
expect 2 "target 'llvmx' is not supported" "$KILN" compile "$MODEL" --target llvmx \
    -o "$DIR/cli_bad.tar"
# --winograd: a tile for every 3x3 stride-1 convolution, or a clear error
expect 0 "wrote" "$KILN" compile "$MODEL" --input-shapes "$SHAPES" --winograd 2 \
    -o "$DIR/cli_wino.tar"
expect 0 "logits: float32[1, 10]" "$KILN" run "$DIR/cli_wino.tar"
expect 2 "winograd: '3' is not auto, off, 2 or 4" "$KILN" compile "$MODEL" --winograd 3 \
    -o "$DIR/cli_bad.tar"
expect 2 "--winograd needs a value" "$KILN" compile "$MODEL" --winograd

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "cli target checks passed"
