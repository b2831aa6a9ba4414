#!/usr/bin/env bash
# check-units.sh: the unit files are valid for systemd 252 and agree with the programs.
#
# 1. `systemd-analyze verify` on ds4d.service, with ExecStart pointed at the built supervisor
#    (the installed path does not exist on a build host) and MANPATH at the generated man pages,
#    so the Documentation= pages are checked too. Any diagnostic fails the test.
# 2. sysusers.d and tmpfiles.d entries applied to an empty root (systemd-sysusers/-tmpfiles
#    --root): the ds4d user exists with its home and no shell; the KV directory belongs to it.
# 3. The supervisor, reading the packaged configuration, places its earlyoom drop-in in the one
#    /etc directory the unit leaves writable, its swapfile in the StateDirectory, launches the
#    daemon path the package installs, and the KV directory is the one tmpfiles creates.
#
# Usage: check-units.sh UNITS_DIR SUPERVISOR_BIN MAN_DIR
set -euo pipefail
units=$(cd "$1" && pwd) supervisor=$2 man_dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. verify
mkdir -p "$tmp/units"
sed "s|^ExecStart=/usr/sbin/ds4d-supervisor |ExecStart=$supervisor |" "$units/ds4d.service" \
  > "$tmp/units/ds4d.service"
grep -q "^ExecStart=$supervisor " "$tmp/units/ds4d.service" || fail "ExecStart is not /usr/sbin/ds4d-supervisor"
if out=$(cd "$tmp/units" && MANPATH=$man_dir systemd-analyze verify ./ds4d.service 2>&1) && [ -z "$out" ]; then
  echo "ok: systemd-analyze verify ds4d.service"
else
  fail "systemd-analyze verify: $out"
fi

# 2. users and directories
root="$tmp/root"
mkdir -p "$root/etc"
touch "$root/etc/passwd" "$root/etc/group" "$root/etc/shadow" "$root/etc/gshadow"
systemd-sysusers --root="$root" "$units/ds4d.sysusers" >/dev/null 2>&1 || fail "systemd-sysusers rejected ds4d.sysusers"
IFS=: read -r name _ uid gid _ home shell < <(grep '^ds4d:' "$root/etc/passwd") || true
if [ "${name:-}" = ds4d ] && [ "$home" = /var/lib/ds4d ] && [ "$shell" = /usr/sbin/nologin ] && [ "$uid" -lt 1000 ]; then
  echo "ok: system user ds4d ($uid:$gid, home $home, shell $shell)"
else
  fail "ds4d user: '$(grep '^ds4d:' "$root/etc/passwd" || true)'"
fi
systemd-tmpfiles --root="$root" --create "$units/ds4d.tmpfiles" || fail "systemd-tmpfiles rejected ds4d.tmpfiles"
kv_owner=$(stat -c '%u:%g %a' "$root/var/lib/ds4d/kv" 2>/dev/null || true)
[ "$kv_owner" = "$uid:$gid 700" ] && echo "ok: /var/lib/ds4d/kv is $kv_owner" || fail "/var/lib/ds4d/kv is '$kv_owner'"
state_owner=$(stat -c '%u %a' "$root/var/lib/ds4d" 2>/dev/null || true)
[ "$state_owner" = "0 755" ] && echo "ok: /var/lib/ds4d is root's ($state_owner)" || fail "/var/lib/ds4d is '$state_owner'"

# 3. agreement with the supervisor's view of the packaged configuration
if ! cfg=$("$supervisor" --config "$units/ds4d.toml" --print-config 2>&1); then
  fail "ds4d-supervisor --print-config rejects the packaged ds4d.toml: $cfg"
else
  value() { awk -v k="$1" '$1 == k { v = $3; gsub(/["\047]/, "", v); print v; exit }' <<<"$cfg"; }
  unit_value() { sed -n "s/^$1=//p" "$units/ds4d.service" | tail -n 1; }
  dropin=$(value memory.earlyoom_dropin)
  [ "$(dirname "$dropin")" = "$(unit_value ReadWritePaths)" ] \
    && echo "ok: earlyoom drop-in $dropin is in the unit's ReadWritePaths" \
    || fail "earlyoom drop-in '$dropin' is outside ReadWritePaths=$(unit_value ReadWritePaths)"
  grep -q "^d $(dirname "$dropin") " "$units/ds4d.tmpfiles" || fail "tmpfiles does not create $(dirname "$dropin")"
  swap=$(value memory.swap_file)
  [ "$(dirname "$swap")" = "/var/lib/$(unit_value StateDirectory)" ] \
    && echo "ok: swapfile $swap is in the StateDirectory" || fail "swapfile '$swap' is outside StateDirectory"
  kv=$(value cache.dir)
  grep -q "^d $kv 0700 ds4d ds4d " "$units/ds4d.tmpfiles" && echo "ok: cache.dir $kv is created for ds4d" \
    || fail "cache.dir '$kv' is not created by tmpfiles for ds4d"
  [ "$(value supervisor.daemon)" = /usr/sbin/ds4d ] && echo "ok: supervisor launches /usr/sbin/ds4d" \
    || fail "supervisor.daemon is '$(value supervisor.daemon)', the package installs /usr/sbin/ds4d"
  stop_unit=$(unit_value TimeoutStopSec | sed 's/s$//')
  drain=$(value server.drain_timeout_s) stop_sup=$(value supervisor.stop_timeout_s)
  [ "$drain" -lt "$stop_sup" ] && [ "$stop_sup" -lt "$stop_unit" ] \
    && echo "ok: drain ${drain}s < supervisor stop ${stop_sup}s < TimeoutStopSec ${stop_unit}s" \
    || fail "stop timeouts do not nest: drain ${drain}s, supervisor ${stop_sup}s, TimeoutStopSec ${stop_unit}s"
  "$supervisor" --help | grep -q "^  $(unit_value RestartPreventExitStatus) " \
    && echo "ok: RestartPreventExitStatus=$(unit_value RestartPreventExitStatus) is the supervisor's configuration-error status" \
    || fail "the supervisor's --help documents no exit status $(unit_value RestartPreventExitStatus)"
  [ "$(value supervisor.user)" = ds4d ] || fail "supervisor.user is '$(value supervisor.user)'"
  [ "$(value model.path)" = /usr/share/ds4d/models/ds4-tiny-agent.gguf ] \
    || fail "model.path is '$(value model.path)', not the packaged model"
fi

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all unit checks passed"
