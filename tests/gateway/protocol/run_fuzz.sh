#!/bin/sh
# Builds the ds4_protocol libFuzzer targets with clang (address + undefined sanitizers) and runs
# each for half of the given seconds from the checked-in seed corpus. A crash, sanitizer report
# or invariant abort makes libFuzzer exit non-zero, which fails the test.
# usage: run_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS
set -eu
CXX=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4
mkdir -p "$OUT"
SRC="$ROOT/gateway/protocol"
LIB="$SRC/chat_request.cpp $SRC/chat_render.cpp $SRC/contract_store.cpp $SRC/dsml_format.cpp \
     $SRC/json_fields.cpp $SRC/output_controls.cpp $SRC/json_scan.cpp $SRC/dsml_parser.cpp $SRC/tool_call_id.cpp $SRC/utf8_assembler.cpp \
     $SRC/fuzz/boost_json_src.cpp"
FLAGS="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$ROOT"
EACH=$(( SECONDS_TOTAL / 2 ))
[ "$EACH" -ge 1 ] || EACH=1
for target in chat_request_fuzz dsml_parser_fuzz; do
  # shellcheck disable=SC2086
  "$CXX" $FLAGS -o "$OUT/$target" "$SRC/fuzz/$target.cpp" $LIB
done
run() {
  target=$1 corpus=$2
  mkdir -p "$OUT/corpus-$corpus"
  cp "$SRC/fuzz/corpus/$corpus/"* "$OUT/corpus-$corpus/"
  "$OUT/$target" -max_total_time="$EACH" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$OUT/$target-" "$OUT/corpus-$corpus"
}
run chat_request_fuzz chat
run dsml_parser_fuzz dsml
