#!/usr/bin/env bash
# The load report: ds4d on the forged bench model, one fresh daemon per concurrency level,
# ds4d-load for SECONDS at each level, the Python/Node/curl keep-alive clients beside the
# streaming clients from level 8 on. Writes OUT_DIR/level-N.txt (the tool's output) and
# OUT_DIR/level-N.json, and prints one Markdown table row per level at the end.
#   run_report.sh BUILD_DIR OUT_DIR SECONDS [LEVEL ...]      (levels default: 1 8 32 128)
# Refused clients pause 1 s (±50 %) before retrying, about what a client honouring the 429's
# Retry-After (2 s) does. Run it under `nice -n 10` on a shared machine; loopback only.
# The machine's load average is sampled every 30 s into OUT_DIR/loadavg.txt (the report states
# what else ran beside the daemon); each row shows the range of the 1-minute figure.
# Exit status: 1 when any level dropped or hung a response.
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 seconds=$3
shift 3
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(1 8 32 128)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
model=${DS4D_LOAD_MODEL:-$build/models/ds4-bench-forged.gguf}
if [ ! -f "$model" ]; then
  echo "run_report: forging the bench model into $model"
  "$build/ds4ctl/ds4ctl" forge --preset bench --seed 1 -o "$model"
fi
warmup=$(( seconds / 5 ))
[ "$warmup" -ge 10 ] || warmup=10
status=0
rows=()
: > "$out/loadavg.txt"
( while :; do echo "$(date -u +%H:%M:%S) $(cat "$out/level.now" 2>/dev/null || echo none) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done \
    >> "$out/loadavg.txt" ) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT
for n in "${levels[@]}"; do
  echo "$n" > "$out/level.now"
  side=()
  if [ "$n" -ge 8 ]; then
    side=(--side "python3 $here/clients/python_keepalive.py" --side "node $here/clients/node_fetch.mjs"
          --side "sh $here/clients/curl_keepalive.sh")
  fi
  echo "run_report: $n clients for $seconds s ($(date -u +%H:%M:%S))"
  set +e
  "$build/tools/loadgen/ds4d-load" --clients "$n" --duration "$seconds" --warmup "$warmup" --max-tokens 32 \
    --request-timeout 600 --rss-interval 10 --backoff-ms 1000 --json "$out/level-$n.json" --daemon-log "$out/level-$n.ds4d.log" \
    "${side[@]}" \
    --spawn -- "$build/daemon/ds4d" --model "$model" --port 0 --host 127.0.0.1 --model-threads 2 \
    --model-pin none --memory-floor 1GiB > "$out/level-$n.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || status=1
  tail -n 20 "$out/level-$n.txt"
  rows+=("$(python3 - "$out/level-$n.json" "$n" "$out/loadavg.txt" "$warmup" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
loads = [float(l.split()[2]) for l in open(sys.argv[3]) if l.split()[1] == sys.argv[2]]
load = "%.1f–%.1f" % (min(loads), max(loads)) if loads else "?"
ag = r.get("anon_growth_percent")
# baseline: the first sample after warm-up (the model is faulted in by then)
rss = [x for x in r["rss"] if x["t_s"] + 1e-9 >= float(sys.argv[4])] or r["rss"]
side = sum(s["completed"] for s in r["side"]), sum(s["dropped"] for s in r["side"])
g = r["rss_growth_percent"]
print("| %s | %.0f s | %d | %d / %d | %d | %.0f / %.0f | %.0f / %.0f | %.0f → %.0f MiB (%s) | %.1f → %.1f MiB (%s) | %s | %s |" % (
    sys.argv[2], r["duration_s"], r["completed"], r["status_429"], r["status_503"], r["dropped"],
    r["ttft_ms_p50"], r["ttft_ms_p99"], r["itl_ms_p50"], r["itl_ms_p99"],
    rss[0]["rss_kib"] / 1024 if rss else 0, rss[-1]["rss_kib"] / 1024 if rss else 0,
    "n/a" if g is None else "%+.2f %%" % g,
    rss[0]["anon_kib"] / 1024 if rss else 0, rss[-1]["anon_kib"] / 1024 if rss else 0,
    "n/a" if ag is None else "%+.2f %%" % ag,
    "%d done / %d dropped" % side if r["side"] else "-", load))
PY
)")
done
echo
echo "| clients | time | completed | 429 / 503 | dropped | TTFT p50 / p99 ms | inter-token p50 / p99 ms | RSS (growth after warm-up) | RssAnon (growth after warm-up) | keep-alive side clients | load avg (1 min) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$status"
