#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks) over the project's own C++ sources in a build's
# compile_commands.json: every .cpp under engine/ gateway/ host/ config/ daemon/ supervisor/
# ds4ctl/, not tests, fuzzers or dependencies. Exits non-zero on any finding.
#   scripts/clang-tidy.sh [BUILD_DIR] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
JOBS=${2:-$(nproc)}
RUN=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
TIDY=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$RUN" ] || [ -z "$TIDY" ]; then
  echo "clang-tidy.sh: clang-tidy not found (apt install clang-tidy)" >&2
  exit 2
fi
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "clang-tidy.sh: no $BUILD_DIR/compile_commands.json (configure with CMake first)" >&2
  exit 2
fi
# run-clang-tidy takes regexes matched against the absolute source paths.
root=$(pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
"$RUN" -quiet -clang-tidy-binary "$TIDY" -p "$BUILD_DIR" -j "$JOBS" \
  "^$root/(engine|gateway|host|config|daemon|supervisor|ds4ctl)/.*\.cpp$" >"$out" 2>&1 || status=$?
grep -v -e '^[0-9]* warnings\? generated\.$' -e '^Suppressed [0-9]* warnings' -e 'Use -header-filter=' \
  -e '^clang-tidy-14 ' -e '^Running clang-tidy' -e '^$' "$out" || true
[ "$status" -eq 0 ] && echo "clang-tidy.sh: no findings"
exit "$status"
