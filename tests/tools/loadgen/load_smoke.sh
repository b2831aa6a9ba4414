#!/bin/sh
# The load tool as a correctness test: ds4d on the tiny model, 8 streaming Beast clients plus
# the Python http.client, Node fetch and curl keep-alive clients for a bounded time, loopback
# only. Passes when no response was dropped or hung and requests completed (ds4d-load's exit
# status; 429s are fine). The daemon reads a fake meminfo, so the host's free memory does not
# decide the outcome.
# usage: load_smoke.sh LOADGEN DS4D MODEL CLIENTS_DIR SECONDS
set -eu
loadgen=$1 ds4d=$2 model=$3 clients=$4 seconds=$5
for tool in python3 node curl; do
  command -v "$tool" >/dev/null || { echo "load_smoke: $tool is not installed (scripts/install-deps.sh)"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'MemTotal: 67108864 kB\nMemFree: 16777216 kB\nMemAvailable: 33554432 kB\nCached: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n' > "$work/meminfo"
exec "$loadgen" --clients 8 --duration "$seconds" --max-tokens 8 --warmup 5 --rss-interval 5 \
  --request-timeout 60 --min-completed 8 --daemon-log "$work/ds4d.log" \
  --side "python3 $clients/python_keepalive.py" --side "node $clients/node_fetch.mjs" \
  --side "sh $clients/curl_keepalive.sh" \
  --spawn -- "$ds4d" --model "$model" --port 0 --host 127.0.0.1 --model-threads 2 --model-context 4096 \
  --model-pin none --memory-floor 1GiB --memory-meminfo-path "$work/meminfo" --memory-psi-path "" \
  --cache-hot-bytes 64MiB
