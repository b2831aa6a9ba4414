#!/usr/bin/env bash
# Builds the tokenizer fuzzer with clang (address + undefined sanitizers) from the tokenizer and
# GGUF reader sources and runs it for the given time on the vocabulary of MODEL.gguf.
#   run_tokenizer_fuzz.sh SOURCE_DIR WORK_DIR SECONDS MODEL.gguf
# WORK_DIR receives the binary, the corpus (the checked-in seeds + what the fuzzer adds) and
# crash artifacts. Exit status: 0 when nothing was found, non-zero on a crash or broken property.
set -euo pipefail
src=$1 work=$2 seconds=$3 model=$4
mkdir -p "$work/corpus" "$work/artifacts"
bin="$work/tokenizer_fuzz"
sources=(
  "$src/tests/engine/tokenizer/fuzz/tokenizer_fuzz.cpp"
  "$src"/engine/tokenizer/{byte_level,joyai_pretokenizer,bpe_merger,tokenizer,tokenizer_gguf}.cpp
  "$src"/engine/gguf/{gguf_error,gguf_value,mapped_file,gguf_reader}.cpp
  "$src/engine/quant/quant_type.cpp"
)
newest_source=$(ls -t "${sources[@]}" "$src"/engine/tokenizer/*.hpp "$src"/engine/gguf/*.hpp | head -1)
if [[ ! -x "$bin" || "$newest_source" -nt "$bin" ]]; then
  "${FUZZ_CXX:-clang++}" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB \
    -I"$src" "${sources[@]}" -o "$bin.new" -lspdlog -lfmt -pthread
  mv "$bin.new" "$bin"
fi
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export DS4D_FUZZ_TOKENIZER_MODEL=$model
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$src/tests/engine/tokenizer/fuzz/corpus"
