#!/usr/bin/env python3
"""test_mariadb.py - MySQL / MariaDB as a third engine, against the real MariaDB
server of tests/lib/servers.sh (TAP; issue 32, item 1). Skipped without it.

A database made here (singer, concert with a foreign key, table and column
comments, a stored procedure) is read by the service through a SELECT-only
account whose password comes from password_env, through a second account that
may INSERT (refused at start), and through that account with
allow_privileged_role (served). With the Spider databases loaded by
scripts/test.sh ($T2S_TEST_MARIADB_SPIDER_DBS), concert_singer is served too.

  1. ready: the reader's database is up in /readyz; the writer's is down and
     names INSERT; the allowed one serves;
  2. the schema model: engine mysql, both tables, columns with their MySQL
     types, primary and foreign keys, comments as descriptions (/describe);
  3. /link finds singer for a question on singers; /evidence finds the stored
     value France (value index and probes); the built-in answers "How many
     singers are there?" with the right count (SQL with backtick-free names,
     rows [[n]]); a question with a superlative orders without NULLS LAST;
  4. /execute: values keep their JSON types; DELETE is 403; every hostile
     statement (sleeping past the limit, files, locks, two statements, SET
     GLOBAL, a procedure call, BENCHMARK, FOR UPDATE, HANDLER, INTO @var,
     INTO OUTFILE, executable comments, the mysql schema, ...) is refused or
     stopped, each answered within 12 s, and afterwards the data and the files
     are unchanged and no statement of the reader still runs;
  5. limits: a statement past the time limit is a 504 within the limit and a
     grace; max_rows truncates a result whose own LIMIT is far larger, quickly;
     the truncated statement is killed, not left running; a row past
     max_result_bytes is dropped (truncated_by max_result_bytes);
  6. the answer cache's data version moves when root inserts a row;
  7. a /query whose client hangs up while its statement (the model stub's answer) runs has the
     statement killed well before the time limit.
"""

import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, is_problem, mariadb, mariadb_url  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_maria_%d" % PID
READER = "t2s_mreader_%d" % PID
WRITER = "t2s_mwriter_%d" % PID
PASSWORD = "reader-pw-%d" % PID
ENV = "T2S_MARIA_PW_%d" % PID
TIMEOUT_MS = 2000
HOSTILE_BUDGET_S = 12

SETUP = """
CREATE DATABASE `{db}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE `{db}`;
CREATE TABLE singer (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL COMMENT 'the singer''s stage name',
  country VARCHAR(40), age INT, net_worth DECIMAL(10,2)) COMMENT 'people who sing at concerts';
CREATE TABLE concert (id INT PRIMARY KEY, singer_id INT, year INT, title VARCHAR(60),
  FOREIGN KEY (singer_id) REFERENCES singer (id));
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52, 10.5), (2, 'Timbaland', 'United States', 32, 20),
  (3, 'Justin Brown', 'France', 29, NULL), (4, 'Rose White', 'France', 41, 3.25), (5, 'Tribal King', 'France', NULL, 7);
INSERT INTO concert VALUES (1, 1, 2014, 'Auditions'), (2, 3, 2015, 'Super bootcamp'), (3, 4, 2014, 'Week 1');
CREATE PROCEDURE wipe() DELETE FROM singer;
CREATE USER '{reader}'@'%' IDENTIFIED BY '{pw}';
GRANT SELECT ON `{db}`.* TO '{reader}'@'%';
CREATE USER '{writer}'@'%' IDENTIFIED BY 'w';
GRANT SELECT, INSERT ON `{db}`.* TO '{writer}'@'%';
"""


def hostile():
    """(name, sql): each must not change anything and be answered within HOSTILE_BUDGET_S."""
    return [
        ("delete", "DELETE FROM singer"),
        ("sleep_past_the_limit", "SELECT SLEEP(30)"),
        ("sleep_in_a_subquery", "SELECT name FROM singer WHERE (SELECT SLEEP(30)) = 0"),
        ("benchmark", "SELECT BENCHMARK(1000000000, MD5('x'))"),
        ("load_file", "SELECT LOAD_FILE('/etc/passwd')"),
        ("into_outfile", "SELECT * FROM singer INTO OUTFILE '/tmp/t2s_maria_%d.txt'" % PID),
        ("into_dumpfile", "SELECT name FROM singer LIMIT 1 INTO DUMPFILE '/tmp/t2s_maria_%d.bin'" % PID),
        ("into_var", "SELECT name INTO @x FROM singer LIMIT 1"),
        ("user_variable_assignment", "SELECT @x := name FROM singer"),
        ("system_variable", "SELECT @@global.max_connections"),
        ("get_lock", "SELECT GET_LOCK('t2s', 30)"),
        ("is_free_lock", "SELECT IS_FREE_LOCK('t2s')"),
        ("release_lock", "SELECT RELEASE_LOCK('t2s')"),
        ("two_statements", "SELECT 1; DELETE FROM singer"),
        ("two_statements_after_a_comment", "SELECT 1 -- x\n; DROP TABLE singer"),
        ("set_global", "SET GLOBAL max_connections = 1"),
        ("set_statement_for", "SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(30)"),
        ("procedure_call", "CALL wipe()"),
        ("for_update", "SELECT * FROM singer FOR UPDATE"),
        ("lock_in_share_mode", "SELECT * FROM singer LOCK IN SHARE MODE"),
        ("handler", "HANDLER singer OPEN"),
        ("do_sleep", "DO SLEEP(30)"),
        ("executable_comment", "SELECT /*!50000 SLEEP(30) */ 1"),
        ("mariadb_executable_comment", "SELECT /*M! SLEEP(30) */ 1"),
        ("optimizer_hint_setting_a_variable", "SELECT /*+ SET_VAR(max_statement_time=0) */ SLEEP(30)"),
        ("mysql_schema", "SELECT user, password FROM mysql.user"),
        ("performance_schema", "SELECT * FROM performance_schema.threads"),
        ("information_schema_privileges", "SELECT * FROM information_schema.user_privileges"),
        ("quoted_stored_function", "SELECT `wipe`()"),
        ("qualified_function", "SELECT %s.wipe()" % DB),
        ("with_delete", "WITH x AS (SELECT 1) DELETE FROM singer"),
        ("insert_select", "INSERT INTO singer SELECT * FROM singer"),
        ("replace_into", "REPLACE INTO singer VALUES (1, 'x', 'x', 1, 1)"),
        ("create_table", "CREATE TABLE t2s_x (a INT)"),
        ("truncate", "TRUNCATE TABLE singer"),
        ("next_value_for", "SELECT NEXT VALUE FOR s"),
        ("kill", "KILL 1"),
        ("shutdown", "SHUTDOWN"),
        ("show_grants", "SHOW GRANTS"),
        ("load_data", "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE singer"),
        ("cross_join_past_the_limit", "SELECT count(*) FROM information_schema.columns a, information_schema.columns b, "
                                      "information_schema.columns c"),
    ]


def config(spider):
    dbs = [{"name": "maria", "url": mariadb_url(DB, READER), "password_env": ENV},
           {"name": "writer", "url": "mariadb://%s:w@127.0.0.1:%s/%s" % (WRITER, os.environ["T2S_TEST_MARIADB_PORT"], DB)},
           {"name": "allowed", "url": mariadb_url(DB, WRITER, "w"), "allow_privileged_role": True}]
    for name in spider:
        dbs.append({"name": "spider_" + name, "url": mariadb_url(name, "t2s_reader"), "password_env": "T2S_TEST_MARIADB_READER_PW"})
    return {"databases": dbs, "log": {"level": "warn", "access": False},
            "execution": {"timeout_ms": TIMEOUT_MS, "max_rows": 1000},
            "auth": {"allow_anonymous_writes": True}}


def check_ready(svc):
    r = svc.request("GET", "/readyz")
    dbs = (r.json or {}).get("checks", {}).get("databases", {})
    tap.eq(dbs.get("maria", {}).get("status"), "up", "select_only_account_database_ready")
    w = dbs.get("writer", {})
    tap.ok(w.get("status") == "down" and "INSERT" in w.get("error", "") and "allow_privileged_role" in w.get("error", ""),
           "account_that_may_insert_is_not_ready_and_named", diag=str(w))
    r = execute(svc, "writer", "SELECT count(*) FROM singer")
    tap.ok(is_problem(r, 503, "unavailable") and "INSERT" in (r.json or {}).get("detail", ""),
           "writer_database_refuses_execute_503", diag=r.text[:300])
    r = execute(svc, "allowed", "SELECT count(*) FROM singer")
    tap.ok(r.status == 200 and r.json["rows"] == [[5]], "allow_privileged_role_serves_the_writer", diag=r.text[:300])


def check_schema(svc):
    r = svc.request("GET", "/databases/maria")
    body = r.json or {}
    tap.eq(body.get("engine"), "mysql", "schema_engine_is_mysql")
    tables = {t["name"]: t for t in body.get("tables", [])}
    tap.eq(sorted(tables), ["concert", "singer"], "schema_lists_both_tables")
    singer = tables.get("singer", {})
    cols = {c["name"]: c for c in singer.get("columns", [])}
    tap.ok(cols.get("net_worth", {}).get("type") == "decimal(10,2)" and cols.get("id", {}).get("primary_key"),
           "columns_keep_mysql_types_and_primary_keys", diag=str(cols)[:400])
    tap.eq(singer.get("comment"), "people who sing at concerts", "table_comment_read")
    tap.eq(cols.get("name", {}).get("comment"), "the singer's stage name", "column_comment_read")
    tap.eq(cols.get("name", {}).get("nullable"), False, "not_null_read")
    fks = tables.get("concert", {}).get("foreign_keys", [])
    tap.ok(any(fk.get("columns") == ["singer_id"] and fk.get("references", {}).get("table") == "singer"
               and fk["references"].get("columns") == ["id"] for fk in fks),
           "foreign_key_read", diag=str(fks))
    tap.ok(singer.get("row_count") == 5, "row_count_counted", diag=str(singer.get("row_count")))
    r = svc.request("POST", "/describe", json={"database": "maria", "tables": ["singer"]})
    text = r.text or ""
    tap.ok(r.status == 200 and "stage name" in text, "describe_uses_the_column_comment", diag=text[:500])


def check_questions(svc, spider):
    r = svc.request("POST", "/link", json={"database": "maria", "question": "Which singers come from France?"})
    names = [t["name"] for t in (r.json or {}).get("tables", [])]
    tap.ok(r.status == 200 and "singer" in names, "link_finds_the_singer_table", diag=r.text[:400])
    # the value index is built in the background: asked until it is ready (answers before are partial)
    r = fixtures.wait_until(lambda: (lambda x: x if x.status == 200 and not (x.json or {}).get("partial") else None)(
        svc.request("POST", "/evidence", json={"database": "maria", "question": "Which singers come from France?"})),
        timeout=30) or svc.request("POST", "/evidence", json={"database": "maria", "question": "Which singers come from France?"})
    vals = [(v.get("table"), v.get("column"), v.get("value")) for v in (r.json or {}).get("values", [])]
    tap.ok(("singer", "country", "France") in vals, "evidence_finds_the_stored_value", diag=r.text[:500])
    r = svc.request("POST", "/query", json={"database": "maria", "question": "How many singers are there?"})
    body = r.json or {}
    tap.ok(r.status == 200 and body.get("rows") == [[5]] and "count" in (body.get("sql") or "").lower(),
           "builtin_answers_a_count_with_the_right_rows", diag=r.text[:500])
    tap.eq(body.get("dialect"), "mysql", "answer_dialect_is_mysql")
    r = svc.request("POST", "/query", json={"database": "maria", "question": "What is the name of the oldest singer?"})
    body = r.json or {}
    sql = body.get("sql") or ""
    tap.ok(r.status == 200 and "NULLS" not in sql.upper() and body.get("rows") == [["Joe Sharp"]],
           "builtin_superlative_orders_without_nulls_last", diag=r.text[:500])
    for name in spider:
        if name != "concert_singer":
            continue
        r = svc.request("POST", "/query", json={"database": "spider_" + name, "question": "How many singers do we have?"})
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[6]], "spider_concert_singer_count_answered",
               diag=r.text[:400])
        r = svc.request("POST", "/link", json={"database": "spider_" + name,
                                               "question": "Show the stadium names where concerts took place in 2014"})
        names = [t["name"] for t in (r.json or {}).get("tables", [])]
        tap.ok("stadium" in names and "concert" in names, "spider_link_finds_stadium_and_concert", diag=r.text[:400])


def check_values(svc):
    r = execute(svc, "maria", "SELECT id, name, net_worth, age FROM singer WHERE id IN (3, 4) ORDER BY id")
    tap.ok(r.status == 200 and r.json["rows"] == [[3, "Justin Brown", None, 29], [4, "Rose White", 3.25, 41]],
           "values_keep_json_types_and_null", diag=r.text[:300])
    tap.eq((r.json or {}).get("column_types"), ["int", "varchar", "decimal", "int"], "column_types_reported")
    r = execute(svc, "maria", "SELECT `name` AS \"Stage Name\" FROM `singer` WHERE country = \"France\" ORDER BY id")
    tap.ok(r.status == 200 and r.json["columns"] == ["Stage Name"] and len(r.json["rows"]) == 3,
           "backticks_and_double_quoted_strings_read_as_mysql_does", diag=r.text[:300])
    r = execute(svc, "maria", "SELECT name FROM singr")
    tap.ok(is_problem(r, 400, "sql-invalid") and "singr" in r.json.get("detail", ""), "unknown_table_is_400_naming_it",
           diag=r.text[:300])


def reader_queries():
    return [row for row in mariadb("SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE USER = '%s' "
                                   "AND COMMAND = 'Query'" % READER)]


def check_hostile(svc):
    before = fixtures.mariadb_checksum(DB)
    slowest = 0.0
    for name, sql in hostile():
        start = time.monotonic()
        r = execute(svc, "maria", sql, timeout=HOSTILE_BUDGET_S + 5)
        took = time.monotonic() - start
        slowest = max(slowest, took)
        tap.ok(r.status in (400, 403, 504) and fixtures.problem_type(r) and took < HOSTILE_BUDGET_S,
               "hostile_%s_refused_within_%d_s" % (name, HOSTILE_BUDGET_S),
               diag="status %s in %.1f s: %s" % (r.status, took, r.text[:200]))
    tap.diag("slowest hostile statement answered in %.1f s" % slowest)
    tap.eq(fixtures.mariadb_checksum(DB), before, "data_unchanged_after_every_hostile_statement")
    tap.ok(not os.path.exists("/tmp/t2s_maria_%d.txt" % PID), "no_outfile_written")
    tap.ok(fixtures.wait_until(lambda: not reader_queries(), timeout=5), "no_reader_statement_left_running",
           diag=str(reader_queries()))
    r = execute(svc, "maria", "SELECT IS_FREE_LOCK('t2s')")
    tap.ok(is_problem(r, 403, "sql-rejected"), "lock_functions_refused_by_the_guard")
    lock = mariadb("SELECT IS_FREE_LOCK('t2s')")
    tap.eq(lock, [["1"]], "no_lock_taken")


def check_limits(svc):
    start = time.monotonic()
    r = execute(svc, "maria", "SELECT count(*) FROM information_schema.columns a, information_schema.columns b, "
                              "information_schema.columns c")
    took = time.monotonic() - start
    tap.ok(is_problem(r, 504, "timeout") and took < TIMEOUT_MS / 1000 + 2.5, "statement_past_the_time_limit_is_504",
           diag="%s in %.1f s: %s" % (r.status, took, r.text[:200]))
    start = time.monotonic()
    r = execute(svc, "maria", "SELECT a.name FROM singer a, singer b, singer c, singer d, singer e, singer f, singer g "
                              "LIMIT 70000", max_rows=7)
    took = time.monotonic() - start
    tap.ok(r.status == 200 and r.json["row_count"] == 7 and r.json["truncated"] and r.json["truncated_by"] == "max_rows"
           and took < 3, "max_rows_truncates_past_the_statements_own_limit", diag="%.1f s %s" % (took, r.text[:200]))
    # the rest of that result was not read: its statement was killed (KILL QUERY from a second connection)
    tap.ok(fixtures.wait_until(lambda: not reader_queries(), timeout=0.5), "truncated_statement_killed_not_drained",
           diag=str(reader_queries()))
    r = execute(svc, "maria", "SELECT REPEAT('x', 9000000)")
    tap.ok(r.status == 200 and r.json["truncated_by"] == "max_result_bytes" and r.json["rows"] == [],
           "row_past_max_result_bytes_dropped", diag=r.text[:200])
def check_client_gone():
    """A /query whose client hangs up while its statement runs: the statement is killed (KILL QUERY
    from a second connection) long before the time limit would stop it."""
    stub = fixtures.ModelStub()
    slow = ("SELECT count(*) FROM information_schema.columns a, information_schema.columns b, "
            "information_schema.columns c")
    cfg = {"databases": [{"name": "maria", "url": mariadb_url(DB, READER, PASSWORD)}],
           "log": {"level": "warn", "access": False}, "execution": {"timeout_ms": 20000},
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}},
           "generate": {"cache_ttl_s": 0, "max_rounds": 0}}
    try:
        stub.rules([], default_content="```sql\n%s\n```" % slow)
        with fixtures.serving(tap, cfg, "client_gone_service_exits_0") as svc:
            body = json.dumps({"database": "maria", "question": "How many singers are there?",
                               "options": {"max_rounds": 0}}).encode()
            client = socket.create_connection((svc.host, svc.port), timeout=30)
            client.sendall(b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            running = fixtures.wait_until(lambda: reader_queries(), timeout=15)
            client.close()  # the client hangs up while its statement runs
            gone = fixtures.wait_until(lambda: not reader_queries(), timeout=4)
            tap.ok(running, "abandoned_querys_statement_was_running")
            tap.ok(gone, "abandoned_querys_statement_killed_well_before_its_20_s_limit",
                   diag="running before: %s; after: %s" % (running, reader_queries()))
    finally:
        stub.close()


def check_data_version(svc):
    q = {"database": "maria", "question": "How many singers are there?"}
    first = svc.request("POST", "/query", json=q)
    mariadb("INSERT INTO singer VALUES (6, 'New One', 'Spain', 20, 1)", DB)
    try:
        second = svc.request("POST", "/query", json=q)
        tap.ok(first.status == 200 and second.status == 200 and second.json.get("rows") == [[6]],
               "answer_follows_a_write_the_data_version_moves", diag=second.text[:300])
    finally:
        mariadb("DELETE FROM singer WHERE id = 6", DB)


def check_config():
    code, out = t2s.run_config_only({"databases": [{"name": "m", "url": "mysql://x@127.0.0.1:3306"}]},
                                    ["--check-config"])
    tap.ok(code not in (0, None) and "databases[0].url" in out and "database" in out,
           "mysql_url_without_a_database_refused", diag=out[-300:])
    code, out = t2s.run_config_only({"databases": [{"name": "m", "url": "mysql://x@127.0.0.1/db",
                                                    "schemas": ["a"]}]}, ["--check-config"])
    tap.ok(code not in (0, None) and "schemas" in out, "schemas_refused_for_mysql", diag=out[-300:])
    code, out = t2s.run_config_only({"databases": [{"name": "m", "url": "mysql://x:pw@127.0.0.1/db",
                                                    "password_env": "HOME"}]}, ["--check-config"])
    tap.ok(code not in (0, None) and "password" in out, "password_in_url_and_env_refused", diag=out[-300:])


def main():
    check_config()
    if not fixtures.have_mariadb():
        tap.skip("mariadb", "no MariaDB (T2S_TEST_MARIADB_SOCKET unset)")
        return tap.done()
    spider = os.environ.get("T2S_TEST_MARIADB_SPIDER_DBS", "").split()
    svc = None
    try:
        mariadb(SETUP.format(db=DB, reader=READER, writer=WRITER, pw=PASSWORD))
        env = dict(os.environ, **{ENV: PASSWORD})
        svc = t2s.Service(config(spider), env=env)
        svc.start(timeout=60)
        for check in (check_ready, check_schema, check_values, lambda s: check_questions(s, spider),
                      check_hostile, check_limits, check_data_version):
            try:
                check(svc)
            except Exception:  # noqa: BLE001 - report, go on with the next check
                fixtures.report_exception(tap, svc)
        fixtures.stop_ok(tap, svc, "service_exits_0_on_sigterm")
        check_client_gone()
    except Exception:  # noqa: BLE001
        fixtures.report_exception(tap, svc)
    finally:
        if svc is not None:
            svc.close()
        try:
            mariadb("DROP DATABASE IF EXISTS `%s`; DROP USER IF EXISTS '%s'@'%%', '%s'@'%%';" % (DB, READER, WRITER))
        except RuntimeError as e:
            tap.diag("cleanup: %s" % e)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
