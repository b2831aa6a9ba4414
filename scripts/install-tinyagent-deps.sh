#!/usr/bin/env bash
# Installs the Debian 12 packages tools/tinyagent needs (training the embedded agent model and
# regenerating its parity vectors). Neither the C++ build nor CI needs them.
# libopenblas0-pthread matters: without it Debian's torch falls back to the reference BLAS, which
# is ~30x slower on a 1024x1024 matmul.
set -euo pipefail

PACKAGES=(python3-torch python3-numpy libopenblas0-pthread)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-tinyagent-deps: missing packages (${missing[*]}); run this script as root" >&2
    exit 1
  fi
  echo "install-tinyagent-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian selects the BLAS through alternatives; make sure the OpenBLAS one is active.
for alt in libblas.so.3-x86_64-linux-gnu libblas.so.3-aarch64-linux-gnu; do
  if update-alternatives --query "$alt" >/dev/null 2>&1; then
    cur=$(update-alternatives --query "$alt" | sed -n 's/^Value: //p')
    case "$cur" in
      *openblas*) ;;
      *)
        target=$(update-alternatives --list "$alt" | grep openblas-pthread | head -n1 || true)
        if [ -n "$target" ] && [ "$(id -u)" -eq 0 ]; then update-alternatives --set "$alt" "$target"; fi
        ;;
    esac
  fi
done
/usr/bin/python3 -c 'import torch; print("install-tinyagent-deps: torch", torch.__version__)'
