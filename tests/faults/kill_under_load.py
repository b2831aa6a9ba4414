#!/usr/bin/env python3
"""Fault test: ds4d killed at random points under load, restarted by its supervisor.

The test plays systemd for ds4d-supervisor (Restart=always: a supervisor that exits because its
daemon died of a signal it did not send is started again) on a fake sysroot, with the real ds4d
on the tiny model behind it. ds4d-load runs streaming clients plus the Python keep-alive client
against the fixed port the whole time, while the daemon is killed at random moments: SIGKILL
(what the kernel OOM killer sends: the supervisor exits 128+9 and "systemd" restarts the unit)
and SIGSEGV (a crash: the supervisor restarts ds4d in place, same supervisor pid).

What must hold:
  - every kill is followed by a healthy daemon again within the restart budget;
  - SIGKILL makes the supervisor exit 137 promptly; SIGSEGV keeps the same supervisor;
  - the clients see errors (dropped responses, connection refused) but nothing hangs: ds4d-load
    reports zero requests past its --request-timeout and its side client finishes in time;
  - requests complete between the kills and after the last one (service recovers);
  - SIGTERM at the end stops the supervisor with status 0.
usage: kill_under_load.py SUPERVISOR DAEMON LOADGEN MODEL CLIENTS_DIR [KILLS] [SEED]
"""
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

HEALTH_BUDGET_S = 90  # a kill until /health answers 200 again (shared 2-core CI machine)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as r:
            return r.status == 200
    except Exception:
        return False


def children_of(pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(name))
    return out


class FakeSystemd:
    """Restart=always for the supervisor, recording every exit."""

    def __init__(self, argv, log_path):
        self.argv, self.log_path = argv, log_path
        self.exits = []  # (status, time)
        self.proc = None
        self.stopping = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def start(self):
        self.thread.start()

    def loop(self):
        while not self.stopping:
            with open(self.log_path, "ab") as log:
                p = subprocess.Popen(self.argv, stdout=log, stderr=log)
            with self.lock:
                self.proc = p
            status = p.wait()
            status = 128 - status if status < 0 else status
            self.exits.append((status, time.monotonic()))
            if self.stopping or status == 0 or status == 78:
                break
            time.sleep(0.5)  # RestartSec

    def supervisor_pid(self):
        with self.lock:
            return self.proc.pid if self.proc and self.proc.poll() is None else None


def main():
    sup_bin, daemon_bin, loadgen, model, clients_dir = sys.argv[1:6]
    kills = int(sys.argv[6]) if len(sys.argv) > 6 else 6
    seed = int(sys.argv[7]) if len(sys.argv) > 7 else int(time.time())
    rng = random.Random(seed)
    print("kill_under_load: seed %d, %d kills" % (seed, kills), flush=True)
    work = tempfile.mkdtemp(prefix="ds4d-kill-")
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "proc"))
    meminfo = ("MemTotal: 67108864 kB\nMemFree: 16777216 kB\nMemAvailable: 33554432 kB\nCached: 1024 kB\n"
               "SwapTotal: 0 kB\nSwapFree: 0 kB\nHugePages_Total: 0\n")
    with open(os.path.join(root, "proc/meminfo"), "w") as f:
        f.write(meminfo)
    with open(os.path.join(root, "proc/swaps"), "w") as f:
        f.write("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
    daemon_meminfo = os.path.join(work, "meminfo")
    with open(daemon_meminfo, "w") as f:
        f.write(meminfo)
    # The supervisor reads memory.meminfo_path under its --sysroot; the daemon reads it directly.
    os.makedirs(os.path.dirname(root + daemon_meminfo), exist_ok=True)
    with open(root + daemon_meminfo, "w") as f:
        f.write(meminfo)
    port = free_port()
    config = os.path.join(work, "ds4d.toml")
    with open(config, "w") as f:
        f.write('[model]\npath = "%s"\ncontext = 4096\npin = "none"\nthreads = 2\n'
                '[server]\nport = %d\ndrain_timeout_s = 5\n'
                '[memory]\nfloor = "1GiB"\nreserve = "1GiB"\nswap_size = 0\npoll_ms = 200\n'
                'meminfo_path = "%s"\npsi_path = ""\noom_score_adj = 500\n'
                '[cache]\nhot_bytes = "64MiB"\n'
                '[supervisor]\nuser = "root"\ndaemon = "%s"\nrestart_delay_s = 1\nstop_timeout_s = 20\n'
                % (model, port, daemon_meminfo, daemon_bin))
    env_log = os.path.join(work, "supervisor.log")
    systemd = FakeSystemd([sup_bin, "--config", config, "--sysroot", root], env_log)
    os.environ.pop("NOTIFY_SOCKET", None)
    systemd.start()
    failures = []

    def wait_healthy(why):
        t0 = time.monotonic()
        while time.monotonic() - t0 < HEALTH_BUDGET_S:
            if healthy(port):
                return time.monotonic() - t0
            time.sleep(0.2)
        failures.append("no healthy daemon %d s after %s" % (HEALTH_BUDGET_S, why))
        return None

    if wait_healthy("the first start") is None:
        print(open(env_log, errors="replace").read()[-3000:])
        systemd.stopping = True
        return 1

    duration = 20 + kills * 12
    report = os.path.join(work, "load.json")
    load = subprocess.Popen([loadgen, "--port", str(port), "--clients", "4", "--duration", str(duration),
                             "--max-tokens", "24", "--request-timeout", "45", "--rss-interval", "10",
                             "--backoff-ms", "200", "--expect-drops", "--json", report,
                             "--side", "python3 %s/python_keepalive.py" % clients_dir])
    recoveries = []
    time.sleep(3)
    for i in range(kills):
        sup = systemd.supervisor_pid()
        daemons = children_of(sup) if sup else []
        if not daemons:
            failures.append("kill %d: no daemon under supervisor %s" % (i, sup))
            break
        sig = signal.SIGKILL if i % 2 == 0 else signal.SIGSEGV
        time.sleep(rng.uniform(0.2, 4.0))  # a random point: idle, prefill, decode, streaming
        exits_before = len(systemd.exits)
        t_kill = time.monotonic()
        os.kill(daemons[0], sig)
        took = wait_healthy("%s #%d" % (sig.name, i))
        if took is None:
            break
        if sig == signal.SIGKILL:
            ex = systemd.exits[exits_before:] if len(systemd.exits) > exits_before else []
            if not ex or ex[0][0] != 137:
                failures.append("SIGKILL #%d: supervisor exits %s, want 137" % (i, ex))
            elif ex[0][1] - t_kill > 10:
                failures.append("SIGKILL #%d: supervisor took %.1f s to exit" % (i, ex[0][1] - t_kill))
        else:
            if systemd.supervisor_pid() != sup or len(systemd.exits) != exits_before:
                failures.append("SIGSEGV #%d: the supervisor did not restart ds4d in place" % i)
        recoveries.append((sig.name, took))
        print("kill_under_load: %s #%d -> healthy again after %.1f s" % (sig.name, i, took), flush=True)
        time.sleep(rng.uniform(2.0, 6.0))  # let requests complete between kills
    try:
        load_status = load.wait(timeout=duration + 120)
    except subprocess.TimeoutExpired:
        load.kill()
        load_status = None
        failures.append("ds4d-load did not finish (hang)")
    if load_status is not None:
        with open(report) as f:
            r = json.load(f)
        print("kill_under_load: load: sent %d completed %d dropped %d hung %d connect errors %d; side %s"
              % (r["sent"], r["completed"], r["dropped"], r["hung"], r["connect_errors"],
                 [(s["client"], s["completed"], s["dropped"], s["exit"]) for s in r["side"]]), flush=True)
        if load_status != 0:
            failures.append("ds4d-load failed (exit %d): hung %d, side %s" % (load_status, r["hung"], r["side"]))
        if r["completed"] == 0:
            failures.append("no request completed under faults")
    # Recovered: a complete request after the last kill.
    code = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "60",
                           "-H", "Content-Type: application/json", "-d",
                           '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}',
                           "http://127.0.0.1:%d/v1/chat/completions" % port],
                          capture_output=True, text=True).stdout
    if code != "200":
        failures.append("after the last kill, a chat request got %s" % code)
    systemd.stopping = True
    sup = systemd.supervisor_pid()
    if sup:
        os.kill(sup, signal.SIGTERM)
    systemd.thread.join(timeout=60)
    if systemd.thread.is_alive() or not systemd.exits or systemd.exits[-1][0] != 0:
        failures.append("SIGTERM: supervisor exits %s, want a final 0" % [e[0] for e in systemd.exits])
        if systemd.proc and systemd.proc.poll() is None:
            systemd.proc.kill()
    print("kill_under_load: supervisor exits %s; recoveries %s"
          % ([e[0] for e in systemd.exits], ["%s %.1fs" % r for r in recoveries]))
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print(open(env_log, errors="replace").read()[-4000:])
        return 1
    print("kill_under_load: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
