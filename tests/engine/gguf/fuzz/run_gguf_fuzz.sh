#!/usr/bin/env bash
# Runs the GGUF reader fuzzer (built with clang by the ds4_fuzzers target, cmake/Ds4Fuzz.cmake;
# the main build uses gcc) for a given time on seeds written by SEED_MAKER from the models.
#   run_gguf_fuzz.sh FUZZER WORK_DIR SECONDS SEED_MAKER [MODEL.gguf ...]
# WORK_DIR receives the corpus (seeds + whatever the fuzzer adds) and crash files.
# Exit status: 0 when the run found nothing, non-zero when it crashed (the crash input is kept in
# WORK_DIR/artifacts and named in the output).
set -euo pipefail
bin=$1 work=$2 seconds=$3 seeds=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
"$seeds" "$work/seeds" "$@" > /dev/null
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$work/seeds"
