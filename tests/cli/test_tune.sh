#!/bin/sh
# test_tune.sh KILN NPZ_TOOL MODELS TESTDIR: `kiln tune` and
# `kiln compile --tuning-records` (docs/tuning.md), quickly:
#   - a tiny model (the digits CNN) tuned with a few trials writes records,
#     a summary and an SVG plot; a build with the records says how many
#     kernels it tuned, and computes what the untuned build computes;
#   - a second run with the same records file resumes: nothing is measured
#     twice, and more trials add only new points;
#   - corrupt lines are skipped with a warning naming the first line;
#   - records for another target are ignored, with a note;
#   - a crashing and a hanging candidate (the runner's test hook) are
#     recorded with their error codes and the run goes on;
#   - two tasks of a narrow ResNet-50 tuned with the xgb, ga, random and
#     grid searches, and the tuned build's logits match the model's
#     reference outputs;
#   - bad flags are errors that name them.
KILN=$1
NPZ=$2
MODELS=$3
DIR=$4/cli_tune
OUT=$DIR/out.txt
. "$(dirname "$0")/expect.sh"
rm -rf "$DIR"
mkdir -p "$DIR"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
lines() { wc -l <"$1" | tr -d ' '; }
DIGITS=$MODELS/digits/digits_cnn.onnx
SHAPE="input:[1,1,8,8]"
R=$DIR/digits.json

# ---- a first run: records, summary, plot
expect 0 "estimated time of the default build" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" -o "$R" \
    --trials 6 --log-plot "$DIR/curve.svg"
grep -qF "[Task  1/" "$OUT" || fail "no per-task progress"
grep -qF "Current/Best:" "$OUT" || fail "no Current/Best progress line"
grep -qF "heaviest first" "$OUT" || fail "no task list"
grep -qE "cost model: (xgboost|nearest-neighbour \(this build has no XGBoost\))" "$OUT" ||
    fail "the cost model is not named"
[ -s "$R" ] || fail "no records written"
n1=$(lines "$R")
[ "$n1" -ge 6 ] || fail "want at least 6 record lines, got $n1"
grep -q '"result": \[\[[0-9]' "$R" || fail "no measured record"
grep -qF '<svg' "$DIR/curve.svg" && grep -qF '<polyline' "$DIR/curve.svg" ||
    fail "the plot is not an SVG with curves"

# ---- the tuned build: a note, and the same outputs as the untuned one
expect 0 "distinct kernels tuned from" "$KILN" compile "$DIGITS" --input-shapes "$SHAPE" \
    --tuning-records "$R" -o "$DIR/tuned.tar"
grep -q " 0 of " "$OUT" && fail "the tuned build used no record"
expect 0 "wrote" "$KILN" compile "$DIGITS" --input-shapes "$SHAPE" -o "$DIR/plain.tar"
expect 0 "" "$KILN" run "$DIR/plain.tar" --fill random --outputs "$DIR/plain_out.npz"
expect 0 "" "$KILN" run "$DIR/tuned.tar" --fill random --outputs "$DIR/tuned_out.npz"
expect 0 "" "$NPZ" compare "$DIR/tuned_out.npz" "$DIR/plain_out.npz" 1e-5

# ---- resume: the same trials again measure nothing; more trials add points
expect 0 "resuming from" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" -o "$R" --trials 6
[ "$(lines "$R")" = "$n1" ] || fail "a resumed run with the same trials measured again"
expect 0 "resuming from" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" -o "$R" --trials 9
n2=$(lines "$R")
[ "$n2" -gt "$n1" ] || fail "more trials added no records ($n1 -> $n2)"
# the search never measures a config twice; the confirmation rounds (build
# time 0.000) measure the best few again, in turn with the default
dups=$(grep -v '\], [0-9]*, 0\.000, ' "$R" | sed 's/"result".*//' | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || fail "$dups configs measured twice by the search"

# ---- corrupt lines: skipped with a warning, the rest still used
C=$DIR/corrupt.json
{ echo 'not json at all'; cat "$R"; echo '{"input": ["x"], "config": 3}'; echo '{"input": ['; } >"$C"
expect 0 "malformed record lines skipped (the first in $C: line 1)" "$KILN" tune "$DIGITS" \
    --input-shapes "$SHAPE" -o "$C" --trials 9
expect 0 "3 malformed lines skipped (the first: line 1)" "$KILN" compile "$DIGITS" \
    --input-shapes "$SHAPE" --tuning-records "$C" -o "$DIR/corrupt.tar"

# ---- another target's records: ignored, with a note
W=$DIR/other.json
sed 's/"llvm -mtriple=x86_64-linux-gnu[^"]*"/"llvm -mtriple=x86_64-linux-gnu -mcpu=znver9"/' "$R" >"$W"
expect 0 "records for other targets ignored" "$KILN" compile "$DIGITS" --input-shapes "$SHAPE" \
    --tuning-records "$W" -o "$DIR/other.tar"
grep -qF " 0 of " "$OUT" || fail "another target's records were used"

# ---- a crashing and a hanging candidate: recorded, and the run goes on
F=$DIR/faults.json
expect 0 "estimated time of the default build" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" -o "$F" \
    --trials 4 --test-fault crash:3 --tasks 1
grep -qF "candidate failed (error 4)" "$OUT" || fail "the crash was not reported"
grep -q '"result": \[\[\], 4,' "$F" || fail "the crash was not recorded with error 4"
t0=$(date +%s)
expect 0 "estimated time of the default build" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" -o "$DIR/hang.json" \
    --trials 4 --test-fault hang:4 --tasks 1 --timeout 1
t1=$(date +%s)
grep -qF "no result within 1.0 s: killed" "$OUT" || fail "the hang was not reported"
grep -q '"result": \[\[\], 7,' "$DIR/hang.json" || fail "the hang was not recorded with error 7"
[ $((t1 - t0)) -lt 30 ] || fail "the hanging candidate held the run $((t1 - t0)) s"
# the default kernel itself crashing: the task is skipped, never tuned
expect 0 "skipped: the default kernel fails" "$KILN" tune "$DIGITS" --input-shapes "$SHAPE" \
    -o "$DIR/skip.json" --trials 4 --test-fault crash:1 --tasks 1

# ---- a narrow ResNet-50, two tasks, each search; the tuned build's logits
NARROW=$MODELS/e2e/resnet50_narrow.onnx
for tuner in xgb ga random grid; do
    expect 0 "estimated time of the default build" "$KILN" tune "$NARROW" -o "$DIR/narrow.json" --tasks 1,2 \
        --trials 12 --tuner $tuner --seed 3
done
expect 0 "2 of " "$KILN" compile "$NARROW" --tuning-records "$DIR/narrow.json" -o "$DIR/narrow.tar"
# every task once (its default): the layout choices (the Winograd tile of
# each 3x3 convolution) are made from the alternatives' times and applied
expect 0 "layout conv.winograd nn.conv2d of" "$KILN" tune "$NARROW" -o "$DIR/narrow.json" --trials 1
grep -q '"ops": "layout nn.conv2d' "$DIR/narrow.json" || fail "no layout records written"
expect 0 "calls' layout choices" "$KILN" compile "$NARROW" --tuning-records "$DIR/narrow.json" \
    -o "$DIR/narrow.tar"
expect 0 "" "$NPZ" pick "$MODELS/e2e/resnet50_narrow_io.npz" "$DIR/narrow_in.npz" input
expect 0 "" "$KILN" run "$DIR/narrow.tar" --inputs "$DIR/narrow_in.npz" --outputs "$DIR/narrow_out.npz"
expect 0 "" "$NPZ" pick "$MODELS/e2e/resnet50_narrow_io.npz" "$DIR/narrow_ref.npz" logits
expect 0 "" "$NPZ" compare "$DIR/narrow_out.npz" "$DIR/narrow_ref.npz" 1e-4

# ---- bad flags
expect 2 "tuner: 'fast' is not xgb, ga, random or grid" "$KILN" tune "$DIGITS" -o "$DIR/x.json" \
    --tuner fast
expect 2 "no records file given" "$KILN" tune "$DIGITS"
expect 2 "trials: '0' is not an integer" "$KILN" tune "$DIGITS" -o "$DIR/x.json" --trials 0
expect 2 "unknown option '--bogus'" "$KILN" tune "$DIGITS" -o "$DIR/x.json" --bogus
expect 1 "cannot read the tuning records" "$KILN" compile "$DIGITS" --input-shapes "$SHAPE" \
    --tuning-records "$DIR/missing.json" -o "$DIR/missing.tar"

[ "$fails" -eq 0 ] && echo "cli tune: all checks passed"
[ "$fails" -eq 0 ]
