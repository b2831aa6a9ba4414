#!/usr/bin/env bash
# check-deb.sh: the built ds4d .deb holds what it should, with the metadata Debian expects.
#
# Reads the package with dpkg-deb only (no installation): the file list, the control fields
# (shlibs-derived Depends, earlyoom as Recommends), the conffiles list, the maintainer scripts
# debhelper generated (sysusers before tmpfiles before the unit is started; deb-systemd-helper
# and deb-systemd-invoke rather than systemctl), and that the packaged unit, configuration and
# model are byte-identical to their sources in the tree and the build.
#
# Usage: check-deb.sh DEB SOURCE_DIR MODEL_FILE
set -euo pipefail
deb=$1 src=$2 model=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

[ "$(basename "$deb")" = "ds4d_$(dpkg-deb -f "$deb" Version)_$(dpkg-deb -f "$deb" Architecture).deb" ] \
  && ok "file name $(basename "$deb")" \
  || fail "file name $(basename "$deb") does not match the version"

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' > "$tmp/files"
for f in /usr/sbin/ds4d /usr/sbin/ds4d-supervisor /usr/bin/ds4ctl \
         /usr/share/ds4d/models/ds4-tiny-agent.gguf /lib/systemd/system/ds4d.service \
         /lib/systemd/system/ds4d-gateway.service /usr/share/doc/ds4d/examples/haproxy-ds4d-replicas.cfg \
         /usr/share/ds4d/grafana/ds4d-dashboard.json \
         /usr/lib/sysusers.d/ds4d.conf /usr/lib/tmpfiles.d/ds4d.conf /etc/ds4d/ds4d.toml \
         /usr/share/man/man8/ds4d.8.gz /usr/share/man/man8/ds4d-supervisor.8.gz \
         /usr/share/man/man1/ds4ctl.1.gz /usr/share/doc/ds4d/copyright; do
  grep -qx "$f" "$tmp/files" || fail "missing $f"
done
ok "$(wc -l < "$tmp/files") entries checked for the expected files"

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libsystemd0; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib (shlibs:Depends not substituted?): $depends"
done
grep -q '\${' <<<"$depends" && fail "unsubstituted variable in Depends: $depends"
ok "Depends: $depends"
[ "$(dpkg-deb -f "$deb" Recommends)" = earlyoom ] && ok "Recommends: earlyoom" \
  || fail "Recommends is '$(dpkg-deb -f "$deb" Recommends)'"

dpkg-deb -e "$deb" "$tmp/control"
grep -qx /etc/ds4d/ds4d.toml "$tmp/control/conffiles" && ok "conffile /etc/ds4d/ds4d.toml" \
  || fail "/etc/ds4d/ds4d.toml is not a conffile"

postinst="$tmp/control/postinst"
line_of() { grep -n -m1 -- "$1" "$postinst" | cut -d: -f1; }
sysusers=$(line_of 'systemd-sysusers') tmpfiles=$(line_of 'systemd-tmpfiles') start=$(line_of 'deb-systemd-invoke')
if [ -n "$sysusers" ] && [ -n "$tmpfiles" ] && [ -n "$start" ] && [ "$sysusers" -lt "$tmpfiles" ] \
   && [ "$tmpfiles" -lt "$start" ]; then
  ok "postinst: sysusers (line $sysusers), tmpfiles ($tmpfiles), then start ($start)"
else
  fail "postinst order: sysusers=$sysusers tmpfiles=$tmpfiles start=$start"
fi
grep -q 'deb-systemd-helper.*enable' "$postinst" || fail "postinst does not enable the unit with deb-systemd-helper"
grep -q 'deb-systemd-invoke stop' "$tmp/control/prerm" || fail "prerm does not stop the unit"
grep -q 'deb-systemd-helper purge' "$tmp/control/postrm" || fail "postrm does not purge the unit state"
if grep -hE '^\s*systemctl\s+(start|stop|restart|enable|disable)\b' "$tmp/control/"{postinst,prerm,postrm}; then
  fail "a maintainer script calls systemctl directly"
fi

dpkg-deb -x "$deb" "$tmp/root"
cmp -s "$tmp/root/lib/systemd/system/ds4d.service" "$src/units/ds4d.service" && ok "unit matches units/ds4d.service" \
  || fail "packaged unit differs from units/ds4d.service"
cmp -s "$tmp/root/etc/ds4d/ds4d.toml" "$src/units/ds4d.toml" && ok "conffile matches units/ds4d.toml" \
  || fail "packaged configuration differs from units/ds4d.toml"
cmp -s "$tmp/root/usr/share/ds4d/models/ds4-tiny-agent.gguf" "$model" && ok "model matches $model" \
  || fail "packaged model differs from $model"
cmp -s "$tmp/root/usr/share/ds4d/models/ds4-tiny-agent.mtp.gguf" "${model%.gguf}.mtp.gguf" \
  && ok "MTP drafter matches ${model%.gguf}.mtp.gguf" || fail "packaged MTP drafter differs from ${model%.gguf}.mtp.gguf"
[ "$(stat -c %a "$tmp/root/usr/sbin/ds4d-supervisor")" = 755 ] || fail "ds4d-supervisor is not mode 755"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all package checks passed"
