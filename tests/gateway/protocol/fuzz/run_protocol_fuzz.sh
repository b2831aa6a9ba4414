#!/bin/sh
# Builds the ds4_protocol libFuzzer targets with clang (address + undefined sanitizers) and runs
# each for half of the given seconds from the checked-in seed corpus. A crash, sanitizer report
# or invariant abort makes libFuzzer exit non-zero, which fails the test.
# usage: run_protocol_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS SOURCES_LIST
#   SOURCES_LIST: ds4_protocol's sources, one a line with their own compile options, written by
#   CMake (cmake/Ds4FuzzSources.cmake), so no list here can go stale.
set -eu
CXX=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4 LIST=$5
mkdir -p "$OUT"
FUZZ="$ROOT/tests/gateway/protocol/fuzz"
# The library's sources (no per-file options in ds4_protocol) and Boost.JSON's implementation
# (the build links the compiled library instead).
LIB="$(cut -d' ' -f1 "$LIST" | tr '\n' ' ') $FUZZ/boost_json_src.cpp"
FLAGS="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$ROOT"
EACH=$(( SECONDS_TOTAL / 2 ))
[ "$EACH" -ge 1 ] || EACH=1
for target in chat_request_fuzz dsml_parser_fuzz; do
  # shellcheck disable=SC2086
  "$CXX" $FLAGS -o "$OUT/$target" "$FUZZ/$target.cpp" $LIB
done
run() {
  target=$1 corpus=$2
  mkdir -p "$OUT/corpus-$corpus"
  cp "$FUZZ/corpus/$corpus/"* "$OUT/corpus-$corpus/"
  "$OUT/$target" -max_total_time="$EACH" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$OUT/$target-" "$OUT/corpus-$corpus"
}
run chat_request_fuzz chat
run dsml_parser_fuzz dsml
