#!/usr/bin/env bash
# Builds the GGUF reader fuzzer with clang (the main build uses gcc, so the fuzz build is its own
# clang++ invocation on the reader sources) and runs it for a given time.
#   run_gguf_fuzz.sh SOURCE_DIR WORK_DIR SECONDS SEED_MAKER [MODEL.gguf ...]
# WORK_DIR receives the binary, the corpus (seeds + whatever the fuzzer adds) and crash files.
# Exit status: 0 when the run found nothing, non-zero when it crashed (the crash input is kept in
# WORK_DIR/artifacts and named in the output).
set -euo pipefail
src=$1 work=$2 seconds=$3 seeds=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
bin="$work/gguf_reader_fuzz"
sources=(
  "$src/tests/engine/gguf/fuzz/gguf_reader_fuzz.cpp"
  "$src/engine/gguf/gguf_error.cpp" "$src/engine/gguf/gguf_value.cpp" "$src/engine/gguf/mapped_file.cpp"
  "$src/engine/gguf/gguf_reader.cpp" "$src/engine/gguf/gguf_writer.cpp" "$src/engine/gguf/ds4_layout.cpp"
  "$src/engine/quant/quant_type.cpp"
)
newest_source=$(ls -t "${sources[@]}" "$src"/engine/gguf/*.hpp | head -1)
if [[ ! -x "$bin" || "$newest_source" -nt "$bin" ]]; then
  "${FUZZ_CXX:-clang++}" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src" "${sources[@]}" -o "$bin.new"
  mv "$bin.new" "$bin"
fi
"$seeds" "$work/seeds" "$@" > /dev/null
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$work/seeds"
