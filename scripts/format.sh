#!/usr/bin/env bash
# Formats kiln's C++ sources with the pinned clang-format (Debian bookworm's
# clang-format 14, which scripts/install-deps.sh installs) and .clang-format.
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   list unformatted files and fail (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
expected="clang-format version 14."
if ! clang-format --version | grep -q "$expected"; then
  echo "format.sh: needs $expected (Debian's clang-format package), found: $(clang-format --version)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cc')
if [ "${1:-}" = "--check" ]; then
  if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/kiln-format.$$; then
    grep -o '^[^:]*\.\(cpp\|h\|cc\)' /tmp/kiln-format.$$ | sort -u | sed 's/^/unformatted: /'
    rm -f /tmp/kiln-format.$$
    echo "format.sh: run scripts/format.sh to format them" >&2
    exit 1
  fi
  rm -f /tmp/kiln-format.$$
  echo "format ok: ${#files[@]} files"
else
  clang-format -i "${files[@]}"
fi
