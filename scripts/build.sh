#!/usr/bin/env bash
# Configures and builds everything into build/ (Ninja, Release = -O3; BUILD_TYPE overrides it,
# e.g. BUILD_TYPE=RelWithDebInfo for a debuggable build). BUILD_TARGETS names other targets
# (scripts/test.sh adds ds4_fuzzers, so ninja builds the fuzzers in parallel with the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# ccache, when installed, lets several checkouts of the tree share compiled objects.
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${LAUNCHER[@]}" ${DS4D_CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target ${BUILD_TARGETS:-all}
