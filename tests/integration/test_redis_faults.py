#!/usr/bin/env python3
"""test_redis_faults.py - Redis killed in the middle of a request and started
again, against the real binary, a Redis server of its own (never the suite's
shared one), SQLite and the model stub (TAP; issue 10, "Redis faults").

  - with Redis up, the embedding cache (column vectors of the remote embed
    model) and the answer cache write to it;
  - Redis killed (SIGKILL) while a /generate waits on its model: that request
    still answers 200 (the cache degrades to no cache), /readyz says Redis is
    down, text2sqld_embed_cache_redis_errors_total counts the failure;
  - while Redis is down, requests answer 200 without waiting on it each time
    (the cache's breaker), /link with the remote embed model included;
  - Redis started again on the same port: after the breaker's retry time the
    next answer is stored in Redis again and /readyz says it is up, without a
    restart of the service.
"""

import os
import re
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-redis-faults-")
DB = "concert"
DB_PATH = os.path.join(TMP, "concert.sqlite")
RETRY_AFTER_MS = 300
SLOW = 3.0 if fixtures.binary_is_sanitized() else 1.0
SLACK_S = 1.5 * SLOW
MODEL_DELAY_MS = 1000


def Redis(port):
    return fixtures.RedisServer(TMP, port)


def redis_errors(svc):
    """Redis failures the embedding and answer caches counted (each has its own series)."""
    m = svc.request("GET", "/metrics").text
    return sum(float(v) for v in re.findall(
        r"^text2sqld_(?:embed|answer)_cache_redis_errors_total(?:\{\})? (\S+)", m, re.M))


def redis_check(svc):
    r = svc.request("GET", "/readyz")
    return ((r.json or {}).get("checks") or {}).get("redis", {}).get("status")


def generate(svc, question):
    start = time.monotonic()
    r = svc.request("POST", "/generate", json={"database": DB, "question": question}, timeout=60)
    return r, time.monotonic() - start


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def check(svc, stub, redis):
    tap.ok(redis.dbsize() > 0, "embedding_cache_wrote_column_vectors_to_redis", diag="%d keys" % redis.dbsize())
    r, _ = generate(svc, "How many singers are there?")
    tap.eq(r.status, 200, "generate_with_redis_up_answers_200")
    keys_before = redis.dbsize()
    tap.eq(redis_check(svc), "up", "readyz_says_redis_up")

    # Killed mid-request: the model answers after MODEL_DELAY_MS; Redis dies meanwhile.
    stub.rules([{"match": {"path": "/v1/chat/completions"},
                 "respond": {"content": "SELECT count(*) FROM singer", "delay_ms": MODEL_DELAY_MS}}])
    got = {}
    th = threading.Thread(target=lambda: got.update(zip(("r", "took"), generate(svc, "How many singers in all?"))))
    errors_before = redis_errors(svc)
    th.start()
    time.sleep(MODEL_DELAY_MS / 3000.0)
    redis.kill()
    th.join(60)
    r = got.get("r")
    tap.ok(r is not None and r.status == 200, "request_during_which_redis_was_killed_answers_200",
           diag=r.text[:300] if r else "no answer")
    tap.ok(got.get("took", 99) < MODEL_DELAY_MS / 1000.0 + SLACK_S, "request_during_which_redis_was_killed_in_time",
           diag="%.2f s" % got.get("took", 99))
    tap.ok(redis_errors(svc) > errors_before, "redis_failure_counted_in_metrics",
           diag="%r -> %r" % (errors_before, redis_errors(svc)))
    tap.ok(wait_for(lambda: redis_check(svc) == "down", 10), "readyz_says_redis_down_after_the_kill",
           diag=repr(redis_check(svc)))

    # While it is down: answers without waiting on Redis.
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": "SELECT count(*) FROM singer"}}])
    for i in range(3):
        r, took = generate(svc, "How many singers, take %d?" % i)
        tap.ok(r.status == 200 and took < 1.0 * SLOW, "redis_down_generate_%d_answers_200_quickly" % i,
               diag="%d in %.2f s: %s" % (r.status, took, r.text[:200]))
    r = svc.request("POST", "/link", json={"database": DB, "question": "singers by country"})
    tap.ok(r.status == 200 and r.json.get("tables"), "redis_down_link_with_remote_embeddings_answers_200",
           diag=r.text[:300])

    # Started again: recovery without a restart of the service.
    redis = Redis(redis.port)
    tap.eq(redis.dbsize(), 0, "restarted_redis_is_empty")
    time.sleep(RETRY_AFTER_MS / 1000.0 + 0.1)
    stored = False
    deadline = time.monotonic() + 10 * SLOW
    i = 0
    while not stored and time.monotonic() < deadline:
        r, _ = generate(svc, "How many singers after the restart, take %d?" % i)
        i += 1
        stored = r.status == 200 and redis.dbsize() > 0
        if not stored:
            time.sleep(0.1)
    tap.ok(stored, "answers_are_stored_in_redis_again_after_its_restart",
           diag="keys %d (before the kill: %d)" % (redis.dbsize(), keys_before))
    tap.ok(wait_for(lambda: redis_check(svc) == "up", 10), "readyz_says_redis_up_after_its_restart",
           diag=repr(redis_check(svc)))
    return redis


def main():
    if not shutil.which("redis-server"):
        tap.skip("redis_faults", "redis-server is not installed")
        return
    fixtures.write_sqlite(DB_PATH, fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS)
    stub = fixtures.ModelStub()
    redis = Redis(t2s.free_port())
    svc = None
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
           "redis": {"url": "redis://127.0.0.1:%d/0" % redis.port, "timeout_ms": 300},
           "cache": {"redis_retry_after_ms": RETRY_AFTER_MS},
           "link": {"default_mode": "vector"},
           "generate": {"cache_ttl_s": 300, "max_rounds": 0},
           "models": {"embed": {"base_url": stub.base_url, "model": "emb", "timeout_ms": 2000},
                      "generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000}},
           "log": {"level": "error", "access": False}}
    try:
        with fixtures.serving(tap, cfg, "service_exits_0_on_sigterm", timeout=60) as svc:
            stub.rules([{"match": {"path": "/v1/chat/completions"},
                         "respond": {"content": "SELECT count(*) FROM singer"}}])
            wait_for(lambda: svc.request("POST", "/link", json={"database": DB, "question": "x"}).status == 200, 30)
            redis = check(svc, stub, redis)
    except Exception:
        fixtures.report_exception(tap, svc)
    finally:
        redis.kill()
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "redis_faults", main))
