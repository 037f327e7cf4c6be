#!/bin/sh
# test_compile_cache.sh KILN MODEL TESTDIR: `kiln compile` and the kernel
# cache (docs/COMPILE_TIME.md), in a cache folder of this test's own (never
# the user's): a second compile takes every part from the cache and writes
# the same bytes; a corrupt entry is caught, compiled again, and the
# package is still the same; with the cache off nothing is stored and the
# package is the same; the size limit holds; a folder others may write is
# not used; --time-passes names the phases; progress shows on a terminal
# only.
KILN=$1
MODEL=$2
DIR=$3
OUT=$DIR/cli_cache_out
. "$(dirname "$0")/expect.sh"
C=$DIR/cli_cache_home
rm -rf "$C" "$DIR"/cli_cache_*.tar "$DIR"/cli_cache_*.txt
mkdir -p "$C"
export XDG_CACHE_HOME="$C"
unset KILN_CACHE KILN_CACHE_SIZE KILN_PROGRESS_AFTER
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
entries() { find "$1" -type f ! -name '.tmp-*' | wc -l; }
# "N parts, H from the cache" of the last --time-passes output: prints "N H"
parts_hits() { sed -n 's/.*compile C *\([0-9]*\) parts\{0,1\}, \([0-9]*\) from the cache.*/\1 \2/p' "$OUT"; }

# a first compile fills the cache, a second hits every part: same bytes
expect 0 "wrote" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_a.tar" --time-passes
set -- $(parts_hits)
[ "${1:-x}" != x ] && [ "$2" = 0 ] || fail "first compile: want 0 parts from the cache, got '$*'"
for phase in "import" "pass FoldConstant" "lower" "kernels," "distinct" "render" "compile C" \
    "package" "total"; do
    grep -qF -- "$phase" "$OUT" || fail "--time-passes lacks '$phase'"
done
[ "$(entries "$C")" -gt 0 ] || fail "the first compile stored nothing in $C"
expect 0 "wrote" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_b.tar" --time-passes
set -- $(parts_hits)
[ "${1:-x}" != x ] && [ "$1" = "$2" ] || fail "second compile: want every part from the cache, got '$*'"
cmp -s "$DIR/cli_cache_a.tar" "$DIR/cli_cache_b.tar" || fail "a cache hit wrote another package"

# every entry damaged (one byte changed, or cut short): each is caught,
# compiled again and stored again, and the package is the same
i=0
for f in $(find "$C" -type f ! -name '.tmp-*'); do
    i=$((i + 1))
    if [ $((i % 2)) = 0 ]; then
        size=$(wc -c <"$f")
        head -c $((size - 7)) "$f" >"$f.cut" && mv "$f.cut" "$f"
    else
        printf 'X' | dd of="$f" bs=1 seek=200 conv=notrunc 2>/dev/null
    fi
done
expect 0 "is corrupt" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_c.tar" --time-passes
set -- $(parts_hits)
[ "${2:-x}" = 0 ] || fail "a corrupt entry was used ('$*' from the cache)"
cmp -s "$DIR/cli_cache_a.tar" "$DIR/cli_cache_c.tar" || fail "the recompile after corruption differs"
expect 0 "wrote" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_d.tar" --time-passes
set -- $(parts_hits)
[ "${1:-x}" != x ] && [ "$1" = "$2" ] || fail "the repaired entries were not stored again ('$*')"

# the cache off (KILN_CACHE=0 or --no-cache): nothing stored, same package
rm -rf "$C" && mkdir -p "$C"
expect 0 "wrote" env KILN_CACHE=0 "$KILN" compile "$MODEL" -o "$DIR/cli_cache_e.tar" --time-passes
grep -q "from the cache" "$OUT" && fail "KILN_CACHE=0 still reports the cache"
expect 0 "wrote" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_f.tar" --no-cache
[ "$(entries "$C")" = 0 ] || fail "the cache off still stored entries"
cmp -s "$DIR/cli_cache_a.tar" "$DIR/cli_cache_e.tar" || fail "KILN_CACHE=0 wrote another package"
cmp -s "$DIR/cli_cache_a.tar" "$DIR/cli_cache_f.tar" || fail "--no-cache wrote another package"

# the size limit: with 1 byte, a compile leaves no entry behind
expect 0 "wrote" env KILN_CACHE_SIZE=1 "$KILN" compile "$MODEL" -o "$DIR/cli_cache_g.tar"
[ "$(entries "$C")" = 0 ] || fail "KILN_CACHE_SIZE=1 kept $(entries "$C") entries"
expect 0 "is not a size" env KILN_CACHE_SIZE=lots "$KILN" compile "$MODEL" -o "$DIR/cli_cache_g.tar"

# a cache folder others may write is not used (its entries could be anyone's)
chmod 0777 "$C/kiln"
expect 0 "not using the kernel cache" "$KILN" compile "$MODEL" -o "$DIR/cli_cache_h.tar"
chmod 0700 "$C/kiln"

# progress: nothing on stderr when it is not a terminal
KILN_PROGRESS_AFTER=0 "$KILN" compile "$MODEL" -o "$DIR/cli_cache_i.tar" >/dev/null \
    2>"$DIR/cli_cache_err.txt" || fail "compile failed"
[ -s "$DIR/cli_cache_err.txt" ] && fail "progress written to a stderr that is not a terminal: $(cat "$DIR/cli_cache_err.txt")"
# on a terminal (script(1) gives one), the phase and its count (a phase is
# drawn when it starts, and compile C starts at 0 of its parts)
if command -v script >/dev/null 2>&1; then
    KILN_PROGRESS_AFTER=0 script -qec "'$KILN' compile '$MODEL' -o '$DIR/cli_cache_j.tar'" \
        /dev/null >"$DIR/cli_cache_tty.txt" 2>&1 </dev/null || fail "compile on a terminal failed"
    grep -q "kiln compile: compile C [0-9]*/[0-9]*" "$DIR/cli_cache_tty.txt" ||
        fail "no progress on a terminal: $(cat "$DIR/cli_cache_tty.txt")"
fi

if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
echo "all compile cache cli checks passed"
