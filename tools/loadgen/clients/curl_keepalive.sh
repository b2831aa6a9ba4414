#!/bin/sh
# Keep-alive chat client on curl, for ds4d-load --side: each curl invocation sends a batch of
# requests on one reused connection (--next), streamed and non-streamed alternately, until
# DS4D_LOAD_SECONDS have passed. A request is dropped when curl got no status (000: empty reply,
# reset) or a 200 stream lacks its [DONE]. The last line printed is the JSON summary.
set -u
url=${DS4D_LOAD_URL:-http://127.0.0.1:8080}
seconds=${DS4D_LOAD_SECONDS:-30}
max_tokens=${DS4D_LOAD_MAX_TOKENS:-8}
timeout=${DS4D_LOAD_TIMEOUT:-120}
case "$url" in
  http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*) ;;
  *) echo "curl_keepalive: loopback only, not $url" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
end=$(( $(date +%s) + ${seconds%.*} ))
requests=0 completed=0 dropped=0 connections=0 s200=0 s429=0 s503=0 sother=0
batch=4
while [ "$(date +%s)" -lt "$end" ]; do
  set --
  i=0
  while [ "$i" -lt "$batch" ]; do
    stream=false; [ $((i % 2)) -eq 0 ] && stream=true
    [ "$i" -gt 0 ] && set -- "$@" --next
    set -- "$@" -sS -m "$timeout" -o "$tmp/body$i" -w '%{http_code} %{num_connects}\n' \
      -H 'Content-Type: application/json' \
      -d "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":$max_tokens,\"stream\":$stream}" \
      "$url/v1/chat/completions"
    i=$((i + 1))
  done
  rm -f "$tmp"/body*
  curl "$@" > "$tmp/codes" 2> "$tmp/err"
  i=0
  while read -r code connects; do
    requests=$((requests + 1)); connections=$((connections + connects))
    case "$code" in
      200) s200=$((s200 + 1))
           if [ $((i % 2)) -eq 1 ] || tail -c 64 "$tmp/body$i" | grep -q 'data: \[DONE\]'; then
             completed=$((completed + 1))
           else
             dropped=$((dropped + 1))
           fi ;;
      429) s429=$((s429 + 1)); sleep 0.25 ;;
      503) s503=$((s503 + 1)); sleep 0.25 ;;
      000) dropped=$((dropped + 1)); sleep 0.2 ;;
      *) sother=$((sother + 1)) ;;
    esac
    i=$((i + 1))
  done < "$tmp/codes"
done
printf '{"client":"curl","requests":%d,"completed":%d,"dropped":%d,"connections":%d,"statuses":{"200":%d,"429":%d,"503":%d},"other_status":%d}\n' \
  "$requests" "$completed" "$dropped" "$connections" "$s200" "$s429" "$s503" "$sother"
