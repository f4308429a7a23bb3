#!/usr/bin/env python3
"""test_corpus.py - the hostile SQL corpus (tests/corpus/hostile_sql.json, at
least 150 statements per engine) through POST /execute and through the
generate path (TAP; issue 10).

Each statement runs twice: as the `sql` of POST /execute, and as the answer of
the generate model (the stub) to POST /query with no correction round.  After
each run:
  - the answer is a problem (application/problem+json) with status 400, 403,
    404, 408, 413, 422, 503 or 504, within the time limit plus a margin;
  - the data checksum, taken through a separate admin connection
    (t2s.pg_checksum as `postgres`, t2s.sqlite_checksum read-only), is
    unchanged;
  - the next request on the same pooled connection (pool_size 1) sees the
    default session: same settings, no prepared statement, cursor, listener
    or advisory lock left, and a 100 kB value still builds;
and every problem body stays under PROBLEM_MAX_BYTES (statements of the
`oversized` kind are hundreds of KB: a problem quotes a 4 KiB excerpt, and
through the generate path a reply past max_tokens' bound is a 502);
and, outside sanitizers, the service's peak resident memory grows by less
than RSS_BUDGET_MB over the whole corpus.  The PostgreSQL database is
configured with schemas ["public"]: its schema `hidden`, which the reader
role may read, is outside it (the catalog family).  The MySQL family runs on
the MariaDB server of tests/lib/servers.sh (skipped without it), through a
SELECT-only account, its checksum by CHECKSUM TABLE as root, and no user lock
may be left held.  The tables family (issue 30) runs under a key
limited to the tables victim and big_view (a view reading big), through both paths: every statement
reads big and gets a 4xx problem without big's rows.  One TAP line per statement and
path; a failure names the statement.  PostgreSQL entries are skipped without
the test server.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, problem_type  # noqa: E402
from t2s import pg_url  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
PG_DB = "t2s_corpus_%d" % PID
MY_DB = "t2s_corpus_db"  # named in the corpus (a qualified stored function call)
MY_READER = "t2s_corpus_my_%d" % PID
MY_PASSWORD = "corpus-%d" % PID
TIMEOUT_MS = 400
MARGIN_S = 6.0           # time limit + this: answered "within its limit" (validation may run a statement twice)
RSS_BUDGET_MB = 200
CLEAR = (400, 403, 404, 408, 413, 422, 503, 504)
PROBLEM_MAX_BYTES = 16384  # a problem quotes at most an excerpt of a statement (issue 19)

SQLITE_SCHEMA = """
CREATE TABLE victim (k INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE big (i INTEGER, pad TEXT);
CREATE VIEW big_view AS SELECT * FROM big;
"""

PG_SETUP = """
CREATE TABLE victim (k int PRIMARY KEY, v text);
CREATE TABLE big (i int, pad text);
INSERT INTO victim VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(0, 1999) g;
CREATE SEQUENCE seq;
CREATE MATERIALIZED VIEW mv AS SELECT k FROM victim;
CREATE VIEW big_view AS SELECT * FROM big;
CREATE FUNCTION big_count() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM big';
CREATE SCHEMA hidden;
CREATE TABLE hidden.secret (s text);
INSERT INTO hidden.secret VALUES ('another schema');
GRANT USAGE ON SCHEMA hidden TO t2s_reader;
GRANT SELECT ON hidden.secret TO t2s_reader;
""" + fixtures.PG_HOSTILE_OBJECTS + """REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON victim, big, mv, big_view TO t2s_reader;
GRANT EXECUTE ON FUNCTION big_count() TO t2s_reader;
GRANT USAGE, SELECT ON SEQUENCE seq TO t2s_reader;
GRANT EXECUTE ON FUNCTION evil_definer(), row_hook(victim) TO t2s_reader;
GRANT EXECUTE ON PROCEDURE evil_proc() TO t2s_reader;
ANALYZE;
"""

# MariaDB: a fresh database per run (the corpus names it), victim and big, a sequence, a procedure and
# a function that delete (neither granted to the reader: the guard refuses the calls before the
# server would), and a SELECT-only account.
MY_SETUP = """
DROP DATABASE IF EXISTS `{db}`;
CREATE DATABASE `{db}`;
USE `{db}`;
CREATE TABLE victim (k INT PRIMARY KEY, v VARCHAR(100));
CREATE TABLE big (i INT, pad VARCHAR(200));
INSERT INTO victim VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO big SELECT seq, REPEAT('x', 100) FROM seq_0_to_1999;
CREATE VIEW big_view AS SELECT * FROM big;
CREATE SEQUENCE seq;
CREATE PROCEDURE evil_proc() DELETE FROM victim;
DELIMITER //
CREATE FUNCTION evil_fn() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM victim; RETURN 1; END//
DELIMITER ;
DROP USER IF EXISTS '{reader}'@'%';
CREATE USER '{reader}'@'%' IDENTIFIED BY '{pw}';
GRANT SELECT ON `{db}`.* TO '{reader}'@'%';
"""

PROBE = {
    "lite": "SELECT count(*), length(printf('%.*c', 100000, 'x')) FROM victim",
    "pg": "SELECT current_setting('search_path'), current_setting('statement_timeout'), "
          "current_setting('work_mem'), current_setting('role'), current_setting('transaction_read_only'), "
          "(SELECT count(*) FROM pg_prepared_statement()), (SELECT count(*) FROM pg_listening_channels()), "
          "(SELECT count(*) FROM pg_cursor()), current_user, count(*), length(repeat('x', 100000)) FROM victim",
    # the session's sql_mode still holds: || concatenates, a backslash is itself; no lock is held
    "my": "SELECT count(*), length(repeat('x', 100000)), 'a' || 'b', '\\', current_user(), database() FROM victim",
}
CORPUS_KEY = {"lite": "sqlite", "pg": "postgresql", "my": "mysql"}


def load_corpus():
    with open(os.path.join(ROOT, "tests", "corpus", "hostile_sql.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    for entries in (corpus["sqlite"], corpus["postgresql"], corpus["mysql"]):
        for e in entries:
            if "pad" in e:
                e["sql"] = e["sql"].replace("{PAD}", "x" * e["pad"])
    # The tables family runs only under a key limited to some tables (run_tables_family).
    for engine in ("sqlite", "postgresql"):
        corpus["tables_" + engine] = [e for e in corpus[engine] if e["kind"] == "tables"]
        corpus[engine] = [e for e in corpus[engine] if e["kind"] != "tables"]
    return corpus


def reader_advisory_locks(session):
    return int(session.psql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                        "WHERE l.locktype = 'advisory' AND a.usename = 't2s_reader';")[0][0])


class Engine:
    """One database of the corpus: how to take its checksum and its baseline."""

    def __init__(self, name, checksum, session=None):
        self.name = name
        self.checksum = checksum
        self.session = session  # the admin's session the checks use: t2s.PsqlSession, fixtures.MariadbSession
        self.before = checksum()
        self.baseline = None


def run_one(tap_name, eng, svc, send, sql, kind):
    start = time.monotonic()
    r = send(sql)
    took = time.monotonic() - start
    faults = []
    ctype = r.headers.get("Content-Type") or ""
    # A model reply past the bound its max_tokens sets is the model server's fault: 502.
    clear = CLEAR + ((502,) if kind == "oversized" else ())
    if r.status not in clear or not ctype.startswith("application/problem+json"):
        faults.append("answer %d %s" % (r.status, r.text[:160]))
    if len(r.body or b"") > PROBLEM_MAX_BYTES:
        faults.append("problem of %d bytes" % len(r.body))
    # Sanitizer builds run the same work several times slower: the same limit, a wider margin.
    margin = MARGIN_S * (3 if fixtures.under_sanitizer(svc.proc.pid) else 1)
    if took > TIMEOUT_MS / 1000.0 + margin:
        faults.append("took %.1f s" % took)
    if eng.checksum() != eng.before:
        faults.append("DATA CHANGED")
        eng.before = eng.checksum()
    probe = execute(svc, eng.name, PROBE[eng.name])
    state = probe.json["rows"] if probe.status == 200 else probe.text[:160]
    if state != eng.baseline:
        faults.append("session not default: %s" % (state,))
    if eng.name == "my" and eng.session.sql("SELECT IS_USED_LOCK('t2s')") != [[None]]:
        faults.append("user lock left")
    if eng.name == "pg" and reader_advisory_locks(eng.session):
        faults.append("advisory lock left")
        eng.session.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 't2s_reader';")
    tap.ok(not faults, tap_name, diag="%r: %s" % (sql[:100], "; ".join(faults)))
    return problem_type(r)


def run_corpus(svc, engines, corpus, path, send_for):
    for eng in engines:
        if eng.baseline is None:
            r = execute(svc, eng.name, PROBE[eng.name])
            if not tap.eq(r.status, 200, "%s_probe_answers_before_the_corpus" % eng.name):
                tap.diag(r.text[:300])
                continue
            eng.baseline = r.json["rows"]
        entries = corpus[CORPUS_KEY[eng.name]]
        kinds = {}
        for i, e in enumerate(entries):
            slug = run_one("%s_%s_%03d_%s_refused_cleanly" % (path, eng.name, i, e["kind"]), eng, svc,
                           send_for(eng.name), e["sql"], e["kind"])
            kinds[str(slug)] = kinds.get(str(slug), 0) + 1
        tap.diag("%s %s: %d statements, answers by problem type %s" % (path, eng.name, len(entries),
                                                                        json.dumps(kinds, sort_keys=True)))


TABLES_KEY = "t2s-corpus-tables-%d-key" % PID


def run_tables_family(base, engines, corpus, stub):
    """The tables family (issue 30): each statement reads big, which the key (tables victim and big_view)
    may not read; through /execute and as the generate model's answer to /query, each is a 400-class
    problem holding none of big's rows, and the data is unchanged."""
    import hashlib
    cfg = dict(base)
    dbs = [d["name"] for d in base["databases"]]
    cfg["auth"] = {"api_keys": [{"name": "victim-only", "key_sha256": hashlib.sha256(TABLES_KEY.encode()).hexdigest(),
                                 "databases": dbs, "tables": {db: ["victim", "big_view"] for db in dbs}}]}
    cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}}
    cfg["generate"] = {"cache_ttl_s": 0, "max_rounds": 0}
    headers = {"Authorization": "Bearer " + TABLES_KEY}
    with t2s.Service(cfg) as svc:
        for eng in engines:
            entries = corpus["tables_sqlite" if eng.name == "lite" else "tables_postgresql"]
            tap.ok(len(entries) >= 25, "%s_tables_family_holds_at_least_25_statements" % eng.name, diag=len(entries))
            r = svc.request("POST", "/execute", json={"database": eng.name, "sql": "SELECT count(*) FROM victim"},
                            headers=headers)
            tap.eq((r.status, (r.json or {}).get("rows")), (200, [[3]]), "%s_tables_key_reads_its_table" % eng.name)
            for i, e in enumerate(entries):
                for path in ("execute", "generate"):
                    if path == "execute":
                        r = svc.request("POST", "/execute", json={"database": eng.name, "sql": e["sql"]},
                                        headers=headers, timeout=60)
                    else:
                        stub.rules([], default_content="```sql\n%s\n```" % e["sql"])
                        r = svc.request("POST", "/query", headers=headers, timeout=60,
                                        json={"database": eng.name, "question": "Show every victim",
                                              "options": {"max_rounds": 0}})
                    ctype = r.headers.get("Content-Type") or ""
                    leaked = "xxxxxxxxxx" in r.text  # big's pad values
                    ok = 400 <= r.status < 500 and ctype.startswith("application/problem+json") and not leaked
                    tap.ok(ok, "tables_%s_%s_%03d_refused" % (path, eng.name, i),
                           diag="%r: %d %s" % (e["sql"][:100], r.status, r.text[:200]))
            tap.ok(eng.checksum() == eng.before, "%s_data_unchanged_by_the_tables_family" % eng.name)
        fixtures.stop_ok(tap, svc, "tables_service_exits_0_on_sigterm")


def check_rss(svc, before, label):
    pid = svc.proc.pid
    if before is None:
        tap.skip("%s_peak_memory_bounded" % label, "peak memory is not meaningful under a sanitizer")
        return
    grown = (fixtures.peak_rss_kb(pid) - before) / 1024.0
    tap.ok(grown < RSS_BUDGET_MB, "%s_peak_memory_grew_less_than_%d_mb" % (label, RSS_BUDGET_MB),
           diag="peak resident memory grew by %.0f MB" % grown)


def rss_start(svc):
    pid = svc.proc.pid
    if fixtures.under_sanitizer(pid) or fixtures.peak_rss_kb(pid) is None:
        return None
    return fixtures.peak_rss_kb(pid)


def main():
    corpus = load_corpus()
    tap.ok(all(len(corpus[k]) >= 150 for k in CORPUS_KEY.values()),
           "corpus_holds_at_least_150_statements_per_engine",
           diag="%d sqlite, %d postgresql, %d mysql" % (len(corpus["sqlite"]), len(corpus["postgresql"]),
                                                        len(corpus["mysql"])))
    services, sessions, stub = [], [], None
    pg = fixtures.PgDatabases(tap)
    try:
        tmp = fixtures.scratch_dir("t2s-corpus-")
        lite = fixtures.write_sqlite(os.path.join(tmp, "lite.sqlite"), SQLITE_SCHEMA, {
            "victim": [(1, "one"), (2, "two"), (3, "three")],
            "big": [(i, "x" * 100) for i in range(2000)]})
        engines = [Engine("lite", lambda: t2s.sqlite_checksum(lite))]
        dbs = [{"name": "lite", "url": "sqlite://" + lite, "pool_size": 1}]
        if pg.create(PG_DB, PG_SETUP):
            admin = t2s.PsqlSession(PG_DB)
            sessions.append(admin)
            engines.append(Engine("pg", lambda: t2s.pg_checksum(PG_DB, session=admin), admin))
            dbs.append({"name": "pg", "url": pg_url(PG_DB), "pool_size": 1, "schemas": ["public"]})
        else:
            tap.skip("postgresql_corpus", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        if fixtures.have_mariadb():
            fixtures.mariadb(MY_SETUP.format(db=MY_DB, reader=MY_READER, pw=MY_PASSWORD))
            my_admin = fixtures.MariadbSession()
            sessions.append(my_admin)
            engines.append(Engine("my", lambda: fixtures.mariadb_checksum(MY_DB, session=my_admin), my_admin))
            dbs.append({"name": "my", "url": fixtures.mariadb_url(MY_DB, MY_READER, MY_PASSWORD), "pool_size": 1})
        else:
            tap.skip("mysql_corpus", "no MariaDB (T2S_TEST_MARIADB_SOCKET unset)")
        base = {"databases": dbs, "execution": {"timeout_ms": TIMEOUT_MS, "lock_timeout_ms": 500},
                "state": {"url": "sqlite://" + os.path.join(tmp, "state.sqlite")},
                "log": {"level": "error", "access": False}}

        svc = t2s.Service(dict(base))
        services.append(svc)
        svc.start(timeout=60)
        before = rss_start(svc)
        run_corpus(svc, engines, corpus, "execute",
                   lambda db: (lambda sql: execute(svc, db, sql, timeout=120)))
        check_rss(svc, before, "execute")
        fixtures.stop_ok(tap, svc, "execute_service_exits_0_on_sigterm")

        stub = fixtures.ModelStub()
        gen_cfg = dict(base)
        gen_cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000,
                                          "retries": 0}}
        gen_cfg["generate"] = {"cache_ttl_s": 0, "max_rounds": 0}
        gsvc = t2s.Service(gen_cfg)
        services.append(gsvc)
        gsvc.start(timeout=60)
        before = rss_start(gsvc)

        def send_for(db):
            def send(sql):
                stub.rules([], default_content="```sql\n%s\n```" % sql)
                return gsvc.request("POST", "/query", json={"database": db, "question": "Show every victim",
                                                            "options": {"max_rounds": 0}}, timeout=120)
            return send
        for eng in engines:
            eng.baseline = None
        run_corpus(gsvc, engines, corpus, "generate", send_for)
        check_rss(gsvc, before, "generate")
        fixtures.stop_ok(tap, gsvc, "generate_service_exits_0_on_sigterm")
        run_tables_family(base, engines, corpus, stub)
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, *services)
    finally:
        for s in services:
            s.close()
        if stub is not None:
            stub.close()
        for session in sessions:
            session.close()
        pg.drop_all()
        if fixtures.have_mariadb():
            try:
                fixtures.mariadb("DROP DATABASE IF EXISTS `%s`; DROP USER IF EXISTS '%s'@'%%';" % (MY_DB, MY_READER))
            except RuntimeError as e:
                tap.diag("cleanup: %s" % e)
        for p in ("/tmp/t2s_corpus_my_out", "/tmp/t2s_corpus_my_dump","/tmp/t2s_corpus_copy", "/tmp/t2s_corpus_prog", "/tmp/t2s_corpus_w",
                  "/tmp/t2s_corpus_attach.sqlite", "/tmp/t2s_corpus_vacuum.sqlite"):
            tap.ok(not os.path.exists(p), "no_file_written_at_%s" % os.path.basename(p))
            if os.path.exists(p):
                os.unlink(p)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
