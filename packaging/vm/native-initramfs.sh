#!/usr/bin/env bash
# native-initramfs.sh: the kernel and a small initramfs for a foreign-architecture VM guest,
# assembled on the host with the host's own tools (nothing runs under emulation).
#
# Why: installing linux-image-arm64 in the guest tree means running its postinst hooks, and
# update-initramfs (mkinitramfs with MODULES=most) under qemu-user took longer than the whole
# rest of the image build (stopped after 81 min). The guest needs far less: the stock Debian
# kernel has PCI, the PL011 console and devtmpfs built in, and only virtio-pci, virtio-blk and
# ext4 (with jbd2, mbcache, crc16, crc32c) as modules. So the kernel package is only unpacked
# here (dpkg-deb -x), the host's depmod/modprobe work out those modules' dependency order in the
# unpacked tree (-b/-d take a foreign tree), and the initramfs is a static busybox
# (busybox-static of the guest's architecture), the modules and initramfs-init.sh, packed with
# cpio. The same modules, with their modules.dep, go into ROOT/lib/modules so the booted guest
# knows what it has loaded; nothing else of the kernel is installed there.
#
# Usage: native-initramfs.sh ARCH ROOT OUTDIR
# Writes OUTDIR/vmlinuz, OUTDIR/initrd.img and OUTDIR/kernel.txt (the kernel package, version).
# Exit 77 when the host cannot do it (no arm64 package lists, no depmod/cpio), 1 on a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
arch=${1:?usage: native-initramfs.sh ARCH ROOT OUTDIR}
root=${2:?usage: native-initramfs.sh ARCH ROOT OUTDIR}
out=${3:?usage: native-initramfs.sh ARCH ROOT OUTDIR}
# What the guest must load to mount its root disk; modprobe adds the dependencies.
modules=(virtio_pci virtio_blk crc32c_generic ext4)
# The busybox applets initramfs-init.sh calls.
applets=(sh mount umount insmod sleep switch_root cat)

for tool in depmod modprobe cpio gzip dpkg-deb apt-get; do
  command -v "$tool" >/dev/null || { echo "native-initramfs: $tool is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
done

tmp=$(mktemp -d /tmp/ds4d-initramfs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/kernel" "$tmp/busybox" "$tmp/initramfs"

# The kernel package the meta package linux-image-ARCH points at, from the host's apt lists of
# that architecture (Debian multiarch: scripts/install-deps.sh adds arm64 on amd64 hosts).
kernel_pkg=$(apt-cache depends "linux-image-$arch:$arch" 2>/dev/null \
             | sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -n 1)
if [ -z "$kernel_pkg" ]; then
  echo "native-initramfs: no linux-image-$arch:$arch in the host's package lists" \
       "(dpkg --add-architecture $arch && apt-get update)" >&2
  exit 77
fi
if ! (cd "$tmp/debs" && apt-get download -q -o APT::Sandbox::User=root \
        "$kernel_pkg:$arch" "busybox-static:$arch") >"$tmp/download.log" 2>&1; then
  cat "$tmp/download.log" >&2
  echo "native-initramfs: cannot download $kernel_pkg:$arch and busybox-static:$arch" >&2
  exit 1
fi
dpkg-deb -x "$tmp"/debs/linux-image-*.deb "$tmp/kernel"
dpkg-deb -x "$tmp"/debs/busybox-static_*.deb "$tmp/busybox"
version=$(ls "$tmp/kernel/lib/modules")
if [ -z "$version" ] || [ ! -f "$tmp/kernel/boot/vmlinuz-$version" ]; then
  echo "native-initramfs: $kernel_pkg has no vmlinuz and modules of one version" >&2
  exit 1
fi
kmods=$tmp/kernel/lib/modules/$version
depmod -b "$tmp/kernel" "$version"

# Dependency order: modprobe --show-depends prints one "insmod PATH" per module, dependencies
# first; a module several roots need is loaded once.
order=()
for m in "${modules[@]}"; do
  deps=$(modprobe -d "$tmp/kernel" -S "$version" --show-depends "$m") \
    || { echo "native-initramfs: module $m not found in $kernel_pkg" >&2; exit 1; }
  while read -r verb path _; do
    [ "$verb" = insmod ] || continue
    rel=${path#"$kmods"/}
    case " ${order[*]} " in *" $rel "*) ;; *) order+=("$rel") ;; esac
  done <<<"$deps"
done

ir=$tmp/initramfs
mkdir -p "$ir/bin" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/newroot" "$ir/modules"
# The kernel opens /dev/console for init's stdin/stdout before init runs (devtmpfs comes later).
mknod -m 0600 "$ir/dev/console" c 5 1
install -m 0755 "$tmp/busybox/bin/busybox" "$ir/bin/busybox"
for a in "${applets[@]}"; do ln -s busybox "$ir/bin/$a"; done
install -m 0755 "$here/initramfs-init.sh" "$ir/init"
: > "$ir/modules/order"
for rel in "${order[@]}"; do
  install -m 0644 "$kmods/$rel" "$ir/modules/$(basename "$rel")"
  basename "$rel" >> "$ir/modules/order"
  # The same file in the guest's own module tree.
  install -D -m 0644 "$kmods/$rel" "$root/lib/modules/$version/$rel"
done
cp "$kmods/modules.order" "$kmods/modules.builtin" "$kmods/modules.builtin.modinfo" \
   "$root/lib/modules/$version/"
depmod -b "$root" "$version"

(cd "$ir" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) | gzip -6 > "$out/initrd.img"
cp "$tmp/kernel/boot/vmlinuz-$version" "$out/vmlinuz"
echo "$kernel_pkg $version: ${order[*]}" > "$out/kernel.txt"
echo "native-initramfs: $kernel_pkg, initramfs $(du -k "$out/initrd.img" | cut -f1) KiB with ${#order[@]} modules" >&2
