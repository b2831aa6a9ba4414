#!/usr/bin/env bash
# Runs the tokenizer fuzzer (built with clang, address + undefined sanitizers, by the ds4_fuzzers
# target, cmake/Ds4Fuzz.cmake) for the given time on the vocabulary of MODEL.gguf.
#   run_tokenizer_fuzz.sh FUZZER SOURCE_DIR WORK_DIR SECONDS MODEL.gguf
# WORK_DIR receives the corpus (the checked-in seeds + what the fuzzer adds) and crash
# artifacts. Exit status: 0 when nothing was found, non-zero on a crash or broken property.
set -euo pipefail
bin=$1 src=$2 work=$3 seconds=$4 model=$5
mkdir -p "$work/corpus" "$work/artifacts"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export DS4D_FUZZ_TOKENIZER_MODEL=$model
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$src/tests/engine/tokenizer/fuzz/corpus"
