#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest
# (unit tests, conformance vectors, short fuzz runs, end-to-end tests, and the Debian VM test
# when qemu-system-x86_64 is present).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout "${DS4D_TEST_TIMEOUT:-1200}" -j "${JOBS:-$(nproc)}" "$@"
