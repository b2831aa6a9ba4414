#!/usr/bin/env bash
# Builds the client-text fuzzer (tests/gateway/fuzz/client_text_fuzz.cpp) with clang (address +
# undefined sanitizers) from the renderer, tokenizer and GGUF reader sources, and runs it for the
# given seconds from its checked-in seeds on the vocabulary of MODEL.gguf. Exit status: 0 when
# nothing was found, non-zero on a crash or a broken property.
#   run_client_text_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS MODEL.gguf
set -euo pipefail
cxx=$1 root=$2 out=$3 seconds=$4 model=$5
mkdir -p "$out/corpus" "$out/artifacts"
p="$root/gateway/protocol"
sources=(
  "$root/tests/gateway/fuzz/client_text_fuzz.cpp"
  "$p"/{chat_request,chat_render,contract_store,dsml_format,json_fields,json_scan,output_controls,tool_call_id}.cpp
  "$p/fuzz/boost_json_src.cpp"
  "$root"/engine/tokenizer/{byte_level,joyai_pretokenizer,bpe_merger,tokenizer,tokenizer_gguf}.cpp
  "$root"/engine/gguf/{gguf_error,gguf_value,mapped_file,gguf_reader}.cpp
  "$root/engine/quant/quant_type.cpp"
)
bin="$out/client_text_fuzz"
newest=$(ls -t "${sources[@]}" "$p"/*.hpp "$root"/engine/tokenizer/*.hpp "$root"/engine/gguf/*.hpp | head -1)
if [[ ! -x "$bin" || "$newest" -nt "$bin" ]]; then
  "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB \
    -I"$root" "${sources[@]}" -o "$bin.new" -lspdlog -lfmt -pthread
  mv "$bin.new" "$bin"
fi
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export DS4D_FUZZ_TOKENIZER_MODEL=$model
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=2048 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus" "$root/tests/gateway/fuzz/corpus-client-text"
