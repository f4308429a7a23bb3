#!/usr/bin/env python3
"""test_answer_cache.py - answer-cache entries are authenticated: a value
written into Redis by anyone without the service's secret is a miss, never an
answer (TAP; issue 19, hole 6). Against the real binary, a Redis server of
its own, SQLite and the model stub.

Two services A and B share one Redis and one secret (cache.secret_env): A
answers a question (the model is asked, the answer stored), the test replaces
the stored value under that key, and B is asked the same question. B serves
A's genuine entry from Redis without asking the model; every forged entry is
a miss (B asks the model, answers 200 with cached false) counted in
text2sqld_answer_cache_rejected_total{reason}:

  - an overflowing time and `{}` (signed overflow before: UBSan in the
    sanitizer build), a far-future time with rows `[1,2,3]` (served verbatim
    and never expired before), both in the old unauthenticated layout;
  - the new layout with a wrong MAC, and a genuine entry moved to another
    question's key (the MAC covers the key);
  - entries MAC'd with the secret itself (as one holding it could): a time
    far in the future, a time of 25 digits, a body that is not an answer.
    A correctly MAC'd answer is served (the check is the MAC, not the test).

A third service C without cache.secret_env (a random per-process secret)
never serves A's entries: replicas share answers only through a shared secret.
"""

import hashlib
import hmac
import json
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-answer-cache-")
DB = "concert"
DB_PATH = os.path.join(TMP, "concert.sqlite")
SECRET_ENV = "T2S_TEST_ANSWER_CACHE_SECRET"
SECRET = "a test secret of more than thirty-two characters"
PREFIX = b"t2s:answer:"


def rejected(svc, reason):
    m = svc.request("GET", "/metrics").text
    mm = re.search(r'^text2sqld_answer_cache_rejected_total\{reason="%s"\} (\S+)' % reason, m, re.M)
    return float(mm.group(1)) if mm else 0.0


def sign(key, rest):
    """The value the service would store under the Redis key for rest (b"<time>\\n<body>"): the MAC
    covers the answer's key (without the Redis prefix), a NUL and rest, keyed by SHA-256 of the secret."""
    key = key[len(PREFIX):]
    mac = hmac.new(hashlib.sha256(SECRET.encode()).digest(), key + b"\0" + rest, hashlib.sha256).hexdigest()
    return mac.encode() + b"\n" + rest


class Cluster:
    def __init__(self, redis, stub, a, b):
        self.redis, self.stub, self.a, self.b = redis, stub, a, b
        self.n = 0

    def answer_keys(self):
        return set(self.redis.command("KEYS", PREFIX + b"*"))

    def stored_by_a(self):
        """A fresh question answered by A; returns (question, its Redis key)."""
        self.n += 1
        question = "How many singers are there, take %d?" % self.n
        before = self.answer_keys()
        r = self.a.request("POST", "/generate", json={"database": DB, "question": question}, timeout=60)
        new = self.answer_keys() - before
        if r.status != 200 or len(new) != 1:
            raise RuntimeError("A stored no single answer: %d %s %r" % (r.status, r.text[:200], new))
        return question, new.pop()

    def ask(self, svc, question):
        """(response, how many model calls it made)."""
        asked = len(self.stub.requests())
        r = svc.request("POST", "/generate", json={"database": DB, "question": question}, timeout=60)
        return r, len(self.stub.requests()) - asked


def check_forged(c, name, forge, reason):
    question, key = c.stored_by_a()
    genuine = c.redis.command("GET", key)
    c.redis.command("SET", key, forge(key, genuine))
    before = rejected(c.b, reason) if reason else 0
    r, calls = c.ask(c.b, question)
    ok = r.status == 200 and r.json.get("cached") is False and calls >= 1
    tap.ok(ok, "forged_entry_%s_is_a_miss" % name, diag="%d calls=%d %s" % (r.status, calls, r.text[:300]))
    if reason:
        after = rejected(c.b, reason)
        tap.ok(after > before, "forged_entry_%s_counted_as_%s" % (name, reason), diag="%r -> %r" % (before, after))


def check(c):
    question, _ = c.stored_by_a()
    r, calls = c.ask(c.b, question)
    tap.ok(r.status == 200 and r.json.get("cached") is True and calls == 0,
           "genuine_entry_of_a_replica_with_the_same_secret_is_served",
           diag="%d calls=%d %s" % (r.status, calls, r.text[:300]))

    now = int(time.time())
    check_forged(c, "overflowing_time", lambda k, g: b"-99999999999999999999\n{}", "malformed")
    check_forged(c, "far_future_rows", lambda k, g: b"9999999999\n[1,2,3]", "malformed")
    check_forged(c, "wrong_mac", lambda k, g: b"0" * 64 + g[64:], "mac")
    other_q, other_key = c.stored_by_a()
    moved = c.redis.command("GET", other_key)
    check_forged(c, "moved_from_another_key", lambda k, g: moved, "mac")
    check_forged(c, "signed_far_future_time", lambda k, g: sign(k, b"%d\n" % (now + 86400) + g.split(b"\n", 2)[2]),
                 "time")
    check_forged(c, "signed_25_digit_time", lambda k, g: sign(k, b"9" * 25 + b"\n" + g.split(b"\n", 2)[2]),
                 "malformed")
    check_forged(c, "signed_rows_not_an_answer", lambda k, g: sign(k, b"%d\n[1,2,3]" % now), "shape")
    check_forged(c, "signed_negative_time", lambda k, g: sign(k, b"-5\n" + g.split(b"\n", 2)[2]), "malformed")

    # The test's MAC is the service's: an answer signed with the secret is served.
    question, key = c.stored_by_a()
    body = json.loads(c.redis.command("GET", key).split(b"\n", 2)[2])
    body["sql"] = "SELECT 42"
    c.redis.command("SET", key, sign(key, b"%d\n" % now + json.dumps(body).encode()))
    r, calls = c.ask(c.b, question)
    tap.ok(r.status == 200 and r.json.get("sql") == "SELECT 42" and calls == 0,
           "entry_signed_with_the_shared_secret_is_served", diag="%d calls=%d %s" % (r.status, calls, r.text[:300]))


def main():
    if not shutil.which("redis-server"):
        tap.skip("answer_cache", "redis-server is not installed")
        return
    fixtures.write_sqlite(DB_PATH, fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS)
    stub = fixtures.ModelStub()
    redis = fixtures.RedisServer(TMP, t2s.free_port())
    services = []

    def cfg(secret_env):
        c = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
             "databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
             "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % len(services))},
             "redis": {"url": "redis://127.0.0.1:%d/0" % redis.port},
             "generate": {"cache_ttl_s": 300, "max_rounds": 0},
             "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000}},
             "log": {"level": "error", "access": False}}
        if secret_env:
            c["cache"] = {"secret_env": SECRET_ENV}
        return c

    env = {SECRET_ENV: SECRET}
    try:
        stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": "SELECT count(*) FROM singer"}}])
        with fixtures.serving(tap, cfg(True), "replica_a_exits_0_on_sigterm", env=env) as a:
            services.append(a)
            with fixtures.serving(tap, cfg(True), "replica_b_exits_0_on_sigterm", env=env) as b:
                services.append(b)
                c = Cluster(redis, stub, a, b)
                check(c)
            with fixtures.serving(tap, cfg(False), "replica_c_exits_0_on_sigterm") as other:
                services.append(other)
                question, _ = c.stored_by_a()
                r, calls = c.ask(other, question)
                tap.ok(r.status == 200 and r.json.get("cached") is False and calls >= 1,
                       "replica_with_a_per_process_secret_does_not_serve_anothers_entry",
                       diag="%d calls=%d %s" % (r.status, calls, r.text[:300]))
    except Exception:
        fixtures.report_exception(tap, *services)
    finally:
        redis.kill()
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "answer_cache", main))
