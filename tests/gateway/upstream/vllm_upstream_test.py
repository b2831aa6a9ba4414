#!/usr/bin/env python3
"""Gateway mode over a vLLM-style upstream on loopback (docs/scale-out.md §vllm-and-sglang).

A fake OpenAI completions server (http.server in this process) plays vLLM: GET /v1/models with
max_model_len, POST /v1/completions with a token-id prompt answered as vLLM streams it (SSE,
return_token_ids: the ids of each chunk, the end-of-generation id in the last one, a usage chunk,
[DONE]). What it samples is scripted per request, in the tiny model's token ids (asked of the
gateway's own /tokenize). ds4d runs as `ds4d --upstream vllm+http://... --tokenizer GGUF` and
must:
  1. serve a chat turn (plain and streamed) from the upstream's token ids, having sent the
     documented fields (token-id prompt, return_token_ids, stream, the served model name);
  2. serve a tool call end to end (DSML parsed into tool_calls);
  3. reject what ds4d's token policy would not have allowed: tool_choice "required" answered in
     prose (a 500 naming why), an undeclared tool (the stream ends with finish_reason "error" on
     chat completions, an error event naming why on Messages), DSML in a turn without tools
     (finish_reason "error", the reason in the log);
  4. keep the pool's behaviour: an engine that refuses (503) hands the job to the next node, one
     that dies mid-stream ends the stream cleanly with finish_reason "error" (what it sent before
     is passed on), and each event reaches the client as it comes, not when a buffer fills;
  5. over a (fake) ds4d engine whose answer ends without its finished event, end the stream with
     finish_reason "error" and live on;
  6. check the upstream's vocabulary with POST /tokenize (docs/scale-out.md §vocabulary-probe):
     a fake without it (404) is served with a warning and a note in /health, one whose ids are
     the tiny model's (asked of a gateway over the same GGUF) starts and serves, one whose ids
     are shifted by one makes ds4d exit 78 (configuration error) naming its URL.

Usage: vllm_upstream_test.py DS4D TINY_MODEL_GGUF
"""
import http.client as http_client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_NAME = "ds4-flash-w4a16"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, http_client.HTTPException) as e:  # refused, reset, cut short (the gateway died)
        return 0, str(e).encode()


class FakeVllm(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = []      # (token ids, texts) the next completion samples
    requests = []    # (headers, body) of each completion request
    break_after = None  # a number of chunks: then the connection drops (the engine died)
    hold = None         # an Event: after two chunks, wait for it (the client must have them by then)
    hold_timed_out = False

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            return self.reply(200, {"object": "list", "data": [
                {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "vllm", "root": "/m",
                 "parent": None, "max_model_len": 4096, "permission": []}]})
        self.reply(404, {"error": {"message": "not found", "type": "NotFoundError", "code": 404}})

    def event(self, obj):
        data = ("data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeVllm.requests.append((dict(self.headers), body))
        if self.path != "/v1/completions":
            return self.reply(404, {"error": {"message": "not found", "code": 404}})
        ids, pieces = FakeVllm.script
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i in range(0, len(ids), 2):
                if FakeVllm.hold is not None and i // 2 == 2:
                    FakeVllm.hold_timed_out = not FakeVllm.hold.wait(10)
                if FakeVllm.break_after is not None and i // 2 == FakeVllm.break_after:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                choice = {"index": 0, "text": "".join(pieces[i:i + 2]), "logprobs": None, "finish_reason": None,
                          "stop_reason": None, "token_ids": ids[i:i + 2]}
                if i == 0:
                    choice["prompt_token_ids"] = body["prompt"]
                self.event({"id": "cmpl-1", "object": "text_completion", "created": 0, "model": MODEL_NAME,
                            "choices": [choice], "usage": None})
            eos = body["stop_token_ids"][0]
            self.event({"id": "cmpl-1", "object": "text_completion", "created": 0, "model": MODEL_NAME,
                        "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "stop",
                                     "stop_reason": None, "token_ids": [eos]}], "usage": None})
            n = len(body["prompt"])
            self.event({"id": "cmpl-1", "object": "text_completion", "created": 0, "model": MODEL_NAME,
                        "choices": [], "usage": {"prompt_tokens": n, "completion_tokens": len(ids) + 1,
                                                 "total_tokens": n + len(ids) + 1,
                                                 "prompt_tokens_details": {"cached_tokens": n // 2}}})
            self.event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the gateway stopped reading (a stop string, a rejected token)


class TokenizingVllm(FakeVllm):
    """A vLLM with POST /tokenize: the tiny model's ids (asked of the gateway `reference` over the
    same GGUF), plus `shift`."""
    reference = None
    shift = 0
    probes = []

    def do_POST(self):
        if self.path != "/tokenize":
            return FakeVllm.do_POST(self)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        TokenizingVllm.probes.append(body)
        status, raw = http(TokenizingVllm.reference, "POST", "/tokenize", {"content": body["prompt"]})
        assert status == 200, raw
        ids = [t + self.shift for t in json.loads(raw)["tokens"]]
        self.reply(200, {"tokens": ids, "count": len(ids), "max_model_len": 4096})


class ShiftedVllm(TokenizingVllm):
    """Serves another vocabulary: every id one off."""
    shift = 1


class RefusingVllm(TokenizingVllm):
    """An engine that is up but refuses every job (vLLM answers 503 while it cannot take one; it
    still tokenizes)."""

    def do_POST(self):
        if self.path == "/tokenize":
            return TokenizingVllm.do_POST(self)
        self.rfile.read(int(self.headers["Content-Length"]))
        RefusingVllm.refused += 1
        self.reply(503, {"error": {"message": "engine busy", "type": "ServiceUnavailableError", "code": 503}})


RefusingVllm.refused = 0


class FakeDs4d(FakeVllm):
    """A ds4d engine (the engine protocol) whose answer ends without its finished event."""
    fingerprint = 0

    def do_GET(self):
        if self.path == "/engine/info":
            return self.reply(200, {"model_id": "tiny", "vocab_size": 1, "context_length": 4096,
                                    "vocab_fingerprint": FakeDs4d.fingerprint})
        self.reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ids, pieces = FakeVllm.script
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for ev in ({"prefilled": {"prompt_tokens": len(body["prompt"])}},
                   {"tokens": ids, "bytes": "".join(pieces).encode().hex()}):
            data = (json.dumps(ev) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")


def start_gateway(exe, model, workdir, upstreams):
    port = free_port()
    config = os.path.join(workdir, "gateway-%d.toml" % port)
    with open(config, "w") as f:
        f.write('[server]\nhost = "127.0.0.1"\nport = %d\n[log]\nlevel = "info"\n' % port)
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC")}
    log = open(os.path.join(workdir, "gateway.log"), "ab")
    args = [exe, "--config", config, "--tokenizer", model]
    for u in upstreams:
        args += ["--upstream", u]
    proc = subprocess.Popen(args, stdout=log, stderr=log, env=env)
    until = time.time() + 120
    while time.time() < until:
        status, body = http(port, "GET", "/health", timeout=5)
        if status == 200:
            return proc, port, json.loads(body)
        if proc.poll() is not None:
            raise SystemExit("FAIL: the gateway exited with %d" % proc.returncode)
        time.sleep(0.2)
    raise SystemExit("FAIL: the gateway did not become healthy")


def start_failing_gateway(exe, model, workdir, upstreams):
    """Runs a gateway that must exit at start: its exit code and log."""
    port = free_port()
    config = os.path.join(workdir, "failing-%d.toml" % port)
    with open(config, "w") as f:
        f.write('[server]\nhost = "127.0.0.1"\nport = %d\n[log]\nlevel = "info"\n' % port)
    args = [exe, "--config", config, "--tokenizer", model]
    for u in upstreams:
        args += ["--upstream", u]
    try:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    except subprocess.TimeoutExpired:
        raise SystemExit("FAIL: the gateway over %s did not exit" % upstreams)
    return done.returncode, done.stdout.decode(errors="replace")


def stop(proc):
    # Shutdown is not what this test checks; a drain may wait on the fakes' held connections.
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


def first_delta_while_held(gateway):
    """Streams a chat turn and releases the held upstream once the first content delta is in:
    True when it came while the upstream was still holding the rest back."""
    conn = http_client.HTTPConnection("127.0.0.1", gateway, timeout=60)
    body = {"model": "x", "messages": [{"role": "user", "content": "Count."}], "thinking": False,
            "max_tokens": 200, "stream": True}
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    seen = None
    while True:
        line = r.readline()
        if not line or line.startswith(b"data: [DONE]"):
            break
        if line.startswith(b"data: {") and b'"content"' in line and seen is None:
            seen = not FakeVllm.hold_timed_out and not FakeVllm.hold.is_set()
            FakeVllm.hold.set()
    conn.close()
    return bool(seen) and not FakeVllm.hold_timed_out


def sample(gateway, text):
    """The next upstream answer samples `text` (in the tiny model's token ids)."""
    status, body = http(gateway, "POST", "/tokenize", {"content": text, "with_pieces": True})
    assert status == 200, body
    tokens = json.loads(body)["tokens"]
    FakeVllm.script = ([t["id"] for t in tokens], [t["piece"] for t in tokens])


def chat(gateway, messages, **extra):
    body = {"model": "x", "messages": messages, "thinking": False, "max_tokens": 200}
    body.update(extra)
    status, raw = http(gateway, "POST", "/v1/chat/completions", body)
    return status, json.loads(raw) if raw.startswith(b"{") else raw


def stream_chat(gateway, messages, **extra):
    body = {"model": "x", "messages": messages, "thinking": False, "max_tokens": 200, "stream": True}
    body.update(extra)
    status, raw = http(gateway, "POST", "/v1/chat/completions", body)
    content, finish, errors = "", None, []
    for line in raw.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if "error" in ev:
            errors.append(ev["error"])
            continue
        for ch in ev.get("choices", []):
            content += ch.get("delta", {}).get("content") or ""
            finish = ch.get("finish_reason") or finish
    return status, content, finish, errors


WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "weather of a city",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                            "required": ["city"]}}}]
CALL = ("<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
        "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>")


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)
    print("ok:", what.split(":")[0])


def main():
    exe, model = sys.argv[1], sys.argv[2]
    workdir = tempfile.mkdtemp(prefix="ds4d-vllm-upstream-")
    fake = ThreadingHTTPServer(("127.0.0.1", free_port()), FakeVllm)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    url = "vllm+http://127.0.0.1:%d" % fake.server_address[1]
    procs = []
    ok = False
    try:
        proc, port, health = start_gateway(exe, model, workdir, [url])
        procs.append(proc)
        print("ok: the gateway became healthy over the vLLM upstream")
        check(any(u.get("kind") == "vllm" and u.get("state") == "up" for u in health.get("upstreams", [])),
              "health lists the vllm upstream as up: %s" % health)
        status, body = http(port, "GET", "/v1/models")
        check(status == 200 and MODEL_NAME.encode() in body, "the served model name comes from /v1/models: %s" % body)

        # 6. The vocabulary probe. This fake has no /tokenize: a warning, a note, and it serves.
        check(any("not checked" in u.get("note", "") for u in health["upstreams"]),
              "an upstream without /tokenize is noted in /health: %s" % health)
        with open(os.path.join(workdir, "gateway.log"), "rb") as f:
            check(b"vocabulary cannot be checked" in f.read(), "and its warning is in the log")
        TokenizingVllm.reference = port
        matching = ThreadingHTTPServer(("127.0.0.1", free_port()), TokenizingVllm)
        shifted = ThreadingHTTPServer(("127.0.0.1", free_port()), ShiftedVllm)
        for server in (matching, shifted):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            proc6, port6, health6 = start_gateway(exe, model, workdir, ["vllm+http://127.0.0.1:%d" %
                                                                        matching.server_address[1]])
            procs.append(proc6)
            probe = TokenizingVllm.probes[-1] if TokenizingVllm.probes else {}
            check(probe.get("model") == MODEL_NAME and probe.get("add_special_tokens") is False and
                  "<｜DSML｜" in probe.get("prompt", ""), "the probe went to /tokenize as documented: %s" % probe)
            check(all(u.get("state") == "up" and "note" not in u for u in health6["upstreams"]),
                  "an upstream with the same vocabulary is up, without a note: %s" % health6)
            sample(port6, "Same vocabulary.")
            status, out = chat(port6, [{"role": "user", "content": "Say it."}])
            check(status == 200 and out["choices"][0]["message"]["content"] == "Same vocabulary.",
                  "and serves: %s" % out)
            bad = "vllm+http://127.0.0.1:%d" % shifted.server_address[1]
            code, log = start_failing_gateway(exe, model, workdir, [bad])
            check(code == 78 and bad in log and "position 0" in log and "engine.tokenizer" in log,
                  "an upstream with another vocabulary is a configuration error naming it: %d %s" %
                  (code, log[-1500:]))
        finally:
            matching.shutdown()
            shifted.shutdown()

        # 1. A chat turn, whole and streamed.
        sample(port, "Hello from the vLLM upstream.")
        status, out = chat(port, [{"role": "user", "content": "Say hello."}])
        check(status == 200 and out["choices"][0]["message"]["content"] == "Hello from the vLLM upstream.",
              "a chat turn is served from the upstream's token ids: %s" % out)
        check(out["choices"][0]["finish_reason"] == "stop", "finish_reason stop: %s" % out)
        usage = out["usage"]
        check(usage["prompt_tokens"] > 0 and usage.get("prompt_tokens_details", {}).get("cached_tokens") ==
              usage["prompt_tokens"] // 2, "cached tokens are the upstream's count: %s" % usage)
        headers, req = FakeVllm.requests[-1]
        check(req["model"] == MODEL_NAME and req["stream"] is True and req["return_token_ids"] is True and
              all(isinstance(t, int) for t in req["prompt"]) and len(req["prompt"]) == usage["prompt_tokens"] and
              req["skip_special_tokens"] is False and req["stop_token_ids"] and
              req["max_tokens"] == 200, "the completions request has the documented fields: %s" % req)
        check(any(k.lower() == "x-ds4-route-key" for k in headers), "the route key header goes upstream")
        status, content, finish, errors = stream_chat(port, [{"role": "user", "content": "Say hello."}])
        check(status == 200 and content == "Hello from the vLLM upstream." and finish == "stop" and not errors,
              "the same turn streamed: %r %r %r" % (content, finish, errors))
        sample(port, "one. two. three.")
        status, out = chat(port, [{"role": "user", "content": "Count."}], stop=[" two"])
        check(status == 200 and out["choices"][0]["message"]["content"] == "one." and
              out["choices"][0]["finish_reason"] == "stop", "stop strings are cut by the gateway: %s" % out)

        # 2. A tool call end to end.
        sample(port, "Checking the weather.\n\n" + CALL)
        status, out = chat(port, [{"role": "user", "content": "Weather in Paris?"}], tools=WEATHER)
        msg = out["choices"][0]["message"] if status == 200 else {}
        calls = msg.get("tool_calls") or []
        check(status == 200 and len(calls) == 1 and calls[0]["function"]["name"] == "get_weather" and
              json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"} and
              out["choices"][0]["finish_reason"] == "tool_calls", "a tool call is served end to end: %s" % out)
        sample(port, "\n\n" + CALL)
        status, out = chat(port, [{"role": "user", "content": "Weather in Paris?"}], tools=WEATHER,
                           tool_choice="required")
        check(status == 200 and out["choices"][0]["finish_reason"] == "tool_calls",
              "tool_choice required, and the upstream calls: %s" % out)

        # 3. Output ds4d's token policy would not have allowed is rejected, never served.
        sample(port, "It is sunny in Paris.")
        status, out = chat(port, [{"role": "user", "content": "Weather in Paris?"}], tools=WEATHER,
                           tool_choice="required")
        check(status == 500 and "rejects" in json.dumps(out) and "tool" in json.dumps(out),
              "tool_choice required answered in prose is a clear error: %s %s" % (status, out))
        sample(port, "Sure.\n\n" + CALL.replace("get_weather", "delete_files"))
        status, content, finish, errors = stream_chat(port, [{"role": "user", "content": "Weather?"}], tools=WEATHER)
        check(status == 200 and finish == "error" and content == "Sure." and "delete_files" not in content,
              "an undeclared tool ends the chat stream with finish_reason error: %r %r %r" % (content, finish, errors))
        sample(port, "Sure.\n\n" + CALL.replace("get_weather", "delete_files"))
        status, raw = http(port, "POST", "/v1/messages", {
            "model": "x", "max_tokens": 200, "stream": True, "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": "Weather?"}],
            "tools": [{"name": "get_weather", "description": "weather of a city",
                       "input_schema": WEATHER[0]["function"]["parameters"]}]})
        text = raw.decode(errors="replace")
        check(status == 200 and "event: error" in text and "rejects" in text and "delete_files" not in text,
              "the same on the Messages API ends with an error event naming why: %s" % text[-1500:])
        sample(port, "Sure.\n\n" + CALL)
        status, out = chat(port, [{"role": "user", "content": "Weather?"}])
        choice = out["choices"][0] if status == 200 else {}
        check(choice.get("finish_reason") == "error" and not choice["message"].get("tool_calls") and
              "DSML" not in choice["message"].get("content", ""),
              "DSML in a turn without tools ends the answer with finish_reason error: %s %s" % (status, out))
        with open(os.path.join(workdir, "gateway.log"), "rb") as f:
            check(b"may not call tools" in f.read(), "the log says why")

        # 4. The pool's failover and lost streams, unchanged for this kind: an engine that
        # refuses hands the job to the next; one that dies mid-stream ends it with an error.
        refusing = ThreadingHTTPServer(("127.0.0.1", free_port()), RefusingVllm)
        threading.Thread(target=refusing.serve_forever, daemon=True).start()
        bad = "sglang+http://127.0.0.1:%d" % refusing.server_address[1]
        proc2, port2, health2 = start_gateway(exe, model, workdir, [bad, url])
        procs.append(proc2)
        check(len(health2["upstreams"]) == 2 and {u["kind"] for u in health2["upstreams"]} == {"vllm", "sglang"},
              "both kinds are listed: %s" % health2)
        sample(port2, "Served after a refusal.")
        for i in range(8):
            status, out = chat(port2, [{"role": "user", "content": "Hi."}], prompt_cache_key="session-%d" % i)
            check(status == 200 and out["choices"][0]["message"]["content"] == "Served after a refusal.",
                  "session %d is served whichever node ranks first: %s" % (i, out))
        status, metrics = http(port2, "GET", "/metrics")
        refused = [l for l in metrics.decode().splitlines()
                   if l.startswith("ds4d_upstream_requests_total") and 'outcome="refused"' in l and bad in l]
        check(RefusingVllm.refused > 0 and refused and float(refused[0].split()[-1]) == RefusingVllm.refused,
              "refusals failed over and are counted: %d %s" % (RefusingVllm.refused, refused))
        sample(port, "one two three four five six seven eight")
        FakeVllm.break_after = 2
        status, content, finish, errors = stream_chat(port, [{"role": "user", "content": "Count."}])
        FakeVllm.break_after = None
        check(status == 200 and finish == "error" and content and "eight" not in content,
              "an engine lost mid-stream ends the stream cleanly with finish_reason error: %r %r %r" % (status, content, finish))
        sample(port, "one two three four five six seven eight")
        FakeVllm.hold = threading.Event()
        streamed = first_delta_while_held(port)
        FakeVllm.hold = None
        check(streamed, "each event is passed on as it comes (the first delta before the upstream goes on)")
        refusing.shutdown()

        # 5. The same pool over a ds4d engine whose answer ends without its finished event: the
        # stream ends with finish_reason "error" and the gateway lives on.
        with open(os.path.join(workdir, "gateway.log")) as f:
            FakeDs4d.fingerprint = int(re.search(r"vocabulary ([0-9a-f]{16})", f.read()).group(1), 16)
        engine = ThreadingHTTPServer(("127.0.0.1", free_port()), FakeDs4d)
        threading.Thread(target=engine.serve_forever, daemon=True).start()
        proc3, port3, _ = start_gateway(exe, model, workdir, ["http://127.0.0.1:%d" % engine.server_address[1]])
        procs.append(proc3)
        sample(port3, "A partial answer")
        status, content, finish, errors = stream_chat(port3, [{"role": "user", "content": "Hi."}])
        check(status == 200 and content == "A partial answer" and finish == "error",
              "a ds4d stream without its end finishes with an error: %r %r %r" % (status, content, finish))
        until = time.time() + 20  # the node was marked down; its health check brings it back
        status = 0
        while time.time() < until and proc3.poll() is None and status != 200:
            status, _ = http(port3, "GET", "/health")
            time.sleep(0.2)
        check(status == 200 and proc3.poll() is None, "and the gateway lives on, the node back up (%d)" % status)
        engine.shutdown()
        ok = True
        print("PASS")
    finally:
        for p in procs:
            stop(p)
        fake.shutdown()
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("logs in", workdir)
            with open(os.path.join(workdir, "gateway.log"), "rb") as f:
                sys.stdout.write(f.read().decode(errors="replace")[-6000:])


if __name__ == "__main__":
    main()
