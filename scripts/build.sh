#!/usr/bin/env bash
# Configures and builds everything into build/ (Ninja, RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja ${DS4D_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
