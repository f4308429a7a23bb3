#!/usr/bin/env python3
"""test_concurrency.py - every endpoint under concurrent load from a cold
start (TAP).

One service with everything that holds shared state: a SQLite fixture
database and (with T2S_TEST_PG_*) the same data in PostgreSQL, Redis (with
T2S_TEST_REDIS_URL), a SQLite state store, and a model server
(tests/stub/model_stub.py) for the embed, link, describe and evidence
stages. CLIENTS clients then:

  - cold start: for each kind of request in turn (execute, a refused
    statement, link in each mode, evidence, describe, examples, description
    overrides, refresh, databases, readyz, metrics), all clients wait at a
    barrier and send their first request of that kind at the same moment,
    so lazily built state (metrics, parsers, indexes, pools, caches) is
    built by several threads at once;
  - mixed: each client sends every kind ROUNDS more times in its own
    shuffled order, refreshes racing the requests that read the schema.

Every answer must be the one the request gets alone (status per kind);
concurrent counts agree with the data; every example added concurrently is
listed; the request counter counts every /execute; the service exits 0 on
SIGTERM. On the ThreadSanitizer build (scripts/test.sh's build-tsan) a data
race in any of this fails the test through the Tap's sanitizer check
(tests/lib/t2s.py).
"""

import os
import random
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
CLIENTS = 8
ROUNDS = 2
PGDB = "t2s_concurrency_%d" % os.getpid()
SINGERS = [(1, "Joe Sharp", "France", 52), (2, "Rose White", "France", 41), (3, "Justin Brown", "United States", 29),
           (4, "Sinead O'Brien", "Ireland", 33), (5, "Tribal King", "France", 68), (6, "John Nizinik", "Netherlands", 43)]
SQLITE_DDL = "CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Age INTEGER);"
PG_DDL = ('CREATE TABLE singer ("Singer_ID" integer PRIMARY KEY, "Name" text, "Country" text, "Age" integer);'
          "GRANT CONNECT ON DATABASE {DB} TO t2s_reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;")
QUESTION = "How many singers from France are older than 40?"


def request_kinds(db, client):
    """(name, method, path, body, expected status) of every kind of request, for one client."""
    return [
        ("execute", "POST", "/execute", {"database": db, "sql": "SELECT count(*) FROM singer"}, 200),
        ("execute_refused", "POST", "/execute", {"database": db, "sql": "DROP TABLE singer"}, 403),
        ("link", "POST", "/link", {"database": db, "question": QUESTION,
                                   "mode": ("vector", "llm", "hybrid")[client % 3]}, 200),
        ("evidence", "POST", "/evidence", {"database": db, "question": QUESTION}, 200),
        ("describe", "POST", "/describe", {"database": db}, 200),
        ("examples_add", "POST", "/databases/%s/examples" % db,
         {"question": "how many singers, client %d" % client, "sql": "SELECT count(*) FROM singer"}, 201),
        ("examples_list", "GET", "/databases/%s/examples" % db, None, 200),
        ("descriptions_put", "PUT", "/databases/%s/descriptions" % db,
         {"descriptions": [{"table": "singer", "column": "Country", "text": "Country, client %d" % client}]}, 200),
        ("descriptions_get", "GET", "/databases/%s/descriptions" % db, None, 200),
        ("refresh", "POST", "/databases/%s/refresh" % db, None, 200),
        ("database", "GET", "/databases/%s" % db, None, 200),
        ("databases", "GET", "/databases", None, 200),
        ("readyz", "GET", "/readyz", None, 200),
        ("metrics", "GET", "/metrics", None, 200),
    ]


class Load:
    """The clients' shared record of what came back."""

    def __init__(self, svc, dbs):
        self.svc = svc
        self.dbs = dbs
        self.lock = threading.Lock()
        self.wrong = {"cold": [], "mixed": []}  # (kind, db, status, body head)
        self.counts = []                         # results of SELECT count(*)
        self.examples_added = {db: 0 for db in dbs}
        self.executes_sent = 0

    def send(self, phase, db, kind):
        name, method, path, body, want = kind
        try:
            r = self.svc.request(method, path, json=body, timeout=120)
            status, text, js = r.status, r.text, r.json
        except OSError as e:
            status, text, js = None, str(e), None
        with self.lock:
            if path == "/execute":
                self.executes_sent += 1
            if status != want:
                self.wrong[phase].append((name, db, status, text[:200]))
                return
            if name == "execute":
                self.counts.append(js.get("rows"))
            if name == "examples_add":
                self.examples_added[db] += 1


def client(load, i, barrier):
    db = load.dbs[i % len(load.dbs)]
    kinds = request_kinds(db, i)
    for kind in kinds:
        barrier.wait()
        load.send("cold", db, kind)
    rnd = random.Random(i)
    for _ in range(ROUNDS):
        mixed = list(kinds)
        rnd.shuffle(mixed)
        for kind in mixed:
            load.send("mixed", db, kind)


def wrong_answers(wrong):
    """A diagnostic for (kind, db, status, body) answers that differ from the expected ones."""
    return "%d wrong answers; the first ones:\n%s" % (len(wrong), "\n".join(repr(w) for w in wrong[:8]))


def execute_requests_counted(svc):
    """Sum of text2sqld_http_requests_total for POST /execute over every code."""
    text = svc.request("GET", "/metrics").text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("text2sqld_http_requests_total{") and 'route="/execute"' in line \
                and 'method="POST"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def check_load(tmp, stub, pg):
    fixture = fixtures.write_sqlite(os.path.join(tmp, "fixture.sqlite"), SQLITE_DDL, {"singer": SINGERS})
    dbs = [{"name": "lite", "url": "sqlite://" + fixture}]
    pg_url = pg.create(PGDB, PG_DDL + "INSERT INTO singer VALUES %s;" % ", ".join(
        "(%d, '%s', '%s', %d)" % (a, b.replace("'", "''"), c, d) for a, b, c, d in SINGERS))
    if pg_url:
        dbs.append({"name": "pg", "url": pg_url})
    else:
        tap.diag("PostgreSQL part skipped: T2S_TEST_PG_PORT not set")

    def model(name):
        return {"base_url": stub.base_url, "model": name, "timeout_ms": 20000}
    cfg = {"databases": dbs, "log": {"level": "warn", "access": False},
           "state": {"url": "sqlite://" + os.path.join(tmp, "state.sqlite")}, "auth": {"allow_anonymous_writes": True},
           "models": {"embed": model("embed-model"), "link": model("link-model"),
                      "describe": model("describe-model"), "evidence": model("evidence-model")}}
    if os.environ.get("T2S_TEST_REDIS_URL"):
        cfg["redis"] = {"url": os.environ["T2S_TEST_REDIS_URL"]}
    else:
        tap.diag("Redis part skipped: T2S_TEST_REDIS_URL not set")

    with fixtures.serving(tap, cfg, "service_exits_0_after_concurrent_load", timeout=120) as svc:
        load = Load(svc, [d["name"] for d in dbs])
        barrier = threading.Barrier(CLIENTS)
        threads = [threading.Thread(target=client, args=(load, i, barrier)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        tap.ok(not load.wrong["cold"], "first_requests_of_every_kind_sent_at_once_answer_as_alone",
               diag=lambda: wrong_answers(load.wrong["cold"]))
        tap.ok(not load.wrong["mixed"], "mixed_concurrent_requests_answer_as_alone",
               diag=lambda: wrong_answers(load.wrong["mixed"]))
        tap.ok(load.counts and all(c == [[len(SINGERS)]] for c in load.counts),
               "concurrent_counts_agree_with_the_data", diag=lambda: repr(load.counts[:10]))
        listed = {}
        for db in load.dbs:
            r = svc.request("GET", "/databases/%s/examples" % db)
            listed[db] = (r.json or {}).get("total") if r.status == 200 else r.status
        tap.eq(listed, load.examples_added, "every_example_added_concurrently_is_listed")
        r = svc.request("GET", "/databases/lite/descriptions")
        texts = [o.get("text") for o in (r.json or {}).get("overrides", [])
                 if o.get("table") == "singer" and o.get("column") == "Country"]
        tap.ok(len(texts) == 1 and re.fullmatch(r"Country, client \d+", texts[0] or ""),
               "overrides_put_concurrently_leave_one_whole_override", diag=lambda: repr(r.json))
        deadline = time.monotonic() + 10  # the counter moves when a response is complete
        counted = execute_requests_counted(svc)
        while counted != load.executes_sent and time.monotonic() < deadline:
            time.sleep(0.05)
            counted = execute_requests_counted(svc)
        tap.eq(counted, float(load.executes_sent), "request_counter_counts_every_concurrent_execute")


def main():
    tmp = fixtures.scratch_dir("t2s-concurrency-")
    stub = None
    pg = fixtures.PgDatabases(tap)
    try:
        stub = fixtures.ModelStub()
        check_load(tmp, stub, pg)
    except Exception:
        fixtures.report_exception(tap)
    finally:
        if stub:
            stub.close()
        pg.drop_all()
    return tap.done()


if __name__ == "__main__":
    if not t2s.server_binary():
        tap.skip("concurrent_load", "T2S_BIN is not set")
        sys.exit(tap.done())
    sys.exit(main())
