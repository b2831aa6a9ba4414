#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest
# (unit tests, conformance vectors, short fuzz runs, end-to-end tests, and the Debian VM test
# when qemu-system-x86_64 is present), then the arm64 suites: a cross build run under qemu-user
# (scripts/test-arm64.sh; DS4D_SKIP_ARM64=1 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The fuzzers too, compiled by the same ninja run (docs/faults.md §fuzzing).
BUILD_TARGETS="all ds4_fuzzers" bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout "${DS4D_TEST_TIMEOUT:-1200}" -j "${JOBS:-$(nproc)}" "$@"
if [ "${DS4D_SKIP_ARM64:-0}" != 1 ]; then
  bash scripts/test-arm64.sh
fi
