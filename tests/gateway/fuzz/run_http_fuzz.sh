#!/bin/sh
# Builds the HTTP request fuzzer with clang (address + undefined sanitizers) from the gateway
# sources and runs it for the given seconds from the checked-in seed corpus. A crash, sanitizer
# report or broken invariant makes libFuzzer exit non-zero, which fails the test.
# usage: run_http_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS
set -eu
CXX=$1 ROOT=$2 OUT=$3 SECONDS_TOTAL=$4
mkdir -p "$OUT/corpus"
H="$ROOT/gateway/http" S="$ROOT/gateway/serving" P="$ROOT/gateway/protocol"
SOURCES="$ROOT/tests/gateway/fuzz/http_request_fuzz.cpp
  $H/router.cpp $H/reply.cpp $H/endpoint_support.cpp $H/service_endpoints.cpp $H/token_endpoints.cpp
  $H/chat_endpoint.cpp $H/completion_endpoint.cpp $H/generation_support.cpp $H/response_channel.cpp
  $H/turn_stream.cpp $H/turn_submit.cpp $H/messages_endpoint.cpp $H/responses_endpoint.cpp $H/response_history.cpp
  $S/dsml_token_policy.cpp $S/service.cpp $S/metrics.cpp $S/prometheus_registry.cpp $S/stop_sequence_filter.cpp
  $P/chat_request.cpp $P/chat_render.cpp $P/contract_store.cpp $P/dsml_format.cpp $P/dsml_parser.cpp $P/dsml_sampling.cpp
  $P/json_fields.cpp $P/json_scan.cpp $P/openai_shapes.cpp $P/anthropic_request.cpp $P/anthropic_shapes.cpp
  $P/responses_request.cpp $P/responses_shapes.cpp $P/reasoning_token.cpp $P/tool_call_id.cpp $P/utf8_assembler.cpp $P/fuzz/boost_json_src.cpp
  $ROOT/engine/sampler/sampler.cpp"
# shellcheck disable=SC2086
"$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -I"$ROOT" \
  -o "$OUT/http_request_fuzz" $SOURCES -lspdlog -lfmt -pthread
cp "$ROOT/tests/gateway/fuzz/corpus/"* "$OUT/corpus/"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$OUT/http_request_fuzz" -max_total_time="$SECONDS_TOTAL" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$OUT/http_request_fuzz-" "$OUT/corpus"
