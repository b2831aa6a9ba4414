#!/usr/bin/env python3
"""Keep-alive regression: Python clients in tight loops on one connection get every answer.

Before the fix, about 7% of requests on a requests.Session got no response at all: the
gateway's disconnect watch took a stale readiness report of the socket (for bytes an earlier
read had already consumed) for a hang-up and cancelled the request. This runs the gateway
harness on the tiny forged model and checks, with 0 failures allowed:
  - 300 non-streamed chat completions on one requests.Session,
  - 300 streamed ones on one requests.Session (each ends with data: [DONE]),
  - 300 on one http.client connection, headers and body sent in separate send() calls,
  - 100 fresh connections that send the headers and the body in two writes.

Usage: keepalive_test.py HARNESS MODEL   (or DS4D_GATEWAY_HARNESS / DS4D_TINY_MODEL)
"""
import http.client
import json
import os
import socket
import subprocess
import sys

import requests

ROUNDS = int(os.environ.get("DS4D_KEEPALIVE_ROUNDS", "300"))
BODY = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "thinking": False}


def start_harness(harness, model):
    proc = subprocess.Popen([harness, "--model", model, "--port", "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    port = None
    for line in proc.stdout:
        if line.startswith("LISTENING "):
            port = int(line.split()[1])
        if line.strip() == "READY":
            return proc, port
    raise RuntimeError("gateway_harness exited before READY")


def session_loop(url, stream):
    failures = []
    with requests.Session() as s:
        for i in range(ROUNDS):
            try:
                r = s.post(url, json=dict(BODY, stream=stream), stream=stream, timeout=30)
                if r.status_code != 200:
                    failures.append(f"#{i}: status {r.status_code}")
                    continue
                if stream:
                    lines = [l for l in r.iter_lines(decode_unicode=True) if l.startswith("data: ")]
                    if not lines or lines[-1] != "data: [DONE]":
                        failures.append(f"#{i}: stream without [DONE]")
                else:
                    r.json()["choices"][0]["message"]
            except Exception as e:  # a dropped connection: ConnectionError, ChunkedEncodingError, ...
                failures.append(f"#{i}: {type(e).__name__}: {e}")
    return failures


def http_client_loop(port):
    failures = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    payload = json.dumps(BODY).encode()
    for i in range(ROUNDS):
        try:
            conn.putrequest("POST", "/v1/chat/completions")
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(payload)))
            conn.endheaders()   # the headers go out alone
            conn.send(payload)  # then the body
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                failures.append(f"#{i}: status {r.status}")
            else:
                json.loads(body)
        except Exception as e:
            failures.append(f"#{i}: {type(e).__name__}: {e}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.close()
    return failures


def split_send_fresh_connections(port, n=100):
    failures = []
    payload = json.dumps(BODY).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n").encode()
    for i in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(head)
            s.sendall(payload)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            if not data.startswith(b"HTTP/1.1 200"):
                failures.append(f"#{i}: got {data[:40]!r}")
    return failures


def main():
    harness = sys.argv[1] if len(sys.argv) > 1 else os.environ["DS4D_GATEWAY_HARNESS"]
    model = sys.argv[2] if len(sys.argv) > 2 else os.environ["DS4D_TINY_MODEL"]
    proc, port = start_harness(harness, model)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    results = {}
    try:
        results["requests.Session, not streamed"] = session_loop(url, stream=False)
        results["requests.Session, streamed"] = session_loop(url, stream=True)
        results["http.client, split header/body sends"] = http_client_loop(port)
        results["fresh connections, split header/body sends"] = split_send_fresh_connections(port)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    bad = 0
    for name, failures in results.items():
        print(f"{name}: {len(failures)} failed" + (f" (first: {failures[0]})" if failures else ""))
        bad += len(failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
