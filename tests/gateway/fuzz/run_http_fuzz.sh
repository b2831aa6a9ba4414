#!/bin/sh
# Builds a gateway fuzzer with clang (address + undefined sanitizers) from the gateway sources
# and runs it for the given seconds from its checked-in seed corpus. A crash, sanitizer report
# or broken invariant makes libFuzzer exit non-zero, which fails the test.
#   TARGET http_request_fuzz (default): raw HTTP bytes, seeds in corpus/
#   TARGET endpoint_json_fuzz: the JSON body of every POST endpoint, seeds in corpus-json/
#   TARGET checkpoint_loader_fuzz: KV checkpoint file bytes into the disk store, seeds in
#     corpus-checkpoint/ (written by make_checkpoint_seeds.cpp)
# usage: run_http_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS [TARGET]
set -eu
CXX=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4 TARGET=${5:-http_request_fuzz}
case "$TARGET" in
  http_request_fuzz) SEEDS=corpus MAX_LEN=8192 ;;
  endpoint_json_fuzz) SEEDS=corpus-json MAX_LEN=16384 ;;
  checkpoint_loader_fuzz) SEEDS=corpus-checkpoint MAX_LEN=16384 ;;
  *) echo "run_http_fuzz.sh: unknown target $TARGET" >&2; exit 2 ;;
esac
H="$ROOT/gateway/http" S="$ROOT/gateway/serving" P="$ROOT/gateway/protocol" C="$ROOT/gateway/cache"
U="$ROOT/gateway/upstream"
SOURCES="$H/router.cpp $H/reply.cpp $H/endpoint_support.cpp $H/service_endpoints.cpp $H/token_endpoints.cpp
  $H/chat_endpoint.cpp $H/completion_endpoint.cpp $H/generation_support.cpp $H/response_channel.cpp
  $H/turn_stream.cpp $H/turn_submit.cpp $H/messages_endpoint.cpp $H/responses_endpoint.cpp $H/response_history.cpp
  $H/model_names.cpp $H/output_support.cpp $H/engine_endpoint.cpp $U/job_wire.cpp $U/vocab_fingerprint.cpp
  $S/dsml_token_policy.cpp $S/json_format_policy.cpp $S/no_tool_calls_policy.cpp $S/token_choice.cpp $S/service.cpp $S/service_turn.cpp $S/prefix_reuse.cpp $S/metrics.cpp $S/prometheus_registry.cpp
  $S/stop_sequence_filter.cpp $C/checkpoint_file.cpp $C/disk_store.cpp $C/hot_store.cpp
  $P/chat_request.cpp $P/chat_render.cpp $P/contract_store.cpp $P/dsml_format.cpp $P/dsml_parser.cpp $P/dsml_sampling.cpp $P/json_constraint.cpp $P/output_controls.cpp
  $P/json_fields.cpp $P/json_scan.cpp $P/openai_shapes.cpp $P/anthropic_request.cpp $P/anthropic_shapes.cpp
  $P/responses_request.cpp $P/responses_shapes.cpp $P/reasoning_token.cpp $P/tool_call_id.cpp $P/utf8_assembler.cpp $P/fuzz/boost_json_src.cpp
  $ROOT/engine/sampler/sampler.cpp"
FLAGS="-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -I$ROOT"
# Each gateway source is compiled once into OUT/obj and shared by both targets (OUT is the same
# folder for both tests); it is recompiled when it or any gateway/sampler header is newer.
mkdir -p "$OUT/obj"
newest_header=$(ls -t "$H"/*.hpp "$S"/*.hpp "$P"/*.hpp "$C"/*.hpp "$ROOT"/engine/sampler/*.hpp "$ROOT"/tests/gateway/*.hpp | head -n 1)
OBJECTS=""
for src in $SOURCES; do
  obj="$OUT/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
    # shellcheck disable=SC2086
    "$CXX" $FLAGS -c "$src" -o "$obj.new" && mv "$obj.new" "$obj"
  fi
  OBJECTS="$OBJECTS $obj"
done
# shellcheck disable=SC2086
"$CXX" $FLAGS -fsanitize=fuzzer -o "$OUT/$TARGET" "$ROOT/tests/gateway/fuzz/$TARGET.cpp" $OBJECTS \
  -lspdlog -lfmt -lxxhash -pthread
mkdir -p "$OUT/corpus-$TARGET"
cp "$ROOT/tests/gateway/fuzz/$SEEDS/"* "$OUT/corpus-$TARGET/"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$OUT/$TARGET" -max_total_time="$SECONDS_TOTAL" -max_len=$MAX_LEN -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$OUT/$TARGET-" "$OUT/corpus-$TARGET"
