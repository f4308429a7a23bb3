#!/usr/bin/env python3
"""test_fair_share.py - one API key's slow work never starves another's
(issue 19, "one key can take every served slot"), against the real binary,
two SQLite databases written here and the model stub answering slowly.

Covers:
  - limits.key_max_concurrent (default a quarter of limits.max_connections:
    2 of 8 here): key A starts more slow /query requests than the served
    connections; alone, it borrows idle slots past its cap up to one share
    short of them all (issue 30: the cap is work-conserving), every other
    one gets 429 too-many-concurrent-requests at once (a problem with an integer
    Retry-After, the connection closed), A's own /execute too while its
    share is taken; key B's /execute on its database answers 200 on every
    try meanwhile (before the cap: 503 overloaded, the slots all A's); when
    A's requests end its share is free again; /metrics counts the refusals
    and shows the limit;
  - limits.key_max_timeout_ms (default 120000, under generate.max_timeout_ms,
    set to 600000 here): a key's options.timeout_ms above it is refused 400 naming the
    field; a configured lower cap also cuts the default budget
    (generate.timeout_ms), so a key's /query without a timeout ends at the
    cap (504 timeout) instead of waiting for the model;
  - both settings validated with their path (key_max_concurrent above
    max_connections is refused);
  - with auth off neither per-key limit applies (limits.max_connections_per_ip
    bounds an address): more slow requests than the default cap all run,
    and a timeout above the key cap is accepted.
Every service is stopped with SIGTERM and must exit 0.
"""

import hashlib
import json
import os
import re
import secrets
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-fair-share-")
KEY_A = "t2s-fair-a-%d-%s" % (os.getpid(), secrets.token_hex(12))
KEY_B = "t2s-fair-b-%d-%s" % (os.getpid(), secrets.token_hex(12))
DB_A = fixtures.write_sqlite(os.path.join(TMP, "alpha.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                             fixtures.SMALL_CONCERT_ROWS)
DB_B = fixtures.write_sqlite(os.path.join(TMP, "beta.sqlite"), "CREATE TABLE beta_rows (id INTEGER PRIMARY KEY);",
                             {"beta_rows": [(1,), (2,), (3,)]})
with open(os.path.join(t2s.SOURCE_ROOT, "openapi", "openapi.json"), encoding="utf-8") as f:
    OPENAPI = json.load(f)
RIGHT = "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"
QUESTION = "How many singers are from France?"
MAX_CONNECTIONS = 8
CAP = MAX_CONNECTIONS // 4      # limits.key_max_concurrent's default
# a lone key runs past its cap up to this: one share and max(2, MAX_CONNECTIONS // 16) left (issue 30)
BORROW = MAX_CONNECTIONS - CAP - max(2, MAX_CONNECTIONS // 16)
SLOW_MS = 5000                  # the model's delay: A's requests outlive B's tries
ATTEMPTS = MAX_CONNECTIONS + 4  # more than every served connection


def config(stub, auth=True, limits=None):
    cfg = {"databases": [{"name": "alpha", "url": "sqlite://" + DB_A}, {"name": "beta", "url": "sqlite://" + DB_B}],
           "limits": dict({"max_connections": MAX_CONNECTIONS}, **(limits or {})),
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           # a request may ask up to 600 s, so that the key's own cap (120 s) is what refuses above it
           "generate": {"cache_ttl_s": 0, "candidates": 1, "max_rounds": 0, "max_timeout_ms": 600000},
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 30000, "retries": 0}},
           "log": {"level": "info", "access": False}}
    if auth:
        cfg["auth"] = {"api_keys": [{"name": name, "key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                                     "databases": [db]}
                                    for name, key, db in (("tenant-a", KEY_A, "alpha"), ("tenant-b", KEY_B, "beta"))]}
    return cfg


def bearer(key):
    return {"Authorization": "Bearer " + key} if key else {}


def query(svc, key, options=None, timeout=60):
    body = {"database": "alpha", "question": QUESTION}
    if options:
        body["options"] = options
    return svc.request("POST", "/query", json=body, headers=bearer(key), timeout=timeout)


def execute_b(svc):
    return svc.request("POST", "/execute", json={"database": "beta", "sql": "SELECT count(*) FROM beta_rows"},
                       headers=bearer(KEY_B), timeout=30)


def start_slow_queries(svc, key, n, stagger_s=0.1):
    """n /query requests of key, each on its own connection in its own thread,
    started stagger_s apart; returns (threads, results), results[i] the
    Response (or the exception) of the i-th once its thread ends."""
    results = [None] * n
    threads = []

    def one(i):
        try:
            results[i] = query(svc, key)
        except Exception as e:  # noqa: BLE001 - recorded for the checks
            results[i] = e
    for i in range(n):
        t = threading.Thread(target=one, args=(i,), daemon=True)
        t.start()
        threads.append(t)
        time.sleep(stagger_s)
    return threads, results


def metric(svc, pattern):
    m = re.search(pattern, svc.request("GET", "/metrics", timeout=10).text, re.M)
    return float(m.group(1)) if m else None


def part_one_key_cannot_starve_another(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": SLOW_MS}}])
    with fixtures.serving(tap, config(stub), "fair_share_service_exits_0") as svc:
        threads, results = start_slow_queries(svc, KEY_A, ATTEMPTS)
        b = [execute_b(svc) for _ in range(9)]
        a_execute = svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT 1"},
                                headers=bearer(KEY_A), timeout=30)
        for t in threads:
            t.join(timeout=60)
        tap.eq([r.status for r in b], [200] * 9, "other_keys_execute_answers_200_while_one_key_saturates",)
        tap.eq([(r.json or {}).get("rows") for r in b[:1]], [[[3]]], "other_keys_execute_answers_its_rows")
        statuses = [getattr(r, "status", repr(r)) for r in results]
        tap.eq(sorted(statuses, key=str), sorted([200] * BORROW + [429] * (ATTEMPTS - BORROW), key=str),
               "lone_key_borrows_idle_slots_up_to_one_share_short_and_the_excess_gets_429", )
        refused = [r for r in results if getattr(r, "status", None) == 429]
        if refused:
            fixtures.check_problem(tap, refused[0], 429, "too-many-concurrent-requests",
                                   "excess_request_is_a_too_many_concurrent_requests_problem")
            tap.ok(re.match(r"^[0-9]+$", refused[0].headers.get("Retry-After") or "") is not None,
                   "excess_request_carries_integer_retry_after", diag=repr(refused[0].headers))
            tap.eq((refused[0].headers.get("Connection") or "").lower(), "close",
                   "excess_request_connection_is_closed")
            tap.ok("tenant-a" in ((refused[0].json or {}).get("detail") or ""), "problem_names_the_key",
                   diag=refused[0].text[:300])
            t2s.check_response(tap, OPENAPI, refused[0], "POST", "/query", "excess_request_matches_documented_429")
        fixtures.check_problem(tap, a_execute, 429, "too-many-concurrent-requests",
                               "saturating_keys_own_execute_gets_429")
        t2s.check_response(tap, OPENAPI, a_execute, "POST", "/execute", "execute_429_matches_documented_schema")
        tap.eq([(r.json or {}).get("rows") for r in results if getattr(r, "status", None) == 200], [[[2]]] * BORROW,
               "the_running_requests_answer")
        stub.rules([], default_content=RIGHT)
        again = [query(svc, KEY_A) for _ in range(CAP + 1)]
        tap.eq([r.status for r in again], [200] * (CAP + 1), "the_share_is_free_again_when_requests_end")
        streamed = [svc.request("POST", "/query", json={"database": "alpha", "question": QUESTION},
                                headers=dict(bearer(KEY_A), Accept="text/event-stream"), timeout=60)
                    for _ in range(CAP)]
        tap.ok(all(r.status == 200 and "event: result" in r.text for r in streamed) and query(svc, KEY_A).status == 200,
               "a_streamed_query_frees_its_share_when_the_stream_ends", diag=repr(streamed)[:500])
        tap.eq(metric(svc, r"^text2sqld_http_concurrency_limited_total(?:\{\})? (\S+)"),
               float(ATTEMPTS - BORROW + 1), "metrics_count_the_refusals")
        tap.eq(metric(svc, r'^text2sqld_limit\{limit="key_max_concurrent"\} (\S+)'), float(CAP),
               "metrics_show_the_default_cap_a_quarter_of_max_connections")

        # Requested time: above limits.key_max_timeout_ms (default 120000) is refused, naming the field.
        r = query(svc, KEY_A, {"timeout_ms": 120001})
        fixtures.check_problem(tap, r, 400, None, "timeout_above_the_key_cap_is_refused_400")
        tap.ok("options.timeout_ms" in ((r.json or {}).get("detail") or ""), "refusal_names_options_timeout_ms",
               diag=r.text[:300])
        tap.eq(query(svc, KEY_A, {"timeout_ms": 120000}).status, 200, "timeout_at_the_key_cap_is_accepted")


def part_configured_caps(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 4000}}])
    limits = {"key_max_concurrent": 3, "key_max_timeout_ms": 1500}
    with fixtures.serving(tap, config(stub, limits=limits), "configured_caps_service_exits_0") as svc:
        t0 = time.monotonic()
        r = query(svc, KEY_A)
        took = time.monotonic() - t0
        fixtures.check_problem(tap, r, 504, "timeout", "default_budget_is_cut_to_the_key_cap")
        tap.ok(took < 3.5, "request_ends_at_the_key_cap_not_the_model", diag="%.2f s" % took)
        r = query(svc, KEY_A, {"timeout_ms": 2000})
        fixtures.check_problem(tap, r, 400, None, "timeout_above_a_configured_key_cap_is_refused_400")
        tap.ok("1500" in ((r.json or {}).get("detail") or ""), "refusal_names_the_cap", diag=r.text[:300])
        tap.eq(metric(svc, r'^text2sqld_limit\{limit="key_max_concurrent"\} (\S+)'), 3.0,
               "metrics_show_the_configured_cap")
    code, out = t2s.run_config_only(config(stub, limits={"key_max_concurrent": MAX_CONNECTIONS + 1}),
                                    ["--check-config"])
    tap.ok(code == 2 and "limits.key_max_concurrent" in out, "cap_above_max_connections_is_refused_with_its_path",
           diag="exit %r: %s" % (code, out[-300:]))
    code, out = t2s.run_config_only(config(stub, limits={"key_max_timeout_ms": 50}), ["--check-config"])
    tap.ok(code == 2 and "limits.key_max_timeout_ms" in out, "timeout_cap_out_of_range_is_refused_with_its_path",
           diag="exit %r: %s" % (code, out[-300:]))


def part_auth_off_is_not_capped_per_key(stub):
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 2000}}])
    with fixtures.serving(tap, config(stub, auth=False), "auth_off_service_exits_0") as svc:
        threads, results = start_slow_queries(svc, None, CAP + 2)
        for t in threads:
            t.join(timeout=60)
        tap.eq([getattr(r, "status", repr(r)) for r in results], [200] * (CAP + 2),
               "without_auth_no_per_key_cap_applies")
        stub.rules([], default_content=RIGHT)
        tap.eq(query(svc, None, {"timeout_ms": 300000}).status, 200, "without_auth_the_key_timeout_cap_does_not_apply")


def keep_alive_get(port):
    """A GET /healthz on a new keep-alive connection: (socket, whether the answer says Connection: close)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t2s\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, b"connection: close" in head.lower()


def part_idle_keep_alive_cannot_hold_slots(stub):
    """Under pressure (3/4 of the served connections in use) answers close their connections."""
    with fixtures.serving(tap, config(stub), "keep_alive_service_exits_0") as svc:
        socks, closes = [], []
        try:
            for _ in range(MAX_CONNECTIONS - 1):
                sock, closed = keep_alive_get(svc.port)
                socks.append(sock)
                closes.append(closed)
        finally:
            for sock in socks:
                sock.close()
        # Answers close from the connection that makes 3/4 of max_connections in use (6 of 8).
        tap.ok(closes and not closes[0], "keep_alive_is_kept_while_connections_are_free", diag=repr(closes))
        tap.ok(closes and closes[-1], "under_pressure_answers_close_their_connections", diag=repr(closes))


def main():
    stub = None
    try:
        stub = fixtures.ModelStub()
        part_one_key_cannot_starve_another(stub)
        part_configured_caps(stub)
        part_auth_off_is_not_capped_per_key(stub)
        part_idle_keep_alive_cannot_hold_slots(stub)
    except Exception:  # noqa: BLE001 - reported as a failed check
        fixtures.report_exception(tap)
    finally:
        if stub:
            stub.close()
    return tap.done()


if __name__ == "__main__":
    if not t2s.server_binary():
        tap.skip("fair_share", "T2S_BIN is not set")
        sys.exit(tap.done())
    sys.exit(main())
