#!/usr/bin/env bash
# The speculation sweep (docs/speculation.md §the-sweep): one fixed greedy request for
# K = 0..6, each K on a freshly started ds4d, the whole sweep twice (two independent restarts per
# K), printing per run and K the completion tokens, finish reason, SHA-256 of the reply,
# drafted/accepted drafts and decode tok/s (thinking off, so temperature 0 is greedy). Every row's SHA-256 must equal K = 0's: exact
# speculative decoding changes speed, never output; the last line says whether that held.
#   scripts/speculation-sweep.sh MODEL [PROMPT]
# Environment: BUILD_DIR (build), DS4D (the binary), DRAFTER (ngram), MAX_TOKENS (512),
# THREADS (0: all cores), KS ("0 1 2 3 4 5 6"), RUNS (2).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 MODEL [PROMPT]" >&2; exit 2; }
MODEL=$1
# The default asks the embedded agent model to repeat a sentence, which it runs to the length
# limit: the kind of output prompt lookup drafts for. Its reply to code it should copy is short and not a copy.
PROMPT=${2:-'Repeat: the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog.'}
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DS4D=${DS4D:-$BUILD_DIR/daemon/ds4d}
DRAFTER=${DRAFTER:-ngram}
MAX_TOKENS=${MAX_TOKENS:-512}
THREADS=${THREADS:-0}
KS=${KS:-0 1 2 3 4 5 6}
RUNS=${RUNS:-2}
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
decode_seconds() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '$1=="ds4d_decode_seconds_total"{print $2}'
}
body=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"user","content":sys.argv[1]}],
  "max_tokens":int(sys.argv[2]),"temperature":0,"thinking":False}))' "$PROMPT" "$MAX_TOKENS")

printf '%-3s %-2s %6s %-9s %-16s %7s %8s %10s %8s\n' run K tokens finish sha256 drafted accepted acceptance tok/s
base=
same=yes
for run in $(seq 1 "$RUNS"); do
  for k in $KS; do
    port=$(free_port)
    "$DS4D" --model "$MODEL" --pin none --port "$port" --context 4096 --hot-cache 0 --memory-floor 0 \
      --model-threads "$THREADS" --speculation-drafter "$DRAFTER" --speculation-k "$k" --log-level warn \
      >"$tmp/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
      curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
      kill -0 "$pid" 2>/dev/null || { cat "$tmp/log" >&2; exit 1; }
      sleep 0.1
    done
    before=$(decode_seconds "$port")
    curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' -d "$body" >"$tmp/reply"
    after=$(decode_seconds "$port")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    row=$(python3 - "$tmp/reply" "$before" "$after" <<'PY'
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
c = r["choices"][0]
m = c["message"]
text = (m.get("reasoning_content") or "") + "\0" + (m.get("content") or "") + "\0" + json.dumps(m.get("tool_calls") or [])
n = r["usage"]["completion_tokens"]
spec = r.get("ds4d", {}).get("speculation", {})
d, a = spec.get("drafted_tokens", 0), spec.get("accepted_tokens", 0)
secs = float(sys.argv[3]) - float(sys.argv[2])
print(n, c["finish_reason"], hashlib.sha256(text.encode()).hexdigest(), d, a,
      f"{a / d:.2f}" if d else "-", f"{n / secs:.1f}" if secs > 0 else "-")
PY
)
    read -r n finish sha d a acc tps <<<"$row"
    [ -z "$base" ] && base=$sha
    [ "$sha" = "$base" ] || same=no
    printf '%-3s %-2s %6s %-9s %-16s %7s %8s %10s %8s\n' "$run" "$k" "$n" "$finish" "${sha:0:16}" "$d" "$a" "$acc" "$tps"
  done
done
echo "model $(basename "$MODEL"), drafter $DRAFTER, max_tokens $MAX_TOKENS: every reply identical to K=0: $same (sha256 $base)"
[ "$same" = yes ]
