#!/usr/bin/env bash
# The arm64 suites (ctest label arm64, tests/arm64/CMakeLists.txt): cross-builds the engine's
# unit and conformance binaries with cmake/toolchain-aarch64-linux-gnu.cmake into build-arm64
# and runs them under qemu-user, with and without the dotprod extension; then packs the arm64
# .deb and installs it in a Debian 12 arm64 VM under qemu-system-aarch64 (packaging_vm_arm64,
# as root; the guest image is cached in build-arm64/packaging/vm-cache; `-LE vm` leaves it out).
# Called by scripts/test.sh; arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The native suite's recording of the Fast logits, which the arm64 model suites compare with.
export DS4D_FAST_LOGITS_REFERENCE=${DS4D_FAST_LOGITS_REFERENCE:-$PWD/${BUILD_DIR:-build}/fast-logits.bin}
BUILD_DIR=${ARM64_BUILD_DIR:-build-arm64}
if [ "$(uname -m)" = aarch64 ]; then
  echo "test-arm64: arm64 host, the native suites are the arm64 ones"
  exit 0
fi
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null 2>&1 || { echo "test-arm64: $tool missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target arm64_suites
built=$(date +%s)
ctest --test-dir "$BUILD_DIR" -L arm64 --output-on-failure --timeout "${DS4D_TEST_TIMEOUT:-1200}" -j "${JOBS:-$(nproc)}" "$@"
echo "test-arm64: cross build $((built - start)) s, suites under qemu $(($(date +%s) - built)) s"
