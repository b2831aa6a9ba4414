#!/usr/bin/env bash
# Runs the client-text fuzzer (tests/gateway/fuzz/client_text_fuzz.cpp, built by the ds4_fuzzers
# target from the renderer, tokenizer and GGUF reader libraries, cmake/Ds4Fuzz.cmake) for the
# given seconds from its checked-in seeds on the vocabulary of MODEL.gguf. Exit status: 0 when
# nothing was found, non-zero on a crash or a broken property.
#   run_client_text_fuzz.sh FUZZER REPO_ROOT OUT_DIR SECONDS MODEL.gguf
set -euo pipefail
bin=$1 root=$2 out=$3 seconds=$4 model=$5
mkdir -p "$out/corpus" "$out/artifacts"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export DS4D_FUZZ_TOKENIZER_MODEL=$model
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=2048 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus" "$root/tests/gateway/fuzz/corpus-client-text"
