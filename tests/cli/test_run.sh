#!/bin/sh
# test_run.sh KILN TESTDIR: `kiln run` end to end on the package that
# test_runtime_executor wrote (TESTDIR/exec_model.tar: inputs x; outputs
# sum = 2(x + b) + x and double = 2(x + b)). Checks exit codes (0 ok,
# 1 runtime failure, 2 bad argument), messages, the timing table, the
# profile, the trace and the outputs file. TESTDIR/exec_two_inputs.tar is
# the same graph with b an input too. An input not given is an error unless
# --fill asks for filling, which is then reported on stderr.
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
expect 0 "--fill MODE" "$KILN" run --help
expect 0 "--check-div-zero" "$KILN" run --help

# printing outputs: names, shapes, first values
expect 0 "[-4, -6.5, " "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz"
expect 0 "[2, 1, 3, -1, " "$KILN" run "$MODEL" --fill-mode zeros
expect 0 "[5, 4, " "$KILN" run "$MODEL" --fill-mode=ones
expect 0 "[5, 4, " "$KILN" run "$MODEL" --fill ones
expect 0 "double: float32[2, 8]" "$KILN" run "$MODEL" --fill zeros
expect 0 "14: 9" "$KILN" run "$MODEL" --fill=zeros --print-top 3
expect 0 "sum: float32[2, 8]" "$KILN" run "$MODEL" --fill random
expect 0 "[-4, -6.5, " "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz" --check-div-zero

# inputs not given: an error naming them, unless --fill is given; filling is reported
expect 2 "kiln run: no value for input 'x' (float32[2, 8])" "$KILN" run "$MODEL"
expect 2 "or fill it with --fill zeros|ones|random" "$KILN" run "$MODEL" --print-time
expect 2 "no value for input 'x' (float32[2, 8]), 'b' (float32[2, 8])" \
    "$KILN" run "$DIR/exec_two_inputs.tar"
expect 2 "exec_inputs.npz has no value for input 'b' (float32[2, 8])" \
    "$KILN" run "$DIR/exec_two_inputs.tar" --inputs "$DIR/exec_inputs.npz"
expect 0 "filled input 'x' (float32[2, 8]) with random values" "$KILN" run "$MODEL" --fill random
expect 0 "filled input 'x' (float32[2, 8]) with zeros" "$KILN" run "$MODEL" --fill-mode zeros
expect 0 "filled input 'b' (float32[2, 8]) with ones" \
    "$KILN" run "$DIR/exec_two_inputs.tar" --inputs "$DIR/exec_inputs.npz" --fill ones
if grep -qF "filled input 'x'" "$OUT"; then
    echo "FAIL: an input given in --inputs was reported as filled"; fails=$((fails + 1))
fi
"$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz" >"$OUT" 2>&1
if grep -qF "filled" "$OUT"; then echo "FAIL: nothing was filled, yet"; fails=$((fails + 1)); fi

# kernel status (test_runtime_executor's hand-written kernels): an index out of
# range is an error; a division by zero only with --check-div-zero
expect 1 "node 1 'r' (function 'einx'): index out of range" \
    "$KILN" run "$DIR/exec_index.tar" --fill zeros
expect 0 "output_0: float32[16]" "$KILN" run "$DIR/exec_divzero.tar" --fill zeros
expect 1 "node 1 'r' (function 'edivz'): integer division by zero" \
    "$KILN" run "$DIR/exec_divzero.tar" --fill zeros --check-div-zero

# KILN_NUM_THREADS: a bad value is a bad argument
expect 0 "[-4, -6.5, " env KILN_NUM_THREADS=3 "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz"
for bad in 0 -2 abc 4x 1025 99999999999999999999 " 2"; do
    expect 2 "KILN_NUM_THREADS: the thread count '$bad' is not a whole number from 1 to 1024" \
        env KILN_NUM_THREADS="$bad" "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz"
done

# the timing table, as tvmc prints it
expect 0 "Execution time summary:" "$KILN" run "$MODEL" --fill zeros --print-time --repeat 3 \
    --number 2
expect 0 " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  " \
    "$KILN" run "$MODEL" --inputs "$DIR/exec_inputs.npz" --print-time
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
expect 0 "Kernel profile (mean over 6 runs)" "$KILN" run "$MODEL" --fill zeros --profile \
    --repeat 2 --number 3 --profile-trace "$DIR/cli_trace.json"
grep -qF "Total" "$OUT" || { echo "FAIL: no Total row"; fails=$((fails + 1)); }
if ! grep -qF '"traceEvents"' "$DIR/cli_trace.json" ||
    [ "$(grep -c '"ph": "X"' "$DIR/cli_trace.json")" -ne 18 ]; then
    echo "FAIL: the trace lacks 18 kernel events"; cat "$DIR/cli_trace.json"; fails=$((fails + 1))
fi
expect 0 "(2 more kernels)" "$KILN" run "$MODEL" --fill zeros --profile --print-top 1
# the roofline columns (docs/PROFILING.md); this package has no counts
expect 0 "Node                     Function             Time(us) %Time   GFLOP     MB GFLOP/s   GB/s    AI   Roof %Roof Bound" \
    "$KILN" run "$MODEL" --fill zeros --profile
grep -qF "Machine: " "$OUT" || { echo "FAIL: no Machine line"; fails=$((fails + 1)); }
grep -qF "Some kernels have no FLOP or byte count" "$OUT" ||
    { echo "FAIL: no note on the missing counts"; fails=$((fails + 1)); }
grep -qF '"flops": null' "$DIR/cli_trace.json" ||
    { echo "FAIL: the trace lacks the flops arg"; fails=$((fails + 1)); }
# test_runtime_roofline's conv + dense: counted, each kernel compute- or memory-bound
ROOF=$DIR/roofline_model.tar
rm -f "$DIR/cli_trace.json"
expect 0 "%Roof Bound" "$KILN" run "$ROOF" --fill random --profile --profile-trace "$DIR/cli_trace.json"
if ! grep -Eq "^fc +dense.* (compute|memory)$" "$OUT" || ! grep -Eq "^Total .* (compute|memory)$" "$OUT" ||
    grep -qF "Some kernels have no FLOP" "$OUT"; then
    echo "FAIL: the roofline rows of $ROOF"; cat "$OUT"; fails=$((fails + 1))
fi
if ! grep -qF '"bound": "' "$DIR/cli_trace.json" || ! grep -qF '"roof_share": ' "$DIR/cli_trace.json" ||
    grep -qF '"flops": null' "$DIR/cli_trace.json"; then
    echo "FAIL: the trace lacks the roofline args"; fails=$((fails + 1))
fi

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
expect 2 "--fill must be zeros, ones or random, got 'none'" "$KILN" run "$MODEL" --fill none
expect 2 "--fill needs a value" "$KILN" run "$MODEL" --fill
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

# a package with symbolic dims (test_runtime_dynamic wrote it: inputs x[n, 3]
# and s[n*2], outputs z and y [n*2, 3]; dyn_inputs.npz has n = 3, and
# dyn_inputs_bad.npz an s of 5)
DYN=$DIR/dyn_model.tar
expect 0 "z: float32[6, 3]" "$KILN" run "$DYN" --inputs "$DIR/dyn_inputs.npz"
expect 0 "Execution time summary" "$KILN" run "$DYN" --inputs "$DIR/dyn_inputs.npz" --print-time
expect 1 "input 's' dim 0 is 5, but n*2 = 6 (n = 3, from input 'x' dim 0)" \
    "$KILN" run "$DYN" --inputs "$DIR/dyn_inputs_bad.npz"
expect 2 "input 'x' (float32[n, 3]) has symbolic dims, so --fill cannot size it" \
    "$KILN" run "$DYN" --fill zeros
expect 2 "no value for input 'x' (float32[n, 3]), 's' (float32[n*2])" "$KILN" run "$DYN"
expect 0 "  s: float32[n*2]" "$KILN" inspect "$DYN"

if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
echo "all cli checks passed"
