#!/bin/sh
# Runs the ds4_protocol libFuzzer targets (chat_request_fuzz, dsml_parser_fuzz in FUZZ_BIN_DIR,
# built by the ds4_fuzzers target, cmake/Ds4Fuzz.cmake), each for half of the given seconds from
# the checked-in seed corpus. A crash, sanitizer report or invariant abort makes libFuzzer exit
# non-zero, which fails the test.
# usage: run_protocol_fuzz.sh FUZZ_BIN_DIR REPO_ROOT OUT_DIR SECONDS
set -eu
BIN_DIR=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4
mkdir -p "$OUT"
FUZZ="$ROOT/tests/gateway/protocol/fuzz"
EACH=$(( SECONDS_TOTAL / 2 ))
[ "$EACH" -ge 1 ] || EACH=1
run() {
  target=$1 corpus=$2
  mkdir -p "$OUT/corpus-$corpus"
  cp "$FUZZ/corpus/$corpus/"* "$OUT/corpus-$corpus/"
  "$BIN_DIR/$target" -max_total_time="$EACH" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$OUT/$target-" "$OUT/corpus-$corpus"
}
run chat_request_fuzz chat
run dsml_parser_fuzz dsml
