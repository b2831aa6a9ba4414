#!/bin/sh
# init of the small initramfs the foreign-architecture VM guest boots with (native-initramfs.sh
# assembles it on the host; its programs are one static busybox).
#
# It does what the guest's kernel cannot do alone: the stock Debian arm64 kernel has virtio-pci,
# virtio-blk and ext4 as modules, so they are loaded here (in dependency order, from
# /modules/order, worked out by the host's depmod), then the root disk named by root= on the
# kernel command line is mounted read-write and systemd takes over through switch_root. No udev,
# no fsck, no resume: the root is a freshly written image behind a throw-away qcow2 overlay.
# A failure prints one DS4D-VM-ERROR line (the host test shows the serial tail) and ends init,
# which panics the kernel; with panic=-1 and qemu's -no-reboot the VM exits at once.
PATH=/bin
export PATH
fail() {
  echo "DS4D-VM-ERROR initramfs: $*"
  exit 1
}
mount -t proc proc /proc || fail "cannot mount /proc"
mount -t sysfs sysfs /sys || fail "cannot mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "cannot mount /dev"
root=/dev/vda
for arg in $(cat /proc/cmdline); do
  case "$arg" in root=/dev/*) root=${arg#root=} ;; esac
done
while read -r module; do
  insmod "/modules/$module" || fail "insmod $module failed"
done < /modules/order
# The block device appears asynchronously once virtio-blk has probed it (30 s at most).
i=0
while [ ! -b "$root" ]; do
  [ "$i" -ge 300 ] && fail "no root device $root 30 s after loading the modules"
  sleep 0.1
  i=$((i + 1))
done
mount -t ext4 -o rw "$root" /newroot || fail "cannot mount $root (ext4) on /newroot"
# -L too: /sbin/init is an absolute symlink (to systemd), which only resolves after switch_root.
[ -e /newroot/sbin/init ] || [ -L /newroot/sbin/init ] || fail "$root has no /sbin/init"
mount --move /dev /newroot/dev || fail "cannot move /dev into the root"
umount /sys
umount /proc
exec switch_root /newroot /sbin/init
