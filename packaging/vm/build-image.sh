#!/usr/bin/env bash
# build-image.sh: build (or reuse) the Debian 12 guest image the VM install test boots.
#
# The image is a debootstrap minbase bookworm root filesystem with systemd as PID 1, a stock
# Debian kernel, earlyoom, the tools the guest checks call (curl, iproute2, procps) and every
# runtime library the ds4d package depends on, so that `dpkg -i ds4d_*.deb` works with no
# network inside the guest. It is packed into an ext4 image with `mkfs.ext4 -d` (no loop mounts,
# no privileges beyond what debootstrap itself needs) and the kernel and initrd are copied out
# beside it for qemu's -kernel/-initrd boot.
#
# The guest is generic: at boot a oneshot unit (ds4d-vm-check.service, installed here) mounts
# the second virtio disk, runs the check script it finds there and powers the machine off. So
# the image does not change when the package or the checks change. Two caches: the debootstrap
# tree under CACHE_DIR/rootfs-<packages hash>/ (the slow, network-bound part) and the packed
# image under CACHE_DIR/image-<packages hash>-<hash of the files that shape the guest>/.
# A rerun whose packages a cached image already holds prints that image's directory at once.
#
# DS4D_VM_ARCH (default: the host's architecture) picks the guest's Debian architecture. A
# foreign one (arm64 on an amd64 host) is bootstrapped in two stages: `debootstrap --foreign`
# unpacks on the host, and the second stage runs the guest's own dpkg chrooted under qemu-user
# (foreign-chroot.sh). Its tree gets no kernel package: the kernel and a small initramfs are made
# natively (native-initramfs.sh), so update-initramfs never runs under emulation. The serial
# console is ttyS0 on amd64 and ttyAMA0 (PL011) on arm64.
#
# Usage: build-image.sh CACHE_DIR [EXTRA_PACKAGE...]
# Prints the image directory (holding rootfs.img, vmlinuz, initrd.img) on the last stdout line.
# Exit 77 when the image cannot be built here (not root, no debootstrap, no Debian mirror).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache_dir=${1:?usage: build-image.sh CACHE_DIR [EXTRA_PACKAGE...]}
shift
arch=${DS4D_VM_ARCH:-$(dpkg --print-architecture)}
host_arch=$(dpkg --print-architecture)
case "$arch" in
  amd64) console=ttyS0 ;;
  arm64) console=ttyAMA0 ;;
  *) echo "build-image: no guest configuration for architecture $arch" >&2; exit 77 ;;
esac

# Packages beyond minbase. Recommends are never installed (debootstrap resolves Depends only).
# A foreign guest gets no kernel package and no ca-certificates: every package in its tree is
# configured under qemu-user, and the kernel's hooks (update-initramfs) were the slowest part of
# that by far; its kernel and initramfs are made natively instead (native-initramfs.sh). The
# guest talks HTTP to 127.0.0.1 only, so it needs no CA bundle.
base_packages=(systemd systemd-sysv udev earlyoom curl iproute2 procps)
[ "$arch" = "$host_arch" ] && base_packages+=("linux-image-$arch" ca-certificates)
mapfile -t packages < <(printf '%s\n' "${base_packages[@]}" "$@" | sort -u)

guest_key=$({ cat "$0" "$here/ds4d-vm-check.service" "$here/guest-run.sh" \
                  "$here/native-initramfs.sh" "$here/initramfs-init.sh"; echo "$arch"; } \
            | sha256sum | cut -c1-16)
pkg_key=$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)
out="$cache_dir/image-$pkg_key-$guest_key"
root="$cache_dir/rootfs-$pkg_key"

# Any cached image of the same guest files whose package manifest covers the list will do:
# a package whose dependencies are a subset of an earlier one's needs no second debootstrap.
covers() {  # covers MANIFEST: every requested package is installed in that image
  local p
  for p in "${packages[@]}"; do
    grep -q "^$p " "$1" || return 1
  done
}
for dir in "$cache_dir"/image-*-"$guest_key"; do
  if [ -f "$dir/rootfs.img" ] && [ -f "$dir/manifest.txt" ] && covers "$dir/manifest.txt"; then
    echo "build-image: cached image $dir" >&2
    echo "$dir"
    exit 0
  fi
done

if [ "$(id -u)" -ne 0 ]; then
  echo "build-image: debootstrap needs root; cannot build the guest image" >&2
  exit 77
fi
command -v debootstrap >/dev/null || { echo "build-image: debootstrap not installed" >&2; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "build-image: mkfs.ext4 not installed" >&2; exit 77; }

# The mirror the host itself installs bookworm from (works with sources.list and deb822 files).
mirror=${DS4D_VM_MIRROR:-$(apt-cache policy 2>/dev/null \
          | awk -v arch="$arch" '$3 ~ /^bookworm\/main$/ && $4 == arch { print $2; exit }')}
if [ -z "$mirror" ]; then
  echo "build-image: no bookworm/main $arch mirror in the host's apt sources (set DS4D_VM_MIRROR)" >&2
  exit 77
fi

work="$out.tmp"
rm -rf "$work"
mkdir -p "$work"
# Likewise a cached debootstrap tree that already has every package (only the image is redone).
for dir in "$cache_dir"/rootfs-*; do
  [ -f "$dir/.debootstrap-complete" ] || continue
  missing=0
  for p in "${packages[@]}"; do
    dpkg-query --admindir="$dir/var/lib/dpkg" -W -f='${Status}\n' "$p" 2>/dev/null \
      | grep -q 'install ok installed' || { missing=1; break; }
  done
  if [ "$missing" -eq 0 ]; then root=$dir; break; fi
done

if [ ! -f "$root/.debootstrap-complete" ]; then
  rm -rf "$root"
  echo "build-image: debootstrap bookworm $arch from $mirror with ${packages[*]}" >&2
  include=$(IFS=,; echo "${packages[*]}")
  foreign=()
  [ "$arch" = "$host_arch" ] || foreign=(--foreign "--arch=$arch")
  t0=$(date +%s)
  if ! debootstrap "${foreign[@]}" --variant=minbase --include="$include" bookworm "$root" "$mirror" \
       >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    echo "build-image: debootstrap failed (log: $work/debootstrap.log)" >&2
    exit 1
  fi
  echo "build-image: debootstrap $([ ${#foreign[@]} -gt 0 ] && echo 'first stage ')took $(( $(date +%s) - t0 )) s" >&2
  if [ ${#foreign[@]} -gt 0 ]; then
    echo "build-image: debootstrap second stage in the $arch tree under qemu-user" >&2
    t0=$(date +%s)
    set +e
    bash "$here/foreign-chroot.sh" "$arch" "$root" /debootstrap/debootstrap --second-stage \
      >"$work/second-stage.log" 2>&1
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
      tail -n 30 "$work/second-stage.log" >&2
      [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 20 "$root/debootstrap/debootstrap.log" >&2
      [ "$rc" -eq 77 ] && { rm -rf "$root"; exit 77; }
      echo "build-image: debootstrap second stage failed (log: $work/second-stage.log)" >&2
      exit 1
    fi
    echo "build-image: second stage took $(( $(date +%s) - t0 )) s" >&2
  fi
  # Smaller image: no downloaded archives, no package lists (the guest has no network anyway).
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages
  touch "$root/.debootstrap-complete"
fi

# Guest configuration: root on the first virtio disk, no network, no login prompt on the
# serial line (the checks own it), no periodic apt jobs competing for the two emulated CPUs.
echo ds4d-vm > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 ds4d-vm\n' > "$root/etc/hosts"
printf '/dev/vda / ext4 defaults,errors=remount-ro 0 1\n' > "$root/etc/fstab"
: > "$root/etc/machine-id"
for unit in "serial-getty@$console.service" getty@tty1.service apt-daily.timer \
            apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
sed "s|^TTYPath=/dev/ttyS0$|TTYPath=/dev/$console|" "$here/ds4d-vm-check.service" \
  > "$root/etc/systemd/system/ds4d-vm-check.service"
chmod 0644 "$root/etc/systemd/system/ds4d-vm-check.service"
install -m 0755 "$here/guest-run.sh" "$root/usr/local/sbin/ds4d-vm-run"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../ds4d-vm-check.service "$root/etc/systemd/system/multi-user.target.wants/ds4d-vm-check.service"

if [ "$arch" = "$host_arch" ]; then
  vmlinuz=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
  initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)
  cp "$vmlinuz" "$work/vmlinuz"
  cp "$initrd" "$work/initrd.img"
else
  set +e
  bash "$here/native-initramfs.sh" "$arch" "$root" "$work"
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || { echo "build-image: no kernel/initramfs for the $arch guest" >&2; exit "$rc"; }
fi
dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Version}\n' > "$work/manifest.txt"

# Room for the package, the daemon's state and the supervisor's swapfile; the file is sparse.
used_mib=$(du -sm "$root" | cut -f1)
size_mib=$((used_mib + ${DS4D_VM_FREE_MIB:-2048}))
mkfs.ext4 -q -F -L ds4d-vm -E root_owner=0:0 -d "$root" "$work/rootfs.img" "${size_mib}M"

rm -rf "$out"
mv "$work" "$out"
# Images made for other guest files are stale now; debootstrap trees stay (they are the slow part).
for dir in "$cache_dir"/image-*; do
  case "$dir" in *-"$guest_key") ;; *) rm -rf "$dir" ;; esac
done
echo "build-image: built $out (${size_mib} MiB image, $(wc -l < "$out/manifest.txt") packages)" >&2
echo "$out"
