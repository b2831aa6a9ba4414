#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the VM test need.
# Idempotent; runs as root on a fresh machine (CI runs it from .ci/run).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libboost1.81-dev libboost-json1.81-dev libboost-context1.81-dev
  libspdlog-dev libfmt-dev libsystemd-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libtomlplusplus-dev libxxhash-dev libssl-dev
  clang libclang-rt-14-dev clang-format clang-tidy
  nodejs curl python3 python3-requests
  debhelper dpkg-dev fakeroot lintian systemd
  qemu-system-x86 qemu-system-arm qemu-utils debootstrap e2fsprogs
  kmod cpio  # the arm64 VM guest's initramfs, made on the host (packaging/vm/native-initramfs.sh)
)
# On amd64: the arm64 cross compiler, user-mode emulation for the arm64 test suites
# (scripts/test-arm64.sh) and the arm64 builds of the libraries the cross build links (Debian
# multiarch; the architecture is added below). An arm64 host builds and tests natively.
ARM64_CROSS=0
if [ "$(dpkg --print-architecture)" = amd64 ]; then
  ARM64_CROSS=1
  PACKAGES+=(
    g++-aarch64-linux-gnu qemu-user-static
    libboost1.81-dev:arm64 libboost-json1.81-dev:arm64 libboost-context1.81-dev:arm64 libspdlog-dev:arm64 libfmt-dev:arm64
    libsystemd-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64
    libtomlplusplus-dev:arm64 libxxhash-dev:arm64 libssl-dev:arm64
  )
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# nodejs from other repositories bundles npm; Debian's nodejs needs the npm package beside it.
command -v npm >/dev/null 2>&1 || missing+=(npm)

install_apt() {
  if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ "$ARM64_CROSS" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
install_apt

# The npm packages of the client tests (tests/clients: Claude Code, Codex CLI, opencode and the
# official SDKs, versions pinned in its package-lock.json), into tests/clients/node_modules.
# Installed only when the lock changed since the last install (npm writes node_modules/.package-lock.json).
# DS4D_SKIP_NPM=1 skips it (the client tests then skip, naming this step).
clients="$(cd "$(dirname "$0")/.." && pwd)/tests/clients"
if [ "${DS4D_SKIP_NPM:-0}" != 1 ]; then
  if [ ! -f "$clients/node_modules/.package-lock.json" ] ||
     [ "$clients/package-lock.json" -nt "$clients/node_modules/.package-lock.json" ]; then
    echo "install-deps: npm install in tests/clients (coding agents and SDKs, about 1.3 GB)"
    # npm install --no-save, not npm ci: npm 11 leaves opencode-ai's foreign-platform optional
    # packages out of the lock, and npm ci then refuses the lock as out of sync ("Missing:
    # opencode-darwin-arm64@"). install keeps every version the lock pins and writes nothing.
    npm install --prefix "$clients" --no-save --no-audit --no-fund --loglevel=error
  else
    echo "install-deps: tests/clients npm packages present"
  fi
fi
