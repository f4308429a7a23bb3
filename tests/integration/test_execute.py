#!/usr/bin/env python3
"""test_execute.py - POST /execute on one engine: `test_execute.py sqlite`, `pg` or `mariadb` (TAP).

Each behaviour is written once and run on both engines (tests/meson.build registers
execute_sqlite and execute_pg); what only one engine has is in its class (Sqlite,
Postgres), with the real text2sqld binary ($T2S_BIN), real SQLite files and the real
PostgreSQL server of tests/lib/servers.sh (pg: every check is skipped when
T2S_TEST_PG_PORT is unset; the service connects as the read-only role t2s_reader, admin
checks go through `postgres`).
  1. results: Spider dev gold queries (sqlite: of the 19 dev databases that hold rows,
     compared with what Python's own sqlite3 returns on the same file, column names
     included; pg: of the databases in $T2S_TEST_PG_SPIDER_DBS, run on both engines
     through /execute, result bags compared (lists when the query has ORDER BY; int and
     float equal when numerically equal).  The loader keeps the SQLite names' case by
     quoting them, so before running a query on PostgreSQL the identifiers naming a
     table or column are quoted with their stored spelling and SQLite's double-quoted
     string literals become single-quoted (two mechanical rewrites).  Queries
     PostgreSQL still refuses (SQLite-only dialect) or that give a different bag (ties
     under LIMIT) are counted and listed as diagnostics; the majority must agree, and
     none may be refused by the guard (403) or fail with 5xx).  A fixture database
     written here checks column names, value types (sqlite: integer, real, text, blob;
     pg: integer, double, numeric, boolean, date, json, array, bytea; NULL -> null),
     non-UTF-8 text coming back as valid JSON (pg: from an SQL_ASCII database), the row
     cap (max_rows -> truncated, truncated_by "max_rows"), the byte cap
     (execution.max_result_bytes -> truncated_by "max_result_bytes"), the limits echoed
     in the response, and that a 150 MB result does not raise the service's peak memory
     by more than 64 MB (max_result_bytes is 8 MiB; skipped under AddressSanitizer);
  2. guards: more than 30 write or escape attempts each (sqlite: DML, DDL, ATTACH,
     pragmas, VACUUM INTO, load_extension, writefile, transaction control; pg: DML,
     DDL, data-modifying CTE, SELECT INTO, FOR UPDATE, COPY, set_config, advisory locks,
     file and large-object functions, dblink, sequences, pg_terminate_backend,
     query_to_xml, CALL/DO, PREPARE/EXECUTE, LISTEN/NOTIFY, SET ROLE, RESET, a SECURITY
     DEFINER function that deletes; both: stacked statements, comment and unicode
     tricks, over-long SQL) are refused with a 4xx problem while the data's checksum
     stays the same; reasons name what was refused; afterwards nothing lingers (sqlite:
     no file created, no journal, pragmas unchanged; pg: no advisory lock, large object,
     prepared statement, listener or changed setting, the sequence did not move).
     Catalogs (issue 19): pg reads of pg_stat_activity, pg_database, pg_settings,
     pg_roles (past a CTE of that name in a subquery), information_schema grants and
     pg_stat_get_activity() are refused naming them, while information_schema.tables,
     .columns, pg_tables and a CTE borrowing a catalog's name read; sqlite: the temp
     schema (temp.sqlite_master, sqlite_temp_master, a schema pragma on temp) is
     refused while main's sqlite_master reads.
     pg: function calls are admitted by what pg_proc says they are (IMMUTABLE or
     STABLE, not SECURITY DEFINER), the set follows the schema's lifecycle (a function
     created after start is unknown until a refresh, then judged by what it is);
     operators, casts and domain CHECKs are judged by the functions they run;
  3. limits and errors: execution.timeout_ms = 300 stops an endless query with a 504
     timeout problem and the next query on the same pool works; an unknown column is a
     400 sql-invalid problem, a runtime error a 422 sql-failed problem; request errors
     are 400 invalid-request; sqlite: a read waits for a writer's lock held for half a
     second instead of failing; pg: a lock held by another session ends in a 504 after
     lock_timeout_ms.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, has_order_by, is_problem, problem_type, result_key  # noqa: E402
from t2s import pg_url, qi  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_exec_%d" % PID
DB_ASCII = "t2s_exec_ascii_%d" % PID


# --------------------------------------------------------------------------- shared: 1. results

def check_fixture_results(engine, svc):
    r = execute(svc, "fixture", engine.SELECT_SQL)
    if not tap.eq(r.status, 200, "fixture_select_answers_200"):
        tap.diag(r.text[:500])
        return
    body = r.json
    tap.eq(body["columns"], engine.SELECT_COLUMNS, "column_names_as_selected_including_alias_case_and_spaces")
    tap.eq(body["rows"], engine.SELECT_ROWS, "values_keep_json_types_and_null_becomes_null")
    engine.check_value_types(body["rows"])
    tap.eq(body["row_count"], 2, "row_count_equals_rows_returned")
    tap.eq((body["truncated"], body.get("truncated_by")), (False, None), "small_result_not_truncated")
    tap.ok(isinstance(body.get("elapsed_ms"), (int, float)) and body["elapsed_ms"] >= 0,
           "elapsed_ms_reported")
    tap.eq(body.get("limits", {}).get("max_rows"), 1000, "limits_echo_default_max_rows")
    tap.eq(body.get("limits", {}).get("timeout_ms"), 5000, "limits_echo_timeout_ms")

    r = execute(svc, "fixture", "SELECT id FROM items ORDER BY id", max_rows=3)
    tap.ok(r.status == 200 and r.json["rows"] == [[1], [2], [3]] and r.json["row_count"] == 3,
           "max_rows_3_returns_first_3_rows", diag=r.text[:300])
    tap.ok(r.status == 200 and r.json["truncated"] is True and r.json.get("truncated_by") == "max_rows",
           "max_rows_3_sets_truncated_by_max_rows", diag=r.text[:300])
    tap.eq(r.json.get("limits", {}).get("max_rows") if r.json else None, 3, "limits_echo_requested_max_rows")
    r = execute(svc, "fixture", "SELECT id FROM items WHERE id <= 3", max_rows=3)
    tap.ok(r.status == 200 and r.json["row_count"] == 3 and r.json["truncated"] is False,
           "exactly_max_rows_rows_is_not_truncated", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT i FROM big", max_rows=100000)
    tap.ok(is_problem(r, 400, "invalid-request"), "max_rows_above_execution_max_rows_is_400",
           diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT count(*) FROM items WHERE 1 = 0")
    tap.ok(r.status == 200 and r.json["rows"] == [[0]], "aggregate_over_no_rows", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT id FROM items WHERE 1 = 0")
    tap.ok(r.status == 200 and r.json["rows"] == [] and r.json["columns"] == ["id"] and
           r.json["row_count"] == 0, "empty_result_keeps_column_names", diag=r.text[:300])
    r = execute(svc, "fixture", "VALUES (1, 'a'), (2, 'b')")
    tap.ok(r.status == 200 and r.json["rows"] == [[1, "a"], [2, "b"]], "values_statement_allowed",
           diag=r.text[:300])
    r = execute(svc, "fixture", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 5) SELECT sum(x) FROM c")
    tap.ok(r.status == 200 and r.json["rows"] == [[15]], "bounded_recursive_cte_allowed", diag=r.text[:300])
    engine.check_more_results(svc)


def check_result_bytes(tight):
    r = execute(tight, "fixture", "SELECT i, pad FROM big ORDER BY i", max_rows=2000)
    ok = r.status == 200
    tap.ok(ok and r.json["truncated"] is True and r.json.get("truncated_by") == "max_result_bytes",
           "max_result_bytes_truncates_with_truncated_by_max_result_bytes", diag=r.text[:300])
    if ok:
        n = r.json["row_count"]
        tap.ok(0 < n < 2000 and len(r.json["rows"]) == n and n * 100 <= 1024 + 200,
               "max_result_bytes_keeps_rows_within_the_byte_budget", diag="rows %d" % n)
        tap.eq(r.json["rows"][0], [0, "x" * 100], "max_result_bytes_keeps_leading_rows_intact")
        tap.eq(r.json.get("limits", {}).get("max_result_bytes"), 1024, "limits_echo_max_result_bytes")
    r = execute(tight, "fixture", "SELECT id FROM items WHERE id = 1")
    tap.ok(r.status == 200 and r.json["truncated"] is False, "small_result_fits_small_byte_budget",
           diag=r.text[:300])


def check_result_memory(engine, svc):
    """max_result_bytes (8 MiB by default) also bounds the memory a big result
    costs the service: 150 rows of 1 MB each must not all be held at once."""
    pid = svc.proc.pid
    if fixtures.under_sanitizer(pid) or fixtures.peak_rss_kb(pid) is None:
        tap.skip("max_result_bytes_bounds_service_memory_for_a_150_mb_result",
                 "peak memory is not meaningful under a sanitizer")
        return
    before = fixtures.peak_rss_kb(pid)
    r = execute(svc, "fixture", engine.BIG_ROWS_SQL, timeout=120)
    grown_mb = (fixtures.peak_rss_kb(pid) - before) / 1024.0
    tap.ok(r.status == 200 and r.json["truncated"] is True and r.json.get("truncated_by") == "max_result_bytes",
           "large_rows_truncated_by_max_result_bytes", diag=r.text[:200])
    tap.ok(grown_mb < 64, "max_result_bytes_bounds_service_memory_for_a_150_mb_result",
           diag="peak resident memory grew by %.0f MB" % grown_mb)


# --------------------------------------------------------------------------- shared: 2. guards

def check_guards(engine, svc):
    before = engine.checksum()
    engine.before_guards()
    refused = 0
    for name, sql, words in engine.attacks():
        r = execute(svc, "fixture", sql)
        after = engine.checksum()
        slug = problem_type(r)
        ok = (400 <= r.status < 500 and slug in ("sql-rejected", "sql-invalid", "invalid-request", "sql-failed")
              and (r.headers.get("Content-Type") or "").startswith("application/problem+json") and after == before)
        refused += ok
        tap.ok(ok, "refuses_%s_with_4xx_problem_and_data_unchanged" % name,
               diag="status %d %s; checksum %s" % (r.status, r.text[:300], "same" if after == before else "CHANGED"))
        if words is not None and r.status in (400, 403):
            detail = (r.json or {}).get("detail", "")
            tap.ok(any(w.lower() in detail.lower() for w in words), "refusal_of_%s_names_what_was_refused" % name,
                   diag="detail %r should mention one of %s" % (detail, words))
    # An SQL text over execution.max_sql_bytes (100 KiB by default).
    r = execute(svc, "fixture", "SELECT 1 /*" + "x" * (110 * 1024) + "*/")
    tap.ok(is_problem(r, 400, "invalid-request"), "sql_over_max_sql_bytes_is_400_invalid_request", diag=r.text[:300])
    detail = (r.json or {}).get("detail", "")
    tap.ok("byte" in detail.lower() or "long" in detail.lower() or "limit" in detail.lower(),
           "sql_over_max_sql_bytes_reason_mentions_the_limit", diag=detail)
    refused += r.status == 400
    total = len(engine.attacks()) + 1
    tap.ok(refused >= 30 and refused == total, "at_least_30_write_or_escape_attempts_refused",
           diag="%d of %d refused" % (refused, total))
    tap.diag("%s guard: %d of %d write/escape attempts refused with data unchanged" % (engine.LABEL, refused, total))
    tap.eq(engine.checksum(), before, "database_checksum_unchanged_after_all_attempts")
    engine.check_nothing_lingers(svc)
    r = execute(svc, "fixture", "SELECT count(*) FROM victim")
    tap.ok(r.status == 200 and r.json["rows"] == [[3]], "connection_still_serves_queries_after_refusals",
           diag=r.text[:300])


# --------------------------------------------------------------------------- shared: 3. limits, errors

def check_errors(engine, svc):
    r = execute(svc, "fixture", "SELECT no_such_column FROM items")
    tap.ok(is_problem(r, 400, "sql-invalid"), "unknown_column_is_400_sql_invalid", diag=r.text[:300])
    tap.ok("no_such_column" in (r.json or {}).get("detail", ""), "sql_invalid_detail_names_the_column",
           diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT * FROM no_such_table")
    tap.ok(is_problem(r, 400, "sql-invalid"), "unknown_table_is_400_sql_invalid", diag=r.text[:300])
    engine.check_sql_errors(svc)
    r = execute(svc, "no_such_db_%d" % PID, "SELECT 1")
    tap.ok(is_problem(r, 404, "not-found"), "unknown_database_is_404", diag=r.text[:300])
    r = svc.request("POST", "/execute", json={"database": "fixture"})
    tap.ok(is_problem(r, 400, "invalid-request"), "missing_sql_is_400_invalid_request", diag=r.text[:300])
    r = svc.request("POST", "/execute", json={"database": "fixture", "sql": "SELECT 1", "max_rows": 0})
    tap.ok(is_problem(r, 400, "invalid-request"), "max_rows_0_is_400_invalid_request", diag=r.text[:300])
    r = svc.request("POST", "/execute", json={"database": "fixture", "sql": "SELECT 1", "rows": 1})
    tap.ok(is_problem(r, 400, "invalid-request"), "unknown_field_is_400_invalid_request", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT 1")
    tap.ok(r.status == 200 and r.json["rows"] == [[1]], "queries_work_after_errors", diag=r.text[:300])


def check_timeout(engine, tight):
    (first_name, first_sql), (second_name, second_sql) = engine.ENDLESS
    start = time.monotonic()
    r = execute(tight, "fixture", first_sql, timeout=120)
    took = time.monotonic() - start
    tap.ok(is_problem(r, 504, "timeout"), first_name, diag=r.text[:300])
    tap.ok(took < 60, engine.NO_HANG_NAME, diag="took %.1f s" % took)
    tap.ok("300" in (r.json or {}).get("detail", ""), "timeout_detail_names_the_limit", diag=r.text[:300])
    r = execute(tight, "fixture", "SELECT count(*) FROM items")
    tap.ok(r.status == 200 and r.json["rows"] == [[50]], "next_query_on_the_same_pool_succeeds_after_timeout",
           diag=r.text[:300])
    r = execute(tight, "fixture", second_sql, timeout=120)
    tap.ok(is_problem(r, 504, "timeout"), second_name, diag=r.text[:300])
    r = execute(tight, "fixture", "SELECT 2")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "pool_serves_queries_after_second_timeout", diag=r.text[:300])


# --------------------------------------------------------------------------- SQLite

def sqlite_reference(path, sql):
    """(column names, rows as JSON-like values) from Python's sqlite3."""
    con = t2s.sqlite_ro(path)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        cur = con.execute(sql)
        rows = cur.fetchall()
        cols = [d[0] for d in cur.description]
    finally:
        con.close()
    out = []
    for r in rows:
        out.append([("\\x" + bytes(v).hex()) if isinstance(v, (bytes, memoryview)) else v for v in r])
    return cols, out


SQLITE_FIXTURE_SQL = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, qty INT, note TEXT, data BLOB);
CREATE TABLE victim (k INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE big (i INTEGER, pad TEXT);
CREATE TABLE weird (id INTEGER PRIMARY KEY, raw TEXT);
-- Text that is not valid UTF-8 (stored as TEXT, not BLOB), and a NUL-free latin-1 word.
INSERT INTO weird VALUES (1, CAST(x'636166e9' AS TEXT));
INSERT INTO weird VALUES (2, CAST(x'fffe41c328' AS TEXT));
INSERT INTO weird VALUES (3, 'plain ✓ ünïcode');
"""


def make_sqlite_fixture(path):
    return fixtures.write_sqlite(path, SQLITE_FIXTURE_SQL, {
        "items": [(i, "item %d" % i, i * 1.25, i % 7, None if i % 10 == 0 else "note %d" % i, bytes([i, 0, 255]))
                  for i in range(1, 51)],
        "victim": [(1, "one"), (2, "two"), (3, "three")],
        "big": [(i, "x" * 100) for i in range(2000)]})


def sqlite_spider_results(svc, dbs):
    dev = t2s.spider_dev_json() or []
    total = agree = 0
    for db in dbs:
        path = t2s.spider_db_path(db)
        queries = [q["query"] for q in dev if q["db_id"] == db]
        mismatches = []
        for sql in queries:
            total += 1
            r = execute(svc, db, sql, max_rows=10000)
            try:
                cols, rows = sqlite_reference(path, sql)
            except sqlite3.Error as e:
                mismatches.append("reference failed (%s): %s" % (e, sql))
                continue
            if r.status != 200:
                mismatches.append("status %d %s: %s" % (r.status, r.text[:200], sql))
                continue
            body = r.json
            if body["columns"] != cols:
                mismatches.append("columns %s != %s: %s" % (body["columns"], cols, sql))
                continue
            if result_key(body["rows"], has_order_by(sql)) != result_key(rows, has_order_by(sql)):
                mismatches.append("rows differ (%d vs %d rows): %s" % (len(body["rows"]), len(rows), sql))
                continue
            if body["row_count"] != len(rows) or body["truncated"] is not False:
                mismatches.append("row_count %r truncated %r for %d rows: %s" % (
                    body["row_count"], body["truncated"], len(rows), sql))
                continue
            agree += 1
        tap.ok(not mismatches, "spider_%s_%d_gold_queries_match_python_sqlite3" % (db, len(queries)),
               diag="\n".join(mismatches[:15]))
    if total:
        tap.diag("sqlite /execute vs python sqlite3: %d/%d gold queries identical (%.1f%%)"
                 % (agree, total, 100.0 * agree / total))


def sqlite_attacks(tmp):
    """(name, sql, reason words any of which the detail should contain or None)."""
    side = os.path.join(tmp, "side")
    return [
        ("insert", "INSERT INTO victim VALUES (9, 'x')", ["INSERT"]),
        ("update", "UPDATE victim SET v = 'x'", ["UPDATE"]),
        ("delete", "DELETE FROM victim", ["DELETE"]),
        ("replace", "REPLACE INTO victim VALUES (1, 'x')", ["REPLACE", "INSERT"]),
        ("upsert", "INSERT INTO victim VALUES (1, 'x') ON CONFLICT(k) DO UPDATE SET v = 'y'", ["INSERT"]),
        ("insert_returning", "INSERT INTO victim VALUES (10, 'r') RETURNING *", ["INSERT"]),
        ("delete_returning", "DELETE FROM victim RETURNING *", ["DELETE"]),
        ("drop_table", "DROP TABLE victim", ["DROP"]),
        ("create_table", "CREATE TABLE evil (x)", ["CREATE"]),
        ("create_temp_table", "CREATE TEMP TABLE evil (x)", ["CREATE"]),
        ("create_index", "CREATE INDEX ix ON victim(v)", ["CREATE"]),
        ("create_view", "CREATE VIEW vv AS SELECT 1", ["CREATE"]),
        ("create_trigger", "CREATE TRIGGER tr AFTER INSERT ON victim BEGIN DELETE FROM victim; END", ["CREATE"]),
        ("create_virtual_table", "CREATE VIRTUAL TABLE f USING fts5(x)", ["CREATE"]),
        ("alter_add_column", "ALTER TABLE victim ADD COLUMN z", ["ALTER"]),
        ("alter_rename", "ALTER TABLE victim RENAME TO victim2", ["ALTER"]),
        ("attach", "ATTACH DATABASE '%s/attached.db' AS a" % side, ["ATTACH"]),
        ("attach_memory", "ATTACH ':memory:' AS m", ["ATTACH"]),
        ("detach", "DETACH DATABASE main", ["DETACH"]),
        ("temp_schema_master", "SELECT * FROM temp.sqlite_master", ["temp"]),
        ("temp_master_by_its_name", "SELECT name FROM sqlite_temp_master", ["temp"]),
        ("temp_master_counted_in_a_subquery", "SELECT (SELECT count(*) FROM sqlite_temp_schema)", ["temp"]),
        ("schema_pragma_on_temp", "SELECT * FROM pragma_table_info('victim', 'temp')", ["temp"]),
        ("pragma_writable_schema", "PRAGMA writable_schema = ON", ["PRAGMA"]),
        ("pragma_journal_mode", "PRAGMA journal_mode = DELETE", ["PRAGMA"]),
        ("pragma_user_version", "PRAGMA user_version = 7", ["PRAGMA"]),
        ("pragma_foreign_keys", "PRAGMA foreign_keys = OFF", ["PRAGMA"]),
        ("pragma_wal_checkpoint", "PRAGMA wal_checkpoint(TRUNCATE)", ["PRAGMA"]),
        ("pragma_function_journal_mode", "SELECT * FROM pragma_journal_mode", ["PRAGMA"]),
        ("pragma_function_with_argument", "SELECT * FROM pragma_journal_mode('delete')", None),
        ("vacuum", "VACUUM", ["VACUUM"]),
        ("vacuum_into", "VACUUM INTO '%s/copy.db'" % side, ["VACUUM"]),
        ("reindex", "REINDEX", ["REINDEX"]),
        ("analyze", "ANALYZE", ["ANALYZE"]),
        ("load_extension", "SELECT load_extension('/usr/lib/x86_64-linux-gnu/libm.so.6')", ["load_extension"]),
        ("readfile", "SELECT readfile('/etc/passwd')", ["readfile"]),
        ("writefile", "SELECT writefile('%s/written.txt', 'x')" % side, ["writefile"]),
        ("fts3_tokenizer", "SELECT fts3_tokenizer('simple')", None),
        ("stacked_delete", "select 1; delete from victim", ["statement"]),
        ("stacked_after_comment", "select 1 /* */; drop table victim", ["statement"]),
        ("stacked_after_line_comment", "select 1 -- x\n; delete from victim", ["statement"]),
        ("stacked_values", "VALUES (1); DELETE FROM victim", ["statement"]),
        ("comment_prefixed_delete", "/* harmless */ DELETE FROM victim", ["DELETE"]),
        ("line_comment_prefixed_delete", "-- hi\nDELETE FROM victim", ["DELETE"]),
        ("cte_delete", "WITH x AS (SELECT 1) DELETE FROM victim", ["DELETE"]),
        ("cte_insert", "WITH x AS (SELECT 1) INSERT INTO victim SELECT 5, 'x'", ["INSERT"]),
        ("cte_update", "WITH x AS (SELECT 1) UPDATE victim SET v = 'x'", ["UPDATE"]),
        ("begin", "BEGIN", ["BEGIN"]),
        ("begin_immediate", "BEGIN IMMEDIATE", ["BEGIN"]),
        ("commit", "COMMIT", ["COMMIT"]),
        ("savepoint", "SAVEPOINT s1", ["SAVEPOINT"]),
        ("release", "RELEASE s1", ["RELEASE"]),
        ("explain_delete", "EXPLAIN DELETE FROM victim", ["EXPLAIN"]),
        ("mixed_case_whitespace_delete", "\t\n  DeLeTe\n\tFROM\tvictim", ["DELETE"]),
        ("nbsp_prefixed_delete", "\u00a0DELETE FROM victim", None),
        ("bom_prefixed_delete", "\ufeffDELETE FROM victim", None),
        ("fullwidth_delete", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM victim", None),
        ("zero_width_split_delete", "DEL\u200bETE FROM victim", None),
        ("select_then_nbsp_delete", "SELECT 1;\u00a0DELETE FROM victim", None),
        ("empty", "   ", None),
        ("only_comment", "/* nothing */", None),
    ]


def check_writer_lock(svc, path):
    """An application writing to the file holds its lock for a moment: a read
    should wait for it within the time limit (busy handling), not fail."""
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", execute(svc, "fixture", "SELECT count(*) FROM victim")))
    con.execute("BEGIN EXCLUSIVE")
    try:
        th.start()
        time.sleep(0.5)
    finally:
        con.execute("COMMIT")
        con.close()
    th.join(60)
    r = out.get("r")
    tap.ok(r is not None and r.status == 200 and r.json["rows"] == [[3]],
           "read_waits_for_a_writer_lock_held_for_half_a_second",
           diag=r.text[:300] if r is not None else "no answer")
    r = execute(svc, "fixture", "SELECT count(*) FROM victim")
    tap.ok(r.status == 200, "reads_work_after_the_writer_committed", diag=r.text[:300])



class Sqlite:
    """The SQLite side: a fixture file written here, Python's sqlite3 as the reference."""

    LABEL = "sqlite"
    SELECT_SQL = ("SELECT id, name, price, qty, note, data, id * 2 AS \"Double Id\", "
                  "NULL AS nada FROM items WHERE id IN (1, 10) ORDER BY id")
    SELECT_COLUMNS = ["id", "name", "price", "qty", "note", "data", "Double Id", "nada"]
    SELECT_ROWS = [[1, "item 1", 1.25, 1, "note 1", "\\x0100ff", 2, None],
                   [10, "item 10", 12.5, 3, None, "\\x0a00ff", 20, None]]
    BIG_ROWS_SQL = "SELECT i, printf('%.*c', 1000000, 'x') FROM big LIMIT 150"
    ENDLESS = [("endless_recursive_cte_stopped_with_504_timeout",
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"),
               ("cross_join_explosion_stopped_with_504_timeout", "SELECT count(*) FROM big a, big b, big c")]
    NO_HANG_NAME = "endless_query_does_not_hang_the_request"

    def __init__(self, tmp):
        self.tmp = tmp
        self.side = os.path.join(tmp, "side")
        self.path = os.path.join(tmp, "fixture.sqlite")
        self.spider = []
        if t2s.spider_dir():
            self.spider = [d for d in sorted(os.listdir(os.path.join(t2s.spider_dir(), "database")))
                           if t2s.spider_db_path(d) and d != "wta_1"]  # wta_1 holds no rows
        self.fixture_db = {"name": "fixture", "url": "sqlite://" + self.path, "pool_size": 1}
        self.databases = [self.fixture_db] + [{"name": d, "url": "sqlite://" + t2s.spider_db_path(d)}
                                              for d in self.spider]

    def setup(self):
        make_sqlite_fixture(self.path)

    def close(self):
        pass

    def check_value_types(self, rows):
        tap.ok(isinstance(rows[0][0], int) and isinstance(rows[0][2], float),
               "integer_is_json_integer_and_real_is_json_number")

    def check_more_results(self, svc):
        r = execute(svc, "fixture", "SELECT m.name, count(*) FROM main.sqlite_master m JOIN victim v "
                    "WHERE m.type = 'table' AND m.name IN ('items', 'victim') GROUP BY m.name ORDER BY m.name")
        tap.ok(r.status == 200 and r.json["rows"] == [["items", 3], ["victim", 3]],
               "main_databases_catalog_and_tables_are_read", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT name FROM pragma_table_info('items') ORDER BY cid")
        tap.ok(r.status == 200 and [x[0] for x in r.json["rows"]] == ["id", "name", "price", "qty", "note", "data"],
               "schema_pragma_table_valued_function_allowed", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT 9223372036854775807 AS big, -9223372036854775808 AS small, "
                    "1e308 * 10 AS inf, 0.1 AS tenth")
        tap.ok(r.status == 200 and r.json["rows"][0][:2] == [9223372036854775807, -9223372036854775808] and
               r.json["rows"][0][3] == 0.1, "64_bit_integers_and_reals_round_trip", diag=r.text[:300])
        tap.ok(r.status == 200 and r.json["rows"][0][2] is None or (r.status == 200 and
                                                                   isinstance(r.json["rows"][0][2], str)),
               "infinite_real_becomes_null_or_string_never_invalid_json", diag=r.text[:300])

        # Text that is not UTF-8.
        r = execute(svc, "fixture", "SELECT id, raw, length(CAST(raw AS BLOB)) FROM weird ORDER BY id")
        ok = r.status == 200
        try:
            r.body.decode("utf-8", "strict")
            json.loads(r.body.decode("utf-8"))
            valid = True
        except ValueError:
            valid = False
        tap.ok(ok and valid, "non_utf8_text_comes_back_as_valid_utf8_json", diag=r.body[:300])
        if ok and valid:
            rows = r.json["rows"]
            tap.ok(rows[0][1].startswith("caf") and isinstance(rows[0][1], str) and rows[0][2] == 4,
                   "non_utf8_value_keeps_its_valid_prefix", diag=repr(rows))
            tap.eq(rows[2][1], "plain ✓ ünïcode", "valid_unicode_text_unchanged")


    def check_spider(self, svc):
        if self.spider:
            sqlite_spider_results(svc, self.spider)
        else:
            tap.skip("spider_gold_queries_match_python_sqlite3", "no Spider data (../shared/datasets)")

    def checksum(self):
        return t2s.sqlite_checksum(self.path)

    def attacks(self):
        return sqlite_attacks(self.tmp)

    def before_guards(self):
        os.makedirs(self.side, exist_ok=True)
        self.size_before = os.path.getsize(self.path)

    def check_nothing_lingers(self, svc):
        path = self.path
        tap.eq(os.path.getsize(path), self.size_before, "database_file_size_unchanged_after_all_attempts")
        tap.eq(sorted(os.listdir(self.side)), [], "no_file_created_by_attach_vacuum_into_or_writefile")
        tap.ok(not os.path.exists(path + "-journal") and not os.path.exists(path + "-wal"),
               "no_journal_or_wal_file_left_next_to_the_database")
        con = t2s.sqlite_ro(path)
        try:
            jm = con.execute("PRAGMA journal_mode").fetchone()[0]
            uv = con.execute("PRAGMA user_version").fetchone()[0]
        finally:
            con.close()
        tap.eq((jm, uv), ("delete", 0), "journal_mode_and_user_version_unchanged")

    def check_more_guards(self, svc):
        pass

    def check_sql_errors(self, svc):
        r = execute(svc, "fixture", "SELEC 1")
        tap.ok(400 <= r.status < 500 and problem_type(r) in ("sql-invalid", "sql-rejected"),
               "syntax_error_is_4xx_problem", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT abs(-9223372036854775807 - 1)")
        tap.ok(is_problem(r, 422, "sql-failed"), "runtime_integer_overflow_is_422_sql_failed", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT json_extract('not json', '$.a')")
        tap.ok(is_problem(r, 422, "sql-failed"), "runtime_malformed_json_is_422_sql_failed", diag=r.text[:300])

    def check_locks(self, svc):
        check_writer_lock(svc, self.path)


# --------------------------------------------------------------------------- PostgreSQL

TOKEN = re.compile(r"""('(?:[^']|'')*')|("(?:[^"]|"")*")|(`[^`]*`)|([A-Za-z_][A-Za-z0-9_]*)|(\s+)|(.)""", re.S)


def sqlite_to_pg(sql, names):
    """Two mechanical rewrites of a Spider (SQLite) query for PostgreSQL:
    identifiers naming a table or column get their stored case, quoted; and
    double-quoted strings (SQLite string literals) become single-quoted.
    names: lower-cased name -> stored spelling. Returns (sql, rewrote_strings)."""
    out, strings = [], False
    for m in TOKEN.finditer(sql):
        _sq, dq, bq, word, _ws, _other = m.groups()
        if dq is not None:
            strings = True
            out.append("'" + dq[1:-1].replace('""', '"').replace("'", "''") + "'")
        elif bq is not None:
            out.append(qi(bq[1:-1]))
        elif word is not None:
            spell = names.get(word.lower())
            out.append(qi(spell) if spell and spell != spell.lower() else word)
        else:
            out.append(m.group(0))
    return "".join(out), strings


PG_FIXTURE_SQL = """
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price double precision, qty bigint, note text,
                    amount numeric(10,2), flag boolean, created date, js jsonb, arr int[], data bytea);
CREATE TABLE victim (k int PRIMARY KEY, v text);
CREATE TABLE big (i int, pad text);
CREATE SEQUENCE seq;
INSERT INTO items SELECT g, 'item ' || g, g * 1.25, g % 7, CASE WHEN g % 10 = 0 THEN NULL ELSE 'note ' || g END,
  g * 2.5, g % 2 = 0, DATE '2024-01-01' + g, jsonb_build_object('g', g), ARRAY[g, g + 1],
  decode('0100ff', 'hex') FROM generate_series(1, 50) g;
INSERT INTO victim VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(0, 1999) g;
""" + fixtures.PG_HOSTILE_OBJECTS + """CREATE FUNCTION twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON items, victim, big TO t2s_reader;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE seq TO t2s_reader;
GRANT EXECUTE ON FUNCTION evil_definer() TO t2s_reader;
GRANT EXECUTE ON PROCEDURE evil_proc() TO t2s_reader;
ANALYZE;
"""


PG_ASCII_FIXTURE_SQL = """
CREATE TABLE weird (id int PRIMARY KEY, raw text);
INSERT INTO weird VALUES (1, E'caf\\xe9'), (2, E'\\xff\\xfeA'), (3, 'plain');
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON weird TO t2s_reader;
"""


def pg_spider_results(svc, dbs):
    dev = t2s.spider_dev_json() or []
    total = agree = 0
    dialect, differ, hard = [], [], []
    string_rewrites = 0
    for db in dbs:
        r = svc.request("GET", "/databases/pg_%s" % db)
        if not tap.eq(r.status, 200, "pg_spider_%s_model_answers_200" % db):
            continue
        spellings = {}
        for t in r.json["tables"]:
            spellings.setdefault(t["name"].lower(), set()).add(t["name"])
            for c in t["columns"]:
                spellings.setdefault(c["name"].lower(), set()).add(c["name"])
        names = {k: next(iter(v)) for k, v in spellings.items() if len(v) == 1}
        db_total = db_agree = 0
        for q in (q for q in dev if q["db_id"] == db):
            sql = q["query"]
            pg_sql, rewrote = sqlite_to_pg(sql, names)
            string_rewrites += rewrote
            total += 1
            db_total += 1
            a = execute(svc, db, sql, max_rows=10000)
            b = execute(svc, "pg_" + db, pg_sql, max_rows=10000)
            if a.status != 200:
                hard.append("sqlite %d %s: %s" % (a.status, a.text[:150], sql))
                continue
            if b.status != 200:
                if b.status in (400, 422) and problem_type(b) in ("sql-invalid", "sql-failed"):
                    dialect.append("%s [%s]: %s" % ((b.json or {}).get("detail", "")[:120], db, pg_sql))
                else:
                    hard.append("pg %d %s: %s" % (b.status, b.text[:200], pg_sql))
                continue
            ordered = has_order_by(sql)
            if len(a.json["columns"]) != len(b.json["columns"]) or \
                    result_key(a.json["rows"], ordered) != result_key(b.json["rows"], ordered):
                differ.append("[%s] %s: sqlite %s, pg %s" % (db, pg_sql, json.dumps(a.json["rows"][:3]),
                                                             json.dumps(b.json["rows"][:3])))
                continue
            agree += 1
            db_agree += 1
        tap.ok(db_total and db_agree * 2 > db_total,
               "pg_spider_%s_majority_of_gold_queries_agree_with_sqlite" % db,
               diag="%d of %d agree" % (db_agree, db_total))
    if not total:
        tap.skip("pg_spider_gold_queries_agree_with_sqlite", "no gold queries for the loaded databases")
        return
    rate = 100.0 * agree / total
    tap.diag("PostgreSQL vs SQLite through /execute: %d/%d gold queries agree (%.1f%%); %d refused by "
             "PostgreSQL for SQLite dialect, %d give a different result; %d needed string literal "
             "rewriting" % (agree, total, rate, len(dialect), len(differ), string_rewrites))
    for d in dialect:
        tap.diag("dialect: " + d)
    for d in differ:
        tap.diag("differs: " + d)
    tap.ok(agree * 2 > total, "majority_of_gold_queries_agree_between_engines", diag="%.1f%%" % rate)
    tap.ok(not hard, "no_gold_query_refused_by_the_guard_or_failing_with_5xx", diag="\n".join(hard[:20]))


def check_non_utf8(svc):
    r = execute(svc, "ascii", "SELECT id, raw, octet_length(raw) FROM weird ORDER BY id")
    try:
        json.loads(r.body.decode("utf-8", "strict"))
        valid = True
    except ValueError:
        valid = False
    tap.ok(r.status == 200 and valid, "non_utf8_bytes_from_sql_ascii_database_come_back_as_valid_json",
           diag=r.body[:300])
    if r.status == 200 and valid:
        rows = r.json["rows"]
        tap.ok(rows[0][1].startswith("caf") and rows[0][2] == 4 and rows[2][1] == "plain",
               "non_utf8_value_keeps_its_valid_prefix", diag=repr(rows))
    r = svc.request("GET", "/databases/ascii")
    try:
        json.loads(r.body.decode("utf-8", "strict"))
        valid = True
    except ValueError:
        valid = False
    tap.ok(r.status == 200 and valid, "non_utf8_samples_come_back_as_valid_json", diag=r.body[:300])


PG_ATTACKS = [
    # (name, sql, words the refusal detail should contain (any), or None)
    ("insert", "INSERT INTO victim VALUES (9, 'x')", ["INSERT"]),
    ("update", "UPDATE victim SET v = 'x'", ["UPDATE"]),
    ("delete", "DELETE FROM victim", ["DELETE"]),
    ("upsert", "INSERT INTO victim VALUES (1, 'x') ON CONFLICT (k) DO UPDATE SET v = 'y'", ["INSERT"]),
    ("merge", "MERGE INTO victim t USING (SELECT 1 AS k) s ON t.k = s.k WHEN MATCHED THEN DELETE", ["MERGE"]),
    ("truncate", "TRUNCATE victim", ["TRUNCATE"]),
    ("drop_table", "DROP TABLE victim", ["DROP"]),
    ("create_table", "CREATE TABLE evil (x int)", ["CREATE"]),
    ("create_temp_table", "CREATE TEMP TABLE evil (x int)", ["CREATE"]),
    ("alter_table", "ALTER TABLE victim ADD COLUMN z int", ["ALTER"]),
    ("grant", "GRANT SELECT ON victim TO PUBLIC", ["GRANT"]),
    ("cte_delete", "WITH d AS (DELETE FROM victim RETURNING *) SELECT * FROM d", ["DELETE"]),
    ("cte_update", "WITH u AS (UPDATE victim SET v = 'x' RETURNING 1) SELECT count(*) FROM u", ["UPDATE"]),
    ("cte_insert_nested", "SELECT * FROM (WITH i AS (INSERT INTO victim VALUES (7, 's') RETURNING k) "
     "SELECT * FROM i) s", ["INSERT"]),
    ("select_into", "SELECT * INTO evil FROM victim", ["INTO"]),
    ("for_update", "SELECT * FROM victim FOR UPDATE", ["FOR UPDATE"]),
    ("for_share_in_subquery", "SELECT * FROM (SELECT * FROM victim FOR SHARE) s", ["FOR"]),
    ("copy_to_file", "COPY victim TO '/tmp/t2s_exec_copy_%d'" % PID, ["COPY"]),
    ("copy_to_program", "COPY (SELECT 1) TO PROGRAM 'touch /tmp/t2s_exec_prog_%d'" % PID, ["COPY"]),
    ("copy_from_stdin", "COPY victim FROM STDIN", ["COPY"]),
    ("set_config", "SELECT set_config('statement_timeout', '0', false)", ["set_config"]),
    ("set_config_qualified", "SELECT pg_catalog.set_config('search_path', 'pg_temp', false)", ["set_config"]),
    ("set_config_quoted_name", "SELECT \"set_config\"('search_path', 'pg_temp', false)", ["set_config"]),
    ("set_config_nested", "SELECT (SELECT set_config('work_mem', '1MB', false))", ["set_config"]),
    ("advisory_lock", "SELECT pg_advisory_lock(4242)", ["pg_advisory_lock"]),
    ("try_advisory_lock_in_values", "VALUES ((SELECT pg_try_advisory_lock(1)))", ["advisory"]),
    ("pg_read_file", "SELECT pg_read_file('/etc/passwd')", ["pg_read_file"]),
    ("pg_ls_dir", "SELECT pg_ls_dir('.')", ["pg_ls_dir"]),
    ("dblink", "SELECT * FROM dblink('dbname=postgres', 'DELETE FROM victim') AS t(x text)", ["dblink"]),
    ("lo_import", "SELECT lo_import('/etc/passwd')", ["lo_import"]),
    ("lo_create", "SELECT lo_create(0)", ["lo_create"]),
    ("nextval", "SELECT nextval('seq')", ["nextval"]),
    ("setval", "SELECT setval('seq', 100)", ["setval"]),
    ("pg_terminate_backend", "SELECT pg_terminate_backend(1)", ["pg_terminate_backend"]),
    ("pg_cancel_backend", "SELECT pg_cancel_backend(1)", ["pg_cancel_backend"]),
    ("query_to_xml", "SELECT query_to_xml('DELETE FROM victim RETURNING 1', true, true, '')", ["query_to_xml"]),
    ("txid_current", "SELECT txid_current()", ["txid_current"]),
    ("pg_notify", "SELECT pg_notify('ch', 'x')", ["pg_notify"]),
    ("security_definer_function_that_deletes", "SELECT evil_definer()", ["evil_definer"]),
    ("ts_rewrite_running_sql_text", "SELECT ts_rewrite('a'::tsquery, 'SELECT pg_terminate_backend(pid)::text::tsquery, "
     "''a''::tsquery FROM pg_stat_activity')", ["ts_rewrite"]),
    ("ts_rewrite_qualified", "SELECT pg_catalog.ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')",
     ["ts_rewrite"]),
    ("pg_sleep", "SELECT pg_sleep(30)", ["pg_sleep"]),
    ("pg_sleep_for", "SELECT pg_sleep_for('30 seconds')", ["pg_sleep_for"]),
    ("volatile_owner_function_in_column_notation", "SELECT v.row_hook FROM victim v", ["row_hook"]),
    ("volatile_owner_function_called", "SELECT row_hook(v) FROM victim v", ["row_hook"]),
    ("stable_xml_of_whole_schema", "SELECT schema_to_xml('public', true, true, '')", ["schema_to_xml"]),
    ("pg_logical_emit_message", "SELECT pg_logical_emit_message(false, 'x', 'y')", ["pg_logical_emit_message"]),
    ("call_procedure", "CALL evil_proc()", ["CALL"]),
    ("do_block", "DO $$ BEGIN DELETE FROM victim; END $$", ["DO"]),
    ("prepare", "PREPARE p AS DELETE FROM victim", ["PREPARE"]),
    ("execute_prepared", "EXECUTE p", ["EXECUTE"]),
    ("listen", "LISTEN ch", ["LISTEN"]),
    ("notify", "NOTIFY ch, 'x'", ["NOTIFY"]),
    ("set_role", "SET ROLE postgres", ["SET"]),
    ("set_session_authorization", "SET SESSION AUTHORIZATION postgres", ["SET"]),
    ("set_statement_timeout", "SET statement_timeout = 0", ["SET"]),
    ("reset_all", "RESET ALL", ["RESET"]),
    ("reset_role", "RESET ROLE", ["RESET"]),
    ("begin", "BEGIN", ["BEGIN"]),
    ("commit", "COMMIT", ["COMMIT"]),
    ("savepoint", "SAVEPOINT s1", ["SAVEPOINT"]),
    ("lock_table", "LOCK TABLE victim", ["LOCK"]),
    ("vacuum", "VACUUM victim", ["VACUUM"]),
    ("analyze", "ANALYZE victim", ["ANALYZE"]),
    ("declare_cursor", "DECLARE c CURSOR FOR SELECT 1", ["DECLARE"]),
    ("explain_analyze_delete", "EXPLAIN ANALYZE DELETE FROM victim", ["EXPLAIN"]),
    ("stacked_delete", "select 1; delete from victim", ["statement"]),
    ("stacked_after_comment", "select 1 /* */; drop table victim", ["statement"]),
    ("stacked_after_line_comment", "select 1 -- c\n; delete from victim", ["statement"]),
    ("comment_split_keyword", "DeLeTe/**/FROM victim", ["DELETE"]),
    ("whitespace_obfuscated_delete", "\t\n  dElEtE\r\n\tFROM\fvictim", ["DELETE"]),
    ("nbsp_prefixed_delete", "\u00a0DELETE FROM victim", None),
    ("bom_prefixed_delete", "\ufeffDELETE FROM victim", None),
    ("fullwidth_delete", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM victim", None),
    ("select_then_nbsp_delete", "SELECT 1;\u00a0DELETE FROM victim", None),
    ("dollar_quoted_stacked", "SELECT $x$a$x$; DELETE FROM victim", ["statement"]),
    ("pg_stat_activity", "SELECT query FROM pg_stat_activity", ["pg_catalog.pg_stat_activity"]),
    ("pg_database_qualified", "SELECT datname FROM pg_catalog.pg_database", ["pg_catalog.pg_database"]),
    ("pg_settings_in_a_subquery", "SELECT (SELECT setting FROM pg_settings LIMIT 1)", ["pg_settings"]),
    ("pg_roles_past_a_cte_of_a_subquery", "SELECT * FROM (WITH pg_roles AS (SELECT 1) SELECT 1) s, pg_roles",
     ["pg_catalog.pg_roles"]),
    ("information_schema_grants", "SELECT * FROM information_schema.role_table_grants",
     ["information_schema.role_table_grants"]),
    ("pg_stat_get_activity", "SELECT query FROM pg_stat_get_activity(NULL)", ["pg_stat_get_activity"]),
    ("empty", "  ", None),
]


def admin_scalar(sql, dbname=DB):
    return t2s.psql(sql, dbname)[0][0]


def check_functions(svc):
    """Calls judged by what pg_proc says the function is, and the set follows
    refresh: a function created after start is unknown until the database is
    refreshed, then admitted (IMMUTABLE) or refused (VOLATILE)."""
    r = execute(svc, "fixture", "SELECT twice(21), ts_rewrite('a & b'::tsquery, 'a'::tsquery, 'c'::tsquery)::text, "
                "lower('X'), random() < 2, now() IS NOT NULL")
    tap.ok(r.status == 200 and r.json["rows"] == [[42, "'b' & 'c'", "x", True, True]],
           "immutable_stable_and_harmless_volatile_functions_run", diag=r.text[:300])
    t2s.psql("CREATE FUNCTION later_pure(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 1'; "
             "CREATE FUNCTION later_side(int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT $1 + 1'; "
             "GRANT EXECUTE ON FUNCTION later_pure(int), later_side(int) TO t2s_reader;", DB)
    r = execute(svc, "fixture", "SELECT later_pure(1)")
    tap.ok(is_problem(r, 400, "sql-invalid") and "does not exist" in (r.json or {}).get("detail", ""),
           "function_created_after_introspection_is_unknown_until_refresh", diag=r.text[:300])
    r = svc.request("POST", "/databases/fixture/refresh")
    tap.eq(r.status, 200, "refresh_fixture_answers_200")
    r = execute(svc, "fixture", "SELECT later_pure(1)")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "immutable_function_admitted_after_refresh", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT later_side(1)")
    tap.ok(is_problem(r, 403, "sql-rejected") and "VOLATILE" in (r.json or {}).get("detail", ""),
           "volatile_function_refused_after_refresh", diag=r.text[:300])


def check_operators_and_casts(svc):
    """An operator, a cast and a domain of the owner's run VOLATILE functions
    (each takes an advisory lock): the guard refuses them like the functions
    themselves, and nothing ran; PostgreSQL's own operators and casts run."""
    for name, sql, word in [
            ("qualified_operator_running_volatile_function_refused", "SELECT 1 OPERATOR(public.===) 2", "vol_eq"),
            ("operator_running_volatile_function_refused", "SELECT k FROM victim WHERE k === 1", "vol_eq"),
            ("operator_in_any_running_volatile_function_refused", "SELECT 1 === ANY (SELECT k FROM victim)", "==="),
            ("cast_running_volatile_function_refused", "SELECT 'x'::text::mytype", "vol_cast"),
            ("cast_of_column_running_volatile_function_refused", "SELECT CAST(v AS public.mytype) FROM victim",
             "vol_cast"),
            ("cast_to_domain_with_volatile_check_refused", "SELECT 5::posint", "vol_check")]:
        r = execute(svc, "fixture", sql)
        detail = (r.json or {}).get("detail", "")
        tap.ok(is_problem(r, 403, "sql-rejected") and word in detail and "VOLATILE" in detail, name,
               diag=r.text[:300])
    locks = admin_scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid IN (78, 79, 80)")
    tap.eq(str(locks), "0", "refused_operators_and_casts_ran_nothing")
    r = execute(svc, "fixture", "SELECT 1 = 1, 1 + 2, 'a' || 'b', 'abc' LIKE 'a%', '7'::int, 7::text, "
                "'2024-01-02'::date::text, 2 BETWEEN 1 AND 3, 2 IN (1, 2), CASE 1 WHEN 1 THEN 'y' END")
    tap.ok(r.status == 200 and r.json["rows"] == [[True, 3, "ab", True, 7, "7", "2024-01-02", True, True, "y"]],
           "builtin_operators_and_casts_still_run", diag=r.text[:300])


def check_catalog_views(svc):
    """What a statement may read besides the database's tables: three catalog
    views, and a CTE that borrows a catalog's name is the CTE."""
    r = execute(svc, "fixture", "SELECT t.table_name, count(c.column_name) FROM information_schema.tables t "
                "JOIN information_schema.columns c USING (table_schema, table_name) "
                "WHERE t.table_schema = 'public' GROUP BY 1 ORDER BY 1")
    tap.ok(r.status == 200 and r.json["rows"] == [["big", 2], ["items", 11], ["victim", 2]],
           "information_schema_tables_and_columns_list_the_databases_tables", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
    tap.ok(r.status == 200 and r.json["rows"] == [["big"], ["items"], ["victim"]],
           "pg_tables_lists_the_databases_tables", diag=r.text[:300])
    r = execute(svc, "fixture", "WITH pg_stat_activity AS (SELECT k AS query FROM victim) "
                "SELECT count(*) FROM pg_stat_activity JOIN items ON items.id = pg_stat_activity.query")
    tap.ok(r.status == 200 and r.json["rows"] == [[3]], "cte_named_like_a_catalog_view_reads_the_cte",
           diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT datname FROM pg_database")
    detail = (r.json or {}).get("detail", "")
    tap.ok(is_problem(r, 403, "sql-rejected") and "pg_database" in detail and "information_schema.tables" in detail,
           "pg_database_refused_with_403_naming_it_and_what_may_be_read", diag=r.text[:300])


def check_lock_timeout(svc):
    """Another session holds ACCESS EXCLUSIVE on victim: the read waits at most lock_timeout_ms."""
    cmd = ["psql", "-X", "-q", "-h", t2s.pg_host(), "-p", str(t2s.pg_port()), "-U", "postgres", "-d", DB,
           "-c", "BEGIN; LOCK TABLE victim IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(8); COMMIT;"]
    holder = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        held = False
        while time.monotonic() < deadline and not held:
            held = admin_scalar(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE c.relname = 'victim' AND l.mode = 'AccessExclusiveLock' AND l.granted "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());") != "0"
            if not held:
                time.sleep(0.1)
        if not held:
            tap.skip("lock_wait_ends_with_504_after_lock_timeout", "could not take the lock in another session")
            return
        r = execute(svc, "fixture", "SELECT count(*) FROM victim", timeout=60)
        tap.ok(is_problem(r, 504, "timeout"), "lock_wait_ends_with_504_after_lock_timeout", diag=r.text[:300])
        tap.ok("lock" in (r.json or {}).get("detail", ""), "lock_timeout_detail_mentions_the_lock",
               diag=r.text[:300])
        tap.ok(holder.poll() is None, "lock_wait_answered_while_the_other_session_still_holds_the_lock")
        r = execute(svc, "fixture", "SELECT count(*) FROM items")
        tap.ok(r.status == 200, "pool_serves_other_tables_after_lock_timeout", diag=r.text[:300])
    finally:
        holder.terminate()
        try:
            holder.wait(timeout=20)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()



class Postgres:
    """The PostgreSQL side: fixture databases created here (one SQL_ASCII), the
    Spider copies of scripts/test.sh compared with their SQLite originals."""

    LABEL = "postgres"
    SELECT_SQL = ("SELECT id, name, price, qty, note, amount, flag, created, js, arr, data, "
                  "id * 2 AS \"Double Id\", NULL AS nada FROM items WHERE id IN (1, 10) ORDER BY id")
    SELECT_COLUMNS = ["id", "name", "price", "qty", "note", "amount", "flag", "created", "js", "arr",
                      "data", "Double Id", "nada"]
    SELECT_ROWS = [
        [1, "item 1", 1.25, 1, "note 1", 2.5, False, "2024-01-02", '{"g": 1}', "{1,2}", "\\x0100ff", 2, None],
        [10, "item 10", 12.5, 3, None, 25.0, True, "2024-01-11", '{"g": 10}', "{10,11}", "\\x0100ff", 20, None]]
    BIG_ROWS_SQL = "SELECT g, repeat('x', 1000000) FROM generate_series(1, 150) g"
    ENDLESS = [("long_scan_stopped_with_504_timeout", "SELECT count(*) FROM generate_series(1, 1000000000) g"),
               ("endless_recursive_cte_stopped_with_504_timeout",
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")]
    NO_HANG_NAME = "slow_query_does_not_hang_the_request"

    def __init__(self, tmp):
        self.pg = fixtures.PgDatabases(tap)
        self.spider = [d for d in os.environ.get("T2S_TEST_PG_SPIDER_DBS", "").split() if t2s.spider_db_path(d)]
        self.fixture_db = {"name": "fixture", "url": pg_url(DB), "pool_size": 1}
        self.databases = [self.fixture_db, {"name": "ascii", "url": pg_url(DB_ASCII)}]
        for d in self.spider:
            self.databases.append({"name": d, "url": "sqlite://" + t2s.spider_db_path(d)})
            self.databases.append({"name": "pg_" + d, "url": pg_url(d)})

    def setup(self):
        self.pg.create(DB, PG_FIXTURE_SQL)
        self.pg.create(DB_ASCII, PG_ASCII_FIXTURE_SQL,
                       options="ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")

    def close(self):
        self.pg.drop_all()
        for p in ("/tmp/t2s_exec_copy_%d" % PID, "/tmp/t2s_exec_prog_%d" % PID):
            if os.path.exists(p):
                os.unlink(p)

    def check_value_types(self, rows):
        tap.ok(isinstance(rows[0][0], int) and isinstance(rows[0][2], float) and isinstance(rows[0][6], bool),
               "integer_double_and_boolean_have_json_types")

    def check_more_results(self, svc):
        r = execute(svc, "fixture", "TABLE victim")
        tap.ok(r.status == 200 and r.json["row_count"] == 3, "table_statement_allowed", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT 9223372036854775807::bigint, 'NaN'::numeric, 'Infinity'::float8, "
                    "123456789012345678901234567890::numeric, 0.1::float8")
        ok = r.status == 200
        tap.ok(ok and r.json["rows"][0][0] == 9223372036854775807 and r.json["rows"][0][4] == 0.1,
               "bigint_and_double_round_trip", diag=r.text[:300])
        tap.ok(ok and all(v is None or isinstance(v, str) for v in r.json["rows"][0][1:3]),
               "nan_and_infinity_come_back_as_strings_or_null_in_valid_json", diag=r.text[:300])
        big = r.json["rows"][0][3] if ok else None
        tap.ok(big == "123456789012345678901234567890", "numeric_beyond_int64_keeps_its_digits", diag=repr(big))

        check_non_utf8(svc)

    def check_spider(self, svc):
        if self.spider:
            pg_spider_results(svc, self.spider)
        else:
            tap.skip("pg_spider_gold_queries_agree_with_sqlite", "T2S_TEST_PG_SPIDER_DBS is empty")

    def checksum(self):
        return t2s.pg_checksum(DB)

    def attacks(self):
        return PG_ATTACKS

    def before_guards(self):
        self.seq_before = admin_scalar("SELECT last_value || '/' || is_called FROM seq;")

    def check_nothing_lingers(self, svc):
        """Sequence, locks, large objects, files, session state."""
        tap.eq(admin_scalar("SELECT last_value || '/' || is_called FROM seq;"), self.seq_before, "sequence_did_not_advance")
        tap.eq(admin_scalar("SELECT count(*) FROM pg_largeobject_metadata;"), "0", "no_large_object_created")
        tap.eq(admin_scalar("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                            "WHERE l.locktype = 'advisory' AND a.usename = 't2s_reader' AND a.datname = '%s';"
                            % DB, "postgres"), "0",
               "no_advisory_lock_held_by_the_reader")
        tap.ok(not os.path.exists("/tmp/t2s_exec_copy_%d" % PID) and not os.path.exists("/tmp/t2s_exec_prog_%d" % PID),
               "no_file_written_by_copy")
        tap.eq(admin_scalar("SELECT count(*) FROM pg_class WHERE relname = 'evil';"), "0", "no_table_created")
        r = execute(svc, "fixture", "SELECT current_user, current_setting('search_path'), "
                    "(SELECT count(*) FROM pg_prepared_statement()), (SELECT count(*) FROM pg_listening_channels()), "
                    "current_setting('work_mem')")
        tap.ok(r.status == 200 and r.json["rows"][0][:4] == ["t2s_reader", "public", 0, 0],
               "pooled_session_has_no_prepared_statement_listener_or_changed_setting", diag=r.text[:300])
        tap.ok(r.status == 200 and r.json["rows"][0][4] != "1MB", "work_mem_not_changed_by_nested_set_config",
               diag=r.text[:300])

    def check_more_guards(self, svc):
        check_functions(svc)
        check_operators_and_casts(svc)
        check_catalog_views(svc)

    def check_sql_errors(self, svc):
        r = execute(svc, "fixture", "SELEC 1")
        tap.ok(is_problem(r, 400, "sql-invalid"), "syntax_error_is_400_sql_invalid", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT 1 / 0")
        tap.ok(is_problem(r, 422, "sql-failed"), "division_by_zero_is_422_sql_failed", diag=r.text[:300])
        tap.ok("division by zero" in (r.json or {}).get("detail", ""), "sql_failed_detail_carries_the_database_message",
               diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT id / (id - 5) FROM items ORDER BY id")
        tap.ok(is_problem(r, 422, "sql-failed"), "division_by_zero_mid_result_is_422_sql_failed", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT 'abc'::int")
        tap.ok(is_problem(r, 422, "sql-failed") or is_problem(r, 400, "sql-invalid"),
               "bad_cast_is_a_sql_problem", diag=r.text[:300])

    def check_locks(self, svc):
        check_lock_timeout(svc)


# --------------------------------------------------------------------------- MariaDB

MY_READER = "t2s_exec_my_%d" % PID
MY_PASSWORD = "exec-%d" % PID
MY_FIXTURE_SQL = """
DROP DATABASE IF EXISTS `{db}`;
CREATE DATABASE `{db}` CHARACTER SET utf8mb4;
USE `{db}`;
CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DOUBLE, qty BIGINT, note TEXT,
                    amount DECIMAL(10,2), created DATE, data VARBINARY(8));
CREATE TABLE victim (k INT PRIMARY KEY, v VARCHAR(40));
CREATE TABLE big (i INT, pad VARCHAR(200));
CREATE SEQUENCE seq;
INSERT INTO items SELECT seq, CONCAT('item ', seq), seq * 1.25, seq % 7, IF(seq % 10 = 0, NULL, CONCAT('note ', seq)),
  seq * 2.5, DATE '2024-01-01' + INTERVAL seq DAY, X'0100ff' FROM seq_1_to_50;
INSERT INTO victim VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO big SELECT seq, REPEAT('x', 100) FROM seq_0_to_1999;
CREATE PROCEDURE evil_proc() DELETE FROM victim;
DROP USER IF EXISTS '{reader}'@'%';
CREATE USER '{reader}'@'%' IDENTIFIED BY '{pw}';
GRANT SELECT ON `{db}`.* TO '{reader}'@'%';
"""

MY_ATTACKS = [
    ("insert", "INSERT INTO victim VALUES (9, 'x')", ["INSERT"]),
    ("update", "UPDATE victim SET v = 'x'", ["UPDATE"]),
    ("delete", "DELETE FROM victim", ["DELETE"]),
    ("upsert", "INSERT INTO victim VALUES (1, 'x') ON DUPLICATE KEY UPDATE v = 'y'", ["INSERT"]),
    ("replace", "REPLACE INTO victim VALUES (1, 'x')", ["REPLACE", "INTO"]),
    ("truncate", "TRUNCATE victim", ["TRUNCATE"]),
    ("drop_table", "DROP TABLE victim", ["DROP"]),
    ("create_table", "CREATE TABLE evil (x INT)", ["CREATE"]),
    ("alter_table", "ALTER TABLE victim ADD COLUMN z INT", ["ALTER"]),
    ("rename_table", "RENAME TABLE victim TO evil", ["RENAME"]),
    ("with_delete", "WITH x AS (SELECT 1) DELETE FROM victim", ["DELETE"]),
    ("two_statements", "SELECT 1; DELETE FROM victim", ["one statement"]),
    ("backslash_hiding_a_second_statement", "SELECT '\\'; DELETE FROM victim -- '", ["one statement"]),
    ("into_outfile", "SELECT * FROM victim INTO OUTFILE '/tmp/t2s_exec_my_%d'" % PID, ["INTO"]),
    ("into_dumpfile", "SELECT v FROM victim LIMIT 1 INTO DUMPFILE '/tmp/t2s_exec_my_%d'" % PID, ["INTO"]),
    ("into_var", "SELECT v INTO @x FROM victim LIMIT 1", ["INTO"]),
    ("user_variable", "SELECT @x := v FROM victim", ["variables", "assign"]),
    ("system_variable", "SELECT @@global.secure_file_priv", ["variables"]),
    ("load_file", "SELECT LOAD_FILE('/etc/passwd')", ["LOAD_FILE"]),
    ("sleep", "SELECT SLEEP(5)", ["SLEEP"]),
    ("benchmark", "SELECT BENCHMARK(100000000, MD5('x'))", ["BENCHMARK"]),
    ("get_lock", "SELECT GET_LOCK('t2s_exec', 5)", ["GET_LOCK"]),
    ("release_lock", "SELECT RELEASE_LOCK('t2s_exec')", ["RELEASE_LOCK"]),
    ("is_free_lock", "SELECT IS_FREE_LOCK('t2s_exec')", ["IS_FREE_LOCK"]),
    ("for_update", "SELECT * FROM victim FOR UPDATE", ["UPDATE"]),
    ("lock_in_share_mode", "SELECT * FROM victim LOCK IN SHARE MODE", ["LOCK"]),
    ("handler", "HANDLER victim OPEN", ["HANDLER"]),
    ("do", "DO SLEEP(5)", ["DO"]),
    ("call", "CALL evil_proc()", ["CALL"]),
    ("set_global", "SET GLOBAL max_connections = 1", ["SET"]),
    ("set_session", "SET SESSION sql_mode = ''", ["SET"]),
    ("lock_tables", "LOCK TABLES victim WRITE", ["LOCK"]),
    ("nextval", "SELECT NEXTVAL(seq)", ["NEXTVAL"]),
    ("next_value_for", "SELECT NEXT VALUE FOR seq", ["NEXT"]),
    ("executable_comment", "SELECT /*!50000 SLEEP(5) */ 1", ["executable"]),
    ("mysql_schema", "SELECT user FROM mysql.user", ["mysql"]),
    ("performance_schema", "SELECT * FROM performance_schema.threads", ["performance_schema"]),
    ("information_schema_processlist", "SELECT * FROM information_schema.processlist", ["processlist"]),
    ("show", "SHOW GRANTS", ["SHOW"]),
]


class Maria:
    """The MySQL side on the MariaDB server of tests/lib/servers.sh: a fixture
    database made here (read through a SELECT-only account), the Spider copies
    of scripts/test.sh ($T2S_TEST_MARIADB_SPIDER_DBS) compared with their SQLite
    originals."""

    LABEL = "mariadb"
    SELECT_SQL = ("SELECT id, name, price, qty, note, amount, created, data, id * 2 AS `Double Id`, NULL AS nada "
                  "FROM items WHERE id IN (1, 10) ORDER BY id")
    SELECT_COLUMNS = ["id", "name", "price", "qty", "note", "amount", "created", "data", "Double Id", "nada"]
    SELECT_ROWS = [[1, "item 1", 1.25, 1, "note 1", 2.5, "2024-01-02", "\\x0100ff", 2, None],
                   [10, "item 10", 12.5, 3, None, 25.0, "2024-01-11", "\\x0100ff", 20, None]]
    BIG_ROWS_SQL = "SELECT seq, REPEAT('x', 1000000) FROM seq_1_to_150"
    ENDLESS = [("long_scan_stopped_with_504_timeout", "SELECT count(*) FROM big a, big b, big c"),
               ("recursive_cross_join_stopped_with_504_timeout",
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 999) "
                "SELECT count(*) FROM c a, c b, c d, c e")]
    NO_HANG_NAME = "slow_query_does_not_hang_the_request"

    def __init__(self, tmp):
        self.db = "t2s_exec_my_%d" % PID
        self.spider = [d for d in os.environ.get("T2S_TEST_MARIADB_SPIDER_DBS", "").split() if t2s.spider_db_path(d)]
        self.fixture_db = {"name": "fixture", "url": fixtures.mariadb_url(self.db, MY_READER, MY_PASSWORD),
                           "pool_size": 1}
        self.databases = [self.fixture_db]
        pw = os.environ.get("T2S_TEST_MARIADB_READER_PW", "")
        for d in self.spider:
            self.databases.append({"name": d, "url": "sqlite://" + t2s.spider_db_path(d)})
            self.databases.append({"name": "my_" + d, "url": fixtures.mariadb_url(d, "t2s_reader", pw)})

    def setup(self):
        fixtures.mariadb(MY_FIXTURE_SQL.format(db=self.db, reader=MY_READER, pw=MY_PASSWORD))

    def close(self):
        try:
            fixtures.mariadb("DROP DATABASE IF EXISTS `%s`; DROP USER IF EXISTS '%s'@'%%';" % (self.db, MY_READER))
        except RuntimeError as e:
            tap.diag("cleanup: %s" % e)

    def check_value_types(self, rows):
        tap.ok(isinstance(rows[0][0], int) and isinstance(rows[0][2], float) and isinstance(rows[0][5], float),
               "integer_double_and_decimal_have_json_types")

    def check_more_results(self, svc):
        r = execute(svc, "fixture", "SELECT 9223372036854775807, 18446744073709551615, 0.1e0, 'a' || 'b'")
        ok = r.status == 200
        tap.ok(ok and r.json["rows"][0][0] == 9223372036854775807 and r.json["rows"][0][2] == 0.1,
               "bigint_and_double_round_trip", diag=r.text[:300])
        # an integer past 64 bits keeps its digits as text, as on PostgreSQL (a double would change them)
        tap.ok(ok and r.json["rows"][0][1] == "18446744073709551615",
               "unsigned_bigint_beyond_int64_keeps_its_digits", diag=r.text[:300])
        tap.ok(ok and r.json["rows"][0][3] == "ab", "pipes_concatenate_as_on_the_other_engines", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT CAST(123456789012345678901234567890 AS DECIMAL(30,0)), "
                    "CAST(-18446744073709551616 AS DECIMAL(30,0)), CAST(12.50 AS DECIMAL(5,2))")
        tap.ok(r.status == 200 and r.json["rows"][0][:3] == ["123456789012345678901234567890",
                                                             "-18446744073709551616", 12.5],
               "decimal_integers_past_int64_keep_their_digits_and_decimals_are_numbers", diag=r.text[:300])

    def check_spider(self, svc):
        if not self.spider:
            tap.skip("mariadb_spider_gold_queries_agree_with_sqlite", "T2S_TEST_MARIADB_SPIDER_DBS is empty")
            return
        dev = t2s.spider_dev_json() or []
        for db in self.spider:
            total = agree = 0
            r = svc.request("GET", "/databases/my_%s" % db)
            # MySQL's table names keep their case on Linux (its column names do not): Spider's queries
            # spell tables freely, so each bare word naming a table is written as the table is stored.
            tables = {t["name"].lower(): t["name"] for t in (r.json or {}).get("tables", [])}
            for q in (q for q in dev if q["db_id"] == db):
                total += 1
                my_sql = re.sub(r"('[^']*'|\"[^\"]*\")|\b(\w+)\b",
                                lambda m: m.group(1) or tables.get(m.group(2).lower(), m.group(2)), q["query"])
                a = execute(svc, db, q["query"], max_rows=10000)
                b = execute(svc, "my_" + db, my_sql, max_rows=10000)
                if a.status != 200 or b.status != 200:
                    continue
                ordered = has_order_by(q["query"])
                agree += len(a.json["columns"]) == len(b.json["columns"]) and \
                    result_key(a.json["rows"], ordered) == result_key(b.json["rows"], ordered)
            tap.ok(total and agree * 2 > total, "mariadb_spider_%s_majority_of_gold_queries_agree_with_sqlite" % db,
                   diag="%d of %d agree" % (agree, total))
            tap.diag("mariadb spider %s: %d of %d gold queries give SQLite's result" % (db, agree, total))

    def checksum(self):
        return fixtures.mariadb_checksum(self.db)

    def attacks(self):
        return MY_ATTACKS

    def before_guards(self):
        self.seq_before = fixtures.mariadb("SELECT next_not_cached_value FROM `%s`.seq" % self.db)

    def check_nothing_lingers(self, svc):
        tap.eq(fixtures.mariadb("SELECT next_not_cached_value FROM `%s`.seq" % self.db), self.seq_before,
               "sequence_did_not_advance")
        tap.eq(fixtures.mariadb("SELECT IS_FREE_LOCK('t2s_exec')"), [["1"]], "no_user_lock_held")
        tap.ok(not os.path.exists("/tmp/t2s_exec_my_%d" % PID), "no_file_written")
        tap.eq(fixtures.mariadb("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s'" % self.db),
               [["4"]], "no_table_created")
        r = execute(svc, "fixture", "SELECT 'a' || 'b', '\\', current_user() LIKE 't2s_exec_my_%'")
        tap.ok(r.status == 200 and r.json["rows"] == [["ab", "\\", 1]],
               "pooled_session_keeps_its_sql_mode_and_account", diag=r.text[:300])

    def check_more_guards(self, svc):
        r = execute(svc, "fixture", "SELECT `update` FROM (SELECT 1 AS `update`) t")
        tap.ok(r.status == 200 and r.json["rows"] == [[1]], "quoted_reserved_word_is_a_name", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() "
                    "ORDER BY table_name")
        tap.ok(r.status == 200 and [x[0] for x in r.json["rows"]] == ["big", "items", "seq", "victim"],
               "information_schema_tables_lists_this_databases_tables", diag=r.text[:300])

    def check_sql_errors(self, svc):
        r = execute(svc, "fixture", "SELEC 1")
        tap.ok(is_problem(r, 400, "sql-invalid"), "syntax_error_is_400_sql_invalid", diag=r.text[:300])
        r = execute(svc, "fixture", "SELECT (SELECT k FROM victim)")
        tap.ok(is_problem(r, 422, "sql-failed"), "subquery_returning_many_rows_is_422_sql_failed", diag=r.text[:300])

    def check_locks(self, svc):
        """A table locked by another session (LOCK TABLES ... WRITE as root) ends in a 504 after the
        lock wait limit instead of hanging."""
        import subprocess as sp
        cmd = ["mariadb", "--no-defaults", "--socket=" + os.environ["T2S_TEST_MARIADB_SOCKET"], "-u", "root", self.db]
        holder = sp.Popen(cmd, stdin=sp.PIPE, stdout=sp.DEVNULL, stderr=sp.DEVNULL)
        try:
            holder.stdin.write(b"LOCK TABLES victim WRITE; SELECT SLEEP(8);\n")
            holder.stdin.flush()
            time.sleep(0.5)
            start = time.monotonic()
            r = execute(svc, "fixture", "SELECT count(*) FROM victim", timeout=30)
            took = time.monotonic() - start
            tap.ok(is_problem(r, 504, "timeout") and took < 7, "locked_table_ends_in_504_not_a_hang",
                   diag="%.1f s: %s" % (took, r.text[:300]))
        finally:
            holder.kill()
            holder.wait()


# --------------------------------------------------------------------------- main

ENGINES = {"sqlite": Sqlite, "pg": Postgres, "mariadb": Maria}


def main():
    name = sys.argv[1] if len(sys.argv) == 2 else None
    if name not in ENGINES:
        sys.stderr.write("usage: test_execute.py sqlite|pg|mariadb\n")
        return 2
    if name == "pg" and not fixtures.have_pg():
        tap.skip("execute_pg", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        return tap.done()
    if name == "mariadb" and not fixtures.have_mariadb():
        tap.skip("execute_mariadb", "no MariaDB (T2S_TEST_MARIADB_SOCKET unset)")
        return tap.done()
    engine = ENGINES[name](fixtures.scratch_dir("t2s-exec-%s-" % name))
    services = []
    try:
        engine.setup()
        quiet = {"level": "warn", "access": False}
        main_svc = t2s.Service({"databases": engine.databases, "log": quiet, "auth": {"allow_anonymous_writes": True}})  # refreshes
        tight = t2s.Service({"databases": [engine.fixture_db],
                             "execution": {"timeout_ms": 300, "max_result_bytes": 1024}, "log": quiet})
        services = [main_svc, tight]
        main_svc.start(timeout=120)
        tight.start(timeout=60)

        check_fixture_results(engine, main_svc)
        engine.check_spider(main_svc)
        check_result_bytes(tight)
        check_result_memory(engine, main_svc)
        check_guards(engine, main_svc)
        engine.check_more_guards(main_svc)
        check_errors(engine, main_svc)
        check_timeout(engine, tight)
        engine.check_locks(main_svc)
        fixtures.stop_ok(tap, main_svc, "service_exits_0_on_sigterm")
        fixtures.stop_ok(tap, tight, "tight_limits_service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, *services)
    finally:
        for s in services:
            s.close()
        engine.close()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
