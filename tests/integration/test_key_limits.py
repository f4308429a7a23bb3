#!/usr/bin/env python3
"""test_key_limits.py - per-key limits hold across reloads, free a slot as
soon as the answer is queued, and bind only when someone else needs the
slots (issue 30, holes 1 and 2 and the work-conserving cap), against the
real binary, a SQLite database written here and the model stub.

Covers:
  - a throttled key (1/s, burst 3) gets no more than its allowance while the
    config is reloaded (SIGHUP) 20 times in 2 s, the file unchanged;
  - a key at its concurrency cap can't open more after a reload, and a
    changed burst applies to the tokens left (a lower burst does not refill);
  - N clients sending thousands of sequential requests, each on a new
    connection, at key_max_concurrent N get no 429 (the slot is freed when
    the answer is queued, before the client can send its next request);
  - a lone key may go past its cap while slots are idle (max_connections
    minus one share), and is held to it again beyond that, while another
    key's requests are still answered.
Every service is stopped with SIGTERM and must exit 0.
"""

import hashlib
import http.client
import json
import os
import secrets
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-key-limits-")
KEY_A = "t2s-limits-a-%d-%s" % (os.getpid(), secrets.token_hex(12))
KEY_B = "t2s-limits-b-%d-%s" % (os.getpid(), secrets.token_hex(12))
DB = fixtures.write_sqlite(os.path.join(TMP, "alpha.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                           fixtures.SMALL_CONCERT_ROWS)
RIGHT = "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"
QUESTION = "How many singers are from France?"


def config(stub, limits=None, key_a=None):
    a = dict({"name": "tenant-a", "key_sha256": hashlib.sha256(KEY_A.encode()).hexdigest(), "databases": ["*"]},
             **(key_a or {}))
    b = {"name": "tenant-b", "key_sha256": hashlib.sha256(KEY_B.encode()).hexdigest(), "databases": ["*"]}
    return {"databases": [{"name": "alpha", "url": "sqlite://" + DB}],
            "limits": dict(limits or {}),
            "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
            "generate": {"cache_ttl_s": 0, "candidates": 1, "max_rounds": 0},
            "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 30000, "retries": 0}},
            "auth": {"api_keys": [a, b]},
            "log": {"level": "info", "access": False}}


def bearer(key):
    return {"Authorization": "Bearer " + key}


def execute(svc, key, timeout=30):
    return svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT 1"}, headers=bearer(key),
                       timeout=timeout)


def query(svc, key, timeout=60):
    return svc.request("POST", "/query", json={"database": "alpha", "question": QUESTION}, headers=bearer(key),
                       timeout=timeout)


def reloaded_count(svc):
    return svc.log_text().count('"config reloaded"')


def rewrite_and_reload(svc, cfg):
    before = reloaded_count(svc)
    with open(svc.config_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    svc.proc.send_signal(signal.SIGHUP)
    return fixtures.wait_until(lambda: reloaded_count(svc) > before, timeout=10)


def start_slow(svc, key, n):
    """n /query requests of key in threads; returns (threads, results)."""
    results = [None] * n

    def one(i):
        try:
            results[i] = query(svc, key)
        except (OSError, http.client.HTTPException) as e:
            results[i] = e
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    return threads, results


def status(r):
    return getattr(r, "status", repr(r))


def part_rate_survives_reloads(stub):
    cfg = config(stub, key_a={"rate_per_s": 1, "burst": 3})
    with fixtures.serving(tap, cfg, "rate_reload_service_exits_0") as svc:
        stop = threading.Event()
        sent = [0]

        def reloader():
            while not stop.is_set() and sent[0] < 20:
                svc.proc.send_signal(signal.SIGHUP)
                sent[0] += 1
                time.sleep(0.1)
        t = threading.Thread(target=reloader)
        start = time.monotonic()
        t.start()
        codes = []
        while time.monotonic() - start < 2.0:
            codes.append(execute(svc, KEY_A).status)
        stop.set()
        t.join()
        elapsed = time.monotonic() - start
        ok = codes.count(200)
        allowance = 3 + int(elapsed * 1) + 1
        tap.ok(sent[0] >= 15 and fixtures.wait_until(lambda: reloaded_count(svc) >= 15),
               "twenty_reloads_sent_during_the_burst", diag="sent %d, reloaded %d" % (sent[0], reloaded_count(svc)))
        tap.ok(ok <= allowance and codes.count(429) > 0, "throttled_key_gets_no_more_than_its_allowance_across_reloads",
               diag="%d answered 200 in %.1f s (allowance %d), %d refused" % (ok, elapsed, allowance,
                                                                           codes.count(429)))
        # A lower burst applies to what is left: the bucket is not refilled.
        time.sleep(0.2)
        tap.ok(rewrite_and_reload(svc, config(stub, key_a={"rate_per_s": 0.2, "burst": 2})), "burst_change_reloaded")
        after = [execute(svc, KEY_A).status for _ in range(3)]
        tap.ok(after.count(200) <= 1, "changed_burst_applies_to_the_tokens_left_not_a_full_bucket", diag=after)
        tap.eq(execute(svc, KEY_B).status, 200, "other_key_unaffected_by_the_throttled_one")


def part_cap_survives_reloads(stub):
    # max_connections 4, cap 2: no slots to borrow (4 - 2 = 2 running in all), so the cap binds.
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 4000}}])
    cfg = config(stub, limits={"max_connections": 4, "key_max_concurrent": 2})
    with fixtures.serving(tap, cfg, "cap_reload_service_exits_0") as svc:
        threads, results = start_slow(svc, KEY_A, 2)
        tap.ok(fixtures.wait_in_flight(svc, 3), "two_slow_queries_in_flight")
        tap.ok(rewrite_and_reload(svc, cfg), "unchanged_config_reloaded")
        r = execute(svc, KEY_A)
        tap.eq(r.status, 429, "key_at_its_cap_cannot_open_more_after_a_reload")
        tap.ok(rewrite_and_reload(svc, cfg), "unchanged_config_reloaded_twice")
        tap.eq(execute(svc, KEY_A).status, 429, "key_at_its_cap_cannot_open_more_after_two_reloads")
        for t in threads:
            t.join(60)
        tap.eq([status(r) for r in results], [200, 200], "requests_running_across_the_reloads_answer_200")
        tap.eq(execute(svc, KEY_A).status, 200, "slots_free_again_once_they_ended")
    stub.rules([])


def part_no_spurious_429_at_the_cap(stub):
    n, per_client = 4, 400
    # max_connections 8, cap 4: nothing to borrow at the cap (8 - 4 = 4), so a late-freed slot would show.
    cfg = config(stub, limits={"max_connections": 8, "key_max_concurrent": n})
    with fixtures.serving(tap, cfg, "sequential_service_exits_0") as svc:
        counts = [dict() for _ in range(n)]

        def client(i):
            for _ in range(per_client):
                try:
                    # a new connection per request: the next one may be served by another thread at once
                    r = t2s.http_request(svc.host, svc.port, "POST", "/execute",
                                         json_body={"database": "alpha", "sql": "SELECT 1"},
                                         headers=dict(bearer(KEY_A), Connection="close"), timeout=30)
                    code = r.status
                except (OSError, http.client.HTTPException) as e:
                    code = type(e).__name__
                counts[i][code] = counts[i].get(code, 0) + 1
        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        total = {}
        for c in counts:
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
        # A closed connection is counted by the listener a little longer than by the key: a rare 503
        # (max_connections 8, the served-connection cap) can come from that, never a 429 (the key's cap).
        # Rare: about 1 % of these requests on a normal build, 1.6 % once under ThreadSanitizer.
        tap.ok(total.get(429, 0) == 0 and set(total) <= {200, 503} and total.get(200, 0) >= 0.95 * n * per_client,
               "sequential_requests_at_exactly_the_cap_never_get_429", diag=repr(total))


def part_work_conserving_cap(stub):
    # max_connections 12, cap 2: a lone key may run up to 12 - 2 - 2 (headroom) = 8 at once.
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT, "delay_ms": 3000}}])
    cfg = config(stub, limits={"max_connections": 12, "key_max_concurrent": 2})
    with fixtures.serving(tap, cfg, "borrow_service_exits_0") as svc:
        threads, results = start_slow(svc, KEY_A, 10)
        tap.ok(fixtures.wait_in_flight(svc, 9), "lone_key_runs_past_its_cap_while_slots_are_idle")
        b = [execute(svc, KEY_B).status for _ in range(3)]
        tap.eq(b, [200] * 3, "other_key_still_answered_while_the_lone_key_borrows")
        for t in threads:
            t.join(60)
        codes = sorted(status(r) for r in results)
        tap.eq(codes, [200] * 8 + [429] * 2, "lone_key_borrows_up_to_one_share_short_of_every_slot")
    stub.rules([])


def main():
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": RIGHT}}])
        return fixtures.run_guarded(tap, "key_limits_tests", lambda: part_rate_survives_reloads(stub),
                                    lambda: part_cap_survives_reloads(stub),
                                    lambda: part_no_spurious_429_at_the_cap(stub),
                                    lambda: part_work_conserving_cap(stub))
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(main())
