#!/bin/sh
# Runs a gateway fuzzer (built by the ds4_fuzzers target, cmake/Ds4Fuzz.cmake) for the given
# seconds from its checked-in seed corpus. A crash, sanitizer report or broken invariant makes
# libFuzzer exit non-zero, which fails the test. The fuzzer is named by its binary:
#   http_request_fuzz: raw HTTP bytes, seeds in corpus/
#   endpoint_json_fuzz: the JSON body of every POST endpoint, seeds in corpus-json/
#   checkpoint_loader_fuzz: KV checkpoint file bytes into the disk store, seeds in
#     corpus-checkpoint/ (written by make_checkpoint_seeds.cpp)
# usage: run_http_fuzz.sh FUZZER REPO_ROOT OUT_DIR SECONDS
set -eu
BIN=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4
TARGET=$(basename "$BIN")
case "$TARGET" in
  http_request_fuzz) SEEDS=corpus MAX_LEN=8192 ;;
  endpoint_json_fuzz) SEEDS=corpus-json MAX_LEN=16384 ;;
  checkpoint_loader_fuzz) SEEDS=corpus-checkpoint MAX_LEN=16384 ;;
  *) echo "run_http_fuzz.sh: unknown fuzzer $TARGET" >&2; exit 2 ;;
esac
mkdir -p "$OUT/corpus-$TARGET"
cp "$ROOT/tests/gateway/fuzz/$SEEDS/"* "$OUT/corpus-$TARGET/"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$BIN" -max_total_time="$SECONDS_TOTAL" -max_len=$MAX_LEN -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$OUT/$TARGET-" "$OUT/corpus-$TARGET"
