#!/usr/bin/env bash
# Formats the project's C++ sources with .clang-format (clang-format 14), or with --check lists
# the files that are not formatted and exits 1. Arguments after the option limit it to those
# files or folders; by default every tracked *.cpp/*.hpp/*.h/*.cu/*.cuh is taken.
#   scripts/format.sh                   format the whole tree in place
#   scripts/format.sh --check           exit 1 (naming the files) if any file would change
#   scripts/format.sh engine/quant      format one folder
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$CLANG_FORMAT" ]; then
  echo "format.sh: clang-format not found (apt install clang-format)" >&2
  exit 2
fi
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
mapfile -d '' files < <(git ls-files -z -- "${@:-.}" | grep -zE '\.(cpp|hpp|h|cc|cu|cuh)$' || true)
if [ ${#files[@]} -eq 0 ]; then
  echo "format.sh: no C++ files under ${*:-.}" >&2
  exit 2
fi
if [ "$check" -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$CLANG_FORMAT" -i --style=file
  exit 0
fi
# One clang-format per 100 files (its start-up, not the formatting, was most of the time when it
# ran once a file); a batch that fails is checked file by file to name the files.
bad=()
for ((i = 0; i < ${#files[@]}; i += 100)); do
  batch=("${files[@]:i:100}")
  "$CLANG_FORMAT" --style=file --dry-run --Werror "${batch[@]}" >/dev/null 2>&1 && continue
  for f in "${batch[@]}"; do
    "$CLANG_FORMAT" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "format.sh: ${#bad[@]} of ${#files[@]} files need scripts/format.sh" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
