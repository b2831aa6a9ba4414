#!/usr/bin/env bash
# render-man.sh: make a man page from a hand-written template and the program's --help.
#
# The prose (NAME, DESCRIPTION, FILES, SEE ALSO) is written by hand in TEMPLATE; the options
# come from the built binary itself, so the page cannot drift from what the program accepts.
# With --subcommands, the help of every subcommand listed under the program's "Subcommands:"
# heading (CLI11's layout) follows the top-level help. The help text is escaped for roff
# (backslashes, leading dots and quotes, minus signs) and placed in a no-fill block.
#
# Usage: render-man.sh TEMPLATE OUTPUT BINARY VERSION [--subcommands]
# The date is SOURCE_DATE_EPOCH's (or the last commit's), so a rebuild gives the same page.
# DS4D_EMULATOR (a command line, e.g. "qemu-aarch64-static -L /usr/aarch64-linux-gnu") runs a
# cross-built binary.
set -euo pipefail
template=$1 output=$2 binary=$3 version=$4 mode=${5:-}
read -r -a emulator <<<"${DS4D_EMULATOR:-}"
run() { "${emulator[@]}" "$binary" "$@"; }

help=$(run --help)
if [ "$mode" = --subcommands ]; then
  subs=$(awk 'tolower($0) ~ /^subcommands:$/ { on = 1; next } on && /^$/ { on = 0 } on && NF { print $1 }' \
         <<<"$help")
  [ -n "$subs" ] || { echo "render-man: no subcommands found in '$binary --help'" >&2; exit 1; }
  for s in $subs; do
    help+=$'\n\n'"$(basename "$binary") $s"$'\n'"$(run "$s" --help)"
  done
fi

escape_roff() {
  sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

src_dir=$(cd "$(dirname "$template")" && pwd)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$src_dir" log -1 --format=%ct 2>/dev/null || date +%s)}
date=$(LC_ALL=C date -u -d "@$epoch" +%Y-%m-%d)

mkdir -p "$(dirname "$output")"
escaped=$(escape_roff <<<"$help")
# ENVIRON, not -v: awk would interpret the backslashes of -v values.
HELP_TEXT=$escaped awk -v date="$date" -v version="$version" '
  { gsub(/@DATE@/, date); gsub(/@VERSION@/, version) }
  $0 == "@HELP@" { print ENVIRON["HELP_TEXT"]; next }
  { print }
' "$template" > "$output.tmp"
mv "$output.tmp" "$output"
