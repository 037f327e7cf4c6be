#!/bin/sh
# test_package.sh KILN TESTDIR: packages at the command line (issue 11),
# on the packages test_runtime_package wrote in TESTDIR: `kiln inspect`
# never runs a package's code (pkg_ctor.tar's mod.so has an ELF constructor
# that aborts when KILN_CTOR_ABORT is set and creates $KILN_CTOR_MARK);
# `kiln run` refuses a package without a manifest or with a wrong digest;
# loading leaves nothing in $TMPDIR, even when the process dies.
KILN=$1
DIR=$2
OUT=$DIR/cli_package_out
. "$(dirname "$0")/expect.sh"
MARK=$DIR/cli_ctor.mark
FRESH=$DIR/cli_package_tmp
rm -rf "$MARK" "$FRESH"
mkdir -p "$FRESH"

# inspect reads the plan and the manifest; the constructor never runs
expect 0 "x: float32[4]" env KILN_CTOR_MARK="$MARK" "$KILN" inspect "$DIR/pkg_ctor.tar"
expect 0 "  y                                        mul" "$KILN" inspect "$DIR/pkg_ctor.tar"
expect 0 "target: llvm -test" "$KILN" inspect "$DIR/pkg_ctor.tar"
expect 0 "functions (1, from mod.so's kiln_module_meta)" "$KILN" inspect "$DIR/pkg_ctor.tar"
expect 0 "  mod.so " "$KILN" inspect "$DIR/pkg_ctor.tar"
expect 0 "members (manifest verified)" env KILN_CTOR_ABORT=1 "$KILN" inspect "$DIR/pkg_ctor.tar"
if [ -e "$MARK" ]; then echo "FAIL: kiln inspect ran mod.so's constructor"; fails=$((fails + 1)); fi
# the control: run loads mod.so, so the constructor runs
expect 0 "y: float32[4]" env KILN_CTOR_MARK="$MARK" "$KILN" run "$DIR/pkg_ctor.tar" \
    --inputs "$DIR/pkg_inputs.npz"
if [ ! -e "$MARK" ]; then echo "FAIL: kiln run did not run the constructor"; fails=$((fails + 1)); fi

# a crash while loading leaves nothing in TMPDIR (mod.so is loaded from memory)
env TMPDIR="$FRESH" KILN_CTOR_ABORT=1 "$KILN" run "$DIR/pkg_ctor.tar" \
    --inputs "$DIR/pkg_inputs.npz" >"$OUT" 2>&1
rc=$?
if [ "$rc" -lt 128 ]; then echo "FAIL: the aborting constructor did not abort (rc $rc)"; fails=$((fails + 1)); fi
expect 0 "y: float32[4]" env TMPDIR="$FRESH" "$KILN" run "$DIR/pkg_good.tar" \
    --inputs "$DIR/pkg_inputs.npz"
if [ -n "$(ls -A "$FRESH")" ]; then
    echo "FAIL: files left in TMPDIR:"; ls -la "$FRESH"; fails=$((fails + 1))
fi

# refused before loading, naming the package and the member
for cmd in run inspect; do
    args=""
    [ $cmd = run ] && args="--inputs $DIR/pkg_inputs.npz"
    expect 1 "pkg_nomanifest.tar: no manifest.json: the package was written by an older kiln" \
        "$KILN" $cmd "$DIR/pkg_nomanifest.tar" $args
    expect 1 "(\`kiln compile\` again)" "$KILN" $cmd "$DIR/pkg_nomanifest.tar" $args
    expect 1 "pkg_digest.tar: member mod.so does not match its SHA-256 in the manifest" \
        "$KILN" $cmd "$DIR/pkg_digest.tar" $args
done

if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
echo "all package cli checks passed"
