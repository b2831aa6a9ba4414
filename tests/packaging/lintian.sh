#!/usr/bin/env bash
# lintian.sh: lintian finds no errors in the ds4d package; the warnings it prints are the ones
# packaging/README.md lists with their reasons (any tag not listed there fails the test).
#
# Usage: lintian.sh DEB README
set -euo pipefail
deb=$1 readme=$2
out=$(lintian --tag-display-limit 0 --fail-on none "$deb" 2>&1 | sed "/^running with root privileges/d")
echo "$out"
fails=0
while read -r sev tag; do
  case "$sev" in
    E) echo "FAIL: lintian error $tag"; fails=$((fails + 1)) ;;
    W) grep -q "\`$tag\`" "$readme" || { echo "FAIL: warning $tag is not explained in $readme"; fails=$((fails + 1)); } ;;
  esac
done < <(sed -n 's/^\([EW]\): ds4d[^:]*: \([a-z0-9.+-]*\).*/\1 \2/p' <<<"$out" | sort -u)
[ "$fails" -eq 0 ] || exit 1
echo "lintian: no errors, every warning explained"
