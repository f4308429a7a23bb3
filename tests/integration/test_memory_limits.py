#!/usr/bin/env python3
"""test_memory_limits.py - what one statement can make the service build is
bounded while it runs (TAP; issue 10, items 3 and 4).

The issue's examples, through POST /execute, each answered quickly with a
clear problem while the service's peak resident memory (VmHWM) grows by less
than MEMORY_BUDGET_MB over the whole run (skipped under a sanitizer):
  SQLite
    - printf('%.*c', 2147483647, 'x'), four in one statement: a value longer
      than the result budget (SQLITE_LIMIT_LENGTH) fails at once, 422;
    - 100 columns of printf('%.*c', 16000000, 'x'): 422 at once;
    - 100 columns of printf('%.*c', 6000000, 'x'): every value fits the
      result budget but the row needs ~600 MB: the per-statement memory
      ceiling (execution.max_statement_memory_bytes) stops it, 422 naming it;
    - four such requests at once with a pool of 2: all answered within the
      time limit, and the pool serves the next query at once;
    - a normal query still works after all of it, and printf()/format()
      (replaced on guarded connections to bound them) give what SQLite's own
      give for 40 formats (compared with Python's sqlite3 module);
  PostgreSQL (when configured)
    - SELECT repeat('x', 300000000): the row is refused by the server before
      it is sent, 422 naming max_result_bytes;
    - 100 columns of repeat('x', 1000000) (a 100 MB row): 422;
    - work_mem of the session is set from the statement memory (a quarter).
"""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, is_problem  # noqa: E402
from t2s import pg_url  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_mem_%d" % PID
MEMORY_BUDGET_MB = 160  # 64 MiB statement ceiling + JSON of an 8 MiB result + slack
FAST_S = 3.0


def timed(svc, db, sql):
    start = time.monotonic()
    r = execute(svc, db, sql, timeout=120)
    return r, time.monotonic() - start


def detail(r):
    return (r.json or {}).get("detail", "")


def check_sqlite(svc):
    four = ", ".join(["length(printf('%.*c', 2147483647, 'x'))"] * 4)
    r, took = timed(svc, "lite", "SELECT " + four)
    tap.ok(is_problem(r, 422, "sql-failed") and "max_result_bytes" in detail(r),
           "sqlite_printf_2147483647_x4_is_422_naming_the_limit", diag=r.text[:300])
    tap.ok(took < FAST_S, "sqlite_printf_2147483647_x4_fails_fast", diag="%.1f s" % took)

    cols = ", ".join(["printf('%%.*c', 16000000, 'x') AS c%d" % i for i in range(100)])
    r, took = timed(svc, "lite", "SELECT " + cols)
    tap.ok(is_problem(r, 422, "sql-failed"), "sqlite_100_columns_of_16_mb_is_422", diag=r.text[:300])
    tap.ok(took < FAST_S, "sqlite_100_columns_of_16_mb_fails_fast", diag="%.1f s" % took)

    cols = ", ".join(["printf('%%.*c', 6000000, 'x') AS c%d" % i for i in range(100)])
    r, took = timed(svc, "lite", "SELECT " + cols)
    tap.ok(is_problem(r, 422, "sql-failed") and "max_statement_memory_bytes" in detail(r),
           "sqlite_600_mb_row_stopped_by_the_statement_memory_ceiling", diag=r.text[:300])
    tap.ok(took < FAST_S, "sqlite_600_mb_row_fails_fast", diag="%.1f s" % took)

    answers = []

    def one():
        answers.append(timed(svc, "lite", "SELECT " + ", ".join(
            ["length(printf('%.*c', 2147483647, 'x'))"] * 4)))
    threads = [threading.Thread(target=one) for _ in range(4)]
    start = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    took = time.monotonic() - start
    tap.ok(len(answers) == 4 and all(is_problem(r, 422, "sql-failed") for r, _ in answers),
           "four_concurrent_printf_requests_each_422", diag=str([r.status for r, _ in answers]))
    tap.ok(took < 2 * FAST_S, "four_concurrent_printf_requests_do_not_hold_the_pool", diag="%.1f s" % took)
    r, took = timed(svc, "lite", "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[3]] and took < FAST_S, "sqlite_serves_normally_afterwards",
           diag=r.text[:300])
    r, _ = timed(svc, "lite", "SELECT length(printf('%.*c', 1000000, 'x'))")
    tap.ok(r.status == 200 and r.json["rows"] == [[1000000]], "sqlite_value_within_the_budget_still_built",
           diag=r.text[:300])


PRINTF_CASES = [
    "'%d|%5d|%-5d|%05d|%+d', 42, 42, 42, 42, 42", "'%i %u %x %X %o', -7, 7, 255, 255, 8",
    "'%lld %llx', 9223372036854775807, 255", "'%s|%10s|%-10s|%.2s', 'abc', 'abc', 'abc', 'abc'",
    "'%q|%Q|%Q|%w', 'it''s', 'it''s', NULL, 'a\"b'", "'%z', 'zed'", "'%f %.2f %10.3f %-10.1f|', 3.14159, 3.14159, 3.14159, 3.14159",
    "'%e %E %g %G', 12345.678, 12345.678, 0.0001234, 1e20", "'%c|%.3c|%5c|%-5c|', 'xyz', 'x', 'x', 'x'",
    "'%.*c', 4, 'é'", "'%*d|%-*d|', 6, 1, 6, 2", "'%.*s', 2, 'abcdef'", "'%.*s', -2, 'abcdef'",
    "'%%|%n|%d', 5", "'%d %s', 1", "'no conversions'", "'%'", "'%5'", "'abc%'", "'%d %y %d', 1, 2",
    "'%!.20e', 0.1", "'%,d', 1234567", "'%#x %#o', 255, 8", "'% d', 5", "'%s', NULL", "'%d', '12abc'",
    "'%f', 'x'", "'%s', 3.5", "'%s', x'41'", "'%.0f %.10g', 2.5, 1.0/3", "''", "'%-'", "'%5.2s|', 'abc'",
    "'%-8.3f|', -1.5", "'%+.1e', 0", "'%p', 255", "'%ld', 3", "NULL", "'%s%s%s', 'a', 'b'",
    "'%*.*f', 10, 2, 3.14159", "'%.*f', 300, 1.0",
]


def check_printf_semantics(svc):
    import sqlite3
    con = sqlite3.connect(":memory:")
    bad = []
    for args in PRINTF_CASES:
        for fn in ("printf", "format"):
            sql = "SELECT %s(%s)" % (fn, args)
            try:
                want = con.execute(sql).fetchone()[0]
            except sqlite3.Error as e:
                want = "error: %s" % e
            r = execute(svc, "lite", sql)
            got = r.json["rows"][0][0] if r.status == 200 else "error %d" % r.status
            if got != want:
                bad.append("%s: got %r, want %r" % (sql, got, want))
    con.close()
    tap.ok(not bad, "bounded_printf_and_format_give_what_sqlite_gives", diag="\n".join(bad[:20]))


def check_pg(svc):
    r, took = timed(svc, "pg", "SELECT repeat('x', 300000000)")
    tap.ok(is_problem(r, 422, "sql-failed") and "max_result_bytes" in detail(r),
           "pg_repeat_300000000_is_422_naming_the_limit", diag=r.text[:300])
    tap.ok(took < 20, "pg_repeat_300000000_answered_within_the_time_limit", diag="%.1f s" % took)
    cols = ", ".join(["repeat('x', 1000000) AS c%d" % i for i in range(100)])
    r, _ = timed(svc, "pg", "SELECT " + cols)
    tap.ok(is_problem(r, 422, "sql-failed"), "pg_100_mb_row_is_422", diag=r.text[:300])
    r, _ = timed(svc, "pg", "SELECT current_setting('work_mem'), g, repeat('y', 3) AS \"Same\", 1 AS \"Same\" "
                 "FROM generate_series(1, 3) g ORDER BY g DESC")
    tap.ok(r.status == 200 and r.json["rows"] == [["16MB", 3, "yyy", 1], ["16MB", 2, "yyy", 1], ["16MB", 1, "yyy", 1]]
           and r.json["columns"] == ["current_setting", "g", "Same", "Same"],
           "pg_rows_names_order_and_work_mem_as_expected", diag=r.text[:300])
    r, _ = timed(svc, "pg", "SELECT 1;  -- trailing comment")
    tap.ok(r.status == 200 and r.json["rows"] == [[1]], "pg_trailing_semicolon_and_comment_still_work",
           diag=r.text[:300])


def main():
    svc = None
    pg = fixtures.PgDatabases(tap)
    try:
        tmp = fixtures.scratch_dir("t2s-mem-")
        lite = fixtures.write_sqlite(os.path.join(tmp, "lite.sqlite"), "CREATE TABLE t (a int);",
                                     {"t": [(1,), (2,), (3,)]})
        dbs = [{"name": "lite", "url": "sqlite://" + lite, "pool_size": 2}]
        have_pg = pg.create(DB) is not None
        if have_pg:
            dbs.append({"name": "pg", "url": pg_url(DB)})
        svc = t2s.Service({"databases": dbs, "execution": {"timeout_ms": 10000},
                           "log": {"level": "warn", "access": False}})
        svc.start(timeout=60)
        pid = svc.proc.pid
        measure = not fixtures.under_sanitizer(pid) and fixtures.peak_rss_kb(pid) is not None
        before = fixtures.peak_rss_kb(pid) if measure else 0
        check_sqlite(svc)
        check_printf_semantics(svc)
        if have_pg:
            check_pg(svc)
        else:
            tap.skip("pg_memory_limits", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        if measure:
            grown = (fixtures.peak_rss_kb(pid) - before) / 1024.0
            tap.ok(grown < MEMORY_BUDGET_MB, "peak_memory_grew_less_than_%d_mb" % MEMORY_BUDGET_MB,
                   diag="peak resident memory grew by %.0f MB" % grown)
        else:
            tap.skip("peak_memory_bounded", "peak memory is not meaningful under a sanitizer")
        fixtures.stop_ok(tap, svc, "service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, svc)
    finally:
        if svc is not None:
            svc.close()
        pg.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
