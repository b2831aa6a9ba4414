#!/usr/bin/env bash
# foreign-chroot.sh: run a command chrooted into a root filesystem of another architecture
# (arm64 on an amd64 host), its programs executed by qemu-user through binfmt_misc.
#
# Why: debootstrap --foreign only unpacks the essential packages; the second stage (dpkg
# configuring ~135 packages) must run the guest's own programs. Under full system emulation
# (qemu-system-aarch64, TCG) that takes over an hour here; under qemu-user it takes minutes
# (380 s at load 8), but the kernel only hands an arm64 executable to qemu when binfmt_misc knows
# it, and the chroot has no qemu of its own unless the registration carries the F flag (qemu
# opened once, at registration). Two ways, tried in order:
#   1. the host already registers qemu-aarch64 with F (qemu-user-static on a systemd host:
#      systemd-binfmt applies /usr/lib/binfmt.d/qemu-aarch64.conf): plain chroot;
#   2. otherwise a private binfmt_misc instance in new user, mount, pid and network namespaces
#      (Linux >= 6.7 mounts binfmt_misc per user namespace), with the same registration line
#      and an identity uid/gid map, so file ownership in the tree is the real one. The host's
#      binfmt_misc is never touched. Device nodes cannot be made in a user namespace, so
#      debootstrap is told it runs in a container (container=lxc: it skips its mknod probe; the
#      first stage, run as real root, already made /dev).
#
# Usage: foreign-chroot.sh ARCH ROOT COMMAND...   (ARCH: a Debian architecture, arm64)
# Exit 77 when neither way is available (the caller skips); otherwise COMMAND's status.
set -euo pipefail
arch=${1:?usage: foreign-chroot.sh ARCH ROOT COMMAND...}
root=${2:?usage: foreign-chroot.sh ARCH ROOT COMMAND...}
shift 2
case "$arch" in
  arm64) qarch=aarch64 ;;
  *) echo "foreign-chroot: no qemu-user mapping for architecture $arch" >&2; exit 77 ;;
esac
conf=/usr/lib/binfmt.d/qemu-$qarch.conf
if [ ! -f "$conf" ]; then
  echo "foreign-chroot: $conf missing (qemu-user-static is not installed)" >&2
  exit 77
fi

host_entry=/proc/sys/fs/binfmt_misc/qemu-$qarch
if [ -f "$host_entry" ] && grep -qx enabled "$host_entry" && grep -q '^flags:.*F' "$host_entry"; then
  exec chroot "$root" "$@"
fi

# The namespaced child waits on a FIFO until this shell has written its uid/gid maps (only a
# process outside the new user namespace may write them).
fifo=$(mktemp -u /tmp/ds4d-foreign-chroot.XXXXXX)
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
# shellcheck disable=SC2016
container=lxc unshare --user --mount --pid --net --fork --mount-proc sh -c '
  read -r _ < "$0"
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || exit 77
  printf "%s" "$1" > /proc/sys/fs/binfmt_misc/register || exit 77
  root=$2
  shift 2
  exec chroot "$root" "$@"' "$fifo" "$(cat "$conf")" "$root" "$@" &
ns_pid=$!
child=""
for _ in $(seq 100); do
  child=$(pgrep -P "$ns_pid" | head -n 1 || true)
  [ -n "$child" ] && break
  sleep 0.05
done
if [ -z "$child" ] || ! echo "0 0 4294967295" > "/proc/$child/uid_map" \
   || ! echo "0 0 4294967295" > "/proc/$child/gid_map"; then
  echo "foreign-chroot: cannot set up a user namespace here" >&2
  kill "$ns_pid" 2>/dev/null || true
  wait "$ns_pid" 2>/dev/null || true
  exit 77
fi
echo go > "$fifo"
set +e
wait "$ns_pid"
rc=$?
set -e
if [ "$rc" -eq 77 ]; then
  echo "foreign-chroot: no binfmt_misc for $arch: the host registers no qemu-$qarch with the F flag" \
       "and this kernel ($(uname -r)) has no per-namespace binfmt_misc (Linux >= 6.7)" >&2
fi
exit "$rc"
