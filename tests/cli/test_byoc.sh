#!/bin/sh
# test_byoc.sh KILN NPZ_TOOL MODELS DIR BACKENDS PLUGIN: bring your own codegen
# from the command line (kiln/byoc.h). For each backend this build has
# (BACKENDS, e.g. "dnnl blas"): `kiln compile --target "B, llvm"` on the
# narrow ResNet-50 and the digits CNN, the logits against ONNX Runtime's
# (the io file) and against kiln alone, `kiln inspect` showing what went
# where, and the IR dump's partitioning passes. A backend from a plugin
# (PLUGIN registers "ccplug": C loops for add and multiply) on a BERT encoder,
# the plugin named before or after the target. Then the errors: an unknown
# backend, one this build lacks, a bad composite target.
KILN=$1
NPZ=$2
MODELS=$3
DIR=$4
BACKENDS=$5
PLUGIN=$6
OUT=$DIR/cli_byoc_out
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

NARROW=$MODELS/e2e/resnet50_narrow.onnx
DIGITS=$MODELS/digits/digits_cnn.onnx
expect 0 "" "$NPZ" pick "$MODELS/e2e/resnet50_narrow_io.npz" "$DIR/byoc_in.npz" input
expect 0 "" "$NPZ" pick "$MODELS/e2e/resnet50_narrow_io.npz" "$DIR/byoc_ref.npz" logits
expect 0 "" "$KILN" compile "$DIGITS" --input-shapes "input:[4,1,8,8]" -o "$DIR/byoc_digits.tar"
expect 0 "" "$KILN" run "$DIR/byoc_digits.tar" --fill ones --outputs "$DIR/byoc_digits_ref.npz"

for b in $BACKENDS; do
    rm -rf "$DIR/byoc_ir_$b"
    expect 0 "wrote" "$KILN" compile "$NARROW" --target "$b, llvm" -o "$DIR/byoc_$b.tar" \
        --dump-ir "$DIR/byoc_ir_$b"
    for pass in MergeComposite AnnotateTarget MergeCompilerRegions PartitionGraph; do
        ls "$DIR/byoc_ir_$b"/*_after_$pass.txt >/dev/null 2>&1 || fail "$b: no dump after $pass"
    done
    grep -q "Compiler=\"$b\"" "$DIR/byoc_ir_$b"/*_after_PartitionGraph.txt ||
        fail "$b: nothing partitioned to it"
    expect 0 "[$b]" "$KILN" inspect "$DIR/byoc_$b.tar"
    expect 0 "placement:" "$KILN" inspect "$DIR/byoc_$b.tar"
    grep -Eq "^  $b +[0-9]+ calls?, [0-9]+ ops?" "$OUT" || fail "$b: inspect has no placement line"
    expect 0 "" "$KILN" run "$DIR/byoc_$b.tar" --inputs "$DIR/byoc_in.npz" \
        --outputs "$DIR/byoc_out_$b.npz"
    expect 0 "" "$NPZ" compare "$DIR/byoc_out_$b.npz" "$DIR/byoc_ref.npz" 1e-4
    # the digits CNN with a batch of 4
    expect 0 "" "$KILN" compile "$DIGITS" --input-shapes "input:[4,1,8,8]" --target "$b, llvm" \
        -o "$DIR/byoc_digits_$b.tar"
    expect 0 "" "$KILN" run "$DIR/byoc_digits_$b.tar" --fill ones --outputs "$DIR/byoc_digits_$b.npz"
    expect 0 "" "$NPZ" compare "$DIR/byoc_digits_$b.npz" "$DIR/byoc_digits_ref.npz" 1e-4
done

# a backend from a plugin, on the residual adds of a BERT encoder
BERT=$MODELS/e2e/bert_tiny_opset17
expect 0 "" "$NPZ" pick "$BERT"_io.npz "$DIR/byoc_bert_in.npz" input_ids
expect 0 "" "$NPZ" pick "$BERT"_io.npz "$DIR/byoc_bert_ref.npz" last_hidden_state
expect 0 "wrote" "$KILN" compile "$BERT.onnx" --target "ccplug, llvm" --plugin "$PLUGIN" \
    -o "$DIR/byoc_plug.tar"
expect 0 "wrote" "$KILN" compile "$BERT.onnx" --plugin "$PLUGIN" --target "ccplug, llvm" \
    -o "$DIR/byoc_plug.tar"
expect 0 "ccplug" "$KILN" inspect "$DIR/byoc_plug.tar"
grep -Eq "^  ccplug +[0-9]+ calls?" "$OUT" || fail "ccplug: nothing offloaded"
expect 0 "" "$KILN" run "$DIR/byoc_plug.tar" --inputs "$DIR/byoc_bert_in.npz" \
    --outputs "$DIR/byoc_plug_out.npz"
expect 0 "" "$NPZ" compare "$DIR/byoc_plug_out.npz" "$DIR/byoc_bert_ref.npz" 1e-4

# errors: a bad target exits 2 with the reason
expect 2 "unknown external backend 'nosuch' (known:" "$KILN" compile "$DIGITS" \
    --target "nosuch, llvm" -o "$DIR/byoc_x.tar"
expect 2 "'dn nl' is not an external backend's name" "$KILN" compile "$DIGITS" \
    --target "dn nl, llvm" -o "$DIR/byoc_x.tar"
expect 2 "only the last part" "$KILN" compile "$DIGITS" --target "llvm, dnnl" -o "$DIR/byoc_x.tar"
for b in dnnl blas; do
    case " $BACKENDS " in
    *" $b "*) ;;
    *) expect 2 "this kiln was built without it" "$KILN" compile "$DIGITS" --target "$b, llvm" \
        -o "$DIR/byoc_x.tar" ;;
    esac
done

[ "$fails" -eq 0 ] && echo "cli byoc: all checks passed"
[ "$fails" -eq 0 ]
