# expect.sh: sourced by the CLI tests. Set OUT (a scratch file) first; fails
# counts the failed checks.
fails=0

# expect RC PATTERN CMD...: run CMD, check its exit status and that its
# stdout+stderr contains the fixed string PATTERN.
expect() {
    want_rc=$1 pattern=$2
    shift 2
    "$@" >"$OUT" 2>&1
    rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        echo "FAIL: '$*' exited $rc, expected $want_rc"; cat "$OUT"; fails=$((fails + 1))
    elif [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$OUT"; then
        echo "FAIL: '$*' output lacks '$pattern':"; cat "$OUT"; fails=$((fails + 1))
    fi
}
