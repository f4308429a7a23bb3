#!/usr/bin/env python3
"""soak.py - text2sqld at saturation for a while: throughput, latency, errors,
memory and file descriptors over time, and a SIGTERM in the middle of load.

Usage:
  soak.py [--duration 60] [--connections 32] [--threads 2] [--warmup 5]
          [--settle-round 15] [--settle-pct 0.5] [--settle-max 180] [--malloc-stats]
          [--endpoints link,query] [--drain-clients 16] [--drain-model-delay-ms 300]
          [--binary PATH] [--wrk PATH] [--out FILE]

Everything runs on loopback and is started here (and stopped by pid): a small
SQLite database written to a temporary directory, tests/stub/model_stub.py
as the generation model with zero latency answering one fixed SQL statement
(it keeps only its last 100 requests), and text2sqld with the answer cache
off (generate.cache_ttl_s = 0: every /query runs the whole pipeline and one
model call) and its connection limits at their defaults.

Phases, per endpoint (POST /link, then POST /query):
  1. warm-up (unmeasured, same concurrency): wrk for --warmup seconds, then
     rounds of --settle-round seconds until two rounds in a row each add less
     than --settle-pct % to the idle RSS, at most --settle-max seconds of
     rounds (lets allocator arenas, pools and caches reach their working size,
     and the allocator's heap pages all be touched once; a leak never settles,
     so the rounds stop at --settle-max and the soak measures it).  The idle
     RSS after each part is in the report ("warmup");
  2. soak: `wrk -t THREADS -c CONNECTIONS -d DURATION --latency` with a Lua
     script (bench/soak.lua) that counts every status: requests/s, latency
     p50/p90/p99/max, every status, socket errors.  RSS (VmRSS) and open
     file descriptors (/proc/PID/fd) of the service are read after the
     warm-up (start) and after the soak (end), and sampled every second.
     With --malloc-stats, glibc's malloc_stats() is called through gdb at
     the same two points (idle): "in use" is the live heap (what the service
     keeps), "system" what the allocator holds from the system.
     Errors are every status other than 2xx and the intended 429 (none is
     intended here: no API keys, fewer connections than the per-address
     cap), plus wrk's socket errors.
Then the drain: --drain-clients Python clients send POST /query in a loop on
keep-alive connections while the model answers after --drain-model-delay-ms;
after 3 s the service gets SIGTERM.  Every request is classified by when it
started: in flight at the signal (completed = a 2xx answer, failed = any
other outcome), or sent after it (answered while draining, refused).  The
service's exit status and time to exit are reported.

Goals: no error beyond intended 429s; RSS growth over each soak < 5 %; fd
count at the end equal to the start; every request in flight at SIGTERM
completes; exit status 0.  Prints one JSON document (and writes --out).
Needs wrk (Debian: `apt-get install wrk`).
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import servicelib  # noqa: E402
from benchlib import emit  # noqa: E402

SQL = "SELECT name, country FROM singer WHERE age > 30 ORDER BY name"
QUESTION = "Which singers are older than 30, and where are they from?"
BODIES = {
    "link": {"database": "soak", "question": QUESTION},
    "query": {"database": "soak", "question": QUESTION},
}
SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, stadium TEXT, year INTEGER);
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id));
"""


def mixed_requests(n=2400):
    """The "mixed" soak's requests, cycled: /link, /query, /evidence and /execute with many different
    questions and statements (numbers, names, years), so caches keyed by question or statement see
    new keys all the time, as a real tenant's traffic does."""
    countries = ["France", "Netherlands", "United States", "Japan", "Brazil"]
    out = []
    for i in range(n):
        c, age, year = countries[i % 5], 18 + i % 57, 2000 + i % 20
        kind = i % 4
        if kind == 0:
            out.append(("/link", {"database": "soak", "question": "Which singers from %s are older than %d?" % (c, age)}))
        elif kind == 1:
            out.append(("/query", {"database": "soak",
                                   "question": "List the names of singers older than %d, case %d" % (age, i)}))
        elif kind == 2:
            out.append(("/evidence", {"database": "soak",
                                      "question": "Concerts at Stadium %d in %d with singers from %s" % (i % 7, year, c)}))
        else:
            out.append(("/execute", {"database": "soak", "sql": "SELECT name, age FROM singer WHERE age > %d "
                                     "AND country = '%s' ORDER BY name LIMIT %d" % (age, c, 1 + i % 50)}))
    return out


def write_database(path):
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    countries = ["France", "Netherlands", "United States", "Japan", "Brazil"]
    conn.executemany("INSERT INTO singer VALUES (?, ?, ?, ?)",
                     [(i, "Singer %d" % i, countries[i % 5], 20 + i % 40) for i in range(1, 201)])
    conn.executemany("INSERT INTO concert VALUES (?, ?, ?, ?)",
                     [(i, "Concert %d" % i, "Stadium %d" % (i % 7), 2000 + i % 20) for i in range(1, 51)])
    conn.executemany("INSERT INTO singer_in_concert VALUES (?, ?)", [(i % 50 + 1, i % 200 + 1) for i in range(400)])
    conn.commit()
    conn.close()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def malloc_totals(pid, log_path):
    """glibc's malloc_stats() of pid (called through gdb; it prints to the service's stderr,
    which is its log): {"in_use_kb": live heap, "system_kb": bytes the allocator holds from
    the system}, all arenas and mmapped chunks included; None when gdb is missing or fails."""
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    with open(log_path, encoding="utf-8", errors="replace") as f:
        before = len(f.read())
    p = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()", "-ex", "detach"],
                       capture_output=True, text=True, timeout=60)
    for _ in range(20):  # the process writes once gdb lets it run again
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()[before:]
        m = re.search(r"Total \(incl\. mmap\):\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*(\d+)", text)
        if m:
            return {"system_kb": int(m.group(1)) // 1024, "in_use_kb": int(m.group(2)) // 1024}
        time.sleep(0.1)
    print("soak: malloc_stats through gdb failed (%d): %s" % (p.returncode, p.stderr[-300:]), file=sys.stderr)
    return None


class Sampler(threading.Thread):
    """RSS and fd count of pid once a second until stop()."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.halt = pid, [], threading.Event()

    def run(self):
        t0 = time.monotonic()
        while not self.halt.wait(1.0):
            try:
                self.samples.append((round(time.monotonic() - t0, 1), rss_kb(self.pid), fd_count(self.pid)))
            except OSError:
                return

    def stop(self):
        self.halt.set()
        self.join()


def start_stub(procs):
    fixture = procs.path("stub_fixture.json")
    with open(fixture, "w") as f:
        json.dump({"rules": [], "default_content": "```sql\n%s\n```" % SQL}, f)
    log = open(procs.path("model_stub.log"), "wb")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "stub", "model_stub.py"), "--port", "0",
                             "--fixture", fixture, "--keep-requests", "100"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
    procs.procs.append(proc)
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("LISTENING "):
        raise SystemExit("model stub did not start: %r" % line)
    return int(line.split()[1])


def stub_rules(port, rules):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/_stub/rules", body=json.dumps(rules), headers={"Content-Type": "application/json"})
    conn.getresponse().read()
    conn.close()


def run_wrk(wrk, url, endpoint, seconds, a):
    if endpoint == "mixed":
        path = os.path.join(tempfile.gettempdir(), "t2s-soak-requests-%d.tsv" % os.getpid())
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join("%s\t%s\n" % (p, json.dumps(body)) for p, body in mixed_requests()))
        env = dict(os.environ, SOAK_REQUESTS_FILE=path)
        target = url + "/"
    else:
        env = dict(os.environ, SOAK_BODY=json.dumps(BODIES[endpoint]))
        target = url + "/" + endpoint
    cmd = [wrk, "-t", str(a.threads), "-c", str(a.connections), "-d", "%ds" % seconds, "--timeout", "10s",
           "--latency", "-s", os.path.join(HERE, "soak.lua"), target]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 60)
    m = re.search(r"^SOAK_JSON (.*)$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise SystemExit("wrk failed (%d): %s %s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return json.loads(m.group(1)), " ".join(cmd)


def settle(wrk, url, pid, endpoint, a):
    """Unmeasured warm-up: --warmup seconds of load, then rounds of --settle-round seconds until
    two rounds in a row each add less than --settle-pct % to the idle RSS, or --settle-max
    seconds of rounds have run.  The allocator's heap stops growing within the first minute of
    /query load, but pages of it that were free keep being touched for the first time (RSS
    rising within the size the heap already has) for a minute or two more; rounds let the soak start from that plateau on a
    fast or a slow machine alike.  A real leak never settles: the rounds stop at --settle-max
    and the soak then measures it.  Returns what the warm-up did (idle RSS after each part; with
    --malloc-stats, the heap too)."""
    run_wrk(wrk, url, endpoint, a.warmup, a)
    time.sleep(1.0)  # let the warm-up's connections close on the server side, as after the soak
    rss = [rss_kb(pid)]
    heap = [malloc_totals(pid, a.service_log)] if a.malloc_stats else None
    spent, flat = 0, 0
    while flat < 2 and spent + a.settle_round <= a.settle_max:
        run_wrk(wrk, url, endpoint, a.settle_round, a)
        spent += a.settle_round
        time.sleep(1.0)
        rss.append(rss_kb(pid))
        if heap is not None:
            heap.append(malloc_totals(pid, a.service_log))
        flat = flat + 1 if (rss[-1] - rss[-2]) * 100.0 / rss[-2] < a.settle_pct else 0
    out = {"seconds": a.warmup + spent, "settled": flat >= 2, "idle_rss_kb": rss}
    if heap is not None:
        out["malloc"] = heap
    return out


def soak(wrk, url, pid, endpoint, a):
    warmup = settle(wrk, url, pid, endpoint, a)
    start = {"rss_kb": rss_kb(pid), "fds": fd_count(pid)}
    heap_start = malloc_totals(pid, a.service_log) if a.malloc_stats else None
    sampler = Sampler(pid)
    sampler.start()
    res, cmd = run_wrk(wrk, url, endpoint, a.duration, a)
    sampler.stop()
    time.sleep(1.0)  # let connections wrk left close on the server side
    end = {"rss_kb": rss_kb(pid), "fds": fd_count(pid)}
    heap_end = malloc_totals(pid, a.service_log) if a.malloc_stats else None
    statuses = {int(k): v for k, v in res["statuses"].items()}
    ok = sum(v for k, v in statuses.items() if 200 <= k < 300)
    intended = statuses.get(429, 0)
    sock = sum(res["errors"].values()) - res["errors"].get("status", 0)
    seconds = res["duration_us"] / 1e6
    growth = (end["rss_kb"] - start["rss_kb"]) / start["rss_kb"] * 100.0
    return {
        "endpoint": "POST /" + endpoint if endpoint != "mixed" else "mixed: POST /link, /query, /evidence, /execute",
        "warmup": warmup,
        "wrk_command": cmd,
        "seconds": round(seconds, 2),
        "requests": res["requests"],
        "requests_per_s": round(res["requests"] / seconds, 1),
        "latency_ms": {k: round(v / 1000.0, 3) for k, v in res["latency_us"].items()},
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "ok_2xx": ok,
        "intended_429": intended,
        "errors_beyond_429": res["requests"] - ok - intended + sock,
        "socket_errors": res["errors"],
        "rss_kb": {"start": start["rss_kb"], "end": end["rss_kb"],
                   "peak_sampled": max([s[1] for s in sampler.samples] or [end["rss_kb"]])},
        "rss_growth_pct": round(growth, 2),
        "malloc": {"start": heap_start, "end": heap_end} if a.malloc_stats else None,
        "fds": {"start": start["fds"], "end": end["fds"], "max_sampled": max([s[2] for s in sampler.samples] or [0])},
        "samples_every_10s": [{"t_s": s[0], "rss_kb": s[1], "fds": s[2]} for s in sampler.samples[9::10]],
    }


def drain(url_host, port, proc, stub_port, a):
    """SIGTERM under load: classify every request by when it started."""
    stub_rules(stub_port, {"rules": [{"match": {"path": "/v1/chat/completions"},
                                      "respond": {"content": "```sql\n%s\n```" % SQL,
                                                  "delay_ms": a.drain_model_delay_ms}}]})
    body = json.dumps(BODIES["query"])
    log, lock, stop = [], threading.Lock(), threading.Event()

    def client():
        conn = None
        while not stop.is_set():
            t0 = time.monotonic()
            outcome = None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(url_host, port, timeout=30)
                conn.request("POST", "/query", body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                outcome = r.status
                if (r.getheader("Connection") or "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                outcome = type(e).__name__
                if conn is not None:
                    conn.close()
                conn = None
            with lock:
                log.append((t0, time.monotonic(), outcome))
            if isinstance(outcome, str) and proc.poll() is not None:
                break
            if isinstance(outcome, str):
                time.sleep(0.05)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(a.drain_clients)]
    for t in threads:
        t.start()
    time.sleep(3.0)
    t_sig = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        code = None
    t_exit = time.monotonic()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(timeout=35)
    in_flight = [e for e in log if e[0] < t_sig < e[1]]
    after = [e for e in log if e[0] >= t_sig]

    def tally(entries):
        out = {}
        for e in entries:
            key = str(e[2])
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items()))

    ok = lambda e: isinstance(e[2], int) and 200 <= e[2] < 300
    return {
        "clients": a.drain_clients,
        "model_delay_ms": a.drain_model_delay_ms,
        "requests_before_signal": sum(1 for e in log if e[1] <= t_sig),
        "in_flight_at_sigterm": len(in_flight),
        "in_flight_completed": sum(1 for e in in_flight if ok(e)),
        "in_flight_failed": sum(1 for e in in_flight if not ok(e)),
        "in_flight_outcomes": tally(in_flight),
        "sent_after_sigterm": len(after),
        "sent_after_sigterm_outcomes": tally(after),
        "exit_status": code,
        "seconds_to_exit": round(t_exit - t_sig, 3),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=60, help="seconds of each soak (default 60)")
    ap.add_argument("--warmup", type=int, default=5, help="unmeasured seconds before each soak (default 5)")
    ap.add_argument("--settle-round", type=int, default=15,
                    help="seconds of each further warm-up round (default 15)")
    ap.add_argument("--settle-pct", type=float, default=0.5,
                    help="a round adding less than this %% to idle RSS counts as flat; two flat rounds "
                         "in a row end the warm-up (default 0.5)")
    ap.add_argument("--settle-max", type=int, default=180,
                    help="at most this many seconds of warm-up rounds (default 180; 0: no rounds)")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--endpoints", default="link,query")
    ap.add_argument("--drain-clients", type=int, default=16)
    ap.add_argument("--drain-model-delay-ms", type=int, default=300)
    ap.add_argument("--malloc-stats", action="store_true",
                    help="also read glibc's live heap and system bytes through gdb after each warm-up part "
                         "and at the soak's start and end (tells memory the service keeps from allocator growth)")
    ap.add_argument("--binary")
    ap.add_argument("--wrk", default=shutil.which("wrk"))
    ap.add_argument("--port", type=int)
    ap.add_argument("--ready-timeout", type=float, default=60.0)
    ap.add_argument("--keep-files", action="store_true", help="keep the temporary directory (config, logs)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not a.wrk:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    binary = servicelib.find_binary(a.binary)
    if not binary:
        raise SystemExit("no text2sqld binary: build it or give --binary")

    procs = servicelib.Procs()
    report = {"binary": binary, "goal": "errors_beyond_429 == 0, rss_growth_pct < 5, fds end == start, "
              "every in-flight request completes on SIGTERM, exit 0"}
    try:
        db = procs.path("soak.sqlite")
        write_database(db)
        stub_port = start_stub(procs)
        port = a.port or servicelib.free_port()
        cfg = {"listen": {"host": "127.0.0.1", "port": port},
               "databases": [{"name": "soak", "url": "sqlite://" + db}],
               "state": {"url": "sqlite://" + procs.path("state.sqlite")},
               "models": {"generate": {"base_url": "http://127.0.0.1:%d/v1" % stub_port, "model": "soak-gen",
                                       "timeout_ms": 10000, "retries": 0}},
               "generate": {"cache_ttl_s": 0},
               "log": {"level": "warn", "access": False}}
        cfg_path = procs.path("config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        url, _pid = procs.start_service(binary, cfg_path, a.ready_timeout)
        a.service_log = procs.path("text2sqld.log")
        proc = procs.procs[-1]  # the service's Popen (start_service appended it)
        report.update({"url": url, "model": "tests/stub/model_stub.py, zero latency, fixed SQL: " + SQL,
                       "wrk": subprocess.run([a.wrk, "-v"], capture_output=True, text=True).stdout.split("\n")[0],
                       "cpus": os.cpu_count(), "rss_kb_ready": rss_kb(proc.pid), "fds_ready": fd_count(proc.pid)})
        report["soaks"] = [soak(a.wrk, url, proc.pid, e.strip(), a) for e in a.endpoints.split(",") if e.strip()]
        report["drain"] = drain("127.0.0.1", port, proc, stub_port, a)
        report["goal_met"] = (all(s["errors_beyond_429"] == 0 and s["rss_growth_pct"] < 5 and
                                  s["fds"]["end"] == s["fds"]["start"] for s in report["soaks"]) and
                              report["drain"]["in_flight_failed"] == 0 and report["drain"]["exit_status"] == 0)
    finally:
        procs.stop_all()
        if a.keep_files:
            report["files"] = procs.tmp
        else:
            shutil.rmtree(procs.tmp, ignore_errors=True)
    emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
