#!/bin/sh
# test_run.sh KILN TESTDIR: `kiln run` end to end on the package that
# test_runtime_executor wrote (TESTDIR/exec_model.tar: inputs x; outputs
# sum = 2(x + b) + x and double = 2(x + b)). Checks exit codes (0 ok,
# 1 runtime failure, 2 bad argument), messages, the timing table, the
# profile, the trace and the outputs file.
KILN=$1
DIR=$2
MODEL=$DIR/exec_model.tar
OUT=$DIR/cli_out
. "$(dirname "$0")/expect.sh"

# the tool
expect 0 "  run " "$KILN" --help
expect 2 "usage: kiln" "$KILN"
expect 2 "unknown command 'frobnicate'" "$KILN" frobnicate
expect 0 "kiln " "$KILN" --version
expect 0 "--fill-mode MODE" "$KILN" run --help

# printing outputs: names, shapes, first values
expect 0 "sum: float32[2, 8]" "$KILN" run "$MODEL"
expect 0 "[-4, -6.5, " "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz"
expect 0 "[2, 1, 3, -1, " "$KILN" run "$MODEL" --fill-mode zeros
expect 0 "[5, 4, " "$KILN" run "$MODEL" --fill-mode=ones
expect 0 "double: float32[2, 8]" "$KILN" run "$MODEL" --fill-mode zeros
expect 0 "14: 9" "$KILN" run "$MODEL" --fill-mode zeros --print-top 3

# the timing table, as tvmc prints it
expect 0 "Execution time summary:" "$KILN" run "$MODEL" --print-time --repeat 3 --number 2
expect 0 " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  " \
    "$KILN" run "$MODEL" --print-time
if grep -qF "sum: " "$OUT"; then echo "FAIL: --print-time also printed outputs"; fails=$((fails + 1)); fi

# outputs saved under the output names
rm -f "$DIR/cli_y.npz"
expect 0 "" "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz" --outputs "$DIR/cli_y.npz"
if [ ! -s "$DIR/cli_y.npz" ] || ! grep -qaF "sum.npy" "$DIR/cli_y.npz" ||
    ! grep -qaF "double.npy" "$DIR/cli_y.npz"; then
    echo "FAIL: --outputs did not write sum.npy and double.npy"; fails=$((fails + 1))
fi

# the profile and its trace
rm -f "$DIR/cli_trace.json"
expect 0 "Kernel profile (mean over 6 runs)" "$KILN" run "$MODEL" --profile --repeat 2 --number 3 \
    --profile-trace "$DIR/cli_trace.json"
grep -qF "Total" "$OUT" || { echo "FAIL: no Total row"; fails=$((fails + 1)); }
if ! grep -qF '"traceEvents"' "$DIR/cli_trace.json" ||
    [ "$(grep -c '"ph": "X"' "$DIR/cli_trace.json")" -ne 18 ]; then
    echo "FAIL: the trace lacks 18 kernel events"; cat "$DIR/cli_trace.json"; fails=$((fails + 1))
fi
expect 0 "(2 more kernels)" "$KILN" run "$MODEL" --profile --print-top 1

# bad arguments: exit 2 with a message
expect 2 "unknown option '--bogus'" "$KILN" run "$MODEL" --bogus
expect 2 "--repeat needs a value" "$KILN" run "$MODEL" --repeat
expect 2 "--repeat needs a whole number" "$KILN" run "$MODEL" --repeat -1
expect 2 "--number needs a whole number from 1 to 1000000000, got 'abc'" \
    "$KILN" run "$MODEL" --number abc
expect 2 "--print-top needs a whole number" "$KILN" run "$MODEL" --print-top 0
expect 2 "--repeat needs a whole number from 1 to 1000000000, got '99999999999999999999999'" \
    "$KILN" run "$MODEL" --repeat 99999999999999999999999
expect 2 "--number needs a whole number from 1 to 1000000000, got '3x'" \
    "$KILN" run "$MODEL" --number 3x
expect 2 "--print-top needs a whole number from 1 to 1000000000, got '-9223372036854775809'" \
    "$KILN" run "$MODEL" --print-top -9223372036854775809
expect 2 "--fill-mode must be zeros, ones or random, got 'twos'" \
    "$KILN" run "$MODEL" --fill-mode twos
expect 2 "model: cannot read '$DIR/nope.tar'" "$KILN" run "$DIR/nope.tar"
expect 2 "--inputs: cannot read '$DIR/nope.npz'" "$KILN" run "$MODEL" --inputs "$DIR/nope.npz"
expect 2 "no model given" "$KILN" run --print-time
expect 2 "more than one model" "$KILN" run "$MODEL" "$MODEL"

# runtime failures: exit 1
expect 1 "has 'bogus', which is not an input of the model; the model's inputs: x" \
    "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs_bad.npz"
expect 1 "not a tar file" "$KILN" run "$DIR/exec_inputs.npz"
expect 1 "bad header checksum" "$KILN" run "$DIR/test_runtime_executor"
# a truncated mod.so (test_runtime_executor cut it at 50% and 90%) is an error, not SIGBUS
for pct in 50 90; do
    expect 1 "exec_so$pct.tar: member mod.so (" "$KILN" run "$DIR/exec_so$pct.tar"
    expect 1 "is truncated or corrupt" "$KILN" run "$DIR/exec_so$pct.tar"
    expect 1 "exec_so$pct.tar: member mod.so (" "$KILN" inspect "$DIR/exec_so$pct.tar"
done

if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
echo "all cli checks passed"
