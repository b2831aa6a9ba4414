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
# The embedded model and --pin none are defaults only: a caller's own --model / --pin (or the
# DS4D_MODEL_PATH / DS4D_MODEL_PIN variables) wins, since ds4d accepts each flag once.
defaults=()
given() { local flag=$1 a; shift; for a in "$@"; do case "$a" in "$flag" | "$flag"=*) return 0 ;; esac; done; return 1; }
if ! given --model "$@" && ! given --model-path "$@" && [ -z "${DS4D_MODEL_PATH:-}" ]; then
  defaults+=(--model "$BUILD_DIR/models/ds4-tiny-agent.gguf")
fi
if ! given --pin "$@" && ! given --model-pin "$@" && [ -z "${DS4D_MODEL_PIN:-}" ]; then
  defaults+=(--pin none)
fi
exec "$BUILD_DIR/daemon/ds4d" "${defaults[@]}" "$@"
