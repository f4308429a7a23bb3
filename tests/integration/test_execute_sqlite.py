#!/usr/bin/env python3
"""test_execute_sqlite.py - POST /execute on SQLite databases (TAP).

Same structure as test_execute_pg.py, with the real text2sqld binary
($T2S_BIN) and real SQLite files:
  1. results: every Spider dev gold query of the 19 dev databases that hold
     rows runs through /execute and its result bag (a list when the query
     has ORDER BY) equals what Python's own sqlite3 returns on the same file,
     column names included (skipped without ../shared/datasets); a fixture
     written here checks column names, value types (integer, real, text,
     blob, NULL -> null), non-UTF-8 text coming back as valid JSON, the row
     cap (max_rows -> truncated, truncated_by "max_rows"), the byte cap
     (execution.max_result_bytes -> truncated_by "max_result_bytes") and the
     limits echoed in the response;
  2. guards: more than 30 write or escape attempts (DML, DDL, ATTACH,
     pragmas, VACUUM INTO, load_extension, writefile, stacked statements,
     comment and unicode tricks, transaction control, over-long SQL) are
     each refused with a 4xx problem while the file's checksum, taken
     through a separate connection, stays the same and no file is created;
     reasons name what was refused;
  3. limits and errors: execution.timeout_ms = 300 stops an endless
     recursive CTE with a 504 timeout problem and the next query on the same
     pool works; an unknown column is a 400 sql-invalid problem, a runtime
     error a 422 sql-failed problem; a read waits for a writer's lock held
     for half a second instead of failing; a 150 MB result does not raise
     the service's peak memory by more than 64 MB (max_result_bytes is 8
     MiB; skipped under AddressSanitizer).
"""

import json
import os
import sqlite3
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, has_order_by, is_problem, problem_type, result_key  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()


# --------------------------------------------------------------------------- helpers

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


# --------------------------------------------------------------------------- fixture

FIXTURE_SQL = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, qty INT, note TEXT, data BLOB);
CREATE TABLE victim (k INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE big (i INTEGER, pad TEXT);
CREATE TABLE weird (id INTEGER PRIMARY KEY, raw TEXT);
-- Text that is not valid UTF-8 (stored as TEXT, not BLOB), and a NUL-free latin-1 word.
INSERT INTO weird VALUES (1, CAST(x'636166e9' AS TEXT));
INSERT INTO weird VALUES (2, CAST(x'fffe41c328' AS TEXT));
INSERT INTO weird VALUES (3, 'plain ✓ ünïcode');
"""


def make_fixture(path):
    return fixtures.write_sqlite(path, FIXTURE_SQL, {
        "items": [(i, "item %d" % i, i * 1.25, i % 7, None if i % 10 == 0 else "note %d" % i, bytes([i, 0, 255]))
                  for i in range(1, 51)],
        "victim": [(1, "one"), (2, "two"), (3, "three")],
        "big": [(i, "x" * 100) for i in range(2000)]})


# --------------------------------------------------------------------------- 1. results

def check_spider_results(svc, dbs):
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


def check_fixture_results(svc):
    r = execute(svc, "fixture", "SELECT id, name, price, qty, note, data, id * 2 AS \"Double Id\", "
                "NULL AS nada FROM items WHERE id IN (1, 10) ORDER BY id")
    if not tap.eq(r.status, 200, "fixture_select_answers_200"):
        tap.diag(r.text[:500])
        return
    body = r.json
    tap.eq(body["columns"], ["id", "name", "price", "qty", "note", "data", "Double Id", "nada"],
           "column_names_as_selected_including_alias_case_and_spaces")
    tap.eq(body["rows"], [[1, "item 1", 1.25, 1, "note 1", "\\x0100ff", 2, None],
                          [10, "item 10", 12.5, 3, None, "\\x0a00ff", 20, None]],
           "values_keep_json_types_and_null_becomes_null")
    tap.ok(isinstance(body["rows"][0][0], int) and isinstance(body["rows"][0][2], float),
           "integer_is_json_integer_and_real_is_json_number")
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
    r = execute(svc, "fixture", "SELECT count(*) FROM items WHERE 0")
    tap.ok(r.status == 200 and r.json["rows"] == [[0]], "aggregate_over_no_rows", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT id FROM items WHERE 0")
    tap.ok(r.status == 200 and r.json["rows"] == [] and r.json["columns"] == ["id"] and
           r.json["row_count"] == 0, "empty_result_keeps_column_names", diag=r.text[:300])
    r = execute(svc, "fixture", "VALUES (1, 'a'), (2, 'b')")
    tap.ok(r.status == 200 and r.json["rows"] == [[1, "a"], [2, "b"]], "values_statement_allowed",
           diag=r.text[:300])
    r = execute(svc, "fixture", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 5) SELECT sum(x) FROM c")
    tap.ok(r.status == 200 and r.json["rows"] == [[15]], "bounded_recursive_cte_allowed", diag=r.text[:300])
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


# --------------------------------------------------------------------------- 2. guards

def attacks(tmp):
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


def check_guards(svc, path, tmp):
    side = os.path.join(tmp, "side")
    os.makedirs(side, exist_ok=True)
    before = t2s.sqlite_checksum(path)
    size_before = os.path.getsize(path)
    refused = 0
    list_ = attacks(tmp)
    for name, sql, words in list_:
        r = execute(svc, "fixture", sql)
        after = t2s.sqlite_checksum(path)
        slug = problem_type(r)
        ok = (400 <= r.status < 500 and slug in ("sql-rejected", "sql-invalid", "invalid-request",
                                                  "sql-failed") and
              (r.headers.get("Content-Type") or "").startswith("application/problem+json") and after == before)
        refused += ok
        tap.ok(ok, "refuses_%s_with_4xx_problem_and_data_unchanged" % name,
               diag="status %d %s; checksum %s" % (r.status, r.text[:300],
                                                   "same" if after == before else "CHANGED"))
        if words is not None and r.status in (400, 403):
            detail = (r.json or {}).get("detail", "")
            tap.ok(any(w.lower() in detail.lower() for w in words),
                   "refusal_of_%s_names_what_was_refused" % name,
                   diag="detail %r should mention one of %s" % (detail, words))
    # An SQL text over execution.max_sql_bytes (100 KiB by default).
    long_sql = "SELECT 1 " + "/*" + "x" * (110 * 1024) + "*/"
    r = execute(svc, "fixture", long_sql)
    tap.ok(is_problem(r, 400, "invalid-request"), "sql_over_max_sql_bytes_is_400_invalid_request",
           diag=r.text[:300])
    detail = (r.json or {}).get("detail", "")
    tap.ok("byte" in detail.lower() or "long" in detail.lower() or "limit" in detail.lower(),
           "sql_over_max_sql_bytes_reason_mentions_the_limit", diag=detail)
    refused += r.status == 400
    total = len(list_) + 1
    tap.ok(refused >= 30 and refused == total, "at_least_30_write_or_escape_attempts_refused",
           diag="%d of %d refused" % (refused, total))
    tap.diag("sqlite guard: %d of %d write/escape attempts refused with data unchanged" % (refused, total))
    tap.eq(t2s.sqlite_checksum(path), before, "database_checksum_unchanged_after_all_attempts")
    tap.eq(os.path.getsize(path), size_before, "database_file_size_unchanged_after_all_attempts")
    tap.eq(sorted(os.listdir(side)), [], "no_file_created_by_attach_vacuum_into_or_writefile")
    tap.ok(not os.path.exists(path + "-journal") and not os.path.exists(path + "-wal"),
           "no_journal_or_wal_file_left_next_to_the_database")
    con = t2s.sqlite_ro(path)
    try:
        jm = con.execute("PRAGMA journal_mode").fetchone()[0]
        uv = con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()
    tap.eq((jm, uv), ("delete", 0), "journal_mode_and_user_version_unchanged")
    r = execute(svc, "fixture", "SELECT count(*) FROM victim")
    tap.ok(r.status == 200 and r.json["rows"] == [[3]], "connection_still_serves_queries_after_refusals",
           diag=r.text[:300])


# --------------------------------------------------------------------------- 3. limits, errors

def check_errors(svc):
    r = execute(svc, "fixture", "SELECT no_such_column FROM items")
    tap.ok(is_problem(r, 400, "sql-invalid"), "unknown_column_is_400_sql_invalid", diag=r.text[:300])
    tap.ok("no_such_column" in (r.json or {}).get("detail", ""), "sql_invalid_detail_names_the_column",
           diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT * FROM no_such_table")
    tap.ok(is_problem(r, 400, "sql-invalid"), "unknown_table_is_400_sql_invalid", diag=r.text[:300])
    r = execute(svc, "fixture", "SELEC 1")
    tap.ok(400 <= r.status < 500 and problem_type(r) in ("sql-invalid", "sql-rejected"),
           "syntax_error_is_4xx_problem", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT abs(-9223372036854775807 - 1)")
    tap.ok(is_problem(r, 422, "sql-failed"), "runtime_integer_overflow_is_422_sql_failed", diag=r.text[:300])
    r = execute(svc, "fixture", "SELECT json_extract('not json', '$.a')")
    tap.ok(is_problem(r, 422, "sql-failed"), "runtime_malformed_json_is_422_sql_failed", diag=r.text[:300])
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


def check_timeout(tight):
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    start = time.monotonic()
    r = execute(tight, "fixture", endless, timeout=120)
    took = time.monotonic() - start
    tap.ok(is_problem(r, 504, "timeout"), "endless_recursive_cte_stopped_with_504_timeout", diag=r.text[:300])
    tap.ok(took < 60, "endless_query_does_not_hang_the_request", diag="took %.1f s" % took)
    tap.ok("300" in (r.json or {}).get("detail", ""), "timeout_detail_names_the_limit", diag=r.text[:300])
    r = execute(tight, "fixture", "SELECT count(*) FROM items")
    tap.ok(r.status == 200 and r.json["rows"] == [[50]], "next_query_on_the_same_pool_succeeds_after_timeout",
           diag=r.text[:300])
    r = execute(tight, "fixture", "SELECT count(*) FROM big a, big b, big c")
    tap.ok(is_problem(r, 504, "timeout"), "cross_join_explosion_stopped_with_504_timeout", diag=r.text[:300])
    r = execute(tight, "fixture", "SELECT 2")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "pool_serves_queries_after_second_timeout",
           diag=r.text[:300])


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


def check_result_memory(svc):
    """max_result_bytes (8 MiB by default) also bounds the memory a big result
    costs the service: 150 rows of 1 MB each must not all be held at once."""
    pid = svc.proc.pid
    if fixtures.under_sanitizer(pid) or fixtures.peak_rss_kb(pid) is None:
        tap.skip("max_result_bytes_bounds_service_memory_for_a_150_mb_result",
                 "peak memory is not meaningful under a sanitizer")
        return
    before = fixtures.peak_rss_kb(pid)
    r = execute(svc, "fixture", "SELECT i, printf('%.*c', 1000000, 'x') FROM big LIMIT 150", timeout=120)
    grown_mb = (fixtures.peak_rss_kb(pid) - before) / 1024.0
    tap.ok(r.status == 200 and r.json["truncated"] is True and r.json.get("truncated_by") == "max_result_bytes",
           "large_rows_truncated_by_max_result_bytes", diag=r.text[:200])
    tap.ok(grown_mb < 64, "max_result_bytes_bounds_service_memory_for_a_150_mb_result",
           diag="peak resident memory grew by %.0f MB" % grown_mb)


# --------------------------------------------------------------------------- main

def main():
    tmp = fixtures.scratch_dir("t2s-exec-sqlite-")
    services = []
    try:
        fixture = make_fixture(os.path.join(tmp, "fixture.sqlite"))
        spider = []
        if t2s.spider_dir():
            spider = [d for d in sorted(os.listdir(os.path.join(t2s.spider_dir(), "database")))
                      if t2s.spider_db_path(d) and d != "wta_1"]  # wta_1 holds no rows
        dbs = [{"name": "fixture", "url": "sqlite://" + fixture, "pool_size": 1}]
        dbs += [{"name": d, "url": "sqlite://" + t2s.spider_db_path(d)} for d in spider]
        main_svc = t2s.Service({"databases": dbs, "log": {"level": "warn", "access": False}})
        tight = t2s.Service({"databases": [{"name": "fixture", "url": "sqlite://" + fixture, "pool_size": 1}],
                             "execution": {"timeout_ms": 300, "max_result_bytes": 1024},
                             "log": {"level": "warn", "access": False}})
        services = [main_svc, tight]
        main_svc.start(timeout=120)
        tight.start(timeout=60)

        check_fixture_results(main_svc)
        if spider:
            check_spider_results(main_svc, spider)
        else:
            tap.skip("spider_gold_queries_match_python_sqlite3", "no Spider data (../shared/datasets)")
        check_result_bytes(tight)
        check_guards(main_svc, fixture, tmp)
        check_errors(main_svc)
        check_timeout(tight)
        check_writer_lock(main_svc, fixture)
        check_result_memory(main_svc)
        fixtures.stop_ok(tap, main_svc, "service_exits_0_on_sigterm")
        fixtures.stop_ok(tap, tight, "tight_limits_service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, *services)
    finally:
        for s in services:
            s.close()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
