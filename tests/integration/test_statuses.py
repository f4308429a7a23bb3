#!/usr/bin/env python3
"""test_statuses.py - the same kind of failure answers with the same status on
both engines (TAP; issue 10, "inconsistent statuses").

  - a lock wait past the limit is 504 timeout on SQLite (another connection
    holds the file's exclusive lock) as it is on PostgreSQL (test_execute.py pg);
  - a PostgreSQL backend terminated while it runs the statement is 503
    unavailable (the database, not the statement, failed), and the next
    request gets a fresh connection and succeeds;
  - a statement cancelled by the time limit stays 504 timeout.
"""

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
from fixtures import execute, is_problem  # noqa: E402
from t2s import pg_url  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_status_%d" % PID
SLOW_SQL = "SELECT count(*) FROM generate_series(1, 2000000000) g"


def check_sqlite_lock(svc, path):
    holder = sqlite3.connect(path, timeout=1, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO t VALUES (99)")
        start = time.monotonic()
        r = execute(svc, "lite", "SELECT count(*) FROM t")
        took = time.monotonic() - start
        tap.ok(is_problem(r, 504, "timeout") and "lock" in (r.json or {}).get("detail", ""),
               "sqlite_lock_wait_is_504_timeout_like_postgresql", diag=r.text[:300])
        tap.ok(took < 10, "sqlite_lock_wait_bounded_by_lock_timeout", diag="%.1f s" % took)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    r = execute(svc, "lite", "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "sqlite_serves_after_the_lock_is_released", diag=r.text[:300])


def reader_active_pids():
    return [int(r[0]) for r in t2s.psql(
        "SELECT pid FROM pg_stat_activity WHERE usename = 't2s_reader' AND datname = '%s' AND state = 'active';"
        % DB)]


def check_terminated_backend(svc):
    got = {}

    def run():
        got["r"] = execute(svc, "pg", SLOW_SQL, timeout=120)
    th = threading.Thread(target=run)
    th.start()
    pids = []
    deadline = time.monotonic() + 20
    while not pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = reader_active_pids()
    if not tap.ok(bool(pids), "slow_statement_is_running"):
        th.join(120)
        return
    t2s.psql("SELECT pg_terminate_backend(%d);" % pids[0])
    th.join(120)
    r = got.get("r")
    tap.ok(r is not None and is_problem(r, 503, "unavailable"), "terminated_backend_is_503_unavailable",
           diag=r.text[:300] if r else "no response")
    tap.ok(r is not None and (r.headers.get("Retry-After") or "").isdigit(), "terminated_backend_503_carries_retry_after",
           diag=repr(r.headers) if r else "no response")
    r = execute(svc, "pg", "SELECT 1")
    tap.ok(r.status == 200 and r.json["rows"] == [[1]], "next_request_after_termination_succeeds", diag=r.text[:300])
    r = execute(svc, "pg", SLOW_SQL)
    tap.ok(is_problem(r, 504, "timeout"), "statement_over_the_time_limit_stays_504", diag=r.text[:300])


def main():
    svc = None
    pg = fixtures.PgDatabases(tap)
    try:
        tmp = fixtures.scratch_dir("t2s-status-")
        path = fixtures.write_sqlite(os.path.join(tmp, "lite.sqlite"), "CREATE TABLE t (a int);",
                                     {"t": [(1,), (2,)]})
        dbs = [{"name": "lite", "url": "sqlite://" + path}]
        have_pg = pg.create(DB) is not None
        if have_pg:
            dbs.append({"name": "pg", "url": pg_url(DB), "pool_size": 1})
        svc = t2s.Service({"databases": dbs, "execution": {"timeout_ms": 3000, "lock_timeout_ms": 500},
                           "log": {"level": "warn", "access": False}})
        svc.start(timeout=60)
        check_sqlite_lock(svc, path)
        if have_pg:
            check_terminated_backend(svc)
        else:
            tap.skip("terminated_backend", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
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
