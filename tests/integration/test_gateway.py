#!/usr/bin/env python3
"""test_gateway.py - text2sqld behind a gateway (issue 20), on the real binary,
SQLite and the model stub:

  - the drain: after SIGTERM /readyz answers 503 "draining" at once while
    /healthz and a /query on new connections still answer 200 (the drain
    delay); a /query in flight finishes 200; then the listening socket
    closes; the process exits 0; "stopping" is logged before "draining";
  - served connections have no per-address cap: with
    limits.max_connections_per_ip 2, ten slow requests from one address all
    answer 200; a trusted proxy may hold more unfinished heads than the cap;
  - X-Forwarded-For: ignored (the access log's client is the socket's peer)
    until listen.trusted_proxies names the peer, then the rightmost
    untrusted hop is the client;
  - SIGHUP: a database added is served and listed, one removed is not, one
    whose settings change is refused (kept as it was); a key added works, a key removed is refused while the request
    it started still finishes 200, a listen.port change is logged as
    refused (the old port still serves), a config that does not parse is
    logged and the one in force kept; the process never dies of it;
  - --health reads the port from --config and from TEXT2SQLD_CONFIG.
The order of events is asserted, never their timing.
"""

import hashlib
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-gateway-")
DB = fixtures.write_sqlite(os.path.join(TMP, "alpha.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                           fixtures.SMALL_CONCERT_ROWS)
RIGHT = "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"
QUESTION = "How many singers are from France?"
KEY_A = "t2s-gw-a-%s" % secrets.token_hex(12)
KEY_B = "t2s-gw-b-%s" % secrets.token_hex(12)


def config(stub, **extra):
    cfg = {"databases": [{"name": "alpha", "url": "sqlite://" + DB}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           "generate": {"cache_ttl_s": 0, "candidates": 1, "max_rounds": 0},
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 30000, "retries": 0}},
           "log": {"level": "info", "access": True}}
    for section, values in extra.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def key_entry(name, key):
    return {"name": name, "key_sha256": hashlib.sha256(key.encode()).hexdigest(), "databases": ["*"]}


def query(svc, key=None, timeout=60, headers=None):
    h = dict(headers or {})
    if key:
        h["Authorization"] = "Bearer " + key
    return svc.request("POST", "/query", json={"database": "alpha", "question": QUESTION}, headers=h,
                       timeout=timeout)


class Background:
    """fn() in a thread; .result (or .error) when done."""

    def __init__(self, fn):
        self.result = self.error = None
        self.thread = threading.Thread(target=self._run, args=(fn,))
        self.thread.start()

    def _run(self, fn):
        try:
            self.result = fn()
        except (OSError, http.client.HTTPException) as e:
            self.error = e

    def join(self, timeout=120):
        self.thread.join(timeout)
        return self.result


def log_events(svc, msg):
    return [json.loads(line) for line in svc.log_text().splitlines()
            if line.startswith("{") and msg in line]


def access_clients(svc, request_id):
    return [e.get("client") for e in log_events(svc, '"request"') if e.get("request_id") == request_id]


def rewrite(svc, cfg):
    with open(svc.config_path, "w", encoding="utf-8") as f:
        f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))


def reload(svc, cfg, expect):
    """Writes cfg, sends SIGHUP and waits for the log line naming expect's outcome."""
    before = len(log_events(svc, expect))
    rewrite(svc, cfg)
    svc.proc.send_signal(signal.SIGHUP)
    return fixtures.wait_until(lambda: len(log_events(svc, expect)) > before)


# --------------------------------------------------------------------------- checks

def part_drain(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 2500}}])
    svc = t2s.Service(config(stub, limits={"drain_delay_ms": 4000, "drain_timeout_ms": 30000}))
    try:
        svc.start()
        first = Background(lambda: query(svc))
        tap.ok(fixtures.wait_in_flight(svc, 2), "drain_query_in_flight_before_sigterm")
        svc.proc.send_signal(signal.SIGTERM)
        ready = fixtures.wait_until(lambda: svc.request("GET", "/readyz", timeout=10).status == 503, timeout=10)
        tap.ok(ready, "drain_readyz_turns_503_after_sigterm", diag=svc.log_tail)
        r = svc.request("GET", "/readyz", timeout=10)
        tap.ok(r.status == 503 and (r.json or {}).get("status") == "draining", "drain_readyz_says_draining",
               diag=repr(r.text[:200]))
        health = svc.request("GET", "/healthz", timeout=10)
        second = query(svc, timeout=60)  # a new connection, after readiness failed
        tap.eq(health.status, 200, "drain_healthz_still_answers_200_after_readyz_503")
        tap.ok(second.status == 200 and (second.json or {}).get("sql"), "drain_new_query_still_answered_200",
               diag=lambda: second.text[:300])
        first.join()
        tap.ok(first.result is not None and first.result.status == 200, "drain_in_flight_query_finished_200",
               diag=lambda: "%r %r" % (first.result and first.result.text[:200], first.error))
        code = svc.proc.wait(timeout=60)
        tap.eq(code, 0, "drain_process_exits_0")
        text = svc.log_text()
        tap.ok(0 <= text.find("stopping:") < text.find("draining:") < text.find('"stopped"'),
               "drain_logs_stopping_then_draining_then_stopped", diag=svc.log_tail)
    finally:
        svc.close()


def part_no_served_cap_per_address(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 8000}}])
    svc = t2s.Service(config(stub, limits={"max_connections_per_ip": 2, "max_connections": 32}))
    held = []
    try:
        svc.start()
        # One after another, each once the previous one is being served (its head no longer arriving):
        # ten served connections from one address at once, five times the cap.
        runs = []
        for i in range(10):
            runs.append(Background(lambda: query(svc)))
            fixtures.wait_in_flight(svc, i + 2)
        statuses = [getattr(b.join(), "status", b.error) for b in runs]
        tap.ok(all(s == 200 for s in statuses), "ten_served_queries_from_one_address_all_200_with_cap_2",
               diag=repr(statuses))
        # A trusted proxy may hold more connections still sending their head than the cap.
        reload(svc, dict(svc.config, listen=dict(svc.config["listen"], trusted_proxies=["127.0.0.1/32"])),
               "config reloaded")
        for _ in range(3):
            s = socket.create_connection((svc.host, svc.port), timeout=10)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
            held.append(s)
        r = svc.request("GET", "/healthz", timeout=10)
        tap.eq(r.status, 200, "trusted_proxy_is_not_capped_per_address_while_heads_arrive")
        tap.eq(svc.stop(), 0, "per_address_service_exits_0")
    finally:
        for s in held:
            s.close()
        svc.close()


def part_forwarded_for(stub):
    svc = t2s.Service(config(stub))
    try:
        svc.start()
        xff = {"X-Forwarded-For": "203.0.113.9, 198.51.100.7", "X-Request-Id": "xff-untrusted"}
        svc.request("GET", "/healthz", headers=xff)
        tap.ok(fixtures.wait_until(lambda: access_clients(svc, "xff-untrusted")) == ["127.0.0.1"],
               "xff_from_an_untrusted_peer_is_ignored_in_the_access_log",
               diag=lambda: repr(access_clients(svc, "xff-untrusted")))
        ok = reload(svc, dict(svc.config, listen=dict(svc.config["listen"], trusted_proxies=["127.0.0.0/8"])),
                    "config reloaded")
        tap.ok(ok and "listen.trusted_proxies" in json.dumps(log_events(svc, "config reloaded")[-1]),
               "reload_reports_trusted_proxies_reloaded", diag=svc.log_tail)
        xff["X-Request-Id"] = "xff-trusted"
        svc.request("GET", "/healthz", headers=xff)
        tap.ok(fixtures.wait_until(lambda: access_clients(svc, "xff-trusted")) == ["198.51.100.7"],
               "xff_from_a_trusted_proxy_gives_the_rightmost_hop_as_client",
               diag=lambda: repr(access_clients(svc, "xff-trusted")))
        tap.eq(svc.stop(), 0, "forwarded_service_exits_0")
    finally:
        svc.close()


def part_reload(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 2000}}])
    base = config(stub, auth={"api_keys": [key_entry("a", KEY_A)]})
    svc = t2s.Service(base)
    try:
        svc.start()
        tap.eq(query(svc, KEY_B).status, 401, "reload_key_b_unknown_before")
        slow = Background(lambda: query(svc, KEY_A))
        tap.ok(fixtures.wait_in_flight(svc, 2), "reload_key_a_query_in_flight")
        moved = dict(base, auth={"api_keys": [key_entry("b", KEY_B)]},
                     listen=dict(svc.config["listen"], port=t2s.free_port()))
        moved["limits"] = svc.config["limits"]
        tap.ok(reload(svc, moved, "config reloaded"), "sighup_logs_config_reloaded", diag=svc.log_tail)
        event = log_events(svc, "config reloaded")[-1]
        tap.ok("auth" in event.get("reloaded", []) and "listen.port" in event.get("refused", []),
               "reload_logs_auth_reloaded_and_listen_port_refused", diag=repr(event))
        b = query(svc, KEY_B)  # on the old port: the port change was refused
        tap.eq(b.status, 200, "reload_added_key_answers_200_on_the_old_port")
        tap.eq(query(svc, KEY_A).status, 401, "reload_removed_key_refused_401")
        slow.join()
        tap.ok(slow.result is not None and slow.result.status == 200,
               "reload_request_in_flight_keeps_its_config_and_answers_200",
               diag=lambda: "%r %r" % (slow.result and slow.result.text[:200], slow.error))
        tap.ok(reload(svc, "{ not json", "reload refused"), "bad_config_on_reload_is_logged", diag=svc.log_tail)
        tap.ok(svc.alive() and query(svc, KEY_B).status == 200, "bad_config_keeps_the_one_in_force")
        bad = dict(moved, limits=dict(moved["limits"], key_burst=0))
        tap.ok(reload(svc, bad, "reload refused"), "invalid_setting_on_reload_is_logged", diag=svc.log_tail)
        tap.eq(svc.stop(), 0, "reload_service_exits_0_on_sigterm")
    finally:
        svc.close()


def part_reload_databases(stub):
    beta = fixtures.write_sqlite(os.path.join(TMP, "beta.sqlite"), "CREATE TABLE beta_rows (id INTEGER PRIMARY KEY);",
                                 {"beta_rows": [(1,), (2,), (3,)]})
    svc = t2s.Service(config(stub))
    try:
        svc.start()
        count = {"database": "beta", "sql": "SELECT count(*) FROM beta_rows"}
        tap.eq(svc.request("POST", "/execute", json=count).status, 404, "reload_beta_unknown_before")
        added = dict(svc.config, databases=svc.config["databases"] + [{"name": "beta", "url": "sqlite://" + beta}])
        ok = reload(svc, added, "config reloaded")
        event = log_events(svc, "config reloaded")[-1] if ok else {}
        tap.ok(ok and event.get("databases_added") == 1 and "databases.beta (added)" in event.get("reloaded", []),
               "reload_logs_the_database_added", diag=repr(event))
        r = svc.request("POST", "/execute", json=count)
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[3]], "reload_added_database_is_served",
               diag=r.text[:200])
        names = [d.get("name") for d in (svc.request("GET", "/databases").json or {}).get("databases", [])]
        tap.eq(sorted(names), ["alpha", "beta"], "reload_added_database_is_listed")
        moved = dict(added, databases=[{"name": "beta", "url": "sqlite://" + DB}])
        ok = reload(svc, moved, "config reloaded")
        event = log_events(svc, "config reloaded")[-1] if ok else {}
        tap.ok(ok and "databases.beta" in event.get("refused", []) and event.get("databases_removed") == 1,
               "reload_refuses_changing_a_database_in_place_and_removes_alpha", diag=repr(event))
        r = svc.request("POST", "/execute", json=count)
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[3]], "reload_kept_database_keeps_its_settings",
               diag=r.text[:200])
        r = svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT 1"})
        tap.eq(r.status, 404, "reload_removed_database_is_no_longer_served")
        tap.eq(svc.stop(), 0, "reload_databases_service_exits_0")
    finally:
        svc.close()


def part_health():
    port = t2s.free_port()
    while port == 8080:
        port = t2s.free_port()
    svc = t2s.Service({"databases": [{"name": "alpha", "url": "sqlite://" + DB}], "listen": {"port": port}})
    try:
        svc.start()
        env = dict(os.environ)
        env.pop("TEXT2SQLD_LISTEN_PORT", None)
        env.pop("TEXT2SQLD_CONFIG", None)
        r = subprocess.run([svc.binary, "--health", "/healthz", "--config", svc.config_path], env=env,
                           capture_output=True, timeout=30)
        tap.ok(r.returncode == 0, "health_reads_the_port_from_config", diag=r.stderr.decode()[:300])
        env["TEXT2SQLD_CONFIG"] = svc.config_path
        r = subprocess.run([svc.binary, "--health", "/readyz"], env=env, capture_output=True, timeout=30)
        tap.ok(r.returncode == 0, "health_reads_the_config_named_by_TEXT2SQLD_CONFIG", diag=r.stderr.decode()[:300])
    finally:
        svc.close()


def run_all():
    stub = fixtures.ModelStub()
    try:
        for part in (part_drain, part_no_served_cap_per_address, part_forwarded_for, part_reload,
                     part_reload_databases):
            try:
                part(stub)
            except Exception:  # noqa: BLE001 - reported as a failed check
                fixtures.report_exception(tap)
        part_health()
    finally:
        stub.close()


def main():
    return fixtures.run_with_binary(tap, "gateway_tests", run_all)


if __name__ == "__main__":
    sys.exit(main())
