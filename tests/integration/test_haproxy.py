#!/usr/bin/env python3
"""test_haproxy.py - two real text2sqld replicas (SQLite) behind a real
haproxy on loopback, as issue 20 deploys them: haproxy checks /readyz every
500 ms with its default retry settings, and the replicas trust it as a proxy.

  - a rolling restart (SIGTERM one replica, start it again, then the other)
    under steady load from several clients loses no request;
  - 100 concurrent requests from one address through haproxy are all
    answered 200, with limits.max_connections_per_ip 8: the cap is not
    applied to a trusted proxy, nor to served connections;
  - the access log names the client that haproxy forwarded for;
  - `text2sqld --health` on a non-default port, the port read from the config;
  - with PostgreSQL (CI has it): the replicas share a PostgreSQL state store
    and a Redis of the test's own, and an example stored and a refresh asked
    through haproxy (so on one replica) reach both replicas within seconds.
  - one API key sending 150 concurrent slow /query requests through haproxy
    gets every one answered with the default limits (issue 30: the per-key
    cap is work-conserving);
Skips cleanly when haproxy is not installed (CI installs it:
scripts/install-deps.sh).
"""

import hashlib
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
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
HAPROXY = shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy")
                                           if os.access(p, os.X_OK)), None)
TMP = fixtures.scratch_dir("t2s-haproxy-")
DB = fixtures.write_sqlite(os.path.join(TMP, "items.sqlite"), "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)",
                           {"item": [(i, "item %d" % i) for i in range(1, 51)]})
SQL = "SELECT count(*) FROM item"
LOAD_CLIENTS = 4


def replica_config(port, shared=None):
    """shared: the state store and Redis URLs the replicas share, or None."""
    cfg = {"listen": {"port": port, "trusted_proxies": ["127.0.0.1/32"]},
            "databases": [{"name": "items", "url": "sqlite://" + DB}],
            # the delay must outlast haproxy's checks: 500 ms apart, 3 failures mark the server down
            # a per-address cap far below the burst: haproxy, a trusted proxy, is not held to it
            "limits": {"drain_delay_ms": 3000, "drain_timeout_ms": 15000, "max_connections_per_ip": 8},
            "log": {"level": "info", "access": True}}
    if shared:
        cfg.update({"state": {"url": shared[0]}, "redis": {"url": shared[1]},
                    "auth": {"allow_anonymous_writes": True}})
    return cfg


def haproxy_config(front_port, ports):
    servers = "\n".join("    server r%d 127.0.0.1:%d check inter 500ms" % (i, p) for i, p in enumerate(ports))
    return """global
    maxconn 2000
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    option forwardfor
frontend front
    bind 127.0.0.1:%d
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
%s
""" % (front_port, servers)


class Haproxy:
    def __init__(self, front_port, ports):
        self.dir = tempfile.mkdtemp(prefix="t2s-haproxy-cfg-")
        self.path = os.path.join(self.dir, "haproxy.cfg")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(haproxy_config(front_port, ports))
        self.log = open(os.path.join(self.dir, "haproxy.log"), "wb")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", self.path], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.port = front_port

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def execute(port, request_id=None, timeout=30, headers=None):
    headers = dict(headers or {})
    if request_id:
        headers["X-Request-Id"] = request_id
    return t2s.http_request("127.0.0.1", port, "POST", "/execute", json_body={"database": "items", "sql": SQL},
                            headers=headers, timeout=timeout)


def answered(r):
    return r is not None and r.status == 200 and (r.json or {}).get("rows") == [[50]]


def both_serving(front, replicas):
    """True once requests through haproxy reached every replica (each one's access log shows one)."""
    marks = {}
    for i in range(20):
        rid = "probe-%d-%d" % (time.monotonic_ns(), i)
        try:
            if answered(execute(front, rid)):
                for svc in replicas:
                    if rid in svc.log_text():
                        marks[svc.port] = True
        except (OSError, http.client.HTTPException):
            pass
    return len(marks) == len(replicas)


class Load:
    """LOAD_CLIENTS threads sending /execute through haproxy one after another until stop(), each on
    its keep-alive connection (as browsers and SDKs do: haproxy then reuses its connections to the
    replicas), a new one only when haproxy closed it."""

    def __init__(self, front):
        self.front = front
        self.ok = 0
        self.failed = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run) for _ in range(LOAD_CLIENTS)]
        for t in self.threads:
            t.start()

    def _run(self):
        conn = None
        body = json.dumps({"database": "items", "sql": SQL})
        while not self.stopping.is_set():
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.front, timeout=30)
            try:
                conn.request("POST", "/execute", body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                r = t2s.Response(resp.status, resp.reason, resp.headers, data)
                good, what = answered(r), "%d %s" % (r.status, r.text[:120])
                if resp.will_close:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                good, what = False, repr(e)
                conn.close()
                conn = None
            with self.lock:
                if good:
                    self.ok += 1
                else:
                    self.failed.append(what)

    def count(self):
        with self.lock:
            return self.ok

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)


def restart(svc, load):
    """SIGTERM (exit 0 after the drain); the other replica alone serves the load for a while (a
    replacement takes a while to start: here, until 40 more requests were answered); then the
    same replica again on its port."""
    code = svc.stop(signal.SIGTERM, timeout=60)
    before = load.count()
    fixtures.wait_until(lambda: load.count() > before + 40)
    svc.start()
    return code


def rolling_restart(front, replicas):
    load = Load(front)
    codes = []
    try:
        for svc in replicas:
            before = load.count()
            codes.append(restart(svc, load))
            # the restarted replica is back in haproxy's rotation before the next one goes
            fixtures.wait_until(lambda: both_serving(front, replicas))
            fixtures.wait_until(lambda: load.count() > before + 20)
    finally:
        load.stop()
    tap.eq(codes, [0, 0], "rolling_restart_replicas_exit_0")
    tap.ok(load.ok > 0 and not load.failed, "rolling_restart_under_load_loses_no_request",
           diag="%d answered, %d failed: %s" % (load.ok, len(load.failed), load.failed[:5]))


def hundred_concurrent(front, replicas):
    results = [None] * 100
    barrier = threading.Barrier(100)

    def one(i):
        try:
            barrier.wait(30)
            results[i] = execute(front, "burst-%d" % i, timeout=60)
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as e:
            results[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    bad = [r if isinstance(r, Exception) else (r.status, r.text[:100]) for r in results if not answered(r)]
    tap.ok(not bad, "hundred_concurrent_requests_from_one_address_all_answered",
           diag="%d failed: %s" % (len(bad), bad[:5]))
    text = "".join(svc.log_text() for svc in replicas)
    clients = {json.loads(line).get("client") for line in text.splitlines()
               if line.startswith("{") and '"burst-' in line and '"request"' in line}
    tap.eq(clients, {"127.0.0.1"}, "access_log_names_the_client_haproxy_forwarded_for")


def one_key_150_concurrent():
    """Issue 30: behind a gateway, one key's 150 concurrent slow requests are all answered with the
    default limits (key_max_concurrent a quarter of max_connections 256: the cap is work-conserving)."""
    stub = fixtures.ModelStub()
    key = "t2s-haproxy-key-%d" % os.getpid()
    right = "```sql\nSELECT count(*) FROM item\n```"
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": right, "delay_ms": 2000}}])
    port = t2s.free_port()
    cfg = replica_config(port)
    cfg.update({"auth": {"api_keys": [{"name": "gateway-tenant", "key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                                       "databases": ["*"]}]},
                "generate": {"cache_ttl_s": 0, "candidates": 1, "max_rounds": 0},
                "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 30000,
                                        "retries": 0}}})
    cfg["limits"] = {"drain_delay_ms": 0}
    svc = t2s.Service(cfg)
    proxy = None
    try:
        svc.start()
        proxy = Haproxy(t2s.free_port(), [port])
        def through():
            try:
                return answered(execute(proxy.port, headers={"Authorization": "Bearer " + key}))
            except (OSError, http.client.HTTPException):
                return False
        tap.ok(fixtures.wait_until(through), "haproxy_serves_the_keyed_replica")
        n = 150
        results = [None] * n
        barrier = threading.Barrier(n)

        def one(i):
            try:
                barrier.wait(30)
                results[i] = t2s.http_request("127.0.0.1", proxy.port, "POST", "/query",
                                              json_body={"database": "items", "question": "How many items?"},
                                              headers={"Authorization": "Bearer " + key}, timeout=60)
            except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as e:
                results[i] = e
        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        codes = {}
        for r in results:
            c = getattr(r, "status", type(r).__name__)
            codes[c] = codes.get(c, 0) + 1
        tap.eq(codes, {200: n}, "one_key_150_concurrent_requests_behind_haproxy_all_answered_with_default_limits")
    except Exception:  # noqa: BLE001 - reported as a failed check
        fixtures.report_exception(tap, svc)
    finally:
        if proxy:
            proxy.close()
        svc.close()
        stub.close()


def health_on_non_default_port(replicas):
    svc = replicas[0]
    env = dict(os.environ)
    env.pop("TEXT2SQLD_LISTEN_PORT", None)
    r = subprocess.run([svc.binary, "--config", svc.config_path, "--health", "/readyz"], env=env,
                       capture_output=True, timeout=30)
    tap.ok(svc.port != 8080 and r.returncode == 0, "health_probe_finds_the_configured_non_default_port",
           diag="port %d exit %d %s" % (svc.port, r.returncode, r.stderr.decode()[:200]))


def shared_state(front, replicas):
    """An example stored and a refresh asked through haproxy reach both replicas."""
    def learned():  # changes a replica learned from another (the writer does not count its own)
        total = 0.0
        for svc in replicas:
            text = svc.request("GET", "/metrics", timeout=10).text
            total += sum(float(v) for v in re.findall(
                r'^text2sqld_invalidations_received_total\{source="redis",kind="state"\} (\S+)$', text, re.M))
        return total
    before = learned()
    r = t2s.http_request("127.0.0.1", front, "POST", "/databases/items/examples",
                         json_body={"question": "How many items are there?", "sql": SQL}, timeout=30)
    tap.ok(r.status == 201, "example_stored_through_haproxy", diag=r.text[:300])
    ex_id = (r.json or {}).get("id")

    def listed(svc):
        got = svc.request("GET", "/databases/items/examples", timeout=10)
        return got.status == 200 and any(e.get("id") == ex_id for e in (got.json or {}).get("examples", []))
    tap.ok(fixtures.wait_until(lambda: all(listed(svc) for svc in replicas), timeout=10),
           "example_stored_on_one_replica_is_listed_by_both_within_seconds")
    tap.ok(fixtures.wait_until(lambda: learned() > before, timeout=10),
           "example_stored_on_one_replica_is_announced_to_the_other_within_seconds")
    with sqlite3.connect(DB) as conn:
        conn.execute("CREATE TABLE shelf (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item(id))")
    r = t2s.http_request("127.0.0.1", front, "POST", "/databases/items/refresh", timeout=60)
    tap.ok(r.status == 200, "refresh_asked_through_haproxy", diag=r.text[:300])

    def has_shelf(svc):
        got = svc.request("GET", "/databases/items", timeout=10)
        return got.status == 200 and "shelf" in [t.get("name") for t in (got.json or {}).get("tables", [])]
    tap.ok(fixtures.wait_until(lambda: all(has_shelf(svc) for svc in replicas), timeout=10),
           "refresh_on_one_replica_reaches_both_within_seconds",
           diag=lambda: "".join(svc.log_tail(5) for svc in replicas))


def run_all():
    if not HAPROXY:
        tap.skip("haproxy_tests", "haproxy is not installed (scripts/install-deps.sh installs it)")
        return
    ports = [t2s.free_port(), t2s.free_port()]
    pg = fixtures.PgDatabases(tap)
    redis, shared = None, None
    if fixtures.have_pg():
        pg.create("t2s_haproxy_state", setup_sql=None)
        redis = fixtures.RedisServer(TMP, t2s.free_port())
        shared = (t2s.pg_url("t2s_haproxy_state", user="postgres"), "redis://127.0.0.1:%d/0" % redis.port)
    else:
        tap.skip("shared_state_through_haproxy", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
    replicas = [t2s.Service(replica_config(p, shared)) for p in ports]
    proxy = None
    try:
        for svc in replicas:
            svc.start()
        proxy = Haproxy(t2s.free_port(), ports)
        tap.ok(fixtures.wait_until(lambda: both_serving(proxy.port, replicas)), "haproxy_sends_requests_to_both_replicas")
        health_on_non_default_port(replicas)
        hundred_concurrent(proxy.port, replicas)
        rolling_restart(proxy.port, replicas)
        if shared:
            shared_state(proxy.port, replicas)
        proxy.close()
        proxy = None
        one_key_150_concurrent()
    except Exception:  # noqa: BLE001 - reported as a failed check
        fixtures.report_exception(tap, *replicas)
    finally:
        if proxy:
            proxy.close()
        for svc in replicas:
            svc.close()
        if redis:
            redis.kill()
        pg.drop_all()


def main():
    return fixtures.run_with_binary(tap, "haproxy_tests", run_all)


if __name__ == "__main__":
    sys.exit(main())
