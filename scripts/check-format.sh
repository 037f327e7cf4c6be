#!/usr/bin/env bash
# check-format.sh: the C sources follow .clang-format (clang-format 14, as
# Debian 12 ships it). Lists every file that does not and exits 1; with
# --fix, formats them in place instead.
#
#   scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || { echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2; exit 2; }
fix=0
[ "${1:-}" = --fix ] && fix=1
bad=()
while IFS= read -r f; do
  if [ $fix = 1 ]; then
    clang-format -i "$f"
  elif ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done < <(git ls-files '*.c' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) differ from .clang-format (scripts/check-format.sh --fix formats them):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
[ $fix = 1 ] || echo "check-format: $(git ls-files '*.c' '*.h' | wc -l) files follow .clang-format"
