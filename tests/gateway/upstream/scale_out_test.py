#!/usr/bin/env python3
"""Gateway mode on loopback: three ds4d engine replicas (the tiny model) behind one ds4d gateway
(--upstream x3, --tokenizer), docs/scale-out.md.

1. Cache affinity: six conversations of several turns, interleaved in a shuffled order (as agents
   would), through the gateway: two name their session with prompt_cache_key, two with the
   X-Claude-Code-Session-Id header on /v1/messages, two give no hint (the route key is then the
   hash of their system prompt). For every follow-up turn the share of its prompt tokens the
   replica served from its cache is measured, with the gateway's consistent hashing and with a
   round-robin gateway as the baseline (other conversations, same replicas); both are printed.
   Hashing must reach >= 90% overall and beat round robin.
2. kill -9 of one replica under streaming load: no request that had not received a data event
   fails (it fails over), every stream ends well formed (a finish_reason and [DONE], the ones cut
   mid-stream with finish_reason "error"), and the replica, restarted, is marked up again and
   takes jobs.
3. With HAProxy installed (Debian's package), the shipped packaging/haproxy/ds4d-replicas.cfg
   pointed at the same replicas, clients sending X-DS4-Route-Key: the same measurement through
   the balancer (>= 90%). Without haproxy this part says SKIP.
usage: scale_out_test.py DS4D MODEL [HAPROXY_CFG]
"""
import re
import shutil
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

START_BUDGET_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, method, path, body=None, headers=None, timeout=120):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, str(e).encode()


class Daemon:
    def __init__(self, exe, workdir, name, args):
        self.exe, self.workdir, self.name, self.args = exe, workdir, name, args
        self.proc = None

    def start(self):
        env = dict(os.environ)
        for k in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_PID", "WATCHDOG_USEC"):
            env.pop(k, None)
        log = open(os.path.join(self.workdir, self.name + ".log"), "ab")
        self.proc = subprocess.Popen([self.exe] + self.args, stdout=log, stderr=log, env=env)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)


def replica_args(workdir, model, port):
    path = os.path.join(workdir, "replica-%d.toml" % port)
    with open(path, "w") as f:
        f.write('[model]\npath = "%s"\ncontext = 4096\npin = "none"\nthreads = 1\n'
                '[server]\nhost = "127.0.0.1"\nport = %d\nmax_queue = 32\n'
                '[memory]\nfloor = "0"\nreserve = "0"\n'
                '[cache]\nhot_bytes = "256MiB"\ndir = ""\ncheckpoint_min_tokens = 16\n'
                '[log]\nlevel = "info"\n' % (model, port))
    return ["--config", path]


def gateway_args(workdir, model, port, upstream_ports, routing):
    path = os.path.join(workdir, "gateway-%d.toml" % port)
    with open(path, "w") as f:
        f.write('[server]\nhost = "127.0.0.1"\nport = %d\nmax_queue = 64\n[log]\nlevel = "info"\n' % port)
    args = ["--config", path, "--tokenizer", model, "--engine-routing", routing]
    for p in upstream_ports:
        args += ["--upstream", "http://127.0.0.1:%d" % p]
    return args


def wait_healthy(port, what, check=None):
    until = time.time() + START_BUDGET_S
    while time.time() < until:
        status, body = http(port, "GET", "/health", timeout=5)
        if status == 200 and (check is None or check(json.loads(body))):
            return json.loads(body)
        time.sleep(0.2)
    raise SystemExit("FAIL: %s not healthy within %d s" % (what, START_BUDGET_S))


SYSTEM = ("You are a coding agent working in a large repository. Follow the user's instructions "
          "precisely, explain briefly what you change and why, keep answers short, never invent "
          "files, and prefer small, reviewable steps. ") * 6


class Conversation:
    def __init__(self, name, style, hint):
        self.name, self.style, self.hint = name, style, hint
        self.messages = []
        self.turn = 0

    def system(self):
        # Conversations without a hint differ in their system prompt (their route key).
        return SYSTEM + (" Project: %s." % self.name)

    def ask(self, port, max_tokens=12, route_header=False):
        self.turn += 1
        self.messages.append({"role": "user", "content": "Step %d of task %s: go on." % (self.turn, self.name)})
        if self.style == "messages":
            body = {"model": "ds4", "max_tokens": max_tokens, "system": self.system(),
                    "messages": self.messages, "temperature": 0, "thinking": {"type": "disabled"}}
            headers = {"X-Claude-Code-Session-Id": self.hint}
            if route_header:
                headers["X-DS4-Route-Key"] = self.name
            status, raw = http(port, "POST", "/v1/messages", body, headers)
            if status != 200:
                raise SystemExit("FAIL: %s turn %d: %d %s" % (self.name, self.turn, status, raw[:300]))
            r = json.loads(raw)
            text = "".join(b.get("text", "") for b in r["content"] if b["type"] == "text")
            u = r["usage"]
            cached = u["cache_read_input_tokens"]
            prompt = u["input_tokens"] + cached
        else:
            body = {"model": "ds4", "max_tokens": max_tokens, "temperature": 0, "thinking": False,
                    "messages": [{"role": "system", "content": self.system()}] + self.messages}
            if self.hint:
                body["prompt_cache_key"] = self.hint
            headers = {"X-DS4-Route-Key": self.name} if route_header else {}
            status, raw = http(port, "POST", "/v1/chat/completions", body, headers)
            if status != 200:
                raise SystemExit("FAIL: %s turn %d: %d %s" % (self.name, self.turn, status, raw[:300]))
            r = json.loads(raw)
            text = r["choices"][0]["message"]["content"] or ""
            prompt = r["usage"]["prompt_tokens"]
            cached = r["usage"]["prompt_tokens_details"]["cached_tokens"]
        self.messages.append({"role": "assistant", "content": text})
        return prompt, cached


def affinity(port, tag, turns, seed, route_header=False):
    convs = [Conversation("%s-a" % tag, "chat", "%s-key-a" % tag), Conversation("%s-b" % tag, "chat", "%s-key-b" % tag),
             Conversation("%s-c" % tag, "messages", "%s-session-c" % tag),
             Conversation("%s-d" % tag, "messages", "%s-session-d" % tag),
             Conversation("%s-e" % tag, "chat", ""), Conversation("%s-f" % tag, "chat", "")]
    rng = random.Random(seed)
    prompt_sum = cached_sum = 0
    per_turn = []
    for turn in range(turns):
        order = list(convs)
        rng.shuffle(order)
        for c in order:
            prompt, cached = c.ask(port, route_header=route_header)
            if turn > 0:  # follow-up turns only
                prompt_sum += prompt
                cached_sum += cached
                per_turn.append(cached / prompt)
    return cached_sum / prompt_sum, min(per_turn)


def haproxy_config(shipped, port, replica_ports, path):
    """The shipped configuration with loopback addresses and no system-wide settings."""
    with open(shipped) as f:
        text = f.read()
    text = re.sub(r"(?m)^\s*(user|group|daemon|log|option httplog).*\n", "", text)
    text = text.replace("bind 127.0.0.1:8080", "bind 127.0.0.1:%d" % port)
    servers = re.findall(r"(?m)^\s*server .*$", text)
    if len(servers) != len(replica_ports):
        raise SystemExit("FAIL: the shipped HAProxy configuration lists %d servers" % len(servers))
    for line, p in zip(servers, replica_ports):
        text = text.replace(line, re.sub(r"\S+:\d+", "127.0.0.1:%d" % p, line, count=1))
    with open(path, "w") as f:
        f.write(text)


def stream_chat(port, session, results, lock, stop, max_tokens=48, first_data=None, extra=None):
    """Streams requests until `stop` (one when `first_data` is given, which is set at its first data
    event); records (got_data, saw_done, finish_reason, error) per request."""
    n = 0
    while not stop.is_set():
        n += 1
        body = {"model": "ds4", "max_tokens": max_tokens, "temperature": 0.7, "seed": n, "stream": True,
                "thinking": False, "prompt_cache_key": "%s" % session,
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": "Request %d of %s: write a long story." % (n, session)}]}
        body.update(extra or {})
        got_data, done, finish, error = False, False, None, None
        try:
            req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port,
                                         data=json.dumps(body).encode(), method="POST")
            req.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(req, timeout=120) as r:
                for raw in r:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        done = True
                        break
                    ev = json.loads(payload)
                    got_data = True
                    if first_data is not None:
                        first_data.set()
                    if "error" in ev:
                        error = ev["error"]
                    for ch in ev.get("choices", []):
                        if ch.get("finish_reason"):
                            finish = ch["finish_reason"]
        except urllib.error.HTTPError as e:
            error = "HTTP %d %s" % (e.code, e.read()[:200])
        except Exception as e:  # a torn stream
            error = "transport: %r" % e
        with lock:
            results.append((got_data, done, finish, error))
        if first_data is not None:
            first_data.set()
            return


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    exe, model = sys.argv[1], sys.argv[2]
    shipped_cfg = sys.argv[3] if len(sys.argv) == 4 else None
    started = time.time()
    workdir = tempfile.mkdtemp(prefix="ds4d-scale-out-")
    ports = [free_port() for _ in range(3)]
    replicas = [Daemon(exe, workdir, "replica-%d" % i, replica_args(workdir, model, p)) for i, p in enumerate(ports)]
    gw_port, rr_port = free_port(), free_port()
    gateway = Daemon(exe, workdir, "gateway", gateway_args(workdir, model, gw_port, ports, "hash"))
    baseline = Daemon(exe, workdir, "gateway-rr", gateway_args(workdir, model, rr_port, ports, "round_robin"))
    everyone = replicas + [gateway, baseline]
    ok = False
    try:
        for r in replicas:
            r.start()
        gateway.start()
        baseline.start()
        for i, p in enumerate(ports):
            wait_healthy(p, "replica %d" % i)
        all_up = lambda h: all(u["state"] == "up" for u in h.get("upstreams", []))
        wait_healthy(gw_port, "gateway", all_up)
        wait_healthy(rr_port, "round-robin gateway", all_up)

        turns = 4
        rr_share, rr_min = affinity(rr_port, "rr", turns, seed=7)
        hash_share, hash_min = affinity(gw_port, "hash", turns, seed=7)
        print("follow-up turns' prompt tokens served from cache (6 conversations x %d turns, 3 replicas):" % turns)
        print("  consistent hashing on the route key: %.1f%% (lowest turn %.1f%%)" % (100 * hash_share, 100 * hash_min))
        print("  round-robin baseline:                %.1f%% (lowest turn %.1f%%)" % (100 * rr_share, 100 * rr_min))
        if hash_share < 0.90:
            raise SystemExit("FAIL: hashing served %.1f%% from cache, below 90%%" % (100 * hash_share))
        if hash_share <= rr_share:
            raise SystemExit("FAIL: hashing (%.1f%%) does not beat round robin (%.1f%%)" % (100 * hash_share,
                                                                                           100 * rr_share))

        haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
        if shipped_cfg and haproxy:
            hp_port = free_port()
            cfg = os.path.join(workdir, "haproxy.cfg")
            haproxy_config(shipped_cfg, hp_port, ports, cfg)
            hp = Daemon(haproxy, workdir, "haproxy", ["-db", "-f", cfg])
            everyone.append(hp)
            hp.start()
            wait_healthy(hp_port, "haproxy")
            hp_share, hp_min = affinity(hp_port, "haproxy", turns, seed=7, route_header=True)
            hp.kill(signal.SIGTERM)
            print("  HAProxy hashing on X-DS4-Route-Key:  %.1f%% (lowest turn %.1f%%)" % (100 * hp_share, 100 * hp_min))
            if hp_share < 0.90:
                raise SystemExit("FAIL: behind HAProxy %.1f%% came from cache, below 90%%" % (100 * hp_share))
        else:
            print("  HAProxy: SKIP (haproxy is not installed)")

        # kill -9 of one replica under streaming load. One long stream runs first, alone: the node
        # with a job in flight is its node, the one to kill, so that a stream is cut for sure.
        results, lock, stop = [], threading.Lock(), threading.Event()
        long_result = []
        first_data = threading.Event()
        _, raw = http(gw_port, "POST", "/tokenize", {"content": "<｜end▁of▁sentence｜>"})
        no_eos = {"logit_bias": {str(json.loads(raw)["tokens"][0]): -100}}  # it must still run at the kill
        long_stream = threading.Thread(target=stream_chat, args=(gw_port, "long", long_result, lock, threading.Event(),
                                                                 2000, first_data, no_eos))
        long_stream.start()
        if not first_data.wait(120):
            raise SystemExit("FAIL: the long stream sent no data")
        _, raw = http(gw_port, "GET", "/health")
        busy = [u["url"] for u in json.loads(raw)["upstreams"] if u["inflight"] > 0]
        if len(busy) != 1:
            raise SystemExit("FAIL: expected one upstream with the long stream in flight: %s" % raw)
        dead = busy[0]
        victim = [r for r, p in zip(replicas, ports) if "http://127.0.0.1:%d" % p == dead][0]
        clients = [threading.Thread(target=stream_chat, args=(gw_port, "load-%d" % i, results, lock, stop))
                   for i in range(9)]
        for c in clients:
            c.start()
        time.sleep(4)
        victim.kill()
        killed_at = len(results)
        time.sleep(3)
        stop.set()
        for c in clients + [long_stream]:
            c.join(timeout=180)
        if any(c.is_alive() for c in clients + [long_stream]):
            raise SystemExit("FAIL: a streaming client hangs after the kill")
        got_data, done, finish, error = long_result[0]
        print("the stream cut by the kill ended with finish_reason %r, [DONE] %s, error %r" % (finish, done, error))
        if not (got_data and done and finish == "error"):
            raise SystemExit("FAIL: the stream whose node died did not end cleanly with an error: %r" % long_result)
        failed_before_data = [r for r in results if r[3] and not r[0]]
        torn = [r for r in results if not r[1]]
        cut = [r for r in results if r[0] and r[2] == "error"]
        print("kill -9 under load: %d streamed requests (%d done when it fell), %d cut mid-stream with a clean "
              "error end, %d failed before streaming, %d torn" % (len(results), killed_at, len(cut),
                                                                  len(failed_before_data), len(torn)))
        _, text = http(gw_port, "GET", "/metrics")
        print("  gateway: " + ", ".join(l for l in text.decode().splitlines()
                                       if l.startswith("ds4d_upstream_requests_total{")))
        if failed_before_data:
            raise SystemExit("FAIL: requests that had not started streaming failed: %r" % failed_before_data[:3])
        if torn:
            raise SystemExit("FAIL: streams did not end well formed: %r" % torn[:3])
        if len(results) <= killed_at:
            raise SystemExit("FAIL: no request completed after the kill")
        health = wait_healthy(gw_port, "gateway after the kill")
        states = {u["url"]: u["state"] for u in health["upstreams"]}
        if states[dead] == "up":
            raise SystemExit("FAIL: the killed replica is still reported up: %r" % health)

        # The replica comes back: marked up, and it takes jobs again.
        victim.start()
        wait_healthy(ports[replicas.index(victim)], "restarted replica")
        wait_healthy(gw_port, "gateway with the replica back",
                     lambda h: {u["url"]: u["state"] for u in h["upstreams"]}[dead] == "up")

        def served_by_dead():
            _, text = http(gw_port, "GET", "/metrics")
            for line in text.decode().splitlines():
                if line.startswith("ds4d_upstream_requests_total{") and 'upstream="%s"' % dead in line and \
                        'outcome="ok"' in line:
                    return float(line.split()[-1])
            return 0.0
        before = served_by_dead()
        for i in range(12):  # route keys spread over the nodes; some land on the restarted one
            Conversation("rejoin-%d" % i, "chat", "rejoin-key-%d" % i).ask(gw_port, max_tokens=2)
        if served_by_dead() <= before:
            raise SystemExit("FAIL: the restarted replica took no job")
        print("the restarted replica rejoined and took %d of 12 new conversations" % (served_by_dead() - before))
        ok = True
    finally:
        for d in everyone:
            d.kill()
        if not ok:
            for d in everyone:
                path = os.path.join(workdir, d.name + ".log")
                if os.path.exists(path):
                    with open(path, "rb") as f:
                        tail = f.read()[-3000:].decode("utf-8", "replace")
                    print("---- %s log tail ----\n%s" % (d.name, tail))
    print("PASS in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
