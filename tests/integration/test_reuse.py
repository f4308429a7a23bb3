#!/usr/bin/env python3
"""test_reuse.py - stored examples answering their paraphrases (issue 17,
item 2), against the real binary, SQLite and PostgreSQL databases this test
writes, and the model stub (tests/stub/model_stub.py), which counts its calls.

On each engine:
  - an example stored, a paraphrase with another value asked: the example's
    SQL with the value substituted answers, with the right rows,
    "generator": "example", the example's id and similarity, the
    substitution in the trace, and no model call;
  - a question that matches only loosely (below generate.reuse_min_similarity)
    goes to the model;
  - a literal the question gives no value for: no reuse, the model is called;
  - reused SQL failing validation (a "how many" answered by a list): the
    model is called;
  - a stored value holding a quote is substituted quoted; the data is never
    written;
  - without a generate model: the loose match answers from the example (its
    own, looser threshold), an unrelated question is 422
    builtin-refused.
Every service is stopped with SIGTERM and must exit 0.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-reuse-")
QUIET = {"level": "warn", "access": False}

SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
"""
ROWS = {"singer": [(1, "Joe Sharp", "Netherlands", 52), (2, "Timbaland", "United States", 32),
                   (3, "Justin Brown", "France", 29), (4, "Rose White", "France", 41),
                   (5, "Ama Kone", "Cote d'Ivoire", 38)]}
PG_SETUP = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41), (5, 'Ama Kone', 'Cote d''Ivoire', 38);
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
"""
COUNT_FRANCE = ("How many singers are from France?", "SELECT count(*) FROM singer WHERE country = 'France'")


def config(stub, url):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": "music", "url": url}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           "generate": {"cache_ttl_s": 0, "max_rounds": 0}, "auth": {"allow_anonymous_writes": True},
           "log": QUIET}
    if stub:
        cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}}
    return cfg


def wait_values(svc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = svc.request("POST", "/evidence", json={"database": "music", "question": "probe"})
        if r.status == 200 and r.json.get("value_index") == "ready":
            return True
        time.sleep(0.05)
    return False


def store(svc, question, sql):
    r = svc.request("POST", "/databases/music/examples", json={"question": question, "sql": sql})
    return (r.json or {}).get("id") if r.status == 201 else None


def ask(svc, question):
    return svc.request("POST", "/query", json={"database": "music", "question": question}, timeout=60)


def calls(stub):
    return len(stub.requests())


def part_with_model(stub, url, engine):
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
    with fixtures.serving(tap, config(stub, url), engine + "_model_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_value_index_ready")
        ex = store(svc, *COUNT_FRANCE)
        tap.ok(ex is not None, engine + "_example_stored")
        r = ask(svc, "how many singers are from Netherlands")
        j = r.json or {}
        reuse = (j.get("trace") or {}).get("reuse") or []
        tap.ok(r.status == 200 and j.get("generator") == "example" and j.get("rows") == [[1]] and
               "'Netherlands'" in (j.get("sql") or "") and (j.get("example") or {}).get("id") == ex and
               calls(stub) == 0,
               engine + "_paraphrase_with_another_value_answered_from_the_example_without_a_model_call",
               diag=repr((r.status, j.get("sql"), j.get("rows"), reuse, calls(stub))))
        subs = reuse[0].get("substitutions") if reuse else None
        tap.ok(subs == [{"literal": "France", "value": "Netherlands", "column": "singer.country"}],
               engine + "_trace_shows_the_substitution", diag=repr(reuse))
        tap.ok(j.get("confidence") == (j.get("example") or {}).get("similarity") and j.get("confidence") >= 0.97,
               engine + "_confidence_is_the_similarity", diag=repr(j.get("confidence")))

        stub.rules([], default_content="```sql\nSELECT count(*) FROM singer WHERE country = 'Netherlands'\n```")
        r = ask(svc, "How many singers are from the Netherlands?")
        j = r.json or {}
        tap.ok(r.status == 200 and j.get("generator") == "model" and calls(stub) == 1,
               engine + "_a_loose_match_goes_to_the_model",
               diag=repr((r.status, j.get("generator"), (j.get("trace") or {}).get("reuse"), calls(stub))))

        stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
        r = ask(svc, "How many singers are from Atlantis?")
        j = r.json or {}
        reuse = (j.get("trace") or {}).get("reuse") or []
        tap.ok(r.status == 200 and j.get("generator") == "model" and calls(stub) == 1 and
               any("refused" in t for t in reuse),
               engine + "_a_literal_without_a_value_is_not_reused", diag=repr((r.status, reuse, calls(stub))))

        r = ask(svc, "How many singers are from Cote d'Ivoire")
        j = r.json or {}
        tap.ok(r.status == 200 and j.get("generator") == "example" and j.get("rows") == [[1]] and
               "'Cote d''Ivoire'" in (j.get("sql") or ""),
               engine + "_a_value_with_a_quote_is_substituted_quoted", diag=repr((r.status, j.get("sql"))))


def part_failing_validation(stub, url, engine):
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```")
    with fixtures.serving(tap, config(stub, url), engine + "_validation_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_validation_value_index_ready")
        # A bad example: "how many" answered by a list (count_answered_by_one_row fails for two rows).
        store(svc, "How many singers are from Netherlands?", "SELECT name FROM singer WHERE country = 'Netherlands'")
        r = ask(svc, "How many singers are from France?")
        j = r.json or {}
        reuse = (j.get("trace") or {}).get("reuse") or []
        tap.ok(r.status == 200 and j.get("generator") == "model" and j.get("rows") == [[2]] and calls(stub) == 1 and
               any(t.get("refused") == "its SQL failed validation" for t in reuse),
               engine + "_reused_sql_failing_validation_goes_to_the_model",
               diag=repr((r.status, j.get("rows"), reuse, calls(stub))))


def part_no_model(url, engine):
    with fixtures.serving(tap, config(None, url), engine + "_no_model_service_exits_0") as svc:
        tap.ok(wait_values(svc), engine + "_no_model_value_index_ready")
        store(svc, *COUNT_FRANCE)
        r = ask(svc, "How many singers are from the Netherlands?")
        j = r.json or {}
        tap.ok(r.status == 200 and j.get("generator") == "example" and j.get("rows") == [[1]],
               engine + "_without_a_model_a_looser_match_answers_from_the_example",
               diag=repr((r.status, r.text[:400])))
        r = ask(svc, "What is the ratio of singers from France to singers from Spain?")
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused") and "no stored example" in r.text,
               engine + "_without_a_model_an_unmatched_question_is_422", diag=r.text[:300])


def main():
    stub = fixtures.ModelStub()
    pg = fixtures.PgDatabases(tap)
    try:
        db = fixtures.write_sqlite(os.path.join(TMP, "music.sqlite"), SCHEMA, ROWS)
        before = t2s.sqlite_checksum(db)
        engines = [("sqlite", "sqlite://" + db)]
        pg_url = pg.create("t2s_reuse_music", PG_SETUP)
        if pg_url:
            engines.append(("postgres", pg_url))
        else:
            tap.skip("postgres_reuse", "PostgreSQL is not available")
        for engine, url in engines:
            for part in (lambda: part_with_model(stub, url, engine), lambda: part_failing_validation(stub, url, engine),
                         lambda: part_no_model(url, engine)):
                try:
                    part()
                except Exception as e:  # a part that crashes is a failure, the others still run
                    tap.ok(False, engine + "_part_ran_without_exception", diag=repr(e))
        tap.eq(t2s.sqlite_checksum(db), before, "sqlite_data_never_written")
        if pg_url:
            tap.eq(t2s.psql("SELECT count(*), sum(age) FROM singer;", "t2s_reuse_music"), [["5", "192"]],
                   "postgres_data_never_written")
    finally:
        pg.drop_all()
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "reuse_tests", main))
