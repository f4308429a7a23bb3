#!/usr/bin/env python3
"""test_explanation.py - every answer carries `explanation`, its final SQL in
plain English written from the parse tree (pipeline/sql/sql_explain.h), against
the real binary, SQLite and PostgreSQL databases this test writes, and the model
stub (tests/stub/model_stub.py).

On each engine:
  - a model's answer to /query and to /generate carries the explanation of its
    SQL (the words the golden file gives such a statement: the table, the filter
    and its value, the ordering and the top N);
  - the stream's final "result" event carries the same explanation;
  - an answer served from the answer cache carries it too;
  - without a model: the built-in generator's answer and a stored example's
    answer (its value substituted) carry theirs.
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-explanation-")
QUIET = {"level": "warn", "access": False}
DB = "music"

SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
"""
ROWS = {"singer": [(1, "Joe Sharp", "Netherlands", 52), (2, "Timbaland", "United States", 32),
                   (3, "Justin Brown", "France", 29), (4, "Rose White", "France", 41)]}
PG_SETUP = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
"""
MODEL_SQL = "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC LIMIT 2"
MODEL_WORDS = ("Lists name from singer where country is 'France', sorted by age in descending order, "
               "keeping the top 2.")


def config(stub, url, cache_ttl_s=0):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": DB, "url": url}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           "generate": {"cache_ttl_s": cache_ttl_s, "max_rounds": 0}, "auth": {"allow_anonymous_writes": True},
           "log": QUIET}
    if stub:
        cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}}
    return cfg


def wait_values(svc):
    return fixtures.wait_until(lambda: (svc.request("POST", "/evidence", json={"database": DB, "question": "probe"})
                                        .json or {}).get("value_index") == "ready", timeout=120)


def ask(svc, question, path="/query"):
    return svc.request("POST", path, json={"database": DB, "question": question}, timeout=60)


def result_event(text):
    """The data of the stream's last "result" event, or None."""
    found = None
    for raw in text.replace("\r\n", "\n").split("\n\n"):
        lines = raw.split("\n")
        if "event: result" in lines:
            data = "\n".join(line[len("data:"):].lstrip() for line in lines if line.startswith("data:"))
            found = json.loads(data)
    return found


def part_model(stub, url, engine):
    stub.rules([], default_content="```sql\n%s\n```" % MODEL_SQL)
    question = "Which two oldest singers are from France?"
    with fixtures.serving(tap, config(stub, url), engine + "_model_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_value_index_ready")
        for path in ("/query", "/generate"):
            r = ask(svc, question, path)
            j = r.json or {}
            tap.ok(r.status == 200 and j.get("generator") == "model" and j.get("sql") == MODEL_SQL and
                   j.get("explanation") == MODEL_WORDS,
                   engine + "_model_answer_of_%s_carries_its_explanation" % path.strip("/"),
                   diag=repr((r.status, j.get("sql"), j.get("explanation"))))
        r = svc.request("POST", "/v1/query/stream", json={"database": DB, "question": question}, timeout=60)
        final = result_event(r.text or "") or {}
        tap.ok(r.status == 200 and final.get("explanation") == MODEL_WORDS,
               engine + "_stream_final_event_carries_the_explanation", diag=repr((r.status, (r.text or "")[-600:])))


def part_cached(stub, url, engine):
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer WHERE age > 40\n```")
    with fixtures.serving(tap, config(stub, url, cache_ttl_s=300), engine + "_cache_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_cache_value_index_ready")
        first = ask(svc, "How many singers are older than 40?").json or {}
        again = ask(svc, "How many singers are older than 40?").json or {}
        want = "Counts the rows in singer where age is greater than 40."
        tap.ok(first.get("cached") is False and first.get("explanation") == want,
               engine + "_fresh_answer_carries_the_explanation", diag=repr(first.get("explanation")))
        tap.ok(again.get("cached") is True and again.get("explanation") == want,
               engine + "_cached_answer_carries_the_explanation",
               diag=repr((again.get("cached"), again.get("explanation"))))


def part_no_model(url, engine):
    with fixtures.serving(tap, config(None, url), engine + "_no_model_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_no_model_value_index_ready")
        r = ask(svc, "How many singers are there?")
        j = r.json or {}
        tap.ok(r.status == 200 and j.get("generator") == "builtin" and
               j.get("explanation") == "Counts the rows in singer.",
               engine + "_builtin_answer_carries_its_explanation",
               diag=repr((r.status, j.get("sql"), j.get("explanation"), r.text[:300])))
        store = svc.request("POST", "/databases/%s/examples" % DB,
                            json={"question": "Which singers are from France?",
                                  "sql": "SELECT name FROM singer WHERE country = 'France'"})
        tap.eq(store.status, 201, engine + "_example_stored")
        r = ask(svc, "Which singers are from Netherlands?")
        j = r.json or {}
        tap.ok(r.status == 200 and j.get("generator") == "example" and
               j.get("explanation") == "Lists name from singer where country is 'Netherlands'.",
               engine + "_stored_example_answer_carries_its_explanation",
               diag=repr((r.status, j.get("generator"), j.get("sql"), j.get("explanation"))))


def main():
    stub = fixtures.ModelStub()
    pg = fixtures.PgDatabases(tap)
    try:
        db = fixtures.write_sqlite(os.path.join(TMP, "music.sqlite"), SCHEMA, ROWS)
        engines = [("sqlite", "sqlite://" + db)]
        pg_url = pg.create("t2s_explanation_music", PG_SETUP)
        if pg_url:
            engines.append(("postgres", pg_url))
        else:
            tap.skip("postgres_explanation", "PostgreSQL is not available")
        for engine, url in engines:
            for part in (lambda: part_model(stub, url, engine), lambda: part_cached(stub, url, engine),
                         lambda: part_no_model(url, engine)):
                try:
                    part()
                except Exception as e:  # a part that crashes is a failure, the others still run
                    tap.ok(False, engine + "_part_ran_without_exception", diag=repr(e))
    finally:
        pg.drop_all()
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "explanation_tests", main))
