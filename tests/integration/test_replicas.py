#!/usr/bin/env python3
"""test_replicas.py - replicas that agree, an answer cache never stale by
surprise, and a plain /query stopped when its client leaves (TAP; issue 20).
Against the real binary, SQLite user databases written here, a Redis server
of the test's own, PostgreSQL state stores (skipped cleanly without a
PostgreSQL server) and the model stub.

Two replicas A and B read one SQLite file and share one PostgreSQL state
store and one answer-cache secret:

  - with Redis (state.poll_interval_ms 0: no polling, so only the channel
    can tell B): a refresh on A after a schema change reaches B (B's
    /databases/{name} shows the new table within a deadline); B serves A's
    answer from the shared cache until an example added on A makes it a
    miss, and the example appears in B's next prompt; A then serves the
    answer B made after the example; a correct feedback on A makes B's
    answer a miss again; B counts what it received in
    text2sqld_invalidations_received_total{source="redis"}; after Redis is
    killed and started again B subscribes again (its log says so) and a
    refresh on A reaches it through the new server;
  - without Redis (state.poll_interval_ms 200): the same through the state
    store's versions (each replica caching in its own memory), counted
    under source="store".

One service alone (SQLite state store, in-process cache):

  - a repeated question is a hit: `cached: true`, X-Cache: hit, Age, its
    own timings (every stage 0), no model call; the first was X-Cache: miss;
  - Cache-Control: no-cache asks the model again (X-Cache: bypass) and the
    new answer is stored (the next plain request is a hit);
  - no stale answer after a change: a description override, an example and
    a row written into the SQLite file each make the next answer a miss
    (after the row, /query's rows hold it);
  - catalog.recheck_s 1: a table created in the file appears in
    /databases/{name} with no refresh call.

A plain (not streamed) /query whose client disconnects while the slow stub
answers the first statement (every statement wrong, five rounds allowed):
the log says the request stopped because the client went away, the
request's slot is released (text2sqld_http_requests_in_flight back to the
scrape alone), and the stub was asked at most twice (six without stopping).
On PostgreSQL, a client leaving while its statement runs (a count over two
billion rows, execution.timeout_ms 300 s) gets the statement cancelled: it
leaves pg_stat_activity's active statements within the deadline.
Deadlines below bound correctness (how long to wait for a change to
arrive), never speed.
"""

import json
import os
import re
import socket
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-replicas-")
DB = "concert"
CLEAN_ENV = {"TEXT2SQLD_LISTEN_HOST": None, "TEXT2SQLD_LISTEN_PORT": None, "TEXT2SQLD_REDIS_URL": None}
SECRET_ENV = "T2S_TEST_REPLICAS_SECRET"
ENV = dict(CLEAN_ENV, **{SECRET_ENV: "a shared answer-cache secret of the replicas test"})
ANSWER = "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"
QUESTION = "How many singers are from France?"
DEADLINE_S = 15


def fresh_db(name):
    return fixtures.write_sqlite(os.path.join(TMP, "%s-%d.sqlite" % (name, time.monotonic_ns())),
                                 fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS)


def write_file(path, sql):
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()


def config(stub, db_path, state_url, extra=None):
    cfg = {"databases": [{"name": DB, "url": "sqlite://" + db_path}],
           "state": {"url": state_url},
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "retries": 0, "timeout_ms": 20000}},
           "auth": {"allow_anonymous_writes": True},
           "log": {"level": "info", "access": False}}
    for section, values in (extra or {}).items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def metric(svc, name, labels):
    text = svc.request("GET", "/metrics").text
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else 0.0


def received(svc, source, kind):
    return metric(svc, "text2sqld_invalidations_received_total", 'source="%s",kind="%s"' % (source, kind))


def ask(svc, headers=None, endpoint="/generate"):
    return svc.request("POST", endpoint, json={"database": DB, "question": QUESTION}, headers=headers, timeout=60)


def until(fn, deadline_s=DEADLINE_S):
    """Calls fn until it returns something true or the deadline passes; its last value."""
    end = time.monotonic() + deadline_s
    while True:
        v = fn()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.1)


def tables(svc):
    r = svc.request("GET", "/databases/" + DB)
    return {t.get("name") for t in (r.json or {}).get("tables", [])}


def cached(r):
    return (r.json or {}).get("cached")


def replicas(stub, state_url, name, redis_url=None, poll_ms=0):
    db_path = fresh_db(name)
    extra = {"state": {"poll_interval_ms": poll_ms}, "catalog": {"recheck_s": 0}, "cache": {"secret_env": SECRET_ENV}}
    if redis_url:
        extra["redis"] = {"url": redis_url}
    a = t2s.Service(config(stub, db_path, state_url, extra), env=ENV).start()
    b = t2s.Service(config(stub, db_path, state_url, extra), env=ENV).start()
    return db_path, a, b


def agree(stub, state_url, name, redis_url=None, poll_ms=0, restart_redis=None):
    source = "redis" if redis_url else "store"
    db_path, a, b = replicas(stub, state_url, name, redis_url, poll_ms)
    try:
        stub.rules([], default_content=ANSWER)
        write_file(db_path, "CREATE TABLE venue (venue_id INTEGER PRIMARY KEY, city TEXT);")
        tap.ok("venue" not in tables(b), name + "b_does_not_see_the_new_table_before_a_refresh")
        r = a.request("POST", "/databases/%s/refresh" % DB)
        tap.eq(r.status, 200, name + "refresh_on_a")
        tap.ok(until(lambda: "venue" in tables(b)), name + "refresh_on_a_reaches_b", diag=b.log_tail(10))
        tap.ok(received(b, source, "refresh") >= 1, name + "b_counts_the_refresh_received")

        first = ask(a)
        tap.ok((first.status, cached(first)) == (200, False), name + "a_answers_and_stores", diag=first.text[:300])
        if not redis_url:
            ask(b)  # without Redis each replica caches in its own memory
        r = ask(b)
        tap.ok((r.status, cached(r)) == (200, True), name + "b_serves_a_cached_answer", diag=r.text[:300])
        example_q = "%s (stored on a: %s)" % (QUESTION, name)
        r = a.request("POST", "/databases/%s/examples" % DB,
                      json={"question": example_q, "sql": "SELECT count(*) FROM singer WHERE country = 'Netherlands'"})
        tap.ok(r.status == 201, name + "example_added_on_a", diag=r.text[:300])
        r = until(lambda: (lambda x: x if cached(x) is False else None)(ask(b)))
        tap.ok(r is not None and cached(r) is False, name + "example_on_a_makes_b_answer_afresh")
        prompt = json.dumps(stub.requests()[-1:])
        tap.ok(example_q in prompt, name + "the_example_is_in_b_s_prompt", diag=prompt[:1500])
        tap.ok(received(b, source, "state") >= 1, name + "b_counts_the_state_change_received")
        if redis_url:
            tap.eq(cached(ask(a)), True, name + "a_serves_b_s_answer_made_after_the_example")
        else:
            ask(b)
        tap.eq(cached(ask(b)), True, name + "b_caches_again_once_nothing_changes")
        r = a.request("POST", "/feedback", json={"database": DB, "question": "Singers from Peru (%s)?" % name,
                                                  "sql": "SELECT name FROM singer WHERE country = 'Peru'",
                                                  "correct": True})
        tap.ok(r.status == 201, name + "feedback_on_a", diag=r.text[:300])
        r = until(lambda: (lambda x: x if cached(x) is False else None)(ask(b)))
        tap.ok(r is not None and cached(r) is False, name + "feedback_on_a_makes_b_answer_afresh")
        if restart_redis:
            restart_redis()
            tap.ok(until(lambda: b.log_text().count("invalidation channel subscribed") >= 2),
                   name + "b_subscribes_again_after_redis_restarts", diag=b.log_tail(10))
            write_file(db_path, "CREATE TABLE tour (tour_id INTEGER PRIMARY KEY, name TEXT);")
            tap.eq(a.request("POST", "/databases/%s/refresh" % DB).status, 200, name + "refresh_on_a_after_restart")
            tap.ok(until(lambda: "tour" in tables(b)), name + "refresh_after_redis_restart_reaches_b",
                   diag=b.log_tail(10))
    finally:
        for svc, who in ((a, "a"), (b, "b")):
            fixtures.stop_ok(tap, svc, name + who + "_exits_0")
            svc.close()


def part_shared(stub):
    pg = fixtures.PgDatabases(tap)
    if not fixtures.have_pg():
        tap.skip("replicas_shared_state", "no PostgreSQL server (T2S_TEST_PG_HOST unset)")
        return
    port = t2s.free_port()
    servers = [fixtures.RedisServer(TMP, port)]

    def restart_redis():
        servers[-1].kill()
        servers.append(fixtures.RedisServer(TMP, port))

    try:
        pg.create("t2s_replicas_redis", setup_sql=None)
        pg.create("t2s_replicas_poll", setup_sql=None)
        agree(stub, t2s.pg_url("t2s_replicas_redis", user="postgres"), "redis_",
              redis_url="redis://127.0.0.1:%d/0" % port, restart_redis=restart_redis)
        agree(stub, t2s.pg_url("t2s_replicas_poll", user="postgres"), "poll_", poll_ms=200)
    finally:
        servers[-1].kill()
        pg.drop_all()


def part_single(stub):
    db_path = fresh_db("single")
    state = "sqlite://" + os.path.join(TMP, "single-state-%d.sqlite" % time.monotonic_ns())
    stub.rules([], default_content=ANSWER)
    cfg = config(stub, db_path, state, {"catalog": {"recheck_s": 1}})
    with fixtures.serving(tap, cfg, "single_exits_0", env=CLEAN_ENV) as svc:
        first = ask(svc, endpoint="/query")
        tap.eq((first.status, cached(first), first.headers.get("X-Cache")), (200, False, "miss"), "first_answer_is_a_miss")
        calls = len(stub.requests())
        hit = ask(svc, endpoint="/query")
        tap.eq((hit.status, cached(hit), hit.headers.get("X-Cache")), (200, True, "hit"), "repeat_is_a_hit")
        tap.ok((hit.headers.get("Age") or "").isdigit(), "a_hit_says_its_age", diag=repr(hit.headers.get("Age")))
        timings = ((hit.json or {}).get("trace") or {}).get("timings_ms") or {}
        tap.ok(timings and all(v == 0 for k, v in timings.items() if k != "total"),
               "a_hit_carries_its_own_timings", diag=repr(timings))
        tap.eq((hit.json or {}).get("elapsed_ms"), 0, "a_hit_ran_no_statement_now")
        tap.eq(len(stub.requests()), calls, "a_hit_asks_no_model")

        r = ask(svc, headers={"Cache-Control": "no-cache"}, endpoint="/query")
        tap.eq((cached(r), r.headers.get("X-Cache")), (False, "bypass"), "no_cache_bypasses")
        tap.eq(len(stub.requests()), calls + 1, "no_cache_asks_the_model")
        tap.eq(cached(ask(svc, endpoint="/query")), True, "no_cache_answer_is_stored")

        r = svc.request("PUT", "/databases/%s/descriptions" % DB,
                        json={"descriptions": [{"table": "singer", "text": "People who sing, by country."}]})
        tap.ok(r.status == 200, "override_stored", diag=r.text[:300])
        tap.eq(cached(ask(svc, endpoint="/query")), False, "override_change_is_a_miss")
        r = svc.request("POST", "/databases/%s/examples" % DB,
                        json={"question": "Singers from Peru?", "sql": "SELECT name FROM singer WHERE country = 'Peru'"})
        tap.ok(r.status == 201, "example_stored", diag=r.text[:300])
        tap.eq(cached(ask(svc, endpoint="/query")), False, "example_change_is_a_miss")
        tap.eq(cached(ask(svc, endpoint="/query")), True, "unchanged_again_is_a_hit")
        write_file(db_path, "INSERT INTO singer VALUES (5, 'Ana Blue', 'France', 23);")
        r = ask(svc, endpoint="/query")
        tap.eq((cached(r), (r.json or {}).get("rows")), (False, [[3]]), "data_change_is_a_miss_with_fresh_rows")

        write_file(db_path, "CREATE TABLE stage (stage_id INTEGER PRIMARY KEY, name TEXT);")
        tap.ok(until(lambda: "stage" in tables(svc)), "recheck_finds_a_new_table_without_refresh", diag=svc.log_tail(10))


def in_flight(svc):
    m = re.search(r"^text2sqld_http_requests_in_flight(?:\{\})? (\S+)", svc.request("GET", "/metrics").text, re.M)
    return float(m.group(1)) if m else -1


def send_query(svc, body):
    """A plain POST /query sent on a socket of its own, left unread (the caller closes it: a client leaving)."""
    data = json.dumps(body).encode()
    sock = socket.create_connection((svc.host, svc.port), timeout=30)
    sock.sendall(("POST /query HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                  "Content-Length: %d\r\n\r\n" % len(data)).encode() + data)
    return sock


def part_disconnect(stub):
    wrong = ["```sql\nSELECT count(*) FROM singer WHERE nation%d = 'France'\n```" % i for i in range(8)]
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"sequence": wrong, "delay_ms": 1500}}])
    cfg = config(stub, fresh_db("gone"), "sqlite://" + os.path.join(TMP, "gone-state.sqlite"),
                 {"generate": {"cache_ttl_s": 0}})
    with fixtures.serving(tap, cfg, "disconnect_exits_0", env=CLEAN_ENV) as svc:
        sock = send_query(svc, {"database": DB, "question": QUESTION, "options": {"max_rounds": 5}})
        tap.ok(until(lambda: len(stub.requests()) >= 1), "the_model_is_asked_before_the_client_leaves")
        sock.close()
        tap.ok(until(lambda: "client went away" in svc.log_text(), 30), "log_says_the_client_went_away",
               diag=svc.log_tail(10))
        tap.ok(until(lambda: in_flight(svc) == 1), "the_request_slot_is_released")
        calls = len(stub.requests())
        tap.ok(1 <= calls <= 2, "no_model_call_after_the_disconnect", diag="%d calls (6 without stopping)" % calls)


def active_statements(dbname):
    """The reader's statements running in dbname (the count runs as a FETCH from its cursor)."""
    rows = t2s.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s' AND state = 'active'"
                    " AND usename = 't2s_reader' AND query LIKE 'FETCH%%'" % dbname)
    return int(rows[0][0])


def part_disconnect_pg(stub):
    if not fixtures.have_pg():
        tap.skip("disconnect_cancels_the_pg_statement", "no PostgreSQL server (T2S_TEST_PG_HOST unset)")
        return
    pg = fixtures.PgDatabases(tap)
    name = "t2s_replicas_cancel"
    try:
        url = pg.create(name, setup_sql=fixtures.READER_CONNECT_SQL +
                        "CREATE TABLE singer (singer_id int PRIMARY KEY, name text, country text);"
                        "INSERT INTO singer VALUES (1, 'Ann', 'France');"
                        "GRANT SELECT ON singer TO t2s_reader;")
        stub.rules([], default_content="```sql\nSELECT count(*) FROM singer, generate_series(1, 2000000000) AS g\n```")
        cfg = config(stub, fresh_db("unused"), "sqlite://" + os.path.join(TMP, "cancel-state.sqlite"),
                     {"generate": {"cache_ttl_s": 0}, "execution": {"timeout_ms": 300000}})
        cfg["databases"] = [{"name": DB, "url": url}]
        with fixtures.serving(tap, cfg, "pg_disconnect_exits_0", env=CLEAN_ENV) as svc:
            sock = send_query(svc, {"database": DB, "question": QUESTION})
            tap.ok(until(lambda: active_statements(name) >= 1), "the_statement_runs_before_the_client_leaves",
                   diag=svc.log_tail(10))
            sock.close()
            tap.ok(until(lambda: active_statements(name) == 0, 30), "disconnect_cancels_the_pg_statement")
            tap.ok(until(lambda: in_flight(svc) == 1), "pg_request_slot_is_released")
            tap.ok(until(lambda: "client went away" in svc.log_text()), "pg_log_says_the_client_went_away")
    finally:
        pg.drop_all()


def main():
    stub = fixtures.ModelStub()
    try:
        for part in (part_single, part_disconnect, part_disconnect_pg, part_shared):
            try:
                part(stub)
            except Exception:
                fixtures.report_exception(tap)
    finally:
        stub.close()
    return tap.done()


if __name__ == "__main__":
    if not t2s.server_binary():
        tap.skip("replicas", "T2S_BIN is not set")
        sys.exit(tap.done())
    sys.exit(main())
