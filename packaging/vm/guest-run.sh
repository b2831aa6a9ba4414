#!/bin/sh
# ds4d-vm-run: guest side of the VM install test. Mounts the payload disk the host attached as
# the second virtio disk and runs the check script on it. Every line the host looks for starts
# with "DS4D-VM" so it can be picked out of the kernel and systemd messages on the same serial
# line. It powers the machine off when the checks are done.
set -u
payload=/run/ds4d-vm-payload
mkdir -p "$payload"
if ! mount -o ro /dev/vdb "$payload"; then
  echo "DS4D-VM-ERROR cannot mount the payload disk /dev/vdb"
  exit 1
fi
echo "DS4D-VM-BOOTED $(cut -d' ' -f1 /proc/uptime)s after kernel start"
sh "$payload/guest-checks.sh" "$payload"
rc=$?
echo "DS4D-VM-EXIT $rc"
# The overlay disk is thrown away, so power off at once (sysrq o) rather than through an
# orderly shutdown; the unit's SuccessAction is only the fallback.
sync
echo o > /proc/sysrq-trigger
exit 0
