#!/usr/bin/env bash
# Installs what is missing, builds, and runs ds4d in the foreground on the embedded default
# model (the trained tiny agent model, models/ds4-tiny-agent.gguf, copied to build/models/). Extra
# arguments go to ds4d,
# e.g. `scripts/run.sh --port 8081` or `scripts/run.sh --model /srv/models/ds4-flash-q2.gguf`.
# Try it:  curl -s localhost:8080/v1/chat/completions -H 'Content-Type: application/json' -d '{"messages":[{"role":"user","content":"hi"}]}'
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
exec "$BUILD_DIR/daemon/ds4d" --model "$BUILD_DIR/models/ds4-tiny-agent.gguf" --pin none "$@"
