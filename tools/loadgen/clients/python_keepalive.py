#!/usr/bin/env python3
"""Keep-alive chat client on Python's http.client, for ds4d-load --side.

One HTTPConnection reused for every request (the way requests.Session and the openai SDK
behave), alternating streamed and non-streamed chat completions until DS4D_LOAD_SECONDS have
passed. A request counts as dropped when it was sent and no complete response came back:
no status line (RemoteDisconnected, reset), a truncated body, or a stream without [DONE].
A dropped connection is replaced and the loop goes on. The last line printed is the JSON
summary ds4d-load reads. Loopback only (the URL comes from ds4d-load)."""
import http.client
import json
import os
import sys
import time
import urllib.parse


def main():
    url = urllib.parse.urlsplit(os.environ.get("DS4D_LOAD_URL", "http://127.0.0.1:8080"))
    seconds = float(os.environ.get("DS4D_LOAD_SECONDS", "30"))
    max_tokens = int(os.environ.get("DS4D_LOAD_MAX_TOKENS", "8"))
    timeout = float(os.environ.get("DS4D_LOAD_TIMEOUT", "120"))
    if url.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("python_keepalive: loopback only, not %s" % url.hostname)
    deadline = time.monotonic() + seconds
    counts = {"client": "python-http.client", "requests": 0, "completed": 0, "dropped": 0,
              "connections": 0, "statuses": {}, "drops": []}
    conn = None
    i = 0
    while time.monotonic() < deadline:
        if conn is None:
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
            counts["connections"] += 1
        stream = i % 2 == 0
        i += 1
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": max_tokens, "stream": stream})
        counts["requests"] += 1
        try:
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.HTTPException, OSError) as e:
            counts["dropped"] += 1
            if len(counts["drops"]) < 4:
                counts["drops"].append(type(e).__name__ + ": " + str(e))
            conn.close()
            conn = None
            time.sleep(0.2)  # the daemon may be restarting (fault tests): do not spin
            continue
        key = str(resp.status)
        counts["statuses"][key] = counts["statuses"].get(key, 0) + 1
        if resp.status == 200:
            if stream:
                ok = data.rstrip().endswith(b"data: [DONE]") and b'"finish_reason":"' in data
            else:
                try:
                    ok = "choices" in json.loads(data)
                except ValueError:
                    ok = False
            if ok:
                counts["completed"] += 1
            else:
                counts["dropped"] += 1
                if len(counts["drops"]) < 4:
                    counts["drops"].append("incomplete 200 body: %r" % data[-80:])
        elif resp.status in (429, 503):
            time.sleep(0.25)
        if resp.will_close:
            conn.close()
            conn = None
    if conn is not None:
        conn.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
