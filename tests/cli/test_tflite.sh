#!/bin/sh
# test_tflite.sh KILN TESTDIR DATA_DIR: the command line on TFLite models
# (tests/data/tflite, hand-made by make_tflite_tests.py): kiln inspect and
# kiln compile pick the TFLite frontend by the file's identifier, whatever
# its name; the package runs; a malformed file and unsupported operators
# are errors (exit 1) that name the file and say what is wrong.
KILN=$1
DIR=$2
DATA=$3
OUT=$DIR/cli_tflite_out
. "$(dirname "$0")/expect.sh"

expect 0 "nn.conv2d" "$KILN" inspect "$DATA/ok_conv_float.tflite"
expect 0 "probs: Tensor[(1, 3), float32]" "$KILN" inspect "$DATA/ok_conv_float.tflite"
# by content: the same bytes under another name
cp "$DATA/ok_int8.tflite" "$DIR/cli_tflite_model.bin"
expect 0 "qnn.quantize" "$KILN" inspect "$DIR/cli_tflite_model.bin"
expect 0 "wrote" "$KILN" compile "$DIR/cli_tflite_model.bin" -o "$DIR/cli_tflite_int8.tar"
expect 0 "output: float32[1, 2, 2, 3]" "$KILN" run "$DIR/cli_tflite_int8.tar" --fill random
# TFLite's reference kernels' rounding: the integer requantization
expect 0 "wrote" "$KILN" compile "$DIR/cli_tflite_model.bin" --tflite-kernels reference \
    --dump-ir "$DIR/cli_tflite_dump" -o "$DIR/cli_tflite_ref.tar"
expect 0 "fixed_point_multiply" cat "$DIR/cli_tflite_dump/03_after_QnnCanonicalize.txt"
expect 0 "output: float32[1, 2, 2, 3]" "$KILN" run "$DIR/cli_tflite_ref.tar" --fill random
expect 0 'rounding="TFLITE"' "$KILN" inspect "$DIR/cli_tflite_model.bin" --tflite-kernels reference
expect 2 "--tflite-kernels 'fast' is not xnnpack or reference" \
    "$KILN" inspect "$DIR/cli_tflite_model.bin" --tflite-kernels fast
expect 2 "--tflite-kernels 'fast' is not xnnpack or reference" \
    "$KILN" compile "$DIR/cli_tflite_model.bin" --tflite-kernels fast
expect 0 "wrote" "$KILN" compile "$DATA/ok_conv_float.tflite" --input-shapes "input:[1,9,9,2]" \
    -o "$DIR/cli_tflite_float.tar"
expect 0 "probs: float32[1, 3]" "$KILN" run "$DIR/cli_tflite_float.tar" --fill random
# errors: the file, then what is wrong
expect 1 "bad_vtable_cyclic.tflite: not a valid TFLite model" \
    "$KILN" compile "$DATA/bad_vtable_cyclic.tflite" -o "$DIR/cli_tflite_bad.tar"
expect 1 "CUSTOM 'MyOp' (operators 1, 3); LSTM (operator 2); WHILE (operator 4)" \
    "$KILN" compile "$DATA/unsupported_ops.tflite" -o "$DIR/cli_tflite_bad.tar"
expect 1 "operator 0 (CONV_2D)" "$KILN" inspect "$DATA/bad_conv_filter_3d.tflite"
rm -rf "$DIR/cli_tflite_model.bin" "$DIR/cli_tflite_int8.tar" "$DIR/cli_tflite_float.tar" \
    "$DIR/cli_tflite_ref.tar" "$DIR/cli_tflite_dump"
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "cli_tflite: all checks passed"
