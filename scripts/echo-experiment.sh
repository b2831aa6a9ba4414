#!/usr/bin/env bash
# The echo experiment (docs/kv-checkpoints.md, issue 12 item 7): one multi-turn tool conversation
# through the real gateway on the embedded trained agent model (its own tool calls) and on the forged
# tiny model (injected replies), replayed in three client echo modes under warn
# and strict contracts, with and without a daemon restart between turns. Prints the table.
# Usage: scripts/echo-experiment.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
cmake --build "$BUILD_DIR" --target gateway_e2e_tests >/dev/null
"$BUILD_DIR/tests/gateway/e2e/gateway_e2e_tests" --gtest_filter='EchoExperiment.*' 2>/dev/null |
  sed -n '/^| model | contracts/,/^$/p'
