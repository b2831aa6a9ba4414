#!/usr/bin/env python3
"""Checks that the shipped Grafana dashboard only queries series ds4d really emits.

A dashboard panel whose query names a series that does not exist draws an empty graph and no
error, so a renamed metric would go unnoticed; this test runs the real daemon on the embedded
model, sends one chat request, scrapes GET /metrics and checks every series (and every label
value a panel filters on) against that exposition. The panels of the gateway-mode row query
series that exist only in gateway mode; those are checked against the metric definitions in
the source instead (docs/metrics.md §grafana-dashboard). Before passing it checks itself: a
made-up series and a made-up label value must be reported missing.

Usage: check-grafana-dashboard.py DASHBOARD DS4D_BINARY MODEL_GGUF SOURCE_ROOT
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

GATEWAY_ROW_PREFIX = "Gateway mode"
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Labels that Prometheus adds at scrape time, absent from the exposition itself.
SCRAPE_LABELS = {"job", "instance"}
SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')
METRIC = re.compile(r"\bds4d_[a-zA-Z0-9_:]+\b")
DEFINITION = re.compile(r'\.(counter|gauge|histogram)\(\s*"(ds4d_[a-zA-Z0-9_]+)"')


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check_shape(dash, path):
    """The structure Grafana needs to import the file: the datasource input, panels with targets."""
    inputs = [i.get("name") for i in dash.get("__inputs", [])]
    if "DS_PROMETHEUS" not in inputs:
        fail(f"{path}: no DS_PROMETHEUS in __inputs (found {inputs})")
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        fail(f"{path}: schemaVersion {dash.get('schemaVersion')!r} is not a current Grafana's")
    names = [v.get("name") for v in dash.get("templating", {}).get("list", [])]
    for want in ("job", "instance"):
        if want not in names:
            fail(f"{path}: no template variable {want} (found {names})")
    ids = [p.get("id") for p in dash.get("panels", [])]
    dup = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    if None in ids or dup:
        fail(f"{path}: panel ids must be present and unique (missing or repeated: {dup or [None]})")
    graphs = [p for p in dash["panels"] if p.get("type") != "row"]
    if not graphs:
        fail(f"{path}: no panels")
    for p in graphs:
        targets = p.get("targets") or []
        if not targets or not all(t.get("expr") for t in targets):
            fail(f"{path}: panel {p['id']} {p.get('title')!r} has a target without expr")
        for t in targets + [p]:
            uid = t.get("datasource", {}).get("uid")
            if uid != "${DS_PROMETHEUS}":
                fail(f"{path}: panel {p['id']} {p.get('title')!r} uses datasource {uid!r}, not ${{DS_PROMETHEUS}}")
        if "gridPos" not in p:
            fail(f"{path}: panel {p['id']} {p.get('title')!r} has no gridPos")


def queries(dash):
    """(panel title, expr, gateway_only) for every target, the row a panel sits under deciding the last."""
    gateway = False
    for p in dash["panels"]:
        if p.get("type") == "row":
            gateway = p.get("title", "").startswith(GATEWAY_ROW_PREFIX)
            continue
        for t in p["targets"]:
            yield p.get("title"), t["expr"], gateway


def parse_exposition(text):
    """{name: type} from # TYPE lines and {name: [labels dict]} from the samples."""
    types, samples = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s", line)
            if m:
                labels = dict((k, v) for k, _, v in MATCHER.findall(m.group(2) or ""))
                samples.setdefault(m.group(1), []).append(labels)
    return types, samples


def resolve(name, types):
    """The family a queried name belongs to and the types it may have ('' when not found).

    A _bucket/_sum/_count name is a histogram's when its base is one; x_count is only a plain
    series when the exposition declares x_count itself."""
    if name in types:
        return name, types[name]
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            kind = types.get(base, "")
            if kind == "histogram" or (kind == "summary" and suffix != "_bucket"):
                return base, kind
            return base, ""
    return name, ""


def missing_series(items, types, samples, defined):
    """Names (with why) of what the queries use that the exposition, or the source, lacks."""
    missing = []
    for title, expr, gateway in items:
        for sel_name, body in SELECTOR.findall(expr):
            if not sel_name.startswith("ds4d_") and sel_name not in ("by", "without"):
                missing.append(f"{sel_name} (panel {title!r}: only ds4d_ series are checked, so none else may be used)")
        for name in sorted(set(METRIC.findall(expr))):
            if gateway:
                family = name
                for suffix in HISTOGRAM_SUFFIXES:
                    if name.endswith(suffix) and defined.get(name[: -len(suffix)]) == "histogram":
                        family = name[: -len(suffix)]
                if family not in defined:
                    missing.append(f"{name} (panel {title!r}: not defined in the source)")
                continue
            family, kind = resolve(name, types)
            if not kind:
                missing.append(f"{name} (panel {title!r}: not in /metrics)")
        if gateway:
            continue
        for sel_name, body in SELECTOR.findall(expr):
            if not sel_name.startswith("ds4d_"):
                continue
            rows = samples.get(sel_name, [])
            for label, op, value in MATCHER.findall(body):
                if label in SCRAPE_LABELS:
                    continue
                if op == "=" and not any(r.get(label) == value for r in rows):
                    missing.append(f'{sel_name}{{{label}="{value}"}} (panel {title!r}: '
                                   "no sample with that label value)")
                elif op != "=" and not any(label in r for r in rows):
                    missing.append(f"{sel_name} label {label} (panel {title!r}: no sample carries that label)")
    return missing


def source_definitions(root):
    """{name: kind} of every metric the C++ sources register."""
    defined = {}
    for top in ("gateway", "daemon", "engine"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".cpp", ".hpp")):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        for kind, name in DEFINITION.findall(fh.read()):
                            defined[name] = kind
    return defined


def http(opener, url, key, body=None):
    req = urllib.request.Request(url, data=body, headers={"Authorization": f"Bearer {key}"})
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with opener.open(req, timeout=120) as r:
        return r.status, r.read().decode("utf-8")


def scrape_daemon(binary, model):
    """Starts ds4d on a free port in a temporary directory, sends one chat request, returns /metrics."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    key = "grafana-dashboard-test-key"
    with tempfile.TemporaryDirectory(prefix="ds4d-grafana-") as tmp:
        with open(os.path.join(tmp, "api.key"), "w") as fh:
            fh.write(key + "\n")
        args = [binary, "--model", model, "--server-host", "127.0.0.1", "--server-port", "0",
                "--server-api-key-file", os.path.join(tmp, "api.key"), "--cache-dir", os.path.join(tmp, "cache")]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log, port = [], []
        ready = threading.Event()

        def read():
            for line in proc.stdout:
                log.append(line)
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                if m and not port:
                    port.append(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        try:
            if not ready.wait(120) or not port:
                fail(f"ds4d did not start listening:\n{''.join(log)}")
            base = f"http://127.0.0.1:{port[0]}"
            for _ in range(600):
                try:
                    if http(opener, f"{base}/health", key)[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            else:
                fail(f"ds4d never became healthy:\n{''.join(log)}")
            chat = json.dumps({"model": "ds4", "max_tokens": 4,
                               "messages": [{"role": "user", "content": "Say hi."}]}).encode()
            status, reply = http(opener, f"{base}/v1/chat/completions", key, chat)
            if status != 200:
                fail(f"chat request answered {status}: {reply}")
            return http(opener, f"{base}/metrics", key)[1]
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main():
    if len(sys.argv) != 5:
        fail(__doc__.strip().splitlines()[-1])
    path, binary, model, root = sys.argv[1:]
    with open(path, encoding="utf-8") as fh:
        try:
            dash = json.load(fh)
        except json.JSONDecodeError as e:
            fail(f"{path}: not JSON: {e}")
    check_shape(dash, path)
    items = list(queries(dash))
    defined = source_definitions(root)
    types, samples = parse_exposition(scrape_daemon(binary, model))

    # Self-test first: the checker must see a made-up series, a made-up histogram base, a
    # made-up label value and a gateway series the source does not define.
    bogus = [("self-test", 'rate(ds4d_made_up_series_total{job=~"$job"}[5m])', False),
             ("self-test", "histogram_quantile(0.5, rate(ds4d_queue_depth_bucket[5m]))", False),
             ("self-test", 'rate(ds4d_http_requests_total{endpoint="no_such_endpoint"}[5m])', False),
             ("self-test", "ds4d_upstream_made_up", True)]
    caught = missing_series(bogus, types, samples, defined)
    if len(caught) != len(bogus):
        fail(f"self-test: the checker reported {caught} for {len(bogus)} made-up queries")

    missing = missing_series(items, types, samples, defined)
    if missing:
        fail("the dashboard queries series ds4d does not emit:\n  " + "\n  ".join(missing))
    used = sorted({n for _, e, _ in items for n in METRIC.findall(e)})
    print(f"ok: {len(items)} queries over {len(used)} series, all present: {' '.join(used)}")


if __name__ == "__main__":
    main()
