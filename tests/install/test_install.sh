#!/bin/sh
# test_install.sh BUILD SOURCE CC [FLAGS]: installs the build tree BUILD with
# `cmake --install` into a fresh prefix outside it, checks the layout, then
# builds programs outside kiln's tree against the installed files only and
# runs them:
#   - with find_package(kiln) (consumer/CMakeLists.txt): a TE vector add
#     linked with kiln::kiln and with kiln::kiln_static, and a runtime-only
#     program linked with kiln::kiln_runtime and kiln::kiln_runtime_static
#     that loads the module the first one saved;
#   - with `CC $(pkg-config --cflags --libs kiln)` (and kiln_runtime), and
#     the static archives with pkg-config --static's link dependencies.
# CC and FLAGS are the compiler and the instrumentation the libraries were
# built with (an ASan build's libraries need ASan in the program too).
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cc=$3
flags=${4:-}
here=$src/tests/install

fail() {
    echo "test_install: $*" >&2
    exit 1
}

base=${TMPDIR:-/tmp}
case "$base/" in "$build"/*) base=/tmp ;; esac
work=$(mktemp -d "$base/kiln-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "cmake --install failed"; }

# ---- the layout
pc=$(find "$prefix" -name kiln.pc)
[ -n "$pc" ] || fail "no kiln.pc under $prefix"
libdir=$(dirname "$(dirname "$pc")")
for h in "$src"/include/kiln/*.h; do
    [ -f "$prefix/include/kiln/$(basename "$h")" ] || fail "header $(basename "$h") not installed"
done
for f in "$libdir/libkiln.so" "$libdir/libkiln.a" "$libdir/libkiln_runtime.so" \
    "$libdir/libkiln_runtime.a" "$libdir/pkgconfig/kiln_runtime.pc" \
    "$libdir/cmake/kiln/kilnConfig.cmake" "$libdir/cmake/kiln/kilnConfigVersion.cmake" \
    "$libdir/cmake/kiln/kilnTargets.cmake"; do
    [ -e "$f" ] || fail "$f not installed"
done
[ -x "$prefix/bin/kiln" ] || fail "the kiln CLI is not installed"
# nothing installed names the build tree or the source tree
if grep -rl -e "$build" -e "$src" "$libdir/cmake" "$libdir/pkgconfig" >/dev/null 2>&1; then
    fail "installed package files name the build or source tree: $(grep -rl -e "$build" -e "$src" "$libdir/cmake" "$libdir/pkgconfig")"
fi
"$prefix/bin/kiln" compile --help >"$work/help.txt" 2>&1 || true
grep -q "usage: kiln compile" "$work/help.txt" || { cat "$work/help.txt" >&2; fail "the installed CLI does not run"; }

run() {
    "$@" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; fail "$* failed"; }
}

# ---- find_package(kiln)
cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log" >&2; fail "find_package(kiln) failed"; }
cmake --build "$work/consumer" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; fail "building against the CMake package failed"; }
run "$work/consumer/vadd_shared" "$work/vadd.so"
run "$work/consumer/vadd_static"
run "$work/consumer/runtime_only_shared" "$work/vadd.so"
run "$work/consumer/runtime_only_static" "$work/vadd.so"
for p in vadd_static runtime_only_static; do
    if ldd "$work/consumer/$p" 2>/dev/null | grep -q libkiln; then
        fail "$p links a shared libkiln"
    fi
done
ldd "$work/consumer/vadd_shared" | grep -q "$libdir/libkiln.so" ||
    fail "vadd_shared does not use the installed libkiln.so"

# ---- pkg-config
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config is missing (scripts/install-deps.sh installs it)"
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$work/vadd_pc" "$here/consumer/vadd.c" $(pkg-config --cflags --libs kiln) \
    -Wl,-rpath,"$libdir" || fail "cc \$(pkg-config --cflags --libs kiln) failed"
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$work/runtime_pc" "$here/consumer/runtime_only.c" \
    $(pkg-config --cflags --libs kiln_runtime) -Wl,-rpath,"$libdir" ||
    fail "cc \$(pkg-config --cflags --libs kiln_runtime) failed"
# the archives, with the link dependencies pkg-config --static lists
static_libs=$(pkg-config --static --libs kiln |
    sed -E "s#-lkiln_runtime( |\$)#$libdir/libkiln_runtime.a\\1#; s#-lkiln( |\$)#$libdir/libkiln.a\\1#")
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$work/vadd_pc_static" "$here/consumer/vadd.c" $(pkg-config --cflags kiln) \
    $static_libs || fail "linking libkiln.a with pkg-config --static's flags failed: $static_libs"
run "$work/vadd_pc"
run "$work/runtime_pc" "$work/vadd.so"
run "$work/vadd_pc_static"
echo "test_install: installed into a temporary prefix; 7 outside programs built (find_package, pkg-config, shared and static) and ran"
