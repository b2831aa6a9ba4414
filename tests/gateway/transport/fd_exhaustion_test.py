#!/usr/bin/env python3
"""Descriptor exhaustion: more idle connections than the gateway has file descriptors.

Before the fix the accept loop spun on EMFILE (one core at 100%, millions of log lines) and
/health went unanswered. The gateway harness runs here under RLIMIT_NOFILE 64 with 300 idle
connections opened against it; then, with all of them still open:
  - /health on a new connection answers 200,
  - the harness used under 50% of one core over 2 s,
  - it wrote fewer than 50 log lines.

Usage: fd_exhaustion_test.py HARNESS   (or DS4D_GATEWAY_HARNESS)
"""
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

FDS = 64
IDLE = 300


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def health(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


def main():
    harness = sys.argv[1] if len(sys.argv) > 1 else os.environ["DS4D_GATEWAY_HARNESS"]
    log = tempfile.TemporaryFile()
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (FDS, FDS))
    proc = subprocess.Popen([harness, "--scripted", "ok", "--port", "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=limit)
    port = None
    for line in proc.stdout:
        if line.startswith("LISTENING "):
            port = int(line.split()[1])
        if line.strip() == "READY":
            break
    idle = []
    ok = True
    try:
        for _ in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        time.sleep(0.5)
        before = cpu_seconds(proc.pid)
        time.sleep(2.0)
        busy = cpu_seconds(proc.pid) - before
        try:
            status = health(port)
        except OSError as e:
            status = f"no answer ({e})".encode()
        print(f"{IDLE} idle connections, RLIMIT_NOFILE {FDS}: harness CPU {busy / 2.0:.0%} of a core, "
              f"/health -> {status!r}")
        if busy / 2.0 > 0.5:
            print("FAIL: the accept loop spins")
            ok = False
        if not status.startswith(b"HTTP/1.1 200"):
            print("FAIL: /health was not answered")
            ok = False
    finally:
        for s in idle:
            s.close()
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.seek(0)
    lines = log.read().decode(errors="replace").splitlines()
    print(f"log lines: {len(lines)}" + (f" (first: {lines[0]})" if lines else ""))
    if len(lines) >= 50:
        print("FAIL: the log is flooded")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
