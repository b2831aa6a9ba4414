#!/bin/sh
# Builds a gateway fuzzer with clang (address + undefined sanitizers) from the gateway sources
# and runs it for the given seconds from its checked-in seed corpus. A crash, sanitizer report
# or broken invariant makes libFuzzer exit non-zero, which fails the test.
#   TARGET http_request_fuzz (default): raw HTTP bytes, seeds in corpus/
#   TARGET endpoint_json_fuzz: the JSON body of every POST endpoint, seeds in corpus-json/
#   TARGET checkpoint_loader_fuzz: KV checkpoint file bytes into the disk store, seeds in
#     corpus-checkpoint/ (written by make_checkpoint_seeds.cpp)
# usage: run_http_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS SOURCES_LIST [TARGET]
#   SOURCES_LIST: the gateway libraries' sources, one a line with their own compile options,
#   written by CMake (cmake/Ds4FuzzSources.cmake), so no list here can go stale.
set -eu
CXX=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4 LIST=$5 TARGET=${6:-http_request_fuzz}
case "$TARGET" in
  http_request_fuzz) SEEDS=corpus MAX_LEN=8192 ;;
  endpoint_json_fuzz) SEEDS=corpus-json MAX_LEN=16384 ;;
  checkpoint_loader_fuzz) SEEDS=corpus-checkpoint MAX_LEN=16384 ;;
  *) echo "run_http_fuzz.sh: unknown target $TARGET" >&2; exit 2 ;;
esac
# Boost.JSON's implementation (the build links the compiled library instead).
BOOST_JSON_SRC="$ROOT/tests/gateway/protocol/fuzz/boost_json_src.cpp"
FLAGS="-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -I$ROOT"
# Each gateway source is compiled once into OUT/obj and shared by the targets (OUT is the same
# folder for all of them); it is recompiled when it or any header of the folders compiled is newer.
mkdir -p "$OUT/obj"
newest_header=$( (cut -d' ' -f1 "$LIST" | xargs -n1 dirname | sort -u | while read -r dir; do
  ls "$dir"/*.hpp 2>/dev/null || true; done; ls "$ROOT"/tests/gateway/*.hpp "$ROOT"/tests/gateway/fuzz/*.hpp) |
  xargs ls -t | head -n 1)
OBJECTS=""
compile() {  # compile SOURCE [OPTIONS...]
  src=$1
  shift
  obj="$OUT/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
    # shellcheck disable=SC2086
    "$CXX" $FLAGS "$@" -c "$src" -o "$obj.new" && mv "$obj.new" "$obj"
  fi
  OBJECTS="$OBJECTS $obj"
}
while read -r src options; do
  # shellcheck disable=SC2086
  compile "$src" $options
done < "$LIST"
compile "$BOOST_JSON_SRC"
# shellcheck disable=SC2086
"$CXX" $FLAGS -fsanitize=fuzzer -o "$OUT/$TARGET" "$ROOT/tests/gateway/fuzz/$TARGET.cpp" $OBJECTS \
  -lspdlog -lfmt -lxxhash -pthread
mkdir -p "$OUT/corpus-$TARGET"
cp "$ROOT/tests/gateway/fuzz/$SEEDS/"* "$OUT/corpus-$TARGET/"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$OUT/$TARGET" -max_total_time="$SECONDS_TOTAL" -max_len=$MAX_LEN -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$OUT/$TARGET-" "$OUT/corpus-$TARGET"
