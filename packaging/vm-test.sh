#!/usr/bin/env bash
# vm-test.sh: install the ds4d package in a real Debian 12 VM and check the service end to end.
#
# Host side of the VM install test. It builds or reuses the cached guest image
# (packaging/vm/build-image.sh, with the package's runtime dependencies preinstalled because the
# guest has no network), puts the .deb and the guest check script on a small second disk, boots
# the image under qemu TCG with -kernel/-initrd and the console on the serial line, and reads
# the serial log back: the guest prints one "DS4D-VM-CHECK PASS|FAIL name" line per check and a
# final "DS4D-VM-SUMMARY N passed, M failed", then powers off. The VM never gets a network
# device; every check talks to 127.0.0.1 inside the guest.
#
# The guest's architecture is the package's: amd64 boots under qemu-system-x86_64, arm64 under
# qemu-system-aarch64 -M virt -cpu max (TCG, Linux's PL011 serial console). DS4D_VM_PROBE=install
# runs only the install probe (install, active, health, one chat completion, the earlyoom
# drop-in, swap, oom_score_adj) and leaves out the stop/restart/crash/memory-pressure/purge
# checks -- for guests whose emulation is too slow for the whole list in CI.
#
# DS4D_VM_REQUIRE=1 turns every "cannot run here" into a failure naming what is missing (the
# arm64 test in the test command: scripts/install-deps.sh installs all of it, so a missing piece
# is a broken machine, not a reason to pass quietly).
#
# DS4D_VM_IMAGE_ONLY=1 only builds (or finds) the cached guest image and exits 0, also where the
# test cannot run (the VM test itself then skips or fails saying why): the ctest fixtures
# packaging_vm_image / packaging_vm_arm64_image, which build the image (network and one core, most
# of the time from nothing) while other tests run, before the VM test that has the machine alone.
#
# It prints what each phase took: "vm-test: image ready in N s", "guest booted N s after qemu
# started", "probe took N s" (the checks, from the boot to the summary) and the total.
#
# Usage: vm-test.sh DEB CACHE_DIR
# Exit status: 0 all checks passed, 1 a check failed or the guest did not report,
# 77 the test cannot run here (no qemu, or no guest image can be built).
set -euo pipefail
t_start=$(date +%s)
skip() {  # skip REASON: exit 77, or 1 under DS4D_VM_REQUIRE=1 (0 for DS4D_VM_IMAGE_ONLY=1)
  if [ "${DS4D_VM_IMAGE_ONLY:-0}" = 1 ]; then
    echo "vm-test: no image built: $* (the VM test reports it)"
    exit 0
  fi
  if [ "${DS4D_VM_REQUIRE:-0}" = 1 ]; then
    echo "vm-test: FAIL: $* (DS4D_VM_REQUIRE=1: scripts/install-deps.sh installs what this test needs)"
    exit 1
  fi
  echo "vm-test: SKIP: $*"
  exit 77
}

here=$(cd "$(dirname "$0")" && pwd)
deb=${1:?usage: vm-test.sh DEB CACHE_DIR}
cache_dir=${2:?usage: vm-test.sh DEB CACHE_DIR}
boot_timeout=${DS4D_VM_TIMEOUT:-1200}

for tool in qemu-img mkfs.ext4 dpkg-deb; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done
[ -f "$deb" ] || { echo "vm-test: package $deb not found (build the deb target)"; exit 1; }
arch=$(dpkg-deb -f "$deb" Architecture)
case "$arch" in
  amd64)
    qemu=(qemu-system-x86_64 -accel tcg -cpu max)
    console=ttyS0 cc=${CC:-cc} ;;
  arm64)
    # pauth-impdef: QEMU's own pointer-authentication hash instead of the architected QARMA
    # cipher, which dominates TCG time for a -cpu max guest (the guest sees the same features).
    qemu=(qemu-system-aarch64 -M virt -accel tcg -cpu max,pauth-impdef=on)
    console=ttyAMA0 cc=aarch64-linux-gnu-gcc ;;
  *) skip "no VM for architecture '$arch'" ;;
esac
command -v "${qemu[0]}" >/dev/null || skip "${qemu[0]} is not installed"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
mkdir -p "$cache_dir"
cache_dir=$(cd "$cache_dir" && pwd)

# Runtime dependencies of the package: the first alternative of each Depends entry, without
# version constraints. They go into the image because dpkg -i in the guest cannot download.
# A virtual name (libspdlog1.10-fmt9) is replaced by the first real package that provides it,
# since debootstrap installs only real packages.
real_package() {
  local policy
  policy=$(apt-cache policy "$1" 2>/dev/null)  # not piped into grep -q: SIGPIPE under pipefail
  if grep -q 'Candidate: [^(]' <<<"$policy"; then
    echo "$1"
  else
    apt-cache showpkg "$1" 2>/dev/null | sed -n '/^Reverse Provides:/,$p' | awk 'NR == 2 { print $1 }' \
      | grep . || echo "$1"
  fi
}
mapfile -t deps < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' \
                    -e 's/:any//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u \
                    | while read -r d; do real_package "$d"; done | sort -u)
echo "vm-test: package dependencies preinstalled in the image: ${deps[*]}"

set +e
image_dir=$(DS4D_VM_ARCH=$arch bash "$here/vm/build-image.sh" "$cache_dir" "${deps[@]}" | tail -n 1)
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 77 ] && skip "cannot build the $arch guest image here (build-image.sh said why above)"
[ "$rc" -eq 0 ] || { echo "vm-test: guest image build failed"; exit 1; }
echo "vm-test: image ready in $(( $(date +%s) - t_start )) s"
[ "${DS4D_VM_IMAGE_ONLY:-0}" = 1 ] && exit 0

run_dir="$cache_dir/run"
rm -rf "$run_dir"
mkdir -p "$run_dir/payload"
cp "$deb" "$here/vm/guest-checks.sh" "$run_dir/payload/"
[ "${DS4D_VM_PROBE:-all}" = install ] && echo install > "$run_dir/payload/probe"
# The memory hog of the memory-pressure checks, static because the guest has no compiler.
if ! "$cc" -O2 -static -o "$run_dir/payload/ds4d-memhog" "$here/vm/memhog.c"; then
  echo "vm-test: cannot build the static memory hog (packaging/vm/memhog.c)"
  exit 1
fi
payload_mib=$(( $(du -sm "$run_dir/payload" | cut -f1) + 16 ))
mkfs.ext4 -q -F -L ds4d-payload -E root_owner=0:0 -d "$run_dir/payload" "$run_dir/payload.img" "${payload_mib}M" >/dev/null
# A copy-on-write overlay keeps the cached image pristine for the next run.
qemu-img create -q -f qcow2 -b "$image_dir/rootfs.img" -F raw "$run_dir/overlay.qcow2"

serial="$run_dir/serial.log"
echo "vm-test: booting $image_dir ($arch, TCG, 2 vCPUs, 2 GiB); serial log $serial"
start=$(date +%s)
set +e
timeout --foreground "$boot_timeout" "${qemu[@]}" -smp 2 -m 2048 \
  -kernel "$image_dir/vmlinuz" -initrd "$image_dir/initrd.img" \
  -append "root=/dev/vda rw console=$console quiet loglevel=3 systemd.show_status=0 panic=-1" \
  -drive file="$run_dir/overlay.qcow2",if=virtio,format=qcow2 \
  -drive file="$run_dir/payload.img",if=virtio,format=raw,readonly=on \
  -nic none -display none -monitor none -serial file:"$serial" -no-reboot
qemu_rc=$?
set -e
elapsed=$(( $(date +%s) - start ))

tr -d '\r' < "$serial" | grep -a '^DS4D-VM' || true
# A fault report's frames in ds4d name offsets in the stripped packaged binary; the build tree's
# unstripped ds4d (DS4D_VM_SYMBOLS, default beside the package's build) names their functions.
symbols=${DS4D_VM_SYMBOLS:-$(dirname "$deb")/../daemon/ds4d}
offsets=$(tr -d '\r' < "$serial" | sed -n 's/^DS4D-VM-CRASH .*#\([0-9]*\) .*ds4d(+\(0x[0-9a-f]*\)).*/\1 \2/p')
if [ -n "$offsets" ] && [ -x "$symbols" ] && command -v addr2line >/dev/null; then
  echo "vm-test: the fault's frames in ds4d, from $symbols:"
  while read -r frame offset; do
    echo "vm-test:   #$frame $offset $(addr2line -f -C -e "$symbols" "$offset" | head -n 1)"
  done <<<"$offsets"
fi
summary=$(tr -d '\r' < "$serial" | grep -a '^DS4D-VM-SUMMARY' | tail -n 1 || true)
if [ "$qemu_rc" -eq 124 ]; then
  echo "vm-test: the guest did not power off within ${boot_timeout}s; last serial lines:"
  tail -n 40 "$serial"
  exit 1
fi
if [ -z "$summary" ]; then
  echo "vm-test: no summary from the guest (qemu exit $qemu_rc after ${elapsed}s); last serial lines:"
  tail -n 40 "$serial"
  exit 1
fi
failed=$(sed -n 's/.* \([0-9][0-9]*\) failed.*/\1/p' <<<"$summary")
# The guest's uptime when its check unit started (DS4D-VM-BOOTED) splits the run in two.
booted=$(tr -d '\r' < "$serial" | sed -n 's/^DS4D-VM-BOOTED \([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$booted" ]; then
  echo "vm-test: guest booted ${booted} s after kernel start; probe took $(( elapsed - booted )) s"
fi
echo "vm-test: guest finished in ${elapsed}s: ${summary#DS4D-VM-SUMMARY }"
echo "vm-test: total $(( $(date +%s) - t_start )) s"
[ "${failed:-1}" -eq 0 ]
